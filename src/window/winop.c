/* SPDX-License-Identifier: MIT */
/* winop.c - the keyed window operator (Flink's WindowOperator behind its
 * input valve): record processing with lateness and late output, timers,
 * firing, purging and cleanup (rulebook R2-R4, R7).
 *
 * Two paths share the rules.  The general one keeps interned keys, a
 * (key, window) slot store and a timer queue, and runs any assigner,
 * trigger and aggregate.  The lean one covers the common case - tumbling
 * or sliding event-time windows, the event-time trigger, a built-in
 * incremental aggregate - with a window store (state/wstore.h): a record
 * costs one key lookup that lands on the key's windows, and windows fire
 * and are cleaned up per window interval instead of per timer.  Sliding
 * counts without lateness keep slices instead of windows there
 * (winop_slice.c, the sliced mode).  Event-time session windows with
 * the event-time trigger, a built-in aggregate and no allowed lateness
 * keep their sessions in the session mode (winop_session.c) instead of
 * slots and timers.
 * Watermarks and statuses go through a tdm_valve whose output drives the
 * event-time timers and is then forwarded.
 */
#include <string.h>

#include "state/wstore.h"
#include "window/win.h"
#include "testhooks.h"

/* ---- Timers with flags and key references ---- */

/* The slot flags that describe timer (d, t) of window [., end): t may be
 * the window's maxTimestamp, its cleanup time, both or neither. */
static inline uint32_t timer_bits(const tdm_winop *op, tdm__domain d,
                                  tdm_time_ms end, tdm_time_ms t)
{
    uint32_t bits = 0;
    if (t == tdm__win_max_ts(op, end))
        bits |= d == TDM__EVENT ? TDM__W_ET_MAX : TDM__W_PT_MAX;
    if (t == tdm__win_cleanup(op, end))
        bits |= d == TDM__EVENT ? TDM__W_ET_CLEAN : TDM__W_PT_CLEAN;
    return bits;
}

/* True when the ctx's slot is the state of the ctx's window, so that its
 * flags describe the ctx window's timers. */
static inline bool ctx_owns_flags(const tdm_trigger_ctx *ctx)
{
    return ctx->slot && ctx->slot->start == ctx->start &&
           ctx->slot->end == ctx->end;
}

/* Registers timer (d, t) for the ctx window; see win.h.  The
 * slot's flags short-cut repeats of its maxTimestamp and cleanup
 * timers.  Returns TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__win_timer_add(tdm_trigger_ctx *ctx, tdm__domain d, tdm_time_ms t)
{
    tdm_winop *op = ctx->op;
    uint32_t bits = 0;
    if (ctx_owns_flags(ctx)) {
        bits = timer_bits(op, d, ctx->end, t);
        if (bits && (ctx->slot->flags & bits)) {
            ctx->slot->flags |= bits; /* same triple: already there */
            return TDM_OK;
        }
    }
    tdm__ns ns = {ctx->start, ctx->end};
    bool added;
    tdm_err err = tdm__timers_insert(op->timers[d], t, ctx->key, ns, &added);
    if (err != TDM_OK)
        return err;
    if (added)
        tdm__keys_ref(op->keys, ctx->key); /* each timer holds its key */
    if (bits)
        ctx->slot->flags |= bits;
    return TDM_OK;
}

/* Deletes timer (d, t) of the ctx window and its key reference. */
void tdm__win_timer_del(tdm_trigger_ctx *ctx, tdm__domain d, tdm_time_ms t)
{
    tdm_winop *op = ctx->op;
    tdm__ns ns = {ctx->start, ctx->end};
    if (ctx_owns_flags(ctx)) {
        /* The flags are exact for maxTimestamp and cleanup timers: when
         * they say "not registered" the queue need not be searched. */
        uint32_t bits = timer_bits(op, d, ctx->end, t);
        if (bits && !(ctx->slot->flags & bits))
            return;
        ctx->slot->flags &= ~bits;
    }
    if (tdm__timers_remove(op->timers[d], t, ctx->key, ns))
        tdm__keys_unref(op->keys, ctx->key);
}

/* Flink's registerCleanupTimer: in the assigner's domain, never at
 * TDM_TIME_MAX (R4.2). */
tdm_err tdm__win_register_cleanup(tdm_trigger_ctx *ctx)
{
    tdm_winop *op = ctx->op;
    tdm_time_ms c = tdm__win_cleanup(op, ctx->end);
    if (c == TDM_TIME_MAX)
        return TDM_OK;
    tdm__domain d = op->event_time ? TDM__EVENT : TDM__PROC;
    uint32_t bit = d == TDM__EVENT ? TDM__W_ET_CLEAN : TDM__W_PT_CLEAN;
    if (ctx->slot->flags & bit)
        return TDM_OK;
    return tdm__win_timer_add(ctx, d, c);
}

/* ---- Slots ---- */

/* Creates (or finds) the slot of (key, ns) for window
 * [start, end) and takes a key reference for a new one.  NULL on OOM. */
tdm__win_slot *tdm__win_slot_new(tdm_winop *op, uint32_t key, tdm__ns ns,
                                 tdm_time_ms start, tdm_time_ms end)
{
    bool created;
    tdm__win_slot *s = tdm__kv_upsert(op->wins, key, ns, &created);
    if (!s)
        return NULL;
    if (created) {
        s->start = start;
        s->end = end;
        s->key = key;
        tdm__keys_ref(op->keys, key);
    }
    return s;
}

/* Frees a slot's contents, forgets it in the key's cache, removes
 * it and drops its key reference. */
void tdm__win_slot_free(tdm_winop *op, tdm__win_slot *s)
{
    uint32_t key = s->key;
    tdm__agg_clear(op, s);
    void **cache = tdm__keys_udata(op->keys, key);
    if (*cache == s)
        *cache = NULL;
    tdm__kv_remove_slot(op->wins, s);
    tdm__keys_unref(op->keys, key);
}

/* ---- Firing ---- */

/* Emits the window's result (R2.4, R2.5: the caller checked that the
 * contents are non-empty), with pane information.  @p purge says whether
 * the contents are purged right after. */
