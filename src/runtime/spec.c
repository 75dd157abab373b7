/* SPDX-License-Identifier: MIT */
/* spec.c - filling the typed node specs from the configuration, and the
 * assigner and trigger a window's spec describes.
 *
 * The field list below is the one place that maps key names to typed
 * fields: one entry per row of conf_table.def, in the table's order, so
 * filling a spec is one loop over the rows of its scope, and every ENUM
 * value is stored as the conf_enum.h constant it is (the choice index
 * tdm__conf_parse produced).  The list's length is the table's (a
 * static assertion), each entry's C type fits its row's type (_Generic,
 * at compile time), and test_spec.c checks key, scope and type row by
 * row, so a key added to the table without its field does not build or
 * fails CTest.  job.c refills a spec whenever a key of its node or job is
 * set, and tdm_job_validate refills every node's before checking any, so
 * a node's checks may read the specs of the nodes it refers to.  The builders
 * replace the copies of "build an assigner from a window's config" the
 * validation and the operator set-up (task_op.c) each had.
 */
#include "runtime/spec.h"

#include <string.h>

#include "connect/connect.h"
#include "runtime/rt.h"

/* ---- The connectors' constants are the choices counted from 1 ---- */

#define SAME(choice, conn) _Static_assert((choice) + 1 == (conn), #conn)
SAME(TDM__SOURCE_TYPE_FILE, TDM__SRC_FILE);
SAME(TDM__SOURCE_TYPE_STDIN, TDM__SRC_STDIN);
SAME(TDM__SOURCE_TYPE_TCP, TDM__SRC_TCP);
SAME(TDM__SOURCE_TYPE_GENERATOR, TDM__SRC_GENERATOR);
SAME(TDM__SOURCE_TYPE_KAFKA, TDM__SRC_KAFKA);
SAME(TDM__SOURCE_FORMAT_JSON, TDM__FMT_JSON);
SAME(TDM__SOURCE_FORMAT_CSV, TDM__FMT_CSV);
SAME(TDM__SINK_FORMAT_JSON, TDM__FMT_JSON);
SAME(TDM__SINK_FORMAT_CSV, TDM__FMT_CSV);
SAME(TDM__SOURCE_TIME_EVENT, TDM__TIME_EVENT);
SAME(TDM__SOURCE_TIME_INGESTION, TDM__TIME_INGESTION);
SAME(TDM__SOURCE_TIME_PROCESSING, TDM__TIME_PROCESSING);
SAME(TDM__TIMESTAMP_UNIT_MS, TDM__UNIT_MS);
SAME(TDM__TIMESTAMP_UNIT_S, TDM__UNIT_S);
SAME(TDM__TIMESTAMP_UNIT_US, TDM__UNIT_US);
SAME(TDM__TIMESTAMP_UNIT_NS, TDM__UNIT_NS);
SAME(TDM__TIMESTAMP_UNIT_ISO8601, TDM__UNIT_ISO8601);
SAME(TDM__GENERATOR_KIND_CLICKS, TDM__GEN_CLICKS);
SAME(TDM__GENERATOR_KIND_SENSORS, TDM__GEN_SENSORS);
SAME(TDM__GENERATOR_KIND_NEXMARK, TDM__GEN_NEXMARK);
SAME(TDM__SOURCE_START_COMMITTED, TDM__KSTART_COMMITTED);
SAME(TDM__SOURCE_START_EARLIEST, TDM__KSTART_EARLIEST);
SAME(TDM__SOURCE_START_LATEST, TDM__KSTART_LATEST);
SAME(TDM__SOURCE_START_TIMESTAMP, TDM__KSTART_TIMESTAMP);
SAME(TDM__SINK_TYPE_STDOUT, TDM__SINK_STDOUT);
SAME(TDM__SINK_TYPE_FILE, TDM__SINK_FILE);
SAME(TDM__SINK_TYPE_DISCARD, TDM__SINK_DISCARD);
SAME(TDM__SINK_TYPE_KAFKA, TDM__SINK_KAFKA);
#undef SAME

