/* SPDX-License-Identifier: MIT */
/* winop_session.c - the window operator's session mode: event-time
 * session windows with the event-time trigger and no allowed lateness
 * (NEXMark q11, q9's chained window), with any aggregate, without the
 * general path's per-record key interning, slot-store walk, sort and
 * timer move.
 *
 * A key's sessions are a list of session records sorted by start, the
 * first one hanging off the key's interned entry (its per-key pointer);
 * each session holds a reference to its key.  Each session
 * record embeds a window slot of the general path (start, end, flags,
 * contents, and a custom accumulator after it at op->acc_off), so that
 * the aggregate's add, merge, result and clear, the probe and the
 * checkpoint encoding are the general path's own.  A record that falls
 * into or extends the key's only session costs one key lookup and one
 * slot update.
 *
 * Due times are lazy: a session is queued once, in a queue of 64 ms
 * buckets (the general path's timer queue with session ids for keys),
 * at the bucket of the maxTimestamp it had then.  Sessions only grow,
 * so the entry is never late; when the watermark reaches it, a session
 * that grew meanwhile is queued again at its new bucket, one that is
 * due fires.  A watermark advance fires its due sessions in time order
 * and removes them: with no allowed lateness a session fires exactly
 * once, ON_TIME, at its cleanup time (R4.3).  Sessions of one end fire
 * in the order their windows last changed (made, grown or merged): the
 * general path registers a new timer at each such change, and its
 * timers of one time pop in registration order, so both paths emit
 * the same events in the same order.
 *
 * Checkpoints write what the general path would hold (a slot and its
 * one event-time timer per session, winop_snap.c), and a restored
 * operator runs on the general path.  Emission detaches the session
 * from its key before calling the emit callback, so a record the
 * callback pushes for the same key starts a new session where the
 * general path would fold it into the session being cleaned up.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "window/win.h"

#define SS_NONE UINT32_MAX
#define SS_BUCKET_MASK ((tdm_time_ms)63) /* due buckets of 64 ms */

enum { SS_FREE = 0, SS_QUEUED = 1, SS_FIRING = 2 };

/* A session record: these fields, then the slot (16-aligned), then the
 * slot's custom accumulator; records are ss->stride bytes apart. */
typedef struct ss_sess {
    uint64_t seq;    /* when its window last changed (see above) */
    tdm_time_ms due; /* its queue entry's time (SS_QUEUED) */
    uint32_t knext;  /* the key's next session by start; free list */
    uint32_t state;  /* SS_FREE, SS_QUEUED or SS_FIRING */
    uint64_t pad;
    tdm__win_slot s; /* the session window and its contents */
} ss_sess;

_Static_assert(offsetof(ss_sess, s) % 16 == 0, "slot alignment");

/* A session due at a watermark, with the firing order's sort key as it
 * was when the walk began. */
typedef struct ss_due {
    tdm_time_ms end;
    uint64_t seq;
    uint32_t sid;
} ss_due;

struct tdm__sess {
    unsigned char *v; /* records, stride bytes each */
    size_t stride;
    uint32_t n, cap; /* ids handed out, capacity */
    uint32_t free_head;
    uint32_t live;
    uint64_t seq;
    tdm__timers *due; /* (bucket, session id) */
    ss_due *fire;     /* sessions being fired, innermost walk last */
    size_t n_fire, cap_fire;
    uint32_t *scratch; /* a key's sessions (merges) */
    size_t cap_scratch;
};

static inline ss_sess *at(const struct tdm__sess *ss, uint32_t sid)
{
    return (ss_sess *)(ss->v + (size_t)sid * ss->stride);
}

static const tdm__ns NS0 = {0, 0};

/* ---- Setup and teardown ---- */

/* The configurations this mode takes (win.h). */
bool tdm__sess_applies(const tdm_winop *op)
{
    const tdm_assigner *a = op->asg;
    return a->kind == TDM__ASG_SESSION && !a->proc_time &&
           op->trg->kind == TDM__TRG_EVENT_TIME && op->lateness == 0 &&
           op->tstate_size == 0;
}

