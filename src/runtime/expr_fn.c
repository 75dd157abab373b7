/* SPDX-License-Identifier: MIT */
/* expr_fn.c - the run-time bodies of the expression language's scalar
 * functions on numbers and strings, and CAST (the time functions are in
 * expr_time.c).  The compiler (expr_parse.c) has checked every
 * argument's type, so a body only computes.
 *
 * Nulls: any null argument makes the result null (checked once, here,
 * before a body runs); COALESCE, NULLIF, CASE, IN and BETWEEN, which see
 * nulls, are instructions of their own in expr_eval.c.  A result a body
 * cannot give (an int64 that overflows, a string that is not a number,
 * an invalid LIKE pattern) is null as well: evaluation never fails.
 *
 * Strings are (pointer, length) in UTF-8.  Lengths and positions
 * (CHAR_LENGTH, SUBSTRING, LIKE's '_') count code points: every byte
 * that is not a continuation byte (10xxxxxx) starts one, so invalid
 * UTF-8 is counted, never rejected.  SUBSTRING and TRIM return a slice
 * of their argument; LOWER, UPPER, CONCAT and CAST to a string build
 * their result in the caller's scratch (expr.h), and give null when it
 * is full.  LOWER and UPPER map the letters of ASCII, Latin-1 and the
 * basic Cyrillic block (each to a letter of the same length in bytes)
 * and leave every other character as it is.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/decimal.h"
#include "runtime/expr_fn.h"

/* ---- Scratch and UTF-8 ---- */

char *tdm__expr_scratch_take(tdm__expr_scratch *sc, size_t n)
{
    if (n > sizeof sc->buf - sc->used)
        return NULL;
    char *out = sc->buf + sc->used;
    sc->used += (uint32_t)n;
    return out;
}

static bool cont_byte(unsigned char c)
{
    return (c & 0xc0) == 0x80;
}

/* The byte after the code point starting at s[i] (of @p len). */
static uint32_t cp_next(const char *s, uint32_t len, uint32_t i)
{
    i++;
    while (i < len && cont_byte((unsigned char)s[i]))
        i++;
    return i;
}

static int64_t cp_count(const char *s, uint32_t len)
{
    int64_t n = 0;
    for (uint32_t i = 0; i < len; i++)
        n += !cont_byte((unsigned char)s[i]);
    return n;
}

/* The byte offset of code point @p k (0-based), or len past the end. */
static uint32_t cp_offset(const char *s, uint32_t len, int64_t k)
{
    uint32_t i = 0;
    while (k > 0 && i < len) {
        i = cp_next(s, len, i);
        k--;
    }
    return i;
}

static void set_str(tdm__expr_val *v, const char *p, uint32_t len)
{
    v->u.s.p = p;
    v->u.s.len = len;
}

/* ---- Numbers ---- */

/* The shortest decimal digits that read back as @p d (finite, not 0):
 * digits[0..return) and the exponent of the first digit. */
static int shortest_digits(double d, char *digits, int *exp10)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, fabs(d));
        if (strtod(buf, NULL) == fabs(d) || prec == 17)
            break;
    }
    int n = 0;
    const char *c = buf;
    for (; *c && *c != 'e'; c++)
        if (isdigit((unsigned char)*c))
            digits[n++] = *c;
    *exp10 = atoi(c + 1);
    while (n > 1 && digits[n - 1] == '0')
        n--;
    return n;
}

/* ROUND(d, places) half away from zero on the shortest decimal form of
 * d (so ROUND(2.675, 2) is 2.68, as Flink's BigDecimal rounding). */
static double round_dbl(double d, int64_t places)
{
    if (d == 0 || !isfinite(d) || places > 400)
        return d;
    char dig[20], buf[48];
    int e;
    int n = shortest_digits(d, dig, &e);
    int64_t keep = e + 1 + (places < -400 ? -400 : places);
    if (keep >= n)
        return d;
    if (keep < 0)
        return 0;
    bool up = dig[keep] >= '5';
    int k = (int)keep;
    while (up && k > 0) {
        if (dig[k - 1] == '9') {
            k--; /* 9 rounds up to 0: drop it and carry */
            continue;
        }
        dig[k - 1]++;
        up = false;
    }
    if (up) { /* carried out of the first digit: 0.1e(e + 2) */
        snprintf(buf, sizeof buf, "%s0.1e%d", d < 0 ? "-" : "", e + 2);
        return strtod(buf, NULL);
    }
    if (k == 0)
        return 0;
    snprintf(buf, sizeof buf, "%s0.%.*se%d", d < 0 ? "-" : "", k, dig, e + 1);
    return strtod(buf, NULL);
}

