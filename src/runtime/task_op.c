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
 */
#include <stdio.h>
#include <string.h>

#include "runtime/run.h"
#include "state/state.h"

/* What retract mode remembers of a window's last emitted result. */
typedef struct rslot {
    void *blob; /* aggregate part: int64 count, or packed rowagg bytes */
    size_t len;
} rslot;

/* ---- Writing ---- */

/* A subtask that failed stops feeding its operator and writing; it goes
 * on draining its queue (releasing batches) until the abort reaches its
 * loop, so producers are never left waiting on it. */
static void op_fail_io(rt_op_task *t, const rt_sink *s, const char *what)
{
    t->failed = true;
    rt_fail(t->run, TDM_ERR_IO, "sink \"%s\": writing %s to %s failed",
            s->node->name, what,
            s->conf.path && *s->conf.path ? s->conf.path : "stdout");
}

/* Out of memory in the operator or the output path. */
static void op_fail_nomem(rt_op_task *t)
{
    t->failed = true;
    rt_fail(t->run, TDM_ERR_NOMEM, "%s \"%s\": out of memory",
            t->op->kind == TDM_NODE_JOIN ? "join" : "window",
            t->op->node->name);
}

/* Writes a late record to the late output. */
static void write_late(rt_op_task *t, const tdm__row *row)
{
    rt_sink *s = t->op->late;
    if (!s || t->failed)
        return;
    if (s->vt->write_row(s->obj, row) != TDM_OK) {
        op_fail_io(t, s, "a late record");
        return;
    }
    rt_count(t->run, TDM_STAT_LATE_SIDE_OUTPUT, 1);
}

/* Fills the aggregate columns from a stored or emitted aggregate part.
 * With the built-in count the part is the count itself (an int64, or the
 * event's double value); otherwise it is the row aggregate's packed
 * values. */
static bool fill_aggs(rt_op_task *t, const void *bytes, size_t len,
                      double value)
{
    rt_op *op = t->op;
    tdm__val *v = t->vals + op->n_key;
    if (op->fast_count) {
        memset(v, 0, sizeof *v);
        if (bytes && len == sizeof(int64_t))
            memcpy(&v->u.i, bytes, sizeof(int64_t));
        else
            v->u.i = (int64_t)value;
        return true;
    }
    return tdm__rowagg_unpack(bytes, len, op->n_aggs,
                              op->col_types + op->n_key, v);
}

/* Points the out row at the subtask's column scratch (names and types
 * fixed at setup, values filled by the caller) and writes it. */
static void write_out(rt_op_task *t, tdm__out_row *out)
{
    rt_op *op = t->op;
    for (int i = 0; i < op->n_cols; i++)
        t->cols[i].v = t->vals[i];
    out->cols = t->cols;
    out->n_cols = op->n_cols;
    if (op->sink->vt->write_result(op->sink->obj, out) != TDM_OK) {
        op_fail_io(t, op->sink, "a result");
        return;
    }
    rt_count(t->run, TDM_STAT_RECORDS_OUT, 1);
}

/* Retract mode: emits a retraction of the previous result of this key
 * and window (if it is an update), then remembers the new one.
 *
 * The memory is keyed state of its own: interned key bytes, one slot per
 * (key, window) holding a copy of the aggregate part, and a timer at the
 * window's cleanup time (end - 1 + allowed lateness in event time, end - 1
 * in processing time) after which the operator accepts nothing more for
 * that window, so no update - and no retraction - can follow.  A pane
 * that is not an update (the first, or one after a purge) retracts
 * nothing: downstream sees it as a fresh insert. */
