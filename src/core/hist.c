/* SPDX-License-Identifier: MIT */
/* hist.c - the log-linear histogram of hist.h: bucket bounds, quantiles,
 * tail counts and merging.  Adding a value is inline in the header (one
 * count-leading-zeros, a shift and an increment).
 */
#include <math.h>
#include <string.h>

#include "core.h"
#include "core/hist.h"

tdm_err tdm__hist_init(tdm__hist *h)
{
    h->n = 0;
    h->max = -1;
    h->b = tdm__calloc(TDM__HIST_BUCKETS, sizeof *h->b);
    return h->b ? TDM_OK : TDM_ERR_NOMEM;
}

void tdm__hist_fini(tdm__hist *h)
{
    if (h == NULL)
        return;
    tdm__free(h->b);
    h->b = NULL;
    h->n = 0;
    h->max = -1;
}

void tdm__hist_reset(tdm__hist *h)
{
    memset(h->b, 0, TDM__HIST_BUCKETS * sizeof *h->b);
    h->n = 0;
    h->max = -1;
}

/* Bucket i >= EXACT covers one of 128 equal slices of [2^msb, 2^(msb+1)):
 * slice s starts at (128 + s) << (msb - 7). */
int64_t tdm__hist_bucket_low(int i)
{
    int k, s;
    if (i < TDM__HIST_EXACT)
        return i;
    k = (i - TDM__HIST_EXACT) >> TDM__HIST_SUB_BITS;
    s = (i - TDM__HIST_EXACT) & ((1 << TDM__HIST_SUB_BITS) - 1);
    /* msb = k + SUB_BITS + 1, slice width 2^(msb - SUB_BITS) = 2^(k+1). */
    return (int64_t)((1 << TDM__HIST_SUB_BITS) + s) << (k + 1);
}

int64_t tdm__hist_bucket_high(int i)
{
    int k;
    if (i < TDM__HIST_EXACT)
        return i;
    k = (i - TDM__HIST_EXACT) >> TDM__HIST_SUB_BITS;
    if (i == TDM__HIST_BUCKETS - 1)
        return INT64_MAX;
    return tdm__hist_bucket_low(i) + ((int64_t)1 << (k + 1)) - 1;
}

int64_t tdm__hist_quantile(const tdm__hist *h, double q)
{
    uint64_t need, seen = 0;
    int i;
    if (h->n == 0)
        return -1;
    if (q <= 0)
        q = 0;
    if (q >= 1)
        return h->max;
    need = (uint64_t)ceil(q * (double)h->n);
    if (need == 0)
        need = 1;
    for (i = 0; i < TDM__HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= need) {
            int64_t hi = tdm__hist_bucket_high(i);
            return hi < h->max ? hi : h->max;
        }
    }
    return h->max;
}

uint64_t tdm__hist_count_above(const tdm__hist *h, int64_t v)
{
    uint64_t above = 0;
    int i, first;
    if (v < 0)
        return h->n;
    first = tdm__hist_bucket(v);
    /* v's own bucket counts only when v is not its highest value. */
    if (tdm__hist_bucket_high(first) == v)
        first++;
    for (i = first; i < TDM__HIST_BUCKETS; i++)
        above += h->b[i];
    return above;
}

void tdm__hist_merge(tdm__hist *dst, const tdm__hist *src)
{
    int i;
    for (i = 0; i < TDM__HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->n += src->n;
    if (src->max > dst->max)
        dst->max = src->max;
}
