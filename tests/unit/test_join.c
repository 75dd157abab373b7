/* SPDX-License-Identifier: MIT */
/* test_join.c - the interval join and the window join: bounds, pairs,
 * lateness, cleanup times, idle sides, configuration errors, records
 * without timestamps, end of input.  Every expected output is derived by
 * hand from rules J1-J5 / O2 of watermark-semantics.md (and R1-R4 of
 * window-semantics.md for the window join); the comment above each check
 * says how.
 *
 * Output is captured as text, one input step at a time: results of a step
 * (pairs "J lkey:lts=lval rkey:rts=rval @ts", late records "Ll|Lr
 * key:ts=val") are sorted, since their order within a step is not
 * specified, and joined by "; ", followed by the step's watermarks ("W5")
 * and statuses ("idle", "active") in emission order.
 */
#include "core.h"
#include "harness.h"
#include "window/join.h"
#include "testhooks.h"

/* ---- Capturing output ---- */

#define MAX_EVENTS 256

typedef struct cap {
    char ev[MAX_EVENTS][160]; /* rendered events since the last take */
    int is_mark[MAX_EVENTS];  /* watermark or status */
    int n;
    int order_bad;          /* a result came after a watermark */
    char last_lpayload[32]; /* left payload of the last pair */
    char last_lkey[32], last_rkey[32];
    int has_window;
    tdm_time_ms win_start, win_end;
    char out[16384];
} cap;

static void fmt_time(char *buf, size_t n, tdm_time_ms t)
{
    if (t == TDM_TIME_MAX)
        snprintf(buf, n, "MAX");
    else if (t == TDM_TIME_MIN)
        snprintf(buf, n, "MIN");
    else
        snprintf(buf, n, "%lld", (long long)t);
}

static void fmt_rec(char *buf, size_t n, const tdm_record *r)
{
    size_t kl;
    const char *k = tdm_record_key(r, &kl);
    char t[24];
    fmt_time(t, sizeof t, tdm_record_ts(r));
    snprintf(buf, n, "%.*s:%s=%g", (int)kl, k, t, tdm_record_value(r));
}

static void on_event(void *opaque, const tdm_event *ev)
{
    cap *c = opaque;
    if (c->n == MAX_EVENTS)
        return;
    char *s = c->ev[c->n];
    size_t sz = sizeof c->ev[0];
    char a[40], b[40], t[24];
    int mark = 0;
    switch (tdm_event_get_type(ev)) {
    case TDM_EVENT_JOIN: {
        const tdm_record *l = tdm_event_record(ev, 0);
        const tdm_record *r = tdm_event_record(ev, 1);
        fmt_rec(a, sizeof a, l);
        fmt_rec(b, sizeof b, r);
        fmt_time(t, sizeof t, tdm_event_time(ev));
        snprintf(s, sz, "J %s %s @%s", a, b, t);
        size_t pl;
        const void *p = tdm_record_payload(l, &pl);
        snprintf(c->last_lpayload, sizeof c->last_lpayload, "%.*s",
                 p ? (int)pl : 0, p ? (const char *)p : "");
        size_t kl;
        const char *k = tdm_record_key(l, &kl);
        snprintf(c->last_lkey, sizeof c->last_lkey, "%.*s", (int)kl, k);
        k = tdm_record_key(r, &kl);
        snprintf(c->last_rkey, sizeof c->last_rkey, "%.*s", (int)kl, k);
        c->has_window = tdm_event_window(ev, &c->win_start, &c->win_end);
        break;
    }
    case TDM_EVENT_LATE:
        fmt_rec(a, sizeof a, tdm_event_record(ev, 0));
        snprintf(s, sz, "L%c %s", tdm_event_side(ev) == 0 ? 'l' : 'r', a);
        break;
    case TDM_EVENT_WATERMARK:
        fmt_time(t, sizeof t, tdm_event_time(ev));
        snprintf(s, sz, "W%s", t);
        mark = 1;
        break;
    case TDM_EVENT_STATUS:
        snprintf(s, sz, "%s", tdm_event_is_idle(ev) ? "idle" : "active");
        mark = 1;
        break;
    default:
        snprintf(s, sz, "?%d", (int)tdm_event_get_type(ev));
        break;
    }
    if (!mark && c->n > 0 && c->is_mark[c->n - 1])
        c->order_bad = 1;
    c->is_mark[c->n] = mark;
    c->n++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* Renders and clears what was emitted since the last call. */
static const char *take(cap *c)
{
    char res[MAX_EVENTS][160];
    int nres = 0;
    for (int i = 0; i < c->n; i++)
        if (!c->is_mark[i])
            memcpy(res[nres++], c->ev[i], sizeof res[0]);
    qsort(res, (size_t)nres, sizeof res[0], cmp_str);
    size_t len = 0;
    c->out[0] = '\0';
    if (c->order_bad)
        len += (size_t)snprintf(c->out, sizeof c->out, "ORDER! ");
    for (int i = 0; i < nres; i++)
        len += (size_t)snprintf(c->out + len, sizeof c->out - len, "%s%s",
                                len && !c->order_bad ? "; " : "", res[i]);
    for (int i = 0; i < c->n; i++)
        if (c->is_mark[i])
            len += (size_t)snprintf(c->out + len, sizeof c->out - len, "%s%s",
                                    len ? "; " : "", c->ev[i]);
    c->n = 0;
    c->order_bad = 0;
    return c->out;
}

/* ---- Driving the operator ---- */

static tdm_joinop *new_interval(cap *c, tdm_time_ms lo, tdm_time_ms hi,
                                int lo_inc, int hi_inc, int channels)
{
    memset(c, 0, sizeof *c);
    tdm_joinop *op = NULL;
    char err[256] = "";
    tdm_err e = tdm_joinop_new_interval(lo, hi, lo_inc, hi_inc, channels, NULL,
                                        on_event, c, &op, err, sizeof err);
    if (e != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "new_interval: %s", err);
    return op;
}

/* Pushes a record on channel 0 of a side.  The record lives on the stack
 * so that pushing allocates nothing in the test itself (the allocation
 * fault tests count only the library's allocations). */
static tdm_err push(tdm_joinop *op, int side, const char *key, tdm_time_ms ts,
                    double v)
{
    tdm_record r;
    memset(&r, 0, sizeof r);
    tdm_record_set(&r, key, strlen(key), ts, v);
    return tdm_joinop_push(op, side, 0, &r);
}

#define L TDM_SIDE_LEFT
#define R TDM_SIDE_RIGHT

/* Pushes a record and checks the step's output. */
#define PUSH(op, c, side, key, ts, v, want)                                    \
    do {                                                                       \
        ASSERT_OK(push((op), (side), (key), (ts), (v)));                       \
        ASSERT_STR_EQ(take(c), (want));                                        \
    } while (0)

/* A watermark on channel 0 of a side, and the step's output. */
#define WM(op, c, side, ts, want)                                              \
    do {                                                                       \
        ASSERT_OK(tdm_joinop_watermark((op), (side), 0, (ts)));                \
        ASSERT_STR_EQ(take(c), (want));                                        \
    } while (0)

/* ---- Interval join: bounds ---- */

/* Bounds [1, 2]: l joins r iff l+1 <= r <= l+2; a right record at t meets
 * left records in [t-2, t-1]; each pair is stamped max(l, r) (J1, J3). */
TDM_TEST(interval_inclusive_positive_bounds)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 1, 2, 1, 1, 1);
    PUSH(op, &c, L, "k", 1, 101, "");
    PUSH(op, &c, L, "k", 2, 102, "");
    /* r=2: left in [0, 1] -> left 1. */
    PUSH(op, &c, R, "k", 2, 202, "J k:1=101 k:2=202 @2");
    /* r=3: left in [1, 2] -> both. */
    PUSH(op, &c, R, "k", 3, 203, "J k:1=101 k:3=203 @3; J k:2=102 k:3=203 @3");
    /* r=4: left in [2, 3] -> left 2. */
    PUSH(op, &c, R, "k", 4, 204, "J k:2=102 k:4=204 @4");
    /* r=1: left in [-1, 0] -> none. */
    PUSH(op, &c, R, "k", 1, 201, "");
    /* l=0: right in [1, 2] -> rights 1 and 2; stamps 1 and 2, the right's
     * timestamp being the larger one. */
    PUSH(op, &c, L, "k", 0, 100, "J k:0=100 k:1=201 @1; J k:0=100 k:2=202 @2");
    ASSERT_EQ(tdm_joinop_buffered(op), 7);
    tdm_joinop_destroy(op);
}

/* Exclusive bounds shift by one ms once (J1): (-3, -1) is [-2, -2],
 * (0, 2] is [1, 2], [0, 2) is [0, 1]. */
