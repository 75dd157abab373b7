/* SPDX-License-Identifier: MIT */
/* run.c - tdm_job_run: turns a validated job into an execution plan
 * (sources with their watermark strategies and routing edges, operators
 * with their output columns, shared sinks), starts one thread per source
 * subtask and per operator subtask, reports progress from the calling
 * thread, and tears everything down once every subtask has finished and
 * every sink is flushed.
 *
 * An operator other operators read (chaining) is planned as a derived
 * source as well - its output schema, edges to its readers - without a
 * thread: its operator subtasks write it (task_source.c, rt_emit_*).
 *
 * Threads: sources x parallelism + (windows + joins) x parallelism.
 * Failure anywhere (I/O, memory) sets the run's abort flag: producers
 * stop, queues and pools wake their waiters, and the first error is
 * returned.  Cancel is softer: sources stop reading and end their input
 * normally, so the maximum watermark still flushes every window - unless
 * the job stops on cancel (on_cancel stop, or auto with an endless Kafka
 * source): then open windows are left for the next run.
 *
 * Sources whose partitions come and go (connector version 2, Kafka)
 * commit their positions at least once: every commit.interval this
 * thread takes what each source subtask's consumers handled and the
 * operators' watermark, flushes the sinks, and hands the pair to the
 * source threads; the final commit follows the sinks' close.  Watermark
 * alignment groups get one coordinator each, driven by their sources.
 */
#define _GNU_SOURCE /* pthread_setname_np (named threads for top, perf) */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/expr.h"
#include "runtime/ckpt.h"
#include "runtime/metrics.h"
#include "runtime/plan.h"
#include "runtime/rt_ctx.h"
#include "runtime/task_op.h"
#include "runtime/task_source.h"

/* ---- Shared helpers ---- */

/* ---- Planning ---- */

/* Punctuated strategy: a row whose marker field is true is a marker. */
static int marker_fn(void *ud, const tdm_record *rec)
{
    const rt_source *s = ud;
    const tdm__row *row = rec->payload;
    return row && !row->v[s->marker_idx].null && row->v[s->marker_idx].u.i;
}

/* Lookups by node name among the planned sinks and sources. */
static rt_sink *find_sink(tdm__run *run, const char *name)
{
    if (!name || !*name)
        return NULL;
    for (int i = 0; i < run->n_sinks; i++)
        if (strcmp(run->sinks[i].node->name, name) == 0)
            return &run->sinks[i];
    return NULL;
}

/* A source, or the derived source of an operator other operators read
 * (chaining). */
static rt_source *find_source(tdm__run *run, const char *name)
{
    for (int i = 0; i < run->n_srcs; i++)
        if (strcmp(run->srcs[i].node->name, name) == 0)
            return &run->srcs[i];
    for (int i = 0; i < run->n_dsrcs; i++)
        if (strcmp(run->dsrcs[i].node->name, name) == 0)
            return &run->dsrcs[i];
    return NULL;
}

/* Whether some window or join reads operator node @p op. */
static bool op_read(const tdm_job *job, const tdm_node *op)
{
    for (int i = 0; i < job->n_nodes; i++) {
        const tdm_node *n = job->nodes[i];
        if (n->kind == TDM_NODE_WINDOW) {
            const tdm__conf_val *f = tdm__node_val(n, "from");
            for (int k = 0; k < f->n_fields; k++)
                if (strcmp(f->fields[k], op->name) == 0)
                    return true;
        } else if (n->kind == TDM_NODE_JOIN) {
            if (strcmp(tdm__node_str(n, "left"), op->name) == 0 ||
                strcmp(tdm__node_str(n, "right"), op->name) == 0)
                return true;
        }
    }
    return false;
}

/* The derived source of operator node @p n (docs/runtime.md, Chained
 * operators): its output schema, event time unless the window is a
 * processing-time one; edges are added by its consumers' plans. */
static void plan_derived(rt_source *s, tdm_node *n)
{
    s->node = n;
    s->schema = tdm__node_schema(n);
    s->derived = true;
    atomic_init(&s->unit_warned, 0);
    atomic_init(&s->first_live, TDM_TIME_MAX);
    atomic_init(&s->replay_start, TDM_TIME_MIN);
    atomic_init(&s->replay_last, TDM_TIME_MIN);
    s->conf.name = n->name;
    s->conf.time_mode = n->kind == TDM_NODE_WINDOW &&
                                tdm__node_int(n, "window.time") == 1
                            ? TDM__TIME_PROCESSING
                            : TDM__TIME_EVENT;
}

/* A string key's text, NULL when empty (the connectors' "not given"). */
static const char *opt_str(const tdm_node *n, const char *key)
{
    const char *v = tdm__node_str(n, key);
    return *v ? v : NULL;
}

/* The "kafka.*" pass-through properties of a node: the parsed pairs,
 * borrowed (the node outlives the run). */
static void plan_props(const tdm_node *n, const char *const **out,
                       int *n_out)
{
    const tdm__conf_val *v = tdm__node_val(n, "kafka.*");
    *out = (const char *const *)v->props;
    *n_out = v->props ? v->n_props : 0;
}

/* A sink's connector configuration (the table's enum indexes are the
 * connector's constants minus one). */
static void plan_sink(rt_sink *s, tdm_node *n)
{
    s->node = n;
    s->conf.name = n->name;
    s->conf.type = (int)tdm__node_int(n, "type") + 1;
    s->conf.path = tdm__node_str(n, "path");
    s->conf.format = (int)tdm__node_int(n, "format") + 1;
    s->conf.kafka_brokers = opt_str(n, "brokers");
    s->conf.kafka_topic = opt_str(n, "topic");
    plan_props(n, &s->conf.kafka_props, &s->conf.kafka_n_props);
    s->conf.debug = tdm__job_int(n->job, "log.level") == 1;
    s->conf.log = tdm__ctx_log_line;
    s->conf.log_ud = n->job;
    if (n->sink_vt)
        s->vt = n->sink_vt;
    else if (s->conf.type == TDM__SINK_KAFKA)
        s->vt = &tdm__kafka_sink;
    else
        s->vt = &tdm__text_sink;
}

/* The Kafka keys of a source (docs/kafka.md): brokers, topics or a
 * pattern, the group (default "tidemark-<job>-<node>"), the start
 * position, stop, where timestamps and keys come from, and the kafka.*
 * pass-through properties; the connectors' log.  The enum keys are the
 * connector's constants minus one.  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err plan_kafka(rt_source *s, tdm_node *n)
{
    tdm__source_conf *c = &s->conf;
    c->kafka_brokers = opt_str(n, "brokers");
    c->kafka_topics = opt_str(n, "topics");
    c->kafka_pattern = opt_str(n, "topic_pattern");
    c->kafka_group = opt_str(n, "group");
    if (!c->kafka_group) {
        const char *job = tdm__job_str(n->job, "name");
        size_t l = strlen(job) + strlen(n->name) + 16;
        s->group_owned = tdm__malloc(l);
        if (!s->group_owned)
            return TDM_ERR_NOMEM;
        snprintf(s->group_owned, l, "tidemark-%s-%s", job, n->name);
        c->kafka_group = s->group_owned;
    }
    c->kafka_start = (int)tdm__node_int(n, "start") + 1;
    c->kafka_start_ts = TDM_TIME_MIN;
    const char *st = tdm__node_str(n, "start.timestamp");
    if (*st && !tdm__start_ts_parse(st, &c->kafka_start_ts))
        c->kafka_start_ts = TDM_TIME_MIN;
    c->kafka_stop_at_end = tdm__node_int(n, "stop") == 1;
    c->ts_from_message = tdm__node_int(n, "timestamp.source") == 1;
    const char *kf = tdm__node_str(n, "key.field");
    c->key_field = *kf ? tdm__schema_find(s->schema, kf) : -1;
    plan_props(n, &c->kafka_props, &c->kafka_n_props);
    c->checkpointing = *tdm__job_str(n->job, "checkpoint.dir") != '\0';
    c->log = tdm__ctx_log_line;
    c->log_ud = n->job;
    return TDM_OK;
}

/* The source's connector configuration and watermark strategy. */
/* generator.nexmark.kinds ("person,auction,bid", any subset) as a bit
 * mask of TDM__NX_* kinds; job.c validated the words. */