void tdm__win_emit(tdm_winop *op, tdm__win_slot *s, bool purge)
{
    size_t key_len;
    const char *key = tdm__keys_get(op->keys, s->key, &key_len);
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_RESULT);
    ev.key = key;
    ev.key_len = key_len;
    ev.has_window = !op->global;
    if (!op->global) {
        ev.win_start = s->start;
        ev.win_end = s->end;
    }
    tdm_time_ms max_ts = tdm__win_max_ts(op, s->end);
    ev.time = max_ts;
    tdm_err err = tdm__agg_result(op, s, &ev, key, key_len);
    if (err != TDM_OK) {
        /* A user function declined: skip this firing, count it.  A
         * version-2 aggregate out of memory also fails the call that
         * fired the window (tidemark.h, tdm_aggregate_methods). */
        op->fn_errors++;
        if (err == TDM_ERR_NOMEM && op->agg->type == TDM__AGG_CUSTOM &&
            op->agg->m.version == 2)
            tdm__win_fail(op, err);
        tdm__msgf(&op->msg, err,
                  "window function failed for key '%.*s' "
                  "window [%lld, %lld): %s",
                  (int)(key_len > 64 ? 64 : key_len), key, (long long)s->start,
                  (long long)s->end, tdm_err_name(err));
        return;
    }
    /* Pane timing against the time domain of the windows: processing
     * time for processing-time assigners, the watermark otherwise. */
    tdm_time_ms now = op->asg->proc_time ? op->proctime : op->wm;
    if (now < max_ts) {
        ev.pane_timing = TDM_PANE_EARLY;
    } else if (!(s->flags & TDM__W_ONTIME)) {
        ev.pane_timing = TDM_PANE_ON_TIME;
        s->flags |= TDM__W_ONTIME;
    } else {
        ev.pane_timing = TDM_PANE_LATE;
    }
    ev.pane_index = s->panes++;
    ev.is_update = (s->flags & TDM__W_UNPURGED) ? 1 : 0;
    if (!purge)
        s->flags |= TDM__W_UNPURGED;
    tdm__emit(&op->sink, &ev);
}

/* Applies a trigger result to a window: FIRE emits if there is something
 * to emit; PURGE clears the contents but keeps the window (R6.5). */
static inline void apply_result(tdm_winop *op, tdm__win_slot *s, int r)
{
    if ((r & TDM_TRIGGER_FIRE) && (s->flags & TDM__W_CONTENTS))
        tdm__win_emit(op, s, (r & TDM_TRIGGER_PURGE) != 0);
    if (r & TDM_TRIGGER_PURGE) {
        tdm__agg_clear(op, s);
        s->flags &= ~TDM__W_UNPURGED;
    }
}

/* Flink's clearAllState: contents, trigger state and timers (via
 * trigger.clear), then the window itself (R4.3).  Emits nothing. */
static inline __attribute__((always_inline)) void clear_all(tdm_winop *op,
                                                            tdm__win_slot *s)
{
    tdm_trigger_ctx ctx = {op,     s->key, s->start,
                           s->end, s,      tdm__win_tstate(op, s)};
    tdm__agg_clear(op, s);
    tdm__trigger_clear(op->trg, &ctx, false);
    tdm__win_slot_free(op, s);
}

/* clear_all for winop_lateness.c (kept inlined in on_timer). */
void tdm__win_clear_all(tdm_winop *op, tdm__win_slot *s)
{
    clear_all(op, s);
}

/* One timer of domain @p d fired (Flink's onEventTime/onProcessingTime).
 * The timer's key reference is dropped at the end. */
static void on_timer(tdm_winop *op, tdm__domain d, const tdm__timer *t)
{
    tdm__win_slot *s;
    if (op->merging)
        s = tdm__win_merge_find(op, t->key, t->ns.a, t->ns.b);
    else
        s = tdm__kv_get(op->wins, t->key, t->ns);
    if (s) {
        /* The popped timer is gone: its flags go too. */
        s->flags &= ~timer_bits(op, d, s->end, t->time);
        tdm_trigger_ctx ctx = {op,     t->key, s->start,
                               s->end, s,      tdm__win_tstate(op, s)};
        int r = tdm__trigger_on_time(op->trg, &ctx, d, t->time);
        apply_result(op, s, r);
        /* The trigger was asked first; cleanup runs after it for the
         * same timer (R3.4). */
        bool cleanup_domain = (d == TDM__EVENT) == op->event_time;
        if (cleanup_domain && t->time == tdm__win_cleanup(op, s->end))
            clear_all(op, s);
    }
    /* else: a stale timer of a window merged away or cleaned up (R5.5). */
    tdm__keys_unref(op->keys, t->key);
}

/* ---- The valve's output drives the operator ---- */

/* R3.1: set the watermark, fire every event-time timer <= it (also ones
 * registered meanwhile), then forward it. */

static void lean_watermark(tdm_winop *op, tdm_time_ms wm);

static void process_watermark(tdm_winop *op, tdm_time_ms wm)
{
    if (op->restored && wm <= op->wm)
        return; /* a restarted valve below the restored watermark */
    op->wm = wm;
    if (op->lean_sliced) {
        tdm__slice_watermark(op, wm);
    } else if (op->lean) {
        lean_watermark(op, wm);
    } else if (op->sess) {
        tdm__sess_watermark(op, wm);
    } else {
        tdm__timer t;
        while (tdm__timers_pop(op->timers[TDM__EVENT], wm, &t))
            on_timer(op, TDM__EVENT, &t);
    }
    tdm__emit_watermark(&op->sink, wm);
}

static void on_valve(void *opaque, const tdm_event *ev)
{
    tdm_winop *op = opaque;
    if (ev->type == TDM_EVENT_WATERMARK)
        process_watermark(op, ev->time);
    else
        tdm__emit(&op->sink, ev); /* statuses are forwarded as they come */
}

/* ---- Records ---- */

/* Adds a record to an accepted window and runs the trigger, as Flink's
 * processElement does per window (R2 steps 3-6).  @p created: the slot
 * is new (removed again if the record cannot be added). */
static tdm_err add_to_window(tdm_winop *op, tdm__win_slot *s,
                             const tdm_record *rec, bool created)
{
    if (!tdm__agg_add_fast(op->agg, s, rec->value)) {
        size_t key_len;
        const char *key = tdm__keys_get(op->keys, s->key, &key_len);
        tdm_err err = tdm__agg_add_slow(op, s, rec, key, key_len);
        if (err != TDM_OK) {
            if (created && !(s->flags & TDM__W_CONTENTS))
                tdm__win_slot_free(op, s);
            return err;
        }
    }
    tdm_trigger_ctx ctx = {op,     s->key, s->start,
                           s->end, s,      tdm__win_tstate(op, s)};
    int r;
    if (op->trg->kind == TDM__TRG_EVENT_TIME) {
        /* EventTimeTrigger inline (the common case). */
        tdm_time_ms max_ts = tdm__win_max_ts(op, s->end);
        if (max_ts <= op->wm) {
            r = TDM_TRIGGER_FIRE;
        } else {
            r = TDM_TRIGGER_CONTINUE;
            if (!(s->flags & TDM__W_ET_MAX))
                tdm__win_fail(op, tdm__win_timer_add(&ctx, TDM__EVENT, max_ts));
        }
    } else {
        r = tdm__trigger_on_element(op->trg, &ctx, rec);
    }
    apply_result(op, s, r);
    tdm__win_fail(op, tdm__win_register_cleanup(&ctx));
    return TDM_OK;
}

/* Processes a record of interned key @p kid at time @p ts (event or
 * processing time).  *handled: some window accepted it. */
