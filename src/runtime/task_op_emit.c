/* SPDX-License-Identifier: MIT */
/* task_op_emit.c - the output side of window and join subtasks
 * (task_op.c): the operators' emit callbacks turn what they emit into
 * rows, written to the sink and, for an operator other operators read,
 * to its output stream (tdm__rt_emit_*):
 *
 *   RESULT     -> out row per output mode: append (INSERT), upsert
 *                 (INSERT / UPDATE with the upsert key) or retract
 *                 (RETRACT of the remembered row, then INSERT);
 *   JOIN       -> out row of left., right. fields and ts (the join's
 *                 filter first);
 *   LATE       -> the late output sink, and the late samples;
 *   WATERMARK  -> published, forwarded after the rows it fired;
 *   STATUS     -> published, forwarded.
 *
 * Retract mode's memory of emitted rows (one slot per key and window,
 * forgotten at the window's cleanup time) lives here; task_op_ckpt.c
 * saves and restores it.  A fenced key's results of an older identity
 * are not written (fence.c).  This is the per-result path: everything
 * from the emit callback down to the sink write stays in this file.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/expr.h"
#include "runtime/ckpt.h"
#include "runtime/task_op.h"
#include "state/state.h"
#include "window/join.h"
#include "window/win.h"

/* ---- Writing ---- */

/* A subtask that failed stops feeding its operator and writing; it goes
 * on draining its queue (releasing batches) until the abort reaches its
 * loop, so producers are never left waiting on it.  The message ends
 * with the sink object's own error (tdm__rt_sink_why: the file and the
 * system's reason, e.g. a full disk). */
static void op_fail_io(tdm__rt_op_task *t, const tdm__rt_sink *s,
                       tdm__sinkobj *obj, const char *what)
{
    char why[400];
    tdm__rt_sink_why(s, obj, why, sizeof why);
    t->failed = true;
    tdm__rt_fail(t->run, TDM_ERR_IO, "sink \"%s\": writing %s to %s failed%s",
                 s->node->name, what,
                 s->conf.path && *s->conf.path ? s->conf.path : "stdout", why);
}

/* Writes a late record to the late output. */
static void write_late(tdm__rt_op_task *t, const tdm__row *row)
{
    tdm__rt_sink *s = t->op->late;
    if (!s || t->failed)
        return;
    if (s->vt->write_row(t->ck.obj[1], row) != TDM_OK) {
        op_fail_io(t, s, t->ck.obj[1], "a late record");
        return;
    }
    t->met.c_late_side++;
}

/* Remembers a late record for tdm_metrics_late_at: its timestamp, the
 * subtask's watermark, the processing time and the row as text, in a
 * ring of the last RT_LATE_RING.  At most late_budget records are
 * rendered per group of items, so a flood of late records costs little
 * (the counters stay exact). */
static void sample_late(tdm__rt_op_task *t, const tdm__row *row, tdm_time_ms ts,
                        bool dropped)
{
    if (t->met.late_budget <= 0 || !t->met.late)
        return;
    t->met.late_budget--;
    tdm_time_ms wm = t->win ? t->win->wm : t->join->wm;
    pthread_mutex_lock(&t->met.lmx);
    tdm__rt_late *l = &t->met.late[t->met.late_head];
    t->met.late_head = (t->met.late_head + 1) % RT_LATE_RING;
    if (t->met.late_n < RT_LATE_RING)
        t->met.late_n++;
    l->ts = ts;
    l->wm = wm;
    l->at = t->now;
    l->dropped = dropped;
    if (row)
        tdm__row_render(row, l->row, sizeof l->row);
    else
        l->row[0] = 0;
    pthread_mutex_unlock(&t->met.lmx);
}

/* The row of a join's late record (push_rows's record, handed back
 * during the push): a window join's carries the row itself (its log packs
 * rows, join_pack_write), an interval join's the packed row, unpacked
 * into @p buf.  The result is borrowed (the batch's row or @p buf). */
