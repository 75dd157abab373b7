/* SPDX-License-Identifier: MIT */
/* localagg.c - the local phase of two-phase window aggregation (see
 * localagg.h): a source subtask's open slices of one consumer, each an
 * open-addressing table of (key -> partial accumulator) entries kept in
 * creation order, and the flush that turns the slices a watermark closes
 * into partial rows for the window subtasks owning their keys.
 *
 * Memory: entries of keys x open slices (at most MAX_OPEN); a flushed
 * slice's tables are kept for the next slice (KEEP_FREE of them; with
 * the open ones never more than MAX_OPEN slices in all), so no
 * allocation per record once they have grown; messages are sent in
 * pieces of PART_CHUNK rows (more for big flushes), and the consumers
 * hand them back to the local aggregate's pool (tdm__rt_ppool, outbox.h), so a
 * flush reuses their buffers instead of allocating (and faulting in)
 * fresh ones.
 */
#include <string.h>

#include "runtime/localagg.h"
#include "runtime/rt_ctx.h"
#include "runtime/task_op.h"
#include "window/win.h"

/* ---- Slices ---- */

/* Empties a slice's tables for reuse (memory kept).  Its count slots
 * were emptied one by one by the flush that read them. */
static void slice_reset(tdm__rt_lslice *sl)
{
    if (sl->idx)
        memset(sl->idx, 0, (size_t)sl->n_slots * sizeof *sl->idx);
    sl->n = 0;
    sl->kused = 0;
    sl->cs_n = 0;
    sl->n_ord = 0;
}

static void slice_free(tdm__rt_lslice *sl)
{
    if (!sl)
        return;
    tdm__free(sl->cs);
    tdm__free(sl->ord);
    tdm__free(sl->idx);
    tdm__free(sl->ents);
    tdm__free(sl->keys);
    tdm__free(sl);
}

/* Slices open at once at most.  A watermark normally leaves about
 * (out-of-orderness + g) / g slices open; when event time runs far ahead
 * between two watermarks (a fast source, a long watermark.interval) a
 * new slice sends the oldest one early, which is still before the
 * watermark that closes it: its keys may then send a second partial,
 * and the source's memory stays at keys x MAX_OPEN slices. */
#define MAX_OPEN 4

/* The open slice of @p ts, made (or taken from the free list) when the
 * record must be folded; see localagg.h. */
tdm__rt_lslice *tdm__rt_lagg_slice(tdm__rt_lagg *la, tdm_time_ms ts,
                                   tdm_time_ms wm, bool *raw)
{
    *raw = true;
    /* No slice (or window) bound may saturate: records at the ends of
     * time go raw, as does one without a timestamp. */
    if (ts == TDM_TIME_MIN || ts < TDM_TIME_MIN + la->g ||
        ts > TDM_TIME_MAX - la->g)
        return NULL;
    if (la->gaps && tdm__floor_mod(ts, la->woff, la->slide) >= la->size)
        return NULL; /* between two sliding windows: none takes it */
    tdm_time_ms start = ts - tdm__floor_mod(ts, la->off, la->g);
    tdm_time_ms end = start + la->g;
    tdm__rt_lslice **pp = &la->open;
    while (*pp && (*pp)->start < start)
        pp = &(*pp)->next;
    if (*pp && (*pp)->start == start)
        return *pp;
    /* Flushed already: the watermark sent passed its end. */
    if (end - 1 <= wm)
        return NULL;
    int n_open = 0;
    for (const tdm__rt_lslice *o = la->open; o; o = o->next)
        n_open++;
    if (n_open >= MAX_OPEN) {
        /* The oldest goes out early (see MAX_OPEN). */
        while (n_open-- >= MAX_OPEN && la->open)
            tdm__rt_lagg_flush(la->t, la, la->open->end - 1);
        pp = &la->open;
        while (*pp && (*pp)->start < start)
            pp = &(*pp)->next;
    }
    *raw = false;
    tdm__rt_lslice *sl = la->free;
    if (sl) {
        la->free = sl->next;
    } else {
        sl = tdm__calloc(1, sizeof *sl);
        if (!sl)
            return NULL;
        sl->n_slots = 64;
        sl->shift = 64 - 6;
        sl->idx = tdm__calloc(sl->n_slots, sizeof *sl->idx);
        if (!sl->idx) {
            slice_free(sl);
            return NULL;
        }
    }
    sl->start = start;
    sl->end = end;
    sl->next = *pp;
    *pp = sl;
    return sl;
}

