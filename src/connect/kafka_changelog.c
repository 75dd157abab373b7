/* SPDX-License-Identifier: MIT */
/* kafka_changelog.c - one partition of a changelog topic as an
 * append-and-read-back log (kafka_changelog.h).
 *
 * A changelog topic is Kafka Streams' way of keeping a task's state
 * without a shared disk: the task appends keyed records to its own
 * partition, the topic is compacted (the brokers keep at least the
 * newest record of every key), and whoever runs the task next reads
 * the partition back from its first offset.  This file is only that
 * log; what the records mean (checkpoint chunks, manifests, owner
 * epochs) is runtime/task_changelog.c's.
 *
 *   writing   an idempotent producer (acks=all), so records of one
 *             partition land once each and in the order they were put;
 *             a flush waits for every acknowledgement and reports the
 *             first failure since the previous flush;
 *   reading   a consumer with no group (nothing is committed: the
 *             reader always says where it starts), assigned to the one
 *             partition, read until the end offset the partition had
 *             when the read began (partition EOF events say when a
 *             fetch reached it).
 *
 * Invariant: a record a flush reported written is seen by every read
 * that begins after that flush returned.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "connect/kafka.h"
#include "connect/kafka_changelog.h"

#define KCL_TIMEOUT_MS 60000
#define KCL_POLL_MS 100
/* How often a long read logs its progress (ms). */
#define KCL_PROGRESS_MS 2000

struct tdm__kclog {
    tdm__klog log; /* first: the rd_kafka_t opaque */
    rd_kafka_t *prod;
    rd_kafka_t *cons;
    char *topic;
    int32_t part;
    int timeout_ms;
    atomic_int failed; /* deliveries failed since the last flush */
    char first_err[256];
    atomic_flag err_taken;
    char name[300];
    void (*progress)(void *ud, int64_t offset, int64_t end);
    void *progress_ud;
};

/* The producer's delivery report (on the flushing thread). */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
    tdm__kclog *l = opaque;
    (void)rk;
    if (!m->err)
        return;
    if (!atomic_flag_test_and_set(&l->err_taken))
        snprintf(l->first_err, sizeof l->first_err, "%s",
                 rd_kafka_err2str(m->err));
    atomic_fetch_add(&l->failed, 1);
}

/* How many partitions @p topic has (-1: not found within the timeout). */
static int partitions_of(tdm__kclog *l)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *t = rd_kafka_topic_new(l->prod, l->topic, NULL);
    int n = -1;
    if (!t)
        return -1;
    if (rd_kafka_metadata(l->prod, 0, t, &md, l->timeout_ms) ==
        RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (md->topic_cnt == 1 && !md->topics[0].err)
            n = md->topics[0].partition_cnt;
        rd_kafka_metadata_destroy(md);
    }
    rd_kafka_topic_destroy(t);
    return n;
}

/* Makes the producer (P) or the reader (C) of @p l. */
static tdm_err make_client(tdm__kclog *l, const tdm__kclog_conf *c,
                           rd_kafka_type_t type, char *errbuf,
                           size_t errbuf_size)
{
    static const char *const prod_defs[] = {
        "enable.idempotence", "true", "acks", "all", "linger.ms", "5", NULL};
    /* A read runs to the end: a fetch that finds nothing new must come
     * back at once, not after librdkafka's default 500 ms wait. */
    static const char *const cons_defs[] = {"enable.auto.commit",
                                            "false",
                                            "enable.partition.eof",
                                            "true",
                                            "fetch.wait.max.ms",
                                            "10",
                                            "auto.offset.reset",
                                            "error",
                                            NULL};
    rd_kafka_conf_t *rc = NULL;
    char why[512];
    bool prod = type == RD_KAFKA_PRODUCER;
    tdm_err err = tdm__kafka_conf(c->brokers, c->props, c->n_props,
                                  prod ? prod_defs : cons_defs, l, &rc, errbuf,
                                  errbuf_size);
    if (err != TDM_OK)
        return err;
    if (prod)
        rd_kafka_conf_set_dr_msg_cb(rc, on_delivery);
    else
        (void)rd_kafka_conf_set(rc, "group.id", "tidemark-changelog-reader",
                                why, sizeof why);
    rd_kafka_t *rk = rd_kafka_new(type, rc, why, sizeof why);
    if (!rk) {
        rd_kafka_conf_destroy(rc);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL, "changelog %s: %s",
                         prod ? "producer" : "reader", why);
    }
    if (prod)
        l->prod = rk;
    else
        l->cons = rk;
    return TDM_OK;
}

