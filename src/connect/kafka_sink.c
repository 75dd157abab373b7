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
 *
 * Exactly-once (conf->exactly_once, connect.h version 3): the rows of
 * each checkpoint epoch go into one Kafka transaction.  librdkafka has one
 * open transaction per producer, and epoch n+1 starts before checkpoint n
 * commits, so a writer keeps a small pool of transactional producers,
 * transactional.id "tidemark-<job>-<sink>-<writer>-<slot>", slot 0 ..
 * KK_TX_SLOTS - 1, used lowest free first.  recover() init_transactions
 * every slot, which fences older producers with that id and aborts their
 * open transactions.  docs/checkpoints.md, "Kafka sink", has the details
 * and the limit (a pre-committed transaction cannot be resumed after a
 * crash with librdkafka).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "connect/kafka.h"
#include "state/ckpt_codec.h"

/* How long a write waits while the producer queue is full. */
#define KK_QUEUE_WAIT_MS 30000
/* flush() and close() wait this long for acknowledgements. */
#define KK_FLUSH_MS 10000
#define KK_CLOSE_MS 30000
/* Transactional producers per writer, and their calls' timeout. */
#define KK_TX_SLOTS 4
#define KK_TX_MS 30000

enum { SLOT_FREE = 0, SLOT_OPEN, SLOT_PENDING };

/* One transactional producer of the pool. */
typedef struct kk_slot {
    rd_kafka_t *rk; /* NULL until first needed */
    bool inited;    /* init_transactions succeeded */
    int state;      /* SLOT_* */
    uint64_t ckpt;  /* SLOT_PENDING: the checkpoint id */
    char txid[200];
} kk_slot;

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
    /* Exactly-once: rk is slots[cur].rk while a transaction is open. */
    bool tx;
    int writer;
    int cur; /* open slot, -1: none */
    kk_slot slots[KK_TX_SLOTS];
    rd_kafka_conf_t *tmpl; /* configuration of the slots' producers */
    tdm__kk_txn_ops ops;
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

/* ---- Transactions ---- */

/* Logs and records a failed transaction call; frees @p e.  TDM_ERR_IO,
 * or TDM_OK when @p e is NULL. */
static tdm_err tx_fail(tdm__sinkobj *s, const kk_slot *sl, const char *what,
                       rd_kafka_error_t *e, char *errbuf, size_t errbuf_size)
{
    if (!e)
        return TDM_OK;
    tdm__kafka_logf(&s->log, "%s of transaction '%s' failed: %s", what,
                    sl->txid, rd_kafka_error_string(e));
    tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
              "%s of transaction '%s' (topic '%s') failed: %s", what, sl->txid,
              s->topic, rd_kafka_error_string(e));
    pthread_mutex_lock(&s->emu);
    if (s->first_err[0] == '\0')
        snprintf(s->first_err, sizeof s->first_err, "%s: %s", what,
                 rd_kafka_error_string(e));
    pthread_mutex_unlock(&s->emu);
    rd_kafka_error_destroy(e);
    return TDM_ERR_IO;
}

/* Creates slot @p i's producer and runs init_transactions (which fences
 * every older producer with the same transactional.id and aborts its
 * open transaction).  Mutex held. */
static tdm_err slot_init(tdm__sinkobj *s, int i, char *errbuf,
                         size_t errbuf_size)
{
    kk_slot *sl = &s->slots[i];
    char why[512];

    if (!sl->rk) {
        rd_kafka_conf_t *kc = rd_kafka_conf_dup(s->tmpl);
        if (!kc)
            return TDM_ERR_NOMEM;
        if (rd_kafka_conf_set(kc, "transactional.id", sl->txid, why,
                              sizeof why) != RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(kc);
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "transactional.id: %s", why);
        }
        sl->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, why, sizeof why);
        if (!sl->rk) {
            rd_kafka_conf_destroy(kc);
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                             "cannot create the kafka producer: %s", why);
        }
    }
    sl->state = SLOT_FREE;
    sl->inited = false;
    tdm_err err = tx_fail(s, sl, "init", s->ops.init(sl->rk, KK_TX_MS), errbuf,
                          errbuf_size);
    sl->inited = err == TDM_OK;
    return err;
}

