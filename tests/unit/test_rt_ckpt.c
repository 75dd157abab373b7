/* SPDX-License-Identifier: MIT */
/* test_rt_ckpt.c - checkpoints in the runtime (docs/checkpoints.md, "In
 * the runtime"): the queue's capacity accounting while a channel is
 * blocked by a barrier, checkpoints that complete and are numbered, a
 * failed checkpoint write that is counted while the job goes on, a
 * failed run (a sink write failing, as a crash) restored from its last
 * checkpoint whose visible output equals an uninterrupted run's, for a
 * pass-through job and a window job with late records, windows with row
 * aggregates (every function, strings, distinct sets, sessions) killed
 * and restored, a restore at another parallelism, the refusal of a
 * non-replayable source (stdin, a file source on "-") and of a
 * checkpoint of another job shape.
 *
 * The golden output is the output of the same job without checkpoints
 * (one file written as it comes); the checkpointed runs write part
 * files, whose concatenation in name order must equal it.  Each case is
 * its own process (the harness), so fault injection stays local.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileio.h"
#include "harness.h"
#include "runtime/rt.h"

/* ---- Helpers ---- */

static char tmp_root[64];

static void make_root(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/tdm_rt_ckpt_%ld",
             (long)getpid());
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s/out %s/gold",
             tmp_root, tmp_root, tmp_root);
    ASSERT_EQ(system(cmd), 0);
}

static void remove_root(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_root);
    ASSERT_EQ(system(cmd), 0);
}

static void jset(tdm_job *job, const char *k, const char *v)
{
    char msg[256];
    if (tdm_job_set(job, k, v, msg, sizeof msg) != TDM_OK) {
        fprintf(stderr, "job key %s: %s\n", k, msg);
        ASSERT_TRUE(0);
    }
}

static tdm_node *node(tdm_job *job, tdm_node_kind kind, const char *name)
{
    tdm_node *n;
    char msg[256];
    ASSERT_OK(tdm_job_add_node(job, kind, name, &n, msg, sizeof msg));
    return n;
}

static void nset(tdm_node *n, const char *k, const char *v)
{
    char msg[256];
    if (tdm_node_set(n, k, v, msg, sizeof msg) != TDM_OK) {
        fprintf(stderr, "key %s: %s\n", k, msg);
        ASSERT_TRUE(0);
    }
}

/* Set when the job logs that it resumes from a checkpoint. */
static bool resumed;

static void quiet_log(void *ud, const char *line)
{
    (void)ud;
    if (strstr(line, "checkpoint: resuming from") != NULL)
        resumed = true;
}

/* A generator read by a tumbling count per user (with late records
 * and a late output) or passed through to a sink; @p dir is where the
 * sinks write, @p ck the checkpoint directory (NULL: none). */
static tdm_job *join_job(const char *dir, const char *ck,
                         const char *parallelism, const char *records);

/* The window gen_job builds: 0 tumbling count(); 1 clicks in unkeyed
 * session windows with every string aggregate (count_distinct, first,
 * last) and min/max of timestamps; 2 sensor readings in tumbling windows with every
 * numeric aggregate over doubles (the row aggregate, rowagg.c). */
static int win_variant;

