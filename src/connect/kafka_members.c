/* SPDX-License-Identifier: MIT */
/* kafka_members.c - a process's membership in the consumer group of a
 * job run as tasks (scale_out: tasks, docs/scale-out.md).
 *
 * Kafka Streams' unit of work is a task: partition n of every input
 * topic, with the state of the keys those partitions carry.  tidemark's
 * task host (runtime/taskhost.c) runs each task as a job of its own; this
 * file is how the host learns which tasks are its own.  One consumer per
 * process subscribes to the lead topic (the first input topic by name)
 * in the job's group; partition n assigned to it means task n.  The
 * consumer reads no record: what it is assigned it pauses at once, and
 * a message a fetch brought before the pause is dropped.  The tasks' jobs
 * read the records themselves, by static assignment, from the offsets of
 * their own checkpoints; so the group's committed offsets play no part
 * in a task's reading.  The host commits each task's durable positions
 * to the group for lag tools (tdm__kmembers_commit), and before it
 * leaves it asks again for the last ones the group refused while its
 * membership was in motion (kafka_owed.c).
 *
 * The other input topics must have as many partitions as the lead topic
 * (co-partitioned, as Kafka Streams requires for a join): task n reads
 * partition n of each.  That is checked at open.
 *
 * Rebalances are served inside tdm__kmembers_poll: an assignment is
 * reported, then accepted; a revoke is reported (the host stops the task
 * before the callback returns) and only then handed back, so that the
 * next owner never starts a task this process still runs.  The protocol
 * is the configured assignor's (cooperative-sticky unless the user says
 * otherwise: only the tasks that move stop).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/kafka.h"
#include "connect/kafka_members.h"

/* How long metadata requests wait. */
#define KM_QUERY_MS 10000
/* How long leaving the group may take at close. */
#define KM_CLOSE_MS 10000
/* How long a leaving member serves the group so that its last positions
 * are committed, and how often it asks again for refused ones. */
#define KM_SETTLE_MS 10000
#define KM_RETRY_MS 500
/* How often refused commits are logged while the job runs. */
#define KM_REFUSAL_LOG_MS 10000

struct tdm__kmembers {
    tdm__klog log; /* first: the opaque's log (kafka.h) */
    rd_kafka_t *rk;
    char *lead;           /* the lead topic */
    const char *group;    /* borrowed from the configuration */
    bool coop;            /* the configured assignor is cooperative */
    tdm__kmembers_fn *fn; /* the poll's callback, for the rebalance */
    void *ud;
    tdm__kowed *owed;          /* the positions asked for and the answers */
    atomic_int refusals;       /* refused commits not logged yet */
    int64_t refusal_logged_ms; /* when they were last logged */
    char refusal_why[256];     /* the latest refusal (host's thread) */
};

/* The partition count of @p topic into *n.  TDM_OK or TDM_ERR_IO. */
static tdm_err partition_count(rd_kafka_t *rk, const char *topic, int *n,
                               char *errbuf, size_t errbuf_size)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t e;
    if (!rkt)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "topic '%s': %s",
                         topic, rd_kafka_err2str(rd_kafka_last_error()));
    e = rd_kafka_metadata(rk, 0, rkt, &md, KM_QUERY_MS);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt != 1)
        e = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
    else if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        e = md->topics[0].err;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        *n = md->topics[0].partition_cnt;
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot read the partitions of topic '%s': %s", topic,
                         rd_kafka_err2str(e));
    return TDM_OK;
}

/* The lead topic (first by name) and the common partition count of
 * every input topic.  TDM_OK, TDM_ERR_INVAL (counts differ, or no
 * topic), TDM_ERR_IO, TDM_ERR_NOMEM. */
