/* SPDX-License-Identifier: MIT */
/* test_expr.c - the expression language of a source's filter and compute
 * keys (src/runtime/expr.c): parsing and precedence, SQL null rules,
 * int64 edge cases (INT64_MIN, overflow, division by zero), exact mixed
 * int/double comparison, compile errors with their columns, the keys'
 * validation messages through tdm_job_validate, and a job whose filter
 * and compute run in the source subtask.  Every expected value is worked
 * out by hand in the test (never taken from the evaluator).
 */
#include <math.h>

#include "test_rt_kit.h"
#include "runtime/expr.h"

/* ---- Helpers ---- */

/* The test schema and one row of it:
 *   i = 7, j = -2, big = INT64_MAX, min = INT64_MIN, d = 2.5,
 *   s = "abc", b = true, t = 1000 (timestamp), n = null (int64),
 *   nd = null (double), ns = null (string), price = 1658.20 (a
 *   decimal(10,2), stored as 165820). */
#define SCHEMA                                                                 \
    "i:int64, j:int64, big:int64, min:int64, d:double, s:string, "             \
    "b:bool, t:timestamp, n:int64, nd:double, ns:string, my-field:int64, "     \
    "price:decimal(10,2)"

typedef struct fixture {
    tdm__schema schema;
    tdm__batch *batch;
    tdm__row *row;
} fixture;

static fixture fx;
static tdm__expr_scratch fx_sc;

static void fx_init(void)
{
    char msg[256];
    ASSERT_OK(tdm__schema_parse(SCHEMA, &fx.schema, msg, sizeof msg));
    fx.batch = tdm__batch_new(&fx.schema, 4);
    ASSERT_TRUE(fx.batch != NULL);
    fx.row = tdm__batch_add(fx.batch);
    ASSERT_TRUE(fx.row != NULL);
    tdm__row *r = fx.row;
    r->v[0] = (tdm__val){.u.i = 7};
    r->v[1] = (tdm__val){.u.i = -2};
    r->v[2] = (tdm__val){.u.i = INT64_MAX};
    r->v[3] = (tdm__val){.u.i = INT64_MIN};
    r->v[4] = (tdm__val){.u.d = 2.5};
    ASSERT_OK(tdm__batch_set_string(fx.batch, r, 5, "abc", 3));
    r->v[6] = (tdm__val){.u.i = 1};
    r->v[7] = (tdm__val){.u.i = 1000};
    r->v[8] = (tdm__val){.null = 1};
    r->v[9] = (tdm__val){.null = 1};
    r->v[10] = (tdm__val){.null = 1};
    r->v[11] = (tdm__val){.u.i = 42};
    r->v[12] = (tdm__val){.u.i = 165820};
}

static void fx_free(void)
{
    tdm__batch_destroy(fx.batch);
    tdm__schema_free(&fx.schema);
    memset(&fx, 0, sizeof fx);
}

/* Compiles and evaluates @p text on the fixture row. */
static tdm__expr_val eval_at(const char *file, int line, const char *text,
                             tdm__expr_type *type)
{
    char msg[512] = "";
    tdm__expr *e = NULL;
    if (tdm__expr_compile(text, &fx.schema, &e, msg, sizeof msg) != TDM_OK)
        tdm_test_fail(file, line, "compile \"%s\": %s", text, msg);
    tdm__expr_val v;
    tdm__expr_eval(e, fx.row, TDM_TIME_MIN, &fx_sc, &v);
    *type = tdm__expr_result_type(e);
    if (*type == TDM__EXPR_STRING && !v.null) { /* may be the program's */
        static char copy[TDM__EXPR_SCRATCH_BYTES];
        ASSERT_TRUE(v.u.s.len <= sizeof copy);
        memcpy(copy, v.u.s.p, v.u.s.len);
        v.u.s.p = copy;
    }
    tdm__expr_destroy(e);
    return v;
}

static void want_int(const char *file, int line, const char *text, int64_t want)
{
    tdm__expr_type t;
    tdm__expr_val v = eval_at(file, line, text, &t);
    if (t != TDM__EXPR_INT || v.null || v.u.i != want)
        tdm_test_fail(file, line,
                      "\"%s\": got %s %s%" PRId64 ", want int64 "
                      "%" PRId64,
                      text, tdm__expr_type_name(t), v.null ? "null " : "",
                      v.u.i, want);
}

static void want_dbl(const char *file, int line, const char *text, double want)
{
    tdm__expr_type t;
    tdm__expr_val v = eval_at(file, line, text, &t);
    if (t != TDM__EXPR_DOUBLE || v.null || v.u.d != want)
        tdm_test_fail(file, line,
                      "\"%s\": got %s %s%.17g, want double "
                      "%.17g",
                      text, tdm__expr_type_name(t), v.null ? "null " : "",
                      v.u.d, want);
}

/* want: 1 true, 0 false, -1 null. */
static void want_bool(const char *file, int line, const char *text, int want)
{
    tdm__expr_type t;
    tdm__expr_val v = eval_at(file, line, text, &t);
    int got = v.null ? -1 : (int)v.u.i;
    if (t != TDM__EXPR_BOOL || got != want)
        tdm_test_fail(file, line, "\"%s\": got %s %d, want bool %d", text,
                      tdm__expr_type_name(t), got, want);
}

/* A null result of type @p type. */
static void want_null(const char *file, int line, const char *text,
                      tdm__expr_type type)
{
    tdm__expr_type t;
    tdm__expr_val v = eval_at(file, line, text, &t);
    if (t != type || !v.null)
        tdm_test_fail(file, line, "\"%s\": got %s%s, want null %s", text,
                      v.null ? "null " : "", tdm__expr_type_name(t),
                      tdm__expr_type_name(type));
}

/* A non-null string result equal to @p want. */
static void want_str(const char *file, int line, const char *text,
                     const char *want)
{
    tdm__expr_type t;
    tdm__expr_val v = eval_at(file, line, text, &t);
    if (t != TDM__EXPR_STRING || v.null || v.u.s.len != strlen(want) ||
        memcmp(v.u.s.p, want, v.u.s.len) != 0)
        tdm_test_fail(file, line, "\"%s\": got %s %s\"%.*s\", want \"%s\"",
                      text, tdm__expr_type_name(t), v.null ? "null " : "",
                      v.null ? 0 : (int)v.u.s.len, v.u.s.p, want);
}

/* Compiling @p text fails with exactly @p want. */
static void want_err(const char *file, int line, const char *text,
                     const char *want)
{
    char msg[512] = "";
    tdm__expr *e = NULL;
    tdm_err err = tdm__expr_compile(text, &fx.schema, &e, msg, sizeof msg);
    if (err != TDM_ERR_INVAL || e != NULL || strcmp(msg, want) != 0)
        tdm_test_fail(file, line, "\"%s\": got %s \"%s\", want \"%s\"", text,
                      tdm_err_name(err), msg, want);
}

#define INT(text, want) want_int(__FILE__, __LINE__, text, want)
#define DBL(text, want) want_dbl(__FILE__, __LINE__, text, want)
#define BOOL(text, want) want_bool(__FILE__, __LINE__, text, want)
#define NUL(text, type) want_null(__FILE__, __LINE__, text, type)
#define ERR(text, want) want_err(__FILE__, __LINE__, text, want)
#define STR(text, want) want_str(__FILE__, __LINE__, text, want)

