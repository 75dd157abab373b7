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
 * Exactly-once (conf->exactly_once, connect.h version 3) is a
 * write-ahead log plus a transactional committer (Flink's
 * GenericWriteAheadSink with a committer that knows what it committed):
 * the formatted messages of a checkpoint epoch are kept, not produced;
 * pre_commit() puts them into the checkpoint (the sink's state), and
 * commit(n) produces each pending epoch <= n in one Kafka transaction of
 * the writer's producer (transactional.id "tidemark-<job>-<sink>-
 * <writer>") that also commits offset n for a marker group of the same
 * name on partition 0 of the topic (send_offsets_to_transaction), so the
 * rows and "epoch n committed" become visible atomically.  recover()
 * fences older producers (init_transactions), reads the marker and
 * produces the epochs of the restored checkpoint above it; a fresh start
 * resets the marker to 0.  docs/checkpoints.md, "Kafka sink
 * transactions", states the guarantee.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connect/kafka.h"
#include "core/busy.h"
#ifdef TDM_TEST_HOOKS
#include <signal.h>

#include "testhooks.h"
#endif
#include "state/ckpt_codec.h"

/* How long a write waits while the producer queue is full. */
#define KK_QUEUE_WAIT_MS 30000
/* flush() and close() wait this long for acknowledgements. */
#define KK_FLUSH_MS 10000
#define KK_CLOSE_MS 30000
/* Timeout of the transaction calls and of the marker read. */
#define KK_TX_MS 30000

/* One pre-committed epoch: its messages, encoded as in the checkpoint
 * (docs/checkpoints.md, "Kafka sink"): per message u8 flags (1 key,
 * 2 value), svar timestamp, then the key and the value as bytes. */
typedef struct kk_epoch {
    uint64_t id;  /* the checkpoint that closed it */
    uint64_t n;   /* messages */
    uint8_t *buf; /* owned */
    size_t len;
} kk_epoch;

struct tdm__sinkobj {
    tdm__klog log;  /* first: the rd_kafka_t opaque */
    rd_kafka_t *rk; /* at-least-once: the producer */
    char *topic;
    int mode;           /* 0 append, 1 upsert, 2 retract */
    pthread_mutex_t mu; /* formatting buffers, produce, the log */
    bool mu_ok;
    tdm__sbuf key, val;
    tdm__sel *sel;       /* the key "select", or NULL (under mu) */
    atomic_long failed;  /* failed deliveries */
    pthread_mutex_t emu; /* first_err */
    bool emu_ok;
    char first_err[512];
    tdm__kguard guard; /* "brokers.timeout" (kafka_guard.c) */
    /* Exactly-once: the write-ahead log and the committer. */
    bool tx;
    bool debug; /* log every committed transaction */
    int writer;
    rd_kafka_t *txp;        /* the transactional producer (recover) */
    bool fatal;             /* txp failed for good: replace the object */
    char txid[200];         /* transactional.id and marker group */
    rd_kafka_conf_t *tmpl;  /* the producer's configuration */
    rd_kafka_conf_t *ctmpl; /* the marker reader's (a consumer) */
#ifdef TDM_TEST_HOOKS
    /* Tests on the mock cluster, which drops transactional offset
     * commits: TDM_KAFKA_MOCK_MARKER=1 also commits the marker plainly
     * after each transaction (mk: that consumer). */
    bool mock_marker;
    rd_kafka_t *mk;
    /* Tests: TDM_KAFKA_MOCK_KILL=N makes the process SIGKILL itself just
     * before its N-th commit of a transaction with messages (any writer,
     * counted in mock_prepared), like TDM_FIO_FAULT's KILL; 0 off. */
    long kill_at;
#endif
    tdm__enc cur; /* messages since the last pre-commit */
    uint64_t cur_n;
    kk_epoch *pend; /* pre-committed, oldest first */
    int n_pend, cap_pend;
    uint64_t last_pre; /* id of the last pre-commit, 0 none */
    /* Delivery of the transaction being committed (debug line): the
     * offsets (debug only) and their partition. */
    int64_t *d_off;
    size_t d_n, d_cap;
    int32_t d_part;
    bool d_multi;
    tdm__kk_txn_ops ops;
};

#ifdef TDM_TEST_HOOKS
/* Transactions with messages about to commit in this process, for
 * TDM_KAFKA_MOCK_KILL (a test seam, testhooks.h). */
static atomic_long mock_prepared;
#endif

/* Records a failure: the first reason is written before the count
 * moves, so a reader that sees failed > 0 (flush, close, on another
 * thread) also sees the reason.  True for the first failure. */
static bool note_failure_text(tdm__sinkobj *s, const char *why)
{
    bool first;
    pthread_mutex_lock(&s->emu);
    first = s->first_err[0] == '\0';
    if (first)
        snprintf(s->first_err, sizeof s->first_err, "%s", why);
    pthread_mutex_unlock(&s->emu);
    atomic_fetch_add(&s->failed, 1);
    return first;
}

/* note_failure_text with librdkafka's text for @p e. */
static bool note_failure(tdm__sinkobj *s, rd_kafka_resp_err_t e)
{
    return note_failure_text(s, rd_kafka_err2str(e));
}

/* The broker guard's verdict for @p rk (kafka_guard.c): TDM_OK, or
 * TDM_ERR_IO with the reason noted as a failure (every later flush and
 * close fails with it too) and in errbuf. */
static tdm_err guard_check(tdm__sinkobj *s, rd_kafka_t *rk, char *errbuf,
                           size_t errbuf_size)
{
    char why[400];

    if (tdm__kguard_check(&s->guard, rk, why, sizeof why) == TDM_OK)
        return TDM_OK;
    if (note_failure_text(s, why))
        tdm__kafka_logf(&s->log, "%s", why);
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "kafka topic '%s': %s",
                     s->topic, why);
}

