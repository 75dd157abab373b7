/* SPDX-License-Identifier: MIT */
/* job_validate.c - the validation of a whole job graph: references,
 * required keys, fields against schemas, window and join parameters,
 * cycles, checkpointing, the output schemas of windows and joins that
 * other operators read, and a sink's select against what its producers
 * write.  Every message names the node and the key, so
 * that a YAML loader can point at the offending line.
 *
 * It sits above the definition (job.c: nodes and their configuration,
 * which it only reads) and beside the pieces it asks: the typed specs
 * (spec.c, filled here before any node is checked), the source
 * expressions' compiler (job_exprs.c) and the restart strategy's refusal
 * (restart.c).  Nothing below calls back up into it; a run validates
 * first (run.c) and then reads the specs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/conn.h"
#include "connect/kafka.h"
#include "runtime/expr.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "window/win.h"

typedef struct vctx {
    tdm_job *job;
    char *errbuf;
    size_t n;
    /* Operators are validated inputs first (their output schemas feed
     * their consumers' checks): per node index, 0 not yet, 1 under way
     * (on the stack), 2 done; the stack names a cycle. */
    uint8_t *state;
    const tdm_node **stack;
    int depth;
} vctx;

#define VFAIL(c, node, ...) return vfail((c), (node), __VA_ARGS__)

