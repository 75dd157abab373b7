/* SPDX-License-Identifier: MIT */
/* connect.h - how the runtime talks to connectors: sources that produce
 * rows per partition, and sinks that write results, late records and dead
 * letters.  Connectors plug in through small versioned vtables (the
 * sqlite3_io_methods pattern); they are internal until stable.
 *
 * Threading: a source object is owned by one source subtask thread; a
 * sink object is shared by all subtasks that write to it and serialises
 * writes itself (with exactly_once: one sink object per writing subtask,
 * see tdm__sink_vtab version 3).
 */
#ifndef TDM_CONNECT_H
#define TDM_CONNECT_H

#include <pthread.h>

#include "runtime/row.h"

/* Checkpoint encoder and decoder (state/ckpt_codec.h), used by the
 * snapshot members of the vtables below. */
struct tdm__enc;
struct tdm__dec;

/* A line for the job's log (no newline), from a connector's thread. */
typedef void (*tdm__log_fn)(void *ud, const char *line);

/* What the subtasks of one source share inside a process: the runtime
 * makes one per version-2 source before opening its connectors and frees
 * it after every one closed (free_p(p) first when set).  The connector
 * owns p; every access holds mu. */
typedef struct tdm__conn_shared {
    pthread_mutex_t mu;
    void *p;
    void (*free_p)(void *p);
} tdm__conn_shared;

/* ---- Configuration handed to connectors ----
 * The runtime parses the table's keys into this struct (defaults
 * applied) and passes it to open(); connectors never see raw strings. */
/* Commits offset @p offset of (@p topic, @p part) with metadata
 * @p meta to a job's group on a task's behalf (its task host's member). */
typedef void tdm__task_commit_fn(void *ud, const char *topic, int32_t part,
                                 int64_t offset, const char *meta);

/* What of a Kafka message a "metadata.*" field receives
 * (tdm__kafka_meta_kind names them). */
enum {
    TDM__KMETA_TIMESTAMP = 0,
    TDM__KMETA_PARTITION,
    TDM__KMETA_OFFSET,
    TDM__KMETA_TOPIC,
    TDM__KMETA_N
};
/* The known metadata keys, for messages. */
#define TDM__KMETA_KNOWN "timestamp, partition, offset, topic"

