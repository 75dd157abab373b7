/* "key" (a key with an escape is left to jansson), ':', a
 * scalar, then ',' for more or '}' for the end. */
/* SPDX-License-Identifier: MIT */
/* json.c - JSON lines into typed rows.
 *
 * jansson (json_loadb) is the reference parser: it decides what is valid
 * JSON and its errors become the reasons of dead letters.  Because it
 * allocates a tree per line, lines first go through a small scanner that
 * handles the common shape - one flat object of scalars, strings without
 * escapes, no repeated schema field - without allocating.  The scanner
 * only ever says "this row, exactly" or "not sure"; anything else
 * (escapes, nested values, errors of any kind) is handed to jansson, so
 * that both paths give the same rows and every error message comes from
 * one place.  The fuzz target tests/fuzz/fuzz_json.c checks that the two
 * paths agree on arbitrary input.
 *
 * Field rules (same as CSV): JSON null or an absent member is a null
 * value; int64 takes integers only, double takes any number, string only
 * strings, bool only true/false; a timestamp takes a number of
 * timestamp.unit or, with unit iso8601, ISO-8601 text; members not in the
 * schema are ignored.  An integer literal outside int64 makes the line
 * invalid wherever it is (jansson refuses it); the reason names its
 * member when it is a top-level one.  A member named twice in one object
 * keeps its last value, as Flink's JSON format (Jackson) and jansson do,
 * and the row is counted (numDuplicateKeyRecords).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/conn.h"
#include "testhooks.h"

/* ---- Values as both paths see them ---- */

typedef enum jkind {
    J_NULL,
    J_BOOL,
    J_INT,
    J_REAL,
    J_STRING,
    J_OBJECT,
    J_ARRAY,
    J_BIG /* scanner only: a number literal out of range */
} jkind;

typedef struct jval {
    jkind kind;
    bool b;
    int64_t i;
    double d;
    const char *s; /* J_STRING (decoded), J_BIG (literal text) */
    size_t len;
} jval;

/* Display form of a value for "got ..." in reasons. */
static void show(char *out, size_t n, const jval *v)
{
    switch (v->kind) {
    case J_BOOL:
        snprintf(out, n, "%s", v->b ? "true" : "false");
        break;
    case J_INT:
        snprintf(out, n, "%lld", (long long)v->i);
        break;
    case J_REAL:
        tdm__conn_fmt_double(out, n, v->d);
        break;
    case J_STRING:
        tdm__conn_quote(out, n, v->s, v->len);
        break;
    case J_OBJECT:
        snprintf(out, n, "an object");
        break;
    case J_ARRAY:
        snprintf(out, n, "an array");
        break;
    default:
        snprintf(out, n, "null");
        break;
    }
}

static tdm_err type_error(const tdm__source_conf *conf, int idx, const jval *v,
                          char *reason, size_t n)
{
    const tdm__field *f = &conf->schema->fields[idx];
    char shown[64];

    show(shown, sizeof shown, v);
    return tdm__errf(reason, n, TDM_ERR_PARSE,
                     "field '%s': expected %s, got %s", f->name,
                     tdm__conn_expected(f->type, conf->ts_unit), shown);
}

/* Stores a number, or the text of a string, as decimal field @p f: from
 * the literal's text where the scanner kept it (exact), else from the
 * number as jansson read it (the shortest text of its double, exact up
 * to 15 significant digits). */
static tdm_err store_decimal(const tdm__field *f, const jval *v, tdm__val *out,
                             char *reason, size_t n)
{
    tdm_err err;
    if (v->kind == J_INT)
        err = tdm__conn_decimal_int(f, v->i, &out->u.i, reason, n);
    else if (v->kind == J_STRING ||
             (v->kind == J_REAL && v->s && !memchr(v->s, 'e', v->len) &&
              !memchr(v->s, 'E', v->len)))
        err = tdm__conn_decimal(f, v->s, v->len, &out->u.i, reason, n);
    else if (v->kind == J_REAL)
        err = tdm__conn_decimal_double(f, v->d, &out->u.i, reason, n);
    else {
        char shown[64];
        show(shown, sizeof shown, v);
        return tdm__errf(reason, n, TDM_ERR_PARSE,
                         "field '%s': expected a decimal number, got %s",
                         f->name, shown);
    }
    out->null = err != TDM_OK;
    return err;
}