/* ---- Parsing and precedence ---- */

TDM_TEST(literals_and_fields)
{
    fx_init();
    INT("42", 42);
    INT("  42  ", 42);
    DBL("0.5", 0.5);
    DBL(".5", 0.5);
    DBL("1e3", 1000.0);
    DBL("2.5E-1", 0.25);
    INT("i", 7);
    INT("t", 1000); /* a timestamp reads as int64 */
    DBL("d", 2.5);
    BOOL("b", 1);
    BOOL("TRUE", 1);
    BOOL("false", 0);
    BOOL("s = 'abc'", 1);
    BOOL("'it''s' <> 'its'", 1);
    INT("\"my-field\"", 42); /* a name with '-' is quoted */
    INT("-j", 2);
    INT("+i", 7);
    INT("- -i", 7);
    fx_free();
}

TDM_TEST(precedence_and_associativity)
{
    fx_init();
    INT("1 + 2 * 3", 7);
    INT("(1 + 2) * 3", 9);
    INT("10 - 4 - 3", 3);   /* (10 - 4) - 3 */
    INT("100 / 10 / 5", 2); /* (100 / 10) / 5 */
    INT("2 * 3 % 4", 2);    /* (2 * 3) % 4 */
    INT("2 + 3 % 4", 5);    /* 2 + (3 % 4) */
    INT("-2 * -3", 6);
    INT("i - -2", 9);
    INT("-i % 4", -3); /* (-7) % 4 */
    BOOL("1 + 1 = 2", 1);
    BOOL("i % 7 = 0 AND j < 0", 1);
    BOOL("NOT 1 = 2", 1);              /* NOT (1 = 2) */
    BOOL("NOT TRUE OR TRUE", 1);       /* (NOT TRUE) OR TRUE */
    BOOL("TRUE OR TRUE AND FALSE", 1); /* TRUE OR (TRUE AND FALSE) */
    BOOL("(TRUE OR TRUE) AND FALSE", 0);
    BOOL("FALSE AND TRUE OR TRUE", 1); /* (FALSE AND TRUE) OR TRUE */
    BOOL("not not b", 1);
    BOOL("i > 5 and i <= 7 or false", 1);
    BOOL("i == 7", 1);
    BOOL("i != 7", 0);
    BOOL("i <> 8", 1);
    BOOL("i >= 7 AND i < 8 AND i > 6 AND i <= 7", 1);
    BOOL("i + 1 IS NULL", 0); /* (i + 1) IS NULL */
    fx_free();
}

TDM_TEST(integer_edges)
{
    fx_init();
    INT("-9223372036854775808", INT64_MIN);
    INT("9223372036854775807", INT64_MAX);
    BOOL("min = -9223372036854775808", 1);
    NUL("min / -1", TDM__EXPR_INT); /* 2^63 does not fit */
    NUL("-9223372036854775808 / -1", TDM__EXPR_INT);
    INT("min % -1", 0); /* no trap, and 0 */
    INT("7 % -1", 0);
    NUL("-min", TDM__EXPR_INT);
    NUL("big + 1", TDM__EXPR_INT);
    NUL("min - 1", TDM__EXPR_INT);
    NUL("big * 2", TDM__EXPR_INT);
    NUL("min * -1", TDM__EXPR_INT);
    INT("big - big", 0);
    INT("min + big", -1);
    NUL("i / 0", TDM__EXPR_INT);
    NUL("i % 0", TDM__EXPR_INT);
    NUL("i / (j + 2)", TDM__EXPR_INT);
    INT("-7 / 2", -3); /* truncates toward zero */
    INT("7 / -2", -3);
    INT("-7 % 2", -1); /* the sign of the dividend */
    INT("7 % -2", 1);
    /* An overflow inside a larger expression makes it all null, and a
     * null operand of a comparison makes the comparison null. */
    BOOL("big + 1 > 0", -1);
    BOOL("(big + 1) IS NULL", 1);
    fx_free();
}

TDM_TEST(doubles)
{
    fx_init();
    DBL("1 / 2.0", 0.5);
    INT("1 / 2", 0);
    DBL("d * 2", 5.0);
    DBL("i + d", 9.5);
    DBL("d - i", -4.5);
    DBL("7.5 % 2", 1.5);
    /* Every place an int64 operand is converted: left or right, a
     * constant or not. */
    DBL("2 * d", 5.0);
    DBL("i * 0.5", 3.5);
    DBL("0.5 * i", 3.5);
    DBL("1 / 4.0", 0.25);
    DBL("i / (d * 2)", 1.4);
    DBL("(d * 2) / i", 5.0 / 7.0);
    NUL("d + NULL", TDM__EXPR_DOUBLE);
    NUL("NULL * d", TDM__EXPR_DOUBLE);
    NUL("i + NULL", TDM__EXPR_INT);
    DBL("-d", -2.5);
    NUL("d / 0", TDM__EXPR_DOUBLE);
    NUL("d / 0.0", TDM__EXPR_DOUBLE);
    NUL("d % 0", TDM__EXPR_DOUBLE);
    NUL("1e308 * 10", TDM__EXPR_DOUBLE); /* not finite: null */
    DBL("big * 1.0", 9223372036854775808.0);
    /* Mixed comparisons are exact: 2^53 + 1 is not 2^53 as a double
     * would make it. */
    BOOL("9007199254740993 > 9007199254740992.0", 1);
    BOOL("9007199254740992.0 < 9007199254740993", 1);
    BOOL("9007199254740993 = 9007199254740992.0", 0);
    BOOL("big < 9223372036854775808.0", 1);
    BOOL("min = -9223372036854775808.0", 1);
    BOOL("min > -1e19", 1);
    BOOL("i = 7.0", 1);
    BOOL("i < 7.5", 1);
    BOOL("-7 < -6.5", 1);
    BOOL("-7 > -7.5", 1);
    BOOL("2.5 = d", 1);
    fx_free();
}

TDM_TEST(strings_and_bools)
{
    fx_init();
    BOOL("s = 'abc'", 1);
    BOOL("s <> 'abd'", 1);
    BOOL("s < 'abd'", 1);
    BOOL("s < 'ab'", 0); /* a prefix sorts first */
    BOOL("s > 'ab'", 1);
    BOOL("'' < s", 1);
    BOOL("'it''s' = 'it''s'", 1);
    BOOL("'a''b' > 'a'", 1);
    BOOL("b = TRUE", 1);
    BOOL("b <> FALSE", 1);
    BOOL("FALSE < TRUE", 1);
    fx_free();
}

