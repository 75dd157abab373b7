/* SPDX-License-Identifier: MIT */
/* plan.c - turns a validated job into the execution plan of one run
 * (plan.h): sources with their connector configuration, watermark
 * strategy and routing edges, operators with their key fields, output
 * columns and commit horizons, derived sources for chained operators,
 * shared sinks, alignment groups, repartition and two-phase
 * aggregation.
 *
 * Invariant: the plan is complete before any subtask exists and is not
 * changed afterwards, except the atomic fields plan.h names; freeing it
 * (tdm__plan_free) comes after every subtask was freed.  Used by run.c
 * (build and free) and read by every subtask; the commit-horizon queries
 * are called from the source subtasks.
 */
#include <stdio.h>
#include <string.h>

#include "connect/kafka.h"
#include "runtime/expr.h"
#include "runtime/live.h"
#include "runtime/plan.h"
#include "runtime/rt_ctx.h"
#include "time/wm.h"

/* ---- Planning ---- */

/* Punctuated strategy: a row whose marker field is true is a marker. */
static int marker_fn(void *ud, const tdm_record *rec)
{
    const tdm__rt_source *s = ud;
    const tdm__row *row = rec->payload;
    return row && !row->v[s->marker_idx].null && row->v[s->marker_idx].u.i;
}

/* Lookups by node name among the planned sinks and sources. */
static tdm__rt_sink *find_sink(tdm__run *run, const char *name)
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
static tdm__rt_source *find_source(tdm__run *run, const char *name)
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
            const tdm__conf_val *f = n->spec.win.from;
            for (int k = 0; k < f->n_fields; k++)
                if (strcmp(f->fields[k], op->name) == 0)
                    return true;
        } else if (n->kind == TDM_NODE_JOIN) {
            if (strcmp(n->spec.join.left, op->name) == 0 ||
                strcmp(n->spec.join.right, op->name) == 0)
                return true;
        }
    }
    return false;
}

/* The derived source of operator node @p n (docs/runtime.md, Chained
 * operators): its output schema, event time unless the window is a
 * processing-time one; edges are added by its consumers' plans. */
static void plan_derived(tdm__rt_source *s, tdm_node *n)
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
                                n->spec.win.time == TDM__WINDOW_TIME_PROCESSING
                            ? TDM__TIME_PROCESSING
                            : TDM__TIME_EVENT;
}

/* A string key's text, NULL when empty (the connectors' "not given"). */
static const char *opt_str(const char *v)
{
    return *v ? v : NULL;
}

/* The "kafka.*" pass-through properties of a node: the parsed pairs,
 * borrowed (the node outlives the run). */
static void plan_props(const tdm__conf_val *v, const char *const **out,
                       int *n_out)
{
    *out = (const char *const *)v->props;
    *n_out = v->props ? v->n_props : 0;
}

/* "<text>.task-<n>", tdm__malloc'ed; NULL: out of memory. */
static char *task_text(const char *text, int64_t task)
{
    size_t l = strlen(text) + 32;
    char *p = tdm__malloc(l);
    if (p)
        snprintf(p, l, "%s.task-%lld", text, (long long)task);
    return p;
}

/* A task's sink (docs/scale-out.md) writes apart from the other tasks:
 * its own file parts and its own Kafka transactional id.  TDM_OK or
 * TDM_ERR_NOMEM. */
static tdm_err plan_sink_task(tdm__rt_sink *s, const tdm_job *job)
{
    int64_t t = job->spec.task_id;
    if (t < 0)
        return TDM_OK;
    s->task_name = task_text(job->spec.name, t);
    if (!s->task_name)
        return TDM_ERR_NOMEM;
    s->conf.job_name = s->task_name;
    if (!*s->conf.path)
        return TDM_OK;
    s->task_path = task_text(s->conf.path, t);
    if (!s->task_path)
        return TDM_ERR_NOMEM;
    s->conf.path = s->task_path;
    return TDM_OK;
}

