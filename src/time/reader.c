/* SPDX-License-Identifier: MIT */
/* reader.c - one source reader reading several splits (rules S1-S6, A1,
 * A3): Flink's ProgressiveTimestampsAndWatermarks with a generator per
 * split, the WatermarkOutputMultiplexer / CombinedWatermarkStatus that
 * merges them, the WatermarkToDataOutput emitter and the SourceOperator's
 * watermark-alignment reactions.
 */

/* How a watermark travels:
 *
 *   record / reader call --> split generator --immediate--+
 *   periodic tick ---------> split generator --deferred---+--> partial
 *                                                              watermarks
 *   partials --(combine: min over non-idle, or max if all idle)--> emitter
 *   emitter --(only rising; ACTIVE before, alignment check)--> WATERMARK
 *
 * Immediate updates recombine at once (a watermark only when it raises its
 * split above the combined value); deferred ones wait for the end of the
 * tick, which combines once.  Splits are kept by pointer so that outputs
 * and clocks that point into them survive tdm_reader_add_split().
 *
 * The fallback watermark (F1-F4, tdm_wm_strategy_set_fallback) sits
 * behind the emitter: every fallback interval the output becomes
 * max(combined, now - lag).  The combined value is then the "data
 * watermark"; the fallback drives while the output is above it, and the
 * data takes over again when its combination reaches the output.
 *
 * Checkpoints (end of file) save the partials, the combined and emitted
 * values, idle and pause flags and the schedules' time left, so that a
 * restored reader emits exactly what the original would have.  At
 * another parallelism the splits of several old readers are dealt to
 * new ones, each keeping its state, and what a reader has as a whole is
 * recombined from the splits it gets (docs/checkpoints.md, "Restore at
 * another parallelism").
 */
#include <string.h>

#include "wm.h"
#include "state/ckpt_codec.h"
#include "testhooks.h"

struct tdm_reader;

typedef struct reader_split {
    struct tdm_reader *r;
    int index;
    tdm__wm_core core;
    tdm__pclock clock; /* activity clock, child of the reader's */
    tdm_wm_output immediate, deferred;
    tdm_time_ms wm; /* partial watermark (only rises) */
    bool idle;      /* partial idle flag */
    bool finished;  /* removed from the combination */
    bool has_wm;    /* known to the alignment checks */
    bool paused;    /* paused by alignment */
    bool restored;  /* given a state by tdm__reader_restore_splits */
} reader_split;

/* What the old readers that gave live splits to this one (a restore at
 * another parallelism, tdm__reader_restore_splits) had at reader level;
 * tdm__reader_restore_finish merges it. */
typedef struct reader_merge {
    int n;      /* old readers that gave a live split */
    bool whole; /* the first of them gave all its live ones */
    int64_t combined, out, latest; /* the first one's */
    uint8_t flags;                 /* the first one's (READER_*) */
    bool align;                    /* one of them had alignment on */
    tdm_time_ms max_desired;       /* minimum of their announcements */
    tdm_time_ms tick_left;         /* minimum time left to a periodic tick */
    tdm_time_ms report_left;       /* minimum time left to a report */
    tdm_time_ms fb_left;           /* minimum time left to a fallback tick */
    int64_t fb_total, fb_stretch;  /* the largest total; the first's stretch */
    tdm_time_ms min_out;           /* the lowest of their outputs (F4) */
} reader_merge;

struct tdm_reader {
    reader_split **splits;
    int n, cap;
    struct tdm_wm_strategy strat; /* copy, for splits added later */
    tdm_clock *clk;
    tdm__pclock clock; /* main input activity clock */
    tdm__sink sink;
    tdm_time_ms next_tick; /* periodic emission, if interval > 0 */
    /* CombinedWatermarkStatus */
    tdm_time_ms combined;
    /* WatermarkToDataOutput */
    tdm_time_ms out;
    bool out_idle;
    /* Alignment (SourceOperator) */
    bool align;
    tdm_time_ms update_interval;
    tdm_time_ms next_report;
    tdm_time_ms latest;      /* last effective watermark, MIN if none */
    tdm_time_ms max_desired; /* last announcement, MAX if none */
    bool paused;             /* reading paused by alignment */
    bool ended;
    /* Fallback watermark (F1-F4), if strat.fb_interval > 0 */
    tdm_time_ms next_fb;  /* next fallback tick */
    tdm_time_ms fb_since; /* when the current stretch began; MIN: data */
    tdm_time_ms fb_total; /* clock ms of the finished stretches */
    reader_merge merge;   /* restore at another parallelism */
};

/* ---- Events ---- */

static void emit_plain(const tdm_reader *r, tdm_event_type type)
{
    tdm_event ev = TDM__EVENT_INIT(type);
    tdm__emit(&r->sink, &ev);
}

static void emit_split_event(const tdm_reader *r, tdm_event_type type,
                             int index)
{
    tdm_event ev = TDM__EVENT_INIT(type);
    ev.index = index;
    tdm__emit(&r->sink, &ev);
}

static void emit_report(const tdm_reader *r, tdm_time_ms wm)
{
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_REPORTED);
    ev.time = wm;
    tdm__emit(&r->sink, &ev);
}

/* ---- Alignment (A3) ---- */

/* Reader level: stop reading while the last effective watermark is
 * strictly above the announced maximum, resume otherwise.  A paused
 * reader's activity clock stands still, so idleness does not fire. */
static void check_reader_alignment(tdm_reader *r)
{
    if (!r->align)
        return;
    bool wait = r->max_desired < r->latest;
    if (wait && !r->paused) {
        r->paused = true;
        tdm__pclock_pause(&r->clock);
        emit_plain(r, TDM_EVENT_READING_PAUSED);
    } else if (!wait && r->paused) {
        r->paused = false;
        tdm__pclock_resume(&r->clock);
        emit_plain(r, TDM_EVENT_READING_RESUMED);
    }
}

