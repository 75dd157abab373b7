/* SPDX-License-Identifier: MIT */
/* metric_kinds.c - the kind and combining columns of TDM_METRIC_MAP, as
 * public accessors: whether a metric's value is a point in event time, a
 * point in processing time, a duration, a count, a flag or a code, and
 * whether a vertex's subtasks combine by minimum, maximum or sum.
 *
 * Invariant: the answers come from the table alone, so a new metric
 * states its kind and combining in its own row and no reader keeps a
 * switch beside the table.  The REST API (server/rest.c) folds vertex
 * values with tdm_metric_combine and renders event times with the null /
 * "end" convention; the Prometheus exposition (server/prom.c) leaves out
 * "none yet" and writes "end of input" as +Inf.  The other columns are
 * read in metrics.c.
 */
#include "tidemark.h"

static const struct {
    tdm_metric_kind kind;
    tdm_metric_agg agg;
} kind_rows[] = {
#define TDM__METRIC_KIND_ROW(id, name, scope, type, unit, kind, agg, help)     \
    {TDM_METRIC_KIND_##kind, TDM_METRIC_AGG_##agg},
    TDM_METRIC_MAP(TDM__METRIC_KIND_ROW)
#undef TDM__METRIC_KIND_ROW
};

/* True when @p id is a row of the table. */
static int in_table(tdm_metric id)
{
    return (int)id >= 0 && id < TDM_METRIC_COUNT_;
}

/* The kind column of @p id; COUNT outside the table. */
tdm_metric_kind tdm_metric_kind_of(tdm_metric id)
{
    return in_table(id) ? kind_rows[id].kind : TDM_METRIC_KIND_COUNT;
}

/* 1 for the EVENT_TIME rows, 0 for the rest and outside the table. */
int tdm_metric_is_event_time(tdm_metric id)
{
    return tdm_metric_kind_of(id) == TDM_METRIC_KIND_EVENT_TIME;
}

/* The combining column of @p id; SUM outside the table. */
tdm_metric_agg tdm_metric_combine(tdm_metric id)
{
    return in_table(id) ? kind_rows[id].agg : TDM_METRIC_AGG_SUM;
}
