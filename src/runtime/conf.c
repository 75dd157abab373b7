/* SPDX-License-Identifier: MIT */
/* conf.c - the table-driven job configuration.  conf_table.def is
 * expanded once into a static array; every key a job or node accepts, its
 * type, default, bounds and choices come from there, so validation,
 * `tidemark config list` and docs/job-format.md cannot drift apart.
 * This file parses text values per type and explains what was expected
 * when a value does not fit.  An ENUM value is the index of its choice,
 * which conf_enum.h names (TDM__TRIGGER_COUNT) from the same table rows.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"

/* ---- The table ---- */

/* min and max are written as integers in the table (INT64_MIN/MAX for
 * "unbounded"); both an int64 and a double view are kept. */
#define X(sc, k, ty, df, mn, mx, un, ch, de)                                   \
    {TDM__SCOPE_##sc,                                                          \
     k,                                                                        \
     TDM__CT_##ty,                                                             \
     df,                                                                       \
     (int64_t)(mn),                                                            \
     (int64_t)(mx),                                                            \
     (double)(mn),                                                             \
     (double)(mx),                                                             \
     un,                                                                       \
     ch,                                                                       \
     de},
static const tdm__conf_row conf_rows[] = {
#include "runtime/conf_table.def"
};
#undef X

#define N_ROWS ((int)(sizeof conf_rows / sizeof conf_rows[0]))

static const char *const scope_names[] = {"job", "source", "window", "join",
                                          "sink"};
static const char *const type_names[] = {
    "string", "int",    "double",     "bool",   "duration",
    "enum",   "schema", "aggregates", "fields", "props"};
static const char *const aggfn_names[] = {
    "count", "sum", "min", "max", "avg", "count_distinct", "first", "last"};
#define N_AGGFN ((int)(sizeof aggfn_names / sizeof aggfn_names[0]))

/* The expanded table (see rt.h). */
const tdm__conf_row *tdm__conf_rows(int *n)
{
    if (n)
        *n = N_ROWS;
    return conf_rows;
}

/* True when @p key is "<prefix>.<name>" for the PROPS row @p r
 * ("kafka.*"): the row's key without its '*', then at least one more
 * character. */
static bool props_match(const tdm__conf_row *r, const char *key)
{
    size_t pl = strlen(r->key) - 1; /* keeps the '.' */
    return r->type == TDM__CT_PROPS && strncmp(r->key, key, pl) == 0 &&
           key[pl] != 0;
}

/* Row of a key in a scope, -1 when unknown.  An exact name wins over a
 * PROPS prefix. */
int tdm__conf_find(tdm__scope scope, const char *key)
{
    if (!key)
        return -1;
    int prefix = -1;
    for (int i = 0; i < N_ROWS; i++) {
        if (conf_rows[i].scope != scope)
            continue;
        if (strcmp(conf_rows[i].key, key) == 0)
            return i;
        if (prefix < 0 && props_match(&conf_rows[i], key))
            prefix = i;
    }
    return prefix;
}

/* A property name for messages about the PROPS row @p row. */
static const char *props_example(int row)
{
    return strcmp(conf_rows[row].key, "compute.*") == 0 ? "price"
                                                        : "session.timeout.ms";
}

/* Sets, replaces or (empty value) removes one property of a PROPS
 * value; see rt.h. */
