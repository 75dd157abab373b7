/* SPDX-License-Identifier: MIT */
/* test_rt_dynamic.c - the runtime with a version-2 source (partitions
 * that come and go, as Kafka assigns them): splits added after a poll
 * and finished on revoke, idleness of a subtask without splits, the
 * (processed, done) pairs of commits after sink flushes, stop without a
 * drain, the replay floor, results marked as updates when a previous
 * owner may have written them (connect.h, replayed) and the final
 * commit's top, and watermark alignment pausing a partition.
 * The fake connector below is driven step by step by each test; time is
 * a manual clock the tests move.
 */
#include "runtime/run_record.h"
#include "test_rt_kit.h"
#include "testhooks.h"

/* ====================================================================== */
/* A fake version-2 source                                                 */
/* ====================================================================== */

#define FK_PARTS 16
#define FK_ROWS 256
#define FK_LOG 512

typedef struct fk_part {
    char name[32];
    int sub;   /* owning subtask */
    int local; /* local index there, -1 until its poll adopts it */
    tdm_time_ms floor;
    int revoke; /* the test revoked it */
    int fence;  /* ... while running: fenced() says 1 */
    int told;   /* finished flag set */
} fk_part;

typedef struct fk_row {
    int part;
    const char *k;
    int64_t ts;
    int taken;
} fk_row;

typedef struct fk_mark {
    int sub;
    tdm_time_ms wm;
    tdm_time_ms hz[FK_PARTS];
    int n;
} fk_mark;

typedef struct fk_commit {
    int sub;
    tdm_time_ms proc, done;
    tdm_time_ms top; /* final commit's top, MIN otherwise */
    int flushes;     /* sink flushes so far */
    int sink_closed; /* the result sink was closed already */
} fk_commit;

/* Everything the fake keeps, behind one lock (tests read it too). */
static struct fk {
    pthread_mutex_t mu;
    fk_part p[FK_PARTS];
    int n_parts;
    fk_row rows[FK_ROWS];
    int n_rows, n_taken;
    int eof;
    int pauses[FK_LOG][3]; /* sub, local, paused */
    int n_pauses;
    fk_mark marks[FK_LOG];
    int n_marks;
    fk_commit commits[FK_LOG];
    int n_commits;
    int flushes, flush_fail;
    int closed;
    /* What replayed() reports (MIN: nothing). */
    tdm_time_ms replay_start, replay_last;
    atomic_int polls;
} fk = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Atomic int64_t fk_now;

static tdm_time_ms fk_clock(void *ud)
{
    (void)ud;
    return atomic_load(&fk_now);
}

static void fk_reset(void)
{
    pthread_mutex_lock(&fk.mu);
    memset(fk.p, 0, sizeof fk.p);
    fk.n_parts = fk.n_rows = fk.n_taken = fk.eof = 0;
    fk.n_pauses = fk.n_marks = fk.n_commits = 0;
    fk.flushes = fk.flush_fail = fk.closed = 0;
    fk.replay_start = fk.replay_last = TDM_TIME_MIN;
    atomic_store(&fk.polls, 0);
    pthread_mutex_unlock(&fk.mu);
    atomic_store(&fk_now, 0);
}

/* The test assigns partition @p name to subtask @p sub (its poll adopts
 * it); returns the global number. */
static int fk_assign(int sub, const char *name, tdm_time_ms floor)
{
    pthread_mutex_lock(&fk.mu);
    int g = fk.n_parts++;
    fk_part *p = &fk.p[g];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->sub = sub;
    p->local = -1;
    p->floor = floor;
    pthread_mutex_unlock(&fk.mu);
    return g;
}

static void fk_revoke(int g)
{
    pthread_mutex_lock(&fk.mu);
    fk.p[g].revoke = 1;
    pthread_mutex_unlock(&fk.mu);
}

/* Revokes  g as a running member loses a partition (fenced). */
static void fk_revoke_fenced(int g)
{
    pthread_mutex_lock(&fk.mu);
    fk.p[g].revoke = 1;
    fk.p[g].fence = 1;
    pthread_mutex_unlock(&fk.mu);
}

static void fk_push(int g, const char *k, int64_t ts)
{
    pthread_mutex_lock(&fk.mu);
    fk.rows[fk.n_rows++] = (fk_row){g, k, ts, 0};
    pthread_mutex_unlock(&fk.mu);
}

static void fk_set_eof(void)
{
    pthread_mutex_lock(&fk.mu);
    fk.eof = 1;
    pthread_mutex_unlock(&fk.mu);
}

static int fk_get(int *field)
{
    pthread_mutex_lock(&fk.mu);
    int v = *field;
    pthread_mutex_unlock(&fk.mu);
    return v;
}

