/* SPDX-License-Identifier: MIT */
/* spec.h - the typed configuration of a node, read once from its keys.
 *
 * A node's keys are stored by table row as parsed text (tdm__conf_val);
 * code that runs a job should not look them up by name and decode ENUM
 * choices by their position.  Every node therefore keeps one spec of its
 * kind, and the job one job spec (tdm__node_spec_fill,
 * tdm__job_spec_fill, spec.c); the planner, the operators, validation
 * and the diagnosis read the spec's fields, typed by the enums
 * conf_enum.h generates from conf_table.def.  The invariant: a spec
 * always equals what its node's (job's) keys say: job.c refills it
 * whenever a key is set and tdm_job_validate refills every spec before
 * checking, and a running job's keys (hence its specs) do not change.
 * The builders here are the one place that turns a window's or a window
 * join's spec into an assigner and a trigger.
 */
#ifndef TDM_SPEC_H
#define TDM_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/conf_enum.h"
#include "tidemark.h"

/* Every key of conf_table.def is one field of the spec of its scope,
 * typed by the row's type: INT and DURATION (milliseconds, fields named
 * *_ms) as int64_t, DOUBLE as double, BOOL as bool, ENUM as its
 * conf_enum.h enum, STRING as text borrowed from the node's stored value
 * ("" when unset; valid until the key is set again), SCHEMA, AGGREGATES,
 * FIELDS and PROPS as the parsed value itself (borrowed likewise).
 * spec.c's field list ties each row to its field (tdm__spec_fields). */

/* A source. */
typedef struct tdm__source_spec {
    tdm__source_type type;
    const char *path;
    tdm__source_format format;
    bool csv_header;
    const char *csv_delimiter;
    const struct tdm__conf_val *schema;
    const char *partition_field;
    tdm__source_time time;
    const char *timestamp_field;
    tdm__timestamp_unit ts_unit;
    tdm__watermark_strategy wm_strategy;
    int64_t wm_max_out_of_orderness_ms;
    int64_t wm_delay_ms; /* -1: unset (a bound instead) */
    const char *wm_marker_field;
    int64_t wm_idle_timeout_ms;
    int64_t wm_interval_ms;
    tdm__watermark_emit wm_emit;
    int64_t wm_fallback_interval_ms, wm_fallback_lag_ms;
    const char *tcp_address;
    tdm__tcp_on_close tcp_on_close;
    int64_t tcp_connect_timeout_ms;
    int64_t tcp_reconnect_timeout_ms;
    int64_t tcp_reconnect_backoff_ms;
    int64_t tcp_reconnect_max_backoff_ms;
    const char *sink;
    tdm__generator_kind gen_kind;
    int64_t gen_records, gen_rate, gen_keys;
    double gen_skew;
    int64_t gen_partitions;
    int64_t gen_max_delay_ms;
    double gen_late_fraction;
    int64_t gen_late_delay_ms;
    int64_t gen_idle_partition;
    int64_t gen_idle_from_ms, gen_idle_for_ms;
    int64_t gen_seed;
    const char *gen_nexmark_kinds;
    int64_t gen_nexmark_out_of_order_group;
    bool gen_nexmark_flink_numbering;
    const char *wm_alignment_group;
    int64_t wm_alignment_max_drift_ms;
    int64_t wm_alignment_update_interval_ms;
    const char *brokers, *topics, *topic_pattern, *group;
    tdm__source_start start;
    const char *start_timestamp;
    tdm__source_stop stop;
    tdm__timestamp_source ts_source;
    const char *key_field;
    const struct tdm__conf_val *metadata;
    tdm__repartition repartition;
    int64_t repartition_writers;
    int64_t repartition_writer_timeout_ms;
    int64_t brokers_timeout_ms;
    const struct tdm__conf_val *kafka;
    const char *filter;
    const struct tdm__conf_val *compute;
} tdm__source_spec;

/* A window: inputs, key, assigner, time domain, trigger, lateness and
 * output. */
typedef struct tdm__window_spec {
    const struct tdm__conf_val *from, *key_by;
    tdm__window_type type;
    int64_t size_ms, slide_ms, step_ms, offset_ms, gap_ms;
    tdm__window_time time;
    tdm__trigger_kind trigger;
    int64_t trigger_count;
    int64_t trigger_interval_ms;
    bool trigger_purging;
    int64_t allowed_lateness_ms;
    const struct tdm__conf_val *aggregates;
    tdm__output_mode output_mode;
    const char *sink, *late_output;
    tdm__local_aggregation local_aggregation;
} tdm__window_spec;

/* A join: its sides, interval bounds, or the window of a window join. */
typedef struct tdm__join_spec {
    tdm__join_type type;
    const char *left, *right;
    const struct tdm__conf_val *left_key, *right_key;
    int64_t lower_ms, upper_ms;
    bool lower_inclusive, upper_inclusive;
    tdm__join_window_type window_type;
    int64_t size_ms, slide_ms;
    const char *filter;
    const char *sink, *late_output;
} tdm__join_spec;

/* A sink. */
typedef struct tdm__sink_spec {
    tdm__sink_type type;
    const char *path;
    tdm__sink_format format;
    const struct tdm__conf_val *select_list; /* the key "select" */
    const char *brokers, *topic;
    int64_t brokers_timeout_ms;
    tdm__sink_delivery delivery;
    const struct tdm__conf_val *kafka;
} tdm__sink_spec;

