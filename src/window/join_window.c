/* SPDX-License-Identifier: MIT */
/* join_window.c - the window join (Flink's JoinedStreams: both inputs
 * keyed alike, an event-time tumbling or sliding assigner, the default
 * event-time trigger, allowed lateness 0).
 *
 * A window join only produces output when a window fires, so records are
 * not indexed on arrival.  Each live window [start, end) keeps one record
 * log per side: an append-only arena of chunks that grow geometrically
 * (then are recycled from fired windows), so a record costs a copy and no
 * allocation of its own (with a packer set, tdm__join_window_set_packer,
 * the caller's function writes the payload straight into the log).  A
 * chunk is a slotted page: records (ts, value, key bytes, payload bytes)
 * grow from its front, and a slot (32-bit key hash, record offset) per
 * record grows from its back, so that firing scans 8 bytes per record
 * and reads a record only when its hash matches.  The live windows sit
 * in a small array sorted by end (a few at a time for tumbling and
 * sliding windows), with one timer per window at end - 1 in the
 * operator's timer queue.
 *
 * When the watermark reaches a window's maxTimestamp (end - 1) its timer
 * fires: a hash index is built over the smaller side's records by key,
 * the other side is scanned in arrival order and its matching records
 * are collected per key; then, key by key (in the order the smaller side
 * first saw them), every left record in arrival order meets every right
 * record in arrival order - Flink's per-key pair order - as JOIN events
 * stamped end - 1.  The window's chunks are then released at once.  If
 * the index cannot be allocated, a nested scan with the same per-key
 * order replaces it, so firing never fails.
 *
 * A window whose end - 1 is at or below the watermark is late and takes
 * no records; a record none of whose windows take it is late
 * (window-semantics.md R2.1, R2.2, R4.4).
 *
 * At the end: the window join's key-group sections of a checkpoint
 * (join.h, docs/checkpoints.md "Operator state").
 */
#include <stdlib.h>
#include <string.h>

#include "state/ckpt_codec.h"
#include "window/join.h"
#include "window/win.h"

/* One logged record; the key bytes follow the header, then the payload,
 * padded to 8 bytes. */
typedef struct wjrec {
    tdm_time_ms ts;
    double value;
    uint32_t key_len;
    uint32_t payload_len;
} wjrec;

/* A record's slot at the back of its chunk: slot i (arrival order) is
 * the i-th from the end. */
typedef struct wjslot {
    uint32_t hash; /* low half of tdm__keys_hash of the key */
    uint32_t off;  /* of the record in data[] */
} wjslot;

/* A chunk of a record log (a slotted page of cap bytes). */
typedef struct wjchunk {
    struct wjchunk *next;
    uint32_t used; /* record bytes at the front */
    uint32_t n;    /* slots at the back */
    uint32_t cap;  /* bytes of data[] */
    uint32_t pad_;
    unsigned char data[]; /* 8-aligned: the header is 24 bytes */
} wjchunk;

/* One side's record log of a window. */
typedef struct wjlog {
    wjchunk *head, *tail;
    int64_t n; /* records */
} wjlog;

/* A live window and its two logs. */
typedef struct tdm__wjwin {
    tdm_time_ms start, end;
    wjlog log[2];
} wjwin;

/* The window join's state: live windows sorted by end, ascending, and
 * spare full-size chunks kept from fired windows for the next ones (so
 * that a window's log is not page-faulted in anew every time).  Spares
 * are capped at the bytes of the largest window fired so far. */
struct tdm__wjoin {
    wjwin *w;
    uint32_t n, cap;
    uint32_t hint; /* index of the window the last record went to */
    wjchunk *spare;
    size_t spare_bytes;
    size_t max_win_bytes;
    size_t bytes;          /* chunk bytes held (capacity, spares included) plus
                            * the window array */
    tdm__join_packer pack; /* size NULL: payloads are copied */
};

/* The first chunk of a log holds this many data bytes; each further
 * chunk doubles, up to WJ_CHUNK_MAX (larger only for a huge record). */
#define WJ_CHUNK_MIN ((uint32_t)4096 - (uint32_t)sizeof(wjchunk))
#define WJ_CHUNK_MAX ((uint32_t)(1u << 20) - (uint32_t)sizeof(wjchunk))
/* Largest record (header, key, payload) a chunk takes. */
#define WJ_REC_MAX ((size_t)1 << 30)

