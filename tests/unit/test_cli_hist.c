/* SPDX-License-Identifier: MIT */
/* test_cli_hist.c - the CLI's delay histogram (src/cli/lag_hist.c) gives
 * the runtime's (src/core/hist.c) answers: same buckets, quantiles, tail
 * counts and merges on seeded random values over the whole int64 range,
 * so `tidemark analyze` and a run's lag metrics agree.
 */
#include <stdlib.h>

#include "core/hist.h"
#include "harness.h"
#include "lag_hist.h"

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A value of a random magnitude: mostly small, some up to INT64_MAX. */
static int64_t value(uint64_t *s)
{
    int bits = (int)(next(s) % 64);
    return (int64_t)(next(s) >> (64 - bits - 1 > 63 ? 63 : 64 - bits - 1));
}

TDM_TEST(same_buckets)
{
    ASSERT_EQ(TDM__CLI_HIST_BUCKETS, TDM__HIST_BUCKETS);
    for (int i = 0; i < TDM__HIST_BUCKETS; i++) {
        ASSERT_EQ(tdm__cli_hist_bucket_low(i), tdm__hist_bucket_low(i));
        ASSERT_EQ(tdm__cli_hist_bucket_high(i), tdm__hist_bucket_high(i));
    }
    uint64_t s = 42;
    for (int i = 0; i < 100000; i++) {
        int64_t v = value(&s);
        ASSERT_EQ(tdm__cli_hist_bucket(v), tdm__hist_bucket(v));
    }
    ASSERT_EQ(tdm__cli_hist_bucket(-5), tdm__hist_bucket(-5));
    ASSERT_EQ(tdm__cli_hist_bucket(INT64_MAX), tdm__hist_bucket(INT64_MAX));
}

TDM_TEST(same_answers)
{
    tdm__cli_hist c, c2;
    tdm__hist h, h2;
    ASSERT_OK(tdm__cli_hist_init(&c));
    ASSERT_OK(tdm__cli_hist_init(&c2));
    ASSERT_OK(tdm__hist_init(&h));
    ASSERT_OK(tdm__hist_init(&h2));
    ASSERT_EQ(tdm__cli_hist_quantile(&c, 0.5), tdm__hist_quantile(&h, 0.5));
    uint64_t s = 7;
    for (int i = 0; i < 50000; i++) {
        int64_t v = i % 3 ? value(&s) % 5000 : value(&s);
        tdm__cli_hist_add(i % 2 ? &c : &c2, v);
        tdm__hist_add(i % 2 ? &h : &h2, v);
    }
    tdm__cli_hist_merge(&c, &c2);
    tdm__hist_merge(&h, &h2);
    ASSERT_EQ(c.n, h.n);
    ASSERT_EQ(c.max, h.max);
    static const double qs[] = {0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        ASSERT_EQ(tdm__cli_hist_quantile(&c, qs[i]),
                  tdm__hist_quantile(&h, qs[i]));
    for (int i = 0; i < 2000; i++) {
        int64_t v = i < 1000 ? i : value(&s);
        ASSERT_EQ(tdm__cli_hist_count_above(&c, v),
                  tdm__hist_count_above(&h, v));
    }
    tdm__cli_hist_reset(&c);
    ASSERT_EQ(c.n, 0);
    ASSERT_EQ(tdm__cli_hist_quantile(&c, 0.5), -1);
    tdm__cli_hist_fini(&c);
    tdm__cli_hist_fini(&c);
    tdm__cli_hist_fini(&c2);
    tdm__cli_hist_fini(NULL);
    tdm__hist_fini(&h);
    tdm__hist_fini(&h2);
}