tdm_err tdm__conf_set_prop(int row, const char *key, const char *value,
                           tdm__conf_val *v, char *errbuf, size_t errbuf_size)
{
    if (row < 0 || row >= N_ROWS || conf_rows[row].type != TDM__CT_PROPS ||
        !key || !props_match(&conf_rows[row], key))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: not a property key", key ? key : "(null)");
    if (!value)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: value must not be NULL", key);
    int pl = (int)strlen(conf_rows[row].key) - 1; /* "kafka." */
    const char *name = key + pl;
    for (const char *c = name; *c; c++)
        if (isspace((unsigned char)*c) || *c == '*')
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "%s: expected a property name without blanks "
                             "or '*', e.g. \"%.*s%s\"",
                             key, pl, conf_rows[row].key, props_example(row));
    int at = -1;
    for (int i = 0; i < v->n_props; i++)
        if (strcmp(v->props[2 * i], name) == 0)
            at = i;
    if (!*value) {
        /* Removal: later pairs shift down, so the order stays the
         * order in which the properties were first set. */
        if (at < 0)
            return TDM_OK;
        tdm__free(v->props[2 * at]);
        tdm__free(v->props[2 * at + 1]);
        memmove(&v->props[2 * at], &v->props[2 * at + 2],
                (size_t)(v->n_props - at - 1) * 2 * sizeof *v->props);
        v->n_props--;
        return TDM_OK;
    }
    char *val = tdm__strndup(value, strlen(value));
    if (!val)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "%s: out of memory", key);
    if (at >= 0) {
        tdm__free(v->props[2 * at + 1]);
        v->props[2 * at + 1] = val;
        v->set = true;
        return TDM_OK;
    }
    char *nm = tdm__strndup(name, strlen(name));
    char **np =
        nm ? tdm__realloc(v->props, (size_t)(v->n_props + 1) * 2 * sizeof *np)
           : NULL;
    if (!np) {
        tdm__free(nm);
        tdm__free(val);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "%s: out of memory", key);
    }
    v->props = np;
    v->props[2 * v->n_props] = nm;
    v->props[2 * v->n_props + 1] = val;
    v->n_props++;
    v->set = true;
    return TDM_OK;
}

/* Looks a property up by its name without the prefix. */
const char *tdm__conf_prop(const tdm__conf_val *v, const char *name)
{
    if (!v || !name)
        return NULL;
    for (int i = 0; i < v->n_props; i++)
        if (strcmp(v->props[2 * i], name) == 0)
            return v->props[2 * i + 1];
    return NULL;
}

/* Name of an aggregate function, "?" out of range. */
const char *tdm__conf_aggfn_name(tdm__aggfn fn)
{
    return (int)fn >= 0 && (int)fn < N_AGGFN ? aggfn_names[fn] : "?";
}

/* The text of choice @p value of ENUM key @p key (see rt.h). */
void tdm__conf_enum_text(tdm__scope scope, const char *key, int64_t value,
                         char *buf, size_t size)
{
    int r = tdm__conf_find(scope, key);
    buf[0] = 0;
    if (r < 0 || conf_rows[r].type != TDM__CT_ENUM)
        return;
    const char *p = conf_rows[r].choices;
    for (int64_t i = value; i > 0 && p; i--) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p)
        return;
    size_t l = strcspn(p, "|");
    snprintf(buf, size, "%.*s", (int)l, p);
}

/* Public view of the table for tools and the documentation generator. */
int tdm_conf_describe(int i, const char **scope, const char **key,
                      const char **type, const char **def, const char **unit,
                      const char **choices, const char **description)
{
    if (i < 0 || i >= N_ROWS)
        return 0;
    const tdm__conf_row *r = &conf_rows[i];
    if (scope)
        *scope = scope_names[r->scope];
    if (key)
        *key = r->key;
    if (type)
        *type = type_names[r->type];
    if (def)
        *def = r->def;
    if (unit)
        *unit = r->unit;
    if (choices)
        *choices = r->choices;
    if (description)
        *description = r->desc;
    return 1;
}

/* ---- Values ---- */

/* Frees everything a value owns and zeroes it (NULL is fine). */
void tdm__conf_val_free(tdm__conf_val *v)
{
    if (!v)
        return;
    tdm__free(v->text);
    tdm__schema_free(&v->schema);
    for (int i = 0; i < v->n_aggs; i++) {
        tdm__free(v->aggs[i].field);
        tdm__free(v->aggs[i].as);
    }
    tdm__free(v->aggs);
    for (int i = 0; i < v->n_fields; i++)
        tdm__free(v->fields[i]);
    tdm__free(v->fields);
    for (int i = 0; i < 2 * v->n_props; i++)
        tdm__free(v->props[i]);
    tdm__free(v->props);
    memset(v, 0, sizeof *v);
}

/* Copies [s, e) without surrounding blanks. */
static char *dup_trim(const char *s, const char *e)
{
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    return tdm__strndup(s, (size_t)(e - s));
}

static bool ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return *a == *b;
}

/* ---- Durations ---- */

/* Multipliers of the accepted units, longest spelling first so that "ms"
 * is not read as "m" followed by garbage. */
static const struct {
    const char *name;
    int64_t ms;
} dur_units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
};

/* One "<number><unit>" term: digits, an optional fraction, blanks, a
 * unit.  A term without a unit is bare milliseconds (only alone). */