TDM_TEST(interval_exclusive_bounds)
{
    cap c;
    tdm_joinop *op = new_interval(&c, -3, -1, 0, 0, 1);
    PUSH(op, &c, L, "k", 3, 103, "");
    /* r must be exactly l-2: right 1 joins left 3; 0 and 2 do not. */
    PUSH(op, &c, R, "k", 0, 200, "");
    PUSH(op, &c, R, "k", 2, 202, "");
    PUSH(op, &c, R, "k", 1, 201, "J k:3=103 k:1=201 @3");
    tdm_joinop_destroy(op);

    op = new_interval(&c, 0, 2, 0, 1, 1);
    PUSH(op, &c, L, "k", 10, 1, "");
    /* r = l + 0 is excluded, l + 1 and l + 2 included. */
    PUSH(op, &c, R, "k", 10, 2, "");
    PUSH(op, &c, R, "k", 11, 3, "J k:10=1 k:11=3 @11");
    PUSH(op, &c, R, "k", 12, 4, "J k:10=1 k:12=4 @12");
    tdm_joinop_destroy(op);

    op = new_interval(&c, 0, 2, 1, 0, 1);
    PUSH(op, &c, L, "k", 10, 1, "");
    /* r = l + 0 and l + 1 included, l + 2 excluded. */
    PUSH(op, &c, R, "k", 10, 2, "J k:10=1 k:10=2 @10");
    PUSH(op, &c, R, "k", 11, 3, "J k:10=1 k:11=3 @11");
    PUSH(op, &c, R, "k", 12, 4, "");
    tdm_joinop_destroy(op);
}

/* Bounds [-2, -1]: the right record is 1 or 2 ms earlier than the left
 * one, so every pair carries the left timestamp. */
TDM_TEST(interval_negative_bounds)
{
    cap c;
    tdm_joinop *op = new_interval(&c, -2, -1, 1, 1, 1);
    PUSH(op, &c, L, "k", 5, 105, "");
    PUSH(op, &c, R, "k", 5, 205, "");
    PUSH(op, &c, R, "k", 2, 202, "");
    PUSH(op, &c, R, "k", 3, 203, "J k:5=105 k:3=203 @5");
    PUSH(op, &c, R, "k", 4, 204, "J k:5=105 k:4=204 @5");
    /* A left record at 6 meets rights 4 and 5 (the latter arrived before
     * any left it could join). */
    PUSH(op, &c, L, "k", 6, 106, "J k:6=106 k:4=204 @6; J k:6=106 k:5=205 @6");
    tdm_joinop_destroy(op);
}

/* Equal timestamps share a bucket and all of them join; keys never mix
 * (J2 step 3 and 4). */
TDM_TEST(interval_equal_timestamps_and_keys)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 0, 0, 1, 1, 1);
    PUSH(op, &c, L, "k", 5, 1, "");
    PUSH(op, &c, L, "k", 5, 2, "");
    PUSH(op, &c, R, "other", 5, 4, "");
    PUSH(op, &c, R, "k", 5, 3, "J k:5=1 k:5=3 @5; J k:5=2 k:5=3 @5");
    /* Another right at 5: again both lefts (rights share a bucket too). */
    PUSH(op, &c, R, "k", 5, 6, "J k:5=1 k:5=6 @5; J k:5=2 k:5=6 @5");
    /* A left of key "other" meets only the right of that key. */
    PUSH(op, &c, L, "other", 5, 7, "J other:5=7 other:5=4 @5");
    /* A third left of key k meets both rights of k. */
    PUSH(op, &c, L, "k", 5, 8, "J k:5=8 k:5=3 @5; J k:5=8 k:5=6 @5");
    ASSERT_EQ(tdm_joinop_buffered(op), 7);
    tdm_joinop_destroy(op);
}

/* ---- Interval join: lateness ---- */

/* Late iff ts < operator watermark (J2): after both sides reach 3, left 2
 * and right 2 are dropped and counted, records at 3 are not late. */
TDM_TEST(interval_late_records_dropped_and_counted)
{
    cap c;
    tdm_joinop *op = new_interval(&c, -1, 1, 1, 1, 1);
    PUSH(op, &c, R, "k", 2, 202, "");
    WM(op, &c, L, 3, "");
    /* Both sides at 3: min(3, 3) = 3.  Right 2's cleanup timer is at
     * 2 - (-1) = 3 <= 3, so it is removed before W3 goes out. */
    WM(op, &c, R, 3, "W3");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    /* Left 2 < 3: late, joins nothing even though right 2 would match. */
    PUSH(op, &c, L, "k", 2, 102, "");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 1);
    /* Left 3 is not late (equal) and is buffered. */
    PUSH(op, &c, L, "k", 3, 103, "");
    ASSERT_EQ(tdm_joinop_buffered(op), 1);
    /* Right 2 is late too; right 4 joins left 3. */
    PUSH(op, &c, R, "k", 2, 222, "");
    PUSH(op, &c, R, "k", 4, 204, "J k:3=103 k:4=204 @4");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 2);
    ASSERT_EQ(tdm_joinop_buffered(op), 2);
    tdm_joinop_destroy(op);
}

/* With late output on, late records go out as LATE events carrying their
 * side, unchanged, and are not counted as dropped. */
TDM_TEST(interval_late_side_output)
{
    cap c;
    tdm_joinop *op = new_interval(&c, -1, 1, 1, 1, 1);
    ASSERT_OK(tdm_joinop_set_late_output(op, 1));
    PUSH(op, &c, L, "k", 3, 103, "");
    PUSH(op, &c, R, "k", 3, 203, "J k:3=103 k:3=203 @3");
    WM(op, &c, L, 3, "");
    WM(op, &c, R, 3, "W3");
    PUSH(op, &c, L, "k", 1, 101, "Ll k:1=101");
    PUSH(op, &c, R, "k", 2, 202, "Lr k:2=202");
    /* Right 2 was not buffered: left 3 at the watermark is not late and
     * meets only right 3 (still buffered: its cleanup time is 4). */
    PUSH(op, &c, L, "k", 3, 113, "J k:3=113 k:3=203 @3");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 0);
    /* Late output cannot be changed once input was seen. */
    ASSERT_ERR(tdm_joinop_set_late_output(op, 0), TDM_ERR_STATE);
    tdm_joinop_destroy(op);
}

/* ---- Interval join: cleanup (J4) ---- */

/* Bounds [-5, 10]: left t is kept until the watermark reaches t + 10,
 * right t until t + 5. */
TDM_TEST(interval_cleanup_times_mixed_bounds)
{
    cap c;
    tdm_joinop *op = new_interval(&c, -5, 10, 1, 1, 1);
    PUSH(op, &c, L, "k", 100, 1, "");
    PUSH(op, &c, R, "k", 100, 2, "J k:100=1 k:100=2 @100");
    ASSERT_EQ(tdm_joinop_buffered(op), 2);
    WM(op, &c, L, 104, "");
    WM(op, &c, R, 104, "W104");
    ASSERT_EQ(tdm_joinop_buffered(op), 2);
    WM(op, &c, L, 105, "");
    WM(op, &c, R, 105, "W105");
    ASSERT_EQ(tdm_joinop_buffered(op), 1); /* right 100 gone */
    WM(op, &c, L, 109, "");
    WM(op, &c, R, 109, "W109");
    ASSERT_EQ(tdm_joinop_buffered(op), 1);
    WM(op, &c, L, 110, "");
    WM(op, &c, R, 110, "W110");
    ASSERT_EQ(tdm_joinop_buffered(op), 0); /* left 100 gone */
    tdm_joinop_destroy(op);
}

/* Bounds [2, 5] (lower >= 0): a right record is cleaned at its own
 * timestamp; bounds [-5, -2] (upper <= 0): a left record is. */
TDM_TEST(interval_cleanup_times_one_sided_bounds)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 2, 5, 1, 1, 1);
    PUSH(op, &c, R, "k", 50, 1, "");
    PUSH(op, &c, L, "k", 50, 2, "");
    /* Not t - lower = 48: both still buffered at 49. */
    WM(op, &c, L, 49, "");
    WM(op, &c, R, 49, "W49");
    ASSERT_EQ(tdm_joinop_buffered(op), 2);
    WM(op, &c, L, 50, "");
    WM(op, &c, R, 50, "W50");
    ASSERT_EQ(tdm_joinop_buffered(op), 1); /* right 50 at 50, left at 55 */
    WM(op, &c, L, 54, "");
    WM(op, &c, R, 54, "W54");
    ASSERT_EQ(tdm_joinop_buffered(op), 1);
    WM(op, &c, L, 55, "");
    WM(op, &c, R, 55, "W55");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    tdm_joinop_destroy(op);

    op = new_interval(&c, -5, -2, 1, 1, 1);
    PUSH(op, &c, R, "k", 50, 1, "");
    PUSH(op, &c, L, "k", 50, 2, "");
    /* Not t + upper = 48: both still buffered at 49. */
    WM(op, &c, L, 49, "");
    WM(op, &c, R, 49, "W49");
    ASSERT_EQ(tdm_joinop_buffered(op), 2);
    WM(op, &c, L, 50, "");
    WM(op, &c, R, 50, "W50");
    ASSERT_EQ(tdm_joinop_buffered(op), 1); /* left 50 at 50, right at 55 */
    WM(op, &c, L, 55, "");
    WM(op, &c, R, 55, "W55");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    tdm_joinop_destroy(op);
}

