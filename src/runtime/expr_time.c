/* SPDX-License-Identifier: MIT */
/* expr_time.c - the expression language's time functions on timestamps,
 * which are int64 milliseconds since 1970-01-01 00:00:00 UTC: FLOOR and
 * CEIL to a unit, EXTRACT, TO_TIMESTAMP_LTZ, DATE_FORMAT, TO_TIMESTAMP
 * and UNIX_TIMESTAMP.  Everything is UTC (there is no session time
 * zone) on the proleptic Gregorian calendar.
 *
 * Dates come from a day count through 400-year eras (146097 days each),
 * so any int64 millisecond value converts without a loop or a table.
 *
 * Patterns (DATE_FORMAT, TO_TIMESTAMP) use Java's letters: y year, M
 * month, d day, H hour (0-23), m minute, s second, S fraction of a
 * second; a run of one letter is one field, its length the number of
 * digits (yy: the year's last two, 2000-2099 when parsed; S...S: that
 * many digits of the fraction).  'text' is literal text ('' a quote);
 * other letters are refused; any other character is itself.  Parsing
 * reads a field's exact width when a number field follows it directly,
 * else y reads 1-9 digits (at least its width), S 1-9, the others
 * their width (1: one or two digits); the whole text must be read, and
 * a date or time that does not exist (February 30, hour 24) is null.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/expr_fn.h"

#define MS_PER_DAY 86400000LL

/* ---- Calendar ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return q - ((a % b) != 0 && ((a % b) < 0) != (b < 0));
}

typedef struct civil {
    int64_t y;
    int mo, d, h, mi, s, ms;
} civil;

/* Days since 1970-01-01 of a valid y-mo-d (March-based years, so the
 * leap day ends a year). */
static int64_t days_from_civil(int64_t y, int mo, int d)
{
    y -= mo <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, civil *c)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    c->d = (int)(doy - (153 * mp + 2) / 5 + 1);
    c->mo = (int)(mp < 10 ? mp + 3 : mp - 9);
    c->y = yoe + era * 400 + (c->mo <= 2);
}

static void split(int64_t ts, civil *c)
{
    int64_t days = floor_div(ts, MS_PER_DAY);
    int64_t ms = ts % MS_PER_DAY; /* not ts - days * MS_PER_DAY: overflows */
    ms += ms < 0 ? MS_PER_DAY : 0;
    civil_from_days(days, c);
    c->h = (int)(ms / 3600000);
    c->mi = (int)(ms / 60000 % 60);
    c->s = (int)(ms / 1000 % 60);
    c->ms = (int)(ms % 1000);
}