typedef struct tdm__source_conf {
    const char *name; /* node name, for messages */
    int type;         /* TDM__SRC_FILE, _STDIN, _TCP, _GENERATOR */
    const char *path; /* file path or glob */
    int format;       /* TDM__FMT_JSON, TDM__FMT_CSV */
    bool csv_header;
    char csv_delimiter;
    const tdm__schema *schema;
    int partition_field; /* schema index, -1: one partition per file */
    int time_mode;       /* TDM__TIME_EVENT, _INGESTION, _PROCESSING */
    int ts_field;        /* schema index of timestamp.field, -1 */
    int ts_unit;         /* TDM__UNIT_MS, _S, _US, _NS, _ISO8601 */
    const char *tcp_address;
    /* tcp (docs/tcp.md): "tcp.on_close: reconnect" (the job's default)
     * makes a clean close a lost connection; false: it ends the input.
     * The durations are in ms; 0 connect timeout: 5 s; 0 reconnect
     * timeout: a lost connection fails the source at once. */
    bool tcp_reconnect_on_close;
    tdm_time_ms tcp_connect_timeout;
    tdm_time_ms tcp_reconnect_timeout;
    tdm_time_ms tcp_backoff, tcp_max_backoff;
    /* The tcp source's clock in ms (tests); NULL: CLOCK_MONOTONIC. */
    int64_t (*now)(void *now_ud);
    void *now_ud;
    /* generator */
    int gen_kind; /* TDM__GEN_CLICKS, TDM__GEN_SENSORS */
    int64_t gen_records, gen_rate, gen_keys, gen_partitions, gen_seed;
    double gen_skew, gen_late_fraction;
    tdm_time_ms gen_max_delay, gen_late_delay, gen_idle_from, gen_idle_for;
    int64_t gen_idle_partition;
    int nx_kinds;         /* NEXMark: bit k keeps kind k (TDM__NX_*) */
    int64_t nx_ooo_group; /* NEXMark out-of-order group, >= 1 */
    bool nx_flink;        /* NEXMark: nexmark-flink numbering */
    /* kafka (docs/kafka.md) */
    const char *kafka_brokers;  /* "brokers", NULL: kafka.bootstrap.servers */
    const char *kafka_topics;   /* "topics", comma-separated, or NULL */
    const char *kafka_pattern;  /* "topic_pattern" ("^regex"), or NULL */
    const char *kafka_group;    /* "group" (run.c defaults it to
                                   "tidemark-<job>-<node>") */
    int kafka_start;            /* TDM__KSTART_* ("start") */
    tdm_time_ms kafka_start_ts; /* "start.timestamp" (epoch ms) */
    bool kafka_stop_at_end;     /* "stop: end": eof once every assigned
                                   partition reached its end */
    bool ts_from_message;       /* "timestamp.source: message" */
    int key_field;              /* schema index of "key.field", -1 */
    /* "metadata.*": per TDM__KMETA_* kind, the schema index + 1 of the
     * field it fills (0: none, so that zeroed configurations have
     * none). */
    int kafka_meta[TDM__KMETA_N];
    /* "kafka.*" pass-through properties: 2 * kafka_n_props strings,
     * key then value, the "kafka." prefix removed.  Borrowed. */
    const char *const *kafka_props;
    int kafka_n_props;
    tdm_time_ms kafka_brokers_timeout; /* "brokers.timeout", 0: none */
    tdm__log_fn log;                   /* the job's log (may be NULL) */
    void *log_ud;
    /* Repartition through an internal topic (kafka_shuffle.h): the
     * schema field name of the job's key, NULL for none, and the number
     * of partitions of the internal topic (0: the connector's default). */
    const char *repartition_key;
    /* The source's configured watermark strategy, which the repartition
     * writer runs per input partition (the runtime's own generator is
     * NONE then); owned by the runtime.  "repartition.writers" and
     * "repartition.writer_timeout" (ms). */
    const tdm_wm_strategy *repartition_strategy;
    int repartition_writers;
    tdm_time_ms repartition_writer_timeout;
    int repartition_partitions;
    /* Shared by the source's subtasks in this process (version 2; NULL
     * for other sources).  Borrowed. */
    tdm__conn_shared *shared;
    /* checkpoint.dir is set: positions come from checkpoints (Kafka:
     * partitions are assigned by subtask, not by the group). */
    bool checkpointing;
    /* scale_out: tasks (docs/scale-out.md): the task this job runs, -1
     * otherwise.  With checkpointing, a Kafka source then reads partition
     * number kafka_task of every listed topic (instead of its share by
     * global index) and makes no monitoring commits (the group's members
     * are the task hosts).  kafka_tasked false: not a task (zeroed
     * configurations stay plain). */
    bool kafka_tasked;
    int kafka_task;
    /* A task's durable input positions go to the group through its task
     * host (only a member may commit), for lag tools: called from the
     * task's thread when a checkpoint is durable, with its id as
     * metadata "tdm1 ckpt=<id>" (never read back but by start:
     * committed).  NULL: no commits. */
    tdm__task_commit_fn *kafka_task_commit;
    void *kafka_task_commit_ud;
    /* A task's repartition topic (kafka_shuffle.h): the run's start
     * file, "<the job's checkpoint.dir>/repartition-<source>.start".  */
    const char *repartition_start_file;
    /* With checkpoint.store: changelog: the changelog topic whose
     * partition 0 holds the start record instead (start file NULL). */
    const char *repartition_start_changelog;
} tdm__source_conf;

enum {
    TDM__SRC_FILE = 1,
    TDM__SRC_STDIN,
    TDM__SRC_TCP,
    TDM__SRC_GENERATOR,
    TDM__SRC_KAFKA
};
enum {
    TDM__KSTART_COMMITTED = 1,
    TDM__KSTART_EARLIEST,
    TDM__KSTART_LATEST,
    TDM__KSTART_TIMESTAMP
};
enum { TDM__FMT_JSON = 1, TDM__FMT_CSV };
enum { TDM__TIME_EVENT = 1, TDM__TIME_INGESTION, TDM__TIME_PROCESSING };
enum {
    TDM__UNIT_MS = 1,
    TDM__UNIT_S,
    TDM__UNIT_US,
    TDM__UNIT_NS,
    TDM__UNIT_ISO8601
};
enum { TDM__GEN_CLICKS = 1, TDM__GEN_SENSORS, TDM__GEN_NEXMARK };

