/* SPDX-License-Identifier: MIT */
/* test_wm_gen.c - watermark strategies and one channel's generator
 * (tdm_wmgen): rules G1-G7, T1-T6 and I1-I4 of watermark-semantics.md,
 * the Flink tests the rulebook names, and edge cases (bounds near MAX,
 * timestamps near MIN, interval 0, clock jumps, custom generators).
 *
 * Every expected trace is derived by hand from the rules; the derivation
 * is in the comment above each test.  Events are written as a trace:
 * "W<t>" watermark (MIN/MAX for the extremes), "IDLE", "ACTIVE".
 */
#include "harness.h"
#include "core.h"
#include "testhooks.h"
#include "time/wm.h"

/* ---- Trace of emitted events ---- */

typedef struct trace {
    char buf[4096];
} trace;

static void put_time(trace *t, const char *prefix, tdm_time_ms v)
{
    size_t n = strlen(t->buf);
    if (v == TDM_TIME_MIN)
        snprintf(t->buf + n, sizeof t->buf - n, "%s%sMIN", n ? " " : "",
                 prefix);
    else if (v == TDM_TIME_MAX)
        snprintf(t->buf + n, sizeof t->buf - n, "%s%sMAX", n ? " " : "",
                 prefix);
    else
        snprintf(t->buf + n, sizeof t->buf - n, "%s%s%" PRId64, n ? " " : "",
                 prefix, v);
}

static void trace_cb(void *opaque, const tdm_event *ev)
{
    trace *t = opaque;
    size_t n = strlen(t->buf);
    switch (tdm_event_get_type(ev)) {
    case TDM_EVENT_WATERMARK:
        put_time(t, "W", tdm_event_time(ev));
        break;
    case TDM_EVENT_STATUS:
        snprintf(t->buf + n, sizeof t->buf - n, "%s%s", n ? " " : "",
                 tdm_event_is_idle(ev) ? "IDLE" : "ACTIVE");
        break;
    default:
        snprintf(t->buf + n, sizeof t->buf - n, "%s?%d", n ? " " : "",
                 (int)tdm_event_get_type(ev));
        break;
    }
}

/* Returns the trace so far and clears it. */
static const char *take(trace *t)
{
    static char last[4096];
    memcpy(last, t->buf, sizeof last);
    t->buf[0] = '\0';
    return last;
}

/* ---- Fixture: one generator over a manual clock at 0 ---- */

typedef struct fix {
    tdm_clock *clk;
    tdm_wm_strategy *s;
    tdm_wmgen *g;
    tdm_record *rec;
    trace tr;
} fix;

static void fix_open(fix *f, tdm_wm_kind kind, tdm_time_ms bound)
{
    memset(f, 0, sizeof *f);
    ASSERT_OK(tdm_clock_new_manual(0, &f->clk));
    ASSERT_OK(tdm_wm_strategy_new(kind, bound, &f->s, NULL, 0));
    ASSERT_OK(tdm_record_new(&f->rec));
}

/* Creates the generator from the (configured) strategy. */
static void fix_start(fix *f)
{
    ASSERT_OK(tdm_wmgen_new(f->s, f->clk, trace_cb, &f->tr, &f->g));
}

static void fix_close(fix *f)
{
    tdm_wmgen_destroy(f->g);
    tdm_wm_strategy_destroy(f->s);
    tdm_record_destroy(f->rec);
    tdm_clock_destroy(f->clk);
}

/* Assigns, "forwards" and shows the record to the generator. */
static tdm_err rec_at(fix *f, tdm_time_ms ts)
{
    tdm_record_set(f->rec, "k", 1, ts, 1.0);
    tdm_wmgen_assign(f->g, f->rec);
    return tdm_wmgen_on_event(f->g, f->rec);
}

static void tick(fix *f, tdm_time_ms now)
{
    ASSERT_OK(tdm_clock_set(f->clk, now));
    ASSERT_OK(tdm_wmgen_advance(f->g));
}

/* ---- Strategy validation (G2, G7, T1) ---- */