/* The off-by-one of J4: bounds [0, 1], right 1 is cleaned when the
 * watermark reaches 1; a left record at 1 is then not late (1 < 1 is
 * false) and in range of right 1, yet no pair comes out.  Right 2 still
 * meets left 1. */
TDM_TEST(interval_cleanup_at_watermark_loses_boundary_match)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 0, 1, 1, 1, 1);
    PUSH(op, &c, R, "k", 1, 201, "");
    WM(op, &c, L, 1, "");
    WM(op, &c, R, 1, "W1");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    PUSH(op, &c, L, "k", 1, 101, "");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 0);
    PUSH(op, &c, R, "k", 2, 202, "J k:1=101 k:2=202 @2");
    WM(op, &c, L, 2, "");
    /* Watermark 2 removes left 1 (cleanup 1 + 1) and right 2 (at 2). */
    WM(op, &c, R, 2, "W2");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    PUSH(op, &c, L, "k", 2, 102, "");
    tdm_joinop_destroy(op);
}

/* A record whose cleanup time is already at or below the watermark is
 * buffered and its timer fires only at the next advance (timers fire when
 * the watermark advances), so it can still join until then. */
TDM_TEST(interval_cleanup_waits_for_next_advance)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 0, 0, 1, 1, 1);
    WM(op, &c, L, 10, "");
    WM(op, &c, R, 10, "W10");
    PUSH(op, &c, L, "k", 10, 1, "");
    PUSH(op, &c, R, "k", 10, 2, "J k:10=1 k:10=2 @10");
    ASSERT_EQ(tdm_joinop_buffered(op), 2);
    WM(op, &c, L, 11, "");
    WM(op, &c, R, 11, "W11");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    tdm_joinop_destroy(op);
}

/* ---- Watermarks of two sides (O2, J5) ---- */

/* One side idle lets the other's watermark through; the returning side
 * holds further progress without pulling the watermark back; the
 * operator is idle only when both sides are (newest: max flushed first). */
TDM_TEST(interval_idle_side)
{
    cap c;
    tdm_joinop *op = new_interval(&c, -1, 1, 1, 1, 1);
    /* Right still at MIN: min(1, MIN) emits nothing. */
    WM(op, &c, L, 1, "");
    /* Right idle: min over left alone = 1.  No status: left is active. */
    ASSERT_OK(tdm_joinop_status(op, R, 0, 1));
    ASSERT_STR_EQ(take(&c), "W1");
    WM(op, &c, L, 3, "W3");
    /* Right back, still at MIN: it holds, but 3 stays the watermark. */
    ASSERT_OK(tdm_joinop_status(op, R, 0, 0));
    ASSERT_STR_EQ(take(&c), "");
    WM(op, &c, L, 4, "");
    /* Lateness still uses 3: right 2 is late, right 3 is not. */
    PUSH(op, &c, R, "k", 2, 202, "");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 1);
    WM(op, &c, R, 4, "W4");
    WM(op, &c, L, 6, "");
    /* Left idle: min over right alone = 4, no change, no status. */
    ASSERT_OK(tdm_joinop_status(op, L, 0, 1));
    ASSERT_STR_EQ(take(&c), "");
    /* Both idle: the maximum over sides (6) is flushed, then IDLE. */
    ASSERT_OK(tdm_joinop_status(op, R, 0, 1));
    ASSERT_STR_EQ(take(&c), "W6; idle");
    /* Right active again (at 4 < 6): ACTIVE, the watermark stays. */
    ASSERT_OK(tdm_joinop_status(op, R, 0, 0));
    ASSERT_STR_EQ(take(&c), "active");
    /* Right 7 is the minimum over non-idle sides. */
    WM(op, &c, R, 7, "W7");
    tdm_joinop_destroy(op);
}

/* Each side has its own valve: a side's watermark is the minimum over its
 * channels, and the operator's is the minimum over sides. */
TDM_TEST(interval_channels_per_side)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 0, 0, 1, 1, 2);
    ASSERT_OK(tdm_joinop_watermark(op, L, 0, 5));
    ASSERT_STR_EQ(take(&c), ""); /* left channel 1 at MIN */
    ASSERT_OK(tdm_joinop_watermark(op, L, 1, 7));
    ASSERT_STR_EQ(take(&c), ""); /* left 5, right MIN */
    ASSERT_OK(tdm_joinop_watermark(op, R, 0, 9));
    ASSERT_STR_EQ(take(&c), "");
    ASSERT_OK(tdm_joinop_watermark(op, R, 1, 8));
    ASSERT_STR_EQ(take(&c), "W5"); /* min(min(5, 7), min(9, 8)) */
    /* Records on channel 1 of either side join as on channel 0. */
    tdm_record *rec = NULL;
    ASSERT_OK(tdm_record_new(&rec));
    tdm_record_set(rec, "k", 1, 6, 1);
    ASSERT_OK(tdm_joinop_push(op, L, 1, rec));
    tdm_record_set(rec, "k", 1, 6, 2);
    ASSERT_OK(tdm_joinop_push(op, R, 1, rec));
    ASSERT_STR_EQ(take(&c), "J k:6=1 k:6=2 @6");
    ASSERT_ERR(tdm_joinop_push(op, L, 2, rec), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_joinop_push(op, 2, 0, rec), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_joinop_push(op, -1, 0, rec), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_joinop_watermark(op, R, -1, 9), TDM_ERR_CHANNEL);
    ASSERT_ERR(tdm_joinop_status(op, R, 2, 1), TDM_ERR_CHANNEL);
    ASSERT_STR_EQ(take(&c), "");
    tdm_record_destroy(rec);
    tdm_joinop_destroy(op);
}

/* ---- End of input ---- */

/* End fires every cleanup timer (MAX reaches all of them, including
 * saturated ones), emits MAX once and leaves nothing buffered; the
 * intermediate minimum of one side ending first is not emitted. */
TDM_TEST(interval_end_of_input_empties_buffers)
{
    cap c;
    tdm_joinop *op = new_interval(&c, -10, 10, 1, 1, 1);
    WM(op, &c, L, 3, "");
    WM(op, &c, R, 20, "W3");
    PUSH(op, &c, L, "a", 5, 1, "");
    PUSH(op, &c, L, "b", 4, 2, "");
    /* Cleanup at MAX - 1 + 10, saturated to MAX. */
    PUSH(op, &c, L, "c", TDM_TIME_MAX - 1, 3, "");
    PUSH(op, &c, R, "c", TDM_TIME_MAX, 4,
         "J c:9223372036854775806=3 c:MAX=4 @MAX");
    ASSERT_EQ(tdm_joinop_buffered(op), 4);
    ASSERT_OK(tdm_joinop_end(op));
    /* Left ends first: min(MAX, 20) = 20 must not show. */
    ASSERT_STR_EQ(take(&c), "WMAX");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    ASSERT_ERR(push(op, L, "a", 6, 1), TDM_ERR_STATE);
    ASSERT_ERR(tdm_joinop_watermark(op, L, 0, 9), TDM_ERR_STATE);
    ASSERT_ERR(tdm_joinop_status(op, L, 0, 1), TDM_ERR_STATE);
    ASSERT_ERR(tdm_joinop_end(op), TDM_ERR_STATE);
    ASSERT_STR_EQ(take(&c), "");
    tdm_joinop_destroy(op);
}

/* End while both sides are idle: ACTIVE, then MAX. */
TDM_TEST(interval_end_while_idle)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 0, 0, 1, 1, 1);
    WM(op, &c, L, 3, "");
    WM(op, &c, R, 4, "W3");
    ASSERT_OK(tdm_joinop_status(op, L, 0, 1));
    ASSERT_STR_EQ(take(&c), "W4");
    ASSERT_OK(tdm_joinop_status(op, R, 0, 1));
    ASSERT_STR_EQ(take(&c), "idle");
    ASSERT_OK(tdm_joinop_end(op));
    ASSERT_STR_EQ(take(&c), "active; WMAX");
    tdm_joinop_destroy(op);
}

/* ---- Bounds at the edges of the time axis ---- */

/* Bounds [MAX - 1, MAX]: left l joins r iff l + MAX - 1 <= r.  For l = 2
 * that lower bound is beyond MAX, so nothing joins (a clamped bound would
 * wrongly admit r = MAX); for l = 1 and l = 0 right MAX joins. */
