/* SPDX-License-Identifier: MIT */
/* kafka_shuffle.c - repartition through an internal Kafka topic: the
 * writer produces rows keyed by the job key plus watermark markers into
 * every partition; the reader consumes its share of the topic and turns
 * the markers into per-partition watermarks (minimum over the writers it
 * heard from, without the idle and the silent ones), as Flink's Kafka
 * shuffle carries watermarks.  Single-threaded: one source subtask owns it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "connect/kafka.h"
#include "connect/kafka_shuffle.h"
#include "runtime/rt.h"
#include "state/ckpt_codec.h"
#include "state/state.h"
#include "testhooks.h"

/* ====================================================================== */
/* Writers' watermarks per partition                                       */
/* ====================================================================== */

/* The last marker of one writer on one partition. */
typedef struct kwm_writer {
    char *id;
    size_t len;
    tdm_time_ms wm;    /* highest watermark it sent */
    tdm_time_ms heard; /* reader time of its last marker */
    int idle;
} kwm_writer;

/* One partition: its writers and what was last reported for it. */
typedef struct kwm_part {
    kwm_writer *w;
    int n, cap;
    tdm_time_ms out_wm;
    int out_idle;
} kwm_part;

struct tdm__kwm {
    tdm_time_ms timeout;
    int expected;
    kwm_part *p;
    int n;
};

/* Creates the table (see the header). */
tdm__kwm *tdm__kwm_new(tdm_time_ms writer_timeout_ms, int writers_expected)
{
    tdm__kwm *t = tdm__calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->timeout = writer_timeout_ms > 0 ? writer_timeout_ms : 10000;
    t->expected = writers_expected > 0 ? writers_expected : 0;
    return t;
}

/* Grows the partition array to hold index @p p. */
static tdm_err kwm_reserve(tdm__kwm *t, int p)
{
    if (p < t->n)
        return TDM_OK;
    int n = t->n ? t->n : 4;
    while (n <= p)
        n *= 2;
    kwm_part *np = tdm__realloc(t->p, (size_t)n * sizeof *np);
    if (!np)
        return TDM_ERR_NOMEM;
    for (int i = t->n; i < n; i++) {
        memset(&np[i], 0, sizeof np[i]);
        np[i].out_wm = TDM_TIME_MIN;
    }
    t->p = np;
    t->n = n;
    return TDM_OK;
}

/* Records a marker (see the header). */
tdm_err tdm__kwm_marker(tdm__kwm *t, int p, const char *writer, size_t len,
                        tdm_time_ms wm, int idle, tdm_time_ms now)
{
    if (p < 0)
        return TDM_ERR_INVAL;
    if (kwm_reserve(t, p) != TDM_OK)
        return TDM_ERR_NOMEM;
    kwm_part *part = &t->p[p];
    kwm_writer *w = NULL;
    for (int i = 0; i < part->n; i++)
        if (part->w[i].len == len && !memcmp(part->w[i].id, writer, len)) {
            w = &part->w[i];
            break;
        }
    if (!w) {
        if (part->n == part->cap) {
            int cap = part->cap ? 2 * part->cap : 4;
            kwm_writer *nw = tdm__realloc(part->w, (size_t)cap * sizeof *nw);
            if (!nw)
                return TDM_ERR_NOMEM;
            part->w = nw;
            part->cap = cap;
        }
        char *id = tdm__malloc(len + 1);
        if (!id)
            return TDM_ERR_NOMEM;
        memcpy(id, writer, len);
        id[len] = 0;
        w = &part->w[part->n++];
        w->id = id;
        w->len = len;
        w->wm = wm;
    }
    /* A writer's watermark never goes back: a writer that lost every
     * input and got new ones restarts its generators at MIN, but what it
     * promised before still holds for the rows it already wrote. */
    if (wm > w->wm)
        w->wm = wm;
    w->idle = idle != 0;
    w->heard = now;
    return TDM_OK;
}

/* Computes partition @p p's state at @p now without recording it as
 * reported (p < t->n). */
static void kwm_compute(const tdm__kwm *t, int p, tdm_time_ms now,
                        tdm_time_ms *wm, int *idle)
{
    const kwm_part *part = &t->p[p];
    tdm_time_ms w = part->out_wm;
    int id = part->out_idle;
    if (part->n > 0 && part->n >= t->expected) {
        tdm_time_ms lo = TDM_TIME_MAX, hi = TDM_TIME_MIN;
        int counted = 0;
        for (int i = 0; i < part->n; i++) {
            const kwm_writer *x = &part->w[i];
            if (x->wm > hi)
                hi = x->wm;
            /* Silent: no marker for the whole timeout. */
            if (x->idle || tdm__time_sub_sat(now, x->heard) >= t->timeout)
                continue;
            counted++;
            if (x->wm < lo)
                lo = x->wm;
        }
        if (counted) {
            id = 0;
            if (lo > w)
                w = lo;
        } else {
            /* Every writer idle or silent: as the reader's all-idle rule,
             * the highest watermark is flushed, then the partition is
             * idle (it stops holding the subtask's minimum). */
            id = 1;
            if (hi > w)
                w = hi;
        }
    }
    *wm = w;
    *idle = id;
}

/* Combines partition @p p's writers at time @p now (see the header). */
int tdm__kwm_get(tdm__kwm *t, int p, tdm_time_ms now, tdm_time_ms *wm,
                 int *idle)
{
    if (p < 0 || p >= t->n) {
        *wm = TDM_TIME_MIN;
        *idle = 0;
        return 0;
    }
    kwm_part *part = &t->p[p];
    kwm_compute(t, p, now, wm, idle);
    int changed = *wm != part->out_wm || *idle != part->out_idle;
    part->out_wm = *wm;
    part->out_idle = *idle;
    return changed;
}

/* Partition @p p's state at @p now, not recorded as reported: the
 * watermark TDM_TIME_MIN for an unknown partition. */
static tdm_time_ms kwm_peek(const tdm__kwm *t, int p, tdm_time_ms now,
                            int *idle)
{
    tdm_time_ms w = TDM_TIME_MIN;
    *idle = 0;
    if (p >= 0 && p < t->n)
        kwm_compute(t, p, now, &w, idle);
    return w;
}

/* Forgets the writers of @p p (see the header). */
void tdm__kwm_reset(tdm__kwm *t, int p)
{
    if (p < 0 || p >= t->n)
        return;
    kwm_part *part = &t->p[p];
    for (int i = 0; i < part->n; i++)
        tdm__free(part->w[i].id);
    part->n = 0;
    part->out_idle = 0;
}

/* Distinct writers heard from on @p p. */
int tdm__kwm_writers(const tdm__kwm *t, int p)
{
    return p >= 0 && p < t->n ? t->p[p].n : 0;
}

/* Writer @p i of partition @p p, for a checkpoint (see the header). */
bool tdm__kwm_writer_at(const tdm__kwm *t, int p, int i, const char **id,
                        size_t *len, tdm_time_ms *wm, int *idle)
{
    if (p < 0 || p >= t->n || i < 0 || i >= t->p[p].n)
        return false;
    const kwm_writer *w = &t->p[p].w[i];
    *id = w->id;
    *len = w->len;
    *wm = w->wm;
    *idle = w->idle;
    return true;
}

/* Frees the table. */
void tdm__kwm_free(tdm__kwm *t)
{
    if (!t)
        return;
    for (int p = 0; p < t->n; p++) {
        tdm__kwm_reset(t, p);
        tdm__free(t->p[p].w);
    }
    tdm__free(t->p);
    tdm__free(t);
}