/* Doubles a slice's index and places every entry again. */
static bool grow_index(tdm__rt_lagg *la, tdm__rt_lslice *sl)
{
    uint32_t n_slots = sl->n_slots * 2;
    uint32_t *idx = tdm__calloc(n_slots, sizeof *idx);
    if (!idx)
        return false;
    uint32_t shift = sl->shift - 1, mask = n_slots - 1;
    for (uint32_t k = 0; k < sl->n; k++) {
        uint32_t i = (uint32_t)(tdm__rt_lagg_ent(la, sl, k)->h >> shift);
        while (idx[i])
            i = (i + 1) & mask;
        idx[i] = k + 1;
    }
    tdm__free(sl->idx);
    sl->idx = idx;
    sl->n_slots = n_slots;
    sl->shift = shift;
    return true;
}

/* Makes room for one more creation-order item of a single count. */
static bool ord_room(tdm__rt_lslice *sl)
{
    if (sl->n_ord < sl->ord_cap)
        return true;
    uint32_t cap = sl->ord_cap ? sl->ord_cap * 2 : 1024;
    if (cap <= sl->ord_cap)
        return false;
    uint32_t *ord = tdm__realloc(sl->ord, (size_t)cap * sizeof *ord);
    if (!ord)
        return false;
    sl->ord = ord;
    sl->ord_cap = cap;
    return true;
}

/* Makes room for entry sl->n (the entries array grows by doubling). */
static bool ents_room(tdm__rt_lagg *la, tdm__rt_lslice *sl)
{
    if (sl->n == sl->cap) {
        uint32_t cap = sl->cap ? sl->cap * 2 : 32;
        char *ents = tdm__realloc(sl->ents, (size_t)cap * la->stride);
        if (!ents)
            return NULL;
        sl->ents = ents;
        sl->cap = cap;
    }
    return true;
}

/* Adds the entry of a key not in @p sl (see localagg.h). */
tdm__rt_lent *tdm__rt_lagg_insert(tdm__rt_lagg *la, tdm__rt_lslice *sl,
                                  uint64_t h, uint64_t fixed, const char *key,
                                  uint32_t len)
{
    /* The index stays at most half full. */
    if ((sl->n + 1) * 2 > sl->n_slots && !grow_index(la, sl))
        return NULL;
    if (!ents_room(la, sl) || (la->count && !ord_room(sl)))
        return NULL;
    uint64_t kw = fixed;
    uint32_t kl = TDM__SEL_FIXED;
    if (key) {
        if (sl->kused + len > sl->kcap) {
            size_t cap = sl->kcap ? sl->kcap * 2 : 1024;
            while (cap < sl->kused + len)
                cap *= 2;
            char *kb = tdm__realloc(sl->keys, cap);
            if (!kb)
                return NULL;
            sl->keys = kb;
            sl->kcap = cap;
        }
        if (len)
            memcpy(sl->keys + sl->kused, key, len);
        kw = sl->kused;
        kl = len;
        sl->kused += len;
    }
    tdm__rt_lent *e = tdm__rt_lagg_ent(la, sl, sl->n);
    *e = (tdm__rt_lent){.h = h, .key = kw, .key_len = kl};
    /* A count's accumulator is one int64 (a constant size: no call). */
    if (la->count)
        memset(tdm__rt_lagg_acc(e), 0, sizeof(int64_t));
    else
        memset(tdm__rt_lagg_acc(e), 0, la->stride - sizeof *e);
    uint32_t mask = sl->n_slots - 1;
    uint32_t i = (uint32_t)(h >> sl->shift);
    while (sl->idx[i])
        i = (i + 1) & mask;
    if (la->count)
        sl->ord[sl->n_ord++] = RT_ORD_ENT | sl->n;
    sl->idx[i] = ++sl->n;
    return e;
}

