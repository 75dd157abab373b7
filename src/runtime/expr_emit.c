/* SPDX-License-Identifier: MIT */
/* expr_emit.c - the program as the compiler builds it: appending
 * instructions and constants, the stack bound, and the choice of an
 * operator's instruction from its operands' types (the operand kinds of
 * a comparison, int64 or double arithmetic), which both the operators
 * (expr_parse.c) and the forms that compare or compute (IN, BETWEEN,
 * CASE, NULLIF, MOD in expr_parse.c) use.  Also the program's small
 * public accessors and its destructor.
 *
 * The parser emits as it goes, postfix: the operands' code, then the
 * operator's.  A binary operator whose right operand turns out to be a
 * constant takes it from the constant table instead of the stack
 * (tdm__expr_take_const removes the push just emitted, and only the
 * last instruction); CASE and COALESCE (expr_parse.c) make their jumps
 * land just past the whole construct, so a removal never moves a jump's
 * target.  Nothing is emitted once an error is recorded, and every
 * instruction's stack effect is counted so that the evaluator's fixed
 * stack (STACK_MAX slots, expr_eval.c) always suffices.  See expr_int.h
 * for how the files of the compiler fit together.
 */
#include "runtime/expr_int.h"

/* ---- The program ---- */

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

/* The type of @p e's result (see expr.h). */
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

/* ---- Emitting code ---- */

/* Stack effect of an instruction: +1 pushes, -1 pops one, 0 in place. */
static int effect(op o, int32_t a)
{
    switch (o) {
    case OP_CONST:
    case OP_FIELD:
    case OP_FIELD_DEC:
    case OP_IN_BEGIN:
        return 1;
    case OP_I2D:
    case OP_NEG_I:
    case OP_NEG_D:
    case OP_NOT:
    case OP_IS_NULL:
    case OP_NOT_NULL:
    case OP_NOP:
    case OP_WM:
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

/* Appends an instruction and accounts its stack effect, refusing a
 * program that needs more than STACK_MAX slots; nothing once an error
 * is recorded. */
void tdm__expr_emit_ins(parser *p, op o, int k, int ck, bool kc, int32_t a)
{
    if (p->err != TDM_OK)
        return;
    tdm__expr *e = p->e;
    if (e->n_code == e->cap_code) {
        int cap = e->cap_code ? e->cap_code * 2 : 16;
        ins *nc = tdm__realloc(e->code, (size_t)cap * sizeof *nc);
        if (!nc) {
            tdm__expr_nomem(p);
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
        tdm__expr_perr(p, p->cur.at,
                       "the expression is too complex (more than %d pending "
                       "operands)",
                       STACK_MAX);
}

/* An instruction without a constant operand (ck 0). */
void tdm__expr_emit(parser *p, op o, int k, int32_t a)
{
    tdm__expr_emit_ins(p, o, k, 0, false, a);
}

/* When the last instruction pushes a constant (the whole right operand
 * just parsed), removes it and returns true with its index in *idx, so
 * that the operator takes it directly. */
bool tdm__expr_take_const(parser *p, int32_t *idx)
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
void tdm__expr_emit_binary(parser *p, op o, int k, int ck, bool conv_a,
                           bool conv_b)
{
    int32_t idx = 0;
    bool kc = tdm__expr_take_const(p, &idx);
    if (conv_a)
        tdm__expr_emit(p, OP_I2D, 0, kc ? 0 : 1);
    if (conv_b && kc)
        const_to_double(p, idx);
    else if (conv_b)
        tdm__expr_emit(p, OP_I2D, 0, 0);
    tdm__expr_emit_ins(p, o, k, ck, kc, idx);
}

/* Emits a push of constant @p v (its string bytes already owned by the
 * program). */
void tdm__expr_emit_const(parser *p, size_t at, tdm__expr_val v)
{
    if (p->err != TDM_OK)
        return;
    tdm__expr *e = p->e;
    if (p->sp + 1 > STACK_MAX) {
        tdm__expr_perr(p, at,
                       "the expression is too complex (more than %d pending "
                       "operands)",
                       STACK_MAX);
        return;
    }
    if (e->n_consts == e->cap_consts) {
        int cap = e->cap_consts ? e->cap_consts * 2 : 8;
        tdm__expr_val *nc = tdm__realloc(e->consts, (size_t)cap * sizeof *nc);
        if (!nc) {
            tdm__expr_nomem(p);
            return;
        }
        e->consts = nc;
        e->cap_consts = cap;
    }
    e->consts[e->n_consts] = v;
    tdm__expr_emit(p, OP_CONST, 0, e->n_consts++);
}

/* ---- Operand types ---- */

/* The operand kinds (CK_*) of comparing types @p a and @p b, or -1 and
 * an error naming operator @p what (@p n bytes) at @p at. */
int tdm__expr_cmp_kind(parser *p, size_t at, tdm__expr_type a, tdm__expr_type b,
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
    tdm__expr_perr(p, at, "cannot compare %s with %s (\"%.*s\")",
                   tdm__expr_type_name(a), tdm__expr_type_name(b), n, what);
    return -1;
}

/* Emits an arithmetic operator on operands of types @p a and @p b;
 * returns the result type. */
tdm__expr_type tdm__expr_arith(parser *p, tok_kind k, size_t at,
                               tdm__expr_type a, tdm__expr_type b)
{
    static const char sym[] = {[T_PLUS] = '+',
                               [T_MINUS] = '-',
                               [T_STAR] = '*',
                               [T_SLASH] = '/',
                               [T_PCT] = '%'};
    if (!numeric(a) || !numeric(b)) {
        tdm__expr_perr(p, at, "%c needs numbers, got %s and %s", sym[k],
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
    tdm__expr_emit_binary(p, o, 0, 0, dbl && a == TDM__EXPR_INT,
                          dbl && b == TDM__EXPR_INT);
    if (dbl)
        return TDM__EXPR_DOUBLE;
    return a == TDM__EXPR_NULL && b == TDM__EXPR_NULL ? TDM__EXPR_NULL
                                                      : TDM__EXPR_INT;
}
