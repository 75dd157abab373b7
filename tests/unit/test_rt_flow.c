/* SPDX-License-Identifier: MIT */
/* test_rt_flow.c - how records flow under pressure: a slow sink fills
 * the queues and stops the sources with memory bounded, cancel stops an
 * endless job cleanly with every record accounted for, and real files
 * go through the file connector with a malformed line dead-lettered.
 * Nothing sleeps: waits are on conditions the test controls, and
 * spin-waits yield and give up after a generous bound. */
#include <stdlib.h>
#include <unistd.h>

#include "test_rt_kit.h"
#include "testhooks.h"

/* Sums the "n=" column over a sink's lines. */
static int64_t sum_n(const char *sink)
{
    kit_sink *k = kit_sink_get(sink);
    int64_t total = 0;
    for (size_t i = 0; i < k->n; i++) {
        const char *p = strstr(k->lines[i], "n=");
        ASSERT_TRUE(p != NULL);
        total += strtoll(p + 2, NULL, 10);
    }
    return total;
}

/* Generated keys k0..k9, ts = i ms (in order), tumbling 10 ms windows
 * with on-event watermarks, so results flow while the source reads. */
static tdm_job *stream_job(const char *data, const char *parallelism)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", parallelism);
    tdm_node *s = kit_source_node(job, "src", data);
    KIT_SET(s, "watermark.emit", "on_event");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10ms");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    return job;
}

/* A sink that blocks on its first result.  With batch.size 64 and
 * queue.capacity 2, the source subtask can hold at most capacity + 2
 * batches (its pool): two queued, one taken by the blocked window
 * subtask, one being filled.  So once it waits, records read stop
 * growing and stay <= 4 * 64, whatever the 5 M records of the source. */
TDM_TEST(slow_sink_backpressure_bounds_memory)
{
    kit_add_data((kit_data){"endless", 1, NULL, 0, 5000000, 10, 1});
    tdm_job *job = stream_job("endless", "1");
    KIT_JOB_SET(job, "batch.size", "64");
    KIT_JOB_SET(job, "queue.capacity", "2");
    kit_sink *k = kit_sink_get("out");
    pthread_mutex_lock(&k->mu);
    k->gate = 1;
    pthread_mutex_unlock(&k->mu);
    kit_bg bg;
    kit_bg_start(&bg, job);
    /* Wait until the sink holds a writer. */
    pthread_mutex_lock(&k->mu);
    while (k->blocked == 0)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    /* Wait until the source stopped reading (bounded spin): the count
     * of records read no longer moves. */
    double t0 = kit_secs();
    int64_t in1, in2 = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    do {
        in1 = in2;
        for (int i = 0; i < 20000; i++)
            sched_yield();
        in2 = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    } while (in1 != in2 && kit_secs() - t0 < 20);
    ASSERT_EQ(in1, in2);
    ASSERT_TRUE(tdm__job_queue_waits(job) > 0);
    ASSERT_TRUE(in2 <= 4 * 64);
    ASSERT_TRUE(tdm__job_batches_live(job) <= 4);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), 0);
    /* Release the sink and stop: what was read is flushed, none lost. */
    tdm_job_cancel(job);
    pthread_mutex_lock(&k->mu);
    k->gate = 0;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    ASSERT_OK(kit_bg_join(&bg));
    int64_t in = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    ASSERT_TRUE(in < 5000000);
    ASSERT_EQ(sum_n("out"), in);
    ASSERT_TRUE(tdm__job_batches_peak(job) <= 4);
    ASSERT_EQ(tdm__job_batches_live(job), 0);
    tdm_job_destroy(job);
}

/* Progress callback: cancels once enough was read. */
typedef struct prog {
    int calls;
    int64_t cancel_at;
} prog;

static void on_progress(void *ud, const tdm_job *job)
{
    prog *p = ud;
    p->calls++;
    if (tdm_job_stat(job, TDM_STAT_RECORDS_IN) >= p->cancel_at)
        tdm_job_cancel((tdm_job *)job);
}

/* An endless source over 2 partitions (each in order) at parallelism 2:
 * cancel ends the input, the maximum watermark fires every window, and
 * the counts add up to exactly the records read. */
TDM_TEST(cancel_stops_an_endless_job_and_flushes)
{
    kit_add_data((kit_data){"forever", 2, NULL, 0, -1, 10, 1});
    tdm_job *job = stream_job("forever", "2");
    KIT_JOB_SET(job, "status.interval", "1ms");
    prog p = {0, 20000};
    ASSERT_OK(tdm_job_set_progress(job, on_progress, &p));
    kit_run_ok(job);
    int64_t in = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    ASSERT_TRUE(in >= 20000);
    ASSERT_TRUE(p.calls >= 1);
    ASSERT_EQ(sum_n("out"), in);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_OUT),
              (int64_t)kit_sink_get("out")->n);
    ASSERT_TRUE(tdm_job_stat(job, TDM_STAT_ELAPSED_MS) >= 0);
    /* Cancel on an idle job is harmless, and a new run starts fresh. */
    tdm_job_cancel(job);
    tdm_job_destroy(job);
}