static const tdm__row *join_late_row(tdm__rt_op_task *t, int side,
                                     const tdm_record *rec, tdm__row *buf)
{
    if (t->join->kind == TDM__JOIN_WINDOW && rec->payload)
        return rec->payload;
    tdm__row_unpack(rec->payload, rec->payload_len, t->op->inputs[side]->schema,
                    side ? t->rvals : t->lvals, buf);
    return buf;
}

/* The operators' drop probes: a record dropped as late (no late
 * output) is sampled like one sent to the late output.  The window
 * operator's record carries the row itself, the join's see
 * join_late_row. */
void tdm__rt_op_win_dropped(void *ud, const tdm_record *rec)
{
    tdm__rt_op_task *t = ud;
    sample_late(t, rec->payload, rec->ts, true);
}

void tdm__rt_op_join_dropped(void *ud, int side, const tdm_record *rec)
{
    tdm__rt_op_task *t = ud;
    tdm__row buf;
    sample_late(t, join_late_row(t, side ? 1 : 0, rec, &buf), rec->ts, true);
}

/* Fills the aggregate columns from a stored or emitted aggregate part.
 * With the built-in count the part is the count itself (an int64, or the
 * event's double value); otherwise it is the row aggregate's packed
 * values. */
static bool fill_aggs(tdm__rt_op_task *t, const void *bytes, size_t len,
                      double value)
{
    tdm__rt_op *op = t->op;
    tdm__val *v = t->vals + op->n_key;
    if (op->fast_count) {
        memset(v, 0, sizeof *v);
        if (bytes && len == sizeof(int64_t))
            memcpy(&v->u.i, bytes, sizeof(int64_t));
        else
            v->u.i = (int64_t)value;
        return true;
    }
    return tdm__rowagg_unpack(bytes, len, op->n_aggs, op->col_types + op->n_key,
                              v);
}

/* Chaining: the result in t->vals (and @p out's window) as a row of the
 * operator's output stream.  A window's row is its key and aggregate
 * columns, window_start and window_end, stamped window_end - 1 (Flink's
 * window.maxTimestamp(); a global window's end is TDM_TIME_MAX); a
 * join's is its columns as written, stamped with the pair's ts. */
static void emit_out(tdm__rt_op_task *t, const tdm__out_row *out)
{
    tdm__rt_op *op = t->op;
    tdm_time_ms ts;
    const tdm__val *vals = t->vals;
    if (op->kind == TDM_NODE_WINDOW) {
        tdm__val *v = t->evals;
        memcpy(v, t->vals, (size_t)op->n_cols * sizeof *v);
        memset(&v[op->n_cols], 0, 2 * sizeof *v);
        v[op->n_cols].u.i = out->has_window ? out->win_start : TDM_TIME_MIN;
        v[op->n_cols + 1].u.i = out->has_window ? out->win_end : TDM_TIME_MAX;
        ts = tdm__time_sub_sat(v[op->n_cols + 1].u.i, 1);
        vals = v;
    } else {
        ts = t->vals[op->n_cols - 1].u.i;
    }
    tdm_err err = tdm__rt_emit_row(t->emit, vals, ts);
    if (err == TDM_ERR_NOMEM)
        tdm__rt_op_fail_nomem(t);
    else if (err != TDM_OK)
        t->failed = true; /* the run aborted */
}

/* Points the out row at the subtask's column scratch (names and types
 * fixed at setup, values filled by the caller) and writes it to the sink
 * (if any) and the output stream (if read by other operators). */