/* Stores value @p v as field @p idx of @p row, checking its type.
 * Returns TDM_OK, TDM_ERR_PARSE (reason written) or TDM_ERR_NOMEM. */
static tdm_err store(const tdm__source_conf *conf, tdm__batch *b, tdm__row *row,
                     int idx, const jval *v, char *reason, size_t n)
{
    const tdm__field *f = &conf->schema->fields[idx];
    tdm__val *out = &row->v[idx];
    tdm_err err;

    if (v->kind == J_NULL) {
        out->null = 1;
        return TDM_OK;
    }
    switch (f->type) {
    case TDM_TYPE_INT64:
        if (v->kind != J_INT)
            return type_error(conf, idx, v, reason, n);
        out->u.i = v->i;
        break;
    case TDM_TYPE_DOUBLE:
        if (v->kind == J_INT)
            out->u.d = (double)v->i;
        else if (v->kind == J_REAL)
            out->u.d = v->d;
        else
            return type_error(conf, idx, v, reason, n);
        break;
    case TDM_TYPE_STRING:
        if (v->kind != J_STRING)
            return type_error(conf, idx, v, reason, n);
        err = tdm__batch_put_string(b, row, idx, v->s, v->len);
        return err == TDM_ERR_RANGE ? TDM_ERR_NOMEM : err;
    case TDM_TYPE_BOOL:
        if (v->kind != J_BOOL)
            return type_error(conf, idx, v, reason, n);
        out->u.i = v->b;
        break;
    case TDM_TYPE_TIMESTAMP:
        if (conf->ts_unit == TDM__UNIT_ISO8601 && v->kind == J_STRING)
            err = tdm__ts_from_text(v->s, v->len, conf->ts_unit, &out->u.i);
        else if (conf->ts_unit != TDM__UNIT_ISO8601 && v->kind == J_INT)
            err = tdm__ts_from_int(v->i, conf->ts_unit, &out->u.i);
        else if (conf->ts_unit != TDM__UNIT_ISO8601 && v->kind == J_REAL)
            err = tdm__ts_from_double(v->d, conf->ts_unit, &out->u.i);
        else
            return type_error(conf, idx, v, reason, n);
        if (err != TDM_OK) {
            char shown[64];
            show(shown, sizeof shown, v);
            return tdm__conn_ts_error(reason, n, f->name, err, conf->ts_unit,
                                      shown);
        }
        break;
    default:
        return store_decimal(f, v, out, reason, n);
    }
    out->null = 0;
    return TDM_OK;
}

/* ---- The scanner ---- */

