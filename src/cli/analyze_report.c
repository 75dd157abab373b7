/* SPDX-License-Identifier: MIT */
/* analyze_report.c - what `tidemark analyze` prints: a terminal report
 * (aligned tables, durations like "1.2s", percentages) or one JSON
 * document whose schema docs/analyze.md describes.  In the JSON, every
 * what-if candidate is one line, so shell scripts can pick it apart
 * with sed.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"

/* Partitions shown in the terminal table (JSON has them all). */
#define MAX_TEXT_PARTS 20

/* ---- Formatting ---- */

/* Formats a duration for people (see analyze.h). */
const char *tdm__analyze_fmt_dur(int64_t ms, char *buf, size_t n)
{
    const char *sign = ms < 0 ? "-" : "";
    uint64_t a = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    if (a < 1000) {
        snprintf(buf, n, "%s%" PRIu64 "ms", sign, a);
    } else if (a < 60000) {
        /* Tenths of a second, rounded, without a trailing ".0". */
        uint64_t t = (a + 50) / 100;
        if (t % 10 == 0 || t >= 600)
            snprintf(buf, n, "%s%" PRIu64 "s", sign, t / 10);
        else
            snprintf(buf, n, "%s%" PRIu64 ".%" PRIu64 "s", sign, t / 10,
                     t % 10);
    } else if (a < 3600000) {
        uint64_t s = (a + 500) / 1000;
        if (s % 60 == 0)
            snprintf(buf, n, "%s%" PRIu64 "m", sign, s / 60);
        else
            snprintf(buf, n, "%s%" PRIu64 "m%02" PRIu64 "s", sign, s / 60,
                     s % 60);
    } else if (a < 86400000) {
        uint64_t m = (a + 30000) / 60000;
        if (m % 60 == 0)
            snprintf(buf, n, "%s%" PRIu64 "h", sign, m / 60);
        else
            snprintf(buf, n, "%s%" PRIu64 "h%02" PRIu64 "m", sign, m / 60,
                     m % 60);
    } else {
        uint64_t h = (a + 1800000) / 3600000;
        if (h % 24 == 0)
            snprintf(buf, n, "%s%" PRIu64 "d", sign, h / 24);
        else
            snprintf(buf, n, "%s%" PRIu64 "d%" PRIu64 "h", sign, h / 24,
                     h % 24);
    }
    return buf;
}

static const char *dur(int64_t ms, char *buf, size_t n)
{
    return tdm__analyze_fmt_dur(ms, buf, n);
}

/* A fraction as a percentage: "0%", "<0.01%", "12.34%". */
static const char *pct(double f, char *buf, size_t n)
{
    if (f <= 0)
        snprintf(buf, n, "0%%");
    else if (f < 0.0001)
        snprintf(buf, n, "<0.01%%");
    else if (f > 0.9999 && f < 1)
        snprintf(buf, n, ">99.99%%");
    else
        snprintf(buf, n, "%.2f%%", 100 * f);
    return buf;
}

/* A count with thousands separators. */
static const char *num(int64_t v, char *buf, size_t n)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%" PRId64, v < 0 ? -v : v);
    size_t len = strlen(tmp), o = 0;
    if (v < 0 && o + 1 < n)
        buf[o++] = '-';
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

/* Bytes as "512 B", "12.3 kB", "4.5 MB", "1.2 GB". */
static const char *bytes(int64_t v, char *buf, size_t n)
{
    if (v < 1000)
        snprintf(buf, n, "%" PRId64 " B", v);
    else if (v < 1000000)
        snprintf(buf, n, "%.1f kB", (double)v / 1e3);
    else if (v < 1000000000)
        snprintf(buf, n, "%.1f MB", (double)v / 1e6);
    else
        snprintf(buf, n, "%.1f GB", (double)v / 1e9);
    return buf;
}

static const char *iso(tdm_time_ms t, char *buf, size_t n)
{
    return tdm__cli_time(t, 0, "-", "-", buf, n);
}

static double frac(int64_t a, int64_t b)
{
    return b > 0 ? (double)a / (double)b : 0;
}

/* Records per second of event time over the input. */
static double input_rate(const tdm__an_scan *s)
{
    if (s->max_ts <= s->min_ts || s->max_ts == TDM_TIME_MIN)
        return 0;
    return (double)s->lag.n * 1000.0 / (double)(s->max_ts - s->min_ts);
}

/* ---- Text ---- */

