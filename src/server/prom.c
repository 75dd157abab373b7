/* SPDX-License-Identifier: MIT */
/* prom.c - a metrics snapshot in the Prometheus text exposition format
 * 0.0.4: for every metric of TDM_METRIC_MAP that has values, a # HELP
 * and a # TYPE line, then one sample per value, named tidemark_<the
 * metric's name in snake case> and labelled with the job, the operator
 * (vertex), the subtask and, where the scope has them, the input, the
 * channel (and the upstream it comes from) or the partition (and its
 * name).  "No watermark yet" is left out; end of input is +Inf.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "server/server.h"

/* A growing text buffer; oom is sticky, so appends need no checks. */
typedef struct pbuf {
    char *p;
    size_t len, cap;
    int oom;
} pbuf;

/* Makes room for @p n more bytes (plus a NUL); false on NOMEM. */
static int reserve(pbuf *b, size_t n)
{
    size_t cap;
    char *np;
    if (b->oom)
        return 0;
    if (b->len + n + 1 <= b->cap)
        return 1;
    cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1)
        cap *= 2;
    np = tdm__realloc(b->p, cap);
    if (np == NULL) {
        b->oom = 1;
        return 0;
    }
    b->p = np;
    b->cap = cap;
    return 1;
}

static void add_mem(pbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void add_str(pbuf *b, const char *s)
{
    add_mem(b, s, strlen(s));
}

static void add_fmt(pbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_fmt(pbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        add_mem(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Appends @p s escaped for a label value (backslash, double quote and
 * newline become \\, \" and \n) or, with @p help, for a HELP text (only
 * backslash and newline are escaped there). */
static void add_escaped(pbuf *b, const char *s, int help)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            add_str(b, "\\\\");
        else if (*s == '\n')
            add_str(b, "\\n");
        else if (*s == '"' && !help)
            add_str(b, "\\\"");
        else
            add_mem(b, s, 1);
    }
}

/* The Prometheus name of a metric: "tidemark_" and the camelCase name
 * with an underscore before each capital, lowered ("numRecordsIn" ->
 * "tidemark_num_records_in"). */
static void metric_name(tdm_metric id, char *buf, size_t n)
{
    const char *s = tdm_metric_name(id);
    size_t o = (size_t)snprintf(buf, n, "tidemark_");
    for (; s != NULL && *s != '\0' && o + 2 < n; s++) {
        if (*s >= 'A' && *s <= 'Z') {
            buf[o++] = '_';
            buf[o++] = (char)(*s - 'A' + 'a');
        } else {
            buf[o++] = *s;
        }
    }
    buf[o < n ? o : n - 1] = '\0';
}

/* Appends one sample line for value @p v of metric family @p name. */
static void add_sample(pbuf *b, const char *name, const char *job,
                       const tdm_metric_value *v, const char *scope)
{
    add_str(b, name);
    add_str(b, "{job=\"");
    add_escaped(b, job, 0);
    add_str(b, "\"");
    if (v->vertex != NULL) {
        add_str(b, ",operator=\"");
        add_escaped(b, v->vertex, 0);
        add_fmt(b, "\",subtask=\"%d\"", v->subtask);
    }
    if (strcmp(scope, "INPUT") == 0) {
        add_fmt(b, ",input=\"%d\"", v->index);
    } else if (strcmp(scope, "CHANNEL") == 0) {
        add_fmt(b, ",channel=\"%d\"", v->index);
        if (v->label != NULL) {
            add_str(b, ",from=\"");
            add_escaped(b, v->label, 0);
            add_str(b, "\"");
        }
    } else if (strcmp(scope, "PARTITION") == 0) {
        add_fmt(b, ",partition=\"%d\"", v->index);
        if (v->label != NULL) {
            add_str(b, ",partition_name=\"");
            add_escaped(b, v->label, 0);
            add_str(b, "\"");
        }
    }
    if (tdm_metric_is_event_time(v->id) && v->value == TDM_TIME_MAX)
        add_str(b, "} +Inf\n");
    else
        add_fmt(b, "} %lld\n", (long long)v->value);
}

/* Renders a snapshot (see server.h).  Samples of one metric must follow
 * its HELP and TYPE lines together, so the values are visited metric by
 * metric through a list of value indexes grouped by metric (a counting
 * sort: the snapshot's own order is kept within each metric). */
tdm_err tdm__prom_render(const tdm_metrics *m, const char *job_name, char **out,
                         size_t *len)
{
    pbuf b = {NULL, 0, 0, 0};
    size_t n = tdm_metrics_count(m);
    size_t start[TDM_METRIC_COUNT_ + 1];
    size_t *order = tdm__malloc((n ? n : 1) * sizeof *order);
    char name[96];

    *out = NULL;
    *len = 0;
    if (order == NULL)
        return TDM_ERR_NOMEM;
    memset(start, 0, sizeof start);
    for (size_t i = 0; i < n; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        if (v != NULL && (int)v->id >= 0 && v->id < TDM_METRIC_COUNT_)
            start[v->id + 1]++;
    }
    for (int id = 0; id < TDM_METRIC_COUNT_; id++)
        start[id + 1] += start[id];
    {
        size_t fill[TDM_METRIC_COUNT_];
        memcpy(fill, start, sizeof fill);
        for (size_t i = 0; i < n; i++) {
            const tdm_metric_value *v = tdm_metrics_at(m, i);
            if (v != NULL && (int)v->id >= 0 && v->id < TDM_METRIC_COUNT_)
                order[fill[v->id]++] = i;
        }
    }
    for (int id = 0; id < TDM_METRIC_COUNT_; id++) {
        const char *scope = tdm_metric_scope((tdm_metric)id);
        const char *type = tdm_metric_type((tdm_metric)id);
        int header = 0;
        metric_name((tdm_metric)id, name, sizeof name);
        for (size_t k = start[id]; k < start[id + 1]; k++) {
            const tdm_metric_value *v = tdm_metrics_at(m, order[k]);
            /* "No watermark yet" is not a number anyone should graph. */
            if (tdm_metric_is_event_time(v->id) && v->value == TDM_TIME_MIN)
                continue;
            if (!header) {
                add_fmt(&b, "# HELP %s ", name);
                add_escaped(&b, tdm_metric_help((tdm_metric)id), 1);
                add_fmt(&b, " (%s)\n# TYPE %s %s\n",
                        tdm_metric_unit((tdm_metric)id), name,
                        strcmp(type, "COUNTER") == 0 ? "counter" : "gauge");
                header = 1;
            }
            add_sample(&b, name, job_name, v, scope);
        }
    }
    /* The culprit, derived from the same snapshot: one series naming the
     * partition that holds the watermark back, valued by how far. */
    {
        tdm__culprit c;
        tdm__find_culprit(m, &c);
        if (c.found) {
            add_str(&b, "# HELP tidemark_watermark_held_back_ms The partition "
                        "holding the job's watermark back: how far its "
                        "watermark is behind the next lowest partition's "
                        "(ms; -1 when it has none yet)\n"
                        "# TYPE tidemark_watermark_held_back_ms gauge\n"
                        "tidemark_watermark_held_back_ms{job=\"");
            add_escaped(&b, job_name, 0);
            add_str(&b, "\",operator=\"");
            add_escaped(&b, c.vertex ? c.vertex : "", 0);
            add_fmt(&b, "\",subtask=\"%d\",partition=\"%d\"", c.subtask,
                    c.partition);
            if (c.name != NULL) {
                add_str(&b, ",partition_name=\"");
                add_escaped(&b, c.name, 0);
                add_str(&b, "\"");
            }
            add_fmt(&b, "} %lld\n", (long long)c.behind_ms);
        }
    }
    tdm__free(order);
    if (b.oom || !reserve(&b, 0)) {
        tdm__free(b.p);
        return TDM_ERR_NOMEM;
    }
    *out = b.p;
    *len = b.len;
    return TDM_OK;
}
