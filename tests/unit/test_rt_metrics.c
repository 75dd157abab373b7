/* SPDX-License-Identifier: MIT */
/* test_rt_metrics.c - the metrics of a running job (tdm_job_metrics),
 * the window status (tdm_job_window_status) and the debug log.
 *
 * Live scenarios use a "feed" source whose rows the test hands over one
 * step at a time, and the job's processing-time clock injected as a
 * variable the test moves: periodic watermarks, idleness and ages then
 * follow from the rules and are derived by hand in each test's comment.
 * Nothing sleeps: the test waits for the pipeline to reach a state by
 * polling the snapshot (yielding, with a generous bound). */
#include <stdlib.h>
#include <unistd.h>

#include "runtime/metrics.h"
#include "test_rt_kit.h"

#include "test_rt_feed.h"
#include "testhooks.h"

/* ====================================================================== */
/* Snapshot helpers                                                       */
/* ====================================================================== */

static tdm_metrics *snap(tdm_job *job)
{
    tdm_metrics *m = NULL;
    ASSERT_OK(tdm_job_metrics(job, &m));
    ASSERT_TRUE(m != NULL);
    return m;
}

/* A value that must exist. */
#define GET(m, id, vx, sub, idx)                                               \
    get_value(__FILE__, __LINE__, (m), TDM_METRIC_##id, (vx), (sub), (idx))

static int64_t get_value(const char *file, int line, const tdm_metrics *m,
                         tdm_metric id, const char *vx, int sub, int idx)
{
    int64_t v = 0;
    if (!tdm_metrics_find(m, id, vx, sub, idx, &v))
        tdm_test_fail(file, line, "no value %s of %s[%d] index %d",
                      tdm_metric_name(id), vx ? vx : "(job)", sub, idx);
    return v;
}

#define ABSENT(m, id, vx, sub, idx)                                            \
    ASSERT_TRUE(                                                               \
        !tdm_metrics_find((m), TDM_METRIC_##id, (vx), (sub), (idx), NULL))

/* The label of a value that must exist. */
static const char *label_of(const tdm_metrics *m, tdm_metric id, const char *vx,
                            int sub, int idx)
{
    for (size_t i = 0; i < tdm_metrics_count(m); i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        if (v->id == id && v->vertex && strcmp(v->vertex, vx) == 0 &&
            v->subtask == sub && v->index == idx)
            return v->label;
    }
    return NULL;
}

/* Waits until value (id, vx, sub, idx) of a fresh snapshot equals
 * @p want (a bounded spin: the pipeline runs on its own threads). */
#define WAIT_FOR(job, id, vx, sub, idx, want)                                  \
    wait_for(__FILE__, __LINE__, (job), TDM_METRIC_##id, (vx), (sub), (idx),   \
             (want))

static void wait_for(const char *file, int line, tdm_job *job, tdm_metric id,
                     const char *vx, int sub, int idx, int64_t want)
{
    double t0 = kit_secs();
    int64_t v = 0;
    for (;;) {
        tdm_metrics *m = snap(job);
        int found = tdm_metrics_find(m, id, vx, sub, idx, &v);
        tdm_metrics_free(m);
        if (found && v == want)
            return;
        if (kit_secs() - t0 > 20)
            tdm_test_fail(file, line,
                          "%s of %s[%d] index %d: still %lld, want %lld",
                          tdm_metric_name(id), vx, sub, idx, (long long)v,
                          (long long)want);
        for (int i = 0; i < 1000; i++)
            sched_yield();
    }
}

/* Watermarks that follow the data exactly: bound 0, one per record
 * (the setting most cases here need to know when a window fires). */
static void exact_watermarks(tdm_node *s)
{
    KIT_SET(s, "watermark.max_out_of_orderness", "0ms");
    KIT_SET(s, "watermark.emit", "on_event");
}

/* ====================================================================== */
/* The table                                                              */
/* ====================================================================== */

/* The accessors read TDM_METRIC_MAP: two rows checked against the
 * header's text, and ids outside the table. */
TDM_TEST(table_accessors)
{
    ASSERT_STR_EQ(tdm_metric_name(TDM_METRIC_WM_OUTPUT),
                  "currentOutputWatermark");
    ASSERT_STR_EQ(tdm_metric_scope(TDM_METRIC_WM_OUTPUT), "VERTEX");
    ASSERT_STR_EQ(tdm_metric_type(TDM_METRIC_WM_OUTPUT), "GAUGE");
    ASSERT_STR_EQ(tdm_metric_unit(TDM_METRIC_WM_OUTPUT), "ms");
    ASSERT_STR_EQ(tdm_metric_name(TDM_METRIC_P_RECORDS), "partitionRecords");
    ASSERT_STR_EQ(tdm_metric_scope(TDM_METRIC_P_RECORDS), "PARTITION");
    ASSERT_STR_EQ(tdm_metric_type(TDM_METRIC_P_RECORDS), "COUNTER");
    ASSERT_STR_EQ(tdm_metric_help(TDM_METRIC_UPTIME),
                  "Processing time since the run started");
    ASSERT_TRUE(tdm_metric_name(TDM_METRIC_COUNT_) == NULL);
    ASSERT_TRUE(tdm_metric_scope((tdm_metric)-1) == NULL);
    ASSERT_TRUE(tdm_metric_help((tdm_metric)9999) == NULL);
}

/* ====================================================================== */
/* Vertices                                                               */
/* ====================================================================== */

/* Before any run a snapshot has the vertices (sources, operators,
 * sinks, each in the order added) and no value. */
TDM_TEST(vertices_before_a_run)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", "2");
    KIT_JOB_SET(job, "dead_letter", "bad");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    kit_source_node(job, "a", "none");
    kit_source_node(job, "b", "none");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_node(job, TDM_NODE_SINK, "bad");
    KIT_SET(w, "from", "a, b");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.type", "sliding");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "window.slide", "5s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    KIT_SET(w, "late_output", "out");
    tdm_metrics *m = snap(job);
    ASSERT_EQ(tdm_metrics_running(m), 0);
    ASSERT_EQ(tdm_metrics_count(m), 0);
    ASSERT_EQ(tdm_metrics_vertex_count(m), 5);
    const tdm_vertex_info *v = tdm_metrics_vertex(m, 0);
    ASSERT_STR_EQ(v->name, "a");
    ASSERT_EQ(v->kind, TDM_NODE_SOURCE);
    ASSERT_STR_EQ(v->type, "file");
    ASSERT_EQ(v->parallelism, 2);
    ASSERT_EQ(v->n_inputs, 0);
    ASSERT_STR_EQ(tdm_metrics_vertex(m, 1)->name, "b");
    v = tdm_metrics_vertex(m, 2);
    ASSERT_STR_EQ(v->name, "w");
    ASSERT_EQ(v->kind, TDM_NODE_WINDOW);
    ASSERT_STR_EQ(v->type, "sliding");
    ASSERT_EQ(v->n_inputs, 2);
    ASSERT_STR_EQ(v->inputs[0], "a");
    ASSERT_STR_EQ(v->inputs[1], "b");
    v = tdm_metrics_vertex(m, 3);
    ASSERT_STR_EQ(v->name, "out");
    ASSERT_EQ(v->kind, TDM_NODE_SINK);
    ASSERT_EQ(v->parallelism, 1);
    ASSERT_EQ(v->n_inputs, 1);
    ASSERT_STR_EQ(v->inputs[0], "w");
    /* The dead letter sink is fed by every source. */
    v = tdm_metrics_vertex(m, 4);
    ASSERT_STR_EQ(v->name, "bad");
    ASSERT_EQ(v->n_inputs, 2);
    ASSERT_STR_EQ(v->inputs[0], "a");
    ASSERT_STR_EQ(v->inputs[1], "b");
    ASSERT_TRUE(tdm_metrics_vertex(m, 5) == NULL);
    ASSERT_TRUE(tdm_metrics_at(m, 0) == NULL);
    tdm_metrics_free(m);
    ASSERT_ERR(tdm_job_metrics(NULL, &m), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_job_metrics(job, NULL), TDM_ERR_INVAL);
    tdm_metrics_free(NULL);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* A stalled partition                                                    */
/* ====================================================================== */

/* Source "src" with partitions p0 and p1, bounded watermarks with no
 * disorder allowed (a split's watermark is its max - 0 - 1), periodic
 * emission every 200 ms of processing time, idle timeout 1 s; a
 * tumbling 10 s count over it.  Processing time starts at T0.
 *
 *   T0        p0 gets ts 10000, p1 ts 5000 (read; no tick is due)
 *   T0+200    tick: p0 9999, p1 4999, the reader emits min = 4999
 *   T0+200    p0 gets ts 20000 (p1 stalls)
 *   T0+400    tick: p0 19999; the output stays 4999 (p1 is active and
 *             the lowest: it holds the watermark back).  p1 saw no
 *             record since the previous tick: its idleness countdown
 *             starts here.
 *
 * Snapshot at T0+400: partition watermarks 19999 and 4999, max
 * timestamps 20000 and 5000, records 2 and 1, ages 200 (p0's last
 * record was read at T0+200) and 400; neither idle (p1's last record is
 * 400 ms old, below 1 s); the source's output 4999 and lag
 * (T0+400) - 4999; the window's one channel "src#0" at 4999, active,
 * not ended, and its input watermark 4999.
 *
 *   T0+400    p0 gets ts 30000
 *   T0+2000   tick: p0 29999 (it had a record); p1's countdown has run
 *             1600 ms > 1 s: idle.  The output is the minimum over
 *             non-idle splits: 29999.
 *
 * Snapshot at T0+2000: p1 idle, age 2000; p0 not idle; output 29999. */
TDM_TEST(stalled_partition_watermarks_and_idleness)
{
    n_feeds = 0;
    feed *f = feed_new("stall", 2);
    atomic_store(&clock_now, T0);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, test_clock, NULL);
    tdm_node *s = feed_node(job, "src", "stall");
    KIT_SET(s, "watermark.max_out_of_orderness", "0ms");
    KIT_SET(s, "watermark.interval", "200ms");
    KIT_SET(s, "watermark.idle_timeout", "1s");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_bg bg;
    kit_bg_start(&bg, job);

    feed_push(f, 0, "a", 10000);
    feed_push(f, 1, "b", 5000);
    WAIT_FOR(job, RECORDS_IN, "src", 0, -1, 2);
    atomic_store(&clock_now, T0 + 200);
    WAIT_FOR(job, WM_OUTPUT, "src", 0, -1, 4999);
    feed_push(f, 0, "a", 20000);
    WAIT_FOR(job, RECORDS_IN, "src", 0, -1, 3);
    atomic_store(&clock_now, T0 + 400);
    WAIT_FOR(job, P_WM, "src", 0, 0, 19999);
    WAIT_FOR(job, CH_WM, "w", 0, 0, 4999);
    WAIT_FOR(job, RECORDS_IN, "w", 0, -1, 3);

    tdm_metrics *m = snap(job);
    ASSERT_EQ(tdm_metrics_running(m), 1);
    ASSERT_EQ(tdm_metrics_time(m), T0 + 400);
    ASSERT_EQ(GET(m, UPTIME, NULL, -1, -1), 400);
    ASSERT_EQ(GET(m, P_WM, "src", 0, 0), 19999);
    ASSERT_EQ(GET(m, P_WM, "src", 0, 1), 4999);
    ASSERT_EQ(GET(m, P_MAX_TS, "src", 0, 0), 20000);
    ASSERT_EQ(GET(m, P_MAX_TS, "src", 0, 1), 5000);
    ASSERT_EQ(GET(m, P_RECORDS, "src", 0, 0), 2);
    ASSERT_EQ(GET(m, P_RECORDS, "src", 0, 1), 1);
    ASSERT_EQ(GET(m, P_LAST_AGE, "src", 0, 0), 200);
    ASSERT_EQ(GET(m, P_LAST_AGE, "src", 0, 1), 400);
    ASSERT_EQ(GET(m, P_IDLE, "src", 0, 0), 0);
    ASSERT_EQ(GET(m, P_IDLE, "src", 0, 1), 0);
    ASSERT_EQ(GET(m, P_FINISHED, "src", 0, 1), 0);
    ASSERT_EQ(GET(m, P_PAUSED, "src", 0, 1), 0);
    /* Partition names of a test source are their numbers. */
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_P_WM, "src", 0, 1), "1");
    ASSERT_EQ(GET(m, WM_OUTPUT, "src", 0, -1), 4999);
    ASSERT_EQ(GET(m, WM_INPUT, "src", 0, -1), 4999);
    ASSERT_EQ(GET(m, WM_LAG, "src", 0, -1), T0 + 400 - 4999);
    ASSERT_EQ(GET(m, IDLE, "src", 0, -1), 0);
    ASSERT_EQ(GET(m, RECORDS_IN, "src", 0, -1), 3);
    ASSERT_EQ(GET(m, RECORDS_OUT, "src", 0, -1), 3);
    ASSERT_EQ(GET(m, MAX_TS, "src", 0, -1), 20000);
    ASSERT_EQ(GET(m, LAST_RECORD_AGE, "src", 0, -1), 200);
    ASSERT_EQ(GET(m, TS_UNIT, "src", 0, -1), 0);
    ABSENT(m, ALIGN_DRIFT, "src", 0, -1);
    ASSERT_EQ(GET(m, CH_WM, "w", 0, 0), 4999);
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_CH_WM, "w", 0, 0), "src#0");
    ASSERT_EQ(GET(m, CH_IDLE, "w", 0, 0), 0);
    ASSERT_EQ(GET(m, CH_ENDED, "w", 0, 0), 0);
    ASSERT_EQ(GET(m, INPUT_WM, "w", 0, 1), 4999);
    ASSERT_EQ(GET(m, WM_INPUT, "w", 0, -1), 4999);
    ASSERT_EQ(GET(m, WM_OUTPUT, "w", 0, -1), 4999);
    ASSERT_EQ(GET(m, RECORDS_IN, "w", 0, -1), 3);
    /* Keys a and b; windows a[0,10000), a[10000,20000)... a has 10000
     * and 20000: [10000,20000) and [20000,30000); b [0,10000). */
    ASSERT_EQ(GET(m, STATE_KEYS, "w", 0, -1), 2);
    ASSERT_EQ(GET(m, STATE_WINDOWS, "w", 0, -1), 3);
    ASSERT_TRUE(GET(m, STATE_BYTES, "w", 0, -1) > 0);
    ASSERT_EQ(GET(m, QUEUE_CAP, "w", 0, -1), 16);
    ASSERT_EQ(GET(m, PANES, "w", 0, -1), 0);
    ASSERT_EQ(GET(m, RECORDS_IN, "out", 0, -1), 0);
    tdm_metrics_free(m);

    feed_push(f, 0, "a", 30000);
    WAIT_FOR(job, RECORDS_IN, "src", 0, -1, 4);
    atomic_store(&clock_now, T0 + 2000);
    WAIT_FOR(job, WM_OUTPUT, "src", 0, -1, 29999);
    m = snap(job);
    ASSERT_EQ(GET(m, P_IDLE, "src", 0, 1), 1);
    ASSERT_EQ(GET(m, P_IDLE, "src", 0, 0), 0);
    ASSERT_EQ(GET(m, P_LAST_AGE, "src", 0, 1), 2000);
    ASSERT_EQ(GET(m, P_WM, "src", 0, 0), 29999);
    ASSERT_EQ(GET(m, WM_INPUT, "src", 0, -1), 29999);
    tdm_metrics_free(m);

    feed_end(f);
    ASSERT_OK(kit_bg_join(&bg));
    /* After the run: the final values, every partition finished and at
     * the end-of-input watermark. */
    m = snap(job);
    ASSERT_EQ(tdm_metrics_running(m), 0);
    ASSERT_EQ(GET(m, P_FINISHED, "src", 0, 0), 1);
    ASSERT_EQ(GET(m, P_FINISHED, "src", 0, 1), 1);
    ASSERT_EQ(GET(m, WM_OUTPUT, "src", 0, -1), TDM_TIME_MAX);
    ASSERT_EQ(GET(m, WM_OUTPUT, "w", 0, -1), TDM_TIME_MAX);
    ASSERT_EQ(GET(m, CH_ENDED, "w", 0, 0), 1);
    ABSENT(m, WM_LAG, "w", 0, -1);
    /* b[0,10000), a[10000,20000), a[20000,30000), a[30000,40000). */
    ASSERT_EQ(GET(m, PANES, "w", 0, -1), 4);
    ASSERT_EQ(GET(m, RECORDS_OUT, "w", 0, -1), 4);
    ASSERT_EQ(GET(m, RECORDS_IN, "out", 0, -1), 4);
    ASSERT_EQ(GET(m, STATE_WINDOWS, "w", 0, -1), 0);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* An idle channel                                                        */
