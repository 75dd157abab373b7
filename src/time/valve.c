/* SPDX-License-Identifier: MIT */
/* valve.c - the watermark of one logical input with several channels:
 * Flink's StatusWatermarkValve in its newest form (rules V1-V8): minimum
 * over active, aligned channels, an unconditional flush of the maximum
 * when the last channel goes idle, and a recompute when a channel comes
 * back already caught up.  The output never moves backwards.
 *
 * A timeline with three channels (time flows down; "un" = unaligned):
 *
 *   input           ch0      ch1      ch2      emitted   why
 *   (start)         MIN      MIN      MIN      -         V1: all active
 *   ch0 10, ch1 20  10       20       MIN      -         ch2 silent: the
 *                                                        min stays MIN
 *   ch2 25          10       20       25       10        min of all three
 *   ch0 30          30       20       25       20
 *   ch1 idle        30       idle     25       25        ch1 leaves the min
 *   ch0 idle        idle     idle     25       -         ch2 still active
 *   ch1 active      idle     20 un    25       -         20 < 25: outside
 *   ch0 active      30       20 un    25       -         30 >= 25: aligned
 *   ch1 35          30       35       25       -         caught up: aligned
 *   ch2 idle        30       35       idle     30        min(30, 35)
 *   ch1 idle        30       idle     idle     -         35 != 30: no change
 *   ch0 idle        idle     idle     idle     35, IDLE  all idle: flush the
 *                                                        max over ALL, IDLE
 *   ch2 active      idle     idle     25 un    ACTIVE    never backwards
 *
 * Per channel:  wm (only rises), idle flag, aligned flag.
 *   aligned  = active and counted in the minimum;
 *   unaligned active channels record watermarks but do not count until
 *   their watermark reaches the output (then they join the minimum).
 * The minimum is an O(n) scan: the valve runs per watermark, not per
 * record.
 */
#include "wm.h"
#include "state/ckpt_codec.h"

typedef struct valve_channel {
    tdm_time_ms wm; /* last watermark received, TDM_TIME_MIN at start */
    bool idle;
    bool aligned; /* counted in the minimum (implies active) */
} valve_channel;

struct tdm_valve {
    int n;
    valve_channel *ch;
    tdm_time_ms out; /* last output watermark */
    bool out_idle;   /* last output status */
    tdm__sink sink;
};

/* ---- Helpers ---- */

/* V3: emits the minimum over aligned channels if it is above the output.
 * With no aligned channel nothing is emitted (in particular not MAX). */
static void output_new_min(tdm_valve *v)
{
    bool any = false;
    tdm_time_ms min = TDM_TIME_MAX;
    for (int i = 0; i < v->n; i++) {
        if (v->ch[i].aligned) {
            any = true;
            if (v->ch[i].wm < min)
                min = v->ch[i].wm;
        }
    }
    if (any && min > v->out) {
        v->out = min;
        tdm__emit_watermark(&v->sink, min);
    }
}

/* V4 (newest): when everything is idle, flush the maximum over all
 * channels, so that the result does not depend on the order in which they
 * went idle. */
static void output_max(tdm_valve *v)
{
    tdm_time_ms max = TDM_TIME_MIN;
    for (int i = 0; i < v->n; i++)
        if (v->ch[i].wm > max)
            max = v->ch[i].wm;
    if (max > v->out) {
        v->out = max;
        tdm__emit_watermark(&v->sink, max);
    }
}

static bool any_active(const tdm_valve *v)
{
    for (int i = 0; i < v->n; i++)
        if (!v->ch[i].idle)
            return true;
    return false;
}

/* ---- Lifecycle ---- */

/* Creates a valve over @p n_channels (>= 1) channels; @p emit may be
 * NULL (nothing is delivered).  INVAL, NOMEM. */
