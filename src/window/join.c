/* SPDX-License-Identifier: MIT */
/* join.c - the part of the two-input join operator that both join kinds
 * share: construction, the public entry points, the watermark path, and
 * the operator section of a checkpoint (snapshot and restore).
 *
 *   left ch 0..n-1  --> valve L --+
 *                                 +--> combiner --> set W, clean records
 *   right ch 0..n-1 --> valve R --+                 due by W in bulk,
 *                                                   then forward W
 *
 * Each side's valve merges its channels (rules V1-V8); the combiner takes
 * the minimum over non-idle sides (rule O2), so a side that comes back
 * active holds further progress.  Statuses of the combiner are forwarded.
 *
 * The window join differs, as in Flink: JoinedStreams is a coGroup, i.e. a
 * union of both tagged inputs into one window operator, and a union is one
 * logical input (rule O3).  So its channels - left 0..n-1, then right
 * n..2n-1 - share ONE valve that feeds on_combined directly; a side that
 * returns below the watermark is unaligned instead of holding progress.
 * The kinds (join_interval.c, join_window.c) only see records and the
 * watermark: the interval join cleans in bulk when it advances, the window
 * join fires its window timers.
 */
#include <string.h>

#include "state/ckpt_codec.h"
#include "time/wm.h"
#include "window/join.h"
#include "window/win.h"

/* ---- Watermark path ---- */

/* Receives the combiner's output: the operator watermark and status. */
static void on_combined(void *opaque, const tdm_event *ev)
{
    tdm_joinop *op = opaque;

    if (ev->type == TDM_EVENT_STATUS) {
        tdm__emit(&op->sink, ev);
        return;
    }
    if (ev->type != TDM_EVENT_WATERMARK)
        return;
    tdm_time_ms w = ev->time;
    /* End of input is atomic: both sides reach the maximum in one step,
     * so a minimum seen while only one side has ended is not emitted. */
    if (op->ending && w != TDM_TIME_MAX)
        return;
    /* After a restore from several blobs the restarted valves may start
     * below the restored (minimum) watermark: time does not go back. */
    if (op->restored && w <= op->wm)
        return;
    /* As Flink's timer service: set the watermark first, fire every timer
     * at or below it in time order (including ones a firing adds), and
     * forward the watermark only after the results it caused. */
    op->wm = w;
    if (op->kind == TDM__JOIN_INTERVAL) {
        /* The interval join cleans in bulk; it has no timers. */
        tdm__join_interval_advance(op, w);
    } else {
        tdm__timer t;
        while (tdm__timers_pop(op->timers, w, &t))
            tdm__join_window_fire(op, &t);
    }
    tdm__emit_watermark(&op->sink, w);
}

/* Receives one side's valve output and feeds it to the combiner. */
static void on_valve(void *opaque, const tdm_event *ev)
{
    tdm__join_side *vs = opaque;

    if (ev->type == TDM_EVENT_WATERMARK)
        (void)tdm_combiner_watermark(vs->op->comb, vs->side, ev->time);
    else if (ev->type == TDM_EVENT_STATUS)
        (void)tdm_combiner_status(vs->op->comb, vs->side, ev->idle);
}

/* ---- Shared helpers ---- */

/* Sends a late record to the late output or counts it as dropped. */
tdm_err tdm__join_late(tdm_joinop *op, int side, const tdm_record *rec)
{
    if (!op->late_output) {
        op->late_dropped++;
        if (op->drop_probe)
            op->drop_probe(op->drop_ud, side, rec);
        return TDM_OK;
    }
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_LATE);
    ev.time = rec->ts;
    ev.key = rec->key;
    ev.key_len = rec->key_len;
    ev.rec[0] = rec;
    ev.side = side;
    op->late_emitted++;
    tdm__emit(&op->sink, &ev);
    return TDM_OK;
}

/* Emits one joined pair. */
void tdm__join_emit_pair(tdm_joinop *op, const tdm_record *l,
                         const tdm_record *r, tdm_time_ms t, const char *key,
                         size_t key_len, int has_window, tdm_time_ms start,
                         tdm_time_ms end)
{
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_JOIN);
    ev.time = t;
    ev.key = key;
    ev.key_len = key_len;
    ev.has_window = has_window;
    ev.win_start = start;
    ev.win_end = end;
    ev.rec[0] = l;
    ev.rec[1] = r;
    tdm__emit(&op->sink, &ev);
}

