/* SPDX-License-Identifier: MIT */
/* analyze_advice.c - the recommendation in words and in the job's own
 * syntax: the three settings that go together, as the seeds teach them,
 *
 *   watermark.max_out_of_orderness   the bound at the chosen percentile:
 *                                    the smallest nice value whose exact
 *                                    late fraction meets --target
 *                                    (analyze_target.c);
 *   allowed_lateness                 on top of it, covering the tail:
 *                                    late records within it refire their
 *                                    window instead of being lost;
 *   late_output                      a sink for the rest, so that nothing
 *                                    is dropped silently,
 *
 * with the measured consequence of each (late counts from replays, the
 * rest from the what-if row of exactly this combination), the job's
 * current bound measured the same way when --job gave one, and a snippet
 * to paste into the job file (key names as docs/job-format.md has them)
 * plus, with --job, the `tidemark run --set` line that tries it.
 */
#include <inttypes.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"

/* The late output sink's name in the snippet when the job has none. */
#define LATE_SINK "late"
/* The column the explanations start at. */
#define COL 44

static const char *dur(int64_t ms, char *buf, size_t n)
{
    return tdm__analyze_fmt_dur(ms, buf, n);
}

/* A duration in the job's syntax ("0" for nothing). */
static const char *jobdur(int64_t ms, char *buf, size_t n)
{
    if (ms == 0)
        snprintf(buf, n, "0");
    else
        tdm_duration_format(ms, buf, n);
    return buf;
}

/* "  key: value" padded to the explanation column. */
static void setting(FILE *f, const char *key, const char *value)
{
    int w = fprintf(f, "  %s: %s", key, value);
    fprintf(f, "%*s", w < COL ? COL - w : 1, "");
}