/* ---- Dead letters ----
 * A malformed record is data, not an error: the parser reports it here
 * with its location ("file.jsonl:17" or "partition 3:offset 17"), the
 * reason naming the field ("field 'ts': expected an integer, got
 * \"abc\""), and the raw text; then it goes on with the next record. */
typedef void (*tdm__dead_fn)(void *ud, const char *location, const char *reason,
                             const char *raw, size_t raw_len);

/* ---- Formats ----
 * JSON lines: tdm__json_parse_line_mode (conn.h). */
/* CSV: @p columns maps each CSV column to a schema index (-1: ignore),
 * taken from the header line (tdm__csv_header) or schema order. */
tdm_err tdm__csv_parse_line(const tdm__source_conf *conf, const int *columns,
                            int n_columns, const char *line, size_t len,
                            tdm__batch *b, char *reason, size_t n);
/* Splits a CSV header line into the column -> schema index map
 * (*columns allocated with tdm__malloc). */
tdm_err tdm__csv_header(const tdm__source_conf *conf, const char *line,
                        size_t len, int **columns, int *n_columns, char *reason,
                        size_t n);
/* Converts a timestamp value in @p unit to epoch ms (ISO-8601 text:
 * "2026-12-02T10:00:00Z", with optional fraction and +hh:mm offset).
 * TDM_ERR_PARSE / TDM_ERR_RANGE on bad or overflowing input. */
tdm_err tdm__ts_from_int(int64_t v, int unit, tdm_time_ms *out);
tdm_err tdm__ts_from_text(const char *s, size_t len, int unit,
                          tdm_time_ms *out);

/* ---- Sources ---- */

typedef struct tdm__source tdm__source;