/* A sink's connector configuration (the table's enum indexes are the
 * connector's constants minus one).  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err plan_sink(tdm__rt_sink *s, tdm_node *n)
{
    s->node = n;
    s->conf.name = n->name;
    s->conf.type = tdm__spec_conn(n->spec.sink.type);
    s->conf.path = n->spec.sink.path;
    s->conf.format = tdm__spec_conn(n->spec.sink.format);
    s->conf.kafka_brokers = opt_str(n->spec.sink.brokers);
    s->conf.kafka_topic = opt_str(n->spec.sink.topic);
    plan_props(n->spec.sink.kafka, &s->conf.kafka_props,
               &s->conf.kafka_n_props);
    s->conf.kafka_brokers_timeout = n->spec.sink.brokers_timeout_ms;
    s->conf.select = (const char *const *)n->spec.sink.select_list->fields;
    s->conf.n_select = n->spec.sink.select_list->n_fields;
    s->conf.debug = n->job->spec.log_level == TDM__LOG_LEVEL_DEBUG;
    s->conf.log = tdm__ctx_log_line;
    s->conf.log_ud = n->job;
    if (n->sink_vt)
        s->vt = n->sink_vt;
    else if (s->conf.type == TDM__SINK_KAFKA)
        s->vt = &tdm__kafka_sink;
    else
        s->vt = &tdm__text_sink;
    return plan_sink_task(s, n->job);
}

/* A task's repartition start file (kafka_shuffle.h): beside the task
 * folders, in the folder the job's checkpoint.dir names (a task's is
 * "<that>/task-<n>"), one per source.  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err plan_start_file(tdm__rt_source *s, const tdm_node *n)
{
    const tdm__job_spec *sp = &n->job->spec;
    if (sp->checkpoint_store == TDM__CHECKPOINT_STORE_CHANGELOG) {
        /* R-PL-1: no shared folder: a record of the changelog (the task
         * host names the topic on every task's job). */
        s->conf.repartition_start_changelog = sp->checkpoint_changelog_topic;
        return TDM_OK;
    }
    const char *dir = n->job->spec.checkpoint_dir;
    const char *slash = strrchr(dir, '/');
    int root = slash ? (int)(slash - dir) : 1;
    size_t l = strlen(dir) + strlen(n->name) + 32;
    s->start_file = tdm__malloc(l);
    if (!s->start_file)
        return TDM_ERR_NOMEM;
    snprintf(s->start_file, l, "%.*s/repartition-%s.start", root,
             slash ? dir : ".", n->name);
    s->conf.repartition_start_file = s->start_file;
    return TDM_OK;
}

/* The Kafka keys of a source (docs/kafka.md): brokers, topics or a
 * pattern, the group (default "tidemark-<job>-<node>"), the start
 * position, stop, where timestamps and keys come from, and the kafka.*
 * pass-through properties; the connectors' log.  The enum keys are the
 * connector's constants minus one.  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err plan_kafka(tdm__rt_source *s, tdm_node *n)
{
    tdm__source_conf *c = &s->conf;
    c->kafka_brokers = opt_str(n->spec.src.brokers);
    c->kafka_topics = opt_str(n->spec.src.topics);
    c->kafka_pattern = opt_str(n->spec.src.topic_pattern);
    c->kafka_group = opt_str(n->spec.src.group);
    if (!c->kafka_group) {
        const char *job = n->job->spec.name;
        size_t l = strlen(job) + strlen(n->name) + 16;
        s->group_owned = tdm__malloc(l);
        if (!s->group_owned)
            return TDM_ERR_NOMEM;
        snprintf(s->group_owned, l, "tidemark-%s-%s", job, n->name);
        c->kafka_group = s->group_owned;
    }
    c->kafka_start = tdm__spec_conn(n->spec.src.start);
    c->kafka_start_ts = TDM_TIME_MIN;
    const char *st = n->spec.src.start_timestamp;
    if (*st && !tdm__start_ts_parse(st, &c->kafka_start_ts))
        c->kafka_start_ts = TDM_TIME_MIN;
    c->kafka_stop_at_end = n->spec.src.stop == TDM__SOURCE_STOP_END;
    c->ts_from_message = n->spec.src.ts_source == TDM__TIMESTAMP_SOURCE_MESSAGE;
    const char *kf = n->spec.src.key_field;
    c->key_field = *kf ? tdm__schema_find(s->schema, kf) : -1;
    const tdm__conf_val *md = n->spec.src.metadata;
    for (int i = 0; i < md->n_props; i++) {
        int k = tdm__kafka_meta_kind(md->props[2 * i + 1]);
        if (k >= 0) /* validated */
            c->kafka_meta[k] =
                tdm__schema_find(s->schema, md->props[2 * i]) + 1;
    }
    plan_props(n->spec.src.kafka, &c->kafka_props, &c->kafka_n_props);
    c->kafka_brokers_timeout = n->spec.src.brokers_timeout_ms;
    c->checkpointing = *n->job->spec.checkpoint_dir != '\0';
    c->kafka_tasked = n->job->spec.task_id >= 0;
    c->kafka_task = (int)n->job->spec.task_id;
    if (c->kafka_tasked && plan_start_file(s, n) != TDM_OK)
        return TDM_ERR_NOMEM;
    c->kafka_task_commit = n->job->task_commit;
    c->kafka_task_commit_ud = n->job->task_commit_ud;
    c->log = tdm__ctx_log_line;
    c->log_ud = n->job;
    return TDM_OK;
}

