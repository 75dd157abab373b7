/* SPDX-License-Identifier: MIT */
/* expr_parse.c - the expression language's precedence parser: recursive
 * descent from OR down to the operands, checking types and emitting the
 * postfix program (expr_emit.c) as it goes, so that a bad expression is
 * an error with a column and a good one needs no second pass.
 *
 * Precedence, lowest first (one function per level):
 *
 *   parse_or / parse_logic   OR, AND
 *   parse_not                NOT
 *   parse_cmp                = != < <= > >=, IS [NOT] NULL, and the
 *                            predicates [NOT] BETWEEN / IN / LIKE
 *                            (below); none of them chains
 *   parse_add, parse_mul     + -, then * / % ||
 *   parse_unary              unary - and +
 *   parse_primary            numbers, strings, TRUE, FALSE, NULL,
 *                            fields, ( expr ), CASE and calls
 *                            (below)
 *
 * The second half of the file: the forms of the expression language that a word
 * introduces, parsed and type-checked: the predicates [NOT] BETWEEN,
 * IN and LIKE (after a comparison's left operand), CASE, and function
 * calls.  The precedence parser hands over at the word;
 * the expressions inside a form are parsed by it again (the grammar is
 * recursive, so both halves live in this one file).
 *
 * Keywords of a context (BETWEEN, IN, LIKE, ESCAPE, WHEN, THEN, ELSE,
 * END, FROM, FOR, TO, AS, BOTH, LEADING, TRAILING, units and type names)
 * are bare words recognised only where a field cannot stand, so fields
 * with those names keep working; only CASE at the start of an operand is
 * reserved.  A name followed by "(" is a function (expr_fn.h lists the
 * bodies; expr_fn.c and expr_time.c run them): special forms (CAST,
 * EXTRACT, FLOOR/CEIL ... TO, SUBSTRING ... FROM, TRIM ... FROM,
 * COALESCE, NULLIF, MOD) have a parser each, the others a row of `fns`
 * giving the argument kinds.  An unknown function, like an unknown
 * field, is reported with the closest known name.
 *
 * CASE and COALESCE are the only code with jumps: each result is
 * followed by an OP_NOP that becomes OP_I2D once the whole construct
 * turns out double, and jumps land just past the construct, so
 * tdm__expr_take_const (which removes only the last instruction) never
 * moves a target.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/expr_fn.h"
#include "runtime/expr_int.h"

static tdm__expr_type parse_or(parser *p);
static tdm__expr_type parse_add(parser *p);
static bool parse_predicate(parser *p, tdm__expr_type a);
static tdm__expr_type parse_case(parser *p);
static tdm__expr_type parse_call(parser *p);

/* ---- Operands ---- */

/* Reports an unknown field with the closest one or the schema's list. */
static void unknown_field(parser *p, size_t at, const char *name, size_t len)
{
    const char *near = tdm__expr_closest_field(p->schema, name, len);
    if (near) {
        tdm__expr_perr(p, at, "unknown field \"%.*s\" (did you mean \"%s\"?)",
                       (int)len, name, near);
        return;
    }
    char list[200];
    size_t o = 0;
    list[0] = 0;
    for (int i = 0; i < p->schema->n && o + 8 < sizeof list; i++) {
        int w = snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "",
                         p->schema->fields[i].name);
        if (w < 0 || (size_t)w >= sizeof list - o) {
            snprintf(list + o, sizeof list - o, ", ...");
            break;
        }
        o += (size_t)w;
    }
    tdm__expr_perr(p, at, "unknown field \"%.*s\" (the schema has %s)",
                   (int)len, name, p->schema->n ? list : "no fields");
}

/* The unquoted bytes of a quoted token into a new string. */
static char *unquote(const parser *p, const tok *t, size_t *len)
{
    const char *s = p->src + t->at;
    char q = s[0];
    char *out = tdm__malloc(t->len);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 1; i + 1 < t->len; i++) {
        out[o++] = s[i];
        if (s[i] == q)
            i++; /* a doubled quote */
    }
    out[o] = 0;
    *len = o;
    return out;
}

/* Field: bare or "quoted" name, resolved against the schema. */
static tdm__expr_type parse_field(parser *p)
{
    tok t = p->cur;
    char *qname = NULL;
    const char *name = p->src + t.at;
    size_t len = t.len;
    if (t.quoted) {
        qname = unquote(p, &t, &len);
        if (!qname) {
            tdm__expr_nomem(p);
            return 0;
        }
        name = qname;
    }
    int idx = -1;
    for (int i = 0; i < p->schema->n; i++)
        if (strlen(p->schema->fields[i].name) == len &&
            memcmp(p->schema->fields[i].name, name, len) == 0)
            idx = i;
    tdm__expr_type ty = 0;
    tdm_type ft = idx >= 0 ? p->schema->fields[idx].type : TDM_TYPE_INT64;
    if (idx < 0) {
        unknown_field(p, t.at, name, len);
    } else {
        switch (TDM_TYPE_BASE(ft)) {
        case TDM_TYPE_DECIMAL: /* as a double: v / 10^s is the nearest */
            ty = TDM__EXPR_DOUBLE;
            break;
        case TDM_TYPE_DOUBLE:
            ty = TDM__EXPR_DOUBLE;
            break;
        case TDM_TYPE_STRING:
            ty = TDM__EXPR_STRING;
            break;
        case TDM_TYPE_BOOL:
            ty = TDM__EXPR_BOOL;
            break;
        default:
            ty = TDM__EXPR_INT;
            break;
        }
        if (p->sp + 1 > STACK_MAX)
            tdm__expr_perr(p, t.at,
                           "the expression is too complex (more than %d "
                           "pending operands)",
                           STACK_MAX);
        if (TDM_TYPE_BASE(ft) == TDM_TYPE_DECIMAL)
            tdm__expr_emit(p, OP_FIELD_DEC, TDM_DECIMAL_SCALE(ft), idx);
        else
            tdm__expr_emit(p, OP_FIELD, ty, idx);
    }
    tdm__free(qname);
    tdm__expr_next(p);
    return p->err == TDM_OK ? ty : 0;
}

/* A number; @p neg when a unary minus came right before it (so that
 * -9223372036854775808 is INT64_MIN). */
static tdm__expr_type parse_number(parser *p, bool neg, size_t minus_at)
{
    tok t = p->cur;
    const char *s = p->src + t.at;
    tdm__expr_val v = {.null = 0};
    tdm__expr_type ty;
    if (t.kind == T_INT) {
        uint64_t u = 0;
        bool over = false;
        for (size_t i = 0; i < t.len; i++) {
            if (u > (UINT64_MAX - 9) / 10)
                over = true;
            else
                u = u * 10 + (uint64_t)(s[i] - '0');
        }
        if (over || u > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) {
            tdm__expr_perr(p, neg ? minus_at : t.at,
                           "integer %s%.*s is out of the int64 range (write it "
                           "as a decimal, e.g. %.*s.0)",
                           neg ? "-" : "", (int)t.len, s, (int)t.len, s);
            return 0;
        }
        v.u.i = neg ? (int64_t)(0 - u) : (int64_t)u;
        ty = TDM__EXPR_INT;
    } else {
        char buf[128];
        if (t.len >= sizeof buf) {
            tdm__expr_perr(p, t.at, "number \"%.*s...\" is too long", 20, s);
            return 0;
        }
        memcpy(buf, s, t.len);
        buf[t.len] = 0;
        double d = strtod(buf, NULL);
        if (!isfinite(d)) {
            tdm__expr_perr(p, t.at, "number %s is out of the double range",
                           buf);
            return 0;
        }
        v.u.d = neg ? -d : d;
        ty = TDM__EXPR_DOUBLE;
    }
    tdm__expr_emit_const(p, t.at, v);
    tdm__expr_next(p);
    return p->err == TDM_OK ? ty : 0;
}

