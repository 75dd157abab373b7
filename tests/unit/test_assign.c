/* SPDX-License-Identifier: MIT */
/* test_assign.c - window assigners (rulebook R1): floored starts with
 * offsets and negative timestamps, sliding and cumulate assignment order
 * and counts, sessions, the global window, configuration errors and the
 * extremes of the time range.  Expected windows are worked out by hand in
 * comments. */
#include "harness.h"
#include "core.h"
#include "window/win.h"
#include "testhooks.h"

#define MAXW 16

/* Collects the windows of ts into starts/ends; returns their number. */
static int windows_of(const tdm_assigner *a, tdm_time_ms ts,
                      tdm_time_ms *starts, tdm_time_ms *ends)
{
    tdm__assign_iter it;
    tdm_time_ms s, e;
    int n = 0;
    tdm__assign_begin(a, ts, &it);
    while (tdm__assign_next(&it, &s, &e)) {
        if (n < MAXW) {
            starts[n] = s;
            ends[n] = e;
        }
        n++;
    }
    return n;
}

static tdm_time_ms tumbling_start(tdm_time_ms size, tdm_time_ms off,
                                  tdm_time_ms ts)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_tumbling(size, off, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, ts, s, e), 1);
    ASSERT_EQ(e[0], tdm_time_add(s[0], size));
    tdm_assigner_destroy(a);
    return s[0];
}

/* R1.2: TimeWindowTest#testGetWindowStartWithOffset, size 7. */
TDM_TEST(tumbling_floored_start_with_offsets)
{
    ASSERT_EQ(tumbling_start(7, 0, -8), -14);
    ASSERT_EQ(tumbling_start(7, 0, -7), -7);
    ASSERT_EQ(tumbling_start(7, 0, -1), -7);
    ASSERT_EQ(tumbling_start(7, 0, 6), 0);
    ASSERT_EQ(tumbling_start(7, 0, 7), 7);
    ASSERT_EQ(tumbling_start(7, 3, -10), -11);
    ASSERT_EQ(tumbling_start(7, 3, 2), -4);
    ASSERT_EQ(tumbling_start(7, 3, 3), 3);
    ASSERT_EQ(tumbling_start(7, -2, -12), -16);
    ASSERT_EQ(tumbling_start(7, -2, -3), -9);
    ASSERT_EQ(tumbling_start(7, -2, 4), -2);
    ASSERT_EQ(tumbling_start(7, -2, 7), 5);
    /* R1.3: of(5 s, -100 ms) gives [-100, 4900), [4900, 9900). */
    ASSERT_EQ(tumbling_start(5000, -100, 0), -100);
    ASSERT_EQ(tumbling_start(5000, -100, 4899), -100);
    ASSERT_EQ(tumbling_start(5000, -100, 4900), 4900);
}

/* Sizes near MAX: size MAX, offset -(MAX - 2), ts MAX - 1.  The window
 * grid is offset + k * size = ..., -(MAX - 2), 2, ...; ts lies in
 * [2, 2 + MAX), whose end saturates.  A naive (ts % size - offset)
 * would overflow here. */
TDM_TEST(tumbling_huge_size_and_offset)
{
    ASSERT_EQ(
        tumbling_start(TDM_TIME_MAX, -(TDM_TIME_MAX - 2), TDM_TIME_MAX - 1), 2);
    ASSERT_EQ(tumbling_start(TDM_TIME_MAX, -(TDM_TIME_MAX - 2), 1),
              -(TDM_TIME_MAX - 2));
    /* Offset MAX - 1: the grid point below -5 is MAX - 1 - 2 MAX = MIN,
     * exactly representable; the window is [MIN, -1). */
    ASSERT_EQ(tumbling_start(TDM_TIME_MAX, TDM_TIME_MAX - 1, -5), TDM_TIME_MIN);
}

TDM_TEST(tumbling_at_the_extremes_saturates)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_tumbling(1000, 0, &a, NULL, 0));
    /* MAX = ...775807: start ...775000, end would be ...776000 > MAX. */
    ASSERT_EQ(windows_of(a, TDM_TIME_MAX, s, e), 1);
    ASSERT_EQ(s[0], TDM_TIME_MAX - 807);
    ASSERT_EQ(e[0], TDM_TIME_MAX);
    /* MIN + 1 = -...775807 floors to -...776000, below MIN: the start
     * saturates while the end stays exact, -...775000 = MIN + 808. */
    ASSERT_EQ(windows_of(a, TDM_TIME_MIN + 1, s, e), 1);
    ASSERT_EQ(s[0], TDM_TIME_MIN);
    ASSERT_EQ(e[0], TDM_TIME_MIN + 808);
    /* The next window starts exactly there. */
    ASSERT_EQ(windows_of(a, TDM_TIME_MIN + 808, s, e), 1);
    ASSERT_EQ(s[0], TDM_TIME_MIN + 808);
    ASSERT_EQ(e[0], TDM_TIME_MIN + 1808);
    tdm_assigner_destroy(a);
}

