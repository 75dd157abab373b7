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
 * "none yet" and writes "end of input" as +Inf, under the names
 * tdm_metric_prom_name derives from the name, kind, unit and type
 * columns.  The other columns are read in metrics.c.
 */
#include <stdio.h>
#include <string.h>

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

/* Cuts @p suffix off @p buf (length *len) when it ends with it. */
static void cut_suffix(char *buf, size_t *len, const char *suffix)
{
    size_t k = strlen(suffix);
    if (*len >= k && strcmp(buf + *len - k, suffix) == 0) {
        *len -= k;
        buf[*len] = '\0';
    }
}

/* The Prometheus name (see tidemark.h): the name in snake case, an "ms"
 * word cut, the unit as Prometheus wants it, _total for counters. */
int tdm_metric_prom_name(tdm_metric id, char *buf, size_t n)
{
    const char *s = tdm_metric_name(id), *add = "";
    tdm_metric_kind k = tdm_metric_kind_of(id);
    const char *unit = in_table(id) ? tdm_metric_unit(id) : "";
    int per_s = strcmp(unit, "ms/s") == 0;
    int digits = strcmp(unit, "ms") == 0 || per_s ? 3
                 : strcmp(unit, "us") == 0        ? 6
                                                  : 0;
    size_t o;
    if (n == 0)
        return 0;
    o = (size_t)snprintf(buf, n, "tidemark_");
    for (; s != NULL && *s != '\0' && o + 2 < n; s++) {
        if (*s >= 'A' && *s <= 'Z') {
            buf[o++] = '_';
            buf[o++] = (char)(*s - 'A' + 'a');
        } else {
            buf[o++] = *s;
        }
    }
    buf[o < n ? o : n - 1] = '\0';
    o = strlen(buf);
    cut_suffix(buf, &o, "_ms");
    if (per_s) {
        cut_suffix(buf, &o, "_ms_per_second"); /* R-MK-3: a share of time */
        add = "_ratio";
    } else if (digits && (k == TDM_METRIC_KIND_EVENT_TIME ||
                          k == TDM_METRIC_KIND_CLOCK_TIME)) {
        cut_suffix(buf, &o, "_timestamp"); /* R-MK-1: a point in time */
        add = "_timestamp_seconds";
    } else if (digits) {
        add = "_seconds"; /* R-MK-2: a duration */
    } else if (strcmp(unit, "bytes") == 0) {
        cut_suffix(buf, &o, "_bytes");
        add = "_bytes";
    }
    snprintf(buf + o, n - o, "%s%s", add,
             in_table(id) && strcmp(tdm_metric_type(id), "COUNTER") == 0
                 ? "_total"
                 : "");
    return digits;
}