/* ---- The fields: one per row of conf_table.def, in its order ---- */

/* The size of a field of type @p ty, checked at compile time against the
 * C type the row's type stores as (ENUM: test_spec.c checks the size). */
#define SZ_STRING(m) _Generic((m), const char * : sizeof(m))
#define SZ_INT(m) _Generic((m), int64_t : sizeof(m))
#define SZ_DURATION(m) SZ_INT(m)
#define SZ_DOUBLE(m) _Generic((m), double : sizeof(m))
#define SZ_BOOL(m) _Generic((m), bool : sizeof(m))
#define SZ_ENUM(m) sizeof(m)
#define SZ_PARSED(m) _Generic((m), const tdm__conf_val * : sizeof(m))
#define SZ_SCHEMA(m) SZ_PARSED(m)
#define SZ_AGGREGATES(m) SZ_PARSED(m)
#define SZ_FIELDS(m) SZ_PARSED(m)
#define SZ_PROPS(m) SZ_PARSED(m)

#define FIELD(sc, base, k, ty, m)                                              \
    {                                                                          \
        TDM__SCOPE_##sc, k, TDM__CT_##ty, offsetof(base, m),                   \
            SZ_##ty(((base *)0)->m)                                            \
    }
#define J(k, ty, m) FIELD(JOB, tdm__job_spec, k, ty, m)
#define S(k, ty, m) FIELD(SOURCE, tdm__node_spec, k, ty, src.m)
#define W(k, ty, m) FIELD(WINDOW, tdm__node_spec, k, ty, win.m)
#define N(k, ty, m) FIELD(JOIN, tdm__node_spec, k, ty, join.m)
#define K(k, ty, m) FIELD(SINK, tdm__node_spec, k, ty, sink.m)
static const tdm__spec_field fields[] = {
    J("name", STRING, name),
    J("parallelism", INT, parallelism),
    J("key_groups", INT, key_groups),
    J("batch.size", INT, batch_size),
    J("queue.capacity", INT, queue_capacity),
    J("timestamp_guard", DURATION, timestamp_guard_ms),
    J("timestamp_guard.dead_letter", BOOL, timestamp_guard_dead_letter),
    J("dead_letter", STRING, dead_letter),
    J("status.interval", DURATION, status_interval_ms),
    J("config.watch", STRING, config_watch),
    J("config.watch.interval", DURATION, config_watch_interval_ms),
    J("log.level", ENUM, log_level),
    J("http.header_timeout", DURATION, http_header_timeout_ms),
    J("http.prometheus.max_partitions", INT, http_prom_max_partitions),
    J("http.allowed_hosts", STRING, http_allowed_hosts),
    J("commit.interval", DURATION, commit_interval_ms),
    J("on_cancel", ENUM, on_cancel),
    J("checkpoint.dir", STRING, checkpoint_dir),
    J("checkpoint.interval", DURATION, checkpoint_interval_ms),
    J("checkpoint.retain", INT, checkpoint_retain),
    J("checkpoint.restore", ENUM, checkpoint_restore),
    J("checkpoint.tolerable_failed", INT, checkpoint_tolerable_failed),
    J("checkpoint.store", ENUM, checkpoint_store),
    J("checkpoint.changelog.topic", STRING, checkpoint_changelog_topic),
    J("checkpoint.changelog.standby", ENUM, checkpoint_changelog_standby),
    J("scale_out", ENUM, scale_out),
    J("task.id", INT, task_id),
    J("task.epoch", INT, task_epoch),
    J("restart.strategy", ENUM, restart_strategy),
    J("restart.attempts", INT, restart_attempts),
    J("restart.delay", DURATION, restart_delay_ms),
    J("restart.max_delay", DURATION, restart_max_delay_ms),
    J("restart.multiplier", DOUBLE, restart_multiplier),
    S("type", ENUM, type),
    S("path", STRING, path),
    S("format", ENUM, format),
    S("csv.header", BOOL, csv_header),
    S("csv.delimiter", STRING, csv_delimiter),
    S("schema", SCHEMA, schema),
    S("partition.field", STRING, partition_field),
    S("time", ENUM, time),
    S("timestamp.field", STRING, timestamp_field),
    S("timestamp.unit", ENUM, ts_unit),
    S("watermark.strategy", ENUM, wm_strategy),
    S("watermark.max_out_of_orderness", DURATION, wm_max_out_of_orderness_ms),
    S("watermark.delay", DURATION, wm_delay_ms),
    S("watermark.marker_field", STRING, wm_marker_field),
    S("watermark.idle_timeout", DURATION, wm_idle_timeout_ms),
    S("watermark.interval", DURATION, wm_interval_ms),
    S("watermark.emit", ENUM, wm_emit),
    S("watermark.fallback.interval", DURATION, wm_fallback_interval_ms),
    S("watermark.fallback.lag", DURATION, wm_fallback_lag_ms),
    S("tcp.address", STRING, tcp_address),
    S("tcp.on_close", ENUM, tcp_on_close),
    S("tcp.connect_timeout", DURATION, tcp_connect_timeout_ms),
    S("tcp.reconnect.timeout", DURATION, tcp_reconnect_timeout_ms),
    S("tcp.reconnect.backoff", DURATION, tcp_reconnect_backoff_ms),
    S("tcp.reconnect.max_backoff", DURATION, tcp_reconnect_max_backoff_ms),
    S("sink", STRING, sink),
    S("generator.kind", ENUM, gen_kind),
    S("generator.records", INT, gen_records),
    S("generator.rate", INT, gen_rate),
    S("generator.keys", INT, gen_keys),
    S("generator.skew", DOUBLE, gen_skew),
    S("generator.partitions", INT, gen_partitions),
    S("generator.max_delay", DURATION, gen_max_delay_ms),
    S("generator.late_fraction", DOUBLE, gen_late_fraction),
    S("generator.late_delay", DURATION, gen_late_delay_ms),
    S("generator.idle_partition", INT, gen_idle_partition),
    S("generator.idle_from", DURATION, gen_idle_from_ms),
    S("generator.idle_for", DURATION, gen_idle_for_ms),
    S("generator.seed", INT, gen_seed),
    S("generator.nexmark.kinds", STRING, gen_nexmark_kinds),
    S("generator.nexmark.out_of_order_group", INT,
      gen_nexmark_out_of_order_group),
    S("generator.nexmark.flink_numbering", BOOL, gen_nexmark_flink_numbering),
    S("watermark.alignment.group", STRING, wm_alignment_group),
    S("watermark.alignment.max_drift", DURATION, wm_alignment_max_drift_ms),
    S("watermark.alignment.update_interval", DURATION,
      wm_alignment_update_interval_ms),
    S("brokers", STRING, brokers),
    S("topics", STRING, topics),
    S("topic_pattern", STRING, topic_pattern),
    S("group", STRING, group),
    S("start", ENUM, start),
    S("start.timestamp", STRING, start_timestamp),
    S("stop", ENUM, stop),
    S("timestamp.source", ENUM, ts_source),
    S("key.field", STRING, key_field),
    S("metadata.*", PROPS, metadata),
    S("repartition", ENUM, repartition),
    S("repartition.writers", INT, repartition_writers),
    S("repartition.writer_timeout", DURATION, repartition_writer_timeout_ms),
    S("brokers.timeout", DURATION, brokers_timeout_ms),
    S("kafka.*", PROPS, kafka),
    S("filter", STRING, filter),
    S("compute.*", PROPS, compute),
    W("from", FIELDS, from),
    W("key_by", FIELDS, key_by),
    W("window.type", ENUM, type),
    W("window.size", DURATION, size_ms),
    W("window.slide", DURATION, slide_ms),
    W("window.step", DURATION, step_ms),
    W("window.offset", DURATION, offset_ms),
    W("window.gap", DURATION, gap_ms),
    W("window.time", ENUM, time),
    W("trigger", ENUM, trigger),
    W("trigger.count", INT, trigger_count),
    W("trigger.interval", DURATION, trigger_interval_ms),
    W("trigger.purging", BOOL, trigger_purging),
    W("allowed_lateness", DURATION, allowed_lateness_ms),
    W("aggregates", AGGREGATES, aggregates),
    W("output_mode", ENUM, output_mode),
    W("sink", STRING, sink),
    W("late_output", STRING, late_output),
    W("local_aggregation", ENUM, local_aggregation),
    N("type", ENUM, type),
    N("left", STRING, left),
    N("right", STRING, right),
    N("left_key", FIELDS, left_key),
    N("right_key", FIELDS, right_key),
    N("lower", DURATION, lower_ms),
    N("upper", DURATION, upper_ms),
    N("lower_inclusive", BOOL, lower_inclusive),
    N("upper_inclusive", BOOL, upper_inclusive),
    N("window.type", ENUM, window_type),
    N("window.size", DURATION, size_ms),
    N("window.slide", DURATION, slide_ms),
    N("filter", STRING, filter),
    N("sink", STRING, sink),
    N("late_output", STRING, late_output),
    K("type", ENUM, type),
    K("path", STRING, path),
    K("format", ENUM, format),
    K("select", FIELDS, select_list),
    K("brokers", STRING, brokers),
    K("topic", STRING, topic),
    K("brokers.timeout", DURATION, brokers_timeout_ms),
    K("delivery", ENUM, delivery),
    K("kafka.*", PROPS, kafka),
};
#undef J
#undef S
#undef W
#undef N
#undef K
#undef FIELD