tdm_err tdm__sess_setup(tdm_winop *op)
{
    struct tdm__sess *ss = tdm__calloc(1, sizeof *ss);
    if (!ss)
        return TDM_ERR_NOMEM;
    ss->free_head = SS_NONE;
    size_t slot = op->acc_off + op->acc_size;
    if (slot < sizeof(tdm__win_slot))
        slot = sizeof(tdm__win_slot);
    ss->stride = (offsetof(ss_sess, s) + slot + 15) & ~(size_t)15;
    ss->due = tdm__timers_new();
    if (!ss->due) {
        tdm__free(ss);
        return TDM_ERR_NOMEM;
    }
    op->sess = ss;
    return TDM_OK;
}

void tdm__sess_free(tdm_winop *op)
{
    struct tdm__sess *ss = op->sess;
    if (!ss)
        return;
    /* Contents go, and the sessions' key references. */
    for (uint32_t i = 0; i < ss->n; i++) {
        ss_sess *x = at(ss, i);
        if (x->state == SS_FREE)
            continue;
        tdm__agg_clear(op, &x->s);
        *tdm__keys_udata(op->keys, x->s.key) = NULL;
        tdm__keys_unref(op->keys, x->s.key);
    }
    tdm__timers_destroy(ss->due);
    tdm__free(ss->v);
    tdm__free(ss->fire);
    tdm__free(ss->scratch);
    tdm__free(ss);
    op->sess = NULL;
}

/* ---- Sessions and keys ---- */

static inline uint32_t key_first(tdm_winop *op, uint32_t kid)
{
    uintptr_t p = (uintptr_t)*tdm__keys_udata(op->keys, kid);
    return p ? (uint32_t)(p - 1) : SS_NONE;
}

static inline void key_set_first(tdm_winop *op, uint32_t kid, uint32_t sid)
{
    *tdm__keys_udata(op->keys, kid) =
        sid == SS_NONE ? NULL : (void *)(uintptr_t)(sid + 1);
}

static inline tdm_time_ms bucket_of(tdm_time_ms max_ts)
{
    return max_ts & ~SS_BUCKET_MASK;
}

/* Queues session @p sid at the bucket of its maxTimestamp. */
static tdm_err queue(struct tdm__sess *ss, tdm_winop *op, uint32_t sid)
{
    ss_sess *x = at(ss, sid);
    x->due = bucket_of(tdm__win_max_ts(op, x->s.end));
    x->state = SS_QUEUED;
    return tdm__timers_add(ss->due, x->due, sid, NS0);
}

/* A new session [start, end) of key @p kid, not linked to the key yet;
 * it takes a reference to the key.  SS_NONE on OOM. */
static uint32_t sess_new(tdm_winop *op, uint32_t kid, tdm_time_ms start,
                         tdm_time_ms end)
{
    struct tdm__sess *ss = op->sess;
    uint32_t sid;
    if (ss->free_head != SS_NONE) {
        sid = ss->free_head;
        ss->free_head = at(ss, sid)->knext;
    } else {
        if (ss->n == ss->cap) {
            if (ss->cap >= UINT32_MAX / 2)
                return SS_NONE;
            uint32_t ncap = ss->cap ? ss->cap * 2 : 64;
            unsigned char *nv = tdm__realloc(ss->v, (size_t)ncap * ss->stride);
            if (!nv)
                return SS_NONE;
            ss->v = nv;
            ss->cap = ncap;
        }
        sid = ss->n++;
    }
    ss_sess *x = at(ss, sid);
    memset(x, 0, ss->stride);
    x->s.start = start;
    x->s.end = end;
    x->s.key = kid;
    /* What the general path's slot would say: one event timer at
     * maxTimestamp, which is also the cleanup time (snapshots). */
    x->s.flags = TDM__W_ET_MAX | TDM__W_ET_CLEAN;
    x->knext = SS_NONE;
    x->seq = ss->seq++;
    if (queue(ss, op, sid) != TDM_OK) {
        x->state = SS_FREE;
        x->knext = ss->free_head;
        ss->free_head = sid;
        return SS_NONE;
    }
    tdm__keys_ref(op->keys, kid);
    ss->live++;
    return sid;
}

/* Takes session @p sid out of its key's list (@p prev: the one before
 * it, SS_NONE when it is the first) and out of the queue; its record
 * stays allocated, with its key reference (sess_release frees both). */
