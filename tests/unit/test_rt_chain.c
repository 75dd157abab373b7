/* SPDX-License-Identifier: MIT */
/* test_rt_chain.c - chained operators (docs/runtime.md, "Chained
 * operators"): a window's or join's results read by another window or
 * join in the same job, run end to end on worker threads with the kit's
 * in-memory source and collecting sink.  Window -> window, window ->
 * window join, interval join (with a filter) -> window and a three-level
 * chain, each at parallelism 1, 2 and 4 (the same multisets); late
 * records at the first operator; an idle upstream operator (injected
 * clock); and the validation of chained jobs
 * (cycles, self-reference, output modes, sinks, the join filter, fields
 * of an output stream).  Every expected line is derived by hand in the
 * comment above it. */
#include <stdlib.h>

#include "test_rt_kit.h"

static const char *const ps[] = {"1", "2", "4"};

/* Three partitions, each in timestamp order (so nothing is late whatever
 * the thread timing):
 *   p0: a@1000 v1, b@2000 v2, a@11000 v3, c@25000 v4
 *   p1: b@3000 v5, a@9999 v6, b@10000 v7
 *   p2: c@500 v8, c@19999 v9, a@20000 v10 */
static const kit_row three_rows[] = {
    {0, "a", 1000, 1},  {1, "b", 3000, 5},  {2, "c", 500, 8},
    {0, "b", 2000, 2},  {1, "a", 9999, 6},  {2, "c", 19999, 9},
    {0, "a", 11000, 3}, {1, "b", 10000, 7}, {2, "a", 20000, 10},
    {0, "c", 25000, 4},
};

static tdm_job *new_job(const char *parallelism)
{
    kit_add_data((kit_data){"three", 3, three_rows, 10, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", parallelism);
    kit_source_node(job, "src", "three");
    return job;
}

/* The count per key and tumbling 10 s window ("counts", no sink of its
 * own unless @p sink):
 *   a: [0,10s) 2 (1000, 9999), [10s,20s) 1 (11000), [20s,30s) 1 (20000)
 *   b: [0,10s) 2 (2000, 3000), [10s,20s) 1 (10000)
 *   c: [0,10s) 1 (500), [10s,20s) 1 (19999), [20s,30s) 1 (25000)
 * Its rows are (k, n, window_start, window_end) stamped end - 1:
 * 9999, 19999, 29999. */
static void add_counts(tdm_job *job, const char *sink)
{
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "counts");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    if (sink)
        KIT_SET(w, "sink", sink);
}

/* "coarse" reads the counts: tumbling 30 s by k, so every count row
 * (stamped 9999, 19999 or 29999) is in [0,30s):
 *   a: max 2, sum 2+1+1 = 4, 3 rows, earliest window_start 0
 *   b: max 2, sum 3, 2 rows;   c: max 1, sum 3, 3 rows
 * It is declared before the window it reads. */
TDM_TEST(window_of_window_counts_at_parallelism_1_2_4)
{
    for (int i = 0; i < 3; i++) {
        tdm_job *job = new_job(ps[i]);
        tdm_node *c = kit_node(job, TDM_NODE_WINDOW, "coarse");
        KIT_SET(c, "from", "counts");
        KIT_SET(c, "key_by", "k");
        KIT_SET(c, "window.size", "30s");
        KIT_SET(c, "aggregates",
                "max(n) as mx, sum(n) as total, count() "
                "as rows, min(window_start) as first");
        KIT_SET(c, "sink", "out");
        add_counts(job, NULL);
        kit_node(job, TDM_NODE_SINK, "out");
        kit_run_ok(job);
        KIT_EXPECT("out",
                   "k=a mx=2 total=4 rows=3 first=0 [0,30000) on_time#0 +",
                   "k=b mx=2 total=3 rows=2 first=0 [0,30000) on_time#0 +",
                   "k=c mx=1 total=3 rows=3 first=0 [0,30000) on_time#0 +");
        /* Records in are the source's; rows out are the sinks'. */
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 10);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 3);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_REFIRES), 0);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_WATERMARK), TDM_TIME_MAX);
        tdm_job_destroy(job);
    }
}

/* The same with a sink on "counts" too: its 8 rows as a window writes
 * them, and the coarse rows as above (11 rows out). */
