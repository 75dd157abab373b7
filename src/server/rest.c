/* SPDX-License-Identifier: MIT */
/* rest.c - the JSON routes of the embedded server (docs/rest-api.md),
 * each built from one tdm_job_metrics snapshot taken for the request:
 * the graph with aggregated vertex metrics (shaped like Flink's
 * /jobs/:id), Flink's watermark list, metrics by id, partitions and
 * channels with the one holding the watermark back, history, late
 * records, the diagnosis and "why has this window not fired?".
 * Watermarks are epoch ms, null for "none yet" and "end" for end of
 * input; Flink-shaped lists carry values as strings, as Flink does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "server/server.h"

/* ---- JSON helpers ---- */

/* A watermark as JSON: null for none yet, "end" for end of input. */
static json_t *jtime(tdm_time_ms t)
{
    if (t == TDM_TIME_MIN)
        return json_null();
    if (t == TDM_TIME_MAX)
        return json_string("end");
    return json_integer(t);
}

/* A metric value as JSON: event times with jtime, the rest as
 * integers. */
static json_t *jvalue(tdm_metric id, int64_t v)
{
    return tdm_metric_is_event_time(id) ? jtime(v) : json_integer(v);
}

/* Sets @p key of @p obj to @p v, which is taken even on failure; false
 * on NOMEM (a NULL @p v being the allocation that failed). */
static int put(json_t *obj, const char *key, json_t *v)
{
    return v != NULL && json_object_set_new(obj, key, v) == 0;
}

/* Appends @p v (taken) to @p arr; false on NOMEM. */
static int push(json_t *arr, json_t *v)
{
    return v != NULL && json_array_append_new(arr, v) == 0;
}

/* Sets @p key of @p obj to container @p c, of which the caller keeps
 * its own reference (to fill it, then drop it): fields then come out
 * in the order they are set, scalars first.  False on NOMEM. */
static int attach(json_t *obj, const char *key, json_t *c)
{
    return c != NULL && json_object_set(obj, key, c) == 0;
}

/* A string, or null when @p s is NULL. */
static json_t *jstr(const char *s)
{
    return s != NULL ? json_string(s) : json_null();
}

/* ---- Snapshot helpers ---- */

/* The vertex named @p name in the snapshot, or NULL. */
static const tdm_vertex_info *find_vertex(const tdm_metrics *m,
                                          const char *name)
{
    size_t nv = tdm_metrics_vertex_count(m);
    for (size_t i = 0; i < nv; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(m, i);
        if (vi != NULL && vi->name != NULL && strcmp(vi->name, name) == 0)
            return vi;
    }
    return NULL;
}

/* True when value @p v belongs to vertex @p name. */
static int of_vertex(const tdm_metric_value *v, const char *name)
{
    return v->vertex != NULL && strcmp(v->vertex, name) == 0;
}

/* Looks up a value; sets *out and returns 1, or returns 0. */
static int find(const tdm_metrics *m, tdm_metric id, const char *vertex,
                int subtask, int index, int64_t *out)
{
    return tdm_metrics_find(m, id, vertex, subtask, index, out);
}

/* A value of (vertex, subtask[, index]) as JSON, or null when absent. */
static json_t *jfind(const tdm_metrics *m, tdm_metric id, const char *vertex,
                     int subtask, int index)
{
    int64_t v;
    if (!find(m, id, vertex, subtask, index, &v))
        return json_null();
    return jvalue(id, v);
}

/* A 0/1 gauge as a JSON boolean (absent: false). */
static json_t *jbool(const tdm_metrics *m, tdm_metric id, const char *vertex,
                     int subtask, int index)
{
    int64_t v = 0;
    find(m, id, vertex, subtask, index, &v);
    return json_boolean(v != 0);
}

/* The job's state: CREATED before its first run, RUNNING, RESTARTING
 * (waiting out restart.strategy's back-off), FINISHED. */
static const char *job_state(tdm_job *job)
{
    if (tdm_job_is_restarting(job))
        return "RESTARTING";
    if (tdm_job_is_running(job))
        return "RUNNING";
    return tdm_job_start_time(job) != 0 ? "FINISHED" : "CREATED";
}

/* Takes a snapshot, or answers 500 and returns NULL. */
static tdm_metrics *snapshot(const tdm__rest_ctx *ctx, tdm__reply *out)
{
    tdm_metrics *m = NULL;
    tdm_err err = tdm_job_metrics(ctx->job, &m);
    if (err != TDM_OK) {
        char msg[128];
        snprintf(msg, sizeof msg, "cannot take a snapshot of the job: %s",
                 tdm_strerror(err));
        tdm__rest_error(out, 500, msg);
        return NULL;
    }
    return m;
}

/* ---- GET /jobs ---- */

/* {"jobs":[{"id","name","status"}]}: every served job, its name as its
 * id (a task's job with its task number).  No snapshot is needed: the
 * state is two atomics. */
static json_t *jobs_json(const tdm__rest_set *set)
{
    json_t *root = json_object(), *arr = json_array(), *j;
    if (root == NULL || !attach(root, "jobs", arr))
        goto fail;
    for (size_t i = 0; i < set->n; i++) {
        const tdm__rest_ctx *ctx = &set->jobs[i];
        j = json_object();
        if (!push(arr, j) || !put(j, "id", json_string(ctx->name)) ||
            !put(j, "name", json_string(ctx->name)) ||
            !put(j, "status", json_string(job_state(ctx->job))) ||
            (ctx->task >= 0 && !put(j, "task", json_integer(ctx->task))))
            goto fail;
    }
    json_decref(arr);
    return root;
fail:
    json_decref(arr);
    json_decref(root);
    return NULL;
}

/* ---- GET /tasks ---- */