/* ====================================================================== */
/* The shuffle                                                             */
/* ====================================================================== */

#define SNAP_RING 64

/* A partition of the internal topic as this reader knows it (by local
 * index; indices are never reused). */
typedef struct lpart {
    int32_t part;      /* partition of the internal topic */
    int live;          /* assigned now */
    int64_t next;      /* offset after the last message consumed, -1 */
    tdm_time_ms floor; /* from the commit metadata */
    int fin_pending;   /* revoked: report finished at the next poll */
    tdm__kseen *seen;  /* a task's reader: offsets taken per origin */
    char name[96];
} lpart;

/* Positions under a mark (mark/commit, as the Kafka source does). */
typedef struct snap {
    tdm_time_ms wm;
    int n;
    int64_t *next;   /* n entries, -1: nothing consumed */
    tdm_time_ms *hz; /* n entries */
} snap;

struct tdm__kshuffle {
    tdm__klog log; /* first: the opaque of both clients (kafka.h) */
    char *topic, *group, writer_id[160];
    const tdm__schema *schema;
    int *key_idx, n_key;
    rd_kafka_t *prod, *cons;
    int coop;    /* the reader's assignor is cooperative */
    int n_parts; /* partitions of the internal topic */
    tdm_clock *clk;
    int own_clk;
    tdm_time_ms marker_interval;
    /* writer */
    tdm_wm_strategy *own_strat;
    tdm_reader *wr;
    int *in_split; /* input index -> writer split, -1 */
    uint8_t *in_live;
    int n_in, cap_in, live_in;
    int in_known; /* the input's assignment is known (assigned/written) */
    tdm_time_ms w_wm;
    int w_idle, w_dirty, w_ended;
    tdm_time_ms last_marker;
    int delivery_failed;
    /* reader */
    tdm__kwm *kwm;
    lpart *lp;
    int n_lp, cap_lp;
    int n_counted; /* n_lp when the runtime last asked */
    int n_revoked; /* partitions revoked so far */
    int *local_of; /* internal partition -> live local index, -1 */
    tdm__keybuf kb, vb;
    snap ring[SNAP_RING];
    int ring_head, ring_n;
    int have_commit; /* the last commit()'s arguments, for hand-overs */
    tdm_time_ms last_proc, last_done;
    int64_t bad_values;
    /* A task's shuffle (conf.task >= 0): its one internal partition is
     * assigned by the first poll, after the restore. */
    int task, tasks;
    int assign_pending;
    int64_t replays_dropped;
    char err[256];
};

/* Delivery reports: count failures (served by rd_kafka_poll/flush on the
 * subtask's thread). */
static void rk_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    tdm__kshuffle *sh = opaque;
    if (m->err && !sh->delivery_failed++)
        snprintf(sh->err, sizeof sh->err, "repartition: delivery failed: %s",
                 rd_kafka_err2str(m->err));
}

/* The floor in commit metadata "tdm1 wm=<ms>" (kafka.h), TDM_TIME_MIN when
 * absent or not tidemark's. */
static tdm_time_ms meta_floor(const void *p, size_t n)
{
    tdm_time_ms wm;
    tdm__kafka_meta_parse(p, n, &wm, NULL);
    return wm;
}

/* Allocates a local index for internal partition @p part. */
static int add_local(tdm__kshuffle *sh, int32_t part, tdm_time_ms floor)
{
    if (sh->n_lp == sh->cap_lp) {
        int cap = sh->cap_lp ? 2 * sh->cap_lp : 8;
        lpart *np = tdm__realloc(sh->lp, (size_t)cap * sizeof *np);
        if (!np)
            return -1;
        sh->lp = np;
        sh->cap_lp = cap;
    }
    lpart *l = &sh->lp[sh->n_lp];
    memset(l, 0, sizeof *l);
    l->part = part;
    l->live = 1;
    l->next = -1;
    l->floor = floor;
    snprintf(l->name, sizeof l->name, "%s[%d]", sh->topic, (int)part);
    sh->local_of[part] = sh->n_lp;
    return sh->n_lp++;
}

static void commit_revoked(tdm__kshuffle *sh, int li);

/* Consumer rebalances (inside rd_kafka_consumer_poll).  Cooperative:
 * only the partitions that move are listed; eager: everything. */
static void rk_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *op)
{
    tdm__kshuffle *sh = op;
    int coop = sh->coop;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        /* Committed offsets and their floors; -1001 (none) leaves the
         * start to auto.offset.reset. */
        rd_kafka_committed(rk, parts, 5000);
        for (int i = 0; i < parts->cnt; i++) {
            rd_kafka_topic_partition_t *e = &parts->elems[i];
            if (e->partition < 0 || e->partition >= sh->n_parts ||
                sh->local_of[e->partition] >= 0)
                continue;
            tdm_time_ms fl = meta_floor(e->metadata, e->metadata_size);
            int li = add_local(sh, e->partition, fl);
            if (li < 0)
                snprintf(sh->err, sizeof sh->err, "out of memory");
            else
                tdm__kafka_logf(&sh->log, "assigned %s (local %d)",
                                sh->lp[li].name, li);
        }
        if (coop) {
            rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
            if (e)
                rd_kafka_error_destroy(e);
        } else {
            rd_kafka_assign(rk, parts);
        }
        return;
    }
    for (int i = 0; i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p < 0 || p >= sh->n_parts || sh->local_of[p] < 0)
            continue;
        lpart *l = &sh->lp[sh->local_of[p]];
        commit_revoked(sh, sh->local_of[p]);
        sh->n_revoked++;
        l->live = 0;
        l->fin_pending = 1;
        sh->local_of[p] = -1;
        tdm__kafka_logf(&sh->log, "revoked %s", l->name);
    }
    if (coop) {
        rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
        if (e)
            rd_kafka_error_destroy(e);
    } else {
        rd_kafka_assign(rk, NULL);
    }
}

/* The writer's generator output: remember it for the next markers. */
static void writer_emit(void *ud, const tdm_event *ev)
{
    tdm__kshuffle *sh = ud;
    switch (tdm_event_get_type(ev)) {
    case TDM_EVENT_WATERMARK:
        sh->w_wm = tdm_event_time(ev);
        sh->w_dirty = 1;
        break;
    case TDM_EVENT_STATUS:
        sh->w_idle = tdm_event_is_idle(ev);
        sh->w_dirty = 1;
        break;
    default:
        break;
    }
}

/* The number of partitions of the internal topic, waiting for metadata
 * up to 10 s (the topic may just have been created). */
