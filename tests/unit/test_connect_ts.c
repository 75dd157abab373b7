/* SPDX-License-Identifier: MIT */
/* test_connect_ts.c - timestamps from input values (src/connect/ts.c):
 * integer, decimal and double counts of ms/s/us/ns, and ISO-8601 text.
 * Expected epoch values are worked out by hand in the comments (day
 * counts: 365 per year plus one per leap year, month lengths summed). */
#include <math.h>

#include "harness.h"
#include "connect/conn.h"

/* 2026-12-02T10:00:00Z: 1970..2025 are 56 years with 14 leap years
 * (1972, 1976, ..., 2024), 56 * 365 + 14 = 20454 days; Jan..Nov 2026 are
 * 334 days, plus Dec 1: 20789 days = 1796169600000 ms, plus 10 h
 * (36000000 ms). */
#define T_2026_12_02_10 INT64_C(1796205600000)

static tdm_time_ms iso(const char *s)
{
    tdm_time_ms t = 0;
    tdm_err err = tdm__ts_from_text(s, strlen(s), TDM__UNIT_ISO8601, &t);
    if (err != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "\"%s\": %s", s, tdm_err_name(err));
    return t;
}

static tdm_err iso_err(const char *s)
{
    tdm_time_ms t;
    return tdm__ts_from_text(s, strlen(s), TDM__UNIT_ISO8601, &t);
}

static tdm_time_ms text(const char *s, int unit)
{
    tdm_time_ms t = 0;
    tdm_err err = tdm__ts_from_text(s, strlen(s), unit, &t);
    if (err != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "\"%s\": %s", s, tdm_err_name(err));
    return t;
}

TDM_TEST(iso_basic_utc)
{
    ASSERT_EQ(iso("2026-12-02T10:00:00Z"), T_2026_12_02_10);
    ASSERT_EQ(iso("1970-01-01T00:00:00Z"), 0);
    /* 2026-01-01 is 20454 days after the epoch (see above). */
    ASSERT_EQ(iso("2026-01-01T00:00:00Z"), INT64_C(20454) * 86400000);
    ASSERT_EQ(iso("2026-01-01T00:00:00Z"), TDM__GEN_EPOCH_MS);
    /* Lower-case separators, a blank instead of T, no seconds. */
    ASSERT_EQ(iso("2026-12-02t10:00:00z"), T_2026_12_02_10);
    ASSERT_EQ(iso("2026-12-02 10:00:00Z"), T_2026_12_02_10);
    ASSERT_EQ(iso("2026-12-02T10:00Z"), T_2026_12_02_10);
}

TDM_TEST(iso_fraction_is_cut_to_ms)
{
    ASSERT_EQ(iso("2026-12-02T10:00:00.5Z"), T_2026_12_02_10 + 500);
    ASSERT_EQ(iso("2026-12-02T10:00:00.123456Z"), T_2026_12_02_10 + 123);
    ASSERT_EQ(iso("2026-12-02T10:00:00.999999999Z"), T_2026_12_02_10 + 999);
    ASSERT_EQ(iso("2026-12-02T10:00:00,25Z"), T_2026_12_02_10 + 250);
    /* One ms before the epoch. */
    ASSERT_EQ(iso("1969-12-31T23:59:59.999Z"), -1);
}

TDM_TEST(iso_offsets)
{
    /* 11:30 at +01:30 and 08:00 at -02:00 are both 10:00 UTC. */
    ASSERT_EQ(iso("2026-12-02T11:30:00+01:30"), T_2026_12_02_10);
    ASSERT_EQ(iso("2026-12-02T08:00:00-02:00"), T_2026_12_02_10);
    ASSERT_EQ(iso("2026-12-02T10:00:00+00:00"), T_2026_12_02_10);
    /* 00:30 at +01:00 is the previous day, 23:30 UTC: -30 min. */
    ASSERT_EQ(iso("1970-01-01T00:30:00+01:00"), -30 * 60000);
}