static size_t rec_size(size_t key_len, size_t payload_len)
{
    return (sizeof(wjrec) + key_len + payload_len + 7) & ~(size_t)7;
}

static const char *rec_key(const wjrec *r)
{
    return (const char *)(r + 1);
}

static const void *rec_payload(const wjrec *r)
{
    return r->payload_len ? (const char *)(r + 1) + r->key_len : NULL;
}

static wjslot *chunk_slot(wjchunk *c, uint32_t i)
{
    return (wjslot *)(c->data + c->cap) - 1 - i;
}

static uint32_t key_hash(const char *key, size_t len)
{
    return (uint32_t)tdm__hash_bytes_seeded(key, len, TDM__HASH_TABLE);
}

/* ---- Record logs ---- */

/* Appends a copy of @p rec to @p lg, its payload written by the packer
 * when @p packed (and one is set).  Returns false on OOM (nothing
 * changed but possibly an empty chunk added). */
static bool log_append(struct tdm__wjoin *st, wjlog *lg, const tdm_record *rec,
                       bool packed)
{
    size_t klen = rec->key_len;
    packed = packed && st->pack.size && rec->payload;
    size_t plen = packed         ? st->pack.size(rec->payload)
                  : rec->payload ? rec->payload_len
                                 : 0;
    if (klen > WJ_REC_MAX || plen > WJ_REC_MAX)
        return false;
    size_t need = rec_size(klen, plen);
    if (need > WJ_REC_MAX)
        return false;
    wjchunk *c = lg->tail;
    if (!c || (size_t)c->cap - c->used - (size_t)c->n * sizeof(wjslot) <
                  need + sizeof(wjslot)) {
        size_t cap = c ? (size_t)c->cap * 2 + sizeof(wjchunk) : WJ_CHUNK_MIN;
        if (cap > WJ_CHUNK_MAX)
            cap = WJ_CHUNK_MAX;
        if (cap < need + sizeof(wjslot))
            cap = need + sizeof(wjslot);
        /* A spare (full-size) chunk serves any record that fits, also
         * as a log's first chunk: no allocation at all once windows
         * recycle their chunks. */
        if (st->spare && need + sizeof(wjslot) <= WJ_CHUNK_MAX) {
            c = st->spare;
            st->spare = c->next;
            st->spare_bytes -= sizeof(wjchunk) + c->cap;
        } else {
            c = tdm__malloc(sizeof(wjchunk) + cap);
            if (!c)
                return false;
            c->cap = (uint32_t)cap;
            st->bytes += sizeof(wjchunk) + cap;
        }
        c->next = NULL;
        c->used = 0;
        c->n = 0;
        if (lg->tail)
            lg->tail->next = c;
        else
            lg->head = c;
        lg->tail = c;
    }
    wjrec *r = (wjrec *)(c->data + c->used);
    r->ts = rec->ts;
    r->value = rec->value;
    r->key_len = (uint32_t)klen;
    r->payload_len = (uint32_t)plen;
    char *p = (char *)(r + 1);
    if (klen)
        memcpy(p, rec->key, klen);
    if (packed)
        st->pack.write(rec->payload, p + klen);
    else if (plen)
        memcpy(p + klen, rec->payload, plen);
    wjslot *sl = chunk_slot(c, c->n);
    sl->hash = key_hash(rec->key, klen);
    sl->off = c->used;
    c->used += (uint32_t)need;
    c->n++;
    lg->n++;
    return true;
}

/* Takes the last record back out of @p lg (it must have one, in its tail
 * chunk: log_append never leaves a record outside the tail). */
static void log_pop(wjlog *lg)
{
    wjchunk *c = lg->tail;
    c->used = chunk_slot(c, c->n - 1)->off;
    c->n--;
    lg->n--;
}

/* Releases a log's chunks: full-size ones go to the spares while they
 * stay under @p spare_cap bytes, the rest are freed.  Returns the bytes
 * the log held. */