static int topic_partitions(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    int n = -1;
    if (!t)
        return -1;
    for (int tries = 0; tries < 20 && n < 0; tries++) {
        const struct rd_kafka_metadata *md = NULL;
        if (rd_kafka_metadata(rk, 0, t, &md, 500) ==
                RD_KAFKA_RESP_ERR_NO_ERROR &&
            md) {
            if (md->topic_cnt == 1 && !md->topics[0].err &&
                md->topics[0].partition_cnt > 0)
                n = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
        }
        if (n < 0) {
            struct timespec ts = {0, 500 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    rd_kafka_topic_destroy(t);
    return n;
}

/* The end offsets of every internal partition into @p offs. */
static tdm_err end_offsets(tdm__kshuffle *sh, int64_t *offs, char *errbuf,
                           size_t errbuf_size)
{
    for (int32_t p = 0; p < sh->n_parts; p++) {
        int64_t lo, hi;
        rd_kafka_resp_err_t re = rd_kafka_query_watermark_offsets(
            sh->cons, sh->topic, p, &lo, &hi, 10000);
        if (re != RD_KAFKA_RESP_ERR_NO_ERROR)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                             "repartition: end offset of %s[%d]: %s", sh->topic,
                             (int)p, rd_kafka_err2str(re));
        offs[p] = hi;
    }
    return TDM_OK;
}

/* The run's start offsets from the start file, or the changelog's start
 * record (checkpoint.store: changelog); @p create publishes @p offs
 * first, and either way the run's (the winner's) are loaded. */
static tdm_err start_get(tdm__kshuffle *sh, const tdm__kshuffle_conf *c,
                         int64_t *offs, bool *found, bool create, char *errbuf,
                         size_t errbuf_size)
{
    if (c->start_file && create)
        return tdm__kstart_publish(c->start_file, sh->topic, sh->n_parts, offs,
                                   errbuf, errbuf_size);
    if (c->start_file)
        return tdm__kstart_load(c->start_file, sh->topic, sh->n_parts, offs,
                                found, errbuf, errbuf_size);
    tdm__kclog_conf lc = {.brokers = c->brokers,
                          .props = c->props,
                          .n_props = c->n_props,
                          .topic = c->start_changelog,
                          .log = c->log,
                          .log_ud = c->log_ud};
    return tdm__kstart_log_get(&lc, sh->topic, sh->writer_id, sh->n_parts, offs,
                               found, create, errbuf, errbuf_size);
}

/* A task's reader: the internal topic has a partition per task, and the
 * task's partition (local index 0) starts where the run's start file
 * says (a restore moves it); assigned by the first poll. */
static tdm_err task_reader(tdm__kshuffle *sh, const tdm__kshuffle_conf *c,
                           char *errbuf, size_t errbuf_size)
{
    bool found = false;
    if (sh->n_parts != sh->tasks || sh->task >= sh->n_parts ||
        (!c->start_file && !c->start_changelog))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "repartition: topic \"%s\" has %d partitions; "
                         "a job of %d tasks needs %d (one per task: "
                         "re-create it)",
                         sh->topic, sh->n_parts, sh->tasks, sh->tasks);
    int64_t *offs = tdm__calloc((size_t)sh->n_parts, sizeof *offs);
    if (!offs)
        return TDM_ERR_NOMEM;
    tdm_err err = start_get(sh, c, offs, &found, false, errbuf, errbuf_size);
    if (err == TDM_OK && !found) {
        err = end_offsets(sh, offs, errbuf, errbuf_size);
        if (err == TDM_OK)
            err = start_get(sh, c, offs, &found, true, errbuf, errbuf_size);
    }
    int li = err == TDM_OK ? add_local(sh, sh->task, TDM_TIME_MIN) : -1;
    if (err == TDM_OK && (li < 0 || !(sh->lp[li].seen = tdm__kseen_new())))
        err = TDM_ERR_NOMEM;
    if (err == TDM_OK) {
        sh->lp[li].next = offs[sh->task];
        sh->assign_pending = 1;
        tdm__kafka_logf(&sh->log,
                        "task writer %s -> %s (%d partitions), "
                        "reader of %s",
                        sh->writer_id, sh->topic, sh->n_parts, sh->lp[li].name);
    }
    tdm__free(offs);
    return err;
}

/* The first poll of a task's reader: its partition from its position. */
static tdm_err task_assign(tdm__kshuffle *sh)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    if (!l)
        return TDM_ERR_NOMEM;
    rd_kafka_topic_partition_list_add(l, sh->topic, sh->lp[0].part)->offset =
        sh->lp[0].next;
    rd_kafka_resp_err_t re = rd_kafka_assign(sh->cons, l);
    rd_kafka_topic_partition_list_destroy(l);
    sh->assign_pending = 0;
    if (re == RD_KAFKA_RESP_ERR_NO_ERROR)
        return TDM_OK;
    snprintf(sh->err, sizeof sh->err, "repartition: assign %s: %s",
             sh->lp[0].name, rd_kafka_err2str(re));
    return TDM_ERR_IO;
}

