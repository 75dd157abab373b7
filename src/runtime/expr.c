/* SPDX-License-Identifier: MIT */
/* expr.c - the expression language of a source's `filter` and
 * `compute.<field>` keys: a lexer, a recursive-descent parser that checks
 * types and emits a postfix program as it goes, and the evaluator.
 *
 * Precedence, lowest first: OR, AND, NOT, comparisons, IS [NOT] NULL,
 * [NOT] BETWEEN / IN / LIKE (not chained), + -, * / % ||, unary -,
 * operands (including CASE and function calls).  Nulls follow SQL; integer
 * arithmetic that would overflow or divide by zero gives null instead of
 * undefined behaviour; a double result that is not finite is null too.
 *
 * Keywords of a context (BETWEEN, IN, LIKE, ESCAPE, WHEN, THEN, ELSE, END,
 * FROM, FOR, TO, AS, BOTH, LEADING, TRAILING, units and type names) are
 * bare words recognised only where a field cannot stand, so fields with
 * those names keep working; only CASE at the start of an operand is
 * reserved.  A name followed by "(" is a function (expr_fn.h lists the
 * bodies; expr_fn.c and expr_time.c run them): special forms (CAST,
 * EXTRACT, FLOOR/CEIL ... TO, SUBSTRING ... FROM, TRIM ... FROM, COALESCE,
 * NULLIF, MOD) have a parser each, the others a row of `fns` giving the
 * argument kinds.  CASE and COALESCE are the only code with jumps: each
 * result is followed by an OP_NOP that becomes OP_I2D once the whole
 * construct turns out double, and jumps land just past the construct,
 * so take_const (which removes only the last instruction) never moves a
 * target.
 *
 * Nothing is allocated after compilation: the evaluator keeps its stack
 * on the C stack, sized by the compiler's bound, and strings that
 * functions build go to the caller's scratch (TDM__EXPR_SCRATCH_BYTES,
 * 16 KiB per evaluation; a result that does not fit is null).
 * tdm__expr_true and the source keys use a scratch on their own stack.
 * docs/job-format.md ("Expressions") is the user's description.
 */
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/expr.h"
#include "runtime/expr_fn.h"
#include "runtime/rt.h"

/* Evaluation stack slots; the compiler refuses programs that need more. */
#define STACK_MAX 128
/* Nesting (parentheses, NOT, unary minus) the parser follows. */
#define DEPTH_MAX 64

/* ---- Programs ---- */

typedef enum op {
    OP_CONST, /* push consts[a] */
    OP_FIELD, /* push field a of the row; k: its expression type */
    OP_I2D,   /* int to double, a slots below the top */
    OP_NEG_I,
    OP_NEG_D,
    OP_ADD_I,
    OP_SUB_I,
    OP_MUL_I,
    OP_DIV_I,
    OP_MOD_I,
    OP_ADD_D,
    OP_SUB_D,
    OP_MUL_D,
    OP_DIV_D,
    OP_MOD_D,
    OP_CMP, /* k: relation (REL_*), ck: operand kinds (CK_*) */
    OP_AND,
    OP_OR,
    OP_NOT,
    OP_IS_NULL,
    OP_NOT_NULL,
    OP_FN,       /* function k (TDM__FN_*, mode ck) of the top a values */
    OP_NOP,      /* a CASE or COALESCE branch's conversion, patched to I2D */
    OP_JMP,      /* go to instruction a */
    OP_JNT,      /* pop; go to a unless it was a non-null true */
    OP_JNN,      /* go to a if the top is not null (keeping it) */
    OP_POP,      /* drop the top */
    OP_NIP,      /* drop the slot below the top */
    OP_WHEN,     /* pop b; go to a unless top = b (ck: kinds) */
    OP_IN_BEGIN, /* push false: IN's result so far */
    OP_IN_TEST,  /* b: result OR= (needle = b), ck: kinds */
    OP_BETWEEN,  /* x, lo, hi to x BETWEEN lo AND hi; k, ck: kinds */
    OP_NULLIF    /* a = null if a = b (ck: kinds) */
} op;

enum { REL_EQ, REL_NE, REL_LT, REL_LE, REL_GT, REL_GE };
enum { CK_II, CK_DD, CK_ID, CK_DI, CK_SS };

/* One instruction.  A binary operator whose right operand is a constant
 * takes it from consts[a] (kc set) instead of the stack: the constant is
 * never pushed, which saves two of the five steps of "x % 123 = 0". */
typedef struct ins {
    uint8_t op;
    uint8_t k;  /* OP_FIELD: the field's type; OP_CMP: the relation */
    uint8_t ck; /* OP_CMP: the operand kinds (CK_*) */
    uint8_t kc; /* binary operators: the right operand is consts[a] */
    int32_t a;
} ins;

struct tdm__expr {
    tdm__expr_type type;
    ins *code;
    int n_code, cap_code;
    tdm__expr_val *consts;
    int n_consts, cap_consts;
    char **strs; /* bytes of string constants */
    int n_strs;
};

/* Name of a type for messages. */
const char *tdm__expr_type_name(tdm__expr_type t)
{
    switch (t) {
    case TDM__EXPR_INT:
        return "int64";
    case TDM__EXPR_DOUBLE:
        return "double";
    case TDM__EXPR_STRING:
        return "string";
    case TDM__EXPR_BOOL:
        return "bool";
    case TDM__EXPR_NULL:
        return "null";
    }
    return "?";
}

tdm__expr_type tdm__expr_result_type(const tdm__expr *e)
{
    return e->type;
}

/* Frees a program and what it owns (NULL is fine). */
void tdm__expr_destroy(tdm__expr *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n_strs; i++)
        tdm__free(e->strs[i]);
    tdm__free(e->strs);
    tdm__free(e->code);
    tdm__free(e->consts);
    tdm__free(e);
}

/* ---- Tokens ---- */

typedef enum tok_kind {
    T_END,
    T_INT,   /* digits only: value decided by the parser (sign) */
    T_NUM,   /* a decimal or exponent literal */
    T_STR,   /* 'text' ('' is a quote) */
    T_IDENT, /* a field name, bare or "quoted" */
    T_LP,
    T_RP,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_SLASH,
    T_PCT,
    T_CONCAT, /* || */
    T_COMMA,
    T_EQ,
    T_NE,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_AND,
    T_OR,
    T_NOT,
    T_IS,
    T_NULL,
    T_TRUE,
    T_FALSE
} tok_kind;

typedef struct tok {
    tok_kind kind;
    size_t at, len; /* the token's bytes in the source */
    bool quoted;    /* T_IDENT written "like this" */
} tok;

typedef struct parser {
    const char *src;
    size_t pos; /* the lexer's position after cur */
    tok cur;
    const tdm__schema *schema;
    tdm__expr *e;
    int depth;
    int sp, max_sp; /* stack slots the emitted code uses */
    tdm_err err;    /* the first error (TDM_OK while none) */
    char *errbuf;
    size_t errn;
} parser;

static void perr(parser *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the first error, prefixed with its 1-based column. */
static void perr(parser *p, size_t at, const char *fmt, ...)
{
    if (p->err != TDM_OK)
        return;
    p->err = TDM_ERR_INVAL;
    if (!p->errbuf || p->errn == 0)
        return;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->errbuf, p->errn, "column %zu: %s", at + 1, msg);
}

static void nomem(parser *p)
{
    if (p->err == TDM_OK) {
        p->err = TDM_ERR_NOMEM;
        if (p->errbuf && p->errn)
            snprintf(p->errbuf, p->errn, "out of memory");
    }
}

/* "the end", or the token's text quoted (shortened when long). */
static const char *tok_desc(const parser *p, const tok *t, char *buf, size_t n)
{
    if (t->kind == T_END)
        return "the end";
    int l = t->len > 24 ? 24 : (int)t->len;
    snprintf(buf, n, "\"%.*s%s\"", l, p->src + t->at, t->len > 24 ? "..." : "");
    return buf;
}

static bool ident_start(int c)
{
    return isalpha(c) || c == '_';
}

static bool ident_char(int c)
{
    return isalnum(c) || c == '_' || c == '.';
}

static bool word_is(const char *s, size_t len, const char *kw)
{
    size_t kl = strlen(kw);
    if (len != kl)
        return false;
    for (size_t i = 0; i < kl; i++)
        if (toupper((unsigned char)s[i]) != kw[i])
            return false;
    return true;
}

/* The current token is the bare word @p w (a keyword of its context,
 * such as THEN, which is otherwise a field name). */
static bool kw(const parser *p, const char *w)
{
    return p->cur.kind == T_IDENT && !p->cur.quoted &&
           word_is(p->src + p->cur.at, p->cur.len, w);
}

