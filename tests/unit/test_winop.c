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
#include "state/ckpt_codec.h"
#include "state/wstore.h"
#include "window/win.h"
#include "testhooks.h"

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
    ASSERT_OK(tdm_winop_new(a, NULL, agg, channels, NULL, collect, s, &op, buf,
                            sizeof buf));
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

static tdm_err push_ch(tdm_winop *op, int ch, const char *key, tdm_time_ms ts,
                       double v)
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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

/* F5: a late record is counted as made late by a fallback watermark
 * when the data watermark alone would have kept its last window open.
 * Sliding 2000/1000, lateness 0, watermark lifted to 2999 while the data
 * is at 2500: 1500's windows [0,2000) and [1000,3000) are both behind
 * 2999 (late); [1000,3000) ends after 2500: made late by the fallback.
 * 500's last window [0,2000) is behind 2500 too: late anyway.  Not
 * tracked (the default): nothing is counted. */
TDM_TEST(late_by_fallback_counts_against_the_last_window)
{
    sink s = {.n = 0};
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_sliding(2000, 1000, 0, &a, NULL, 0));
    tdm_winop *op = mk(a, TDM_AGG_COUNT, 0, 1, &s);
    ASSERT_OK(tdm_winop_watermark(op, 0, 2999));
    push(op, "k", 1500, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_LATE), 1);
    ASSERT_EQ(tdm__winop_late_by_fallback(op), 0);
    tdm__winop_set_data_watermark(op, 2500);
    push(op, "k", 1500, 1);
    push(op, "k", 500, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_LATE), 3);
    ASSERT_EQ(tdm__winop_late_by_fallback(op), 1);
    tdm__winop_set_data_watermark(op, 2999);
    push(op, "k", 1500, 1);
    ASSERT_EQ(tdm__winop_late_by_fallback(op), 1);
    tdm_winop_destroy(op);
}

/* ---- Allowed lateness changed while the operator runs ---- */

/* L3, L4, L5 (winop_lateness.c), on the lean path and the general one:
 * tumbling 10 ms counts, lateness 0, late output on.
 *   k@1 k@5, wm 12: [0,10) fires 2 and is cleaned up.   k@15.
 *   raise to 10: closed horizon 12 - 0 = 12, so [0,10) (max 9) stays
 *   closed: k@3 (3 + 10 > 12, not late itself) goes to the late output.
 *   wm 25: [10,20) fires 1 and lives until 19 + 10 = 29.
 *   k@16: refire, 2, an update.
 *   lower to 0: 19 <= 25, [10,20) is cleaned up now; k@17 is late. */
static void lateness_raise_then_lower(bool general)
{
    sink s = {.n = 0};
    char buf[160];
    tdm_winop *op = mk(tumbling(10, 0), TDM_AGG_COUNT, 0, 1, &s);
    if (general)
        ASSERT_OK(tdm__winop_disable_lean(op));
    push(op, "k", 1, 1);
    push(op, "k", 5, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 12));
    push(op, "k", 15, 1);
    ASSERT_OK(tdm_winop_set_allowed_lateness(op, 10, buf, sizeof buf));
    ASSERT_EQ(tdm_winop_allowed_lateness(op), 10);
    push(op, "k", 3, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_LATE), 1);
    ASSERT_EQ(nth(&s, TDM_EVENT_LATE, 0)->rec_ts, 3);
    ASSERT_OK(tdm_winop_watermark(op, 0, 25));
    push(op, "k", 16, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 3);
    ASSERT_DBL_EQ(RES(&s, 0)->value, 2);
    ASSERT_EQ(RES(&s, 1)->start, 10);
    ASSERT_DBL_EQ(RES(&s, 1)->value, 1);
    ASSERT_DBL_EQ(RES(&s, 2)->value, 2);
    ASSERT_TRUE(RES(&s, 2)->update);
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    ASSERT_OK(tdm_winop_set_allowed_lateness(op, 0, buf, sizeof buf));
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    push(op, "k", 17, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_LATE), 2);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 3);
    ASSERT_EQ(tdm__winop_keys(op), 0);
    tdm_winop_destroy(op);
}

TDM_TEST(lateness_raised_keeps_closed_lowered_cleans_up)
{
    lateness_raise_then_lower(false);
    lateness_raise_then_lower(true);
}

/* L2: modes without a cleanup time per window refuse a live change and
 * name themselves; before the first input any value goes. */
TDM_TEST(lateness_live_refused_where_windows_keep_no_cleanup_time)
{
    sink s = {.n = 0};
    char buf[200];
    tdm_winop *op = mk(session(10), TDM_AGG_COUNT, 0, 0, &s);
    push(op, "k", 1, 1);
    ASSERT_ERR(tdm_winop_set_allowed_lateness(op, 5, buf, sizeof buf),
               TDM_ERR_UNSUPPORTED);
    ASSERT_TRUE(strstr(buf, "session") != NULL);
    ASSERT_EQ(tdm_winop_allowed_lateness(op), 0);
    tdm_winop_destroy(op);
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_sliding(20, 10, 0, &a, NULL, 0));
    op = mk(a, TDM_AGG_COUNT, 0, 0, &s);
    push(op, "k", 1, 1);
    ASSERT_ERR(tdm_winop_set_allowed_lateness(op, 5, buf, sizeof buf),
               TDM_ERR_UNSUPPORTED);
    ASSERT_TRUE(strstr(buf, "sliced") != NULL);
    tdm_winop_destroy(op);
    op = mk(session(10), TDM_AGG_COUNT, 3, 0, &s); /* general, merging */
    push(op, "k", 1, 1);
    ASSERT_ERR(tdm_winop_set_allowed_lateness(op, 5, buf, sizeof buf),
               TDM_ERR_UNSUPPORTED);
    ASSERT_TRUE(strstr(buf, "merging") != NULL);
    tdm_winop_destroy(op);
}

/* L6: two subtasks snapshotted under different values (a live change
 * reached one before the checkpoint) restore into one operator, which
 * takes the first blob's value and gives the second blob's windows
 * cleanup timers at it: b's [10,20), written with lateness 2 (cleanup
 * 21), lives until 29 - it refires at 25 on b@16 - and is cleaned up at
 * 30, leaving nothing behind. */
static uint8_t *snap_of(const tdm_winop *op, size_t *len)
{
    tdm__enc e;
    uint8_t *blob = NULL;
    tdm__enc_init(&e);
    ASSERT_OK(tdm__winop_snapshot(op, &e, NULL, NULL, 0, 0));
    ASSERT_OK(tdm__enc_finish(&e, &blob, len));
    return blob;
}