/* The count slot of fixed-width key @p key, not in @p cs (@p slots,
 * 2^(64 - @p shift); placement @p scatter): the first empty one of its
 * probe run; *@p dist: how far past its home that is. */
static uint32_t cslot_free(const tdm__rt_cslot *cs, uint32_t slots,
                           uint32_t shift, bool scatter, uint64_t key,
                           uint32_t *dist)
{
    uint32_t mask = slots - 1,
             i = tdm__rt_cslot_home(key, shift, mask, scatter);
    uint32_t d = 0;
    while (cs[i].n) {
        i = (i + 1) & mask;
        d++;
    }
    *dist = d;
    return i;
}

/* Places a slice's count slots again in @p slots slots with placement
 * @p scatter (the first time: 1,024 slots, nothing to place), keys in
 * creation order, which learns their new slots. */
static bool place_cslots(tdm__rt_lslice *sl, uint32_t slots, bool scatter)
{
    if (slots == 0 || slots > RT_ORD_ENT)
        return false; /* slot numbers must stay below RT_ORD_ENT */
    uint32_t shift = 64 - (uint32_t)__builtin_ctz(slots);
    /* Zeroed by writing, not calloc: a large calloc maps fresh pages
     * that the probes' reads map to the zero page, and each first write
     * then costs a copy-on-write fault and a TLB flush on every CPU
     * running the job (seen in perf at parallelism 2). */
    tdm__rt_cslot *cs = tdm__malloc((size_t)slots * sizeof *cs);
    if (!cs)
        return false;
    memset(cs, 0, (size_t)slots * sizeof *cs);
    for (uint32_t k = 0; sl->cs && k < sl->n_ord; k++) {
        if (sl->ord[k] & RT_ORD_ENT)
            continue;
        const tdm__rt_cslot *old = &sl->cs[sl->ord[k]];
        uint32_t d, i = cslot_free(cs, slots, shift, scatter, old->key, &d);
        cs[i] = *old;
        sl->ord[k] = i;
    }
    tdm__free(sl->cs);
    sl->cs = cs;
    sl->cs_slots = slots;
    sl->cs_shift = shift;
    sl->cs_scatter = scatter;
    return true;
}

/* Adds a fixed-width key's count slot (see localagg.h). */
bool tdm__rt_lagg_cinsert(tdm__rt_lagg *la, tdm__rt_lslice *sl, uint64_t fixed)
{
    if (sl->cs_n == 0)
        sl->cs_scatter = la->cs_scatter; /* a new or recycled slice */
    /* The count slots stay at most half full. */
    if ((!sl->cs || (sl->cs_n + 1) * 2 > sl->cs_slots) &&
        !place_cslots(sl, sl->cs ? sl->cs_slots * 2 : 1024, sl->cs_scatter))
        return false;
    if (!ord_room(sl))
        return false;
    uint32_t d, i = cslot_free(sl->cs, sl->cs_slots, sl->cs_shift,
                               sl->cs_scatter, fixed, &d);
    if (d > RT_CS_MAX_PROBE && !sl->cs_scatter) {
        /* Keys pile up: scatter, from this slice on. */
        la->cs_scatter = true;
        if (!place_cslots(sl, sl->cs_slots, true))
            return false;
        i = cslot_free(sl->cs, sl->cs_slots, sl->cs_shift, true, fixed, &d);
    }
    sl->cs[i] = (tdm__rt_cslot){.key = fixed, .n = 1};
    sl->cs_n++;
    sl->ord[sl->n_ord++] = i;
    return true;
}

/* ---- Flushing ---- */

/* Partial rows per message: a flush of many keys goes out in pieces, so
 * that a message is never large and the queue's capacity (items per
 * channel) bounds what waits in it - and so the latency of the
 * watermark behind them.  Pieces grow only for a flush that would
 * otherwise take more than half a queue of them per window subtask, up
 * to PART_CHUNK_MAX: the source would wait on every such flush until the
 * window subtask had merged most of the previous one (NEXMark-W at
 * parallelism 1: 60,000 keys in 15 items of a 16-item queue). */
#define PART_CHUNK 4096
/* The biggest pieces (a flush of millions of keys - NEXMark's V1 stress
 * - would otherwise send pieces of hundreds of thousands of rows, which
 * the pool then keeps, and the first rows would wait for the whole
 * piece). */
