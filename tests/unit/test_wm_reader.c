/* SPDX-License-Identifier: MIT */
/* test_wm_reader.c - a source reader with several splits (tdm_reader,
 * rules S1-S6, A1, A3, I5) and the alignment coordinator (tdm_align_coord,
 * rule A2), after WatermarkOutputMultiplexerTest,
 * SourceOperatorAlignmentTest and SourceCoordinatorTest.
 *
 * Expected traces are derived by hand from the rules (see the comment
 * above each test).  Trace: "W<t>" watermark, "IDLE", "ACTIVE", "R<t>"
 * report, "PAUSED" / "RESUMED" reading, "SP<i>" / "SR<i>" split paused /
 * resumed, "A<t>:<targets>" announcement.
 */
#include "harness.h"
#include "core.h"
#include "testhooks.h"

/* ---- Trace of emitted events ---- */

typedef struct trace {
    char buf[4096];
} trace;

static void put(trace *t, const char *fmt, const char *prefix, int64_t v)
{
    size_t n = strlen(t->buf);
    const char *sep = n ? " " : "";
    if (fmt)
        snprintf(t->buf + n, sizeof t->buf - n, "%s%s", sep, fmt);
    else if (v == TDM_TIME_MAX)
        snprintf(t->buf + n, sizeof t->buf - n, "%s%sMAX", sep, prefix);
    else
        snprintf(t->buf + n, sizeof t->buf - n, "%s%s%" PRId64, sep, prefix, v);
}

static void trace_cb(void *opaque, const tdm_event *ev)
{
    trace *t = opaque;
    switch (tdm_event_get_type(ev)) {
    case TDM_EVENT_WATERMARK:
        put(t, NULL, "W", tdm_event_time(ev));
        break;
    case TDM_EVENT_STATUS:
        put(t, tdm_event_is_idle(ev) ? "IDLE" : "ACTIVE", NULL, 0);
        break;
    case TDM_EVENT_REPORTED:
        put(t, NULL, "R", tdm_event_time(ev));
        break;
    case TDM_EVENT_DATA_WATERMARK:
        put(t, NULL, "D", tdm_event_time(ev));
        break;
    case TDM_EVENT_READING_PAUSED:
        put(t, "PAUSED", NULL, 0);
        break;
    case TDM_EVENT_READING_RESUMED:
        put(t, "RESUMED", NULL, 0);
        break;
    case TDM_EVENT_SPLIT_PAUSED:
        put(t, NULL, "SP", tdm_event_index(ev));
        break;
    case TDM_EVENT_SPLIT_RESUMED:
        put(t, NULL, "SR", tdm_event_index(ev));
        break;
    case TDM_EVENT_ANNOUNCE: {
        size_t nt = 0;
        const int *tg = tdm_event_targets(ev, &nt);
        put(t, NULL, "A", tdm_event_time(ev));
        size_t n = strlen(t->buf);
        for (size_t i = 0; i < nt; i++) {
            snprintf(t->buf + n, sizeof t->buf - n, "%s%d", i ? "," : ":",
                     tg[i]);
            n = strlen(t->buf);
        }
        break;
    }
    default:
        put(t, "?", NULL, 0);
        break;
    }
}

static const char *take(trace *t)
{
    static char last[4096];
    memcpy(last, t->buf, sizeof last);
    t->buf[0] = '\0';
    return last;
}

/* ---- Fixture: a reader over a manual clock at 0 ---- */

typedef struct fix {
    tdm_clock *clk;
    tdm_wm_strategy *s;
    tdm_reader *r;
    tdm_record *rec;
    trace tr;
} fix;

/* kind TDM_WM_NONE models the vectors' "explicit" strategy: the reader
 * itself emits split watermarks; ticks still combine every 200 ms. */
static void fix_open(fix *f, tdm_wm_kind kind, tdm_time_ms bound)
{
    memset(f, 0, sizeof *f);
    ASSERT_OK(tdm_clock_new_manual(0, &f->clk));
    ASSERT_OK(tdm_wm_strategy_new(kind, bound, &f->s, NULL, 0));
    ASSERT_OK(tdm_record_new(&f->rec));
}

static void fix_start(fix *f, int n_splits)
{
    ASSERT_OK(tdm_reader_new(n_splits, f->s, f->clk, trace_cb, &f->tr, &f->r));
}

static void fix_close(fix *f)
{
    tdm_reader_destroy(f->r);
    tdm_wm_strategy_destroy(f->s);
    tdm_record_destroy(f->rec);
    tdm_clock_destroy(f->clk);
}

static void rec_at(fix *f, int split, tdm_time_ms ts)
{
    tdm_record_set(f->rec, "k", 1, ts, 1.0);
    ASSERT_OK(tdm_reader_record(f->r, split, f->rec));
}

static void tick(fix *f, tdm_time_ms now)
{
    ASSERT_OK(tdm_clock_set(f->clk, now));
    ASSERT_OK(tdm_reader_advance(f->r));
}

