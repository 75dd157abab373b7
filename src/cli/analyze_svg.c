/* SPDX-License-Identifier: MIT */
/* analyze_svg.c - `tidemark analyze --plot out.svg`: one standalone SVG
 * file (no scripts, no external references) with two charts:
 *   left   the trade-off of the what-if candidates: records in the first
 *          result (filled dots) and in any result including refires
 *          (rings) against the median result delay in event time;
 *   right  the out-of-orderness histogram on power-of-two buckets, both
 *          axes log-scaled, with the P99 and P99.9 marked.
 * Every text is escaped, every element closed, so the file is valid XML
 * (tests/unit/test_analyze.c checks it) and any browser shows it.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "analyze.h"

#define W 1000
#define H 460
/* Plot areas: left chart and right chart. */
#define PY 50
#define PH 320
#define LX 80
#define LW 360
#define RX 580
#define RW 380

/* Text content or an attribute value, escaped. */
static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
            break;
        }
    }
}

/* A <text> element at (x, y) with an anchor and size. */
static void text(FILE *f, double x, double y, const char *anchor, int size,
                 const char *extra, const char *s)
{
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" "
            "font-size=\"%d\"%s%s>",
            x, y, anchor, size, extra ? " " : "", extra ? extra : "");
    esc(f, s);
    fputs("</text>\n", f);
}

static void line(FILE *f, double x1, double y1, double x2, double y2,
                 const char *style)
{
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "%s/>\n",
            x1, y1, x2, y2, style);
}

/* A round upper end for an axis from 0 to @p v: 1, 2 or 5 x 10^k. */
static double axis_top(double v)
{
    if (v <= 0)
        return 1;
    double p = pow(10, floor(log10(v)));
    double m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* ---- The trade-off chart ---- */

static double frac(int64_t a, int64_t b)
{
    return b > 0 ? (double)a / (double)b : 0;
}

/* The trade-off chart's axes: x the median delay (ms), y the percent
 * of records in results. */
typedef struct axes {
    double xlo, xhi, xstep;
    int xticks;
    double ymin, ystep;
} axes;

/* The chart's title, frame and axis titles. */
static void tradeoff_frame(FILE *f)
{
    text(f, LX + LW / 2.0, PY - 20, "middle", 15, "font-weight=\"bold\"",
         "Completeness against result delay");
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"none\" stroke=\"#444\"/>\n",
            LX, PY, LW, PH);
    text(f, LX + LW / 2.0, PY + PH + 40, "middle", 12, NULL,
         "median result delay after a window's end (event time)");
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
            "font-size=\"12\" transform=\"rotate(-90 %d %d)\">",
            LX - 55, PY + PH / 2, LX - 55, PY + PH / 2);
    esc(f, "records in results (%)");
    fputs("</text>\n", f);
}

/* True when candidate @p c has a point: a delay and records. */
static bool plotted(const tdm__an_cand *c)
{
    return c->delay_ms.n != 0 && c->records != 0;
}

/* The axes over the candidates' delays and on-time shares, out to round
 * steps; false when no candidate has a point. */
static bool tradeoff_axes(const tdm__an_cand *c, int n, axes *a)
{
    int with = 0;
    double dmin = INFINITY, dmax = 0, ymin = 100;
    for (int i = 0; i < n; i++) {
        if (!plotted(&c[i]))
            continue;
        with++;
        if (c[i].delay_ms.p50 > dmax)
            dmax = (double)c[i].delay_ms.p50;
        if (c[i].delay_ms.p50 < dmin)
            dmin = (double)c[i].delay_ms.p50;
        double y = 100 * frac(c[i].on_time, c[i].records);
        if (y < ymin)
            ymin = y;
    }
    if (with == 0)
        return false;
    double xspan = dmax - dmin;
    if (xspan < 1)
        xspan = dmax * 0.2 > 10 ? dmax * 0.2 : 10;
    a->xstep = axis_top(xspan / 4);
    a->xlo = floor((dmin - 0.05 * xspan) / a->xstep) * a->xstep;
    if (a->xlo < 0)
        a->xlo = 0;
    a->xticks = (int)ceil((dmax + 0.1 * xspan - a->xlo) / a->xstep);
    if (a->xticks < 1)
        a->xticks = 1;
    a->xhi = a->xlo + a->xticks * a->xstep;
    double span = 100 - ymin;
    a->ystep = axis_top(span > 0 ? span / 4 : 0.1);
    ymin = floor(ymin / a->ystep) * a->ystep;
    if (ymin > 100 - a->ystep)
        ymin = 100 - a->ystep;
    if (ymin < 0)
        ymin = 0;
    a->ymin = ymin;
    return true;
}

