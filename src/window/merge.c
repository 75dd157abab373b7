/* SPDX-License-Identifier: MIT */
/* merge.c - session windows: adding a window to a key's set of sessions
 * and merging the ones it overlaps or touches (rulebook R5, Flink's
 * MergingWindowSet.addWindow and the WindowOperator merge callback).
 *
 * A key's sessions are its window slots in the kv store.  Each slot's
 * namespace is its state window (the original window whose storage was
 * kept); its start/end fields are the actual, possibly merged, window.
 */
#include <stdlib.h>
#include <string.h>

#include "window/win.h"

struct gather {
    tdm_winop *op;
    size_t n;
    bool oom;
};

static void gather_one(void *ud, tdm__ns ns, void *slot)
{
    struct gather *g = ud;
    (void)ns;
    g->op->mlist[g->n++] = slot;
}

static void count_one(void *ud, tdm__ns ns, void *slot)
{
    (void)ns;
    (void)slot;
    ((struct gather *)ud)->n++;
}

/* Fills op->mlist with the key's window slots; returns their number, or
 * (size_t)-1 on OOM.  One spare entry is always left. */
static size_t gather_key(tdm_winop *op, uint32_t key)
{
    struct gather g = {op, 0, false};
    tdm__kv_each_of_key(op->wins, key, count_one, &g);
    size_t need = g.n + 1;
    if (need > op->mlist_cap) {
        size_t ncap = op->mlist_cap ? op->mlist_cap : 8;
        while (ncap < need)
            ncap *= 2;
        tdm__win_slot **nl = tdm__realloc(op->mlist, ncap * sizeof *nl);
        if (!nl)
            return (size_t)-1;
        op->mlist = nl;
        void **ns = tdm__realloc(op->mstates, ncap * sizeof *ns);
        if (!ns)
            return (size_t)-1;
        op->mstates = ns;
        op->mlist_cap = ncap;
    }
    g.n = 0;
    tdm__kv_each_of_key(op->wins, key, gather_one, &g);
    return g.n;
}

struct find {
    tdm_time_ms start, end;
    tdm__win_slot *found;
};

static void find_one(void *ud, tdm__ns ns, void *slot)
{
    struct find *f = ud;
    tdm__win_slot *s = slot;
    (void)ns;
    if (s->start == f->start && s->end == f->end)
        f->found = s;
}

/* The state slot whose actual window is [start, end), by a scan
 * of the key's sessions. */
tdm__win_slot *tdm__win_merge_find(tdm_winop *op, uint32_t key,
                                   tdm_time_ms start, tdm_time_ms end)
{
    struct find f = {start, end, NULL};
    tdm__kv_each_of_key(op->wins, key, find_one, &f);
    return f.found;
}

static int cmp_start(const void *x, const void *y)
{
    const tdm__win_slot *a = *(tdm__win_slot *const *)x;
    const tdm__win_slot *b = *(tdm__win_slot *const *)y;
    return (a->start > b->start) - (a->start < b->start);
}

/* Deletes the cleanup timer of window [start, end) (Flink's
 * deleteCleanupTimer; never registered at TDM_TIME_MAX). */
static void delete_cleanup(tdm_winop *op, uint32_t key, tdm_time_ms start,
                           tdm_time_ms end)
{
    tdm_time_ms c = tdm__win_cleanup(op, end);
    if (c == TDM_TIME_MAX)
        return;
    tdm_trigger_ctx ctx = {op, key, start, end, NULL, NULL};
    tdm__win_timer_del(&ctx, op->event_time ? TDM__EVENT : TDM__PROC, c);
}

/* MergingWindowSet.addWindow plus the operator's merge callback;
 * see win.h for the contract. */