TDM_TEST(lateness_restored_from_blobs_written_under_two_values)
{
    sink s = {.n = 0};
    tdm_winop *a = mk(tumbling(10, 0), TDM_AGG_COUNT, 10, 0, &s);
    tdm_winop *b = mk(tumbling(10, 0), TDM_AGG_COUNT, 2, 0, &s);
    tdm_winop *m = mk(tumbling(10, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_OK(tdm__winop_disable_lean(a));
    ASSERT_OK(tdm__winop_disable_lean(b));
    ASSERT_OK(tdm__winop_disable_lean(m));
    push(a, "a", 5, 1);
    push(b, "b", 15, 1);
    ASSERT_OK(tdm_winop_watermark(a, 0, 12));
    ASSERT_OK(tdm_winop_watermark(b, 0, 12));
    size_t la, lb;
    uint8_t *ba = snap_of(a, &la), *bb = snap_of(b, &lb);
    tdm__dec d;
    tdm__dec_init(&d, ba, la);
    ASSERT_OK(tdm__winop_restore(m, &d, 0, 0));
    tdm__dec_init(&d, bb, lb);
    ASSERT_OK(tdm__winop_restore(m, &d, 0, 0));
    ASSERT_EQ(tdm_winop_allowed_lateness(m), 10);
    s.n = 0;
    ASSERT_OK(tdm_winop_watermark(m, 0, 25));
    push(m, "b", 16, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 2);
    ASSERT_DBL_EQ(RES(&s, 1)->value, 2);
    ASSERT_OK(tdm_winop_watermark(m, 0, 30));
    ASSERT_EQ(tdm_winop_live_windows(m), 0);
    ASSERT_EQ(tdm__winop_keys(m), 0);
    tdm__free(ba);
    tdm__free(bb);
    tdm_winop_destroy(a);
    tdm_winop_destroy(b);
    tdm_winop_destroy(m);
}

/* L6: a restoring operator takes the lateness and the closed horizon of
 * the blobs that cover its key groups only: at the same parallelism
 * subtask 1 restores old subtask 0's blob first (none of its groups)
 * and must not take its raised value and horizon. */
static int group_of(void *ud, const char *key, size_t len)
{
    (void)ud;
    (void)len;
    return key[0] == 'a' ? 0 : 1;
}

TDM_TEST(lateness_restored_from_the_blobs_of_its_own_key_groups)
{
    sink s = {.n = 0};
    char buf[160];
    tdm_winop *a = mk(tumbling(10, 0), TDM_AGG_COUNT, 5, 0, &s);
    tdm_winop *b = mk(tumbling(10, 0), TDM_AGG_COUNT, 5, 0, &s);
    tdm_winop *m = mk(tumbling(10, 0), TDM_AGG_COUNT, 5, 0, &s);
    push(a, "a", 12, 1);
    ASSERT_OK(tdm_winop_watermark(a, 0, 20));
    ASSERT_OK(tdm_winop_set_allowed_lateness(a, 10, buf, sizeof buf));
    push(b, "b", 12, 1);
    ASSERT_OK(tdm_winop_watermark(b, 0, 27)); /* [10,20) cleaned at 24 */
    tdm__enc e;
    uint8_t *ba = NULL, *bb = NULL;
    size_t la, lb;
    tdm__enc_init(&e);
    ASSERT_OK(tdm__winop_snapshot(a, &e, group_of, NULL, 0, 0));
    ASSERT_OK(tdm__enc_finish(&e, &ba, &la));
    tdm__enc_init(&e);
    ASSERT_OK(tdm__winop_snapshot(b, &e, group_of, NULL, 1, 1));
    ASSERT_OK(tdm__enc_finish(&e, &bb, &lb));
    tdm__dec d;
    tdm__dec_init(&d, ba, la);
    ASSERT_OK(tdm__winop_restore(m, &d, 1, 1));
    tdm__dec_init(&d, bb, lb);
    ASSERT_OK(tdm__winop_restore(m, &d, 1, 1));
    ASSERT_EQ(tdm_winop_allowed_lateness(m), 5);
    ASSERT_EQ(m->closed_max, TDM_TIME_MIN);
    tdm__free(ba);
    tdm__free(bb);
    tdm_winop_destroy(a);
    tdm_winop_destroy(b);
    tdm_winop_destroy(m);
}

/* ---- Window starts ---- */

/* R1.2: size 7 offset 3: -10 -> [-11,-4), 2 -> [-4,3), 3 -> [3,10). */
TDM_TEST(negative_timestamps_and_offsets)
{
    sink s = {.n = 0};
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
    sink s = {.n = 0};
    tdm_winop *op = mk(tumbling(1000, 0), TDM_AGG_COUNT, TDM_TIME_MAX, 1, &s);
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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
    static const double vals[] = {4, -1, 2.5, 4};
    static const double want[] = {4, 9.5, -1, 4, 9.5 / 4};
    for (int kind = TDM_AGG_COUNT; kind <= TDM_AGG_COLLECT; kind++) {
        sink s = {.n = 0};
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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
                             &op, buf, sizeof buf),
               TDM_ERR_INVAL);
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
    sink s = {.n = 0};
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
    sink s = {.n = 0};
    tdm_winop *op = mk(tumbling(100, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_ERR(push_ch(op, 0, "user-7", TDM_TIME_MIN, 1), TDM_ERR_NO_TIMESTAMP);
    ASSERT_TRUE(strstr(tdm_winop_errmsg(op), "user-7") != NULL);
    ASSERT_EQ(tdm_winop_bad_records(op), 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    push(op, "user-7", 5, 1); /* the operator goes on */
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    tdm_winop_destroy(op);
}

TDM_TEST(settings_only_before_input_and_state_after_end)
{
    sink s = {.n = 0};
    char buf[128];
    tdm_winop *op = mk(tumbling(100, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_ERR(tdm_winop_set_allowed_lateness(op, -1, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "allowed_lateness_ms") != NULL);
    push(op, "k", 1, 1);
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
    ASSERT_ERR(tdm_winop_new(tumbling(10, 0), NULL, agg, 0, NULL, collect, NULL,
                             &op, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "n_channels") != NULL);
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_ERR(tdm_winop_new(NULL, NULL, agg, 1, NULL, collect, NULL, &op, buf,
                             sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "asg") != NULL);
    ASSERT_ERR(tdm_winop_new(tumbling(10, 0), NULL, NULL, 1, NULL, collect,
                             NULL, &op, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "agg") != NULL);
    /* Processing time needs a clock. */
    tdm_assigner *a = tumbling(10, 0);
    ASSERT_OK(tdm_assigner_set_processing_time(a));
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_ERR(tdm_winop_new(a, NULL, agg, 1, NULL, collect, NULL, &op, buf,
                             sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "clk") != NULL);
    tdm_winop_destroy(NULL);
}

/* ---- State accounting ---- */

/* Three keys in two windows each: 6 live windows; after the watermark
 * passes everything, state falls back to 0 bytes (keys, timers, slots
 * and collect arrays are all released). */
TDM_TEST(state_bytes_follow_live_windows)
{
    sink s = {.n = 0};
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
    sink s = {.n = 0};
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
    tdm_err err =
        tdm_winop_new(a, NULL, agg, 2, NULL, collect, &s, &op, NULL, 0);
    if (err != TDM_OK) {
        ASSERT_ERR(err, TDM_ERR_NOMEM);
        tdm__alloc_fail_after(0);
        tdm_record_destroy(r);
        return 1;
    }
    err = tdm_winop_set_allowed_lateness(op, 20, NULL, 0);
    ASSERT_OK(err);
    static const tdm_time_ms ts[] = {0, 5, 30, 12, 50, 45, 100, 3};
    for (int i = 0; i < 8; i++) {
        char key[2] = {(char)('a' + i % 3), 0};
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

/* ====================================================================== */
/* The lean path (window store)                                            */
/* ====================================================================== */

/* Tumbling and sliding event-time windows with the event-time trigger
 * and count/sum/min/max/avg take the lean path (state/wstore.h); every
 * other operator the general one.  The tests below check the lean path
 * by hand-derived cases and against the general path, which the model
 * test and the conformance vectors check against the rulebook. */

static bool is_lean(const tdm_winop *op)
{
    return op->lean;
}

/* Which configurations are lean: event-time tumbling/sliding with the
 * default or an explicit event-time trigger and a built-in numeric
 * aggregate; not collect, sessions, processing time, other triggers. */
TDM_TEST(lean_path_selection)
{
    sink s = {.n = 0};
    tdm_winop *op = mk(tumbling(10, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_TRUE(is_lean(op));
    tdm_winop_destroy(op);
    op = mk(tumbling(10, 0), TDM_AGG_COLLECT, 0, 0, &s);
    ASSERT_TRUE(!is_lean(op));
    tdm_winop_destroy(op);
    op = mk(session(10), TDM_AGG_SUM, 0, 0, &s);
    ASSERT_TRUE(!is_lean(op));
    tdm_winop_destroy(op);
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_sliding(10, 5, 0, &a, NULL, 0));
    op = mk(a, TDM_AGG_AVG, 0, 0, &s);
    ASSERT_TRUE(is_lean(op));
    tdm_winop_destroy(op);
    a = tumbling(10, 0);
    ASSERT_OK(tdm_assigner_set_processing_time(a));
    tdm_clock *clk;
    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_OK(tdm_winop_new(a, NULL, agg, 1, clk, collect, &s, &op, NULL, 0));
    ASSERT_TRUE(!is_lean(op));
    tdm_winop_destroy(op);
    tdm_trigger *t;
    ASSERT_OK(tdm_trigger_new_event_time(&t));
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_MIN, &agg));
    ASSERT_OK(tdm_winop_new(tumbling(10, 0), t, agg, 1, NULL, collect, &s, &op,
                            NULL, 0));
    ASSERT_TRUE(is_lean(op));
    /* The test hook only works before the first input. */
    push(op, "k", 1, 1);
    ASSERT_ERR(tdm__winop_disable_lean(op), TDM_ERR_STATE);
    tdm_winop_destroy(op);
    ASSERT_OK(tdm_trigger_new_count(2, &t, NULL, 0));
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_MIN, &agg));
    ASSERT_OK(tdm_winop_new(tumbling(10, 0), t, agg, 1, NULL, collect, &s, &op,
                            NULL, 0));
    ASSERT_TRUE(!is_lean(op));
    tdm_winop_destroy(op);
    tdm_clock_destroy(clk);
}

/* Tumbling 100, lateness 50, count, late output on.  Derivation (R2-R4):
 * "a" at 10, 20 and "b" at 30 go to [0,100); "a" at 150 to [100,200).
 * W 99 fires [0,100) for a (2) then b (1), in the order their windows
 * were made, ON_TIME, pane 0; the windows stay until 99 + 50.  "a" at 40
 * (W 99 < 149) refires a's window at once: 3, LATE, pane 1, update.  "c"
 * at 60 makes a new window that fires at once: 1, ON_TIME, pane 0 (its
 * first firing).  W 149 cleans [0,100) up (silent): 1 window left; "a"
 * at 70 is then late (cleanup 149 <= 149) and goes to the late output.
 * W 199 fires [100,200) for a: 1; it is cleaned up at W 249. */
TDM_TEST(lean_tumbling_by_hand)
{
    sink s = {.n = 0};
    tdm_winop *op = mk(tumbling(100, 0), TDM_AGG_COUNT, 50, 1, &s);
    ASSERT_TRUE(is_lean(op));
    push(op, "a", 10, 1);
    push(op, "a", 20, 1);
    push(op, "b", 30, 1);
    push(op, "a", 150, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 3);
    ASSERT_OK(tdm_winop_watermark(op, 0, 99));
    ASSERT_EQ(s.n, 3);
    ASSERT_STR_EQ(RES(&s, 0)->key, "a");
    ASSERT_DBL_EQ(RES(&s, 0)->value, 2);
    ASSERT_EQ(RES(&s, 0)->start, 0);
    ASSERT_EQ(RES(&s, 0)->end, 100);
    ASSERT_EQ(RES(&s, 0)->time, 99);
    ASSERT_EQ(RES(&s, 0)->timing, TDM_PANE_ON_TIME);
    ASSERT_EQ(RES(&s, 0)->pane, 0);
    ASSERT_EQ(RES(&s, 0)->update, 0);
    ASSERT_STR_EQ(RES(&s, 1)->key, "b");
    ASSERT_DBL_EQ(RES(&s, 1)->value, 1);
    ASSERT_EQ(s.ev[2].type, TDM_EVENT_WATERMARK);
    ASSERT_EQ(tdm_winop_live_windows(op), 3);
    push(op, "a", 40, 1);
    ASSERT_EQ(s.n, 4);
    ASSERT_DBL_EQ(RES(&s, 2)->value, 3);
    ASSERT_EQ(RES(&s, 2)->timing, TDM_PANE_LATE);
    ASSERT_EQ(RES(&s, 2)->pane, 1);
    ASSERT_EQ(RES(&s, 2)->update, 1);
    push(op, "c", 60, 1);
    ASSERT_EQ(s.n, 5);
    ASSERT_STR_EQ(RES(&s, 3)->key, "c");
    ASSERT_EQ(RES(&s, 3)->timing, TDM_PANE_ON_TIME);
    ASSERT_EQ(RES(&s, 3)->pane, 0);
    ASSERT_EQ(RES(&s, 3)->update, 0);
    ASSERT_EQ(tdm_winop_live_windows(op), 4);
    ASSERT_OK(tdm_winop_watermark(op, 0, 149));
    ASSERT_EQ(s.n, 6); /* the watermark only */
    ASSERT_EQ(tdm_winop_live_windows(op), 1);
    push(op, "a", 70, 5);
    ASSERT_EQ(tdm_winop_late_emitted(op), 1);
    const out_ev *l = nth(&s, TDM_EVENT_LATE, 0);
    ASSERT_STR_EQ(l->key, "a");
    ASSERT_EQ(l->rec_ts, 70);
    ASSERT_DBL_EQ(l->rec_value, 5);
    ASSERT_OK(tdm_winop_watermark(op, 0, 199));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 5);
    ASSERT_EQ(RES(&s, 4)->start, 100);
    ASSERT_DBL_EQ(RES(&s, 4)->value, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 1); /* until 199 + 50 */
    ASSERT_OK(tdm_winop_watermark(op, 0, 249));
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_EQ(tdm_winop_state_bytes(op), 0);
    tdm_winop_destroy(op);
}

/* Sliding 30/10, avg (one inline window per key, so most windows of a
 * key spill): key "k" at 25 with value 3 is in [0,30), [10,40),
 * [20,50); at 35 with value 6 in [10,40), [20,50), [30,60).  Results by
 * window end at the end of input: [0,30) 3, [10,40) 4.5, [20,50) 4.5,
 * [30,60) 6.  A long key (over 16 bytes, kept on the heap) and the empty
 * key get the same windows. */
TDM_TEST(lean_sliding_avg_spills)
{
    static const char *const keys[] = {"k", "a-key-longer-than-16-bytes", ""};
    static const double want[] = {3, 4.5, 4.5, 6};
    for (int k = 0; k < 3; k++) {
        sink s = {.n = 0};
        tdm_assigner *a;
        ASSERT_OK(tdm_assigner_new_sliding(30, 10, 0, &a, NULL, 0));
        tdm_winop *op = mk(a, TDM_AGG_AVG, 0, 0, &s);
        ASSERT_TRUE(is_lean(op));
        push(op, keys[k], 25, 3);
        push(op, keys[k], 35, 6);
        ASSERT_EQ(tdm_winop_live_windows(op), 4);
        ASSERT_EQ(op->ws->n_spilled, 3);
        ASSERT_OK(tdm_winop_end(op));
        ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 4);
        for (int i = 0; i < 4; i++) {
            ASSERT_EQ(RES(&s, i)->start, 10 * i);
            ASSERT_EQ(RES(&s, i)->end, 10 * i + 30);
            ASSERT_DBL_EQ(RES(&s, i)->value, want[i]);
            size_t n = strlen(keys[k]);
            ASSERT_TRUE(!memcmp(RES(&s, i)->key, keys[k], n > 15 ? 15 : n));
        }
        ASSERT_EQ(tdm_winop_live_windows(op), 0);
        ASSERT_EQ(op->ws->n_spilled, 0);
        ASSERT_EQ(tdm_winop_state_bytes(op), 0);
        tdm_winop_destroy(op);
    }
}

/* Pane indexes beyond 32 bits: an inline window whose firing count is
 * set to 2^32 - 2 moves to the spill table before its count wraps, and
 * its pane indexes go on 2^32 - 2, 2^32 - 1, 2^32, 2^32 + 1 (each a LATE
 * update: one firing per accepted late record, R4.5). */
TDM_TEST(lean_pane_index_passes_32_bits)
{
    sink s = {.n = 0};
    tdm_winop *op = mk(tumbling(100, 0), TDM_AGG_SUM, 1000, 0, &s);
    push(op, "k", 1, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 99)); /* pane 0 */
    tdm__wstore *ws = op->ws;
    uint64_t h = tdm__ws_hash("k", 1);
    uint32_t kid = tdm__ws_find(ws, "k", 1, h);
    ASSERT_TRUE(kid != TDM__WS_NONE);
    tdm__ws_cell *c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, kid), kid,
                                      tdm__ws_span_find(ws, 0, 100));
    ASSERT_TRUE(c && !(c->span & TDM__WS_SPILL_BIT));
    c->fires = UINT32_MAX - 1;
    for (int i = 0; i < 4; i++)
        push(op, "k", 2, 1);
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 5);
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(RES(&s, i + 1)->pane, (int64_t)UINT32_MAX - 1 + i);
        ASSERT_EQ(RES(&s, i + 1)->timing, TDM_PANE_LATE);
        ASSERT_EQ(RES(&s, i + 1)->update, 1);
        ASSERT_DBL_EQ(RES(&s, i + 1)->value, 2 + i);
    }
    ASSERT_EQ(ws->n_spilled, 1);
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_EQ(ws->n_spilled, 0);
    tdm_winop_destroy(op);
}