/* Begins a transaction on the lowest free slot for the rows of the
 * current epoch.  Mutex held.  TDM_OK or TDM_ERR_IO (logged; the first
 * reason is kept for flush and close). */
static tdm_err open_txn(tdm__sinkobj *s)
{
    char msg[512];
    int i = 0;

    while (i < KK_TX_SLOTS && s->slots[i].state != SLOT_FREE)
        i++;
    if (i == KK_TX_SLOTS) {
        tdm__kafka_logf(&s->log,
                        "%d transactions wait for their "
                        "checkpoint's commit",
                        KK_TX_SLOTS);
        note_failure(s, RD_KAFKA_RESP_ERR__STATE);
        return TDM_ERR_IO;
    }
    kk_slot *sl = &s->slots[i];
    tdm_err err = sl->inited ? TDM_OK : slot_init(s, i, msg, sizeof msg);
    if (err == TDM_OK)
        err = tx_fail(s, sl, "begin", s->ops.begin(sl->rk), msg, sizeof msg);
    if (err != TDM_OK) {
        atomic_fetch_add(&s->failed, 1);
        return TDM_ERR_IO;
    }
    sl->state = SLOT_OPEN;
    s->cur = i;
    s->rk = sl->rk;
    return TDM_OK;
}

/* Produces one message, waiting while the queue is full (backpressure).
 * @p key / @p val may be NULL (no key; tombstone).  Mutex held.  TDM_OK
 * or TDM_ERR_IO. */
static tdm_err produce(tdm__sinkobj *s, const char *key, size_t key_len,
                       const char *val, size_t val_len, int64_t ts)
{
    int64_t since = -1;

    if (s->tx && s->cur < 0 && open_txn(s) != TDM_OK)
        return TDM_ERR_IO;
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
    int left = 0;

    if (s->rk) {
        rd_kafka_flush(s->rk, ms);
        left = rd_kafka_outq_len(s->rk);
    }
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
    tdm_err err;

    if (!s)
        return TDM_OK;
    if (s->tx)
        pthread_mutex_lock(&s->mu); /* s->rk changes with transactions */
    err = wait_delivered(s, KK_FLUSH_MS, errbuf, errbuf_size);
    if (s->tx)
        pthread_mutex_unlock(&s->mu);
    return err;
}

static void free_sink(tdm__sinkobj *s)
{
    if (!s)
        return;
    if (s->rk && !s->tx)
        rd_kafka_destroy(s->rk);
    for (int i = 0; i < KK_TX_SLOTS; i++)
        if (s->slots[i].rk)
            rd_kafka_destroy(s->slots[i].rk);
    if (s->tmpl)
        rd_kafka_conf_destroy(s->tmpl);
    tdm__sbuf_free(&s->key);
    tdm__sbuf_free(&s->val);
    tdm__free(s->topic);
    if (s->mu_ok)
        pthread_mutex_destroy(&s->mu);
    if (s->emu_ok)
        pthread_mutex_destroy(&s->emu);
    tdm__free(s);
}

/* Exactly-once at close: an open transaction (rows not pre-committed) is
 * aborted and reported as TDM_ERR_STATE, like pending ones left for
 * recovery.  @p err is close's result so far (kept when not TDM_OK). */
static tdm_err tx_close(tdm__sinkobj *s, tdm_err err, char *errbuf,
                        size_t errbuf_size)
{
    int pending = 0;
    bool open = s->cur >= 0;

    if (open) {
        kk_slot *sl = &s->slots[s->cur];
        (void)tx_fail(s, sl, "abort", s->ops.abort(sl->rk, KK_TX_MS), NULL, 0);
        sl->state = SLOT_FREE;
        s->cur = -1;
    }
    for (int i = 0; i < KK_TX_SLOTS; i++)
        pending += s->slots[i].state == SLOT_PENDING;
    if (err == TDM_OK && (open || pending > 0))
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "kafka sink '%s': closed with %s and %d "
                        "transactions not committed",
                        s->topic,
                        open ? "an open transaction (aborted)"
                             : "no open transaction",
                        pending);
    return err;
}

/* Pre-commit of checkpoint @p ckpt_id (connect.h, version 3): waits until
 * the open transaction's messages are acknowledged, leaves it open as
 * pending, and records the pending transactions in @p st. */