static void retract_and_remember(rt_op_task *t, const tdm_event *ev,
                                 tdm__out_row *out, const void *agg,
                                 size_t agg_len)
{
    rt_op *op = t->op;
    tdm__ns ns = { ev->has_window ? ev->win_start : TDM_TIME_MIN,
                   ev->has_window ? ev->win_end : TDM_TIME_MAX };
    uint32_t kid;
    if (tdm__keys_intern(t->rkeys, ev->key, ev->key_len, &kid) != TDM_OK) {
        op_fail_nomem(t);
        return;
    }
    bool created;
    rslot *s = tdm__kv_upsert(t->rkv, kid, ns, &created);
    if (!s) {
        tdm__keys_unref(t->rkeys, kid);
        op_fail_nomem(t);
        return;
    }
    if (!created) {
        tdm__keys_unref(t->rkeys, kid); /* the slot holds one already */
        if (ev->is_update && s->blob) {
            tdm__out_row r = *out;
            r.change = TDM__CHANGE_RETRACT;
            if (fill_aggs(t, s->blob, s->len, 0))
                write_out(t, &r);
        }
    } else if (ev->has_window) {
        /* Forget the window when the operator does (cleanup time). */
        tdm_time_ms at = op->event_time
                             ? tdm__time_add_sat(ev->win_end - 1,
                                                 op->lateness)
                             : ev->win_end - 1;
        if (tdm__timers_add(t->rtimers, at, kid, ns) != TDM_OK) {
            op_fail_nomem(t);
            return;
        }
    }
    void *copy = tdm__memdup(agg, agg_len ? agg_len : 1);
    if (!copy) {
        op_fail_nomem(t);
        return;
    }
    tdm__free(s->blob);
    s->blob = copy;
    s->len = agg_len;
    if (!fill_aggs(t, agg, agg_len, 0))
        return;
    out->change = TDM__CHANGE_INSERT;
    write_out(t, out);
}

/* Drops what retract mode remembers of windows cleaned up by now. */
static void retract_cleanup(rt_op_task *t, tdm_time_ms now)
{
    tdm__timer tm;
    while (tdm__timers_pop(t->rtimers, now, &tm)) {
        rslot *s = tdm__kv_get(t->rkv, tm.key, tm.ns);
        if (s) {
            tdm__free(s->blob);
            tdm__kv_remove(t->rkv, tm.key, tm.ns);
            tdm__keys_unref(t->rkeys, tm.key);
        }
    }
}

/* A window result: key columns (decoded from the key bytes), aggregate
 * columns, window and pane information, written per output mode:
 *   append   every pane as INSERT;
 *   upsert   INSERT for a first pane, UPDATE for an update, both with the
 *            upsert key (key bytes + start + end) a table sink replaces by;
 *   retract  RETRACT of the previous values before each update, then
 *            INSERT (retract_and_remember). */
static void write_window_result(rt_op_task *t, const tdm_event *ev)
{
    rt_op *op = t->op;
    if (!tdm__key_decode(ev->key, ev->key_len, op->col_types, op->n_key,
                         t->vals)) {
        op_fail_nomem(t); /* cannot happen: we encoded the key */
        return;
    }
    int64_t count = (int64_t)ev->value;
    const void *agg = ev->bytes;
    size_t agg_len = ev->bytes_len;
    if (op->fast_count) {
        agg = &count;
        agg_len = sizeof count;
    } else if (!agg || (t->ra && tdm__rowagg_take_oom(t->ra))) {
        op_fail_nomem(t);
        return;
    }
    tdm__out_row out = {
        .has_window = ev->has_window,
        .win_start = ev->win_start,
        .win_end = ev->win_end,
        .timing = ev->pane_timing,
        .pane_index = ev->pane_index,
        .is_update = ev->is_update != 0,
        .change = TDM__CHANGE_INSERT,
    };
    if (ev->pane_timing == TDM_PANE_LATE)
        rt_count(t->run, TDM_STAT_LATE_REFIRES, 1);
    if (op->mode != RT_APPEND) {
        /* Identity of the row: key bytes, window start and end. */
        t->uk.len = 0;
        size_t need = ev->key_len + 16;
        if (need > t->uk.cap) {
            char *p = tdm__realloc(t->uk.p, need);
            if (!p) {
                op_fail_nomem(t);
                return;
            }
            t->uk.p = p;
            t->uk.cap = need;
        }
        if (ev->key_len)
            memcpy(t->uk.p, ev->key, ev->key_len);
        tdm_time_ms se[2] = { ev->has_window ? ev->win_start : TDM_TIME_MIN,
                              ev->has_window ? ev->win_end : TDM_TIME_MAX };
        memcpy(t->uk.p + ev->key_len, se, 16);
        out.upsert_key = t->uk.p;
        out.upsert_key_len = need;
    }
    if (op->mode == RT_RETRACT) {
        retract_and_remember(t, ev, &out, agg, agg_len);
        return;
    }
    if (op->mode == RT_UPSERT)
        out.change = ev->is_update ? TDM__CHANGE_UPDATE : TDM__CHANGE_INSERT;
    if (!fill_aggs(t, agg, agg_len, ev->value)) {
        op_fail_nomem(t);
        return;
    }
    write_out(t, &out);
}

