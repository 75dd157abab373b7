/* SPDX-License-Identifier: MIT */
/* test_live.c - live settings through the C API (tdm_job_config_*,
 * runtime/live.c, rules R-LV-1..R-LV-7): what is refused and why, a
 * change on a running job counted, listed, applied by every subtask
 * and read by the diagnosis, and a change kept by the checkpoint a
 * restored run resumes from.  The semantics of a change on the
 * watermarks are in test_wm_reader.c (reader_live_*) and end to end in
 * tests/cli/live.sh.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "server/view.h"
#include "testhooks.h"

#define BOUND "sources.in.watermark.max_out_of_orderness"
#define IDLE "sources.in.watermark.idle_timeout"
#define DRIFT "sources.in.watermark.alignment.max_drift"

static void quiet_log(void *ud, const char *line)
{
    (void)ud;
    if (getenv("LIVE_DEBUG"))
        fprintf(stderr, "log: %s\n", line);
}

static void nset(tdm_node *n, const char *k, const char *v)
{
    char err[256] = "";
    ASSERT_OK(tdm_node_set(n, k, v, err, sizeof err));
}

/* A generator "in" (endless unless @p records), bound 1 s, passed
 * through to a discard sink; @p ck: checkpoint folder or NULL. */
static tdm_job *gen_job(const char *records, const char *ck)
{
    tdm_job *job;
    char err[256] = "";
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_OK(tdm_job_set_log(job, quiet_log, NULL));
    ASSERT_OK(tdm_job_set(job, "name", "live", err, sizeof err));
    if (ck) {
        ASSERT_OK(tdm_job_set(job, "checkpoint.dir", ck, err, sizeof err));
        ASSERT_OK(tdm_job_set(job, "on_cancel", "stop", err, sizeof err));
    }
    tdm_node *s = NULL, *o = NULL;
    ASSERT_OK(
        tdm_job_add_node(job, TDM_NODE_SOURCE, "in", &s, err, sizeof err));
    nset(s, "type", "generator");
    nset(s, "generator.records", records);
    nset(s, "watermark.max_out_of_orderness", "1s");
    nset(s, "sink", "out");
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_SINK, "out", &o, err, sizeof err));
    nset(o, "type", "discard");
    return job;
}

/* The setting named @p key (it must exist). */
static tdm_live_setting setting(tdm_job *job, const char *key)
{
    tdm_live_setting s;
    for (size_t i = 0; i < tdm_job_config_count(job); i++) {
        ASSERT_OK(tdm_job_config_get(job, i, &s));
        if (strcmp(s.key, key) == 0)
            return s;
    }
    ASSERT_TRUE(!"no such setting");
    return s;
}

/* R-LV-1..R-LV-3: the error code and the reason. */
static void refused(tdm_job *job, const char *key, const char *value,
                    tdm_err want, const char *says)
{
    char err[512] = "";
    ASSERT_ERR(tdm_job_config_check(job, key, value, err, sizeof err), want);
    if (!strstr(err, says)) {
        fprintf(stderr, "%s=%s: \"%s\" does not say \"%s\"\n", key, value, err,
                says);
        ASSERT_TRUE(0);
    }
}

/* Before any run: the settings that apply are listed with the
 * definition's values; the others are refused with the reason; a change
 * is refused as the job does not run. */
