/* SPDX-License-Identifier: MIT */
/* test_connect_csv.c - CSV lines into rows (src/connect/csv.c): header
 * mapping, quoting, delimiters, CRLF, empty and quoted-empty values, and
 * every malformed-input kind with its exact reason (the wording of
 * csv.c / parse.c, shared with the JSON parser). */
#include "harness.h"
#include "connect/conn.h"

typedef struct fixture {
    tdm__schema schema;
    tdm__source_conf conf;
    tdm__batch *b;
    int *cols;
    int n_cols;
    char reason[256];
} fixture;

#define STD_SCHEMA "user:string, n:int64, d:double, ok:bool, ts:timestamp"

/* Sets up the schema and, when @p header is not NULL, the column map
 * from that header line; else columns in schema order. */
static void setup(fixture *fx, const char *header, int unit)
{
    memset(fx, 0, sizeof *fx);
    ASSERT_OK(tdm__schema_parse(STD_SCHEMA, &fx->schema, NULL, 0));
    fx->conf.name = "test";
    fx->conf.format = TDM__FMT_CSV;
    fx->conf.csv_header = header != NULL;
    fx->conf.csv_delimiter = ',';
    fx->conf.schema = &fx->schema;
    fx->conf.partition_field = -1;
    fx->conf.time_mode = TDM__TIME_EVENT;
    fx->conf.ts_field = 4;
    fx->conf.ts_unit = unit;
    fx->b = tdm__batch_new(&fx->schema, 16);
    ASSERT_TRUE(fx->b != NULL);
    if (header) {
        ASSERT_OK(tdm__csv_header(&fx->conf, header, strlen(header), &fx->cols,
                                  &fx->n_cols, fx->reason, sizeof fx->reason));
    } else {
        fx->n_cols = 5;
        fx->cols = tdm__malloc(5 * sizeof(int));
        for (int i = 0; i < 5; i++)
            fx->cols[i] = i;
    }
}

static void teardown(fixture *fx)
{
    tdm__free(fx->cols);
    tdm__batch_destroy(fx->b);
    tdm__schema_free(&fx->schema);
}

static tdm__row *parse_ok(fixture *fx, const char *line, int line_no)
{
    tdm_err err =
        tdm__csv_parse_line(&fx->conf, fx->cols, fx->n_cols, line, strlen(line),
                            fx->b, fx->reason, sizeof fx->reason);
    if (err != TDM_OK)
        tdm_test_fail(__FILE__, line_no, "%s: %s (%s)", line, tdm_err_name(err),
                      fx->reason);
    return &fx->b->rows[fx->b->n - 1];
}

static void parse_bad(fixture *fx, const char *line, size_t len,
                      const char *reason, int line_no)
{
    tdm_err err =
        tdm__csv_parse_line(&fx->conf, fx->cols, fx->n_cols, line, len, fx->b,
                            fx->reason, sizeof fx->reason);
    if (err != TDM_ERR_PARSE)
        tdm_test_fail(__FILE__, line_no, "%s: got %s, want a parse error", line,
                      tdm_err_name(err));
    if (strcmp(fx->reason, reason) != 0)
        tdm_test_fail(__FILE__, line_no, "reason \"%s\", want \"%s\"",
                      fx->reason, reason);
    tdm__batch_drop_last(fx->b);
}

#define OK(fx, line) parse_ok(fx, line, __LINE__)
#define BAD(fx, line, reason)                                                  \
    parse_bad(fx, line, strlen(line), reason, __LINE__)

static void assert_str(const tdm__val *v, const char *s, int line_no)
{
    if (v->null || v->u.s.len != strlen(s) || memcmp(v->u.s.p, s, v->u.s.len))
        tdm_test_fail(__FILE__, line_no,
                      "string \"%.*s\" (null %d), want "
                      "\"%s\"",
                      (int)v->u.s.len, v->null ? "" : v->u.s.p, v->null, s);
}
#define ASSERT_VSTR(v, s) assert_str(v, s, __LINE__)

TDM_TEST(csv_schema_order_all_types)
{
    fixture fx;
    setup(&fx, NULL, TDM__UNIT_MS);
    tdm__row *r = OK(&fx, "alice,-12,1.5,true,1000");
    ASSERT_VSTR(&r->v[0], "alice");
    ASSERT_EQ(r->v[1].u.i, -12);
    ASSERT_DBL_EQ(r->v[2].u.d, 1.5);
    ASSERT_EQ(r->v[3].u.i, 1);
    ASSERT_EQ(r->ts, 1000);
    /* Blanks around non-strings are ignored; strings keep them. */
    r = OK(&fx, " bob , 7 , 2e3 , FALSE , 5 ");
    ASSERT_VSTR(&r->v[0], " bob ");
    ASSERT_EQ(r->v[1].u.i, 7);
    ASSERT_DBL_EQ(r->v[2].u.d, 2000.0);
    ASSERT_EQ(r->v[3].u.i, 0);
    r = OK(&fx, "x,0,0,1,5");
    ASSERT_EQ(r->v[3].u.i, 1);
    teardown(&fx);
}