TDM_TEST(chained_window_with_its_own_sink)
{
    tdm_job *job = new_job("2");
    add_counts(job, "mid");
    tdm_node *c = kit_node(job, TDM_NODE_WINDOW, "coarse");
    KIT_SET(c, "from", "counts");
    KIT_SET(c, "key_by", "k");
    KIT_SET(c, "window.size", "30s");
    KIT_SET(c, "aggregates", "sum(n) as total");
    KIT_SET(c, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "mid");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    KIT_EXPECT("mid", "k=a n=2 [0,10000) on_time#0 +",
               "k=b n=2 [0,10000) on_time#0 +", "k=c n=1 [0,10000) on_time#0 +",
               "k=a n=1 [10000,20000) on_time#0 +",
               "k=b n=1 [10000,20000) on_time#0 +",
               "k=c n=1 [10000,20000) on_time#0 +",
               "k=a n=1 [20000,30000) on_time#0 +",
               "k=c n=1 [20000,30000) on_time#0 +");
    KIT_EXPECT("out", "k=a total=4 [0,30000) on_time#0 +",
               "k=b total=3 [0,30000) on_time#0 +",
               "k=c total=3 [0,30000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 11);
    tdm_job_destroy(job);
}

/* The metrics of a chained run (parallelism 1): "counts" took the 10
 * source records and wrote nothing to a sink (0 out); "coarse" took its
 * 8 rows and wrote 3; coarse's input and its channel are named after
 * counts; the job has no vertex of the output stream itself. */
TDM_TEST(metrics_of_a_chained_run)
{
    tdm_job *job = new_job("1");
    add_counts(job, NULL);
    tdm_node *c = kit_node(job, TDM_NODE_WINDOW, "coarse");
    KIT_SET(c, "from", "counts");
    KIT_SET(c, "key_by", "k");
    KIT_SET(c, "window.size", "30s");
    KIT_SET(c, "aggregates", "sum(n) as total");
    KIT_SET(c, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    tdm_metrics *m = NULL;
    ASSERT_OK(tdm_job_metrics(job, &m));
    int64_t v = -1;
    ASSERT_TRUE(
        tdm_metrics_find(m, TDM_METRIC_RECORDS_IN, "counts", 0, -1, &v));
    ASSERT_EQ(v, 10);
    ASSERT_TRUE(
        tdm_metrics_find(m, TDM_METRIC_RECORDS_OUT, "counts", 0, -1, &v));
    ASSERT_EQ(v, 0);
    ASSERT_TRUE(
        tdm_metrics_find(m, TDM_METRIC_RECORDS_IN, "coarse", 0, -1, &v));
    ASSERT_EQ(v, 8);
    ASSERT_TRUE(
        tdm_metrics_find(m, TDM_METRIC_RECORDS_OUT, "coarse", 0, -1, &v));
    ASSERT_EQ(v, 3);
    ASSERT_TRUE(tdm_metrics_find(m, TDM_METRIC_CH_ENDED, "coarse", 0, 0, &v));
    ASSERT_EQ(v, 1);
    ASSERT_EQ(tdm_metrics_vertex_count(m), 4); /* src, counts, coarse, out */
    int seen = 0;
    for (size_t i = 0; i < tdm_metrics_vertex_count(m); i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(m, i);
        if (strcmp(vi->name, "coarse") == 0) {
            ASSERT_EQ(vi->n_inputs, 1);
            ASSERT_STR_EQ(vi->inputs[0], "counts");
            seen = 1;
        }
    }
    ASSERT_EQ(seen, 1);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* Three levels: counts (10 s) -> coarse (30 s, sum) -> top (60 s, count
 * of coarse rows and the largest total, no key: one group).  coarse
 * writes a 4, b 3, c 3 in [0,30s), stamped 29999: top has 3 rows in
 * [0,60s), the largest total 4. */
TDM_TEST(three_level_chain_at_parallelism_1_2_4)
{
    for (int i = 0; i < 3; i++) {
        tdm_job *job = new_job(ps[i]);
        add_counts(job, NULL);
        tdm_node *c = kit_node(job, TDM_NODE_WINDOW, "coarse");
        KIT_SET(c, "from", "counts");
        KIT_SET(c, "key_by", "k");
        KIT_SET(c, "window.size", "30s");
        KIT_SET(c, "aggregates", "sum(n) as total");
        tdm_node *t = kit_node(job, TDM_NODE_WINDOW, "top");
        KIT_SET(t, "from", "coarse");
        KIT_SET(t, "window.size", "60s");
        KIT_SET(t, "aggregates", "count() as keys, max(total) as best");
        KIT_SET(t, "sink", "out");
        kit_node(job, TDM_NODE_SINK, "out");
        kit_run_ok(job);
        KIT_EXPECT("out", "keys=3 best=4 [0,60000) on_time#0 +");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
        tdm_job_destroy(job);
    }
}

/* NEXMark q7's shape: "m" is the largest v per tumbling 10 s window (no
 * key), joined back with the source on v = mx in the same window:
 *   [0,10s):   v 1, 5, 8, 2, 6  -> max 8 (c@500)
 *   [10s,20s): v 9, 3, 7        -> max 9 (c@19999)
 *   [20s,30s): v 10, 4          -> max 10 (a@20000)
 * A window join's pair is stamped with its window's end - 1. */
TDM_TEST(window_into_window_join_at_parallelism_1_2_4)
{
    for (int i = 0; i < 3; i++) {
        tdm_job *job = new_job(ps[i]);
        tdm_node *m = kit_node(job, TDM_NODE_WINDOW, "m");
        KIT_SET(m, "from", "src");
        KIT_SET(m, "window.size", "10s");
        KIT_SET(m, "aggregates", "max(v) as mx");
        tdm_node *j = kit_node(job, TDM_NODE_JOIN, "top");
        KIT_SET(j, "type", "window");
        KIT_SET(j, "left", "src");
        KIT_SET(j, "right", "m");
        KIT_SET(j, "left_key", "v");
        KIT_SET(j, "right_key", "mx");
        KIT_SET(j, "window.size", "10s");
        KIT_SET(j, "sink", "out");
        kit_node(job, TDM_NODE_SINK, "out");
        kit_run_ok(job);
        KIT_EXPECT("out",
                   "left.k=c left.ts=500 left.v=8 right.mx=8 "
                   "right.window_start=0 right.window_end=10000 ts=9999 "
                   "[0,10000) on_time#0 +",
                   "left.k=c left.ts=19999 left.v=9 right.mx=9 "
                   "right.window_start=10000 right.window_end=20000 "
                   "ts=19999 [10000,20000) on_time#0 +",
                   "left.k=a left.ts=20000 left.v=10 right.mx=10 "
                   "right.window_start=20000 right.window_end=30000 "
                   "ts=29999 [20000,30000) on_time#0 +");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
        tdm_job_destroy(job);
    }
}

/* An interval join (right.ts in [left.ts, left.ts + 1 s]) with a filter,
 * read by a window:
 *   left  a@1000 v1, b@2000 v2, a@15000 v3
 *   right a@1500 v10, a@1800 v20, b@2500 v30, b@9000 v50, a@15500 v40
 * Pairs (ts = the later of the two): a1000-a1500 (1500), a1000-a1800
 * (1800), b2000-b2500 (2500), a15000-a15500 (15500); b@9000 is 7 s
 * after b@2000.  The filter right.v > left.v * 10 drops a1000-a1500
 * (10 > 10 is false): 1 pair filtered.  The window counts pairs per
 * left.k and tumbling 10 s, with the sum of right.v:
 *   a [0,10s): 1 pair, 20;  b [0,10s): 1, 30;  a [10s,20s): 1, 40. */
static const kit_row left_rows[] = {
    {0, "a", 1000, 1},
    {0, "b", 2000, 2},
    {0, "a", 15000, 3},
};
static const kit_row right_rows[] = {
    {0, "a", 1500, 10}, {0, "a", 1800, 20},  {0, "b", 2500, 30},
    {0, "b", 9000, 50}, {0, "a", 15500, 40},
};

TDM_TEST(interval_join_with_filter_into_window_at_parallelism_1_2_4)
{
    kit_add_data((kit_data){"L", 1, left_rows, 3, 0, 0, 0});
    kit_add_data((kit_data){"R", 1, right_rows, 5, 0, 0, 0});
    for (int i = 0; i < 3; i++) {
        tdm_job *job;
        ASSERT_OK(tdm_job_new(&job));
        KIT_JOB_SET(job, "parallelism", ps[i]);
        kit_source_node(job, "l", "L");
        kit_source_node(job, "r", "R");
        tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "per_key");
        KIT_SET(w, "from", "pairs");
        KIT_SET(w, "key_by", "left.k");
        KIT_SET(w, "window.size", "10s");
        KIT_SET(w, "aggregates", "count() as n, sum(right.v) as s");
        KIT_SET(w, "sink", "out");
        tdm_node *j = kit_node(job, TDM_NODE_JOIN, "pairs");
        KIT_SET(j, "left", "l");
        KIT_SET(j, "right", "r");
        KIT_SET(j, "left_key", "k");
        KIT_SET(j, "right_key", "k");
        KIT_SET(j, "lower", "0ms");
        KIT_SET(j, "upper", "1s");
        KIT_SET(j, "filter", "right.v > left.v * 10");
        kit_node(job, TDM_NODE_SINK, "out");
        kit_run_ok(job);
        KIT_EXPECT("out", "left.k=a n=1 s=20 [0,10000) on_time#0 +",
                   "left.k=b n=1 s=30 [0,10000) on_time#0 +",
                   "left.k=a n=1 s=40 [10000,20000) on_time#0 +");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_FILTERED), 1);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 8);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
        tdm_job_destroy(job);
    }
}