static tdm_err shape(tdm__kmembers *m, const tdm__kmembers_conf *c,
                     int *n_tasks, char *errbuf, size_t errbuf_size)
{
    const char *lead = NULL;
    int n0 = -1;
    for (int i = 0; i < c->n_topics; i++)
        if (!lead || strcmp(c->topics[i], lead) < 0)
            lead = c->topics[i];
    if (!lead)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "scale_out: tasks needs at least one Kafka topic");
    for (int i = 0; i < c->n_topics; i++) {
        int n = 0;
        if (c->any_counts && c->topics[i] != lead)
            continue;
        tdm_err err =
            partition_count(m->rk, c->topics[i], &n, errbuf, errbuf_size);
        if (err != TDM_OK)
            return err;
        if (n0 >= 0 && n != n0)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "scale_out: tasks needs co-partitioned topics "
                             "(task n reads partition n of each): '%s' has "
                             "%d partitions, '%s' %d",
                             c->topics[0], n0, c->topics[i], n);
        n0 = n;
    }
    m->lead = tdm__strndup(lead, strlen(lead));
    *n_tasks = n0;
    return m->lead ? TDM_OK : TDM_ERR_NOMEM;
}

/* Reports every lead-topic partition of @p parts to the poll's
 * callback as @p ev. */
static void report(tdm__kmembers *m, const rd_kafka_topic_partition_list_t *l,
                   tdm__km_event ev, bool lost)
{
    for (int i = 0; i < l->cnt; i++)
        if (m->fn && strcmp(l->elems[i].topic, m->lead) == 0)
            m->fn(m->ud, l->elems[i].partition, ev, lost);
}

/* Logs the refused commits counted since the last such line, at most
 * once per KM_REFUSAL_LOG_MS unless @p now_too.  On the host's thread. */
static void log_refusals(tdm__kmembers *m, bool now_too)
{
    int64_t now = tdm__mono_ms();
    if (!now_too && now - m->refusal_logged_ms < KM_REFUSAL_LOG_MS)
        return;
    int k = atomic_exchange(&m->refusals, 0);
    if (k == 0)
        return;
    m->refusal_logged_ms = now;
    tdm__kafka_logf(&m->log,
                    "%d offset commit(s) refused by the group (monitoring "
                    "only; the next checkpoint's commit repairs them)%s%s",
                    k, m->refusal_why[0] ? ", the latest: " : "",
                    m->refusal_why);
}

/* The answers to the tasks' asynchronous commits (tdm__kmembers_commit),
 * served by the host's poll: each is recorded (kafka_owed.c); refusals
 * are counted and logged now and then. */
static void commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    tdm__kmembers *m = opaque;
    bool refused = false;
    (void)rk;
    for (int i = 0; offsets && i < offsets->cnt; i++) {
        const rd_kafka_topic_partition_t *e = &offsets->elems[i];
        rd_kafka_resp_err_t re = e->err ? e->err : err;
        bool ok = !re || re == RD_KAFKA_RESP_ERR__NO_OFFSET;
        tdm__kowed_answer(m->owed, e->topic, e->partition, e->offset, ok);
        if (ok)
            continue;
        atomic_fetch_add(&m->refusals, 1);
        snprintf(m->refusal_why, sizeof m->refusal_why, "%s[%d]: %s", e->topic,
                 (int)e->partition, rd_kafka_err2str(re));
        refused = true;
    }
    if (refused)
        log_refusals(m, false);
}

/* librdkafka's rebalance callback (inside poll or close). */
static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    tdm__kmembers *m = opaque;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        /* R-KM-1: accept, hold still (no record is read here), report. */
        if (m->coop)
            rd_kafka_error_destroy(rd_kafka_incremental_assign(rk, parts));
        else
            rd_kafka_assign(rk, parts);
        rd_kafka_pause_partitions(rk, parts);
        tdm__kafka_logf(&m->log, "assigned %d task(s)", parts->cnt);
        report(m, parts, TDM__KM_ASSIGNED, false);
        return;
    }
    /* R-KM-2: stop the tasks first (all of them asked, then each waited
     * for: the header says why), then hand them back. */
    bool lost = rd_kafka_assignment_lost(rk) != 0;
    tdm__kafka_logf(&m->log, "%s %d task(s)", lost ? "lost" : "revoked",
                    parts->cnt);
    report(m, parts, TDM__KM_LEAVING, lost);
    report(m, parts, TDM__KM_REVOKED, lost);
    if (m->coop)
        rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
    else
        rd_kafka_assign(rk, NULL);
}

