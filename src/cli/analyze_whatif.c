/* SPDX-License-Identifier: MIT */
/* analyze_whatif.c - the what-if replays of `tidemark analyze`: the sample
 * goes through the real engine, exactly as a `tidemark run` job with
 * `parallelism: 1` and `watermark.emit: on_event` drives it
 * (src/runtime/task_source.c and task_op.c):
 *
 *   sample record --> tdm_winop_push (channel 0)          [routed first]
 *                 `-> tdm_reader_record (split = partition)  [then seen]
 *   reader WATERMARK/STATUS --> tdm_winop_watermark/_status
 *   partition finished (after its batch) --> tdm_reader_split_finished
 *   end --> tdm_reader_end (TDM_TIME_MAX) --> tdm_winop_end
 *
 * with one bounded strategy per candidate bound, on-event emission, no
 * idle timeout, the window of --window, the built-in count, the
 * candidate's allowed lateness and the late output on.  Records the
 * timestamp guard caught are pushed but not shown to the reader, as the
 * runtime does.  The clock is a manual one that stays put: periodic ticks
 * never come, which is what a file read in less than one
 * watermark.interval sees (docs/analyze.md says when that matters).
 *
 * Around the engine it counts what the report needs: per record whether
 * it landed on time, came late but within allowed lateness (its push
 * fired a pane: a refire, or the key's first pane of a window the
 * watermark had passed) or went to the late output; panes by timing;
 * per window range the delay from the moment the highest timestamp seen
 * passed the window's maximum timestamp to its first result; the peaks
 * of the operator's live windows and state bytes and of the keys holding
 * live windows.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"

/* A key's latest cleanup time, kept in a min-heap to notice when the
 * watermark passes it (the key then holds no window any more). */
typedef struct kentry {
    tdm_time_ms t;
    uint32_t key;
} kentry;

/* A window range that has fired. */
typedef struct wrange {
    tdm_time_ms start, end;
    bool used;
} wrange;

typedef struct replay {
    const tdm__an_opts *o;
    const tdm__an_scan *s;
    tdm__an_cand *c;
    tdm_clock *clk;
    tdm_reader *rd;
    tdm_winop *op;
    tdm_record *rec; /* refilled for every push */
    int n_splits;
    tdm_err err;      /* first error inside a callback */
    int64_t i;        /* records pushed so far */
    tdm_time_ms gmax; /* highest timestamp seen (not guarded) */
    bool at_end;
    bool in_push;               /* inside tdm_winop_push */
    int push_late, push_refire; /* what the current push caused */
    /* When the highest timestamp rose: value and record count. */
    tdm_time_ms *gv;
    int64_t *gi;
    int64_t n_g, cap_g;
    /* Window ranges that fired, open addressing. */
    wrange *set;
    size_t n_set, cap_set;
    /* Delays of first results, one per range. */
    int64_t *dms, *drec;
    int64_t n_d, cap_d;
    /* Keys with live windows. */
    tdm_time_ms *kclean; /* TDM_TIME_MIN: no live window */
    kentry *heap;
    size_t n_heap, cap_heap;
    int64_t live_keys;
    int64_t ev;             /* the sample's next split event */
    tdm_time_ms smin, smax; /* timestamps pushed (not guarded) */
} replay;

/* ---- Small containers ---- */

static void heap_push(replay *r, tdm_time_ms t, uint32_t key)
{
    if (r->n_heap == r->cap_heap) {
        size_t cap = r->cap_heap ? 2 * r->cap_heap : 1024;
        kentry *h = realloc(r->heap, cap * sizeof *h);
        if (!h) {
            r->err = TDM_ERR_NOMEM;
            return;
        }
        r->heap = h;
        r->cap_heap = cap;
    }
    size_t i = r->n_heap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (r->heap[up].t <= t)
            break;
        r->heap[i] = r->heap[up];
        i = up;
    }
    r->heap[i].t = t;
    r->heap[i].key = key;
}

static kentry heap_pop(replay *r)
{
    kentry top = r->heap[0], last = r->heap[--r->n_heap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l + 1, min = i;
        tdm_time_ms mt = last.t;
        if (l < r->n_heap && r->heap[l].t < mt) {
            min = l;
            mt = r->heap[l].t;
        }
        if (m < r->n_heap && r->heap[m].t < mt)
            min = m;
        if (min == i)
            break;
        r->heap[i] = r->heap[min];
        i = min;
    }
    if (r->n_heap > 0)
        r->heap[i] = last;
    return top;
}