static tdm_err process_record(tdm_winop *op, uint32_t kid, tdm_time_ms ts,
                              const tdm_record *rec, bool *handled)
{
    tdm__assign_iter it;
    tdm_time_ms start, end;
    if (op->single) {
        /* Fast path: tumbling windows partition time, so the key's last
         * window is the record's window when it contains ts (the global
         * window contains everything). */
        tdm__win_slot *s = *tdm__keys_udata(op->keys, kid);
        if (s && (op->global || (ts >= s->start && ts < s->end))) {
            if (tdm__win_is_late(op, s->end))
                return TDM_OK;
            *handled = true;
            return add_to_window(op, s, rec, false);
        }
    }
    tdm__assign_begin(op->asg, ts, &it);
    while (tdm__assign_next(&it, &start, &end)) {
        tdm__win_slot *s;
        bool created = false;
        if (op->merging) {
            tdm_err err = tdm__win_merge_add(op, kid, start, end, &s);
            if (err != TDM_OK)
                return err;
            if (!s)
                continue; /* late, even after merging (R5.3) */
            created = !(s->flags & TDM__W_CONTENTS) && s->panes == 0;
        } else {
            /* R2 step 2: skip late windows. */
            if (tdm__win_is_late(op, end))
                continue;
            /* The key's last window (its interned entry keeps the
             * pointer) saves the kv lookup for repeated records. */
            void **cache = tdm__keys_udata(op->keys, kid);
            s = *cache;
            if (!s || s->start != start || s->end != end) {
                tdm__ns ns = {start, end};
                if (tdm__win_closed(op, end) && !tdm__kv_get(op->wins, kid, ns))
                    continue; /* L3: closed, not held */
                s = tdm__kv_upsert(op->wins, kid, ns, &created);
                if (!s)
                    return TDM_ERR_NOMEM;
                if (created) {
                    s->start = start;
                    s->end = end;
                    s->key = kid;
                    tdm__keys_ref(op->keys, kid);
                }
                /* Out-of-order records do not evict the newest window
                 * from the cache: the in-order ones that follow hit. */
                if (!*cache || ((tdm__win_slot *)*cache)->end < end)
                    *cache = s;
            }
        }
        *handled = true;
        tdm_err err = add_to_window(op, s, rec, created);
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* F5: whether the data watermark alone would have kept a late record
 * on time: one of its windows (the last one ends latest) is still open
 * under it.  A session window only grows from [ts, ts + gap). */
static bool late_by_fallback(const tdm_winop *op, tdm_time_ms ts)
{
    tdm__assign_iter it;
    tdm_time_ms start, end, last = TDM_TIME_MIN;
    if (op->data_wm >= op->wm)
        return false;
    tdm__assign_begin(op->asg, ts, &it);
    while (tdm__assign_next(&it, &start, &end))
        if (end > last)
            last = end;
    return last != TDM_TIME_MIN && tdm__win_cleanup(op, last) > op->data_wm;
}

/* R2.1: a record no window accepted, and late itself, goes to the late
 * output or is counted (F5: also as made late by a fallback
 * watermark).  @p key is the record's key (interned or not). */
void tdm__win_handle_late(tdm_winop *op, const tdm_record *rec, const char *key,
                          size_t key_len)
{
    if (!op->event_time || (tdm__time_add_sat(rec->ts, op->lateness) > op->wm &&
                            rec->ts > op->closed_max))
        return; /* not late itself (L3: nor under a closed window) */
    if (late_by_fallback(op, rec->ts))
        op->late_fallback++;
    if (!op->late_output) {
        op->late_dropped++;
        if (op->drop_probe)
            op->drop_probe(op->drop_ud, rec);
        return;
    }
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_LATE);
    ev.time = rec->ts;
    ev.key = key;
    ev.key_len = key_len;
    ev.rec[0] = rec;
    op->late_emitted++;
    tdm__emit(&op->sink, &ev);
}

/* ====================================================================== */
/* The lean path                                                           */
/* ====================================================================== */

/* Which operators take it: event-time tumbling or sliding windows (no
 * merging, windows of one size), the event-time trigger, and a built-in
 * aggregate of one or two doubles.  With that trigger a window fires
 * exactly when the watermark reaches its maxTimestamp (one timer per
 * window, registered by its first record) or, after that, once per
 * accepted record (R4.5), and it never purges: so its pane index is its
 * firing count, ON_TIME goes with index 0, and is_update with any
 * other.  W-CU1: cumulate windows stay on the general path: the lean
 * store's window spans and the sliced mode assume windows of one size
 * (a window is its start plus the size, a slice is shared by windows
 * of equal length), while a cumulate record's windows share a start
 * and differ in their ends. */
static bool lean_applies(const tdm_assigner *a, const tdm_trigger *t,
                         const tdm_aggregate *g)
{
    return (a->kind == TDM__ASG_TUMBLING || a->kind == TDM__ASG_SLIDING) &&
           !a->proc_time && t->kind == TDM__TRG_EVENT_TIME &&
           g->type == TDM__AGG_BUILTIN && g->kind != TDM_AGG_COLLECT;
}

/* Folds value @p v into a cell as tdm__agg_add_fast does into a slot
 * (@p first: the cell is new), with count in v[0] for COUNT and the
 * running value in v[0], the count in v[1] for AVG. */
static inline void lean_fold(tdm_agg_kind kind, tdm__ws_cell *c, double v,
                             bool first)
{
    switch (kind) {
    case TDM_AGG_COUNT:
        c->v[0] = first ? 1 : c->v[0] + 1;
        break;
    case TDM_AGG_SUM:
        c->v[0] = first ? v : c->v[0] + v;
        break;
    case TDM_AGG_AVG:
        c->v[0] = first ? v : c->v[0] + v;
        c->v[1] = first ? 1 : c->v[1] + 1;
        break;
    case TDM_AGG_MIN:
        c->v[0] = (first || v < c->v[0]) ? v : c->v[0];
        break;
    case TDM_AGG_MAX:
        c->v[0] = (first || v > c->v[0]) ? v : c->v[0];
        break;
    default:
        break;
    }
}

/* Folds a partial count @p p (the local phase of two-phase aggregation,
 * tdm__winop_push_partial) into a cell: counts add. */
static inline void lean_fold_part(tdm__ws_cell *c, const double *p, bool first)
{
    c->v[0] = first ? p[0] : c->v[0] + p[0];
}

/* A result event of window @p sp without its key and value (filled per
 * cell by lean_emit_in). */
static inline void lean_event(tdm_event *ev, const tdm__ws_span *sp)
{
    *ev = (tdm_event)TDM__EVENT_INIT(TDM_EVENT_RESULT);
    ev->has_window = 1;
    ev->win_start = sp->start;
    ev->win_end = sp->end;
    ev->time = sp->t_fire;
}

/* Emits the result of cell @p c (key entry @p e) through @p ev, a
 * lean_event of the cell's window: sets the fields of the cell, so that
 * a walk over a window's keys fills one event per key, not a whole new
 * one. */
static inline void lean_emit_in(tdm_winop *op, tdm_event *ev,
                                const tdm__ws_key *e, tdm__ws_cell *c)
{
    ev->key = tdm__ws_key_bytes(e);
    ev->key_len = tdm__ws_key_len(e);
    ev->value = op->lean_kind == TDM_AGG_AVG ? c->v[0] / c->v[1] : c->v[0];
    uint64_t n = tdm__ws_fires(c);
    ev->pane_timing = n == 0 ? TDM_PANE_ON_TIME : TDM_PANE_LATE;
    ev->pane_index = (int64_t)n;
    ev->is_update = n != 0;
    tdm__ws_fires_inc(c);
    tdm__emit(&op->sink, ev);
}

/* Emits the result of cell @p c (key entry @p e, window @p sp), as
 * tdm__win_emit does for a slot: the watermark is at or past the
 * window's maxTimestamp whenever the lean path fires. */
static void lean_emit(tdm_winop *op, const tdm__ws_key *e,
                      const tdm__ws_span *sp, tdm__ws_cell *c)
{
    tdm_event ev;
    lean_event(&ev, sp);
    lean_emit_in(op, &ev, e, c);
}

/* Adds a record's value to cell @p c of key @p kid in the accepted
 * window @p sp, and fires the window at once when the watermark has
 * passed its maxTimestamp (EventTimeTrigger.onElement, R4.5).  Returns
 * TDM_OK, or TDM_ERR_NOMEM before anything changed (a cell whose firing
 * count outgrows 32 bits could not move to the spill table). */
static inline __attribute__((always_inline)) tdm_err
lean_add(tdm_winop *op, uint32_t kid, const tdm__ws_span *sp, tdm__ws_cell *c,
         double v, bool created, const double *part)
{
    bool fire = sp->t_fire <= op->wm;
    if (fire && c->fires == UINT32_MAX && !(c->span & TDM__WS_SPILL_BIT)) {
        tdm_err err = tdm__ws_cell_widen(op->ws, kid, &c);
        if (err != TDM_OK)
            return err;
    }
    if (part)
        lean_fold_part(c, part, created);
    else
        lean_fold(op->lean_kind, c, v, created);
    if (fire)
        lean_emit(op, tdm__ws_key_at(op->ws, kid), sp, c);
    return TDM_OK;
}

/* Processes one record on the lean path (R2): for each of its windows,
 * skip it when late, else find or make the key's cell, add, maybe fire;
 * a record no window took is late (R2.1).  @p h is the key's hash and
 * @p kid its id (TDM__WS_NONE: not in the store yet).  Returns TDM_OK or
 * TDM_ERR_NOMEM (windows already updated stay updated). */
static __attribute__((noinline)) tdm_err
lean_push_slow(tdm_winop *op, const tdm_record *rec, tdm_time_ms ts, uint64_t h,
               uint32_t kid, const double *part)
{
    tdm__wstore *ws = op->ws;
    const char *key = rec->key;
    size_t len = rec->key_len;
    bool handled = false;
    tdm_err err = TDM_OK;
    tdm__assign_iter it;
    tdm_time_ms start, end;
    tdm__assign_begin(op->asg, ts, &it);
    while (tdm__assign_next(&it, &start, &end)) {
        tdm_time_ms clean = tdm__win_cleanup(op, end);
        if (clean <= op->wm)
            continue; /* R2 step 2: a late window */
        tdm_time_ms max_ts = end - 1;
        uint32_t sid = tdm__ws_span_find(ws, start, end);
        tdm__ws_cell *c = NULL;
        if (sid != TDM__WS_NONE && kid != TDM__WS_NONE)
            c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, kid), kid, sid);
        if (!c && max_ts <= op->closed_max)
            continue; /* L3: closed, and the key holds no cell there */
        handled = true;
        bool created = false;
        if (!c) {
            if (kid == TDM__WS_NONE) {
                err = tdm__ws_intern(ws, key, len, h, &kid);
                if (err != TDM_OK)
                    break;
            }
            bool new_span = sid == TDM__WS_NONE;
            if (new_span) {
                /* A window whose maxTimestamp has passed fires per
                 * record and registers no timer (R4.5). */
                err = tdm__ws_span_get(ws, start, end, max_ts, clean,
                                       max_ts <= op->wm, &sid);
                if (err != TDM_OK)
                    break;
            }
            c = tdm__ws_cell_add(ws, kid, sid);
            if (!c) {
                if (new_span && ws->spans[sid].n == 0) {
                    tdm__ws_span_free(ws, sid);
                    if (op->lean_sid == sid)
                        op->lean_sid = TDM__WS_NONE;
                }
                err = TDM_ERR_NOMEM;
                break;
            }
            created = true;
        }
        uint64_t gen = ws->gen;
        err = lean_add(op, kid, tdm__ws_span_at(ws, sid), c, rec->value,
                       created, part);
        if (err != TDM_OK)
            break;
        if (max_ts > op->closed_max) /* L3: never a closed interval */
            op->lean_sid = sid; /* tumbling: where the next new window goes */
        if (ws->gen != gen)     /* the emit callback renumbered the keys */
            kid = tdm__ws_find(ws, key, len, h);
    }
    if (err != TDM_OK) {
        if (kid != TDM__WS_NONE)
            tdm__ws_key_drop_if_empty(ws, kid);
        return err;
    }
    if (!handled)
        tdm__win_handle_late(op, rec, key, len);
    return TDM_OK;
}