static void pause_split(reader_split *sp)
{
    sp->paused = true;
    tdm__pclock_pause(&sp->clock);
    emit_split_event(sp->r, TDM_EVENT_SPLIT_PAUSED, sp->index);
}

static void resume_split(reader_split *sp)
{
    sp->paused = false;
    tdm__pclock_resume(&sp->clock);
    emit_split_event(sp->r, TDM_EVENT_SPLIT_RESUMED, sp->index);
}

/* Split level, after an announcement: pause every split above the
 * maximum, then resume paused splits at or below it (Flink hands both
 * lists to one pauseOrResumeSplits call, pauses first).  Only splits that
 * have had a watermark take part. */
static void check_split_alignment(tdm_reader *r)
{
    for (int i = 0; i < r->n; i++) {
        reader_split *sp = r->splits[i];
        if (!sp->finished && sp->has_wm && !sp->paused &&
            sp->wm > r->max_desired)
            pause_split(sp);
    }
    for (int i = 0; i < r->n; i++) {
        reader_split *sp = r->splits[i];
        if (!sp->finished && sp->has_wm && sp->paused &&
            sp->wm <= r->max_desired)
            resume_split(sp);
    }
}

/* ---- The emitter (WatermarkToDataOutput) ---- */

/* Drops values that do not advance.  The alignment listener sees the new
 * effective watermark before anything is written, so a reader that
 * pauses itself says so before the watermark goes out. */
static void out_emit(tdm_reader *r, tdm_time_ms wm)
{
    if (wm <= r->out)
        return;
    r->out = wm;
    r->latest = wm;
    check_reader_alignment(r);
    if (r->out_idle) {
        r->out_idle = false;
        tdm__emit_status(&r->sink, 0);
    }
    tdm__emit_watermark(&r->sink, wm);
}

static void out_mark_idle(tdm_reader *r)
{
    if (r->out_idle)
        return;
    r->out_idle = true;
    tdm__emit_status(&r->sink, 1);
}

/* ---- The fallback watermark (F1-F4) ---- */

/* F3: the fallback drives while the output is above the data watermark
 * and active; a stretch starts when that becomes true (a fallback tick
 * lifted the output) and ends when the data's combination reaches the
 * output, the output goes idle or the input ends.  Its clock time is
 * added to the total.  The clock is read only at a change. */
static void fallback_track(tdm_reader *r)
{
    if (r->strat.fb_interval <= 0)
        return; /* no fallback: it never drives (one test per combine) */
    bool driving = !r->out_idle && !r->ended && r->out > r->combined;
    if (driving == (r->fb_since != TDM_TIME_MIN))
        return;
    tdm_time_ms now = tdm_clock_now(r->clk);
    if (driving) {
        r->fb_since = now;
        return;
    }
    r->fb_total =
        tdm__time_add_sat(r->fb_total, tdm__time_sub_sat(now, r->fb_since));
    r->fb_since = TDM_TIME_MIN;
}

/* F2: the output becomes now - lag when that is higher.  An idle output
 * is left alone: idleness already keeps the source out of every minimum
 * downstream, and waking it at each tick would make it flap between
 * idle and active. */
static void fallback_tick(tdm_reader *r, tdm_time_ms now)
{
    if (r->out_idle)
        return;
    tdm_time_ms fb = tdm__time_sub_sat(now, r->strat.fb_lag);
    if (fb <= r->out)
        return;
    out_emit(r, fb);
    fallback_track(r);
}

/* F3, after a combination (with a fallback only): under an output the
 * fallback lifted above the combination (@p cand: the combination if it
 * just rose, else MAX), a rise is told as the data watermark, so that
 * those who count what the fallback made late keep it; an idle output
 * with an active split is active again although its watermark cannot
 * rise until the data passes the lift (S3 otherwise: the output wakes
 * when it rises); then the stretch is tracked. */
static __attribute__((noinline)) void
fallback_combined(tdm_reader *r, tdm_time_ms cand, bool all_idle)
{
    if (r->out > r->combined) {
        if (!all_idle && r->out_idle) {
            r->out_idle = false;
            tdm__emit_status(&r->sink, 0);
        }
        if (cand != TDM_TIME_MAX) {
            tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_DATA_WATERMARK);
            ev.time = cand;
            tdm__emit(&r->sink, &ev);
        }
    }
    fallback_track(r);
}

/* ---- Combining (S3) ---- */

/* Minimum over non-idle splits, or (newest) the maximum over all splits
 * when all are idle; emitted only when it rises; then IDLE if all are
 * idle.  No live split: nothing at all.  With a fallback, F3 above. */
static void combine(tdm_reader *r)
{
    bool any = false, all_idle = true;
    tdm_time_ms min = TDM_TIME_MAX, max = TDM_TIME_MIN;
    for (int i = 0; i < r->n; i++) {
        const reader_split *sp = r->splits[i];
        if (sp->finished)
            continue;
        any = true;
        if (sp->wm > max)
            max = sp->wm;
        if (!sp->idle) {
            all_idle = false;
            if (sp->wm < min)
                min = sp->wm;
        }
    }
    if (!any)
        return;
    tdm_time_ms cand = all_idle ? max : min;
    bool rose = cand > r->combined;
    if (rose) {
        r->combined = cand;
        out_emit(r, cand);
    }
    if (all_idle)
        out_mark_idle(r);
    /* One test without a fallback: the rest stays out of this path. */
    if (r->strat.fb_interval > 0)
        fallback_combined(r, rose ? cand : TDM_TIME_MAX, all_idle);
}

/* ---- Partial outputs (S1, S2) ---- */

/* Setting a watermark clears the split's idle flag even when the value
 * does not rise.  A rise is first told to the split-level alignment
 * listener, which may pause the split right away. */