#define SWM(f, sp, ts) ASSERT_OK(tdm_reader_split_watermark((f)->r, sp, ts))
#define SIDLE(f, sp) ASSERT_OK(tdm_reader_split_status((f)->r, sp, 1))
#define SACTIVE(f, sp) ASSERT_OK(tdm_reader_split_status((f)->r, sp, 0))

/* ---- Construction and errors ---- */

TDM_TEST(reader_rejects_bad_arguments)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    tdm_reader *r = NULL;
    ASSERT_ERR(tdm_reader_new(-1, f.s, f.clk, NULL, NULL, &r), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_reader_new(1, NULL, f.clk, NULL, NULL, &r), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_reader_new(1, f.s, NULL, NULL, NULL, &r), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_reader_new(1, f.s, f.clk, NULL, NULL, NULL), TDM_ERR_INVAL);
    ASSERT_TRUE(r == NULL);
    fix_start(&f, 2);
    ASSERT_ERR(tdm_reader_split_watermark(f.r, 2, 5), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_reader_split_status(f.r, -1, 1), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_reader_split_finished(f.r, 9), TDM_ERR_CHANNEL);
    tdm_record_set(f.rec, "k", 1, 5, 1.0);
    ASSERT_ERR(tdm_reader_record(f.r, 3, f.rec), TDM_ERR_CHANNEL);
    tdm_record_set(f.rec, "k", 1, TDM_TIME_MIN, 1.0);
    ASSERT_ERR(tdm_reader_record(f.r, 0, f.rec), TDM_ERR_NO_TIMESTAMP);
    ASSERT_ERR(tdm_reader_announce(f.r, 5), TDM_ERR_STATE);
    char err[128] = "";
    ASSERT_ERR(tdm_reader_set_alignment(f.r, -1, 1000, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "max_drift_ms") != NULL);
    ASSERT_ERR(tdm_reader_set_alignment(f.r, 0, 0, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "update_interval_ms") != NULL);
    ASSERT_EQ(tdm_reader_split_is_paused(f.r, 5), -1);
    ASSERT_EQ(tdm_reader_split_watermark_get(f.r, 5), TDM_TIME_MIN);
    /* A finished split takes no more input. */
    ASSERT_OK(tdm_reader_split_finished(f.r, 1));
    ASSERT_ERR(tdm_reader_split_watermark(f.r, 1, 5), TDM_ERR_CHANNEL);
    ASSERT_STR_EQ(take(&f.tr), "");
    fix_close(&f);
    tdm_reader_destroy(NULL);
}

TDM_TEST(reader_out_of_memory)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    for (long n = 1; n <= 5; n++) {
        tdm_reader *r = NULL;
        tdm__alloc_fail_after(n);
        tdm_err e = tdm_reader_new(3, f.s, f.clk, NULL, NULL, &r);
        tdm__alloc_fail_after(0);
        ASSERT_ERR(e, TDM_ERR_NOMEM);
        ASSERT_TRUE(r == NULL);
    }
    fix_close(&f);
}

/* ---- Immediate outputs (S2-S4) ---- */

/* multipleImmediateWatermark + whenImmediateOutputBecomesIdle... +
 * combinedWatermarkDoesNotRegress... (vector ext-splits-immediate-min-
 * and-idle): 2 and 5 wait for silent split 2; split 2 idle -> 2; split 0
 * idle -> 5; split 0 back with 3 -> nothing (never backwards); split 0 at
 * 7 -> min(7, 5) = 5 nothing; split 1 at 9 -> 7. */
TDM_TEST(reader_immediate_min_and_idle)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 3);
    SWM(&f, 0, 2);
    SWM(&f, 1, 5);
    ASSERT_STR_EQ(take(&f.tr), "");
    SIDLE(&f, 2);
    ASSERT_STR_EQ(take(&f.tr), "W2");
    SIDLE(&f, 0);
    ASSERT_STR_EQ(take(&f.tr), "W5");
    SWM(&f, 0, 3);
    SWM(&f, 0, 7);
    ASSERT_STR_EQ(take(&f.tr), "");
    SWM(&f, 1, 9);
    ASSERT_STR_EQ(take(&f.tr), "W7");
    ASSERT_EQ(tdm_reader_watermark(f.r), 7);
    ASSERT_EQ(tdm_reader_split_watermark_get(f.r, 1), 9);
    fix_close(&f);
}

/* S2: a watermark clears the split's idle flag even when it does not
 * rise.  5 / 10 -> 5; split 0 idle -> 10; split 0 sends 3 (not a rise: no
 * combine, but active again at 5); split 1 at 20 recombines: min(5, 20)
 * = 5 is below 10 -> nothing.  Had the flag stayed, 20 would go out. */
TDM_TEST(reader_watermark_clears_split_idle)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 2);
    SWM(&f, 0, 5);
    SWM(&f, 1, 10);
    SIDLE(&f, 0);
    ASSERT_STR_EQ(take(&f.tr), "W5 W10");
    ASSERT_EQ(tdm_reader_split_is_idle(f.r, 0), 1);
    ASSERT_EQ(tdm_reader_split_is_idle(f.r, 1), 0);
    ASSERT_EQ(tdm_reader_split_is_idle(f.r, 2), -1);
    SWM(&f, 0, 3);
    SWM(&f, 1, 20);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_reader_watermark(f.r), 10);
    /* The watermark 3 made split 0 active again. */
    ASSERT_EQ(tdm_reader_split_is_idle(f.r, 0), 0);
    fix_close(&f);
}