static tdm_err vfail(vctx *c, const tdm_node *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "window \"w\": <message>" into the caller's buffer. */
static tdm_err vfail(vctx *c, const tdm_node *node, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (node)
        return tdm__errf(c->errbuf, c->n, TDM_ERR_INVAL, "%s \"%s\": %s",
                         tdm__node_kind_name(node->kind), node->name, msg);
    return tdm__errf(c->errbuf, c->n, TDM_ERR_INVAL, "job: %s", msg);
}

static const char *type_name(tdm_type t)
{
    switch (t) {
    case TDM_TYPE_INT64:
        return "int64";
    case TDM_TYPE_DOUBLE:
        return "double";
    case TDM_TYPE_STRING:
        return "string";
    case TDM_TYPE_BOOL:
        return "bool";
    case TDM_TYPE_TIMESTAMP:
        return "timestamp";
    case TDM_TYPE_DECIMAL:
        break;
    }
    return TDM_TYPE_BASE(t) == TDM_TYPE_DECIMAL ? "decimal" : "?";
}

/* int64 and timestamp share an encoding; decimals of one scale match
 * whatever their precision; other types only match themselves. */
static bool types_compatible(tdm_type a, tdm_type b)
{
    if (a == TDM_TYPE_TIMESTAMP)
        a = TDM_TYPE_INT64;
    if (b == TDM_TYPE_TIMESTAMP)
        b = TDM_TYPE_INT64;
    if (TDM_TYPE_BASE(a) == TDM_TYPE_DECIMAL) /* the same scale */
        return TDM_TYPE_BASE(b) == TDM_TYPE_DECIMAL &&
               TDM_DECIMAL_SCALE(a) == TDM_DECIMAL_SCALE(b);
    return a == b;
}

/* Checks that @p key names a node of @p kind; *out receives it. */
static tdm_err check_ref(vctx *c, const tdm_node *n, const char *key,
                         const char *name, tdm_node_kind kind, tdm_node **out)
{
    tdm_node *t = tdm_job_node(c->job, name);
    if (!t)
        VFAIL(c, n, "%s: unknown node \"%s\" (expected the name of a %s)", key,
              name, tdm__node_kind_name(kind));
    if (t->kind != kind)
        VFAIL(c, n, "%s: \"%s\" is a %s, expected a %s", key, name,
              tdm__node_kind_name(t->kind), tdm__node_kind_name(kind));
    if (out)
        *out = t;
    return TDM_OK;
}

/* An optional sink reference: key @p key of @p n, naming @p name. */
static tdm_err check_sink_ref(vctx *c, const tdm_node *n, const char *key,
                              const char *name, bool required)
{
    if (!*name) {
        if (required)
            VFAIL(c, n, "%s: required (the name of a sink)", key);
        return TDM_OK;
    }
    return check_ref(c, n, key, name, TDM_NODE_SINK, NULL);
}

static tdm_err check_field(vctx *c, const tdm_node *n, const char *key,
                           const tdm_node *src, const char *field,
                           tdm_type *type)
{
    const tdm__schema *s = tdm__node_schema(src);
    int i = s ? tdm__schema_find(s, field) : -1;
    if (i < 0 && src->kind != TDM_NODE_SOURCE)
        VFAIL(c, n,
              "%s: field \"%s\" is not in the output of %s \"%s\" "
              "(%s)",
              key, field, tdm__node_kind_name(src->kind), src->name,
              src->kind == TDM_NODE_JOIN
                  ? "left.<field>, right.<field> and ts"
                  : "its key_by fields, aggregate names, window_start "
                    "and window_end");
    if (i < 0)
        VFAIL(c, n,
              "%s: field \"%s\" is not in the schema of source "
              "\"%s\"",
              key, field, src->name);
    if (type)
        *type = s->fields[i].type;
    return TDM_OK;
}

/* Bit of type @p t in a mask of accepted types. */
#define TYPE_BIT(t) (1u << (unsigned)TDM_TYPE_BASE(t))

/* Field @p field of source @p n, named by its key @p key, is in its
 * schema and of a type in @p ok (TYPE_BITs); otherwise "<key>: \"<field>\"
 * is <type><tail>". */
static tdm_err check_field_type(vctx *c, const tdm_node *n, const char *key,
                                const char *field, unsigned ok,
                                const char *tail)
{
    tdm_type t = TDM_TYPE_INT64;
    tdm_err err = check_field(c, n, key, n, field, &t);
    if (err != TDM_OK)
        return err;
    if (!(ok & TYPE_BIT(t)))
        VFAIL(c, n, "%s: \"%s\" is %s%s", key, field, type_name(t), tail);
    return TDM_OK;
}

/* A key of @p n that was given explicitly (not its default) and not
 * emptied again. */
static bool node_set(const tdm_node *n, const char *key)
{
    const tdm__conf_val *v = tdm__node_val(n, key);
    return v->set && v->text && *v->text;
}

bool tdm__start_ts_parse(const char *s, tdm_time_ms *out)
{
    size_t l = strlen(s);
    size_t i = s[0] == '-' ? 1 : 0;
    bool digits = l > i;
    for (size_t k = i; k < l; k++)
        if (s[k] < '0' || s[k] > '9')
            digits = false;
    if (digits) {
        if (l >= 19)
            return false;
        *out = strtoll(s, NULL, 10);
        return true;
    }
    return tdm__ts_from_text(s, l, TDM__UNIT_ISO8601, out) == TDM_OK;
}

/* The kafka.* properties of a source or sink: names and values as
 * librdkafka takes them, none that tidemark sets itself, none for the
 * other kind of client (docs/kafka.md, "Operations guards"). */
static tdm_err validate_kafka_props(vctx *c, tdm_node *n,
                                    const tdm__conf_val *props, bool sink,
                                    bool producer_ok)
{
    char why[400];
    tdm_err err = tdm__kafka_check_props((const char *const *)props->props,
                                         props->n_props, sink, producer_ok, why,
                                         sizeof why);
    if (err == TDM_ERR_NOMEM)
        return err;
    if (err != TDM_OK)
        VFAIL(c, n, "%s", why);
    return TDM_OK;
}

/* "metadata.FIELD: KEY" of a Kafka source: a known key, each once, into
 * a schema field of its type that nothing else fills (the message key,
 * the event time: the message's timestamp as event time is
 * timestamp.source: message). */
static tdm_err validate_kafka_metadata(vctx *c, tdm_node *n)
{
    static const unsigned ok[TDM__KMETA_N] = {
        [TDM__KMETA_TIMESTAMP] =
            TYPE_BIT(TDM_TYPE_TIMESTAMP) | TYPE_BIT(TDM_TYPE_INT64),
        [TDM__KMETA_PARTITION] = TYPE_BIT(TDM_TYPE_INT64),
        [TDM__KMETA_OFFSET] = TYPE_BIT(TDM_TYPE_INT64),
        [TDM__KMETA_TOPIC] = TYPE_BIT(TDM_TYPE_STRING)};
    static const char *const want[TDM__KMETA_N] = {
        ", expected timestamp or int64 (it receives the message time)",
        ", expected int64 (it receives the partition)",
        ", expected int64 (it receives the offset)",
        ", expected string (it receives the topic)"};
    const tdm__conf_val *md = n->spec.src.metadata;
    const char *seen[TDM__KMETA_N] = {NULL};
    for (int i = 0; i < md->n_props; i++) {
        const char *f = md->props[2 * i], *v = md->props[2 * i + 1];
        int k = tdm__kafka_meta_kind(v);
        char key[300];
        snprintf(key, sizeof key, "metadata.%s", f);
        if (k < 0)
            VFAIL(c, n, "%s: unknown metadata \"%s\" (known: %s)", key, v,
                  TDM__KMETA_KNOWN);
        if (seen[k])
            VFAIL(c, n, "%s: the %s already goes to field \"%s\"", key, v,
                  seen[k]);
        seen[k] = f;
        tdm_err err = check_field_type(c, n, key, f, ok[k], want[k]);
        if (err != TDM_OK)
            return err;
        if (strcmp(f, n->spec.src.key_field) == 0)
            VFAIL(c, n,
                  "%s: \"%s\" is key.field (it receives the message "
                  "key)",
                  key, f);
        if (strcmp(f, n->spec.src.timestamp_field) == 0)
            VFAIL(c, n,
                  "%s: \"%s\" is timestamp.field; for the message time as "
                  "event time set timestamp.source: message instead of "
                  "timestamp.field",
                  key, f);
    }
    return TDM_OK;
}

/* The Kafka keys of a source: where to connect, what to read, and how
 * event time and the key are taken from the message (design: docs/
 * kafka.md); its librdkafka properties (kafka.*) by
 * validate_kafka_props. */
static tdm_err validate_kafka_source(vctx *c, tdm_node *n)
{
    const tdm__conf_val *props = n->spec.src.kafka;
    tdm_err perr = validate_kafka_props(
        c, n, props, false, n->spec.src.repartition != TDM__REPARTITION_NEVER);
    if (perr != TDM_OK)
        return perr;
    if (!*n->spec.src.brokers && !tdm__conf_prop(props, "bootstrap.servers"))
        VFAIL(c, n,
              "brokers: required for kafka sources (\"host:port,...\""
              ", or kafka.bootstrap.servers)");
    const char *topics = n->spec.src.topics;
    const char *pattern = n->spec.src.topic_pattern;
    if (*topics && *pattern)
        VFAIL(c, n,
              "topic_pattern: set either topics or topic_pattern, "
              "not both");
    if (!*topics && !*pattern)
        VFAIL(c, n,
              "topics: required for kafka sources (a comma-separated "
              "list, or set topic_pattern)");
    if (*pattern && pattern[0] != '^')
        VFAIL(c, n,
              "topic_pattern: must start with '^' (a regular "
              "expression), got \"%s\"",
              pattern);
    if (*topics) {
        /* No empty names: "a,,b", a trailing comma, blanks only. */
        const char *p = topics;
        for (;;) {
            size_t l = strcspn(p, ",");
            size_t b = 0;
            while (b < l && (p[b] == ' ' || p[b] == '\t'))
                b++;
            if (b == l)
                VFAIL(c, n,
                      "topics: expected comma-separated topic names, "
                      "got \"%s\" (an empty name)",
                      topics);
            if (!p[l])
                break;
            p += l + 1;
        }
    }
    bool at_ts = n->spec.src.start == TDM__SOURCE_START_TIMESTAMP;
    const char *sts = n->spec.src.start_timestamp;
    if (at_ts && !*sts)
        VFAIL(c, n,
              "start.timestamp: required with start: timestamp "
              "(epoch milliseconds or ISO-8601)");
    if (!at_ts && *sts)
        VFAIL(c, n, "start.timestamp: only used with start: timestamp");
    tdm_time_ms sts_ms;
    if (*sts && !tdm__start_ts_parse(sts, &sts_ms))
        VFAIL(c, n,
              "start.timestamp: expected epoch milliseconds or "
              "ISO-8601 like \"2026-12-02T10:00:00Z\", got \"%s\"",
              sts);
    if (*n->spec.src.partition_field)
        VFAIL(c, n,
              "partition.field: kafka sources are partitioned by "
              "their topic partitions; remove it");
    const char *kf = n->spec.src.key_field;
    if (*kf) {
        tdm_err err =
            check_field_type(c, n, "key.field", kf, TYPE_BIT(TDM_TYPE_STRING),
                             ", expected string (it receives "
                             "the message key)");
        if (err != TDM_OK)
            return err;
    }
    tdm_err merr = validate_kafka_metadata(c, n);
    if (merr != TDM_OK)
        return merr;
    bool ts_message = n->spec.src.ts_source == TDM__TIMESTAMP_SOURCE_MESSAGE;
    if (ts_message && *n->spec.src.timestamp_field)
        VFAIL(c, n,
              "timestamp.field: the event time comes from the "
              "message (timestamp.source: message); remove "
              "timestamp.field or set timestamp.source: field");
    if (ts_message && n->spec.src.time != TDM__SOURCE_TIME_EVENT)
        VFAIL(c, n,
              "timestamp.source: message timestamps are event time, "
              "but time is not event");
    return TDM_OK;
}

/* Keys that only mean something to a Kafka source. */
static const char *const kafka_only_keys[] = {
    "brokers",
    "topics",
    "topic_pattern",
    "group",
    "start.timestamp",
    "key.field",
    "repartition.writers",
    "repartition.writer_timeout",
    "brokers.timeout",
};

/* The keys of a TCP source (docs/tcp.md).  Any of them on another
 * source is refused, and so are back-off keys of a source that never
 * reconnects and a back-off longer than its maximum: a setting that
 * cannot take effect is a mistake to report, not to ignore. */
static const char *const tcp_keys[] = {
    "tcp.address",           "tcp.on_close",
    "tcp.connect_timeout",   "tcp.reconnect.timeout",
    "tcp.reconnect.backoff", "tcp.reconnect.max_backoff",
};

static tdm_err validate_tcp_source(vctx *c, tdm_node *n, tdm__source_type type)
{
    if (type != TDM__SOURCE_TYPE_TCP) {
        for (size_t k = 0; k < sizeof tcp_keys / sizeof tcp_keys[0]; k++)
            if (node_set(n, tcp_keys[k]))
                VFAIL(c, n,
                      "%s: only tcp sources take it (type is not "
                      "tcp)",
                      tcp_keys[k]);
        return TDM_OK;
    }
    const char *a = n->spec.src.tcp_address;
    const char *colon = strrchr(a, ':');
    if (!colon || colon == a || !colon[1])
        VFAIL(c, n, "tcp.address: expected host:port, got \"%s\"", a);
    int64_t backoff = n->spec.src.tcp_reconnect_backoff_ms;
    int64_t max = n->spec.src.tcp_reconnect_max_backoff_ms;
    if (n->spec.src.tcp_reconnect_timeout_ms == 0) {
        const char *k = node_set(n, "tcp.reconnect.backoff")
                            ? "tcp.reconnect.backoff"
                            : "tcp.reconnect.max_backoff";
        if (node_set(n, k))
            VFAIL(c, n,
                  "%s: the source never reconnects "
                  "(tcp.reconnect.timeout is 0)",
                  k);
    } else if (max < backoff) {
        VFAIL(c, n,
              "tcp.reconnect.max_backoff: %lld ms is less than "
              "tcp.reconnect.backoff (%lld ms)",
              (long long)max, (long long)backoff);
    }
    return TDM_OK;
}

/* The filter and compute.* keys (expr.c): compiled here, so that a bad
 * expression is a validation error, and kept on the node for the run
 * (not replaced while a run uses them). */
static tdm_err validate_exprs(vctx *c, tdm_node *n, const char *tsf)
{
    tdm__src_exprs *x = NULL;
    char msg[512];
    tdm_err err = tdm__src_exprs_compile(n, tsf, &x, msg, sizeof msg);
    if (err == TDM_ERR_NOMEM)
        return tdm__errf(c->errbuf, c->n, err, "out of memory");
    if (err != TDM_OK)
        VFAIL(c, n, "%s", msg);
    if (tdm__run_record_running(c->job->rec)) {
        tdm__src_exprs_destroy(x);
    } else {
        tdm__src_exprs_destroy(n->exprs);
        n->exprs = x;
    }
    return TDM_OK;
}

/* The keys only Kafka sources take, on a source of another type. */
static tdm_err validate_not_kafka(vctx *c, tdm_node *n)
{
    for (size_t k = 0; k < sizeof kafka_only_keys / sizeof kafka_only_keys[0];
         k++)
        if (node_set(n, kafka_only_keys[k]))
            VFAIL(c, n, "%s: only kafka sources take it (type is not kafka)",
                  kafka_only_keys[k]);
    if (n->spec.src.kafka->n_props > 0)
        VFAIL(c, n, "kafka.%s: only kafka sources take kafka.* properties",
              n->spec.src.kafka->props[0]);
    if (n->spec.src.metadata->n_props > 0)
        VFAIL(c, n,
              "metadata.%s: only kafka sources have message metadata "
              "(type is not kafka)",
              n->spec.src.metadata->props[0]);
    if (n->spec.src.ts_source == TDM__TIMESTAMP_SOURCE_MESSAGE)
        VFAIL(c, n,
              "timestamp.source: message timestamps exist only for "
              "kafka sources");
    if (n->spec.src.repartition != TDM__REPARTITION_NEVER)
        VFAIL(c, n, "repartition: only kafka sources re-partition");
    return TDM_OK;
}

/* Alignment: a group with a positive drift. */
static tdm_err validate_alignment(vctx *c, tdm_node *n)
{
    if (*n->spec.src.wm_alignment_group &&
        n->spec.src.wm_alignment_max_drift_ms <= 0)
        VFAIL(c, n,
              "watermark.alignment.max_drift: required (> 0) with "
              "watermark.alignment.group");
    if (!*n->spec.src.wm_alignment_group &&
        (node_set(n, "watermark.alignment.max_drift") ||
         node_set(n, "watermark.alignment.update_interval")))
        VFAIL(c, n,
              "watermark.alignment.group: required with "
              "watermark.alignment.max_drift (sources with the same "
              "group are aligned)");
    return TDM_OK;
}

/* The NEXMark record kinds: a comma-separated list of person, auction
 * and bid. */
static tdm_err validate_nexmark_kinds(vctx *c, tdm_node *n)
{
    const char *p = n->spec.src.gen_nexmark_kinds;
    bool any = false;
    while (*p) {
        size_t len = strcspn(p, ",");
        bool known = (len == 6 && !strncmp(p, "person", 6)) ||
                     (len == 7 && !strncmp(p, "auction", 7)) ||
                     (len == 3 && !strncmp(p, "bid", 3));
        if (!known)
            VFAIL(c, n,
                  "generator.nexmark.kinds: \"%.*s\" is not person, "
                  "auction or bid",
                  (int)len, p);
        any = true;
        p += len + (p[len] == ',');
    }
    if (!any)
        VFAIL(c, n, "generator.nexmark.kinds: empty");
    return TDM_OK;
}

/* A generator source (a schema of its own picks generator fields by
 * name). */
static tdm_err validate_generator(vctx *c, tdm_node *n)
{
    int64_t parts = n->spec.src.gen_partitions;
    int64_t idle = n->spec.src.gen_idle_partition;
    if (idle >= parts)
        VFAIL(c, n,
              "generator.idle_partition: %lld is not a partition "
              "(generator.partitions is %lld)",
              (long long)idle, (long long)parts);
    if (n->spec.src.gen_kind == TDM__GENERATOR_KIND_NEXMARK)
        return validate_nexmark_kinds(c, n);
    return TDM_OK;
}

/* The keys of the connector "type" picks (not for a test hook's). */
static tdm_err validate_connector(vctx *c, tdm_node *n)
{
    tdm__source_type type = n->spec.src.type;
    if (type == TDM__SOURCE_TYPE_FILE && !*n->spec.src.path)
        VFAIL(c, n,
              "path: required for file sources (a file, a glob or "
              "\"-\" for standard input)");
    tdm_err err = validate_tcp_source(c, n, type);
    if (err == TDM_OK && type == TDM__SOURCE_TYPE_GENERATOR)
        err = validate_generator(c, n);
    return err;
}

/* The field event time is read from: timestamp.field, or a generator's
 * own ("ts", NEXMark's "date_time"); "" when none. */
static const char *source_ts_field(const tdm_node *n)
{
    const char *tsf = n->spec.src.timestamp_field;
    if (!*tsf && n->spec.src.type == TDM__SOURCE_TYPE_GENERATOR && !n->src_vt)
        tsf = n->spec.src.gen_kind == TDM__GENERATOR_KIND_NEXMARK ? "date_time"
                                                                  : "ts";
    return tsf;
}

/* An event-time source's timestamp field @p tsf: present, and of a
 * type its timestamp.unit can read. */
static tdm_err validate_event_time(vctx *c, tdm_node *n, const char *tsf)
{
    if (!*tsf)
        VFAIL(c, n,
              "timestamp.field: required for event time (or set "
              "time: ingestion)");
    if (n->spec.src.ts_unit == TDM__TIMESTAMP_UNIT_ISO8601)
        return check_field_type(c, n, "timestamp.field", tsf,
                                TYPE_BIT(TDM_TYPE_STRING) |
                                    TYPE_BIT(TDM_TYPE_TIMESTAMP),
                                ", but timestamp.unit iso8601 needs a "
                                "string or timestamp field");
    return check_field_type(c, n, "timestamp.field", tsf,
                            TYPE_BIT(TDM_TYPE_INT64) |
                                TYPE_BIT(TDM_TYPE_TIMESTAMP),
                            ", expected int64 or timestamp (or "
                            "timestamp.unit: iso8601)");
}

/* The fallback watermark (docs/live-settings.md): on event-time
 * watermarks the source's own reader makes, and a lag only with an
 * interval (a lag of 0 and no interval is the default: off). */
static tdm_err validate_fallback(vctx *c, tdm_node *n)
{
    const tdm__source_spec *s = &n->spec.src;
    if (s->wm_fallback_interval_ms == 0) {
        if (s->wm_fallback_lag_ms != 0)
            VFAIL(c, n,
                  "watermark.fallback.lag: the fallback watermark is off "
                  "without watermark.fallback.interval (e.g. "
                  "watermark.fallback: {lag: 10s, interval: 5s})");
        return TDM_OK;
    }
    if (s->time != TDM__SOURCE_TIME_EVENT)
        VFAIL(c, n,
              "watermark.fallback: the source runs on %s time, whose "
              "watermark already follows the clock",
              s->time == TDM__SOURCE_TIME_INGESTION ? "ingestion"
                                                    : "processing");
    if (s->wm_strategy == TDM__WATERMARK_STRATEGY_NONE)
        VFAIL(c, n,
              "watermark.fallback: watermark.strategy none makes no data "
              "watermark for the fallback to back up (use time: "
              "ingestion for watermarks from the clock alone)");
    if (s->repartition != TDM__REPARTITION_NEVER ||
        c->job->spec.scale_out == TDM__SCALE_OUT_TASKS)
        VFAIL(c, n,
              "watermark.fallback: not available yet on a source that "
              "repartitions or in a job run as tasks across processes "
              "(their watermarks travel through the repartition topic)");
    return TDM_OK;
}

/* watermark.delay: an exact delay of the bounded strategy, in event
 * time, instead of a bound (the two say the same thing off by 1 ms). */
static tdm_err validate_delay(vctx *c, const tdm_node *n)
{
    const tdm__source_spec *sp = &n->spec.src;
    static const char *const names[] = {"bounded", "monotonous", "punctuated",
                                        "none"};
    if (sp->wm_delay_ms < 0)
        return TDM_OK;
    if (sp->wm_strategy != TDM__WATERMARK_STRATEGY_BOUNDED)
        VFAIL(c, n,
              "watermark.delay: only with watermark.strategy bounded "
              "(strategy is %s)",
              names[sp->wm_strategy]);
    if (node_set(n, "watermark.max_out_of_orderness"))
        VFAIL(c, n,
              "watermark.delay: give it or watermark.max_out_of_orderness, "
              "not both (delay d is watermark = max - d; a bound b is max - "
              "b - 1 ms)");
    if (sp->time != TDM__SOURCE_TIME_EVENT)
        VFAIL(c, n,
              "watermark.delay: only for event time (time is %s, whose "
              "watermarks are made at the source)",
              sp->time == TDM__SOURCE_TIME_INGESTION ? "ingestion"
                                                     : "processing");
    return TDM_OK;
}

/* The watermark keys: an exact delay, the punctuated strategy's marker
 * field, and idleness judged at periodic emissions. */
static tdm_err validate_source_watermark(vctx *c, tdm_node *n)
{
    tdm_err derr = validate_delay(c, n);
    if (derr != TDM_OK)
        return derr;
    if (n->spec.src.wm_strategy == TDM__WATERMARK_STRATEGY_PUNCTUATED) {
        const char *mf = n->spec.src.wm_marker_field;
        if (!*mf)
            VFAIL(c, n,
                  "watermark.marker_field: required for the punctuated "
                  "strategy (a bool field)");
        tdm_err err =
            check_field_type(c, n, "watermark.marker_field", mf,
                             TYPE_BIT(TDM_TYPE_BOOL), ", expected bool");
        if (err != TDM_OK)
            return err;
    }
    if (n->spec.src.wm_idle_timeout_ms > 0 && n->spec.src.wm_interval_ms == 0)
        VFAIL(c, n,
              "watermark.idle_timeout: idleness is judged at periodic "
              "emissions, but watermark.interval is 0");
    return validate_fallback(c, n);
}

/* partition.field, and a pass-through sink. */
static tdm_err validate_source_outputs(vctx *c, tdm_node *n)
{
    const char *pf = n->spec.src.partition_field;
    if (*pf) {
        tdm_err err = check_field(c, n, "partition.field", n, pf, NULL);
        if (err != TDM_OK)
            return err;
    }
    if (!*n->spec.src.sink)
        return TDM_OK;
    /* Kafka commits cover what the windows wrote; a pass-through has no
     * part in that protocol yet. */
    if (n->spec.src.type == TDM__SOURCE_TYPE_KAFKA && !n->src_vt)
        VFAIL(c, n,
              "sink: kafka sources cannot write to a sink directly "
              "(read them with a window or join)");
    return check_sink_ref(c, n, "sink", n->spec.src.sink, false);
}

static tdm_err validate_source(vctx *c, tdm_node *n)
{
    const tdm__source_spec *sp = &n->spec.src;
    tdm_err err = TDM_OK;
    if (!n->src_vt)
        err = sp->type == TDM__SOURCE_TYPE_KAFKA ? validate_kafka_source(c, n)
                                                 : validate_not_kafka(c, n);
    if (err == TDM_OK)
        err = validate_alignment(c, n);
    if (err == TDM_OK && !n->src_vt)
        err = validate_connector(c, n);
    if (err != TDM_OK)
        return err;
    if (!tdm__node_schema(n))
        VFAIL(c, n, "schema: required (e.g. \"user:string, ts:timestamp\")");
    const char *tsf = source_ts_field(n);
    bool event = sp->time == TDM__SOURCE_TIME_EVENT &&
                 sp->ts_source != TDM__TIMESTAMP_SOURCE_MESSAGE;
    if (event)
        err = validate_event_time(c, n, tsf);
    if (err == TDM_OK)
        err = validate_source_watermark(c, n);
    if (err == TDM_OK)
        err = validate_source_outputs(c, n);
    if (err != TDM_OK)
        return err;
    return validate_exprs(c, n, event ? tsf : NULL);
}

/* An input of operator @p n (key @p key): a source, or a window or join
 * whose output stream @p n reads (not @p n itself).  *out receives it. */
static tdm_err check_input(vctx *c, const tdm_node *n, const char *key,
                           const char *name, tdm_node **out)
{
    tdm_node *t = tdm_job_node(c->job, name);
    if (!t)
        VFAIL(c, n,
              "%s: unknown node \"%s\" (expected the name of a "
              "source, window or join)",
              key, name);
    if (t->kind == TDM_NODE_SINK)
        VFAIL(c, n,
              "%s: \"%s\" is a sink, expected a source, window or "
              "join",
              key, name);
    if (t == n)
        VFAIL(c, n,
              "%s: \"%s\" is this %s itself; an operator cannot "
              "read its own output",
              key, name, tdm__node_kind_name(n->kind));
    *out = t;
    return TDM_OK;
}

/* The names of the nodes operator @p n reads (window: its "from"; join:
 * left, right) into @p names (at most @p max); returns how many. */
static int op_input_names(const tdm_node *n, const char **names, int max)
{
    int k = 0;
    if (n->kind == TDM_NODE_WINDOW) {
        const tdm__conf_val *from = n->spec.win.from;
        for (int i = 0; i < from->n_fields && k < max; i++)
            names[k++] = from->fields[i];
    } else if (n->kind == TDM_NODE_JOIN && max >= 2) {
        names[k++] = n->spec.join.left;
        names[k++] = n->spec.join.right;
    }
    return k;
}

/* Whether operator @p op is read by another window or join (its output
 * stream then has consumers, docs/runtime.md, Chained operators); the
 * first such reader goes to *reader when not NULL. */
static bool op_consumed(const tdm_job *job, const tdm_node *op,
                        const tdm_node **reader)
{
    for (int i = 0; i < job->n_nodes; i++) {
        const tdm_node *n = job->nodes[i];
        const char *names[64];
        int k = op_input_names(n, names, 64);
        for (int j = 0; j < k; j++)
            if (n != op && strcmp(names[j], op->name) == 0) {
                if (reader)
                    *reader = n;
                return true;
            }
    }
    return false;
}

/* Whether the records of node @p n are stamped in processing time: a
 * source with time: processing, or a processing-time window (whose
 * results carry processing-time window bounds). */
static bool proc_time_output(const tdm_node *n)
{
    if (n->kind == TDM_NODE_SOURCE)
        return n->spec.src.time == TDM__SOURCE_TIME_PROCESSING;
    if (n->kind == TDM_NODE_WINDOW)
        return n->spec.win.time == TDM__WINDOW_TIME_PROCESSING;
    return false;
}

/* Inputs of a window: its "from" list (sources, windows, joins). */
static tdm_err window_inputs(vctx *c, const tdm_node *n, tdm_node **srcs,
                             int max, int *n_srcs)
{
    const tdm__conf_val *from = n->spec.win.from;
    if (from->n_fields == 0)
        VFAIL(c, n,
              "from: required (the name of a source, or several for "
              "a union)");
    if (from->n_fields > max)
        VFAIL(c, n, "from: at most %d inputs", max);
    for (int i = 0; i < from->n_fields; i++) {
        tdm_err err = check_input(c, n, "from", from->fields[i], &srcs[i]);
        if (err != TDM_OK)
            return err;
    }
    *n_srcs = from->n_fields;
    return TDM_OK;
}

/* Replaces @p n's output schema by @p fresh (taken), unless a run uses
 * the node now: then the old one stays (it is the same, computed from
 * keys a running job does not change) and @p fresh is freed. */
static void set_out_schema(vctx *c, tdm_node *n, tdm__schema *fresh)
{
    if (tdm__run_record_running(c->job->rec) && n->out_schema.n > 0) {
        tdm__schema_free(fresh);
        return;
    }
    tdm__schema_free(&n->out_schema);
    n->out_schema = *fresh;
}

/* Appends field @p name (copied, with @p prefix if not NULL) of @p type
 * to a schema being built with room for it. */
static tdm_err out_field(tdm__schema *s, const char *prefix, const char *name,
                         tdm_type type)
{
    size_t l = (prefix ? strlen(prefix) : 0) + strlen(name) + 1;
    char *p = tdm__malloc(l);
    if (!p)
        return TDM_ERR_NOMEM;
    snprintf(p, l, "%s%s", prefix ? prefix : "", name);
    s->fields[s->n].name = p;
    s->fields[s->n].type = type;
    s->n++;
    return TDM_OK;
}

/* A window's output stream: its key_by fields (types of its first
 * input), each aggregate's result, window_start and window_end (not
 * window_time, a sink's select member only: a join's pairs and a chained
 * window's late rows carry the stream's columns, and those rows stay as
 * they were). */
static tdm_err window_out_schema(vctx *c, tdm_node *n, const tdm_node *in0)
{
    const tdm__conf_val *kb = n->spec.win.key_by;
    const tdm__conf_val *ag = n->spec.win.aggregates;
    const tdm__schema *s0 = tdm__node_schema(in0);
    tdm__schema o = {0, NULL};
    o.fields =
        tdm__calloc((size_t)(kb->n_fields + ag->n_aggs + 2), sizeof *o.fields);
    tdm_err err = o.fields ? TDM_OK : TDM_ERR_NOMEM;
    for (int k = 0; err == TDM_OK && k < kb->n_fields; k++) {
        int f = tdm__schema_find(s0, kb->fields[k]);
        err = out_field(&o, NULL, kb->fields[k], s0->fields[f].type);
    }
    for (int a = 0; err == TDM_OK && a < ag->n_aggs; a++) {
        const tdm__agg_spec *sp = &ag->aggs[a];
        int f = sp->field ? tdm__schema_find(s0, sp->field) : -1;
        tdm_type in = f >= 0 ? s0->fields[f].type : TDM_TYPE_INT64;
        err = out_field(&o, NULL, sp->as, tdm__rowagg_type(sp->fn, in));
    }
    if (err == TDM_OK)
        err = out_field(&o, NULL, "window_start", TDM_TYPE_TIMESTAMP);
    if (err == TDM_OK)
        err = out_field(&o, NULL, "window_end", TDM_TYPE_TIMESTAMP);
    if (err != TDM_OK) {
        tdm__schema_free(&o);
        return tdm__errf(c->errbuf, c->n, TDM_ERR_NOMEM, "out of memory");
    }
    set_out_schema(c, n, &o);
    return TDM_OK;
}

/* A join's output stream: left.<field> for each left field, right.<field>
 * for each right field, then ts (the columns its sink gets). */
static tdm_err join_out_schema(vctx *c, tdm_node *n, const tdm_node *l,
                               const tdm_node *r)
{
    const tdm__schema *ls = tdm__node_schema(l);
    const tdm__schema *rs = tdm__node_schema(r);
    tdm__schema o = {0, NULL};
    o.fields = tdm__calloc((size_t)(ls->n + rs->n + 1), sizeof *o.fields);
    tdm_err err = o.fields ? TDM_OK : TDM_ERR_NOMEM;
    for (int i = 0; err == TDM_OK && i < ls->n; i++)
        err = out_field(&o, "left.", ls->fields[i].name, ls->fields[i].type);
    for (int i = 0; err == TDM_OK && i < rs->n; i++)
        err = out_field(&o, "right.", rs->fields[i].name, rs->fields[i].type);
    if (err == TDM_OK)
        err = out_field(&o, NULL, "ts", TDM_TYPE_TIMESTAMP);
    if (err != TDM_OK) {
        tdm__schema_free(&o);
        return tdm__errf(c->errbuf, c->n, TDM_ERR_NOMEM, "out of memory");
    }
    set_out_schema(c, n, &o);
    return TDM_OK;
}

/* A join's filter, compiled against its output stream (kept on the node
 * as its expression set, like a source's filter). */
static tdm_err join_filter(vctx *c, tdm_node *n)
{
    const char *text = n->spec.join.filter;
    tdm__src_exprs *x = NULL;
    if (*text) {
        char msg[400] = "";
        x = tdm__calloc(1, sizeof *x);
        if (!x)
            return tdm__errf(c->errbuf, c->n, TDM_ERR_NOMEM, "out of memory");
        tdm_err err = tdm__expr_compile(text, &n->out_schema, &x->filter, msg,
                                        sizeof msg);
        if (err == TDM_OK &&
            tdm__expr_result_type(x->filter) != TDM__EXPR_BOOL &&
            tdm__expr_result_type(x->filter) != TDM__EXPR_NULL) {
            snprintf(msg, sizeof msg, "a condition is needed, got %s",
                     tdm__expr_type_name(tdm__expr_result_type(x->filter)));
            err = TDM_ERR_INVAL;
        }
        if (err == TDM_OK && tdm__expr_uses_watermark(x->filter)) {
            snprintf(msg, sizeof msg,
                     "CURRENT_WATERMARK is for a source's filter and "
                     "compute (a join's filter does not see its input "
                     "watermark yet)");
            err = TDM_ERR_INVAL;
        }
        if (err != TDM_OK) {
            tdm__src_exprs_destroy(x);
            if (err == TDM_ERR_NOMEM)
                return tdm__errf(c->errbuf, c->n, err, "out of memory");
            VFAIL(c, n, "filter: %s", msg);
        }
    }
    if (tdm__run_record_running(c->job->rec)) {
        tdm__src_exprs_destroy(x);
    } else {
        tdm__src_exprs_destroy(n->exprs);
        n->exprs = x;
    }
    return TDM_OK;
}

/* The output of operator @p n: its sink, optional when another operator
 * reads it; a window read by another operator must write every pane
 * once (append). */
static tdm_err check_op_output(vctx *c, const tdm_node *n)
{
    const tdm_node *reader = NULL;
    bool consumed = op_consumed(c->job, n, &reader);
    if (consumed && n->kind == TDM_NODE_WINDOW &&
        n->spec.win.output_mode != TDM__OUTPUT_MODE_APPEND)
        VFAIL(c, n,
              "output_mode: %s \"%s\" reads this window, which "
              "needs output_mode: append (downstream operators take "
              "every pane as a record; updates and retractions "
              "would be counted again)",
              tdm__node_kind_name(reader->kind), reader->name);
    if (consumed && n->kind == TDM_NODE_WINDOW) {
        const tdm__conf_val *ag = n->spec.win.aggregates;
        for (int a = 0; a < ag->n_aggs; a++)
            if (strcmp(ag->aggs[a].as, "window_start") == 0 ||
                strcmp(ag->aggs[a].as, "window_end") == 0)
                VFAIL(c, n,
                      "aggregates: output name \"%s\" is a column "
                      "of the window's output stream (read by %s "
                      "\"%s\"); rename it with \"as\"",
                      ag->aggs[a].as, tdm__node_kind_name(reader->kind),
                      reader->name);
    }
    tdm_err err = check_sink_ref(
        c, n, "sink", tdm__node_spec_sink(n->kind, &n->spec), !consumed);
    if (err == TDM_OK)
        err = check_sink_ref(c, n, "late_output",
                             tdm__node_spec_late(n->kind, &n->spec), false);
    return err;
}

#define MAX_INPUTS 64

/* Event-time windows need watermarks: no input stamped in processing
 * time. */
static tdm_err window_time_inputs(vctx *c, const tdm_node *n,
                                  tdm_node *const *srcs, int ns)
{
    if (n->spec.win.time != TDM__WINDOW_TIME_EVENT)
        return TDM_OK;
    for (int i = 0; i < ns; i++) {
        if (!proc_time_output(srcs[i]))
            continue;
        if (srcs[i]->kind == TDM_NODE_SOURCE)
            VFAIL(c, n,
                  "window.time: event-time windows need watermarks, "
                  "but source \"%s\" uses time: processing (set "
                  "window.time: processing)",
                  srcs[i]->name);
        VFAIL(c, n,
              "window.time: event-time windows need watermarks, but "
              "window \"%s\" is a processing-time window (its results "
              "carry no event time; set window.time: processing)",
              srcs[i]->name);
    }
    return TDM_OK;
}

/* Field @p field (key @p key) in every input, with one type (*type). */
static tdm_err union_field(vctx *c, const tdm_node *n, const char *key,
                           tdm_node *const *srcs, int ns, const char *field,
                           tdm_type *type)
{
    tdm_type t0 = TDM_TYPE_INT64;
    for (int i = 0; i < ns; i++) {
        tdm_type t = TDM_TYPE_INT64;
        tdm_err err = check_field(c, n, key, srcs[i], field, &t);
        if (err != TDM_OK)
            return err;
        if (i == 0)
            t0 = t;
        else if (!types_compatible(t0, t))
            VFAIL(c, n,
                  "%s: field \"%s\" is %s in \"%s\" but %s in "
                  "\"%s\"%s",
                  key, field, type_name(t0), srcs[0]->name, type_name(t),
                  srcs[i]->name,
                  strcmp(key, "key_by") == 0 ? "; a union needs the same types"
                                             : "");
    }
    *type = t0;
    return TDM_OK;
}

/* One aggregate: not named like a key, its field in every input and of
 * a type its function takes. */
static tdm_err window_agg(vctx *c, const tdm_node *n, tdm_node *const *srcs,
                          int ns, const tdm__conf_val *kb,
                          const tdm__agg_spec *sp)
{
    for (int k = 0; k < kb->n_fields; k++)
        if (strcmp(kb->fields[k], sp->as) == 0)
            VFAIL(c, n,
                  "aggregates: output name \"%s\" is also a key_by "
                  "field; rename it with \"as\"",
                  sp->as);
    if (!sp->field)
        return TDM_OK;
    tdm_type t0 = TDM_TYPE_INT64;
    tdm_err err = union_field(c, n, "aggregates", srcs, ns, sp->field, &t0);
    if (err != TDM_OK)
        return err;
    bool numeric = t0 == TDM_TYPE_INT64 || t0 == TDM_TYPE_DOUBLE ||
                   TDM_TYPE_BASE(t0) == TDM_TYPE_DECIMAL;
    if ((sp->fn == TDM__FN_SUM || sp->fn == TDM__FN_AVG) && !numeric)
        VFAIL(c, n,
              "aggregates: %s(%s) needs an int64, double or decimal field, "
              "\"%s\" is %s",
              tdm__conf_aggfn_name(sp->fn), sp->field, sp->field,
              type_name(t0));
    if ((sp->fn == TDM__FN_MIN || sp->fn == TDM__FN_MAX) && !numeric &&
        t0 != TDM_TYPE_TIMESTAMP)
        VFAIL(c, n,
              "aggregates: %s(%s) needs an int64, double, decimal or "
              "timestamp field, \"%s\" is %s",
              tdm__conf_aggfn_name(sp->fn), sp->field, sp->field,
              type_name(t0));
    return TDM_OK;
}

/* Key fields in every input with matching types; aggregates whose
 * fields exist and suit the function. */
static tdm_err window_fields(vctx *c, const tdm_node *n, tdm_node *const *srcs,
                             int ns)
{
    const tdm__conf_val *kb = n->spec.win.key_by;
    for (int k = 0; k < kb->n_fields; k++) {
        tdm_type t;
        tdm_err err = union_field(c, n, "key_by", srcs, ns, kb->fields[k], &t);
        if (err != TDM_OK)
            return err;
    }
    const tdm__conf_val *ag = n->spec.win.aggregates;
    if (ag->n_aggs == 0)
        VFAIL(c, n, "aggregates: at least one is required");
    for (int a = 0; a < ag->n_aggs; a++) {
        tdm_err err = window_agg(c, n, srcs, ns, kb, &ag->aggs[a]);
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* The keys of one window type given to another: window.step outside
 * cumulate windows, window.slide or window.gap on them. */
static tdm_err window_foreign_keys(vctx *c, const tdm_node *n)
{
    bool cumulate = n->spec.win.type == TDM__WINDOW_TYPE_CUMULATE;
    if (!cumulate && node_set(n, "window.step"))
        VFAIL(c, n,
              "window.step: only used with window.type: cumulate (a "
              "sliding window's step is window.slide)");
    if (cumulate && node_set(n, "window.slide"))
        VFAIL(c, n,
              "window.slide: not used with window.type: cumulate (its "
              "windows grow by window.step)");
    if (cumulate && node_set(n, "window.gap"))
        VFAIL(c, n,
              "window.gap: only used with window.type: session, not "
              "cumulate");
    return TDM_OK;
}

/* The sizes each assigner needs, before it is built. */
static tdm_err window_sizes(vctx *c, const tdm_node *n)
{
    const tdm__window_spec *w = &n->spec.win;
    int64_t size = w->size_ms, slide = w->slide_ms, off = w->offset_ms;
    tdm_err err = window_foreign_keys(c, n);
    if (err != TDM_OK)
        return err;
    switch (w->type) {
    case TDM__WINDOW_TYPE_TUMBLING:
        if (size <= 0)
            VFAIL(c, n,
                  "window.size: required for tumbling windows (e.g. "
                  "\"10s\")");
        if (off <= -size || off >= size)
            VFAIL(c, n,
                  "window.offset: must be smaller than window.size in "
                  "magnitude (got %lld ms for a size of %lld ms)",
                  (long long)off, (long long)size);
        break;
    case TDM__WINDOW_TYPE_SLIDING:
        if (size <= 0)
            VFAIL(c, n, "window.size: required for sliding windows");
        if (slide <= 0)
            VFAIL(c, n, "window.slide: required for sliding windows");
        if (off <= -slide || off >= slide)
            VFAIL(c, n,
                  "window.offset: must be smaller than window.slide "
                  "in magnitude (got %lld ms for a slide of %lld ms)",
                  (long long)off, (long long)slide);
        break;
    case TDM__WINDOW_TYPE_CUMULATE:
        if (size <= 0)
            VFAIL(c, n, "window.size: required for cumulate windows");
        if (w->step_ms <= 0)
            VFAIL(c, n,
                  "window.step: required for cumulate windows (e.g. "
                  "\"10m\" with a size of \"1h\")");
        if (size % w->step_ms != 0)
            VFAIL(c, n,
                  "window.size: must be an integral multiple of "
                  "window.step (got %lld ms for a step of %lld ms)",
                  (long long)size, (long long)w->step_ms);
        if (off <= -size || off >= size)
            VFAIL(c, n,
                  "window.offset: must be smaller than window.size in "
                  "magnitude (got %lld ms for a size of %lld ms)",
                  (long long)off, (long long)size);
        break;
    case TDM__WINDOW_TYPE_SESSION:
        if (w->gap_ms <= 0)
            VFAIL(c, n, "window.gap: required for session windows");
        break;
    case TDM__WINDOW_TYPE_GLOBAL:
        if (w->trigger == TDM__TRIGGER_DEFAULT ||
            w->trigger == TDM__TRIGGER_NEVER)
            VFAIL(c, n,
                  "trigger: a global window never fires with the %s "
                  "trigger; choose count, processing_time or "
                  "continuous_event_time",
                  w->trigger == TDM__TRIGGER_DEFAULT ? "default" : "never");
        break;
    }
    return TDM_OK;
}

/* The window parameters: sizes, an assigner that builds, and the keys
 * its trigger needs. */
static tdm_err window_params(vctx *c, const tdm_node *n)
{
    const tdm__window_spec *w = &n->spec.win;
    tdm_err err = window_sizes(c, n);
    if (err != TDM_OK)
        return err;
    tdm_assigner *asg = NULL;
    char msg[256];
    msg[0] = 0;
    err = tdm__window_spec_assigner(w, false, &asg, msg, sizeof msg);
    tdm_assigner_destroy(asg);
    if (err != TDM_OK)
        VFAIL(c, n, "window: %s", msg[0] ? msg : tdm_strerror(err));
    if (w->trigger == TDM__TRIGGER_COUNT && w->trigger_count <= 0)
        VFAIL(c, n, "trigger.count: required for the count trigger");
    if (w->trigger == TDM__TRIGGER_CONTINUOUS_EVENT_TIME &&
        w->trigger_interval_ms <= 0)
        VFAIL(c, n,
              "trigger.interval: required for the "
              "continuous_event_time trigger");
    if (w->trigger == TDM__TRIGGER_CONTINUOUS_EVENT_TIME &&
        w->time == TDM__WINDOW_TIME_PROCESSING)
        VFAIL(c, n,
              "trigger: continuous_event_time needs window.time: "
              "event");
    return TDM_OK;
}

static tdm_err validate_window(vctx *c, tdm_node *n)
{
    tdm_node *srcs[MAX_INPUTS];
    int ns = 0;
    tdm_err err = window_inputs(c, n, srcs, MAX_INPUTS, &ns);
    if (err == TDM_OK)
        err = window_time_inputs(c, n, srcs, ns);
    if (err == TDM_OK)
        err = window_fields(c, n, srcs, ns);
    if (err == TDM_OK)
        err = window_params(c, n);
    if (err != TDM_OK)
        return err;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < i; j++)
            if (srcs[i] == srcs[j])
                VFAIL(c, n, "from: \"%s\" is listed twice", srcs[i]->name);
    err = check_op_output(c, n);
    if (err == TDM_OK)
        err = window_out_schema(c, n, srcs[0]);
    return err;
}

static tdm_err validate_join(vctx *c, tdm_node *n)
{
    tdm_node *side[2];
    static const char *const side_key[2] = {"left", "right"};
    const char *const side_name[2] = {n->spec.join.left, n->spec.join.right};
    for (int s = 0; s < 2; s++) {
        const char *name = side_name[s];
        if (!*name)
            VFAIL(c, n,
                  "%s: required (the name of a source, window or "
                  "join)",
                  side_key[s]);
        tdm_err err = check_input(c, n, side_key[s], name, &side[s]);
        if (err != TDM_OK)
            return err;
        if (proc_time_output(side[s]))
            VFAIL(c, n,
                  "%s: joins need event or ingestion time, but %s "
                  "\"%s\" %s",
                  side_key[s], tdm__node_kind_name(side[s]->kind), name,
                  side[s]->kind == TDM_NODE_SOURCE
                      ? "uses time: processing"
                      : "is a processing-time window");
    }
    if (side[0] == side[1])
        VFAIL(c, n, "right: a self-join of \"%s\" is not supported",
              side[0]->name);
    const tdm__conf_val *lk = n->spec.join.left_key;
    const tdm__conf_val *rk = n->spec.join.right_key;
    if (lk->n_fields == 0)
        VFAIL(c, n,
              "left_key: required (the key field(s) of the left "
              "input)");
    if (rk->n_fields == 0)
        VFAIL(c, n,
              "right_key: required (the key field(s) of the right "
              "input)");
    if (lk->n_fields != rk->n_fields)
        VFAIL(c, n, "right_key: %d field(s), but left_key has %d", rk->n_fields,
              lk->n_fields);
    for (int k = 0; k < lk->n_fields; k++) {
        tdm_type lt = TDM_TYPE_INT64, rt = TDM_TYPE_INT64;
        tdm_err err =
            check_field(c, n, "left_key", side[0], lk->fields[k], &lt);
        if (err == TDM_OK)
            err = check_field(c, n, "right_key", side[1], rk->fields[k], &rt);
        if (err != TDM_OK)
            return err;
        if (!types_compatible(lt, rt))
            VFAIL(c, n, "right_key: \"%s\" is %s but left key \"%s\" is %s",
                  rk->fields[k], type_name(rt), lk->fields[k], type_name(lt));
    }
    const tdm__join_spec *js = &n->spec.join;
    if (js->type == TDM__JOIN_TYPE_INTERVAL) {
        int64_t lo = js->lower_ms, hi = js->upper_ms;
        int64_t elo = js->lower_inclusive ? lo : tdm__time_add_sat(lo, 1);
        int64_t ehi = js->upper_inclusive ? hi : tdm__time_sub_sat(hi, 1);
        if (elo > ehi)
            VFAIL(c, n,
                  "lower/upper: the interval [%lld, %lld] ms (after "
                  "exclusive bounds) is empty; lower must not exceed "
                  "upper",
                  (long long)elo, (long long)ehi);
    } else {
        if (js->size_ms <= 0)
            VFAIL(c, n, "window.size: required for a window join");
        if (js->window_type == TDM__JOIN_WINDOW_TYPE_SLIDING &&
            js->slide_ms <= 0)
            VFAIL(c, n, "window.slide: required for sliding windows");
        tdm_assigner *asg = NULL;
        char msg[256] = "";
        tdm_err err = tdm__join_spec_assigner(js, &asg, msg, sizeof msg);
        tdm_assigner_destroy(asg);
        if (err != TDM_OK)
            VFAIL(c, n, "window: %s", msg[0] ? msg : tdm_strerror(err));
    }
    tdm_err err = check_op_output(c, n);
    if (err == TDM_OK)
        err = join_out_schema(c, n, side[0], side[1]);
    if (err == TDM_OK)
        err = join_filter(c, n);
    return err;
}

/* A Kafka sink's delivery guarantee against the job's checkpointing. */
static tdm_err validate_delivery(vctx *c, tdm_node *n)
{
    bool ckpt = *c->job->spec.checkpoint_dir != '\0';
    tdm__sink_delivery d = n->spec.sink.delivery;
    if (d == TDM__SINK_DELIVERY_EXACTLY_ONCE && !ckpt)
        /* R-V-DL1: transactions commit with checkpoints. */
        VFAIL(c, n,
              "delivery: exactly_once needs checkpointing: set "
              "checkpoint.dir (and checkpoint.interval; in SQL, SET "
              "'tidemark.checkpoint.dir' and "
              "'execution.checkpointing.interval'), or leave delivery "
              "out for at-least-once");
    if (d == TDM__SINK_DELIVERY_AT_LEAST_ONCE && ckpt)
        /* R-V-DL2: never weaker than asked, never silently stronger. */
        VFAIL(c, n,
              "delivery: at_least_once does not apply to a checkpointed "
              "job (checkpoint.dir is set): its kafka sink writes in "
              "transactions committed with each checkpoint, exactly once; "
              "write delivery: exactly_once, or leave delivery out");
    return TDM_OK;
}

static tdm_err validate_sink(vctx *c, tdm_node *n)
{
    tdm__sink_type type = n->spec.sink.type;
    if (n->sink_vt)
        return TDM_OK;
    if (type == TDM__SINK_TYPE_FILE && !*n->spec.sink.path)
        VFAIL(c, n, "path: required for file sinks");
    if (type == TDM__SINK_TYPE_KAFKA) {
        if (!*n->spec.sink.brokers &&
            !tdm__conf_prop(n->spec.sink.kafka, "bootstrap.servers"))
            VFAIL(c, n,
                  "brokers: required for kafka sinks (\"host:port,"
                  "...\", or kafka.bootstrap.servers)");
        if (!*n->spec.sink.topic)
            VFAIL(c, n, "topic: required for kafka sinks");
        if (n->spec.sink.format != TDM__SINK_FORMAT_JSON)
            VFAIL(c, n, "format: kafka sinks write JSON (format: json)");
        if (*n->spec.sink.path)
            VFAIL(c, n, "path: kafka sinks write to topic, not a path");
        tdm_err err = validate_delivery(c, n);
        if (err != TDM_OK)
            return err;
        return validate_kafka_props(c, n, n->spec.sink.kafka, true, false);
    } else {
        if (*n->spec.sink.brokers || *n->spec.sink.topic)
            VFAIL(c, n, "%s: only kafka sinks take it (type is not kafka)",
                  *n->spec.sink.brokers ? "brokers" : "topic");
        if (node_set(n, "brokers.timeout") || node_set(n, "delivery"))
            VFAIL(c, n, "%s: only kafka sinks take it (type is not kafka)",
                  node_set(n, "delivery") ? "delivery" : "brokers.timeout");
        if (n->spec.sink.kafka->n_props > 0)
            VFAIL(c, n,
                  "kafka.%s: only kafka sinks take kafka.* "
                  "properties",
                  n->spec.sink.kafka->props[0]);
    }
    return TDM_OK;
}

static const char *const mode_names[] = {"append", "upsert", "retract"};

/* ---- A sink's select (connect/select.c) ---- */

/* The columns producer @p p writes to its sink, into @p o (names
 * allocated; types unused): a window's key_by fields and aggregate
 * names, a join's output stream (left.*, right.*, ts), a source's schema
 * fields and ts (pass-through rows); then the window and pane members of
 * rows that have a window (not the global window's, not an interval
 * join's). */
static tdm_err producer_columns(const tdm_node *p, tdm__schema *o)
{
    static const char *const members[] = {"window_start", "window_end",
                                          "window_time",  "timing",
                                          "pane",         "update"};
    const tdm__window_spec *w = &p->spec.win;
    const tdm__schema *sc = p->kind == TDM_NODE_JOIN     ? &p->out_schema
                            : p->kind == TDM_NODE_SOURCE ? tdm__node_schema(p)
                                                         : NULL;
    int cap = 7 + (sc ? sc->n : 0);
    if (p->kind == TDM_NODE_WINDOW)
        cap += w->key_by->n_fields + w->aggregates->n_aggs;
    o->n = 0;
    o->fields = tdm__calloc((size_t)cap, sizeof *o->fields);
    tdm_err err = o->fields ? TDM_OK : TDM_ERR_NOMEM;
    bool windowed =
        p->kind == TDM_NODE_JOIN && p->spec.join.type == TDM__JOIN_TYPE_WINDOW;
    if (p->kind == TDM_NODE_WINDOW) {
        for (int k = 0; err == TDM_OK && k < w->key_by->n_fields; k++)
            err = out_field(o, NULL, w->key_by->fields[k], TDM_TYPE_INT64);
        for (int a = 0; err == TDM_OK && a < w->aggregates->n_aggs; a++)
            err = out_field(o, NULL, w->aggregates->aggs[a].as, TDM_TYPE_INT64);
        windowed = w->type != TDM__WINDOW_TYPE_GLOBAL;
    }
    for (int i = 0; err == TDM_OK && sc && i < sc->n; i++)
        err = out_field(o, NULL, sc->fields[i].name, TDM_TYPE_INT64);
    if (err == TDM_OK && p->kind == TDM_NODE_SOURCE &&
        tdm__schema_find(o, "ts") < 0)
        err = out_field(o, NULL, "ts", TDM_TYPE_TIMESTAMP);
    for (int m = 0; err == TDM_OK && windowed && m < 6; m++)
        err = out_field(o, NULL, members[m], TDM_TYPE_INT64);
    return err;
}

/* Every name sink @p sink selects is a column of producer @p p. */
static tdm_err select_producer(vctx *c, const tdm_node *sink,
                               const tdm__sel *sel, const tdm_node *p)
{
    tdm__schema cols = {0, NULL};
    if (producer_columns(p, &cols) != TDM_OK) {
        tdm__schema_free(&cols);
        return tdm__errf(c->errbuf, c->n, TDM_ERR_NOMEM, "out of memory");
    }
    int miss = -1;
    for (int i = 0; miss < 0 && i < tdm__sel_count(sel); i++)
        if (tdm__schema_find(&cols, tdm__sel_name(sel, i)) < 0)
            miss = i;
    if (miss < 0) {
        tdm__schema_free(&cols);
        return TDM_OK;
    }
    const char *name = tdm__sel_name(sel, miss);
    const char *near = tdm__expr_closest(&cols, name);
    char hint[400];
    size_t o =
        near ? (size_t)snprintf(hint, sizeof hint, "did you mean \"%s\"?", near)
             : (size_t)snprintf(hint, sizeof hint, "its columns:");
    for (int i = 0; !near && i < cols.n && o < sizeof hint; i++)
        o += (size_t)snprintf(hint + o, sizeof hint - o, "%s %s", i ? "," : "",
                              cols.fields[i].name);
    tdm__schema_free(&cols);
    VFAIL(c, sink, "select: \"%s\" is not a column of %s \"%s\" (%s)", name,
          tdm__node_kind_name(p->kind), p->name, hint);
}

/* Whether node @p p writes its results or records to sink @p name. */
static bool writes_to(const tdm_node *p, const char *name)
{
    if (p->kind == TDM_NODE_SOURCE)
        return strcmp(p->spec.src.sink, name) == 0;
    if (p->kind == TDM_NODE_SINK)
        return false;
    return strcmp(tdm__node_spec_sink(p->kind, &p->spec), name) == 0;
}

/* Where select does not apply: a connector of the C API, the dead letter
 * sink, a late output (their rows are not results or pass-through
 * rows). */
static tdm_err select_applies(vctx *c, const tdm_node *sink)
{
    if (sink->sink_vt)
        VFAIL(c, sink,
              "select: this sink's connector was set through the C API, "
              "which does not apply select");
    if (strcmp(c->job->spec.dead_letter, sink->name) == 0)
        VFAIL(c, sink,
              "select: this sink is the job's dead_letter; select does not "
              "apply to dead letters (location, reason, raw)");
    for (int i = 0; i < c->job->n_nodes; i++) {
        const tdm_node *p = c->job->nodes[i];
        if ((p->kind == TDM_NODE_WINDOW || p->kind == TDM_NODE_JOIN) &&
            strcmp(tdm__node_spec_late(p->kind, &p->spec), sink->name) == 0)
            VFAIL(c, sink,
                  "select: %s \"%s\" writes its late records here "
                  "(late_output); select applies to results and "
                  "pass-through rows, not to late records",
                  tdm__node_kind_name(p->kind), p->name);
    }
    return TDM_OK;
}

/* A sink's select: where it applies, well formed, and naming columns
 * every producer of the sink has. */
static tdm_err validate_select(vctx *c, const tdm_node *sink)
{
    const tdm__conf_val *sv = sink->spec.sink.select_list;
    if (sv->n_fields == 0)
        return TDM_OK;
    tdm_err err = select_applies(c, sink);
    if (err != TDM_OK)
        return err;
    tdm__sel *sel = NULL;
    char msg[400] = "";
    err = tdm__sel_new((const char *const *)sv->fields, sv->n_fields, &sel, msg,
                       sizeof msg);
    if (err == TDM_ERR_NOMEM)
        return tdm__errf(c->errbuf, c->n, err, "out of memory");
    if (err != TDM_OK)
        VFAIL(c, sink, "%s", msg);
    for (int i = 0; err == TDM_OK && i < c->job->n_nodes; i++)
        if (writes_to(c->job->nodes[i], sink->name))
            err = select_producer(c, sink, sel, c->job->nodes[i]);
    tdm__sel_free(sel);
    return err;
}

/* True when some window or join reads source @p s, or it writes to a
 * sink itself. */
static bool source_used(const tdm_job *job, const tdm_node *s)
{
    if (*s->spec.src.sink)
        return true;
    for (int i = 0; i < job->n_nodes; i++) {
        const tdm_node *n = job->nodes[i];
        if (n->kind == TDM_NODE_WINDOW) {
            const tdm__conf_val *f = n->spec.win.from;
            for (int k = 0; k < f->n_fields; k++)
                if (strcmp(f->fields[k], s->name) == 0)
                    return true;
        } else if (n->kind == TDM_NODE_JOIN) {
            if (strcmp(n->spec.join.left, s->name) == 0 ||
                strcmp(n->spec.join.right, s->name) == 0)
                return true;
        }
    }
    return false;
}

static tdm_err validate_graph(vctx *cp);

static int node_index(const tdm_job *job, const tdm_node *n)
{
    for (int i = 0; i < job->n_nodes; i++)
        if (job->nodes[i] == n)
            return i;
    return -1;
}

/* Validates operator @p n after the operators it reads (their output
 * schemas are what its key and field checks look at), whatever order
 * the job declares them in; an operator met again while its own inputs
 * are being validated closes a cycle, reported with its path. */
static tdm_err validate_op(vctx *c, tdm_node *n)
{
    int me = node_index(c->job, n);
    if (c->state[me] == 2)
        return TDM_OK;
    c->state[me] = 1;
    c->stack[c->depth++] = n;
    const char *names[MAX_INPUTS];
    int k = op_input_names(n, names, MAX_INPUTS);
    for (int j = 0; j < k; j++) {
        tdm_node *in = tdm_job_node(c->job, names[j]);
        if (!in || in == n ||
            (in->kind != TDM_NODE_WINDOW && in->kind != TDM_NODE_JOIN))
            continue; /* reported by the node's own checks */
        int ii = node_index(c->job, in);
        if (c->state[ii] == 1) {
            /* The stack from in to n: each reads the next, n reads in. */
            char path[512];
            size_t used = 0;
            path[0] = 0;
            int from = 0;
            while (c->stack[from] != in)
                from++;
            for (int d = from; d < c->depth && used < sizeof path; d++)
                used += (size_t)snprintf(
                    path + used, sizeof path - used, "%s%s reads %s",
                    d > from ? ", " : "", c->stack[d]->name,
                    d + 1 < c->depth ? c->stack[d + 1]->name : in->name);
            VFAIL(c, n,
                  "%s: \"%s\" closes a cycle (%s); an operator "
                  "cannot read its own output, even through others",
                  n->kind == TDM_NODE_WINDOW ? "from"
                  : j == 0                   ? "left"
                                             : "right",
                  in->name, path);
        }
        tdm_err err = validate_op(c, in);
        if (err != TDM_OK)
            return err;
    }
    tdm_err err = n->kind == TDM_NODE_WINDOW ? validate_window(c, n)
                                             : validate_join(c, n);
    c->depth--;
    c->state[me] = 2;
    return err;
}

/* Checks the whole graph; the first problem found is reported. */
tdm_err tdm_job_validate(tdm_job *job, char *errbuf, size_t errbuf_size)
{
    if (!job)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "job must not be NULL");
    vctx c = {job, errbuf, errbuf_size, NULL, NULL, 0};
    c.state = tdm__calloc((size_t)job->n_nodes + 1, 1);
    c.stack = tdm__calloc((size_t)job->n_nodes + 1, sizeof *c.stack);
    if (!c.state || !c.stack) {
        tdm__free(c.state);
        tdm__free(c.stack);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
    }
    /* The specs are already in step with the keys: every set refills its
     * node's or the job's (job.c).  Validation does not refill them: a
     * snapshot of a job not yet running (tdm_job_metrics from another
     * thread while tdm_job_run validates) reads them, and a refill
     * zeroes them first. */
    tdm_err err = validate_graph(&c);
    tdm__free(c.state);
    tdm__free(c.stack);
    return err;
}

/* With checkpoint.dir set: every source must be replayable (stdin, a
 * file source with path "-", and tcp are not: what was read after the
 * last checkpoint would be lost on a crash), Kafka sources are not wired
 * yet, and connectors set by the test hooks must have the version-3
 * members (source snapshot/restore, sink pre_commit).  Every window and
 * join can be snapshotted (count() natively, the other aggregates
 * through the row aggregate's codec, rowagg.c), so what is refused here
 * is all that could fail at snapshot time. */
static tdm_err validate_checkpointing(vctx *c)
{
    tdm_job *job = c->job;
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_node *n = job->nodes[i];
        if (n->kind == TDM_NODE_SOURCE) {
            tdm__source_type type = n->spec.src.type;
            if (n->src_vt) {
                if (n->src_vt->version < 3 || !n->src_vt->snapshot ||
                    !n->src_vt->restore)
                    VFAIL(c, n,
                          "checkpointing (checkpoint.dir): this "
                          "source connector cannot save or restore "
                          "its position");
                continue;
            }
            if (type == TDM__SOURCE_TYPE_FILE &&
                strcmp(n->spec.src.path, "-") == 0)
                VFAIL(c, n,
                      "path: - (standard input) cannot be replayed: "
                      "checkpointing (checkpoint.dir) needs a "
                      "replayable source (file, generator)");
            if (type == TDM__SOURCE_TYPE_STDIN || type == TDM__SOURCE_TYPE_TCP)
                VFAIL(c, n,
                      "type: %s cannot be replayed: checkpointing "
                      "(checkpoint.dir) needs a replayable source "
                      "(file, generator)",
                      type == TDM__SOURCE_TYPE_STDIN ? "stdin" : "tcp");
            /* Kafka: partitions are assigned by subtask from the listed
             * topics (docs/checkpoints.md, "Kafka sources"); the
             * repartition path has no checkpoint position (refused when
             * the connector opens: "auto" is decided by the plan). */
            if (type == TDM__SOURCE_TYPE_KAFKA && *n->spec.src.topic_pattern)
                VFAIL(c, n,
                      "topic_pattern cannot be used with "
                      "checkpointing (checkpoint.dir): list the "
                      "topics (partitions are assigned by subtask)");
            if (type == TDM__SOURCE_TYPE_KAFKA &&
                n->spec.src.repartition == TDM__REPARTITION_ALWAYS &&
                n->job->spec.scale_out != TDM__SCALE_OUT_TASKS)
                VFAIL(c, n,
                      "repartition: always with checkpointing "
                      "(checkpoint.dir) needs scale_out: tasks (each task "
                      "writes and reads its partition of the "
                      "repartition topic, docs/scale-out.md)");
        } else if (n->kind == TDM_NODE_SINK && n->sink_vt &&
                   (n->sink_vt->version < 3 || !n->sink_vt->pre_commit)) {
            VFAIL(c, n,
                  "checkpointing (checkpoint.dir): this sink "
                  "connector cannot take part in checkpoints "
                  "(no pre_commit)");
        }
    }
    return TDM_OK;
}

