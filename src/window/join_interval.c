/* SPDX-License-Identifier: MIT */
/* join_interval.c - the interval join (Flink's IntervalJoinOperator,
 * rules J1-J5 of watermark-semantics.md).
 *
 * Per side and key the operator keeps the buffered records in buckets,
 * one per timestamp (equal timestamps share a bucket), in an array sorted
 * by timestamp, so the records another record can meet are found by
 * binary search instead of a scan of the key's whole buffer:
 *
 *   left l joins right r  iff  l.ts + lower <= r.ts <= l.ts + upper
 *   left bucket t  dropped when the watermark reaches t + upper (t if
 *                  upper <= 0); right bucket t at t - lower (t if lower >= 0)
 *
 * A cleanup timer (time, key, ns = (bucket ts, side)) removes the bucket.
 * Timers fire only when the watermark advances, so a record whose cleanup
 * time is already at or below the watermark stays until the next advance
 * (Flink's timer service behaves the same way).
 *
 * At the end: the interval join's key-group sections of a checkpoint
 * (join.h, docs/checkpoints.md "Operator state").
 */
#include <string.h>

#include "state/ckpt_codec.h"
#include "window/join.h"
#include "window/win.h"

/* One buffered record: the key and timestamp live in the key slot and the
 * bucket; value and a copy of the payload here. */
typedef struct jrec {
    double value;
    void *payload;
    size_t payload_len;
} jrec;

/* All records of one side and key with one timestamp, in arrival order. */
typedef struct bucket {
    tdm_time_ms ts;
    jrec *recs;
    uint32_t n, cap;
} bucket;

/* The value slot of (key, ns 0/0) in a side's store: that key's buckets
 * in b[head .. head + n), sorted by ts ascending.  Cleanup removes from
 * the front most of the time, which only moves head. */
typedef struct keybuf {
    bucket *b;
    size_t head, n, cap;
} keybuf;

static const tdm__ns KEY_NS = {0, 0};

/* ---- Buckets ---- */

/* The index (relative to head) of the first bucket with ts >= @p ts. */
static size_t lower_index(const keybuf *kb, tdm_time_ms ts)
{
    /* An empty buffer may have no array yet: NULL + 0 is undefined. */
    if (kb->n == 0)
        return 0;
    const bucket *b = kb->b + kb->head;
    size_t lo = 0, hi = kb->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid].ts < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Makes room for one more bucket at relative index @p at, moving the
 * later ones up.  Returns false on OOM (nothing changed). */
static bool open_gap(keybuf *kb, size_t at)
{
    if (kb->head + kb->n == kb->cap) {
        if (kb->head > 0 && kb->head >= kb->n) {
            /* At least half the array is dead space in front: slide the
             * live buckets down instead of growing. */
            memmove(kb->b, kb->b + kb->head, kb->n * sizeof *kb->b);
            kb->head = 0;
        } else {
            size_t ncap = kb->cap ? kb->cap * 2 : 4;
            bucket *nb = tdm__realloc(kb->b, ncap * sizeof *nb);
            if (!nb)
                return false;
            kb->b = nb;
            kb->cap = ncap;
        }
    }
    bucket *b = kb->b + kb->head;
    memmove(b + at + 1, b + at, (kb->n - at) * sizeof *b);
    kb->n++;
    memset(&b[at], 0, sizeof b[at]);
    return true;
}

/* Removes the (already emptied) bucket at relative index @p at. */
static void close_gap(keybuf *kb, size_t at)
{
    bucket *b = kb->b + kb->head;
    if (at == 0) {
        kb->head++;
    } else {
        memmove(b + at, b + at + 1, (kb->n - at - 1) * sizeof *b);
    }
    kb->n--;
    if (kb->n == 0)
        kb->head = 0;
}

/* Frees the records of a bucket (not the bucket itself); returns how many
 * there were. */
static uint32_t bucket_clear(bucket *bk)
{
    uint32_t n = bk->n;
    for (uint32_t i = 0; i < n; i++)
        tdm__free(bk->recs[i].payload);
    tdm__free(bk->recs);
    bk->recs = NULL;
    bk->n = bk->cap = 0;
    return n;
}

