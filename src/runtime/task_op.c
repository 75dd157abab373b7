/* SPDX-License-Identifier: MIT */
/* task_op.c - window and join subtasks.  Each runs on its own thread,
 * owns one operator (tdm_winop or tdm_joinop) whose valve merges the
 * subtask's input channels (one per upstream source subtask), and turns
 * what the operator emits into sink rows:
 *
 *   queue item   BATCH      -> key bytes + record -> operator push
 *                WATERMARK  -> monotonicity check -> operator watermark
 *                STATUS     -> operator status
 *                END        -> once every channel ended: operator end
 *   operator     RESULT     -> out row (append / upsert / retract)
 *                JOIN       -> out row of left., right. fields and ts
 *                LATE       -> the late output sink
 *
 * An operator other operators read (chaining) also appends every result
 * or pair as a row of its output stream to its derived source subtask
 * (tdm__rt_emit_*), and forwards its output watermark, status and end there
 * after the rows they cover.
 *
 * This file holds the input side: the queue items into the operator
 * (rows, partial rows, watermarks, status, end, the key fence's keys),
 * the subtask loop with its published counters, and setup and teardown.
 * What the operator emits is written in task_op_emit.c; checkpoint
 * barriers, alignment and the subtask's snapshot are in task_op_ckpt.c
 * (task_op.h: what the three share).
 */
#include <string.h>

#include "runtime/ckpt.h"
#include "runtime/live.h"
#include "runtime/task_op.h"
#include "state/state.h"
#include "window/join.h"
#include "window/win.h"

/* ---- Input ---- */

/* The window join's packer (tdm__join_window_set_packer): push_rows
 * hands it the row, which is packed straight into the join's record log
 * (no packing into a buffer and copying). */
static size_t join_pack_size(const void *payload)
{
    return tdm__row_packed_size(payload);
}

static void join_pack_write(const void *payload, void *dst)
{
    tdm__row_pack_into(payload, dst);
}

/* How many rows of a segment ahead the key bytes are prefetched. */
#define PF_KEY 8

/* Pushes the rows of one batch segment into the operator.  The channel
 * says which input (union position or join side) and which source
 * subtask they come from.  The selection carries each row's timestamp
 * and, for a single-field key, its bytes (tdm__sel: the value of a
 * fixed-width field, or a string's bytes in place), so a count touches
 * only the selection and the key bytes of rows written on another core;
 * other keys are rebuilt here from the same fields the source hashed.
 * Row aggregates get the row and its input in the aggregate context
 * (tdm_winop_push_ctx).  The row also rides along as the record payload
 * (windows: the late output writes it from the LATE event's record;
 * window joins: their log packs it, join_pack_write) or packed into it
 * (interval joins, which keep copies of records beyond the call).  What
 * is the same for every row of the segment - the operator, its row
 * aggregates, the key fence - is decided once. */
static void push_rows(tdm__rt_op_task *t, const tdm__item *it)
{
    tdm__rt_op *op = t->op;
    int P = t->run->P;
    int input = it->ch / P;
    const int *kidx = op->in_key_idx[input];
    const tdm__batch *b = it->b->b;
    tdm_winop *win = t->win;
    const bool wjoin = !win && t->join->kind == TDM__JOIN_WINDOW;
    tdm__rowagg *ra = t->ra;
    /* The fence changes only between items (tdm__op_fence_apply). */
    const bool fenced = t->fence.keys.n != 0;
    /* Only a single string key can be bytes in the batch's arena. */
    const bool pf =
        op->n_key == 1 && b->schema->fields[kidx[0]].type == TDM_TYPE_STRING;
    const uint32_t n = it->n;
    t->met.c_in += n;
    /* The fields no row changes are set once. */
    tdm_record rec = {.payload_len = sizeof(tdm__row)};
    tdm_agg_ctx actx = {.input = input};
    char fixed[TDM__KEY_FIXED_LEN];
    for (uint32_t k = 0; k < n && !t->failed; k++) {
        const tdm__sel *sl = &it->sel[k];
        const tdm__row *row = &b->rows[sl->row];
        /* The first touch of in-place key bytes is a transfer from the
         * source's core: start it a few rows ahead. */
        if (pf && k + PF_KEY < n && sl[PF_KEY].key)
            __builtin_prefetch(sl[PF_KEY].key);
        const char *key;
        size_t klen;
        if (!tdm__sel_key(sl, fixed, &key, &klen) &&
            tdm__key_get(row, kidx, op->n_key, &t->kb, &key, &klen) != TDM_OK) {
            tdm__rt_op_fail_nomem(t);
            break;
        }
        if (__builtin_expect(fenced, 0) &&
            !(key = tdm__op_fence_key(&t->fence, key, &klen))) {
            tdm__rt_op_fail_nomem(t);
            break;
        }
        rec.key = key;
        rec.key_len = klen;
        rec.ts = sl->ts;
        tdm_err err;
        if (win) {
            rec.payload = row;
            if (ra) {
                actx.row = row;
                err = tdm_winop_push_ctx(win, it->ch, &rec, &actx);
            } else {
                err = tdm_winop_push(win, it->ch, &rec);
            }
        } else if (wjoin) {
            rec.payload = row;
            err = tdm_joinop_push(t->join, input, it->ch % P, &rec);
        } else {
            if (tdm__row_pack(row, &t->pk) != TDM_OK) {
                tdm__rt_op_fail_nomem(t);
                break;
            }
            rec.payload = t->pk.p;
            rec.payload_len = t->pk.len;
            err = tdm_joinop_push(t->join, input, it->ch % P, &rec);
        }
        if (err == TDM_ERR_NOMEM)
            tdm__rt_op_fail_nomem(t);
        /* NO_TIMESTAMP is counted by the operator and skipped. */
    }
}

