/* SPDX-License-Identifier: MIT */
/* winop_slice.c - the lean path's sliced mode: event-time sliding counts
 * without allowed lateness share work between overlapping windows
 * (issue 7: each record updates one slice, windows combine slices).
 *
 * Time is cut into slices of gcd(size, slide) (aligned to the offset),
 * so that every window is a run of whole slices and all the timestamps
 * of a slice belong to the same windows.  The window store holds:
 *
 *   - one cell per (key, slice) with the count; the slice is a span
 *     (start, SLICE_END) (no window interval can be the same span),
 *     never due, whose t_clean is the end of the last window that
 *     contains it (the latest-starting one, which fires last);
 *   - one span per window with its fire time and its keys in the order
 *     they first came to it (the order the per-window path fires them
 *     in), but no cells.
 *
 * A record whose (key, slice) cell exists adds to it and is done: every
 * window of the slice that is not late now was not late when the cell
 * was made, so the key is listed in it already.  A new cell lists the
 * key in those windows of the record that do not have it yet (no cell of
 * the key in another of their slices).  When the watermark reaches a
 * window's maxTimestamp its keys are walked in order, each key's count
 * is the sum of its cells in the window's slices, and - no lateness -
 * the window is cleaned up at once, with the cells of the slices whose
 * last window it was.  Windows whose end saturates at TDM_TIME_MAX share
 * a fire time, so their slices are released only when every window has
 * fired (watermark >= TDM_TIME_MAX - 1).
 *
 * The emit callback may call back into the operator (push records, send
 * watermarks).  The operator's watermark is then past every window that
 * is being walked or due to be walked, so what the callback adds is not
 * theirs - but it may land in their slices, and a nested watermark may
 * release slices that an outer walk still reads.  So before anything
 * changes, the keys and counts those windows have still to emit are
 * copied ("frozen") and emitted from the copy: each window emits the
 * state it had when the watermark passed it, as on the per-window
 * path.
 */
#include <string.h>

#include "state/wstore.h"
#include "window/win.h"

#define MAX_SLICES 64 /* slices per window (and windows per record) */
/* The end of every slice's span: no window ends at TDM_TIME_MIN (a
 * window's end is past a timestamp), so slices and windows never share
 * a span, even when a window's bounds saturate ([MAX, MAX) exists). */
#define SLICE_END TDM_TIME_MIN

/* A window walk under way (see the file comment). */
typedef struct tdm__slice_walk {
    uint32_t sid;          /* the window's span */
    uint32_t next;         /* members before it have been emitted */
    uint32_t n;            /* members to walk */
    unsigned char *frozen; /* from member `next` at the freeze on: count
                            * (8 bytes), key length (4, UINT32_MAX: no
                            * result) and key bytes per member */
    size_t cursor;         /* read position in frozen */
    struct tdm__slice_walk *up;
} tdm__slice_walk;

/* The windows of one slice that are not late, with their spans: what a
 * new (key, slice) cell lists its key in.  Valid while the slice, the
 * watermark and the window spans (slice_wgen) are the same. */
typedef struct tdm__slice_cache {
    uint32_t slice; /* slice span id, NONE: empty */
    tdm_time_ms wm;
    uint64_t wgen;
    int nw;
    tdm_time_ms start[MAX_SLICES], end[MAX_SLICES];
    uint32_t sid[MAX_SLICES];
} tdm__slice_cache;

/* Which operators take the sliced mode; see win.h.  Sliding counts
 * only (W-CU1: cumulate windows never reach the lean path). */
bool tdm__slice_applies(const tdm_winop *op)
{
    if (!op->lean || op->asg->kind != TDM__ASG_SLIDING ||
        op->lean_kind != TDM_AGG_COUNT || op->lateness != 0)
        return false;
    tdm_time_ms g = tdm__time_gcd(op->asg->size, op->asg->slide);
    return g < op->asg->size && op->asg->size / g <= MAX_SLICES;
}

/* Sets the slice length and offset; see win.h. */
void tdm__slice_setup(tdm_winop *op)
{
    op->slice_len = tdm__time_gcd(op->asg->size, op->asg->slide);
    op->slice_off = op->asg->offset % op->slice_len;
    op->slice_sid = TDM__WS_NONE;
    op->lean_sliced = true;
}