/* One task of a task host: its number and job id, its state, its owner
 * epoch, since when this process runs it, the checkpoint it resumed from
 * and its newest checkpoint with the state's size in it. */
static json_t *task_json(const tdm__rest_ctx *ctx)
{
    tdm_job *job = ctx->job;
    int64_t last = tdm_job_stat(job, TDM_STAT_CHECKPOINT_ID);
    int64_t from = tdm_job_stat(job, TDM_STAT_RESTORED_ID);
    json_t *t = json_object(), *ck = NULL;
    if (t == NULL || !put(t, "task", json_integer(ctx->task)) ||
        !put(t, "id", json_string(ctx->name)) ||
        !put(t, "status", json_string(job_state(job))) ||
        !put(t, "owner_epoch", json_integer(ctx->epoch)) ||
        !put(t, "since", json_integer(ctx->since_ms)) ||
        !put(t, "restored_from", from > 0 ? json_integer(from) : json_null()) ||
        !put(t, "records_in",
             json_integer(tdm_job_stat(job, TDM_STAT_RECORDS_IN))) ||
        !put(t, "checkpoint_dir",
             json_string(tdm_job_get(job, "checkpoint.dir"))) ||
        !put(t, "latest_checkpoint", ck = json_object()) ||
        !put(ck, "id", last > 0 ? json_integer(last) : json_null()) ||
        !put(ck, "state_bytes",
             last > 0
                 ? json_integer(tdm_job_stat(job, TDM_STAT_CHECKPOINT_BYTES))
                 : json_null()) ||
        !put(ck, "duration_ms",
             last > 0 ? json_integer(tdm_job_stat(job, TDM_STAT_CHECKPOINT_MS))
                      : json_null())) {
        json_decref(t);
        return NULL;
    }
    return t;
}

/* A task being restored: no job yet, how far the read of its changelog
 * got. */
static json_t *restoring_json(const tdm_task_restore *r)
{
    json_t *t = json_object(), *p = NULL;
    if (t == NULL || !put(t, "task", json_integer(r->task)) ||
        !put(t, "status", json_string("RESTORING")) ||
        !put(t, "restore", p = json_object()) ||
        !put(p, "offset", json_integer(r->offset)) ||
        !put(p, "end", json_integer(r->end))) {
        json_decref(t);
        return NULL;
    }
    return t;
}

/* {"host": name, "tasks": [...]}: the tasks this process runs now and
 * those it is restoring, in task order (the server keeps both so). */
static json_t *tasks_json(const tdm__rest_set *set)
{
    json_t *root = json_object(), *arr = json_array();
    size_t i = 0, k = 0;
    if (root == NULL || !put(root, "host", jstr(set->host)) ||
        !attach(root, "tasks", arr))
        goto fail;
    while (i < set->n || k < set->n_restoring) {
        bool job = k == set->n_restoring ||
                   (i < set->n && set->jobs[i].task < set->restoring[k].task);
        if (!push(arr, job ? task_json(&set->jobs[i++])
                           : restoring_json(&set->restoring[k++])))
            goto fail;
    }
    json_decref(arr);
    return root;
fail:
    json_decref(arr);
    json_decref(root);
    return NULL;
}

/* ---- GET /jobs/:id ---- */

/* {"id", ...} of the last failed checkpoint, or null: its cause is text
 * only the job keeps (mmu), not a metric. */
static json_t *failed_json(tdm_job *job)
{
    int64_t id = tdm_job_stat(job, TDM_STAT_CHECKPOINT_FAILED_ID);
    char why[400];
    json_t *f, *msg;
    if (id <= 0)
        return json_null();
    tdm_job_checkpoint_failure(job, why, sizeof why);
    f = json_object();
    if (!put(f, "id", json_integer(id)) ||
        !put(f, "failure_timestamp",
             json_integer(tdm_job_stat(job, TDM_STAT_CHECKPOINT_FAILED_AT))) ||
        /* json_string is NULL when a path in it is not UTF-8. */
        !put(f, "failure_message",
             (msg = json_string(why)) != NULL ? msg
                                              : json_string("(not UTF-8)"))) {
        json_decref(f);
        return NULL;
    }
    return f;
}

/* "checkpoints": counts and the latest completed and failed checkpoint
 * (after Flink's /jobs/:id/checkpoints), the tolerance and the restarts;
 * status OK, FAILING (failures since the last completed one) or
 * RESTARTING.  null without checkpoint.dir. */
