/* SPDX-License-Identifier: MIT */
/* test_kafka_shuffle.c - the repartition topic without a broker: how the
 * writers' markers combine into a partition's watermark (minimum over the
 * writers heard from, idle and silent writers left out, all-idle flush,
 * never backwards, waiting for N writers), the row encoding on the topic,
 * and open()'s parameter checks; for tasks, the offsets taken per origin
 * (a replayed row is dropped, a new one taken) and the run's start file
 * (one creator wins, a mismatch is refused with its place).  Times are
 * passed in by hand (manual).
 */
#include "harness.h"
#include "connect/kafka_shuffle.h"
#include "testhooks.h"

#define W(t, p, id, wm, idle, now)                                             \
    ASSERT_OK(tdm__kwm_marker(t, p, id, strlen(id), wm, idle, now))

/* No writer heard from: nothing to report, the watermark is MIN. */
TDM_TEST(kwm_empty_reports_nothing)
{
    tdm__kwm *t = tdm__kwm_new(10000, 0);
    tdm_time_ms wm = 7;
    int idle = 7;
    ASSERT_TRUE(t != NULL);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 0);
    ASSERT_EQ(wm, TDM_TIME_MIN);
    ASSERT_EQ(idle, 0);
    ASSERT_EQ(tdm__kwm_writers(t, 3), 0);
    ASSERT_ERR(tdm__kwm_marker(t, -1, "a", 1, 5, 0, 0), TDM_ERR_INVAL);
    tdm__kwm_free(t);
}

/* The partition's watermark is the minimum over its writers: A at 100
 * and B at 50 give 50; A moving to 200 leaves the minimum at 50 (no
 * change reported); B moving to 150 gives min(200, 150) = 150. */
TDM_TEST(kwm_min_over_writers)
{
    tdm__kwm *t = tdm__kwm_new(10000, 0);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "A", 100, 0, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 100);
    W(t, 0, "B", 50, 0, 0);
    /* B's 50 is below what was reported (100): never backwards. */
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 0);
    ASSERT_EQ(wm, 100);
    tdm__kwm_free(t);

    /* Both heard before the first report: the minimum, 50. */
    t = tdm__kwm_new(10000, 0);
    W(t, 0, "A", 100, 0, 0);
    W(t, 0, "B", 50, 0, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 50);
    ASSERT_EQ(idle, 0);
    W(t, 0, "A", 200, 0, 10);
    ASSERT_EQ(tdm__kwm_get(t, 0, 10, &wm, &idle), 0);
    ASSERT_EQ(wm, 50);
    W(t, 0, "B", 150, 0, 20);
    ASSERT_EQ(tdm__kwm_get(t, 0, 20, &wm, &idle), 1);
    ASSERT_EQ(wm, 150);
    ASSERT_EQ(tdm__kwm_writers(t, 0), 2);
    /* A second call without news reports no change. */
    ASSERT_EQ(tdm__kwm_get(t, 0, 20, &wm, &idle), 0);
    ASSERT_EQ(wm, 150);
    tdm__kwm_free(t);
}

/* Partitions are independent: a writer's marker on p1 says nothing
 * about p0. */
TDM_TEST(kwm_partitions_independent)
{
    tdm__kwm *t = tdm__kwm_new(10000, 0);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "A", 10, 0, 0);
    W(t, 0, "B", 30, 0, 0);
    W(t, 5, "A", 90, 0, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 10);
    ASSERT_EQ(tdm__kwm_get(t, 5, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 90);
    ASSERT_EQ(tdm__kwm_get(t, 3, 0, &wm, &idle), 0);
    ASSERT_EQ(wm, TDM_TIME_MIN);
    tdm__kwm_free(t);
}

/* A writer's older (lower) marker does not lower its watermark: A sends
 * 300 then 200; with B at 400 the partition is at min(300, 400) = 300. */
TDM_TEST(kwm_writer_never_back)
{
    tdm__kwm *t = tdm__kwm_new(10000, 0);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "A", 300, 0, 0);
    W(t, 0, "A", 200, 0, 1);
    W(t, 0, "B", 400, 0, 1);
    ASSERT_EQ(tdm__kwm_get(t, 0, 1, &wm, &idle), 1);
    ASSERT_EQ(wm, 300);
    tdm__kwm_free(t);
}

/* Idle writers do not hold the partition: A at 100 and B idle at 20 give
 * 100.  When B is idle too, every writer is idle: the highest watermark
 * (max(100, 20) = 100, already out) is kept and the partition is idle.
 * B active again at 500 (A still idle) makes it active at 500, the only
 * writer that counts. */