/* The slice of @p ts: [*start, *end), saturated at the ends of time. */
static inline void slice_bounds(const tdm_winop *op, tdm_time_ms ts,
                                tdm_time_ms *start, tdm_time_ms *end)
{
    tdm_time_ms back = tdm__floor_mod(ts, op->slice_off, op->slice_len);
    *start = tdm__time_sub_sat(ts, back);
    *end = tdm__time_add_sat(ts, op->slice_len - back);
}

/* The last timestamp of window [start, end): end - 1, or TDM_TIME_MAX
 * when the end saturated there (the window holds TDM_TIME_MAX too). */
static inline tdm_time_ms win_last(const tdm_winop *op, tdm_time_ms start,
                                   tdm_time_ms end)
{
    if (end == TDM_TIME_MAX && start > TDM_TIME_MAX - op->asg->size)
        return TDM_TIME_MAX;
    return end - 1;
}

/* The sum of key @p kid's cells in the slices of [start, end); see
 * win.h.  Inline cells are checked by their slice's start, spilled ones
 * looked up slice by slice (keys with more live slices than fit in their
 * entry). */
bool tdm__slice_count(const tdm_winop *op, uint32_t kid, tdm_time_ms start,
                      tdm_time_ms end, double *count)
{
    const tdm__wstore *ws = op->ws;
    tdm__ws_key *e = tdm__ws_key_at(ws, kid);
    double sum = 0;
    bool any = false;
    tdm_time_ms last = win_last(op, start, end);
    for (uint32_t i = 0; i < ws->n_inline; i++) {
        const tdm__ws_cell *c = tdm__ws_inline(ws, e, i);
        if (!c->span)
            continue;
        tdm_time_ms s = ws->spans[c->span - 1].start;
        if (s >= start && s <= last) {
            sum += c->v[0];
            any = true;
        }
    }
    if (tdm__ws_n_spill(e)) {
        tdm_time_ms x = start, ss, se, prev = 0;
        for (bool first = true;; first = false) {
            slice_bounds(op, x, &ss, &se);
            if (!first && ss == prev)
                break; /* the last slice again: it saturated */
            prev = ss;
            uint32_t sid = tdm__ws_span_find(ws, ss, SLICE_END);
            const tdm__ws_cell *c =
                sid == TDM__WS_NONE ? NULL : tdm__ws_spill_find(ws, kid, sid);
            if (c) {
                sum += c->v[0];
                any = true;
            }
            if (se > last || se <= x)
                break; /* past the window, or the end of time */
            x = se;
        }
    }
    *count = sum;
    return any;
}

/* ---- Walks and the emit callback ---- */

/* Results fixed early: a due window's keys and counts, taken before
 * the emit callback changed anything. */
typedef struct tdm__slice_frozen {
    uint32_t sid;
    unsigned char *buf;
} tdm__slice_frozen;

/* The keys and counts of window span @p sid's members from @p from on,
 * in the layout of tdm__slice_walk.frozen.  NULL on OOM. */
static unsigned char *freeze_members(const tdm_winop *op, uint32_t sid,
                                     uint32_t from)
{
    const tdm__wstore *ws = op->ws;
    const tdm__ws_span *sp = tdm__ws_span_at(ws, sid);
    size_t bytes = 1;
    for (uint32_t i = from; i < sp->n; i++) {
        uint32_t kid = sp->members[i];
        bytes += 12;
        if (kid != TDM__WS_NONE)
            bytes += tdm__ws_key_len(tdm__ws_key_at(ws, kid));
    }
    unsigned char *buf = tdm__malloc(bytes);
    if (!buf)
        return NULL;
    size_t at = 0;
    for (uint32_t i = from; i < sp->n; i++) {
        uint32_t kid = sp->members[i];
        double v = 0;
        uint32_t len = UINT32_MAX;
        const tdm__ws_key *e = NULL;
        if (kid != TDM__WS_NONE &&
            tdm__slice_count(op, kid, sp->start, sp->end, &v)) {
            e = tdm__ws_key_at(ws, kid);
            len = (uint32_t)tdm__ws_key_len(e);
        }
        memcpy(buf + at, &v, 8);
        memcpy(buf + at + 8, &len, 4);
        at += 12;
        if (e && len) {
            memcpy(buf + at, tdm__ws_key_bytes(e), len);
            at += len;
        }
    }
    return buf;
}

