/* SPDX-License-Identifier: MIT */
/* plan.h - the execution plan of a running job: its sources, operators,
 * the edges between them and the sinks, with what planning derived from
 * the job's nodes (key fields, output columns, commit horizons,
 * alignment groups, two-phase aggregation).
 *
 *   tdm__rt_source ──tdm__rt_edge (key fields, input)──▶ tdm__rt_op ──▶
 * tdm__rt_sink
 *
 * An operator read by other operators (chaining) has a derived source:
 * its output stream, whose subtask i is fed by op subtask i's thread
 * through the emitter (outbox.h) instead of a thread of its own.
 *
 * Planned by plan.c before any thread starts; the subtasks read it and
 * never change it, apart from the few atomic fields noted below.  It
 * holds no subtask: the run does (rt_ctx.h, run->op_tasks[o] for
 * run->ops[o], tdm__rt_op_index for an operator known by pointer).
 */
#ifndef TDM_RT_PLAN_H
#define TDM_RT_PLAN_H

#include "runtime/rt.h"
#include "runtime/rt_ctx.h"

typedef struct tdm__rt_op tdm__rt_op;
typedef struct tdm__rt_source tdm__rt_source;

/* A shared sink, opened once; with checkpoints one object per writing
 * subtask instead (docs/checkpoints.md, "In the runtime"). */
typedef struct tdm__rt_sink {
    tdm_node *node;
    tdm__sink_conf conf;
    const tdm__sink_vtab *vt;
    tdm__sinkobj *obj;
    int mode; /* output mode handed to open: RT_APPEND, ... */
    bool used;
    /* Checkpoints: writer roles (a source passing rows through to it, a
     * source's dead letters), each with P writers; writer w = role * P
     * + subtask owns wobj[w] (exactly_once, conf.writer = w). */
    int n_roles;
    tdm__sinkobj **wobj;
    /* A task's job (task.id >= 0, docs/scale-out.md): the file path
     * "<path>.task-<n>" and the transactional name "<job>.task-<n>"
     * that conf points at. */
    char *task_path, *task_name;
} tdm__rt_sink;

/* Watermark alignment: one coordinator per watermark.alignment.group,
 * shared by every source of the group (both sides of a join may be);
 * its subtask numbers are tdm__rt_source.align_base + subtask index.  mu
 * serialises the coordinator's calls, made from the source threads. */
typedef struct tdm__rt_align {
    const char *group; /* borrowed from the first source's key */
    tdm_align_coord *coord;
    tdm_clock *clk;
    pthread_mutex_t mu;
    bool mu_ok;
    tdm_time_ms drift, interval;
    int n; /* subtasks: sum of P over the group's sources */
    tdm__run *run;
} tdm__rt_align;

/* What a record of time ts can still change, per operator (the commit
 * horizon C(ts), docs/kafka.md): the last operator watermark at which
 * it belongs to a window not yet cleaned up.  RT_HZ_END: results can
 * change until the end of input (sessions, global windows, count or
 * processing-time triggers, interval joins). */
enum { RT_HZ_END = 0, RT_HZ_WINDOW = 1 };
typedef struct tdm__rt_horizon {
    int kind;
    tdm_time_ms size, step, offset, lateness;
    /* Windows: the highest lateness in force during the run (live.h,
     * R-LV-8), read instead of lateness; NULL: the definition's. */
    const _Atomic int64_t *live;
} tdm__rt_horizon;

/* A source feeding an operator. */
typedef struct tdm__rt_edge {
    tdm__rt_op *op;
    int input;    /* union position (window) or side (join) */
    int *key_idx; /* key fields in the source's schema */
    int n_key;
    int target_base; /* first of op->P targets in the source's list */
    bool local;      /* two-phase: the source folds records locally
                        (localagg.h) */
} tdm__rt_edge;