TDM_TEST(csv_header_maps_columns)
{
    fixture fx;
    /* Columns in another order, one not in the schema, n and d absent. */
    setup(&fx, "ts,extra,user,ok", TDM__UNIT_MS);
    ASSERT_EQ(fx.n_cols, 4);
    ASSERT_EQ(fx.cols[0], 4);
    ASSERT_EQ(fx.cols[1], -1);
    ASSERT_EQ(fx.cols[2], 0);
    ASSERT_EQ(fx.cols[3], 3);
    tdm__row *r = OK(&fx, "42,whatever,carol,true");
    ASSERT_EQ(r->ts, 42);
    ASSERT_VSTR(&r->v[0], "carol");
    ASSERT_EQ(r->v[1].null, 1);
    ASSERT_EQ(r->v[2].null, 1);
    teardown(&fx);
    /* Quoted and padded names, CRLF. */
    setup(&fx, "\"user\", ts \r", TDM__UNIT_MS);
    ASSERT_EQ(fx.cols[0], 0);
    ASSERT_EQ(fx.cols[1], 4);
    teardown(&fx);
}

TDM_TEST(csv_header_errors)
{
    fixture fx;
    int *cols;
    int n;
    setup(&fx, NULL, TDM__UNIT_MS);
    ASSERT_ERR(tdm__csv_header(&fx.conf, "user,ts,user", 12, &cols, &n,
                               fx.reason, sizeof fx.reason),
               TDM_ERR_PARSE);
    ASSERT_STR_EQ(fx.reason, "CSV header: column 'user' appears twice "
                             "(columns 1 and 3)");
    ASSERT_TRUE(cols == NULL);
    ASSERT_ERR(tdm__csv_header(&fx.conf, "\"user,ts", 8, &cols, &n, fx.reason,
                               sizeof fx.reason),
               TDM_ERR_PARSE);
    ASSERT_STR_EQ(fx.reason, "column 1: quoted field has no closing quote");
    ASSERT_ERR(tdm__csv_header(&fx.conf, "", 0, &cols, &n, fx.reason,
                               sizeof fx.reason),
               TDM_ERR_PARSE);
    ASSERT_STR_EQ(fx.reason, "empty header line");
    teardown(&fx);
}

TDM_TEST(csv_quoting)
{
    fixture fx;
    setup(&fx, NULL, TDM__UNIT_MS);
    tdm__row *r = OK(&fx, "\"a,b\",1,2,true,3");
    ASSERT_VSTR(&r->v[0], "a,b");
    r = OK(&fx, "\"say \"\"hi\"\"\",1,2,true,3");
    ASSERT_VSTR(&r->v[0], "say \"hi\"");
    r = OK(&fx, "\"\"\"\",1,2,true,3");
    ASSERT_VSTR(&r->v[0], "\"");
    /* Quoted numbers are fine. */
    r = OK(&fx, "x,\"5\",\"2.5\",\"true\",\"3\"");
    ASSERT_EQ(r->v[1].u.i, 5);
    ASSERT_EQ(r->ts, 3);
    /* A quote inside an unquoted field is literal. */
    r = OK(&fx, "it\"s,1,2,true,3");
    ASSERT_VSTR(&r->v[0], "it\"s");
    teardown(&fx);
}

TDM_TEST(csv_empty_values_are_null_quoted_empty_is_empty_string)
{
    fixture fx;
    setup(&fx, NULL, TDM__UNIT_MS);
    tdm__row *r = OK(&fx, ",,,,9");
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(r->v[i].null, 1);
    r = OK(&fx, "\"\",\"\",,,9");
    ASSERT_VSTR(&r->v[0], "");
    ASSERT_EQ(r->v[1].null, 1);
    BAD(&fx, "a,1,2,true,", "field 'ts' is missing");
    teardown(&fx);
}

TDM_TEST(csv_delimiters_and_crlf)
{
    fixture fx;
    setup(&fx, NULL, TDM__UNIT_MS);
    fx.conf.csv_delimiter = ';';
    tdm__row *r = OK(&fx, "a,b;1;2.5;true;3\r");
    ASSERT_VSTR(&r->v[0], "a,b");
    ASSERT_EQ(r->ts, 3);
    BAD(&fx, "a;1;2.5;true;3;4", "expected 5 columns, got 6");
    fx.conf.csv_delimiter = '\t';
    r = OK(&fx, "x y\t1\t2\tfalse\t4");
    ASSERT_VSTR(&r->v[0], "x y");
    ASSERT_EQ(r->ts, 4);
    teardown(&fx);
}

