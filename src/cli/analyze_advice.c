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
 * plus, with --job, the `tidemark run --set` line that tries it, and the
 * `tidemark set` line that applies the bound to a running job.
 *
 * Then the bound per hour of event time and the verdict of rule
 * live_bound (analyze_reco.c): when the hours need bounds far apart, the
 * `tidemark set` lines that make the bound follow them - one at each
 * hour the rule compares whose bound differs from the one before it.
 */
#include <inttypes.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"

/* The late output sink's name in the snippet when the job has none. */
#define LATE_SINK "late"
/* Placeholders of `tidemark set` lines: the server of `tidemark run
 * --http ADDR`, and the source without --job (the snippet's too). */
#define SET_URL "http://HOST:PORT"
#define SET_SOURCE "SOURCE"
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

/* The `tidemark set` line for a bound (see analyze.h). */
const char *tdm__analyze_set_cmd(const tdm__an_opts *o, tdm_time_ms bound_ms,
                                 char *buf, size_t n)
{
    char d[32];
    snprintf(buf, n,
             "tidemark set " SET_URL
             " sources.%s.watermark.max_out_of_orderness=%s",
             o->job_source ? o->job_source : SET_SOURCE,
             jobdur(bound_ms, d, sizeof d));
    return buf;
}

/* The bound on a running job: the `tidemark set` line, with what its
 * placeholders stand for. */
static void text_live(FILE *f, const tdm__an_opts *o, const tdm__an_reco *r)
{
    char cmd[512];
    const char *st = o->job_strategy;
    fprintf(f, "  On a running job (tidemark run JOB --http ADDR), live:\n");
    fprintf(f, "    %s\n", tdm__analyze_set_cmd(o, r->bound, cmd, sizeof cmd));
    if (!o->job_source)
        fprintf(f, "    (HOST:PORT: its --http address; " SET_SOURCE
                   ": the name of its source node)\n");
    else if (st && strcmp(st, "bounded") != 0 && strcmp(st, "punctuated") != 0)
        fprintf(f,
                "    (source %s uses watermark.strategy %s: a running job "
                "keeps its strategy,\n    so set strategy: bounded in the "
                "job file first)\n",
                o->job_source, st);
}