static tdm_err kk_pre_commit(tdm__sinkobj *s, uint64_t ckpt_id, tdm__enc *st,
                             char *errbuf, size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    int n = 0;

    if (!s)
        return TDM_OK;
    if (!s->tx)
        return wait_delivered(s, KK_FLUSH_MS, errbuf, errbuf_size);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < KK_TX_SLOTS; i++)
        if (s->slots[i].state == SLOT_PENDING && s->slots[i].ckpt >= ckpt_id)
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                            "kafka sink '%s': pre-commit of checkpoint "
                            "%llu after %llu",
                            s->topic, (unsigned long long)ckpt_id,
                            (unsigned long long)s->slots[i].ckpt);
    if (err == TDM_OK && s->cur >= 0) {
        err = wait_delivered(s, KK_FLUSH_MS, errbuf, errbuf_size);
        if (err == TDM_OK) {
            s->slots[s->cur].state = SLOT_PENDING;
            s->slots[s->cur].ckpt = ckpt_id;
            s->cur = -1;
            s->rk = NULL;
        }
    }
    if (err == TDM_OK) {
        tdm__enc_begin(st, TDM__CKPT_TAG_KAFKA_SINK);
        tdm__enc_uvar(st, 1); /* version */
        tdm__enc_uvar(st, (uint64_t)s->writer);
        tdm__enc_uvar(st, ckpt_id);
        tdm__enc_str(st, s->slots[0].txid);
        for (int i = 0; i < KK_TX_SLOTS; i++)
            n += s->slots[i].state == SLOT_PENDING;
        tdm__enc_uvar(st, (uint64_t)n);
        for (int i = 0; i < KK_TX_SLOTS; i++) {
            if (s->slots[i].state != SLOT_PENDING)
                continue;
            tdm__enc_uvar(st, s->slots[i].ckpt);
            tdm__enc_uvar(st, (uint64_t)i);
        }
        tdm__enc_end(st);
    }
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Commits the pending transactions of checkpoints <= @p ckpt_id, oldest
 * first.  Idempotent. */
static tdm_err kk_commit(tdm__sinkobj *s, uint64_t ckpt_id, char *errbuf,
                         size_t errbuf_size)
{
    tdm_err err = TDM_OK;

    if (!s || !s->tx)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    while (err == TDM_OK) {
        int best = -1;
        for (int i = 0; i < KK_TX_SLOTS; i++)
            if (s->slots[i].state == SLOT_PENDING &&
                s->slots[i].ckpt <= ckpt_id &&
                (best < 0 || s->slots[i].ckpt < s->slots[best].ckpt))
                best = i;
        if (best < 0)
            break;
        kk_slot *sl = &s->slots[best];
        err = tx_fail(s, sl, "commit", s->ops.commit(sl->rk, KK_TX_MS), errbuf,
                      errbuf_size);
        if (err == TDM_OK)
            sl->state = SLOT_FREE;
    }
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Recover (connect.h, version 3): init_transactions on every slot, which
 * fences the producers of the crashed run and aborts what they left
 * open.  @p st is validated; a transaction it records as pending cannot
 * be resumed by librdkafka: it is logged (docs/checkpoints.md). */
static tdm_err kk_recover(tdm__sinkobj *s, tdm__dec *st, char *errbuf,
                          size_t errbuf_size)
{
    tdm_err err = TDM_OK;

    if (!s || !s->tx)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    if (s->cur >= 0) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "kafka sink '%s': recover after writes", s->topic);
        goto out;
    }
    if (st) {
        uint64_t tag = 0, ver = 0, writer = 0, id = 0, n = 0;
        char *txid = NULL;
        tdm__dec d;
        if (tdm__dec_section(st, &tag, &d) != TDM_OK)
            d = *st;
        else if (tag != TDM__CKPT_TAG_KAFKA_SINK)
            (void)tdm__dec_fail(&d, "not a kafka sink section");
        else if (tdm__dec_uvar(&d, &ver) == TDM_OK && ver != 1)
            (void)tdm__dec_fail(&d, "unknown version");
        else if (tdm__dec_uvar(&d, &writer) == TDM_OK &&
                 writer != (uint64_t)s->writer)
            (void)tdm__dec_fail(&d, "state of another writer");
        else if (tdm__dec_uvar(&d, &id) == TDM_OK &&
                 tdm__dec_str(&d, &txid) == TDM_OK &&
                 strcmp(txid, s->slots[0].txid) != 0)
            (void)tdm__dec_fail(&d, "transactional.id differs");
        tdm__free(txid);
        if (d.err == TDM_OK && tdm__dec_uvar(&d, &n) == TDM_OK &&
            n > KK_TX_SLOTS)
            (void)tdm__dec_fail(&d, "too many pending transactions");
        for (uint64_t i = 0; d.err == TDM_OK && i < n; i++) {
            uint64_t ck = 0, slot = 0;
            if (tdm__dec_uvar(&d, &ck) == TDM_OK &&
                tdm__dec_uvar(&d, &slot) == TDM_OK &&
                (slot >= KK_TX_SLOTS || ck > id))
                (void)tdm__dec_fail(&d, "bad pending transaction");
            else if (d.err == TDM_OK)
                tdm__kafka_logf(&s->log,
                                "transaction '%s-%llu' of "
                                "checkpoint %llu cannot be resumed: if it "
                                "was not committed before the restart, its "
                                "results are lost (docs/checkpoints.md)",
                                s->slots[0].txid, (unsigned long long)slot,
                                (unsigned long long)ck);
        }
        if (d.err != TDM_OK) {
            size_t off = 0;
            const char *why = "bad input";
            (void)tdm__dec_error(&d, &off, &why);
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                            "kafka sink '%s' state: %s at offset %zu", s->topic,
                            why, off);
            goto out;
        }
    }
    for (int i = 0; i < KK_TX_SLOTS && err == TDM_OK; i++)
        err = slot_init(s, i, errbuf, errbuf_size);