/* One subtask's share (handed to the runtime as its opaque source; the
 * kit owns the name struct tdm__source). */
typedef struct fk_src {
    int index;
    int n_local;
    int g_of[FK_PARTS]; /* local -> global */
} fk_src;

#define FK(src) ((fk_src *)(void *)(src))

static tdm_err fk_open(const tdm__source_conf *conf, int index, int count,
                       tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                       int *n_partitions, char *errbuf, size_t errbuf_size)
{
    (void)conf;
    (void)count;
    (void)dead;
    (void)dead_ud;
    (void)errbuf;
    (void)errbuf_size;
    fk_src *s = calloc(1, sizeof *s);
    s->index = index;
    *out = (tdm__source *)(void *)s;
    *n_partitions = 0;
    return TDM_OK;
}

/* Adopts this subtask's new partitions, reports revoked ones (adopted
 * before this poll), hands out their pending rows in push order, and
 * ends (eof) once told to and every row is out.  With nothing to give
 * it waits a millisecond, as a connector would wait for the broker. */
static tdm_err fk_poll(tdm__source *src, tdm__batch *b, size_t max,
                       uint8_t *finished, int *eof)
{
    fk_src *s = FK(src);
    atomic_fetch_add(&fk.polls, 1);
    pthread_mutex_lock(&fk.mu);
    for (int g = 0; g < fk.n_parts; g++) {
        fk_part *p = &fk.p[g];
        if (p->sub != s->index || p->local < 0 || p->told || !p->revoke)
            continue;
        p->told = 1;
        finished[p->local] = 1;
    }
    for (int g = 0; g < fk.n_parts; g++) {
        fk_part *p = &fk.p[g];
        if (p->sub == s->index && p->local < 0) {
            p->local = s->n_local;
            s->g_of[s->n_local++] = g;
        }
    }
    bool left = false;
    for (int i = 0; i < fk.n_rows; i++) {
        fk_row *r = &fk.rows[i];
        const fk_part *p = &fk.p[r->part];
        if (r->taken || p->sub != s->index)
            continue;
        if (b->n >= max || p->local < 0 || p->told) {
            left = true;
            continue;
        }
        r->taken = 1;
        fk.n_taken++;
        kit_fill(b, p->local, r->k, r->ts, 1);
    }
    if (fk.eof && !left) {
        for (int l = 0; l < s->n_local; l++) {
            fk_part *p = &fk.p[s->g_of[l]];
            if (!p->told) {
                p->told = 1;
                finished[l] = 1;
            }
        }
        *eof = 1;
    }
    pthread_mutex_unlock(&fk.mu);
    if (b->n == 0 && !*eof) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    return TDM_OK;
}

static void fk_close(tdm__source *s)
{
    free(FK(s));
    pthread_mutex_lock(&fk.mu);
    fk.closed++;
    pthread_mutex_unlock(&fk.mu);
}