TDM_TEST(null_rules)
{
    fx_init();
    NUL("n + 1", TDM__EXPR_INT);
    NUL("n * 0", TDM__EXPR_INT);
    NUL("nd + 1", TDM__EXPR_DOUBLE);
    NUL("n + 1.5", TDM__EXPR_DOUBLE);
    NUL("-n", TDM__EXPR_INT);
    NUL("NULL", TDM__EXPR_NULL);
    NUL("NULL + 1", TDM__EXPR_INT);
    BOOL("n = n", -1);
    BOOL("n = 1", -1);
    BOOL("n <> 1", -1);
    BOOL("ns = 'x'", -1);
    BOOL("n = NULL", -1);
    BOOL("NOT (n = 1)", -1);
    BOOL("n IS NULL", 1);
    BOOL("n IS NOT NULL", 0);
    BOOL("i IS NULL", 0);
    BOOL("ns is not null", 0);
    BOOL("NULL IS NULL", 1);
    /* Three-valued AND and OR. */
    BOOL("NULL AND FALSE", 0);
    BOOL("FALSE AND NULL", 0);
    BOOL("NULL AND TRUE", -1);
    BOOL("NULL AND NULL", -1);
    BOOL("NULL OR TRUE", 1);
    BOOL("TRUE OR NULL", 1);
    BOOL("NULL OR FALSE", -1);
    BOOL("n = 1 OR i = 7", 1);
    BOOL("n = 1 AND i = 8", 0);
    BOOL("n = 1 AND i = 7", -1);
    fx_free();
}

/* CURRENT_WATERMARK(field) is the watermark the evaluation is given,
 * null before the first; Flink's filter of late rows keeps a row at or
 * before no watermark and drops one at or behind it. */
TDM_TEST(current_watermark_is_the_operators)
{
    fx_init();
    char msg[256] = "";
    tdm__expr *e = NULL;
    const char *late = "CURRENT_WATERMARK(t) IS NULL OR t > "
                       "CURRENT_WATERMARK(t)";
    ASSERT_OK(tdm__expr_compile(late, &fx.schema, &e, msg, sizeof msg));
    ASSERT_TRUE(tdm__expr_uses_watermark(e));
    ASSERT_TRUE(tdm__expr_true(e, fx.row, TDM_TIME_MIN)); /* t is 1000 */
    ASSERT_TRUE(tdm__expr_true(e, fx.row, 999));
    ASSERT_TRUE(!tdm__expr_true(e, fx.row, 1000));
    tdm__expr_destroy(e);
    e = NULL;
    ASSERT_OK(tdm__expr_compile("CURRENT_WATERMARK(i) + 1", &fx.schema, &e, msg,
                                sizeof msg));
    tdm__expr_val v;
    tdm__expr_eval(e, fx.row, 41, &fx_sc, &v);
    ASSERT_TRUE(!v.null && v.u.i == 42);
    tdm__expr_eval(e, fx.row, TDM_TIME_MIN, &fx_sc, &v);
    ASSERT_TRUE(v.null);
    ASSERT_TRUE(tdm__expr_result_type(e) == TDM__EXPR_INT);
    tdm__expr_destroy(e);
    static const char *const bad[] = {"CURRENT_WATERMARK(d) > 0",
                                      "CURRENT_WATERMARK(i + 1) > 0",
                                      "CURRENT_WATERMARK(s) > 0"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        e = NULL;
        ASSERT_TRUE(tdm__expr_compile(bad[k], &fx.schema, &e, msg,
                                      sizeof msg) == TDM_ERR_INVAL);
        ASSERT_TRUE(strstr(msg, "CURRENT_WATERMARK") != NULL);
    }
    e = NULL;
    ASSERT_OK(tdm__expr_compile("i = 7", &fx.schema, &e, msg, sizeof msg));
    ASSERT_TRUE(!tdm__expr_uses_watermark(e));
    tdm__expr_destroy(e);
    fx_free();
}

TDM_TEST(filters_keep_only_true)
{
    fx_init();
    static const struct {
        const char *text;
        bool keep;
    } cases[] = {{"i = 7", true},        {"i = 8", false},    {"n = 1", false},
                 {"NOT (n = 1)", false}, {"n IS NULL", true}, {"NULL", false}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char msg[256];
        tdm__expr *e = NULL;
        ASSERT_OK(
            tdm__expr_compile(cases[k].text, &fx.schema, &e, msg, sizeof msg));
        if (tdm__expr_true(e, fx.row, TDM_TIME_MIN) != cases[k].keep)
            tdm_test_fail(__FILE__, __LINE__, "\"%s\": keep is %d",
                          cases[k].text, !cases[k].keep);
        tdm__expr_destroy(e);
    }
    fx_free();
}

/* ---- Errors ---- */

TDM_TEST(errors_name_the_column)
{
    fx_init();
    ERR("", "column 1: expected an operand, got the end");
    ERR("   ", "column 4: expected an operand, got the end");
    ERR("(i + )", "column 6: expected an operand, got \")\"");
    ERR("i +", "column 4: expected an operand, got the end");
    ERR("i )", "column 3: expected an operator or the end, got \")\"");
    ERR("1 2", "column 3: expected an operator or the end, got \"2\"");
    ERR("(i = 1", "column 7: expected \")\" (to close the \"(\" at column "
                  "1), got the end");
    ERR("i = 1 = 2", "column 7: comparisons do not chain (combine them "
                     "with AND, or add parentheses), got \"=\"");
    ERR("i IS 1", "column 6: expected NULL after IS, got \"1\"");
    ERR("i IS NOT 1", "column 10: expected NULL after IS NOT, got \"1\"");
    ERR("'abc", "column 1: unterminated string (the closing ' is "
                "missing)");
    ERR("\"abc", "column 1: unterminated quoted field name (the closing "
                 "\" is missing)");
    ERR("i # 2", "column 3: unexpected character '#'");
    ERR("i ! 2", "column 3: expected \"!=\", got \"!\"");
    ERR("12abc", "column 1: malformed number \"12abc\"");
    ERR("99999999999999999999", "column 1: integer 99999999999999999999 "
                                "is out of the int64 range (write it as a "
                                "decimal, e.g. 99999999999999999999.0)");
    ERR("9223372036854775808", "column 1: integer 9223372036854775808 is "
                               "out of the int64 range (write it as a "
                               "decimal, e.g. 9223372036854775808.0)");
    ERR("i + -9223372036854775809",
        "column 5: integer -9223372036854775809 is out of the int64 range "
        "(write it as a decimal, e.g. 9223372036854775809.0)");
    ERR("1e999", "column 1: number 1e999 is out of the double range");
    ERR("i = AND", "column 5: expected an operand, got \"AND\"");
    fx_free();
}

TDM_TEST(errors_types_and_fields)
{
    fx_init();
    ERR("s = 1", "column 3: cannot compare string with int64 (\"=\")");
    ERR("i < 'x'", "column 3: cannot compare int64 with string (\"<\")");
    ERR("b = 1", "column 3: cannot compare bool with int64 (\"=\")");
    ERR("s + 1", "column 3: + needs numbers, got string and int64");
    ERR("b * 2", "column 3: * needs numbers, got bool and int64");
    ERR("-s", "column 1: unary - needs a number, got string");
    ERR("i AND b", "column 3: AND needs conditions (true or false), got "
                   "int64 and bool");
    ERR("b OR 1", "column 3: OR needs conditions (true or false), got "
                  "bool and int64");
    ERR("NOT i", "column 1: NOT needs a condition (true or false), got "
                 "int64");
    ERR("auction = 1", "column 1: unknown field \"auction\" (the schema "
                       "has i, j, big, min, d, s, b, t, n, nd, ns, "
                       "my-field, price)");
    ERR("bgi > 0", "column 1: unknown field \"bgi\" (did you mean "
                   "\"big\"?)");
    ERR("i + Min", "column 5: unknown field \"Min\" (did you mean "
                   "\"min\"?)");
    ERR("my-field", "column 1: unknown field \"my\" (did you mean "
                    "\"i\"?)");
    ERR("\"my-feild\" = 1", "column 1: unknown field \"my-feild\" (did you "
                            "mean \"my-field\"?)");
    fx_free();
}