/* ---- Construction ---- */

/* Allocates the parts every join has.  On failure the half-built
 * operator is left for tdm_joinop_destroy. */
static tdm_err join_alloc(tdm__join_kind kind, int n_channels, tdm_clock *clk,
                          tdm_emit_cb emit, void *opaque, tdm_joinop **out)
{
    tdm_joinop *op = tdm__calloc(1, sizeof *op);
    *out = op;
    if (!op)
        return TDM_ERR_NOMEM;
    op->kind = kind;
    op->sink.fn = emit;
    op->sink.opaque = opaque;
    op->clk = clk;
    op->n_channels = n_channels;
    op->wm = TDM_TIME_MIN;
    op->keys = tdm__keys_new();
    op->timers = tdm__timers_new();
    if (!op->keys || !op->timers)
        return TDM_ERR_NOMEM;
    if (kind == TDM__JOIN_WINDOW) {
        /* One valve over the union of both sides (rule O3). */
        if (tdm_valve_new(2 * n_channels, on_combined, op, &op->valve[0]) !=
            TDM_OK)
            return TDM_ERR_NOMEM;
        return TDM_OK;
    }
    if (tdm_combiner_new(2, on_combined, op, &op->comb) != TDM_OK)
        return TDM_ERR_NOMEM;
    for (int s = 0; s < 2; s++) {
        op->vside[s].op = op;
        op->vside[s].side = s;
        if (tdm_valve_new(n_channels, on_valve, &op->vside[s], &op->valve[s]) !=
            TDM_OK)
            return TDM_ERR_NOMEM;
    }
    return TDM_OK;
}

/* Creates an interval join (see tidemark.h).  Bounds are normalised once:
 * an exclusive lower bound becomes lower + 1, an exclusive upper bound
 * upper - 1; the result must satisfy lower <= upper.  Returns TDM_OK,
 * TDM_ERR_INVAL (message in errbuf names the parameter) or
 * TDM_ERR_NOMEM. */
tdm_err tdm_joinop_new_interval(tdm_time_ms lower_ms, tdm_time_ms upper_ms,
                                int lower_inclusive, int upper_inclusive,
                                int n_channels, tdm_clock *clk,
                                tdm_emit_cb emit, void *opaque,
                                tdm_joinop **out, char *errbuf,
                                size_t errbuf_size)
{
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (n_channels < 1)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "n_channels must be >= 1 (got %d)", n_channels);
    /* Exclusive bounds become inclusive once (J1).  A bound that cannot
     * move (exclusive lower at the maximum, exclusive upper at the
     * minimum) admits no timestamp at all. */
    if (!lower_inclusive && lower_ms == TDM_TIME_MAX)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "lower_ms is exclusive at the maximum time, so "
                         "no timestamp can join");
    if (!upper_inclusive && upper_ms == TDM_TIME_MIN)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "upper_ms is exclusive at the minimum time, so "
                         "no timestamp can join");
    tdm_time_ms lo = lower_inclusive ? lower_ms : lower_ms + 1;
    tdm_time_ms hi = upper_inclusive ? upper_ms : upper_ms - 1;
    if (lo > hi)
        return tdm__errf(
            errbuf, errbuf_size, TDM_ERR_INVAL,
            "lower_ms must be <= upper_ms once exclusive "
            "bounds are made inclusive (got lower_ms %lld%s, "
            "upper_ms %lld%s)",
            (long long)lower_ms, lower_inclusive ? "" : " exclusive",
            (long long)upper_ms, upper_inclusive ? "" : " exclusive");

    tdm_joinop *op = NULL;
    tdm_err err =
        join_alloc(TDM__JOIN_INTERVAL, n_channels, clk, emit, opaque, &op);
    if (err != TDM_OK)
        goto fail;
    op->lower = lo;
    op->upper = hi;
    err = tdm__join_interval_init(op);
    if (err != TDM_OK)
        goto fail;
    *out = op;
    return TDM_OK;

fail:
    tdm_joinop_destroy(op);
    return tdm__errf(errbuf, errbuf_size, err,
                     "out of memory creating "
                     "the interval join");
}

