/* SPDX-License-Identifier: MIT */
/* test_winop.c - the keyed window operator against the rulebook
 * (window-semantics.md R2-R5, R7): watermark order, lateness and late
 * output, cleanup boundaries, negative timestamps and offsets, the
 * extremes of the time range, sessions (touching, bridging, late merges),
 * aggregates (built-in, collect, user aggregate, window function), bad
 * configuration, records without timestamp, state accounting and
 * allocation failures.  Expected values are derived by hand in comments.
 */
#include "harness.h"
#include "core.h"

/* ---- Output capture ---- */

typedef struct out_ev {
    tdm_event_type type;
    char key[16];
    int has_window;
    tdm_time_ms start, end, time;
    double value;
    double values[8];
    size_t n_values;
    char bytes[16];
    size_t n_bytes;
    tdm_pane_timing timing;
    int64_t pane;
    int update;
    int idle;
    tdm_time_ms rec_ts;
    double rec_value;
    int side;
} out_ev;

typedef struct sink {
    out_ev ev[128];
    int n;
} sink;

static void collect(void *opaque, const tdm_event *ev)
{
    sink *s = opaque;
    if (s->n >= 128)
        return;
    out_ev *o = &s->ev[s->n++];
    memset(o, 0, sizeof *o);
    o->type = tdm_event_get_type(ev);
    o->time = tdm_event_time(ev);
    o->idle = tdm_event_is_idle(ev);
    o->side = tdm_event_side(ev);
    size_t len;
    const char *k = tdm_event_key(ev, &len);
    if (k)
        memcpy(o->key, k, len < 15 ? len : 15);
    if (o->type == TDM_EVENT_RESULT) {
        o->has_window = tdm_event_window(ev, &o->start, &o->end);
        o->value = tdm_event_value(ev);
        const double *v = tdm_event_values(ev, &o->n_values);
        for (size_t i = 0; i < o->n_values && i < 8; i++)
            o->values[i] = v[i];
        const void *b = tdm_event_bytes(ev, &o->n_bytes);
        if (b)
            memcpy(o->bytes, b, o->n_bytes < 15 ? o->n_bytes : 15);
        o->timing = tdm_event_pane_timing(ev);
        o->pane = tdm_event_pane_index(ev);
        o->update = tdm_event_is_update(ev);
    }
    if (o->type == TDM_EVENT_LATE) {
        const tdm_record *r = tdm_event_record(ev, 0);
        o->rec_ts = tdm_record_ts(r);
        o->rec_value = tdm_record_value(r);
        memcpy(o->key, tdm_record_key(r, &len), len < 15 ? len : 15);
    }
}

static int count_type(const sink *s, tdm_event_type t)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += s->ev[i].type == t;
    return n;
}

static const out_ev *nth(const sink *s, tdm_event_type t, int i)
{
    for (int j = 0; j < s->n; j++)
        if (s->ev[j].type == t && i-- == 0)
            return &s->ev[j];
    tdm_test_fail(__FILE__, __LINE__, "no event %d of type %d", i, (int)t);
}

#define RES(s, i) nth((s), TDM_EVENT_RESULT, (i))

static tdm_winop *mk_agg(tdm_assigner *a, tdm_aggregate *agg,
                         tdm_time_ms lateness, int late_out, int channels,
                         sink *s)
{
    tdm_winop *op;
    char buf[128];
    ASSERT_OK(tdm_winop_new(a, NULL, agg, channels, NULL, collect, s, &op,
                            buf, sizeof buf));
    ASSERT_OK(tdm_winop_set_allowed_lateness(op, lateness, buf, sizeof buf));
    ASSERT_OK(tdm_winop_set_late_output(op, late_out));
    return op;
}

static tdm_winop *mk(tdm_assigner *a, tdm_agg_kind kind, tdm_time_ms lateness,
                     int late_out, sink *s)
{
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new(kind, &agg));
    return mk_agg(a, agg, lateness, late_out, 1, s);
}

static tdm_assigner *tumbling(tdm_time_ms size, tdm_time_ms off)
{
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_tumbling(size, off, &a, NULL, 0));
    return a;
}

static tdm_assigner *session(tdm_time_ms gap)
{
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_session(gap, &a, NULL, 0));
    return a;
}