/* Newest S3 (vector ext-splits-all-idle-master): 5 / 2 -> 2; split 0
 * idle: min over split 1 = 2, nothing; split 1 idle: all idle -> max 5,
 * then IDLE.  Split 1 active again: recombine gives 2 < 5, nothing; the
 * reader stays announced idle until a watermark rises (6 -> ACTIVE W6). */
TDM_TEST(reader_all_idle_flushes_max_then_idle)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 2);
    SWM(&f, 0, 5);
    SWM(&f, 1, 2);
    SIDLE(&f, 0);
    ASSERT_STR_EQ(take(&f.tr), "W2");
    SIDLE(&f, 1);
    ASSERT_STR_EQ(take(&f.tr), "W5 IDLE");
    SACTIVE(&f, 1);
    ASSERT_STR_EQ(take(&f.tr), "");
    SWM(&f, 1, 6);
    ASSERT_STR_EQ(take(&f.tr), "ACTIVE W6");
    fix_close(&f);
}

/* noCombinedDeferredUpdateWhenWeHaveZeroOutputs: without splits a tick
 * emits nothing and the reader is not idle. */
TDM_TEST(reader_without_splits_emits_nothing)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    fix_start(&f, 0);
    tick(&f, 200);
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "");
    fix_close(&f);
}

/* ---- Deferred outputs and ticks (S4) ---- */

/* deferredOutputDoesNotImmediatelyAdvanceWatermark (vector ext-splits-
 * periodic-combines-once): bounded(0) per split.  Records never combine;
 * at 200 the candidates 0 and 1 are recorded, then one combine -> 0; at
 * 400 candidates 9 and 19 -> a single 9 (a valve would emit 1 then 9). */
TDM_TEST(reader_periodic_combines_once)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    fix_start(&f, 2);
    rec_at(&f, 0, 1);
    rec_at(&f, 1, 2);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W0");
    rec_at(&f, 0, 10);
    rec_at(&f, 1, 20);
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "W9");
    fix_close(&f);
}

/* On-event generators write to the immediate output: split 0 at 10 ->
 * partial 9, but split 1 (MIN) holds; split 1 at 30 -> min(9, 29) = 9 at
 * once, without a tick. */
TDM_TEST(reader_on_event_generators_are_immediate)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_emit_on_event(f.s, 1));
    fix_start(&f, 2);
    rec_at(&f, 0, 10);
    ASSERT_STR_EQ(take(&f.tr), "");
    rec_at(&f, 1, 30);
    ASSERT_STR_EQ(take(&f.tr), "W9");
    fix_close(&f);
}

/* S5 (testRemoveOfLowestDoesNotImmediatelyAdvanceWatermark, vector
 * ext-splits-finished-split-unblocks-at-next-tick): -4343 / -4333 ->
 * -4343; finishing split 0 emits nothing; the tick at 200 -> -4333; an
 * immediate -4000 -> -4000 at once. */
TDM_TEST(reader_finished_split_unblocks_at_next_tick)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 2);
    SWM(&f, 0, -4343);
    SWM(&f, 1, -4333);
    ASSERT_OK(tdm_reader_split_finished(f.r, 0));
    ASSERT_STR_EQ(take(&f.tr), "W-4343");
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W-4333");
    SWM(&f, 1, -4000);
    ASSERT_STR_EQ(take(&f.tr), "W-4000");
    fix_close(&f);
}

/* testRemoveOfHighestDoesNotRetractWatermark: 10 / 20 -> 10; removing
 * split 1 and ticking leaves 10 (no retraction, no repeat). */
TDM_TEST(reader_removing_highest_split_does_not_retract)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 2);
    SWM(&f, 0, 10);
    SWM(&f, 1, 20);
    ASSERT_OK(tdm_reader_split_finished(f.r, 1));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W10");
    fix_close(&f);
}

/* A split added later starts at MIN: it holds the output (20 does not go
 * out) but cannot pull it back; at 15 the output moves to 15. */
TDM_TEST(reader_added_split_holds_but_never_pulls_back)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 1);
    SWM(&f, 0, 10);
    int idx = -1;
    ASSERT_OK(tdm_reader_add_split(f.r, &idx));
    ASSERT_EQ(idx, 1);
    tick(&f, 200);
    SWM(&f, 0, 20);
    ASSERT_STR_EQ(take(&f.tr), "W10");
    SWM(&f, 1, 15);
    ASSERT_STR_EQ(take(&f.tr), "W15");
    fix_close(&f);
}

/* ---- Deferred idleness from generators ---- */

typedef struct cst {
    tdm_time_ms max;
} cst;

static void c_event(void *ud, void *state, const tdm_record *rec,
                    tdm_wm_output *out)
{
    (void)ud;
    (void)out;
    cst *s = state;
    s->max = tdm_record_ts(rec);
}