static int fk_n_partitions(tdm__source *s)
{
    pthread_mutex_lock(&fk.mu);
    int n = FK(s)->n_local;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

static const char *fk_name(tdm__source *s, int p)
{
    return fk.p[FK(s)->g_of[p]].name;
}

static tdm_time_ms fk_floor(tdm__source *s, int p)
{
    return fk.p[FK(s)->g_of[p]].floor;
}

static void fk_pause(tdm__source *s, int p, int paused)
{
    pthread_mutex_lock(&fk.mu);
    if (fk.n_pauses < FK_LOG) {
        fk.pauses[fk.n_pauses][0] = FK(s)->index;
        fk.pauses[fk.n_pauses][1] = p;
        fk.pauses[fk.n_pauses][2] = paused;
        fk.n_pauses++;
    }
    pthread_mutex_unlock(&fk.mu);
}

static void fk_mark_fn(tdm__source *s, tdm_time_ms wm,
                       const tdm_time_ms *horizon, int n)
{
    pthread_mutex_lock(&fk.mu);
    if (fk.n_marks < FK_LOG) {
        fk_mark *m = &fk.marks[fk.n_marks++];
        m->sub = FK(s)->index;
        m->wm = wm;
        m->n = n;
        for (int i = 0; i < n && i < FK_PARTS; i++)
            m->hz[i] = horizon[i];
    }
    pthread_mutex_unlock(&fk.mu);
}

static tdm_err fk_commit_fn(tdm__source *s, tdm_time_ms processed,
                            tdm_time_ms done, tdm_time_ms top)
{
    int closed = kit_sink_get("out")->closed;
    pthread_mutex_lock(&fk.mu);
    if (fk.n_commits < FK_LOG)
        fk.commits[fk.n_commits++] =
            (fk_commit){FK(s)->index, processed, done, top, fk.flushes, closed};
    pthread_mutex_unlock(&fk.mu);
    return TDM_OK;
}

static void fk_replayed(tdm__source *s, tdm_time_ms *start_le,
                        tdm_time_ms *last_le)
{
    (void)s;
    pthread_mutex_lock(&fk.mu);
    *start_le = fk.replay_start;
    *last_le = fk.replay_last;
    pthread_mutex_unlock(&fk.mu);
}

static int fk_fenced(tdm__source *s, int p)
{
    pthread_mutex_lock(&fk.mu);
    int f = fk.p[FK(s)->g_of[p]].fence;
    pthread_mutex_unlock(&fk.mu);
    return f;
}

static const tdm__source_vtab fk_source = {
    .version = 2,
    .open = fk_open,
    .poll = fk_poll,
    .close = fk_close,
    .n_partitions = fk_n_partitions,
    .partition_name = fk_name,
    .partition_floor = fk_floor,
    .pause = fk_pause,
    .mark = fk_mark_fn,
    .commit = fk_commit_fn,
    .replayed = fk_replayed,
    .fenced = fk_fenced,
};

/* The kit's collecting sink, version 2: flush is counted (and fails on
 * request). */
static tdm_err fk_flush(tdm__sinkobj *o, char *errbuf, size_t n)
{
    (void)o;
    pthread_mutex_lock(&fk.mu);
    fk.flushes++;
    int fail = fk.flush_fail;
    pthread_mutex_unlock(&fk.mu);
    return fail ? tdm__errf(errbuf, n, TDM_ERR_IO, "flush refused") : TDM_OK;
}

static const tdm__sink_vtab fk_sink = {
    .version = 2,
    .open = kit_sink_open,
    .write_result = kit_write_result,
    .write_row = kit_write_row,
    .write_dead = kit_write_dead,
    .close = kit_sink_close,
    .flush = fk_flush,
};

/* ====================================================================== */
/* Jobs and waiting                                                        */
/* ====================================================================== */

/* A count per key over 10 ms tumbling windows of the fake source,
 * bounded out-of-orderness 0 (watermark = highest timestamp - 1),
 * emitted on every record so that no clock tick is needed. */
static tdm_job *fk_job(const char *parallelism)
{
    fk_reset();
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, fk_clock, NULL);
    KIT_JOB_SET(job, "parallelism", parallelism);
    KIT_JOB_SET(job, "commit.interval", "10ms");
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "src");
    tdm__node_set_source_vtab(s, &fk_source);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    KIT_SET(s, "watermark.emit", "on_event");
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10ms");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    tdm_node *o = kit_node(job, TDM_NODE_SINK, "out");
    tdm__node_set_sink_vtab(o, &fk_sink);
    return job;
}