/* tdm_job_validate's checks, node by node in the job's order (an
 * operator's inputs first). */
static tdm_err validate_graph(vctx *cp)
{
    vctx c = *cp;
    tdm_job *job = c.job;
    int n_src = 0, n_ops = 0;
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_node *n = job->nodes[i];
        tdm_err err = TDM_OK;
        switch (n->kind) {
        case TDM_NODE_SOURCE:
            n_src++;
            err = validate_source(&c, n);
            break;
        case TDM_NODE_WINDOW:
        case TDM_NODE_JOIN:
            n_ops++;
            err = validate_op(&c, n);
            break;
        case TDM_NODE_SINK:
            err = validate_sink(&c, n);
            break;
        }
        if (err != TDM_OK)
            return err;
    }
    if (n_src == 0)
        return vfail(&c, NULL, "no sources: a job needs at least one");
    int n_pass = 0;
    for (int i = 0; i < job->n_nodes; i++)
        n_pass += job->nodes[i]->kind == TDM_NODE_SOURCE &&
                  *job->nodes[i]->spec.src.sink;
    if (n_ops == 0 && n_pass == 0)
        return vfail(&c, NULL,
                     "no windows, joins or source sinks: nothing "
                     "reads the sources");
    /* A sink writes one output mode (its file format depends on it). */
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_node *a = job->nodes[i];
        if (a->kind != TDM_NODE_WINDOW && a->kind != TDM_NODE_JOIN)
            continue;
        for (int k = 0; k < i; k++) {
            tdm_node *b = job->nodes[k];
            if ((b->kind != TDM_NODE_WINDOW && b->kind != TDM_NODE_JOIN) ||
                !*tdm__node_spec_sink(a->kind, &a->spec) ||
                strcmp(tdm__node_spec_sink(a->kind, &a->spec),
                       tdm__node_spec_sink(b->kind, &b->spec)))
                continue;
            tdm__output_mode ma = a->kind == TDM_NODE_WINDOW
                                      ? a->spec.win.output_mode
                                      : TDM__OUTPUT_MODE_APPEND;
            tdm__output_mode mb = b->kind == TDM_NODE_WINDOW
                                      ? b->spec.win.output_mode
                                      : TDM__OUTPUT_MODE_APPEND;
            if (ma != mb)
                return vfail(&c, a,
                             "sink: \"%s\" also takes %s results "
                             "from %s \"%s\"; a sink takes one "
                             "output mode (give this one its own "
                             "sink)",
                             tdm__node_spec_sink(a->kind, &a->spec),
                             mode_names[mb], tdm__node_kind_name(b->kind),
                             b->name);
        }
    }
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_err err = job->nodes[i]->kind == TDM_NODE_SINK
                          ? validate_select(&c, job->nodes[i])
                          : TDM_OK;
        if (err != TDM_OK)
            return err;
    }
    for (int i = 0; i < job->n_nodes; i++) {
        tdm_node *n = job->nodes[i];
        if (n->kind == TDM_NODE_SOURCE && !source_used(job, n))
            return vfail(&c, n,
                         "not read by any window or join (add it to "
                         "a window's \"from\" or a join, or give it "
                         "a \"sink\")");
    }
    if (*job->spec.checkpoint_dir) {
        tdm_err err = validate_checkpointing(&c);
        if (err != TDM_OK)
            return err;
    }
    char why[300];
    if (tdm__rt_restart_refusal(job, why, sizeof why))
        return vfail(&c, NULL, "%s", why);
    if (tdm__task_refusal(job, why, sizeof why))
        return vfail(&c, NULL, "%s", why);
    const char *dl = job->spec.dead_letter;
    if (*dl) {
        tdm_node *t = tdm_job_node(job, dl);
        if (!t || t->kind != TDM_NODE_SINK)
            return vfail(&c, NULL,
                         "dead_letter: %s \"%s\" (expected the "
                         "name of a sink)",
                         t ? "not a sink:" : "unknown node", dl);
    }
    return TDM_OK;
}