/* True when window span @p sid has results fixed early. */
static bool is_frozen(const tdm_winop *op, uint32_t sid)
{
    for (uint32_t i = 0; i < op->n_sfrozen; i++)
        if (op->sfrozen[i].sid == sid)
            return true;
    return false;
}

/* Fixes the results of every window the watermark has passed and that
 * has not emitted them all yet: the walks under way (from their next
 * key on) and the due windows not walked yet.  Called before the emit
 * callback changes anything (see the file comment): the operator's
 * watermark is already past those windows, so what the callback adds
 * is not theirs, but it may land in their slices.  Returns TDM_OK or
 * TDM_ERR_NOMEM (what was fixed stays fixed, which is still right). */
static tdm_err freeze_due(tdm_winop *op)
{
    const tdm__wstore *ws = op->ws;
    for (tdm__slice_walk *w = op->swalk; w; w = w->up) {
        if (w->frozen)
            continue;
        w->frozen = freeze_members(op, w->sid, w->next);
        if (!w->frozen)
            return TDM_ERR_NOMEM;
        w->cursor = 0;
    }
    for (uint32_t h = 0; h < ws->n_heap; h++) {
        uint32_t sid = ws->heap[h];
        const tdm__ws_span *sp = tdm__ws_span_at(ws, sid);
        if (sp->fired || sp->t_fire > op->wm || is_frozen(op, sid))
            continue;
        if (op->n_sfrozen == op->cap_sfrozen) {
            uint32_t ncap = op->cap_sfrozen ? op->cap_sfrozen * 2 : 4;
            tdm__slice_frozen *nf =
                tdm__realloc(op->sfrozen, ncap * sizeof *nf);
            if (!nf)
                return TDM_ERR_NOMEM;
            op->sfrozen = nf;
            op->cap_sfrozen = ncap;
        }
        unsigned char *buf = freeze_members(op, sid, 0);
        if (!buf)
            return TDM_ERR_NOMEM;
        op->sfrozen[op->n_sfrozen].sid = sid;
        op->sfrozen[op->n_sfrozen].buf = buf;
        op->n_sfrozen++;
    }
    return TDM_OK;
}

/* Frees the results fixed early; see win.h. */
void tdm__slice_free(tdm_winop *op)
{
    tdm__free(op->scache);
    op->scache = NULL;
    for (uint32_t i = 0; i < op->n_sfrozen; i++)
        tdm__free(op->sfrozen[i].buf);
    tdm__free(op->sfrozen);
    op->sfrozen = NULL;
    op->n_sfrozen = op->cap_sfrozen = 0;
}

/* Releases cell @p c of key @p kid in slice @p ssid, and the slice when
 * it was its last cell. */
static void release_cell(tdm_winop *op, uint32_t kid, tdm__ws_cell *c,
                         uint32_t ssid)
{
    tdm__wstore *ws = op->ws;
    tdm__ws_cell_release(ws, kid, c);
    if (ws->spans[ssid].cells == 0) {
        tdm__ws_span_free(ws, ssid);
        op->slice_wgen++;
        if (op->slice_sid == ssid)
            op->slice_sid = TDM__WS_NONE;
    }
}

/* Releases key @p kid's cells in the slices whose last window ends at
 * @p wend (the window [wstart, wend) just fired). */
static void release_last(tdm_winop *op, uint32_t kid, tdm_time_ms wstart,
                         tdm_time_ms wend)
{
    tdm__wstore *ws = op->ws;
    tdm__ws_key *e = tdm__ws_key_at(ws, kid);
    bool spilled = tdm__ws_n_spill(e) != 0;
    for (uint32_t i = 0; i < ws->n_inline; i++) {
        tdm__ws_cell *c = tdm__ws_inline(ws, e, i);
        if (!c->span)
            continue;
        uint32_t ssid = c->span - 1;
        const tdm__ws_span *sl = &ws->spans[ssid];
        if (sl->end == SLICE_END && sl->t_clean == wend)
            release_cell(op, kid, c, ssid);
    }
    if (!spilled)
        return;
    tdm_time_ms x = wstart, ss, se, last = win_last(op, wstart, wend);
    tdm_time_ms prev = 0;
    for (bool first = true;; first = false) {
        slice_bounds(op, x, &ss, &se);
        if (!first && ss == prev)
            break;
        prev = ss;
        uint32_t ssid = tdm__ws_span_find(ws, ss, SLICE_END);
        if (ssid != TDM__WS_NONE && ws->spans[ssid].t_clean == wend) {
            tdm__ws_cell *c = tdm__ws_spill_find(ws, kid, ssid);
            if (c) {
                bool only = tdm__ws_n_spill(e) == 1;
                release_cell(op, kid, c, ssid);
                if (only)
                    break; /* the key may be gone */
            }
        }
        if (se > last || se <= x)
            break;
        x = se;
    }
}

