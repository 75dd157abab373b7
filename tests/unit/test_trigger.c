/* SPDX-License-Identifier: MIT */
/* test_trigger.c - window triggers (rulebook R6) driven through the window
 * operator: event time, processing time, count, continuous event time
 * (epoch alignment, several firings per watermark, the global window at
 * end of input), purging, never, user triggers with their context, and
 * bad configuration.  Expected outputs are derived by hand in comments. */
#include "harness.h"
#include "core.h"

/* ---- Output capture ---- */

typedef struct out_ev {
    tdm_event_type type;
    char key[16];
    int has_window;
    tdm_time_ms start, end, time;
    double value;
    tdm_pane_timing timing;
    int64_t pane;
    int update;
} out_ev;

typedef struct sink {
    out_ev ev[64];
    int n;
} sink;

static void collect(void *opaque, const tdm_event *ev)
{
    sink *s = opaque;
    if (s->n >= 64)
        return;
    out_ev *o = &s->ev[s->n++];
    memset(o, 0, sizeof *o);
    o->type = tdm_event_get_type(ev);
    o->time = tdm_event_time(ev);
    if (o->type == TDM_EVENT_RESULT) {
        size_t len;
        const char *k = tdm_event_key(ev, &len);
        memcpy(o->key, k, len < 15 ? len : 15);
        o->has_window = tdm_event_window(ev, &o->start, &o->end);
        o->value = tdm_event_value(ev);
        o->timing = tdm_event_pane_timing(ev);
        o->pane = tdm_event_pane_index(ev);
        o->update = tdm_event_is_update(ev);
    }
}

/* Number of RESULT events captured. */
static int n_results(const sink *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += s->ev[i].type == TDM_EVENT_RESULT;
    return n;
}

/* The i-th RESULT event. */
static const out_ev *result(const sink *s, int i)
{
    for (int j = 0; j < s->n; j++)
        if (s->ev[j].type == TDM_EVENT_RESULT && i-- == 0)
            return &s->ev[j];
    tdm_test_fail(__FILE__, __LINE__, "no result %d", i);
}

static tdm_winop *mk(tdm_assigner *a, tdm_trigger *t, tdm_agg_kind kind,
                     tdm_clock *clk, sink *s)
{
    tdm_aggregate *agg;
    tdm_winop *op;
    char buf[128];
    ASSERT_OK(tdm_aggregate_new(kind, &agg));
    ASSERT_OK(
        tdm_winop_new(a, t, agg, 1, clk, collect, s, &op, buf, sizeof buf));
    return op;
}

static tdm_assigner *tumbling(tdm_time_ms size)
{
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_tumbling(size, 0, &a, NULL, 0));
    return a;
}

static void push(tdm_winop *op, const char *key, tdm_time_ms ts, double v)
{
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    tdm_record_set(r, key, strlen(key), ts, v);
    ASSERT_OK(tdm_winop_push(op, 0, r));
    tdm_record_destroy(r);
}

/* ---- Event time ---- */

/* R3.2: [0,2000) fires at watermark 1999, not 1998; the result precedes
 * the watermark (R3.1). */
TDM_TEST(event_time_fires_at_end_minus_one)
{
    sink s = {.n = 0};
    tdm_trigger *t;
    ASSERT_OK(tdm_trigger_new_event_time(&t));
    tdm_winop *op = mk(tumbling(2000), t, TDM_AGG_SUM, NULL, &s);
    push(op, "a", 0, 1);
    push(op, "a", 1999, 2);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1998));
    ASSERT_EQ(n_results(&s), 0);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1999));
    ASSERT_EQ(s.n, 3); /* wm 1998, result, wm 1999 */
    ASSERT_EQ(s.ev[0].type, TDM_EVENT_WATERMARK);
    ASSERT_EQ(s.ev[1].type, TDM_EVENT_RESULT);
    ASSERT_EQ(s.ev[1].start, 0);
    ASSERT_EQ(s.ev[1].end, 2000);
    ASSERT_EQ(s.ev[1].time, 1999);
    ASSERT_DBL_EQ(s.ev[1].value, 3);
    ASSERT_EQ(s.ev[1].timing, TDM_PANE_ON_TIME);
    ASSERT_EQ(s.ev[1].pane, 0);
    ASSERT_EQ(s.ev[1].update, 0);
    ASSERT_EQ(s.ev[2].type, TDM_EVENT_WATERMARK);
    ASSERT_EQ(s.ev[2].time, 1999);
    /* Lateness 0: the same timer cleaned the window up. */
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    tdm_winop_destroy(op);
}