/* One row of a quantile table: P50 ... max of histogram @p h. */
static void text_quantiles(FILE *f, const tdm__cli_hist *h)
{
    static const double qs[] = {0.5, 0.9, 0.99, 0.999, 0.9999};
    char b[32];
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        fprintf(f, " %8s",
                h && h->n ? dur(tdm__cli_hist_quantile(h, qs[i]), b, sizeof b)
                          : "-");
    fprintf(f, " %8s", h && h->n ? dur(h->max, b, sizeof b) : "-");
}

static void text_input(FILE *f, const tdm__an_opts *o, const tdm__an_scan *s)
{
    char a[48], b[48], c[32], d[32], e[32];
    fprintf(f,
            "tidemark analyze: %s records from %d %s (%s bad), "
            "%d partition%s%s%s\n",
            num(s->records, a, sizeof a), s->n_files,
            s->n_files == 1 ? "input" : "inputs", num(s->bad, b, sizeof b),
            s->n_parts, s->n_parts == 1 ? "" : "s",
            s->by_field ? " by field " : " (one per input)",
            s->by_field ? o->partition_field : "");
    if (s->lag.n > 0)
        fprintf(f,
                "  event time %s .. %s (%s), %.4g records/s of event "
                "time\n",
                iso(s->min_ts, a, sizeof a), iso(s->max_ts, b, sizeof b),
                dur(s->max_ts - s->min_ts, c, sizeof c), input_rate(s));
    if (s->guarded > 0)
        fprintf(f,
                "  %s records more than %s ahead of now left out "
                "(timestamp guard)\n",
                num(s->guarded, d, sizeof d), dur(o->guard, e, sizeof e));
    if (s->suspects > 0)
        fprintf(f,
                "  %s records in another unit left out of the "
                "measurements (see the warnings)\n",
                num(s->suspects, d, sizeof d));
    fprintf(f, "  timestamp field %s (unit %s)%s%s\n", o->ts_field,
            tdm_ts_unit_name((tdm_ts_unit)o->unit),
            o->arrival_field ? ", arrival field " : "",
            o->arrival_field ? o->arrival_field : "");
    if (o->job_file)
        fprintf(f, "  settings of source %s%s%s from %s\n", o->job_source,
                o->job_window ? " and window " : "",
                o->job_window ? o->job_window : "", o->job_file);
    for (int i = 0; i < o->n_notes; i++)
        fprintf(f, "  note: %s\n", o->notes[i]);
}

/* The partitions to show: all when few, else the ones with the largest
 * maximum lag, in input order. */
static void text_lag(FILE *f, const tdm__an_scan *s)
{
    char a[32], b[32], c[32];
    fprintf(f, "\nOut-of-orderness: how far each record is behind the "
               "highest timestamp already\nseen in its partition\n");
    fprintf(f, "  %-24s %11s %7s %8s %8s %8s %8s %8s %8s %10s\n", "partition",
            "records", "behind", "P50", "P90", "P99", "P99.9", "P99.99", "max",
            "max gap");
    fprintf(f, "  %-24s %11s %7s", "all", num((int64_t)s->lag.n, a, sizeof a),
            pct(frac(s->lag.n - (int64_t)s->lag.b[0], (int64_t)s->lag.n), b,
                sizeof b));
    text_quantiles(f, &s->lag);
    fprintf(f, " %10s\n", s->gaps.n ? dur(s->gaps.max, c, sizeof c) : "-");
    if (s->n_parts <= 1)
        return;
    int64_t cut = -1;
    if (s->n_parts > MAX_TEXT_PARTS) {
        /* The MAX_TEXT_PARTS-th largest max lag is the cut. */
        int64_t top[MAX_TEXT_PARTS];
        int nt = 0;
        for (int p = 0; p < s->n_parts; p++) {
            int64_t v = s->parts[p].max_lag;
            if (nt < MAX_TEXT_PARTS) {
                top[nt++] = v;
            } else {
                int mi = 0;
                for (int k = 1; k < nt; k++)
                    if (top[k] < top[mi])
                        mi = k;
                if (v > top[mi])
                    top[mi] = v;
            }
        }
        cut = top[0];
        for (int k = 1; k < nt; k++)
            if (top[k] < cut)
                cut = top[k];
    }
    int shown = 0;
    for (int p = 0; p < s->n_parts; p++) {
        const tdm__an_part *pt = &s->parts[p];
        if ((cut >= 0 && pt->max_lag < cut) || shown >= MAX_TEXT_PARTS)
            continue;
        shown++;
        char name[25];
        size_t l = strlen(pt->name);
        if (l > 24)
            snprintf(name, sizeof name, "...%s", pt->name + l - 21);
        else
            snprintf(name, sizeof name, "%s", pt->name);
        int64_t counted = pt->records - pt->guarded;
        fprintf(f, "  %-24s %11s %7s", name, num(pt->records, a, sizeof a),
                pct(frac(pt->out_of_order, counted), b, sizeof b));
        if (pt->lag) {
            text_quantiles(f, pt->lag);
        } else {
            for (int k = 0; k < 5; k++)
                fprintf(f, " %8s", "-");
            fprintf(f, " %8s", dur(pt->max_lag, c, sizeof c));
        }
        fprintf(f, " %10s%s\n", dur(pt->max_gap, c, sizeof c),
                pt->gap_at_end ? " (to end)" : "");
    }
    if (shown < s->n_parts)
        fprintf(f,
                "  ... %d more partitions (the table shows the %d with "
                "the largest max; --json lists all)\n",
                s->n_parts - shown, shown);
}

