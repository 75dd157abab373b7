/* SPDX-License-Identifier: MIT */
/* job_api.c - the public tdm_job_* calls that touch both halves of a
 * job: its definition (job.c, conf.c, expr.c) and the record of its
 * runs (run_record.h, whose metrics side metrics.c keeps).  It sits
 * above both, so that neither reaches into the other: a job is made as
 * a definition plus an empty record, and destroyed record first; the
 * counters, cancel, savepoint and result latency are read and written
 * on the record.
 *
 * Invariant: every job handed out has a record (job->rec) from
 * tdm_job_new to tdm_job_destroy, so these calls work before the first
 * run, between runs and after, as the record's atomics and lock allow
 * from any thread; the run record goes first at destroy (its callers
 * are waited for), then the definition; destroying NULL does nothing.
 */
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "runtime/run_record.h"

/* Creates an empty job with every job key at its default. */
tdm_err tdm_job_new(tdm_job **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = NULL;
    tdm_job *job = NULL;
    if (tdm__job_alloc(&job) != TDM_OK)
        return TDM_ERR_NOMEM;
    if (tdm__run_record_new(&job->rec) != TDM_OK) {
        tdm__job_free(job);
        return TDM_ERR_NOMEM;
    }
    *out = job;
    return TDM_OK;
}

/* Frees the job and its nodes (NULL is fine). */
void tdm_job_destroy(tdm_job *job)
{
    if (!job)
        return;
    tdm__met_record_fini(job);
    tdm__job_free(job);
}

int64_t tdm_job_stat(const tdm_job *job, tdm_stat which)
{
    if (!job || (int)which < 0 || which >= TDM_STAT_COUNT_)
        return 0;
    tdm_job *j = (tdm_job *)job;
    tdm__run_record *rec = j->rec;
    if (which == TDM_STAT_ELAPSED_MS && atomic_load(&rec->running)) {
        int64_t start = atomic_load(&rec->start_ms);
        return tdm__job_now(j) - start;
    }
    return atomic_load_explicit(&rec->stats[which], memory_order_relaxed);
}

int64_t tdm__job_queue_waits(const tdm_job *job)
{
    return atomic_load(&job->rec->queue_waits);
}

int64_t tdm__job_batches_live(const tdm_job *job)
{
    return atomic_load(&job->rec->batches_live);
}

int64_t tdm__job_batches_peak(const tdm_job *job)
{
    return atomic_load(&job->rec->batches_peak);
}

/* Asks a running job to stop; async-signal-safe (one lock-free store). */
void tdm_job_cancel(tdm_job *job)
{
    if (job)
        atomic_store(&job->rec->cancel, 1);
}

void tdm_job_savepoint(tdm_job *job)
{
    if (job)
        atomic_store(&job->rec->savepoint, 1);
}

int64_t tdm_job_result_latency(const tdm_job *job, double q, int64_t *count)
{
    int64_t v = -1, n = 0;
    if (!job || q < 0 || q > 1) {
        if (count)
            *count = 0;
        return -1;
    }
    tdm__run_record *rec = job->rec;
    pthread_mutex_lock(&rec->mmu);
    if (rec->lat.b && rec->lat.n) {
        n = (int64_t)rec->lat.n;
        v = tdm__hist_quantile(&rec->lat, q);
    }
    pthread_mutex_unlock(&rec->mmu);
    if (count)
        *count = n;
    return v;
}