static bool dur_term(const char **pp, int64_t *out, bool *had_unit)
{
    const char *p = *pp;
    int64_t whole = 0, frac = 0, frac_div = 1;
    bool digits = false;
    while (isdigit((unsigned char)*p)) {
        if (__builtin_mul_overflow(whole, 10, &whole) ||
            __builtin_add_overflow(whole, *p - '0', &whole))
            return false;
        digits = true;
        p++;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            if (frac_div >= 1000000000000LL)
                return false;
            frac = frac * 10 + (*p - '0');
            frac_div *= 10;
            digits = true;
            p++;
        }
    }
    if (!digits)
        return false;
    while (*p == ' ' || *p == '\t')
        p++;
    int64_t mult = 0;
    size_t ulen = 0;
    for (size_t i = 0; i < sizeof dur_units / sizeof dur_units[0]; i++) {
        size_t l = strlen(dur_units[i].name);
        if (strncmp(p, dur_units[i].name, l) == 0 &&
            !isalpha((unsigned char)p[l]) && l > ulen) {
            mult = dur_units[i].ms;
            ulen = l;
        }
    }
    *had_unit = ulen > 0;
    if (!ulen) {
        if (isalpha((unsigned char)*p))
            return false; /* an unknown unit */
        mult = 1;
    }
    p += ulen;
    /* The fraction must come to whole milliseconds. */
    if ((frac * mult) % frac_div != 0)
        return false;
    int64_t v;
    if (__builtin_mul_overflow(whole, mult, &v) ||
        __builtin_add_overflow(v, frac * mult / frac_div, &v))
        return false;
    *out = v;
    *pp = p;
    return true;
}

/* Durations: "250ms", "5s", "1.5s", "1m30s", "2h", "1d", "-5s", or a bare
 * number of milliseconds. */
bool tdm__conf_duration(const char *text, int64_t *ms)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    bool neg = false;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p++;
    }
    int64_t total = 0;
    int terms = 0;
    bool any_bare = false;
    while (*p && !isspace((unsigned char)*p)) {
        int64_t v;
        bool unit;
        if (!dur_term(&p, &v, &unit))
            return false;
        if (!unit)
            any_bare = true;
        if (__builtin_add_overflow(total, v, &total))
            return false;
        terms++;
    }
    while (isspace((unsigned char)*p))
        p++;
    if (*p || terms == 0 || (any_bare && terms > 1))
        return false;
    *ms = neg ? -total : total;
    return true;
}

/* Largest exact unit; "forever" for the int64 extremes. */
void tdm__conf_format_duration(int64_t ms, char *buf, size_t n)
{
    static const struct {
        const char *u;
        int64_t v;
    } u[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
    if (ms == INT64_MAX || ms == INT64_MIN) {
        snprintf(buf, n, "%s", ms > 0 ? "forever" : "-forever");
        return;
    }
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if (ms != 0 && ms % u[i].v == 0) {
            snprintf(buf, n, "%lld%s", (long long)(ms / u[i].v), u[i].u);
            return;
        }
    snprintf(buf, n, "%lldms", (long long)ms);
}

/* ---- Scalars ---- */

static bool parse_int(const char *text, int64_t *out)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || end == p)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

static bool parse_double(const char *text, double *out)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return false;
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    if (errno || end == p || !isfinite(v))
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *text, int64_t *out)
{
    static const char *const yes[] = {"true", "yes", "1", "on"};
    static const char *const no[] = {"false", "no", "0", "off"};
    char buf[16];
    size_t l = strlen(text);
    const char *s = text, *e = text + l;
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    if ((size_t)(e - s) >= sizeof buf)
        return false;
    memcpy(buf, s, (size_t)(e - s));
    buf[e - s] = 0;
    for (size_t i = 0; i < 4; i++) {
        if (ieq(buf, yes[i])) {
            *out = 1;
            return true;
        }
        if (ieq(buf, no[i])) {
            *out = 0;
            return true;
        }
    }
    return false;
}

/* Index of @p text among the '|'-separated @p choices, or -1. */
static int enum_index(const char *choices, const char *text)
{
    char buf[64];
    const char *s = text, *e = text + strlen(text);
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    size_t l = (size_t)(e - s);
    if (l >= sizeof buf)
        return -1;
    memcpy(buf, s, l);
    buf[l] = 0;
    int idx = 0;
    const char *c = choices;
    while (*c) {
        const char *bar = strchr(c, '|');
        size_t cl = bar ? (size_t)(bar - c) : strlen(c);
        if (cl == l && strncmp(c, buf, l) == 0)
            return idx;
        idx++;
        if (!bar)
            break;
        c = bar + 1;
    }
    return -1;
}