static size_t log_free(struct tdm__wjoin *st, wjlog *lg, size_t spare_cap)
{
    size_t b = 0;
    for (wjchunk *c = lg->head, *next; c; c = next) {
        next = c->next;
        size_t cb = sizeof(wjchunk) + c->cap;
        b += cb;
        if (c->cap == WJ_CHUNK_MAX && st->spare_bytes + cb <= spare_cap) {
            c->next = st->spare;
            st->spare = c;
            st->spare_bytes += cb;
            st->bytes += cb;
        } else {
            tdm__free(c);
        }
    }
    lg->head = lg->tail = NULL;
    lg->n = 0;
    return b;
}

/* Walks a log's records in arrival order:
 *   wjit it = {lg->head, 0};
 *   for (wjrec *r; (r = it_next(&it, &hash)) != NULL;) ... */
typedef struct wjit {
    wjchunk *c;
    uint32_t i;
} wjit;

static wjrec *it_next(wjit *it, uint32_t *hash)
{
    while (it->c && it->i >= it->c->n) {
        it->c = it->c->next;
        it->i = 0;
    }
    if (!it->c)
        return NULL;
    const wjslot *sl = chunk_slot(it->c, it->i++);
    *hash = sl->hash;
    return (wjrec *)(it->c->data + sl->off);
}

/* ---- The set of live windows ---- */

/* The window [start, end), or NULL.  Newest first: records mostly go to
 * the latest windows. */
static wjwin *win_find(struct tdm__wjoin *st, tdm_time_ms start,
                       tdm_time_ms end)
{
    for (uint32_t i = st->n; i-- > 0;)
        if (st->w[i].end == end && st->w[i].start == start)
            return &st->w[i];
    return NULL;
}

/* Adds an empty window [start, end) at its place by (end, start) and
 * registers its timer at end - 1.  NULL on OOM (nothing changed). */
static wjwin *win_add(tdm_joinop *op, tdm_time_ms start, tdm_time_ms end)
{
    struct tdm__wjoin *st = op->wj;
    if (st->n == st->cap) {
        uint32_t ncap = st->cap ? st->cap * 2 : 4;
        wjwin *nw = tdm__realloc(st->w, ncap * sizeof *nw);
        if (!nw)
            return NULL;
        st->bytes += (ncap - st->cap) * sizeof *nw;
        st->w = nw;
        st->cap = ncap;
    }
    if (tdm__timers_add(op->timers, end - 1, 0, (tdm__ns){start, end}) !=
        TDM_OK)
        return NULL;
    uint32_t i = st->n;
    while (i > 0 && (st->w[i - 1].end > end ||
                     (st->w[i - 1].end == end && st->w[i - 1].start > start)))
        i--;
    memmove(&st->w[i + 1], &st->w[i], (st->n - i) * sizeof *st->w);
    st->n++;
    wjwin *w = &st->w[i];
    memset(w, 0, sizeof *w);
    w->start = start;
    w->end = end;
    return w;
}

/* Releases a window's logs, removes it from the set and deletes its
 * timer (a no-op once the timer was popped). */
static void win_drop(tdm_joinop *op, wjwin *w)
{
    struct tdm__wjoin *st = op->wj;
    tdm__timers_del(op->timers, w->end - 1, 0, (tdm__ns){w->start, w->end});
    op->buffered -= w->log[0].n + w->log[1].n;
    size_t wb = 0;
    for (int s = 0; s < 2; s++)
        for (wjchunk *c = w->log[s].head; c; c = c->next)
            wb += sizeof(wjchunk) + c->cap;
    if (wb > st->max_win_bytes)
        st->max_win_bytes = wb;
    st->bytes -= log_free(st, &w->log[0], st->max_win_bytes) +
                 log_free(st, &w->log[1], st->max_win_bytes);
    uint32_t i = (uint32_t)(w - st->w);
    memmove(&st->w[i], &st->w[i + 1], (st->n - i - 1) * sizeof *st->w);
    st->n--;
}

/* ---- Entry points from join.c ---- */

/* Accepts event-time tumbling and sliding assigners only. */
tdm_err tdm__join_window_init(tdm_joinop *op, char *errbuf, size_t errbuf_size)
{
    const tdm_assigner *a = op->asg;
    if (a->kind != TDM__ASG_TUMBLING && a->kind != TDM__ASG_SLIDING)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "asg must be a tumbling or sliding assigner for a "
                         "window join (got %s)",
                         a->kind == TDM__ASG_SESSION    ? "session"
                         : a->kind == TDM__ASG_CUMULATE ? "cumulate"
                                                        : "global");
    if (a->proc_time)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "asg must use event time for a window join (got "
                         "a processing-time assigner)");
    op->wj = tdm__calloc(1, sizeof *op->wj);
    if (!op->wj)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "out of memory creating the window join");
    return TDM_OK;
}

