/* SPDX-License-Identifier: MIT */
/* analyze_svg.c - `tidemark analyze --plot out.svg`: one standalone SVG
 * file (no scripts, no external references) with two charts:
 *   left   the trade-off of the what-if candidates: records in the first
 *          result (filled dots) and in any result including refires
 *          (rings) against the result delay in event time, on a log axis
 *          (delays of candidates span decades: 50 ms and 2 min on one
 *          linear axis leave the small ones in one pixel), a line from
 *          each candidate's median delay to its maximum, and the
 *          recommended candidate marked with a diamond, a line and a
 *          label;
 *   right  the out-of-orderness histogram on power-of-two buckets, both
 *          axes log-scaled, with the recommended bound and bound +
 *          lateness, the P99, P99.9 and the maximum marked.
 * Labels never overlap: each is placed where it fits (see the placer).
 * Every text is escaped, every element closed, so the file is valid XML
 * (tests/unit/test_analyze.c checks it) and any browser shows it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"

#define W 1000
#define H 480
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

/* ---- Labels that do not overlap ----
 *
 * Every text of the plot is placed through a placer that remembers the
 * boxes already taken.  A box is estimated from the text: 0.6 em per
 * character (wider than the digits and most letters of a sans-serif
 * face) and the font size high.  A label that would overlap is moved
 * down and up by a line at a time, a few times; when no place is free it
 * is left out (a tick label) rather than written over another.
 * tests/unit/test_analyze.c checks the written boxes the same way. */

#define EM_PER_CHAR 0.6
#define MAX_BOXES 512

typedef struct box {
    double x0, x1, y0, y1;
} box;

typedef struct placer {
    box b[MAX_BOXES];
    int n;
} placer;

/* The box of @p s at (x, y) (y the baseline) with @p anchor. */
static box box_of(double x, double y, const char *anchor, int size,
                  const char *s)
{
    double w = EM_PER_CHAR * size * (double)strlen(s);
    double x0 = anchor[0] == 'e' ? x - w : anchor[0] == 'm' ? x - w / 2 : x;
    box b = {x0, x0 + w, y - size, y + 0.25 * size};
    return b;
}

static bool overlaps(const placer *p, box b)
{
    for (int i = 0; i < p->n; i++)
        if (b.x0 < p->b[i].x1 && p->b[i].x0 < b.x1 && b.y0 < p->b[i].y1 &&
            p->b[i].y0 < b.y1)
            return true;
    return false;
}

/* Writes a <text> element (see text()) if it fits; @p tries lines of
 * shifting are allowed (0: only where asked).  Returns false when the
 * label was left out. */
static bool text_at(FILE *f, placer *p, double x, double y, const char *anchor,
                    int size, const char *extra, const char *s, int tries)
{
    static const int steps[] = {0, 1, -1, 2, -2, 3, -3};
    for (int k = 0; k <= 2 * tries && k < 7; k++) {
        double yy = y + steps[k] * (size + 2);
        box b = box_of(x, yy, anchor, size, s);
        if (overlaps(p, b) || p->n == MAX_BOXES)
            continue;
        p->b[p->n++] = b;
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" "
                "font-size=\"%d\"%s%s>",
                x, yy, anchor, size, extra ? " " : "", extra ? extra : "");
        esc(f, s);
        fputs("</text>\n", f);
        return true;
    }
    return false;
}

/* A label beside a point at (@p x, @p y), @p off px to its left
 * (@p left) or right, else on the other side; only inside the chart
 * [@p lo, @p hi].  Returns false when it was left out. */
static bool text_beside(FILE *f, placer *p, double x, double y, double off,
                        bool left, double lo, double hi, int size,
                        const char *extra, const char *s, int tries)
{
    for (int side = 0; side < 2; side++, left = !left) {
        double xx = left ? x - off : x + off;
        box b = box_of(xx, y, left ? "end" : "start", size, s);
        if (b.x0 < lo || b.x1 > hi)
            continue;
        if (text_at(f, p, xx, y, left ? "end" : "start", size, extra, s, tries))
            return true;
    }
    return false;
}