TDM_TEST(interval_bounds_beyond_time_axis)
{
    cap c;
    tdm_joinop *op = new_interval(&c, TDM_TIME_MAX - 1, TDM_TIME_MAX, 1, 1, 1);
    PUSH(op, &c, R, "k", TDM_TIME_MAX, 1, "");
    PUSH(op, &c, L, "k", 2, 2, "");
    PUSH(op, &c, L, "k", 1, 3, "J k:1=3 k:MAX=1 @MAX");
    PUSH(op, &c, L, "k", 0, 4, "J k:0=4 k:MAX=1 @MAX");
    /* A right record at 1 meets left in [1 - MAX, 1 - (MAX - 1)] =
     * [MIN + 2, MIN + 3]: none of 0, 1, 2. */
    PUSH(op, &c, R, "k", 1, 5, "");
    /* Left MIN + 2 meets right in [MIN + 2 + MAX - 1, MIN + 2 + MAX] =
     * [0, 1]: right 1. */
    PUSH(op, &c, L, "k", TDM_TIME_MIN + 2, 6,
         "J k:-9223372036854775806=6 k:1=5 @1");
    tdm_joinop_destroy(op);

    /* Bounds [MIN, MIN + 1]: l joins r iff r <= l + MIN + 1, i.e. only
     * for l >= 0 can r reach the axis; l = -1 admits r = MIN only (no
     * timestamp), l = 0 admits r up to MIN + 1. */
    op = new_interval(&c, TDM_TIME_MIN, TDM_TIME_MIN + 1, 1, 1, 1);
    PUSH(op, &c, R, "k", TDM_TIME_MIN + 1, 1, "");
    PUSH(op, &c, L, "k", -1, 2, "");
    PUSH(op, &c, L, "k", 0, 3, "J k:0=3 k:-9223372036854775807=1 @0");
    tdm_joinop_destroy(op);
}

/* ---- Configuration and bad input ---- */

TDM_TEST(interval_bad_configuration)
{
    tdm_joinop *op = (tdm_joinop *)1;
    char err[256];
    cap c;
    memset(&c, 0, sizeof c);
    /* lower > upper. */
    err[0] = '\0';
    ASSERT_ERR(tdm_joinop_new_interval(5, 3, 1, 1, 1, NULL, on_event, &c, &op,
                                       err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(op == NULL);
    ASSERT_TRUE(strstr(err, "lower_ms") && strstr(err, "upper_ms"));
    /* (0, 1) exclusive on both ends is [1, 0]: empty, rejected. */
    err[0] = '\0';
    ASSERT_ERR(tdm_joinop_new_interval(0, 1, 0, 0, 1, NULL, on_event, &c, &op,
                                       err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "lower_ms") && strstr(err, "upper_ms"));
    /* Exclusive at the end of the axis. */
    err[0] = '\0';
    ASSERT_ERR(tdm_joinop_new_interval(TDM_TIME_MAX, TDM_TIME_MAX, 0, 1, 1,
                                       NULL, on_event, &c, &op, err,
                                       sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "lower_ms") != NULL);
    err[0] = '\0';
    ASSERT_ERR(tdm_joinop_new_interval(TDM_TIME_MIN, TDM_TIME_MIN, 1, 0, 1,
                                       NULL, on_event, &c, &op, err,
                                       sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "upper_ms") != NULL);
    /* Channels and out. */
    err[0] = '\0';
    ASSERT_ERR(tdm_joinop_new_interval(0, 1, 1, 1, 0, NULL, on_event, &c, &op,
                                       err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "n_channels") != NULL);
    ASSERT_ERR(tdm_joinop_new_interval(0, 1, 1, 1, 1, NULL, on_event, &c, NULL,
                                       NULL, 0),
               TDM_ERR_INVAL);
    /* (0, 1] is [1, 1]: accepted. */
    ASSERT_OK(tdm_joinop_new_interval(0, 1, 0, 1, 1, NULL, on_event, &c, &op,
                                      err, sizeof err));
    tdm_joinop_destroy(op);
    /* Destroying NULL is harmless; accessors tolerate NULL. */
    tdm_joinop_destroy(NULL);
    ASSERT_EQ(tdm_joinop_buffered(NULL), 0);
    ASSERT_TRUE(tdm_joinop_errmsg(NULL) != NULL);
}

/* A record without timestamp is refused with a message naming side and
 * key, and changes nothing (J2 step 1). */
TDM_TEST(interval_record_without_timestamp)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 0, 0, 1, 1, 1);
    ASSERT_ERR(push(op, L, "user-42", TDM_TIME_MIN, 1), TDM_ERR_NO_TIMESTAMP);
    ASSERT_TRUE(strstr(tdm_joinop_errmsg(op), "left") != NULL);
    ASSERT_TRUE(strstr(tdm_joinop_errmsg(op), "user-42") != NULL);
    ASSERT_ERR(push(op, R, "user-7", TDM_TIME_MIN, 1), TDM_ERR_NO_TIMESTAMP);
    ASSERT_TRUE(strstr(tdm_joinop_errmsg(op), "right") != NULL);
    ASSERT_TRUE(strstr(tdm_joinop_errmsg(op), "user-7") != NULL);
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    ASSERT_EQ(tdm_joinop_late_dropped(op), 0);
    ASSERT_STR_EQ(take(&c), "");
    /* The operator goes on. */
    PUSH(op, &c, L, "user-42", 1, 1, "");
    PUSH(op, &c, R, "user-42", 1, 2, "J user-42:1=1 user-42:1=2 @1");
    ASSERT_ERR(tdm_joinop_push(op, L, 0, NULL), TDM_ERR_INVAL);
    tdm_joinop_destroy(op);
}

/* Buffered records are copies: the caller may reuse key and payload
 * memory at once. */
TDM_TEST(interval_records_are_copied)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 0, 0, 1, 1, 1);
    char key[8] = "k1";
    char payload[8] = "abc";
    tdm_record *rec = NULL;
    ASSERT_OK(tdm_record_new(&rec));
    tdm_record_set(rec, key, 2, 7, 1);
    tdm_record_set_payload(rec, payload, 3);
    ASSERT_OK(tdm_joinop_push(op, L, 0, rec));
    memcpy(key, "zz", 2);
    memcpy(payload, "xyz", 3);
    tdm_record_set(rec, "k1", 2, 7, 2);
    ASSERT_OK(tdm_joinop_push(op, R, 0, rec));
    ASSERT_STR_EQ(take(&c), "J k1:7=1 k1:7=2 @7");
    ASSERT_STR_EQ(c.last_lpayload, "abc");
    ASSERT_STR_EQ(c.last_lkey, "k1");
    ASSERT_STR_EQ(c.last_rkey, "k1");
    tdm_record_destroy(rec);
    tdm_joinop_destroy(op);
}

/* Out of memory at any point of a push returns TDM_ERR_NOMEM and leaves
 * no output and no state (ASan checks that nothing leaks). */
TDM_TEST(interval_out_of_memory_on_push)
{
    for (long n = 1; n <= 12; n++) {
        cap c;
        tdm_joinop *op = new_interval(&c, 0, 0, 1, 1, 1);
        ASSERT_OK(push(op, L, "k", 1, 1));
        tdm__alloc_fail_after(n);
        tdm_err e1 = push(op, R, "k", 1, 2);
        tdm_err e2 = push(op, L, "new", 1, 3);
        tdm__alloc_fail_after(0);
        const char *out = take(&c);
        if (e1 == TDM_OK) {
            ASSERT_STR_EQ(out, "J k:1=1 k:1=2 @1");
        } else {
            ASSERT_ERR(e1, TDM_ERR_NOMEM);
            ASSERT_STR_EQ(out, "");
        }
        ASSERT_TRUE(e2 == TDM_OK || e2 == TDM_ERR_NOMEM);
        ASSERT_EQ(tdm_joinop_buffered(op), 1 + (e1 == TDM_OK) + (e2 == TDM_OK));
        /* A right "new" joins left "new" only if that one was kept. */
        PUSH(op, &c, R, "new", 1, 4,
             e2 == TDM_OK ? "J new:1=3 new:1=4 @1" : "");
        ASSERT_OK(tdm_joinop_end(op));
        ASSERT_STR_EQ(take(&c), "WMAX");
        ASSERT_EQ(tdm_joinop_buffered(op), 0);
        tdm_joinop_destroy(op);
    }
}

/* Construction fails cleanly at every allocation. */
TDM_TEST(interval_out_of_memory_on_create)
{
    for (long n = 1; n <= 40; n++) {
        tdm_joinop *op = (tdm_joinop *)1;
        tdm__alloc_fail_after(n);
        tdm_err e = tdm_joinop_new_interval(0, 1, 1, 1, 2, NULL, NULL, NULL,
                                            &op, NULL, 0);
        tdm__alloc_fail_after(0);
        if (e == TDM_OK) {
            tdm_joinop_destroy(op);
            continue;
        }
        ASSERT_ERR(e, TDM_ERR_NOMEM);
        ASSERT_TRUE(op == NULL);
    }
}

/* ---- A naive model of the rules, on random input ---- */

/* Sums a hash of every pair emitted (a multiset fingerprint) and counts
 * them, for the model test below. */
typedef struct fp_sink {
    uint64_t sum;
    int64_t pairs;
} fp_sink;