static void sess_unlink(tdm_winop *op, uint32_t sid, uint32_t prev)
{
    struct tdm__sess *ss = op->sess;
    ss_sess *x = at(ss, sid);
    if (prev == SS_NONE)
        key_set_first(op, x->s.key, x->knext);
    else
        at(ss, prev)->knext = x->knext;
    if (x->state == SS_QUEUED)
        tdm__timers_del(ss->due, x->due, sid, NS0);
    x->knext = SS_NONE;
    ss->live--;
}

/* Clears an unlinked session's contents, frees its record and drops its
 * key reference. */
static void sess_release(tdm_winop *op, uint32_t sid)
{
    struct tdm__sess *ss = op->sess;
    ss_sess *x = at(ss, sid);
    tdm__agg_clear(op, &x->s);
    tdm__keys_unref(op->keys, x->s.key);
    x->state = SS_FREE;
    x->knext = ss->free_head;
    ss->free_head = sid;
}

/* The session before @p sid in its key's list, SS_NONE if it is first. */
static uint32_t sess_prev(tdm_winop *op, uint32_t sid)
{
    struct tdm__sess *ss = op->sess;
    uint32_t prev = SS_NONE;
    for (uint32_t i = key_first(op, at(ss, sid)->s.key); i != sid;
         i = at(ss, i)->knext)
        prev = i;
    return prev;
}

/* ---- Records ---- */

/* A record's window merged with the key's sessions it overlaps or
 * touches (MergingWindowSet.addWindow over the sorted list, as
 * tdm__win_merge_add does it): the first member keeps its storage and
 * takes the others' contents in start order.  *sid is the session
 * that takes the record (*created: a new one), SS_NONE when the merged
 * window is late (R5.3: nothing changed).  Returns TDM_OK or
 * TDM_ERR_NOMEM. */
static tdm_err merge_add(tdm_winop *op, uint32_t kid, tdm_time_ms start,
                         tdm_time_ms end, uint32_t *sid, bool *created)
{
    struct tdm__sess *ss = op->sess;
    *sid = SS_NONE;
    *created = false;
    size_t n = 0;
    for (uint32_t i = key_first(op, kid); i != SS_NONE; i = at(ss, i)->knext) {
        if (n == ss->cap_scratch) {
            size_t ncap = ss->cap_scratch ? ss->cap_scratch * 2 : 16;
            uint32_t *nl = tdm__realloc(ss->scratch, ncap * sizeof *nl);
            if (!nl)
                return TDM_ERR_NOMEM;
            ss->scratch = nl;
            ss->cap_scratch = ncap;
        }
        ss->scratch[n++] = i;
    }
    const uint32_t *l = ss->scratch;
    size_t pos = 0;
    while (pos < n && at(ss, l[pos])->s.start <= start)
        pos++;
    tdm_time_ms gs = start, ge = end;
    size_t first = pos, last = pos;
    while (first > 0 && at(ss, l[first - 1])->s.end >= gs) {
        first--;
        if (at(ss, l[first])->s.start < gs)
            gs = at(ss, l[first])->s.start;
        if (at(ss, l[first])->s.end > ge)
            ge = at(ss, l[first])->s.end;
    }
    while (last < n && at(ss, l[last])->s.start <= ge) {
        if (at(ss, l[last])->s.end > ge)
            ge = at(ss, l[last])->s.end;
        last++;
    }
    if (tdm__win_is_late(op, ge))
        return TDM_OK;
    if (first == last) {
        /* A session of its own, linked in start order. */
        uint32_t nid = sess_new(op, kid, start, end);
        if (nid == SS_NONE)
            return TDM_ERR_NOMEM;
        if (pos == 0) {
            at(ss, nid)->knext = key_first(op, kid);
            key_set_first(op, kid, nid);
        } else {
            at(ss, nid)->knext = at(ss, l[pos - 1])->knext;
            at(ss, l[pos - 1])->knext = nid;
        }
        *sid = nid;
        *created = true;
        return TDM_OK;
    }
    /* Contents move first (as tdm__win_merge_add): an allocation
     * failure leaves every session intact apart from contents already
     * folded into the kept one. */
    ss_sess *kept = at(ss, l[first]);
    for (size_t i = first + 1; i < last; i++) {
        tdm_err err = tdm__agg_merge(op, &kept->s, &at(ss, l[i])->s);
        if (err != TDM_OK)
            return err;
    }
    for (size_t i = first + 1; i < last; i++) {
        sess_unlink(op, l[i], l[first]);
        sess_release(op, l[i]);
    }
    if (kept->s.start != gs || kept->s.end != ge) {
        kept->s.start = gs;
        kept->s.end = ge; /* its queue entry stays, earlier: lazy */
        kept->seq = ss->seq++;
    }
    *sid = l[first];
    return TDM_OK;
}