/* ====================================================================== */

/* One partition, idle timeout 1 s, ticks every 200 ms from T0:
 *   T0        a@1000 read
 *   T0+200    tick: watermark 999 (bound 0)
 *   T0+400    tick: no record since the last tick: countdown from here
 *   T0+1500   tick: 1100 ms > 1 s: the split is idle, so is the whole
 *             reader (its only split): it flushes the maximum (999, no
 *             rise) and announces IDLE, which the window's valve takes
 *             on its one channel: the window is idle too.
 * The window status then names no holding channel and one idle
 * channel. */
TDM_TEST(idle_channel_and_vertex)
{
    n_feeds = 0;
    feed *f = feed_new("one", 1);
    atomic_store(&clock_now, T0);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, test_clock, NULL);
    tdm_node *s = feed_node(job, "src", "one");
    KIT_SET(s, "watermark.max_out_of_orderness", "0ms");
    KIT_SET(s, "watermark.interval", "200ms");
    KIT_SET(s, "watermark.idle_timeout", "1s");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_bg bg;
    kit_bg_start(&bg, job);
    feed_push(f, 0, "a", 1000);
    WAIT_FOR(job, RECORDS_IN, "src", 0, -1, 1);
    atomic_store(&clock_now, T0 + 200);
    WAIT_FOR(job, CH_WM, "w", 0, 0, 999);
    atomic_store(&clock_now, T0 + 400);
    /* The tick at T0+400 (which starts the countdown) must run before
     * the clock moves on. */
    feed_sync(f);
    atomic_store(&clock_now, T0 + 1500);
    WAIT_FOR(job, CH_IDLE, "w", 0, 0, 1);
    WAIT_FOR(job, IDLE, "w", 0, -1, 1);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(GET(m, IDLE, "src", 0, -1), 1);
    ASSERT_EQ(GET(m, P_IDLE, "src", 0, 0), 1);
    ASSERT_EQ(GET(m, CH_WM, "w", 0, 0), 999);
    ASSERT_EQ(GET(m, CH_ENDED, "w", 0, 0), 0);
    /* No active channel: the input's watermark is the highest. */
    ASSERT_EQ(GET(m, INPUT_WM, "w", 0, 1), 999);
    tdm_metrics_free(m);
    tdm_window_status st;
    char msg[256];
    ASSERT_OK(
        tdm_job_window_status(job, "w", "a", 0, 10000, &st, msg, sizeof msg));
    ASSERT_EQ(st.running, 1);
    ASSERT_EQ(st.holding_channel, -1);
    ASSERT_EQ(st.idle_channels, 1);
    ASSERT_EQ(st.has_state, 1);
    ASSERT_EQ(st.elements, 1);
    ASSERT_EQ(st.fired, 0);
    ASSERT_EQ(st.watermark, 999);
    feed_end(f);
    ASSERT_OK(kit_bg_join(&bg));
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* Counters, late samples, window status after the run                    */
/* ====================================================================== */