/* Spins (yielding) until @p cond holds, at most 5 s. */
#define WAIT_FOR(cond)                                                         \
    do {                                                                       \
        double t0_ = kit_secs();                                               \
        while (!(cond)) {                                                      \
            if (kit_secs() - t0_ > 5.0)                                        \
                tdm_test_fail(__FILE__, __LINE__, "timed out: %s", #cond);     \
            sched_yield();                                                     \
        }                                                                      \
    } while (0)

/* Waits until the sources polled @p n more times (so that everything
 * given to them before was processed by their threads). */
static void wait_polls(int n)
{
    int p0 = atomic_load(&fk.polls);
    WAIT_FOR(atomic_load(&fk.polls) >= p0 + n);
}

/* Moves the manual clock by @p ms and lets the source loop go round. */
static void tick(int64_t ms)
{
    atomic_fetch_add(&fk_now, ms);
    wait_polls(2);
}

static size_t sink_lines(void)
{
    kit_sink *k = kit_sink_get("out");
    pthread_mutex_lock(&k->mu);
    size_t n = k->n;
    pthread_mutex_unlock(&k->mu);
    return n;
}

/* The last commit matching (proc, done), or -1. */
static int find_commit(tdm_time_ms proc, tdm_time_ms done)
{
    int at = -1;
    pthread_mutex_lock(&fk.mu);
    for (int i = 0; i < fk.n_commits; i++)
        if (fk.commits[i].proc == proc && fk.commits[i].done == done)
            at = i;
    pthread_mutex_unlock(&fk.mu);
    return at;
}

static int find_mark(tdm_time_ms wm)
{
    int at = -1;
    pthread_mutex_lock(&fk.mu);
    for (int i = 0; i < fk.n_marks; i++)
        if (fk.marks[i].wm == wm)
            at = i;
    pthread_mutex_unlock(&fk.mu);
    return at;
}

/* ====================================================================== */
/* Tests                                                                   */
/* ====================================================================== */

/* Splits come from the connector: two partitions assigned after the job
 * started, rows only in t[0] (a:1, a:5).  The silent t[1] is a split at
 * TDM_TIME_MIN, so the subtask's watermark stays at MIN: no mark (marks
 * follow watermark changes) and no result.  Revoking t[1] finishes its
 * split; a:25 then raises the watermark to 24 (on-event, bound 0), which
 * fires [0,10) with 2; the end drains [20,30) with 1. */
TDM_TEST(splits_follow_assignment_and_revocation)
{
    tdm_job *job = fk_job("1");
    kit_bg bg;
    kit_bg_start(&bg, job);
    wait_polls(2);
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    int p1 = fk_assign(0, "t[1]", TDM_TIME_MIN);
    (void)p0;
    fk_push(p0, "a", 1);
    fk_push(p0, "a", 5);
    WAIT_FOR(fk_get(&fk.n_taken) == 2);
    wait_polls(3);
    ASSERT_EQ(fk_get(&fk.n_marks), 0);
    ASSERT_EQ(sink_lines(), 0);
    fk_revoke(p1);
    wait_polls(3);
    fk_push(p0, "a", 25);
    WAIT_FOR(find_mark(24) >= 0);
    /* Horizons per split: t[0] read 25, whose window [20,30) is final at
     * watermark 29; t[1] read nothing (MIN). */
    int m = find_mark(24);
    ASSERT_EQ(fk.marks[m].n, 2);
    ASSERT_EQ(fk.marks[m].hz[0], 29);
    ASSERT_EQ(fk.marks[m].hz[1], TDM_TIME_MIN);
    fk_set_eof();
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("out", "k=a n=2 [0,10) on_time#0 +",
               "k=a n=1 [20,30) on_time#0 +");
    tdm_job_destroy(job);
}

/* Parallelism 2, one partition, owned by subtask 0: subtask 1 has no
 * split and must say it is idle, else its channel holds both window
 * subtasks at MIN - but only once subtask 0 has had its split for the
 * grace of 1 s (a sibling assigned a moment later must not find its
 * records late).  With a:1, b:2, a:15 (watermark 14) nothing fires
 * before the clock passes the grace; then [0,10) fires while the job
 * still runs (a 1, b 1); the end drains [10,20) (a 1). */
TDM_TEST(subtask_without_splits_is_idle)
{
    tdm_job *job = fk_job("2");
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p0, "a", 1);
    fk_push(p0, "b", 2);
    fk_push(p0, "a", 15);
    kit_bg bg;
    kit_bg_start(&bg, job);
    /* Subtask 0 adopted its split (and sent watermark 14) at time 0. */
    WAIT_FOR(find_mark(14) >= 0);
    tick(900);
    tick(50);
    ASSERT_EQ(sink_lines(), 0);
    tick(100);
    WAIT_FOR(sink_lines() == 2);
    fk_set_eof();
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("out", "k=a n=1 [0,10) on_time#0 +",
               "k=b n=1 [0,10) on_time#0 +", "k=a n=1 [10,20) on_time#0 +");
    tdm_job_destroy(job);
}

/* Commits: after a:1, a:3, a:12 the watermark is 11; the mark tagged 11
 * carries horizon 19 (window [10,20)).  The window subtask takes the
 * watermark (processed 11) and fires [0,10) (done 11), so a round
 * publishes (11, 11), each round's pair only after a sink flush.  While
 * flushes fail, no commit is made.  The final commit comes after the
 * sinks closed: everything processed (MAX) and, after the drain, done
 * MAX; the connector is closed after it. */
TDM_TEST(commits_follow_flushed_results)
{
    tdm_job *job = fk_job("1");
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p0, "a", 1);
    fk_push(p0, "a", 3);
    fk_push(p0, "a", 12);
    kit_bg bg;
    kit_bg_start(&bg, job);
    WAIT_FOR(find_mark(11) >= 0);
    ASSERT_EQ(fk.marks[find_mark(11)].hz[0], 19);
    WAIT_FOR(find_commit(11, 11) >= 0);
    pthread_mutex_lock(&fk.mu);
    for (int i = 0; i < fk.n_commits; i++) {
        /* Never ahead of what was read, and one flush per round. */
        ASSERT_TRUE(fk.commits[i].proc <= 11);
        ASSERT_TRUE(fk.commits[i].done <= fk.commits[i].proc);
        ASSERT_TRUE(fk.commits[i].flushes >= i + 1);
        ASSERT_EQ(fk.commits[i].sink_closed, 0);
    }
    fk.flush_fail = 1;
    int f0 = fk.flushes;
    pthread_mutex_unlock(&fk.mu);
    /* A round published before the failure may still be on its way. */
    WAIT_FOR(fk_get(&fk.flushes) >= f0 + 2);
    int c0 = fk_get(&fk.n_commits);
    int f1 = fk_get(&fk.flushes);
    WAIT_FOR(fk_get(&fk.flushes) >= f1 + 3);
    wait_polls(3);
    ASSERT_EQ(fk_get(&fk.n_commits), c0);
    pthread_mutex_lock(&fk.mu);
    fk.flush_fail = 0;
    pthread_mutex_unlock(&fk.mu);
    fk_set_eof();
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("out", "k=a n=2 [0,10) on_time#0 +",
               "k=a n=1 [10,20) on_time#0 +");
    fk_commit *last = &fk.commits[fk.n_commits - 1];
    ASSERT_EQ(last->proc, TDM_TIME_MAX);
    ASSERT_EQ(last->done, TDM_TIME_MAX);
    ASSERT_EQ(last->sink_closed, 1);
    ASSERT_EQ(fk.closed, 1);
    tdm_job_destroy(job);
}