static void text_arrival(FILE *f, const tdm__an_scan *s)
{
    char a[32];
    if (!s->has_arrival)
        return;
    fprintf(f, "\nEvent-to-arrival delay (arrival - timestamp)\n");
    fprintf(f, "  %-24s %11s %7s %8s %8s %8s %8s %8s %8s\n", "", "records", "",
            "P50", "P90", "P99", "P99.9", "P99.99", "max");
    fprintf(f, "  %-24s %11s %7s", "all",
            num((int64_t)s->arrival.n, a, sizeof a), "");
    text_quantiles(f, &s->arrival);
    fprintf(f, "\n");
}

static void text_slices(FILE *f, const tdm__an_scan *s, const tdm__an_reco *r)
{
    char a[32], b[48], c[32], d[32], e[32];
    if (s->n_slices == 0)
        return;
    fprintf(f,
            "\nOver time: %d slices of %s records (a spike: P99 at least "
            "2 x the median P99 (%s) + 10ms)\n",
            s->n_slices, num(s->slice_len, a, sizeof a),
            dur(r->slice_p99_median, e, sizeof e));
    fprintf(f, "  %5s %12s  %-24s %8s %8s\n", "slice", "from record",
            "highest timestamp", "P99", "max");
    for (int k = 0; k < s->n_slices; k++) {
        const tdm__an_slice *sl = &s->slices[k];
        fprintf(f, "  %5d %12s  %-24s %8s %8s%s\n", k + 1,
                num(sl->first + 1, a, sizeof a), iso(sl->max_ts, b, sizeof b),
                sl->lag.n
                    ? dur(tdm__cli_hist_quantile(&sl->lag, 0.99), c, sizeof c)
                    : "-",
                sl->lag.n ? dur(sl->lag.max, d, sizeof d) : "-",
                sl->spike ? "  << spike" : "");
    }
}

