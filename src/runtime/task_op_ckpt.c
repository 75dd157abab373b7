/* SPDX-License-Identifier: MIT */
/* task_op_ckpt.c - checkpoints in window and join subtasks (task_op.c;
 * docs/checkpoints.md, "In the runtime"):
 *
 *   barriers     a barrier blocks its channel; items of a blocked
 *                channel are held back until every channel that has not
 *                ended brought the barrier (alignment), then the subtask
 *                snapshots, pre-commits its sinks, forwards the barrier
 *                in its output stream (chaining), acknowledges, and
 *                handles what it held back;
 *   snapshot     the subtask's blob: its channels' watermarks and flags,
 *                the operator's state of the subtask's key groups, and
 *                retract mode's memory of emitted rows (task_op_emit.c)
 *                as a section of its own;
 *   restore      tdm__rt_ckpt_restore_op reads the old subtasks' blobs back,
 *                at the same or another parallelism (by key group).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ckpt.h"
#include "runtime/task_op.h"
#include "state/ckpt_codec.h"
#include "state/ckpt_store.h"
#include "state/state.h"
#include "window/join.h"
#include "window/win.h"

/* ---- Checkpoints: barriers and alignment ---- */

/* Section of an operator subtask's own state in its blob (then the
 * operator's section): the channels' last watermarks and flags. */
#define RT_CK_TAG_OPTASK UINT64_C(0x524f) /* "RO" */
#define RT_CK_OPTASK_VERSION 1

/* The key group of a key as the sources route it (the snapshot keeps
 * state by key group, so a restore at another parallelism can deal it
 * out again). */
static int op_key_group(void *ud, const char *key, size_t len)
{
    const tdm__rt_op_task *t = ud;
    return tdm__key_group(tdm__keys_hash(key, len), t->run->key_groups);
}

/* The key groups subtask @p j owns: one contiguous range. */
static void op_groups(const tdm__run *run, int j, int *lo, int *hi)
{
    *lo = run->key_groups;
    *hi = -1;
    for (int g = 0; g < run->key_groups; g++)
        if (run->owner[g] == j) {
            if (g < *lo)
                *lo = g;
            *hi = g;
        }
}

/* ---- Checkpoints: retract mode's memory of emitted rows ----
 * A section after the operator's in the subtask's blob: per key group
 * the (key, window) slots with the aggregate part of the last row
 * emitted, so that after a restore an update retracts exactly what was
 * written before (docs/checkpoints.md, "Retract mode's memory"). */

#define RT_CK_TAG_RETRACT UINT64_C(0x5252) /* "RR" */
#define RT_CK_TAG_RGROUP UINT64_C(0x5247)  /* "RG" */
#define RT_CK_RETRACT_VERSION 1

/* One remembered row, for the snapshot's order by key group. */
typedef struct rref {
    int group;
    uint32_t kid;
    tdm__ns ns;
    const tdm__rt_op_rslot *s;
} rref;

typedef struct rcollect {
    tdm__rt_op_task *t;
    rref *v;
    size_t n;
} rcollect;

static void collect_rslot(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    rcollect *c = ud;
    size_t len = 0;
    const char *k = tdm__keys_get(c->t->ret.rkeys, key, &len);
    c->v[c->n++] = (rref){op_key_group(c->t, k, len), key, ns, slot};
}

static int cmp_rref(const void *a, const void *b)
{
    const rref *x = a, *y = b;
    return x->group < y->group ? -1 : x->group > y->group;
}

/* The cleanup time of a remembered window (retract_and_remember,
 * task_op_emit.c). */
static tdm_time_ms retract_at(const tdm__rt_op_task *t, tdm__ns ns)
{
    return t->op->event_time
               ? tdm__time_add_sat(ns.b - 1, tdm_winop_allowed_lateness(t->win))
               : ns.b - 1;
}

/* One slot: key, window, flags (1 cleanup timer), [timer time], flag
 * of an aggregate part and the part as typed values (count: svar; row
 * aggregates: per column u8 null, then str or u64 bits). */