/* Periodic emission: a:1, a:3, a:12 polled, then the clock tick sends
 * watermark 11 after all of them, so consumers that reached 11 handled
 * them: the mark is tagged 10 (handled when a consumer's watermark is
 * above 10), never 11. */
TDM_TEST(periodic_mark_is_handled_at_its_watermark)
{
    tdm_job *job = fk_job("1");
    tdm_node *s = NULL;
    for (int i = 0; i < job->n_nodes; i++)
        if (job->nodes[i]->kind == TDM_NODE_SOURCE)
            s = job->nodes[i];
    KIT_SET(s, "watermark.emit", "periodic");
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p0, "a", 1);
    fk_push(p0, "a", 3);
    fk_push(p0, "a", 12);
    kit_bg bg;
    kit_bg_start(&bg, job);
    WAIT_FOR(fk_get(&fk.n_taken) == 3);
    double t0 = kit_secs();
    while (find_mark(10) < 0) {
        ASSERT_TRUE(kit_secs() - t0 < 5.0);
        tick(250);
    }
    ASSERT_TRUE(find_mark(11) < 0);
    WAIT_FOR(find_commit(11, 11) >= 0);
    fk_set_eof();
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("out", "k=a n=2 [0,10) on_time#0 +",
               "k=a n=1 [10,20) on_time#0 +");
    tdm_job_destroy(job);
}

/* Cancel with on_cancel stop: a:1, a:12, a:15 fire [0,10) (watermark
 * 14); [10,20) is open and must not be written; the final commit says
 * done 14 (the window's watermark), every mark processed.  With
 * on_cancel drain the same run also writes [10,20) (a 2) and done is
 * MAX. */
static void cancel_case(const char *mode, bool drain)
{
    tdm_job *job = fk_job("1");
    KIT_JOB_SET(job, "on_cancel", mode);
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p0, "a", 1);
    fk_push(p0, "a", 12);
    fk_push(p0, "a", 15);
    kit_bg bg;
    kit_bg_start(&bg, job);
    WAIT_FOR(sink_lines() == 1);
    tdm_job_cancel(job);
    ASSERT_OK(kit_bg_join(&bg));
    if (drain)
        KIT_EXPECT("out", "k=a n=1 [0,10) on_time#0 +",
                   "k=a n=2 [10,20) on_time#0 +");
    else
        KIT_EXPECT("out", "k=a n=1 [0,10) on_time#0 +");
    fk_commit *last = &fk.commits[fk.n_commits - 1];
    ASSERT_EQ(last->proc, TDM_TIME_MAX);
    ASSERT_EQ(last->done, drain ? TDM_TIME_MAX : 14);
    /* One operator subtask: nothing above its watermark was written. */
    ASSERT_EQ(last->top, drain ? TDM_TIME_MAX : 14);
    ASSERT_EQ(last->sink_closed, 1);
    tdm_job_destroy(job);
}

TDM_TEST(cancel_stop_writes_no_open_window)
{
    cancel_case("stop", false);
}

TDM_TEST(cancel_drain_fires_open_windows)
{
    cancel_case("drain", true);
}

/* Replay floor 19 on t[0] (its previous owner's watermark): a record
 * whose horizon is <= 19 was already accounted for.  a:5 (horizon 9)
 * and a:15 (horizon 19, the boundary) are skipped; b:25 and b:22
 * (horizon 29) are kept: only [20,30) b 2 is written. */
TDM_TEST(replay_floor_skips_written_records)
{
    tdm_job *job = fk_job("1");
    int p0 = fk_assign(0, "t[0]", 19);
    fk_push(p0, "a", 5);
    fk_push(p0, "a", 15);
    fk_push(p0, "b", 25);
    fk_push(p0, "b", 22);
    fk_set_eof();
    kit_run_ok(job);
    KIT_EXPECT("out", "k=b n=2 [20,30) on_time#0 +");
    tdm_job_destroy(job);
}