TDM_TEST(nesting_is_bounded)
{
    fx_init();
    char text[512];
    /* 64 levels of parentheses are fine, 65 are not. */
    size_t o = 0;
    for (int k = 0; k < 64; k++)
        text[o++] = '(';
    text[o++] = '1';
    for (int k = 0; k < 64; k++)
        text[o++] = ')';
    text[o] = 0;
    INT(text, 1);
    o = 0;
    for (int k = 0; k < 65; k++)
        text[o++] = '(';
    text[o++] = '1';
    for (int k = 0; k < 65; k++)
        text[o++] = ')';
    text[o] = 0;
    ERR(text, "column 65: the expression is nested too deeply (more than "
              "64 levels)");
    /* 200 NOTs: the same bound. */
    o = 0;
    for (int k = 0; k < 100; k++) {
        memcpy(text + o, "NOT ", 4);
        o += 4;
    }
    memcpy(text + o, "b", 2);
    ERR(text, "column 257: the expression is nested too deeply (more "
              "than 64 levels)");
    fx_free();
}

/* A long flat sum stays within the stack (left-associative: two slots),
 * and the deepest right-nested form is refused before the stack
 * overflows. */
TDM_TEST(long_expressions)
{
    fx_init();
    static char text[20000];
    size_t o = 0;
    for (int k = 0; k < 2000; k++)
        o += (size_t)snprintf(text + o, sizeof text - o, "%s1", k ? " + " : "");
    INT(text, 2000);
    o = 0;
    for (int k = 0; k < 60; k++)
        o += (size_t)snprintf(text + o, sizeof text - o,
                              "i OR b AND i = i + i * (");
    o += (size_t)snprintf(text + o, sizeof text - o, "1");
    for (int k = 0; k < 60; k++)
        text[o++] = ')';
    text[o] = 0;
    char msg[256] = "";
    tdm__expr *e = NULL;
    ASSERT_ERR(tdm__expr_compile(text, &fx.schema, &e, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "too complex") != NULL);
    fx_free();
}

/* ---- Predicates ---- */

TDM_TEST(between_in_like)
{
    fx_init();
    BOOL("i BETWEEN 1 AND 7", 1);
    BOOL("i BETWEEN 8 AND 9", 0);
    BOOL("i NOT BETWEEN 1 AND 6", 1);
    BOOL("i BETWEEN 7.0 AND 7.5", 1); /* mixed kinds, exact */
    BOOL("d between 2 and 3", 1);
    BOOL("9007199254740993 BETWEEN 9007199254740992.0 AND 9007199254740992.0",
         0);
    BOOL("s BETWEEN 'abb' AND 'abd'", 1);
    BOOL("i BETWEEN 1 AND 9 AND b", 1); /* the AND of BETWEEN binds first */
    /* Three-valued: x >= lo AND x <= hi. */
    BOOL("n BETWEEN 1 AND 2", -1);
    BOOL("i BETWEEN n AND 5", 0); /* null AND false */
    BOOL("i BETWEEN n AND 9", -1);
    BOOL("i NOT BETWEEN n AND 5", 1);
    BOOL("i IN (1, 7, 9)", 1);
    BOOL("i IN (1, 2)", 0);
    BOOL("i NOT IN (1, 2)", 1);
    BOOL("i IN (7.0)", 1);
    BOOL("d IN (1, 2.5)", 1);
    BOOL("s IN ('x', 'abc')", 1);
    BOOL("i IN (j + 9, 0)", 1);
    BOOL("i IN (1, NULL)", -1); /* not found, a null item */
    BOOL("i IN (7, NULL)", 1);
    BOOL("i NOT IN (1, NULL)", -1);
    BOOL("n IN (1, 2)", -1);
    BOOL("s LIKE 'abc'", 1);
    BOOL("s LIKE 'a%'", 1);
    BOOL("s LIKE '%c'", 1);
    BOOL("s LIKE '%b%'", 1);
    BOOL("s LIKE 'a_c'", 1);
    BOOL("s LIKE '_'", 0);
    BOOL("s LIKE '___'", 1);
    BOOL("s LIKE 'A%'", 0); /* case-sensitive */
    BOOL("s NOT LIKE 'x%'", 1);
    BOOL("'' LIKE '%'", 1);
    BOOL("'' LIKE '_'", 0);
    BOOL("'aXbXc' LIKE '%X%X%c'", 1);
    BOOL("'abcabd' LIKE '%abd'", 1); /* backtracks */
    BOOL("'mississippi' LIKE '%iss%ppi'", 1);
    BOOL("'mississippi' LIKE '%iss%ppx'", 0);
    BOOL("'héllo' LIKE 'h_llo'", 1); /* _ is one code point */
    BOOL("'héllo' LIKE 'h__llo'", 0);
    BOOL("'100%' LIKE '100!%' ESCAPE '!'", 1);
    BOOL("'1000' LIKE '100!%' ESCAPE '!'", 0);
    BOOL("'a_b' LIKE 'a!_b' ESCAPE '!'", 1);
    BOOL("'axb' LIKE 'a!_b' ESCAPE '!'", 0);
    BOOL("'a!b' LIKE 'a!!b' ESCAPE '!'", 1);
    BOOL("ns LIKE 'a%'", -1);
    BOOL("s LIKE ns", -1);
    BOOL("s LIKE s", 1); /* a pattern that is not a constant */
    fx_free();
}

TDM_TEST(case_expressions)
{
    fx_init();
    INT("CASE WHEN i > 5 THEN 1 ELSE 2 END", 1);
    INT("CASE WHEN i > 9 THEN 1 WHEN i > 6 THEN 2 ELSE 3 END", 2);
    INT("CASE WHEN i > 9 THEN 1 WHEN i > 8 THEN 2 ELSE 3 END", 3);
    NUL("CASE WHEN i > 9 THEN 1 END", TDM__EXPR_INT);
    INT("case when n = 1 then 1 else 0 end", 0); /* null is not true */
    DBL("CASE WHEN b THEN 1 ELSE 0.5 END", 1.0); /* int64 to double */
    DBL("CASE WHEN NOT b THEN 1 ELSE d END", 2.5);
    DBL("CASE WHEN NOT b THEN d WHEN b THEN 2 END", 2.0);
    STR("CASE WHEN b THEN s ELSE 'x' END", "abc");
    INT("CASE i WHEN 1 THEN 10 WHEN 7 THEN 70 ELSE 0 END", 70);
    INT("CASE i WHEN 1 THEN 10 ELSE 0 END", 0);
    NUL("CASE i WHEN 1 THEN 10 END", TDM__EXPR_INT);
    INT("CASE n WHEN 1 THEN 10 ELSE -1 END", -1);
    STR("CASE s WHEN 'x' THEN 'no' WHEN 'abc' THEN 'yes' END", "yes");
    INT("CASE i WHEN 7.0 THEN 1 END", 1);
    INT("CASE WHEN i > 5 THEN 1 ELSE 2 END + 5", 6);
    INT("5 + CASE WHEN i > 5 THEN 1 ELSE 2 END", 6);
    INT("CASE WHEN i > 5 THEN CASE j WHEN -2 THEN 3 END ELSE 4 END * 2", 6);
    NUL("CASE WHEN TRUE THEN NULL ELSE NULL END", TDM__EXPR_NULL);
    BOOL("CASE WHEN b THEN i IN (7) END", 1);
    fx_free();
}