static bool partial_set(reader_split *sp, tdm_time_ms wm)
{
    sp->idle = false;
    if (wm <= sp->wm)
        return false;
    sp->has_wm = true;
    tdm_reader *r = sp->r;
    if (r->align && !sp->paused && wm > r->max_desired)
        pause_split(sp);
    sp->wm = wm;
    return true;
}

/* S4: an immediate watermark recombines only if it rose and exceeds the
 * combined value. */
static void immediate_emit(void *ctx, tdm_time_ms wm)
{
    reader_split *sp = ctx;
    if (partial_set(sp, wm) && wm > sp->r->combined)
        combine(sp->r);
}

/* S4: immediate idle / active always recombines. */
static void immediate_set_idle(void *ctx, bool idle)
{
    reader_split *sp = ctx;
    sp->idle = idle;
    combine(sp->r);
}

/* Deferred outputs only record; the tick combines once at its end. */
static void deferred_emit(void *ctx, tdm_time_ms wm)
{
    partial_set(ctx, wm);
}

static void deferred_set_idle(void *ctx, bool idle)
{
    reader_split *sp = ctx;
    sp->idle = idle;
}

/* ---- Lifecycle ---- */

static void split_destroy(reader_split *sp)
{
    if (!sp)
        return;
    tdm__wm_core_fini(&sp->core);
    tdm__free(sp);
}

/* Creates split number r->n and appends it. */
static tdm_err split_add(tdm_reader *r, int *index_out)
{
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 4;
        reader_split **a = tdm__realloc(r->splits, (size_t)cap * sizeof *a);
        if (!a)
            return TDM_ERR_NOMEM;
        r->splits = a;
        r->cap = cap;
    }
    reader_split *sp = tdm__calloc(1, sizeof *sp);
    if (!sp)
        return TDM_ERR_NOMEM;
    sp->r = r;
    sp->index = r->n;
    tdm__pclock_init(&sp->clock, NULL, &r->clock);
    if (tdm__wm_core_init(&sp->core, &r->strat, &sp->clock) != TDM_OK) {
        split_destroy(sp);
        return TDM_ERR_NOMEM;
    }
    sp->immediate.emit = immediate_emit;
    sp->immediate.set_idle = immediate_set_idle;
    sp->immediate.ctx = sp;
    sp->deferred.emit = deferred_emit;
    sp->deferred.set_idle = deferred_set_idle;
    sp->deferred.ctx = sp;
    sp->wm = TDM_TIME_MIN;
    r->splits[r->n++] = sp;
    if (index_out)
        *index_out = sp->index;
    return TDM_OK;
}

/* Forgets what restores at another parallelism collected. */
static void merge_reset(tdm_reader *r)
{
    memset(&r->merge, 0, sizeof r->merge);
    r->merge.max_desired = TDM_TIME_MAX;
    r->merge.tick_left = TDM_TIME_MAX;
    r->merge.report_left = TDM_TIME_MAX;
    r->merge.fb_left = -1;
    r->merge.fb_stretch = -1;
    r->merge.min_out = TDM_TIME_MAX;
}

/* Creates a reader with @p n_splits (>= 0) splits from a copy of @p s;
 * keeps @p clk.  The first tick is due one interval after creation.
 * INVAL (negative count, NULL s, clk or out), NOMEM. */
tdm_err tdm_reader_new(int n_splits, const tdm_wm_strategy *s, tdm_clock *clk,
                       tdm_emit_cb emit, void *opaque, tdm_reader **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = NULL;
    if (n_splits < 0 || !s || !clk)
        return TDM_ERR_INVAL;
    tdm_reader *r = tdm__calloc(1, sizeof *r);
    if (!r)
        return TDM_ERR_NOMEM;
    tdm__wm_strategy_copy(&r->strat, s);
    r->clk = clk;
    tdm__pclock_init(&r->clock, clk, NULL);
    r->sink.fn = emit;
    r->sink.opaque = opaque;
    r->next_tick = tdm__time_add_sat(tdm_clock_now(clk), s->interval);
    r->combined = TDM_TIME_MIN;
    r->out = TDM_TIME_MIN;
    r->latest = TDM_TIME_MIN;
    r->max_desired = TDM_TIME_MAX;
    r->next_fb = tdm__time_add_sat(tdm_clock_now(clk), s->fb_interval);
    r->fb_since = TDM_TIME_MIN;
    merge_reset(r);
    for (int i = 0; i < n_splits; i++)
        if (split_add(r, NULL) != TDM_OK)
            goto fail;
    *out = r;
    return TDM_OK;

fail:
    tdm_reader_destroy(r);
    return TDM_ERR_NOMEM;
}

/* Releases the reader and its splits; NULL and half-built readers are
 * fine. */
void tdm_reader_destroy(tdm_reader *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++)
        split_destroy(r->splits[i]);
    tdm__free(r->splits);
    tdm__wm_strategy_release(&r->strat);
    tdm__free(r);
}

/* A new split starts at MIN; as the combined value never goes down it
 * cannot pull the output back, but it holds it until it advances. */
tdm_err tdm_reader_add_split(tdm_reader *r, int *split_out)
{
    if (!r)
        return TDM_ERR_INVAL;
    if (r->ended)
        return TDM_ERR_STATE;
    return split_add(r, split_out);
}

/* Reports are due every update interval from now on (A1). */
tdm_err tdm_reader_set_alignment(tdm_reader *r, tdm_time_ms max_drift_ms,
                                 tdm_time_ms update_interval_ms, char *errbuf,
                                 size_t errbuf_size)
{
    if (!r)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "r must not be NULL");
    if (max_drift_ms < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "max_drift_ms must be >= 0 (got %lld)",
                         (long long)max_drift_ms);
    if (update_interval_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "update_interval_ms must be > 0 (got %lld)",
                         (long long)update_interval_ms);
    r->align = true;
    r->update_interval = update_interval_ms;
    r->next_report =
        tdm__time_add_sat(tdm_clock_now(r->clk), update_interval_ms);
    return TDM_OK;
}