/* A floor of TDM_TIME_MAX (a drained run's last commit) is no floor. */
TDM_TEST(replay_floor_max_is_none)
{
    tdm_job *job = fk_job("1");
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MAX);
    fk_push(p0, "a", 5);
    fk_set_eof();
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=1 [0,10) on_time#0 +");
    tdm_job_destroy(job);
}

/* The connector reports that a previous owner may have written results
 * of windows starting at or before 12 (it crashed after reading a record
 * stamped 12): [0,10) and [10,20) are marked as updates, [20,30) is not.
 * With end - 1 <= 9 instead (a clean hand-over at top 9), only [0,10). */
static void replay_case(tdm_time_ms start_le, tdm_time_ms last_le,
                        const char *w0, const char *w1)
{
    tdm_job *job = fk_job("1");
    fk.replay_start = start_le;
    fk.replay_last = last_le;
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p0, "a", 1);
    fk_push(p0, "a", 5);
    fk_push(p0, "a", 12);
    fk_push(p0, "a", 25);
    fk_set_eof();
    kit_run_ok(job);
    const char *const want[] = {w0, w1, "k=a n=1 [20,30) on_time#0 +"};
    kit_expect_lines(__FILE__, __LINE__, "out", want, 3);
    tdm_job_destroy(job);
}

TDM_TEST(replayed_windows_are_marked_as_updates)
{
    replay_case(12, TDM_TIME_MIN, "k=a n=2 [0,10) on_time#0u +",
                "k=a n=1 [10,20) on_time#0u +");
}

TDM_TEST(clean_handover_marks_windows_ending_by_its_top)
{
    replay_case(TDM_TIME_MIN, 9, "k=a n=2 [0,10) on_time#0u +",
                "k=a n=1 [10,20) on_time#0 +");
}

/* Upsert mode: a replayed first result is an UPDATE of its key+window. */
TDM_TEST(replayed_result_is_an_upsert_update)
{
    tdm_job *job = fk_job("1");
    for (int i = 0; i < job->n_nodes; i++)
        if (job->nodes[i]->kind == TDM_NODE_WINDOW)
            KIT_SET(job->nodes[i], "output_mode", "upsert");
    fk.replay_start = 3;
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p0, "a", 1);
    fk_push(p0, "a", 12);
    fk_set_eof();
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=1 [0,10) on_time#0u ~",
               "k=a n=1 [10,20) on_time#0 +");
    tdm_job_destroy(job);
}

/* A count trigger writes results before the watermark reaches their
 * windows: the final commit cannot vouch for a top (MIN: not clean). */
TDM_TEST(early_firing_job_commits_no_top)
{
    tdm_job *job = fk_job("1");
    for (int i = 0; i < job->n_nodes; i++)
        if (job->nodes[i]->kind == TDM_NODE_WINDOW) {
            KIT_SET(job->nodes[i], "trigger", "count");
            KIT_SET(job->nodes[i], "trigger.count", "1");
        }
    KIT_JOB_SET(job, "on_cancel", "stop");
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p0, "a", 1);
    fk_push(p0, "a", 12);
    kit_bg bg;
    kit_bg_start(&bg, job);
    WAIT_FOR(sink_lines() == 2);
    tdm_job_cancel(job);
    ASSERT_OK(kit_bg_join(&bg));
    fk_commit *last = &fk.commits[fk.n_commits - 1];
    ASSERT_EQ(last->sink_closed, 1);
    ASSERT_EQ(last->top, TDM_TIME_MIN);
    tdm_job_destroy(job);
}

/* The key fence cases start alike: t[0] (a:1, a:5) and t[1] (b:2) are
 * assigned and read (watermark 1: window [0,10) of both keys open). */
static tdm_job *fence_start(kit_bg *bg, int *p0, int *p1)
{
    tdm_job *job = fk_job("1");
    *p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    *p1 = fk_assign(0, "t[1]", TDM_TIME_MIN);
    fk_push(*p0, "a", 1);
    fk_push(*p0, "a", 5);
    fk_push(*p1, "b", 2);
    kit_bg_start(bg, job);
    WAIT_FOR(fk_get(&fk.n_taken) == 3);
    return job;
}

/* Key fence.  t[0] (a:1, a:5) and t[1] (b:2) are read; t[0] is revoked
 * while the job runs, with window [0,10) of key a open (watermark 1).
 * Its next owner re-reads those records, so this member must not write
 * its partial [0,10) of a: after b:15 (watermark 14) only b's windows are
 * written.  Without the fence a n=2 [0,10) would appear. */
