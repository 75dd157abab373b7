/* SPDX-License-Identifier: MIT */
/* sql_expr.c - SQL expressions as the job's expression text.
 *
 * A filter or computed value in SQL becomes a `filter` or `compute.*`
 * key of the job, compiled and evaluated by the library's expression
 * language (docs/job-format.md, Expressions), which carries Flink SQL's
 * operators and scalar functions: one implementation serves the YAML
 * job and SQL.  So this file only renames: a column becomes the job
 * column that holds it (`B.price` of a join's left side is
 * `left.price`), an INTERVAL becomes its milliseconds, and the rest is
 * written back as SQL text, fully parenthesised.  Rules E1-E6 below.
 *
 * Types are told here only for what the planner must declare: the
 * schema type of a computed column (int64 or double or timestamp).
 */
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "sql/sql_plan.h"

/* CAST(x AS DECIMAL(p, s)) or NUMERIC: p and s as in CREATE TABLE
 * (DECIMAL alone is (10, 0)); the expression language checks them. */
static bool is_decimal_cast(const sql_node *e)
{
    return strcmp(e->b->text, "DECIMAL") == 0 ||
           strcmp(e->b->text, "NUMERIC") == 0;
}

static int decimal_p(const sql_node *t)
{
    return t->ival < 0 ? 10 : (int)t->ival;
}

static int decimal_s(const sql_node *t)
{
    return t->ival < 0 ? 0 : (int)t->ival2;
}

/* Records an error (see sql_plan.h). */
int tdm__sql_fail(planner *p, const sql_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
    p->at = at;
    return -1;
}