/* ---- Live settings (runtime/live.h) ---- */

/* R-LV-5: each split's generator and the copy for splits added later
 * take the new bound; a split's watermark only rises (partial_set), so
 * a higher bound holds it until max - bound - 1 passes it. */
tdm_err tdm_reader_set_bound(tdm_reader *r, tdm_time_ms bound)
{
    if (!r || bound < 0)
        return TDM_ERR_INVAL;
    r->strat.bound = bound;
    for (int i = 0; i < r->n; i++)
        r->splits[i]->core.bound = bound;
    return TDM_OK;
}

/* A split whose timeout goes to 0 leaves idleness at its next emission
 * (partial_set clears the flag); one whose timeout is set starts its
 * countdown at the next periodic check. */
tdm_err tdm_reader_set_idle_timeout(tdm_reader *r, tdm_time_ms timeout)
{
    if (!r || timeout < 0)
        return TDM_ERR_INVAL;
    r->strat.idle_timeout = timeout;
    for (int i = 0; i < r->n; i++) {
        tdm__wm_core *c = &r->splits[i]->core;
        if (c->idle_timeout != timeout)
            c->countdown = false;
        c->idle_timeout = timeout;
    }
    return TDM_OK;
}

/* ---- Inputs ---- */

/* Returns the live split @p split or NULL (bad index or finished). */
static reader_split *live_split(tdm_reader *r, int split)
{
    if (split < 0 || split >= r->n || r->splits[split]->finished)
        return NULL;
    return r->splits[split];
}

/* Assigns the record's timestamp and runs the split generator's on-event
 * hook on the immediate output.  INVAL, STATE after end, CHANNEL (bad or
 * finished split), NO_TIMESTAMP (the generator does not see it). */
tdm_err tdm_reader_record(tdm_reader *r, int split, tdm_record *rec)
{
    if (!r || !rec)
        return TDM_ERR_INVAL;
    if (r->ended)
        return TDM_ERR_STATE;
    reader_split *sp = live_split(r, split);
    if (!sp)
        return TDM_ERR_CHANNEL;
    if (tdm__wm_assign(&r->strat, rec) == TDM_TIME_MIN)
        return TDM_ERR_NO_TIMESTAMP;
    tdm__wm_core_on_event(&sp->core, rec, &sp->immediate);
    return TDM_OK;
}

/* The reader's own immediate watermark for a split.  INVAL, STATE after
 * end, CHANNEL (bad or finished split). */
tdm_err tdm_reader_split_watermark(tdm_reader *r, int split, tdm_time_ms wm)
{
    if (!r)
        return TDM_ERR_INVAL;
    if (r->ended)
        return TDM_ERR_STATE;
    reader_split *sp = live_split(r, split);
    if (!sp)
        return TDM_ERR_CHANNEL;
    immediate_emit(sp, wm);
    return TDM_OK;
}

/* The reader's own immediate idle / active call for a split.  INVAL,
 * STATE after end, CHANNEL (bad or finished split). */
tdm_err tdm_reader_split_status(tdm_reader *r, int split, int idle)
{
    if (!r)
        return TDM_ERR_INVAL;
    if (r->ended)
        return TDM_ERR_STATE;
    reader_split *sp = live_split(r, split);
    if (!sp)
        return TDM_ERR_CHANNEL;
    immediate_set_idle(sp, idle != 0);
    return TDM_OK;
}

/* S5: the split stops counting without a recombine, so removing the
 * lowest split advances the output only at the next tick or immediate
 * update, and removing the highest never retracts anything. */
tdm_err tdm_reader_split_finished(tdm_reader *r, int split)
{
    if (!r)
        return TDM_ERR_INVAL;
    if (r->ended)
        return TDM_ERR_STATE;
    reader_split *sp = live_split(r, split);
    if (!sp)
        return TDM_ERR_CHANNEL;
    sp->finished = true;
    tdm__wm_core_fini(&sp->core);
    return TDM_OK;
}

/* ---- Time ---- */

/* S4: every live split's generator emits into its deferred output (its
 * idleness check included), then one combine. */
static void periodic_tick(tdm_reader *r)
{
    for (int i = 0; i < r->n; i++) {
        reader_split *sp = r->splits[i];
        if (!sp->finished)
            tdm__wm_core_periodic(&sp->core, &sp->deferred);
    }
    combine(r);
}

/* The periodic tick comes first, so a report due at the same time sees
 * its result.  Both schedules re-arm at now + interval (fixed delay).
 * After the end only reports go on (they say MAX); watermark ticks stop,
 * so no idleness can be declared after MAX. */
tdm_err tdm_reader_advance(tdm_reader *r)
{
    if (!r)
        return TDM_ERR_INVAL;
    tdm_time_ms now = tdm_clock_now(r->clk);
    if (!r->ended && r->strat.interval > 0 && now >= r->next_tick) {
        periodic_tick(r);
        r->next_tick = tdm__time_add_sat(now, r->strat.interval);
    }
    /* F1: after the periodic tick, so that the data has its say first. */
    if (!r->ended && r->strat.fb_interval > 0 && now >= r->next_fb) {
        fallback_tick(r, now);
        r->next_fb = tdm__time_add_sat(now, r->strat.fb_interval);
    }
    if (r->align && now >= r->next_report) {
        /* A1: nothing before the first watermark; MAX while idle. */
        if (r->latest != TDM_TIME_MIN)
            emit_report(r, r->out_idle ? TDM_TIME_MAX : r->latest);
        r->next_report = tdm__time_add_sat(now, r->update_interval);
    }
    return TDM_OK;
}

