/* SPDX-License-Identifier: MIT */
/* run.h - the execution plan of a running job and its subtasks, shared
 * by run.c (planning, threads, lifecycle), task_source.c (source
 * subtasks: read, stamp, guard, route, generate watermarks) and
 * task_op.c (window and join subtasks: merge channels, compute; with
 * task_op_emit.c writing what they emit and task_op_ckpt.c their
 * checkpoints, task_op.h what those three share).
 *
 *   source subtask i ──batches + control──▶ queue of op subtask j
 *     (rows routed by key group;             (one channel per upstream
 *      watermarks/status/end broadcast)       source subtask)
 *
 * An operator read by other operators (chaining) has a derived source:
 * its output stream, whose subtask i is fed by op subtask i's thread
 * through the emitter (rt_emit_*, task_source.c) instead of a thread of
 * its own.
 */
#ifndef TDM_RUN_H
#define TDM_RUN_H

#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "state/state.h"

typedef struct rt_op rt_op;
typedef struct rt_source rt_source;
typedef struct rt_src_task rt_src_task;
typedef struct rt_op_task rt_op_task;
typedef struct rt_lagg rt_lagg;

/* A shared sink, opened once; with checkpoints one object per writing
 * subtask instead (docs/checkpoints.md, "In the runtime"). */
typedef struct rt_sink {
    tdm_node *node;
    tdm__sink_conf conf;
    const tdm__sink_vtab *vt;
    tdm__sinkobj *obj;
    int mode;          /* output mode handed to open: RT_APPEND, ... */
    bool used;
    /* Checkpoints: writer roles (a source passing rows through to it, a
     * source's dead letters), each with P writers; writer w = role * P
     * + subtask owns wobj[w] (exactly_once, conf.writer = w). */
    int n_roles;
    tdm__sinkobj **wobj;
} rt_sink;

struct tdm__ckpt_store;

/* The checkpoint coordinator's state (ckpt.c), kept by the run thread;
 * req and committed are read by the subtasks between polls. */
typedef struct rt_ckpt {
    bool on;
    struct tdm__ckpt_store *st;
    tdm_time_ms interval;
    uint64_t last;         /* highest id used or restored */
    uint64_t pending;      /* the checkpoint in progress (0: none) */
    int pending_kind;      /* TDM__CKPT_CHECKPOINT or _SAVEPOINT */
    int64_t started_us;
    int64_t next_ms;       /* tdm__mono_ms of the next start */
    _Atomic uint64_t req;  /* barrier requested (subtasks ack it) */
    _Atomic uint64_t committed; /* durable: sinks may commit up to it */
    bool wake;             /* under run->mu: an acknowledgement came */
    bool abandon;          /* no final checkpoint: abandon the sinks */
    /* Restore (loaded before the subtasks open). */
    bool restored;
    uint64_t from;
    int old_P;
    uint8_t **src_pos;     /* per source: every old subtask's connector
                              section, concatenated */
    size_t *src_pos_len;
    uint8_t **src_rd;      /* per source and old subtask k, at
                              si * old_P + k: the reader section */
    size_t *src_rd_len;
    struct tdm__ckpt_reader *rd;
    /* The lineage (ckpt_lineage.c): its first checkpoint (0: none yet,
     * or restored from a checkpoint older than lineages), the newest
     * checkpoint durable when it began, and whether its old output has
     * been moved aside. */
    uint64_t line_first, line_committed;
    bool line_done;
    /* A fresh start: the lineage it replaces, whose move aside it
     * finishes first (0: none). */
    uint64_t old_first, old_committed;
} rt_ckpt;

/* Watermark alignment: one coordinator per watermark.alignment.group,
 * shared by every source of the group (both sides of a join may be);
 * its subtask numbers are rt_source.align_base + subtask index.  mu
 * serialises the coordinator's calls, made from the source threads. */
typedef struct rt_align {
    const char *group;   /* borrowed from the first source's key */
    tdm_align_coord *coord;
    tdm_clock *clk;
    pthread_mutex_t mu;
    bool mu_ok;
    tdm_time_ms drift, interval;
    int n;               /* subtasks: sum of P over the group's sources */
    tdm__run *run;
} rt_align;