static void encode_rslot(tdm__rt_op_task *t, tdm__enc *e, const rref *r)
{
    tdm__rt_op *op = t->op;
    size_t klen = 0;
    const char *k = tdm__keys_get(t->ret.rkeys, r->kid, &klen);
    tdm_time_ms at = retract_at(t, r->ns);
    bool timer = tdm__timers_has(t->ret.rtimers, at, r->kid, r->ns);
    tdm__enc_bytes(e, k, klen);
    tdm__enc_svar(e, r->ns.a);
    tdm__enc_svar(e, r->ns.b);
    tdm__enc_u8(e, timer ? 1 : 0);
    if (timer)
        tdm__enc_svar(e, at);
    tdm__enc_u8(e, r->s->blob ? 1 : 0);
    if (!r->s->blob)
        return;
    if (op->fast_count) {
        int64_t n = 0;
        memcpy(&n, r->s->blob, sizeof n);
        tdm__enc_svar(e, n);
        return;
    }
    tdm__val *v = t->vals + op->n_key;
    if (!tdm__rowagg_unpack(r->s->blob, r->s->len, op->n_aggs,
                            op->col_types + op->n_key, v))
        memset(v, 0, (size_t)op->n_aggs * sizeof *v); /* cannot happen */
    for (int i = 0; i < op->n_aggs; i++) {
        tdm__enc_u8(e, v[i].null ? 1 : 0);
        if (op->col_types[op->n_key + i] == TDM_TYPE_STRING)
            tdm__enc_bytes(e, v[i].null ? "" : v[i].u.s.p,
                           v[i].null ? 0 : v[i].u.s.len);
        else
            tdm__enc_u64(e, (uint64_t)v[i].u.i);
    }
}

/* Appends the retract section: the slots of key groups lo..hi, one "RG"
 * section per group that has any.  One scratch array (a reference per
 * slot), nothing per row. */
static tdm_err retract_snapshot(tdm__rt_op_task *t, tdm__enc *e, int lo, int hi)
{
    rcollect c = {t, NULL, 0};
    size_t n = tdm__kv_count(t->ret.rkv);
    c.v = tdm__malloc((n + 1) * sizeof *c.v);
    if (!c.v)
        return TDM_ERR_NOMEM;
    tdm__kv_each(t->ret.rkv, collect_rslot, &c);
    qsort(c.v, c.n, sizeof *c.v, cmp_rref);
    tdm__enc_begin(e, RT_CK_TAG_RETRACT);
    tdm__enc_uvar(e, RT_CK_RETRACT_VERSION);
    for (size_t i = 0; i < c.n;) {
        size_t j = i;
        while (j < c.n && c.v[j].group == c.v[i].group)
            j++;
        if (c.v[i].group >= lo && c.v[i].group <= hi) {
            tdm__enc_begin(e, RT_CK_TAG_RGROUP);
            tdm__enc_uvar(e, (uint64_t)c.v[i].group);
            tdm__enc_uvar(e, (uint64_t)(j - i));
            for (size_t k = i; k < j; k++)
                encode_rslot(t, e, &c.v[k]);
            tdm__enc_end(e);
        }
        i = j;
    }
    tdm__enc_end(e);
    tdm__free(c.v);
    return TDM_OK;
}

/* Copies a decoder's first error into @p to (keeping an earlier one). */
static void dec_pass(tdm__dec *to, const tdm__dec *from)
{
    if (from->err && !to->err) {
        to->err = from->err;
        to->err_off = from->err_off;
        to->why = from->why;
    }
}

/* Reads one slot's aggregate part into a packed buffer as
 * retract_and_remember stores it (*blob NULL: none, or an error in @p d
 * or no memory, told apart by the return). */