static tdm_err push_ch(tdm_winop *op, int ch, const char *key,
                       tdm_time_ms ts, double v)
{
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    tdm_record_set(r, key, strlen(key), ts, v);
    tdm_err err = tdm_winop_push(op, ch, r);
    tdm_record_destroy(r);
    return err;
}

static void push(tdm_winop *op, const char *key, tdm_time_ms ts, double v)
{
    ASSERT_OK(push_ch(op, 0, key, ts, v));
}

/* ---- Watermarks ---- */

/* R3.1/R3.6: with two channels the operator's watermark is the minimum;
 * results come before the watermark that fired them; every advance of
 * the merged watermark is forwarded, decreasing ones are not; statuses
 * are forwarded too. */
TDM_TEST(watermark_min_over_channels_results_first)
{
    sink s = { .n = 0 };
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    tdm_winop *op = mk_agg(tumbling(1000, 0), agg, 0, 0, 2, &s);
    ASSERT_OK(push_ch(op, 1, "a", 100, 1));
    ASSERT_OK(tdm_winop_watermark(op, 0, 5000));
    ASSERT_EQ(s.n, 0); /* channel 1 is still at MIN */
    ASSERT_OK(tdm_winop_watermark(op, 1, 999));
    ASSERT_EQ(s.n, 2);
    ASSERT_EQ(s.ev[0].type, TDM_EVENT_RESULT);
    ASSERT_EQ(s.ev[1].type, TDM_EVENT_WATERMARK);
    ASSERT_EQ(s.ev[1].time, 999);
    ASSERT_EQ(tdm_winop_current_watermark(op), 999);
    ASSERT_OK(tdm_winop_watermark(op, 1, 500)); /* backwards: ignored */
    ASSERT_EQ(s.n, 2);
    /* Channel 1 idle: the minimum is channel 0's 5000. */
    ASSERT_OK(tdm_winop_status(op, 1, 1));
    ASSERT_EQ(s.ev[s.n - 1].type, TDM_EVENT_WATERMARK);
    ASSERT_EQ(s.ev[s.n - 1].time, 5000);
    ASSERT_OK(tdm_winop_status(op, 0, 1));
    ASSERT_EQ(s.ev[s.n - 1].type, TDM_EVENT_STATUS);
    ASSERT_EQ(s.ev[s.n - 1].idle, 1);
    ASSERT_ERR(tdm_winop_watermark(op, 2, 1), TDM_ERR_CHANNEL);
    ASSERT_ERR(push_ch(op, -1, "a", 1, 1), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_winop_status(op, 7, 1), TDM_ERR_CHANNEL);
    tdm_winop_destroy(op);
}

/* ---- Lateness ---- */

/* R4.4: [0,2000) with lateness 500 is accepted while W < 1999 + 500 and
 * is cleaned up at W = 2499.  Record 100 at W 2498 refires (LATE, 2).
 * After cleanup a record for the same window is late (dropped: 1). */
TDM_TEST(lateness_cleanup_boundary)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(tumbling(2000, 0), TDM_AGG_COUNT, 500, 0, &s);
    push(op, "k", 100, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1999));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 2498));
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    push(op, "k", 100, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 2);
    ASSERT_DBL_EQ(RES(&s, 1)->value, 2);
    ASSERT_EQ(RES(&s, 1)->timing, TDM_PANE_LATE);
    ASSERT_OK(tdm_winop_watermark(op, 0, 2499));
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 2); /* cleanup is silent */
    push(op, "k", 100, 1);
    ASSERT_EQ(tdm_winop_late_dropped(op), 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 2);
    tdm_winop_destroy(op);
}

/* R2.1/R2.3: a record with ts <= W is fine while its window is not late
 * (1500 at W 1800 into [0,2000)); a record for a late window goes to the
 * late output with its own key, timestamp and value, side -1. */