/* Count state per live window: 50 keys with two windows each cost at
 * most 64 bytes per window (a 64-byte key entry holds both windows; the
 * rest is index words, span member ids and two spans). */
TDM_TEST(lean_state_bytes_per_window)
{
    sink s = {.n = 0};
    tdm_winop *op = mk(tumbling(100, 0), TDM_AGG_COUNT, 0, 0, &s);
    char key[8];
    for (int k = 0; k < 50; k++) {
        snprintf(key, sizeof key, "key%d", k);
        push(op, key, 1, 1);
        push(op, key, 101, 1);
    }
    ASSERT_EQ(tdm_winop_live_windows(op), 100);
    int64_t b = tdm_winop_state_bytes(op);
    ASSERT_TRUE(b > 0);
    ASSERT_TRUE(b <= 64 * 100);
    ASSERT_OK(tdm_winop_watermark(op, 0, 99));
    ASSERT_EQ(tdm_winop_live_windows(op), 50);
    ASSERT_TRUE(tdm_winop_state_bytes(op) < b);
    ASSERT_OK(tdm_winop_watermark(op, 0, 199));
    ASSERT_EQ(tdm_winop_state_bytes(op), 0);
    tdm_winop_destroy(op);
}

/* ---- The sliced mode (winop_slice.c) ---- */

