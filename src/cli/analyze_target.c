/* SPDX-License-Identifier: MIT */
/* analyze_target.c - the recommendation: which bound meets --target,
 * checked by exact replays, with the allowed lateness and late output
 * that go with it.
 *
 * The user states the late fraction they accept (--target, default 1%:
 * the P99).  "Late" is what a job would do to the record: not counted in
 * its window's first result (the what-if's records - on_time), suspects
 * of another unit left out of both sides (analyze_unit.c).  That count
 * does not depend on allowed lateness (lateness decides what happens to
 * a late record, not whether it is late), so bounds are compared by
 * replays with lateness 0.
 *
 * A histogram quantile cannot answer this: lag > B only says that a
 * record MAY be behind the watermark, and only records whose window had
 * already fired are late, which depends on the window.  Rounding makes it
 * worse: the quantile is a bucket's highest value (up to 0.8% above the
 * true one), and rounding that up to a "nice" value can step past a nice
 * value that already meets the target (15 s where 14 s does).  So the
 * recommended bound is searched among the nice values themselves - the
 * ladder 0, 1, ... 100, then two significant digits (110, 120 ... 990,
 * 1000, 1100 ...) - by bisection with one exact replay per probe: the
 * smallest ladder value whose late count meets the target.
 *
 * Bisection assumes that a larger bound makes no more records late.  With
 * bounded on-event watermarks this holds: every partition's watermark,
 * and so their minimum, is lower at every record for a larger bound, so
 * every window fires later.  It is checked anyway where it matters: the
 * ladder value just below the answer is replayed, and if it meets the
 * target too the search steps down.
 *
 * On top of the bound, allowed lateness covers the tail: up to the
 * maximum lag seen when that is at most twice the P99.99 cover, else up
 * to the P99.99 (the rest goes to the late output, whose exact count is
 * the what-if row of that combination).  Without a sample (--sample 0)
 * nothing can be replayed and the bound is the histogram's: the
 * (1 - target) quantile rounded up, an upper bound of the answer.
 *
 * Per hour of event time (rule live_bound, analyze_reco.c) the same
 * search runs for each hour the sample holds entirely, against the
 * hour's own late count (each replay counts the late records of every
 * hour by their timestamps): the smallest ladder value whose late count
 * in the hour is at most the target's share of the hour's records.  A
 * larger bound makes no record later, so each hour's count falls with
 * the bound too.  The replay at the recommended bound splits the hours
 * into those that meet the target there (their answer is at or below
 * it) and the others (above it, and at most their histogram bound,
 * which no lag in the hour exceeds); then the hours are bisected
 * together, a replay (the search's own, or a new one) serving every
 * hour whose interval holds it, so hours with like answers share their
 * replays.  At most HOUR_REPLAYS_MAX new replays: an hour not settled
 * by then keeps the smallest bound known to meet its target.  Per-hour
 * answers rely on that monotony alone (no step-down check).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"

/* The max is covered by the lateness when at most this many times the
 * P99.99 cover. */
#define MAX_COVER_FACTOR 2
/* Replays the per-hour search runs at most, besides the one at the
 * recommended bound. */
#define HOUR_REPLAYS_MAX 24

/* The ladder value below @p v (see analyze.h). */
int64_t tdm__analyze_nice_down(int64_t v)
{
    if (v <= 101)
        return v - 1;
    int64_t p = 1;
    while ((v - 1) / p >= 100)
        p *= 10;
    return (v - 1) / p * p;
}

/* The search: the ladder from 0 to its top, and the late count of each
 * value replayed so far (-1: not yet), overall and per hour. */
typedef struct search {
    const tdm__an_opts *o;
    const tdm__an_scan *s;
    int64_t *value;
    int64_t *late;
    int64_t **hour_late; /* per ladder index: s->n_hours counts, or NULL */
    int n;
    int64_t allowed; /* the most late records that meet the target */
    int64_t counted;
    int replays;
    char *errbuf;
    size_t errbuf_size;
} search;