/* "a|b|c" -> "a, b, c". */
static void list_choices(const char *choices, char *buf, size_t n)
{
    size_t o = 0;
    for (const char *c = choices; *c && o + 3 < n; c++) {
        if (*c == '|') {
            buf[o++] = ',';
            buf[o++] = ' ';
        } else {
            buf[o++] = *c;
        }
    }
    buf[o] = 0;
}

/* ---- Structured types ---- */

/* A FIELDS value: comma-separated names. */
static tdm_err parse_fields(const tdm__conf_row *r, const char *text,
                            tdm__conf_val *v, char *errbuf, size_t n)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return TDM_OK; /* empty: no fields */
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *e = comma ? comma : p + strlen(p);
        char *name = dup_trim(p, e);
        if (!name)
            return TDM_ERR_NOMEM;
        if (!*name) {
            tdm__free(name);
            return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                             "%s: expected comma-separated field names, "
                             "got \"%s\" (an empty name)",
                             r->key, text);
        }
        for (int i = 0; i < v->n_fields; i++)
            if (strcmp(v->fields[i], name) == 0) {
                tdm__errf(errbuf, n, TDM_ERR_INVAL,
                          "%s: \"%s\" is listed twice", r->key, name);
                tdm__free(name);
                return TDM_ERR_INVAL;
            }
        char **nf =
            tdm__realloc(v->fields, (size_t)(v->n_fields + 1) * sizeof *nf);
        if (!nf) {
            tdm__free(name);
            return TDM_ERR_NOMEM;
        }
        v->fields = nf;
        v->fields[v->n_fields++] = name;
        if (!comma)
            break;
        p = comma + 1;
    }
    return TDM_OK;
}

static bool ident_char(int c)
{
    return isalnum(c) || c == '_' || c == '.' || c == '-';
}

/* The function of an aggregate: the name before '(' in @p item; *pp
 * receives the '('.  Returns its index, or -1 with the message set. */
static int agg_fn(const tdm__conf_row *r, const char *item, const char **pp,
                  char *errbuf, size_t n)
{
    const char *p = item;
    const char *fs = p;
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    size_t fl = (size_t)(p - fs);
    while (isspace((unsigned char)*p))
        p++;
    if (fl == 0 || *p != '(') {
        tdm__errf(errbuf, n, TDM_ERR_INVAL,
                  "%s: expected \"fn(field) as name\", got \"%s\"", r->key,
                  item);
        return -1;
    }
    *pp = p;
    for (int i = 0; i < N_AGGFN; i++)
        if (strlen(aggfn_names[i]) == fl &&
            strncmp(aggfn_names[i], fs, fl) == 0)
            return i;
    tdm__errf(errbuf, n, TDM_ERR_INVAL,
              "%s: unknown aggregate function \"%.*s\" (expected count, sum, "
              "min, max, avg, count_distinct, first or last)",
              r->key, (int)fl, fs);
    return -1;
}

/* The field between '(' at @p open and @p close of function @p fn into
 * out->field (NULL for count, which takes none). */
static tdm_err agg_field(const tdm__conf_row *r, const char *item, int fn,
                         const char *open, const char *close,
                         tdm__agg_spec *out, char *errbuf, size_t n)
{
    char *field = dup_trim(open + 1, close);
    if (!field)
        return TDM_ERR_NOMEM;
    tdm_err err = TDM_OK;
    if (fn == TDM__FN_COUNT && *field && strcmp(field, "*") != 0)
        err = tdm__errf(errbuf, n, TDM_ERR_INVAL,
                        "%s: count takes no field (write \"count()\"), got "
                        "\"%s\"",
                        r->key, item);
    else if (fn != TDM__FN_COUNT && !*field)
        err = tdm__errf(errbuf, n, TDM_ERR_INVAL,
                        "%s: %s needs a field, e.g. \"%s(amount)\"", r->key,
                        aggfn_names[fn], aggfn_names[fn]);
    if (err != TDM_OK || fn == TDM__FN_COUNT) {
        tdm__free(field);
        field = NULL;
    }
    out->field = field;
    return err;
}

