/* SPDX-License-Identifier: MIT */
/* decimal.c - exact DECIMAL(p, s) values as scaled int64.
 *
 * A double cannot hold 0.1, so a sum of prices read as doubles prints
 * 1658.1999999999998 where Flink's DECIMAL prints 1658.20.  A decimal
 * field instead keeps value * 10^s in an int64: 18 digits always fit
 * (p <= 18), sums stay exact, and printing is integer formatting with a
 * point put s digits from the right.  Text is read digit by digit, never
 * through a double, so "0.1" is exactly 10 at scale 2.  Digits beyond
 * the scale round half away from zero (Flink's CAST to DECIMAL, Java's
 * RoundingMode.HALF_UP); more integer digits than p - s is a range
 * error, which the parsers turn into a bad record naming the field.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/decimal.h"

static const int64_t pow10_tab[19] = {1LL,
                                      10LL,
                                      100LL,
                                      1000LL,
                                      10000LL,
                                      100000LL,
                                      1000000LL,
                                      10000000LL,
                                      100000000LL,
                                      1000000000LL,
                                      10000000000LL,
                                      100000000000LL,
                                      1000000000000LL,
                                      10000000000000LL,
                                      100000000000000LL,
                                      1000000000000000LL,
                                      10000000000000000LL,
                                      100000000000000000LL,
                                      1000000000000000000LL};

int64_t tdm__dec_pow10(int s)
{
    return s < 0 ? 1 : s > 18 ? pow10_tab[18] : pow10_tab[s];
}

bool tdm__dec_fits(int64_t v, int p)
{
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    return p >= 19 || m < (uint64_t)tdm__dec_pow10(p);
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads the digits: the magnitude at scale s in *m (refusing more than
 * 19 significant digits), whether a dropped digit rounds up. */
static tdm_err read_digits(const char *t, size_t len, int s, uint64_t *m)
{
    size_t i = 0, digits = 0;
    int frac = -1; /* fractional digits taken; -1 before the point */
    bool up = false, dropped = false;
    *m = 0;
    for (; i < len; i++) {
        char c = t[i];
        if (c == '.' && frac < 0) {
            frac = 0;
            continue;
        }
        if (!is_digit(c))
            return TDM_ERR_PARSE;
        digits++;
        if (frac >= s) { /* beyond the scale: only the first counts */
            if (!dropped)
                up = c >= '5';
            dropped = true;
            continue;
        }
        if (frac >= 0)
            frac++;
        if (*m > (UINT64_MAX - 9) / 10)
            return TDM_ERR_RANGE;
        *m = *m * 10 + (uint64_t)(c - '0');
    }
    if (digits == 0)
        return TDM_ERR_PARSE;
    for (int k = frac < 0 ? 0 : frac; k < s; k++) {
        if (*m > UINT64_MAX / 10)
            return TDM_ERR_RANGE;
        *m *= 10;
    }
    *m += up;
    return TDM_OK;
}

tdm_err tdm__dec_parse(const char *txt, size_t len, int p, int s, int64_t *out)
{
    bool neg = false;
    uint64_t m;
    if (len > 0 && (txt[0] == '-' || txt[0] == '+')) {
        neg = txt[0] == '-';
        txt++;
        len--;
    }
    tdm_err err = read_digits(txt, len, s, &m);
    if (err != TDM_OK)
        return err;
    if (m >= (uint64_t)tdm__dec_pow10(p > 18 ? 18 : p))
        return TDM_ERR_RANGE;
    *out = neg ? -(int64_t)m : (int64_t)m;
    return TDM_OK;
}

size_t tdm__dec_format(char *buf, size_t n, int64_t v, int s)
{
    char tmp[32];
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int k = (int)sizeof tmp, d = 0;
    tmp[--k] = '\0';
    do {
        if (d == s && s > 0)
            tmp[--k] = '.';
        tmp[--k] = (char)('0' + m % 10);
        m /= 10;
        d++;
    } while (d <= s || m > 0);
    if (v < 0)
        tmp[--k] = '-';
    int len = snprintf(buf, n, "%s", tmp + k);
    return len < 0 ? 0 : (size_t)len;
}

double tdm__dec_to_double(int64_t v, int s)
{
    return (double)v / (double)tdm__dec_pow10(s);
}

bool tdm__dec_round_fast(double r, double *out)
{
    double f = fabs(r - trunc(r));
    if (!(fabs(r) < 1e15) || fabs(f - 0.5) <= fabs(r) * 8 * DBL_EPSILON)
        return false;
    *out = round(r);
    return true;
}

/* Through the shortest text that reads back as @p d, so that 0.1 is
 * 0.10 and 2.675 rounds to 2.68 (Java's BigDecimal.valueOf, which Flink's
 * CAST uses); an exponent form is scaled as a double instead. */
bool tdm__dec_from_double(double d, int p, int s, int64_t *out)
{
    char txt[40];
    double r;
    if (!isfinite(d))
        return false;
    if (tdm__dec_round_fast(d * (double)tdm__dec_pow10(s), &r)) {
        if (!tdm__dec_fits((int64_t)r, p))
            return false;
        *out = (int64_t)r;
        return true;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(txt, sizeof txt, "%.*g", prec, d);
        if (strtod(txt, NULL) == d)
            break;
    }
    if (!strchr(txt, 'e'))
        return tdm__dec_parse(txt, strlen(txt), p, s, out) == TDM_OK;
    r = round(d * (double)tdm__dec_pow10(s));
    if (!(fabs(r) < 9.2e18))
        return false;
    if (!tdm__dec_fits((int64_t)r, p))
        return false;
    *out = (int64_t)r;
    return true;
}

bool tdm__dec_rescale(int64_t v, int from, int to, int p, int64_t *out)
{
    int64_t r;
    if (to >= from) {
        if (__builtin_mul_overflow(v, tdm__dec_pow10(to - from), &r))
            return false;
    } else {
        int64_t f = tdm__dec_pow10(from - to);
        r = v / f;
        int64_t rem = v % f;
        if (rem >= (f + 1) / 2)
            r++;
        else if (-rem >= (f + 1) / 2)
            r--;
    }
    if (!tdm__dec_fits(r, p))
        return false;
    *out = r;
    return true;
}
