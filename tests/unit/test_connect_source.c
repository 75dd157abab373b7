/* SPDX-License-Identifier: MIT */
/* test_connect_source.c - the sources of src/connect: files and globs
 * (partitions, round-robin dealing, interleaving, locations of dead
 * letters for every malformed-input kind, truncated last lines, CRLF,
 * blank lines, over-long lines, CSV headers, partition fields), standard
 * input through a pipe, the TCP source against a socket the test listens
 * on, and the generator (determinism across parallelism, rate,
 * out-of-orderness, lateness, idleness, skew).  Files live in a mkdtemp
 * folder; expected rows and reasons are written out by hand. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "connect/conn.h"

/* ---- Helpers ---- */

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/tdm-src-XXXXXX");
    ASSERT_TRUE(mkdtemp(dir) != NULL);
}

/* Writes @p len bytes to dir/name; returns the path (static buffer per
 * call site is not needed: copied by the caller if kept). */
static const char *write_file(const char *name, const char *data, size_t len)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ASSERT_TRUE(f != NULL);
    ASSERT_EQ(fwrite(data, 1, len, f), len);
    fclose(f);
    return path;
}
#define WRITE(name, text) write_file(name, text, strlen(text))

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

/* Dead letters collected by a test: "location|reason|raw" lines. */
typedef struct dead_log {
    char text[8192];
    int n;
} dead_log;

static void on_dead(void *ud, const char *location, const char *reason,
                    const char *raw, size_t raw_len)
{
    dead_log *d = ud;
    size_t used = strlen(d->text);
    snprintf(d->text + used, sizeof d->text - used, "%s|%s|%.*s\n", location,
             reason, (int)(raw_len > 60 ? 60 : raw_len), raw);
    d->n++;
}

typedef struct src_fixture {
    tdm__schema schema;
    tdm__source_conf conf;
    tdm__source *src;
    const tdm__source_vtab *vt;
    int n_parts;
    uint8_t finished[16];
    dead_log dead;
    char err[256];
} src_fixture;

static void conf_init(src_fixture *fx, const char *schema, int format,
                      const char *path)
{
    memset(fx, 0, sizeof *fx);
    ASSERT_OK(tdm__schema_parse(schema, &fx->schema, NULL, 0));
    fx->conf.name = "clicks";
    fx->conf.type = TDM__SRC_FILE;
    fx->conf.path = path;
    fx->conf.format = format;
    fx->conf.csv_header = true;
    fx->conf.csv_delimiter = ',';
    fx->conf.schema = &fx->schema;
    fx->conf.partition_field = -1;
    fx->conf.time_mode = TDM__TIME_EVENT;
    fx->conf.ts_field = tdm__schema_find(&fx->schema, "ts");
    fx->conf.ts_unit = TDM__UNIT_MS;
    fx->vt = &tdm__file_source;
}

static tdm_err open_src(src_fixture *fx, int index, int count)
{
    return fx->vt->open(&fx->conf, index, count, on_dead, &fx->dead, &fx->src,
                        &fx->n_parts, fx->err, sizeof fx->err);
}

static void close_src(src_fixture *fx)
{
    if (fx->src)
        fx->vt->close(fx->src);
    fx->src = NULL;
    tdm__schema_free(&fx->schema);
}

/* Polls until end of input, @p max rows a time, appending "p<part>:<user
 * or first field>:<ts>" per row to @p out.  Returns the number of rows. */
static int drain(src_fixture *fx, size_t max, char *out, size_t out_size)
{
    tdm__batch *b = tdm__batch_new(&fx->schema, 64);
    int eof = 0, rows = 0, polls = 0;
    ASSERT_TRUE(b != NULL);
    out[0] = '\0';
    while (!eof) {
        tdm__batch_clear(b);
        ASSERT_OK(fx->vt->poll(fx->src, b, max, fx->finished, &eof));
        ASSERT_TRUE(b->n <= max);
        for (size_t i = 0; i < b->n; i++) {
            const tdm__row *r = &b->rows[i];
            size_t used = strlen(out);
            const tdm__val *v = &r->v[0];
            snprintf(out + used, out_size - used, "p%u:%.*s:%lld ",
                     (unsigned)r->partition, v->null ? 4 : (int)v->u.s.len,
                     v->null ? "null" : v->u.s.p, (long long)r->ts);
            rows++;
        }
        ASSERT_TRUE(++polls < 10000);
    }
    tdm__batch_destroy(b);
    return rows;
}

/* ---- Files ---- */

TDM_TEST(file_every_malformed_kind_with_location)
{
    src_fixture fx;
    char out[4096], path[256];
    make_dir();
    /* Line by line: good; bad JSON; missing field; wrong type; huge
     * number; empty (skipped silently); blank (skipped); binary garbage;
     * CRLF good; truncated last line without a newline (good). */
    static const char data[] = "{\"user\":\"a\",\"ts\":1}\n"
                               "{\"user\":\"b\",\n"
                               "{\"user\":\"c\"}\n"
                               "{\"user\":7,\"ts\":3}\n"
                               "{\"user\":\"d\",\"ts\":99999999999999999999}\n"
                               "\n"
                               "   \n"
                               "\x01\x02\xff\xfe\n"
                               "{\"user\":\"e\",\"ts\":5}\r\n"
                               "{\"user\":\"f\",\"ts\":6}";
    strcpy(path, write_file("a.jsonl", data, sizeof data - 1));
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, path);
    ASSERT_OK(open_src(&fx, 0, 1));
    ASSERT_EQ(fx.n_parts, 1);
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 3);
    ASSERT_STR_EQ(out, "p0:a:1 p0:e:5 p0:f:6 ");
    ASSERT_EQ(fx.finished[0], 1);
    char want[2048];
    snprintf(want, sizeof want,
             "%s:2|invalid JSON: string or '}' expected near end of file "
             "(column 12)|{\"user\":\"b\",\n"
             "%s:3|field 'ts' is missing|{\"user\":\"c\"}\n"
             "%s:4|field 'user': expected a string, got 7|{\"user\":7,"
             "\"ts\":3}\n"
             "%s:5|field 'ts': integer out of range, got "
             "99999999999999999999|{\"user\":\"d\",\"ts\":"
             "99999999999999999999}\n"
             "%s:8|binary data: control byte 0x01 at column 1|\x01\x02\xff"
             "\xfe\n",
             path, path, path, path, path);
    ASSERT_STR_EQ(fx.dead.text, want);
    close_src(&fx);
    remove_dir();
}