/* The output name: "as name" at @p p (after the closing ')' at
 * @p close), or fn_field ("count" for count) when @p p is at the end. */
static tdm_err agg_name(const tdm__conf_row *r, const char *item,
                        const char *close, const char *p, int fn,
                        tdm__agg_spec *out, char *errbuf, size_t n)
{
    if (!*p && out->field) {
        size_t l = strlen(aggfn_names[fn]) + 1 + strlen(out->field) + 1;
        out->as = tdm__malloc(l);
        if (out->as)
            snprintf(out->as, l, "%s_%s", aggfn_names[fn], out->field);
        return out->as ? TDM_OK : TDM_ERR_NOMEM;
    }
    if (!*p) {
        out->as = tdm__strndup("count", 5);
        return out->as ? TDM_OK : TDM_ERR_NOMEM;
    }
    if (strncmp(p, "as", 2) != 0 || !isspace((unsigned char)p[2]))
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected \"as name\" after \"%.*s\", got "
                         "\"%s\"",
                         r->key, (int)(close + 1 - item), item, p);
    p += 2;
    while (isspace((unsigned char)*p))
        p++;
    const char *ns = p;
    while (ident_char((unsigned char)*p))
        p++;
    const char *ne = p;
    while (isspace((unsigned char)*p))
        p++;
    if (ns == ne || *p)
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected a column name after \"as\" (letters, "
                         "digits, '_', '.', '-'), got \"%s\"",
                         r->key, ns);
    out->as = tdm__strndup(ns, (size_t)(ne - ns));
    return out->as ? TDM_OK : TDM_ERR_NOMEM;
}

/* One aggregate "fn(field) [as name]" in [s, e). */
static tdm_err parse_one_agg(const tdm__conf_row *r, const char *s,
                             const char *e, tdm__agg_spec *out, char *errbuf,
                             size_t n)
{
    char *item = dup_trim(s, e);
    if (!item)
        return TDM_ERR_NOMEM;
    tdm_err err = TDM_ERR_INVAL;
    const char *p = item;
    int fn = agg_fn(r, item, &p, errbuf, n);
    if (fn < 0)
        goto done;
    const char *close = strchr(p, ')');
    if (!close) {
        tdm__errf(errbuf, n, TDM_ERR_INVAL, "%s: missing ')' in \"%s\"", r->key,
                  item);
        goto done;
    }
    err = agg_field(r, item, fn, p, close, out, errbuf, n);
    if (err != TDM_OK)
        goto done;
    out->fn = (tdm__aggfn)fn;
    p = close + 1;
    while (isspace((unsigned char)*p))
        p++;
    err = agg_name(r, item, close, p, fn, out, errbuf, n);

done:
    if (err != TDM_OK) {
        tdm__free(out->field);
        tdm__free(out->as);
        out->field = out->as = NULL;
    }
    tdm__free(item);
    return err;
}

/* An AGGREGATES value: "fn(field) as name, ...". */
static tdm_err parse_aggs(const tdm__conf_row *r, const char *text,
                          tdm__conf_val *v, char *errbuf, size_t n)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected at least one aggregate like "
                         "\"count() as clicks\", got \"\"",
                         r->key);
    int depth = 0;
    const char *start = p;
    for (const char *c = p;; c++) {
        if (*c == '(')
            depth++;
        else if (*c == ')')
            depth--;
        if ((*c == ',' && depth <= 0) || *c == 0) {
            tdm__agg_spec spec = {0};
            tdm__agg_spec *na =
                tdm__realloc(v->aggs, (size_t)(v->n_aggs + 1) * sizeof *na);
            if (!na)
                return TDM_ERR_NOMEM;
            v->aggs = na;
            tdm_err err = parse_one_agg(r, start, c, &spec, errbuf, n);
            if (err != TDM_OK)
                return err;
            for (int i = 0; i < v->n_aggs; i++)
                if (strcmp(v->aggs[i].as, spec.as) == 0) {
                    tdm__errf(errbuf, n, TDM_ERR_INVAL,
                              "%s: two aggregates are named \"%s\" (give "
                              "one another name with \"as\")",
                              r->key, spec.as);
                    tdm__free(spec.field);
                    tdm__free(spec.as);
                    return TDM_ERR_INVAL;
                }
            v->aggs[v->n_aggs++] = spec;
            if (*c == 0)
                break;
            start = c + 1;
            depth = 0;
        }
    }
    return TDM_OK;
}