/* The window operator's output.  LATE events carry the row itself as
 * the record's payload (the push that caused them is still on the
 * stack), so the late output writes it unchanged. */
static void win_emit(void *opaque, const tdm_event *ev)
{
    rt_op_task *t = opaque;
    if (t->failed)
        return;
    switch (ev->type) {
    case TDM_EVENT_RESULT:
        write_window_result(t, ev);
        break;
    case TDM_EVENT_LATE:
        write_late(t, ev->rec[0]->payload);
        break;
    case TDM_EVENT_WATERMARK:
        atomic_store_explicit(&t->wm, ev->time, memory_order_relaxed);
        break;
    default:
        break;
    }
}

/* A joined pair: left fields, right fields, then the pair's ts. */
static void write_pair(rt_op_task *t, const tdm_event *ev)
{
    rt_op *op = t->op;
    const tdm__schema *ls = op->inputs[0]->schema;
    const tdm__schema *rs = op->inputs[1]->schema;
    tdm__row l, r;
    tdm__row_unpack(ev->rec[0]->payload, ev->rec[0]->payload_len, ls,
                    t->lvals, &l);
    tdm__row_unpack(ev->rec[1]->payload, ev->rec[1]->payload_len, rs,
                    t->rvals, &r);
    memcpy(t->vals, t->lvals, (size_t)ls->n * sizeof *t->vals);
    memcpy(t->vals + ls->n, t->rvals, (size_t)rs->n * sizeof *t->vals);
    tdm__val *ts = &t->vals[ls->n + rs->n];
    memset(ts, 0, sizeof *ts);
    ts->u.i = ev->time;
    tdm__out_row out = {
        .has_window = ev->has_window,
        .win_start = ev->win_start,
        .win_end = ev->win_end,
        .timing = TDM_PANE_ON_TIME,
        .change = TDM__CHANGE_INSERT,
    };
    write_out(t, &out);
}

/* The join operator's output.  Its records are copies the operator kept,
 * so rows are unpacked from their payload bytes. */
static void join_emit(void *opaque, const tdm_event *ev)
{
    rt_op_task *t = opaque;
    if (t->failed)
        return;
    switch (ev->type) {
    case TDM_EVENT_JOIN:
        write_pair(t, ev);
        break;
    case TDM_EVENT_LATE: {
        int side = ev->side == TDM_SIDE_RIGHT ? 1 : 0;
        const tdm__schema *s = t->op->inputs[side]->schema;
        tdm__row row;
        tdm__row_unpack(ev->rec[0]->payload, ev->rec[0]->payload_len, s,
                        side ? t->rvals : t->lvals, &row);
        write_late(t, &row);
        break;
    }
    case TDM_EVENT_WATERMARK:
        atomic_store_explicit(&t->wm, ev->time, memory_order_relaxed);
        break;
    default:
        break;
    }
}

/* ---- Input ---- */

/* How many rows of a segment ahead the key bytes are prefetched. */
#define PF_KEY 8

/* Pushes the rows of one batch segment into the operator.  The channel
 * says which input (union position or join side) and which source
 * subtask they come from.  The selection carries each row's timestamp
 * and, for a string key, its bytes (tdm__sel), so a count touches only
 * the selection and the key bytes of rows written on another core; other
 * keys are rebuilt here from the same fields the source hashed.  The
 * row itself rides along as the record payload (windows: row aggregates
 * and the late output read it) or packed into it (joins, which keep
 * records beyond the call). */