static tdm_err decode_rpart(tdm__rt_op_task *t, tdm__dec *d, void **blob,
                            size_t *len)
{
    tdm__rt_op *op = t->op;
    uint8_t has = 0;
    *blob = NULL;
    *len = 0;
    tdm__dec_u8(d, &has);
    if (d->err || has > 1)
        return tdm__dec_fail(d, "bad aggregate part flag");
    if (!has)
        return TDM_OK;
    if (op->fast_count) {
        int64_t n = 0;
        if (tdm__dec_svar(d, &n) != TDM_OK)
            return d->err;
        if (n < 0)
            return tdm__dec_fail(d, "negative count");
        *blob = tdm__memdup(&n, sizeof n);
        *len = sizeof n;
        return *blob ? TDM_OK : TDM_ERR_NOMEM;
    }
    /* First pass: the values (strings borrowed from the input) and the
     * packed size; then the packed copy (ra_result's layout). */
    tdm__val *v = t->vals + op->n_key;
    size_t head = (size_t)op->n_aggs * sizeof(tdm__val), need = head;
    for (int i = 0; i < op->n_aggs && !d->err; i++) {
        uint8_t null = 0;
        memset(&v[i], 0, sizeof v[i]);
        tdm__dec_u8(d, &null);
        if (!d->err && null > 1)
            return tdm__dec_fail(d, "bad null flag");
        v[i].null = null;
        if (op->col_types[op->n_key + i] == TDM_TYPE_STRING) {
            const void *p = NULL;
            size_t l = 0;
            if (tdm__dec_bytes(d, &p, &l) == TDM_OK && l > UINT32_MAX)
                return tdm__dec_fail(d, "string too long");
            v[i].u.s.p = p;
            v[i].u.s.len = (uint32_t)l;
            if (!null)
                need += l;
            else if (l)
                return tdm__dec_fail(d, "a null string with bytes");
        } else {
            uint64_t bits = 0;
            tdm__dec_u64(d, &bits);
            v[i].u.i = (int64_t)bits;
        }
    }
    if (d->err)
        return d->err;
    char *buf = tdm__malloc(need);
    if (!buf)
        return TDM_ERR_NOMEM;
    tdm__val *pv = (tdm__val *)buf;
    size_t off = 0;
    for (int i = 0; i < op->n_aggs; i++) {
        memset(&pv[i], 0, sizeof pv[i]);
        pv[i].null = v[i].null;
        if (op->col_types[op->n_key + i] == TDM_TYPE_STRING) {
            if (v[i].null)
                continue;
            if (v[i].u.s.len)
                memcpy(buf + head + off, v[i].u.s.p, v[i].u.s.len);
            pv[i].u.s.p = (const char *)(uintptr_t)off;
            pv[i].u.s.len = v[i].u.s.len;
            off += v[i].u.s.len;
        } else {
            pv[i].u.i = v[i].u.i;
        }
    }
    *blob = buf;
    *len = need;
    return TDM_OK;
}

/* One "RG" section's slots into the memory.  A (key, window) already
 * remembered is an error (key groups are disjoint across blobs). */
static tdm_err restore_rgroup(tdm__rt_op_task *t, tdm__dec *g)
{
    uint64_t n = 0;
    tdm__dec_uvar(g, &n);
    if (!g->err && n > tdm__dec_left(g) / 5)
        return tdm__dec_fail(g, "slot count beyond the section");
    for (uint64_t i = 0; i < n && !g->err; i++) {
        const void *k = NULL;
        size_t klen = 0;
        tdm__ns ns = {0, 0};
        uint8_t fl = 0;
        int64_t at = 0;
        tdm__dec_bytes(g, &k, &klen);
        tdm__dec_svar(g, &ns.a);
        tdm__dec_svar(g, &ns.b);
        tdm__dec_u8(g, &fl);
        if (!g->err && fl > 1)
            return tdm__dec_fail(g, "unknown slot flags");
        if (!g->err && ns.a > ns.b)
            return tdm__dec_fail(g, "window start after its end");
        if (fl & 1)
            tdm__dec_svar(g, &at);
        void *blob = NULL;
        size_t len = 0;
        tdm_err err = decode_rpart(t, g, &blob, &len);
        if (err != TDM_OK)
            return err;
        uint32_t kid;
        if (tdm__keys_intern(t->ret.rkeys, k, klen, &kid) != TDM_OK) {
            tdm__free(blob);
            return TDM_ERR_NOMEM;
        }
        bool created = false;
        tdm__rt_op_rslot *s = tdm__kv_upsert(t->ret.rkv, kid, ns, &created);
        if (!s || !created) {
            tdm__keys_unref(t->ret.rkeys, kid);
            tdm__free(blob);
            return s ? tdm__dec_fail(g, "a window remembered twice")
                     : TDM_ERR_NOMEM;
        }
        s->blob = blob;
        s->len = len;
        if ((fl & 1) && tdm__timers_add(t->ret.rtimers, at, kid, ns) != TDM_OK)
            return TDM_ERR_NOMEM;
    }
    return g->err;
}

/* Restores the retract memory of key groups lo..hi from the sections
 * after the operator's in one old subtask's blob (@p d past the
 * operator section); other sections are skipped.  Errors are left in
 * @p d (TDM_ERR_PARSE) or returned (TDM_ERR_NOMEM). */