/* A lexical error at @p i: the token becomes T_END. */
static bool lex_fail(parser *p, size_t i)
{
    p->cur = (tok){T_END, i, 0, false};
    return false;
}

/* The end of the digits starting at @p j. */
static size_t skip_digits(const char *s, size_t j)
{
    while (isdigit((unsigned char)s[j]))
        j++;
    return j;
}

/* A number at @p i: digits, an optional fraction and exponent (T_NUM)
 * or digits only (T_INT); *j receives its end. */
static bool lex_number(parser *p, size_t i, tok *t, size_t *j)
{
    const char *s = p->src;
    bool dec = false;
    size_t e = skip_digits(s, i);
    if (s[e] == '.') {
        dec = true;
        e = skip_digits(s, e + 1);
    }
    if (s[e] == 'e' || s[e] == 'E') {
        size_t k = e + 1;
        if (s[k] == '+' || s[k] == '-')
            k++;
        if (isdigit((unsigned char)s[k])) {
            dec = true;
            e = skip_digits(s, k);
        }
    }
    if (ident_char((unsigned char)s[e])) {
        size_t k = e;
        while (ident_char((unsigned char)s[k]))
            k++;
        perr(p, i, "malformed number \"%.*s\"", (int)(k - i), s + i);
        return lex_fail(p, i);
    }
    t->kind = dec ? T_NUM : T_INT;
    *j = e;
    return true;
}

/* A name or a keyword at @p i. */
static void lex_word(parser *p, size_t i, tok *t, size_t *j)
{
    static const struct {
        const char *w;
        tok_kind k;
    } kws[] = {{"AND", T_AND},    {"OR", T_OR},     {"NOT", T_NOT},
               {"IS", T_IS},      {"NULL", T_NULL}, {"TRUE", T_TRUE},
               {"FALSE", T_FALSE}};
    const char *s = p->src;
    size_t e = i + 1;
    while (ident_char((unsigned char)s[e]))
        e++;
    t->kind = T_IDENT;
    for (size_t k = 0; k < sizeof kws / sizeof kws[0]; k++)
        if (word_is(s + i, e - i, kws[k].w))
            t->kind = kws[k].k;
    *j = e;
}

/* A string or a quoted field name at @p i (quote @p c); a doubled quote
 * is one. */
static bool lex_quoted(parser *p, size_t i, unsigned char c, tok *t, size_t *j)
{
    const char *s = p->src;
    size_t e = i + 1;
    for (;;) {
        if (s[e] == 0) {
            perr(p, i, "unterminated %s (the closing %c is missing)",
                 c == '\'' ? "string" : "quoted field name", c);
            return lex_fail(p, i);
        }
        if ((unsigned char)s[e] == c) {
            if ((unsigned char)s[e + 1] != c)
                break;
            e++;
        }
        e++;
    }
    t->kind = c == '\'' ? T_STR : T_IDENT;
    t->quoted = c == '"';
    *j = e + 1;
    return true;
}

/* A comparison starting with '=', '!', '<' or '>' at @p i; *j is the
 * byte after its first character and moves past a second one. */
static bool lex_compare(parser *p, size_t i, unsigned char c, tok *t, size_t *j)
{
    char d = p->src[*j];
    switch (c) {
    case '=':
        t->kind = T_EQ;
        *j += d == '=';
        return true;
    case '!':
        if (d != '=') {
            perr(p, i, "expected \"!=\", got \"!\"");
            return lex_fail(p, i);
        }
        t->kind = T_NE;
        *j += 1;
        return true;
    case '<':
        t->kind = d == '=' ? T_LE : d == '>' ? T_NE : T_LT;
        *j += d == '=' || d == '>';
        return true;
    default:
        t->kind = d == '=' ? T_GE : T_GT;
        *j += d == '=';
        return true;
    }
}

/* An operator or parenthesis at @p i. */
static bool lex_punct(parser *p, size_t i, unsigned char c, tok *t, size_t *j)
{
    switch (c) {
    case '(':
        t->kind = T_LP;
        return true;
    case ')':
        t->kind = T_RP;
        return true;
    case '+':
        t->kind = T_PLUS;
        return true;
    case '-':
        t->kind = T_MINUS;
        return true;
    case '*':
        t->kind = T_STAR;
        return true;
    case '/':
        t->kind = T_SLASH;
        return true;
    case '%':
        t->kind = T_PCT;
        return true;
    case ',':
        t->kind = T_COMMA;
        return true;
    case '|':
        if (p->src[*j] != '|') {
            perr(p, i, "expected \"||\", got \"|\"");
            return lex_fail(p, i);
        }
        t->kind = T_CONCAT;
        *j += 1;
        return true;
    case '=':
    case '!':
    case '<':
    case '>':
        return lex_compare(p, i, c, t, j);
    }
    if (c >= 0x20 && c < 0x7f)
        perr(p, i, "unexpected character '%c'", c);
    else
        perr(p, i, "unexpected byte 0x%02x", c);
    return lex_fail(p, i);
}

/* Reads the next token into p->cur; a lexical error sets p->err and
 * leaves T_END. */
static void next(parser *p)
{
    const char *s = p->src;
    size_t i = p->pos;
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    tok t = {T_END, i, 0, false};
    unsigned char c = (unsigned char)s[i];
    if (c == 0) {
        p->cur = t;
        p->pos = i;
        return;
    }
    size_t j = i + 1;
    bool ok;
    if (isdigit(c) || (c == '.' && isdigit((unsigned char)s[i + 1])))
        ok = lex_number(p, i, &t, &j);
    else if (ident_start(c))
        ok = (lex_word(p, i, &t, &j), true);
    else if (c == '\'' || c == '"')
        ok = lex_quoted(p, i, c, &t, &j);
    else
        ok = lex_punct(p, i, c, &t, &j);
    if (!ok)
        return;
    t.len = j - i;
    p->cur = t;
    p->pos = j;
}

/* ---- Emitting code ---- */

/* Stack effect of an instruction: +1 pushes, -1 pops one, 0 in place. */
static int effect(op o, int32_t a)
{
    switch (o) {
    case OP_CONST:
    case OP_FIELD:
    case OP_IN_BEGIN:
        return 1;
    case OP_I2D:
    case OP_NEG_I:
    case OP_NEG_D:
    case OP_NOT:
    case OP_IS_NULL:
    case OP_NOT_NULL:
    case OP_NOP:
    case OP_JMP:
    case OP_JNN:
        return 0;
    case OP_FN:
        return 1 - a;
    case OP_BETWEEN:
        return -2;
    default:
        return -1;
    }
}

static void emit_ins(parser *p, op o, int k, int ck, bool kc, int32_t a)
{
    if (p->err != TDM_OK)
        return;
    tdm__expr *e = p->e;
    if (e->n_code == e->cap_code) {
        int cap = e->cap_code ? e->cap_code * 2 : 16;
        ins *nc = tdm__realloc(e->code, (size_t)cap * sizeof *nc);
        if (!nc) {
            nomem(p);
            return;
        }
        e->code = nc;
        e->cap_code = cap;
    }
    e->code[e->n_code++] =
        (ins){(uint8_t)o, (uint8_t)k, (uint8_t)ck, (uint8_t)kc, a};
    p->sp += kc ? 0 : effect(o, a);
    if (p->sp > p->max_sp)
        p->max_sp = p->sp;
    if (p->sp > STACK_MAX)
        perr(p, p->cur.at,
             "the expression is too complex (more than %d pending "
             "operands)",
             STACK_MAX);
}

static void emit(parser *p, op o, int k, int32_t a)
{
    emit_ins(p, o, k, 0, false, a);
}

/* When the last instruction pushes a constant (the whole right operand
 * just parsed), removes it and returns true with its index in *idx, so
 * that the operator takes it directly. */
static bool take_const(parser *p, int32_t *idx)
{
    tdm__expr *e = p->e;
    if (p->err != TDM_OK || e->n_code == 0 ||
        e->code[e->n_code - 1].op != OP_CONST)
        return false;
    *idx = e->code[--e->n_code].a;
    p->sp--;
    return true;
}

/* Converts the int64 constant consts[idx] to a double in place (it is
 * used by one instruction only). */
static void const_to_double(parser *p, int32_t idx)
{
    tdm__expr_val *v = &p->e->consts[idx];
    v->u.d = v->null ? 0 : (double)v->u.i;
}

/* Emits a binary operator on the two operands just parsed, taking a
 * constant right operand directly; @p conv_a / @p conv_b convert the
 * left / right operand from int64 to double first. */
static void emit_binary(parser *p, op o, int k, int ck, bool conv_a,
                        bool conv_b)
{
    int32_t idx = 0;
    bool kc = take_const(p, &idx);
    if (conv_a)
        emit(p, OP_I2D, 0, kc ? 0 : 1);
    if (conv_b && kc)
        const_to_double(p, idx);
    else if (conv_b)
        emit(p, OP_I2D, 0, 0);
    emit_ins(p, o, k, ck, kc, idx);
}

