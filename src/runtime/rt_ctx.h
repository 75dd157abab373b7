/* SPDX-License-Identifier: MIT */
/* rt_ctx.h - the run and its services: what every thread of a running
 * job shares with the supervisor (run.c) that starts them.
 *
 * A tdm__run is made by tdm_job_run for one attempt and lives until its
 * threads are joined.  It holds the plan (plan.h) by pointer, the abort
 * flag and first error, the run lock and condition that the supervisor
 * waits on, and the checkpoint coordinator's state (tdm__rt_ckpt).  The
 * services below (tdm__rt_fail, tdm__rt_thread_done, the clock, the job log
 * line, time and key text, tdm__rt_count) depend on nothing above this header:
 * every subtask file and every component may call them.
 *
 * Invariant: the first tdm__rt_fail wins; err and errmsg are written once
 * under mu, and abort only ever goes from 0 to 1.
 */
#ifndef TDM_RT_CTX_H
#define TDM_RT_CTX_H

#include "runtime/rt.h"
#include "runtime/run_record.h"

typedef struct tdm__rt_op tdm__rt_op;
typedef struct tdm__rt_source tdm__rt_source;
typedef struct tdm__rt_sink tdm__rt_sink;
typedef struct tdm__rt_align tdm__rt_align;
typedef struct tdm__rt_src_task tdm__rt_src_task;
typedef struct tdm__rt_op_task tdm__rt_op_task;

struct tdm__ckpt_store;
struct tdm__ckpt_reader;

/* The checkpoint coordinator's state (ckpt.c), kept by the run thread;
 * req and committed are read by the subtasks between polls. */
typedef struct tdm__rt_ckpt {
    bool on;
    struct tdm__ckpt_store *st;
    tdm_time_ms interval;
    uint64_t last;    /* highest id used or restored */
    uint64_t pending; /* the checkpoint in progress (0: none) */
    int pending_kind; /* TDM__CKPT_CHECKPOINT or _SAVEPOINT */
    int64_t started_us;
    int64_t next_ms;            /* tdm__mono_ms of the next start */
    _Atomic uint64_t req;       /* barrier requested (subtasks ack it) */
    _Atomic uint64_t committed; /* durable: sinks may commit up to it */
    bool wake;                  /* under run->mu: an acknowledgement came */
    bool abandon;               /* no final checkpoint: abandon the sinks */
    /* Restore (loaded before the subtasks open). */
    bool restored;
    uint64_t from;
    int old_P;
    uint8_t **src_pos; /* per source: every old subtask's connector
                          section, concatenated */
    size_t *src_pos_len;
    uint8_t **src_rd; /* per source and old subtask k, at
                         si * old_P + k: the reader section */
    size_t *src_rd_len;
    struct tdm__ckpt_reader *rd;
    /* The lineage (ckpt_lineage.c): its first checkpoint (0: none yet,
     * or restored from a checkpoint older than lineages), the newest
     * checkpoint durable when it began, and whether its old output has
     * been moved aside. */
    uint64_t line_first, line_committed;
    bool line_done;
    /* A fresh start: the lineage it replaces, whose move aside it
     * finishes first (0: none). */
    uint64_t old_first, old_committed;
} tdm__rt_ckpt;

/* A subtask's part in checkpoints (ckpt.c): the sink objects it writes
 * (two roles: a source's pass-through and dead letters, an operator's
 * results and late output; with checkpoints one object per writer) and
 * its acknowledgements.  acked, ended and the blobs are guarded by
 * run->mu once the thread runs. */
typedef struct tdm__rt_ck_slot {
    tdm__rt_sink *sink[2];
    tdm__sinkobj *obj[2];
    int w[2]; /* writer numbers (-1: none) */
    uint64_t acked, committed;
    bool ended;    /* no more barriers: fin is its final state */
    uint8_t *blob; /* its state at acked */
    size_t len;
    uint8_t *fin; /* its state once ended */
    size_t fin_len;
    uint8_t *sk[2]; /* pre_commit sections at acked */
    size_t sk_len[2];
    int64_t align_us; /* its alignment for acked: first barrier
                         in to the last (operators; sources 0) */
} tdm__rt_ck_slot;