/* R4.5: with lateness each accepted late record fires at once with the
 * accumulated contents: ON_TIME 1, then LATE 1+5 = 6 (pane 1, update),
 * then LATE 6+7 = 13 (pane 2). */
TDM_TEST(event_time_late_firings_accumulate)
{
    sink s = {.n = 0};
    tdm_winop *op = mk(tumbling(1000), NULL, TDM_AGG_SUM, NULL, &s);
    ASSERT_OK(tdm_winop_set_allowed_lateness(op, 500, NULL, 0));
    push(op, "a", 10, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1200));
    push(op, "a", 20, 5);
    push(op, "a", 30, 7);
    ASSERT_EQ(n_results(&s), 3);
    ASSERT_DBL_EQ(result(&s, 0)->value, 1);
    ASSERT_EQ(result(&s, 0)->timing, TDM_PANE_ON_TIME);
    ASSERT_DBL_EQ(result(&s, 1)->value, 6);
    ASSERT_EQ(result(&s, 1)->timing, TDM_PANE_LATE);
    ASSERT_EQ(result(&s, 1)->pane, 1);
    ASSERT_EQ(result(&s, 1)->update, 1);
    ASSERT_DBL_EQ(result(&s, 2)->value, 13);
    ASSERT_EQ(result(&s, 2)->pane, 2);
    tdm_winop_destroy(op);
}

/* The event-time trigger on the global window fires once, at end. */
TDM_TEST(event_time_on_global_fires_only_at_end)
{
    sink s = {.n = 0};
    tdm_assigner *a;
    tdm_trigger *t;
    ASSERT_OK(tdm_assigner_new_global(&a));
    ASSERT_OK(tdm_trigger_new_event_time(&t));
    tdm_winop *op = mk(a, t, TDM_AGG_COUNT, NULL, &s);
    push(op, "a", 5, 1);
    push(op, "a", 1000000, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, TDM_TIME_MAX - 1));
    ASSERT_EQ(n_results(&s), 0);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_EQ(result(&s, 0)->has_window, 0);
    ASSERT_EQ(result(&s, 0)->time, TDM_TIME_MAX);
    ASSERT_DBL_EQ(result(&s, 0)->value, 2);
    ASSERT_EQ(result(&s, 0)->timing, TDM_PANE_ON_TIME);
    /* Global windows are never cleaned up (R1.6). */
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    tdm_winop_destroy(op);
}

/* ---- Count ---- */

/* R6.3: count(2) on tumbling 1000: fires at the 2nd record (count 2, no
 * purge), then the 4th (count 4); the 5th record's leftovers are dropped
 * silently at cleanup and at end of input. */
TDM_TEST(count_trigger_never_fires_on_time)
{
    sink s = {.n = 0};
    tdm_trigger *t;
    char buf[64];
    ASSERT_ERR(tdm_trigger_new_count(0, &t, buf, sizeof buf), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "count") != NULL);
    ASSERT_OK(tdm_trigger_new_count(2, &t, NULL, 0));
    tdm_winop *op = mk(tumbling(1000), t, TDM_AGG_COUNT, NULL, &s);
    for (int i = 0; i < 5; i++)
        push(op, "k", 100 + i, 1);
    ASSERT_EQ(n_results(&s), 2);
    ASSERT_DBL_EQ(result(&s, 0)->value, 2);
    ASSERT_DBL_EQ(result(&s, 1)->value, 4);
    ASSERT_EQ(result(&s, 0)->timing, TDM_PANE_EARLY);
    ASSERT_EQ(result(&s, 1)->update, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 999));
    ASSERT_EQ(n_results(&s), 2);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(n_results(&s), 2);
    tdm_winop_destroy(op);
}