tdm_err tdm__kclog_open(const tdm__kclog_conf *c, tdm__kclog **out,
                        char *errbuf, size_t errbuf_size)
{
    *out = NULL;
    if (!c->topic || !*c->topic || c->partition < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "changelog: a topic and a partition are required");
    tdm__kclog *l = tdm__calloc(1, sizeof *l);
    if (!l)
        return TDM_ERR_NOMEM;
    size_t tl = strlen(c->topic);
    l->topic = tdm__malloc(tl + 1);
    if (!l->topic) {
        tdm__kclog_close(l);
        return TDM_ERR_NOMEM;
    }
    memcpy(l->topic, c->topic, tl + 1);
    l->part = c->partition;
    l->progress = c->progress;
    l->progress_ud = c->progress_ud;
    l->timeout_ms = c->timeout_ms > 0 ? c->timeout_ms : KCL_TIMEOUT_MS;
    l->log.fn = c->log;
    l->log.ud = c->log_ud;
    snprintf(l->name, sizeof l->name, "%.200s[%d]", c->topic,
             (int)c->partition);
    snprintf(l->log.prefix, sizeof l->log.prefix, "changelog %.80s", l->name);
    tdm_err err = make_client(l, c, RD_KAFKA_PRODUCER, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = make_client(l, c, RD_KAFKA_CONSUMER, errbuf, errbuf_size);
    if (err == TDM_OK) {
        int n = partitions_of(l);
        if (n <= l->part)
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                            n < 0 ? "changelog topic \"%s\" not found: "
                                    "create it compacted "
                                    "(cleanup.policy=compact) with one "
                                    "partition per task"
                                  : "changelog topic \"%s\" has %d "
                                    "partition(s); task %d needs one of "
                                    "its own (one partition per task)",
                            l->topic, n, (int)l->part);
    }
    if (err != TDM_OK) {
        tdm__kclog_close(l);
        return err;
    }
    *out = l;
    return TDM_OK;
}

/* Assigns the reader to the partition at @p from. */
static tdm_err assign_at(tdm__kclog *l, int64_t from, char *errbuf,
                         size_t errbuf_size)
{
    rd_kafka_topic_partition_list_t *pl = rd_kafka_topic_partition_list_new(1);
    if (!pl)
        return TDM_ERR_NOMEM;
    rd_kafka_topic_partition_list_add(pl, l->topic, l->part)->offset = from;
    rd_kafka_resp_err_t re = rd_kafka_assign(l->cons, pl);
    rd_kafka_topic_partition_list_destroy(pl);
    if (re)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "changelog %s: assign: %s", l->name,
                         rd_kafka_err2str(re));
    return TDM_OK;
}

/* Hands one fetched message to @p fn; sets *pos past it. */
static int deliver(const rd_kafka_message_t *m, tdm__kclog_fn *fn, void *ud,
                   int64_t *pos)
{
    *pos = m->offset + 1;
    return fn(ud, m->offset, m->key, m->key_len, m->payload, m->len);
}

