/* SPDX-License-Identifier: MIT */
/* test_diagnose.c - the diagnosis (src/server/diagnose.c) on real jobs:
 * small jobs run through the public job API with the runtime's test
 * hooks (an in-test source released in phases, the kit's sources and
 * sinks, an injected processing-time clock) show each condition - a
 * stalled partition without idle timeout, tied silent partitions, all
 * partitions idle, seconds read as milliseconds, future timestamps, a
 * count trigger on event-time windows, a high late rate with a known lag
 * distribution, a full queue - and the tests assert the findings (codes,
 * order, culprit, numbers derived by hand) and the window explanations.
 * Nothing sleeps: waits are bounded spins on snapshot conditions.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "server/server.h"
#include "test_rt_kit.h"
#include "testhooks.h"

/* 2026-12-02T10:00:00Z in epoch ms: every time below is relative to it. */
#define B 1796205600000LL
#define MIN_ 60000LL

/* ====================================================================== */
/* A source released in phases                                             */
/* ====================================================================== */

/* One row: the phase that releases it, the partition field's value, the
 * key and the timestamp.  Schema "k:string, p:string, ts:int64" with
 * partition.field p: partitions are numbered in order of appearance and
 * named by p. */
typedef struct ph_row {
    int phase;
    const char *p;
    const char *k;
    int64_t ts;
} ph_row;

#define PH_SCHEMA "k:string, p:string, ts:int64"

/* The test's control over the source: rows up to @c phase are read; at
 * @c phase == PH_END the input ends.  The processing time is @c now. */
#define PH_END 99
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const ph_row *rows;
    size_t n;
    int phase;
    int64_t polls;
} ph = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0};
static _Atomic int64_t ph_now;

static tdm_time_ms ph_clock(void *ud)
{
    (void)ud;
    return atomic_load(&ph_now);
}

struct ph_src {
    size_t pos;
    const char *names[16]; /* partition values in order of appearance */
    int n_names;
};

static tdm_err ph_open(const tdm__source_conf *conf, int index, int count,
                       tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                       int *n_partitions, char *errbuf, size_t errbuf_size)
{
    (void)conf;
    (void)count;
    (void)dead;
    (void)dead_ud;
    (void)errbuf;
    (void)errbuf_size;
    struct ph_src *s = calloc(1, sizeof *s);
    /* Partitions named by a field are read by subtask 0 only. */
    if (index > 0)
        s->pos = (size_t)-1;
    *out = (tdm__source *)s;
    *n_partitions = 0;
    return TDM_OK;
}

static int ph_part(struct ph_src *s, const char *p)
{
    for (int i = 0; i < s->n_names; i++)
        if (strcmp(s->names[i], p) == 0)
            return i;
    ASSERT_TRUE(s->n_names < 16);
    s->names[s->n_names] = p;
    return s->n_names++;
}

/* Emits the released rows; with none to give, waits for the next phase
 * (at most 20 ms, like the stdin source) so the subtask keeps polling. */
static tdm_err ph_poll(tdm__source *src, tdm__batch *b, size_t max,
                       uint8_t *finished, int *eof)
{
    struct ph_src *s = (struct ph_src *)src;
    if (s->pos == (size_t)-1) {
        *eof = 1;
        return TDM_OK;
    }
    pthread_mutex_lock(&ph.mu);
    ph.polls++;
    while (b->n < max && s->pos < ph.n && ph.rows[s->pos].phase <= ph.phase) {
        const ph_row *r = &ph.rows[s->pos++];
        tdm__row *row = tdm__batch_add(b);
        row->partition = (uint32_t)ph_part(s, r->p);
        tdm__batch_set_string(b, row, 0, r->k, strlen(r->k));
        tdm__batch_set_string(b, row, 1, r->p, strlen(r->p));
        row->v[2].u.i = r->ts;
        row->v[2].null = 0;
        row->ts = r->ts;
    }
    if (ph.phase >= PH_END && s->pos >= ph.n) {
        for (int i = 0; i < s->n_names; i++)
            finished[i] = 1;
        *eof = 1;
    } else if (b->n == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&ph.cv, &ph.mu, &ts);
    }
    pthread_mutex_unlock(&ph.mu);
    return TDM_OK;
}

static void ph_close(tdm__source *src)
{
    free(src);
}

static const tdm__source_vtab ph_source = {
    .version = 1, .open = ph_open, .poll = ph_poll, .close = ph_close};

static void ph_release(int phase)
{
    pthread_mutex_lock(&ph.mu);
    ph.phase = phase;
    pthread_cond_broadcast(&ph.cv);
    pthread_mutex_unlock(&ph.mu);
}

/* A job: source "clicks" (phased, on-event watermarks, bound 0) into
 * window "w" (tumbling 5 min by k) into sink "out".  The clock starts at
 * @p now.  Returns the window node for more settings. */
static tdm_job *ph_job(const ph_row *rows, size_t n, int64_t now,
                       tdm_node **win)
{
    pthread_mutex_lock(&ph.mu);
    ph.rows = rows;
    ph.n = n;
    ph.phase = 0;
    pthread_mutex_unlock(&ph.mu);
    atomic_store(&ph_now, now);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "name", "diag");
    tdm__job_set_clock(job, ph_clock, NULL);
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "clicks");
    tdm__node_set_source_vtab(s, &ph_source);
    KIT_SET(s, "schema", PH_SCHEMA);
    KIT_SET(s, "partition.field", "p");
    KIT_SET(s, "timestamp.field", "ts");
    KIT_SET(s, "watermark.emit", "on_event");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "clicks");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "5m");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    if (win)
        *win = w;
    return job;
}

/* ====================================================================== */
/* Snapshots and findings                                                  */
/* ====================================================================== */

static tdm_metrics *snap(tdm_job *job)
{
    tdm_metrics *m = NULL;
    ASSERT_OK(tdm_job_metrics(job, &m));
    return m;
}

static int64_t metric(const tdm_metrics *m, tdm_metric id, const char *v,
                      int sub, int idx)
{
    int64_t x = INT64_MIN + 1;
    if (!tdm_metrics_find(m, id, v, sub, idx, &x))
        return INT64_MIN + 1; /* absent */
    return x;
}

/* Spins (yielding) until @p ok holds on a fresh snapshot, for at most
 * 10 s; fails the test otherwise.  Returns the snapshot it held on. */
typedef int (*snap_pred)(const tdm_metrics *m, const void *arg);
static tdm_metrics *wait_snap(tdm_job *job, snap_pred ok, const void *arg,
                              const char *what)
{
    double t0 = kit_secs();
    for (;;) {
        tdm_metrics *m = snap(job);
        if (ok(m, arg))
            return m;
        tdm_metrics_free(m);
        if (kit_secs() - t0 > 10)
            tdm_test_fail(__FILE__, __LINE__, "timed out waiting: %s", what);
        for (int i = 0; i < 1000; i++)
            sched_yield();
    }
}

/* The window's input watermark (subtask 0) equals *arg. */
static int wm_is(const tdm_metrics *m, const void *arg)
{
    return metric(m, TDM_METRIC_WM_INPUT, "w", 0, -1) == *(const int64_t *)arg;
}