static void text_reco(FILE *f, const tdm__an_opts *o, const tdm__an_scan *s,
                      const tdm__an_reco *r)
{
    char a[32], b[32], c[32], d[32];
    if (s->lag.n == 0)
        return;
    fprintf(f, "\nMore settings (from the lag histogram: what MAY be behind "
               "the watermark)\n");
    tdm_duration_format(r->bound99, a, sizeof a);
    fprintf(f,
            "  watermark.max_out_of_orderness: %-8s P99 completeness: at "
            "most %s of records arrive behind the watermark\n",
            r->bound99 ? a : "0", pct(r->behind99, b, sizeof b));
    tdm_duration_format(r->bound999, a, sizeof a);
    fprintf(f,
            "  %31s %-8s P99.9 completeness: at most %s; results come "
            "%s later\n",
            "", r->bound999 ? a : "0", pct(r->behind999, b, sizeof b),
            dur(r->bound999 - r->bound99, c, sizeof c));
    tdm_duration_format(r->late9999, a, sizeof a);
    fprintf(f,
            "  allowed_lateness: %-21s with bound %s, covers P99.99 "
            "(%s): at most %s dropped\n",
            r->late9999 ? a : "0", dur(r->bound99, b, sizeof b),
            dur(tdm__cli_hist_quantile(&s->lag, 0.9999), c, sizeof c),
            pct(r->dropped9999, d, sizeof d));
    tdm_duration_format(r->late_max, a, sizeof a);
    fprintf(f, "  %17s %-21s covers the max (%s): %s dropped\n", "",
            r->late_max ? a : "0", dur(s->lag.max, c, sizeof c),
            pct(r->dropped_max, d, sizeof d));
    tdm_duration_format(r->idle_timeout, a, sizeof a);
    fprintf(f,
            "  watermark.idle_timeout: %-15s above every normal gap "
            "(largest %s, P99.9 %s; %s)\n",
            a, dur(r->gap_normal_max, b, sizeof b),
            dur(r->gap_p999, c, sizeof c),
            r->idle_from_arrival ? "arrival-time gaps"
                                 : "inferred from event time");
    if (r->n_idle_parts > 0) {
        fprintf(f, "  %40s silent longer than that (marked idle):", "");
        int shown = 0;
        for (int p = 0; p < s->n_parts && shown < 5; p++) {
            const tdm__an_part *pt = &s->parts[p];
            if (pt->records == 0 || pt->max_gap <= r->idle_timeout)
                continue;
            fprintf(f, "%s %s for %s%s", shown ? "," : "", pt->name,
                    dur(pt->max_gap, b, sizeof b),
                    pt->gap_at_end ? " (to the end)" : "");
            shown++;
        }
        fprintf(f, "%s\n", r->n_idle_parts > shown ? ", ..." : "");
    }
    if (r->idle_checked > 0)
        fprintf(f,
                "  %40s est. late after idleness: at most %s of the "
                "sample\n",
                "", pct(frac(r->idle_late, r->idle_checked), b, sizeof b));
    fprintf(f, "  Why:\n");
    fprintf(f, "  - Bounded watermarks: a partition's watermark is its highest "
               "timestamp - bound -\n"
               "    1ms and the source emits the minimum over partitions, so a "
               "record whose lag is\n"
               "    <= bound is never behind it; the fractions above count lag "
               "> bound.  A record\n"
               "    behind the watermark is late only if its window already "
               "fired (see the what-if).\n");
    fprintf(f, "  - These figures assume watermark.emit: on_event.  With "
               "periodic emission (the\n"
               "    default) the watermark only trails the on-event one, so "
               "the same bound makes no\n"
               "    more records late - unless a partition goes idle or ends "
               "early - and results\n"
               "    come up to one watermark.interval later.\n");
    fprintf(f, "  - Allowed lateness L keeps a window's state L after its end: "
               "records with lag <=\n"
               "    bound + L are never dropped; the late ones refire their "
               "window (a late pane\n"
               "    each), which downstream must accept as updates.\n");
    fprintf(f,
            "  - Idle timeout: a partition silent longer than it leaves the "
            "watermark minimum, so\n"
            "    one quiet partition cannot stall every window; when it "
            "comes back, its records\n"
            "    below the watermark are late.  Idleness is detected "
            "between timeout + 1 and\n"
            "    timeout + 3 watermark.interval after the last record.  "
            "%s\n",
            r->idle_from_arrival
                ? "Gaps are measured in\n    arrival time."
                : "Without an arrival\n    field, a gap is how far the "
                  "highest timestamp of all partitions moved while the\n"
                  "    partition said nothing.");
    (void)o;
}