static tdm_assigner *sliding(tdm_time_ms size, tdm_time_ms slide,
                             tdm_time_ms off)
{
    tdm_assigner *a;
    ASSERT_OK(tdm_assigner_new_sliding(size, slide, off, &a, NULL, 0));
    return a;
}

/* Which operators are sliced: lean sliding counts without lateness whose
 * windows are 2 to 64 slices of gcd(size, slide). */
TDM_TEST(sliced_mode_selection)
{
    sink s = {.n = 0};
    tdm_winop *op = mk(sliding(10, 2, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_TRUE(op->lean && op->lean_sliced);
    ASSERT_EQ(op->slice_len, 2);
    tdm_winop_destroy(op);
    op = mk(sliding(10, 4, 1), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_TRUE(op->lean_sliced); /* slices of 2, offset 1 */
    ASSERT_EQ(op->slice_len, 2);
    ASSERT_EQ(op->slice_off, 1);
    tdm_winop_destroy(op);
    op = mk(sliding(10, 2, 0), TDM_AGG_COUNT, 5, 0, &s); /* lateness */
    ASSERT_TRUE(op->lean && !op->lean_sliced);
    tdm_winop_destroy(op);
    op = mk(sliding(10, 2, 0), TDM_AGG_SUM, 0, 0, &s);
    ASSERT_TRUE(op->lean && !op->lean_sliced);
    tdm_winop_destroy(op);
    op = mk(sliding(10, 10, 0), TDM_AGG_COUNT, 0, 0, &s); /* one slice */
    ASSERT_TRUE(op->lean && !op->lean_sliced);
    tdm_winop_destroy(op);
    op = mk(sliding(5, 10, 0), TDM_AGG_COUNT, 0, 0, &s); /* gaps */
    ASSERT_TRUE(op->lean && !op->lean_sliced);
    tdm_winop_destroy(op);
    op = mk(sliding(7, 10, 0), TDM_AGG_COUNT, 0, 0, &s); /* 7 slices */
    ASSERT_TRUE(op->lean_sliced);
    tdm_winop_destroy(op);
    op = mk(sliding(65, 1, 0), TDM_AGG_COUNT, 0, 0, &s); /* 65 slices */
    ASSERT_TRUE(op->lean && !op->lean_sliced);
    tdm_winop_destroy(op);
    op = mk(tumbling(10, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_TRUE(op->lean && !op->lean_sliced);
    tdm_winop_destroy(op);
    /* The test hook: before input only. */
    op = mk(sliding(10, 2, 0), TDM_AGG_COUNT, 0, 0, &s);
    push(op, "k", 1, 1);
    ASSERT_ERR(tdm__winop_disable_slicing(op), TDM_ERR_STATE);
    ASSERT_TRUE(op->lean_sliced);
    tdm_winop_destroy(op);
}

/* Size 10, slide 5 (slices of 5).  a@3 is in [-5,5) and [0,10); b@7 in
 * [0,10) and [5,15); a@8 adds a's second slice, new to [5,15) only.
 * W 4 fires [-5,5): a 1.  W 9 fires [0,10): a 2, b 1 (a came first).
 * W 14 fires [5,15): b 1, a 1 (b came to it first).  A record for a
 * fired slice whose windows are all late is late; state goes with the
 * last window of each slice. */
TDM_TEST(sliced_by_hand)
{
    sink s = {.n = 0};
    tdm_winop *op = mk(sliding(10, 5, 0), TDM_AGG_COUNT, 0, 1, &s);
    ASSERT_TRUE(op->lean_sliced);
    push(op, "a", 3, 1);
    push(op, "b", 7, 1);
    push(op, "a", 8, 1);
    /* (key, window) pairs: a in 3 windows, b in 2; cells: 3 slices. */
    ASSERT_EQ(tdm_winop_live_windows(op), 5);
    ASSERT_EQ(op->ws->n_cells, 3);
    ASSERT_EQ(tdm__winop_keys(op), 2);
    int hs;
    int64_t el;
    tdm__winop_probe(op, "a", 1, 0, 10, &hs, &el);
    ASSERT_EQ(hs, 1);
    ASSERT_EQ(el, 2);
    tdm__winop_probe(op, "b", 1, -5, 5, &hs, &el);
    ASSERT_EQ(hs, 0);
    ASSERT_OK(tdm_winop_watermark(op, 0, 4));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 1);
    ASSERT_TRUE(!strcmp(RES(&s, 0)->key, "a"));
    ASSERT_EQ(RES(&s, 0)->start, -5);
    ASSERT_EQ(RES(&s, 0)->value, 1);
    ASSERT_EQ(RES(&s, 0)->timing, TDM_PANE_ON_TIME);
    ASSERT_EQ(RES(&s, 0)->time, 4);
    ASSERT_EQ(op->ws->n_cells, 3); /* slice [0,5) is still in [0,10) */
    push(op, "c", 2, 1);           /* [0,10) is not late yet: counted */
    ASSERT_OK(tdm_winop_watermark(op, 0, 9));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 4);
    ASSERT_TRUE(!strcmp(RES(&s, 1)->key, "a"));
    ASSERT_EQ(RES(&s, 1)->value, 2);
    ASSERT_TRUE(!strcmp(RES(&s, 2)->key, "b"));
    ASSERT_EQ(RES(&s, 2)->value, 1);
    ASSERT_TRUE(!strcmp(RES(&s, 3)->key, "c"));
    ASSERT_EQ(op->ws->n_cells, 2); /* slice [0,5) went with [0,10) */
    push(op, "a", 4, 1);           /* every window of [0,5) fired: late */
    ASSERT_EQ(count_type(&s, TDM_EVENT_LATE), 1);
    push(op, "b", 6, 1);
    ASSERT_OK(tdm_winop_watermark(op, 0, 14));
    ASSERT_EQ(count_type(&s, TDM_EVENT_RESULT), 6);
    ASSERT_TRUE(!strcmp(RES(&s, 4)->key, "b"));
    ASSERT_EQ(RES(&s, 4)->value, 2);
    ASSERT_EQ(RES(&s, 4)->start, 5);
    ASSERT_TRUE(!strcmp(RES(&s, 5)->key, "a"));
    ASSERT_EQ(RES(&s, 5)->value, 1);
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_EQ(tdm_winop_state_bytes(op), 0);
    ASSERT_EQ(tdm__winop_keys(op), 0);
    tdm_winop_destroy(op);
}

/* Issue 7's memory target for counts: at most 64 bytes per live (key,
 * window).  NEXMark q5's shape: 10 s windows every 2 s, 20,000 keys of
 * which each bids in one slice, so every key is in five windows. */
TDM_TEST(sliced_state_bytes_per_window)
{
    sink s = {.n = 0};
    tdm_winop *op = mk(sliding(10000, 2000, 0), TDM_AGG_COUNT, 0, 0, &s);
    ASSERT_TRUE(op->lean_sliced);
    char key[16];
    for (int k = 0; k < 20000; k++) {
        snprintf(key, sizeof key, "%08d", k);
        push(op, key, 20000 + (k % 5) * 2000 + k % 1999, 1);
    }
    int64_t live = tdm_winop_live_windows(op);
    ASSERT_EQ(live, 5 * 20000);
    int64_t b = tdm_winop_state_bytes(op);
    ASSERT_TRUE(b > 0);
    ASSERT_TRUE(b <= 64 * live);
    /* Per-window cells for comparison: over twice as much. */
    tdm_winop *pw;
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_OK(tdm_winop_new(sliding(10000, 2000, 0), NULL, agg, 1, NULL,
                            collect, &s, &pw, NULL, 0));
    ASSERT_OK(tdm__winop_disable_slicing(pw));
    for (int k = 0; k < 20000; k++) {
        snprintf(key, sizeof key, "%08d", k);
        ASSERT_OK(push_ch(pw, 0, key, 20000 + (k % 5) * 2000 + k % 1999, 1));
    }
    ASSERT_EQ(tdm_winop_live_windows(pw), live);
    ASSERT_TRUE(tdm_winop_state_bytes(pw) > 2 * b);
    tdm_winop_destroy(pw);
    tdm_winop_destroy(op);
}

/* ---- Differential runs: lean path against general path ---- */

/* One output event, flattened for comparison. */
typedef struct flat_ev {
    tdm_event_type type;
    char key[48];
    size_t key_len;
    int has_window;
    tdm_time_ms start, end, time;
    uint64_t value_bits;
    tdm_pane_timing timing;
    int64_t pane;
    int update, idle;
    tdm_time_ms rec_ts;
    uint64_t rec_bits;
    uint64_t extra; /* FNV-1a of the values and bytes of a result */
    int64_t step;   /* input step that produced it */
} flat_ev;

typedef struct flat_log {
    flat_ev *v;
    size_t n, cap;
    int64_t step;
} flat_log;

static uint64_t dbl_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static void flat_collect(void *opaque, const tdm_event *ev)
{
    flat_log *l = opaque;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        ASSERT_TRUE(l->v != NULL);
    }
    flat_ev *o = &l->v[l->n++];
    memset(o, 0, sizeof *o);
    o->step = l->step;
    o->type = tdm_event_get_type(ev);
    o->time = tdm_event_time(ev);
    o->idle = tdm_event_is_idle(ev);
    const char *k = tdm_event_key(ev, &o->key_len);
    if (k && o->key_len)
        memcpy(o->key, k, o->key_len < 47 ? o->key_len : 47);
    if (o->type == TDM_EVENT_RESULT) {
        o->has_window = tdm_event_window(ev, &o->start, &o->end);
        o->value_bits = dbl_bits(tdm_event_value(ev));
        o->timing = tdm_event_pane_timing(ev);
        o->pane = tdm_event_pane_index(ev);
        o->update = tdm_event_is_update(ev);
        size_t nv = 0, nb = 0;
        const double *vals = tdm_event_values(ev, &nv);
        const unsigned char *bytes = tdm_event_bytes(ev, &nb);
        uint64_t h = 1469598103934665603ULL;
        for (size_t i = 0; i < nv; i++)
            h = (h ^ dbl_bits(vals[i])) * 1099511628211ULL;
        for (size_t i = 0; i < nb; i++)
            h = (h ^ bytes[i]) * 1099511628211ULL;
        o->extra = h ^ nv ^ ((uint64_t)nb << 32);
    }
    if (o->type == TDM_EVENT_LATE) {
        const tdm_record *r = tdm_event_record(ev, 0);
        o->rec_ts = tdm_record_ts(r);
        o->rec_bits = dbl_bits(tdm_record_value(r));
    }
}

static int flat_cmp(const void *x, const void *y)
{
    const flat_ev *a = x, *b = y;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    return memcmp(a, b, sizeof *a);
}

typedef struct diff_rng {
    uint64_t s;
} diff_rng;

static uint64_t diff_next(diff_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t diff_range(diff_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(diff_next(r) % (uint64_t)(hi - lo + 1));
}

/* Keys of every length class of the store: empty, 1-3, 4-7, 8-16 bytes
 * (inline), over 16 (heap), and pairs that differ only in the tail. */
static const char *const DIFF_KEYS[] = {
    "",
    "a",
    "bb",
    "k4",
    "key5",
    "k0123456",
    "k01234567",
    "k01234568",
    "0123456789abcdef",
    "0123456789abcdeg",
    "0123456789abcdefg",
    "a key of forty bytes, kept on the heap..",
};
#define N_DIFF_KEYS ((int)(sizeof DIFF_KEYS / sizeof DIFF_KEYS[0]))

/* Non-zero: diff_op draws only configurations of the lean path's sliced
 * mode (sliding counts without lateness, winop_slice.c); 2: its "lean"
 * operator keeps per-window cells instead (tdm__winop_disable_slicing),
 * so that the two lean variants are compared with each other. */
static int diff_sliced;

/* Non-zero: diff_op draws event-time session windows (gap 1-50) of the
 * session mode (winop_session.c) instead. */
static int diff_session;

/* The session diff's window function: the record count plus the sum of
 * (ts mod 7) * value over the window's records, in their order. */
static tdm_err diff_wfn(void *ud, const tdm_window_ctx *ctx,
                        tdm_result_out *out)
{
    (void)ud;
    size_t n = tdm_window_ctx_count(ctx);
    double v = (double)n;
    for (size_t i = 0; i < n; i++) {
        const tdm_record *r = tdm_window_ctx_record(ctx, i);
        v += (double)(tdm_record_ts(r) % 7) * tdm_record_value(r);
    }
    tdm_result_set_value(out, v);
    return TDM_OK;
}

/* The sum-of-squares aggregate's counters of the session diff's two
 * operators (diff_op's lean one first). */
static sq_ud diff_sq[2];

/* Builds one operator of the configuration drawn from @p seed. */
static tdm_winop *diff_op(uint64_t seed, bool lean, bool extremes,
                          flat_log *log)
{
    diff_rng r = {seed};
    static const tdm_time_ms sizes[] = {1, 2, 3, 5, 7, 10, 100};
    tdm_time_ms size = sizes[diff_range(&r, 0, 6)];
    tdm_assigner *a;
    if (diff_range(&r, 0, 1)) {
        tdm_time_ms off = diff_range(&r, -(size - 1), size - 1);
        ASSERT_OK(tdm_assigner_new_tumbling(size, off, &a, NULL, 0));
    } else {
        tdm_time_ms slide = diff_range(&r, 1, size);
        if (diff_range(&r, 0, 4) == 0)
            slide = size + diff_range(&r, 1, 3); /* gaps between windows */
        tdm_time_ms off = diff_range(&r, -(slide - 1), slide - 1);
        ASSERT_OK(tdm_assigner_new_sliding(size, slide, off, &a, NULL, 0));
    }
    tdm_agg_kind kind =
        (tdm_agg_kind)diff_range(&r, TDM_AGG_COUNT, TDM_AGG_AVG);
    static const tdm_time_ms lateness[] = {0, 0, 1, 5, 50, 1000};
    tdm_time_ms late = lateness[diff_range(&r, 0, 5)];
    if (extremes && diff_range(&r, 0, 2) == 0)
        late = TDM_TIME_MAX;
    int channels = (int)diff_range(&r, 1, 2);
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new(kind, &agg));
    tdm_trigger *t = NULL;
    if (diff_range(&r, 0, 1))
        ASSERT_OK(tdm_trigger_new_event_time(&t));
    if (diff_sliced) {
        /* Same draws, then a sliced configuration: size 2-60 with a
         * slide that leaves at least two slices per window (gaps
         * between windows too). */
        static const tdm_time_ms ssizes[] = {2, 3, 5, 7, 10, 12, 60};
        tdm_assigner_destroy(a);
        tdm_aggregate_destroy(agg);
        diff_rng q = {seed * 31 + 7};
        tdm_time_ms ssize = ssizes[diff_range(&q, 0, 6)], slide;
        do {
            slide = diff_range(&q, 1, ssize + 3);
        } while (slide % ssize == 0); /* one slice per window: not sliced */
        tdm_time_ms off = diff_range(&q, -(slide - 1), slide - 1);
        ASSERT_OK(tdm_assigner_new_sliding(ssize, slide, off, &a, NULL, 0));
        ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
        late = 0;
    }
    if (diff_session) {
        /* Any aggregate: the built-in ones, collect, a user aggregate
         * with heap accumulators, a window function. */
        static const tdm_time_ms gaps[] = {1, 2, 3, 5, 10, 50};
        tdm_assigner_destroy(a);
        diff_rng q = {seed * 17 + 3};
        ASSERT_OK(
            tdm_assigner_new_session(gaps[diff_range(&q, 0, 5)], &a, NULL, 0));
        late = 0;
        int which = (int)diff_range(&q, 0, 7);
        if (which >= 5) {
            tdm_aggregate_destroy(agg);
            sq_ud *u = &diff_sq[lean ? 0 : 1];
            memset(u, 0, sizeof *u);
            if (which == 5)
                ASSERT_OK(tdm_aggregate_new(TDM_AGG_COLLECT, &agg));
            else if (which == 6)
                ASSERT_OK(
                    tdm_aggregate_new_custom(&sq_methods, u, &agg, NULL, 0));
            else
                ASSERT_OK(
                    tdm_aggregate_new_window_fn(diff_wfn, NULL, NULL, &agg));
        }
    }
    tdm_winop *op;
    ASSERT_OK(tdm_winop_new(a, t, agg, channels, NULL, flat_collect, log, &op,
                            NULL, 0));
    ASSERT_TRUE(diff_session ? op->sess != NULL : is_lean(op));
    if (!lean)
        ASSERT_OK(tdm__winop_disable_lean(op));
    if (lean && diff_sliced)
        ASSERT_TRUE(op->lean_sliced);
    if (lean && diff_sliced == 2)
        ASSERT_OK(tdm__winop_disable_slicing(op));
    ASSERT_OK(tdm_winop_set_allowed_lateness(op, late, NULL, 0));
    ASSERT_OK(tdm_winop_set_late_output(op, (int)diff_range(&r, 0, 1)));
    return op;
}

/* Draws a timestamp: mostly around a moving base, sometimes far behind,
 * and (extremes) near the ends of the time range. */
static tdm_time_ms diff_ts(diff_rng *r, tdm_time_ms base, bool extremes)
{
    if (extremes) {
        switch (diff_range(r, 0, 5)) {
        case 0:
            return TDM_TIME_MIN + 1 + diff_range(r, 0, 200);
        case 1:
            return TDM_TIME_MAX - diff_range(r, 0, 200);
        default:
            break;
        }
    }
    if (diff_range(r, 0, 9) == 0)
        return base - diff_range(r, 0, 500);
    return base + diff_range(r, -20, 20);
}

/* Runs the stream of @p seed through a lean and a general operator and
 * compares every output event, return code and live window count.  In
 * @p extremes mode events of one step are compared as a multiset: the
 * general path fires equal-time timers of different windows (several
 * sliding windows saturated at TDM_TIME_MAX) in registration order, the
 * lean one window by window, and R3.5 leaves that order open. */
static void diff_run(uint64_t seed, bool extremes)
{
    flat_log la = {NULL, 0, 0, 0}, lb = {NULL, 0, 0, 0};
    tdm_winop *a = diff_op(seed, true, extremes, &la);
    tdm_winop *b = diff_op(seed, false, extremes, &lb);
    diff_rng r = {seed ^ 0x5bd1e995u};
    tdm_record *rec;
    ASSERT_OK(tdm_record_new(&rec));
    tdm_time_ms base = diff_range(&r, -1000, 1000);
    tdm_time_ms wm[2] = {TDM_TIME_MIN, TDM_TIME_MIN};
    int n_steps = 300;
    for (int i = 0; i < n_steps; i++) {
        la.step = lb.step = i;
        int ch = (int)diff_range(&r, 0, 1);
        if (ch >= a->n_channels)
            ch = 0;
        tdm_err ea, eb;
        int64_t what = diff_range(&r, 0, 99);
        if (what < 75) {
            const char *k = DIFF_KEYS[diff_range(&r, 0, N_DIFF_KEYS - 1)];
            tdm_time_ms ts = diff_ts(&r, base, extremes);
            double v = (double)diff_range(&r, -50, 50) / 4;
            tdm_record_set(rec, k, strlen(k), ts, v);
            ea = tdm_winop_push(a, ch, rec);
            eb = tdm_winop_push(b, ch, rec);
            base += diff_range(&r, 0, 3);
        } else if (what < 97) {
            tdm_time_ms w = tdm_time_add(wm[ch], diff_range(&r, 0, 30));
            if (wm[ch] == TDM_TIME_MIN || diff_range(&r, 0, 3) == 0)
                w = base - diff_range(&r, 0, 40);
            if (extremes && diff_range(&r, 0, 9) == 0)
                w = TDM_TIME_MAX - diff_range(&r, 1, 300);
            if (w > wm[ch])
                wm[ch] = w;
            ea = tdm_winop_watermark(a, ch, w);
            eb = tdm_winop_watermark(b, ch, w);
        } else {
            int idle = (int)diff_range(&r, 0, 1);
            ea = tdm_winop_status(a, ch, idle);
            eb = tdm_winop_status(b, ch, idle);
        }
        if (ea != eb)
            tdm_test_fail(__FILE__, __LINE__,
                          "seed %" PRIu64 " step %d: "
                          "%s vs %s",
                          seed, i, tdm_err_name(ea), tdm_err_name(eb));
        if (tdm_winop_live_windows(a) != tdm_winop_live_windows(b))
            tdm_test_fail(__FILE__, __LINE__,
                          "seed %" PRIu64 " step %d: "
                          "live windows %" PRId64 " vs %" PRId64,
                          seed, i, tdm_winop_live_windows(a),
                          tdm_winop_live_windows(b));
    }
    la.step = lb.step = n_steps;
    ASSERT_EQ(tdm_winop_end(a), tdm_winop_end(b));
    if (diff_session) {
        /* User accumulators: made, merged and released alike. */
        ASSERT_EQ(diff_sq[0].creates, diff_sq[1].creates);
        ASSERT_EQ(diff_sq[0].merges, diff_sq[1].merges);
        ASSERT_EQ(diff_sq[0].destroys, diff_sq[0].creates);
        ASSERT_EQ(diff_sq[1].destroys, diff_sq[1].creates);
    }
    ASSERT_EQ(tdm_winop_live_windows(a), tdm_winop_live_windows(b));
    ASSERT_EQ(tdm_winop_late_dropped(a), tdm_winop_late_dropped(b));
    ASSERT_EQ(tdm_winop_late_emitted(a), tdm_winop_late_emitted(b));
    if (la.n != lb.n)
        tdm_test_fail(__FILE__, __LINE__,
                      "seed %" PRIu64 ": %zu vs %zu "
                      "events",
                      seed, la.n, lb.n);
    if (extremes) {
        qsort(la.v, la.n, sizeof *la.v, flat_cmp);
        qsort(lb.v, lb.n, sizeof *lb.v, flat_cmp);
    }
    for (size_t i = 0; i < la.n; i++)
        if (memcmp(&la.v[i], &lb.v[i], sizeof la.v[i]) != 0)
            tdm_test_fail(__FILE__, __LINE__,
                          "seed %" PRIu64 ": event "
                          "%zu (step %" PRId64 ", type %d, key '%s', "
                          "window [%" PRId64 ", %" PRId64 ")) differs from "
                          "type %d key '%s' window [%" PRId64 ", %" PRId64 ")",
                          seed, i, la.v[i].step, (int)la.v[i].type, la.v[i].key,
                          la.v[i].start, la.v[i].end, (int)lb.v[i].type,
                          lb.v[i].key, lb.v[i].start, lb.v[i].end);
    tdm_winop_destroy(a);
    tdm_winop_destroy(b);
    tdm_record_destroy(rec);
    free(la.v);
    free(lb.v);
}

/* Random streams (keys of every length class, out-of-order and late
 * records, one or two channels with idleness, lateness 0 to 1000, late
 * output on or off, all lean aggregates, tumbling and sliding windows
 * with offsets and gaps) give the same events, in the same order, and
 * the same live windows on both paths. */
TDM_TEST(lean_matches_general_path)
{
    for (uint64_t seed = 1; seed <= 400; seed++)
        diff_run(seed, false);
}

/* The same near TDM_TIME_MIN and TDM_TIME_MAX (saturated window bounds,
 * cleanup times that overflow, watermarks near the end of time). */
TDM_TEST(lean_matches_general_path_at_the_extremes)
{
    for (uint64_t seed = 1000; seed <= 1300; seed++)
        diff_run(seed, true);
}

/* The sliced mode (winop_slice.c) against the general path, record by
 * record and event by event (extremes: as a multiset per step, see
 * diff_run), and against the lean path's per-window cells. */
TDM_TEST(sliced_matches_general_path)
{
    diff_sliced = 1;
    for (uint64_t seed = 1; seed <= 1500; seed++)
        diff_run(seed, false);
    for (uint64_t seed = 10000; seed <= 11500; seed++)
        diff_run(seed, true);
    diff_sliced = 0;
}

/* The session mode against the general path's slots, merges and
 * timers, with every kind of aggregate: the same events in the same
 * order, return codes, live windows, late counters; near the ends of
 * time too. */
TDM_TEST(session_mode_matches_general_path)
{
    diff_session = 1;
    for (uint64_t seed = 1; seed <= 1500; seed++)
        diff_run(seed, false);
    for (uint64_t seed = 20000; seed <= 20500; seed++)
        diff_run(seed, true);
    diff_session = 0;
}

TDM_TEST(sliced_matches_per_window_lean_path)
{
    /* diff_run's "general" operator is the per-window lean one here. */
    diff_sliced = 1;
    for (uint64_t seed = 5000; seed <= 6000; seed++) {
        flat_log la = {NULL, 0, 0, 0}, lb = {NULL, 0, 0, 0};
        tdm_winop *a = diff_op(seed, true, false, &la);
        diff_sliced = 2;
        tdm_winop *b = diff_op(seed, true, false, &lb);
        diff_sliced = 1;
        ASSERT_TRUE(a->lean_sliced && !b->lean_sliced && b->lean);
        diff_rng r = {seed};
        tdm_record *rec;
        ASSERT_OK(tdm_record_new(&rec));
        tdm_time_ms base = 0, wm = TDM_TIME_MIN;
        for (int i = 0; i < 400; i++) {
            la.step = lb.step = i;
            if (diff_range(&r, 0, 9) < 8) {
                const char *k = DIFF_KEYS[diff_range(&r, 0, N_DIFF_KEYS - 1)];
                tdm_time_ms ts = diff_ts(&r, base, false);
                tdm_record_set(rec, k, strlen(k), ts, 1);
                ASSERT_EQ(tdm_winop_push(a, 0, rec), tdm_winop_push(b, 0, rec));
                base += diff_range(&r, 0, 3);
            } else {
                tdm_time_ms w = base - diff_range(&r, 0, 40);
                if (w > wm)
                    wm = w;
                for (int ch = 0; ch < a->n_channels; ch++) {
                    ASSERT_OK(tdm_winop_watermark(a, ch, w));
                    ASSERT_OK(tdm_winop_watermark(b, ch, w));
                }
            }
            ASSERT_EQ(tdm_winop_live_windows(a), tdm_winop_live_windows(b));
            ASSERT_EQ(tdm__winop_keys(a), tdm__winop_keys(b));
        }
        la.step = lb.step = 400;
        ASSERT_OK(tdm_winop_end(a));
        ASSERT_OK(tdm_winop_end(b));
        ASSERT_EQ(la.n, lb.n);
        for (size_t i = 0; i < la.n; i++)
            ASSERT_TRUE(!memcmp(&la.v[i], &lb.v[i], sizeof la.v[i]));
        ASSERT_EQ(tdm_winop_live_windows(a), 0);
        ASSERT_EQ(tdm_winop_state_bytes(a), 0);
        tdm_winop_destroy(a);
        tdm_winop_destroy(b);
        tdm_record_destroy(rec);
        free(la.v);
        free(lb.v);
    }
    diff_sliced = 0;
}

/* The emit callback calls back into a sliced operator while a window
 * fires: each result pushes a record of the next key into the fired
 * window's last slice (late for that window and for the due windows not
 * walked yet, counted in later ones), and (@c nested) every third result
 * sends a later watermark, which fires more windows inside the walk.
 * Every window must emit the counts it had when the watermark passed it
 * (winop_slice.c, "frozen"): the same events in the same order as the
 * per-window lean path; without nested watermarks also the same
 * multiset as the general path.  (With nested watermarks the general
 * path differs from both lean variants, which predates the sliced mode:
 * it fires the cascade of watermarks further before the pushed records
 * arrive, so more of them are late.) */
typedef struct rec_ctx {
    flat_log log;
    tdm_winop *op;
    tdm_record *rec;
    int n_res;
    tdm_time_ms wm;
    bool nested;
} rec_ctx;

static const char *const REC_KEYS[] = {"a", "bb", "k4", "key5",
                                       "0123456789abcdefg"};

static void rec_collect(void *opaque, const tdm_event *ev)
{
    rec_ctx *x = opaque;
    flat_collect(&x->log, ev);
    if (tdm_event_get_type(ev) != TDM_EVENT_RESULT || x->n_res >= 400)
        return;
    int n = x->n_res++;
    size_t len;
    const char *k = tdm_event_key(ev, &len);
    int ki = 0;
    while (ki < 5 &&
           (strlen(REC_KEYS[ki]) != len || memcmp(REC_KEYS[ki], k, len) != 0))
        ki++;
    const char *next = REC_KEYS[(ki + 1) % 5];
    tdm_time_ms start, end;
    tdm_event_window(ev, &start, &end);
    tdm_record_set(x->rec, next, strlen(next), end - 1, 1);
    ASSERT_OK(tdm_winop_push(x->op, 0, x->rec));
    if (x->nested && n % 3 == 2 && end + 7 > x->wm) {
        x->wm = end + 7;
        ASSERT_OK(tdm_winop_watermark(x->op, 0, x->wm));
    }
}

static void rec_run(rec_ctx *x, int mode)
{
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_COUNT, &agg));
    ASSERT_OK(tdm_winop_new(sliding(12, 4, 0), NULL, agg, 1, NULL, rec_collect,
                            x, &x->op, NULL, 0));
    ASSERT_TRUE(x->op->lean_sliced);
    if (mode == 1)
        ASSERT_OK(tdm__winop_disable_slicing(x->op));
    if (mode == 2)
        ASSERT_OK(tdm__winop_disable_lean(x->op));
    ASSERT_OK(tdm_winop_set_late_output(x->op, 1));
    ASSERT_OK(tdm_record_new(&x->rec));
    x->wm = TDM_TIME_MIN;
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    for (int i = 0; i < 300; i++) {
        x->log.step = i;
        const char *k = REC_KEYS[(i * 7) % 5];
        tdm_record_set(r, k, strlen(k), i / 2 + (i % 3), 1);
        ASSERT_OK(tdm_winop_push(x->op, 0, r));
        if (i % 20 == 19 && i / 2 - 6 > x->wm) {
            x->wm = i / 2 - 6;
            ASSERT_OK(tdm_winop_watermark(x->op, 0, x->wm));
        }
    }
    x->log.step = 300;
    ASSERT_OK(tdm_winop_end(x->op));
    tdm_record_destroy(r);
}

