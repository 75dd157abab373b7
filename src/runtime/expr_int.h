/* SPDX-License-Identifier: MIT */
/* expr_int.h - what the pieces of the expression compiler and evaluator
 * share, and nothing else: the program (instructions, constants), the
 * tokens, the parser's state, and the functions one piece calls in
 * another.  Internal to expr.c, expr_parse.c, expr_emit.c,
 * expr_lex.c and expr_eval.c; the function bodies (expr_fn.c,
 * expr_time.c) see only expr_fn.h.
 *
 * The files call downwards only (tests/cli/layers.sh, rule L2):
 *
 *   expr.c          tdm__expr_compile, a source's filter and compute keys
 *     |
 *   expr_parse.c    the parser: OR down to the operands, and the forms a
 *     |             word introduces (BETWEEN, IN, LIKE, CASE, calls),
 *     |             which contain expressions again (one file: the
 *     |             grammar is recursive)
 *   expr_emit.c     appending to the program; operand kinds; freeing it
 *     |
 *   expr_lex.c      tokens, errors with a column, nesting, near names
 *
 *   expr_eval.c     running a program (beside the rest: it needs only
 *                   the program's layout and expr_fn.c)
 */
#ifndef TDM_EXPR_INT_H
#define TDM_EXPR_INT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/expr.h"

/* Evaluation stack slots; the compiler refuses programs that need more. */
#define STACK_MAX 128

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
    OP_NULLIF,   /* a = null if a = b (ck: kinds) */
    OP_WM,       /* the top (a field) becomes the current watermark */
    OP_FIELD_DEC /* push decimal field a as a double; k: its scale */
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

/* ---- Tokens and the parser ---- */

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

static inline bool numeric(tdm__expr_type t)
{
    return t == TDM__EXPR_INT || t == TDM__EXPR_DOUBLE || t == TDM__EXPR_NULL;
}

static inline bool boolish(tdm__expr_type t)
{
    return t == TDM__EXPR_BOOL || t == TDM__EXPR_NULL;
}

/* ---- expr_lex.c: tokens, errors, nesting, names ---- */

/* Records the first error of @p p (later ones are dropped), prefixed
 * with its 1-based column @p at + 1. */
void tdm__expr_perr(parser *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records "out of memory" as the first error (TDM_ERR_NOMEM). */
void tdm__expr_nomem(parser *p);

/* "the end", or the token's text quoted (shortened when long), in
 * @p buf of @p n bytes. */
const char *tdm__expr_tok_desc(const parser *p, const tok *t, char *buf,
                               size_t n);

/* Whether s[0..len) is the upper-case word @p kw, ignoring case. */
bool tdm__expr_word_is(const char *s, size_t len, const char *kw);

/* The current token is the bare word @p w (a keyword of its context). */
bool tdm__expr_kw(const parser *p, const char *w);

/* Reads the next token into p->cur; a lexical error sets p->err and
 * leaves T_END. */
void tdm__expr_next(parser *p);

/* The next token (not yet read) is "(": a name before it is a call. */
bool tdm__expr_next_is_lp(const parser *p);

/* Reads a token of kind @p k (described by @p what), or fails. */
bool tdm__expr_expect_tok(parser *p, tok_kind k, const char *what);

/* Reads the bare word @p w, or fails. */
bool tdm__expr_expect_word(parser *p, const char *w);

/* Enters one level of nesting; false (and an error) past DEPTH_MAX.  The
 * caller leaves it with p->depth-- once the construct is complete. */
bool tdm__expr_enter(parser *p);

/* Edit distance of a and b (case-insensitive), capped at 9. */
int tdm__expr_distance(const char *a, size_t la, const char *b, size_t lb);

/* The schema field closest to name[0..len), or NULL when none is near. */
const char *tdm__expr_closest_field(const tdm__schema *s, const char *name,
                                    size_t len);

/* ---- expr_emit.c: appending to the program ---- */

/* Appends instruction @p o (k, ck, kc, a as in ins) and accounts its
 * stack effect; nothing once an error is recorded. */
void tdm__expr_emit_ins(parser *p, op o, int k, int ck, bool kc, int32_t a);

/* tdm__expr_emit_ins with ck 0 and no constant operand. */
void tdm__expr_emit(parser *p, op o, int k, int32_t a);

/* Removes a last instruction that pushes a constant; true with its index
 * in *idx. */
bool tdm__expr_take_const(parser *p, int32_t *idx);

/* Emits binary operator @p o on the two operands just parsed. */
void tdm__expr_emit_binary(parser *p, op o, int k, int ck, bool conv_a,
                           bool conv_b);

/* Emits a push of constant @p v (at column @p at, for the stack bound). */
void tdm__expr_emit_const(parser *p, size_t at, tdm__expr_val v);

/* The operand kinds (CK_*) of comparing types @p a and @p b, or -1 and
 * an error naming operator @p what (@p n bytes) at @p at. */
int tdm__expr_cmp_kind(parser *p, size_t at, tdm__expr_type a, tdm__expr_type b,
                       const char *what, int n);

/* Emits arithmetic operator @p k (T_PLUS ... T_PCT) on operands of types
 * @p a and @p b; returns the result type. */
tdm__expr_type tdm__expr_arith(parser *p, tok_kind k, size_t at,
                               tdm__expr_type a, tdm__expr_type b);

/* ---- expr_parse.c: the precedence parser ---- */

/* Parses the whole of p->src into p->e and returns its type; p->err
 * tells whether it succeeded. */
tdm__expr_type tdm__expr_parse(parser *p);

#endif /* TDM_EXPR_INT_H */
