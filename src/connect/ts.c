/* SPDX-License-Identifier: MIT */
/* ts.c - event timestamps from input values: integers, decimals and
 * doubles in ms, s, us or ns, and ISO-8601 text, all to epoch ms.
 *
 * Every conversion is exact or rounds down (towards the past), and every
 * overflow is reported as TDM_ERR_RANGE rather than wrapped: a timestamp
 * in seconds that does not fit in int64 milliseconds must not become a
 * plausible-looking date.  INT64_MIN ms is refused because it is
 * TDM_TIME_MIN, "no timestamp".  Calendar arithmetic is done here (no
 * timegm), for years 0000-9999 of the proleptic Gregorian calendar.
 */
#include <math.h>
#include <string.h>

#include "connect/conn.h"

/* The configuration name of a timestamp unit. */
const char *tdm__conn_unit_name(int unit)
{
    switch (unit) {
    case TDM__UNIT_MS:
        return "ms";
    case TDM__UNIT_S:
        return "s";
    case TDM__UNIT_US:
        return "us";
    case TDM__UNIT_NS:
        return "ns";
    case TDM__UNIT_ISO8601:
        return "iso8601";
    default:
        return "?";
    }
}

/* Floor division for a positive divisor. */
static int64_t floor_div(int64_t a, int64_t d)
{
    int64_t q = a / d;
    if (a % d != 0 && a < 0)
        q--;
    return q;
}

/* Converts an integer count of @p unit to epoch ms.  Returns TDM_OK,
 * TDM_ERR_RANGE (overflow, or the TDM_TIME_MIN sentinel), TDM_ERR_PARSE
 * (unit is ISO8601 or unknown: an integer is not ISO-8601 text). */
tdm_err tdm__ts_from_int(int64_t v, int unit, tdm_time_ms *out)
{
    int64_t ms;

    switch (unit) {
    case TDM__UNIT_MS:
        ms = v;
        break;
    case TDM__UNIT_S:
        if (__builtin_mul_overflow(v, (int64_t)1000, &ms))
            return TDM_ERR_RANGE;
        break;
    case TDM__UNIT_US:
        ms = floor_div(v, 1000);
        break;
    case TDM__UNIT_NS:
        ms = floor_div(v, 1000000);
        break;
    default:
        return TDM_ERR_PARSE;
    }
    if (ms == TDM_TIME_MIN)
        return TDM_ERR_RANGE;
    *out = ms;
    return TDM_OK;
}

/* Converts a double count of @p unit to epoch ms, rounding down; a
 * product within a microsecond of an integer is taken as that integer
 * (1733133600.123 s is 1733133600123 ms although the double is a hair
 * below).  Returns TDM_OK, TDM_ERR_RANGE, TDM_ERR_PARSE (ISO8601). */
tdm_err tdm__ts_from_double(double d, int unit, tdm_time_ms *out)
{
    double x, r;

    switch (unit) {
    case TDM__UNIT_MS:
        x = d;
        break;
    case TDM__UNIT_S:
        x = d * 1000.0;
        break;
    case TDM__UNIT_US:
        x = d / 1000.0;
        break;
    case TDM__UNIT_NS:
        x = d / 1000000.0;
        break;
    default:
        return TDM_ERR_PARSE;
    }
    if (!isfinite(x))
        return TDM_ERR_RANGE;
    r = round(x);
    x = fabs(x - r) < 1e-3 ? r : floor(x);
    /* 2^63 is exactly representable; int64 holds (-2^63, 2^63). */
    if (x >= 9223372036854775808.0 || x <= -9223372036854775808.0)
        return TDM_ERR_RANGE;
    *out = (int64_t)x;
    return TDM_OK;
}

/* ---- Decimal text ---- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Parses "[+-]digits[.digits]" in @p unit exactly: the magnitude is cut
 * to whole ms (t) and a flag says whether anything was cut (r), so that
 * negative values round down too. */
static tdm_err decimal_to_ms(const char *s, size_t len, int unit,
                             tdm_time_ms *out)
{
    const uint64_t lim = (uint64_t)1 << 63; /* |INT64_MIN| */
    size_t i = 0, int_beg, frac_beg = 0, frac_len = 0;
    bool neg = false, cut = false;
    uint64_t iv = 0, t;

    if (i < len && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    int_beg = i;
    while (i < len && is_digit(s[i])) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (iv > (lim - d) / 10)
            return TDM_ERR_RANGE;
        iv = iv * 10 + d;
        i++;
    }
    if (i == int_beg)
        return TDM_ERR_PARSE;
    if (i < len && s[i] == '.') {
        frac_beg = ++i;
        while (i < len && is_digit(s[i]))
            i++;
        frac_len = i - frac_beg;
        if (frac_len == 0)
            return TDM_ERR_PARSE;
    }
    if (i != len)
        return TDM_ERR_PARSE;
    switch (unit) {
    case TDM__UNIT_MS:
        t = iv;
        break;
    case TDM__UNIT_S:
        if (iv > lim / 1000)
            return TDM_ERR_RANGE;
        t = iv * 1000;
        for (size_t k = 0; k < 3; k++) /* the first three fraction digits */
            t += (uint64_t)(k < frac_len ? s[frac_beg + k] - '0' : 0) *
                 (k == 0   ? 100
                  : k == 1 ? 10
                           : 1);
        frac_beg += frac_len < 3 ? frac_len : 3;
        frac_len -= frac_len < 3 ? frac_len : 3;
        break;
    case TDM__UNIT_US:
        t = iv / 1000;
        cut = iv % 1000 != 0;
        break;
    case TDM__UNIT_NS:
        t = iv / 1000000;
        cut = iv % 1000000 != 0;
        break;
    default:
        return TDM_ERR_PARSE;
    }
    for (size_t k = 0; k < frac_len; k++)
        cut = cut || s[frac_beg + k] != '0';
    if (neg) {
        /* -(t + cut) must be above INT64_MIN (the "no timestamp" value). */
        if (t + cut >= lim)
            return TDM_ERR_RANGE;
        *out = -(int64_t)(t + cut);
    } else {
        if (t >= lim)
            return TDM_ERR_RANGE;
        *out = (int64_t)t;
    }
    return TDM_OK;
}