static tdm_job *gen_job(bool window, const char *dir, const char *ck,
                        const char *parallelism, const char *records)
{
    tdm_job *job;
    char path[512];
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_OK(tdm_job_set_log(job, quiet_log, NULL));
    jset(job, "name", "ck");
    jset(job, "parallelism", parallelism);
    if (ck) {
        jset(job, "checkpoint.dir", ck);
        jset(job, "checkpoint.interval", "10ms");
    }
    tdm_node *s = node(job, TDM_NODE_SOURCE, "in");
    nset(s, "type", "generator");
    nset(s, "generator.records", records);
    nset(s, "generator.rate", "1000000000");
    nset(s, "generator.keys", "40");
    nset(s, "generator.partitions", "4");
    if (window && win_variant == 2)
        nset(s, "generator.kind", "sensors");
    if (window) {
        nset(s, "generator.max_delay", "2s");
        nset(s, "generator.late_fraction", "0.01");
        nset(s, "generator.late_delay", "30s");
        nset(s, "watermark.max_out_of_orderness", "1s");
        /* On-event watermarks: which records are late does not depend
         * on when periodic ticks happen, so the golden run repeats. */
        nset(s, "watermark.emit", "on_event");
        tdm_node *w = node(job, TDM_NODE_WINDOW, "w");
        nset(w, "from", "in");
        if (win_variant != 1)
            nset(w, "key_by", win_variant == 2 ? "sensor" : "user");
        if (win_variant == 1) {
            /* Unkeyed: a user's clicks all have the same page, so only
             * across users do distinct sets and first/last vary. */
            nset(w, "window.type", "session");
            nset(w, "window.gap", "30ms");
            nset(w, "aggregates",
                 "count() as n, count_distinct(user) as users, "
                 "first(user) as fu, last(user) as lu, min(ts) as lo, "
                 "max(ts) as hi");
        } else if (win_variant == 2) {
            nset(w, "window.size", "10s");
            nset(w, "aggregates",
                 "count() as n, sum(value) as s, avg(value) as a, "
                 "min(value) as lo, max(value) as hi, "
                 "count_distinct(value) as d, first(value) as f, "
                 "last(value) as l");
        } else {
            nset(w, "window.size", "10s");
            nset(w, "aggregates", "count() as n");
        }
        nset(w, "sink", "out");
        nset(w, "late_output", "late");
        tdm_node *l = node(job, TDM_NODE_SINK, "late");
        nset(l, "type", "file");
        snprintf(path, sizeof path, "%s/late.jsonl", dir);
        nset(l, "path", path);
    } else {
        nset(s, "sink", "out");
    }
    tdm_node *o = node(job, TDM_NODE_SINK, "out");
    nset(o, "type", "file");
    snprintf(path, sizeof path, "%s/out.jsonl", dir);
    nset(o, "path", path);
    return job;
}

/* Two generators joined by user, pairs within 5 ms: the operator has two
 * channels per subtask, so its barriers align. */
static tdm_job *join_job(const char *dir, const char *ck,
                         const char *parallelism, const char *records)
{
    tdm_job *job;
    char path[512];
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_OK(tdm_job_set_log(job, quiet_log, NULL));
    jset(job, "name", "ckj");
    jset(job, "parallelism", parallelism);
    if (ck) {
        jset(job, "checkpoint.dir", ck);
        jset(job, "checkpoint.interval", "10ms");
    }
    const char *names[2] = { "a", "b" };
    for (int i = 0; i < 2; i++) {
        tdm_node *s = node(job, TDM_NODE_SOURCE, names[i]);
        nset(s, "type", "generator");
        nset(s, "generator.records", records);
        nset(s, "generator.rate", "1000000000");
        nset(s, "generator.keys", "50000");
        nset(s, "generator.partitions", "2");
        nset(s, "generator.max_delay", "1s");
        nset(s, "generator.seed", i ? "7" : "1");
        nset(s, "watermark.max_out_of_orderness", "1s");
        nset(s, "watermark.emit", "on_event");
    }
    tdm_node *j = node(job, TDM_NODE_JOIN, "j");
    nset(j, "left", "a");
    nset(j, "right", "b");
    nset(j, "left_key", "user");
    nset(j, "right_key", "user");
    nset(j, "lower", "-5ms");
    nset(j, "upper", "5ms");
    nset(j, "sink", "out");
    tdm_node *o = node(job, TDM_NODE_SINK, "out");
    nset(o, "type", "file");
    snprintf(path, sizeof path, "%s/out.jsonl", dir);
    nset(o, "path", path);
    return job;
}

