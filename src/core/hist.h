/* SPDX-License-Identifier: MIT */
/* hist.h - a log-linear histogram of non-negative int64 values (delays
 * in milliseconds): exact below 256, then 128 buckets per power of two,
 * so every quantile is within 1/128 (0.8%) of the true value, in a fixed
 * 58 KB whatever the input size.  The runtime's per-source lag metrics
 * and `tidemark analyze` both measure out-of-orderness with it.
 */
#ifndef TDM_HIST_H
#define TDM_HIST_H

#include <stdint.h>

#include "tidemark.h"

#define TDM__HIST_SUB_BITS 7
#define TDM__HIST_EXACT (2 << TDM__HIST_SUB_BITS) /* 256 exact buckets */
#define TDM__HIST_BUCKETS                                                      \
    (TDM__HIST_EXACT + (62 - TDM__HIST_SUB_BITS) * (1 << TDM__HIST_SUB_BITS))

typedef struct tdm__hist {
    uint64_t n;  /* values added */
    int64_t max; /* largest value added (-1: none) */
    uint64_t *b; /* TDM__HIST_BUCKETS counts */
} tdm__hist;

/* Prepares an empty histogram.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__hist_init(tdm__hist *h);
/* Releases the buckets; harmless on a zeroed or finished histogram. */
void tdm__hist_fini(tdm__hist *h);
/* Forgets every value. */
void tdm__hist_reset(tdm__hist *h);

/* The bucket of @p v (negative values count as 0). */
static inline int tdm__hist_bucket(int64_t v)
{
    int msb;
    if (v < TDM__HIST_EXACT)
        return v < 0 ? 0 : (int)v;
    msb = 63 - __builtin_clzll((unsigned long long)v);
    return TDM__HIST_EXACT +
           (msb - TDM__HIST_SUB_BITS - 1) * (1 << TDM__HIST_SUB_BITS) +
           (int)((v >> (msb - TDM__HIST_SUB_BITS)) - (1 << TDM__HIST_SUB_BITS));
}

/* Adds @p count occurrences of @p v. */
static inline void tdm__hist_add_n(tdm__hist *h, int64_t v, uint64_t count)
{
    if (v < 0)
        v = 0;
    h->b[tdm__hist_bucket(v)] += count;
    h->n += count;
    if (v > h->max)
        h->max = v;
}
static inline void tdm__hist_add(tdm__hist *h, int64_t v)
{
    tdm__hist_add_n(h, v, 1);
}

/* The lowest and highest value bucket @p i holds. */
int64_t tdm__hist_bucket_low(int i);
int64_t tdm__hist_bucket_high(int i);
/* The q-quantile (0 <= q <= 1): the highest value of the first bucket at
 * which at least ceil(q * n) values lie at or below (never above max),
 * so it over-estimates by at most 1/128.  -1 when empty. */
int64_t tdm__hist_quantile(const tdm__hist *h, double q);
/* How many values are greater than @p v: exact when @p v is a bucket's
 * highest value (every v below 256 is), otherwise values in v's bucket
 * are counted as greater (an over-estimate within that bucket). */
uint64_t tdm__hist_count_above(const tdm__hist *h, int64_t v);
/* Adds every value of @p src to @p dst. */
void tdm__hist_merge(tdm__hist *dst, const tdm__hist *src);

#endif /* TDM_HIST_H */
