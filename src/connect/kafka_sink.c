/* SPDX-License-Identifier: MIT */
/* kafka_sink.c - a sink that produces window results, late records or
 * dead letters to a Kafka topic with the idempotent producer.
 *
 * Values are exactly the text sink's JSON lines (conn.h), without the
 * newline.  Keys: results in append and retract mode carry the group key
 * as JSON; in upsert mode the group key plus window_start/window_end, one
 * key per (group key, window), so a compacted topic keeps the final
 * value, and a retraction is a tombstone (no value).  Late records have
 * no key, dead letters their location.  Message timestamps: window_end -
 * 1 for results, the record's time for late records, now otherwise.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "connect/kafka.h"

/* How long a write waits while the producer queue is full. */
#define KK_QUEUE_WAIT_MS 30000
/* flush() and close() wait this long for acknowledgements. */
#define KK_FLUSH_MS 10000
#define KK_CLOSE_MS 30000

struct tdm__sinkobj {
    tdm__klog log;        /* first: the rd_kafka_t opaque */
    rd_kafka_t *rk;
    char *topic;
    int mode;             /* 0 append, 1 upsert, 2 retract */
    pthread_mutex_t mu;   /* formatting buffers and produce */
    bool mu_ok;
    tdm__sbuf key, val;
    atomic_long failed;   /* failed deliveries */
    pthread_mutex_t emu;  /* first_err */
    bool emu_ok;
    char first_err[256];
};

/* Records a failure: the first reason is written before the count
 * moves, so a reader that sees failed > 0 (flush, close, on another
 * thread) also sees the reason.  True for the first failure. */
static bool note_failure(tdm__sinkobj *s, rd_kafka_resp_err_t e)
{
    bool first;
    pthread_mutex_lock(&s->emu);
    first = s->first_err[0] == '\0';
    if (first)
        snprintf(s->first_err, sizeof s->first_err, "%s",
                 rd_kafka_err2str(e));
    pthread_mutex_unlock(&s->emu);
    atomic_fetch_add(&s->failed, 1);
    return first;
}

/* Delivery report: counts failures and keeps the first reason. */
static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    tdm__sinkobj *s = rd_kafka_opaque(rk);

    (void)opaque;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR)
        return;
    if (note_failure(s, m->err))
        tdm__kafka_logf(&s->log, "delivery to '%s' failed: %s", s->topic,
                        rd_kafka_err2str(m->err));
}

/* Produces one message, waiting while the queue is full (backpressure).
 * @p key / @p val may be NULL (no key; tombstone).  Mutex held.  TDM_OK
 * or TDM_ERR_IO. */
static tdm_err produce(tdm__sinkobj *s, const char *key, size_t key_len,
                       const char *val, size_t val_len, int64_t ts)
{
    int64_t since = -1;

    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            s->rk, RD_KAFKA_V_TOPIC(s->topic),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, key ? key_len : 0),
            RD_KAFKA_V_VALUE((void *)val, val ? val_len : 0),
            RD_KAFKA_V_TIMESTAMP(ts > 0 ? ts : 0), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            rd_kafka_poll(s->rk, 0); /* delivery reports */
            return TDM_OK;
        }
        /* Queue full: serve delivery reports until there is room. */
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL ||
            !tdm__kafka_wait_room(s->rk, &since, KK_QUEUE_WAIT_MS)) {
            tdm__kafka_logf(&s->log, "cannot produce to '%s': %s", s->topic,
                            rd_kafka_err2str(e));
            note_failure(s, e);
            return TDM_ERR_IO;
        }
    }
}

/* Writes a window result or join pair (see the header comment).  TDM_OK,
 * TDM_ERR_IO, TDM_ERR_NOMEM.  Thread-safe. */