TDM_TEST(fenced_key_open_window_is_not_written)
{
    kit_bg bg;
    int p0, p1;
    tdm_job *job = fence_start(&bg, &p0, &p1);
    fk_revoke_fenced(p0);
    WAIT_FOR(fk_get(&fk.p[p0].told) == 1);
    fk_push(p1, "b", 15);
    fk_set_eof();
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("out", "k=b n=1 [0,10) on_time#0 +",
               "k=b n=1 [10,20) on_time#0 +");
    tdm_job_destroy(job);
}

/* The partition comes back to this member (a new split t[0]') and its
 * records are read again from the commit: a:1, a:5, then a:12.  The
 * fenced key's records go to a fresh identity, so [0,10) of a is written
 * once with 2 (not 4: the stale state of the first reading is not
 * written), and the key is output as "a" (no suffix). */
TDM_TEST(fenced_key_read_again_is_counted_once)
{
    kit_bg bg;
    int p0, p1;
    tdm_job *job = fence_start(&bg, &p0, &p1);
    fk_revoke_fenced(p0);
    WAIT_FOR(fk_get(&fk.p[p0].told) == 1);
    int p2 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p2, "a", 1);
    fk_push(p2, "a", 5);
    fk_push(p2, "a", 12);
    WAIT_FOR(fk_get(&fk.n_taken) == 6);
    fk_push(p1, "b", 15);
    fk_set_eof();
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("out", "k=a n=2 [0,10) on_time#0 +",
               "k=b n=1 [0,10) on_time#0 +", "k=a n=1 [10,20) on_time#0 +",
               "k=b n=1 [10,20) on_time#0 +");
    tdm_job_destroy(job);
}

/* A split that ends (stop: end) or is not fenced keeps its windows: the
 * same run with a plain revoke writes a n=2 [0,10). */
TDM_TEST(unfenced_revoke_keeps_open_windows)
{
    kit_bg bg;
    int p0, p1;
    tdm_job *job = fence_start(&bg, &p0, &p1);
    fk_revoke(p0);
    WAIT_FOR(fk_get(&fk.p[p0].told) == 1);
    fk_push(p1, "b", 15);
    fk_set_eof();
    ASSERT_OK(kit_bg_join(&bg));
    KIT_EXPECT("out", "k=a n=2 [0,10) on_time#0 +",
               "k=b n=1 [0,10) on_time#0 +", "k=b n=1 [10,20) on_time#0 +");
    tdm_job_destroy(job);
}

/* The job's log, kept for the alignment test. */
static struct {
    pthread_mutex_t mu;
    char lines[64][200];
    int n;
} logs = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void keep_log(void *ud, const char *line)
{
    (void)ud;
    if (strncmp(line, "debug pause", 11) != 0)
        return;
    pthread_mutex_lock(&logs.mu);
    if (logs.n < 64)
        snprintf(logs.lines[logs.n++], sizeof logs.lines[0], "%s", line);
    pthread_mutex_unlock(&logs.mu);
}

/* Alignment (max drift 10 ms, update every 100 ms): t[0] reads a:1000
 * (split watermark 999), t[1] b:5 (4); the reader's watermark is 4, so
 * the coordinator announces 4 + 10 = 14 and t[0] (999 > 14) is paused
 * at the connector; t[1] is not.  b:1000 then brings t[1] and the
 * reader to 999, above the announced 14: the reader pauses itself
 * (Flink's reader-level wait), which for a version-2 source pauses its
 * other live split t[1] at the connector.  The next report (999) makes
 * the announcement 1009: both resume (t[0] as a split, t[1] with the
 * reader or as a split, in either order).  Exactly four calls; the
 * debug log names the first two. */