/* Appends a copy of @p rec (value and payload) to the bucket at relative
 * index @p at, creating the bucket if @p create.  Returns false on OOM
 * (then a bucket it created is removed again). */
static bool bucket_append(keybuf *kb, size_t at, bool create,
                          const tdm_record *rec)
{
    if (create) {
        if (!open_gap(kb, at))
            return false;
        kb->b[kb->head + at].ts = rec->ts;
    }
    bucket *bk = &kb->b[kb->head + at];
    void *payload = NULL;
    if (rec->payload && rec->payload_len > 0) {
        payload = tdm__memdup(rec->payload, rec->payload_len);
        if (!payload)
            goto fail;
    }
    if (bk->n == bk->cap) {
        uint32_t ncap = bk->cap ? bk->cap * 2 : 1;
        jrec *nr = tdm__realloc(bk->recs, ncap * sizeof *nr);
        if (!nr)
            goto fail;
        bk->recs = nr;
        bk->cap = ncap;
    }
    bk->recs[bk->n].value = rec->value;
    bk->recs[bk->n].payload = payload;
    bk->recs[bk->n].payload_len = payload ? rec->payload_len : 0;
    bk->n++;
    return true;

fail:
    tdm__free(payload);
    if (create && bk->n == 0) {
        bucket_clear(bk);
        close_gap(kb, at);
    }
    return false;
}

/* ---- Range arithmetic ---- */

/* ts + off (or ts - off when @p sub), and in *ovf whether the exact
 * result is below TDM_TIME_MIN (-1), above TDM_TIME_MAX (+1) or fits (0);
 * the returned value is clamped. */
static tdm_time_ms shift(tdm_time_ms ts, tdm_time_ms off, bool sub, int *ovf)
{
    tdm_time_ms r;
    bool o = sub ? __builtin_sub_overflow(ts, off, &r)
                 : __builtin_add_overflow(ts, off, &r);
    if (!o) {
        *ovf = 0;
        return r;
    }
    bool up = sub ? off < 0 : off > 0;
    *ovf = up ? 1 : -1;
    return up ? TDM_TIME_MAX : TDM_TIME_MIN;
}

/* The timestamps of the other side that a record of @p side at @p ts
 * joins: [*lo, *hi].  Returns false when no representable timestamp is in
 * range (a bound lies beyond the time axis). */
static bool other_range(const tdm_joinop *op, int side, tdm_time_ms ts,
                        tdm_time_ms *lo, tdm_time_ms *hi)
{
    int olo, ohi;
    if (side == TDM_SIDE_LEFT) {
        /* Right r with ts + lower <= r <= ts + upper. */
        *lo = shift(ts, op->lower, false, &olo);
        *hi = shift(ts, op->upper, false, &ohi);
    } else {
        /* Left l with l + lower <= ts <= l + upper, i.e.
         * ts - upper <= l <= ts - lower. */
        *lo = shift(ts, op->upper, true, &olo);
        *hi = shift(ts, op->lower, true, &ohi);
    }
    return olo <= 0 && ohi >= 0;
}

/* The cleanup time of a bucket of @p side at @p ts (rule J4), saturated. */
static tdm_time_ms cleanup_time(const tdm_joinop *op, int side, tdm_time_ms ts)
{
    if (side == TDM_SIDE_LEFT)
        return op->upper > 0 ? tdm__time_add_sat(ts, op->upper) : ts;
    return op->lower < 0 ? tdm__time_sub_sat(ts, op->lower) : ts;
}

/* ---- Joining ---- */

/* Emits a pair for @p rec (of @p side) with every record of the other
 * side of the same key whose timestamp is in range. */
