/* SPDX-License-Identifier: MIT */
/* test_connect_sink.c - the text sink (src/connect/text_sink.c): the exact
 * JSON and CSV text of window results in the three output modes, late
 * records and dead letters (escaping of binary raw text), the key
 * "select" (chosen, ordered, renamed columns), the upsert
 * file written at close, stdout, write errors, and several threads
 * writing at once.  Expected lines are written out by hand from the
 * format documented in text_sink.c. */
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "harness.h"
#include "connect/conn.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/tdm-sink-XXXXXX");
    ASSERT_TRUE(mkdtemp(dir) != NULL);
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

/* Reads a whole file into a static buffer ("" if it does not exist). */
static const char *slurp(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "rb");
    size_t n = 0;
    buf[0] = '\0';
    if (!f)
        return buf;
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static tdm__sinkobj *open_file(const char *name, int format, int mode,
                               char *path, size_t path_size)
{
    tdm__sink_conf c = {0};
    tdm__sinkobj *s = NULL;
    char err[256];
    snprintf(path, path_size, "%s/%s", dir, name);
    c.name = "out";
    c.type = TDM__SINK_FILE;
    c.path = path;
    c.format = format;
    tdm_err e = tdm__text_sink.open(&c, mode, &s, err, sizeof err);
    if (e != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "open: %s", err);
    return s;
}

/* open_file with the key "select" (@p items, NULL-terminated). */
static tdm__sinkobj *open_select(const char *name, int format, int mode,
                                 const char *const *items, char *path,
                                 size_t path_size)
{
    tdm__sink_conf c = {0};
    tdm__sinkobj *s = NULL;
    char err[256];
    snprintf(path, path_size, "%s/%s", dir, name);
    c.name = "out";
    c.type = TDM__SINK_FILE;
    c.path = path;
    c.format = format;
    c.select = items;
    while (items[c.n_select])
        c.n_select++;
    tdm_err e = tdm__text_sink.open(&c, mode, &s, err, sizeof err);
    if (e != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "open: %s", err);
    return s;
}

static void close_ok(tdm__sinkobj *s)
{
    char err[256];
    tdm_err e = tdm__text_sink.close(s, err, sizeof err);
    if (e != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "close: %s", err);
}

/* A result for key page=p, uv (int64), avg (double). */
typedef struct result {
    tdm__col cols[3];
    tdm__out_row row;
    char key[32];
} result;

static void make_result(result *r, const char *page, int64_t uv, double avg,
                        tdm_time_ms start, tdm_pane_timing timing, int64_t pane,
                        bool update, tdm__change change)
{
    memset(r, 0, sizeof *r);
    r->cols[0].name = "page";
    r->cols[0].type = TDM_TYPE_STRING;
    r->cols[0].v.u.s.p = page;
    r->cols[0].v.u.s.len = (uint32_t)strlen(page);
    r->cols[1].name = "uv";
    r->cols[1].type = TDM_TYPE_INT64;
    r->cols[1].v.u.i = uv;
    r->cols[2].name = "avg";
    r->cols[2].type = TDM_TYPE_DOUBLE;
    r->cols[2].v.u.d = avg;
    r->row.cols = r->cols;
    r->row.n_cols = 3;
    r->row.has_window = 1;
    r->row.win_start = start;
    r->row.win_end = start + 300000;
    r->row.timing = timing;
    r->row.pane_index = pane;
    r->row.is_update = update;
    r->row.change = change;
    snprintf(r->key, sizeof r->key, "%s@%lld", page, (long long)start);
    r->row.upsert_key = r->key;
    r->row.upsert_key_len = strlen(r->key);
}