/* Creates a window join over @p asg, which it owns from the call on, also
 * when the call fails.  Returns TDM_OK, TDM_ERR_INVAL (NULL out or asg,
 * n_channels < 1, an assigner that is not event-time tumbling or
 * sliding) or TDM_ERR_NOMEM. */
tdm_err tdm_joinop_new_window(tdm_assigner *asg, int n_channels, tdm_clock *clk,
                              tdm_emit_cb emit, void *opaque, tdm_joinop **out,
                              char *errbuf, size_t errbuf_size)
{
    tdm_joinop *op = NULL;
    tdm_err err;

    if (out)
        *out = NULL;
    if (!out) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "out must not be NULL");
        goto fail_asg;
    }
    if (!asg) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "asg must not be NULL");
        goto fail_asg;
    }
    if (n_channels < 1) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "n_channels must be >= 1 (got %d)", n_channels);
        goto fail_asg;
    }
    err = join_alloc(TDM__JOIN_WINDOW, n_channels, clk, emit, opaque, &op);
    if (err != TDM_OK) {
        tdm__errf(errbuf, errbuf_size, err,
                  "out of memory creating the window join");
        goto fail_asg;
    }
    /* From here the operator owns the assigner. */
    op->asg = asg;
    asg = NULL;
    err = tdm__join_window_init(op, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto fail_asg;
    *out = op;
    return TDM_OK;

fail_asg:
    /* Ownership of the assigner is taken even when the call fails. */
    tdm_assigner_destroy(asg);
    tdm_joinop_destroy(op);
    return err;
}

/* Chooses late output (1) or drop-and-count (0).  Returns TDM_OK,
 * TDM_ERR_INVAL (NULL op) or TDM_ERR_STATE once input was seen. */
tdm_err tdm_joinop_set_late_output(tdm_joinop *op, int enabled)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (op->started)
        return tdm__msgf(&op->msg, TDM_ERR_STATE,
                         "late output can only be set before the first "
                         "input");
    op->late_output = enabled != 0;
    return TDM_OK;
}

/* ---- Input ---- */

/* Checks side and channel; returns TDM_OK or an error with a message. */
static tdm_err check_input(tdm_joinop *op, int side, int ch)
{
    if (op->ended)
        return tdm__msgf(&op->msg, TDM_ERR_STATE, "input after tdm_joinop_end");
    if (side != TDM_SIDE_LEFT && side != TDM_SIDE_RIGHT)
        return tdm__msgf(&op->msg, TDM_ERR_CHANNEL,
                         "side must be TDM_SIDE_LEFT or TDM_SIDE_RIGHT "
                         "(got %d)",
                         side);
    if (ch < 0 || ch >= op->n_channels)
        return tdm__msgf(&op->msg, TDM_ERR_CHANNEL,
                         "ch must be in [0, %d) (got %d)", op->n_channels, ch);
    return TDM_OK;
}

/* Writes a printable excerpt of a key (at most 64 bytes, other bytes as
 * '?') into @p buf of @p size bytes. */
static void key_excerpt(const tdm_record *rec, char *buf, size_t size)
{
    size_t n = rec->key_len < size - 1 ? rec->key_len : size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)rec->key[i];
        buf[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    buf[n] = '\0';
}

/* Pushes one record of a side.  Returns TDM_OK, TDM_ERR_INVAL (NULL
 * arguments), TDM_ERR_STATE (after end), TDM_ERR_CHANNEL (bad side or
 * channel), TDM_ERR_NO_TIMESTAMP (counted; the message names side and
 * key) or TDM_ERR_NOMEM (nothing emitted, nothing kept). */
tdm_err tdm_joinop_push(tdm_joinop *op, int side, int ch, const tdm_record *rec)
{
    if (!op || !rec)
        return op ? tdm__msgf(&op->msg, TDM_ERR_INVAL, "rec must not be NULL")
                  : TDM_ERR_INVAL;
    tdm_err err = check_input(op, side, ch);
    if (err != TDM_OK)
        return err;
    op->started = true;
    if (rec->ts == TDM_TIME_MIN) {
        char key[65];
        key_excerpt(rec, key, sizeof key);
        op->bad_records++;
        return tdm__msgf(&op->msg, TDM_ERR_NO_TIMESTAMP,
                         "%s record with key \"%s\"%s has no timestamp",
                         side == TDM_SIDE_LEFT ? "left" : "right", key,
                         rec->key_len > 64 ? "..." : "");
    }
    if (op->kind == TDM__JOIN_INTERVAL)
        err = tdm__join_interval_push(op, side, rec);
    else
        err = tdm__join_window_push(op, side, rec);
    if (err == TDM_ERR_NOMEM)
        return tdm__msgf(&op->msg, err,
                         "out of memory buffering a %s "
                         "record",
                         side == TDM_SIDE_LEFT ? "left" : "right");
    return err;
}