/* ---- ISO-8601 ---- */

/* Reads exactly @p n digits at s[*i]; -1 if they are not there. */
static int read_digits(const char *s, size_t len, size_t *i, int n)
{
    int v = 0;
    if (*i + (size_t)n > len)
        return -1;
    for (int k = 0; k < n; k++) {
        char c = s[*i + (size_t)k];
        if (!is_digit(c))
            return -1;
        v = v * 10 + (c - '0');
    }
    *i += (size_t)n;
    return v;
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* Days since 0000-03-01 (shifted by 400 years so that nothing is
 * negative).  Counting years from March puts the leap day at the end of a
 * year: the days before month mp (March = 0) are then (153 * mp + 2) / 5,
 * because the month lengths from March repeat 31 30 31 30 31 in two runs
 * of five months (153 days each); the leap days before year y are
 * y/4 - y/100 + y/400. */
static int64_t days_from_march_epoch(int y, int m, int d)
{
    int64_t yy = (int64_t)y + 400 - (m <= 2);
    int64_t mp = m <= 2 ? m + 9 : m - 3;
    return yy * 365 + yy / 4 - yy / 100 + yy / 400 + (153 * mp + 2) / 5 +
           (d - 1);
}

/* Days from 1970-01-01 to y-m-d (negative before). */
static int64_t days_from_civil(int y, int m, int d)
{
    return days_from_march_epoch(y, m, d) - days_from_march_epoch(1970, 1, 1);
}

/* Parses "YYYY-MM-DD(T|t| )hh:mm[:ss[(.|,)fraction]](Z|z|+hh:mm|-hh:mm)"
 * into epoch ms (the fraction is cut to ms, i.e. rounded down). */
static tdm_err iso_to_ms(const char *s, size_t len, tdm_time_ms *out)
{
    size_t i = 0;
    int y, mo, d, h, mi, sec = 0, ms = 0, off = 0;

    if ((y = read_digits(s, len, &i, 4)) < 0 || i >= len || s[i++] != '-' ||
        (mo = read_digits(s, len, &i, 2)) < 0 || i >= len || s[i++] != '-' ||
        (d = read_digits(s, len, &i, 2)) < 0)
        return TDM_ERR_PARSE;
    if (i >= len || (s[i] != 'T' && s[i] != 't' && s[i] != ' '))
        return TDM_ERR_PARSE;
    i++;
    if ((h = read_digits(s, len, &i, 2)) < 0 || i >= len || s[i++] != ':' ||
        (mi = read_digits(s, len, &i, 2)) < 0)
        return TDM_ERR_PARSE;
    if (i < len && s[i] == ':') {
        i++;
        if ((sec = read_digits(s, len, &i, 2)) < 0)
            return TDM_ERR_PARSE;
        if (i < len && (s[i] == '.' || s[i] == ',')) {
            size_t beg = ++i;
            while (i < len && is_digit(s[i])) {
                if (i - beg < 3)
                    ms = ms * 10 + (s[i] - '0');
                i++;
            }
            if (i == beg)
                return TDM_ERR_PARSE;
            for (size_t k = i - beg; k < 3; k++)
                ms *= 10;
        }
    }
    if (i >= len)
        return TDM_ERR_PARSE; /* a zone is required */
    if (s[i] == 'Z' || s[i] == 'z') {
        i++;
    } else if (s[i] == '+' || s[i] == '-') {
        int sign = s[i++] == '-' ? -1 : 1, oh, om;
        if ((oh = read_digits(s, len, &i, 2)) < 0 || i >= len ||
            s[i++] != ':' || (om = read_digits(s, len, &i, 2)) < 0 || oh > 23 ||
            om > 59)
            return TDM_ERR_PARSE;
        off = sign * (oh * 60 + om);
    } else {
        return TDM_ERR_PARSE;
    }
    if (i != len || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
        h > 23 || mi > 59 || sec > 59)
        return TDM_ERR_PARSE;
    /* Local time minus the offset is UTC. */
    *out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi - off) *
               (int64_t)60000 +
           sec * 1000 + ms;
    return TDM_OK;
}

/* Converts timestamp text to epoch ms: ISO-8601 for TDM__UNIT_ISO8601,
 * else a decimal number of the unit ("1733133600", "1733133600.25",
 * "-5"), exact and rounded down.  Surrounding blanks are ignored.
 * Returns TDM_OK, TDM_ERR_PARSE (not a timestamp), TDM_ERR_RANGE. */
tdm_err tdm__ts_from_text(const char *s, size_t len, int unit, tdm_time_ms *out)
{
    while (len > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (unit == TDM__UNIT_ISO8601)
        return iso_to_ms(s, len, out);
    return decimal_to_ms(s, len, unit, out);
}