/* A count (>= 0) with thousands separators. */
static const char *num(int64_t v, char *buf, size_t n)
{
    char tmp[32];
    size_t len = (size_t)snprintf(tmp, sizeof tmp, "%" PRId64, v), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

/* "1.23%" of @p a in @p b, with at least two significant digits. */
static const char *share(int64_t a, int64_t b, char *buf, size_t n)
{
    double p = b > 0 ? 100.0 * (double)a / (double)b : 0;
    if (a == 0)
        snprintf(buf, n, "0%%");
    else if (p < 0.01)
        snprintf(buf, n, "%.2g%%", p);
    else
        snprintf(buf, n, "%.2f%%", p);
    return buf;
}

/* The candidate with @p role, NULL when none. */
static const tdm__an_cand *with_role(const tdm__an_cand *c, int n,
                                     unsigned role)
{
    for (int i = 0; i < n; i++)
        if (c[i].role & role)
            return &c[i];
    return NULL;
}

/* "your job has ..." with --job and a bounded source. */
static void text_job(FILE *f, const tdm__an_opts *o, const tdm__an_cand *jc)
{
    char a[32], b[32], c[32];
    if (!o->job_file || !o->job_has_bound)
        return;
    fprintf(f, "  Your job (%s, source %s) has max_out_of_orderness %s",
            o->job_file, o->job_source, jobdur(o->job_bound, a, sizeof a));
    if (o->job_window)
        fprintf(f, " and allowed_lateness %s",
                jobdur(o->job_lateness, b, sizeof b));
    if (!jc) {
        fprintf(f, " (not replayed: --sample 0)\n");
        return;
    }
    char d[32], e[32];
    fprintf(f,
            ";\n  at that bound %s of records are late (%s of %s), %s go to "
            "the late output.\n",
            share(tdm__analyze_late(jc), tdm__analyze_counted(jc), c, sizeof c),
            num(tdm__analyze_late(jc), d, sizeof d),
            num(tdm__analyze_counted(jc), e, sizeof e),
            share(jc->late_output - jc->suspects_late, tdm__analyze_counted(jc),
                  a, sizeof a));
}

/* The bound line: its late count and the next smaller value's. */
static void text_bound(FILE *f, const tdm__an_reco *r)
{
    char a[32], b[32], c[32], d[32];
    setting(f, "watermark.max_out_of_orderness", jobdur(r->bound, a, sizeof a));
    if (!r->checked) {
        fprintf(f,
                "the P%.4g of the lag rounded up (not replayed:\n%*sat "
                "most this share of records is behind the watermark)\n",
                100 * (1 - r->target), COL, "");
        return;
    }
    fprintf(f, "%s of records late (%s of %s, exact)",
            share(r->late, r->counted, b, sizeof b), num(r->late, c, sizeof c),
            num(r->counted, d, sizeof d));
    if (r->below >= 0)
        fprintf(f, ";\n%*s%s would make %s late (%s)", COL, "",
                dur(r->below, a, sizeof a),
                share(r->below_late, r->counted, b, sizeof b),
                num(r->below_late, c, sizeof c));
    fprintf(f, "\n");
}

/* The lateness and late-output lines. */
static void text_tail(FILE *f, const tdm__an_opts *o, const tdm__an_reco *r,
                      const tdm__an_cand *rc)
{
    char a[32], b[32], c[32], d[32];
    setting(f, "allowed_lateness", jobdur(r->lateness, a, sizeof a));
    fprintf(f,
            "records up to %s behind (the %s) are\n%*saccepted late: "
            "they refire their window\n",
            dur(r->bound + r->lateness, b, sizeof b),
            r->lateness_max ? "max" : "P99.99", COL, "");
    setting(f, "late_output",
            o->job_late_output ? o->job_late_output : LATE_SINK);
    if (rc)
        fprintf(f, "the rest: %s of records (%s; what-if row *)\n",
                share(rc->late_output - rc->suspects_late,
                      tdm__analyze_counted(rc), c, sizeof c),
                num(rc->late_output - rc->suspects_late, d, sizeof d));
    else
        fprintf(f, "the rest: records more than %s behind\n",
                dur(r->bound + r->lateness, c, sizeof c));
}

/* The snippet to paste, and with --job the command that tries it. */
static void text_snippet(FILE *f, const tdm__an_opts *o, const tdm__an_reco *r)
{
    char a[32], b[32];
    const char *src = o->job_source ? o->job_source : "SOURCE";
    const char *win = o->job_window ? o->job_window : "WINDOW";
    const char *sink = o->job_late_output ? o->job_late_output : LATE_SINK;
    jobdur(r->bound, a, sizeof a);
    jobdur(r->lateness, b, sizeof b);
    fprintf(f, "  In the job file:\n");
    fprintf(f,
            "    sources:\n      %s:\n        watermark: {strategy: "
            "bounded, max_out_of_orderness: %s}\n",
            src, a);
    fprintf(f,
            "    windows:\n      %s:\n        allowed_lateness: %s\n"
            "        late_output: %s\n",
            win, b, sink);
    if (!o->job_late_output)
        fprintf(f, "    sinks:\n      %s: {type: file, path: %s.jsonl}\n", sink,
                sink);
    if (!o->job_file || !o->job_window)
        return;
    fprintf(f,
            "  Try it: tidemark run %s --set "
            "sources.%s.watermark.max_out_of_orderness=%s --set "
            "windows.%s.allowed_lateness=%s%s%s\n",
            o->job_file, src, a, win, b,
            o->job_late_output ? "" : "  (after adding the sink ",
            o->job_late_output ? "" : LATE_SINK ")");
}

/* The recommendation in words (see the file comment). */
void tdm__analyze_advice_text(FILE *f, const tdm__an_opts *o,
                              const tdm__an_scan *s, const tdm__an_reco *r,
                              const tdm__an_cand *cands, int n)
{
    char a[32];
    if (s->lag.n == 0)
        return;
    fprintf(f,
            "\nRecommendation (target: at most %s of records late, "
            "window %s%s%s)\n",
            share((int64_t)(r->target * 1e6 + 0.5), 1000000, a, sizeof a),
            o->window_text, o->key_fields ? ", key " : "",
            o->key_fields ? o->key_fields : "");
    text_job(f, o, with_role(cands, n, TDM__AN_ROLE_JOB));
    text_bound(f, r);
    text_tail(f, o, r, with_role(cands, n, TDM__AN_ROLE_RECO));
    text_snippet(f, o, r);
}

/* The recommendation in the JSON report. */
void tdm__analyze_advice_json(FILE *f, const tdm__an_opts *o,
                              const tdm__an_reco *r, const tdm__an_cand *cands,
                              int n)
{
    const tdm__an_cand *rc = with_role(cands, n, TDM__AN_ROLE_RECO);
    const tdm__an_cand *jc = with_role(cands, n, TDM__AN_ROLE_JOB);
    fprintf(f,
            "    \"recommended\": {\"target\": %.6g, \"checked\": %s, "
            "\"bound_ms\": %" PRId64 ", \"late\": %" PRId64
            ", \"counted\": %" PRId64 ", \"below_ms\": %" PRId64
            ", \"below_late\": %" PRId64 ", \"replays\": %d, "
            "\"lateness_ms\": %" PRId64 ", \"lateness_covers\": \"%s\", "
            "\"late_output\": ",
            r->target, r->checked ? "true" : "false", r->bound, r->late,
            r->counted, r->below, r->below_late, r->replays, r->lateness,
            r->lateness_max ? "max" : "p99.99");
    if (rc)
        fprintf(f, "%" PRId64, rc->late_output - rc->suspects_late);
    else
        fputs("null", f);
    fprintf(f, ", \"late_output_sink\": \"%s\"}",
            o->job_late_output ? o->job_late_output : LATE_SINK);
    if (!o->job_file || !o->job_has_bound)
        return;
    fprintf(f,
            ",\n    \"job\": {\"bound_ms\": %" PRId64
            ", \"lateness_ms\": %" PRId64 ", \"late\": ",
            o->job_bound, o->job_lateness);
    if (jc)
        fprintf(f, "%" PRId64 ", \"counted\": %" PRId64 "}",
                tdm__analyze_late(jc), tdm__analyze_counted(jc));
    else
        fputs("null, \"counted\": null}", f);
}