/* A watermark on one channel of a side; goes through that side's valve
 * and then the combiner.  Returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_STATE or
 * TDM_ERR_CHANNEL. */
tdm_err tdm_joinop_watermark(tdm_joinop *op, int side, int ch, tdm_time_ms wm)
{
    if (!op)
        return TDM_ERR_INVAL;
    tdm_err err = check_input(op, side, ch);
    if (err != TDM_OK)
        return err;
    op->started = true;
    if (op->kind == TDM__JOIN_WINDOW)
        return tdm_valve_watermark(op->valve[0], side * op->n_channels + ch,
                                   wm);
    return tdm_valve_watermark(op->valve[side], ch, wm);
}

/* An idle (1) or active (0) status on one channel of a side.  Returns
 * TDM_OK, TDM_ERR_INVAL, TDM_ERR_STATE or TDM_ERR_CHANNEL. */
tdm_err tdm_joinop_status(tdm_joinop *op, int side, int ch, int idle)
{
    if (!op)
        return TDM_ERR_INVAL;
    tdm_err err = check_input(op, side, ch);
    if (err != TDM_OK)
        return err;
    op->started = true;
    if (op->kind == TDM__JOIN_WINDOW)
        return tdm_valve_status(op->valve[0], side * op->n_channels + ch,
                                idle != 0);
    return tdm_valve_status(op->valve[side], ch, idle != 0);
}

/* End of input on both sides at once: every pending timer fires and the
 * maximum watermark goes out once.  Returns TDM_OK, TDM_ERR_INVAL or
 * TDM_ERR_STATE (called twice). */
tdm_err tdm_joinop_end(tdm_joinop *op)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (op->ended)
        return tdm__msgf(&op->msg, TDM_ERR_STATE,
                         "tdm_joinop_end called twice");
    op->started = true;
    op->ended = true;
    /* Both valves jump to the maximum; on_combined ignores the minimum
     * that shows while only the left side has ended, so the maximum is
     * the only watermark this step emits. */
    op->ending = true;
    tdm_err err = tdm_valve_end(op->valve[TDM_SIDE_LEFT]);
    if (err == TDM_OK && op->valve[TDM_SIDE_RIGHT])
        err = tdm_valve_end(op->valve[TDM_SIDE_RIGHT]);
    op->ending = false;
    return err;
}

/* ---- Inspection and teardown ---- */

/* Late records dropped so far (0 for NULL). */
int64_t tdm_joinop_late_dropped(const tdm_joinop *op)
{
    return op ? op->late_dropped : 0;
}

/* Record copies held in state, both sides (0 for NULL).  A window join
 * counts a record once per window that holds it. */
int64_t tdm_joinop_buffered(const tdm_joinop *op)
{
    return op ? op->buffered : 0;
}

/* Keys with live state (see join.h). */
int64_t tdm__joinop_state_keys(const tdm_joinop *op)
{
    if (op->kind == TDM__JOIN_INTERVAL)
        return tdm__join_interval_keys(op);
    return (int64_t)tdm__keys_count(op->keys);
}

/* Bytes held by the join's state (see join.h). */
int64_t tdm__joinop_state_bytes(const tdm_joinop *op)
{
    size_t b = tdm__keys_bytes(op->keys) + tdm__timers_bytes(op->timers);
    b += op->kind == TDM__JOIN_INTERVAL ? tdm__join_interval_bytes(op)
                                        : tdm__join_window_bytes(op);
    return (int64_t)b;
}

/* The message of the last error on @p op ("" for NULL; never NULL). */
const char *tdm_joinop_errmsg(const tdm_joinop *op)
{
    return op ? op->msg.text : "";
}

/* Frees the operator, its state, valves, combiner and assigner.  Accepts
 * NULL and half-built operators. */
