/* SPDX-License-Identifier: MIT */
/* op_fallback.h - a window subtask's data watermark, for the late
 * records a fallback watermark made (F5; docs/live-settings.md, "The
 * fallback watermark").
 *
 * A source with watermark.fallback sends, with every watermark, the
 * data watermark under it (tdm__item.dt): what its partitions alone
 * make, below the watermark while the fallback drives.  A window
 * subtask whose job has such a source combines those values over its
 * channels with a second valve that gets the same idle/active statuses
 * as the operator's own, so its output is the input watermark the
 * window would have had without any fallback.  The window operator
 * keeps it (tdm__winop_set_data_watermark) and counts a late record
 * whose last window is still open under it as made late by the
 * fallback (numLateRecordsByFallback).  The subtask forwards the value
 * with its own output watermark, so a window reading a window counts
 * the same way.
 *
 * Invariant: dv is NULL (nothing tracked, nothing costs) unless the
 * subtask is a window reading a source with a fallback (or a window
 * that reads one); joins do not count (their lateness differs per join
 * kind) and forward no data watermark.
 * Hooks: per WATERMARK, STATUS and END item, and the output watermark.
 */
#ifndef TDM_RT_OP_FALLBACK_H
#define TDM_RT_OP_FALLBACK_H

#include "tidemark.h"

typedef struct tdm__rt_op_task tdm__rt_op_task;

typedef struct tdm__op_fb_state {
    tdm_valve *dv; /* the data watermarks' valve, NULL: not tracked */
} tdm__op_fb_state;

/* Sets up the valve when it applies (see above).  TDM_OK or NOMEM. */
tdm_err tdm__op_fb_open(tdm__rt_op_task *t);
/* Channel @p ch's data watermark @p dt arrived (with its watermark). */
void tdm__op_fb_watermark_slow(tdm__rt_op_task *t, int ch, tdm_time_ms dt);
/* Channel @p ch went idle (@p idle 1) or active. */
void tdm__op_fb_status_slow(tdm__rt_op_task *t, int ch, int idle);
/* Before the operator's output watermark goes downstream: the data
 * watermark goes with it. */
void tdm__op_fb_output_slow(tdm__rt_op_task *t);

/* The hooks, inline: one test when nothing is tracked (per watermark
 * and status item). */
#define tdm__op_fb_watermark(t, ch, dt)                                        \
    ((t)->fb.dv ? tdm__op_fb_watermark_slow(t, ch, dt) : (void)0)
#define tdm__op_fb_status(t, ch, idle)                                         \
    ((t)->fb.dv ? tdm__op_fb_status_slow(t, ch, idle) : (void)0)
#define tdm__op_fb_output(t)                                                   \
    ((t)->fb.dv && (t)->emit ? tdm__op_fb_output_slow(t) : (void)0)
/* Frees the valve (NULL-safe). */
void tdm__op_fb_close(tdm__op_fb_state *f);

#endif