TDM_TEST(settings_listed_and_refusals_explained)
{
    tdm_job *job = gen_job("10", NULL);
    char err[512] = "";
    /* Bound and idle timeout; no alignment group, so no drift. */
    ASSERT_EQ(tdm_job_config_count(job), 2);
    tdm_live_setting s = setting(job, BOUND);
    ASSERT_STR_EQ(s.value, "1s");
    ASSERT_EQ(s.value_ms, 1000);
    ASSERT_STR_EQ(s.origin, "job");
    ASSERT_EQ(s.changed_at, TDM_TIME_MIN);
    ASSERT_EQ(s.applied, 1);
    ASSERT_OK(tdm_job_config_check(job, BOUND, "8s", err, sizeof err));
    refused(job, "sources.in.watermark.bound", "8s", TDM_ERR_UNSUPPORTED,
            "cannot change while the job runs");
    refused(job, "sources.nope.watermark.idle_timeout", "1s", TDM_ERR_INVAL,
            "unknown key");
    refused(job, "windows.w.allowed_lateness", "1s", TDM_ERR_INVAL,
            "unknown key");
    refused(job, BOUND, "soon", TDM_ERR_INVAL, "not a duration");
    refused(job, IDLE, "-1s", TDM_ERR_INVAL, "must be >= 0");
    refused(job, DRIFT, "1s", TDM_ERR_UNSUPPORTED, "no alignment group");
    ASSERT_ERR(tdm_job_config_set(job, BOUND, "8s", "test", err, sizeof err),
               TDM_ERR_STATE);
    ASSERT_TRUE(strstr(err, "not running") != NULL);
    /* R-LV-2: a monotonous source has no bound; processing time has no
     * watermark at all. */
    tdm_node *in = tdm_job_node(job, "in");
    nset(in, "watermark.strategy", "monotonous");
    refused(job, BOUND, "8s", TDM_ERR_UNSUPPORTED, "monotonous");
    ASSERT_EQ(tdm_job_config_count(job), 1);
    nset(in, "time", "processing");
    refused(job, IDLE, "8s", TDM_ERR_UNSUPPORTED, "processing time");
    ASSERT_EQ(tdm_job_config_count(job), 0);
    tdm_job_destroy(job);
}

/* The job run in a thread. */
typedef struct runner {
    tdm_job *job;
    pthread_t th;
    tdm_err err;
    char msg[512];
} runner;

static void *run_main(void *arg)
{
    runner *r = arg;
    r->err = tdm_job_run(r->job, r->msg, sizeof r->msg);
    return NULL;
}

/* Starts @p job and returns once a live change is accepted: sets @p key
 * to @p value (retried while the run has not started). */
static void start_and_set(runner *r, tdm_job *job, const char *key,
                          const char *value)
{
    char err[512];
    memset(r, 0, sizeof *r);
    r->job = job;
    ASSERT_EQ(pthread_create(&r->th, NULL, run_main, r), 0);
    tdm_err e;
    long tries = 0;
    while ((e = tdm_job_config_set(job, key, value, "test", err, sizeof err)) ==
           TDM_ERR_STATE) {
        ASSERT_TRUE(++tries < 5000000);
        sched_yield();
    }
    ASSERT_OK(e);
}

/* Waits until every subtask runs with the settings (applied). */
static void wait_applied(tdm_job *job, const char *key)
{
    long tries = 0;
    while (!setting(job, key).applied) {
        ASSERT_TRUE(++tries < 5000000);
        sched_yield();
    }
}

/* Waits until @p key was restored from a checkpoint (the restore comes
 * after the run started, which may not have yet) and applied. */
static void wait_restored(tdm_job *job, const char *key)
{
    long tries = 0;
    while (strcmp(setting(job, key).origin, "checkpoint") != 0) {
        ASSERT_TRUE(++tries < 5000000);
        sched_yield();
    }
    wait_applied(job, key);
}

/* An empty checkpoint folder /tmp/TAG_PID into @p ck (64 bytes), and the
 * command that removes it into @p cmd (128 bytes). */
static void fresh_dir(const char *tag, char *ck, char *cmd)
{
    snprintf(ck, 64, "/tmp/%s_%ld", tag, (long)getpid());
    snprintf(cmd, 128, "rm -rf %s", ck);
    ASSERT_EQ(system(cmd), 0);
}

static void cancel_and_join(runner *r)
{
    tdm_job_cancel(r->job);
    ASSERT_EQ(pthread_join(r->th, NULL), 0);
    if (r->err != TDM_OK)
        fprintf(stderr, "run: %s\n", r->msg);
    ASSERT_OK(r->err);
}

/* A change on a running job at parallelism 2: stored, counted in
 * numConfigChanges, listed with its origin, applied by both subtasks;
 * the same value again changes nothing. */