/* Opens the writer and the reader (see the header). */
tdm_err tdm__kshuffle_open(const tdm__kshuffle_conf *c, int index, int count,
                           tdm__kshuffle **out, char *errbuf,
                           size_t errbuf_size)
{
    (void)count;
    char e[512] = "";
    tdm_err err = TDM_OK;
    rd_kafka_conf_t *rc = NULL;
    *out = NULL;
    if (!c->group || !*c->group || !c->schema || !c->key_idx || c->n_key <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "repartition: %s is required",
                         !c->group || !*c->group ? "group"
                         : !c->schema            ? "schema"
                                                 : "key");
    tdm__kshuffle *sh = tdm__calloc(1, sizeof *sh);
    if (!sh)
        return TDM_ERR_NOMEM;
    sh->log.fn = c->log;
    sh->log.ud = c->log_ud;
    snprintf(sh->log.prefix, sizeof sh->log.prefix, "repartition");
    sh->schema = c->schema;
    sh->w_wm = TDM_TIME_MIN;
    sh->last_marker = TDM_TIME_MIN;
    sh->marker_interval = c->marker_interval > 0 ? c->marker_interval : 200;
    sh->task = c->tasked ? c->task : -1;
    sh->tasks = c->tasks;
    sh->group = tdm__malloc(strlen(c->group) + 1);
    size_t tl = c->topic ? strlen(c->topic) : strlen(c->group) + 12;
    sh->topic = tdm__malloc(tl + 1);
    sh->key_idx = tdm__malloc((size_t)c->n_key * sizeof(int));
    /* A task's writers hold every partition while they move: no
     * timeout, and all of them are waited for. */
    sh->kwm = sh->task >= 0
                  ? tdm__kwm_new(TDM_TIME_MAX, c->tasks)
                  : tdm__kwm_new(c->writer_timeout, c->writers_expected);
    if (!sh->group || !sh->topic || !sh->key_idx || !sh->kwm) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    strcpy(sh->group, c->group);
    if (c->topic)
        strcpy(sh->topic, c->topic);
    else
        snprintf(sh->topic, tl + 1, "%s-repartition", c->group);
    memcpy(sh->key_idx, c->key_idx, (size_t)c->n_key * sizeof(int));
    sh->n_key = c->n_key;
    if (c->tasked && (c->task < 0 || c->tasks <= c->task)) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "repartition: task %d of %d", c->task, c->tasks);
        goto fail_msg;
    }
    if (sh->task >= 0) {
        /* R-KS-1: a task writes as itself, whoever runs it. */
        snprintf(sh->writer_id, sizeof sh->writer_id, "task-%d", sh->task);
    } else if (c->writer_id) {
        snprintf(sh->writer_id, sizeof sh->writer_id, "%s", c->writer_id);
    } else {
        char host[64] = "host";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = 0;
        snprintf(sh->writer_id, sizeof sh->writer_id, "%s-%ld-%d", host,
                 (long)getpid(), index);
    }

    /* Clock and the writer's generators. */
    if (c->clock) {
        sh->clk = c->clock;
    } else {
        if ((err = tdm_clock_new_monotonic(&sh->clk)) != TDM_OK)
            goto fail;
        sh->own_clk = 1;
    }
    const tdm_wm_strategy *st = c->strategy;
    if (!st) {
        err =
            tdm_wm_strategy_new(TDM_WM_BOUNDED, 0, &sh->own_strat, e, sizeof e);
        if (err == TDM_OK)
            err = tdm_wm_strategy_set_interval(sh->own_strat, 200, e, sizeof e);
        if (err != TDM_OK)
            goto fail;
        st = sh->own_strat;
    }
    if ((err = tdm_reader_new(0, st, sh->clk, writer_emit, sh, &sh->wr)) !=
        TDM_OK)
        goto fail;

    /* Producer: idempotent, rows and markers in order per partition. */
    static const char *const prod_defs[] = {
        "enable.idempotence", "true", "acks", "all", "linger.ms", "5", NULL};
    if ((err = tdm__kafka_conf(c->brokers, c->props, c->n_props, prod_defs, sh,
                               &rc, errbuf, errbuf_size)) != TDM_OK)
        goto fail_msg;
    rd_kafka_conf_set_dr_msg_cb(rc, rk_dr);
    sh->prod = rd_kafka_new(RD_KAFKA_PRODUCER, rc, e, sizeof e);
    if (!sh->prod) {
        rd_kafka_conf_destroy(rc);
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "repartition producer: %s", e);
        goto fail_msg;
    }
    sh->n_parts = topic_partitions(sh->prod, sh->topic);
    if (sh->n_parts <= 0) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "repartition: topic \"%s\" not found (create it "
                        "with as many partitions as the job needs)",
                        sh->topic);
        goto fail_msg;
    }
    sh->local_of = tdm__malloc((size_t)sh->n_parts * sizeof(int));
    if (!sh->local_of) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    for (int i = 0; i < sh->n_parts; i++)
        sh->local_of[i] = -1;

    /* Reader: a member of "<G>-shuffle". */
    char rgroup[512];
    snprintf(rgroup, sizeof rgroup, "%s-shuffle", c->group);
    const char *const cons_defs[] = {"group.id",
                                     rgroup,
                                     "enable.auto.commit",
                                     "false",
                                     "enable.auto.offset.store",
                                     "false",
                                     "auto.offset.reset",
                                     "earliest",
                                     "partition.assignment.strategy",
                                     "cooperative-sticky",
                                     NULL};
    rc = NULL;
    if ((err = tdm__kafka_conf(c->brokers, c->props, c->n_props, cons_defs, sh,
                               &rc, errbuf, errbuf_size)) != TDM_OK)
        goto fail_msg;
    rd_kafka_conf_set_rebalance_cb(rc, rk_rebalance);
    sh->coop = tdm__kafka_conf_coop(rc);
    sh->cons = rd_kafka_new(RD_KAFKA_CONSUMER, rc, e, sizeof e);
    if (!sh->cons) {
        rd_kafka_conf_destroy(rc);
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "repartition consumer: %s", e);
        goto fail_msg;
    }
    rd_kafka_poll_set_consumer(sh->cons);
    if (sh->task >= 0) {
        if ((err = task_reader(sh, c, errbuf, errbuf_size)) != TDM_OK)
            goto fail_msg;
        *out = sh;
        return TDM_OK;
    }
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    if (!sub) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    rd_kafka_topic_partition_list_add(sub, sh->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t re = rd_kafka_subscribe(sh->cons, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (re) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "repartition: subscribe to \"%s\": %s", sh->topic,
                        rd_kafka_err2str(re));
        goto fail_msg;
    }
    tdm__kafka_logf(&sh->log,
                    "writer %s -> %s (%d partitions), reader "
                    "group %s",
                    sh->writer_id, sh->topic, sh->n_parts, rgroup);
    *out = sh;
    return TDM_OK;

fail:
    if (err == TDM_ERR_NOMEM)
        tdm__errf(errbuf, errbuf_size, err, "repartition: out of memory");
    else
        tdm__errf(errbuf, errbuf_size, err, "repartition: %s",
                  e[0] ? e : tdm_strerror(err));
fail_msg:
    tdm__kshuffle_close(sh);
    return err;
}

/* ---- Writer ---- */