/* A tumbling record whose window is span @p sid (not late) but not one
 * of its key's inline cells: the cell may have been spilled, else it is
 * made here.  Returns TDM_OK or TDM_ERR_NOMEM (nothing changed). */
static __attribute__((noinline)) tdm_err
lean_tumbling_new(tdm_winop *op, const tdm_record *rec, uint64_t h,
                  uint32_t kid, uint32_t sid, const double *part)
{
    tdm__wstore *ws = op->ws;
    tdm__ws_cell *c = NULL;
    if (kid != TDM__WS_NONE && tdm__ws_n_spill(tdm__ws_key_at(ws, kid)))
        c = tdm__ws_spill_find(ws, kid, sid);
    bool created = false;
    if (!c) {
        if (kid == TDM__WS_NONE) {
            tdm_err err =
                tdm__ws_intern_absent(ws, rec->key, rec->key_len, h, &kid);
            if (err != TDM_OK)
                return err;
        }
        c = tdm__ws_cell_add(ws, kid, sid);
        if (!c) {
            tdm__ws_key_drop_if_empty(ws, kid);
            return TDM_ERR_NOMEM;
        }
        created = true;
    }
    /* A new cell cannot fail in lean_add (its firing count is 0). */
    return lean_add(op, kid, tdm__ws_span_at(ws, sid), c, rec->value, created,
                    part);
}

/* The lean path's common cases for tumbling windows: one of the key's
 * inline cells holds the record's window; or the record's window is the
 * last window interval a record went to, which holds most new windows
 * too.  Anything else goes through lean_push_slow. */
