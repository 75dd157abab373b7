/* SPDX-License-Identifier: MIT */
/* test_connect_json.c - JSON lines into rows (src/connect/json.c) and the
 * row batches they land in (src/runtime/row.c): field types, missing and
 * null fields, every malformed-input kind with its exact reason, the
 * timestamp units, and agreement of the fast scanner with jansson.
 * Expected reasons are the wording documented in json.c and parse.c;
 * jansson's own texts were read from its documentation of the error
 * positions (the column is where the bad token ends). */
#include "harness.h"
#include "connect/conn.h"
#include "testhooks.h"

/* The schema of most tests: user:string, n:int64, d:double, ok:bool,
 * ts:timestamp (event time from ts, unit ms unless a test changes it). */
typedef struct fixture {
    tdm__schema schema;
    tdm__source_conf conf;
    tdm__batch *b;
    char reason[256];
} fixture;

static void setup(fixture *fx, const char *schema, const char *ts_field,
                  int unit)
{
    memset(fx, 0, sizeof *fx);
    ASSERT_OK(tdm__schema_parse(schema, &fx->schema, NULL, 0));
    fx->conf.name = "test";
    fx->conf.format = TDM__FMT_JSON;
    fx->conf.schema = &fx->schema;
    fx->conf.partition_field = -1;
    fx->conf.time_mode = TDM__TIME_EVENT;
    fx->conf.ts_field = tdm__schema_find(&fx->schema, ts_field);
    fx->conf.ts_unit = unit;
    fx->b = tdm__batch_new(&fx->schema, 64);
    ASSERT_TRUE(fx->b != NULL);
}

static void teardown(fixture *fx)
{
    tdm__batch_destroy(fx->b);
    tdm__schema_free(&fx->schema);
}

#define STD_SCHEMA "user:string, n:int64, d:double, ok:bool, ts:timestamp"

/* Parses @p line and expects success; returns the row. */
static tdm__row *parse_ok(fixture *fx, const char *line, int line_no)
{
    tdm_err err = tdm__json_parse_line(&fx->conf, line, strlen(line), fx->b,
                                       fx->reason, sizeof fx->reason);
    if (err != TDM_OK)
        tdm_test_fail(__FILE__, line_no, "%s: %s (%s)", line, tdm_err_name(err),
                      fx->reason);
    return &fx->b->rows[fx->b->n - 1];
}

/* Parses @p line and expects TDM_ERR_PARSE with exactly @p reason; the
 * row is dropped as the sources do. */
static void parse_bad(fixture *fx, const char *line, size_t len,
                      const char *reason, int line_no)
{
    size_t n0 = fx->b->n;
    tdm_err err = tdm__json_parse_line(&fx->conf, line, len, fx->b, fx->reason,
                                       sizeof fx->reason);
    if (err != TDM_ERR_PARSE)
        tdm_test_fail(__FILE__, line_no, "%s: got %s, want a parse error", line,
                      tdm_err_name(err));
    if (strcmp(fx->reason, reason) != 0)
        tdm_test_fail(__FILE__, line_no, "reason \"%s\", want \"%s\"",
                      fx->reason, reason);
    tdm__batch_drop_last(fx->b);
    ASSERT_EQ(fx->b->n, n0);
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

TDM_TEST(json_all_types)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    tdm__row *r = OK(&fx, "{\"user\":\"alice\",\"n\":-12,\"d\":1.5,"
                          "\"ok\":true,\"ts\":1000}");
    ASSERT_VSTR(&r->v[0], "alice");
    ASSERT_EQ(r->v[1].u.i, -12);
    ASSERT_DBL_EQ(r->v[2].u.d, 1.5);
    ASSERT_EQ(r->v[3].u.i, 1);
    ASSERT_EQ(r->v[4].u.i, 1000);
    ASSERT_EQ(r->ts, 1000);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(r->v[i].null, 0);
    /* Blanks around everything, members in any order, doubles take
     * integers, false. */
    r = OK(&fx, "  { \"ts\" : 5 , \"ok\" : false, \"d\" : 3 }  ");
    ASSERT_DBL_EQ(r->v[2].u.d, 3.0);
    ASSERT_EQ(r->v[3].u.i, 0);
    ASSERT_EQ(r->ts, 5);
    teardown(&fx);
}

