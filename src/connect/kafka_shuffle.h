/* SPDX-License-Identifier: MIT */
/* kafka_shuffle.h - repartition through an internal Kafka topic (docs/
 * kafka.md "Repartition"): a Kafka source subtask whose job key is not the
 * Kafka key writes every row to partition key_group(hash(key)) of
 * "<group>-repartition" plus watermark markers into every partition, and
 * reads its share of that topic (group "<group>-shuffle"), each partition's
 * watermark the minimum over the writers' markers.  The marker bookkeeping
 * (tdm__kwm_*) is pure logic, tested without a broker.
 */
#ifndef TDM_KAFKA_SHUFFLE_H
#define TDM_KAFKA_SHUFFLE_H

#include "connect/connect.h"
#include "runtime/rt.h"

/* ====================================================================== */
/* Writers' watermarks per internal partition (pure logic)                 */
/* ====================================================================== */

/* For each internal partition (by local index), the last marker of every
 * writer heard from: its watermark, idleness and when (reader clock) it
 * arrived.  A partition's watermark is the minimum over the writers that
 * are neither idle nor silent for longer than the writer timeout; when
 * every writer heard from is idle or silent the partition is idle.  With
 * writers_expected = N > 0 a partition reports nothing until N distinct
 * writers were heard from on it.  Reported watermarks never go back. */
typedef struct tdm__kwm tdm__kwm;

/* Creates an empty table.  @p writer_timeout_ms > 0 (a writer silent for
 * that long stops counting), @p writers_expected >= 0.  Returns NULL on
 * OOM. */
tdm__kwm *tdm__kwm_new(tdm_time_ms writer_timeout_ms, int writers_expected);
/* Records a marker of writer @p writer (@p len bytes, any content) for
 * partition @p p (>= 0; the table grows) received at reader time @p now.
 * A marker older than the writer's previous one (lower watermark, same
 * writer) keeps the higher watermark.  TDM_OK, TDM_ERR_INVAL (p < 0),
 * TDM_ERR_NOMEM. */
tdm_err tdm__kwm_marker(tdm__kwm *t, int p, const char *writer, size_t len,
                        tdm_time_ms wm, int idle, tdm_time_ms now);
/* Partition @p p's combined state at time @p now into *wm (TDM_TIME_MIN
 * while no writer counts) and *idle.  Returns 1 when (wm, idle) differs
 * from what the previous call for @p p returned (the first call: when any
 * writer counts or the partition is idle), else 0.  Never fails. */
int tdm__kwm_get(tdm__kwm *t, int p, tdm_time_ms now, tdm_time_ms *wm,
                 int *idle);
/* Forgets partition @p p's writers (revoked): a later marker starts it
 * afresh, though its reported watermark still never goes back. */
void tdm__kwm_reset(tdm__kwm *t, int p);
/* Frees the table (NULL is fine). */
void tdm__kwm_free(tdm__kwm *t);

/* ====================================================================== */
/* Row encoding on the internal topic                                      */
/* ====================================================================== */

/* Message value of a row: a version byte (TDM__KSHUFFLE_VERSION), the
 * schema's field count as 2 bytes little-endian, then tdm__row_pack bytes
 * (host layout: every process of a job must run the same build on the same
 * architecture).  A marker has an empty value and the headers below. */
#define TDM__KSHUFFLE_VERSION 1
#define TDM__KSHUFFLE_H_WRITER "tdm-writer"
#define TDM__KSHUFFLE_H_WM "tdm-wm"
#define TDM__KSHUFFLE_H_IDLE "tdm-idle"

/* Encodes @p row as a message value into @p kb (kb->len bytes at kb->p;
 * the caller frees kb->p).  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__kshuffle_encode(const tdm__row *row, tdm__keybuf *kb);
/* Decodes a message value into a new row of @p b (strings copied into
 * its arena; partition 0), *out receiving it.  TDM_OK; TDM_ERR_PARSE (no
 * row added) when the bytes are not a row of b's schema (version, field
 * count, length or a string out of bounds); TDM_ERR_NOMEM when the batch
 * is full or its arena cannot grow. */
tdm_err tdm__kshuffle_decode(const void *value, size_t len, tdm__batch *b,
                             tdm__row **out);

/* ====================================================================== */
/* The shuffle: writer and reader of one source subtask                    */
/* ====================================================================== */

typedef struct tdm__kshuffle tdm__kshuffle;

typedef struct tdm__kshuffle_conf {
    const char *brokers;      /* bootstrap servers, NULL: from props */
    const char *group;        /* the source's group G (required) */
    const char *topic;        /* internal topic, NULL: "<G>-repartition"; it
                                 must exist (created by the operator or the
                                 mock host); its partition count is read */
    const char *const *props; /* "kafka.*" pairs (prefix cut), applied to
                                 the producer and the reader consumer */
    int n_props;
    const tdm__schema *schema;
    const int *key_idx; /* the job key: schema indices (required) */
    int n_key;
    /* The writer's watermark generator per input partition (the source's
     * configured strategy; copied).  NULL: bounded, 0 ms, interval 200 ms. */
    const tdm_wm_strategy *strategy;
    tdm_clock *clock; /* borrowed; NULL: a monotonic clock of its own */
    tdm_time_ms marker_interval; /* 0: 200 ms */
    tdm_time_ms writer_timeout;  /* "repartition.writer_timeout"; 0: 10 s */
    int writers_expected;        /* "repartition.writers"; 0: no wait */
    const char *writer_id;       /* NULL: "<host>-<pid>-<index>" */
    tdm__log_fn log;             /* may be NULL */
    void *log_ud;
} tdm__kshuffle_conf;