typedef struct tdm__source_vtab {
    int version; /* 1; 2 with the members after close; 3 with snapshot
                    and restore; 4 with checkpoint; 5 with poll_error */
    /* Opens the share of the source that subtask @p index of @p count
     * reads (files are dealt round-robin; generator partitions likewise).
     * *n_partitions receives how many partitions this subtask reads (may
     * be 0).  TDM_OK, TDM_ERR_IO (message names the path), NOMEM. */
    tdm_err (*open)(const tdm__source_conf *conf, int index, int count,
                    tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                    int *n_partitions, char *errbuf, size_t errbuf_size);
    /* Appends up to @p max rows to @p b (row->partition set).  A
     * partition that reached its end is reported by setting its flag in
     * @p finished (n_partitions flags) to 1, once.  *eof = 1 when every
     * partition is done.  A source with nothing available right now (tcp,
     * stdin) returns with no rows rather than blocking for long (at most
     * ~50 ms) so the subtask can emit periodic watermarks.  Returns TDM_OK
     * or TDM_ERR_IO. */
    tdm_err (*poll)(tdm__source *src, tdm__batch *b, size_t max,
                    uint8_t *finished, int *eof);
    void (*close)(tdm__source *src);
    /* ---- Version 2: sources whose partitions come and go (Kafka).
     * open() returns *n_partitions = 0; partitions get local indices
     * 0, 1, ... as they are assigned, never reused.  poll() rows carry
     * local indices < n_partitions(); finished[p] is set (once) when p is
     * revoked or (stop: end) reached its end, only for p counted before
     * this poll; *eof = 1 only with stop: end, after the first
     * assignment, once every assigned partition ended. */
    /* Local partition indices allocated so far. */
    int (*n_partitions)(tdm__source *src);
    /* A name for partition @p p ("clicks[3]"), for metrics and logs;
     * borrowed, valid until close. */
    const char *(*partition_name)(tdm__source *src, int p);
    /* The watermark stored with the committed offset of @p p by its
     * previous owner (records whose results it already wrote lie at or
     * below it), TDM_TIME_MIN if none. */
    tdm_time_ms (*partition_floor)(tdm__source *src, int p);
    /* Alignment: stops (paused = 1) or resumes fetching @p p. */
    void (*pause)(tdm__source *src, int p, int paused);
    /* The subtask sent watermark @p wm after the rows polled so far;
     * horizon[p] (n entries) is the last operator watermark at which a
     * row read so far from p can still change a result.  The connector
     * remembers its positions under this mark. */
    void (*mark)(tdm__source *src, tdm_time_ms wm, const tdm_time_ms *horizon,
                 int n);
    /* Every mark with wm < @p processed has been handled by all
     * consumers, and every operator's watermark is at least @p done with
     * the sinks flushed: commit, per partition, the newest such mark
     * whose horizon is <= done.  @p top is TDM_TIME_MIN, except at the
     * final commit (every thread stopped, the sinks closed): there the
     * highest watermark an operator fired, no result of a window with
     * end - 1 > top having been written (the hand-over is clean; MIN
     * again when some operator fires before its watermark: early, count
     * or processing-time triggers).  TDM_OK or TDM_ERR_IO. */
    tdm_err (*commit)(tdm__source *src, tdm_time_ms processed, tdm_time_ms done,
                      tdm_time_ms top);
    /* Watermarks carried by the data itself (a repartition topic's
     * markers): NULL, or called by the runtime after each poll for every
     * partition; returns 1 with *wm / *idle set when partition @p p has a
     * watermark or idleness of its own newer than the last call (the
     * runtime then applies it with tdm_reader_split_watermark /
     * tdm_reader_split_status after that poll's rows, and such a source's
     * generator is NONE), 0 when nothing changed. */
    int (*partition_watermark)(tdm__source *src, int p, tdm_time_ms *wm,
                               int *idle);
    /* Results a previous owner of the partitions may have written
     * already (it crashed, or lost them while running): NULL, or called
     * after each poll; sets *start_le and *last_le so that an event-time
     * window result with start <= *start_le or end - 1 <= *last_le may
     * repeat one (TDM_TIME_MIN: none).  Both never decrease, and cover
     * the rows of the polls so far.  The runtime marks such results as
     * updates. */
    void (*replayed)(tdm__source *src, tdm_time_ms *start_le,
                     tdm_time_ms *last_le);
    /* Whether split @p p, reported finished, was taken from this member
     * while the job runs (revoked or lost; not the close, not stop: end):
     * its next owner re-reads what this member read since the commit, so
     * the runtime fences the split's keys (their open windows are not
     * written here; docs/kafka.md, "Key fence").  NULL: never. */
    int (*fenced)(tdm__source *src, int p);
    /* ---- Version 3: checkpoints (docs/checkpoints.md, "Source
     * positions").  Both NULL: the source cannot be replayed.  Called on
     * the subtask's thread between polls.
     * snapshot: encodes one section holding, per partition this subtask
     * reads, its global identity and the position just after the last
     * row poll() returned (and its finished flag).  TDM_OK, NOMEM,
     * TDM_ERR_UNSUPPORTED (stdin, tcp: not replayable; message says so).
     * restore: called right after open() with the same configuration
     * (any subtask count); @p d holds the sections of every old subtask
     * one after the other (the runtime concatenates their blobs) and the
     * connector takes the entries of the partitions it now reads, which
     * continue after their positions (Kafka keeps the list for the
     * partitions assigned later); partitions finished then are not
     * reported finished again (the reader's restored split state carries
     * that).  TDM_OK, TDM_ERR_PARSE (bad blob: the
     * message names the offset), TDM_ERR_IO (a file shrank below its
     * position or vanished: the message names it), NOMEM. */
    tdm_err (*snapshot)(tdm__source *src, struct tdm__enc *e, char *errbuf,
                        size_t errbuf_size);
    tdm_err (*restore)(tdm__source *src, struct tdm__dec *d, char *errbuf,
                       size_t errbuf_size);
    /* ---- Version 4 (may be NULL): checkpoint @p id, on the subtask's
     * thread.  @p complete 0: the barrier arrived, the next snapshot()
     * is checkpoint id's (the final snapshot at the end of the input has
     * no such call); 1: checkpoint id is durable (Kafka commits its
     * positions to the group, for monitoring). */
    void (*checkpoint)(tdm__source *src, uint64_t id, int complete);
    /* ---- Version 5 (may be NULL): why the last poll() failed, naming
     * the cause ("tcp 127.0.0.1:9000: connection lost (Connection reset
     * by peer) ..."); borrowed, valid until the next call.  NULL or "":
     * the runtime reports the code alone. */
    const char *(*poll_error)(tdm__source *src);
} tdm__source_vtab;

