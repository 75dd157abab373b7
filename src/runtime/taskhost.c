/* SPDX-License-Identifier: MIT */
/* taskhost.c - the task host: one process's share of a job run as tasks
 * (scale_out: tasks; docs/scale-out.md, tidemark.h "Tasks").
 *
 * A task is partition n of every input topic and the state of the keys
 * those partitions carry.  The host runs each task it holds as a job of
 * its own (built by the caller's callback, then given checkpoint.dir
 * <dir>/task-<n>, task.id n and the owner epoch), on a thread of its
 * own, so a task's windows, timers, watermark generators and valve,
 * sink transactions and checkpoints are the task's alone and move with
 * it: a new owner restores the task's newest checkpoint (state,
 * watermarks, offsets, pending sink output) before it reads a record.
 *
 * Who holds what is the consumer group's call (kafka_members.c): the
 * host's thread polls the group; an assignment marks a task wanted and
 * the loop starts it after the poll; a revoke stops the task inside the
 * poll (a cancel: the task's final checkpoint holds its open windows)
 * before the group may hand it on.  Before a task starts, the host takes
 * its owner file (task_owner.c), so a process that still runs the task
 * without knowing it lost it stops at its next checkpoint without
 * writing, and waits while an older owner in this machine still holds
 * the task's checkpoint lock.
 *
 * Invariant: a task runs in at most one thread of this process, and
 * only while the group gives it to this process, or while it is being
 * stopped inside the revoke that takes it away.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/rt.h"
#include "runtime/rt_ctx.h"
#include "runtime/task_changelog.h"
#include "runtime/task_group.h"
#include "runtime/task_owner.h"

/* How long the group is polled per loop (ms): how soon a cancel, a
 * finished task or a retry is seen. */
#define TH_POLL_MS 100
/* How long before a task whose checkpoints another owner still locks is
 * tried again (ms). */
#define TH_RETRY_MS 500
/* How long before a take that the brokers did not answer (or that
 * another process won) is tried again (ms). */
#define TH_TAKE_RETRY_MS 2000

typedef struct hosted {
    tdm_job *job;
    struct tdm__tclog *clog; /* checkpoint.store: changelog; else NULL */
    pthread_t th;
    bool started;        /* the thread exists */
    atomic_bool ended;   /* the thread returned */
    bool want;           /* the group gives the task to this process */
    bool finished;       /* ended at the end of its input, still held */
    bool waiting_logged; /* "waiting for the previous owner" said */
    int64_t retry_at;    /* monotonic ms before which it is not started */
    tdm_err err;
    char msg[1024];
    /* A take in progress (tdm_taskhost_restoring reads it): its changelog
     * read's offset and end. */
    atomic_bool restoring;
    atomic_llong rs_offset, rs_end;
} hosted;

struct tdm_taskhost {
    tdm_job *def;
    tdm_task_build_cb build;
    void *ud;
    atomic_int cancel;
    tdm__task_group g;  /* the group, from the definition's sources */
    tdm__kmembers *mem; /* the group membership, while running */
    int n_tasks;
    hosted *t;
    pthread_mutex_t mu;      /* t[].started, for tdm_taskhost_tasks */
    tdm_task_watch_cb watch; /* told of each task job's start and end */
    void *watch_ud;
    tdm_err fail;
    char failmsg[1200];
    /* checkpoint.store: changelog: the topic's name; with standby: all,
     * a warm copy of each task not run here (standby_main), under
     * sb_mu with busy[] (a task run here, or starting). */
    char cltopic[600];
    tdm__tclog_standby **sb;
    bool *busy;
    bool *sb_said; /* a standby's failure was logged */
    bool *sb_poll; /* the standby thread reads it, out of sb_mu */
    pthread_mutex_t sb_mu;
    pthread_cond_t sb_cv; /* a read of a standby ended */
    pthread_t sb_th;
    bool sb_started;
    atomic_int sb_stop;
};

/* ---- One task ---- */

/* The thread of a task: runs its job. */
static void *task_main(void *arg)
{
    hosted *t = arg;
    t->err = tdm_job_run(t->job, t->msg, sizeof t->msg);
    atomic_store(&t->ended, true);
    return NULL;
}

/* "<dir>/task-<n>" into @p out. */
static void task_dir(const tdm_taskhost *h, int n, char *out, size_t len)
{
    snprintf(out, len, "%s/task-%d", h->def->spec.checkpoint_dir, n);
}