static void push_rows(rt_op_task *t, const tdm__item *it)
{
    rt_op *op = t->op;
    int P = t->run->P;
    int input = it->ch / P;
    const int *kidx = op->in_key_idx[input];
    const tdm__batch *b = it->b->b;
    if (t->ra)
        tdm__rowagg_set_input(t->ra, input);
    for (uint32_t k = 0; k < it->n && !t->failed; k++) {
        const tdm__sel *sl = &it->sel[k];
        const tdm__row *row = &b->rows[sl->row];
        /* The first touch of the key bytes is a transfer from the
         * source's core: start it a few rows ahead. */
        if (k + PF_KEY < it->n && sl[PF_KEY].key)
            __builtin_prefetch(sl[PF_KEY].key);
        const char *key = sl->key;
        size_t klen = sl->key_len;
        if (!key && tdm__key_get(row, kidx, op->n_key, &t->kb, &key,
                                 &klen) != TDM_OK) {
            op_fail_nomem(t);
            break;
        }
        tdm_record rec = { .key = key, .key_len = klen, .ts = sl->ts };
        tdm_err err;
        if (t->win) {
            rec.payload = row;
            rec.payload_len = sizeof *row;
            err = tdm_winop_push(t->win, it->ch, &rec);
            if (t->ra && tdm__rowagg_take_oom(t->ra))
                err = TDM_ERR_NOMEM;
        } else {
            if (tdm__row_pack(row, &t->pk) != TDM_OK) {
                op_fail_nomem(t);
                break;
            }
            rec.payload = t->pk.p;
            rec.payload_len = t->pk.len;
            err = tdm_joinop_push(t->join, input, it->ch % P, &rec);
        }
        if (err == TDM_ERR_NOMEM)
            op_fail_nomem(t);
        /* NO_TIMESTAMP is counted by the operator and skipped. */
    }
}

/* The name of the source feeding channel @p ch. */
static const char *channel_source(const rt_op_task *t, int ch)
{
    return t->op->inputs[ch / t->run->P]->node->name;
}

/* A watermark of one channel, checked for monotonicity, then merged by
 * the operator's valve (windows: one valve over all channels; joins: a
 * valve per side, channels within a side). */
static void on_watermark(rt_op_task *t, const tdm__item *it)
{
    int ch = it->ch, P = t->run->P;
    if (it->t < t->ch_wm[ch]) {
        /* A watermark never goes back: ignore it, count it, say so once
         * per channel. */
        rt_count(t->run, TDM_STAT_WM_REGRESSIONS, 1);
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
    tdm_err err = t->win ? tdm_winop_watermark(t->win, ch, it->t)
                         : tdm_joinop_watermark(t->join, ch / P, ch % P,
                                                it->t);
    if (err == TDM_ERR_NOMEM)
        op_fail_nomem(t);
}

/* Handles one item; returns true once every channel has ended.
 *
 * Items of one channel arrive in the order their source subtask sent
 * them; items of different channels interleave as the threads ran.  The
 * operator's valve makes the result independent of that interleaving
 * for everything but lateness (docs/runtime.md, "Determinism"). */
static bool handle(rt_op_task *t, const tdm__item *it)
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
        if (!t->failed) {
            if (t->win)
                tdm_winop_status(t->win, it->ch, it->idle);
            else
                tdm_joinop_status(t->join, it->ch / P, it->ch % P,
                                  it->idle);
        }
        break;
    case TDM__ITEM_END:
        /* End of a channel is its maximum watermark (a channel that
         * never read anything sends END alone). */
        if (!t->failed && t->ch_wm[it->ch] != TDM_TIME_MAX) {
            tdm__item wm = *it;
            wm.t = TDM_TIME_MAX;
            on_watermark(t, &wm);
        }
        if (!t->ch_ended[it->ch]) {
            t->ch_ended[it->ch] = true;
            t->ended++;
        }
        if (t->ended == t->op->n_channels) {
            if (!t->failed) {
                tdm_err err = t->win ? tdm_winop_end(t->win)
                                     : tdm_joinop_end(t->join);
                if (err == TDM_ERR_NOMEM)
                    op_fail_nomem(t);
            }
            return true;
        }
        break;
    default:
        break;
    }
    return false;
}