TDM_TEST(strategy_rejects_bad_arguments)
{
    char err[128] = "";
    tdm_wm_strategy *s = NULL;
    ASSERT_ERR(tdm_wm_strategy_new(TDM_WM_BOUNDED, -1, &s, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(s == NULL);
    ASSERT_TRUE(strstr(err, "bound_ms") != NULL);
    ASSERT_ERR(tdm_wm_strategy_new((tdm_wm_kind)42, 0, &s, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "kind") != NULL);
    ASSERT_ERR(tdm_wm_strategy_new(TDM_WM_BOUNDED, 0, NULL, NULL, 0),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm_wm_strategy_new(TDM_WM_PUNCTUATED, -5, &s, NULL, 0),
               TDM_ERR_INVAL);

    ASSERT_OK(tdm_wm_strategy_new(TDM_WM_BOUNDED, 0, &s, NULL, 0));
    ASSERT_ERR(tdm_wm_strategy_set_interval(s, -1, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "interval_ms") != NULL);
    ASSERT_OK(tdm_wm_strategy_set_interval(s, 0, NULL, 0));
    ASSERT_ERR(tdm_wm_strategy_set_idle_timeout(s, 0, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "timeout_ms must be > 0 (got 0)") != NULL);
    ASSERT_ERR(tdm_wm_strategy_set_idle_timeout(s, -3, NULL, 0), TDM_ERR_INVAL);
    tdm_wm_strategy_destroy(s);
    tdm_wm_strategy_destroy(NULL);

    tdm_wm_generator_methods m = {.version = 2};
    ASSERT_ERR(tdm_wm_strategy_new_custom(&m, NULL, &s, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "version") != NULL);
    ASSERT_ERR(tdm_wm_strategy_new_custom(NULL, NULL, &s, NULL, 0),
               TDM_ERR_INVAL);
}

TDM_TEST(wmgen_new_rejects_null_arguments)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    tdm_wmgen *g = NULL;
    ASSERT_ERR(tdm_wmgen_new(NULL, f.clk, trace_cb, &f.tr, &g), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_wmgen_new(f.s, NULL, trace_cb, &f.tr, &g), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_wmgen_new(f.s, f.clk, NULL, &f.tr, &g), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_wmgen_new(f.s, f.clk, trace_cb, &f.tr, NULL), TDM_ERR_INVAL);
    ASSERT_TRUE(g == NULL);
    tdm_wmgen_destroy(NULL);
    fix_close(&f);
}

/* ---- Bounded out-of-orderness (G2) ---- */

/* BoundedOutOfOrdernessWatermarksTest: bound 10, record 1337 ->
 * 1337 - 10 - 1 = 1326 at the periodic emission; probing again gives the
 * same value, which the emitter does not send twice (G6, T3). */
TDM_TEST(bounded_1337_gives_1326)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 10);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 1337));
    ASSERT_STR_EQ(take(&f.tr), ""); /* never emits on the record */
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W1326");
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_wmgen_watermark(f.g), 1326);
    fix_close(&f);
}

/* BoundedOutOfOrdernessWatermarksTest: 12345, 12300, 12340, 12280 with
 * bound 10 -> the maximum 12345 - 11 = 12334. */
TDM_TEST(bounded_follows_the_maximum)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 10);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 12345));
    ASSERT_OK(rec_at(&f, 12300));
    ASSERT_OK(rec_at(&f, 12340));
    ASSERT_OK(rec_at(&f, 12280));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W12334");
    fix_close(&f);
}

/* G2: before any record the generator offers exactly MIN, which the
 * emitter (starting at MIN) never sends. */
TDM_TEST(bounded_initial_value_is_min_and_not_sent)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 1000);
    fix_start(&f);
    tick(&f, 200);
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_wmgen_watermark(f.g), TDM_TIME_MIN);
    ASSERT_EQ(tdm_wmgen_is_idle(f.g), 0);
    fix_close(&f);
}

/* Bound MAX: the maximum starts at MIN + MAX + 1 = 0.  A record at 5
 * gives 5 - MAX - 1 = MIN + 5; a record at MAX gives MAX - MAX - 1 = -1.
 * A negative record stays below the start and changes nothing. */
TDM_TEST(bounded_bound_near_max_saturates)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, TDM_TIME_MAX);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, -7));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(rec_at(&f, 5));
    tick(&f, 400);
    ASSERT_EQ(tdm_wmgen_watermark(f.g), TDM_TIME_MIN + 5);
    ASSERT_OK(rec_at(&f, TDM_TIME_MAX));
    tick(&f, 600);
    ASSERT_EQ(tdm_wmgen_watermark(f.g), -1);
    fix_close(&f);
}