/* How many partial rows ahead push_partials fetches key table slots. */
#define PARTIAL_AHEAD 4

/* Merges the partial rows of one source subtask's local aggregate
 * (two-phase aggregation, localagg.h) into the operator: each partial
 * goes into every window of its slice as the records it summarises
 * would have, with the built-in count's lean path
 * (tdm__winop_push_partial) or, for row aggregates, as a record whose
 * aggregate context names the partial, which add merges.  The record has
 * no payload: a partial is never late, so nothing reads it. */
static void push_partials(tdm__rt_op_task *t, const tdm__item *it)
{
    const tdm__rt_partials *m = it->fence;
    tdm_winop *win = t->win;
    tdm__rowagg *ra = t->ra;
    char fixed[TDM__KEY_FIXED_LEN];
    tdm_record rec = {.payload = NULL};
    for (uint32_t k = 0; k < m->n && !t->failed; k++) {
        /* The window store's entries are scattered: fetch ahead the key
         * table slot of the partial PARTIAL_AHEAD rows on.  A
         * fixed-width key's hash is computed from its value, not its
         * bytes (tdm__key_fixed_ws_hash). */
        if (!ra && k + PARTIAL_AHEAD < m->n) {
            const tdm__rt_pent *pa =
                (const tdm__rt_pent *)(const void *)(m->ents +
                                                     (size_t)(k +
                                                              PARTIAL_AHEAD) *
                                                         m->stride);
            if (pa->key_len == TDM__SEL_FIXED)
                tdm__winop_prefetch_hash(win, tdm__key_fixed_ws_hash(pa->key));
            else if (m->keys)
                tdm__winop_prefetch_key(win, m->keys + pa->key, pa->key_len);
        }
        const tdm__rt_pent *pe =
            (const tdm__rt_pent *)(const void *)(m->ents +
                                                 (size_t)k * m->stride);
        const void *acc = (const char *)pe + sizeof *pe;
        uint64_t hash;
        if (pe->key_len == TDM__SEL_FIXED) {
            tdm__key_fixed_put(pe->key, fixed);
            rec.key = fixed;
            rec.key_len = TDM__KEY_FIXED_LEN;
            hash = tdm__key_fixed_ws_hash(pe->key);
        } else {
            rec.key = m->keys ? m->keys + pe->key : "";
            rec.key_len = pe->key_len;
            hash = ra ? 0 : tdm__ws_hash(rec.key, rec.key_len);
        }
        rec.ts = pe->ts;
        /* numRecordsIn counts the records a partial stands for. */
        t->met.c_in += (int64_t)pe->records;
        tdm_err err;
        if (ra) {
            tdm_agg_ctx actx = {.input = it->ch / t->run->P, .partial = acc};
            err = tdm_winop_push_ctx(win, it->ch, &rec, &actx);
        } else {
            int64_t n;
            memcpy(&n, acc, sizeof n);
            double part[2] = {(double)n, 0};
            err = tdm__winop_push_partial(win, it->ch, &rec, part, hash);
        }
        if (err == TDM_ERR_NOMEM) {
            tdm__rt_op_fail_nomem(t);
        } else if (err != TDM_OK) {
            t->failed = true;
            tdm__rt_fail(t->run, err, "window \"%s\": a partial row: %s",
                         t->op->node->name, tdm_winop_errmsg(win));
        }
    }
}