TDM_TEST(sliced_emit_callback_may_push_and_fire)
{
    for (int nested = 0; nested < 2; nested++) {
        rec_ctx *x = calloc(3, sizeof *x);
        ASSERT_TRUE(x != NULL);
        for (int m = 0; m < 3; m++) {
            x[m].nested = nested;
            rec_run(&x[m], m);
        }
        ASSERT_TRUE(x[0].n_res > 50);
        ASSERT_EQ(x[0].log.n, x[1].log.n);
        for (size_t i = 0; i < x[0].log.n; i++)
            ASSERT_TRUE(
                !memcmp(&x[0].log.v[i], &x[1].log.v[i], sizeof(flat_ev)));
        if (!nested) {
            ASSERT_EQ(x[0].log.n, x[2].log.n);
            qsort(x[0].log.v, x[0].log.n, sizeof(flat_ev), flat_cmp);
            qsort(x[2].log.v, x[2].log.n, sizeof(flat_ev), flat_cmp);
            for (size_t i = 0; i < x[0].log.n; i++)
                ASSERT_TRUE(
                    !memcmp(&x[0].log.v[i], &x[2].log.v[i], sizeof(flat_ev)));
        }
        ASSERT_EQ(tdm_winop_live_windows(x[0].op), 0);
        ASSERT_EQ(tdm_winop_state_bytes(x[0].op), 0);
        for (int m = 0; m < 3; m++) {
            tdm_winop_destroy(x[m].op);
            tdm_record_destroy(x[m].rec);
            free(x[m].log.v);
        }
        free(x);
    }
}

