/* SPDX-License-Identifier: MIT */
/* src_lagg.h - a source subtask's part in two-phase aggregation
 * (localagg.h): per consumer edge that allows it, a local aggregate the
 * scan folds rows into; made when the subtask opens, flushed after a
 * batch that did not fill (the input is slow, stalled or ending), logged
 * (debug) and freed at the end.
 *
 * Invariant: any is true exactly when some edge has a local aggregate,
 * so that the scan's variant without one pays nothing for them.
 * State: its own struct, tdm__src_lagg_state (t->la).
 * Hooks: on_open (tdm__src_lagg_open), after_batch (tdm__src_lagg_flush),
 * on_end (tdm__src_lagg_log).  The outbox flushes them before a
 * watermark or END (outbox.c) and folds rows into them (outbox_route.h).
 */
#ifndef TDM_RT_SRC_LAGG_H
#define TDM_RT_SRC_LAGG_H

#include <stdbool.h>

#include "runtime/outbox.h"

typedef struct tdm__rt_lagg tdm__rt_lagg;

/* Per edge, its local aggregate (NULL: the edge is routed as is); any:
 * some edge has one. */
typedef struct tdm__src_lagg_state {
    tdm__rt_lagg **e;
    bool any;
} tdm__src_lagg_state;

/* Makes a local aggregate for every eligible edge.  TDM_OK or
 * TDM_ERR_NOMEM (tdm__src_lagg_free frees either way). */
tdm_err tdm__src_lagg_open(tdm__rt_src_task *t);

/* After a batch: when the poll did not fill it (not lazy), the partials
 * of every open slice go out now rather than wait at the source for a
 * watermark (a slice may then send several partials per key, each
 * before the watermark that closes it). */
void tdm__src_lagg_flush(tdm__rt_src_task *t);

/* The debug line of each edge's local aggregate, at the end. */
void tdm__src_lagg_log(tdm__rt_src_task *t);

/* Frees every edge's local aggregate (NULL-safe parts). */
void tdm__src_lagg_free(tdm__rt_src_task *t);

#endif /* TDM_RT_SRC_LAGG_H */