/* The ticks, their labels and the horizontal grid. */
static void tradeoff_ticks(FILE *f, const axes *a)
{
    char buf[64];
    for (int k = 0; k <= a->xticks; k++) {
        double xv = a->xlo + k * a->xstep, x = LX + LW * (double)k / a->xticks;
        line(f, x, PY + PH, x, PY + PH + 5, "stroke=\"#444\"");
        text(f, x, PY + PH + 18, "middle", 11, NULL,
             tdm__analyze_fmt_dur((int64_t)llround(xv), buf, sizeof buf));
    }
    double step = a->ystep, ymin = a->ymin;
    for (double yv = ymin; yv <= 100 + step / 1000; yv += step) {
        double y = PY + PH - PH * (yv - ymin) / (100 - ymin);
        line(f, LX - 5, y, LX, y, "stroke=\"#444\"");
        line(f, LX, y, LX + LW, y, "stroke=\"#ddd\"");
        snprintf(buf, sizeof buf, "%.*f", step < 1 ? 2 : 0, yv);
        text(f, LX - 8, y + 4, "end", 11, NULL, buf);
    }
}

/* The y position of a share of @p part in @p whole on axes @p a. */
static double y_of(const axes *a, int64_t part, int64_t whole)
{
    double v = 100 * frac(part, whole);
    return PY + PH - PH * (v - a->ymin) / (100 - a->ymin);
}

/* Candidate @p i: its on-time dot, its some-result ring and their
 * labels.  Candidates with the same bound share their dot (allowed
 * lateness changes neither what is on time nor when the first result
 * comes): one "B=" label per dot, one "L=" label per ring. */
static void tradeoff_point(FILE *f, const tdm__an_cand *c, int i, const axes *a)
{
    char buf[64], b2[32], b3[32];
    double x =
        LX + LW * ((double)c[i].delay_ms.p50 - a->xlo) / (a->xhi - a->xlo);
    double py = y_of(a, c[i].on_time, c[i].records);
    double pf = y_of(a, c[i].records - c[i].late_output, c[i].records);
    bool dot_done = false, ring_done = false;
    for (int j = 0; j < i; j++) {
        if (!plotted(&c[j]) || c[j].delay_ms.p50 != c[i].delay_ms.p50)
            continue;
        double pj = y_of(a, c[j].on_time, c[j].records);
        double qj = y_of(a, c[j].records - c[j].late_output, c[j].records);
        dot_done |= fabs(pj - py) < 1;
        ring_done |= fabs(qj - pf) < 10;
    }
    if (pf < PY)
        pf = PY;
    line(f, x, py, x, pf, "stroke=\"#9ab\" stroke-dasharray=\"3,2\"");
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" "
            "stroke=\"#c60\" stroke-width=\"2\"/>\n",
            x, pf);
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
            "fill=\"#06c\"/>\n",
            x, py);
    if (!ring_done) {
        snprintf(buf, sizeof buf, "L=%s",
                 tdm__analyze_fmt_dur(c[i].lateness, b3, sizeof b3));
        text(f, x - 10, pf + 4, "end", 10, "fill=\"#c60\"", buf);
    }
    if (!dot_done) {
        snprintf(buf, sizeof buf, "B=%s",
                 tdm__analyze_fmt_dur(c[i].bound, b2, sizeof b2));
        text(f, x + 9, py + 4, "start", 10, "fill=\"#06c\"", buf);
    }
}

/* The trade-off chart: per candidate, the share of records on time (dot)
 * and in some result (ring) against the median result delay. */
static void tradeoff(FILE *f, const tdm__an_cand *c, int n)
{
    axes a;
    tradeoff_frame(f);
    if (!tradeoff_axes(c, n, &a)) {
        text(f, LX + LW / 2.0, PY + PH / 2.0, "middle", 13, NULL,
             n ? "every window fired only at the end of input"
               : "no what-if replay (see --sample)");
        return;
    }
    tradeoff_ticks(f, &a);
    for (int i = 0; i < n; i++)
        if (plotted(&c[i]))
            tradeoff_point(f, c, i, &a);
    /* Legend. */
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"#06c\"/>\n", LX + 10,
            PY + PH + 58);
    text(f, LX + 20, PY + PH + 62, "start", 11, NULL,
         "in the first result (on time)");
    fprintf(f,
            "<circle cx=\"%d\" cy=\"%d\" r=\"6\" fill=\"none\" "
            "stroke=\"#c60\" stroke-width=\"2\"/>\n",
            LX + 200, PY + PH + 58);
    text(f, LX + 210, PY + PH + 62, "start", 11, NULL,
         "in some result (refires too)");
}

/* ---- The lag histogram ---- */

