/* SPDX-License-Identifier: MIT */
/* expr_eval.c - running a compiled expression on a row: a loop over the
 * postfix program (expr_int.h) with one dispatch per instruction, and
 * SQL's rules for the values it computes.
 *
 * Nulls follow SQL's three-valued logic (a false AND or a true OR
 * decides even against null); integer arithmetic that would overflow or
 * divide by zero gives null instead of undefined behaviour, and a double
 * result that is not finite is null too.  int64 and double compare
 * exactly, without rounding the int64.  Functions run in expr_fn.c and
 * expr_time.c; the instructions of functions, CASE, COALESCE and the
 * predicates are off the arithmetic's path (control).
 *
 * Nothing is allocated: the stack is on the C stack (STACK_MAX slots,
 * which the compiler guarantees suffice), and strings that functions
 * build go to the caller's scratch (TDM__EXPR_SCRATCH_BYTES, 16 KiB per
 * evaluation; a result that does not fit is null).  tdm__expr_true and
 * the source keys use a scratch on their own stack.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/decimal.h"
#include "runtime/expr_fn.h"
#include "runtime/expr_int.h"

/* ---- Comparing and computing values ---- */

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

/* An int64 slot @p t as a double (OP_I2D). */
static inline void int_to_double(tdm__expr_val *t)
{
    t->u.d = t->null ? 0 : (double)t->u.i;
}

/* CURRENT_WATERMARK: @p t (its field) becomes watermark @p wm, null
 * before the first one (TDM_TIME_MIN). */
static inline void put_wm(tdm__expr_val *t, tdm_time_ms wm)
{
    t->null = wm == TDM_TIME_MIN;
    t->u.i = wm == TDM_TIME_MIN ? 0 : wm;
}

/* A decimal field of scale @p s as the double nearest to its value. */
static inline void push_decimal(tdm__expr_val *t, const tdm__val *v, int s)
{
    push_field(t, v);
    t->u.d = t->null ? 0 : tdm__dec_to_double(t->u.i, s);
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

/* ---- Running a program ---- */

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
void tdm__expr_eval(const tdm__expr *e, const tdm__row *row, tdm_time_ms wm,
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
        case OP_WM: /* CURRENT_WATERMARK(field): in place of the field. */
            put_wm(&st[sp - 1], wm);
            break;
        case OP_FIELD_DEC:
            push_decimal(&st[sp++], &row->v[c->a], c->k);
            break;
        case OP_I2D:
            int_to_double(&st[sp - 1 - c->a]);
            break;
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
bool tdm__expr_true(const tdm__expr *e, const tdm__row *row, tdm_time_ms wm)
{
    tdm__expr_scratch sc;
    tdm__expr_val v;
    tdm__expr_eval(e, row, wm, &sc, &v);
    return !v.null && v.u.i != 0;
}

/* Whether the program has the instruction of CURRENT_WATERMARK. */
bool tdm__expr_uses_watermark(const tdm__expr *e)
{
    for (int i = 0; e && i < e->n_code; i++)
        if (e->code[i].op == OP_WM)
            return true;
    return false;
}