static void join_other(tdm_joinop *op, int side, uint32_t key,
                       const tdm_record *rec)
{
    keybuf *kb = tdm__kv_get(op->ibuf[!side], key, KEY_NS);
    tdm_time_ms lo, hi;
    if (!kb || kb->n == 0 || !other_range(op, side, rec->ts, &lo, &hi))
        return;
    size_t klen;
    const char *kbytes = tdm__keys_get(op->keys, key, &klen);
    tdm_record other = {.key = kbytes, .key_len = klen};
    for (size_t i = lower_index(kb, lo); i < kb->n; i++) {
        const bucket *bk = &kb->b[kb->head + i];
        if (bk->ts > hi)
            break;
        other.ts = bk->ts;
        /* The pair carries the later of the two timestamps (J3). */
        tdm_time_ms t = bk->ts > rec->ts ? bk->ts : rec->ts;
        for (uint32_t j = 0; j < bk->n; j++) {
            other.value = bk->recs[j].value;
            other.payload = bk->recs[j].payload;
            other.payload_len = bk->recs[j].payload_len;
            if (side == TDM_SIDE_LEFT)
                tdm__join_emit_pair(op, rec, &other, t, kbytes, klen, 0, 0, 0);
            else
                tdm__join_emit_pair(op, &other, rec, t, kbytes, klen, 0, 0, 0);
        }
    }
}

/* ---- Entry points from join.c ---- */

/* Creates the two per-side stores. */
tdm_err tdm__join_interval_init(tdm_joinop *op)
{
    for (int s = 0; s < 2; s++) {
        op->ibuf[s] = tdm__kv_new(sizeof(keybuf));
        if (!op->ibuf[s])
            return TDM_ERR_NOMEM;
    }
    return TDM_OK;
}

/* Rule J2: late check, buffer, join, cleanup timer.  All allocation
 * happens before the first pair is emitted, so an error leaves neither
 * output nor state behind. */
tdm_err tdm__join_interval_push(tdm_joinop *op, int side, const tdm_record *rec)
{
    tdm_time_ms ts = rec->ts;
    /* Late iff strictly below the operator watermark (equal is not). */
    if (ts < op->wm)
        return tdm__join_late(op, side, rec);

    uint32_t key;
    if (tdm__keys_intern(op->keys, rec->key, rec->key_len, &key) != TDM_OK)
        return TDM_ERR_NOMEM;
    bool created;
    keybuf *kb = tdm__kv_upsert(op->ibuf[side], key, KEY_NS, &created);
    if (!kb) {
        tdm__keys_unref(op->keys, key);
        return TDM_ERR_NOMEM;
    }
    /* The key slot holds one reference for as long as it exists. */
    if (!created)
        tdm__keys_unref(op->keys, key);

    /* The timer first: it is idempotent, and a timer registered here is
     * deleted again if buffering fails, so no timer outlives its bucket
     * (a stale one could hit a later key that reuses the id). */
    tdm_time_ms when = cleanup_time(op, side, ts);
    tdm__ns tns = {ts, side};
    bool had_timer = tdm__timers_has(op->timers, when, key, tns);
    if (!had_timer && tdm__timers_add(op->timers, when, key, tns) != TDM_OK)
        goto fail;

    size_t at = lower_index(kb, ts);
    bool create = at == kb->n || kb->b[kb->head + at].ts != ts;
    if (!bucket_append(kb, at, create, rec)) {
        if (!had_timer)
            tdm__timers_del(op->timers, when, key, tns);
        goto fail;
    }
    op->buffered++;

    join_other(op, side, key, rec);
    return TDM_OK;

fail:
    if (kb->n == 0) {
        tdm__free(kb->b);
        tdm__kv_remove(op->ibuf[side], key, KEY_NS);
        tdm__keys_unref(op->keys, key);
    }
    return TDM_ERR_NOMEM;
}

/* Rule J4: the timer (time, key, (bucket ts, side)) drops that bucket and
 * the key slot when it was the last bucket. */
void tdm__join_interval_fire(tdm_joinop *op, const tdm__timer *t)
{
    int side = (int)t->ns.b;
    keybuf *kb = tdm__kv_get(op->ibuf[side], t->key, KEY_NS);
    if (!kb)
        return;
    size_t at = lower_index(kb, t->ns.a);
    if (at == kb->n || kb->b[kb->head + at].ts != t->ns.a)
        return;
    op->buffered -= bucket_clear(&kb->b[kb->head + at]);
    close_gap(kb, at);
    if (kb->n == 0) {
        tdm__free(kb->b);
        tdm__kv_remove(op->ibuf[side], t->key, KEY_NS);
        tdm__keys_unref(op->keys, t->key);
    }
}