/* Reads a whole file (NULL if missing); *len its size. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    ASSERT_TRUE(p != NULL);
    ASSERT_EQ(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    p[n] = 0;
    *len = (size_t)n;
    return p;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The visible parts "<base>.part-<w>-<id>" of writer @p w in @p dir, in
 * name order, concatenated. */
static char *parts(const char *dir, const char *base, int w, size_t *len)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s.part-%d-", base, w);
    DIR *d = opendir(dir);
    ASSERT_TRUE(d != NULL);
    char *names[4096];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 &&
            strlen(de->d_name) == strlen(prefix) + 10) {
            ASSERT_TRUE(n < 4096);
            names[n++] = strdup(de->d_name);
        }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    size_t cap = 1 << 16, used = 0;
    char *out = malloc(cap);
    ASSERT_TRUE(out != NULL);
    for (int i = 0; i < n; i++) {
        char path[600];
        size_t l = 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char *p = slurp(path, &l);
        ASSERT_TRUE(p != NULL);
        while (used + l + 1 > cap) {
            cap *= 2;
            out = realloc(out, cap);
            ASSERT_TRUE(out != NULL);
        }
        memcpy(out + used, p, l);
        used += l;
        free(p);
        free(names[i]);
    }
    out[used] = 0;
    *len = used;
    return out;
}

/* The lines of @p p sorted (for outputs of several writers). */
static char *sorted_lines(const char *p, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += p[i] == '\n';
    char **lines = calloc(n + 1, sizeof *lines);
    char *copy = malloc(len + 1);
    ASSERT_TRUE(lines && copy);
    memcpy(copy, p, len);
    copy[len] = 0;
    size_t k = 0;
    for (char *s = copy, *e; k < n && (e = strchr(s, '\n')); s = e + 1) {
        *e = 0;
        lines[k++] = s;
    }
    qsort(lines, k, sizeof *lines, cmp_str);
    char *out = malloc(len + 1);
    ASSERT_TRUE(out != NULL);
    size_t used = 0;
    for (size_t i = 0; i < k; i++) {
        size_t l = strlen(lines[i]);
        memcpy(out + used, lines[i], l);
        used += l;
        out[used++] = '\n';
    }
    out[used] = 0;
    free(lines);
    free(copy);
    return out;
}

static void run_ok(tdm_job *job)
{
    char msg[512] = "";
    tdm_err err = tdm_job_run(job, msg, sizeof msg);
    if (err != TDM_OK)
        fprintf(stderr, "run failed: %s\n", msg);
    ASSERT_OK(err);
}

/* The golden output of a job: run without checkpoints. */
static char *golden(bool window, const char *file, const char *parallelism,
                    const char *records, size_t *len)
{
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/gold", tmp_root);
    tdm_job *job = gen_job(window, dir, NULL, parallelism, records);
    run_ok(job);
    tdm_job_destroy(job);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *p = slurp(path, len);
    ASSERT_TRUE(p != NULL);
    return p;
}

/* ---- The queue while a channel is blocked ---- */

TDM_TEST(held_items_keep_their_channel_full)
{
    tdm__queue q;
    atomic_int abort_flag;
    atomic_init(&abort_flag, 0);
    ASSERT_OK(tdm__queue_init(&q, 2, 2, &abort_flag, NULL));
    tdm__item a = { .kind = TDM__ITEM_BARRIER, .ch = 0, .t = 1 };
    tdm__item b = { .kind = TDM__ITEM_WATERMARK, .ch = 0, .t = 5 };
    ASSERT_TRUE(tdm__queue_push(&q, &a));
    ASSERT_TRUE(tdm__queue_push(&q, &b));
    /* Channel 0 is full: its producer would wait. */
    ASSERT_EQ(q.ch_count[0], 2);
    tdm__item got[4];
    ASSERT_EQ(tdm__queue_pop(&q, got, 4, 0), (size_t)2);
    ASSERT_EQ(q.ch_count[0], 0);
    /* The consumer holds the item after the barrier: one slot stays
     * taken, so the producer can add one more item and then waits. */
    tdm__queue_hold(&q, 0, 1);
    ASSERT_EQ(q.ch_count[0], 1);
    tdm__item c = { .kind = TDM__ITEM_WATERMARK, .ch = 0, .t = 6 };
    ASSERT_TRUE(tdm__queue_push(&q, &c));
    ASSERT_EQ(q.ch_count[0], 2); /* full again: push would block */
    /* Channel 1 is not affected. */
    tdm__item d = { .kind = TDM__ITEM_WATERMARK, .ch = 1, .t = 7 };
    ASSERT_TRUE(tdm__queue_push(&q, &d));
    ASSERT_EQ(q.ch_count[1], 1);
    /* Aligned: the held item is handled and its capacity returns. */
    tdm__queue_release(&q, 0, 1);
    ASSERT_EQ(q.ch_count[0], 1);
    tdm__queue_fini(&q);
}