TDM_TEST(late_output_carries_the_record)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(tumbling(2000, 0), TDM_AGG_SUM, 0, 1, &s);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1800));
    push(op, "k", 1500, 4);
    ASSERT_OK(tdm_winop_watermark(op, 0, 2000));
    ASSERT_DBL_EQ(RES(&s, 0)->value, 4);
    push(op, "late", 1999, 9);
    const out_ev *l = nth(&s, TDM_EVENT_LATE, 0);
    ASSERT_STR_EQ(l->key, "late");
    ASSERT_EQ(l->rec_ts, 1999);
    ASSERT_EQ(l->time, 1999);
    ASSERT_DBL_EQ(l->rec_value, 9);
    ASSERT_EQ(l->side, -1);
    ASSERT_EQ(tdm_winop_late_emitted(op), 1);
    ASSERT_EQ(tdm_winop_late_dropped(op), 0);
    ASSERT_EQ(tdm_winop_live_windows(op), 0); /* no state for it */
    tdm_winop_destroy(op);
}

/* R2.2: sliding 2000/1000, W = 1999.  Record 1500 is in [0,2000) (late:
 * cleanup 1999 <= 1999) and [1000,3000) (open): it goes to the open one,
 * is neither side output nor counted. */
TDM_TEST(sliding_partially_late_record_is_silently_partial)
{
    sink s = { .n = 0 };
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_sliding(2000, 1000, 0, &a, NULL, 0));
    tdm_winop *op = mk(a, TDM_AGG_COUNT, 0, 1, &s);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1999));
    push(op, "k", 1500, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_LATE), 0);
    ASSERT_EQ(tdm_winop_late_dropped(op), 0);
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 2999));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_EQ(RES(&s, 0)->start, 1000);
    tdm_winop_destroy(op);
}

/* ---- Window starts ---- */

/* R1.2: size 7 offset 3: -10 -> [-11,-4), 2 -> [-4,3), 3 -> [3,10). */
TDM_TEST(negative_timestamps_and_offsets)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(tumbling(7, 3), TDM_AGG_COUNT, 0, 0, &s);
    push(op, "k", -10, 1);
    push(op, "k", 2, 1);
    push(op, "k", 3, 1);
    push(op, "k", -5, 1); /* also [-11,-4) */
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 3);
    ASSERT_EQ(RES(&s, 0)->start, -11);
    ASSERT_EQ(RES(&s, 0)->end, -4);
    ASSERT_EQ(RES(&s, 0)->time, -5);
    ASSERT_DBL_EQ(RES(&s, 0)->value, 2);
    ASSERT_EQ(RES(&s, 1)->start, -4);
    ASSERT_EQ(RES(&s, 2)->start, 3);
    /* End of input forwards MAX once, after the results (R7.1). */
    ASSERT_EQ(s.ev[s.n - 1].type, TDM_EVENT_WATERMARK);
    ASSERT_EQ(s.ev[s.n - 1].time, TDM_TIME_MAX);
    ASSERT_EQ(count_type(&s, TDM_EVENT_WATERMARK), 1);
    tdm_winop_destroy(op);
}

/* ---- The extremes ---- */

/* R4.1/R4.2: a window near MAX with lateness MAX.  ts MAX - 5 is in
 * [MAX - 807, MAX) (end saturated), maxTimestamp MAX - 1; cleanup time
 * overflows to MAX, so no cleanup timer and the window is never late:
 * it fires at W = MAX - 1 and again for a record at W = MAX - 1. */
TDM_TEST(window_near_max_with_lateness_max)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(tumbling(1000, 0), TDM_AGG_COUNT, TDM_TIME_MAX, 1,
                       &s);
    push(op, "k", TDM_TIME_MAX - 5, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, TDM_TIME_MAX - 2));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 0);
    ASSERT_OK(tdm_winop_watermark(op, 0, TDM_TIME_MAX - 1));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_EQ(RES(&s, 0)->start, TDM_TIME_MAX - 807);
    ASSERT_EQ(RES(&s, 0)->end, TDM_TIME_MAX);
    ASSERT_EQ(RES(&s, 0)->time, TDM_TIME_MAX - 1);
    /* A very old record: its window [0,1000) has cleanup 999 + MAX,
     * which overflows to MAX: not late either (R4.1). */
    push(op, "k", 5, 1);
    push(op, "k", TDM_TIME_MAX - 100, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 3); /* [0,1000) + late */
    ASSERT_DBL_EQ(RES(&s, 2)->value, 2);
    ASSERT_EQ(count_type(&s, TDM_EVENT_LATE), 0);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(tdm_winop_live_windows(op), 2); /* never cleaned up */
    tdm_winop_destroy(op);
}