/* What a record of time ts can still change, per operator (the commit
 * horizon C(ts), docs/kafka.md): the last operator watermark at which
 * it belongs to a window not yet cleaned up.  RT_HZ_END: results can
 * change until the end of input (sessions, global windows, count or
 * processing-time triggers, interval joins). */
enum { RT_HZ_END = 0, RT_HZ_WINDOW = 1 };
typedef struct rt_horizon {
    int kind;
    tdm_time_ms size, step, offset, lateness;
} rt_horizon;

/* A source feeding an operator. */
/* One key of an rt_keyset: its hash, value, and bytes in the set's
 * arena. */
typedef struct rt_keyent {
    uint64_t h;
    int64_t v;
    size_t off, len;
} rt_keyent;

/* A map from key bytes to an int64 (zero-initialised = empty).  Keys
 * are copied into the set.  Not thread-safe: one owner thread. */
typedef struct rt_keyset {
    uint32_t *slots;   /* open addressing: entry index + 1, 0 empty */
    size_t n_slots;    /* a power of two, > 2 * n */
    rt_keyent *ents;
    size_t n, cap_ents;
    char *bytes;
    size_t used, cap_bytes;
} rt_keyset;

typedef struct rt_edge {
    rt_op *op;
    int input;        /* union position (window) or side (join) */
    int *key_idx;     /* key fields in the source's schema */
    int n_key;
    int target_base;  /* first of op->P targets in the source's list */
    bool local;       /* two-phase: the source folds records locally
                         (localagg.h) */
} rt_edge;

struct rt_source {
    tdm_node *node;
    const tdm__schema *schema;
    tdm__source_conf conf;
    const tdm__source_vtab *vt;
    tdm_wm_strategy *strat;
    int marker_idx;
    /* The generator needs only each partition's highest timestamp per
     * batch: bounded or monotonous with periodic emission, or none (its
     * on-event hook only keeps a maximum, or nothing). */
    bool wm_max_only;
    rt_edge *edges;
    int n_edges;
    int n_targets;
    atomic_int unit_warned;
    rt_src_task *tasks;
    /* Version-2 connector (partitions come and go, commits). */
    bool v2;
    /* Processing time at which a subtask of this source first had a
     * split (TDM_TIME_MAX: none yet); see idle_without_splits. */
    _Atomic int64_t first_live;
    char *group_owned;   /* the default kafka group name */
    /* Commit horizon: the maximum over the consumers' (hz_end: some
     * consumer changes results until the end). */
    bool hz_end;
    /* Key fence (fence.c): its subtasks track the keys of each split
     * and send them to the window subtasks when the connector says the
     * split was revoked while running. */
    bool fence;
    /* Results a previous owner of its partitions may have written
     * (connect.h, replayed): the maximum over its subtasks; results of
     * the windows it feeds with start <= replay_start or end - 1 <=
     * replay_last are marked as updates.  Published before the rows they
     * cover are pushed (the queues order them): relaxed loads suffice. */
    _Atomic int64_t replay_start, replay_last;
    /* Alignment group (NULL: none) and this source's first subtask
     * number in its coordinator. */
    rt_align *align;
    int align_base;
    /* Pass-through (key "sink"): every row the source keeps is written
     * to this sink by the subtask that read it (NULL: none). */
    rt_sink *pass;
    /* A derived source (docs/runtime.md, Chained operators): the output
     * stream of operator from (node is the operator's node, schema its
     * output schema); no connector, reader or thread: subtask i is
     * written by op subtask i through rt_emit_*.  None of the connector
     * features (commits, fence, replay, alignment, repartition,
     * two-phase aggregation) apply to it. */
    bool derived;
    rt_op *from;
    /* Checkpoints: this source's writer role in its pass-through sink
     * and in the dead-letter sink (rt_sink.n_roles). */
    int pass_role, dead_role;
};

enum { RT_APPEND = 0, RT_UPSERT = 1, RT_RETRACT = 2 };

