/* SPDX-License-Identifier: MIT */
/* src_align.h - a source subtask's share of watermark alignment: the
 * reader's alignment events (reports to the group's coordinator, pauses
 * and resumes of splits or of the whole reader), the pauses applied at a
 * version-2 connector, the coordinator's announcements applied between
 * polls, and the paused iteration of a version-1 source (which pauses by
 * not polling).
 *
 * State: t->ann_seen, t->reading_paused, t->ppaused (per split); the
 * announcement (t->ann_max, t->ann_seq) is written by the run thread.
 * Hooks: between_polls (tdm__src_align_step).
 */
#ifndef TDM_RT_SRC_ALIGN_H
#define TDM_RT_SRC_ALIGN_H

#include "runtime/task_source.h"

/* Makes the connector's pause state of every live split what alignment
 * wants: paused when the reader paused the split, or (version 2) the
 * whole reader.  Version-1 sources pause by not polling (the loop), so
 * only version 2 with a pause member gets calls.  Each change is a
 * debug log line. */
void tdm__src_align_apply_pauses(tdm__rt_src_task *t);

/* The reader's alignment events: its report goes to the group's
 * coordinator (under the group's lock: every source thread of the group
 * calls it); pauses and resumes of splits or of the whole reader reach
 * the connector through apply_pauses. */
void tdm__src_align_event(tdm__rt_src_task *t, const tdm_event *ev);

/* Alignment, at the top of each iteration: drive the group's
 * coordinator (any thread of the group may: the announcement is due by
 * the clock) and apply the latest announcement to this reader. */
void tdm__src_align_step(tdm__rt_src_task *t);

/* A version-1 source paused by alignment reads nothing: the iteration
 * only ticks the reader (reports, idleness) and waits 20 ms. */
void tdm__src_align_paused_tick(tdm__rt_src_task *t);

#endif /* TDM_RT_SRC_ALIGN_H */