/* A3: reader level first, then the splits (SourceOperator order). */
tdm_err tdm_reader_announce(tdm_reader *r, tdm_time_ms max_wm)
{
    if (!r)
        return TDM_ERR_INVAL;
    if (!r->align)
        return TDM_ERR_STATE;
    r->max_desired = max_wm;
    check_reader_alignment(r);
    check_split_alignment(r);
    return TDM_OK;
}

/* Every split reaches MAX at once and the reader emits MAX once, ACTIVE
 * first if it was idle.  As in Flink the end-of-input MAX bypasses the
 * alignment listener (no pause); with alignment on, the finished reader
 * reports MAX straight away. */
tdm_err tdm_reader_end(tdm_reader *r)
{
    if (!r)
        return TDM_ERR_INVAL;
    if (r->ended)
        return TDM_ERR_STATE;
    for (int i = 0; i < r->n; i++) {
        reader_split *sp = r->splits[i];
        if (!sp->finished) {
            sp->wm = TDM_TIME_MAX;
            sp->idle = false;
        }
    }
    r->combined = TDM_TIME_MAX;
    r->latest = TDM_TIME_MAX;
    if (r->out < TDM_TIME_MAX) {
        r->out = TDM_TIME_MAX;
        if (r->out_idle) {
            r->out_idle = false;
            tdm__emit_status(&r->sink, 0);
        }
        tdm__emit_watermark(&r->sink, TDM_TIME_MAX);
    }
    if (r->align)
        emit_report(r, TDM_TIME_MAX);
    r->ended = true;
    fallback_track(r);
    return TDM_OK;
}

/* ---- Introspection ---- */

/* 1 while alignment keeps the reader from reading. */
int tdm_reader_is_paused(const tdm_reader *r)
{
    return r && r->paused ? 1 : 0;
}

/* 1 paused, 0 not, -1 for a bad index (a finished split keeps its
 * last state). */
int tdm_reader_split_is_paused(const tdm_reader *r, int split)
{
    if (!r || split < 0 || split >= r->n)
        return -1;
    return r->splits[split]->paused ? 1 : 0;
}

/* 1 while the split is idle: left out of the minimum (its generator
 * reported no data for the idle timeout, or it was told so). */
int tdm_reader_split_is_idle(const tdm_reader *r, int split)
{
    if (!r || split < 0 || split >= r->n)
        return -1;
    return r->splits[split]->idle ? 1 : 0;
}

/* The last watermark the reader emitted (MIN before any). */
tdm_time_ms tdm_reader_watermark(const tdm_reader *r)
{
    return r ? r->out : TDM_TIME_MIN;
}

/* F4: the combined value is the data watermark. */
tdm_time_ms tdm_reader_data_watermark(const tdm_reader *r)
{
    return r ? r->combined : TDM_TIME_MIN;
}

int tdm_reader_fallback_driving(const tdm_reader *r)
{
    if (!r)
        return -1;
    return r->fb_since != TDM_TIME_MIN ? 1 : 0;
}

tdm_time_ms tdm_reader_fallback_time(const tdm_reader *r, tdm_time_ms *total)
{
    tdm_time_ms stretch = 0;
    if (r && r->fb_since != TDM_TIME_MIN)
        stretch = tdm__time_sub_sat(tdm_clock_now(r->clk), r->fb_since);
    if (total)
        *total = r ? tdm__time_add_sat(r->fb_total, stretch) : 0;
    return stretch;
}

/* A split's partial watermark; MIN for a bad index. */
tdm_time_ms tdm_reader_split_watermark_get(const tdm_reader *r, int split)
{
    if (!r || split < 0 || split >= r->n)
        return TDM_TIME_MIN;
    return r->splits[split]->wm;
}

/* ---- Checkpoints ---- */

enum { SPLIT_IDLE = 1, SPLIT_FINISHED = 2, SPLIT_HAS_WM = 4, SPLIT_PAUSED = 8 };
enum {
    READER_OUT_IDLE = 1,
    READER_PAUSED = 2,
    READER_ENDED = 4,
    READER_ALIGN = 8,
    READER_FALLBACK = 16 /* the fallback's fields follow the splits */
};

/* Time left before @p due, within [0, interval]. */
static tdm_time_ms time_left(const tdm_reader *r, tdm_time_ms due,
                             tdm_time_ms interval)
{
    tdm_time_ms left = tdm__time_sub_sat(due, tdm_clock_now(r->clk));
    if (left < 0)
        return 0;
    return left > interval ? interval : left;
}

/* Section SPLIT: version, flags u8, wm svar, then (live splits) the
 * generator core. */
static tdm_err split_encode(const reader_split *sp, struct tdm__enc *e)
{
    uint8_t flags = (uint8_t)((sp->idle ? SPLIT_IDLE : 0) |
                              (sp->finished ? SPLIT_FINISHED : 0) |
                              (sp->has_wm ? SPLIT_HAS_WM : 0) |
                              (sp->paused ? SPLIT_PAUSED : 0));
    tdm_err err = TDM_OK;

    tdm__enc_begin(e, TDM__SNAP_TAG_SPLIT);
    tdm__enc_uvar(e, TDM__SNAP_WM_VERSION);
    tdm__enc_u8(e, flags);
    tdm__enc_svar(e, sp->wm);
    if (!sp->finished)
        err = tdm__wm_core_snapshot(&sp->core, e);
    tdm__enc_end(e);
    return err;
}