static inline __attribute__((always_inline)) tdm_err
lean_push(tdm_winop *op, const tdm_record *rec, tdm_time_ms ts,
          const double *part, uint64_t h)
{
    tdm__wstore *ws = op->ws;
    uint32_t kid = tdm__ws_find(ws, rec->key, rec->key_len, h);
    if (!op->lean_tumbling)
        return lean_push_slow(op, rec, ts, h, kid, part);
    if (kid != TDM__WS_NONE) {
        tdm__ws_key *e = tdm__ws_key_at(ws, kid);
        for (uint32_t i = 0; i < ws->n_inline; i++) {
            tdm__ws_cell *c = tdm__ws_inline(ws, e, i);
            if (!c->span)
                continue;
            const tdm__ws_span *sp = tdm__ws_span_at(ws, c->span - 1);
            /* Tumbling windows partition time: a window holding ts is
             * the record's window. */
            if (ts < sp->start || ts >= sp->end)
                continue;
            if (sp->t_clean <= op->wm)
                break; /* late: the general loop decides */
            return lean_add(op, kid, sp, c, rec->value, false, part);
        }
    }
    uint32_t sid = op->lean_sid;
    if (sid != TDM__WS_NONE) {
        const tdm__ws_span *sp = tdm__ws_span_at(ws, sid);
        /* Never a closed interval (L3): lean_push_slow does not point
         * lean_sid at one, and a raise closes none that lives. */
        if (ts >= sp->start && ts < sp->end && sp->t_clean > op->wm)
            return lean_tumbling_new(op, rec, h, kid, sid, part);
    }
    return lean_push_slow(op, rec, ts, h, kid, part);
}

/* R3.1 on the lean path: every window interval whose fire time (its
 * windows' maxTimestamp) or cleanup time is <= @p wm, in time order,
 * fires and/or cleans up all its windows in their creation order - what
 * the general path does with one timer per window, whose equal-time
 * timers pop in registration order.  Cleanup emits nothing, so doing it
 * in the same walk as the firing is not observable. */
static void lean_watermark(tdm_winop *op, tdm_time_ms wm)
{
    tdm__wstore *ws = op->ws;
    uint32_t sid;
    bool cleaned = false;
    while ((sid = tdm__ws_span_due(ws, wm)) != TDM__WS_NONE) {
        /* Out of the due order while walked, so that a watermark sent
         * from the emit callback does not walk it again. */
        tdm__ws_span_take(ws, sid);
        const tdm__ws_span *sp = tdm__ws_span_at(ws, sid);
        bool fire = !sp->fired;
        bool clean = sp->t_clean != TDM_TIME_MAX && sp->t_clean <= wm;
        uint32_t n = sp->n; /* windows the callback adds fire by record */
        tdm_event ev;
        lean_event(&ev, sp);
        for (uint32_t i = 0; i < n; i++) {
            /* Spans, members and ids are read again each time: the emit
             * callback may push records, which may add spans, members or
             * rebuild the key table (gen). */
            sp = tdm__ws_span_at(ws, sid);
            const uint32_t *m = sp->members;
            /* The members' entries are scattered: fetch ahead. */
            if (i + 8 < n && m[i + 8] != TDM__WS_NONE)
                tdm__ws_prefetch_key(ws, m[i + 8]);
            uint32_t kid = m[i];
            if (kid == TDM__WS_NONE)
                continue;
            tdm__ws_key *e = tdm__ws_key_at(ws, kid);
            tdm__ws_cell *c = tdm__ws_cell_of(ws, e, kid, sid);
            if (fire) {
                uint64_t gen = ws->gen;
                lean_emit_in(op, &ev, e, c);
                if (ws->gen != gen && clean) {
                    kid = tdm__ws_span_at(ws, sid)->members[i];
                    e = tdm__ws_key_at(ws, kid);
                    c = tdm__ws_cell_of(ws, e, kid, sid);
                }
            }
            if (clean)
                tdm__ws_cell_release(ws, kid, c);
        }
        if (clean) {
            tdm__ws_span_free(ws, sid);
            if (op->lean_sid == sid)
                op->lean_sid = TDM__WS_NONE;
            cleaned = true;
        } else {
            tdm__ws_span_set_fired(ws, sid);
        }
    }
    if (cleaned)
        tdm__ws_compact(ws); /* give memory back when keys went away */
}

/* The same walk for winop_lateness.c (kept inlined here). */
void tdm__win_lean_watermark(tdm_winop *op, tdm_time_ms wm)
{
    lean_watermark(op, wm);
}

/* The error message of a record that failed with @p err (NOMEM, or a
 * version-2 aggregate's error). */
static __attribute__((noinline)) tdm_err
push_failed(tdm_winop *op, const tdm_record *rec, tdm_err err)
{
    int klen = (int)(rec->key_len > 64 ? 64 : rec->key_len);
    if (err != TDM_ERR_NOMEM)
        return tdm__msgf(&op->msg, err,
                         "the aggregate failed on a record of key '%.*s': %s",
                         klen, rec->key, tdm_err_name(err));
    return tdm__msgf(&op->msg, err,
                     "out of memory processing a record of "
                     "key '%.*s'",
                     klen, rec->key);
}

/* A push that is refused before it is looked at: NULL record, after the
 * end, bad channel. */
static __attribute__((noinline)) tdm_err push_refused(tdm_winop *op, int ch,
                                                      const tdm_record *rec)
{
    if (!rec)
        return tdm__msgf(&op->msg, TDM_ERR_INVAL, "rec must not be NULL");
    if (op->ended)
        return tdm__msgf(&op->msg, TDM_ERR_STATE, "push after end of input");
    return tdm__msgf(&op->msg, TDM_ERR_CHANNEL,
                     "channel %d out of range (n_channels %d)", ch,
                     op->n_channels);
}

/* A record on the general path (and records without timestamp on
 * either): intern the key, process, late handling (R2). */
static __attribute__((noinline)) tdm_err general_push(tdm_winop *op,
                                                      const tdm_record *rec)
{
    tdm_time_ms ts = rec->ts;
    if (op->event_time && ts == TDM_TIME_MIN) {
        op->bad_records++;
        return tdm__msgf(&op->msg, TDM_ERR_NO_TIMESTAMP,
                         "record of key '%.*s' has no timestamp",
                         (int)(rec->key_len > 64 ? 64 : rec->key_len),
                         rec->key);
    }
    if (op->asg->proc_time) {
        tdm_time_ms now = tdm_clock_now(op->clk);
        if (now > op->proctime)
            op->proctime = now;
        ts = op->proctime;
    }
    uint32_t kid;
    uint64_t h = tdm__keys_hash(rec->key, rec->key_len);
    /* The interning reference is held while the record is processed. */
    tdm_err err =
        tdm__keys_intern_hashed(op->keys, rec->key, rec->key_len, h, &kid);
    if (err != TDM_OK)
        return tdm__msgf(&op->msg, err, "out of memory adding key '%.*s'",
                         (int)(rec->key_len > 64 ? 64 : rec->key_len),
                         rec->key);
    bool handled = false;
    err = process_record(op, kid, ts, rec, &handled);
    if (err == TDM_OK && !handled) {
        size_t key_len;
        const char *key = tdm__keys_get(op->keys, kid, &key_len);
        tdm__win_handle_late(op, rec, key, key_len);
    }
    tdm__keys_unref(op->keys, kid);
    if (err == TDM_OK)
        err = op->pending;
    if (err != TDM_OK)
        return push_failed(op, rec, err);
    return TDM_OK;
}