/* The window's records in (subtask 0) reached *arg. */
static int in_is(const tdm_metrics *m, const void *arg)
{
    return metric(m, TDM_METRIC_RECORDS_IN, "w", 0, -1) >=
           *(const int64_t *)arg;
}

/* Partitions of source clicks (subtask 0) published the watermarks of
 * *arg: pairs {partition, watermark} ended by partition -1.  The records
 * count and the source's watermark can be published before a
 * partition's own watermark, so a test about partitions waits for them
 * (regression: tests that waited for the watermark alone were flaky). */
static int parts_wm_are(const tdm_metrics *m, const void *arg)
{
    const int64_t *want = arg;
    for (; want[0] >= 0; want += 2)
        if (metric(m, TDM_METRIC_P_WM, "clicks", 0, (int)want[0]) != want[1])
            return 0;
    return 1;
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(none)";
}

static json_t *finding_at(json_t *d, size_t i)
{
    json_t *f = json_array_get(json_object_get(d, "findings"), i);
    ASSERT_TRUE(f != NULL);
    return f;
}

/* 1 when evidence line @p i of @p f contains @p text... or any line
 * when @p i < 0. */
static int evidence_has(const json_t *f, int i, const char *text)
{
    const json_t *ev = json_object_get(f, "evidence");
    for (size_t k = 0; k < json_array_size(ev); k++) {
        if (i >= 0 && (size_t)i != k)
            continue;
        const char *s = json_string_value(json_array_get(ev, k));
        if (s && strstr(s, text))
            return 1;
    }
    return 0;
}

#define ASSERT_CONTAINS(hay, needle)                                           \
    do {                                                                       \
        const char *h_ = (hay);                                                \
        if (!h_ || !strstr(h_, (needle)))                                      \
            tdm_test_fail(__FILE__, __LINE__,                                  \
                          "\"%s\" does not contain "                           \
                          "\"%s\"",                                            \
                          h_ ? h_ : "(null)", (needle));                       \
    } while (0)

#define ASSERT_EVIDENCE(f, text)                                               \
    do {                                                                       \
        if (!evidence_has((f), -1, (text))) {                                  \
            char *d_ = json_dumps((f), JSON_INDENT(1));                        \
            fprintf(stderr, "%s\n", d_);                                       \
            free(d_);                                                          \
            tdm_test_fail(__FILE__, __LINE__,                                  \
                          "no evidence line has "                              \
                          "\"%s\"",                                            \
                          (text));                                             \
        }                                                                      \
    } while (0)

static void dump(const json_t *j)
{
    char *d = json_dumps(j, JSON_INDENT(2));
    fprintf(stderr, "%s\n", d);
    free(d);
}

/* The first finding of @p d, which must be a critical @p code (the
 * whole diagnosis is printed when it is not). */
static json_t *first_critical(json_t *d, const char *code)
{
    json_t *f = finding_at(d, 0);
    if (strcmp(jstr(f, "code"), code) != 0)
        dump(d);
    ASSERT_STR_EQ(jstr(f, "code"), code);
    ASSERT_STR_EQ(jstr(f, "severity"), "critical");
    return f;
}

/* Stops a phased job: the input ends, windows flush, the run returns. */
static void ph_finish(kit_bg *bg, tdm_job *job)
{
    ph_release(PH_END);
    ASSERT_OK(kit_bg_join(bg));
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* A stalled partition                                                     */
/* ====================================================================== */

/* Three partitions, watermark = max timestamp - 1 ms (bound 0, on
 * event), minimum over the partitions seen so far:
 *   phase 1 (clock 10:30:00): p0 u42@09:58, p1 u7@10:00:05,
 *     p0 u42@10:00:10, p2 u9@10:00:20, p0 u42@10:01, p2 u9@10:02:13
 *     -> after p0@10:00:10 the minimum is p1's 10:00:04.999, which fires
 *     u42's [09:55, 10:00); it stays there to the end of the phase.
 *   phase 2 (clock 10:34:12, 252 s later): p1 u42@10:04, p0 u42@10:06,
 *     p1 u7@10:19, p0 u42@10:20.
 * Then p0 is at 10:19:59.999, p1 at 10:18:59.999 and p2, silent since
 * phase 1, at 10:02:12.999: p2 holds the watermark back by
 * 10:18:59.999 - 10:02:12.999 = 16 min 47 s = 1,007,000 ms, and its last
 * record is 252 s = 4m12s old while p0 and p1 got theirs just now. */
static const ph_row stall_rows[] = {
    {1, "p0", "u42", B - 2 * MIN_}, {1, "p1", "u7", B + 5000},
    {1, "p0", "u42", B + 10000},    {1, "p2", "u9", B + 20000},
    {1, "p0", "u42", B + MIN_},     {1, "p2", "u9", B + 133000},
    {2, "p1", "u42", B + 4 * MIN_}, {2, "p0", "u42", B + 6 * MIN_},
    {2, "p1", "u7", B + 19 * MIN_}, {2, "p0", "u42", B + 20 * MIN_},
};
#define T0 (B + 30 * MIN_)
#define T1 (T0 + 252000)

/* Runs the stall job to the end of phase 2 and returns it running. */
static tdm_job *stall_job(kit_bg *bg)
{
    tdm_job *job = ph_job(stall_rows, 10, T0, NULL);
    kit_bg_start(bg, job);
    ph_release(1);
    int64_t wm1 = B + 4999;
    tdm_metrics *m = wait_snap(job, wm_is, &wm1, "phase 1 watermark");
    tdm_metrics_free(m);
    /* Every phase-1 record is in (6), then the clock moves. */
    int64_t six = 6;
    tdm_metrics_free(wait_snap(job, in_is, &six, "phase 1 records"));
    atomic_store(&ph_now, T1);
    ph_release(2);
    int64_t wm2 = B + 132999;
    int64_t ten = 10;
    tdm_metrics_free(wait_snap(job, in_is, &ten, "phase 2 records"));
    tdm_metrics_free(wait_snap(job, wm_is, &wm2, "phase 2 watermark"));
    const int64_t parts[] = {0, B + 20 * MIN_ - 1, 1,  B + 19 * MIN_ - 1,
                             2, B + 132999,        -1, 0};
    tdm_metrics_free(wait_snap(job, parts_wm_are, parts, "partitions"));
    return job;
}

TDM_TEST(stalled_partition_is_the_culprit)
{
    kit_bg bg;
    tdm_job *job = stall_job(&bg);
    tdm_metrics *m = snap(job);
    tdm__culprit c;
    tdm__find_culprit(m, &c);
    ASSERT_EQ(c.found, 1);
    ASSERT_STR_EQ(c.vertex, "clicks");
    ASSERT_EQ(c.subtask, 0);
    ASSERT_EQ(c.partition, 2);
    ASSERT_STR_EQ(c.name, "p2");
    ASSERT_EQ(c.watermark, B + 132999);
    ASSERT_EQ(c.next, B + 19 * MIN_ - 1);
    ASSERT_EQ(c.behind_ms, 1007000);
    ASSERT_EQ(c.last_record_age_ms, 252000);

    json_t *d = tdm__diagnose(job, m, NULL);
    ASSERT_TRUE(d != NULL);
    /* Only the held-back partition: p0 and p1 are fresh, nothing is
     * late, no unit or guard problem. */
    if (json_array_size(json_object_get(d, "findings")) != 1)
        dump(d);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 1);
    json_t *f = finding_at(d, 0);
    ASSERT_STR_EQ(jstr(f, "code"), "HELD_BACK_PARTITION");
    ASSERT_STR_EQ(jstr(f, "severity"), "critical");
    ASSERT_STR_EQ(jstr(f, "vertex"), "clicks");
    ASSERT_EQ(json_integer_value(json_object_get(f, "partition")), 2);
    ASSERT_STR_EQ(jstr(f, "partitionName"), "p2");
    ASSERT_STR_EQ(jstr(f, "title"), "Partition \"p2\" of source clicks "
                                    "holds the watermark back by 16m47s");
    ASSERT_EVIDENCE(f, "is at 2026-12-02T10:02:12.999Z; the next lowest "
                       "partition, \"p1\" of clicks subtask 0, is at "
                       "2026-12-02T10:18:59.999Z");
    ASSERT_EVIDENCE(f, "its last record arrived 4m12s ago (since "
                       "2026-12-02T10:30:00.000Z); the other partitions' "
                       "latest came 0ms ago");
    ASSERT_EVIDENCE(f, "window w reads it: its lowest input watermark is "
                       "2026-12-02T10:02:12.999Z");
    ASSERT_EVIDENCE(f, "source clicks has no watermark.idle_timeout");
    /* 30 s: the default aim, below half the 252 s stall and above the
     * 1 s floor (other partitions 0 ms silent, interval 200 ms). */
    ASSERT_CONTAINS(jstr(f, "fix"), "Set sources.clicks.watermark."
                                    "idle_timeout to 30s (--set sources."
                                    "clicks.watermark.idle_timeout=30s)");
    ASSERT_CONTAINS(jstr(f, "fix"), "partition \"p2\", which has stopped "
                                    "sending");
    /* The culprit object repeats the numbers. */
    json_t *cj = json_object_get(d, "culprit");
    ASSERT_EQ(json_integer_value(json_object_get(cj, "behindMs")), 1007000);
    ASSERT_STR_EQ(jstr(cj, "name"), "p2");
    json_decref(d);

    /* With a history that named p2 at T1 and again 60 s later, the
     * finding says since when (T1 = 10:34:12) and for how long. */
    tdm__history *h = NULL;
    ASSERT_OK(tdm__history_new(job, &h));
    ASSERT_OK(tdm__history_add(h, m));
    atomic_store(&ph_now, T1 + 60000);
    tdm_metrics *m2 = snap(job);
    ASSERT_OK(tdm__history_add(h, m2));
    d = tdm__diagnose(job, m2, h);
    f = finding_at(d, 0);
    ASSERT_EVIDENCE(f, "it has held the watermark back since "
                       "2026-12-02T10:34:12.000Z (1m0s)");
    ASSERT_EVIDENCE(f, "its last record arrived 5m12s ago");
    json_decref(d);
    tdm__history_free(h);
    tdm_metrics_free(m2);
    tdm_metrics_free(m);
    ph_finish(&bg, job);
}

