/* SPDX-License-Identifier: MIT */
/* test_core.c - error table, saturating time arithmetic, window starts
 * (Flink's TimeWindowTest examples), clocks and records. */
#include "harness.h"
#include "core.h"
#include "testhooks.h"

TDM_TEST(err_table_names_and_messages)
{
    ASSERT_STR_EQ(tdm_err_name(TDM_OK), "TDM_OK");
    ASSERT_STR_EQ(tdm_err_name(TDM_ERR_INVAL), "TDM_ERR_INVAL");
    ASSERT_STR_EQ(tdm_strerror(TDM_ERR_NOMEM), "out of memory");
    ASSERT_STR_EQ(tdm_err_name(12345), "TDM_ERR_UNKNOWN");
    ASSERT_STR_EQ(tdm_strerror(12345), "unknown error");
    ASSERT_EQ(tdm_version_number(), TDM_VERSION_NUMBER);
    ASSERT_STR_EQ(tdm_version(), TDM_VERSION);
}

TDM_TEST(time_add_sub_saturate)
{
    ASSERT_EQ(tdm_time_add(TDM_TIME_MAX, 1), TDM_TIME_MAX);
    ASSERT_EQ(tdm_time_add(TDM_TIME_MAX - 5, 10), TDM_TIME_MAX);
    ASSERT_EQ(tdm_time_add(TDM_TIME_MIN, -1), TDM_TIME_MIN);
    ASSERT_EQ(tdm_time_add(10, -3), 7);
    ASSERT_EQ(tdm_time_sub(TDM_TIME_MIN, 1), TDM_TIME_MIN);
    ASSERT_EQ(tdm_time_sub(TDM_TIME_MAX, -1), TDM_TIME_MAX);
    ASSERT_EQ(tdm_time_sub(0, TDM_TIME_MIN), TDM_TIME_MAX);
    ASSERT_EQ(tdm_time_sub(5, 7), -2);
}

/* Examples of TimeWindowTest#testGetWindowStartWithOffset (rulebook
 * R1.2), computed by hand from floor division. */
TDM_TEST(window_start_floored_with_offsets)
{
    ASSERT_EQ(tdm__window_start(-8, 0, 7), -14);
    ASSERT_EQ(tdm__window_start(-7, 0, 7), -7);
    ASSERT_EQ(tdm__window_start(-1, 0, 7), -7);
    ASSERT_EQ(tdm__window_start(6, 0, 7), 0);
    ASSERT_EQ(tdm__window_start(7, 0, 7), 7);
    ASSERT_EQ(tdm__window_start(-10, 3, 7), -11);
    ASSERT_EQ(tdm__window_start(2, 3, 7), -4);
    ASSERT_EQ(tdm__window_start(3, 3, 7), 3);
    ASSERT_EQ(tdm__window_start(-12, -2, 7), -16);
    ASSERT_EQ(tdm__window_start(-3, -2, 7), -9);
    ASSERT_EQ(tdm__window_start(-2, -2, 7), -2);
    ASSERT_EQ(tdm__window_start(4, -2, 7), -2);
    ASSERT_EQ(tdm__window_start(7, -2, 7), 5);
    /* One day, UTC+8 offset. */
    ASSERT_EQ(tdm__window_start(1470902048450LL, -8LL * 3600 * 1000,
                                24LL * 3600 * 1000),
              1470844800000LL);
}

TDM_TEST(window_start_at_the_extremes_does_not_overflow)
{
    /* floor(MIN / 1000) * 1000 lies below MIN: saturates. */
    ASSERT_EQ(tdm__window_start(TDM_TIME_MIN, 0, 1000), TDM_TIME_MIN);
    ASSERT_EQ(tdm__window_start(TDM_TIME_MAX, 0, 1000),
              TDM_TIME_MAX - (TDM_TIME_MAX % 1000));
    /* (MAX - 999) mod 1000 = 808 (MAX ends in ...807). */
    ASSERT_EQ(tdm__window_start(TDM_TIME_MAX, 999, 1000), TDM_TIME_MAX - 808);
}