TDM_TEST(alignment_pauses_the_fast_partition)
{
    tdm_job *job = fk_job("1");
    logs.n = 0;
    ASSERT_OK(tdm_job_set_log(job, keep_log, NULL));
    KIT_JOB_SET(job, "log.level", "debug");
    tdm_node *s = NULL;
    for (int i = 0; i < job->n_nodes; i++)
        if (job->nodes[i]->kind == TDM_NODE_SOURCE)
            s = job->nodes[i];
    KIT_SET(s, "watermark.alignment.group", "g");
    KIT_SET(s, "watermark.alignment.max_drift", "10ms");
    KIT_SET(s, "watermark.alignment.update_interval", "100ms");
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    int p1 = fk_assign(0, "t[1]", TDM_TIME_MIN);
    fk_push(p0, "a", 1000);
    fk_push(p1, "b", 5);
    kit_bg bg;
    kit_bg_start(&bg, job);
    double t0 = kit_secs();
    while (fk_get(&fk.n_pauses) < 1) {
        ASSERT_TRUE(kit_secs() - t0 < 5.0);
        tick(50);
    }
    fk_push(p1, "b", 1000);
    t0 = kit_secs();
    while (fk_get(&fk.n_pauses) < 4) {
        ASSERT_TRUE(kit_secs() - t0 < 5.0);
        tick(50);
    }
    /* A few more rounds: nothing else is paused. */
    for (int i = 0; i < 6; i++)
        tick(50);
    fk_set_eof();
    ASSERT_OK(kit_bg_join(&bg));
    ASSERT_EQ(fk.n_pauses, 4);
    ASSERT_EQ(fk.pauses[0][1], 0);
    ASSERT_EQ(fk.pauses[0][2], 1);
    ASSERT_EQ(fk.pauses[1][1], 1);
    ASSERT_EQ(fk.pauses[1][2], 1);
    ASSERT_EQ(fk.pauses[2][2], 0);
    ASSERT_EQ(fk.pauses[3][2], 0);
    ASSERT_EQ(fk.pauses[2][1] + fk.pauses[3][1], 1);
    ASSERT_TRUE(logs.n >= 2);
    ASSERT_STR_EQ(logs.lines[0], "debug pause vertex=src subtask=0 "
                                 "partition=t[0] paused=1");
    ASSERT_STR_EQ(logs.lines[1], "debug pause vertex=src subtask=0 "
                                 "partition=t[1] paused=1");
    /* Both windows of the data are written after the drain. */
    KIT_EXPECT("out", "k=b n=1 [0,10) on_time#0 +",
               "k=a n=1 [1000,1010) on_time#0 +",
               "k=b n=1 [1000,1010) on_time#0 +");
    tdm_job_destroy(job);
}

static int log_has(const char *line)
{
    pthread_mutex_lock(&logs.mu);
    int found = 0;
    for (int i = 0; i < logs.n; i++)
        if (strcmp(logs.lines[i], line) == 0)
            found = 1;
    pthread_mutex_unlock(&logs.mu);
    return found;
}

/* Alignment across two sources of one group, one of them version 1: an
 * endless kit stream "fast" (timestamps 0, 1, 2, ...: its watermark runs
 * ahead at once) and the fake source with b:5 (watermark 4).  The
 * coordinator announces 4 + 10 = 14, below fast's watermark, so fast's
 * reader pauses itself; a version-1 source then stops polling (its log
 * line names no partition).  While paused its row count stands still
 * across clock ticks.  Cancel (drain) ends both. */
TDM_TEST(alignment_pauses_a_version1_source)
{
    fk_reset();
    kit_add_data((kit_data){"endless", 1, NULL, 0, -1, 2, 1});
    logs.n = 0;
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__job_set_clock(job, fk_clock, NULL);
    ASSERT_OK(tdm_job_set_log(job, keep_log, NULL));
    KIT_JOB_SET(job, "log.level", "debug");
    KIT_JOB_SET(job, "batch.size", "64");
    tdm_node *f = kit_source_node(job, "fast", "endless");
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, "src");
    tdm__node_set_source_vtab(s, &fk_source);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    tdm_node *both[2] = {f, s};
    for (int i = 0; i < 2; i++) {
        KIT_SET(both[i], "watermark.emit", "on_event");
        KIT_SET(both[i], "watermark.alignment.group", "g");
        KIT_SET(both[i], "watermark.alignment.max_drift", "10ms");
        KIT_SET(both[i], "watermark.alignment.update_interval", "100ms");
    }
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "fast, src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "1h");
    KIT_SET(w, "aggregates", "count() as n");
    KIT_SET(w, "sink", "out");
    tdm_node *o = kit_node(job, TDM_NODE_SINK, "out");
    tdm__node_set_sink_vtab(o, &fk_sink);
    int p0 = fk_assign(0, "t[0]", TDM_TIME_MIN);
    fk_push(p0, "b", 5);
    kit_bg bg;
    kit_bg_start(&bg, job);
    const char *want = "debug pause vertex=fast subtask=0 partition=* "
                       "paused=1";
    double t0 = kit_secs();
    while (!log_has(want)) {
        ASSERT_TRUE(kit_secs() - t0 < 5.0);
        tick(50);
    }
    int64_t n0 = atomic_load(&job->rec->stats[TDM_STAT_RECORDS_IN]);
    tick(50);
    tick(50);
    int64_t n1 = atomic_load(&job->rec->stats[TDM_STAT_RECORDS_IN]);
    ASSERT_EQ(n1, n0);
    ASSERT_TRUE(!log_has("debug pause vertex=fast subtask=0 partition=* "
                         "paused=0"));
    tdm_job_cancel(job);
    ASSERT_OK(kit_bg_join(&bg));
    tdm_job_destroy(job);
}