static tdm_err retract_restore(tdm__rt_op_task *t, tdm__dec *d, int lo, int hi)
{
    while (!d->err && tdm__dec_left(d) > 0) {
        uint64_t tag = 0, v = 0;
        tdm__dec body;
        if (tdm__dec_section(d, &tag, &body) != TDM_OK)
            return d->err;
        if (tag != RT_CK_TAG_RETRACT)
            continue;
        tdm__dec_uvar(&body, &v);
        if (!body.err && v != RT_CK_RETRACT_VERSION)
            tdm__dec_fail(&body, "unknown retract memory version");
        while (!body.err && tdm__dec_left(&body) > 0) {
            uint64_t gtag = 0, group = 0;
            tdm__dec g;
            if (tdm__dec_section(&body, &gtag, &g) != TDM_OK ||
                gtag != RT_CK_TAG_RGROUP)
                continue; /* an error ends the loop; others skipped */
            tdm__dec_uvar(&g, &group);
            if (!g.err && group >= (uint64_t)t->run->key_groups)
                tdm__dec_fail(&g, "key group out of range");
            tdm_err err = TDM_OK;
            if (!g.err && (int)group >= lo && (int)group <= hi)
                err = restore_rgroup(t, &g);
            dec_pass(&body, &g);
            if (err == TDM_ERR_NOMEM)
                return err;
        }
        dec_pass(d, &body);
    }
    return d->err;
}

/* Encodes this subtask's state: its channels, then the operator (its
 * key groups only).  *out NULL on failure (the run failed). */
static bool op_snapshot(tdm__rt_op_task *t, uint8_t **out, size_t *len)
{
    tdm__enc e;
    int lo, hi;
    tdm__enc_init(&e);
    *out = NULL;
    *len = 0;
    tdm__enc_begin(&e, RT_CK_TAG_OPTASK);
    tdm__enc_uvar(&e, RT_CK_OPTASK_VERSION);
    tdm__enc_uvar(&e, (uint64_t)t->op->n_channels);
    for (int c = 0; c < t->op->n_channels; c++) {
        tdm__enc_svar(&e, t->ch_wm[c]);
        tdm__enc_u8(
            &e, (uint8_t)((t->ch_idle[c] ? 1 : 0) | (t->ch_ended[c] ? 2 : 0)));
    }
    tdm__enc_end(&e);
    op_groups(t->run, t->index, &lo, &hi);
    tdm_err err = TDM_ERR_UNSUPPORTED;
    if (t->win)
        err = tdm__winop_snapshot(t->win, &e, op_key_group, t, lo < 0 ? 0 : lo,
                                  hi < lo ? lo : hi);
    else if (t->join)
        err = tdm__joinop_snapshot(t->join, &e, op_key_group, t,
                                   lo < 0 ? 0 : lo, hi < lo ? lo : hi);
    /* Retract mode: its memory of emitted rows, a section of its own. */
    if (err == TDM_OK && t->ret.rkv)
        err = retract_snapshot(t, &e, lo < 0 ? 0 : lo, hi < lo ? lo : hi);
    if (err == TDM_OK)
        err = tdm__enc_finish(&e, out, len);
    else
        tdm__enc_free(&e);
    if (err != TDM_OK) {
        tdm__rt_fail(
            t->run, err,
            "%s \"%s\" subtask %d: checkpoint snapshot "
            "failed: %s",
            tdm__node_kind_name(t->op->kind), t->op->node->name, t->index,
            err == TDM_ERR_UNSUPPORTED ? "its aggregate cannot be snapshotted"
                                       : tdm_strerror(err));
        return false;
    }
    return true;
}

/* Whether every channel has its barrier or has ended. */
static bool op_aligned(const tdm__rt_op_task *t)
{
    for (int c = 0; c < t->op->n_channels; c++)
        if (!t->cka.blocked[c] && !t->ch_ended[c])
            return false;
    return true;
}

/* See task_op.h.  Aligned on barrier cka.id: snapshot, pre-commit the
 * sinks, acknowledge; the channels stay marked blocked with their held
 * items until the loop takes them (tdm__opck_unblock).  (No barrier can
 * be among those: the next checkpoint starts only after this one
 * completed.) */