TDM_TEST(file_glob_deals_files_round_robin)
{
    src_fixture fx;
    char out[4096], pattern[256];
    make_dir();
    WRITE("c.jsonl", "{\"user\":\"c1\",\"ts\":30}\n");
    WRITE("a.jsonl",
          "{\"user\":\"a1\",\"ts\":10}\n{\"user\":\"a2\",\"ts\":11}\n");
    WRITE("b.jsonl", "{\"user\":\"b1\",\"ts\":20}\n");
    WRITE("skip.txt", "not matched\n");
    snprintf(pattern, sizeof pattern, "%s/*.jsonl", dir);
    /* Sorted: a, b, c.  Subtask 0 of 2 reads a and c, subtask 1 b. */
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, pattern);
    ASSERT_OK(open_src(&fx, 0, 2));
    ASSERT_EQ(fx.n_parts, 2);
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 3);
    /* One batch from a (partition 0) - it ends - then c (partition 1). */
    ASSERT_STR_EQ(out, "p0:a1:10 p0:a2:11 p1:c1:30 ");
    ASSERT_EQ(fx.finished[0], 1);
    ASSERT_EQ(fx.finished[1], 1);
    close_src(&fx);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, pattern);
    ASSERT_OK(open_src(&fx, 1, 2));
    ASSERT_EQ(fx.n_parts, 1);
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 1);
    ASSERT_STR_EQ(out, "p0:b1:20 ");
    close_src(&fx);
    /* A third subtask of three... and one with no file at all. */
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, pattern);
    ASSERT_OK(open_src(&fx, 3, 4));
    ASSERT_EQ(fx.n_parts, 0);
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 0);
    close_src(&fx);
    remove_dir();
}

TDM_TEST(file_partitions_interleave_batch_by_batch)
{
    src_fixture fx;
    char out[4096], pattern[256];
    make_dir();
    WRITE("a.jsonl", "{\"user\":\"a\",\"ts\":1}\n{\"user\":\"a\",\"ts\":2}\n"
                     "{\"user\":\"a\",\"ts\":3}\n");
    WRITE("b.jsonl", "{\"user\":\"b\",\"ts\":1}\n{\"user\":\"b\",\"ts\":2}\n");
    snprintf(pattern, sizeof pattern, "%s/*.jsonl", dir);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, pattern);
    ASSERT_OK(open_src(&fx, 0, 1));
    /* Two rows per poll: a1 a2 | b1 b2 | a3 (b ends; a ends). */
    ASSERT_EQ(drain(&fx, 2, out, sizeof out), 5);
    ASSERT_STR_EQ(out, "p0:a:1 p0:a:2 p1:b:1 p1:b:2 p0:a:3 ");
    close_src(&fx);
    remove_dir();
}

TDM_TEST(file_open_errors_name_the_path)
{
    src_fixture fx;
    char path[256];
    make_dir();
    snprintf(path, sizeof path, "%s/missing.jsonl", dir);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, path);
    ASSERT_ERR(open_src(&fx, 0, 1), TDM_ERR_IO);
    char want[512];
    snprintf(want, sizeof want, "cannot open '%s': No such file or directory",
             path);
    ASSERT_STR_EQ(fx.err, want);
    ASSERT_TRUE(fx.src == NULL);
    close_src(&fx);
    snprintf(path, sizeof path, "%s/*.csv", dir);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, path);
    ASSERT_ERR(open_src(&fx, 0, 1), TDM_ERR_IO);
    snprintf(want, sizeof want, "no file matches '%s'", path);
    ASSERT_STR_EQ(fx.err, want);
    close_src(&fx);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, "");
    ASSERT_ERR(open_src(&fx, 0, 1), TDM_ERR_INVAL);
    ASSERT_STR_EQ(fx.err, "path is not set");
    close_src(&fx);
    remove_dir();
}

TDM_TEST(file_long_lines_grow_then_dead_letter)
{
    src_fixture fx;
    char out[4096], path[256];
    make_dir();
    /* A 1 MiB user (beyond the 64 KiB first buffer) is a normal line; a
     * 17 MiB line (over the 16 MiB limit) is dead-lettered once, and the
     * line after it is read normally. */
    size_t big = (size_t)1 << 20, huge = (size_t)17 << 20;
    size_t cap = big + huge + 200, n = 0;
    char *data = malloc(cap);
    ASSERT_TRUE(data != NULL);
    n += (size_t)sprintf(data + n, "{\"ts\":1,\"user\":\"");
    memset(data + n, 'u', big);
    n += big;
    n += (size_t)sprintf(data + n, "\"}\n");
    memset(data + n, 'x', huge);
    n += huge;
    n += (size_t)sprintf(data + n, "\n{\"user\":\"z\",\"ts\":3}\n");
    strcpy(path, write_file("long.jsonl", data, n));
    free(data);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, path);
    ASSERT_OK(open_src(&fx, 0, 1));
    tdm__batch *b = tdm__batch_new(&fx.schema, 8);
    int eof = 0, rows = 0;
    while (!eof) {
        tdm__batch_clear(b);
        ASSERT_OK(fx.vt->poll(fx.src, b, 8, fx.finished, &eof));
        for (size_t i = 0; i < b->n; i++, rows++) {
            if (rows == 0)
                ASSERT_EQ(b->rows[i].v[0].u.s.len, big);
            else
                ASSERT_EQ(b->rows[i].ts, 3);
        }
    }
    ASSERT_EQ(rows, 2);
    tdm__batch_destroy(b);
    ASSERT_EQ(fx.dead.n, 1);
    char want[512];
    snprintf(want, sizeof want,
             "%s:2|line too long (more than 16777216 "
             "bytes)|",
             path);
    ASSERT_TRUE(strncmp(fx.dead.text, want, strlen(want)) == 0);
    (void)out;
    close_src(&fx);
    remove_dir();
}