/* The same job asked about single windows. */
TDM_TEST(explain_window_pending_fired_and_empty)
{
    kit_bg bg;
    tdm_job *job = stall_job(&bg);
    char msg[256];
    int status = 0;

    /* u42's [10:00, 10:05) holds 10:00:10, 10:01 and 10:04 and waits
     * for the watermark to pass 10:04:59.999; held at p2's 10:02:12.999,
     * silent for 4m12s with no idle timeout.  One channel (clicks#0). */
    json_t *x = tdm__explain_window(job, "w", "u42", B, B + 5 * MIN_, &status,
                                    msg, sizeof msg);
    ASSERT_TRUE(x != NULL);
    ASSERT_EQ(status, 200);
    ASSERT_TRUE(json_is_false(json_object_get(x, "fired")));
    ASSERT_STR_EQ(jstr(x, "verdict"),
                  "Not fired: waiting for the watermark of subtask 0 to "
                  "pass 2026-12-02T10:04:59.999Z; it is at "
                  "2026-12-02T10:02:12.999Z, held back by channel 0 "
                  "(source clicks#0), whose partition \"p2\" has had no "
                  "data for 4m12s and no idle timeout.");
    ASSERT_STR_EQ(jstr(x, "waiting_for"),
                  "the watermark of w subtask 0 to pass "
                  "2026-12-02T10:04:59.999Z");
    ASSERT_EVIDENCE(x, "the window holds 3 records now");
    json_t *st = json_object_get(x, "status");
    ASSERT_EQ(json_integer_value(json_object_get(st, "max_ts")),
              B + 5 * MIN_ - 1);
    ASSERT_EQ(json_integer_value(json_object_get(st, "holding_channel")), 0);
    json_decref(x);

    /* u42's [09:55, 10:00) fired when the watermark reached
     * 10:00:04.999 (see stall_rows). */
    x = tdm__explain_window(job, "w", "u42", B - 5 * MIN_, B, &status, msg,
                            sizeof msg);
    ASSERT_TRUE(x != NULL);
    ASSERT_TRUE(json_is_true(json_object_get(x, "fired")));
    ASSERT_STR_EQ(jstr(x, "verdict"),
                  "Fired: the window [2026-12-02T09:55:00.000Z, "
                  "2026-12-02T10:00:00.000Z) of key \"u42\" fired when the "
                  "watermark of subtask 0 reached "
                  "2026-12-02T10:00:04.999Z.");
    ASSERT_TRUE(json_is_null(json_object_get(x, "waiting_for")));
    json_decref(x);

    /* No record of "nobody" yet, the window still open. */
    x = tdm__explain_window(job, "w", "nobody", B, B + 5 * MIN_, &status, msg,
                            sizeof msg);
    ASSERT_TRUE(x != NULL);
    ASSERT_CONTAINS(jstr(x, "verdict"),
                    "Not fired: no record with key \"nobody\" has arrived");
    json_decref(x);

    /* [09:50, 09:55) of u42 is long past (watermark 10:02:12.999 beyond
     * its end, no lateness) and never had a record. */
    x = tdm__explain_window(job, "w", "u42", B - 10 * MIN_, B - 5 * MIN_,
                            &status, msg, sizeof msg);
    ASSERT_TRUE(x != NULL);
    ASSERT_STR_EQ(jstr(x, "verdict"),
                  "No result: no record with key \"u42\" arrived for the "
                  "window [2026-12-02T09:50:00.000Z, "
                  "2026-12-02T09:55:00.000Z) before the watermark passed "
                  "its end (0 late records were dropped by w, 0 sent to the "
                  "late output).");
    ASSERT_TRUE(json_is_null(json_object_get(x, "waiting_for")));
    json_decref(x);

    /* Bad requests. */
    ASSERT_TRUE(tdm__explain_window(job, "nope", "u42", B, B + 1, &status, msg,
                                    sizeof msg) == NULL);
    ASSERT_EQ(status, 404);
    ASSERT_STR_EQ(msg, "no window named \"nope\" in the job");
    ASSERT_TRUE(tdm__explain_window(job, "clicks", "u42", B, B + 1, &status,
                                    msg, sizeof msg) == NULL);
    ASSERT_EQ(status, 404);
    ASSERT_STR_EQ(msg, "vertex \"clicks\" is not a window");
    ASSERT_TRUE(tdm__explain_window(job, "w", "u42", B, B, &status, msg,
                                    sizeof msg) == NULL);
    ASSERT_EQ(status, 400);
    ph_finish(&bg, job);
}

