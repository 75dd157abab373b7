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
 *   nd = null (double), ns = null (string). */
#define SCHEMA                                                                 \
    "i:int64, j:int64, big:int64, min:int64, d:double, s:string, "             \
    "b:bool, t:timestamp, n:int64, nd:double, ns:string, my-field:int64"

typedef struct fixture {
    tdm__schema schema;
    tdm__batch *batch;
    tdm__row *row;
} fixture;

static fixture fx;

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
    tdm__expr_eval(e, fx.row, &v);
    *type = tdm__expr_result_type(e);
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
        if (tdm__expr_true(e, fx.row) != cases[k].keep)
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
                       "my-field)");
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
            "source \"src\": compute.k: field \"k\" is string; compute "
            "assigns only to int64, double or timestamp fields");
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
