/* SPDX-License-Identifier: MIT */
/* csv.c - CSV lines into typed rows (RFC 4180 without line breaks inside
 * quoted fields: a source reads one record per line).
 *
 * Fields are separated by the configured delimiter; a field that starts
 * with '"' is quoted, "" inside it is one quote, and after the closing
 * quote only the delimiter or the end of the line may follow.  A quote
 * inside an unquoted field is taken literally.  Columns map to schema
 * fields through the header (tdm__csv_header) or schema order; a line
 * must have exactly as many columns as the header.
 *
 * Values: an empty field is null, except that a quoted empty string ""
 * is the empty string for string fields.  Blanks around non-string values
 * are ignored.  int64 takes [+-]digits, double any decimal or exponent
 * notation (no inf or nan), bool true/false (any case) or 1/0, timestamp a
 * number of timestamp.unit or ISO-8601 text.  Reasons use the same words
 * as the JSON parser ("field 'n': expected an integer, got \"x\"").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "connect/conn.h"

/* One field of a line: its bytes as written (without the outer quotes). */
typedef struct csv_field {
    const char *p;
    size_t len;
    bool quoted;
    bool doubled; /* contains "" that must be undoubled */
} csv_field;

enum { FIELD_OK = 0, FIELD_UNTERMINATED, FIELD_AFTER_QUOTE };

/* Reads the field starting at s[*i]; on return *i is at the delimiter or
 * at len.  Returns FIELD_OK or an error code. */
static int next_field(const char *s, size_t len, size_t *i, char delim,
                      csv_field *f)
{
    size_t k = *i;

    f->quoted = false;
    f->doubled = false;
    if (k < len && s[k] == '"') {
        /* Quoted: the field ends at the first quote that is not doubled.
         * memchr jumps from quote to quote; the bytes stay in the line
         * and are undoubled only when they are copied. */
        size_t beg = ++k;
        for (;;) {
            const char *q = k < len ? memchr(s + k, '"', len - k) : NULL;
            if (!q)
                return FIELD_UNTERMINATED;
            k = (size_t)(q - s);
            if (k + 1 < len && s[k + 1] == '"') {
                f->doubled = true;
                k += 2;
                continue;
            }
            break;
        }
        f->p = s + beg;
        f->len = k - beg;
        f->quoted = true;
        k++; /* the closing quote */
        /* RFC 4180 allows nothing between the closing quote and the
         * delimiter: text there means the quoting is broken, and
         * guessing would shift every later column. */
        if (k < len && s[k] != delim) {
            *i = k;
            return FIELD_AFTER_QUOTE;
        }
        *i = k;
        return FIELD_OK;
    }
    /* Unquoted: up to the next delimiter; quotes inside are data. */
    {
        const char *d = k < len ? memchr(s + k, delim, len - k) : NULL;
        size_t end = d ? (size_t)(d - s) : len;
        f->p = s + k;
        f->len = end - k;
        *i = end;
    }
    return FIELD_OK;
}

/* Copies a field's value into @p buf (n bytes), undoubling quotes; the
 * result is cut to fit and NUL-terminated.  Returns its length. */
static size_t field_text(const csv_field *f, char *buf, size_t n)
{
    size_t o = 0;
    for (size_t k = 0; k < f->len && o + 1 < n; k++) {
        buf[o++] = f->p[k];
        if (f->doubled && f->p[k] == '"')
            k++;
    }
    buf[o] = '\0';
    return o;
}

static void trim(const char **p, size_t *len)
{
    while (*len > 0 && (**p == ' ' || **p == '\t')) {
        (*p)++;
        (*len)--;
    }
    while (*len > 0 && ((*p)[*len - 1] == ' ' || (*p)[*len - 1] == '\t'))
        (*len)--;
}

/* int64 from [+-]digits; 0 ok, -1 not an integer, -2 out of range. */
static int parse_int(const char *p, size_t len, int64_t *out)
{
    size_t k = 0;
    bool neg = false;
    uint64_t m = 0, lim;

    if (k < len && (p[k] == '+' || p[k] == '-'))
        neg = p[k++] == '-';
    if (k == len)
        return -1;
    lim = neg ? (uint64_t)1 << 63 : INT64_MAX;
    for (; k < len; k++) {
        uint64_t d;
        if (p[k] < '0' || p[k] > '9')
            return -1;
        d = (uint64_t)(p[k] - '0');
        if (m > (lim - d) / 10) {
            /* Still check that the rest is digits. */
            for (k++; k < len; k++)
                if (p[k] < '0' || p[k] > '9')
                    return -1;
            return -2;
        }
        m = m * 10 + d;
    }
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    return 0;
}