/* ---- Checkpoints in a run ---- */

TDM_TEST(checkpoints_complete_numbered_and_output_equals_golden)
{
    make_root();
    size_t gl = 0, pl = 0;
    char *gold = golden(false, "out.jsonl", "1", "300000", &gl);
    char dir[300], ck[300];
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    snprintf(ck, sizeof ck, "%s/ck", tmp_root);
    tdm_job *job = gen_job(false, dir, ck, "1", "300000");
    run_ok(job);
    int64_t n = tdm_job_stat(job, TDM_STAT_CHECKPOINTS);
    /* At least the final checkpoint; ids count up from 1 with no
     * failure, so the last id is the number completed. */
    ASSERT_TRUE(n >= 1);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_CHECKPOINTS_FAILED), 0);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_CHECKPOINT_ID), n);
    ASSERT_TRUE(tdm_job_stat(job, TDM_STAT_CHECKPOINT_BYTES) > 0);
    char path[400];
    struct stat sb;
    snprintf(path, sizeof path, "%s/chk-%010lld/MANIFEST", ck, (long long)n);
    ASSERT_EQ(stat(path, &sb), 0);
    tdm_job_destroy(job);
    char *got = parts(dir, "out.jsonl", 0, &pl);
    ASSERT_EQ(pl, gl);
    ASSERT_TRUE(memcmp(got, gold, gl) == 0);
    /* The plain output file is not written with checkpoints. */
    snprintf(path, sizeof path, "%s/out.jsonl", dir);
    ASSERT_TRUE(stat(path, &sb) != 0);
    free(got);
    free(gold);
    remove_root();
}

TDM_TEST(failed_checkpoint_is_counted_and_the_next_succeeds)
{
    make_root();
    size_t gl = 0, pl = 0;
    char *gold = golden(false, "out.jsonl", "1", "300000", &gl);
    char dir[300], ck[300];
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    snprintf(ck, sizeof ck, "%s/ck", tmp_root);
    ASSERT_EQ(mkdir(ck, 0755), 0);
    tdm_job *job = gen_job(false, dir, ck, "1", "300000");
    /* The first mkdir of the run is checkpoint 1's temporary directory
     * (the directory exists; sinks make none): disk full. */
    tdm__fio_fault(TDM__FIO_MKDIR, 1, ENOSPC, 0);
    run_ok(job);
    ASSERT_EQ(tdm__fio_fault_fired(), 1);
    tdm__fio_fault_clear();
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_CHECKPOINTS_FAILED), 1);
    int64_t n = tdm_job_stat(job, TDM_STAT_CHECKPOINTS);
    ASSERT_TRUE(n >= 1);
    /* Ids go on after the failed one. */
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_CHECKPOINT_ID), n + 1);
    tdm_job_destroy(job);
    char *got = parts(dir, "out.jsonl", 0, &pl);
    ASSERT_EQ(pl, gl);
    ASSERT_TRUE(memcmp(got, gold, gl) == 0);
    free(got);
    free(gold);
    remove_root();
}