struct tdm__run {
    tdm_job *job;
    tdm__run_record *rec; /* job->rec: the counters and run state */
    bool restarted;       /* an attempt after a failure (restart.c) */
    int P;
    int key_groups;
    uint16_t *owner; /* key group -> subtask */
    size_t batch_size;
    int qcap;
    tdm_time_ms guard;
    bool guard_dead;
    atomic_int abort;
    tdm__rt_source *srcs;
    int n_srcs;
    tdm__rt_source *dsrcs; /* derived sources (chaining), no thread each */
    int n_dsrcs;
    tdm__rt_op *ops;
    int n_ops;
    tdm__rt_sink *sinks;
    int n_sinks;
    tdm__rt_sink *dead;
    atomic_int bad_logged;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n_threads, n_done;
    tdm_err err;
    char errmsg[1024];
    bool debug; /* log.level debug */
    /* Cancel stops without draining (on_cancel stop, or auto with an
     * endless Kafka source): open windows are not written. */
    bool stop_on_cancel;
    bool any_v2;    /* some source commits (version 2) */
    bool any_early; /* some window fires before its watermark */
    tdm_time_ms commit_interval;
    bool flush_warned; /* the committer's flush failed last round */
    tdm__rt_align *aligns;
    int n_aligns;
    tdm__rt_ckpt ck;
    /* The subtasks, made and freed by run.c (the plan holds none):
     * src_tasks[s] are the P subtasks of srcs[s], dsrc_tasks[s] those of
     * the derived source dsrcs[s], op_tasks[o] those of ops[o]; NULL
     * (array or entry) until made.  Read them through the accessors
     * below. */
    tdm__rt_src_task **src_tasks;
    tdm__rt_src_task **dsrc_tasks;
    tdm__rt_op_task **op_tasks;
    /* What only the owner of the subtasks (run.c) can do, set before
     * planning: wake every subtask that may wait on a queue or a pool
     * (tdm__rt_fail), and take an alignment coordinator's announcements
     * to its source subtasks (the emit callback plan.c opens the
     * coordinators with; opaque is the tdm__rt_align). */
    void (*wake_all)(tdm__run *run);
    tdm_emit_cb align_emit;
};

/* The P subtasks of operator @p o (run->ops[o]), NULL before they are
 * made. */
static inline tdm__rt_op_task *tdm__rt_op_tasks(const tdm__run *run, int o)
{
    return run->op_tasks ? run->op_tasks[o] : NULL;
}
/* The P subtasks of source @p s (run->srcs[s]), NULL before they are
 * made. */
static inline tdm__rt_src_task *tdm__rt_src_tasks(const tdm__run *run, int s)
{
    return run->src_tasks ? run->src_tasks[s] : NULL;
}
/* The P subtasks (writers) of derived source @p s (run->dsrcs[s]), NULL
 * before they are made. */
static inline tdm__rt_src_task *tdm__rt_dsrc_tasks(const tdm__run *run, int s)
{
    return run->dsrc_tasks ? run->dsrc_tasks[s] : NULL;
}

/* A tdm_job_run's restarts: the attempt count and back-off. */
typedef struct tdm__rt_restart {
    int strategy;      /* 0 none, 1 fixed-delay, 2 exponential-delay */
    int64_t attempts;  /* restarts allowed in a row */
    int64_t in_row;    /* restarts since a checkpoint completed */
    int64_t delay_ms;  /* the next back-off */
    int64_t completed; /* checkpoints completed when it last looked */
} tdm__rt_restart;

/* Records the run's first error (message formatted), aborts the run and
 * wakes every waiting thread. */
void tdm__rt_fail(tdm__run *run, tdm_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds @p v to a job counter (relaxed). */
static inline void tdm__rt_count(tdm__run *run, tdm_stat s, int64_t v)
{
    if (v)
        atomic_fetch_add_explicit(&run->rec->stats[s], v, memory_order_relaxed);
}

/* ---- Services (rt_ctx.c) ---- */

/* Marks the calling subtask finished (the run thread waits for all). */
void tdm__rt_thread_done(tdm__run *run);
/* A clock reading the job's processing time. */
tdm_err tdm__rt_clock_new(tdm_job *job, tdm_clock **out);
/* The connectors' log callback (tdm__source_conf.log, sink conf.log):
 * one line of the job's log; @p ud is the tdm_job. */
void tdm__ctx_log_line(void *ud, const char *line);
/* Formats epoch ms as ISO-8601 with milliseconds ("none" for
 * TDM_TIME_MIN, "end" for TDM_TIME_MAX), for the debug log. */
void tdm__rt_format_ms(tdm_time_ms ms, char *buf, size_t n);
/* Renders key bytes of an operator as text: the key fields' values
 * joined by ','. */
void tdm__rt_key_text(const tdm__rt_op *op, const char *key, size_t len,
                      char *buf, size_t n);
/* Why a write to object @p obj of sink @p s failed, as " (<message>)"
 * in @p buf from the sink's last_error (connect.h, version 5); empty
 * when the sink cannot tell.  For the failure messages of the subtasks'
 * writes (task_op_emit.c, task_source.c). */
void tdm__rt_sink_why(const tdm__rt_sink *s, tdm__sinkobj *obj, char *buf,
                      size_t n);

#endif /* TDM_RT_CTX_H */
