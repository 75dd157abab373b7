/* SPDX-License-Identifier: MIT */
/* bench_changelog.c - what the changelog store costs and what a standby
 * saves (docs/scale-out.md, "The changelog store"; BENCHMARKS.md).
 *
 *   bench_changelog KB CHECKPOINTS [ROUNDS]
 *
 * Against librdkafka's mock cluster in this process (one broker, so the
 * figures are the client's and the protocol's, not a network's), per
 * round: an owner publishes CHECKPOINTS checkpoints of KB kilobytes (8
 * blobs) into a fresh partition, with a standby polling after each one
 * but the last (as the host's standby thread does once per interval);
 * then a new owner takes the task twice, into two new folders:
 *
 *   local     writing one checkpoint into a folder (the folder store's
 *             whole cost: files, fsyncs, rename), mean per checkpoint;
 *   publish   copying it into the partition and reading the partition
 *             on (tdm__tclog_publish), mean per checkpoint;
 *   cold      a take with no standby: the partition read from its start
 *             (no compaction runs in a topic's active segment, so every
 *             checkpoint since the segment rolled is read);
 *   warm      a take from the standby: only the last checkpoint read.
 *
 * The mock keeps about 5 MB per partition (older records are dropped,
 * which a take then reports as a lost chunk), so KB x CHECKPOINTS stays
 * under 4096.  Wall-clock milliseconds, and the records each take read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "runtime/task_changelog.h"
#include "state/ckpt_store.h"

#define BLOBS 8

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_changelog: %s: %s\n", what, msg);
    exit(1);
}

/* Writes checkpoint @p id of @p total bytes (8 blobs) into @p dir. */
static void write_ckpt(const char *dir, uint64_t id, size_t total,
                       const unsigned char *bytes)
{
    char err[300], name[16];
    tdm__ckpt_store *st = NULL;
    if (tdm__ckpt_store_open(dir, TDM__CKPT_WRITE, NULL, NULL, &st, err,
                             sizeof err) != TDM_OK)
        die("open", err);
    tdm__ckpt_info info = {
        .id = id, .job = "bench", .parallelism = 1, .key_groups = 128};
    if (tdm__ckpt_begin(st, &info) != TDM_OK)
        die("begin", tdm__ckpt_store_errmsg(st));
    for (int b = 0; b < BLOBS; b++) {
        snprintf(name, sizeof name, "op-%d", b);
        if (tdm__ckpt_put(st, name, bytes + b * (total / BLOBS),
                          total / BLOBS) != TDM_OK)
            die("put", tdm__ckpt_store_errmsg(st));
    }
    if (tdm__ckpt_commit(st) != TDM_OK)
        die("commit", tdm__ckpt_store_errmsg(st));
    tdm__ckpt_store_close(st);
}

static void publish(tdm__tclog *l, const char *dir, uint64_t id)
{
    char err[600];
    tdm__ckpt_store *st = NULL;
    if (tdm__ckpt_store_open(dir, TDM__CKPT_WRITE, NULL, NULL, &st, err,
                             sizeof err) != TDM_OK)
        die("open", err);
    if (tdm__tclog_publish(l, st, dir, id, err, sizeof err) != TDM_OK)
        die("publish", err);
    tdm__ckpt_store_close(st);
}

static tdm__tclog *take(const tdm__tclog_conf *c, const char *dir,
                        tdm__tclog_standby *sb, tdm__tclog_took *took)
{
    char err[600];
    tdm__tclog *l = NULL;
    if (tdm__tclog_take(c, dir, sb, &l, took, err, sizeof err) != TDM_OK)
        die("take", err);
    return l;
}

static void fresh_dir(char *out, size_t n)
{
    snprintf(out, n, "/tmp/tdm-bench-cl-XXXXXX");
    if (!mkdtemp(out))
        die("mkdtemp", "failed");
}

static void remove_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        die("rm", dir);
}

/* One round on partition @p part of a fresh topic. */
static void round_(const char *boot, int part, size_t total, int k,
                   unsigned char *bytes)
{
    char a[64], b[64], c2[64], err[600];
    tdm__tclog_took took, cold, warm;
    tdm__tclog_conf c = {.brokers = boot, .topic = "cl", .task = part};
    int64_t local = 0, pub = 0, got = 0;
    fresh_dir(a, sizeof a);
    fresh_dir(b, sizeof b);
    fresh_dir(c2, sizeof c2);
    tdm__tclog_standby *sb = NULL;
    if (tdm__tclog_standby_open(&c, &sb, err, sizeof err) != TDM_OK)
        die("standby", err);
    tdm__tclog *la = take(&c, a, NULL, &took);
    for (int i = 1; i <= k; i++) {
        bytes[(size_t)i * 4099 % total] ^= 1; /* a change */
        int64_t t0 = tdm__mono_us();
        write_ckpt(a, (uint64_t)i, total, bytes);
        int64_t t1 = tdm__mono_us();
        publish(la, a, (uint64_t)i);
        pub += tdm__mono_us() - t1;
        local += t1 - t0;
        if (i < k && tdm__tclog_standby_poll(sb, &got, err, sizeof err))
            die("poll", err);
    }
    tdm__tclog_close(la);
    int64_t t3 = tdm__mono_us();
    tdm__tclog *lb = take(&c, b, NULL, &cold);
    int64_t t4 = tdm__mono_us();
    tdm__tclog_close(lb);
    int64_t t5 = tdm__mono_us();
    tdm__tclog *lc = take(&c, c2, sb, &warm);
    int64_t t6 = tdm__mono_us();
    tdm__tclog_close(lc);
    printf("| %zu | %d | %.1f | %.1f | %.1f (%lld records) | %.1f (%lld "
           "records, %lld warm) |\n",
           total >> 10, k, local / 1e3 / k, pub / 1e3 / k, (t4 - t3) / 1e3,
           (long long)cold.read, (t6 - t5) / 1e3, (long long)warm.read,
           (long long)warm.warm);
    remove_dir(a);
    remove_dir(b);
    remove_dir(c2);
}

int main(int argc, char **argv)
{
    char err[256], boot[256];
    size_t kb = argc > 1 ? (size_t)atoi(argv[1]) : 512;
    int k = argc > 2 ? atoi(argv[2]) : 8;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    size_t total = kb << 10;
    unsigned char *bytes = malloc(total);
    if (!bytes || rounds < 1 || rounds > 16 || k < 1 || kb < 8 ||
        kb * (size_t)k > 4096)
        die("usage", "bench_changelog KB CHECKPOINTS [ROUNDS 1-16], "
                     "KB x CHECKPOINTS at most 4096 (the mock's limit)");
    for (size_t i = 0; i < total; i++)
        bytes[i] = (unsigned char)(i * 2654435761u >> 13);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", err,
                          sizeof err) != RD_KAFKA_CONF_OK)
        die("conf", err);
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk)
        die("mock", err);
    rd_kafka_mock_cluster_t *mc = rd_kafka_handle_mock_cluster(rk);
    if (rd_kafka_mock_topic_create(mc, "cl", rounds, 1) != 0)
        die("topic", "cannot create");
    snprintf(boot, sizeof boot, "%s", rd_kafka_mock_cluster_bootstraps(mc));
    printf("| KB | checkpoints | local write (ms) | publish (ms) | cold take "
           "(ms) | warm take (ms) |\n|---|---|---|---|---|---|\n");
    for (int r = 0; r < rounds; r++)
        round_(boot, r, total, k, bytes);
    rd_kafka_destroy(rk);
    free(bytes);
    return 0;
}