/* Emits a push of constant @p v (its string bytes already owned by the
 * program). */
static void emit_const(parser *p, size_t at, tdm__expr_val v)
{
    if (p->err != TDM_OK)
        return;
    tdm__expr *e = p->e;
    if (p->sp + 1 > STACK_MAX) {
        perr(p, at,
             "the expression is too complex (more than %d pending "
             "operands)",
             STACK_MAX);
        return;
    }
    if (e->n_consts == e->cap_consts) {
        int cap = e->cap_consts ? e->cap_consts * 2 : 8;
        tdm__expr_val *nc = tdm__realloc(e->consts, (size_t)cap * sizeof *nc);
        if (!nc) {
            nomem(p);
            return;
        }
        e->consts = nc;
        e->cap_consts = cap;
    }
    e->consts[e->n_consts] = v;
    emit(p, OP_CONST, 0, e->n_consts++);
}

/* ---- Parsing ---- */

static tdm__expr_type parse_or(parser *p);
static tdm__expr_type parse_add(parser *p);
static tdm__expr_type parse_case(parser *p);
static tdm__expr_type parse_call(parser *p);
static bool next_is_lp(const parser *p);

static bool numeric(tdm__expr_type t)
{
    return t == TDM__EXPR_INT || t == TDM__EXPR_DOUBLE || t == TDM__EXPR_NULL;
}

static bool boolish(tdm__expr_type t)
{
    return t == TDM__EXPR_BOOL || t == TDM__EXPR_NULL;
}

/* Enters one level of nesting; false (and an error) past DEPTH_MAX. */
static bool enter(parser *p)
{
    if (++p->depth > DEPTH_MAX) {
        perr(p, p->cur.at,
             "the expression is nested too deeply (more "
             "than %d levels)",
             DEPTH_MAX);
        return false;
    }
    return true;
}

/* Edit distance of a and b (case-insensitive; an adjacent transposition
 * is one edit), capped at 9. */
static int distance(const char *a, size_t la, const char *b, size_t lb)
{
    int rows[3][64]; /* rows i - 2, i - 1, i, cycled */
    if (la >= 63 || lb >= 63)
        return 9;
    for (size_t j = 0; j <= lb; j++)
        rows[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int *cur = rows[i % 3], *prev = rows[(i - 1) % 3];
        int *prev2 = rows[(i + 1) % 3];
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]);
            int cb = tolower((unsigned char)b[j - 1]);
            int best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                cb == tolower((unsigned char)a[i - 2]) &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
    }
    int d = rows[la % 3][lb];
    return d > 9 ? 9 : d;
}

/* The schema field closest to name[0..len), or NULL when none is near
 * (at most 2 edits, or a third of the name's length). */
static const char *closest_field(const tdm__schema *s, const char *name,
                                 size_t len)
{
    const char *best = NULL;
    int best_d = len / 3 > 2 ? (int)(len / 3) + 1 : 3;
    for (int i = 0; i < s->n; i++) {
        int d =
            distance(name, len, s->fields[i].name, strlen(s->fields[i].name));
        if (d < best_d) {
            best_d = d;
            best = s->fields[i].name;
        }
    }
    return best;
}

/* The field of @p s closest to @p name, or NULL (see expr.h). */
const char *tdm__expr_closest(const tdm__schema *s, const char *name)
{
    return closest_field(s, name, strlen(name));
}

/* Reports an unknown field with the closest one or the schema's list. */
static void unknown_field(parser *p, size_t at, const char *name, size_t len)
{
    const char *near = closest_field(p->schema, name, len);
    if (near) {
        perr(p, at, "unknown field \"%.*s\" (did you mean \"%s\"?)", (int)len,
             name, near);
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
    perr(p, at, "unknown field \"%.*s\" (the schema has %s)", (int)len, name,
         p->schema->n ? list : "no fields");
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
            nomem(p);
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
    if (idx < 0) {
        unknown_field(p, t.at, name, len);
    } else {
        switch (p->schema->fields[idx].type) {
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
            perr(p, t.at,
                 "the expression is too complex (more than %d "
                 "pending operands)",
                 STACK_MAX);
        emit(p, OP_FIELD, ty, idx);
    }
    tdm__free(qname);
    next(p);
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
            perr(p, neg ? minus_at : t.at,
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
            perr(p, t.at, "number \"%.*s...\" is too long", 20, s);
            return 0;
        }
        memcpy(buf, s, t.len);
        buf[t.len] = 0;
        double d = strtod(buf, NULL);
        if (!isfinite(d)) {
            perr(p, t.at, "number %s is out of the double range", buf);
            return 0;
        }
        v.u.d = neg ? -d : d;
        ty = TDM__EXPR_DOUBLE;
    }
    emit_const(p, t.at, v);
    next(p);
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
            nomem(p);
            return 0;
        }
        p->e->strs = ns;
        p->e->strs[p->e->n_strs++] = bytes;
        v.u.s.p = bytes;
        v.u.s.len = (uint32_t)len;
        emit_const(p, t.at, v);
        next(p);
        return p->err == TDM_OK ? TDM__EXPR_STRING : 0;
    }
    case T_TRUE:
    case T_FALSE:
        v.u.i = t.kind == T_TRUE;
        emit_const(p, t.at, v);
        next(p);
        return p->err == TDM_OK ? TDM__EXPR_BOOL : 0;
    case T_NULL:
        v.null = 1;
        emit_const(p, t.at, v);
        next(p);
        return p->err == TDM_OK ? TDM__EXPR_NULL : 0;
    case T_IDENT:
        if (kw(p, "CASE"))
            return parse_case(p);
        if (!t.quoted && next_is_lp(p))
            return parse_call(p);
        return parse_field(p);
    case T_LP: {
        if (!enter(p))
            return 0;
        next(p);
        tdm__expr_type ty = parse_or(p);
        if (p->err != TDM_OK)
            return 0;
        if (p->cur.kind != T_RP) {
            perr(p, p->cur.at,
                 "expected \")\" (to close the \"(\" at "
                 "column %zu), got %s",
                 t.at + 1, tok_desc(p, &p->cur, d, sizeof d));
            return 0;
        }
        p->depth--;
        next(p);
        return p->err == TDM_OK ? ty : 0;
    }
    default:
        perr(p, t.at, "expected an operand, got %s",
             tok_desc(p, &t, d, sizeof d));
        return 0;
    }
}

/* unary: - unary | + unary | operand */
static tdm__expr_type parse_unary(parser *p)
{
    tok t = p->cur;
    if (t.kind != T_MINUS && t.kind != T_PLUS)
        return parse_primary(p);
    if (!enter(p))
        return 0;
    next(p);
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
            perr(p, t.at, "unary %c needs a number, got %s",
                 t.kind == T_MINUS ? '-' : '+', tdm__expr_type_name(ty));
            return 0;
        }
        if (t.kind == T_MINUS)
            emit(p, ty == TDM__EXPR_DOUBLE ? OP_NEG_D : OP_NEG_I, 0, 0);
    }
    p->depth--;
    return p->err == TDM_OK ? ty : 0;
}

/* Emits an arithmetic operator on operands of types @p a and @p b;
 * returns the result type. */
static tdm__expr_type arith(parser *p, tok_kind k, size_t at, tdm__expr_type a,
                            tdm__expr_type b)
{
    static const char sym[] = {[T_PLUS] = '+',
                               [T_MINUS] = '-',
                               [T_STAR] = '*',
                               [T_SLASH] = '/',
                               [T_PCT] = '%'};
    if (!numeric(a) || !numeric(b)) {
        perr(p, at, "%c needs numbers, got %s and %s", sym[k],
             tdm__expr_type_name(a), tdm__expr_type_name(b));
        return 0;
    }
    bool dbl = a == TDM__EXPR_DOUBLE || b == TDM__EXPR_DOUBLE;
    op o;
    switch (k) {
    case T_PLUS:
        o = dbl ? OP_ADD_D : OP_ADD_I;
        break;
    case T_MINUS:
        o = dbl ? OP_SUB_D : OP_SUB_I;
        break;
    case T_STAR:
        o = dbl ? OP_MUL_D : OP_MUL_I;
        break;
    case T_SLASH:
        o = dbl ? OP_DIV_D : OP_DIV_I;
        break;
    default:
        o = dbl ? OP_MOD_D : OP_MOD_I;
        break;
    }
    emit_binary(p, o, 0, 0, dbl && a == TDM__EXPR_INT,
                dbl && b == TDM__EXPR_INT);
    if (dbl)
        return TDM__EXPR_DOUBLE;
    return a == TDM__EXPR_NULL && b == TDM__EXPR_NULL ? TDM__EXPR_NULL
                                                      : TDM__EXPR_INT;
}