/* A text that must be there (titles): placed, never moved. */
static void text(FILE *f, placer *p, double x, double y, const char *anchor,
                 int size, const char *extra, const char *s)
{
    if (p->n < MAX_BOXES)
        p->b[p->n++] = box_of(x, y, anchor, size, s);
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

/* The trade-off chart's axes: x the result delay (ms, log scale from
 * xlo to xhi, powers of ten), y the percent of records in results. */
typedef struct axes {
    double xlo, xhi;
    double ymin, ystep;
} axes;

/* The chart's title, frame and axis titles. */
static void tradeoff_frame(FILE *f, placer *p)
{
    text(f, p, LX + LW / 2.0, PY - 20, "middle", 15, "font-weight=\"bold\"",
         "Completeness against result delay");
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"none\" stroke=\"#444\"/>\n",
            LX, PY, LW, PH);
    text(f, p, LX + LW / 2.0, PY + PH + 40, "middle", 12, NULL,
         "result delay after a window's end (event time, log scale)");
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

/* The x of delay @p ms on the log axis (delays below 1 ms at 1 ms). */
static double x_of(const axes *a, double ms)
{
    double v = ms < 1 ? 1 : ms;
    return LX +
           LW * (log10(v) - log10(a->xlo)) / (log10(a->xhi) - log10(a->xlo));
}

/* The axes over the candidates' delays (median to maximum) and on-time
 * shares; false when no candidate has a point. */
static bool tradeoff_axes(const tdm__an_cand *c, int n, axes *a)
{
    int with = 0;
    double dmin = INFINITY, dmax = 0, ymin = 100;
    for (int i = 0; i < n; i++) {
        if (!plotted(&c[i]))
            continue;
        with++;
        if (c[i].delay_ms.max > dmax)
            dmax = (double)c[i].delay_ms.max;
        if (c[i].delay_ms.p50 < dmin)
            dmin = (double)c[i].delay_ms.p50;
        double y = 100 * frac(c[i].on_time, c[i].records);
        if (y < ymin)
            ymin = y;
    }
    if (with == 0)
        return false;
    a->xlo = pow(10, floor(log10(dmin < 1 ? 1 : dmin)));
    a->xhi = pow(10, ceil(log10(dmax < 1 ? 1 : dmax)));
    if (a->xhi <= a->xlo)
        a->xhi = a->xlo * 10;
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

/* The ticks at 1, 2 and 5 x 10^k (labels where they fit) and the
 * horizontal grid. */
static void tradeoff_ticks(FILE *f, placer *p, const axes *a)
{
    char buf[64], attr[64];
    for (double d = a->xlo; d <= a->xhi * 1.0001; d *= 10)
        for (int m = 1; m <= 5 && d * m <= a->xhi * 1.0001;
             m += m == 1 ? 1 : 3) {
            double v = d * m, x = x_of(a, v);
            line(f, x, PY + PH, x, PY + PH + (m == 1 ? 6 : 3),
                 "stroke=\"#444\"");
            if (m == 1)
                line(f, x, PY, x, PY + PH, "stroke=\"#eee\"");
            snprintf(attr, sizeof attr, "class=\"xtick\" data-ms=\"%.0f\"", v);
            text_at(f, p, x, PY + PH + 18, "middle", 11, attr,
                    tdm__analyze_fmt_dur((int64_t)llround(v), buf, sizeof buf),
                    0);
        }
    double step = a->ystep, ymin = a->ymin;
    for (double yv = ymin; yv <= 100 + step / 1000; yv += step) {
        double y = PY + PH - PH * (yv - ymin) / (100 - ymin);
        line(f, LX - 5, y, LX, y, "stroke=\"#444\"");
        line(f, LX, y, LX + LW, y, "stroke=\"#ddd\"");
        snprintf(buf, sizeof buf, "%.*f", step < 1 ? 2 : 0, yv);
        text_at(f, p, LX - 8, y + 4, "end", 11, NULL, buf, 0);
    }
}

/* The y position of a share of @p part in @p whole on axes @p a. */
static double y_of(const axes *a, int64_t part, int64_t whole)
{
    double v = 100 * frac(part, whole);
    return PY + PH - PH * (v - a->ymin) / (100 - a->ymin);
}

/* Candidate @p i: its on-time dot, its some-result ring, the whisker to
 * its maximum delay, and the labels.  Candidates with the same bound
 * share their dot (allowed lateness changes neither what is on time nor
 * when the first result comes): one "B=" label per dot, one "L=" label
 * per ring, where they fit. */
static void tradeoff_point(FILE *f, placer *p, const tdm__an_cand *c, int i,
                           const axes *a)
{
    char buf[64], b2[32];
    double x = x_of(a, (double)c[i].delay_ms.p50);
    double xm = x_of(a, (double)c[i].delay_ms.max);
    double py = y_of(a, c[i].on_time, c[i].records);
    double pf = y_of(a, c[i].records - c[i].late_output, c[i].records);
    if (pf < PY)
        pf = PY;
    line(f, x, py, xm, py,
         "class=\"maxdelay\" stroke=\"#06c\" "
         "stroke-opacity=\"0.5\"");
    line(f, xm, py - 3, xm, py + 3, "stroke=\"#06c\" stroke-opacity=\"0.5\"");
    line(f, x, py, x, pf, "stroke=\"#9ab\" stroke-dasharray=\"3,2\"");
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"none\" "
            "stroke=\"#c60\" stroke-width=\"2\"/>\n",
            x, pf);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#06c\"/>\n", x,
            py);
    snprintf(buf, sizeof buf, "L=%s",
             tdm__analyze_fmt_dur(c[i].lateness, b2, sizeof b2));
    text_beside(f, p, x, pf + 4, 10, true, LX, LX + LW, 10,
                "class=\"lbl\" fill=\"#c60\"", buf, 1);
    snprintf(buf, sizeof buf, "B=%s",
             tdm__analyze_fmt_dur(c[i].bound, b2, sizeof b2));
    for (int j = 0; j < i; j++)
        if (c[j].bound == c[i].bound && plotted(&c[j]))
            return;
    text_beside(f, p, x, py + 4, 9, false, LX, LX + LW, 10,
                "class=\"lbl\" fill=\"#06c\"", buf, 2);
}