TDM_TEST(kwm_idle_writers)
{
    tdm__kwm *t = tdm__kwm_new(10000, 0);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "A", 100, 0, 0);
    W(t, 0, "B", 20, 1, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 100);
    ASSERT_EQ(idle, 0);
    W(t, 0, "A", 100, 1, 5);
    ASSERT_EQ(tdm__kwm_get(t, 0, 5, &wm, &idle), 1);
    ASSERT_EQ(wm, 100);
    ASSERT_EQ(idle, 1);
    W(t, 0, "B", 500, 0, 6);
    ASSERT_EQ(tdm__kwm_get(t, 0, 6, &wm, &idle), 1);
    ASSERT_EQ(wm, 500); /* A is still idle: only B counts. */
    ASSERT_EQ(idle, 0);
    tdm__kwm_free(t);
}

/* All idle flushes the highest watermark: A idle at 700 and B idle at
 * 300, first report: max = 700, idle. */
TDM_TEST(kwm_all_idle_flushes_max)
{
    tdm__kwm *t = tdm__kwm_new(10000, 0);
    tdm_time_ms wm;
    int idle;
    W(t, 2, "A", 700, 1, 0);
    W(t, 2, "B", 300, 1, 0);
    ASSERT_EQ(tdm__kwm_get(t, 2, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 700);
    ASSERT_EQ(idle, 1);
    tdm__kwm_free(t);
}

/* A writer silent for the whole timeout (1000 ms) stops counting: A
 * heard at t=0 with 10, B at t=900 with 600.  At t=999 A still counts
 * (999 - 0 < 1000): 10.  At t=1000 A is silent: 600.  A heard again at
 * t=1500 with 50 counts again, but the partition never goes back: 600. */
TDM_TEST(kwm_silent_writer_timeout)
{
    tdm__kwm *t = tdm__kwm_new(1000, 0);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "A", 10, 0, 0);
    W(t, 0, "B", 600, 0, 900);
    ASSERT_EQ(tdm__kwm_get(t, 0, 999, &wm, &idle), 1);
    ASSERT_EQ(wm, 10);
    ASSERT_EQ(tdm__kwm_get(t, 0, 1000, &wm, &idle), 1);
    ASSERT_EQ(wm, 600);
    ASSERT_EQ(idle, 0);
    W(t, 0, "A", 50, 0, 1500);
    W(t, 0, "B", 650, 0, 1500);
    ASSERT_EQ(tdm__kwm_get(t, 0, 1500, &wm, &idle), 0);
    ASSERT_EQ(wm, 600);
    /* Both silent at t=2500 (last heard 1500): every writer out, the
     * partition is idle with the highest watermark, 650. */
    ASSERT_EQ(tdm__kwm_get(t, 0, 2500, &wm, &idle), 1);
    ASSERT_EQ(wm, 650);
    ASSERT_EQ(idle, 1);
    tdm__kwm_free(t);
}

/* writers_expected = 2: one writer is not enough (nothing reported, the
 * partition holds at MIN); the second one releases min(400, 250) = 250. */
TDM_TEST(kwm_waits_for_expected_writers)
{
    tdm__kwm *t = tdm__kwm_new(10000, 2);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "A", 400, 0, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 0);
    ASSERT_EQ(wm, TDM_TIME_MIN);
    ASSERT_EQ(idle, 0);
    /* An idle single writer does not make it idle either. */
    W(t, 0, "A", 400, 1, 1);
    ASSERT_EQ(tdm__kwm_get(t, 0, 1, &wm, &idle), 0);
    ASSERT_EQ(idle, 0);
    W(t, 0, "A", 400, 0, 2);
    W(t, 0, "B", 250, 0, 2);
    ASSERT_EQ(tdm__kwm_get(t, 0, 2, &wm, &idle), 1);
    ASSERT_EQ(wm, 250);
    tdm__kwm_free(t);
}

/* Reset forgets the writers (a slow one no longer holds it) but the
 * reported watermark stays: A 100, B 900 -> 100; reset; C 50 -> still
 * 100 (never back); C 1000 -> 1000 (B, forgotten, no longer holds). */
TDM_TEST(kwm_reset)
{
    tdm__kwm *t = tdm__kwm_new(10000, 0);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "A", 100, 0, 0);
    W(t, 0, "B", 900, 0, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 100);
    tdm__kwm_reset(t, 0);
    ASSERT_EQ(tdm__kwm_writers(t, 0), 0);
    W(t, 0, "C", 50, 0, 1);
    ASSERT_EQ(tdm__kwm_get(t, 0, 1, &wm, &idle), 0);
    ASSERT_EQ(wm, 100);
    W(t, 0, "C", 1000, 0, 2);
    ASSERT_EQ(tdm__kwm_get(t, 0, 2, &wm, &idle), 1);
    ASSERT_EQ(wm, 1000);
    tdm__kwm_reset(t, 7); /* unknown: no effect */
    tdm__kwm_free(t);
    tdm__kwm_free(NULL);
}

