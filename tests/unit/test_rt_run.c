/* SPDX-License-Identifier: MIT */
/* test_rt_run.c - jobs run end to end on worker threads, with the kit's
 * in-memory source and collecting sink: identical result multisets at
 * parallelism 1, 2 and 4, unions, row aggregates over sessions, late
 * output with allowed lateness in retract and upsert modes, joins,
 * filters and maps, ingestion time, the timestamp guard, the unit check,
 * and failure reporting.  Every expected line is derived by hand in the
 * comment above it. */
#include "test_rt_kit.h"
#include "testhooks.h"

/* ---- Datasets ---- */

/* Three partitions, each in timestamp order, so no record can be late
 * whatever the thread timing: a partition's watermark stays below its
 * next record, and merged watermarks are minimums. */
static const kit_row three_rows[] = {
    {0, "a", 1000, 1},  {1, "b", 3000, 5},  {2, "c", 500, 8},
    {0, "b", 2000, 2},  {1, "a", 9999, 6},  {2, "c", 19999, 9},
    {0, "a", 11000, 3}, {1, "b", 10000, 7}, {2, "a", 20000, 10},
    {0, "c", 25000, 4},
};

static void add_three(void)
{
    kit_add_data((kit_data){"three", 3, three_rows, 10, 0, 0, 0});
}

static tdm_job *three_job(const char *aggs, const char *parallelism)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", parallelism);
    kit_source_node(job, "src", "three");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", aggs);
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    return job;
}

/* Tumbling 10 s by key over "three":
 *   [0,10000)     a: 1000(v1), 9999(v6)   -> n 2, s 7, mx 9999
 *                 b: 2000(v2), 3000(v5)   -> n 2, s 7, mx 3000
 *                 c: 500(v8)              -> n 1, s 8, mx 500
 *   [10000,20000) a: 11000(v3); b: 10000(v7); c: 19999(v9)
 *   [20000,30000) a: 20000(v10); c: 25000(v4)
 * every pane the first and on time. */
static void check_three(const char *parallelism)
{
    add_three();
    tdm_job *job =
        three_job("count() as n, sum(v) as s, max(ts) as mx", parallelism);
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=2 s=7 mx=9999 [0,10000) on_time#0 +",
               "k=b n=2 s=7 mx=3000 [0,10000) on_time#0 +",
               "k=c n=1 s=8 mx=500 [0,10000) on_time#0 +",
               "k=a n=1 s=3 mx=11000 [10000,20000) on_time#0 +",
               "k=b n=1 s=7 mx=10000 [10000,20000) on_time#0 +",
               "k=c n=1 s=9 mx=19999 [10000,20000) on_time#0 +",
               "k=a n=1 s=10 mx=20000 [20000,30000) on_time#0 +",
               "k=c n=1 s=4 mx=25000 [20000,30000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 10);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 8);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_WATERMARK), TDM_TIME_MAX);
    ASSERT_EQ(kit_sink_get("out")->opened, 1);
    ASSERT_EQ(kit_sink_get("out")->closed, 1);
    tdm_job_destroy(job);
}

TDM_TEST(same_results_at_parallelism_1)
{
    check_three("1");
}

TDM_TEST(same_results_at_parallelism_2)
{
    check_three("2");
}

TDM_TEST(same_results_at_parallelism_4)
{
    check_three("4");
}

/* A single count() takes the built-in aggregate: same counts as above. */
TDM_TEST(single_count_fast_path_at_parallelism_1_2_4)
{
    add_three();
    static const char *const ps[] = {"1", "2", "4"};
    for (int i = 0; i < 3; i++) {
        tdm_job *job = three_job("count()", ps[i]);
        kit_run_ok(job);
        KIT_EXPECT("out", "k=a count=2 [0,10000) on_time#0 +",
                   "k=b count=2 [0,10000) on_time#0 +",
                   "k=c count=1 [0,10000) on_time#0 +",
                   "k=a count=1 [10000,20000) on_time#0 +",
                   "k=b count=1 [10000,20000) on_time#0 +",
                   "k=c count=1 [10000,20000) on_time#0 +",
                   "k=a count=1 [20000,30000) on_time#0 +",
                   "k=c count=1 [20000,30000) on_time#0 +");
        tdm_job_destroy(job);
    }
}