/* Produces one message, serving the queue while it is full (30 s). */
static tdm_err produce(tdm__kshuffle *sh, int32_t part, const void *key,
                       size_t klen, const void *val, size_t vlen,
                       tdm_time_ms ts, rd_kafka_headers_t *h)
{
    int64_t kts = ts >= 0 && ts != TDM_TIME_MAX ? ts : 0;
    int64_t since = -1;
    for (;;) {
        rd_kafka_resp_err_t re;
        if (h)
            re = rd_kafka_producev(
                sh->prod, RD_KAFKA_V_TOPIC(sh->topic),
                RD_KAFKA_V_PARTITION(part), RD_KAFKA_V_KEY(key, klen),
                RD_KAFKA_V_VALUE((void *)val, vlen), RD_KAFKA_V_TIMESTAMP(kts),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
                RD_KAFKA_V_END);
        else
            re = rd_kafka_producev(
                sh->prod, RD_KAFKA_V_TOPIC(sh->topic),
                RD_KAFKA_V_PARTITION(part), RD_KAFKA_V_KEY(key, klen),
                RD_KAFKA_V_VALUE((void *)val, vlen), RD_KAFKA_V_TIMESTAMP(kts),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (re == RD_KAFKA_RESP_ERR_NO_ERROR)
            return TDM_OK;
        if (re != RD_KAFKA_RESP_ERR__QUEUE_FULL ||
            !tdm__kafka_wait_room(sh->prod, &since, 30000)) {
            if (h)
                rd_kafka_headers_destroy(h);
            snprintf(sh->err, sizeof sh->err,
                     "repartition: produce to "
                     "%s[%d]: %s",
                     sh->topic, (int)part, rd_kafka_err2str(re));
            return TDM_ERR_IO;
        }
    }
}

/* The writer split of input @p input, added on first sight. */
static tdm_err in_split(tdm__kshuffle *sh, int input, int *split)
{
    if (input < 0)
        return TDM_ERR_INVAL;
    if (input >= sh->cap_in) {
        int cap = sh->cap_in ? sh->cap_in : 8;
        while (cap <= input)
            cap *= 2;
        int *ns = tdm__realloc(sh->in_split, (size_t)cap * sizeof *ns);
        if (!ns)
            return TDM_ERR_NOMEM;
        sh->in_split = ns;
        uint8_t *nl = tdm__realloc(sh->in_live, (size_t)cap);
        if (!nl)
            return TDM_ERR_NOMEM;
        sh->in_live = nl;
        for (int i = sh->cap_in; i < cap; i++) {
            ns[i] = -1;
            nl[i] = 0;
        }
        sh->cap_in = cap;
    }
    if (sh->in_split[input] < 0) {
        tdm_err err = tdm_reader_add_split(sh->wr, &sh->in_split[input]);
        if (err != TDM_OK)
            return err;
        sh->in_live[input] = 1;
        sh->live_in++;
        sh->w_dirty = 1;
    }
    sh->in_known = 1;
    *split = sh->in_split[input];
    return TDM_OK;
}

/* A task's row headers: its origin and offset (NULL elsewhere; on
 * failure *err is set). */
static rd_kafka_headers_t *row_headers(const tdm__kshuffle *sh,
                                       const char *origin, int64_t offset,
                                       tdm_err *err)
{
    char off[32];
    *err = TDM_OK;
    if (sh->task < 0)
        return NULL;
    rd_kafka_headers_t *h = rd_kafka_headers_new(2);
    if (!h || !origin) {
        if (h)
            rd_kafka_headers_destroy(h);
        *err = h ? TDM_ERR_INVAL : TDM_ERR_NOMEM;
        return NULL;
    }
    snprintf(off, sizeof off, "%" PRId64, offset);
    rd_kafka_header_add(h, TDM__KSHUFFLE_H_ORIGIN, -1, origin, -1);
    rd_kafka_header_add(h, TDM__KSHUFFLE_H_OFFSET, -1, off, -1);
    return h;
}

/* Produces a row to its key's partition (see the header). */
tdm_err tdm__kshuffle_write(tdm__kshuffle *sh, int input, const tdm__row *row,
                            const char *origin, int64_t offset)
{
    int split;
    tdm_err err = in_split(sh, input, &split);
    if (err != TDM_OK)
        return err;
    const char *key;
    size_t klen;
    if ((err = tdm__key_encode(row, sh->key_idx, sh->n_key, &sh->kb, &key,
                               &klen)) != TDM_OK)
        return err;
    /* The same range reduction as the runtime's key groups, so every
     * process maps a key to the same partition. */
    int32_t part = tdm__key_group(tdm__keys_hash(key, klen), sh->n_parts);
    if ((err = tdm__kshuffle_encode(row, &sh->vb)) != TDM_OK)
        return err;
    rd_kafka_headers_t *h = row_headers(sh, origin, offset, &err);
    if (err != TDM_OK)
        return err;
    if ((err = produce(sh, part, key, klen, sh->vb.p, sh->vb.len, row->ts,
                       h)) != TDM_OK)
        return err;
    /* After the row left: its on-event watermark may now be sent. */
    tdm_record rec;
    memset(&rec, 0, sizeof rec);
    rec.ts = row->ts;
    rec.payload = row;
    tdm_reader_record(sh->wr, split, &rec);
    return TDM_OK;
}

/* An input partition was assigned (see the header). */
tdm_err tdm__kshuffle_input_assigned(tdm__kshuffle *sh, int input)
{
    int split;
    if (input < 0) {
        sh->in_known = 1;
        sh->w_dirty = 1;
        return TDM_OK;
    }
    return in_split(sh, input, &split);
}

/* An input partition stops holding the writer (see the header). */
tdm_err tdm__kshuffle_input_finished(tdm__kshuffle *sh, int input)
{
    if (input < 0 || input >= sh->cap_in || sh->in_split[input] < 0)
        return TDM_ERR_INVAL;
    if (!sh->in_live[input])
        return TDM_OK;
    sh->in_live[input] = 0;
    sh->live_in--;
    sh->w_dirty = 1;
    return tdm_reader_split_finished(sh->wr, sh->in_split[input]);
}

/* Sends the writer's marker into every internal partition. */
static tdm_err send_markers(tdm__kshuffle *sh)
{
    char wm[32];
    /* No input at all, once the input's assignment is known: nothing of
     * this writer can arrive, so it must not hold anyone (idle) until it
     * gets input again.  Before that it holds at its watermark (MIN):
     * an input partition may be assigned and not yet read. */
    int idle =
        !sh->w_ended && (sh->w_idle || (sh->in_known && sh->live_in == 0));
    tdm_time_ms w = sh->w_ended ? TDM_TIME_MAX : sh->w_wm;
    snprintf(wm, sizeof wm, "%" PRId64, (int64_t)w);
    for (int32_t p = 0; p < sh->n_parts; p++) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(3);
        if (!h)
            return TDM_ERR_NOMEM;
        rd_kafka_header_add(h, TDM__KSHUFFLE_H_WRITER, -1, sh->writer_id, -1);
        rd_kafka_header_add(h, TDM__KSHUFFLE_H_WM, -1, wm, -1);
        rd_kafka_header_add(h, TDM__KSHUFFLE_H_IDLE, -1, idle ? "1" : "0", 1);
        tdm_err err = produce(sh, p, sh->writer_id, strlen(sh->writer_id), NULL,
                              0, TDM_TIME_MIN, h);
        if (err != TDM_OK)
            return err;
    }
    sh->w_dirty = 0;
    sh->last_marker = tdm_clock_now(sh->clk);
    return TDM_OK;
}

/* Every input ended: the final MAX marker (see the header). */
tdm_err tdm__kshuffle_input_end(tdm__kshuffle *sh)
{
    if (sh->w_ended)
        return TDM_OK;
    sh->w_ended = 1;
    return send_markers(sh);
}

/* Waits for the producer's acknowledgements (see the header). */
tdm_err tdm__kshuffle_flush(tdm__kshuffle *sh, int timeout_ms)
{
    rd_kafka_resp_err_t re = rd_kafka_flush(sh->prod, timeout_ms);
    if (re != RD_KAFKA_RESP_ERR_NO_ERROR) {
        snprintf(sh->err, sizeof sh->err,
                 "repartition: flush: %s "
                 "(%d messages pending)",
                 rd_kafka_err2str(re), rd_kafka_outq_len(sh->prod));
        return TDM_ERR_IO;
    }
    return sh->delivery_failed ? TDM_ERR_IO : TDM_OK;
}

/* ---- Reader ---- */

/* Reads header @p name as text into (buf, n); false if absent. */
static bool header_text(rd_kafka_headers_t *h, const char *name, char *buf,
                        size_t n)
{
    const void *v;
    size_t len;
    if (!h ||
        rd_kafka_header_get_last(h, name, &v, &len) !=
            RD_KAFKA_RESP_ERR_NO_ERROR ||
        !v || len >= n)
        return false;
    memcpy(buf, v, len);
    buf[len] = 0;
    return true;
}

/* Handles a marker message; 1 when it changed its partition's state. */
static int on_marker(tdm__kshuffle *sh, int li, rd_kafka_headers_t *h)
{
    char w[160], wm[32], idle[4];
    if (!header_text(h, TDM__KSHUFFLE_H_WRITER, w, sizeof w) ||
        !header_text(h, TDM__KSHUFFLE_H_WM, wm, sizeof wm) ||
        !header_text(h, TDM__KSHUFFLE_H_IDLE, idle, sizeof idle)) {
        sh->bad_values++;
        return 0;
    }
    tdm_time_ms now = tdm_clock_now(sh->clk);
    long long v = strtoll(wm, NULL, 10);
    int before_idle, after_idle;
    tdm_time_ms before = kwm_peek(sh->kwm, li, now, &before_idle);
    if (tdm__kwm_marker(sh->kwm, li, w, strlen(w), (tdm_time_ms)v,
                        idle[0] == '1', now) != TDM_OK)
        return 0;
    tdm_time_ms after = kwm_peek(sh->kwm, li, now, &after_idle);
    return after != before || after_idle != before_idle;
}

/* Encodes a row as a message value (see the header). */
tdm_err tdm__kshuffle_encode(const tdm__row *row, tdm__keybuf *kb)
{
    tdm_err err = tdm__row_pack(row, kb);
    if (err != TDM_OK)
        return err;
    size_t plen = kb->len;
    if (kb->cap < plen + 3) {
        char *np = tdm__realloc(kb->p, plen + 3);
        if (!np)
            return TDM_ERR_NOMEM;
        kb->p = np;
        kb->cap = plen + 3;
    }
    /* The prefix goes in front of the packed bytes. */
    memmove(kb->p + 3, kb->p, plen);
    kb->p[0] = TDM__KSHUFFLE_VERSION;
    kb->p[1] = (char)(row->schema->n & 0xff);
    kb->p[2] = (char)((row->schema->n >> 8) & 0xff);
    kb->len = plen + 3;
    return TDM_OK;
}