extern const tdm__source_vtab tdm__file_source; /* file, glob, stdin */
extern const tdm__source_vtab tdm__tcp_source;
extern const tdm__source_vtab tdm__generator_source;
extern const tdm__source_vtab tdm__nexmark_source; /* generator.kind nexmark */
extern const tdm__source_vtab tdm__kafka_source;

/* ---- Sinks ---- */

typedef struct tdm__sink_conf {
    const char *name;
    int type; /* TDM__SINK_STDOUT, _FILE, _DISCARD */
    const char *path;
    int format; /* TDM__FMT_JSON, TDM__FMT_CSV */
    /* kafka */
    const char *kafka_brokers;
    const char *kafka_topic;
    const char *const *kafka_props; /* as in tdm__source_conf */
    int kafka_n_props;
    tdm_time_ms kafka_brokers_timeout; /* as in tdm__source_conf */
    tdm__log_fn log;
    void *log_ud;
    /* The buffer's clock in ms (tests); NULL: CLOCK_MONOTONIC. */
    int64_t (*now)(void *now_ud);
    void *now_ud;
    /* Two-phase commit (version 3, docs/checkpoints.md "Sinks"): when
     * set, the sink object belongs to writer @p writer (0-based) of the
     * sink and output becomes visible only at commit().  0: output is
     * written as it comes (the behaviour without checkpoints). */
    bool exactly_once;
    int writer;
    /* The restored checkpoint's id, 0 on a fresh start: recover(s, NULL)
     * with it set means this writer had nothing in that checkpoint (the
     * restored run had fewer writers), not a fresh start. */
    uint64_t restored;
    const char *job_name; /* Kafka transactional.id; NULL: "job" */
    /* Kafka, tests only: replaces the rd_kafka_*_transaction calls
     * (tdm__kk_txn_ops below); NULL: librdkafka's. */
    const struct tdm__kk_txn_ops *kafka_txn_ops;
    /* log.level debug: Kafka logs every committed transaction. */
    bool debug;
    /* The key "select" (select.c): the items "name" or "name AS alias"
     * of the columns to write (results and pass-through rows), in order;
     * n_select 0: every column.  Borrowed for open, which parses them. */
    const char *const *select;
    int n_select;
} tdm__sink_conf;

/* The transaction calls of the Kafka sink (librdkafka's rd_kafka_*_
 * transaction functions by default); tests pass a recording shim. */
struct rd_kafka_s;
struct rd_kafka_error_s;
struct rd_kafka_topic_partition_list_s;
struct rd_kafka_consumer_group_metadata_s;
typedef struct tdm__kk_txn_ops {
    struct rd_kafka_error_s *(*init)(struct rd_kafka_s *rk, int timeout_ms);
    struct rd_kafka_error_s *(*begin)(struct rd_kafka_s *rk);
    struct rd_kafka_error_s *(*commit)(struct rd_kafka_s *rk, int timeout_ms);
    struct rd_kafka_error_s *(*abort)(struct rd_kafka_s *rk, int timeout_ms);
    /* May be NULL (librdkafka's): the commit marker. */
    struct rd_kafka_error_s *(*send_offsets)(
        struct rd_kafka_s *rk,
        const struct rd_kafka_topic_partition_list_s *offsets,
        const struct rd_kafka_consumer_group_metadata_s *cgmetadata,
        int timeout_ms);
} tdm__kk_txn_ops;

enum {
    TDM__SINK_STDOUT = 1,
    TDM__SINK_FILE,
    TDM__SINK_DISCARD,
    TDM__SINK_KAFKA
};

/* What a result row says about its window and pane. */
typedef enum tdm__change {
    TDM__CHANGE_INSERT = 0, /* append mode, and first results */
    TDM__CHANGE_UPDATE,     /* upsert: replaces the row of key+window */
    TDM__CHANGE_RETRACT     /* retract: withdraws the previous result */
} tdm__change;

/* One output column: name and value (type says which union member). */
typedef struct tdm__col {
    const char *name;
    tdm_type type;
    tdm__val v;
} tdm__col;