TDM_TEST(json_results_append)
{
    char path[256];
    result r;
    make_dir();
    tdm__sinkobj *s = open_file("r.jsonl", TDM__FMT_JSON, 0, path, sizeof path);
    make_result(&r, "p1", 3, 2.0, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "p1", 4, 0.1, 0, TDM_PANE_LATE, 1, true,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "a\"b", 1, NAN, 300000, TDM_PANE_EARLY, 0, false,
                TDM__CHANGE_INSERT);
    r.cols[1].v.null = 1;
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path),
                  "{\"page\":\"p1\",\"uv\":3,\"avg\":2.0,\"window_start\":0,"
                  "\"window_end\":300000,\"timing\":\"on_time\",\"pane\":0,"
                  "\"update\":false}\n"
                  "{\"page\":\"p1\",\"uv\":4,\"avg\":0.1,\"window_start\":0,"
                  "\"window_end\":300000,\"timing\":\"late\",\"pane\":1,"
                  "\"update\":true}\n"
                  "{\"page\":\"a\\\"b\",\"uv\":null,\"avg\":null,"
                  "\"window_start\":300000,\"window_end\":600000,"
                  "\"timing\":\"early\",\"pane\":0,\"update\":false}\n");
    remove_dir();
}

/* Regression: a result stayed in the file sink's buffer for as long as
 * no further row came (the 500 ms limit was checked only on a write), so
 * a quiet stream's last results never reached the file and a crash lost
 * them.  tick writes what waited FLUSH_MS (500 ms) of the sink's clock. */
static int64_t manual_ms;

static int64_t manual_now(void *ud)
{
    (void)ud;
    return manual_ms;
}

TDM_TEST(regression_tick_writes_a_row_no_other_follows)
{
    char path[256], err[256];
    result r;
    tdm__sink_conf c = {0};
    tdm__sinkobj *s = NULL;
    make_dir();
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    c.name = "out";
    c.type = TDM__SINK_FILE;
    c.path = path;
    c.format = TDM__FMT_JSON;
    c.now = manual_now;
    manual_ms = 1000;
    ASSERT_OK(tdm__text_sink.open(&c, 0, &s, err, sizeof err));
    make_result(&r, "p1", 3, 2.0, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    tdm__text_sink.tick(s);
    ASSERT_STR_EQ(slurp(path), "");
    manual_ms = 1499;
    tdm__text_sink.tick(s);
    ASSERT_STR_EQ(slurp(path), "");
    manual_ms = 1500;
    tdm__text_sink.tick(s);
    ASSERT_STR_EQ(slurp(path),
                  "{\"page\":\"p1\",\"uv\":3,\"avg\":2.0,\"window_start\":0,"
                  "\"window_end\":300000,\"timing\":\"on_time\",\"pane\":0,"
                  "\"update\":false}\n");
    close_ok(s);
    remove_dir();
}

TDM_TEST(json_results_retract_mode)
{
    char path[256];
    result r;
    make_dir();
    tdm__sinkobj *s = open_file("r.jsonl", TDM__FMT_JSON, 2, path, sizeof path);
    make_result(&r, "p1", 3, 1.5, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "p1", 3, 1.5, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_RETRACT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "p1", 4, 1.25, 0, TDM_PANE_LATE, 1, true,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path),
                  "{\"page\":\"p1\",\"uv\":3,\"avg\":1.5,\"window_start\":0,"
                  "\"window_end\":300000,\"timing\":\"on_time\",\"pane\":0,"
                  "\"update\":false,\"op\":\"+\"}\n"
                  "{\"page\":\"p1\",\"uv\":3,\"avg\":1.5,\"window_start\":0,"
                  "\"window_end\":300000,\"timing\":\"on_time\",\"pane\":0,"
                  "\"update\":false,\"op\":\"-\"}\n"
                  "{\"page\":\"p1\",\"uv\":4,\"avg\":1.25,\"window_start\":0,"
                  "\"window_end\":300000,\"timing\":\"late\",\"pane\":1,"
                  "\"update\":true,\"op\":\"+\"}\n");
    remove_dir();
}