/* Reads a split section from @p d into @p sp; errors end up in d. */
static tdm_err split_decode(reader_split *sp, struct tdm__dec *d)
{
    tdm__dec body;
    uint8_t flags;
    int64_t wm;

    if (tdm__dec_expect(d, TDM__SNAP_TAG_SPLIT, TDM__SNAP_WM_VERSION,
                        "not a reader split section",
                        "unknown reader split version", &body) != TDM_OK)
        return TDM_ERR_PARSE;
    tdm__dec_u8(&body, &flags);
    tdm__dec_svar(&body, &wm);
    if (!body.err &&
        (flags & ~(SPLIT_IDLE | SPLIT_FINISHED | SPLIT_HAS_WM | SPLIT_PAUSED)))
        tdm__dec_fail(&body, "unknown split flags");
    if (!body.err && sp->finished && !(flags & SPLIT_FINISHED))
        tdm__dec_fail(&body, "split already finished");
    if (!body.err && !(flags & SPLIT_FINISHED))
        tdm__wm_core_restore(&sp->core, &body);
    if (body.err) {
        tdm__wm_dec_adopt(d, &body);
        return TDM_ERR_PARSE;
    }
    sp->wm = wm;
    sp->idle = (flags & SPLIT_IDLE) != 0;
    sp->has_wm = (flags & SPLIT_HAS_WM) != 0;
    if ((flags & SPLIT_FINISHED) && !sp->finished) {
        sp->finished = true;
        tdm__wm_core_fini(&sp->core);
    }
    /* Alignment's pause holds; the activity clock stops at the restore
     * moment. */
    if ((flags & SPLIT_PAUSED) && !sp->paused) {
        sp->paused = true;
        tdm__pclock_pause(&sp->clock);
    } else if (!(flags & SPLIT_PAUSED) && sp->paused) {
        sp->paused = false;
        tdm__pclock_resume(&sp->clock);
    }
    return TDM_OK;
}

/* One split alone (see wm.h). */
tdm_err tdm__reader_split_snapshot(const tdm_reader *r, int split,
                                   struct tdm__enc *e)
{
    if (!r || !e || split < 0 || split >= r->n)
        return TDM_ERR_INVAL;
    tdm_err err = split_encode(r->splits[split], e);
    return err == TDM_OK && e->oom ? TDM_ERR_NOMEM : err;
}

tdm_err tdm__reader_split_restore(tdm_reader *r, int split, struct tdm__dec *d)
{
    if (!r || !d || split < 0 || split >= r->n)
        return TDM_ERR_INVAL;
    return split_decode(r->splits[split], d);
}

/* Section READER: version, flags u8, combined, out, latest, max_desired
 * (svar), time to the next tick and to the next report (svar), split
 * count (uvar), then one split section per split; with READER_FALLBACK
 * then the time to the next fallback tick, the finished stretches' total
 * and the current stretch's time so far (-1: the data drives), svar. */
tdm_err tdm__reader_snapshot(const tdm_reader *r, struct tdm__enc *e)
{
    if (!r || !e)
        return TDM_ERR_INVAL;
    if (r->strat.kind == TDM__GEN_CUSTOM)
        return TDM_ERR_UNSUPPORTED;
    uint8_t flags = (uint8_t)((r->out_idle ? READER_OUT_IDLE : 0) |
                              (r->paused ? READER_PAUSED : 0) |
                              (r->ended ? READER_ENDED : 0) |
                              (r->align ? READER_ALIGN : 0) |
                              (r->strat.fb_interval > 0 ? READER_FALLBACK : 0));
    tdm_err err = TDM_OK;

    tdm__enc_begin(e, TDM__SNAP_TAG_READER);
    tdm__enc_uvar(e, TDM__SNAP_WM_VERSION);
    tdm__enc_u8(e, flags);
    tdm__enc_svar(e, r->combined);
    tdm__enc_svar(e, r->out);
    tdm__enc_svar(e, r->latest);
    tdm__enc_svar(e, r->max_desired);
    tdm__enc_svar(e, r->strat.interval > 0
                         ? time_left(r, r->next_tick, r->strat.interval)
                         : 0);
    tdm__enc_svar(e, r->align ? time_left(r, r->next_report, r->update_interval)
                              : 0);
    tdm__enc_uvar(e, (uint64_t)r->n);
    for (int i = 0; i < r->n && err == TDM_OK; i++)
        err = split_encode(r->splits[i], e);
    if (r->strat.fb_interval > 0) {
        tdm_time_ms total, stretch = tdm_reader_fallback_time(r, &total);
        tdm__enc_svar(e, time_left(r, r->next_fb, r->strat.fb_interval));
        tdm__enc_svar(e, total - stretch);
        tdm__enc_svar(e, r->fb_since != TDM_TIME_MIN ? stretch : -1);
    }
    tdm__enc_end(e);
    return err == TDM_OK && e->oom ? TDM_ERR_NOMEM : err;
}

/* The reader section's fields before its splits. */
typedef struct reader_head {
    uint8_t flags;
    int64_t combined, out, latest, max_desired, tick_left, report_left;
    uint64_t n; /* split sections that follow in the body */
    int64_t fb_left, fb_total, fb_stretch; /* after the splits (F4) */
} reader_head;

/* Opens a reader section of @p d: checks its tag and version, reads and
 * checks the fields before the splits into @p h and leaves @p body at
 * the first split section.  Errors end up in d (PARSE). */
static tdm_err head_decode(struct tdm__dec *d, tdm__dec *body, reader_head *h)
{
    if (tdm__dec_expect(d, TDM__SNAP_TAG_READER, TDM__SNAP_WM_VERSION,
                        "not a reader section", "unknown reader version",
                        body) != TDM_OK)
        return TDM_ERR_PARSE;
    tdm__dec_u8(body, &h->flags);
    tdm__dec_svar(body, &h->combined);
    tdm__dec_svar(body, &h->out);
    tdm__dec_svar(body, &h->latest);
    tdm__dec_svar(body, &h->max_desired);
    tdm__dec_svar(body, &h->tick_left);
    tdm__dec_svar(body, &h->report_left);
    tdm__dec_uvar(body, &h->n);
    if (!body->err &&
        (h->flags & ~(READER_OUT_IDLE | READER_PAUSED | READER_ENDED |
                      READER_ALIGN | READER_FALLBACK)))
        tdm__dec_fail(body, "unknown reader flags");
    if (!body->err && h->tick_left < 0)
        tdm__dec_fail(body, "tick delay out of range");
    if (!body->err && h->report_left < 0)
        tdm__dec_fail(body, "report delay out of range");
    if (!body->err && h->out < h->combined && !(h->flags & READER_ENDED))
        tdm__dec_fail(body, "emitted watermark below the combined one");
    if (!body->err && (h->n > tdm__dec_left(body) || h->n > INT32_MAX))
        tdm__dec_fail(body, "split count out of range");
    if (body->err) {
        tdm__wm_dec_adopt(d, body);
        return TDM_ERR_PARSE;
    }
    return TDM_OK;
}