#define PART_CHUNK_MAX 16384
/* Flushed slices kept for reuse at most (their tables grown to a
 * slice's keys); more are freed.  As many as can be open: a watermark
 * that closes every open slice (event time ran ahead of it by MAX_OPEN
 * slices, which a fast source with periodic watermarks does all the
 * time) keeps them all, so the next slices neither allocate nor grow
 * their tables again, and the slices made never exceed MAX_OPEN (a
 * new one is made only when none is free). */
#define KEEP_FREE MAX_OPEN
/* Keys looked at ahead of the one flushed, for their count slots. */
#define FLUSH_AHEAD 8

/* Frees a partials message (NULL-safe; see outbox.h). */
void tdm__rt_partials_free(tdm__rt_partials *m)
{
    if (!m)
        return;
    tdm__free(m->ents);
    tdm__free(m->keys);
    tdm__free(m);
}

/* Hands a merged message back to its pool, or frees it when the pool
 * keeps enough (see outbox.h).  @thread any (the consumer's). */
void tdm__rt_partials_release(tdm__rt_partials *m)
{
    if (!m)
        return;
    tdm__rt_ppool *pool = m->pool;
    if (pool) {
        pthread_mutex_lock(&pool->mu);
        bool keep = pool->n_free < pool->keep;
        if (keep) {
            m->next = pool->free;
            pool->free = m;
            pool->n_free++;
        }
        pthread_mutex_unlock(&pool->mu);
        if (keep)
            return;
    }
    tdm__rt_partials_free(m);
}

/* A recycled message of @p la's pool, emptied, or NULL when there is
 * none.  @thread source. */
static tdm__rt_partials *pool_take(tdm__rt_lagg *la)
{
    tdm__rt_ppool *pool = &la->pool;
    pthread_mutex_lock(&pool->mu);
    tdm__rt_partials *m = pool->free;
    if (m) {
        pool->free = m->next;
        pool->n_free--;
    }
    pthread_mutex_unlock(&pool->mu);
    if (m) {
        m->next = NULL;
        m->n = 0;
        m->kused = 0;
    }
    return m;
}

/* Appends the partial row of entry @p e (slice start @p ts, key bytes
 * in @p kbytes; @p count its count, for a single count()) to *@p mp,
 * made on first use with room for @p hint rows.  False on OOM. */
static bool msg_add(tdm__rt_partials **mp, tdm__rt_lagg *la, size_t hint,
                    tdm_time_ms ts, const tdm__rt_lent *e, const char *kbytes,
                    int64_t count)
{
    tdm__rt_partials *m = *mp;
    if (!m) {
        m = *mp = pool_take(la);
        if (!m) {
            m = *mp = tdm__calloc(1, sizeof *m);
            if (!m)
                return false;
            m->stride = sizeof(tdm__rt_pent) + la->acc_size;
            m->acc_size = la->acc_size;
            m->pool = &la->pool;
        }
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? (size_t)m->cap * 2 : hint < 16 ? 16 : hint;
        if (cap > UINT32_MAX)
            return false;
        char *ents = tdm__realloc(m->ents, cap * m->stride);
        if (!ents)
            return false;
        m->ents = ents;
        m->cap = (uint32_t)cap;
    }
    tdm__rt_pent *pe =
        (tdm__rt_pent *)(void *)(m->ents + (size_t)m->n * m->stride);
    memset(pe, 0, sizeof *pe);
    pe->ts = ts;
    pe->key_len = e->key_len;
    pe->key = e->key;
    if (la->count)
        pe->records = (uint64_t)count;
    else
        pe->records = e->n;
    la->folded += (int64_t)pe->records;
    if (e->key_len != TDM__SEL_FIXED) {
        size_t len = e->key_len;
        if (m->kused + len > m->kcap) {
            size_t cap = m->kcap ? m->kcap * 2 : 1024;
            while (cap < m->kused + len)
                cap *= 2;
            char *kb = tdm__realloc(m->keys, cap);
            if (!kb)
                return false;
            m->keys = kb;
            m->kcap = cap;
        }
        if (len)
            memcpy(m->keys + m->kused, kbytes + e->key, len);
        pe->key = m->kused;
        m->kused += len;
    }
    /* A count's accumulator is records, written above; a constant
     * size is a move, not a call. */
    if (la->count)
        memcpy((char *)pe + sizeof *pe, &pe->records, sizeof(int64_t));
    else
        memcpy((char *)pe + sizeof *pe, (const char *)e + sizeof *e,
               la->acc_size);
    m->n++;
    return true;
}