/* Emits its value and marks idle in the same periodic call. */
static void c_periodic(void *ud, void *state, tdm_wm_output *out)
{
    (void)ud;
    tdm_wm_output_emit(out, ((cst *)state)->max);
    tdm_wm_output_mark_idle(out);
}

/* whenAllDeferredOutputsEmitAndIdleWatermarkAdvances: both splits emit
 * (5 and 2) and go idle inside one tick; nothing happens before the
 * combine, which sees all idle: max 5, then IDLE. */
TDM_TEST(reader_deferred_emit_and_idle_in_one_tick)
{
    tdm_wm_generator_methods m = {.version = 1,
                                  .state_size = sizeof(cst),
                                  .on_event = c_event,
                                  .on_periodic_emit = c_periodic};
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    tdm_wm_strategy_destroy(f.s);
    ASSERT_OK(tdm_wm_strategy_new_custom(&m, NULL, &f.s, NULL, 0));
    fix_start(&f, 2);
    rec_at(&f, 0, 5);
    rec_at(&f, 1, 2);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W5 IDLE");
    fix_close(&f);
}

/* Idleness per split (interval 200, timeout 1000): split 0 has a record
 * at 0 (reset at 200, countdown from 400, idle at 1600); split 1 never
 * had one (countdown from 200, idle at 1400: 1200 > 1000).  Split 1 idle
 * at 1400 releases split 0's 99; split 0 idle at 1600 -> all idle, max
 * 99 already out -> IDLE only. */
TDM_TEST(reader_split_idleness_via_generators)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 1000, NULL, 0));
    fix_start(&f, 2);
    rec_at(&f, 0, 100);
    for (tdm_time_ms t = 200; t <= 1200; t += 200)
        tick(&f, t);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 1400);
    ASSERT_STR_EQ(take(&f.tr), "W99");
    tick(&f, 1600);
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    fix_close(&f);
}

/* ---- Alignment (A1, A3, I5) ---- */

/* SourceOperatorAlignmentTest.testWatermarkAlignment (vector
 * ext-alignment-reader-pause-resume), update interval 1000: 1000 goes
 * out and is reported at 1000; max 999 < 1000 pauses the reader, then
 * its split; still reported at 2000; max 1001 resumes both; split
 * watermark 2000 > 1001 pauses the split (split listener), then the
 * reader (effective watermark), then the watermark is written; 2000 is
 * reported at 3000. */
TDM_TEST(reader_alignment_pause_resume)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 1);
    ASSERT_OK(tdm_reader_set_alignment(f.r, 100, 1000, NULL, 0));
    SWM(&f, 0, 1000);
    ASSERT_STR_EQ(take(&f.tr), "W1000");
    tick(&f, 1000);
    ASSERT_STR_EQ(take(&f.tr), "R1000");
    ASSERT_OK(tdm_reader_announce(f.r, 999));
    ASSERT_STR_EQ(take(&f.tr), "PAUSED SP0");
    ASSERT_EQ(tdm_reader_is_paused(f.r), 1);
    ASSERT_EQ(tdm_reader_split_is_paused(f.r, 0), 1);
    tick(&f, 2000);
    ASSERT_STR_EQ(take(&f.tr), "R1000");
    ASSERT_OK(tdm_reader_announce(f.r, 1001));
    ASSERT_STR_EQ(take(&f.tr), "RESUMED SR0");
    SWM(&f, 0, 2000);
    ASSERT_STR_EQ(take(&f.tr), "SP0 PAUSED W2000");
    tick(&f, 3000);
    ASSERT_STR_EQ(take(&f.tr), "R2000");
    fix_close(&f);
}

/* A3: the check is strict, equal is allowed: latest 500 with max 500
 * does not pause; a repeated announcement changes nothing. */
TDM_TEST(reader_alignment_equal_is_allowed)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 1);
    ASSERT_OK(tdm_reader_set_alignment(f.r, 0, 1000, NULL, 0));
    SWM(&f, 0, 500);
    ASSERT_OK(tdm_reader_announce(f.r, 500));
    ASSERT_OK(tdm_reader_announce(f.r, 500));
    ASSERT_STR_EQ(take(&f.tr), "W500");
    ASSERT_EQ(tdm_reader_is_paused(f.r), 0);
    fix_close(&f);
}

/* Split-level alignment with two splits: 100 / 500 -> 100.  Max 300:
 * the reader (100) reads on, split 1 (500) pauses.  Max 600 resumes it.
 * Split 0 at 700 > 600 pauses at its update; the combine gives
 * min(700, 500) = 500 <= 600, so the reader keeps reading. */