/* The ladder from 0 up to nice_up(@p top), ascending. */
static tdm_err ladder_make(search *sr, int64_t top)
{
    int cap = 128;
    top = tdm__analyze_nice_up(top);
    sr->value = malloc((size_t)cap * sizeof *sr->value);
    if (!sr->value)
        return TDM_ERR_NOMEM;
    /* Built downwards, then reversed. */
    for (int64_t v = top; v >= 0; v = tdm__analyze_nice_down(v)) {
        if (sr->n == cap) {
            int64_t *nv = realloc(sr->value, (size_t)(2 * cap) * sizeof *nv);
            if (!nv)
                return TDM_ERR_NOMEM;
            sr->value = nv;
            cap *= 2;
        }
        sr->value[sr->n++] = v;
    }
    for (int i = 0; i < sr->n / 2; i++) {
        int64_t t = sr->value[i];
        sr->value[i] = sr->value[sr->n - 1 - i];
        sr->value[sr->n - 1 - i] = t;
    }
    sr->late = malloc((size_t)sr->n * sizeof *sr->late);
    if (!sr->late)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < sr->n; i++)
        sr->late[i] = -1;
    sr->hour_late = calloc((size_t)sr->n, sizeof *sr->hour_late);
    return sr->hour_late ? TDM_OK : TDM_ERR_NOMEM;
}

/* Frees what a search holds. */
static void search_free(search *sr)
{
    for (int i = 0; sr->hour_late && i < sr->n; i++)
        free(sr->hour_late[i]);
    free(sr->hour_late);
    free(sr->value);
    free(sr->late);
}

/* The late count of ladder value @p i, replayed once (counting per hour
 * too). */
static tdm_err probe(search *sr, int i, int64_t *late)
{
    if (sr->late[i] < 0) {
        tdm__an_cand c;
        memset(&c, 0, sizeof c);
        c.bound = sr->value[i];
        if (sr->s->n_hours > 0) {
            c.hour_late = calloc((size_t)sr->s->n_hours, sizeof *c.hour_late);
            if (!c.hour_late)
                return TDM_ERR_NOMEM;
        }
        sr->hour_late[i] = c.hour_late;
        tdm_err err =
            tdm__analyze_replay(sr->o, sr->s, &c, sr->errbuf, sr->errbuf_size);
        if (err != TDM_OK)
            return err;
        sr->replays++;
        sr->late[i] = tdm__analyze_late(&c);
        sr->counted = tdm__analyze_counted(&c);
    }
    *late = sr->late[i];
    return TDM_OK;
}

/* Bisection for the first ladder index meeting the target (the top when
 * none does), then the step-down check.  *at is the answer. */
static tdm_err bisect(search *sr, int *at)
{
    int lo = 0, hi = sr->n - 1;
    int64_t late;
    tdm_err err = TDM_OK;
    while (lo < hi && err == TDM_OK) {
        int mid = lo + (hi - lo) / 2;
        err = probe(sr, mid, &late);
        if (late <= sr->allowed)
            hi = mid;
        else
            lo = mid + 1;
    }
    /* The value below is replayed; if it meets the target too (the
     * count was not monotonic there), step down. */
    while (err == TDM_OK && lo > 0) {
        err = probe(sr, lo - 1, &late);
        if (err != TDM_OK || late > sr->allowed)
            break;
        lo--;
    }
    if (err == TDM_OK)
        err = probe(sr, lo, &late);
    *at = lo;
    return err;
}

/* The most late records @p counted may hold for target @p t. */
static int64_t allowed_of(double t, int64_t counted)
{
    return (int64_t)floor(t * (double)counted + 1e-9);
}

static tdm_err hours_by_replay(search *sr, tdm__an_scan *s, tdm__an_reco *r,
                               int at);