struct rt_op {
    tdm_node *node;
    tdm_node_kind kind;
    int n_inputs;
    rt_source **inputs;  /* window: from list; join: left, right */
    int **in_key_idx;    /* per input */
    int n_key;
    int n_channels;
    rt_sink *sink, *late;
    /* Windows. */
    const tdm__agg_spec *specs;
    int n_aggs;
    bool fast_count;     /* a single count(): the built-in aggregate */
    int **agg_idx;       /* [input][aggregate] field index */
    tdm_type *agg_in_types;
    int mode;            /* RT_APPEND, RT_UPSERT, RT_RETRACT */
    bool proc_time;      /* processing-time windows or trigger */
    bool early;          /* may fire before its watermark (early,
                            count, processing-time triggers) */
    bool event_time;     /* event-time assigner (lateness applies) */
    tdm_time_ms lateness;
    rt_horizon hz;       /* commit horizon of the records it reads */
    /* Two-phase aggregation (localagg.h): sources fold records into
     * partial accumulators per (key, slice) and send partial rows. */
    bool two_phase;
    int wtype;           /* window.type: 0 tumbling, 1 sliding */
    tdm_time_ms wsize, wslide, woffset;
    /* Output columns: key fields, then aggregates (window) or left
     * fields, right fields and ts (join). */
    int n_cols;
    const char **col_names;
    char **owned_names;
    tdm_type *col_types;
    /* Chaining: the derived source other operators read this one's
     * results from (NULL: none read it), and a join's filter over its
     * output columns (NULL: none; borrowed from the node). */
    rt_source *out;
    const struct tdm__expr *filter;
    rt_op_task *tasks;
    /* Checkpoints: writer roles in its result and late-output sinks. */
    int sink_role, late_role;
};

/* A subtask's part in checkpoints (ckpt.c): the sink objects it writes
 * (two roles: a source's pass-through and dead letters, an operator's
 * results and late output; with checkpoints one object per writer) and
 * its acknowledgements.  acked, ended and the blobs are guarded by
 * run->mu once the thread runs. */
typedef struct rt_ck_slot {
    rt_sink *sink[2];
    tdm__sinkobj *obj[2];
    int w[2];              /* writer numbers (-1: none) */
    uint64_t acked, committed;
    bool ended;            /* no more barriers: fin is its final state */
    uint8_t *blob;         /* its state at acked */
    size_t len;
    uint8_t *fin;          /* its state once ended */
    size_t fin_len;
    uint8_t *sk[2];        /* pre_commit sections at acked */
    size_t sk_len[2];
    int64_t align_us;      /* its alignment for acked: first barrier
                              in to the last (operators; sources 0) */
} rt_ck_slot;

