/* SPDX-License-Identifier: MIT */
/* trigger.c - window triggers: the built-in ones of Flink (event time,
 * processing time, count, continuous event time, purging, never), user
 * triggers, and the trigger context they see (rulebook R6).
 *
 * Built-ins are dispatched with a switch; their timers go through
 * tdm__win_timer_add/_del so that the window slot's timer flags stay in
 * step and the operator's common path can skip the timer queue.
 */
#include "window/win.h"

/* ---- Construction ---- */

static tdm_err new_trigger(tdm__trg_kind kind, tdm_trigger **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    tdm_trigger *t = tdm__calloc(1, sizeof *t);
    *out = t;
    if (!t)
        return TDM_ERR_NOMEM;
    t->kind = kind;
    return TDM_OK;
}

/* EventTimeTrigger.  Returns TDM_OK, TDM_ERR_INVAL (NULL out),
 * TDM_ERR_NOMEM. */
tdm_err tdm_trigger_new_event_time(tdm_trigger **out)
{
    return new_trigger(TDM__TRG_EVENT_TIME, out);
}

/* ProcessingTimeTrigger.  Returns TDM_OK, TDM_ERR_INVAL,
 * TDM_ERR_NOMEM. */
tdm_err tdm_trigger_new_processing_time(tdm_trigger **out)
{
    return new_trigger(TDM__TRG_PROC_TIME, out);
}

/* The global window's NeverTrigger.  Returns TDM_OK,
 * TDM_ERR_INVAL, TDM_ERR_NOMEM. */
tdm_err tdm_trigger_new_never(tdm_trigger **out)
{
    return new_trigger(TDM__TRG_NEVER, out);
}

/* CountTrigger(count).  Returns TDM_OK, TDM_ERR_INVAL naming
 * count, TDM_ERR_NOMEM. */
tdm_err tdm_trigger_new_count(int64_t count, tdm_trigger **out, char *errbuf,
                              size_t errbuf_size)
{
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (count <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "count must be > 0 (got %lld)", (long long)count);
    tdm_err err = new_trigger(TDM__TRG_COUNT, out);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "out of memory creating a count trigger");
    (*out)->count = count;
    return TDM_OK;
}

/* ContinuousEventTimeTrigger(interval).  Returns TDM_OK,
 * TDM_ERR_INVAL naming interval_ms, TDM_ERR_NOMEM. */
tdm_err tdm_trigger_new_continuous_event_time(tdm_time_ms interval_ms,
                                              tdm_trigger **out, char *errbuf,
                                              size_t errbuf_size)
{
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (interval_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "interval_ms must be > 0 (got %lld)",
                         (long long)interval_ms);
    tdm_err err = new_trigger(TDM__TRG_CONTINUOUS, out);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "out of memory creating a continuous trigger");
    (*out)->interval = interval_ms;
    return TDM_OK;
}

/* PurgingTrigger(inner); owns @p inner in every case.  Returns
 * TDM_OK, TDM_ERR_INVAL (NULL inner or out), TDM_ERR_NOMEM. */
tdm_err tdm_trigger_new_purging(tdm_trigger *inner, tdm_trigger **out)
{
    if (!out || !inner) {
        tdm_trigger_destroy(inner); /* takes ownership, always */
        if (out)
            *out = NULL;
        return TDM_ERR_INVAL;
    }
    tdm_err err = new_trigger(TDM__TRG_PURGING, out);
    if (err != TDM_OK) {
        tdm_trigger_destroy(inner);
        return err;
    }
    (*out)->inner = inner;
    return TDM_OK;
}

/* A user trigger; copies @p methods.  Returns TDM_OK,
 * TDM_ERR_INVAL naming the bad field, TDM_ERR_NOMEM. */
tdm_err tdm_trigger_new_custom(const tdm_trigger_methods *methods, void *ud,
                               tdm_trigger **out, char *errbuf,
                               size_t errbuf_size)
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
    if (!methods->on_element)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "methods->on_element must not be NULL");
    tdm_err err = new_trigger(TDM__TRG_CUSTOM, out);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "out of memory creating a custom trigger");
    (*out)->m = *methods;
    (*out)->ud = ud;
    return TDM_OK;
}

/* Frees a trigger, its inner trigger and user data; NULL is a
 * no-op. */
void tdm_trigger_destroy(tdm_trigger *t)
{
    if (!t)
        return;
    if (t->kind == TDM__TRG_PURGING)
        tdm_trigger_destroy(t->inner);
    if (t->kind == TDM__TRG_CUSTOM && t->m.destroy)
        t->m.destroy(t->ud);
    tdm__free(t);
}

