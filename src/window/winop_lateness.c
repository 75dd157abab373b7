/* SPDX-License-Identifier: MIT */
/* winop_lateness.c - the allowed lateness of a window operator, set
 * before the first input or changed while it runs (issue 21: a live
 * setting, docs/live-settings.md "Allowed lateness").
 *
 * Flink fixes allowedLateness when the job graph is built: every window
 * registers its cleanup timer at maxTimestamp + lateness as it is made.
 * Changing the value on a running operator therefore means moving the
 * cleanup time of every window that lives, and deciding what the windows
 * already cleaned up become.  The rules:
 *
 *   L1  Before the first input the value is simply set; the sliced and
 *       session modes, which exist only without lateness, are left when
 *       it is > 0 (as tdm_winop_new's choice would have been).
 *   L2  After it, the value changes on the lean path's per-window cells
 *       and on the general path's non-merging windows.  The sliced and
 *       session modes keep no per-window cleanup time, and merging
 *       windows change their bounds as they merge: those refuse with
 *       TDM_ERR_UNSUPPORTED, naming the mode (a restored operator never
 *       runs in the sliced or session mode, winop_snap.c).  Processing-
 *       time assigners have no lateness (R4.2): the value is kept and
 *       changes nothing.
 *   L3  A raise keeps closed what was closed: the windows whose
 *       maxTimestamp is <= watermark - old lateness were cleaned up (or
 *       are due); the operator remembers that horizon (closed_max), and
 *       a record for one of those windows is late (late output, counted),
 *       never the start of a fresh window whose result would be partial.
 *   L4  A lowered value cleans up now every window whose new cleanup
 *       time is <= the watermark (cleanup emits nothing); records for
 *       them are late from then on.
 *   L5  Every other window's cleanup time moves to maxTimestamp + the
 *       new value; a window that has not fired still fires at its
 *       maxTimestamp, and refires on late records until the new cleanup.
 *   L6  A checkpoint keeps the value and the closed horizon; a restore
 *       takes them from the snapshot (winop_snap.c).
 *
 * The change is a pass over the live windows: O(windows), done once per
 * change, outside any callback.
 */
#include "state/wstore.h"
#include "window/win.h"

/* L1, L2: why the value of a started operator cannot change, or NULL. */
static const char *lateness_fixed(const tdm_winop *op)
{
    if (op->lean_sliced)
        return "sliced"; /* L2: sliding counts keep slices, not windows */
    if (op->sess)
        return "session"; /* L2: the session mode keeps no cleanup time */
    if (op->merging)
        return "merging"; /* L2: merging windows change their bounds */
    return NULL;
}

/* ---- The lean path (L4, L5) ---- */

typedef struct lean_pass {
    tdm_winop *op;
    tdm_err err;
} lean_pass;

/* L5: one window interval's new cleanup time. */
static void lean_retime(void *ud, uint32_t sid)
{
    lean_pass *p = ud;
    tdm__wstore *ws = p->op->ws;
    tdm_time_ms clean = tdm__win_cleanup(p->op, ws->spans[sid].end);
    tdm_err err = tdm__ws_span_set_clean(ws, sid, clean);
    if (err != TDM_OK)
        p->err = err;
}

/* Every interval moves to its cleanup time at the operator's value. */
static tdm_err lean_retime_all(tdm_winop *op)
{
    lean_pass p = {op, TDM_OK};
    tdm__ws_span_each(op->ws, lean_retime, &p);
    return p.err;
}

/* Those now due are cleaned up by the watermark walk (L4: every interval
 * due has fired, so the walk only cleans up). */
static tdm_err lean_change(tdm_winop *op)
{
    tdm_err err = lean_retime_all(op);
    tdm__win_lean_watermark(op, op->wm);
    return err;
}

/* ---- The general path (L4, L5) ---- */

/* The window's cleanup timer at the old value goes.  With no lateness
 * the cleanup timer is the maxTimestamp timer, which stays (only its
 * cleanup flag goes). */
static void drop_cleanup(tdm_winop *op, tdm__win_slot *s)
{
    if (!(s->flags & TDM__W_ET_CLEAN))
        return;
    tdm_time_ms c = tdm__win_cleanup(op, s->end);
    if (c == tdm__win_max_ts(op, s->end)) {
        s->flags &= ~TDM__W_ET_CLEAN;
        return;
    }
    tdm_trigger_ctx ctx = {op,     s->key, s->start,
                           s->end, s,      tdm__win_tstate(op, s)};
    tdm__win_timer_del(&ctx, TDM__EVENT, c);
}