TDM_TEST(json_missing_and_null_fields_are_null)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    tdm__row *r = OK(&fx, "{\"ts\":7,\"user\":null}");
    ASSERT_EQ(r->v[0].null, 1);
    ASSERT_EQ(r->v[1].null, 1);
    ASSERT_EQ(r->v[2].null, 1);
    ASSERT_EQ(r->v[3].null, 1);
    ASSERT_EQ(r->ts, 7);
    teardown(&fx);
}

TDM_TEST(json_missing_timestamp_in_event_time)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    BAD(&fx, "{\"user\":\"a\"}", "field 'ts' is missing");
    BAD(&fx, "{\"user\":\"a\",\"ts\":null}", "field 'ts' is missing");
    BAD(&fx, "{}", "field 'ts' is missing");
    /* Ingestion time needs no timestamp field: ts stays "none". */
    fx.conf.time_mode = TDM__TIME_INGESTION;
    tdm__row *r = OK(&fx, "{\"user\":\"a\"}");
    ASSERT_EQ(r->ts, TDM_TIME_MIN);
    teardown(&fx);
}

TDM_TEST(json_extra_fields_ignored_even_nested)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    tdm__row *r = OK(&fx, "{\"user\":\"a\",\"extra\":\"x\",\"ts\":1,"
                          "\"ctx\":{\"deep\":[1,{\"x\":null}]},\"z\":1e5}");
    ASSERT_VSTR(&r->v[0], "a");
    ASSERT_EQ(r->ts, 1);
    teardown(&fx);
}

TDM_TEST(json_wrong_types_name_the_field)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    BAD(&fx, "{\"n\":\"12\",\"ts\":1}",
        "field 'n': expected an integer, got \"12\"");
    BAD(&fx, "{\"n\":1.5,\"ts\":1}", "field 'n': expected an integer, got 1.5");
    BAD(&fx, "{\"n\":true,\"ts\":1}",
        "field 'n': expected an integer, got true");
    BAD(&fx, "{\"d\":\"x\",\"ts\":1}",
        "field 'd': expected a number, got \"x\"");
    BAD(&fx, "{\"ok\":1,\"ts\":1}",
        "field 'ok': expected true or false, got 1");
    BAD(&fx, "{\"ok\":\"true\",\"ts\":1}",
        "field 'ok': expected true or false, got \"true\"");
    BAD(&fx, "{\"user\":5,\"ts\":1}", "field 'user': expected a string, got 5");
    BAD(&fx, "{\"ts\":\"1000\"}",
        "field 'ts': expected a timestamp in ms, got \"1000\"");
    /* The first bad field in schema order is the one named. */
    BAD(&fx, "{\"ts\":1,\"d\":\"x\",\"user\":5}",
        "field 'user': expected a string, got 5");
    teardown(&fx);
}

TDM_TEST(json_nested_values_for_scalar_fields)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    BAD(&fx, "{\"user\":{\"a\":1},\"ts\":1}",
        "field 'user': expected a string, got an object");
    BAD(&fx, "{\"n\":[1],\"ts\":1}",
        "field 'n': expected an integer, got an array");
    teardown(&fx);
}

TDM_TEST(json_huge_numbers)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    BAD(&fx, "{\"n\":99999999999999999999,\"ts\":1}",
        "field 'n': integer out of range, got 99999999999999999999");
    BAD(&fx, "{\"n\":-9223372036854775809,\"ts\":1}",
        "field 'n': integer out of range, got -9223372036854775809");
    BAD(&fx, "{\"d\":1e999,\"ts\":1}",
        "field 'd': number out of range, got "
        "1e999");
    /* jansson refuses such a literal anywhere: a member outside the
     * schema makes the line invalid too, and is named. */
    BAD(&fx, "{\"ts\":1,\"other\":123456789012345678901234567890}",
        "field 'other': integer out of range, got "
        "123456789012345678901234567890");
    /* The int64 limits themselves are fine. */
    tdm__row *r = OK(&fx, "{\"n\":-9223372036854775808,\"ts\":1}");
    ASSERT_EQ(r->v[1].u.i, INT64_MIN);
    r = OK(&fx, "{\"n\":9223372036854775807,\"ts\":1}");
    ASSERT_EQ(r->v[1].u.i, INT64_MAX);
    teardown(&fx);
}