/* The bottom of the range: ts MIN + 1 with tumbling 1000 lands in the
 * window [MIN, MIN + 808) (start saturated, maxTimestamp MIN + 807). */
TDM_TEST(window_near_min)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(tumbling(1000, 0), TDM_AGG_COUNT, 0, 0, &s);
    push(op, "k", TDM_TIME_MIN + 1, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, TDM_TIME_MIN + 807));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_EQ(RES(&s, 0)->start, TDM_TIME_MIN);
    ASSERT_EQ(RES(&s, 0)->end, TDM_TIME_MIN + 808);
    tdm_winop_destroy(op);
}

/* ---- Sessions ---- */

/* R5.1: gap 3000.  Key a: 0 and 3000 touch -> [0,6000) sum 3.  Key b:
 * 0 and 3001 do not -> [0,3000) and [3001,6001). */
TDM_TEST(touching_sessions_merge)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(session(3000), TDM_AGG_SUM, 0, 0, &s);
    push(op, "a", 0, 1);
    push(op, "a", 3000, 2);
    push(op, "b", 0, 1);
    push(op, "b", 3001, 2);
    ASSERT_EQ(tdm_winop_live_windows(op), 3);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 3);
    int found = 0;
    for (int i = 0; i < 3; i++) {
        const out_ev *r = RES(&s, i);
        if (!strcmp(r->key, "a")) {
            ASSERT_EQ(r->start, 0);
            ASSERT_EQ(r->end, 6000);
            ASSERT_DBL_EQ(r->value, 3);
            found |= 1;
        } else if (r->start == 0) {
            ASSERT_EQ(r->end, 3000);
            ASSERT_DBL_EQ(r->value, 1);
            found |= 2;
        } else {
            ASSERT_EQ(r->start, 3001);
            ASSERT_EQ(r->end, 6001);
            found |= 4;
        }
    }
    ASSERT_EQ(found, 7);
    tdm_winop_destroy(op);
}

/* R5.3: gap 1000, lateness 0.  Session [5000,6000); W = 4500.  Record
 * 3500's own window [3500,4500) is late and touches nothing: dropped.
 * Record 4000's window [4000,5000) is late alone but touches the live
 * session: merged [4000,6000).  Record 3000 then touches that: merged
 * [3000,6000).  W 5999 fires sum 1+2+4 = 7. */
TDM_TEST(late_records_absorbed_by_live_sessions)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(session(1000), TDM_AGG_SUM, 0, 0, &s);
    push(op, "k", 5000, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 4500));
    push(op, "k", 3500, 100);
    ASSERT_EQ(tdm_winop_late_dropped(op), 1);
    push(op, "k", 4000, 2);
    push(op, "k", 3000, 4);
    ASSERT_EQ(tdm_winop_late_dropped(op), 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 5999));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_EQ(RES(&s, 0)->start, 3000);
    ASSERT_EQ(RES(&s, 0)->end, 6000);
    ASSERT_DBL_EQ(RES(&s, 0)->value, 7);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    tdm_winop_destroy(op);
}

/* R5.4: fired sessions stay mergeable until cleanup.  Gap 100, lateness
 * 1000.  Sessions [0,100) and [300,400) fire at W 399 (values 1 and 2);
 * record 150 (window [150,250), not late) merges with neither; record
 * 90 at W 399 bridges [0,100) and [150,250) into [0,250): maxTimestamp
 * 249 <= W, so it fires at once with everything, 1 + 4 + 8 = 13, as a
 * LATE update of the fired session. */
TDM_TEST(late_record_bridges_fired_sessions)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(session(100), TDM_AGG_SUM, 1000, 0, &s);
    push(op, "k", 0, 1);
    push(op, "k", 300, 2);
    ASSERT_OK(tdm_winop_watermark(op, 0, 399));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 2);
    push(op, "k", 150, 4); /* [150,250): maxTs 249 <= 399: fires 4 */
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 3);
    ASSERT_DBL_EQ(RES(&s, 2)->value, 4);
    push(op, "k", 90, 8);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 4);
    const out_ev *r = RES(&s, 3);
    ASSERT_EQ(r->start, 0);
    ASSERT_EQ(r->end, 250);
    ASSERT_DBL_EQ(r->value, 13);
    ASSERT_EQ(r->timing, TDM_PANE_LATE);
    ASSERT_EQ(r->update, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 2); /* [0,250), [300,400) */
    /* Cleanup of [0,250) at 249 + 1000; of [300,400) at 1399. */
    ASSERT_OK(tdm_winop_watermark(op, 0, 1249));
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1399));
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 4);
    tdm_winop_destroy(op);
}