/* F4: the fallback's fields after the split sections, if the flag says
 * they are there (none: no tick pending, nothing driven). */
static void fallback_decode(tdm__dec *body, reader_head *h)
{
    h->fb_left = -1;
    h->fb_total = 0;
    h->fb_stretch = -1;
    if (!(h->flags & READER_FALLBACK))
        return;
    tdm__dec_svar(body, &h->fb_left);
    tdm__dec_svar(body, &h->fb_total);
    tdm__dec_svar(body, &h->fb_stretch);
    if (!body->err && (h->fb_left < 0 || h->fb_total < 0 || h->fb_stretch < -1))
        tdm__dec_fail(body, "fallback times out of range");
}

/* F4: the fallback's schedule and stretch after a restore; a changed
 * interval caps what was left, a reader without a fallback now keeps
 * none. */
static void fallback_restore(tdm_reader *r, tdm_time_ms now, int64_t left,
                             int64_t total, int64_t stretch)
{
    if (r->strat.fb_interval <= 0)
        return;
    if (left < 0 || left > r->strat.fb_interval)
        left = r->strat.fb_interval;
    r->next_fb = tdm__time_add_sat(now, left);
    r->fb_total = total;
    r->fb_since = stretch >= 0 ? tdm__time_sub_sat(now, stretch) : TDM_TIME_MIN;
    fallback_track(r);
}

/* Restores into a fresh reader of the same strategy (alignment set up as
 * before, if it was).  Splits are added up to the checkpoint's count. */
tdm_err tdm__reader_restore(tdm_reader *r, struct tdm__dec *d)
{
    tdm__dec body;
    reader_head h;

    if (!r || !d)
        return TDM_ERR_INVAL;
    if (head_decode(d, &body, &h) != TDM_OK)
        return TDM_ERR_PARSE;
    if ((uint64_t)r->n > h.n)
        tdm__dec_fail(&body, "split count differs");
    for (uint64_t i = 0; !body.err && i < h.n; i++) {
        if ((int)i >= r->n && split_add(r, NULL) != TDM_OK)
            return TDM_ERR_NOMEM;
        split_decode(r->splits[i], &body);
    }
    if (!body.err)
        fallback_decode(&body, &h);
    if (body.err) {
        tdm__wm_dec_adopt(d, &body);
        return TDM_ERR_PARSE;
    }
    r->combined = h.combined;
    r->out = h.out;
    r->latest = h.latest;
    r->out_idle = (h.flags & READER_OUT_IDLE) != 0;
    r->ended = (h.flags & READER_ENDED) != 0;
    tdm_time_ms now = tdm_clock_now(r->clk);
    /* A changed interval caps what was left. */
    tdm_time_ms tick_left = h.tick_left;
    if (tick_left > r->strat.interval)
        tick_left = r->strat.interval;
    r->next_tick = tdm__time_add_sat(now, tick_left);
    if (r->align && (h.flags & READER_ALIGN)) {
        r->max_desired = h.max_desired;
        tdm_time_ms report_left = h.report_left;
        if (report_left > r->update_interval)
            report_left = r->update_interval;
        r->next_report = tdm__time_add_sat(now, report_left);
        if ((h.flags & READER_PAUSED) && !r->paused) {
            r->paused = true;
            tdm__pclock_pause(&r->clock);
        }
    }
    fallback_restore(r, now, h.fb_left, h.fb_total, h.fb_stretch);
    return TDM_OK;
}

/* ---- Restore at another parallelism ----
 *
 * The splits of several old readers are dealt to new ones.  Each split
 * keeps its whole state (partial watermark, idle, finished, alignment
 * pause, generator core).  What belongs to a reader as a whole cannot
 * be dealt (docs/checkpoints.md, "Restore at another parallelism"):
 *
 * - A new reader whose live splits are exactly the live splits of one
 *   old reader continues as that reader: its combined and emitted
 *   watermarks, idle output, pause, announcement and schedules.
 * - Any other new reader is recombined from the splits it now has, as
 *   combine() does at a tick: the minimum over live non-idle splits
 *   (the maximum if all are idle, idle output then; nothing without a
 *   live split), emitted value equal to it; the lowest announcement of
 *   the old readers, the reader and each split paused exactly when
 *   above it; the least time left to a tick and to a report.  Such a
 *   reader never existed, so there is no combined history to keep;
 *   where an uninterrupted reader of these splits would still show an
 *   older value (a split finished since its last combine, S5; a split
 *   back from idleness below it), this one shows the current
 *   combination, as that reader would at its next tick.
 *
 * Neither emits: the runtime announces the result downstream, where an
 * operator ignores watermarks at or below its own restored one. */

/* Skips one split section of @p body, checking its tag; *live is set
 * when the split is not finished. */
static void split_skip(tdm__dec *body, bool *live)
{
    uint64_t tag, version = 0;
    uint8_t flags = 0;
    tdm__dec sbody;
    *live = false;
    if (tdm__dec_section(body, &tag, &sbody) != TDM_OK)
        return;
    if (tag != TDM__SNAP_TAG_SPLIT) {
        tdm__dec_fail(body, "not a reader split section");
        return;
    }
    tdm__dec_uvar(&sbody, &version);
    tdm__dec_u8(&sbody, &flags);
    if (sbody.err)
        tdm__wm_dec_adopt(body, &sbody);
    *live = !(flags & SPLIT_FINISHED);
}