/* MAX markers (end of a writer's input) from every writer give MAX. */
TDM_TEST(kwm_end_of_input)
{
    tdm__kwm *t = tdm__kwm_new(10000, 0);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "A", TDM_TIME_MAX, 0, 0);
    W(t, 0, "B", 5, 0, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 5);
    W(t, 0, "B", TDM_TIME_MAX, 0, 1);
    ASSERT_EQ(tdm__kwm_get(t, 0, 1, &wm, &idle), 1);
    ASSERT_EQ(wm, TDM_TIME_MAX);
    tdm__kwm_free(t);
}

static tdm__schema schema_of(const char *text)
{
    tdm__schema s = {0};
    ASSERT_OK(tdm__schema_parse(text, &s, NULL, 0));
    return s;
}

/* A row survives the topic: strings (empty, with NUL, long), null,
 * double, int, bool and the timestamp; the decoded strings live in the
 * target batch (not in the message bytes, which are freed). */
TDM_TEST(row_encoding_round_trip)
{
    tdm__schema s = schema_of("user:string, n:int64, x:double, b:bool, "
                              "note:string, empty:string");
    tdm__batch *in = tdm__batch_new(&s, 4), *out = tdm__batch_new(&s, 4);
    ASSERT_TRUE(in && out);
    tdm__row *r = tdm__batch_add(in);
    r->ts = 1700000000123;
    ASSERT_OK(tdm__batch_set_string(in, r, 0, "al\0ce", 5));
    r->v[1].u.i = -42;
    r->v[1].null = 0;
    r->v[2].u.d = 2.5;
    r->v[2].null = 0;
    r->v[3].u.i = 1;
    r->v[3].null = 0;
    /* note stays null */
    ASSERT_OK(tdm__batch_set_string(in, r, 5, "", 0));
    tdm__keybuf kb = {0};
    ASSERT_OK(tdm__kshuffle_encode(r, &kb));
    ASSERT_EQ((unsigned char)kb.p[0], TDM__KSHUFFLE_VERSION);
    ASSERT_EQ(kb.p[1], 6);
    ASSERT_EQ(kb.p[2], 0);
    /* Decode from an unaligned copy, then scribble over it. */
    char *msg = malloc(kb.len + 1);
    memcpy(msg + 1, kb.p, kb.len);
    tdm__row *d = NULL;
    ASSERT_OK(tdm__kshuffle_decode(msg + 1, kb.len, out, &d));
    memset(msg, 'Z', kb.len + 1);
    free(msg);
    ASSERT_TRUE(d != NULL);
    ASSERT_EQ(out->n, 1);
    ASSERT_EQ(d->ts, 1700000000123);
    ASSERT_EQ(d->v[0].null, 0);
    ASSERT_EQ(d->v[0].u.s.len, 5);
    ASSERT_TRUE(memcmp(d->v[0].u.s.p, "al\0ce", 5) == 0);
    ASSERT_TRUE(d->v[0].u.s.p >= out->arena &&
                d->v[0].u.s.p < out->arena + out->arena_used);
    ASSERT_EQ(d->v[1].u.i, -42);
    ASSERT_DBL_EQ(d->v[2].u.d, 2.5);
    ASSERT_EQ(d->v[3].u.i, 1);
    ASSERT_EQ(d->v[4].null, 1);
    ASSERT_EQ(d->v[5].null, 0);
    ASSERT_EQ(d->v[5].u.s.len, 0);
    free(kb.p);
    tdm__batch_destroy(in);
    tdm__batch_destroy(out);
    tdm__schema_free(&s);
}

/* Bytes that are not a row of this schema are refused without adding a
 * row: wrong version, other field count, truncated, a string whose
 * offset points past the end, and an empty value (a marker). */