void tdm__opck_checkpoint(tdm__rt_op_task *t)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    uint64_t id = t->cka.id;
    t->cka.taken = id;
    /* Aligned now: the coordinator reads this after the ack below (under
     * the run's mutex). */
    t->ck.align_us = tdm__mono_us() - t->cka.first_us;
    if (op_snapshot(t, &blob, &len)) {
        if (tdm__rt_ckpt_pre_commit(t->run, &t->ck, id)) {
            /* Chaining: the barrier goes on in the output stream, after
             * the rows and watermarks emitted before it (the flush in
             * tdm__rt_emit_control), so the reading operators align on it as
             * on a source's. */
            if (t->emit && !t->failed)
                tdm__rt_emit_control(t->emit, TDM__ITEM_BARRIER,
                                     (tdm_time_ms)id, 0, 0);
            tdm__rt_ckpt_ack(t->run, &t->ck, id, blob, len, false);
            blob = NULL;
        }
    }
    tdm__free(blob);
    t->cka.id = 0;
    t->cka.n_blocked = 0;
}

/* See task_op.h. */
const tdm__item *tdm__opck_unblock(tdm__rt_op_task *t, int c, int *n)
{
    *n = 0;
    if (!t->cka.blocked[c])
        return NULL;
    t->cka.blocked[c] = false;
    *n = t->cka.stash[c].n;
    return t->cka.stash[c].it;
}

/* See task_op.h.  The held items' queue capacity is given back only
 * now, after they were handled. */
void tdm__opck_unblocked(tdm__rt_op_task *t, int c, int n)
{
    t->cka.stash[c].n = 0;
    if (n)
        tdm__queue_release(&t->q, c, n);
}

/* A barrier on channel it->ch blocks the channel until the barrier came
 * on every channel that has not ended. */
void tdm__rt_op_on_barrier(tdm__rt_op_task *t, const tdm__item *it)
{
    if (!t->cka.blocked || t->failed)
        return;
    /* A barrier on a channel that already ended, or of a checkpoint
     * this subtask has taken, is stale: aligning on it would snapshot
     * the same checkpoint twice (a source subtask that never read once
     * sent its barrier after END, and results were duplicated after a
     * restore; task_source.c no longer does, this keeps any other
     * sender from doing the same). */
    if (t->ch_ended[it->ch] || (uint64_t)it->t <= t->cka.taken)
        return;
    t->cka.id = (uint64_t)it->t;
    if (t->cka.n_blocked == 0)
        t->cka.first_us = tdm__mono_us();
    if (!t->cka.blocked[it->ch]) {
        t->cka.blocked[it->ch] = true;
        t->cka.n_blocked++;
    }
}

/* Holds an item of a blocked channel (its capacity stays taken, so the
 * channel's producer stops rather than fill memory).  False: no memory
 * (the run failed). */
static bool op_hold(tdm__rt_op_task *t, const tdm__item *it)
{
    struct tdm__rt_stash *st = &t->cka.stash[it->ch];
    if (st->n == st->cap) {
        int cap = st->cap ? st->cap * 2 : 16;
        tdm__item *p = tdm__realloc(st->it, (size_t)cap * sizeof *p);
        if (!p) {
            tdm__rt_op_fail_nomem(t);
            return false;
        }
        st->it = p;
        st->cap = cap;
    }
    st->it[st->n++] = *it;
    tdm__queue_hold(&t->q, it->ch, 1);
    return true;
}

/* See task_op.h. */
bool tdm__opck_hold(tdm__rt_op_task *t, const tdm__item *it)
{
    if (!(t->cka.n_blocked && t->cka.blocked[it->ch]))
        return false;
    if (!op_hold(t, it) && it->kind == TDM__ITEM_BATCH)
        tdm__sbatch_release(it->b);
    return true;
}

/* See task_op.h. */
bool tdm__opck_aligned(const tdm__rt_op_task *t)
{
    return t->cka.n_blocked && op_aligned(t);
}

/* Between groups of items: commits the coordinator published. */
void tdm__rt_op_ckpt_poll(tdm__rt_op_task *t)
{
    uint64_t c =
        atomic_load_explicit(&t->run->ck.committed, memory_order_acquire);
    if (c > t->ck.committed)
        tdm__rt_ckpt_commit(t->run, &t->ck, c);
}

/* The operator ended (every channel ended): its final state for the
 * checkpoints still to come; the coordinator pre-commits and commits
 * its sinks from now on. */
void tdm__rt_op_ckpt_end(tdm__rt_op_task *t)
{
    tdm__run *run = t->run;
    uint8_t *fin = NULL;
    size_t len = 0;
    if (!run->ck.on || atomic_load(&run->abort) || t->failed)
        return;
    tdm__rt_op_ckpt_poll(t);
    if (op_snapshot(t, &fin, &len))
        tdm__rt_ckpt_ack(run, &t->ck, 0, fin, len, true);
}