/* ---- Continuous event time ---- */

/* R6.4: intervals are aligned to the epoch, not to the window: window
 * [500, 10500) (offset 500) with interval 3000 and a record at 600 fires
 * first at 600 - 600 % 3000 + 3000 = 3000, not at 3500.  One watermark
 * 20000 then fires 6000, 9000 and maxTimestamp 10499, in that order,
 * all EARLY except the last (ON_TIME). */
TDM_TEST(continuous_epoch_aligned_and_several_per_watermark)
{
    sink s = {.n = 0};
    tdm_assigner *a;
    tdm_trigger *t;
    char buf[64];
    ASSERT_ERR(tdm_trigger_new_continuous_event_time(0, &t, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "interval_ms") != NULL);
    ASSERT_OK(tdm_assigner_new_tumbling(10000, 500, &a, NULL, 0));
    ASSERT_OK(tdm_trigger_new_continuous_event_time(3000, &t, NULL, 0));
    tdm_winop *op = mk(a, t, TDM_AGG_SUM, NULL, &s);
    push(op, "k", 600, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 2999));
    ASSERT_EQ(n_results(&s), 0);
    ASSERT_OK(tdm_winop_watermark(op, 0, 3000));
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_EQ(result(&s, 0)->time, 10499);
    ASSERT_EQ(result(&s, 0)->timing, TDM_PANE_EARLY);
    push(op, "k", 4000, 2);
    s.n = 0;
    ASSERT_OK(tdm_winop_watermark(op, 0, 20000));
    ASSERT_EQ(s.n, 4);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(s.ev[i].type, TDM_EVENT_RESULT);
        ASSERT_DBL_EQ(s.ev[i].value, 3);
        ASSERT_EQ(s.ev[i].pane, i + 1);
    }
    /* All three fire under watermark 20000 >= 10499, so the first of them
     * is the ON_TIME pane and the others LATE. */
    ASSERT_EQ(s.ev[0].timing, TDM_PANE_ON_TIME);
    ASSERT_EQ(s.ev[2].timing, TDM_PANE_LATE);
    ASSERT_EQ(s.ev[3].type, TDM_EVENT_WATERMARK);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    tdm_winop_destroy(op);
}

/* Negative timestamps: -100 % 3000 is -100 in C and Java, so the fire
 * time is min(-100 + 100 + 3000, maxTimestamp -1) = -1: the same timer
 * as the final one, which fires exactly once at watermark -1. */
TDM_TEST(continuous_fire_time_capped_at_max_timestamp)
{
    sink s = {.n = 0};
    tdm_trigger *t;
    ASSERT_OK(tdm_trigger_new_continuous_event_time(3000, &t, NULL, 0));
    tdm_winop *op = mk(tumbling(10000), t, TDM_AGG_COUNT, NULL, &s);
    push(op, "k", -100, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, -2));
    ASSERT_EQ(n_results(&s), 0);
    ASSERT_OK(tdm_winop_watermark(op, 0, -1));
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_EQ(result(&s, 0)->start, -10000);
    ASSERT_EQ(result(&s, 0)->end, 0);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(n_results(&s), 1);
    tdm_winop_destroy(op);
}

/* R6.4 hazard, tidemark's decision: continuous(1000) on the global window
 * fires at 1000 and 2000 for watermark 2500, then exactly once at end of
 * input (timestamp MAX) instead of walking to MAX. */
