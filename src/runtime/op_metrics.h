/* SPDX-License-Identifier: MIT */
/* op_metrics.h - the published metrics of a window or join subtask: its
 * plain counters (counted by the input and emit paths, published after
 * each group of items, and added to the job's counters as deltas), the
 * result latency histogram, the ring of late samples, and the debug ring
 * of watermark advances.
 *
 * Invariant: the job's counters get each delta once (j_* is what they
 * were given); the published figures have a single writer, the
 * subtask's thread; the late ring moves only under lmx.
 * State: its own struct, tdm__op_metrics_state (t->met); snapshots
 * (metrics.c) read it through tdm__op_metrics_pub and
 * tdm__op_metrics_late_lock only.
 * Hooks: after_group (tdm__op_metrics_publish), on_end
 * (tdm__op_metrics_on_end: the final latency figures).
 */
#ifndef TDM_RT_OP_METRICS_H
#define TDM_RT_OP_METRICS_H

#include <pthread.h>

#include "core/hist.h"
#include "runtime/metrics.h"
#include "runtime/outbox.h"

typedef struct tdm__rt_op_task tdm__rt_op_task;

/* An operator subtask's metrics. */
typedef struct tdm__op_metrics_state {
    /* Plain counters of this thread, published to m (and as deltas to
     * the job's counters) after each group of items. */
    int64_t c_in, c_out, c_late_side, c_panes, c_late_panes, c_regress;
    int64_t j_out, j_late_side, j_late_panes, j_regress; /* published */
    int64_t late_dropped_seen;
    tdm__rt_op_metrics m;
    /* Late samples: a ring guarded by lmx (taken per late record). */
    pthread_mutex_t lmx;
    bool lmx_ok;
    tdm__rt_late *late;
    int late_n, late_head, late_budget;
    tdm_time_ms *dbg_wm, *dbg_at; /* debug: ring of watermark advances */
    int dbg_n, dbg_head;
    /* Result latency (docs/metrics.md, resultLatencyP50): when the
     * watermark item being handled left its source (tdm__mono_us; 0:
     * unknown), the clock read for the rows it fires (re-read every
     * RT_LAT_EVERY rows), and the histogram of on-time rows' latencies
     * in microseconds; lat_pub: when p50/p99 were last published. */
    int64_t wm_at_us, lat_now_us;
    uint32_t lat_left;
    tdm__hist lat;
    tdm_time_ms lat_pub;
} tdm__op_metrics_state;

/* Zeroes the published metrics (watermarks at "none"). */
void tdm__op_metrics_init(tdm__rt_op_task *t);

/* The published figures of @p t (snapshots read them). */
const tdm__rt_op_metrics *tdm__op_metrics_pub(const tdm__rt_op_task *t);

/* Locks @p t's late sample ring; how many samples it holds, *ring and
 * *head set (the oldest is (head - n) mod RT_LATE_RING).
 * tdm__op_metrics_late_unlock ends the read. */
int tdm__op_metrics_late_lock(tdm__rt_op_task *t, const tdm__rt_late **ring,
                              int *head);
void tdm__op_metrics_late_unlock(tdm__rt_op_task *t);

/* Hook after a group of items: the counters published (totals to the
 * subtask's metrics, deltas to the job's counters), state sizes, the
 * latency quantiles about once a second. */
void tdm__op_metrics_publish(tdm__rt_op_task *t);

/* Hook at the end: the final latency quantiles, and the histogram added
 * to the job's. */
void tdm__op_metrics_on_end(tdm__rt_op_task *t);

/* Frees the metrics state (a half-built one too). */
void tdm__op_metrics_free(tdm__op_metrics_state *s);

#endif /* TDM_RT_OP_METRICS_H */