static bool leap(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static int month_days(int64_t y, int mo)
{
    static const int n[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return mo == 2 && leap(y) ? 29 : n[mo - 1];
}

/* The timestamp of @p c; false when it is not a valid time or does not
 * fit an int64. */
static bool join_civil(const civil *c, int64_t *out)
{
    if (c->mo < 1 || c->mo > 12 || c->d < 1 || c->d > month_days(c->y, c->mo) ||
        c->h > 23 || c->mi > 59 || c->s > 59 || c->y > 300000000 ||
        c->y < -300000000)
        return false;
    int64_t day_ms = ((c->h * 60LL + c->mi) * 60 + c->s) * 1000 + c->ms;
    int64_t t;
    return !__builtin_mul_overflow(days_from_civil(c->y, c->mo, c->d),
                                   MS_PER_DAY, &t) &&
           !__builtin_add_overflow(t, day_ms, out);
}

/* ---- FLOOR, CEIL, EXTRACT ---- */

static const int64_t unit_ms[] = {[TDM__UNIT_SECOND] = 1000,
                                  [TDM__UNIT_MINUTE] = 60000,
                                  [TDM__UNIT_HOUR] = 3600000,
                                  [TDM__UNIT_DAY] = MS_PER_DAY};

/* The start of the unit @p ts is in; false when it does not fit. */
static bool floor_to(int64_t ts, int unit, int64_t *out)
{
    if (unit <= TDM__UNIT_DAY)
        return !__builtin_mul_overflow(floor_div(ts, unit_ms[unit]),
                                       unit_ms[unit], out);
    civil c;
    split(ts, &c);
    c = (civil){.y = c.y, .mo = unit == TDM__UNIT_YEAR ? 1 : c.mo, .d = 1};
    if (unit == TDM__UNIT_QUARTER)
        c.mo = (c.mo - 1) / 3 * 3 + 1;
    return join_civil(&c, out);
}

/* The start of the next unit after @p ts's, or ts when it starts one. */
static bool ceil_to(int64_t ts, int unit, int64_t *out)
{
    if (!floor_to(ts, unit, out))
        return false;
    if (*out == ts)
        return true;
    if (unit <= TDM__UNIT_DAY)
        return !__builtin_add_overflow(*out, unit_ms[unit], out);
    civil c;
    split(*out, &c);
    int step = unit == TDM__UNIT_YEAR ? 12 : unit == TDM__UNIT_QUARTER ? 3 : 1;
    c.mo += step;
    if (c.mo > 12) {
        c.mo -= 12;
        c.y++;
    }
    return join_civil(&c, out);
}

static int64_t extract(int64_t ts, int unit)
{
    civil c;
    split(ts, &c);
    switch (unit) {
    case TDM__UNIT_SECOND:
        return c.s;
    case TDM__UNIT_MINUTE:
        return c.mi;
    case TDM__UNIT_HOUR:
        return c.h;
    case TDM__UNIT_DAY:
        return c.d;
    case TDM__UNIT_MONTH:
        return c.mo;
    case TDM__UNIT_QUARTER:
        return (c.mo - 1) / 3 + 1;
    case TDM__UNIT_YEAR:
        return c.y;
    case TDM__UNIT_DOW: { /* 1970-01-01 was a Thursday (5) */
        int64_t k = floor_div(ts, MS_PER_DAY) + 4;
        return k - floor_div(k, 7) * 7 + 1;
    }
    default: /* TDM__UNIT_DOY */
        return days_from_civil(c.y, c.mo, c.d) - days_from_civil(c.y, 1, 1) + 1;
    }
}

/* ---- Patterns ---- */

/* One element of a pattern at p[*i]: a field (letter, count) or literal
 * bytes (lit, lit_len; a quoted run may hold '' for a quote). */
typedef struct pat_el {
    char letter; /* 0: literal */
    int count;
    const char *lit;
    size_t lit_len;
    bool quoted;
} pat_el;

static bool is_field(char c)
{
    return c == 'y' || c == 'M' || c == 'd' || c == 'H' || c == 'm' ||
           c == 's' || c == 'S';
}

/* Reads the element at *i; false (with *i at the bad byte) for an
 * unsupported letter, a field too wide or an unterminated quote. */
static bool pat_next(const char *p, size_t len, size_t *i, pat_el *el)
{
    size_t j = *i;
    char c = p[j];
    *el = (pat_el){0};
    if (c == '\'') {
        size_t k = j + 1;
        while (k < len && (p[k] != '\'' || (k + 1 < len && p[k + 1] == '\'')))
            k += p[k] == '\'' ? 2 : 1;
        if (k >= len)
            return false;
        *el = (pat_el){0, 0, p + j + 1, k - j - 1, true};
        *i = k + 1;
        return true;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        size_t k = j;
        while (k < len && p[k] == c)
            k++;
        int n = (int)(k - j);
        if (!is_field(c) || (c != 'y' && c != 'S' && n > 2) || n > 9)
            return false;
        *el = (pat_el){c, n, NULL, 0, false};
        *i = k;
        return true;
    }
    *el = (pat_el){0, 0, p + j, 1, false};
    *i = j + 1;
    return true;
}

bool tdm__expr_time_pattern_ok(const char *fmt, size_t len, size_t *bad)
{
    pat_el el;
    for (size_t i = 0; i < len;) {
        *bad = i;
        if (!pat_next(fmt, len, &i, &el))
            return false;
    }
    return true;
}

/* ---- DATE_FORMAT ---- */

typedef struct out {
    char *o;
    size_t cap, n;
} out;

static void put(out *w, const char *s, size_t n)
{
    if (w->n + n <= w->cap)
        memcpy(w->o + w->n, s, n);
    w->n += n;
}

static void put_num(out *w, int64_t v, int width)
{
    char b[32];
    int n = snprintf(b, sizeof b, "%0*lld", width, (long long)v);
    put(w, b, (size_t)n);
}

static void put_field(out *w, const pat_el *el, const civil *c)
{
    switch (el->letter) {
    case 'y':
        if (el->count == 2)
            put_num(w, (c->y % 100 + 100) % 100, 2);
        else
            put_num(w, c->y, el->count);
        return;
    case 'M':
        put_num(w, c->mo, el->count);
        return;
    case 'd':
        put_num(w, c->d, el->count);
        return;
    case 'H':
        put_num(w, c->h, el->count);
        return;
    case 'm':
        put_num(w, c->mi, el->count);
        return;
    case 's':
        put_num(w, c->s, el->count);
        return;
    default: { /* S: the first count digits of the fraction */
        char b[12];
        snprintf(b, sizeof b, "%03d000000", c->ms);
        put(w, b, (size_t)el->count);
    }
    }
}

static void put_literal(out *w, const pat_el *el)
{
    for (size_t k = 0; k < el->lit_len; k++) {
        put(w, el->lit + k, 1);
        if (el->quoted && el->lit[k] == '\'')
            k++; /* '' */
    }
    if (el->quoted && el->lit_len == 0)
        put(w, "'", 1); /* '' alone is a quote */
}

static void date_format(tdm__expr_val *v, tdm__expr_scratch *sc)
{
    civil c;
    split(v[0].u.i, &c);
    const char *p = v[1].u.s.p;
    size_t len = v[1].u.s.len;
    out w = {sc->buf + sc->used, sizeof sc->buf - sc->used, 0};
    pat_el el;
    for (size_t i = 0; i < len;) {
        if (!pat_next(p, len, &i, &el)) {
            v->null = 1;
            return;
        }
        if (el.letter)
            put_field(&w, &el, &c);
        else
            put_literal(&w, &el);
    }
    if (w.n > w.cap) {
        v->null = 1;
        return;
    }
    sc->used += (uint32_t)w.n;
    v->u.s.p = w.o;
    v->u.s.len = (uint32_t)w.n;
}

/* ---- Parsing ---- */

/* Reads min..max digits at s[*i]; false when fewer than min. */
static bool get_num(const char *s, size_t len, size_t *i, int min, int max,
                    int64_t *v, int *ndig)
{
    int n = 0;
    *v = 0;
    while (*i < len && n < max && s[*i] >= '0' && s[*i] <= '9') {
        *v = *v * 10 + (s[*i] - '0');
        (*i)++;
        n++;
    }
    *ndig = n;
    return n >= min;
}

static bool set_field(civil *c, char letter, int count, int64_t v, int ndig)
{
    switch (letter) {
    case 'y':
        c->y = count == 2 ? 2000 + v : v;
        return true;
    case 'M':
        c->mo = (int)v;
        return true;
    case 'd':
        c->d = (int)v;
        return true;
    case 'H':
        c->h = (int)v;
        return true;
    case 'm':
        c->mi = (int)v;
        return true;
    case 's':
        c->s = (int)v;
        return true;
    default: /* S: ndig digits of a fraction, to milliseconds */
        while (ndig > 3) {
            v /= 10;
            ndig--;
        }
        while (ndig < 3) {
            v *= 10;
            ndig++;
        }
        c->ms = (int)v;
        return true;
    }
}

/* Reads the field @p el at s[*i]; @p adjacent: a number field follows. */
static bool get_field(const char *s, size_t len, size_t *i, const pat_el *el,
                      bool adjacent, civil *c)
{
    int min = el->count, max = el->count;
    if (!adjacent && el->letter == 'y' && el->count != 2)
        max = 9;
    else if (!adjacent && el->letter == 'S')
        min = 1, max = 9;
    else if (!adjacent && el->count == 1)
        max = 2;
    int64_t v;
    int nd;
    return get_num(s, len, i, min, max, &v, &nd) &&
           set_field(c, el->letter, el->count, v, nd);
}

static bool get_literal(const char *s, size_t len, size_t *i, const pat_el *el)
{
    for (size_t k = 0; k < el->lit_len; k++) {
        if (*i >= len || s[*i] != el->lit[k])
            return false;
        (*i)++;
        if (el->quoted && el->lit[k] == '\'')
            k++;
    }
    return true;
}

/* Parses s[0..len) with pattern p into a timestamp. */
static bool parse(const char *s, size_t len, const char *p, size_t plen,
                  int64_t *ts)
{
    civil c = {.y = 1970, .mo = 1, .d = 1};
    size_t i = 0;
    pat_el el, nx;
    for (size_t j = 0; j < plen;) {
        if (!pat_next(p, plen, &j, &el))
            return false;
        size_t j2 = j;
        bool adj = j2 < plen && pat_next(p, plen, &j2, &nx) && nx.letter;
        if (el.letter ? !get_field(s, len, &i, &el, adj, &c)
                      : !get_literal(s, len, &i, &el))
            return false;
    }
    return i == len && join_civil(&c, ts);
}

/* The default format: yyyy-MM-dd, then optionally a space or T and
 * HH:mm, :ss and a fraction; spaces around are ignored. */
static bool parse_default(const char *s, size_t len, int64_t *ts)
{
    static const char *const pats[] = {"yyyy-MM-dd HH:mm:ss.S",
                                       "yyyy-MM-dd HH:mm:ss",
                                       "yyyy-MM-dd'T'HH:mm:ss.S",
                                       "yyyy-MM-dd'T'HH:mm:ss",
                                       "yyyy-MM-dd HH:mm",
                                       "yyyy-MM-dd'T'HH:mm",
                                       "yyyy-MM-dd"};
    while (len && s[0] == ' ')
        s++, len--;
    while (len && s[len - 1] == ' ')
        len--;
    for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++)
        if (parse(s, len, pats[k], strlen(pats[k]), ts))
            return true;
    return false;
}

/* v[0] (a string) parsed with v[1]'s pattern when @p n is 2. */
static void to_ts(tdm__expr_val *v, int n)
{
    int64_t ts = 0;
    bool ok =
        n > 1 ? parse(v[0].u.s.p, v[0].u.s.len, v[1].u.s.p, v[1].u.s.len, &ts)
              : parse_default(v[0].u.s.p, v[0].u.s.len, &ts);
    v->null = !ok;
    v->u.i = ts;
}

/* ---- Dispatch ---- */

void tdm__expr_time_eval(int fn, int mode, tdm__expr_val *v, int n,
                         tdm__expr_scratch *sc)
{
    int64_t r = 0;
    switch (fn) {
    case TDM__FN_FLOOR_TS:
        v->null = !floor_to(v->u.i, mode, &r);
        v->u.i = r;
        break;
    case TDM__FN_CEIL_TS:
        v->null = !ceil_to(v->u.i, mode, &r);
        v->u.i = r;
        break;
    case TDM__FN_EXTRACT:
        v->u.i = extract(v->u.i, mode);
        break;
    case TDM__FN_TO_TS_LTZ:
        if (mode == 0)
            v->null = __builtin_mul_overflow(v->u.i, 1000, &v->u.i);
        break;
    case TDM__FN_DATE_FORMAT_S:
        to_ts(v, 1);
        if (!v->null)
            date_format(v, sc);
        break;
    case TDM__FN_DATE_FORMAT:
        date_format(v, sc);
        break;
    case TDM__FN_TO_TS:
        to_ts(v, n);
        break;
    default: /* TDM__FN_UNIX_TS: seconds */
        to_ts(v, n);
        v->u.i = floor_div(v->u.i, 1000);
        break;
    }
}