/* Bound 10: records below MIN + 11 never move the maximum (it starts
 * there), so nothing is sent; MIN + 20 gives MIN + 20 - 11 = MIN + 9. */
TDM_TEST(bounded_timestamps_near_min)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 10);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, TDM_TIME_MIN + 5));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(rec_at(&f, TDM_TIME_MIN + 20));
    tick(&f, 400);
    ASSERT_EQ(tdm_wmgen_watermark(f.g), TDM_TIME_MIN + 9);
    ASSERT_STR_EQ(take(&f.tr), "W-9223372036854775799");
    fix_close(&f);
}

/* A record with no timestamp is refused and ignored. */
TDM_TEST(record_without_timestamp_is_rejected)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    fix_start(&f);
    ASSERT_ERR(rec_at(&f, TDM_TIME_MIN), TDM_ERR_NO_TIMESTAMP);
    ASSERT_ERR(tdm_wmgen_on_event(f.g, NULL), TDM_ERR_INVAL);
    ASSERT_OK(rec_at(&f, 50));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W49");
    fix_close(&f);
}

/* ---- Monotonous (G3) and the default interval (T1) ---- */

/* Monotonous = bound 0: max - 1.  Default interval 200: nothing at 199,
 * 1499 at 200; a repeated 1500 emits nothing at 400; 1501 -> 1500 at 600
 * (vector wm-monotonous-default-interval).  The bound argument is
 * ignored for this kind. */
TDM_TEST(monotonous_default_interval)
{
    fix f;
    fix_open(&f, TDM_WM_MONOTONOUS, 77);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 1000));
    ASSERT_OK(rec_at(&f, 1500));
    tick(&f, 199);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W1499");
    ASSERT_OK(rec_at(&f, 1500));
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(rec_at(&f, 1501));
    tick(&f, 600);
    ASSERT_STR_EQ(take(&f.tr), "W1500");
    fix_close(&f);
}

/* G3: an older record does not move the maximum (no monotony check). */
TDM_TEST(monotonous_older_record_ignored)
{
    fix f;
    fix_open(&f, TDM_WM_MONOTONOUS, 0);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 100));
    ASSERT_OK(rec_at(&f, 10));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W99");
    fix_close(&f);
}

/* ---- Periodic schedule (T1, T2) ---- */

/* Interval 50 (vector wm-periodic-only-on-interval-crossing): 25 and 49
 * cross nothing; 50 emits 2 - 1 = 1; 75 nothing; 100 emits 4 - 1 = 3. */
TDM_TEST(periodic_only_when_due)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_interval(f.s, 50, NULL, 0));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 2));
    tick(&f, 25);
    tick(&f, 49);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 50);
    ASSERT_STR_EQ(take(&f.tr), "W1");
    ASSERT_OK(rec_at(&f, 4));
    tick(&f, 75);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 100);
    ASSERT_STR_EQ(take(&f.tr), "W3");
    fix_close(&f);
}

/* T2 chain: a jump 0 -> 450 fires once and re-arms at 650 (not at 600,
 * the grid point); 600 fires nothing, 650 fires.  A later jump to 5000
 * fires once more, then the next is due at 5200. */
TDM_TEST(periodic_chain_rearms_from_firing_time)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 10));
    tick(&f, 450);
    ASSERT_STR_EQ(take(&f.tr), "W9");
    ASSERT_OK(rec_at(&f, 20));
    tick(&f, 600);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 650);
    ASSERT_STR_EQ(take(&f.tr), "W19");
    ASSERT_OK(rec_at(&f, 30));
    tick(&f, 5000);
    ASSERT_STR_EQ(take(&f.tr), "W29");
    ASSERT_OK(rec_at(&f, 40));
    tick(&f, 5199);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 5200);
    ASSERT_STR_EQ(take(&f.tr), "W39");
    fix_close(&f);
}

/* The first emission is due one interval after the generator is created,
 * not after clock 0: created at 1000, nothing at 1100, emission at 1200. */
TDM_TEST(periodic_first_due_after_creation)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_clock_set(f.clk, 1000));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 7));
    tick(&f, 1100);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 1200);
    ASSERT_STR_EQ(take(&f.tr), "W6");
    fix_close(&f);
}

/* T1: interval 0 = no periodic emission at all, hence no idleness
 * either; end of input still sends MAX. */
