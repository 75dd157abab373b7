/* SPDX-License-Identifier: MIT */
/* join_window.c - the window join (Flink's JoinedStreams: both inputs
 * keyed alike, an event-time tumbling or sliding assigner, the default
 * event-time trigger, allowed lateness 0).
 *
 * Each (key, window) keeps the records of both sides.  When the watermark
 * reaches the window's maxTimestamp (end - 1) its one timer fires: every
 * (left, right) pair of the window goes out as a JOIN event stamped
 * end - 1, then the window is dropped.  A window whose end - 1 is at or
 * below the watermark is late and takes no records; a record none of
 * whose windows take it is late (window-semantics.md R2.1, R2.2, R4.4).
 */
#include <string.h>

#include "window/join.h"
#include "window/win.h"

/* One buffered record of a window (the key lives in the key table). */
typedef struct wjrec {
    tdm_time_ms ts;
    double value;
    void *payload;
    size_t payload_len;
} wjrec;

/* The kv value of (key, ns = (start, end)): the records of each side in
 * arrival order. */
typedef struct wjwin {
    wjrec *r[2];
    uint32_t n[2], cap[2];
} wjwin;

/* ---- Window contents ---- */

/* Appends a copy of @p rec to side @p side of @p w.  Returns false on OOM
 * (nothing changed). */
static bool win_append(wjwin *w, int side, const tdm_record *rec)
{
    void *payload = NULL;
    if (rec->payload && rec->payload_len > 0) {
        payload = tdm__memdup(rec->payload, rec->payload_len);
        if (!payload)
            return false;
    }
    if (w->n[side] == w->cap[side]) {
        uint32_t ncap = w->cap[side] ? w->cap[side] * 2 : 2;
        wjrec *nr = tdm__realloc(w->r[side], ncap * sizeof *nr);
        if (!nr) {
            tdm__free(payload);
            return false;
        }
        w->r[side] = nr;
        w->cap[side] = ncap;
    }
    wjrec *d = &w->r[side][w->n[side]++];
    d->ts = rec->ts;
    d->value = rec->value;
    d->payload = payload;
    d->payload_len = payload ? rec->payload_len : 0;
    return true;
}

/* Frees what a window holds; returns the number of records it had. */
static int64_t win_clear(wjwin *w)
{
    int64_t n = 0;
    for (int s = 0; s < 2; s++) {
        for (uint32_t i = 0; i < w->n[s]; i++)
            tdm__free(w->r[s][i].payload);
        tdm__free(w->r[s]);
        n += w->n[s];
        w->r[s] = NULL;
        w->n[s] = w->cap[s] = 0;
    }
    return n;
}

/* Removes the window slot (contents already cleared), its timer and its
 * key reference. */
static void win_drop(tdm_joinop *op, uint32_t key, tdm__ns ns)
{
    tdm__timers_del(op->timers, ns.b - 1, key, ns);
    tdm__kv_remove(op->wins, key, ns);
    tdm__keys_unref(op->keys, key);
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
                         a->kind == TDM__ASG_SESSION ? "session" : "global");
    if (a->proc_time)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "asg must use event time for a window join (got "
                         "a processing-time assigner)");
    op->wins = tdm__kv_new(sizeof(wjwin));
    if (!op->wins)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "out of memory creating the window join");
    return TDM_OK;
}

/* Takes the record back out of the first @p upto windows of its
 * timestamp that are not late (it is the last record of its side in
 * each), dropping windows left empty.  Undoes a push that failed half
 * way through a sliding assignment. */
static void unwind(tdm_joinop *op, int side, uint32_t key, tdm_time_ms ts,
                   int upto)
{
    tdm__assign_iter it;
    tdm_time_ms start, end;
    int i = 0;
    tdm__assign_begin(op->asg, ts, &it);
    while (i < upto && tdm__assign_next(&it, &start, &end)) {
        if (end - 1 <= op->wm)
            continue;
        i++;
        tdm__ns ns = {start, end};
        wjwin *w = tdm__kv_get(op->wins, key, ns);
        if (!w || w->n[side] == 0)
            continue;
        tdm__free(w->r[side][--w->n[side]].payload);
        op->buffered--;
        if (w->n[0] == 0 && w->n[1] == 0) {
            win_clear(w);
            win_drop(op, key, ns);
        }
    }
}

/* Adds the record to each of its windows that is not late (R2 steps 2-6
 * with the event-time trigger: one timer per window at end - 1, which is
 * also its cleanup time).  A record taken by no window is late. */
tdm_err tdm__join_window_push(tdm_joinop *op, int side, const tdm_record *rec)
{
    tdm__assign_iter it;
    tdm_time_ms start, end;

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

    uint32_t key;
    if (tdm__keys_intern(op->keys, rec->key, rec->key_len, &key) != TDM_OK)
        return TDM_ERR_NOMEM;
    int added = 0;
    tdm__assign_begin(op->asg, rec->ts, &it);
    while (tdm__assign_next(&it, &start, &end)) {
        /* A window is late when its maxTimestamp is at or below the
         * watermark (cleanup time with lateness 0, R4.4). */
        if (end - 1 <= op->wm)
            continue;
        tdm__ns ns = {start, end};
        bool created;
        wjwin *w = tdm__kv_upsert(op->wins, key, ns, &created);
        if (!w)
            goto fail;
        if (created) {
            tdm__keys_ref(op->keys, key);
            if (tdm__timers_add(op->timers, end - 1, key, ns) != TDM_OK) {
                win_drop(op, key, ns);
                goto fail;
            }
        }
        if (!win_append(w, side, rec)) {
            if (created)
                win_drop(op, key, ns);
            goto fail;
        }
        op->buffered++;
        added++;
    }
    tdm__keys_unref(op->keys, key);
    return TDM_OK;

fail:
    unwind(op, side, key, rec->ts, added);
    tdm__keys_unref(op->keys, key);
    return TDM_ERR_NOMEM;
}

/* The window's timer at end - 1: every left record meets every right
 * record of the window; then the window's state goes. */
void tdm__join_window_fire(tdm_joinop *op, const tdm__timer *t)
{
    wjwin *w = tdm__kv_get(op->wins, t->key, t->ns);
    if (!w)
        return;
    size_t klen;
    const char *kbytes = tdm__keys_get(op->keys, t->key, &klen);
    tdm_record l = {.key = kbytes, .key_len = klen};
    tdm_record r = {.key = kbytes, .key_len = klen};
    for (uint32_t i = 0; i < w->n[0]; i++) {
        const wjrec *a = &w->r[0][i];
        l.ts = a->ts;
        l.value = a->value;
        l.payload = a->payload;
        l.payload_len = a->payload_len;
        for (uint32_t j = 0; j < w->n[1]; j++) {
            const wjrec *b = &w->r[1][j];
            r.ts = b->ts;
            r.value = b->value;
            r.payload = b->payload;
            r.payload_len = b->payload_len;
            tdm__join_emit_pair(op, &l, &r, t->time, kbytes, klen, 1, t->ns.a,
                                t->ns.b);
        }
    }
    op->buffered -= win_clear(w);
    /* The timer was popped already; deleting it again is a no-op. */
    win_drop(op, t->key, t->ns);
}

/* Frees one window's records (tdm__kv_each callback). */
static void free_win(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    win_clear(slot);
}

/* Frees every window and the store; key references go with the key
 * table, which the caller destroys. */
void tdm__join_window_free(tdm_joinop *op)
{
    if (!op->wins)
        return;
    tdm__kv_each(op->wins, free_win, NULL);
    tdm__kv_destroy(op->wins);
    op->wins = NULL;
    op->buffered = 0;
}