/* ---- The trigger context ---- */

/* The window start (TDM_TIME_MIN for the global window). */
tdm_time_ms tdm_trigger_ctx_window_start(const tdm_trigger_ctx *ctx)
{
    return ctx->op->global ? TDM_TIME_MIN : ctx->start;
}

/* The window end (TDM_TIME_MAX for the global window). */
tdm_time_ms tdm_trigger_ctx_window_end(const tdm_trigger_ctx *ctx)
{
    return ctx->op->global ? TDM_TIME_MAX : ctx->end;
}

/* end - 1, or TDM_TIME_MAX for the global window. */
tdm_time_ms tdm_trigger_ctx_max_timestamp(const tdm_trigger_ctx *ctx)
{
    return tdm__win_max_ts(ctx->op, ctx->end);
}

/* The operator's current watermark. */
tdm_time_ms tdm_trigger_ctx_watermark(const tdm_trigger_ctx *ctx)
{
    return ctx->op->wm;
}

/* The operator's last processing-time reading. */
tdm_time_ms tdm_trigger_ctx_proctime(const tdm_trigger_ctx *ctx)
{
    return ctx->op->proctime;
}

/* The window's trigger state, NULL when state_size is 0. */
void *tdm_trigger_ctx_state(tdm_trigger_ctx *ctx)
{
    return ctx->state;
}

/* Registers an event-time timer for the ctx window
 * (idempotent).  Returns TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm_trigger_ctx_register_event_timer(tdm_trigger_ctx *ctx,
                                             tdm_time_ms t)
{
    return tdm__win_timer_add(ctx, TDM__EVENT, t);
}

/* Deletes the ctx window's event-time timer at @p t. */
void tdm_trigger_ctx_delete_event_timer(tdm_trigger_ctx *ctx, tdm_time_ms t)
{
    tdm__win_timer_del(ctx, TDM__EVENT, t);
}

/* Registers a processing-time timer for the ctx window
 * (idempotent).  Returns TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm_trigger_ctx_register_proc_timer(tdm_trigger_ctx *ctx, tdm_time_ms t)
{
    return tdm__win_timer_add(ctx, TDM__PROC, t);
}

/* Deletes the ctx window's processing-time timer at @p t. */
void tdm_trigger_ctx_delete_proc_timer(tdm_trigger_ctx *ctx, tdm_time_ms t)
{
    tdm__win_timer_del(ctx, TDM__PROC, t);
}

/* ---- Internal properties ---- */

/* Bytes of per-window state: purging uses its inner trigger's,
 * user triggers declare theirs. */
size_t tdm__trigger_state_size(const tdm_trigger *t)
{
    switch (t->kind) {
    case TDM__TRG_COUNT:
    case TDM__TRG_CONTINUOUS:
        return sizeof(tdm__trg_state);
    case TDM__TRG_PURGING:
        return tdm__trigger_state_size(t->inner);
    case TDM__TRG_CUSTOM:
        return t->m.state_size;
    default:
        return 0;
    }
}

/* Flink's canMerge(): purging asks its inner trigger, user
 * triggers need on_merge, the built-ins all merge. */
/* Interval points a global window's continuous trigger may fire for in
 * one watermark before it collapses them into one firing. */
#define TDM__CONTINUOUS_MAX_STEPS 1024u

/* True when @p t is (or wraps) a continuous event-time trigger. */
bool tdm__trigger_is_continuous(const tdm_trigger *t)
{
    if (t->kind == TDM__TRG_PURGING)
        return tdm__trigger_is_continuous(t->inner);
    return t->kind == TDM__TRG_CONTINUOUS;
}

bool tdm__trigger_can_merge(const tdm_trigger *t)
{
    switch (t->kind) {
    case TDM__TRG_PURGING:
        return tdm__trigger_can_merge(t->inner);
    case TDM__TRG_CUSTOM:
        return t->m.on_merge != NULL;
    default:
        return true;
    }
}

/* ---- Hooks ---- */

static void add_timer(tdm_trigger_ctx *ctx, tdm__domain d, tdm_time_ms t)
{
    tdm__win_fail(ctx->op, tdm__win_timer_add(ctx, d, t));
}

/* ContinuousEventTimeTrigger's registerNextFireTimestamp: the next fire
 * time is min(time + interval, maxTimestamp), kept in the state and
 * registered as an event-time timer. */
