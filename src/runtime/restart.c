/* SPDX-License-Identifier: MIT */
/* restart.c - what a failed checkpoint does to the job, and restarts
 * (Flink's tolerable-failed-checkpoints and restart strategies).
 *
 *   checkpoint 3 ok   4 failed   5 failed   ...   (tolerable_failed 1)
 *                     in a row 1: logged, the job goes on
 *                                in a row 2: the run fails -> restart
 *                                            strategy: back-off, then a
 *                                            new attempt restored from 3
 *
 * A checkpoint that cannot be written leaves the sinks' epochs since the
 * last one pending: hidden parts nobody reads.  Tolerated, the next
 * checkpoint's commit covers them; beyond checkpoint.tolerable_failed in
 * a row (default 0) the run fails, so that a full disk cannot hide the
 * output for the rest of the run.  The final checkpoint (end of input)
 * has no successor to cover it, so its failure always fails the run,
 * whose message says the output is pending until a run commits it.  A
 * savepoint's failure is only logged: it was asked for, not owed.
 *
 * A failed run with restart.strategy set runs again in the same process
 * (tdm_job_run's loop, run.c) after a back-off: a whole new attempt, as a
 * new process would make, restoring the newest checkpoint, so its output
 * is exactly the uninterrupted run's.  Only I/O and memory failures are
 * restarted: an invalid job, a locked directory or another job's
 * checkpoint fail the same way every time.  A checkpoint completed since
 * the last restart means the job made progress: the count of restarts in
 * a row and the back-off start over (Flink resets exponential-delay after
 * a quiet hour; tidemark's runs are often short, and progress is what
 * tells a passing fault from a lasting one).  docs/checkpoints.md,
 * "Failures".
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/ckpt.h"
#include "state/ckpt_store.h"

/* ---- Failed checkpoints ---- */

/* Whether every subtask has stopped: the checkpoint is the run's last
 * (tdm__rt_ckpt_final's), with no later one to commit what it covers. */
static bool at_end(tdm__run *run)
{
    pthread_mutex_lock(&run->mu);
    bool end = run->n_done >= run->n_threads;
    pthread_mutex_unlock(&run->mu);
    return end;
}

/* "checkpoint 4" (the newest completed or restored), or "the start". */
static void last_good(tdm__run *run, char *buf, size_t n)
{
    int64_t id = atomic_load(&run->rec->stats[TDM_STAT_CHECKPOINT_ID]);
    if (id < 0 && run->ck.restored)
        id = (int64_t)run->ck.from;
    if (id > 0)
        snprintf(buf, n, "checkpoint %lld", (long long)id);
    else
        snprintf(buf, n, "the start");
}

/* The text of the job's restart.strategy ("fixed-delay") in @p buf. */
static const char *strategy_text(const tdm_job *job, char *buf, size_t n)
{
    tdm__conf_enum_text(TDM__SCOPE_JOB, "restart.strategy",
                        job->spec.restart_strategy, buf, n);
    return buf;
}

/* What the operator does, for the run's error: "make room in ck and run
 * the job again (or set restart.strategy)". */
static void advice(const tdm_job *job, char *buf, size_t n)
{
    const char *dir = job->spec.checkpoint_dir;
    char name[32];
    if (job->spec.restart_strategy == TDM__RESTART_STRATEGY_NONE)
        snprintf(buf, n,
                 "make room in %s and run the job again (or set "
                 "restart.strategy)",
                 dir);
    else
        snprintf(buf, n,
                 "make room in %s; restart.strategy %s restarts "
                 "it",
                 dir, strategy_text(job, name, sizeof name));
}

/* Publishes failure @p why of checkpoint @p id; returns the failures in
 * a row, this one included. */
