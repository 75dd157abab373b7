/* SPDX-License-Identifier: MIT */
/* view.h - a sorted view of one tdm_metrics snapshot and the partition
 * holding the job's watermark back (view.c), for the readers above it:
 * the history's sampler (history.c), the REST routes and the Prometheus
 * exposition (rest.c, prom.c, through tdm__find_culprit in server.h),
 * the diagnosis (diagnose.c) and the window explanation (explain.c).
 * A view borrows its snapshot: it lives no longer than the snapshot.
 * Nothing here is public.
 */
#ifndef TDM_SERVER_VIEW_H
#define TDM_SERVER_VIEW_H

#include "server/server.h"

/* A partition that sent nothing for this long (and ten times longer than
 * the most recent silence of the partitions it is compared with) counts
 * as stalled. */
#define TDM__VIEW_STALL_MS 10000
/* A subtask backpressured this many ms per second or more is held by
 * its consumers (backPressuredTimeMsPerSecond). */
#define TDM__VIEW_HELD_MS 500

/* Scopes of the metric table, in the order units are sorted. */
enum {
    TDM__VIEW_JOB = 0,
    TDM__VIEW_VERTEX,
    TDM__VIEW_INPUT,
    TDM__VIEW_CHANNEL,
    TDM__VIEW_PARTITION
};

/* Every value of one (scope, vertex, subtask, index) gathered: the
 * snapshot lists values one by one, the rules want them side by side. */
typedef struct tdm__view_unit {
    int scope;
    const char *vertex;
    int subtask;
    int index;
    const char *label;
    int group; /* connected component of its vertex */
    uint64_t has[(TDM_METRIC_COUNT_ + 63) / 64]; /* bit i: v[i] present */
    int held; /* a partition whose source subtask is backpressured
                 (TDM__VIEW_HELD_MS or more per second): its silence is
                 the reader's, not the producer's */
    int64_t v[TDM_METRIC_COUNT_];
} tdm__view_unit;

/* The active partitions of one connected part of the job, summed up so
 * that "the others" of any partition are known without a second pass:
 * the two lowest and two highest watermarks and the two freshest. */
typedef struct tdm__view_gstat {
    const tdm__view_unit *lo[2];
    const tdm__view_unit *hi[2];
    const tdm__view_unit *fresh[2];
    int n;
} tdm__view_gstat;

typedef struct tdm__view {
    tdm_job *job; /* may be NULL (tdm__find_culprit) */
    const tdm_metrics *m;
    tdm__view_unit *u;
    size_t n;
    tdm_time_ms now;
    int running;
    int *group; /* per vertex: connected component */
    size_t n_vertices;
    tdm__view_gstat *gs; /* per component (index: a vertex) */
} tdm__view;

/* The candidate culprit with the partition it was compared with. */
typedef struct tdm__view_culprit {
    tdm__culprit pub;
    const tdm__view_unit *unit; /* the culprit partition */
    const tdm__view_unit *next; /* the next lowest one */
    int64_t other_age_ms;       /* freshest other partition's age (-1) */
} tdm__view_culprit;

/* What the other active partitions of a partition's part of the job
 * show. */
typedef struct tdm__view_others {
    int n;                         /* how many */
    const tdm__view_unit *lo, *hi; /* lowest and highest watermark */
    int64_t fresh_age;             /* the freshest one's silence (-1) */
} tdm__view_others;

/* ---- The view ---- */

/* Builds the view of @p m (borrowed for the view's life) for @p job (may
 * be NULL: no configuration is asked then).  TDM_OK or TDM_ERR_NOMEM
 * (nothing to free then). */
tdm_err tdm__view_build(tdm__view *w, tdm_job *job, const tdm_metrics *m);
/* Frees what the view holds (not the snapshot) and zeroes it. */
void tdm__view_free(tdm__view *w);

/* 1 when unit @p u (may be NULL) has a value of @p id. */
static inline int tdm__view_has(const tdm__view_unit *u, tdm_metric id)
{
    return u && (u->has[id / 64] >> (id % 64)) & 1;
}

/* The value of @p id in @p u, or @p dflt when absent. */
static inline int64_t tdm__view_val(const tdm__view_unit *u, tdm_metric id,
                                    int64_t dflt)
{
    return tdm__view_has(u, id) ? u->v[id] : dflt;
}