/* One source subtask. */
struct rt_src_task {
    char pad_head_[128];
    tdm__run *run;
    rt_source *src;
    int index;
    pthread_t th;
    bool started;
    tdm__source *conn;
    int n_parts;       /* splits the reader has */
    tdm_clock *clk;
    tdm_reader *reader;
    tdm__pool pool;
    bool pool_ok;
    tdm__sbatch *cur;  /* the batch being filled */
    uint8_t *finished; /* poll's per-partition flags */
    uint8_t *reported; /* finished partitions told to the reader */
    struct rt_unit {
        int n, small, big;
        int64_t first;
    } *uc;             /* timestamp unit evidence per partition */
    int part_cap;
    tdm__keybuf kb;
    tdm_time_ms now;
    bool lazy;         /* the current batch's segments are pushed lazily */
    uint8_t *unkicked; /* per target: lazily pushed to since last kick */
    bool empty;        /* will never read a row (see run.c) */
    uint32_t routed;   /* derived: rows of cur already routed */
    bool failed;
    /* Metrics (metrics.h).  parts has part_cap entries, the first n_pub
     * of them visible to snapshots; mx guards parts and n_pub against
     * snapshots while the array grows. */
    pthread_mutex_t mx;
    bool mx_ok;
    rt_part *parts;
    rt_phot *hot;      /* part_cap entries, the source thread's own */
    int n_pub;
    uint32_t seq;      /* batch sequence (rt_part.stamp) */
    int *mtouched;     /* partitions with records in this batch (the
                          generator's one call per partition and batch,
                          and the metrics published) */
    int n_mt;          /* entries of mtouched */
    tdm__hist lag;     /* event lag of the sampled batches' records
                          (RT_LAG_EXACT_BATCHES, then 1 in RT_LAG_EVERY) */
    uint64_t lag_max;  /* largest event lag of a sampled record */
    uint64_t lag_seen; /* records with an event lag, sampled or not */
    bool lag_ok;
    tdm_time_ms lag_next;   /* next publication of the quantiles */
    tdm_time_ms sweep_next; /* next refresh of every split watermark */
    bool sweep;        /* the reader emitted: refresh every split */
    int unit;          /* timestamp unit suspicion (TS_UNIT) */
    tdm_time_ms wm_out; /* last watermark emitted */
    bool idle;          /* last status emitted */
    /* Version-2 sources (run.c, task_source.c). */
    bool forced_idle;   /* idle because no split is live */
    bool reader_idle;   /* the reader's own last status */
    int n_live;         /* splits neither finished nor revoked */
    tdm_time_ms *floor; /* per split: replay floor (C(ts) <= floor: skip) */
    bool any_floor;     /* some live split has a floor */
    tdm_time_ms *hzbuf; /* per split: horizon handed to mark() */
    tdm_time_ms marked; /* watermark of the last mark() */
    bool scanning;      /* inside scan_batch (on-event watermarks) */
    bool wm_after_rows; /* wm_out went out after every polled row */
    bool replay_logged;
    int64_t replay_skipped;
    /* Commits: the run thread publishes (c_proc, c_done), then bumps
     * c_req (release); the source thread commits when it changed. */
    _Atomic int64_t c_proc, c_done;
    tdm_time_ms c_pend;  /* the run thread's own, before the flush */
    atomic_uint c_req;
    unsigned c_seen;
    bool commit_warned;
    /* Alignment: the latest announcement for this subtask (ann_max, then
     * ann_seq bumped, release) and the pause state applied per split. */
    _Atomic int64_t ann_max;
    atomic_uint ann_seq;
    unsigned ann_seen;
    bool reading_paused;
    uint8_t *ppaused;   /* per split: paused at the connector */
    /* Key fence: per split and consumer edge (index p * n_edges + e),
     * key -> highest commit horizon of its records; fk_cap splits. */
    struct rt_keyset *fk;
    int fk_cap;
    /* Two-phase aggregation: per edge, its local aggregate (NULL: the
     * edge is routed as is); any_lagg: some edge has one. */
    rt_lagg **lagg;
    bool any_lagg;
    rt_src_metrics m;
    /* Checkpoints (ckpt.c): its sink objects and acknowledgements;
     * pass_obj and dead_obj are ck.obj[0] and [1] (the shared objects
     * without checkpoints). */
    rt_ck_slot ck;
    char pad_tail_[128];
};

/* One window or join subtask. */
struct rt_op_task {
    char pad_head_[128];
    tdm__run *run;
    rt_op *op;
    int index;
    pthread_t th;
    bool started;
    tdm__queue q;
    tdm_clock *clk;
    tdm_winop *win;
    tdm_joinop *join;
    tdm__rowagg *ra;
    tdm__keybuf kb, pk, uk;
    bool *ch_ended;
    bool nodrain;        /* a channel ended without draining (stop) */
    tdm_time_ms *ch_wm;
    bool *ch_warned;
    int ended;
    _Atomic int64_t wm;       /* published operator watermark */
    int64_t late_dropped_seen;
    /* Output scratch. */
    tdm__col *cols;
    tdm__val *vals, *lvals, *rvals;
    /* Retract mode: the last emitted row per key and window. */
    tdm__keys *rkeys;
    tdm__kv *rkv;
    tdm__timers *rtimers;
    bool failed;
    /* Metrics (metrics.h): plain counters of this thread, published to
     * m (and as deltas to the job's counters) after each group of
     * items. */
    int64_t c_in, c_out, c_late_side, c_panes, c_late_panes, c_regress;
    /* Key fence (fence.c): key -> epoch of the keys of revoked splits;
     * fkb holds a fenced key's bytes with its epoch suffix. */
    struct rt_keyset fence;
    tdm__keybuf fkb;
    int64_t c_fenced;   /* results of fenced identities not written */
    int64_t j_out, j_late_side, j_late_panes, j_regress; /* published */
    bool *ch_idle;
    rt_chan *chp;
    /* Chaining: the derived source subtask this subtask writes its
     * results to (NULL: none) and the row being filled (the output
     * schema's values). */
    rt_src_task *emit;
    tdm__val *evals;
    rt_op_metrics m;
    tdm_time_ms now;     /* processing time of the current group */
    tdm_time_ms wm_out;  /* last watermark the operator emitted */
    /* Late samples: a ring guarded by lmx (taken per late record). */
    pthread_mutex_t lmx;
    bool lmx_ok;
    rt_late *late;
    int late_n, late_head, late_budget;
    /* Window status (job-owned) and the debug log. */
    rt_wstat *ws;
    tdm_time_ms *dbg_wm, *dbg_at; /* ring of watermark advances */
    int dbg_n, dbg_head;
    /* Result latency (docs/metrics.md, resultLatencyP50): when the
     * watermark item being handled left its source (tdm__mono_us; 0:
     * unknown), the clock read for the rows it fires (re-read every
     * RT_LAT_EVERY rows), and the histogram of on-time rows' latencies
     * in microseconds; lat_pub: when p50/p99 were last published. */
    int64_t wm_at_us, lat_now_us;
    uint32_t lat_left;
    tdm__hist lat;
    tdm_time_ms lat_pub;
    /* Checkpoints: sink objects and acknowledgements (ck.obj[0] results,
     * [1] late output), and alignment: channels blocked by barrier
     * ck_id and the items held back from them (per channel, FIFO). */
    rt_ck_slot ck;
    bool *ck_blocked;
    int ck_n_blocked;
    uint64_t ck_id;
    uint64_t ck_taken; /* the last checkpoint id snapshotted (0: none) */
    int64_t ck_first_us; /* when ck_id's first barrier came (mono us) */
    struct rt_stash {
        tdm__item *it;
        int n, cap;
    } *ck_stash;
    /* Keeps neighbouring heap data off this subtask's cache lines. */
    char pad_tail_[128];
};

