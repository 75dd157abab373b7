/* SPDX-License-Identifier: MIT */
/* prom.c - a metrics snapshot in the Prometheus text exposition format
 * 0.0.4: for every metric of TDM_METRIC_MAP that has values, a # HELP
 * and a # TYPE line, then one sample per value, named tidemark_<the
 * metric's name in snake case> and labelled with the job, the operator
 * (vertex), the subtask and, where the scope has them, the input, the
 * channel (and the upstream it comes from) or the partition (and its
 * name).  "No watermark yet" is left out; end of input is +Inf.
 * A task host's server renders every running task's snapshot in one
 * text: each family's header once, the tasks' samples after it, told
 * apart by the job_name (the task job's id) and a task label.
 *
 * Prometheus' conventions hold, so that `promtool check metrics` passes
 * without a warning: the job's label is job_name (Prometheus keeps job
 * for the scrape job, and stores a clash as exported_job); counters end
 * in _total; times are seconds (_timestamp_seconds for watermarks and
 * timestamps, _seconds for durations), written exactly from their ms or
 * us; sizes end in _bytes.  Partition series, one set per partition,
 * are capped per source subtask (http.prometheus.max_partitions).
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

/* Appends @p v divided by 10^@p digits exactly, as a decimal. */
static void add_scaled(pbuf *b, int64_t v, int digits)
{
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint64_t div = digits == 3 ? 1000u : 1000000u;
    add_fmt(b, "%s%llu.%0*llu", v < 0 ? "-" : "", (unsigned long long)(u / div),
            digits, (unsigned long long)(u % div));
}

/* Appends "NAME{job_name="..."[,task="n"][,operator="...",subtask="s"]"
 * for job @p j (the operator labels when @p vertex is not NULL): the
 * other labels go on after it. */
static void add_series_head(pbuf *b, const char *name, const tdm__prom_job *j,
                            const char *vertex, int subtask)
{
    add_str(b, name);
    add_str(b, "{job_name=\"");
    add_escaped(b, j->name, 0);
    add_str(b, "\"");
    if (j->task >= 0)
        add_fmt(b, ",task=\"%d\"", j->task);
    if (vertex == NULL)
        return;
    add_str(b, ",operator=\"");
    add_escaped(b, vertex, 0);
    add_fmt(b, "\",subtask=\"%d\"", subtask);
}

/* Appends one sample line for value @p v of metric family @p name, of
 * job @p j, moved @p digits decimal places (ms or us to seconds). */
static void add_sample(pbuf *b, const char *name, int digits,
                       const tdm__prom_job *j, const tdm_metric_value *v,
                       const char *scope)
{
    add_series_head(b, name, j, v->vertex, v->subtask);
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
    if (tdm_metric_is_event_time(v->id) && v->value == TDM_TIME_MAX) {
        add_str(b, "} +Inf\n");
        return;
    }
    add_str(b, "} ");
    if (digits == 0)
        add_fmt(b, "%lld", (long long)v->value);
    else
        add_scaled(b, v->value, digits);
    add_str(b, "\n");
}

/* A snapshot's value indexes grouped by metric: a counting sort that
 * keeps the snapshot's own order within each metric, so that metric id's
 * values are order[start[id]] .. order[start[id + 1] - 1].  NULL on
 * NOMEM. */
static size_t *group_by_metric(const tdm_metrics *m,
                               size_t start[TDM_METRIC_COUNT_ + 1])
{
    size_t n = tdm_metrics_count(m);
    size_t fill[TDM_METRIC_COUNT_];
    size_t *order = tdm__malloc((n ? n : 1) * sizeof *order);
    if (order == NULL)
        return NULL;
    memset(start, 0, (TDM_METRIC_COUNT_ + 1) * sizeof *start);
    for (size_t i = 0; i < n; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        if (v != NULL && (int)v->id >= 0 && v->id < TDM_METRIC_COUNT_)
            start[v->id + 1]++;
    }
    for (int id = 0; id < TDM_METRIC_COUNT_; id++)
        start[id + 1] += start[id];
    memcpy(fill, start, sizeof fill);
    for (size_t i = 0; i < n; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        if (v != NULL && (int)v->id >= 0 && v->id < TDM_METRIC_COUNT_)
            order[fill[v->id]++] = i;
    }
    return order;
}

/* Appends the HELP and TYPE lines of metric @p id, named @p name. */
static void add_header(pbuf *b, int id, const char *name)
{
    const char *type = tdm_metric_type((tdm_metric)id);
    add_fmt(b, "# HELP %s ", name);
    add_escaped(b, tdm_metric_help((tdm_metric)id), 1);
    char name_[96];
    add_fmt(b, " (%s)\n# TYPE %s %s\n",
            tdm_metric_prom_name((tdm_metric)id, name_, sizeof name_)
                ? "seconds"
                : tdm_metric_unit((tdm_metric)id),
            name, strcmp(type, "COUNTER") == 0 ? "counter" : "gauge");
}

/* Appends the culprit of job @p j, derived from its snapshot: one series
 * naming the partition that holds the watermark back, valued by how
 * far; the family's header first unless *header says it was written. */
