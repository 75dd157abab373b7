/* SPDX-License-Identifier: MIT */
/* test_rt_localagg.c - two-phase (local/global) window aggregation in the
 * runtime (src/runtime/localagg.c): hand-computed results of a job whose
 * source folds records into partial accumulators, with a record that
 * arrives after its slice was flushed (routed raw: a late refire), one
 * too late for every window (the late output), at parallelism 1 and 2
 * and with local_aggregation off; the number of records folded and of
 * partial rows sent; and eligibility (a kafka source runs in one phase).
 * tests/cli/local_agg.sh compares the two modes on larger generated
 * inputs.
 */
#include "test_rt_kit.h"
#include "runtime/outbox.h"

/* One partition with on-event watermarks (bound 0: W = max - 1), so
 * every watermark follows the record that caused it and the result is
 * the same in every run.  Tumbling 10 s, allowed lateness 5 s:
 *   a@1000 b@2000        folded into slice [0,10000)
 *   a@12000              folded into [10000,20000); W = 11999 flushes
 *                        [0,10000): a n=1 m=1, b n=1 m=2 on time
 *   a@5000 (v 4)         its slice is flushed: raw, refires a n=2 m=4
 *   c@15000              W = 14999 cleans [0,10000) up
 *   a@3000 (v 6)         raw, too late for every window: late output
 *   a@14000 (v 7)        folded into [10000,20000)
 *   end                  [10000,20000): a n=2 m=7, c n=1 m=5 on time
 * Folded: 5 records into 4 partial rows. */
static const kit_row hand_rows[] = {
    {0, "a", 1000, 1},  {0, "b", 2000, 2},  {0, "a", 12000, 3},
    {0, "a", 5000, 4},  {0, "c", 15000, 5}, {0, "a", 3000, 6},
    {0, "a", 14000, 7},
};

/* The log lines of a run that mention local aggregation. */
typedef struct loglines {
    pthread_mutex_t mu;
    char text[4096];
} loglines;

static void capture(void *ud, const char *line)
{
    loglines *l = ud;
    if (strstr(line, "debug local_aggregation") == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, "%s\n", line);
    pthread_mutex_unlock(&l->mu);
}

static tdm_job *hand_job(const char *p, const char *mode, loglines *log)
{
    kit_add_data((kit_data){"hand", 1, hand_rows,
                            sizeof hand_rows / sizeof hand_rows[0], 0, 0, 0});
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", p);
    KIT_JOB_SET(job, "log.level", "debug");
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->mu, NULL);
    ASSERT_OK(tdm_job_set_log(job, capture, log));
    tdm_node *s = kit_source_node(job, "src", "hand");
    KIT_SET(s, "watermark.max_out_of_orderness", "0");
    KIT_SET(s, "watermark.emit", "on_event");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "allowed_lateness", "5s");
    KIT_SET(w, "aggregates", "count() as n, max(v) as m");
    KIT_SET(w, "local_aggregation", mode);
    KIT_SET(w, "sink", "out");
    KIT_SET(w, "late_output", "late");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_node(job, TDM_NODE_SINK, "late");
    return job;
}

static void check_hand(const char *p, const char *mode)
{
    loglines log;
    tdm_job *job = hand_job(p, mode, &log);
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=1 m=1 [0,10000) on_time#0 +",
               "k=b n=1 m=2 [0,10000) on_time#0 +",
               "k=a n=2 m=4 [0,10000) late#1u +",
               "k=a n=2 m=7 [10000,20000) on_time#0 +",
               "k=c n=1 m=5 [10000,20000) on_time#0 +");
    ASSERT_EQ(kit_sink_get("late")->n, 1);
    ASSERT_TRUE(strstr(kit_sink_get("late")->lines[0], "3000") != NULL);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT), 1);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_REFIRES), 1);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 5);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 7);
    if (strcmp(mode, "auto") == 0) {
        ASSERT_TRUE(strstr(log.text, "window=w phases=2") != NULL);
        /* Only subtask 0 has the partition. */
        ASSERT_TRUE(strstr(log.text, "subtask=0 window=w folded=5 "
                                     "partials=4") != NULL);
    } else {
        ASSERT_TRUE(strstr(log.text, "window=w phases=1 reason="
                                     "local_aggregation is off") != NULL);
        ASSERT_TRUE(strstr(log.text, "folded=") == NULL);
    }
    tdm_job_destroy(job);
    pthread_mutex_destroy(&log.mu);
}

TDM_TEST(hand_computed_two_phase_p1)
{
    check_hand("1", "auto");
}

TDM_TEST(hand_computed_two_phase_p2)
{
    check_hand("2", "auto");
}

TDM_TEST(hand_computed_one_phase_p1_p2)
{
    check_hand("1", "off");
    check_hand("2", "off");
}

