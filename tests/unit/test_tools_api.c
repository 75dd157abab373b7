/* SPDX-License-Identifier: MIT */
/* test_tools_api.c - the public tools API of tidemark.h ("Tools: reading
 * a source's input without running the job"), through tidemark.h only:
 * durations, timestamp units and text, the schema check and field types,
 * window starts, the source scan (records, partitions, partition ends in
 * batch order, bad lines, arrival times, keys, errors) and dead-letter
 * files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tidemark.h"

/* ---- Small helpers ---- */

TDM_TEST(duration_parse_and_format)
{
    tdm_time_ms ms = 0;
    char buf[32];
    ASSERT_OK(tdm_duration_parse("1m30s", &ms));
    ASSERT_EQ(ms, 90000);
    ASSERT_OK(tdm_duration_parse("250ms", &ms));
    ASSERT_EQ(ms, 250);
    ASSERT_OK(tdm_duration_parse("-2h", &ms));
    ASSERT_EQ(ms, -7200000);
    ASSERT_OK(tdm_duration_parse("42", &ms));
    ASSERT_EQ(ms, 42);
    ASSERT_ERR(tdm_duration_parse("5 parsecs", &ms), TDM_ERR_PARSE);
    ASSERT_ERR(tdm_duration_parse(NULL, &ms), TDM_ERR_INVAL);
    tdm_duration_format(90000, buf, sizeof buf);
    ASSERT_STR_EQ(buf, "90s");
    tdm_duration_format(7200000, buf, sizeof buf);
    ASSERT_STR_EQ(buf, "2h");
    tdm_duration_format(0, buf, sizeof buf);
    ASSERT_STR_EQ(buf, "0ms");
    tdm_duration_format(TDM_TIME_MAX, buf, sizeof buf);
    ASSERT_STR_EQ(buf, "forever");
    tdm_duration_format(1500, buf, 3);
    ASSERT_STR_EQ(buf, "15");
    /* Every finite result reads back. */
    ASSERT_OK(tdm_duration_parse("86400000", &ms));
    tdm_duration_format(ms, buf, sizeof buf);
    ASSERT_STR_EQ(buf, "1d");
    ASSERT_OK(tdm_duration_parse(buf, &ms));
    ASSERT_EQ(ms, 86400000);
}

TDM_TEST(time_parse_units)
{
    tdm_time_ms t = 0;
    ASSERT_STR_EQ(tdm_ts_unit_name(TDM_TS_UNIT_MS), "ms");
    ASSERT_STR_EQ(tdm_ts_unit_name(TDM_TS_UNIT_ISO8601), "iso8601");
    ASSERT_STR_EQ(tdm_ts_unit_name((tdm_ts_unit)99), "?");
    ASSERT_OK(tdm_time_parse("1767225600", 10, TDM_TS_UNIT_S, &t));
    ASSERT_EQ(t, INT64_C(1767225600000));
    ASSERT_OK(tdm_time_parse(" 1.5 ", 5, TDM_TS_UNIT_S, &t));
    ASSERT_EQ(t, 1500);
    const char *iso = "2026-01-01T00:00:00.250Zjunk";
    ASSERT_OK(tdm_time_parse(iso, 24, TDM_TS_UNIT_ISO8601, &t));
    ASSERT_EQ(t, INT64_C(1767225600250));
    ASSERT_ERR(tdm_time_parse("soon", 4, TDM_TS_UNIT_ISO8601, &t),
               TDM_ERR_PARSE);
    ASSERT_ERR(tdm_time_parse("1", 1, (tdm_ts_unit)0, &t), TDM_ERR_INVAL);
    ASSERT_ERR(tdm_time_parse("99999999999999999", 17, TDM_TS_UNIT_S, &t),
               TDM_ERR_RANGE);
}