TDM_TEST(continuous_on_global_fires_once_at_end)
{
    sink s = {.n = 0};
    tdm_assigner *a;
    tdm_trigger *t;
    ASSERT_OK(tdm_assigner_new_global(&a));
    ASSERT_OK(tdm_trigger_new_continuous_event_time(1000, &t, NULL, 0));
    tdm_winop *op = mk(a, t, TDM_AGG_COUNT, NULL, &s);
    push(op, "k", 500, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 2500));
    ASSERT_EQ(n_results(&s), 2);
    push(op, "k", 2600, 1);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(n_results(&s), 3);
    ASSERT_DBL_EQ(result(&s, 2)->value, 2);
    ASSERT_EQ(result(&s, 2)->time, TDM_TIME_MAX);
    ASSERT_EQ(result(&s, 2)->timing, TDM_PANE_ON_TIME);
    ASSERT_EQ(s.ev[s.n - 1].type, TDM_EVENT_WATERMARK);
    ASSERT_EQ(s.ev[s.n - 1].time, TDM_TIME_MAX);
    tdm_winop_destroy(op);
}

/* Regression (fuzz finding, 2026-12-02): continuous(1000) on the global
 * window with a record at -5000 and a watermark of 10^15 walked one firing
 * per second of the whole range (10^12 firings: a hang).  The first fire
 * time is -5000 - (-5000 % 1000) + 1000 = -4000; the watermark is more
 * than 1024 intervals ahead, so tidemark fires once and re-arms at the
 * first point after it, 10^15 + 1000: watermark 10^15 + 999 fires nothing,
 * 10^15 + 1000 fires once more. */
TDM_TEST(continuous_on_global_far_watermark_fires_once)
{
    sink s = {.n = 0};
    tdm_assigner *a;
    tdm_trigger *t;
    ASSERT_OK(tdm_assigner_new_global(&a));
    ASSERT_OK(tdm_trigger_new_continuous_event_time(1000, &t, NULL, 0));
    tdm_winop *op = mk(a, t, TDM_AGG_COUNT, NULL, &s);
    push(op, "k", -5000, 1);
    const tdm_time_ms w = 1000000000000000LL;
    ASSERT_OK(tdm_winop_watermark(op, 0, w));
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, w + 999));
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, w + 1000));
    ASSERT_EQ(n_results(&s), 2);
    tdm_winop_destroy(op);
}

/* A continuous event-time trigger on processing-time windows would walk
 * event-time fire points toward a processing-time end: refused. */
TDM_TEST(continuous_on_processing_time_windows_is_refused)
{
    tdm_assigner *a;
    tdm_trigger *t;
    tdm_aggregate *agg;
    tdm_clock *clk;
    tdm_winop *op = NULL;
    char buf[160] = "";
    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    ASSERT_OK(tdm_assigner_new_tumbling(1000, 0, &a, NULL, 0));
    ASSERT_OK(tdm_assigner_set_processing_time(a));
    ASSERT_OK(tdm_trigger_new_continuous_event_time(100, &t, NULL, 0));
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_ERR(
        tdm_winop_new(a, t, agg, 1, clk, collect, NULL, &op, buf, sizeof buf),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "continuous_event_time") != NULL);
    ASSERT_TRUE(op == NULL);
    tdm_clock_destroy(clk);
}

/* ---- Purging ---- */

/* R2.5/R6.5: Purging(continuous 3000) on [0,10000): record 500 fires at
 * 3000 and is purged; the 6000 firing finds an empty pane and emits
 * nothing; record 7000 fires at 9000 (value 1, purged); the final firing
 * at 9999 is empty again. */
TDM_TEST(purging_continuous_skips_empty_panes)
{
    sink s = {.n = 0};
    tdm_trigger *inner, *t;
    ASSERT_OK(tdm_trigger_new_continuous_event_time(3000, &inner, NULL, 0));
    ASSERT_OK(tdm_trigger_new_purging(inner, &t));
    tdm_winop *op = mk(tumbling(10000), t, TDM_AGG_COUNT, NULL, &s);
    push(op, "k", 500, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 3000));
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 6000));
    ASSERT_EQ(n_results(&s), 1);
    push(op, "k", 7000, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 9999));
    ASSERT_EQ(n_results(&s), 2);
    ASSERT_DBL_EQ(result(&s, 1)->value, 1);
    /* Purged firings are not updates; pane indexes count emissions. */
    ASSERT_EQ(result(&s, 1)->update, 0);
    ASSERT_EQ(result(&s, 1)->pane, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    tdm_winop_destroy(op);
    /* Purging takes ownership of its inner trigger even on failure. */
    ASSERT_OK(tdm_trigger_new_never(&inner));
    ASSERT_ERR(tdm_trigger_new_purging(inner, NULL), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_trigger_new_purging(NULL, &t), TDM_ERR_INVAL);
}