/* The same data as a built-in count (the window store's lean path,
 * tdm__winop_push_partial) with a sliding window of 10 s every 5 s:
 * slices of 5 s; windows [-5000,5000), [0,10000), [5000,15000),
 * [10000,20000), [15000,25000).  Hand-derived as above (W = max - 1,
 * lateness 5 s):
 *   a@1000 b@2000 folded into [0,5000); a@12000 folded into
 *   [10000,15000), W 11999 flushes [0,5000): [-5000,5000) fires
 *   (a 1, b 1); [0,10000) fires (a 1, b 1: [5000,10000) is empty);
 *   a@5000: its slice [5000,10000) ends at 9999 <= 11999, so it is
 *   raw: windows [0,10000) (late refire a 2) and [5000,15000) (open)
 *   take it;
 *   c@15000: W 14999 flushes [10000,15000) first (a@12000 goes to
 *   [5000,15000) and [10000,20000)); [5000,15000) fires: a 2 (5000,
 *   12000) on time; cleanup of [-5000,5000) (4999 + 5000 <= 14999) and
 *   [0,10000) (14999);
 *   a@3000: windows [-5000,5000) and [0,10000) are cleaned up: late
 *   output;
 *   a@14000: [10000,15000) was flushed at W 14999: raw, so
 *   [5000,15000) refires (a 3) and [10000,20000) takes it;
 *   end: [10000,20000) a 2 (12000, 14000), c 1; [15000,25000) c 1. */
TDM_TEST(hand_computed_sliding_count)
{
    for (int k = 0; k < 3; k++) {
        loglines log;
        tdm_job *job =
            hand_job(k == 1 ? "2" : "1", k == 2 ? "off" : "auto", &log);
        tdm_node *w = tdm_job_node(job, "w");
        ASSERT_TRUE(w != NULL);
        KIT_SET(w, "window.type", "sliding");
        KIT_SET(w, "window.slide", "5s");
        KIT_SET(w, "aggregates", "count() as n");
        kit_run_ok(job);
        KIT_EXPECT(
            "out", "k=a n=1 [-5000,5000) on_time#0 +",
            "k=b n=1 [-5000,5000) on_time#0 +", "k=a n=1 [0,10000) on_time#0 +",
            "k=b n=1 [0,10000) on_time#0 +", "k=a n=2 [0,10000) late#1u +",
            "k=a n=2 [5000,15000) on_time#0 +",
            "k=a n=3 [5000,15000) late#1u +",
            "k=a n=2 [10000,20000) on_time#0 +",
            "k=c n=1 [10000,20000) on_time#0 +",
            "k=c n=1 [15000,25000) on_time#0 +");
        ASSERT_EQ(kit_sink_get("late")->n, 1);
        ASSERT_TRUE(strstr(log.text, k == 2 ? "phases=1" : "phases=2") != NULL);
        tdm_job_destroy(job);
        pthread_mutex_destroy(&log.mu);
    }
}

/* A kafka source keeps the window in one phase (its key fence and replay
 * marks work per record).  The kit's connector stands in for Kafka's. */
TDM_TEST(kafka_source_is_one_phase)
{
    loglines log;
    tdm_job *job = hand_job("1", "auto", &log);
    tdm_node *s = tdm_job_node(job, "src");
    ASSERT_TRUE(s != NULL);
    KIT_SET(s, "type", "kafka");
    KIT_SET(s, "brokers", "127.0.0.1:1");
    KIT_SET(s, "topics", "t");
    kit_run_ok(job);
    ASSERT_TRUE(strstr(log.text, "window=w phases=1 reason=a kafka source") !=
                NULL);
    ASSERT_EQ(kit_sink_get("out")->n, 5);
    tdm_job_destroy(job);
    pthread_mutex_destroy(&log.mu);
}

/* The pool of partial-row messages keeps at most `keep` of those handed
 * back and frees the rest (memory stays bounded whatever the consumers
 * return); a message without a pool is freed.  Leaks and double frees
 * show under the sanitizer build. */
TDM_TEST(partials_pool_keeps_at_most_keep)
{
    tdm__rt_ppool pool;
    memset(&pool, 0, sizeof pool);
    ASSERT_EQ(pthread_mutex_init(&pool.mu, NULL), 0);
    pool.keep = 2;
    tdm__rt_partials *m[3];
    for (int i = 0; i < 3; i++) {
        m[i] = tdm__calloc(1, sizeof *m[i]);
        ASSERT_TRUE(m[i] != NULL);
        m[i]->pool = &pool;
    }
    for (int i = 0; i < 3; i++)
        tdm__rt_partials_release(m[i]);
    ASSERT_EQ(pool.n_free, 2);
    ASSERT_TRUE(pool.free == m[1] && pool.free->next == m[0]);
    tdm__rt_partials *lone = tdm__calloc(1, sizeof *lone);
    ASSERT_TRUE(lone != NULL);
    tdm__rt_partials_release(lone); /* no pool: freed */
    tdm__rt_partials_release(NULL);
    while (pool.free) {
        tdm__rt_partials *nx = pool.free->next;
        tdm__rt_partials_free(pool.free);
        pool.free = nx;
    }
    pthread_mutex_destroy(&pool.mu);
}
