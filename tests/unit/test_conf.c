/* SPDX-License-Identifier: MIT */
/* test_conf.c - the configuration table: parsing of every value type,
 * the messages for bad values (they name the key and what was expected),
 * tdm_conf_describe, and the validation of a job graph (references,
 * required keys, fields against schemas, window and join parameters). */
#include <string.h>

#include "conf_kit.h"
#include "harness.h"
#include "runtime/rt.h"

/* Parses @p text for key @p key of @p scope; returns the error. */
static tdm_err parse(tdm__scope scope, const char *key, const char *text,
                     tdm__conf_val *v, char *msg, size_t n)
{
    int row = tdm__conf_find(scope, key);
    ASSERT_TRUE(row >= 0);
    return tdm__conf_parse(row, text, false, v, msg, n);
}

static int64_t dur(const char *text)
{
    int64_t ms = -12345;
    ASSERT_TRUE(tdm__conf_duration(text, &ms));
    return ms;
}

static bool dur_bad(const char *text)
{
    int64_t ms;
    return !tdm__conf_duration(text, &ms);
}

/* Units by hand: 1 s = 1000 ms, 1 m = 60 000, 1 h = 3 600 000,
 * 1 d = 86 400 000; a bare number is milliseconds. */
TDM_TEST(durations_parse_units_and_compounds)
{
    ASSERT_EQ(dur("250ms"), 250);
    ASSERT_EQ(dur("5s"), 5000);
    ASSERT_EQ(dur("1m"), 60000);
    ASSERT_EQ(dur("2h"), 7200000);
    ASSERT_EQ(dur("1d"), 86400000);
    ASSERT_EQ(dur("1500"), 1500);
    ASSERT_EQ(dur(" 30s "), 30000);
    ASSERT_EQ(dur("1m30s"), 90000);
    ASSERT_EQ(dur("1.5s"), 1500);
    ASSERT_EQ(dur("-5s"), -5000);
    ASSERT_EQ(dur("0"), 0);
    ASSERT_EQ(dur("5 s"), 5000);
}

TDM_TEST(durations_reject_garbage_and_overflow)
{
    ASSERT_TRUE(dur_bad("5 parsecs"));
    ASSERT_TRUE(dur_bad(""));
    ASSERT_TRUE(dur_bad("s"));
    ASSERT_TRUE(dur_bad("5x"));
    ASSERT_TRUE(dur_bad("1m30"));    /* a bare number only alone */
    ASSERT_TRUE(dur_bad("1.0005s")); /* not whole milliseconds */
    ASSERT_TRUE(dur_bad("99999999999999999999"));
    ASSERT_TRUE(dur_bad("9999999999999999d")); /* overflows int64 ms */
    ASSERT_TRUE(dur_bad("5seconds"));
}

TDM_TEST(duration_format_picks_largest_exact_unit)
{
    char b[32];
    tdm__conf_format_duration(90000, b, sizeof b);
    ASSERT_STR_EQ(b, "90s");
    tdm__conf_format_duration(7200000, b, sizeof b);
    ASSERT_STR_EQ(b, "2h");
    tdm__conf_format_duration(1, b, sizeof b);
    ASSERT_STR_EQ(b, "1ms");
    tdm__conf_format_duration(0, b, sizeof b);
    ASSERT_STR_EQ(b, "0ms");
}