TDM_TEST(json_invalid_syntax_uses_jansson_reason)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    /* A truncated line: jansson stops at the end (column 12). */
    BAD(&fx, "{\"user\":\"a\",",
        "invalid JSON: string or '}' expected near end of file (column 12)");
    BAD(&fx, "{\"ts\":1} x",
        "invalid JSON: end of file expected near 'x' (column 10)");
    BAD(&fx, "garbage",
        "invalid JSON: invalid token near 'garbage' "
        "(column 7)");
    BAD(&fx, "{\"ts\":01}", "invalid JSON: invalid token near '0' (column 7)");
    BAD(&fx, "[1,2]", "expected a JSON object, got an array");
    BAD(&fx, "42", "expected a JSON object, got a number");
    BAD(&fx, "\"s\"", "expected a JSON object, got a string");
    teardown(&fx);
}

TDM_TEST(json_empty_lines)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    BAD(&fx, "", "empty line");
    BAD(&fx, "   \t \r", "empty line");
    teardown(&fx);
}

TDM_TEST(json_binary_garbage)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    parse_bad(&fx, "\0\1abc", 5, "binary data: NUL byte at column 1", __LINE__);
    BAD(&fx, "\xff\xfe{}", "binary data: invalid UTF-8 byte 0xff at column 1");
    BAD(&fx, "{\"user\":\"a\x01\",\"ts\":1}",
        "binary data: control byte 0x01 at column 11");
    /* Overlong encoding of '/' and a UTF-16 surrogate are not UTF-8. */
    BAD(&fx, "{\"user\":\"\xc0\xaf\",\"ts\":1}",
        "binary data: invalid UTF-8 byte 0xc0 at column 10");
    BAD(&fx, "{\"user\":\"\xed\xa0\x80\",\"ts\":1}",
        "binary data: invalid UTF-8 byte 0xed at column 10");
    /* A sequence cut by the end of the line. */
    BAD(&fx, "{\"ts\":1}\xe2\x82",
        "binary data: invalid UTF-8 byte 0xe2 at "
        "column 9");
    teardown(&fx);
}

TDM_TEST(json_unicode_and_escapes)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    tdm__row *r =
        OK(&fx, "{\"user\":\"zo\xc3\xab \xf0\x9f\x8c\x8a\",\"ts\":1}");
    ASSERT_VSTR(&r->v[0], "zo\xc3\xab \xf0\x9f\x8c\x8a");
    r = OK(&fx, "{\"user\":\"a\\\"b\\u00e9\\n\",\"ts\":1}");
    ASSERT_VSTR(&r->v[0], "a\"b\xc3\xa9\n");
    /* \u0000 is refused by jansson. */
    BAD(&fx, "{\"user\":\"\\u0000\",\"ts\":1}",
        "invalid JSON: \\u0000 is not allowed without JSON_ALLOW_NUL near "
        "'\"\\u0000\"' (column 16)");
    teardown(&fx);
}

TDM_TEST(json_repeated_members_last_wins)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    tdm__row *r = OK(&fx, "{\"n\":1,\"n\":2,\"ts\":1}");
    ASSERT_EQ(r->v[1].u.i, 2);
    r = OK(&fx, "{\"n\":\"x\",\"n\":3,\"ts\":1}");
    ASSERT_EQ(r->v[1].u.i, 3);
    teardown(&fx);
}

/* Every line that names a member twice is counted once in the batch,
 * wherever the repeat is (a schema field, an ignored member, a nested
 * object); a line without one, or one that is not JSON, is not. */