/* ROUND(i, places): places >= 0 keeps i; below, half away from zero to
 * a multiple of 10^-places; null when that overflows. */
static void round_int(tdm__expr_val *v, int64_t places)
{
    if (places >= 0)
        return;
    if (places < -18) {
        v->u.i = 0;
        return;
    }
    int64_t m = 1;
    for (int64_t k = 0; k < -places; k++)
        m *= 10;
    int64_t q = v->u.i / m, r = v->u.i % m;
    if (r >= m - r)
        q++;
    else if (-r >= m + r)
        q--;
    v->null = __builtin_mul_overflow(q, m, &v->u.i);
}

static void numeric_fn(int fn, tdm__expr_val *v, int n)
{
    switch (fn) {
    case TDM__FN_ABS_I:
        v->null = v->u.i == INT64_MIN; /* -INT64_MIN does not fit */
        v->u.i = v->null || v->u.i >= 0 ? v->u.i : -v->u.i;
        break;
    case TDM__FN_ABS_D:
        v->u.d = fabs(v->u.d);
        break;
    case TDM__FN_ROUND_I:
        round_int(v, n > 1 ? v[1].u.i : 0);
        break;
    case TDM__FN_ROUND_D:
        v->u.d = round_dbl(v->u.d, n > 1 ? v[1].u.i : 0);
        break;
    case TDM__FN_FLOOR_D:
        v->u.d = floor(v->u.d);
        break;
    case TDM__FN_DECIMAL_D: { /* rounded to s places; null beyond p */
        double p10 = (double)tdm__dec_pow10((int)v[2].u.i), r;
        if (tdm__dec_round_fast(v->u.d * p10, &r))
            v->u.d = r / p10;
        else
            v->u.d = round_dbl(v->u.d, v[2].u.i);
        v->null = !(fabs(v->u.d) <
                    (double)tdm__dec_pow10((int)(v[1].u.i - v[2].u.i)));
        break;
    }
    default: /* TDM__FN_CEIL_D */
        v->u.d = ceil(v->u.d);
        break;
    }
}

/* ---- Strings ---- */

/* The case partner of code point @p c for LOWER (@p up false) or UPPER,
 * or c itself (see the header). */
static uint32_t map_case(uint32_t c, bool up)
{
    uint32_t lo = up ? 'a' : 'A';
    if (c >= lo && c <= lo + 25)
        return up ? c - 32 : c + 32;
    uint32_t l1 = up ? 0xe0 : 0xc0; /* Latin-1, but not the signs */
    if (c >= l1 && c <= l1 + 0x1e && c != l1 + 0x17)
        return up ? c - 32 : c + 32;
    if (up && c >= 0x430 && c <= 0x44f)
        return c - 32;
    if (up && c >= 0x450 && c <= 0x45f)
        return c - 80;
    if (!up && c >= 0x410 && c <= 0x42f)
        return c + 32;
    if (!up && c >= 0x400 && c <= 0x40f)
        return c + 80;
    return c;
}

/* LOWER/UPPER into the scratch: every mapped letter keeps its length. */
static void change_case(tdm__expr_val *v, bool up, tdm__expr_scratch *sc)
{
    uint32_t len = v->u.s.len;
    const unsigned char *s = (const unsigned char *)v->u.s.p;
    unsigned char *o = (unsigned char *)tdm__expr_scratch_take(sc, len);
    if (!o) {
        v->null = 1;
        return;
    }
    for (uint32_t i = 0; i < len; i++) {
        o[i] = s[i];
        if (s[i] < 0x80) {
            o[i] = (unsigned char)map_case(s[i], up);
        } else if ((s[i] & 0xe0) == 0xc0 && i + 1 < len &&
                   cont_byte(s[i + 1])) {
            uint32_t c =
                map_case(((s[i] & 0x1fu) << 6) | (s[i + 1] & 0x3fu), up);
            o[i] = (unsigned char)(0xc0 | (c >> 6));
            o[++i] = (unsigned char)(0x80 | (c & 0x3f));
        }
    }
    set_str(v, (const char *)o, len);
}