static void continuous_next(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                            tdm_time_ms time)
{
    tdm__trg_state *st = ctx->state;
    tdm_time_ms max_ts = tdm__win_max_ts(ctx->op, ctx->end);
    tdm_time_ms next = tdm__time_add_sat(time, t->interval);
    if (next > max_ts)
        next = max_ts;
    st->v = next;
    st->has = 1;
    add_timer(ctx, TDM__EVENT, next);
}

/* Trigger.onElement: the record was already added to the
 * window.  Returns a tdm_trigger_result. */
int tdm__trigger_on_element(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                            const tdm_record *rec)
{
    tdm_time_ms max_ts = tdm__win_max_ts(ctx->op, ctx->end);
    switch (t->kind) {
    case TDM__TRG_EVENT_TIME:
        /* R4.5: a window already past the watermark fires at once and
         * registers nothing. */
        if (max_ts <= ctx->op->wm)
            return TDM_TRIGGER_FIRE;
        add_timer(ctx, TDM__EVENT, max_ts);
        return TDM_TRIGGER_CONTINUE;
    case TDM__TRG_PROC_TIME:
        /* R6.2: always registers, even when already in the past. */
        add_timer(ctx, TDM__PROC, max_ts);
        return TDM_TRIGGER_CONTINUE;
    case TDM__TRG_COUNT: {
        /* R6.3: fire (without purge) and reset at the N-th record. */
        tdm__trg_state *st = ctx->state;
        if (++st->v >= t->count) {
            st->v = 0;
            return TDM_TRIGGER_FIRE;
        }
        return TDM_TRIGGER_CONTINUE;
    }
    case TDM__TRG_CONTINUOUS: {
        /* R6.4: late windows fire at once; otherwise the final timer and,
         * if none is pending, an epoch-aligned fire time (ts % interval
         * truncates toward zero like Java's %). */
        tdm__trg_state *st = ctx->state;
        if (max_ts <= ctx->op->wm)
            return TDM_TRIGGER_FIRE;
        add_timer(ctx, TDM__EVENT, max_ts);
        if (!st->has)
            continuous_next(t, ctx, rec->ts - rec->ts % t->interval);
        return TDM_TRIGGER_CONTINUE;
    }
    case TDM__TRG_PURGING: {
        int r = tdm__trigger_on_element(t->inner, ctx, rec);
        return (r & TDM_TRIGGER_FIRE) ? TDM_TRIGGER_FIRE_AND_PURGE : r;
    }
    case TDM__TRG_NEVER:
        return TDM_TRIGGER_CONTINUE;
    case TDM__TRG_CUSTOM:
        return t->m.on_element(t->ud, ctx, rec);
    }
    return TDM_TRIGGER_CONTINUE;
}

/* Trigger.onEventTime / onProcessingTime for a timer of domain
 * @p d at @p time.  Returns a tdm_trigger_result. */
int tdm__trigger_on_time(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                         tdm__domain d, tdm_time_ms time)
{
    tdm_time_ms max_ts = tdm__win_max_ts(ctx->op, ctx->end);
    switch (t->kind) {
    case TDM__TRG_EVENT_TIME:
        /* R3.2: only the timer at maxTimestamp fires. */
        return (d == TDM__EVENT && time == max_ts) ? TDM_TRIGGER_FIRE
                                                   : TDM_TRIGGER_CONTINUE;
    case TDM__TRG_PROC_TIME:
        return d == TDM__PROC ? TDM_TRIGGER_FIRE : TDM_TRIGGER_CONTINUE;
    case TDM__TRG_COUNT:
    case TDM__TRG_NEVER:
        return TDM_TRIGGER_CONTINUE;
    case TDM__TRG_CONTINUOUS: {
        tdm__trg_state *st = ctx->state;
        if (d != TDM__EVENT)
            return TDM_TRIGGER_CONTINUE;
        if (time == max_ts)
            return TDM_TRIGGER_FIRE;
        if (!st || !st->has || st->v != time)
            return TDM_TRIGGER_CONTINUE;
        st->has = 0;
        /* On the global window Flink would walk the interval up to
         * TDM_TIME_MAX at end of input; tidemark lets the timer at
         * maxTimestamp (TDM_TIME_MAX) fire once instead. */
        if (max_ts == TDM_TIME_MAX && ctx->op->wm == TDM_TIME_MAX)
            return TDM_TRIGGER_CONTINUE;
        if (max_ts == TDM_TIME_MAX && ctx->op->wm > time) {
            /* Global window: like Flink, one firing per interval point
             * the watermark passed - but a watermark far ahead of the
             * pending fire time (a record near TDM_TIME_MIN, a watermark
             * near TDM_TIME_MAX) would walk billions of them.  Beyond
             * TDM__CONTINUOUS_MAX_STEPS points tidemark fires once for the
             * whole stretch and re-arms at the first point after the
             * watermark.  (Unsigned: wm - time may exceed INT64_MAX.) */
            uint64_t gap = (uint64_t)ctx->op->wm - (uint64_t)time;
            uint64_t steps = gap / (uint64_t)t->interval;
            if (steps > TDM__CONTINUOUS_MAX_STEPS)
                time = (tdm_time_ms)((uint64_t)time +
                                     steps * (uint64_t)t->interval);
        }
        continuous_next(t, ctx, time);
        return TDM_TRIGGER_FIRE;
    }
    case TDM__TRG_PURGING: {
        int r = tdm__trigger_on_time(t->inner, ctx, d, time);
        return (r & TDM_TRIGGER_FIRE) ? TDM_TRIGGER_FIRE_AND_PURGE : r;
    }
    case TDM__TRG_CUSTOM:
        if (d == TDM__EVENT)
            return t->m.on_event_time ? t->m.on_event_time(t->ud, ctx, time)
                                      : TDM_TRIGGER_CONTINUE;
        return t->m.on_processing_time
                   ? t->m.on_processing_time(t->ud, ctx, time)
                   : TDM_TRIGGER_CONTINUE;
    }
    return TDM_TRIGGER_CONTINUE;
}

