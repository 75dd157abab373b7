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
 * State: its own struct, tdm__src_metrics_state (t->met): the lag
 * histogram and its sums, the batch sequence, the touched list, the hot
 * per-partition figures and the sweep clock (the subtask's own), and
 * what snapshots read (m, parts under mx; tdm__src_metrics_pub and
 * tdm__src_metrics_parts_lock are their way in).
 * Hooks: after_tick (tdm__src_metrics_publish), on_end (the final
 * values).  Used by task_source.c (source subtasks), outbox.c (derived
 * subtasks, tdm__rt_emit_init) and metrics.c (snapshots).
 */
#ifndef TDM_RT_SRC_METRICS_H
#define TDM_RT_SRC_METRICS_H

#include <pthread.h>

#include "core/hist.h"
#include "runtime/metrics.h"
#include "runtime/outbox.h"

/* A source subtask's metrics.  parts has part_cap entries, the first
 * n_pub of them visible to snapshots; mx guards parts and n_pub against
 * snapshots while the array grows.  The fields the scan uses per row
 * (hot, mtouched, lag) come first, together. */
typedef struct tdm__src_metrics_state {
    tdm__rt_phot *hot; /* part_cap entries, the source thread's own */
    int *mtouched;     /* partitions with records in this batch (the
                          generator's one call per partition and batch,
                          and the metrics published) */
    int n_mt;          /* entries of mtouched */
    uint32_t seq;      /* batch sequence (tdm__rt_part.stamp) */
    tdm__hist lag;     /* event lag of the sampled batches' records
                          (RT_LAG_EXACT_BATCHES, then 1 in RT_LAG_EVERY) */
    uint64_t lag_max;  /* largest event lag of a sampled record */
    uint64_t lag_seen; /* records with an event lag, sampled or not */
    bool lag_ok;
    tdm_time_ms lag_next;   /* next publication of the quantiles */
    tdm_time_ms sweep_next; /* next refresh of every split watermark */
    pthread_mutex_t mx;
    bool mx_ok;
    tdm__rt_part *parts;
    int n_pub;
    tdm__rt_src_metrics m;
} tdm__src_metrics_state;

/* The published figures of @p t (snapshots read them). */
const tdm__rt_src_metrics *tdm__src_metrics_pub(const tdm__rt_src_task *t);

/* Locks @p t's published partitions against their growth and returns
 * how many a snapshot may read, *parts set to the array (NULL: none).
 * tdm__src_metrics_parts_unlock ends the read. */
int tdm__src_metrics_parts_lock(tdm__rt_src_task *t,
                                const tdm__rt_part **parts);
void tdm__src_metrics_parts_unlock(tdm__rt_src_task *t);

/* The source-wide number of local split @p l of @p t (a published
 * partition; l < t->n_parts). */
int tdm__src_metrics_part_global(const tdm__rt_src_task *t, int64_t l);

/* Sets up what tdm__src_metrics_init cannot: the lock and the lag
 * histogram.  TDM_OK or TDM_ERR_NOMEM (tdm__src_metrics_fini frees
 * either way). */
tdm_err tdm__src_metrics_open(tdm__rt_src_task *t);

/* Frees the metrics state (a half-built one too). */
void tdm__src_metrics_fini(tdm__rt_src_task *t);

/* Hook when split @p p finished: published so. */
void tdm__src_metrics_split_finished(tdm__rt_src_task *t, int p);

/* Hook at the end: the final values, every split's watermark and the
 * lag quantiles (the clock read anew). */
void tdm__src_metrics_on_end(tdm__rt_src_task *t);

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

/* Grows this component's per-split arrays from @p old to @p cap entries
 * (the new ones initialised); TDM_OK or TDM_ERR_NOMEM, the arrays then
 * still valid at their old size (src_parts.c's reserve).  The published array
 * moves under the metrics lock, so that snapshots never read it mid-move. */
tdm_err tdm__src_metrics_grow(tdm__rt_src_task *t, int old, int cap);

#endif /* TDM_RT_SRC_METRICS_H */