/* As many fields as the table has rows (each row counts 1). */
#define X(sc, k, ty, df, mn, mx, un, ch, de) +1
enum {
    N_TABLE_ROWS = 0
#include "runtime/conf_table.def"
};
#undef X
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))
_Static_assert(N_FIELDS == N_TABLE_ROWS, "one spec field per table row");

/* The field list (see spec.h). */
const tdm__spec_field *tdm__spec_fields(int *n)
{
    if (n)
        *n = N_FIELDS;
    return fields;
}

/* ---- Filling ---- */

/* Stores one parsed value @p v into its field at @p at. */
static void store(const tdm__spec_field *f, const tdm__conf_val *v, char *at)
{
    const char *text = v->text ? v->text : "";
    bool b = v->i != 0;
    int e = (int)v->i;
    switch ((tdm__ctype)f->type) {
    case TDM__CT_STRING:
        memcpy(at, &text, sizeof text);
        break;
    case TDM__CT_INT:
    case TDM__CT_DURATION:
        memcpy(at, &v->i, sizeof v->i);
        break;
    case TDM__CT_DOUBLE:
        memcpy(at, &v->d, sizeof v->d);
        break;
    case TDM__CT_BOOL:
        memcpy(at, &b, sizeof b);
        break;
    case TDM__CT_ENUM:
        memcpy(at, &e, sizeof e); /* the enums are int-sized */
        break;
    default: /* SCHEMA, AGGREGATES, FIELDS, PROPS: the parsed value */
        memcpy(at, &v, sizeof v);
        break;
    }
}

