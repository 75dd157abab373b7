/* SPDX-License-Identifier: MIT */
/* task_op.h - what the files of the window and join subtask share (the
 * struct, the thread body and its setup are also what run.c, ckpt.c and
 * metrics.c use):
 *
 *   task_op.c       input dispatch, the subtask loop, setup and teardown;
 *   task_op_emit.c  writing rows: the operators' emit callbacks, the
 *                   append / upsert / retract output modes, late output;
 *   task_op_ckpt.c  checkpoint barriers and alignment, the subtask's
 *                   snapshot and restore, retract mode's memory in it;
 *   op_ctx.c        what they share below them (the out-of-memory
 *                   failure), so that neither of the other two calls
 *                   back into task_op.c;
 *   op_fence.c      the key fence's epochs (state t->fence);
 *   op_fallback.c   the data watermark under a fallback (state t->fb);
 *   op_status.c     window status serving (state t->status);
 *   op_retract.c    retract mode's memory (state t->ret);
 *   op_metrics.c    counters, latency, late samples (state t->met).
 *
 * The loop (tdm__rt_op_main) is a sequence of hook-list calls: the
 * items of a group, then after_group (checkpoint commits while aligning,
 * processing-time timers, retract cleanup, metrics publication, status
 * questions, the chained output's flush), and at the end on_end.
 *
 * Only functions called once per item, per group of items or on a
 * failure cross these files, and only downwards: the loop in task_op.c
 * calls the other three, which return what it must handle (the items a
 * checkpoint held back) instead of calling it.  The per-record paths
 * (push_rows, and the emit callback down to the sink write) each stay
 * within one file.
 */
#ifndef TDM_TASK_OP_H
#define TDM_TASK_OP_H

#include "core/busy.h"
#include "core/hist.h"
#include "runtime/metrics.h"
#include "runtime/op_fallback.h"
#include "runtime/op_fence.h"
#include "runtime/op_metrics.h"
#include "runtime/op_retract.h"
#include "runtime/op_status.h"
#include "runtime/outbox.h"
#include "runtime/plan.h"
#include "runtime/rt_ctx.h"
#include "window/join.h"
#include "window/win.h"

/* Checkpoint barrier alignment (task_op_ckpt.c): the channels blocked
 * by barrier id and the items held back from them (per channel, FIFO).
 * Allocated only when the run takes checkpoints (blocked NULL: off). */
typedef struct tdm__op_align_state {
    bool *blocked;    /* per channel: its barrier came */
    int n_blocked;    /* channels blocked */
    uint64_t id;      /* the checkpoint being aligned (0: none) */
    uint64_t taken;   /* the last checkpoint id snapshotted (0: none) */
    int64_t first_us; /* when id's first barrier came (mono us) */
    struct tdm__rt_stash {
        tdm__item *it;
        int n, cap;
    } * stash;
} tdm__op_align_state;

/* One window or join subtask. */
struct tdm__rt_op_task {
    char pad_head_[128];
    tdm__run *run;
    tdm__rt_op *op;
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
    bool nodrain; /* a channel ended without draining (stop) */
    tdm_time_ms *ch_wm;
    bool *ch_warned;
    int ended;
    bool done;          /* every channel ended (the loop's last group) */
    _Atomic int64_t wm; /* published operator watermark */
    /* Output scratch. */
    tdm__col *cols;
    tdm__val *vals, *lvals, *rvals;
    /* Retract mode's memory (op_retract.h). */
    tdm__op_retract_state ret;
    bool failed;
    /* Key fence (op_fence.h): fenced keys' epochs, their bytes, the
     * results not written. */
    tdm__op_fence_state fence;
    tdm__op_fb_state fb; /* the data watermark (op_fallback.h) */
    /* Live settings (live.h, op_live.c): the node's generation applied,
     * and the same for GET /jobs/:id/config. */
    const struct tdm__live_src *live; /* the node's (NULL: none) */
    uint64_t live_gen;
    _Atomic uint64_t live_seen;
    bool *ch_idle;
    tdm__rt_chan *chp;
    /* Chaining: the derived source subtask this subtask writes its
     * results to (NULL: none) and the row being filled (the output
     * schema's values). */
    tdm__rt_src_task *emit;
    tdm__val *evals;
    tdm_time_ms now;    /* processing time of the current group */
    tdm_time_ms wm_out; /* last watermark the operator emitted */
    /* Published metrics, latency, late samples, the debug ring
     * (op_metrics.h). */
    tdm__op_metrics_state met;
    tdm__op_status_state status; /* window status (op_status.h) */
    /* Checkpoints: sink objects and acknowledgements (ck.obj[0] results,
     * [1] late output), and alignment: channels blocked by barrier
     * ck_id and the items held back from them (per channel, FIFO). */
    tdm__rt_ck_slot ck;
    tdm__op_align_state cka; /* barrier alignment (task_op_ckpt.c) */
    /* Where the thread's time goes (core/busy.h): waits for input, for
     * a downstream queue, in a sink. */
    tdm__busy busy;
    /* Keeps neighbouring heap data off this subtask's cache lines. */
    char pad_tail_[128];
};