/* Fires window span @p sid (taken out of the due order) and cleans it
 * up: one result per listed key, in listing order. */
static void walk_window(tdm_winop *op, uint32_t sid)
{
    tdm__wstore *ws = op->ws;
    const tdm__ws_span *sp = tdm__ws_span_at(ws, sid);
    tdm__slice_walk w;
    memset(&w, 0, sizeof w);
    w.sid = sid;
    w.n = sp->n;
    w.up = op->swalk;
    op->swalk = &w;
    for (uint32_t f = 0; f < op->n_sfrozen; f++) {
        if (op->sfrozen[f].sid != sid)
            continue;
        /* Fixed before the walk began: emitted from the copy. */
        w.frozen = op->sfrozen[f].buf;
        op->sfrozen[f] = op->sfrozen[--op->n_sfrozen];
        break;
    }
    tdm_time_ms wstart = sp->start, wend = sp->end;
    /* Windows saturated at the end of time fire together: their slices
     * go when all have fired (tdm__slice_watermark). */
    bool release = wend != TDM_TIME_MAX;
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_RESULT);
    ev.has_window = 1;
    ev.win_start = wstart;
    ev.win_end = wend;
    ev.time = sp->t_fire;
    ev.pane_timing = TDM_PANE_ON_TIME;
    ev.pane_index = 0;
    ev.is_update = 0;
    for (uint32_t i = 0; i < w.n; i++) {
        const uint32_t *m = tdm__ws_span_at(ws, sid)->members;
        w.next = i + 1;
        if (w.frozen) {
            double v;
            uint32_t len;
            memcpy(&v, w.frozen + w.cursor, 8);
            memcpy(&len, w.frozen + w.cursor + 8, 4);
            w.cursor += 12;
            if (len != UINT32_MAX) {
                ev.key = (const char *)w.frozen + w.cursor;
                ev.key_len = len;
                ev.value = v;
                w.cursor += len;
                tdm__emit(&op->sink, &ev);
            }
        } else {
            /* The keys' entries are scattered: fetch ahead. */
            if (i + 8 < w.n && m[i + 8] != TDM__WS_NONE)
                tdm__ws_prefetch_key(ws, m[i + 8]);
            uint32_t kid = m[i];
            double v;
            if (kid != TDM__WS_NONE &&
                tdm__slice_count(op, kid, wstart, wend, &v)) {
                const tdm__ws_key *e = tdm__ws_key_at(ws, kid);
                ev.key = tdm__ws_key_bytes(e);
                ev.key_len = tdm__ws_key_len(e);
                ev.value = v;
                tdm__emit(&op->sink, &ev);
            }
        }
        if (release) {
            /* Read again: the callback may have renumbered the keys. */
            uint32_t kid = tdm__ws_span_at(ws, sid)->members[i];
            if (kid != TDM__WS_NONE)
                release_last(op, kid, wstart, wend);
        }
    }
    op->swalk = w.up;
    tdm__free(w.frozen);
    tdm__ws_span_free(ws, sid);
    op->slice_wgen++; /* span ids in the cache may be stale (so after
                       * every span freed) */
}