/* ---- Functions ---- */

TDM_TEST(null_handling_functions)
{
    fx_init();
    INT("COALESCE(n, 5)", 5);
    INT("COALESCE(n, n, i)", 7);
    NUL("COALESCE(n, NULL)", TDM__EXPR_INT);
    DBL("COALESCE(nd, i)", 7.0);
    DBL("COALESCE(n, d)", 2.5);
    STR("COALESCE(ns, s)", "abc");
    INT("COALESCE(i, 1 / 0)", 7);
    INT("coalesce(n, 1) + 1", 2);
    NUL("NULLIF(i, 7)", TDM__EXPR_INT);
    INT("NULLIF(i, 8)", 7);
    INT("NULLIF(i, n)", 7);
    NUL("NULLIF(n, 1)", TDM__EXPR_INT);
    NUL("NULLIF(s, 'abc')", TDM__EXPR_STRING);
    NUL("NULLIF(i, 7.0)", TDM__EXPR_INT);
    fx_free();
}

TDM_TEST(numeric_functions)
{
    fx_init();
    INT("MOD(i, 3)", 1);
    INT("mod(-7, 2)", -1);
    NUL("MOD(i, 0)", TDM__EXPR_INT);
    INT("MOD(min, -1)", 0);
    DBL("MOD(7.5, 2)", 1.5);
    INT("ABS(j)", 2);
    INT("ABS(i)", 7);
    NUL("ABS(min)", TDM__EXPR_INT);
    DBL("ABS(-d)", 2.5);
    NUL("ABS(n)", TDM__EXPR_INT);
    DBL("ROUND(2.5)", 3.0);
    DBL("ROUND(-2.5)", -3.0);     /* half away from zero */
    DBL("ROUND(2.675, 2)", 2.68); /* on the decimal form */
    DBL("ROUND(1.005, 2)", 1.01);
    DBL("ROUND(1234.5678, -2)", 1200.0);
    DBL("ROUND(9.99, 1)", 10.0);
    DBL("ROUND(0.4)", 0.0);
    DBL("ROUND(d, 0)", 3.0);
    DBL("ROUND(123.456, 10)", 123.456);
    INT("ROUND(i)", 7);
    INT("ROUND(1250, -2)", 1300);
    INT("ROUND(-1250, -2)", -1300);
    INT("ROUND(1249, -2)", 1200);
    INT("ROUND(i, -20)", 0);
    NUL("ROUND(big, -1)", TDM__EXPR_INT); /* rounds up past INT64_MAX */
    NUL("ROUND(d, n)", TDM__EXPR_DOUBLE);
    DBL("FLOOR(d)", 2.0);
    DBL("FLOOR(-d)", -3.0);
    DBL("CEIL(d)", 3.0);
    DBL("CEILING(-d)", -2.0);
    INT("FLOOR(i)", 7);
    INT("CEIL(j)", -2);
    NUL("FLOOR(nd)", TDM__EXPR_DOUBLE);
    fx_free();
}

TDM_TEST(string_functions)
{
    fx_init();
    INT("CHAR_LENGTH(s)", 3);
    INT("CHARACTER_LENGTH('')", 0);
    INT("CHAR_LENGTH('héllo')", 5);
    INT("CHAR_LENGTH('日本語')", 3);
    INT("char_length('😀!')", 2);
    NUL("CHAR_LENGTH(ns)", TDM__EXPR_INT);
    STR("UPPER(s)", "ABC");
    STR("LOWER('AbC1')", "abc1");
    STR("UPPER('straße é ж')", "STRAßE É Ж");
    STR("LOWER('ÀÉÎ Ж Ё ×')", "àéî ж ё ×");
    NUL("UPPER(ns)", TDM__EXPR_STRING);
    STR("TRIM('  a b  ')", "a b");
    STR("TRIM('   ')", "");
    STR("TRIM(BOTH ' ' FROM '  x  ')", "x");
    STR("TRIM(LEADING FROM '  x  ')", "x  ");
    STR("TRIM(TRAILING FROM '  x  ')", "  x");
    STR("TRIM('xy' FROM 'xyaxy')", "a");
    STR("TRIM(LEADING 'é' FROM 'ééaé')", "aé");
    STR("LTRIM(' a ')", "a ");
    STR("RTRIM(' a ')", " a");
    NUL("TRIM(ns)", TDM__EXPR_STRING);
    STR("SUBSTRING(s FROM 2)", "bc");
    STR("SUBSTRING(s FROM 2 FOR 1)", "b");
    STR("SUBSTRING(s, 1, 2)", "ab");
    STR("SUBSTR(s, 3)", "c");
    STR("SUBSTRING(s, 4)", "");
    STR("SUBSTRING(s, 0, 2)", "a"); /* positions 0 and 1 */
    STR("SUBSTRING(s, -5, 10)", "abc");
    STR("SUBSTRING(s, 2, 0)", "");
    STR("SUBSTRING(s, 2, big)", "bc");
    NUL("SUBSTRING(s, 1, -1)", TDM__EXPR_STRING);
    STR("SUBSTRING('héllo' FROM 2 FOR 3)", "éll");
    STR("SUBSTRING('日本語', 3)", "語");
    NUL("SUBSTRING(s, n)", TDM__EXPR_STRING);
    STR("CONCAT(s, '-', s)", "abc-abc");
    STR("CONCAT(s)", "abc");
    STR("CONCAT('', s, '')", "abc");
    STR("CONCAT('', '')", "");
    NUL("CONCAT(s, ns)", TDM__EXPR_STRING);
    STR("s || 'd'", "abcd");
    STR("'x' || s || 'y'", "xabcy");
    NUL("s || ns", TDM__EXPR_STRING);
    BOOL("s || 'd' = 'abcd'", 1);
    STR("UPPER(s || LOWER('DEF'))", "ABCDEF");
    fx_free();
}