/* ---- op_ctx.c: what the three files share, below all of them ---- */

/* Out of memory in the operator or the output path: marks subtask @p t
 * failed and fails the run (borrows @p t). */
void tdm__rt_op_fail_nomem(tdm__rt_op_task *t);
/* Releases what a queue item carries that is not a batch: a fence or
 * partials message (the queue and the alignment stash own them). */
void tdm__rt_op_item_release(const tdm__item *it);

/* ---- task_op.c ---- */

/* The operator subtask's thread body (@p arg: its tdm__rt_op_task). */
void *tdm__rt_op_main(void *arg);
/* Sets up operator subtask @p t (run, op, index set) before its thread
 * starts.  TDM_OK or an error; tdm__rt_op_task_fini frees either way. */
tdm_err tdm__rt_op_task_init(tdm__rt_op_task *t);
/* Frees what tdm__rt_op_task_init or the thread left. */
void tdm__rt_op_task_fini(tdm__rt_op_task *t);

/* Handles one item @p it (borrowed; a batch's reference and a fence or
 * partials message are released here, i.e. the call takes ownership of
 * what the item carries); returns true once every channel has ended. */
bool tdm__rt_op_handle(tdm__rt_op_task *t, const tdm__item *it);

/* ---- task_op_emit.c ---- */

/* The window operator's emit callback (tdm_winop_new's emit, @p opaque:
 * the tdm__rt_op_task): writes results, late records, and forwards watermarks
 * and status.  Borrows @p ev. */
void tdm__rt_op_win_emit(void *opaque, const tdm_event *ev);
/* The join operator's emit callback (@p opaque: the tdm__rt_op_task): writes
 * joined pairs and late records, forwards watermarks and status.
 * Borrows @p ev. */
void tdm__rt_op_join_emit(void *opaque, const tdm_event *ev);
/* The window operator's drop probe (@p ud: the tdm__rt_op_task): samples a
 * record dropped as late.  Borrows @p rec. */
void tdm__rt_op_win_dropped(void *ud, const tdm_record *rec);
/* The join operator's drop probe (@p ud: the tdm__rt_op_task, @p side 0 left,
 * else right): samples a record dropped as late.  Borrows @p rec. */
void tdm__rt_op_join_dropped(void *ud, int side, const tdm_record *rec);

/* ---- task_op_ckpt.c ---- */

/* Sets up subtask @p t's alignment state (checkpoints on).  TDM_OK or
 * TDM_ERR_NOMEM; tdm__opck_fini frees either way. */
tdm_err tdm__opck_init(tdm__rt_op_task *t);
/* Frees the alignment state, with the items still held back when a run
 * aborted (NULL-safe parts). */
void tdm__opck_fini(tdm__rt_op_task *t);

/* A barrier on channel it->ch (borrowed): blocks the channel until the
 * barrier came on every channel that has not ended. */
void tdm__rt_op_on_barrier(tdm__rt_op_task *t, const tdm__item *it);
/* While a barrier blocks item @p it's channel: holds the item back
 * (copied into the channel's stash, which then owns what it carries; on
 * no memory the run fails and a batch is released) and returns true.
 * False: the channel is not blocked, the caller handles the item. */
bool tdm__opck_hold(tdm__rt_op_task *t, const tdm__item *it);
/* Whether a checkpoint is being aligned and every channel has its
 * barrier or has ended. */
bool tdm__opck_aligned(const tdm__rt_op_task *t);
/* Once aligned: snapshots the subtask, pre-commits its sinks, passes the
 * barrier on to a chained output and acknowledges.  The blocked channels
 * stay blocked until the caller takes their held items, channel by
 * channel, with tdm__opck_unblock. */
void tdm__opck_checkpoint(tdm__rt_op_task *t);
/* After tdm__opck_checkpoint: unblocks channel @p c and returns the items
 * held back on it (@p n of them, in arrival order; NULL when the channel
 * was not blocked), which the caller handles as fresh items and then
 * hands back with tdm__opck_unblocked(t, c, n). */
const tdm__item *tdm__opck_unblock(tdm__rt_op_task *t, int c, int *n);
/* Empties channel @p c's stash and gives its @p n items' queue capacity
 * back. */
void tdm__opck_unblocked(tdm__rt_op_task *t, int c, int n);
/* Between groups of items: commits the sinks up to the checkpoint the
 * coordinator published as committed. */
void tdm__rt_op_ckpt_poll(tdm__rt_op_task *t);
/* The operator ended: acknowledges its final state (a snapshot the
 * checkpoint store takes ownership of) for the checkpoints still to
 * come. */
void tdm__rt_op_ckpt_end(tdm__rt_op_task *t);

#endif /* TDM_TASK_OP_H */