/* Takes the record back out of the first @p upto windows of its
 * timestamp that are not late (it is the last record of its side in
 * each), dropping windows left empty.  Undoes a push that failed half
 * way through a sliding assignment. */
static void unwind(tdm_joinop *op, int side, const tdm_record *rec, int upto)
{
    tdm__assign_iter it;
    tdm_time_ms start, end;
    int i = 0;
    tdm__assign_begin(op->asg, rec->ts, &it);
    while (i < upto && tdm__assign_next(&it, &start, &end)) {
        if (end - 1 <= op->wm)
            continue;
        i++;
        wjwin *w = win_find(op->wj, start, end);
        if (!w || w->log[side].n == 0)
            continue;
        log_pop(&w->log[side]);
        op->buffered--;
        if (w->log[0].n == 0 && w->log[1].n == 0)
            win_drop(op, w);
    }
}

/* Adds the record to the log of each of its windows that is not late (R2
 * steps 2-6 with the event-time trigger: one timer per window at end - 1,
 * which is also its cleanup time).  A record taken by no window is
 * late. */
tdm_err tdm__join_window_push(tdm_joinop *op, int side, const tdm_record *rec)
{
    struct tdm__wjoin *st = op->wj;
    tdm__assign_iter it;
    tdm_time_ms start, end;

    /* Tumbling windows partition time: a live window that holds ts and is
     * not late is the record's only window. */
    if (op->asg->kind == TDM__ASG_TUMBLING && st->hint < st->n) {
        wjwin *w = &st->w[st->hint];
        if (rec->ts >= w->start && rec->ts < w->end && w->end - 1 > op->wm) {
            if (!log_append(st, &w->log[side], rec, true))
                return TDM_ERR_NOMEM;
            op->buffered++;
            return TDM_OK;
        }
    }

    /* Find out first whether any window takes the record, so a late
     * record touches no state. */
    bool any = false;
    tdm__assign_begin(op->asg, rec->ts, &it);
    while (!any && tdm__assign_next(&it, &start, &end))
        any = end - 1 > op->wm;
    if (!any) {
        /* Flink's isElementLate with lateness 0: ts <= watermark.  With
         * tumbling and sliding windows a record whose windows are all
         * late always is. */
        if (rec->ts <= op->wm)
            return tdm__join_late(op, side, rec);
        return TDM_OK;
    }

    int added = 0;
    tdm__assign_begin(op->asg, rec->ts, &it);
    while (tdm__assign_next(&it, &start, &end)) {
        /* A window is late when its maxTimestamp is at or below the
         * watermark (cleanup time with lateness 0, R4.4). */
        if (end - 1 <= op->wm)
            continue;
        wjwin *w = win_find(st, start, end);
        bool created = false;
        if (!w) {
            w = win_add(op, start, end);
            if (!w)
                goto fail;
            created = true;
        }
        if (!log_append(st, &w->log[side], rec, true)) {
            if (created)
                win_drop(op, w);
            goto fail;
        }
        st->hint = (uint32_t)(w - st->w);
        op->buffered++;
        added++;
    }
    return TDM_OK;

fail:
    unwind(op, side, rec, added);
    return TDM_ERR_NOMEM;
}

static bool same_key(const wjrec *a, const wjrec *b)
{
    return a->key_len == b->key_len &&
           memcmp(rec_key(a), rec_key(b), a->key_len) == 0;
}

static void emit_pair(tdm_joinop *op, const wjwin *w, const wjrec *a,
                      const wjrec *b)
{
    tdm_record l = {.key = rec_key(a),
                    .key_len = a->key_len,
                    .ts = a->ts,
                    .value = a->value,
                    .payload = rec_payload(a),
                    .payload_len = a->payload_len};
    tdm_record r = {.key = rec_key(b),
                    .key_len = b->key_len,
                    .ts = b->ts,
                    .value = b->value,
                    .payload = rec_payload(b),
                    .payload_len = b->payload_len};
    tdm__join_emit_pair(op, &l, &r, w->end - 1, l.key, l.key_len, 1, w->start,
                        w->end);
}