/* Adds window range [start, end) to the fired set; true if it was new. */
static bool set_add(replay *r, tdm_time_ms start, tdm_time_ms end)
{
    if (2 * (r->n_set + 1) > r->cap_set) {
        size_t cap = r->cap_set ? 2 * r->cap_set : 1024;
        wrange *ns = calloc(cap, sizeof *ns);
        if (!ns) {
            r->err = TDM_ERR_NOMEM;
            return false;
        }
        for (size_t k = 0; k < r->cap_set; k++) {
            if (!r->set[k].used)
                continue;
            tdm_time_ms se[2] = {r->set[k].start, r->set[k].end};
            size_t j = (size_t)tdm__cli_hash_bytes(se, sizeof se) & (cap - 1);
            while (ns[j].used)
                j = (j + 1) & (cap - 1);
            ns[j] = r->set[k];
        }
        free(r->set);
        r->set = ns;
        r->cap_set = cap;
    }
    tdm_time_ms se[2] = {start, end};
    size_t j = (size_t)tdm__cli_hash_bytes(se, sizeof se) & (r->cap_set - 1);
    while (r->set[j].used) {
        if (r->set[j].start == start && r->set[j].end == end)
            return false;
        j = (j + 1) & (r->cap_set - 1);
    }
    r->set[j].start = start;
    r->set[j].end = end;
    r->set[j].used = true;
    r->n_set++;
    return true;
}

/* Notes that the highest timestamp rose to @p v at record count r->i. */
static void gmax_log(replay *r, tdm_time_ms v)
{
    if (r->n_g == r->cap_g) {
        int64_t cap = r->cap_g ? 2 * r->cap_g : 4096;
        tdm_time_ms *gv = realloc(r->gv, (size_t)cap * sizeof *gv);
        int64_t *gi = gv ? realloc(r->gi, (size_t)cap * sizeof *gi) : NULL;
        if (gv)
            r->gv = gv;
        if (!gv || !gi) {
            r->err = TDM_ERR_NOMEM;
            return;
        }
        r->gi = gi;
        r->cap_g = cap;
    }
    r->gv[r->n_g] = v;
    r->gi[r->n_g] = r->i;
    r->n_g++;
}

/* The record count at which the highest timestamp first reached @p t,
 * or -1 if it never did. */