/* Trigger.onMerge on the merged window (ctx), given the states
 * of the other merged windows. */
void tdm__trigger_on_merge(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                           void *const *merged, size_t n)
{
    tdm_time_ms max_ts = tdm__win_max_ts(ctx->op, ctx->end);
    switch (t->kind) {
    case TDM__TRG_EVENT_TIME:
        /* R5.2: only if still ahead of the watermark; otherwise the
         * following onElement fires the merged window. */
        if (max_ts > ctx->op->wm)
            add_timer(ctx, TDM__EVENT, max_ts);
        break;
    case TDM__TRG_PROC_TIME:
        if (max_ts > ctx->op->proctime)
            add_timer(ctx, TDM__PROC, max_ts);
        break;
    case TDM__TRG_COUNT: {
        tdm__trg_state *st = ctx->state;
        for (size_t i = 0; i < n; i++)
            st->v += ((const tdm__trg_state *)merged[i])->v;
        break;
    }
    case TDM__TRG_CONTINUOUS: {
        /* The smallest pending fire time survives and is registered for
         * the merged window. */
        tdm__trg_state *st = ctx->state;
        for (size_t i = 0; i < n; i++) {
            const tdm__trg_state *o = merged[i];
            if (o->has && (!st->has || o->v < st->v)) {
                st->v = o->v;
                st->has = 1;
            }
        }
        if (st->has)
            add_timer(ctx, TDM__EVENT, st->v);
        break;
    }
    case TDM__TRG_PURGING:
        tdm__trigger_on_merge(t->inner, ctx, merged, n);
        break;
    case TDM__TRG_NEVER:
        break;
    case TDM__TRG_CUSTOM:
        t->m.on_merge(t->ud, ctx, (const void *const *)merged, n);
        break;
    }
}

/* Trigger.clear for the ctx window: deletes its timers and
 * resets its state. */
void tdm__trigger_clear(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                        bool merged_away)
{
    tdm_time_ms max_ts = tdm__win_max_ts(ctx->op, ctx->end);
    switch (t->kind) {
    case TDM__TRG_EVENT_TIME:
        tdm__win_timer_del(ctx, TDM__EVENT, max_ts);
        break;
    case TDM__TRG_PROC_TIME:
        tdm__win_timer_del(ctx, TDM__PROC, max_ts);
        break;
    case TDM__TRG_COUNT:
        if (!merged_away)
            ((tdm__trg_state *)ctx->state)->v = 0;
        break;
    case TDM__TRG_CONTINUOUS: {
        /* A merged-away window's fire time went into the merged state
         * (Flink's state merge empties the source), so its old timer is
         * not deleted; it fires later and finds no window (R5.5). */
        tdm__trg_state *st = ctx->state;
        if (!merged_away && st->has) {
            tdm__win_timer_del(ctx, TDM__EVENT, st->v);
            st->has = 0;
        }
        break;
    }
    case TDM__TRG_PURGING:
        tdm__trigger_clear(t->inner, ctx, merged_away);
        break;
    case TDM__TRG_NEVER:
        break;
    case TDM__TRG_CUSTOM:
        if (t->m.clear)
            t->m.clear(t->ud, ctx);
        break;
    }
}
