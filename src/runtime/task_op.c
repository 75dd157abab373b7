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
 * (rt_emit_*), and forwards its output watermark, status and end there
 * after the rows they cover.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/expr.h"
#include "runtime/run.h"
#include "state/ckpt_codec.h"
#include "state/ckpt_store.h"
#include "state/state.h"
#include "window/join.h"
#include "window/win.h"

/* What retract mode remembers of a window's last emitted result. */
typedef struct rslot {
    void *blob; /* aggregate part: int64 count, or packed rowagg bytes */
    size_t len;
} rslot;

/* ---- Writing ---- */

/* A subtask that failed stops feeding its operator and writing; it goes
 * on draining its queue (releasing batches) until the abort reaches its
 * loop, so producers are never left waiting on it.  The message ends
 * with the sink object's own error (rt_sink_why: the file and the
 * system's reason, e.g. a full disk). */
static void op_fail_io(rt_op_task *t, const rt_sink *s, tdm__sinkobj *obj,
                       const char *what)
{
    char why[400];
    rt_sink_why(s, obj, why, sizeof why);
    t->failed = true;
    rt_fail(t->run, TDM_ERR_IO, "sink \"%s\": writing %s to %s failed%s",
            s->node->name, what,
            s->conf.path && *s->conf.path ? s->conf.path : "stdout", why);
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
    if (s->vt->write_row(t->ck.obj[1], row) != TDM_OK) {
        op_fail_io(t, s, t->ck.obj[1], "a late record");
        return;
    }
    t->c_late_side++;
}

/* Remembers a late record for tdm_metrics_late_at: its timestamp, the
 * subtask's watermark, the processing time and the row as text, in a
 * ring of the last RT_LATE_RING.  At most late_budget records are
 * rendered per group of items, so a flood of late records costs little
 * (the counters stay exact). */
static void sample_late(rt_op_task *t, const tdm__row *row, tdm_time_ms ts,
                        bool dropped)
{
    if (t->late_budget <= 0 || !t->late)
        return;
    t->late_budget--;
    tdm_time_ms wm = t->win ? t->win->wm : t->join->wm;
    pthread_mutex_lock(&t->lmx);
    rt_late *l = &t->late[t->late_head];
    t->late_head = (t->late_head + 1) % RT_LATE_RING;
    if (t->late_n < RT_LATE_RING)
        t->late_n++;
    l->ts = ts;
    l->wm = wm;
    l->at = t->now;
    l->dropped = dropped;
    if (row)
        tdm__row_render(row, l->row, sizeof l->row);
    else
        l->row[0] = 0;
    pthread_mutex_unlock(&t->lmx);
}

/* The row of a join's late record (push_rows's record, handed back
 * during the push): a window join's carries the row itself (its log packs
 * rows, join_pack_write), an interval join's the packed row, unpacked
 * into @p buf.  The result is borrowed (the batch's row or @p buf). */
static const tdm__row *join_late_row(rt_op_task *t, int side,
                                     const tdm_record *rec, tdm__row *buf)
{
    if (t->join->kind == TDM__JOIN_WINDOW && rec->payload)
        return rec->payload;
    tdm__row_unpack(rec->payload, rec->payload_len,
                    t->op->inputs[side]->schema, side ? t->rvals : t->lvals,
                    buf);
    return buf;
}

/* The operators' drop probes: a record dropped as late (no late
 * output) is sampled like one sent to the late output.  The window
 * operator's record carries the row itself, the join's see
 * join_late_row. */
static void win_dropped(void *ud, const tdm_record *rec)
{
    rt_op_task *t = ud;
    sample_late(t, rec->payload, rec->ts, true);
}

static void join_dropped(void *ud, int side, const tdm_record *rec)
{
    rt_op_task *t = ud;
    tdm__row buf;
    sample_late(t, join_late_row(t, side ? 1 : 0, rec, &buf), rec->ts, true);
}

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

/* Chaining: the result in t->vals (and @p out's window) as a row of the
 * operator's output stream.  A window's row is its key and aggregate
 * columns, window_start and window_end, stamped window_end - 1 (Flink's
 * window.maxTimestamp(); a global window's end is TDM_TIME_MAX); a
 * join's is its columns as written, stamped with the pair's ts. */
static void emit_out(rt_op_task *t, const tdm__out_row *out)
{
    rt_op *op = t->op;
    tdm_time_ms ts;
    const tdm__val *vals = t->vals;
    if (op->kind == TDM_NODE_WINDOW) {
        tdm__val *v = t->evals;
        memcpy(v, t->vals, (size_t)op->n_cols * sizeof *v);
        memset(&v[op->n_cols], 0, 2 * sizeof *v);
        v[op->n_cols].u.i = out->has_window ? out->win_start : TDM_TIME_MIN;
        v[op->n_cols + 1].u.i = out->has_window ? out->win_end
                                                : TDM_TIME_MAX;
        ts = tdm__time_sub_sat(v[op->n_cols + 1].u.i, 1);
        vals = v;
    } else {
        ts = t->vals[op->n_cols - 1].u.i;
    }
    tdm_err err = rt_emit_row(t->emit, vals, ts);
    if (err == TDM_ERR_NOMEM)
        op_fail_nomem(t);
    else if (err != TDM_OK)
        t->failed = true; /* the run aborted */
}

/* Points the out row at the subtask's column scratch (names and types
 * fixed at setup, values filled by the caller) and writes it to the sink
 * (if any) and the output stream (if read by other operators). */