TDM_TEST(interval_zero_never_emits_periodically)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_interval(f.s, 0, NULL, 0));
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 10, NULL, 0));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 500));
    tick(&f, 200);
    tick(&f, 100000);
    tick(&f, 200000);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(tdm_wmgen_end(f.g));
    ASSERT_STR_EQ(take(&f.tr), "WMAX");
    fix_close(&f);
}

/* ---- On-event emission ---- */

/* Vector wm-bounded-on-event, bound 5: 100 -> 94 at once; 90 and a
 * repeated 100 do not advance; 101 -> 95; 200 -> 194.  No periodic
 * emission happens in this mode. */
TDM_TEST(bounded_on_event)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 5);
    ASSERT_OK(tdm_wm_strategy_set_emit_on_event(f.s, 1));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 100));
    ASSERT_STR_EQ(take(&f.tr), "W94");
    ASSERT_OK(rec_at(&f, 90));
    ASSERT_OK(rec_at(&f, 100));
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(rec_at(&f, 101));
    ASSERT_STR_EQ(take(&f.tr), "W95");
    ASSERT_OK(rec_at(&f, 200));
    ASSERT_STR_EQ(take(&f.tr), "W194");
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "");
    fix_close(&f);
}

/* ---- An exact delay (watermark.delay, G2's exception) ---- */

/* Flink SQL's WATERMARK FOR ts AS ts - INTERVAL 'd': max - d exactly.
 * Delay 0 (bound -1): nothing before a record (MIN is not sent); 9999 ->
 * 9999 at the periodic emission, where bound 0 gives 9998; delay 5000:
 * 9999 -> 4999, a lower record changes nothing, 12000 -> 7000. */
TDM_TEST(delay_periodic_is_max_minus_delay)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm__wm_strategy_set_delay(f.s, 0, NULL, 0));
    fix_start(&f);
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_wmgen_watermark(f.g), TDM_TIME_MIN);
    ASSERT_OK(rec_at(&f, 9999));
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "W9999");
    fix_close(&f);

    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm__wm_strategy_set_delay(f.s, 5000, NULL, 0));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 9999));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W4999");
    ASSERT_OK(rec_at(&f, 9000));
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(rec_at(&f, 12000));
    tick(&f, 600);
    ASSERT_STR_EQ(take(&f.tr), "W7000");
    fix_close(&f);
}

/* On event: every record gives max - delay at once (delay 0: the record's
 * own timestamp; delay 5000: 9999 -> 4999).  Near MIN, delay 0: a record
 * at MIN + 1 gives MIN + 1. */
TDM_TEST(delay_on_event_is_max_minus_delay)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm__wm_strategy_set_delay(f.s, 0, NULL, 0));
    ASSERT_OK(tdm_wm_strategy_set_emit_on_event(f.s, 1));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, TDM_TIME_MIN + 1));
    ASSERT_STR_EQ(take(&f.tr), "W-9223372036854775807");
    ASSERT_OK(rec_at(&f, 1000));
    ASSERT_OK(rec_at(&f, 9999));
    ASSERT_STR_EQ(take(&f.tr), "W1000 W9999");
    fix_close(&f);

    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm__wm_strategy_set_delay(f.s, 5000, NULL, 0));
    ASSERT_OK(tdm_wm_strategy_set_emit_on_event(f.s, 1));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 9999));
    ASSERT_STR_EQ(take(&f.tr), "W4999");
    fix_close(&f);
}

/* Only a bounded strategy takes a delay, and only >= 0; the public
 * constructor still refuses a negative bound (G2). */
TDM_TEST(delay_refused_for_other_kinds_and_negative)
{
    tdm_wm_strategy *s = NULL;
    ASSERT_OK(tdm_wm_strategy_new(TDM_WM_PUNCTUATED, 0, &s, NULL, 0));
    ASSERT_EQ(tdm__wm_strategy_set_delay(s, 0, NULL, 0), TDM_ERR_INVAL);
    tdm_wm_strategy_destroy(s);
    ASSERT_OK(tdm_wm_strategy_new(TDM_WM_BOUNDED, 0, &s, NULL, 0));
    ASSERT_EQ(tdm__wm_strategy_set_delay(s, -1, NULL, 0), TDM_ERR_INVAL);
    tdm_wm_strategy_destroy(s);
    ASSERT_EQ(tdm_wm_strategy_new(TDM_WM_BOUNDED, -1, &s, NULL, 0),
              TDM_ERR_INVAL);
}