/* Joins a window without an index (the index could not be allocated):
 * for each left record that starts a key (no earlier left record has
 * it), each of the key's left records in arrival order meets each of its
 * right records in arrival order, which keeps the per-key order of the
 * indexed path.  Quadratic, allocation free. */
static void join_nested(tdm_joinop *op, const wjwin *w)
{
    uint32_t ha = 0, hp = 0, hb = 0; /* set by it_next before use */
    wjit ia = {w->log[0].head, 0};
    for (wjrec *a; (a = it_next(&ia, &ha)) != NULL;) {
        bool seen = false;
        wjit ip = {w->log[0].head, 0};
        for (wjrec *p; (p = it_next(&ip, &hp)) != NULL && p != a;)
            if (hp == ha && same_key(p, a)) {
                seen = true;
                break;
            }
        if (seen)
            continue;
        /* ip is just past a: a and the key's later left records. */
        for (wjrec *p = a; p; p = it_next(&ip, &hp)) {
            if (p != a && (hp != ha || !same_key(p, a)))
                continue;
            wjit ib = {w->log[1].head, 0};
            for (wjrec *b; (b = it_next(&ib, &hb)) != NULL;)
                if (hb == ha && same_key(b, a))
                    emit_pair(op, w, p, b);
        }
    }
}

/* One key of a firing window's index. */
typedef struct wjkey {
    uint32_t hash;
    uint32_t n[2];    /* records of each side */
    uint32_t pos[2];  /* first index in the grouped arrays */
    const wjrec *rep; /* a record with the key */
} wjkey;

/* A matched record of the scanned side and its key entry. */
typedef struct wjmatch {
    const wjrec *rec;
    uint32_t key;
} wjmatch;

/* Groups the indexed side @p s (its records' key entries in @p skey)
 * and the @p n_m matches of the other side by key, keeping arrival order
 * within a key, and emits every key's pairs.  False when memory for the
 * grouping cannot be allocated (nothing emitted). */
static bool emit_grouped(tdm_joinop *op, const wjwin *w, int s, wjkey *keys,
                         size_t n_keys, const uint32_t *skey, const wjmatch *m,
                         size_t n_m)
{
    bool ok = false;
    const wjrec **grouped[2] = {NULL, NULL};
    grouped[s] = tdm__malloc((size_t)w->log[s].n * sizeof *grouped[s]);
    grouped[!s] = tdm__malloc(n_m * sizeof *grouped[!s]);
    if (!grouped[0] || !grouped[1])
        goto fail;
    uint32_t pos[2] = {0, 0};
    for (size_t i = 0; i < n_keys; i++)
        for (int side = 0; side < 2; side++) {
            keys[i].pos[side] = pos[side];
            pos[side] += keys[i].n[side];
            keys[i].n[side] = 0;
        }
    uint32_t h;
    size_t j = 0;
    wjit ia = {w->log[s].head, 0};
    for (wjrec *a; (a = it_next(&ia, &h)) != NULL; j++) {
        wjkey *k = &keys[skey[j]];
        grouped[s][k->pos[s] + k->n[s]++] = a;
    }
    for (size_t i = 0; i < n_m; i++) {
        wjkey *k = &keys[m[i].key];
        grouped[!s][k->pos[!s] + k->n[!s]++] = m[i].rec;
    }
    for (size_t i = 0; i < n_keys; i++) {
        const wjkey *k = &keys[i];
        for (uint32_t a = 0; a < k->n[0]; a++)
            for (uint32_t b = 0; b < k->n[1]; b++)
                emit_pair(op, w, grouped[0][k->pos[0] + a],
                          grouped[1][k->pos[1] + b]);
    }
    ok = true;

fail:
    tdm__free(grouped[0]);
    tdm__free(grouped[1]);
    return ok;
}

/* Joins a firing window through a hash index over its smaller side; false
 * when memory for it cannot be allocated (nothing emitted). */