TDM_TEST(before_any_run_nothing_to_diagnose_and_503)
{
    tdm_job *job = ph_job(stall_rows, 10, T0, NULL);
    char msg[256];
    int status = 0;
    /* The diagnosis of a job that never ran says so, and only that. */
    tdm_metrics *m = snap(job);
    json_t *d = tdm__diagnose(job, m, NULL);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 1);
    ASSERT_STR_EQ(jstr(finding_at(d, 0), "code"), "NOT_STARTED");
    ASSERT_STR_EQ(jstr(finding_at(d, 0), "severity"), "info");
    json_decref(d);
    tdm_metrics_free(m);
    ASSERT_TRUE(tdm__explain_window(job, "w", "u42", B, B + 5 * MIN_, &status,
                                    msg, sizeof msg) == NULL);
    ASSERT_EQ(status, 503);
    ASSERT_STR_EQ(msg, "the job has not run yet");
    tdm_job_destroy(job);
}

/* p0 and p1 stop together at 10:01 (watermark 10:00:59.999 each); p2
 * goes on to 10:20 after the clock moved 252 s.  No partition stands out
 * alone (a tie), so there is no culprit; both silent partitions are
 * reported as NO_DATA_NO_IDLE, critical since they hold the minimum
 * below p2. */
static const ph_row tie_rows[] = {
    {1, "p0", "a", B + MIN_},
    {1, "p1", "b", B + MIN_},
    {1, "p2", "c", B + MIN_},
    {2, "p2", "c", B + 20 * MIN_},
};

TDM_TEST(tied_silent_partitions_have_no_data_and_no_idle_timeout)
{
    kit_bg bg;
    tdm_job *job = ph_job(tie_rows, 4, T0, NULL);
    kit_bg_start(&bg, job);
    ph_release(1);
    int64_t three = 3, four = 4, wm = B + MIN_ - 1;
    tdm_metrics_free(wait_snap(job, in_is, &three, "phase 1"));
    atomic_store(&ph_now, T1);
    ph_release(2);
    tdm_metrics_free(wait_snap(job, in_is, &four, "phase 2"));
    const int64_t parts[] = {2, B + 20 * MIN_ - 1, -1, 0};
    tdm_metrics_free(wait_snap(job, parts_wm_are, parts, "p2 watermark"));
    tdm_metrics *m = wait_snap(job, wm_is, &wm, "watermark");
    tdm__culprit c;
    tdm__find_culprit(m, &c);
    ASSERT_EQ(c.found, 0);
    json_t *d = tdm__diagnose(job, m, NULL);
    if (json_array_size(json_object_get(d, "findings")) != 2)
        dump(d);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 2);
    for (int i = 0; i < 2; i++) {
        json_t *f = finding_at(d, (size_t)i);
        char title[160];
        snprintf(title, sizeof title,
                 "Partition \"p%d\" of source clicks has had no data for "
                 "4m12s and there is no idle timeout",
                 i);
        ASSERT_STR_EQ(jstr(f, "code"), "NO_DATA_NO_IDLE");
        ASSERT_STR_EQ(jstr(f, "severity"), "critical");
        ASSERT_STR_EQ(jstr(f, "title"), title);
        ASSERT_EQ(json_integer_value(json_object_get(f, "partition")), i);
        ASSERT_EVIDENCE(f, "its watermark is 2026-12-02T10:00:59.999Z, the "
                           "lowest: it holds the minimum back");
        ASSERT_CONTAINS(jstr(f, "fix"), "idle_timeout to 30s");
    }
    ASSERT_TRUE(json_is_null(json_object_get(d, "culprit")));
    json_decref(d);
    tdm_metrics_free(m);
    ph_finish(&bg, job);
}

/* Waits until the source has polled twice more (so it has read the
 * clock and run its periodic watermark tick since the last change). */
static void ph_two_polls(void)
{
    pthread_mutex_lock(&ph.mu);
    int64_t want = ph.polls + 2;
    pthread_mutex_unlock(&ph.mu);
    double t0 = kit_secs();
    for (;;) {
        pthread_mutex_lock(&ph.mu);
        int64_t n = ph.polls;
        pthread_mutex_unlock(&ph.mu);
        if (n >= want)
            return;
        ASSERT_TRUE(kit_secs() - t0 < 10);
        sched_yield();
    }
}

static int all_idle(const tdm_metrics *m, const void *arg)
{
    (void)arg;
    return metric(m, TDM_METRIC_P_IDLE, "clicks", 0, 0) == 1 &&
           metric(m, TDM_METRIC_P_IDLE, "clicks", 0, 1) == 1;
}

/* With idle_timeout 1s, both partitions fall silent after one record
 * each.  The reader marks a split idle at a periodic tick more than 1 s
 * after its countdown started, so the clock moves in 1.5 s steps, each
 * followed by two polls (a tick each), until the snapshot shows both
 * idle: then the watermark cannot move. */
TDM_TEST(every_partition_idle)
{
    static const ph_row rows[] = {{1, "p0", "a", B + 1000},
                                  {1, "p1", "b", B + 2000}};
    kit_bg bg;
    tdm_job *job = ph_job(rows, 2, T0, NULL);
    KIT_SET(tdm_job_node(job, "clicks"), "watermark.idle_timeout", "1s");
    kit_bg_start(&bg, job);
    ph_release(1);
    int64_t two = 2;
    tdm_metrics_free(wait_snap(job, in_is, &two, "records"));
    tdm_metrics *m = NULL;
    int steps = 0;
    while (!m && steps < 40) {
        steps++;
        atomic_store(&ph_now, T0 + 1500 * (int64_t)steps);
        ph_two_polls();
        m = snap(job);
        if (!all_idle(m, NULL)) {
            tdm_metrics_free(m);
            m = NULL;
        }
    }
    ASSERT_TRUE(m != NULL);
    json_t *d = tdm__diagnose(job, m, NULL);
    json_t *f = first_critical(d, "ALL_IDLE");
    ASSERT_STR_EQ(jstr(f, "title"), "Every source partition is idle: the "
                                    "watermark cannot move");
    ASSERT_EVIDENCE(f, "2 of 2 unfinished partitions are idle");
    /* Both records were read at T0: silent for steps x 1.5 s. */
    char age[64];
    int64_t ms = 1500 * (int64_t)steps;
    if (ms < 10000)
        snprintf(age, sizeof age,
                 "the most recent record arrived %d.%ds "
                 "ago",
                 (int)(ms / 1000), (int)(ms % 1000 / 100));
    else
        snprintf(age, sizeof age, "the most recent record arrived %ds ago",
                 (int)(ms / 1000));
    ASSERT_EVIDENCE(f, age);
    json_decref(d);
    tdm_metrics_free(m);
    ph_finish(&bg, job);
}