/* Delivery report: counts failures and keeps the first reason; in a
 * transaction, where its messages went (served by the committing
 * thread inside commit_transaction's flush). */
static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    tdm__sinkobj *s = rd_kafka_opaque(rk);

    (void)opaque;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        tdm__kguard_up(&s->guard);
        if (s->tx && s->debug) {
            if (s->d_n == s->d_cap) {
                size_t cap = s->d_cap ? 2 * s->d_cap : 256;
                int64_t *np = tdm__realloc(s->d_off, cap * sizeof *np);
                if (!np) {
                    s->d_multi = true; /* no offsets in the line */
                    return;
                }
                s->d_off = np;
                s->d_cap = cap;
            }
            s->d_off[s->d_n++] = m->offset;
            if (s->d_part >= 0 && s->d_part != m->partition)
                s->d_multi = true;
            s->d_part = m->partition;
        }
        return;
    }
    if (note_failure(s, m->err))
        tdm__kafka_logf(&s->log, "delivery to '%s' failed: %s", s->topic,
                        rd_kafka_err2str(m->err));
}

/* Where a message of a transaction lies: the writer (its
 * transactional id, which names job, sink, task and writer), the epoch
 * (the checkpoint) and its place in the epoch.  Sent as the headers
 * tdm-tx, tdm-epoch and tdm-seq, so a reader can prove each epoch
 * arrived whole and once (docs/scale-out.md, "What the mock cannot
 * show"). */
typedef struct tx_tag {
    const char *txid;
    uint64_t epoch, seq;
} tx_tag;

/* One producev call: the message, with @p tag's headers when not
 * NULL. */
static rd_kafka_resp_err_t producev(tdm__sinkobj *s, rd_kafka_t *rk,
                                    const char *key, size_t key_len,
                                    const char *val, size_t val_len, int64_t ts,
                                    const tx_tag *tag)
{
    if (!tag)
        return rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(s->topic),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, key ? key_len : 0),
            RD_KAFKA_V_VALUE((void *)val, val ? val_len : 0),
            RD_KAFKA_V_TIMESTAMP(ts > 0 ? ts : 0), RD_KAFKA_V_END);
    char ep[24], seq[24];
    int ep_n = snprintf(ep, sizeof ep, "%llu", (unsigned long long)tag->epoch);
    int seq_n = snprintf(seq, sizeof seq, "%llu", (unsigned long long)tag->seq);
    return rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(s->topic),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(key, key ? key_len : 0),
        RD_KAFKA_V_VALUE((void *)val, val ? val_len : 0),
        RD_KAFKA_V_TIMESTAMP(ts > 0 ? ts : 0),
        RD_KAFKA_V_HEADER("tdm-tx", tag->txid, (ssize_t)strlen(tag->txid)),
        RD_KAFKA_V_HEADER("tdm-epoch", ep, (ssize_t)ep_n),
        RD_KAFKA_V_HEADER("tdm-seq", seq, (ssize_t)seq_n), RD_KAFKA_V_END);
}

/* Produces one message on @p rk, waiting while the queue is full
 * (backpressure).  @p key / @p val may be NULL (no key; tombstone);
 * @p tag (NULL: none) places it in a transaction's epoch.
 * Mutex held.  TDM_OK or TDM_ERR_IO (also from the broker guard,
 * at-least-once only). */
static tdm_err produce(tdm__sinkobj *s, rd_kafka_t *rk, const char *key,
                       size_t key_len, const char *val, size_t val_len,
                       int64_t ts, const tx_tag *tag)
{
    int64_t since = -1;
    char why[8];

    /* Transactions (commit) keep their own timeouts: not guarded. */
    if (!s->tx && guard_check(s, rk, why, sizeof why) != TDM_OK)
        return TDM_ERR_IO;
    for (;;) {
        rd_kafka_resp_err_t e =
            producev(s, rk, key, key_len, val, val_len, ts, tag);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            rd_kafka_poll(rk, 0); /* delivery reports */
            return TDM_OK;
        }
        /* Queue full: serve delivery reports until there is room (the
         * writing thread's time in its sink, core/busy.h). */
        int64_t busy = e == RD_KAFKA_RESP_ERR__QUEUE_FULL
                           ? tdm__busy_begin(TDM__BUSY_SINK)
                           : 0;
        bool room = e == RD_KAFKA_RESP_ERR__QUEUE_FULL &&
                    tdm__kafka_wait_room(rk, &since, KK_QUEUE_WAIT_MS);
        tdm__busy_end(TDM__BUSY_SINK, busy);
        if (!room) {
            tdm__kafka_logf(&s->log, "cannot produce to '%s': %s", s->topic,
                            rd_kafka_err2str(e));
            note_failure(s, e);
            return TDM_ERR_IO;
        }
    }
}