/* Processes one record (R2).  Returns TDM_OK, TDM_ERR_INVAL,
 * TDM_ERR_STATE (after end), TDM_ERR_CHANNEL, TDM_ERR_NO_TIMESTAMP
 * (counted, message names the key) or TDM_ERR_NOMEM. */
tdm_err tdm_winop_push(tdm_winop *op, int ch, const tdm_record *rec)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (!rec || op->ended || ch < 0 || ch >= op->n_channels)
        return push_refused(op, ch, rec);
    op->started = true;
    op->pending = TDM_OK;
    if (op->lean && rec->ts != TDM_TIME_MIN) {
        uint64_t h = tdm__ws_hash(rec->key, rec->key_len);
        tdm_err err = op->lean_sliced ? tdm__slice_push(op, rec, 1, h)
                                      : lean_push(op, rec, rec->ts, NULL, h);
        return err == TDM_OK ? TDM_OK : push_failed(op, rec, err);
    }
    if (op->sess && rec->ts != TDM_TIME_MIN) {
        tdm_err err = tdm__sess_push(op, rec);
        if (err == TDM_OK)
            err = op->pending;
        return err == TDM_OK ? TDM_OK : push_failed(op, rec, err);
    }
    return general_push(op, rec);
}

/* tdm_winop_push with @p ctx lent to a version-2 aggregate's add for
 * the length of the push (op->actx).  A partial needs a version-2
 * aggregate: nothing else can fold one. */
tdm_err tdm_winop_push_ctx(tdm_winop *op, int ch, const tdm_record *rec,
                           const tdm_agg_ctx *ctx)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (ctx && ctx->partial &&
        (op->agg->type != TDM__AGG_CUSTOM || op->agg->m.version != 2))
        return tdm__msgf(&op->msg, TDM_ERR_INVAL,
                         "a partial needs a version-2 aggregate");
    op->actx = ctx;
    tdm_err err = tdm_winop_push(op, ch, rec);
    op->actx = NULL;
    return err;
}

/* Folds a partial accumulator into the windows of rec->ts (win.h).
 * Returns as tdm_winop_push, or TDM_ERR_STATE when the operator is not
 * on the lean path. */
tdm_err tdm__winop_push_partial(tdm_winop *op, int ch, const tdm_record *rec,
                                const double *part, uint64_t hash)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (!rec || op->ended || ch < 0 || ch >= op->n_channels)
        return push_refused(op, ch, rec);
    if (!op->lean || op->lean_kind != TDM_AGG_COUNT ||
        rec->ts == TDM_TIME_MIN || !part)
        return tdm__msgf(&op->msg, TDM_ERR_STATE,
                         "a partial count needs "
                         "the lean path of a count and a timestamp");
    op->started = true;
    op->pending = TDM_OK;
    tdm_err err = op->lean_sliced ? tdm__slice_push(op, rec, part[0], hash)
                                  : lean_push(op, rec, rec->ts, part, hash);
    return err == TDM_OK ? TDM_OK : push_failed(op, rec, err);
}

/* Fetches ahead a key's home slot (win.h). */
void tdm__winop_prefetch_key(const tdm_winop *op, const char *key, size_t len)
{
    if (op && op->lean)
        tdm__winop_prefetch_hash(op, tdm__ws_hash(key, len));
}

/* Fetches ahead the home slot of a key of hash @p hash (win.h).  The
 * slot is where a new key goes and where most keys are found (short
 * probe runs). */
void tdm__winop_prefetch_hash(const tdm_winop *op, uint64_t hash)
{
#if defined(__GNUC__)
    if (!op || !op->lean)
        return;
    const tdm__wstore *ws = op->ws;
    size_t i = tdm__ws_home(hash, ws->slots);
    const char *e = (const char *)tdm__ws_key_at(ws, (uint32_t)i);
    __builtin_prefetch(ws->ctrl + i);
    __builtin_prefetch(e, 1);
    __builtin_prefetch(e + ((size_t)1 << ws->eshift) - 1, 1);
#else
    (void)op;
    (void)hash;
#endif
}

/* ---- Watermarks, statuses, processing time, end ---- */

/* A channel watermark, through the valve (R3.6); what the valve
 * emits fires timers and is forwarded.  Returns TDM_OK, TDM_ERR_STATE,
 * TDM_ERR_CHANNEL, TDM_ERR_NOMEM. */
tdm_err tdm_winop_watermark(tdm_winop *op, int ch, tdm_time_ms wm)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (op->ended)
        return tdm__msgf(&op->msg, TDM_ERR_STATE,
                         "watermark after end of input");
    if (ch < 0 || ch >= op->n_channels)
        return tdm__msgf(&op->msg, TDM_ERR_CHANNEL,
                         "channel %d out of range (n_channels %d)", ch,
                         op->n_channels);
    op->started = true;
    op->pending = TDM_OK;
    tdm_err err = tdm_valve_watermark(op->valve, ch, wm);
    if (err == TDM_OK)
        err = op->pending;
    if (err != TDM_OK)
        return tdm__msgf(&op->msg, err, "watermark %lld on channel %d: %s",
                         (long long)wm, ch, tdm_err_name(err));
    return TDM_OK;
}

/* A channel's idle status, through the valve; statuses the valve
 * emits are forwarded.  Returns TDM_OK, TDM_ERR_STATE, TDM_ERR_CHANNEL. */
tdm_err tdm_winop_status(tdm_winop *op, int ch, int idle)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (op->ended)
        return tdm__msgf(&op->msg, TDM_ERR_STATE, "status after end of input");
    if (ch < 0 || ch >= op->n_channels)
        return tdm__msgf(&op->msg, TDM_ERR_CHANNEL,
                         "channel %d out of range (n_channels %d)", ch,
                         op->n_channels);
    op->started = true;
    op->pending = TDM_OK;
    tdm_err err = tdm_valve_status(op->valve, ch, idle ? 1 : 0);
    if (err == TDM_OK)
        err = op->pending;
    if (err != TDM_OK)
        return tdm__msgf(&op->msg, err, "status on channel %d: %s", ch,
                         tdm_err_name(err));
    return TDM_OK;
}

/* Reads the clock and fires due processing-time timers in time
 * order (R3.7).  After end it does nothing (R7.3). */
tdm_err tdm_winop_advance(tdm_winop *op)
{
    if (!op)
        return TDM_ERR_INVAL;
    /* After end the processing-time service is quiesced (R7.3). */
    if (op->ended || !op->clk)
        return TDM_OK;
    op->pending = TDM_OK;
    tdm_time_ms now = tdm_clock_now(op->clk);
    if (now > op->proctime)
        op->proctime = now;
    tdm__timer t;
    while (tdm__timers_pop(op->timers[TDM__PROC], op->proctime, &t))
        on_timer(op, TDM__PROC, &t);
    if (op->pending != TDM_OK)
        return tdm__msgf(&op->msg, op->pending,
                         "processing-time timers: "
                         "%s",
                         tdm_err_name(op->pending));
    return TDM_OK;
}

