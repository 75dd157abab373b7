/* SPDX-License-Identifier: MIT */
/* op_metrics.c - a window or join subtask's published metrics
 * (op_metrics.h): their initial "none" values, their publication after
 * each group of items (totals to the subtask's figures, deltas to the
 * job's counters), the latency quantiles, and the snapshots' way in.
 *
 * Invariant: only the subtask's thread writes the figures; the late
 * ring moves only under lmx.
 * State: t->met (tdm__op_metrics_state), its own.  Used by task_op.c
 * (hooks, setup), task_op_emit.c (the counters and rings, per result)
 * and metrics.c (snapshots).
 */
#include "runtime/op_metrics.h"
#include "runtime/task_op.h"

/* Publishes the latency quantiles (a scan of the histogram: at most
 * once a second, and at the end). */
static void publish_latency(tdm__rt_op_task *t, bool force)
{
    if (!t->met.lat.b || t->met.lat.n == 0)
        return;
    if (!force && t->now - t->met.lat_pub < 1000)
        return;
    t->met.lat_pub = t->now;
    tdm__rt_pub_set(&t->met.m.lat_p50, tdm__hist_quantile(&t->met.lat, 0.50));
    tdm__rt_pub_set(&t->met.m.lat_p99, tdm__hist_quantile(&t->met.lat, 0.99));
}

/* Counters the operator keeps itself, published as deltas: the job's
 * counters are sums over subtasks, added to without locks. */
void tdm__op_metrics_publish(tdm__rt_op_task *t)
{
    int64_t d = t->win ? tdm_winop_late_dropped(t->win)
                       : tdm_joinop_late_dropped(t->join);
    tdm__rt_count(t->run, TDM_STAT_LATE_DROPPED, d - t->met.late_dropped_seen);
    t->met.late_dropped_seen = d;
    /* The job's counters take this group's deltas; the subtask's
     * metrics its totals (single writer: plain stores). */
    tdm__rt_count(t->run, TDM_STAT_RECORDS_OUT, t->met.c_out - t->met.j_out);
    tdm__rt_count(t->run, TDM_STAT_LATE_SIDE_OUTPUT,
                  t->met.c_late_side - t->met.j_late_side);
    tdm__rt_count(t->run, TDM_STAT_LATE_REFIRES,
                  t->met.c_late_panes - t->met.j_late_panes);
    tdm__rt_count(t->run, TDM_STAT_WM_REGRESSIONS,
                  t->met.c_regress - t->met.j_regress);
    t->met.j_out = t->met.c_out;
    t->met.j_late_side = t->met.c_late_side;
    t->met.j_late_panes = t->met.c_late_panes;
    t->met.j_regress = t->met.c_regress;
    tdm__rt_op_metrics *m = &t->met.m;
    if (t->met.c_in != tdm__rt_pub_get(&m->in)) {
        tdm__rt_pub_set(&m->in, t->met.c_in);
        tdm__rt_pub_set(&m->last_at, t->now);
    }
    tdm__rt_pub_set(&m->out, t->met.c_out);
    tdm__rt_pub_set(&m->late_side, t->met.c_late_side);
    tdm__rt_pub_set(&m->late_drop, d);
    tdm__rt_pub_set(&m->panes, t->met.c_panes);
    tdm__rt_pub_set(&m->late_panes, t->met.c_late_panes);
    tdm__rt_pub_set(&m->regress, t->met.c_regress);
    if (t->win) {
        tdm__rt_pub_set(&m->wm_in, t->win->wm);
        if (t->fb.dv)
            tdm__rt_pub_set(&m->late_fb, tdm__winop_late_by_fallback(t->win));
        tdm__rt_pub_set(&m->keys, tdm__winop_keys(t->win));
        tdm__rt_pub_set(&m->windows, tdm_winop_live_windows(t->win));
        tdm__rt_pub_set(&m->bytes, tdm_winop_state_bytes(t->win));
        publish_latency(t, false);
    } else {
        /* The join's own accounting (join.h): for the window join the
         * record log chunks, which the key table and kv stores miss. */
        const tdm_joinop *j = t->join;
        tdm__rt_pub_set(&m->wm_in, j->wm);
        tdm__rt_pub_set(&m->keys, tdm__joinop_state_keys(j));
        tdm__rt_pub_set(&m->windows, tdm_joinop_buffered(j));
        tdm__rt_pub_set(&m->bytes, tdm__joinop_state_bytes(j));
    }
}

/* Zeroes the published metrics (watermarks at "none"). */
void tdm__op_metrics_init(tdm__rt_op_task *t)
{
    tdm__rt_op_metrics *m = &t->met.m;
    atomic_init(&m->in, 0);
    atomic_init(&m->out, 0);
    atomic_init(&m->late_side, 0);
    atomic_init(&m->late_drop, 0);
    atomic_init(&m->late_fb, -1); /* -1: not tracked (op_fallback.h) */
    atomic_init(&m->panes, 0);
    atomic_init(&m->late_panes, 0);
    atomic_init(&m->regress, 0);
    atomic_init(&m->wm_in, TDM_TIME_MIN);
    atomic_init(&m->idle, 0);
    atomic_init(&m->last_at, TDM_TIME_MIN);
    atomic_init(&m->keys, 0);
    atomic_init(&m->windows, 0);
    atomic_init(&m->bytes, 0);
    atomic_init(&m->lat_p50, -1);
    atomic_init(&m->lat_p99, -1);
}

/* The published figures (snapshots). */
const tdm__rt_op_metrics *tdm__op_metrics_pub(const tdm__rt_op_task *t)
{
    return &t->met.m;
}

/* Locks the late ring for a snapshot. */
int tdm__op_metrics_late_lock(tdm__rt_op_task *t, const tdm__rt_late **ring,
                              int *head)
{
    pthread_mutex_lock(&t->met.lmx);
    *ring = t->met.late;
    *head = t->met.late_head;
    return t->met.late_n;
}

void tdm__op_metrics_late_unlock(tdm__rt_op_task *t)
{
    pthread_mutex_unlock(&t->met.lmx);
}

/* Hook at the end: the final latency figures. */
void tdm__op_metrics_on_end(tdm__rt_op_task *t)
{
    if (t->met.lat.b && t->met.lat.n) {
        publish_latency(t, true);
        tdm__run_record_add_latency(t->run->rec, &t->met.lat);
    }
}

/* Frees the metrics state. */
void tdm__op_metrics_free(tdm__op_metrics_state *s)
{
    tdm__free(s->late);
    tdm__free(s->dbg_wm);
    tdm__free(s->dbg_at);
    tdm__hist_fini(&s->lat);
    if (s->lmx_ok)
        pthread_mutex_destroy(&s->lmx);
}