TDM_TEST(casts)
{
    fx_init();
    INT("CAST(d AS BIGINT)", 2);
    INT("CAST(-d AS BIGINT)", -2); /* toward zero */
    INT("CAST(' 42 ' AS BIGINT)", 42);
    NUL("CAST('4x' AS BIGINT)", TDM__EXPR_INT);
    NUL("CAST('' AS BIGINT)", TDM__EXPR_INT);
    NUL("CAST('99999999999999999999' AS BIGINT)", TDM__EXPR_INT);
    NUL("CAST(1e19 AS BIGINT)", TDM__EXPR_INT);
    INT("CAST(b AS INT)", 1);
    INT("CAST(2147483647 AS INT)", 2147483647);
    NUL("CAST(2147483648 AS INTEGER)", TDM__EXPR_INT);
    INT("CAST(i AS BIGINT)", 7);
    DBL("CAST(i AS DOUBLE)", 7.0);
    DBL("CAST('2.5e1' AS DOUBLE)", 25.0);
    NUL("CAST('x' AS DOUBLE)", TDM__EXPR_DOUBLE);
    STR("CAST(i AS STRING)", "7");
    STR("CAST(min AS VARCHAR)", "-9223372036854775808");
    STR("CAST(d AS VARCHAR(10))", "2.5");
    STR("CAST(100.0 AS STRING)", "100.0");
    STR("CAST(0.001 AS STRING)", "0.001");
    STR("CAST(0.0001 AS STRING)", "1.0E-4");
    STR("CAST(1e7 AS STRING)", "1.0E7");
    STR("CAST(1234567.5 AS STRING)", "1234567.5");
    STR("CAST(-0.1 AS STRING)", "-0.1");
    STR("CAST(b AS STRING)", "TRUE");
    STR("CAST(s AS STRING)", "abc");
    BOOL("CAST('true' AS BOOLEAN)", 1);
    BOOL("CAST(' No ' AS BOOLEAN)", 0);
    BOOL("CAST('maybe' AS BOOLEAN)", -1);
    BOOL("CAST(0 AS BOOLEAN)", 0);
    BOOL("CAST(d AS BOOLEAN)", 1);
    INT("CAST(t AS TIMESTAMP(3))", 1000);
    INT("CAST('1970-01-01 00:00:01' AS TIMESTAMP)", 1000);
    NUL("CAST(n AS STRING)", TDM__EXPR_STRING);
    NUL("CAST(NULL AS DOUBLE)", TDM__EXPR_DOUBLE);
    fx_free();
}

TDM_TEST(time_functions)
{
    fx_init();
    /* 1709210096789 is 2024-02-29 12:34:56.789 UTC, a Thursday. */
    INT("FLOOR(1709210096789 TO SECOND)", 1709210096000);
    INT("FLOOR(1709210096789 TO MINUTE)", 1709210040000);
    INT("FLOOR(1709210096789 TO HOUR)", 1709208000000);
    INT("FLOOR(1709210096789 TO DAY)", 1709164800000);
    INT("FLOOR(1709210096789 TO MONTH)", 1706745600000);
    INT("FLOOR(1709210096789 TO YEAR)", 1704067200000);
    INT("CEIL(1709210096789 TO DAY)", 1709251200000);
    INT("CEIL(1709210096789 TO MONTH)", 1709251200000);
    INT("CEIL(1709210096789 TO QUARTER)", 1711929600000);
    INT("CEIL(1709210096789 TO YEAR)", 1735689600000);
    INT("CEIL(1709164800000 TO DAY)", 1709164800000); /* on the boundary */
    INT("FLOOR(-1 TO SECOND)", -1000);
    INT("FLOOR(-1 TO DAY)", -86400000);
    INT("CEIL(-1 TO SECOND)", 0);
    NUL("FLOOR(min TO SECOND)", TDM__EXPR_INT);
    NUL("CEIL(big TO DAY)", TDM__EXPR_INT);
    NUL("FLOOR(n TO DAY)", TDM__EXPR_INT);
    INT("EXTRACT(YEAR FROM 1709210096789)", 2024);
    INT("EXTRACT(MONTH FROM 1709210096789)", 2);
    INT("EXTRACT(DAY FROM 1709210096789)", 29);
    INT("EXTRACT(HOUR FROM 1709210096789)", 12);
    INT("EXTRACT(MINUTE FROM 1709210096789)", 34);
    INT("EXTRACT(SECOND FROM 1709210096789)", 56);
    INT("EXTRACT(QUARTER FROM 1709210096789)", 1);
    INT("EXTRACT(DOW FROM 1709210096789)", 5);
    INT("EXTRACT(DOY FROM 1709210096789)", 60);
    INT("EXTRACT(YEAR FROM -1)", 1969);
    INT("EXTRACT(SECOND FROM -1)", 59);
    INT("EXTRACT(YEAR FROM min)", -292275055);
    INT("EXTRACT(YEAR FROM big)", 292278994);
    INT("TO_TIMESTAMP_LTZ(1709210096, 0)", 1709210096000);
    INT("TO_TIMESTAMP_LTZ(t, 3)", 1000);
    NUL("TO_TIMESTAMP_LTZ(big, 0)", TDM__EXPR_INT);
    STR("DATE_FORMAT(1709210096789, 'yyyy-MM-dd HH:mm:ss')",
        "2024-02-29 12:34:56");
    STR("DATE_FORMAT(1709210096789, 'yyyy-MM-dd''T''HH:mm:ss.SSS')",
        "2024-02-29T12:34:56.789");
    STR("DATE_FORMAT(1709210096789, 'yy/M/d H:m:s S')", "24/2/29 12:34:56 7");
    STR("DATE_FORMAT(-1, 'yyyy-MM-dd HH:mm:ss.SSS')",
        "1969-12-31 23:59:59.999");
    STR("DATE_FORMAT('2024-02-29 12:34:56', 'yyyyMMdd')", "20240229");
    NUL("DATE_FORMAT(n, 'yyyy')", TDM__EXPR_STRING);
    INT("TO_TIMESTAMP('2024-02-29 12:34:56')", 1709210096000);
    INT("TO_TIMESTAMP('2024-02-29 12:34:56.789')", 1709210096789);
    INT("TO_TIMESTAMP(' 2024-02-29T12:34:56.7 ')", 1709210096700);
    INT("TO_TIMESTAMP('2024-02-29')", 1709164800000);
    INT("TO_TIMESTAMP('29/02/2024 12', 'dd/MM/yyyy HH')", 1709208000000);
    INT("TO_TIMESTAMP('20240229', 'yyyyMMdd')", 1709164800000);
    INT("TO_TIMESTAMP('1969-12-31 23:59:59.999')", -1);
    NUL("TO_TIMESTAMP('2023-02-29 00:00:00')", TDM__EXPR_INT);
    NUL("TO_TIMESTAMP('2024-02-29 24:00:00')", TDM__EXPR_INT);
    NUL("TO_TIMESTAMP('2024-02-29 12:34:56x')", TDM__EXPR_INT);
    NUL("TO_TIMESTAMP('nope')", TDM__EXPR_INT);
    NUL("TO_TIMESTAMP(ns)", TDM__EXPR_INT);
    INT("UNIX_TIMESTAMP('2024-02-29 12:34:56')", 1709210096);
    INT("UNIX_TIMESTAMP('1969-12-31 23:59:59.999')", -1);
    fx_free();
}

/* Built strings share the scratch: past TDM__EXPR_SCRATCH_BYTES the
 * function's result is null, and a borrowed slice needs none. */
TDM_TEST(scratch_limit)
{
    fx_init();
    static char text[40000];
    size_t o = (size_t)snprintf(text, sizeof text, "CHAR_LENGTH(CONCAT('");
    for (int k = 0; k < 8000; k++)
        text[o++] = 'x';
    o += (size_t)snprintf(text + o, sizeof text - o, "', '");
    for (int k = 0; k < 8000; k++)
        text[o++] = 'y';
    snprintf(text + o, sizeof text - o, "'))");
    INT(text, 16000);
    /* 2 * 8000 + 3 + 8001 bytes do not fit 16384: UPPER is null. */
    o += (size_t)snprintf(text + o, sizeof text - o, "', s) || CONCAT(UPPER('");
    for (int k = 0; k < 8001; k++)
        text[o++] = 'z';
    snprintf(text + o, sizeof text - o, "'), s))");
    NUL(text, TDM__EXPR_INT);
    fx_free();
}