/* Fills the fields of @p scope (see spec.h). */
void tdm__spec_fill_scope(int scope, const tdm__conf_val *vals, void *base)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (fields[i].scope == scope)
            store(&fields[i], &vals[i], (char *)base + fields[i].off);
}

/* Fills @p n's spec from its keys (see rt.h). */
void tdm__node_spec_fill(tdm_node *n)
{
    memset(&n->spec, 0, sizeof n->spec);
    tdm__spec_fill_scope((int)n->scope, n->vals, &n->spec);
}

/* Fills @p job's spec from its keys (see rt.h). */
void tdm__job_spec_fill(tdm_job *job)
{
    memset(&job->spec, 0, sizeof job->spec);
    tdm__spec_fill_scope(TDM__SCOPE_JOB, job->vals, &job->spec);
}

/* ---- Builders ---- */

/* The assigner of a window's spec; see spec.h. */
tdm_err tdm__window_spec_assigner(const tdm__window_spec *w, bool with_time,
                                  tdm_assigner **out, char *msg, size_t n)
{
    tdm_err err;
    switch (w->type) {
    case TDM__WINDOW_TYPE_TUMBLING:
        err = tdm_assigner_new_tumbling(w->size_ms, w->offset_ms, out, msg, n);
        break;
    case TDM__WINDOW_TYPE_SLIDING:
        err = tdm_assigner_new_sliding(w->size_ms, w->slide_ms, w->offset_ms,
                                       out, msg, n);
        break;
    case TDM__WINDOW_TYPE_CUMULATE:
        err = tdm_assigner_new_cumulate(w->size_ms, w->step_ms, w->offset_ms,
                                        out, msg, n);
        break;
    case TDM__WINDOW_TYPE_SESSION:
        err = tdm_assigner_new_session(w->gap_ms, out, msg, n);
        break;
    default:
        err = tdm_assigner_new_global(out);
        break;
    }
    if (err == TDM_OK && with_time && w->time == TDM__WINDOW_TIME_PROCESSING)
        err = tdm_assigner_set_processing_time(*out);
    return err;
}