TDM_TEST(json_repeated_members_counted)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    OK(&fx, "{\"n\":1,\"ts\":1,\"x\":1,\"y\":2}");
    ASSERT_EQ(fx.b->n_dup_keys, 0);
    OK(&fx, "{\"n\":1,\"n\":2,\"n\":3,\"ts\":1}");
    ASSERT_EQ(fx.b->n_dup_keys, 1);
    tdm__row *r = OK(&fx, "{\"n\":4,\"x\":1,\"ts\":1,\"x\":2}");
    ASSERT_EQ(r->v[1].u.i, 4);
    ASSERT_EQ(fx.b->n_dup_keys, 2);
    OK(&fx, "{\"n\":5,\"o\":{\"a\":1,\"a\":2},\"ts\":1}");
    ASSERT_EQ(fx.b->n_dup_keys, 3);
    BAD(&fx, "{\"n\":1,\"n\":2,\"ts\":1",
        "invalid JSON: '}' expected near end of file (column 19)");
    ASSERT_EQ(fx.b->n_dup_keys, 3);
    tdm__batch_clear(fx.b);
    ASSERT_EQ(fx.b->n_dup_keys, 0);
    teardown(&fx);
}

/* A row's note (row.h, keep_after) is found wherever the batch moves
 * the row, goes with a dropped row, and is freed by a clear. */
TDM_TEST(batch_notes_follow_their_rows)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    ASSERT_EQ(fx.b->keep_after, TDM_TIME_MAX);
    fx.b->keep_after = 100;
    tdm__row *r = OK(&fx, "{\"ts\":1}");
    ASSERT_TRUE(!tdm__batch_wants(fx.b, r));
    r = OK(&fx, "{\"ts\":101}");
    ASSERT_TRUE(tdm__batch_wants(fx.b, r));
    ASSERT_OK(tdm__batch_keep(fx.b, "f:2", "{\"ts\":101}", 10));
    ASSERT_EQ(tdm__batch_keep(fx.b, "f:2", "again", 5), TDM_ERR_INVAL);
    r = OK(&fx, "{\"ts\":102}");
    ASSERT_OK(tdm__batch_keep(fx.b, "f:3", "{\"ts\":102}", 10));
    tdm__batch_drop_last(fx.b);
    ASSERT_EQ(fx.b->n_kept, 1);
    r = OK(&fx, "{\"ts\":103}");
    ASSERT_OK(tdm__batch_keep(fx.b, "f:4", "x", 1));
    /* Rows 0 and 2 swap, as drop_replayed moves rows. */
    tdm__row tmp = fx.b->rows[0];
    fx.b->rows[0] = fx.b->rows[2];
    fx.b->rows[2] = tmp;
    const tdm__kept *k = tdm__batch_kept(fx.b, &fx.b->rows[0]);
    ASSERT_TRUE(k != NULL);
    ASSERT_STR_EQ(k->location, "f:4");
    ASSERT_EQ(k->raw_len, 1);
    k = tdm__batch_kept(fx.b, &fx.b->rows[1]);
    ASSERT_TRUE(k != NULL);
    ASSERT_STR_EQ(k->location, "f:2");
    ASSERT_TRUE(memcmp(k->raw, "{\"ts\":101}", 10) == 0);
    ASSERT_TRUE(tdm__batch_kept(fx.b, &fx.b->rows[2]) == NULL);
    tdm__batch_clear(fx.b);
    ASSERT_EQ(fx.b->n_kept, 0);
    ASSERT_EQ(fx.b->keep_after, TDM_TIME_MAX);
    teardown(&fx);
}