TDM_TEST(change_on_a_running_job_is_applied_and_counted)
{
    tdm_job *job = gen_job("9223372036854775807", NULL);
    char err[256] = "";
    ASSERT_OK(tdm_job_set(job, "parallelism", "2", err, sizeof err));
    runner r;
    start_and_set(&r, job, BOUND, "8s");
    wait_applied(job, BOUND);
    ASSERT_OK(
        tdm_job_config_set(job, BOUND, "8000ms", "test", err, sizeof err));
    tdm_live_setting s = setting(job, BOUND);
    ASSERT_STR_EQ(s.value, "8s");
    ASSERT_STR_EQ(s.origin, "test");
    ASSERT_EQ(s.changes, 1);
    ASSERT_TRUE(s.changed_at != TDM_TIME_MIN);
    ASSERT_EQ(tdm_job_config_change_count(job), 1);
    tdm_live_change c;
    ASSERT_OK(tdm_job_config_change(job, 0, &c));
    ASSERT_STR_EQ(c.key, BOUND);
    ASSERT_STR_EQ(c.from, "1s");
    ASSERT_STR_EQ(c.to, "8s");
    ASSERT_ERR(tdm_job_config_change(job, 1, &c), TDM_ERR_RANGE);
    tdm_metrics *m = NULL;
    ASSERT_OK(tdm_job_metrics(job, &m));
    int64_t n = -1;
    ASSERT_EQ(tdm_metrics_find(m, TDM_METRIC_CONFIG_CHANGES, NULL, -1, -1, &n),
              1);
    ASSERT_EQ(n, 1);
    /* The diagnosis reads the value in force, not the job file's. */
    tdm__view w;
    ASSERT_OK(tdm__view_build(&w, job, m));
    ASSERT_EQ(
        tdm__view_source_setting(&w, "in", "watermark.max_out_of_orderness"),
        8000);
    ASSERT_EQ(tdm__view_idle_timeout(&w, "in"), 0);
    tdm__view_free(&w);
    tdm_metrics_free(m);
    cancel_and_join(&r);
    tdm_job_destroy(job);
}

/* R-LV-7: the final checkpoint of a cancelled run keeps the changed
 * bound; a fresh run of the same job restored from it runs with 8 s
 * (origin "checkpoint"), not the definition's 1 s. */
TDM_TEST(checkpoint_keeps_the_changed_values)
{
    char ck[64], cmd[128];
    fresh_dir("tdm_live", ck, cmd);
    tdm_job *job = gen_job("9223372036854775807", ck);
    runner r;
    start_and_set(&r, job, BOUND, "8s");
    wait_applied(job, BOUND);
    cancel_and_join(&r);
    tdm_job_destroy(job);

    job = gen_job("9223372036854775807", ck);
    ASSERT_STR_EQ(setting(job, BOUND).value, "1s");
    start_and_set(&r, job, IDLE, "5s");
    wait_restored(job, BOUND);
    tdm_live_setting s = setting(job, BOUND);
    ASSERT_STR_EQ(s.value, "8s");
    ASSERT_STR_EQ(s.origin, "checkpoint");
    cancel_and_join(&r);
    tdm_job_destroy(job);
    ASSERT_EQ(system(cmd), 0);
}

/* ---- Allowed lateness (windows.<name>.allowed_lateness) ---- */

#define LATE_W "windows.w.allowed_lateness"

/* An endless clicks generator "in" counted per user in window "w"
 * (@p type: tumbling, sliding or session), to a discard sink. */
static tdm_job *win_job(const char *type, const char *ck)
{
    tdm_job *job;
    char err[256] = "";
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_OK(tdm_job_set_log(job, quiet_log, NULL));
    ASSERT_OK(tdm_job_set(job, "name", "livew", err, sizeof err));
    ASSERT_OK(tdm_job_set(job, "parallelism", "2", err, sizeof err));
    if (ck) {
        ASSERT_OK(tdm_job_set(job, "checkpoint.dir", ck, err, sizeof err));
        ASSERT_OK(tdm_job_set(job, "on_cancel", "stop", err, sizeof err));
    }
    tdm_node *s = NULL, *w = NULL, *o = NULL;
    ASSERT_OK(
        tdm_job_add_node(job, TDM_NODE_SOURCE, "in", &s, err, sizeof err));
    nset(s, "type", "generator");
    nset(s, "generator.records", "9223372036854775807");
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_WINDOW, "w", &w, err, sizeof err));
    nset(w, "from", "in");
    nset(w, "key_by", "user");
    nset(w, "window.type", type);
    if (strcmp(type, "session") == 0) {
        nset(w, "window.gap", "1s");
    } else {
        nset(w, "window.size", "10s");
        if (strcmp(type, "sliding") == 0)
            nset(w, "window.slide", "5s");
    }
    nset(w, "aggregates", "count() as n");
    nset(w, "sink", "out");
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_SINK, "out", &o, err, sizeof err));
    nset(o, "type", "discard");
    return job;
}