static int nexmark_kinds(const char *s)
{
    static const char *const names[3] = { "person", "auction", "bid" };
    int mask = 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        for (int k = 0; k < 3; k++)
            if (len == strlen(names[k]) && strncmp(s, names[k], len) == 0)
                mask |= 1 << k;
        s += len + (s[len] == ',');
    }
    return mask;
}

static tdm_err plan_source(rt_source *s, tdm_node *n, char *errbuf,
                           size_t errbuf_size)
{
    tdm__source_conf *c = &s->conf;
    tdm_err err0;
    s->node = n;
    s->schema = tdm__node_schema(n);
    atomic_init(&s->unit_warned, 0);
    atomic_init(&s->first_live, TDM_TIME_MAX);
    atomic_init(&s->replay_start, TDM_TIME_MIN);
    atomic_init(&s->replay_last, TDM_TIME_MIN);
    c->name = n->name;
    c->type = (int)tdm__node_int(n, "type") + 1;
    c->path = tdm__node_str(n, "path");
    c->format = (int)tdm__node_int(n, "format") + 1;
    c->csv_header = tdm__node_int(n, "csv.header") != 0;
    c->csv_delimiter = tdm__node_str(n, "csv.delimiter")[0];
    c->schema = s->schema;
    const char *pf = tdm__node_str(n, "partition.field");
    c->partition_field = *pf ? tdm__schema_find(s->schema, pf) : -1;
    c->time_mode = (int)tdm__node_int(n, "time") + 1;
    const char *tsf = tdm__node_str(n, "timestamp.field");
    if (!*tsf && c->type == TDM__SRC_GENERATOR)
        tsf = tdm__node_int(n, "generator.kind") + 1 == TDM__GEN_NEXMARK
                  ? "date_time"
                  : "ts";
    c->ts_field = c->time_mode == TDM__TIME_EVENT
                      ? tdm__schema_find(s->schema, tsf)
                      : -1;
    c->ts_unit = (int)tdm__node_int(n, "timestamp.unit") + 1;
    c->tcp_address = tdm__node_str(n, "tcp.address");
    c->tcp_reconnect_on_close = tdm__node_int(n, "tcp.on_close") == 0;
    c->tcp_connect_timeout = tdm__node_int(n, "tcp.connect_timeout");
    c->tcp_reconnect_timeout = tdm__node_int(n, "tcp.reconnect.timeout");
    c->tcp_backoff = tdm__node_int(n, "tcp.reconnect.backoff");
    c->tcp_max_backoff = tdm__node_int(n, "tcp.reconnect.max_backoff");
    c->gen_kind = (int)tdm__node_int(n, "generator.kind") + 1;
    c->gen_records = tdm__node_int(n, "generator.records");
    c->gen_rate = tdm__node_int(n, "generator.rate");
    c->gen_keys = tdm__node_int(n, "generator.keys");
    c->gen_partitions = tdm__node_int(n, "generator.partitions");
    c->gen_seed = tdm__node_int(n, "generator.seed");
    c->gen_skew = tdm__node_val(n, "generator.skew")->d;
    c->gen_late_fraction = tdm__node_val(n, "generator.late_fraction")->d;
    c->gen_max_delay = tdm__node_int(n, "generator.max_delay");
    c->gen_late_delay = tdm__node_int(n, "generator.late_delay");
    c->gen_idle_from = tdm__node_int(n, "generator.idle_from");
    c->gen_idle_for = tdm__node_int(n, "generator.idle_for");
    c->gen_idle_partition = tdm__node_int(n, "generator.idle_partition");
    c->nx_kinds = nexmark_kinds(tdm__node_str(n, "generator.nexmark.kinds"));
    c->nx_ooo_group = tdm__node_int(n, "generator.nexmark.out_of_order_group");
    c->nx_flink = tdm__node_int(n, "generator.nexmark.flink_numbering") != 0;
    err0 = plan_kafka(s, n);
    if (err0 != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err0,
                         "out of memory planning source \"%s\"", n->name);
    if (n->src_vt)
        s->vt = n->src_vt;
    else if (c->type == TDM__SRC_KAFKA)
        s->vt = &tdm__kafka_source;
    else if (c->type == TDM__SRC_TCP)
        s->vt = &tdm__tcp_source;
    else if (c->type == TDM__SRC_GENERATOR &&
             c->gen_kind == TDM__GEN_NEXMARK)
        s->vt = &tdm__nexmark_source;
    else if (c->type == TDM__SRC_GENERATOR)
        s->vt = &tdm__generator_source;
    else
        s->vt = &tdm__file_source;

    s->v2 = s->vt->version >= 2 && s->vt->n_partitions;
    if (s->v2) {
        tdm__conn_shared *sh = tdm__calloc(1, sizeof *sh);
        if (!sh || pthread_mutex_init(&sh->mu, NULL) != 0) {
            tdm__free(sh);
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                             "out of memory");
        }
        c->shared = sh;
    }

    /* Watermarks: ingestion time is monotonous by construction;
     * processing time has none. */
    int strategy = (int)tdm__node_int(n, "watermark.strategy");
    tdm_wm_kind kind = strategy == 0   ? TDM_WM_BOUNDED
                       : strategy == 1 ? TDM_WM_MONOTONOUS
                       : strategy == 2 ? TDM_WM_PUNCTUATED
                                       : TDM_WM_NONE;
    if (c->time_mode == TDM__TIME_INGESTION)
        kind = TDM_WM_MONOTONOUS;
    else if (c->time_mode == TDM__TIME_PROCESSING)
        kind = TDM_WM_NONE;
    int64_t bound = tdm__node_int(n, "watermark.max_out_of_orderness");
    char msg[200] = "";
    tdm_err err = tdm_wm_strategy_new(kind, bound, &s->strat, msg, sizeof msg);
    if (err == TDM_OK)
        err = tdm_wm_strategy_set_interval(
            s->strat, tdm__node_int(n, "watermark.interval"), msg,
            sizeof msg);
    bool on_event = tdm__node_int(n, "watermark.emit") == 1 &&
                    (kind == TDM_WM_BOUNDED || kind == TDM_WM_MONOTONOUS);
    if (err == TDM_OK && on_event)
        err = tdm_wm_strategy_set_emit_on_event(s->strat, 1);
    s->wm_max_only = !on_event && (kind == TDM_WM_BOUNDED ||
                                   kind == TDM_WM_MONOTONOUS ||
                                   kind == TDM_WM_NONE);
    int64_t idle = tdm__node_int(n, "watermark.idle_timeout");
    if (err == TDM_OK && idle > 0 && kind != TDM_WM_NONE)
        err = tdm_wm_strategy_set_idle_timeout(s->strat, idle, msg,
                                               sizeof msg);
    if (err == TDM_OK && kind == TDM_WM_PUNCTUATED) {
        s->marker_idx = tdm__schema_find(
            s->schema, tdm__node_str(n, "watermark.marker_field"));
        err = tdm_wm_strategy_set_marker(s->strat, marker_fn, s);
    }
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "source \"%s\": %s",
                         n->name, msg[0] ? msg : tdm_strerror(err));
    return TDM_OK;
}

/* Adds the edge source -> op (input @p input) to the source. */
static tdm_err add_edge(tdm__run *run, rt_source *s, rt_op *op, int input,
                        const tdm__conf_val *keys)
{
    rt_edge *ne = tdm__realloc(s->edges,
                               (size_t)(s->n_edges + 1) * sizeof *ne);
    if (!ne)
        return TDM_ERR_NOMEM;
    s->edges = ne;
    rt_edge *e = &s->edges[s->n_edges];
    memset(e, 0, sizeof *e);
    e->op = op;
    e->input = input;
    e->n_key = keys->n_fields;
    e->key_idx = tdm__calloc((size_t)(keys->n_fields + 1), sizeof(int));
    if (!e->key_idx)
        return TDM_ERR_NOMEM;
    for (int k = 0; k < keys->n_fields; k++)
        e->key_idx[k] = tdm__schema_find(s->schema, keys->fields[k]);
    e->target_base = s->n_targets;
    s->n_targets += run->P;
    s->n_edges++;
    op->in_key_idx[input] = e->key_idx;
    return TDM_OK;
}

/* Output column @p i: a name borrowed from the configuration, or one
 * made with a prefix ("left.user") and owned by the plan. */