/* R1.4: size 10, slide 3.  ts 5: last start 3, then 0, -3 (3 windows;
 * -6 is not > 5 - 10).  ts 9: 9, 6, 3, 0 (4 windows). */
TDM_TEST(sliding_order_and_count_when_slide_does_not_divide)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_sliding(10, 3, 0, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, 5, s, e), 3);
    ASSERT_EQ(s[0], 3);
    ASSERT_EQ(s[1], 0);
    ASSERT_EQ(s[2], -3);
    ASSERT_EQ(e[2], 7);
    ASSERT_EQ(windows_of(a, 9, s, e), 4);
    ASSERT_EQ(s[0], 9);
    ASSERT_EQ(s[3], 0);
    ASSERT_EQ(e[3], 10);
    /* Negative ts -1: floored last start -3; -3, -6, -9 (> -11). */
    ASSERT_EQ(windows_of(a, -1, s, e), 3);
    ASSERT_EQ(s[0], -3);
    ASSERT_EQ(s[2], -9);
    tdm_assigner_destroy(a);
}

/* Offset applies modulo the slide: size 10, slide 5, offset 2.  ts 1:
 * last start floor((1-2)/5)*5+2 = -3; windows [-3,7), [-8,2). */
TDM_TEST(sliding_offset_modulo_slide)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_sliding(10, 5, 2, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, 1, s, e), 2);
    ASSERT_EQ(s[0], -3);
    ASSERT_EQ(e[0], 7);
    ASSERT_EQ(s[1], -8);
    ASSERT_EQ(e[1], 2);
    /* ts 2 starts its own window: [2,12), [-3,7). */
    ASSERT_EQ(windows_of(a, 2, s, e), 2);
    ASSERT_EQ(s[0], 2);
    ASSERT_EQ(s[1], -3);
    tdm_assigner_destroy(a);
}

/* slide > size leaves gaps: size 2, slide 5.  ts 1 is in [0,2); ts 3 is
 * in no window (last start 0 is not > 3 - 2). */
TDM_TEST(sliding_with_gaps_assigns_nothing_between_windows)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_sliding(2, 5, 0, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, 1, s, e), 1);
    ASSERT_EQ(s[0], 0);
    ASSERT_EQ(windows_of(a, 3, s, e), 0);
    tdm_assigner_destroy(a);
}

/* Near MIN nothing wraps: size 3000, slide 1000 at ts MIN + 10 (which
 * is -...775798, 202 past the floored start -...776000).  The three
 * windows start below MIN (saturated) and end exactly at ts + 2798,
 * ts + 1798 and ts + 798. */
TDM_TEST(sliding_near_min_does_not_wrap)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_sliding(3000, 1000, 0, &a, NULL, 0));
    int n = windows_of(a, TDM_TIME_MIN + 10, s, e);
    ASSERT_EQ(n, 3);
    ASSERT_EQ(s[0], TDM_TIME_MIN);
    ASSERT_EQ(e[0], TDM_TIME_MIN + 10 + 2798);
    ASSERT_EQ(e[1], TDM_TIME_MIN + 10 + 1798);
    ASSERT_EQ(e[2], TDM_TIME_MIN + 10 + 798);
    /* And near MAX every end saturates instead of wrapping negative. */
    n = windows_of(a, TDM_TIME_MAX, s, e);
    ASSERT_EQ(n, 3);
    for (int i = 0; i < n; i++)
        ASSERT_TRUE(e[i] > s[i]);
    ASSERT_EQ(e[0], TDM_TIME_MAX);
    tdm_assigner_destroy(a);
}

/* R1.8: cumulate, size 60, step 20.  ts 5 is in [0,20), [0,40), [0,60),
 * earliest end first; ts 25 in [0,40), [0,60); ts 59 in [0,60) only;
 * ts 60 opens the next max window.  ts -1: max window [-60,0), whose
 * windows end at -40, -20 and 0: only [-60,0) ends after -1; ts -21 is
 * also in [-60,-20). */