/* A message: produced at once, or (exactly-once) appended to the
 * current epoch.  Mutex held.  TDM_OK, TDM_ERR_IO, TDM_ERR_NOMEM. */
static tdm_err emit(tdm__sinkobj *s, const char *key, size_t key_len,
                    const char *val, size_t val_len, int64_t ts)
{
    if (!s->tx)
        return produce(s, s->rk, key, key_len, val, val_len, ts, NULL);
    tdm__enc_u8(&s->cur, (uint8_t)((key ? 1 : 0) | (val ? 2 : 0)));
    tdm__enc_svar(&s->cur, ts);
    if (key)
        tdm__enc_bytes(&s->cur, key, key_len);
    if (val)
        tdm__enc_bytes(&s->cur, val, val_len);
    if (s->cur.oom)
        return TDM_ERR_NOMEM;
    s->cur_n++;
    return TDM_OK;
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
        tdm__json_result(row, s->mode, false, s->sel, &s->val);
    if (s->key.oom || s->val.oom) {
        s->key.oom = s->val.oom = false;
        pthread_mutex_unlock(&s->mu);
        return TDM_ERR_NOMEM;
    }
    err = emit(s, has_key ? s->key.p : NULL, s->key.len, tomb ? NULL : s->val.p,
               s->val.len, ts);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Writes a late record (no key).  Thread-safe. */
static tdm_err kk_write_row(tdm__sinkobj *s, const tdm__row *row)
{
    tdm_err err;

    pthread_mutex_lock(&s->mu);
    s->val.len = 0;
    tdm__json_late(row, s->sel, &s->val);
    if (s->val.oom) {
        s->val.oom = false;
        pthread_mutex_unlock(&s->mu);
        return TDM_ERR_NOMEM;
    }
    err = emit(s, NULL, 0, s->val.p, s->val.len, row->ts);
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
    err = emit(s, location, location ? strlen(location) : 0, s->val.p,
               s->val.len, 0);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Waits up to @p ms for every message to be acknowledged.  TDM_OK, or
 * TDM_ERR_IO with "N results not delivered ..." in errbuf. */
static tdm_err wait_delivered(tdm__sinkobj *s, int ms, char *errbuf,
                              size_t errbuf_size)
{
    int64_t end = tdm__mono_ms() + ms;
    long failed;
    int left = 0;

    /* In slices, so that the broker guard can end a wait for brokers
     * that cannot be reached. */
    while (s->rk &&
           rd_kafka_flush(s->rk, 200) == RD_KAFKA_RESP_ERR__TIMED_OUT &&
           tdm__mono_ms() < end)
        if (guard_check(s, s->rk, errbuf, errbuf_size) != TDM_OK)
            return TDM_ERR_IO;
    if (s->rk)
        left = rd_kafka_outq_len(s->rk);
    failed = atomic_load(&s->failed);
    if (left > 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "%d results not delivered to '%s' within %d ms", left,
                         s->topic, ms);
    if (failed > 0) {
        char why[sizeof s->first_err];
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
 * (a failed delivery fails every later flush).  Exactly-once: nothing
 * is produced before commit, so only earlier failures count.
 * Thread-safe. */
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
    if (s->txp)
        rd_kafka_destroy(s->txp);
#ifdef TDM_TEST_HOOKS
    if (s->mk)
        rd_kafka_destroy(s->mk);
#endif
    if (s->tmpl)
        rd_kafka_conf_destroy(s->tmpl);
    if (s->ctmpl)
        rd_kafka_conf_destroy(s->ctmpl);
    for (int i = 0; i < s->n_pend; i++)
        tdm__free(s->pend[i].buf);
    tdm__free(s->pend);
    tdm__free(s->d_off);
    tdm__enc_free(&s->cur);
    tdm__sbuf_free(&s->key);
    tdm__sbuf_free(&s->val);
    tdm__sel_free(s->sel);
    tdm__free(s->topic);
    if (s->mu_ok)
        pthread_mutex_destroy(&s->mu);
    if (s->emu_ok)
        pthread_mutex_destroy(&s->emu);
    tdm__kguard_destroy(&s->guard); /* after every client */
    tdm__free(s);
}

/* ---- Exactly-once: transactions ---- */

/* Logs and records a failed transaction call; frees @p e.  TDM_ERR_IO,
 * or TDM_OK when @p e is NULL.  A fatal error makes the object unusable
 * (the producer was fenced or failed for good). */
static tdm_err tx_fail(tdm__sinkobj *s, const char *what, rd_kafka_error_t *e,
                       char *errbuf, size_t errbuf_size)
{
    if (!e)
        return TDM_OK;
    tdm__kafka_logf(&s->log, "%s of transaction '%s' failed: %s", what, s->txid,
                    rd_kafka_error_string(e));
    tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
              "%s of transaction '%s' (topic '%s') failed: %s", what, s->txid,
              s->topic, rd_kafka_error_string(e));
    pthread_mutex_lock(&s->emu);
    if (s->first_err[0] == '\0')
        snprintf(s->first_err, sizeof s->first_err, "%s: %s", what,
                 rd_kafka_error_string(e));
    pthread_mutex_unlock(&s->emu);
    if (rd_kafka_error_is_fatal(e))
        s->fatal = true;
    rd_kafka_error_destroy(e);
    return TDM_ERR_IO;
}

/* Creates the transactional producer and runs init_transactions, which
 * fences every older producer with the same transactional.id and aborts
 * its open transaction.  Mutex held. */
static tdm_err tx_init(tdm__sinkobj *s, char *errbuf, size_t errbuf_size)
{
    char why[512];
    rd_kafka_conf_t *kc;

    if (s->txp)
        return TDM_OK;
    kc = rd_kafka_conf_dup(s->tmpl);
    if (!kc)
        return TDM_ERR_NOMEM;
    if (rd_kafka_conf_set(kc, "transactional.id", s->txid, why, sizeof why) !=
        RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(kc);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "transactional.id: %s", why);
    }
    s->txp = rd_kafka_new(RD_KAFKA_PRODUCER, kc, why, sizeof why);
    if (!s->txp) {
        rd_kafka_conf_destroy(kc);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot create the kafka producer: %s", why);
    }
    tdm_err err =
        tx_fail(s, "init", s->ops.init(s->txp, KK_TX_MS), errbuf, errbuf_size);
    if (err != TDM_OK) {
        rd_kafka_destroy(s->txp);
        s->txp = NULL;
    }
    return err;
}

/* Reads and checks one message of an epoch's log.  TDM_OK or the
 * decoder's error. */
static tdm_err next_message(tdm__dec *d, const void **key, size_t *key_len,
                            const void **val, size_t *val_len, int64_t *ts)
{
    uint8_t flags = 0;

    *key = *val = NULL;
    *key_len = *val_len = 0;
    if (tdm__dec_u8(d, &flags) != TDM_OK)
        return d->err;
    if (flags > 3)
        return tdm__dec_fail(d, "bad message flags");
    tdm__dec_svar(d, ts);
    if (flags & 1)
        tdm__dec_bytes(d, key, key_len);
    if (flags & 2)
        tdm__dec_bytes(d, val, val_len);
    /* Empty but present stays present (NULL means none). */
    if ((flags & 1) && !*key)
        *key = "";
    if ((flags & 2) && !*val)
        *val = "";
    return d->err;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* log.level debug: where the messages of @p ep went, before the commit
 * ("offsets=<topic>[p]@a-b,c-d"; tests emulate read_committed consumers
 * on the mock cluster with it).  Waits for their delivery.  Mutex held. */
static void log_prepared(tdm__sinkobj *s, const kk_epoch *ep)
{
    tdm__sbuf b = {0};
    char part[300];

    rd_kafka_flush(s->txp, KK_TX_MS);
    if (s->d_n > 0 && !s->d_multi && s->d_n == ep->n) {
        qsort(s->d_off, s->d_n, sizeof *s->d_off, cmp_i64);
        snprintf(part, sizeof part, " offsets=%s[%d]@", s->topic,
                 (int)s->d_part);
        tdm__sbuf_put(&b, part, strlen(part));
        for (size_t i = 0; i < s->d_n;) {
            size_t j = i;
            while (j + 1 < s->d_n && s->d_off[j + 1] == s->d_off[j] + 1)
                j++;
            snprintf(part, sizeof part, "%s%lld-%lld", i ? "," : "",
                     (long long)s->d_off[i], (long long)s->d_off[j]);
            tdm__sbuf_put(&b, part, strlen(part));
            i = j + 1;
        }
    }
    tdm__sbuf_put(&b, "", 1);
    tdm__kafka_logf(&s->log,
                    "debug txn prepared id=%s checkpoint=%llu "
                    "messages=%llu%s",
                    s->txid, (unsigned long long)ep->id,
                    (unsigned long long)ep->n, b.oom ? "" : b.p);
    tdm__sbuf_free(&b);
}

#ifdef TDM_TEST_HOOKS
/* TDM_KAFKA_MOCK_MARKER: commits @p mark for the marker group plainly,
 * as a broker does when a transaction with that offset commits (the
 * mock cluster drops transactional offset commits).  A crash between the
 * transaction's commit and this one leaves the marker behind: the test
 * that sets it counts such a transaction as aborted.  Mutex held. */
static void mock_marker(tdm__sinkobj *s, int64_t mark)
{
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_resp_err_t e;
    char why[512];

    if (!s->mk) {
        rd_kafka_conf_t *cc = rd_kafka_conf_dup(s->ctmpl);
        if (!cc)
            return;
        s->mk = rd_kafka_new(RD_KAFKA_CONSUMER, cc, why, sizeof why);
        if (!s->mk) {
            rd_kafka_conf_destroy(cc);
            tdm__kafka_logf(&s->log, "mock marker: %s", why);
            return;
        }
    }
    l = rd_kafka_topic_partition_list_new(1);
    if (!l)
        return;
    rd_kafka_topic_partition_list_add(l, s->topic, 0)->offset = mark;
    e = tdm__kafka_commit(s->mk, l);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        tdm__kafka_logf(&s->log, "mock marker %lld: %s", (long long)mark,
                        rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(l);
}

/* The test seams' settings, from the environment (testhooks.h). */
static void mock_read_env(tdm__sinkobj *s)
{
    const char *mm = getenv("TDM_KAFKA_MOCK_MARKER");
    s->mock_marker = mm && strcmp(mm, "1") == 0;
    const char *mkill = getenv("TDM_KAFKA_MOCK_KILL");
    s->kill_at = mkill ? strtol(mkill, NULL, 10) : 0;
}

/* TDM_KAFKA_MOCK_KILL: a crash with the checkpoint durable and its
 * transaction prepared, not committed: the case a sink without the
 * write-ahead log loses (tests/kafka/checkpoint.sh, scenarios tN). */
static void mock_kill_point(const tdm__sinkobj *s)
{
    if (s->kill_at > 0 && atomic_fetch_add(&mock_prepared, 1) + 1 == s->kill_at)
        raise(SIGKILL); /* never returns */
}
#endif

/* One transaction: the messages of @p ep (may be NULL: none) and the
 * marker offset @p mark for the group on partition 0 of the topic.
 * Aborted on failure (the epoch stays pending).  Mutex held. */
static tdm_err tx_run(tdm__sinkobj *s, const kk_epoch *ep, int64_t mark,
                      char *errbuf, size_t errbuf_size)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_consumer_group_metadata_t *md = NULL;
    long failed0 = atomic_load(&s->failed);
    tdm_err err;

    if (s->fatal)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "transaction '%s' (topic '%s'): the producer "
                         "failed for good: %s",
                         s->txid, s->topic, s->first_err);
    err = tx_init(s, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    err = tx_fail(s, "begin", s->ops.begin(s->txp), errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    s->d_n = 0;
    s->d_part = -1;
    s->d_multi = false;
    if (ep) {
        tdm__dec d;
        tdm__dec_init(&d, ep->buf, ep->len);
        for (uint64_t i = 0; i < ep->n && err == TDM_OK; i++) {
            const void *k, *v;
            size_t kl, vl;
            int64_t ts = 0;
            if (next_message(&d, &k, &kl, &v, &vl, &ts) != TDM_OK) {
                err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                                "kafka sink '%s': epoch %llu: bad log",
                                s->topic, (unsigned long long)ep->id);
                break;
            }
            tx_tag tag = {.txid = s->txid, .epoch = ep->id, .seq = i};
            err = produce(s, s->txp, k, kl, v, vl, ts, &tag);
            if (err != TDM_OK)
                tdm__errf(errbuf, errbuf_size, err,
                          "cannot produce to "
                          "'%s' in transaction '%s'",
                          s->topic, s->txid);
        }
    }
    if (err == TDM_OK && ep && s->debug)
        log_prepared(s, ep);
    if (err == TDM_OK) {
        l = rd_kafka_topic_partition_list_new(1);
        md = rd_kafka_consumer_group_metadata_new(s->txid);
        if (!l || !md)
            err = TDM_ERR_NOMEM;
    }
    if (err == TDM_OK) {
        rd_kafka_topic_partition_list_add(l, s->topic, 0)->offset = mark;
        err = tx_fail(s, "send_offsets",
                      s->ops.send_offsets(s->txp, l, md, KK_TX_MS), errbuf,
                      errbuf_size);
    }
    /* A failed delivery fails the commit too (librdkafka flushes and
     * checks first); caught here it saves the round trips. */
    if (err == TDM_OK && atomic_load(&s->failed) > failed0)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "transaction '%s': a delivery to '%s' failed: %s",
                        s->txid, s->topic, s->first_err);
#ifdef TDM_TEST_HOOKS
    if (err == TDM_OK && ep)
        mock_kill_point(s);
#endif
    if (err == TDM_OK)
        err = tx_fail(s, "commit", s->ops.commit(s->txp, KK_TX_MS), errbuf,
                      errbuf_size);
    if (err != TDM_OK && !s->fatal)
        (void)tx_fail(s, "abort", s->ops.abort(s->txp, KK_TX_MS), NULL, 0);
#ifdef TDM_TEST_HOOKS
    if (err == TDM_OK && s->mock_marker)
        mock_marker(s, mark);
#endif
    if (err == TDM_OK && ep && s->debug)
        tdm__kafka_logf(&s->log, "debug txn committed id=%s checkpoint=%llu",
                        s->txid, (unsigned long long)ep->id);
    if (l)
        rd_kafka_topic_partition_list_destroy(l);
    if (md)
        rd_kafka_consumer_group_metadata_destroy(md);
    return err;
}

/* The marker: the last epoch whose transaction committed (0 after a
 * fresh start; -1 when never written).  Mutex held. */
static tdm_err read_marker(tdm__sinkobj *s, int64_t *mark, char *errbuf,
                           size_t errbuf_size)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_conf_t *cc = rd_kafka_conf_dup(s->ctmpl);
    rd_kafka_t *c = NULL;
    char why[512];
    rd_kafka_resp_err_t e;
    tdm_err err = TDM_OK;

    if (!cc)
        return TDM_ERR_NOMEM;
    c = rd_kafka_new(RD_KAFKA_CONSUMER, cc, why, sizeof why);
    if (!c) {
        rd_kafka_conf_destroy(cc);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot create the kafka consumer reading the "
                         "marker of '%s': %s",
                         s->txid, why);
    }
    l = rd_kafka_topic_partition_list_new(1);
    if (!l) {
        err = TDM_ERR_NOMEM;
        goto out;
    }
    rd_kafka_topic_partition_list_add(l, s->topic, 0);
    e = rd_kafka_committed(c, l, KK_TX_MS);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        e = l->elems[0].err;
    if (e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        /* No such partition: nothing was ever committed to it. */
        l->elems[0].offset = -1;
        e = RD_KAFKA_RESP_ERR_NO_ERROR;
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "kafka sink '%s': cannot read the commit marker "
                        "(group '%s', %s[0]): %s",
                        s->topic, s->txid, s->topic, rd_kafka_err2str(e));
        goto out;
    }
    *mark = l->elems[0].offset < 0 ? -1 : l->elems[0].offset;