void tdm_joinop_destroy(tdm_joinop *op)
{
    if (!op)
        return;
    if (op->kind == TDM__JOIN_INTERVAL)
        tdm__join_interval_free(op);
    else
        tdm__join_window_free(op);
    tdm_assigner_destroy(op->asg);
    tdm_valve_destroy(op->valve[0]);
    tdm_valve_destroy(op->valve[1]);
    tdm_combiner_destroy(op->comb);
    if (op->timers)
        tdm__timers_destroy(op->timers);
    if (op->keys)
        tdm__keys_destroy(op->keys);
    tdm__free(op);
}

/* ---- Checkpoints (join.h; layout in docs/checkpoints.md) ---- */

#define JOIN_N_FP 8

/* The settings a restored join must share with the snapshotted one. */
static void join_fingerprint(const tdm_joinop *op, int64_t *fp)
{
    fp[0] = op->kind;
    fp[1] = op->lower;
    fp[2] = op->upper;
    fp[3] = op->asg ? op->asg->kind : 0;
    fp[4] = op->asg ? op->asg->size : 0;
    fp[5] = op->asg ? op->asg->slide : 0;
    fp[6] = op->asg ? op->asg->offset : 0;
    fp[7] = op->late_output;
}

tdm_err tdm__joinop_snapshot(const tdm_joinop *op, tdm__enc *e,
                             int (*key_group)(void *ud, const char *key,
                                              size_t len),
                             void *ud, int group_lo, int group_hi)
{
    if (!op || !e || group_lo < 0 || group_lo > group_hi)
        return TDM_ERR_INVAL;
    size_t ng = (size_t)group_hi - (size_t)group_lo + 1;
    int64_t fp[JOIN_N_FP];
    join_fingerprint(op, fp);
    tdm__enc_begin(e, TDM__SNAP_TAG_JOINOP);
    tdm__enc_uvar(e, TDM__SNAP_JOINOP_VERSION);
    tdm__enc_uvar(e, JOIN_N_FP);
    for (int i = 0; i < JOIN_N_FP; i++)
        tdm__enc_svar(e, fp[i]);
    tdm__enc_svar(e, op->wm);
    tdm__enc_svar(e, op->late_dropped);
    tdm__enc_svar(e, op->late_emitted);
    tdm__enc_svar(e, op->bad_records);
    tdm__enc_u8(e, op->ended ? 1 : 0);
    tdm__enc_uvar(e, (uint64_t)op->n_channels);
    tdm_err err = tdm__valve_snapshot(op->valve[0], e);
    if (err == TDM_OK && op->kind == TDM__JOIN_INTERVAL)
        err = tdm__valve_snapshot(op->valve[1], e);
    if (err == TDM_OK && op->kind == TDM__JOIN_INTERVAL)
        err = tdm__combiner_snapshot(op->comb, e);
    if (err == TDM_OK)
        err = op->kind == TDM__JOIN_INTERVAL
                  ? tdm__join_interval_snap(op, e, key_group, ud, group_lo, ng)
                  : tdm__join_window_snap(op, e, key_group, ud, group_lo, ng);
    tdm__enc_end(e);
    if (err == TDM_OK && e->oom)
        err = TDM_ERR_NOMEM;
    return err;
}

/* A restore error with the decoder's offset, into the message. */
static tdm_err join_dec_err(tdm_joinop *op, const tdm__dec *d)
{
    size_t off = 0;
    const char *why = "";
    tdm_err err = tdm__dec_error(d, &off, &why);
    if (err == TDM_OK)
        err = TDM_ERR_PARSE;
    return tdm__msgf(&op->msg, err, "join restore: %s at offset %zu",
                     why ? why : "bad input", off);
}

/* Skips a section of tag @p tag (a valve or combiner not taken). */
static bool skip_section(tdm__dec *d, uint64_t tag)
{
    uint64_t t;
    tdm__dec body;
    if (tdm__dec_section(d, &t, &body) != TDM_OK)
        return false;
    if (t != tag) {
        tdm__dec_fail(d, "unexpected section");
        return false;
    }
    return true;
}