/* operand: number, 'string', TRUE, FALSE, NULL, field, ( expr ),
 *          CASE ... END, name(args) */
static tdm__expr_type parse_primary(parser *p)
{
    char d[64];
    tok t = p->cur;
    tdm__expr_val v = {.null = 0};
    switch (t.kind) {
    case T_INT:
    case T_NUM:
        return parse_number(p, false, 0);
    case T_STR: {
        size_t len;
        char *bytes = unquote(p, &t, &len);
        char **ns = bytes
                        ? tdm__realloc(p->e->strs,
                                       (size_t)(p->e->n_strs + 1) * sizeof *ns)
                        : NULL;
        if (!ns) {
            tdm__free(bytes);
            tdm__expr_nomem(p);
            return 0;
        }
        p->e->strs = ns;
        p->e->strs[p->e->n_strs++] = bytes;
        v.u.s.p = bytes;
        v.u.s.len = (uint32_t)len;
        tdm__expr_emit_const(p, t.at, v);
        tdm__expr_next(p);
        return p->err == TDM_OK ? TDM__EXPR_STRING : 0;
    }
    case T_TRUE:
    case T_FALSE:
        v.u.i = t.kind == T_TRUE;
        tdm__expr_emit_const(p, t.at, v);
        tdm__expr_next(p);
        return p->err == TDM_OK ? TDM__EXPR_BOOL : 0;
    case T_NULL:
        v.null = 1;
        tdm__expr_emit_const(p, t.at, v);
        tdm__expr_next(p);
        return p->err == TDM_OK ? TDM__EXPR_NULL : 0;
    case T_IDENT:
        if (tdm__expr_kw(p, "CASE"))
            return parse_case(p);
        if (!t.quoted && tdm__expr_next_is_lp(p))
            return parse_call(p);
        return parse_field(p);
    case T_LP: {
        if (!tdm__expr_enter(p))
            return 0;
        tdm__expr_next(p);
        tdm__expr_type ty = parse_or(p);
        if (p->err != TDM_OK)
            return 0;
        if (p->cur.kind != T_RP) {
            tdm__expr_perr(p, p->cur.at,
                           "expected \")\" (to close the \"(\" at "
                           "column %zu), got %s",
                           t.at + 1,
                           tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
            return 0;
        }
        p->depth--;
        tdm__expr_next(p);
        return p->err == TDM_OK ? ty : 0;
    }
    default:
        tdm__expr_perr(p, t.at, "expected an operand, got %s",
                       tdm__expr_tok_desc(p, &t, d, sizeof d));
        return 0;
    }
}

/* unary: - unary | + unary | operand */
static tdm__expr_type parse_unary(parser *p)
{
    tok t = p->cur;
    if (t.kind != T_MINUS && t.kind != T_PLUS)
        return parse_primary(p);
    if (!tdm__expr_enter(p))
        return 0;
    tdm__expr_next(p);
    if (p->err != TDM_OK)
        return 0;
    tdm__expr_type ty;
    if (t.kind == T_MINUS && (p->cur.kind == T_INT || p->cur.kind == T_NUM)) {
        ty = parse_number(p, true, t.at); /* a negative literal */
    } else {
        ty = parse_unary(p);
        if (p->err != TDM_OK)
            return 0;
        if (!numeric(ty)) {
            tdm__expr_perr(p, t.at, "unary %c needs a number, got %s",
                           t.kind == T_MINUS ? '-' : '+',
                           tdm__expr_type_name(ty));
            return 0;
        }
        if (t.kind == T_MINUS)
            tdm__expr_emit(p, ty == TDM__EXPR_DOUBLE ? OP_NEG_D : OP_NEG_I, 0,
                           0);
    }
    p->depth--;
    return p->err == TDM_OK ? ty : 0;
}

/* ---- Operators ---- */

/* a || b: both strings. */
static tdm__expr_type concat_op(parser *p, size_t at, tdm__expr_type a,
                                tdm__expr_type b)
{
    if ((a != TDM__EXPR_STRING && a != TDM__EXPR_NULL) ||
        (b != TDM__EXPR_STRING && b != TDM__EXPR_NULL)) {
        tdm__expr_perr(p, at, "|| needs strings, got %s and %s",
                       tdm__expr_type_name(a), tdm__expr_type_name(b));
        return 0;
    }
    tdm__expr_emit_ins(p, OP_FN, TDM__FN_CONCAT, 0, false, 2);
    return TDM__EXPR_STRING;
}

/* mul: unary ((* | / | % | ||) unary)* */
static tdm__expr_type parse_mul(parser *p)
{
    tdm__expr_type a = parse_unary(p);
    while (p->err == TDM_OK &&
           (p->cur.kind == T_STAR || p->cur.kind == T_SLASH ||
            p->cur.kind == T_PCT || p->cur.kind == T_CONCAT)) {
        tok o = p->cur;
        tdm__expr_next(p);
        tdm__expr_type b = parse_unary(p);
        if (p->err != TDM_OK)
            return 0;
        a = o.kind == T_CONCAT ? concat_op(p, o.at, a, b)
                               : tdm__expr_arith(p, o.kind, o.at, a, b);
    }
    return p->err == TDM_OK ? a : 0;
}

/* add: mul ((+ | -) mul)* */
static tdm__expr_type parse_add(parser *p)
{
    tdm__expr_type a = parse_mul(p);
    while (p->err == TDM_OK &&
           (p->cur.kind == T_PLUS || p->cur.kind == T_MINUS)) {
        tok o = p->cur;
        tdm__expr_next(p);
        tdm__expr_type b = parse_mul(p);
        if (p->err != TDM_OK)
            return 0;
        a = tdm__expr_arith(p, o.kind, o.at, a, b);
    }
    return p->err == TDM_OK ? a : 0;
}

static bool is_cmp(tok_kind k)
{
    return k >= T_EQ && k <= T_GE;
}

/* cmp: add [(= | != | < | <= | > | >=) add | IS [NOT] NULL
 *           | [NOT] BETWEEN add AND add | [NOT] IN (or, ...)
 *           | [NOT] LIKE add [ESCAPE 'c']] */
static tdm__expr_type parse_cmp(parser *p)
{
    char d[64];
    tdm__expr_type a = parse_add(p);
    if (p->err != TDM_OK)
        return 0;
    tok o = p->cur;
    if (o.kind == T_IS) {
        tdm__expr_next(p);
        bool neg = false;
        if (p->cur.kind == T_NOT) {
            neg = true;
            tdm__expr_next(p);
        }
        if (p->err != TDM_OK)
            return 0;
        if (p->cur.kind != T_NULL) {
            tdm__expr_perr(p, p->cur.at, "expected NULL after IS%s, got %s",
                           neg ? " NOT" : "",
                           tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
            return 0;
        }
        tdm__expr_next(p);
        tdm__expr_emit(p, neg ? OP_NOT_NULL : OP_IS_NULL, 0, 0);
    } else if (parse_predicate(p, a)) {
        if (p->err != TDM_OK)
            return 0;
    } else if (is_cmp(o.kind)) {
        tdm__expr_next(p);
        tdm__expr_type b = parse_add(p);
        if (p->err != TDM_OK)
            return 0;
        int ck = tdm__expr_cmp_kind(p, o.at, a, b, p->src + o.at, (int)o.len);
        if (ck < 0)
            return 0;
        static const uint8_t rel[] = {
            [T_EQ] = REL_EQ, [T_NE] = REL_NE, [T_LT] = REL_LT,
            [T_LE] = REL_LE, [T_GT] = REL_GT, [T_GE] = REL_GE};
        tdm__expr_emit_binary(p, OP_CMP, rel[o.kind], ck, false, false);
    } else {
        return a;
    }
    if (p->err == TDM_OK &&
        (is_cmp(p->cur.kind) || p->cur.kind == T_IS || p->cur.kind == T_NOT ||
         tdm__expr_kw(p, "BETWEEN") || tdm__expr_kw(p, "IN") ||
         tdm__expr_kw(p, "LIKE")))
        tdm__expr_perr(p, p->cur.at,
                       "comparisons do not chain (combine them with "
                       "AND, or add parentheses), got %s",
                       tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
    return p->err == TDM_OK ? TDM__EXPR_BOOL : 0;
}

/* not: NOT not | cmp */
static tdm__expr_type parse_not(parser *p)
{
    if (p->cur.kind != T_NOT)
        return parse_cmp(p);
    tok t = p->cur;
    if (!tdm__expr_enter(p))
        return 0;
    tdm__expr_next(p);
    tdm__expr_type a = parse_not(p);
    if (p->err != TDM_OK)
        return 0;
    if (!boolish(a)) {
        tdm__expr_perr(p, t.at, "NOT needs a condition (true or false), got %s",
                       tdm__expr_type_name(a));
        return 0;
    }
    tdm__expr_emit(p, OP_NOT, 0, 0);
    p->depth--;
    return p->err == TDM_OK ? TDM__EXPR_BOOL : 0;
}

/* and: not (AND not)* ; or: and (OR and)* */
static tdm__expr_type parse_logic(parser *p, bool is_or)
{
    tdm__expr_type a = is_or ? parse_logic(p, false) : parse_not(p);
    tok_kind k = is_or ? T_OR : T_AND;
    while (p->err == TDM_OK && p->cur.kind == k) {
        tok o = p->cur;
        tdm__expr_next(p);
        tdm__expr_type b = is_or ? parse_logic(p, false) : parse_not(p);
        if (p->err != TDM_OK)
            return 0;
        if (!boolish(a) || !boolish(b)) {
            tdm__expr_perr(p, o.at,
                           "%s needs conditions (true or false), got %s "
                           "and %s",
                           is_or ? "OR" : "AND", tdm__expr_type_name(a),
                           tdm__expr_type_name(b));
            return 0;
        }
        tdm__expr_emit_binary(p, is_or ? OP_OR : OP_AND, 0, 0, false, false);
        a = TDM__EXPR_BOOL;
    }
    return p->err == TDM_OK ? a : 0;
}

static tdm__expr_type parse_or(parser *p)
{
    return parse_logic(p, true);
}

/* ---- The whole text ---- */

/* Parses all of p->src (see expr_int.h): one expression, then the end. */
tdm__expr_type tdm__expr_parse(parser *p)
{
    char d[64];
    tdm__expr_next(p);
    tdm__expr_type ty = p->err == TDM_OK ? parse_or(p) : 0;
    if (p->err == TDM_OK && p->cur.kind != T_END)
        tdm__expr_perr(p, p->cur.at, "expected an operator or the end, got %s",
                       tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
    return ty;
}

/* ==== The forms a word introduces: predicates, CASE, calls ==== */

/* ---- Predicates ---- */

/* x [NOT] BETWEEN lo AND hi, after BETWEEN (at @p at); x is pushed. */
static void parse_between(parser *p, size_t at, tdm__expr_type x)
{
    char d[64];
    tdm__expr_type lo = parse_add(p);
    int ck1 =
        p->err == TDM_OK ? tdm__expr_cmp_kind(p, at, x, lo, "BETWEEN", 7) : -1;
    if (ck1 < 0)
        return;
    if (p->cur.kind != T_AND) {
        tdm__expr_perr(p, p->cur.at,
                       "expected AND (of BETWEEN at column %zu), got %s",
                       at + 1, tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
        return;
    }
    tdm__expr_next(p);
    tdm__expr_type hi = parse_add(p);
    int ck2 =
        p->err == TDM_OK ? tdm__expr_cmp_kind(p, at, x, hi, "BETWEEN", 7) : -1;
    if (ck2 >= 0)
        tdm__expr_emit_ins(p, OP_BETWEEN, ck1, ck2, false, 0);
}

/* x [NOT] IN (v, ...), after IN (at @p at); x is pushed. */
static void parse_in(parser *p, size_t at, tdm__expr_type x)
{
    char d[64];
    if (p->cur.kind != T_LP) {
        tdm__expr_perr(p, p->cur.at, "expected \"(\" after IN, got %s",
                       tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
        return;
    }
    tdm__expr_emit(p, OP_IN_BEGIN, 0, 0);
    do {
        tdm__expr_next(p);
        tdm__expr_type v = p->err == TDM_OK ? parse_or(p) : 0;
        int ck =
            p->err == TDM_OK ? tdm__expr_cmp_kind(p, at, x, v, "IN", 2) : -1;
        if (ck < 0)
            return;
        int32_t idx = 0;
        bool kc = tdm__expr_take_const(p, &idx);
        tdm__expr_emit_ins(p, OP_IN_TEST, 0, ck, kc, idx);
    } while (p->cur.kind == T_COMMA);
    if (p->cur.kind != T_RP) {
        tdm__expr_perr(p, p->cur.at,
                       "expected \",\" or \")\" in the IN list, got %s",
                       tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
        return;
    }
    tdm__expr_next(p);
    tdm__expr_emit(p, OP_NIP, 0, 0);
}

/* The constant the last instruction pushes, or NULL. */
static const tdm__expr_val *last_const(const parser *p)
{
    const tdm__expr *e = p->e;
    if (p->err != TDM_OK || e->n_code == 0 ||
        e->code[e->n_code - 1].op != OP_CONST)
        return NULL;
    return &e->consts[e->code[e->n_code - 1].a];
}

/* ESCAPE 'c' of LIKE: one ASCII character; returns it, 0 on error. */
static int parse_escape(parser *p)
{
    tok t = p->cur;
    size_t len = 0;
    const char *s = p->src + t.at;
    if (t.kind == T_STR)
        len = t.len - 2;
    if (t.kind != T_STR || len != 1 || (unsigned char)s[1] >= 0x80 ||
        s[1] == '\'') {
        tdm__expr_perr(p, t.at,
                       "expected one ASCII character in quotes after "
                       "ESCAPE, e.g. '!'");
        return 0;
    }
    tdm__expr_next(p);
    return (unsigned char)s[1];
}

/* s [NOT] LIKE pattern [ESCAPE 'c'], after LIKE (at @p at). */
static void parse_like(parser *p, size_t at, tdm__expr_type x)
{
    size_t pat_at = p->cur.at;
    tdm__expr_type pt = parse_add(p);
    if (p->err != TDM_OK)
        return;
    if ((x != TDM__EXPR_STRING && x != TDM__EXPR_NULL) ||
        (pt != TDM__EXPR_STRING && pt != TDM__EXPR_NULL)) {
        tdm__expr_perr(p, at, "LIKE needs strings, got %s and %s",
                       tdm__expr_type_name(x), tdm__expr_type_name(pt));
        return;
    }
    const tdm__expr_val *pc = last_const(p);
    int esc = 0;
    if (tdm__expr_kw(p, "ESCAPE")) {
        tdm__expr_next(p);
        esc = parse_escape(p);
    }
    if (p->err != TDM_OK)
        return;
    if (pc && !pc->null && esc && pc->u.s.len) {
        const char *ps = pc->u.s.p;
        size_t k = 0;
        while (k < pc->u.s.len)
            k += (unsigned char)ps[k] == esc ? 2 : 1;
        if (k > pc->u.s.len) {
            tdm__expr_perr(p, pat_at,
                           "the LIKE pattern ends with its escape "
                           "character");
            return;
        }
    }
    tdm__expr_emit_ins(p, OP_FN, TDM__FN_LIKE, esc, false, 2);
}

/* After x (pushed, type @p a): [NOT] BETWEEN / IN / LIKE, or false when
 * none follows. */
static bool parse_predicate(parser *p, tdm__expr_type a)
{
    char d[64];
    bool neg = p->cur.kind == T_NOT;
    if (neg)
        tdm__expr_next(p);
    tok w = p->cur;
    if (!tdm__expr_kw(p, "BETWEEN") && !tdm__expr_kw(p, "IN") &&
        !tdm__expr_kw(p, "LIKE")) {
        if (neg)
            tdm__expr_perr(p, w.at,
                           "expected BETWEEN, IN or LIKE after NOT, got %s",
                           tdm__expr_tok_desc(p, &w, d, sizeof d));
        return neg;
    }
    tdm__expr_next(p);
    if (tdm__expr_word_is(p->src + w.at, w.len, "BETWEEN"))
        parse_between(p, w.at, a);
    else if (tdm__expr_word_is(p->src + w.at, w.len, "IN"))
        parse_in(p, w.at, a);
    else
        parse_like(p, w.at, a);
    if (neg)
        tdm__expr_emit(p, OP_NOT, 0, 0);
    return true;
}

/* ---- Arguments ---- */

/* An argument: any expression; *at receives its column. */
static tdm__expr_type arg(parser *p, size_t *at)
{
    *at = p->cur.at;
    return p->err == TDM_OK ? parse_or(p) : 0;
}

/* Argument kinds: 'n' a number, 'i' an int64 (or timestamp), 's' a
 * string; NULL fits each. */
static bool kind_ok(tdm__expr_type t, char kind)
{
    if (t == TDM__EXPR_NULL)
        return true;
    if (kind == 'n')
        return t == TDM__EXPR_INT || t == TDM__EXPR_DOUBLE;
    return t == (kind == 'i' ? TDM__EXPR_INT : TDM__EXPR_STRING);
}

/* Checks argument @p k (1-based) of @p fn against @p kind. */
static bool want_kind(parser *p, size_t at, tdm__expr_type t, char kind, int k,
                      const char *fn)
{
    static const char *const what[] = {['n'] = "a number",
                                       ['i'] = "an int64 or timestamp",
                                       ['s'] = "a string"};
    if (p->err != TDM_OK)
        return false;
    if (kind_ok(t, kind))
        return true;
    tdm__expr_perr(p, at, "expected %s as argument %d of %s, got %s",
                   what[(unsigned char)kind], k, fn, tdm__expr_type_name(t));
    return false;
}

/* ---- CASE (and COALESCE's results) ---- */

/* The results of CASE or COALESCE: one type, int64 and double giving
 * double (the int64 ones converted, see branches_close). */
typedef struct branches {
    int32_t jumps; /* chain (through a) of jumps to the end */
    int32_t convs; /* chain (through a) of OP_NOPs after each result */
    tdm__expr_type type;
} branches;

static void unify(parser *p, size_t at, branches *b, tdm__expr_type t,
                  const char *what)
{
    tdm__expr_type r = b->type;
    if (p->err != TDM_OK || t == TDM__EXPR_NULL || t == r)
        return;
    if (r == TDM__EXPR_NULL)
        b->type = t;
    else if (numeric(r) && numeric(t))
        b->type = TDM__EXPR_DOUBLE;
    else
        tdm__expr_perr(p, at, "%s needs results of one type, got %s and %s",
                       what, tdm__expr_type_name(r), tdm__expr_type_name(t));
}

/* Emits @p o linked into the chain at *head (through its a). */
static void emit_linked(parser *p, op o, int k, int32_t *head)
{
    tdm__expr_emit(p, o, k, *head);
    if (p->err == TDM_OK)
        *head = p->e->n_code - 1;
}

/* Points every jump of the chain to the next instruction, and turns the
 * conversions of int64 results into I2D when the type is double. */
static void branches_close(parser *p, branches *b)
{
    if (p->err != TDM_OK)
        return;
    ins *code = p->e->code;
    for (int32_t k = b->jumps, nx; k >= 0; k = nx) {
        nx = code[k].a;
        code[k].a = p->e->n_code;
    }
    for (int32_t k = b->convs, nx; k >= 0; k = nx) {
        nx = code[k].a;
        code[k].a = 0;
        if (b->type == TDM__EXPR_DOUBLE && code[k].k == TDM__EXPR_INT)
            code[k].op = OP_I2D;
    }
}

/* WHEN v THEN r of a CASE: the test jumps past the branch when it does
 * not hold; the stack is back at @p base after it. */
static void case_when(parser *p, bool simple, tdm__expr_type x, int base,
                      branches *b)
{
    size_t at, rat;
    tdm__expr_next(p);
    tdm__expr_type v = arg(p, &at);
    if (p->err != TDM_OK)
        return;
    if (simple) {
        int ck = tdm__expr_cmp_kind(p, at, x, v, "WHEN", 4);
        if (ck >= 0)
            tdm__expr_emit_ins(p, OP_WHEN, 0, ck, false, -1);
    } else if (!boolish(v)) {
        tdm__expr_perr(p, at, "expected a condition after WHEN, got %s",
                       tdm__expr_type_name(v));
    } else {
        tdm__expr_emit(p, OP_JNT, 0, -1);
    }
    int32_t test = p->e->n_code - 1;
    if (!tdm__expr_expect_word(p, "THEN"))
        return;
    tdm__expr_type r = arg(p, &rat);
    unify(p, rat, b, r, "CASE");
    emit_linked(p, OP_NOP, r, &b->convs);
    if (simple)
        tdm__expr_emit(p, OP_NIP, 0, 0);
    emit_linked(p, OP_JMP, 0, &b->jumps);
    if (p->err == TDM_OK) {
        p->sp = base;
        p->e->code[test].a = p->e->n_code;
    }
}

/* CASE [x] WHEN ... THEN ... [ELSE ...] END */
static tdm__expr_type parse_case(parser *p)
{
    char d[64];
    if (!tdm__expr_enter(p))
        return 0;
    tdm__expr_next(p);
    bool simple = !tdm__expr_kw(p, "WHEN") && !tdm__expr_kw(p, "END");
    size_t at;
    tdm__expr_type x = simple ? arg(p, &at) : 0;
    int base = p->sp;
    branches b = {-1, -1, TDM__EXPR_NULL};
    if (p->err == TDM_OK && !tdm__expr_kw(p, "WHEN"))
        tdm__expr_perr(p, p->cur.at, "expected WHEN, got %s",
                       tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
    while (p->err == TDM_OK && tdm__expr_kw(p, "WHEN"))
        case_when(p, simple, x, base, &b);
    tdm__expr_type r = TDM__EXPR_NULL;
    if (p->err == TDM_OK && tdm__expr_kw(p, "ELSE")) {
        tdm__expr_next(p);
        r = arg(p, &at);
        unify(p, at, &b, r, "CASE");
    } else {
        tdm__expr_emit_const(p, p->cur.at, (tdm__expr_val){.null = 1});
    }
    emit_linked(p, OP_NOP, r, &b.convs);
    if (simple)
        tdm__expr_emit(p, OP_NIP, 0, 0);
    if (!tdm__expr_expect_word(p, "END"))
        return 0;
    branches_close(p, &b);
    p->depth--;
    return p->err == TDM_OK ? b.type : 0;
}

/* ---- Functions with a syntax of their own ---- */

/* COALESCE(a, b, ...): the first that is not null. */
static tdm__expr_type call_coalesce(parser *p, const tok *name)
{
    branches b = {-1, -1, TDM__EXPR_NULL};
    (void)name;
    for (;;) {
        size_t at;
        tdm__expr_type t = arg(p, &at);
        unify(p, at, &b, t, "COALESCE");
        emit_linked(p, OP_NOP, t, &b.convs);
        if (p->err != TDM_OK || p->cur.kind != T_COMMA)
            break;
        tdm__expr_next(p);
        emit_linked(p, OP_JNN, 0, &b.jumps);
        tdm__expr_emit(p, OP_POP, 0, 0);
    }
    if (!tdm__expr_expect_tok(p, T_RP, "\",\" or \")\""))
        return 0;
    branches_close(p, &b);
    return b.type;
}

/* NULLIF(a, b): null when a = b, else a. */
static tdm__expr_type call_nullif(parser *p, const tok *name)
{
    size_t at;
    (void)name;
    tdm__expr_type a = arg(p, &at);
    if (!tdm__expr_expect_tok(p, T_COMMA, "\",\""))
        return 0;
    tdm__expr_type b = arg(p, &at);
    int ck =
        p->err == TDM_OK ? tdm__expr_cmp_kind(p, at, a, b, "NULLIF", 6) : -1;
    if (ck < 0 || !tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    tdm__expr_emit_binary(p, OP_NULLIF, 0, ck, false, false);
    return a;
}

/* MOD(a, b): a % b. */
static tdm__expr_type call_mod(parser *p, const tok *name)
{
    size_t at, bt;
    tdm__expr_type a = arg(p, &at);
    if (!want_kind(p, at, a, 'n', 1, "MOD") ||
        !tdm__expr_expect_tok(p, T_COMMA, "\",\""))
        return 0;
    tdm__expr_type b = arg(p, &bt);
    if (!want_kind(p, bt, b, 'n', 2, "MOD") ||
        !tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    return tdm__expr_arith(p, T_PCT, name->at, a, b);
}

/* A time unit; @p extract allows DOW and DOY.  0 on error. */
static int parse_unit(parser *p, bool extract)
{
    static const struct {
        const char *w;
        int unit;
    } units[] = {{"SECOND", TDM__UNIT_SECOND}, {"MINUTE", TDM__UNIT_MINUTE},
                 {"HOUR", TDM__UNIT_HOUR},     {"DAY", TDM__UNIT_DAY},
                 {"MONTH", TDM__UNIT_MONTH},   {"QUARTER", TDM__UNIT_QUARTER},
                 {"YEAR", TDM__UNIT_YEAR},     {"DOW", TDM__UNIT_DOW},
                 {"DOY", TDM__UNIT_DOY}};
    char d[64];
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
        if (tdm__expr_kw(p, units[k].w) &&
            (extract || units[k].unit < TDM__UNIT_DOW)) {
            tdm__expr_next(p);
            return units[k].unit;
        }
    }
    tdm__expr_perr(
        p, p->cur.at,
        "expected a time unit (SECOND, MINUTE, HOUR, DAY, MONTH, QUARTER, "
        "YEAR%s), got %s",
        extract ? ", DOW, DOY" : "",
        tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
    return 0;
}

/* FLOOR(x) / CEIL(x) on a number, or FLOOR(ts TO unit) / CEIL(...). */
static tdm__expr_type call_floor_ceil(parser *p, const tok *name)
{
    bool floor = tdm__expr_word_is(p->src + name->at, name->len, "FLOOR");
    const char *fn = floor ? "FLOOR" : "CEIL";
    size_t at;
    tdm__expr_type x = arg(p, &at);
    if (p->err == TDM_OK && tdm__expr_kw(p, "TO")) {
        tdm__expr_next(p);
        int unit = want_kind(p, at, x, 'i', 1, fn) ? parse_unit(p, false) : 0;
        if (!unit || !tdm__expr_expect_tok(p, T_RP, "\")\""))
            return 0;
        tdm__expr_emit_ins(p, OP_FN, floor ? TDM__FN_FLOOR_TS : TDM__FN_CEIL_TS,
                           unit, false, 1);
        return TDM__EXPR_INT;
    }
    if (!want_kind(p, at, x, 'n', 1, fn) ||
        !tdm__expr_expect_tok(p, T_RP, "\")\" or TO"))
        return 0;
    if (x == TDM__EXPR_DOUBLE)
        tdm__expr_emit_ins(p, OP_FN, floor ? TDM__FN_FLOOR_D : TDM__FN_CEIL_D,
                           0, false, 1);
    return x;
}

/* EXTRACT(unit FROM ts) */
static tdm__expr_type call_extract(parser *p, const tok *name)
{
    size_t at;
    (void)name;
    int unit = parse_unit(p, true);
    if (!unit || !tdm__expr_expect_word(p, "FROM"))
        return 0;
    tdm__expr_type x = arg(p, &at);
    if (!want_kind(p, at, x, 'i', 1, "EXTRACT") ||
        !tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    tdm__expr_emit_ins(p, OP_FN, TDM__FN_EXTRACT, unit, false, 1);
    return TDM__EXPR_INT;
}

/* SUBSTRING(s FROM i [FOR n]) or SUBSTRING(s, i [, n]) */
static tdm__expr_type call_substring(parser *p, const tok *name)
{
    size_t at;
    (void)name;
    tdm__expr_type s = arg(p, &at);
    if (!want_kind(p, at, s, 's', 1, "SUBSTRING"))
        return 0;
    bool sql = tdm__expr_kw(p, "FROM");
    if (sql ? !tdm__expr_expect_word(p, "FROM")
            : !tdm__expr_expect_tok(p, T_COMMA, "\",\""))
        return 0;
    int n = 2;
    tdm__expr_type i = arg(p, &at);
    if (!want_kind(p, at, i, 'i', 2, "SUBSTRING"))
        return 0;
    if (sql ? tdm__expr_kw(p, "FOR") : p->cur.kind == T_COMMA) {
        tdm__expr_next(p);
        i = arg(p, &at);
        if (!want_kind(p, at, i, 'i', 3, "SUBSTRING"))
            return 0;
        n = 3;
    }
    if (!tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    tdm__expr_emit_ins(p, OP_FN, TDM__FN_SUBSTRING, 0, false, n);
    return TDM__EXPR_STRING;
}

/* TRIM(s) or TRIM([BOTH | LEADING | TRAILING] [chars] FROM s) */
static tdm__expr_type call_trim(parser *p, const tok *name)
{
    int mode = TDM__TRIM_BOTH, n = 1;
    bool saw = tdm__expr_kw(p, "BOTH") || tdm__expr_kw(p, "LEADING") ||
               tdm__expr_kw(p, "TRAILING");
    size_t at;
    (void)name;
    if (saw) {
        mode = tdm__expr_kw(p, "BOTH")      ? TDM__TRIM_BOTH
               : tdm__expr_kw(p, "LEADING") ? TDM__TRIM_LEADING
                                            : TDM__TRIM_TRAILING;
        tdm__expr_next(p);
    }
    if (saw && tdm__expr_kw(p, "FROM")) {
        tdm__expr_next(p);
    } else {
        tdm__expr_type c = arg(p, &at);
        if (!want_kind(p, at, c, 's', 1, "TRIM"))
            return 0;
        if (saw || tdm__expr_kw(p, "FROM")) {
            if (!tdm__expr_expect_word(p, "FROM"))
                return 0;
            n = 2;
        }
    }
    if (n == 2 || saw) {
        tdm__expr_type s = arg(p, &at);
        if (!want_kind(p, at, s, 's', n, "TRIM"))
            return 0;
    }
    if (!tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    tdm__expr_emit_ins(p, OP_FN, TDM__FN_TRIM, mode, false, n);
    return TDM__EXPR_STRING;
}

/* After DECIMAL or NUMERIC: "(p [, s])" or nothing (10, 0), into
 * *prec and *scale, checked as a schema's decimal(p,s); false on error. */
static bool parse_decimal_args(parser *p, int *prec, int *scale)
{
    char d[64];
    *prec = 10;
    *scale = 0;
    if (p->cur.kind != T_LP)
        return true;
    tdm__expr_next(p);
    for (int k = 0; k < 2; k++) {
        size_t at = p->cur.at;
        int v = 0;
        if (p->cur.kind != T_INT || p->cur.len > 2) {
            tdm__expr_perr(p, at, "expected a %s, got %s",
                           k ? "scale" : "precision (1 to 18)",
                           tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
            return false;
        }
        for (size_t i = 0; i < p->cur.len; i++)
            v = v * 10 + (p->src[at + i] - '0');
        if (k == 0 ? v < 1 || v > 18 : v > *prec) {
            tdm__expr_perr(p, at,
                           k == 0 ? "DECIMAL precision %d is not supported "
                                    "(1 to 18: a decimal is a scaled int64)"
                                  : "DECIMAL scale %d is more than the "
                                    "precision",
                           v);
            return false;
        }
        *(k ? scale : prec) = v;
        tdm__expr_next(p);
        if (k == 1 || p->cur.kind != T_COMMA)
            break;
        tdm__expr_next(p);
    }
    return tdm__expr_expect_tok(p, T_RP, "\")\"");
}

/* CAST's target type; returns TDM__CAST_*, 0 on error.  DECIMAL(p, s)
 * sets *prec and *scale. */
static int parse_cast_type(parser *p, int *prec, int *scale)
{
    static const struct {
        const char *w;
        int to;
    } types[] = {{"BIGINT", TDM__CAST_BIGINT},
                 {"INT", TDM__CAST_INT},
                 {"INTEGER", TDM__CAST_INT},
                 {"DOUBLE", TDM__CAST_DOUBLE},
                 {"STRING", TDM__CAST_STRING},
                 {"VARCHAR", TDM__CAST_STRING},
                 {"BOOLEAN", TDM__CAST_BOOL},
                 {"TIMESTAMP", TDM__CAST_TIMESTAMP},
                 {"TIMESTAMP_LTZ", TDM__CAST_TIMESTAMP}};
    char d[64];
    if (tdm__expr_kw(p, "DECIMAL") || tdm__expr_kw(p, "NUMERIC")) {
        tdm__expr_next(p);
        return parse_decimal_args(p, prec, scale) ? TDM__CAST_DECIMAL : 0;
    }
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        if (!tdm__expr_kw(p, types[k].w))
            continue;
        int to = types[k].to;
        tdm__expr_next(p);
        if (p->cur.kind != T_LP || to == TDM__CAST_BIGINT ||
            to == TDM__CAST_INT || to == TDM__CAST_BOOL ||
            to == TDM__CAST_DOUBLE)
            return to;
        tdm__expr_next(
            p); /* VARCHAR(n): any n; TIMESTAMP(3): milliseconds only */
        size_t at = p->cur.at;
        bool ok = p->cur.kind == T_INT &&
                  (to == TDM__CAST_STRING ||
                   (p->cur.len == 1 && p->src[p->cur.at] == '3'));
        if (!ok) {
            tdm__expr_perr(p, at, "expected %s, got %s",
                           to == TDM__CAST_STRING ? "a length"
                                                  : "3 (milliseconds)",
                           tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
            return 0;
        }
        tdm__expr_next(p);
        return tdm__expr_expect_tok(p, T_RP, "\")\"") ? to : 0;
    }
    tdm__expr_perr(
        p, p->cur.at,
        "expected a type (BIGINT, INT, INTEGER, DOUBLE, DECIMAL(p, s), "
        "STRING, VARCHAR, BOOLEAN, TIMESTAMP(3)), got %s",
        tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
    return 0;
}

/* CAST(x AS DECIMAL(p, s)) of an x of type @p x: a double rounded half
 * away from zero to s places (on its shortest decimal form, as ROUND),
 * null beyond p digits; a decimal field assigned from it (compute) is
 * then exact. */
static tdm__expr_type cast_decimal(parser *p, size_t tat, tdm__expr_type x,
                                   int prec, int scale)
{
    if (x == TDM__EXPR_BOOL) {
        tdm__expr_perr(p, tat, "cannot cast bool to DECIMAL");
        return 0;
    }
    if (x == TDM__EXPR_INT)
        tdm__expr_emit(p, OP_I2D, 0, 0);
    else if (x == TDM__EXPR_STRING)
        tdm__expr_emit_ins(p, OP_FN, TDM__FN_CAST, x | (TDM__CAST_DOUBLE << 3),
                           false, 1);
    tdm__expr_emit_const(p, tat, (tdm__expr_val){.u.i = prec});
    tdm__expr_emit_const(p, tat, (tdm__expr_val){.u.i = scale});
    tdm__expr_emit_ins(p, OP_FN, TDM__FN_DECIMAL_D, 0, false, 3);
    return TDM__EXPR_DOUBLE;
}

/* CAST(x AS type) */
static tdm__expr_type call_cast(parser *p, const tok *name)
{
    static const tdm__expr_type result[] = {
        [TDM__CAST_BIGINT] = TDM__EXPR_INT,
        [TDM__CAST_INT] = TDM__EXPR_INT,
        [TDM__CAST_DOUBLE] = TDM__EXPR_DOUBLE,
        [TDM__CAST_STRING] = TDM__EXPR_STRING,
        [TDM__CAST_BOOL] = TDM__EXPR_BOOL,
        [TDM__CAST_TIMESTAMP] = TDM__EXPR_INT};
    size_t at;
    (void)name;
    tdm__expr_type x = arg(p, &at);
    if (!tdm__expr_expect_word(p, "AS"))
        return 0;
    size_t tat = p->cur.at;
    int prec = 0, scale = 0;
    int to = parse_cast_type(p, &prec, &scale);
    if (!to || !tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    if (to == TDM__CAST_DECIMAL)
        return x == TDM__EXPR_NULL ? TDM__EXPR_DOUBLE
                                   : cast_decimal(p, tat, x, prec, scale);
    bool bad = (to == TDM__CAST_DOUBLE && x == TDM__EXPR_BOOL) ||
               (to == TDM__CAST_TIMESTAMP &&
                (x == TDM__EXPR_DOUBLE || x == TDM__EXPR_BOOL));
    if (bad) {
        tdm__expr_perr(p, tat, "cannot cast %s to %.*s", tdm__expr_type_name(x),
                       (int)(p->pos - tat - 1), p->src + tat);
        return 0;
    }
    if (x == TDM__EXPR_NULL)
        return result[to];
    bool same = x == result[to] && to != TDM__CAST_INT &&
                !(to == TDM__CAST_TIMESTAMP && x == TDM__EXPR_STRING);
    if (!same)
        tdm__expr_emit_ins(p, OP_FN, TDM__FN_CAST, x | (to << 3), false, 1);
    return result[to];
}

/* A constant pattern of DATE_FORMAT or TO_TIMESTAMP must be supported. */
static void check_pattern(parser *p, size_t at)
{
    const tdm__expr_val *c = last_const(p);
    size_t bad = 0;
    if (c && !c->null && !tdm__expr_time_pattern_ok(c->u.s.p, c->u.s.len, &bad))
        tdm__expr_perr(
            p, at,
            "unsupported date pattern at \"%.*s\" (letters y M d H m s "
            "S, text in '')",
            (int)(c->u.s.len - bad > 8 ? 8 : c->u.s.len - bad), c->u.s.p + bad);
}

/* DATE_FORMAT(ts or string, pattern) */
static tdm__expr_type call_date_format(parser *p, const tok *name)
{
    size_t at, ft;
    (void)name;
    tdm__expr_type x = arg(p, &at);
    if (p->err == TDM_OK && x != TDM__EXPR_INT && x != TDM__EXPR_STRING &&
        x != TDM__EXPR_NULL) {
        tdm__expr_perr(p, at,
                       "expected a timestamp or a string as argument 1 of "
                       "DATE_FORMAT, got %s",
                       tdm__expr_type_name(x));
        return 0;
    }
    if (!tdm__expr_expect_tok(p, T_COMMA, "\",\""))
        return 0;
    tdm__expr_type f = arg(p, &ft);
    if (!want_kind(p, ft, f, 's', 2, "DATE_FORMAT"))
        return 0;
    check_pattern(p, ft);
    if (!tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    tdm__expr_emit_ins(p, OP_FN,
                       x == TDM__EXPR_STRING ? TDM__FN_DATE_FORMAT_S
                                             : TDM__FN_DATE_FORMAT,
                       0, false, 2);
    return TDM__EXPR_STRING;
}

/* TO_TIMESTAMP_LTZ(n, 0 | 3): seconds or milliseconds. */
static tdm__expr_type call_to_ts_ltz(parser *p, const tok *name)
{
    size_t at;
    (void)name;
    tdm__expr_type x = arg(p, &at);
    if (!want_kind(p, at, x, 'i', 1, "TO_TIMESTAMP_LTZ") ||
        !tdm__expr_expect_tok(p, T_COMMA, "\",\""))
        return 0;
    at = p->cur.at;
    arg(p, &at);
    const tdm__expr_val *c = last_const(p);
    int64_t prec = c && !c->null ? c->u.i : -1;
    int32_t idx;
    if (p->err != TDM_OK)
        return 0;
    if (p->e->code[p->e->n_code - 1].op != OP_CONST ||
        (prec != 0 && prec != 3)) {
        tdm__expr_perr(
            p, at, "expected the precision 0 (seconds) or 3 (milliseconds)");
        return 0;
    }
    tdm__expr_take_const(p, &idx);
    if (!tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    tdm__expr_emit_ins(p, OP_FN, TDM__FN_TO_TS_LTZ, (int)prec, false, 1);
    return TDM__EXPR_INT;
}

/* CURRENT_WATERMARK(field): the current watermark of the operator
 * evaluating it, null before its first, as in Flink SQL.  The argument
 * is an int64 or timestamp field (the event time's, in Flink a rowtime
 * attribute); it only gives the result its type. */
static tdm__expr_type call_current_wm(parser *p, const tok *name)
{
    size_t at = p->cur.at;
    (void)name;
    tdm__expr_type x = arg(p, &at);
    if (p->err != TDM_OK)
        return 0;
    if (p->e->code[p->e->n_code - 1].op != OP_FIELD || x != TDM__EXPR_INT) {
        tdm__expr_perr(p, at,
                       "expected the event-time field (an int64 or "
                       "timestamp field) as the argument of "
                       "CURRENT_WATERMARK");
        return 0;
    }
    if (!tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    tdm__expr_emit(p, OP_WM, 0, 0);
    return TDM__EXPR_INT;
}

/* ---- Functions with plain arguments, and the call ---- */

/* Functions with plain arguments: their kinds ('[' starts the optional
 * ones, '*' repeats the last), their body (fn_d when the first argument
 * is a double) and result ('=': the first argument's type). */
typedef struct fn_def {
    const char *name;
    uint8_t fn, fn_d, mode;
    const char *args;
    char result;
} fn_def;

static const fn_def fns[] = {
    {"ABS", TDM__FN_ABS_I, TDM__FN_ABS_D, 0, "n", '='},
    {"ROUND", TDM__FN_ROUND_I, TDM__FN_ROUND_D, 0, "n[i", '='},
    {"CHAR_LENGTH", TDM__FN_CHAR_LENGTH, 0, 0, "s", 'i'},
    {"CHARACTER_LENGTH", TDM__FN_CHAR_LENGTH, 0, 0, "s", 'i'},
    {"LOWER", TDM__FN_LOWER, 0, 0, "s", 's'},
    {"UPPER", TDM__FN_UPPER, 0, 0, "s", 's'},
    {"LTRIM", TDM__FN_TRIM, 0, TDM__TRIM_LEADING, "s", 's'},
    {"RTRIM", TDM__FN_TRIM, 0, TDM__TRIM_TRAILING, "s", 's'},
    {"CONCAT", TDM__FN_CONCAT, 0, 0, "s*", 's'},
    {"SUBSTR", TDM__FN_SUBSTRING, 0, 0, "si[i", 's'},
    {"TO_TIMESTAMP", TDM__FN_TO_TS, 0, 0, "s[s", 'i'},
    {"UNIX_TIMESTAMP", TDM__FN_UNIX_TS, 0, 0, "s[s", 'i'},
};

typedef tdm__expr_type (*special_fn)(parser *p, const tok *name);

static const struct {
    const char *name;
    special_fn parse;
} specials[] = {
    {"CAST", call_cast},
    {"COALESCE", call_coalesce},
    {"NULLIF", call_nullif},
    {"MOD", call_mod},
    {"FLOOR", call_floor_ceil},
    {"CEIL", call_floor_ceil},
    {"CEILING", call_floor_ceil},
    {"EXTRACT", call_extract},
    {"SUBSTRING", call_substring},
    {"TRIM", call_trim},
    {"DATE_FORMAT", call_date_format},
    {"TO_TIMESTAMP_LTZ", call_to_ts_ltz},
    {"CURRENT_WATERMARK", call_current_wm},
};

/* The kind of argument @p k (0-based) of @p sig, 0 past the last; *min
 * receives the number of required ones. */
static char sig_kind(const char *sig, int k, int *min)
{
    const char *opt = strchr(sig, '[');
    *min = opt ? (int)(opt - sig) : (int)strlen(sig) - !!strchr(sig, '*');
    char last = 0;
    for (const char *c = sig; *c; c++) {
        if (*c == '[')
            continue;
        if (*c == '*')
            return last;
        if (k-- == 0)
            return *c;
        last = *c;
    }
    return 0;
}

/* "1 argument", "1 or 2 arguments", "at least 1 argument". */
static void arity_text(const char *sig, char *buf, size_t n)
{
    int min, max = 0;
    sig_kind(sig, 0, &min);
    for (const char *c = sig; *c; c++)
        max += *c != '[' && *c != '*';
    if (strchr(sig, '*'))
        snprintf(buf, n, "at least %d argument%s", min, min == 1 ? "" : "s");
    else if (min == max)
        snprintf(buf, n, "%d argument%s", min, min == 1 ? "" : "s");
    else
        snprintf(buf, n, "%d to %d arguments", min, max);
}

/* A call of @p f: the arguments up to ")", checked against its kinds. */
static tdm__expr_type call_plain(parser *p, const tok *name, const fn_def *f)
{
    int n = 0, min;
    tdm__expr_type first = TDM__EXPR_NULL;
    while (p->err == TDM_OK && p->cur.kind != T_RP) {
        if (n && !tdm__expr_expect_tok(p, T_COMMA, "\",\" or \")\""))
            return 0;
        size_t at;
        tdm__expr_type t = arg(p, &at);
        char kind = sig_kind(f->args, n, &min);
        if (kind && !want_kind(p, at, t, kind, n + 1, f->name))
            return 0;
        if (kind == 's' && n == 1 && f->result == 'i')
            check_pattern(p, at); /* TO_TIMESTAMP's pattern */
        first = n == 0 ? t : first;
        if (!kind && p->err == TDM_OK) {
            char a[64];
            arity_text(f->args, a, sizeof a);
            tdm__expr_perr(p, at, "%s takes %s, got more", f->name, a);
        }
        n++;
    }
    sig_kind(f->args, 0, &min);
    if (p->err == TDM_OK && n < min) {
        char a[64];
        arity_text(f->args, a, sizeof a);
        tdm__expr_perr(p, p->cur.at, "%s takes %s, got %d", f->name, a, n);
    }
    if (!tdm__expr_expect_tok(p, T_RP, "\")\""))
        return 0;
    bool dbl = first == TDM__EXPR_DOUBLE && f->fn_d;
    tdm__expr_emit_ins(p, OP_FN, dbl ? f->fn_d : f->fn, f->mode, false, n);
    return f->result == '='   ? first
           : f->result == 'i' ? TDM__EXPR_INT
                              : TDM__EXPR_STRING;
}

/* Reports an unknown function with the closest known name. */
static void unknown_fn(parser *p, const tok *name)
{
    const char *s = p->src + name->at, *best = NULL;
    int best_d = name->len / 3 > 2 ? (int)(name->len / 3) + 1 : 3;
    for (size_t k = 0;
         k < sizeof fns / sizeof fns[0] + sizeof specials / sizeof specials[0];
         k++) {
        const char *c = k < sizeof fns / sizeof fns[0]
                            ? fns[k].name
                            : specials[k - sizeof fns / sizeof fns[0]].name;
        int d = tdm__expr_distance(s, name->len, c, strlen(c));
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    if (best)
        tdm__expr_perr(p, name->at,
                       "unknown function \"%.*s\" (did you mean %s?)",
                       (int)name->len, s, best);
    else
        tdm__expr_perr(p, name->at, "unknown function \"%.*s\"", (int)name->len,
                       s);
}

/* name ( args ): a function (names are case-insensitive). */
static tdm__expr_type parse_call(parser *p)
{
    tok name = p->cur;
    const char *s = p->src + name.at;
    if (!tdm__expr_enter(p))
        return 0;
    tdm__expr_next(p); /* ( */
    tdm__expr_next(p);
    tdm__expr_type r = 0;
    bool found = false;
    for (size_t k = 0; !found && k < sizeof specials / sizeof specials[0]; k++)
        if (tdm__expr_word_is(s, name.len, specials[k].name)) {
            found = true;
            r = specials[k].parse(p, &name);
        }
    for (size_t k = 0; !found && k < sizeof fns / sizeof fns[0]; k++)
        if (tdm__expr_word_is(s, name.len, fns[k].name)) {
            found = true;
            r = call_plain(p, &name, &fns[k]);
        }
    if (!found)
        unknown_fn(p, &name);
    p->depth--;
    return p->err == TDM_OK ? r : 0;
}
