/* SPDX-License-Identifier: MIT */
/* test_wm_valve.c - merging channels (tdm_valve, rules V1-V8, O3) and
 * inputs (tdm_combiner, rule O2), following StatusWatermarkValveTest,
 * AbstractStreamOperatorTest and the newest-revision behaviour (the
 * unconditional all-idle flush, the recompute on reactivation).
 *
 * Expected traces are derived by hand from the rules, as commented above
 * each test.  Trace: "W<t>" watermark, "IDLE", "ACTIVE".
 */
#include "harness.h"
#include "core.h"
#include "testhooks.h"

/* ---- Trace of emitted events ---- */

typedef struct trace {
    char buf[4096];
} trace;

static void trace_cb(void *opaque, const tdm_event *ev)
{
    trace *t = opaque;
    size_t n = strlen(t->buf);
    const char *sep = n ? " " : "";
    if (tdm_event_get_type(ev) == TDM_EVENT_WATERMARK) {
        tdm_time_ms v = tdm_event_time(ev);
        if (v == TDM_TIME_MAX)
            snprintf(t->buf + n, sizeof t->buf - n, "%sWMAX", sep);
        else if (v == TDM_TIME_MIN)
            snprintf(t->buf + n, sizeof t->buf - n, "%sWMIN", sep);
        else
            snprintf(t->buf + n, sizeof t->buf - n, "%sW%" PRId64, sep, v);
    } else if (tdm_event_get_type(ev) == TDM_EVENT_STATUS) {
        snprintf(t->buf + n, sizeof t->buf - n, "%s%s", sep,
                 tdm_event_is_idle(ev) ? "IDLE" : "ACTIVE");
    } else {
        snprintf(t->buf + n, sizeof t->buf - n, "%s?", sep);
    }
}

static const char *take(trace *t)
{
    static char last[4096];
    memcpy(last, t->buf, sizeof last);
    t->buf[0] = '\0';
    return last;
}

static tdm_valve *valve(int n, trace *t)
{
    tdm_valve *v = NULL;
    t->buf[0] = '\0';
    ASSERT_OK(tdm_valve_new(n, trace_cb, t, &v));
    return v;
}

#define WM(v, ch, ts) ASSERT_OK(tdm_valve_watermark((v), (ch), (ts)))
#define IDLE(v, ch) ASSERT_OK(tdm_valve_status((v), (ch), 1))
#define ACTIVE(v, ch) ASSERT_OK(tdm_valve_status((v), (ch), 0))

/* ---- Construction and errors ---- */

TDM_TEST(valve_rejects_bad_arguments)
{
    tdm_valve *v = NULL;
    ASSERT_ERR(tdm_valve_new(0, NULL, NULL, &v), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_valve_new(-2, NULL, NULL, &v), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_valve_new(1, NULL, NULL, NULL), TDM_ERR_INVAL);
    ASSERT_TRUE(v == NULL);
    ASSERT_OK(tdm_valve_new(2, NULL, NULL, &v)); /* no callback: fine */
    ASSERT_ERR(tdm_valve_watermark(v, 2, 5), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_valve_watermark(v, -1, 5), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_valve_status(v, 2, 1), TDM_ERR_CHANNEL);
    ASSERT_EQ(tdm_valve_channel_is_idle(v, 2), -1);
    ASSERT_EQ(tdm_valve_channel_watermark(v, 7), TDM_TIME_MIN);
    tdm_valve_destroy(v);
    tdm_valve_destroy(NULL);
}

TDM_TEST(valve_out_of_memory)
{
    for (long n = 1; n <= 2; n++) {
        tdm_valve *v = NULL;
        tdm__alloc_fail_after(n);
        tdm_err e = tdm_valve_new(3, NULL, NULL, &v);
        tdm__alloc_fail_after(0);
        ASSERT_ERR(e, TDM_ERR_NOMEM);
        ASSERT_TRUE(v == NULL);
    }
}

/* ---- V1-V3: the minimum ---- */

/* testSingleInputIncreasingWatermarks: 0 then 25 both go out; a repeat
 * and a lower value do not (testSingleInputDecreasingWatermarksYields-
 * NoOutput). */
TDM_TEST(valve_single_channel)
{
    trace t;
    tdm_valve *v = valve(1, &t);
    WM(v, 0, 0);
    WM(v, 0, 25);
    WM(v, 0, 25);
    WM(v, 0, 18);
    ASSERT_STR_EQ(take(&t), "W0 W25");
    ASSERT_EQ(tdm_valve_watermark_out(v), 25);
    ASSERT_EQ(tdm_valve_channel_watermark(v, 0), 25);
    tdm_valve_destroy(v);
}