TDM_TEST(csv_malformed_lines)
{
    fixture fx;
    setup(&fx, NULL, TDM__UNIT_MS);
    BAD(&fx, "a,1,2,true", "expected 5 columns, got 4");
    BAD(&fx, "a,1,2,true,3,4", "expected 5 columns, got 6");
    BAD(&fx, "\"abc,1,2,true,3",
        "column 1: quoted field has no closing "
        "quote");
    BAD(&fx, "a,\"1\"x,2,true,3",
        "column 2: unexpected text after the "
        "closing quote");
    BAD(&fx, "", "empty line");
    BAD(&fx, " \t\r", "empty line");
    teardown(&fx);
}

TDM_TEST(csv_wrong_types_name_the_column)
{
    fixture fx;
    setup(&fx, NULL, TDM__UNIT_MS);
    BAD(&fx, "a,abc,2,true,3", "field 'n': expected an integer, got \"abc\"");
    BAD(&fx, "a,1.5,2,true,3", "field 'n': expected an integer, got \"1.5\"");
    BAD(&fx, "a,1,x,true,3", "field 'd': expected a number, got \"x\"");
    BAD(&fx, "a,1,inf,true,3", "field 'd': expected a number, got \"inf\"");
    BAD(&fx, "a,1,2,yes,3",
        "field 'ok': expected true or false, got "
        "\"yes\"");
    BAD(&fx, "a,1,2,true,soon",
        "field 'ts': expected a timestamp in ms, "
        "got \"soon\"");
    BAD(&fx, "a,\"1\"\"\",2,true,3",
        "field 'n': expected an integer, got "
        "\"1\\\"\"");
    teardown(&fx);
}

TDM_TEST(csv_huge_numbers)
{
    fixture fx;
    setup(&fx, NULL, TDM__UNIT_S);
    BAD(&fx, "a,99999999999999999999,2,true,3",
        "field 'n': integer out of range, got \"99999999999999999999\"");
    BAD(&fx, "a,1,1e999,true,3",
        "field 'd': number out of range, got \"1e999\"");
    BAD(&fx, "a,1,2,true,9223372036854775807",
        "field 'ts': timestamp out of range, got \"9223372036854775807\" "
        "(unit s)");
    tdm__row *r = OK(&fx, "a,-9223372036854775808,2,true,1733133600.25");
    ASSERT_EQ(r->v[1].u.i, INT64_MIN);
    ASSERT_EQ(r->ts, INT64_C(1733133600250));
    teardown(&fx);
}

TDM_TEST(csv_binary_garbage)
{
    fixture fx;
    setup(&fx, NULL, TDM__UNIT_MS);
    parse_bad(&fx, "a\0b,1,2,true,3", 14, "binary data: NUL byte at column 2",
              __LINE__);
    BAD(&fx, "\x89PNG\x1a,1,2,true,3",
        "binary data: invalid UTF-8 byte 0x89 at column 1");
    BAD(&fx, "a\x07,1,2,true,3", "binary data: control byte 0x07 at column 2");
    teardown(&fx);
}

TDM_TEST(csv_iso_timestamps)
{
    fixture fx;
    setup(&fx, "user,ts", TDM__UNIT_ISO8601);
    /* 2026-12-02T10:00:00Z = 1796205600000 (see test_connect_ts.c). */
    tdm__row *r = OK(&fx, "a,2026-12-02T10:00:00Z");
    ASSERT_EQ(r->ts, INT64_C(1796205600000));
    r = OK(&fx, "a,\"2026-12-02T11:00:00+01:00\"");
    ASSERT_EQ(r->ts, INT64_C(1796205600000));
    BAD(&fx, "a,2026-12-02",
        "field 'ts': expected ISO-8601 text like "
        "\"2026-12-02T10:00:00Z\", got \"2026-12-02\"");
    teardown(&fx);
}

TDM_TEST(csv_long_value_is_cut_in_the_reason)
{
    fixture fx;
    char line[300];
    setup(&fx, NULL, TDM__UNIT_MS);
    /* 100 'x' as n: the reason shows the first 40 and "...". */
    memset(line, 0, sizeof line);
    strcpy(line, "a,");
    memset(line + 2, 'x', 100);
    strcat(line, ",2,true,3");
    BAD(&fx, line,
        "field 'n': expected an integer, got "
        "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"...");
    teardown(&fx);
}