TDM_TEST(json_timestamp_units)
{
    fixture fx;
    tdm__row *r;

    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_S);
    r = OK(&fx, "{\"ts\":1733133600}");
    ASSERT_EQ(r->ts, INT64_C(1733133600000));
    ASSERT_EQ(r->v[4].u.i, INT64_C(1733133600000));
    r = OK(&fx, "{\"ts\":1733133600.5}");
    ASSERT_EQ(r->ts, INT64_C(1733133600500));
    BAD(&fx, "{\"ts\":9223372036854775807}",
        "field 'ts': timestamp out of range, got 9223372036854775807 "
        "(unit s)");
    fx.conf.ts_unit = TDM__UNIT_NS;
    r = OK(&fx, "{\"ts\":1733133600123456789}");
    ASSERT_EQ(r->ts, INT64_C(1733133600123));
    fx.conf.ts_unit = TDM__UNIT_ISO8601;
    r = OK(&fx, "{\"ts\":\"2026-12-02T10:00:00.250Z\"}");
    ASSERT_EQ(r->ts, INT64_C(1796205600250));
    BAD(&fx, "{\"ts\":5}",
        "field 'ts': expected ISO-8601 text like "
        "\"2026-12-02T10:00:00Z\", got 5");
    BAD(&fx, "{\"ts\":\"2026-13-01T00:00:00Z\"}",
        "field 'ts': expected ISO-8601 text like \"2026-12-02T10:00:00Z\", "
        "got \"2026-13-01T00:00:00Z\"");
    teardown(&fx);
}

TDM_TEST(json_timestamp_field_of_other_types)
{
    fixture fx;
    tdm__row *r;

    /* An int64 field keeps its raw value; the row's time uses the unit. */
    setup(&fx, "user:string, t:int64", "t", TDM__UNIT_S);
    r = OK(&fx, "{\"t\":1733133600}");
    ASSERT_EQ(r->v[1].u.i, 1733133600);
    ASSERT_EQ(r->ts, INT64_C(1733133600000));
    BAD(&fx, "{\"t\":9223372036854775807}",
        "field 't': timestamp out of range, got 9223372036854775807 "
        "(unit s)");
    teardown(&fx);
    /* A string field with ISO text. */
    setup(&fx, "t:string", "t", TDM__UNIT_ISO8601);
    r = OK(&fx, "{\"t\":\"1970-01-01T00:00:01Z\"}");
    ASSERT_EQ(r->ts, 1000);
    BAD(&fx, "{\"t\":\"soon\"}",
        "field 't': expected ISO-8601 text like \"2026-12-02T10:00:00Z\", "
        "got \"soon\"");
    teardown(&fx);
    /* A double field in seconds. */
    setup(&fx, "t:double", "t", TDM__UNIT_S);
    r = OK(&fx, "{\"t\":2.5}");
    ASSERT_EQ(r->ts, 2500);
    teardown(&fx);
}

TDM_TEST(json_batch_full_and_arena_growth)
{
    fixture fx;
    char line[600], name[512];

    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    /* 64 rows of 500-byte names: 32000 bytes, beyond the 4096-byte first
     * arena; earlier rows must keep their text when it moves. */
    for (int i = 0; i < 64; i++) {
        memset(name, 'a' + i % 26, 500);
        name[500] = '\0';
        snprintf(line, sizeof line, "{\"user\":\"%s\",\"ts\":%d}", name, i);
        OK(&fx, line);
    }
    for (int i = 0; i < 64; i++) {
        memset(name, 'a' + i % 26, 500);
        name[500] = '\0';
        ASSERT_VSTR(&fx.b->rows[i].v[0], name);
        ASSERT_EQ(fx.b->rows[i].ts, i);
    }
    ASSERT_ERR(tdm__json_parse_line(&fx.conf, "{\"ts\":1}", 8, fx.b, fx.reason,
                                    sizeof fx.reason),
               TDM_ERR_RANGE);
    ASSERT_EQ(fx.b->n, 64);
    teardown(&fx);
}

/* Compares the rows two paths made of the same line. */
static void same_row(const tdm__row *a, const tdm__row *b, int n)
{
    ASSERT_EQ(a->ts, b->ts);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(a->v[i].null, b->v[i].null);
        if (a->v[i].null)
            continue;
        tdm_type t = a->schema->fields[i].type;
        if (t == TDM_TYPE_STRING) {
            ASSERT_EQ(a->v[i].u.s.len, b->v[i].u.s.len);
            ASSERT_TRUE(memcmp(a->v[i].u.s.p, b->v[i].u.s.p, a->v[i].u.s.len) ==
                        0);
        } else if (t == TDM_TYPE_DOUBLE) {
            ASSERT_DBL_EQ(a->v[i].u.d, b->v[i].u.d);
        } else {
            ASSERT_EQ(a->v[i].u.i, b->v[i].u.i);
        }
    }
}

