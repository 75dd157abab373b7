/* SPDX-License-Identifier: MIT */
/* align.c - the watermark-alignment coordinator of one group (rule A2),
 * Flink's SourceCoordinator with its WatermarkAggregator.  Each subtask's
 * latest report replaces its previous one (the minimum may go down); every
 * update interval min(reports) + max_drift (saturating: all idle = MAX ->
 * MAX) is announced to exactly the subtasks that have reported.  The
 * schedule is a fixed-rate grid.
 */
#include "wm.h"

struct tdm_align_coord {
    int n;
    tdm_time_ms drift;
    tdm_time_ms interval;
    tdm_time_ms next_due;
    tdm_clock *clk;
    tdm__sink sink;
    tdm_time_ms *reports; /* latest report per subtask */
    bool *reported;       /* subtask has reported at least once */
    int *targets;         /* scratch: subtasks told, ascending */
};

/* Creates a coordinator; the first announcement is due one interval
 * from now.  INVAL (n < 1, drift < 0, interval <= 0, NULL clk or out;
 * the message names the parameter), NOMEM. */
tdm_err tdm_align_coord_new(int n_subtasks, tdm_time_ms max_drift_ms,
                            tdm_time_ms update_interval_ms, tdm_clock *clk,
                            tdm_emit_cb emit, void *opaque,
                            tdm_align_coord **out, char *errbuf,
                            size_t errbuf_size)
{
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (n_subtasks < 1)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "n_subtasks must be >= 1 (got %d)", n_subtasks);
    if (max_drift_ms < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "max_drift_ms must be >= 0 (got %lld)",
                         (long long)max_drift_ms);
    if (update_interval_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "update_interval_ms must be > 0 (got %lld)",
                         (long long)update_interval_ms);
    if (!clk)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "clk must not be NULL");
    tdm_align_coord *c = tdm__calloc(1, sizeof *c);
    if (!c)
        goto fail;
    size_t n = (size_t)n_subtasks;
    c->reports = tdm__calloc(n, sizeof *c->reports);
    c->reported = tdm__calloc(n, sizeof *c->reported);
    c->targets = tdm__calloc(n, sizeof *c->targets);
    if (!c->reports || !c->reported || !c->targets)
        goto fail;
    c->n = n_subtasks;
    c->drift = max_drift_ms;
    c->interval = update_interval_ms;
    c->next_due = tdm__time_add_sat(tdm_clock_now(clk), update_interval_ms);
    c->clk = clk;
    c->sink.fn = emit;
    c->sink.opaque = opaque;
    *out = c;
    return TDM_OK;

fail:
    tdm_align_coord_destroy(c);
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                     "out of memory creating an alignment coordinator");
}

/* Releases the coordinator; NULL and half-built ones are fine. */
void tdm_align_coord_destroy(tdm_align_coord *c)
{
    if (!c)
        return;
    tdm__free(c->reports);
    tdm__free(c->reported);
    tdm__free(c->targets);
    tdm__free(c);
}

/* The latest report replaces the previous one, even if lower. */
/* Live settings: the next announcement uses @p drift. */
void tdm__align_coord_set_drift(tdm_align_coord *c, tdm_time_ms drift)
{
    c->drift = drift;
}

tdm_err tdm_align_coord_report(tdm_align_coord *c, int subtask, tdm_time_ms wm)
{
    if (!c)
        return TDM_ERR_INVAL;
    if (subtask < 0 || subtask >= c->n)
        return TDM_ERR_CHANNEL;
    c->reports[subtask] = wm;
    c->reported[subtask] = true;
    return TDM_OK;
}

/* Sends one ANNOUNCE to every subtask that has reported; nothing when
 * none has. */
static void announce(tdm_align_coord *c)
{
    size_t nt = 0;
    tdm_time_ms min = TDM_TIME_MAX;
    for (int i = 0; i < c->n; i++) {
        if (!c->reported[i])
            continue;
        c->targets[nt++] = i;
        if (c->reports[i] < min)
            min = c->reports[i];
    }
    if (nt == 0)
        return;
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_ANNOUNCE);
    ev.time = tdm__time_add_sat(min, c->drift);
    ev.targets = c->targets;
    ev.n_targets = nt;
    tdm__emit(&c->sink, &ev);
}

/* Announces at most once per call; the next announcement is due at the
 * first grid point (creation + k * interval) after now. */
tdm_err tdm_align_coord_advance(tdm_align_coord *c)
{
    if (!c)
        return TDM_ERR_INVAL;
    tdm_time_ms now = tdm_clock_now(c->clk);
    if (now < c->next_due)
        return TDM_OK;
    announce(c);
    tdm_time_ms late = tdm__time_sub_sat(now, c->next_due) % c->interval;
    c->next_due = tdm__time_add_sat(now, c->interval - late);
    return TDM_OK;
}
