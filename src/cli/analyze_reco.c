/* SPDX-License-Identifier: MIT */
/* analyze_reco.c - from measurements to settings: the out-of-orderness
 * bound, allowed lateness, idle timeout and the late fractions they
 * imply, the spikes of the lag over time, and whether the bound should
 * follow the hour (rule live_bound, below).
 *
 * The reasoning (docs/analyze.md has it in full).  With a bounded
 * strategy of bound B and on-event emission, a partition's watermark
 * after a record is (its highest timestamp) - B - 1 and the reader's
 * output is the minimum over partitions, so it is never above
 * max_p - B - 1 for the partition p a record comes from.  A record with
 * lag <= B (lag = max_p - ts) therefore has ts > watermark: it is never
 * behind the watermark.  A record with lag > B may be: the fraction of
 * records with lag > B is an upper bound of the fraction behind the
 * watermark.  Being behind is not yet being late: the record is late only
 * when its window already fired, i.e. when window end - 1 <= watermark,
 * and dropped (or sent to the late output) only when end - 1 + L <=
 * watermark.  Since ts <= end - 1, a record with lag <= B + L is never
 * dropped.  The what-if replays give the exact figures for a window.
 * Idle partitions break the bound (a partition marked idle leaves the
 * minimum; when it comes back the output does not go back), which is why
 * the idle timeout comes with its own estimate.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"

/* Gaps this many times the P99.9 gap (and at least OUTLIER_MIN_MS) are
 * silences, not the partition's normal rhythm. */
#define OUTLIER_FACTOR 10
#define OUTLIER_MIN_MS 1000
/* The idle timeout is never below this: idleness is judged at periodic
 * emissions (200 ms by default), so shorter timeouts only add noise. */
#define IDLE_MIN_MS 1000
/* A slice is a spike when its P99 is at least twice the median slice
 * P99 plus this much; slices with fewer records are not judged. */
#define SPIKE_PLUS_MS 10
#define SPIKE_MIN_RECORDS 100
/* Rule live_bound (see tdm__analyze_live_rule()): hours with fewer
 * records are not judged; a live bound is worth it when the busiest
 * judged hour needs LIVE_FACTOR times the calmest one's bound and
 * LIVE_MIN_DIFF_MS more. */
#define LIVE_MIN_RECORDS 100
#define LIVE_FACTOR 2
#define LIVE_MIN_DIFF_MS 1000

/* Rounds up to two significant digits (see analyze.h). */
int64_t tdm__analyze_nice_up(int64_t v)
{
    if (v <= 100 || v > INT64_MAX / 2)
        return v;
    int64_t p = 1;
    while (v / p >= 100)
        p *= 10;
    return (v + p - 1) / p * p;
}

/* The bound a lag histogram asks for at a target (see analyze.h). */
tdm_time_ms tdm__analyze_bound_of(const tdm__cli_hist *h, double target)
{
    if (h->n == 0)
        return 0;
    return tdm__analyze_nice_up(tdm__cli_hist_quantile(h, 1 - target));
}

/* Fraction of the lag histogram's values above @p v (0 when @p v is at
 * or above the maximum; otherwise the histogram's count, exact at bucket
 * boundaries and an over-estimate within a bucket). */
static double frac_above(const tdm__cli_hist *h, int64_t v)
{
    if (h->n == 0 || v >= h->max)
        return 0;
    return (double)tdm__cli_hist_count_above(h, v) / (double)h->n;
}

/* The largest gap not above @p limit, read off the gap histogram
 * (bucket resolution). */