static uint64_t pair_hash(tdm_time_ms lts, double lv, tdm_time_ms rts,
                          double rv, tdm_time_ms t)
{
    uint64_t h = 1469598103934665603ULL;
    int64_t parts[5] = {lts, (int64_t)lv, rts, (int64_t)rv, t};
    for (int i = 0; i < 5; i++) {
        h ^= (uint64_t)parts[i];
        h *= 1099511628211ULL;
        h ^= h >> 29;
    }
    return h;
}

static void on_fp(void *opaque, const tdm_event *ev)
{
    fp_sink *f = opaque;
    if (tdm_event_get_type(ev) != TDM_EVENT_JOIN)
        return;
    const tdm_record *l = tdm_event_record(ev, 0);
    const tdm_record *r = tdm_event_record(ev, 1);
    f->sum += pair_hash(tdm_record_ts(l), tdm_record_value(l), tdm_record_ts(r),
                        tdm_record_value(r), tdm_event_time(ev));
    f->pairs++;
}

/* The model keeps every buffered record in a flat list and applies the
 * rules literally: late iff ts < min(left wm, right wm); join against
 * every record of the other side and key with l + lo <= r <= l + hi;
 * drop a record once the watermark has advanced to or past its cleanup
 * time (J4).  Keys, timestamps and watermarks come from a fixed-seed
 * generator, timestamps out of order, so buckets are inserted in the
 * middle and removed from the front and the middle. */
typedef struct mrec {
    int side, key;
    tdm_time_ms ts, clean;
    double v;
} mrec;

TDM_TEST(interval_matches_naive_model)
{
    static mrec buf[4096];
    const tdm_time_ms bounds[4][2] = {{-7, 3}, {0, 0}, {2, 9}, {-9, -2}};
    uint64_t seed = 12345;
    for (int b = 0; b < 4; b++) {
        tdm_time_ms lo = bounds[b][0], hi = bounds[b][1];
        fp_sink f = {0, 0};
        tdm_joinop *op = NULL;
        ASSERT_OK(tdm_joinop_new_interval(lo, hi, 1, 1, 1, NULL, on_fp, &f, &op,
                                          NULL, 0));
        int n = 0;
        tdm_time_ms wm[2] = {TDM_TIME_MIN, TDM_TIME_MIN};
        tdm_time_ms opwm = TDM_TIME_MIN;
        tdm_time_ms base = 0;
        uint64_t want_sum = 0;
        int64_t want_pairs = 0, want_late = 0;
        for (int step = 0; step < 3000; step++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned r = (unsigned)(seed >> 33);
            int side = (int)((r >> 3) & 1);
            if (r % 10 == 0) {
                /* A watermark somewhere behind the newest timestamps. */
                tdm_time_ms w = base - (tdm_time_ms)((r >> 4) % 12);
                ASSERT_OK(tdm_joinop_watermark(op, side, 0, w));
                if (w > wm[side])
                    wm[side] = w;
                tdm_time_ms m = wm[0] < wm[1] ? wm[0] : wm[1];
                if (m > opwm) {
                    opwm = m;
                    int k = 0;
                    for (int i = 0; i < n; i++)
                        if (buf[i].clean > opwm)
                            buf[k++] = buf[i];
                    n = k;
                }
                continue;
            }
            base += (r >> 8) % 3;
            int key = (int)((r >> 12) % 3);
            tdm_time_ms ts = base - (tdm_time_ms)((r >> 16) % 15);
            double v = step;
            char kname[2] = {(char)('a' + key), 0};
            ASSERT_OK(push(op, side, kname, ts, v));
            if (ts < opwm) {
                want_late++;
                continue;
            }
            for (int i = 0; i < n; i++) {
                if (buf[i].side == side || buf[i].key != key)
                    continue;
                tdm_time_ms lts = side == 0 ? ts : buf[i].ts;
                tdm_time_ms rts = side == 0 ? buf[i].ts : ts;
                if (lts + lo <= rts && rts <= lts + hi) {
                    double lv = side == 0 ? v : buf[i].v;
                    double rv = side == 0 ? buf[i].v : v;
                    want_sum +=
                        pair_hash(lts, lv, rts, rv, lts > rts ? lts : rts);
                    want_pairs++;
                }
            }
            ASSERT_TRUE(n < 4096);
            buf[n].side = side;
            buf[n].key = key;
            buf[n].ts = ts;
            buf[n].v = v;
            buf[n].clean =
                side == 0 ? (hi > 0 ? ts + hi : ts) : (lo < 0 ? ts - lo : ts);
            n++;
            ASSERT_EQ(tdm_joinop_buffered(op), n);
        }
        ASSERT_EQ(f.pairs, want_pairs);
        ASSERT_TRUE(f.sum == want_sum);
        ASSERT_EQ(tdm_joinop_late_dropped(op), want_late);
        ASSERT_TRUE(want_pairs > 150 && want_late > 50);
        ASSERT_OK(tdm_joinop_end(op));
        ASSERT_EQ(tdm_joinop_buffered(op), 0);
        tdm_joinop_destroy(op);
    }
}

/* The same rules on wider input for the slice store (join_interval.c):
 * 40 keys, some longer than the inline key bytes, timestamps spread over
 * many 64 ms slices with up to 300 ms of disorder, bounds up to 200 ms
 * wide.  Besides the pairs, checks after every step the order of the
 * pairs one record makes (the other side's records by timestamp, arrival
 * order within one), the buffered count and the keys with live records
 * (tdm__joinop_state_keys: keys whose records were all cleaned do not
 * count, even while a slice still holds them). */
typedef struct seq_sink {
    double other[4096]; /* value of the stored record of each pair */
    int n;
    int side; /* side of the record being pushed */
} seq_sink;

static void on_seq(void *opaque, const tdm_event *ev)
{
    seq_sink *q = opaque;
    if (tdm_event_get_type(ev) != TDM_EVENT_JOIN || q->n == 4096)
        return;
    q->other[q->n++] = tdm_record_value(tdm_event_record(ev, !q->side));
}

static void model_key(char *buf, size_t n, int key)
{
    if (key % 3 == 0)
        snprintf(buf, n, "a-rather-long-key-number-%d", key);
    else
        snprintf(buf, n, "k%d", key);
}

TDM_TEST(interval_matches_model_order_and_keys)
{
    static mrec buf[8192];
    static double want[4096];
    const tdm_time_ms bounds[4][2] = {{0, 200}, {-130, 70}, {0, 0}, {-50, -3}};
    uint64_t seed = 777;
    for (int b = 0; b < 4; b++) {
        tdm_time_ms lo = bounds[b][0], hi = bounds[b][1];
        static seq_sink q;
        q.n = 0;
        tdm_joinop *op = NULL;
        ASSERT_OK(tdm_joinop_new_interval(lo, hi, 1, 1, 1, NULL, on_seq, &q,
                                          &op, NULL, 0));
        int n = 0;
        tdm_time_ms wm[2] = {TDM_TIME_MIN, TDM_TIME_MIN};
        tdm_time_ms opwm = TDM_TIME_MIN;
        tdm_time_ms base = -5000;
        int64_t pairs = 0, late = 0;
        for (int step = 0; step < 6000; step++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned r = (unsigned)(seed >> 33);
            int side = (int)((r >> 3) & 1);
            if (r % 16 == 0) {
                side = (int)((r >> 20) & 1);
                tdm_time_ms w = base - 250 - (tdm_time_ms)((r >> 4) % 200);
                ASSERT_OK(tdm_joinop_watermark(op, side, 0, w));
                if (w > wm[side])
                    wm[side] = w;
                tdm_time_ms m = wm[0] < wm[1] ? wm[0] : wm[1];
                if (m > opwm) {
                    opwm = m;
                    int k = 0;
                    for (int i = 0; i < n; i++)
                        if (buf[i].clean > opwm)
                            buf[k++] = buf[i];
                    n = k;
                }
            } else {
                base += (r >> 8) % 4;
                int key = (int)((r >> 12) % 40);
                tdm_time_ms ts = base - (tdm_time_ms)((r >> 16) % 300);
                /* Some late records, and some exactly at the watermark
                 * (kept until the next advance even when cleaned at it). */
                if ((r >> 24) % 25 == 0)
                    ts -= 300;
                else if ((r >> 24) % 25 == 1 && opwm != TDM_TIME_MIN)
                    ts = opwm;
                double v = step;
                char kname[48];
                model_key(kname, sizeof kname, key);
                q.n = 0;
                q.side = side;
                ASSERT_OK(push(op, side, kname, ts, v));
                int nw = 0;
                late += ts < opwm;
                if (ts >= opwm) {
                    /* Matches by timestamp, then arrival (a stable
                     * insertion sort of the buffer's order). */
                    for (int i = 0; i < n; i++) {
                        if (buf[i].side == side || buf[i].key != key)
                            continue;
                        tdm_time_ms lts = side == 0 ? ts : buf[i].ts;
                        tdm_time_ms rts = side == 0 ? buf[i].ts : ts;
                        if (!(lts + lo <= rts && rts <= lts + hi))
                            continue;
                        int j = nw++;
                        while (j > 0 && buf[(int)want[j - 1]].ts > buf[i].ts) {
                            want[j] = want[j - 1];
                            j--;
                        }
                        want[j] = i;
                    }
                    for (int j = 0; j < nw; j++)
                        want[j] = buf[(int)want[j]].v;
                    ASSERT_TRUE(n < 8192);
                    buf[n].side = side;
                    buf[n].key = key;
                    buf[n].ts = ts;
                    buf[n].v = v;
                    buf[n].clean = side == 0 ? (hi > 0 ? ts + hi : ts)
                                             : (lo < 0 ? ts - lo : ts);
                    n++;
                }
                ASSERT_EQ(q.n, nw);
                for (int j = 0; j < nw; j++)
                    ASSERT_TRUE(q.other[j] == want[j]);
                pairs += nw;
            }
            ASSERT_EQ(tdm_joinop_buffered(op), n);
            int keys = 0;
            for (int i = 0; i < n; i++) {
                int first = 1;
                for (int j = 0; j < i && first; j++)
                    first = buf[j].key != buf[i].key;
                keys += first;
            }
            ASSERT_EQ(tdm__joinop_state_keys(op), keys);
        }
        ASSERT_EQ(tdm_joinop_late_dropped(op), late);
        ASSERT_TRUE(pairs > (lo == hi ? 20 : 1000) && late > 100);
        ASSERT_OK(tdm_joinop_end(op));
        ASSERT_EQ(tdm_joinop_buffered(op), 0);
        ASSERT_EQ(tdm__joinop_state_keys(op), 0);
        tdm_joinop_destroy(op);
    }
}