static tdm_err set_col(rt_op *op, int i, const char *prefix,
                       const char *name, tdm_type type)
{
    op->col_types[i] = type;
    if (!prefix) {
        op->col_names[i] = name;
        return TDM_OK;
    }
    size_t l = strlen(prefix) + strlen(name) + 1;
    char *s = tdm__malloc(l);
    if (!s)
        return TDM_ERR_NOMEM;
    snprintf(s, l, "%s%s", prefix, name);
    op->owned_names[i] = s;
    op->col_names[i] = s;
    return TDM_OK;
}

/* A window: its inputs (a union is several edges into one operator,
 * input i owning channels i*P .. i*P+P-1), the aggregate field indexes
 * per input, and the output columns: key fields, then aggregates. */
static tdm_err plan_window(tdm__run *run, rt_op *op, tdm_node *n)
{
    const tdm__conf_val *from = tdm__node_val(n, "from");
    const tdm__conf_val *keys = tdm__node_val(n, "key_by");
    const tdm__conf_val *aggs = tdm__node_val(n, "aggregates");
    op->n_inputs = from->n_fields;
    op->n_key = keys->n_fields;
    op->specs = aggs->aggs;
    op->n_aggs = aggs->n_aggs;
    op->fast_count = aggs->n_aggs == 1 && aggs->aggs[0].fn == TDM__FN_COUNT;
    op->mode = (int)tdm__node_int(n, "output_mode");
    bool global = tdm__node_int(n, "window.type") == 3;
    bool wproc = tdm__node_int(n, "window.time") == 1;
    op->proc_time = wproc || tdm__node_int(n, "trigger") == 2;
    op->event_time = !global && !wproc;
    op->lateness = tdm__node_int(n, "allowed_lateness");
    int wtype = (int)tdm__node_int(n, "window.type");
    int trig = (int)tdm__node_int(n, "trigger");
    op->wtype = wtype;
    op->wsize = tdm__node_int(n, "window.size");
    op->wslide = tdm__node_int(n, "window.slide");
    op->woffset = tdm__node_int(n, "window.offset");
    /* Count, processing-time and continuous triggers and processing-time
     * windows write results their watermark has not reached. */
    op->early = (trig >= 2 && trig <= 4) || !op->event_time;
    if (op->early)
        run->any_early = true;
    /* Tumbling and sliding event-time windows end; a record can change
     * results until its last window is cleaned up.  Count and
     * processing-time triggers fire on other clocks. */
    if (op->event_time && wtype <= 1 && trig != 2 && trig != 3) {
        int64_t size = tdm__node_int(n, "window.size");
        op->hz.kind = RT_HZ_WINDOW;
        op->hz.size = size;
        op->hz.step = wtype == 1 ? tdm__node_int(n, "window.slide") : size;
        op->hz.offset = tdm__node_int(n, "window.offset");
        op->hz.lateness = op->lateness;
    }
    op->n_cols = op->n_key + op->n_aggs;
    op->inputs = tdm__calloc((size_t)op->n_inputs, sizeof *op->inputs);
    op->in_key_idx = tdm__calloc((size_t)op->n_inputs, sizeof(int *));
    op->agg_idx = tdm__calloc((size_t)op->n_inputs, sizeof(int *));
    op->agg_in_types = tdm__calloc((size_t)op->n_aggs, sizeof(tdm_type));
    op->col_names = tdm__calloc((size_t)op->n_cols, sizeof(char *));
    op->owned_names = tdm__calloc((size_t)op->n_cols, sizeof(char *));
    op->col_types = tdm__calloc((size_t)op->n_cols, sizeof(tdm_type));
    if (!op->inputs || !op->in_key_idx || !op->agg_idx ||
        !op->agg_in_types || !op->col_names || !op->owned_names ||
        !op->col_types)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < op->n_inputs; i++) {
        rt_source *s = find_source(run, from->fields[i]);
        op->inputs[i] = s;
        tdm_err err = add_edge(run, s, op, i, keys);
        if (err != TDM_OK)
            return err;
        op->agg_idx[i] = tdm__calloc((size_t)op->n_aggs, sizeof(int));
        if (!op->agg_idx[i])
            return TDM_ERR_NOMEM;
        for (int a = 0; a < op->n_aggs; a++)
            op->agg_idx[i][a] =
                aggs->aggs[a].field
                    ? tdm__schema_find(s->schema, aggs->aggs[a].field)
                    : -1;
    }
    const tdm__schema *s0 = op->inputs[0]->schema;
    for (int k = 0; k < op->n_key; k++) {
        int f = tdm__schema_find(s0, keys->fields[k]);
        set_col(op, k, NULL, keys->fields[k], s0->fields[f].type);
    }
    for (int a = 0; a < op->n_aggs; a++) {
        int f = op->agg_idx[0][a];
        tdm_type in = f >= 0 ? s0->fields[f].type : TDM_TYPE_INT64;
        op->agg_in_types[a] = in;
        set_col(op, op->n_key + a, NULL, aggs->aggs[a].as,
                tdm__rowagg_type(aggs->aggs[a].fn, in));
    }
    return TDM_OK;
}

/* A join: left input 0, right input 1; output columns left.*, right.*,
 * ts. */
static tdm_err plan_join(tdm__run *run, rt_op *op, tdm_node *n)
{
    static const char *const side_key[2] = { "left", "right" };
    static const char *const key_key[2] = { "left_key", "right_key" };
    op->n_inputs = 2;
    op->n_key = tdm__node_val(n, "left_key")->n_fields;
    /* A window join's pairs are final when the window fires; an
     * interval join's horizon is not tracked (commits at the end). */
    int wtype = (int)tdm__node_int(n, "window.type");
    if (tdm__node_int(n, "type") != 0 && wtype <= 1) {
        int64_t size = tdm__node_int(n, "window.size");
        op->hz.kind = RT_HZ_WINDOW;
        op->hz.size = size;
        op->hz.step = wtype == 1 ? tdm__node_int(n, "window.slide") : size;
    }
    op->inputs = tdm__calloc(2, sizeof *op->inputs);
    op->in_key_idx = tdm__calloc(2, sizeof(int *));
    if (!op->inputs || !op->in_key_idx)
        return TDM_ERR_NOMEM;
    for (int s = 0; s < 2; s++) {
        op->inputs[s] = find_source(run, tdm__node_str(n, side_key[s]));
        tdm_err err = add_edge(run, op->inputs[s], op, s,
                               tdm__node_val(n, key_key[s]));
        if (err != TDM_OK)
            return err;
    }
    const tdm__schema *ls = op->inputs[0]->schema;
    const tdm__schema *rs = op->inputs[1]->schema;
    op->n_cols = ls->n + rs->n + 1;
    op->col_names = tdm__calloc((size_t)op->n_cols, sizeof(char *));
    op->owned_names = tdm__calloc((size_t)op->n_cols, sizeof(char *));
    op->col_types = tdm__calloc((size_t)op->n_cols, sizeof(tdm_type));
    if (!op->col_names || !op->owned_names || !op->col_types)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < ls->n; i++)
        if (set_col(op, i, "left.", ls->fields[i].name,
                    ls->fields[i].type) != TDM_OK)
            return TDM_ERR_NOMEM;
    for (int i = 0; i < rs->n; i++)
        if (set_col(op, ls->n + i, "right.", rs->fields[i].name,
                    rs->fields[i].type) != TDM_OK)
            return TDM_ERR_NOMEM;
    set_col(op, op->n_cols - 1, NULL, "ts", TDM_TYPE_TIMESTAMP);
    return TDM_OK;
}

/* ---- Commit horizon, alignment, repartition ---- */

/* C(ts) of one operator: the end of the last window holding ts, minus
 * one, plus the allowed lateness (saturating). */
static tdm_time_ms op_horizon(const rt_horizon *h, tdm_time_ms ts)
{
    if (h->kind != RT_HZ_WINDOW)
        return TDM_TIME_MAX;
    tdm_time_ms start = tdm__window_start(ts, h->offset, h->step);
    tdm_time_ms end = tdm__time_add_sat(start, h->size);
    return tdm__time_add_sat(end - 1, h->lateness);
}

/* The commit horizon of a record at  ts for one consumer edge. */
tdm_time_ms rt_edge_horizon(const rt_edge *e, tdm_time_ms ts)
{
    return ts == TDM_TIME_MIN ? TDM_TIME_MIN : op_horizon(&e->op->hz, ts);
}