/* Adds the record to session @p sid's contents.  A session made for
 * it (@p created) is removed again when that fails.  Returns TDM_OK or
 * TDM_ERR_NOMEM. */
static tdm_err add(tdm_winop *op, uint32_t sid, const tdm_record *rec,
                   bool created)
{
    tdm__win_slot *s = &at(op->sess, sid)->s;
    if (tdm__agg_add_fast(op->agg, s, rec->value))
        return TDM_OK;
    size_t klen;
    const char *key = tdm__keys_get(op->keys, s->key, &klen);
    tdm_err err = tdm__agg_add_slow(op, s, rec, key, klen);
    if (err == TDM_OK || !created || (s->flags & TDM__W_CONTENTS))
        return err;
    sess_unlink(op, sid, sess_prev(op, sid));
    sess_release(op, sid);
    return err;
}

/* The record's window, its key's sessions and the merge: the slow cases
 * (a new key, several sessions, a record apart from the session). */
static __attribute__((noinline)) tdm_err
push_slow(tdm_winop *op, const tdm_record *rec, uint64_t h, bool known,
          uint32_t kid, tdm_time_ms start, tdm_time_ms end)
{
    if (!known) {
        if (tdm__win_is_late(op, end)) {
            tdm__win_handle_late(op, rec, rec->key, rec->key_len);
            return TDM_OK;
        }
        /* The interning reference is held while the session is made. */
        tdm_err err =
            tdm__keys_intern_hashed(op->keys, rec->key, rec->key_len, h, &kid);
        if (err != TDM_OK)
            return err;
        uint32_t sid = sess_new(op, kid, start, end);
        if (sid == SS_NONE) {
            err = TDM_ERR_NOMEM;
        } else {
            key_set_first(op, kid, sid);
            err = add(op, sid, rec, true);
        }
        tdm__keys_unref(op->keys, kid);
        return err;
    }
    uint32_t sid;
    bool created;
    tdm_err err = merge_add(op, kid, start, end, &sid, &created);
    if (err != TDM_OK)
        return err;
    if (sid == SS_NONE) {
        tdm__win_handle_late(op, rec, rec->key, rec->key_len);
        return TDM_OK;
    }
    return add(op, sid, rec, created);
}

tdm_err tdm__sess_push(tdm_winop *op, const tdm_record *rec)
{
    struct tdm__sess *ss = op->sess;
    tdm_time_ms start = rec->ts;
    tdm_time_ms end = tdm__time_add_sat(start, op->asg->gap);
    uint64_t h = tdm__keys_hash(rec->key, rec->key_len);
    uint32_t kid;
    if (!tdm__keys_find(op->keys, rec->key, rec->key_len, h, &kid))
        return push_slow(op, rec, h, false, kid, start, end);
    uint32_t sid = key_first(op, kid);
    /* A key without sessions: one being fired holds it. */
    if (sid == SS_NONE)
        return push_slow(op, rec, h, true, kid, start, end);
    ss_sess *x = at(ss, sid);
    /* The common case: the key's only session, which the record's
     * window overlaps or touches; the merged window cannot be late
     * while the session is not. */
    if (x->knext == SS_NONE && start <= x->s.end && end >= x->s.start) {
        tdm_time_ms ge = end > x->s.end ? end : x->s.end;
        if (!tdm__win_is_late(op, ge)) {
            if (start < x->s.start || ge != x->s.end) {
                if (start < x->s.start)
                    x->s.start = start;
                x->s.end = ge;
                x->seq = ss->seq++;
            }
            return add(op, sid, rec, false);
        }
    }
    return push_slow(op, rec, h, true, kid, start, end);
}

/* ---- Watermarks ---- */