/* A record inside an existing session changes nothing but the contents;
 * one equal to it likewise. */
TDM_TEST(record_inside_session_does_not_merge)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(session(1000), TDM_AGG_MAX, 0, 0, &s);
    push(op, "k", 0, 1);
    push(op, "k", 900, 5);  /* [0,1900) */
    push(op, "k", 500, 3);  /* [500,1500) inside */
    push(op, "k", 900, -2); /* [900,1900) equal to the end part */
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 1899));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_EQ(RES(&s, 0)->end, 1900);
    ASSERT_DBL_EQ(RES(&s, 0)->value, 5);
    tdm_winop_destroy(op);
}

/* ---- Aggregates ---- */

/* count, sum, min, max, avg, collect over the values 4, -1, 2.5, 4. */
TDM_TEST(builtin_aggregates)
{
    static const double vals[] = { 4, -1, 2.5, 4 };
    static const double want[] = { 4, 9.5, -1, 4, 9.5 / 4 };
    for (int kind = TDM_AGG_COUNT; kind <= TDM_AGG_COLLECT; kind++) {
        sink s = { .n = 0 };
        tdm_winop *op = mk(tumbling(100, 0), (tdm_agg_kind)kind, 0, 0, &s);
        for (int i = 0; i < 4; i++)
            push(op, "k", i, vals[i]);
        ASSERT_OK(tdm_winop_watermark(op, 0, 99));
        ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
        if (kind == TDM_AGG_COLLECT) {
            ASSERT_EQ(RES(&s, 0)->n_values, 4);
            ASSERT_DBL_EQ(RES(&s, 0)->values[0], -1);
            ASSERT_DBL_EQ(RES(&s, 0)->values[1], 2.5);
            ASSERT_DBL_EQ(RES(&s, 0)->values[2], 4);
            ASSERT_DBL_EQ(RES(&s, 0)->values[3], 4);
        } else {
            ASSERT_DBL_EQ(RES(&s, 0)->value, want[kind]);
        }
        tdm_winop_destroy(op);
    }
    tdm_aggregate *agg;
    ASSERT_ERR(tdm_aggregate_new((tdm_agg_kind)42, &agg), TDM_ERR_INVAL);
}

/* Collect with sessions, gap 10: [0,15) holds 3, 1 and [25,35) holds 2;
 * record 15's window [15,25) touches both, merging [0,35); the contents
 * are concatenated and sorted at firing: 1, 2, 3, 7. */
TDM_TEST(collect_merges_sessions)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(session(10), TDM_AGG_COLLECT, 0, 0, &s);
    push(op, "k", 0, 3);
    push(op, "k", 5, 1);  /* [0,15) */
    push(op, "k", 25, 2); /* [25,35) */
    ASSERT_EQ(tdm_winop_live_windows(op), 2);
    push(op, "k", 15, 7); /* [15,25) bridges: touches both */
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_EQ(RES(&s, 0)->start, 0);
    ASSERT_EQ(RES(&s, 0)->end, 35);
    ASSERT_EQ(RES(&s, 0)->n_values, 4);
    ASSERT_DBL_EQ(RES(&s, 0)->values[0], 1);
    ASSERT_DBL_EQ(RES(&s, 0)->values[3], 7);
    tdm_winop_destroy(op);
}

/* A user aggregate: sum of squares with a heap-allocated accumulator
 * (checks create/add/merge/destroy_acc pairing under sessions) that also
 * writes bytes. */
typedef struct sq_acc {
    double *sum; /* heap, to catch leaks and double frees */
} sq_acc;

typedef struct sq_ud {
    int creates, destroys, merges, ud_destroyed;
} sq_ud;

static void sq_create(void *ud, void *acc)
{
    sq_acc *a = acc;
    ((sq_ud *)ud)->creates++;
    a->sum = calloc(1, sizeof *a->sum);
}

static void sq_add(void *ud, void *acc, const tdm_record *rec)
{
    (void)ud;
    double v = tdm_record_value(rec);
    *((sq_acc *)acc)->sum += v * v;
}