static json_t *ckpt_json(tdm_job *job)
{
    int64_t in_row = tdm_job_stat(job, TDM_STAT_CHECKPOINTS_FAILED_IN_ROW);
    int64_t last = tdm_job_stat(job, TDM_STAT_CHECKPOINT_ID);
    json_t *c, *counts, *latest;
    if (!*tdm_job_get(job, "checkpoint.dir"))
        return json_null();
    c = json_object();
    if (!put(c, "status",
             json_string(tdm_job_is_restarting(job) ? "RESTARTING"
                         : in_row > 0               ? "FAILING"
                                                    : "OK")) ||
        !put(c, "counts", counts = json_object()) ||
        !put(counts, "completed",
             json_integer(tdm_job_stat(job, TDM_STAT_CHECKPOINTS))) ||
        !put(counts, "failed",
             json_integer(tdm_job_stat(job, TDM_STAT_CHECKPOINTS_FAILED))) ||
        !put(counts, "consecutive_failed", json_integer(in_row)) ||
        !put(counts, "restarts",
             json_integer(tdm_job_stat(job, TDM_STAT_RESTARTS))) ||
        !put(c, "tolerable_failed",
             json_integer(
                 tdm_job_get_int(job, "checkpoint.tolerable_failed"))) ||
        !put(c, "restart_strategy",
             json_string(tdm_job_get(job, "restart.strategy"))) ||
        !put(c, "latest", latest = json_object()) ||
        !put(latest, "completed",
             last > 0 ? json_pack("{sI}", "id", (json_int_t)last)
                      : json_null()) ||
        !put(latest, "failed", failed_json(job))) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* The "metrics" object of vertex @p vi: every VERTEX-scope metric
 * aggregated over its subtasks (tdm_metric_combine), plus the inputs'
 * watermarks as currentInput<N>Watermark (minimum). */
static json_t *vertex_metrics(const tdm_metrics *m, const tdm_vertex_info *vi)
{
    int64_t acc[TDM_METRIC_COUNT_];
    unsigned char has[TDM_METRIC_COUNT_];
    json_t *o = json_object();
    size_t n = tdm_metrics_count(m);
    int max_input = 0;

    if (o == NULL)
        return NULL;
    memset(has, 0, sizeof has);
    for (size_t i = 0; i < n; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        int k;
        if (v == NULL || (int)v->id < 0 || v->id >= TDM_METRIC_COUNT_ ||
            !of_vertex(v, vi->name))
            continue;
        if (v->id == TDM_METRIC_INPUT_WM) {
            if (v->index > max_input)
                max_input = v->index;
            continue;
        }
        if (strcmp(tdm_metric_scope(v->id), "VERTEX") != 0)
            continue;
        k = tdm_metric_combine(v->id);
        if (!has[v->id])
            acc[v->id] = v->value;
        else if (k == TDM_METRIC_AGG_MIN && v->value < acc[v->id])
            acc[v->id] = v->value;
        else if (k == TDM_METRIC_AGG_MAX && v->value > acc[v->id])
            acc[v->id] = v->value;
        else if (k == TDM_METRIC_AGG_SUM)
            acc[v->id] = tdm__time_add_sat(acc[v->id], v->value);
        has[v->id] = 1;
    }
    for (int id = 0; id < TDM_METRIC_COUNT_; id++) {
        if (has[id] && !put(o, tdm_metric_name((tdm_metric)id),
                            jvalue((tdm_metric)id, acc[id]))) {
            json_decref(o);
            return NULL;
        }
    }
    /* Inputs: the minimum over subtasks of each input's watermark. */
    for (int in = 1; in <= max_input && in <= 64; in++) {
        int found = 0;
        int64_t w = 0;
        char key[48];
        for (size_t i = 0; i < n; i++) {
            const tdm_metric_value *v = tdm_metrics_at(m, i);
            if (v == NULL || v->id != TDM_METRIC_INPUT_WM || v->index != in ||
                !of_vertex(v, vi->name))
                continue;
            if (!found || v->value < w)
                w = v->value;
            found = 1;
        }
        snprintf(key, sizeof key, "currentInput%dWatermark", in);
        if (found && !put(o, key, jtime(w))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* Flink's job object (jid, name, state, start-time, duration, now,
 * vertices) with tidemark's vertex fields and an edge list.  The state
 * comes from the snapshot, so that it agrees with the values beside it;
 * start-time and duration are -1 before the first run, as in Flink for a
 * job that has not started. */
static json_t *job_json(const tdm__rest_ctx *ctx, const tdm_metrics *m)
{
    json_t *root = json_object(), *vs = json_array(), *es = json_array();
    size_t nv = tdm_metrics_vertex_count(m);
    int64_t start = tdm_job_start_time(ctx->job);
    const char *state = tdm_job_is_restarting(ctx->job) ? "RESTARTING"
                        : tdm_metrics_running(m)        ? "RUNNING"
                        : start != 0                    ? "FINISHED"
                                                        : "CREATED";

    if (root == NULL || vs == NULL || es == NULL ||
        !put(root, "jid", json_string(ctx->name)) ||
        !put(root, "name", json_string(ctx->name)) ||
        !put(root, "state", json_string(state)) ||
        !put(root, "start-time", json_integer(start != 0 ? start : -1)) ||
        !put(root, "duration",
             json_integer(start != 0
                              ? tdm_job_stat(ctx->job, TDM_STAT_ELAPSED_MS)
                              : -1)) ||
        !put(root, "now", json_integer(tdm_metrics_time(m))) ||
        !put(root, "checkpoints", ckpt_json(ctx->job)) ||
        !attach(root, "vertices", vs) || !attach(root, "edges", es))
        goto fail;
    for (size_t i = 0; i < nv; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(m, i);
        json_t *v = json_object(), *ins = NULL;
        if (!push(vs, v) || !put(v, "id", json_string(vi->name)) ||
            !put(v, "name", json_string(vi->name)) ||
            !put(v, "kind", json_string(tdm_node_kind_name(vi->kind))) ||
            !put(v, "type", jstr(vi->type)) ||
            !put(v, "parallelism", json_integer(vi->parallelism)) ||
            !put(v, "inputs", ins = json_array()) ||
            !put(v, "metrics", vertex_metrics(m, vi)))
            goto fail;
        for (int k = 0; k < vi->n_inputs; k++) {
            json_t *e;
            if (vi->inputs[k] == NULL)
                continue;
            if (!push(ins, json_string(vi->inputs[k])))
                goto fail;
            e = json_object();
            if (!push(es, e) || !put(e, "from", json_string(vi->inputs[k])) ||
                !put(e, "to", json_string(vi->name)))
                goto fail;
        }
    }
    json_decref(vs);
    json_decref(es);
    return root;
fail:
    json_decref(vs);
    json_decref(es);
    json_decref(root);
    return NULL;
}

/* ---- GET /jobs/:id/vertices/:vid/watermarks ---- */

/* Appends {"id": id, "value": "<v>"} to @p arr; false on NOMEM. */
static int push_flink(json_t *arr, const char *id, int64_t v)
{
    char num[32];
    json_t *o = json_object();
    snprintf(num, sizeof num, "%lld", (long long)v);
    return push(arr, o) && put(o, "id", json_string(id)) &&
           put(o, "value", json_string(num));
}

/* Flink's list: per subtask, currentInputWatermark,
 * currentOutputWatermark and currentInput<N>Watermark, values as strings
 * with Long.MIN_VALUE for "none yet". */
static json_t *watermarks_json(const tdm_metrics *m, const tdm_vertex_info *vi)
{
    json_t *arr = json_array();
    size_t n = tdm_metrics_count(m);
    char id[96];
    int64_t v;

    if (arr == NULL)
        return NULL;
    for (int st = 0; st < vi->parallelism; st++) {
        if (find(m, TDM_METRIC_WM_INPUT, vi->name, st, -1, &v)) {
            snprintf(id, sizeof id, "%d.currentInputWatermark", st);
            if (!push_flink(arr, id, v))
                goto fail;
        }
        if (find(m, TDM_METRIC_WM_OUTPUT, vi->name, st, -1, &v)) {
            snprintf(id, sizeof id, "%d.currentOutputWatermark", st);
            if (!push_flink(arr, id, v))
                goto fail;
        }
        for (size_t i = 0; i < n; i++) {
            const tdm_metric_value *mv = tdm_metrics_at(m, i);
            if (mv == NULL || mv->id != TDM_METRIC_INPUT_WM ||
                mv->subtask != st || !of_vertex(mv, vi->name))
                continue;
            snprintf(id, sizeof id, "%d.currentInput%dWatermark", st,
                     mv->index);
            if (!push_flink(arr, id, mv->value))
                goto fail;
        }
    }
    return arr;
fail:
    json_decref(arr);
    return NULL;
}

/* ---- GET /jobs/:id/metrics ---- */

/* The id of a value: "<metric>" at JOB scope, else
 * "<vertex>.<subtask>.<metric>" with ".<index>" where the scope has
 * one. */
static void metric_id(const tdm_metric_value *v, char *buf, size_t n)
{
    const char *name = tdm_metric_name(v->id);
    if (name == NULL)
        name = "unknown";
    if (v->vertex == NULL)
        snprintf(buf, n, "%s", name);
    else if (v->index >= 0)
        snprintf(buf, n, "%s.%d.%s.%d", v->vertex, v->subtask, name, v->index);
    else
        snprintf(buf, n, "%s.%d.%s", v->vertex, v->subtask, name);
}

/* True when @p id is one of the comma-separated ids of @p list. */
static int in_list(const char *list, const char *id)
{
    size_t n = strlen(id);
    const char *p = list;
    while (*p != '\0') {
        size_t l = strcspn(p, ",");
        if (l == n && memcmp(p, id, n) == 0)
            return 1;
        p += l;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* Every value as {"id","value"} in the snapshot's order, or, with
 * @p get, those whose id is listed (unknown ids are simply absent, as in
 * Flink). */
static json_t *metrics_json(const tdm_metrics *m, const char *get)
{
    json_t *arr = json_array();
    size_t n = tdm_metrics_count(m);
    char id[512];
    if (arr == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        if (v == NULL)
            continue;
        metric_id(v, id, sizeof id);
        if (get != NULL && !in_list(get, id))
            continue;
        if (!push_flink(arr, id, v->value)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* ---- GET /jobs/:id/partitions ---- */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The distinct indexes of the values of metric @p id of (vertex,
 * subtask), ascending, in *out (tdm__malloc'd, NULL when there are
 * none).  A source's partitions are numbered within the source, so one
 * subtask's may be 1, 3, 5.  Returns how many, or -1 on NOMEM. */
static int indexes(const tdm_metrics *m, tdm_metric id, const char *vertex,
                   int subtask, int **out)
{
    size_t n = tdm_metrics_count(m);
    int k = 0, cap = 0, *ix = NULL;
    *out = NULL;
    for (size_t i = 0; i < n; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        if (v == NULL || v->id != id || v->subtask != subtask || v->index < 0 ||
            !of_vertex(v, vertex))
            continue;
        if (k == cap) {
            int *nx;
            cap = cap ? 2 * cap : 16;
            nx = tdm__realloc(ix, (size_t)cap * sizeof *nx);
            if (nx == NULL) {
                tdm__free(ix);
                return -1;
            }
            ix = nx;
        }
        ix[k++] = v->index;
    }
    if (k > 1) {
        int u = 1;
        qsort(ix, (size_t)k, sizeof *ix, cmp_int);
        for (int i = 1; i < k; i++) {
            if (ix[i] != ix[u - 1])
                ix[u++] = ix[i];
        }
        k = u;
    }
    *out = ix;
    return k;
}

/* The label of (id, vertex, subtask, index), or NULL. */
static const char *find_label(const tdm_metrics *m, tdm_metric id,
                              const char *vertex, int subtask, int index)
{
    size_t n = tdm_metrics_count(m);
    for (size_t i = 0; i < n; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        if (v != NULL && v->id == id && v->subtask == subtask &&
            v->index == index && of_vertex(v, vertex))
            return v->label;
    }
    return NULL;
}

/* The culprit object, with sinceMs from the history (0 when the history
 * has not seen it yet: it has just become the culprit). */
static json_t *culprit_json(const tdm__rest_ctx *ctx, const tdm_metrics *m,
                            const tdm__culprit *c)
{
    json_t *o;
    tdm_time_ms since, now = tdm_metrics_time(m);
    int64_t since_ms = 0;
    if (!c->found)
        return json_null();
    if (tdm__history_culprit_since(ctx->hist, c->vertex, c->subtask,
                                   c->partition, &since) &&
        since <= now)
        since_ms = now - since;
    o = json_object();
    if (o == NULL || !put(o, "vertex", jstr(c->vertex)) ||
        !put(o, "subtask", json_integer(c->subtask)) ||
        !put(o, "partition", json_integer(c->partition)) ||
        !put(o, "name", jstr(c->name)) ||
        !put(o, "watermark", jtime(c->watermark)) ||
        !put(o, "next", jtime(c->next)) ||
        !put(o, "behindMs",
             c->behind_ms >= 0 ? json_integer(c->behind_ms) : json_null()) ||
        !put(o, "lastRecordAgeMs",
             c->last_record_age_ms >= 0 ? json_integer(c->last_record_age_ms)
                                        : json_null()) ||
        !put(o, "sinceMs", json_integer(since_ms))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* One source subtask with its partitions. */
/* Partition @p p's watermark: a finished partition that never had one
 * is at the end of its input ("end"), not "none yet" (null). */
static json_t *part_wm(const tdm_metrics *m, const char *vertex, int st, int p)
{
    int64_t fin = 0, wm = TDM_TIME_MIN;
    find(m, TDM_METRIC_P_FINISHED, vertex, st, p, &fin);
    if (fin &&
        (!find(m, TDM_METRIC_P_WM, vertex, st, p, &wm) || wm == TDM_TIME_MIN))
        return jtime(TDM_TIME_MAX); /* R-RS-1 */
    return jfind(m, TDM_METRIC_P_WM, vertex, st, p);
}

static json_t *source_task_json(const tdm_metrics *m, const char *vertex,
                                int st, const tdm__culprit *c)
{
    json_t *o = json_object(), *parts = json_array();
    int *ix = NULL;
    int np = indexes(m, TDM_METRIC_P_RECORDS, vertex, st, &ix);
    if (o == NULL || parts == NULL || np < 0 ||
        !put(o, "vertex", json_string(vertex)) ||
        !put(o, "subtask", json_integer(st)) ||
        !put(o, "watermark", jfind(m, TDM_METRIC_WM_OUTPUT, vertex, st, -1)) ||
        !put(o, "idle", jbool(m, TDM_METRIC_IDLE, vertex, st, -1)) ||
        !attach(o, "partitions", parts))
        goto fail;
    for (int i = 0; i < np; i++) {
        json_t *pj = json_object();
        int p = ix[i];
        int64_t rec = 0;
        int holds = c->found && c->vertex != NULL &&
                    strcmp(c->vertex, vertex) == 0 && c->subtask == st &&
                    c->partition == p;
        find(m, TDM_METRIC_P_RECORDS, vertex, st, p, &rec);
        if (!push(parts, pj) || !put(pj, "index", json_integer(p)) ||
            !put(pj, "name",
                 jstr(find_label(m, TDM_METRIC_P_RECORDS, vertex, st, p))) ||
            !put(pj, "watermark", part_wm(m, vertex, st, p)) ||
            !put(pj, "idle", jbool(m, TDM_METRIC_P_IDLE, vertex, st, p)) ||
            !put(pj, "finished",
                 jbool(m, TDM_METRIC_P_FINISHED, vertex, st, p)) ||
            !put(pj, "paused", jbool(m, TDM_METRIC_P_PAUSED, vertex, st, p)) ||
            !put(pj, "maxTimestamp",
                 jfind(m, TDM_METRIC_P_MAX_TS, vertex, st, p)) ||
            !put(pj, "records", json_integer(rec)) ||
            !put(pj, "lastRecordAgeMs",
                 jfind(m, TDM_METRIC_P_LAST_AGE, vertex, st, p)) ||
            !put(pj, "holdsBack", json_boolean(holds)))
            goto fail;
    }
    tdm__free(ix);
    json_decref(parts);
    return o;
fail:
    tdm__free(ix);
    json_decref(parts);
    json_decref(o);
    return NULL;
}

/* One operator subtask with its channels.  holdsBack marks the active
 * (neither idle nor ended) channels at the lowest watermark when some
 * other active channel is strictly higher: they alone keep the
 * subtask's input watermark where it is. */
static json_t *op_task_json(const tdm_metrics *m, const char *vertex, int st)
{
    json_t *o = json_object(), *chs = json_array();
    int *ix = NULL;
    int nc = indexes(m, TDM_METRIC_CH_WM, vertex, st, &ix);
    int64_t lo = 0, hi = 0, w;
    int any = 0;

    if (o == NULL || chs == NULL || nc < 0 ||
        !put(o, "vertex", json_string(vertex)) ||
        !put(o, "subtask", json_integer(st)) ||
        !put(o, "inputWatermark",
             jfind(m, TDM_METRIC_WM_INPUT, vertex, st, -1)) ||
        !put(o, "outputWatermark",
             jfind(m, TDM_METRIC_WM_OUTPUT, vertex, st, -1)) ||
        !attach(o, "channels", chs))
        goto fail;
    /* First pass: the range of the active channels' watermarks. */
    for (int i = 0; i < nc; i++) {
        int64_t idle = 0, ended = 0;
        find(m, TDM_METRIC_CH_IDLE, vertex, st, ix[i], &idle);
        find(m, TDM_METRIC_CH_ENDED, vertex, st, ix[i], &ended);
        if (idle || ended || !find(m, TDM_METRIC_CH_WM, vertex, st, ix[i], &w))
            continue;
        if (!any || w < lo)
            lo = w;
        if (!any || w > hi)
            hi = w;
        any = 1;
    }
    for (int i = 0; i < nc; i++) {
        json_t *cj = json_object();
        int ch = ix[i];
        int64_t idle = 0, ended = 0;
        int has_wm = find(m, TDM_METRIC_CH_WM, vertex, st, ch, &w);
        find(m, TDM_METRIC_CH_IDLE, vertex, st, ch, &idle);
        find(m, TDM_METRIC_CH_ENDED, vertex, st, ch, &ended);
        if (!push(chs, cj) || !put(cj, "index", json_integer(ch)) ||
            !put(cj, "from",
                 jstr(find_label(m, TDM_METRIC_CH_WM, vertex, st, ch))) ||
            !put(cj, "watermark", has_wm ? jtime(w) : json_null()) ||
            !put(cj, "idle", json_boolean(idle != 0)) ||
            !put(cj, "ended", json_boolean(ended != 0)) ||
            !put(cj, "holdsBack",
                 json_boolean(any && has_wm && !idle && !ended && w == lo &&
                              lo < hi)))
            goto fail;
    }
    tdm__free(ix);
    json_decref(chs);
    return o;
fail:
    tdm__free(ix);
    json_decref(chs);
    json_decref(o);
    return NULL;
}

/* Where the watermark comes from: every source subtask with its
 * partitions, every window and join subtask with its channels, and the
 * culprit (tdm__find_culprit, the same one the diagnosis names), whose
 * partition is also marked holdsBack in the source list. */
static json_t *partitions_json(const tdm__rest_ctx *ctx, const tdm_metrics *m)
{
    json_t *root = json_object(), *srcs = json_array(), *ops = json_array();
    size_t nv = tdm_metrics_vertex_count(m);
    tdm__culprit c;

    memset(&c, 0, sizeof c);
    tdm__find_culprit(m, &c);
    if (root == NULL || srcs == NULL || ops == NULL ||
        !put(root, "now", json_integer(tdm_metrics_time(m))) ||
        !put(root, "culprit", culprit_json(ctx, m, &c)) ||
        !attach(root, "sources", srcs) || !attach(root, "operators", ops))
        goto fail;
    for (size_t i = 0; i < nv; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(m, i);
        for (int st = 0; st < vi->parallelism; st++) {
            if (vi->kind == TDM_NODE_SOURCE) {
                if (!push(srcs, source_task_json(m, vi->name, st, &c)))
                    goto fail;
            } else if (vi->kind == TDM_NODE_WINDOW ||
                       vi->kind == TDM_NODE_JOIN) {
                if (!push(ops, op_task_json(m, vi->name, st)))
                    goto fail;
            }
        }
    }
    json_decref(srcs);
    json_decref(ops);
    return root;
fail:
    json_decref(srcs);
    json_decref(ops);
    json_decref(root);
    return NULL;
}

/* ---- GET /jobs/:id/history ---- */

/* The sampler's samples, with the snapshot's time as "now" so that a
 * chart can place them against the present. */
static json_t *history_json(const tdm__rest_ctx *ctx, const tdm_metrics *m)
{
    json_t *root = json_object();
    if (root == NULL || !put(root, "now", json_integer(tdm_metrics_time(m))) ||
        !put(root, "samples",
             ctx->hist != NULL ? tdm__history_json(ctx->hist) : json_array())) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* ---- GET /jobs/:id/late ---- */

/* The late counters summed over every window and join subtask, and
 * the recent late records the runtime remembers (oldest first). */
static json_t *late_json(const tdm_metrics *m)
{
    json_t *root = json_object(), *counts = json_object(),
           *samples = json_array();
    size_t n = tdm_metrics_count(m), nl = tdm_metrics_late_count(m);
    int64_t dropped = 0, side = 0, panes = 0;

    if (root == NULL || counts == NULL || samples == NULL ||
        !attach(root, "counts", counts) || !attach(root, "samples", samples))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        if (v == NULL || v->vertex == NULL)
            continue;
        if (v->id == TDM_METRIC_LATE_DROPPED)
            dropped = tdm__time_add_sat(dropped, v->value);
        else if (v->id == TDM_METRIC_LATE_SIDE)
            side = tdm__time_add_sat(side, v->value);
        else if (v->id == TDM_METRIC_LATE_PANES)
            panes = tdm__time_add_sat(panes, v->value);
    }
    if (!put(counts, "dropped", json_integer(dropped)) ||
        !put(counts, "sideOutput", json_integer(side)) ||
        !put(counts, "latePanes", json_integer(panes)))
        goto fail;
    for (size_t i = 0; i < nl; i++) {
        const tdm_late_sample *s = tdm_metrics_late_at(m, i);
        json_t *o = json_object();
        if (s == NULL) {
            json_decref(o);
            continue;
        }
        if (!push(samples, o) || !put(o, "vertex", jstr(s->vertex)) ||
            !put(o, "subtask", json_integer(s->subtask)) ||
            !put(o, "ts", jtime(s->ts)) ||
            !put(o, "watermark", jtime(s->watermark)) ||
            !put(o, "at", json_integer(s->at)) ||
            !put(o, "dropped", json_boolean(s->dropped)) ||
            !put(o, "row", jstr(s->row)))
            goto fail;
    }
    json_decref(counts);
    json_decref(samples);
    return root;
fail:
    json_decref(counts);
    json_decref(samples);
    json_decref(root);
    return NULL;
}

/* ---- Times for the windows route ---- */

/* Days from 1970-01-01 to @p y-@p m-@p d (proleptic Gregorian): count
 * the years from March, so that the leap day is the last day of its
 * year, then add whole 400-year eras (146097 days each). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Reads exactly @p n digits at *p into *out; false if they are not. */
static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return 0;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 1;
}

/* Parses a time (see server.h). */
int tdm__rest_parse_time(const char *text, tdm_time_ms *out)
{
    static const int mdays[12] = {31, 29, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
    const char *p = text;
    int y, mo, d, h, mi, s, ms = 0;

    if (text == NULL || *text == '\0')
        return 0;
    /* Epoch milliseconds: an optional '-' and 1 to 19 digits. */
    if (strchr(text, '-') == text || strchr(text, '-') == NULL) {
        int neg = *p == '-';
        int64_t v = 0;
        if (neg)
            p++;
        if (*p == '\0')
            return 0;
        for (; *p != '\0'; p++) {
            if (*p < '0' || *p > '9')
                return 0;
            if (__builtin_mul_overflow(v, 10, &v) ||
                __builtin_add_overflow(v, *p - '0', &v))
                return 0;
        }
        *out = neg ? -v : v;
        return 1;
    }
    /* YYYY-MM-DDTHH:MM:SS[.f{1,9}][Z] */
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) ||
        *p++ != '-' || !digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
        return 0;
    p++;
    if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) ||
        *p++ != ':' || !digits(&p, 2, &s))
        return 0;
    if (*p == '.') {
        int nd = 0;
        p++;
        while (*p >= '0' && *p <= '9') {
            if (nd < 3)
                ms = ms * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0 || nd > 9)
            return 0;
        for (int i = nd; i < 3; i++)
            ms *= 10;
    }
    if (*p == 'Z' || *p == 'z')
        p++;
    if (*p != '\0')
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 ||
        s > 59)
        return 0;
    if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
        return 0;
    *out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 +
           (int64_t)s * 1000 + ms;
    return 1;
}

/* ---- GET /jobs/:id/windows ---- */

/* Reads vertex, key and the window (window=START/SIZE, or start and
 * end) from the query, refuses what is missing or malformed with 400
 * and a message naming the parameter, and passes the rest to
 * tdm__explain_window, whose failures carry their own status. */
static void window_reply(const tdm__rest_ctx *ctx, const char *query,
                         tdm__reply *out)
{
    char vertex[256], key[1024], a[128], b[128], msg[512], errbuf[512] = "";
    tdm_time_ms start, end;
    int rs, re, rw, status = 400;
    json_t *j;

    if (tdm__query_get(query, "vertex", vertex, sizeof vertex) != 1 ||
        vertex[0] == '\0') {
        tdm__rest_error(out, 400,
                        "vertex: the window vertex is required "
                        "(?vertex=NAME&key=KEY&window=START/SIZE)");
        return;
    }
    rs = tdm__query_get(query, "key", key, sizeof key);
    if (rs != 1) {
        tdm__rest_error(out, 400,
                        rs < 0 ? "key: malformed or longer than 1023 bytes"
                               : "key: the key is required (the key "
                                 "fields' values, joined by ',')");
        return;
    }
    rw = tdm__query_get(query, "window", a, sizeof a);
    if (rw == 1) {
        char *slash = strchr(a, '/');
        int64_t size;
        if (slash == NULL) {
            snprintf(msg, sizeof msg,
                     "window: expected START/SIZE like "
                     "2026-12-02T10:00:00Z/5m, got \"%s\"",
                     a);
            tdm__rest_error(out, 400, msg);
            return;
        }
        *slash = '\0';
        if (!tdm__rest_parse_time(a, &start)) {
            snprintf(msg, sizeof msg,
                     "window: bad start \"%s\" (ISO-8601 "
                     "UTC or epoch milliseconds)",
                     a);
            tdm__rest_error(out, 400, msg);
            return;
        }
        if (tdm_duration_parse(slash + 1, &size) != TDM_OK || size <= 0) {
            snprintf(msg, sizeof msg,
                     "window: bad size \"%s\" (a positive "
                     "duration like 5m or 30s)",
                     slash + 1);
            tdm__rest_error(out, 400, msg);
            return;
        }
        if (__builtin_add_overflow(start, size, &end)) {
            tdm__rest_error(out, 400, "window: start + size overflows");
            return;
        }
    } else if (rw < 0) {
        tdm__rest_error(out, 400, "window: malformed value");
        return;
    } else {
        rs = tdm__query_get(query, "start", a, sizeof a);
        re = tdm__query_get(query, "end", b, sizeof b);
        if (rs != 1 || re != 1) {
            tdm__rest_error(out, 400,
                            "start and end (or window=START/SIZE) "
                            "are required");
            return;
        }
        if (!tdm__rest_parse_time(a, &start)) {
            snprintf(msg, sizeof msg,
                     "start: bad time \"%s\" (ISO-8601 UTC "
                     "or epoch milliseconds)",
                     a);
            tdm__rest_error(out, 400, msg);
            return;
        }
        if (!tdm__rest_parse_time(b, &end)) {
            snprintf(msg, sizeof msg,
                     "end: bad time \"%s\" (ISO-8601 UTC "
                     "or epoch milliseconds)",
                     b);
            tdm__rest_error(out, 400, msg);
            return;
        }
    }
    if (start >= end) {
        tdm__rest_error(out, 400, "the window's start must be before its end");
        return;
    }
    j = tdm__explain_window(ctx->job, vertex, key, start, end, &status, errbuf,
                            sizeof errbuf);
    if (j == NULL) {
        if (status != 400 && status != 404 && status != 503)
            status = 500;
        tdm__rest_error(out, status, errbuf[0] ? errbuf : "no answer");
        return;
    }
    tdm__rest_reply_json(out, 200, j);
}

/* ---- Dispatch ---- */

/* GET /metrics: the Prometheus text of a snapshot of every served
 * job. */
static void prom_reply(const tdm__rest_set *set, tdm__reply *out)
{
    char *text = NULL;
    size_t len = 0, n = 0;
    tdm__prom_job *jobs = tdm__calloc(set->n ? set->n : 1, sizeof *jobs);
    tdm_err err = jobs != NULL ? TDM_OK : TDM_ERR_NOMEM;
    for (; err == TDM_OK && n < set->n; n++) {
        tdm_metrics *m = NULL;
        err = tdm_job_metrics(set->jobs[n].job, &m);
        jobs[n].m = m;
        jobs[n].name = set->jobs[n].name;
        jobs[n].task = set->jobs[n].task;
        jobs[n].max_partitions =
            tdm_job_get_int(set->jobs[n].job, "http.prometheus.max_partitions");
    }
    if (err == TDM_OK)
        err = tdm__prom_render(jobs, set->n, &text, &len);
    for (size_t i = 0; jobs != NULL && i < n; i++)
        tdm_metrics_free((tdm_metrics *)jobs[i].m);
    tdm__free(jobs);
    if (err != TDM_OK) {
        tdm__rest_error(out, 500,
                        err == TDM_ERR_NOMEM ? "out of memory"
                                             : "cannot take a snapshot");
        return;
    }
    out->status = 200;
    out->type = "text/plain; version=0.0.4; charset=utf-8";
    out->body = text;
    out->len = len;
}

/* The served job named @p id, or NULL with a 404 in *out naming the
 * jobs there are. */
const tdm__rest_ctx *tdm__rest_find_job(const tdm__rest_set *set,
                                        const char *id, tdm__reply *out)
{
    char msg[512];
    size_t o = 0;
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->jobs[i].name, id) == 0)
            return &set->jobs[i];
    o = (size_t)snprintf(msg, sizeof msg, "no job \"%s\" (this server runs ",
                         id);
    for (size_t i = 0; i < set->n && o < sizeof msg; i++)
        o += (size_t)snprintf(msg + o, sizeof msg - o, "%s\"%s\"",
                              i ? ", " : "", set->jobs[i].name);
    if (o < sizeof msg)
        snprintf(msg + o, sizeof msg - o, "%s)",
                 set->n == 0 ? "no job now: its tasks run elsewhere" : "");
    tdm__rest_error(out, 404, msg);
    return NULL;
}

/* The routes under /jobs/:id answered from snapshot @p m (borrowed);
 * @p get is the metrics route's ?get= list (NULL: every metric). */
static void snapshot_reply(const tdm__rest_ctx *ctx, const tdm__route *r,
                           const tdm_metrics *m, const char *get,
                           tdm__reply *out)
{
    char msg[512];
    switch (r->id) {
    case TDM__R_JOB:
        tdm__rest_reply_json(out, 200, job_json(ctx, m));
        break;
    case TDM__R_VERTEX_WATERMARKS: {
        const tdm_vertex_info *vi = find_vertex(m, r->vertex);
        if (vi == NULL) {
            snprintf(msg, sizeof msg, "no vertex \"%s\" in job \"%s\"",
                     r->vertex, ctx->name);
            tdm__rest_error(out, 404, msg);
            break;
        }
        tdm__rest_reply_json(out, 200, watermarks_json(m, vi));
        break;
    }
    case TDM__R_JOB_METRICS:
        tdm__rest_reply_json(out, 200, metrics_json(m, get));
        break;
    case TDM__R_PARTITIONS:
        tdm__rest_reply_json(out, 200, partitions_json(ctx, m));
        break;
    case TDM__R_HISTORY:
        tdm__rest_reply_json(out, 200, history_json(ctx, m));
        break;
    case TDM__R_LATE:
        tdm__rest_reply_json(out, 200, late_json(m));
        break;
    case TDM__R_DIAGNOSIS:
        tdm__rest_reply_json(out, 200, tdm__diagnose(ctx->job, m, ctx->hist));
        break;
    default:
        tdm__rest_error(out, 404, "no such resource");
        break;
    }
}

/* Answers a route (see server.h). */
void tdm__rest_reply(const tdm__rest_set *set, const tdm__route *r,
                     const char *query, tdm__reply *out)
{
    tdm_metrics *m = NULL;
    char get[8192];
    const tdm__rest_ctx *ctx;
    int rc;

    memset(out, 0, sizeof *out);
    switch (r->id) {
    case TDM__R_NOT_FOUND:
    case TDM__R_PAGE:
        tdm__rest_error(out, 404, "no such resource (see docs/rest-api.md)");
        return;
    case TDM__R_BAD_REQUEST:
        tdm__rest_error(out, 400,
                        "malformed path: bad %-escape, NUL or "
                        "id longer than 127 bytes");
        return;
    case TDM__R_METHOD:
        if (r->patchable) {
            tdm__rest_error(out, 405, "only GET, HEAD and PATCH are allowed");
            out->allow = "GET, HEAD, PATCH";
            return;
        }
        tdm__rest_error(out, 405, "only GET and HEAD are allowed");
        return;
    case TDM__R_JOBS:
        tdm__rest_reply_json(out, 200, jobs_json(set));
        return;
    case TDM__R_PROMETHEUS:
        prom_reply(set, out);
        return;
    case TDM__R_TASKS:
        if (set->tasks)
            tdm__rest_reply_json(out, 200, tasks_json(set));
        else
            tdm__rest_error(out, 404,
                            "this server runs one job, not tasks "
                            "(scale_out: tasks; see GET /jobs)");
        return;
    default:
        break;
    }
    /* Every other route is under /jobs/:id. */
    if ((ctx = tdm__rest_find_job(set, r->job, out)) == NULL)
        return;
    if (r->id == TDM__R_WINDOW) {
        window_reply(ctx, query, out);
        return;
    }
    if (r->id == TDM__R_CONFIG) {
        tdm__rest_config_get(ctx, out);
        return;
    }
    rc = 0;
    if (r->id == TDM__R_JOB_METRICS) {
        rc = tdm__query_get(query, "get", get, sizeof get);
        if (rc < 0) {
            tdm__rest_error(out, 400,
                            "get: malformed or longer than 8191 "
                            "bytes");
            return;
        }
    }
    if ((m = snapshot(ctx, out)) == NULL)
        return;
    snapshot_reply(ctx, r, m, rc == 1 ? get : NULL, out);
    tdm_metrics_free(m);
}
