/* SPDX-License-Identifier: MIT */
/* wm_strategy.c - watermark strategies and the per-partition generator
 * core: bounded out-of-orderness (monotonous = bound 0), punctuated,
 * none and user generators, each optionally wrapped in idleness detection
 * (Flink's WatermarkStrategy, BoundedOutOfOrdernessWatermarks,
 * WatermarksWithIdleness; rules G1-G7 and I1-I5 of
 * watermark-semantics.md).  Also the pausable activity clock idleness
 * is measured on.
 */
#include <stdatomic.h>
#include <string.h>

#include "wm.h"
#include "state/ckpt_codec.h"

/* A custom generator shared between a strategy and its generators. */
struct tdm__wm_custom {
    tdm_wm_generator_methods m;
    void *ud;
    atomic_int refs;
};

/* ---- Pausable activity clocks ---- */

/* Initialises a running clock with no paused time. */
void tdm__pclock_init(tdm__pclock *c, tdm_clock *base,
                      const tdm__pclock *parent)
{
    memset(c, 0, sizeof *c);
    c->base = base;
    c->parent = parent;
}

/* Reads the source: the parent clock, else the base clock. */
static tdm_time_ms pclock_source(const tdm__pclock *c)
{
    return c->parent ? tdm__pclock_now(c->parent) : tdm_clock_now(c->base);
}

/* While paused the reading is frozen at the moment of pausing. */
tdm_time_ms tdm__pclock_now(const tdm__pclock *c)
{
    tdm_time_ms src = c->paused ? c->paused_at : pclock_source(c);
    return tdm__time_sub_sat(src, c->offset);
}

/* Remembers the source reading; later readings stay at it. */
void tdm__pclock_pause(tdm__pclock *c)
{
    if (c->paused)
        return;
    c->paused_at = pclock_source(c);
    c->paused = true;
}

/* Adds the paused stretch to the offset so that the reading continues
 * from where it stopped. */
void tdm__pclock_resume(tdm__pclock *c)
{
    if (!c->paused)
        return;
    tdm_time_ms stretch = tdm__time_sub_sat(pclock_source(c), c->paused_at);
    c->offset = tdm__time_add_sat(c->offset, stretch);
    c->paused = false;
}

/* ---- Custom generator references ---- */

static tdm__wm_custom *custom_ref(tdm__wm_custom *cu)
{
    if (cu)
        atomic_fetch_add(&cu->refs, 1);
    return cu;
}

/* Drops one reference; the last one runs the user's destroy hook. */
static void custom_unref(tdm__wm_custom *cu)
{
    if (!cu || atomic_fetch_sub(&cu->refs, 1) != 1)
        return;
    if (cu->m.destroy)
        cu->m.destroy(cu->ud);
    tdm__free(cu);
}

/* ---- Strategy construction ---- */

/* Allocates a strategy with the defaults every kind shares. */
static tdm_wm_strategy *strategy_alloc(enum tdm__wm_gen_kind kind)
{
    tdm_wm_strategy *s = tdm__calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->kind = kind;
    s->interval = TDM_WM_DEFAULT_INTERVAL_MS;
    return s;
}

/* Creates a built-in strategy (interval 200 ms, no idleness, record
 * timestamps).  INVAL for a NULL out, an unknown kind or a negative bound
 * of a kind that uses one; NOMEM.  Messages name the parameter. */
tdm_err tdm_wm_strategy_new(tdm_wm_kind kind, tdm_time_ms bound_ms,
                            tdm_wm_strategy **out, char *errbuf,
                            size_t errbuf_size)
{
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    enum tdm__wm_gen_kind gk;
    switch (kind) {
    case TDM_WM_NONE:
        gk = TDM__GEN_NONE;
        break;
    case TDM_WM_BOUNDED:
    case TDM_WM_MONOTONOUS:
        gk = TDM__GEN_BOUNDED;
        break;
    case TDM_WM_PUNCTUATED:
        gk = TDM__GEN_PUNCTUATED;
        break;
    default:
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "kind must be a tdm_wm_kind (got %d)", (int)kind);
    }
    /* G2: a negative bound is rejected; other kinds ignore the bound. */
    bool uses_bound = kind == TDM_WM_BOUNDED || kind == TDM_WM_PUNCTUATED;
    if (uses_bound && bound_ms < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "bound_ms must be >= 0 (got %lld)",
                         (long long)bound_ms);
    tdm_wm_strategy *s = strategy_alloc(gk);
    if (!s)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "out of memory creating a watermark strategy");
    s->bound = uses_bound ? bound_ms : 0; /* G3: monotonous = bound 0 */
    *out = s;
    return TDM_OK;
}