/* Whether code point s[i..end) is one of the code points of @p set. */
static bool in_set(const char *s, uint32_t i, uint32_t end,
                   const tdm__expr_val *set)
{
    uint32_t n = end - i;
    const char *c = set->u.s.p;
    for (uint32_t j = 0; j < set->u.s.len;) {
        uint32_t k = cp_next(c, set->u.s.len, j);
        if (k - j == n && memcmp(c + j, s + i, n) == 0)
            return true;
        j = k;
    }
    return false;
}

/* TRIM: 1 arg trims spaces, 2 args (chars, s) any code point of chars. */
static void trim(tdm__expr_val *v, int n, int mode)
{
    static const tdm__expr_val space = {.u.s = {" ", 1}};
    const tdm__expr_val *set = n > 1 ? &v[0] : &space;
    const tdm__expr_val *str = n > 1 ? &v[1] : &v[0];
    const char *s = str->u.s.p;
    uint32_t b = 0, e = str->u.s.len;
    while ((mode & TDM__TRIM_LEADING) && b < e &&
           in_set(s, b, cp_next(s, e, b), set))
        b = cp_next(s, e, b);
    while ((mode & TDM__TRIM_TRAILING) && e > b) {
        uint32_t k = e - 1;
        while (k > b && cont_byte((unsigned char)s[k]))
            k--;
        if (!in_set(s, k, e, set))
            break;
        e = k;
    }
    set_str(v, s + b, e - b);
}

/* SUBSTRING(s, from [, count]): code points from..from+count-1 counted
 * from 1, positions below 1 absent; a negative count is null. */
static void substring(tdm__expr_val *v, int n)
{
    int64_t from = v[1].u.i;
    int64_t to = INT64_MAX; /* one past the last position */
    if (n > 2) {
        if (v[2].u.i < 0) {
            v->null = 1;
            return;
        }
        if (__builtin_add_overflow(from, v[2].u.i, &to))
            to = INT64_MAX;
    }
    if (from < 1)
        from = 1;
    const char *s = v->u.s.p;
    uint32_t len = v->u.s.len;
    if (to <= from) {
        set_str(v, s, 0);
        return;
    }
    uint32_t b = cp_offset(s, len, from - 1);
    uint32_t e =
        to == INT64_MAX ? len : b + cp_offset(s + b, len - b, to - from);
    set_str(v, s + b, e - b);
}

static void concat(tdm__expr_val *v, int n, tdm__expr_scratch *sc)
{
    uint64_t total = 0;
    int nonempty = 0, last = 0;
    for (int k = 0; k < n; k++) {
        total += v[k].u.s.len;
        if (v[k].u.s.len) {
            nonempty++;
            last = k;
        }
    }
    if (nonempty <= 1) { /* borrow the only non-empty one */
        v[0] = v[last];
        return;
    }
    char *o = total <= UINT32_MAX ? tdm__expr_scratch_take(sc, total) : NULL;
    if (!o) {
        v->null = 1;
        return;
    }
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        memcpy(o + at, v[k].u.s.p, v[k].u.s.len);
        at += v[k].u.s.len;
    }
    set_str(v, o, (uint32_t)total);
}

/* LIKE: pattern p against s, '%' any run, '_' one code point, @p esc
 * (0: none) makes the next byte literal.  Returns 1, 0 or -1 when the
 * pattern ends in the escape.  Greedy, backtracking to the last '%'
 * only, which is enough for these two wildcards. */