/* Regression (found in review of time.c, 2026-12-02): with size above
 * INT64_MAX / 2 the difference of the two remainders overflowed.  Size MAX,
 * offset -(MAX - 2): for ts = 5, (5 - offset) = MAX + 3 = 1 * MAX + 3,
 * so the remainder is 3 and the start is 2; for ts = -5 the remainder of
 * MAX - 7 is MAX - 7 itself and the start, -5 - (MAX - 7) = -(MAX - 2),
 * is the offset. */
TDM_TEST(window_start_huge_size_does_not_overflow)
{
    tdm_time_ms off = -(TDM_TIME_MAX - 2);
    ASSERT_EQ(tdm__window_start(5, off, TDM_TIME_MAX), 2);
    ASSERT_EQ(tdm__window_start(-5, off, TDM_TIME_MAX), off);
}

TDM_TEST(manual_clock_never_goes_backwards)
{
    tdm_clock *clk = NULL;
    ASSERT_OK(tdm_clock_new_manual(100, &clk));
    ASSERT_EQ(tdm_clock_now(clk), 100);
    ASSERT_OK(tdm_clock_set(clk, 250));
    ASSERT_EQ(tdm_clock_now(clk), 250);
    ASSERT_ERR(tdm_clock_set(clk, 249), TDM_ERR_RANGE);
    ASSERT_EQ(tdm_clock_now(clk), 250);
    tdm_clock_destroy(clk);
    tdm_clock_destroy(NULL);

    tdm_clock *mono = NULL;
    ASSERT_OK(tdm_clock_new_monotonic(&mono));
    ASSERT_ERR(tdm_clock_set(mono, 0), TDM_ERR_STATE);
    tdm_time_ms a = tdm_clock_now(mono), b = tdm_clock_now(mono);
    ASSERT_TRUE(b >= a);
    tdm_clock_destroy(mono);
}

static tdm_time_ms fixed_clock(void *opaque)
{
    return *(tdm_time_ms *)opaque;
}

TDM_TEST(custom_clock_reads_callback)
{
    tdm_time_ms t = 42;
    tdm_clock *clk = NULL;
    ASSERT_ERR(tdm_clock_new_custom(NULL, NULL, &clk), TDM_ERR_INVAL);
    ASSERT_OK(tdm_clock_new_custom(fixed_clock, &t, &clk));
    ASSERT_EQ(tdm_clock_now(clk), 42);
    t = 43;
    ASSERT_EQ(tdm_clock_now(clk), 43);
    tdm_clock_destroy(clk);
}

TDM_TEST(record_accessors)
{
    tdm_record *rec = NULL;
    ASSERT_OK(tdm_record_new(&rec));
    ASSERT_EQ(tdm_record_ts(rec), TDM_TIME_MIN);
    tdm_record_set(rec, "user-1", 6, 1234, 2.5);
    size_t len = 0;
    ASSERT_TRUE(memcmp(tdm_record_key(rec, &len), "user-1", 6) == 0);
    ASSERT_EQ(len, 6);
    ASSERT_EQ(tdm_record_ts(rec), 1234);
    ASSERT_DBL_EQ(tdm_record_value(rec), 2.5);
    ASSERT_TRUE(tdm_record_payload(rec, &len) == NULL);
    tdm_record_set_payload(rec, "xy", 2);
    ASSERT_TRUE(memcmp(tdm_record_payload(rec, &len), "xy", 2) == 0);
    ASSERT_EQ(len, 2);
    tdm_record_set_ts(rec, -5);
    ASSERT_EQ(tdm_record_ts(rec), -5);
    tdm_record_destroy(rec);
}

TDM_TEST(alloc_fault_injection_fails_nth)
{
    tdm__alloc_fail_after(2);
    void *a = tdm__malloc(8);
    void *b = tdm__malloc(8);
    void *c = tdm__malloc(8);
    tdm__alloc_fail_after(0);
    ASSERT_TRUE(a != NULL);
    ASSERT_TRUE(b == NULL);
    ASSERT_TRUE(c == NULL);
    tdm__free(a);
    tdm_record *rec = NULL;
    tdm__alloc_fail_after(1);
    ASSERT_ERR(tdm_record_new(&rec), TDM_ERR_NOMEM);
    tdm__alloc_fail_after(0);
}