/* Union of s1 (a@1000 v1, b@15000 v1) and s2 (a@2000 v5, a@12000 v1):
 *   a [0,10000): v1 + v5 -> n 2, s 6; a [10000,20000): n 1, s 1;
 *   b [10000,20000): n 1, s 1. */
TDM_TEST(union_of_two_sources)
{
    static const kit_row r1[] = {{0, "a", 1000, 1}, {0, "b", 15000, 1}};
    static const kit_row r2[] = {{0, "a", 2000, 5}, {0, "a", 12000, 1}};
    kit_add_data((kit_data){"u1", 1, r1, 2, 0, 0, 0});
    kit_add_data((kit_data){"u2", 1, r2, 2, 0, 0, 0});
    for (int p = 1; p <= 2; p++) {
        tdm_job *job;
        ASSERT_OK(tdm_job_new(&job));
        KIT_JOB_SET(job, "parallelism", p == 1 ? "1" : "2");
        kit_source_node(job, "s1", "u1");
        kit_source_node(job, "s2", "u2");
        tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
        KIT_SET(w, "from", "s1, s2");
        KIT_SET(w, "key_by", "k");
        KIT_SET(w, "window.size", "10s");
        KIT_SET(w, "aggregates", "count() as n, sum(v) as s");
        KIT_SET(w, "sink", "out");
        kit_node(job, TDM_NODE_SINK, "out");
        kit_run_ok(job);
        KIT_EXPECT("out", "k=a n=2 s=6 [0,10000) on_time#0 +",
                   "k=a n=1 s=1 [10000,20000) on_time#0 +",
                   "k=b n=1 s=1 [10000,20000) on_time#0 +");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 4);
        tdm_job_destroy(job);
    }
}

/* Sessions with gap 10 s and every row aggregate.  a@0 (v5) opens
 * [0,10000), a@20000 (v1) opens [20000,30000), a@10000 (v4) opens
 * [10000,20000), which touches both: one session [0,30000) with values
 * 5, 1, 4 in arrival order: n 3, s 10, lo 1, hi 5, mean 10/3, d 3,
 * first 5, last 4 (arrival, not time order).  b@1000 twice (v3):
 * [1000,11000), n 2, s 6, lo = hi = 3, mean 3, d 1. */