tdm_err tdm_valve_new(int n_channels, tdm_emit_cb emit, void *opaque,
                      tdm_valve **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = NULL;
    if (n_channels < 1)
        return TDM_ERR_INVAL;
    tdm_valve *v = tdm__calloc(1, sizeof *v);
    if (!v)
        return TDM_ERR_NOMEM;
    v->ch = tdm__calloc((size_t)n_channels, sizeof *v->ch);
    if (!v->ch)
        goto fail;
    /* V1: every channel active, at MIN, aligned; output MIN, active. */
    v->n = n_channels;
    for (int i = 0; i < n_channels; i++) {
        v->ch[i].wm = TDM_TIME_MIN;
        v->ch[i].aligned = true;
    }
    v->out = TDM_TIME_MIN;
    v->sink.fn = emit;
    v->sink.opaque = opaque;
    *out = v;
    return TDM_OK;

fail:
    tdm_valve_destroy(v);
    return TDM_ERR_NOMEM;
}

/* Releases the valve; NULL and half-built valves are fine. */
void tdm_valve_destroy(tdm_valve *v)
{
    if (!v)
        return;
    tdm__free(v->ch);
    tdm__free(v);
}

/* ---- Inputs ---- */

/* V2: ignored on an idle channel (hence also on an idle valve) and when
 * it does not advance the channel.  An unaligned channel joins the
 * minimum once it reaches the output. */
tdm_err tdm_valve_watermark(tdm_valve *v, int ch, tdm_time_ms wm)
{
    if (!v)
        return TDM_ERR_INVAL;
    if (ch < 0 || ch >= v->n)
        return TDM_ERR_CHANNEL;
    valve_channel *c = &v->ch[ch];
    if (v->out_idle || c->idle || wm <= c->wm)
        return TDM_OK;
    c->wm = wm;
    if (!c->aligned && wm >= v->out)
        c->aligned = true;
    output_new_min(v);
    return TDM_OK;
}

/* V4/V5/V6: only real toggles count.  Going idle leaves the minimum; the
 * last channel going idle flushes the maximum and makes the valve idle.
 * Coming back, a channel is aligned only if it has not fallen behind the
 * output; the valve says ACTIVE if it was idle and (newest) recomputes
 * the minimum, which matters when the returning channel is the only
 * aligned one. */
tdm_err tdm_valve_status(tdm_valve *v, int ch, int idle)
{
    if (!v)
        return TDM_ERR_INVAL;
    if (ch < 0 || ch >= v->n)
        return TDM_ERR_CHANNEL;
    valve_channel *c = &v->ch[ch];
    if (idle && !c->idle) {
        c->idle = true;
        c->aligned = false;
        if (!any_active(v)) {
            output_max(v);
            v->out_idle = true;
            tdm__emit_status(&v->sink, 1);
        } else if (c->wm == v->out) {
            /* It may have been holding the minimum. */
            output_new_min(v);
        }
    } else if (!idle && c->idle) {
        c->idle = false;
        if (c->wm >= v->out)
            c->aligned = true;
        if (v->out_idle) {
            v->out_idle = false;
            tdm__emit_status(&v->sink, 0);
        }
        if (c->aligned)
            output_new_min(v);
    }
    return TDM_OK;
}

/* End of input on every channel at once: no intermediate minimum can
 * appear, whatever order channels would reach MAX in. */
tdm_err tdm_valve_end(tdm_valve *v)
{
    if (!v)
        return TDM_ERR_INVAL;
    for (int i = 0; i < v->n; i++) {
        v->ch[i].wm = TDM_TIME_MAX;
        v->ch[i].idle = false;
        v->ch[i].aligned = true;
    }
    if (v->out_idle) {
        v->out_idle = false;
        tdm__emit_status(&v->sink, 0);
    }
    if (v->out < TDM_TIME_MAX) {
        v->out = TDM_TIME_MAX;
        tdm__emit_watermark(&v->sink, TDM_TIME_MAX);
    }
    return TDM_OK;
}

/* ---- Introspection ---- */

/* The last output watermark (TDM_TIME_MIN before any). */
tdm_time_ms tdm_valve_watermark_out(const tdm_valve *v)
{
    return v ? v->out : TDM_TIME_MIN;
}