static void add_culprit(pbuf *b, const tdm__prom_job *j, int *header)
{
    tdm__culprit c;
    tdm__find_culprit(j->m, &c);
    if (!c.found)
        return;
    if (!*header)
        add_str(b, "# HELP tidemark_watermark_held_back_seconds The partition "
                   "holding the job's watermark back: how far its "
                   "watermark is behind the next lowest partition's "
                   "(seconds; -1 when it has none yet)\n"
                   "# TYPE tidemark_watermark_held_back_seconds gauge\n");
    *header = 1;
    add_series_head(b, "tidemark_watermark_held_back_seconds", j,
                    c.vertex ? c.vertex : "", c.subtask);
    add_fmt(b, ",partition=\"%d\"", c.partition);
    if (c.name != NULL) {
        add_str(b, ",partition_name=\"");
        add_escaped(b, c.name, 0);
        add_str(b, "\"");
    }
    add_str(b, "} ");
    if (c.behind_ms < 0)
        add_str(b, "-1");
    else
        add_scaled(b, c.behind_ms, 3);
    add_str(b, "\n");
}

/* Appends every job's samples of metric @p id, after its header. */
static void add_family(pbuf *b, int id, const tdm__prom_job *jobs, size_t n,
                       size_t *const *order,
                       const size_t (*start)[TDM_METRIC_COUNT_ + 1])
{
    const char *scope = tdm_metric_scope((tdm_metric)id);
    char name[96];
    int header = 0;
    int digits = tdm_metric_prom_name((tdm_metric)id, name, sizeof name);
    for (size_t j = 0; j < n; j++) {
        for (size_t k = start[j][id]; k < start[j][id + 1]; k++) {
            const tdm_metric_value *v = tdm_metrics_at(jobs[j].m, order[j][k]);
            /* "No watermark yet" is not a number anyone should graph. */
            if (tdm_metric_is_event_time(v->id) && v->value == TDM_TIME_MIN)
                continue;
            /* R-PM-1: partitions past the cap are counted, not listed. */
            if (strcmp(scope, "PARTITION") == 0 &&
                v->index >= jobs[j].max_partitions)
                continue;
            if (!header)
                add_header(b, id, name);
            header = 1;
            add_sample(b, name, digits, &jobs[j], v, scope);
        }
    }
}

/* Appends one tidemark_partition_series_omitted sample: @p k partitions
 * of subtask @p v->subtask of source @p v->vertex left out by the cap. */
static void add_omitted(pbuf *b, const tdm__prom_job *j,
                        const tdm_metric_value *v, int64_t k, int *header)
{
    if (!*header)
        add_str(b, "# HELP tidemark_partition_series_omitted Partitions of "
                   "a source subtask without partition series here "
                   "(http.prometheus.max_partitions; the JSON routes show "
                   "them) (partitions)\n"
                   "# TYPE tidemark_partition_series_omitted gauge\n");
    *header = 1;
    add_series_head(b, "tidemark_partition_series_omitted", j,
                    v->vertex ? v->vertex : "", v->subtask);
    add_fmt(b, "} %lld\n", (long long)k);
}

/* Appends, per source subtask with partitions past its job's cap, how
 * many were left out: counted over partitionWatermark, one value per
 * partition, which the snapshot lists subtask by subtask. */
static void add_omitted_all(pbuf *b, const tdm__prom_job *jobs, size_t n,
                            size_t *const *order,
                            const size_t (*start)[TDM_METRIC_COUNT_ + 1])
{
    int header = 0;
    for (size_t j = 0; j < n; j++) {
        const tdm_metric_value *run = NULL;
        int64_t k = 0;
        for (size_t i = start[j][TDM_METRIC_P_WM];
             i < start[j][TDM_METRIC_P_WM + 1]; i++) {
            const tdm_metric_value *v = tdm_metrics_at(jobs[j].m, order[j][i]);
            if (v->index < jobs[j].max_partitions)
                continue;
            if (run && (run->subtask != v->subtask ||
                        strcmp(run->vertex ? run->vertex : "",
                               v->vertex ? v->vertex : "") != 0)) {
                add_omitted(b, &jobs[j], run, k, &header);
                k = 0;
            }
            run = v;
            k++;
        }
        if (run)
            add_omitted(b, &jobs[j], run, k, &header);
    }
}

/* Renders snapshots (see server.h).  Samples of one metric must follow
 * its HELP and TYPE lines together, across jobs too, so each snapshot's
 * values are grouped by metric first (group_by_metric). */
tdm_err tdm__prom_render(const tdm__prom_job *jobs, size_t n, char **out,
                         size_t *len)
{
    pbuf b = {NULL, 0, 0, 0};
    size_t(*start)[TDM_METRIC_COUNT_ + 1] =
        tdm__malloc((n ? n : 1) * sizeof *start);
    size_t **order = tdm__calloc(n ? n : 1, sizeof *order);
    int culprit_header = 0;
    tdm_err err = TDM_ERR_NOMEM;

    *out = NULL;
    *len = 0;
    if (start == NULL || order == NULL)
        goto done;
    for (size_t j = 0; j < n; j++)
        if ((order[j] = group_by_metric(jobs[j].m, start[j])) == NULL)
            goto done;
    for (int id = 0; id < TDM_METRIC_COUNT_; id++)
        add_family(&b, id, jobs, n, order,
                   (const size_t(*)[TDM_METRIC_COUNT_ + 1]) start);
    for (size_t j = 0; j < n; j++)
        add_culprit(&b, &jobs[j], &culprit_header);
    add_omitted_all(&b, jobs, n, order,
                    (const size_t(*)[TDM_METRIC_COUNT_ + 1]) start);
    if (!b.oom && reserve(&b, 0)) {
        *out = b.p;
        *len = b.len;
        b.p = NULL;
        err = TDM_OK;
    }
done:
    for (size_t j = 0; order != NULL && j < n; j++)
        tdm__free(order[j]);
    tdm__free(order);
    tdm__free(start);
    tdm__free(b.p);
    return err;
}