TDM_TEST(json_fast_path_agrees_with_jansson)
{
    static const char *lines[] = {
        "{\"user\":\"alice\",\"n\":-12,\"d\":1.5,\"ok\":true,\"ts\":1000}",
        "{\"ts\":0,\"d\":-0.0,\"n\":0}",
        "{\"ts\":1,\"d\":1e-320}",
        "{\"ts\":1,\"d\":123456789.123456789e-3}",
        "{\"ts\":1,\"d\":-9223372036854775808}",
        "{\"ts\":1,\"user\":\"\xc3\xa9t\xc3\xa9\"}",
        "{\"ts\":1,\"user\":\"\"}",
        "{\"ts\":1,\"ok\":null,\"n\":null}",
        "{\"ts\":1,\"skip\":[1,2]}",
        "{\"ts\":1,\"user\":\"a\\tb\"}",
        "{\"ts\":1,\"n\":1,\"n\":2}",
        "{\"ts\":1}  ",
        "{\"ts\":1,}",
        "{\"ts\":1 \"n\":2}",
        "{\"ts\":tru}",
        "{\"ts\":1,\"n\":-}",
        "{\"ts\":1,\"n\":2.}",
        "{\"ts\":1,\"n\":.5}",
        "{\"ts\":1,\"n\":+5}",
        "{\"ts\":-1}",
        "{ }",
        "{",
        "}",
    };
    fixture a, b;
    setup(&a, STD_SCHEMA, "ts", TDM__UNIT_MS);
    setup(&b, STD_SCHEMA, "ts", TDM__UNIT_MS);
    int fast_taken = 0;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *l = lines[i];
        tdm_err ea =
            tdm__json_parse_line_mode(&a.conf, l, strlen(l), a.b, a.reason,
                                      sizeof a.reason, TDM__JSON_FAST);
        tdm_err eb =
            tdm__json_parse_line_mode(&b.conf, l, strlen(l), b.b, b.reason,
                                      sizeof b.reason, TDM__JSON_JANSSON);
        if (ea == TDM_ERR_UNSUPPORTED)
            continue;
        fast_taken++;
        if (ea != eb)
            tdm_test_fail(__FILE__, __LINE__, "%s: fast %s, jansson %s", l,
                          tdm_err_name(ea), tdm_err_name(eb));
        if (ea == TDM_OK)
            same_row(&a.b->rows[a.b->n - 1], &b.b->rows[b.b->n - 1], 5);
        tdm__batch_clear(a.b);
        tdm__batch_clear(b.b);
    }
    /* The plain lines must take the fast path: the 1st, 2nd, 4th to 8th,
     * 12th and 20th (the 3rd underflows, which only jansson judges). */
    ASSERT_EQ(fast_taken, 9);
    teardown(&a);
    teardown(&b);
}

/* A stream's lines parsed with one layout hint (as the file source
 * does) give exactly what jansson gives line by line: the same return
 * code, row or reason, whatever the previous line's layout was - the
 * same order, members moved, unknown members, a key written with an
 * escape, keys that are a prefix or an extension of a field name,
 * repeated members, more members than the hint remembers, missing and
 * mistyped fields. */