/* V1: every channel starts at MIN, so nothing goes out until all three
 * have a watermark (testMultipleInputYieldsWatermarkOnlyWhenAll...). */
TDM_TEST(valve_waits_for_every_channel)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 0);
    WM(v, 1, 0);
    ASSERT_STR_EQ(take(&t), "");
    WM(v, 2, 0);
    ASSERT_STR_EQ(take(&t), "W0");
    tdm_valve_destroy(v);
}

/* V2: per-channel decreases are ignored (12 < 25, 8 < 10, 15 < 17); the
 * output stays 10. */
TDM_TEST(valve_decreasing_watermarks_ignored)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 25);
    WM(v, 1, 10);
    WM(v, 2, 17);
    WM(v, 0, 12);
    WM(v, 1, 8);
    WM(v, 2, 15);
    ASSERT_STR_EQ(take(&t), "W10");
    ASSERT_EQ(tdm_valve_channel_watermark(v, 1), 10);
    tdm_valve_destroy(v);
}

/* V3 bucket effect: 100 x3 -> 100; 5000 and 6000 wait for channel 2;
 * 200 -> 200; 7000 -> min(5000, 6000, 7000) = 5000. */
TDM_TEST(valve_lagging_channel_holds_back)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 100);
    WM(v, 1, 100);
    WM(v, 2, 100);
    WM(v, 0, 5000);
    WM(v, 1, 6000);
    ASSERT_STR_EQ(take(&t), "W100");
    WM(v, 2, 200);
    ASSERT_STR_EQ(take(&t), "W200");
    WM(v, 2, 7000);
    ASSERT_STR_EQ(take(&t), "W5000");
    tdm_valve_destroy(v);
}

/* O3: a union of two 2-channel streams is one 4-channel valve: the
 * minimum over all four (50, 60, 70, 100). */
TDM_TEST(valve_union_is_one_valve)
{
    trace t;
    tdm_valve *v = valve(4, &t);
    WM(v, 0, 100);
    WM(v, 1, 120);
    WM(v, 2, 50);
    ASSERT_STR_EQ(take(&t), "");
    WM(v, 3, 60);
    WM(v, 2, 70);
    WM(v, 3, 200);
    WM(v, 2, 300);
    ASSERT_STR_EQ(take(&t), "W50 W60 W70 W100");
    tdm_valve_destroy(v);
}

/* ---- V4: channels going idle ---- */

/* testMultipleInputWatermarkAdvancingAsChannelsIndividuallyBecomeIdle:
 * the channel at the minimum goes idle -> recompute: 10 -> 17 -> 25; the
 * last one idle: max 25 already out, so only IDLE. */
TDM_TEST(valve_channels_gradually_idle)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 25);
    WM(v, 1, 10);
    WM(v, 2, 17);
    IDLE(v, 1);
    IDLE(v, 2);
    ASSERT_STR_EQ(take(&t), "W10 W17 W25");
    IDLE(v, 0);
    ASSERT_STR_EQ(take(&t), "IDLE");
    ASSERT_EQ(tdm_valve_is_idle(v), 1);
    tdm_valve_destroy(v);
}

/* testMultipleInputWatermarkAdvancingWithPartiallyIdleChannels: channel 2
 * never spoke (MIN); idle excludes it -> 10 at once; then 15, 18. */
TDM_TEST(valve_silent_channel_idle_is_excluded)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 15);
    WM(v, 1, 10);
    ASSERT_STR_EQ(take(&t), "");
    IDLE(v, 2);
    ASSERT_STR_EQ(take(&t), "W10");
    WM(v, 1, 18);
    WM(v, 0, 20);
    ASSERT_STR_EQ(take(&t), "W15 W18");
    ASSERT_EQ(tdm_valve_channel_is_idle(v, 2), 1);
    ASSERT_EQ(tdm_valve_channel_is_idle(v, 0), 0);
    tdm_valve_destroy(v);
}

/* 50/30, ch2 silent: nothing; ch2 idle -> 30; ch1 idle -> 50; ch0 idle:
 * all idle, max over all 50 already out -> IDLE only. */
TDM_TEST(valve_idle_excluded_then_all_idle)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 50);
    WM(v, 1, 30);
    IDLE(v, 2);
    IDLE(v, 1);
    IDLE(v, 0);
    ASSERT_STR_EQ(take(&t), "W30 W50 IDLE");
    tdm_valve_destroy(v);
}