/* The join's filter also applies to its sink: the 3 pairs that pass,
 * and no window after it. */
TDM_TEST(join_filter_applies_to_its_sink)
{
    kit_add_data((kit_data){"L", 1, left_rows, 3, 0, 0, 0});
    kit_add_data((kit_data){"R", 1, right_rows, 5, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    kit_source_node(job, "l", "L");
    kit_source_node(job, "r", "R");
    tdm_node *j = kit_node(job, TDM_NODE_JOIN, "pairs");
    KIT_SET(j, "left", "l");
    KIT_SET(j, "right", "r");
    KIT_SET(j, "left_key", "k");
    KIT_SET(j, "right_key", "k");
    KIT_SET(j, "lower", "0ms");
    KIT_SET(j, "upper", "1s");
    KIT_SET(j, "filter", "right.v > left.v * 10");
    KIT_SET(j, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    ASSERT_EQ(kit_sink_get("out")->n, 3);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_FILTERED), 1);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 3);
    tdm_job_destroy(job);
}

/* One partition, a watermark after every record (bound 0: wm = max - 1),
 * "first" counts per k and tumbling 10 s without allowed lateness:
 *   a@1000    wm 999
 *   a@12000   wm 11999: [0,10s) fires a=1 (row stamped 9999)
 *   a@5000    [0,10s) was cleaned up (9999 <= 11999): late output
 *   a@16000   wm 15999
 *   a@2000    late output;  b@3000  late output (b's [0,10s) too)
 *   end       [10s,20s) fires a=2 (row stamped 19999)
 * "second" sums the counts per k and tumbling 20 s: a 3 from 2 rows, on
 * time (each row precedes the watermark that fired it). */