static void text_whatif(FILE *f, const tdm__an_opts *o, const tdm__an_scan *s,
                        const tdm__an_cand *cands, int n)
{
    char a[32], b[32], c[32], d[32], e[32], g[32], h[32], k[32], m[32];
    char st[32], se[32];
    if (n == 0)
        return;
    fprintf(f,
            "\nWhat-if: %s %s records replayed through the engine "
            "(%s, watermark.emit on_event,\nparallelism 1, no idle "
            "timeout); delay = from the highest timestamp passing a "
            "window's end\nto its first result\n",
            s->sample.complete ? "all" : "the first",
            num(s->sample.n, a, sizeof a), o->window_text);
    fprintf(f, "  %8s %8s %8s %8s %8s %7s %8s %17s %15s %9s %7s %9s %9s\n",
            "bound", "lateness", "on time", "accepted", "late out", "late",
            "windows", "delay p50 (max)", "records p50", "live wins", "keys",
            "state", "seed est");
    fprintf(f, "  %8s %8s %8s %8s %8s %7s %8s %17s %15s %9s %7s %9s %9s\n", "",
            "", "", "late", "", "panes", "", "", "(max)", "", "", "", "");
    for (int i = 0; i < n; i++) {
        const tdm__an_cand *cd = &cands[i];
        char delay[40], drec[40];
        if (cd->delay_ms.n > 0) {
            snprintf(delay, sizeof delay, "%s (%s)",
                     dur(cd->delay_ms.p50, a, sizeof a),
                     dur(cd->delay_ms.max, b, sizeof b));
            snprintf(drec, sizeof drec, "%s (%s)",
                     num(cd->delay_records.p50, a, sizeof a),
                     num(cd->delay_records.max, b, sizeof b));
        } else {
            snprintf(delay, sizeof delay, "at end");
            snprintf(drec, sizeof drec, "-");
        }
        fprintf(f,
                "%s%8s %8s %8s %8s %8s %7s %8s %17s %15s %9s %7s %9s "
                "%9s%s\n",
                cd->role & TDM__AN_ROLE_RECO ? "* " : "  ",
                dur(cd->bound, a, sizeof a), dur(cd->lateness, b, sizeof b),
                pct(frac(cd->on_time, cd->records), c, sizeof c),
                pct(frac(cd->accepted_late, cd->records), d, sizeof d),
                pct(frac(cd->late_output, cd->records), e, sizeof e),
                num(cd->panes_late, g, sizeof g), num(cd->windows, h, sizeof h),
                delay, drec, num(cd->peak_windows, k, sizeof k),
                num(cd->peak_keys, m, sizeof m),
                bytes(cd->peak_bytes, st, sizeof st),
                bytes(cd->seed_estimate, se, sizeof se),
                cd->role & TDM__AN_ROLE_JOB ? "  <- your job" : "");
    }
    fprintf(f, "  (on time: counted in the window's first result; accepted "
               "late: behind a fired\n  window but within allowed lateness "
               "(its push fired a pane); late out: too late\n  for every "
               "window; late panes: refires; seed est: rate x (window + "
               "bound +\n  lateness) x bytes per live window; *: the "
               "recommendation)\n");
}

static void text_warnings(FILE *f, const tdm__an_scan *s)
{
    if (s->n_warnings == 0)
        return;
    fprintf(f, "\nWarnings\n");
    for (int w = 0; w < s->n_warnings; w++)
        fprintf(f, "  - %s: %s\n", s->warnings[w].kind, s->warnings[w].message);
}

/* The terminal report (see analyze.h). */
void tdm__analyze_report_text(FILE *f, const tdm__an_opts *o,
                              const tdm__an_scan *s, const tdm__an_reco *r,
                              const tdm__an_cand *cands, int n_cands)
{
    /* Warnings come first: they say whether the rest can be trusted. */
    text_input(f, o, s);
    text_warnings(f, s);
    text_lag(f, s);
    text_arrival(f, s);
    text_slices(f, s, r);
    tdm__analyze_advice_text(f, o, s, r, cands, n_cands);
    text_reco(f, o, s, r);
    text_whatif(f, o, s, cands, n_cands);
}

/* ---- JSON ---- */

/* A JSON string, or null (see analyze.h). */
void tdm__analyze_json_str(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void jstr(FILE *f, const char *s)
{
    tdm__analyze_json_str(f, s);
}

/* A number that may be absent (TDM_TIME_MIN / TDM_TIME_MAX: null). */
static void jtime(FILE *f, tdm_time_ms t)
{
    if (t == TDM_TIME_MIN || t == TDM_TIME_MAX)
        fputs("null", f);
    else
        fprintf(f, "%" PRId64, t);
}

static void jdbl(FILE *f, double d)
{
    if (!isfinite(d))
        fputs("null", f);
    else
        fprintf(f, "%.6g", d);
}

/* "count", quantiles and "max" of histogram @p h (nulls when empty). */
static void jquantiles(FILE *f, const tdm__cli_hist *h)
{
    static const struct {
        const char *name;
        double q;
    } qs[] = {{"p50", 0.5},
              {"p90", 0.9},
              {"p99", 0.99},
              {"p999", 0.999},
              {"p9999", 0.9999}};
    fprintf(f, "\"count\": %" PRIu64, h ? h->n : 0);
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        fprintf(f, ", \"%s\": ", qs[i].name);
        if (h && h->n)
            fprintf(f, "%" PRId64, tdm__cli_hist_quantile(h, qs[i].q));
        else
            fputs("null", f);
    }
    fputs(", \"max\": ", f);
    if (h && h->n)
        fprintf(f, "%" PRId64, h->max);
    else
        fputs("null", f);
}

/* The histogram on power-of-two buckets: [low, high, count] for
 * [0], [1], [2, 3], [4, 7], ... up to the maximum. */