/* The bound by replays (see the file comment), then each hour's. */
static tdm_err by_replay(const tdm__an_opts *o, tdm__an_scan *s,
                         tdm__an_reco *r, char *errbuf, size_t errbuf_size)
{
    search sr = {.o = o, .s = s, .errbuf = errbuf, .errbuf_size = errbuf_size};
    int at = 0;
    int64_t counted = s->sample.n;
    for (int64_t k = 0; k < s->sample.n; k++)
        counted -= (s->sample.guarded[k] & TDM__AN_SUSPECT) != 0;
    sr.allowed = allowed_of(r->target, counted);
    tdm_err err = ladder_make(&sr, s->lag.n ? s->lag.max : 0);
    if (err == TDM_OK)
        err = bisect(&sr, &at);
    if (err == TDM_OK) {
        r->checked = true;
        r->bound = sr.value[at];
        r->late = sr.late[at];
        r->counted = sr.counted;
        r->below = at > 0 ? sr.value[at - 1] : -1;
        r->below_late = at > 0 ? sr.late[at - 1] : -1;
        r->replays = sr.replays;
        err = hours_by_replay(&sr, s, r, at);
    }
    search_free(&sr);
    return err;
}

/* Allowed lateness on top of r->bound covering the tail. */
static void tail_cover(const tdm__an_scan *s, tdm__an_reco *r)
{
    if (s->lag.n == 0)
        return;
    int64_t q = tdm__analyze_nice_up(tdm__cli_hist_quantile(&s->lag, 0.9999));
    int64_t m = tdm__analyze_nice_up(s->lag.max);
    int64_t cover = q;
    if (m <= MAX_COVER_FACTOR * (q > 0 ? q : 1)) {
        cover = m;
        r->lateness_max = true;
    }
    r->lateness = cover > r->bound ? cover - r->bound : 0;
}

/* Picks the recommended bound and lateness (see analyze.h). */
tdm_err tdm__analyze_target(const tdm__an_opts *o, tdm__an_scan *s,
                            tdm__an_reco *r, char *errbuf, size_t errbuf_size)
{
    r->target = o->target;
    r->late = -1;
    r->below = -1;
    r->below_late = -1;
    if (o->sample > 0 && s->sample.n > 0) {
        tdm_err err = by_replay(o, s, r, errbuf, errbuf_size);
        if (err != TDM_OK)
            return err;
    } else if (s->lag.n > 0) {
        r->bound = tdm__analyze_bound_of(&s->lag, o->target);
    }
    tail_cover(s, r);
    return TDM_OK;
}

/* ---- Per hour (rule live_bound) ---- */

/* The per-hour search over the recommendation's ladder and replays:
 * each hour's records and allowed late count, and the ladder index of
 * its histogram bound. */
typedef struct hsearch {
    search *sr;
    tdm__an_scan *s;
    int64_t *counted; /* per hour: its records in the sample */
    int64_t *allowed; /* per hour: the most late ones meeting the target */
    int *upper_at;    /* per hour: ladder index of its histogram bound */
    int replays;      /* replays this search added */
    bool capped;      /* an hour was left unsettled at HOUR_REPLAYS_MAX */
} hsearch;

/* The ladder index of value @p v (on the ladder), or of the first above
 * it (the top when none is). */