/* Counters the operator keeps itself, published as deltas: the job's
 * counters are sums over subtasks, added to without locks. */
static void publish(rt_op_task *t)
{
    int64_t d = t->win ? tdm_winop_late_dropped(t->win)
                       : tdm_joinop_late_dropped(t->join);
    rt_count(t->run, TDM_STAT_LATE_DROPPED, d - t->late_dropped_seen);
    t->late_dropped_seen = d;
}

#define POP_MAX 64

/* The subtask loop: pop items in order, feed the operator, publish
 * counters, until every channel ended or the run aborts.
 *
 * A subtask with processing-time windows or triggers wakes at least
 * every 50 ms to let the operator read its clock and fire due timers;
 * otherwise it sleeps until an item arrives.  Retract mode forgets
 * windows whose cleanup time passed after every group of items. */
void *rt_op_main(void *arg)
{
    rt_op_task *t = arg;
    tdm__run *run = t->run;
    tdm__item items[POP_MAX];
    bool done = false;
    while (!done) {
        if (atomic_load_explicit(&run->abort, memory_order_relaxed))
            break;
        size_t n = tdm__queue_pop(&t->q, items, POP_MAX,
                                  t->op->proc_time ? 50 : -1);
        for (size_t i = 0; i < n; i++)
            if (handle(t, &items[i]))
                done = true;
        if (t->win && t->op->proc_time && !t->failed && !done)
            tdm_winop_advance(t->win);
        if (t->rtimers && !t->failed)
            retract_cleanup(t, t->op->event_time
                                   ? tdm_winop_current_watermark(t->win)
                                   : tdm_clock_now(t->clk));
        publish(t);
    }
    rt_thread_done(run);
    return NULL;
}

/* ---- Setup ---- */

/* The node's trigger: NULL for the assigner's default, a built-in one
 * otherwise, wrapped in a purging trigger when trigger.purging is set
 * (then the default is made explicit, since purging needs an inner
 * trigger). */
static tdm_err make_trigger(const rt_op *op, tdm_trigger **out, char *msg,
                            size_t n)
{
    const tdm_node *nd = op->node;
    int kind = (int)tdm__node_int(nd, "trigger");
    bool purging = tdm__node_int(nd, "trigger.purging") != 0;
    tdm_err err = TDM_OK;
    *out = NULL;
    if (kind == 0 && purging)
        kind = op->proc_time ? 2 : 1; /* the assigner's default */
    switch (kind) {
    case 1:
        err = tdm_trigger_new_event_time(out);
        break;
    case 2:
        err = tdm_trigger_new_processing_time(out);
        break;
    case 3:
        err = tdm_trigger_new_count(tdm__node_int(nd, "trigger.count"), out,
                                    msg, n);
        break;
    case 4:
        err = tdm_trigger_new_continuous_event_time(
            tdm__node_int(nd, "trigger.interval"), out, msg, n);
        break;
    case 5:
        err = tdm_trigger_new_never(out);
        break;
    default:
        return TDM_OK; /* NULL: the assigner's default */
    }
    if (err == TDM_OK && purging) {
        tdm_trigger *p;
        err = tdm_trigger_new_purging(*out, &p);
        *out = err == TDM_OK ? p : NULL;
    }
    return err;
}

/* The node's assigner (window joins: tumbling or sliding, no offset). */
static tdm_err make_assigner(const tdm_node *nd, bool join,
                             tdm_assigner **out, char *msg, size_t n)
{
    int type = (int)tdm__node_int(nd, "window.type");
    int64_t size = tdm__node_int(nd, "window.size");
    int64_t slide = tdm__node_int(nd, "window.slide");
    int64_t off = join ? 0 : tdm__node_int(nd, "window.offset");
    tdm_err err;
    switch (type) {
    case 0:
        err = tdm_assigner_new_tumbling(size, off, out, msg, n);
        break;
    case 1:
        err = tdm_assigner_new_sliding(size, slide, off, out, msg, n);
        break;
    case 2:
        err = tdm_assigner_new_session(tdm__node_int(nd, "window.gap"), out,
                                       msg, n);
        break;
    default:
        err = tdm_assigner_new_global(out);
        break;
    }
    if (err == TDM_OK && !join && tdm__node_int(nd, "window.time") == 1)
        err = tdm_assigner_set_processing_time(*out);
    return err;
}