/* ---- Bounds messages ---- */

static tdm_err int_range_err(const tdm__conf_row *r, const char *text,
                             char *errbuf, size_t n)
{
    if (r->imax == INT64_MAX)
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected an integer >= %lld, got \"%s\"", r->key,
                         (long long)r->imin, text);
    return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                     "%s: expected an integer from %lld to %lld, got \"%s\"",
                     r->key, (long long)r->imin, (long long)r->imax, text);
}

static tdm_err dur_range_err(const tdm__conf_row *r, const char *text,
                             char *errbuf, size_t n)
{
    char lo[32], hi[32];
    tdm__conf_format_duration(r->imin, lo, sizeof lo);
    tdm__conf_format_duration(r->imax, hi, sizeof hi);
    if (r->imin == INT64_MIN)
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected a duration of at most %s, got \"%s\"",
                         r->key, hi, text);
    if (r->imax == INT64_MAX)
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected a duration of at least %s, got \"%s\"",
                         r->key, lo, text);
    return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                     "%s: expected a duration from %s to %s, got \"%s\"",
                     r->key, lo, hi, text);
}

/* ---- Per type ---- */

/* A STRING value: free text, except csv.delimiter, one character ("\t"
 * and "tab" spell a tab).  @p v->text is the copy to adjust. */
static tdm_err parse_string(const tdm__conf_row *r, const char *text,
                            tdm__conf_val *v, char *errbuf, size_t n)
{
    if (strcmp(r->key, "csv.delimiter") != 0)
        return TDM_OK;
    if (strcmp(text, "\\t") == 0 || strcmp(text, "tab") == 0) {
        v->text[0] = '\t';
        v->text[1] = 0;
    } else if (strlen(text) != 1) {
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected one character (or \"\\t\"), got "
                         "\"%s\"",
                         r->key, text);
    }
    return TDM_OK;
}

/* An INT value within the row's bounds (unless a default). */
static tdm_err parse_int_val(const tdm__conf_row *r, const char *text,
                             bool is_default, tdm__conf_val *v, char *errbuf,
                             size_t n)
{
    if (!parse_int(text, &v->i))
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected an integer, got \"%s\"", r->key, text);
    if (!is_default && (v->i < r->imin || v->i > r->imax))
        return int_range_err(r, text, errbuf, n);
    return TDM_OK;
}

/* A DOUBLE value within the row's bounds (unless a default). */
static tdm_err parse_double_val(const tdm__conf_row *r, const char *text,
                                bool is_default, tdm__conf_val *v, char *errbuf,
                                size_t n)
{
    if (!parse_double(text, &v->d))
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected a number, got \"%s\"", r->key, text);
    if (!is_default && (v->d < r->dmin || v->d > r->dmax))
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected a number from %g to %g, got \"%s\"",
                         r->key, r->dmin, r->dmax, text);
    return TDM_OK;
}

/* A BOOL value. */
static tdm_err parse_bool_val(const tdm__conf_row *r, const char *text,
                              tdm__conf_val *v, char *errbuf, size_t n)
{
    if (!parse_bool(text, &v->i))
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected true or false (or yes/no, 1/0), got "
                         "\"%s\"",
                         r->key, text);
    return TDM_OK;
}

/* A DURATION value within the row's bounds (unless a default).  An
 * empty default is "unset", stored as -1 (watermark.delay). */
static tdm_err parse_duration_val(const tdm__conf_row *r, const char *text,
                                  bool is_default, tdm__conf_val *v,
                                  char *errbuf, size_t n)
{
    if (is_default && !*text) {
        v->i = -1;
        return TDM_OK;
    }
    if (!tdm__conf_duration(text, &v->i))
        return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                         "%s: expected a duration like \"5s\" or \"200ms\", "
                         "got \"%s\"",
                         r->key, text);
    if (!is_default && (v->i < r->imin || v->i > r->imax))
        return dur_range_err(r, text, errbuf, n);
    return TDM_OK;
}