TDM_TEST(session_windows_with_every_row_aggregate)
{
    static const kit_row r[] = {{0, "a", 0, 5},
                                {0, "a", 20000, 1},
                                {0, "a", 10000, 4},
                                {0, "b", 1000, 3},
                                {0, "b", 1000, 3}};
    kit_add_data((kit_data){"sess", 1, r, 5, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    kit_source_node(job, "src", "sess");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.type", "session");
    KIT_SET(w, "window.gap", "10s");
    KIT_SET(w, "aggregates",
            "count() as n, sum(v) as s, min(v) as lo, max(v) as hi, "
            "avg(v) as mean, count_distinct(v) as d, first(v) as f, "
            "last(v) as l, first(k) as fk, count_distinct(k) as dk");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    KIT_EXPECT("out",
               "k=a n=3 s=10 lo=1 hi=5 mean=3.33333 d=3 f=5 l=4 fk=a dk=1 "
               "[0,30000) on_time#0 +",
               "k=b n=2 s=6 lo=3 hi=3 mean=3 d=1 f=3 l=3 fk=b dk=1 "
               "[1000,11000) on_time#0 +");
    tdm_job_destroy(job);
}

/* One partition, watermarks after every record (bound 0: wm = max - 1),
 * tumbling 10 s, allowed lateness 5 s:
 *   a@1000                 wm 999
 *   a@12000                wm 11999: [0,10000) fires a=1 (on time, #0)
 *   a@5000                 [0,10000) cleanup 9999+5000 = 14999 > 11999:
 *                          accepted, refires at once: a=2 (late, #1,
 *                          update)
 *   a@16000                wm 15999 >= 14999: [0,10000) cleaned up
 *   a@2000, b@3000         late for every window -> late output
 *   end                    [10000,20000) fires a=2 (12000, 16000)
 * The second partition-less subtask at parallelism 2 ends at once, so
 * the classification does not depend on timing. */
static const kit_row late_rows[] = {
    {0, "a", 1000, 1},  {0, "a", 12000, 1}, {0, "a", 5000, 1},
    {0, "a", 16000, 1}, {0, "a", 2000, 1},  {0, "b", 3000, 1},
};

static tdm_job *late_job(const char *mode, const char *p, bool late_out)
{
    kit_add_data((kit_data){"late", 1, late_rows, 6, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", p);
    tdm_node *s = kit_source_node(job, "src", "late");
    KIT_SET(s, "watermark.emit", "on_event");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "allowed_lateness", "5s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "output_mode", mode);
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    if (late_out) {
        KIT_SET(w, "late_output", "late");
        kit_node(job, TDM_NODE_SINK, "late");
    }
    return job;
}

TDM_TEST(late_output_and_retractions)
{
    static const char *const ps[] = {"1", "2"};
    for (int i = 0; i < 2; i++) {
        tdm_job *job = late_job("retract", ps[i], true);
        kit_run_ok(job);
        /* Retract mode: before the update, the previous result (n=1) is
         * withdrawn with the update's pane information. */
        KIT_EXPECT("out", "k=a n=1 [0,10000) on_time#0 +",
                   "k=a n=1 [0,10000) late#1u -", "k=a n=2 [0,10000) late#1u +",
                   "k=a n=2 [10000,20000) on_time#0 +");
        KIT_EXPECT("late", "{\"k\": \"a\", \"ts\": 2000, \"v\": 1}",
                   "{\"k\": \"b\", \"ts\": 3000, \"v\": 1}");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT), 2);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_REFIRES), 1);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 4);
        ASSERT_EQ(kit_sink_get("out")->upsert, 2); /* retract mode */
        tdm_job_destroy(job);
    }
}

/* The same stream in upsert mode: the update is one UPDATE row; the
 * sink is opened in upsert mode.  Without a late output the two late
 * records are dropped and counted. */
TDM_TEST(upsert_mode_and_dropped_late_records)
{
    tdm_job *job = late_job("upsert", "1", false);
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=1 [0,10000) on_time#0 +",
               "k=a n=2 [0,10000) late#1u ~",
               "k=a n=2 [10000,20000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 2);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT), 0);
    ASSERT_EQ(kit_sink_get("out")->upsert, 1);
    tdm_job_destroy(job);
    /* Append mode writes every pane as an insert. */
    job = late_job("append", "2", false);
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=1 [0,10000) on_time#0 +",
               "k=a n=2 [0,10000) late#1u +",
               "k=a n=2 [10000,20000) on_time#0 +");
    tdm_job_destroy(job);
}

/* Interval join, right.ts in [left.ts, left.ts + 5 s] on equal keys:
 *   o1@1000 with p@4000 (yes) and p@6000 (yes, inclusive bound)
 *   o2@2000 with p@9000: 9000 > 7000, no
 *   o3@3000 with p@3000: yes
 * Each pair's ts is max(left.ts, right.ts).  Each side is read in one
 * poll before any periodic watermark, so nothing is late. */