TDM_TEST(reader_alignment_per_split)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 2);
    ASSERT_OK(tdm_reader_set_alignment(f.r, 0, 1000, NULL, 0));
    SWM(&f, 0, 100);
    SWM(&f, 1, 500);
    ASSERT_STR_EQ(take(&f.tr), "W100");
    ASSERT_OK(tdm_reader_announce(f.r, 300));
    ASSERT_STR_EQ(take(&f.tr), "SP1");
    ASSERT_EQ(tdm_reader_split_is_paused(f.r, 1), 1);
    ASSERT_EQ(tdm_reader_split_is_paused(f.r, 0), 0);
    ASSERT_OK(tdm_reader_announce(f.r, 600));
    ASSERT_STR_EQ(take(&f.tr), "SR1");
    SWM(&f, 0, 700);
    ASSERT_STR_EQ(take(&f.tr), "SP0 W500");
    ASSERT_EQ(tdm_reader_is_paused(f.r), 0);
    fix_close(&f);
}

/* A1: no report before the first watermark; MAX while the reader is
 * idle; back to the latest watermark once active; at end of input the
 * reader reports MAX right after its MAX watermark (SourceOperator's
 * DATA_FINISHED), and later update ticks report MAX too. */
TDM_TEST(reader_reports)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 1);
    ASSERT_OK(tdm_reader_set_alignment(f.r, 0, 1000, NULL, 0));
    tick(&f, 1000);
    ASSERT_STR_EQ(take(&f.tr), "");
    SWM(&f, 0, 40);
    tick(&f, 1500); /* not due: next report at 2000 */
    ASSERT_STR_EQ(take(&f.tr), "W40");
    tick(&f, 2000);
    ASSERT_STR_EQ(take(&f.tr), "R40");
    SIDLE(&f, 0);
    tick(&f, 3000);
    ASSERT_STR_EQ(take(&f.tr), "IDLE RMAX");
    SWM(&f, 0, 50);
    tick(&f, 4000);
    ASSERT_STR_EQ(take(&f.tr), "ACTIVE W50 R50");
    ASSERT_OK(tdm_reader_end(f.r));
    ASSERT_STR_EQ(take(&f.tr), "WMAX RMAX");
    tick(&f, 5000); /* the report timer keeps running: MAX */
    ASSERT_STR_EQ(take(&f.tr), "RMAX");
    fix_close(&f);
}

/* I5: a paused split's idleness clock stands still.  Bounded(0), timeout
 * 1000, record 5000 at 0 -> 4999 at 200.  Max 100 pauses reader and
 * split at 200 (their clocks read 200 from then on).  Ticks to 5000 stay
 * silent: the countdown starts at the tick at 400, but reads 200 on the
 * paused clock, and no time elapses.  Max MAX at 5000 resumes: the clock
 * goes on from 200 (wall time - 4800), so the split is idle at the first
 * tick where it reads more than 200 + 1000: wall time 6200 (at 6000 it
 * reads 1200, not more).  Without the pause it would be idle at 1600. */
TDM_TEST(reader_paused_split_does_not_go_idle)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 1000, NULL, 0));
    fix_start(&f, 1);
    ASSERT_OK(tdm_reader_set_alignment(f.r, 0, 1000000, NULL, 0));
    rec_at(&f, 0, 5000);
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W4999");
    ASSERT_OK(tdm_reader_announce(f.r, 100));
    ASSERT_STR_EQ(take(&f.tr), "PAUSED SP0");
    for (tdm_time_ms t = 400; t <= 5000; t += 200)
        tick(&f, t);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(tdm_reader_announce(f.r, TDM_TIME_MAX));
    ASSERT_STR_EQ(take(&f.tr), "RESUMED SR0");
    for (tdm_time_ms t = 5200; t <= 6000; t += 200)
        tick(&f, t);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 6200);
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    fix_close(&f);
}

/* I5 per split: two splits, bounded(0), timeout 1000, ticks every 200.
 * Records 5000 (split 0) and 100 (split 1) -> 99 at 200.  Max 1000
 * pauses split 0 only; the reader (99) reads on and split 1 keeps
 * getting records below 1000, so the output follows split 1.  Split 0's
 * activity clock is frozen at 200: its countdown never elapses and it
 * stays active.  Marking split 1 idle by hand at 3000 then leaves split
 * 0 in the minimum: 4999 goes out (after the reader pauses itself, as
 * 4999 > 1000) and no IDLE follows.  Had split 0's clock run, it would
 * have been idle since 1600 and the reader would say IDLE here. */
TDM_TEST(reader_paused_split_alone_does_not_go_idle)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 1000, NULL, 0));
    fix_start(&f, 2);
    ASSERT_OK(tdm_reader_set_alignment(f.r, 0, 1000000, NULL, 0));
    rec_at(&f, 0, 5000);
    rec_at(&f, 1, 100);
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W99");
    ASSERT_OK(tdm_reader_announce(f.r, 1000));
    ASSERT_STR_EQ(take(&f.tr), "SP0");
    for (tdm_time_ms t = 400; t <= 3000; t += 200) {
        rec_at(&f, 1, 100 + t / 10); /* 140 .. 400: stays below 1000 */
        tick(&f, t);
    }
    ASSERT_STR_EQ(take(&f.tr), "W139 W159 W179 W199 W219 W239 W259 W279 "
                               "W299 W319 W339 W359 W379 W399");
    ASSERT_EQ(tdm_reader_is_paused(f.r), 0);
    SIDLE(&f, 1);
    ASSERT_STR_EQ(take(&f.tr), "PAUSED W4999");
    ASSERT_EQ(tdm_reader_split_is_paused(f.r, 0), 1);
    fix_close(&f);
}