TDM_TEST(schema_check_and_field_types)
{
    char msg[200] = "x";
    ASSERT_OK(
        tdm_schema_check("ts:timestamp, k:string, n:int64", msg, sizeof msg));
    ASSERT_STR_EQ(msg, "");
    ASSERT_ERR(tdm_schema_check("ts:nope", msg, sizeof msg), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "nope") != NULL);
    ASSERT_ERR(tdm_schema_check(NULL, msg, sizeof msg), TDM_ERR_INVAL);

    tdm_job *job;
    tdm_node *src;
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_SOURCE, "s", &src, NULL, 0));
    ASSERT_EQ(tdm_node_field_type(src, 0), 0);
    ASSERT_OK(tdm_node_set(src, "schema", "ts:int64, ok:bool", NULL, 0));
    ASSERT_EQ(tdm_node_field_type(src, 0), TDM_TYPE_INT64);
    ASSERT_EQ(tdm_node_field_type(src, 1), TDM_TYPE_BOOL);
    ASSERT_EQ(tdm_node_field_type(src, 2), 0);
    ASSERT_EQ(tdm_node_field_type(src, -1), 0);
    ASSERT_EQ(tdm_node_field_type(NULL, 0), 0);
    tdm_job_destroy(job);
}

TDM_TEST(window_start_floors)
{
    ASSERT_EQ(tdm_window_start(12345, 0, 1000), 12000);
    ASSERT_EQ(tdm_window_start(-1, 0, 1000), -1000);
    ASSERT_EQ(tdm_window_start(12345, 500, 1000), 11500);
    ASSERT_EQ(tdm_window_start(12345, 0, 0), 12345);
    ASSERT_EQ(tdm_window_start(TDM_TIME_MIN + 1, 0, 1000), TDM_TIME_MIN);
    ASSERT_EQ(tdm_window_start(TDM_TIME_MAX, 0, 1000),
              TDM_TIME_MAX - TDM_TIME_MAX % 1000);
}

/* ---- Source scans ---- */

typedef struct bad_lines {
    int n;
    char last[256];
} bad_lines;

static void on_bad(void *opaque, const char *location, const char *reason,
                   const char *raw, size_t raw_len)
{
    bad_lines *b = opaque;
    (void)raw;
    (void)raw_len;
    b->n++;
    snprintf(b->last, sizeof b->last, "%s: %s", location, reason);
}

/* Writes @p text to a new file in @p dir; the path goes to @p path. */
static void write_file(const char *dir, const char *name, const char *text,
                       char *path, size_t n)
{
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs(text, f);
    ASSERT_TRUE(fclose(f) == 0);
}

/* A job with file source "s": @p schema, timestamp field ts, batch.size
 * @p batch, partition.field @p pf (NULL: by file). */
static tdm_job *scan_job(const char *schema, const char *batch, const char *pf)
{
    tdm_job *job;
    tdm_node *src;
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_OK(tdm_job_set(job, "batch.size", batch, NULL, 0));
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_SOURCE, "s", &src, NULL, 0));
    ASSERT_OK(tdm_node_set(src, "schema", schema, NULL, 0));
    ASSERT_OK(tdm_node_set(src, "timestamp.field", "ts", NULL, 0));
    if (pf)
        ASSERT_OK(tdm_node_set(src, "partition.field", pf, NULL, 0));
    return job;
}