static int64_t passed_at(const replay *r, tdm_time_ms t)
{
    int64_t lo = 0, hi = r->n_g;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (r->gv[mid] >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < r->n_g ? r->gi[lo] : -1;
}

/* ---- The engine's outputs ---- */

/* A window result: pane counts, and the first result of a range gives
 * the delays.  "Passed" means the highest timestamp seen is above the
 * window's maximum timestamp end - 1. */
static void on_result(replay *r, const tdm_event *ev)
{
    tdm__an_cand *c = r->c;
    tdm_time_ms start, end;
    switch (tdm_event_pane_timing(ev)) {
    case TDM_PANE_ON_TIME:
        c->panes_on_time++;
        break;
    case TDM_PANE_LATE:
        c->panes_late++;
        break;
    default:
        c->panes_other++;
        break;
    }
    /* With the event-time trigger a push fires a pane only when the
     * record's window had already passed the watermark: the record came
     * late and was accepted within allowed lateness.  That is a refire
     * (a LATE pane) when the window had fired for this key, and the
     * key's first pane (ON_TIME by Flink's pane timing) when it had not. */
    if (!r->at_end && r->in_push)
        r->push_refire = 1;
    if (!tdm_event_window(ev, &start, &end) || !set_add(r, start, end))
        return;
    c->windows++;
    int64_t at = passed_at(r, end);
    if (r->at_end || at < 0) {
        c->windows_at_end++;
        return;
    }
    if (r->n_d == r->cap_d) {
        int64_t cap = r->cap_d ? 2 * r->cap_d : 1024;
        int64_t *a = realloc(r->dms, (size_t)cap * sizeof *a);
        int64_t *b = a ? realloc(r->drec, (size_t)cap * sizeof *b) : NULL;
        if (a)
            r->dms = a;
        if (!a || !b) {
            r->err = TDM_ERR_NOMEM;
            return;
        }
        r->drec = b;
        r->cap_d = cap;
    }
    r->dms[r->n_d] = tdm_time_sub(r->gmax, end - 1);
    r->drec[r->n_d] = r->i - at;
    r->n_d++;
}

/* Keys whose last window was cleaned up by watermark @p wm. */
static void expire_keys(replay *r, tdm_time_ms wm)
{
    while (r->n_heap > 0 && r->heap[0].t <= wm) {
        kentry e = heap_pop(r);
        if (r->kclean[e.key] == e.t) {
            r->kclean[e.key] = TDM_TIME_MIN;
            r->live_keys--;
        }
    }
}

/* The window operator's output. */
static void winop_emit(void *opaque, const tdm_event *ev)
{
    replay *r = opaque;
    switch (tdm_event_get_type(ev)) {
    case TDM_EVENT_RESULT:
        on_result(r, ev);
        break;
    case TDM_EVENT_LATE:
        r->c->late_output++;
        r->push_late = 1;
        break;
    case TDM_EVENT_WATERMARK:
        expire_keys(r, tdm_event_time(ev));
        break;
    default:
        break;
    }
}

/* The reader's output goes into the window operator's one channel, as
 * the runtime's queue carries it (watermarks after the rows). */
static void reader_emit(void *opaque, const tdm_event *ev)
{
    replay *r = opaque;
    tdm_err err = TDM_OK;
    if (tdm_event_get_type(ev) == TDM_EVENT_WATERMARK)
        err = tdm_winop_watermark(r->op, 0, tdm_event_time(ev));
    else if (tdm_event_get_type(ev) == TDM_EVENT_STATUS)
        err = tdm_winop_status(r->op, 0, tdm_event_is_idle(ev));
    if (err != TDM_OK && r->err == TDM_OK)
        r->err = err;
}

/* ---- Setup ---- */

/* The candidate's operator and reader. */
static tdm_err make_engine(replay *r, char *errbuf, size_t errbuf_size)
{
    const tdm__an_opts *o = r->o;
    tdm_assigner *asg = NULL;
    tdm_aggregate *agg = NULL;
    tdm_wm_strategy *strat = NULL;
    tdm_err err = tdm_clock_new_manual(0, &r->clk);
    if (err != TDM_OK)
        return err;
    switch (o->win_type) {
    case TDM__AN_SLIDING:
        err = tdm_assigner_new_sliding(o->win_size, o->win_slide, o->win_offset,
                                       &asg, errbuf, errbuf_size);
        break;
    case TDM__AN_SESSION:
        err = tdm_assigner_new_session(o->win_gap, &asg, errbuf, errbuf_size);
        break;
    default:
        err = tdm_assigner_new_tumbling(o->win_size, o->win_offset, &asg,
                                        errbuf, errbuf_size);
        break;
    }
    if (err == TDM_OK)
        err = tdm_aggregate_new(TDM_AGG_COUNT, &agg);
    if (err != TDM_OK) {
        tdm_assigner_destroy(asg);
        return err;
    }
    /* tdm_winop_new owns the assigner and aggregate from here on. */
    err = tdm_winop_new(asg, NULL, agg, 1, r->clk, winop_emit, r, &r->op,
                        errbuf, errbuf_size);
    if (err == TDM_OK && r->c->lateness > 0)
        err = tdm_winop_set_allowed_lateness(r->op, r->c->lateness, errbuf,
                                             errbuf_size);
    if (err == TDM_OK)
        err = tdm_winop_set_late_output(r->op, 1);
    if (err == TDM_OK)
        err = tdm_wm_strategy_new(TDM_WM_BOUNDED, r->c->bound, &strat, errbuf,
                                  errbuf_size);
    if (err == TDM_OK)
        err = tdm_wm_strategy_set_emit_on_event(strat, 1);
    if (err == TDM_OK)
        err = tdm_reader_new(r->s->sample.initial_splits, strat, r->clk,
                             reader_emit, r, &r->rd);
    if (err == TDM_OK)
        r->n_splits = r->s->sample.initial_splits;
    tdm_wm_strategy_destroy(strat);
    return err;
}

/* The last window end of timestamp @p ts (tumbling and sliding: the
 * latest window; session: ts + gap): the key's state lives at least until
 * the watermark passes that end - 1 + lateness. */
static tdm_time_ms last_cleanup(const replay *r, tdm_time_ms ts)
{
    const tdm__an_opts *o = r->o;
    tdm_time_ms end;
    if (o->win_type == TDM__AN_SESSION)
        end = tdm_time_add(ts, o->win_gap);
    else
        end = tdm_time_add(tdm_window_start(ts, o->win_offset,
                                            o->win_type == TDM__AN_SLIDING
                                                ? o->win_slide
                                                : o->win_size),
                           o->win_size);
    return tdm_time_add(end - 1, r->c->lateness);
}

/* ---- Results ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Mean, median, P99 and maximum of @p n values (sorted in place). */
static void summarize(int64_t *v, int64_t n, tdm__an_dist *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n == 0)
        return;
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    double sum = 0;
    for (int64_t k = 0; k < n; k++)
        sum += (double)v[k];
    d->mean = sum / (double)n;
    /* The q-quantile: the smallest value with at least ceil(q n) values
     * at or below it. */
    int64_t k50 = (n + 1) / 2, k99 = (99 * n + 99) / 100;
    d->p50 = v[k50 - 1];
    d->p99 = v[(k99 < 1 ? 1 : k99) - 1];
    d->max = v[n - 1];
}