static const kit_row late_rows[] = {
    {0, "a", 1000, 1},  {0, "a", 12000, 1}, {0, "a", 5000, 1},
    {0, "a", 16000, 1}, {0, "a", 2000, 1},  {0, "b", 3000, 1},
};

TDM_TEST(late_records_at_the_first_operator)
{
    kit_add_data((kit_data){"late", 1, late_rows, 6, 0, 0, 0});
    for (int i = 0; i < 3; i++) {
        tdm_job *job;
        ASSERT_OK(tdm_job_new(&job));
        KIT_JOB_SET(job, "parallelism", ps[i]);
        tdm_node *s = kit_source_node(job, "src", "late");
        KIT_SET(s, "watermark.max_out_of_orderness", "0ms");
        KIT_SET(s, "watermark.emit", "on_event");
        tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "first");
        KIT_SET(w, "from", "src");
        KIT_SET(w, "key_by", "k");
        KIT_SET(w, "window.size", "10s");
        KIT_SET(w, "aggregates", "count() as n");
        KIT_SET(w, "late_output", "late");
        tdm_node *w2 = kit_node(job, TDM_NODE_WINDOW, "second");
        KIT_SET(w2, "from", "first");
        KIT_SET(w2, "key_by", "k");
        KIT_SET(w2, "window.size", "20s");
        KIT_SET(w2, "aggregates", "sum(n) as total, count() as rows");
        KIT_SET(w2, "late_output", "late2");
        KIT_SET(w2, "sink", "out");
        kit_node(job, TDM_NODE_SINK, "out");
        kit_node(job, TDM_NODE_SINK, "late");
        kit_node(job, TDM_NODE_SINK, "late2");
        kit_run_ok(job);
        KIT_EXPECT("out", "k=a total=3 rows=2 [0,20000) on_time#0 +");
        ASSERT_EQ(kit_sink_get("late")->n, 3);
        KIT_EXPECT_NONE("late2");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT), 3);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
        tdm_job_destroy(job);
    }
}

/* Many rows through a chain, so that the output stream fills several
 * batches and queues (backpressure between operator threads): 20,000
 * generated rows, key k<i % 10>, ts i ms, 4 partitions.  "counts" per
 * key and 1 s: 100 rows per key and window, 20 windows; "total" sums
 * them per key over 10 s: 1,000 per key and window, 2 windows. */