/* End of input: the valve emits TDM_TIME_MAX, which fires every
 * event-time timer and is forwarded (R7.1).  TDM_ERR_STATE if repeated. */
tdm_err tdm_winop_end(tdm_winop *op)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (op->ended)
        return tdm__msgf(&op->msg, TDM_ERR_STATE, "end called twice");
    op->started = true;
    op->pending = TDM_OK;
    tdm_err err = tdm_valve_end(op->valve);
    op->ended = true;
    if (err == TDM_OK)
        err = op->pending;
    if (err != TDM_OK)
        return tdm__msgf(&op->msg, err, "end of input: %s", tdm_err_name(err));
    return TDM_OK;
}

/* ---- Construction and settings ---- */

static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* Builds the operator; owns asg, trg and agg in every case.
 * Returns TDM_OK, TDM_ERR_INVAL naming the parameter, TDM_ERR_NOMEM. */
tdm_err tdm_winop_new(tdm_assigner *asg, tdm_trigger *trg, tdm_aggregate *agg,
                      int n_channels, tdm_clock *clk, tdm_emit_cb emit,
                      void *opaque, tdm_winop **out, char *errbuf,
                      size_t errbuf_size)
{
    tdm_winop *op = NULL;
    tdm_err err;
    if (out)
        *out = NULL;
    if (!out) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "out must not be NULL");
        goto fail;
    }
    if (!asg) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "asg must not be NULL");
        goto fail;
    }
    if (!agg) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "agg must not be NULL");
        goto fail;
    }
    if (n_channels < 1) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "n_channels must be >= 1 (got %d)", n_channels);
        goto fail;
    }
    if (asg->proc_time && !clk) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "clk must not be NULL for a processing-time "
                        "assigner");
        goto fail;
    }
    if (!trg) {
        /* The assigner's default trigger. */
        if (asg->kind == TDM__ASG_GLOBAL)
            err = tdm_trigger_new_never(&trg);
        else if (asg->proc_time)
            err = tdm_trigger_new_processing_time(&trg);
        else
            err = tdm_trigger_new_event_time(&trg);
        if (err != TDM_OK) {
            err = tdm__errf(errbuf, errbuf_size, err,
                            "out of memory creating the default trigger");
            goto fail;
        }
    }
    if (tdm__assigner_is_merging(asg) && !tdm__trigger_can_merge(trg)) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "trg cannot merge windows (no on_merge) but the "
                        "session assigner merges");
        goto fail;
    }
    if (asg->proc_time && tdm__trigger_is_continuous(trg)) {
        /* Event-time fire points walked from a record's timestamp up to a
         * processing-time window's end could take billions of steps; the
         * combination has no meaning, so it is refused. */
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "trg: a continuous_event_time trigger needs "
                        "event-time windows, not processing-time ones");
        goto fail;
    }
    if (tdm__assigner_is_merging(asg) && !tdm__agg_can_merge(agg)) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "agg cannot merge accumulators (no merge) but the "
                        "session assigner merges");
        goto fail;
    }
    op = tdm__calloc(1, sizeof *op);
    if (!op)
        goto nomem;
    op->asg = asg;
    op->trg = trg;
    op->agg = agg;
    asg = NULL;
    trg = NULL;
    agg = NULL;
    op->sink.fn = emit;
    op->sink.opaque = opaque;
    op->clk = clk;
    op->n_channels = n_channels;
    op->event_time = tdm__assigner_is_event_time(op->asg);
    op->merging = tdm__assigner_is_merging(op->asg);
    op->global = op->asg->kind == TDM__ASG_GLOBAL;
    op->single = op->global || op->asg->kind == TDM__ASG_TUMBLING;
    op->wm = TDM_TIME_MIN;
    op->data_wm = TDM_TIME_MAX;
    op->closed_max = TDM_TIME_MIN;
    op->proctime = clk ? tdm_clock_now(clk) : TDM_TIME_MIN;
    /* Slot layout: header, user accumulator, trigger state. */
    op->acc_off = round16(sizeof(tdm__win_slot));
    op->acc_size = tdm__agg_acc_size(op->agg);
    op->tstate_off = round16(op->acc_off + op->acc_size);
    op->tstate_size = tdm__trigger_state_size(op->trg);
    op->keys = tdm__keys_new();
    op->wins = tdm__kv_new(op->tstate_off + op->tstate_size);
    op->timers[TDM__EVENT] = tdm__timers_new();
    op->timers[TDM__PROC] = tdm__timers_new();
    if (!op->keys || !op->wins || !op->timers[0] || !op->timers[1])
        goto nomem;
    if (lean_applies(op->asg, op->trg, op->agg)) {
        op->lean = true;
        op->lean_tumbling = op->asg->kind == TDM__ASG_TUMBLING;
        op->lean_kind = op->agg->kind;
        op->lean_sid = TDM__WS_NONE;
        op->slice_sid = TDM__WS_NONE;
        /* Sliding counts without lateness (the default) are sliced:
         * keys then mostly have one slice at a time, as tumbling keys
         * one window, and start with the small entries. */
        if (tdm__slice_applies(op))
            tdm__slice_setup(op);
        op->ws = tdm__ws_new(op->lean_kind == TDM_AGG_AVG ? 2 : 1,
                             op->lean_tumbling || op->lean_sliced);
        if (!op->ws)
            goto nomem;
    }
    if (tdm__sess_applies(op) && tdm__sess_setup(op) != TDM_OK)
        goto nomem;
    if (op->merging && op->tstate_size) {
        op->tsnap = tdm__calloc(1, op->tstate_size);
        if (!op->tsnap)
            goto nomem;
    }
    err = tdm_valve_new(n_channels, on_valve, op, &op->valve);
    if (err != TDM_OK)
        goto nomem;
    *out = op;
    return TDM_OK;
nomem:
    err = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                    "out of memory creating the window operator");
fail:
    tdm_winop_destroy(op);
    tdm_assigner_destroy(asg);
    tdm_trigger_destroy(trg);
    tdm_aggregate_destroy(agg);
    return err;
}

/* Turns the late side output on or off before the first
 * input.  Returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_STATE. */
tdm_err tdm_winop_set_late_output(tdm_winop *op, int enabled)
{
    if (!op)
        return TDM_ERR_INVAL;
    if (op->started)
        return tdm__msgf(&op->msg, TDM_ERR_STATE,
                         "late output can only "
                         "be set before the first input");
    op->late_output = enabled != 0;
    return TDM_OK;
}

/* ---- Queries and teardown ---- */

/* Switches a fresh operator to the general path (test hook). */
tdm_err tdm__winop_disable_lean(tdm_winop *op)
{
    if (op->started)
        return TDM_ERR_STATE;
    tdm__ws_destroy(op->ws);
    op->ws = NULL;
    op->lean = false;
    op->lean_sliced = false;
    tdm__sess_free(op);
    return TDM_OK;
}

