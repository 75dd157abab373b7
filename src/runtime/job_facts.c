/* SPDX-License-Identifier: MIT */
/* job_facts.c - a job read back through the public API: its keys as text
 * or numbers, the choices the diagnosis needs as enums (window assigner,
 * window time, trigger), and the run's state (running, restarting, start
 * time, why the last checkpoint failed).
 *
 * Invariant: choices are decoded here by their names in conf_table.def,
 * never by ordinal, so that a reordered choices string cannot change an
 * answer; a number is only given for INT, BOOL and DURATION keys.  The
 * run's state is read with the same atomics and lock the runtime writes
 * them with.  The embedded server (src/server) is the first reader: it
 * includes only tidemark.h.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/run_record.h"

/* ---- Keys ---- */

/* The row of @p key in @p scope, NULL when there is none. */
static const tdm__conf_row *row_of(tdm__scope scope, const char *key)
{
    int n, i = key ? tdm__conf_find(scope, key) : -1;
    const tdm__conf_row *rows = tdm__conf_rows(&n);
    return i >= 0 && i < n ? &rows[i] : NULL;
}

/* 1 when @p r is a number's row (INT, BOOL, DURATION). */
static int is_number(const tdm__conf_row *r)
{
    return r && (r->type == TDM__CT_INT || r->type == TDM__CT_BOOL ||
                 r->type == TDM__CT_DURATION);
}

/* The text of a job key (tidemark.h). */
const char *tdm_job_get(const tdm_job *job, const char *key)
{
    return job && row_of(TDM__SCOPE_JOB, key) ? tdm__job_str(job, key) : "";
}

/* A job key's number (tidemark.h). */
int64_t tdm_job_get_int(const tdm_job *job, const char *key)
{
    return job && is_number(row_of(TDM__SCOPE_JOB, key))
               ? tdm__job_int(job, key)
               : 0;
}

/* The text of a node key (tidemark.h). */
const char *tdm_node_get(const tdm_node *node, const char *key)
{
    return node && row_of(node->scope, key) ? tdm__node_str(node, key) : "";
}

/* A node key's number (tidemark.h). */
int64_t tdm_node_get_int(const tdm_node *node, const char *key)
{
    return node && is_number(row_of(node->scope, key))
               ? tdm__node_int(node, key)
               : 0;
}

/* ---- Choices ---- */

/* The kind of a node (tidemark.h). */
tdm_node_kind tdm_node_kind_of(const tdm_node *node)
{
    return node->kind;
}

/* "source", "window", "join", "sink" (tidemark.h). */
const char *tdm_node_kind_name(tdm_node_kind kind)
{
    return tdm__node_kind_name(kind);
}

/* The public kind of a window's window.type. */
static tdm_window_kind window_kind(tdm__window_type t)
{
    switch (t) {
    case TDM__WINDOW_TYPE_TUMBLING:
        return TDM_WINDOW_KIND_TUMBLING;
    case TDM__WINDOW_TYPE_SLIDING:
        return TDM_WINDOW_KIND_SLIDING;
    case TDM__WINDOW_TYPE_SESSION:
        return TDM_WINDOW_KIND_SESSION;
    case TDM__WINDOW_TYPE_GLOBAL:
        return TDM_WINDOW_KIND_GLOBAL;
    case TDM__WINDOW_TYPE_CUMULATE:
        return TDM_WINDOW_KIND_CUMULATE;
    }
    return TDM_WINDOW_KIND_NONE;
}

/* The window assigner (tidemark.h): window.type of a window, or of a
 * join whose type is window. */
tdm_window_kind tdm_node_window_kind(const tdm_node *node)
{
    if (node && node->kind == TDM_NODE_WINDOW)
        return window_kind(node->spec.win.type);
    if (!node || node->kind != TDM_NODE_JOIN ||
        node->spec.join.type != TDM__JOIN_TYPE_WINDOW)
        return TDM_WINDOW_KIND_NONE;
    return node->spec.join.window_type == TDM__JOIN_WINDOW_TYPE_SLIDING
               ? TDM_WINDOW_KIND_SLIDING
               : TDM_WINDOW_KIND_TUMBLING;
}

/* 1 for windows by processing time (tidemark.h). */
int tdm_node_processing_time(const tdm_node *node)
{
    return node && node->kind == TDM_NODE_WINDOW &&
           node->spec.win.time == TDM__WINDOW_TIME_PROCESSING;
}

/* Trigger names as conf_table.def spells them, in enum order. */
static const char *const trigger_names[] = {"default",
                                            "event_time",
                                            "processing_time",
                                            "count",
                                            "continuous_event_time",
                                            "never"};

/* The name of a trigger kind (tidemark.h). */
const char *tdm_trigger_name(tdm_trigger_kind kind)
{
    return (int)kind >= 0 &&
                   (size_t)kind < sizeof trigger_names / sizeof *trigger_names
               ? trigger_names[kind]
               : "";
}

/* The trigger of a window (tidemark.h). */
tdm_trigger_kind tdm_node_trigger(const tdm_node *node)
{
    if (!node || node->kind != TDM_NODE_WINDOW)
        return TDM_TRIGGER_KIND_DEFAULT;
    switch (node->spec.win.trigger) {
    case TDM__TRIGGER_EVENT_TIME:
        return TDM_TRIGGER_KIND_EVENT_TIME;
    case TDM__TRIGGER_PROCESSING_TIME:
        return TDM_TRIGGER_KIND_PROCESSING_TIME;
    case TDM__TRIGGER_COUNT:
        return TDM_TRIGGER_KIND_COUNT;
    case TDM__TRIGGER_CONTINUOUS_EVENT_TIME:
        return TDM_TRIGGER_KIND_CONTINUOUS_EVENT_TIME;
    case TDM__TRIGGER_NEVER:
        return TDM_TRIGGER_KIND_NEVER;
    case TDM__TRIGGER_DEFAULT:
        break;
    }
    return TDM_TRIGGER_KIND_DEFAULT;
}

/* ---- The run ---- */

/* 1 while the job runs (tidemark.h). */
int tdm_job_is_running(const tdm_job *job)
{
    return atomic_load(&job->rec->running) != 0;
}

/* 1 while the job waits to restart (tidemark.h). */
int tdm_job_is_restarting(const tdm_job *job)
{
    return atomic_load(&job->rec->restarting) != 0;
}

/* When the last run started, 0 before any (tidemark.h). */
tdm_time_ms tdm_job_start_time(const tdm_job *job)
{
    return atomic_load(&job->rec->start_ms);
}

/* Why the last checkpoint failed, copied under the metrics lock
 * (tidemark.h). */
size_t tdm_job_checkpoint_failure(tdm_job *job, char *buf, size_t n)
{
    tdm__run_record *rec = job->rec;
    size_t len;
    pthread_mutex_lock(&rec->mmu);
    len = strlen(rec->ck_fail_msg);
    if (n > 0)
        snprintf(buf, n, "%s", rec->ck_fail_msg);
    pthread_mutex_unlock(&rec->mmu);
    return len;
}