TDM_TEST(errors_of_the_new_forms)
{
    fx_init();
    ERR("i BETWEEN 1", "column 12: expected AND (of BETWEEN at column 3), "
                       "got the end");
    ERR("i BETWEEN 's' AND 2", "column 3: cannot compare int64 with string "
                               "(\"BETWEEN\")");
    ERR("i IN 1", "column 6: expected \"(\" after IN, got \"1\"");
    ERR("i IN (1, 'a')", "column 3: cannot compare int64 with string "
                         "(\"IN\")");
    ERR("i IN (1 2)", "column 9: expected \",\" or \")\" in the IN list, got "
                      "\"2\"");
    ERR("i LIKE 'a'", "column 3: LIKE needs strings, got int64 and string");
    ERR("s LIKE 'a!' ESCAPE '!'", "column 8: the LIKE pattern ends with its "
                                  "escape character");
    ERR("s LIKE 'a' ESCAPE 'ab'", "column 19: expected one ASCII character "
                                  "in quotes after ESCAPE, e.g. '!'");
    ERR("i NOT 1", "column 7: expected BETWEEN, IN or LIKE after NOT, got "
                   "\"1\"");
    ERR("i = 1 IN (1)", "column 7: comparisons do not chain (combine them "
                        "with AND, or add parentheses), got \"IN\"");
    ERR("CASE END", "column 6: expected WHEN, got \"END\"");
    ERR("CASE WHEN i THEN 1 END", "column 11: expected a condition after "
                                  "WHEN, got int64");
    ERR("CASE WHEN b THEN 1 ELSE 'x' END", "column 25: CASE needs results "
                                           "of one type, got int64 and "
                                           "string");
    ERR("CASE WHEN b THEN 1", "column 19: expected END, got the end");
    ERR("CASE i WHEN 'a' THEN 1 END", "column 13: cannot compare int64 with "
                                      "string (\"WHEN\")");
    ERR("CASE WHEN b 1 END", "column 13: expected THEN, got \"1\"");
    ERR("COALESCE(i, s)", "column 13: COALESCE needs results of one type, "
                          "got int64 and string");
    ERR("NULLIF(i, s)", "column 11: cannot compare int64 with string "
                        "(\"NULLIF\")");
    ERR("MOD(s, 2)", "column 5: expected a number as argument 1 of MOD, got "
                     "string");
    ERR("ABS('x')", "column 5: expected a number as argument 1 of ABS, got "
                    "string");
    ERR("ABS(1, 2)", "column 8: ABS takes 1 argument, got more");
    ERR("ROUND()", "column 7: ROUND takes 1 to 2 arguments, got 0");
    ERR("ROUND(d, 1.5)", "column 10: expected an int64 or timestamp as "
                         "argument 2 of ROUND, got double");
    ERR("UPPER(i)", "column 7: expected a string as argument 1 of UPPER, got "
                    "int64");
    ERR("CONCAT()", "column 8: CONCAT takes at least 1 argument, got 0");
    ERR("CONCAT(s, 1)", "column 11: expected a string as argument 2 of "
                        "CONCAT, got int64");
    ERR("s || 1", "column 3: || needs strings, got string and int64");
    ERR("s | 'a'", "column 3: expected \"||\", got \"|\"");
    ERR("FLOOR(s)", "column 7: expected a number as argument 1 of FLOOR, got "
                    "string");
    ERR("FLOOR(d TO DAY)", "column 7: expected an int64 or timestamp as "
                           "argument 1 of FLOOR, got double");
    ERR("FLOOR(t TO WEEK)", "column 12: expected a time unit (SECOND, "
                            "MINUTE, HOUR, DAY, MONTH, QUARTER, YEAR), got "
                            "\"WEEK\"");
    ERR("EXTRACT(YEAR t)", "column 14: expected FROM, got \"t\"");
    ERR("SUBSTRING(s FROM 'a')", "column 18: expected an int64 or timestamp "
                                 "as argument 2 of SUBSTRING, got string");
    ERR("TRIM(LEADING s)", "column 15: expected FROM, got \")\"");
    ERR("CAST(i AS FLOAT)", "column 11: expected a type (BIGINT, INT, "
                            "INTEGER, DOUBLE, DECIMAL(p, s), STRING, "
                            "VARCHAR, BOOLEAN, TIMESTAMP(3)), got \"FLOAT\"");
    ERR("CAST(i AS DECIMAL(19, 2))", "column 19: DECIMAL precision 19 is "
                                     "not supported (1 to 18: a decimal "
                                     "is a scaled int64)");
    ERR("CAST(i AS DECIMAL(4, 5))", "column 22: DECIMAL scale 5 is more "
                                    "than the precision");
    ERR("CAST(b AS DECIMAL(4, 2))", "column 11: cannot cast bool to DECIMAL");
    /* A decimal field reads as the double nearest to its value. */
    DBL("price", 1658.2);
    BOOL("price = 1658.2", 1);
    BOOL("price > 1658.19 AND price < 1658.21", 1);
    DBL("price + 1", 1659.2);
    /* CAST to DECIMAL rounds half away from zero; null beyond p. */
    DBL("CAST(price * 0.908 AS DECIMAL(12, 3))", 1505.646);
    DBL("CAST(2.675 AS DECIMAL(10, 2))", 2.68);
    DBL("CAST(-2.005 AS DECIMAL(10, 2))", -2.01);
    DBL("CAST('12.345' AS DECIMAL(10, 2))", 12.35);
    DBL("CAST(i AS NUMERIC)", 7.0);
    NUL("CAST(1000 AS DECIMAL(4, 2))", TDM__EXPR_DOUBLE);
    ERR("CAST(d AS TIMESTAMP)", "column 11: cannot cast double to "
                                "TIMESTAMP");
    ERR("CAST(t AS TIMESTAMP(6))", "column 21: expected 3 (milliseconds), "
                                   "got \"6\"");
    ERR("CAST(i BIGINT)", "column 8: expected AS, got \"BIGINT\"");
    ERR("TO_TIMESTAMP_LTZ(t, 6)", "column 21: expected the precision 0 "
                                  "(seconds) or 3 (milliseconds)");
    ERR("DATE_FORMAT(t, 'yyyy-MMM')", "column 16: unsupported date pattern "
                                      "at \"MMM\" (letters y M d H m s S, "
                                      "text in '')");
    ERR("TO_TIMESTAMP(s, 'yyyy EEE')", "column 17: unsupported date pattern "
                                       "at \"EEE\" (letters y M d H m s S, "
                                       "text in '')");
    ERR("DATE_FORMAT(d, 'yyyy')", "column 13: expected a timestamp or a "
                                  "string as argument 1 of DATE_FORMAT, got "
                                  "double");
    ERR("UPPPER(s)", "column 1: unknown function \"UPPPER\" (did you mean "
                     "UPPER?)");
    ERR("frobnicate(s)", "column 1: unknown function \"frobnicate\"");
    fx_free();
}

/* A field may still be called like a keyword of a context (FROM, END),
 * and a quoted name before "(" is a field. */