TDM_TEST(json_layout_hint_changes_nothing)
{
    static const char *const lines[] = {
        "{\"user\":\"a\",\"n\":1,\"d\":1.5,\"ok\":true,\"ts\":10}",
        "{\"user\":\"b\",\"n\":2,\"d\":2.5,\"ok\":false,\"ts\":11}",
        "{\"ts\":12,\"user\":\"c\",\"n\":3}",
        "{\"ts\":13,\"x\":[1],\"user\":\"c\",\"n\":3}",
        "{\"user\":\"d\",\"x\":5,\"n\":4,\"ts\":14}",
        "{\"us\\u0065r\":\"e\",\"n\":5,\"ts\":15}",
        "{\"use\":\"x\",\"user\":\"f\",\"ts\":16}",
        "{\"users\":\"y\",\"ts\":17,\"user\":\"g\"}",
        "{\"user\":\"h\",\"user\":\"i\",\"ts\":18}",
        "{\"a0\":0,\"a1\":1,\"a2\":2,\"a3\":3,\"a4\":4,\"a5\":5,\"a6\":6,"
        "\"a7\":7,\"a8\":8,\"a9\":9,\"a10\":0,\"a11\":1,\"a12\":2,"
        "\"a13\":3,\"a14\":4,\"a15\":5,\"a16\":6,\"user\":\"j\",\"ts\":19}",
        "{\"user\":\"k\"}",
        "{\"user\":1,\"ts\":20}",
        "{\"user\" : \"l\" , \"n\" : 6 , \"ts\" : 21 }",
        "{\"user\":\"m\",\"n\":7,\"d\":3.5,\"ok\":true,\"ts\":22}",
        "{\"user\":\"n\",\"n\":8,\"d\":4.5,\"ok\":true,\"ts\":23}",
        "{\"user\":\"o\",\"n\":9,\"d\":5.5,\"ok\":true,\"ts\":24} x",
    };
    fixture a, b;
    setup(&a, STD_SCHEMA, "ts", TDM__UNIT_MS);
    setup(&b, STD_SCHEMA, "ts", TDM__UNIT_MS);
    tdm__json_hint hint = {{0}};
    int ok = 0;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *l = lines[i];
        tdm_err ea = tdm__json_parse_line_hint(&a.conf, &hint, l, strlen(l),
                                               a.b, a.reason, sizeof a.reason);
        tdm_err eb =
            tdm__json_parse_line_mode(&b.conf, l, strlen(l), b.b, b.reason,
                                      sizeof b.reason, TDM__JSON_JANSSON);
        if (ea != eb)
            tdm_test_fail(__FILE__, __LINE__, "%s: hinted %s, jansson %s", l,
                          tdm_err_name(ea), tdm_err_name(eb));
        if (ea == TDM_OK) {
            same_row(&a.b->rows[a.b->n - 1], &b.b->rows[b.b->n - 1], 5);
            ok++;
        } else {
            ASSERT_STR_EQ(a.reason, b.reason);
            tdm__batch_drop_last(a.b);
            tdm__batch_drop_last(b.b);
        }
    }
    /* All but the missing ts, the mistyped user and the trailing x. */
    ASSERT_EQ(ok, 13);
    /* The repeated member: the last one counts, as in jansson. */
    ASSERT_EQ(a.b->rows[8].v[0].u.s.len, 1);
    ASSERT_EQ(a.b->rows[8].v[0].u.s.p[0], 'i');
    /* The hint learned the last good layout: user n d ok ts. */
    ASSERT_EQ(hint.field[0], 1);
    ASSERT_EQ(hint.field[4], 5);
    teardown(&a);
    teardown(&b);
}

TDM_TEST(json_fast_path_declines_what_it_cannot_decide)
{
    fixture fx;
    setup(&fx, STD_SCHEMA, "ts", TDM__UNIT_MS);
    const char *declined[] = {
        "{\"user\":\"a\\\"b\",\"ts\":1}", /* escape */
        "{\"x\":{},\"ts\":1}",            /* nested */
        "{\"n\":1,\"n\":2,\"ts\":1}",     /* repeated schema member */
        "{\"n\":\"x\",\"ts\":1}",         /* a type error */
        "{\"n\":1}",                      /* no timestamp */
        "{\"n\":99999999999999999999,\"ts\":1}",
    };
    for (size_t i = 0; i < sizeof declined / sizeof declined[0]; i++) {
        const char *l = declined[i];
        ASSERT_ERR(tdm__json_parse_line_mode(&fx.conf, l, strlen(l), fx.b,
                                             fx.reason, sizeof fx.reason,
                                             TDM__JSON_FAST),
                   TDM_ERR_UNSUPPORTED);
        ASSERT_EQ(fx.b->n, 0);
        ASSERT_EQ(fx.b->arena_used, 0);
    }
    teardown(&fx);
}