static int ladder_at(const search *sr, int64_t v)
{
    int lo = 0, hi = sr->n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (sr->value[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The per-hour late counts of ladder value @p i, replayed once. */
static tdm_err hprobe(hsearch *hs, int i, const int64_t **out)
{
    int64_t late;
    int before = hs->sr->replays;
    tdm_err err = probe(hs->sr, i, &late);
    hs->replays += hs->sr->replays - before;
    *out = hs->sr->hour_late[i];
    return err;
}

/* Settles hours @p hrs (@p n of them), each of whose answers lies in
 * ladder indexes [lo, hi] and meets its target at hi or at its own
 * histogram bound: bisection shared by the hours (a replay serves every
 * hour whose interval holds it), then each hour's bound. */
static tdm_err hsolve(hsearch *hs, int *hrs, int n, int lo, int hi)
{
    if (n == 0)
        return TDM_OK;
    int mid = lo + (hi - lo) / 2;
    bool need = false;
    for (int k = 0; k < n; k++)
        need |= hs->upper_at[hrs[k]] > mid;
    if (lo < hi && need && hs->replays >= HOUR_REPLAYS_MAX)
        hs->capped = true;
    if (lo >= hi || (need && hs->replays >= HOUR_REPLAYS_MAX)) {
        for (int k = 0; k < n; k++) {
            int up = hs->upper_at[hrs[k]];
            hs->s->hours[hrs[k]].bound = hs->sr->value[hi < up ? hi : up];
        }
        return TDM_OK;
    }
    const int64_t *late = NULL;
    if (need) {
        tdm_err err = hprobe(hs, mid, &late);
        if (err != TDM_OK)
            return err;
    }
    /* The hours meeting their target at mid first, the others after. */
    int left = 0;
    for (int k = 0; k < n; k++) {
        int h = hrs[k];
        if (hs->upper_at[h] <= mid || late[h] <= hs->allowed[h]) {
            hrs[k] = hrs[left];
            hrs[left++] = h;
        }
    }
    tdm_err err = hsolve(hs, hrs, left, lo, mid);
    if (err == TDM_OK)
        err = hsolve(hs, hrs + left, n - left, mid + 1, hi);
    return err;
}

/* Per hour: the sample's records (not in another unit, not guarded) in
 * each hour, into @p counted (s->n_hours). */
static void hour_counts(const tdm__an_scan *s, int64_t *counted)
{
    const tdm__an_sample *sm = &s->sample;
    for (int64_t k = 0; k < sm->n; k++) {
        if (sm->guarded[k] & (TDM__AN_GUARDED | TDM__AN_SUSPECT))
            continue;
        int h = tdm__analyze_hour_index(s, sm->ts[k]);
        if (h >= 0)
            counted[h]++;
    }
}

/* The hours the sample holds entirely, split by their late count at the
 * recommended bound (ladder index @p at), both groups settled. */
static tdm_err hsearch_run(hsearch *hs, int at, int *hrs)
{
    tdm__an_scan *s = hs->s;
    const int64_t *late = hs->sr->hour_late[at]; /* replayed by bisect */
    int n = 0, top = at;
    for (int k = 0; k < s->n_hours; k++) {
        tdm__an_hour *hr = &s->hours[k];
        if (hs->counted[k] != (int64_t)hr->lag.n)
            continue; /* only an hour whose every record was replayed */
        hr->checked = true;
        hr->late = late[k];
        hs->allowed[k] = allowed_of(hs->sr->o->target, hs->counted[k]);
        hs->upper_at[k] = ladder_at(hs->sr, hr->upper);
        if (hs->upper_at[k] > top)
            top = hs->upper_at[k];
        hrs[n++] = k;
    }
    /* Meeting the target at the recommended bound first. */
    int left = 0;
    for (int k = 0; k < n; k++) {
        int h = hrs[k];
        if (late[h] <= hs->allowed[h]) {
            hrs[k] = hrs[left];
            hrs[left++] = h;
        }
    }
    tdm_err err = hsolve(hs, hrs, left, 0, at);
    if (err == TDM_OK)
        err =
            hsolve(hs, hrs + left, n - left, at + 1 < top ? at + 1 : top, top);
    return err;
}

/* Each hour's bound by replays (see the file comment), then the rule. */
static tdm_err hours_by_replay(search *sr, tdm__an_scan *s, tdm__an_reco *r,
                               int at)
{
    /* One hour has nothing to compare (no table, no rule). */
    if (s->n_hours < 2 || !sr->hour_late[at])
        return TDM_OK;
    hsearch hs = {.sr = sr, .s = s};
    size_t n = (size_t)s->n_hours;
    int *hrs = malloc(n * sizeof *hrs);
    hs.counted = calloc(n, sizeof *hs.counted);
    hs.allowed = calloc(n, sizeof *hs.allowed);
    hs.upper_at = calloc(n, sizeof *hs.upper_at);
    tdm_err err = TDM_ERR_NOMEM;
    if (hrs && hs.counted && hs.allowed && hs.upper_at) {
        hour_counts(s, hs.counted);
        err = hsearch_run(&hs, at, hrs);
    }
    if (err == TDM_OK) {
        r->hour_replays = hs.replays;
        r->hours_capped = hs.capped;
        tdm__analyze_live_rule(s, r);
    }
    free(hrs);
    free(hs.counted);
    free(hs.allowed);
    free(hs.upper_at);
    return err;
}