TDM_TEST(context_words_stay_field_names)
{
    char msg[256];
    tdm__schema sch;
    ASSERT_OK(tdm__schema_parse("end:int64, from:string, year:int64", &sch, msg,
                                sizeof msg));
    tdm__batch *batch = tdm__batch_new(&sch, 1);
    tdm__row *r = tdm__batch_add(batch);
    r->v[0] = (tdm__val){.u.i = 3};
    ASSERT_OK(tdm__batch_set_string(batch, r, 1, "Ab", 2));
    r->v[2] = (tdm__val){.u.i = 2024};
    static const char *const ok[] = {
        "CASE WHEN end > 2 THEN end ELSE year END = 3",
        "SUBSTRING(from FROM 1 FOR 1) = 'A'",
        "EXTRACT(YEAR FROM year) = 1970",
        "end BETWEEN 3 AND 3 AND year IN (2024)",
        "LOWER(from) LIKE 'a%'",
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        tdm__expr *e = NULL;
        ASSERT_OK(tdm__expr_compile(ok[k], &sch, &e, msg, sizeof msg));
        if (!tdm__expr_true(e, r, TDM_TIME_MIN))
            tdm_test_fail(__FILE__, __LINE__, "\"%s\" is not true", ok[k]);
        tdm__expr_destroy(e);
    }
    tdm__batch_destroy(batch);
    tdm__schema_free(&sch);
}

/* ---- The source keys ---- */

/* A kit job: source src (kit schema k:string, ts:int64, v:int64) with
 * @p key = @p value, a window counting and summing v per k, sink out.
 * Returns the validation error (or TDM_OK) with its message in msg. */
static tdm_job *key_job(const char *key, const char *value)
{
    tdm_job *job = NULL;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = kit_source_node(job, "src", "expr_rows");
    if (key)
        KIT_SET(s, key, value);
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", "k");
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count() as n, sum(v) as total");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    return job;
}

static void want_invalid(const char *file, int line, const char *key,
                         const char *value, const char *want)
{
    tdm_job *job = key_job(key, value);
    char msg[512] = "";
    tdm_err err = tdm_job_validate(job, msg, sizeof msg);
    if (err != TDM_ERR_INVAL || strcmp(msg, want) != 0)
        tdm_test_fail(file, line, "%s=%s: got %s \"%s\", want \"%s\"", key,
                      value, tdm_err_name(err), msg, want);
    tdm_job_destroy(job);
}

#define INVALID(key, value, want)                                              \
    want_invalid(__FILE__, __LINE__, key, value, want)

TDM_TEST(source_keys_are_checked_at_validation)
{
    INVALID("filter", "v % )",
            "source \"src\": filter: column 5: expected an operand, got "
            "\")\"");
    INVALID("filter", "vv > 1",
            "source \"src\": filter: column 1: unknown field \"vv\" (did "
            "you mean \"v\"?)");
    INVALID("filter", "v + 1",
            "source \"src\": filter: the expression is int64, expected a "
            "condition (true or false), e.g. \"auction % 123 = 0\"");
    INVALID("filter", "k = 1",
            "source \"src\": filter: column 3: cannot compare string with "
            "int64 (\"=\")");
    INVALID("compute.v", "v * 0.5",
            "source \"src\": compute.v: the expression is double but field "
            "\"v\" is int64 (use integer arithmetic, e.g. \"price * 908 / "
            "1000\")");
    INVALID("compute.v", "k = 'a'",
            "source \"src\": compute.v: the expression is bool, expected a "
            "number for field \"v\"");
    INVALID("compute.k", "1",
            "source \"src\": compute.k: the expression is int64, expected "
            "a string for field \"k\"");
    INVALID("compute.vv", "1",
            "source \"src\": compute.vv: field \"vv\" is not in the schema "
            "(did you mean \"v\"?); compute assigns to a field of the "
            "schema");
    INVALID("compute.ts", "ts + 1",
            "source \"src\": compute.ts: \"ts\" is the timestamp field, "
            "whose time is taken when the record is read; compute another "
            "field");
    INVALID("compute.v", "v +",
            "source \"src\": compute.v: column 4: expected an operand, got "
            "the end");
}

static const kit_row expr_rows[] = {
    {0, "a", 1000, 3},  {0, "a", 2000, 4},  {0, "b", 3000, 10},
    {0, "b", 4000, 11}, {0, "c", 5000, -6}, {0, "a", 6000, 9},
};

TDM_TEST(filter_and_compute_run_in_the_source)
{
    kit_add_data((kit_data){"expr_rows", 1, expr_rows, 6, 0, 0, 0});
    /* The schema gets a field w the source leaves null.  Keep odd v (3,
     * 11, 9 stay; 4, 10, -6 go), then w = v * 10, then v = w + 1: the
     * computes run in key order, the second sees the first's result.
     * Per key: a: 31 + 91 = 122 over 2 rows; b: 111. */
    tdm_job *job = key_job("filter", "v % 2 <> 0");
    tdm_node *s = tdm_job_node(job, "src");
    KIT_SET(s, "schema", KIT_SCHEMA ", w:int64");
    KIT_SET(s, "compute.w", "v * 10");
    KIT_SET(s, "compute.v", "w + 1");
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=2 total=122 [0,10000) on_time#0 +",
               "k=b n=1 total=111 [0,10000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_FILTERED), 3);
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_RECORDS_IN), 6);
    tdm_job_destroy(job);
}

static int keep_small(void *ud, const tdm_row *row)
{
    (void)ud;
    return tdm_row_int(row, 2) < 50;
}

TDM_TEST(expressions_run_before_user_functions)
{
    kit_add_data((kit_data){"expr_rows", 1, expr_rows, 6, 0, 0, 0});
    /* compute makes v * 10; the C filter then keeps v < 50, so it sees
     * the computed values: 30, 40, -60 stay (3, 4, -6 read), 100, 110,
     * 90 go.  a: 30 + 40 = 70; c: -60. */
    tdm_job *job = key_job("compute.v", "v * 10");
    ASSERT_OK(tdm_node_add_filter(tdm_job_node(job, "src"), keep_small, NULL));
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=2 total=70 [0,10000) on_time#0 +",
               "k=c n=1 total=-60 [0,10000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_FILTERED), 3);
    tdm_job_destroy(job);
}

TDM_TEST(a_null_result_makes_the_field_null)
{
    kit_add_data((kit_data){"expr_rows", 1, expr_rows, 6, 0, 0, 0});
    /* 100 / (v - 4) divides by zero for v = 4: that row's v is null, so
     * sum(v) leaves it out but count() counts it.  a: 100/-1 + null +
     * 100/5 = -100 + 20 = -80 over 3 rows; b: 100/6 + 100/7 = 16 + 14 =
     * 30; c: 100 / -10 = -10. */
    tdm_job *job = key_job("compute.v", "100 / (v - 4)");
    kit_run_ok(job);
    KIT_EXPECT("out", "k=a n=3 total=-80 [0,10000) on_time#0 +",
               "k=b n=2 total=30 [0,10000) on_time#0 +",
               "k=c n=1 total=-10 [0,10000) on_time#0 +");
    ASSERT_EQ(tdm_job_stat(job, TDM_STAT_FILTERED), 0);
    tdm_job_destroy(job);
}