/* The global window's default trigger never fires, not even at end. */
TDM_TEST(never_trigger_keeps_global_contents)
{
    sink s = {.n = 0};
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_global(&a));
    tdm_winop *op = mk(a, NULL, TDM_AGG_COUNT, NULL, &s);
    push(op, "k", 1, 1);
    push(op, "j", 2, 1);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(n_results(&s), 0);
    ASSERT_EQ(tdm_winop_live_windows(op), 2);
    tdm_winop_destroy(op);
}

/* ---- Processing time ---- */

/* R6.2/R4.1: processing-time tumbling 1000: a record at proctime 100
 * fires when the clock reaches 999 (end - 1), and cleanup at the same
 * instant removes the window.  A later record at 1500 waits for 1999;
 * end of input does not fire it (R7.3). */
TDM_TEST(processing_time_trigger_fires_at_end_minus_one)
{
    sink s = {.n = 0};
    tdm_clock *clk;
    tdm_assigner *a;
    ASSERT_OK(tdm_clock_new_manual(100, &clk));
    ASSERT_OK(tdm_assigner_new_tumbling(1000, 0, &a, NULL, 0));
    ASSERT_OK(tdm_assigner_set_processing_time(a));
    tdm_winop *op = mk(a, NULL, TDM_AGG_COUNT, clk, &s);
    push(op, "k", TDM_TIME_MIN, 1); /* no timestamp needed */
    ASSERT_OK(tdm_clock_set(clk, 998));
    ASSERT_OK(tdm_winop_advance(op));
    ASSERT_EQ(n_results(&s), 0);
    ASSERT_OK(tdm_clock_set(clk, 999));
    ASSERT_OK(tdm_winop_advance(op));
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_EQ(result(&s, 0)->start, 0);
    ASSERT_EQ(result(&s, 0)->time, 999);
    ASSERT_EQ(result(&s, 0)->timing, TDM_PANE_ON_TIME);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_OK(tdm_clock_set(clk, 1500));
    push(op, "k", 5, 1);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_OK(tdm_clock_set(clk, 5000));
    ASSERT_OK(tdm_winop_advance(op));
    ASSERT_EQ(n_results(&s), 1);
    tdm_winop_destroy(op);
    tdm_clock_destroy(clk);
}

/* ---- User triggers ---- */

typedef struct my_trig {
    int clears, merges, destroyed;
    tdm_time_ms seen_start, seen_end, seen_max, seen_wm;
} my_trig;

/* Fires on every 2nd record of a window (state: a counter) and registers
 * an event timer at maxTimestamp - 100 that fires and purges. */
static tdm_trigger_result my_on_element(void *ud, tdm_trigger_ctx *ctx,
                                        const tdm_record *rec)
{
    my_trig *m = ud;
    (void)rec;
    int64_t *n = tdm_trigger_ctx_state(ctx);
    m->seen_start = tdm_trigger_ctx_window_start(ctx);
    m->seen_end = tdm_trigger_ctx_window_end(ctx);
    m->seen_max = tdm_trigger_ctx_max_timestamp(ctx);
    m->seen_wm = tdm_trigger_ctx_watermark(ctx);
    ASSERT_OK(tdm_trigger_ctx_register_event_timer(
        ctx, tdm_trigger_ctx_max_timestamp(ctx) - 100));
    return (++*n % 2 == 0) ? TDM_TRIGGER_FIRE : TDM_TRIGGER_CONTINUE;
}