static void jhistogram(FILE *f, const tdm__cli_hist *h)
{
    fputs("[", f);
    if (h->n == 0) {
        fputs("]", f);
        return;
    }
    int64_t lo = 0, hi = 0;
    int i = 0;
    bool first = true;
    while (lo <= h->max) {
        uint64_t cnt = 0;
        while (i < TDM__CLI_HIST_BUCKETS && tdm__cli_hist_bucket_low(i) <= hi) {
            cnt += h->b[i];
            i++;
        }
        fprintf(f, "%s[%" PRId64 ", %" PRId64 ", %" PRIu64 "]",
                first ? "" : ", ", lo, hi, cnt);
        first = false;
        if (hi >= INT64_MAX / 2)
            break;
        lo = hi + 1;
        hi = 2 * lo - 1;
    }
    fputs("]", f);
}

static void json_partitions(FILE *f, const tdm__an_scan *s)
{
    fputs("  \"partitions\": [", f);
    for (int p = 0; p < s->n_parts; p++) {
        const tdm__an_part *pt = &s->parts[p];
        fprintf(f, "%s\n    {\"name\": ", p ? "," : "");
        jstr(f, pt->name);
        fprintf(f,
                ", \"records\": %" PRId64 ", \"guarded\": %" PRId64
                ", \"behind\": %" PRId64 ", ",
                pt->records, pt->guarded, pt->out_of_order);
        if (pt->lag) {
            jquantiles(f, pt->lag);
        } else {
            fprintf(f,
                    "\"count\": %" PRId64 ", \"p50\": null, \"p90\": "
                    "null, \"p99\": null, \"p999\": null, \"p9999\": "
                    "null, \"max\": %" PRId64,
                    pt->records - pt->guarded, pt->max_lag);
        }
        fputs(", \"min_ts\": ", f);
        jtime(f, pt->records > pt->guarded ? pt->min_ts : TDM_TIME_MIN);
        fputs(", \"max_ts\": ", f);
        jtime(f, pt->max_ts);
        fprintf(f,
                ", \"max_gap_ms\": %" PRId64 ", \"gap_from\": ", pt->max_gap);
        jtime(f, pt->has_prev ? pt->gap_from : TDM_TIME_MIN);
        fputs(", \"gap_to\": ", f);
        jtime(f, pt->has_prev ? pt->gap_to : TDM_TIME_MIN);
        fprintf(f, ", \"gap_at_end\": %s}", pt->gap_at_end ? "true" : "false");
    }
    fputs("\n  ],\n", f);
}

static void json_reco(FILE *f, const tdm__an_opts *o, const tdm__an_scan *s,
                      const tdm__an_reco *r, const tdm__an_cand *cands, int n)
{
    fprintf(f, "  \"recommendations\": {\n");
    tdm__analyze_advice_json(f, o, s, r, cands, n);
    fputs(",\n", f);
    fprintf(f,
            "    \"max_out_of_orderness\": [{\"target\": \"p99\", "
            "\"ms\": %" PRId64 ", \"behind_fraction_max\": ",
            r->bound99);
    jdbl(f, r->behind99);
    fprintf(f,
            "}, {\"target\": \"p99.9\", \"ms\": %" PRId64
            ", \"behind_fraction_max\": ",
            r->bound999);
    jdbl(f, r->behind999);
    fprintf(f,
            "}],\n    \"allowed_lateness\": [{\"target\": \"p99.99\", "
            "\"bound_ms\": %" PRId64 ", \"ms\": %" PRId64
            ", \"dropped_fraction_max\": ",
            r->bound99, r->late9999);
    jdbl(f, r->dropped9999);
    fprintf(f,
            "}, {\"target\": \"max\", \"bound_ms\": %" PRId64
            ", \"ms\": %" PRId64 ", \"dropped_fraction_max\": ",
            r->bound99, r->late_max);
    jdbl(f, r->dropped_max);
    fprintf(f,
            "}],\n    \"idle_timeout\": {\"ms\": %" PRId64
            ", \"basis\": \"%s\", \"gap_p999_ms\": %" PRId64
            ", \"normal_gap_max_ms\": %" PRId64 ", \"largest_gap_ms\": %" PRId64
            ", \"partitions_silent_longer\": [",
            r->idle_timeout,
            r->idle_from_arrival ? "arrival_time" : "event_time", r->gap_p999,
            r->gap_normal_max, r->gap_max);
    int k = 0;
    for (int p = 0; p < s->n_parts; p++) {
        if (s->parts[p].records == 0 || s->parts[p].max_gap <= r->idle_timeout)
            continue;
        fputs(k++ ? ", " : "", f);
        jstr(f, s->parts[p].name);
    }
    fprintf(f,
            "], \"late_records_estimate\": %" PRId64
            ", \"records_checked\": %" PRId64 ", \"late_fraction_estimate\": ",
            r->idle_late, r->idle_checked);
    jdbl(f, frac(r->idle_late, r->idle_checked));
    fputs("}\n  },\n", f);
}