TDM_TEST(row_encoding_rejects_foreign_bytes)
{
    tdm__schema s = schema_of("user:string, n:int64");
    tdm__schema s3 = schema_of("user:string, n:int64, m:int64");
    tdm__batch *in = tdm__batch_new(&s, 2), *out = tdm__batch_new(&s, 2);
    tdm__batch *out3 = tdm__batch_new(&s3, 2);
    tdm__row *r = tdm__batch_add(in);
    r->ts = 5;
    ASSERT_OK(tdm__batch_set_string(in, r, 0, "bob", 3));
    tdm__keybuf kb = {0};
    ASSERT_OK(tdm__kshuffle_encode(r, &kb));
    tdm__row *d = NULL;
    ASSERT_ERR(tdm__kshuffle_decode(kb.p, kb.len, out3, &d), TDM_ERR_PARSE);
    ASSERT_ERR(tdm__kshuffle_decode(kb.p, kb.len - 1, out, &d), TDM_ERR_PARSE);
    ASSERT_ERR(tdm__kshuffle_decode(kb.p, 2, out, &d), TDM_ERR_PARSE);
    ASSERT_ERR(tdm__kshuffle_decode(NULL, 0, out, &d), TDM_ERR_PARSE);
    kb.p[0] = TDM__KSHUFFLE_VERSION + 1;
    ASSERT_ERR(tdm__kshuffle_decode(kb.p, kb.len, out, &d), TDM_ERR_PARSE);
    kb.p[0] = TDM__KSHUFFLE_VERSION;
    ASSERT_EQ(out->n, 0);
    ASSERT_EQ(out3->n, 0);
    ASSERT_TRUE(d == NULL);
    /* Intact, it decodes. */
    ASSERT_OK(tdm__kshuffle_decode(kb.p, kb.len, out, &d));
    ASSERT_EQ(d->ts, 5);
    ASSERT_EQ(out->n, 1);
    free(kb.p);
    tdm__batch_destroy(in);
    tdm__batch_destroy(out);
    tdm__batch_destroy(out3);
    tdm__schema_free(&s);
    tdm__schema_free(&s3);
}

/* open() checks its parameters before touching the network: a missing
 * key or group, and an unknown kafka.* property (named as in the job
 * file).  Nothing leaks on these paths (checked under ASan). */
TDM_TEST(open_checks_parameters)
{
    tdm__schema s = schema_of("user:string, n:int64");
    int key[1] = {0};
    const char *props[] = {"no.such.property", "1"};
    tdm__kshuffle_conf c = {0};
    tdm__kshuffle *sh = (tdm__kshuffle *)1;
    char e[256] = "";
    c.brokers = "127.0.0.1:1";
    c.group = "g";
    c.schema = &s;
    ASSERT_ERR(tdm__kshuffle_open(&c, 0, 1, &sh, e, sizeof e), TDM_ERR_INVAL);
    ASSERT_TRUE(sh == NULL);
    ASSERT_TRUE(strstr(e, "key") != NULL);
    c.key_idx = key;
    c.n_key = 1;
    c.group = NULL;
    ASSERT_ERR(tdm__kshuffle_open(&c, 0, 1, &sh, e, sizeof e), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(e, "group") != NULL);
    c.group = "g";
    c.props = props;
    c.n_props = 1;
    ASSERT_ERR(tdm__kshuffle_open(&c, 0, 1, &sh, e, sizeof e), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(e, "kafka.no.such.property") != NULL);
    ASSERT_TRUE(sh == NULL);
    /* A task out of the task count. */
    c.props = NULL;
    c.n_props = 0;
    c.tasked = true;
    c.task = 2;
    c.tasks = 2;
    ASSERT_ERR(tdm__kshuffle_open(&c, 0, 1, &sh, e, sizeof e), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(e, "task 2 of 2") != NULL);
    ASSERT_TRUE(sh == NULL);
    tdm__kshuffle_close(NULL);
    tdm__schema_free(&s);
}

/* A task's writers never time out: a silent writer (one between two
 * owners) holds the partition at its last marker for as long as it
 * takes, and the partition waits for every task's first marker. */
TDM_TEST(kwm_tasks_hold_while_a_writer_moves)
{
    tdm__kwm *t = tdm__kwm_new(TDM_TIME_MAX, 2);
    tdm_time_ms wm;
    int idle;
    W(t, 0, "task-0", 5000, 0, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 0); /* task-1 unheard */
    W(t, 0, "task-1", 3000, 0, 0);
    ASSERT_EQ(tdm__kwm_get(t, 0, 0, &wm, &idle), 1);
    ASSERT_EQ(wm, 3000);
    /* task-1 moves: silent for an hour, task-0 goes on. */
    W(t, 0, "task-0", 9000, 0, 3600000);
    tdm__kwm_get(t, 0, 3600000, &wm, &idle);
    ASSERT_EQ(wm, 3000);
    ASSERT_EQ(idle, 0);
    /* Its next owner starts lower (restored generator): no step back. */
    W(t, 0, "task-1", 1000, 0, 3600001);
    tdm__kwm_get(t, 0, 3600001, &wm, &idle);
    ASSERT_EQ(wm, 3000);
    W(t, 0, "task-1", 7000, 0, 3600002);
    tdm__kwm_get(t, 0, 3600002, &wm, &idle);
    ASSERT_EQ(wm, 7000);
    /* The checkpoint's view of the writers. */
    const char *id;
    size_t len;
    ASSERT_TRUE(tdm__kwm_writer_at(t, 0, 1, &id, &len, &wm, &idle));
    ASSERT_EQ(len, 6);
    ASSERT_TRUE(memcmp(id, "task-1", 6) == 0);
    ASSERT_EQ(wm, 7000);
    ASSERT_TRUE(!tdm__kwm_writer_at(t, 0, 2, &id, &len, &wm, &idle));
    tdm__kwm_free(t);
}