static bool join_indexed(tdm_joinop *op, const wjwin *w)
{
    int s = w->log[1].n < w->log[0].n; /* the indexed (smaller) side */
    size_t n = (size_t)w->log[s].n;
    size_t cap = 4;
    while (cap < 2 * n)
        cap *= 2;
    bool ok = false;
    /* keys: entries; slot: the table (entry + 1, 0 empty); skey: the key
     * entry of each indexed record in arrival order; m: the matches of
     * the scanned side. */
    wjkey *keys = tdm__malloc(n * sizeof *keys);
    uint32_t *slot = tdm__calloc(cap, sizeof *slot);
    uint32_t *skey = tdm__malloc(n * sizeof *skey);
    wjmatch *m = NULL;
    size_t n_m = 0, cap_m = 0;
    if (!keys || !slot || !skey)
        goto fail;
    size_t mask = cap - 1, n_keys = 0;

    /* The smaller side: one entry per key, in first-arrival order. */
    uint32_t h;
    size_t j = 0;
    wjit ia = {w->log[s].head, 0};
    for (wjrec *a; (a = it_next(&ia, &h)) != NULL; j++) {
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            if (slot[i] == 0) {
                wjkey *k = &keys[n_keys++];
                k->hash = h;
                k->n[s] = k->n[!s] = 0;
                k->rep = a;
                slot[i] = (uint32_t)n_keys;
            }
            wjkey *k = &keys[slot[i] - 1];
            if (k->hash == h && same_key(k->rep, a)) {
                k->n[s]++;
                skey[j] = slot[i] - 1;
                break;
            }
        }
    }
    /* The other side in arrival order: only records whose key hash is
     * indexed are read; those with the key are collected. */
    wjit ib = {w->log[!s].head, 0};
    for (wjrec *b; (b = it_next(&ib, &h)) != NULL;) {
        for (size_t i = h & mask; slot[i] != 0; i = (i + 1) & mask) {
            wjkey *k = &keys[slot[i] - 1];
            if (k->hash != h || !same_key(k->rep, b))
                continue;
            if (n_m == cap_m) {
                size_t nc = cap_m ? cap_m * 2 : 64;
                wjmatch *nm = tdm__realloc(m, nc * sizeof *nm);
                if (!nm)
                    goto fail;
                m = nm;
                cap_m = nc;
            }
            m[n_m].rec = b;
            m[n_m++].key = slot[i] - 1;
            k->n[!s]++;
            break;
        }
    }
    if (n_m > 0 && !emit_grouped(op, w, s, keys, n_keys, skey, m, n_m))
        goto fail;
    ok = true;

fail:
    tdm__free(m);
    tdm__free(skey);
    tdm__free(slot);
    tdm__free(keys);
    return ok;
}

/* The window's timer at end - 1: every left record meets every right
 * record of the same key; then the window's logs go. */
void tdm__join_window_fire(tdm_joinop *op, const tdm__timer *t)
{
    wjwin *w = win_find(op->wj, t->ns.a, t->ns.b);
    if (!w)
        return;
    if (w->log[0].n > 0 && w->log[1].n > 0 && !join_indexed(op, w))
        join_nested(op, w);
    /* Found again in case an emit callback pushed to this operator.  The
     * timer was popped already; deleting it again is a no-op. */
    w = win_find(op->wj, t->ns.a, t->ns.b);
    if (w)
        win_drop(op, w);
}

/* Sets the packer (join.h); copies @p pk. */
void tdm__join_window_set_packer(tdm_joinop *op, const tdm__join_packer *pk)
{
    if (!op || !op->wj)
        return;
    if (pk && pk->size && pk->write)
        op->wj->pack = *pk;
    else
        memset(&op->wj->pack, 0, sizeof op->wj->pack);
}

/* Bytes held by the window join's state: record log chunks (capacity,
 * spares included) and the window array. */
size_t tdm__join_window_bytes(const tdm_joinop *op)
{
    return op->wj ? op->wj->bytes : 0;
}

/* Frees every window and the state. */
void tdm__join_window_free(tdm_joinop *op)
{
    struct tdm__wjoin *st = op->wj;
    (void)tdm__join_window_restore_end(op, NULL, false);
    if (!st)
        return;
    for (uint32_t i = 0; i < st->n; i++) {
        log_free(st, &st->w[i].log[0], 0);
        log_free(st, &st->w[i].log[1], 0);
    }
    for (wjchunk *c = st->spare, *next; c; c = next) {
        next = c->next;
        tdm__free(c);
    }
    tdm__free(st->w);
    tdm__free(st);
    op->wj = NULL;
    op->buffered = 0;
}