TDM_TEST(upsert_file_keeps_latest_row_per_key_written_at_close)
{
    char path[256], tmp[300];
    result r;
    make_dir();
    tdm__sinkobj *s =
        open_file("sub/up.csv", TDM__FMT_CSV, 1, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* p1@0 on time, p2@0 on time, p1@0 late update: two rows, p1 first
     * (first appearance) with the late values. */
    make_result(&r, "p1", 3, 1.0, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_UPDATE);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "p2", 1, 5.0, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_UPDATE);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "p1", 5, 1.5, 0, TDM_PANE_LATE, 1, true,
                TDM__CHANGE_UPDATE);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    /* Nothing is on disk before close (the folder was created). */
    ASSERT_STR_EQ(slurp(path), "");
    close_ok(s);
    ASSERT_STR_EQ(slurp(path),
                  "page,uv,avg,window_start,window_end,timing,pane,update\n"
                  "p1,5,1.5,0,300000,late,1,true\n"
                  "p2,1,5.0,0,300000,on_time,0,false\n");
    ASSERT_TRUE(access(tmp, F_OK) != 0);
    remove_dir();
}

TDM_TEST(upsert_on_stdout_marks_rows)
{
    char path[256];
    result r;
    tdm__sink_conf c = {0};
    tdm__sinkobj *s = NULL;
    make_dir();
    snprintf(path, sizeof path, "%s/stdout.txt", dir);
    /* Send this process's stdout to a file for the check. */
    fflush(stdout);
    int saved = dup(1);
    FILE *f = freopen(path, "w", stdout);
    ASSERT_TRUE(f != NULL);
    c.name = "out";
    c.type = TDM__SINK_STDOUT;
    c.format = TDM__FMT_JSON;
    ASSERT_OK(tdm__text_sink.open(&c, 1, &s, NULL, 0));
    make_result(&r, "p1", 3, 1.0, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_UPDATE);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    close_ok(s);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ASSERT_STR_EQ(slurp(path),
                  "{\"page\":\"p1\",\"uv\":3,\"avg\":1.0,\"window_start\":0,"
                  "\"window_end\":300000,\"timing\":\"on_time\",\"pane\":0,"
                  "\"update\":false,\"op\":\"upsert\"}\n");
    remove_dir();
}

TDM_TEST(csv_results_header_and_quoting)
{
    char path[256];
    result r;
    make_dir();
    tdm__sinkobj *s = open_file("r.csv", TDM__FMT_CSV, 2, path, sizeof path);
    make_result(&r, "a,b", 2, 0.5, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "say \"x\"", 3, -2.0, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_RETRACT);
    r.cols[1].v.null = 1;
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path),
                  "page,uv,avg,window_start,window_end,timing,pane,update,op\n"
                  "\"a,b\",2,0.5,0,300000,on_time,0,false,+\n"
                  "\"say \"\"x\"\"\",,-2.0,0,300000,on_time,0,false,-\n");
    remove_dir();
}

TDM_TEST(join_rows_without_window)
{
    char path[256];
    tdm__col cols[3] = {
        {.name = "left.id", .type = TDM_TYPE_INT64, .v = {.u.i = 7}},
        {.name = "right.paid", .type = TDM_TYPE_BOOL, .v = {.u.i = 1}},
        {.name = "ts", .type = TDM_TYPE_TIMESTAMP, .v = {.u.i = 1500}},
    };
    tdm__out_row row = {.cols = cols, .n_cols = 3};
    make_dir();
    tdm__sinkobj *s = open_file("j.jsonl", TDM__FMT_JSON, 0, path, sizeof path);
    ASSERT_OK(tdm__text_sink.write_result(s, &row));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path),
                  "{\"left.id\":7,\"right.paid\":true,\"ts\":1500}\n");
    remove_dir();
}

