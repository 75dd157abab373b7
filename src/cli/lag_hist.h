/* SPDX-License-Identifier: MIT */
/* lag_hist.h - the histogram `tidemark analyze` measures delays with: a
 * log-linear histogram of non-negative int64 values, exact below 256,
 * then 128 buckets per power of two, so every quantile is within 1/128
 * (0.8 %) of the true value, in a fixed 58 KB whatever the input size.
 *
 * CLI business, not API: it holds the report's numbers.  Its bucket
 * layout is the one the runtime's lag metrics use (src/core/hist.h),
 * so analyze's quantiles are the run's; tests/unit/test_cli_hist.c
 * holds the two to the same answers.
 */
#ifndef TDM_CLI_LAG_HIST_H
#define TDM_CLI_LAG_HIST_H

#include <stdint.h>

#include "tidemark.h"

#define TDM__CLI_HIST_SUB_BITS 7
#define TDM__CLI_HIST_EXACT (2 << TDM__CLI_HIST_SUB_BITS) /* 256 exact */
#define TDM__CLI_HIST_BUCKETS                                                  \
    (TDM__CLI_HIST_EXACT +                                                     \
     (62 - TDM__CLI_HIST_SUB_BITS) * (1 << TDM__CLI_HIST_SUB_BITS))

typedef struct tdm__cli_hist {
    uint64_t n;  /* values added */
    int64_t max; /* largest value added (-1: none) */
    uint64_t *b; /* TDM__CLI_HIST_BUCKETS counts */
} tdm__cli_hist;

/* Prepares an empty histogram.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__cli_hist_init(tdm__cli_hist *h);
/* Releases the buckets; harmless on a zeroed or finished histogram. */
void tdm__cli_hist_fini(tdm__cli_hist *h);
/* Forgets every value. */
void tdm__cli_hist_reset(tdm__cli_hist *h);
/* The bucket of @p v (negative values count as 0). */
int tdm__cli_hist_bucket(int64_t v);
/* Adds one occurrence of @p v (negative: 0). */
void tdm__cli_hist_add(tdm__cli_hist *h, int64_t v);
/* The lowest and highest value bucket @p i holds. */
int64_t tdm__cli_hist_bucket_low(int i);
int64_t tdm__cli_hist_bucket_high(int i);
/* The q-quantile (0 <= q <= 1): the highest value of the first bucket at
 * which at least ceil(q * n) values lie at or below (never above max);
 * -1 when empty. */
int64_t tdm__cli_hist_quantile(const tdm__cli_hist *h, double q);
/* How many values are greater than @p v (exact when @p v is a bucket's
 * highest value, else its bucket counts as greater). */
uint64_t tdm__cli_hist_count_above(const tdm__cli_hist *h, int64_t v);
/* Adds every value of @p src to @p dst. */
void tdm__cli_hist_merge(tdm__cli_hist *dst, const tdm__cli_hist *src);

#endif /* TDM_CLI_LAG_HIST_H */
