/* SPDX-License-Identifier: MIT */
/* test_hist.c - the log-linear histogram (src/core/hist.c): bucket
 * bounds tile the int64 range, quantiles are exact below 256 and within
 * 1/128 above, tail counts and merging.
 */
#include "core.h"
#include "core/hist.h"
#include "harness.h"

/* Buckets are contiguous and ordered: each starts one past the previous
 * one's end, and every value maps back to the bucket that holds it. */
TDM_TEST(buckets_tile_the_range)
{
    int i;
    ASSERT_EQ(tdm__hist_bucket_low(0), 0);
    for (i = 1; i < TDM__HIST_BUCKETS; i++) {
        int64_t lo = tdm__hist_bucket_low(i);
        ASSERT_EQ(lo, tdm__hist_bucket_high(i - 1) + 1);
        ASSERT_EQ(tdm__hist_bucket(lo), i);
        ASSERT_EQ(tdm__hist_bucket(tdm__hist_bucket_high(i)), i);
    }
    ASSERT_EQ(tdm__hist_bucket_high(TDM__HIST_BUCKETS - 1), INT64_MAX);
    ASSERT_EQ(tdm__hist_bucket(INT64_MAX), TDM__HIST_BUCKETS - 1);
    ASSERT_EQ(tdm__hist_bucket(-5), 0);
}

/* Values 1..100: the q-quantile is the ceil(100 q)-th value (exact, all
 * below 256). */
TDM_TEST(exact_quantiles_below_256)
{
    tdm__hist h;
    int64_t v;
    ASSERT_OK(tdm__hist_init(&h));
    ASSERT_EQ(tdm__hist_quantile(&h, 0.5), -1);
    for (v = 1; v <= 100; v++)
        tdm__hist_add(&h, v);
    ASSERT_EQ(tdm__hist_quantile(&h, 0.5), 50);
    ASSERT_EQ(tdm__hist_quantile(&h, 0.99), 99);
    ASSERT_EQ(tdm__hist_quantile(&h, 0.991), 100);
    ASSERT_EQ(tdm__hist_quantile(&h, 1.0), 100);
    ASSERT_EQ(tdm__hist_quantile(&h, 0.0), 1);
    /* 90 values are above 10, none above 100. */
    ASSERT_EQ(tdm__hist_count_above(&h, 10), 90);
    ASSERT_EQ(tdm__hist_count_above(&h, 100), 0);
    ASSERT_EQ(tdm__hist_count_above(&h, -1), 100);
    tdm__hist_fini(&h);
}

/* Large values: the estimate is never below the truth and at most 1/128
 * above it (relative). */
TDM_TEST(large_values_within_one_percent)
{
    tdm__hist h;
    int64_t v, q;
    ASSERT_OK(tdm__hist_init(&h));
    for (v = 1000; v < 1000 + 100000; v += 1000)
        tdm__hist_add(&h, v * 37);
    /* 100 values 37,000 .. 3,700,000 step 37,000; the median is the
     * 50th: 50 * 37,000. */
    q = tdm__hist_quantile(&h, 0.5);
    ASSERT_TRUE(q >= 1850000);
    ASSERT_TRUE(q <= 1850000 + 1850000 / 128);
    ASSERT_EQ(tdm__hist_quantile(&h, 1.0), 3700000);
    ASSERT_EQ(h.max, 3700000);
    tdm__hist_fini(&h);
}

/* Merging adds counts and keeps the larger maximum. */
TDM_TEST(merge_and_reset)
{
    tdm__hist a, b;
    ASSERT_OK(tdm__hist_init(&a));
    ASSERT_OK(tdm__hist_init(&b));
    tdm__hist_add_n(&a, 5, 3);
    tdm__hist_add_n(&b, 7, 1);
    tdm__hist_merge(&a, &b);
    ASSERT_EQ(a.n, 4);
    ASSERT_EQ(a.max, 7);
    ASSERT_EQ(tdm__hist_quantile(&a, 0.75), 5);
    ASSERT_EQ(tdm__hist_quantile(&a, 0.76), 7);
    tdm__hist_reset(&a);
    ASSERT_EQ(a.n, 0);
    ASSERT_EQ(tdm__hist_quantile(&a, 0.5), -1);
    tdm__hist_fini(&a);
    tdm__hist_fini(&b);
}