TDM_TEST(chain_over_many_batches)
{
    kit_add_data((kit_data){"gen", 4, NULL, 0, 20000, 10, 1});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", "2");
    KIT_JOB_SET(job, "batch.size", "16");
    kit_source_node(job, "src", "gen");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "counts");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "1s");
    KIT_SET(w, "aggregates", "count() as n");
    tdm_node *t = kit_node(job, TDM_NODE_WINDOW, "total");
    KIT_SET(t, "from", "counts");
    KIT_SET(t, "key_by", "k");
    KIT_SET(t, "window.size", "10s");
    KIT_SET(t, "aggregates", "sum(n) as total, count() as rows");
    KIT_SET(t, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    kit_sink *k = kit_sink_get("out");
    ASSERT_EQ(k->n, 20);
    for (size_t i = 0; i < k->n; i++)
        ASSERT_TRUE(strstr(k->lines[i], " total=1000 rows=10 [") != NULL);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 20000);
    tdm_job_destroy(job);
}

/* ---- Backpressure and failure through a chain ---- */

/* 5 M generated rows (key k<i % 10>, ts i ms, on-event watermarks):
 * "w1" counts per key and 10 ms, "w2" sums those counts per key and
 * 10 ms into a sink the test holds shut, so w2 blocks, its queue fills,
 * w1 blocks pushing to it (its output pool and channels are bounded),
 * and so does the source.  Small batches and queues make that fast. */
static tdm_job *blocked_chain(void)
{
    kit_add_data((kit_data){"endless", 1, NULL, 0, 5000000, 10, 1});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "batch.size", "64");
    KIT_JOB_SET(job, "queue.capacity", "2");
    tdm_node *s = kit_source_node(job, "src", "endless");
    KIT_SET(s, "watermark.emit", "on_event");
    tdm_node *w1 = kit_node(job, TDM_NODE_WINDOW, "w1");
    KIT_SET(w1, "from", "src");
    KIT_SET(w1, "key_by", "k");
    KIT_SET(w1, "window.size", "10ms");
    KIT_SET(w1, "aggregates", "count() as n");
    tdm_node *w2 = kit_node(job, TDM_NODE_WINDOW, "w2");
    KIT_SET(w2, "from", "w1");
    KIT_SET(w2, "key_by", "k");
    KIT_SET(w2, "window.size", "10ms");
    KIT_SET(w2, "aggregates", "sum(n) as total");
    KIT_SET(w2, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_sink *k = kit_sink_get("out");
    pthread_mutex_lock(&k->mu);
    k->gate = 1;
    pthread_mutex_unlock(&k->mu);
    return job;
}

/* Waits until the gated sink holds a writer and the source stopped
 * reading (records read no longer move; bounded). */
static void wait_blocked(tdm_job *job)
{
    kit_sink *k = kit_sink_get("out");
    pthread_mutex_lock(&k->mu);
    while (k->blocked == 0)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    double t0 = kit_secs();
    int64_t in1, in2 = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    do {
        in1 = in2;
        for (int i = 0; i < 20000; i++)
            sched_yield();
        in2 = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    } while (in1 != in2 && kit_secs() - t0 < 20);
    ASSERT_EQ(in1, in2);
    ASSERT_TRUE(in2 < 5000000);
    ASSERT_TRUE(tdm__job_queue_waits(job) > 0);
}

