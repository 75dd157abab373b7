/* SPDX-License-Identifier: MIT */
/* op_ctx.c - what the files of the window and join subtask share below
 * them (task_op.c the loop, task_op_emit.c the output, task_op_ckpt.c
 * the checkpoints): the out-of-memory failure of a subtask, and the
 * release of what a queue item carries besides a batch.
 *
 * Invariant: nothing here calls into those three files, so they call
 * down into it and never back into each other's upper layers.
 * Declared in task_op.h.
 */
#include "runtime/rt_ctx.h"
#include "runtime/task_op.h"

/* See task_op.h. */
void tdm__rt_op_fail_nomem(tdm__rt_op_task *t)
{
    t->failed = true;
    tdm__rt_fail(t->run, TDM_ERR_NOMEM, "%s \"%s\": out of memory",
                 t->op->kind == TDM_NODE_JOIN ? "join" : "window",
                 t->op->node->name);
}

/* See task_op.h. */
void tdm__rt_op_item_release(const tdm__item *it)
{
    if (it->kind == TDM__ITEM_FENCE)
        tdm__rt_fence_free(it->fence);
    else if (it->kind == TDM__ITEM_PARTIAL)
        tdm__rt_partials_free(it->fence);
}