/* The recommended candidate: a diamond, a line down to the axis and its
 * label with its maximum delay. */
static void tradeoff_reco(FILE *f, placer *p, const tdm__an_cand *c,
                          const axes *a)
{
    char buf[96], b1[32], b2[32], b3[32];
    double x = x_of(a, (double)c->delay_ms.p50);
    double y = y_of(a, c->on_time, c->records);
    line(f, x, y, x, PY + PH,
         "class=\"reco\" stroke=\"#080\" stroke-width=\"1.5\" "
         "stroke-dasharray=\"6,3\"");
    fprintf(f,
            "<path d=\"M %.1f %.1f l 8 8 l -8 8 l -8 -8 z\" fill=\"none\" "
            "stroke=\"#080\" stroke-width=\"2\"/>\n",
            x, y - 8);
    snprintf(buf, sizeof buf, "recommended B=%s L=%s, max delay %s",
             tdm__analyze_fmt_dur(c->bound, b1, sizeof b1),
             tdm__analyze_fmt_dur(c->lateness, b2, sizeof b2),
             tdm__analyze_fmt_dur(c->delay_ms.max, b3, sizeof b3));
    text_at(f, p, LX + LW - 4, PY + PH - 8, "end", 11,
            "class=\"lbl\" fill=\"#080\"", buf, 3);
}