/* The built-in trigger of kind @p kind (not DEFAULT) into *out. */
static tdm_err builtin_trigger(const tdm__window_spec *w,
                               tdm__trigger_kind kind, tdm_trigger **out,
                               char *msg, size_t n)
{
    switch (kind) {
    case TDM__TRIGGER_EVENT_TIME:
        return tdm_trigger_new_event_time(out);
    case TDM__TRIGGER_PROCESSING_TIME:
        return tdm_trigger_new_processing_time(out);
    case TDM__TRIGGER_COUNT:
        return tdm_trigger_new_count(w->trigger_count, out, msg, n);
    case TDM__TRIGGER_CONTINUOUS_EVENT_TIME:
        return tdm_trigger_new_continuous_event_time(w->trigger_interval_ms,
                                                     out, msg, n);
    case TDM__TRIGGER_NEVER:
        return tdm_trigger_new_never(out);
    case TDM__TRIGGER_DEFAULT:
        break;
    }
    return TDM_OK;
}

/* The trigger of a window's spec; see spec.h. */
tdm_err tdm__window_spec_trigger(const tdm__window_spec *w, tdm_trigger **out,
                                 char *msg, size_t n)
{
    tdm__trigger_kind kind = w->trigger;
    *out = NULL;
    if (kind == TDM__TRIGGER_DEFAULT && w->trigger_purging)
        kind = tdm__window_spec_proc_time(w) ? TDM__TRIGGER_PROCESSING_TIME
                                             : TDM__TRIGGER_EVENT_TIME;
    if (kind == TDM__TRIGGER_DEFAULT)
        return TDM_OK; /* NULL: the assigner's default */
    tdm_err err = builtin_trigger(w, kind, out, msg, n);
    if (err == TDM_OK && w->trigger_purging) {
        tdm_trigger *p;
        err = tdm_trigger_new_purging(*out, &p);
        *out = err == TDM_OK ? p : NULL;
    }
    return err;
}

/* The assigner of a window join's spec; see spec.h. */
tdm_err tdm__join_spec_assigner(const tdm__join_spec *j, tdm_assigner **out,
                                char *msg, size_t n)
{
    if (j->window_type == TDM__JOIN_WINDOW_TYPE_SLIDING)
        return tdm_assigner_new_sliding(j->size_ms, j->slide_ms, 0, out, msg,
                                        n);
    return tdm_assigner_new_tumbling(j->size_ms, 0, out, msg, n);
}
