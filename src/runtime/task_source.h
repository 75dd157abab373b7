/* SPDX-License-Identifier: MIT */
/* task_source.h - one source subtask: the thread that polls its share of
 * a source's splits, stamps and guards records, generates watermarks and
 * routes batches and control items to the consumers' queues.  A derived
 * source's subtask (chaining) has no thread: the operator subtask that
 * feeds it writes through the emitter (outbox.h).
 *
 * Every field is the subtask thread's own unless its comment names
 * another thread (the run thread's commit and alignment requests, the
 * metrics snapshots under mx).  Made and freed by run.c.
 */
#ifndef TDM_RT_TASK_SOURCE_H
#define TDM_RT_TASK_SOURCE_H

#include "core/hist.h"
#include "runtime/metrics.h"
#include "runtime/outbox.h"
#include "runtime/plan.h"
#include "runtime/rt_ctx.h"

typedef struct tdm__rt_lagg tdm__rt_lagg;

/* One source subtask. */
struct tdm__rt_src_task {
    char pad_head_[128];
    tdm__run *run;
    tdm__rt_source *src;
    int index;
    pthread_t th;
    bool started;
    tdm__source *conn;
    int n_parts; /* splits the reader has */
    tdm_clock *clk;
    tdm_reader *reader;
    tdm__pool pool;
    bool pool_ok;
    tdm__sbatch *cur;  /* the batch being filled */
    uint8_t *finished; /* poll's per-partition flags */
    uint8_t *reported; /* finished partitions told to the reader */
    struct tdm__rt_unit {
        int n, small, big;
        int64_t first;
    } * uc; /* timestamp unit evidence per partition */
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
    tdm__rt_part *parts;
    tdm__rt_phot *hot; /* part_cap entries, the source thread's own */
    int n_pub;
    uint32_t seq;      /* batch sequence (tdm__rt_part.stamp) */
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
    bool sweep;             /* the reader emitted: refresh every split */
    int unit;               /* timestamp unit suspicion (TS_UNIT) */
    tdm_time_ms wm_out;     /* last watermark emitted */
    bool idle;              /* last status emitted */
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
    tdm_time_ms c_pend; /* the run thread's own, before the flush */
    atomic_uint c_req;
    unsigned c_seen;
    bool commit_warned;
    /* Alignment: the latest announcement for this subtask (ann_max, then
     * ann_seq bumped, release) and the pause state applied per split. */
    _Atomic int64_t ann_max;
    atomic_uint ann_seq;
    unsigned ann_seen;
    bool reading_paused;
    uint8_t *ppaused; /* per split: paused at the connector */
    /* Key fence: per split and consumer edge (index p * n_edges + e),
     * key -> highest commit horizon of its records; fk_cap splits. */
    struct tdm__rt_keyset *fk;
    int fk_cap;
    /* Two-phase aggregation: per edge, its local aggregate (NULL: the
     * edge is routed as is); any_lagg: some edge has one. */
    tdm__rt_lagg **lagg;
    bool any_lagg;
    tdm__rt_src_metrics m;
    /* Checkpoints (ckpt.c): its sink objects and acknowledgements;
     * pass_obj and dead_obj are ck.obj[0] and [1] (the shared objects
     * without checkpoints). */
    tdm__rt_ck_slot ck;
    char pad_tail_[128];
};

/* The source subtask's thread body (@p arg: its tdm__rt_src_task). */
void *tdm__rt_source_main(void *arg);
/* Sets up source subtask @p t (run, src, index set) before its thread
 * starts.  TDM_OK or an error; tdm__rt_source_task_fini frees either way. */
tdm_err tdm__rt_source_task_init(tdm__rt_src_task *t);
/* Frees what tdm__rt_source_task_init or the thread left (NULL-safe parts). */
void tdm__rt_source_task_fini(tdm__rt_src_task *t);

#endif /* TDM_RT_TASK_SOURCE_H */
