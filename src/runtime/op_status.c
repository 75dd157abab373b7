/* SPDX-License-Identifier: MIT */
/* op_status.c - a window subtask's side of tdm_job_window_status
 * (op_status.h): the answer to a posted question, between two groups of
 * items, and the final one as the subtask stops.
 *
 * Invariant: answers are written under the run record's lock (mmu), by the
 * subtask's thread only.
 * State: t->status (tdm__op_status_state), its own.  Used by task_op.c
 * (its hooks); metrics.c sets t->status.ws.
 */
#include <string.h>

#include "runtime/op_status.h"
#include "runtime/task_op.h"

/* Answers the posted question on the subtask's thread: the operator's
 * state of the window, the firing memory, the channels. */
void tdm__rt_status_serve(tdm__rt_op_task *t)
{
    tdm__run_record *rec = t->run->rec;
    tdm__rt_wstat *st = t->status.ws;
    pthread_mutex_lock(&rec->mmu);
    atomic_store_explicit(&st->req, 0, memory_order_relaxed);
    if (st->asked && !st->answered) {
        tdm_window_status *a = &st->ans;
        const tdm__rt_wvertex *v = NULL;
        for (int i = 0; rec->warea && i < rec->warea->n; i++)
            if (rec->warea->v[i].st <= st &&
                st < rec->warea->v[i].st + rec->warea->P)
                v = &rec->warea->v[i];
        memset(a, 0, sizeof *a);
        a->subtask = t->index;
        a->watermark = t->win->wm;
        if (v)
            tdm__met_window_times(v, st->end, &a->max_ts, &a->cleanup);
        tdm__winop_probe(t->win, st->key, st->key_len, st->start, st->end,
                         &a->has_state, &a->elements);
        if (!a->has_state)
            a->elements = 0;
        /* The operator's own lateness, and a window closed before a live
         * raise (L3, winop_lateness.c): it accepts nothing any more, as
         * if cleaned up at the watermark. */
        if (v && v->event_time && !v->global)
            a->cleanup = tdm__time_add_sat(a->max_ts, t->win->lateness);
        if (v && !a->has_state && tdm__win_closed(t->win, st->end) &&
            a->cleanup > a->watermark)
            a->cleanup = a->watermark;
        tdm_time_ms fwm = TDM_TIME_MIN;
        a->fired = tdm__rt_fired_find(
            &st->fired,
            tdm__rt_fired_fp(st->key, st->key_len, st->start, st->end), &fwm);
        a->fired_wm = a->fired ? fwm : TDM_TIME_MIN;
        a->holding_channel = tdm__rt_holding_channel(t);
        a->holding_wm = a->holding_channel >= 0 ? t->ch_wm[a->holding_channel]
                                                : TDM_TIME_MIN;
        for (int ch = 0; ch < t->op->n_channels; ch++)
            a->idle_channels += t->ch_idle[ch] && !t->ch_ended[ch];
        a->running = 1;
        st->answered = true;
        pthread_cond_broadcast(&st->cv);
    }
    pthread_mutex_unlock(&rec->mmu);
}

/* The subtask stops: a question already posted is answered from the
 * operator (still there), later ones from what it leaves. */
void tdm__rt_status_close(tdm__rt_op_task *t)
{
    tdm__run_record *rec = t->run->rec;
    tdm__rt_status_serve(t);
    pthread_mutex_lock(&rec->mmu);
    t->status.ws->final_wm = t->win->wm;
    t->status.ws->ended = t->win->ended;
    t->status.ws->done = true;
    pthread_cond_broadcast(&t->status.ws->cv);
    pthread_mutex_unlock(&rec->mmu);
}

/* Hook after a group: a question about a window is answered between
 * two groups of items. */
void tdm__op_status_after_group(tdm__rt_op_task *t)
{
    if (t->status.ws &&
        atomic_load_explicit(&t->status.ws->req, memory_order_relaxed))
        tdm__rt_status_serve(t);
}

/* Hook at the end: the last answer and the final watermark. */
void tdm__op_status_on_end(tdm__rt_op_task *t)
{
    if (t->status.ws)
        tdm__rt_status_close(t);
}