/* ---- Real files through the file connector ---- */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Two JSON-lines files (two partitions), one malformed line:
 *   a@1000 (v1), b@2000 (v2), a@12000 (v3) in one file; the other holds
 *   b@3000 (v4), a garbage line, b@15000 (v5).
 * Windows of 10 s: a [0,10000) 1, b [0,10000) 2 (v 2+4 = 6),
 * a [10000,20000) 1 (v3), b [10000,20000) 1 (v5); the garbage line goes
 * to the dead letter sink with its file:line. */
static void check_files(const char *parallelism)
{
    char dir[] = "/tmp/tdm_rt_XXXXXX";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char p1[128], p2[128], glob[128];
    snprintf(p1, sizeof p1, "%s/a.jsonl", dir);
    snprintf(p2, sizeof p2, "%s/b.jsonl", dir);
    snprintf(glob, sizeof glob, "%s/*.jsonl", dir);
    write_file(p1, "{\"k\":\"a\",\"ts\":1000,\"v\":1}\n"
                   "{\"k\":\"b\",\"ts\":2000,\"v\":2}\n"
                   "{\"k\":\"a\",\"ts\":12000,\"v\":3}\n");
    write_file(p2, "{\"k\":\"b\",\"ts\":3000,\"v\":4}\n"
                   "this is not json\n"
                   "{\"k\":\"b\",\"ts\":15000,\"v\":5}");
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", parallelism);
    KIT_JOB_SET(job, "dead_letter", "dead");
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "files");
    KIT_SET(s, "path", glob);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "files");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n, sum(v) as s");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_node(job, TDM_NODE_SINK, "dead");
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=1 s=1 [0,10000) on_time#0 +",
               "k=b n=2 s=6 [0,10000) on_time#0 +",
               "k=a n=1 s=3 [10000,20000) on_time#0 +",
               "k=b n=1 s=5 [10000,20000) on_time#0 +");
    kit_sink *d = kit_sink_get("dead");
    ASSERT_EQ(d->n, 1);
    char loc[160];
    snprintf(loc, sizeof loc, "%s:2 | ", p2);
    ASSERT_TRUE(strncmp(d->lines[0], loc, strlen(loc)) == 0);
    ASSERT_TRUE(strstr(d->lines[0], "| this is not json") != NULL);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_BAD_RECORDS), 1);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 5);
    tdm_job_destroy(job);
    unlink(p1);
    unlink(p2);
    rmdir(dir);
}

TDM_TEST(json_files_at_parallelism_1_2_4)
{
    check_files("1");
    check_files("2");
    check_files("4");
}

/* A missing file is an I/O error naming the path. */
TDM_TEST(missing_file_is_an_io_error)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "files");
    KIT_SET(s, "path", "/nonexistent/dir/clicks.jsonl");
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "files");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    char msg[512];
    ASSERT_ERR(tdm_job_run(job, msg, sizeof msg), TDM_ERR_IO);
    ASSERT_TRUE(strstr(msg, "source \"files\": ") == msg);
    ASSERT_TRUE(strstr(msg, "/nonexistent/dir/clicks.jsonl") != NULL);
    tdm_job_destroy(job);
}

/* The built-in generator: 10 000 clicks at 1000/s over 4 partitions,
 * keys u0..u9, no delay, so each 1 s window holds exactly 1000 clicks in
 * total; at parallelism 1 and 2 the per-window totals agree. */
TDM_TEST(generator_source_counts_every_record)
{
    for (int p = 1; p <= 2; p++) {
        tdm_job *job;
        ASSERT_OK(tdm_job_new(&job));
        KIT_JOB_SET(job, "parallelism", p == 1 ? "1" : "2");
        tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "gen");
        KIT_SET(s, "type", "generator");
        KIT_SET(s, "generator.records", "10000");
        KIT_SET(s, "generator.rate", "1000");
        KIT_SET(s, "generator.keys", "10");
        tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
        KIT_SET(w, "from", "gen");
        KIT_SET(w, "key_by", "user");
        KIT_SET(w, "window.size", "1s");
        KIT_SET(w, "aggregates", "count() as n");
        KIT_SET(w, "sink", "out");
        kit_node(job, TDM_NODE_SINK, "out");
        kit_run_ok(job);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 10000);
        ASSERT_EQ(sum_n("out"), 10000);
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
        tdm_job_destroy(job);
    }
}