/* A window subtask's operator: assigner, trigger, aggregate (the built-in
 * count for a single count(), the row aggregate otherwise), one valve
 * channel per upstream source subtask, lateness and late output. */
static tdm_err init_window(rt_op_task *t, char *msg, size_t n)
{
    rt_op *op = t->op;
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
    err = tdm_winop_new(asg, trg, agg, op->n_channels, t->clk, win_emit, t,
                        &t->win, msg, n);
    if (err == TDM_OK && op->lateness > 0)
        err = tdm_winop_set_allowed_lateness(t->win, op->lateness, msg, n);
    if (err == TDM_OK && op->late)
        err = tdm_winop_set_late_output(t->win, 1);
    if (err == TDM_OK && op->mode == RT_RETRACT) {
        t->rkeys = tdm__keys_new();
        t->rkv = tdm__kv_new(sizeof(rslot));
        t->rtimers = tdm__timers_new();
        if (!t->rkeys || !t->rkv || !t->rtimers)
            err = TDM_ERR_NOMEM;
    }
    return err;
}

/* A join subtask's operator: P channels per side (the sources of a join
 * run at the job's parallelism). */
static tdm_err init_join(rt_op_task *t, char *msg, size_t n)
{
    const tdm_node *nd = t->op->node;
    tdm_err err;
    if (tdm__node_int(nd, "type") == 0) {
        err = tdm_joinop_new_interval(
            tdm__node_int(nd, "lower"), tdm__node_int(nd, "upper"),
            (int)tdm__node_int(nd, "lower_inclusive"),
            (int)tdm__node_int(nd, "upper_inclusive"), t->run->P, t->clk,
            join_emit, t, &t->join, msg, n);
    } else {
        tdm_assigner *asg = NULL;
        err = make_assigner(nd, true, &asg, msg, n);
        if (err == TDM_OK)
            err = tdm_joinop_new_window(asg, t->run->P, t->clk, join_emit, t,
                                        &t->join, msg, n);
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
tdm_err rt_op_task_init(rt_op_task *t)
{
    tdm__run *run = t->run;
    rt_op *op = t->op;
    char msg[256] = "";
    atomic_init(&t->wm, TDM_TIME_MIN);
    tdm_err err = tdm__queue_init(&t->q, op->n_channels, run->qcap,
                                  &run->abort, &run->job->queue_waits);
    if (err == TDM_OK)
        err = rt_clock_new(run->job, &t->clk);
    if (err == TDM_OK) {
        t->ch_ended = tdm__calloc((size_t)op->n_channels, sizeof(bool));
        t->ch_warned = tdm__calloc((size_t)op->n_channels, sizeof(bool));
        t->ch_wm = tdm__calloc((size_t)op->n_channels, sizeof *t->ch_wm);
        t->cols = tdm__calloc((size_t)op->n_cols, sizeof *t->cols);
        t->vals = tdm__calloc((size_t)op->n_cols, sizeof *t->vals);
        if (!t->ch_ended || !t->ch_warned || !t->ch_wm || !t->cols ||
            !t->vals)
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
    if (err != TDM_OK)
        rt_fail(run, err, "%s \"%s\": %s",
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
    tdm__free(((rslot *)slot)->blob);
}

/* Frees an operator subtask (a half-built one too). */
void rt_op_task_fini(rt_op_task *t)
{
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
    tdm__free(t->ch_ended);
    tdm__free(t->ch_warned);
    tdm__free(t->ch_wm);
    tdm__free(t->cols);
    tdm__free(t->vals);
    tdm__free(t->lvals);
    tdm__free(t->rvals);
    memset(t, 0, sizeof *t);
}