/* Releases every cell and slice (every window has fired). */
static void sweep(tdm_winop *op)
{
    tdm__wstore *ws = op->ws;
    for (size_t i = 0; i < ws->slots; i++) {
        if (!(ws->ctrl[i] & TDM__WS_FULL))
            continue;
        tdm__ws_key *e = tdm__ws_key_at(ws, (uint32_t)i);
        for (uint32_t k = 0; k < ws->n_inline; k++) {
            tdm__ws_cell *c = tdm__ws_inline(ws, e, k);
            if (c->span)
                tdm__ws_cell_release(ws, (uint32_t)i, c);
        }
    }
    /* Spilled cells: a release shifts later cells of the probe run back,
     * maybe into the position just looked at, which is looked at
     * again. */
    for (size_t i = 0; i <= ws->smask;) {
        tdm__ws_spill *s = ws->stab[i];
        if (!s) {
            i++;
            continue;
        }
        tdm__ws_cell_release(ws, s->key, &s->c);
    }
    for (uint32_t sid = 0; sid < ws->n_span_ids; sid++) {
        const tdm__ws_span *sp = &ws->spans[sid];
        if (sp->end == SLICE_END &&
            tdm__ws_span_find(ws, sp->start, sp->end) == sid)
            tdm__ws_span_free(ws, sid);
    }
    op->slice_sid = TDM__WS_NONE;
    op->slice_wgen++;
}

/* Fires and cleans up the due windows; see win.h. */
void tdm__slice_watermark(tdm_winop *op, tdm_time_ms wm)
{
    tdm__wstore *ws = op->ws;
    if (op->swalk) {
        /* Called back from a walk's emit: the outer walks keep what
         * they would have emitted.  Without memory for that the windows
         * fire with a later watermark instead. */
        tdm_err err = freeze_due(op);
        if (err != TDM_OK) {
            tdm__win_fail(op, err);
            return;
        }
    }
    uint32_t sid;
    bool cleaned = false;
    while ((sid = tdm__ws_span_due(ws, wm)) != TDM__WS_NONE) {
        /* Out of the due order while walked, so that a watermark sent
         * from the emit callback does not walk it again. */
        tdm__ws_span_take(ws, sid);
        walk_window(op, sid);
        cleaned = true;
    }
    if (wm >= TDM_TIME_MAX - 1 && ws->n_cells)
        sweep(op);
    if (cleaned)
        tdm__ws_compact(ws); /* give memory back when keys went away */
}

/* ---- Records ---- */

/* Fills @p c with the windows of slice @p sid (start @p ss) that are
 * not late, making their spans.  Returns TDM_OK or TDM_ERR_NOMEM (spans
 * made stay: windows with nothing fire with nothing). */
static tdm_err cache_windows(tdm_winop *op, tdm__slice_cache *c, uint32_t sid,
                             tdm_time_ms ss)
{
    tdm__wstore *ws = op->ws;
    tdm__assign_iter it;
    tdm_time_ms start, end;
    c->slice = TDM__WS_NONE;
    c->nw = 0;
    tdm__assign_begin(op->asg, ss, &it);
    while (c->nw < MAX_SLICES && tdm__assign_next(&it, &start, &end)) {
        if (tdm__win_cleanup(op, end) <= op->wm)
            continue; /* R2 step 2: a late window */
        tdm_err err =
            tdm__ws_span_get(ws, start, end, tdm__win_max_ts(op, end),
                             tdm__win_cleanup(op, end), false, &c->sid[c->nw]);
        if (err != TDM_OK)
            return err;
        c->start[c->nw] = start;
        c->end[c->nw] = end;
        c->nw++;
    }
    c->slice = sid;
    c->wm = op->wm;
    c->wgen = op->slice_wgen;
    return TDM_OK;
}

/* The non-late windows of the record's slice, for a record that the
 * fast path did not take.  *@p nw is 0 when every window is late.
 * @p sid: the slice's span, NONE when it has none yet (then nothing is
 * cached and @p one is filled).  Returns TDM_OK or TDM_ERR_NOMEM. */
static tdm_err slice_windows(tdm_winop *op, uint32_t sid, tdm_time_ms ss,
                             tdm__slice_cache *one,
                             const tdm__slice_cache **out)
{
    tdm__slice_cache *c = op->scache;
    if (!c && sid != TDM__WS_NONE) {
        c = op->scache = tdm__malloc(sizeof *c);
        if (c)
            c->slice = TDM__WS_NONE;
    }
    if (c && sid != TDM__WS_NONE && c->slice == sid && c->wm == op->wm &&
        c->wgen == op->slice_wgen) {
        *out = c;
        return TDM_OK;
    }
    if (!c || sid == TDM__WS_NONE)
        c = one;
    *out = c;
    return cache_windows(op, c, sid, ss);
}

