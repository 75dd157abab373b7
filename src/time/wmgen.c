/* SPDX-License-Identifier: MIT */
/* wmgen.c - one channel's watermark generator, Flink's
 * TimestampsAndWatermarksOperator (rules T1-T7): timestamp assigner,
 * generator core with idleness, periodic schedule, de-duplicating emitter.
 * Invariant: what leaves a channel strictly increases, and an idle channel
 * says ACTIVE only right before its next advancing watermark (or when user
 * code marks it active).
 */
#include "wm.h"
#include "state/ckpt_codec.h"
#include "testhooks.h"

struct tdm_wmgen {
    tdm__wm_core core;
    tdm__pclock clock; /* idleness clock: the processing clock itself */
    tdm_timestamp_fn ts_fn;
    void *ts_ud;
    tdm_time_ms interval; /* 0: no periodic emission */
    tdm_time_ms next_due; /* next periodic emission (processing time) */
    tdm__sink sink;
    tdm_time_ms last; /* emitter: last watermark sent, MIN if none */
    bool idle;        /* emitter: IDLE announced and not revoked */
    bool ended;
    tdm_wm_output out; /* the emitter, as generators see it */
};

/* ---- Public tdm_wm_output functions ---- */

/* Custom generators' output: forwards to the owner's hook (the emitter
 * of a channel, or a split's partial output in a reader). */
void tdm_wm_output_emit(tdm_wm_output *out, tdm_time_ms wm)
{
    if (out)
        out->emit(out->ctx, wm);
}

/* Marks the output idle through the owner's hook. */
void tdm_wm_output_mark_idle(tdm_wm_output *out)
{
    if (out)
        out->set_idle(out->ctx, true);
}

/* Marks the output active through the owner's hook. */
void tdm_wm_output_mark_active(tdm_wm_output *out)
{
    if (out)
        out->set_idle(out->ctx, false);
}

/* ---- The emitter (T3) ---- */

/* Sends @p wm if it advances; a channel announced idle first says
 * ACTIVE.  A value <= the last one sent is dropped silently. */
static void emitter_emit(void *ctx, tdm_time_ms wm)
{
    struct tdm_wmgen *g = ctx;
    if (g->ended || wm <= g->last)
        return;
    g->last = wm;
    if (g->idle) {
        g->idle = false;
        tdm__emit_status(&g->sink, 0);
    }
    tdm__emit_watermark(&g->sink, wm);
}

/* IDLE goes out once; ACTIVE only if IDLE was announced. */
static void emitter_set_idle(void *ctx, bool idle)
{
    struct tdm_wmgen *g = ctx;
    if (g->ended || g->idle == idle)
        return;
    g->idle = idle;
    tdm__emit_status(&g->sink, idle ? 1 : 0);
}

/* ---- Lifecycle ---- */

/* Instantiates @p s for one channel over @p clk (kept by reference).
 * INVAL for a NULL s, clk, emit or out; NOMEM (custom state). */
tdm_err tdm_wmgen_new(const tdm_wm_strategy *s, tdm_clock *clk,
                      tdm_emit_cb emit, void *opaque, tdm_wmgen **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = NULL;
    if (!s || !clk || !emit)
        return TDM_ERR_INVAL;
    /* F1: the fallback is a reader's; refused, not ignored. */
    if (s->fb_interval > 0)
        return TDM_ERR_INVAL;
    struct tdm_wmgen *g = tdm__calloc(1, sizeof *g);
    if (!g)
        return TDM_ERR_NOMEM;
    tdm__pclock_init(&g->clock, clk, NULL);
    tdm_err err = tdm__wm_core_init(&g->core, s, &g->clock);
    if (err != TDM_OK)
        goto fail;
    g->ts_fn = s->ts_fn;
    g->ts_ud = s->ts_ud;
    g->interval = s->interval;
    /* T2: the first periodic emission is due one interval after
     * creation (Flink's open()). */
    g->next_due = tdm__time_add_sat(tdm_clock_now(clk), s->interval);
    g->sink.fn = emit;
    g->sink.opaque = opaque;
    g->last = TDM_TIME_MIN;
    g->out.emit = emitter_emit;
    g->out.set_idle = emitter_set_idle;
    g->out.ctx = g;
    *out = g;
    return TDM_OK;

fail:
    tdm_wmgen_destroy(g);
    return err;
}

/* Releases the generator (and its reference on a custom generator);
 * NULL is a no-op. */
void tdm_wmgen_destroy(tdm_wmgen *gen)
{
    if (!gen)
        return;
    tdm__wm_core_fini(&gen->core);
    tdm__free(gen);
}

/* ---- Records ---- */

/* Runs the copied timestamp assigner, stores the result in the record
 * and returns it; TDM_TIME_MIN for NULL arguments or no timestamp. */
tdm_time_ms tdm_wmgen_assign(tdm_wmgen *gen, tdm_record *rec)
{
    if (!gen || !rec)
        return TDM_TIME_MIN;
    if (gen->ts_fn)
        rec->ts = gen->ts_fn(gen->ts_ud, rec);
    return rec->ts;
}

/* T4: the caller forwarded the record already, so an on-event watermark
 * follows the record that caused it.  A record without timestamp is
 * ignored entirely (it is not even activity for idleness). */
