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
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"

/* The max is covered by the lateness when at most this many times the
 * P99.99 cover. */
#define MAX_COVER_FACTOR 2

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
 * value replayed so far (-1: not yet). */
typedef struct search {
    const tdm__an_opts *o;
    const tdm__an_scan *s;
    int64_t *value;
    int64_t *late;
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
    return TDM_OK;
}

/* The late count of ladder value @p i, replayed once. */
static tdm_err probe(search *sr, int i, int64_t *late)
{
    if (sr->late[i] < 0) {
        tdm__an_cand c;
        memset(&c, 0, sizeof c);
        c.bound = sr->value[i];
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

/* The bound by replays (see the file comment). */
static tdm_err by_replay(const tdm__an_opts *o, const tdm__an_scan *s,
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
    }
    free(sr.value);
    free(sr.late);
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
tdm_err tdm__analyze_target(const tdm__an_opts *o, const tdm__an_scan *s,
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
        r->bound = tdm__analyze_nice_up(
            tdm__cli_hist_quantile(&s->lag, 1 - o->target));
    }
    tail_cover(s, r);
    return TDM_OK;
}