/* ---- Punctuated (G5) ---- */

static int is_marker(void *ud, const tdm_record *rec)
{
    (void)ud;
    return tdm_record_value(rec) < 0; /* markers carry a negative value */
}

/* Bound 0: a marker emits its own timestamp (no -1), immediately; other
 * records nothing; a lower marker is dropped; periodic calls nothing.
 * Bound 5 on the same data: 100 -> 95. */
TDM_TEST(punctuated_marker_emits_own_timestamp)
{
    fix f;
    fix_open(&f, TDM_WM_PUNCTUATED, 0);
    ASSERT_OK(tdm_wm_strategy_set_marker(f.s, is_marker, NULL));
    fix_start(&f);
    tdm_record_set(f.rec, "k", 1, 50, 1.0);
    ASSERT_OK(tdm_wmgen_on_event(f.g, f.rec));
    ASSERT_STR_EQ(take(&f.tr), "");
    tdm_record_set(f.rec, "k", 1, 100, -1.0);
    ASSERT_OK(tdm_wmgen_on_event(f.g, f.rec));
    ASSERT_STR_EQ(take(&f.tr), "W100");
    tdm_record_set(f.rec, "k", 1, 80, -1.0);
    ASSERT_OK(tdm_wmgen_on_event(f.g, f.rec));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "");
    fix_close(&f);

    fix_open(&f, TDM_WM_PUNCTUATED, 5);
    ASSERT_OK(tdm_wm_strategy_set_marker(f.s, is_marker, NULL));
    fix_start(&f);
    tdm_record_set(f.rec, "k", 1, 100, -1.0);
    ASSERT_OK(tdm_wmgen_on_event(f.g, f.rec));
    ASSERT_STR_EQ(take(&f.tr), "W95");
    fix_close(&f);
}

/* Without a marker predicate no record is a marker. */
TDM_TEST(punctuated_without_predicate_emits_nothing)
{
    fix f;
    fix_open(&f, TDM_WM_PUNCTUATED, 0);
    fix_start(&f);
    tdm_record_set(f.rec, "k", 1, 100, -1.0);
    ASSERT_OK(tdm_wmgen_on_event(f.g, f.rec));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "");
    fix_close(&f);
}

/* ---- No watermarks (G4) ---- */

TDM_TEST(none_emits_only_max_at_end)
{
    fix f;
    fix_open(&f, TDM_WM_NONE, 0);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 100));
    tick(&f, 200);
    tick(&f, 400);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_OK(tdm_wmgen_end(f.g));
    ASSERT_STR_EQ(take(&f.tr), "WMAX");
    fix_close(&f);
}

/* ---- Timestamp assigner (G7, T4) ---- */

static tdm_time_ms ts_from_value(void *ud, const tdm_record *rec)
{
    ASSERT_EQ(*(int *)ud, 7);
    return (tdm_time_ms)tdm_record_value(rec);
}

/* The assigner's result is stored in the record and drives the
 * generator: value 300 -> timestamp 300 -> 299 with bound 0.  The default
 * assigner returns the record's own timestamp. */
TDM_TEST(timestamp_assigner)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    int ud = 7;
    ASSERT_OK(tdm_wm_strategy_set_timestamp_assigner(f.s, ts_from_value, &ud));
    fix_start(&f);
    tdm_record_set(f.rec, "k", 1, 5, 300.0);
    ASSERT_EQ(tdm_wmgen_assign(f.g, f.rec), 300);
    ASSERT_EQ(tdm_record_ts(f.rec), 300);
    ASSERT_OK(tdm_wmgen_on_event(f.g, f.rec));
    tick(&f, 200);
    ASSERT_STR_EQ(take(&f.tr), "W299");
    fix_close(&f);

    fix_open(&f, TDM_WM_BOUNDED, 0);
    fix_start(&f);
    tdm_record_set(f.rec, "k", 1, 5, 300.0);
    ASSERT_EQ(tdm_wmgen_assign(f.g, f.rec), 5);
    fix_close(&f);
}

/* ---- Idleness (I1-I4) ---- */