static void open_gate(int fail)
{
    kit_sink *k = kit_sink_get("out");
    pthread_mutex_lock(&k->mu);
    k->fail_writes = fail;
    k->gate = 0;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

/* Cancelled while blocked, then released: the job drains (end of input
 * from the source, through w1, to w2), and the totals add up to every
 * record read: nothing is lost between the operators. */
TDM_TEST(backpressure_through_a_chain_then_drain)
{
    tdm_job *job = blocked_chain();
    kit_bg bg;
    kit_bg_start(&bg, job);
    wait_blocked(job);
    tdm_job_cancel(job);
    open_gate(0);
    ASSERT_OK(kit_bg_join(&bg));
    int64_t in = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    kit_sink *k = kit_sink_get("out");
    int64_t sum = 0;
    for (size_t i = 0; i < k->n; i++) {
        const char *p = strstr(k->lines[i], "total=");
        ASSERT_TRUE(p != NULL);
        sum += strtoll(p + 6, NULL, 10);
    }
    ASSERT_EQ(sum, in);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
    ASSERT_EQ(tdm__job_batches_live(job), 0);
    tdm_job_destroy(job);
}

/* The blocked sink fails instead: the run reports the sink's error and
 * every thread stops - the source and w1, waiting on full queues or an
 * empty pool, are woken by the abort. */
TDM_TEST(failure_downstream_stops_a_blocked_chain)
{
    tdm_job *job = blocked_chain();
    kit_bg bg;
    kit_bg_start(&bg, job);
    wait_blocked(job);
    open_gate(1);
    ASSERT_ERR(kit_bg_join(&bg), TDM_ERR_IO);
    if (!strstr(bg.msg, "sink \"out\""))
        tdm_test_fail(__FILE__, __LINE__, "message \"%s\"", bg.msg);
    ASSERT_EQ(tdm__job_batches_live(job), 0);
    tdm_job_destroy(job);
}

/* on_cancel: stop passes a stop without drain down the chain: an
 * endless source (key k<i % 10>, ts i ms, on-event watermarks) read by
 * w1 (10 ms counts) and w2 (their sums per 100 ms).  Cancelled once w2
 * wrote something, the source ends its channels marked "no drain"; w1
 * writes nothing more and passes the mark on, so w2 does not take the
 * end of input as the maximum watermark either: its input watermark
 * stays where the data left it (with drain it would be the end). */
TDM_TEST(stop_without_drain_passes_down_the_chain)
{
    kit_add_data((kit_data){"forever", 1, NULL, 0, -1, 10, 1});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "on_cancel", "stop");
    tdm_node *s = kit_source_node(job, "src", "forever");
    KIT_SET(s, "watermark.emit", "on_event");
    tdm_node *w1 = kit_node(job, TDM_NODE_WINDOW, "w1");
    KIT_SET(w1, "from", "src");
    KIT_SET(w1, "key_by", "k");
    KIT_SET(w1, "window.size", "10ms");
    KIT_SET(w1, "aggregates", "count() as n");
    tdm_node *w2 = kit_node(job, TDM_NODE_WINDOW, "w2");
    KIT_SET(w2, "from", "w1");
    KIT_SET(w2, "key_by", "k");
    KIT_SET(w2, "window.size", "100ms");
    KIT_SET(w2, "aggregates", "sum(n) as total");
    KIT_SET(w2, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_bg bg;
    kit_bg_start(&bg, job);
    double t0 = kit_secs();
    while (tdm_job_stat(job, TDM_STAT_RECORDS_OUT) == 0) {
        ASSERT_TRUE(kit_secs() - t0 < 20);
        sched_yield();
    }
    tdm_job_cancel(job);
    ASSERT_OK(kit_bg_join(&bg));
    tdm_metrics *m = NULL;
    ASSERT_OK(tdm_job_metrics(job, &m));
    int64_t wm = TDM_TIME_MAX;
    ASSERT_TRUE(tdm_metrics_find(m, TDM_METRIC_WM_INPUT, "w2", 0, -1, &wm));
    ASSERT_TRUE(wm < TDM_TIME_MAX);
    /* Every total written is a whole window: 10 keys, 100 ms, 1 row per
     * ms, so 10 per key. */
    kit_sink *k = kit_sink_get("out");
    ASSERT_TRUE(k->n > 0);
    for (size_t i = 0; i < k->n; i++)
        ASSERT_TRUE(strstr(k->lines[i], " total=10 [") != NULL);
    tdm_metrics_free(m);
    tdm_job_destroy(job);
}

/* ---- Idleness is forwarded ---- */
/* The fed source and moved clock of test_rt_metrics.c. */
#include "test_rt_feed.h"
#include "testhooks.h"

/* Waits (bounded) until sink @p name holds @p n lines. */
static void wait_lines(const char *name, size_t n)
{
    kit_sink *k = kit_sink_get(name);
    double t0 = kit_secs();
    for (;;) {
        pthread_mutex_lock(&k->mu);
        size_t have = k->n;
        pthread_mutex_unlock(&k->mu);
        if (have >= n)
            return;
        ASSERT_TRUE(kit_secs() - t0 < 20);
        sched_yield();
    }
}

/* "w1" counts src1 (idle timeout 1 s); "w2" is the union of w1's
 * results and src2, counting per k and tumbling 10 s.  Bound 0, ticks
 * every 200 ms of the injected clock:
 *   T0        one: a@1000, two: a@1000
 *   T0+200    ticks: both sources at 999
 *   T0+400    one: nothing since the last tick, its countdown starts
 *   T0+1500   one is idle (1100 ms > 1 s): w1's only channel is idle,
 *             so w1 is idle and says so to w2, whose valve leaves that
 *             channel out of its minimum
 *   two: b@25000, T0+1700: two at 24999, so w2 is at 24999 and fires
 *             a [0,10s) = 1 (src2's a@1000) while the job runs; without
 *             the forwarded IDLE, w1's 999 would hold it
 *   end       w1 fires a [0,10s) = 1, stamped 9999: behind w2's
 *             watermark, so late at w2 (its late output), as in Flink
 *             for data of a channel that was idle; w2 fires b [20s,30s).
 */
TDM_TEST(idle_upstream_operator_does_not_hold_downstream)
{
    n_feeds = 0;
    feed *f1 = feed_new("one", 1);
    feed *f2 = feed_new("two", 1);
    atomic_store(&clock_now, T0);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, test_clock, NULL);
    tdm_node *s1 = feed_node(job, "src1", "one");
    KIT_SET(s1, "watermark.max_out_of_orderness", "0ms");
    KIT_SET(s1, "watermark.interval", "200ms");
    KIT_SET(s1, "watermark.idle_timeout", "1s");
    tdm_node *s2 = feed_node(job, "src2", "two");
    KIT_SET(s2, "watermark.max_out_of_orderness", "0ms");
    KIT_SET(s2, "watermark.interval", "200ms");
    tdm_node *w1 = kit_node(job, TDM_NODE_WINDOW, "w1");
    KIT_SET(w1, "from", "src1");
    KIT_SET(w1, "key_by", "k");
    KIT_SET(w1, "window.size", "10s");
    tdm_node *w2 = kit_node(job, TDM_NODE_WINDOW, "w2");
    KIT_SET(w2, "from", "w1, src2");
    KIT_SET(w2, "key_by", "k");
    KIT_SET(w2, "window.size", "10s");
    KIT_SET(w2, "sink", "out");
    KIT_SET(w2, "late_output", "late");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_node(job, TDM_NODE_SINK, "late");
    kit_bg bg;
    kit_bg_start(&bg, job);
    feed_push(f1, 0, "a", 1000);
    feed_push(f2, 0, "a", 1000);
    feed_sync(f1);
    feed_sync(f2);
    atomic_store(&clock_now, T0 + 200);
    feed_sync(f1);
    feed_sync(f2);
    atomic_store(&clock_now, T0 + 400);
    feed_sync(f1);
    feed_sync(f2);
    atomic_store(&clock_now, T0 + 1500);
    feed_sync(f1);
    feed_sync(f2);
    feed_push(f2, 0, "b", 25000);
    feed_sync(f2);
    atomic_store(&clock_now, T0 + 1700);
    feed_sync(f2);
    wait_lines("out", 1);
    KIT_EXPECT("out", "k=a count=1 [0,10000) on_time#0 +");
    feed_end(f1);
    feed_end(f2);
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("out", "k=a count=1 [0,10000) on_time#0 +",
               "k=b count=1 [20000,30000) on_time#0 +");
    ASSERT_EQ(kit_sink_get("late")->n, 1);
    tdm_job_destroy(job);
}