TDM_TEST(file_csv_header_per_file)
{
    src_fixture fx;
    char out[4096], pattern[256];
    make_dir();
    /* Each file has its own header (blank lines before it are skipped);
     * the second has other column order and a CRLF ending. */
    WRITE("1.csv", "\nuser,ts\nann,1\nbob,x\n");
    WRITE("2.csv", "ts,user\r\n2,cid\r\n");
    snprintf(pattern, sizeof pattern, "%s/*.csv", dir);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_CSV, pattern);
    ASSERT_OK(open_src(&fx, 0, 1));
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 2);
    ASSERT_STR_EQ(out, "p0:ann:1 p1:cid:2 ");
    char want[512];
    snprintf(want, sizeof want,
             "%s/1.csv:4|field 'ts': expected a timestamp in ms, got "
             "\"x\"|bob,x\n",
             dir);
    ASSERT_STR_EQ(fx.dead.text, want);
    close_src(&fx);
    remove_dir();
}

TDM_TEST(file_csv_unusable_header_dead_letters_the_file)
{
    src_fixture fx;
    char out[4096], path[256];
    make_dir();
    strcpy(path, WRITE("bad.csv", "user,ts,user\nann,1,x\n"));
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_CSV, path);
    ASSERT_OK(open_src(&fx, 0, 1));
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 0);
    char want[1024];
    snprintf(want, sizeof want,
             "%s:1|unusable CSV header: CSV header: column 'user' appears "
             "twice (columns 1 and 3)|user,ts,user\n"
             "%s:2|no usable CSV header (line 1)|ann,1,x\n",
             path, path);
    ASSERT_STR_EQ(fx.dead.text, want);
    close_src(&fx);
    remove_dir();
}

TDM_TEST(file_csv_without_header_uses_schema_order)
{
    src_fixture fx;
    char out[4096], path[256];
    make_dir();
    strcpy(path, WRITE("h.csv", "ann;1\nbob;2;3\n"));
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_CSV, path);
    fx.conf.csv_header = false;
    fx.conf.csv_delimiter = ';';
    ASSERT_OK(open_src(&fx, 0, 1));
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 1);
    ASSERT_STR_EQ(out, "p0:ann:1 ");
    char want[512];
    snprintf(want, sizeof want, "%s:2|expected 2 columns, got 3|bob;2;3\n",
             path);
    ASSERT_STR_EQ(fx.dead.text, want);
    close_src(&fx);
    remove_dir();
}

TDM_TEST(file_partition_field_numbers_values_as_they_appear)
{
    src_fixture fx;
    char out[4096], pattern[256];
    make_dir();
    WRITE("1.jsonl", "{\"user\":\"x\",\"p\":\"east\",\"ts\":1}\n"
                     "{\"user\":\"y\",\"p\":\"west\",\"ts\":2}\n"
                     "{\"user\":\"z\",\"ts\":3}\n");
    WRITE("2.jsonl", "{\"user\":\"w\",\"p\":\"west\",\"ts\":4}\n"
                     "{\"user\":\"v\",\"p\":\"east\",\"ts\":5}\n");
    snprintf(pattern, sizeof pattern, "%s/*.jsonl", dir);
    conf_init(&fx, "user:string, p:string, ts:timestamp", TDM__FMT_JSON,
              pattern);
    fx.conf.partition_field = 1;
    ASSERT_OK(open_src(&fx, 0, 2));
    ASSERT_EQ(fx.n_parts, 0); /* grows as values appear */
    /* Subtask 0 reads both files: east 0, west 1, null 2. */
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 5);
    ASSERT_STR_EQ(out, "p0:x:1 p1:y:2 p2:z:3 p1:w:4 p0:v:5 ");
    close_src(&fx);
    conf_init(&fx, "user:string, p:string, ts:timestamp", TDM__FMT_JSON,
              pattern);
    fx.conf.partition_field = 1;
    ASSERT_OK(open_src(&fx, 1, 2));
    ASSERT_EQ(drain(&fx, 64, out, sizeof out), 0);
    close_src(&fx);
    remove_dir();
}

/* ---- Standard input ---- */