static void replay_free(replay *r)
{
    tdm_record_destroy(r->rec);
    tdm_reader_destroy(r->rd);
    tdm_winop_destroy(r->op);
    tdm_clock_destroy(r->clk);
    free(r->gv);
    free(r->gi);
    free(r->set);
    free(r->dms);
    free(r->drec);
    free(r->kclean);
    free(r->heap);
}

/* ---- The replay ---- */

/* Prepares the replay of candidate @p c: per-key cleanup times, the
 * record pushed, the engine. */
static tdm_err replay_init(replay *r, const tdm__an_opts *o,
                           const tdm__an_scan *s, tdm__an_cand *c, char *errbuf,
                           size_t errbuf_size)
{
    const tdm__an_sample *sm = &s->sample;
    memset(r, 0, sizeof *r);
    r->o = o;
    r->s = s;
    r->c = c;
    r->gmax = TDM_TIME_MIN;
    r->smin = TDM_TIME_MAX;
    r->smax = TDM_TIME_MIN;
    r->kclean =
        malloc((size_t)(sm->n_keys ? sm->n_keys : 1) * sizeof *r->kclean);
    if (!r->kclean)
        return TDM_ERR_NOMEM;
    for (uint32_t k = 0; k < sm->n_keys; k++)
        r->kclean[k] = TDM_TIME_MIN;
    tdm_err err = tdm_record_new(&r->rec);
    if (err != TDM_OK)
        return err;
    return make_engine(r, errbuf, errbuf_size);
}

/* Tells the reader about the partitions that finished before sample
 * record @p before (all of them: INT64_MAX). */
static void replay_events(replay *r, int64_t before)
{
    const tdm__an_sample *sm = &r->s->sample;
    for (; r->ev < sm->n_ev && sm->ev[r->ev].at <= before; r->ev++)
        if ((int)sm->ev[r->ev].split < r->n_splits)
            tdm_reader_split_finished(r->rd, (int)sm->ev[r->ev].split);
}

/* After a push: the record's fate, its key's state lifetime, peaks.
 * A record in another unit (@p suspect) is counted as any other and,
 * for the target, on its own; a late one of the others is counted by
 * the hour of its timestamp when the candidate asks (@p guarded ones
 * are in no hour). */
static void replay_account(replay *r, uint32_t key, tdm_time_ms ts,
                           bool suspect, bool guarded)
{
    tdm__an_cand *c = r->c;
    bool late = r->push_late || r->push_refire;
    if (suspect) {
        c->suspects++;
        c->suspects_late += late;
    } else if (late && !guarded && c->hour_late) {
        int h = tdm__analyze_hour_index(r->s, ts);
        if (h >= 0)
            c->hour_late[h]++;
    }
    if (!r->push_late) {
        /* (A late record is counted by the LATE event.) */
        if (r->push_refire)
            c->accepted_late++;
        else
            c->on_time++;
        tdm_time_ms cl = last_cleanup(r, ts);
        if (cl > r->kclean[key]) {
            if (r->kclean[key] == TDM_TIME_MIN)
                r->live_keys++;
            r->kclean[key] = cl;
            heap_push(r, cl, key);
        }
    }
    int64_t lw = tdm_winop_live_windows(r->op);
    int64_t lb = tdm_winop_state_bytes(r->op);
    if (lw > c->peak_windows)
        c->peak_windows = lw;
    if (lb > c->peak_bytes)
        c->peak_bytes = lb;
    if (r->live_keys > c->peak_keys)
        c->peak_keys = r->live_keys;
}

/* Replays sample record @p k: its split, the window push, then the
 * generator (an on-event watermark follows the record that caused it). */