/* generator.nexmark.kinds ("person,auction,bid", any subset) as a bit
 * mask of TDM__NX_* kinds; job.c validated the words. */
static int nexmark_kinds(const char *s)
{
    static const char *const names[3] = {"person", "auction", "bid"};
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

/* The connector configuration of source node @p n from its keys (the
 * table's enum indexes are the connector's constants minus one). */
static void plan_source_conf(tdm__rt_source *s, tdm_node *n)
{
    tdm__source_conf *c = &s->conf;
    c->name = n->name;
    c->type = tdm__spec_conn(n->spec.src.type);
    c->path = n->spec.src.path;
    c->format = tdm__spec_conn(n->spec.src.format);
    c->csv_header = n->spec.src.csv_header;
    c->csv_delimiter = n->spec.src.csv_delimiter[0];
    c->schema = s->schema;
    const char *pf = n->spec.src.partition_field;
    c->partition_field = *pf ? tdm__schema_find(s->schema, pf) : -1;
    c->time_mode = tdm__spec_conn(n->spec.src.time);
    const char *tsf = n->spec.src.timestamp_field;
    if (!*tsf && c->type == TDM__SRC_GENERATOR)
        tsf = n->spec.src.gen_kind == TDM__GENERATOR_KIND_NEXMARK ? "date_time"
                                                                  : "ts";
    c->ts_field =
        c->time_mode == TDM__TIME_EVENT ? tdm__schema_find(s->schema, tsf) : -1;
    c->ts_unit = tdm__spec_conn(n->spec.src.ts_unit);
    c->tcp_address = n->spec.src.tcp_address;
    c->tcp_reconnect_on_close =
        n->spec.src.tcp_on_close == TDM__TCP_ON_CLOSE_RECONNECT;
    c->tcp_connect_timeout = n->spec.src.tcp_connect_timeout_ms;
    c->tcp_reconnect_timeout = n->spec.src.tcp_reconnect_timeout_ms;
    c->tcp_backoff = n->spec.src.tcp_reconnect_backoff_ms;
    c->tcp_max_backoff = n->spec.src.tcp_reconnect_max_backoff_ms;
    c->gen_kind = tdm__spec_conn(n->spec.src.gen_kind);
    c->gen_records = n->spec.src.gen_records;
    c->gen_rate = n->spec.src.gen_rate;
    c->gen_keys = n->spec.src.gen_keys;
    c->gen_partitions = n->spec.src.gen_partitions;
    c->gen_seed = n->spec.src.gen_seed;
    c->gen_skew = n->spec.src.gen_skew;
    c->gen_late_fraction = n->spec.src.gen_late_fraction;
    c->gen_max_delay = n->spec.src.gen_max_delay_ms;
    c->gen_late_delay = n->spec.src.gen_late_delay_ms;
    c->gen_idle_from = n->spec.src.gen_idle_from_ms;
    c->gen_idle_for = n->spec.src.gen_idle_for_ms;
    c->gen_idle_partition = n->spec.src.gen_idle_partition;
    c->nx_kinds = nexmark_kinds(n->spec.src.gen_nexmark_kinds);
    c->nx_ooo_group = n->spec.src.gen_nexmark_out_of_order_group;
    c->nx_flink = n->spec.src.gen_nexmark_flink_numbering;
}

/* The connector of source @p s: a test hook's, else by type. */
static void plan_source_vtab(tdm__rt_source *s, const tdm_node *n)
{
    const tdm__source_conf *c = &s->conf;
    if (n->src_vt)
        s->vt = n->src_vt;
    else if (c->type == TDM__SRC_KAFKA)
        s->vt = &tdm__kafka_source;
    else if (c->type == TDM__SRC_TCP)
        s->vt = &tdm__tcp_source;
    else if (c->type == TDM__SRC_GENERATOR && c->gen_kind == TDM__GEN_NEXMARK)
        s->vt = &tdm__nexmark_source;
    else if (c->type == TDM__SRC_GENERATOR)
        s->vt = &tdm__generator_source;
    else
        s->vt = &tdm__file_source;
}

/* Version-2 connectors share state among a source's subtasks (freed by
 * tdm__plan_free).  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err plan_source_shared(tdm__rt_source *s, char *errbuf,
                                  size_t errbuf_size)
{
    tdm__source_conf *c = &s->conf;
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
    return TDM_OK;
}

/* The fallback watermark (docs/live-settings.md).  On a bounded input
 * (a file or the generator, read as fast as the machine goes) the
 * fallback makes the results depend on wall-clock time: the log says so
 * when the job starts. */
static tdm_err plan_fallback(tdm__rt_source *s, tdm_node *n, char *msg,
                             size_t len)
{
    const tdm__source_spec *sp = &n->spec.src;
    if ((sp->type == TDM__SOURCE_TYPE_FILE ||
         sp->type == TDM__SOURCE_TYPE_GENERATOR) &&
        !n->job->rec->run->restarted)
        tdm__job_log(n->job,
                     "warning: source \"%s\" replays a %s with "
                     "watermark.fallback on: its watermark then follows "
                     "wall-clock time too, and which records are late "
                     "depends on how fast it is read, not only on the data",
                     n->name,
                     sp->type == TDM__SOURCE_TYPE_FILE ? "file"
                                                       : "generated stream");
    return tdm_wm_strategy_set_fallback(s->strat, sp->wm_fallback_lag_ms,
                                        sp->wm_fallback_interval_ms, msg, len);
}

/* The watermark strategy of source @p s (node @p n).  TDM_OK or the
 * strategy's error with the source's name in @p errbuf. */
static tdm_err plan_source_wm(tdm__rt_source *s, tdm_node *n, char *errbuf,
                              size_t errbuf_size)
{
    const tdm__source_conf *c = &s->conf;
    tdm__watermark_strategy strategy = n->spec.src.wm_strategy;
    tdm_wm_kind kind =
        strategy == TDM__WATERMARK_STRATEGY_BOUNDED      ? TDM_WM_BOUNDED
        : strategy == TDM__WATERMARK_STRATEGY_MONOTONOUS ? TDM_WM_MONOTONOUS
        : strategy == TDM__WATERMARK_STRATEGY_PUNCTUATED ? TDM_WM_PUNCTUATED
                                                         : TDM_WM_NONE;
    if (c->time_mode == TDM__TIME_INGESTION)
        kind = TDM_WM_MONOTONOUS;
    else if (c->time_mode == TDM__TIME_PROCESSING)
        kind = TDM_WM_NONE;
    const tdm_job *job = n->job;
    int64_t bound = tdm__live_value(job, n, TDM__LIVE_BOUND,
                                    n->spec.src.wm_max_out_of_orderness_ms);
    char msg[200] = "";
    tdm_err err = tdm_wm_strategy_new(kind, bound, &s->strat, msg, sizeof msg);
    /* watermark.delay (bounded, event time; validated): exactly max -
     * delay, not a live setting, so the live bound is not read. */
    if (err == TDM_OK && kind == TDM_WM_BOUNDED && n->spec.src.wm_delay_ms >= 0)
        err = tdm__wm_strategy_set_delay(s->strat, n->spec.src.wm_delay_ms, msg,
                                         sizeof msg);
    if (err == TDM_OK)
        err = tdm_wm_strategy_set_interval(s->strat, n->spec.src.wm_interval_ms,
                                           msg, sizeof msg);
    bool on_event = n->spec.src.wm_emit == TDM__WATERMARK_EMIT_ON_EVENT &&
                    (kind == TDM_WM_BOUNDED || kind == TDM_WM_MONOTONOUS);
    if (err == TDM_OK && on_event)
        err = tdm_wm_strategy_set_emit_on_event(s->strat, 1);
    s->wm_max_only =
        !on_event && (kind == TDM_WM_BOUNDED || kind == TDM_WM_MONOTONOUS ||
                      kind == TDM_WM_NONE);
    int64_t idle =
        tdm__live_value(job, n, TDM__LIVE_IDLE, n->spec.src.wm_idle_timeout_ms);
    if (err == TDM_OK && idle > 0 && kind != TDM_WM_NONE)
        err = tdm_wm_strategy_set_idle_timeout(s->strat, idle, msg, sizeof msg);
    if (err == TDM_OK && n->spec.src.wm_fallback_interval_ms > 0)
        err = plan_fallback(s, n, msg, sizeof msg);
    if (err == TDM_OK && kind == TDM_WM_PUNCTUATED) {
        s->marker_idx =
            tdm__schema_find(s->schema, n->spec.src.wm_marker_field);
        err = tdm_wm_strategy_set_marker(s->strat, marker_fn, s);
    }
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "source \"%s\": %s", n->name,
                         msg[0] ? msg : tdm_strerror(err));
    return TDM_OK;
}