/* Whether @p ck holds a complete checkpoint (chk-<id>, not a temporary
 * chk-<id>.tmp-<pid>). */
static bool has_checkpoint(const char *ck)
{
    DIR *d = opendir(ck);
    bool found = false;
    if (!d)
        return false;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;)
        found = strncmp(e->d_name, "chk-", 4) == 0 &&
                strchr(e->d_name, '.') == NULL;
    closedir(d);
    return found;
}

/* Runs the checkpointed job in a child process that is killed (SIGKILL,
 * TDM__FIO_KILL) just before its @p kill_at-th rename - a sink's
 * pre-commit or commit, or a checkpoint's - as kill -9 would leave it,
 * then runs it again here, restoring from its last checkpoint, at
 * @p p2.  Checkpoints may overlap (the next one's pre-commits can come
 * before the previous one's directory is renamed), so the kill_at-th
 * rename may precede the first complete checkpoint; then the child is
 * run again from nothing with a later kill, until one exists when it
 * dies (the flake this pins: a CI run killed every time before the
 * first checkpoint at parallelism 2 and restored from nothing). */
static void crash_and_restore(bool window, long kill_at, const char *p1,
                              const char *p2)
{
    char dir[300], ck[300];
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    snprintf(ck, sizeof ck, "%s/ck", tmp_root);
    for (long k = kill_at;; k++) {
        fflush(NULL);
        pid_t pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
            tdm_job *job = gen_job(window, dir, ck, p1, "1000000");
            tdm__fio_fault(TDM__FIO_RENAME, k, TDM__FIO_KILL, 0);
            char msg[512] = "";
            tdm_job_run(job, msg, sizeof msg);
            _exit(3); /* not killed: the test fails below */
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        if (has_checkpoint(ck))
            break;
        ASSERT_TRUE(k < kill_at + 50);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "rm -rf %s %s && mkdir -p %s", dir, ck,
                 dir);
        ASSERT_EQ(system(cmd), 0);
    }
    tdm_job *job = gen_job(window, dir, ck, p2, "1000000");
    resumed = false;
    run_ok(job);
    /* Restored, not started over.  The records read may still be all
     * of them: under load the first checkpoint can come before a
     * source has produced anything (a CI run under ASan restored
     * pass_through_restored_at_another_parallelism from such a
     * checkpoint, and an assertion of fewer records read failed). */
    ASSERT_TRUE(resumed);
    ASSERT_TRUE(tdm_job_stat(job, TDM_STAT_RECORDS_IN) <= 1000000);
    tdm_job_destroy(job);
}

TDM_TEST(pass_through_restored_after_a_failure_gives_golden_output)
{
    make_root();
    size_t gl = 0, pl = 0;
    char *gold = golden(false, "out.jsonl", "1", "1000000", &gl);
    crash_and_restore(false, 4, "1", "1");
    char dir[300];
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    char *got = parts(dir, "out.jsonl", 0, &pl);
    ASSERT_EQ(pl, gl);
    ASSERT_TRUE(memcmp(got, gold, gl) == 0);
    free(got);
    free(gold);
    remove_root();
}

TDM_TEST(window_restored_after_a_failure_gives_golden_results_and_late)
{
    make_root();
    size_t gl = 0, ll = 0, pl = 0, ql = 0;
    char *gold = golden(true, "out.jsonl", "1", "1000000", &gl);
    char gpath[400];
    snprintf(gpath, sizeof gpath, "%s/gold/late.jsonl", tmp_root);
    char *glate = slurp(gpath, &ll);
    ASSERT_TRUE(glate != NULL && ll > 0);
    crash_and_restore(true, 4, "1", "1");
    char dir[300];
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    char *got = parts(dir, "out.jsonl", 0, &pl);
    char *late = parts(dir, "late.jsonl", 0, &ql);
    /* Exactly the uninterrupted run's results and late records, in
     * order. */
    ASSERT_EQ(pl, gl);
    ASSERT_TRUE(memcmp(got, gold, gl) == 0);
    ASSERT_EQ(ql, ll);
    ASSERT_TRUE(memcmp(late, glate, ll) == 0);
    free(got);
    free(late);
    free(gold);
    free(glate);
    remove_root();
}