static size_t skip_ws(const char *s, size_t len, size_t i)
{
    while (i < len &&
           (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A string without escapes at s[*i] (the opening quote): its bytes in
 * (*p, *n).  0 if it has an escape, a control byte or no end.  Bytes
 * above 0x7F are accepted: the line passed the UTF-8 check. */
static int scan_string(const char *s, size_t len, size_t *i, const char **p,
                       size_t *n)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = ones * 0x80;
    size_t beg = *i + 1, k = beg;

    /* The first byte that is a quote, a backslash or a control byte
     * decides.  Eight plain bytes are skipped at once: (x - ones) & ~x
     * has bit 7 set in the lowest zero byte of x (and perhaps in bytes
     * above it), so a word with a byte of interest is never skipped; a
     * word flagged by mistake only hands over to the byte loop early. */
    while (k + 8 <= len) {
        uint64_t w, q, b, c;
        memcpy(&w, s + k, 8);
        q = w ^ (ones * '"');
        b = w ^ (ones * '\\');
        c = (q - ones) & ~q;
        c |= (b - ones) & ~b;
        c |= (w - ones * 0x20) & ~w;
        if (c & highs)
            break;
        k += 8;
    }
    for (; k < len; k++) {
        unsigned char ch = (unsigned char)s[k];
        if (ch == '"') {
            *p = s + beg;
            *n = k - beg;
            *i = k + 1;
            return 1;
        }
        if (ch == '\\' || ch < 0x20)
            return 0;
    }
    return 0;
}

/* A number at s[*i] following the JSON grammar exactly:
 *     -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
 * Without fraction or exponent it is an integer, as jansson decides (so
 * "1.0" is a real and "-0" the integer 0).  Integers that do not fit
 * int64 and reals that overflow become J_BIG.  0 if the text is not a
 * JSON number (or cannot be decided here).  The caller checks what
 * follows ("12x" ends the number at "x", which then fails as a
 * separator). */
static int scan_number(const char *s, size_t len, size_t *i, jval *v)
{
    size_t k = *i, beg = *i;
    bool neg = false, integral = true;
    uint64_t m = 0; /* the integer part's digits, while at most 18 */

    /* The integer part: a lone 0 or a run of digits not starting with 0
     * (jansson refuses leading zeros).  Its value is accumulated on the
     * way: up to 18 digits cannot overflow, which covers the common case
     * (epoch timestamps have 13) in one pass. */
    if (k < len && s[k] == '-') {
        neg = true;
        k++;
    }
    if (k >= len)
        return 0;
    if (s[k] == '0') {
        k++;
    } else if (s[k] >= '1' && s[k] <= '9') {
        while (k < len && is_digit(s[k]))
            m = m * 10 + (uint64_t)(s[k++] - '0');
    } else {
        return 0;
    }
    if (k < len && s[k] == '.') {
        integral = false;
        if (++k >= len || !is_digit(s[k]))
            return 0;
        while (k < len && is_digit(s[k]))
            k++;
    }
    if (k < len && (s[k] == 'e' || s[k] == 'E')) {
        integral = false;
        k++;
        if (k < len && (s[k] == '+' || s[k] == '-'))
            k++;
        if (k >= len || !is_digit(s[k]))
            return 0;
        while (k < len && is_digit(s[k]))
            k++;
    }
    v->s = s + beg;
    v->len = k - beg;
    if (integral && k - beg - neg > 18) {
        /* Longer: accumulate again with an overflow check per digit;
         * 2^63 itself fits only negated. */
        uint64_t lim = neg ? (uint64_t)1 << 63 : INT64_MAX;
        m = 0;
        for (size_t j = beg + neg; j < k; j++) {
            uint64_t d = (uint64_t)(s[j] - '0');
            if (m > (lim - d) / 10) {
                v->kind = J_BIG;
                *i = k;
                return 1;
            }
            m = m * 10 + d;
        }
    }
    if (integral) {
        v->kind = J_INT;
        v->i = neg ? (int64_t)(0 - m) : (int64_t)m;
    } else {
        /* strtod needs a terminated copy; a real longer than any the
         * scanner expects goes to jansson rather than be cut. */
        char buf[64], *end;
        if (k - beg >= sizeof buf)
            return 0;
        memcpy(buf, s + beg, k - beg);
        buf[k - beg] = '\0';
        errno = 0;
        v->d = strtod(buf, &end);
        if (end != buf + (k - beg))
            return 0; /* a locale with another decimal point */
        if (errno == ERANGE) {
            /* Overflow is refused by jansson; underflow is not, and is
             * left to it. */
            if (v->d == 0.0 || (v->d > -1.0 && v->d < 1.0))
                return 0;
            v->kind = J_BIG;
        } else {
            v->kind = J_REAL;
        }
    }
    *i = k;
    return 1;
}

/* A scalar value at s[*i]; 0 for objects, arrays and anything invalid.
 * A literal is recognised by its letters only: "truex" leaves "x" for
 * the caller, whose separator check then fails. */
static int scan_value(const char *s, size_t len, size_t *i, jval *v)
{
    size_t k = *i;

    if (k >= len)
        return 0;
    switch (s[k]) {
    case '"':
        v->kind = J_STRING;
        return scan_string(s, len, i, &v->s, &v->len);
    case 't':
        if (len - k >= 4 && memcmp(s + k, "true", 4) == 0) {
            v->kind = J_BOOL;
            v->b = true;
            *i = k + 4;
            return 1;
        }
        return 0;
    case 'f':
        if (len - k >= 5 && memcmp(s + k, "false", 5) == 0) {
            v->kind = J_BOOL;
            v->b = false;
            *i = k + 5;
            return 1;
        }
        return 0;
    case 'n':
        if (len - k >= 4 && memcmp(s + k, "null", 4) == 0) {
            v->kind = J_NULL;
            *i = k + 4;
            return 1;
        }
        return 0;
    default:
        return scan_number(s, len, i, v);
    }
}

/* Called for each top-level member; returns 1 to go on, 0 to stop (the
 * scan then reports "not sure"). */
typedef int (*member_fn)(void *ctx, const char *key, size_t key_len,
                         const jval *v);

/* Walks a flat object: '{', members "key": scalar separated by ',', '}',
 * then nothing but blanks.  Returns 1 when the whole line was walked, 0
 * when the scanner cannot decide or @p fn stopped it. */
static int scan_object(const char *s, size_t len, member_fn fn, void *ctx)
{
    size_t i = skip_ws(s, len, 0);

    if (i >= len || s[i] != '{')
        return 0;
    i = skip_ws(s, len, i + 1);
    if (i < len && s[i] == '}') {
        i++;
    } else {
        for (;;) {
            const char *key;
            size_t key_len;
            jval v;

            if (i >= len || s[i] != '"' ||
                !scan_string(s, len, &i, &key, &key_len))
                return 0;
            i = skip_ws(s, len, i);
            if (i >= len || s[i] != ':')
                return 0;
            i = skip_ws(s, len, i + 1);
            if (!scan_value(s, len, &i, &v))
                return 0;
            if (!fn(ctx, key, key_len, &v))
                return 0;
            i = skip_ws(s, len, i);
            if (i < len && s[i] == ',') {
                i = skip_ws(s, len, i + 1);
                continue;
            }
            if (i < len && s[i] == '}') {
                i++;
                break;
            }
            return 0;
        }
    }
    /* Only blanks may follow the object (jansson: "end of file
     * expected"). */
    return skip_ws(s, len, i) == len;
}

/* Index of the schema field named (key, len), or -1. */
static int find_field(const tdm__schema *sc, const char *key, size_t len)
{
    for (int f = 0; f < sc->n; f++) {
        const char *name = sc->fields[f].name;
        size_t j = 0;
        /* Names are short: a byte loop beats a call.  It stops at the
         * name's NUL, which differs from any byte of a JSON key (the
         * line passed the text check, so keys hold no NUL). */
        while (j < len && name[j] == key[j])
            j++;
        if (j == len && name[len] == '\0')
            return f;
    }
    return -1;
}

/* The length of @p name if the quoted key "name" at s[i] is exactly
 * that name, else 0.  Only names that an earlier key matched through
 * scan_string are ever expected, and scan_string takes no key with an
 * escape, a quote or a control byte: the name's bytes are therefore the
 * key's own bytes, exactly as scan_string would have returned them. */
static size_t match_key(const char *s, size_t len, size_t i, const char *name)
{
    size_t j = 0;
    if (s[i] != '"')
        return 0;
    while (name[j] && i + 1 + j < len && s[i + 1 + j] == name[j])
        j++;
    if (name[j] || i + 1 + j >= len || s[i + 1 + j] != '"')
        return 0;
    return j;
}

/* Members the fast path ignores whose keys it remembers, to tell a
 * repeated one; a line with more goes to jansson. */
#define IGNORED_MAX 8

typedef struct jkey {
    const char *p;
    size_t len;
} jkey;

/* Whether key (key, len) is among the @p n keys in @p ign. */
static bool repeated(const jkey *ign, int n, const char *key, size_t len)
{
    for (int k = 0; k < n; k++)
        if (ign[k].len == len && memcmp(ign[k].p, key, len) == 0)
            return true;
    return false;
}

/* The fast path: 1 with the row filled in, 0 if jansson must decide.
 *
 * It walks the object like scan_object and stores each member whose key
 * names a schema field.  Everything that would need a reason (a type
 * error, a huge number) or jansson's view of the line (a repeated key,
 * which jansson resolves and counts, see parse_jansson) makes it give
 * up; the scratch reason is thrown away because jansson writes the real
 * one.  The "seen" set is a 64-bit mask, so wider schemas always use
 * jansson; keys of ignored members are kept (IGNORED_MAX) only to spot a
 * repeat, so a line of schema fields alone pays nothing for that.
 *
 * With a hint, member m's key is first compared with the name of the
 * field member m had in the previous line: when the layout repeats, a
 * key costs one comparison instead of a scan and a lookup.  A miss
 * falls back to both and updates the hint. */
static int parse_fast(const tdm__source_conf *conf, tdm__json_hint *hint,
                      const char *s, size_t len, tdm__batch *b, tdm__row *row)
{
    const tdm__schema *sc = conf->schema;
    uint64_t seen = 0;
    jkey ign[IGNORED_MAX];
    int n_ign = 0;
    char scratch[8];
    size_t i;

    if (sc->n > 64)
        return 0;
    i = skip_ws(s, len, 0);
    if (i >= len || s[i] != '{')
        return 0;
    i = skip_ws(s, len, i + 1);
    if (i < len && s[i] == '}') {
        i++;
    } else {
        for (int m = 0;; m++) {
            int f = -2, guess = -1;
            jval v;

            if (i >= len)
                return 0;
            if (hint && m < TDM__JSON_HINT_MAX && hint->field[m] > 0) {
                size_t nl;
                guess = hint->field[m] - 1;
                if (guess < sc->n &&
                    (nl = match_key(s, len, i, sc->fields[guess].name))) {
                    f = guess;
                    i += nl + 2;
                }
            }
            if (f == -2) {
                const char *key;
                size_t key_len;
                if (s[i] != '"' || !scan_string(s, len, &i, &key, &key_len))
                    return 0;
                f = find_field(sc, key, key_len);
                if (hint && m < TDM__JSON_HINT_MAX)
                    hint->field[m] = (int8_t)(f + 1); /* 0 if none */
                if (f < 0) {
                    if (n_ign == IGNORED_MAX ||
                        repeated(ign, n_ign, key, key_len))
                        return 0;
                    ign[n_ign++] = (jkey){key, key_len};
                }
            }
            i = skip_ws(s, len, i);
            if (i >= len || s[i] != ':')
                return 0;
            i = skip_ws(s, len, i + 1);
            if (!scan_value(s, len, &i, &v) || v.kind == J_BIG)
                return 0;
            if (f >= 0) {
                if (seen & ((uint64_t)1 << f))
                    return 0; /* a repeat: jansson decides */
                seen |= (uint64_t)1 << f;
                if (store(conf, b, row, f, &v, scratch, sizeof scratch) !=
                    TDM_OK)
                    return 0;
            }
            i = skip_ws(s, len, i);
            if (i < len && s[i] == ',') {
                i = skip_ws(s, len, i + 1);
                continue;
            }
            if (i < len && s[i] == '}') {
                i++;
                break;
            }
            return 0;
        }
    }
    /* Only blanks may follow the object (jansson: "end of file
     * expected"). */
    if (skip_ws(s, len, i) != len)
        return 0;
    return tdm__conn_finish_ts(conf, row, scratch, sizeof scratch) == TDM_OK;
}

/* ---- The jansson path ---- */

typedef struct big_ctx {
    const char *key, *text;
    size_t key_len, text_len;
} big_ctx;

static int big_member(void *ctx, const char *key, size_t key_len, const jval *v)
{
    big_ctx *c = ctx;
    if (v->kind != J_BIG)
        return 1;
    c->key = key;
    c->key_len = key_len;
    c->text = v->s;
    c->text_len = v->len;
    return 0;
}

/* Reason for a line jansson refused.  A number out of range in a
 * top-level member is named by the scanner ("field 'n': integer out of
 * range, got 99999999999999999999"); otherwise jansson's own words. */
static tdm_err invalid_json(const char *line, size_t len,
                            const json_error_t *jerr, char *reason, size_t n)
{
    big_ctx c = {NULL, NULL, 0, 0};

    scan_object(line, len, big_member, &c);
    if (c.key) {
        bool integral = true;
        for (size_t k = 0; k < c.text_len; k++)
            if (c.text[k] == '.' || c.text[k] == 'e' || c.text[k] == 'E')
                integral = false;
        return tdm__errf(reason, n, TDM_ERR_PARSE,
                         "field '%.*s': %s out of range, got %.*s",
                         (int)c.key_len, c.key, integral ? "integer" : "number",
                         c.text_len > 40 ? 40 : (int)c.text_len, c.text);
    }
    return tdm__errf(reason, n, TDM_ERR_PARSE, "invalid JSON: %s (column %d)",
                     jerr->text, jerr->column);
}

/* Converts a jansson value into a jval (strings are borrowed). */
static void from_jansson(json_t *j, jval *v)
{
    memset(v, 0, sizeof *v);
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        v->kind = J_OBJECT;
        break;
    case JSON_ARRAY:
        v->kind = J_ARRAY;
        break;
    case JSON_STRING:
        v->kind = J_STRING;
        v->s = json_string_value(j);
        v->len = json_string_length(j);
        break;
    case JSON_INTEGER:
        v->kind = J_INT;
        v->i = (int64_t)json_integer_value(j);
        break;
    case JSON_REAL:
        v->kind = J_REAL;
        v->d = json_real_value(j);
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        v->kind = J_BOOL;
        v->b = json_is_true(j);
        break;
    default:
        v->kind = J_NULL;
        break;
    }
}

static const char *kind_name(json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a bool";
    default:
        return "null";
    }
}