/* strcmp with NULL first. */
int tdm__view_strcmp(const char *a, const char *b);
/* The position of the first unit at or after (scope, vertex, subtask,
 * index) in the sorted units (w->n when none): the start of a run. */
size_t tdm__view_lower_bound(const tdm__view *w, int scope, const char *vertex,
                             int subtask, int index);
/* The unit of (scope, vertex, subtask, index), NULL when absent. */
const tdm__view_unit *tdm__view_find(const tdm__view *w, int scope,
                                     const char *vertex, int subtask,
                                     int index);
/* Sum, minimum or maximum (@p how) of a VERTEX metric over the subtasks
 * of @p vertex (all vertices when NULL).  *found (may be NULL) receives
 * how many subtasks had the value; 0 is returned when none had. */
int64_t tdm__view_agg(const tdm__view *w, const char *vertex, tdm_metric id,
                      tdm_metric_agg how, int *found);
/* The node of the job named @p name, NULL without a job. */
tdm_node *tdm__view_node(const tdm__view *w, const char *name);
/* 1 when vertex @p vi (may be NULL) lists @p input among its inputs. */
int tdm__view_reads(const tdm_vertex_info *vi, const char *input);

/* ---- What the job's configuration says about a vertex ---- */

/* The period at which windows of operator @p n (may be NULL) end: a
 * tumbling window's size, a sliding window's slide, a cumulate
 * window's step, a session's gap; 0 when none (global windows, interval
 * joins, no node). */
int64_t tdm__view_window_period(tdm_node *n);
/* How far a partition of source @p src must be behind the next one to
 * hold a window back: the shortest period of the windows reading it
 * (1 s when none of them has one). */
int64_t tdm__view_hold_threshold(const tdm__view *w, const char *src);
/* A source's idle timeout (0: none, or no job to ask). */
int64_t tdm__view_idle_timeout(const tdm__view *w, const char *src);
/* Live key @p key of @p job ("windows.w.allowed_lateness") as it
 * stands, or @p dflt when the job has no such live key. */
int64_t tdm__job_live_value(tdm_job *job, const char *key, int64_t dflt);
/* A watermark setting of source @p src ("watermark.max_out_of_orderness")
 * as it stands: its live value when it was changed on the running job,
 * else the job file's (0 without a job). */
int64_t tdm__view_source_setting(const tdm__view *w, const char *src,
                                 const char *setting);

/* ---- Partitions and the culprit ---- */

/* 1 for an active partition: it has a watermark, is not idle and has
 * not finished. */
int tdm__view_part_active(const tdm__view_unit *u);
/* The other active partitions of @p u's part of the job. */
tdm__view_others tdm__view_others_of(const tdm__view *w,
                                     const tdm__view_unit *u);
/* Finds the culprit of the view (see tdm__culprit in server.h) with the
 * partition it was compared with; c->pub.found = 0 when none. */
void tdm__view_culprit_find(const tdm__view *w, tdm__view_culprit *c);
/* 1 when partition @p u has been silent for long compared with the
 * freshest other partition it competes with (@p other_age, -1 unknown):
 * never read a record, or silent for TDM__VIEW_STALL_MS and ten times
 * longer. */
int tdm__view_stalled(const tdm__view_unit *u, int64_t other_age);
/* A partition's name for text: "p3" (quoted), or "#2" without one. */
const char *tdm__view_part_name(const tdm__view_unit *u, char *buf, size_t n);

/* The job's unfinished partitions, counted: how many (live), how many
 * silent (no record yet, or none for TDM__VIEW_STALL_MS), how many
 * marked idle, and the youngest last-record age (-1: none known). */
typedef struct tdm__view_silence {
    int live, silent, idle;
    int64_t youngest;
} tdm__view_silence;

tdm__view_silence tdm__view_silence_of(const tdm__view *w);
/* 1 when the job runs and every unfinished partition is silent, not all
 * of them marked idle: no record can move the watermark, and an idle
 * timeout would not help (STALLED_WATERMARK, docs/diagnosis.md). */
int tdm__view_all_silent(const tdm__view *w, const tdm__view_silence *s);

#endif /* TDM_SERVER_VIEW_H */