/* Row aggregates (every function, strings, distinct sets, first/last by
 * arrival, session merges) restored after a kill give the uninterrupted
 * run's results. */
static void row_aggregates_restored(int variant)
{
    make_root();
    win_variant = variant;
    size_t gl = 0, pl = 0;
    char *gold = golden(true, "out.jsonl", "1", "1000000", &gl);
    ASSERT_TRUE(gl > 0);
    /* Without a late output a checkpoint renames fewer files than the
     * count() job's: the 7th rename is inside the second checkpoint. */
    crash_and_restore(true, 7, "1", "1");
    char dir[300];
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    char *got = parts(dir, "out.jsonl", 0, &pl);
    ASSERT_EQ(pl, gl);
    ASSERT_TRUE(memcmp(got, gold, gl) == 0);
    win_variant = 0;
    free(got);
    free(gold);
    remove_root();
}

TDM_TEST(session_window_with_string_aggregates_restored_after_a_kill)
{
    row_aggregates_restored(1);
}

TDM_TEST(window_with_every_numeric_aggregate_restored_after_a_kill)
{
    row_aggregates_restored(2);
}

TDM_TEST(pass_through_restored_at_another_parallelism)
{
    make_root();
    size_t gl = 0;
    char *gold = golden(false, "out.jsonl", "2", "1000000", &gl);
    char *gs = sorted_lines(gold, gl);
    crash_and_restore(false, 4, "2", "3");
    char dir[300];
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    /* Writers 0 and 1 of the first run, 0 to 2 of the second. */
    size_t total = 0;
    char *all = malloc(1);
    ASSERT_TRUE(all != NULL);
    for (int w = 0; w < 3; w++) {
        size_t l = 0;
        char *p = parts(dir, "out.jsonl", w, &l);
        all = realloc(all, total + l + 1);
        ASSERT_TRUE(all != NULL);
        memcpy(all + total, p, l);
        total += l;
        free(p);
    }
    char *as = sorted_lines(all, total);
    ASSERT_EQ(total, gl);
    ASSERT_STR_EQ(as, gs);
    free(all);
    free(as);
    free(gs);
    free(gold);
    remove_root();
}

TDM_TEST(restore_refuses_another_job_shape)
{
    make_root();
    char dir[300], ck[300];
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    snprintf(ck, sizeof ck, "%s/ck", tmp_root);
    tdm_job *job = gen_job(false, dir, ck, "1", "1000");
    run_ok(job);
    tdm_job_destroy(job);
    job = gen_job(true, dir, ck, "1", "1000");
    char msg[512] = "";
    ASSERT_ERR(tdm_job_run(job, msg, sizeof msg), TDM_ERR_STATE);
    ASSERT_TRUE(strstr(msg, "another job shape") != NULL);
    /* checkpoint.restore none starts from scratch. */
    jset(job, "checkpoint.restore", "none");
    run_ok(job);
    tdm_job_destroy(job);
    remove_root();
}

TDM_TEST(unreplayable_source_is_refused)
{
    tdm_job *job;
    char msg[512] = "";
    ASSERT_OK(tdm_job_new(&job));
    jset(job, "checkpoint.dir", "/tmp/tdm_never_made");
    tdm_node *s = node(job, TDM_NODE_SOURCE, "in");
    nset(s, "type", "stdin");
    nset(s, "schema", "k:string");
    nset(s, "time", "ingestion");
    nset(s, "sink", "out");
    tdm_node *o = node(job, TDM_NODE_SINK, "out");
    nset(o, "type", "stdout");
    ASSERT_ERR(tdm_job_validate(job, msg, sizeof msg), TDM_ERR_INVAL);
    if (!strstr(msg, "cannot be replayed"))
        fprintf(stderr, "message: %s\n", msg);
    ASSERT_TRUE(strstr(msg, "cannot be replayed") != NULL);
    tdm_job_destroy(job);
}

