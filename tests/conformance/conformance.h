/* SPDX-License-Identifier: MIT */
/*
** conformance.h - private interface of the conformance vector runner.
**
** The runner is split in four parts: load.c turns a vector document into a
** validated struct conf_vector (rejecting every field or value it does not
** know), drive.c builds the operator through the public API and feeds the
** input, compare.c holds the canonical form of output items and the
** comparison rules of FORMAT.md, and runner.c is the command line.
*/
#ifndef TDM_CONFORMANCE_H
#define TDM_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "tidemark.h"

/* Size of the message buffers that explain a failure. */
#define CONF_MSG 1024

/* The operator under test. */
enum conf_pipe {
    PIPE_WATERMARK, /* generators per channel, then one valve */
    PIPE_WINDOW,    /* generators per channel, then the window operator */
    PIPE_JOIN,      /* generators per side and channel, then a join */
    PIPE_SOURCE,    /* one source reader with several splits */
    PIPE_COORD      /* the alignment coordinator */
};

/* How watermarks arise on each channel (pipeline.watermark). */
enum conf_strategy {
    STRAT_EXPLICIT,
    STRAT_BOUNDED,
    STRAT_MONOTONOUS,
    STRAT_PUNCTUATED,
    STRAT_NONE
};

struct conf_wm {
    enum conf_strategy strategy;
    tdm_time_ms bound_ms; /* bounded, punctuated */
    int on_event;         /* emit: on_event */
    int has_interval;     /* interval_ms given */
    tdm_time_ms interval_ms;
    int has_idle; /* idle_timeout_ms given */
    tdm_time_ms idle_timeout_ms;
    const char *marker_field; /* punctuated; borrowed from the document */
    int has_fallback;         /* fallback given (source pipelines) */
    tdm_time_ms fb_lag_ms, fb_interval_ms;
};

enum conf_win_type {
    WIN_TUMBLING,
    WIN_SLIDING,
    WIN_SESSION,
    WIN_GLOBAL,
    WIN_CUMULATE
};

struct conf_window {
    enum conf_win_type type;
    tdm_time_ms size_ms, slide_ms, step_ms, offset_ms, gap_ms;
    int processing; /* time: processing */
};

enum conf_trig_type {
    TRIG_EVENT_TIME,
    TRIG_PROCESSING_TIME,
    TRIG_COUNT,
    TRIG_CONTINUOUS,
    TRIG_PURGING
};

struct conf_trigger {
    enum conf_trig_type type;
    int64_t count;              /* count */
    tdm_time_ms interval_ms;    /* continuous_event_time */
    struct conf_trigger *inner; /* purging; owned */
};

struct conf_join {
    int is_window; /* type: window */
    tdm_time_ms lower_ms, upper_ms;
    int lower_inclusive, upper_inclusive;
    struct conf_window window;
};

enum conf_in_kind {
    IN_RECORD,
    IN_WATERMARK,
    IN_IDLE,
    IN_ACTIVE,
    IN_PROCTIME,
    IN_END,
    IN_SPLIT_FINISHED,
    IN_ANNOUNCE,
    IN_REPORT,
    IN_SET /* a live setting (runner extension, README.md) */
};

/* One input item, decoded.  Strings are borrowed from the document. */
struct conf_input {
    enum conf_in_kind kind;
    int channel; /* channel, or split for source pipelines */
    int side;    /* TDM_SIDE_LEFT / TDM_SIDE_RIGHT (joins) */
    int subtask; /* report */
    const char *key;
    size_t key_len;
    tdm_time_ms ts; /* record, watermark, proctime, announce, report; set:
                       the new value */
    int setting;    /* set: 0 max_out_of_orderness, 1 idle_timeout,
                     * 2 allowed_lateness */
    double value;
    json_t *obj; /* the item itself (punctuation markers read it) */
};

/* A whole vector, validated. */
struct conf_vector {
    json_t *doc; /* owned: the parsed file */
    const char *name;
    enum conf_pipe pipe;
    int channels; /* per side for joins; splits for sources */
    struct conf_wm wm;
    struct conf_window window;
    struct conf_trigger *trigger; /* NULL: the default (see load.c) */
    tdm_agg_kind agg;
    tdm_time_ms allowed_lateness_ms;
    int late_output;
    struct conf_join join;
    int has_alignment;
    tdm_time_ms align_drift_ms, align_interval_ms;
    int subtasks;
    tdm_time_ms coord_drift_ms, coord_interval_ms;
    struct conf_input *input;
    size_t n_input;
    json_t *expected; /* owned: canonical output items, each with "after" */
    int has_late_dropped;
    int64_t late_dropped;
};

/* ---- load.c ---- */

/* Decodes and validates @p doc (takes ownership of it, even on failure)
** into @p v.  Returns 0, or -1 with the reason in @p why (for example
** "unsupported trigger type \"foo\""); @p v must be released with
** conf_vector_free() in both cases. */
int conf_load(json_t *doc, struct conf_vector *v, char *why, size_t why_size);
/* Releases what conf_load() allocated; accepts a zeroed or half-filled
** vector. */
void conf_vector_free(struct conf_vector *v);

/* ---- compare.c ---- */

/* Turns one expected output item of a vector into its canonical form
** (fixed key order, timestamps as integers).  Returns a new reference, or
** NULL with the reason in @p why. */
json_t *conf_canon_expected(const json_t *item, size_t n_input, char *why,
                            size_t why_size);
/* Renders a canonical item compactly, without its "after" field.  Returns
** a malloc'ed string (never NULL: "?" on allocation failure, static). */
char *conf_render(const json_t *item);
/* Frees a string from conf_render(). */
void conf_render_free(char *s);
/* Compares the canonical @p actual outputs with v->expected under the
** rules of FORMAT.md ("expect").  Returns 0 when they agree, else -1 with
** the first difference in @p why. */
int conf_compare(const struct conf_vector *v, const json_t *actual, char *why,
                 size_t why_size);
/* Builds the canonical item of a record (key, ts, value) for late records
** and join pairs.  Returns a new reference or NULL (out of memory). */
json_t *conf_record_json(const char *key, size_t key_len, tdm_time_ms ts,
                         double value);
/* A number as JSON: an integer when @p d is integral and fits int64,
** else a real (non-finite values become strings).  New reference. */
json_t *conf_number(double d);

/* ---- drive.c ---- */

/* Builds the operator of @p v, feeds its input and appends every emitted
** event, in canonical form with "after", to @p actual.  *late_dropped gets
** the operator's late-dropped counter.  Returns 0, or -1 with the reason
** (an API call that failed, an unsupported combination) in @p why. */
int conf_drive(const struct conf_vector *v, json_t *actual,
               int64_t *late_dropped, char *why, size_t why_size);

#endif /* TDM_CONFORMANCE_H */
