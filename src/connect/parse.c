/* SPDX-License-Identifier: MIT */
/* parse.c - what the JSON and CSV parsers share: the check that a line is
 * text and not binary garbage, the wording of reasons ("field 'n':
 * expected an integer, got \"12\""), display forms of bad values, and the
 * event timestamp of a parsed row.
 *
 * Keeping the wording in one place makes a malformed line get the same
 * reason whatever its format, which is what dead-letter files are
 * compared against.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/conn.h"
#include "core/decimal.h"
#include "state/ckpt_codec.h"

/* 1 if the line holds only spaces, tabs and CRs (or nothing). */
int tdm__conn_is_blank(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return 0;
    return 1;
}

/* Length of the valid UTF-8 sequence starting at s[i] (2-4), or 0.
 * Follows RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t len, size_t i)
{
    unsigned char c = s[i];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;

    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates U+D800..U+DFFF */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (i + need >= len)
        return 0;
    if (s[i + 1] < lo || s[i + 1] > hi)
        return 0;
    for (size_t k = 2; k <= need; k++)
        if (s[i + k] < 0x80 || s[i + k] > 0xBF)
            return 0;
    return need + 1;
}

/* Checks a line for binary content (see conn.h).  Plain ASCII is checked
 * eight bytes at a time; a word with a high or control byte is looked at
 * byte by byte. */
int tdm__conn_check_text(const char *p, size_t len, char *reason, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    const uint64_t ones = 0x0101010101010101ULL, highs = ones * 0x80;
    size_t i = 0;

    while (i < len) {
        if (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            /* A byte below 0x20 makes (byte - 0x20) borrow into bit 7
             * while its own bit 7 is clear. */
            if (((w | ((w - ones * 0x20) & ~w)) & highs) == 0) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80) {
            i++;
        } else if (c == '\t' || c == '\r') {
            i++;
        } else if (c == 0) {
            tdm__errf(reason, n, TDM_ERR_PARSE,
                      "binary data: NUL byte at column %zu", i + 1);
            return -1;
        } else if (c < 0x20) {
            tdm__errf(reason, n, TDM_ERR_PARSE,
                      "binary data: control byte 0x%02x at column %zu", c,
                      i + 1);
            return -1;
        } else {
            size_t k = utf8_seq(s, len, i);
            if (k == 0) {
                tdm__errf(reason, n, TDM_ERR_PARSE,
                          "binary data: invalid UTF-8 byte 0x%02x at "
                          "column %zu",
                          c, i + 1);
                return -1;
            }
            i += k;
        }
    }
    return 0;
}

/* Quoted display form of a value for reasons: at most 40 bytes of it,
 * cut at a character boundary, '"' and '\\' escaped, control bytes as
 * \xNN. */
void tdm__conn_quote(char *out, size_t n, const char *p, size_t len)
{
    size_t o = 0, show = len;

    if (n == 0)
        return;
    if (show > 40) {
        show = 40;
        while (show > 0 && ((unsigned char)p[show] & 0xC0) == 0x80)
            show--;
    }
#define PUT(c)                                                                 \
    do {                                                                       \
        if (o + 1 < n)                                                         \
            out[o++] = (c);                                                    \
    } while (0)
    PUT('"');
    for (size_t i = 0; i < show; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            PUT('\\');
            PUT((char)c);
        } else if (c < 0x20 || c == 0x7F) {
            static const char hex[] = "0123456789abcdef";
            PUT('\\');
            PUT('x');
            PUT(hex[c >> 4]);
            PUT(hex[c & 15]);
        } else {
            PUT((char)c);
        }
    }
    PUT('"');
    if (show < len) {
        PUT('.');
        PUT('.');
        PUT('.');
    }
#undef PUT
    out[o] = '\0';
}

/* Shortest of %.15g, %.16g, %.17g that reads back as @p d. */
void tdm__conn_fmt_double(char *out, size_t n, double d)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, d);
        if (prec == 17 || strtod(out, NULL) == d)
            return;
    }
}

/* What a field of @p type expects, for "expected ..." reasons. */
const char *tdm__conn_expected(tdm_type type, int unit)
{
    switch (TDM_TYPE_BASE(type)) {
    case TDM_TYPE_INT64:
        return "an integer";
    case TDM_TYPE_DOUBLE:
        return "a number";
    case TDM_TYPE_STRING:
        return "a string";
    case TDM_TYPE_BOOL:
        return "true or false";
    case TDM_TYPE_DECIMAL:
        return "a decimal number";
    case TDM_TYPE_TIMESTAMP:
        switch (unit) {
        case TDM__UNIT_ISO8601:
            return "ISO-8601 text like \"2026-12-02T10:00:00Z\"";
        case TDM__UNIT_S:
            return "a timestamp in s";
        case TDM__UNIT_US:
            return "a timestamp in us";
        case TDM__UNIT_NS:
            return "a timestamp in ns";
        default:
            return "a timestamp in ms";
        }
    }
    return "a value";
}

/* Reason for a decimal value @p shown that failed with @p err. */
static tdm_err decimal_error(const tdm__field *f, tdm_err err,
                             const char *shown, char *reason, size_t n)
{
    if (err == TDM_ERR_RANGE)
        return tdm__errf(reason, n, TDM_ERR_PARSE,
                         "field '%s': %s is out of range for "
                         "decimal(%d,%d)",
                         f->name, shown, TDM_DECIMAL_PRECISION(f->type),
                         TDM_DECIMAL_SCALE(f->type));
    return tdm__errf(reason, n, TDM_ERR_PARSE,
                     "field '%s': expected a decimal number, got %s", f->name,
                     shown);
}