/* a || b: both strings. */
static tdm__expr_type concat_op(parser *p, size_t at, tdm__expr_type a,
                                tdm__expr_type b)
{
    if ((a != TDM__EXPR_STRING && a != TDM__EXPR_NULL) ||
        (b != TDM__EXPR_STRING && b != TDM__EXPR_NULL)) {
        perr(p, at, "|| needs strings, got %s and %s", tdm__expr_type_name(a),
             tdm__expr_type_name(b));
        return 0;
    }
    emit_ins(p, OP_FN, TDM__FN_CONCAT, 0, false, 2);
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
        next(p);
        tdm__expr_type b = parse_unary(p);
        if (p->err != TDM_OK)
            return 0;
        a = o.kind == T_CONCAT ? concat_op(p, o.at, a, b)
                               : arith(p, o.kind, o.at, a, b);
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
        next(p);
        tdm__expr_type b = parse_mul(p);
        if (p->err != TDM_OK)
            return 0;
        a = arith(p, o.kind, o.at, a, b);
    }
    return p->err == TDM_OK ? a : 0;
}

static bool is_cmp(tok_kind k)
{
    return k >= T_EQ && k <= T_GE;
}

/* The operand kinds (CK_*) of comparing types @p a and @p b, or -1 and
 * an error naming operator @p what (@p n bytes) at @p at. */
static int cmp_kind(parser *p, size_t at, tdm__expr_type a, tdm__expr_type b,
                    const char *what, int n)
{
    tdm__expr_type x = a == TDM__EXPR_NULL ? b : a;
    tdm__expr_type y = b == TDM__EXPR_NULL ? a : b;
    if (numeric(x) && numeric(y)) {
        bool xd = x == TDM__EXPR_DOUBLE, yd = y == TDM__EXPR_DOUBLE;
        return xd ? (yd ? CK_DD : CK_DI) : (yd ? CK_ID : CK_II);
    }
    if (x == y)
        return x == TDM__EXPR_STRING ? CK_SS : CK_II; /* bools: 0/1 */
    perr(p, at, "cannot compare %s with %s (\"%.*s\")", tdm__expr_type_name(a),
         tdm__expr_type_name(b), n, what);
    return -1;
}

/* x [NOT] BETWEEN lo AND hi, after BETWEEN (at @p at); x is pushed. */
static void parse_between(parser *p, size_t at, tdm__expr_type x)
{
    char d[64];
    tdm__expr_type lo = parse_add(p);
    int ck1 = p->err == TDM_OK ? cmp_kind(p, at, x, lo, "BETWEEN", 7) : -1;
    if (ck1 < 0)
        return;
    if (p->cur.kind != T_AND) {
        perr(p, p->cur.at, "expected AND (of BETWEEN at column %zu), got %s",
             at + 1, tok_desc(p, &p->cur, d, sizeof d));
        return;
    }
    next(p);
    tdm__expr_type hi = parse_add(p);
    int ck2 = p->err == TDM_OK ? cmp_kind(p, at, x, hi, "BETWEEN", 7) : -1;
    if (ck2 >= 0)
        emit_ins(p, OP_BETWEEN, ck1, ck2, false, 0);
}

/* x [NOT] IN (v, ...), after IN (at @p at); x is pushed. */
static void parse_in(parser *p, size_t at, tdm__expr_type x)
{
    char d[64];
    if (p->cur.kind != T_LP) {
        perr(p, p->cur.at, "expected \"(\" after IN, got %s",
             tok_desc(p, &p->cur, d, sizeof d));
        return;
    }
    emit(p, OP_IN_BEGIN, 0, 0);
    do {
        next(p);
        tdm__expr_type v = p->err == TDM_OK ? parse_or(p) : 0;
        int ck = p->err == TDM_OK ? cmp_kind(p, at, x, v, "IN", 2) : -1;
        if (ck < 0)
            return;
        int32_t idx = 0;
        bool kc = take_const(p, &idx);
        emit_ins(p, OP_IN_TEST, 0, ck, kc, idx);
    } while (p->cur.kind == T_COMMA);
    if (p->cur.kind != T_RP) {
        perr(p, p->cur.at, "expected \",\" or \")\" in the IN list, got %s",
             tok_desc(p, &p->cur, d, sizeof d));
        return;
    }
    next(p);
    emit(p, OP_NIP, 0, 0);
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
        perr(p, t.at,
             "expected one ASCII character in quotes after "
             "ESCAPE, e.g. '!'");
        return 0;
    }
    next(p);
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
        perr(p, at, "LIKE needs strings, got %s and %s", tdm__expr_type_name(x),
             tdm__expr_type_name(pt));
        return;
    }
    const tdm__expr_val *pc = last_const(p);
    int esc = 0;
    if (kw(p, "ESCAPE")) {
        next(p);
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
            perr(p, pat_at,
                 "the LIKE pattern ends with its escape "
                 "character");
            return;
        }
    }
    emit_ins(p, OP_FN, TDM__FN_LIKE, esc, false, 2);
}

/* After x (pushed, type @p a): [NOT] BETWEEN / IN / LIKE, or false when
 * none follows. */
static bool parse_predicate(parser *p, tdm__expr_type a)
{
    char d[64];
    bool neg = p->cur.kind == T_NOT;
    if (neg)
        next(p);
    tok w = p->cur;
    if (!kw(p, "BETWEEN") && !kw(p, "IN") && !kw(p, "LIKE")) {
        if (neg)
            perr(p, w.at, "expected BETWEEN, IN or LIKE after NOT, got %s",
                 tok_desc(p, &w, d, sizeof d));
        return neg;
    }
    next(p);
    if (word_is(p->src + w.at, w.len, "BETWEEN"))
        parse_between(p, w.at, a);
    else if (word_is(p->src + w.at, w.len, "IN"))
        parse_in(p, w.at, a);
    else
        parse_like(p, w.at, a);
    if (neg)
        emit(p, OP_NOT, 0, 0);
    return true;
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
        next(p);
        bool neg = false;
        if (p->cur.kind == T_NOT) {
            neg = true;
            next(p);
        }
        if (p->err != TDM_OK)
            return 0;
        if (p->cur.kind != T_NULL) {
            perr(p, p->cur.at, "expected NULL after IS%s, got %s",
                 neg ? " NOT" : "", tok_desc(p, &p->cur, d, sizeof d));
            return 0;
        }
        next(p);
        emit(p, neg ? OP_NOT_NULL : OP_IS_NULL, 0, 0);
    } else if (parse_predicate(p, a)) {
        if (p->err != TDM_OK)
            return 0;
    } else if (is_cmp(o.kind)) {
        next(p);
        tdm__expr_type b = parse_add(p);
        if (p->err != TDM_OK)
            return 0;
        int ck = cmp_kind(p, o.at, a, b, p->src + o.at, (int)o.len);
        if (ck < 0)
            return 0;
        static const uint8_t rel[] = {
            [T_EQ] = REL_EQ, [T_NE] = REL_NE, [T_LT] = REL_LT,
            [T_LE] = REL_LE, [T_GT] = REL_GT, [T_GE] = REL_GE};
        emit_binary(p, OP_CMP, rel[o.kind], ck, false, false);
    } else {
        return a;
    }
    if (p->err == TDM_OK &&
        (is_cmp(p->cur.kind) || p->cur.kind == T_IS || p->cur.kind == T_NOT ||
         kw(p, "BETWEEN") || kw(p, "IN") || kw(p, "LIKE")))
        perr(p, p->cur.at,
             "comparisons do not chain (combine them with "
             "AND, or add parentheses), got %s",
             tok_desc(p, &p->cur, d, sizeof d));
    return p->err == TDM_OK ? TDM__EXPR_BOOL : 0;
}

/* not: NOT not | cmp */
static tdm__expr_type parse_not(parser *p)
{
    if (p->cur.kind != T_NOT)
        return parse_cmp(p);
    tok t = p->cur;
    if (!enter(p))
        return 0;
    next(p);
    tdm__expr_type a = parse_not(p);
    if (p->err != TDM_OK)
        return 0;
    if (!boolish(a)) {
        perr(p, t.at, "NOT needs a condition (true or false), got %s",
             tdm__expr_type_name(a));
        return 0;
    }
    emit(p, OP_NOT, 0, 0);
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
        next(p);
        tdm__expr_type b = is_or ? parse_logic(p, false) : parse_not(p);
        if (p->err != TDM_OK)
            return 0;
        if (!boolish(a) || !boolish(b)) {
            perr(p, o.at,
                 "%s needs conditions (true or false), got %s "
                 "and %s",
                 is_or ? "OR" : "AND", tdm__expr_type_name(a),
                 tdm__expr_type_name(b));
            return 0;
        }
        emit_binary(p, is_or ? OP_OR : OP_AND, 0, 0, false, false);
        a = TDM__EXPR_BOOL;
    }
    return p->err == TDM_OK ? a : 0;
}