/* Switches a fresh sliced operator to the lean path's per-window cells
 * (allowed lateness set, a restore, tests).  The store is made again
 * with the entries of a sliding store; without memory for it the empty
 * one is kept (its entries grow as cells spill). */
tdm_err tdm__winop_disable_slicing(tdm_winop *op)
{
    if (op->started && !op->restored)
        return TDM_ERR_STATE;
    if (!op->lean_sliced)
        return TDM_OK;
    op->lean_sliced = false;
    op->slice_sid = TDM__WS_NONE;
    tdm__slice_free(op);
    if (op->ws->live_spans == 0) {
        tdm__wstore *ws = tdm__ws_new(op->ws->n_vals, false);
        if (ws) {
            tdm__ws_destroy(op->ws);
            op->ws = ws;
        }
    }
    return TDM_OK;
}

/* Records dropped as too late (R2.1). */
void tdm__winop_set_data_watermark(tdm_winop *op, tdm_time_ms wm)
{
    op->data_wm = wm;
}

int64_t tdm__winop_late_by_fallback(const tdm_winop *op)
{
    return op ? op->late_fallback : 0;
}

int64_t tdm_winop_late_dropped(const tdm_winop *op)
{
    return op ? op->late_dropped : 0;
}

/* Records sent to the late output. */
int64_t tdm_winop_late_emitted(const tdm_winop *op)
{
    return op ? op->late_emitted : 0;
}

/* Records rejected for lacking a timestamp. */
int64_t tdm_winop_bad_records(const tdm_winop *op)
{
    return op ? op->bad_records : 0;
}

/* Windows in state. */
int64_t tdm_winop_live_windows(const tdm_winop *op)
{
    if (!op)
        return 0;
    if (op->lean_sliced)
        return (int64_t)op->ws->n_members; /* keys listed per window */
    if (op->lean)
        return (int64_t)op->ws->n_cells;
    if (op->sess)
        return (int64_t)tdm__sess_count(op);
    return (int64_t)tdm__kv_count(op->wins);
}

/* Bytes of live state: slots, keys, timers and contents. */
int64_t tdm_winop_state_bytes(const tdm_winop *op)
{
    if (!op)
        return 0;
    if (op->lean)
        return (int64_t)tdm__ws_bytes(op->ws);
    if (op->sess)
        return (int64_t)(tdm__sess_bytes(op) + tdm__keys_bytes(op->keys)) +
               op->content_bytes;
    return (int64_t)(tdm__kv_bytes(op->wins) + tdm__keys_bytes(op->keys) +
                     tdm__timers_bytes(op->timers[TDM__EVENT]) +
                     tdm__timers_bytes(op->timers[TDM__PROC])) +
           op->content_bytes;
}

/* Keys with state: the window store's keys on the lean path, interned
 * keys otherwise (a key lives while a window or timer holds it). */
int64_t tdm__winop_keys(const tdm_winop *op)
{
    if (!op)
        return 0;
    if (op->lean)
        return (int64_t)op->ws->live_keys;
    return (int64_t)tdm__keys_count(op->keys);
}

/* Looks window [start, end) of a key up without changing anything: the
 * lean path's cell, or the general path's slot (merging assigners: the
 * session with these bounds). */
void tdm__winop_probe(const tdm_winop *op, const char *key, size_t len,
                      tdm_time_ms start, tdm_time_ms end, int *has_state,
                      int64_t *elements)
{
    *has_state = 0;
    *elements = -1;
    if (!op)
        return;
    if (op->lean) {
        const tdm__wstore *ws = op->ws;
        uint32_t kid = tdm__ws_find(ws, key, len, tdm__ws_hash(key, len));
        uint32_t sid = tdm__ws_span_find(ws, start, end);
        if (kid == TDM__WS_NONE || sid == TDM__WS_NONE)
            return;
        if (op->lean_sliced) {
            double n;
            if (tdm__slice_count(op, kid, start, end, &n)) {
                *has_state = 1;
                *elements = (int64_t)n;
            }
            return;
        }
        const tdm__ws_cell *c =
            tdm__ws_cell_of(ws, tdm__ws_key_at(ws, kid), kid, sid);
        if (!c)
            return;
        *has_state = 1;
        if (op->lean_kind == TDM_AGG_COUNT)
            *elements = (int64_t)c->v[0];
        else if (op->lean_kind == TDM_AGG_AVG)
            *elements = (int64_t)c->v[1];
        return;
    }
    uint32_t kid;
    if (!tdm__keys_find(op->keys, key, len, tdm__keys_hash(key, len), &kid))
        return;
    tdm__win_slot *s;
    if (op->merging) {
        s = op->sess ? tdm__sess_find(op, kid, start, end)
                     : tdm__win_merge_find((tdm_winop *)op, kid, start, end);
    } else {
        tdm__ns ns = {start, end};
        s = tdm__kv_get(op->wins, kid, ns);
    }
    if (!s || !(s->flags & TDM__W_CONTENTS))
        return;
    *has_state = 1;
    const tdm_aggregate *a = op->agg;
    if (a->type == TDM__AGG_WINDOW_FN)
        *elements = (int64_t)s->c.recs.n;
    else if (a->type == TDM__AGG_BUILTIN && a->kind == TDM_AGG_COLLECT)
        *elements = (int64_t)s->c.col.n;
    else if (a->type == TDM__AGG_BUILTIN &&
             (a->kind == TDM_AGG_COUNT || a->kind == TDM_AGG_SUM ||
              a->kind == TDM_AGG_AVG))
        *elements = (int64_t)s->c.num.n;
}

/* The watermark the operator last processed. */
tdm_time_ms tdm_winop_current_watermark(const tdm_winop *op)
{
    return op ? op->wm : TDM_TIME_MIN;
}

/* The last error message ("" before any). */
const char *tdm_winop_errmsg(const tdm_winop *op)
{
    return op ? op->msg.text : "";
}

static void free_contents(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    (void)key;
    (void)ns;
    tdm__agg_clear(ud, slot);
}

/* Frees the operator and everything it owns; NULL and half-built
 * operators are fine. */
void tdm_winop_destroy(tdm_winop *op)
{
    if (!op)
        return;
    if (op->wins && op->agg)
        tdm__kv_each(op->wins, free_contents, op);
    tdm_valve_destroy(op->valve);
    tdm__slice_free(op);
    tdm__ws_destroy(op->ws);
    tdm__sess_free(op);
    tdm__kv_destroy(op->wins);
    tdm__timers_destroy(op->timers[TDM__EVENT]);
    tdm__timers_destroy(op->timers[TDM__PROC]);
    tdm__keys_destroy(op->keys);
    tdm__free(op->mlist);
    tdm__free(op->mstates);
    tdm__free(op->tsnap);
    tdm__agg_free_result(&op->res);
    tdm_assigner_destroy(op->asg);
    tdm_trigger_destroy(op->trg);
    tdm_aggregate_destroy(op->agg);
    tdm__free(op);
}
