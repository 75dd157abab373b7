/* SPDX-License-Identifier: MIT */
/* src_metrics.h - the source subtask's published metrics component:
 * setting them up, and the per-batch publication of the partitions'
 * figures and the event-lag quantiles (src_metrics.c).
 *
 * Invariant: every published figure starts at its "none" value
 * (watermarks TDM_TIME_MIN, lags -1) before a snapshot can see the
 * subtask.  Used by task_source.c (source subtasks) and outbox.c
 * (derived subtasks, rt_emit_init).
 */
#ifndef TDM_RT_SRC_METRICS_H
#define TDM_RT_SRC_METRICS_H

#include "runtime/task_source.h"

/* Zeroes the published metrics of @p t: watermarks at "none", no
 * record yet, no lag yet. */
void tdm__src_metrics_init(rt_src_task *t);

#endif /* TDM_RT_SRC_METRICS_H */
