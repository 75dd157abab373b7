/* SPDX-License-Identifier: MIT */
/* lag_hist.c - the histogram of lag_hist.h: buckets, quantiles, tail
 * counts, merging.
 *
 * Bucket i below 256 holds the value i.  Above, the values with their
 * highest set bit at msb fall into 128 equal slices of [2^msb, 2^(msb+1)):
 *
 *   bucket = 256 + (msb - 8) * 128 + (v >> (msb - 7)) - 128
 *
 * Invariant: n is the sum of the counts and max the largest value added.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lag_hist.h"

#define SUB TDM__CLI_HIST_SUB_BITS
#define EXACT TDM__CLI_HIST_EXACT
#define BUCKETS TDM__CLI_HIST_BUCKETS

/* Prepares an empty histogram (see lag_hist.h). */
tdm_err tdm__cli_hist_init(tdm__cli_hist *h)
{
    h->n = 0;
    h->max = -1;
    h->b = calloc(BUCKETS, sizeof *h->b);
    return h->b ? TDM_OK : TDM_ERR_NOMEM;
}

/* Releases the buckets (see lag_hist.h). */
void tdm__cli_hist_fini(tdm__cli_hist *h)
{
    if (!h)
        return;
    free(h->b);
    h->b = NULL;
    h->n = 0;
    h->max = -1;
}

/* Forgets every value (see lag_hist.h). */
void tdm__cli_hist_reset(tdm__cli_hist *h)
{
    memset(h->b, 0, BUCKETS * sizeof *h->b);
    h->n = 0;
    h->max = -1;
}

/* The bucket of a value (see the file comment). */
int tdm__cli_hist_bucket(int64_t v)
{
    if (v < EXACT)
        return v < 0 ? 0 : (int)v;
    int msb = 63 - __builtin_clzll((unsigned long long)v);
    return EXACT + (msb - SUB - 1) * (1 << SUB) +
           (int)((v >> (msb - SUB)) - (1 << SUB));
}

/* Adds a value (see lag_hist.h). */
void tdm__cli_hist_add(tdm__cli_hist *h, int64_t v)
{
    if (v < 0)
        v = 0;
    h->b[tdm__cli_hist_bucket(v)]++;
    h->n++;
    if (v > h->max)
        h->max = v;
}

/* Bucket i >= EXACT is slice s of octave k: it starts at (128 + s) <<
 * (k + 1) and is 2^(k + 1) wide. */
int64_t tdm__cli_hist_bucket_low(int i)
{
    if (i < EXACT)
        return i;
    int k = (i - EXACT) >> SUB;
    int s = (i - EXACT) & ((1 << SUB) - 1);
    return (int64_t)((1 << SUB) + s) << (k + 1);
}

int64_t tdm__cli_hist_bucket_high(int i)
{
    if (i < EXACT)
        return i;
    if (i == BUCKETS - 1)
        return INT64_MAX;
    int k = (i - EXACT) >> SUB;
    return tdm__cli_hist_bucket_low(i) + ((int64_t)1 << (k + 1)) - 1;
}

/* The q-quantile (see lag_hist.h). */
int64_t tdm__cli_hist_quantile(const tdm__cli_hist *h, double q)
{
    if (h->n == 0)
        return -1;
    if (q >= 1)
        return h->max;
    if (q < 0)
        q = 0;
    uint64_t need = (uint64_t)ceil(q * (double)h->n);
    if (need == 0)
        need = 1;
    uint64_t seen = 0;
    for (int i = 0; i < BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= need) {
            int64_t hi = tdm__cli_hist_bucket_high(i);
            return hi < h->max ? hi : h->max;
        }
    }
    return h->max;
}

/* How many values are greater than v (see lag_hist.h). */
uint64_t tdm__cli_hist_count_above(const tdm__cli_hist *h, int64_t v)
{
    if (v < 0)
        return h->n;
    int first = tdm__cli_hist_bucket(v);
    if (tdm__cli_hist_bucket_high(first) == v)
        first++;
    uint64_t above = 0;
    for (int i = first; i < BUCKETS; i++)
        above += h->b[i];
    return above;
}

/* Adds every value of src to dst (see lag_hist.h). */
void tdm__cli_hist_merge(tdm__cli_hist *dst, const tdm__cli_hist *src)
{
    for (int i = 0; i < BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->n += src->n;
    if (src->max > dst->max)
        dst->max = src->max;
}