/* A window result or join pair as a sink sees it. */
typedef struct tdm__out_row {
    const tdm__col *cols; /* key fields, then aggregates (or join fields) */
    int n_cols;
    int n_key_cols; /* cols[0 .. n_key_cols) are the group key */
    int has_window;
    tdm_time_ms win_start, win_end;
    tdm_pane_timing timing;
    int64_t pane_index;
    bool is_update;
    tdm__change change;
    const char *upsert_key; /* key+window identity for upsert/retract */
    size_t upsert_key_len;
} tdm__out_row;

typedef struct tdm__sinkobj tdm__sinkobj;

/* ---- A sink's column selection (select.c) ---- */

typedef struct tdm__sel tdm__sel;

/* Where a selected column comes from, besides a column index >= 0. */
enum {
    TDM__SEL_NONE = -1,      /* the row has no such column: null */
    TDM__SEL_WIN_START = -2, /* result rows with a window ... */
    TDM__SEL_WIN_END = -3,
    TDM__SEL_TIMING = -4,
    TDM__SEL_PANE = -5,
    TDM__SEL_UPDATE = -6,
    TDM__SEL_TS = -7,      /* records: the event time (no schema field "ts") */
    TDM__SEL_WIN_TIME = -8 /* result rows with a window: window_end - 1 */
};

/* Parses the @p n items of a select key ("name" or "name AS alias", AS
 * in any case) into *out (NULL when @p n is 0: no selection).  Refuses
 * an empty or malformed item and an output name given twice, with a
 * message starting "select: ".  TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
tdm_err tdm__sel_new(const char *const *items, int n, tdm__sel **out,
                     char *errbuf, size_t errbuf_size);
void tdm__sel_free(tdm__sel *sel);
/* Items (0 for NULL), the column item @p i reads, its output name. */
int tdm__sel_count(const tdm__sel *sel);
const char *tdm__sel_name(const tdm__sel *sel, int i);
const char *tdm__sel_out(const tdm__sel *sel, int i);
/* Per item, where its value is in @p row: a column index or TDM__SEL_*.
 * Resolved once per row layout (the column name pointers) and cached in
 * @p sel; valid until the next call.  NULL: out of memory.  Not
 * thread-safe (the sinks call it under their mutex). */
const int *tdm__sel_map_result(tdm__sel *sel, const tdm__out_row *row);
const int *tdm__sel_map_record(tdm__sel *sel, const tdm__row *row);