/* Hands message @p m to window subtask @p j of edge @p ed (the
 * consumer frees it, or it is freed here when the run aborts). */
static void send_msg(tdm__rt_src_task *t, tdm__rt_lagg *la,
                     const tdm__rt_edge *ed, int j, tdm__rt_partials *m)
{
    la->sent += m->n;
    tdm__item it = {.kind = TDM__ITEM_PARTIAL,
                    .ch = ed->input * t->run->P + t->index,
                    .fence = m};
    tdm__rt_op_task *to =
        tdm__rt_op_tasks(t->run, tdm__rt_op_index(t->run, ed->op));
    if (!tdm__queue_push(&to[j].q, &it))
        tdm__rt_partials_free(m);
}

/* Sends the slices that watermark @p wm closes (see localagg.h). */
void tdm__rt_lagg_flush(tdm__rt_src_task *t, tdm__rt_lagg *la, tdm_time_ms wm)
{
    tdm__run *run = t->run;
    const tdm__rt_edge *ed = &t->src->edges[la->edge];
    int P = run->P;
    tdm__rt_partials **msg = la->msg; /* all NULL here */
    size_t due = 0;
    for (tdm__rt_lslice *sl = la->open; sl && sl->end - 1 <= wm; sl = sl->next)
        due += la->count ? sl->n_ord : sl->n;
    if (due == 0 && !(la->open && la->open->end - 1 <= wm))
        goto done;
    /* Rows one window subtask may get (keys spread about evenly), and
     * the piece size that sends them in half a queue of items. */
    size_t per = due / (size_t)P + due / (size_t)(4 * P) + 16;
    size_t items = run->qcap / 2 ? (size_t)run->qcap / 2 : 1;
    size_t chunk = (per + items - 1) / items;
    if (chunk < PART_CHUNK)
        chunk = PART_CHUNK;
    if (chunk > PART_CHUNK_MAX)
        chunk = PART_CHUNK_MAX;
    size_t hint = per < chunk ? per : chunk;
    while (la->open && la->open->end - 1 <= wm) {
        tdm__rt_lslice *sl = la->open;
        const char *kbytes = sl->keys ? sl->keys : "";
        /* A single count's keys in creation order (slots and entries),
         * or the entries. */
        const uint32_t n_keys = la->count ? sl->n_ord : sl->n;
        for (uint32_t k = 0; k < n_keys; k++) {
            const tdm__rt_lent *e;
            tdm__rt_lent slot_key;
            int64_t count = 0;
            if (!la->count) {
                e = tdm__rt_lagg_ent(la, sl, k);
            } else if (sl->ord[k] & RT_ORD_ENT) {
                e = tdm__rt_lagg_ent(la, sl, sl->ord[k] & ~RT_ORD_ENT);
                memcpy(&count, tdm__rt_lagg_acc((tdm__rt_lent *)e),
                       sizeof count);
            } else {
                /* A count slot, emptied as it is read (the slice's reset
                 * leaves the slots alone). */
                if (k + FLUSH_AHEAD < n_keys &&
                    !(sl->ord[k + FLUSH_AHEAD] & RT_ORD_ENT))
                    __builtin_prefetch(&sl->cs[sl->ord[k + FLUSH_AHEAD]]);
                tdm__rt_cslot *cs = &sl->cs[sl->ord[k]];
                slot_key =
                    (tdm__rt_lent){.key = cs->key, .key_len = TDM__SEL_FIXED};
                e = &slot_key;
                count = cs->n;
                cs->n = 0;
                cs->key = 0;
            }
            int j = 0;
            if (P > 1) {
                /* The key's subtask, as route_edge finds it for rows. */
                uint64_t h = e->key_len == TDM__SEL_FIXED
                                 ? tdm__key_fixed_hash(e->key)
                                 : tdm__keys_hash(kbytes + e->key, e->key_len);
                j = run->owner[tdm__key_group(h, run->key_groups)];
            }
            if (!msg_add(&msg[j], la, hint, sl->start, e, kbytes, count))
                goto nomem;
            if (msg[j]->n == chunk) {
                send_msg(t, la, ed, j, msg[j]);
                msg[j] = NULL;
            }
        }
        la->open = sl->next;
        int n_free = 0;
        for (const tdm__rt_lslice *f = la->free; f; f = f->next)
            n_free++;
        if (n_free < KEEP_FREE) {
            slice_reset(sl);
            sl->next = la->free;
            la->free = sl;
        } else {
            slice_free(sl);
        }
    }
    tdm__rt_lagg_set_cur(la, NULL);
    for (int j = 0; j < P; j++) {
        if (!msg[j])
            continue;
        send_msg(t, la, ed, j, msg[j]);
        msg[j] = NULL; /* the consumer's now */
    }
done:
    return;
nomem:
    for (int j = 0; j < P; j++) {
        tdm__rt_partials_free(msg[j]);
        msg[j] = NULL;
    }
    tdm__rt_lagg_set_cur(la, NULL);
    tdm__rt_fail(run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
                 t->src->node->name);
}