/* No finding of @p d advises an idle timeout. */
static void no_idle_advice(json_t *d)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(d, "findings"), i, f)
    {
        const char *fix = jstr(f, "fix");
        if (fix && strstr(fix, "idle_timeout to")) {
            dump(d);
            ASSERT_TRUE(!"a finding advises an idle timeout");
        }
    }
}

/* Both partitions of source clicks (subtask 0) went silent *arg ms or
 * more ago. */
static int silent_for(const tdm_metrics *m, const void *arg)
{
    int64_t want = *(const int64_t *)arg;
    return metric(m, TDM_METRIC_P_LAST_AGE, "clicks", 0, 0) >= want &&
           metric(m, TDM_METRIC_P_LAST_AGE, "clicks", 0, 1) >= want;
}

/* The first stuck case: data stopped on every partition, no idle
 * timeout.  p0 and p1 send one record each at 10:30 (clock) and fall
 * silent; 15 s later the windows [10:00, 10:05) of u1 and u2 still wait
 * at watermark 10:00:00.999 (p0's 10:00:01 - 1 ms, the minimum).  No
 * partition holds the others back (1 s apart, equally silent), so only
 * STALLED_WATERMARK speaks, and nothing advises an idle timeout, which
 * cannot help.  Its fix, ending the input, fires both windows. */