static tdm_trigger_result my_on_event(void *ud, tdm_trigger_ctx *ctx,
                                      tdm_time_ms t)
{
    (void)ud;
    return t == tdm_trigger_ctx_max_timestamp(ctx) - 100
               ? TDM_TRIGGER_FIRE_AND_PURGE
               : TDM_TRIGGER_CONTINUE;
}

static void my_clear(void *ud, tdm_trigger_ctx *ctx)
{
    my_trig *m = ud;
    m->clears++;
    tdm_trigger_ctx_delete_event_timer(ctx, tdm_trigger_ctx_max_timestamp(ctx) -
                                                100);
}

static void my_merge(void *ud, tdm_trigger_ctx *ctx, const void *const *merged,
                     size_t n)
{
    my_trig *m = ud;
    int64_t *st = tdm_trigger_ctx_state(ctx);
    m->merges++;
    for (size_t i = 0; i < n; i++)
        *st += *(const int64_t *)merged[i];
}

static void my_destroy(void *ud)
{
    ((my_trig *)ud)->destroyed++;
}

static const tdm_trigger_methods my_methods = {
    .version = 1,
    .state_size = sizeof(int64_t),
    .on_element = my_on_element,
    .on_event_time = my_on_event,
    .on_merge = my_merge,
    .clear = my_clear,
    .destroy = my_destroy,
};

/* Tumbling 1000, lateness 0.  Records 10, 20 -> FIRE (count 2, value 2);
 * record 30 -> no fire.  Watermark 899 fires the timer at 999 - 100:
 * FIRE_AND_PURGE with 3 records.  Watermark 999: cleanup calls clear. */
TDM_TEST(custom_trigger_state_timers_and_clear)
{
    sink s = {.n = 0};
    my_trig m;
    memset(&m, 0, sizeof m);
    tdm_trigger *t;
    ASSERT_OK(tdm_trigger_new_custom(&my_methods, &m, &t, NULL, 0));
    tdm_winop *op = mk(tumbling(1000), t, TDM_AGG_COUNT, NULL, &s);
    ASSERT_OK(tdm_winop_watermark(op, 0, 5));
    push(op, "k", 10, 1);
    push(op, "k", 20, 1);
    ASSERT_EQ(m.seen_start, 0);
    ASSERT_EQ(m.seen_end, 1000);
    ASSERT_EQ(m.seen_max, 999);
    ASSERT_EQ(m.seen_wm, 5);
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_DBL_EQ(result(&s, 0)->value, 2);
    push(op, "k", 30, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 899));
    ASSERT_EQ(n_results(&s), 2);
    ASSERT_DBL_EQ(result(&s, 1)->value, 3);
    ASSERT_EQ(result(&s, 1)->update, 1); /* the first firing was kept */
    ASSERT_EQ(m.clears, 0);
    ASSERT_OK(tdm_winop_watermark(op, 0, 999));
    ASSERT_EQ(n_results(&s), 2);
    ASSERT_EQ(m.clears, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    tdm_winop_destroy(op);
    ASSERT_EQ(m.destroyed, 1);
}

/* Sessions (gap 100) with the user trigger: records 0 and 150 are two
 * sessions with counts 1 and 1; record 90 bridges them into [0, 250):
 * on_merge folds count 1 into the kept 1 (= 2), the record makes it 3:
 * no FIRE (odd).  clear ran for both old windows. */