/* ---- Setup ---- */

/* Creates the local aggregate of subtask @p t for edge @p e. */
tdm_err tdm__rt_lagg_new(tdm__rt_src_task *t, int e, tdm__rt_lagg **out)
{
    const tdm__rt_edge *ed = &t->src->edges[e];
    const tdm__rt_op *op = ed->op;
    *out = NULL;
    tdm__rt_lagg *la = tdm__calloc(1, sizeof *la);
    if (!la)
        goto fail;
    if (pthread_mutex_init(&la->pool.mu, NULL) != 0)
        goto fail;
    la->pool_ok = true;
    la->msg = tdm__calloc((size_t)t->run->P, sizeof *la->msg);
    if (!la->msg)
        goto fail;
    /* What can be in flight at once: a full channel and the message
     * being merged, per consumer subtask. */
    la->pool.keep = (t->run->qcap + 1) * t->run->P;
    la->t = t;
    la->edge = e;
    la->size = op->wsize;
    la->slide = op->wtype == 1 ? op->wslide : op->wsize;
    la->woff = op->woffset;
    la->g = op->wtype == 1 ? tdm__time_gcd(op->wsize, op->wslide) : op->wsize;
    la->off = op->woffset % la->g;
    la->gaps = op->wtype == 1 && op->wslide > op->wsize;
    la->count = op->fast_count;
    if (la->count) {
        la->acc_size = sizeof(int64_t);
    } else {
        if (tdm__rowagg_new(op->specs, op->n_aggs, op->agg_in_types,
                            op->n_inputs, op->agg_idx, &la->ra) != TDM_OK)
            goto fail;
        la->input = ed->input;
        la->acc_size = tdm__rowagg_acc_size(la->ra);
    }
    la->stride = (sizeof(tdm__rt_lent) + la->acc_size + 7) & ~(size_t)7;
    *out = la;
    return TDM_OK;
fail:
    tdm__rt_lagg_free(la);
    return TDM_ERR_NOMEM;
}

/* Frees a local aggregate and its slices (NULL is fine). */
void tdm__rt_lagg_free(tdm__rt_lagg *la)
{
    if (!la)
        return;
    for (tdm__rt_lslice *sl = la->open, *nx; sl; sl = nx) {
        nx = sl->next;
        slice_free(sl);
    }
    for (tdm__rt_lslice *sl = la->free, *nx; sl; sl = nx) {
        nx = sl->next;
        slice_free(sl);
    }
    tdm__free(la->msg);
    if (la->pool_ok) {
        for (tdm__rt_partials *m = la->pool.free, *nx; m; m = nx) {
            nx = m->next;
            tdm__rt_partials_free(m);
        }
        pthread_mutex_destroy(&la->pool.mu);
    }
    tdm__rowagg_destroy(la->ra);
    tdm__free(la->kb.p);
    tdm__free(la);
}