tdm_err tdm__joinop_restore(tdm_joinop *op, tdm__dec *d, int group_lo,
                            int group_hi)
{
    uint64_t nfp, nch;
    tdm__dec body;
    tdm_err err = TDM_OK;
    if (!op || !d || group_lo < 0 || group_lo > group_hi)
        return TDM_ERR_INVAL;
    if (op->started && !op->restored)
        return tdm__msgf(&op->msg, TDM_ERR_STATE,
                         "join restore after "
                         "input");
    if (tdm__dec_expect(d, TDM__SNAP_TAG_JOINOP, TDM__SNAP_JOINOP_VERSION,
                        "not a join section", "unknown join version",
                        &body) != TDM_OK)
        return join_dec_err(op, d);
    tdm__dec_uvar(&body, &nfp);
    if (!body.err && nfp != JOIN_N_FP)
        tdm__dec_fail(&body, "join configuration differs");
    int64_t fp[JOIN_N_FP];
    join_fingerprint(op, fp);
    for (int i = 0; !body.err && i < JOIN_N_FP; i++) {
        int64_t v;
        if (tdm__dec_svar(&body, &v) == TDM_OK && v != fp[i])
            tdm__dec_fail(&body, "join configuration differs");
    }
    int64_t wm, c[3];
    uint8_t ended;
    tdm__dec_svar(&body, &wm);
    for (int i = 0; i < 3; i++)
        tdm__dec_svar(&body, &c[i]);
    tdm__dec_u8(&body, &ended);
    tdm__dec_uvar(&body, &nch);
    if (!body.err && (ended > 1 || c[0] < 0 || c[1] < 0 || c[2] < 0))
        tdm__dec_fail(&body, "bad counters");
    if (body.err)
        goto parse;
    bool take = !op->restored && nch == (uint64_t)op->n_channels;
    if (take) {
        if (tdm__valve_restore(op->valve[0], &body) != TDM_OK)
            goto parse;
        if (op->kind == TDM__JOIN_INTERVAL &&
            (tdm__valve_restore(op->valve[1], &body) != TDM_OK ||
             tdm__combiner_restore(op->comb, &body) != TDM_OK))
            goto parse;
    } else {
        if (!skip_section(&body, TDM__SNAP_TAG_VALVE))
            goto parse;
        if (op->kind == TDM__JOIN_INTERVAL &&
            (!skip_section(&body, TDM__SNAP_TAG_VALVE) ||
             !skip_section(&body, TDM__SNAP_TAG_COMBINER)))
            goto parse;
    }
    if (!op->restored) {
        op->wm = wm;
        op->ended = ended != 0;
    } else {
        if (wm < op->wm)
            op->wm = wm;
        op->ended = op->ended && ended;
    }
    op->late_dropped += c[0];
    op->late_emitted += c[1];
    op->bad_records += c[2];
    op->restored++;
    op->started = true;
    while (err == TDM_OK && tdm__dec_left(&body)) {
        uint64_t gtag, group;
        tdm__dec g;
        if (tdm__dec_section(&body, &gtag, &g) != TDM_OK) {
            err = TDM_ERR_PARSE;
            break;
        }
        if (gtag != TDM__SNAP_TAG_JOINOP_GROUP)
            continue;
        if (tdm__dec_uvar(&g, &group) != TDM_OK) {
            tdm__wm_dec_adopt(&body, &g);
            err = TDM_ERR_PARSE;
            break;
        }
        if (group < (uint64_t)group_lo || group > (uint64_t)group_hi)
            continue;
        err = op->kind == TDM__JOIN_INTERVAL
                  ? tdm__join_interval_restore_group(op, &g)
                  : tdm__join_window_restore_group(op, &g);
        if (err == TDM_OK && tdm__dec_done(&g) != TDM_OK)
            err = TDM_ERR_PARSE;
        if (err != TDM_OK)
            tdm__wm_dec_adopt(&body, &g);
    }
    if (op->kind == TDM__JOIN_WINDOW) {
        tdm_err e2 = tdm__join_window_restore_end(op, &body, err == TDM_OK);
        if (err == TDM_OK)
            err = e2;
    }
    if (err == TDM_ERR_PARSE)
        goto parse;
    if (err != TDM_OK)
        return tdm__msgf(&op->msg, err, "join restore: %s", tdm_err_name(err));
    return TDM_OK;
parse:
    if (op->kind == TDM__JOIN_WINDOW)
        (void)tdm__join_window_restore_end(op, &body, false);
    tdm__wm_dec_adopt(d, &body);
    return join_dec_err(op, d);
}