static void sq_merge(void *ud, void *into, const void *from)
{
    ((sq_ud *)ud)->merges++;
    *((sq_acc *)into)->sum += *((const sq_acc *)from)->sum;
}

static void sq_result(void *ud, const void *acc, tdm_result_out *out)
{
    (void)ud;
    tdm_result_set_value(out, *((const sq_acc *)acc)->sum);
    ASSERT_OK(tdm_result_set_bytes(out, "sq", 2));
}

static void sq_destroy_acc(void *ud, void *acc)
{
    ((sq_ud *)ud)->destroys++;
    free(((sq_acc *)acc)->sum);
}

static void sq_destroy(void *ud)
{
    ((sq_ud *)ud)->ud_destroyed++;
}

static const tdm_aggregate_methods sq_methods = {
    .version = 1,
    .acc_size = sizeof(sq_acc),
    .create = sq_create,
    .add = sq_add,
    .merge = sq_merge,
    .result = sq_result,
    .destroy_acc = sq_destroy_acc,
    .destroy = sq_destroy,
};

/* Gap 10: sessions {1, 2} at 0..5 and {3} at 20 merge when 12 arrives
 * ([12,22) touches [0,15) and [20,30)): 1 + 4 + 9 + 16 = 30. */
TDM_TEST(custom_aggregate_with_sessions)
{
    sink s = { .n = 0 };
    sq_ud u;
    memset(&u, 0, sizeof u);
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new_custom(&sq_methods, &u, &agg, NULL, 0));
    tdm_winop *op = mk_agg(session(10), agg, 0, 0, 1, &s);
    push(op, "k", 0, 1);
    push(op, "k", 5, 2);
    push(op, "k", 20, 3);
    push(op, "k", 12, 4);
    ASSERT_EQ(u.creates, 2);
    ASSERT_EQ(u.merges, 1);
    ASSERT_EQ(u.destroys, 1);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_DBL_EQ(RES(&s, 0)->value, 30);
    ASSERT_EQ(RES(&s, 0)->n_bytes, 2);
    ASSERT_STR_EQ(RES(&s, 0)->bytes, "sq");
    ASSERT_EQ(u.destroys, 2); /* cleanup released the merged acc */
    tdm_winop_destroy(op);
    ASSERT_EQ(u.ud_destroyed, 1);
}

/* An aggregate without merge cannot serve sessions; configuration errors
 * name what is wrong. */
TDM_TEST(custom_aggregate_bad_configuration)
{
    sq_ud u;
    memset(&u, 0, sizeof u);
    tdm_aggregate_methods m = sq_methods;
    tdm_aggregate *agg;
    tdm_winop *op;
    char buf[128];
    m.merge = NULL;
    ASSERT_OK(tdm_aggregate_new_custom(&m, &u, &agg, NULL, 0));
    ASSERT_ERR(tdm_winop_new(session(10), NULL, agg, 1, NULL, collect, NULL,
                             &op, buf, sizeof buf), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "agg") != NULL);
    ASSERT_EQ(u.ud_destroyed, 1);
    m.add = NULL;
    ASSERT_ERR(tdm_aggregate_new_custom(&m, &u, &agg, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "add") != NULL);
    m = sq_methods;
    m.version = 0;
    ASSERT_ERR(tdm_aggregate_new_custom(&m, &u, &agg, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "version") != NULL);
    ASSERT_ERR(tdm_aggregate_new_window_fn(NULL, NULL, NULL, &agg),
               TDM_ERR_INVAL);
}

/* A full-window function sees records in arrival order, with their
 * payloads copied; an error skips that firing only. */
typedef struct wf_ud {
    int calls;
    int fail_next;
    char order[16];
} wf_ud;