TDM_TEST(interval_join_pairs)
{
    static const kit_row orders[] = {
        {0, "o1", 1000, 100}, {0, "o2", 2000, 200}, {0, "o3", 3000, 300}};
    static const kit_row pays[] = {{0, "o1", 4000, 1},
                                   {0, "o2", 9000, 2},
                                   {0, "o3", 3000, 3},
                                   {0, "o1", 6000, 4}};
    kit_add_data((kit_data){"orders", 1, orders, 3, 0, 0, 0});
    kit_add_data((kit_data){"pays", 1, pays, 4, 0, 0, 0});
    for (int p = 1; p <= 2; p++) {
        tdm_job *job;
        ASSERT_OK(tdm_job_new(&job));
        KIT_JOB_SET(job, "parallelism", p == 1 ? "1" : "2");
        kit_source_node(job, "o", "orders");
        kit_source_node(job, "p", "pays");
        tdm_node *j = kit_node(job, TDM_NODE_JOIN, "j");
        KIT_SET(j, "left", "o");
        KIT_SET(j, "right", "p");
        KIT_SET(j, "left_key", "k");
        KIT_SET(j, "right_key", "k");
        KIT_SET(j, "lower", "0");
        KIT_SET(j, "upper", "5s");
        KIT_SET(j, "sink", "out");
        kit_node(job, TDM_NODE_SINK, "out");
        kit_run_ok(job);
        KIT_EXPECT("out",
                   "left.k=o1 left.ts=1000 left.v=100 right.k=o1 "
                   "right.ts=4000 right.v=1 ts=4000 on_time#0 +",
                   "left.k=o1 left.ts=1000 left.v=100 right.k=o1 "
                   "right.ts=6000 right.v=4 ts=6000 on_time#0 +",
                   "left.k=o3 left.ts=3000 left.v=300 right.k=o3 "
                   "right.ts=3000 right.v=3 ts=3000 on_time#0 +");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 7);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 3);
        tdm_job_destroy(job);
    }
}

/* Window join, tumbling 10 s: pairs of equal keys in the same window,
 * each with ts end - 1 = 9999:  x@1000 x x@2000 and x@1000 x x@9000;
 * y@3000 has no partner in its window (y@12000 is in the next). */
TDM_TEST(window_join_pairs)
{
    static const kit_row l[] = {{0, "x", 1000, 1}, {0, "y", 3000, 2}};
    static const kit_row r[] = {
        {0, "x", 2000, 3}, {0, "x", 9000, 4}, {0, "y", 12000, 5}};
    kit_add_data((kit_data){"wl", 1, l, 2, 0, 0, 0});
    kit_add_data((kit_data){"wr", 1, r, 3, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    kit_source_node(job, "l", "wl");
    kit_source_node(job, "r", "wr");
    tdm_node *j = kit_node(job, TDM_NODE_JOIN, "j");
    KIT_SET(j, "type", "window");
    KIT_SET(j, "window.size", "10s");
    KIT_SET(j, "left", "l");
    KIT_SET(j, "right", "r");
    KIT_SET(j, "left_key", "k");
    KIT_SET(j, "right_key", "k");
    KIT_SET(j, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    KIT_EXPECT("out",
               "left.k=x left.ts=1000 left.v=1 right.k=x right.ts=2000 "
               "right.v=3 ts=9999 [0,10000) on_time#0 +",
               "left.k=x left.ts=1000 left.v=1 right.k=x right.ts=9000 "
               "right.v=4 ts=9999 [0,10000) on_time#0 +");
    tdm_job_destroy(job);
}

/* ---- Filters and maps ---- */

static int keep_odd(void *ud, const tdm_row *row)
{
    return tdm_row_int(row, *(const int *)ud) % 2 == 1;
}

static void times_ten(void *ud, tdm_row *row)
{
    int i = *(const int *)ud;
    tdm_row_set_int(row, i, tdm_row_int(row, i) * 10);
}

/* Odd values of "three": a@1000 v1, a@11000 v3, b@3000 v5, b@10000 v7,
 * c@19999 v9; times ten: sums 10, 30, 50, 70, 90 in their windows. */
TDM_TEST(filters_and_maps_run_in_the_source)
{
    add_three();
    tdm_job *job = three_job("count() as n, sum(v) as s", "2");
    tdm_node *src = tdm_job_node(job, "src");
    static int vi;
    vi = tdm_node_field_index(src, "v");
    ASSERT_EQ(vi, 2);
    ASSERT_OK(tdm_node_add_filter(src, keep_odd, &vi));
    ASSERT_OK(tdm_node_add_map(src, times_ten, &vi));
    ASSERT_ERR(tdm_node_add_map(tdm_job_node(job, "w"), times_ten, &vi),
               TDM_ERR_INVAL);
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=1 s=10 [0,10000) on_time#0 +",
               "k=a n=1 s=30 [10000,20000) on_time#0 +",
               "k=b n=1 s=50 [0,10000) on_time#0 +",
               "k=b n=1 s=70 [10000,20000) on_time#0 +",
               "k=c n=1 s=90 [10000,20000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 10);
    tdm_job_destroy(job);
}

/* ---- Processing time ---- */

static _Atomic int64_t fixed_now;

static tdm_time_ms fixed_clock(void *ud)
{
    (void)ud;
    return atomic_load(&fixed_now);
}

/* Ingestion time with processing time frozen at 123456: every row gets
 * that timestamp, so per key one window [120000,130000) counts all its
 * rows of "three": a 4, b 3, c 3. */
TDM_TEST(ingestion_time_stamps_rows_at_the_source)
{
    add_three();
    atomic_store(&fixed_now, 123456);
    tdm_job *job = three_job("count()", "2");
    tdm__job_set_clock(job, fixed_clock, NULL);
    KIT_SET(tdm_job_node(job, "src"), "time", "ingestion");
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a count=4 [120000,130000) on_time#0 +",
               "k=b count=3 [120000,130000) on_time#0 +",
               "k=c count=3 [120000,130000) on_time#0 +");
    tdm_job_destroy(job);
}

/* ---- Watermarks per batch ---- */

/* Processing time that advances 1 s at every reading: each periodic
 * tick (after every batch, interval 200 ms) finds its interval over. */
static _Atomic int64_t ticking_now;

static tdm_time_ms ticking_clock(void *ud)
{
    (void)ud;
    return atomic_fetch_add(&ticking_now, 1000) + 1000;
}

/* Batches of 3 rows, one partition, bounded out-of-orderness 0, periodic
 * emission.  The first batch holds a@9000, a@20000, a@5000: the tick
 * after it emits its highest timestamp - 1 = 19999 (not the last one's,
 * 5000 - 1), which fires [0,10000) with the two rows it has, on time.
 * The second batch's a@8000 then belongs to a fired window: late, to the
 * late output.  [20000,30000) fires at the end with a@20000.  Had the
 * generator seen only 5000, a@8000 would have been counted (n=3). */
static const kit_row batch_max_rows[] = {{0, "a", 9000, 1},
                                         {0, "a", 20000, 1},
                                         {0, "a", 5000, 1},
                                         {0, "a", 8000, 1}};

TDM_TEST(periodic_watermark_takes_each_batch_maximum)
{
    kit_add_data((kit_data){"bmax", 1, batch_max_rows, 4, 0, 0, 0});
    atomic_store(&ticking_now, 0);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, ticking_clock, NULL);
    KIT_JOB_SET(job, "batch.size", "3");
    kit_source_node(job, "src", "bmax");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "sink", "out");
    KIT_SET(w, "late_output", "late");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_node(job, TDM_NODE_SINK, "late");
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a count=2 [0,10000) on_time#0 +",
               "k=a count=1 [20000,30000) on_time#0 +");
    KIT_EXPECT("late", "{\"k\": \"a\", \"ts\": 8000, \"v\": 1}");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT), 1);
    tdm_job_destroy(job);
}