/* Loads @p line into a tree; *dup tells whether an object of it names a
 * member twice.  Repeats are rare, so the line is first loaded refusing
 * them, and only a refused one is loaded again, keeping the last value
 * of each repeated member (docs/job-format.md, "Repeated keys").  NULL
 * with @p jerr set if the line is not JSON. */
static json_t *load(const char *line, size_t len, json_error_t *jerr, bool *dup)
{
    json_t *root =
        json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, jerr);

    *dup = !root && json_error_code(jerr) == json_error_duplicate_key;
    if (*dup)
        root = json_loadb(line, len, JSON_DECODE_ANY, jerr);
    return root;
}

/* The reference path: the row from jansson's tree, schema field by schema
 * field, the first bad one giving the reason.  A row read from a line
 * with a repeated key is counted in b->n_dup_keys. */
static tdm_err parse_jansson(const tdm__source_conf *conf, const char *line,
                             size_t len, tdm__batch *b, tdm__row *row,
                             char *reason, size_t n)
{
    json_error_t jerr;
    bool dup;
    json_t *root = load(line, len, &jerr, &dup);
    tdm_err err = TDM_OK;

    if (!root)
        return invalid_json(line, len, &jerr, reason, n);
    if (!json_is_object(root)) {
        err = tdm__errf(reason, n, TDM_ERR_PARSE,
                        "expected a JSON object, got %s", kind_name(root));
        goto out;
    }
    /* Schema order, not line order: the reason names the first bad
     * field of the schema whatever the order of the members. */
    for (int f = 0; f < conf->schema->n; f++) {
        json_t *j = json_object_get(root, conf->schema->fields[f].name);
        jval v;
        if (!j)
            continue;
        from_jansson(j, &v);
        err = store(conf, b, row, f, &v, reason, n);
        if (err != TDM_OK)
            goto out;
    }
    err = tdm__conn_finish_ts(conf, row, reason, n);
    if (err == TDM_OK && dup)
        b->n_dup_keys++;
out:
    json_decref(root);
    return err;
}