out:
    if (l)
        rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return err;
}

/* Exactly-once at close: pre-committed epochs not committed, and rows
 * written after the last pre-commit (discarded: never produced), are
 * reported as TDM_ERR_STATE.  @p err is close's result so far (kept when
 * not TDM_OK). */
static tdm_err tx_close(tdm__sinkobj *s, tdm_err err, char *errbuf,
                        size_t errbuf_size)
{
    if (err == TDM_OK && (s->cur_n > 0 || s->n_pend > 0))
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "kafka sink '%s': closed with %llu rows not "
                        "pre-committed (discarded) and %d epochs not "
                        "committed",
                        s->topic, (unsigned long long)s->cur_n, s->n_pend);
    return err;
}

/* Pre-commit of checkpoint @p ckpt_id (connect.h, version 3): the rows
 * since the last pre-commit become pending epoch ckpt_id, and the state
 * section records every pending epoch with its messages. */
static tdm_err kk_pre_commit(tdm__sinkobj *s, uint64_t ckpt_id, tdm__enc *st,
                             char *errbuf, size_t errbuf_size)
{
    tdm_err err = TDM_OK;

    if (!s)
        return TDM_OK;
    if (!s->tx)
        return wait_delivered(s, KK_FLUSH_MS, errbuf, errbuf_size);
    pthread_mutex_lock(&s->mu);
    if (ckpt_id <= s->last_pre) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "kafka sink '%s': pre-commit of checkpoint %llu "
                        "after %llu",
                        s->topic, (unsigned long long)ckpt_id,
                        (unsigned long long)s->last_pre);
        goto out;
    }
    if (s->cur_n > 0) {
        if (s->n_pend == s->cap_pend) {
            int cap = s->cap_pend ? 2 * s->cap_pend : 4;
            kk_epoch *np = tdm__realloc(s->pend, (size_t)cap * sizeof *np);
            if (!np) {
                err = TDM_ERR_NOMEM;
                goto out;
            }
            s->pend = np;
            s->cap_pend = cap;
        }
        kk_epoch *ep = &s->pend[s->n_pend];
        ep->id = ckpt_id;
        ep->n = s->cur_n;
        err = tdm__enc_finish(&s->cur, &ep->buf, &ep->len);
        tdm__enc_init(&s->cur);
        if (err != TDM_OK)
            goto out; /* the rows are lost: the run fails */
        s->n_pend++;
        s->cur_n = 0;
    }
    s->last_pre = ckpt_id;
    tdm__enc_begin(st, TDM__CKPT_TAG_KAFKA_SINK);
    tdm__enc_uvar(st, 2); /* version */
    tdm__enc_uvar(st, (uint64_t)s->writer);
    tdm__enc_uvar(st, ckpt_id);
    tdm__enc_str(st, s->txid);
    tdm__enc_uvar(st, (uint64_t)s->n_pend);
    for (int i = 0; i < s->n_pend; i++) {
        tdm__enc_uvar(st, s->pend[i].id);
        tdm__enc_uvar(st, s->pend[i].n);
        tdm__enc_bytes(st, s->pend[i].buf, s->pend[i].len);
    }
    tdm__enc_end(st);