/* The name of the source feeding channel @p ch. */
static const char *channel_source(const tdm__rt_op_task *t, int ch)
{
    return t->op->inputs[ch / t->run->P]->node->name;
}

/* A watermark of one channel, checked for monotonicity, then merged by
 * the operator's valve (windows: one valve over all channels; joins: a
 * valve per side, channels within a side). */
static void on_watermark(tdm__rt_op_task *t, const tdm__item *it)
{
    int ch = it->ch, P = t->run->P;
    if (it->t < t->ch_wm[ch]) {
        /* A watermark never goes back: ignore it, count it, say so once
         * per channel. */
        t->met.c_regress++;
        if (!t->ch_warned[ch]) {
            t->ch_warned[ch] = true;
            tdm__job_log(t->run->job,
                         "%s %s[%d]: watermark from source %s subtask %d "
                         "went back from %lld to %lld; ignored",
                         t->win ? "window" : "join", t->op->node->name,
                         t->index, channel_source(t, ch), ch % P,
                         (long long)t->ch_wm[ch], (long long)it->t);
        }
        return;
    }
    t->ch_wm[ch] = it->t;
    tdm__rt_pub_set(&t->chp[ch].wm, it->t);
    tdm__op_fb_watermark(t, ch, it->dt);
    /* Windows this watermark fires count their latency from when it
     * left its source (0: an END sent before the run started). */
    t->met.wm_at_us = it->at_us;
    t->met.lat_left = 0;
    tdm_err err = t->win ? tdm_winop_watermark(t->win, ch, it->t)
                         : tdm_joinop_watermark(t->join, ch / P, ch % P, it->t);
    if (err == TDM_ERR_NOMEM)
        tdm__rt_op_fail_nomem(t);
}

/* Handles one item; returns true once every channel has ended.
 *
 * Items of one channel arrive in the order their source subtask sent
 * them; items of different channels interleave as the threads ran.  The
 * operator's valve makes the result independent of that interleaving
 * for everything but lateness (docs/runtime.md, "Determinism"). */
bool tdm__rt_op_handle(tdm__rt_op_task *t, const tdm__item *it)
{
    int P = t->run->P;
    switch (it->kind) {
    case TDM__ITEM_BATCH:
        if (!t->failed)
            push_rows(t, it);
        tdm__sbatch_release(it->b);
        break;
    case TDM__ITEM_WATERMARK:
        if (!t->failed)
            on_watermark(t, it);
        break;
    case TDM__ITEM_STATUS:
        t->ch_idle[it->ch] = it->idle != 0;
        tdm__rt_pub_set(&t->chp[it->ch].idle, it->idle != 0);
        tdm__op_fb_status(t, it->ch, it->idle);
        if (!t->failed) {
            if (t->win)
                tdm_winop_status(t->win, it->ch, it->idle);
            else
                tdm_joinop_status(t->join, it->ch / P, it->ch % P, it->idle);
        }
        break;
    case TDM__ITEM_FENCE:
        if (!t->failed)
            tdm__op_fence_apply(t, it->fence);
        tdm__rt_fence_free(it->fence);
        break;
    case TDM__ITEM_PARTIAL:
        if (!t->failed)
            push_partials(t, it);
        tdm__rt_partials_release(it->fence);
        break;
    case TDM__ITEM_END:
        /* End of a channel is its maximum watermark (a channel that
         * never read anything sends END alone), unless the source
         * stopped without a drain (idle set: on_cancel stop): then open
         * windows stay unwritten, for the next run to complete. */
        if (it->idle)
            t->nodrain = true;
        if (!t->failed && !t->nodrain && t->ch_wm[it->ch] != TDM_TIME_MAX) {
            tdm__item wm = *it;
            wm.t = TDM_TIME_MAX;
            wm.dt = TDM_TIME_MAX;
            on_watermark(t, &wm);
        }
        if (!t->ch_ended[it->ch]) {
            t->ch_ended[it->ch] = true;
            tdm__rt_pub_set(&t->chp[it->ch].ended, 1);
            t->ended++;
        }
        if (t->ended == t->op->n_channels) {
            if (!t->failed && !t->nodrain) {
                tdm_err err =
                    t->win ? tdm_winop_end(t->win) : tdm_joinop_end(t->join);
                if (err == TDM_ERR_NOMEM)
                    tdm__rt_op_fail_nomem(t);
            }
            return true;
        }
        break;
    case TDM__ITEM_BARRIER:
        tdm__rt_op_on_barrier(t, it);
        break;
    default:
        break;
    }
    return false;
}