static int64_t largest_below(const tdm__cli_hist *h, int64_t limit)
{
    if (h->n == 0)
        return 0;
    if (h->max <= limit)
        return h->max;
    for (int i = tdm__cli_hist_bucket(limit); i >= 0; i--) {
        if (h->b[i] == 0)
            continue;
        int64_t hi = tdm__cli_hist_bucket_high(i);
        return hi < limit ? hi : limit;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Flags slices whose P99 jumps: P99 >= 2 x median slice P99 + 10 ms. */
static void flag_spikes(tdm__an_scan *s, tdm__an_reco *r)
{
    int64_t p99[TDM__AN_SLICES];
    int n = 0;
    for (int k = 0; k < s->n_slices; k++)
        if (s->slices[k].lag.n >= SPIKE_MIN_RECORDS)
            p99[n++] = tdm__cli_hist_quantile(&s->slices[k].lag, 0.99);
    if (n == 0)
        return;
    qsort(p99, (size_t)n, sizeof *p99, cmp_i64);
    r->slice_p99_median = p99[(n - 1) / 2];
    for (int k = 0; k < s->n_slices; k++) {
        tdm__an_slice *sl = &s->slices[k];
        sl->spike = sl->lag.n >= SPIKE_MIN_RECORDS &&
                    tdm__cli_hist_quantile(&sl->lag, 0.99) >=
                        2 * r->slice_p99_median + SPIKE_PLUS_MS;
        r->n_spikes += sl->spike;
    }
}

/* Estimates how many records of the sample an idle timeout would make
 * late: after a partition was silent longer than the timeout (in event
 * time, as the scan infers silence without arrival times) it was idle;
 * until it catches up, its records whose timestamp is at or below the
 * highest timestamp seen - bound - 1 count as late.  The highest
 * timestamp over-states the watermark, so this is an upper estimate. */
static void idle_estimate(const tdm__an_scan *s, tdm__an_reco *r)
{
    const tdm__an_sample *sm = &s->sample;
    int n = s->n_parts;
    tdm_time_ms *prev = malloc((size_t)(n ? n : 1) * sizeof *prev);
    uint8_t *resumed = calloc((size_t)(n ? n : 1), 1);
    tdm_time_ms g = TDM_TIME_MIN;
    if (!prev || !resumed)
        goto out;
    for (int p = 0; p < n; p++)
        prev[p] = TDM_TIME_MIN;
    for (int64_t k = 0; k < sm->n; k++) {
        uint32_t p = sm->part[k];
        tdm_time_ms ts = sm->ts[k];
        if (sm->guarded[k] || (int)p >= n)
            continue;
        r->idle_checked++;
        if (prev[p] != TDM_TIME_MIN && g != TDM_TIME_MIN &&
            tdm_time_sub(g, prev[p]) > r->idle_timeout)
            resumed[p] = 1;
        if (resumed[p]) {
            tdm_time_ms wm = tdm_time_sub(tdm_time_sub(g, r->bound99), 1);
            if (ts <= wm)
                r->idle_late++;
            else
                resumed[p] = 0;
        }
        if (ts > g)
            g = ts;
        prev[p] = g;
    }
out:
    free(prev);
    free(resumed);
}

/* Rule live_bound: one static bound, or one that follows the hour?
 *
 * Disorder that drifts over the day (a calm night, a busy evening) makes
 * a static bound a compromise: it must cover the busiest hour, and every
 * calmer hour waits that long for its results.  A running job takes a
 * new bound without a restart (`tidemark set`, PATCH /jobs/:id/config),
 * so the bound can follow the hour.  Each UTC hour of event time (the
 * records whose timestamp lies in it) gets the bound it needs for
 * --target within itself:
 *
 *   upper   what its own lag histogram asks for, tdm__analyze_bound_of:
 *           the (1 - target) quantile rounded up, the measure of the
 *           recommendation without a sample.  An upper bound (a record
 *           with lag <= B is never behind the watermark), cheap for any
 *           number of hours;
 *   bound   for an hour the sample holds entirely, what the
 *           recommendation is for the whole input: the smallest ladder
 *           value whose replayed late count, here the hour's own, is at
 *           most the target's share of the hour's records (the search is
 *           analyze_target.c's, sharing its replays); for the others,
 *           upper.  The histogram alone over-states: lag beyond the
 *           bound is late only where it crosses a window's end, so with
 *           windows much longer than the lag every hour may meet the
 *           target at 0 however the lag drifts.
 *
 * A live change is no replay of a bound per hour: the watermark never
 * goes back, so a raise holds it until the data passes it.
 *
 *   live_bound  worth it   busiest >= 2 x calmest and busiest - calmest
 *                          >= 1 s, over the hours with 100 records or
 *                          more (at least 2 of them);
 *               static     otherwise (one bound suffices).
 *
 * The rule compares bounds of one measure: the replayed ones when 2 or
 * more such hours were replayed (hours past the sample keep their
 * histogram bound in the table but are left out, as the histogram
 * over-states), else the histogram ones.
 *
 * The report shows the hours when the timestamps fall in 2 or more.
 */
void tdm__analyze_live_rule(tdm__an_scan *s, tdm__an_reco *r)
{
    int replayed = 0;
    r->calm = r->busy = -1;
    r->hours_judged = 0;
    r->live_worth = false;
    r->hourly = s->n_hours >= 2;
    for (int k = 0; k < s->n_hours; k++)
        replayed += s->hours[k].judged && s->hours[k].checked;
    r->by_replay = replayed >= 2;
    for (int k = 0; k < s->n_hours; k++) {
        tdm__an_hour *hr = &s->hours[k];
        hr->ruled = hr->judged && (!r->by_replay || hr->checked);
        if (!hr->ruled)
            continue;
        r->hours_judged++;
        if (r->calm < 0 || hr->bound < s->hours[r->calm].bound)
            r->calm = k;
        if (r->busy < 0 || hr->bound > s->hours[r->busy].bound)
            r->busy = k;
    }
    if (!r->hourly || r->hours_judged < 2)
        return;
    int64_t lo = s->hours[r->calm].bound, hi = s->hours[r->busy].bound;
    /* hi / 2 >= lo is hi >= 2 lo for integers >= 0, without overflow. */
    r->live_worth = hi / LIVE_FACTOR >= lo && hi - lo >= LIVE_MIN_DIFF_MS;
}

/* Each hour's bound from its lag histogram, then the rule. */
static void live_bound(const tdm__an_opts *o, tdm__an_scan *s, tdm__an_reco *r)
{
    for (int k = 0; k < s->n_hours; k++) {
        tdm__an_hour *hr = &s->hours[k];
        hr->upper = tdm__analyze_bound_of(&hr->lag, o->target);
        hr->bound = hr->upper;
        hr->judged = hr->lag.n >= LIVE_MIN_RECORDS;
        hr->checked = false;
        hr->late = -1;
    }
    tdm__analyze_live_rule(s, r);
}

/* Derives the recommendations (see analyze.h and the file comment). */
void tdm__analyze_recommend(const tdm__an_opts *o, tdm__an_scan *s,
                            tdm__an_reco *r)
{
    const tdm__cli_hist *h = &s->lag;
    memset(r, 0, sizeof *r);
    if (h->n > 0) {
        /* Bounds: the quantile (a bucket's highest value, at most 0.8%
         * above the true quantile), rounded up to two digits. */
        r->bound99 = tdm__analyze_nice_up(tdm__cli_hist_quantile(h, 0.99));
        r->bound999 = tdm__analyze_nice_up(tdm__cli_hist_quantile(h, 0.999));
        r->behind99 = frac_above(h, r->bound99);
        r->behind999 = frac_above(h, r->bound999);
        /* Lateness on top of bound99 up to P99.99 and up to the max. */
        int64_t q9999 = tdm__analyze_nice_up(tdm__cli_hist_quantile(h, 0.9999));
        int64_t qmax = tdm__analyze_nice_up(h->max);
        r->late9999 = q9999 > r->bound99 ? q9999 - r->bound99 : 0;
        r->late_max = qmax > r->bound99 ? qmax - r->bound99 : 0;
        r->dropped9999 = frac_above(h, r->bound99 + r->late9999);
        r->dropped_max = frac_above(h, r->bound99 + r->late_max);
    }

    /* Idle timeout: above every normal gap, below the silences. */
    const tdm__cli_hist *g = &s->gaps;
    r->idle_from_arrival = s->has_arrival;
    if (g->n > 0) {
        r->gap_p999 = tdm__cli_hist_quantile(g, 0.999);
        r->gap_max = g->max;
        int64_t limit = r->gap_p999 * OUTLIER_FACTOR;
        if (limit < OUTLIER_MIN_MS)
            limit = OUTLIER_MIN_MS;
        r->gap_normal_max = largest_below(g, limit);
    }
    int64_t t = r->gap_normal_max + r->gap_normal_max / 2;
    r->idle_timeout = tdm__analyze_nice_up(t > IDLE_MIN_MS ? t : IDLE_MIN_MS);
    for (int p = 0; p < s->n_parts; p++)
        if (s->parts[p].records > 0 && s->parts[p].max_gap > r->idle_timeout)
            r->n_idle_parts++;
    if (s->n_parts > 1)
        idle_estimate(s, r);
    flag_spikes(s, r);
    live_bound(o, s, r);
}