/* Opens subtask @p index of @p count: an idempotent producer to the
 * internal topic and a consumer of it in group "<G>-shuffle"
 * (cooperative-sticky, no auto commit, auto.offset.reset earliest unless
 * props say otherwise), subscribed at once.  Returns TDM_OK,
 * TDM_ERR_INVAL (a missing field or a bad kafka.* property, named),
 * TDM_ERR_IO (the internal topic is unknown after 10 s), TDM_ERR_NOMEM. */
tdm_err tdm__kshuffle_open(const tdm__kshuffle_conf *conf, int index, int count,
                           tdm__kshuffle **out, char *errbuf,
                           size_t errbuf_size);

/* ---- Writer side (called by the Kafka source with its input rows) ---- */

/* Produces @p row (an input row of input partition @p input, the source's
 * local index; any index >= 0, the writer grows) to the internal
 * partition of its job key, timestamp row->ts, and feeds the writer's
 * watermark generator of @p input.  Blocks (serving delivery reports) up
 * to 30 s while the producer queue is full.  TDM_OK, TDM_ERR_IO (produce
 * failed, message via tdm__kshuffle_errmsg), TDM_ERR_NOMEM. */
tdm_err tdm__kshuffle_write(tdm__kshuffle *sh, int input, const tdm__row *row);
/* Input partition @p input (the source's local index) was assigned: the
 * writer's watermark holds at its split (MIN until rows come, or idle
 * after the strategy's idle timeout) from now on.  @p input = -1 says an
 * assignment happened without a new partition (possibly empty).  Until
 * the first call (or write), a writer without input holds every
 * internal partition at MIN rather than claiming idleness: it cannot
 * know whether input is assigned but unread.  TDM_OK, TDM_ERR_NOMEM. */
tdm_err tdm__kshuffle_input_assigned(tdm__kshuffle *sh, int input);
/* Input partition @p input was revoked or ended: it stops holding the
 * writer's watermark.  TDM_OK or TDM_ERR_INVAL (never seen). */
tdm_err tdm__kshuffle_input_finished(tdm__kshuffle *sh, int input);
/* Every input partition ended for good (stop: end): the writer sends a
 * final marker with watermark TDM_TIME_MAX to every partition. */
tdm_err tdm__kshuffle_input_end(tdm__kshuffle *sh);
/* Waits up to @p timeout_ms until every row written so far is
 * acknowledged: call before committing input offsets (the internal topic
 * is the durable hand-off).  TDM_OK, TDM_ERR_IO (timeout or a failed
 * delivery). */
tdm_err tdm__kshuffle_flush(tdm__kshuffle *sh, int timeout_ms);

/* ---- Reader side: the members of a v2 source vtab ---- */

/* Appends up to @p max decoded rows to @p b, row->partition = the local
 * index of the internal partition (allocated at assignment, never
 * reused).  Also runs the writer's periodic watermark tick and sends its
 * markers (on a watermark change and at least every marker_interval).
 * Returns early after a marker that changed a partition's watermark, so
 * the runtime applies it after exactly the rows before it.  finished[p]
 * (n_partitions() flags) is set once when p is revoked; *eof = 1 after
 * every assigned partition received a TDM_TIME_MAX marker from every
 * writer heard from and the writer's own input ended.  Bad values go to
 * no dead letter: they are counted and logged once.  TDM_OK, TDM_ERR_IO,
 * TDM_ERR_NOMEM.  Waits at most ~50 ms. */
tdm_err tdm__kshuffle_poll(tdm__kshuffle *sh, tdm__batch *b, size_t max,
                           uint8_t *finished, int *eof);
/* As tdm__source_vtab.n_partitions / partition_name ("<topic>[3]") /
 * partition_floor (from the commit metadata "tdm1 wm=<ms>"). */
int tdm__kshuffle_n_partitions(tdm__kshuffle *sh);
const char *tdm__kshuffle_partition_name(tdm__kshuffle *sh, int p);
tdm_time_ms tdm__kshuffle_partition_floor(tdm__kshuffle *sh, int p);
/* As tdm__source_vtab.partition_watermark: the writers' combined
 * watermark of internal partition @p p (tdm__kwm_get at the clock's now). */
int tdm__kshuffle_partition_watermark(tdm__kshuffle *sh, int p, tdm_time_ms *wm,
                                      int *idle);
/* As tdm__source_vtab.mark / commit, for the reader's offsets on the
 * internal topic (metadata "tdm1 wm=<done>"; a ring of 64 marks, the
 * oldest dropped when full: commits lag, never overshoot).  The final
 * commit (processed = TDM_TIME_MAX) waits up to 10 s for a group
 * rebalance to settle.  commit: TDM_OK, TDM_ERR_IO, TDM_ERR_NOMEM. */
void tdm__kshuffle_mark(tdm__kshuffle *sh, tdm_time_ms wm,
                        const tdm_time_ms *horizon, int n);
tdm_err tdm__kshuffle_commit(tdm__kshuffle *sh, tdm_time_ms processed,
                             tdm_time_ms done);
/* The last error text (never NULL). */
const char *tdm__kshuffle_errmsg(const tdm__kshuffle *sh);
/* Sends a last marker (idle), flushes the producer (5 s), leaves the
 * reader group (at most 10 s; revoked partitions get a hand-over commit
 * of what the last commit() allowed) and frees everything.  NULL is
 * fine. */
void tdm__kshuffle_close(tdm__kshuffle *sh);

#endif /* TDM_KAFKA_SHUFFLE_H */