/* A record whose (key, slice) cell was not found at once: late windows,
 * a new cell and its listing in the windows (see the file comment).
 * @p sid is the slice's span (NONE: none yet), @p kid the key
 * (NONE: not in the store).  Returns TDM_OK or TDM_ERR_NOMEM (nothing
 * changed but maybe empty window spans, which fire with nothing). */
static __attribute__((noinline)) tdm_err
slice_push_new(tdm_winop *op, const tdm_record *rec, uint64_t h, uint32_t kid,
               tdm_time_ms ss, uint32_t sid, double add)
{
    tdm__wstore *ws = op->ws;
    tdm__slice_cache one;
    const tdm__slice_cache *wins;
    bool need[MAX_SLICES];
    tdm_err err = slice_windows(op, sid, ss, &one, &wins);
    if (err != TDM_OK)
        return err;
    int nw = wins->nw;
    if (nw == 0) {
        tdm__win_handle_late(op, rec, rec->key, rec->key_len);
        return TDM_OK;
    }
    if (sid != TDM__WS_NONE && kid != TDM__WS_NONE) {
        tdm__ws_cell *c =
            tdm__ws_cell_of(ws, tdm__ws_key_at(ws, kid), kid, sid);
        if (c) {
            c->v[0] += add;
            return TDM_OK;
        }
    }
    bool new_key = kid == TDM__WS_NONE, new_slice = false;
    if (new_key) {
        err = tdm__ws_intern_absent(ws, rec->key, rec->key_len, h, &kid);
        if (err != TDM_OK)
            return err;
    }
    if (sid == TDM__WS_NONE) {
        /* Never due; t_clean names the slice's last window: the first
         * the assigner reports (the latest start), which is not late
         * when any is, so it is the first of wins. */
        err = tdm__ws_span_get(ws, ss, SLICE_END, TDM_TIME_MAX, wins->end[0],
                               false, &sid);
        if (err != TDM_OK)
            goto fail;
        new_slice = true;
        op->slice_sid = sid;
    }
    for (int i = 0; i < nw; i++) {
        double v;
        need[i] = new_key ||
                  !tdm__slice_count(op, kid, wins->start[i], wins->end[i], &v);
        if (need[i] && !tdm__ws_member_reserve(ws, wins->sid[i])) {
            err = TDM_ERR_NOMEM;
            goto fail;
        }
    }
    tdm__ws_cell *c = tdm__ws_cell_add_bare(ws, kid, sid);
    if (!c) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    c->v[0] = add;
    for (int i = 0; i < nw; i++)
        if (need[i])
            tdm__ws_member_push(ws, wins->sid[i], kid);
    return TDM_OK;
fail:
    if (new_slice && ws->spans[sid].cells == 0) {
        tdm__ws_span_free(ws, sid);
        op->slice_sid = TDM__WS_NONE;
        op->slice_wgen++;
    }
    tdm__ws_key_drop_if_empty(ws, kid);
    return err;
}

/* Adds a record (or a partial count) to its key's slice; see win.h. */
tdm_err tdm__slice_push(tdm_winop *op, const tdm_record *rec, double add,
                        uint64_t h)
{
    tdm__wstore *ws = op->ws;
    if (op->swalk) {
        /* Called back from a walk's emit (see the file comment). */
        tdm_err err = freeze_due(op);
        if (err != TDM_OK)
            return err;
    }
    uint32_t kid = tdm__ws_find(ws, rec->key, rec->key_len, h);
    tdm_time_ms ss, se;
    slice_bounds(op, rec->ts, &ss, &se);
    uint32_t sid = op->slice_sid;
    if (sid == TDM__WS_NONE || ws->spans[sid].start != ss) {
        sid = tdm__ws_span_find(ws, ss, SLICE_END);
        if (sid != TDM__WS_NONE)
            op->slice_sid = sid;
    }
    /* The common case: the cell exists and the slice's last window is
     * not late, so neither is any window that listed the key. */
    if (sid != TDM__WS_NONE && kid != TDM__WS_NONE &&
        tdm__win_cleanup(op, ws->spans[sid].t_clean) > op->wm) {
        tdm__ws_cell *c =
            tdm__ws_cell_of(ws, tdm__ws_key_at(ws, kid), kid, sid);
        if (c) {
            c->v[0] += add;
            return TDM_OK;
        }
    }
    return slice_push_new(op, rec, h, kid, ss, sid, add);
}