#define POP_MAX 64

static bool dispatch(tdm__rt_op_task *t, const tdm__item *it);

/* After a checkpoint: handles the items held back on every blocked
 * channel, channel by channel in arrival order, then gives their queue
 * capacity back.  True when the operator finished. */
static bool handle_released(tdm__rt_op_task *t)
{
    bool done = false;
    for (int c = 0; c < t->op->n_channels; c++) {
        int n;
        const tdm__item *held = tdm__opck_unblock(t, c, &n);
        if (!held)
            continue;
        for (int i = 0; i < n; i++)
            if (dispatch(t, &held[i]))
                done = true;
        tdm__opck_unblocked(t, c, n);
    }
    return done;
}

/* Checkpoints: handles one item, unless its channel is blocked by a
 * barrier (task_op_ckpt.c holds it back), and checkpoints once aligned.
 * True when the operator finished. */
static bool dispatch(tdm__rt_op_task *t, const tdm__item *it)
{
    if (tdm__opck_hold(t, it))
        return false;
    bool done = tdm__rt_op_handle(t, it);
    if (tdm__opck_aligned(t)) {
        tdm__opck_checkpoint(t);
        done = handle_released(t) || done;
    }
    return done;
}

/* ---- The loop's hooks ---- */

/* After a group of items, in this order; each does nothing for a subtask
 * without its feature, and none calls back into the loop.
 *
 * Checkpoints: while aligning (t->cka.blocked), the sinks commit up to
 * the checkpoint the coordinator published. */
static void after_group_ckpt(tdm__rt_op_task *t)
{
    if (t->cka.blocked)
        tdm__rt_op_ckpt_poll(t);
}

/* Processing time: the operator reads its clock and fires due timers
 * (not after the last group). */
static void after_group_advance(tdm__rt_op_task *t)
{
    if (t->win && t->op->proc_time && !t->failed && !t->done)
        tdm_winop_advance(t->win);
}

/* Chaining: results fired without a watermark (processing-time or early
 * firings, join pairs) go out with each group. */
static void after_group_chain(tdm__rt_op_task *t)
{
    if (t->emit && !t->failed)
        tdm__rt_emit_flush(t->emit);
}

static void (*const after_group[])(tdm__rt_op_task *) = {
    after_group_ckpt,
    after_group_advance,
    tdm__op_retract_after_group,
    tdm__op_metrics_publish,
    tdm__op_status_after_group,
    after_group_chain,
};

/* At the end, in this order: the final state acknowledged for the
 * checkpoints to come; the chained output's end (after the last results
 * and the final watermark; a stop without drain is passed on as such);
 * the final latency figures; the fence's log line; the last window
 * status answer. */
static void on_end_ckpt(tdm__rt_op_task *t)
{
    if (t->done && t->cka.blocked)
        tdm__rt_op_ckpt_end(t);
}

static void on_end_chain(tdm__rt_op_task *t)
{
    if (t->emit && t->done && !t->failed &&
        !atomic_load_explicit(&t->run->abort, memory_order_relaxed))
        tdm__rt_emit_control(t->emit, TDM__ITEM_END, TDM_TIME_MAX,
                             t->nodrain ? 1 : 0, 0);
}

static void (*const on_end[])(tdm__rt_op_task *) = {
    on_end_ckpt,          on_end_chain,          tdm__op_metrics_on_end,
    tdm__op_fence_on_end, tdm__op_status_on_end,
};

#define N_HOOKS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* While the subtask waits for room downstream (busy.h): a posted
 * question about a window is answered from the operator as it stands,
 * between two of its output rows. */
static void wait_hook(void *ud)
{
    tdm__op_status_after_group(ud);
}