TDM_TEST(custom_trigger_merges_with_sessions)
{
    sink s = {.n = 0};
    my_trig m;
    memset(&m, 0, sizeof m);
    tdm_trigger *t;
    tdm_assigner *a;
    ASSERT_OK(tdm_trigger_new_custom(&my_methods, &m, &t, NULL, 0));
    ASSERT_OK(tdm_assigner_new_session(100, &a, NULL, 0));
    tdm_winop *op = mk(a, t, TDM_AGG_COUNT, NULL, &s);
    push(op, "k", 0, 1);
    push(op, "k", 150, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 2);
    push(op, "k", 90, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    ASSERT_EQ(m.merges, 1);
    ASSERT_EQ(m.clears, 2);
    ASSERT_EQ(m.seen_start, 0);
    ASSERT_EQ(m.seen_end, 250);
    ASSERT_EQ(n_results(&s), 0);
    /* The 4th record makes the merged count 4: FIRE with 4 records. */
    push(op, "k", 100, 1);
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_DBL_EQ(result(&s, 0)->value, 4);
    ASSERT_EQ(result(&s, 0)->start, 0);
    ASSERT_EQ(result(&s, 0)->end, 250);
    tdm_winop_destroy(op);
}

/* A trigger without on_merge cannot be used with sessions. */
TDM_TEST(custom_trigger_bad_configuration)
{
    tdm_trigger *t;
    tdm_trigger_methods mm = my_methods;
    char buf[128];
    my_trig m;
    memset(&m, 0, sizeof m);
    mm.version = 2;
    ASSERT_ERR(tdm_trigger_new_custom(&mm, &m, &t, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "version") != NULL);
    mm.version = 1;
    mm.on_element = NULL;
    ASSERT_ERR(tdm_trigger_new_custom(&mm, &m, &t, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "on_element") != NULL);
    ASSERT_ERR(tdm_trigger_new_custom(NULL, &m, &t, buf, sizeof buf),
               TDM_ERR_INVAL);

    mm = my_methods;
    mm.on_merge = NULL;
    ASSERT_OK(tdm_trigger_new_custom(&mm, &m, &t, NULL, 0));
    tdm_assigner *a;
    tdm_aggregate *agg;
    tdm_winop *op;
    ASSERT_OK(tdm_assigner_new_session(100, &a, NULL, 0));
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_ERR(
        tdm_winop_new(a, t, agg, 1, NULL, collect, NULL, &op, buf, sizeof buf),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "trg") != NULL);
    ASSERT_TRUE(op == NULL);
    /* The operator took ownership and destroyed the trigger. */
    ASSERT_EQ(m.destroyed, 1);
}

/* R5.2/R5.5 with the continuous trigger on sessions (gap 3000, interval
 * 1000).  Record 500: session [500,3500), fire time 1000.  W 1000 fires
 * (value 1) and sets the next fire time 2000.  Record 2500 extends the
 * session to [500,5500): onMerge keeps the smallest pending fire time,
 * 2000, and registers it for the merged window; the old window's 2000
 * timer stays behind and finds no window when it fires.  W 2000 fires
 * once (value 2).  W 6000 fires at 3000, 4000, 5000 and maxTimestamp
 * 5499 (the fire time after 5000 is capped to 5499, the same timer), four
 * results of value 2, then cleans up. */
TDM_TEST(continuous_on_sessions_merges_fire_times)
{
    sink s = {.n = 0};
    tdm_assigner *a;
    tdm_trigger *t;
    ASSERT_OK(tdm_assigner_new_session(3000, &a, NULL, 0));
    ASSERT_OK(tdm_trigger_new_continuous_event_time(1000, &t, NULL, 0));
    tdm_winop *op = mk(a, t, TDM_AGG_COUNT, NULL, &s);
    push(op, "k", 500, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1000));
    ASSERT_EQ(n_results(&s), 1);
    ASSERT_EQ(result(&s, 0)->end, 3500);
    push(op, "k", 2500, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 2000));
    ASSERT_EQ(n_results(&s), 2);
    ASSERT_EQ(result(&s, 1)->start, 500);
    ASSERT_EQ(result(&s, 1)->end, 5500);
    ASSERT_DBL_EQ(result(&s, 1)->value, 2);
    ASSERT_OK(tdm_winop_watermark(op, 0, 6000));
    ASSERT_EQ(n_results(&s), 6);
    for (int i = 2; i < 6; i++) {
        ASSERT_EQ(result(&s, i)->end, 5500);
        ASSERT_DBL_EQ(result(&s, i)->value, 2);
    }
    ASSERT_EQ(result(&s, 5)->timing, TDM_PANE_LATE);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    tdm_winop_destroy(op);
}