out:
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Produces and commits the pending epochs <= @p upto, oldest first; the
 * first failure stops (the rest stay pending).  Mutex held. */
static tdm_err commit_upto(tdm__sinkobj *s, uint64_t upto, char *errbuf,
                           size_t errbuf_size)
{
    int done = 0;
    tdm_err err = TDM_OK;

    while (done < s->n_pend && s->pend[done].id <= upto) {
        err = tx_run(s, &s->pend[done], (int64_t)s->pend[done].id, errbuf,
                     errbuf_size);
        if (err != TDM_OK)
            break;
        tdm__free(s->pend[done].buf);
        done++;
    }
    if (done > 0) {
        memmove(s->pend, s->pend + done,
                (size_t)(s->n_pend - done) * sizeof *s->pend);
        s->n_pend -= done;
    }
    return err;
}

/* Commits the pending epochs of checkpoints <= @p ckpt_id.  Idempotent;
 * a failed commit is retried by the next. */
static tdm_err kk_commit(tdm__sinkobj *s, uint64_t ckpt_id, char *errbuf,
                         size_t errbuf_size)
{
    tdm_err err;

    if (!s || !s->tx)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    err = commit_upto(s, ckpt_id, errbuf, errbuf_size);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Reads the state section into the pending epochs (validated: every
 * message decodes).  A version-1 section (pending transactions without
 * their rows) is logged.  Mutex held.  TDM_OK, TDM_ERR_PARSE, NOMEM. */
static tdm_err load_state(tdm__sinkobj *s, tdm__dec *st, uint64_t *ckpt,
                          char *errbuf, size_t errbuf_size)
{
    uint64_t tag = 0, ver = 0, writer = 0, n = 0;
    char *txid = NULL;
    tdm__dec d;
    tdm_err err = TDM_OK;

    if (tdm__dec_section(st, &tag, &d) != TDM_OK)
        d = *st;
    else if (tag != TDM__CKPT_TAG_KAFKA_SINK)
        (void)tdm__dec_fail(&d, "not a kafka sink section");
    else if (tdm__dec_uvar(&d, &ver) == TDM_OK && ver != 1 && ver != 2)
        (void)tdm__dec_fail(&d, "unknown version");
    else if (tdm__dec_uvar(&d, &writer) == TDM_OK &&
             writer != (uint64_t)s->writer)
        (void)tdm__dec_fail(&d, "state of another writer");
    else if (tdm__dec_uvar(&d, ckpt) == TDM_OK &&
             tdm__dec_str(&d, &txid) == TDM_OK && ver == 2 &&
             strcmp(txid, s->txid) != 0)
        (void)tdm__dec_fail(&d, "transactional.id differs");
    tdm__free(txid);
    if (d.err == TDM_OK && tdm__dec_uvar(&d, &n) == TDM_OK &&
        n > tdm__dec_left(&d))
        (void)tdm__dec_fail(&d, "too many pending epochs");
    for (uint64_t i = 0; d.err == TDM_OK && i < n; i++) {
        uint64_t id = 0, msgs = 0, slot = 0;
        const void *p = NULL;
        size_t len = 0;
        if (ver == 1) {
            /* Version 1: a transaction left open, which recovery's
             * init_transactions aborts; its rows are not in the state. */
            if (tdm__dec_uvar(&d, &id) == TDM_OK &&
                tdm__dec_uvar(&d, &slot) == TDM_OK && (slot >= 4 || id > *ckpt))
                (void)tdm__dec_fail(&d, "bad pending transaction");
            else if (d.err == TDM_OK)
                tdm__kafka_logf(&s->log,
                                "checkpoint %llu (an older "
                                "format) lists a transaction that cannot "
                                "be resumed: if it was not committed "
                                "before the restart, its results are lost",
                                (unsigned long long)id);
            continue;
        }
        if (tdm__dec_uvar(&d, &id) != TDM_OK ||
            tdm__dec_uvar(&d, &msgs) != TDM_OK ||
            tdm__dec_bytes(&d, &p, &len) != TDM_OK)
            break;
        if (id > *ckpt || id == 0 || msgs == 0 || msgs > len ||
            (i > 0 && id <= s->pend[s->n_pend - 1].id)) {
            (void)tdm__dec_fail(&d, "bad pending epoch");
            break;
        }
        tdm__dec m;
        tdm__dec_init(&m, p, len);
        m.base = d.base + d.pos - len;
        for (uint64_t k = 0; k < msgs && m.err == TDM_OK; k++) {
            const void *a, *b;
            size_t al, bl;
            int64_t ts;
            (void)next_message(&m, &a, &al, &b, &bl, &ts);
        }
        if (m.err == TDM_OK && tdm__dec_left(&m) != 0)
            (void)tdm__dec_fail(&m, "bytes after the epoch's messages");
        if (m.err != TDM_OK) {
            d.err = m.err;
            d.err_off = m.err_off;
            d.why = m.why;
            break;
        }
        if (s->n_pend == s->cap_pend) {
            int cap = s->cap_pend ? 2 * s->cap_pend : 4;
            kk_epoch *np = tdm__realloc(s->pend, (size_t)cap * sizeof *np);
            if (!np)
                return TDM_ERR_NOMEM;
            s->pend = np;
            s->cap_pend = cap;
        }
        kk_epoch *ep = &s->pend[s->n_pend];
        ep->buf = tdm__malloc(len ? len : 1);
        if (!ep->buf)
            return TDM_ERR_NOMEM;
        memcpy(ep->buf, p, len);
        ep->len = len;
        ep->id = id;
        ep->n = msgs;
        s->n_pend++;
    }
    if (d.err != TDM_OK) {
        size_t off = 0;
        const char *why = "bad input";
        (void)tdm__dec_error(&d, &off, &why);
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                        "kafka sink '%s' state: %s at offset %zu", s->topic,
                        why, off);
    }
    return err;
}

