/* SPDX-License-Identifier: MIT */
/* task_source.h - one source subtask: the thread that polls its share of
 * a source's splits, stamps and guards records, generates watermarks and
 * routes batches and control items to the consumers' queues.  A derived
 * source's subtask (chaining) has no thread: the operator subtask that
 * feeds it writes through the emitter (outbox.h).
 *
 * The struct holds the loop's core (connector, reader, pool, the batch
 * being filled, the clock reading, the outbox's routing state, the last
 * watermark and status out) and, by value, each component's own state
 * struct, declared in the component's header (src_*.h, which says which
 * hooks it implements).  Every field is the subtask thread's own unless
 * its comment names another thread (the run thread's commit and
 * alignment requests, the metrics snapshots under met.mx).  Made and
 * freed by run.c.
 */
#ifndef TDM_RT_TASK_SOURCE_H
#define TDM_RT_TASK_SOURCE_H

#include "core/busy.h"
#include "core/hist.h"
#include "runtime/metrics.h"
#include "runtime/outbox.h"
#include "runtime/plan.h"
#include "runtime/rt_ctx.h"
#include "runtime/src_ahead.h"
#include "runtime/src_align.h"
#include "runtime/src_fence.h"
#include "runtime/src_lagg.h"
#include "runtime/src_metrics.h"
#include "runtime/src_unit.h"
#include "runtime/src_v2.h"

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
    tdm__sbatch *cur;         /* the batch being filled */
    uint8_t *finished;        /* poll's per-partition flags */
    uint8_t *reported;        /* finished partitions told to the reader */
    tdm__src_unit_state unit; /* timestamp unit evidence (src_unit.h) */
    int part_cap;
    tdm__keybuf kb;
    tdm_time_ms now;
    bool lazy;         /* the current batch's segments are pushed lazily */
    uint8_t *unkicked; /* per target: lazily pushed to since last kick */
    bool empty;        /* will never read a row (see run.c) */
    uint32_t routed;   /* derived: rows of cur already routed */
    bool failed;
    /* Published metrics and lag (src_metrics.h): the scan's per-row
     * fields first. */
    tdm__src_metrics_state met;
    bool sweep;         /* the reader emitted: refresh every split */
    tdm_time_ms wm_out; /* last watermark emitted */
    bool idle;          /* last status emitted */
    bool scanning;      /* inside scan_batch (on-event watermarks) */
    bool wm_after_rows; /* wm_out went out after every polled row */
    /* The data watermark under wm_out, sent with it (tdm__item.dt) when
     * fb is set: a source with a fallback watermark, or an operator's
     * output downstream of one (op_fallback.h). */
    bool fb;
    tdm_time_ms dt_out;
    tdm__src_v2_state v2;       /* version-2 sources (src_v2.h) */
    tdm__src_align_state align; /* watermark alignment (src_align.h) */
    tdm__src_fence_state fence; /* the key fence (src_fence.h) */
    tdm__src_lagg_state la;     /* two-phase aggregation (src_lagg.h) */
    tdm__src_ahead_state ahead; /* the record that ran ahead (src_ahead.h) */
    uint64_t live_gen;          /* live settings applied (live.h) */
    _Atomic uint64_t live_seen; /* the same, for GET /jobs/:id/config */
    /* Checkpoints (ckpt.c, src_ckpt.h): its sink objects and
     * acknowledgements; pass_obj and dead_obj are ck.obj[0] and [1] (the
     * shared objects without checkpoints). */
    tdm__rt_ck_slot ck;
    /* Where the thread's time goes (core/busy.h): waits for a batch or
     * a downstream queue, polls that returned nothing. */
    tdm__busy busy;
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