typedef struct tdm__sink_vtab {
    int version; /* 1, 2 with flush and tick, 3 with 2PC, 4 with top
                    and supersede, 5 with last_error */
    tdm_err (*open)(const tdm__sink_conf *conf, int upsert, tdm__sinkobj **out,
                    char *errbuf, size_t errbuf_size);
    /* Thread-safe: called from several subtasks. */
    tdm_err (*write_result)(tdm__sinkobj *s, const tdm__out_row *row);
    tdm_err (*write_row)(tdm__sinkobj *s, const tdm__row *row); /* late */
    tdm_err (*write_dead)(tdm__sinkobj *s, const char *location,
                          const char *reason, const char *raw, size_t raw_len);
    /* Flushes; an upsert file sink writes its final table here. */
    tdm_err (*close)(tdm__sinkobj *s, char *errbuf, size_t errbuf_size);
    /* Version 2: everything written before the call is durable when it
     * returns TDM_OK (text: buffer written and fflush'ed; Kafka: every
     * message acknowledged).  Thread-safe.  With exactly_once it only
     * writes the buffer on (to the in-progress part; the open Kafka
     * transaction) and makes nothing visible: see pre_commit. */
    tdm_err (*flush)(tdm__sinkobj *s, char *errbuf, size_t errbuf_size);
    /* Version 2, may be NULL: writes out what has waited in a buffer
     * longer than the sink's flush interval (no durability promise, no
     * upsert table).  Called by the run's supervisor about every 100 ms,
     * so that results reach the output while no others follow them.
     * Thread-safe; errors surface at the next write, flush or close. */
    void (*tick)(tdm__sinkobj *s);
    /* ---- Version 3: two-phase commit (Flink's TwoPhaseCommitSink).
     * Only with conf->exactly_once (stdout and discard objects then
     * only flush at pre_commit and append nothing: at-least-once; commit
     * and recover do nothing for them).  A sink object then belongs to
     * one writing subtask (conf->writer), and the runtime calls these
     * from that subtask's thread (the mutex makes any thread safe):
     *   recover(s, st)    once, after open, before the first write: st
     *                     is the sink's section of the restored
     *                     checkpoint, NULL on a fresh start or for a
     *                     writer it did not have (conf->restored);
     *   pre_commit(s, n)  at the writer's barrier n, after the rows
     *                     before the barrier and before any after it:
     *                     those rows become pending transaction n,
     *                     durable but invisible, and its identity is
     *                     appended to @p st (one section);
     *   commit(s, n)      once checkpoint n is durable (any later time,
     *                     also after newer pre_commits): every pending
     *                     transaction <= n becomes visible; idempotent;
     *   close             at a clean end, after the final pre_commit +
     *                     commit (writes without them are discarded).
     * Errors: TDM_OK, TDM_ERR_IO (message names the path or topic),
     * TDM_ERR_PARSE (a bad @p st, with its offset), TDM_ERR_STATE,
     * TDM_ERR_NOMEM. */
    tdm_err (*pre_commit)(tdm__sinkobj *s, uint64_t ckpt_id,
                          struct tdm__enc *st, char *errbuf,
                          size_t errbuf_size);
    tdm_err (*commit)(tdm__sinkobj *s, uint64_t ckpt_id, char *errbuf,
                      size_t errbuf_size);
    tdm_err (*recover)(tdm__sinkobj *s, struct tdm__dec *st, char *errbuf,
                       size_t errbuf_size);
    /* Frees the object as a crash would leave it: no flush, no commit,
     * files and transactions as they are (tests; the runtime's abort
     * path may use it too). */
    void (*abandon)(tdm__sinkobj *s);
    /* ---- Version 4, may be NULL: the output of every writer of a sink
     * at once, from its configuration (no object).  A fresh start must
     * neither delete nor hide what earlier runs committed until its own
     * first checkpoint is durable (docs/checkpoints.md, "Fresh starts"):
     *   top(conf, &id)    the highest checkpoint id the output names
     *                     (0: none); the run's ids go above it;
     *   supersede(conf, first, committed, &moved)
     *                     moves the output of checkpoints below @p first
     *                     out of the way, never deleting it; idempotent;
     *                     the runtime calls it once the fresh run's first
     *                     checkpoint is durable, before any commit, and
     *                     again at every restore of that run.
     * Sinks whose output cannot be taken back (Kafka) leave them NULL. */
    tdm_err (*top)(const tdm__sink_conf *conf, uint64_t *id, char *errbuf,
                   size_t errbuf_size);
    tdm_err (*supersede)(const tdm__sink_conf *conf, uint64_t first,
                         uint64_t committed, size_t *moved, char *errbuf,
                         size_t errbuf_size);
    /*   finish(conf, mode) at a clean end, after every writer's close:
     *                     output derived from all the committed parts
     *                     (an upsert file sink's table, compacted from
     *                     its changelog into "path"). */
    tdm_err (*finish)(const tdm__sink_conf *conf, int mode, char *errbuf,
                      size_t errbuf_size);
    /* ---- Version 5, may be NULL (the sink cannot tell):
     *   last_error(s, buf, n) after a write to @p s failed: why, as one
     *                     line in @p buf (the file or topic and the
     *                     system's reason, e.g. a full disk), or "" when
     *                     the object has no error to tell.  The runtime
     *                     appends it to the failure message of the
     *                     subtask's write.  Thread-safe; it may flush
     *                     (what flush does), never closes. */
    void (*last_error)(tdm__sinkobj *s, char *buf, size_t n);
} tdm__sink_vtab;

/* Section tags of sink state in a checkpoint (docs/checkpoints.md). */
#define TDM__CKPT_TAG_FILE_SINK 0x51u
#define TDM__CKPT_TAG_KAFKA_SINK 0x52u

extern const tdm__sink_vtab tdm__text_sink; /* stdout, file, discard */
extern const tdm__sink_vtab tdm__kafka_sink;

#endif /* TDM_CONNECT_H */