/* The maximum over the source's consumers; TDM_TIME_MIN for "no
 * record" (ts TDM_TIME_MIN). */
tdm_time_ms rt_horizon_of(const rt_source *s, tdm_time_ms ts)
{
    if (ts == TDM_TIME_MIN)
        return TDM_TIME_MIN;
    if (s->hz_end)
        return TDM_TIME_MAX;
    tdm_time_ms hz = TDM_TIME_MIN;
    for (int e = 0; e < s->n_edges; e++) {
        tdm_time_ms h = op_horizon(&s->edges[e].op->hz, ts);
        if (h > hz)
            hz = h;
    }
    return hz;
}

/* Minimum over the subtask's consumer channels of what they handled:
 * the channel's watermark is published when the operator takes it, so
 * every row sent before it is in the operator's state by then. */
static tdm_time_ms rt_src_processed(const rt_src_task *t)
{
    const rt_source *s = t->src;
    int P = t->run->P;
    tdm_time_ms m = TDM_TIME_MAX;
    for (int e = 0; e < s->n_edges; e++) {
        const rt_edge *ed = &s->edges[e];
        int ch = ed->input * P + t->index;
        for (int j = 0; j < P; j++) {
            const rt_op_task *o = &ed->op->tasks[j];
            if (rt_pub_get(&o->chp[ch].ended))
                continue;
            tdm_time_ms w = atomic_load_explicit(
                (_Atomic int64_t *)&o->chp[ch].wm, memory_order_acquire);
            if (w < m)
                m = w;
        }
    }
    return m;
}

/* The coordinator's announcements: each target subtask (numbered
 * within the group) gets the allowed maximum; its thread applies it at
 * the top of its loop (tdm_reader_announce is the reader's own). */
static void align_emit(void *opaque, const tdm_event *ev)
{
    rt_align *a = opaque;
    tdm__run *run = a->run;
    if (ev->type != TDM_EVENT_ANNOUNCE)
        return;
    for (size_t k = 0; k < ev->n_targets; k++) {
        int g = ev->targets[k];
        for (int i = 0; i < run->n_srcs; i++) {
            rt_source *s = &run->srcs[i];
            if (s->align != a || !s->tasks || g < s->align_base ||
                g >= s->align_base + run->P)
                continue;
            rt_src_task *t = &s->tasks[g - s->align_base];
            atomic_store_explicit(&t->ann_max, ev->time,
                                  memory_order_relaxed);
            atomic_fetch_add_explicit(&t->ann_seq, 1, memory_order_release);
        }
    }
}

/* One coordinator per distinct watermark.alignment.group; a group's
 * drift and interval are those of its first source. */
static tdm_err plan_alignment(tdm__run *run, char *errbuf,
                              size_t errbuf_size)
{
    run->aligns = tdm__calloc((size_t)run->n_srcs + 1, sizeof *run->aligns);
    if (!run->aligns)
        goto nomem;
    for (int i = 0; i < run->n_srcs; i++) {
        rt_source *s = &run->srcs[i];
        const char *g = tdm__node_str(s->node, "watermark.alignment.group");
        if (!*g)
            continue;
        rt_align *a = NULL;
        for (int k = 0; k < run->n_aligns; k++)
            if (strcmp(run->aligns[k].group, g) == 0)
                a = &run->aligns[k];
        if (!a) {
            a = &run->aligns[run->n_aligns++];
            a->group = g;
            a->run = run;
            a->drift = tdm__node_int(s->node,
                                     "watermark.alignment.max_drift");
            a->interval = tdm__node_int(
                s->node, "watermark.alignment.update_interval");
            if (a->interval <= 0)
                a->interval = 1000;
        }
        s->align = a;
        s->align_base = a->n;
        a->n += run->P;
    }
    for (int k = 0; k < run->n_aligns; k++) {
        rt_align *a = &run->aligns[k];
        char msg[200] = "";
        if (pthread_mutex_init(&a->mu, NULL) != 0)
            goto nomem;
        a->mu_ok = true;
        if (rt_clock_new(run->job, &a->clk) != TDM_OK)
            goto nomem;
        tdm_err err = tdm_align_coord_new(a->n, a->drift, a->interval,
                                          a->clk, align_emit, a, &a->coord,
                                          msg, sizeof msg);
        if (err != TDM_OK)
            return tdm__errf(errbuf, errbuf_size, err,
                             "watermark.alignment.group \"%s\": %s",
                             a->group, msg[0] ? msg : tdm_strerror(err));
    }
    return TDM_OK;

nomem:
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                     "out of memory planning watermark alignment");
}

/* Repartition (kafka, docs/kafka.md): the job's key is the first
 * consumer's single key field; "auto" repartitions when it is not
 * key.field.  The source's data then carries its watermarks (the
 * connector reports them per partition), so its generator is NONE. */
static tdm_err plan_repartition(rt_source *s, char *errbuf,
                                size_t errbuf_size)
{
    int mode = (int)tdm__node_int(s->node, "repartition");
    if (mode == 0 || s->conf.type != TDM__SRC_KAFKA || s->n_edges == 0)
        return TDM_OK;
    const rt_edge *e = &s->edges[0];
    if (e->n_key != 1 || e->key_idx[0] < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "source \"%s\": repartition needs a consumer "
                         "keyed by one field", s->node->name);
    const char *key = s->schema->fields[e->key_idx[0]].name;
    if (mode == 1 && s->conf.key_field == e->key_idx[0])
        return TDM_OK;
    s->conf.repartition_key = key;
    s->conf.repartition_partitions = 0;
    s->conf.repartition_writers =
        (int)tdm__node_int(s->node, "repartition.writers");
    s->conf.repartition_writer_timeout =
        tdm__node_int(s->node, "repartition.writer_timeout");
    tdm_wm_strategy *none = NULL;
    char msg[200] = "";
    tdm_err err = tdm_wm_strategy_new(TDM_WM_NONE, 0, &none, msg,
                                      sizeof msg);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "source \"%s\": %s",
                         s->node->name, msg[0] ? msg : tdm_strerror(err));
    /* The configured strategy moves to the connector's writer, which
     * runs it per input partition (freed with the plan). */
    s->conf.repartition_strategy = s->strat;
    s->strat = none;
    s->wm_max_only = true;
    return TDM_OK;
}

/* Two-phase aggregation (localagg.h): why window @p op must run in one
 * phase, or NULL when its sources may fold its records locally.  The
 * conditions are those under which the partials give Flink's results
 * bit for bit (docs/runtime.md, Two-phase aggregation). */
static const char *two_phase_refusal(const rt_op *op)
{
    const tdm_node *n = op->node;
    if (tdm__node_int(n, "local_aggregation") != 0)
        return "local_aggregation is off";
    if (op->wtype != 0 && op->wtype != 1)
        return "not a tumbling or sliding window";
    if (tdm__node_int(n, "window.time") != 0)
        return "processing-time windows";
    int trig = (int)tdm__node_int(n, "trigger");
    if ((trig != 0 && trig != 1) || tdm__node_int(n, "trigger.purging"))
        return "not the event-time trigger";
    if (!op->fast_count) {
        for (int i = 0; i < op->n_inputs; i++) {
            const tdm__schema *sc = op->inputs[i]->schema;
            tdm_type ty[64];
            if (op->n_aggs > 64)
                return "too many aggregates";
            for (int a = 0; a < op->n_aggs; a++) {
                int f = op->agg_idx[i][a];
                ty[a] = f >= 0 ? sc->fields[f].type : TDM_TYPE_INT64;
            }
            if (!tdm__rowagg_two_phase(op->specs, op->n_aggs, ty))
                return "an aggregate that is not count, or min or max of "
                       "an integer field";
        }
    }
    for (int i = 0; i < op->n_inputs; i++) {
        const rt_source *s = op->inputs[i];
        if (s->derived)
            return "an input that is another operator's output";
        if (s->conf.time_mode != TDM__TIME_EVENT)
            return "a source not in event time";
        if (tdm__node_int(s->node, "watermark.idle_timeout") > 0)
            return "a source with an idle timeout";
        if (s->conf.type == TDM__SRC_KAFKA || s->v2)
            return "a kafka source";
    }
    return NULL;
}