/* Newest V4 (testMultipleInputFlushMaxWatermarkOnceAllInputsBecomeIdle-
 * WithUnalignedLastChannel): 100/50/70 -> 50; ch1 idle -> 70; ch1 back
 * unaligned, 60; ch0, ch2 idle -> nothing; ch1 (60 != 70) idle last ->
 * the flush is unconditional: max 100, then IDLE. */
TDM_TEST(valve_all_idle_flushes_max_unconditionally)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 100);
    WM(v, 1, 50);
    WM(v, 2, 70);
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "W50 W70");
    ACTIVE(v, 1);
    WM(v, 1, 60);
    IDLE(v, 0);
    IDLE(v, 2);
    ASSERT_STR_EQ(take(&t), "");
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "W100 IDLE");
    tdm_valve_destroy(v);
}

/* V2/V6: while a channel (or the valve) is idle its watermarks are
 * ignored - they are not even recorded. */
TDM_TEST(valve_ignores_watermarks_on_idle_channels)
{
    trace t;
    tdm_valve *v = valve(2, &t);
    WM(v, 0, 10);
    WM(v, 1, 20);
    IDLE(v, 1);
    WM(v, 1, 500);
    ASSERT_EQ(tdm_valve_channel_watermark(v, 1), 20);
    IDLE(v, 0);
    WM(v, 0, 700);
    ASSERT_EQ(tdm_valve_channel_watermark(v, 0), 10);
    ASSERT_STR_EQ(take(&t), "W10 W20 IDLE");
    tdm_valve_destroy(v);
}

/* ---- V5: channels coming back ---- */

/* 100/50 -> 50; ch1 idle -> 100; ch0 200 -> 200; ch1 back at 50 is
 * unaligned: ch0 300 -> 300 at once; ch1 250 < 300 stays out; ch1 350
 * realigns (min 300 = output: nothing); ch0 400 -> 350. */
TDM_TEST(valve_returning_channel_does_not_hold_back)
{
    trace t;
    tdm_valve *v = valve(2, &t);
    WM(v, 0, 100);
    WM(v, 1, 50);
    IDLE(v, 1);
    WM(v, 0, 200);
    ACTIVE(v, 1);
    WM(v, 0, 300);
    WM(v, 1, 250);
    WM(v, 1, 350);
    ASSERT_STR_EQ(take(&t), "W50 W100 W200 W300");
    WM(v, 0, 400);
    ASSERT_STR_EQ(take(&t), "W350");
    tdm_valve_destroy(v);
}

/* V2/V5: a returning channel that advances but stays below the output
 * remains unaligned.  100/50 -> 50; ch1 idle -> 100; ch1 back at 50;
 * ch1 80 (< 100: still out of the minimum); ch0 200 -> 200 at once, not
 * held at 80; ch1 250 (>= 200) joins; ch0 300 -> 250. */
TDM_TEST(valve_unaligned_channel_below_output_stays_out)
{
    trace t;
    tdm_valve *v = valve(2, &t);
    WM(v, 0, 100);
    WM(v, 1, 50);
    IDLE(v, 1);
    ACTIVE(v, 1);
    WM(v, 1, 80);
    ASSERT_STR_EQ(take(&t), "W50 W100");
    WM(v, 0, 200);
    ASSERT_STR_EQ(take(&t), "W200");
    WM(v, 1, 250);
    WM(v, 0, 300);
    ASSERT_STR_EQ(take(&t), "W250");
    tdm_valve_destroy(v);
}

/* testNoOutputWhenAllActiveChannelsAreUnaligned: ch2 comes back at MIN
 * (unaligned); ch0 and ch1 idle leave only the unaligned ch2: no minimum
 * to take, so no watermark (no MAX) and no status (ch2 is active). */
TDM_TEST(valve_all_active_unaligned_no_output)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 10);
    WM(v, 1, 7);
    IDLE(v, 2);
    ACTIVE(v, 2);
    IDLE(v, 0);
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "W7");
    ASSERT_EQ(tdm_valve_is_idle(v), 0);
    tdm_valve_destroy(v);
}

/* Newest V5 (testWatermarkAdvancesWhenReactivatedChannelBecomesOnly-
 * AlignedChannel): 10/7, ch2 idle -> 7; ch2 back unaligned; ch0, ch1
 * idle; ch0 back at 10 >= 7 is aligned and the only aligned channel: the
 * recompute emits 10 at once; then ch0 12 -> 12. */