/* Recover (connect.h, version 3): init_transactions fences the producer
 * of a crashed run and aborts what it left open.  Fresh start (@p st
 * NULL): the marker is reset to 0 in a transaction of its own.  From a
 * checkpoint: the epochs its state lists above the marker (their
 * transaction did not commit) are produced and committed now, the others
 * dropped (committed before the restart). */
static tdm_err kk_recover(tdm__sinkobj *s, tdm__dec *st, char *errbuf,
                          size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    uint64_t ckpt = 0;
    int64_t mark = -1;

    if (!s || !s->tx)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    if (s->cur_n > 0 || s->n_pend > 0 || s->last_pre > 0) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "kafka sink '%s': recover after writes", s->topic);
        goto out;
    }
    if (st) {
        err = load_state(s, st, &ckpt, errbuf, errbuf_size);
        if (err != TDM_OK)
            goto out;
    }
    err = tx_init(s, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto out;
    if (!st) {
        err = tx_run(s, NULL, 0, errbuf, errbuf_size);
        goto out;
    }
    err = read_marker(s, &mark, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto out;
    if (mark > 0 && (uint64_t)mark > ckpt)
        tdm__kafka_logf(&s->log,
                        "the last committed transaction is of "
                        "checkpoint %lld, newer than the restored %llu: "
                        "the results of the checkpoints in between are "
                        "in '%s' already and are written again",
                        (long long)mark, (unsigned long long)ckpt, s->topic);
    int skip = 0;
    while (skip < s->n_pend && mark >= 0 &&
           s->pend[skip].id <= (uint64_t)mark) {
        tdm__free(s->pend[skip].buf);
        skip++;
    }
    if (skip > 0) {
        memmove(s->pend, s->pend + skip,
                (size_t)(s->n_pend - skip) * sizeof *s->pend);
        s->n_pend -= skip;
    }
    if (s->n_pend > 0)
        tdm__kafka_logf(&s->log,
                        "checkpoint %llu: %d epoch(s) whose "
                        "transaction did not commit (marker %lld) are "
                        "produced again",
                        (unsigned long long)ckpt, s->n_pend, (long long)mark);
    err = commit_upto(s, ckpt, errbuf, errbuf_size);
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

/* Exactly-once: keeps @p kc (taken) as the producer's template, names
 * the transactional id (also the marker group) and prepares the marker
 * reader's configuration; the producer is made by recover() or the
 * first commit. */
static tdm_err tx_setup(tdm__sinkobj *s, const tdm__sink_conf *conf,
                        rd_kafka_conf_t *kc, char *errbuf, size_t errbuf_size)
{
    static const tdm__kk_txn_ops real = {
        .init = rd_kafka_init_transactions,
        .begin = rd_kafka_begin_transaction,
        .commit = rd_kafka_commit_transaction,
        .abort = rd_kafka_abort_transaction,
        .send_offsets = rd_kafka_send_offsets_to_transaction,
    };
    const char *cdefaults[] = {
        "group.id", s->txid,           "enable.auto.commit",
        "false",    "isolation.level", "read_committed",
        NULL,
    };

    s->tmpl = kc;
    if (conf->writer < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "writer index %d is negative", conf->writer);
    s->tx = true;
    s->writer = conf->writer;
    s->debug = conf->debug;
#ifdef TDM_TEST_HOOKS
    mock_read_env(s);
#endif
    s->ops = real;
    if (conf->kafka_txn_ops) {
        const tdm__kk_txn_ops *o = conf->kafka_txn_ops;
        s->ops.init = o->init ? o->init : real.init;
        s->ops.begin = o->begin ? o->begin : real.begin;
        s->ops.commit = o->commit ? o->commit : real.commit;
        s->ops.abort = o->abort ? o->abort : real.abort;
        s->ops.send_offsets =
            o->send_offsets ? o->send_offsets : real.send_offsets;
    }
    tdm__enc_init(&s->cur);
    int n = snprintf(s->txid, sizeof s->txid, "tidemark-%s-%s-%d",
                     conf->job_name ? conf->job_name : "job",
                     conf->name ? conf->name : "sink", conf->writer);
    if (n < 0 || (size_t)n >= sizeof s->txid)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "transactional.id '%s' is too long", s->txid);
    return tdm__kafka_conf(conf->kafka_brokers, conf->kafka_props,
                           conf->kafka_n_props, cdefaults, s, &s->ctmpl, errbuf,
                           errbuf_size);
}

/* Starts the broker guard (kafka_guard.c) of "brokers.timeout" and
 * lets librdkafka's errors reach it. */
static tdm_err start_guard(tdm__sinkobj *s, const tdm__sink_conf *conf)
{
    const char *brokers = conf->kafka_brokers;

    for (int i = 0; !brokers && i < conf->kafka_n_props; i++)
        if (!strcmp(conf->kafka_props[2 * i], "bootstrap.servers"))
            brokers = conf->kafka_props[2 * i + 1];
    s->log.guard = &s->guard;
    return tdm__kguard_init(&s->guard, conf->kafka_brokers_timeout, brokers);
}

/* Why the last write failed (connect.h, version 5): the topic and the
 * first failure's reason, or "". */
static void kk_last_error(tdm__sinkobj *s, char *buf, size_t n)
{
    pthread_mutex_lock(&s->emu);
    if (s->first_err[0])
        snprintf(buf, n, "kafka topic '%s': %s", s->topic, s->first_err);
    else if (n > 0)
        buf[0] = '\0';
    pthread_mutex_unlock(&s->emu);
}

/* Opens the producer; @p mode is the output mode (0 append, 1 upsert,
 * 2 retract).  TDM_OK, TDM_ERR_INVAL (no topic, or a bad kafka.*
 * property, named), TDM_ERR_IO (the client cannot be created), NOMEM. */
static tdm_err kk_open(const tdm__sink_conf *conf, int mode, tdm__sinkobj **out,
                       char *errbuf, size_t errbuf_size)
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
    err = tdm__sel_new(conf->select, conf->n_select, &s->sel, errbuf,
                       errbuf_size);
    if (err != TDM_OK)
        goto fail;
    err = start_guard(s, conf);
    if (err != TDM_OK)
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
    .version = 5,
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
    .last_error = kk_last_error,
};