TDM_TEST(schema_parse_and_errors)
{
    tdm__schema s;
    char err[200];
    ASSERT_OK(tdm__schema_parse(" a:int64 ,b : string,c:timestamp", &s, err,
                                sizeof err));
    ASSERT_EQ(s.n, 3);
    ASSERT_STR_EQ(s.fields[1].name, "b");
    ASSERT_EQ(s.fields[1].type, TDM_TYPE_STRING);
    ASSERT_EQ(tdm__schema_find(&s, "c"), 2);
    ASSERT_EQ(tdm__schema_find(&s, "zz"), -1);
    tdm__schema_free(&s);
    ASSERT_ERR(tdm__schema_parse("a:int64, b:float", &s, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(err, "schema: field 'b' has unknown type \"float\" "
                       "(expected int64, double, string, bool, timestamp "
                       "or decimal(p,s))");
    ASSERT_EQ(s.n, 0);
    ASSERT_ERR(tdm__schema_parse("a:int64, a:string", &s, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(err, "schema: field 'a' is declared twice");
    ASSERT_ERR(tdm__schema_parse("a:int64,,b:bool", &s, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(err, "schema: entry 2 is empty (expected \"name:type\")");
    ASSERT_ERR(tdm__schema_parse("user", &s, err, sizeof err), TDM_ERR_INVAL);
    ASSERT_STR_EQ(err, "schema: entry 1 \"user\" has no type (expected "
                       "\"name:type\")");
    ASSERT_ERR(tdm__schema_parse("  ", &s, err, sizeof err), TDM_ERR_INVAL);
    ASSERT_ERR(tdm__schema_parse("a b:int64", &s, err, sizeof err),
               TDM_ERR_INVAL);
}

TDM_TEST(schema_and_batch_out_of_memory)
{
    tdm__schema s;
    /* Every allocation point of the schema parser fails cleanly. */
    for (long k = 1; k <= 4; k++) {
        tdm__alloc_fail_after(k);
        tdm_err err = tdm__schema_parse("a:int64, b:string", &s, NULL, 0);
        tdm__alloc_fail_after(0);
        if (err == TDM_OK)
            tdm__schema_free(&s);
        else
            ASSERT_ERR(err, TDM_ERR_NOMEM);
    }
    ASSERT_OK(tdm__schema_parse("a:int64, b:string", &s, NULL, 0));
    for (long k = 1; k <= 4; k++) {
        tdm__alloc_fail_after(k);
        tdm__batch *b = tdm__batch_new(&s, 8);
        tdm__alloc_fail_after(0);
        tdm__batch_destroy(b);
    }
    /* A string that needs a bigger arena when the arena cannot grow. */
    tdm__batch *b = tdm__batch_new(&s, 8);
    ASSERT_TRUE(b != NULL);
    tdm__row *r = tdm__batch_add(b);
    char big[5000];
    memset(big, 'x', sizeof big);
    tdm__alloc_fail_after(1);
    ASSERT_ERR(tdm__batch_set_string(b, r, 1, big, sizeof big), TDM_ERR_NOMEM);
    tdm__alloc_fail_after(0);
    ASSERT_EQ(r->v[1].null, 1);
    ASSERT_OK(tdm__batch_set_string(b, r, 1, big, sizeof big));
    ASSERT_EQ(r->v[1].u.s.len, sizeof big);
    /* A string copied from the batch's own arena survives the move. */
    tdm__row *r2 = tdm__batch_add(b);
    ASSERT_OK(tdm__batch_set_string(b, r2, 1, r->v[1].u.s.p, 5000));
    ASSERT_TRUE(memcmp(r2->v[1].u.s.p, big, 5000) == 0);
    tdm__batch_drop_last(b);
    ASSERT_EQ(b->arena_used, 5000);
    tdm__batch_clear(b);
    ASSERT_EQ(b->n, 0);
    tdm__batch_destroy(b);
    tdm__schema_free(&s);
}