static tdm__expr_type parse_or(parser *p)
{
    return parse_logic(p, true);
}

/* ---- CASE and function calls ---- */

/* The next token (not yet read) is "(": a name before it is a call. */
static bool next_is_lp(const parser *p)
{
    size_t i = p->pos;
    while (p->src[i] == ' ' || p->src[i] == '\t' || p->src[i] == '\n' ||
           p->src[i] == '\r')
        i++;
    return p->src[i] == '(';
}

/* Reads a token of kind @p k (described by @p what), or fails. */
static bool expect_tok(parser *p, tok_kind k, const char *what)
{
    char d[64];
    if (p->err != TDM_OK)
        return false;
    if (p->cur.kind != k) {
        perr(p, p->cur.at, "expected %s, got %s", what,
             tok_desc(p, &p->cur, d, sizeof d));
        return false;
    }
    next(p);
    return p->err == TDM_OK;
}

/* Reads the bare word @p w, or fails. */
static bool expect_word(parser *p, const char *w)
{
    char d[64];
    if (p->err != TDM_OK)
        return false;
    if (!kw(p, w)) {
        perr(p, p->cur.at, "expected %s, got %s", w,
             tok_desc(p, &p->cur, d, sizeof d));
        return false;
    }
    next(p);
    return p->err == TDM_OK;
}

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
    perr(p, at, "expected %s as argument %d of %s, got %s",
         what[(unsigned char)kind], k, fn, tdm__expr_type_name(t));
    return false;
}

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
        perr(p, at, "%s needs results of one type, got %s and %s", what,
             tdm__expr_type_name(r), tdm__expr_type_name(t));
}

/* Emits @p o linked into the chain at *head (through its a). */
static void emit_linked(parser *p, op o, int k, int32_t *head)
{
    emit(p, o, k, *head);
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
    next(p);
    tdm__expr_type v = arg(p, &at);
    if (p->err != TDM_OK)
        return;
    if (simple) {
        int ck = cmp_kind(p, at, x, v, "WHEN", 4);
        if (ck >= 0)
            emit_ins(p, OP_WHEN, 0, ck, false, -1);
    } else if (!boolish(v)) {
        perr(p, at, "expected a condition after WHEN, got %s",
             tdm__expr_type_name(v));
    } else {
        emit(p, OP_JNT, 0, -1);
    }
    int32_t test = p->e->n_code - 1;
    if (!expect_word(p, "THEN"))
        return;
    tdm__expr_type r = arg(p, &rat);
    unify(p, rat, b, r, "CASE");
    emit_linked(p, OP_NOP, r, &b->convs);
    if (simple)
        emit(p, OP_NIP, 0, 0);
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
    if (!enter(p))
        return 0;
    next(p);
    bool simple = !kw(p, "WHEN") && !kw(p, "END");
    size_t at;
    tdm__expr_type x = simple ? arg(p, &at) : 0;
    int base = p->sp;
    branches b = {-1, -1, TDM__EXPR_NULL};
    if (p->err == TDM_OK && !kw(p, "WHEN"))
        perr(p, p->cur.at, "expected WHEN, got %s",
             tok_desc(p, &p->cur, d, sizeof d));
    while (p->err == TDM_OK && kw(p, "WHEN"))
        case_when(p, simple, x, base, &b);
    tdm__expr_type r = TDM__EXPR_NULL;
    if (p->err == TDM_OK && kw(p, "ELSE")) {
        next(p);
        r = arg(p, &at);
        unify(p, at, &b, r, "CASE");
    } else {
        emit_const(p, p->cur.at, (tdm__expr_val){.null = 1});
    }
    emit_linked(p, OP_NOP, r, &b.convs);
    if (simple)
        emit(p, OP_NIP, 0, 0);
    if (!expect_word(p, "END"))
        return 0;
    branches_close(p, &b);
    p->depth--;
    return p->err == TDM_OK ? b.type : 0;
}

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
        next(p);
        emit_linked(p, OP_JNN, 0, &b.jumps);
        emit(p, OP_POP, 0, 0);
    }
    if (!expect_tok(p, T_RP, "\",\" or \")\""))
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
    if (!expect_tok(p, T_COMMA, "\",\""))
        return 0;
    tdm__expr_type b = arg(p, &at);
    int ck = p->err == TDM_OK ? cmp_kind(p, at, a, b, "NULLIF", 6) : -1;
    if (ck < 0 || !expect_tok(p, T_RP, "\")\""))
        return 0;
    emit_binary(p, OP_NULLIF, 0, ck, false, false);
    return a;
}

/* MOD(a, b): a % b. */
static tdm__expr_type call_mod(parser *p, const tok *name)
{
    size_t at, bt;
    tdm__expr_type a = arg(p, &at);
    if (!want_kind(p, at, a, 'n', 1, "MOD") || !expect_tok(p, T_COMMA, "\",\""))
        return 0;
    tdm__expr_type b = arg(p, &bt);
    if (!want_kind(p, bt, b, 'n', 2, "MOD") || !expect_tok(p, T_RP, "\")\""))
        return 0;
    return arith(p, T_PCT, name->at, a, b);
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
        if (kw(p, units[k].w) && (extract || units[k].unit < TDM__UNIT_DOW)) {
            next(p);
            return units[k].unit;
        }
    }
    perr(p, p->cur.at,
         "expected a time unit (SECOND, MINUTE, HOUR, DAY, MONTH, QUARTER, "
         "YEAR%s), got %s",
         extract ? ", DOW, DOY" : "", tok_desc(p, &p->cur, d, sizeof d));
    return 0;
}

/* FLOOR(x) / CEIL(x) on a number, or FLOOR(ts TO unit) / CEIL(...). */
static tdm__expr_type call_floor_ceil(parser *p, const tok *name)
{
    bool floor = word_is(p->src + name->at, name->len, "FLOOR");
    const char *fn = floor ? "FLOOR" : "CEIL";
    size_t at;
    tdm__expr_type x = arg(p, &at);
    if (p->err == TDM_OK && kw(p, "TO")) {
        next(p);
        int unit = want_kind(p, at, x, 'i', 1, fn) ? parse_unit(p, false) : 0;
        if (!unit || !expect_tok(p, T_RP, "\")\""))
            return 0;
        emit_ins(p, OP_FN, floor ? TDM__FN_FLOOR_TS : TDM__FN_CEIL_TS, unit,
                 false, 1);
        return TDM__EXPR_INT;
    }
    if (!want_kind(p, at, x, 'n', 1, fn) || !expect_tok(p, T_RP, "\")\" or TO"))
        return 0;
    if (x == TDM__EXPR_DOUBLE)
        emit_ins(p, OP_FN, floor ? TDM__FN_FLOOR_D : TDM__FN_CEIL_D, 0, false,
                 1);
    return x;
}

/* EXTRACT(unit FROM ts) */
static tdm__expr_type call_extract(parser *p, const tok *name)
{
    size_t at;
    (void)name;
    int unit = parse_unit(p, true);
    if (!unit || !expect_word(p, "FROM"))
        return 0;
    tdm__expr_type x = arg(p, &at);
    if (!want_kind(p, at, x, 'i', 1, "EXTRACT") ||
        !expect_tok(p, T_RP, "\")\""))
        return 0;
    emit_ins(p, OP_FN, TDM__FN_EXTRACT, unit, false, 1);
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
    bool sql = kw(p, "FROM");
    if (sql ? !expect_word(p, "FROM") : !expect_tok(p, T_COMMA, "\",\""))
        return 0;
    int n = 2;
    tdm__expr_type i = arg(p, &at);
    if (!want_kind(p, at, i, 'i', 2, "SUBSTRING"))
        return 0;
    if (sql ? kw(p, "FOR") : p->cur.kind == T_COMMA) {
        next(p);
        i = arg(p, &at);
        if (!want_kind(p, at, i, 'i', 3, "SUBSTRING"))
            return 0;
        n = 3;
    }
    if (!expect_tok(p, T_RP, "\")\""))
        return 0;
    emit_ins(p, OP_FN, TDM__FN_SUBSTRING, 0, false, n);
    return TDM__EXPR_STRING;
}