/* ---- Checkpoints (join.h; layout in docs/checkpoints.md) ---- */

typedef struct wsnap_ref {
    const wjrec *r;
    uint32_t win;
    uint32_t pos;
    uint8_t side;
} wsnap_ref;

/* One group section per key group with buffered records: the windows
 * holding some of its records, per window and side the records (arrival
 * position in the side's log, ts, value bits, key, payload). */
tdm_err tdm__join_window_snap(const tdm_joinop *op, struct tdm__enc *e,
                              tdm__join_kg_fn kg, void *ud, int lo, size_t ng)
{
    const struct tdm__wjoin *st = op->wj;
    tdm_err err = TDM_ERR_NOMEM;
    size_t n = 0;
    for (uint32_t i = 0; i < st->n; i++)
        n += (size_t)(st->w[i].log[0].n + st->w[i].log[1].n);
    wsnap_ref *refs = tdm__malloc((n + 1) * sizeof *refs);
    int *grp = tdm__malloc((n + 1) * sizeof *grp);
    uint32_t *order = tdm__malloc((n + 1) * sizeof *order);
    size_t *first = tdm__malloc((ng + 1) * sizeof *first);
    if (!refs || !grp || !order || !first)
        goto fail;
    size_t m = 0;
    for (uint32_t i = 0; i < st->n; i++) {
        for (int s = 0; s < 2; s++) {
            wjit it = {st->w[i].log[s].head, 0};
            uint32_t h, pos = 0;
            for (wjrec *r; (r = it_next(&it, &h)) != NULL && m < n;) {
                refs[m].r = r;
                refs[m].win = i;
                refs[m].pos = pos++;
                refs[m].side = (uint8_t)s;
                int x = kg ? kg(ud, rec_key(r), r->key_len) : 0;
                grp[m] = (x < lo || (size_t)(x - lo) >= ng) ? -1 : x - lo;
                m++;
            }
        }
    }
    if (!tdm__snap_by_group(grp, m, ng, order, first))
        goto fail;
    for (size_t gi = 0; gi < ng; gi++) {
        size_t a = first[gi], b = first[gi + 1];
        if (a == b)
            continue;
        tdm__enc_begin(e, TDM__SNAP_TAG_JOINOP_GROUP);
        tdm__enc_uvar(e, (uint64_t)gi + (uint64_t)lo);
        size_t nw = 0;
        for (size_t j = a; j < b; j++)
            if (j == a || refs[order[j]].win != refs[order[j - 1]].win)
                nw++;
        tdm__enc_uvar(e, nw);
        for (size_t j = a; j < b;) {
            uint32_t wi = refs[order[j]].win;
            tdm__enc_svar(e, st->w[wi].start);
            tdm__enc_svar(e, st->w[wi].end);
            for (uint8_t s = 0; s < 2; s++) {
                size_t k = j, cnt = 0;
                while (k < b && refs[order[k]].win == wi) {
                    cnt += refs[order[k]].side == s;
                    k++;
                }
                tdm__enc_uvar(e, cnt);
                for (k = j; k < b && refs[order[k]].win == wi; k++) {
                    const wsnap_ref *x = &refs[order[k]];
                    if (x->side != s)
                        continue;
                    uint64_t bits;
                    memcpy(&bits, &x->r->value, 8);
                    tdm__enc_uvar(e, x->pos);
                    tdm__enc_svar(e, x->r->ts);
                    tdm__enc_u64(e, bits);
                    tdm__enc_bytes(e, rec_key(x->r), x->r->key_len);
                    tdm__enc_bytes(e, rec_payload(x->r), x->r->payload_len);
                }
            }
            while (j < b && refs[order[j]].win == wi)
                j++;
        }
        tdm__enc_end(e);
    }
    err = TDM_OK;
fail:
    tdm__free(refs);
    tdm__free(grp);
    tdm__free(order);
    tdm__free(first);
    return err;
}

/* Records read from one blob, added in (window, side, position) order
 * by tdm__join_window_restore_end.  Points into the blob. */
typedef struct wrs_rec {
    tdm_time_ms start, end;
    uint32_t pos;
    uint8_t side;
    tdm_record rec;
} wrs_rec;