/* Frees the buckets of one key slot (tdm__kv_each callback). */
static void free_keybuf(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    keybuf *kb = slot;
    for (size_t i = 0; i < kb->n; i++)
        bucket_clear(&kb->b[kb->head + i]);
    tdm__free(kb->b);
    kb->b = NULL;
    kb->n = kb->head = kb->cap = 0;
}

/* Frees both stores and what they hold; key references go with the key
 * table, which the caller destroys. */
void tdm__join_interval_free(tdm_joinop *op)
{
    for (int s = 0; s < 2; s++) {
        if (!op->ibuf[s])
            continue;
        tdm__kv_each(op->ibuf[s], free_keybuf, NULL);
        tdm__kv_destroy(op->ibuf[s]);
        op->ibuf[s] = NULL;
    }
    op->buffered = 0;
}

/* ---- Checkpoints (join.h; layout in docs/checkpoints.md) ---- */

typedef struct isnap_ent {
    const keybuf *kb;
    uint32_t key;
    int side;
} isnap_ent;

typedef struct isnap_gather {
    isnap_ent *v;
    size_t n;
    int side;
} isnap_gather;

static void isnap_one(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    isnap_gather *g = ud;
    g->v[g->n].kb = slot;
    g->v[g->n].key = key;
    g->v[g->n].side = g->side;
    g->n++;
}

/* One group section per key group with buffered records: per side the
 * number of keys, then per key its bytes and buckets (ts, records:
 * value bits, payload). */
tdm_err tdm__join_interval_snap(const tdm_joinop *op, struct tdm__enc *e,
                                tdm__join_kg_fn kg, void *ud, int lo,
                                size_t ng)
{
    tdm_err err = TDM_ERR_NOMEM;
    size_t n = tdm__kv_count(op->ibuf[0]) + tdm__kv_count(op->ibuf[1]);
    isnap_gather g = { tdm__malloc((n + 1) * sizeof *g.v), 0, 0 };
    int *grp = tdm__malloc((n + 1) * sizeof *grp);
    uint32_t *order = tdm__malloc((n + 1) * sizeof *order);
    size_t *first = tdm__malloc((ng + 1) * sizeof *first);
    if (!g.v || !grp || !order || !first)
        goto fail;
    for (int s = 0; s < 2; s++) {
        g.side = s;
        tdm__kv_each(op->ibuf[s], isnap_one, &g);
    }
    for (size_t i = 0; i < g.n; i++) {
        size_t len;
        const char *k = tdm__keys_get(op->keys, g.v[i].key, &len);
        int x = kg ? kg(ud, k, len) : 0;
        grp[i] = (x < lo || (size_t)(x - lo) >= ng) ? -1 : x - lo;
    }
    if (!tdm__snap_by_group(grp, g.n, ng, order, first))
        goto fail;
    for (size_t gi = 0; gi < ng; gi++) {
        if (first[gi] == first[gi + 1])
            continue;
        tdm__enc_begin(e, TDM__SNAP_TAG_JOINOP_GROUP);
        tdm__enc_uvar(e, (uint64_t)gi + (uint64_t)lo);
        for (int s = 0; s < 2; s++) {
            size_t nk = 0;
            for (size_t j = first[gi]; j < first[gi + 1]; j++)
                nk += g.v[order[j]].side == s;
            tdm__enc_uvar(e, nk);
            for (size_t j = first[gi]; j < first[gi + 1]; j++) {
                const isnap_ent *x = &g.v[order[j]];
                if (x->side != s)
                    continue;
                size_t len;
                const char *k = tdm__keys_get(op->keys, x->key, &len);
                tdm__enc_bytes(e, k, len);
                tdm__enc_uvar(e, x->kb->n);
                for (size_t b = 0; b < x->kb->n; b++) {
                    const bucket *bk = &x->kb->b[x->kb->head + b];
                    tdm__enc_svar(e, bk->ts);
                    tdm__enc_uvar(e, bk->n);
                    for (uint32_t r = 0; r < bk->n; r++) {
                        uint64_t bits;
                        memcpy(&bits, &bk->recs[r].value, 8);
                        tdm__enc_u64(e, bits);
                        tdm__enc_bytes(e, bk->recs[r].payload,
                                       bk->recs[r].payload_len);
                    }
                }
            }
        }
        tdm__enc_end(e);
    }
    err = TDM_OK;
fail:
    tdm__free(g.v);
    tdm__free(grp);
    tdm__free(order);
    tdm__free(first);
    return err;
}