/* Gives the built job of task @p n its keys and validates it. */
static tdm_err task_keys(tdm_taskhost *h, int n, int64_t epoch, tdm_job *job,
                         char *errbuf, size_t errbuf_size)
{
    char dir[TDM__TASK_PATH_MAX], num[32], ep[32];
    task_dir(h, n, dir, sizeof dir);
    snprintf(num, sizeof num, "%d", n);
    snprintf(ep, sizeof ep, "%lld", (long long)epoch);
    tdm_err err = tdm_job_set(job, "checkpoint.dir", dir, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm_job_set(job, "task.id", num, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm_job_set(job, "task.epoch", ep, errbuf, errbuf_size);
    if (err == TDM_OK &&
        h->def->spec.checkpoint_store == TDM__CHECKPOINT_STORE_CHANGELOG)
        err = tdm_job_set(job, "checkpoint.changelog.topic", h->cltopic, errbuf,
                          errbuf_size);
    if (err == TDM_OK)
        err = tdm_job_validate(job, errbuf, errbuf_size);
    return err;
}

/* A task's durable input position, committed to the group by this
 * host's member (only a member may commit to a group with members);
 * on the task's thread, while the host's poll or its stop of the task
 * runs, so the membership is open. */
static void task_commit(void *ud, const char *topic, int32_t part,
                        int64_t offset, const char *meta)
{
    tdm_taskhost *h = ud;
    tdm__kmembers_commit(h->mem, topic, part, offset, meta);
}

/* The changelog partition of task @p n. */
static tdm__tclog_conf changelog_conf(const tdm_taskhost *h, int n)
{
    tdm__tclog_conf c = {
        .brokers = h->g.mc.brokers,
        .props = h->g.mc.props,
        .n_props = h->g.mc.n_props,
        .topic = h->cltopic,
        .task = n,
        .log = h->g.mc.log,
        .log_ud = h->g.mc.log_ud,
    };
    return c;
}

/* How far the take of a task got (tdm__tclog_conf.progress). */
static void on_restore_progress(void *ud, int64_t offset, int64_t end)
{
    hosted *t = ud;
    atomic_store(&t->rs_offset, offset);
    atomic_store(&t->rs_end, end);
}

/* Takes task @p n for this process before its job is built: its owner
 * epoch in *epoch, and with checkpoint.store: changelog its partition of
 * the changelog topic in *clog, the task's newest checkpoint restored
 * from it into @p dir (task_changelog.c), from where the task's standby
 * got to when there is one; else the owner file beside @p dir
 * (task_owner.c). */
static tdm_err take_task(tdm_taskhost *h, int n, const char *dir,
                         tdm__tclog **clog, int64_t *epoch, char *msg,
                         size_t len)
{
    tdm__tclog_took took;
    if (h->def->spec.checkpoint_store != TDM__CHECKPOINT_STORE_CHANGELOG)
        return tdm__task_owner_take(dir, epoch, msg, len); /* R-TH-6 */
    tdm__tclog_standby *sb = NULL;
    pthread_mutex_lock(&h->sb_mu);
    while (h->sb && h->sb_poll[n])
        pthread_cond_wait(&h->sb_cv, &h->sb_mu); /* one read's wait */
    if (h->sb) {
        sb = h->sb[n];
        h->sb[n] = NULL;
        h->busy[n] = true;
    }
    pthread_mutex_unlock(&h->sb_mu);
    tdm__tclog_conf c = changelog_conf(h, n);
    hosted *t = &h->t[n];
    c.progress = on_restore_progress;
    c.progress_ud = t;
    atomic_store(&t->rs_offset, 0);
    atomic_store(&t->rs_end, 0);
    atomic_store(&t->restoring, true); /* R-TH-8: GET /tasks shows it */
    tdm_err err = tdm__tclog_take(&c, dir, sb, clog, &took, msg, len);
    atomic_store(&t->restoring, false);
    *epoch = took.epoch;
    return err;
}

/* A task leaves this process (or never started): its standby may be
 * kept again. */
static void task_gone(tdm_taskhost *h, int n)
{
    pthread_mutex_lock(&h->sb_mu);
    if (h->busy)
        h->busy[n] = false;
    pthread_mutex_unlock(&h->sb_mu);
}

/* Starts task @p n: waits (by returning with retry_at set) while its
 * checkpoints are locked by a previous owner here, takes its owner file,
 * builds its job and starts its thread.  TDM_OK (started or waiting),
 * else an error with h->failmsg set. */
static tdm_err start_task(tdm_taskhost *h, int n)
{
    hosted *t = &h->t[n];
    char dir[TDM__TASK_PATH_MAX], msg[1024] = "";
    int64_t epoch = 0;
    task_dir(h, n, dir, sizeof dir);
    if (!tdm__task_owner_lock_free(dir)) {
        /* R-TH-1: an older owner in this machine still runs it. */
        if (!t->waiting_logged)
            tdm__job_log(h->def,
                         "task %d: waiting for its previous owner to let go "
                         "of %s",
                         n, dir);
        t->waiting_logged = true;
        t->retry_at = tdm__mono_ms() + TH_RETRY_MS;
        return TDM_OK;
    }
    tdm_err err = take_task(h, n, dir, &t->clog, &epoch, msg, sizeof msg);
    bool changelog =
        h->def->spec.checkpoint_store == TDM__CHECKPOINT_STORE_CHANGELOG;
    if (changelog && (err == TDM_ERR_IO || err == TDM_ERR_STATE)) {
        /* R-TH-10: the brokers did not answer, or another process took
         * the task in the same instant: tried again while the group
         * gives it to this process. */
        tdm__job_log(h->def, "task %d: %s (trying again)", n, msg);
        task_gone(h, n);
        t->retry_at = tdm__mono_ms() + TH_TAKE_RETRY_MS;
        return TDM_OK;
    }
    if (err == TDM_OK)
        err = h->build(h->ud, n, &t->job, msg, sizeof msg);
    if (err == TDM_OK)
        err = task_keys(h, n, epoch, t->job, msg, sizeof msg);
    if (err == TDM_OK) {
        /* R-TH-2: the task's durable positions, for lag tools. */
        t->job->task_commit = task_commit;
        t->job->task_commit_ud = h;
        t->job->changelog = t->clog;
    }
    if (err == TDM_OK && h->watch)
        h->watch(h->watch_ud, n, t->job, epoch); /* R-TH-4: before it runs */
    if (err == TDM_OK) {
        atomic_store(&t->ended, false);
        if (pthread_create(&t->th, NULL, task_main, t) != 0)
            err = tdm__errf(msg, sizeof msg, TDM_ERR_NOMEM,
                            "cannot start a thread");
        if (err != TDM_OK && h->watch)
            h->watch(h->watch_ud, n, NULL, 0);
    }
    if (err != TDM_OK) {
        tdm_job_destroy(t->job);
        t->job = NULL;
        tdm__tclog_close(t->clog);
        t->clog = NULL;
        task_gone(h, n);
        snprintf(h->failmsg, sizeof h->failmsg, "task %d: %s", n, msg);
        return err;
    }
    pthread_mutex_lock(&h->mu);
    t->started = true;
    pthread_mutex_unlock(&h->mu);
    t->waiting_logged = false;
    tdm__job_log(h->def, "task %d started (owner epoch %lld, %s)", n,
                 (long long)epoch, dir);
    return TDM_OK;
}

/* Joins the thread of task @p n (ended or cancelled) and frees its job;
 * returns how it ended. */
static tdm_err reap_task(tdm_taskhost *h, int n, char *msg, size_t len)
{
    hosted *t = &h->t[n];
    pthread_join(t->th, NULL);
    tdm_err err = t->err;
    snprintf(msg, len, "%s", t->msg);
    pthread_mutex_lock(&h->mu);
    t->started = false;
    pthread_mutex_unlock(&h->mu);
    if (h->watch)
        h->watch(h->watch_ud, n, NULL, 0); /* R-TH-5: before it goes */
    tdm_job_destroy(t->job);
    t->job = NULL;
    tdm__tclog_close(t->clog);
    t->clog = NULL;
    task_gone(h, n);
    return err;
}

/* Stops task @p n (a revoke, a cancel, a failure elsewhere): the job's
 * cancel writes its final checkpoint, with the open windows in it. */
static void stop_task(tdm_taskhost *h, int n, const char *why)
{
    hosted *t = &h->t[n];
    char msg[1024];
    if (!t->started)
        return;
    /* A cancel made before the thread's tdm_job_run began is forgotten
     * by it: asked again until the thread returns. */
    while (!atomic_load(&t->ended)) {
        tdm_job_cancel(t->job);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    tdm_err err = reap_task(h, n, msg, sizeof msg);
    bool moved = !strcmp(why, "lost") || !strcmp(why, "revoked");
    if (err == TDM_ERR_STATE && moved)
        /* R-TH-11: the group took it away and a new owner already holds
         * it: expected, the process goes on with its other tasks. */
        tdm__job_log(h->def, "task %d stopped (%s): %s", n, why, msg);
    else if (err != TDM_OK && h->fail == TDM_OK && err != TDM_ERR_STATE)
        tdm__job_log(h->def, "task %d stopped (%s) with an error: %s", n, why,
                     msg);
    else if (err == TDM_ERR_STATE && h->fail == TDM_OK) {
        h->fail = err;
        snprintf(h->failmsg, sizeof h->failmsg, "task %d: %s", n, msg);
    } else
        tdm__job_log(h->def, "task %d stopped (%s)", n, why);
}

/* The group's word on task @p n (kafka_members.c; on the host's
 * thread, inside a poll). */
static void on_change(void *ud, int n, tdm__km_event ev, bool lost)
{
    tdm_taskhost *h = ud;
    if (n < 0 || n >= h->n_tasks)
        return;
    if (ev == TDM__KM_ASSIGNED) {
        h->t[n].want = true;
        h->t[n].retry_at = 0;
        return;
    }
    if (ev == TDM__KM_LEAVING) {
        /* R-TH-12: asked now, waited for at TDM__KM_REVOKED, so that the
         * revoked tasks write their final checkpoints side by side. */
        if (h->t[n].started)
            tdm_job_cancel(h->t[n].job);
        return;
    }
    h->t[n].want = false;
    h->t[n].finished = false;
    stop_task(h, n, lost ? "lost" : "revoked");
}

/* ---- Standbys (checkpoint.changelog.standby: all) ---- */

/* How often standbys read their partitions (ms): the checkpoint
 * interval, within these bounds. */
#define TH_SB_MIN_MS 100
#define TH_SB_MAX_MS 5000

/* Opens or polls the standby of task @p n: called and returning under
 * sb_mu, which it lets go of for the reads (sb_poll[n] marks the
 * standby taken meanwhile, so a take waits for it). */
static void keep_warm(tdm_taskhost *h, int n)
{
    char msg[600];
    int64_t got = 0;
    tdm__tclog_conf c = changelog_conf(h, n);
    tdm__tclog_standby *sb = h->sb[n];
    tdm_err err = TDM_OK;
    h->sb_poll[n] = true;
    pthread_mutex_unlock(&h->sb_mu);
    if (!sb)
        err = tdm__tclog_standby_open(&c, &sb, msg, sizeof msg);
    if (err == TDM_OK)
        err = tdm__tclog_standby_poll(sb, &got, msg, sizeof msg);
    if (err != TDM_OK) {
        /* R-TH-7: dropped and opened again; said once until it works. */
        tdm__tclog_standby_close(sb);
        sb = NULL;
        if (!h->sb_said[n])
            tdm__job_log(h->def, "task %d: standby: %s (trying again)", n, msg);
    }
    pthread_mutex_lock(&h->sb_mu);
    h->sb_said[n] = err != TDM_OK;
    h->sb[n] = sb;
    h->sb_poll[n] = false;
    pthread_cond_broadcast(&h->sb_cv);
}

/* The standbys' thread: keeps each task not run here warm. */
static void *standby_main(void *arg)
{
    tdm_taskhost *h = arg;
    int64_t every = h->def->spec.checkpoint_interval_ms;
    every = every < TH_SB_MIN_MS   ? TH_SB_MIN_MS
            : every > TH_SB_MAX_MS ? TH_SB_MAX_MS
                                   : every;
    while (!atomic_load(&h->sb_stop)) {
        for (int n = 0; n < h->n_tasks && !atomic_load(&h->sb_stop); n++) {
            pthread_mutex_lock(&h->sb_mu);
            if (!h->busy[n])
                keep_warm(h, n);
            pthread_mutex_unlock(&h->sb_mu);
        }
        int64_t until = tdm__mono_ms() + every;
        while (!atomic_load(&h->sb_stop) && tdm__mono_ms() < until) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

/* Starts the standbys' thread when the job asks for standbys. */
static tdm_err standbys_start(tdm_taskhost *h)
{
    const tdm__job_spec *sp = &h->def->spec;
    if (sp->checkpoint_store != TDM__CHECKPOINT_STORE_CHANGELOG ||
        sp->checkpoint_changelog_standby !=
            TDM__CHECKPOINT_CHANGELOG_STANDBY_ALL)
        return TDM_OK;
    h->sb = tdm__calloc((size_t)h->n_tasks + 1, sizeof *h->sb);
    h->busy = tdm__calloc((size_t)h->n_tasks + 1, sizeof *h->busy);
    h->sb_said = tdm__calloc((size_t)h->n_tasks + 1, sizeof *h->sb_said);
    h->sb_poll = tdm__calloc((size_t)h->n_tasks + 1, sizeof *h->sb_poll);
    if (!h->sb || !h->busy || !h->sb_said || !h->sb_poll)
        return TDM_ERR_NOMEM;
    if (pthread_create(&h->sb_th, NULL, standby_main, h) != 0)
        return TDM_ERR_NOMEM;
    h->sb_started = true;
    tdm__job_log(h->def,
                 "standbys: a warm copy of every task not run here, from "
                 "'%s'",
                 h->cltopic);
    return TDM_OK;
}

/* Stops the standbys' thread and frees the standbys. */
static void standbys_stop(tdm_taskhost *h)
{
    if (h->sb_started) {
        atomic_store(&h->sb_stop, 1);
        pthread_join(h->sb_th, NULL);
        h->sb_started = false;
    }
    for (int n = 0; h->sb && n < h->n_tasks; n++)
        tdm__tclog_standby_close(h->sb[n]);
    pthread_mutex_lock(&h->sb_mu);
    tdm__free(h->sb);
    tdm__free(h->busy);
    tdm__free(h->sb_said);
    tdm__free(h->sb_poll);
    h->sb = NULL;
    h->busy = NULL;
    h->sb_said = NULL;
    h->sb_poll = NULL;
    pthread_mutex_unlock(&h->sb_mu);
}

/* ---- The loop ---- */

/* Reaps the tasks whose threads returned: at the end of their input they
 * stay held as finished; a failure fails the host. */
static void reap_ended(tdm_taskhost *h)
{
    for (int n = 0; n < h->n_tasks && h->fail == TDM_OK; n++) {
        hosted *t = &h->t[n];
        char msg[1024];
        if (!t->started || !atomic_load(&t->ended))
            continue;
        tdm_err err = reap_task(h, n, msg, sizeof msg);
        if (err == TDM_OK) {
            t->finished = true; /* R-TH-2 */
            tdm__job_log(h->def, "task %d finished", n);
            continue;
        }
        if (err == TDM_ERR_STATE && !t->want) {
            /* R-TH-11: taken over after the group moved it. */
            tdm__job_log(h->def, "task %d stopped (moved): %s", n, msg);
            continue;
        }
        h->fail = err; /* R-TH-3 */
        snprintf(h->failmsg, sizeof h->failmsg, "task %d: %s", n, msg);
    }
}

/* Starts every wanted task not running, finished or waiting. */
static void start_wanted(tdm_taskhost *h)
{
    int64_t now = tdm__mono_ms();
    for (int n = 0; n < h->n_tasks && h->fail == TDM_OK; n++) {
        hosted *t = &h->t[n];
        if (t->want && !t->started && !t->finished && now >= t->retry_at) {
            tdm_err err = start_task(h, n);
            if (err != TDM_OK)
                h->fail = err;
        }
    }
}

/* True when every source stops at the end of its input and every task
 * this process holds has finished (at least one held). */
static bool all_finished(const tdm_taskhost *h)
{
    int held = 0;
    if (!h->g.stop_at_end)
        return false;
    for (int n = 0; n < h->n_tasks; n++) {
        if (h->t[n].want && !h->t[n].finished)
            return false;
        held += h->t[n].want;
    }
    return held > 0;
}

/* Creates @p dir and its parents (mkdir -p).  TDM_OK or TDM_ERR_IO. */
static tdm_err make_dirs(const char *dir, char *errbuf, size_t errbuf_size)
{
    char p[TDM__TASK_PATH_MAX];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "%s: %s", p,
                             strerror(errno));
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "%s: %s", p,
                         strerror(errno));
    return TDM_OK;
}

tdm_err tdm_taskhost_new(tdm_job *def, tdm_task_build_cb build, void *ud,
                         tdm_taskhost **out, char *errbuf, size_t errbuf_size)
{
    tdm_taskhost *h = NULL;
    if (!out || !def || !build)
        return TDM_ERR_INVAL;
    *out = NULL;
    if (def->spec.scale_out != TDM__SCALE_OUT_TASKS || def->spec.task_id >= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "not a job run as tasks (scale_out: tasks)");
    h = tdm__calloc(1, sizeof *h);
    if (!h)
        return TDM_ERR_NOMEM;
    h->def = def;
    h->build = build;
    h->ud = ud;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->sb_mu, NULL);
    pthread_cond_init(&h->sb_cv, NULL);
    if (tdm__task_group_init(&h->g, def, "") != TDM_OK)
        goto nomem;
    if (def->spec.checkpoint_changelog_topic &&
        *def->spec.checkpoint_changelog_topic)
        snprintf(h->cltopic, sizeof h->cltopic, "%s",
                 def->spec.checkpoint_changelog_topic);
    else
        snprintf(h->cltopic, sizeof h->cltopic, "%s-changelog", h->g.group);
    *out = h;
    return TDM_OK;
nomem:
    tdm_taskhost_destroy(h);
    return TDM_ERR_NOMEM;
}

/* Polls the group and keeps the held tasks running until a cancel, a
 * failure or the end of every held task's input. */
static void serve(tdm_taskhost *h)
{
    char msg[600];
    while (!atomic_load(&h->cancel) && h->fail == TDM_OK) {
        tdm_err err = tdm__kmembers_poll(h->mem, TH_POLL_MS, on_change, h, msg,
                                         sizeof msg);
        if (err != TDM_OK) {
            h->fail = err;
            snprintf(h->failmsg, sizeof h->failmsg, "%s", msg);
            break;
        }
        reap_ended(h);
        start_wanted(h);
        if (all_finished(h))
            break;
    }
}

tdm_err tdm_taskhost_run(tdm_taskhost *h, char *errbuf, size_t errbuf_size)
{
    tdm_err err = make_dirs(h->def->spec.checkpoint_dir, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    int n_tasks = 0;
    err = tdm__kmembers_open(&h->g.mc, &h->mem, &n_tasks, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    hosted *t = tdm__calloc((size_t)n_tasks + 1, sizeof *t);
    pthread_mutex_lock(&h->mu); /* R-TH-9: HTTP threads read both */
    h->t = t;
    h->n_tasks = t ? n_tasks : 0;
    pthread_mutex_unlock(&h->mu);
    if (!h->t) {
        tdm__kmembers_close(h->mem, NULL, NULL);
        h->mem = NULL;
        return TDM_ERR_NOMEM;
    }
    tdm__job_log(h->def,
                 "tasks: %d (partitions of '%s' and its co-partitioned "
                 "topics), group '%s'",
                 h->n_tasks, h->g.mc.topics[0], h->g.mc.group);
    err = standbys_start(h);
    if (err != TDM_OK) {
        h->fail = err;
        snprintf(h->failmsg, sizeof h->failmsg,
                 "cannot start the standbys' thread");
    }
    serve(h);
    standbys_stop(h);
    for (int n = 0; n < h->n_tasks; n++)
        stop_task(h, n, h->fail != TDM_OK ? "the host stops" : "cancelled");
    tdm__kmembers_close(h->mem, on_change, h);
    h->mem = NULL;
    if (h->fail != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, h->fail, "%s", h->failmsg);
    return TDM_OK;
}

void tdm_taskhost_cancel(tdm_taskhost *h)
{
    if (h)
        atomic_store(&h->cancel, 1);
}

int tdm_taskhost_tasks(tdm_taskhost *h, int *tasks, int n)
{
    int k = 0;
    pthread_mutex_lock(&h->mu);
    for (int i = 0; h->t && i < h->n_tasks; i++)
        if (h->t[i].started) {
            if (k < n)
                tasks[k] = i;
            k++;
        }
    pthread_mutex_unlock(&h->mu);
    return k;
}

int tdm_taskhost_restoring(tdm_taskhost *h, tdm_task_restore *out, int n)
{
    int k = 0;
    pthread_mutex_lock(&h->mu);
    for (int i = 0; h->t && i < h->n_tasks; i++) {
        hosted *t = &h->t[i];
        if (!atomic_load(&t->restoring))
            continue;
        if (k < n) {
            out[k].task = i;
            out[k].offset = atomic_load(&t->rs_offset);
            out[k].end = atomic_load(&t->rs_end);
        }
        k++;
    }
    pthread_mutex_unlock(&h->mu);
    return k;
}

void tdm_taskhost_watch(tdm_taskhost *h, tdm_task_watch_cb cb, void *ud)
{
    if (!h)
        return;
    h->watch = cb;
    h->watch_ud = ud;
}

void tdm_taskhost_destroy(tdm_taskhost *h)
{
    if (!h)
        return;
    tdm__free(h->t);
    tdm__task_group_fini(&h->g);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->sb_mu);
    pthread_cond_destroy(&h->sb_cv);
    tdm__free(h);
}