static tdm_err kk_write_result(tdm__sinkobj *s, const tdm__out_row *row)
{
    bool tomb = s->mode == 1 && row->change == TDM__CHANGE_RETRACT;
    bool has_key = row->n_key_cols > 0 || (s->mode == 1 && row->has_window);
    int64_t ts = row->has_window ? tdm__time_sub_sat(row->win_end, 1) : 0;
    tdm_err err;

    pthread_mutex_lock(&s->mu);
    s->key.len = s->val.len = 0;
    if (has_key)
        tdm__json_key(row, s->mode == 1, &s->key);
    if (!tomb)
        tdm__json_result(row, s->mode, false, &s->val);
    if (s->key.oom || s->val.oom) {
        s->key.oom = s->val.oom = false;
        pthread_mutex_unlock(&s->mu);
        return TDM_ERR_NOMEM;
    }
    err = produce(s, has_key ? s->key.p : NULL, s->key.len,
                  tomb ? NULL : s->val.p, s->val.len, ts);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Writes a late record (no key).  Thread-safe. */
static tdm_err kk_write_row(tdm__sinkobj *s, const tdm__row *row)
{
    tdm_err err;

    pthread_mutex_lock(&s->mu);
    s->val.len = 0;
    tdm__json_late(row, &s->val);
    if (s->val.oom) {
        s->val.oom = false;
        pthread_mutex_unlock(&s->mu);
        return TDM_ERR_NOMEM;
    }
    err = produce(s, NULL, 0, s->val.p, s->val.len, row->ts);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Writes a dead letter (key = its location).  Thread-safe. */
static tdm_err kk_write_dead(tdm__sinkobj *s, const char *location,
                             const char *reason, const char *raw,
                             size_t raw_len)
{
    tdm_err err;

    pthread_mutex_lock(&s->mu);
    s->val.len = 0;
    tdm__json_dead(location, reason, raw, raw_len, &s->val);
    if (s->val.oom) {
        s->val.oom = false;
        pthread_mutex_unlock(&s->mu);
        return TDM_ERR_NOMEM;
    }
    err = produce(s, location, location ? strlen(location) : 0, s->val.p,
                  s->val.len, 0);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Waits up to @p ms for every message to be acknowledged.  TDM_OK, or
 * TDM_ERR_IO with "N results not delivered ..." in errbuf. */
static tdm_err wait_delivered(tdm__sinkobj *s, int ms, char *errbuf,
                              size_t errbuf_size)
{
    long failed;
    int left;

    rd_kafka_flush(s->rk, ms);
    left = rd_kafka_outq_len(s->rk);
    failed = atomic_load(&s->failed);
    if (left > 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "%d results not delivered to '%s' within %d ms",
                         left, s->topic, ms);
    if (failed > 0) {
        char why[256];
        pthread_mutex_lock(&s->emu);
        snprintf(why, sizeof why, "%s", s->first_err);
        pthread_mutex_unlock(&s->emu);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "%ld results not delivered to '%s': %s", failed,
                         s->topic, why);
    }
    return TDM_OK;
}

/* Everything written before is acknowledged when this returns TDM_OK
 * (a failed delivery fails every later flush).  Thread-safe. */
static tdm_err kk_flush(tdm__sinkobj *s, char *errbuf, size_t errbuf_size)
{
    if (!s)
        return TDM_OK;
    return wait_delivered(s, KK_FLUSH_MS, errbuf, errbuf_size);
}

static void free_sink(tdm__sinkobj *s)
{
    if (!s)
        return;
    if (s->rk)
        rd_kafka_destroy(s->rk);
    tdm__sbuf_free(&s->key);
    tdm__sbuf_free(&s->val);
    tdm__free(s->topic);
    if (s->mu_ok)
        pthread_mutex_destroy(&s->mu);
    if (s->emu_ok)
        pthread_mutex_destroy(&s->emu);
    tdm__free(s);
}

/* Waits for delivery (30 s) and frees the sink.  TDM_OK, or TDM_ERR_IO
 * "N results not delivered ..." naming the topic.  NULL is fine. */
static tdm_err kk_close(tdm__sinkobj *s, char *errbuf, size_t errbuf_size)
{
    tdm_err err;

    if (!s)
        return TDM_OK;
    err = wait_delivered(s, KK_CLOSE_MS, errbuf, errbuf_size);
    free_sink(s);
    return err;
}

/* Opens the producer; @p mode is the output mode (0 append, 1 upsert,
 * 2 retract).  TDM_OK, TDM_ERR_INVAL (no topic, or a bad kafka.*
 * property, named), TDM_ERR_IO (the client cannot be created), NOMEM. */
static tdm_err kk_open(const tdm__sink_conf *conf, int mode,
                       tdm__sinkobj **out, char *errbuf, size_t errbuf_size)
{
    static const char *const defaults[] = {
        "enable.idempotence", "true", "acks", "all", "linger.ms", "5", NULL,
    };
    rd_kafka_conf_t *kc = NULL;
    tdm__sinkobj *s;
    char why[512];
    tdm_err err;

    *out = NULL;
    if (!conf || !conf->kafka_topic || !conf->kafka_topic[0])
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "topic is not set");
    s = tdm__calloc(1, sizeof *s);
    if (!s)
        return TDM_ERR_NOMEM;
    atomic_init(&s->failed, 0);
    s->mode = mode;
    s->log.fn = conf->log;
    s->log.ud = conf->log_ud;
    snprintf(s->log.prefix, sizeof s->log.prefix, "kafka sink '%s'",
             conf->name ? conf->name : "?");
    err = TDM_ERR_NOMEM;
    if (pthread_mutex_init(&s->mu, NULL) != 0)
        goto fail;
    s->mu_ok = true;
    if (pthread_mutex_init(&s->emu, NULL) != 0)
        goto fail;
    s->emu_ok = true;
    s->topic = tdm__strndup(conf->kafka_topic, strlen(conf->kafka_topic));
    if (!s->topic)
        goto fail;
    err = tdm__kafka_conf(conf->kafka_brokers, conf->kafka_props,
                          conf->kafka_n_props, defaults, s, &kc, errbuf,
                          errbuf_size);
    if (err != TDM_OK)
        goto fail;
    rd_kafka_conf_set_dr_msg_cb(kc, dr_cb);
    s->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, why, sizeof why);
    if (!s->rk) {
        rd_kafka_conf_destroy(kc);
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "cannot create the kafka producer: %s", why);
        goto fail;
    }
    *out = s;
    return TDM_OK;
fail:
    free_sink(s);
    return err;
}

const tdm__sink_vtab tdm__kafka_sink = {
    .version = 2,
    .open = kk_open,
    .write_result = kk_write_result,
    .write_row = kk_write_row,
    .write_dead = kk_write_dead,
    .close = kk_close,
    .flush = kk_flush,
};