/* ---- End of input ---- */

/* Every split jumps to MAX: the reader emits MAX once (ACTIVE first when
 * idle); afterwards inputs are refused and ticks do nothing. */
TDM_TEST(reader_end_from_idle)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f, 2);
    SWM(&f, 0, 10);
    SIDLE(&f, 0);
    SIDLE(&f, 1);
    ASSERT_STR_EQ(take(&f.tr), "W10 IDLE");
    ASSERT_OK(tdm_reader_end(f.r));
    ASSERT_STR_EQ(take(&f.tr), "ACTIVE WMAX");
    ASSERT_EQ(tdm_reader_watermark(f.r), TDM_TIME_MAX);
    ASSERT_EQ(tdm_reader_split_watermark_get(f.r, 1), TDM_TIME_MAX);
    ASSERT_ERR(tdm_reader_end(f.r), TDM_ERR_STATE);
    ASSERT_ERR(tdm_reader_split_watermark(f.r, 0, 20), TDM_ERR_STATE);
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "");
    fix_close(&f);
}

/* ---- The alignment coordinator (A2) ---- */

TDM_TEST(coordinator_rejects_bad_arguments)
{
    tdm_clock *clk = NULL;
    tdm_align_coord *c = NULL;
    char err[128] = "";
    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    ASSERT_ERR(
        tdm_align_coord_new(0, 0, 1000, clk, NULL, NULL, &c, err, sizeof err),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "n_subtasks") != NULL);
    ASSERT_ERR(
        tdm_align_coord_new(2, -1, 1000, clk, NULL, NULL, &c, err, sizeof err),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "max_drift_ms") != NULL);
    ASSERT_ERR(
        tdm_align_coord_new(2, 0, 0, clk, NULL, NULL, &c, err, sizeof err),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "update_interval_ms") != NULL);
    ASSERT_ERR(tdm_align_coord_new(2, 0, 10, NULL, NULL, NULL, &c, NULL, 0),
               TDM_ERR_INVAL);
    ASSERT_TRUE(c == NULL);
    ASSERT_OK(tdm_align_coord_new(2, 0, 10, clk, NULL, NULL, &c, NULL, 0));
    ASSERT_ERR(tdm_align_coord_report(c, 2, 5), TDM_ERR_CHANNEL);
    tdm_align_coord_destroy(c);
    tdm_align_coord_destroy(NULL);
    for (long n = 1; n <= 4; n++) {
        c = NULL;
        tdm__alloc_fail_after(n);
        tdm_err e = tdm_align_coord_new(2, 0, 10, clk, NULL, NULL, &c, NULL, 0);
        tdm__alloc_fail_after(0);
        ASSERT_ERR(e, TDM_ERR_NOMEM);
        ASSERT_TRUE(c == NULL);
    }
    tdm_clock_destroy(clk);
}

/* Vector ext-alignment-coordinator, drift 100, update 1000:
 *   1000: nobody reported -> nothing
 *   2000: {0: 500} -> 600 to [0]
 *   3000: {500, 300, MAX} -> 400 to all three
 *   4000: subtask 1 now 700 -> min 500 -> 600
 *   5000: 0 and 1 idle (MAX), 2 at MAX -> MAX + 100 saturates -> MAX
 *   6000: subtask 2 back at 50 (the report replaces MAX) -> 150. */
TDM_TEST(coordinator_announces_min_plus_drift)
{
    tdm_clock *clk = NULL;
    tdm_align_coord *c = NULL;
    trace tr = {{0}};
    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    ASSERT_OK(
        tdm_align_coord_new(3, 100, 1000, clk, trace_cb, &tr, &c, NULL, 0));
#define STEP(now, want)                                                        \
    do {                                                                       \
        ASSERT_OK(tdm_clock_set(clk, (now)));                                  \
        ASSERT_OK(tdm_align_coord_advance(c));                                 \
        ASSERT_STR_EQ(take(&tr), (want));                                      \
    } while (0)
    STEP(1000, "");
    ASSERT_OK(tdm_align_coord_report(c, 0, 500));
    STEP(2000, "A600:0");
    ASSERT_OK(tdm_align_coord_report(c, 1, 300));
    ASSERT_OK(tdm_align_coord_report(c, 2, TDM_TIME_MAX));
    STEP(3000, "A400:0,1,2");
    ASSERT_OK(tdm_align_coord_report(c, 1, 700));
    STEP(4000, "A600:0,1,2");
    ASSERT_OK(tdm_align_coord_report(c, 0, TDM_TIME_MAX));
    ASSERT_OK(tdm_align_coord_report(c, 1, TDM_TIME_MAX));
    STEP(5000, "AMAX:0,1,2");
    ASSERT_OK(tdm_align_coord_report(c, 2, 50));
    STEP(6000, "A150:0,1,2");
    /* Fixed rate: a late step (6500 -> due 7000 missed until 7300) fires
     * once and keeps the grid: next at 8000, not 8300. */
    STEP(6500, "");
    STEP(7300, "A150:0,1,2");
    STEP(7999, "");
    STEP(8000, "A150:0,1,2");
#undef STEP
    tdm_align_coord_destroy(c);
    tdm_clock_destroy(clk);
}