static void write_out(rt_op_task *t, tdm__out_row *out)
{
    rt_op *op = t->op;
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
    t->c_out++;
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

/* ---- Key fence (fence.c) ---- */

/* A FENCE item: the keys of a split revoked from this member.  Each
 * key's epoch moves up by one: its records from now on build a new
 * identity (fenced_key), and results of older identities are not
 * written (fence_result). */
static void apply_fence(rt_op_task *t, const rt_fence *f)
{
    size_t off = 0;
    for (uint32_t i = 0; i < f->n && !t->failed; i++) {
        uint32_t len;
        memcpy(&len, f->data + off, sizeof len);
        const char *key = f->data + off + sizeof len;
        off += sizeof len + len;
        uint64_t h = tdm__keys_hash(key, len);
        int64_t *e = rt_keyset_find(&t->fence, key, len, h);
        int64_t next = e ? *e + 1 : 1;
        if (rt_keyset_put_max(&t->fence, key, len, h, next) != TDM_OK)
            op_fail_nomem(t);
    }
}

/* The bytes a record of @p key goes to the operator with: the key
 * itself, or for a fenced key the key, its epoch and RT_FENCE_MAGIC (in
 * t->fkb).  NULL on OOM. */
static const char *fenced_key(rt_op_task *t, const char *key, size_t *len)
{
    const int64_t *e = rt_keyset_find(&t->fence, key, *len,
                                      tdm__keys_hash(key, *len));
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

/* Whether a result of key bytes (@p key, *len) is of a fenced key's
 * older identity (true: not written, counted); otherwise *len becomes
 * the length of the key without its fence suffix. */
static bool fence_result(rt_op_task *t, const char *key, size_t *len)
{
    size_t n = *len;
    uint32_t epoch = 0;
    if (n >= RT_FENCE_SUFFIX &&
        memcmp(key + n - 8, RT_FENCE_MAGIC, 8) == 0) {
        size_t base = n - RT_FENCE_SUFFIX;
        const int64_t *e = rt_keyset_find(&t->fence, key, base,
                                          tdm__keys_hash(key, base));
        if (e) {
            memcpy(&epoch, key + base, sizeof epoch);
            if ((int64_t)epoch != *e)
                goto stale;
            *len = base;
            return false;
        }
    }
    if (rt_keyset_find(&t->fence, key, n, tdm__keys_hash(key, n)))
        goto stale;
    return false;
stale:
    t->c_fenced++;
    return true;
}

/* Whether an event-time window result may repeat one a previous owner of
 * an input's partitions wrote before it crashed or lost them (the input
 * sources' replay bounds): then it is marked as an update.  In retract
 * mode the earlier row is not known here, so nothing is retracted for
 * it. */
static bool replayed(const rt_op_task *t, const tdm_event *ev)
{
    const rt_op *op = t->op;
    if (!ev->has_window || !op->event_time)
        return false;
    tdm_time_ms last = tdm__time_sub_sat(ev->win_end, 1);
    for (int i = 0; i < op->n_inputs; i++) {
        rt_source *s = op->inputs[i];
        if (ev->win_start <= atomic_load_explicit(&s->replay_start,
                                                  memory_order_relaxed) ||
            last <= atomic_load_explicit(&s->replay_last,
                                         memory_order_relaxed))
            return true;
    }
    return false;
}

/* Result latency of an on-time row fired by the watermark being handled:
 * the processing time since that watermark left its source subtask.  The
 * clock is read once per RT_LAT_EVERY rows of one firing (a few
 * microseconds of rows share a reading), so measuring costs little. */
#define RT_LAT_EVERY 32u
static inline void note_latency(rt_op_task *t)
{
    if (t->wm_at_us == 0)
        return;
    if (t->lat_left == 0) {
        t->lat_now_us = tdm__mono_us();
        t->lat_left = RT_LAT_EVERY;
    }
    t->lat_left--;
    tdm__hist_add(&t->lat, t->lat_now_us - t->wm_at_us);
}

/* Publishes the latency quantiles (a scan of the histogram: at most
 * once a second, and at the end). */
static void publish_latency(rt_op_task *t, bool force)
{
    if (!t->lat.b || t->lat.n == 0)
        return;
    if (!force && t->now - t->lat_pub < 1000)
        return;
    t->lat_pub = t->now;
    rt_pub_set(&t->m.lat_p50, tdm__hist_quantile(&t->lat, 0.50));
    rt_pub_set(&t->m.lat_p99, tdm__hist_quantile(&t->lat, 0.99));
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
        .n_key_cols = op->n_key,
        .has_window = ev->has_window,
        .win_start = ev->win_start,
        .win_end = ev->win_end,
        .timing = ev->pane_timing,
        .pane_index = ev->pane_index,
        .is_update = ev->is_update || replayed(t, ev),
        .change = TDM__CHANGE_INSERT,
    };
    t->c_panes++;
    if (ev->pane_timing == TDM_PANE_LATE)
        t->c_late_panes++;
    else if (ev->pane_timing == TDM_PANE_ON_TIME && t->lat.b &&
             ev->time < TDM_TIME_MAX && t->win->wm >= ev->time)
        note_latency(t);
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
        out.change = out.is_update ? TDM__CHANGE_UPDATE : TDM__CHANGE_INSERT;
    if (!fill_aggs(t, agg, agg_len, ev->value)) {
        op_fail_nomem(t);
        return;
    }
    write_out(t, &out);
}

/* The processing time at which the subtask's watermark first reached
 * @p wm, from the debug ring of watermark advances; @p now when it has
 * not yet (the watermark reaching it is being processed). */
static tdm_time_ms reached_at(const rt_op_task *t, tdm_time_ms wm,
                              tdm_time_ms now)
{
    tdm_time_ms at = now;
    for (int k = 0; k < t->dbg_n; k++) {
        int i = (t->dbg_head - 1 - k + RT_DBG_RING) % RT_DBG_RING;
        if (t->dbg_wm[i] < wm)
            break;
        at = t->dbg_at[i];
    }
    return at;
}

/* Debug log: one line per watermark advance of the operator. */
static void debug_watermark(rt_op_task *t, tdm_time_ms wm)
{
    char from[48], to[48], chn[160] = "-";
    int ch = rt_holding_channel(t);
    if (ch >= 0)
        snprintf(chn, sizeof chn, "%s#%d",
                 t->op->inputs[ch / t->run->P]->node->name,
                 ch % t->run->P);
    rt_format_ms(t->wm_out, from, sizeof from);
    rt_format_ms(wm, to, sizeof to);
    tdm__job_log(t->run->job,
                 "debug wm vertex=%s subtask=%d from=%s to=%s "
                 "channel_min=%s",
                 t->op->node->name, t->index, from, to, chn);
    if (t->dbg_wm) {
        t->dbg_wm[t->dbg_head] = wm;
        t->dbg_at[t->dbg_head] = tdm_clock_now(t->clk);
        t->dbg_head = (t->dbg_head + 1) % RT_DBG_RING;
        if (t->dbg_n < RT_DBG_RING)
            t->dbg_n++;
    }
}

/* Debug log: one line per window firing, with the records the window
 * holds (when the aggregate knows) and the processing time since the
 * watermark passed the window's last timestamp. */
static void debug_fire(rt_op_task *t, const tdm_event *ev)
{
    static const char *const timing[] = { "early", "on_time", "late" };
    char key[256], ws[48], we[48], wm[48], win[112];
    rt_key_text(t->op, ev->key, ev->key_len, key, sizeof key);
    if (ev->has_window) {
        rt_format_ms(ev->win_start, ws, sizeof ws);
        rt_format_ms(ev->win_end, we, sizeof we);
        snprintf(win, sizeof win, "[%s,%s)", ws, we);
    } else {
        snprintf(win, sizeof win, "global");
    }
    rt_format_ms(t->win->wm, wm, sizeof wm);
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
static void on_output_watermark(rt_op_task *t, tdm_time_ms wm)
{
    if (t->run->debug)
        debug_watermark(t, wm);
    t->wm_out = wm;
    if (t->emit && !t->failed)
        rt_emit_control(t->emit, TDM__ITEM_WATERMARK, wm, 0, t->wm_at_us);
    /* Release: the committer (run.c) that reads it with acquire sees
     * every result fired up to it already handed to the sinks. */
    atomic_store_explicit(&t->wm, wm, memory_order_release);
}

/* The operator's output status (idle when every input channel is):
 * published, and forwarded to the operators reading this one. */
static void on_output_status(rt_op_task *t, int idle)
{
    rt_pub_set(&t->m.idle, idle ? 1 : 0);
    if (t->emit && !t->failed)
        rt_emit_control(t->emit, TDM__ITEM_STATUS, 0, idle ? 1 : 0, 0);
}

/* The window operator's output.  LATE events carry the row itself as
 * the record's payload (the push that caused them is still on the
 * stack), so the late output writes it unchanged. */
static void win_emit(void *opaque, const tdm_event *ev)
{
    rt_op_task *t = opaque;
    tdm_event fev;
    if (t->failed)
        return;
    switch (ev->type) {
    case TDM_EVENT_RESULT:
        /* A fenced key's results carry its identity's suffix: stripped,
         * or not written at all for an older identity. */
        if (__builtin_expect(t->fence.n != 0, 0)) {
            size_t klen = ev->key_len;
            if (fence_result(t, ev->key, &klen))
                break;
            fev = *ev;
            fev.key_len = klen;
            ev = &fev;
        }
        /* A window's first firing is remembered (the firing memory of
         * tdm_job_window_status), with the watermark that fired it. */
        if (ev->pane_index == 0 && t->ws && ev->has_window &&
            rt_fired_add(&t->ws->fired,
                         rt_fired_fp(ev->key, ev->key_len, ev->win_start,
                                     ev->win_end),
                         t->win->wm) != TDM_OK) {
            op_fail_nomem(t);
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
    if (op->filter) {
        /* The join's filter, over the output columns. */
        tdm__row row = { .ts = ev->time, .v = t->vals,
                         .schema = &op->node->out_schema };
        if (!tdm__expr_true(op->filter, &row)) {
            rt_count(t->run, TDM_STAT_FILTERED, 1);
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

/* ---- Input ---- */

/* How many rows of a segment ahead the key bytes are prefetched. */
#define PF_KEY 8

/* Pushes the rows of one batch segment into the operator.  The channel
 * says which input (union position or join side) and which source
 * subtask they come from.  The selection carries each row's timestamp
 * and, for a single-field key, its bytes (tdm__sel: the value of a
 * fixed-width field, or a string's bytes in place), so a count touches
 * only the selection and the key bytes of rows written on another core;
 * other keys are rebuilt here from the same fields the source hashed.
 * The row itself rides along as the record payload (windows: row
 * aggregates and the late output read it; window joins: their log
 * packs it, join_pack_write) or packed into it (interval joins, which
 * keep copies of records beyond the call).  What is the same for every
 * row of the segment - the operator, its row aggregates, the key fence -
 * is decided once. */
static void push_rows(rt_op_task *t, const tdm__item *it)
{
    rt_op *op = t->op;
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
    const bool pf = op->n_key == 1 &&
                    b->schema->fields[kidx[0]].type == TDM_TYPE_STRING;
    const uint32_t n = it->n;
    if (ra)
        tdm__rowagg_set_input(ra, input);
    t->c_in += n;
    /* The fields no row changes are set once. */
    tdm_record rec = { .payload_len = sizeof(tdm__row) };
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
            tdm__key_get(row, kidx, op->n_key, &t->kb, &key, &klen) !=
                TDM_OK) {
            op_fail_nomem(t);
            break;
        }
        if (__builtin_expect(fenced, 0) &&
            !(key = fenced_key(t, key, &klen))) {
            op_fail_nomem(t);
            break;
        }
        rec.key = key;
        rec.key_len = klen;
        rec.ts = sl->ts;
        tdm_err err;
        if (win) {
            rec.payload = row;
            err = tdm_winop_push(win, it->ch, &rec);
            if (ra && tdm__rowagg_take_oom(ra))
                err = TDM_ERR_NOMEM;
        } else if (wjoin) {
            rec.payload = row;
            err = tdm_joinop_push(t->join, input, it->ch % P, &rec);
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

/* How many partial rows ahead push_partials fetches key table slots. */
#define PARTIAL_AHEAD 4

/* Merges the partial rows of one source subtask's local aggregate
 * (two-phase aggregation, localagg.h) into the operator: each partial
 * goes into every window of its slice as the records it summarises
 * would have, with the built-in count's lean path
 * (tdm__winop_push_partial) or, for row aggregates, as a record whose
 * add merges the partial (tdm__rowagg_set_partial).  The record has no
 * payload: a partial is never late, so nothing reads it. */
static void push_partials(rt_op_task *t, const tdm__item *it)
{
    const rt_partials *m = it->fence;
    tdm_winop *win = t->win;
    tdm__rowagg *ra = t->ra;
    char fixed[TDM__KEY_FIXED_LEN], ahead[TDM__KEY_FIXED_LEN];
    tdm_record rec = { .payload = NULL };
    for (uint32_t k = 0; k < m->n && !t->failed; k++) {
        /* The window store's entries are scattered: fetch ahead the key
         * table slot of the partial PARTIAL_AHEAD rows on. */
        if (!ra && k + PARTIAL_AHEAD < m->n) {
            const rt_pent *pa = (const rt_pent *)(const void *)(
                m->ents + (size_t)(k + PARTIAL_AHEAD) * m->stride);
            if (pa->key_len == TDM__SEL_FIXED) {
                tdm__key_fixed_put(pa->key, ahead);
                tdm__winop_prefetch_key(win, ahead, TDM__KEY_FIXED_LEN);
            } else if (m->keys) {
                tdm__winop_prefetch_key(win, m->keys + pa->key, pa->key_len);
            }
        }
        const rt_pent *pe =
            (const rt_pent *)(const void *)(m->ents + (size_t)k * m->stride);
        const void *acc = (const char *)pe + sizeof *pe;
        if (pe->key_len == TDM__SEL_FIXED) {
            tdm__key_fixed_put(pe->key, fixed);
            rec.key = fixed;
            rec.key_len = TDM__KEY_FIXED_LEN;
        } else {
            rec.key = m->keys ? m->keys + pe->key : "";
            rec.key_len = pe->key_len;
        }
        rec.ts = pe->ts;
        /* numRecordsIn counts the records a partial stands for. */
        t->c_in += (int64_t)pe->records;
        tdm_err err;
        if (ra) {
            tdm__rowagg_set_partial(ra, acc);
            err = tdm_winop_push(win, it->ch, &rec);
            tdm__rowagg_set_partial(ra, NULL);
            if (tdm__rowagg_take_oom(ra))
                err = TDM_ERR_NOMEM;
        } else {
            int64_t n;
            memcpy(&n, acc, sizeof n);
            double part[2] = { (double)n, 0 };
            err = tdm__winop_push_partial(win, it->ch, &rec, part);
        }
        if (err == TDM_ERR_NOMEM) {
            op_fail_nomem(t);
        } else if (err != TDM_OK) {
            t->failed = true;
            rt_fail(t->run, err, "window \"%s\": a partial row: %s",
                    t->op->node->name, tdm_winop_errmsg(win));
        }
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
    rt_pub_set(&t->chp[ch].wm, it->t);
    /* Windows this watermark fires count their latency from when it
     * left its source (0: an END sent before the run started). */
    t->wm_at_us = it->at_us;
    t->lat_left = 0;
    tdm_err err = t->win ? tdm_winop_watermark(t->win, ch, it->t)
                         : tdm_joinop_watermark(t->join, ch / P, ch % P,
                                                it->t);
    if (err == TDM_ERR_NOMEM)
        op_fail_nomem(t);
}

/* ---- Checkpoints: barriers and alignment ---- */

static void on_barrier(rt_op_task *t, const tdm__item *it);
static bool handle(rt_op_task *t, const tdm__item *it);

/* Section of an operator subtask's own state in its blob (then the
 * operator's section): the channels' last watermarks and flags. */
#define RT_CK_TAG_OPTASK UINT64_C(0x524f) /* "RO" */
#define RT_CK_OPTASK_VERSION 1

/* The key group of a key as the sources route it (the snapshot keeps
 * state by key group, so a restore at another parallelism can deal it
 * out again). */
static int op_key_group(void *ud, const char *key, size_t len)
{
    const rt_op_task *t = ud;
    return tdm__key_group(tdm__keys_hash(key, len), t->run->key_groups);
}

/* The key groups subtask @p j owns: one contiguous range. */
static void op_groups(const tdm__run *run, int j, int *lo, int *hi)
{
    *lo = run->key_groups;
    *hi = -1;
    for (int g = 0; g < run->key_groups; g++)
        if (run->owner[g] == j) {
            if (g < *lo)
                *lo = g;
            *hi = g;
        }
}

/* ---- Checkpoints: retract mode's memory of emitted rows ----
 * A section after the operator's in the subtask's blob: per key group
 * the (key, window) slots with the aggregate part of the last row
 * emitted, so that after a restore an update retracts exactly what was
 * written before (docs/checkpoints.md, "Retract mode's memory"). */

#define RT_CK_TAG_RETRACT UINT64_C(0x5252) /* "RR" */
#define RT_CK_TAG_RGROUP UINT64_C(0x5247)  /* "RG" */
#define RT_CK_RETRACT_VERSION 1

/* One remembered row, for the snapshot's order by key group. */
typedef struct rref {
    int group;
    uint32_t kid;
    tdm__ns ns;
    const rslot *s;
} rref;

typedef struct rcollect {
    rt_op_task *t;
    rref *v;
    size_t n;
} rcollect;

static void collect_rslot(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    rcollect *c = ud;
    size_t len = 0;
    const char *k = tdm__keys_get(c->t->rkeys, key, &len);
    c->v[c->n++] = (rref){ op_key_group(c->t, k, len), key, ns, slot };
}

static int cmp_rref(const void *a, const void *b)
{
    const rref *x = a, *y = b;
    return x->group < y->group ? -1 : x->group > y->group;
}

/* The cleanup time of a remembered window (retract_and_remember). */
static tdm_time_ms retract_at(const rt_op_task *t, tdm__ns ns)
{
    return t->op->event_time ? tdm__time_add_sat(ns.b - 1, t->op->lateness)
                             : ns.b - 1;
}

/* One slot: key, window, flags (1 cleanup timer), [timer time], flag
 * of an aggregate part and the part as typed values (count: svar; row
 * aggregates: per column u8 null, then str or u64 bits). */
static void encode_rslot(rt_op_task *t, tdm__enc *e, const rref *r)
{
    rt_op *op = t->op;
    size_t klen = 0;
    const char *k = tdm__keys_get(t->rkeys, r->kid, &klen);
    tdm_time_ms at = retract_at(t, r->ns);
    bool timer = tdm__timers_has(t->rtimers, at, r->kid, r->ns);
    tdm__enc_bytes(e, k, klen);
    tdm__enc_svar(e, r->ns.a);
    tdm__enc_svar(e, r->ns.b);
    tdm__enc_u8(e, timer ? 1 : 0);
    if (timer)
        tdm__enc_svar(e, at);
    tdm__enc_u8(e, r->s->blob ? 1 : 0);
    if (!r->s->blob)
        return;
    if (op->fast_count) {
        int64_t n = 0;
        memcpy(&n, r->s->blob, sizeof n);
        tdm__enc_svar(e, n);
        return;
    }
    tdm__val *v = t->vals + op->n_key;
    if (!tdm__rowagg_unpack(r->s->blob, r->s->len, op->n_aggs,
                            op->col_types + op->n_key, v))
        memset(v, 0, (size_t)op->n_aggs * sizeof *v); /* cannot happen */
    for (int i = 0; i < op->n_aggs; i++) {
        tdm__enc_u8(e, v[i].null ? 1 : 0);
        if (op->col_types[op->n_key + i] == TDM_TYPE_STRING)
            tdm__enc_bytes(e, v[i].null ? "" : v[i].u.s.p,
                           v[i].null ? 0 : v[i].u.s.len);
        else
            tdm__enc_u64(e, (uint64_t)v[i].u.i);
    }
}

/* Appends the retract section: the slots of key groups lo..hi, one "RG"
 * section per group that has any.  One scratch array (a reference per
 * slot), nothing per row. */
static tdm_err retract_snapshot(rt_op_task *t, tdm__enc *e, int lo, int hi)
{
    rcollect c = { t, NULL, 0 };
    size_t n = tdm__kv_count(t->rkv);
    c.v = tdm__malloc((n + 1) * sizeof *c.v);
    if (!c.v)
        return TDM_ERR_NOMEM;
    tdm__kv_each(t->rkv, collect_rslot, &c);
    qsort(c.v, c.n, sizeof *c.v, cmp_rref);
    tdm__enc_begin(e, RT_CK_TAG_RETRACT);
    tdm__enc_uvar(e, RT_CK_RETRACT_VERSION);
    for (size_t i = 0; i < c.n;) {
        size_t j = i;
        while (j < c.n && c.v[j].group == c.v[i].group)
            j++;
        if (c.v[i].group >= lo && c.v[i].group <= hi) {
            tdm__enc_begin(e, RT_CK_TAG_RGROUP);
            tdm__enc_uvar(e, (uint64_t)c.v[i].group);
            tdm__enc_uvar(e, (uint64_t)(j - i));
            for (size_t k = i; k < j; k++)
                encode_rslot(t, e, &c.v[k]);
            tdm__enc_end(e);
        }
        i = j;
    }
    tdm__enc_end(e);
    tdm__free(c.v);
    return TDM_OK;
}

/* Copies a decoder's first error into @p to (keeping an earlier one). */
static void dec_pass(tdm__dec *to, const tdm__dec *from)
{
    if (from->err && !to->err) {
        to->err = from->err;
        to->err_off = from->err_off;
        to->why = from->why;
    }
}

/* Reads one slot's aggregate part into a packed buffer as
 * retract_and_remember stores it (*blob NULL: none, or an error in @p d
 * or no memory, told apart by the return). */
static tdm_err decode_rpart(rt_op_task *t, tdm__dec *d, void **blob,
                            size_t *len)
{
    rt_op *op = t->op;
    uint8_t has = 0;
    *blob = NULL;
    *len = 0;
    tdm__dec_u8(d, &has);
    if (d->err || has > 1)
        return tdm__dec_fail(d, "bad aggregate part flag");
    if (!has)
        return TDM_OK;
    if (op->fast_count) {
        int64_t n = 0;
        if (tdm__dec_svar(d, &n) != TDM_OK)
            return d->err;
        if (n < 0)
            return tdm__dec_fail(d, "negative count");
        *blob = tdm__memdup(&n, sizeof n);
        *len = sizeof n;
        return *blob ? TDM_OK : TDM_ERR_NOMEM;
    }
    /* First pass: the values (strings borrowed from the input) and the
     * packed size; then the packed copy (ra_result's layout). */
    tdm__val *v = t->vals + op->n_key;
    size_t head = (size_t)op->n_aggs * sizeof(tdm__val), need = head;
    for (int i = 0; i < op->n_aggs && !d->err; i++) {
        uint8_t null = 0;
        memset(&v[i], 0, sizeof v[i]);
        tdm__dec_u8(d, &null);
        if (!d->err && null > 1)
            return tdm__dec_fail(d, "bad null flag");
        v[i].null = null;
        if (op->col_types[op->n_key + i] == TDM_TYPE_STRING) {
            const void *p = NULL;
            size_t l = 0;
            if (tdm__dec_bytes(d, &p, &l) == TDM_OK && l > UINT32_MAX)
                return tdm__dec_fail(d, "string too long");
            v[i].u.s.p = p;
            v[i].u.s.len = (uint32_t)l;
            if (!null)
                need += l;
            else if (l)
                return tdm__dec_fail(d, "a null string with bytes");
        } else {
            uint64_t bits = 0;
            tdm__dec_u64(d, &bits);
            v[i].u.i = (int64_t)bits;
        }
    }
    if (d->err)
        return d->err;
    char *buf = tdm__malloc(need);
    if (!buf)
        return TDM_ERR_NOMEM;
    tdm__val *pv = (tdm__val *)buf;
    size_t off = 0;
    for (int i = 0; i < op->n_aggs; i++) {
        memset(&pv[i], 0, sizeof pv[i]);
        pv[i].null = v[i].null;
        if (op->col_types[op->n_key + i] == TDM_TYPE_STRING) {
            if (v[i].null)
                continue;
            if (v[i].u.s.len)
                memcpy(buf + head + off, v[i].u.s.p, v[i].u.s.len);
            pv[i].u.s.p = (const char *)(uintptr_t)off;
            pv[i].u.s.len = v[i].u.s.len;
            off += v[i].u.s.len;
        } else {
            pv[i].u.i = v[i].u.i;
        }
    }
    *blob = buf;
    *len = need;
    return TDM_OK;
}

/* One "RG" section's slots into the memory.  A (key, window) already
 * remembered is an error (key groups are disjoint across blobs). */
static tdm_err restore_rgroup(rt_op_task *t, tdm__dec *g)
{
    uint64_t n = 0;
    tdm__dec_uvar(g, &n);
    if (!g->err && n > tdm__dec_left(g) / 5)
        return tdm__dec_fail(g, "slot count beyond the section");
    for (uint64_t i = 0; i < n && !g->err; i++) {
        const void *k = NULL;
        size_t klen = 0;
        tdm__ns ns = { 0, 0 };
        uint8_t fl = 0;
        int64_t at = 0;
        tdm__dec_bytes(g, &k, &klen);
        tdm__dec_svar(g, &ns.a);
        tdm__dec_svar(g, &ns.b);
        tdm__dec_u8(g, &fl);
        if (!g->err && fl > 1)
            return tdm__dec_fail(g, "unknown slot flags");
        if (!g->err && ns.a > ns.b)
            return tdm__dec_fail(g, "window start after its end");
        if (fl & 1)
            tdm__dec_svar(g, &at);
        void *blob = NULL;
        size_t len = 0;
        tdm_err err = decode_rpart(t, g, &blob, &len);
        if (err != TDM_OK)
            return err;
        uint32_t kid;
        if (tdm__keys_intern(t->rkeys, k, klen, &kid) != TDM_OK) {
            tdm__free(blob);
            return TDM_ERR_NOMEM;
        }
        bool created = false;
        rslot *s = tdm__kv_upsert(t->rkv, kid, ns, &created);
        if (!s || !created) {
            tdm__keys_unref(t->rkeys, kid);
            tdm__free(blob);
            return s ? tdm__dec_fail(g, "a window remembered twice")
                     : TDM_ERR_NOMEM;
        }
        s->blob = blob;
        s->len = len;
        if ((fl & 1) && tdm__timers_add(t->rtimers, at, kid, ns) != TDM_OK)
            return TDM_ERR_NOMEM;
    }
    return g->err;
}

/* Restores the retract memory of key groups lo..hi from the sections
 * after the operator's in one old subtask's blob (@p d past the
 * operator section); other sections are skipped.  Errors are left in
 * @p d (TDM_ERR_PARSE) or returned (TDM_ERR_NOMEM). */
static tdm_err retract_restore(rt_op_task *t, tdm__dec *d, int lo, int hi)
{
    while (!d->err && tdm__dec_left(d) > 0) {
        uint64_t tag = 0, v = 0;
        tdm__dec body;
        if (tdm__dec_section(d, &tag, &body) != TDM_OK)
            return d->err;
        if (tag != RT_CK_TAG_RETRACT)
            continue;
        tdm__dec_uvar(&body, &v);
        if (!body.err && v != RT_CK_RETRACT_VERSION)
            tdm__dec_fail(&body, "unknown retract memory version");
        while (!body.err && tdm__dec_left(&body) > 0) {
            uint64_t gtag = 0, group = 0;
            tdm__dec g;
            if (tdm__dec_section(&body, &gtag, &g) != TDM_OK ||
                gtag != RT_CK_TAG_RGROUP)
                continue; /* an error ends the loop; others skipped */
            tdm__dec_uvar(&g, &group);
            if (!g.err && group >= (uint64_t)t->run->key_groups)
                tdm__dec_fail(&g, "key group out of range");
            tdm_err err = TDM_OK;
            if (!g.err && (int)group >= lo && (int)group <= hi)
                err = restore_rgroup(t, &g);
            dec_pass(&body, &g);
            if (err == TDM_ERR_NOMEM)
                return err;
        }
        dec_pass(d, &body);
    }
    return d->err;
}

/* Encodes this subtask's state: its channels, then the operator (its
 * key groups only).  *out NULL on failure (the run failed). */
static bool op_snapshot(rt_op_task *t, uint8_t **out, size_t *len)
{
    tdm__enc e;
    int lo, hi;
    tdm__enc_init(&e);
    *out = NULL;
    *len = 0;
    tdm__enc_begin(&e, RT_CK_TAG_OPTASK);
    tdm__enc_uvar(&e, RT_CK_OPTASK_VERSION);
    tdm__enc_uvar(&e, (uint64_t)t->op->n_channels);
    for (int c = 0; c < t->op->n_channels; c++) {
        tdm__enc_svar(&e, t->ch_wm[c]);
        tdm__enc_u8(&e, (uint8_t)((t->ch_idle[c] ? 1 : 0) |
                                  (t->ch_ended[c] ? 2 : 0)));
    }
    tdm__enc_end(&e);
    op_groups(t->run, t->index, &lo, &hi);
    tdm_err err = TDM_ERR_UNSUPPORTED;
    if (t->win)
        err = tdm__winop_snapshot(t->win, &e, op_key_group, t, lo < 0 ? 0 : lo,
                                  hi < lo ? lo : hi);
    else if (t->join)
        err = tdm__joinop_snapshot(t->join, &e, op_key_group, t,
                                   lo < 0 ? 0 : lo, hi < lo ? lo : hi);
    /* Retract mode: its memory of emitted rows, a section of its own. */
    if (err == TDM_OK && t->rkv)
        err = retract_snapshot(t, &e, lo < 0 ? 0 : lo, hi < lo ? lo : hi);
    if (err == TDM_OK)
        err = tdm__enc_finish(&e, out, len);
    else
        tdm__enc_free(&e);
    if (err != TDM_OK) {
        rt_fail(t->run, err, "%s \"%s\" subtask %d: checkpoint snapshot "
                             "failed: %s",
                tdm__node_kind_name(t->op->kind), t->op->node->name,
                t->index,
                err == TDM_ERR_UNSUPPORTED
                    ? "its aggregate cannot be snapshotted"
                    : tdm_strerror(err));
        return false;
    }
    return true;
}

/* Whether every channel has its barrier or has ended. */
static bool op_aligned(const rt_op_task *t)
{
    for (int c = 0; c < t->op->n_channels; c++)
        if (!t->ck_blocked[c] && !t->ch_ended[c])
            return false;
    return true;
}

static bool dispatch(rt_op_task *t, const tdm__item *it);

/* Aligned on barrier ck_id: snapshot, pre-commit the sinks, acknowledge,
 * then unblock every channel and handle what was held back, channel by
 * channel in arrival order.  (No barrier can be among them: the next
 * checkpoint starts only after this one completed.) */
static bool op_checkpoint(rt_op_task *t)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    bool done = false;
    uint64_t id = t->ck_id;
    t->ck_taken = id;
    /* Aligned now: the coordinator reads this after the ack below (under
     * the run's mutex). */
    t->ck.align_us = tdm__mono_us() - t->ck_first_us;
    if (op_snapshot(t, &blob, &len)) {
        if (rt_ckpt_pre_commit(t->run, &t->ck, id)) {
            /* Chaining: the barrier goes on in the output stream, after
             * the rows and watermarks emitted before it (the flush in
             * rt_emit_control), so the reading operators align on it as
             * on a source's. */
            if (t->emit && !t->failed)
                rt_emit_control(t->emit, TDM__ITEM_BARRIER, (tdm_time_ms)id,
                                0, 0);
            rt_ckpt_ack(t->run, &t->ck, id, blob, len, false);
            blob = NULL;
        }
    }
    tdm__free(blob);
    t->ck_id = 0;
    t->ck_n_blocked = 0;
    for (int c = 0; c < t->op->n_channels; c++) {
        if (!t->ck_blocked[c])
            continue;
        t->ck_blocked[c] = false;
        struct rt_stash *st = &t->ck_stash[c];
        int n = st->n;
        for (int i = 0; i < n; i++)
            if (dispatch(t, &st->it[i]))
                done = true;
        st->n = 0;
        if (n)
            tdm__queue_release(&t->q, c, n);
    }
    return done;
}

/* A barrier on channel it->ch blocks the channel until the barrier came
 * on every channel that has not ended. */
static void on_barrier(rt_op_task *t, const tdm__item *it)
{
    if (!t->ck_blocked || t->failed)
        return;
    /* A barrier on a channel that already ended, or of a checkpoint
     * this subtask has taken, is stale: aligning on it would snapshot
     * the same checkpoint twice (a source subtask that never read once
     * sent its barrier after END, and results were duplicated after a
     * restore; task_source.c no longer does, this keeps any other
     * sender from doing the same). */
    if (t->ch_ended[it->ch] || (uint64_t)it->t <= t->ck_taken)
        return;
    t->ck_id = (uint64_t)it->t;
    if (t->ck_n_blocked == 0)
        t->ck_first_us = tdm__mono_us();
    if (!t->ck_blocked[it->ch]) {
        t->ck_blocked[it->ch] = true;
        t->ck_n_blocked++;
    }
}

/* Holds an item of a blocked channel (its capacity stays taken, so the
 * channel's producer stops rather than fill memory).  False: no memory
 * (the run failed). */
static bool op_hold(rt_op_task *t, const tdm__item *it)
{
    struct rt_stash *st = &t->ck_stash[it->ch];
    if (st->n == st->cap) {
        int cap = st->cap ? st->cap * 2 : 16;
        tdm__item *p = tdm__realloc(st->it, (size_t)cap * sizeof *p);
        if (!p) {
            op_fail_nomem(t);
            return false;
        }
        st->it = p;
        st->cap = cap;
    }
    st->it[st->n++] = *it;
    tdm__queue_hold(&t->q, it->ch, 1);
    return true;
}

/* Handles one item, holding it back while its channel is blocked, and
 * checkpoints once aligned.  True when the operator finished. */
static bool dispatch(rt_op_task *t, const tdm__item *it)
{
    if (t->ck_n_blocked && t->ck_blocked[it->ch]) {
        if (!op_hold(t, it) && it->kind == TDM__ITEM_BATCH)
            tdm__sbatch_release(it->b);
        return false;
    }
    bool done = handle(t, it);
    if (t->ck_n_blocked && op_aligned(t))
        done = op_checkpoint(t) || done;
    return done;
}

/* Between groups of items: commits the coordinator published. */
static void op_ckpt_poll(rt_op_task *t)
{
    uint64_t c = atomic_load_explicit(&t->run->ck.committed,
                                      memory_order_acquire);
    if (c > t->ck.committed)
        rt_ckpt_commit(t->run, &t->ck, c);
}

/* The operator ended (every channel ended): its final state for the
 * checkpoints still to come; the coordinator pre-commits and commits
 * its sinks from now on. */
static void op_ckpt_end(rt_op_task *t)
{
    tdm__run *run = t->run;
    uint8_t *fin = NULL;
    size_t len = 0;
    if (!run->ck.on || atomic_load(&run->abort) || t->failed)
        return;
    op_ckpt_poll(t);
    if (op_snapshot(t, &fin, &len))
        rt_ckpt_ack(run, &t->ck, 0, fin, len, true);
}

tdm_err rt_ckpt_restore_op(rt_op_task *t, char *msg, size_t n)
{
    tdm__run *run = t->run;
    rt_ckpt *ck = &run->ck;
    int oi = (int)(t->op - run->ops), lo, hi;
    tdm_err err = TDM_OK;
    op_groups(run, t->index, &lo, &hi);
    for (int k = 0; err == TDM_OK && k < ck->old_P; k++) {
        char name[64];
        void *p = NULL;
        size_t len = 0;
        snprintf(name, sizeof name, "o%d-%d", oi, k);
        err = tdm__ckpt_get(ck->rd, name, &p, &len);
        if (err != TDM_OK)
            return tdm__errf(msg, n, err, "checkpoint %llu: %s",
                             (unsigned long long)ck->from,
                             tdm__ckpt_reader_errmsg(ck->rd));
        tdm__dec d, body;
        uint64_t tag = 0, v = 0, nch = 0;
        tdm__dec_init(&d, p, len);
        tdm__dec_section(&d, &tag, &body);
        if (!d.err && tag != RT_CK_TAG_OPTASK)
            tdm__dec_fail(&d, "not an operator subtask section");
        tdm__dec_uvar(&body, &v);
        tdm__dec_uvar(&body, &nch);
        if (!body.err && v != RT_CK_OPTASK_VERSION)
            tdm__dec_fail(&body, "unknown operator subtask version");
        /* The channels' state only at the same parallelism, into the
         * same subtask. */
        bool mine = ck->old_P == run->P && k == t->index &&
                    nch == (uint64_t)t->op->n_channels;
        for (uint64_t c = 0; !body.err && c < nch; c++) {
            int64_t wm = 0;
            uint8_t fl = 0;
            tdm__dec_svar(&body, &wm);
            tdm__dec_u8(&body, &fl);
            if (!body.err && fl > 3)
                tdm__dec_fail(&body, "unknown channel flags");
            if (mine && !body.err) {
                t->ch_wm[c] = wm;
                t->ch_idle[c] = (fl & 1) != 0;
            }
        }
        err = d.err ? d.err : body.err;
        if (err == TDM_OK && lo <= hi)
            err = t->win ? tdm__winop_restore(t->win, &d, lo, hi)
                         : tdm__joinop_restore(t->join, &d, lo, hi);
        bool rr = false; /* an error of the retract memory is in d */
        if (err == TDM_OK && lo <= hi && t->rkv) {
            err = retract_restore(t, &d, lo, hi);
            rr = err == TDM_ERR_PARSE;
        }
        if (err != TDM_OK) {
            size_t off = 0;
            const char *why = NULL;
            const tdm__dec *bad = body.err ? &body : &d;
            tdm__dec_error(bad, &off, &why);
            err = tdm__errf(msg, n, err == TDM_ERR_NOMEM ? err
                                                        : TDM_ERR_PARSE,
                            "checkpoint %llu: blob %s: offset %zu: %s",
                            (unsigned long long)ck->from, name, off,
                            why ? why
                            : rr    ? "bad retract memory"
                            : t->win ? tdm_winop_errmsg(t->win)
                                     : tdm_joinop_errmsg(t->join));
        }
        tdm__free(p);
    }
    return err;
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
        t->ch_idle[it->ch] = it->idle != 0;
        rt_pub_set(&t->chp[it->ch].idle, it->idle != 0);
        if (!t->failed) {
            if (t->win)
                tdm_winop_status(t->win, it->ch, it->idle);
            else
                tdm_joinop_status(t->join, it->ch / P, it->ch % P,
                                  it->idle);
        }
        break;
    case TDM__ITEM_FENCE:
        if (!t->failed)
            apply_fence(t, it->fence);
        rt_fence_free(it->fence);
        break;
    case TDM__ITEM_PARTIAL:
        if (!t->failed)
            push_partials(t, it);
        rt_partials_release(it->fence);
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
            rt_pub_set(&t->chp[it->ch].ended, 1);
            t->ended++;
        }
        if (t->ended == t->op->n_channels) {
            if (!t->failed && !t->nodrain) {
                tdm_err err = t->win ? tdm_winop_end(t->win)
                                     : tdm_joinop_end(t->join);
                if (err == TDM_ERR_NOMEM)
                    op_fail_nomem(t);
            }
            return true;
        }
        break;
    case TDM__ITEM_BARRIER:
        on_barrier(t, it);
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
    /* The job's counters take this group's deltas; the subtask's
     * metrics its totals (single writer: plain stores). */
    rt_count(t->run, TDM_STAT_RECORDS_OUT, t->c_out - t->j_out);
    rt_count(t->run, TDM_STAT_LATE_SIDE_OUTPUT,
             t->c_late_side - t->j_late_side);
    rt_count(t->run, TDM_STAT_LATE_REFIRES, t->c_late_panes - t->j_late_panes);
    rt_count(t->run, TDM_STAT_WM_REGRESSIONS, t->c_regress - t->j_regress);
    t->j_out = t->c_out;
    t->j_late_side = t->c_late_side;
    t->j_late_panes = t->c_late_panes;
    t->j_regress = t->c_regress;
    rt_op_metrics *m = &t->m;
    if (t->c_in != rt_pub_get(&m->in)) {
        rt_pub_set(&m->in, t->c_in);
        rt_pub_set(&m->last_at, t->now);
    }
    rt_pub_set(&m->out, t->c_out);
    rt_pub_set(&m->late_side, t->c_late_side);
    rt_pub_set(&m->late_drop, d);
    rt_pub_set(&m->panes, t->c_panes);
    rt_pub_set(&m->late_panes, t->c_late_panes);
    rt_pub_set(&m->regress, t->c_regress);
    if (t->win) {
        rt_pub_set(&m->wm_in, t->win->wm);
        rt_pub_set(&m->keys, tdm__winop_keys(t->win));
        rt_pub_set(&m->windows, tdm_winop_live_windows(t->win));
        rt_pub_set(&m->bytes, tdm_winop_state_bytes(t->win));
        publish_latency(t, false);
    } else {
        /* The join's own accounting (join.h): for the window join the
         * record log chunks, which the key table and kv stores miss. */
        const tdm_joinop *j = t->join;
        rt_pub_set(&m->wm_in, j->wm);
        rt_pub_set(&m->keys, tdm__joinop_state_keys(j));
        rt_pub_set(&m->windows, tdm_joinop_buffered(j));
        rt_pub_set(&m->bytes, tdm__joinop_state_bytes(j));
    }
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
        /* One clock reading per group of items (last record time, late
         * samples); the late sample budget is per group. */
        t->now = tdm_clock_now(t->clk);
        t->late_budget = 64;
        if (!t->ck_blocked) {
            for (size_t i = 0; i < n; i++)
                if (handle(t, &items[i]))
                    done = true;
        } else {
            /* Checkpoints: barriers block their channel until aligned. */
            for (size_t i = 0; i < n; i++)
                if (dispatch(t, &items[i]))
                    done = true;
            op_ckpt_poll(t);
        }
        if (t->win && t->op->proc_time && !t->failed && !done)
            tdm_winop_advance(t->win);
        if (t->rtimers && !t->failed)
            retract_cleanup(t, t->op->event_time
                                   ? tdm_winop_current_watermark(t->win)
                                   : tdm_clock_now(t->clk));
        publish(t);
        /* A question about a window (tdm_job_window_status) is answered
         * between two groups of items. */
        if (t->ws && atomic_load_explicit(&t->ws->req, memory_order_relaxed))
            rt_status_serve(t);
        /* Chaining: results fired without a watermark (processing-time
         * or early firings, join pairs) go out with each group. */
        if (t->emit && !t->failed)
            rt_emit_flush(t->emit);
    }
    if (done && t->ck_blocked)
        op_ckpt_end(t);
    /* Chaining: end of input after the last results and the final
     * watermark; a stop without drain is passed on as such. */
    if (t->emit && done && !t->failed &&
        !atomic_load_explicit(&run->abort, memory_order_relaxed))
        rt_emit_control(t->emit, TDM__ITEM_END, TDM_TIME_MAX,
                        t->nodrain ? 1 : 0, 0);
    if (t->lat.b && t->lat.n) {
        publish_latency(t, true);
        tdm__job_add_latency(run->job, &t->lat);
    }
    if (t->c_fenced)
        tdm__job_log(run->job, "window %s[%d]: %lld result(s) of fenced keys "
                     "not written (their partitions' new owners write "
                     "them)", t->op->node->name, t->index,
                     (long long)t->c_fenced);
    if (t->ws)
        rt_status_close(t);
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
    if (err == TDM_OK) {
        t->win->drop_probe = win_dropped;
        t->win->drop_ud = t;
    }
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
    if (err == TDM_OK) {
        t->join->drop_probe = join_dropped;
        t->join->drop_ud = t;
        if (t->join->kind == TDM__JOIN_WINDOW) {
            const tdm__join_packer pk = { join_pack_size, join_pack_write };
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
static void init_metrics(rt_op_task *t)
{
    rt_op_metrics *m = &t->m;
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
tdm_err rt_op_task_init(rt_op_task *t)
{
    tdm__run *run = t->run;
    rt_op *op = t->op;
    char msg[256] = "";
    atomic_init(&t->wm, TDM_TIME_MIN);
    init_metrics(t);
    tdm_err err = tdm__queue_init(&t->q, op->n_channels, run->qcap,
                                  &run->abort, &run->job->queue_waits);
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
        err = rt_clock_new(run->job, &t->clk);
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
            t->evals = tdm__calloc((size_t)op->out->schema->n + 1,
                                   sizeof *t->evals);
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
        t->ck_stash = tdm__calloc((size_t)op->n_channels,
                                  sizeof *t->ck_stash);
        if (!t->ck_blocked || !t->ck_stash)
            err = TDM_ERR_NOMEM;
    }
    if (err == TDM_OK && run->ck.restored)
        err = rt_ckpt_restore_op(t, msg, sizeof msg);
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
    /* Fence messages still queued (the run aborted): ours to free. */
    for (size_t i = 0; t->q.ring && i < t->q.count; i++) {
        tdm__item *it = &t->q.ring[(t->q.head + i) % t->q.cap];
        if (it->kind == TDM__ITEM_FENCE)
            rt_fence_free(it->fence);
        else if (it->kind == TDM__ITEM_PARTIAL)
            rt_partials_free(it->fence);
    }
    /* Items held back by an alignment when the run aborted. */
    for (int c = 0; t->ck_stash && c < t->op->n_channels; c++) {
        for (int i = 0; i < t->ck_stash[c].n; i++) {
            tdm__item *it = &t->ck_stash[c].it[i];
            if (it->kind == TDM__ITEM_FENCE)
                rt_fence_free(it->fence);
            else if (it->kind == TDM__ITEM_PARTIAL)
                rt_partials_free(it->fence);
        }
        tdm__free(t->ck_stash[c].it);
    }
    tdm__free(t->ck_stash);
    tdm__free(t->ck_blocked);
    rt_ckpt_slot_free(&t->ck);
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
    rt_keyset_free(&t->fence);
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

/* ---- Checkpoints: the operator snapshot adapter ---- */

const char *rt_op_ckpt_supported(const tdm_node *n)
{
    /* Every window and join takes part today: chained operators forward
     * their barriers in their output stream (op_checkpoint), retract
     * mode saves its memory of emitted rows (retract_snapshot), and
     * every aggregate list has a codec.  What cannot be checkpointed is
     * refused elsewhere: unreplayable and Kafka sources, connectors
     * without the version-3 members (validate_checkpointing in job.c),
     * and windows in upsert or retract mode read by another operator
     * (refused with or without checkpoints). */
    (void)n;
    return NULL;
}