TDM_TEST(stdin_pipe_with_waits_and_truncated_end)
{
    src_fixture fx;
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    ASSERT_TRUE(dup2(p[0], 0) == 0);
    close(p[0]);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, "-");
    ASSERT_OK(open_src(&fx, 1, 2));
    ASSERT_EQ(fx.n_parts, 0); /* only subtask 0 reads stdin */
    close_src(&fx);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, "-");
    fx.conf.type = TDM__SRC_STDIN;
    ASSERT_OK(open_src(&fx, 0, 2));
    ASSERT_EQ(fx.n_parts, 1);
    tdm__batch *b = tdm__batch_new(&fx.schema, 8);
    int eof = 0;
    /* Nothing written yet: the poll returns empty-handed (after at most
     * its ~50 ms wait), not at end. */
    ASSERT_OK(fx.vt->poll(fx.src, b, 8, fx.finished, &eof));
    ASSERT_EQ(b->n, 0);
    ASSERT_EQ(eof, 0);
    /* A line and a half: the full line comes out, the half waits. */
    const char *part = "{\"user\":\"a\",\"ts\":1}\n{\"user\":\"b\",";
    ASSERT_EQ(write(p[1], part, strlen(part)), (ssize_t)strlen(part));
    ASSERT_OK(fx.vt->poll(fx.src, b, 8, fx.finished, &eof));
    ASSERT_EQ(b->n, 1);
    ASSERT_EQ(eof, 0);
    /* The rest without a final newline, then end of input. */
    ASSERT_EQ(write(p[1], "\"ts\":2}", 7), 7);
    close(p[1]);
    while (!eof)
        ASSERT_OK(fx.vt->poll(fx.src, b, 8, fx.finished, &eof));
    ASSERT_EQ(b->n, 2);
    ASSERT_EQ(b->rows[1].ts, 2);
    ASSERT_EQ(fx.finished[0], 1);
    ASSERT_EQ(fx.dead.n, 0);
    tdm__batch_destroy(b);
    close_src(&fx);
}

/* ---- TCP ---- */

/* A listening socket on 127.0.0.1 with a kernel-chosen port. */
static int listen_loopback(int *port)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(fd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(fd, 4), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

TDM_TEST(tcp_reads_lines_until_the_peer_closes)
{
    src_fixture fx;
    char addr[64];
    int port, lfd = listen_loopback(&port);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_CSV, NULL);
    fx.conf.type = TDM__SRC_TCP;
    fx.conf.tcp_address = addr;
    fx.vt = &tdm__tcp_source;
    ASSERT_OK(open_src(&fx, 1, 2));
    ASSERT_EQ(fx.n_parts, 0);
    close_src(&fx);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_CSV, NULL);
    fx.conf.type = TDM__SRC_TCP;
    fx.conf.tcp_address = addr;
    fx.vt = &tdm__tcp_source;
    /* The connection completes in the backlog; accept it afterwards. */
    ASSERT_OK(open_src(&fx, 0, 2));
    ASSERT_EQ(fx.n_parts, 1);
    int cfd = accept(lfd, NULL, NULL);
    ASSERT_TRUE(cfd >= 0);
    tdm__batch *b = tdm__batch_new(&fx.schema, 8);
    int eof = 0;
    ASSERT_OK(fx.vt->poll(fx.src, b, 8, fx.finished, &eof));
    ASSERT_EQ(b->n, 0);
    ASSERT_EQ(eof, 0);
    const char *msg = "user,ts\nann,5\nbad\nbob,6";
    ASSERT_EQ(write(cfd, msg, strlen(msg)), (ssize_t)strlen(msg));
    close(cfd);
    while (!eof)
        ASSERT_OK(fx.vt->poll(fx.src, b, 8, fx.finished, &eof));
    ASSERT_EQ(b->n, 2);
    ASSERT_EQ(b->rows[0].ts, 5);
    ASSERT_EQ(b->rows[1].ts, 6);
    ASSERT_EQ(fx.finished[0], 1);
    char want[256];
    snprintf(want, sizeof want, "%s:3|expected 2 columns, got 1|bad\n", addr);
    ASSERT_STR_EQ(fx.dead.text, want);
    tdm__batch_destroy(b);
    close_src(&fx);
    close(lfd);
}

TDM_TEST(tcp_connect_errors)
{
    src_fixture fx;
    char addr[64], want[256];
    int port, lfd = listen_loopback(&port);
    close(lfd); /* nobody listens there now */
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    conf_init(&fx, "user:string, ts:timestamp", TDM__FMT_JSON, NULL);
    fx.conf.tcp_address = addr;
    fx.vt = &tdm__tcp_source;
    ASSERT_ERR(open_src(&fx, 0, 1), TDM_ERR_IO);
    snprintf(want, sizeof want, "cannot connect to %s: Connection refused",
             addr);
    ASSERT_STR_EQ(fx.err, want);
    fx.conf.tcp_address = "localhost";
    ASSERT_ERR(open_src(&fx, 0, 1), TDM_ERR_INVAL);
    ASSERT_STR_EQ(fx.err, "tcp.address: expected "
                          "host:port, got \"localhost\"");
    close_src(&fx);
}

/* ---- TCP: reconnects, cut lines and causes (issue 18) ---- */

/* The tcp source's clock in the tests below: set by hand. */
static int64_t fake_ms;

static int64_t fake_now(void *ud)
{
    (void)ud;
    return fake_ms;
}

/* Listens on a loopback port, writes its address into @p addr (64
 * bytes) and configures a TCP source on it that reconnects on a clean
 * close, for up to @p timeout_ms with back-off 100 ms doubling up to
 * 300 ms, on the fake clock; CSV with a header.  Returns the listening
 * socket. */
static int tcp_setup(src_fixture *fx, char *addr, int64_t timeout_ms)
{
    int port, lfd = listen_loopback(&port);
    snprintf(addr, 64, "127.0.0.1:%d", port);
    conf_init(fx, "user:string, ts:timestamp", TDM__FMT_CSV, NULL);
    fx->conf.type = TDM__SRC_TCP;
    fx->conf.tcp_address = addr;
    fx->conf.tcp_reconnect_on_close = true;
    fx->conf.tcp_reconnect_timeout = timeout_ms;
    fx->conf.tcp_backoff = 100;
    fx->conf.tcp_max_backoff = 300;
    fx->conf.now = fake_now;
    fx->vt = &tdm__tcp_source;
    fake_ms = 0;
    return lfd;
}