/* ---- Live settings (runtime/live.h, R-LV-5) ---- */

/* Periodic emission every 200 ms, bound 0: 10000 -> W9999.  The bound
 * rises to 5 s: 12000 gives 6999, below 9999, so the watermark holds;
 * 16000 gives 10999 -> W10999.  The bound falls to 1 s: the next tick
 * emits 16000 - 1001 = 14999 with no new record.  A split added after
 * the change has the new bound: 20000 -> 18999 (the combined minimum
 * stays split 0's). */
TDM_TEST(reader_live_bound_holds_when_raised_and_releases_when_lowered)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    fix_start(&f, 1);
    rec_at(&f, 0, 10000);
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W9999");
    ASSERT_OK(tdm_reader_set_bound(f.r, 5000));
    rec_at(&f, 0, 12000);
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_reader_watermark(f.r), 9999);
    rec_at(&f, 0, 16000);
    tick(&f, 600);
    ASSERT_STR_EQ(take(&f.tr), "W10999");
    ASSERT_OK(tdm_reader_set_bound(f.r, 1000));
    ASSERT_ERR(tdm_reader_set_bound(f.r, -1), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_reader_set_bound(NULL, 5), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_reader_set_idle_timeout(f.r, -1), TDM_ERR_INVAL);
    tick(&f, 800);
    ASSERT_STR_EQ(take(&f.tr), "W14999");
    int sp = -1;
    ASSERT_OK(tdm_reader_add_split(f.r, &sp));
    rec_at(&f, sp, 20000);
    tick(&f, 1000);
    ASSERT_EQ(tdm_reader_split_watermark_get(f.r, sp), 18999);
    ASSERT_STR_EQ(take(&f.tr), "");
    fix_close(&f);
}

/* On-event emission (the watermark follows each record): raised to 5 s
 * after 12000 (W11999), 15000 holds (9999), 18000 -> W12999; lowered to
 * 0, the next record 18500 -> W18499 at once. */
TDM_TEST(reader_live_bound_on_event)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_emit_on_event(f.s, 1));
    fix_start(&f, 1);
    rec_at(&f, 0, 12000);
    ASSERT_STR_EQ(take(&f.tr), "W11999");
    ASSERT_OK(tdm_reader_set_bound(f.r, 5000));
    rec_at(&f, 0, 15000);
    ASSERT_STR_EQ(take(&f.tr), "");
    rec_at(&f, 0, 18000);
    ASSERT_STR_EQ(take(&f.tr), "W12999");
    ASSERT_OK(tdm_reader_set_bound(f.r, 0));
    rec_at(&f, 0, 18500);
    ASSERT_STR_EQ(take(&f.tr), "W18499");
    fix_close(&f);
}

/* Idleness switched on and off while running, bound 0, two splits, only
 * split 0 gets a record (100).  Without a timeout split 1 holds the
 * watermark.  A 1 s timeout set after the tick at 200: at 400 split 0's
 * activity since the last check resets it, split 1 starts its countdown; split
 * 0 starts at 600.  Split 1 is idle at 1600 (1200 > 1000), which releases 99;
 * split 0 at 1800 -> all idle.  Timeout back to 0: idleness is no longer
 * checked, the next emissions make both splits active again, and split
 * 1, silent, holds the watermark: 5000 on split 0 moves nothing. */
TDM_TEST(reader_live_idle_timeout_on_and_off)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    fix_start(&f, 2);
    rec_at(&f, 0, 100);
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(tdm_reader_set_idle_timeout(f.r, 1000));
    for (tdm_time_ms t = 400; t <= 1400; t += 200)
        tick(&f, t);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 1600);
    ASSERT_STR_EQ(take(&f.tr), "W99");
    tick(&f, 1800);
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    ASSERT_OK(tdm_reader_set_idle_timeout(f.r, 0));
    tick(&f, 2000);
    rec_at(&f, 0, 5000);
    tick(&f, 2200);
    tick(&f, 2400);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_reader_split_is_idle(f.r, 1), 0);
    fix_close(&f);
}

/* ---- The fallback watermark (F1-F3) ---- */

/* One split, bound 0, fallback 1000 ms behind the clock every 500 ms
 * (first tick at 500).  A record at 100 gives W99 at the tick of 200.
 * The split stalls: at 500 the fallback's -500 is below 99 (nothing);
 * at 1500 it is 500: W500, and the fallback drives from 1500.  At 2000
 * it lifts to 1000 (a stretch of 500 so far).  Records resume at 2500:
 * the periodic tick at 2600 makes 2499 > 1000: W2499, the data drives,
 * after 1100 ms of fallback; the fallback's 1600 at 3000 stays below. */