/* Decides two-phase aggregation for every window and marks its edges. */
static void plan_two_phase(tdm__run *run)
{
    for (int o = 0; o < run->n_ops; o++) {
        rt_op *op = &run->ops[o];
        if (op->kind != TDM_NODE_WINDOW)
            continue;
        const char *why = two_phase_refusal(op);
        op->two_phase = !why;
        if (run->debug)
            tdm__job_log(run->job, "debug local_aggregation window=%s "
                                   "phases=%d%s%s",
                         op->node->name, why ? 1 : 2,
                         why ? " reason=" : "", why ? why : "");
        for (int i = 0; i < run->n_srcs; i++) {
            rt_source *s = &run->srcs[i];
            for (int e = 0; e < s->n_edges; e++)
                if (s->edges[e].op == op)
                    s->edges[e].local = op->two_phase;
        }
    }
}

/* What the runtime decides once every node is planned: each source's
 * commit horizon (the maximum over its consumers), repartition,
 * alignment groups, commits and what cancel does. */
static tdm_err plan_runtime(tdm__run *run, char *errbuf, size_t errbuf_size)
{
    tdm_job *job = run->job;
    bool endless_kafka = false;
    for (int i = 0; i < run->n_srcs; i++) {
        rt_source *s = &run->srcs[i];
        s->hz_end = s->conf.time_mode == TDM__TIME_PROCESSING;
        for (int e = 0; e < s->n_edges; e++)
            if (s->edges[e].op->hz.kind != RT_HZ_WINDOW)
                s->hz_end = true;
        /* Chaining: a record's results reach the sinks through more
         * than one operator, whose horizons are not composed; commits
         * then wait for the end of input (conservative). */
        if (run->n_dsrcs > 0)
            s->hz_end = true;
        run->any_v2 |= s->v2;
        if (s->conf.type == TDM__SRC_KAFKA && !s->conf.kafka_stop_at_end)
            endless_kafka = true;
        tdm_err err = plan_repartition(s, errbuf, errbuf_size);
        if (err != TDM_OK)
            return err;
        /* Key fence (fence.c): event-time window consumers of a source
         * whose partitions can be revoked while the job runs; not on the
         * repartition path (the internal topic's partitions carry every
         * key). */
        s->fence = s->v2 && s->vt->fenced && !s->conf.repartition_key &&
                   s->conf.time_mode == TDM__TIME_EVENT;
        for (int e = 0; e < s->n_edges; e++)
            if (s->edges[e].op->kind != TDM_NODE_WINDOW ||
                !s->edges[e].op->event_time ||
                s->edges[e].op->n_inputs != 1 || s->edges[e].op->early)
                s->fence = false;
    }
    plan_two_phase(run);
    int oc = (int)tdm__job_int(job, "on_cancel");
    /* With checkpoints, auto stops too: windows left open are in the
     * final checkpoint and the next run completes them exactly. */
    run->stop_on_cancel =
        oc == 2 ||
        (oc == 0 && (endless_kafka ||
                     *tdm__job_str(run->job, "checkpoint.dir")));
    run->commit_interval = tdm__job_int(job, "commit.interval");
    if (run->commit_interval <= 0)
        run->commit_interval = 1000;
    return plan_alignment(run, errbuf, errbuf_size);
}

/* Builds sources, operators, edges and sinks (nothing opened yet). */
static tdm_err plan(tdm__run *run, char *errbuf, size_t errbuf_size)
{
    tdm_job *job = run->job;
    int ns = 0, no = 0, nk = 0;
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_node_kind k = job->nodes[i]->kind;
        ns += k == TDM_NODE_SOURCE;
        no += k == TDM_NODE_WINDOW || k == TDM_NODE_JOIN;
        nk += k == TDM_NODE_SINK;
    }
    run->srcs = tdm__calloc((size_t)ns + 1, sizeof *run->srcs);
    run->dsrcs = tdm__calloc((size_t)no + 1, sizeof *run->dsrcs);
    run->ops = tdm__calloc((size_t)no + 1, sizeof *run->ops);
    run->sinks = tdm__calloc((size_t)nk + 1, sizeof *run->sinks);
    if (!run->srcs || !run->dsrcs || !run->ops || !run->sinks)
        goto nomem;
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_node *n = job->nodes[i];
        if (n->kind == TDM_NODE_SINK)
            plan_sink(&run->sinks[run->n_sinks++], n);
        else if (n->kind == TDM_NODE_SOURCE) {
            tdm_err err = plan_source(&run->srcs[run->n_srcs++], n, errbuf,
                                      errbuf_size);
            if (err != TDM_OK)
                return err;
        }
    }
    /* Operators other operators read get their derived source first,
     * so that every consumer finds its inputs whatever the order (the
     * schemas were computed by validation). */
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_node *n = job->nodes[i];
        if ((n->kind == TDM_NODE_WINDOW || n->kind == TDM_NODE_JOIN) &&
            op_read(job, n))
            plan_derived(&run->dsrcs[run->n_dsrcs++], n);
    }
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_node *n = job->nodes[i];
        if (n->kind != TDM_NODE_WINDOW && n->kind != TDM_NODE_JOIN)
            continue;
        rt_op *op = &run->ops[run->n_ops++];
        op->node = n;
        op->kind = n->kind;
        tdm_err err = n->kind == TDM_NODE_WINDOW ? plan_window(run, op, n)
                                                 : plan_join(run, op, n);
        if (err != TDM_OK)
            goto nomem;
        op->n_channels = op->n_inputs * run->P;
        op->sink = find_sink(run, tdm__node_str(n, "sink"));
        op->late = find_sink(run, tdm__node_str(n, "late_output"));
        if (op->sink) {
            op->sink->used = true;
            /* Validation made every writer of a sink use one mode. */
            op->sink->mode = op->mode;
        }
        if (op->late)
            op->late->used = true;
        if (n->kind == TDM_NODE_JOIN && n->exprs)
            op->filter = n->exprs->filter;
        for (int k = 0; k < run->n_dsrcs; k++)
            if (run->dsrcs[k].node == n) {
                op->out = &run->dsrcs[k];
                run->dsrcs[k].from = op;
            }
    }
    for (int i = 0; i < run->n_srcs; i++) {
        rt_source *s = &run->srcs[i];
        s->pass = find_sink(run, tdm__node_str(s->node, "sink"));
        if (s->pass)
            s->pass->used = true;
    }
    run->dead = find_sink(run, tdm__job_str(job, "dead_letter"));
    if (run->dead)
        run->dead->used = true;
    /* Writer roles for checkpoints: each source writing to a sink is
     * one (its P subtasks are the role's writers). */
    for (int i = 0; i < run->n_srcs; i++) {
        rt_source *s = &run->srcs[i];
        s->pass_role = s->pass ? s->pass->n_roles++ : -1;
        s->dead_role = run->dead ? run->dead->n_roles++ : -1;
    }
    for (int i = 0; i < run->n_ops; i++) {
        rt_op *op = &run->ops[i];
        op->sink_role = op->sink ? op->sink->n_roles++ : -1;
        op->late_role = op->late ? op->late->n_roles++ : -1;
    }
    return plan_runtime(run, errbuf, errbuf_size);

nomem:
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                     "out of memory planning the job");
}

/* ---- Lifecycle ---- */

/* Opens the sinks some node writes to (unused sinks make no file); the
 * mode tells the connector how to write results. */
static tdm_err open_sinks(tdm__run *run, char *errbuf, size_t errbuf_size)
{
    for (int i = 0; i < run->n_sinks; i++) {
        rt_sink *s = &run->sinks[i];
        if (!s->used)
            continue;
        if (run->ck.on) {
            tdm_err err = rt_ckpt_open_sink(run, s, i, errbuf, errbuf_size);
            if (err != TDM_OK)
                return err;
            continue;
        }
        char msg[256] = "";
        tdm_err err = s->vt->open(&s->conf, s->mode, &s->obj, msg,
                                  sizeof msg);
        if (err != TDM_OK) {
            s->obj = NULL;
            return tdm__errf(errbuf, errbuf_size,
                             err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                             "sink \"%s\": %s", s->node->name,
                             msg[0] ? msg : tdm_strerror(err));
        }
    }
    return TDM_OK;
}

/* Closes (flushes) every open sink; the first failure is reported.
 * With checkpoints: every writer's object, after the final checkpoint
 * committed them (abandoned, as a crash leaves them, when the run
 * failed: the next run recovers them). */