tdm_err tdm__kclog_read(tdm__kclog *l, int64_t from, tdm__kclog_fn *fn,
                        void *ud, int64_t *next, char *errbuf,
                        size_t errbuf_size)
{
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t re = rd_kafka_query_watermark_offsets(
        l->cons, l->topic, l->part, &lo, &hi, l->timeout_ms);
    if (re)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "changelog %s: end offset: %s", l->name,
                         rd_kafka_err2str(re));
    int64_t pos = from < lo ? lo : from;
    *next = pos;
    if (pos >= hi)
        return TDM_OK; /* R-KCL-1: nothing new */
    tdm_err err = assign_at(l, pos, errbuf, errbuf_size);
    int64_t deadline = tdm__mono_ms() + l->timeout_ms;
    int64_t said = tdm__mono_ms();
    bool stop = false;
    while (err == TDM_OK && pos < hi && !stop) {
        if (l->progress)
            l->progress(l->progress_ud, pos, hi);
        if (tdm__mono_ms() - said >= KCL_PROGRESS_MS) {
            /* R-KCL-3: a long read says how far it got. */
            said = tdm__mono_ms();
            tdm__kafka_logf(&l->log, "reading: offset %lld of %lld",
                            (long long)pos, (long long)hi);
        }
        if (tdm__mono_ms() > deadline) {
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                            "changelog %s: read up to offset %lld of %lld "
                            "in %d ms",
                            l->name, (long long)pos, (long long)hi,
                            l->timeout_ms);
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(l->cons, KCL_POLL_MS);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            pos = m->offset > pos ? m->offset : pos; /* R-KCL-2 */
        else if (m->err)
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                            "changelog %s: fetch: %s", l->name,
                            rd_kafka_message_errstr(m));
        else if (m->partition == l->part) {
            stop = deliver(m, fn, ud, &pos) != 0;
            /* R-KCL-4: the timeout bounds a read that stalls, not a long
             * one that moves. */
            deadline = tdm__mono_ms() + l->timeout_ms;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(l->cons, NULL);
    if (l->progress)
        l->progress(l->progress_ud, pos, hi);
    *next = pos;
    return err;
}

tdm_err tdm__kclog_put(tdm__kclog *l, const void *key, size_t klen,
                       const void *val, size_t vlen, char *errbuf,
                       size_t errbuf_size)
{
    int64_t since = -1;
    for (;;) {
        rd_kafka_resp_err_t re = rd_kafka_producev(
            l->prod, RD_KAFKA_V_TOPIC(l->topic), RD_KAFKA_V_PARTITION(l->part),
            RD_KAFKA_V_KEY((void *)key, klen),
            RD_KAFKA_V_VALUE((void *)val, val ? vlen : 0),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (!re)
            return TDM_OK;
        if (re != RD_KAFKA_RESP_ERR__QUEUE_FULL ||
            !tdm__kafka_wait_room(l->prod, &since, l->timeout_ms))
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                             "changelog %s: produce: %s", l->name,
                             rd_kafka_err2str(re));
    }
}

tdm_err tdm__kclog_flush(tdm__kclog *l, char *errbuf, size_t errbuf_size)
{
    rd_kafka_resp_err_t re = rd_kafka_flush(l->prod, l->timeout_ms);
    int failed = atomic_exchange(&l->failed, 0);
    tdm_err err = TDM_OK;
    if (failed)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "changelog %s: %d record(s) not written: %s", l->name,
                        failed, l->first_err);
    else if (re)
        err =
            tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                      "changelog %s: flush: %s", l->name, rd_kafka_err2str(re));
    atomic_flag_clear(&l->err_taken);
    return err;
}

int tdm__kclog_pending(tdm__kclog *l)
{
    return rd_kafka_outq_len(l->prod);
}

void tdm__kclog_set_progress(tdm__kclog *l,
                             void (*fn)(void *ud, int64_t offset, int64_t end),
                             void *ud)
{
    l->progress = fn;
    l->progress_ud = ud;
}

const char *tdm__kclog_name(const tdm__kclog *l)
{
    return l->name;
}

void tdm__kclog_close(tdm__kclog *l)
{
    if (!l)
        return;
    if (l->prod) {
        rd_kafka_flush(l->prod, l->timeout_ms);
        rd_kafka_destroy(l->prod);
    }
    if (l->cons) {
        rd_kafka_consumer_close(l->cons);
        rd_kafka_destroy(l->cons);
    }
    tdm__free(l->topic);
    tdm__free(l);
}