/* One partition, on-event watermarks with bound 0 (each record moves the
 * watermark to its ts - 1 when higher), read by two tumbling 10 s count
 * windows: "w" with allowed lateness 5 s and a late output, "w2" with
 * neither.
 *   a@1000               wm 999
 *   b@12000              wm 11999: a[0,10s) fires in w and w2 (n 1);
 *                        w2 cleans it up (cleanup 9999)
 *   a@2000   w:  [0,10s) lives until 14999: a late firing, n 2 (late#1)
 *            w2: too late: dropped
 *   c@16000              wm 15999: w cleans [0,10s) up
 *   a@3000   w:  too late: to the late output; w2: dropped
 *   b@25000              wm 24999: b[10s,20s) and c[10s,20s) fire
 *   end                  b[20s,30s) fires
 * w writes 5 results (one of them a late pane), w2 4; 1 record goes to
 * the late output, 2 are dropped. */
static const kit_row late_rows_data[] = {
    {0, "a", 1000, 1},  {0, "b", 12000, 1}, {0, "a", 2000, 1},
    {0, "c", 16000, 1}, {0, "a", 3000, 1},  {0, "b", 25000, 1},
};

static tdm_job *late_job(void)
{
    kit_add_data((kit_data){"late", 1, late_rows_data, 6, 0, 0, 0});
    atomic_store(&clock_now, T0);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, test_clock, NULL);
    tdm_node *s = kit_source_node(job, "src", "late");
    exact_watermarks(s);
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "allowed_lateness", "5s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    KIT_SET(w, "late_output", "late");
    tdm_node *w2 = kit_node(job, TDM_NODE_WINDOW, "w2");
    KIT_SET(w2, "from", "src");
    KIT_SET(w2, "key_by", "k");
    KIT_SET(w2, "window.size", "10s");
    KIT_SET(w2, "aggregates", "count() as n");
    KIT_SET(w2, "sink", "out2");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_node(job, TDM_NODE_SINK, "out2");
    kit_node(job, TDM_NODE_SINK, "late");
    return job;
}

TDM_TEST(counters_equal_job_stats)
{
    tdm_job *job = late_job();
    kit_run_ok(job);
    ASSERT_EQ(kit_sink_get("out")->n, 5);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(tdm_metrics_running(m), 0);
    ASSERT_EQ(GET(m, RECORDS_IN, "src", 0, -1),
              tdm_job_stat(job, TDM_STAT_RECORDS_IN));
    ASSERT_EQ(GET(m, RECORDS_IN, "src", 0, -1), 6);
    ASSERT_EQ(GET(m, RECORDS_OUT, "src", 0, -1), 6);
    ASSERT_EQ(GET(m, P_RECORDS, "src", 0, 0), 6);
    ASSERT_EQ(GET(m, RECORDS_IN, "w", 0, -1), 6);
    ASSERT_EQ(GET(m, RECORDS_IN, "w2", 0, -1), 6);
    ASSERT_EQ(GET(m, RECORDS_OUT, "w", 0, -1) +
                  GET(m, RECORDS_OUT, "w2", 0, -1),
              tdm_job_stat(job, TDM_STAT_RECORDS_OUT));
    ASSERT_EQ(GET(m, RECORDS_OUT, "w", 0, -1), 5);
    ASSERT_EQ(GET(m, RECORDS_OUT, "w2", 0, -1), 4);
    ASSERT_EQ(GET(m, PANES, "w", 0, -1), 5);
    ASSERT_EQ(GET(m, PANES, "w2", 0, -1), 4);
    ASSERT_EQ(GET(m, LATE_PANES, "w", 0, -1),
              tdm_job_stat(job, TDM_STAT_LATE_REFIRES));
    ASSERT_EQ(GET(m, LATE_PANES, "w", 0, -1), 1);
    ASSERT_EQ(GET(m, LATE_PANES, "w2", 0, -1), 0);
    ASSERT_EQ(GET(m, LATE_SIDE, "w", 0, -1),
              tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT));
    ASSERT_EQ(GET(m, LATE_SIDE, "w", 0, -1), 1);
    ASSERT_EQ(GET(m, LATE_DROPPED, "w2", 0, -1),
              tdm_job_stat(job, TDM_STAT_LATE_DROPPED));
    ASSERT_EQ(GET(m, LATE_DROPPED, "w2", 0, -1), 2);
    ASSERT_EQ(GET(m, LATE_DROPPED, "w", 0, -1), 0);
    ASSERT_EQ(GET(m, WM_REGRESSIONS, "w", 0, -1),
              tdm_job_stat(job, TDM_STAT_WM_REGRESSIONS));
    ASSERT_EQ(GET(m, BAD_RECORDS, "src", 0, -1),
              tdm_job_stat(job, TDM_STAT_BAD_RECORDS));
    ASSERT_EQ(GET(m, GUARD_HITS, "src", 0, -1),
              tdm_job_stat(job, TDM_STAT_GUARD_HITS));
    /* Sinks count what they were given. */
    ASSERT_EQ(GET(m, RECORDS_IN, "out", 0, -1), 5);
    ASSERT_EQ(GET(m, RECORDS_IN, "out2", 0, -1), 4);
    ASSERT_EQ(GET(m, RECORDS_IN, "late", 0, -1), 1);
    /* Watermarks are at the end, so there is no lag. */
    ASSERT_EQ(GET(m, WM_OUTPUT, "w", 0, -1), TDM_TIME_MAX);
    ABSENT(m, WM_LAG, "src", 0, -1);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* The late samples of the same run, oldest first (all at T0: in
 * collection order, w before w2): w's one record sent to the late output
 * (a@3000 at watermark 15999), then w2's two drops (a@2000 at 11999,
 * a@3000 at 15999), each with the row as JSON. */