/* I2 example: interval 200, timeout 1000, record at 0.  Check at 200 sees
 * the record (reset); 400 starts the countdown; at 1400, 1000 is not
 * > 1000; at 1600 the channel is idle: one IDLE, nothing else (I3). */
TDM_TEST(idleness_detected_at_periodic_check)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 1000, NULL, 0));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 1000));
    for (tdm_time_ms t = 200; t <= 1400; t += 200)
        tick(&f, t);
    ASSERT_STR_EQ(take(&f.tr), "W999");
    ASSERT_EQ(tdm_wmgen_is_idle(f.g), 0);
    tick(&f, 1600);
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    ASSERT_EQ(tdm_wmgen_is_idle(f.g), 1);
    /* Repeated checks stay idle without new output. */
    tick(&f, 1800);
    tick(&f, 5000);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_wmgen_watermark(f.g), 999); /* kept, not reset */
    fix_close(&f);
}

/* I1: a record between two checks resets the countdown.  Record at 0;
 * countdown from 400; record before 1200 -> the check at 1200 resets;
 * 1400 restarts the countdown; idle only at 2600 (2600 - 1400 > 1000,
 * 2400 - 1400 is not). */
TDM_TEST(idleness_activity_resets_countdown)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 1000, NULL, 0));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 10));
    for (tdm_time_ms t = 200; t <= 1000; t += 200)
        tick(&f, t);
    ASSERT_OK(rec_at(&f, 5)); /* old: activity, but no advance */
    for (tdm_time_ms t = 1200; t <= 2400; t += 200)
        tick(&f, t);
    ASSERT_STR_EQ(take(&f.tr), "W9");
    tick(&f, 2600);
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    fix_close(&f);
}

/* A clock jump fires one check: record at 0, check at 200 (reset), jump
 * to 5000 starts the countdown (not idle yet, whatever the gap), 5200 is
 * only 200 later; idle at the first check after 6000: 6200. */
TDM_TEST(idleness_clock_jump_counts_one_check)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 1000, NULL, 0));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 10));
    tick(&f, 200);
    tick(&f, 5000);
    ASSERT_STR_EQ(take(&f.tr), "W9");
    for (tdm_time_ms t = 5200; t <= 6000; t += 200)
        tick(&f, t);
    ASSERT_STR_EQ(take(&f.tr), "");
    tick(&f, 6200);
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    fix_close(&f);
}

/* I4 / T3 (vector wm-idleness-record-without-advance-stays-idle): idle at
 * 1600; an old record (500) does not advance 999, so no ACTIVE at 1800;
 * re-detected idle silently at 3200; a record at 3000 -> ACTIVE + 2999
 * at 3400. */
TDM_TEST(idleness_record_without_advance_stays_idle)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 1000, NULL, 0));
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 1000));
    tick(&f, 200);
    tick(&f, 400);
    tick(&f, 1600);
    ASSERT_STR_EQ(take(&f.tr), "W999 IDLE");
    ASSERT_OK(rec_at(&f, 500));
    tick(&f, 1800);
    tick(&f, 2000);
    tick(&f, 3200);
    ASSERT_STR_EQ(take(&f.tr), "");
    ASSERT_EQ(tdm_wmgen_is_idle(f.g), 1);
    ASSERT_OK(rec_at(&f, 3000));
    ASSERT_STR_EQ(take(&f.tr), ""); /* a record alone never reactivates */
    tick(&f, 3400);
    ASSERT_STR_EQ(take(&f.tr), "ACTIVE W2999");
    ASSERT_EQ(tdm_wmgen_is_idle(f.g), 0);
    fix_close(&f);
}

/* ---- End of input (T5, T6) ---- */

/* Vector wm-end-of-input-max-only: 3999 at 200; the pending 7999 is never
 * flushed; end sends MAX only.  Afterwards everything is refused. */
TDM_TEST(end_sends_max_without_flushing)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 1000);
    fix_start(&f);
    ASSERT_OK(rec_at(&f, 5000));
    tick(&f, 200);
    ASSERT_OK(rec_at(&f, 9000));
    ASSERT_OK(tdm_wmgen_end(f.g));
    ASSERT_STR_EQ(take(&f.tr), "W3999 WMAX");
    ASSERT_EQ(tdm_wmgen_watermark(f.g), TDM_TIME_MAX);
    ASSERT_ERR(rec_at(&f, 10000), TDM_ERR_STATE);
    ASSERT_OK(tdm_clock_set(f.clk, 400));
    ASSERT_ERR(tdm_wmgen_advance(f.g), TDM_ERR_STATE);
    ASSERT_ERR(tdm_wmgen_end(f.g), TDM_ERR_STATE);
    ASSERT_STR_EQ(take(&f.tr), "");
    fix_close(&f);
}