/* Regression (the slice store keeps cleaned records in memory until
 * their whole 64 ms slice is cleaned): a cleaned record must not join
 * and its key must not count, while a record of the same key and
 * timestamp buffered after the advance does both.  Bounds [0, 0]: right
 * 10 is cleaned at watermark 10; a second right 10 comes after that
 * advance (not late: 10 < 10 is false). */
TDM_TEST(interval_cleaned_record_in_its_slice_joins_nothing)
{
    cap c;
    tdm_joinop *op = new_interval(&c, 0, 0, 1, 1, 1);
    PUSH(op, &c, R, "k", 10, 1, "");
    PUSH(op, &c, R, "k", 11, 3, "");
    ASSERT_EQ(tdm__joinop_state_keys(op), 1);
    WM(op, &c, L, 10, "");
    WM(op, &c, R, 10, "W10");
    ASSERT_EQ(tdm_joinop_buffered(op), 1);
    ASSERT_EQ(tdm__joinop_state_keys(op), 1);
    WM(op, &c, L, 11, "");
    WM(op, &c, R, 11, "W11");
    /* Both cleaned, though their slice [0, 63] is still held. */
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    ASSERT_EQ(tdm__joinop_state_keys(op), 0);
    /* Left 11 is not late and meets nothing. */
    PUSH(op, &c, L, "k", 11, 2, "");
    ASSERT_EQ(tdm__joinop_state_keys(op), 1);
    /* A right 11 after the advance joins the left 11 only. */
    PUSH(op, &c, R, "k", 11, 4, "J k:11=2 k:11=4 @11");
    ASSERT_EQ(tdm_joinop_buffered(op), 2);
    /* The next advance cleans both: cleanup time 11 <= 12. */
    WM(op, &c, L, 12, "");
    WM(op, &c, R, 12, "W12");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    ASSERT_EQ(tdm__joinop_state_keys(op), 0);
    PUSH(op, &c, L, "k", 12, 5, "");
    /* Past the slice: it is dropped, the key too. */
    WM(op, &c, L, 100, "");
    WM(op, &c, R, 100, "W100");
    ASSERT_EQ(tdm__joinop_state_keys(op), 0);
    ASSERT_TRUE(tdm__joinop_state_bytes(op) > 0);
    tdm_joinop_destroy(op);
}

/* Pairs of one record come out by the stored records' timestamps, in
 * arrival order within one, also when they arrived out of order within
 * a slice and across slices (bounds [0, 300]: a left at 0 meets rights
 * 0..300). */
TDM_TEST(interval_pairs_in_timestamp_order)
{
    static seq_sink q;
    q.n = 0;
    tdm_joinop *op = NULL;
    ASSERT_OK(tdm_joinop_new_interval(0, 300, 1, 1, 1, NULL, on_seq, &q, &op,
                                      NULL, 0));
    const tdm_time_ms ts[] = {250, 50, 10, 30, 10, 200, 5, 10, 299};
    for (int i = 0; i < (int)(sizeof ts / sizeof ts[0]); i++)
        ASSERT_OK(push(op, R, "k", ts[i], 100 + i));
    q.side = L;
    ASSERT_OK(push(op, L, "k", 0, 1));
    /* 5, 10 (x3 in arrival order), 30, 50, 200, 250, 299. */
    const double want[] = {106, 102, 104, 107, 103, 101, 105, 100, 108};
    ASSERT_EQ(q.n, 9);
    for (int i = 0; i < 9; i++)
        ASSERT_TRUE(q.other[i] == want[i]);
    tdm_joinop_destroy(op);
}

/* ---- Window join ---- */

static tdm_joinop *new_window_join(cap *c, tdm_assigner *asg)
{
    memset(c, 0, sizeof *c);
    tdm_joinop *op = NULL;
    char err[256] = "";
    if (tdm_joinop_new_window(asg, 1, NULL, on_event, c, &op, err,
                              sizeof err) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "new_window: %s", err);
    return op;
}

static tdm_assigner *tumbling(tdm_time_ms size)
{
    tdm_assigner *a = NULL;
    if (tdm_assigner_new_tumbling(size, 0, &a, NULL, 0) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "tumbling");
    return a;
}

static tdm_assigner *sliding(tdm_time_ms size, tdm_time_ms slide)
{
    tdm_assigner *a = NULL;
    if (tdm_assigner_new_sliding(size, slide, 0, &a, NULL, 0) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "sliding");
    return a;
}

/* Tumbling windows of 10: [0, 10) fires at watermark 9 with every
 * (left, right) pair of key k in it, stamped 9; a window with records of
 * one side only emits nothing; [10, 20) fires at end of input. */
TDM_TEST(window_join_tumbling_pairs)
{
    cap c;
    tdm_joinop *op = new_window_join(&c, tumbling(10));
    PUSH(op, &c, L, "k", 1, 1, "");
    PUSH(op, &c, L, "k", 5, 2, "");
    PUSH(op, &c, R, "k", 7, 3, "");
    PUSH(op, &c, R, "k", 12, 4, "");
    PUSH(op, &c, L, "other", 3, 5, "");
    PUSH(op, &c, R, "k", 9, 6, "");
    ASSERT_EQ(tdm_joinop_buffered(op), 6);
    WM(op, &c, L, 9, "");
    /* Watermark 8 is below end - 1 = 9: nothing fires yet. */
    WM(op, &c, R, 8, "W8");
    WM(op, &c, R, 9,
       "J k:1=1 k:7=3 @9; J k:1=1 k:9=6 @9; J k:5=2 k:7=3 @9; "
       "J k:5=2 k:9=6 @9; W9");
    ASSERT_EQ(c.has_window, 1);
    ASSERT_EQ(c.win_start, 0);
    ASSERT_EQ(c.win_end, 10);
    /* Windows [0, 10) of k and of "other" are gone; right 12 remains. */
    ASSERT_EQ(tdm_joinop_buffered(op), 1);
    PUSH(op, &c, L, "k", 15, 7, "");
    ASSERT_OK(tdm_joinop_end(op));
    ASSERT_STR_EQ(take(&c), "J k:15=7 k:12=4 @19; WMAX");
    ASSERT_EQ(c.win_start, 10);
    ASSERT_EQ(c.win_end, 20);
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    tdm_joinop_destroy(op);
}

/* Flink's window join is a coGroup over the union of both inputs, and a
 * union is one valve (rule O3): left and right channels share the minimum,
 * and a side that returns from idle below the watermark is unaligned - it
 * does not hold progress, unlike the interval join's combiner (rule O2,
 * test interval_idle_side).  Left 5, right 20 -> 5; left idle -> 20 (V4
 * recompute over the remaining aligned channel); left active again at 5 <
 * 20 -> unaligned (V5); right 30 -> 30 is not held back. */
TDM_TEST(window_join_sides_share_one_valve)
{
    cap c;
    tdm_joinop *op = new_window_join(&c, tumbling(10));
    WM(op, &c, L, 5, "");
    WM(op, &c, R, 20, "W5");
    ASSERT_OK(tdm_joinop_status(op, L, 0, 1));
    ASSERT_STR_EQ(take(&c), "W20");
    ASSERT_OK(tdm_joinop_status(op, L, 0, 0));
    ASSERT_STR_EQ(take(&c), "");
    WM(op, &c, R, 30, "W30");
    /* Left 25 is still below 30: ignored for the minimum.  Left 35 catches
     * up and realigns; the minimum is then min(35, 30) = 30, no change. */
    WM(op, &c, L, 25, "");
    WM(op, &c, L, 35, "");
    WM(op, &c, R, 40, "W35");
    tdm_joinop_destroy(op);
}