TDM_TEST(cumulate_windows_share_a_start_and_grow)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_cumulate(60, 20, 0, &a, NULL, 0));
    ASSERT_TRUE(tdm__assigner_is_event_time(a));
    ASSERT_TRUE(!tdm__assigner_is_merging(a));
    ASSERT_EQ(windows_of(a, 5, s, e), 3);
    ASSERT_EQ(s[0], 0);
    ASSERT_EQ(s[1], 0);
    ASSERT_EQ(s[2], 0);
    ASSERT_EQ(e[0], 20);
    ASSERT_EQ(e[1], 40);
    ASSERT_EQ(e[2], 60);
    ASSERT_EQ(windows_of(a, 25, s, e), 2);
    ASSERT_EQ(s[0], 0);
    ASSERT_EQ(e[0], 40);
    ASSERT_EQ(e[1], 60);
    ASSERT_EQ(windows_of(a, 19, s, e), 3);
    ASSERT_EQ(windows_of(a, 20, s, e), 2);
    ASSERT_EQ(windows_of(a, 59, s, e), 1);
    ASSERT_EQ(s[0], 0);
    ASSERT_EQ(e[0], 60);
    ASSERT_EQ(windows_of(a, 60, s, e), 3);
    ASSERT_EQ(s[0], 60);
    ASSERT_EQ(e[0], 80);
    ASSERT_EQ(e[2], 120);
    ASSERT_EQ(windows_of(a, -1, s, e), 1);
    ASSERT_EQ(s[0], -60);
    ASSERT_EQ(e[0], 0);
    ASSERT_EQ(windows_of(a, -21, s, e), 2);
    ASSERT_EQ(s[0], -60);
    ASSERT_EQ(e[0], -20);
    ASSERT_EQ(e[1], 0);
    /* One step: tumbling windows. */
    tdm_assigner_destroy(a);
    ASSERT_OK(tdm_assigner_new_cumulate(60, 60, 0, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, 61, s, e), 1);
    ASSERT_EQ(s[0], 60);
    ASSERT_EQ(e[0], 120);
    ASSERT_OK(tdm_assigner_set_processing_time(a));
    ASSERT_TRUE(!tdm__assigner_is_event_time(a));
    tdm_assigner_destroy(a);
}

/* The offset moves the max windows and, modulo the step, the steps:
 * size 60, step 20, offset 25 (more than a step): max windows start at
 * 25 + 60k, so ts 0 is in [-35,5) and [-35,25) (the first, [-35,-15),
 * ends before it).  Offset -50: max window [-50,10) for ts 0, ends -30,
 * -10 and 10: only [-50,10). */
TDM_TEST(cumulate_offset_moves_starts_and_steps)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_cumulate(60, 20, 25, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, 0, s, e), 2);
    ASSERT_EQ(s[0], -35);
    ASSERT_EQ(e[0], 5);
    ASSERT_EQ(s[1], -35);
    ASSERT_EQ(e[1], 25);
    ASSERT_EQ(windows_of(a, 25, s, e), 3);
    ASSERT_EQ(s[0], 25);
    ASSERT_EQ(e[0], 45);
    tdm_assigner_destroy(a);
    ASSERT_OK(tdm_assigner_new_cumulate(60, 20, -50, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, 0, s, e), 1);
    ASSERT_EQ(s[0], -50);
    ASSERT_EQ(e[0], 10);
    tdm_assigner_destroy(a);
}

/* At the ends of time nothing wraps: near MIN the start saturates and
 * the ends stay exact (ts MIN + 10 is 202 past its 1000-aligned step,
 * 1202 past its 3000-aligned max start: ends ts + 798, ts + 1798).  At
 * MAX (1807 past its max start, 807 past its step) the windows ending
 * at MAX + 193 and MAX + 1193 both saturate to [start, MAX): reported
 * once. */
TDM_TEST(cumulate_at_the_extremes_saturates_once)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_cumulate(3000, 1000, 0, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, TDM_TIME_MIN + 10, s, e), 2);
    ASSERT_EQ(s[0], TDM_TIME_MIN);
    ASSERT_EQ(e[0], TDM_TIME_MIN + 10 + 798);
    ASSERT_EQ(e[1], TDM_TIME_MIN + 10 + 1798);
    ASSERT_EQ(windows_of(a, TDM_TIME_MAX, s, e), 1);
    ASSERT_EQ(s[0], TDM_TIME_MAX - 1807);
    ASSERT_EQ(e[0], TDM_TIME_MAX);
    tdm_assigner_destroy(a);
}