/* The example message of the brief, verbatim. */
TDM_TEST(bad_duration_message_names_key_and_expectation)
{
    tdm__conf_val v = {0};
    char msg[256];
    ASSERT_ERR(parse(TDM__SCOPE_WINDOW, "window.size", "5 parsecs", &v, msg,
                     sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "window.size: expected a duration like \"5s\" or "
                       "\"200ms\", got \"5 parsecs\"");
    /* window.size has min 1 ms. */
    ASSERT_ERR(
        parse(TDM__SCOPE_WINDOW, "window.size", "0", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "window.size: expected a duration of at least 1ms, "
                       "got \"0\"");
    ASSERT_OK(
        parse(TDM__SCOPE_WINDOW, "window.size", "10s", &v, msg, sizeof msg));
    ASSERT_EQ(v.i, 10000);
    ASSERT_TRUE(v.set);
    tdm__conf_val_free(&v);
}

TDM_TEST(ints_doubles_bools_and_bounds)
{
    tdm__conf_val v = {0};
    char msg[256];
    ASSERT_OK(parse(TDM__SCOPE_JOB, "parallelism", "4", &v, msg, sizeof msg));
    ASSERT_EQ(v.i, 4);
    /* parallelism is 1..256 in the table. */
    ASSERT_ERR(parse(TDM__SCOPE_JOB, "parallelism", "0", &v, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "parallelism: expected an integer from 1 to 256, got "
                       "\"0\"");
    ASSERT_ERR(
        parse(TDM__SCOPE_JOB, "parallelism", "four", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "parallelism: expected an integer, got \"four\"");
    ASSERT_ERR(parse(TDM__SCOPE_JOB, "parallelism", "4x", &v, msg, sizeof msg),
               TDM_ERR_INVAL);
    /* The failed parses left the value as it was. */
    ASSERT_EQ(v.i, 4);
    ASSERT_OK(parse(TDM__SCOPE_SOURCE, "generator.skew", "1.25", &v, msg,
                    sizeof msg));
    ASSERT_DBL_EQ(v.d, 1.25);
    ASSERT_ERR(
        parse(TDM__SCOPE_SOURCE, "generator.skew", "11", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "generator.skew: expected a number from 0 to 10, got "
                       "\"11\"");
    ASSERT_ERR(
        parse(TDM__SCOPE_SOURCE, "generator.skew", "nan", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    static const char *const yes[] = {"true", "yes", "1", "TRUE", "Yes"};
    static const char *const no[] = {"false", "no", "0", "False"};
    for (size_t i = 0; i < 5; i++) {
        ASSERT_OK(parse(TDM__SCOPE_SOURCE, "csv.header", yes[i], &v, msg,
                        sizeof msg));
        ASSERT_EQ(v.i, 1);
    }
    for (size_t i = 0; i < 4; i++) {
        ASSERT_OK(
            parse(TDM__SCOPE_SOURCE, "csv.header", no[i], &v, msg, sizeof msg));
        ASSERT_EQ(v.i, 0);
    }
    ASSERT_ERR(
        parse(TDM__SCOPE_SOURCE, "csv.header", "maybe", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "csv.header: expected true or false (or yes/no, 1/0), "
                       "got \"maybe\"");
    tdm__conf_val_free(&v);
}

TDM_TEST(enums_take_choice_index_and_list_choices)
{
    tdm__conf_val v = {0};
    char msg[256];
    /* tumbling|sliding|session|global|cumulate: session is index 2,
     * cumulate 4. */
    ASSERT_OK(parse(TDM__SCOPE_WINDOW, "window.type", "session", &v, msg,
                    sizeof msg));
    ASSERT_EQ(v.i, 2);
    ASSERT_OK(parse(TDM__SCOPE_WINDOW, "window.type", "cumulate", &v, msg,
                    sizeof msg));
    ASSERT_EQ(v.i, 4);
    ASSERT_ERR(
        parse(TDM__SCOPE_WINDOW, "window.type", "tumblin", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "window.type: expected one of tumbling, sliding, "
                       "session, global, cumulate, got \"tumblin\"");
    tdm__conf_val_free(&v);
}

TDM_TEST(aggregates_parse_with_default_names)
{
    tdm__conf_val v = {0};
    char msg[256];
    ASSERT_OK(parse(TDM__SCOPE_WINDOW, "aggregates",
                    "count() as clicks, sum(amount), "
                    "count_distinct( user ) as uv, last(page)",
                    &v, msg, sizeof msg));
    ASSERT_EQ(v.n_aggs, 4);
    ASSERT_EQ(v.aggs[0].fn, TDM__FN_COUNT);
    ASSERT_TRUE(v.aggs[0].field == NULL);
    ASSERT_STR_EQ(v.aggs[0].as, "clicks");
    ASSERT_EQ(v.aggs[1].fn, TDM__FN_SUM);
    ASSERT_STR_EQ(v.aggs[1].field, "amount");
    ASSERT_STR_EQ(v.aggs[1].as, "sum_amount");
    ASSERT_EQ(v.aggs[2].fn, TDM__FN_COUNT_DISTINCT);
    ASSERT_STR_EQ(v.aggs[2].field, "user");
    ASSERT_STR_EQ(v.aggs[2].as, "uv");
    ASSERT_STR_EQ(v.aggs[3].as, "last_page");
    /* The table's default. */
    ASSERT_OK(
        parse(TDM__SCOPE_WINDOW, "aggregates", "count()", &v, msg, sizeof msg));
    ASSERT_EQ(v.n_aggs, 1);
    ASSERT_STR_EQ(v.aggs[0].as, "count");
    tdm__conf_val_free(&v);
}

TDM_TEST(aggregate_errors_name_the_problem)
{
    tdm__conf_val v = {0};
    char msg[256];
    ASSERT_ERR(parse(TDM__SCOPE_WINDOW, "aggregates", "median(x)", &v, msg,
                     sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "aggregates: unknown aggregate function "
                            "\"median\"") == msg);
    ASSERT_ERR(
        parse(TDM__SCOPE_WINDOW, "aggregates", "sum()", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "aggregates: sum needs a field, e.g. "
                       "\"sum(amount)\"");
    ASSERT_ERR(
        parse(TDM__SCOPE_WINDOW, "aggregates", "count(x)", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "count takes no field") != NULL);
    ASSERT_ERR(parse(TDM__SCOPE_WINDOW, "aggregates",
                     "count() as n, sum(x) as n", &v, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "two aggregates are named \"n\"") != NULL);
    ASSERT_ERR(parse(TDM__SCOPE_WINDOW, "aggregates", "sum(x) total", &v, msg,
                     sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_ERR(parse(TDM__SCOPE_WINDOW, "aggregates", "", &v, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_ERR(
        parse(TDM__SCOPE_WINDOW, "aggregates", "sum(x", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_EQ(v.n_aggs, 0);
}

TDM_TEST(fields_schema_and_delimiter)
{
    tdm__conf_val v = {0};
    char msg[256];
    ASSERT_OK(parse(TDM__SCOPE_WINDOW, "key_by", " page , user", &v, msg,
                    sizeof msg));
    ASSERT_EQ(v.n_fields, 2);
    ASSERT_STR_EQ(v.fields[0], "page");
    ASSERT_STR_EQ(v.fields[1], "user");
    ASSERT_ERR(parse(TDM__SCOPE_WINDOW, "key_by", "a,,b", &v, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_ERR(parse(TDM__SCOPE_WINDOW, "key_by", "a, a", &v, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "key_by: \"a\" is listed twice");
    ASSERT_OK(parse(TDM__SCOPE_SOURCE, "schema",
                    "user:string, ts:timestamp, n:int64", &v, msg, sizeof msg));
    ASSERT_EQ(v.schema.n, 3);
    ASSERT_EQ(v.schema.fields[1].type, TDM_TYPE_TIMESTAMP);
    ASSERT_ERR(
        parse(TDM__SCOPE_SOURCE, "schema", "user:strong", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strncmp(msg, "schema: ", 8) == 0);
    ASSERT_OK(
        parse(TDM__SCOPE_SOURCE, "csv.delimiter", ";", &v, msg, sizeof msg));
    ASSERT_OK(
        parse(TDM__SCOPE_SOURCE, "csv.delimiter", "\\t", &v, msg, sizeof msg));
    ASSERT_STR_EQ(v.text, "\t");
    ASSERT_ERR(
        parse(TDM__SCOPE_SOURCE, "csv.delimiter", ";;", &v, msg, sizeof msg),
        TDM_ERR_INVAL);
    tdm__conf_val_free(&v);
}

/* Every row of the table is describable, and every default parses
 * (the job and node constructors depend on it). */
TDM_TEST(describe_exposes_the_whole_table)
{
    int n;
    const tdm__conf_row *rows = tdm__conf_rows(&n);
    ASSERT_TRUE(n > 50);
    const char *scope, *key, *type, *def, *unit, *choices, *desc;
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(tdm_conf_describe(i, &scope, &key, &type, &def, &unit,
                                    &choices, &desc),
                  1);
        ASSERT_STR_EQ(key, rows[i].key);
        ASSERT_TRUE(desc && *desc);
        tdm__conf_val v = {0};
        ASSERT_OK(tdm__conf_parse(i, def, true, &v, NULL, 0));
        tdm__conf_val_free(&v);
    }
    ASSERT_EQ(tdm_conf_describe(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
              0);
    ASSERT_EQ(tdm_conf_describe(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
              0);
    int w = tdm__conf_find(TDM__SCOPE_WINDOW, "window.size");
    ASSERT_EQ(
        tdm_conf_describe(w, &scope, &key, &type, &def, &unit, &choices, NULL),
        1);
    ASSERT_STR_EQ(scope, "window");
    ASSERT_STR_EQ(type, "duration");
    ASSERT_STR_EQ(unit, "ms");
}

/* ---- Jobs: set and validate ---- */

/* A valid job: file source -> tumbling count -> stdout. */
static tdm_job *base_job(void)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = add(job, TDM_NODE_SOURCE, "clicks");
    set(s, "path", "/nonexistent/clicks.jsonl");
    set(s, "schema", "user:string, page:string, ts:int64, amount:double");
    set(s, "timestamp.field", "ts");
    tdm_node *w = add(job, TDM_NODE_WINDOW, "counts");
    set(w, "from", "clicks");
    set(w, "key_by", "page");
    set(w, "window.size", "10s");
    set(w, "sink", "out");
    add(job, TDM_NODE_SINK, "out");
    return job;
}

static void expect_invalid(tdm_job *job, const char *want)
{
    char msg[512];
    ASSERT_ERR(tdm_job_validate(job, msg, sizeof msg), TDM_ERR_INVAL);
    if (strcmp(msg, want) != 0)
        tdm_test_fail(__FILE__, __LINE__, "message \"%s\", want \"%s\"", msg,
                      want);
}

TDM_TEST(job_keys_and_node_names)
{
    tdm_job *job = base_job();
    char msg[256];
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    ASSERT_OK(tdm_job_set(job, "parallelism", "2", msg, sizeof msg));
    ASSERT_ERR(tdm_job_set(job, "paralelism", "2", msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "paralelism: unknown job key") == msg);
    ASSERT_ERR(
        tdm_node_set(tdm_job_node(job, "counts"), "path", "x", msg, sizeof msg),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "path: unknown window key") == msg);
    tdm_node *n;
    ASSERT_ERR(tdm_job_add_node(job, TDM_NODE_SINK, "out", &n, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "duplicate node name \"out\"");
    ASSERT_ERR(tdm_job_add_node(job, TDM_NODE_SINK, "", &n, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm_job_add_node(job, TDM_NODE_SINK, "a.b", &n, msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_TRUE(tdm_job_node(job, "clicks") != NULL);
    ASSERT_TRUE(tdm_job_node(job, "nope") == NULL);
    ASSERT_EQ(tdm_node_field_index(tdm_job_node(job, "clicks"), "ts"), 2);
    ASSERT_EQ(tdm_node_field_index(tdm_job_node(job, "clicks"), "zz"), -1);
    ASSERT_EQ(tdm_node_field_index(tdm_job_node(job, "counts"), "ts"), -1);
    tdm_job_destroy(job);
}

TDM_TEST(validation_names_node_and_key_for_references)
{
    tdm_job *job = base_job();
    tdm_node *w = tdm_job_node(job, "counts");
    set(w, "from", "clickz");
    expect_invalid(job, "window \"counts\": from: unknown node \"clickz\" "
                        "(expected the name of a source, window or join)");
    set(w, "from", "out");
    expect_invalid(job, "window \"counts\": from: \"out\" is a sink, "
                        "expected a source, window or join");
    set(w, "from", "clicks");
    set(w, "sink", "nowhere");
    expect_invalid(job, "window \"counts\": sink: unknown node \"nowhere\" "
                        "(expected the name of a sink)");
    set(w, "sink", "out");
    set(w, "late_output", "clicks");
    expect_invalid(job, "window \"counts\": late_output: \"clicks\" is a "
                        "source, expected a sink");
    set(w, "late_output", "out");
    char msg[256];
    ASSERT_OK(tdm_job_set(job, "dead_letter", "nope", msg, sizeof msg));
    expect_invalid(job, "job: dead_letter: unknown node \"nope\" (expected "
                        "the name of a sink)");
    ASSERT_OK(tdm_job_set(job, "dead_letter", "out", msg, sizeof msg));
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    tdm_job_destroy(job);
}

TDM_TEST(validation_checks_fields_against_schemas)
{
    tdm_job *job = base_job();
    tdm_node *w = tdm_job_node(job, "counts");
    set(w, "key_by", "pag");
    expect_invalid(job, "window \"counts\": key_by: field \"pag\" is not in "
                        "the schema of source \"clicks\"");
    set(w, "key_by", "page");
    set(w, "aggregates", "sum(amout)");
    expect_invalid(job, "window \"counts\": aggregates: field \"amout\" is "
                        "not in the schema of source \"clicks\"");
    set(w, "aggregates", "sum(user)");
    expect_invalid(job, "window \"counts\": aggregates: sum(user) needs an "
                        "int64, double or decimal field, \"user\" is string");
    set(w, "aggregates", "sum(amount), count_distinct(user), first(user)");
    char msg[256];
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    tdm_node *s = tdm_job_node(job, "clicks");
    set(s, "timestamp.field", "time");
    expect_invalid(job, "source \"clicks\": timestamp.field: field \"time\" "
                        "is not in the schema of source \"clicks\"");
    set(s, "timestamp.field", "user");
    expect_invalid(job, "source \"clicks\": timestamp.field: \"user\" is "
                        "string, expected int64 or timestamp (or "
                        "timestamp.unit: iso8601)");
    set(s, "timestamp.unit", "iso8601");
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    tdm_job_destroy(job);
}

TDM_TEST(validation_checks_union_types)
{
    tdm_job *job = base_job();
    tdm_node *s2 = add(job, TDM_NODE_SOURCE, "more");
    set(s2, "path", "x");
    set(s2, "schema", "page:int64, ts:timestamp");
    set(s2, "timestamp.field", "ts");
    tdm_node *w = tdm_job_node(job, "counts");
    set(w, "from", "clicks, more");
    expect_invalid(job, "window \"counts\": key_by: field \"page\" is string "
                        "in \"clicks\" but int64 in \"more\"; a union needs "
                        "the same types");
    set(s2, "schema", "page:string, ts:timestamp");
    char msg[256];
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    ASSERT_ERR(tdm_node_set(w, "from", "clicks, clicks", msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "from: \"clicks\" is listed twice");
    tdm_job_destroy(job);
}

TDM_TEST(validation_checks_window_parameters)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = add(job, TDM_NODE_SOURCE, "src");
    set(s, "path", "x");
    set(s, "schema", "k:string, ts:int64");
    set(s, "timestamp.field", "ts");
    tdm_node *w = add(job, TDM_NODE_WINDOW, "w");
    set(w, "from", "src");
    set(w, "key_by", "k");
    set(w, "sink", "out");
    add(job, TDM_NODE_SINK, "out");
    expect_invalid(job, "window \"w\": window.size: required for tumbling "
                        "windows (e.g. \"10s\")");
    set(w, "window.size", "10s");
    set(w, "window.offset", "10s");
    expect_invalid(job, "window \"w\": window.offset: must be smaller than "
                        "window.size in magnitude (got 10000 ms for a size "
                        "of 10000 ms)");
    set(w, "window.offset", "-2s");
    char msg[256];
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    set(w, "window.type", "sliding");
    expect_invalid(job, "window \"w\": window.slide: required for sliding "
                        "windows");
    set(w, "window.slide", "5s");
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    set(w, "window.type", "session");
    expect_invalid(job, "window \"w\": window.gap: required for session "
                        "windows");
    set(w, "window.gap", "1m");
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    set(w, "window.type", "global");
    expect_invalid(job, "window \"w\": trigger: a global window never fires "
                        "with the default trigger; choose count, "
                        "processing_time or continuous_event_time");
    set(w, "trigger", "count");
    expect_invalid(job, "window \"w\": trigger.count: required for the count "
                        "trigger");
    set(w, "trigger.count", "100");
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    /* Processing-time sources cannot feed event-time windows. */
    set(w, "window.type", "tumbling");
    set(s, "time", "processing");
    expect_invalid(job, "window \"w\": window.time: event-time windows need "
                        "watermarks, but source \"src\" uses time: "
                        "processing (set window.time: processing)");
    set(w, "window.time", "processing");
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    tdm_job_destroy(job);
}

TDM_TEST(validation_checks_joins_and_sources)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *o = add(job, TDM_NODE_SOURCE, "orders");
    set(o, "path", "o");
    set(o, "schema", "id:int64, ts:int64");
    set(o, "timestamp.field", "ts");
    tdm_node *p = add(job, TDM_NODE_SOURCE, "payments");
    set(p, "path", "p");
    set(p, "schema", "order:string, ts:int64");
    set(p, "timestamp.field", "ts");
    tdm_node *j = add(job, TDM_NODE_JOIN, "j");
    set(j, "left", "orders");
    set(j, "right", "payments");
    set(j, "left_key", "id");
    set(j, "right_key", "order");
    set(j, "sink", "out");
    add(job, TDM_NODE_SINK, "out");
    expect_invalid(job, "join \"j\": right_key: \"order\" is string but left "
                        "key \"id\" is int64");
    set(p, "schema", "order:int64, ts:int64");
    set(j, "lower", "5s");
    set(j, "upper", "1s");
    expect_invalid(job, "join \"j\": lower/upper: the interval [5000, 1000] "
                        "ms (after exclusive bounds) is empty; lower must "
                        "not exceed upper");
    set(j, "lower", "0");
    set(j, "upper", "0");
    set(j, "upper_inclusive", "false");
    expect_invalid(job, "join \"j\": lower/upper: the interval [0, -1] ms "
                        "(after exclusive bounds) is empty; lower must not "
                        "exceed upper");
    set(j, "upper", "1h");
    char msg[256];
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    set(j, "type", "window");
    expect_invalid(job, "join \"j\": window.size: required for a window "
                        "join");
    set(j, "window.size", "1m");
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    /* An unread source, a punctuated source without marker. */
    tdm_node *x = add(job, TDM_NODE_SOURCE, "extra");
    set(x, "type", "generator");
    expect_invalid(job, "source \"extra\": not read by any window or join "
                        "(add it to a window's \"from\" or a join, or give "
                        "it a \"sink\")");
    /* A pass-through sink reads it; the sink must exist. */
    set(x, "sink", "nowhere");
    expect_invalid(job, "source \"extra\": sink: unknown node \"nowhere\" "
                        "(expected the name of a sink)");
    set(x, "sink", "");
    set(o, "watermark.strategy", "punctuated");
    set(x, "type", "file");
    expect_invalid(job, "source \"orders\": watermark.marker_field: required "
                        "for the punctuated strategy (a bool field)");
    tdm_job_destroy(job);
}

TDM_TEST(job_without_nodes_is_invalid)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    expect_invalid(job, "job: no sources: a job needs at least one");
    char msg[256];
    ASSERT_ERR(tdm_job_run(job, msg, sizeof msg), TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "job: no sources: a job needs at least one");
    tdm_job_destroy(job);
    tdm_job_destroy(NULL);
}

/* Two windows writing one sink in different output modes. */
TDM_TEST(validation_keeps_one_output_mode_per_sink)
{
    tdm_job *job = base_job();
    tdm_node *w2 = add(job, TDM_NODE_WINDOW, "totals");
    set(w2, "from", "clicks");
    set(w2, "window.size", "1m");
    set(w2, "sink", "out");
    char msg[256];
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    set(w2, "output_mode", "retract");
    expect_invalid(job, "window \"totals\": sink: \"out\" also takes append "
                        "results from window \"counts\"; a sink takes one "
                        "output mode (give this one its own sink)");
    tdm_job_destroy(job);
}