TDM_TEST(late_rows_have_fields_and_ts)
{
    char path[256];
    tdm__schema sc;
    make_dir();
    ASSERT_OK(
        tdm__schema_parse("user:string, n:int64, t:timestamp", &sc, NULL, 0));
    tdm__batch *b = tdm__batch_new(&sc, 4);
    tdm__row *r = tdm__batch_add(b);
    ASSERT_OK(tdm__batch_set_string(b, r, 0, "ann", 3));
    r->v[2].u.i = 1700;
    r->v[2].null = 0;
    r->ts = 1700;
    tdm__sinkobj *s =
        open_file("late.jsonl", TDM__FMT_JSON, 0, path, sizeof path);
    ASSERT_OK(tdm__text_sink.write_row(s, r));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path),
                  "{\"user\":\"ann\",\"n\":null,\"t\":1700,\"ts\":1700}\n");
    s = open_file("late.csv", TDM__FMT_CSV, 0, path, sizeof path);
    ASSERT_OK(tdm__text_sink.write_row(s, r));
    ASSERT_OK(tdm__text_sink.write_row(s, r));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path), "user,n,t,ts\nann,,1700,1700\n"
                               "ann,,1700,1700\n");
    tdm__batch_destroy(b);
    tdm__schema_free(&sc);
    /* A schema with its own "ts" field: no second one. */
    ASSERT_OK(tdm__schema_parse("ts:int64", &sc, NULL, 0));
    b = tdm__batch_new(&sc, 4);
    r = tdm__batch_add(b);
    r->v[0].u.i = 2;
    r->v[0].null = 0;
    r->ts = 2000;
    s = open_file("late2.jsonl", TDM__FMT_JSON, 0, path, sizeof path);
    ASSERT_OK(tdm__text_sink.write_row(s, r));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path), "{\"ts\":2}\n");
    tdm__batch_destroy(b);
    tdm__schema_free(&sc);
    remove_dir();
}

/* select: only the chosen columns, in its order, under the aliases; the
 * pane members only when chosen; "op" of retract mode always, last. */
TDM_TEST(select_json_renames_and_orders_with_pane_fields)
{
    static const char *const items[] = {
        "window_end AS minute", "uv", "page AS p", "timing", "update", NULL};
    char path[256];
    result r;
    make_dir();
    tdm__sinkobj *s =
        open_select("s.jsonl", TDM__FMT_JSON, 2, items, path, sizeof path);
    make_result(&r, "p1", 3, 1.5, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "p1", 3, 1.5, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_RETRACT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "p1", 4, 1.25, 0, TDM_PANE_LATE, 1, true,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path),
                  "{\"minute\":300000,\"uv\":3,\"p\":\"p1\",\"timing\":"
                  "\"on_time\",\"update\":false,\"op\":\"+\"}\n"
                  "{\"minute\":300000,\"uv\":3,\"p\":\"p1\",\"timing\":"
                  "\"on_time\",\"update\":false,\"op\":\"-\"}\n"
                  "{\"minute\":300000,\"uv\":4,\"p\":\"p1\",\"timing\":"
                  "\"late\",\"update\":true,\"op\":\"+\"}\n");
    remove_dir();
}

/* select in CSV: the header names the output columns; a null is an
 * empty cell; a row without a window (a join pair) has no pane. */
TDM_TEST(select_csv_header_follows_the_selection)
{
    static const char *const items[] = {"pane", "avg AS mean", "page",
                                        "window_start as ws", NULL};
    char path[256];
    result r;
    make_dir();
    tdm__sinkobj *s =
        open_select("s.csv", TDM__FMT_CSV, 0, items, path, sizeof path);
    make_result(&r, "a,b", 2, 0.5, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    make_result(&r, "c", 3, -2.0, 300000, TDM_PANE_LATE, 2, true,
                TDM__CHANGE_INSERT);
    r.cols[2].v.null = 1;
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path), "pane,mean,page,ws\n"
                               "0,0.5,\"a,b\",0\n"
                               "2,,c,300000\n");
    remove_dir();
}