/* ---- Protection ---- */

/* Processing time frozen at 1 000 000; guard 1 h.  a@1e13 lies far ahead:
 * it does not reach the watermark generator, so a@2000 after it is still
 * on time (without the guard the watermark would be 1e13 - 1 and a@2000
 * late).  The guarded record itself is still processed:
 *   a [0,10000): 1000, 2000 -> 2;  a [1e13, 1e13 + 10000): 1. */
static const kit_row guard_rows[] = {
    {0, "a", 1000, 1}, {0, "a", 10000000000000LL, 1}, {0, "a", 2000, 1}};

static tdm_job *guard_job(void)
{
    kit_add_data((kit_data){"guard", 1, guard_rows, 3, 0, 0, 0});
    atomic_store(&fixed_now, 1000000);
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
    return job;
}

TDM_TEST(timestamp_guard_keeps_far_future_out_of_the_watermark)
{
    tdm_job *job = guard_job();
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a count=2 [0,10000) on_time#0 +",
               "k=a count=1 [10000000000000,10000000010000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_GUARD_HITS), 1);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
    tdm_job_destroy(job);
    /* With the guard off, the same stream loses a@2000 as late. */
    job = guard_job();
    KIT_JOB_SET(job, "timestamp_guard", "0");
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a count=1 [0,10000) on_time#0 +",
               "k=a count=1 [10000000000000,10000000010000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_GUARD_HITS), 0);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 1);
    tdm_job_destroy(job);
}

