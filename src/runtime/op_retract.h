/* SPDX-License-Identifier: MIT */
/* op_retract.h - retract mode's memory of a window subtask: the last
 * result emitted per (key, window), so that a later firing of the same
 * window can retract it before inserting the new one.  The emit path
 * (task_op_emit.c) fills it per result; this component makes it, forgets
 * windows whose cleanup time passed after each group of items, and frees
 * it; the subtask's snapshot carries it (task_op_ckpt.c).
 *
 * Invariant: every remembered slot holds one reference on its key in
 * rkeys and has a timer at its window's cleanup time in rtimers.
 * State: its own struct, tdm__op_retract_state (t->ret); all NULL when
 * the output mode is not retract.
 * Hooks: after_group (tdm__op_retract_after_group).
 */
#ifndef TDM_RT_OP_RETRACT_H
#define TDM_RT_OP_RETRACT_H

#include "runtime/outbox.h"

typedef struct tdm__rt_op_task tdm__rt_op_task;

/* What retract mode remembers of a window's last emitted result. */
typedef struct tdm__rt_op_rslot {
    void *blob; /* aggregate part: int64 count, or packed rowagg bytes */
    size_t len;
} tdm__rt_op_rslot;

/* Retract mode: the last emitted row per key and window. */
typedef struct tdm__op_retract_state {
    tdm__keys *rkeys;
    tdm__kv *rkv;
    tdm__timers *rtimers;
} tdm__op_retract_state;

/* Makes the memory (retract mode).  TDM_OK or TDM_ERR_NOMEM
 * (tdm__op_retract_free frees either way). */
tdm_err tdm__op_retract_open(tdm__op_retract_state *r);

/* Retract mode: drops what it remembers of windows whose cleanup time is
 * at or before @p now (frees their copies of the aggregate part). */
void tdm__rt_op_retract_cleanup(tdm__rt_op_task *t, tdm_time_ms now);

/* Hook after a group of items: windows cleaned up by the operator's
 * watermark (event time) or the clock are forgotten. */
void tdm__op_retract_after_group(tdm__rt_op_task *t);

/* Frees the memory (NULL-safe parts). */
void tdm__op_retract_free(tdm__op_retract_state *r);

#endif /* TDM_RT_OP_RETRACT_H */