struct tdm__rt_source {
    tdm_node *node;
    const tdm__schema *schema;
    tdm__source_conf conf;
    const tdm__source_vtab *vt;
    tdm_wm_strategy *strat;
    int marker_idx;
    /* The generator needs only each partition's highest timestamp per
     * batch: bounded or monotonous with periodic emission, or none (its
     * on-event hook only keeps a maximum, or nothing). */
    bool wm_max_only;
    tdm__rt_edge *edges;
    int n_edges;
    int n_targets;
    atomic_int unit_warned;
    /* Version-2 connector (partitions come and go, commits). */
    bool v2;
    /* Processing time at which a subtask of this source first had a
     * split (TDM_TIME_MAX: none yet); see idle_without_splits. */
    _Atomic int64_t first_live;
    char *group_owned; /* the default kafka group name */
    char *start_file;  /* a task's repartition start file */
    /* Commit horizon: the maximum over the consumers' (hz_end: some
     * consumer changes results until the end). */
    bool hz_end;
    /* Key fence (fence.c): its subtasks track the keys of each split
     * and send them to the window subtasks when the connector says the
     * split was revoked while running. */
    bool fence;
    /* Results a previous owner of its partitions may have written
     * (connect.h, replayed): the maximum over its subtasks; results of
     * the windows it feeds with start <= replay_start or end - 1 <=
     * replay_last are marked as updates.  Published before the rows they
     * cover are pushed (the queues order them): relaxed loads suffice. */
    _Atomic int64_t replay_start, replay_last;
    /* Alignment group (NULL: none) and this source's first subtask
     * number in its coordinator. */
    tdm__rt_align *align;
    int align_base;
    /* Its live settings (live.h; NULL for derived sources). */
    struct tdm__live_src *live;
    /* Pass-through (key "sink"): every row the source keeps is written
     * to this sink by the subtask that read it (NULL: none). */
    tdm__rt_sink *pass;
    /* A derived source (docs/runtime.md, Chained operators): the output
     * stream of operator from (node is the operator's node, schema its
     * output schema); no connector, reader or thread: subtask i is
     * written by op subtask i through tdm__rt_emit_*.  None of the connector
     * features (commits, fence, replay, alignment, repartition,
     * two-phase aggregation) apply to it. */
    bool derived;
    tdm__rt_op *from;
    /* Checkpoints: this source's writer role in its pass-through sink
     * and in the dead-letter sink (tdm__rt_sink.n_roles). */
    int pass_role, dead_role;
};

enum { RT_APPEND = 0, RT_UPSERT = 1, RT_RETRACT = 2 };

struct tdm__rt_op {
    tdm_node *node;
    tdm_node_kind kind;
    int n_inputs;
    tdm__rt_source **inputs; /* window: from list; join: left, right */
    int **in_key_idx;        /* per input */
    int n_key;
    int n_channels;
    tdm__rt_sink *sink, *late;
    /* Windows. */
    const tdm__agg_spec *specs;
    int n_aggs;
    bool fast_count; /* a single count(): the built-in aggregate */
    int **agg_idx;   /* [input][aggregate] field index */
    tdm_type *agg_in_types;
    int mode;        /* RT_APPEND, RT_UPSERT, RT_RETRACT */
    bool proc_time;  /* processing-time windows or trigger */
    bool early;      /* may fire before its watermark (early,
                        count, processing-time triggers) */
    bool event_time; /* event-time assigner (lateness applies) */
    tdm_time_ms lateness;
    tdm__rt_horizon hz; /* commit horizon of the records it reads */
    /* Two-phase aggregation (localagg.h): sources fold records into
     * partial accumulators per (key, slice) and send partial rows. */
    bool two_phase;
    int wtype; /* window.type: 0 tumbling, 1 sliding */
    tdm_time_ms wsize, wslide, woffset;
    /* Output columns: key fields, then aggregates (window) or left
     * fields, right fields and ts (join). */
    int n_cols;
    const char **col_names;
    char **owned_names;
    tdm_type *col_types;
    /* Chaining: the derived source other operators read this one's
     * results from (NULL: none read it), and a join's filter over its
     * output columns (NULL: none; borrowed from the node). */
    tdm__rt_source *out;
    const struct tdm__expr *filter;
    /* Checkpoints: writer roles in its result and late-output sinks. */
    int sink_role, late_role;
};

/* The position of operator @p op in run->ops, which is that of its
 * subtasks in the run (tdm__rt_op_tasks). */
static inline int tdm__rt_op_index(const tdm__run *run, const tdm__rt_op *op)
{
    return (int)(op - run->ops);
}

/* The commit horizon C(ts) of source @p s: the maximum over its
 * consumers (TDM_TIME_MAX when one of them changes results until the
 * end of input). */
tdm_time_ms tdm__rt_horizon_of(const tdm__rt_source *s, tdm_time_ms ts);
/* The commit horizon of a record at  ts for consumer edge  e alone. */
tdm_time_ms tdm__rt_edge_horizon(const tdm__rt_edge *e, tdm_time_ms ts);

/* Plans run @p run's job (run->job, P, key_groups set): fills the
 * run's sources, derived sources, operators, sinks and alignment
 * groups; opens nothing.  TDM_OK, or an error with its message in
 * @p errbuf (TDM_ERR_NOMEM, or a connector or alignment setting the
 * plan refuses); tdm__plan_free frees a partial plan.  @thread run. */
tdm_err tdm__plan_build(tdm__run *run, char *errbuf, size_t errbuf_size);
/* Frees what tdm__plan_build made (after every subtask was freed; the
 * run struct itself is the caller's).  @thread run. */
void tdm__plan_free(tdm__run *run);

#endif /* TDM_RT_PLAN_H */