/* TRIM(s) or TRIM([BOTH | LEADING | TRAILING] [chars] FROM s) */
static tdm__expr_type call_trim(parser *p, const tok *name)
{
    int mode = TDM__TRIM_BOTH, n = 1;
    bool saw = kw(p, "BOTH") || kw(p, "LEADING") || kw(p, "TRAILING");
    size_t at;
    (void)name;
    if (saw) {
        mode = kw(p, "BOTH")      ? TDM__TRIM_BOTH
               : kw(p, "LEADING") ? TDM__TRIM_LEADING
                                  : TDM__TRIM_TRAILING;
        next(p);
    }
    if (saw && kw(p, "FROM")) {
        next(p);
    } else {
        tdm__expr_type c = arg(p, &at);
        if (!want_kind(p, at, c, 's', 1, "TRIM"))
            return 0;
        if (saw || kw(p, "FROM")) {
            if (!expect_word(p, "FROM"))
                return 0;
            n = 2;
        }
    }
    if (n == 2 || saw) {
        tdm__expr_type s = arg(p, &at);
        if (!want_kind(p, at, s, 's', n, "TRIM"))
            return 0;
    }
    if (!expect_tok(p, T_RP, "\")\""))
        return 0;
    emit_ins(p, OP_FN, TDM__FN_TRIM, mode, false, n);
    return TDM__EXPR_STRING;
}

/* CAST's target type; returns TDM__CAST_*, 0 on error. */
static int parse_cast_type(parser *p)
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
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        if (!kw(p, types[k].w))
            continue;
        int to = types[k].to;
        next(p);
        if (p->cur.kind != T_LP || to == TDM__CAST_BIGINT ||
            to == TDM__CAST_INT || to == TDM__CAST_BOOL ||
            to == TDM__CAST_DOUBLE)
            return to;
        next(p); /* VARCHAR(n): any n; TIMESTAMP(3): milliseconds only */
        size_t at = p->cur.at;
        bool ok = p->cur.kind == T_INT &&
                  (to == TDM__CAST_STRING ||
                   (p->cur.len == 1 && p->src[p->cur.at] == '3'));
        if (!ok) {
            perr(p, at, "expected %s, got %s",
                 to == TDM__CAST_STRING ? "a length" : "3 (milliseconds)",
                 tok_desc(p, &p->cur, d, sizeof d));
            return 0;
        }
        next(p);
        return expect_tok(p, T_RP, "\")\"") ? to : 0;
    }
    perr(p, p->cur.at,
         "expected a type (BIGINT, INT, INTEGER, DOUBLE, STRING, VARCHAR, "
         "BOOLEAN, TIMESTAMP(3)), got %s",
         tok_desc(p, &p->cur, d, sizeof d));
    return 0;
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
    if (!expect_word(p, "AS"))
        return 0;
    size_t tat = p->cur.at;
    int to = parse_cast_type(p);
    if (!to || !expect_tok(p, T_RP, "\")\""))
        return 0;
    bool bad = (to == TDM__CAST_DOUBLE && x == TDM__EXPR_BOOL) ||
               (to == TDM__CAST_TIMESTAMP &&
                (x == TDM__EXPR_DOUBLE || x == TDM__EXPR_BOOL));
    if (bad) {
        perr(p, tat, "cannot cast %s to %.*s", tdm__expr_type_name(x),
             (int)(p->pos - tat - 1), p->src + tat);
        return 0;
    }
    if (x == TDM__EXPR_NULL)
        return result[to];
    bool same = x == result[to] && to != TDM__CAST_INT &&
                !(to == TDM__CAST_TIMESTAMP && x == TDM__EXPR_STRING);
    if (!same)
        emit_ins(p, OP_FN, TDM__FN_CAST, x | (to << 3), false, 1);
    return result[to];
}

/* A constant pattern of DATE_FORMAT or TO_TIMESTAMP must be supported. */
static void check_pattern(parser *p, size_t at)
{
    const tdm__expr_val *c = last_const(p);
    size_t bad = 0;
    if (c && !c->null && !tdm__expr_time_pattern_ok(c->u.s.p, c->u.s.len, &bad))
        perr(p, at,
             "unsupported date pattern at \"%.*s\" (letters y M d H m s "
             "S, text in '')",
             (int)(c->u.s.len - bad > 8 ? 8 : c->u.s.len - bad),
             c->u.s.p + bad);
}

/* DATE_FORMAT(ts or string, pattern) */
static tdm__expr_type call_date_format(parser *p, const tok *name)
{
    size_t at, ft;
    (void)name;
    tdm__expr_type x = arg(p, &at);
    if (p->err == TDM_OK && x != TDM__EXPR_INT && x != TDM__EXPR_STRING &&
        x != TDM__EXPR_NULL) {
        perr(p, at,
             "expected a timestamp or a string as argument 1 of "
             "DATE_FORMAT, got %s",
             tdm__expr_type_name(x));
        return 0;
    }
    if (!expect_tok(p, T_COMMA, "\",\""))
        return 0;
    tdm__expr_type f = arg(p, &ft);
    if (!want_kind(p, ft, f, 's', 2, "DATE_FORMAT"))
        return 0;
    check_pattern(p, ft);
    if (!expect_tok(p, T_RP, "\")\""))
        return 0;
    emit_ins(p, OP_FN,
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
        !expect_tok(p, T_COMMA, "\",\""))
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
        perr(p, at, "expected the precision 0 (seconds) or 3 (milliseconds)");
        return 0;
    }
    take_const(p, &idx);
    if (!expect_tok(p, T_RP, "\")\""))
        return 0;
    emit_ins(p, OP_FN, TDM__FN_TO_TS_LTZ, (int)prec, false, 1);
    return TDM__EXPR_INT;
}

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
        if (n && !expect_tok(p, T_COMMA, "\",\" or \")\""))
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
            perr(p, at, "%s takes %s, got more", f->name, a);
        }
        n++;
    }
    sig_kind(f->args, 0, &min);
    if (p->err == TDM_OK && n < min) {
        char a[64];
        arity_text(f->args, a, sizeof a);
        perr(p, p->cur.at, "%s takes %s, got %d", f->name, a, n);
    }
    if (!expect_tok(p, T_RP, "\")\""))
        return 0;
    bool dbl = first == TDM__EXPR_DOUBLE && f->fn_d;
    emit_ins(p, OP_FN, dbl ? f->fn_d : f->fn, f->mode, false, n);
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
        int d = distance(s, name->len, c, strlen(c));
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    if (best)
        perr(p, name->at, "unknown function \"%.*s\" (did you mean %s?)",
             (int)name->len, s, best);
    else
        perr(p, name->at, "unknown function \"%.*s\"", (int)name->len, s);
}

/* name ( args ): a function (names are case-insensitive). */
static tdm__expr_type parse_call(parser *p)
{
    tok name = p->cur;
    const char *s = p->src + name.at;
    if (!enter(p))
        return 0;
    next(p); /* ( */
    next(p);
    tdm__expr_type r = 0;
    bool found = false;
    for (size_t k = 0; !found && k < sizeof specials / sizeof specials[0]; k++)
        if (word_is(s, name.len, specials[k].name)) {
            found = true;
            r = specials[k].parse(p, &name);
        }
    for (size_t k = 0; !found && k < sizeof fns / sizeof fns[0]; k++)
        if (word_is(s, name.len, fns[k].name)) {
            found = true;
            r = call_plain(p, &name, &fns[k]);
        }
    if (!found)
        unknown_fn(p, &name);
    p->depth--;
    return p->err == TDM_OK ? r : 0;
}

/* Compiles @p text; see expr.h. */
tdm_err tdm__expr_compile(const char *text, const tdm__schema *schema,
                          tdm__expr **out, char *errbuf, size_t errbuf_size)
{
    static const tdm__schema empty;
    char d[64];
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (!text)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "the expression must not be NULL");
    parser p = {.src = text,
                .schema = schema ? schema : &empty,
                .errbuf = errbuf,
                .errn = errbuf_size};
    p.e = tdm__calloc(1, sizeof *p.e);
    if (!p.e)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
    next(&p);
    tdm__expr_type ty = p.err == TDM_OK ? parse_or(&p) : 0;
    if (p.err == TDM_OK && p.cur.kind != T_END)
        perr(&p, p.cur.at, "expected an operator or the end, got %s",
             tok_desc(&p, &p.cur, d, sizeof d));
    if (p.err != TDM_OK)
        goto fail;
    p.e->type = ty;
    *out = p.e;
    return TDM_OK;

fail:
    tdm__expr_destroy(p.e);
    return p.err;
}

/* ---- Evaluation ---- */

/* Three-way comparison of an int64 with a double, exact (no rounding of
 * the int64): -1, 0, 1, or 2 when @p b is NaN. */