static int like(const char *s, uint32_t sl, const char *p, uint32_t pl,
                unsigned char esc)
{
    uint32_t i = 0, j = 0, star_j = UINT32_MAX, star_i = 0;
    while (i < sl) {
        unsigned char c = j < pl ? (unsigned char)p[j] : 0;
        if (j < pl && esc && c == esc) {
            if (j + 1 >= pl)
                return -1;
            if (p[j + 1] == s[i]) {
                i++;
                j += 2;
                continue;
            }
        } else if (j < pl && c == '%') {
            star_j = ++j;
            star_i = i;
            continue;
        } else if (j < pl && c == '_') {
            i = cp_next(s, sl, i);
            j = cp_next(p, pl, j);
            continue;
        } else if (j < pl && c == (unsigned char)s[i]) {
            i++;
            j++;
            continue;
        }
        if (star_j == UINT32_MAX)
            return 0;
        star_i = cp_next(s, sl, star_i); /* the last % takes one more */
        i = star_i;
        j = star_j;
    }
    while (j < pl && p[j] == '%')
        j++;
    if (j < pl && esc && (unsigned char)p[j] == esc && j + 1 >= pl)
        return -1;
    return j == pl;
}

static void like_fn(tdm__expr_val *v, int esc)
{
    int r = like(v[0].u.s.p, v[0].u.s.len, v[1].u.s.p, v[1].u.s.len,
                 (unsigned char)esc);
    v->null = r < 0;
    v->u.i = r > 0;
}

/* ---- CAST ---- */

/* s without leading and trailing spaces into buf (NUL-terminated);
 * false when it is empty or longer than @p n - 1. */
static bool trimmed(const tdm__expr_val *v, char *buf, size_t n)
{
    const char *s = v->u.s.p;
    uint32_t b = 0, e = v->u.s.len;
    while (b < e && isspace((unsigned char)s[b]))
        b++;
    while (e > b && isspace((unsigned char)s[e - 1]))
        e--;
    if (e == b || e - b >= n)
        return false;
    memcpy(buf, s + b, e - b);
    buf[e - b] = 0;
    return true;
}

static void str_to_int(tdm__expr_val *v)
{
    char buf[32], *end;
    if (!trimmed(v, buf, sizeof buf)) {
        v->null = 1;
        return;
    }
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    v->null = *end != 0 || errno != 0;
    v->u.i = x;
}

static void str_to_dbl(tdm__expr_val *v)
{
    char buf[64], *end;
    if (!trimmed(v, buf, sizeof buf)) {
        v->null = 1;
        return;
    }
    double d = strtod(buf, &end);
    v->null = *end != 0 || !isfinite(d);
    v->u.d = d;
}