static void write_out(tdm__rt_op_task *t, tdm__out_row *out)
{
    tdm__rt_op *op = t->op;
    if (t->emit)
        emit_out(t, out);
    if (!op->sink || t->failed)
        return;
    for (int i = 0; i < op->n_cols; i++)
        t->cols[i].v = t->vals[i];
    out->cols = t->cols;
    out->n_cols = op->n_cols;
    if (op->sink->vt->write_result(t->ck.obj[0], out) != TDM_OK) {
        op_fail_io(t, op->sink, t->ck.obj[0], "a result");
        return;
    }
    t->met.c_out++;
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
static void retract_and_remember(tdm__rt_op_task *t, const tdm_event *ev,
                                 tdm__out_row *out, const void *agg,
                                 size_t agg_len)
{
    tdm__rt_op *op = t->op;
    tdm__ns ns = {ev->has_window ? ev->win_start : TDM_TIME_MIN,
                  ev->has_window ? ev->win_end : TDM_TIME_MAX};
    uint32_t kid;
    if (tdm__keys_intern(t->ret.rkeys, ev->key, ev->key_len, &kid) != TDM_OK) {
        tdm__rt_op_fail_nomem(t);
        return;
    }
    bool created;
    tdm__rt_op_rslot *s = tdm__kv_upsert(t->ret.rkv, kid, ns, &created);
    if (!s) {
        tdm__keys_unref(t->ret.rkeys, kid);
        tdm__rt_op_fail_nomem(t);
        return;
    }
    if (!created) {
        tdm__keys_unref(t->ret.rkeys, kid); /* the slot holds one already */
        if (ev->is_update && s->blob) {
            tdm__out_row r = *out;
            r.change = TDM__CHANGE_RETRACT;
            if (fill_aggs(t, s->blob, s->len, 0))
                write_out(t, &r);
        }
    } else if (ev->has_window) {
        /* Forget the window when the operator does (cleanup time). */
        tdm_time_ms at =
            op->event_time
                ? tdm__time_add_sat(ev->win_end - 1,
                                    tdm_winop_allowed_lateness(t->win))
                : ev->win_end - 1;
        if (tdm__timers_add(t->ret.rtimers, at, kid, ns) != TDM_OK) {
            tdm__rt_op_fail_nomem(t);
            return;
        }
    }
    void *copy = tdm__memdup(agg, agg_len ? agg_len : 1);
    if (!copy) {
        tdm__rt_op_fail_nomem(t);
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

/* ---- Replayed results ---- */

/* Whether an event-time window result may repeat one a previous owner of
 * an input's partitions wrote before it crashed or lost them (the input
 * sources' replay bounds): then it is marked as an update.  In retract
 * mode the earlier row is not known here, so nothing is retracted for
 * it. */
static bool replayed(const tdm__rt_op_task *t, const tdm_event *ev)
{
    const tdm__rt_op *op = t->op;
    if (!ev->has_window || !op->event_time)
        return false;
    tdm_time_ms last = tdm__time_sub_sat(ev->win_end, 1);
    for (int i = 0; i < op->n_inputs; i++) {
        tdm__rt_source *s = op->inputs[i];
        if (ev->win_start <=
                atomic_load_explicit(&s->replay_start, memory_order_relaxed) ||
            last <= atomic_load_explicit(&s->replay_last, memory_order_relaxed))
            return true;
    }
    return false;
}

/* Result latency of an on-time row fired by the watermark being handled:
 * the processing time since that watermark left its source subtask.  The
 * clock is read once per RT_LAT_EVERY rows of one firing (a few
 * microseconds of rows share a reading), so measuring costs little. */
#define RT_LAT_EVERY 32u
static inline void note_latency(tdm__rt_op_task *t)
{
    if (t->met.wm_at_us == 0)
        return;
    if (t->met.lat_left == 0) {
        t->met.lat_now_us = tdm__mono_us();
        t->met.lat_left = RT_LAT_EVERY;
    }
    t->met.lat_left--;
    tdm__hist_add(&t->met.lat, t->met.lat_now_us - t->met.wm_at_us);
}

/* A window result: key columns (decoded from the key bytes), aggregate
 * columns, window and pane information, written per output mode:
 *   append   every pane as INSERT;
 *   upsert   INSERT for a first pane, UPDATE for an update, both with the
 *            upsert key (key bytes + start + end) a table sink replaces by;
 *   retract  RETRACT of the previous values before each update, then
 *            INSERT (retract_and_remember). */
static void write_window_result(tdm__rt_op_task *t, const tdm_event *ev)
{
    tdm__rt_op *op = t->op;
    if (!tdm__key_decode(ev->key, ev->key_len, op->col_types, op->n_key,
                         t->vals)) {
        tdm__rt_op_fail_nomem(t); /* cannot happen: we encoded the key */
        return;
    }
    int64_t count = (int64_t)ev->value;
    const void *agg = ev->bytes;
    size_t agg_len = ev->bytes_len;
    if (op->fast_count) {
        agg = &count;
        agg_len = sizeof count;
    } else if (!agg) {
        tdm__rt_op_fail_nomem(t);
        return;
    }
    tdm__out_row out = {
        .n_key_cols = op->n_key,
        .has_window = ev->has_window,
        .win_start = ev->win_start,
        .win_end = ev->win_end,
        .timing = ev->pane_timing,
        .pane_index = ev->pane_index,
        .is_update = ev->is_update || replayed(t, ev),
        .change = TDM__CHANGE_INSERT,
    };
    t->met.c_panes++;
    if (ev->pane_timing == TDM_PANE_LATE)
        t->met.c_late_panes++;
    else if (ev->pane_timing == TDM_PANE_ON_TIME && t->met.lat.b &&
             ev->time < TDM_TIME_MAX && t->win->wm >= ev->time)
        note_latency(t);
    if (op->mode != RT_APPEND) {
        /* Identity of the row: key bytes, window start and end. */
        t->uk.len = 0;
        size_t need = ev->key_len + 16;
        if (need > t->uk.cap) {
            char *p = tdm__realloc(t->uk.p, need);
            if (!p) {
                tdm__rt_op_fail_nomem(t);
                return;
            }
            t->uk.p = p;
            t->uk.cap = need;
        }
        if (ev->key_len)
            memcpy(t->uk.p, ev->key, ev->key_len);
        tdm_time_ms se[2] = {ev->has_window ? ev->win_start : TDM_TIME_MIN,
                             ev->has_window ? ev->win_end : TDM_TIME_MAX};
        memcpy(t->uk.p + ev->key_len, se, 16);
        out.upsert_key = t->uk.p;
        out.upsert_key_len = need;
    }
    if (op->mode == RT_RETRACT) {
        retract_and_remember(t, ev, &out, agg, agg_len);
        return;
    }
    if (op->mode == RT_UPSERT)
        out.change = out.is_update ? TDM__CHANGE_UPDATE : TDM__CHANGE_INSERT;
    if (!fill_aggs(t, agg, agg_len, ev->value)) {
        tdm__rt_op_fail_nomem(t);
        return;
    }
    write_out(t, &out);
}

/* The processing time at which the subtask's watermark first reached
 * @p wm, from the debug ring of watermark advances; @p now when it has
 * not yet (the watermark reaching it is being processed). */
static tdm_time_ms reached_at(const tdm__rt_op_task *t, tdm_time_ms wm,
                              tdm_time_ms now)
{
    tdm_time_ms at = now;
    for (int k = 0; k < t->met.dbg_n; k++) {
        int i = (t->met.dbg_head - 1 - k + RT_DBG_RING) % RT_DBG_RING;
        if (t->met.dbg_wm[i] < wm)
            break;
        at = t->met.dbg_at[i];
    }
    return at;
}

/* Debug log: one line per watermark advance of the operator. */
static void debug_watermark(tdm__rt_op_task *t, tdm_time_ms wm)
{
    char from[48], to[48], chn[160] = "-";
    int ch = tdm__rt_holding_channel(t);
    if (ch >= 0)
        snprintf(chn, sizeof chn, "%s#%d",
                 t->op->inputs[ch / t->run->P]->node->name, ch % t->run->P);
    tdm__rt_format_ms(t->wm_out, from, sizeof from);
    tdm__rt_format_ms(wm, to, sizeof to);
    tdm__job_log(t->run->job,
                 "debug wm vertex=%s subtask=%d from=%s to=%s "
                 "channel_min=%s",
                 t->op->node->name, t->index, from, to, chn);
    if (t->met.dbg_wm) {
        t->met.dbg_wm[t->met.dbg_head] = wm;
        t->met.dbg_at[t->met.dbg_head] = tdm_clock_now(t->clk);
        t->met.dbg_head = (t->met.dbg_head + 1) % RT_DBG_RING;
        if (t->met.dbg_n < RT_DBG_RING)
            t->met.dbg_n++;
    }
}

/* Debug log: one line per window firing, with the records the window
 * holds (when the aggregate knows) and the processing time since the
 * watermark passed the window's last timestamp. */
static void debug_fire(tdm__rt_op_task *t, const tdm_event *ev)
{
    static const char *const timing[] = {"early", "on_time", "late"};
    char key[256], ws[48], we[48], wm[48], win[112];
    tdm__rt_key_text(t->op, ev->key, ev->key_len, key, sizeof key);
    if (ev->has_window) {
        tdm__rt_format_ms(ev->win_start, ws, sizeof ws);
        tdm__rt_format_ms(ev->win_end, we, sizeof we);
        snprintf(win, sizeof win, "[%s,%s)", ws, we);
    } else {
        snprintf(win, sizeof win, "global");
    }
    tdm__rt_format_ms(t->win->wm, wm, sizeof wm);
    int64_t records = -1;
    if (t->op->fast_count) {
        records = (int64_t)ev->value;
    } else if (ev->has_window) {
        int has = 0;
        tdm__winop_probe(t->win, ev->key, ev->key_len, ev->win_start,
                         ev->win_end, &has, &records);
    }
    tdm_time_ms now = tdm_clock_now(t->clk);
    int64_t latency = ev->time < TDM_TIME_MAX && t->win->wm >= ev->time
                          ? now - reached_at(t, ev->time, now)
                          : -1;
    tdm__job_log(t->run->job,
                 "debug fire vertex=%s subtask=%d key=%s window=%s wm=%s "
                 "pane=%s records=%lld latency_ms=%lld",
                 t->op->node->name, t->index, key, win, wm,
                 timing[ev->pane_timing], (long long)records,
                 (long long)latency);
}

/* The operator emitted watermark @p wm: published (and logged), and
 * forwarded to the operators reading this one, after the rows it fired
 * (so they are never late there), with the latency stamp of the
 * watermark that caused it (latency runs from the original source). */
static void on_output_watermark(tdm__rt_op_task *t, tdm_time_ms wm)
{
    if (t->run->debug)
        debug_watermark(t, wm);
    t->wm_out = wm;
    tdm__op_fb_output(t);
    if (t->emit && !t->failed)
        tdm__rt_emit_control(t->emit, TDM__ITEM_WATERMARK, wm, 0,
                             t->met.wm_at_us);
    /* Release: the committer (run.c) that reads it with acquire sees
     * every result fired up to it already handed to the sinks. */
    atomic_store_explicit(&t->wm, wm, memory_order_release);
}

/* The operator's output status (idle when every input channel is):
 * published, and forwarded to the operators reading this one. */
static void on_output_status(tdm__rt_op_task *t, int idle)
{
    tdm__rt_pub_set(&t->met.m.idle, idle ? 1 : 0);
    if (t->emit && !t->failed)
        tdm__rt_emit_control(t->emit, TDM__ITEM_STATUS, 0, idle ? 1 : 0, 0);
}

/* The window operator's output.  LATE events carry the row itself as
 * the record's payload (the push that caused them is still on the
 * stack), so the late output writes it unchanged. */
void tdm__rt_op_win_emit(void *opaque, const tdm_event *ev)
{
    tdm__rt_op_task *t = opaque;
    tdm_event fev;
    if (t->failed)
        return;
    switch (ev->type) {
    case TDM_EVENT_RESULT:
        /* A fenced key's results carry its identity's suffix: stripped,
         * or not written at all for an older identity. */
        if (__builtin_expect(t->fence.keys.n != 0, 0)) {
            size_t klen = ev->key_len;
            if (tdm__op_fence_result(&t->fence, ev->key, &klen))
                break;
            fev = *ev;
            fev.key_len = klen;
            ev = &fev;
        }
        /* A window's first firing is remembered (the firing memory of
         * tdm_job_window_status), with the watermark that fired it. */
        if (ev->pane_index == 0 && t->status.ws && ev->has_window &&
            tdm__rt_fired_add(&t->status.ws->fired,
                              tdm__rt_fired_fp(ev->key, ev->key_len,
                                               ev->win_start, ev->win_end),
                              t->win->wm) != TDM_OK) {
            tdm__rt_op_fail_nomem(t);
            return;
        }
        if (t->run->debug)
            debug_fire(t, ev);
        write_window_result(t, ev);
        break;
    case TDM_EVENT_LATE:
        /* A partial row is never late (docs/runtime.md, Two-phase
         * aggregation); it has no row to write if it were. */
        if (!ev->rec[0]->payload)
            break;
        sample_late(t, ev->rec[0]->payload, ev->time, false);
        write_late(t, ev->rec[0]->payload);
        break;
    case TDM_EVENT_WATERMARK:
        on_output_watermark(t, ev->time);
        break;
    case TDM_EVENT_STATUS:
        on_output_status(t, ev->idle);
        break;
    default:
        break;
    }
}

/* A joined pair: left fields, right fields, then the pair's ts. */
static void write_pair(tdm__rt_op_task *t, const tdm_event *ev)
{
    tdm__rt_op *op = t->op;
    const tdm__schema *ls = op->inputs[0]->schema;
    const tdm__schema *rs = op->inputs[1]->schema;
    tdm__row l, r;
    tdm__row_unpack(ev->rec[0]->payload, ev->rec[0]->payload_len, ls, t->lvals,
                    &l);
    tdm__row_unpack(ev->rec[1]->payload, ev->rec[1]->payload_len, rs, t->rvals,
                    &r);
    memcpy(t->vals, t->lvals, (size_t)ls->n * sizeof *t->vals);
    memcpy(t->vals + ls->n, t->rvals, (size_t)rs->n * sizeof *t->vals);
    tdm__val *ts = &t->vals[ls->n + rs->n];
    memset(ts, 0, sizeof *ts);
    ts->u.i = ev->time;
    if (op->filter) {
        /* The join's filter, over the output columns. */
        tdm__row row = {
            .ts = ev->time, .v = t->vals, .schema = &op->node->out_schema};
        if (!tdm__expr_true(op->filter, &row, TDM_TIME_MIN)) {
            tdm__rt_count(t->run, TDM_STAT_FILTERED, 1);
            return;
        }
    }
    tdm__out_row out = {
        .has_window = ev->has_window,
        .win_start = ev->win_start,
        .win_end = ev->win_end,
        .timing = TDM_PANE_ON_TIME,
        .change = TDM__CHANGE_INSERT,
    };
    write_out(t, &out);
}

/* The join operator's output.  Its pairs are of records the operator
 * kept, so rows are unpacked from their payload bytes; a late record is
 * the pushed one (join_late_row). */
void tdm__rt_op_join_emit(void *opaque, const tdm_event *ev)
{
    tdm__rt_op_task *t = opaque;
    if (t->failed)
        return;
    switch (ev->type) {
    case TDM_EVENT_JOIN:
        write_pair(t, ev);
        break;
    case TDM_EVENT_LATE: {
        int side = ev->side == TDM_SIDE_RIGHT ? 1 : 0;
        tdm__row buf;
        const tdm__row *row = join_late_row(t, side, ev->rec[0], &buf);
        sample_late(t, row, ev->time, false);
        write_late(t, row);
        break;
    }
    case TDM_EVENT_WATERMARK:
        on_output_watermark(t, ev->time);
        break;
    case TDM_EVENT_STATUS:
        on_output_status(t, ev->idle);
        break;
    default:
        break;
    }
}
