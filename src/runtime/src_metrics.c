/* SPDX-License-Identifier: MIT */
/* src_metrics.c - a source subtask's published metrics: their initial
 * "none" values.  The figures themselves (rt_src_metrics, rt_part) are
 * read by snapshots (metrics.c) under the rules of metrics.h; this file
 * only writes them from the subtask's own thread, or before it starts.
 */
#include "runtime/src_metrics.h"

/* Zeroes the published metrics: watermarks at "none", no record yet,
 * no lag yet. */
void tdm__src_metrics_init(rt_src_task *t)
{
    rt_src_metrics *m = &t->m;
    atomic_init(&m->in, 0);
    atomic_init(&m->out, 0);
    atomic_init(&m->bad, 0);
    atomic_init(&m->guard, 0);
    atomic_init(&m->dead, 0);
    atomic_init(&m->bp, 0);
    atomic_init(&m->dup, 0);
    atomic_init(&m->wm_out, TDM_TIME_MIN);
    atomic_init(&m->idle, 0);
    atomic_init(&m->last_at, TDM_TIME_MIN);
    atomic_init(&m->max_ts, TDM_TIME_MIN);
    atomic_init(&m->unit, 0);
    for (int i = 0; i < 4; i++)
        atomic_init(&m->lag[i], -1);
    t->wm_out = TDM_TIME_MIN;
    t->lag_next = TDM_TIME_MIN;
    t->sweep_next = TDM_TIME_MIN;
}