struct tdm__run {
    tdm_job *job;
    int P;
    int key_groups;
    uint16_t *owner;     /* key group -> subtask */
    size_t batch_size;
    int qcap;
    tdm_time_ms guard;
    bool guard_dead;
    atomic_int abort;
    rt_source *srcs;
    int n_srcs;
    rt_source *dsrcs;    /* derived sources (chaining), no thread each */
    int n_dsrcs;
    rt_op *ops;
    int n_ops;
    rt_sink *sinks;
    int n_sinks;
    rt_sink *dead;
    atomic_int bad_logged;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n_threads, n_done;
    tdm_err err;
    char errmsg[1024];
    bool debug;          /* log.level debug */
    /* Cancel stops without draining (on_cancel stop, or auto with an
     * endless Kafka source): open windows are not written. */
    bool stop_on_cancel;
    bool any_v2;         /* some source commits (version 2) */
    bool any_early;      /* some window fires before its watermark */
    tdm_time_ms commit_interval;
    bool flush_warned;   /* the committer's flush failed last round */
    rt_align *aligns;
    int n_aligns;
    rt_ckpt ck;
};

/* ---- Checkpoints (ckpt.c; docs/checkpoints.md "In the runtime") ---- */

/* Opens checkpoint.dir and, unless checkpoint.restore is none, loads the
 * newest valid checkpoint (checking the job's shape) for the subtasks
 * and sinks to restore from.  Before open_sinks and make_tasks.  TDM_OK
 * (checkpointing off: nothing done), TDM_ERR_IO, TDM_ERR_PARSE,
 * TDM_ERR_STATE (directory locked, another job's checkpoint). */
tdm_err rt_ckpt_open(tdm__run *run, char *errbuf, size_t errbuf_size);
/* Opens the per-writer sink objects of sink @p s and recovers each from
 * the restored checkpoint (or from scratch). */
tdm_err rt_ckpt_open_sink(tdm__run *run, rt_sink *s, int si, char *errbuf,
                          size_t errbuf_size);
/* Restores source subtask @p t's connector and reader (after open). */
tdm_err rt_ckpt_restore_source(rt_src_task *t, char *msg, size_t n);
/* Source subtask side, between polls: acknowledges barrier @p id with
 * its blob and sink sections (takes ownership of the buffers). */
void rt_ckpt_ack(tdm__run *run, rt_ck_slot *c, uint64_t id, uint8_t *blob,
                 size_t len, bool final);
/* Frees a slot's buffers. */
void rt_ckpt_slot_free(rt_ck_slot *c);
/* pre_commit of slot @p c's sink objects at @p id into c->sk (the
 * subtask's thread, or the run thread once it ended).  False: the run
 * failed. */