out:
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Frees the sink as a crash would leave it (no flush, no abort). */
static void kk_abandon(tdm__sinkobj *s)
{
    free_sink(s);
}

/* Waits for delivery (30 s) and frees the sink.  TDM_OK, or TDM_ERR_IO
 * "N results not delivered ..." naming the topic.  NULL is fine. */
static tdm_err kk_close(tdm__sinkobj *s, char *errbuf, size_t errbuf_size)
{
    tdm_err err;

    if (!s)
        return TDM_OK;
    err = wait_delivered(s, KK_CLOSE_MS, errbuf, errbuf_size);
    if (s->tx)
        err = tx_close(s, err, errbuf, errbuf_size);
    free_sink(s);
    return err;
}

/* Exactly-once: keeps @p kc (taken) as the slots' template and names
 * the slots' transactional ids; the producers are made by recover() or
 * the first write. */
static tdm_err tx_setup(tdm__sinkobj *s, const tdm__sink_conf *conf,
                        rd_kafka_conf_t *kc, char *errbuf, size_t errbuf_size)
{
    static const tdm__kk_txn_ops real = {
        .init = rd_kafka_init_transactions,
        .begin = rd_kafka_begin_transaction,
        .commit = rd_kafka_commit_transaction,
        .abort = rd_kafka_abort_transaction,
    };

    s->tmpl = kc;
    if (conf->writer < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "writer index %d is negative", conf->writer);
    s->tx = true;
    s->writer = conf->writer;
    s->cur = -1;
    s->ops = conf->kafka_txn_ops ? *conf->kafka_txn_ops : real;
    for (int i = 0; i < KK_TX_SLOTS; i++) {
        int n = snprintf(s->slots[i].txid, sizeof s->slots[i].txid,
                         "tidemark-%s-%s-%d-%d",
                         conf->job_name ? conf->job_name : "job",
                         conf->name ? conf->name : "sink", conf->writer, i);
        if (n < 0 || (size_t)n >= sizeof s->slots[i].txid)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "transactional.id '%s' is too long",
                             s->slots[i].txid);
    }
    return TDM_OK;
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
    if (conf->exactly_once) {
        err = tx_setup(s, conf, kc, errbuf, errbuf_size);
        if (err != TDM_OK)
            goto fail;
        *out = s;
        return TDM_OK;
    }
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
    .version = 3,
    .open = kk_open,
    .write_result = kk_write_result,
    .write_row = kk_write_row,
    .write_dead = kk_write_dead,
    .close = kk_close,
    .flush = kk_flush,
    .pre_commit = kk_pre_commit,
    .commit = kk_commit,
    .recover = kk_recover,
    .abandon = kk_abandon,
};