/* The legend under the chart. */
static void tradeoff_legend(FILE *f, placer *p)
{
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"#06c\"/>\n", LX + 10,
            PY + PH + 58);
    text(f, p, LX + 20, PY + PH + 62, "start", 11, NULL,
         "first result (median delay, line to max)");
    fprintf(f,
            "<circle cx=\"%d\" cy=\"%d\" r=\"6\" fill=\"none\" "
            "stroke=\"#c60\" stroke-width=\"2\"/>\n",
            LX + 10, PY + PH + 76);
    text(f, p, LX + 20, PY + PH + 80, "start", 11, NULL,
         "in some result (refires too)");
}

/* The trade-off chart: per candidate, the share of records on time (dot)
 * and in some result (ring) against the result delay (log scale). */
static void tradeoff(FILE *f, placer *p, const tdm__an_cand *c, int n)
{
    axes a;
    tradeoff_frame(f, p);
    if (!tradeoff_axes(c, n, &a)) {
        text(f, p, LX + LW / 2.0, PY + PH / 2.0, "middle", 13, NULL,
             n ? "every window fired only at the end of input"
               : "no what-if replay (see --sample)");
        return;
    }
    tradeoff_ticks(f, p, &a);
    /* The recommendation's label first: it matters most. */
    for (int i = 0; i < n; i++)
        if (plotted(&c[i]) && (c[i].role & TDM__AN_ROLE_RECO))
            tradeoff_reco(f, p, &c[i], &a);
    for (int i = 0; i < n; i++)
        if (plotted(&c[i]))
            tradeoff_point(f, p, c, i, &a);
    tradeoff_legend(f, p);
}

/* ---- The lag histogram ---- */

/* The histogram's bars: power-of-two buckets [0], [1], [2, 3] ... */
typedef struct bars {
    uint64_t cnt[66];
    int nb;
    double bw; /* bar width */
} bars;

/* The x of the middle of the bucket holding @p v. */
static double bar_x(const bars *b, int64_t v)
{
    int k = 0;
    while (k + 1 < b->nb && ((int64_t)1 << k) <= v)
        k++;
    return RX + k * b->bw + b->bw / 2;
}

static void lag_frame(FILE *f, placer *p)
{
    text(f, p, RX + RW / 2.0, PY - 20, "middle", 15, "font-weight=\"bold\"",
         "Out-of-orderness histogram");
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"none\" stroke=\"#444\"/>\n",
            RX, PY, RW, PH);
    text(f, p, RX + RW / 2.0, PY + PH + 40, "middle", 12, NULL,
         "lag behind the partition's highest timestamp (log scale)");
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
            "font-size=\"12\" transform=\"rotate(-90 %d %d)\">",
            RX - 50, PY + PH / 2, RX - 50, PY + PH / 2);
    esc(f, "records (log scale)");
    fputs("</text>\n", f);
}

/* Counts per power-of-two bucket up to the maximum. */
static void lag_bars(const tdm__cli_hist *h, bars *b)
{
    int i = 0;
    int64_t lo = 0, hi = 0;
    b->nb = 0;
    while (lo <= h->max && b->nb < 66) {
        uint64_t c = 0;
        while (i < TDM__CLI_HIST_BUCKETS && tdm__cli_hist_bucket_low(i) <= hi)
            c += h->b[i++];
        b->cnt[b->nb++] = c;
        if (hi >= INT64_MAX / 2)
            break;
        lo = hi + 1;
        hi = 2 * lo - 1;
    }
    b->bw = (double)RW / b->nb;
}

