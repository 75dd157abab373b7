/* SPDX-License-Identifier: MIT */
/* fuzz_expr.c - libFuzzer target for the expression compiler and
 * evaluator of a source's filter and compute keys (src/runtime/expr.c).
 *
 * The whole input (cut at its first NUL) is an expression over a fixed
 * schema with a field of every type.  Invariants (a violation is
 * __builtin_trap()): compilation returns OK, INVAL or NOMEM and nothing
 * else; an INVAL message starts with "column N: " with N inside the text
 * (or one past its end); a program's type is one of the five; evaluating
 * it on each of four rows (ordinary values, zeros, the int64 and double
 * extremes, all nulls) is deterministic, gives 0/1 for a non-null bool,
 * a finite double, a string inside the row's arena, the literal's
 * text or the evaluation's scratch; and wrapping the text as "(e)", "(e) IS
 * NULL" and, for bools, "NOT (e)" compiles (unless nesting or the stack bound
 * is reached) to the value that the SQL rules derive from e's.
 * tests/fuzz/replay.c runs tests/fuzz/corpus_expr/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "runtime/expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SCHEMA                                                                 \
    "i:int64, j:int64, d:double, e:double, s:string, u:string, b:bool, "       \
    "c:bool, t:timestamp"
#define N_ROWS 4

static void fill_rows(tdm__batch *b)
{
    static const char *const strs[N_ROWS][2] = {
        {"abc", "abd"}, {"", ""}, {"zz\x01", "a"}, {NULL, NULL}};
    static const int64_t ints[N_ROWS][2] = {
        {7, -3}, {0, 0}, {INT64_MIN, INT64_MAX}, {0, 0}};
    static const double dbls[N_ROWS][2] = {
        {2.5, -0.125}, {0.0, -0.0}, {1.7976931348623157e308, -1e-300}, {0, 0}};
    for (int r = 0; r < N_ROWS; r++) {
        tdm__row *row = tdm__batch_add(b);
        CHECK(row != NULL);
        if (r == N_ROWS - 1)
            continue; /* all null */
        row->v[0] = (tdm__val){.u.i = ints[r][0]};
        row->v[1] = (tdm__val){.u.i = ints[r][1]};
        row->v[2] = (tdm__val){.u.d = dbls[r][0]};
        row->v[3] = (tdm__val){.u.d = dbls[r][1]};
        CHECK(tdm__batch_set_string(b, row, 4, strs[r][0],
                                    strlen(strs[r][0])) == TDM_OK);
        CHECK(tdm__batch_set_string(b, row, 5, strs[r][1],
                                    strlen(strs[r][1])) == TDM_OK);
        row->v[6] = (tdm__val){.u.i = r & 1};
        row->v[7] = (tdm__val){.u.i = !(r & 1)};
        row->v[8] = (tdm__val){.u.i = ints[r][1]};
    }
}

/* Two results are the same value (doubles by bits). */
static void same_val(tdm__expr_type t, const tdm__expr_val *a,
                     const tdm__expr_val *b)
{
    CHECK(a->null == b->null);
    if (a->null)
        return;
    if (t == TDM__EXPR_STRING) {
        CHECK(a->u.s.len == b->u.s.len);
        CHECK(a->u.s.len == 0 || memcmp(a->u.s.p, b->u.s.p, a->u.s.len) == 0);
    } else {
        CHECK(memcmp(&a->u.i, &b->u.i, sizeof a->u.i) == 0);
    }
}

static void check_msg(const char *msg, size_t len)
{
    unsigned long col = 0;
    int used = 0;
    CHECK(sscanf(msg, "column %lu: %n", &col, &used) == 1 && used > 0);
    CHECK(col >= 1 && col <= len + 1);
    CHECK(msg[used] != 0);
}

/* Compiles @p text; NULL when it does not compile (message checked). */
static tdm__expr *compile(const char *text, size_t len)
{
    static tdm__schema schema;
    static int have_schema;
    if (!have_schema) {
        CHECK(tdm__schema_parse(SCHEMA, &schema, NULL, 0) == TDM_OK);
        have_schema = 1;
    }
    char msg[512];
    msg[0] = 0;
    tdm__expr *e = NULL;
    tdm_err err = tdm__expr_compile(text, &schema, &e, msg, sizeof msg);
    CHECK(err == TDM_OK || err == TDM_ERR_INVAL || err == TDM_ERR_NOMEM);
    if (err != TDM_OK) {
        CHECK(e == NULL);
        if (err == TDM_ERR_INVAL)
            check_msg(msg, len);
        return NULL;
    }
    CHECK(e != NULL);
    tdm__expr_type t = tdm__expr_result_type(e);
    CHECK(t >= TDM__EXPR_INT && t <= TDM__EXPR_NULL);
    return e;
}