/* An ENUM value: the index of its choice (the conf_enum.h constant). */
static tdm_err parse_enum_val(const tdm__conf_row *r, const char *text,
                              tdm__conf_val *v, char *errbuf, size_t n)
{
    v->i = enum_index(r->choices, text);
    if (v->i >= 0)
        return TDM_OK;
    char choices[256];
    list_choices(r->choices, choices, sizeof choices);
    return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                     "%s: expected one of %s, got \"%s\"", r->key, choices,
                     text);
}

/* A SCHEMA value ("" or blanks: unset). */
static tdm_err parse_schema_val(const tdm__conf_row *r, const char *text,
                                tdm__conf_val *v, char *errbuf, size_t n)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return TDM_OK;
    char msg[200];
    msg[0] = 0;
    tdm_err err = tdm__schema_parse(text, &v->schema, msg, sizeof msg);
    if (err == TDM_ERR_NOMEM)
        tdm__errf(errbuf, n, err, "%s: out of memory", r->key);
    else if (err != TDM_OK)
        tdm__errf(errbuf, n, TDM_ERR_INVAL,
                  "%s: %s (expected \"name:type, ...\" with types int64, "
                  "double, string, bool, timestamp)",
                  r->key, msg[0] ? msg : "malformed schema");
    return err;
}

/* A PROPS row as a whole value: only the empty default parses;
 * properties are set one by one (tdm__conf_set_prop). */
static tdm_err parse_props_val(int row, const char *text, char *errbuf,
                               size_t n)
{
    const tdm__conf_row *r = &conf_rows[row];
    if (!*text)
        return TDM_OK;
    return tdm__errf(errbuf, n, TDM_ERR_INVAL,
                     "%s: set one property at a time, e.g. \"%.*s%s\"", r->key,
                     (int)strlen(r->key) - 1, r->key, props_example(row));
}

/* AGGREGATES and FIELDS, whose parsers leave "out of memory" to say. */
static tdm_err parse_list_val(const tdm__conf_row *r, const char *text,
                              tdm__conf_val *v, char *errbuf, size_t n)
{
    tdm_err err = r->type == TDM__CT_AGGREGATES
                      ? parse_aggs(r, text, v, errbuf, n)
                      : parse_fields(r, text, v, errbuf, n);
    if (err == TDM_ERR_NOMEM)
        tdm__errf(errbuf, n, err, "%s: out of memory", r->key);
    return err;
}

/* Parses @p text by the type of row @p row into @p v (text set). */
static tdm_err parse_by_type(int row, const char *text, bool is_default,
                             tdm__conf_val *v, char *errbuf, size_t n)
{
    const tdm__conf_row *r = &conf_rows[row];
    switch (r->type) {
    case TDM__CT_STRING:
        return parse_string(r, text, v, errbuf, n);
    case TDM__CT_INT:
        return parse_int_val(r, text, is_default, v, errbuf, n);
    case TDM__CT_DOUBLE:
        return parse_double_val(r, text, is_default, v, errbuf, n);
    case TDM__CT_BOOL:
        return parse_bool_val(r, text, v, errbuf, n);
    case TDM__CT_DURATION:
        return parse_duration_val(r, text, is_default, v, errbuf, n);
    case TDM__CT_ENUM:
        return parse_enum_val(r, text, v, errbuf, n);
    case TDM__CT_SCHEMA:
        return parse_schema_val(r, text, v, errbuf, n);
    case TDM__CT_PROPS:
        return parse_props_val(row, text, errbuf, n);
    case TDM__CT_AGGREGATES:
    case TDM__CT_FIELDS:
        return parse_list_val(r, text, v, errbuf, n);
    }
    return TDM_OK;
}

/* ---- Entry point ---- */

/* Parses by the row's type; the old value is replaced only on success. */
tdm_err tdm__conf_parse(int row, const char *text, bool is_default,
                        tdm__conf_val *out, char *errbuf, size_t errbuf_size)
{
    if (row < 0 || row >= N_ROWS || !out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "no such configuration row %d", row);
    const tdm__conf_row *r = &conf_rows[row];
    if (!text)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: value must not be NULL", r->key);
    tdm__conf_val v = {0};
    v.set = !is_default;
    v.text = tdm__strndup(text, strlen(text));
    if (!v.text)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "%s: out of memory", r->key);
    tdm_err err = parse_by_type(row, text, is_default, &v, errbuf, errbuf_size);
    if (err != TDM_OK) {
        tdm__conf_val_free(&v);
        return err;
    }
    tdm__conf_val_free(out);
    *out = v;
    return TDM_OK;
}