static int64_t count_failure(tdm_job *job, uint64_t id, const char *why)
{
    tdm__run_record *rec = job->rec;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    atomic_fetch_add(&rec->stats[TDM_STAT_CHECKPOINTS_FAILED], 1);
    atomic_store(&rec->stats[TDM_STAT_CHECKPOINT_FAILED_ID], (int64_t)id);
    atomic_store(&rec->stats[TDM_STAT_CHECKPOINT_FAILED_AT],
                 (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    pthread_mutex_lock(&rec->mmu);
    snprintf(rec->ck_fail_msg, sizeof rec->ck_fail_msg, "%s", why);
    pthread_mutex_unlock(&rec->mmu);
    return atomic_fetch_add(&rec->stats[TDM_STAT_CHECKPOINTS_FAILED_IN_ROW],
                            1) +
           1;
}

/* See ckpt.h. */
void tdm__rt_ckpt_outcome(tdm__run *run, uint64_t id, const char *why)
{
    tdm_job *job = run->job;
    if (!why) {
        atomic_store(&job->rec->stats[TDM_STAT_CHECKPOINTS_FAILED_IN_ROW], 0);
        return;
    }
    if (run->ck.pending_kind == TDM__CKPT_SAVEPOINT && !at_end(run)) {
        /* As in Flink, a savepoint is asked for, not owed: its failure
         * is the asker's to see, and the job's checkpoints go on. */
        atomic_fetch_add(&job->rec->stats[TDM_STAT_CHECKPOINTS_FAILED], 1);
        tdm__job_log(job,
                     "savepoint %llu failed: %s (the job goes on; ask "
                     "again once the cause is fixed)",
                     (unsigned long long)id, why);
        return;
    }
    int64_t n = count_failure(job, id, why);
    int64_t tol = job->spec.checkpoint_tolerable_failed;
    char good[64], todo[PATH_MAX + 80];
    last_good(run, good, sizeof good);
    advice(job, todo, sizeof todo);
    if (at_end(run)) {
        tdm__rt_fail(run, TDM_ERR_IO,
                     "checkpoint %llu at the end of input failed: %s; the "
                     "output since %s is pending (hidden .pending parts) and "
                     "will be committed by a restart, which resumes from %s: "
                     "%s",
                     (unsigned long long)id, why, good, good, todo);
        return;
    }
    if (n <= tol) {
        tdm__job_log(job,
                     "checkpoint %llu failed: %s (%lld in a row, "
                     "checkpoint.tolerable_failed %lld: the job goes "
                     "on; the next checkpoint retries)",
                     (unsigned long long)id, why, (long long)n, (long long)tol);
        return;
    }
    tdm__rt_fail(
        run, TDM_ERR_IO,
        "checkpoint %llu failed: %s; %lld failed in a row, more than "
        "checkpoint.tolerable_failed (%lld): the job fails (the output "
        "since %s stays pending until a restart commits it: %s)",
        (unsigned long long)id, why, (long long)n, (long long)tol, good, todo);
}

/* ---- Settings ---- */

static const char *const restart_keys[] = {
    "restart.strategy",  "restart.attempts",   "restart.delay",
    "restart.max_delay", "restart.multiplier", "checkpoint.tolerable_failed",
};

static bool key_set(const tdm_job *job, const char *key)
{
    return tdm__job_val(job, key)->set;
}

/* See ckpt.h.  Keys that would change nothing are refused rather than
 * ignored: a restart.attempts under strategy none reads like a promise
 * the runtime would not keep. */
const char *tdm__rt_restart_refusal(const tdm_job *job, char *buf, size_t n)
{
    tdm__restart_strategy strategy = job->spec.restart_strategy;
    char name[32];
    size_t n_keys = sizeof restart_keys / sizeof restart_keys[0];
    for (size_t i = 0; !*job->spec.checkpoint_dir && i < n_keys; i++)
        if (key_set(job, restart_keys[i])) {
            snprintf(buf, n,
                     "%s needs checkpoint.dir: a restart resumes "
                     "from the newest checkpoint, and a tolerated "
                     "failure is covered by the next one (set "
                     "checkpoint.dir or remove %s)",
                     restart_keys[i], restart_keys[i]);
            return buf;
        }
    /* restart_keys[1..2] apply to both strategies, [3..4] to
     * exponential-delay only. */
    for (size_t i = 1; i < 5; i++) {
        bool exp_only = i >= 3;
        if (!key_set(job, restart_keys[i]) ||
            strategy == TDM__RESTART_STRATEGY_EXPONENTIAL_DELAY ||
            (strategy == TDM__RESTART_STRATEGY_FIXED_DELAY && !exp_only))
            continue;
        snprintf(buf, n, "%s applies to restart.strategy %s only, not %s",
                 restart_keys[i],
                 exp_only ? "exponential-delay"
                          : "fixed-delay or exponential-delay",
                 strategy_text(job, name, sizeof name));
        return buf;
    }
    int64_t delay = job->spec.restart_delay_ms;
    int64_t max = job->spec.restart_max_delay_ms;
    if (strategy == TDM__RESTART_STRATEGY_EXPONENTIAL_DELAY && max < delay) {
        snprintf(buf, n,
                 "restart.max_delay (%lld ms) is below restart.delay "
                 "(%lld ms)",
                 (long long)max, (long long)delay);
        return buf;
    }
    return NULL;
}

/* ---- Restarts ---- */

/* See ckpt.h. */
void tdm__rt_restart_init(tdm__rt_restart *rs, const tdm_job *job)
{
    memset(rs, 0, sizeof *rs);
    rs->strategy = *job->spec.checkpoint_dir ? (int)job->spec.restart_strategy
                                             : TDM__RESTART_STRATEGY_NONE;
    rs->attempts = job->spec.restart_attempts;
    rs->delay_ms = job->spec.restart_delay_ms;
}

/* Failures a new attempt may not meet: I/O (a full disk, a broken
 * connection) and memory. */
static bool restartable(tdm_err err)
{
    return err == TDM_ERR_IO || err == TDM_ERR_NOMEM;
}

/* Sleeps @p ms in short steps, watching for tdm_job_cancel (which is a
 * signal handler's atomic store: nothing to wait on).  False: cancelled. */
static bool back_off(tdm_job *job, int64_t ms)
{
    int64_t until = tdm__mono_ms() + ms;
    atomic_store(&job->rec->restarting, 1);
    while (!atomic_load(&job->rec->cancel) && tdm__mono_ms() < until) {
        int64_t left = until - tdm__mono_ms();
        struct timespec ts = {0, (long)(left < 20 ? left : 20) * 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&job->rec->restarting, 0);
    return !atomic_load(&job->rec->cancel);
}

/* The back-off after the current one. */
static int64_t next_delay(const tdm__rt_restart *rs, const tdm_job *job)
{
    if (rs->strategy != TDM__RESTART_STRATEGY_EXPONENTIAL_DELAY)
        return rs->delay_ms;
    double d = (double)rs->delay_ms * job->spec.restart_multiplier;
    double max = (double)job->spec.restart_max_delay_ms;
    return (int64_t)(d < max ? d : max);
}

/* See ckpt.h. */
bool tdm__rt_restart_next(tdm__rt_restart *rs, tdm_job *job, tdm_err err,
                          char *errbuf, size_t errbuf_size)
{
    if (err == TDM_OK || rs->strategy == TDM__RESTART_STRATEGY_NONE ||
        !restartable(err) || atomic_load(&job->rec->cancel))
        return false;
    int64_t done = atomic_load(&job->rec->stats[TDM_STAT_CHECKPOINTS]);
    if (done != rs->completed) { /* progress: start over */
        rs->completed = done;
        rs->in_row = 0;
        rs->delay_ms = job->spec.restart_delay_ms;
    }
    char name[32];
    strategy_text(job, name, sizeof name);
    if (rs->in_row >= rs->attempts) {
        size_t used = errbuf ? strlen(errbuf) : 0;
        if (errbuf && used + 1 < errbuf_size)
            snprintf(errbuf + used, errbuf_size - used,
                     " (restart.strategy %s gave up after %lld restarts in "
                     "a row: restart.attempts)",
                     name, (long long)rs->in_row);
        return false;
    }
    rs->in_row++;
    atomic_fetch_add(&job->rec->stats[TDM_STAT_RESTARTS], 1);
    tdm__job_log(job,
                 "restart %lld of %lld (restart.strategy %s) in %lld "
                 "ms, from the newest checkpoint, after: %s",
                 (long long)rs->in_row, (long long)rs->attempts, name,
                 (long long)rs->delay_ms,
                 errbuf && *errbuf ? errbuf : tdm_strerror(err));
    int64_t wait = rs->delay_ms;
    rs->delay_ms = next_delay(rs, job);
    return back_off(job, wait);
}