/* A record is late when all its windows are (end - 1 <= watermark), so
 * at watermark 9 records at 8 and at 9 are late for [0, 10), unlike in
 * the interval join; dropped and counted, or sent to the late output. */
TDM_TEST(window_join_late_records)
{
    cap c;
    tdm_joinop *op = new_window_join(&c, tumbling(10));
    WM(op, &c, L, 9, "");
    WM(op, &c, R, 9, "W9");
    PUSH(op, &c, L, "k", 8, 1, "");
    PUSH(op, &c, R, "k", 9, 2, "");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 2);
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    PUSH(op, &c, L, "k", 10, 3, "");
    ASSERT_EQ(tdm_joinop_buffered(op), 1);
    tdm_joinop_destroy(op);

    op = new_window_join(&c, tumbling(10));
    ASSERT_OK(tdm_joinop_set_late_output(op, 1));
    WM(op, &c, L, 9, "");
    WM(op, &c, R, 9, "W9");
    PUSH(op, &c, L, "k", 8, 1, "Ll k:8=1");
    PUSH(op, &c, R, "k", 9, 2, "Lr k:9=2");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 0);
    tdm_joinop_destroy(op);
}

/* Sliding windows of 10 every 5: ts 7 is in [5, 15) and [0, 10), ts 3 in
 * [0, 10) and [-5, 5), ts 12 in [10, 20) and [5, 15).  A record whose
 * oldest window is late but a newer one is open goes to the open one
 * only, silently (R2.2); one whose windows are all late is late. */
TDM_TEST(window_join_sliding_pairs_and_partial_lateness)
{
    cap c;
    tdm_joinop *op = new_window_join(&c, sliding(10, 5));
    PUSH(op, &c, L, "k", 7, 1, "");
    PUSH(op, &c, R, "k", 3, 2, "");
    PUSH(op, &c, R, "k", 12, 3, "");
    ASSERT_EQ(tdm_joinop_buffered(op), 6);
    WM(op, &c, L, 9, "");
    /* [-5, 5) (right only) and [0, 10) (left 7, right 3) fire. */
    WM(op, &c, R, 9, "J k:7=1 k:3=2 @9; W9");
    ASSERT_EQ(c.win_start, 0);
    ASSERT_EQ(c.win_end, 10);
    ASSERT_EQ(tdm_joinop_buffered(op), 3);
    /* Left 8: [0, 10) is late, [5, 15) takes it; nothing is counted. */
    PUSH(op, &c, L, "k", 8, 4, "");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 0);
    ASSERT_EQ(tdm_joinop_buffered(op), 4);
    WM(op, &c, L, 14, "");
    /* [5, 15): lefts 7 and 8 with right 12. */
    WM(op, &c, R, 14, "J k:7=1 k:12=3 @14; J k:8=4 k:12=3 @14; W14");
    /* Right 4: [0, 10) and [-5, 5) are both late. */
    PUSH(op, &c, R, "k", 4, 5, "");
    ASSERT_EQ(tdm_joinop_late_dropped(op), 1);
    ASSERT_OK(tdm_joinop_end(op));
    /* [10, 20) holds right 12 only: no pair. */
    ASSERT_STR_EQ(take(&c), "WMAX");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    tdm_joinop_destroy(op);
}

/* Session, global and processing-time assigners are refused (and freed:
 * the operator takes ownership even on failure). */
TDM_TEST(window_join_bad_configuration)
{
    cap c;
    memset(&c, 0, sizeof c);
    char err[256];
    tdm_joinop *op = (tdm_joinop *)1;
    tdm_assigner *a = NULL;

    ASSERT_OK(tdm_assigner_new_session(10, &a, NULL, 0));
    err[0] = '\0';
    ASSERT_ERR(
        tdm_joinop_new_window(a, 1, NULL, on_event, &c, &op, err, sizeof err),
        TDM_ERR_INVAL);
    ASSERT_TRUE(op == NULL);
    ASSERT_TRUE(strstr(err, "asg") && strstr(err, "session"));

    ASSERT_OK(tdm_assigner_new_global(&a));
    err[0] = '\0';
    ASSERT_ERR(
        tdm_joinop_new_window(a, 1, NULL, on_event, &c, &op, err, sizeof err),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "asg") && strstr(err, "global"));

    a = tumbling(10);
    ASSERT_OK(tdm_assigner_set_processing_time(a));
    err[0] = '\0';
    ASSERT_ERR(
        tdm_joinop_new_window(a, 1, NULL, on_event, &c, &op, err, sizeof err),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "asg") && strstr(err, "processing"));

    err[0] = '\0';
    ASSERT_ERR(tdm_joinop_new_window(tumbling(10), 0, NULL, on_event, &c, &op,
                                     err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "n_channels") != NULL);
    ASSERT_ERR(tdm_joinop_new_window(NULL, 1, NULL, on_event, &c, &op, err,
                                     sizeof err),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm_joinop_new_window(tumbling(10), 1, NULL, on_event, &c, NULL,
                                     err, sizeof err),
               TDM_ERR_INVAL);
}

/* A window join refuses records without timestamp like the interval
 * join, naming side and key. */
TDM_TEST(window_join_record_without_timestamp)
{
    cap c;
    tdm_joinop *op = new_window_join(&c, tumbling(10));
    ASSERT_ERR(push(op, R, "key-9", TDM_TIME_MIN, 1), TDM_ERR_NO_TIMESTAMP);
    ASSERT_TRUE(strstr(tdm_joinop_errmsg(op), "right") != NULL);
    ASSERT_TRUE(strstr(tdm_joinop_errmsg(op), "key-9") != NULL);
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    ASSERT_STR_EQ(take(&c), "");
    tdm_joinop_destroy(op);
}

/* Out of memory half way through a sliding assignment leaves the record
 * in no window; the windows fire as if it never came. */
TDM_TEST(window_join_out_of_memory_on_push)
{
    for (long n = 1; n <= 16; n++) {
        cap c;
        /* Size 30 every 10: ts 25 is in [20, 50), [10, 40), [0, 30). */
        tdm_joinop *op = new_window_join(&c, sliding(30, 10));
        ASSERT_OK(push(op, L, "k", 25, 1));
        tdm__alloc_fail_after(n);
        tdm_err e1 = push(op, R, "k", 26, 2);
        tdm_err e2 = push(op, R, "new", 26, 3);
        tdm__alloc_fail_after(0);
        ASSERT_TRUE(e1 == TDM_OK || e1 == TDM_ERR_NOMEM);
        ASSERT_TRUE(e2 == TDM_OK || e2 == TDM_ERR_NOMEM);
        ASSERT_EQ(tdm_joinop_buffered(op),
                  3 + 3 * (e1 == TDM_OK) + 3 * (e2 == TDM_OK));
        ASSERT_OK(tdm_joinop_end(op));
        ASSERT_STR_EQ(take(&c), e1 == TDM_OK ? "J k:25=1 k:26=2 @29; "
                                               "J k:25=1 k:26=2 @39; "
                                               "J k:25=1 k:26=2 @49; WMAX"
                                             : "WMAX");
        ASSERT_EQ(tdm_joinop_buffered(op), 0);
        tdm_joinop_destroy(op);
    }
}

/* ---- Window join against a naive model ---- */

/* One pair as the window join emitted it or as the model expects it. */
typedef struct wpair {
    tdm_time_ms end; /* window end */
    int key;
    int lid, rid; /* record ids (the value pushed) */
} wpair;

#define WP_MAX 20000

typedef struct wp_sink {
    wpair p[WP_MAX];
    int n;
    int bad;            /* a pair with a malformed key, payload or timestamp */
    tdm_time_ms lo, hi; /* pairs of this step must fire in (lo, hi] */
} wp_sink;

/* Keys of the model: different lengths, so hashing sees short and long
 * keys; the payload of a record is "p<id>" (checked on every pair). */
static const char *const wkeys[5] = {"a", "bb", "key-number-3",
                                     "a-rather-long-key-number-four", ""};

