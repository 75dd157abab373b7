/* SPDX-License-Identifier: MIT */
/* src_ckpt.h - a source subtask's part in checkpoints
 * (docs/checkpoints.md, "In the runtime"): between polls it commits what
 * the coordinator published and answers barriers (rows and partials
 * out, positions and reader snapshotted, its sinks pre-committed, the
 * barrier on every channel); at the end of input it hands over its final
 * state; restored at another parallelism it re-announces its watermark.
 *
 * State: t->ck (its sink objects and acknowledgements).
 * Hooks: between_polls (tdm__src_ckpt_poll), on_end (tdm__src_ckpt_end),
 * on_open (tdm__src_ckpt_announce_restored).
 */
#ifndef TDM_RT_SRC_CKPT_H
#define TDM_RT_SRC_CKPT_H

#include "runtime/task_source.h"

/* Between polls: a commit the coordinator published (every call on a
 * writer's object from its thread, the sink contract), a barrier it
 * requested. */
void tdm__src_ckpt_poll(tdm__rt_src_task *t);

/* At the end of the subtask's input (not after a failure): answers the
 * barriers still asked for, then hands the coordinator its final state;
 * from then on the coordinator pre-commits and commits this subtask's
 * sink objects itself (the final checkpoint). */
void tdm__src_ckpt_end(tdm__rt_src_task *t);

/* Sends the watermark and idle status a reader restored at another
 * parallelism starts with (tdm__reader_restore_finish): the operator
 * subtasks' channel state was not restored, and without this a channel
 * would hold their minimum at "no watermark" until the reader's output
 * rises again.  A watermark at or below an operator's restored one is
 * ignored there, so nothing moves back. */
void tdm__src_ckpt_announce_restored(tdm__rt_src_task *t);

/* Hook between polls: the checkpoint coordinator's commits and barrier
 * requests (checkpoints on). */
void tdm__src_ckpt_between_polls(tdm__rt_src_task *t);

#endif /* TDM_RT_SRC_CKPT_H */