/* The subtask loop: pop items in order, feed the operator, publish
 * counters, until every channel ended or the run aborts.
 *
 * A subtask with processing-time windows or triggers wakes at least
 * every 50 ms to let the operator read its clock and fire due timers;
 * otherwise it sleeps until an item arrives.  Retract mode forgets
 * windows whose cleanup time passed after every group of items. */
void *tdm__rt_op_main(void *arg)
{
    tdm__rt_op_task *t = arg;
    tdm__run *run = t->run;
    tdm__item items[POP_MAX];
    bool done = false;
    /* Its time account; blocked on a full downstream queue, it still
     * answers questions about its windows (op_status.h). */
    t->busy.on_wait = wait_hook;
    t->busy.on_wait_ud = t;
    tdm__busy_attach(&t->busy);
    while (!done) {
        if (atomic_load_explicit(&run->abort, memory_order_relaxed))
            break;
        size_t n =
            tdm__queue_pop(&t->q, items, POP_MAX, t->op->proc_time ? 50 : -1);
        /* One clock reading per group of items (last record time, late
         * samples); the late sample budget is per group. */
        t->now = tdm_clock_now(t->clk);
        t->met.late_budget = 64;
        /* R-LV-8: a live change applies before the group (the test
         * inline, the rest out of line). */
        if (t->live && atomic_load_explicit(
                           &t->live->gen, memory_order_relaxed) != t->live_gen)
            tdm__op_live_apply(t, false);
        if (!t->cka.blocked) {
            for (size_t i = 0; i < n; i++)
                if (tdm__rt_op_handle(t, &items[i]))
                    done = true;
        } else {
            /* Checkpoints: barriers block their channel until aligned. */
            for (size_t i = 0; i < n; i++)
                if (dispatch(t, &items[i]))
                    done = true;
        }
        t->done = done;
        for (int h = 0; h < N_HOOKS(after_group); h++)
            after_group[h](t);
    }
    t->done = done;
    for (int h = 0; h < N_HOOKS(on_end); h++)
        on_end[h](t);
    tdm__busy_attach(NULL);
    tdm__rt_thread_done(run);
    return NULL;
}

/* ---- Setup ---- */

/* The node's trigger: NULL for the assigner's default, a built-in one
 * otherwise, wrapped in a purging trigger when trigger.purging is set
 * (then the default is made explicit, since purging needs an inner
 * trigger). */
static tdm_err make_trigger(const tdm__rt_op *op, tdm_trigger **out, char *msg,
                            size_t n)
{
    return tdm__window_spec_trigger(&op->node->spec.win, out, msg, n);
}

/* The node's assigner (window joins: tumbling or sliding, no offset). */
static tdm_err make_assigner(const tdm_node *nd, bool join, tdm_assigner **out,
                             char *msg, size_t n)
{
    if (join)
        return tdm__join_spec_assigner(&nd->spec.join, out, msg, n);
    return tdm__window_spec_assigner(&nd->spec.win, true, out, msg, n);
}

/* The window subtask's live settings (op_live.c): its node's table
 * entry, whether the operator keeps slices rather than windows (live.c
 * refuses a change then), and the value in force applied over a
 * restored snapshot's. */
static void live_open(tdm__rt_op_task *t)
{
    tdm__live_src *ls = tdm__live_of(t->run->job, t->op->node);
    t->live = ls;
    if (!ls)
        return;
    atomic_store(&ls->sliced, t->win->lean_sliced);
    tdm__op_live_apply(t, true);
}

/* A window subtask's operator: assigner, trigger, aggregate (the built-in
 * count for a single count(), the row aggregate otherwise), one valve
 * channel per upstream source subtask, lateness and late output. */
