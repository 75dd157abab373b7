/* SPDX-License-Identifier: MIT */
/* spec.h - the typed configuration of a node, read once from its keys.
 *
 * A node's keys are stored by table row as parsed text (tdm__conf_val);
 * code that runs a job should not look them up by name and decode ENUM
 * choices by their position.  tdm_job_validate therefore fills one spec
 * per node (tdm__node_spec_fill, spec.c) and keeps it on the node; the
 * planner, the operator set-up and validation itself read the spec's
 * fields, typed by the enums conf_enum.h generates from conf_table.def.
 * The invariant: a spec always equals what its node's keys say at the
 * last validation, and a running job's keys (hence its specs) do not
 * change.  The builders here are the one place that turns a window's or
 * a window join's spec into an assigner and a trigger.
 */
#ifndef TDM_SPEC_H
#define TDM_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/conf_enum.h"
#include "tidemark.h"

/* A source (enum keys and the numbers validation and the planner
 * compare; text keys stay on the node). */
typedef struct tdm__source_spec {
    tdm__source_type type;
    tdm__source_format format;
    tdm__source_time time;
    tdm__timestamp_unit ts_unit;
    tdm__timestamp_source ts_source;
    tdm__watermark_strategy wm_strategy;
    tdm__watermark_emit wm_emit;
    tdm__tcp_on_close tcp_on_close;
    tdm__generator_kind gen_kind;
    tdm__source_start start;
    tdm__source_stop stop;
    tdm__repartition repartition;
} tdm__source_spec;

/* A window: assigner, time domain, trigger, lateness and output. */
typedef struct tdm__window_spec {
    tdm__window_type type;
    tdm__window_time time;
    int64_t size_ms, slide_ms, offset_ms, gap_ms;
    tdm__trigger_kind trigger;
    int64_t trigger_count;
    int64_t trigger_interval_ms;
    bool trigger_purging;
    int64_t allowed_lateness_ms;
    tdm__output_mode output_mode;
    tdm__local_aggregation local_aggregation;
} tdm__window_spec;

/* A join: interval bounds, or the window of a window join. */
typedef struct tdm__join_spec {
    tdm__join_type type;
    int64_t lower_ms, upper_ms;
    bool lower_inclusive, upper_inclusive;
    tdm__join_window_type window_type;
    int64_t size_ms, slide_ms;
} tdm__join_spec;

/* A sink. */
typedef struct tdm__sink_spec {
    tdm__sink_type type;
    tdm__sink_format format;
} tdm__sink_spec;

/* The spec of one node: the member of its kind. */
typedef union tdm__node_spec {
    tdm__source_spec src;
    tdm__window_spec win;
    tdm__join_spec join;
    tdm__sink_spec sink;
} tdm__node_spec;

/* The job-level enum keys. */
typedef struct tdm__job_spec {
    tdm__log_level log_level;
    tdm__on_cancel on_cancel;
    tdm__checkpoint_restore checkpoint_restore;
    tdm__restart_strategy restart_strategy;
} tdm__job_spec;

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