/* Opens the source of tcp_setup and accepts its connection. */
static int tcp_open_accept(src_fixture *fx, int lfd)
{
    ASSERT_OK(open_src(fx, 0, 1));
    int cfd = accept(lfd, NULL, NULL);
    ASSERT_TRUE(cfd >= 0);
    return cfd;
}

/* Closes @p fd with a reset (SO_LINGER 0) instead of a clean close. */
static void close_reset(int fd)
{
    struct linger lg = {1, 0};
    ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    close(fd);
}

/* One poll that neither fails nor ends the input. */
static void poll_once(src_fixture *fx, tdm__batch *b)
{
    int eof = 0;
    ASSERT_OK(fx->vt->poll(fx->src, b, 8, fx->finished, &eof));
    ASSERT_EQ(eof, 0);
}

/* 1 when a connection waits on the listening socket @p lfd. */
static int pending(int lfd)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    return poll(&p, 1, 0);
}

/* Polls until @p want rows are in @p b or @p dead letters were sent;
 * the connection stays (no eof). */
static void poll_until(src_fixture *fx, tdm__batch *b, size_t want, int dead)
{
    for (int i = 0; i < 1000 && (b->n < want || fx->dead.n < dead); i++)
        poll_once(fx, b);
    ASSERT_EQ(b->n, want);
    ASSERT_EQ(fx->dead.n, dead);
}

/* Issue 18: a reset is not the end of the input, and the line it cut is
 * a dead letter, not a record ("car," would parse as a CSV row); the
 * source reconnects after the back-off, and the next connection's lines
 * are located "addr#2:line" - where a clean close cuts a line too. */
TDM_TEST(tcp_reconnects_after_a_reset_and_drops_the_cut_line)
{
    src_fixture fx;
    char addr[64], want[512];
    int lfd = tcp_setup(&fx, addr, 1000);
    int cfd = tcp_open_accept(&fx, lfd);
    const char *msg = "user,ts\nann,5\nbob,6\ncar,";
    ASSERT_EQ(write(cfd, msg, strlen(msg)), (ssize_t)strlen(msg));
    close_reset(cfd);
    tdm__batch *b = tdm__batch_new(&fx.schema, 8);
    poll_until(&fx, b, 2, 1);
    snprintf(want, sizeof want,
             "%s:4|line cut: the connection ended (Connection reset by "
             "peer) before its newline|car,\n",
             addr);
    ASSERT_STR_EQ(fx.dead.text, want);
    /* No attempt before the back-off, one when it is over. */
    fake_ms = 99;
    poll_once(&fx, b);
    ASSERT_EQ(pending(lfd), 0);
    fake_ms = 100;
    poll_once(&fx, b);
    ASSERT_EQ(pending(lfd), 1);
    cfd = accept(lfd, NULL, NULL);
    ASSERT_TRUE(cfd >= 0);
    msg = "user,ts\ndan,7\neve,8";
    ASSERT_EQ(write(cfd, msg, strlen(msg)), (ssize_t)strlen(msg));
    close(cfd);
    poll_until(&fx, b, 3, 2);
    ASSERT_EQ(b->rows[2].ts, 7);
    snprintf(want + strlen(want), sizeof want - strlen(want),
             "%s#2:3|line cut: the connection ended (closed by the peer) "
             "before its newline|eve,8\n",
             addr);
    ASSERT_STR_EQ(fx.dead.text, want);
    ASSERT_EQ(fx.finished[0], 0);
    tdm__batch_destroy(b);
    close_src(&fx);
    close(lfd);
}

/* Issue 18: with nobody listening after the loss, attempts start at
 * 100, 300, 600, 900 ms (the wait doubles, capped at 300 ms) and at the
 * timeout, 1000 ms; then poll fails and poll_error names the address,
 * the cause of the loss and that of the last attempt.  A fixed back-off
 * would make 10 attempts, an uncapped one 4. */
TDM_TEST(tcp_reconnect_backs_off_then_names_the_causes)
{
    src_fixture fx;
    char addr[64], want[512];
    int eof = 0, lfd = tcp_setup(&fx, addr, 1000);
    int cfd = tcp_open_accept(&fx, lfd);
    close(lfd); /* later connects are refused */
    ASSERT_EQ(write(cfd, "cut", 3), 3);
    close(cfd);
    tdm__batch *b = tdm__batch_new(&fx.schema, 8);
    poll_until(&fx, b, 0, 1); /* the close, seen at 0 ms */
    for (fake_ms = 50; fake_ms < 1000; fake_ms += 50)
        poll_once(&fx, b);
    ASSERT_STR_EQ(fx.vt->poll_error(fx.src), "");
    ASSERT_ERR(fx.vt->poll(fx.src, b, 8, fx.finished, &eof), TDM_ERR_IO);
    snprintf(want, sizeof want,
             "tcp %s: connection lost (closed by the peer); no "
             "reconnection within tcp.reconnect.timeout (1000 ms, 5 "
             "attempts, the last: Connection refused)",
             addr);
    ASSERT_STR_EQ(fx.vt->poll_error(fx.src), want);
    ASSERT_EQ(b->n, 0);
    tdm__batch_destroy(b);
    close_src(&fx);
}

/* Issue 18: tcp.reconnect.timeout 0 - a reset fails the source at once,
 * naming it (not "reading failed (input/output error)"). */