/* T5/T3: on an idle channel end of input says ACTIVE before MAX. */
TDM_TEST(end_on_idle_channel_activates_first)
{
    fix f;
    fix_open(&f, TDM_WM_BOUNDED, 0);
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(f.s, 100, NULL, 0));
    fix_start(&f);
    tick(&f, 200); /* countdown starts */
    tick(&f, 400); /* 200 > 100: idle */
    ASSERT_STR_EQ(take(&f.tr), "IDLE");
    ASSERT_OK(tdm_wmgen_end(f.g));
    ASSERT_STR_EQ(take(&f.tr), "ACTIVE WMAX");
    ASSERT_EQ(tdm_wmgen_is_idle(f.g), 0);
    fix_close(&f);
}

/* ---- Custom generators (G1) ---- */

typedef struct custom_ud {
    int destroyed;
    int events;
    int periodic;
} custom_ud;

typedef struct custom_state {
    tdm_time_ms max;
    int seen;
} custom_state;

/* Emits on even timestamps at once, keeps the max for periodic calls,
 * and marks idle / active on demand (value 1 = idle, 2 = active). */
static void c_on_event(void *ud, void *state, const tdm_record *rec,
                       tdm_wm_output *out)
{
    custom_ud *u = ud;
    custom_state *st = state;
    u->events++;
    if (st->seen == 0)
        ASSERT_EQ(st->max, 0); /* zeroed at creation */
    st->seen++;
    tdm_time_ms ts = tdm_record_ts(rec);
    if (ts > st->max)
        st->max = ts;
    if (tdm_record_value(rec) == 1.0)
        tdm_wm_output_mark_idle(out);
    else if (tdm_record_value(rec) == 2.0)
        tdm_wm_output_mark_active(out);
    else if (ts % 2 == 0)
        tdm_wm_output_emit(out, ts);
}

static void c_on_periodic(void *ud, void *state, tdm_wm_output *out)
{
    custom_ud *u = ud;
    custom_state *st = state;
    u->periodic++;
    tdm_wm_output_emit(out, st->max);
}

static void c_destroy(void *ud)
{
    ((custom_ud *)ud)->destroyed++;
}

static const tdm_wm_generator_methods custom_methods = {
    .version = 1,
    .state_size = sizeof(custom_state),
    .on_event = c_on_event,
    .on_periodic_emit = c_on_periodic,
    .destroy = c_destroy,
};

/* User hooks see zeroed per-channel state; their output is de-duplicated
 * like a built-in one (emit 4, then 3 is dropped, then the periodic 5);
 * mark_idle / mark_active toggle the channel status once each; a second
 * generator has its own state.  The user destroy hook runs once, after
 * the strategy and every generator made from it are gone. */
