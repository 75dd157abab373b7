/* SPDX-License-Identifier: MIT */
/* run_tasks.c - `tidemark run` of a job with scale_out: tasks: the
 * process becomes a task host (tdm_taskhost_run; docs/scale-out.md) that
 * runs, each as a job of its own, the tasks the consumer group gives it.
 * The job file is loaded again for every task the host starts (with the
 * same --set and --log-level), so every task's job is a fresh copy of
 * what `validate` checked.  Log lines of a task's job say which task
 * they come from.  SIGINT and SIGTERM stop every task with a final
 * checkpoint and leave the group; a second signal kills the process.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The host a signal handler cancels (the one way a handler finds it);
 * set just before tdm_taskhost_run, cleared right after. */
static tdm_taskhost *volatile running_host;

/* SIGINT/SIGTERM: ask the host to stop (async-signal-safe). */
static void on_host_signal(int sig)
{
    static const char msg[] = "\ntidemark: stopping the tasks (final "
                              "checkpoints; signal again to kill)\n";
    tdm_taskhost *h = running_host;
    (void)sig;
    if (h != NULL)
        tdm_taskhost_cancel(h);
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
        /* Nothing to do: stderr is gone. */
    }
}

/* One task's log prefix, alive as long as the builder's context. */
typedef struct task_log {
    struct task_log *next;
    pthread_mutex_t *mu;
    int task;
} task_log;

typedef struct build_ctx {
    const tdm__cli_opts *opts;
    const char *log_level;
    pthread_mutex_t mu; /* one log line at a time */
    task_log *logs;
} build_ctx;

/* The log callback of the host and of every task's job. */
static void host_log(void *ud, const char *text)
{
    task_log *tl = ud;
    pthread_mutex_lock(tl->mu);
    if (tl->task >= 0)
        fprintf(stderr, "tidemark: task %d: %s\n", tl->task, text);
    else
        fprintf(stderr, "tidemark: %s\n", text);
    fflush(stderr);
    pthread_mutex_unlock(tl->mu);
}

/* A log prefix for task @p task (-1: the host), kept until the end. */
static task_log *new_log(build_ctx *b, int task)
{
    task_log *tl = calloc(1, sizeof *tl);
    if (tl == NULL)
        return NULL;
    tl->mu = &b->mu;
    tl->task = task;
    tl->next = b->logs;
    b->logs = tl;
    return tl;
}

/* tdm_task_build_cb: loads the job file again, with --set and
 * --log-level, and hands its job over. */
static tdm_err build_task(void *ud, int task, tdm_job **out, char *errbuf,
                          size_t errbuf_size)
{
    build_ctx *b = ud;
    tdm__cli_job *cj = NULL;
    task_log *tl = new_log(b, task);
    int rc = tl != NULL ? tdm__cli_job_prepare(b->opts, &cj, stderr)
                        : TDM_EXIT_RUNTIME;
    if (rc == TDM_EXIT_OK && b->log_level != NULL) {
        char arg[128];
        snprintf(arg, sizeof arg, "log.level=%s", b->log_level);
        rc = tdm__cli_job_override(cj, arg, stderr);
    }
    if (rc == TDM_EXIT_OK && tdm_job_set_log(cj->job, host_log, tl) != TDM_OK)
        rc = TDM_EXIT_RUNTIME;
    if (rc != TDM_EXIT_OK) {
        tdm__cli_job_free(cj);
        snprintf(errbuf, errbuf_size,
                 "the job file could not be loaded "
                 "again");
        return TDM_ERR_IO;
    }
    *out = cj->job;
    cj->job = NULL; /* the host owns it now */
    tdm__cli_job_free(cj);
    return TDM_OK;
}

/* Installs (or, with @p on == 0, restores) the stop handlers. */
static void host_signals(int on)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on ? on_host_signal : SIG_DFL;
    sa.sa_flags = on ? SA_RESETHAND : 0;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int tdm__cli_run_tasks(const tdm__cli_opts *opts, tdm__cli_job *def,
                       const char *log_level, tdm__cli_serve_fn *serve,
                       void *serve_ud)
{
    build_ctx b = {.opts = opts, .log_level = log_level};
    tdm_taskhost *h = NULL;
    tdm_http *srv = NULL;
    char msg[1500] = "";
    int rc = TDM_EXIT_RUNTIME;
    pthread_mutex_init(&b.mu, NULL);
    task_log *hl = new_log(&b, -1);
    if (hl == NULL || tdm_job_set_log(def->job, host_log, hl) != TDM_OK)
        goto out;
    tdm_err err =
        tdm_taskhost_new(def->job, build_task, &b, &h, msg, sizeof msg);
    if (err == TDM_OK && serve != NULL &&
        (rc = serve(serve_ud, h, def->job, &srv)) != TDM_EXIT_OK)
        goto out;
    if (err == TDM_OK) {
        running_host = h;
        host_signals(1);
        err = tdm_taskhost_run(h, msg, sizeof msg);
        host_signals(0);
        running_host = NULL;
    }
    if (err == TDM_OK) {
        fprintf(stderr, "tidemark: the task host stopped\n");
        rc = TDM_EXIT_OK;
    } else {
        fprintf(stderr, "tidemark: %s\n", msg[0] ? msg : tdm_strerror(err));
        rc = err == TDM_ERR_INVAL ? TDM_EXIT_INVALID : TDM_EXIT_RUNTIME;
    }
out:
    tdm_http_stop(srv); /* the host has stopped every task */
    tdm_taskhost_destroy(h);
    while (b.logs != NULL) {
        task_log *next = b.logs->next;
        free(b.logs);
        b.logs = next;
    }
    pthread_mutex_destroy(&b.mu);
    return rc;
}