TDM_TEST(tcp_reset_without_reconnect_names_the_cause)
{
    src_fixture fx;
    char addr[64], want[256];
    int eof = 0, lfd = tcp_setup(&fx, addr, 0);
    close_reset(tcp_open_accept(&fx, lfd));
    tdm__batch *b = tdm__batch_new(&fx.schema, 8);
    tdm_err err = TDM_OK;
    for (int i = 0; i < 100 && err == TDM_OK; i++)
        err = fx.vt->poll(fx.src, b, 8, fx.finished, &eof);
    ASSERT_ERR(err, TDM_ERR_IO);
    snprintf(want, sizeof want,
             "tcp %s: connection lost (Connection reset by peer); not "
             "reconnecting (tcp.reconnect.timeout is 0)",
             addr);
    ASSERT_STR_EQ(fx.vt->poll_error(fx.src), want);
    tdm__batch_destroy(b);
    close_src(&fx);
    close(lfd);
}

/* Issue 18: a connect that hangs (the listener's accept queue is full,
 * so the kernel drops the SYN) fails after tcp.connect_timeout, saying
 * so rather than "Connection timed out". */
TDM_TEST(tcp_connect_timeout_names_the_cause)
{
    src_fixture fx;
    char addr[64], want[256];
    int lfd = tcp_setup(&fx, addr, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    int filler = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(listen(lfd, 0), 0);
    ASSERT_EQ(connect(filler, (struct sockaddr *)&a, sizeof a), 0);
    fx.conf.now = NULL; /* open() waits on the real clock */
    fx.conf.tcp_connect_timeout = 100;
    ASSERT_ERR(open_src(&fx, 0, 1), TDM_ERR_IO);
    snprintf(want, sizeof want,
             "cannot connect to %s: connect timed out after 100 ms", addr);
    ASSERT_STR_EQ(fx.err, want);
    close_src(&fx);
    close(filler);
    close(lfd);
}

/* ---- Generator ---- */

static void gen_conf(src_fixture *fx, int kind)
{
    conf_init(fx, tdm__generator_schema(kind), TDM__FMT_JSON, NULL);
    fx->conf.type = TDM__SRC_GENERATOR;
    fx->conf.gen_kind = kind;
    fx->conf.gen_records = 1000;
    fx->conf.gen_rate = 1000;
    fx->conf.gen_keys = 100;
    fx->conf.gen_partitions = 4;
    fx->conf.gen_seed = 1;
    fx->conf.gen_late_delay = 60000;
    fx->conf.gen_idle_partition = -1;
    fx->vt = &tdm__generator_source;
}

/* Generates everything of subtask @p index of @p count into @p out as
 * "user page ts" lines sorted later by the caller; returns rows. */
static int gen_all(src_fixture *fx, int index, int count, char **lines,
                   int max_lines, size_t poll_max)
{
    ASSERT_OK(open_src(fx, index, count));
    tdm__batch *b = tdm__batch_new(&fx->schema, 256);
    int eof = 0, n = 0;
    while (!eof) {
        tdm__batch_clear(b);
        ASSERT_OK(fx->vt->poll(fx->src, b, poll_max, fx->finished, &eof));
        for (size_t i = 0; i < b->n; i++) {
            const tdm__row *r = &b->rows[i];
            char buf[128];
            ASSERT_TRUE(n < max_lines);
            ASSERT_EQ(r->ts, r->v[2].u.i);
            if (fx->conf.gen_kind == TDM__GEN_SENSORS)
                snprintf(buf, sizeof buf, "%.*s %.2f %lld",
                         (int)r->v[0].u.s.len, r->v[0].u.s.p, r->v[1].u.d,
                         (long long)r->ts);
            else
                snprintf(buf, sizeof buf, "%.*s %.*s %lld",
                         (int)r->v[0].u.s.len, r->v[0].u.s.p,
                         (int)r->v[1].u.s.len, r->v[1].u.s.p, (long long)r->ts);
            lines[n++] = strdup(buf);
        }
    }
    tdm__batch_destroy(b);
    fx->vt->close(fx->src);
    fx->src = NULL;
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

TDM_TEST(generator_same_stream_at_any_parallelism)
{
    src_fixture fx;
    static char *one[1000], *many[1000];
    int n1, n2 = 0;
    gen_conf(&fx, TDM__GEN_CLICKS);
    fx.conf.gen_max_delay = 500;
    fx.conf.gen_late_fraction = 0.05;
    fx.conf.gen_skew = 1.2;
    n1 = gen_all(&fx, 0, 1, one, 1000, 64);
    ASSERT_EQ(n1, 1000);
    /* Three subtasks, odd poll sizes: the same multiset of records. */
    for (int s = 0; s < 3; s++)
        n2 += gen_all(&fx, s, 3, many + n2, 1000 - n2, 7);
    ASSERT_EQ(n2, 1000);
    qsort(one, 1000, sizeof *one, cmp_str);
    qsort(many, 1000, sizeof *many, cmp_str);
    for (int i = 0; i < 1000; i++) {
        ASSERT_STR_EQ(one[i], many[i]);
        free(one[i]);
        free(many[i]);
    }
    close_src(&fx);
}

TDM_TEST(generator_positions_partitions_and_finish)
{
    src_fixture fx;
    gen_conf(&fx, TDM__GEN_CLICKS);
    fx.conf.gen_records = 10;
    fx.conf.gen_rate = 4; /* 250 ms per record */
    fx.conf.gen_partitions = 3;
    /* Subtask 1 of 2 has partition 1 only: records 1, 4, 7 at positions
     * 250, 1000, 1750 ms after the epoch (no delays configured). */
    ASSERT_OK(open_src(&fx, 1, 2));
    ASSERT_EQ(fx.n_parts, 1);
    tdm__batch *b = tdm__batch_new(&fx.schema, 16);
    int eof = 0;
    ASSERT_OK(fx.vt->poll(fx.src, b, 16, fx.finished, &eof));
    ASSERT_EQ(eof, 1);
    ASSERT_EQ(fx.finished[0], 1);
    ASSERT_EQ(b->n, 3);
    ASSERT_EQ(b->rows[0].ts, TDM__GEN_EPOCH_MS + 250);
    ASSERT_EQ(b->rows[1].ts, TDM__GEN_EPOCH_MS + 1000);
    ASSERT_EQ(b->rows[2].ts, TDM__GEN_EPOCH_MS + 1750);
    for (int i = 0; i < 3; i++) {
        const tdm__row *r = &b->rows[i];
        ASSERT_EQ(r->partition, 0);
        ASSERT_TRUE(r->v[0].u.s.p[0] == 'u' && r->v[1].u.s.p[0] == 'p');
        /* Page "p<k % 50>" of user "u<k>" (k below 100 keys). */
        int k = atoi(r->v[0].u.s.p + 1), page = atoi(r->v[1].u.s.p + 1);
        ASSERT_TRUE(k >= 0 && k < 100);
        ASSERT_EQ(page, k % 50);
    }
    tdm__batch_destroy(b);
    close_src(&fx);
    /* Subtask 0 of 2: partitions 0 and 2, records 0 3 6 9 and 2 5 8. */
    gen_conf(&fx, TDM__GEN_CLICKS);
    fx.conf.gen_records = 10;
    fx.conf.gen_rate = 4;
    fx.conf.gen_partitions = 3;
    ASSERT_OK(open_src(&fx, 0, 2));
    ASSERT_EQ(fx.n_parts, 2);
    b = tdm__batch_new(&fx.schema, 16);
    ASSERT_OK(fx.vt->poll(fx.src, b, 16, fx.finished, &eof));
    ASSERT_EQ(b->n, 7);
    int64_t want[7] = {0, 2, 3, 5, 6, 8, 9};
    for (int i = 0; i < 7; i++) {
        ASSERT_EQ(b->rows[i].ts, TDM__GEN_EPOCH_MS + want[i] * 250);
        ASSERT_EQ(b->rows[i].partition, want[i] % 3 == 0 ? 0 : 1);
    }
    tdm__batch_destroy(b);
    close_src(&fx);
}

TDM_TEST(generator_idle_partition)
{
    src_fixture fx;
    gen_conf(&fx, TDM__GEN_SENSORS);
    fx.conf.gen_records = 20000;
    fx.conf.gen_rate = 1000; /* record i at position i ms, ts = position */
    fx.conf.gen_partitions = 2;
    fx.conf.gen_idle_partition = 1;
    fx.conf.gen_idle_from = 5000;
    fx.conf.gen_idle_for = 3000;
    ASSERT_OK(open_src(&fx, 0, 1));
    tdm__batch *b = tdm__batch_new(&fx.schema, 1024);
    int eof = 0, rows = 0, p1_in_gap = 0, p1_edges = 0;
    while (!eof) {
        tdm__batch_clear(b);
        ASSERT_OK(fx.vt->poll(fx.src, b, 1024, fx.finished, &eof));
        for (size_t k = 0; k < b->n; k++, rows++) {
            const tdm__row *r = &b->rows[k];
            int64_t off = r->ts - TDM__GEN_EPOCH_MS;
            double v = r->v[1].u.d;
            ASSERT_TRUE(v >= 0.0 && v < 40.0);
            ASSERT_TRUE(r->v[0].u.s.p[0] == 's');
            ASSERT_EQ(r->partition, off % 2);
            if (r->partition == 1 && off >= 5000 && off < 8000)
                p1_in_gap++;
            if (r->partition == 1 && (off == 4999 || off == 8001))
                p1_edges++;
        }
    }
    /* Partition 1 holds the odd records; the 1500 at positions 5000 to
     * 7999 are silenced, 4999 and 8001 are not. */
    ASSERT_EQ(rows, 20000 - 1500);
    ASSERT_EQ(p1_in_gap, 0);
    ASSERT_EQ(p1_edges, 2);
    tdm__batch_destroy(b);
    close_src(&fx);
}

TDM_TEST(generator_delay_bounds_and_late_fraction)
{
    src_fixture fx;
    gen_conf(&fx, TDM__GEN_CLICKS);
    fx.conf.gen_records = 20000;
    fx.conf.gen_rate = 1000;
    fx.conf.gen_partitions = 1;
    fx.conf.gen_max_delay = 100;
    fx.conf.gen_late_fraction = 0.1;
    fx.conf.gen_late_delay = 60000;
    ASSERT_OK(open_src(&fx, 0, 1));
    tdm__batch *b = tdm__batch_new(&fx.schema, 1024);
    int eof = 0, late = 0, zero = 0, full = 0;
    int64_t i = 0;
    while (!eof) {
        tdm__batch_clear(b);
        ASSERT_OK(fx.vt->poll(fx.src, b, 1024, fx.finished, &eof));
        for (size_t k = 0; k < b->n; k++, i++) {
            /* One partition: rows come in index order, position i ms. */
            int64_t d = TDM__GEN_EPOCH_MS + i - b->rows[k].ts;
            if (d >= 60000) {
                late++;
                d -= 60000;
            }
            ASSERT_TRUE(d >= 0 && d <= 100);
            zero += d == 0;
            full += d == 100;
        }
    }
    ASSERT_EQ(i, 20000);
    /* Binomial(20000, 0.1): mean 2000, sd ~42; 5 sd either way. */
    ASSERT_TRUE(late > 1790 && late < 2210);
    /* Both ends of uniform{0..100} occur (each ~198 times). */
    ASSERT_TRUE(zero > 100 && full > 100);
    tdm__batch_destroy(b);
    close_src(&fx);
}

TDM_TEST(generator_zipf_skew)
{
    src_fixture fx;
    gen_conf(&fx, TDM__GEN_CLICKS);
    fx.conf.gen_records = 50000;
    fx.conf.gen_keys = 10;
    fx.conf.gen_skew = 1.0;
    fx.conf.gen_partitions = 1;
    ASSERT_OK(open_src(&fx, 0, 1));
    tdm__batch *b = tdm__batch_new(&fx.schema, 1024);
    int eof = 0, count[10] = {0};
    while (!eof) {
        tdm__batch_clear(b);
        ASSERT_OK(fx.vt->poll(fx.src, b, 1024, fx.finished, &eof));
        for (size_t k = 0; k < b->n; k++) {
            int key = atoi(b->rows[k].v[0].u.s.p + 1);
            ASSERT_TRUE(key >= 0 && key < 10);
            count[key]++;
        }
    }
    /* P(k) = (1 / (k + 1)) / H(10), H(10) = 2.928968: P(0) = 0.3414,
     * P(1) = 0.1707, P(9) = 0.0341.  Expected counts 17071, 8536, 1707;
     * allow 5 standard deviations (~106, ~84, ~41). */
    ASSERT_TRUE(count[0] > 16540 && count[0] < 17600);
    ASSERT_TRUE(count[1] > 8116 && count[1] < 8956);
    ASSERT_TRUE(count[9] > 1502 && count[9] < 1912);
    tdm__batch_destroy(b);
    close_src(&fx);
}

TDM_TEST(generator_uniform_keys_and_seed)
{
    src_fixture fx;
    static char *a[500], *b[500];
    gen_conf(&fx, TDM__GEN_CLICKS);
    fx.conf.gen_records = 500;
    fx.conf.gen_keys = 3;
    ASSERT_EQ(gen_all(&fx, 0, 1, a, 500, 64), 500);
    fx.conf.gen_seed = 2;
    ASSERT_EQ(gen_all(&fx, 0, 1, b, 500, 64), 500);
    int differ = 0, seen[3] = {0};
    for (int i = 0; i < 500; i++) {
        differ += strcmp(a[i], b[i]) != 0;
        ASSERT_TRUE(a[i][0] == 'u' && a[i][1] >= '0' && a[i][1] <= '2' &&
                    a[i][2] == ' ');
        seen[a[i][1] - '0']++;
        free(a[i]);
        free(b[i]);
    }
    /* Another seed, another stream; every one of 3 keys is drawn. */
    ASSERT_TRUE(differ > 250);
    ASSERT_TRUE(seen[0] > 100 && seen[1] > 100 && seen[2] > 100);
    close_src(&fx);
}

/* Checks that @p v holds "<prefix><k>" with k written in decimal without
 * leading zeros and k < @p keys; returns k. */
static long name_number(const tdm__val *v, char prefix, long keys)
{
    ASSERT_TRUE(!v->null && v->u.s.len >= 2 && v->u.s.len <= 8);
    ASSERT_EQ(v->u.s.p[0], prefix);
    ASSERT_TRUE(v->u.s.len == 2 || v->u.s.p[1] != '0');
    long k = 0;
    for (uint32_t i = 1; i < v->u.s.len; i++) {
        ASSERT_TRUE(v->u.s.p[i] >= '0' && v->u.s.p[i] <= '9');
        k = k * 10 + (v->u.s.p[i] - '0');
    }
    ASSERT_TRUE(k < keys);
    return k;
}

/* Names are "u<k>" and "p<k % 50>" whether they come from the table of
 * pre-rendered names (up to 65536 keys) or are written digit by digit
 * (more keys), and also when the batch's arena is nearly full (the
 * string then goes through tdm__batch_set_string, which grows it).  Both
 * key counts are large enough that keys of 5 and 6 digits occur. */
TDM_TEST(generator_names_from_table_and_digits)
{
    static const long keys[] = {65536, 1000000};
    for (int t = 0; t < 2; t++) {
        src_fixture fx;
        gen_conf(&fx, TDM__GEN_CLICKS);
        fx.conf.gen_records = 3000;
        fx.conf.gen_keys = keys[t];
        ASSERT_OK(open_src(&fx, 0, 1));
        tdm__batch *b = tdm__batch_new(&fx.schema, 1024);
        int eof = 0, rows = 0, long_names = 0, polls = 0;
        while (!eof) {
            tdm__batch_clear(b);
            /* Every other poll starts with 3 free arena bytes. */
            if (polls++ % 2)
                b->arena_used = b->arena_cap - 3;
            ASSERT_OK(fx.vt->poll(fx.src, b, 1024, fx.finished, &eof));
            for (size_t i = 0; i < b->n; i++, rows++) {
                const tdm__row *r = &b->rows[i];
                long k = name_number(&r->v[0], 'u', keys[t]);
                long page = name_number(&r->v[1], 'p', 50);
                ASSERT_EQ(page, k % 50);
                long_names += r->v[0].u.s.len >= 6;
            }
        }
        ASSERT_EQ(rows, 3000);
        /* Uniform keys: about 85% (65536) or 99% (1 M) have 5 or more
         * digits; at least half, by a wide margin. */
        ASSERT_TRUE(long_names > 1500);
        tdm__batch_destroy(b);
        close_src(&fx);
    }
}

TDM_TEST(generator_rejects_wrong_field_types)
{
    src_fixture fx;
    gen_conf(&fx, TDM__GEN_CLICKS);
    tdm__schema_free(&fx.schema);
    ASSERT_OK(
        tdm__schema_parse("user:int64, ts:timestamp", &fx.schema, NULL, 0));
    ASSERT_ERR(open_src(&fx, 0, 1), TDM_ERR_INVAL);
    ASSERT_STR_EQ(fx.err, "generator field 'user' has the "
                          "wrong type");
    close_src(&fx);
}