TDM_TEST(late_samples)
{
    tdm_job *job = late_job();
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(tdm_metrics_late_count(m), 3);
    const tdm_late_sample *l = tdm_metrics_late_at(m, 0);
    ASSERT_STR_EQ(l->vertex, "w");
    ASSERT_EQ(l->subtask, 0);
    ASSERT_EQ(l->ts, 3000);
    ASSERT_EQ(l->watermark, 15999);
    ASSERT_EQ(l->at, T0);
    ASSERT_EQ(l->dropped, 0);
    ASSERT_STR_EQ(l->row, "{\"k\": \"a\", \"ts\": 3000, \"v\": 1}");
    l = tdm_metrics_late_at(m, 1);
    ASSERT_STR_EQ(l->vertex, "w2");
    ASSERT_EQ(l->ts, 2000);
    ASSERT_EQ(l->watermark, 11999);
    ASSERT_EQ(l->dropped, 1);
    ASSERT_STR_EQ(l->row, "{\"k\": \"a\", \"ts\": 2000, \"v\": 1}");
    l = tdm_metrics_late_at(m, 2);
    ASSERT_STR_EQ(l->vertex, "w2");
    ASSERT_EQ(l->ts, 3000);
    ASSERT_EQ(l->watermark, 15999);
    ASSERT_EQ(l->dropped, 1);
    ASSERT_TRUE(tdm_metrics_late_at(m, 3) == NULL);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* After the run the answer comes from what the subtasks left: a[0,10s)
 * fired first at watermark 11999 in both windows; in w its cleanup time
 * is 9999 + 5000; c never had a window [0,10s).  Everything is flushed:
 * no state, the watermark at the end, no holding channel. */
TDM_TEST(window_status_after_the_run)
{
    tdm_job *job = late_job();
    tdm_window_status st;
    char msg[256] = "";
    ASSERT_ERR(
        tdm_job_window_status(job, "w", "a", 0, 10000, &st, msg, sizeof msg),
        TDM_ERR_STATE);
    ASSERT_TRUE(strstr(msg, "not run") != NULL);
    kit_run_ok(job);
    ASSERT_OK(
        tdm_job_window_status(job, "w", "a", 0, 10000, &st, msg, sizeof msg));
    ASSERT_EQ(st.running, 0);
    ASSERT_EQ(st.subtask, 0);
    ASSERT_EQ(st.fired, 1);
    ASSERT_EQ(st.fired_wm, 11999);
    ASSERT_EQ(st.max_ts, 9999);
    ASSERT_EQ(st.cleanup, 14999);
    ASSERT_EQ(st.watermark, TDM_TIME_MAX);
    ASSERT_EQ(st.has_state, 0);
    ASSERT_EQ(st.elements, 0);
    ASSERT_EQ(st.holding_channel, -1);
    ASSERT_OK(
        tdm_job_window_status(job, "w2", "a", 0, 10000, &st, msg, sizeof msg));
    ASSERT_EQ(st.fired, 1);
    ASSERT_EQ(st.fired_wm, 11999);
    ASSERT_EQ(st.cleanup, 9999);
    /* b[20s,30s) fired at the end of input. */
    ASSERT_OK(tdm_job_window_status(job, "w", "b", 20000, 30000, &st, msg,
                                    sizeof msg));
    ASSERT_EQ(st.fired, 1);
    ASSERT_EQ(st.fired_wm, TDM_TIME_MAX);
    ASSERT_OK(
        tdm_job_window_status(job, "w", "c", 0, 10000, &st, msg, sizeof msg));
    ASSERT_EQ(st.fired, 0);
    ASSERT_EQ(st.fired_wm, TDM_TIME_MIN);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* Window status of a live job                                            */
/* ====================================================================== */

/* A window over the union of two sources (channel 0 "fa#0", channel 1
 * "fb#0"), on-event watermarks with bound 0, tumbling 10 s counts:
 *   fa: a@1000, a@2000, a@15000   its watermark 14999
 *   fb: x@3000                    its watermark 2999
 * The window's watermark is the minimum, 2999: a[0,10s) holds 2 records
 * and waits for 9999; channel 1 holds it back at 2999.  A key that was
 * never seen has no state.  Then fb: x@20000 (19999): the window moves
 * to 14999, a[0,10s) fires (first firing at 14999) and is cleaned up
 * (no lateness). */
TDM_TEST(window_status_pending_then_fired)
{
    n_feeds = 0;
    feed *fa = feed_new("fa", 1);
    feed *fb = feed_new("fb", 1);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *a = feed_node(job, "a", "fa");
    tdm_node *b = feed_node(job, "b", "fb");
    exact_watermarks(a);
    exact_watermarks(b);
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "a, b");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_bg bg;
    kit_bg_start(&bg, job);
    feed_push(fa, 0, "a", 1000);
    feed_push(fa, 0, "a", 2000);
    feed_push(fa, 0, "a", 15000);
    feed_push(fb, 0, "x", 3000);
    WAIT_FOR(job, CH_WM, "w", 0, 0, 14999);
    WAIT_FOR(job, CH_WM, "w", 0, 1, 2999);
    WAIT_FOR(job, RECORDS_IN, "w", 0, -1, 4);

    tdm_window_status st;
    char msg[256];
    ASSERT_OK(
        tdm_job_window_status(job, "w", "a", 0, 10000, &st, msg, sizeof msg));
    ASSERT_EQ(st.running, 1);
    ASSERT_EQ(st.subtask, 0);
    ASSERT_EQ(st.watermark, 2999);
    ASSERT_EQ(st.max_ts, 9999);
    ASSERT_EQ(st.cleanup, 9999);
    ASSERT_EQ(st.has_state, 1);
    ASSERT_EQ(st.elements, 2);
    ASSERT_EQ(st.fired, 0);
    ASSERT_EQ(st.holding_channel, 1);
    ASSERT_EQ(st.holding_wm, 2999);
    ASSERT_EQ(st.idle_channels, 0);
    /* A key with no state. */
    ASSERT_OK(tdm_job_window_status(job, "w", "nobody", 0, 10000, &st, msg,
                                    sizeof msg));
    ASSERT_EQ(st.has_state, 0);
    ASSERT_EQ(st.elements, 0);
    ASSERT_EQ(st.fired, 0);
    ASSERT_EQ(st.holding_channel, 1);

    feed_push(fb, 0, "x", 20000);
    WAIT_FOR(job, WM_INPUT, "w", 0, -1, 14999);
    ASSERT_OK(
        tdm_job_window_status(job, "w", "a", 0, 10000, &st, msg, sizeof msg));
    ASSERT_EQ(st.fired, 1);
    ASSERT_EQ(st.fired_wm, 14999);
    ASSERT_EQ(st.has_state, 0);
    ASSERT_EQ(st.watermark, 14999);
    ASSERT_EQ(st.holding_channel, 0);
    ASSERT_EQ(st.holding_wm, 14999);
    feed_end(fa);
    feed_end(fb);
    ASSERT_OK(kit_bg_join(&bg));
    tdm_job_destroy(job);
}

/* Bad questions: NULL arguments, a vertex that is no window, an empty
 * window, a key its fields' types cannot read. */
TDM_TEST(window_status_bad_input)
{
    tdm_job *job = late_job();
    tdm_node *wk = kit_node(job, TDM_NODE_WINDOW, "wk");
    KIT_SET(wk, "from", "src");
    KIT_SET(wk, "key_by", "k, v");
    KIT_SET(wk, "window.size", "10s");
    KIT_SET(wk, "aggregates", "count() as n");
    KIT_SET(wk, "sink", "out");
    kit_run_ok(job);
    tdm_window_status st;
    char msg[256];
    ASSERT_ERR(
        tdm_job_window_status(NULL, "w", "a", 0, 1, &st, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_ERR(
        tdm_job_window_status(job, "w", "a", 0, 1, NULL, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_ERR(
        tdm_job_window_status(job, NULL, "a", 0, 1, &st, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_ERR(
        tdm_job_window_status(job, "w", NULL, 0, 1, &st, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_ERR(
        tdm_job_window_status(job, "nope", "a", 0, 1, &st, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "nope") != NULL);
    ASSERT_ERR(
        tdm_job_window_status(job, "src", "a", 0, 1, &st, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "not a window") != NULL);
    ASSERT_ERR(
        tdm_job_window_status(job, "w", "a", 10, 10, &st, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "start") != NULL);
    /* Key fields k (string) and v (int64). */
    ASSERT_ERR(
        tdm_job_window_status(job, "wk", "a", 0, 10000, &st, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "2 values") != NULL);
    ASSERT_ERR(tdm_job_window_status(job, "wk", "a,x1", 0, 10000, &st, msg,
                                     sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "'v'") != NULL);
    /* A good compound key: a@1000 with v 1 fired at 11999. */
    ASSERT_OK(tdm_job_window_status(job, "wk", "a,1", 0, 10000, &st, msg,
                                    sizeof msg));
    ASSERT_EQ(st.fired, 1);
    ASSERT_EQ(st.fired_wm, 11999);
    tdm_job_destroy(job);
}

/* At parallelism 2 the question goes to the subtask owning the key: in
 * every key's subtask its window fired (asking the other subtask would
 * say it did not).  Keys k0..k9, rows i at ts i ms, 1000 rows: every
 * key has windows [0,10s) only. */
TDM_TEST(window_status_finds_the_owning_subtask)
{
    kit_add_data((kit_data){"gen1000", 2, NULL, 0, 1000, 10, 1});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", "2");
    kit_source_node(job, "src", "gen1000");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    int seen[2] = {0, 0};
    for (int k = 0; k < 10; k++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", k);
        tdm_window_status st;
        char msg[256];
        ASSERT_OK(tdm_job_window_status(job, "w", key, 0, 10000, &st, msg,
                                        sizeof msg));
        ASSERT_EQ(st.fired, 1);
        ASSERT_TRUE(st.subtask == 0 || st.subtask == 1);
        seen[st.subtask]++;
    }
    /* Ten keys over 128 key groups land on both subtasks. */
    ASSERT_TRUE(seen[0] > 0 && seen[1] > 0);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* Event lag                                                              */
/* ====================================================================== */

/* One partition; for i = 1..100 a record at ts 10000 i (in order: lag 0)
 * then one at 10000 i - i (i behind the highest timestamp seen).  So 100
 * lags of 0 and one each of 1..100, n = 200, all below 256 where the
 * histogram is exact:
 *   p50:  the 100th smallest value: 0
 *   p99:  the 198th: 98
 *   p999: the 200th: 100;  max 100. */
static kit_row lag_rows[200];

TDM_TEST(event_lag_quantiles)
{
    for (int i = 1; i <= 100; i++) {
        lag_rows[2 * (i - 1)] = (kit_row){0, "a", 10000LL * i, 1};
        lag_rows[2 * (i - 1) + 1] = (kit_row){0, "a", 10000LL * i - i, 1};
    }
    kit_add_data((kit_data){"lag", 1, lag_rows, 200, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = kit_source_node(job, "src", "lag");
    KIT_SET(s, "watermark.max_out_of_orderness", "1s");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(GET(m, LAG_P50, "src", 0, -1), 0);
    ASSERT_EQ(GET(m, LAG_P99, "src", 0, -1), 98);
    ASSERT_EQ(GET(m, LAG_P999, "src", 0, -1), 100);
    ASSERT_EQ(GET(m, LAG_MAX, "src", 0, -1), 100);
    ASSERT_EQ(GET(m, MAX_TS, "src", 0, -1), 1000000);
    ASSERT_EQ(GET(m, P_MAX_TS, "src", 0, 0), 1000000);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* Regression (issue 4, metrics overhead): the lag histogram samples one
 * batch in RT_LAG_EVERY after the first RT_LAG_EXACT_BATCHES; its
 * quantiles must stay close to those of the whole stream and its maximum
 * must be a lag, not a bucket's bound.  Batches of 2 rows: batch j holds
 * ts 10000 j (in order) and 10000 j - j % 100 (lag j % 100), except
 * batch 3 (one of the first, always sampled) whose second row lags 5000.
 * The reference quantiles are computed here by sorting every lag of the
 * rows; the sampled P99 must be within 2 ms of it, the P50 equal, and the
 * maximum exactly 5000 (the bucket holding 5000 is 32 ms wide). */
#define SAMPLED_BATCHES 2000
static kit_row sampled_rows[2 * SAMPLED_BATCHES];

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

TDM_TEST(event_lag_sampled_close_to_full_stream)
{
    static int64_t lags[2 * SAMPLED_BATCHES];
    for (int j = 1; j <= SAMPLED_BATCHES; j++) {
        int64_t lag = j == 3 ? 5000 : j % 100;
        sampled_rows[2 * (j - 1)] = (kit_row){0, "a", 10000LL * j, 1};
        sampled_rows[2 * (j - 1) + 1] = (kit_row){0, "a", 10000LL * j - lag, 1};
        lags[2 * (j - 1)] = 0;
        lags[2 * (j - 1) + 1] = lag;
    }
    qsort(lags, 2 * SAMPLED_BATCHES, sizeof lags[0], cmp_i64);
    /* The 99th percentile: the ceil(0.99 n)-th smallest value. */
    int64_t ref_p99 = lags[(2 * SAMPLED_BATCHES * 99 + 99) / 100 - 1];
    kit_add_data(
        (kit_data){"sampled", 1, sampled_rows, 2 * SAMPLED_BATCHES, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "batch.size", "2");
    tdm_node *s = kit_source_node(job, "src", "sampled");
    KIT_SET(s, "watermark.max_out_of_orderness", "10s");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(GET(m, LAG_MAX, "src", 0, -1), 5000);
    int64_t p99 = GET(m, LAG_P99, "src", 0, -1);
    ASSERT_TRUE(p99 >= ref_p99 - 2 && p99 <= ref_p99 + 2);
    ASSERT_EQ(GET(m, LAG_P50, "src", 0, -1), lags[2 * SAMPLED_BATCHES / 2 - 1]);
    ASSERT_EQ(GET(m, RECORDS_IN, "src", 0, -1), 2 * SAMPLED_BATCHES);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* A source with no record has no lag (left out, not 0). */
TDM_TEST(no_records_no_lag)
{
    kit_add_data((kit_data){"empty", 1, lag_rows, 0, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    kit_source_node(job, "src", "empty");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    ABSENT(m, LAG_P50, "src", 0, -1);
    ABSENT(m, LAG_MAX, "src", 0, -1);
    ABSENT(m, MAX_TS, "src", 0, -1);
    ABSENT(m, LAST_RECORD_AGE, "src", 0, -1);
    ASSERT_EQ(GET(m, RECORDS_IN, "src", 0, -1), 0);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* Timestamp unit                                                         */
/* ====================================================================== */

/* Values around 1.7e9 in a ms field look like epoch seconds: the
 * subtask's suspicion is 1. */
static const kit_row secs_rows[] = {
    {0, "a", 1733133600, 1},
    {0, "a", 1733133601, 1},
    {0, "b", 1733133602, 1},
};

TDM_TEST(timestamp_unit_suspicion)
{
    kit_add_data((kit_data){"secs", 1, secs_rows, 3, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_job_set_log(job, NULL, NULL);
    kit_source_node(job, "src", "secs");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(GET(m, TS_UNIT, "src", 0, -1), 1);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* Partition names                                                        */
/* ====================================================================== */

/* Window "w" over @p from: a count per key "k" in 10 s windows, into
 * sink "out". */
static void count_window(tdm_job *job, const char *from)
{
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", from);
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Three files at parallelism 2: sorted by name they are dealt round
 * robin, a and c to subtask 0 (its local partitions 0 and 1), b to
 * subtask 1; a partition is labelled with its path and numbered by its
 * place among the source's files.  b has a malformed line: the subtask
 * reading it counts a bad record, and the dead letter sink one row. */
TDM_TEST(file_partitions_are_named_by_path)
{
    char dir[] = "/tmp/tdm_metrics_XXXXXX";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char pa[128], pb[128], pc[128], glob[128];
    snprintf(pa, sizeof pa, "%s/a.jsonl", dir);
    snprintf(pb, sizeof pb, "%s/b.jsonl", dir);
    snprintf(pc, sizeof pc, "%s/c.jsonl", dir);
    snprintf(glob, sizeof glob, "%s/*.jsonl", dir);
    write_text(pa, "{\"k\":\"a\",\"ts\":1000,\"v\":1}\n");
    write_text(pb, "{\"k\":\"b\",\"ts\":2000,\"v\":1}\nnot json\n"
                   "{\"k\":\"b\",\"ts\":3000,\"v\":1}\n");
    write_text(pc, "{\"k\":\"c\",\"ts\":4000,\"v\":1}\n"
                   "{\"k\":\"c\",\"ts\":5000,\"v\":1}\n"
                   "{\"k\":\"c\",\"ts\":6000,\"v\":1}\n");
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", "2");
    KIT_JOB_SET(job, "dead_letter", "dead");
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "files");
    KIT_SET(s, "path", glob);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    count_window(job, "files");
    kit_node(job, TDM_NODE_SINK, "dead");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(GET(m, P_RECORDS, "files", 0, 0), 1);
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_P_RECORDS, "files", 0, 0), pa);
    ASSERT_EQ(GET(m, P_RECORDS, "files", 1, 1), 2);
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_P_RECORDS, "files", 1, 1), pb);
    ASSERT_EQ(GET(m, P_RECORDS, "files", 0, 2), 3);
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_P_RECORDS, "files", 0, 2), pc);
    ASSERT_EQ(GET(m, P_MAX_TS, "files", 0, 2), 6000);
    ASSERT_EQ(GET(m, BAD_RECORDS, "files", 1, -1), 1);
    ASSERT_EQ(GET(m, BAD_RECORDS, "files", 0, -1), 0);
    ASSERT_EQ(GET(m, RECORDS_IN, "dead", 0, -1), 1);
    ASSERT_EQ(GET(m, RECORDS_IN, "files", 0, -1) +
                  GET(m, RECORDS_IN, "files", 1, -1),
              tdm_job_stat(job, TDM_STAT_RECORDS_IN));
    /* Four channels per window subtask?  No: two, one per source
     * subtask, labelled source#subtask. */
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_CH_WM, "w", 1, 1), "files#1");
    ABSENT(m, CH_WM, "w", 1, 2);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
    unlink(pa);
    unlink(pb);
    unlink(pc);
    rmdir(dir);
}

/* ====================================================================== */
/* The record that ran ahead                                              */
/* ====================================================================== */

/* The clock stands at T0; the file's lines, with a 1 h guard:
 *   1  T0 - 5 s    on time: not kept;
 *   2  T0 + 2 min  more than a minute ahead: kept;
 *   3  T0 + 3 min  not twice as far ahead as line 2: not kept (R-AH-1);
 *   4  T0 + 5 min  more than twice: kept instead;
 *   5  T0 + 2 h    above the guard, which keeps it out of the
 *                  watermark: not kept (R-AH-2).
 * The snapshot names line 4 by file:line with its bytes. */
TDM_TEST(record_ahead_is_kept_with_its_location)
{
    char dir[] = "/tmp/tdm_metrics_XXXXXX";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char path[128], text[512], want_loc[160];
    snprintf(path, sizeof path, "%s/ahead.jsonl", dir);
    snprintf(text, sizeof text,
             "{\"k\":\"a\",\"ts\":%lld,\"v\":1}\n"
             "{\"k\":\"a\",\"ts\":%lld,\"v\":2}\n"
             "{\"k\":\"a\",\"ts\":%lld,\"v\":3}\n"
             "{\"k\":\"a\",\"ts\":%lld,\"v\":4}\n"
             "{\"k\":\"a\",\"ts\":%lld,\"v\":5}\n",
             T0 - 5000, T0 + 120000, T0 + 180000, T0 + 300000, T0 + 7200000);
    write_text(path, text);
    atomic_store(&clock_now, T0);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, test_clock, NULL);
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "files");
    KIT_SET(s, "path", path);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    count_window(job, "files");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(tdm_metrics_ahead_count(m), 1);
    const tdm_ahead_record *r = tdm_metrics_ahead_at(m, 0);
    ASSERT_STR_EQ(r->vertex, "files");
    ASSERT_EQ(r->subtask, 0);
    ASSERT_EQ(r->partition, 0);
    ASSERT_EQ(r->ts, T0 + 300000);
    ASSERT_EQ(r->at, T0);
    snprintf(want_loc, sizeof want_loc, "%s:4", path);
    ASSERT_STR_EQ(r->location, want_loc);
    char want_raw[128];
    snprintf(want_raw, sizeof want_raw, "{\"k\":\"a\",\"ts\":%lld,\"v\":4}",
             T0 + 300000);
    ASSERT_STR_EQ(r->raw, want_raw);
    ASSERT_TRUE(tdm_metrics_ahead_at(m, 1) == NULL);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
    unlink(path);
    rmdir(dir);
}

/* A source that notes no bytes (the kit's generator): the record is
 * kept without a location and rendered as JSON.  Nothing ahead, nothing
 * kept. */
static const kit_row ahead_rows[] = {{0, "a", T0 - 1000, 1},
                                     {0, "b", T0 + 90000, 1}};

TDM_TEST(record_ahead_without_a_location_is_rendered)
{
    for (int ahead = 0; ahead < 2; ahead++) {
        kit_add_data((kit_data){"ahead", 1, ahead_rows, 1 + ahead, 0, 0, 0});
        atomic_store(&clock_now, T0);
        tdm_job *job;
        ASSERT_OK(tdm_job_new(&job));
        tdm__job_set_clock(job, test_clock, NULL);
        kit_source_node(job, "src", "ahead");
        count_window(job, "src");
        kit_run_ok(job);
        tdm_metrics *m = snap(job);
        ASSERT_EQ(tdm_metrics_ahead_count(m), (size_t)ahead);
        if (ahead) {
            const tdm_ahead_record *r = tdm_metrics_ahead_at(m, 0);
            ASSERT_TRUE(r->location == NULL);
            ASSERT_EQ(r->ts, T0 + 90000);
            ASSERT_TRUE(strstr(r->raw, "\"k\": \"b\"") != NULL);
        }
        tdm_metrics_free(m);
        tdm_job_destroy(job);
    }
}

/* Partitions named by a field take the field's value as their label, in
 * the order the values first appear. */
TDM_TEST(field_partitions_are_named_by_value)
{
    char dir[] = "/tmp/tdm_metrics_XXXXXX";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/all.jsonl", dir);
    write_text(path, "{\"k\":\"west\",\"ts\":1000,\"v\":1}\n"
                     "{\"k\":\"east\",\"ts\":2000,\"v\":1}\n"
                     "{\"k\":\"west\",\"ts\":3000,\"v\":1}\n");
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "files");
    KIT_SET(s, "path", path);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    KIT_SET(s, "partition.field", "k");
    count_window(job, "files");
    kit_run_ok(job);
    tdm_metrics *m = snap(job);
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_P_RECORDS, "files", 0, 0), "west");
    ASSERT_EQ(GET(m, P_RECORDS, "files", 0, 0), 2);
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_P_RECORDS, "files", 0, 1), "east");
    ASSERT_EQ(GET(m, P_RECORDS, "files", 0, 1), 1);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
    unlink(path);
    rmdir(dir);
}

/* ====================================================================== */
/* Snapshots from another thread                                          */
/* ====================================================================== */

typedef struct snapper {
    tdm_job *job;
    atomic_int stop;
    atomic_int taken;
    int monotonic;
} snapper;

/* Takes snapshots as fast as it can and checks that counters never go
 * back and every value is well formed; also asks window questions. */
static void *snapper_main(void *arg)
{
    snapper *sp = arg;
    int64_t last_in = 0;
    sp->monotonic = 1;
    while (!atomic_load(&sp->stop)) {
        tdm_metrics *m = NULL;
        if (tdm_job_metrics(sp->job, &m) != TDM_OK)
            continue;
        int64_t in = 0, v = 0;
        for (int j = 0; j < 2; j++)
            if (tdm_metrics_find(m, TDM_METRIC_RECORDS_IN, "src", j, -1, &v))
                in += v;
        if (in < last_in)
            sp->monotonic = 0;
        last_in = in;
        for (size_t i = 0; i < tdm_metrics_count(m); i++) {
            const tdm_metric_value *mv = tdm_metrics_at(m, i);
            if (!tdm_metric_name(mv->id))
                sp->monotonic = 0;
        }
        for (size_t i = 0; i < tdm_metrics_late_count(m); i++)
            if (!tdm_metrics_late_at(m, i)->row)
                sp->monotonic = 0;
        tdm_metrics_free(m);
        tdm_window_status st;
        char msg[128];
        tdm_job_window_status(sp->job, "w", "k3", 0, 10, &st, msg, sizeof msg);
        atomic_fetch_add(&sp->taken, 1);
    }
    return NULL;
}

/* An endless generated source at parallelism 2 with late records (keys
 * k0..k9, ts i, windows of 10 ms, allowed lateness 0, so records of a
 * slower partition arrive late) while another thread takes snapshots;
 * then cancel.  Under ASan this checks the publication for races with
 * teardown and for use after free. */
TDM_TEST(snapshots_while_running_from_another_thread)
{
    kit_add_data((kit_data){"endless4", 4, NULL, 0, -1, 10, 1});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", "2");
    KIT_JOB_SET(job, "batch.size", "64");
    tdm_node *s = kit_source_node(job, "src", "endless4");
    exact_watermarks(s);
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10ms");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    snapper sp = {.job = job};
    atomic_init(&sp.stop, 0);
    atomic_init(&sp.taken, 0);
    kit_bg bg;
    kit_bg_start(&bg, job);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, snapper_main, &sp), 0);
    double t0 = kit_secs();
    while ((tdm_job_stat(job, TDM_STAT_RECORDS_IN) < 20000 ||
            atomic_load(&sp.taken) < 20) &&
           kit_secs() - t0 < 20)
        sched_yield();
    tdm_job_cancel(job);
    ASSERT_OK(kit_bg_join(&bg));
    /* A few more snapshots of the finished job, then stop. */
    int after = atomic_load(&sp.taken);
    while (atomic_load(&sp.taken) < after + 5 && kit_secs() - t0 < 30)
        sched_yield();
    atomic_store(&sp.stop, 1);
    pthread_join(th, NULL);
    ASSERT_TRUE(atomic_load(&sp.taken) >= 20);
    ASSERT_EQ(sp.monotonic, 1);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(tdm_metrics_running(m), 0);
    ASSERT_EQ(GET(m, RECORDS_IN, "src", 0, -1) +
                  GET(m, RECORDS_IN, "src", 1, -1),
              tdm_job_stat(job, TDM_STAT_RECORDS_IN));
    ASSERT_EQ(GET(m, RECORDS_OUT, "w", 0, -1) + GET(m, RECORDS_OUT, "w", 1, -1),
              tdm_job_stat(job, TDM_STAT_RECORDS_OUT));
    ASSERT_EQ(GET(m, LATE_DROPPED, "w", 0, -1) +
                  GET(m, LATE_DROPPED, "w", 1, -1),
              tdm_job_stat(job, TDM_STAT_LATE_DROPPED));
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* The debug log                                                          */
/* ====================================================================== */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_lines[64][512];
static int n_log;

static void collect_log(void *ud, const char *line)
{
    (void)ud;
    pthread_mutex_lock(&log_mu);
    if (n_log < 64)
        snprintf(log_lines[n_log++], sizeof log_lines[0], "%s", line);
    pthread_mutex_unlock(&log_mu);
}

static bool logged(const char *line)
{
    for (int i = 0; i < n_log; i++)
        if (strcmp(log_lines[i], line) == 0)
            return true;
    return false;
}

static int count_logged(const char *prefix)
{
    int n = 0;
    for (int i = 0; i < n_log; i++)
        n += strncmp(log_lines[i], prefix, strlen(prefix)) == 0;
    return n;
}

/* a@1000 and b@12000 with on-event watermarks (bound 0): the source
 * emits 999, 11999 and the end; so does the window (one channel,
 * "src#0", holding it, up to its end).  At 11999 a[0,10s) fires with its
 * one record, on time; at the end b[10s,20s).  The clock stands still,
 * so every firing is 0 ms after its watermark. */
static const kit_row dbg_rows[] = {{0, "a", 1000, 1}, {0, "b", 12000, 1}};

static tdm_job *dbg_job(const char *level)
{
    kit_add_data((kit_data){"dbg", 1, dbg_rows, 2, 0, 0, 0});
    atomic_store(&clock_now, T0);
    n_log = 0;
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    if (level)
        KIT_JOB_SET(job, "log.level", level);
    tdm__job_set_clock(job, test_clock, NULL);
    tdm_job_set_log(job, collect_log, NULL);
    tdm_node *s = kit_source_node(job, "src", "dbg");
    exact_watermarks(s);
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    return job;
}

TDM_TEST(debug_log_lines)
{
    tdm_job *job = dbg_job("debug");
    kit_run_ok(job);
    ASSERT_TRUE(logged("debug wm vertex=w subtask=0 from=none "
                       "to=1970-01-01T00:00:00.999Z channel_min=src#0"));
    ASSERT_TRUE(logged("debug wm vertex=w subtask=0 "
                       "from=1970-01-01T00:00:00.999Z "
                       "to=1970-01-01T00:00:11.999Z channel_min=src#0"));
    /* The end is a channel's last watermark: it still names it. */
    ASSERT_TRUE(logged("debug wm vertex=w subtask=0 "
                       "from=1970-01-01T00:00:11.999Z to=end "
                       "channel_min=src#0"));
    ASSERT_TRUE(logged("debug fire vertex=w subtask=0 key=a "
                       "window=[1970-01-01T00:00:00.000Z,"
                       "1970-01-01T00:00:10.000Z) "
                       "wm=1970-01-01T00:00:11.999Z pane=on_time "
                       "records=1 latency_ms=0"));
    ASSERT_TRUE(logged("debug fire vertex=w subtask=0 key=b "
                       "window=[1970-01-01T00:00:10.000Z,"
                       "1970-01-01T00:00:20.000Z) wm=end pane=on_time "
                       "records=1 latency_ms=0"));
    ASSERT_TRUE(logged("debug wm vertex=src subtask=0 from=none "
                       "to=1970-01-01T00:00:00.999Z partition_min=0"));
    ASSERT_EQ(count_logged("debug wm vertex=w "), 3);
    ASSERT_EQ(count_logged("debug fire "), 2);
    tdm_job_destroy(job);
}

/* Result latency: every on-time result of an event-time window is
 * measured once, late refires are not, and each figure lies between 0
 * and the run's own wall time.  a@1000 and b@12000 fire on time (at
 * 11999 and at the end); a@2000 comes after a's window fired and, within
 * the allowed lateness, refires it late: 3 results, 2 measured. */
static const kit_row lat_rows[] = {
    {0, "a", 1000, 1}, {0, "b", 12000, 1}, {0, "a", 2000, 1}};

TDM_TEST(result_latency_counts_on_time_results)
{
    kit_add_data((kit_data){"lat", 1, lat_rows, 3, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    int64_t n = -5;
    ASSERT_EQ(tdm_job_result_latency(job, 0.5, &n), -1); /* no run yet */
    ASSERT_EQ(n, 0);
    tdm_node *s = kit_source_node(job, "src", "lat");
    exact_watermarks(s);
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "allowed_lateness", "1m");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    int64_t t0 = tdm__mono_us();
    kit_run_ok(job);
    int64_t wall = tdm__mono_us() - t0;
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 3);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_REFIRES), 1);
    int64_t p50 = tdm_job_result_latency(job, 0.5, &n);
    ASSERT_EQ(n, 2);
    int64_t p99 = tdm_job_result_latency(job, 0.99, NULL);
    int64_t max = tdm_job_result_latency(job, 1.0, NULL);
    ASSERT_TRUE(p50 >= 0 && p50 <= p99 && p99 <= max && max <= wall);
    ASSERT_EQ(tdm_job_result_latency(job, 1.5, NULL), -1);
    /* The window's subtask published its own figures. */
    tdm_metrics *m;
    ASSERT_OK(tdm_job_metrics(job, &m));
    int64_t v50, v99;
    ASSERT_TRUE(
        tdm_metrics_find(m, TDM_METRIC_RESULT_LAT_P50, "w", 0, -1, &v50));
    ASSERT_TRUE(
        tdm_metrics_find(m, TDM_METRIC_RESULT_LAT_P99, "w", 0, -1, &v99));
    ASSERT_TRUE(v50 >= 0 && v50 <= v99 && v99 <= max);
    /* Sources have none. */
    ASSERT_TRUE(
        !tdm_metrics_find(m, TDM_METRIC_RESULT_LAT_P50, "src", 0, -1, &v50));
    tdm_metrics_free(m);
    /* A second run starts from an empty histogram. */
    kit_run_ok(job);
    tdm_job_result_latency(job, 0.5, &n);
    ASSERT_EQ(n, 2);
    tdm_job_destroy(job);
}

/* At the default level (info) nothing of it is logged. */
TDM_TEST(debug_log_off_by_default)
{
    tdm_job *job = dbg_job(NULL);
    kit_run_ok(job);
    ASSERT_EQ(count_logged("debug "), 0);
    tdm_job_destroy(job);
    job = dbg_job("info");
    kit_run_ok(job);
    ASSERT_EQ(count_logged("debug "), 0);
    char msg[256];
    ASSERT_ERR(tdm_job_set(job, "log.level", "verbose", msg, sizeof msg),
               TDM_ERR_INVAL);
    tdm_job_destroy(job);
}

/* ====================================================================== */
/* The firing memory                                                      */
/* ====================================================================== */

/* The ring remembers the last 8,192 first firings: after 70,000, the
 * first 61,808 are forgotten (overwritten) and every later one is found
 * with its own watermark; fingerprints of windows never added are not
 * found. */
TDM_TEST(firing_memory_ring_and_index)
{
    tdm__rt_fired f;
    memset(&f, 0, sizeof f);
    tdm_time_ms wm = 0;
    ASSERT_TRUE(!tdm__rt_fired_find(&f, 1, &wm));
    const int total = 70000, cap = (int)RT_FIRE_CAP;
    for (int i = 0; i < total; i++) {
        char key[16];
        snprintf(key, sizeof key, "u%d", i % 977);
        ASSERT_OK(tdm__rt_fired_add(
            &f, tdm__rt_fired_fp(key, strlen(key), i, i + 10), 1000 + i));
    }
    for (int i = 0; i < total; i++) {
        char key[16];
        snprintf(key, sizeof key, "u%d", i % 977);
        bool found = tdm__rt_fired_find(
            &f, tdm__rt_fired_fp(key, strlen(key), i, i + 10), &wm);
        if (i < total - cap) {
            ASSERT_TRUE(!found);
        } else {
            ASSERT_TRUE(found);
            ASSERT_EQ(wm, 1000 + i);
        }
    }
    /* Same key and start, other end: another window. */
    ASSERT_TRUE(!tdm__rt_fired_find(
        &f, tdm__rt_fired_fp("u0", 2, total - 1, total), &wm));
    tdm__rt_fired_free(&f);
    tdm__rt_fired_free(&f);
}

/* ====================================================================== */
/* Joins                                                                  */
/* ====================================================================== */

/* An interval join (right.ts - left.ts in [0, 5s]) of two fed sources
 * with on-event watermarks (bound 0):
 *   left  o1@1000     left watermark 999: kept until 6000
 *   right o1@4000     right watermark 3999: joins o1@1000 (3000 apart),
 *                     kept until 4000 - 0
 * The operator's watermark is the minimum of its inputs, 999; two
 * records are buffered, of one key; one pair went out.  Input 1 (left)
 * is at 999 on channel 0 "l#0", input 2 at 3999 on channel 1 "r#0".
 * At the end every buffer is released. */
TDM_TEST(join_metrics)
{
    n_feeds = 0;
    feed *fl = feed_new("fl", 1);
    feed *fr = feed_new("fr", 1);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *l = feed_node(job, "l", "fl");
    tdm_node *r = feed_node(job, "r", "fr");
    exact_watermarks(l);
    exact_watermarks(r);
    tdm_node *j = kit_node(job, TDM_NODE_JOIN, "j");
    KIT_SET(j, "left", "l");
    KIT_SET(j, "right", "r");
    KIT_SET(j, "left_key", "k");
    KIT_SET(j, "right_key", "k");
    KIT_SET(j, "lower", "0");
    KIT_SET(j, "upper", "5s");
    KIT_SET(j, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_bg bg;
    kit_bg_start(&bg, job);
    feed_push(fl, 0, "o1", 1000);
    feed_push(fr, 0, "o1", 4000);
    WAIT_FOR(job, CH_WM, "j", 0, 0, 999);
    WAIT_FOR(job, CH_WM, "j", 0, 1, 3999);
    WAIT_FOR(job, RECORDS_IN, "j", 0, -1, 2);
    tdm_metrics *m = snap(job);
    const tdm_vertex_info *v = tdm_metrics_vertex(m, 2);
    ASSERT_STR_EQ(v->name, "j");
    ASSERT_EQ(v->kind, TDM_NODE_JOIN);
    ASSERT_STR_EQ(v->type, "interval");
    ASSERT_EQ(v->n_inputs, 2);
    ASSERT_STR_EQ(v->inputs[0], "l");
    ASSERT_STR_EQ(v->inputs[1], "r");
    ASSERT_EQ(GET(m, WM_INPUT, "j", 0, -1), 999);
    ASSERT_EQ(GET(m, INPUT_WM, "j", 0, 1), 999);
    ASSERT_EQ(GET(m, INPUT_WM, "j", 0, 2), 3999);
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_CH_WM, "j", 0, 0), "l#0");
    ASSERT_STR_EQ(label_of(m, TDM_METRIC_CH_WM, "j", 0, 1), "r#0");
    ASSERT_EQ(GET(m, RECORDS_OUT, "j", 0, -1), 1);
    ASSERT_EQ(GET(m, STATE_WINDOWS, "j", 0, -1), 2);
    ASSERT_EQ(GET(m, STATE_KEYS, "j", 0, -1), 1);
    ASSERT_TRUE(GET(m, STATE_BYTES, "j", 0, -1) > 0);
    /* Windows only. */
    ABSENT(m, PANES, "j", 0, -1);
    tdm_metrics_free(m);
    feed_end(fl);
    feed_end(fr);
    ASSERT_OK(kit_bg_join(&bg));
    m = snap(job);
    ASSERT_EQ(GET(m, STATE_WINDOWS, "j", 0, -1), 0);
    ASSERT_EQ(GET(m, RECORDS_OUT, "j", 0, -1),
              tdm_job_stat(job, TDM_STAT_RECORDS_OUT));
    ASSERT_EQ(GET(m, RECORDS_IN, "out", 0, -1), 1);
    tdm_metrics_free(m);
    /* A join is no window. */
    tdm_window_status st;
    char msg[256];
    ASSERT_ERR(
        tdm_job_window_status(job, "j", "o1", 0, 10, &st, msg, sizeof msg),
        TDM_ERR_INVAL);
    tdm_job_destroy(job);
}

/* A window join "j" of tumbling 10 s windows over two fed sources "l"
 * (feed "fl") and "r" (feed "fr") keyed by k, with exact on-event
 * watermarks, writing to sink "out" (and, with @p late, its late records
 * to sink "late"). */
static tdm_job *fed_window_join(feed **fl, feed **fr, bool late)
{
    n_feeds = 0;
    *fl = feed_new("fl", 1);
    *fr = feed_new("fr", 1);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    exact_watermarks(feed_node(job, "l", "fl"));
    exact_watermarks(feed_node(job, "r", "fr"));
    tdm_node *j = kit_node(job, TDM_NODE_JOIN, "j");
    KIT_SET(j, "type", "window");
    KIT_SET(j, "left", "l");
    KIT_SET(j, "right", "r");
    KIT_SET(j, "left_key", "k");
    KIT_SET(j, "right_key", "k");
    KIT_SET(j, "window.size", "10s");
    KIT_SET(j, "sink", "out");
    if (late)
        KIT_SET(j, "late_output", "late");
    kit_node(job, TDM_NODE_SINK, "out");
    if (late)
        kit_node(job, TDM_NODE_SINK, "late");
    return job;
}

/* A window join's state gauges read the join's own accounting
 * (tdm__joinop_state_bytes): its records sit in per-window record logs,
 * one chunk of 4,096 bytes per side and window to begin with, which the
 * key table and timers the runtime once summed did not include (so it
 * published less than the two chunks for a join holding records).  Tumbling
 * 10 s windows, on-event watermarks (bound 0):
 *   left o1@1000, right o1@2000   both in [0, 10000): two logs, so at
 *                                 least 8,192 bytes; 2 buffered
 *                                 records, no keys tracked;
 *   right ends                    its channel leaves the minimum;
 *   left o2@15000                 left watermark 14999 fires [0, 10000)
 *                                 (the pair o1-o1 goes out) and frees
 *                                 its two logs; [10000, 20000) has one,
 *                                 so the bytes fall by at least a chunk;
 *   left ends                     everything fires and is freed: less
 *                                 than one chunk is left. */
TDM_TEST(window_join_state_bytes)
{
    feed *fl, *fr;
    tdm_job *job = fed_window_join(&fl, &fr, false);
    kit_bg bg;
    kit_bg_start(&bg, job);
    feed_push(fl, 0, "o1", 1000);
    feed_push(fr, 0, "o1", 2000);
    WAIT_FOR(job, CH_WM, "j", 0, 0, 999);
    WAIT_FOR(job, CH_WM, "j", 0, 1, 1999);
    WAIT_FOR(job, RECORDS_IN, "j", 0, -1, 2);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(GET(m, STATE_WINDOWS, "j", 0, -1), 2);
    ASSERT_EQ(GET(m, STATE_KEYS, "j", 0, -1), 0);
    int64_t held = GET(m, STATE_BYTES, "j", 0, -1);
    ASSERT_TRUE(held >= 8192);
    ASSERT_EQ(GET(m, RECORDS_OUT, "j", 0, -1), 0);
    tdm_metrics_free(m);
    feed_end(fr);
    feed_push(fl, 0, "o2", 15000);
    WAIT_FOR(job, RECORDS_OUT, "j", 0, -1, 1);
    WAIT_FOR(job, STATE_WINDOWS, "j", 0, -1, 1);
    m = snap(job);
    int64_t after = GET(m, STATE_BYTES, "j", 0, -1);
    ASSERT_TRUE(after >= 4096);
    ASSERT_TRUE(after <= held - 4096);
    tdm_metrics_free(m);
    feed_end(fl);
    ASSERT_OK(kit_bg_join(&bg));
    m = snap(job);
    ASSERT_EQ(GET(m, STATE_WINDOWS, "j", 0, -1), 0);
    ASSERT_TRUE(GET(m, STATE_BYTES, "j", 0, -1) < 4096);
    ASSERT_EQ(GET(m, RECORDS_OUT, "j", 0, -1), 1);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* A window join's late records carry the pushed row itself (its log
 * packs rows, so the runtime no longer packs them first): the late
 * output gets the row's fields and the late sample its text.  Tumbling
 * 10 s windows, on-event watermarks (bound 0): x@20000 on both sides
 * brings the join's watermark to 19999, so z@1000 on the left (window
 * [0, 10000), whose end - 1 is behind it) is late: one row to "late",
 * one late sample with the row, nothing buffered for it; at the end
 * x-x pairs up in [20000, 30000). */
TDM_TEST(window_join_late_record_keeps_its_row)
{
    feed *fl, *fr;
    tdm_job *job = fed_window_join(&fl, &fr, true);
    kit_bg bg;
    kit_bg_start(&bg, job);
    feed_push(fl, 0, "x", 20000);
    feed_push(fr, 0, "x", 20000);
    WAIT_FOR(job, CH_WM, "j", 0, 0, 19999);
    WAIT_FOR(job, CH_WM, "j", 0, 1, 19999);
    feed_push(fl, 0, "z", 1000);
    WAIT_FOR(job, LATE_SIDE, "j", 0, -1, 1);
    WAIT_FOR(job, STATE_WINDOWS, "j", 0, -1, 2);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(tdm_metrics_late_count(m), 1);
    const tdm_late_sample *ls = tdm_metrics_late_at(m, 0);
    ASSERT_STR_EQ(ls->vertex, "j");
    ASSERT_EQ(ls->ts, 1000);
    ASSERT_EQ(ls->watermark, 19999);
    ASSERT_EQ(ls->dropped, 0);
    ASSERT_STR_EQ(ls->row, "{\"k\": \"z\", \"ts\": 1000, \"v\": 1}");
    tdm_metrics_free(m);
    feed_end(fl);
    feed_end(fr);
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("late", "{\"k\": \"z\", \"ts\": 1000, \"v\": 1}");
    KIT_EXPECT("out", "left.k=x left.ts=20000 left.v=1 right.k=x "
                      "right.ts=20000 right.v=1 ts=29999 [20000,30000) "
                      "on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT), 1);
    tdm_job_destroy(job);
}

/* The general path (sessions, a row aggregate): a@1000 and a@3000 with
 * a 5 s gap merge into the session [1000, 8000), which holds both
 * records; the row aggregate does not count them (elements -1).  The
 * single-record session [1000, 6000) no longer exists.  At the end of
 * input the session fires, at the end-of-input watermark. */
TDM_TEST(window_status_general_path)
{
    n_feeds = 0;
    feed *f = feed_new("sess", 1);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = feed_node(job, "src", "sess");
    exact_watermarks(s);
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.type", "session");
    KIT_SET(w, "window.gap", "5s");
    KIT_SET(w, "aggregates", "count() as n, sum(v) as s");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_bg bg;
    kit_bg_start(&bg, job);
    feed_push(f, 0, "a", 1000);
    feed_push(f, 0, "a", 3000);
    WAIT_FOR(job, RECORDS_IN, "w", 0, -1, 2);
    WAIT_FOR(job, WM_INPUT, "w", 0, -1, 2999);
    tdm_window_status st;
    char msg[256];
    ASSERT_OK(
        tdm_job_window_status(job, "w", "a", 1000, 8000, &st, msg, sizeof msg));
    ASSERT_EQ(st.has_state, 1);
    ASSERT_EQ(st.elements, -1);
    ASSERT_EQ(st.fired, 0);
    ASSERT_EQ(st.max_ts, 7999);
    ASSERT_OK(
        tdm_job_window_status(job, "w", "a", 1000, 6000, &st, msg, sizeof msg));
    ASSERT_EQ(st.has_state, 0);
    tdm_metrics *m = snap(job);
    ASSERT_EQ(GET(m, STATE_WINDOWS, "w", 0, -1), 1);
    ASSERT_EQ(GET(m, STATE_KEYS, "w", 0, -1), 1);
    tdm_metrics_free(m);
    feed_end(f);
    ASSERT_OK(kit_bg_join(&bg));
    ASSERT_OK(
        tdm_job_window_status(job, "w", "a", 1000, 8000, &st, msg, sizeof msg));
    ASSERT_EQ(st.fired, 1);
    ASSERT_EQ(st.fired_wm, TDM_TIME_MAX);
    ASSERT_EQ(st.running, 0);
    tdm_job_destroy(job);
}