tdm_err tdm__rt_ckpt_restore_op(tdm__rt_op_task *t, char *msg, size_t n)
{
    tdm__run *run = t->run;
    tdm__rt_ckpt *ck = &run->ck;
    int oi = (int)(t->op - run->ops), lo, hi;
    tdm_err err = TDM_OK;
    op_groups(run, t->index, &lo, &hi);
    for (int k = 0; err == TDM_OK && k < ck->old_P; k++) {
        char name[64];
        void *p = NULL;
        size_t len = 0;
        snprintf(name, sizeof name, "o%d-%d", oi, k);
        err = tdm__ckpt_get(ck->rd, name, &p, &len);
        if (err != TDM_OK)
            return tdm__errf(msg, n, err, "checkpoint %llu: %s",
                             (unsigned long long)ck->from,
                             tdm__ckpt_reader_errmsg(ck->rd));
        tdm__dec d, body;
        uint64_t tag = 0, v = 0, nch = 0;
        tdm__dec_init(&d, p, len);
        tdm__dec_section(&d, &tag, &body);
        if (!d.err && tag != RT_CK_TAG_OPTASK)
            tdm__dec_fail(&d, "not an operator subtask section");
        tdm__dec_uvar(&body, &v);
        tdm__dec_uvar(&body, &nch);
        if (!body.err && v != RT_CK_OPTASK_VERSION)
            tdm__dec_fail(&body, "unknown operator subtask version");
        /* The channels' state only at the same parallelism, into the
         * same subtask. */
        bool mine = ck->old_P == run->P && k == t->index &&
                    nch == (uint64_t)t->op->n_channels;
        for (uint64_t c = 0; !body.err && c < nch; c++) {
            int64_t wm = 0;
            uint8_t fl = 0;
            tdm__dec_svar(&body, &wm);
            tdm__dec_u8(&body, &fl);
            if (!body.err && fl > 3)
                tdm__dec_fail(&body, "unknown channel flags");
            if (mine && !body.err) {
                t->ch_wm[c] = wm;
                t->ch_idle[c] = (fl & 1) != 0;
            }
        }
        err = d.err ? d.err : body.err;
        if (err == TDM_OK && lo <= hi)
            err = t->win ? tdm__winop_restore(t->win, &d, lo, hi)
                         : tdm__joinop_restore(t->join, &d, lo, hi);
        bool rr = false; /* an error of the retract memory is in d */
        if (err == TDM_OK && lo <= hi && t->ret.rkv) {
            err = retract_restore(t, &d, lo, hi);
            rr = err == TDM_ERR_PARSE;
        }
        if (err != TDM_OK) {
            size_t off = 0;
            const char *why = NULL;
            const tdm__dec *bad = body.err ? &body : &d;
            tdm__dec_error(bad, &off, &why);
            err = tdm__errf(msg, n, err == TDM_ERR_NOMEM ? err : TDM_ERR_PARSE,
                            "checkpoint %llu: blob %s: offset %zu: %s",
                            (unsigned long long)ck->from, name, off,
                            why      ? why
                            : rr     ? "bad retract memory"
                            : t->win ? tdm_winop_errmsg(t->win)
                                     : tdm_joinop_errmsg(t->join));
        }
        tdm__free(p);
    }
    return err;
}

/* See task_op.h. */
tdm_err tdm__opck_init(tdm__rt_op_task *t)
{
    int n = t->op->n_channels;
    t->cka.blocked = tdm__calloc((size_t)n, sizeof *t->cka.blocked);
    t->cka.stash = tdm__calloc((size_t)n, sizeof *t->cka.stash);
    return t->cka.blocked && t->cka.stash ? TDM_OK : TDM_ERR_NOMEM;
}

/* See task_op.h. */
void tdm__opck_fini(tdm__rt_op_task *t)
{
    for (int c = 0; t->cka.stash && c < t->op->n_channels; c++) {
        for (int i = 0; i < t->cka.stash[c].n; i++)
            tdm__rt_op_item_release(&t->cka.stash[c].it[i]);
        tdm__free(t->cka.stash[c].it);
    }
    tdm__free(t->cka.stash);
    tdm__free(t->cka.blocked);
    t->cka.stash = NULL;
    t->cka.blocked = NULL;
}