/* Decodes a message value into a new row of @p b (see the header). */
tdm_err tdm__kshuffle_decode(const void *value, size_t len, tdm__batch *b,
                             tdm__row **out)
{
    const unsigned char *v = value;
    int nf = b->schema->n;
    *out = NULL;
    if (!v || len < 3 || v[0] != TDM__KSHUFFLE_VERSION ||
        (int)(v[1] | (v[2] << 8)) != nf)
        return TDM_ERR_PARSE;
    const char *base = (const char *)v + 3;
    /* Not a packed row of this schema: too short, another value count, or
     * a string outside the string area (checked before unpacking, which
     * trusts its input). */
    if (!tdm__row_pack_valid(base, len - 3, b->schema))
        return TDM_ERR_PARSE;
    tdm__row *r = tdm__batch_add(b);
    if (!r)
        return TDM_ERR_NOMEM;
    /* Unpacked straight into the batch's values (the unpacking copies
     * with memcpy, so the unaligned bytes of the message are fine); the
     * strings then point into the message and are copied to the arena. */
    tdm__row u;
    tdm__row_unpack(base, len - 3, b->schema, r->v, &u);
    r->ts = u.ts;
    r->flags = u.flags;
    for (int i = 0; i < nf; i++) {
        tdm__val *x = &r->v[i];
        if (x->null || b->schema->fields[i].type != TDM_TYPE_STRING)
            continue;
        if (tdm__batch_set_string(b, r, i, x->u.s.p, x->u.s.len) != TDM_OK) {
            tdm__batch_drop_last(b);
            return TDM_ERR_NOMEM;
        }
    }
    *out = r;
    return TDM_OK;
}

/* A task's reader: whether row message @p m is new (1), a replay of one
 * taken before (0: dropped and counted) or unreadable (0: counted as a
 * bad value), -1 out of memory. */
static int task_row_fresh(tdm__kshuffle *sh, int li, rd_kafka_message_t *m)
{
    rd_kafka_headers_t *h = NULL;
    char origin[160], off[32];
    rd_kafka_message_headers(m, &h);
    if (!header_text(h, TDM__KSHUFFLE_H_ORIGIN, origin, sizeof origin) ||
        !header_text(h, TDM__KSHUFFLE_H_OFFSET, off, sizeof off)) {
        if (!sh->bad_values++) /* R-KS-2 */
            tdm__kafka_logf(&sh->log,
                            "warning: %s[%d]@%" PRId64 " has no origin "
                            "(written outside scale_out: tasks?); skipped",
                            sh->topic, (int)m->partition, (int64_t)m->offset);
        return 0;
    }
    int r = tdm__kseen_take(sh->lp[li].seen, origin, strlen(origin),
                            (int64_t)strtoll(off, NULL, 10));
    if (r == 0)
        sh->replays_dropped++; /* R-KS-3 */
    return r;
}