/* A file source reading "-" is standard input: refused when the job is
 * validated, not at its first checkpoint. */
TDM_TEST(file_source_on_standard_input_is_refused)
{
    tdm_job *job;
    char msg[512] = "";
    ASSERT_OK(tdm_job_new(&job));
    jset(job, "checkpoint.dir", "/tmp/tdm_never_made");
    tdm_node *s = node(job, TDM_NODE_SOURCE, "in");
    nset(s, "type", "file");
    nset(s, "path", "-");
    nset(s, "schema", "k:string");
    nset(s, "time", "ingestion");
    nset(s, "sink", "out");
    tdm_node *o = node(job, TDM_NODE_SINK, "out");
    nset(o, "type", "stdout");
    ASSERT_ERR(tdm_job_validate(job, msg, sizeof msg), TDM_ERR_INVAL);
    if (!strstr(msg, "cannot be replayed") || !strstr(msg, "\"in\""))
        fprintf(stderr, "message: %s\n", msg);
    ASSERT_TRUE(strstr(msg, "cannot be replayed") != NULL);
    ASSERT_TRUE(strstr(msg, "source \"in\"") != NULL);
    tdm_job_destroy(job);
}

/* Windows with row aggregates validate with checkpoints on (they used to
 * fail at their first snapshot). */
TDM_TEST(row_aggregate_windows_validate_with_checkpoints)
{
    char msg[512] = "";
    for (int v = 1; v <= 2; v++) {
        win_variant = v;
        tdm_job *job = gen_job(true, "/tmp/tdm_never_made",
                               "/tmp/tdm_never_made", "2", "10");
        tdm_err err = tdm_job_validate(job, msg, sizeof msg);
        if (err != TDM_OK)
            fprintf(stderr, "message: %s\n", msg);
        ASSERT_OK(err);
        tdm_job_destroy(job);
    }
    win_variant = 0;
}

TDM_TEST(join_restored_after_a_kill_gives_golden_pairs)
{
    make_root();
    char dir[300], ck[300], gpath[400];
    size_t gl = 0, pl = 0;
    snprintf(dir, sizeof dir, "%s/gold", tmp_root);
    tdm_job *job = join_job(dir, NULL, "1", "150000");
    run_ok(job);
    tdm_job_destroy(job);
    snprintf(gpath, sizeof gpath, "%s/out.jsonl", dir);
    char *gold = slurp(gpath, &gl);
    ASSERT_TRUE(gold != NULL && gl > 0);
    snprintf(dir, sizeof dir, "%s/out", tmp_root);
    snprintf(ck, sizeof ck, "%s/ck", tmp_root);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        job = join_job(dir, ck, "1", "150000");
        /* Killed at the 4th rename: inside the second checkpoint. */
        tdm__fio_fault(TDM__FIO_RENAME, 4, TDM__FIO_KILL, 0);
        char msg[512] = "";
        tdm_job_run(job, msg, sizeof msg);
        _exit(3);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    job = join_job(dir, ck, "1", "150000");
    run_ok(job);
    ASSERT_TRUE(tdm_job_stat(job, TDM_STAT_RECORDS_IN) < 300000);
    tdm_job_destroy(job);
    /* The two sources' items interleave as their threads ran, so pairs
     * are compared as multisets. */
    char *got = parts(dir, "out.jsonl", 0, &pl);
    char *gs = sorted_lines(gold, gl), *ps = sorted_lines(got, pl);
    ASSERT_EQ(pl, gl);
    ASSERT_STR_EQ(ps, gs);
    free(gs);
    free(ps);
    free(got);
    free(gold);
    remove_root();
}