static void on_wp(void *opaque, const tdm_event *ev)
{
    wp_sink *f = opaque;
    if (tdm_event_get_type(ev) != TDM_EVENT_JOIN)
        return;
    const tdm_record *rec[2] = {tdm_event_record(ev, 0),
                                tdm_event_record(ev, 1)};
    tdm_time_ms s, e;
    if (!tdm_event_window(ev, &s, &e) || tdm_event_time(ev) != e - 1 ||
        e - 1 <= f->lo || e - 1 > f->hi || f->n == WP_MAX) {
        f->bad++;
        return;
    }
    int key = -1, id[2];
    for (int i = 0; i < 2; i++) {
        size_t kl, pl;
        const char *k = tdm_record_key(rec[i], &kl);
        const char *p = tdm_record_payload(rec[i], &pl);
        id[i] = (int)tdm_record_value(rec[i]);
        char want[16];
        snprintf(want, sizeof want, "p%d", id[i]);
        if (!p || pl != strlen(want) || memcmp(p, want, pl) != 0)
            f->bad++;
        int kk = -1;
        for (int j = 0; j < 5; j++)
            if (kl == strlen(wkeys[j]) && memcmp(k, wkeys[j], kl) == 0)
                kk = j;
        if (kk < 0 || (i == 1 && kk != key))
            f->bad++;
        key = kk;
    }
    f->p[f->n++] = (wpair){e, key, id[0], id[1]};
}

/* Orders pairs by (window end, key) and then by their position, so that
 * each (window, key) group keeps its emission order. */
static void sort_group(wpair *p, int n)
{
    for (int i = 1; i < n; i++) {
        wpair x = p[i];
        int j = i;
        while (j > 0 && (p[j - 1].end > x.end ||
                         (p[j - 1].end == x.end && p[j - 1].key > x.key))) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = x;
    }
}

typedef struct wmrec {
    int side, key, id;
    tdm_time_ms ts;
} wmrec;

/* Random records of five keys on both sides, watermarks behind the
 * newest timestamps, tumbling and sliding windows.  The model keeps
 * every accepted record with its timestamp; when the operator watermark
 * passes a window's end - 1 it lists, window by window and key by key,
 * each left record in arrival order with each right record in arrival
 * order (Flink's per-key order), and the emitted pairs, grouped the same
 * way with their emission order kept, must equal that list.  A record
 * none of whose windows [start, end) has end - 1 > watermark is late when
 * ts <= watermark.  With @p fail_fire, allocations fail while windows
 * fire, so the join without an index must give the same pairs. */
static void window_model(tdm_time_ms size, tdm_time_ms slide, bool fail_fire,
                         uint64_t seed)
{
    static wmrec recs[3000];
    static wp_sink f;
    static wpair want[WP_MAX];
    memset(&f, 0, sizeof f);
    tdm_joinop *op = NULL;
    tdm_assigner *asg = slide ? sliding(size, slide) : tumbling(size);
    if (!slide)
        slide = size;
    ASSERT_OK(tdm_joinop_new_window(asg, 1, NULL, on_wp, &f, &op, NULL, 0));
    int n = 0, n_want = 0;
    int64_t want_late = 0, buffered = 0;
    tdm_time_ms wm[2] = {TDM_TIME_MIN, TDM_TIME_MIN};
    tdm_time_ms opwm = TDM_TIME_MIN, base = 0;
    for (int step = 0; step < 3000; step++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned r = (unsigned)(seed >> 33);
        int side = (int)((r >> 3) & 1);
        bool end = step == 2999;
        if (r % 12 == 0 || end) {
            tdm_time_ms w =
                end ? TDM_TIME_MAX : base - (tdm_time_ms)((r >> 4) % 12);
            tdm_time_ms prev = opwm;
            if (end) {
                wm[0] = wm[1] = TDM_TIME_MAX;
            } else if (w > wm[side]) {
                wm[side] = w;
            }
            tdm_time_ms m = wm[0] < wm[1] ? wm[0] : wm[1];
            if (m > opwm)
                opwm = m;
            f.lo = prev;
            f.hi = opwm;
            /* Windows whose end - 1 is in (prev, opwm], by end. */
            tdm_time_ms first = TDM_TIME_MAX, last = TDM_TIME_MIN;
            for (int i = 0; i < n; i++) {
                tdm_time_ms st = recs[i].ts -
                                 (((recs[i].ts % slide) + slide) % slide) -
                                 size + slide;
                if (st < first)
                    first = st;
                if (recs[i].ts > last)
                    last = recs[i].ts;
            }
            for (tdm_time_ms st = first;
                 n > 0 && st <= last && st + size - 1 <= opwm; st += slide) {
                if (st + size - 1 <= prev)
                    continue;
                for (int k = 0; k < 5; k++)
                    for (int a = 0; a < n; a++) {
                        if (recs[a].side != 0 || recs[a].key != k ||
                            recs[a].ts < st || recs[a].ts >= st + size)
                            continue;
                        for (int b = 0; b < n; b++)
                            if (recs[b].side == 1 && recs[b].key == k &&
                                recs[b].ts >= st && recs[b].ts < st + size) {
                                ASSERT_TRUE(n_want < WP_MAX);
                                want[n_want++] = (wpair){
                                    st + size, k, recs[a].id, recs[b].id};
                            }
                    }
            }
            if (fail_fire)
                tdm__alloc_fail_after(1);
            if (end)
                ASSERT_OK(tdm_joinop_end(op));
            else
                ASSERT_OK(tdm_joinop_watermark(op, side, 0, w));
            tdm__alloc_fail_after(0);
            continue;
        }
        base += (r >> 8) % 3;
        int key = (int)((r >> 12) % 5);
        tdm_time_ms ts = base - (tdm_time_ms)((r >> 16) % 15);
        char payload[16];
        snprintf(payload, sizeof payload, "p%d", step);
        tdm_record rec;
        memset(&rec, 0, sizeof rec);
        tdm_record_set(&rec, wkeys[key], strlen(wkeys[key]), ts, step);
        tdm_record_set_payload(&rec, payload, strlen(payload));
        ASSERT_OK(tdm_joinop_push(op, side, 0, &rec));
        /* Windows of ts: starts ts - ts mod slide, then slide back while
         * start + size > ts; taken when end - 1 > watermark. */
        int taken = 0;
        for (tdm_time_ms st = ts - (((ts % slide) + slide) % slide);
             st + size > ts; st -= slide)
            if (st + size - 1 > opwm)
                taken++;
        if (!taken) {
            if (ts <= opwm)
                want_late++;
            continue;
        }
        buffered += taken;
        ASSERT_TRUE(n < 3000);
        recs[n++] = (wmrec){side, key, step, ts};
        /* Forget records whose windows have all fired. */
        int k = 0;
        for (int i = 0; i < n; i++)
            if (recs[i].ts - (((recs[i].ts % slide) + slide) % slide) + size -
                    1 >
                opwm)
                recs[k++] = recs[i];
        n = k;
    }
    ASSERT_EQ(f.bad, 0);
    ASSERT_EQ(tdm_joinop_late_dropped(op), want_late);
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    ASSERT_EQ(f.n, n_want);
    sort_group(f.p, f.n);
    sort_group(want, n_want);
    for (int i = 0; i < n_want; i++) {
        ASSERT_EQ(f.p[i].end, want[i].end);
        ASSERT_EQ(f.p[i].key, want[i].key);
        ASSERT_EQ(f.p[i].lid, want[i].lid);
        ASSERT_EQ(f.p[i].rid, want[i].rid);
    }
    /* The run exercised pairs, lateness and buffering (a few late records
     * only with sliding windows, which mostly find a later window). */
    ASSERT_TRUE(n_want > 200 && want_late > 0 && buffered > 1000);
    tdm_joinop_destroy(op);
}

TDM_TEST(window_join_matches_naive_model)
{
    window_model(10, 0, false, 777);
    window_model(10, 5, false, 4242);
    window_model(12, 4, false, 99);
    window_model(6, 0, false, 31337);
}

/* Firing cannot fail: without memory for the index the window is joined
 * by nested scans, with the same pairs in the same per-key order. */
TDM_TEST(window_join_fires_without_memory)
{
    window_model(10, 0, true, 777);
    window_model(10, 5, true, 4242);
}

/* The state gauges: a window join's bytes cover its buffered copies
 * (1000 records of a 1-byte key and a 40-byte payload are at least 41,000
 * bytes), it tracks no keys, and once the window fired only the small
 * window array is left (chunks this small are freed, not kept). */
TDM_TEST(window_join_state_gauges)
{
    cap c;
    tdm_joinop *op = new_window_join(&c, tumbling(10));
    ASSERT_EQ(tdm__joinop_state_bytes(op), 0);
    char payload[40];
    memset(payload, 'x', sizeof payload);
    for (int i = 0; i < 1000; i++) {
        tdm_record rec;
        memset(&rec, 0, sizeof rec);
        tdm_record_set(&rec, "k", 1, i % 10, i);
        tdm_record_set_payload(&rec, payload, sizeof payload);
        ASSERT_OK(tdm_joinop_push(op, L, 0, &rec));
    }
    ASSERT_EQ(tdm_joinop_buffered(op), 1000);
    ASSERT_TRUE(tdm__joinop_state_bytes(op) >= 41000);
    ASSERT_EQ(tdm__joinop_state_keys(op), 0);
    WM(op, &c, L, 9, "");
    WM(op, &c, R, 9, "W9");
    ASSERT_EQ(tdm_joinop_buffered(op), 0);
    ASSERT_TRUE(tdm__joinop_state_bytes(op) < 1024);
    tdm_joinop_destroy(op);
}