/* Allocation failures on the lean path: the n-th allocation fails, for
 * every n until a run completes; every call returns TDM_OK or
 * TDM_ERR_NOMEM, and (under ASan) nothing leaks.  Sliding windows with
 * avg make keys, spans, member lists and spilled cells allocate. */
static int lean_run_with_failure(long n, bool sliced)
{
    flat_log log = {NULL, 0, 0, 0};
    tdm_assigner *a;
    tdm_aggregate *agg;
    tdm_winop *op = NULL;
    int failures = 0;
    ASSERT_OK(tdm_assigner_new_sliding(20, 5, 0, &a, NULL, 0));
    ASSERT_OK(tdm_aggregate_new(sliced ? TDM_AGG_COUNT : TDM_AGG_AVG, &agg));
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    tdm__alloc_fail_after(n);
    tdm_err err =
        tdm_winop_new(a, NULL, agg, 1, NULL, flat_collect, &log, &op, NULL, 0);
    if (err != TDM_OK) {
        ASSERT_ERR(err, TDM_ERR_NOMEM);
        tdm__alloc_fail_after(0);
        tdm_record_destroy(r);
        free(log.v);
        return 1;
    }
    ASSERT_OK(tdm_winop_set_allowed_lateness(op, sliced ? 0 : 10, NULL, 0));
    ASSERT_TRUE(op->lean_sliced == sliced);
    for (int i = 0; i < 60; i++) {
        const char *k = DIFF_KEYS[i % N_DIFF_KEYS];
        tdm_record_set(r, k, strlen(k), (i * 7) % 90, i);
        err = tdm_winop_push(op, 0, r);
        if (err != TDM_OK) {
            ASSERT_ERR(err, TDM_ERR_NOMEM);
            failures++;
        }
        if (i % 10 == 9) {
            err = tdm_winop_watermark(op, 0, i * 2);
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
    /* Whatever failed, nothing is left after the end of input but
     * windows that were never due. */
    ASSERT_EQ(tdm_winop_live_windows(op), 0);
    ASSERT_EQ(tdm_winop_state_bytes(op), 0);
    tdm_winop_destroy(op);
    tdm_record_destroy(r);
    free(log.v);
    return failures;
}

TDM_TEST(lean_allocation_failures_are_reported_not_fatal)
{
    for (int sliced = 0; sliced < 2; sliced++) {
        long n = 1;
        while (lean_run_with_failure(n, sliced) != 0 && n < 2000)
            n++;
        ASSERT_TRUE(n > 3);
        ASSERT_TRUE(n < 2000);
    }
}

/* The emit callback pushes records into the operator that is emitting
 * (an echo of each first firing, under a longer key, into the fired
 * window).  Lean and general path give the same events as a multiset:
 * echoes of fired windows fire at once while lateness keeps the window
 * (R4.5) and are late otherwise.  Many new keys during one walk make the
 * lean key table grow (and renumber) under the walk. */
typedef struct echo_ctx {
    flat_log log;
    tdm_winop *op;
    tdm_record *rec;
    char keys[4096][16];
    int n_keys;
} echo_ctx;

static void echo_collect(void *opaque, const tdm_event *ev)
{
    echo_ctx *x = opaque;
    flat_collect(&x->log, ev);
    if (tdm_event_get_type(ev) != TDM_EVENT_RESULT ||
        tdm_event_pane_index(ev) != 0 || x->n_keys >= 4096)
        return;
    size_t len;
    const char *k = tdm_event_key(ev, &len);
    if (len >= 12)
        return;
    char *nk = x->keys[x->n_keys++];
    memcpy(nk, k, len);
    nk[len] = 'e';
    tdm_time_ms start, end;
    tdm_event_window(ev, &start, &end);
    tdm_record_set(x->rec, nk, len + 1, start, 1);
    ASSERT_OK(tdm_winop_push(x->op, 0, x->rec));
}

/* Non-zero: echo_run uses session windows with this gap (the session
 * mode, winop_session.c) instead of tumbling ones. */
static tdm_time_ms echo_session_gap;

static void echo_run(echo_ctx *x, bool lean, tdm_time_ms lateness)
{
    tdm_assigner *a = tumbling(10, 0);
    if (echo_session_gap) {
        tdm_assigner_destroy(a);
        ASSERT_OK(tdm_assigner_new_session(echo_session_gap, &a, NULL, 0));
    }
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new(TDM_AGG_SUM, &agg));
    ASSERT_OK(
        tdm_winop_new(a, NULL, agg, 1, NULL, echo_collect, x, &x->op, NULL, 0));
    if (!lean)
        ASSERT_OK(tdm__winop_disable_lean(x->op));
    ASSERT_OK(tdm_winop_set_allowed_lateness(x->op, lateness, NULL, 0));
    ASSERT_OK(tdm_winop_set_late_output(x->op, 1));
    if (echo_session_gap)
        ASSERT_TRUE(lean == (x->op->sess != NULL));
    ASSERT_OK(tdm_record_new(&x->rec));
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    char key[16];
    for (int i = 0; i < 600; i++) {
        x->log.step = i;
        snprintf(key, sizeof key, "k%d", i % 300);
        tdm_record_set(r, key, strlen(key), i / 20, i);
        ASSERT_OK(tdm_winop_push(x->op, 0, r));
        if (i % 100 == 99)
            ASSERT_OK(tdm_winop_watermark(x->op, 0, i / 20 - 1));
    }
    x->log.step = 600;
    ASSERT_OK(tdm_winop_end(x->op));
    tdm_record_destroy(r);
}

/* Asserts that the two runs x[0] and x[1] logged the same events (as a
 * multiset when @p sorted, else in order), then frees both. */
static void echo_same_and_free(echo_ctx *x, bool sorted)
{
    if (sorted) {
        qsort(x[0].log.v, x[0].log.n, sizeof(flat_ev), flat_cmp);
        qsort(x[1].log.v, x[1].log.n, sizeof(flat_ev), flat_cmp);
    }
    for (size_t i = 0; i < x[0].log.n; i++)
        ASSERT_TRUE(!memcmp(&x[0].log.v[i], &x[1].log.v[i], sizeof(flat_ev)));
    for (int k = 0; k < 2; k++) {
        tdm_winop_destroy(x[k].op);
        tdm_record_destroy(x[k].rec);
        free(x[k].log.v);
    }
    free(x);
}

TDM_TEST(lean_emit_callback_may_push_into_the_operator)
{
    static const tdm_time_ms lateness[] = {0, 5, 1000};
    for (int l = 0; l < 3; l++) {
        echo_ctx *x = calloc(2, sizeof *x);
        ASSERT_TRUE(x != NULL);
        echo_run(&x[0], true, lateness[l]);
        echo_run(&x[1], false, lateness[l]);
        ASSERT_TRUE(x[0].n_keys > 300);
        ASSERT_EQ(x[0].n_keys, x[1].n_keys);
        ASSERT_EQ(x[0].log.n, x[1].log.n);
        ASSERT_EQ(tdm_winop_live_windows(x[0].op),
                  tdm_winop_live_windows(x[1].op));
        echo_same_and_free(x, true);
    }
}

/* The same for the session mode: echoes of fired sessions, under new
 * keys, into their start (late, or a session of their own when the gap
 * reaches past the watermark), while the mode walks its due sessions;
 * the session mode and the general path give the same events. */
TDM_TEST(session_emit_callback_may_push_into_the_operator)
{
    static const tdm_time_ms gaps[] = {1, 4, 40};
    for (int g = 0; g < 3; g++) {
        echo_session_gap = gaps[g];
        echo_ctx *x = calloc(2, sizeof *x);
        ASSERT_TRUE(x != NULL);
        echo_run(&x[0], true, 0);
        echo_run(&x[1], false, 0);
        ASSERT_TRUE(x[0].n_keys > 10);
        ASSERT_EQ(x[0].n_keys, x[1].n_keys);
        ASSERT_EQ(x[0].log.n, x[1].log.n);
        ASSERT_EQ(tdm_winop_late_emitted(x[0].op),
                  tdm_winop_late_emitted(x[1].op));
        echo_same_and_free(x, false);
    }
    echo_session_gap = 0;
}