/* Rows of one origin come in offset order; a task that moved writes
 * some again from its checkpoint, and even a zombie's copies interleave
 * with its successor's: each offset is taken once, whatever the
 * interleaving, and origins do not disturb each other. */
TDM_TEST(kseen_takes_each_offset_once)
{
    tdm__kseen *s = tdm__kseen_new();
    ASSERT_TRUE(s != NULL);
    for (int64_t o = 100; o <= 130; o++)
        ASSERT_EQ(tdm__kseen_take(s, "clicks[3]", 9, o), 1);
    /* The successor replays from 120: 120..130 are copies. */
    for (int64_t o = 120; o <= 130; o++)
        ASSERT_EQ(tdm__kseen_take(s, "clicks[3]", 9, o), 0);
    ASSERT_EQ(tdm__kseen_take(s, "clicks[3]", 9, 131), 1);
    /* The zombie's 131 and 132 arrive: 131 is a copy, 132 is new. */
    ASSERT_EQ(tdm__kseen_take(s, "clicks[3]", 9, 131), 0);
    ASSERT_EQ(tdm__kseen_take(s, "clicks[3]", 9, 132), 1);
    /* Another origin starts from 0. */
    ASSERT_EQ(tdm__kseen_take(s, "clicks[4]", 9, 0), 1);
    ASSERT_EQ(tdm__kseen_take(s, "clicks[4]", 9, 0), 0);
    ASSERT_EQ(tdm__kseen_count(s), 2);
    int64_t last = -1;
    ASSERT_STR_EQ(tdm__kseen_origin(s, 0, &last), "clicks[3]");
    ASSERT_EQ(last, 132);
    ASSERT_TRUE(tdm__kseen_origin(s, 2, &last) == NULL);
    tdm__kseen_free(s);
    tdm__kseen_free(NULL);
}

/* The start file: the first publisher's offsets win, a later one gets
 * them back; another topic or partition count is refused, a damaged
 * file names its line. */
TDM_TEST(kstart_first_creator_wins)
{
    char dir[64], path[128], e[512] = "";
    strcpy(dir, "/tmp/tdm-kstart-XXXXXX");
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/sub/repartition-x.start", dir);
    int64_t a[3] = {10, 20, 30}, b[3] = {11, 21, 31}, got[3] = {0};
    bool found = true;
    ASSERT_OK(tdm__kstart_load(path, "t", 3, got, &found, e, sizeof e));
    ASSERT_TRUE(!found);
    ASSERT_OK(tdm__kstart_publish(path, "t", 3, a, e, sizeof e));
    ASSERT_OK(tdm__kstart_publish(path, "t", 3, b, e, sizeof e));
    ASSERT_EQ(b[0], 10); /* the file's, not the loser's */
    ASSERT_EQ(b[2], 30);
    ASSERT_OK(tdm__kstart_load(path, "t", 3, got, &found, e, sizeof e));
    ASSERT_TRUE(found);
    ASSERT_EQ(got[1], 20);
    ASSERT_ERR(tdm__kstart_load(path, "u", 3, got, &found, e, sizeof e),
               TDM_ERR_STATE);
    ASSERT_TRUE(strstr(e, "\"t\"") != NULL);
    ASSERT_ERR(tdm__kstart_load(path, "t", 4, got, &found, e, sizeof e),
               TDM_ERR_STATE);
    ASSERT_ERR(tdm__kstart_load(path, "t", 2, got, &found, e, sizeof e),
               TDM_ERR_STATE);
    ASSERT_TRUE(strstr(e, ":5:") != NULL);
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs("tidemark repartition start\ntopic t\n0 10\n1 x\n", f);
    fclose(f);
    ASSERT_ERR(tdm__kstart_load(path, "t", 3, got, &found, e, sizeof e),
               TDM_ERR_PARSE);
    ASSERT_TRUE(strstr(e, ":4:") != NULL);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}