static tdm_err close_sinks(tdm__run *run, char *errbuf, size_t errbuf_size,
                           tdm_err err)
{
    for (int i = 0; i < run->n_sinks; i++) {
        rt_sink *s = &run->sinks[i];
        for (int w = 0; s->wobj && w < s->n_roles * 256; w++) {
            if (!s->wobj[w])
                continue;
            char msg[256] = "";
            tdm_err e = TDM_OK;
            if (err != TDM_OK || run->ck.abandon)
                s->vt->abandon(s->wobj[w]);
            else
                e = s->vt->close(s->wobj[w], msg, sizeof msg);
            s->wobj[w] = NULL;
            if (e != TDM_OK && err == TDM_OK)
                err = tdm__errf(errbuf, errbuf_size,
                                e == TDM_ERR_NOMEM ? e : TDM_ERR_IO,
                                "sink \"%s\": %s", s->node->name,
                                msg[0] ? msg : "closing failed");
        }
        if (s->wobj && err == TDM_OK && !run->ck.abandon &&
            s->vt->version >= 4 && s->vt->finish) {
            char msg[512] = "";
            tdm_err e = s->vt->finish(&s->conf, s->mode, msg, sizeof msg);
            if (e != TDM_OK)
                err = tdm__errf(errbuf, errbuf_size,
                                e == TDM_ERR_NOMEM ? e : TDM_ERR_IO,
                                "sink \"%s\": %s", s->node->name,
                                msg[0] ? msg : tdm_strerror(e));
        }
        tdm__free(s->wobj);
        s->wobj = NULL;
        if (!s->obj)
            continue;
        char msg[256] = "";
        tdm_err e = s->vt->close(s->obj, msg, sizeof msg);
        s->obj = NULL;
        if (e != TDM_OK && err == TDM_OK)
            err = tdm__errf(errbuf, errbuf_size,
                            e == TDM_ERR_NOMEM ? e : TDM_ERR_IO,
                            "sink \"%s\": %s", s->node->name,
                            msg[0] ? msg : "closing failed");
    }
    return err;
}

/* Frees the plan and every subtask (after the threads were joined). */
static void free_plan(tdm__run *run)
{
    for (int i = 0; i < run->n_srcs; i++) {
        rt_source *s = &run->srcs[i];
        if (s->tasks)
            for (int j = 0; j < run->P; j++)
                rt_source_task_fini(&s->tasks[j]);
        tdm__free(s->tasks);
        for (int e = 0; e < s->n_edges; e++)
            tdm__free(s->edges[e].key_idx);
        tdm__free(s->edges);
        tdm_wm_strategy_destroy(s->strat);
        tdm_wm_strategy_destroy(
            (tdm_wm_strategy *)s->conf.repartition_strategy);
        tdm__free(s->group_owned);
        /* After every connector of the source closed (task fini). */
        if (s->conf.shared) {
            if (s->conf.shared->free_p)
                s->conf.shared->free_p(s->conf.shared->p);
            pthread_mutex_destroy(&s->conf.shared->mu);
            tdm__free(s->conf.shared);
            s->conf.shared = NULL;
        }
    }
    for (int k = 0; k < run->n_aligns; k++) {
        rt_align *a = &run->aligns[k];
        tdm_align_coord_destroy(a->coord);
        tdm_clock_destroy(a->clk);
        if (a->mu_ok)
            pthread_mutex_destroy(&a->mu);
    }
    tdm__free(run->aligns);
    for (int i = 0; i < run->n_dsrcs; i++) {
        rt_source *s = &run->dsrcs[i];
        if (s->tasks)
            for (int j = 0; j < run->P; j++)
                rt_source_task_fini(&s->tasks[j]);
        tdm__free(s->tasks);
        for (int e = 0; e < s->n_edges; e++)
            tdm__free(s->edges[e].key_idx);
        tdm__free(s->edges);
    }
    tdm__free(run->dsrcs);
    for (int i = 0; i < run->n_ops; i++) {
        rt_op *op = &run->ops[i];
        if (op->tasks)
            for (int j = 0; j < run->P; j++)
                rt_op_task_fini(&op->tasks[j]);
        tdm__free(op->tasks);
        if (op->agg_idx)
            for (int k = 0; k < op->n_inputs; k++)
                tdm__free(op->agg_idx[k]);
        tdm__free(op->agg_idx);
        tdm__free(op->agg_in_types);
        if (op->owned_names)
            for (int k = 0; k < op->n_cols; k++)
                tdm__free(op->owned_names[k]);
        tdm__free(op->owned_names);
        tdm__free(op->col_names);
        tdm__free(op->col_types);
        tdm__free(op->inputs);
        tdm__free(op->in_key_idx);
    }
    tdm__free(run->srcs);
    tdm__free(run->ops);
    tdm__free(run->sinks);
}

/* Creates the subtasks (queues, operators, connectors) of every node. */
/* The sink objects a subtask writes through: the shared ones, or with
 * checkpoints its own writers (role * 256 + subtask). */
static void ck_bind(tdm__run *run, rt_ck_slot *c, rt_sink *s0, int r0,
                    rt_sink *s1, int r1, int k)
{
    rt_sink *s[2] = { s0, s1 };
    int r[2] = { r0, r1 };
    for (int j = 0; j < 2; j++) {
        c->sink[j] = s[j];
        c->w[j] = s[j] ? r[j] * 256 + k : -1;
        if (s[j])
            c->obj[j] = run->ck.on ? s[j]->wobj[c->w[j]] : s[j]->obj;
    }
}

static tdm_err make_tasks(tdm__run *run)
{
    for (int o = 0; o < run->n_ops; o++) {
        rt_op *op = &run->ops[o];
        op->tasks = tdm__calloc((size_t)run->P, sizeof *op->tasks);
        if (!op->tasks)
            return TDM_ERR_NOMEM;
        for (int j = 0; j < run->P; j++) {
            op->tasks[j].run = run;
            op->tasks[j].op = op;
            op->tasks[j].index = j;
            ck_bind(run, &op->tasks[j].ck, op->sink, op->sink_role,
                    op->late, op->late_role, j);
            tdm_err err = rt_op_task_init(&op->tasks[j]);
            if (err != TDM_OK)
                return err;
        }
    }
    for (int s = 0; s < run->n_srcs; s++) {
        rt_source *src = &run->srcs[s];
        src->tasks = tdm__calloc((size_t)run->P, sizeof *src->tasks);
        if (!src->tasks)
            return TDM_ERR_NOMEM;
        for (int i = 0; i < run->P; i++) {
            rt_src_task *t = &src->tasks[i];
            t->run = run;
            t->src = src;
            t->index = i;
            /* The objects it writes rows and dead letters through. */
            ck_bind(run, &t->ck, src->pass, src->pass_role, run->dead,
                    src->dead_role, i);
            tdm_err err = rt_source_task_init(&src->tasks[i]);
            if (err != TDM_OK)
                return err;
        }
    }
    /* Output streams of operators read by others: subtask i is written
     * by op subtask i (no thread of its own). */
    for (int s = 0; s < run->n_dsrcs; s++) {
        rt_source *src = &run->dsrcs[s];
        src->tasks = tdm__calloc((size_t)run->P, sizeof *src->tasks);
        if (!src->tasks)
            return TDM_ERR_NOMEM;
        for (int i = 0; i < run->P; i++) {
            src->tasks[i].run = run;
            src->tasks[i].src = src;
            src->tasks[i].index = i;
            tdm_err err = rt_emit_init(&src->tasks[i]);
            if (err != TDM_OK) {
                rt_fail(run, err, "%s \"%s\": out of memory",
                        tdm__node_kind_name(src->node->kind),
                        src->node->name);
                return err;
            }
            src->from->tasks[i].emit = &src->tasks[i];
        }
        for (int i = 0; i < run->P; i++)
            for (int e = 0; e < src->n_edges; e++)
                for (int j = 0; j < run->P; j++)
                    src->edges[e].op->tasks[j]
                        .q.ch_waits[src->edges[e].input * run->P + i] =
                        &src->tasks[i].m.bp;
    }
    /* Backpressure per source subtask: its waits on each channel it
     * feeds count for it. */
    for (int s = 0; s < run->n_srcs; s++) {
        rt_source *src = &run->srcs[s];
        for (int i = 0; i < run->P; i++)
            for (int e = 0; e < src->n_edges; e++)
                for (int j = 0; j < run->P; j++)
                    src->edges[e].op->tasks[j]
                        .q.ch_waits[src->edges[e].input * run->P + i] =
                        &src->tasks[i].m.bp;
    }
    /* A source subtask that will never read a row ends its channels now,
     * before any thread runs: downstream valves then never wait for it,
     * whatever the thread timing (each channel's first item, so the push
     * cannot block). */
    for (int s = 0; s < run->n_srcs; s++) {
        rt_source *src = &run->srcs[s];
        for (int i = 0; i < run->P; i++) {
            if (!src->tasks[i].empty)
                continue;
            /* Its END is its maximum watermark. */
            rt_pub_set(&src->tasks[i].m.wm_out, TDM_TIME_MAX);
            for (int e = 0; e < src->n_edges; e++)
                for (int j = 0; j < run->P; j++) {
                    tdm__item it = { .kind = TDM__ITEM_END,
                                     .ch = src->edges[e].input * run->P + i,
                                     .t = TDM_TIME_MAX };
                    tdm__queue_push(&src->edges[e].op->tasks[j].q, &it);
                }
        }
    }
    return TDM_OK;
}