static tdm_err wf(void *ud, const tdm_window_ctx *ctx, tdm_result_out *out)
{
    wf_ud *w = ud;
    w->calls++;
    if (w->fail_next) {
        w->fail_next = 0;
        return TDM_ERR_CALLBACK;
    }
    size_t n = tdm_window_ctx_count(ctx), len;
    tdm_time_ms st, en;
    ASSERT_EQ(tdm_window_ctx_window(ctx, &st, &en), 1);
    ASSERT_STR_EQ(tdm_window_ctx_key(ctx, &len), "k");
    for (size_t i = 0; i < n && i < 15; i++) {
        const tdm_record *r = tdm_window_ctx_record(ctx, i);
        const char *p = tdm_record_payload(r, &len);
        w->order[i] = len ? p[0] : '?';
        w->order[i + 1] = '\0';
    }
    ASSERT_TRUE(tdm_window_ctx_record(ctx, n) == NULL);
    tdm_result_set_value(out, (double)(en - st) + (double)n);
    return TDM_OK;
}

TDM_TEST(window_function_sees_records_in_order)
{
    sink s = { .n = 0 };
    wf_ud w;
    memset(&w, 0, sizeof w);
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new_window_fn(wf, &w, NULL, &agg));
    tdm_winop *op = mk_agg(tumbling(100, 0), agg, 50, 0, 1, &s);
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    const char *payloads = "cab";
    for (int i = 0; i < 3; i++) {
        char p = payloads[i];
        tdm_record_set(r, "k", 1, 30 - i * 10, i);
        tdm_record_set_payload(r, &p, 1);
        ASSERT_OK(tdm_winop_push(op, 0, r));
        p = 'X'; /* the operator copied the payload */
    }
    w.fail_next = 1;
    ASSERT_OK(tdm_winop_watermark(op, 0, 99));
    ASSERT_EQ(w.calls, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 0);
    /* A late record refires: 4 records, value 100 + 4. */
    tdm_record_set(r, "k", 1, 5, 0);
    tdm_record_set_payload(r, "d", 1);
    ASSERT_OK(tdm_winop_push(op, 0, r));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_DBL_EQ(RES(&s, 0)->value, 104);
    ASSERT_STR_EQ(w.order, "cabd");
    /* The skipped firing did not count as a pane. */
    ASSERT_EQ(RES(&s, 0)->pane, 0);
    tdm_record_destroy(r);
    tdm_winop_destroy(op);
}

/* ---- Records without timestamp, settings, end ---- */

TDM_TEST(record_without_timestamp_is_rejected)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(tumbling(100, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_ERR(push_ch(op, 0, "user-7", TDM_TIME_MIN, 1),
               TDM_ERR_NO_TIMESTAMP);
    ASSERT_TRUE(strstr(tdm_winop_errmsg(op), "user-7") != NULL);
    ASSERT_EQ(tdm_winop_bad_records(op), 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    push(op, "user-7", 5, 1); /* the operator goes on */
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    tdm_winop_destroy(op);
}

TDM_TEST(settings_only_before_input_and_state_after_end)
{
    sink s = { .n = 0 };
    char buf[128];
    tdm_winop *op = mk(tumbling(100, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_ERR(tdm_winop_set_allowed_lateness(op, -1, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "allowed_lateness_ms") != NULL);
    push(op, "k", 1, 1);
    ASSERT_ERR(tdm_winop_set_allowed_lateness(op, 5, buf, sizeof buf),
               TDM_ERR_STATE);
    ASSERT_ERR(tdm_winop_set_late_output(op, 1), TDM_ERR_STATE);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_ERR(push_ch(op, 0, "k", 1, 1), TDM_ERR_STATE);
    ASSERT_ERR(tdm_winop_watermark(op, 0, 5), TDM_ERR_STATE);
    ASSERT_ERR(tdm_winop_end(op), TDM_ERR_STATE);
    tdm_winop_destroy(op);
}

TDM_TEST(bad_operator_configuration)
{
    tdm_aggregate *agg;
    tdm_winop *op;
    char buf[128];
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_ERR(tdm_winop_new(tumbling(10, 0), NULL, agg, 0, NULL, collect,
                             NULL, &op, buf, sizeof buf), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "n_channels") != NULL);
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_ERR(tdm_winop_new(NULL, NULL, agg, 1, NULL, collect, NULL, &op,
                             buf, sizeof buf), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "asg") != NULL);
    ASSERT_ERR(tdm_winop_new(tumbling(10, 0), NULL, NULL, 1, NULL, collect,
                             NULL, &op, buf, sizeof buf), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "agg") != NULL);
    /* Processing time needs a clock. */
    tdm_assigner *a = tumbling(10, 0);
    ASSERT_OK(tdm_assigner_set_processing_time(a));
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_ERR(tdm_winop_new(a, NULL, agg, 1, NULL, collect, NULL, &op, buf,
                             sizeof buf), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "clk") != NULL);
    tdm_winop_destroy(NULL);
}