/* select on pass-through rows (write_row): schema fields and the event
 * time "ts" when the schema has no such field. */
TDM_TEST(select_pass_through_rows)
{
    static const char *const items[] = {"ts AS at", "user", NULL};
    char path[256];
    tdm__schema sc;
    make_dir();
    ASSERT_OK(tdm__schema_parse("user:string, n:int64", &sc, NULL, 0));
    tdm__batch *b = tdm__batch_new(&sc, 4);
    tdm__row *r = tdm__batch_add(b);
    ASSERT_OK(tdm__batch_set_string(b, r, 0, "ann", 3));
    r->ts = 1700;
    tdm__sinkobj *s =
        open_select("p.jsonl", TDM__FMT_JSON, 0, items, path, sizeof path);
    ASSERT_OK(tdm__text_sink.write_row(s, r));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path), "{\"at\":1700,\"user\":\"ann\"}\n");
    s = open_select("p.csv", TDM__FMT_CSV, 0, items, path, sizeof path);
    ASSERT_OK(tdm__text_sink.write_row(s, r));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path), "at,user\n1700,ann\n");
    tdm__batch_destroy(b);
    tdm__schema_free(&sc);
    remove_dir();
}

/* A malformed selection is refused at open, naming the key. */
TDM_TEST(select_refuses_bad_items)
{
    static const char *const twice[] = {"uv AS page", "page", NULL};
    static const char *const bad[] = {"page uv", NULL};
    static const char *const empty[] = {" ", NULL};
    const char *const *cases[] = {twice, bad, empty};
    const char *want[] = {"select: output name \"page\" is given twice",
                          "select: expected \"name\" or \"name AS alias\"",
                          "select: an empty item"};
    for (int k = 0; k < 3; k++) {
        tdm__sel *sel = NULL;
        char err[256] = "";
        int n = 0;
        while (cases[k][n])
            n++;
        ASSERT_EQ(tdm__sel_new(cases[k], n, &sel, err, sizeof err),
                  TDM_ERR_INVAL);
        ASSERT_TRUE(sel == NULL);
        ASSERT_TRUE(strstr(err, want[k]) != NULL);
    }
}

TDM_TEST(dead_letters_escape_raw_bytes)
{
    char path[256];
    make_dir();
    tdm__sinkobj *s =
        open_file("dead.jsonl", TDM__FMT_JSON, 0, path, sizeof path);
    /* NUL, a control byte, a quote, a backslash, valid UTF-8 (é) and a
     * byte that is not UTF-8 (0xff). */
    ASSERT_OK(tdm__text_sink.write_dead(s, "in.jsonl:3",
                                        "binary data: NUL "
                                        "byte at column 1",
                                        "\0\x01\"\\\xc3\xa9\xff", 7));
    ASSERT_OK(tdm__text_sink.write_dead(s, "in.jsonl:4", "empty line", "", 0));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path),
                  "{\"location\":\"in.jsonl:3\",\"reason\":\"binary data: NUL "
                  "byte at column 1\",\"raw\":\"\\u0000\\u0001\\\"\\\\"
                  "\xc3\xa9\\u00ff\"}\n"
                  "{\"location\":\"in.jsonl:4\",\"reason\":\"empty line\","
                  "\"raw\":\"\"}\n");
    s = open_file("dead.csv", TDM__FMT_CSV, 0, path, sizeof path);
    ASSERT_OK(tdm__text_sink.write_dead(s, "in.csv:2",
                                        "expected 2 columns, "
                                        "got 3",
                                        "a,\"b\",c", 7));
    close_ok(s);
    ASSERT_STR_EQ(slurp(path), "location,reason,raw\n"
                               "in.csv:2,\"expected 2 columns, got 3\","
                               "\"a,\"\"b\"\",c\"\n");
    remove_dir();
}