/* Channel @p ch's last accepted watermark; MIN for a bad index. */
tdm_time_ms tdm_valve_channel_watermark(const tdm_valve *v, int ch)
{
    if (!v || ch < 0 || ch >= v->n)
        return TDM_TIME_MIN;
    return v->ch[ch].wm;
}

/* 1 idle, 0 active, -1 for a bad index. */
int tdm_valve_channel_is_idle(const tdm_valve *v, int ch)
{
    if (!v || ch < 0 || ch >= v->n)
        return -1;
    return v->ch[ch].idle ? 1 : 0;
}

/* 1 after IDLE went out and until ACTIVE does. */
int tdm_valve_is_idle(const tdm_valve *v)
{
    return v && v->out_idle ? 1 : 0;
}

/* ---- Checkpoints ---- */

/* Section VALVE: version, count (uvar), per channel wm (svar) and flags
 * (u8: 1 idle, 2 aligned), then the output (svar) and its idle flag (u8). */
tdm_err tdm__valve_snapshot(const tdm_valve *v, struct tdm__enc *e)
{
    if (!v || !e)
        return TDM_ERR_INVAL;
    tdm__enc_begin(e, TDM__SNAP_TAG_VALVE);
    tdm__enc_uvar(e, TDM__SNAP_WM_VERSION);
    tdm__enc_uvar(e, (uint64_t)v->n);
    for (int i = 0; i < v->n; i++) {
        tdm__enc_svar(e, v->ch[i].wm);
        tdm__enc_u8(
            e, (uint8_t)((v->ch[i].idle ? 1 : 0) | (v->ch[i].aligned ? 2 : 0)));
    }
    tdm__enc_svar(e, v->out);
    tdm__enc_u8(e, v->out_idle ? 1 : 0);
    tdm__enc_end(e);
    return e->oom ? TDM_ERR_NOMEM : TDM_OK;
}

/* Restores into a fresh object with the same channel count; nothing is
 * emitted (downstream restores its own state). */
tdm_err tdm__valve_restore(tdm_valve *v, struct tdm__dec *d)
{
    uint64_t version, n; /* version: the second pass skips it */
    tdm__dec body;

    if (!v || !d)
        return TDM_ERR_INVAL;
    if (tdm__dec_expect(d, TDM__SNAP_TAG_VALVE, TDM__SNAP_WM_VERSION,
                        "not a valve section", "unknown valve version",
                        &body) != TDM_OK)
        return TDM_ERR_PARSE;
    tdm__dec_uvar(&body, &n);
    if (!body.err && n != (uint64_t)v->n)
        tdm__dec_fail(&body, "channel count differs");
    /* Validate everything first: a bad blob leaves v as it was. */
    for (int i = 0; !body.err && i < v->n; i++) {
        int64_t wm;
        uint8_t flags;
        tdm__dec_svar(&body, &wm);
        if (tdm__dec_u8(&body, &flags) != TDM_OK)
            break;
        if ((flags & ~3) || flags == 3) { /* aligned implies active */
            tdm__dec_fail(&body, "bad channel flags");
            break;
        }
    }
    int64_t out;
    uint8_t out_idle;
    tdm__dec_svar(&body, &out);
    tdm__dec_u8(&body, &out_idle);
    if (!body.err && out_idle > 1)
        tdm__dec_fail(&body, "bad idle flag");
    if (body.err) {
        tdm__wm_dec_adopt(d, &body);
        return TDM_ERR_PARSE;
    }
    /* Second pass over the now validated bytes. */
    tdm__dec again;
    tdm__dec_init(&again, body.p, body.len);
    tdm__dec_uvar(&again, &version);
    tdm__dec_uvar(&again, &n);
    for (int i = 0; i < v->n; i++) {
        int64_t wm;
        uint8_t flags;
        tdm__dec_svar(&again, &wm);
        tdm__dec_u8(&again, &flags);
        v->ch[i].wm = wm;
        v->ch[i].idle = (flags & 1) != 0;
        v->ch[i].aligned = (flags & 2) != 0;
    }
    v->out = out;
    v->out_idle = out_idle != 0;
    return TDM_OK;
}