/* ---- Processing time ---- */

static _Atomic int64_t proc_now;

static tdm_time_ms proc_clock(void *ud)
{
    (void)ud;
    return atomic_load(&proc_now);
}

/* Processing-time source and windows of 1 s with the clock held at 500:
 * every row read so far belongs to [0,1000).  Moving the clock to 1500
 * fires that window from the subtask's timer check (no watermark is
 * involved); rows read later fall into [1000,2000), which never fires,
 * since processing-time timers do not fire at end of input.  So the
 * output is exactly one [0,1000) pane per key, counting at most what was
 * read (how many rows the window subtask took before the clock moved
 * depends on timing). */
TDM_TEST(processing_time_windows_fire_on_the_clock)
{
    kit_add_data((kit_data){"ptime", 1, NULL, 0, -1, 3, 1});
    atomic_store(&proc_now, 500);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, proc_clock, NULL);
    /* Small batches and queues: once 3000 rows were read, all but at most
     * (1 + 2) x 16 of them were pushed into the window. */
    KIT_JOB_SET(job, "batch.size", "16");
    KIT_JOB_SET(job, "queue.capacity", "1");
    tdm_node *s = kit_source_node(job, "src", "ptime");
    KIT_SET(s, "time", "processing");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "1s");
    KIT_SET(w, "window.time", "processing");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_bg bg;
    kit_bg_start(&bg, job);
    double t0 = kit_secs();
    while (tdm_job_stat(job, TDM_STAT_RECORDS_IN) < 3000 &&
           kit_secs() - t0 < 20)
        sched_yield();
    ASSERT_EQ(kit_sink_get("out")->n, 0);
    atomic_store(&proc_now, 1500);
    kit_sink *k = kit_sink_get("out");
    t0 = kit_secs();
    for (;;) {
        pthread_mutex_lock(&k->mu);
        size_t n = k->n;
        pthread_mutex_unlock(&k->mu);
        if (n >= 3 || kit_secs() - t0 > 20)
            break;
        sched_yield();
    }
    tdm_job_cancel(job);
    ASSERT_OK(kit_bg_join(&bg));
    ASSERT_EQ(k->n, 3);
    for (size_t i = 0; i < k->n; i++)
        ASSERT_TRUE(strstr(k->lines[i], " [0,1000) on_time#0 +") != NULL);
    int64_t in = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    ASSERT_TRUE(sum_n("out") >= 3);
    ASSERT_TRUE(sum_n("out") <= in);
    tdm_job_destroy(job);
}

/* Partitions named by a field: one file, rows of devices x and y.  With
 * watermarks after every record (bound 0) each device is a partition with
 * its own watermark and the reader takes the minimum:
 *   x@1000, y@2000, x@12000 (x: 11999, y: 1999 -> min 1999), y@3000 is on
 *   time: [0,10000) holds 1000, 2000, 3000.
 * Read as one partition (no partition.field), the watermark after x@12000
 * is 11999 and y@3000 is late (dropped).  Subtask 0 reads every
 * partition named by a field, so parallelism 2 gives the same. */
static void check_partition_field(const char *parallelism, bool by_field)
{
    char dir[] = "/tmp/tdm_rt_XXXXXX";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/dev.jsonl", dir);
    write_file(path, "{\"k\":\"x\",\"ts\":1000,\"v\":1}\n"
                     "{\"k\":\"y\",\"ts\":2000,\"v\":1}\n"
                     "{\"k\":\"x\",\"ts\":12000,\"v\":1}\n"
                     "{\"k\":\"y\",\"ts\":3000,\"v\":1}\n");
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", parallelism);
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "dev");
    KIT_SET(s, "path", path);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    KIT_SET(s, "watermark.emit", "on_event");
    if (by_field)
        KIT_SET(s, "partition.field", "k");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "dev");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    kit_run_ok(job);
    if (by_field) {
        KIT_EXPECT("out", "n=3 [0,10000) on_time#0 +",
                   "n=1 [10000,20000) on_time#0 +");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 0);
    } else {
        KIT_EXPECT("out", "n=2 [0,10000) on_time#0 +",
                   "n=1 [10000,20000) on_time#0 +");
        ASSERT_EQ(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), 1);
    }
    tdm_job_destroy(job);
    unlink(path);
    rmdir(dir);
}

TDM_TEST(partitions_named_by_a_field_have_their_own_watermarks)
{
    check_partition_field("1", true);
    check_partition_field("2", true);
    check_partition_field("1", false);
    check_partition_field("2", false);
}