static tdm_err init_window(tdm__rt_op_task *t, char *msg, size_t n)
{
    tdm__rt_op *op = t->op;
    tdm_assigner *asg = NULL;
    tdm_trigger *trg = NULL;
    tdm_aggregate *agg = NULL;
    tdm_err err = make_assigner(op->node, false, &asg, msg, n);
    if (err == TDM_OK)
        err = make_trigger(op, &trg, msg, n);
    if (err == TDM_OK) {
        if (op->fast_count) {
            err = tdm_aggregate_new(TDM_AGG_COUNT, &agg);
        } else {
            err = tdm__rowagg_new(op->specs, op->n_aggs, op->agg_in_types,
                                  op->n_inputs, op->agg_idx, &t->ra);
            if (err == TDM_OK)
                err = tdm__rowagg_aggregate(t->ra, &agg);
        }
    }
    if (err != TDM_OK) {
        tdm_assigner_destroy(asg);
        tdm_trigger_destroy(trg);
        tdm_aggregate_destroy(agg);
        return err;
    }
    /* tdm_winop_new takes ownership of all three, also on failure. */
    err = tdm_winop_new(asg, trg, agg, op->n_channels, t->clk,
                        tdm__rt_op_win_emit, t, &t->win, msg, n);
    if (err == TDM_OK) {
        t->win->drop_probe = tdm__rt_op_win_dropped;
        t->win->drop_ud = t;
    }
    /* The value in force (live.h; the definition's until a change). */
    tdm_time_ms late = tdm__live_value(t->run->job, op->node,
                                       TDM__LIVE_LATENESS, op->lateness);
    if (err == TDM_OK && late > 0)
        err = tdm_winop_set_allowed_lateness(t->win, late, msg, n);
    if (err == TDM_OK && op->late)
        err = tdm_winop_set_late_output(t->win, 1);
    if (err == TDM_OK && op->mode == RT_RETRACT) {
        err = tdm__op_retract_open(&t->ret);
    }
    return err;
}

/* A join subtask's operator: P channels per side (the sources of a join
 * run at the job's parallelism). */
static tdm_err init_join(tdm__rt_op_task *t, char *msg, size_t n)
{
    const tdm_node *nd = t->op->node;
    tdm_err err;
    const tdm__join_spec *js = &nd->spec.join;
    if (js->type == TDM__JOIN_TYPE_INTERVAL) {
        err = tdm_joinop_new_interval(
            js->lower_ms, js->upper_ms, (int)js->lower_inclusive,
            (int)js->upper_inclusive, t->run->P, t->clk, tdm__rt_op_join_emit,
            t, &t->join, msg, n);
    } else {
        tdm_assigner *asg = NULL;
        err = make_assigner(nd, true, &asg, msg, n);
        if (err == TDM_OK)
            err = tdm_joinop_new_window(asg, t->run->P, t->clk,
                                        tdm__rt_op_join_emit, t, &t->join, msg,
                                        n);
    }
    if (err == TDM_OK) {
        t->join->drop_probe = tdm__rt_op_join_dropped;
        t->join->drop_ud = t;
        if (t->join->kind == TDM__JOIN_WINDOW) {
            const tdm__join_packer pk = {join_pack_size, join_pack_write};
            tdm__join_window_set_packer(t->join, &pk);
        }
    }
    if (err == TDM_OK && t->op->late)
        err = tdm_joinop_set_late_output(t->join, 1);
    if (err == TDM_OK) {
        t->lvals = tdm__calloc((size_t)t->op->inputs[0]->schema->n + 1,
                               sizeof *t->lvals);
        t->rvals = tdm__calloc((size_t)t->op->inputs[1]->schema->n + 1,
                               sizeof *t->rvals);
        if (!t->lvals || !t->rvals)
            err = TDM_ERR_NOMEM;
    }
    return err;
}