/* G2's one exception, for Flink SQL's WATERMARK FOR ts AS ts - INTERVAL
 * 'd': an exact delay, watermark = max - delay, is the bound delay - 1;
 * delay 0 needs bound -1, which tdm_wm_strategy_new refuses.  Only a
 * BOUNDED strategy takes it (the runtime's watermark.delay); the public
 * contract (bound >= 0) is unchanged.  INVAL otherwise. */
tdm_err tdm__wm_strategy_set_delay(struct tdm_wm_strategy *s,
                                   tdm_time_ms delay_ms, char *errbuf,
                                   size_t errbuf_size)
{
    if (!s || s->kind != TDM__GEN_BOUNDED)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "an exact watermark delay needs a bounded strategy");
    if (delay_ms < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "delay_ms must be >= 0 (got %lld)",
                         (long long)delay_ms);
    s->bound = delay_ms - 1;
    return TDM_OK;
}

/* Creates a strategy around user hooks (copied) and @p ud, which is held
 * by reference count until the strategy and its generators are gone.
 * INVAL for NULL methods/out or version != 1; NOMEM (ud not kept). */
tdm_err tdm_wm_strategy_new_custom(const tdm_wm_generator_methods *methods,
                                   void *ud, tdm_wm_strategy **out,
                                   char *errbuf, size_t errbuf_size)
{
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (!methods)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "methods must not be NULL");
    if (methods->version != 1)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "methods->version must be 1 (got %d)",
                         methods->version);
    tdm_wm_strategy *s = strategy_alloc(TDM__GEN_CUSTOM);
    tdm__wm_custom *cu = tdm__calloc(1, sizeof *cu);
    if (!s || !cu)
        goto fail;
    cu->m = *methods;
    cu->ud = ud;
    atomic_init(&cu->refs, 1);
    s->custom = cu;
    *out = s;
    return TDM_OK;

fail:
    /* ud is not ours until success: its destroy hook does not run. */
    tdm__free(cu);
    tdm__free(s);
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                     "out of memory creating a custom watermark strategy");
}

/* ---- Strategy settings ---- */

/* 0 turns periodic emission (and with it idleness) off.  INVAL for a
 * NULL strategy or a negative interval. */
tdm_err tdm_wm_strategy_set_interval(tdm_wm_strategy *s,
                                     tdm_time_ms interval_ms, char *errbuf,
                                     size_t errbuf_size)
{
    if (!s)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "s must not be NULL");
    if (interval_ms < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "interval_ms must be >= 0 (got %lld)",
                         (long long)interval_ms);
    s->interval = interval_ms;
    return TDM_OK;
}

/* Accepted for every kind; only BOUNDED (and MONOTONOUS) look at it:
 * punctuated generators emit on events anyway, custom ones decide. */
tdm_err tdm_wm_strategy_set_emit_on_event(tdm_wm_strategy *s, int on_event)
{
    if (!s)
        return TDM_ERR_INVAL;
    s->emit_on_event = on_event != 0;
    return TDM_OK;
}

/* Wraps future generators in idleness detection.  INVAL for a NULL
 * strategy or a timeout <= 0. */
tdm_err tdm_wm_strategy_set_idle_timeout(tdm_wm_strategy *s,
                                         tdm_time_ms timeout_ms, char *errbuf,
                                         size_t errbuf_size)
{
    if (!s)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "s must not be NULL");
    /* G7: withIdleness rejects a zero or negative timeout. */
    if (timeout_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "timeout_ms must be > 0 (got %lld)",
                         (long long)timeout_ms);
    s->idle_timeout = timeout_ms;
    return TDM_OK;
}

/* F1: the fallback watermark is a reader-level schedule (reader.c);
 * a lag of 0 is allowed (the watermark follows processing time). */
tdm_err tdm_wm_strategy_set_fallback(tdm_wm_strategy *s, tdm_time_ms lag_ms,
                                     tdm_time_ms interval_ms, char *errbuf,
                                     size_t errbuf_size)
{
    if (!s)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "s must not be NULL");
    if (lag_ms < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "lag_ms must be >= 0 (got %lld)", (long long)lag_ms);
    if (interval_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "interval_ms must be > 0 (got %lld)",
                         (long long)interval_ms);
    s->fb_lag = lag_ms;
    s->fb_interval = interval_ms;
    return TDM_OK;
}

