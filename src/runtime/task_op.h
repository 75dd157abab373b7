/* SPDX-License-Identifier: MIT */
/* task_op.h - what the three files of the window and join subtask share
 * (internal to them; run.h declares what the rest of the runtime calls):
 *
 *   task_op.c       input dispatch, the subtask loop, setup and teardown;
 *   task_op_emit.c  writing rows: the operators' emit callbacks, the
 *                   append / upsert / retract output modes, late output;
 *   task_op_ckpt.c  checkpoint barriers and alignment, the subtask's
 *                   snapshot and restore, retract mode's memory in it.
 *
 * Only functions called once per item, per group of items or on a
 * failure cross these files; the per-record paths (push_rows, and the
 * emit callback down to the sink write) each stay within one file.
 */
#ifndef TDM_TASK_OP_H
#define TDM_TASK_OP_H

#include "runtime/run.h"
#include "window/join.h"
#include "window/win.h"

/* What retract mode remembers of a window's last emitted result. */
typedef struct rt_op_rslot {
    void *blob; /* aggregate part: int64 count, or packed rowagg bytes */
    size_t len;
} rt_op_rslot;

/* ---- task_op.c ---- */

/* Out of memory in the operator or the output path: marks subtask @p t
 * failed and fails the run (borrows @p t). */
void rt_op_fail_nomem(rt_op_task *t);
/* Handles one item @p it (borrowed; a batch's reference and a fence or
 * partials message are released here, i.e. the call takes ownership of
 * what the item carries); returns true once every channel has ended. */
bool rt_op_handle(rt_op_task *t, const tdm__item *it);

/* ---- task_op_emit.c ---- */

/* The window operator's emit callback (tdm_winop_new's emit, @p opaque:
 * the rt_op_task): writes results, late records, and forwards watermarks
 * and status.  Borrows @p ev. */
void rt_op_win_emit(void *opaque, const tdm_event *ev);
/* The join operator's emit callback (@p opaque: the rt_op_task): writes
 * joined pairs and late records, forwards watermarks and status.
 * Borrows @p ev. */
void rt_op_join_emit(void *opaque, const tdm_event *ev);
/* The window operator's drop probe (@p ud: the rt_op_task): samples a
 * record dropped as late.  Borrows @p rec. */
void rt_op_win_dropped(void *ud, const tdm_record *rec);
/* The join operator's drop probe (@p ud: the rt_op_task, @p side 0 left,
 * else right): samples a record dropped as late.  Borrows @p rec. */
void rt_op_join_dropped(void *ud, int side, const tdm_record *rec);
/* Retract mode: drops what it remembers of windows whose cleanup time is
 * at or before @p now (frees their copies of the aggregate part). */
void rt_op_retract_cleanup(rt_op_task *t, tdm_time_ms now);

/* ---- task_op_ckpt.c ---- */

/* A barrier on channel it->ch (borrowed): blocks the channel until the
 * barrier came on every channel that has not ended. */
void rt_op_on_barrier(rt_op_task *t, const tdm__item *it);
/* Handles one item @p it (copied into the channel's stash while the
 * channel is blocked, which then owns what it carries; otherwise as
 * rt_op_handle), and checkpoints once aligned.  True when the operator
 * finished. */
bool rt_op_dispatch(rt_op_task *t, const tdm__item *it);
/* Between groups of items: commits the sinks up to the checkpoint the
 * coordinator published as committed. */
void rt_op_ckpt_poll(rt_op_task *t);
/* The operator ended: acknowledges its final state (a snapshot the
 * checkpoint store takes ownership of) for the checkpoints still to
 * come. */
void rt_op_ckpt_end(rt_op_task *t);

#endif /* TDM_TASK_OP_H */