/* Creates the queue, clock, operator and output scratch. */
tdm_err tdm__rt_op_task_init(tdm__rt_op_task *t)
{
    tdm__run *run = t->run;
    tdm__rt_op *op = t->op;
    char msg[256] = "";
    atomic_init(&t->wm, TDM_TIME_MIN);
    tdm__op_metrics_init(t);
    t->wm_out = TDM_TIME_MIN;
    tdm_err err = tdm__queue_init(&t->q, op->n_channels, run->qcap, &run->abort,
                                  &run->rec->queue_waits);
    if (err == TDM_OK) {
        t->met.lmx_ok = pthread_mutex_init(&t->met.lmx, NULL) == 0;
        t->ch_idle = tdm__calloc((size_t)op->n_channels, sizeof(bool));
        t->chp = tdm__calloc((size_t)op->n_channels, sizeof *t->chp);
        t->met.late = tdm__calloc(RT_LATE_RING, sizeof *t->met.late);
        if (run->debug) {
            t->met.dbg_wm = tdm__calloc(RT_DBG_RING, sizeof *t->met.dbg_wm);
            t->met.dbg_at = tdm__calloc(RT_DBG_RING, sizeof *t->met.dbg_at);
        }
        if (!t->met.lmx_ok || !t->ch_idle || !t->chp || !t->met.late ||
            (run->debug && (!t->met.dbg_wm || !t->met.dbg_at)))
            err = TDM_ERR_NOMEM;
        for (int i = 0; t->chp && i < op->n_channels; i++) {
            atomic_init(&t->chp[i].wm, TDM_TIME_MIN);
            atomic_init(&t->chp[i].idle, 0);
            atomic_init(&t->chp[i].ended, 0);
        }
    }
    if (err == TDM_OK)
        err = tdm__rt_clock_new(run->job, &t->clk);
    /* Result latency: windows whose results the watermark fires. */
    if (err == TDM_OK && op->kind == TDM_NODE_WINDOW && op->event_time &&
        !op->proc_time)
        err = tdm__hist_init(&t->met.lat);
    if (err == TDM_OK) {
        t->ch_ended = tdm__calloc((size_t)op->n_channels, sizeof(bool));
        t->ch_warned = tdm__calloc((size_t)op->n_channels, sizeof(bool));
        t->ch_wm = tdm__calloc((size_t)op->n_channels, sizeof *t->ch_wm);
        t->cols = tdm__calloc((size_t)op->n_cols, sizeof *t->cols);
        t->vals = tdm__calloc((size_t)op->n_cols, sizeof *t->vals);
        /* Chaining: a window's output row has two more columns. */
        if (op->out)
            t->evals =
                tdm__calloc((size_t)op->out->schema->n + 1, sizeof *t->evals);
        if (!t->ch_ended || !t->ch_warned || !t->ch_wm || !t->cols ||
            !t->vals || (op->out && !t->evals))
            err = TDM_ERR_NOMEM;
    }
    if (err == TDM_OK) {
        for (int i = 0; i < op->n_channels; i++)
            t->ch_wm[i] = TDM_TIME_MIN;
        for (int i = 0; i < op->n_cols; i++) {
            t->cols[i].name = op->col_names[i];
            t->cols[i].type = op->col_types[i];
        }
        err = op->kind == TDM_NODE_WINDOW ? init_window(t, msg, sizeof msg)
                                          : init_join(t, msg, sizeof msg);
    }
    /* Checkpoints: alignment state, and the restored operator. */
    if (err == TDM_OK && run->ck.on)
        err = tdm__opck_init(t);
    if (err == TDM_OK && run->ck.restored)
        err = tdm__rt_ckpt_restore_op(t, msg, sizeof msg);
    /* After the restore: the data watermark starts at the restored one;
     * the lateness in force replaces the snapshot's, and whether the
     * operator can change it at all is said once (R-LV-2). */
    if (err == TDM_OK)
        err = tdm__op_fb_open(t);
    if (err == TDM_OK && t->win)
        live_open(t);
    if (err != TDM_OK)
        tdm__rt_fail(run, err, "%s \"%s\": %s",
                     op->kind == TDM_NODE_JOIN ? "join" : "window",
                     op->node->name, msg[0] ? msg : tdm_strerror(err));
    return err;
}

/* Frees an operator subtask (a half-built one too). */
void tdm__rt_op_task_fini(tdm__rt_op_task *t)
{
    /* Fence messages still queued (the run aborted): ours to free. */
    for (size_t i = 0; t->q.ring && i < t->q.count; i++)
        tdm__rt_op_item_release(&t->q.ring[(t->q.head + i) % t->q.cap]);
    tdm__opck_fini(t);
    tdm__rt_ckpt_slot_free(&t->ck);
    tdm__op_fb_close(&t->fb);
    tdm_winop_destroy(t->win);
    tdm_joinop_destroy(t->join);
    tdm__rowagg_destroy(t->ra);
    tdm_clock_destroy(t->clk);
    tdm__queue_fini(&t->q);
    tdm__op_retract_free(&t->ret);
    tdm__free(t->kb.p);
    tdm__free(t->pk.p);
    tdm__free(t->uk.p);
    tdm__op_fence_free(&t->fence);
    tdm__free(t->ch_ended);
    tdm__free(t->ch_warned);
    tdm__free(t->ch_wm);
    tdm__free(t->cols);
    tdm__free(t->vals);
    tdm__free(t->evals);
    tdm__free(t->lvals);
    tdm__free(t->rvals);
    tdm__free(t->ch_idle);
    tdm__free(t->chp);
    tdm__op_metrics_free(&t->met);
    memset(t, 0, sizeof *t);
}