/* ---- Entry points ---- */

/* Parses one JSON line with a choice of path (see conn.h).  Adds a row to
 * @p b first; on TDM_ERR_PARSE or NOMEM the row stays and the caller
 * drops it.  TDM_ERR_RANGE if @p b is full (no row added); with
 * TDM__JSON_FAST, TDM_ERR_UNSUPPORTED (no row added) when jansson would
 * have to decide. */
static tdm_err parse_line(const tdm__source_conf *conf, tdm__json_hint *hint,
                          const char *line, size_t len, tdm__batch *b,
                          char *reason, size_t n, int mode)
{
    tdm__row *row = tdm__batch_add(b);
    size_t mark = b->arena_used;

    if (!row)
        return tdm__errf(reason, n, TDM_ERR_RANGE, "batch is full");
    /* Blank and binary lines are judged before any parser: both paths
     * then agree on them by construction, the reason says more than
     * jansson's "invalid token", and the scanner may rely on valid
     * UTF-8 inside strings. */
    if (tdm__conn_is_blank(line, len))
        return tdm__errf(reason, n, TDM_ERR_PARSE, "empty line");
    if (tdm__conn_check_text(line, len, reason, n) != 0)
        return TDM_ERR_PARSE;
    if (mode != TDM__JSON_JANSSON) {
        if (parse_fast(conf, hint, line, len, b, row))
            return TDM_OK;
        /* Start again from a clean row. */
        tdm__batch_drop_last(b);
        b->arena_used = mark;
        if (mode == TDM__JSON_FAST)
            return TDM_ERR_UNSUPPORTED;
        row = tdm__batch_add(b);
    }
    return parse_jansson(conf, line, len, b, row, reason, n);
}

/* Parses one JSON line with a choice of path (see conn.h). */
tdm_err tdm__json_parse_line_mode(const tdm__source_conf *conf,
                                  const char *line, size_t len, tdm__batch *b,
                                  char *reason, size_t n, int mode)
{
    return parse_line(conf, NULL, line, len, b, reason, n, mode);
}

/* Parses one JSON line with the layout hint of its stream (see
 * conn.h). */
tdm_err tdm__json_parse_line_hint(const tdm__source_conf *conf,
                                  tdm__json_hint *hint, const char *line,
                                  size_t len, tdm__batch *b, char *reason,
                                  size_t n)
{
    return parse_line(conf, hint, line, len, b, reason, n, TDM__JSON_AUTO);
}

/* Parses one JSON line into a new row of @p b (see connect.h): TDM_OK, or
 * TDM_ERR_PARSE with the reason, after which the caller drops the row. */
tdm_err tdm__json_parse_line(const tdm__source_conf *conf, const char *line,
                             size_t len, tdm__batch *b, char *reason, size_t n)
{
    return tdm__json_parse_line_mode(conf, line, len, b, reason, n,
                                     TDM__JSON_AUTO);
}