TDM_TEST(valve_reactivated_aligned_channel_recomputes)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 10);
    WM(v, 1, 7);
    IDLE(v, 2);
    ACTIVE(v, 2);
    IDLE(v, 0);
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "W7");
    ACTIVE(v, 0);
    ASSERT_STR_EQ(take(&t), "W10");
    IDLE(v, 2);
    WM(v, 0, 12);
    ASSERT_STR_EQ(take(&t), "W12");
    tdm_valve_destroy(v);
}

/* testUnalignedActiveChannelBecomesIdle: 7/10 -> 7; ch0 idle -> 10; ch0
 * back with 9 (< 10: unaligned) -> nothing; idle again -> nothing. */
TDM_TEST(valve_unaligned_channel_idle_again)
{
    trace t;
    tdm_valve *v = valve(2, &t);
    WM(v, 0, 7);
    WM(v, 1, 10);
    IDLE(v, 0);
    ACTIVE(v, 0);
    WM(v, 0, 9);
    IDLE(v, 0);
    ASSERT_STR_EQ(take(&t), "W7 W10");
    tdm_valve_destroy(v);
}

/* ---- V6: statuses ---- */

/* testSingleInputWatermarkStatusToggling: channels start active, so
 * ACTIVE emits nothing; IDLE once; repeated IDLE nothing; ACTIVE. */
TDM_TEST(valve_single_status_toggling)
{
    trace t;
    tdm_valve *v = valve(1, &t);
    ACTIVE(v, 0);
    ASSERT_STR_EQ(take(&t), "");
    IDLE(v, 0);
    IDLE(v, 0);
    ASSERT_STR_EQ(take(&t), "IDLE");
    ACTIVE(v, 0);
    ASSERT_STR_EQ(take(&t), "ACTIVE");
    tdm_valve_destroy(v);
}

/* testMultipleInputWatermarkStatusToggling: IDLE only when the last
 * channel goes idle; ACTIVE only for the first one back. */
TDM_TEST(valve_multi_status_toggling)
{
    trace t;
    tdm_valve *v = valve(2, &t);
    ACTIVE(v, 0);
    ACTIVE(v, 1);
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "");
    IDLE(v, 0);
    IDLE(v, 0);
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "IDLE");
    ACTIVE(v, 1);
    ASSERT_STR_EQ(take(&t), "ACTIVE");
    ACTIVE(v, 0);
    ASSERT_STR_EQ(take(&t), "");
    tdm_valve_destroy(v);
}

/* ---- End of input ---- */

/* A silent channel keeps the output at MIN; end makes every channel MAX
 * at once: MAX goes out exactly once. */
TDM_TEST(valve_silent_channel_stalls_until_end)
{
    trace t;
    tdm_valve *v = valve(2, &t);
    WM(v, 0, 1000);
    WM(v, 0, 2000);
    ASSERT_STR_EQ(take(&t), "");
    ASSERT_OK(tdm_valve_end(v));
    ASSERT_STR_EQ(take(&t), "WMAX");
    ASSERT_OK(tdm_valve_end(v));
    WM(v, 1, 5);
    ASSERT_STR_EQ(take(&t), "");
    tdm_valve_destroy(v);
}

/* An idle valve at end: ACTIVE first, then MAX, no intermediate value
 * (channels hold 10 and 20; visiting them one by one would pass 20). */
TDM_TEST(valve_end_from_idle_is_atomic)
{
    trace t;
    tdm_valve *v = valve(2, &t);
    WM(v, 0, 10);
    WM(v, 1, 20);
    IDLE(v, 0);
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "W10 W20 IDLE");
    ASSERT_OK(tdm_valve_end(v));
    ASSERT_STR_EQ(take(&t), "ACTIVE WMAX");
    ASSERT_EQ(tdm_valve_is_idle(v), 0);
    ASSERT_EQ(tdm_valve_watermark_out(v), TDM_TIME_MAX);
    tdm_valve_destroy(v);
}

/* ---- The timeline in valve.c's header comment, replayed ---- */