/* Decimal text for a decimal field; see conn.h. */
tdm_err tdm__conn_decimal(const tdm__field *f, const char *txt, size_t len,
                          int64_t *out, char *reason, size_t n)
{
    char shown[64];
    tdm_err err = tdm__dec_parse(txt, len, TDM_DECIMAL_PRECISION(f->type),
                                 TDM_DECIMAL_SCALE(f->type), out);
    if (err == TDM_OK)
        return TDM_OK;
    tdm__conn_quote(shown, sizeof shown, txt, len);
    return decimal_error(f, err, shown, reason, n);
}

/* An integer for a decimal field; see conn.h. */
tdm_err tdm__conn_decimal_int(const tdm__field *f, int64_t i, int64_t *out,
                              char *reason, size_t n)
{
    char shown[32];
    if (tdm__dec_rescale(i, 0, TDM_DECIMAL_SCALE(f->type),
                         TDM_DECIMAL_PRECISION(f->type), out))
        return TDM_OK;
    snprintf(shown, sizeof shown, "%lld", (long long)i);
    return decimal_error(f, TDM_ERR_RANGE, shown, reason, n);
}

/* A double for a decimal field; see conn.h. */
tdm_err tdm__conn_decimal_double(const tdm__field *f, double d, int64_t *out,
                                 char *reason, size_t n)
{
    char shown[64];
    if (tdm__dec_from_double(d, TDM_DECIMAL_PRECISION(f->type),
                             TDM_DECIMAL_SCALE(f->type), out))
        return TDM_OK;
    tdm__conn_fmt_double(shown, sizeof shown, d);
    return decimal_error(f, TDM_ERR_RANGE, shown, reason, n);
}

/* Reason for a timestamp conversion failure (@p err from tdm__ts_*) of
 * field @p name whose value is displayed as @p shown. */
tdm_err tdm__conn_ts_error(char *reason, size_t n, const char *name,
                           tdm_err err, int unit, const char *shown)
{
    if (err == TDM_ERR_RANGE)
        return tdm__errf(reason, n, TDM_ERR_PARSE,
                         "field '%s': timestamp out of range, got %s "
                         "(unit %s)",
                         name, shown, tdm__conn_unit_name(unit));
    return tdm__errf(reason, n, TDM_ERR_PARSE,
                     "field '%s': expected %s, "
                     "got %s",
                     name, tdm__conn_expected(TDM_TYPE_TIMESTAMP, unit), shown);
}

/* Sets row->ts from the timestamp field (see conn.h).  The value is
 * rendered for the reason only when the conversion fails: this runs for
 * every row, and formatting is dearer than the conversion. */
tdm_err tdm__conn_finish_ts(const tdm__source_conf *conf, tdm__row *row,
                            char *reason, size_t n)
{
    const tdm__field *f;
    const tdm__val *v;
    char shown[64];
    tdm_err err;

    if (conf->time_mode != TDM__TIME_EVENT || conf->ts_field < 0 ||
        conf->ts_field >= conf->schema->n)
        return TDM_OK;
    f = &conf->schema->fields[conf->ts_field];
    v = &row->v[conf->ts_field];
    if (v->null)
        return tdm__errf(reason, n, TDM_ERR_PARSE, "field '%s' is missing",
                         f->name);
    switch (f->type) {
    case TDM_TYPE_TIMESTAMP: /* converted when stored */
        row->ts = v->u.i;
        return TDM_OK;
    case TDM_TYPE_INT64:
        err = tdm__ts_from_int(v->u.i, conf->ts_unit, &row->ts);
        if (err != TDM_OK)
            snprintf(shown, sizeof shown, "%lld", (long long)v->u.i);
        break;
    case TDM_TYPE_DOUBLE:
        err = tdm__ts_from_double(v->u.d, conf->ts_unit, &row->ts);
        if (err != TDM_OK)
            tdm__conn_fmt_double(shown, sizeof shown, v->u.d);
        break;
    case TDM_TYPE_STRING:
        err = tdm__ts_from_text(v->u.s.p, v->u.s.len, conf->ts_unit, &row->ts);
        if (err != TDM_OK)
            tdm__conn_quote(shown, sizeof shown, v->u.s.p, v->u.s.len);
        break;
    default:
        return tdm__errf(reason, n, TDM_ERR_PARSE,
                         "field '%s': a bool cannot be a timestamp", f->name);
    }
    if (err == TDM_OK)
        return TDM_OK;
    row->ts = TDM_TIME_MIN;
    return tdm__conn_ts_error(reason, n, f->name, err, conf->ts_unit, shown);
}

/* The message of a refused source checkpoint (see conn.h). */
tdm_err tdm__conn_snap_error(const tdm__source_conf *conf,
                             const struct tdm__dec *d, char *errbuf, size_t n)
{
    size_t off = 0;
    const char *why = "bad value";

    if (tdm__dec_error(d, &off, &why) == TDM_OK)
        why = "bad value";
    return tdm__errf(errbuf, n, TDM_ERR_PARSE,
                     "source '%s' checkpoint: offset %zu: %s",
                     conf && conf->name ? conf->name : "?", off, why);
}
