/* SPDX-License-Identifier: MIT */
/* src_metrics.h - the source subtask's published metrics component:
 * setting them up, the per-batch publication of the partitions'
 * figures and the event-lag quantiles, the debug line per watermark,
 * and the branch-free lag bucket the scan counts with (inline: it runs
 * per out-of-order row).
 *
 * Invariant: every published figure starts at its "none" value
 * (watermarks TDM_TIME_MIN, lags -1) before a snapshot can see the
 * subtask, and the subtask's output watermark is published after its
 * splits' (release), so a snapshot never sees it ahead of them.
 * State: t->lag, t->lag_max, t->lag_seen, t->lag_next, t->sweep,
 * t->sweep_next, t->n_mt (the subtask's own), and what snapshots read
 * (t->m, t->parts).  Used by task_source.c (source subtasks) and outbox.c
 * (derived subtasks, tdm__rt_emit_init).
 */
#ifndef TDM_RT_SRC_METRICS_H
#define TDM_RT_SRC_METRICS_H

#include "runtime/task_source.h"

/* Zeroes the published metrics of @p t: watermarks at "none", no
 * record yet, no lag yet. */
void tdm__src_metrics_init(tdm__rt_src_task *t);

/* Debug log (log.level debug): one line per watermark @p wm the subtask
 * emits, naming the partition with the lowest watermark. */
void tdm__src_metrics_debug_wm(tdm__rt_src_task *t, tdm_time_ms wm);
/* Publishes the event lag quantiles of the subtask's histogram and the
 * maximum (-1 while no record had a lag). */
void tdm__src_metrics_publish_lag(tdm__rt_src_task *t);
/* Publishes the watermark (and alignment pause) of the partitions this
 * batch touched, or of every partition when the reader emitted or
 * @p all is set or about every 200 ms; then, about once per second, the
 * event lag quantiles. */
void tdm__src_metrics_publish(tdm__rt_src_task *t, bool all);

/* tdm__hist_bucket without its branch: whether a lag is below 256 (its
 * own bucket) or not is a coin toss for out-of-order data, and a
 * mispredicted branch per record costs more than computing both
 * answers and selecting one. */
static inline int tdm__src_lag_bucket(int64_t v)
{
    uint64_t u = (uint64_t)v;
    int x = 63 - __builtin_clzll(u | 1) - TDM__HIST_SUB_BITS;
    int big = -(x > 0); /* all ones when v >= 256 (a compare, no jump) */
    int b = TDM__HIST_EXACT + (x - 1) * (1 << TDM__HIST_SUB_BITS) +
            (int)(u >> (x & big)) - (1 << TDM__HIST_SUB_BITS);
    return (b & big) | ((int)u & ~big);
}

#endif /* TDM_RT_SRC_METRICS_H */