static int cmp_id(int64_t a, double b)
{
    if (b != b)
        return 2;
    if (b >= 9223372036854775808.0)
        return -1;
    if (b < -9223372036854775808.0)
        return 1;
    int64_t bi = (int64_t)b; /* truncated, in range */
    if (a != bi)
        return a < bi ? -1 : 1;
    double frac = b - (double)bi; /* exact for |b| < 2^63 */
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

static int cmp_dd(double a, double b)
{
    if (a != a || b != b)
        return 2;
    return a < b ? -1 : a > b ? 1 : 0;
}

static int cmp_ss(const tdm__expr_val *a, const tdm__expr_val *b)
{
    uint32_t l = a->u.s.len < b->u.s.len ? a->u.s.len : b->u.s.len;
    int c = l ? memcmp(a->u.s.p, b->u.s.p, l) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return a->u.s.len < b->u.s.len ? -1 : a->u.s.len > b->u.s.len ? 1 : 0;
}

/* Whether a three-way result satisfies a relation: rel_table[r][c + 1]
 * for c = -1, 0, 1, and 2 (unordered: only "not equal" holds). */
static const uint8_t rel_table[6][4] = {
    [REL_EQ] = {0, 1, 0, 0}, [REL_NE] = {1, 0, 1, 1}, [REL_LT] = {1, 0, 0, 0},
    [REL_LE] = {1, 1, 0, 0}, [REL_GT] = {0, 0, 1, 0}, [REL_GE] = {0, 1, 1, 0},
};

/* A double result: null when not finite. */
static void put_d(tdm__expr_val *a, double r)
{
    a->u.d = r;
    a->null |= !isfinite(r);
}

_Static_assert(sizeof(((tdm__val *)0)->u) == sizeof(((tdm__expr_val *)0)->u) &&
                   offsetof(tdm__val, u.s.len) ==
                       offsetof(tdm__expr_val, u.s.len),
               "tdm__val and tdm__expr_val share the layout of their union");

/* The instruction groups of tdm__expr_eval.  Each is called with a
 * constant opcode from its own case, so once inlined the inner switch
 * folds away and evaluation keeps one dispatch per instruction. */

/* Pushes field value @p v into @p t: the two unions have one layout, so
 * it is copied whole, whatever the field's type. */
static inline void push_field(tdm__expr_val *t, const tdm__val *v)
{
    memcpy(&t->u, &v->u, sizeof t->u);
    t->null = v->null;
}

/* a = a o b on int64: null on a null operand, an overflow or a zero
 * divisor; x % -1 is 0 (computing it could trap for INT64_MIN). */
static inline void int_arith(op o, tdm__expr_val *a, const tdm__expr_val *b)
{
    switch (o) {
    case OP_ADD_I:
        a->null |= b->null | __builtin_add_overflow(a->u.i, b->u.i, &a->u.i);
        break;
    case OP_SUB_I:
        a->null |= b->null | __builtin_sub_overflow(a->u.i, b->u.i, &a->u.i);
        break;
    case OP_MUL_I:
        a->null |= b->null | __builtin_mul_overflow(a->u.i, b->u.i, &a->u.i);
        break;
    case OP_DIV_I:
        a->null |=
            b->null | (b->u.i == 0) | (a->u.i == INT64_MIN && b->u.i == -1);
        if (!a->null)
            a->u.i /= b->u.i;
        break;
    default: /* OP_MOD_I */
        a->null |= b->null | (b->u.i == 0);
        if (!a->null)
            a->u.i = b->u.i == -1 ? 0 : a->u.i % b->u.i;
        break;
    }
}

/* a = a o b on doubles: null on a null operand, a zero divisor or a
 * result that is not finite. */
static inline void dbl_arith(op o, tdm__expr_val *a, const tdm__expr_val *b)
{
    a->null |= b->null;
    switch (o) {
    case OP_ADD_D:
        put_d(a, a->u.d + b->u.d);
        break;
    case OP_SUB_D:
        put_d(a, a->u.d - b->u.d);
        break;
    case OP_MUL_D:
        put_d(a, a->u.d * b->u.d);
        break;
    case OP_DIV_D:
        a->null |= b->u.d == 0;
        if (!a->null)
            put_d(a, a->u.d / b->u.d);
        break;
    default: /* OP_MOD_D */
        a->null |= b->u.d == 0;
        if (!a->null)
            put_d(a, fmod(a->u.d, b->u.d));
        break;
    }
}

/* a = (a rel b) for operand kinds @p ck, null when either operand is. */
static inline void compare(int ck, int rel, tdm__expr_val *a,
                           const tdm__expr_val *b)
{
    int r = 0;
    a->null |= b->null;
    if (!a->null) {
        switch (ck) {
        case CK_II:
            r = (a->u.i > b->u.i) - (a->u.i < b->u.i);
            break;
        case CK_DD:
            r = cmp_dd(a->u.d, b->u.d);
            break;
        case CK_ID:
            r = cmp_id(a->u.i, b->u.d);
            break;
        case CK_DI:
            r = cmp_id(b->u.i, a->u.d);
            r = r == 2 ? 2 : -r;
            break;
        default:
            r = cmp_ss(a, b);
            break;
        }
    }
    a->u.i = a->null ? 0 : rel_table[rel][r + 1];
}

/* a = a AND b / a OR b in three-valued logic: a false (AND) or true (OR)
 * operand decides even against null. */
static inline void and_or(bool is_or, tdm__expr_val *a, const tdm__expr_val *b)
{
    bool ad = !a->null && (a->u.i != 0) == is_or;
    bool bd = !b->null && (b->u.i != 0) == is_or;
    if (ad || bd) {
        a->null = 0;
        a->u.i = is_or;
    } else {
        a->null |= b->null;
        a->u.i = is_or ? 0 : !a->null;
    }
}

/* x BETWEEN lo AND hi on x = a[0], lo = a[1], hi = a[2], into a[0]:
 * x >= lo AND x <= hi in three-valued logic. */
static void between(const ins *c, tdm__expr_val *a)
{
    tdm__expr_val lo = a[0], hi = a[0];
    compare(c->k, REL_GE, &lo, &a[1]);
    compare(c->ck, REL_LE, &hi, &a[2]);
    and_or(false, &lo, &hi);
    a[0] = lo;
}

/* One item b of IN: acc = acc OR (x = b), x the slot below acc. */
static void in_test(int ck, tdm__expr_val *acc, const tdm__expr_val *b)
{
    tdm__expr_val eq = acc[-1];
    compare(ck, REL_EQ, &eq, b);
    and_or(true, acc, &eq);
}

/* NULLIF: a becomes null when a = b holds. */
static void nullif(int ck, tdm__expr_val *a, const tdm__expr_val *b)
{
    tdm__expr_val eq = *a;
    compare(ck, REL_EQ, &eq, b);
    a->null |= !eq.null && eq.u.i;
}

/* The unary operators on the top of the stack @p a. */
static inline void unary(op o, tdm__expr_val *a)
{
    switch (o) {
    case OP_NEG_I:
        a->null |= a->u.i == INT64_MIN;
        a->u.i = a->null ? 0 : -a->u.i;
        break;
    case OP_NEG_D:
        a->u.d = -a->u.d;
        break;
    case OP_NOT:
        a->u.i = a->null ? 0 : !a->u.i;
        break;
    case OP_IS_NULL:
        a->u.i = a->null != 0;
        a->null = 0;
        break;
    default: /* OP_NOT_NULL */
        a->u.i = a->null == 0;
        a->null = 0;
        break;
    }
}

/* The instructions of functions, CASE, COALESCE and the predicates,
 * off the arithmetic's path: runs @p c on stack @p st (sp slots used),
 * returns the new sp and sets *next to the instruction before the one
 * to run next. */
static int control(const tdm__expr *e, const ins *c, tdm__expr_val *st, int sp,
                   tdm__expr_scratch *sc, const ins **next)
{
    const tdm__expr_val *b;
    switch ((op)c->op) {
    case OP_FN:
        tdm__expr_fn_eval(c->k, c->ck, &st[sp - c->a], c->a, sc);
        return sp - c->a + 1;
    case OP_JMP:
        *next = e->code + c->a - 1;
        return sp;
    case OP_JNT:
        sp--;
        if (st[sp].null || !st[sp].u.i)
            *next = e->code + c->a - 1;
        return sp;
    case OP_JNN:
        if (!st[sp - 1].null)
            *next = e->code + c->a - 1;
        return sp;
    case OP_POP:
        return sp - 1;
    case OP_NIP:
        st[sp - 2] = st[sp - 1];
        return sp - 1;
    case OP_WHEN: {
        tdm__expr_val eq = st[sp - 2];
        compare(c->ck, REL_EQ, &eq, &st[sp - 1]);
        if (eq.null || !eq.u.i)
            *next = e->code + c->a - 1;
        return sp - 1;
    }
    case OP_IN_BEGIN:
        st[sp] = (tdm__expr_val){.null = 0};
        return sp + 1;
    case OP_IN_TEST:
        b = c->kc ? &e->consts[c->a] : &st[--sp];
        in_test(c->ck, &st[sp - 1], b);
        return sp;
    case OP_BETWEEN:
        between(c, &st[sp - 3]);
        return sp - 2;
    case OP_NULLIF:
        b = c->kc ? &e->consts[c->a] : &st[--sp];
        nullif(c->ck, &st[sp - 1], b);
        return sp;
    default: /* OP_NOP */
        return sp;
    }
}

/* Evaluates @p e on @p row; see expr.h.  One dispatch per instruction:
 * pushes write the next slot; a binary operator takes its right operand
 * b from the top (popping it) or from the constants, and leaves its
 * result in a, the slot below; a unary one works on a, the top (every
 * program pushes before anything else runs). */
void tdm__expr_eval(const tdm__expr *e, const tdm__row *row,
                    tdm__expr_scratch *sc, tdm__expr_val *out)
{
    tdm__expr_val st[STACK_MAX];
    int sp = 0;
    sc->used = 0;
    const tdm__expr_val *b;
    tdm__expr_val *a;
#define UNARY(o) unary(o, &st[sp - 1])
#define BINARY() (b = c->kc ? &e->consts[c->a] : &st[--sp], a = &st[sp - 1])
    for (const ins *c = e->code, *end = c + e->n_code; c < end; c++) {
        switch ((op)c->op) {
        case OP_CONST:
            st[sp++] = e->consts[c->a];
            break;
        case OP_FIELD:
            push_field(&st[sp++], &row->v[c->a]);
            break;
        case OP_I2D: {
            tdm__expr_val *t = &st[sp - 1 - c->a];
            t->u.d = t->null ? 0 : (double)t->u.i;
            break;
        }
        case OP_NEG_I:
            UNARY(OP_NEG_I);
            break;
        case OP_NEG_D:
            UNARY(OP_NEG_D);
            break;
        case OP_NOT:
            UNARY(OP_NOT);
            break;
        case OP_IS_NULL:
            UNARY(OP_IS_NULL);
            break;
        case OP_NOT_NULL:
            UNARY(OP_NOT_NULL);
            break;
        case OP_ADD_I:
            BINARY();
            int_arith(OP_ADD_I, a, b);
            break;
        case OP_SUB_I:
            BINARY();
            int_arith(OP_SUB_I, a, b);
            break;
        case OP_MUL_I:
            BINARY();
            int_arith(OP_MUL_I, a, b);
            break;
        case OP_DIV_I:
            BINARY();
            int_arith(OP_DIV_I, a, b);
            break;
        case OP_MOD_I:
            BINARY();
            int_arith(OP_MOD_I, a, b);
            break;
        case OP_ADD_D:
            BINARY();
            dbl_arith(OP_ADD_D, a, b);
            break;
        case OP_SUB_D:
            BINARY();
            dbl_arith(OP_SUB_D, a, b);
            break;
        case OP_MUL_D:
            BINARY();
            dbl_arith(OP_MUL_D, a, b);
            break;
        case OP_DIV_D:
            BINARY();
            dbl_arith(OP_DIV_D, a, b);
            break;
        case OP_MOD_D:
            BINARY();
            dbl_arith(OP_MOD_D, a, b);
            break;
        case OP_CMP:
            BINARY();
            compare(c->ck, c->k, a, b);
            break;
        case OP_AND:
            BINARY();
            and_or(false, a, b);
            break;
        case OP_OR:
            BINARY();
            and_or(true, a, b);
            break;
        default:
            sp = control(e, c, st, sp, sc, &c);
            break;
        }
    }
#undef UNARY
#undef BINARY
    *out = st[0];
}

/* True only for a non-null true result. */
bool tdm__expr_true(const tdm__expr *e, const tdm__row *row)
{
    tdm__expr_scratch sc;
    tdm__expr_val v;
    tdm__expr_eval(e, row, &sc, &v);
    return !v.null && v.u.i != 0;
}

/* ---- A source's filter and computed fields ---- */

/* Compiles one key's expression, prefixing errors with the key. */
static tdm_err compile_key(const char *key, const char *text,
                           const tdm__schema *s, tdm__expr **out, char *errbuf,
                           size_t errbuf_size)
{
    char msg[400];
    msg[0] = 0;
    tdm_err err = tdm__expr_compile(text, s, out, msg, sizeof msg);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "%s: %s", key, msg);
    return TDM_OK;
}