/* Names subtask thread @p th "NODE/INDEX" (at most 15 bytes: the node
 * name is cut), as top -H, perf and gdb show it.  Best effort. */
static void name_thread(pthread_t th, const char *node, int index)
{
#if defined(__linux__)
    char name[16], tail[12];
    int tl = snprintf(tail, sizeof tail, "/%d", index);
    snprintf(name, sizeof name, "%.*s%s", 15 - tl, node, tail);
    (void)pthread_setname_np(th, name);
#else
    (void)th;
    (void)node;
    (void)index;
#endif
}

/* Operator subtasks start first, so their queues are being drained by
 * the time sources produce. */
static tdm_err start_threads(tdm__run *run)
{
    for (int o = 0; o < run->n_ops; o++)
        for (int j = 0; j < run->P; j++) {
            rt_op_task *t = &run->ops[o].tasks[j];
            if (pthread_create(&t->th, NULL, rt_op_main, t) != 0)
                return TDM_ERR_NOMEM;
            t->started = true;
            run->n_threads++;
            name_thread(t->th, run->ops[o].node->name, j);
        }
    for (int s = 0; s < run->n_srcs; s++)
        for (int i = 0; i < run->P; i++) {
            rt_src_task *t = &run->srcs[s].tasks[i];
            if (pthread_create(&t->th, NULL, rt_source_main, t) != 0)
                return TDM_ERR_NOMEM;
            t->started = true;
            run->n_threads++;
            name_thread(t->th, run->srcs[s].node->name, i);
        }
    return TDM_OK;
}

/* Joins every started thread. */
static void join_threads(tdm__run *run)
{
    for (int o = 0; o < run->n_ops; o++)
        if (run->ops[o].tasks)
            for (int j = 0; j < run->P; j++)
                if (run->ops[o].tasks[j].started) {
                    pthread_join(run->ops[o].tasks[j].th, NULL);
                    run->ops[o].tasks[j].started = false;
                }
    for (int s = 0; s < run->n_srcs; s++)
        if (run->srcs[s].tasks)
            for (int i = 0; i < run->P; i++)
                if (run->srcs[s].tasks[i].started) {
                    pthread_join(run->srcs[s].tasks[i].th, NULL);
                    run->srcs[s].tasks[i].started = false;
                }
}

/* The lowest watermark over operator subtasks. */
static void update_watermark(tdm__run *run)
{
    tdm_time_ms wm = TDM_TIME_MAX;
    bool any = false;
    for (int o = 0; o < run->n_ops; o++)
        for (int j = 0; run->ops[o].tasks && j < run->P; j++) {
            tdm_time_ms w = atomic_load_explicit(&run->ops[o].tasks[j].wm,
                                                 memory_order_relaxed);
            if (w < wm)
                wm = w;
            any = true;
        }
    atomic_store(&run->job->stats[TDM_STAT_WATERMARK],
                 any ? wm : TDM_TIME_MIN);
}

/* Refreshes the watermark counter and calls the progress callback. */
static void progress(tdm__run *run)
{
    tdm_job *job = run->job;
    update_watermark(run);
    if (job->progress)
        job->progress(job->progress_ud, job);
}

/* The lowest published watermark over operator subtasks (acquire:
 * every result fired at or below it was written before), and in *top
 * (may be NULL) the highest: no result of a window with end - 1 above it
 * was written (event-time firing), MIN without operators. */
static tdm_time_ms ops_done(tdm__run *run, tdm_time_ms *top)
{
    tdm_time_ms done = TDM_TIME_MAX, hi = TDM_TIME_MIN;
    for (int o = 0; o < run->n_ops; o++)
        for (int j = 0; run->ops[o].tasks && j < run->P; j++) {
            tdm_time_ms w = atomic_load_explicit(&run->ops[o].tasks[j].wm,
                                                 memory_order_acquire);
            if (w < done)
                done = w;
            if (w > hi)
                hi = w;
        }
    if (top)
        *top = hi;
    return done;
}

/* Flushes every used sink that can (version 2); false when one failed
 * (logged: the commit waits for the next round). */
static bool flush_sinks(tdm__run *run)
{
    for (int i = 0; i < run->n_sinks; i++) {
        rt_sink *s = &run->sinks[i];
        if (!s->obj || s->vt->version < 2 || !s->vt->flush)
            continue;
        char msg[256] = "";
        if (s->vt->flush(s->obj, msg, sizeof msg) != TDM_OK) {
            /* Said once per failure spell, not every round. */
            if (!run->flush_warned)
                tdm__job_log(run->job, "sink %s: flush failed (%s); "
                                       "offsets are not committed until "
                                       "a flush succeeds",
                             s->node->name,
                             msg[0] ? msg : "no reason given");
            run->flush_warned = true;
            return false;
        }
    }
    run->flush_warned = false;
    return true;
}

/* One commit round (at-least-once, docs/kafka.md): for every subtask of
 * a committing source, what its consumers handled; then the operators'
 * watermark; then every sink flushed; only then are the pairs handed to
 * the source threads, which call the connector's commit themselves (a
 * connector is single-threaded). */
static void commit_round(tdm__run *run)
{
    for (int i = 0; i < run->n_srcs; i++) {
        rt_source *s = &run->srcs[i];
        if (!s->v2 || !s->tasks)
            continue;
        for (int k = 0; k < run->P; k++)
            s->tasks[k].c_pend = rt_src_processed(&s->tasks[k]);
    }
    tdm_time_ms done = ops_done(run, NULL);
    if (!flush_sinks(run))
        return;
    for (int i = 0; i < run->n_srcs; i++) {
        rt_source *s = &run->srcs[i];
        if (!s->v2 || !s->tasks)
            continue;
        for (int k = 0; k < run->P; k++) {
            rt_src_task *t = &s->tasks[k];
            atomic_store_explicit(&t->c_proc, t->c_pend,
                                  memory_order_relaxed);
            atomic_store_explicit(&t->c_done, done, memory_order_relaxed);
            atomic_fetch_add_explicit(&t->c_req, 1, memory_order_release);
        }
    }
}

/* The final commit, once every thread stopped and the sinks closed
 * (flushed): every mark is processed; the operators' watermark says
 * which records' results were written (TDM_TIME_MAX after a drain).
 * Connectors are closed afterwards (free_plan), leaving their group. */
static void final_commit(tdm__run *run)
{
    tdm_time_ms top;
    tdm_time_ms done = ops_done(run, &top);
    if (run->any_early)
        top = TDM_TIME_MIN;
    for (int i = 0; i < run->n_srcs; i++) {
        rt_source *s = &run->srcs[i];
        if (!s->v2 || !s->tasks || !s->vt->commit)
            continue;
        for (int k = 0; k < run->P; k++) {
            rt_src_task *t = &s->tasks[k];
            if (t->conn && s->vt->commit(t->conn, TDM_TIME_MAX, done, top) !=
                               TDM_OK)
                tdm__job_log(run->job, "source %s subtask %d: the final "
                                       "offset commit failed",
                             s->node->name, k);
        }
    }
}

/* How often the supervisor ticks the sinks (connect.h, tick). */
#define RT_SINK_TICK_MS 100