TDM_TEST(iso_leap_years_and_extremes)
{
    /* 2024-02-29: 2024-01-01 is 54 years (13 leap: 1972..2020) after
     * 1970 = 19723 days, plus 31 + 28 = 59 days of Jan and Feb. */
    ASSERT_EQ(iso("2024-02-29T00:00:00Z"), INT64_C(19782) * 86400000);
    ASSERT_EQ(iso("2000-02-29T00:00:00Z"), INT64_C(11016) * 86400000);
    ASSERT_ERR(iso_err("2023-02-29T00:00:00Z"), TDM_ERR_PARSE);
    ASSERT_ERR(iso_err("1900-02-29T00:00:00Z"), TDM_ERR_PARSE);
    /* 0000-03-01 is 719468 days before the epoch and 9999-12-31T23:59:59Z
     * is 253402300799 s after it (both also checked with GNU date -u). */
    ASSERT_EQ(iso("0000-03-01T00:00:00Z"), INT64_C(-719468) * 86400000);
    ASSERT_EQ(iso("9999-12-31T23:59:59.999Z"), INT64_C(253402300799999));
}

TDM_TEST(iso_rejects_malformed_text)
{
    const char *bad[] = {
        "",
        "2026-12-02",           /* no time */
        "2026-12-02T10:00:00",  /* no zone */
        "2026-13-02T10:00:00Z", /* month 13 */
        "2026-00-02T10:00:00Z",
        "2026-12-32T10:00:00Z",
        "2026-04-31T10:00:00Z", /* April has 30 days */
        "2026-12-02T24:00:00Z",
        "2026-12-02T10:60:00Z",
        "2026-12-02T10:00:60Z",     /* no leap seconds */
        "2026-12-02T10:00:00.Z",    /* empty fraction */
        "2026-12-02T10:00:00+0100", /* offset needs hh:mm */
        "2026-12-02T10:00:00+24:00",
        "2026-12-02T10:00:00Zjunk",
        "26-12-02T10:00:00Z",
        "2026/12/02T10:00:00Z",
        "yesterday",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (iso_err(bad[i]) != TDM_ERR_PARSE)
            tdm_test_fail(__FILE__, __LINE__, "accepted \"%s\"", bad[i]);
}

TDM_TEST(int_units)
{
    tdm_time_ms t;
    ASSERT_OK(tdm__ts_from_int(1733133600, TDM__UNIT_S, &t));
    ASSERT_EQ(t, INT64_C(1733133600000));
    ASSERT_OK(tdm__ts_from_int(1733133600123, TDM__UNIT_MS, &t));
    ASSERT_EQ(t, INT64_C(1733133600123));
    /* us and ns round down, also below zero. */
    ASSERT_OK(tdm__ts_from_int(1500, TDM__UNIT_US, &t));
    ASSERT_EQ(t, 1);
    ASSERT_OK(tdm__ts_from_int(-1, TDM__UNIT_US, &t));
    ASSERT_EQ(t, -1);
    ASSERT_OK(tdm__ts_from_int(-1000, TDM__UNIT_US, &t));
    ASSERT_EQ(t, -1);
    ASSERT_OK(tdm__ts_from_int(-1001, TDM__UNIT_US, &t));
    ASSERT_EQ(t, -2);
    ASSERT_OK(tdm__ts_from_int(1999999, TDM__UNIT_NS, &t));
    ASSERT_EQ(t, 1);
    ASSERT_OK(tdm__ts_from_int(INT64_MIN, TDM__UNIT_NS, &t));
    ASSERT_EQ(t, -9223372036855); /* floor(-9223372036854.775808) */
}

TDM_TEST(int_overflow_is_range_error)
{
    tdm_time_ms t = 7;
    /* 9223372036854776 s * 1000 > INT64_MAX (9223372036854775807). */
    ASSERT_ERR(tdm__ts_from_int(INT64_C(9223372036854776), TDM__UNIT_S, &t),
               TDM_ERR_RANGE);
    ASSERT_ERR(tdm__ts_from_int(INT64_C(-9223372036854776), TDM__UNIT_S, &t),
               TDM_ERR_RANGE);
    ASSERT_OK(tdm__ts_from_int(INT64_C(9223372036854775), TDM__UNIT_S, &t));
    ASSERT_EQ(t, INT64_C(9223372036854775000));
    /* INT64_MIN ms is TDM_TIME_MIN, "no timestamp". */
    ASSERT_ERR(tdm__ts_from_int(INT64_MIN, TDM__UNIT_MS, &t), TDM_ERR_RANGE);
    /* An integer is not ISO-8601 text. */
    ASSERT_ERR(tdm__ts_from_int(5, TDM__UNIT_ISO8601, &t), TDM_ERR_PARSE);
}

TDM_TEST(decimal_text_exact_and_floored)
{
    ASSERT_EQ(text("1733133600", TDM__UNIT_S), INT64_C(1733133600000));
    ASSERT_EQ(text("1733133600.123", TDM__UNIT_S), INT64_C(1733133600123));
    ASSERT_EQ(text("1733133600.1239", TDM__UNIT_S), INT64_C(1733133600123));
    ASSERT_EQ(text("1.5", TDM__UNIT_S), 1500);
    /* -1.5 s = -1500 ms exactly; -1.0005 s = -1000.5 ms -> -1001. */
    ASSERT_EQ(text("-1.5", TDM__UNIT_S), -1500);
    ASSERT_EQ(text("-1.0005", TDM__UNIT_S), -1001);
    ASSERT_EQ(text("1.5", TDM__UNIT_MS), 1);
    ASSERT_EQ(text("-1.5", TDM__UNIT_MS), -2);
    ASSERT_EQ(text("+42", TDM__UNIT_MS), 42);
    ASSERT_EQ(text(" 42\t", TDM__UNIT_MS), 42);
    ASSERT_EQ(text("1500.9", TDM__UNIT_US), 1);
    ASSERT_EQ(text("-1", TDM__UNIT_NS), -1);
    ASSERT_EQ(text("9223372036854775807", TDM__UNIT_MS), INT64_MAX);
}

TDM_TEST(decimal_text_rejects_and_ranges)
{
    tdm_time_ms t;
    const char *bad[] = {"",    "abc", "12abc", "1.",  ".5",
                         "1e3", "--1", "1 2",   "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (tdm__ts_from_text(bad[i], strlen(bad[i]), TDM__UNIT_MS, &t) !=
            TDM_ERR_PARSE)
            tdm_test_fail(__FILE__, __LINE__, "accepted \"%s\"", bad[i]);
    ASSERT_ERR(tdm__ts_from_text("9223372036854775808", 19, TDM__UNIT_MS, &t),
               TDM_ERR_RANGE);
    ASSERT_ERR(tdm__ts_from_text("-9223372036854775808", 20, TDM__UNIT_MS, &t),
               TDM_ERR_RANGE);
    ASSERT_ERR(tdm__ts_from_text("9223372036854776", 16, TDM__UNIT_S, &t),
               TDM_ERR_RANGE);
    ASSERT_ERR(
        tdm__ts_from_text("99999999999999999999999", 23, TDM__UNIT_NS, &t),
        TDM_ERR_RANGE);
}

TDM_TEST(double_units)
{
    tdm_time_ms t;
    /* The double nearest 1733133600.123 is a hair below it; the product
     * is taken as the integer it is within a microsecond of. */
    ASSERT_OK(tdm__ts_from_double(1733133600.123, TDM__UNIT_S, &t));
    ASSERT_EQ(t, INT64_C(1733133600123));
    ASSERT_OK(tdm__ts_from_double(1.5, TDM__UNIT_MS, &t));
    ASSERT_EQ(t, 1);
    ASSERT_OK(tdm__ts_from_double(-1.5, TDM__UNIT_MS, &t));
    ASSERT_EQ(t, -2);
    ASSERT_OK(tdm__ts_from_double(2500.0, TDM__UNIT_US, &t));
    ASSERT_EQ(t, 2);
    ASSERT_ERR(tdm__ts_from_double(1e300, TDM__UNIT_S, &t), TDM_ERR_RANGE);
    ASSERT_ERR(tdm__ts_from_double(NAN, TDM__UNIT_S, &t), TDM_ERR_RANGE);
    ASSERT_ERR(tdm__ts_from_double(9.3e18, TDM__UNIT_MS, &t), TDM_ERR_RANGE);
    ASSERT_ERR(tdm__ts_from_double(1.0, TDM__UNIT_ISO8601, &t), TDM_ERR_PARSE);
}

TDM_TEST(unit_names)
{
    ASSERT_STR_EQ(tdm__conn_unit_name(TDM__UNIT_MS), "ms");
    ASSERT_STR_EQ(tdm__conn_unit_name(TDM__UNIT_S), "s");
    ASSERT_STR_EQ(tdm__conn_unit_name(TDM__UNIT_US), "us");
    ASSERT_STR_EQ(tdm__conn_unit_name(TDM__UNIT_NS), "ns");
    ASSERT_STR_EQ(tdm__conn_unit_name(TDM__UNIT_ISO8601), "iso8601");
}