/* A NULL @p fn restores the default (the record's own timestamp). */
tdm_err tdm_wm_strategy_set_timestamp_assigner(tdm_wm_strategy *s,
                                               tdm_timestamp_fn fn, void *ud)
{
    if (!s)
        return TDM_ERR_INVAL;
    s->ts_fn = fn;
    s->ts_ud = fn ? ud : NULL;
    return TDM_OK;
}

/* A NULL @p fn means that no record is a marker. */
tdm_err tdm_wm_strategy_set_marker(tdm_wm_strategy *s, tdm_marker_fn fn,
                                   void *ud)
{
    if (!s)
        return TDM_ERR_INVAL;
    s->marker_fn = fn;
    s->marker_ud = fn ? ud : NULL;
    return TDM_OK;
}

/* Generators hold their own reference on a custom generator, so the user
 * data outlives the strategy while any of them is alive. */
void tdm_wm_strategy_destroy(tdm_wm_strategy *s)
{
    if (!s)
        return;
    custom_unref(s->custom);
    tdm__free(s);
}

/* A value copy that shares the custom generator (one more reference). */
void tdm__wm_strategy_copy(struct tdm_wm_strategy *dst,
                           const struct tdm_wm_strategy *src)
{
    *dst = *src;
    dst->custom = custom_ref(src->custom);
}

/* Drops the copy's custom reference. */
void tdm__wm_strategy_release(struct tdm_wm_strategy *s)
{
    custom_unref(s->custom);
    s->custom = NULL;
}

/* ---- Generator core ---- */

/* Where a BOUNDED maximum starts: MIN + bound + 1 (saturating), so that
 * its first value, max - bound - 1, is exactly TDM_TIME_MIN and nothing
 * underflows (G2); bound -1 (an exact delay of 0) starts at MIN. */
static tdm_time_ms bounded_start(tdm_time_ms bound)
{
    if (bound < 0)
        return TDM_TIME_MIN;
    return tdm__time_add_sat(tdm__time_add_sat(TDM_TIME_MIN, bound), 1);
}

/* Sets up the generator state (BOUNDED: the maximum at bounded_start;
 * record timestamps below it never move it). */
tdm_err tdm__wm_core_init(tdm__wm_core *c, const struct tdm_wm_strategy *s,
                          const tdm__pclock *clock)
{
    memset(c, 0, sizeof *c);
    c->kind = s->kind;
    c->emit_on_event = s->emit_on_event;
    c->bound = s->bound;
    c->max_ts = bounded_start(s->bound);
    c->marker_fn = s->marker_fn;
    c->marker_ud = s->marker_ud;
    c->idle_timeout = s->idle_timeout;
    c->clock = clock;
    if (s->kind == TDM__GEN_CUSTOM && s->custom) {
        size_t n = s->custom->m.state_size;
        if (n > 0) {
            c->state = tdm__calloc(1, n);
            if (!c->state) {
                memset(c, 0, sizeof *c);
                return TDM_ERR_NOMEM;
            }
        }
        c->custom = custom_ref(s->custom);
    }
    return TDM_OK;
}

/* Frees the custom state and drops the reference (last one runs the
 * user's destroy hook). */
void tdm__wm_core_fini(tdm__wm_core *c)
{
    tdm__free(c->state);
    c->state = NULL;
    custom_unref(c->custom);
    c->custom = NULL;
}

/* Everything but the periodic bounded case (which is inline in wm.h). */
void tdm__wm_core_on_event_slow(tdm__wm_core *c, const tdm_record *rec,
                                tdm_wm_output *out)
{
    switch (c->kind) {
    case TDM__GEN_BOUNDED:
        /* On-event emission: every record offers max - bound - 1; an
         * emitter downstream drops values that do not advance. */
        if (rec->ts > c->max_ts)
            c->max_ts = rec->ts;
        out->emit(out->ctx, tdm__wm_core_bounded_value(c));
        break;
    case TDM__GEN_PUNCTUATED:
        /* G5: a marker emits its own timestamp minus the bound, no -1. */
        if (c->marker_fn && c->marker_fn(c->marker_ud, rec))
            out->emit(out->ctx, tdm__time_sub_sat(rec->ts, c->bound));
        break;
    case TDM__GEN_CUSTOM:
        if (c->custom && c->custom->m.on_event)
            c->custom->m.on_event(c->custom->ud, c->state, rec, out);
        break;
    case TDM__GEN_NONE:
    default:
        break; /* G4: no watermarks */
    }
}