TDM_TEST(session_and_global_windows)
{
    tdm_assigner *a;
    tdm_time_ms s[MAXW], e[MAXW];
    ASSERT_OK(tdm_assigner_new_session(3000, &a, NULL, 0));
    ASSERT_EQ(windows_of(a, -500, s, e), 1);
    ASSERT_EQ(s[0], -500);
    ASSERT_EQ(e[0], 2500);
    ASSERT_TRUE(tdm__assigner_is_merging(a));
    ASSERT_TRUE(tdm__assigner_is_event_time(a));
    ASSERT_EQ(windows_of(a, TDM_TIME_MAX - 1, s, e), 1);
    ASSERT_EQ(e[0], TDM_TIME_MAX); /* saturated */
    ASSERT_OK(tdm_assigner_set_processing_time(a));
    ASSERT_TRUE(!tdm__assigner_is_event_time(a));
    tdm_assigner_destroy(a);

    ASSERT_OK(tdm_assigner_new_global(&a));
    ASSERT_EQ(windows_of(a, 12345, s, e), 1);
    ASSERT_EQ(s[0], TDM_TIME_MIN);
    ASSERT_EQ(e[0], TDM_TIME_MAX);
    /* R1.6: GlobalWindows.isEventTime() is false. */
    ASSERT_TRUE(!tdm__assigner_is_event_time(a));
    ASSERT_ERR(tdm_assigner_set_processing_time(a), TDM_ERR_INVAL);
    tdm_assigner_destroy(a);
    tdm_assigner_destroy(NULL);
}

TDM_TEST(bad_configuration_names_the_parameter)
{
    tdm_assigner *a = (tdm_assigner *)1;
    char buf[128];
    ASSERT_ERR(tdm_assigner_new_tumbling(0, 0, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(a == NULL);
    ASSERT_TRUE(strstr(buf, "size_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_tumbling(1000, 1000, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "offset_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_tumbling(1000, -1000, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_ERR(
        tdm_assigner_new_tumbling(1000, TDM_TIME_MIN, &a, buf, sizeof buf),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "offset_ms") != NULL);
    ASSERT_OK(tdm_assigner_new_tumbling(1000, -999, &a, buf, sizeof buf));
    tdm_assigner_destroy(a);

    ASSERT_ERR(tdm_assigner_new_sliding(-1, 10, 0, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "size_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_sliding(100, 0, 0, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "slide_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_sliding(100, 10, 10, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "offset_ms") != NULL);
    /* size / slide = 10,000,001 windows per record is one too many. */
    ASSERT_ERR(tdm_assigner_new_sliding(10000001, 1, 0, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "slide_ms") != NULL);
    ASSERT_OK(tdm_assigner_new_sliding(10000000, 1, 0, &a, buf, sizeof buf));
    tdm_assigner_destroy(a);

    ASSERT_ERR(tdm_assigner_new_cumulate(0, 10, 0, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "size_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_cumulate(100, -10, 0, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "step_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_cumulate(100, 30, 0, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "integral multiple of step_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_cumulate(100, 10, -100, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "offset_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_cumulate(10000001, 1, 0, &a, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "step_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_cumulate(100, 10, 0, NULL, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_OK(tdm_assigner_new_cumulate(100, 10, 99, &a, buf, sizeof buf));
    tdm_assigner_destroy(a);

    ASSERT_ERR(tdm_assigner_new_session(0, &a, buf, sizeof buf), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "gap_ms") != NULL);
    ASSERT_ERR(tdm_assigner_new_session(10, NULL, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm_assigner_new_global(NULL), TDM_ERR_INVAL);
}

TDM_TEST(constructors_report_nomem)
{
    tdm_assigner *a;
    tdm__alloc_fail_after(1);
    ASSERT_ERR(tdm_assigner_new_tumbling(10, 0, &a, NULL, 0), TDM_ERR_NOMEM);
    tdm__alloc_fail_after(1);
    ASSERT_ERR(tdm_assigner_new_sliding(10, 5, 0, &a, NULL, 0), TDM_ERR_NOMEM);
    tdm__alloc_fail_after(1);
    ASSERT_ERR(tdm_assigner_new_cumulate(10, 5, 0, &a, NULL, 0), TDM_ERR_NOMEM);
    tdm__alloc_fail_after(1);
    ASSERT_ERR(tdm_assigner_new_session(10, &a, NULL, 0), TDM_ERR_NOMEM);
    tdm__alloc_fail_after(1);
    ASSERT_ERR(tdm_assigner_new_global(&a), TDM_ERR_NOMEM);
    tdm__alloc_fail_after(0);
}