/* The consumer: the host's defaults, then the user's properties. */
static tdm_err make_consumer(tdm__kmembers *m, const tdm__kmembers_conf *c,
                             char *errbuf, size_t errbuf_size)
{
    const char *defaults[] = {"group.id",
                              c->group,
                              "enable.auto.commit",
                              "false",
                              "enable.auto.offset.store",
                              "false",
                              "partition.assignment.strategy",
                              "cooperative-sticky",
                              "auto.offset.reset",
                              "latest",
                              c->instance_id ? "group.instance.id" : NULL,
                              c->instance_id,
                              NULL};
    rd_kafka_conf_t *kc = NULL;
    char why[512];
    tdm_err err = tdm__kafka_conf(c->brokers, c->props, c->n_props, defaults, m,
                                  &kc, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    rd_kafka_conf_set_rebalance_cb(kc, rebalance_cb);
    rd_kafka_conf_set_offset_commit_cb(kc, commit_cb);
    m->coop = tdm__kafka_conf_coop(kc) != 0;
    m->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, why, sizeof why);
    if (!m->rk) {
        rd_kafka_conf_destroy(kc);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot create the kafka consumer: %s", why);
    }
    rd_kafka_poll_set_consumer(m->rk);
    return TDM_OK;
}

/* Subscribes to the lead topic. */
static tdm_err subscribe(tdm__kmembers *m, char *errbuf, size_t errbuf_size)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    if (!l)
        return TDM_ERR_NOMEM;
    rd_kafka_topic_partition_list_add(l, m->lead, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(m->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot subscribe to '%s': %s", m->lead,
                         rd_kafka_err2str(e));
    return TDM_OK;
}

