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
#include "runtime/task_op.h"
#include "state/state.h"
#include "window/join.h"
#include "window/win.h"

/* ---- Key fence (fence.c) ---- */

/* A FENCE item: the keys of a split revoked from this member.  Each
 * key's epoch moves up by one: its records from now on build a new
 * identity (fenced_key), and results of older identities are not
 * written (fence_result, task_op_emit.c). */
static void apply_fence(tdm__rt_op_task *t, const tdm__rt_fence *f)
{
    size_t off = 0;
    for (uint32_t i = 0; i < f->n && !t->failed; i++) {
        uint32_t len;
        memcpy(&len, f->data + off, sizeof len);
        const char *key = f->data + off + sizeof len;
        off += sizeof len + len;
        uint64_t h = tdm__keys_hash(key, len);
        int64_t *e = tdm__rt_keyset_find(&t->fence, key, len, h);
        int64_t next = e ? *e + 1 : 1;
        if (tdm__rt_keyset_put_max(&t->fence, key, len, h, next) != TDM_OK)
            tdm__rt_op_fail_nomem(t);
    }
}

/* The bytes a record of @p key goes to the operator with: the key
 * itself, or for a fenced key the key, its epoch and RT_FENCE_MAGIC (in
 * t->fkb).  NULL on OOM. */