/* The bars, the x labels where they fit, the y decades. */
static void lag_draw(FILE *f, placer *p, const bars *b)
{
    char buf[64], d1[32], d2[32];
    uint64_t cmax = 1;
    for (int k = 0; k < b->nb; k++)
        if (b->cnt[k] > cmax)
            cmax = b->cnt[k];
    double decades = ceil(log10((double)cmax + 1));
    if (decades < 1)
        decades = 1;
    for (int k = 0; k < b->nb; k++) {
        int64_t blo = k == 0 ? 0 : (int64_t)1 << (k - 1);
        int64_t bhi = k == 0 ? 0 : 2 * blo - 1;
        double x = RX + k * b->bw + b->bw / 2;
        line(f, x, PY + PH, x, PY + PH + 4, "stroke=\"#444\"");
        text_at(f, p, x, PY + PH + 16, "middle", 10, "class=\"htick\"",
                tdm__analyze_fmt_dur(blo, buf, sizeof buf), 0);
        if (b->cnt[k] == 0)
            continue;
        double hgt = PH * log10((double)b->cnt[k] + 1) / decades;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\" fill=\"#6a9\"><title>",
                RX + k * b->bw + 1, PY + PH - hgt,
                b->bw > 3 ? b->bw - 2 : b->bw, hgt);
        snprintf(buf, sizeof buf, "%s..%s: %" PRIu64 " records",
                 tdm__analyze_fmt_dur(blo, d1, sizeof d1),
                 tdm__analyze_fmt_dur(bhi, d2, sizeof d2), b->cnt[k]);
        esc(f, buf);
        fputs("</title></rect>\n", f);
    }
    for (int d = 0; d <= (int)decades; d++) {
        double y = PY + PH - PH * d / decades;
        line(f, RX - 5, y, RX, y, "stroke=\"#444\"");
        snprintf(buf, sizeof buf, "%.0f", pow(10, d));
        text_at(f, p, RX - 8, y + 4, "end", 10, NULL, buf, 0);
    }
}

/* A vertical mark at lag @p v with a label near the top. */
static void lag_mark(FILE *f, placer *p, const bars *b, int64_t v,
                     const char *name, const char *color, const char *cls,
                     int row)
{
    char style[128], buf[64], d1[32];
    double x = bar_x(b, v);
    snprintf(style, sizeof style,
             "class=\"%s\" stroke=\"%s\" stroke-dasharray=\"5,3\"", cls, color);
    line(f, x, PY, x, PY + PH, style);
    snprintf(buf, sizeof buf, "%s %s", name,
             tdm__analyze_fmt_dur(v, d1, sizeof d1));
    snprintf(style, sizeof style, "class=\"lbl\" fill=\"%s\"", color);
    /* Right of the line, or left of it near the right edge. */
    bool left = x + 3 + box_of(0, 0, "start", 11, buf).x1 > RX + RW;
    text_at(f, p, left ? x - 3 : x + 3, PY + 14 + 14 * row,
            left ? "end" : "start", 11, style, buf, 3);
}

static void lag_chart(FILE *f, placer *p, const tdm__cli_hist *h,
                      const tdm__an_reco *r)
{
    bars b;
    lag_frame(f, p);
    if (h->n == 0) {
        text(f, p, RX + RW / 2.0, PY + PH / 2.0, "middle", 13, NULL,
             "no records");
        return;
    }
    lag_bars(h, &b);
    lag_draw(f, p, &b);
    if (r)
        lag_mark(f, p, &b, r->bound, "bound", "#080", "reco", 0);
    if (r && r->lateness > 0)
        lag_mark(f, p, &b, r->bound + r->lateness, "bound+lateness", "#0a6",
                 "reco", 1);
    lag_mark(f, p, &b, tdm__cli_hist_quantile(h, 0.99), "P99", "#c00", "pmark",
             2);
    lag_mark(f, p, &b, tdm__cli_hist_quantile(h, 0.999), "P99.9", "#808",
             "pmark", 3);
    lag_mark(f, p, &b, h->max, "max", "#333", "maxlag", 4);
}

/* Writes the plot (see analyze.h). */
int tdm__analyze_svg(FILE *f, const tdm__an_scan *s, const tdm__an_reco *r,
                     const tdm__an_cand *cands, int n_cands)
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
    placer *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    tradeoff(f, p, cands, n_cands);
    lag_chart(f, p, &s->lag, r);
    free(p);
    fputs("</svg>\n", f);
    return ferror(f) ? -1 : 0;
}
