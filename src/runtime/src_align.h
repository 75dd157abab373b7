/* SPDX-License-Identifier: MIT */
/* src_align.h - a source subtask's share of watermark alignment: the
 * reader's alignment events (reports to the group's coordinator, pauses
 * and resumes of splits or of the whole reader), the pauses applied at a
 * version-2 connector, the coordinator's announcements applied between
 * polls, and the paused iteration of a version-1 source (which pauses by
 * not polling).
 *
 * State: its own struct, tdm__src_align_state (t->align): ann_seen,
 * reading_paused, ppaused (per split, grown with the partition arrays,
 * src_parts.c); the announcement (ann_max, ann_seq) is written by the
 * group's coordinator (tdm__src_align_announce, any thread of the group).
 * Hooks: between_polls (tdm__src_align_step).
 */
#ifndef TDM_RT_SRC_ALIGN_H
#define TDM_RT_SRC_ALIGN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/outbox.h"

/* A source subtask's alignment state: the latest announcement for it
 * (ann_max, then ann_seq bumped, release) and the pause state applied
 * per split. */
typedef struct tdm__src_align_state {
    _Atomic int64_t ann_max;
    atomic_uint ann_seq;
    unsigned ann_seen;
    bool reading_paused;
    uint8_t *ppaused; /* per split: paused at the connector */
} tdm__src_align_state;

/* Initial state: no announcement yet (TDM_TIME_MAX), nothing paused. */
void tdm__src_align_init(tdm__rt_src_task *t);

/* The group's coordinator announces @p max to subtask @p t (any thread
 * of the group; the subtask applies it between polls). */
void tdm__src_align_announce(tdm__rt_src_task *t, int64_t max);

/* Restore: whether the restored reader is paused. */
void tdm__src_align_restored(tdm__rt_src_task *t, bool paused);

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

/* Whether alignment holds a version-1 source this iteration (it paused
 * by not polling): then the paused tick ran, and the loop polls
 * nothing. */
bool tdm__src_align_hold(tdm__rt_src_task *t);

/* Grows this component's per-split arrays from @p old to @p cap entries
 * (the new ones initialised); TDM_OK or TDM_ERR_NOMEM, the arrays then
 * still valid at their old size (src_parts.c's reserve). */
tdm_err tdm__src_align_grow(tdm__rt_src_task *t, int old, int cap);
/* Frees the per-split pause flags (NULL-safe). */
void tdm__src_align_free(tdm__rt_src_task *t);

#endif /* TDM_RT_SRC_ALIGN_H */