/* Reads one group section's keys into the buffers, with a cleanup timer
 * per bucket (their firing only drops the bucket: their order among
 * equal times is not observable). */
tdm_err tdm__join_interval_restore_group(tdm_joinop *op, struct tdm__dec *d)
{
    for (int s = 0; s < 2; s++) {
        uint64_t nk;
        if (tdm__dec_uvar(d, &nk) != TDM_OK)
            return TDM_ERR_PARSE;
        if (nk > tdm__dec_left(d))
            return tdm__dec_fail(d, "bad key count");
        for (uint64_t k = 0; k < nk; k++) {
            const void *key;
            size_t klen;
            uint64_t nb;
            tdm__dec_bytes(d, &key, &klen);
            if (tdm__dec_uvar(d, &nb) != TDM_OK)
                return TDM_ERR_PARSE;
            if (nb == 0 || nb > tdm__dec_left(d))
                return tdm__dec_fail(d, "bad bucket count");
            uint32_t kid;
            if (tdm__keys_intern(op->keys, key, klen, &kid) != TDM_OK)
                return TDM_ERR_NOMEM;
            bool created;
            keybuf *kb = tdm__kv_upsert(op->ibuf[s], kid, KEY_NS, &created);
            if (!kb) {
                tdm__keys_unref(op->keys, kid);
                return TDM_ERR_NOMEM;
            }
            if (!created) {
                tdm__keys_unref(op->keys, kid);
                return tdm__dec_fail(d, "key twice");
            }
            /* The interning reference is the key slot's. */
            kb->b = tdm__calloc((size_t)nb, sizeof *kb->b);
            if (!kb->b)
                return TDM_ERR_NOMEM;
            kb->cap = (size_t)nb;
            for (uint64_t b = 0; b < nb; b++) {
                int64_t ts;
                uint64_t nr;
                tdm__dec_svar(d, &ts);
                if (tdm__dec_uvar(d, &nr) != TDM_OK)
                    return TDM_ERR_PARSE;
                if (b > 0 && ts <= kb->b[kb->n - 1].ts)
                    return tdm__dec_fail(d, "buckets out of order");
                if (nr == 0 || nr > tdm__dec_left(d) / 9 ||
                    nr > UINT32_MAX)
                    return tdm__dec_fail(d, "bad record count");
                bucket *bk = &kb->b[kb->n++];
                bk->ts = ts;
                bk->recs = tdm__calloc((size_t)nr, sizeof *bk->recs);
                if (!bk->recs)
                    return TDM_ERR_NOMEM;
                bk->cap = (uint32_t)nr;
                for (uint64_t r = 0; r < nr; r++) {
                    uint64_t bits;
                    const void *p;
                    size_t plen;
                    tdm__dec_u64(d, &bits);
                    if (tdm__dec_bytes(d, &p, &plen) != TDM_OK)
                        return TDM_ERR_PARSE;
                    jrec *jr = &bk->recs[bk->n];
                    memcpy(&jr->value, &bits, 8);
                    if (plen) {
                        jr->payload = tdm__memdup(p, plen);
                        if (!jr->payload)
                            return TDM_ERR_NOMEM;
                        jr->payload_len = plen;
                    }
                    bk->n++;
                    op->buffered++;
                }
                tdm__ns tns = { ts, s };
                if (tdm__timers_add(op->timers, cleanup_time(op, s, ts), kid,
                                    tns) != TDM_OK)
                    return TDM_ERR_NOMEM;
            }
        }
    }
    return TDM_OK;
}
