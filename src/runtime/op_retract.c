/* SPDX-License-Identifier: MIT */
/* op_retract.c - retract mode's memory of a window subtask (op_retract.h):
 * made at setup, pruned after each group of items as windows are
 * cleaned up, freed at the end.  Filled by the emit path
 * (task_op_emit.c), carried by the snapshot (task_op_ckpt.c).
 *
 * Invariant: a slot dropped here gives back its key reference and its
 * copy of the aggregate part.
 * State: t->ret (tdm__op_retract_state), its own.
 */
#include "runtime/op_retract.h"
#include "runtime/task_op.h"

/* Makes the memory. */
tdm_err tdm__op_retract_open(tdm__op_retract_state *r)
{
    r->rkeys = tdm__keys_new();
    r->rkv = tdm__kv_new(sizeof(tdm__rt_op_rslot));
    r->rtimers = tdm__timers_new();
    if (!r->rkeys || !r->rkv || !r->rtimers)
        return TDM_ERR_NOMEM;
    return TDM_OK;
}

/* Drops what retract mode remembers of windows cleaned up by now. */
void tdm__rt_op_retract_cleanup(tdm__rt_op_task *t, tdm_time_ms now)
{
    tdm__timer tm;
    while (tdm__timers_pop(t->ret.rtimers, now, &tm)) {
        tdm__rt_op_rslot *s = tdm__kv_get(t->ret.rkv, tm.key, tm.ns);
        if (s) {
            tdm__free(s->blob);
            tdm__kv_remove(t->ret.rkv, tm.key, tm.ns);
            tdm__keys_unref(t->ret.rkeys, tm.key);
        }
    }
}

/* Hook after a group: windows cleaned up by now forgotten. */
void tdm__op_retract_after_group(tdm__rt_op_task *t)
{
    if (t->ret.rtimers && !t->failed)
        tdm__rt_op_retract_cleanup(t, t->op->event_time
                                          ? tdm_winop_current_watermark(t->win)
                                          : tdm_clock_now(t->clk));
}

/* Frees the remembered result of one (key, window). */
static void free_rslot(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    (void)ud;
    (void)key;
    (void)ns;
    tdm__free(((tdm__rt_op_rslot *)slot)->blob);
}

/* Frees the memory. */
void tdm__op_retract_free(tdm__op_retract_state *r)
{
    if (r->rkv)
        tdm__kv_each(r->rkv, free_rslot, NULL);
    tdm__kv_destroy(r->rkv);
    tdm__keys_destroy(r->rkeys);
    tdm__timers_destroy(r->rtimers);
}