TDM_TEST(custom_generator_hooks_and_lifetime)
{
    custom_ud u = {0};
    tdm_clock *clk = NULL;
    tdm_wm_strategy *s = NULL;
    tdm_wmgen *g1 = NULL, *g2 = NULL;
    tdm_record *rec = NULL;
    trace tr = {{0}}, tr2 = {{0}};
    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    ASSERT_OK(tdm_record_new(&rec));
    ASSERT_OK(tdm_wm_strategy_new_custom(&custom_methods, &u, &s, NULL, 0));
    ASSERT_OK(tdm_wmgen_new(s, clk, trace_cb, &tr, &g1));
    ASSERT_OK(tdm_wmgen_new(s, clk, trace_cb, &tr2, &g2));
    tdm_wm_strategy_destroy(s); /* generators stay valid */
    ASSERT_EQ(u.destroyed, 0);

    tdm_record_set(rec, "k", 1, 4, 0.0);
    ASSERT_OK(tdm_wmgen_on_event(g1, rec));
    tdm_record_set(rec, "k", 1, 5, 0.0);
    ASSERT_OK(tdm_wmgen_on_event(g1, rec)); /* odd: no emission */
    ASSERT_STR_EQ(take(&tr), "W4");
    tdm_record_set(rec, "k", 1, 2, 0.0);
    ASSERT_OK(tdm_wmgen_on_event(g1, rec)); /* 2 < 4: dropped */
    ASSERT_STR_EQ(take(&tr), "");
    ASSERT_OK(tdm_clock_set(clk, 200));
    ASSERT_OK(tdm_wmgen_advance(g1));
    ASSERT_STR_EQ(take(&tr), "W5");

    tdm_record_set(rec, "k", 1, 5, 1.0);
    ASSERT_OK(tdm_wmgen_on_event(g1, rec));
    ASSERT_OK(tdm_wmgen_on_event(g1, rec));
    ASSERT_STR_EQ(take(&tr), "IDLE");
    tdm_record_set(rec, "k", 1, 5, 2.0);
    ASSERT_OK(tdm_wmgen_on_event(g1, rec));
    ASSERT_OK(tdm_wmgen_on_event(g1, rec));
    ASSERT_STR_EQ(take(&tr), "ACTIVE");

    /* g2 has its own, still zeroed state: its periodic max is 0. */
    ASSERT_OK(tdm_wmgen_advance(g2));
    ASSERT_STR_EQ(take(&tr2), "W0");
    ASSERT_EQ(u.periodic, 2);
    ASSERT_EQ(u.events, 7);

    tdm_wmgen_destroy(g1);
    ASSERT_EQ(u.destroyed, 0);
    tdm_wmgen_destroy(g2);
    ASSERT_EQ(u.destroyed, 1);
    tdm_record_destroy(rec);
    tdm_clock_destroy(clk);
}

/* A custom generator wrapped with idleness: while idle, the user's
 * periodic hook is not called (I1). */
TDM_TEST(custom_generator_with_idleness_skips_hook_when_idle)
{
    custom_ud u = {0};
    tdm_clock *clk = NULL;
    tdm_wm_strategy *s = NULL;
    tdm_wmgen *g = NULL;
    trace tr = {{0}};
    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    ASSERT_OK(tdm_wm_strategy_new_custom(&custom_methods, &u, &s, NULL, 0));
    ASSERT_OK(tdm_wm_strategy_set_idle_timeout(s, 100, NULL, 0));
    ASSERT_OK(tdm_wmgen_new(s, clk, trace_cb, &tr, &g));
    /* 200: countdown starts, hook runs; 400: 200 > 100, idle. */
    ASSERT_OK(tdm_clock_set(clk, 200));
    ASSERT_OK(tdm_wmgen_advance(g));
    ASSERT_EQ(u.periodic, 1);
    ASSERT_OK(tdm_clock_set(clk, 400));
    ASSERT_OK(tdm_wmgen_advance(g));
    ASSERT_OK(tdm_clock_set(clk, 600));
    ASSERT_OK(tdm_wmgen_advance(g));
    ASSERT_EQ(u.periodic, 1);
    ASSERT_STR_EQ(take(&tr), "W0 IDLE");
    tdm_wmgen_destroy(g);
    tdm_wm_strategy_destroy(s);
    ASSERT_EQ(u.destroyed, 1);
    tdm_clock_destroy(clk);
}

/* ---- Out of memory ---- */

/* Every allocation of the custom path can fail: each failure reports
 * NOMEM, leaves *out NULL and leaks nothing (checked under ASan). */
TDM_TEST(out_of_memory_paths)
{
    custom_ud u = {0};
    tdm_clock *clk = NULL;
    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    for (long n = 1; n <= 4; n++) {
        tdm_wm_strategy *s = NULL;
        tdm_wmgen *g = NULL;
        tdm__alloc_fail_after(n);
        tdm_err e1 =
            tdm_wm_strategy_new_custom(&custom_methods, &u, &s, NULL, 0);
        tdm_err e2 =
            s ? tdm_wmgen_new(s, clk, trace_cb, NULL, &g) : TDM_ERR_NOMEM;
        tdm__alloc_fail_after(0);
        ASSERT_TRUE(e1 == TDM_ERR_NOMEM || e2 == TDM_ERR_NOMEM);
        if (e2 != TDM_OK)
            ASSERT_TRUE(g == NULL);
        tdm_wmgen_destroy(g);
        tdm_wm_strategy_destroy(s);
    }
    tdm_clock_destroy(clk);
}