TDM_TEST(reader_fallback_takes_over_and_hands_back)
{
    fix f;
    tdm_time_ms total = -1;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_fallback(f.s, 1000, 500, NULL, 0));
    fix_start(&f, 1);
    rec_at(&f, 0, 100);
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W99");
    tick(&f, 500);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_reader_fallback_driving(f.r), 0);
    tick(&f, 1500);
    ASSERT_STR_EQ(take(&f.tr), "W500");
    ASSERT_EQ(tdm_reader_fallback_driving(f.r), 1);
    ASSERT_EQ(tdm_reader_data_watermark(f.r), 99);
    tick(&f, 2000);
    ASSERT_STR_EQ(take(&f.tr), "W1000");
    ASSERT_EQ(tdm_reader_fallback_time(f.r, &total), 500);
    ASSERT_EQ(total, 500);
    rec_at(&f, 0, 2500);
    tick(&f, 2600);
    ASSERT_STR_EQ(take(&f.tr), "W2499");
    ASSERT_EQ(tdm_reader_fallback_driving(f.r), 0);
    ASSERT_EQ(tdm_reader_fallback_time(f.r, &total), 0);
    ASSERT_EQ(total, 1100);
    tick(&f, 3000);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_reader_watermark(f.r), 2499);
    fix_close(&f);
}

/* An idle output is left alone: the fallback neither wakes it (ACTIVE)
 * nor moves it, not even once its split is active again but has no
 * watermark (the output stays idle until the data emits).  A record at
 * 50 wakes it at the tick of 1200 (W49), and the fallback, in the same
 * tick, lifts it to 1100. */
TDM_TEST(reader_fallback_leaves_an_idle_output_alone)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_fallback(f.s, 100, 200, NULL, 0));
    fix_start(&f, 1);
    SIDLE(&f, 0);
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    tick(&f, 1000);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_reader_fallback_driving(f.r), 0);
    SACTIVE(&f, 0);
    tick(&f, 1100);
    ASSERT_STR_EQ(take(&f.tr), "");
    rec_at(&f, 0, 50);
    tick(&f, 1200);
    ASSERT_STR_EQ(take(&f.tr), "ACTIVE W49 W1100");
    ASSERT_EQ(tdm_reader_fallback_driving(f.r), 1);
    fix_close(&f);
}

/* Bad settings are refused; a generator alone refuses a strategy with a
 * fallback (only a reader runs one); the accessors take NULL. */
TDM_TEST(reader_fallback_refusals)
{
    fix f;
    tdm_wmgen *g = NULL;
    tdm_time_ms total = -1;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_ERR(tdm_wm_strategy_set_fallback(f.s, -1, 100, NULL, 0),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm_wm_strategy_set_fallback(f.s, 0, 0, NULL, 0), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_wm_strategy_set_fallback(NULL, 0, 1, NULL, 0),
               TDM_ERR_INVAL);
    ASSERT_OK(tdm_wm_strategy_set_fallback(f.s, 0, 100, NULL, 0));
    ASSERT_ERR(tdm_wmgen_new(f.s, f.clk, trace_cb, &f.tr, &g), TDM_ERR_INVAL);
    ASSERT_TRUE(g == NULL);
    ASSERT_EQ(tdm_reader_fallback_driving(NULL), -1);
    ASSERT_EQ(tdm_reader_fallback_time(NULL, &total), 0);
    ASSERT_EQ(total, 0);
    ASSERT_EQ(tdm_reader_data_watermark(NULL), TDM_TIME_MIN);
    fix_close(&f);
}

/* F3 under a lift: one split, bound 0, idle after 300 ms, fallback 100
 * ms behind the clock every 500 ms.  W99 at 200; the fallback lifts the
 * output to 400 at 500; the silent split is idle at 1000 (countdown from
 * 600), and the idle output is left alone.  A record 150, behind the
 * lift, makes the split active at the tick of 1200: the output is
 * active again at once (its watermark cannot rise until the data passes
 * the lift, 400) and the rise to 149 is told as the data watermark; the
 * fallback then lifts it to 1500 - 100 at 1500. */
TDM_TEST(reader_fallback_wakes_an_idle_lifted_output_with_data)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 300, NULL, 0));
    ASSERT_OK(tdm_wm_strategy_set_fallback(f.s, 100, 500, NULL, 0));
    fix_start(&f, 1);
    rec_at(&f, 0, 100);
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W99");
    tick(&f, 400);
    tick(&f, 500);
    ASSERT_STR_EQ(take(&f.tr), "W400");
    for (tdm_time_ms t = 600; t <= 1000; t += 200)
        tick(&f, t);
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    ASSERT_EQ(tdm_reader_fallback_driving(f.r), 0);
    rec_at(&f, 0, 150);
    tick(&f, 1200);
    ASSERT_STR_EQ(take(&f.tr), "ACTIVE D149");
    ASSERT_EQ(tdm_reader_fallback_driving(f.r), 1);
    ASSERT_EQ(tdm_reader_data_watermark(f.r), 149);
    tick(&f, 1400);
    tick(&f, 1500);
    ASSERT_STR_EQ(take(&f.tr), "W1400");
    fix_close(&f);
}
