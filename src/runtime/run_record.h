/* SPDX-License-Identifier: MIT */
/* run_record.h - the record of a job's runs: what a run changes and what
 * survives it, kept beside the job's definition (struct tdm_job, rt.h)
 * instead of inside it.
 *
 * The record is made with the job and freed with it (tdm_job_new and
 * tdm_job_destroy, job_api.c); the job points to it (job->rec) and the
 * definition's own code (job.c, conf.c, job_validate.c) only asks it
 * whether a run is going (tdm__run_record_running).  It holds two kinds
 * of state:
 *
 *   run state     running, cancel, savepoint, restarting, the counters,
 *                 start time, queue waits, live batches: atomics,
 *                 written by the run's threads (run.c, restart.c,
 *                 ckpt.c, queue.c, the subtasks) and read by any thread
 *                 through the public calls (job_api.c, job_facts.c);
 *   metrics side  the run snapshots read (mrun), the last run's final
 *                 snapshot, the window status memory and its callers,
 *                 the last checkpoint failure and the result latency:
 *                 guarded by mu (metrics.c, restart.c, run.c, the window
 *                 subtasks' status mailbox in task_op.c).
 *
 * Invariant: the atomics stay atomics and everything else is read and
 * written under mu; before the first run the counters read zero (the
 * watermark TDM_TIME_MIN) and the snapshots answer from the definition.
 */
#ifndef TDM_RT_RUN_RECORD_H
#define TDM_RT_RUN_RECORD_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/hist.h"
#include "runtime/rt.h"

struct tdm_metrics;
struct tdm__rt_warea;

struct tdm__run_record {
    /* Run state, readable from any thread. */
    atomic_int running;
    atomic_int cancel;
    atomic_int savepoint;  /* tdm_job_savepoint: the supervisor takes one */
    atomic_int restarting; /* waiting to restart (restart.c) */
    _Atomic int64_t stats[TDM_STAT_COUNT_];
    _Atomic int64_t start_ms;     /* processing time the run started */
    _Atomic int64_t queue_waits;  /* producer waits on a full queue */
    _Atomic int64_t batches_live; /* source batches allocated now */
    _Atomic int64_t batches_peak;
    tdm__run *run; /* the attempt going on (NULL: none) */
    /* Metrics (metrics.c): mmu guards mrun (the run snapshots read, set
     * while its subtasks exist), final (the last run's final snapshot),
     * warea (window status memory of the last run) and the window
     * status mailboxes; mcv wakes a run start or destroy waiting for the
     * status callers to leave. */
    pthread_mutex_t mmu;
    pthread_cond_t mcv;
    tdm__run *mrun;
    struct tdm_metrics *final;
    struct tdm__rt_warea *warea;
    int status_waiters;
    /* Why the last checkpoint failed (restart.c; "" none), for REST and
     * the diagnosis; guarded by mmu. */
    char ck_fail_msg[400];
    /* Result latency of the last run (us), merged from the window
     * subtasks as they finish; guarded by mmu (b NULL: none yet). */
    tdm__hist lat;
    /* Live settings (live.h): made by the run thread when a run starts,
     * swapped under mmu, freed by tdm__met_record_fini. */
    struct tdm__live *live;
};

/* Makes a record with every counter at its before-the-first-run value.
 * TDM_OK or TDM_ERR_NOMEM (*out NULL). */
tdm_err tdm__run_record_new(tdm__run_record **out);
/* Frees the record's lock, condition and latency histogram, then the
 * record (NULL is fine).  The metrics side frees what it hung on it
 * first (tdm__met_record_fini); no run may be going on. */
void tdm__run_record_free(tdm__run_record *rec);
/* Adds a finished window subtask's result latencies (us) to the
 * record's (tdm_job_result_latency); copies @p h's counts. */
void tdm__run_record_add_latency(tdm__run_record *rec, const tdm__hist *h);

#endif /* TDM_RT_RUN_RECORD_H */