/* Reads rows and markers (see the header). */
tdm_err tdm__kshuffle_poll(tdm__kshuffle *sh, tdm__batch *b, size_t max,
                           uint8_t *finished, int *eof)
{
    tdm_err err;
    *eof = 0;
    /* Revocations seen since the last poll, of the indices the runtime
     * has counted (sized finished for); one allocated since (a rebalance
     * served by commit) waits a poll. */
    for (int i = 0; i < sh->n_counted; i++)
        if (sh->lp[i].fin_pending) {
            sh->lp[i].fin_pending = 0;
            finished[i] = 1;
        }
    if (sh->assign_pending && (err = task_assign(sh)) != TDM_OK)
        return err;
    /* The writer: periodic tick, then markers when due. */
    tdm_reader_advance(sh->wr);
    rd_kafka_poll(sh->prod, 0);
    if (sh->w_dirty ||
        tdm__time_sub_sat(tdm_clock_now(sh->clk), sh->last_marker) >=
            sh->marker_interval) {
        if ((err = send_markers(sh)) != TDM_OK)
            return err;
    }
    if (sh->delivery_failed)
        return TDM_ERR_IO;
    /* The reader: first wait up to 50 ms, then take what is there. */
    size_t got = 0;
    tdm__row *row;
    /* Never more than the batch holds: a message fetched is consumed. */
    for (int wait = 50; got < max && b->n < b->cap; wait = 0) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(sh->cons, wait);
        if (!m)
            break;
        if (m->err) {
            if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                tdm__kafka_logf(&sh->log, "warning: %s",
                                rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        int li = m->partition >= 0 && m->partition < sh->n_parts
                     ? sh->local_of[m->partition]
                     : -1;
        if (li < 0) {
            /* Revoked meanwhile: its new owner reads it. */
            rd_kafka_message_destroy(m);
            continue;
        }
        sh->lp[li].next = m->offset + 1;
        int stop = 0, fresh = 1;
        if (m->len == 0) {
            rd_kafka_headers_t *h = NULL;
            rd_kafka_message_headers(m, &h);
            stop = on_marker(sh, li, h);
        } else if (sh->task >= 0 && (fresh = task_row_fresh(sh, li, m)) <= 0) {
            if (fresh < 0) {
                rd_kafka_message_destroy(m);
                return TDM_ERR_NOMEM;
            }
        } else if ((err = tdm__kshuffle_decode(m->payload, m->len, b, &row)) ==
                   TDM_OK) {
            row->partition = (uint32_t)li;
            got++;
        } else if (err == TDM_ERR_NOMEM) {
            rd_kafka_message_destroy(m);
            return err;
        } else if (!sh->bad_values++) {
            tdm__kafka_logf(&sh->log,
                            "warning: %s[%d]@%" PRId64 " is not "
                            "a row of this job (other build or schema?); "
                            "skipped",
                            sh->topic, (int)m->partition, (int64_t)m->offset);
        }
        rd_kafka_message_destroy(m);
        /* The runtime applies watermarks after the batch: stop right
         * after a marker that moves one, so no later row precedes it. */
        if (stop)
            break;
    }
    /* End: the writer's input ended and every live partition heard MAX
     * from every writer that counts. */
    if (sh->w_ended) {
        int live = 0, done = 1;
        tdm_time_ms now = tdm_clock_now(sh->clk);
        for (int i = 0; i < sh->n_lp && done; i++) {
            if (!sh->lp[i].live)
                continue;
            live++;
            int idle;
            tdm_time_ms w = kwm_peek(sh->kwm, i, now, &idle);
            done = w == TDM_TIME_MAX;
        }
        *eof = live > 0 && done;
    }
    return TDM_OK;
}

/* Local indices allocated so far. */
int tdm__kshuffle_n_partitions(tdm__kshuffle *sh)
{
    sh->n_counted = sh->n_lp;
    return sh->n_lp;
}

/* "<topic>[p]" of local index @p p. */
const char *tdm__kshuffle_partition_name(tdm__kshuffle *sh, int p)
{
    return p >= 0 && p < sh->n_lp ? sh->lp[p].name : "?";
}

/* The floor from the commit metadata of local index @p p. */
tdm_time_ms tdm__kshuffle_partition_floor(tdm__kshuffle *sh, int p)
{
    return p >= 0 && p < sh->n_lp ? sh->lp[p].floor : TDM_TIME_MIN;
}

/* The writers' combined watermark of local index @p p. */
int tdm__kshuffle_partition_watermark(tdm__kshuffle *sh, int p, tdm_time_ms *wm,
                                      int *idle)
{
    if (p < 0 || p >= sh->n_lp || !sh->lp[p].live)
        return 0;
    return tdm__kwm_get(sh->kwm, p, tdm_clock_now(sh->clk), wm, idle);
}

/* Remembers the reader's positions under mark @p wm. */
void tdm__kshuffle_mark(tdm__kshuffle *sh, tdm_time_ms wm,
                        const tdm_time_ms *horizon, int n)
{
    if (sh->task >= 0)
        return; /* a task's positions go into its checkpoints */
    int slot = (sh->ring_head + sh->ring_n) % SNAP_RING;
    if (sh->ring_n == SNAP_RING) {
        /* Full: the oldest goes (commits lag, never overshoot). */
        slot = sh->ring_head;
        sh->ring_head = (sh->ring_head + 1) % SNAP_RING;
        sh->ring_n--;
    }
    snap *s = &sh->ring[slot];
    int need = sh->n_lp;
    if (s->n < need) {
        int64_t *nx = tdm__realloc(s->next, (size_t)need * sizeof *nx);
        if (nx)
            s->next = nx;
        tdm_time_ms *hz =
            nx ? tdm__realloc(s->hz, (size_t)need * sizeof *hz) : NULL;
        if (hz)
            s->hz = hz;
        if (!nx || !hz)
            return; /* Out of memory: this mark is skipped. */
    }
    s->n = need;
    s->wm = wm;
    for (int i = 0; i < need; i++) {
        s->next[i] = sh->lp[i].next;
        s->hz[i] = i < n ? horizon[i] : TDM_TIME_MIN;
    }
    sh->ring_n++;
}

/* Adds to @p l, for local partition @p i, the position of the newest
 * mark that is processed and whose rows of @p i can no longer change a
 * result, with metadata "tdm1 wm=<max(done, floor)>" written into
 * meta[l->cnt] (records at or below the previous owner's floor had their
 * results written by it, whatever this member's watermark); returns that
 * mark's age index in the ring, or -1 if none. */
static int select_mark(const tdm__kshuffle *sh, int i, tdm_time_ms processed,
                       tdm_time_ms done, rd_kafka_topic_partition_list_t *l,
                       char (*meta)[TDM__KMETA_MAX])
{
    for (int k = sh->ring_n - 1; k >= 0; k--) {
        const snap *s = &sh->ring[(sh->ring_head + k) % SNAP_RING];
        if (i >= s->n || s->next[i] < 0)
            continue;
        if (!(s->wm < processed || processed == TDM_TIME_MAX) ||
            s->hz[i] > done)
            continue;
        tdm_time_ms wm = done > sh->lp[i].floor ? done : sh->lp[i].floor;
        char *text = meta[l->cnt];
        rd_kafka_topic_partition_t *e =
            rd_kafka_topic_partition_list_add(l, sh->topic, sh->lp[i].part);
        e->offset = s->next[i];
        e->metadata = text;
        e->metadata_size =
            tdm__kafka_meta_format(wm, TDM_TIME_MIN, text, TDM__KMETA_MAX);
        return k;
    }
    return -1;
}

/* Commits list @p l synchronously; the metadata pointers (ours) are
 * cleared before the list is freed.  A failure is kept in sh->err. */
static rd_kafka_resp_err_t commit_list(tdm__kshuffle *sh,
                                       rd_kafka_topic_partition_list_t *l)
{
    rd_kafka_resp_err_t re = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (l->cnt)
        re = tdm__kafka_commit(sh->cons, l);
    for (int i = 0; i < l->cnt; i++)
        l->elems[i].metadata = NULL; /* ours, not librdkafka's */
    rd_kafka_topic_partition_list_destroy(l);
    if (re)
        snprintf(sh->err, sizeof sh->err, "repartition: commit: %s",
                 rd_kafka_err2str(re));
    return re;
}

/* Hand-over commit of local partition @p li as it is revoked (inside
 * the rebalance callback, where a cooperative member may commit even
 * while the group rebalances), with what the last commit() allowed. */
static void commit_revoked(tdm__kshuffle *sh, int li)
{
    if (!sh->have_commit)
        return;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    char meta[1][TDM__KMETA_MAX];
    if (!l)
        return;
    select_mark(sh, li, sh->last_proc, sh->last_done, l, meta);
    if (commit_list(sh, l))
        tdm__kafka_logf(&sh->log, "warning: %s", sh->err);
}

/* One commit attempt of every live partition; trims the ring. */
static rd_kafka_resp_err_t commit_once(tdm__kshuffle *sh, tdm_time_ms processed,
                                       tdm_time_ms done)
{
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new(sh->n_lp ? sh->n_lp : 1);
    char(*meta)[TDM__KMETA_MAX] =
        tdm__malloc(((size_t)sh->n_lp + 1) * sizeof *meta);
    int oldest_used = sh->ring_n;
    if (!l || !meta) {
        if (l)
            rd_kafka_topic_partition_list_destroy(l);
        tdm__free(meta);
        return RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE;
    }
    for (int i = 0; i < sh->n_lp; i++) {
        if (!sh->lp[i].live)
            continue;
        int k = select_mark(sh, i, processed, done, l, meta);
        if (k >= 0 && k < oldest_used)
            oldest_used = k;
    }
    rd_kafka_resp_err_t re = commit_list(sh, l);
    tdm__free(meta);
    if (re)
        return re;
    /* Marks older than every one used cannot be needed again (a
     * partition that used none may lag, never overshoot). */
    if (oldest_used < sh->ring_n) {
        sh->ring_head = (sh->ring_head + oldest_used) % SNAP_RING;
        sh->ring_n -= oldest_used;
    }
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* The group is changing under the commit: retry after serving it. */
static int rebalancing(rd_kafka_resp_err_t re)
{
    return re == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
           re == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
           re == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID;
}

/* Commits the reader's offsets (see the header). */
tdm_err tdm__kshuffle_commit(tdm__kshuffle *sh, tdm_time_ms processed,
                             tdm_time_ms done)
{
    if (sh->task >= 0)
        return TDM_OK; /* a task's positions go into its checkpoints */
    sh->have_commit = 1;
    sh->last_proc = processed;
    sh->last_done = done;
    rd_kafka_resp_err_t re = commit_once(sh, processed, done);
    /* The final commit (processed = MAX: no poll follows) waits out a
     * rebalance (another member leaving) for up to 10 s of wall time: the
     * consumer is served, and what it fetches meanwhile is not this run's
     * any more (its positions are not committed).  Once one of its
     * partitions is revoked there is nothing left to wait for: the
     * revoke callback made the hand-over commit, or the partition is
     * another member's now. */
    if (processed == TDM_TIME_MAX && rebalancing(re)) {
        int revoked = sh->n_revoked;
        int64_t end = tdm__mono_ms() + 10000;
        while (rebalancing(re) && sh->n_revoked == revoked &&
               tdm__mono_ms() < end) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(sh->cons, 100);
            if (m)
                rd_kafka_message_destroy(m);
            if (sh->n_revoked == revoked)
                re = commit_once(sh, processed, done);
        }
    }
    if (re == RD_KAFKA_RESP_ERR_NO_ERROR)
        return TDM_OK;
    tdm__kafka_logf(&sh->log, "warning: %s", sh->err);
    return re == RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE ? TDM_ERR_NOMEM
                                                      : TDM_ERR_IO;
}

/* The last error text. */
const char *tdm__kshuffle_errmsg(const tdm__kshuffle *sh)
{
    return sh->err[0] ? sh->err : "no error";
}

/* Leaves the reader group, within 10 s (tdm__kafka_close_consumer). */
static void close_consumer(tdm__kshuffle *sh)
{
    if (!tdm__kafka_close_consumer(sh->cons, rk_rebalance, sh, 10000))
        tdm__kafka_logf(&sh->log,
                        "warning: the reader did not leave "
                        "group \"%s-shuffle\" within 10 s",
                        sh->group);
}

/* Last marker, flush, leave, free (see the header). */
void tdm__kshuffle_close(tdm__kshuffle *sh)
{
    if (!sh)
        return;
    if (sh->prod) {
        if (sh->n_parts > 0 && sh->wr) {
            /* Leaving: stop holding the readers (idle) unless the input
             * ended, whose MAX marker already went. */
            if (!sh->w_ended && sh->task < 0) {
                /* A task's writer moves: it holds at its last marker
                 * until its next owner writes (R-KS-4). */
                sh->in_known = 1;
                sh->live_in = 0;
                send_markers(sh);
            }
        }
        rd_kafka_flush(sh->prod, 5000);
        rd_kafka_destroy(sh->prod);
    }
    if (sh->task >= 0 && sh->n_lp == 1) {
        tdm__kafka_logf(&sh->log,
                        "%s: %" PRId64 " replayed row(s) dropped (written "
                        "again by a task that moved)",
                        sh->lp[0].name, sh->replays_dropped);
    }
    if (sh->cons)
        close_consumer(sh);
    tdm_reader_destroy(sh->wr);
    tdm_wm_strategy_destroy(sh->own_strat);
    if (sh->own_clk)
        tdm_clock_destroy(sh->clk);
    tdm__kwm_free(sh->kwm);
    for (int i = 0; i < SNAP_RING; i++) {
        tdm__free(sh->ring[i].next);
        tdm__free(sh->ring[i].hz);
    }
    for (int i = 0; i < sh->n_lp; i++)
        tdm__kseen_free(sh->lp[i].seen);
    tdm__free(sh->lp);
    tdm__free(sh->local_of);
    tdm__free(sh->in_split);
    tdm__free(sh->in_live);
    tdm__free(sh->kb.p);
    tdm__free(sh->vb.p);
    tdm__free(sh->key_idx);
    tdm__free(sh->topic);
    tdm__free(sh->group);
    tdm__free(sh);
}

/* ---- A task's checkpoint ---- */

#define KSH_SNAP_VERSION 1

/* Encodes the reader's state (see the header). */
tdm_err tdm__kshuffle_snapshot(tdm__kshuffle *sh, struct tdm__enc *e,
                               char *errbuf, size_t errbuf_size)
{
    if (sh->task < 0 || sh->n_lp != 1)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "repartition: only a task's reader is checkpointed");
    /* R-KS-5: the input positions of this snapshot are behind rows the
     * topic holds, or a restore would skip rows never delivered. */
    if (tdm__kshuffle_flush(sh, 10000) != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "%s", sh->err);
    const lpart *l = &sh->lp[0];
    int nw = tdm__kwm_writers(sh->kwm, 0), ns = tdm__kseen_count(l->seen);
    tdm__enc_begin(e, TDM__SNAP_TAG_KSHUFFLE);
    tdm__enc_uvar(e, KSH_SNAP_VERSION);
    tdm__enc_svar(e, l->part);
    tdm__enc_svar(e, l->next);
    tdm__enc_uvar(e, (uint64_t)nw);
    for (int i = 0; i < nw; i++) {
        const char *id = "";
        size_t len = 0;
        tdm_time_ms wm = TDM_TIME_MIN;
        int idle = 0;
        if (!tdm__kwm_writer_at(sh->kwm, 0, i, &id, &len, &wm, &idle))
            break;
        tdm__enc_bytes(e, id, len);
        tdm__enc_svar(e, wm);
        tdm__enc_u8(e, idle ? 1 : 0);
    }
    tdm__enc_uvar(e, (uint64_t)ns);
    for (int i = 0; i < ns; i++) {
        int64_t last;
        tdm__enc_str(e, tdm__kseen_origin(l->seen, i, &last));
        tdm__enc_svar(e, last);
    }
    tdm__enc_end(e);
    return e->oom ? TDM_ERR_NOMEM : TDM_OK;
}

