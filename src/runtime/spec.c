/* SPDX-License-Identifier: MIT */
/* spec.c - filling the typed node specs from the configuration, and the
 * assigner and trigger a window's spec describes.
 *
 * The fill functions are the one place that maps key names to typed
 * fields; every ENUM value is stored as the conf_enum.h constant it is
 * (the choice index tdm__conf_parse produced).  tdm_job_validate calls
 * tdm__node_spec_fill for every node before checking any, so a node's
 * checks may read the specs of the nodes it refers to.  The builders
 * replace the copies of "build an assigner from a window's config" the
 * validation and the operator set-up (task_op.c) each had.
 */
#include "runtime/spec.h"

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

/* ---- Filling ---- */

static int64_t num(const tdm_node *n, const char *key)
{
    return tdm__node_int(n, key);
}

static void fill_source(const tdm_node *n, tdm__source_spec *s)
{
    s->type = (tdm__source_type)num(n, "type");
    s->format = (tdm__source_format)num(n, "format");
    s->time = (tdm__source_time)num(n, "time");
    s->ts_unit = (tdm__timestamp_unit)num(n, "timestamp.unit");
    s->ts_source = (tdm__timestamp_source)num(n, "timestamp.source");
    s->wm_strategy = (tdm__watermark_strategy)num(n, "watermark.strategy");
    s->wm_emit = (tdm__watermark_emit)num(n, "watermark.emit");
    s->tcp_on_close = (tdm__tcp_on_close)num(n, "tcp.on_close");
    s->gen_kind = (tdm__generator_kind)num(n, "generator.kind");
    s->start = (tdm__source_start)num(n, "start");
    s->stop = (tdm__source_stop)num(n, "stop");
    s->repartition = (tdm__repartition)num(n, "repartition");
}

static void fill_window(const tdm_node *n, tdm__window_spec *w)
{
    w->type = (tdm__window_type)num(n, "window.type");
    w->time = (tdm__window_time)num(n, "window.time");
    w->size_ms = num(n, "window.size");
    w->slide_ms = num(n, "window.slide");
    w->offset_ms = num(n, "window.offset");
    w->gap_ms = num(n, "window.gap");
    w->trigger = (tdm__trigger_kind)num(n, "trigger");
    w->trigger_count = num(n, "trigger.count");
    w->trigger_interval_ms = num(n, "trigger.interval");
    w->trigger_purging = num(n, "trigger.purging") != 0;
    w->allowed_lateness_ms = num(n, "allowed_lateness");
    w->output_mode = (tdm__output_mode)num(n, "output_mode");
    w->local_aggregation = (tdm__local_aggregation)num(n, "local_aggregation");
}

static void fill_join(const tdm_node *n, tdm__join_spec *j)
{
    j->type = (tdm__join_type)num(n, "type");
    j->lower_ms = num(n, "lower");
    j->upper_ms = num(n, "upper");
    j->lower_inclusive = num(n, "lower_inclusive") != 0;
    j->upper_inclusive = num(n, "upper_inclusive") != 0;
    j->window_type = (tdm__join_window_type)num(n, "window.type");
    j->size_ms = num(n, "window.size");
    j->slide_ms = num(n, "window.slide");
}

/* Fills @p n's spec from its keys (see rt.h). */
void tdm__node_spec_fill(tdm_node *n)
{
    tdm__node_spec s;
    memset(&s, 0, sizeof s);
    switch (n->kind) {
    case TDM_NODE_SOURCE:
        fill_source(n, &s.src);
        break;
    case TDM_NODE_WINDOW:
        fill_window(n, &s.win);
        break;
    case TDM_NODE_JOIN:
        fill_join(n, &s.join);
        break;
    case TDM_NODE_SINK:
        s.sink.type = (tdm__sink_type)num(n, "type");
        s.sink.format = (tdm__sink_format)num(n, "format");
        break;
    }
    n->spec = s;
}

/* The job-level enum keys (see rt.h). */
tdm__job_spec tdm__job_spec_of(const tdm_job *job)
{
    tdm__job_spec s;
    s.log_level = (tdm__log_level)tdm__job_int(job, "log.level");
    s.on_cancel = (tdm__on_cancel)tdm__job_int(job, "on_cancel");
    s.checkpoint_restore =
        (tdm__checkpoint_restore)tdm__job_int(job, "checkpoint.restore");
    s.restart_strategy =
        (tdm__restart_strategy)tdm__job_int(job, "restart.strategy");
    return s;
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