bool rt_ckpt_pre_commit(tdm__run *run, rt_ck_slot *c, uint64_t id);
/* commit(@p id) on slot @p c's sink objects (failures logged: retried
 * by the next checkpoint's commit). */
void rt_ckpt_commit(tdm__run *run, rt_ck_slot *c, uint64_t id);
/* Restores operator subtask @p t's state (after its operator exists;
 * task_op_ckpt.c). */
tdm_err rt_ckpt_restore_op(rt_op_task *t, char *msg, size_t n);
/* Supervisor side: starts a checkpoint when due, completes one every
 * subtask acknowledged.  @p at_end: threads all stopped. */
void rt_ckpt_step(tdm__run *run, bool at_end);
/* The final checkpoint at a clean end (every subtask stopped), then
 * sink commits; before the sinks close. */
void rt_ckpt_final(tdm__run *run);
/* Closes the store, frees restore data. */
void rt_ckpt_close(tdm__run *run);
/* ---- Lineages: a fresh start and the output it replaces
 * (ckpt_lineage.c) ---- */

/* A fresh start; @p newest: the newest valid checkpoint (0: none),
 * whose lineage's move aside the fresh start finishes first. */
tdm_err rt_lineage_begin(tdm__run *run, uint64_t newest, char *errbuf,
                         size_t errbuf_size);
/* At a restore (ck->rd open): the restored checkpoint's lineage. */
tdm_err rt_lineage_load(tdm__run *run, char *errbuf, size_t errbuf_size);
/* A checkpoint @p id started: the first of a fresh lineage is its id. */
void rt_lineage_started(tdm__run *run, uint64_t id);
/* Writes the lineage blob into the checkpoint being written. */
tdm_err rt_lineage_put(tdm__run *run);
/* Sink @p s before its writers open (a restore finishes the move aside)
 * and after (the run's ids go above every id its output names). */
tdm_err rt_lineage_sink_before(tdm__run *run, const rt_sink *s,
                               char *errbuf, size_t errbuf_size);
tdm_err rt_lineage_sink_after(tdm__run *run, const rt_sink *s,
                              char *errbuf, size_t errbuf_size);
/* A checkpoint is durable, before the sinks commit: a fresh lineage moves
 * the old output aside.  False: that failed and the run failed. */
bool rt_lineage_durable(tdm__run *run);

/* ---- Failed checkpoints and restarts (restart.c) ---- */

/* Counts checkpoint @p id's outcome (@p why: its failure, NULL when it
 * completed) and fails the run when the failures in a row exceed
 * checkpoint.tolerable_failed, or when the final one failed.  The run
 * thread, at the end of every checkpoint. */
void rt_ckpt_outcome(tdm__run *run, uint64_t id, const char *why);

/* A tdm_job_run's restarts: the attempt count and back-off. */
typedef struct rt_restart {
    int strategy;          /* 0 none, 1 fixed-delay, 2 exponential-delay */
    int64_t attempts;      /* restarts allowed in a row */
    int64_t in_row;        /* restarts since a checkpoint completed */
    int64_t delay_ms;      /* the next back-off */
    int64_t completed;     /* checkpoints completed when it last looked */
} rt_restart;

/* Reads the job's restart.* keys. */
void rt_restart_init(rt_restart *rs, const tdm_job *job);
/* After a failed attempt (@p err, message in @p errbuf): whether to run
 * again.  When so, logs the restart, counts it and waits the back-off
 * (false if cancelled meanwhile); when not, and restarts were made,
 * says so in @p errbuf. */
bool rt_restart_next(rt_restart *rs, tdm_job *job, tdm_err err,
                     char *errbuf, size_t errbuf_size);
/* Blob name of a source subtask / a sink writer. */
void rt_ckpt_src_name(int si, int k, char *buf, size_t n);
/* Why a write to object @p obj of sink @p s failed, as " (<message>)"
 * in @p buf (empty when the sink cannot tell): the text sink keeps an
 * object's first I/O error with the file and the system's reason (a
 * full disk), and its flush returns it.  For the failure messages of the
 * subtasks' writes (task_op_emit.c, task_source.c). */
void rt_sink_why(const rt_sink *s, tdm__sinkobj *obj, char *buf, size_t n);

/* ---- Key fence (fence.c) ---- */

