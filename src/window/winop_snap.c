/* SPDX-License-Identifier: MIT */
/* winop_snap.c - checkpoints of the window operator (issue 8): snapshot
 * of its state by key group, and restore from one or several blobs
 * (a restore at another parallelism takes the groups it now owns from
 * every old subtask's blob).  Both paths: the general one (interned
 * keys, window slots in the kv store, timers) and the lean one (window
 * store cells by window interval).  The layout is documented in
 * docs/checkpoints.md, "Operator state".
 *
 * Order matters for exact replay: timers of one time pop in registration
 * order and the lean path fires a window interval's cells in creation
 * order.  Snapshots record each timer's rank in its time bucket and each
 * cell's position in its interval; restore sorts what one blob holds by
 * them before re-adding, so a restore from one blob replays exactly.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "state/ckpt_codec.h"
#include "state/wstore.h"
#include "time/wm.h"
#include "window/win.h"

#define SLOT_FLAGS_ALL 0x7fu
#define TAG_ACC 1u /* nested section of a custom accumulator */

static uint64_t dbits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static double bitsd(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* Cells with keys up to this length are encoded through a stack
 * buffer: three varints of at most 10 bytes, the key, two doubles. */
#define CELL_KEY_FAST 64
#define CELL_BUF (30 + CELL_KEY_FAST + 16)

/* An unsigned LEB128 varint, as tdm__enc_uvar writes it.  Returns its
 * length. */
static inline size_t put_uvar(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* A little-endian u64, as tdm__enc_u64 writes it. */
static inline size_t put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return 8;
}

/* A zigzag signed varint, as tdm__enc_svar writes it. */
static inline size_t put_svar(uint8_t *p, int64_t v)
{
    uint64_t u = (uint64_t)v;
    return put_uvar(p, (u << 1) ^ (v < 0 ? UINT64_MAX : 0));
}

/* A length-prefixed byte string, as tdm__enc_bytes writes it. */
static inline size_t put_bytes(uint8_t *p, const void *b, size_t len)
{
    size_t n = put_uvar(p, len);
    if (len)
        memcpy(p + n, b, len);
    return n + len;
}

/* Room for the fixed part of a window slot or a timer with a short key:
 * up to 7 varints, the key, two doubles, a small trigger state. */
#define REC_BUF 256
#define REC_FIXED (7 * 10 + CELL_KEY_FAST + 16)

/* ---- Configuration fingerprint ---- */

#define N_FP 20
#define FP_LATENESS 16

/* The settings a restored operator must share with the snapshotted one. */
static void fingerprint(const tdm_winop *op, int64_t *fp)
{
    const tdm_trigger *t = op->trg;
    int i = 0;
    fp[i++] = op->asg->kind;
    fp[i++] = op->asg->proc_time;
    fp[i++] = op->asg->size;
    fp[i++] = op->asg->slide;
    fp[i++] = op->asg->offset;
    fp[i++] = op->asg->gap;
    fp[i++] = t->kind;
    fp[i++] = t->count;
    fp[i++] = t->interval;
    fp[i++] = t->inner ? t->inner->kind : 0;
    fp[i++] = t->inner ? t->inner->count : 0;
    fp[i++] = t->inner ? t->inner->interval : 0;
    fp[i++] = op->agg->type;
    fp[i++] = op->agg->kind;
    fp[i++] = (int64_t)op->acc_size;
    fp[i++] = (int64_t)op->tstate_size;
    fp[i++] = op->lateness; /* FP_LATENESS: taken, not compared (L6) */
    fp[i++] = op->late_output;
    fp[i++] = op->lean;
    fp[i++] = op->lean ? (int64_t)op->ws->n_vals : 0;
}

/* ---- Key groups ---- */

/* Key groups by key id, computed once per key; INT_MIN = not yet. */
typedef struct kgroups {
    int *g;
    tdm__key_group_fn fn;
    void *ud;
    int lo, hi;
} kgroups;

/* The group of a key relative to lo, or -1 when outside the range. */
static inline int kg_of(kgroups *k, uint32_t id, const char *key, size_t len)
{
    int g = k->g[id];
    if (g == INT_MIN) {
        g = k->fn ? k->fn(k->ud, key, len) : 0;
        g = (g < k->lo || g > k->hi) ? -1 : g - k->lo;
        k->g[id] = g;
    }
    return g;
}

/* Stable counting sort of @p n items by group (grp[i] in [0, ng) or -1:
 * left out): fills @p order with item indexes, @p first[g] with the
 * start of group g in it (first[ng] = total).  Returns false on OOM. */
bool tdm__snap_by_group(const int *grp, size_t n, size_t ng, uint32_t *order,
                        size_t *first)
{
    memset(first, 0, (ng + 1) * sizeof *first);
    for (size_t i = 0; i < n; i++)
        if (grp[i] >= 0)
            first[grp[i] + 1]++;
    for (size_t g = 0; g < ng; g++)
        first[g + 1] += first[g];
    size_t *pos = tdm__malloc((ng + 1) * sizeof *pos);
    if (!pos)
        return false;
    memcpy(pos, first, (ng + 1) * sizeof *pos);
    for (size_t i = 0; i < n; i++)
        if (grp[i] >= 0)
            order[pos[grp[i]]++] = (uint32_t)i;
    tdm__free(pos);
    return true;
}

/* ====================================================================== */
/* Snapshot: the general path                                              */
/* ====================================================================== */

typedef struct snap_tm {
    tdm__timer t;
    uint32_t rank;
    uint8_t dom;
} snap_tm;

typedef struct gather {
    snap_tm *tms;
    size_t n_tms;
    uint8_t dom;
} gather;

static void gather_timer(void *ud, const tdm__timer *tm, uint32_t rank)
{
    gather *g = ud;
    snap_tm *s = &g->tms[g->n_tms++];
    s->t = *tm;
    s->rank = rank;
    s->dom = g->dom;
}

/* The kv namespace of a slot: the slot store does not hand it out, so
 * it is kept beside (gather_slot_ns). */
typedef struct slot_ns {
    tdm__win_slot *s;
    tdm__ns ns;
} slot_ns;

typedef struct gather_ns {
    slot_ns *v;
    size_t n;
} gather_ns;

static void gather_slot_ns(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    (void)key;
    gather_ns *g = ud;
    g->v[g->n].s = slot;
    g->v[g->n].ns = ns;
    g->n++;
}

/* Encodes one window slot (state namespace @p ns).  A slot with a
 * short key, numeric contents and a small trigger state is put together
 * on the stack and handed over in one call (same bytes). */
static tdm_err enc_slot(const tdm_winop *op, tdm__enc *e,
                        const tdm__win_slot *s, tdm__ns ns)
{
    size_t klen;
    const char *key = tdm__keys_get(op->keys, s->key, &klen);
    const tdm_aggregate *a = op->agg;
    bool num = !(s->flags & TDM__W_CONTENTS) ||
               (a->type == TDM__AGG_BUILTIN && a->kind != TDM_AGG_COLLECT);
    if (num && klen <= CELL_KEY_FAST &&
        op->tstate_size <= REC_BUF - REC_FIXED) {
        uint8_t buf[REC_BUF];
        size_t n = put_bytes(buf, key, klen);
        n += put_svar(buf + n, ns.a);
        n += put_svar(buf + n, ns.b);
        n += put_svar(buf + n, s->start);
        n += put_svar(buf + n, s->end);
        n += put_uvar(buf + n, (uint64_t)s->panes);
        n += put_uvar(buf + n, s->flags);
        if (s->flags & TDM__W_CONTENTS) {
            n += put_u64(buf + n, dbits(s->c.num.a));
            n += put_u64(buf + n, dbits(s->c.num.n));
        }
        if (op->tstate_size) {
            memcpy(buf + n, (const char *)s + op->tstate_off, op->tstate_size);
            n += op->tstate_size;
        }
        tdm__enc_raw(e, buf, n);
        return TDM_OK;
    }
    tdm__enc_bytes(e, key, klen);
    tdm__enc_svar(e, ns.a);
    tdm__enc_svar(e, ns.b);
    tdm__enc_svar(e, s->start);
    tdm__enc_svar(e, s->end);
    tdm__enc_uvar(e, (uint64_t)s->panes);
    tdm__enc_uvar(e, s->flags);
    if (s->flags & TDM__W_CONTENTS) {
        switch (a->type) {
        case TDM__AGG_BUILTIN:
            if (a->kind == TDM_AGG_COLLECT) {
                tdm__enc_uvar(e, s->c.col.n);
                for (size_t i = 0; i < s->c.col.n; i++)
                    tdm__enc_u64(e, dbits(s->c.col.v[i]));
            } else {
                tdm__enc_u64(e, dbits(s->c.num.a));
                tdm__enc_u64(e, dbits(s->c.num.n));
            }
            break;
        case TDM__AGG_CUSTOM: {
            const void *acc = (const char *)s + op->acc_off;
            if (a->acc_save) {
                tdm__enc_begin(e, TAG_ACC);
                tdm_err err = a->acc_save(a->ud, acc, e);
                tdm__enc_end(e);
                if (err != TDM_OK)
                    return err;
            } else {
                tdm__enc_bytes(e, acc, op->acc_size);
            }
            break;
        }
        case TDM__AGG_WINDOW_FN:
            tdm__enc_uvar(e, s->c.recs.n);
            for (size_t i = 0; i < s->c.recs.n; i++) {
                const tdm_record *r = &s->c.recs.r[i];
                tdm__enc_svar(e, r->ts);
                tdm__enc_u64(e, dbits(r->value));
                tdm__enc_bytes(e, r->payload, r->payload_len);
            }
            break;
        }
    }
    if (op->tstate_size)
        tdm__enc_raw(e, (const char *)s + op->tstate_off, op->tstate_size);
    return TDM_OK;
}

/* Encodes one timer of domain @p dom with its rank among the timers of
 * its time (registration order). */
static void enc_timer(const tdm_winop *op, tdm__enc *e, uint8_t dom,
                      const tdm__timer *t, uint32_t rank)
{
    size_t len;
    const char *k = tdm__keys_get(op->keys, t->key, &len);
    if (len <= CELL_KEY_FAST) {
        uint8_t buf[REC_BUF];
        size_t n = 0;
        buf[n++] = dom;
        n += put_bytes(buf + n, k, len);
        n += put_svar(buf + n, t->time);
        n += put_svar(buf + n, t->ns.a);
        n += put_svar(buf + n, t->ns.b);
        n += put_uvar(buf + n, rank);
        tdm__enc_raw(e, buf, n);
        return;
    }
    tdm__enc_u8(e, dom);
    tdm__enc_bytes(e, k, len);
    tdm__enc_svar(e, t->time);
    tdm__enc_svar(e, t->ns.a);
    tdm__enc_svar(e, t->ns.b);
    tdm__enc_uvar(e, rank);
}

static tdm_err snap_general(const tdm_winop *op, tdm__enc *e, kgroups *kg,
                            size_t ng)
{
    tdm_err err = TDM_ERR_NOMEM;
    size_t n_slots = tdm__kv_count(op->wins);
    size_t n_tms =
        tdm__timers_count(op->timers[0]) + tdm__timers_count(op->timers[1]);
    gather_ns gs = {NULL, 0};
    gather gt = {NULL, 0, 0};
    int *sg = NULL, *tg = NULL;
    uint32_t *so = NULL, *to = NULL;
    size_t *sf = NULL, *tf = NULL;
    gs.v = tdm__malloc((n_slots + 1) * sizeof *gs.v);
    gt.tms = tdm__malloc((n_tms + 1) * sizeof *gt.tms);
    sg = tdm__malloc((n_slots + 1) * sizeof *sg);
    tg = tdm__malloc((n_tms + 1) * sizeof *tg);
    so = tdm__malloc((n_slots + 1) * sizeof *so);
    to = tdm__malloc((n_tms + 1) * sizeof *to);
    sf = tdm__malloc((ng + 1) * sizeof *sf);
    tf = tdm__malloc((ng + 1) * sizeof *tf);
    if (!gs.v || !gt.tms || !sg || !tg || !so || !to || !sf || !tf)
        goto fail;
    tdm__kv_each(op->wins, gather_slot_ns, &gs);
    for (int d = 0; d < 2; d++) {
        gt.dom = (uint8_t)d;
        tdm__timers_each(op->timers[d], gather_timer, &gt);
    }
    for (size_t i = 0; i < gs.n; i++) {
        size_t len;
        uint32_t id = gs.v[i].s->key;
        const char *k = tdm__keys_get(op->keys, id, &len);
        sg[i] = kg_of(kg, id, k, len);
    }
    for (size_t i = 0; i < gt.n_tms; i++) {
        size_t len;
        uint32_t id = gt.tms[i].t.key;
        const char *k = tdm__keys_get(op->keys, id, &len);
        tg[i] = kg_of(kg, id, k, len);
    }
    if (!tdm__snap_by_group(sg, gs.n, ng, so, sf) ||
        !tdm__snap_by_group(tg, gt.n_tms, ng, to, tf))
        goto fail;
    for (size_t g = 0; g < ng; g++) {
        size_t ns = sf[g + 1] - sf[g], nt = tf[g + 1] - tf[g];
        if (!ns && !nt)
            continue;
        tdm__enc_begin(e, TDM__SNAP_TAG_WINOP_GROUP);
        tdm__enc_uvar(e, (uint64_t)(g + (size_t)kg->lo));
        tdm__enc_uvar(e, ns);
        for (size_t j = sf[g]; j < sf[g + 1]; j++) {
            err = enc_slot(op, e, gs.v[so[j]].s, gs.v[so[j]].ns);
            if (err != TDM_OK)
                goto fail;
        }
        tdm__enc_uvar(e, nt);
        for (size_t j = tf[g]; j < tf[g + 1]; j++) {
            const snap_tm *t = &gt.tms[to[j]];
            enc_timer(op, e, t->dom, &t->t, t->rank);
        }
        tdm__enc_end(e);
    }
    err = TDM_OK;
fail:
    tdm__free(gs.v);
    tdm__free(gt.tms);
    tdm__free(sg);
    tdm__free(tg);
    tdm__free(so);
    tdm__free(to);
    tdm__free(sf);
    tdm__free(tf);
    return err;
}

/* ====================================================================== */
/* Snapshot: the session mode                                              */
/* ====================================================================== */

/* The session mode (winop_session.c) writes what the general path holds
 * for the same sessions: per session a slot whose namespace is the
 * session window itself, and its one event-time timer at maxTimestamp,
 * which is also its cleanup time (flags ET_MAX | ET_CLEAN); timers of
 * one time are ranked in the mode's firing order, which is the general
 * path's registration order.  A restore reads them onto the general
 * path (tdm__winop_restore). */
typedef struct sess_ref {
    const tdm__win_slot *s;
    uint64_t seq;
} sess_ref;

typedef struct gather_sess {
    sess_ref *v;
    size_t n;
} gather_sess;

static void gather_one_sess(void *ud, const tdm__win_slot *s, uint64_t seq)
{
    gather_sess *g = ud;
    g->v[g->n].s = s;
    g->v[g->n].seq = seq;
    g->n++;
}

static int cmp_sess_ref(const void *pa, const void *pb)
{
    const sess_ref *a = pa, *b = pb;
    if (a->s->end != b->s->end)
        return a->s->end < b->s->end ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static tdm_err snap_sess(const tdm_winop *op, tdm__enc *e, kgroups *kg,
                         size_t ng)
{
    tdm_err err = TDM_ERR_NOMEM;
    size_t n = tdm__sess_count(op);
    gather_sess gs = {NULL, 0};
    int *grp = NULL;
    uint32_t *order = NULL, *rank = NULL;
    size_t *first = NULL;
    gs.v = tdm__malloc((n + 1) * sizeof *gs.v);
    grp = tdm__malloc((n + 1) * sizeof *grp);
    order = tdm__malloc((n + 1) * sizeof *order);
    rank = tdm__malloc((n + 1) * sizeof *rank);
    first = tdm__malloc((ng + 1) * sizeof *first);
    if (!gs.v || !grp || !order || !rank || !first)
        goto fail;
    tdm__sess_each(op, gather_one_sess, &gs);
    if (gs.n)
        qsort(gs.v, gs.n, sizeof *gs.v, cmp_sess_ref);
    for (size_t i = 0; i < gs.n; i++) {
        const tdm__win_slot *s = gs.v[i].s;
        size_t len;
        const char *k = tdm__keys_get(op->keys, s->key, &len);
        grp[i] = kg_of(kg, s->key, k, len);
        rank[i] = (i > 0 && gs.v[i - 1].s->end == s->end) ? rank[i - 1] + 1 : 0;
    }
    if (!tdm__snap_by_group(grp, gs.n, ng, order, first))
        goto fail;
    for (size_t g = 0; g < ng; g++) {
        size_t a = first[g], b = first[g + 1];
        if (a == b)
            continue;
        tdm__enc_begin(e, TDM__SNAP_TAG_WINOP_GROUP);
        tdm__enc_uvar(e, (uint64_t)(g + (size_t)kg->lo));
        tdm__enc_uvar(e, b - a);
        for (size_t j = a; j < b; j++) {
            /* Its flags say ET_MAX | ET_CLEAN (winop_session.c). */
            const tdm__win_slot *s = gs.v[order[j]].s;
            tdm__ns ns = {s->start, s->end};
            err = enc_slot(op, e, s, ns);
            if (err != TDM_OK)
                goto fail;
        }
        tdm__enc_uvar(e, b - a);
        for (size_t j = a; j < b; j++) {
            const tdm__win_slot *s = gs.v[order[j]].s;
            tdm__timer t;
            t.time = tdm__win_max_ts(op, s->end);
            t.key = s->key;
            t.ns.a = s->start;
            t.ns.b = s->end;
            enc_timer(op, e, TDM__EVENT, &t, rank[order[j]]);
        }
        tdm__enc_end(e);
    }
    err = TDM_OK;
fail:
    tdm__free(gs.v);
    tdm__free(grp);
    tdm__free(order);
    tdm__free(rank);
    tdm__free(first);
    return err;
}

/* ====================================================================== */
/* Snapshot: the lean path                                                 */
/* ====================================================================== */

typedef struct lean_ref {
    uint32_t sid, pos;
} lean_ref;

/* A live interval by creation sequence (sorted without global state:
 * operators on different threads snapshot at the same time). */
typedef struct span_ord {
    uint64_t seq;
    uint32_t sid;
} span_ord;

static int cmp_span_ord(const void *a, const void *b)
{
    uint64_t x = ((const span_ord *)a)->seq, y = ((const span_ord *)b)->seq;
    return x < y ? -1 : x > y;
}

/* The firing count and values of key @p kid's window @p sid: its cell,
 * or in the sliced mode (winop_slice.c) the sum of its slices' cells in
 * a window that has not fired (fired windows are gone there).  The
 * snapshot is thus the same as the per-window path's, and a restore
 * goes on with per-window cells (tdm__winop_restore). */
static void cell_state(const tdm_winop *op, tdm__ws_key *k, uint32_t kid,
                       uint32_t sid, uint64_t *fires, double *val)
{
    const tdm__wstore *ws = op->ws;
    val[0] = val[1] = 0;
    if (op->lean_sliced) {
        const tdm__ws_span *sp = &ws->spans[sid];
        *fires = 0;
        (void)tdm__slice_count(op, kid, sp->start, sp->end, &val[0]);
        return;
    }
    const tdm__ws_cell *c = tdm__ws_cell_of(ws, k, kid, sid);
    *fires = tdm__ws_fires(c);
    for (uint32_t v = 0; v < ws->n_vals; v++)
        val[v] = c->v[v];
}

static tdm_err snap_lean(const tdm_winop *op, tdm__enc *e, kgroups *kg,
                         size_t ng)
{
    const tdm__wstore *ws = op->ws;
    tdm_err err = TDM_ERR_NOMEM;
    span_ord *spans = NULL;
    uint32_t *order = NULL;
    lean_ref *refs = NULL;
    int *grp = NULL;
    size_t *first = NULL;
    size_t n_sp = 0, n_refs = 0;
    spans = tdm__malloc(((size_t)ws->n_span_ids + 1) * sizeof *spans);
    if (!spans)
        goto fail;
    size_t cells = 0;
    for (uint32_t sid = 0; sid < ws->n_span_ids; sid++) {
        const tdm__ws_span *sp = &ws->spans[sid];
        if (tdm__ws_span_find(ws, sp->start, sp->end) != sid)
            continue; /* a free id */
        if (op->lean_sliced && sp->end == TDM_TIME_MIN)
            continue; /* a slice of the sliced mode: in its windows */
        spans[n_sp].seq = sp->seq;
        spans[n_sp].sid = sid;
        n_sp++;
        cells += sp->n;
    }
    /* Creation order. */
    if (n_sp)
        qsort(spans, n_sp, sizeof *spans, cmp_span_ord);
    refs = tdm__malloc((cells + 1) * sizeof *refs);
    grp = tdm__malloc((cells + 1) * sizeof *grp);
    order = tdm__malloc((cells + 1) * sizeof *order);
    first = tdm__malloc((ng + 1) * sizeof *first);
    if (!refs || !grp || !order || !first)
        goto fail;
    for (size_t i = 0; i < n_sp; i++) {
        const tdm__ws_span *sp = &ws->spans[spans[i].sid];
        for (uint32_t j = 0; j < sp->n; j++) {
            uint32_t kid = sp->members[j];
            if (kid == TDM__WS_NONE)
                continue;
            const tdm__ws_key *k = tdm__ws_key_at(ws, kid);
            refs[n_refs].sid = spans[i].sid;
            refs[n_refs].pos = j;
            grp[n_refs] =
                kg_of(kg, kid, tdm__ws_key_bytes(k), tdm__ws_key_len(k));
            n_refs++;
        }
    }
    if (!tdm__snap_by_group(grp, n_refs, ng, order, first))
        goto fail;
    for (size_t g = 0; g < ng; g++) {
        size_t a = first[g], b = first[g + 1];
        if (a == b)
            continue;
        tdm__enc_begin(e, TDM__SNAP_TAG_WINOP_GROUP);
        tdm__enc_uvar(e, (uint64_t)(g + (size_t)kg->lo));
        size_t runs = 0;
        for (size_t j = a; j < b; j++)
            if (j == a || refs[order[j]].sid != refs[order[j - 1]].sid)
                runs++;
        tdm__enc_uvar(e, runs);
        for (size_t j = a; j < b;) {
            uint32_t sid = refs[order[j]].sid;
            size_t end = j;
            while (end < b && refs[order[end]].sid == sid)
                end++;
            const tdm__ws_span *sp = &ws->spans[sid];
            tdm__enc_svar(e, sp->start);
            tdm__enc_svar(e, sp->end);
            tdm__enc_uvar(e, sp->seq);
            tdm__enc_u8(e, sp->fired ? 1 : 0);
            tdm__enc_uvar(e, end - j);
            for (; j < end; j++) {
                uint32_t pos = refs[order[j]].pos;
                uint32_t kid = sp->members[pos];
                tdm__ws_key *k = tdm__ws_key_at(ws, kid);
                uint64_t fires;
                double val[2];
                cell_state(op, k, kid, sid, &fires, val);
                size_t klen = tdm__ws_key_len(k);
                if (klen > CELL_KEY_FAST) {
                    tdm__enc_uvar(e, pos);
                    tdm__enc_bytes(e, tdm__ws_key_bytes(k), klen);
                    tdm__enc_uvar(e, fires);
                    for (uint32_t v = 0; v < ws->n_vals; v++)
                        tdm__enc_u64(e, dbits(val[v]));
                    continue;
                }
                /* The common short key: the cell is put together here
                 * and handed to the encoder in one call (the same bytes
                 * as the calls above). */
                uint8_t buf[CELL_BUF];
                size_t n = put_uvar(buf, pos);
                n += put_uvar(buf + n, klen);
                memcpy(buf + n, tdm__ws_key_bytes(k), klen);
                n += klen;
                n += put_uvar(buf + n, fires);
                for (uint32_t v = 0; v < ws->n_vals; v++)
                    n += put_u64(buf + n, dbits(val[v]));
                tdm__enc_raw(e, buf, n);
            }
        }
        tdm__enc_end(e);
    }
    err = TDM_OK;
fail:
    tdm__free(spans);
    tdm__free(refs);
    tdm__free(grp);
    tdm__free(order);
    tdm__free(first);
    return err;
}

/* ====================================================================== */
/* Snapshot                                                                */
/* ====================================================================== */

tdm_err tdm__winop_snapshot(const tdm_winop *op, tdm__enc *e,
                            tdm__key_group_fn key_group, void *ud, int group_lo,
                            int group_hi)
{
    tdm_err err;
    kgroups kg = {NULL, key_group, ud, group_lo, group_hi};
    if (!op || !e || group_lo < 0 || group_lo > group_hi)
        return TDM_ERR_INVAL;
    if (op->agg->type == TDM__AGG_CUSTOM && op->agg->m.destroy_acc &&
        !op->agg->acc_save)
        return tdm__msgf((tdm__msg *)&op->msg, TDM_ERR_UNSUPPORTED,
                         "snapshot: the custom aggregate's accumulators "
                         "hold resources (destroy_acc) and it has no "
                         "checkpoint codec");
    size_t ng = (size_t)group_hi - (size_t)group_lo + 1;
    size_t bound = op->lean ? op->ws->slots : tdm__keys_id_bound(op->keys);
    kg.g = tdm__malloc((bound + 1) * sizeof *kg.g);
    if (!kg.g) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    for (size_t i = 0; i < bound; i++)
        kg.g[i] = INT_MIN;
    int64_t fp[N_FP];
    fingerprint(op, fp);
    tdm__enc_begin(e, TDM__SNAP_TAG_WINOP);
    tdm__enc_uvar(e, TDM__SNAP_WINOP_VERSION);
    tdm__enc_uvar(e, N_FP);
    for (int i = 0; i < N_FP; i++)
        tdm__enc_svar(e, fp[i]);
    tdm__enc_svar(e, op->wm);
    tdm__enc_svar(e, op->proctime);
    tdm__enc_svar(e, op->late_dropped);
    tdm__enc_svar(e, op->late_emitted);
    tdm__enc_svar(e, op->bad_records);
    tdm__enc_svar(e, op->fn_errors);
    tdm__enc_u8(e, op->ended ? 1 : 0);
    tdm__enc_uvar(e, (uint64_t)op->n_channels);
    err = tdm__valve_snapshot(op->valve, e);
    if (err != TDM_OK)
        goto fail_open;
    /* L6: the horizon closed by a live raise of the lateness, and the
     * key groups the snapshot covers (whose windows the lateness and the
     * horizon are those of). */
    tdm__enc_begin(e, TDM__SNAP_TAG_WINOP_CLOSED);
    tdm__enc_svar(e, op->closed_max);
    tdm__enc_svar(e, group_lo);
    tdm__enc_svar(e, group_hi);
    tdm__enc_end(e);
    if (op->lean)
        err = snap_lean(op, e, &kg, ng);
    else if (op->sess)
        err = snap_sess(op, e, &kg, ng);
    else
        err = snap_general(op, e, &kg, ng);
fail_open:
    tdm__enc_end(e);
fail:
    tdm__free(kg.g);
    if (err == TDM_OK && e->oom)
        err = TDM_ERR_NOMEM;
    return err;
}

/* ====================================================================== */
/* Restore                                                                 */
/* ====================================================================== */

/* L6: the lateness and closed horizon of a blob that holds some of the
 * operator's key groups (one that holds none says nothing about them).
 * The first such blob sets both; blobs written under other values (a
 * live change that reached one old subtask before its snapshot and not
 * another, or a rescale: each old subtask raised at its own watermark)
 * merge to the highest of each: windows live as long as any blob kept
 * them, and a window one of them closed is never made again with a
 * partial result (a record for it is late).  True when the windows
 * already restored need cleanup times at the operator's value. */
static bool lateness_taken(tdm_winop *op, int64_t late, int64_t horizon)
{
    bool differs = op->lat_restored && late != op->lateness;
    if (!op->lat_restored)
        tdm__winop_lateness_fresh(op, late);
    else if (late > op->lateness)
        op->lateness = late;
    op->lat_restored = true;
    if (horizon > op->closed_max)
        op->closed_max = horizon;
    return differs;
}

/* A restore error: the decoder's first error, into the operator's
 * message with its offset. */
static tdm_err dec_err(tdm_winop *op, const tdm__dec *d)
{
    size_t off = 0;
    const char *why = "";
    tdm_err err = tdm__dec_error(d, &off, &why);
    if (err == TDM_OK)
        err = TDM_ERR_PARSE;
    return tdm__msgf(&op->msg, err,
                     "window operator restore: %s at "
                     "offset %zu",
                     why ? why : "bad input", off);
}

/* Makes the first error of @p body the error of @p d. */
static void adopt(tdm__dec *d, const tdm__dec *body)
{
    tdm__wm_dec_adopt(d, body);
}

/* ---- General path ---- */

typedef struct rs_tm {
    tdm_time_ms time;
    tdm__ns ns;
    uint32_t key;
    uint32_t rank;
    uint8_t dom;
} rs_tm;

static int cmp_rs_tm(const void *pa, const void *pb)
{
    const rs_tm *a = pa, *b = pb;
    if (a->dom != b->dom)
        return a->dom < b->dom ? -1 : 1;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return 0;
}

typedef struct rs_buf {
    rs_tm *tms;
    size_t n, cap;
} rs_buf;

/* Reads a window slot into a new slot of @p op. */
static tdm_err dec_slot(tdm_winop *op, tdm__dec *d)
{
    const void *key;
    size_t klen;
    int64_t na, nb, start, end;
    uint64_t panes, flags;
    const tdm_aggregate *a = op->agg;
    tdm__dec_bytes(d, &key, &klen);
    tdm__dec_svar(d, &na);
    tdm__dec_svar(d, &nb);
    tdm__dec_svar(d, &start);
    tdm__dec_svar(d, &end);
    tdm__dec_uvar(d, &panes);
    if (tdm__dec_uvar(d, &flags) != TDM_OK)
        return TDM_ERR_PARSE;
    if (flags & ~(uint64_t)SLOT_FLAGS_ALL)
        return tdm__dec_fail(d, "bad window flags");
    if (start >= end || na >= nb)
        return tdm__dec_fail(d, "bad window bounds");
    if (panes > INT64_MAX)
        return tdm__dec_fail(d, "bad pane count");
    uint32_t kid;
    if (tdm__keys_intern(op->keys, key, klen, &kid) != TDM_OK)
        return TDM_ERR_NOMEM;
    tdm__ns ns = {na, nb};
    bool created;
    tdm__win_slot *s = tdm__kv_upsert(op->wins, kid, ns, &created);
    if (!s) {
        tdm__keys_unref(op->keys, kid);
        return TDM_ERR_NOMEM;
    }
    if (!created) {
        tdm__keys_unref(op->keys, kid);
        return tdm__dec_fail(d, "window twice");
    }
    /* The interning reference is the slot's. */
    s->start = start;
    s->end = end;
    s->key = kid;
    s->panes = (int64_t)panes;
    s->flags = (uint32_t)flags & ~(uint32_t)TDM__W_CONTENTS;
    if (flags & TDM__W_CONTENTS) {
        switch (a->type) {
        case TDM__AGG_BUILTIN:
            if (a->kind == TDM_AGG_COLLECT) {
                uint64_t n, bits;
                if (tdm__dec_uvar(d, &n) != TDM_OK)
                    return TDM_ERR_PARSE;
                if (n == 0 || n > tdm__dec_left(d) / 8)
                    return tdm__dec_fail(d, "bad value count");
                s->c.col.v = tdm__malloc((size_t)n * sizeof(double));
                if (!s->c.col.v)
                    return TDM_ERR_NOMEM;
                s->c.col.cap = (size_t)n;
                op->content_bytes += (int64_t)(n * sizeof(double));
                for (uint64_t i = 0; i < n; i++) {
                    tdm__dec_u64(d, &bits);
                    s->c.col.v[i] = bitsd(bits);
                }
                s->c.col.n = (size_t)n;
            } else {
                uint64_t x, y;
                tdm__dec_u64(d, &x);
                tdm__dec_u64(d, &y);
                s->c.num.a = bitsd(x);
                s->c.num.n = bitsd(y);
            }
            break;
        case TDM__AGG_CUSTOM: {
            void *acc = tdm__win_acc(op, s);
            if (a->acc_load) {
                uint64_t tag;
                tdm__dec body;
                if (tdm__dec_section(d, &tag, &body) != TDM_OK)
                    return TDM_ERR_PARSE;
                if (tag != TAG_ACC)
                    return tdm__dec_fail(d, "not an accumulator");
                /* Counted as contents from here: destroy_acc releases
                 * whatever a failed load left. */
                s->flags |= TDM__W_CONTENTS;
                tdm_err err = a->acc_load(a->ud, acc, &body);
                if (err == TDM_OK)
                    err = tdm__dec_done(&body);
                if (err != TDM_OK) {
                    adopt(d, &body);
                    return err == TDM_ERR_NOMEM
                               ? err
                               : tdm__dec_fail(d, "bad accumulator");
                }
            } else {
                const void *p;
                size_t len;
                if (tdm__dec_bytes(d, &p, &len) != TDM_OK)
                    return TDM_ERR_PARSE;
                if (len != op->acc_size)
                    return tdm__dec_fail(d, "accumulator size differs");
                memcpy(acc, p, len);
            }
            break;
        }
        case TDM__AGG_WINDOW_FN: {
            uint64_t n;
            if (tdm__dec_uvar(d, &n) != TDM_OK)
                return TDM_ERR_PARSE;
            /* Each record takes at least 10 bytes. */
            if (n == 0 || n > tdm__dec_left(d) / 10)
                return tdm__dec_fail(d, "bad record count");
            s->c.recs.r = tdm__calloc((size_t)n, sizeof(tdm_record));
            if (!s->c.recs.r)
                return TDM_ERR_NOMEM;
            s->c.recs.cap = (size_t)n;
            op->content_bytes += (int64_t)(n * sizeof(tdm_record));
            size_t kl;
            const char *kb = tdm__keys_get(op->keys, kid, &kl);
            for (uint64_t i = 0; i < n; i++) {
                int64_t ts;
                uint64_t bits;
                const void *p;
                size_t len;
                tdm__dec_svar(d, &ts);
                tdm__dec_u64(d, &bits);
                if (tdm__dec_bytes(d, &p, &len) != TDM_OK)
                    return TDM_ERR_PARSE;
                tdm_record *r = &s->c.recs.r[s->c.recs.n];
                r->key = kb;
                r->key_len = kl;
                r->ts = ts;
                r->value = bitsd(bits);
                if (len) {
                    r->payload = tdm__memdup(p, len);
                    if (!r->payload)
                        return TDM_ERR_NOMEM;
                    r->payload_len = len;
                    op->content_bytes += (int64_t)len;
                }
                s->c.recs.n++;
            }
            break;
        }
        }
        s->flags |= TDM__W_CONTENTS;
    }
    if (op->tstate_size) {
        const void *p;
        if (tdm__dec_raw(d, op->tstate_size, &p) != TDM_OK)
            return TDM_ERR_PARSE;
        memcpy(tdm__win_tstate(op, s), p, op->tstate_size);
    }
    return d->err;
}

static tdm_err dec_general_group(tdm_winop *op, tdm__dec *d, rs_buf *tb)
{
    uint64_t n;
    if (tdm__dec_uvar(d, &n) != TDM_OK)
        return TDM_ERR_PARSE;
    if (n > tdm__dec_left(d))
        return tdm__dec_fail(d, "bad window count");
    for (uint64_t i = 0; i < n; i++) {
        tdm_err err = dec_slot(op, d);
        if (err != TDM_OK)
            return err;
    }
    if (tdm__dec_uvar(d, &n) != TDM_OK)
        return TDM_ERR_PARSE;
    if (n > tdm__dec_left(d))
        return tdm__dec_fail(d, "bad timer count");
    for (uint64_t i = 0; i < n; i++) {
        uint8_t dom;
        const void *key;
        size_t klen;
        int64_t time, na, nb;
        uint64_t rank;
        tdm__dec_u8(d, &dom);
        tdm__dec_bytes(d, &key, &klen);
        tdm__dec_svar(d, &time);
        tdm__dec_svar(d, &na);
        tdm__dec_svar(d, &nb);
        if (tdm__dec_uvar(d, &rank) != TDM_OK)
            return TDM_ERR_PARSE;
        if (dom > 1 || rank > UINT32_MAX)
            return tdm__dec_fail(d, "bad timer");
        if (tb->n == tb->cap) {
            size_t ncap = tb->cap ? tb->cap * 2 : 64;
            rs_tm *nt = tdm__realloc(tb->tms, ncap * sizeof *nt);
            if (!nt)
                return TDM_ERR_NOMEM;
            tb->tms = nt;
            tb->cap = ncap;
        }
        uint32_t kid;
        /* The interning reference becomes the timer's. */
        if (tdm__keys_intern(op->keys, key, klen, &kid) != TDM_OK)
            return TDM_ERR_NOMEM;
        rs_tm *t = &tb->tms[tb->n++];
        t->time = time;
        t->ns.a = na;
        t->ns.b = nb;
        t->key = kid;
        t->rank = (uint32_t)rank;
        t->dom = dom;
    }
    return TDM_OK;
}

/* Registers the timers one blob held, in (time, rank) order per domain.
 * Each holds the key reference taken when it was read. */
static tdm_err add_timers(tdm_winop *op, tdm__dec *d, rs_buf *tb)
{
    if (tb->n)
        qsort(tb->tms, tb->n, sizeof *tb->tms, cmp_rs_tm);
    size_t i = 0;
    tdm_err err = TDM_OK;
    for (; i < tb->n; i++) {
        rs_tm *t = &tb->tms[i];
        bool added;
        err = tdm__timers_insert(op->timers[t->dom], t->time, t->key, t->ns,
                                 &added);
        if (err != TDM_OK)
            break;
        if (!added) {
            err = tdm__dec_fail(d, "timer twice");
            break;
        }
    }
    /* References of timers not registered go back. */
    for (size_t j = err == TDM_OK ? tb->n : i; j < tb->n; j++)
        tdm__keys_unref(op->keys, tb->tms[j].key);
    tb->n = 0;
    return err;
}

/* ---- Lean path ---- */

typedef struct rs_cell {
    uint64_t seq;
    uint32_t pos;
    uint8_t fired;
    tdm_time_ms start, end;
    const char *key;
    size_t klen;
    uint64_t fires;
    double v[2];
} rs_cell;

typedef struct rs_cells {
    rs_cell *c;
    size_t n, cap;
} rs_cells;

static int cmp_rs_cell(const void *pa, const void *pb)
{
    const rs_cell *a = pa, *b = pb;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    return 0;
}

static tdm_err dec_lean_group(tdm_winop *op, tdm__dec *d, rs_cells *cb)
{
    uint64_t runs;
    uint32_t nv = op->ws->n_vals;
    if (tdm__dec_uvar(d, &runs) != TDM_OK)
        return TDM_ERR_PARSE;
    if (runs > tdm__dec_left(d))
        return tdm__dec_fail(d, "bad window count");
    for (uint64_t r = 0; r < runs; r++) {
        int64_t start, end;
        uint64_t seq, n;
        uint8_t fired;
        tdm__dec_svar(d, &start);
        tdm__dec_svar(d, &end);
        tdm__dec_uvar(d, &seq);
        tdm__dec_u8(d, &fired);
        if (tdm__dec_uvar(d, &n) != TDM_OK)
            return TDM_ERR_PARSE;
        if (start >= end || fired > 1)
            return tdm__dec_fail(d, "bad window");
        if (n == 0 || n > tdm__dec_left(d))
            return tdm__dec_fail(d, "bad cell count");
        if (cb->n + n > cb->cap) {
            size_t ncap = cb->cap ? cb->cap : 64;
            while (ncap < cb->n + n)
                ncap *= 2;
            rs_cell *nc = tdm__realloc(cb->c, ncap * sizeof *nc);
            if (!nc)
                return TDM_ERR_NOMEM;
            cb->c = nc;
            cb->cap = ncap;
        }
        for (uint64_t i = 0; i < n; i++) {
            uint64_t pos, fires, bits;
            const void *key;
            size_t klen;
            tdm__dec_uvar(d, &pos);
            tdm__dec_bytes(d, &key, &klen);
            tdm__dec_uvar(d, &fires);
            rs_cell *c = &cb->c[cb->n];
            c->v[0] = c->v[1] = 0;
            for (uint32_t v = 0; v < nv; v++) {
                tdm__dec_u64(d, &bits);
                c->v[v] = bitsd(bits);
            }
            if (d->err)
                return TDM_ERR_PARSE;
            if (pos >= UINT32_MAX || klen > UINT32_MAX)
                return tdm__dec_fail(d, "bad cell");
            c->seq = seq;
            c->pos = (uint32_t)pos;
            c->fired = fired;
            c->start = start;
            c->end = end;
            c->key = key;
            c->klen = klen;
            c->fires = fires;
            cb->n++;
        }
    }
    return TDM_OK;
}

/* Adds the cells one blob held, window interval by interval in creation
 * order, each interval's cells in their order. */
static tdm_err add_cells(tdm_winop *op, tdm__dec *d, rs_cells *cb)
{
    tdm__wstore *ws = op->ws;
    if (cb->n)
        qsort(cb->c, cb->n, sizeof *cb->c, cmp_rs_cell);
    for (size_t i = 0; i < cb->n; i++) {
        const rs_cell *r = &cb->c[i];
        if (i && r->seq == cb->c[i - 1].seq &&
            (r->start != cb->c[i - 1].start || r->end != cb->c[i - 1].end))
            return tdm__dec_fail(d, "window order differs between groups");
        uint32_t sid;
        tdm_err err =
            tdm__ws_span_get(ws, r->start, r->end, r->end - 1,
                             tdm__win_cleanup(op, r->end), r->fired, &sid);
        if (err != TDM_OK)
            return err;
        uint64_t h = tdm__ws_hash(r->key, r->klen);
        uint32_t kid;
        err = tdm__ws_intern(ws, r->key, r->klen, h, &kid);
        if (err != TDM_OK)
            return err;
        if (tdm__ws_cell_of(ws, tdm__ws_key_at(ws, kid), kid, sid))
            return tdm__dec_fail(d, "cell twice");
        tdm__ws_cell *c = tdm__ws_cell_add(ws, kid, sid);
        if (!c) {
            tdm__ws_key_drop_if_empty(ws, kid);
            return TDM_ERR_NOMEM;
        }
        /* Inline cells of one double are 16 bytes: v[1] is not theirs. */
        for (uint32_t v = 0; v < ws->n_vals; v++)
            c->v[v] = r->v[v];

        if (r->fires > UINT32_MAX && !(c->span & TDM__WS_SPILL_BIT)) {
            err = tdm__ws_cell_widen(ws, kid, &c);
            if (err != TDM_OK)
                return err;
        }
        c->fires = (uint32_t)r->fires;
        if (c->span & TDM__WS_SPILL_BIT)
            ((tdm__ws_spill *)(void *)((char *)c - offsetof(tdm__ws_spill, c)))
                ->fires_hi = (uint32_t)(r->fires >> 32);
    }
    cb->n = 0;
    return TDM_OK;
}

/* ---- The operator section ---- */

tdm_err tdm__winop_restore(tdm_winop *op, tdm__dec *d, int group_lo,
                           int group_hi)
{
    tdm_err err = TDM_OK;
    rs_buf tb = {NULL, 0, 0};
    rs_cells cb = {NULL, 0, 0};
    uint64_t nfp;
    tdm__dec body;
    if (!op || !d || group_lo < 0 || group_lo > group_hi)
        return TDM_ERR_INVAL;
    if (op->started && !op->restored)
        return tdm__msgf(&op->msg, TDM_ERR_STATE,
                         "window operator "
                         "restore after input");
    /* Snapshots hold per-window cells (cell_state): the sliced mode
     * cannot take them apart into slices, so a restored operator keeps
     * per-window cells. */
    (void)tdm__winop_disable_slicing(op);
    /* The session mode writes the general path's slots and timers
     * (snap_sess): a restored operator runs on the general path. */
    tdm__sess_free(op);
    if (tdm__dec_expect(d, TDM__SNAP_TAG_WINOP, TDM__SNAP_WINOP_VERSION,
                        "not a window operator section",
                        "unknown window operator version", &body) != TDM_OK)
        return dec_err(op, d);
    tdm__dec_uvar(&body, &nfp);
    if (!body.err && nfp != N_FP)
        tdm__dec_fail(&body, "operator configuration differs");
    int64_t fp[N_FP], late = op->lateness;
    fingerprint(op, fp);
    for (int i = 0; !body.err && i < N_FP; i++) {
        int64_t v;
        if (tdm__dec_svar(&body, &v) != TDM_OK)
            break;
        if (i == FP_LATENESS && !op->merging && v >= 0)
            late = v; /* L6: the snapshot's lateness is taken */
        else if (v != fp[i])
            tdm__dec_fail(&body, "operator configuration differs");
    }
    int64_t wm, pt, c[4];
    uint8_t ended;
    uint64_t nch;
    tdm__dec_svar(&body, &wm);
    tdm__dec_svar(&body, &pt);
    for (int i = 0; i < 4; i++)
        tdm__dec_svar(&body, &c[i]);
    tdm__dec_u8(&body, &ended);
    tdm__dec_uvar(&body, &nch);
    if (!body.err && ended > 1)
        tdm__dec_fail(&body, "bad end flag");
    if (!body.err && (c[0] < 0 || c[1] < 0 || c[2] < 0 || c[3] < 0))
        tdm__dec_fail(&body, "bad counter");
    if (body.err)
        goto parse;
    if (!op->restored && nch == (uint64_t)op->n_channels) {
        if (tdm__valve_restore(op->valve, &body) != TDM_OK)
            goto parse;
    } else {
        uint64_t vt;
        tdm__dec skip;
        if (tdm__dec_section(&body, &vt, &skip) != TDM_OK)
            goto parse;
        if (vt != TDM__SNAP_TAG_VALVE) {
            tdm__dec_fail(&body, "not a valve section");
            goto parse;
        }
    }
    if (!op->restored) {
        op->wm = wm;
        if (pt > op->proctime)
            op->proctime = pt;
        op->ended = ended != 0;
    } else {
        if (wm < op->wm)
            op->wm = wm;
        if (pt > op->proctime)
            op->proctime = pt;
        op->ended = op->ended && ended;
    }
    op->late_dropped += c[0];
    op->late_emitted += c[1];
    op->bad_records += c[2];
    op->fn_errors += c[3];
    op->restored++;
    op->started = true;
    /* Key groups. */
    int64_t horizon = TDM_TIME_MIN;
    bool mine = true; /* the blob covers some of the operator's groups */
    while (tdm__dec_left(&body)) {
        uint64_t gtag, group;
        tdm__dec g;
        if (tdm__dec_section(&body, &gtag, &g) != TDM_OK)
            goto parse;
        if (gtag == TDM__SNAP_TAG_WINOP_CLOSED) {
            int64_t lo = 0, hi = 0;
            tdm__dec_svar(&g, &horizon);
            tdm__dec_svar(&g, &lo);
            if (tdm__dec_svar(&g, &hi) != TDM_OK) {
                adopt(&body, &g);
                goto parse;
            }
            mine = lo <= group_hi && hi >= group_lo;
            continue;
        }
        if (gtag != TDM__SNAP_TAG_WINOP_GROUP)
            continue; /* a later writer's section */
        if (tdm__dec_uvar(&g, &group) != TDM_OK) {
            adopt(&body, &g);
            goto parse;
        }
        if (group < (uint64_t)group_lo || group > (uint64_t)group_hi)
            continue;
        err = op->lean ? dec_lean_group(op, &g, &cb)
                       : dec_general_group(op, &g, &tb);
        if (err == TDM_OK && tdm__dec_done(&g) != TDM_OK)
            err = TDM_ERR_PARSE;
        if (err != TDM_OK) {
            adopt(&body, &g);
            if (err == TDM_ERR_PARSE)
                goto parse;
            goto fail;
        }
    }
    bool resync = mine && lateness_taken(op, late, horizon);
    err = op->lean ? add_cells(op, &body, &cb) : add_timers(op, &body, &tb);
    if (err == TDM_OK && resync)
        err = tdm__winop_lateness_resync(op);
    if (err == TDM_ERR_PARSE)
        goto parse;
    if (err != TDM_OK)
        goto fail;
    tdm__free(tb.tms);
    tdm__free(cb.c);
    return TDM_OK;
parse:
    adopt(d, &body);
    err = dec_err(op, d);
    goto out;
fail:
    err = tdm__msgf(&op->msg, err, "window operator restore: %s",
                    tdm_err_name(err));
out:
    /* Timers read but not registered give their key references back. */
    for (size_t j = 0; j < tb.n; j++)
        tdm__keys_unref(op->keys, tb.tms[j].key);
    tdm__free(tb.tms);
    tdm__free(cb.c);
    return err;
}