static void jdist(FILE *f, const char *name, const tdm__an_dist *d)
{
    fprintf(f, ", \"%s\": {\"n\": %" PRId64 ", \"mean\": ", name, d->n);
    if (d->n) {
        jdbl(f, d->mean);
        fprintf(f,
                ", \"p50\": %" PRId64 ", \"p99\": %" PRId64
                ", \"max\": %" PRId64 "}",
                d->p50, d->p99, d->max);
    } else {
        fputs("null, \"p50\": null, \"p99\": null, \"max\": null}", f);
    }
}

/* Why a candidate is in the grid, as JSON. */
static const char *role_name(unsigned role)
{
    switch (role & (TDM__AN_ROLE_RECO | TDM__AN_ROLE_JOB)) {
    case TDM__AN_ROLE_RECO:
        return "\"recommended\"";
    case TDM__AN_ROLE_JOB:
        return "\"job\"";
    case TDM__AN_ROLE_RECO | TDM__AN_ROLE_JOB:
        return "\"recommended,job\"";
    default:
        return "null";
    }
}

static void json_whatif(FILE *f, const tdm__an_opts *o, const tdm__an_scan *s,
                        const tdm__an_cand *cands, int n)
{
    if (n == 0) {
        fputs("  \"whatif\": null,\n", f);
        return;
    }
    fprintf(f,
            "  \"whatif\": {\"records\": %" PRId64
            ", \"complete\": %s, \"window\": ",
            s->sample.n, s->sample.complete ? "true" : "false");
    jstr(f, o->window_text);
    fputs(", \"candidates\": [", f);
    for (int i = 0; i < n; i++) {
        const tdm__an_cand *c = &cands[i];
        fprintf(f,
                "%s\n    {\"bound_ms\": %" PRId64 ", \"lateness_ms\": %" PRId64
                ", \"records\": %" PRId64 ", \"on_time\": %" PRId64
                ", \"accepted_late\": %" PRId64 ", \"late_output\": %" PRId64
                ", \"on_time_fraction\": ",
                i ? "," : "", c->bound, c->lateness, c->records, c->on_time,
                c->accepted_late, c->late_output);
        jdbl(f, frac(c->on_time, c->records));
        fputs(", \"accepted_late_fraction\": ", f);
        jdbl(f, frac(c->accepted_late, c->records));
        fputs(", \"late_output_fraction\": ", f);
        jdbl(f, frac(c->late_output, c->records));
        fprintf(f,
                ", \"panes_on_time\": %" PRId64 ", \"panes_late\": %" PRId64
                ", \"panes_other\": %" PRId64 ", \"windows\": %" PRId64
                ", \"windows_at_end\": %" PRId64,
                c->panes_on_time, c->panes_late, c->panes_other, c->windows,
                c->windows_at_end);
        jdist(f, "delay_ms", &c->delay_ms);
        jdist(f, "delay_records", &c->delay_records);
        fprintf(f,
                ", \"peak_live_windows\": %" PRId64 ", \"peak_keys\": %" PRId64
                ", \"peak_state_bytes\": %" PRId64 ", \"rate_per_s\": ",
                c->peak_windows, c->peak_keys, c->peak_bytes);
        jdbl(f, c->rate);
        fprintf(f,
                ", \"seed_estimate_bytes\": %" PRId64
                ", \"unit_suspects\": %" PRId64 ", \"late\": %" PRId64
                ", \"role\": %s}",
                c->seed_estimate, c->suspects, tdm__analyze_late(c),
                role_name(c->role));
    }
    fputs("\n  ]},\n", f);
}

/* The warnings, before the measurements they qualify. */
static void json_warnings(FILE *f, const tdm__an_scan *s)
{
    fputs("  \"warnings\": [", f);
    for (int w = 0; w < s->n_warnings; w++) {
        fprintf(f, "%s\n    {\"kind\": ", w ? "," : "");
        jstr(f, s->warnings[w].kind);
        fputs(", \"message\": ", f);
        jstr(f, s->warnings[w].message);
        fputs("}", f);
    }
    fputs(s->n_warnings ? "\n  ],\n" : "],\n", f);
}