/* One compute.<field>: the field must exist, be numeric, not carry the
 * event time or the partition, and fit the expression's type; see
 * expr.h. */
tdm_err tdm__expr_compile_compute(const tdm__schema *s, const char *field,
                                  const char *text, const char *ts_field,
                                  const char *partition_field,
                                  tdm__expr_compute *out, char *errbuf,
                                  size_t errbuf_size)
{
    char key[300];
    snprintf(key, sizeof key, "compute.%s", field);
    int idx = tdm__schema_find(s, field);
    if (idx < 0) {
        const char *near = closest_field(s, field, strlen(field));
        if (near)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "%s: field \"%s\" is not in the schema (did "
                             "you mean \"%s\"?); compute assigns to a "
                             "field of the schema",
                             key, field, near);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: field \"%s\" is not in the schema; compute "
                         "assigns to a field of the schema",
                         key, field);
    }
    tdm_type ft = s->fields[idx].type;
    if (ft != TDM_TYPE_INT64 && ft != TDM_TYPE_DOUBLE &&
        ft != TDM_TYPE_TIMESTAMP)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: field \"%s\" is %s; compute assigns only to "
                         "int64, double or timestamp fields",
                         key, field, ft == TDM_TYPE_STRING ? "string" : "bool");
    if (ts_field && strcmp(ts_field, field) == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: \"%s\" is the timestamp field, whose time is "
                         "taken when the record is read; compute another "
                         "field",
                         key, field);
    if (partition_field && strcmp(partition_field, field) == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: \"%s\" is the partition field, which is read "
                         "before compute runs; compute another field",
                         key, field);
    tdm_err err = compile_key(key, text, s, &out->e, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    tdm__expr_type et = out->e->type;
    bool ok = et == TDM__EXPR_NULL || et == TDM__EXPR_INT ||
              (et == TDM__EXPR_DOUBLE && ft == TDM_TYPE_DOUBLE);
    if (!ok) {
        tdm__expr_destroy(out->e);
        out->e = NULL;
        if (et == TDM__EXPR_DOUBLE)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "%s: the expression is double but field \"%s\" "
                             "is %s (use integer arithmetic, e.g. "
                             "\"price * 908 / 1000\")",
                             key, field,
                             ft == TDM_TYPE_INT64 ? "int64" : "timestamp");
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: the expression is %s, expected a number for "
                         "field \"%s\"",
                         key, tdm__expr_type_name(et), field);
    }
    out->field = idx;
    out->type = ft;
    return TDM_OK;
}

/* A source's or join's filter: a condition; see expr.h. */
tdm_err tdm__expr_compile_filter(const char *text, const tdm__schema *s,
                                 tdm__expr **out, char *errbuf,
                                 size_t errbuf_size)
{
    tdm_err err = compile_key("filter", text, s, out, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    tdm__expr_type t = (*out)->type;
    if (t == TDM__EXPR_BOOL || t == TDM__EXPR_NULL)
        return TDM_OK;
    tdm__expr_destroy(*out);
    *out = NULL;
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                     "filter: the expression is %s, expected a condition "
                     "(true or false), e.g. \"auction %% 123 = 0\"",
                     tdm__expr_type_name(t));
}

/* Frees a set (NULL is fine); see rt.h. */
void tdm__src_exprs_destroy(tdm__src_exprs *x)
{
    if (!x)
        return;
    tdm__expr_destroy(x->filter);
    for (int i = 0; i < x->n_compute; i++)
        tdm__expr_destroy(x->compute[i].e);
    tdm__free(x->compute);
    tdm__free(x);
}

/* The filter, then each compute in key order; see expr.h. */
bool tdm__src_exprs_apply(const tdm__src_exprs *x, tdm__row *row)
{
    if (x->filter && !tdm__expr_true(x->filter, row))
        return false;
    tdm__expr_scratch sc;
    for (int i = 0; i < x->n_compute; i++) {
        const tdm__expr_compute *c = &x->compute[i];
        tdm__expr_val v;
        tdm__expr_eval(c->e, row, &sc, &v);
        tdm__val *f = &row->v[c->field];
        f->null = v.null;
        if (v.null)
            continue;
        if (c->type == TDM_TYPE_DOUBLE)
            f->u.d = c->e->type == TDM__EXPR_DOUBLE ? v.u.d : (double)v.u.i;
        else
            f->u.i = v.u.i;
    }
    return true;
}
