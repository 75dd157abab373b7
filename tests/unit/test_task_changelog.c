/* SPDX-License-Identifier: MIT */
/* test_task_changelog.c - a task's checkpoints in a changelog topic
 * (task_changelog.c, rules C1-C5), against librdkafka's mock cluster in
 * this process: a checkpoint published by one owner is what the next
 * owner's folder holds, blob for blob, chunked across records; stale
 * local checkpoints are removed; a publish cut short (chunks without
 * their manifest) leaves the last complete checkpoint restorable, in
 * either slot; an owner whose task was taken over is refused its
 * checkpoint and loses the local copy; a chunk the topic lost is an
 * error naming the record, never a silent partial restore; a standby's
 * warm copy cuts a take's read; the repartition start record: the first
 * one in the partition is the run's.  The
 * processes themselves are tests/kafka/tasks.sh's (CHANGELOG=1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "connect/kafka_changelog.h"
#include "connect/kafka_shuffle.h"
#include "harness.h"
#include "runtime/task_changelog.h"
#include "state/ckpt_store.h"

/* A mock cluster with topic "cl" (2 partitions); kept by its handle. */
static rd_kafka_t *mock(char *boot, size_t n)
{
    char err[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    ASSERT_TRUE(rd_kafka_conf_set(c, "test.mock.num.brokers", "1", err,
                                  sizeof err) == RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
    ASSERT_TRUE(rk != NULL);
    rd_kafka_mock_cluster_t *mc = rd_kafka_handle_mock_cluster(rk);
    ASSERT_TRUE(mc != NULL);
    ASSERT_EQ(rd_kafka_mock_topic_create(mc, "cl", 2, 1), 0);
    snprintf(boot, n, "%s", rd_kafka_mock_cluster_bootstraps(mc));
    return rk;
}

static void temp_dir(char *out, size_t n)
{
    snprintf(out, n, "/tmp/tdm-tclog-XXXXXX");
    ASSERT_TRUE(mkdtemp(out) != NULL);
}

static void remove_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

/* A test's mock cluster and two local folders (two processes'). */
typedef struct fx {
    rd_kafka_t *rk;
    char boot[256], a[64], b[64], err[600];
    int64_t epoch;
    uint64_t restored;
} fx;

static void fx_open(fx *f)
{
    memset(f, 0, sizeof *f);
    f->rk = mock(f->boot, sizeof f->boot);
    temp_dir(f->a, sizeof f->a);
    temp_dir(f->b, sizeof f->b);
}

static void fx_close(fx *f)
{
    remove_tree(f->a);
    remove_tree(f->b);
    rd_kafka_destroy(f->rk);
}

static tdm__tclog_conf conf_of(const char *boot, int task)
{
    tdm__tclog_conf c = {
        .brokers = boot, .topic = "cl", .task = task, .timeout_ms = 20000};
    return c;
}

/* Blob bytes of checkpoint @p id: @p n bytes, a pattern of (id, i). */
static unsigned char *blob_of(uint64_t id, size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    ASSERT_TRUE(p != NULL);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + id * 7 + (i >> 9));
    return p;
}

/* Blob sizes: empty, small, and over two chunks of 256 KiB. */
static const size_t sizes[3] = {0, 1000, 600 * 1024};
static const char *const names[3] = {"empty", "small", "big"};

/* Writes checkpoint @p id into the local store of @p dir. */
static void write_ckpt(const char *dir, uint64_t id, tdm__ckpt_store **st)
{
    char err[256];
    if (!*st)
        ASSERT_OK(tdm__ckpt_store_open(dir, TDM__CKPT_WRITE, NULL, NULL, st,
                                       err, sizeof err));
    tdm__ckpt_info info = {
        .id = id, .job = "j", .parallelism = 1, .key_groups = 128};
    ASSERT_OK(tdm__ckpt_begin(*st, &info));
    for (int b = 0; b < 3; b++) {
        unsigned char *p = blob_of(id, sizes[b]);
        ASSERT_OK(tdm__ckpt_put(*st, names[b], p, sizes[b]));
        free(p);
    }
    ASSERT_OK(tdm__ckpt_commit(*st));
}

/* The local store of @p dir holds exactly checkpoint @p id (0: none). */
static void expect_local(const char *dir, uint64_t id)
{
    char err[256];
    tdm__ckpt_store *st = NULL;
    uint64_t got = 0, top = 0;
    int found = 0;
    ASSERT_OK(tdm__ckpt_store_open(dir, TDM__CKPT_READ, NULL, NULL, &st, err,
                                   sizeof err));
    ASSERT_OK(tdm__ckpt_latest(st, &got, &found));
    ASSERT_OK(tdm__ckpt_highest(st, &top));
    ASSERT_EQ(found, id ? 1 : 0);
    ASSERT_EQ(top, id);
    if (id) {
        ASSERT_EQ(got, id);
        tdm__ckpt_reader *rd = NULL;
        ASSERT_OK(tdm__ckpt_reader_open(st, id, &rd));
        for (int b = 0; b < 3; b++) {
            void *p = NULL;
            size_t n = 0;
            ASSERT_OK(tdm__ckpt_get(rd, names[b], &p, &n));
            ASSERT_EQ(n, sizes[b]);
            unsigned char *want = blob_of(id, sizes[b]);
            ASSERT_TRUE(n == 0 || memcmp(p, want, n) == 0);
            free(want);
            tdm__free(p);
        }
        tdm__ckpt_reader_close(rd);
    }
    tdm__ckpt_store_close(st);
}

/* The owner tag of the last take(). */
static char last_tag[48];

/* Takes task @p task into @p dir: returns the log, the epoch and the
 * restored checkpoint in *epoch and *restored (the tag in last_tag). */
static tdm__tclog *take(const char *boot, int task, const char *dir,
                        int64_t *epoch, uint64_t *restored)
{
    char err[600];
    tdm__tclog *l = NULL;
    tdm__tclog_took took;
    tdm__tclog_conf c = conf_of(boot, task);
    tdm_err e = tdm__tclog_take(&c, dir, NULL, &l, &took, err, sizeof err);
    if (e != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "take: %s", err);
    *epoch = took.epoch;
    *restored = took.restored;
    snprintf(last_tag, sizeof last_tag, "%s", took.tag);
    return l;
}

/* The key of chunk @p i of blob @p blob in @p slot of owner @p tag. */
static const char *ckey(const char *tag, int slot, const char *blob, int i)
{
    static char k[128];
    snprintf(k, sizeof k, "b/%s/%d/%s/%d", tag, slot, blob, i);
    return k;
}

/* Publishes checkpoint @p id of @p dir, written there first. */
static tdm_err publish(tdm__tclog *l, const char *dir, uint64_t id, char *err,
                       size_t n)
{
    tdm__ckpt_store *st = NULL;
    write_ckpt(dir, id, &st);
    tdm_err e = tdm__tclog_publish(l, st, dir, id, err, n);
    tdm__ckpt_store_close(st);
    return e;
}

/* Appends raw records to task @p task's partition, as a publish cut
 * short by a crash leaves them (chunks, no manifest) or a broken topic. */
static void raw_put(const char *boot, int task, const char *key,
                    const char *val)
{
    char err[256];
    tdm__kclog *k = NULL;
    tdm__kclog_conf c = {.brokers = boot, .topic = "cl", .partition = task};
    ASSERT_OK(tdm__kclog_open(&c, &k, err, sizeof err));
    ASSERT_OK(tdm__kclog_put(k, key, strlen(key), val, val ? strlen(val) : 0,
                             err, sizeof err));
    ASSERT_OK(tdm__kclog_flush(k, err, sizeof err));
    tdm__kclog_close(k);
}

/* One owner publishes, the next restores it whole into a folder of its
 * own (its stale checkpoint removed); a fresh task restores nothing. */
TDM_TEST(changelog_moves_a_checkpoint_between_folders)
{
    fx f;
    char stale[128];
    fx_open(&f);
    /* B's folder has an old checkpoint of its own: it must go. */
    tdm__ckpt_store *st = NULL;
    write_ckpt(f.b, 40, &st);
    tdm__ckpt_store_close(st);

    tdm__tclog *la = take(f.boot, 1, f.a, &f.epoch, &f.restored);
    ASSERT_EQ(f.epoch, 1);
    ASSERT_EQ(f.restored, 0);
    expect_local(f.a, 0);
    ASSERT_OK(publish(la, f.a, 7, f.err, sizeof f.err));
    ASSERT_OK(publish(la, f.a, 8, f.err, sizeof f.err));
    tdm__tclog_close(la);

    tdm__tclog *lb = take(f.boot, 1, f.b, &f.epoch, &f.restored);
    ASSERT_EQ(f.epoch, 2);
    ASSERT_EQ(f.restored, 8);
    expect_local(f.b, 8);
    snprintf(stale, sizeof stale, "%s/chk-0000000040", f.b);
    ASSERT_TRUE(access(stale, F_OK) != 0);
    /* The new owner's first publish supersedes the old epoch's chunks;
     * a third owner restores the newest. */
    ASSERT_OK(publish(lb, f.b, 9, f.err, sizeof f.err));
    tdm__tclog_close(lb);
    tdm__tclog *lc = take(f.boot, 1, f.a, &f.epoch, &f.restored);
    ASSERT_EQ(f.epoch, 3);
    ASSERT_EQ(f.restored, 9);
    expect_local(f.a, 9);
    tdm__tclog_close(lc);

    /* Task 0's partition is untouched: a fresh task. */
    tdm__tclog *l0 = take(f.boot, 0, f.b, &f.epoch, &f.restored);
    ASSERT_EQ(f.epoch, 1);
    ASSERT_EQ(f.restored, 0);
    expect_local(f.b, 0);
    tdm__tclog_close(l0);
    fx_close(&f);
}

/* C2: chunks of a publish cut short (no manifest) overwrite neither slot
 * the last manifest names. */
TDM_TEST(changelog_publish_cut_short_keeps_the_last)
{
    fx f;
    fx_open(&f);
    char ta[48], tb[48];
    tdm__tclog *la = take(f.boot, 0, f.a, &f.epoch, &f.restored);
    snprintf(ta, sizeof ta, "%s", last_tag);
    ASSERT_OK(publish(la, f.a, 1, f.err, sizeof f.err)); /* slot 0 */
    tdm__tclog_close(la);
    /* The next publish would write slot 1: a crash left half of it. */
    raw_put(f.boot, 0, ckey(ta, 1, "small", 0), "garbage");
    raw_put(f.boot, 0, ckey(ta, 1, "big", 0), "garbage");
    tdm__tclog *lb = take(f.boot, 0, f.b, &f.epoch, &f.restored);
    snprintf(tb, sizeof tb, "%s", last_tag);
    ASSERT_EQ(f.restored, 1);
    expect_local(f.b, 1);
    ASSERT_OK(publish(lb, f.b, 2, f.err, sizeof f.err)); /* epoch 2, slot 0 */
    ASSERT_OK(publish(lb, f.b, 3, f.err, sizeof f.err)); /* slot 1 */
    tdm__tclog_close(lb);
    /* Cut short in slot 0 now: checkpoint 3 (slot 1) stays whole. */
    raw_put(f.boot, 0, ckey(tb, 0, "big", 1), "garbage");
    tdm__tclog *lc = take(f.boot, 0, f.a, &f.epoch, &f.restored);
    ASSERT_EQ(f.epoch, 3);
    ASSERT_EQ(f.restored, 3);
    expect_local(f.a, 3);
    tdm__tclog_close(lc);
    fx_close(&f);
}

/* C4: an owner whose task was taken over gets TDM_ERR_STATE for its next
 * checkpoint, whose local copy is removed; the new owner's restore is
 * the checkpoint before the takeover. */
TDM_TEST(changelog_fences_the_old_owner)
{
    fx f;
    char path[128];
    fx_open(&f);
    tdm__tclog *la = take(f.boot, 1, f.a, &f.epoch, &f.restored);
    ASSERT_OK(publish(la, f.a, 5, f.err, sizeof f.err));
    tdm__tclog *lb = take(f.boot, 1, f.b, &f.epoch, &f.restored);
    ASSERT_EQ(f.epoch, 2);
    ASSERT_EQ(f.restored, 5);
    ASSERT_ERR(publish(la, f.a, 6, f.err, sizeof f.err), TDM_ERR_STATE);
    ASSERT_TRUE(strstr(f.err, "task 1 was taken over by") != NULL);
    ASSERT_TRUE(strstr(f.err, "owner epoch 2, this process holds 1") != NULL);
    snprintf(path, sizeof path, "%s/chk-0000000006", f.a);
    ASSERT_TRUE(access(path, F_OK) != 0);
    /* And every later one. */
    ASSERT_ERR(publish(la, f.a, 7, f.err, sizeof f.err), TDM_ERR_STATE);
    tdm__tclog_close(la);
    ASSERT_OK(publish(lb, f.b, 6, f.err, sizeof f.err));
    tdm__tclog_close(lb);
    tdm__tclog *lc = take(f.boot, 1, f.a, &f.epoch, &f.restored);
    ASSERT_EQ(f.restored, 6);
    expect_local(f.a, 6);
    tdm__tclog_close(lc);
    fx_close(&f);
}

/* C3: a checkpoint refused to its writer (published after a newer
 * owner's record) is never restored, even when the newer owner stopped
 * before a checkpoint of its own. */
TDM_TEST(changelog_refused_checkpoint_is_never_restored)
{
    fx f;
    fx_open(&f);
    tdm__tclog *la = take(f.boot, 1, f.a, &f.epoch, &f.restored);
    ASSERT_OK(publish(la, f.a, 5, f.err, sizeof f.err));
    tdm__tclog *lb = take(f.boot, 1, f.b, &f.epoch, &f.restored);
    ASSERT_EQ(f.restored, 5);
    ASSERT_ERR(publish(la, f.a, 6, f.err, sizeof f.err), TDM_ERR_STATE);
    tdm__tclog_close(la);
    tdm__tclog_close(lb); /* B crashed before its first checkpoint */
    remove_tree(f.b);
    tdm__tclog *lc = take(f.boot, 1, f.b, &f.epoch, &f.restored);
    ASSERT_EQ(f.epoch, 3);
    ASSERT_EQ(f.restored, 5);
    expect_local(f.b, 5);
    tdm__tclog_close(lc);
    fx_close(&f);
}

/* A chunk the topic lost (a tombstone, a retention shorter than the
 * downtime): the take says so, naming the record, and restores the
 * checkpoint before it when that one is whole; with none whole, the take
 * fails. */
TDM_TEST(changelog_lost_chunk_falls_back_or_fails)
{
    fx f;
    char ta[48], want[200];
    fx_open(&f);
    tdm__tclog *la = take(f.boot, 0, f.a, &f.epoch, &f.restored);
    snprintf(ta, sizeof ta, "%s", last_tag);
    ASSERT_OK(publish(la, f.a, 2, f.err, sizeof f.err)); /* slot 0 */
    ASSERT_OK(publish(la, f.a, 3, f.err, sizeof f.err)); /* slot 1 */
    tdm__tclog_close(la);
    raw_put(f.boot, 0, ckey(ta, 1, "big", 2), NULL);
    tdm__tclog *lb = take(f.boot, 0, f.b, &f.epoch, &f.restored);
    ASSERT_EQ(f.restored, 2);
    expect_local(f.b, 2);
    tdm__tclog_close(lb);
    /* Both broken now. */
    raw_put(f.boot, 0, ckey(ta, 0, "small", 0), NULL);
    tdm__tclog *lc = NULL;
    tdm__tclog_took took;
    tdm__tclog_conf c = conf_of(f.boot, 0);
    remove_tree(f.b);
    ASSERT_ERR(tdm__tclog_take(&c, f.b, NULL, &lc, &took, f.err, sizeof f.err),
               TDM_ERR_PARSE);
    ASSERT_TRUE(lc == NULL);
    snprintf(want, sizeof want, "checkpoint 3 lacks record \"%s\"",
             ckey(ta, 1, "big", 2));
    if (!strstr(f.err, want))
        tdm_test_fail(__FILE__, __LINE__, "\"%s\" lacks \"%s\"", f.err, want);
    fx_close(&f);
}

/* A missing partition is named, with what the topic needs. */
TDM_TEST(changelog_missing_partition_is_named)
{
    fx f;
    fx_open(&f);
    tdm__tclog *l = NULL;
    tdm__tclog_took took;
    tdm__tclog_conf c = conf_of(f.boot, 5);
    c.timeout_ms = 3000;
    ASSERT_ERR(tdm__tclog_take(&c, f.a, NULL, &l, &took, f.err, sizeof f.err),
               TDM_ERR_IO);
    ASSERT_TRUE(strstr(f.err, "changelog topic \"cl\" has 2 partition(s); "
                              "task 5 needs one of its own") != NULL);
    fx_close(&f);
}

/* A take's progress (tdm__tclog_conf.progress): the last word. */
typedef struct seen_progress {
    int calls;
    int64_t offset, end;
} seen_progress;

static void on_progress(void *ud, int64_t offset, int64_t end)
{
    seen_progress *p = ud;
    p->calls++;
    p->offset = offset;
    p->end = end;
}

/* A standby reads the partition as it grows: a take from it reads only
 * what came after its last poll, and restores the same checkpoint as a
 * take from the start. */
TDM_TEST(changelog_standby_cuts_the_read)
{
    fx f;
    int64_t got = 0;
    tdm__tclog_took took, cold;
    tdm__tclog_standby *sb = NULL;
    fx_open(&f);
    tdm__tclog_conf c = conf_of(f.boot, 1);
    ASSERT_OK(tdm__tclog_standby_open(&c, &sb, f.err, sizeof f.err));
    ASSERT_OK(tdm__tclog_standby_poll(sb, &got, f.err, sizeof f.err));
    ASSERT_EQ(got, 0);
    tdm__tclog *la = take(f.boot, 1, f.a, &f.epoch, &f.restored);
    for (uint64_t id = 1; id <= 4; id++)
        ASSERT_OK(publish(la, f.a, id, f.err, sizeof f.err));
    ASSERT_OK(tdm__tclog_standby_poll(sb, &got, f.err, sizeof f.err));
    /* The owner record, then per checkpoint the chunks (none for the
     * empty blob, one for the small, three for the big) and the
     * manifest. */
    ASSERT_TRUE(got >= 1 + 4 * 5);
    ASSERT_OK(publish(la, f.a, 5, f.err, sizeof f.err));
    tdm__tclog_close(la);

    tdm__tclog *lb = NULL;
    ASSERT_OK(tdm__tclog_take(&c, f.b, sb, &lb, &took, f.err, sizeof f.err));
    ASSERT_EQ(took.epoch, 2);
    ASSERT_EQ(took.restored, 5);
    ASSERT_EQ(took.warm, got);
    expect_local(f.b, 5);
    tdm__tclog_close(lb);
    /* The same from the start: every record read, the progress told
     * up to the partition's end. */
    seen_progress p = {0};
    c.progress = on_progress;
    c.progress_ud = &p;
    remove_tree(f.b);
    ASSERT_OK(tdm__tclog_take(&c, f.b, NULL, &lb, &cold, f.err, sizeof f.err));
    ASSERT_TRUE(p.calls >= 2);
    ASSERT_TRUE(p.end > 0);
    ASSERT_EQ(p.offset, p.end);
    ASSERT_EQ(cold.restored, 5);
    ASSERT_EQ(cold.warm, 0);
    ASSERT_TRUE(cold.read >= took.read + got);
    ASSERT_TRUE(took.read < got);
    expect_local(f.b, 5);
    tdm__tclog_close(lb);
    fx_close(&f);
}

/* The repartition start record in partition 0: none at first; the first
 * creator's offsets win over a later creator's; another internal
 * topic's record is not this one's; a partition count that changed is
 * refused. */
TDM_TEST(changelog_start_record_first_wins)
{
    fx f;
    bool found = true;
    int64_t got[2] = {0, 0}, mine[2] = {5, 7}, late[2] = {9, 9};
    fx_open(&f);
    tdm__kclog_conf c = {.brokers = f.boot, .topic = "cl"};
    ASSERT_OK(tdm__kstart_log_get(&c, "rep", "task-1", 2, got, &found, false,
                                  f.err, sizeof f.err));
    ASSERT_TRUE(!found);
    ASSERT_OK(tdm__kstart_log_get(&c, "rep", "task-1", 2, mine, &found, true,
                                  f.err, sizeof f.err));
    ASSERT_TRUE(found);
    ASSERT_EQ(mine[0], 5);
    ASSERT_OK(tdm__kstart_log_get(&c, "rep", "task-0", 2, late, &found, true,
                                  f.err, sizeof f.err));
    ASSERT_TRUE(found);
    ASSERT_EQ(late[0], 5);
    ASSERT_EQ(late[1], 7);
    ASSERT_OK(tdm__kstart_log_get(&c, "rep", "task-3", 2, got, &found, false,
                                  f.err, sizeof f.err));
    ASSERT_TRUE(found);
    ASSERT_EQ(got[1], 7);
    ASSERT_OK(tdm__kstart_log_get(&c, "other", "task-3", 2, got, &found, false,
                                  f.err, sizeof f.err));
    ASSERT_TRUE(!found);
    ASSERT_ERR(tdm__kstart_log_get(&c, "rep", "task-3", 3, got, &found, false,
                                   f.err, sizeof f.err),
               TDM_ERR_STATE);
    ASSERT_TRUE(strstr(f.err, "2 partitions, the topic has 3 now") != NULL);
    fx_close(&f);
}