tdm_err tdm__kmembers_open(const tdm__kmembers_conf *c, tdm__kmembers **out,
                           int *n_tasks, char *errbuf, size_t errbuf_size)
{
    tdm__kmembers *m = tdm__calloc(1, sizeof *m);
    tdm_err err = TDM_ERR_NOMEM;
    *out = NULL;
    if (!m)
        goto fail;
    m->group = c->group;
    m->log.fn = c->log;
    m->log.ud = c->log_ud;
    m->owed = tdm__kowed_new();
    if (!m->owed)
        goto fail;
    snprintf(m->log.prefix, sizeof m->log.prefix, "task group '%s'", c->group);
    err = make_consumer(m, c, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = shape(m, c, n_tasks, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = subscribe(m, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto fail;
    *out = m;
    return TDM_OK;
fail:
    tdm__kmembers_close(m, NULL, NULL);
    return err;
}

tdm_err tdm__kmembers_poll(tdm__kmembers *m, int ms, tdm__kmembers_fn *fn,
                           void *ud, char *errbuf, size_t errbuf_size)
{
    char why[256] = "";
    m->fn = fn;
    m->ud = ud;
    rd_kafka_message_t *msg = rd_kafka_consumer_poll(m->rk, ms);
    if (msg && msg->err && msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
        msg->err != RD_KAFKA_RESP_ERR__FATAL)
        tdm__kafka_logf(&m->log, "%s", rd_kafka_message_errstr(msg));
    if (msg)
        rd_kafka_message_destroy(msg); /* R-KM-3: records are not ours */
    m->fn = NULL;
    m->ud = NULL;
    /* R-KM-4: a fatal error (a newer member with this group.instance.id
     * fenced this one) ends the membership. */
    rd_kafka_resp_err_t fatal = rd_kafka_fatal_error(m->rk, why, sizeof why);
    if (fatal == RD_KAFKA_RESP_ERR_NO_ERROR)
        return TDM_OK;
    return tdm__errf(
        errbuf, errbuf_size,
        fatal == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID ? TDM_ERR_STATE
                                                      : TDM_ERR_IO,
        "group '%s': %s (%s)", m->group, why, rd_kafka_err2name(fatal));
}

/* Serves the group for up to @p ms (rebalances, commit answers). */
static void serve(tdm__kmembers *m, int ms)
{
    rd_kafka_message_t *msg = rd_kafka_consumer_poll(m->rk, ms);
    if (msg)
        rd_kafka_message_destroy(msg); /* R-KM-3 */
}

/* Adds position @p offset of (@p topic, @p part) with its metadata to the
 * list @p ud (a tdm__kowed_fn: each refused position, or one to commit). */
static void add_pos(void *ud, const char *topic, int32_t part, int64_t offset,
                    const char *meta)
{
    rd_kafka_topic_partition_t *e =
        rd_kafka_topic_partition_list_add(ud, topic, part);
    e->offset = offset;
    e->metadata = strdup(meta); /* librdkafka frees it with the list */
    e->metadata_size = e->metadata ? strlen(meta) : 0;
}

/* Asks again for every refused position the group does not already hold
 * (at that offset or a later one: a newer owner's, kafka_owed.c). */
static void ask_again(tdm__kmembers *m)
{
    rd_kafka_topic_partition_list_t *want =
        rd_kafka_topic_partition_list_new(8);
    rd_kafka_topic_partition_list_t *held =
        rd_kafka_topic_partition_list_new(8);
    if (want && held) {
        tdm__kowed_refused(m->owed, add_pos, want);
        for (int i = 0; i < want->cnt; i++)
            rd_kafka_topic_partition_list_add(held, want->elems[i].topic,
                                              want->elems[i].partition);
    }
    /* R-KM-5: what the group holds now, read before asking. */
    if (want && held && want->cnt > 0 &&
        rd_kafka_committed(m->rk, held, KM_QUERY_MS) == 0) {
        for (int i = 0; i < held->cnt; i++) {
            const rd_kafka_topic_partition_t *h = &held->elems[i];
            if (!h->err && h->offset >= 0)
                tdm__kowed_held(m->owed, h->topic, h->partition, h->offset);
            if (h->err || h->offset < want->elems[i].offset)
                tdm__kmembers_commit(m, h->topic, h->partition,
                                     want->elems[i].offset,
                                     want->elems[i].metadata);
        }
    }
    if (want)
        rd_kafka_topic_partition_list_destroy(want);
    if (held)
        rd_kafka_topic_partition_list_destroy(held);
}

/* The tasks' last commits (their final checkpoints') are answered, and
 * the refused ones asked again while the rebalance that refused them
 * ends, before the member leaves: for up to KM_SETTLE_MS. */
static void settle(tdm__kmembers *m)
{
    int64_t end = tdm__mono_ms() + KM_SETTLE_MS, retry_at = 0;
    int asked = 0, refused = 0;
    for (;;) {
        tdm__kowed_count(m->owed, &asked, &refused);
        if (asked + refused == 0 || tdm__mono_ms() >= end)
            break;
        if (asked == 0 && tdm__mono_ms() >= retry_at) {
            ask_again(m);
            retry_at = tdm__mono_ms() + KM_RETRY_MS;
        }
        serve(m, 50);
    }
    log_refusals(m, true);
    if (asked + refused > 0)
        tdm__kafka_logf(&m->log,
                        "left the group with %d position(s) not committed "
                        "(monitoring only: lag tools show them behind until "
                        "the tasks' next owner commits)",
                        asked + refused);
}

void tdm__kmembers_close(tdm__kmembers *m, tdm__kmembers_fn *fn, void *ud)
{
    if (!m)
        return;
    m->fn = fn;
    m->ud = ud;
    if (m->rk && m->owed)
        settle(m);
    if (m->rk &&
        !tdm__kafka_close_consumer(m->rk, rebalance_cb, m, KM_CLOSE_MS))
        tdm__kafka_logf(&m->log, "left the group without a clean close");
    tdm__kowed_free(m->owed);
    tdm__free(m->lead);
    tdm__free(m);
}

/* Commits a task's position on its behalf (see the header). */
void tdm__kmembers_commit(tdm__kmembers *m, const char *topic, int32_t part,
                          int64_t offset, const char *meta)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    if (!l)
        return;
    add_pos(l, topic, part, offset, meta);
    tdm__kowed_ask(m->owed, topic, part, offset, meta);
    rd_kafka_resp_err_t re = rd_kafka_commit(m->rk, l, 1);
    rd_kafka_topic_partition_list_destroy(l);
    if (re != RD_KAFKA_RESP_ERR_NO_ERROR) {
        /* Refused before it left: counted, logged by the next answer. */
        tdm__kowed_answer(m->owed, topic, part, offset, false);
        atomic_fetch_add(&m->refusals, 1);
    }
}