TDM_TEST(valve_design_comment_timeline)
{
    trace t;
    tdm_valve *v = valve(3, &t);
    WM(v, 0, 10);
    WM(v, 1, 20);
    ASSERT_STR_EQ(take(&t), "");
    WM(v, 2, 25);
    ASSERT_STR_EQ(take(&t), "W10");
    WM(v, 0, 30);
    ASSERT_STR_EQ(take(&t), "W20");
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "W25");
    IDLE(v, 0);
    ACTIVE(v, 1);
    ACTIVE(v, 0);
    WM(v, 1, 35);
    ASSERT_STR_EQ(take(&t), "");
    IDLE(v, 2);
    ASSERT_STR_EQ(take(&t), "W30");
    IDLE(v, 1);
    ASSERT_STR_EQ(take(&t), "");
    IDLE(v, 0);
    ASSERT_STR_EQ(take(&t), "W35 IDLE");
    ACTIVE(v, 2);
    ASSERT_STR_EQ(take(&t), "ACTIVE");
    ASSERT_EQ(tdm_valve_watermark_out(v), 35);
    tdm_valve_destroy(v);
}

/* ---- Generators feeding a valve ---- */

typedef struct chan_link {
    tdm_valve *v;
    int ch;
} chan_link;

static void to_valve(void *opaque, const tdm_event *ev)
{
    chan_link *l = opaque;
    if (tdm_event_get_type(ev) == TDM_EVENT_WATERMARK)
        ASSERT_OK(tdm_valve_watermark(l->v, l->ch, tdm_event_time(ev)));
    else
        ASSERT_OK(tdm_valve_status(l->v, l->ch, tdm_event_is_idle(ev)));
}

/* Vector wm-idleness-all-channels-idle: two bounded(0) generators with
 * timeout 1000.  Records 1000 / 500 -> 499 at 200.  Both countdowns start
 * at 400, both idle at 1600 (the jump 400 -> 1400 is one check, and 1000
 * is not > 1000): the valve flushes max 999, then IDLE.  A record 2000 on
 * channel 0 -> at 1800 ACTIVE (channel 0 returns at 999 >= 999: aligned)
 * then 1999. */
TDM_TEST(generators_into_valve_all_idle)
{
    trace t;
    tdm_valve *v = valve(2, &t);
    tdm_clock *clk = NULL;
    tdm_wm_strategy *s = NULL;
    tdm_wmgen *g[2] = {NULL, NULL};
    chan_link link[2] = {{v, 0}, {v, 1}};
    tdm_record *rec = NULL;
    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    ASSERT_OK(tdm_record_new(&rec));
    ASSERT_OK(tdm_wm_strategy_new(TDM_WM_BOUNDED, 0, &s, NULL, 0));
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(s, 1000, NULL, 0));
    for (int i = 0; i < 2; i++)
        ASSERT_OK(tdm_wmgen_new(s, clk, to_valve, &link[i], &g[i]));
    tdm_record_set(rec, "k", 1, 1000, 1);
    ASSERT_OK(tdm_wmgen_on_event(g[0], rec));
    tdm_record_set(rec, "k", 1, 500, 1);
    ASSERT_OK(tdm_wmgen_on_event(g[1], rec));
    const tdm_time_ms steps[] = {200, 400, 1400, 1600};
    const char *want[] = {"W499", "", "", "W999 IDLE"};
    for (int i = 0; i < 4; i++) {
        ASSERT_OK(tdm_clock_set(clk, steps[i]));
        ASSERT_OK(tdm_wmgen_advance(g[0]));
        ASSERT_OK(tdm_wmgen_advance(g[1]));
        ASSERT_STR_EQ(take(&t), want[i]);
    }
    tdm_record_set(rec, "k", 1, 2000, 1);
    ASSERT_OK(tdm_wmgen_on_event(g[0], rec));
    ASSERT_OK(tdm_clock_set(clk, 1800));
    ASSERT_OK(tdm_wmgen_advance(g[0]));
    ASSERT_OK(tdm_wmgen_advance(g[1]));
    ASSERT_STR_EQ(take(&t), "ACTIVE W1999");
    for (int i = 0; i < 2; i++)
        tdm_wmgen_destroy(g[i]);
    tdm_wm_strategy_destroy(s);
    tdm_record_destroy(rec);
    tdm_clock_destroy(clk);
    tdm_valve_destroy(v);
}

/* ---- The input combiner (O2) ---- */

static tdm_combiner *combiner(int n, trace *t)
{
    tdm_combiner *c = NULL;
    t->buf[0] = '\0';
    ASSERT_OK(tdm_combiner_new(n, trace_cb, t, &c));
    return c;
}