/* ---- Validation ---- */

static void expect_invalid(tdm_job *job, const char *want)
{
    char msg[512];
    ASSERT_ERR(tdm_job_validate(job, msg, sizeof msg), TDM_ERR_INVAL);
    if (strcmp(msg, want) != 0)
        tdm_test_fail(__FILE__, __LINE__, "message \"%s\", want \"%s\"", msg,
                      want);
}

static void expect_valid(tdm_job *job)
{
    char msg[512] = "";
    if (tdm_job_validate(job, msg, sizeof msg) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "validate: %s", msg);
}

TDM_TEST(validation_refuses_cycles_and_self_reference)
{
    tdm_job *job = new_job("1");
    tdm_node *a = kit_node(job, TDM_NODE_WINDOW, "a");
    KIT_SET(a, "from", "a");
    KIT_SET(a, "window.size", "10s");
    KIT_SET(a, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    expect_invalid(job, "window \"a\": from: \"a\" is this window itself; "
                        "an operator cannot read its own output");
    tdm_node *b = kit_node(job, TDM_NODE_WINDOW, "b");
    KIT_SET(b, "from", "a");
    KIT_SET(b, "window.size", "10s");
    tdm_node *c = kit_node(job, TDM_NODE_JOIN, "c");
    KIT_SET(c, "left", "src");
    KIT_SET(c, "right", "b");
    KIT_SET(c, "left_key", "k");
    KIT_SET(c, "right_key", "k");
    KIT_SET(a, "from", "c");
    expect_invalid(job, "window \"b\": from: \"a\" closes a cycle (a "
                        "reads c, c reads b, b reads a); an operator "
                        "cannot read its own output, even through others");
    /* Broken at b (b reads src, c reads b, a reads c): valid. */
    KIT_SET(b, "from", "src");
    KIT_SET(b, "key_by", "k");
    expect_valid(job);
    tdm_job_destroy(job);
}

TDM_TEST(validation_of_outputs_read_by_operators)
{
    tdm_job *job = new_job("1");
    tdm_node *a = kit_node(job, TDM_NODE_WINDOW, "a");
    KIT_SET(a, "from", "src");
    KIT_SET(a, "key_by", "k");
    KIT_SET(a, "window.size", "10s");
    KIT_SET(a, "aggregates", "count() as n");
    tdm_node *b = kit_node(job, TDM_NODE_WINDOW, "b");
    KIT_SET(b, "from", "a");
    KIT_SET(b, "key_by", "k");
    KIT_SET(b, "window.size", "10s");
    kit_node(job, TDM_NODE_SINK, "out");
    /* b is a leaf: it needs a sink; a does not. */
    expect_invalid(job, "window \"b\": sink: required (the name of a sink)");
    KIT_SET(b, "sink", "out");
    expect_valid(job);
    KIT_SET(a, "output_mode", "upsert");
    expect_invalid(job, "window \"a\": output_mode: window \"b\" reads "
                        "this window, which needs output_mode: append "
                        "(downstream operators take every pane as a "
                        "record; updates and retractions would be counted "
                        "again)");
    KIT_SET(a, "output_mode", "append");
    /* Fields of the output stream: key, aggregates, window bounds. */
    KIT_SET(b, "aggregates", "max(window_end) as last, sum(nope) as s");
    expect_invalid(job, "window \"b\": aggregates: field \"nope\" is not in "
                        "the output of window \"a\" (its key_by fields, "
                        "aggregate names, window_start and window_end)");
    KIT_SET(b, "aggregates", "max(window_end) as last, sum(n) as s");
    expect_valid(job);
    KIT_SET(b, "key_by", "v");
    expect_invalid(job, "window \"b\": key_by: field \"v\" is not in the "
                        "output of window \"a\" (its key_by fields, "
                        "aggregate names, window_start and window_end)");
    KIT_SET(b, "key_by", "k");
    /* A processing-time window's results have no event time. */
    KIT_SET(a, "window.time", "processing");
    expect_invalid(job, "window \"b\": window.time: event-time windows need "
                        "watermarks, but window \"a\" is a processing-time "
                        "window (its results carry no event time; set "
                        "window.time: processing)");
    KIT_SET(b, "window.time", "processing");
    expect_valid(job);
    tdm_job_destroy(job);
}

TDM_TEST(validation_of_the_join_filter_and_join_outputs)
{
    tdm_job *job = new_job("1");
    kit_source_node(job, "other", "three");
    tdm_node *j = kit_node(job, TDM_NODE_JOIN, "j");
    KIT_SET(j, "left", "src");
    KIT_SET(j, "right", "other");
    KIT_SET(j, "left_key", "k");
    KIT_SET(j, "right_key", "k");
    KIT_SET(j, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    KIT_SET(j, "filter", "right.v <= left.vv");
    char msg[512];
    ASSERT_ERR(tdm_job_validate(job, msg, sizeof msg), TDM_ERR_INVAL);
    if (strncmp(msg, "join \"j\": filter: ", 18) != 0 ||
        !strstr(msg, "left.vv"))
        tdm_test_fail(__FILE__, __LINE__, "message \"%s\"", msg);
    KIT_SET(j, "filter", "right.v <= ");
    expect_invalid(job, "join \"j\": filter: column 12: expected an "
                        "operand, got the end");
    KIT_SET(j, "filter", "right.v + left.v");
    ASSERT_ERR(tdm_job_validate(job, msg, sizeof msg), TDM_ERR_INVAL);
    if (strncmp(msg, "join \"j\": filter: ", 18) != 0)
        tdm_test_fail(__FILE__, __LINE__, "message \"%s\"", msg);
    KIT_SET(j, "filter", "right.v <= left.v and ts >= 0");
    expect_valid(job);
    /* A window reading the join: its columns are left.*, right.*, ts. */
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "j");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "sink", "out");
    expect_invalid(job, "window \"w\": key_by: field \"k\" is not in the "
                        "output of join \"j\" (left.<field>, "
                        "right.<field> and ts)");
    KIT_SET(w, "key_by", "left.k");
    expect_valid(job);
    tdm_job_destroy(job);
}