/* Lets every sink write what waited too long in its buffer (tick). */
static void tick_sinks(tdm__run *run)
{
    for (int i = 0; i < run->n_sinks; i++) {
        rt_sink *s = &run->sinks[i];
        if (s->obj && s->vt->version >= 2 && s->vt->tick)
            s->vt->tick(s->obj);
        for (int w = 0; s->wobj && w < s->n_roles * 256; w++)
            if (s->wobj[w] && s->vt->tick)
                s->vt->tick(s->wobj[w]);
    }
}

/* Waits for every thread, calling the progress callback every
 * status.interval, ticking the sinks every RT_SINK_TICK_MS and, with a
 * committing source, running a commit round every commit.interval. */
static void supervise(tdm__run *run)
{
    int64_t interval = tdm__job_int(run->job, "status.interval");
    int64_t next_status = tdm__mono_ms() + interval;
    int64_t next_commit = tdm__mono_ms() + run->commit_interval;
    int64_t next_tick = tdm__mono_ms() + RT_SINK_TICK_MS;
    pthread_mutex_lock(&run->mu);
    while (run->n_done < run->n_threads) {
        int64_t next = next_status < next_tick ? next_status : next_tick;
        if (run->any_v2 && next_commit < next)
            next = next_commit;
        if (run->ck.on && !run->ck.pending && run->ck.next_ms < next)
            next = run->ck.next_ms;
        if (run->ck.on && !run->ck.pending &&
            atomic_load(&run->job->savepoint))
            next = tdm__mono_ms();
        struct timespec at = { .tv_sec = (time_t)(next / 1000),
                               .tv_nsec = (long)(next % 1000) * 1000000 };
        int r = 0;
        while (run->n_done < run->n_threads && r == 0 && !run->ck.wake)
            r = pthread_cond_timedwait(&run->cv, &run->mu, &at);
        run->ck.wake = false;
        if (run->n_done >= run->n_threads)
            break;
        pthread_mutex_unlock(&run->mu);
        int64_t now = tdm__mono_ms();
        rt_ckpt_step(run, false);
        if (run->any_v2 && now >= next_commit) {
            commit_round(run);
            next_commit = now + run->commit_interval;
        }
        if (now >= next_status) {
            progress(run);
            next_status = now + interval;
        }
        if (now >= next_tick) {
            tick_sinks(run);
            next_tick = now + RT_SINK_TICK_MS;
        }
        pthread_mutex_lock(&run->mu);
    }
    pthread_mutex_unlock(&run->mu);
}

/* Whether counter @p i spans a run's restarts: the checkpoint counters,
 * as Flink's checkpoint statistics span a job's restarts. */
static bool spans_restarts(int i)
{
    return (i >= TDM_STAT_CHECKPOINTS && i <= TDM_STAT_CHECKPOINT_ALIGN_MS) ||
           (i >= TDM_STAT_CHECKPOINTS_FAILED_IN_ROW &&
            i <= TDM_STAT_RESTARTS);
}

/* Counters start from zero at every run; after a restart (@p restart)
 * only those that do not span restarts. */
static void reset_stats(tdm_job *job, bool restart)
{
    for (int i = 0; i < TDM_STAT_COUNT_; i++)
        if (!restart || !spans_restarts(i))
            atomic_store(&job->stats[i], 0);
    if (!restart) {
        atomic_store(&job->stats[TDM_STAT_CHECKPOINT_ID], -1);
        atomic_store(&job->stats[TDM_STAT_CHECKPOINT_FAILED_ID], -1);
    }
    atomic_store(&job->stats[TDM_STAT_WATERMARK], TDM_TIME_MIN);
    atomic_store(&job->queue_waits, 0);
    atomic_store(&job->batches_peak, 0);
}

/* Reads the job keys the run needs; key groups are at least the
 * parallelism, so every subtask owns at least one group. */
static tdm_err init_run(tdm__run *run, tdm_job *job)
{
    memset(run, 0, sizeof *run);
    run->job = job;
    run->P = (int)tdm__job_int(job, "parallelism");
    run->key_groups = (int)tdm__job_int(job, "key_groups");
    run->batch_size = (size_t)tdm__job_int(job, "batch.size");
    run->qcap = (int)tdm__job_int(job, "queue.capacity");
    run->guard = tdm__job_int(job, "timestamp_guard");
    run->guard_dead = tdm__job_int(job, "timestamp_guard.dead_letter") != 0;
    run->debug = tdm__job_int(job, "log.level") == 1;
    if (run->key_groups < run->P)
        run->key_groups = run->P;
    run->owner = tdm__calloc((size_t)run->key_groups, sizeof *run->owner);
    if (!run->owner)
        return TDM_ERR_NOMEM;
    for (int g = 0; g < run->key_groups; g++)
        run->owner[g] =
            (uint16_t)tdm__key_subtask(g, run->key_groups, run->P);
    atomic_init(&run->abort, 0);
    atomic_init(&run->bad_logged, 0);
    if (pthread_mutex_init(&run->mu, NULL) != 0) {
        tdm__free(run->owner);
        return TDM_ERR_NOMEM;
    }
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int r = pthread_cond_init(&run->cv, &a);
    pthread_condattr_destroy(&a);
    if (r != 0) {
        pthread_mutex_destroy(&run->mu);
        tdm__free(run->owner);
        return TDM_ERR_NOMEM;
    }
    return TDM_OK;
}

/* One attempt: plans, opens (restoring the newest checkpoint), runs the
 * job to its end (or cancel) on worker threads and tears it down. */
static tdm_err run_attempt(tdm_job *job, bool restart, char *errbuf,
                           size_t errbuf_size)
{
    tdm__run *run = tdm__calloc(1, sizeof *run);
    if (!run || init_run(run, job) != TDM_OK) {
        tdm__free(run);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "out of memory starting the job");
    }
    reset_stats(job, restart);
    /* Snapshots read the clock under the metrics lock. */
    pthread_mutex_lock(&job->mmu);
    job->clock_base_real = 0;
    atomic_store(&job->start_ms, tdm__job_now(job));
    if (job->lat.b)
        tdm__hist_reset(&job->lat);
    pthread_mutex_unlock(&job->mmu);
    job->run = run;

    tdm_err err = plan(run, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = rt_ckpt_open(run, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = open_sinks(run, errbuf, errbuf_size);
    if (err == TDM_OK) {
        err = make_tasks(run);
        if (err == TDM_OK)
            err = rt_warea_start(run);
        if (err == TDM_OK)
            err = start_threads(run);
        if (err != TDM_OK)
            rt_fail(run, err, "%s", "could not start the job's subtasks");
        supervise(run);
        join_threads(run);
        /* The final checkpoint commits the last epoch before the sinks
         * close (docs/checkpoints.md, sink contract). */
        rt_ckpt_final(run);
        update_watermark(run);
        rt_metrics_finish(run);
        if (run->err != TDM_OK)
            err = tdm__errf(errbuf, errbuf_size, run->err, "%s",
                            run->errmsg);
    }
    err = close_sinks(run, errbuf, errbuf_size, err);
    rt_ckpt_close(run);
    if (err == TDM_OK && run->any_v2)
        final_commit(run);
    atomic_store(&job->stats[TDM_STAT_ELAPSED_MS],
                 tdm__job_now(job) - atomic_load(&job->start_ms));
    if (job->progress && err == TDM_OK)
        job->progress(job->progress_ud, job);
    free_plan(run);
    pthread_cond_destroy(&run->cv);
    pthread_mutex_destroy(&run->mu);
    tdm__free(run->owner);
    tdm__free(run);
    job->run = NULL;
    return err;
}

/* Validates and runs the job, again after a failure as restart.strategy
 * says (restart.c). */
tdm_err tdm_job_run(tdm_job *job, char *errbuf, size_t errbuf_size)
{
    if (!job)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "job must not be NULL");
    if (atomic_load(&job->running))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "the job is already running");
    tdm_err err = tdm_job_validate(job, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    rt_restart rs;
    rt_restart_init(&rs, job);
    atomic_store(&job->cancel, 0);
    atomic_store(&job->running, 1);
    err = run_attempt(job, false, errbuf, errbuf_size);
    while (rt_restart_next(&rs, job, err, errbuf, errbuf_size))
        err = run_attempt(job, true, errbuf, errbuf_size);
    atomic_store(&job->running, 0);
    return err;
}