/* The JSON report (see analyze.h and docs/analyze.md). */
void tdm__analyze_report_json(FILE *f, const tdm__an_opts *o,
                              const tdm__an_scan *s, const tdm__an_reco *r,
                              const tdm__an_cand *cands, int n_cands)
{
    fprintf(f, "{\n  \"version\": 1,\n  \"input\": {\"files\": [");
    for (int i = 0; i < s->n_files; i++) {
        fputs(i ? ", " : "", f);
        jstr(f, s->files[i]);
    }
    fprintf(f,
            "], \"records\": %" PRId64 ", \"bad_records\": %" PRId64
            ", \"guarded\": %" PRId64 ", \"future\": %" PRId64
            ", \"unit_suspects\": %" PRId64
            ", \"partitions\": %d, \"min_ts\": ",
            s->records, s->bad, s->guarded, s->future, s->suspects, s->n_parts);
    jtime(f, s->lag.n ? s->min_ts : TDM_TIME_MIN);
    fputs(", \"max_ts\": ", f);
    jtime(f, s->max_ts);
    fputs(", \"rate_per_s\": ", f);
    jdbl(f, input_rate(s));
    fputs("},\n  \"settings\": {\"ts_field\": ", f);
    jstr(f, o->ts_field);
    fprintf(f, ", \"unit\": \"%s\", \"partition_field\": ",
            tdm_ts_unit_name((tdm_ts_unit)o->unit));
    jstr(f, o->partition_field);
    fputs(", \"arrival_field\": ", f);
    jstr(f, o->arrival_field);
    fputs(", \"key_fields\": ", f);
    jstr(f, o->key_fields);
    fputs(", \"window\": ", f);
    jstr(f, o->window_text);
    fprintf(f,
            ", \"sample\": %" PRId64 ", \"batch_size\": %d, "
            "\"guard_ms\": %" PRId64 ", \"now\": %" PRId64
            ", \"target\": %.6g, \"job\": ",
            o->sample, o->batch_size, o->guard, o->now, o->target);
    jstr(f, o->job_file);
    fputs(", \"source\": ", f);
    jstr(f, o->job_source);
    fputs(", \"job_window\": ", f);
    jstr(f, o->job_window);
    fputs("},\n", f);
    json_warnings(f, s);
    fputs("  \"lag\": {", f);
    jquantiles(f, &s->lag);
    fprintf(f, ", \"behind\": %" PRIu64 ", \"histogram\": ",
            s->lag.n ? s->lag.n - s->lag.b[0] : 0);
    jhistogram(f, &s->lag);
    fputs("},\n  \"arrival_delay\": ", f);
    if (s->has_arrival) {
        fputs("{", f);
        jquantiles(f, &s->arrival);
        fprintf(f, ", \"negative\": %" PRId64 "}", s->arrival_negative);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\n  \"gaps\": {\"basis\": \"%s\", ",
            s->has_arrival ? "arrival_time" : "event_time");
    jquantiles(f, &s->gaps);
    fputs("},\n", f);
    json_partitions(f, s);
    fprintf(f,
            "  \"over_time\": {\"slice_records\": %" PRId64
            ", \"median_p99\": %" PRId64 ", \"slices\": [",
            s->slice_len, r->slice_p99_median);
    for (int k = 0; k < s->n_slices; k++) {
        const tdm__an_slice *sl = &s->slices[k];
        fprintf(f,
                "%s\n    {\"first\": %" PRId64 ", \"records\": %" PRId64
                ", \"max_ts\": ",
                k ? "," : "", sl->first, sl->records);
        jtime(f, sl->max_ts);
        fputs(", \"p99\": ", f);
        if (sl->lag.n)
            fprintf(f, "%" PRId64 ", \"max\": %" PRId64,
                    tdm__cli_hist_quantile(&sl->lag, 0.99), sl->lag.max);
        else
            fputs("null, \"max\": null", f);
        fprintf(f, ", \"spike\": %s}", sl->spike ? "true" : "false");
    }
    fputs("\n  ]},\n", f);
    json_reco(f, o, s, r, cands, n_cands);
    json_whatif(f, o, s, cands, n_cands);
    fputs("  \"notes\": [", f);
    for (int i = 0; i < o->n_notes; i++) {
        fputs(i ? ", " : "", f);
        jstr(f, o->notes[i]);
    }
    fputs("]\n}\n", f);
}