/* The spec of one node: the member of its kind. */
typedef union tdm__node_spec {
    tdm__source_spec src;
    tdm__window_spec win;
    tdm__join_spec join;
    tdm__sink_spec sink;
} tdm__node_spec;

/* The job-level keys. */
typedef struct tdm__job_spec {
    const char *name;
    int64_t parallelism, key_groups, batch_size, queue_capacity;
    int64_t timestamp_guard_ms;
    bool timestamp_guard_dead_letter;
    const char *dead_letter;
    int64_t status_interval_ms;
    const char *config_watch;
    int64_t config_watch_interval_ms;
    tdm__log_level log_level;
    int64_t http_header_timeout_ms;
    int64_t http_prom_max_partitions;
    const char *http_allowed_hosts;
    int64_t commit_interval_ms;
    tdm__on_cancel on_cancel;
    const char *checkpoint_dir;
    int64_t checkpoint_interval_ms;
    int64_t checkpoint_retain;
    tdm__checkpoint_restore checkpoint_restore;
    int64_t checkpoint_tolerable_failed;
    tdm__checkpoint_store checkpoint_store;
    const char *checkpoint_changelog_topic;
    tdm__checkpoint_changelog_standby checkpoint_changelog_standby;
    tdm__scale_out scale_out;
    int64_t task_id, task_epoch;
    tdm__restart_strategy restart_strategy;
    int64_t restart_attempts;
    int64_t restart_delay_ms, restart_max_delay_ms;
    double restart_multiplier;
} tdm__job_spec;

/* One field of a spec: the table row it holds (scope, key, type) and
 * where it lies, in tdm__node_spec for node scopes and in tdm__job_spec
 * for JOB.  spec.c lists one per row of conf_table.def, in the table's
 * order (test_spec.c checks it row by row). */
typedef struct tdm__spec_field {
    int scope; /* tdm__scope (rt.h) */
    const char *key;
    int type; /* tdm__ctype (rt.h) */
    size_t off, size;
} tdm__spec_field;

/* The field list; *n receives its length (the table's). */
const tdm__spec_field *tdm__spec_fields(int *n);
/* Stores the values of @p scope's rows (@p vals: one per table row) into
 * the spec at @p base (a tdm__node_spec's member or a tdm__job_spec). */
void tdm__spec_fill_scope(int scope, const struct tdm__conf_val *vals,
                          void *base);

/* The "sink" key of a node of kind @p kind (sources, windows and joins
 * have one; "" otherwise). */
static inline const char *tdm__node_spec_sink(tdm_node_kind kind,
                                              const tdm__node_spec *s)
{
    switch (kind) {
    case TDM_NODE_SOURCE:
        return s->src.sink;
    case TDM_NODE_WINDOW:
        return s->win.sink;
    case TDM_NODE_JOIN:
        return s->join.sink;
    default:
        return "";
    }
}

/* The "late_output" key of a node of kind @p kind (windows and joins;
 * "" otherwise). */
static inline const char *tdm__node_spec_late(tdm_node_kind kind,
                                              const tdm__node_spec *s)
{
    if (kind == TDM_NODE_WINDOW)
        return s->win.late_output;
    return kind == TDM_NODE_JOIN ? s->join.late_output : "";
}

/* The connectors' constants (connect.h: TDM__SRC_*, TDM__FMT_*,
 * TDM__TIME_*, TDM__UNIT_*, TDM__GEN_*, TDM__KSTART_*, TDM__SINK_*) are
 * the table's choices counted from 1; spec.c asserts it for every one at
 * compile time. */
static inline int tdm__spec_conn(int choice)
{
    return choice + 1;
}

/* True when the window assigns by processing time or fires on it: the
 * operator then writes results its watermark has not reached. */
static inline bool tdm__window_spec_proc_time(const tdm__window_spec *w)
{
    return w->time == TDM__WINDOW_TIME_PROCESSING ||
           w->trigger == TDM__TRIGGER_PROCESSING_TIME;
}

/* The window's assigner into *out (the caller destroys it).  With
 * @p with_time a processing-time window's assigner is switched to
 * processing time (the run's; global windows refuse it with
 * TDM_ERR_INVAL); without, only its shape is built (validation).
 * Messages go to @p msg.  TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
tdm_err tdm__window_spec_assigner(const tdm__window_spec *w, bool with_time,
                                  tdm_assigner **out, char *msg, size_t n);
/* The window's trigger into *out: NULL for the assigner's default, a
 * built-in one otherwise, wrapped in a purging trigger when
 * trigger.purging is set (the default then made explicit: event or
 * processing time as the window's time).  TDM_OK, TDM_ERR_INVAL,
 * TDM_ERR_NOMEM. */
tdm_err tdm__window_spec_trigger(const tdm__window_spec *w, tdm_trigger **out,
                                 char *msg, size_t n);
/* A window join's assigner (tumbling or sliding, no offset). */
tdm_err tdm__join_spec_assigner(const tdm__join_spec *j, tdm_assigner **out,
                                char *msg, size_t n);

#endif
