/* SPDX-License-Identifier: MIT */
/* op_live.c - the window subtask's side of live settings (live.h, rules
 * R-LV-4 and R-LV-8 in live.c): a new allowed lateness reaches the
 * subtask's operator, and its retract memory with it.
 *
 * The REST thread stores a change and bumps the window node's
 * generation; the subtask compares the generation before each group of
 * items (one atomic load) and, when it moved, sets its operator's
 * lateness (window/winop_lateness.c moves every live window's cleanup
 * time, cleans up what is due, and keeps closed what was closed).  The
 * retract memory remembers each result until its window's cleanup time,
 * so its timers are made again at the new value: a refire after a raise
 * still retracts the row before it.  After a restore the subtask applies the
 * value in force once whatever the generation, since the restored
 * operator took its snapshot's value.
 *
 * State: t->live_gen (the subtask's), t->live_seen (read by GET).
 */
#include "runtime/live.h"
#include "runtime/task_op.h"

/* The retract memory's cleanup timers made again at the operator's
 * lateness, from each remembered window's bounds (those now due go
 * after the group, tdm__op_retract_after_group): after a change, and
 * after a restore, whose blobs may have been written under other values.
 * TDM_OK or TDM_ERR_NOMEM (the old timers are kept). */
static tdm_err retract_retime(tdm__rt_op_task *t)
{
    if (!t->ret.rkv || !t->op->event_time)
        return TDM_OK;
    tdm_time_ms late = tdm_winop_allowed_lateness(t->win);
    size_t n = 0;
    tdm__kv_ref *r = tdm__kv_refs(t->ret.rkv, &n);
    tdm__timers *tm = tdm__timers_new();
    tdm_err err = r && tm ? TDM_OK : TDM_ERR_NOMEM;
    for (size_t i = 0; i < n && err == TDM_OK; i++) {
        tdm__ns ns = r[i].ns;
        if (ns.b != TDM_TIME_MAX) /* no window: never forgotten */
            err = tdm__timers_add(tm, tdm__time_add_sat(ns.b - 1, late),
                                  r[i].key, ns);
    }
    tdm__free(r);
    if (err != TDM_OK) {
        tdm__timers_destroy(tm);
        return err;
    }
    tdm__timers_destroy(t->ret.rtimers);
    t->ret.rtimers = tm;
    return TDM_OK;
}

/* The value in force reaches the operator; TDM_OK, or why not. */
static tdm_err set_lateness(tdm__rt_op_task *t, tdm_time_ms want, bool force,
                            char *msg, size_t n)
{
    tdm_time_ms old = tdm_winop_allowed_lateness(t->win);
    if (want == old && !force)
        return TDM_OK;
    tdm_err err = want == old
                      ? TDM_OK
                      : tdm_winop_set_allowed_lateness(t->win, want, msg, n);
    if (err == TDM_OK)
        err = retract_retime(t);
    return err;
}

void tdm__op_live_apply(tdm__rt_op_task *t, bool force)
{
    const tdm__live_src *ls = t->live;
    if (!ls || !t->win || t->failed)
        return;
    uint64_t g = atomic_load_explicit(&ls->gen, memory_order_acquire);
    if (g == t->live_gen && !force)
        return;
    t->live_gen = g;
    char msg[256] = "";
    tdm_err err = set_lateness(t, atomic_load(&ls->v[TDM__LIVE_LATENESS]),
                               force, msg, sizeof msg);
    if (err == TDM_ERR_NOMEM) {
        tdm__rt_op_fail_nomem(t);
        return;
    }
    if (err != TDM_OK) {
        /* Not applied: GET keeps saying so (live_seen stays). */
        tdm__job_log(t->run->job, "window \"%s\" subtask %d: %s",
                     t->op->node->name, t->index,
                     msg[0] ? msg : tdm_strerror(err));
        return;
    }
    atomic_store(&t->live_seen, g);
}