TDM_TEST(every_partition_silent_stalls_the_watermark)
{
    static const ph_row rows[] = {{1, "p0", "u1", B + 1000},
                                  {1, "p1", "u2", B + 2000}};
    kit_bg bg;
    tdm_job *job = ph_job(rows, 2, T0, NULL);
    kit_bg_start(&bg, job);
    ph_release(1);
    int64_t two = 2, wm = B + 999, quiet = 15000;
    tdm_metrics_free(wait_snap(job, in_is, &two, "records"));
    tdm_metrics_free(wait_snap(job, wm_is, &wm, "watermark"));
    atomic_store(&ph_now, T0 + quiet);
    ph_two_polls();
    tdm_metrics *m = wait_snap(job, silent_for, &quiet, "15 s of silence");
    json_t *d = tdm__diagnose(job, m, NULL);
    json_t *f = finding_at(d, 0);
    if (json_array_size(json_object_get(d, "findings")) != 1)
        dump(d);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 1);
    ASSERT_STR_EQ(jstr(f, "code"), "STALLED_WATERMARK");
    ASSERT_STR_EQ(jstr(f, "severity"), "critical");
    ASSERT_STR_EQ(jstr(f, "title"), "No partition has sent a record for 15s: "
                                    "the watermark cannot move, and windows "
                                    "wait");
    ASSERT_EVIDENCE(f, "2 of 2 unfinished partitions are silent");
    ASSERT_EVIDENCE(f, "window w holds 2 open windows at watermark "
                       "2026-12-02T10:00:00.999Z");
    ASSERT_EVIDENCE(f, "an idle timeout cannot help");
    ASSERT_CONTAINS(jstr(f, "fix"), "stop: end");
    no_idle_advice(d);
    json_decref(d);
    tdm_metrics_free(m);
    /* The fix: the input ends, and both windows fire. */
    ph_release(PH_END);
    ASSERT_OK(kit_bg_join(&bg));
    m = snap(job);
    ASSERT_EQ(metric(m, TDM_METRIC_RECORDS_OUT, "w", 0, -1), 2);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* The second case: skew.  p1 is 5 minutes behind p0 but still
 * sends: both send at 10:30 and again at 10:30:20 (clock), p0 at 10:10
 * and 10:10:01, p1 at 10:05 and 10:05:01 (p1 first, so that it is in
 * the minimum before p0 moves it; partitions are numbered in order of
 * appearance: p1 is partition 0).  p1 holds the watermark back
 * by 5 min (a whole window) while its last record is fresh: the finding
 * names it, and its fix points at the backlog and at alignment, never at
 * an idle timeout (which would drop p1's records as late between them). */
TDM_TEST(a_partition_behind_but_sending_is_skew_not_silence)
{
    static const ph_row rows[] = {{1, "p1", "u2", B + 5 * MIN_},
                                  {1, "p0", "u1", B + 10 * MIN_},
                                  {2, "p0", "u1", B + 10 * MIN_ + 1000},
                                  {2, "p1", "u2", B + 5 * MIN_ + 1000}};
    kit_bg bg;
    tdm_job *job = ph_job(rows, 4, T0, NULL);
    kit_bg_start(&bg, job);
    ph_release(1);
    int64_t two = 2, four = 4, wm = B + 5 * MIN_ + 999;
    tdm_metrics_free(wait_snap(job, in_is, &two, "phase 1"));
    atomic_store(&ph_now, T0 + 20000);
    ph_release(2);
    tdm_metrics_free(wait_snap(job, in_is, &four, "phase 2"));
    const int64_t parts[] = {1, B + 10 * MIN_ + 999, 0, B + 5 * MIN_ + 999, -1,
                             0};
    tdm_metrics_free(wait_snap(job, parts_wm_are, parts, "partitions"));
    tdm_metrics *m = wait_snap(job, wm_is, &wm, "watermark");
    ASSERT_EQ(metric(m, TDM_METRIC_LATE_DROPPED, "w", 0, -1), 0);
    json_t *d = tdm__diagnose(job, m, NULL);
    json_t *f = first_critical(d, "HELD_BACK_PARTITION");
    ASSERT_STR_EQ(jstr(f, "partitionName"), "p1");
    ASSERT_CONTAINS(jstr(f, "fix"), "Do not set an idle timeout for it");
    ASSERT_CONTAINS(jstr(f, "fix"), "backlog");
    ASSERT_CONTAINS(jstr(f, "fix"), "watermark.alignment.group");
    no_idle_advice(d);
    json_decref(d);
    tdm_metrics_free(m);
    ph_finish(&bg, job);
}

/* Rows of the future case: at phase 1 one record of u1 30 minutes ahead
 * of the clock (10:30): 11:00, inside the 1 h guard; at phase 2, 150
 * records of u1 at the clock's time (10:30:00.000 + i ms). */
static ph_row future_rows[151];

static void fill_future_rows(void)
{
    future_rows[0] = (ph_row){1, "p0", "u1", B + 60 * MIN_};
    for (int i = 1; i < 151; i++)
        future_rows[i] = (ph_row){2, "p0", "u1", B + 30 * MIN_ + i};
}

/* Runs the future case with timestamp_guard @p guard (NULL: the default
 * 1 h) until all 151 records are in; returns the job, running. */
static tdm_job *future_job(kit_bg *bg, const char *guard)
{
    fill_future_rows();
    tdm_job *job = ph_job(future_rows, 151, T0, NULL);
    if (guard)
        KIT_JOB_SET(job, "timestamp_guard", guard);
    kit_bg_start(bg, job);
    ph_release(1);
    int64_t one = 1, all = 151;
    tdm_metrics_free(wait_snap(job, in_is, &one, "phase 1"));
    ph_release(2);
    tdm_metrics_free(wait_snap(job, in_is, &all, "phase 2"));
    return job;
}

/* The third case: a record 30 minutes in the future, inside the
 * default 1 h guard, moves p0's watermark to 10:59:59.999 at 10:30, and
 * the 150 records on time by the clock are late (dropped).  The
 * diagnosis names the partition and the guard that would have kept the
 * record out of the watermark (half of 29m59.999s, in whole minutes:
 * 14m), and the late-rate finding does not blame the bound.  With that
 * guard, the same data gives no late record and no such finding. */
TDM_TEST(a_record_from_the_future_moves_the_watermark_ahead)
{
    kit_bg bg;
    tdm_job *job = future_job(&bg, NULL);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(metric(m, TDM_METRIC_LATE_DROPPED, "w", 0, -1), 150);
    json_t *d = tdm__diagnose(job, m, NULL);
    json_t *f = first_critical(d, "WATERMARK_AHEAD");
    ASSERT_CONTAINS(jstr(f, "title"), "Partition \"p0\" of source clicks has "
                                      "a watermark 29m");
    ASSERT_EVIDENCE(f, "its watermark is 2026-12-02T10:59:59.999Z; processing "
                       "time is 2026-12-02T10:30:00.000Z");
    ASSERT_EVIDENCE(f, "its highest record timestamp is "
                       "2026-12-02T11:00:00.000Z");
    ASSERT_EVIDENCE(f, "timestamp_guard is 1h0m, so the record counted");
    ASSERT_CONTAINS(jstr(f, "fix"), "Set timestamp_guard to 14m");
    size_t i;
    json_t *g;
    int late = 0;
    json_array_foreach(json_object_get(d, "findings"), i, g)
    {
        if (strcmp(jstr(g, "code"), "HIGH_LATE_RATE") != 0)
            continue;
        late = 1;
        ASSERT_CONTAINS(jstr(g, "fix"), "(WATERMARK_AHEAD)");
        ASSERT_TRUE(strstr(jstr(g, "fix"), "max_out_of_orderness to") == NULL);
    }
    ASSERT_TRUE(late);
    json_decref(d);
    tdm_metrics_free(m);
    ph_finish(&bg, job);

    /* The fix applied: the record is caught, nothing is late. */
    job = future_job(&bg, "14m");
    m = snap(job);
    ASSERT_EQ(metric(m, TDM_METRIC_LATE_DROPPED, "w", 0, -1), 0);
    d = tdm__diagnose(job, m, NULL);
    json_array_foreach(json_object_get(d, "findings"), i, g)
    {
        ASSERT_TRUE(strcmp(jstr(g, "code"), "WATERMARK_AHEAD") != 0);
    }
    json_decref(d);
    tdm_metrics_free(m);
    ph_finish(&bg, job);
}

/* ====================================================================== */
/* Timestamps                                                              */
/* ====================================================================== */

/* 1733133600.. in a ms field are seconds: 2024-12-02T10:00:00Z read as
 * seconds; the highest, 1733133605 ms, is 1970-01-21T01:25:33.605Z. */
TDM_TEST(seconds_read_as_milliseconds)
{
    static const kit_row r[] = {{0, "a", 1733133600, 1},
                                {0, "a", 1733133601, 1},
                                {0, "a", 1733133605, 1}};
    kit_add_data((kit_data){"secs", 1, r, 3, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    kit_source_node(job, "clicks", "secs");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "clicks");
    KIT_SET(w, "window.size", "1h");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    json_t *d = tdm__diagnose(job, m, NULL);
    if (json_array_size(json_object_get(d, "findings")) != 1)
        dump(d);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 1);
    json_t *f = finding_at(d, 0);
    ASSERT_STR_EQ(jstr(f, "code"), "TIMESTAMP_UNIT");
    ASSERT_STR_EQ(jstr(f, "severity"), "critical");
    ASSERT_STR_EQ(jstr(f, "title"), "Timestamps of source clicks look like "
                                    "seconds, not milliseconds");
    ASSERT_EVIDENCE(f, "timestamp.unit is ms");
    ASSERT_EVIDENCE(f, "highest timestamp 1733133605 reads as "
                       "1970-01-21T01:25:33.605Z in ms, but as "
                       "2024-12-02T10:00:05.000Z in seconds");
    ASSERT_STR_EQ(jstr(f, "fix"), "Set sources.clicks.timestamp.unit: s "
                                  "(--set sources.clicks.timestamp.unit=s).");
    json_decref(d);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

static _Atomic int64_t fixed_ms;
static tdm_time_ms fixed_clock(void *ud)
{
    (void)ud;
    return atomic_load(&fixed_ms);
}

/* Processing time 1,000,000 ms, guard 1 h: the record at 1e13 is caught
 * (1 of 3); 1000 and 2000 lie in the past. */
TDM_TEST(future_timestamps_caught_by_the_guard)
{
    static const kit_row r[] = {
        {0, "a", 1000, 1}, {0, "a", 10000000000000LL, 1}, {0, "a", 2000, 1}};
    kit_add_data((kit_data){"guard", 1, r, 3, 0, 0, 0});
    atomic_store(&fixed_ms, 1000000);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, fixed_clock, NULL);
    tdm_node *s = kit_source_node(job, "src", "guard");
    KIT_SET(s, "watermark.emit", "on_event");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    json_t *d = tdm__diagnose(job, m, NULL);
    if (json_array_size(json_object_get(d, "findings")) != 1)
        dump(d);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 1);
    json_t *f = finding_at(d, 0);
    ASSERT_STR_EQ(jstr(f, "code"), "FUTURE_TIMESTAMPS");
    ASSERT_STR_EQ(jstr(f, "severity"), "warning");
    ASSERT_STR_EQ(jstr(f, "title"), "1 record of source src had timestamps "
                                    "far in the future");
    ASSERT_EVIDENCE(f, "1 of 3 records lay more than timestamp_guard (1h0m) "
                       "ahead of processing time");
    ASSERT_CONTAINS(jstr(f, "fix"), "timestamp_guard.dead_letter: true");
    json_decref(d);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* Triggers, lateness, backpressure, all clear                             */
/* ====================================================================== */

/* A count trigger of 5 on 5-minute event-time windows: u1 has 3 records
 * and u2 2 in [10:00, 10:05); the watermark (10:01:59.999) has not
 * passed its end, so both windows are open, and nothing reaches 5: no
 * pane fired while windows pile up - critical. */
TDM_TEST(count_trigger_on_event_time_windows)
{
    static const ph_row rows[] = {{1, "p0", "u1", B + 1000},
                                  {1, "p0", "u1", B + 2000},
                                  {1, "p0", "u1", B + 3000},
                                  {1, "p0", "u2", B + MIN_},
                                  {1, "p0", "u2", B + 2 * MIN_}};
    kit_bg bg;
    tdm_node *w;
    tdm_job *job = ph_job(rows, 5, T0, &w);
    KIT_SET(w, "trigger", "count");
    KIT_SET(w, "trigger.count", "5");
    kit_bg_start(&bg, job);
    ph_release(1);
    int64_t five = 5;
    tdm_metrics *m = wait_snap(job, in_is, &five, "records");
    tdm_metrics_free(m);
    /* The window counts are published with the records. */
    m = snap(job);
    ASSERT_EQ(metric(m, TDM_METRIC_STATE_WINDOWS, "w", 0, -1), 2);
    json_t *d = tdm__diagnose(job, m, NULL);
    if (json_array_size(json_object_get(d, "findings")) != 1)
        dump(d);
    json_t *f = finding_at(d, 0);
    ASSERT_STR_EQ(jstr(f, "code"), "TRIGGER_NEVER_FIRES_ON_EVENT_TIME");
    ASSERT_STR_EQ(jstr(f, "severity"), "critical");
    ASSERT_STR_EQ(jstr(f, "title"), "Window w has event-time windows but a "
                                    "count trigger: the watermark never "
                                    "fires them");
    ASSERT_EVIDENCE(f, "fires a window only every 5 records of one key");
    ASSERT_EVIDENCE(f, "0 panes fired so far; 2 windows open");
    ASSERT_CONTAINS(jstr(f, "fix"), "Remove windows.w.trigger");
    json_decref(d);
    /* And for one window: it holds records the watermark cannot fire. */
    char msg[256];
    int status;
    json_t *x = tdm__explain_window(job, "w", "u1", B, B + 5 * MIN_, &status,
                                    msg, sizeof msg);
    ASSERT_TRUE(x != NULL);
    ASSERT_STR_EQ(jstr(x, "verdict"),
                  "Not fired: the window [2026-12-02T10:00:00.000Z, "
                  "2026-12-02T10:05:00.000Z) of key \"u1\" holds records, "
                  "but its count trigger does not fire on the watermark.");
    ASSERT_STR_EQ(jstr(x, "waiting_for"),
                  "5 records of key \"u1\" in this window (the count "
                  "trigger)");
    json_decref(x);
    tdm_metrics_free(m);
    ph_finish(&bg, job);
}

/* 400 records of one key in one partition, bound 100 ms, 1 s windows,
 * on-event watermarks.  Record i (0-based) has ts 10000 + 10 i, except
 * every 20th (i % 20 == 19), which lies 2500 ms behind the highest
 * timestamp so far (that of record i - 1).  Its window ends at most
 * 1500 ms after it, below the watermark (highest - 101): all 20 are late
 * and dropped, 20 / 400 = 5.0 %.  The lag of the others is 0 (each is a
 * new maximum), so P99 (the 396th of 400 values) and P99.9 are 2500
 * (the histogram's bucket [2496, 2511] capped at the maximum, 2500);
 * rounded up to whole seconds: 3 s. */
#define LATE_N 400
static kit_row late_rows[LATE_N];

TDM_TEST(high_late_rate_recommends_the_p999_lag)
{
    for (int i = 0; i < LATE_N; i++) {
        int64_t ts = 10000 + 10 * (int64_t)i;
        if (i % 20 == 19)
            ts = 10000 + 10 * (int64_t)(i - 1) - 2500;
        late_rows[i] = (kit_row){0, "a", ts, 1};
    }
    kit_add_data((kit_data){"late", 1, late_rows, LATE_N, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = kit_source_node(job, "src", "late");
    KIT_SET(s, "watermark.emit", "on_event");
    KIT_SET(s, "watermark.max_out_of_orderness", "100ms");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "1s");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 20);
    tdm_metrics *m = snap(job);
    json_t *d = tdm__diagnose(job, m, NULL);
    if (json_array_size(json_object_get(d, "findings")) != 1)
        dump(d);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 1);
    json_t *f = finding_at(d, 0);
    ASSERT_STR_EQ(jstr(f, "code"), "HIGH_LATE_RATE");
    ASSERT_STR_EQ(jstr(f, "severity"), "warning");
    ASSERT_STR_EQ(jstr(f, "title"), "5.0% of the records of w arrived too "
                                    "late for their window");
    ASSERT_EVIDENCE(f, "20 of 400 records were late: 20 dropped, 0 sent to "
                       "the late output");
    ASSERT_EVIDENCE(f, "source src: records arrive behind the highest "
                       "timestamp of their partition by 0ms (median), 2.5s "
                       "(P99), 2.5s (P99.9), 2.5s (max); "
                       "watermark.max_out_of_orderness is 100ms");
    ASSERT_CONTAINS(jstr(f, "fix"), "set sources.src.watermark."
                                    "max_out_of_orderness to 3s (the "
                                    "observed P99.9 lag, rounded up");
    ASSERT_CONTAINS(jstr(f, "fix"), "windows.w.allowed_lateness to 3s");
    json_decref(d);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* The subtask's input queue is full: the window subtask blocks in its
 * sink (the kit sink's gate), so its queue of capacity 2 fills and the
 * source waits.  Endless generated data in 10 ms windows, on-event
 * watermarks (the flow test's slow sink). */
static int queue_full(const tdm_metrics *m, const void *arg)
{
    (void)arg;
    int64_t len = metric(m, TDM_METRIC_QUEUE_LEN, "w", 0, -1);
    int64_t cap = metric(m, TDM_METRIC_QUEUE_CAP, "w", 0, -1);
    return cap > 0 && len == cap &&
           metric(m, TDM_METRIC_BACKPRESSURE, "src", 0, -1) > 0;
}

/* A job whose source "src" reads endless generated data set @p data
 * (64-row batches, on-event watermarks) through queues of capacity 2, so
 * that a blocked subtask fills them at once. */
static tdm_job *gated_job(const char *data)
{
    kit_add_data((kit_data){data, 1, NULL, 0, 5000000, 10, 1});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "batch.size", "64");
    KIT_JOB_SET(job, "queue.capacity", "2");
    tdm_node *s = kit_source_node(job, "src", data);
    KIT_SET(s, "watermark.emit", "on_event");
    return job;
}

/* Closes (1) or opens (0) the gate of kit sink @p k: a closed gate
 * blocks its writer. */
static void set_gate(kit_sink *k, int closed)
{
    pthread_mutex_lock(&k->mu);
    k->gate = closed;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

/* The finding with code @p code, or NULL (the report is dumped). */
static json_t *finding_coded(json_t *d, const char *code)
{
    for (size_t i = 0; i < json_array_size(json_object_get(d, "findings")); i++)
        if (strcmp(jstr(finding_at(d, i), "code"), code) == 0)
            return finding_at(d, i);
    dump(d);
    return NULL;
}

TDM_TEST(full_queue_is_backpressure)
{
    tdm_job *job = gated_job("endless");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10ms");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_sink *k = kit_sink_get("out");
    set_gate(k, 1);
    kit_bg bg;
    kit_bg_start(&bg, job);
    tdm_metrics *m = wait_snap(job, queue_full, NULL, "a full queue");
    int64_t cap = metric(m, TDM_METRIC_QUEUE_CAP, "w", 0, -1);
    json_t *d = tdm__diagnose(job, m, NULL);
    json_t *f = finding_coded(d, "BACKPRESSURE");
    ASSERT_TRUE(f != NULL);
    ASSERT_STR_EQ(jstr(f, "severity"), "warning");
    ASSERT_STR_EQ(jstr(f, "title"), "w subtask 0 cannot keep up with its "
                                    "input");
    char line[128];
    snprintf(line, sizeof line,
             "input queue of w subtask 0: %" PRId64 " of %" PRId64 " items",
             cap, cap);
    ASSERT_EVIDENCE(f, line);
    ASSERT_EVIDENCE(f, "w writes its results to sink out");
    ASSERT_CONTAINS(jstr(f, "fix"), "Speed up sink out");
    /* R-WS-2: the window question still answers: the subtask, blocked
     * in its sink, is silent for the 2 s, and is answered for from its
     * published figures.  A full queue does not say the subtask is in
     * its sink yet (it may not have taken its first items): wait until
     * the gate holds it. */
    pthread_mutex_lock(&k->mu);
    while (k->blocked == 0)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    tdm_window_status ws;
    char eb[256];
    ASSERT_OK(tdm_job_window_status(job, "w", "a", 0, 10, &ws, eb, sizeof eb));
    ASSERT_TRUE(ws.blocked_ms >= 2000);
    ASSERT_EQ(ws.fired, -1);
    ASSERT_EQ(ws.has_state, -1);
    ASSERT_EQ(ws.running, 1);
    json_decref(d);
    tdm_metrics_free(m);
    tdm_job_cancel(job);
    set_gate(k, 0);
    ASSERT_OK(kit_bg_join(&bg));
    tdm_job_destroy(job);
}

static int w1_backpressured(const tdm_metrics *m, const void *arg)
{
    (void)arg;
    return metric(m, TDM_METRIC_BP_RATE, "w1", 0, -1) >= 900;
}

/* A window blocked on the full queue of the window it feeds (w1 -> w2,
 * w2's sink gated) is backpressured in time (backPressuredTimeMsPer-
 * Second), w2 is the bottleneck, and w1 still answers the window
 * question itself (busy.h, on_wait): a live answer, not the published
 * one. */
TDM_TEST(blocked_on_a_full_queue_still_answers)
{
    tdm_job *job = gated_job("endless2");
    tdm_node *w1 = kit_node(job, TDM_NODE_WINDOW, "w1");
    KIT_SET(w1, "from", "src");
    KIT_SET(w1, "key_by", "k");
    KIT_SET(w1, "window.size", "10ms");
    KIT_SET(w1, "aggregates", "count() as n");
    tdm_node *w2 = kit_node(job, TDM_NODE_WINDOW, "w2");
    KIT_SET(w2, "from", "w1");
    KIT_SET(w2, "key_by", "k");
    KIT_SET(w2, "window.size", "10ms");
    KIT_SET(w2, "sink", "out2");
    kit_node(job, TDM_NODE_SINK, "out2");
    kit_sink *k = kit_sink_get("out2");
    set_gate(k, 1);
    kit_bg bg;
    kit_bg_start(&bg, job);
    tdm_metrics *m = wait_snap(job, w1_backpressured, NULL, "w1 backpressured");
    json_t *d = tdm__diagnose(job, m, NULL);
    json_t *f = finding_coded(d, "BACKPRESSURE");
    ASSERT_TRUE(f != NULL);
    ASSERT_STR_EQ(jstr(f, "vertex"), "w2");
    ASSERT_CONTAINS(jstr(f, "fix"), "Speed up sink out2");
    tdm_window_status ws;
    char eb[256];
    ASSERT_OK(tdm_job_window_status(job, "w1", "a", 0, 10, &ws, eb, sizeof eb));
    ASSERT_EQ(ws.blocked_ms, 0);
    ASSERT_EQ(ws.running, 1);
    ASSERT_TRUE(ws.fired == 0 || ws.fired == 1);
    ASSERT_TRUE(ws.has_state == 0 || ws.has_state == 1);
    json_decref(d);
    tdm_metrics_free(m);
    tdm_job_cancel(job);
    set_gate(k, 0);
    ASSERT_OK(kit_bg_join(&bg));
    tdm_job_destroy(job);
}

/* In-order data that finished: nothing to report but "all clear", with
 * the numbers (4 records in, 2 results: a's [0,10000) and
 * [10000,20000)). */
TDM_TEST(healthy_job_is_all_clear)
{
    static const kit_row r[] = {{0, "a", 1000, 1},
                                {0, "a", 2000, 1},
                                {0, "a", 3000, 1},
                                {0, "a", 12000, 1}};
    kit_add_data((kit_data){"fine", 1, r, 4, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    kit_source_node(job, "src", "fine");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    json_t *d = tdm__diagnose(job, m, NULL);
    if (json_array_size(json_object_get(d, "findings")) != 1)
        dump(d);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 1);
    json_t *f = finding_at(d, 0);
    ASSERT_STR_EQ(jstr(f, "code"), "ALL_CLEAR");
    ASSERT_STR_EQ(jstr(f, "severity"), "info");
    ASSERT_EVIDENCE(f, "the job is not running");
    ASSERT_EVIDENCE(f, "4 records read, 2 results written");
    ASSERT_TRUE(json_is_false(json_object_get(d, "running")));
    json_decref(d);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* Severity orders the findings, not the order the rules run in: a
 * partition lagging by less than a window period but silent for 4m12s
 * is a warning (p0 at 10:00:00.999, p1 at 10:00:04.999: 4 s behind, the
 * window period 5 min), found before the trigger rule; the "never"
 * trigger is critical and comes first. */
TDM_TEST(critical_findings_come_first)
{
    static const ph_row rows[] = {{1, "p0", "a", B + 1000},
                                  {1, "p1", "b", B + 2000},
                                  {2, "p1", "b", B + 5000}};
    kit_bg bg;
    tdm_node *w;
    tdm_job *job = ph_job(rows, 3, T0, &w);
    KIT_SET(w, "trigger", "never");
    kit_bg_start(&bg, job);
    ph_release(1);
    int64_t two = 2, three = 3, wm = B + 999;
    tdm_metrics_free(wait_snap(job, in_is, &two, "phase 1"));
    atomic_store(&ph_now, T1);
    ph_release(2);
    tdm_metrics_free(wait_snap(job, in_is, &three, "phase 2"));
    /* Waiting for the records and the watermark alone could snapshot p1
     * still at B+1999 (1.0s ahead). */
    const int64_t parts[] = {1, B + 4999, -1, 0};
    tdm_metrics_free(wait_snap(job, parts_wm_are, parts, "p1 watermark"));
    tdm_metrics *m = wait_snap(job, wm_is, &wm, "watermark");
    json_t *d = tdm__diagnose(job, m, NULL);
    if (json_array_size(json_object_get(d, "findings")) != 2)
        dump(d);
    ASSERT_EQ(json_array_size(json_object_get(d, "findings")), 2);
    json_t *f = finding_at(d, 0);
    ASSERT_STR_EQ(jstr(f, "code"), "TRIGGER_NEVER_FIRES_ON_EVENT_TIME");
    ASSERT_STR_EQ(jstr(f, "severity"), "critical");
    ASSERT_EVIDENCE(f, "the never trigger fires no window at all");
    f = finding_at(d, 1);
    ASSERT_STR_EQ(jstr(f, "code"), "HELD_BACK_PARTITION");
    ASSERT_STR_EQ(jstr(f, "severity"), "warning");
    ASSERT_STR_EQ(jstr(f, "title"), "Partition \"p0\" of source clicks "
                                    "holds the watermark back by 4.0s");
    json_decref(d);
    tdm_metrics_free(m);
    ph_finish(&bg, job);
}