/* The value of @p key (hash @p h, the caller's tdm__keys_hash), or NULL.
 * The pointer is valid until the next put or prune. */
int64_t *rt_keyset_find(const rt_keyset *s, const char *key, size_t len,
                        uint64_t h);
/* Sets the value of @p key to @p v, or keeps the larger one if present
 * (copies the key).  TDM_OK or TDM_ERR_NOMEM (the set is unchanged). */
tdm_err rt_keyset_put_max(rt_keyset *s, const char *key, size_t len,
                          uint64_t h, int64_t v);
/* Removes every key whose value is <= @p le. */
void rt_keyset_prune(rt_keyset *s, int64_t le);
/* Frees the set's memory and empties it (the struct is the caller's). */
void rt_keyset_free(rt_keyset *s);

/* The keys of a fenced split as a source subtask sends them to one window
 * subtask (item TDM__ITEM_FENCE): n keys, each a uint32 length (native
 * order) and its bytes, in data.  Allocated by the source, freed by the
 * consumer (or by rt_op_task_fini when the run aborted with it queued). */
typedef struct rt_fence {
    uint32_t n;
    size_t len, cap;
    char *data;
} rt_fence;

/* Frees a fence message (NULL-safe). */
void rt_fence_free(rt_fence *f);

/* ---- Two-phase aggregation (localagg.c) ---- */

/* One partial row: the slice start (the record timestamp the window
 * subtask pushes it with), the key (as in tdm__sel: key_len
 * TDM__SEL_FIXED for a fixed-width key's value bytes in key, else
 * key_len bytes at offset key of rt_partials.keys); the accumulator
 * follows. */
typedef struct rt_pent {
    tdm_time_ms ts;
    uint32_t key_len;
    uint32_t pad_;
    uint64_t key;
    uint64_t records;  /* records folded into it (the subtask's
                          numRecordsIn counts them) */
} rt_pent;

struct rt_ppool;

/* The partial rows a source subtask's local aggregate sends one window
 * subtask at one watermark (item TDM__ITEM_PARTIAL): n entries of stride
 * bytes (rt_pent, then acc_size accumulator bytes).  Taken by the source
 * from its local aggregate's pool (rt_ppool), handed back by the
 * consumer with rt_partials_release (or freed by rt_op_task_fini when
 * the run aborted with it queued). */
typedef struct rt_partials {
    uint32_t n, cap;
    size_t stride, acc_size;
    char *ents;
    char *keys;
    size_t kused, kcap;
    struct rt_ppool *pool;     /* where it returns (NULL: freed) */
    struct rt_partials *next;  /* the pool's free list */
} rt_partials;

/* The recycled partials messages of one local aggregate: the consumer
 * thread puts a message back (its buffers kept), the source thread takes
 * it for the next flush, so a flush neither allocates nor faults fresh
 * pages once messages have grown.  At most keep messages wait here (the
 * rest are freed), which is what can be in flight at once: (queue
 * capacity + 1) per consumer subtask.  Locked: one lock per message of
 * thousands of rows. */
typedef struct rt_ppool {
    pthread_mutex_t mu;
    rt_partials *free;
    int n_free, keep;
} rt_ppool;

/* Frees a partials message and its buffers (NULL-safe; never touches
 * its pool, so it is safe after the pool's owner is gone). */
void rt_partials_free(rt_partials *m);
/* Hands a partials message the consumer has merged back to its pool
 * (takes ownership; NULL-safe).  Any thread; the pool must still exist,
 * which it does until the source subtasks are freed after every thread
 * was joined. */
void rt_partials_release(rt_partials *m);

/* The suffix a fenced key's later records carry at the window operator:
 * the epoch (uint32, native order) then these 8 bytes. */
#define RT_FENCE_MAGIC "\xf3\x7e\x1d\xa9\x5c\x02\xe8\x6b"
#define RT_FENCE_SUFFIX (4 + 8)

/* Records the run's first error (message formatted), aborts the run and
 * wakes every waiting thread. */