/* Restores the writers' last markers of a checkpoint. */
static tdm_err restore_writers(tdm__kshuffle *sh, struct tdm__dec *d)
{
    uint64_t n;
    tdm__dec_uvar(d, &n);
    if (!d->err && n > tdm__dec_left(d))
        return tdm__dec_fail(d, "too many writers");
    tdm_time_ms now = tdm_clock_now(sh->clk);
    for (uint64_t i = 0; i < n && !d->err; i++) {
        const void *id;
        size_t len;
        int64_t wm;
        uint8_t idle;
        tdm__dec_bytes(d, &id, &len);
        tdm__dec_svar(d, &wm);
        tdm__dec_u8(d, &idle);
        if (d->err)
            break;
        if (idle > 1 || len == 0)
            return tdm__dec_fail(d, "bad writer entry");
        if (tdm__kwm_marker(sh->kwm, 0, id, len, wm, idle, now) != TDM_OK)
            return TDM_ERR_NOMEM;
    }
    return d->err ? TDM_ERR_PARSE : TDM_OK;
}

/* Restores the offsets taken per origin of a checkpoint. */
static tdm_err restore_seen(tdm__kshuffle *sh, struct tdm__dec *d)
{
    uint64_t n;
    tdm__dec_uvar(d, &n);
    if (!d->err && n > tdm__dec_left(d))
        return tdm__dec_fail(d, "too many origins");
    for (uint64_t i = 0; i < n && !d->err; i++) {
        char *origin = NULL;
        int64_t last;
        tdm__dec_str(d, &origin);
        tdm__dec_svar(d, &last);
        int r = d->err || last < 0 ? 1
                                   : tdm__kseen_take(sh->lp[0].seen, origin,
                                                     strlen(origin), last);
        tdm__free(origin);
        if (r < 0)
            return TDM_ERR_NOMEM;
    }
    return d->err ? TDM_ERR_PARSE : TDM_OK;
}

/* Restores a task reader's section body (see the header). */
tdm_err tdm__kshuffle_restore(tdm__kshuffle *sh, struct tdm__dec *d,
                              char *errbuf, size_t errbuf_size)
{
    uint64_t version;
    int64_t part, next;
    if (sh->task < 0 || sh->n_lp != 1)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "repartition: only a task's reader is restored");
    tdm__dec_uvar(d, &version);
    if (!d->err && version != KSH_SNAP_VERSION)
        tdm__dec_fail(d, "unknown repartition reader version");
    tdm__dec_svar(d, &part);
    tdm__dec_svar(d, &next);
    if (d->err)
        return TDM_ERR_PARSE;
    if (part != sh->lp[0].part)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "repartition: the checkpoint reads %s[%lld], this "
                         "task %s",
                         sh->topic, (long long)part, sh->lp[0].name);
    if (next >= 0)
        sh->lp[0].next = next;
    tdm_err err = restore_writers(sh, d);
    if (err == TDM_OK)
        err = restore_seen(sh, d);
    if (err == TDM_OK)
        tdm__kafka_logf(&sh->log,
                        "%s restored at offset %lld (%d writers, "
                        "%d origins)",
                        sh->lp[0].name, (long long)sh->lp[0].next,
                        tdm__kwm_writers(sh->kwm, 0),
                        tdm__kseen_count(sh->lp[0].seen));
    return err;
}