/* The source's connector configuration and watermark strategy. */
static tdm_err plan_source(tdm__rt_source *s, tdm_node *n, char *errbuf,
                           size_t errbuf_size)
{
    s->node = n;
    s->schema = tdm__node_schema(n);
    s->live = tdm__live_of(n->job, n);
    atomic_init(&s->unit_warned, 0);
    atomic_init(&s->first_live, TDM_TIME_MAX);
    atomic_init(&s->replay_start, TDM_TIME_MIN);
    atomic_init(&s->replay_last, TDM_TIME_MIN);
    plan_source_conf(s, n);
    tdm_err err = plan_kafka(s, n);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "out of memory planning source \"%s\"", n->name);
    plan_source_vtab(s, n);
    err = plan_source_shared(s, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    /* Watermarks: ingestion time is monotonous by construction;
     * processing time has none. */
    return plan_source_wm(s, n, errbuf, errbuf_size);
}

/* Adds the edge source -> op (input @p input) to the source. */
static tdm_err add_edge(tdm__run *run, tdm__rt_source *s, tdm__rt_op *op,
                        int input, const tdm__conf_val *keys)
{
    tdm__rt_edge *ne =
        tdm__realloc(s->edges, (size_t)(s->n_edges + 1) * sizeof *ne);
    if (!ne)
        return TDM_ERR_NOMEM;
    s->edges = ne;
    tdm__rt_edge *e = &s->edges[s->n_edges];
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
static tdm_err set_col(tdm__rt_op *op, int i, const char *prefix,
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
static tdm_err plan_window(tdm__run *run, tdm__rt_op *op, tdm_node *n)
{
    const tdm__conf_val *from = n->spec.win.from;
    const tdm__conf_val *keys = n->spec.win.key_by;
    const tdm__conf_val *aggs = n->spec.win.aggregates;
    op->n_inputs = from->n_fields;
    op->n_key = keys->n_fields;
    op->specs = aggs->aggs;
    op->n_aggs = aggs->n_aggs;
    op->fast_count = aggs->n_aggs == 1 && aggs->aggs[0].fn == TDM__FN_COUNT;
    const tdm__window_spec *ws = &n->spec.win;
    op->mode = (int)ws->output_mode;
    bool global = ws->type == TDM__WINDOW_TYPE_GLOBAL;
    bool wproc = ws->time == TDM__WINDOW_TIME_PROCESSING;
    op->proc_time = tdm__window_spec_proc_time(ws);
    op->event_time = !global && !wproc;
    /* The definition's; the value in force is the live table's
     * (init_window, op->hz.live, the metrics vertex). */
    op->lateness = ws->allowed_lateness_ms;
    tdm__window_type wtype = ws->type;
    tdm__trigger_kind trig = ws->trigger;
    op->wtype = (int)wtype;
    op->wsize = ws->size_ms;
    op->wslide = ws->slide_ms;
    op->woffset = ws->offset_ms;
    /* Count, processing-time and continuous triggers and processing-time
     * windows write results their watermark has not reached. */
    op->early = trig == TDM__TRIGGER_PROCESSING_TIME ||
                trig == TDM__TRIGGER_COUNT ||
                trig == TDM__TRIGGER_CONTINUOUS_EVENT_TIME || !op->event_time;
    if (op->early)
        run->any_early = true;
    /* Tumbling, sliding and cumulate event-time windows end; a record
     * can change results until its last window is cleaned up (cumulate:
     * the max window, which ends as a tumbling window of the size).
     * Count and processing-time triggers fire on other clocks. */
    if (op->event_time &&
        (wtype == TDM__WINDOW_TYPE_TUMBLING ||
         wtype == TDM__WINDOW_TYPE_SLIDING ||
         wtype == TDM__WINDOW_TYPE_CUMULATE) &&
        trig != TDM__TRIGGER_PROCESSING_TIME && trig != TDM__TRIGGER_COUNT) {
        int64_t size = ws->size_ms;
        op->hz.kind = RT_HZ_WINDOW;
        op->hz.size = size;
        op->hz.step = wtype == TDM__WINDOW_TYPE_SLIDING ? ws->slide_ms : size;
        op->hz.offset = ws->offset_ms;
        op->hz.lateness = op->lateness;
        tdm__live_src *ls = tdm__live_of(run->job, n);
        op->hz.live = ls ? &ls->lat_max : NULL;
    }
    op->n_cols = op->n_key + op->n_aggs;
    op->inputs = tdm__calloc((size_t)op->n_inputs, sizeof *op->inputs);
    op->in_key_idx = tdm__calloc((size_t)op->n_inputs, sizeof(int *));
    op->agg_idx = tdm__calloc((size_t)op->n_inputs, sizeof(int *));
    op->agg_in_types = tdm__calloc((size_t)op->n_aggs, sizeof(tdm_type));
    op->col_names = tdm__calloc((size_t)op->n_cols, sizeof(char *));
    op->owned_names = tdm__calloc((size_t)op->n_cols, sizeof(char *));
    op->col_types = tdm__calloc((size_t)op->n_cols, sizeof(tdm_type));
    if (!op->inputs || !op->in_key_idx || !op->agg_idx || !op->agg_in_types ||
        !op->col_names || !op->owned_names || !op->col_types)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < op->n_inputs; i++) {
        tdm__rt_source *s = find_source(run, from->fields[i]);
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
static tdm_err plan_join(tdm__run *run, tdm__rt_op *op, tdm_node *n)
{
    const char *const side[2] = {n->spec.join.left, n->spec.join.right};
    const tdm__conf_val *const side_keys[2] = {n->spec.join.left_key,
                                               n->spec.join.right_key};
    op->n_inputs = 2;
    op->n_key = n->spec.join.left_key->n_fields;
    /* A window join's pairs are final when the window fires; an
     * interval join's horizon is not tracked (commits at the end). */
    const tdm__join_spec *js = &n->spec.join;
    if (js->type == TDM__JOIN_TYPE_WINDOW) {
        int64_t size = js->size_ms;
        op->hz.kind = RT_HZ_WINDOW;
        op->hz.size = size;
        op->hz.step = js->window_type == TDM__JOIN_WINDOW_TYPE_SLIDING
                          ? js->slide_ms
                          : size;
    }
    op->inputs = tdm__calloc(2, sizeof *op->inputs);
    op->in_key_idx = tdm__calloc(2, sizeof(int *));
    if (!op->inputs || !op->in_key_idx)
        return TDM_ERR_NOMEM;
    for (int s = 0; s < 2; s++) {
        op->inputs[s] = find_source(run, side[s]);
        tdm_err err = add_edge(run, op->inputs[s], op, s, side_keys[s]);
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
        if (set_col(op, i, "left.", ls->fields[i].name, ls->fields[i].type) !=
            TDM_OK)
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
static tdm_time_ms op_horizon(const tdm__rt_horizon *h, tdm_time_ms ts)
{
    if (h->kind != RT_HZ_WINDOW)
        return TDM_TIME_MAX;
    tdm_time_ms start = tdm__window_start(ts, h->offset, h->step);
    tdm_time_ms end = tdm__time_add_sat(start, h->size);
    tdm_time_ms late = h->live
                           ? atomic_load_explicit(h->live, memory_order_relaxed)
                           : h->lateness;
    return tdm__time_add_sat(end - 1, late);
}

/* The commit horizon of a record at  ts for one consumer edge. */
tdm_time_ms tdm__rt_edge_horizon(const tdm__rt_edge *e, tdm_time_ms ts)
{
    return ts == TDM_TIME_MIN ? TDM_TIME_MIN : op_horizon(&e->op->hz, ts);
}

/* The maximum over the source's consumers; TDM_TIME_MIN for "no
 * record" (ts TDM_TIME_MIN). */
tdm_time_ms tdm__rt_horizon_of(const tdm__rt_source *s, tdm_time_ms ts)
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

/* One coordinator per distinct watermark.alignment.group; a group's
 * drift and interval are those of its first source. */
static tdm_err plan_alignment(tdm__run *run, char *errbuf, size_t errbuf_size)
{
    run->aligns = tdm__calloc((size_t)run->n_srcs + 1, sizeof *run->aligns);
    if (!run->aligns)
        goto nomem;
    for (int i = 0; i < run->n_srcs; i++) {
        tdm__rt_source *s = &run->srcs[i];
        const char *g = s->node->spec.src.wm_alignment_group;
        if (!*g)
            continue;
        tdm__rt_align *a = NULL;
        for (int k = 0; k < run->n_aligns; k++)
            if (strcmp(run->aligns[k].group, g) == 0)
                a = &run->aligns[k];
        if (!a) {
            a = &run->aligns[run->n_aligns++];
            a->group = g;
            a->run = run;
            a->drift =
                tdm__live_value(run->job, s->node, TDM__LIVE_DRIFT,
                                s->node->spec.src.wm_alignment_max_drift_ms);
            a->interval = s->node->spec.src.wm_alignment_update_interval_ms;
            if (a->interval <= 0)
                a->interval = 1000;
        }
        s->align = a;
        s->align_base = a->n;
        a->n += run->P;
    }
    for (int k = 0; k < run->n_aligns; k++) {
        tdm__rt_align *a = &run->aligns[k];
        char msg[200] = "";
        if (pthread_mutex_init(&a->mu, NULL) != 0)
            goto nomem;
        a->mu_ok = true;
        if (tdm__rt_clock_new(run->job, &a->clk) != TDM_OK)
            goto nomem;
        tdm_err err =
            tdm_align_coord_new(a->n, a->drift, a->interval, a->clk,
                                run->align_emit, a, &a->coord, msg, sizeof msg);
        if (err != TDM_OK)
            return tdm__errf(errbuf, errbuf_size, err,
                             "watermark.alignment.group \"%s\": %s", a->group,
                             msg[0] ? msg : tdm_strerror(err));
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
static tdm_err plan_repartition(tdm__rt_source *s, char *errbuf,
                                size_t errbuf_size)
{
    tdm__repartition mode = s->node->spec.src.repartition;
    if (mode == TDM__REPARTITION_NEVER || s->conf.type != TDM__SRC_KAFKA ||
        s->n_edges == 0)
        return TDM_OK;
    const tdm__rt_edge *e = &s->edges[0];
    if (e->n_key != 1 || e->key_idx[0] < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "source \"%s\": repartition needs a consumer "
                         "keyed by one field",
                         s->node->name);
    const char *key = s->schema->fields[e->key_idx[0]].name;
    if (mode == 1 && s->conf.key_field == e->key_idx[0])
        return TDM_OK;
    s->conf.repartition_key = key;
    s->conf.repartition_partitions = 0;
    s->conf.repartition_writers = (int)s->node->spec.src.repartition_writers;
    s->conf.repartition_writer_timeout =
        s->node->spec.src.repartition_writer_timeout_ms;
    tdm_wm_strategy *none = NULL;
    char msg[200] = "";
    tdm_err err = tdm_wm_strategy_new(TDM_WM_NONE, 0, &none, msg, sizeof msg);
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
static const char *two_phase_refusal(const tdm__rt_op *op)
{
    const tdm_node *n = op->node;
    const tdm__window_spec *ws = &n->spec.win;
    if (ws->local_aggregation != TDM__LOCAL_AGGREGATION_AUTO)
        return "local_aggregation is off";
    if (ws->type != TDM__WINDOW_TYPE_TUMBLING &&
        ws->type != TDM__WINDOW_TYPE_SLIDING)
        return "not a tumbling or sliding window";
    if (ws->time != TDM__WINDOW_TIME_EVENT)
        return "processing-time windows";
    if ((ws->trigger != TDM__TRIGGER_DEFAULT &&
         ws->trigger != TDM__TRIGGER_EVENT_TIME) ||
        ws->trigger_purging)
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
        const tdm__rt_source *s = op->inputs[i];
        if (s->derived)
            return "an input that is another operator's output";
        if (s->conf.time_mode != TDM__TIME_EVENT)
            return "a source not in event time";
        if (s->node->spec.src.wm_idle_timeout_ms > 0)
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
        tdm__rt_op *op = &run->ops[o];
        if (op->kind != TDM_NODE_WINDOW)
            continue;
        const char *why = two_phase_refusal(op);
        op->two_phase = !why;
        if (run->debug)
            tdm__job_log(run->job,
                         "debug local_aggregation window=%s "
                         "phases=%d%s%s",
                         op->node->name, why ? 1 : 2, why ? " reason=" : "",
                         why ? why : "");
        for (int i = 0; i < run->n_srcs; i++) {
            tdm__rt_source *s = &run->srcs[i];
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
        tdm__rt_source *s = &run->srcs[i];
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
                !s->edges[e].op->event_time || s->edges[e].op->n_inputs != 1 ||
                s->edges[e].op->early)
                s->fence = false;
    }
    plan_two_phase(run);
    tdm__on_cancel oc = job->spec.on_cancel;
    /* With checkpoints, auto stops too: windows left open are in the
     * final checkpoint and the next run completes them exactly. */
    run->stop_on_cancel = oc == TDM__ON_CANCEL_STOP ||
                          (oc == TDM__ON_CANCEL_AUTO &&
                           (endless_kafka || *run->job->spec.checkpoint_dir));
    run->commit_interval = job->spec.commit_interval_ms;
    if (run->commit_interval <= 0)
        run->commit_interval = 1000;
    return plan_alignment(run, errbuf, errbuf_size);
}

/* See plan.h.  Builds sources, operators, edges and sinks (nothing
 * opened yet). */
tdm_err tdm__plan_build(tdm__run *run, char *errbuf, size_t errbuf_size)
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
        if (n->kind == TDM_NODE_SINK) {
            if (plan_sink(&run->sinks[run->n_sinks++], n) != TDM_OK)
                goto nomem;
        } else if (n->kind == TDM_NODE_SOURCE) {
            tdm_err err =
                plan_source(&run->srcs[run->n_srcs++], n, errbuf, errbuf_size);
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
        tdm__rt_op *op = &run->ops[run->n_ops++];
        op->node = n;
        op->kind = n->kind;
        tdm_err err = n->kind == TDM_NODE_WINDOW ? plan_window(run, op, n)
                                                 : plan_join(run, op, n);
        if (err != TDM_OK)
            goto nomem;
        op->n_channels = op->n_inputs * run->P;
        op->sink = find_sink(run, tdm__node_spec_sink(n->kind, &n->spec));
        op->late = find_sink(run, tdm__node_spec_late(n->kind, &n->spec));
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
        tdm__rt_source *s = &run->srcs[i];
        s->pass = find_sink(run, s->node->spec.src.sink);
        if (s->pass)
            s->pass->used = true;
    }
    run->dead = find_sink(run, job->spec.dead_letter);
    if (run->dead)
        run->dead->used = true;
    /* Writer roles for checkpoints: each source writing to a sink is
     * one (its P subtasks are the role's writers). */
    for (int i = 0; i < run->n_srcs; i++) {
        tdm__rt_source *s = &run->srcs[i];
        s->pass_role = s->pass ? s->pass->n_roles++ : -1;
        s->dead_role = run->dead ? run->dead->n_roles++ : -1;
    }
    for (int i = 0; i < run->n_ops; i++) {
        tdm__rt_op *op = &run->ops[i];
        op->sink_role = op->sink ? op->sink->n_roles++ : -1;
        op->late_role = op->late ? op->late->n_roles++ : -1;
    }
    return plan_runtime(run, errbuf, errbuf_size);

nomem:
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                     "out of memory planning the job");
}

/* ---- Freeing ---- */

/* See plan.h.  Connector state shared by a source's subtasks goes last,
 * once every connector closed (the subtasks are freed before). */
void tdm__plan_free(tdm__run *run)
{
    for (int i = 0; i < run->n_srcs; i++) {
        tdm__rt_source *s = &run->srcs[i];
        for (int e = 0; e < s->n_edges; e++)
            tdm__free(s->edges[e].key_idx);
        tdm__free(s->edges);
        tdm_wm_strategy_destroy(s->strat);
        tdm_wm_strategy_destroy(
            (tdm_wm_strategy *)s->conf.repartition_strategy);
        tdm__free(s->group_owned);
        tdm__free(s->start_file);
        if (s->conf.shared) {
            if (s->conf.shared->free_p)
                s->conf.shared->free_p(s->conf.shared->p);
            pthread_mutex_destroy(&s->conf.shared->mu);
            tdm__free(s->conf.shared);
            s->conf.shared = NULL;
        }
    }
    for (int i = 0; i < run->n_sinks; i++) {
        tdm__free(run->sinks[i].task_path);
        tdm__free(run->sinks[i].task_name);
    }
    for (int k = 0; k < run->n_aligns; k++) {
        tdm__rt_align *a = &run->aligns[k];
        tdm_align_coord_destroy(a->coord);
        tdm_clock_destroy(a->clk);
        if (a->mu_ok)
            pthread_mutex_destroy(&a->mu);
    }
    tdm__free(run->aligns);
    for (int i = 0; i < run->n_dsrcs; i++) {
        tdm__rt_source *s = &run->dsrcs[i];
        for (int e = 0; e < s->n_edges; e++)
            tdm__free(s->edges[e].key_idx);
        tdm__free(s->edges);
    }
    tdm__free(run->dsrcs);
    for (int i = 0; i < run->n_ops; i++) {
        tdm__rt_op *op = &run->ops[i];
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
