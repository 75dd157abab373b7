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
#include "connect/kafka_changelog.h"
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
/* Writer @p i (0 <= i < tdm__kwm_writers(t, p)) of partition @p p: its
 * id (*id, *len; the table's), highest watermark and idleness, for a
 * checkpoint.  False when there is no such writer. */
bool tdm__kwm_writer_at(const tdm__kwm *t, int p, int i, const char **id,
                        size_t *len, tdm_time_ms *wm, int *idle);
/* Distinct writers heard from on partition @p p (0 if unknown). */
int tdm__kwm_writers(const tdm__kwm *t, int p);

/* ====================================================================== */
/* Tasks: rows already taken, and where reading starts (pure logic)        */
/* ====================================================================== */

/* With scale_out: tasks (docs/scale-out.md, "Repartition") a writer is a
 * task, and a task that moves replays its input from its checkpoint, so
 * its rows reach the internal topic again.  Every row carries its
 * origin (the input partition's name, "topic[3]") and offset; a reader
 * keeps, per origin, the highest offset it took and drops a row at or
 * below it.  An origin is read by one task at a time and its rows are
 * produced in offset order by an idempotent producer, so a replayed row
 * is always at or below that offset and a new one always above it. */
typedef struct tdm__kseen tdm__kseen;

/* Creates an empty table; NULL on OOM. */
tdm__kseen *tdm__kseen_new(void);
/* Whether the row of @p origin (@p len bytes) at @p offset is new: 1
 * (taken; the table remembers it), 0 (a replay: drop it), -1 (out of
 * memory). */
int tdm__kseen_take(tdm__kseen *s, const char *origin, size_t len,
                    int64_t offset);
/* Origins known, and origin @p i's name and highest offset taken. */
int tdm__kseen_count(const tdm__kseen *s);
const char *tdm__kseen_origin(const tdm__kseen *s, int i, int64_t *offset);
/* Frees the table (NULL is fine). */
void tdm__kseen_free(tdm__kseen *s);

/* The start file of a job's internal topic: where a task that has no
 * checkpoint yet starts reading each internal partition, so that a
 * fresh job (a new checkpoint folder) does not read rows and markers a
 * former run of the same group left in the topic, and no task of this
 * run misses a row another task wrote before it started.  The first
 * task of the run to open creates it, from the topic's end offsets
 * queried before any task of the run writes (every task loads or
 * creates the file before its writer sends anything); a later one loads
 * it.  Text:
 *
 *     tidemark repartition start
 *     topic <name>
 *     <partition> <offset>          (one line per partition)
 *
 * tdm__kstart_load: TDM_OK, *found set when the file at @p path exists
 * (then it names @p topic with @p n partitions, whose offsets are in
 * @p offs); TDM_ERR_STATE (another topic or partition count),
 * TDM_ERR_PARSE (not such a file), TDM_ERR_IO: named in errbuf. */
tdm_err tdm__kstart_load(const char *path, const char *topic, int n,
                         int64_t *offs, bool *found, char *errbuf,
                         size_t errbuf_size);
/* Creates the file with @p offs unless it exists (a link of a private
 * temporary file: exactly one creator wins); either way @p offs then
 * holds the file's offsets.  TDM_OK, or an error named in errbuf. */
tdm_err tdm__kstart_publish(const char *path, const char *topic, int n,
                            int64_t *offs, char *errbuf, size_t errbuf_size);

/* The same as a record of partition 0 of a changelog topic (@p c names
 * it; checkpoint.store: changelog, where no folder is shared): without
 * @p create, loads the first start record of @p topic (*found); with it,
 * appends one with @p offs under @p writer's name and then loads the
 * first one, which is the run's (ours or the winner's).  Errors as the
 * file's, and tdm__kclog_open's. */
tdm_err tdm__kstart_log_get(const tdm__kclog_conf *c, const char *topic,
                            const char *writer, int n, int64_t *offs,
                            bool *found, bool create, char *errbuf,
                            size_t errbuf_size);

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
/* Tasks: a row's origin ("topic[3]") and offset there (decimal). */
#define TDM__KSHUFFLE_H_ORIGIN "tdm-origin"
#define TDM__KSHUFFLE_H_OFFSET "tdm-offset"
/* Checkpoint section of a task's reader (docs/checkpoints.md). */
#define TDM__SNAP_TAG_KSHUFFLE UINT64_C(0x5352) /* "SR" */

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
    /* Tasks (scale_out: tasks): tasked, task >= 0 reads internal partition
     * `task` only, by static assignment from its checkpointed position
     * or the start file (start_file, required); the writer is
     * "task-<task>"; rows carry their origin and offset (headers below)
     * and the reader drops replayed ones (tdm__kseen); the internal
     * topic must have `tasks` partitions, and a partition's watermark
     * waits for all `tasks` writers, each holding it at its last marker
     * while it moves between processes (no writer timeout; a closing
     * task sends no idle marker).  tasked false (a zeroed conf): a
     * member of the reader group (the fields above apply). */
    bool tasked;
    int task;
    int tasks;
    const char *start_file;
    /* checkpoint.store: changelog: the start file is a record of this
     * changelog topic's partition 0 instead (start_file NULL). */
    const char *start_changelog;
    tdm__log_fn log; /* may be NULL */
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
 * watermark generator of @p input.  A task's writer also stamps the row
 * with @p origin (the input partition's name) and @p offset; elsewhere
 * they are ignored (origin may be NULL).  Blocks (serving delivery reports) up
 * to 30 s while the producer queue is full.  TDM_OK, TDM_ERR_IO (produce
 * failed, message via tdm__kshuffle_errmsg), TDM_ERR_NOMEM. */
tdm_err tdm__kshuffle_write(tdm__kshuffle *sh, int input, const tdm__row *row,
                            const char *origin, int64_t offset);
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

/* ---- A task's checkpoint (conf.task >= 0) ---- */

struct tdm__enc;
struct tdm__dec;
/* Waits (up to 10 s) until every row written so far is acknowledged, so
 * that the input positions of the same snapshot are behind durable rows,
 * then encodes the reader: its internal partition's position, every
 * writer's last marker and the offsets taken per origin.  TDM_OK,
 * TDM_ERR_IO (the flush: named in errbuf), TDM_ERR_NOMEM;
 * TDM_ERR_UNSUPPORTED when the shuffle is not a task's. */
tdm_err tdm__kshuffle_snapshot(tdm__kshuffle *sh, struct tdm__enc *e,
                               char *errbuf, size_t errbuf_size);
/* Restores a section's body (tag TDM__SNAP_TAG_KSHUFFLE) before the first
 * poll.  TDM_OK, TDM_ERR_PARSE (the body: @p body carries the error),
 * TDM_ERR_STATE (another partition than the task's), TDM_ERR_NOMEM. */
tdm_err tdm__kshuffle_restore(tdm__kshuffle *sh, struct tdm__dec *body,
                              char *errbuf, size_t errbuf_size);
/* Sends a last marker (idle), flushes the producer (5 s), leaves the
 * reader group (at most 10 s; revoked partitions get a hand-over commit
 * of what the last commit() allowed) and frees everything.  NULL is
 * fine. */
void tdm__kshuffle_close(tdm__kshuffle *sh);

#endif /* TDM_KAFKA_SHUFFLE_H */