struct tdm__wrs {
    wrs_rec *v;
    size_t n, cap;
};
typedef struct tdm__wrs wrs_buf;

/* The buffer of the blob being restored, made on first use; NULL on
 * OOM. */
static wrs_buf *wrs_of(tdm_joinop *op)
{
    if (!op->wrs)
        op->wrs = tdm__calloc(1, sizeof *op->wrs);
    return op->wrs;
}

tdm_err tdm__join_window_restore_group(tdm_joinop *op, struct tdm__dec *d)
{
    wrs_buf *wb = wrs_of(op);
    uint64_t nw;
    if (!wb)
        return TDM_ERR_NOMEM;
    if (tdm__dec_uvar(d, &nw) != TDM_OK)
        return TDM_ERR_PARSE;
    if (nw > tdm__dec_left(d))
        return tdm__dec_fail(d, "bad window count");
    for (uint64_t w = 0; w < nw; w++) {
        int64_t start, end;
        tdm__dec_svar(d, &start);
        if (tdm__dec_svar(d, &end) != TDM_OK)
            return TDM_ERR_PARSE;
        if (start >= end || end - 1 <= op->wm)
            return tdm__dec_fail(d, "bad window");
        for (uint8_t s = 0; s < 2; s++) {
            uint64_t nr;
            if (tdm__dec_uvar(d, &nr) != TDM_OK)
                return TDM_ERR_PARSE;
            if (nr > tdm__dec_left(d) / 12)
                return tdm__dec_fail(d, "bad record count");
            for (uint64_t i = 0; i < nr; i++) {
                uint64_t pos, bits;
                int64_t ts;
                const void *key, *pl;
                size_t klen, plen;
                tdm__dec_uvar(d, &pos);
                tdm__dec_svar(d, &ts);
                tdm__dec_u64(d, &bits);
                tdm__dec_bytes(d, &key, &klen);
                if (tdm__dec_bytes(d, &pl, &plen) != TDM_OK)
                    return TDM_ERR_PARSE;
                if (pos > UINT32_MAX || ts < start || ts >= end ||
                    klen > WJ_REC_MAX || plen > WJ_REC_MAX)
                    return tdm__dec_fail(d, "bad record");
                if (wb->n == wb->cap) {
                    size_t ncap = wb->cap ? wb->cap * 2 : 64;
                    wrs_rec *nv = tdm__realloc(wb->v, ncap * sizeof *nv);
                    if (!nv)
                        return TDM_ERR_NOMEM;
                    wb->v = nv;
                    wb->cap = ncap;
                }
                wrs_rec *x = &wb->v[wb->n++];
                memset(x, 0, sizeof *x);
                x->start = start;
                x->end = end;
                x->pos = (uint32_t)pos;
                x->side = s;
                x->rec.key = key;
                x->rec.key_len = klen;
                x->rec.ts = ts;
                memcpy(&x->rec.value, &bits, 8);
                x->rec.payload = plen ? pl : NULL;
                x->rec.payload_len = plen;
            }
        }
    }
    return TDM_OK;
}

static int cmp_wrs(const void *pa, const void *pb)
{
    const wrs_rec *a = pa, *b = pb;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->side != b->side)
        return a->side < b->side ? -1 : 1;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    return 0;
}

tdm_err tdm__join_window_restore_end(tdm_joinop *op, struct tdm__dec *d,
                                     bool ok)
{
    wrs_buf *wb = op->wrs;
    tdm_err err = TDM_OK;
    if (!wb)
        return TDM_OK;
    if (ok) {
        if (wb->n)
            qsort(wb->v, wb->n, sizeof *wb->v, cmp_wrs);
        for (size_t i = 0; i < wb->n && err == TDM_OK; i++) {
            const wrs_rec *x = &wb->v[i];
            if (i && cmp_wrs(x, &wb->v[i - 1]) == 0) {
                err = tdm__dec_fail(d, "record twice");
                break;
            }
            wjwin *w = win_find(op->wj, x->start, x->end);
            if (!w)
                w = win_add(op, x->start, x->end);
            if (!w || !log_append(op->wj, &w->log[x->side], &x->rec, false))
                err = TDM_ERR_NOMEM;
            else
                op->buffered++;
        }
    }
    tdm__free(wb->v);
    tdm__free(wb);
    op->wrs = NULL;
    return err;
}