tdm_err tdm__win_merge_add(tdm_winop *op, uint32_t key, tdm_time_ms start,
                           tdm_time_ms end, tdm__win_slot **slot)
{
    *slot = NULL;
    size_t n = gather_key(op, key);
    if (n == (size_t)-1)
        return TDM_ERR_NOMEM;
    tdm__win_slot **l = op->mlist;
    qsort(l, n, sizeof *l, cmp_start);

    /* TimeWindow.mergeWindows over the sorted sessions plus the new one:
     * a window joins the running group when its start <= the group's
     * end (touching windows merge, R5.1).  Sessions in state never
     * intersect each other, so only the group holding the new window can
     * have more than one member: find it.  first/last index the existing
     * members; the new window sorts after equal starts. */
    size_t pos = 0;
    while (pos < n && l[pos]->start <= start)
        pos++;
    tdm_time_ms gs = start, ge = end;
    size_t first = pos, last = pos; /* members are l[first .. last-1] */
    /* Backwards: earlier sessions that reach the group's start.  Each
     * earlier one ends before the next earlier one starts, so extending
     * stops at the first that does not reach. */
    while (first > 0 && l[first - 1]->end >= gs) {
        first--;
        if (l[first]->start < gs)
            gs = l[first]->start;
        if (l[first]->end > ge)
            ge = l[first]->end;
    }
    /* Forwards: later sessions that start at or before the group's end. */
    while (last < n && l[last]->start <= ge) {
        if (l[last]->end > ge)
            ge = l[last]->end;
        last++;
    }
    size_t m = last - first;

    if (tdm__win_is_late(op, ge))
        return TDM_OK; /* R5.3: lateness is judged on the merged window */
    if (m == 0) {
        /* A new session of its own. */
        tdm__ns ns = {start, end};
        *slot = tdm__win_slot_new(op, key, ns, start, end);
        return *slot ? TDM_OK : TDM_ERR_NOMEM;
    }
    if (m == 1 && l[first]->start == gs && l[first]->end == ge) {
        /* Inside an existing session: no merge callback (R5.2). */
        *slot = l[first];
        return TDM_OK;
    }

    /* A real merge.  The first member's storage is kept (Flink keeps an
     * arbitrary one; its namespace is not observable).  Contents move
     * first, so that an allocation failure leaves every window intact
     * apart from contents already folded into the kept one. */
    tdm__win_slot *kept = l[first];
    for (size_t i = first + 1; i < last; i++) {
        tdm_err err = tdm__agg_merge(op, kept, l[i]);
        if (err != TDM_OK)
            return err;
        if (l[i]->panes > kept->panes)
            kept->panes = l[i]->panes;
        kept->flags |= l[i]->flags & (TDM__W_ONTIME | TDM__W_UNPURGED);
    }
    tdm_time_ms kept_start = kept->start, kept_end = kept->end;
    if (op->tsnap)
        memcpy(op->tsnap, tdm__win_tstate(op, kept), op->tstate_size);
    kept->start = gs;
    kept->end = ge;
    kept->flags &= ~TDM__W_TIMER_FLAGS;

    /* trigger.onMerge on the merged window with the other states. */
    size_t nm = 0;
    for (size_t i = first + 1; i < last; i++)
        op->mstates[nm++] = tdm__win_tstate(op, l[i]);
    tdm_trigger_ctx ctx = {op, key, gs, ge, kept, tdm__win_tstate(op, kept)};
    tdm__trigger_on_merge(op->trg, &ctx, op->mstates, nm);

    /* Then, per merged window: trigger.clear and deleteCleanupTimer.  The
     * kept window's clear sees a copy of its state from before the
     * merge; built-in triggers treat the state as merged away. */
    for (size_t i = first; i < last; i++) {
        tdm_trigger_ctx c = {op, key, 0, 0, NULL, NULL};
        if (i == first) {
            c.start = kept_start;
            c.end = kept_end;
            c.state = op->tsnap;
        } else {
            c.start = l[i]->start;
            c.end = l[i]->end;
            c.state = tdm__win_tstate(op, l[i]);
        }
        tdm__trigger_clear(op->trg, &c, true);
        delete_cleanup(op, key, c.start, c.end);
    }
    for (size_t i = first + 1; i < last; i++)
        tdm__win_slot_free(op, l[i]);
    *slot = kept;
    return TDM_OK;
}
