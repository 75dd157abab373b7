/* SPDX-License-Identifier: MIT */
/* run_record.c - making and freeing the record of a job's runs
 * (run_record.h): its atomics at their before-the-first-run values, its
 * lock and condition, and the one question the job's definition asks of
 * it, whether a run is going.
 *
 * Invariant: a record that tdm__run_record_new returned has its lock and
 * condition initialised, and tdm__run_record_free releases exactly those
 * and the latency histogram; what the metrics side hangs on it (final
 * snapshot, window status memory) is freed by tdm__met_record_fini
 * before.  Calls nothing in the runtime: job.c, job_api.c and metrics.c
 * sit above it.
 */
#include "runtime/run_record.h"

/* See run_record.h. */
tdm_err tdm__run_record_new(tdm__run_record **out)
{
    *out = NULL;
    tdm__run_record *rec = tdm__calloc(1, sizeof *rec);
    if (!rec)
        return TDM_ERR_NOMEM;
    if (pthread_mutex_init(&rec->mmu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&rec->mcv, NULL) != 0) {
        pthread_mutex_destroy(&rec->mmu);
        goto fail;
    }
    atomic_init(&rec->running, 0);
    atomic_init(&rec->cancel, 0);
    atomic_init(&rec->savepoint, 0);
    atomic_init(&rec->restarting, 0);
    for (int i = 0; i < TDM_STAT_COUNT_; i++)
        atomic_init(&rec->stats[i], 0);
    atomic_init(&rec->stats[TDM_STAT_WATERMARK], TDM_TIME_MIN);
    atomic_init(&rec->start_ms, 0);
    atomic_init(&rec->queue_waits, 0);
    atomic_init(&rec->batches_live, 0);
    atomic_init(&rec->batches_peak, 0);
    *out = rec;
    return TDM_OK;

fail:
    tdm__free(rec);
    return TDM_ERR_NOMEM;
}

/* See run_record.h. */
void tdm__run_record_free(tdm__run_record *rec)
{
    if (!rec)
        return;
    tdm__hist_fini(&rec->lat);
    pthread_cond_destroy(&rec->mcv);
    pthread_mutex_destroy(&rec->mmu);
    tdm__free(rec);
}

/* See rt.h: the definition refuses changes while this reads 1. */
int tdm__run_record_running(const tdm__run_record *rec)
{
    return atomic_load(&((tdm__run_record *)rec)->running) != 0;
}

/* Adds a finished window subtask's result latencies to the record's
 * (the histogram is created on first use; out of memory loses the
 * figures, not the run). */
void tdm__run_record_add_latency(tdm__run_record *rec, const tdm__hist *h)
{
    pthread_mutex_lock(&rec->mmu);
    if (rec->lat.b || tdm__hist_init(&rec->lat) == TDM_OK)
        tdm__hist_merge(&rec->lat, h);
    pthread_mutex_unlock(&rec->mmu);
}