/* A finite double in decimal or exponent notation; 0 ok, -1 not a
 * number, -2 out of range. */
static int parse_double(const char *p, size_t len, double *out)
{
    char buf[128], *end;
    bool digit = false;

    if (len == 0 || len >= sizeof buf)
        return -1;
    for (size_t k = 0; k < len; k++) {
        char c = p[k];
        if (c >= '0' && c <= '9')
            digit = true;
        else if (c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E')
            return -1;
    }
    if (!digit)
        return -1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    errno = 0;
    *out = strtod(buf, &end);
    if (end != buf + len)
        return -1;
    if (errno == ERANGE && (*out > 1.0 || *out < -1.0))
        return -2;
    return 0;
}

/* Reason for a bad value of field @p idx. */
static tdm_err bad_value(const tdm__source_conf *conf, int idx,
                         const char *what, const csv_field *f, char *reason,
                         size_t n)
{
    const tdm__field *fd = &conf->schema->fields[idx];
    char text[64], shown[80];
    size_t len = field_text(f, text, sizeof text);

    tdm__conn_quote(shown, sizeof shown, text, len);
    if (what)
        return tdm__errf(reason, n, TDM_ERR_PARSE,
                         "field '%s': %s out of range, got %s", fd->name, what,
                         shown);
    return tdm__errf(reason, n, TDM_ERR_PARSE,
                     "field '%s': expected %s, got %s", fd->name,
                     tdm__conn_expected(fd->type, conf->ts_unit), shown);
}

/* Stores field @p f as schema field @p idx of @p row.  Returns TDM_OK,
 * TDM_ERR_PARSE (reason written) or TDM_ERR_NOMEM. */
static tdm_err store(const tdm__source_conf *conf, tdm__batch *b, tdm__row *row,
                     int idx, const csv_field *f, char *reason, size_t n)
{
    const tdm__field *fd = &conf->schema->fields[idx];
    tdm__val *out = &row->v[idx];
    const char *p = f->p;
    size_t len = f->len;
    char buf[128];
    int rc;

    if (fd->type == TDM_TYPE_STRING) {
        tdm_err err;
        if (len == 0 && !f->quoted)
            return TDM_OK; /* null */
        err = tdm__batch_set_string(b, row, idx, p, len);
        if (err != TDM_OK)
            return TDM_ERR_NOMEM;
        if (f->doubled) {
            /* Undouble in place: the copy is the newest arena bytes. */
            char *s = b->arena + (out->u.s.p - b->arena);
            size_t o = 0;
            for (size_t k = 0; k < len; k++) {
                s[o++] = s[k];
                if (s[k] == '"')
                    k++;
            }
            b->arena_used -= len - o;
            out->u.s.len = (uint32_t)o;
        }
        return TDM_OK;
    }
    if (f->doubled) {
        /* Only a string can hold a quote. */
        return bad_value(conf, idx, NULL, f, reason, n);
    }
    trim(&p, &len);
    if (len == 0)
        return TDM_OK; /* null */
    switch (fd->type) {
    case TDM_TYPE_INT64:
        rc = parse_int(p, len, &out->u.i);
        if (rc != 0)
            return bad_value(conf, idx, rc == -2 ? "integer" : NULL, f, reason,
                             n);
        break;
    case TDM_TYPE_DOUBLE:
        rc = parse_double(p, len, &out->u.d);
        if (rc != 0)
            return bad_value(conf, idx, rc == -2 ? "number" : NULL, f, reason,
                             n);
        break;
    case TDM_TYPE_BOOL:
        if (len == 1 && (*p == '1' || *p == '0')) {
            out->u.i = *p == '1';
        } else if (len == 4 && strncasecmp(p, "true", 4) == 0) {
            out->u.i = 1;
        } else if (len == 5 && strncasecmp(p, "false", 5) == 0) {
            out->u.i = 0;
        } else {
            return bad_value(conf, idx, NULL, f, reason, n);
        }
        break;
    case TDM_TYPE_TIMESTAMP: {
        tdm_err err = tdm__ts_from_text(p, len, conf->ts_unit, &out->u.i);
        if (err != TDM_OK) {
            char shown[80];
            size_t tl = field_text(f, buf, sizeof buf);
            tdm__conn_quote(shown, sizeof shown, buf, tl);
            return tdm__conn_ts_error(reason, n, fd->name, err, conf->ts_unit,
                                      shown);
        }
        break;
    }
    default: {
        tdm_err err = tdm__conn_decimal(fd, p, len, &out->u.i, reason, n);
        if (err != TDM_OK)
            return err;
        break;
    }
    }
    out->null = 0;
    return TDM_OK;
}

static tdm_err field_error(int rc, int col, char *reason, size_t n)
{
    if (rc == FIELD_UNTERMINATED)
        return tdm__errf(reason, n, TDM_ERR_PARSE,
                         "column %d: quoted field has no closing quote",
                         col + 1);
    return tdm__errf(reason, n, TDM_ERR_PARSE,
                     "column %d: unexpected text after the closing quote",
                     col + 1);
}

/* Strips one trailing CR (a CRLF line whose LF was already removed). */
static void strip_cr(size_t *len, const char *line)
{
    if (*len > 0 && line[*len - 1] == '\r')
        (*len)--;
}

/* Parses one CSV line into a new row of @p b (see connect.h).  The row is
 * added first; on TDM_ERR_PARSE or NOMEM it stays and the caller drops
 * it.  TDM_ERR_RANGE when @p b is full (no row added). */
tdm_err tdm__csv_parse_line(const tdm__source_conf *conf, const int *columns,
                            int n_columns, const char *line, size_t len,
                            tdm__batch *b, char *reason, size_t n)
{
    tdm__row *row = tdm__batch_add(b);
    char delim = conf->csv_delimiter ? conf->csv_delimiter : ',';
    size_t i = 0;
    int col = 0;

    if (!row)
        return tdm__errf(reason, n, TDM_ERR_RANGE, "batch is full");
    strip_cr(&len, line);
    if (tdm__conn_is_blank(line, len))
        return tdm__errf(reason, n, TDM_ERR_PARSE, "empty line");
    if (tdm__conn_check_text(line, len, reason, n) != 0)
        return TDM_ERR_PARSE;
    for (;; col++) {
        csv_field f;
        int rc = next_field(line, len, &i, delim, &f);
        if (rc != FIELD_OK)
            return field_error(rc, col, reason, n);
        if (col < n_columns && columns[col] >= 0) {
            tdm_err err = store(conf, b, row, columns[col], &f, reason, n);
            if (err != TDM_OK)
                return err;
        }
        if (i >= len)
            break;
        i++; /* the delimiter */
    }
    if (col + 1 != n_columns)
        return tdm__errf(reason, n, TDM_ERR_PARSE,
                         "expected %d columns, got %d", n_columns, col + 1);
    return tdm__conn_finish_ts(conf, row, reason, n);
}

/* Maps the columns of a header line to schema indices (-1 for columns
 * not in the schema).  Column names are trimmed.  Returns TDM_OK (with
 * *columns allocated), TDM_ERR_PARSE (binary data, bad quoting, a schema
 * field named twice) or TDM_ERR_NOMEM. */
tdm_err tdm__csv_header(const tdm__source_conf *conf, const char *line,
                        size_t len, int **columns, int *n_columns, char *reason,
                        size_t n)
{
    char delim = conf->csv_delimiter ? conf->csv_delimiter : ',';
    int *cols = NULL, count = 1;
    size_t i = 0;
    tdm_err err = TDM_OK;

    *columns = NULL;
    *n_columns = 0;
    strip_cr(&len, line);
    if (tdm__conn_is_blank(line, len))
        return tdm__errf(reason, n, TDM_ERR_PARSE, "empty header line");
    if (tdm__conn_check_text(line, len, reason, n) != 0)
        return TDM_ERR_PARSE;
    for (size_t k = 0; k < len; k++)
        count += line[k] == delim; /* an upper bound with quotes */
    cols = tdm__malloc((size_t)count * sizeof *cols);
    if (!cols)
        return TDM_ERR_NOMEM;
    for (int col = 0;; col++) {
        csv_field f;
        char name[256];
        const char *p;
        size_t nl;
        int rc = next_field(line, len, &i, delim, &f);
        if (rc != FIELD_OK) {
            err = field_error(rc, col, reason, n);
            goto fail;
        }
        nl = field_text(&f, name, sizeof name);
        p = name;
        trim(&p, &nl);
        cols[col] = -1;
        for (int s = 0; s < conf->schema->n; s++) {
            const char *fname = conf->schema->fields[s].name;
            if (strlen(fname) == nl && memcmp(fname, p, nl) == 0)
                cols[col] = s;
        }
        for (int o = 0; o < col && cols[col] >= 0; o++) {
            if (cols[o] == cols[col]) {
                err = tdm__errf(reason, n, TDM_ERR_PARSE,
                                "CSV header: column '%.*s' appears twice "
                                "(columns %d and %d)",
                                (int)nl, p, o + 1, col + 1);
                goto fail;
            }
        }
        *n_columns = col + 1;
        if (i >= len)
            break;
        i++;
    }
    *columns = cols;
    return TDM_OK;
fail:
    tdm__free(cols);
    *n_columns = 0;
    return err;
}