/* ---- State accounting ---- */

/* Three keys in two windows each: 6 live windows; after the watermark
 * passes everything, state falls back to 0 bytes (keys, timers, slots
 * and collect arrays are all released). */
TDM_TEST(state_bytes_follow_live_windows)
{
    sink s = { .n = 0 };
    tdm_winop *op = mk(tumbling(100, 0), TDM_AGG_COLLECT, 0, 0, &s);
    ASSERT_EQ(tdm_winop_state_bytes(op), 0);
    push(op, "a", 1, 1);
    int64_t one = tdm_winop_state_bytes(op);
    ASSERT_TRUE(one > 0);
    push(op, "b", 1, 1);
    push(op, "c", 1, 1);
    push(op, "a", 101, 1);
    push(op, "b", 101, 1);
    push(op, "c", 101, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 6);
    /* Slots, timers and contents grow with the windows; keys (3) and
     * timer times (2) are shared, so six windows cost over 4 x one. */
    ASSERT_TRUE(tdm_winop_state_bytes(op) > 4 * one);
    ASSERT_TRUE(tdm_winop_state_bytes(op) < 6 * one);
    ASSERT_OK(tdm_winop_watermark(op, 0, 99));
    ASSERT_EQ(tdm_winop_live_windows(op), 3);
    ASSERT_OK(tdm_winop_watermark(op, 0, 199));
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_EQ(tdm_winop_state_bytes(op), 0);
    tdm_winop_destroy(op);
}

/* ---- Allocation failures ---- */

/* Replays a session + collect + lateness scenario with the n-th
 * allocation failing, for every n until the run completes: every call
 * returns TDM_OK or TDM_ERR_NOMEM, nothing crashes, and (under ASan)
 * nothing leaks. */
static int run_with_failure(long n)
{
    sink s = { .n = 0 };
    tdm_assigner *a;
    tdm_aggregate *agg;
    tdm_winop *op = NULL;
    int failures = 0;
    if (tdm_assigner_new_session(10, &a, NULL, 0) != TDM_OK)
        return 1;
    if (tdm_aggregate_new(TDM_AGG_COLLECT, &agg) != TDM_OK) {
        tdm_assigner_destroy(a);
        return 1;
    }
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    tdm__alloc_fail_after(n);
    tdm_err err = tdm_winop_new(a, NULL, agg, 2, NULL, collect, &s, &op,
                                NULL, 0);
    if (err != TDM_OK) {
        ASSERT_ERR(err, TDM_ERR_NOMEM);
        tdm__alloc_fail_after(0);
        tdm_record_destroy(r);
        return 1;
    }
    err = tdm_winop_set_allowed_lateness(op, 20, NULL, 0);
    ASSERT_OK(err);
    static const tdm_time_ms ts[] = { 0, 5, 30, 12, 50, 45, 100, 3 };
    for (int i = 0; i < 8; i++) {
        char key[2] = { (char)('a' + i % 3), 0 };
        tdm_record_set(r, key, 1, ts[i], i);
        err = tdm_winop_push(op, 0, r);
        if (err != TDM_OK) {
            ASSERT_ERR(err, TDM_ERR_NOMEM);
            failures++;
        }
        if (i == 4) {
            err = tdm_winop_watermark(op, 0, 40);
            if (err == TDM_OK)
                err = tdm_winop_watermark(op, 1, 40);
            if (err != TDM_OK) {
                ASSERT_ERR(err, TDM_ERR_NOMEM);
                failures++;
            }
        }
    }
    err = tdm_winop_end(op);
    if (err != TDM_OK) {
        ASSERT_ERR(err, TDM_ERR_NOMEM);
        failures++;
    }
    tdm__alloc_fail_after(0);
    tdm_winop_destroy(op);
    tdm_record_destroy(r);
    return failures;
}

TDM_TEST(allocation_failures_are_reported_not_fatal)
{
    long n = 1;
    while (run_with_failure(n) != 0 && n < 500)
        n++;
    ASSERT_TRUE(n > 3);
    ASSERT_TRUE(n < 500);
}
