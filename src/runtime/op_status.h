/* SPDX-License-Identifier: MIT */
/* op_status.h - a window subtask's side of tdm_job_window_status: a
 * question the job posts (metrics.c) is answered on the subtask's own
 * thread between two groups of items, from the operator's state, the
 * firing memory and the channels; as the subtask stops it answers a
 * pending question and leaves its final watermark for later ones.
 *
 * Invariant: answers are written under the job's metrics lock (mmu),
 * and only by the subtask's thread.
 * State: its own struct, tdm__op_status_state (t->status): ws, the
 * job-owned status slot of this subtask (NULL: no status area; set by
 * metrics.c under the job's lock before the threads start, which calls
 * nothing here: this file calls metrics.c).
 * Hooks: after_group (tdm__op_status_after_group), on_end
 * (tdm__op_status_on_end).  The emit path records first firings in
 * ws->fired (task_op_emit.c).
 */
#ifndef TDM_RT_OP_STATUS_H
#define TDM_RT_OP_STATUS_H

#include "runtime/metrics.h"

typedef struct tdm__rt_op_task tdm__rt_op_task;

/* The subtask's status slot (job-owned). */
typedef struct tdm__op_status_state {
    tdm__rt_wstat *ws;
} tdm__op_status_state;

/* The window subtask's side of tdm_job_window_status: answers a posted
 * question, if any (between two groups of items). */
void tdm__rt_status_serve(tdm__rt_op_task *t);
/* Called by a window subtask as it stops: answers a pending question,
 * then leaves its final watermark for later ones. */
void tdm__rt_status_close(tdm__rt_op_task *t);

/* Hook after a group of items: a question posted is answered. */
void tdm__op_status_after_group(tdm__rt_op_task *t);
/* Hook at the end: tdm__rt_status_close (with a status slot). */
void tdm__op_status_on_end(tdm__rt_op_task *t);

#endif /* TDM_RT_OP_STATUS_H */