TDM_TEST(combiner_rejects_bad_arguments)
{
    tdm_combiner *c = NULL;
    ASSERT_ERR(tdm_combiner_new(0, NULL, NULL, &c), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_combiner_new(2, NULL, NULL, NULL), TDM_ERR_INVAL);
    ASSERT_OK(tdm_combiner_new(2, NULL, NULL, &c));
    ASSERT_ERR(tdm_combiner_watermark(c, 2, 1), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_combiner_status(c, -1, 1), TDM_ERR_CHANNEL);
    tdm_combiner_destroy(c);
    tdm_combiner_destroy(NULL);
    for (long n = 1; n <= 2; n++) {
        tdm__alloc_fail_after(n);
        tdm_err e = tdm_combiner_new(2, NULL, NULL, &c);
        tdm__alloc_fail_after(0);
        ASSERT_ERR(e, TDM_ERR_NOMEM);
    }
}

/* Minimum over both inputs, only when it rises: 5 / MIN -> nothing;
 * 3 -> 3; 4 -> 4 (min(5, 4)); a lower 2 on input 1 is kept at 4. */
TDM_TEST(combiner_min_over_inputs)
{
    trace t;
    tdm_combiner *c = combiner(2, &t);
    ASSERT_OK(tdm_combiner_watermark(c, 0, 5));
    ASSERT_STR_EQ(take(&t), "");
    ASSERT_OK(tdm_combiner_watermark(c, 1, 3));
    ASSERT_OK(tdm_combiner_watermark(c, 1, 4));
    ASSERT_OK(tdm_combiner_watermark(c, 1, 2));
    ASSERT_STR_EQ(take(&t), "W3 W4");
    ASSERT_EQ(tdm_combiner_watermark_out(c), 4);
    tdm_combiner_destroy(c);
}

/* AbstractStreamOperatorTest.testIdleWatermarkHandling: input 1 idle ->
 * input 0's 1 and 3 flow; input 1 back active (still MIN) -> no
 * aligned notion: it holds input 0's 4 (never pulls back the 3). */
TDM_TEST(combiner_returning_input_holds_progress)
{
    trace t;
    tdm_combiner *c = combiner(2, &t);
    ASSERT_OK(tdm_combiner_status(c, 1, 1));
    ASSERT_OK(tdm_combiner_watermark(c, 0, 1));
    ASSERT_OK(tdm_combiner_watermark(c, 0, 3));
    ASSERT_STR_EQ(take(&t), "W1 W3");
    ASSERT_OK(tdm_combiner_status(c, 1, 0));
    ASSERT_OK(tdm_combiner_watermark(c, 0, 4));
    ASSERT_STR_EQ(take(&t), "");
    ASSERT_EQ(tdm_combiner_watermark_out(c), 3);
    ASSERT_OK(tdm_combiner_watermark(c, 1, 10));
    ASSERT_STR_EQ(take(&t), "W4");
    tdm_combiner_destroy(c);
}

/* Vector ext-join-both-sides-idle-master: 5 / 3 -> 3; left idle: min over
 * right still 3; right idle: all idle -> flush max 5, then IDLE.  Right
 * back active: ACTIVE (its 3 is below 5: nothing more). */
TDM_TEST(combiner_all_idle_flushes_max)
{
    trace t;
    tdm_combiner *c = combiner(2, &t);
    ASSERT_OK(tdm_combiner_watermark(c, 0, 5));
    ASSERT_OK(tdm_combiner_watermark(c, 1, 3));
    ASSERT_OK(tdm_combiner_status(c, 0, 1));
    ASSERT_STR_EQ(take(&t), "W3");
    ASSERT_OK(tdm_combiner_status(c, 1, 1));
    ASSERT_STR_EQ(take(&t), "W5 IDLE");
    ASSERT_OK(tdm_combiner_status(c, 1, 1));
    ASSERT_STR_EQ(take(&t), "");
    ASSERT_OK(tdm_combiner_status(c, 1, 0));
    ASSERT_STR_EQ(take(&t), "ACTIVE");
    tdm_combiner_destroy(c);
}

/* A watermark on an input makes it active; if that ends operator-level
 * idleness, ACTIVE goes out before the new watermark. */
TDM_TEST(combiner_watermark_reactivates_input)
{
    trace t;
    tdm_combiner *c = combiner(2, &t);
    ASSERT_OK(tdm_combiner_status(c, 0, 1));
    ASSERT_OK(tdm_combiner_status(c, 1, 1));
    ASSERT_STR_EQ(take(&t), "IDLE"); /* max over MIN, MIN: nothing */
    ASSERT_OK(tdm_combiner_watermark(c, 1, 8));
    ASSERT_STR_EQ(take(&t), "ACTIVE W8");
    tdm_combiner_destroy(c);
}