/* With timestamp_guard.dead_letter the guarded record goes to the dead
 * letter sink instead of being processed. */
TDM_TEST(timestamp_guard_can_dead_letter)
{
    tdm_job *job = guard_job();
    KIT_JOB_SET(job, "timestamp_guard.dead_letter", "true");
    KIT_JOB_SET(job, "dead_letter", "dead");
    kit_node(job, TDM_NODE_SINK, "dead");
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a count=2 [0,10000) on_time#0 +");
    kit_sink *d = kit_sink_get("dead");
    ASSERT_EQ(d->n, 1);
    ASSERT_TRUE(strncmp(d->lines[0], "src partition 0 | timestamp ", 28) == 0);
    ASSERT_TRUE(strstr(d->lines[0], "ahead of processing time "
                                    "(timestamp_guard 1h)") != NULL);
    ASSERT_TRUE(strstr(d->lines[0], "{\"k\": \"a\", \"ts\": 10000000000000, "
                                    "\"v\": 1}") != NULL);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_GUARD_HITS), 1);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_BAD_RECORDS), 0);
    tdm_job_destroy(job);
}

typedef struct logbuf {
    pthread_mutex_t mu;
    char lines[8][512];
    int n;
} logbuf;

static void collect_log(void *ud, const char *line)
{
    logbuf *lb = ud;
    pthread_mutex_lock(&lb->mu);
    if (lb->n < 8)
        snprintf(lb->lines[lb->n++], sizeof lb->lines[0], "%s", line);
    pthread_mutex_unlock(&lb->mu);
}

/* Values 1733133600.. in a ms field are seconds (2024-12-02T10:00:00Z
 * read as seconds; as ms they are 1970-01-21T01:25:33.600Z): one line
 * says so with the evidence. */
TDM_TEST(unit_check_reports_seconds_in_a_ms_field)
{
    static const kit_row r[] = {{0, "a", 1733133600, 1},
                                {0, "a", 1733133601, 1},
                                {0, "a", 1733133605, 1}};
    kit_add_data((kit_data){"secs", 1, r, 3, 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    static logbuf lb = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};
    ASSERT_OK(tdm_job_set_log(job, collect_log, &lb));
    kit_source_node(job, "clicks", "secs");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "clicks");
    KIT_SET(w, "window.size", "1h");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    ASSERT_EQ(lb.n, 1);
    ASSERT_STR_EQ(lb.lines[0],
                  "source clicks: timestamp.unit is ms but values look like "
                  "seconds (first: 1733133600 = 1970-01-21T01:25:33.600Z; "
                  "read as seconds it would be 2024-12-02T10:00:00Z); set "
                  "timestamp.unit to s if so");
    /* No key_by: one global key, all three in one window. */
    KIT_EXPECT("out", "count=3 [1731600000,1735200000) on_time#0 +");
    tdm_job_destroy(job);
}

/* ---- Failures ---- */

TDM_TEST(sink_write_failure_stops_the_job_with_io)
{
    add_three();
    tdm_job *job = three_job("count()", "2");
    kit_sink_get("out")->fail_writes = 1;
    char msg[512];
    ASSERT_ERR(tdm_job_run(job, msg, sizeof msg), TDM_ERR_IO);
    ASSERT_STR_EQ(msg, "sink \"out\": writing a result to stdout failed");
    kit_sink_get("out")->fail_writes = 0;
    ASSERT_EQ(kit_sink_get("out")->closed, 1);
    /* The job can run again. */
    kit_run_ok(job);
    ASSERT_EQ(kit_sink_get("out")->n, 8);
    tdm_job_destroy(job);
}

TDM_TEST(missing_dataset_fails_to_open_with_io)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    kit_source_node(job, "src", "no-such-data");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "window.size", "1s");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    char msg[512];
    ASSERT_ERR(tdm_job_run(job, msg, sizeof msg), TDM_ERR_IO);
    ASSERT_STR_EQ(msg, "source \"src\": no dataset \"no-such-data\"");
    tdm_job_destroy(job);
}