/* R-LV-1, R-LV-2: an event-time tumbling window lists its lateness; a
 * session window, a processing-time one and another key of a window are
 * refused with the reason. */
TDM_TEST(lateness_listed_where_it_can_change)
{
    tdm_job *job = win_job("tumbling", NULL);
    tdm_live_setting s = setting(job, LATE_W);
    ASSERT_STR_EQ(s.value, "0ms");
    ASSERT_EQ(s.applied, 1);
    refused(job, LATE_W, "-1s", TDM_ERR_INVAL, "must be >= 0");
    refused(job, "windows.w.window.size", "1s", TDM_ERR_UNSUPPORTED,
            "live: windows.w.allowed_lateness");
    tdm_node *w = tdm_job_node(job, "w");
    nset(w, "window.time", "processing");
    refused(job, LATE_W, "1s", TDM_ERR_UNSUPPORTED, "processing time");
    tdm_job_destroy(job);
    job = win_job("session", NULL);
    refused(job, LATE_W, "1s", TDM_ERR_UNSUPPORTED, "sessions merge");
    ASSERT_EQ(tdm_job_config_count(job), 2); /* the source's two only */
    tdm_job_destroy(job);
}

/* R-LV-2: a sliding count without lateness runs in slices: once its
 * subtasks said so, a change is refused with what to do instead. */
TDM_TEST(lateness_of_a_sliced_window_refused_while_it_runs)
{
    tdm_job *job = win_job("sliding", NULL);
    runner r;
    start_and_set(&r, job, "sources.in.watermark.idle_timeout", "5s");
    char err[512] = "";
    ASSERT_ERR(tdm_job_config_set(job, LATE_W, "3s", "test", err, sizeof err),
               TDM_ERR_UNSUPPORTED);
    ASSERT_TRUE(strstr(err, "keep in slices") != NULL);
    cancel_and_join(&r);
    tdm_job_destroy(job);
}

/* R-LV-8, R-LV-7: a raised lateness reaches both subtasks, the
 * diagnosis reads it, and the final checkpoint keeps it: a fresh run
 * restored from it runs with 30 s (origin "checkpoint"). */
TDM_TEST(lateness_changed_applied_and_kept_by_checkpoints)
{
    char ck[64], cmd[128];
    fresh_dir("tdm_livew", ck, cmd);
    tdm_job *job = win_job("tumbling", ck);
    runner r;
    start_and_set(&r, job, LATE_W, "30s");
    wait_applied(job, LATE_W);
    ASSERT_EQ(tdm__job_live_value(job, LATE_W, 0), 30000);
    char err[256] = "";
    ASSERT_OK(tdm_job_config_set(job, LATE_W, "2s", "test", err, sizeof err));
    wait_applied(job, LATE_W);
    ASSERT_OK(tdm_job_config_set(job, LATE_W, "30s", "test", err, sizeof err));
    wait_applied(job, LATE_W);
    ASSERT_EQ(setting(job, LATE_W).changes, 3);
    cancel_and_join(&r);
    tdm_job_destroy(job);

    job = win_job("tumbling", ck);
    start_and_set(&r, job, "sources.in.watermark.idle_timeout", "5s");
    wait_restored(job, LATE_W);
    ASSERT_STR_EQ(setting(job, LATE_W).value, "30s");
    cancel_and_join(&r);
    tdm_job_destroy(job);
    ASSERT_EQ(system(cmd), 0);
}