TDM_TEST(source_scan_interleaves_files_by_batch)
{
    char dir[] = "/tmp/tdm_scan_XXXXXX", a[256], b[256];
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    write_file(dir, "a.jsonl",
               "{\"ts\":1}\n{\"ts\":2}\n{\"ts\":3}\nbad\n{\"ts\":4}\n", a,
               sizeof a);
    write_file(dir, "b.jsonl", "{\"ts\":10}\n", b, sizeof b);
    tdm_job *job = scan_job("ts:int64", "2", NULL);
    const char *paths[] = {a, b};
    bad_lines bad = {0, ""};
    tdm_source_scan *sc;
    ASSERT_OK(
        tdm_source_scan_new(job, "s", paths, 2, on_bad, &bad, &sc, NULL, 0));
    /* Poll 1: a1 a2 (full).  Poll 2 starts with b: b10, b ends, then a3
     * fills the batch; b's end follows the batch's rows.  Poll 3: a's bad
     * line, a4, a ends.  Then the end, again and again. */
    static const struct {
        tdm_scan_item item;
        int part;
        tdm_time_ms ts;
    } want[] = {{TDM_SCAN_RECORD, 0, 1},        {TDM_SCAN_RECORD, 0, 2},
                {TDM_SCAN_RECORD, 1, 10},       {TDM_SCAN_RECORD, 0, 3},
                {TDM_SCAN_PARTITION_END, 1, 0}, {TDM_SCAN_RECORD, 0, 4},
                {TDM_SCAN_PARTITION_END, 0, 0}, {TDM_SCAN_END, -1, 0},
                {TDM_SCAN_END, -1, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tdm_scan_item item;
        const tdm_row *row;
        int p;
        ASSERT_OK(tdm_source_scan_next(sc, &item, &row, &p));
        ASSERT_EQ(item, want[i].item);
        ASSERT_EQ(p, want[i].part);
        ASSERT_EQ(row != NULL, item == TDM_SCAN_RECORD);
        if (row)
            ASSERT_EQ(tdm_row_ts(row), want[i].ts);
    }
    ASSERT_EQ(bad.n, 1);
    ASSERT_TRUE(strstr(bad.last, "a.jsonl:4: ") != NULL);
    const char *name;
    size_t len;
    ASSERT_OK(tdm_source_scan_partition_name(sc, 1, &name, &len));
    ASSERT_EQ(len, strlen(b));
    ASSERT_TRUE(memcmp(name, b, len) == 0);
    ASSERT_ERR(tdm_source_scan_partition_name(sc, 2, &name, &len),
               TDM_ERR_RANGE);
    ASSERT_STR_EQ(tdm_source_scan_errmsg(sc), "");
    tdm_source_scan_destroy(sc);
    tdm_source_scan_destroy(NULL);
    tdm_job_destroy(job);
    unlink(a);
    unlink(b);
    rmdir(dir);
}

TDM_TEST(source_scan_fields_keys_and_partition_names)
{
    char dir[] = "/tmp/tdm_scan_XXXXXX", a[256];
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    write_file(dir, "a.jsonl",
               "{\"ts\":1,\"p\":\"x\",\"arr\":\"5\",\"k\":\"u\"}\n"
               "{\"ts\":2,\"p\":null,\"arr\":\"soon\",\"k\":\"v\"}\n"
               "{\"ts\":3,\"p\":\"x\",\"k\":\"u\"}\n",
               a, sizeof a);
    tdm_job *job =
        scan_job("ts:int64, p:string, arr:string, k:string", "1024", "p");
    const char *paths[] = {a};
    tdm_source_scan *sc;
    ASSERT_OK(
        tdm_source_scan_new(job, "s", paths, 1, NULL, NULL, &sc, NULL, 0));
    tdm_scan_item item;
    const tdm_row *rows[3];
    int parts[3];
    char keys[3][8];
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(tdm_source_scan_next(sc, &item, &rows[i], &parts[i]));
        ASSERT_EQ(item, TDM_SCAN_RECORD);
        int kf = 3;
        const char *k;
        size_t kl;
        ASSERT_OK(tdm_source_scan_key(sc, rows[i], &kf, 1, &k, &kl));
        ASSERT_TRUE(kl < sizeof keys[i]);
        memcpy(keys[i], k, kl);
        keys[i][kl] = '\0';
    }
    ASSERT_EQ(parts[0], 0);
    ASSERT_EQ(parts[1], 1);
    ASSERT_EQ(parts[2], 0);
    ASSERT_STR_EQ(keys[0], keys[2]);
    ASSERT_TRUE(strcmp(keys[0], keys[1]) != 0);
    /* Rows of one batch stay valid until the next poll. */
    tdm_time_ms t;
    ASSERT_OK(tdm_source_scan_field_time(sc, rows[0], 2, &t));
    ASSERT_EQ(t, 5);
    ASSERT_ERR(tdm_source_scan_field_time(sc, rows[1], 2, &t), TDM_ERR_PARSE);
    ASSERT_ERR(tdm_source_scan_field_time(sc, rows[2], 2, &t),
               TDM_ERR_NO_TIMESTAMP);
    ASSERT_ERR(tdm_source_scan_field_time(sc, rows[0], 9, &t), TDM_ERR_INVAL);
    int bad_field = 7;
    const char *k;
    size_t kl;
    ASSERT_ERR(tdm_source_scan_key(sc, rows[0], &bad_field, 1, &k, &kl),
               TDM_ERR_INVAL);
    const char *name;
    size_t len;
    ASSERT_OK(tdm_source_scan_partition_name(sc, 0, &name, &len));
    ASSERT_TRUE(len == 1 && name[0] == 'x');
    ASSERT_OK(tdm_source_scan_partition_name(sc, 1, &name, &len));
    ASSERT_TRUE(len == 4 && memcmp(name, "null", 4) == 0);
    /* By field: no partition ends, only the end. */
    ASSERT_OK(tdm_source_scan_next(sc, &item, &rows[0], &parts[0]));
    ASSERT_EQ(item, TDM_SCAN_END);
    tdm_source_scan_destroy(sc);
    tdm_job_destroy(job);
    unlink(a);
    rmdir(dir);
}