/* The IdlenessTimer check (I1).  Activity since the previous check resets
 * the countdown; the first silent check starts it (a separate flag, so a
 * clock reading of 0 is a valid start); later checks are idle once
 * strictly more than the timeout has passed. */
static bool idleness_check(tdm__wm_core *c)
{
    if (c->activity != c->activity_seen) {
        c->activity_seen = c->activity;
        c->countdown = false;
        return false;
    }
    tdm_time_ms now = tdm__pclock_now(c->clock);
    if (!c->countdown) {
        c->countdown = true;
        c->countdown_start = now;
        return false;
    }
    return tdm__time_sub_sat(now, c->countdown_start) > c->idle_timeout;
}

/* Idle: mark the output idle once and skip the wrapped generator (I1, I3).
 * Not idle: the wrapped generator emits its usual value, possibly a
 * repeat (G6); the output de-duplicates. */
void tdm__wm_core_periodic(tdm__wm_core *c, tdm_wm_output *out)
{
    if (c->idle_timeout > 0 && idleness_check(c)) {
        if (!c->idle_now) {
            c->idle_now = true;
            out->set_idle(out->ctx, true);
        }
        return;
    }
    switch (c->kind) {
    case TDM__GEN_BOUNDED:
        if (!c->emit_on_event)
            out->emit(out->ctx, tdm__wm_core_bounded_value(c));
        break;
    case TDM__GEN_CUSTOM:
        if (c->custom && c->custom->m.on_periodic_emit)
            c->custom->m.on_periodic_emit(c->custom->ud, c->state, out);
        break;
    case TDM__GEN_PUNCTUATED:
    case TDM__GEN_NONE:
    default:
        break;
    }
}

/* ---- Checkpoints ---- */

/* Copies the body's first error to the outer decoder (see wm.h). */
void tdm__wm_dec_adopt(struct tdm__dec *d, const struct tdm__dec *body)
{
    if (d->err != TDM_OK || body->err == TDM_OK)
        return;
    d->err = body->err;
    d->err_off = body->err_off;
    d->why = body->why;
}

enum { CORE_COUNTDOWN = 1, CORE_IDLE = 2, CORE_ACTIVITY = 4 };

/* kind u8, max_ts svar, flags u8, countdown run svar (docs). */
tdm_err tdm__wm_core_snapshot(const tdm__wm_core *c, struct tdm__enc *e)
{
    if (c->kind == TDM__GEN_CUSTOM)
        return TDM_ERR_UNSUPPORTED;
    uint8_t flags =
        (uint8_t)((c->countdown ? CORE_COUNTDOWN : 0) |
                  (c->idle_now ? CORE_IDLE : 0) |
                  (c->activity != c->activity_seen ? CORE_ACTIVITY : 0));
    tdm_time_ms run = 0;
    if (c->countdown && c->clock)
        run = tdm__time_sub_sat(tdm__pclock_now(c->clock), c->countdown_start);
    tdm__enc_u8(e, (uint8_t)c->kind);
    tdm__enc_svar(e, c->max_ts);
    tdm__enc_u8(e, flags);
    tdm__enc_svar(e, run < 0 ? 0 : run);
    return TDM_OK;
}

/* The countdown resumes with the time it had run, on the activity clock
 * read now (the restore moment). */
tdm_err tdm__wm_core_restore(tdm__wm_core *c, struct tdm__dec *d)
{
    uint8_t kind, flags;
    int64_t max_ts, run;

    tdm__dec_u8(d, &kind);
    tdm__dec_svar(d, &max_ts);
    tdm__dec_u8(d, &flags);
    if (tdm__dec_svar(d, &run) != TDM_OK)
        return TDM_ERR_PARSE;
    if (kind != (uint8_t)c->kind)
        return tdm__dec_fail(d, "watermark generator kind differs");
    if (flags & ~(CORE_COUNTDOWN | CORE_IDLE | CORE_ACTIVITY))
        return tdm__dec_fail(d, "unknown generator flags");
    if (run < 0)
        return tdm__dec_fail(d, "negative idleness countdown");
    tdm_time_ms start = bounded_start(c->bound);
    c->max_ts = max_ts > start ? max_ts : start;
    c->idle_now = (flags & CORE_IDLE) != 0;
    c->activity_seen = 0;
    c->activity = (flags & CORE_ACTIVITY) ? 1 : 0;
    c->countdown = (flags & CORE_COUNTDOWN) != 0;
    c->countdown_start = 0;
    if (c->countdown && c->clock)
        c->countdown_start = tdm__time_sub_sat(tdm__pclock_now(c->clock), run);
    return TDM_OK;
}