TDM_TEST(discard_sink_writes_nothing)
{
    tdm__sink_conf c = {
        .name = "null", .type = TDM__SINK_DISCARD, .format = TDM__FMT_JSON};
    tdm__sinkobj *s = NULL;
    result r;
    ASSERT_OK(tdm__text_sink.open(&c, 0, &s, NULL, 0));
    make_result(&r, "p", 1, 1.0, 0, TDM_PANE_ON_TIME, 0, false,
                TDM__CHANGE_INSERT);
    ASSERT_OK(tdm__text_sink.write_result(s, &r.row));
    ASSERT_OK(tdm__text_sink.write_dead(s, "x:1", "r", "raw", 3));
    close_ok(s);
}

TDM_TEST(open_and_write_errors_name_the_path)
{
    char path[256], err[256], want[512];
    tdm__sink_conf c = {
        .name = "out", .type = TDM__SINK_FILE, .format = TDM__FMT_JSON};
    tdm__sinkobj *s = NULL;
    make_dir();
    /* A path below a regular file cannot be created. */
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *f = fopen(path, "w");
    fclose(f);
    snprintf(path, sizeof path, "%s/file/out.jsonl", dir);
    c.path = path;
    ASSERT_ERR(tdm__text_sink.open(&c, 0, &s, err, sizeof err), TDM_ERR_IO);
    snprintf(want, sizeof want,
             "cannot create '%s': Not a "
             "directory",
             path);
    ASSERT_STR_EQ(err, want);
    c.path = "";
    ASSERT_ERR(tdm__text_sink.open(&c, 0, &s, err, sizeof err), TDM_ERR_INVAL);
    ASSERT_STR_EQ(err, "path is not set");
    /* /dev/full takes the open but fails every write. */
    c.path = "/dev/full";
    ASSERT_OK(tdm__text_sink.open(&c, 0, &s, err, sizeof err));
    ASSERT_OK(tdm__text_sink.write_dead(s, "x:1", "r", "raw", 3));
    ASSERT_ERR(tdm__text_sink.close(s, err, sizeof err), TDM_ERR_IO);
    ASSERT_STR_EQ(err, "cannot write '/dev/full': No space left "
                       "on device");
    remove_dir();
}

typedef struct writer_arg {
    tdm__sinkobj *s;
    int id;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *a = p;
    char loc[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(loc, sizeof loc, "t%d:%d", a->id, i);
        if (tdm__text_sink.write_dead(a->s, loc, "r", "0123456789", 10) !=
            TDM_OK)
            return (void *)1;
    }
    return NULL;
}

TDM_TEST(concurrent_writers_never_interleave_lines)
{
    char path[256];
    pthread_t th[4];
    writer_arg args[4];
    make_dir();
    tdm__sinkobj *s =
        open_file("many.jsonl", TDM__FMT_JSON, 0, path, sizeof path);
    for (int t = 0; t < 4; t++) {
        args[t].s = s;
        args[t].id = t;
        ASSERT_EQ(pthread_create(&th[t], NULL, writer, &args[t]), 0);
    }
    for (int t = 0; t < 4; t++) {
        void *rc;
        pthread_join(th[t], &rc);
        ASSERT_TRUE(rc == NULL);
    }
    close_ok(s);
    /* 8000 lines, each exactly one well-formed dead letter. */
    FILE *f = fopen(path, "r");
    char line[256];
    int n = 0, per[4] = {0};
    while (fgets(line, sizeof line, f)) {
        int t, i;
        ASSERT_EQ(sscanf(line,
                         "{\"location\":\"t%d:%d\",\"reason\":\"r\","
                         "\"raw\":\"0123456789\"}",
                         &t, &i),
                  2);
        ASSERT_TRUE(t >= 0 && t < 4);
        /* Each thread's lines keep their order. */
        ASSERT_EQ(i, per[t]);
        per[t]++;
        n++;
    }
    fclose(f);
    ASSERT_EQ(n, 8000);
    remove_dir();
}