/* The snippet to paste, and with --job the command that tries it. */
static void text_snippet(FILE *f, const tdm__an_opts *o, const tdm__an_reco *r)
{
    char a[32], b[32];
    const char *src = o->job_source ? o->job_source : SET_SOURCE;
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
    text_live(f, o, r);
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

/* ---- By hour: rule live_bound ---- */

/* An hour's start as "2026-01-01T05:00:00Z". */
static const char *hour_text(tdm_time_ms t, char *buf, size_t n)
{
    return tdm__cli_time(t, 0, "-", "-", buf, n);
}

/* True when hour @p k starts a new bound of the schedule: the first
 * hour the rule compares, or one whose bound differs from the one
 * before it; *cur follows the bound in force. */
static bool schedule_at(const tdm__an_scan *s, int k, tdm_time_ms *cur)
{
    const tdm__an_hour *hr = &s->hours[k];
    if (!hr->ruled || hr->bound == *cur)
        return false;
    *cur = hr->bound;
    return true;
}

/* The verdict of rule live_bound. */
static void text_verdict(FILE *f, const tdm__an_scan *s, const tdm__an_reco *r)
{
    char a[32], b[32], c[32], d[32], e[32];
    if (r->hours_judged < 2) {
        fprintf(f, "  live_bound: not judged (fewer than 2 hours with 100 "
                   "records or more)\n");
        return;
    }
    const tdm__an_hour *lo = &s->hours[r->calm], *hi = &s->hours[r->busy];
    if (!r->live_worth) {
        fprintf(f,
                "  live_bound: one static bound suffices - the hours need "
                "%s .. %s (a live bound\n  pays when the busiest hour needs "
                "2x the calmest and 1s more)\n",
                jobdur(lo->bound, a, sizeof a), jobdur(hi->bound, b, sizeof b));
        return;
    }
    fprintf(f,
            "  live_bound: a live bound is worth it - the busiest hour (%s)\n"
            "  needs %s, the calmest (%s) %s: one static bound either misses "
            "the\n  target in the busy hours or delays the calm hours' results "
            "by up to %s.\n",
            hour_text(hi->start, a, sizeof a), jobdur(hi->bound, b, sizeof b),
            hour_text(lo->start, c, sizeof c), jobdur(lo->bound, d, sizeof d),
            dur(hi->bound - lo->bound, e, sizeof e));
}

/* The `tidemark set` lines that make the bound follow the hours. */
static void text_schedule(FILE *f, const tdm__an_opts *o, const tdm__an_scan *s)
{
    char a[32], cmd[512];
    tdm_time_ms cur = -1;
    fprintf(f, "  On the running job, at the start of each hour whose bound "
               "changes (a raise holds\n  the watermark until the data "
               "passes it: apply raises a little early):\n");
    for (int k = 0; k < s->n_hours; k++)
        if (schedule_at(s, k, &cur))
            fprintf(f, "    at %s  %s\n",
                    hour_text(s->hours[k].start, a, sizeof a),
                    tdm__analyze_set_cmd(o, cur, cmd, sizeof cmd));
}

/* The bound per hour and rule live_bound, when the input spans 2 hours
 * or more. */
static void text_hours(FILE *f, const tdm__an_opts *o, const tdm__an_scan *s,
                       const tdm__an_reco *r)
{
    char a[32], b[32], c[32], d[48], e[32];
    if (!r->hourly)
        return;
    jobdur(r->bound, e, sizeof e);
    fprintf(f, "\nBy hour of event time (UTC): the bound that meets the target "
               "within each hour\n");
    if (r->checked)
        fprintf(f,
                "(the smallest whose late count in the hour meets it, "
                "replayed like the\nrecommendation's; the P%.4g of the hour's "
                "lag rounded up where the sample\ndoes not hold the hour; "
                "rule live_bound)\n",
                100 * (1 - o->target));
    else
        fprintf(f,
                "(the P%.4g of the hour's lag rounded up: lag histogram, not "
                "replayed; rule\nlive_bound)\n",
                100 * (1 - o->target));
    /* The late share at the recommended bound, with replays only. */
    int w = r->checked ? 16 : 0;
    snprintf(d, sizeof d, "late at %s", e);
    fprintf(f, "  %-20s %10s %*s%s%10s\n", "hour", "records", w,
            r->checked ? d : "", r->checked ? " " : "", "bound");
    for (int k = 0; k < s->n_hours; k++) {
        const tdm__an_hour *hr = &s->hours[k];
        fprintf(f, "  %-20s %10s %*s%s%10s%s\n",
                hour_text(hr->start, a, sizeof a),
                num((int64_t)hr->lag.n, b, sizeof b), w,
                hr->checked  ? share(hr->late, (int64_t)hr->lag.n, d, sizeof d)
                : r->checked ? "-"
                             : "",
                r->checked ? " " : "", jobdur(hr->bound, c, sizeof c),
                !hr->judged ? "  (too few records to judge)"
                : hr->ruled ? ""
                            : "  (past the sample: left out)");
    }
    if (s->hours_untabled > 0)
        fprintf(f,
                "  (%s records of hours after the first %d are not in the "
                "table)\n",
                num(s->hours_untabled, a, sizeof a), TDM__AN_HOURS);
    if (r->hours_capped)
        fprintf(f,
                "  (the search stopped after %d replays: some hours keep a "
                "larger bound that\n  meets the target)\n",
                r->hour_replays);
    text_verdict(f, s, r);
    if (r->live_worth)
        text_schedule(f, o, s);
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
    text_hours(f, o, s, r);
}

/* The job's current bound in the JSON report. */
static void json_job(FILE *f, const tdm__an_opts *o, const tdm__an_cand *jc)
{
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

/* The bound per hour, rule live_bound and its schedule in the JSON. */
static void json_live(FILE *f, const tdm__an_opts *o, const tdm__an_scan *s,
                      const tdm__an_reco *r)
{
    char cmd[512];
    bool judged = r->hourly && r->hours_judged >= 2;
    fprintf(f,
            ",\n    \"live\": {\"rule\": \"live_bound\", \"quantile\": "
            "%.6g, \"hours\": [",
            1 - o->target);
    for (int k = 0; k < s->n_hours; k++) {
        const tdm__an_hour *hr = &s->hours[k];
        fprintf(f,
                "%s\n      {\"start\": %" PRId64 ", \"records\": %" PRIu64
                ", \"upper_ms\": %" PRId64 ", \"late_at_recommended\": ",
                k ? "," : "", hr->start, hr->lag.n, hr->upper);
        if (hr->checked)
            fprintf(f, "%" PRId64, hr->late);
        else
            fputs("null", f);
        fprintf(f,
                ", \"bound_ms\": %" PRId64 ", \"judged\": %s, \"ruled\": %s}",
                hr->bound, hr->judged ? "true" : "false",
                hr->ruled ? "true" : "false");
    }
    fprintf(f, "%s], \"hours_untabled\": %" PRId64 ", \"calm_ms\": ",
            s->n_hours ? "\n    " : "", s->hours_untabled);
    if (judged)
        fprintf(f, "%" PRId64 ", \"busy_ms\": %" PRId64 ", \"worth_it\": %s",
                s->hours[r->calm].bound, s->hours[r->busy].bound,
                r->live_worth ? "true" : "false");
    else
        fputs("null, \"busy_ms\": null, \"worth_it\": null", f);
    fprintf(f,
            ", \"basis\": \"%s\", \"replays\": %d, \"capped\": %s, "
            "\"source\": ",
            r->by_replay ? "replays" : "lag_histogram", r->hour_replays,
            r->hours_capped ? "true" : "false");
    tdm__analyze_json_str(f, o->job_source ? o->job_source : SET_SOURCE);
    fputs(", \"schedule\": [", f);
    tdm_time_ms cur = -1;
    int n = 0;
    for (int k = 0; r->live_worth && k < s->n_hours; k++) {
        if (!schedule_at(s, k, &cur))
            continue;
        fprintf(f,
                "%s\n      {\"from\": %" PRId64 ", \"bound_ms\": %" PRId64
                ", \"command\": ",
                n++ ? "," : "", s->hours[k].start, cur);
        tdm__analyze_json_str(f, tdm__analyze_set_cmd(o, cur, cmd, sizeof cmd));
        fputc('}', f);
    }
    fprintf(f, "%s]}", n ? "\n    " : "");
}

/* The recommendation in the JSON report. */
void tdm__analyze_advice_json(FILE *f, const tdm__an_opts *o,
                              const tdm__an_scan *s, const tdm__an_reco *r,
                              const tdm__an_cand *cands, int n)
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
    fprintf(f, ", \"late_output_sink\": \"%s\", \"set_command\": ",
            o->job_late_output ? o->job_late_output : LATE_SINK);
    char cmd[512];
    tdm__analyze_json_str(f,
                          tdm__analyze_set_cmd(o, r->bound, cmd, sizeof cmd));
    fputc('}', f);
    if (o->job_file && o->job_has_bound)
        json_job(f, o, jc);
    json_live(f, o, s, r);
}