tdm_err tdm_wmgen_on_event(tdm_wmgen *gen, const tdm_record *rec)
{
    if (!gen || !rec)
        return TDM_ERR_INVAL;
    if (gen->ended)
        return TDM_ERR_STATE;
    if (rec->ts == TDM_TIME_MIN)
        return TDM_ERR_NO_TIMESTAMP;
    tdm__wm_core_on_event(&gen->core, rec, &gen->out);
    return TDM_OK;
}

/* ---- Periodic emission (T1, T2) ---- */

/* One emission per call at most: a clock that jumped over several
 * intervals fires once, and the next emission is due one interval after
 * the time the emission ran (Flink's chain), not on a fixed grid. */
tdm_err tdm_wmgen_advance(tdm_wmgen *gen)
{
    if (!gen)
        return TDM_ERR_INVAL;
    if (gen->ended)
        return TDM_ERR_STATE;
    if (gen->interval <= 0)
        return TDM_OK;
    tdm_time_ms now = tdm_clock_now(gen->clock.base);
    if (now < gen->next_due)
        return TDM_OK;
    tdm__wm_core_periodic(&gen->core, &gen->out);
    gen->next_due = tdm__time_add_sat(now, gen->interval);
    return TDM_OK;
}

/* ---- End of input (T5, T6) ---- */

/* MAX goes through the emitter, so ACTIVE precedes it on an idle channel.
 * Flink's final periodic call after MAX can only produce values below MAX
 * (dropped), so it is not made; the pending generator value is thus never
 * flushed. */
tdm_err tdm_wmgen_end(tdm_wmgen *gen)
{
    if (!gen)
        return TDM_ERR_INVAL;
    if (gen->ended)
        return TDM_ERR_STATE;
    emitter_emit(gen, TDM_TIME_MAX);
    gen->ended = true;
    return TDM_OK;
}

/* ---- Introspection ---- */

/* The last watermark sent (MIN before any, MAX after end). */
tdm_time_ms tdm_wmgen_watermark(const tdm_wmgen *gen)
{
    return gen ? gen->last : TDM_TIME_MIN;
}

/* 1 while IDLE is announced and not yet revoked by ACTIVE. */
int tdm_wmgen_is_idle(const tdm_wmgen *gen)
{
    return gen && gen->idle ? 1 : 0;
}

/* ---- Checkpoints ---- */

enum { GEN_IDLE = 1, GEN_ENDED = 2 };

/* Time left before @p due on @p clk, within [0, interval]. */
static tdm_time_ms time_left(tdm_clock *clk, tdm_time_ms due,
                             tdm_time_ms interval)
{
    tdm_time_ms left = tdm__time_sub_sat(due, tdm_clock_now(clk));
    if (left < 0)
        return 0;
    return left > interval ? interval : left;
}

/* Section WMGEN: version, last svar, flags u8, time to the next periodic
 * emission svar, then the core. */
tdm_err tdm__wmgen_snapshot(const tdm_wmgen *gen, struct tdm__enc *e)
{
    if (!gen || !e)
        return TDM_ERR_INVAL;
    if (gen->core.kind == TDM__GEN_CUSTOM)
        return TDM_ERR_UNSUPPORTED;
    tdm__enc_begin(e, TDM__SNAP_TAG_WMGEN);
    tdm__enc_uvar(e, TDM__SNAP_WM_VERSION);
    tdm__enc_svar(e, gen->last);
    tdm__enc_u8(e, (uint8_t)((gen->idle ? GEN_IDLE : 0) |
                             (gen->ended ? GEN_ENDED : 0)));
    tdm__enc_svar(e, gen->interval > 0 ? time_left(gen->clock.base,
                                                   gen->next_due, gen->interval)
                                       : 0);
    tdm_err err = tdm__wm_core_snapshot(&gen->core, e);
    tdm__enc_end(e);
    if (err == TDM_OK && e->oom)
        err = TDM_ERR_NOMEM;
    return err;
}

/* Restores into a fresh generator of the same strategy; the next
 * periodic emission is due after the time it had left. */
tdm_err tdm__wmgen_restore(tdm_wmgen *gen, struct tdm__dec *d)
{
    tdm__dec body;
    int64_t last, left;
    uint8_t flags;

    if (!gen || !d)
        return TDM_ERR_INVAL;
    if (tdm__dec_expect(d, TDM__SNAP_TAG_WMGEN, TDM__SNAP_WM_VERSION,
                        "not a watermark generator section",
                        "unknown watermark generator version", &body) != TDM_OK)
        return TDM_ERR_PARSE;
    tdm__dec_svar(&body, &last);
    tdm__dec_u8(&body, &flags);
    tdm__dec_svar(&body, &left);
    if (!body.err && (flags & ~(GEN_IDLE | GEN_ENDED)))
        tdm__dec_fail(&body, "unknown generator flags");
    if (!body.err && left < 0)
        tdm__dec_fail(&body, "periodic delay out of range");
    if (!body.err && (flags & GEN_ENDED) && last != TDM_TIME_MAX)
        tdm__dec_fail(&body, "ended generator below MAX");
    if (!body.err)
        tdm__wm_core_restore(&gen->core, &body);
    if (body.err) {
        tdm__wm_dec_adopt(d, &body);
        return TDM_ERR_PARSE;
    }
    gen->last = last;
    gen->idle = (flags & GEN_IDLE) != 0;
    gen->ended = (flags & GEN_ENDED) != 0;
    if (left > gen->interval) /* a changed interval caps it */
        left = gen->interval;
    gen->next_due = tdm__time_add_sat(tdm_clock_now(gen->clock.base), left);
    return TDM_OK;
}