static tdm_err replay_record(replay *r, int64_t k, char *errbuf,
                             size_t errbuf_size)
{
    const tdm__an_sample *sm = &r->s->sample;
    replay_events(r, k);
    tdm_time_ms ts = sm->ts[k];
    uint32_t p = sm->part[k], key = sm->key[k];
    bool guarded = (sm->guarded[k] & TDM__AN_GUARDED) != 0;
    bool suspect = (sm->guarded[k] & TDM__AN_SUSPECT) != 0;
    /* Partitions named by a field get their split on first sight. */
    while ((int)p >= r->n_splits) {
        int idx;
        tdm_err err = tdm_reader_add_split(r->rd, &idx);
        if (err != TDM_OK)
            return err;
        r->n_splits++;
    }
    r->i = k + 1;
    if (!guarded) {
        if (ts > r->gmax) {
            r->gmax = ts;
            gmax_log(r, ts);
        }
        if (ts < r->smin)
            r->smin = ts;
        if (ts > r->smax)
            r->smax = ts;
    }
    size_t off = sm->koff[key];
    tdm_record_set(r->rec, sm->kbytes ? sm->kbytes + off : "",
                   sm->koff[key + 1] - off, ts, 0);
    r->push_late = r->push_refire = 0;
    r->in_push = true;
    tdm_err err = tdm_winop_push(r->op, 0, r->rec);
    r->in_push = false;
    if (err != TDM_OK)
        return tdm__cli_errf(errbuf, errbuf_size, err, "what-if: %s",
                             tdm_winop_errmsg(r->op));
    replay_account(r, key, ts, suspect, guarded);
    if (!guarded)
        tdm_reader_record(r->rd, (int)p, r->rec);
    return TDM_OK;
}

/* The end of the sample: the last finished partitions, the end of input
 * through the reader and the window, and an error a callback kept. */
static tdm_err replay_end(replay *r, char *errbuf, size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    replay_events(r, INT64_MAX);
    if (r->err == TDM_OK) {
        r->at_end = true;
        err = tdm_reader_end(r->rd);
        if (err == TDM_OK && r->err == TDM_OK)
            err = tdm_winop_end(r->op);
    }
    if (err == TDM_OK && r->err != TDM_OK)
        err = tdm__cli_errf(errbuf, errbuf_size, r->err, "what-if: %s",
                            r->err == TDM_ERR_NOMEM ? "out of memory"
                                                    : tdm_winop_errmsg(r->op));
    return err;
}

/* The candidate's delays and the seeds' estimate: event rate x
 * retention x bytes per entry, with the engine's own bytes per live
 * window as the entry size. */
static void replay_results(replay *r)
{
    const tdm__an_opts *o = r->o;
    tdm__an_cand *c = r->c;
    c->records = r->s->sample.n;
    summarize(r->dms, r->n_d, &c->delay_ms);
    summarize(r->drec, r->n_d, &c->delay_records);
    if (r->smax > r->smin && c->peak_windows > 0) {
        c->rate = (double)c->records * 1000.0 / (double)(r->smax - r->smin);
        tdm_time_ms span =
            o->win_type == TDM__AN_SESSION ? o->win_gap : o->win_size;
        double retention =
            (double)span + (double)c->bound + (double)c->lateness;
        double per = (double)c->peak_bytes / (double)c->peak_windows;
        c->seed_estimate = (int64_t)(c->rate * retention / 1000.0 * per);
    }
}

/* Records not in their window's first result, suspects left out (see
 * analyze.h). */
int64_t tdm__analyze_late(const tdm__an_cand *c)
{
    return c->records - c->on_time - c->suspects_late;
}

int64_t tdm__analyze_counted(const tdm__an_cand *c)
{
    return c->records - c->suspects;
}

/* Replays the sample for one candidate (see analyze.h). */
tdm_err tdm__analyze_replay(const tdm__an_opts *o, const tdm__an_scan *s,
                            tdm__an_cand *c, char *errbuf, size_t errbuf_size)
{
    tdm_time_ms bound = c->bound, lateness = c->lateness;
    unsigned role = c->role;
    int64_t *hour_late = c->hour_late;
    memset(c, 0, sizeof *c);
    c->bound = bound;
    c->lateness = lateness;
    c->role = role;
    c->hour_late = hour_late;
    if (hour_late)
        memset(hour_late, 0, (size_t)s->n_hours * sizeof *hour_late);
    replay r;
    tdm_err err = replay_init(&r, o, s, c, errbuf, errbuf_size);
    for (int64_t k = 0; err == TDM_OK && k < s->sample.n && r.err == TDM_OK;
         k++)
        err = replay_record(&r, k, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = replay_end(&r, errbuf, errbuf_size);
    if (err == TDM_OK)
        replay_results(&r);
    replay_free(&r);
    return err;
}