/* Firing order: end, then the last change of the window. */
static int cmp_due(const void *pa, const void *pb)
{
    const ss_due *a = pa, *b = pb;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Fires session @p sid, due at the watermark: detaches it from its key,
 * emits its result, then frees it.  The emit callback may push records:
 * they do not see the session, and may move the records (re-read by
 * id); the session's key reference keeps the event's key bytes. */
static void fire_one(tdm_winop *op, uint32_t sid)
{
    sess_unlink(op, sid, sess_prev(op, sid));
    tdm__win_emit(op, &at(op->sess, sid)->s, true);
    sess_release(op, sid);
}

/* Fires every session whose maxTimestamp is <= @p wm (win.h). */
void tdm__sess_watermark(tdm_winop *op, tdm_time_ms wm)
{
    struct tdm__sess *ss = op->sess;
    size_t base = ss->n_fire;
    tdm__timer t;
    size_t n_grown = 0;
    while (tdm__timers_pop(ss->due, wm, &t)) {
        uint32_t sid = t.key;
        ss_sess *x = at(ss, sid);
        if (ss->n_fire == ss->cap_fire) {
            size_t ncap = ss->cap_fire ? ss->cap_fire * 2 : 256;
            ss_due *nf = tdm__realloc(ss->fire, ncap * sizeof *nf);
            if (!nf) {
                /* Fires later, at a watermark with memory. */
                tdm__win_fail(op, tdm__timers_add(ss->due, t.time, sid, NS0));
                tdm__win_fail(op, TDM_ERR_NOMEM);
                break;
            }
            ss->fire = nf;
            ss->cap_fire = ncap;
        }
        x->state = SS_FIRING;
        ss->fire[ss->n_fire++] = (ss_due){x->s.end, x->seq, sid};
        if (tdm__win_max_ts(op, x->s.end) > wm)
            n_grown++;
    }
    size_t top = ss->n_fire;
    /* Grown sessions go back into the queue at their new bucket. */
    if (n_grown) {
        size_t w = base;
        for (size_t i = base; i < top; i++) {
            uint32_t sid = ss->fire[i].sid;
            if (tdm__win_max_ts(op, at(ss, sid)->s.end) > wm)
                tdm__win_fail(op, queue(ss, op, sid));
            else
                ss->fire[w++] = ss->fire[i];
        }
        top = w;
        ss->n_fire = top;
    }
    if (top - base > 1)
        qsort(ss->fire + base, top - base, sizeof *ss->fire, cmp_due);
    for (size_t i = base; i < top; i++) {
        uint32_t sid = ss->fire[i].sid;
        ss_sess *x = at(ss, sid);
        /* The emit callback may have pushed records meanwhile: merged
         * away (freed, maybe reused), or grown past the watermark. */
        if (x->state != SS_FIRING)
            continue;
        if (tdm__win_max_ts(op, x->s.end) > wm) {
            tdm__win_fail(op, queue(ss, op, sid));
            continue;
        }
        fire_one(op, sid);
    }
    ss->n_fire = base;
}

/* ---- Queries ---- */

size_t tdm__sess_count(const tdm_winop *op)
{
    return op->sess->live;
}

size_t tdm__sess_bytes(const tdm_winop *op)
{
    const struct tdm__sess *ss = op->sess;
    return (size_t)ss->cap * ss->stride + tdm__timers_bytes(ss->due) +
           ss->cap_fire * sizeof *ss->fire +
           ss->cap_scratch * sizeof *ss->scratch;
}

tdm__win_slot *tdm__sess_find(const tdm_winop *op, uint32_t kid,
                              tdm_time_ms start, tdm_time_ms end)
{
    struct tdm__sess *ss = op->sess;
    uintptr_t p = (uintptr_t)*tdm__keys_udata(op->keys, kid);
    for (uint32_t i = p ? (uint32_t)(p - 1) : SS_NONE; i != SS_NONE;
         i = at(ss, i)->knext)
        if (at(ss, i)->s.start == start && at(ss, i)->s.end == end)
            return &at(ss, i)->s;
    return NULL;
}

void tdm__sess_each(const tdm_winop *op, tdm__sess_each_fn fn, void *ud)
{
    const struct tdm__sess *ss = op->sess;
    for (uint32_t i = 0; i < ss->n; i++)
        if (at(ss, i)->state != SS_FREE)
            fn(ud, &at(ss, i)->s, at(ss, i)->seq);
}