/* Restores, into a fresh reader of the same strategy, the splits of one
 * old reader's section that @p map assigns to it (see wm.h). */
tdm_err tdm__reader_restore_splits(tdm_reader *r, struct tdm__dec *d,
                                   int (*map)(void *ud, int split), void *ud)
{
    tdm__dec body;
    reader_head h;
    int live = 0, taken = 0; /* the old reader's live splits; ours */

    if (!r || !d || !map)
        return TDM_ERR_INVAL;
    if (head_decode(d, &body, &h) != TDM_OK)
        return TDM_ERR_PARSE;
    for (uint64_t i = 0; !body.err && i < h.n; i++) {
        int l = map(ud, (int)i);
        if (l < 0) {
            bool lv;
            split_skip(&body, &lv);
            live += lv;
            continue;
        }
        while (l >= r->n)
            if (split_add(r, NULL) != TDM_OK)
                return TDM_ERR_NOMEM;
        reader_split *sp = r->splits[l];
        if (sp->restored) {
            tdm__dec_fail(&body, "split restored twice");
            break;
        }
        if (split_decode(sp, &body) != TDM_OK)
            break;
        sp->restored = true;
        live += !sp->finished;
        taken += !sp->finished;
    }
    if (!body.err)
        fallback_decode(&body, &h);
    if (body.err) {
        tdm__wm_dec_adopt(d, &body);
        return TDM_ERR_PARSE;
    }
    if (taken == 0)
        return TDM_OK;
    reader_merge *m = &r->merge;
    if (m->n++ == 0) {
        m->whole = taken == live;
        m->combined = h.combined;
        m->out = h.out;
        m->latest = h.latest;
        m->flags = h.flags;
        m->fb_stretch = h.fb_stretch;
    }
    if (h.fb_total > m->fb_total)
        m->fb_total = h.fb_total;
    if (h.out < m->min_out)
        m->min_out = h.out;
    if (h.tick_left < m->tick_left)
        m->tick_left = h.tick_left;
    if (h.fb_left >= 0 && (m->fb_left < 0 || h.fb_left < m->fb_left))
        m->fb_left = h.fb_left;
    if (h.flags & READER_ALIGN) {
        m->align = true;
        if (h.max_desired < m->max_desired)
            m->max_desired = h.max_desired;
        if (h.report_left < m->report_left)
            m->report_left = h.report_left;
    }
    return TDM_OK;
}

/* Sets the pause of the reader or a split without an event (a restore
 * emits nothing); the activity clock stops at this moment. */
static void set_paused(bool *paused, tdm__pclock *clock, bool want)
{
    if (want && !*paused)
        tdm__pclock_pause(clock);
    else if (!want && *paused)
        tdm__pclock_resume(clock);
    *paused = want;
}

/* Merges what tdm__reader_restore_splits collected (see above). */
tdm_err tdm__reader_restore_finish(tdm_reader *r)
{
    if (!r)
        return TDM_ERR_INVAL;
    const reader_merge *m = &r->merge;
    bool any = false, all_idle = true, fresh = false;
    tdm_time_ms min = TDM_TIME_MAX, max = TDM_TIME_MIN;
    for (int i = 0; i < r->n; i++) {
        const reader_split *sp = r->splits[i];
        if (sp->finished)
            continue;
        any = true;
        fresh = fresh || !sp->restored;
        if (sp->wm > max)
            max = sp->wm;
        if (!sp->idle) {
            all_idle = false;
            if (sp->wm < min)
                min = sp->wm;
        }
    }
    bool same = m->n == 1 && m->whole && !fresh;
    tdm_time_ms now = tdm_clock_now(r->clk);
    if (m->n > 0) {
        tdm_time_ms left =
            m->tick_left < r->strat.interval ? m->tick_left : r->strat.interval;
        r->next_tick = tdm__time_add_sat(now, left);
    }
    if (r->align && m->align) {
        r->max_desired = m->max_desired;
        tdm_time_ms left = m->report_left < r->update_interval
                               ? m->report_left
                               : r->update_interval;
        r->next_report = tdm__time_add_sat(now, left);
    }
    if (same) {
        /* One old reader's splits, all of them: that reader. */
        r->combined = m->combined;
        r->out = m->out;
        r->latest = m->latest;
        r->out_idle = (m->flags & READER_OUT_IDLE) != 0;
        set_paused(&r->paused, &r->clock,
                   r->align && (m->flags & READER_PAUSED));
        fallback_restore(r, now, m->fb_left, m->fb_total, m->fb_stretch);
        merge_reset(r);
        return TDM_OK;
    }
    r->combined = !any ? TDM_TIME_MIN : all_idle ? max : min;
    r->out = r->combined;
    /* F4: a fallback's lift is kept as far as every old reader had it. */
    if (r->strat.fb_interval > 0 && m->n > 0 && m->min_out > r->out)
        r->out = m->min_out;
    r->latest = r->out;
    r->out_idle = any && all_idle;
    set_paused(&r->paused, &r->clock, r->align && r->max_desired < r->latest);
    for (int i = 0; i < r->n; i++) {
        reader_split *sp = r->splits[i];
        if (!sp->finished)
            set_paused(&sp->paused, &sp->clock,
                       r->align && sp->has_wm && sp->wm > r->max_desired);
    }
    if (m->n > 0)
        fallback_restore(r, now, m->fb_left, m->fb_total,
                         r->out > r->combined ? 0 : -1);
    merge_reset(r);
    return TDM_OK;
}

/* Splits the reader has (finished ones included). */
int tdm__reader_split_count(const tdm_reader *r)
{
    return r ? r->n : 0;
}

/* Whether the reader's output is idle (its last status said so). */
bool tdm__reader_output_idle(const tdm_reader *r)
{
    return r && r->out_idle;
}