/* L4 or L5 for one window at the new value. */
static tdm_err retime(tdm_winop *op, tdm__win_slot *s)
{
    if (tdm__win_cleanup(op, s->end) <= op->wm) {
        tdm__win_clear_all(op, s); /* L4 */
        return TDM_OK;
    }
    tdm_trigger_ctx ctx = {op,     s->key, s->start,
                           s->end, s,      tdm__win_tstate(op, s)};
    return tdm__win_register_cleanup(&ctx);
}

/* Moves every window of the general path to @p lateness: the cleanup
 * timers at the old value go (@p drop_old; else only their flags: the
 * timers are stale, and popping one at another time than the cleanup
 * time does nothing), then each window gets its new one or is cleaned
 * up.  The windows are looked up again by (key, window) at each step: a
 * cleanup may move other slots of the store. */
static tdm_err general_change(tdm_winop *op, tdm_time_ms lateness,
                              bool drop_old)
{
    size_t n;
    tdm__kv_ref *r = tdm__kv_refs(op->wins, &n);
    if (!r)
        return TDM_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        tdm__win_slot *s = tdm__kv_get(op->wins, r[i].key, r[i].ns);
        if (s && drop_old)
            drop_cleanup(op, s);
        else if (s)
            s->flags &= ~TDM__W_ET_CLEAN;
    }
    op->lateness = lateness;
    tdm_err err = TDM_OK;
    for (size_t i = 0; i < n && err == TDM_OK; i++) {
        tdm__win_slot *s = tdm__kv_get(op->wins, r[i].key, r[i].ns);
        if (s)
            err = retime(op, s);
    }
    tdm__free(r);
    return err;
}

tdm_err tdm__winop_lateness_resync(tdm_winop *op)
{
    if (!op->event_time || op->merging)
        return TDM_OK;
    if (op->lean)
        return lean_retime_all(op);
    return general_change(op, op->lateness, false);
}

/* ---- Setting ---- */

/* L1: a fresh operator (also one being restored, winop_snap.c). */
void tdm__winop_lateness_fresh(tdm_winop *op, tdm_time_ms lateness)
{
    op->lateness = lateness;
    if (op->lean_sliced && !tdm__slice_applies(op))
        (void)tdm__winop_disable_slicing(op);
    if (op->sess && !tdm__sess_applies(op))
        tdm__sess_free(op);
}

/* L2 .. L5 on a started operator. */
static tdm_err change(tdm_winop *op, tdm_time_ms lateness, char *errbuf,
                      size_t errbuf_size)
{
    const char *fixed = lateness_fixed(op);
    if (fixed && op->event_time)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "allowed lateness cannot change while the operator "
                         "runs in the %s mode (it keeps no cleanup time per "
                         "window); set it before the first input",
                         fixed);
    tdm_time_ms old = op->lateness;
    if (!op->event_time || lateness == old) {
        op->lateness = lateness; /* R4.2: no effect in processing time */
        return TDM_OK;
    }
    if (lateness > old && op->wm != TDM_TIME_MIN) {
        /* L3: max_ts + old <= wm means closed. */
        tdm_time_ms h = tdm__time_sub_sat(op->wm, old);
        if (h > op->closed_max)
            op->closed_max = h;
    }
    tdm_err err;
    if (op->lean) {
        op->lateness = lateness;
        err = lean_change(op);
    } else {
        err = general_change(op, lateness, true);
    }
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "out of memory moving the windows' cleanup times");
    return TDM_OK;
}

tdm_err tdm_winop_set_allowed_lateness(tdm_winop *op, tdm_time_ms lateness_ms,
                                       char *errbuf, size_t errbuf_size)
{
    if (!op)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "op must not be NULL");
    if (lateness_ms < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "allowed_lateness_ms must be >= 0 (got %lld)",
                         (long long)lateness_ms);
    if (!op->started) {
        tdm__winop_lateness_fresh(op, lateness_ms);
        return TDM_OK;
    }
    return change(op, lateness_ms, errbuf, errbuf_size);
}

tdm_time_ms tdm_winop_allowed_lateness(const tdm_winop *op)
{
    return op ? op->lateness : 0;
}