static const char *fenced_key(tdm__rt_op_task *t, const char *key, size_t *len)
{
    const int64_t *e =
        tdm__rt_keyset_find(&t->fence, key, *len, tdm__keys_hash(key, *len));
    if (!e)
        return key;
    size_t need = *len + RT_FENCE_SUFFIX;
    if (need > t->fkb.cap) {
        char *p = tdm__realloc(t->fkb.p, need);
        if (!p)
            return NULL;
        t->fkb.p = p;
        t->fkb.cap = need;
    }
    uint32_t epoch = (uint32_t)*e;
    memmove(t->fkb.p, key, *len);
    memcpy(t->fkb.p + *len, &epoch, sizeof epoch);
    memcpy(t->fkb.p + *len + sizeof epoch, RT_FENCE_MAGIC, 8);
    *len = need;
    return t->fkb.p;
}

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
    /* The fence changes only between items (apply_fence). */
    const bool fenced = t->fence.n != 0;
    /* Only a single string key can be bytes in the batch's arena. */
    const bool pf =
        op->n_key == 1 && b->schema->fields[kidx[0]].type == TDM_TYPE_STRING;
    const uint32_t n = it->n;
    t->c_in += n;
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
        if (__builtin_expect(fenced, 0) && !(key = fenced_key(t, key, &klen))) {
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
        t->c_in += (int64_t)pe->records;
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
        t->c_regress++;
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
    /* Windows this watermark fires count their latency from when it
     * left its source (0: an END sent before the run started). */
    t->wm_at_us = it->at_us;
    t->lat_left = 0;
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
        if (!t->failed) {
            if (t->win)
                tdm_winop_status(t->win, it->ch, it->idle);
            else
                tdm_joinop_status(t->join, it->ch / P, it->ch % P, it->idle);
        }
        break;
    case TDM__ITEM_FENCE:
        if (!t->failed)
            apply_fence(t, it->fence);
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

/* Publishes the latency quantiles (a scan of the histogram: at most
 * once a second, and at the end). */
static void publish_latency(tdm__rt_op_task *t, bool force)
{
    if (!t->lat.b || t->lat.n == 0)
        return;
    if (!force && t->now - t->lat_pub < 1000)
        return;
    t->lat_pub = t->now;
    tdm__rt_pub_set(&t->m.lat_p50, tdm__hist_quantile(&t->lat, 0.50));
    tdm__rt_pub_set(&t->m.lat_p99, tdm__hist_quantile(&t->lat, 0.99));
}

/* Counters the operator keeps itself, published as deltas: the job's
 * counters are sums over subtasks, added to without locks. */
static void publish(tdm__rt_op_task *t)
{
    int64_t d = t->win ? tdm_winop_late_dropped(t->win)
                       : tdm_joinop_late_dropped(t->join);
    tdm__rt_count(t->run, TDM_STAT_LATE_DROPPED, d - t->late_dropped_seen);
    t->late_dropped_seen = d;
    /* The job's counters take this group's deltas; the subtask's
     * metrics its totals (single writer: plain stores). */
    tdm__rt_count(t->run, TDM_STAT_RECORDS_OUT, t->c_out - t->j_out);
    tdm__rt_count(t->run, TDM_STAT_LATE_SIDE_OUTPUT,
                  t->c_late_side - t->j_late_side);
    tdm__rt_count(t->run, TDM_STAT_LATE_REFIRES,
                  t->c_late_panes - t->j_late_panes);
    tdm__rt_count(t->run, TDM_STAT_WM_REGRESSIONS, t->c_regress - t->j_regress);
    t->j_out = t->c_out;
    t->j_late_side = t->c_late_side;
    t->j_late_panes = t->c_late_panes;
    t->j_regress = t->c_regress;
    tdm__rt_op_metrics *m = &t->m;
    if (t->c_in != tdm__rt_pub_get(&m->in)) {
        tdm__rt_pub_set(&m->in, t->c_in);
        tdm__rt_pub_set(&m->last_at, t->now);
    }
    tdm__rt_pub_set(&m->out, t->c_out);
    tdm__rt_pub_set(&m->late_side, t->c_late_side);
    tdm__rt_pub_set(&m->late_drop, d);
    tdm__rt_pub_set(&m->panes, t->c_panes);
    tdm__rt_pub_set(&m->late_panes, t->c_late_panes);
    tdm__rt_pub_set(&m->regress, t->c_regress);
    if (t->win) {
        tdm__rt_pub_set(&m->wm_in, t->win->wm);
        tdm__rt_pub_set(&m->keys, tdm__winop_keys(t->win));
        tdm__rt_pub_set(&m->windows, tdm_winop_live_windows(t->win));
        tdm__rt_pub_set(&m->bytes, tdm_winop_state_bytes(t->win));
        publish_latency(t, false);
    } else {
        /* The join's own accounting (join.h): for the window join the
         * record log chunks, which the key table and kv stores miss. */
        const tdm_joinop *j = t->join;
        tdm__rt_pub_set(&m->wm_in, j->wm);
        tdm__rt_pub_set(&m->keys, tdm__joinop_state_keys(j));
        tdm__rt_pub_set(&m->windows, tdm_joinop_buffered(j));
        tdm__rt_pub_set(&m->bytes, tdm__joinop_state_bytes(j));
    }
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

/* ---- Window status (tdm_job_window_status): the subtask's side ---- */

/* Answers the posted question on the subtask's thread: the operator's
 * state of the window, the firing memory, the channels. */
void tdm__rt_status_serve(tdm__rt_op_task *t)
{
    tdm_job *job = t->run->job;
    tdm__rt_wstat *st = t->ws;
    pthread_mutex_lock(&job->mmu);
    atomic_store_explicit(&st->req, 0, memory_order_relaxed);
    if (st->asked && !st->answered) {
        tdm_window_status *a = &st->ans;
        const tdm__rt_wvertex *v = NULL;
        for (int i = 0; job->warea && i < job->warea->n; i++)
            if (job->warea->v[i].st <= st &&
                st < job->warea->v[i].st + job->warea->P)
                v = &job->warea->v[i];
        memset(a, 0, sizeof *a);
        a->subtask = t->index;
        a->watermark = t->win->wm;
        if (v)
            tdm__met_window_times(v, st->end, &a->max_ts, &a->cleanup);
        tdm__winop_probe(t->win, st->key, st->key_len, st->start, st->end,
                         &a->has_state, &a->elements);
        if (!a->has_state)
            a->elements = 0;
        tdm_time_ms fwm = TDM_TIME_MIN;
        a->fired = tdm__rt_fired_find(
            &st->fired,
            tdm__rt_fired_fp(st->key, st->key_len, st->start, st->end), &fwm);
        a->fired_wm = a->fired ? fwm : TDM_TIME_MIN;
        a->holding_channel = tdm__rt_holding_channel(t);
        a->holding_wm = a->holding_channel >= 0 ? t->ch_wm[a->holding_channel]
                                                : TDM_TIME_MIN;
        for (int ch = 0; ch < t->op->n_channels; ch++)
            a->idle_channels += t->ch_idle[ch] && !t->ch_ended[ch];
        a->running = 1;
        st->answered = true;
        pthread_cond_broadcast(&st->cv);
    }
    pthread_mutex_unlock(&job->mmu);
}

/* The subtask stops: a question already posted is answered from the
 * operator (still there), later ones from what it leaves. */
void tdm__rt_status_close(tdm__rt_op_task *t)
{
    tdm_job *job = t->run->job;
    tdm__rt_status_serve(t);
    pthread_mutex_lock(&job->mmu);
    t->ws->final_wm = t->win->wm;
    t->ws->ended = t->win->ended;
    t->ws->done = true;
    pthread_cond_broadcast(&t->ws->cv);
    pthread_mutex_unlock(&job->mmu);
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
    while (!done) {
        if (atomic_load_explicit(&run->abort, memory_order_relaxed))
            break;
        size_t n =
            tdm__queue_pop(&t->q, items, POP_MAX, t->op->proc_time ? 50 : -1);
        /* One clock reading per group of items (last record time, late
         * samples); the late sample budget is per group. */
        t->now = tdm_clock_now(t->clk);
        t->late_budget = 64;
        if (!t->ck_blocked) {
            for (size_t i = 0; i < n; i++)
                if (tdm__rt_op_handle(t, &items[i]))
                    done = true;
        } else {
            /* Checkpoints: barriers block their channel until aligned. */
            for (size_t i = 0; i < n; i++)
                if (dispatch(t, &items[i]))
                    done = true;
            tdm__rt_op_ckpt_poll(t);
        }
        if (t->win && t->op->proc_time && !t->failed && !done)
            tdm_winop_advance(t->win);
        if (t->rtimers && !t->failed)
            tdm__rt_op_retract_cleanup(
                t, t->op->event_time ? tdm_winop_current_watermark(t->win)
                                     : tdm_clock_now(t->clk));
        publish(t);
        /* A question about a window (tdm_job_window_status) is answered
         * between two groups of items. */
        if (t->ws && atomic_load_explicit(&t->ws->req, memory_order_relaxed))
            tdm__rt_status_serve(t);
        /* Chaining: results fired without a watermark (processing-time
         * or early firings, join pairs) go out with each group. */
        if (t->emit && !t->failed)
            tdm__rt_emit_flush(t->emit);
    }
    if (done && t->ck_blocked)
        tdm__rt_op_ckpt_end(t);
    /* Chaining: end of input after the last results and the final
     * watermark; a stop without drain is passed on as such. */
    if (t->emit && done && !t->failed &&
        !atomic_load_explicit(&run->abort, memory_order_relaxed))
        tdm__rt_emit_control(t->emit, TDM__ITEM_END, TDM_TIME_MAX,
                             t->nodrain ? 1 : 0, 0);
    if (t->lat.b && t->lat.n) {
        publish_latency(t, true);
        tdm__job_add_latency(run->job, &t->lat);
    }
    if (t->c_fenced)
        tdm__job_log(run->job,
                     "window %s[%d]: %lld result(s) of fenced keys "
                     "not written (their partitions' new owners write "
                     "them)",
                     t->op->node->name, t->index, (long long)t->c_fenced);
    if (t->ws)
        tdm__rt_status_close(t);
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
    if (err == TDM_OK && op->lateness > 0)
        err = tdm_winop_set_allowed_lateness(t->win, op->lateness, msg, n);
    if (err == TDM_OK && op->late)
        err = tdm_winop_set_late_output(t->win, 1);
    if (err == TDM_OK && op->mode == RT_RETRACT) {
        t->rkeys = tdm__keys_new();
        t->rkv = tdm__kv_new(sizeof(tdm__rt_op_rslot));
        t->rtimers = tdm__timers_new();
        if (!t->rkeys || !t->rkv || !t->rtimers)
            err = TDM_ERR_NOMEM;
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

/* Zeroes the published metrics (watermarks at "none"). */
static void init_metrics(tdm__rt_op_task *t)
{
    tdm__rt_op_metrics *m = &t->m;
    atomic_init(&m->in, 0);
    atomic_init(&m->out, 0);
    atomic_init(&m->late_side, 0);
    atomic_init(&m->late_drop, 0);
    atomic_init(&m->panes, 0);
    atomic_init(&m->late_panes, 0);
    atomic_init(&m->regress, 0);
    atomic_init(&m->wm_in, TDM_TIME_MIN);
    atomic_init(&m->idle, 0);
    atomic_init(&m->last_at, TDM_TIME_MIN);
    atomic_init(&m->keys, 0);
    atomic_init(&m->windows, 0);
    atomic_init(&m->bytes, 0);
    atomic_init(&m->lat_p50, -1);
    atomic_init(&m->lat_p99, -1);
    t->wm_out = TDM_TIME_MIN;
}

/* Creates the queue, clock, operator and output scratch. */
tdm_err tdm__rt_op_task_init(tdm__rt_op_task *t)
{
    tdm__run *run = t->run;
    tdm__rt_op *op = t->op;
    char msg[256] = "";
    atomic_init(&t->wm, TDM_TIME_MIN);
    init_metrics(t);
    tdm_err err = tdm__queue_init(&t->q, op->n_channels, run->qcap, &run->abort,
                                  &run->job->queue_waits);
    if (err == TDM_OK) {
        t->lmx_ok = pthread_mutex_init(&t->lmx, NULL) == 0;
        t->ch_idle = tdm__calloc((size_t)op->n_channels, sizeof(bool));
        t->chp = tdm__calloc((size_t)op->n_channels, sizeof *t->chp);
        t->late = tdm__calloc(RT_LATE_RING, sizeof *t->late);
        if (run->debug) {
            t->dbg_wm = tdm__calloc(RT_DBG_RING, sizeof *t->dbg_wm);
            t->dbg_at = tdm__calloc(RT_DBG_RING, sizeof *t->dbg_at);
        }
        if (!t->lmx_ok || !t->ch_idle || !t->chp || !t->late ||
            (run->debug && (!t->dbg_wm || !t->dbg_at)))
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
        err = tdm__hist_init(&t->lat);
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
    if (err == TDM_OK && run->ck.on) {
        t->ck_blocked = tdm__calloc((size_t)op->n_channels, sizeof(bool));
        t->ck_stash = tdm__calloc((size_t)op->n_channels, sizeof *t->ck_stash);
        if (!t->ck_blocked || !t->ck_stash)
            err = TDM_ERR_NOMEM;
    }
    if (err == TDM_OK && run->ck.restored)
        err = tdm__rt_ckpt_restore_op(t, msg, sizeof msg);
    if (err != TDM_OK)
        tdm__rt_fail(run, err, "%s \"%s\": %s",
                     op->kind == TDM_NODE_JOIN ? "join" : "window",
                     op->node->name, msg[0] ? msg : tdm_strerror(err));
    return err;
}

/* Frees the remembered result of one (key, window). */
static void free_rslot(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    (void)ud;
    (void)key;
    (void)ns;
    tdm__free(((tdm__rt_op_rslot *)slot)->blob);
}

/* Frees an operator subtask (a half-built one too). */
void tdm__rt_op_task_fini(tdm__rt_op_task *t)
{
    /* Fence messages still queued (the run aborted): ours to free. */
    for (size_t i = 0; t->q.ring && i < t->q.count; i++) {
        tdm__item *it = &t->q.ring[(t->q.head + i) % t->q.cap];
        if (it->kind == TDM__ITEM_FENCE)
            tdm__rt_fence_free(it->fence);
        else if (it->kind == TDM__ITEM_PARTIAL)
            tdm__rt_partials_free(it->fence);
    }
    /* Items held back by an alignment when the run aborted. */
    for (int c = 0; t->ck_stash && c < t->op->n_channels; c++) {
        for (int i = 0; i < t->ck_stash[c].n; i++) {
            tdm__item *it = &t->ck_stash[c].it[i];
            if (it->kind == TDM__ITEM_FENCE)
                tdm__rt_fence_free(it->fence);
            else if (it->kind == TDM__ITEM_PARTIAL)
                tdm__rt_partials_free(it->fence);
        }
        tdm__free(t->ck_stash[c].it);
    }
    tdm__free(t->ck_stash);
    tdm__free(t->ck_blocked);
    tdm__rt_ckpt_slot_free(&t->ck);
    tdm_winop_destroy(t->win);
    tdm_joinop_destroy(t->join);
    tdm__rowagg_destroy(t->ra);
    tdm_clock_destroy(t->clk);
    tdm__queue_fini(&t->q);
    if (t->rkv)
        tdm__kv_each(t->rkv, free_rslot, NULL);
    tdm__kv_destroy(t->rkv);
    tdm__keys_destroy(t->rkeys);
    tdm__timers_destroy(t->rtimers);
    tdm__free(t->kb.p);
    tdm__free(t->pk.p);
    tdm__free(t->uk.p);
    tdm__free(t->fkb.p);
    tdm__rt_keyset_free(&t->fence);
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
    tdm__free(t->late);
    tdm__free(t->dbg_wm);
    tdm__free(t->dbg_at);
    tdm__hist_fini(&t->lat);
    if (t->lmx_ok)
        pthread_mutex_destroy(&t->lmx);
    memset(t, 0, sizeof *t);
}