/* Aggregate functions (see sql_plan.h). */
bool tdm__sql_is_aggregate(const sql_node *e)
{
    static const char *const names[] = {
        "COUNT", "SUM", "MIN", "MAX", "AVG", "FIRST_VALUE", "LAST_VALUE"};
    if (e == NULL || e->kind != SQLK_CALL) {
        return false;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(e->text, names[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* Finds a column (see sql_plan.h).  E1: a name without a qualifier must
 * be unique among the relation's columns. */
const pcol *tdm__sql_resolve(planner *p, const rel *r, const sql_node *id)
{
    const pcol *found = NULL;
    for (int i = 0; i < r->n_cols; i++) {
        const pcol *c = &r->cols[i];
        if (strcasecmp(c->name, id->text) != 0 ||
            (id->qual != NULL &&
             (c->qual == NULL || strcasecmp(c->qual, id->qual) != 0))) {
            continue;
        }
        if (found != NULL) {
            tdm__sql_fail(p, id,
                          "column %s is ambiguous: qualify it (%s.%s or "
                          "%s.%s)",
                          id->text, found->qual ? found->qual : "?", id->text,
                          c->qual ? c->qual : "?", id->text);
            return NULL;
        }
        found = c;
    }
    if (found != NULL && found->used != NULL) {
        *found->used = 1; /* The source must read it. */
    }
    if (found == NULL) {
        const char *near = NULL;
        int best = 3;
        for (int i = 0; i < r->n_cols; i++) {
            int d = tdm__cli_distance(id->text, r->cols[i].name, 2);
            if (d < best) {
                best = d;
                near = r->cols[i].name;
            }
        }
        if (near != NULL) {
            tdm__sql_fail(p, id, "unknown column %s%s%s (did you mean %s?)",
                          id->qual ? id->qual : "", id->qual ? "." : "",
                          id->text, near);
            return NULL;
        }
        char known[400];
        size_t used = 0;
        known[0] = '\0';
        for (int i = 0; i < r->n_cols && used < sizeof known; i++) {
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                     used ? ", " : "", r->cols[i].name);
        }
        tdm__sql_fail(p, id, "unknown column %s%s%s (the columns here: %s)",
                      id->qual ? id->qual : "", id->qual ? "." : "", id->text,
                      known);
    }
    return found;
}

/* Appends to a buffer; remembers an overflow. */
typedef struct obuf {
    char *p;
    size_t n, used;
    int over;
} obuf;

static void out(obuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out(obuf *b, const char *fmt, ...)
{
    va_list ap;
    if (b->used >= b->n) {
        b->over = 1;
        return;
    }
    va_start(ap, fmt);
    int k = vsnprintf(b->p + b->used, b->n - b->used, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= b->n - b->used) {
        b->over = 1;
        b->used = b->n;
        return;
    }
    b->used += (size_t)k;
}

static int emit(planner *p, const rel *r, const sql_node *e, obuf *b);

/* A string literal, quotes doubled. */
static void emit_string(obuf *b, const char *s)
{
    out(b, "'");
    for (; *s; s++) {
        out(b, *s == '\'' ? "''" : "%c", *s);
    }
    out(b, "'");
}

/* A list "a, b, c". */
static int emit_list(planner *p, const rel *r, const sql_node *e, obuf *b)
{
    for (const sql_node *x = e; x != NULL; x = x->next) {
        if (x != e) {
            out(b, ", ");
        }
        if (emit(p, r, x, b) != 0) {
            return -1;
        }
    }
    return 0;
}

/* E6: CURRENT_WATERMARK(c) takes the event-time column of a table read
 * by a source (its filter and computed values see the source subtask's
 * watermark; a join's condition does not see one yet).  The event time
 * must be in milliseconds: a seconds column compared with the
 * watermark would be off by a factor of 1000. */
static int check_current_wm(planner *p, const rel *r, const sql_node *e)
{
    const sql_node *a = e->a;
    const pcol *c;
    if (a == NULL || a->next != NULL || a->kind != SQLK_ID) {
        return tdm__sql_fail(p, e,
                             "CURRENT_WATERMARK takes one argument: the "
                             "table's event-time column");
    }
    if ((c = tdm__sql_resolve(p, r, a)) == NULL) {
        return -1;
    }
    if (r->kind != REL_SOURCE) {
        return tdm__sql_fail(p, e,
                             "CURRENT_WATERMARK over the rows of a window "
                             "or join is not supported yet; use it in the "
                             "WHERE of a table");
    }
    const sql_table *t = r->base->table;
    const sql_col *rt = t->rowtime >= 0 ? &t->cols[t->rowtime] : NULL;
    if (c->rowtime != 1 || rt == NULL) {
        return tdm__sql_fail(p, a,
                             "CURRENT_WATERMARK(%s): %s is not the event-"
                             "time column of %s (WATERMARK FOR%s%s)",
                             a->text, a->text, t->name, rt ? " " : " ...",
                             rt ? rt->name : "");
    }
    if (rt->expr != NULL && rt->expr->a->next->ival == 0) {
        return tdm__sql_fail(p, a,
                             "CURRENT_WATERMARK(%s): the event time is "
                             "read in seconds (TO_TIMESTAMP_LTZ(..., 0)); "
                             "it works with milliseconds",
                             a->text);
    }
    return 0;
}

/* A function call.  E2: aggregates only in a GROUP BY query's items;
 * E3: FLOOR/CEIL(x TO unit) and EXTRACT(unit FROM x) keep their form. */
static int emit_call(planner *p, const rel *r, const sql_node *e, obuf *b)
{
    if (tdm__sql_is_aggregate(e)) {
        return tdm__sql_fail(p, e,
                             "%s is an aggregate: it belongs in the "
                             "SELECT list of a windowed GROUP BY",
                             e->text);
    }
    if (strcmp(e->text, "CURRENT_WATERMARK") == 0 &&
        check_current_wm(p, r, e) != 0) {
        return -1;
    }
    if (e->unit != NULL && strcmp(e->text, "EXTRACT") == 0) {
        out(b, "EXTRACT(%s FROM ", e->unit);
        if (emit(p, r, e->a, b) != 0) {
            return -1;
        }
        out(b, ")");
        return 0;
    }
    out(b, "%s(", e->text);
    if (emit_list(p, r, e->a, b) != 0) {
        return -1;
    }
    if (e->unit != NULL) {
        out(b, " TO %s", e->unit);
    }
    out(b, ")");
    return 0;
}

/* CASE [x] WHEN ... THEN ... [ELSE ...] END. */
static int emit_case(planner *p, const rel *r, const sql_node *e, obuf *b)
{
    out(b, "(CASE");
    if (e->a != NULL) {
        out(b, " ");
        if (emit(p, r, e->a, b) != 0) {
            return -1;
        }
    }
    for (const sql_node *w = e->b; w != NULL; w = w->next) {
        out(b, " WHEN ");
        if (emit(p, r, w->a, b) != 0) {
            return -1;
        }
        out(b, " THEN ");
        if (emit(p, r, w->b, b) != 0) {
            return -1;
        }
    }
    if (e->c != NULL) {
        out(b, " ELSE ");
        if (emit(p, r, e->c, b) != 0) {
            return -1;
        }
    }
    out(b, " END)");
    return 0;
}

/* A column: its job column, in double quotes when not a plain name. */
static int emit_column(planner *p, const rel *r, const sql_node *e, obuf *b)
{
    const pcol *c = tdm__sql_resolve(p, r, e);
    if (c == NULL) {
        return -1;
    }
    bool plain = true;
    for (const char *s = c->job; *s; s++) {
        if (!(*s == '_' || *s == '.' || (*s >= 'a' && *s <= 'z') ||
              (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) {
            plain = false;
        }
    }
    out(b, plain ? "%s" : "\"%s\"", c->job);
    return 0;
}

/* Predicates: IS NULL, BETWEEN, IN, LIKE. */
static int emit_predicate(planner *p, const rel *r, const sql_node *e, obuf *b)
{
    const char *neg = e->ival ? "NOT " : "";
    out(b, "(");
    if (emit(p, r, e->a, b) != 0) {
        return -1;
    }
    switch (e->kind) {
    case SQLK_ISNULL:
        out(b, " IS %sNULL)", neg);
        return 0;
    case SQLK_BETWEEN:
        out(b, " %sBETWEEN ", neg);
        if (emit(p, r, e->b, b) != 0) {
            return -1;
        }
        out(b, " AND ");
        if (emit(p, r, e->c, b) != 0) {
            return -1;
        }
        break;
    case SQLK_IN:
        out(b, " %sIN (", neg);
        if (emit_list(p, r, e->b, b) != 0) {
            return -1;
        }
        out(b, ")");
        break;
    default: /* SQLK_LIKE */
        out(b, " %sLIKE ", neg);
        if (emit(p, r, e->b, b) != 0) {
            return -1;
        }
        if (e->c != NULL) {
            out(b, " ESCAPE ");
            emit_string(b, e->c->text);
        }
        break;
    }
    out(b, ")");
    return 0;
}

/* Operators. */
static int emit_operator(planner *p, const rel *r, const sql_node *e, obuf *b)
{
    if (e->kind == SQLK_UNARY) {
        out(b, strcmp(e->text, "NOT") == 0 ? "(NOT " : "(%s", e->text);
        if (emit(p, r, e->a, b) != 0) {
            return -1;
        }
        out(b, ")");
        return 0;
    }
    out(b, "(");
    if (emit(p, r, e->a, b) != 0) {
        return -1;
    }
    out(b, " %s ", e->text);
    if (emit(p, r, e->b, b) != 0) {
        return -1;
    }
    out(b, ")");
    return 0;
}

/* One expression (E4: INTERVAL is its milliseconds). */
static int emit(planner *p, const rel *r, const sql_node *e, obuf *b)
{
    int64_t ms;
    switch (e->kind) {
    case SQLK_ID:
        return emit_column(p, r, e, b);
    case SQLK_INT:
    case SQLK_NUM:
        out(b, "%s", e->text);
        return 0;
    case SQLK_STR:
        emit_string(b, e->text);
        return 0;
    case SQLK_BOOL:
        out(b, e->ival ? "TRUE" : "FALSE");
        return 0;
    case SQLK_NULL:
        out(b, "NULL");
        return 0;
    case SQLK_INTERVAL:
        if ((ms = tdm__sql_interval_ms(e->text, e->unit)) < 0) {
            return tdm__sql_fail(p, e,
                                 "INTERVAL '%s' %s: expected an amount "
                                 "and a unit (SECOND, MINUTE, HOUR, "
                                 "DAY)",
                                 e->text, e->unit);
        }
        out(b, "%lld", (long long)ms);
        return 0;
    case SQLK_BINARY:
    case SQLK_UNARY:
        return emit_operator(p, r, e, b);
    case SQLK_ISNULL:
    case SQLK_BETWEEN:
    case SQLK_IN:
    case SQLK_LIKE:
        return emit_predicate(p, r, e, b);
    case SQLK_CASE:
        return emit_case(p, r, e, b);
    case SQLK_CALL:
        return emit_call(p, r, e, b);
    case SQLK_CAST:
        out(b, "CAST(");
        if (emit(p, r, e->a, b) != 0) {
            return -1;
        }
        if (is_decimal_cast(e)) {
            out(b, " AS DECIMAL(%d, %d))", decimal_p(e->b), decimal_s(e->b));
        } else {
            out(b, " AS %s)", e->b->text);
        }
        return 0;
    default: /* E5 */
        return tdm__sql_fail(p, e,
                             "this is not an expression tidemark can "
                             "evaluate here");
    }
}

/* The job text of an expression (see sql_plan.h). */
int tdm__sql_expr_text(planner *p, const rel *r, const sql_node *e, char *buf,
                       size_t n)
{
    obuf b = {.p = buf, .n = n};
    buf[0] = '\0';
    if (emit(p, r, e, &b) != 0) {
        return -1;
    }
    if (b.over) {
        return tdm__sql_fail(p, e, "expression too long");
    }
    return 0;
}

/* The type of a call by its function. */
static const char *call_type(planner *p, const rel *r, const sql_node *e)
{
    static const char *const strings[] = {"LOWER",     "UPPER", "CONCAT",
                                          "SUBSTRING", "TRIM",  "DATE_FORMAT"};
    static const char *const ints[] = {"CHAR_LENGTH", "CHARACTER_LENGTH",
                                       "EXTRACT", "UNIX_TIMESTAMP"};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        if (strcmp(e->text, strings[i]) == 0) {
            return "string";
        }
    }
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (strcmp(e->text, ints[i]) == 0) {
            return "int64";
        }
    }
    if (strncmp(e->text, "TO_TIMESTAMP", 12) == 0 ||
        strcmp(e->text, "CURRENT_WATERMARK") == 0) {
        return "timestamp";
    }
    if (e->a == NULL) {
        tdm__sql_fail(p, e, "cannot tell the type of %s()", e->text);
        return NULL;
    }
    return tdm__sql_expr_type(p, r, e->a); /* MOD ABS ROUND COALESCE ... */
}

/* The wider of two numeric types.  Arithmetic on a decimal runs on
 * doubles (the expression language reads decimals as doubles), so it is
 * double; CAST(... AS DECIMAL(p, s)) makes it exact again. */
static const char *arith_type(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return NULL;
    }
    return strcmp(a, "double") == 0 || strcmp(b, "double") == 0 ||
                   tdm__sql_decimal_scale(a) >= 0 ||
                   tdm__sql_decimal_scale(b) >= 0
               ? "double"
               : "int64";
}

/* The type of an expression (see sql_plan.h). */
const char *tdm__sql_expr_type(planner *p, const rel *r, const sql_node *e)
{
    const pcol *c;
    switch (e->kind) {
    case SQLK_ID:
        return (c = tdm__sql_resolve(p, r, e)) != NULL ? c->type : NULL;
    case SQLK_INT:
    case SQLK_INTERVAL:
        return "int64";
    case SQLK_NUM:
        return "double";
    case SQLK_STR:
        return "string";
    case SQLK_NULL:
        return "int64";
    case SQLK_BINARY:
        if (strchr("+-*/%", e->text[0]) != NULL && e->text[1] == '\0') {
            return arith_type(tdm__sql_expr_type(p, r, e->a),
                              tdm__sql_expr_type(p, r, e->b));
        }
        return strcmp(e->text, "||") == 0 ? "string" : "bool";
    case SQLK_UNARY:
        return strcmp(e->text, "NOT") == 0 ? "bool"
                                           : tdm__sql_expr_type(p, r, e->a);
    case SQLK_CASE:
        return tdm__sql_expr_type(p, r, e->b->b);
    case SQLK_CALL:
        return call_type(p, r, e);
    case SQLK_CAST:
        if (is_decimal_cast(e)) {
            const char *t =
                tdm__sql_decimal_type(decimal_p(e->b), decimal_s(e->b));
            if (t == NULL) {
                tdm__sql_fail(p, e->b,
                              "DECIMAL(%d, %d): tidemark's DECIMAL holds 1 "
                              "to 18 digits (a scaled int64) and a scale "
                              "up to its precision",
                              decimal_p(e->b), decimal_s(e->b));
            }
            return t;
        }
        return strstr(e->b->text, "INT") != NULL          ? "int64"
               : strcmp(e->b->text, "DOUBLE") == 0        ? "double"
               : strncmp(e->b->text, "TIMESTAMP", 9) == 0 ? "timestamp"
               : strcmp(e->b->text, "BOOLEAN") == 0       ? "bool"
                                                          : "string";
    default:
        return "bool";
    }
}