/* Compiles @p fmt around @p text; NULL when the wrapping went past a
 * bound (nesting or stack). */
static tdm__expr *wrapped(const char *fmt, const char *text, size_t len)
{
    size_t n = len + 32;
    char *w = malloc(n);
    CHECK(w != NULL);
    snprintf(w, n, fmt, text);
    tdm__expr *e = compile(w, strlen(w));
    free(w);
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *text = malloc(size + 1);
    CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = 0;
    size_t len = strlen(text);
    tdm__expr *e = compile(text, len);
    if (!e) {
        free(text);
        return 0;
    }
    tdm__expr_type t = tdm__expr_result_type(e);
    tdm__expr *paren = wrapped("(%s)", text, len);
    tdm__expr *isnull = wrapped("(%s) IS NULL", text, len);
    tdm__expr *neg = t == TDM__EXPR_BOOL || t == TDM__EXPR_NULL
                         ? wrapped("NOT (%s)", text, len)
                         : NULL;
    if (paren)
        CHECK(tdm__expr_result_type(paren) == t);
    tdm__schema schema;
    CHECK(tdm__schema_parse(SCHEMA, &schema, NULL, 0) == TDM_OK);
    tdm__batch *b = tdm__batch_new(&schema, N_ROWS);
    CHECK(b != NULL);
    fill_rows(b);
    for (int r = 0; r < N_ROWS; r++) {
        const tdm__row *row = &b->rows[r];
        static tdm__expr_scratch sc, sc2; /* v's strings stay in sc */
        tdm__expr_val v, again;
        /* CURRENT_WATERMARK: none yet for every third row. */
        tdm_time_ms wm = r % 3 == 0 ? TDM_TIME_MIN : (tdm_time_ms)r * 1000;
        tdm__expr_eval(e, row, wm, &sc, &v);
        tdm__expr_eval(e, row, wm, &sc2, &again);
        same_val(t, &v, &again);
        CHECK(v.null == 0 || v.null == 1);
        if (t == TDM__EXPR_NULL)
            CHECK(v.null);
        if (!v.null && t == TDM__EXPR_BOOL)
            CHECK(v.u.i == 0 || v.u.i == 1);
        if (!v.null && t == TDM__EXPR_DOUBLE)
            CHECK(v.u.d - v.u.d == 0); /* finite */
        if (!v.null && t == TDM__EXPR_STRING && v.u.s.len) {
            bool in_arena = v.u.s.p >= b->arena &&
                            v.u.s.p + v.u.s.len <= b->arena + b->arena_used;
            bool in_text = v.u.s.len <= len; /* a literal's bytes */
            bool in_sc =
                v.u.s.p >= sc.buf && v.u.s.p + v.u.s.len <= sc.buf + sc.used;
            CHECK(in_arena || in_text || in_sc);
        }
        CHECK(tdm__expr_true(e, row, wm) == (!v.null && v.u.i != 0) ||
              (t != TDM__EXPR_BOOL && t != TDM__EXPR_NULL));
        if (paren) {
            tdm__expr_eval(paren, row, wm, &sc2, &again);
            same_val(t, &v, &again);
        }
        if (isnull) {
            tdm__expr_eval(isnull, row, wm, &sc2, &again);
            CHECK(!again.null && again.u.i == v.null);
        }
        if (neg) {
            tdm__expr_eval(neg, row, wm, &sc2, &again);
            CHECK(again.null == v.null);
            if (!v.null)
                CHECK(again.u.i == !v.u.i);
        }
    }
    tdm__batch_destroy(b);
    tdm__schema_free(&schema);
    tdm__expr_destroy(neg);
    tdm__expr_destroy(isnull);
    tdm__expr_destroy(paren);
    tdm__expr_destroy(e);
    free(text);
    return 0;
}