TDM_TEST(source_scan_refuses)
{
    char msg[256];
    tdm_source_scan *sc = (tdm_source_scan *)1;
    tdm_job *job = scan_job("ts:int64", "16", NULL);
    const char *none[] = {"/nonexistent-tdm-scan/x.jsonl"};
    ASSERT_ERR(tdm_source_scan_new(job, "s", none, 1, NULL, NULL, &sc, msg,
                                   sizeof msg),
               TDM_ERR_IO);
    ASSERT_TRUE(sc == NULL);
    ASSERT_TRUE(strstr(msg, "cannot open '/nonexistent-tdm-scan/x.jsonl'") ==
                msg);
    ASSERT_ERR(tdm_source_scan_new(job, "nope", none, 1, NULL, NULL, &sc, msg,
                                   sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm_source_scan_new(job, "s", none, 0, NULL, NULL, &sc, msg,
                                   sizeof msg),
               TDM_ERR_INVAL);
    tdm_node *gen;
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_SOURCE, "g", &gen, NULL, 0));
    ASSERT_OK(tdm_node_set(gen, "type", "generator", NULL, 0));
    ASSERT_ERR(tdm_source_scan_new(job, "g", none, 1, NULL, NULL, &sc, msg,
                                   sizeof msg),
               TDM_ERR_UNSUPPORTED);
    tdm_node *nots;
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_SOURCE, "n", &nots, NULL, 0));
    ASSERT_OK(tdm_node_set(nots, "schema", "x:int64", NULL, 0));
    ASSERT_ERR(tdm_source_scan_new(job, "n", none, 1, NULL, NULL, &sc, msg,
                                   sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "timestamp.field") != NULL);
    tdm_job_destroy(job);
}

/* ---- Dead-letter files ---- */

TDM_TEST(dead_letters_write_json_lines)
{
    char dir[] = "/tmp/tdm_dl_XXXXXX", path[256], msg[256] = "";
    ASSERT_TRUE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/dl.jsonl", dir);
    tdm_dead_letters *dl;
    ASSERT_OK(tdm_dead_letters_open(path, &dl, msg, sizeof msg));
    ASSERT_OK(tdm_dead_letters_write(dl, "in.jsonl:3",
                                     "field 'ts' is "
                                     "missing",
                                     "{\"a\":1}", 7));
    ASSERT_OK(tdm_dead_letters_close(dl, msg, sizeof msg));
    ASSERT_OK(tdm_dead_letters_close(NULL, msg, sizeof msg));
    FILE *f = fopen(path, "r");
    ASSERT_TRUE(f != NULL);
    char line[512];
    ASSERT_TRUE(fgets(line, sizeof line, f) != NULL);
    fclose(f);
    ASSERT_STR_EQ(line, "{\"location\":\"in.jsonl:3\",\"reason\":\"field "
                        "'ts' is missing\",\"raw\":\"{\\\"a\\\":1}\"}\n");
    /* A path below a regular file cannot be created. */
    char below[300];
    snprintf(below, sizeof below, "%s/dl.jsonl", path);
    msg[0] = '\0';
    ASSERT_ERR(tdm_dead_letters_open(below, &dl, msg, sizeof msg), TDM_ERR_IO);
    ASSERT_TRUE(msg[0] != '\0');
    unlink(path);
    rmdir(dir);
}