static void lag_chart(FILE *f, const tdm__cli_hist *h)
{
    char buf[64];
    text(f, RX + RW / 2.0, PY - 20, "middle", 15, "font-weight=\"bold\"",
         "Out-of-orderness histogram");
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"none\" stroke=\"#444\"/>\n",
            RX, PY, RW, PH);
    text(f, RX + RW / 2.0, PY + PH + 40, "middle", 12, NULL,
         "lag behind the partition's highest timestamp (log scale)");
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
            "font-size=\"12\" transform=\"rotate(-90 %d %d)\">",
            RX - 50, PY + PH / 2, RX - 50, PY + PH / 2);
    esc(f, "records (log scale)");
    fputs("</text>\n", f);
    if (h->n == 0) {
        text(f, RX + RW / 2.0, PY + PH / 2.0, "middle", 13, NULL, "no records");
        return;
    }
    /* Buckets [0], [1], [2, 3], [4, 7], ... up to the maximum. */
    uint64_t cnt[66];
    int nb = 0, i = 0;
    int64_t lo = 0, hi = 0;
    while (lo <= h->max && nb < 66) {
        uint64_t c = 0;
        while (i < TDM__CLI_HIST_BUCKETS && tdm__cli_hist_bucket_low(i) <= hi)
            c += h->b[i++];
        cnt[nb++] = c;
        if (hi >= INT64_MAX / 2)
            break;
        lo = hi + 1;
        hi = 2 * lo - 1;
    }
    uint64_t cmax = 1;
    for (int k = 0; k < nb; k++)
        if (cnt[k] > cmax)
            cmax = cnt[k];
    double decades = ceil(log10((double)cmax + 1));
    if (decades < 1)
        decades = 1;
    double bw = (double)RW / nb;
    for (int k = 0; k < nb; k++) {
        if (cnt[k] == 0)
            continue;
        double hgt = PH * log10((double)cnt[k] + 1) / decades;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\" fill=\"#6a9\"><title>",
                RX + k * bw + 1, PY + PH - hgt, bw > 3 ? bw - 2 : bw, hgt);
        int64_t blo = k == 0 ? 0 : (int64_t)1 << (k - 1);
        int64_t bhi = k == 0 ? 0 : 2 * blo - 1;
        char d1[32], d2[32];
        snprintf(buf, sizeof buf, "%s..%s: %" PRIu64 " records",
                 tdm__analyze_fmt_dur(blo, d1, sizeof d1),
                 tdm__analyze_fmt_dur(bhi, d2, sizeof d2), cnt[k]);
        esc(f, buf);
        fputs("</title></rect>\n", f);
    }
    /* x labels: every bucket when few, else every other or fourth. */
    int every = nb <= 8 ? 1 : nb <= 24 ? 2 : 4;
    for (int k = 0; k < nb; k += every) {
        int64_t blo = k == 0 ? 0 : (int64_t)1 << (k - 1);
        double x = RX + k * bw + bw / 2;
        line(f, x, PY + PH, x, PY + PH + 4, "stroke=\"#444\"");
        text(f, x, PY + PH + 16, "middle", 10, NULL,
             tdm__analyze_fmt_dur(blo, buf, sizeof buf));
    }
    for (int d = 0; d <= (int)decades; d++) {
        double y = PY + PH - PH * d / decades;
        line(f, RX - 5, y, RX, y, "stroke=\"#444\"");
        snprintf(buf, sizeof buf, "%.0f", pow(10, d));
        text(f, RX - 8, y + 4, "end", 10, NULL, buf);
    }
    /* The P99 and P99.9, at their bucket. */
    static const struct {
        double q;
        const char *name;
        const char *color;
    } marks[] = {{0.99, "P99", "#c00"}, {0.999, "P99.9", "#808"}};
    for (size_t m = 0; m < sizeof marks / sizeof marks[0]; m++) {
        int64_t v = tdm__cli_hist_quantile(h, marks[m].q);
        int k = 0;
        while (k + 1 < nb && ((int64_t)1 << k) <= v)
            k++;
        double x = RX + k * bw + bw / 2;
        char style[96];
        snprintf(style, sizeof style, "stroke=\"%s\" stroke-dasharray=\"5,3\"",
                 marks[m].color);
        line(f, x, PY, x, PY + PH, style);
        char d1[32];
        snprintf(buf, sizeof buf, "%s %s", marks[m].name,
                 tdm__analyze_fmt_dur(v, d1, sizeof d1));
        snprintf(style, sizeof style, "fill=\"%s\"", marks[m].color);
        text(f, x + 3, PY + 14 + 14 * (int)m, "start", 11, style, buf);
    }
}

/* Writes the plot (see analyze.h). */
int tdm__analyze_svg(FILE *f, const tdm__an_scan *s, const tdm__an_cand *cands,
                     int n_cands)
{
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\">\n",
            W, H, W, H);
    fputs("<title>tidemark analyze</title>\n", f);
    fprintf(f,
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
            "fill=\"white\"/>\n",
            W, H);
    tradeoff(f, cands, n_cands);
    lag_chart(f, &s->lag);
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