static void str_to_bool(tdm__expr_val *v)
{
    static const char *const yes[] = {"t", "true", "y", "yes", "1"};
    static const char *const no[] = {"f", "false", "n", "no", "0"};
    char buf[8];
    v->null = 1;
    if (!trimmed(v, buf, sizeof buf))
        return;
    for (char *c = buf; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    for (size_t k = 0; k < 5; k++) {
        if (strcmp(buf, yes[k]) == 0 || strcmp(buf, no[k]) == 0) {
            v->null = 0;
            v->u.i = strcmp(buf, yes[k]) == 0;
        }
    }
}

/* A double as Java's Double.toString writes it: the shortest digits,
 * plain for 1e-3 <= |d| < 1e7 ("100.0", "0.001"), else "1.0E7". */
static int fmt_double(double d, char *o)
{
    if (d == 0)
        return sprintf(o, "%s0.0", signbit(d) ? "-" : "");
    char dig[20];
    int e, n = shortest_digits(d, dig, &e), w = 0;
    if (d < 0)
        o[w++] = '-';
    if (e < -3 || e >= 7) {
        o[w++] = dig[0];
        o[w++] = '.';
        for (int k = 1; k < (n > 1 ? n : 2); k++)
            o[w++] = k < n ? dig[k] : '0';
        return w + sprintf(o + w, "E%d", e);
    }
    if (e < 0) { /* 0.00ddd */
        w += sprintf(o + w, "0.");
        for (int k = e + 1; k < 0; k++)
            o[w++] = '0';
        memcpy(o + w, dig, (size_t)n);
        return w + n;
    }
    for (int k = 0; k <= e; k++) /* the integer part, zero-padded */
        o[w++] = k < n ? dig[k] : '0';
    o[w++] = '.';
    if (n <= e + 1)
        o[w++] = '0';
    for (int k = e + 1; k < n; k++)
        o[w++] = dig[k];
    return w;
}

static void to_string(tdm__expr_val *v, int from, tdm__expr_scratch *sc)
{
    char buf[48];
    int n;
    if (from == TDM__EXPR_STRING)
        return;
    if (from == TDM__EXPR_BOOL)
        n = sprintf(buf, "%s", v->u.i ? "TRUE" : "FALSE");
    else if (from == TDM__EXPR_DOUBLE)
        n = fmt_double(v->u.d, buf);
    else
        n = sprintf(buf, "%lld", (long long)v->u.i);
    char *o = tdm__expr_scratch_take(sc, (size_t)n);
    if (!o) {
        v->null = 1;
        return;
    }
    memcpy(o, buf, (size_t)n);
    set_str(v, o, (uint32_t)n);
}

/* A double to int64, truncated toward zero; null out of range. */
static void dbl_to_int(tdm__expr_val *v)
{
    double d = v->u.d;
    v->null = !(d > -9223372036854775809.0 && d < 9223372036854775808.0);
    v->u.i = v->null ? 0 : (int64_t)d;
}

static void to_int(tdm__expr_val *v, int from)
{
    if (from == TDM__EXPR_DOUBLE)
        dbl_to_int(v);
    else if (from == TDM__EXPR_STRING)
        str_to_int(v);
}

static void cast(tdm__expr_val *v, int mode, tdm__expr_scratch *sc)
{
    int from = mode & 7, to = mode >> 3;
    switch (to) {
    case TDM__CAST_BIGINT:
        to_int(v, from);
        break;
    case TDM__CAST_INT:
        to_int(v, from);
        v->null |= v->u.i < INT32_MIN || v->u.i > INT32_MAX;
        break;
    case TDM__CAST_DOUBLE:
        if (from == TDM__EXPR_STRING)
            str_to_dbl(v);
        else if (from != TDM__EXPR_DOUBLE)
            v->u.d = (double)v->u.i;
        break;
    case TDM__CAST_STRING:
        to_string(v, from, sc);
        break;
    case TDM__CAST_BOOL:
        if (from == TDM__EXPR_STRING)
            str_to_bool(v);
        else if (from == TDM__EXPR_DOUBLE)
            v->u.i = v->u.d != 0;
        else
            v->u.i = v->u.i != 0;
        break;
    default: /* TDM__CAST_TIMESTAMP: strings are parsed */
        if (from == TDM__EXPR_STRING)
            tdm__expr_time_eval(TDM__FN_TO_TS, 0, v, 1, sc);
        break;
    }
}

/* ---- Dispatch ---- */

static bool string_fn(int fn, int mode, tdm__expr_val *v, int n,
                      tdm__expr_scratch *sc)
{
    switch (fn) {
    case TDM__FN_CHAR_LENGTH:
        v->u.i = cp_count(v->u.s.p, v->u.s.len);
        return true;
    case TDM__FN_LOWER:
    case TDM__FN_UPPER:
        change_case(v, fn == TDM__FN_UPPER, sc);
        return true;
    case TDM__FN_TRIM:
        trim(v, n, mode);
        return true;
    case TDM__FN_SUBSTRING:
        substring(v, n);
        return true;
    case TDM__FN_CONCAT:
        concat(v, n, sc);
        return true;
    case TDM__FN_LIKE:
        like_fn(v, mode);
        return true;
    case TDM__FN_CAST:
        cast(v, mode, sc);
        return true;
    }
    return false;
}

void tdm__expr_fn_eval(int fn, int mode, tdm__expr_val *v, int n,
                       tdm__expr_scratch *sc)
{
    for (int k = 0; k < n; k++) {
        if (v[k].null) {
            v->null = 1;
            return;
        }
    }
    if (fn <= TDM__FN_DECIMAL_D)
        numeric_fn(fn, v, n);
    else if (!string_fn(fn, mode, v, n, sc))
        tdm__expr_time_eval(fn, mode, v, n, sc);
    if (!v->null && fn == TDM__FN_ROUND_D)
        v->null = !isfinite(v->u.d);
}