void rt_fail(tdm__run *run, tdm_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds @p v to a job counter (relaxed). */
static inline void rt_count(tdm__run *run, tdm_stat s, int64_t v)
{
    if (v)
        atomic_fetch_add_explicit(&run->job->stats[s], v,
                                  memory_order_relaxed);
}

/* ---- Emitter: an operator's output stream (task_source.c) ---- */

/* Sets up derived source subtask @p t (run, src, index set): its batch
 * pool and routing scratch.  Frees with rt_source_task_fini.  TDM_OK or
 * TDM_ERR_NOMEM. */
tdm_err rt_emit_init(rt_src_task *t);
/* Appends one row of the derived schema (@p vals: schema->n values,
 * strings copied) stamped @p ts to the batch being filled, flushing the
 * batch first when it is full.  May wait for a free batch or a full
 * queue (backpressure).  TDM_OK; TDM_ERR_NOMEM; TDM_ERR_STATE when the
 * run aborted (nothing queued). */
tdm_err rt_emit_row(rt_src_task *t, const tdm__val *vals, tdm_time_ms ts);
/* Routes the rows appended since the last flush to the consumers'
 * subtasks owning their keys and queues them. */
void rt_emit_flush(rt_src_task *t);
/* Flushes, then sends a control item (WATERMARK @p wm, STATUS @p idle,
 * END with @p idle set for a stop without drain) to every consumer
 * subtask; @p at_us is the result-latency stamp carried along. */
void rt_emit_control(rt_src_task *t, tdm__item_kind kind, tdm_time_ms wm,
                     int idle, int64_t at_us);

/* Thread bodies and per-subtask setup/teardown. */
void *rt_source_main(void *arg);
tdm_err rt_source_task_init(rt_src_task *t);
void rt_source_task_fini(rt_src_task *t);
void *rt_op_main(void *arg);
tdm_err rt_op_task_init(rt_op_task *t);
void rt_op_task_fini(rt_op_task *t);
/* Marks the calling subtask finished (the run thread waits for all). */
void rt_thread_done(tdm__run *run);
/* The commit horizon C(ts) of source @p s: the maximum over its
 * consumers (TDM_TIME_MAX when one of them changes results until the
 * end of input). */
tdm_time_ms rt_horizon_of(const rt_source *s, tdm_time_ms ts);
/* The commit horizon of a record at  ts for consumer edge  e alone. */
tdm_time_ms rt_edge_horizon(const rt_edge *e, tdm_time_ms ts);
/* The watermark up to which every consumer channel of source subtask
 * @p t has handled its input: the minimum over them of the channel's
 * watermark (TDM_TIME_MAX once ended). */
tdm_time_ms rt_src_processed(const rt_src_task *t);
/* A clock reading the job's processing time. */
tdm_err rt_clock_new(tdm_job *job, tdm_clock **out);
/* The punctuated strategy's marker predicate (ud: the rt_source). */
int rt_marker_fn(void *ud, const tdm_record *rec);

/* ---- Metrics (metrics.c) ---- */

/* Builds a snapshot of a run's published metrics at processing time
 * @p now (@p running: 1 while subtasks run).  The caller holds the
 * job's metrics lock.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err rt_metrics_build(tdm__run *run, tdm_time_ms now, int running,
                         struct tdm_metrics **out);
/* Prepares the job's window status memory for a new run (under the
 * metrics lock, after the status callers left).  TDM_OK or NOMEM. */
tdm_err rt_warea_start(tdm__run *run);
/* Called by the run thread after every subtask stopped: keeps the final
 * snapshot and the window subtasks' final state, and ends the live view
 * (tasks are freed right after). */
void rt_metrics_finish(tdm__run *run);
/* The window subtask's side of tdm_job_window_status: answers a posted
 * question, if any (between two groups of items). */
void rt_status_serve(rt_op_task *t);
/* Called by a window subtask as it stops: answers a pending question,
 * then leaves its final watermark for later ones. */
void rt_status_close(rt_op_task *t);
/* The channel holding an operator subtask's watermark: the lowest
 * watermark among channels neither idle nor ended; -1 when none. */
int rt_holding_channel(const rt_op_task *t);
/* Formats epoch ms as ISO-8601 with milliseconds ("none" for
 * TDM_TIME_MIN, "end" for TDM_TIME_MAX), for the debug log. */
void rt_format_ms(tdm_time_ms ms, char *buf, size_t n);
/* Renders key bytes of an operator as text: the key fields' values
 * joined by ','. */
void rt_key_text(const rt_op *op, const char *key, size_t len, char *buf,
                 size_t n);

#endif /* TDM_RUN_H */
