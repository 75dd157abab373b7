/* SPDX-License-Identifier: MIT */
/* test_sink_2pc.c - two-phase commit in the sinks (connect.h version 3):
 * the file sink's parts through pre_commit / commit / recover with a
 * crash after every step of a script (abandon, and SIGKILL in a forked
 * child at every file operation), ENOSPC at every write, fsync and
 * rename, the upsert table kept in the checkpoint, bad state blobs, two
 * writers side by side, and the Kafka sink's transaction calls (which
 * ids, in which order) through a recording shim over the mock cluster.
 * Expected output is built here from the rows the script writes and the
 * line format documented in text_sink.c, never read back from the sink.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "connect/conn.h"
#include "connect/kafka.h"
#include "core/fileio.h"
#include "harness.h"
#include "state/ckpt_codec.h"
#include "testhooks.h"

static char dir[128];

static void make_dir(void)
{
    strcpy(dir, "/tmp/tdm-2pc-XXXXXX");
    ASSERT_TRUE(mkdtemp(dir) != NULL);
}

static void remove_dir(void)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

/* ---- The script: epochs of rows, checkpoints, commits ---- */

#define EPOCHS 4
/* Rows per epoch (epoch 3 writes none). */
static const int rows_in[EPOCHS + 1] = {0, 3, 2, 0, 4};

typedef struct step {
    char op; /* 'W' write epoch n, 'P' pre_commit n, 'D' checkpoint n is
                durable, 'C' commit n */
    uint64_t n;
} step;

/* Epoch 4 is written before checkpoint 3 is durable, and commit 2 comes
 * after pre_commit 3 (a late notification). */
static const step script[] = {
    {'W', 1}, {'P', 1}, {'D', 1}, {'C', 1}, {'W', 2}, {'P', 2},
    {'D', 2}, {'W', 3}, {'P', 3}, {'C', 2}, {'W', 4}, {'D', 3},
    {'C', 3}, {'P', 4}, {'D', 4}, {'C', 4},
};
#define N_STEPS ((int)(sizeof script / sizeof script[0]))

/* The state of the run a test drives: the blobs of pre-committed
 * checkpoints and the last durable one (also kept in dir/ckpt.bin so a
 * parent process sees what its killed child made durable). */
typedef struct run {
    tdm__sinkobj *s;
    const tdm__sink_vtab *vt;
    uint8_t *blob[EPOCHS + 1];
    size_t blob_len[EPOCHS + 1];
    uint64_t durable; /* 0: none */
    char err[512];
} run;

static int64_t clock_ms;
/* Advances 300 ms per call, so about every second row is written out. */
static int64_t step_clock(void *ud)
{
    (void)ud;
    return clock_ms += 300;
}

static void sink_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* Opens writer @p writer of the file sink @p name as a run restored
 * from checkpoint @p restored (0: a fresh start) would. */
static tdm_err open_sink_at(run *r, const char *name, int format, int mode,
                            int writer, uint64_t restored)
{
    char path[256];
    tdm__sink_conf c = {0};
    sink_path(path, sizeof path, name);
    c.name = "out";
    c.type = TDM__SINK_FILE;
    c.path = path;
    c.format = format;
    c.now = step_clock;
    c.exactly_once = true;
    c.writer = writer;
    c.restored = restored;
    r->vt = &tdm__text_sink;
    return r->vt->open(&c, mode, &r->s, r->err, sizeof r->err);
}

static tdm_err open_sink(run *r, const char *name, int format, int mode,
                         int writer)
{
    return open_sink_at(r, name, format, mode, writer, 0);
}

/* The sink's version-4 calls on the configuration of @p name. */
static tdm_err supersede(const char *name, uint64_t first, uint64_t committed,
                         size_t *moved)
{
    char path[256], err[256];
    size_t m = 0;
    tdm__sink_conf c = {.name = "out", .type = TDM__SINK_FILE};
    sink_path(path, sizeof path, name);
    c.path = path;
    return tdm__text_sink.supersede(&c, first, committed, moved ? moved : &m,
                                    err, sizeof err);
}

/* finish() of the upsert file sink @p name: its table, compacted. */
static tdm_err finish_upsert(const char *name, int format)
{
    char path[256], err[256];
    tdm__sink_conf c = {.name = "out", .type = TDM__SINK_FILE};
    sink_path(path, sizeof path, name);
    c.path = path;
    c.format = format;
    return tdm__text_sink.finish(&c, 1, err, sizeof err);
}

/* The bytes of a file, NUL-terminated (malloc'ed). */
static char *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ASSERT_TRUE(f != NULL);
    char *p = calloc(1, 1 << 16);
    ASSERT_TRUE(p != NULL);
    *len = fread(p, 1, (1 << 16) - 1, f);
    fclose(f);
    return p;
}

static tdm_err parts_top(const char *name, uint64_t *top)
{
    char path[256], err[256];
    tdm__sink_conf c = {.name = "out", .type = TDM__SINK_FILE};
    sink_path(path, sizeof path, name);
    c.path = path;
    return tdm__text_sink.top(&c, top, err, sizeof err);
}

static void free_blobs(run *r)
{
    for (int i = 0; i <= EPOCHS; i++) {
        tdm__free(r->blob[i]);
        r->blob[i] = NULL;
    }
}

/* Stores checkpoint @p n as the durable one, atomically (plain stdio and
 * rename(2): not counted by the fault injection). */
static void make_durable(run *r, uint64_t n)
{
    char tmp[256], fin[256];
    sink_path(tmp, sizeof tmp, "ckpt.tmp");
    sink_path(fin, sizeof fin, "ckpt.bin");
    FILE *f = fopen(tmp, "wb");
    ASSERT_TRUE(f != NULL);
    ASSERT_TRUE(fwrite(&n, sizeof n, 1, f) == 1);
    ASSERT_TRUE(fwrite(r->blob[n], 1, r->blob_len[n], f) == r->blob_len[n]);
    ASSERT_EQ(fclose(f), 0);
    ASSERT_EQ(rename(tmp, fin), 0);
    r->durable = n;
}

/* Reads dir/ckpt.bin: the durable checkpoint id (0: none) and its blob
 * (*blob freed by the caller). */
static uint64_t load_durable(uint8_t **blob, size_t *len)
{
    char fin[256];
    static uint8_t buf[1 << 16];
    uint64_t n = 0;
    sink_path(fin, sizeof fin, "ckpt.bin");
    *blob = NULL;
    *len = 0;
    FILE *f = fopen(fin, "rb");
    if (!f)
        return 0;
    ASSERT_TRUE(fread(&n, sizeof n, 1, f) == 1);
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    *blob = tdm__memdup(buf, *len ? *len : 1);
    return n;
}

static tdm_err write_epoch(run *r, uint64_t n)
{
    char loc[32];
    for (int i = 0; i < rows_in[n]; i++) {
        snprintf(loc, sizeof loc, "e%dr%d", (int)n, i);
        tdm_err e = r->vt->write_dead(r->s, loc, "r", "x", 1);
        if (e != TDM_OK)
            return e;
    }
    return TDM_OK;
}

static tdm_err do_step(run *r, const step *st)
{
    tdm__enc e;
    tdm_err err = TDM_OK;

    switch (st->op) {
    case 'W':
        return write_epoch(r, st->n);
    case 'P':
        tdm__enc_init(&e);
        err = r->vt->pre_commit(r->s, st->n, &e, r->err, sizeof r->err);
        if (err == TDM_OK)
            err = tdm__enc_finish(&e, &r->blob[st->n], &r->blob_len[st->n]);
        else
            tdm__enc_free(&e);
        return err;
    case 'D':
        make_durable(r, st->n);
        return TDM_OK;
    default:
        return r->vt->commit(r->s, st->n, r->err, sizeof r->err);
    }
}

/* Runs steps [0, upto); stops at the first error and returns it. */
static tdm_err run_steps(run *r, int upto)
{
    for (int i = 0; i < upto; i++) {
        tdm_err err = do_step(r, &script[i]);
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* The rows of epochs 1..@p upto as the sink writes them (JSON lines, or
 * CSV with a header at the start of every non-empty part). */
static const char *expected(int upto, int format)
{
    static char buf[4096];
    size_t n = 0;
    buf[0] = '\0';
    for (int e = 1; e <= upto; e++) {
        if (format == TDM__FMT_CSV && rows_in[e] > 0)
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                                  "location,reason,raw\n");
        for (int i = 0; i < rows_in[e]; i++)
            n += (size_t)snprintf(
                buf + n, sizeof buf - n,
                format == TDM__FMT_CSV
                    ? "e%dr%d,r,x\n"
                    : "{\"location\":\"e%dr%d\",\"reason\":\"r\","
                      "\"raw\":\"x\"}\n",
                e, i);
    }
    return buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether @p file is a visible part "<name>.part-<10 digits>-<w>" of
 * writer @p w (spelled out here, not with the sink's own parser). */
static bool part_of(const char *file, const char *name, int w)
{
    char prefix[128], tail[32];
    size_t pl;
    snprintf(prefix, sizeof prefix, "%s.part-", name);
    snprintf(tail, sizeof tail, "-%d", w);
    pl = strlen(prefix);
    return strncmp(file, prefix, pl) == 0 &&
           strspn(file + pl, "0123456789") == 10 &&
           strcmp(file + pl + 10, tail) == 0;
}

/* The visible output of writer @p w in folder @p in: its parts in name
 * order, concatenated.  *hidden counts files starting with "." (a
 * pending or in-progress part). */
static const char *visible_in(const char *in, const char *name, int w,
                              int *hidden)
{
    static char buf[1 << 15];
    char *names[256];
    int n = 0;
    size_t len = 0;
    DIR *d = opendir(in);
    struct dirent *de;

    ASSERT_TRUE(d != NULL);
    if (hidden)
        *hidden = 0;
    while ((de = readdir(d)) != NULL) {
        if (hidden && de->d_name[0] == '.' && strcmp(de->d_name, ".") &&
            strcmp(de->d_name, ".."))
            (*hidden)++;
        if (part_of(de->d_name, name, w) && n < 256)
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", in, names[i]);
        FILE *f = fopen(path, "rb");
        ASSERT_TRUE(f != NULL);
        len += fread(buf + len, 1, sizeof buf - 1 - len, f);
        fclose(f);
        free(names[i]);
    }
    buf[len] = '\0';
    return buf;
}

/* visible_in() of the test's folder. */
static const char *visible(const char *name, int w, int *hidden)
{
    return visible_in(dir, name, w, hidden);
}

/* visible() for bigger outputs (writer 0; returns a malloc'ed buffer
 * kept until the next call). */
static const char *visible_big(const char *name)
{
    static char *buf;
    char cmd[512];
    size_t cap = 1 << 22, len = 0;
    free(buf);
    buf = malloc(cap);
    ASSERT_TRUE(buf != NULL);
    snprintf(cmd, sizeof cmd,
             "cat '%s'/%s.part-[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]"
             "[0-9]-0 2>/dev/null",
             dir, name);
    FILE *f = popen(cmd, "r");
    ASSERT_TRUE(f != NULL);
    len = fread(buf, 1, cap - 1, f);
    pclose(f);
    buf[len] = '\0';
    return buf;
}

/* True when the visible output is exactly epochs 1..c for some c. */
static bool whole_epochs(const char *got, int format)
{
    for (int c = 0; c <= EPOCHS; c++)
        if (strcmp(got, expected(c, format)) == 0)
            return true;
    return false;
}

/* After a crash: a new sink recovers from the durable checkpoint (or
 * starts fresh and, as the runtime does at its first durable checkpoint,
 * supersedes what the crashed run left: nothing of it was committed),
 * re-runs every epoch after it as an uninterrupted run would, closes;
 * the output must be every row exactly once, in order, and no hidden
 * file may be left. */
static void recover_and_finish(const char *name, int format)
{
    run r = {0};
    uint8_t *blob;
    size_t len;
    uint64_t m = load_durable(&blob, &len);
    tdm__dec d;
    int hidden = -1;

    if (open_sink(&r, name, format, 0, 0) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "open: %s", r.err);
    tdm__dec_init(&d, blob, len);
    if (r.vt->recover(r.s, m ? &d : NULL, r.err, sizeof r.err) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "recover: %s", r.err);
    if (!m && supersede(name, 100, 0, NULL) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "supersede: %s", r.err);
    /* The new run numbers its checkpoints on from 100 (a runtime may or
     * may not reuse the ids after the restored one; here it does not, so
     * what the crashed run left behind is not simply overwritten). */
    for (uint64_t e = m + 1; e <= EPOCHS; e++) {
        tdm__enc enc;
        tdm__enc_init(&enc);
        if (write_epoch(&r, e) != TDM_OK ||
            r.vt->pre_commit(r.s, 100 + e, &enc, r.err, sizeof r.err) !=
                TDM_OK ||
            r.vt->commit(r.s, 100 + e, r.err, sizeof r.err) != TDM_OK)
            tdm_test_fail(__FILE__, __LINE__, "epoch %d: %s", (int)e, r.err);
        tdm__enc_free(&enc);
    }
    if (r.vt->close(r.s, r.err, sizeof r.err) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "close: %s", r.err);
    ASSERT_STR_EQ(visible(name, 0, &hidden), expected(EPOCHS, format));
    ASSERT_EQ(hidden, 0);
    tdm__free(blob);
    free_blobs(&r);
}

static void clear_dir(void)
{
    remove_dir();
    ASSERT_EQ(mkdir(dir, 0777), 0);
}

/* ---- File sink ---- */

TDM_TEST(uninterrupted_run_is_every_row_once_in_order)
{
    for (int format = TDM__FMT_JSON; format <= TDM__FMT_CSV; format++) {
        run r = {0};
        int hidden = -1;
        char path[256];
        make_dir();
        ASSERT_OK(open_sink(&r, "out.jsonl", format, 0, 0));
        ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
        ASSERT_OK(run_steps(&r, N_STEPS));
        ASSERT_OK(r.vt->close(r.s, r.err, sizeof r.err));
        ASSERT_STR_EQ(visible("out.jsonl", 0, &hidden),
                      expected(EPOCHS, format));
        ASSERT_EQ(hidden, 0);
        /* Parts are named by checkpoint: epochs 1, 2 and 4 have rows. */
        sink_path(path, sizeof path, "out.jsonl.part-0000000002-0");
        ASSERT_EQ(access(path, F_OK), 0);
        sink_path(path, sizeof path, "out.jsonl.part-0000000003-0");
        ASSERT_TRUE(access(path, F_OK) != 0);
        sink_path(path, sizeof path, "out.jsonl");
        ASSERT_TRUE(access(path, F_OK) != 0);
        free_blobs(&r);
        remove_dir();
    }
}

TDM_TEST(nothing_visible_before_commit)
{
    run r = {0};
    int hidden = 0;
    make_dir();
    ASSERT_OK(open_sink(&r, "out.jsonl", TDM__FMT_JSON, 0, 0));
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    ASSERT_OK(run_steps(&r, 3)); /* W1 P1 D1 */
    ASSERT_STR_EQ(visible("out.jsonl", 0, &hidden), "");
    ASSERT_EQ(hidden, 1);               /* the pending part */
    ASSERT_OK(do_step(&r, &script[3])); /* C1 */
    ASSERT_STR_EQ(visible("out.jsonl", 0, &hidden), expected(1, TDM__FMT_JSON));
    ASSERT_EQ(hidden, 0);
    free_blobs(&r);
    r.vt->abandon(r.s);
    remove_dir();
}

TDM_TEST(commit_is_idempotent_and_ordered)
{
    run r = {0};
    make_dir();
    ASSERT_OK(open_sink(&r, "out.jsonl", TDM__FMT_JSON, 0, 0));
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    ASSERT_OK(write_epoch(&r, 1));
    ASSERT_OK(do_step(&r, &(step){'P', 1}));
    ASSERT_OK(write_epoch(&r, 2));
    ASSERT_OK(do_step(&r, &(step){'P', 2}));
    /* Checkpoint 1 only: epoch 2 stays hidden. */
    ASSERT_OK(r.vt->commit(r.s, 1, r.err, sizeof r.err));
    ASSERT_STR_EQ(visible("out.jsonl", 0, NULL), expected(1, TDM__FMT_JSON));
    ASSERT_OK(r.vt->commit(r.s, 1, r.err, sizeof r.err));
    ASSERT_OK(r.vt->commit(r.s, 2, r.err, sizeof r.err));
    ASSERT_OK(r.vt->commit(r.s, 2, r.err, sizeof r.err));
    ASSERT_STR_EQ(visible("out.jsonl", 0, NULL), expected(2, TDM__FMT_JSON));
    /* A pre_commit id not above the last is refused. */
    tdm__enc e;
    tdm__enc_init(&e);
    ASSERT_OK(write_epoch(&r, 4));
    ASSERT_OK(r.vt->pre_commit(r.s, 5, &e, r.err, sizeof r.err));
    ASSERT_ERR(r.vt->pre_commit(r.s, 5, &e, r.err, sizeof r.err),
               TDM_ERR_STATE);
    tdm__enc_free(&e);
    /* Close with a pending part not committed: reported, left for
     * recovery. */
    ASSERT_ERR(r.vt->close(r.s, r.err, sizeof r.err), TDM_ERR_STATE);
    ASSERT_TRUE(strstr(r.err, "1 parts not committed") != NULL);
    free_blobs(&r);
    remove_dir();
}

/* Crash (abandon: no flush, no close) after every prefix of the script,
 * then recover from the last durable checkpoint and finish. */
TDM_TEST(crash_after_every_step_then_recover_is_exactly_once)
{
    for (int format = TDM__FMT_JSON; format <= TDM__FMT_CSV; format++) {
        make_dir();
        for (int k = 0; k <= N_STEPS; k++) {
            run r = {0};
            ASSERT_OK(open_sink(&r, "out.jsonl", format, 0, 0));
            ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
            ASSERT_OK(run_steps(&r, k));
            r.vt->abandon(r.s);
            ASSERT_TRUE(whole_epochs(visible("out.jsonl", 0, NULL), format));
            free_blobs(&r);
            recover_and_finish("out.jsonl", format);
            clear_dir();
        }
        remove_dir();
    }
}

/* A second crash during recovery's own replay: crash again after every
 * replay step, recover again. */
TDM_TEST(crash_twice)
{
    make_dir();
    for (int k = 0; k <= N_STEPS; k += 3) {
        run r = {0};
        ASSERT_OK(open_sink(&r, "o.csv", TDM__FMT_CSV, 0, 0));
        ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
        ASSERT_OK(run_steps(&r, k));
        r.vt->abandon(r.s);
        free_blobs(&r);
        /* Second life: recover, write the next epoch, pre-commit, crash
         * before its checkpoint is durable. */
        uint8_t *blob;
        size_t len;
        uint64_t m = load_durable(&blob, &len);
        tdm__dec d;
        tdm__dec_init(&d, blob, len);
        run r2 = {0};
        ASSERT_OK(open_sink(&r2, "o.csv", TDM__FMT_CSV, 0, 0));
        ASSERT_OK(r2.vt->recover(r2.s, m ? &d : NULL, r2.err, sizeof r2.err));
        if (m < EPOCHS) {
            ASSERT_OK(write_epoch(&r2, m + 1));
            ASSERT_OK(do_step(&r2, &(step){'P', m + 1}));
        }
        r2.vt->abandon(r2.s);
        free_blobs(&r2);
        tdm__free(blob);
        recover_and_finish("o.csv", TDM__FMT_CSV);
        clear_dir();
    }
    remove_dir();
}

/* Restoring an older checkpoint than the newest committed one rolls the
 * visible output back to it: the replay then writes those epochs once. */
TDM_TEST(restore_of_an_older_checkpoint_rolls_back)
{
    run r = {0};
    make_dir();
    ASSERT_OK(open_sink(&r, "out.jsonl", TDM__FMT_JSON, 0, 0));
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    ASSERT_OK(run_steps(&r, N_STEPS));
    ASSERT_OK(r.vt->close(r.s, r.err, sizeof r.err));
    ASSERT_STR_EQ(visible("out.jsonl", 0, NULL),
                  expected(EPOCHS, TDM__FMT_JSON));
    make_durable(&r, 2); /* as if checkpoints 3 and 4 were unreadable */
    run x = {0};
    tdm__dec d;
    ASSERT_OK(open_sink(&x, "out.jsonl", TDM__FMT_JSON, 0, 0));
    tdm__dec_init(&d, r.blob[2], r.blob_len[2]);
    ASSERT_OK(x.vt->recover(x.s, &d, x.err, sizeof x.err));
    ASSERT_STR_EQ(visible("out.jsonl", 0, NULL), expected(2, TDM__FMT_JSON));
    x.vt->abandon(x.s);
    recover_and_finish("out.jsonl", TDM__FMT_JSON);
    free_blobs(&r);
    remove_dir();
}

/* SIGKILL just before the n-th file operation of each kind (in a forked
 * child running the whole script), for every n until the script ends
 * without reaching it: recovery then gives exactly the rows, once. */
TDM_TEST(kill_at_every_file_operation_then_recover)
{
    static const tdm__fio_op kinds[] = {TDM__FIO_OPEN, TDM__FIO_WRITE,
                                        TDM__FIO_FSYNC, TDM__FIO_RENAME,
                                        TDM__FIO_UNLINK};
    int kills = 0;
    make_dir();
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (long n = 1;; n++) {
            fflush(NULL);
            pid_t pid = fork();
            ASSERT_TRUE(pid >= 0);
            if (pid == 0) {
                run r = {0};
                tdm__fio_fault(kinds[k], n, TDM__FIO_KILL, 0);
                int bad =
                    open_sink(&r, "out.jsonl", TDM__FMT_JSON, 0, 0) != TDM_OK ||
                    r.vt->recover(r.s, NULL, r.err, sizeof r.err) != TDM_OK ||
                    run_steps(&r, N_STEPS) != TDM_OK ||
                    r.vt->close(r.s, r.err, sizeof r.err) != TDM_OK;
                _exit(bad ? 3 : 0);
            }
            int status = 0;
            ASSERT_EQ(waitpid(pid, &status, 0), pid);
            if (WIFEXITED(status)) {
                ASSERT_EQ(WEXITSTATUS(status), 0);
                ASSERT_STR_EQ(visible("out.jsonl", 0, NULL),
                              expected(EPOCHS, TDM__FMT_JSON));
                clear_dir();
                break;
            }
            ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
            kills++;
            ASSERT_TRUE(
                whole_epochs(visible("out.jsonl", 0, NULL), TDM__FMT_JSON));
            recover_and_finish("out.jsonl", TDM__FMT_JSON);
            clear_dir();
        }
    }
    /* Every kind was reached at least once, most several times. */
    ASSERT_TRUE(kills >= 15);
    remove_dir();
}

/* ENOSPC at the n-th write, fsync or rename: an error naming the path,
 * only whole committed epochs visible; after the fault is cleared, a new
 * sink recovers and the output is exact. */
TDM_TEST(enospc_at_every_operation_then_recover)
{
    static const tdm__fio_op kinds[] = {TDM__FIO_WRITE, TDM__FIO_FSYNC,
                                        TDM__FIO_RENAME, TDM__FIO_OPEN};
    int fired = 0;
    make_dir();
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (long n = 1;; n++) {
            run r = {0};
            ASSERT_OK(open_sink(&r, "out.jsonl", TDM__FMT_JSON, 0, 0));
            ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
            tdm__fio_fault(kinds[k], n, ENOSPC, 0);
            tdm_err err = run_steps(&r, N_STEPS);
            long hit = tdm__fio_fault_fired();
            tdm__fio_fault_clear();
            if (hit == 0) {
                ASSERT_OK(err);
                ASSERT_OK(r.vt->close(r.s, r.err, sizeof r.err));
                ASSERT_STR_EQ(visible("out.jsonl", 0, NULL),
                              expected(EPOCHS, TDM__FMT_JSON));
                free_blobs(&r);
                clear_dir();
                break;
            }
            fired++;
            ASSERT_TRUE(err != TDM_OK);
            /* A failed row write reports through the next call. */
            if (r.err[0] == '\0' || err != TDM_ERR_IO)
                (void)r.vt->flush(r.s, r.err, sizeof r.err);
            if (!strstr(r.err, dir) ||
                !strstr(r.err, "No space left on device"))
                tdm_test_fail(__FILE__, __LINE__, "message: %s", r.err);
            ASSERT_TRUE(
                whole_epochs(visible("out.jsonl", 0, NULL), TDM__FMT_JSON));
            r.vt->abandon(r.s);
            free_blobs(&r);
            recover_and_finish("out.jsonl", TDM__FMT_JSON);
            clear_dir();
        }
    }
    ASSERT_TRUE(fired >= 8);
    remove_dir();
}

/* A result for key @p page (upsert tests). */
typedef struct result {
    tdm__col cols[3];
    tdm__out_row row;
    char key[32];
} result;

static void make_result(result *r, const char *page, int64_t uv, double avg,
                        tdm_pane_timing timing, int64_t pane, bool update)
{
    memset(r, 0, sizeof *r);
    r->cols[0] = (tdm__col){.name = "page", .type = TDM_TYPE_STRING};
    r->cols[0].v.u.s.p = page;
    r->cols[0].v.u.s.len = (uint32_t)strlen(page);
    r->cols[1] = (tdm__col){.name = "uv", .type = TDM_TYPE_INT64};
    r->cols[1].v.u.i = uv;
    r->cols[2] = (tdm__col){.name = "avg", .type = TDM_TYPE_DOUBLE};
    r->cols[2].v.u.d = avg;
    r->row.cols = r->cols;
    r->row.n_cols = 3;
    r->row.n_key_cols = 1;
    r->row.has_window = 1;
    r->row.win_start = 0;
    r->row.win_end = 300000;
    r->row.timing = timing;
    r->row.pane_index = pane;
    r->row.is_update = update;
    r->row.change = TDM__CHANGE_UPDATE;
    snprintf(r->key, sizeof r->key, "%s@0", page);
    r->row.upsert_key = r->key;
    r->row.upsert_key_len = strlen(r->key);
}

static void put(run *r, const char *page, int64_t uv, double avg,
                tdm_pane_timing timing, int64_t pane, bool update)
{
    result x;
    make_result(&x, page, uv, avg, timing, pane, update);
    ASSERT_OK(r->vt->write_result(r->s, &x.row));
}

/* Upsert: the table is in the checkpoint; a crash after checkpoint 1
 * and a recovery give the table of an uninterrupted run. */
TDM_TEST(upsert_table_is_restored_from_the_checkpoint)
{
    run r = {0};
    char path[256];
    FILE *f;
    static char buf[4096];
    make_dir();
    ASSERT_OK(open_sink(&r, "up.csv", TDM__FMT_CSV, 1, 0));
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    put(&r, "p1", 3, 1.0, TDM_PANE_ON_TIME, 0, false);
    put(&r, "p2", 1, 5.0, TDM_PANE_ON_TIME, 0, false);
    ASSERT_OK(do_step(&r, &(step){'P', 1}));
    make_durable(&r, 1);
    ASSERT_OK(r.vt->commit(r.s, 1, r.err, sizeof r.err));
    put(&r, "p1", 5, 1.5, TDM_PANE_LATE, 1, true); /* lost in the crash */
    r.vt->abandon(r.s);
    free_blobs(&r);

    run r2 = {0};
    uint8_t *blob;
    size_t len;
    tdm__dec d;
    ASSERT_EQ(load_durable(&blob, &len), 1);
    tdm__dec_init(&d, blob, len);
    ASSERT_OK(open_sink(&r2, "up.csv", TDM__FMT_CSV, 1, 0));
    ASSERT_OK(r2.vt->recover(r2.s, &d, r2.err, sizeof r2.err));
    put(&r2, "p1", 5, 1.5, TDM_PANE_LATE, 1, true); /* the replay */
    put(&r2, "p3", 2, 2.0, TDM_PANE_ON_TIME, 0, false);
    ASSERT_OK(do_step(&r2, &(step){'P', 2}));
    ASSERT_OK(r2.vt->commit(r2.s, 2, r2.err, sizeof r2.err));
    ASSERT_OK(r2.vt->close(r2.s, r2.err, sizeof r2.err));
    sink_path(path, sizeof path, "up.csv");
    ASSERT_TRUE(access(path, F_OK) != 0); /* written by finish() */
    ASSERT_OK(finish_upsert("up.csv", TDM__FMT_CSV));
    f = fopen(path, "rb");
    ASSERT_TRUE(f != NULL);
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    ASSERT_STR_EQ(buf,
                  "page,uv,avg,window_start,window_end,timing,pane,update\n"
                  "p1,5,1.5,0,300000,late,1,true\n"
                  "p2,1,5.0,0,300000,on_time,0,false\n"
                  "p3,2,2.0,0,300000,on_time,0,false\n");
    /* Checkpoints hold part ids, not the table: the same few bytes. */
    ASSERT_EQ(r2.blob_len[2], r.blob_len[1]);
    tdm__free(blob);
    free_blobs(&r2);
    remove_dir();
}

/* A checkpoint of an older tidemark holds an upsert sink's table (kind
 * 1): restored into the changelog, it reaches the table at the end. */
TDM_TEST(upsert_table_of_an_older_checkpoint_is_restored)
{
    run r = {0};
    tdm__enc e;
    uint8_t *blob = NULL;
    size_t len = 0;
    tdm__dec d;
    char path[256];
    make_dir();
    tdm__enc_init(&e);
    tdm__enc_begin(&e, TDM__CKPT_TAG_FILE_SINK);
    tdm__enc_uvar(&e, 1); /* version */
    tdm__enc_uvar(&e, 0); /* writer */
    tdm__enc_uvar(&e, 2); /* checkpoint */
    tdm__enc_u8(&e, 1);   /* kind: the table */
    tdm__enc_u8(&e, 0);   /* no header */
    tdm__enc_uvar(&e, 2);
    tdm__enc_u8(&e, 1);
    tdm__enc_bytes(&e, "k1", 2);
    tdm__enc_bytes(&e, "{\"a\":1}\n", 8);
    tdm__enc_u8(&e, 3); /* keyed and retracted */
    tdm__enc_bytes(&e, "k2", 2);
    tdm__enc_bytes(&e, "{\"a\":2}\n", 8);
    tdm__enc_end(&e);
    ASSERT_OK(tdm__enc_finish(&e, &blob, &len));
    ASSERT_OK(open_sink(&r, "up.jsonl", TDM__FMT_JSON, 1, 0));
    tdm__dec_init(&d, blob, len);
    ASSERT_OK(r.vt->recover(r.s, &d, r.err, sizeof r.err));
    ASSERT_OK(do_step(&r, &(step){'P', 3}));
    ASSERT_OK(r.vt->commit(r.s, 3, r.err, sizeof r.err));
    ASSERT_OK(r.vt->close(r.s, r.err, sizeof r.err));
    ASSERT_OK(finish_upsert("up.jsonl", TDM__FMT_JSON));
    sink_path(path, sizeof path, "up.jsonl");
    size_t got = 0;
    char *text = slurp_file(path, &got);
    ASSERT_STR_EQ(text, "{\"a\":1}\n");
    free(text);
    tdm__free(blob);
    free_blobs(&r);
    remove_dir();
}

/* Every truncation and every flipped byte of a state blob is refused
 * with TDM_ERR_PARSE naming an offset (or, when a flip still decodes,
 * handled without a crash). */
static void mangle(const uint8_t *blob, size_t len, const char *name, int mode)
{
    static uint8_t copy[1 << 14];
    char msg[512];
    ASSERT_TRUE(len <= sizeof copy);
    for (size_t cut = 0; cut < len; cut++) {
        run x = {0};
        tdm__dec d;
        ASSERT_OK(open_sink(&x, name, TDM__FMT_JSON, mode, 0));
        tdm__dec_init(&d, blob, cut);
        tdm_err e = x.vt->recover(x.s, &d, msg, sizeof msg);
        ASSERT_EQ(e, TDM_ERR_PARSE);
        ASSERT_TRUE(strstr(msg, "offset") != NULL);
        x.vt->abandon(x.s);
    }
    for (size_t i = 0; i < len; i++) {
        run x = {0};
        tdm__dec d;
        memcpy(copy, blob, len);
        copy[i] ^= 0xFF;
        ASSERT_OK(open_sink(&x, name, TDM__FMT_JSON, mode, 0));
        tdm__dec_init(&d, copy, len);
        tdm_err e = x.vt->recover(x.s, &d, msg, sizeof msg);
        ASSERT_TRUE(e == TDM_OK || e == TDM_ERR_PARSE || e == TDM_ERR_IO);
        if (e == TDM_ERR_PARSE)
            ASSERT_TRUE(strstr(msg, "offset") != NULL);
        x.vt->abandon(x.s);
    }
}

TDM_TEST(bad_state_is_a_parse_error)
{
    run r = {0};
    make_dir();
    ASSERT_OK(open_sink(&r, "out.jsonl", TDM__FMT_JSON, 0, 0));
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    ASSERT_OK(run_steps(&r, 6)); /* checkpoint 2 with part 2 pending */
    mangle(r.blob[2], r.blob_len[2], "out.jsonl", 0);
    /* Another writer's state, and append state for an upsert sink. */
    run x = {0};
    tdm__dec d;
    ASSERT_OK(open_sink(&x, "out.jsonl", TDM__FMT_JSON, 0, 1));
    tdm__dec_init(&d, r.blob[2], r.blob_len[2]);
    ASSERT_ERR(x.vt->recover(x.s, &d, x.err, sizeof x.err), TDM_ERR_PARSE);
    ASSERT_TRUE(strstr(x.err, "another writer") != NULL);
    x.vt->abandon(x.s);
    ASSERT_OK(open_sink(&x, "out.jsonl", TDM__FMT_JSON, 1, 0));
    tdm__dec_init(&d, r.blob[2], r.blob_len[2]);
    ASSERT_ERR(x.vt->recover(x.s, &d, x.err, sizeof x.err), TDM_ERR_PARSE);
    x.vt->abandon(x.s);
    r.vt->abandon(r.s);
    free_blobs(&r);

    /* An upsert table's blob. */
    run u = {0};
    ASSERT_OK(open_sink(&u, "up.jsonl", TDM__FMT_JSON, 1, 0));
    put(&u, "p1", 3, 1.0, TDM_PANE_ON_TIME, 0, false);
    put(&u, "p2", 1, 5.0, TDM_PANE_ON_TIME, 0, false);
    ASSERT_OK(do_step(&u, &(step){'P', 1}));
    mangle(u.blob[1], u.blob_len[1], "up.jsonl", 1);
    u.vt->abandon(u.s);
    free_blobs(&u);
    remove_dir();
}

/* Two writers of one sink keep separate parts.  A fresh start deletes
 * none of them (only the runtime's supersede at its first durable
 * checkpoint moves them aside, whole); a writer restored from a
 * checkpoint that did not have it removes only its parts above that
 * checkpoint; other files there are never touched. */
TDM_TEST(writers_keep_separate_parts)
{
    run a = {0}, b = {0};
    char other[256];
    make_dir();
    sink_path(other, sizeof other, "out.jsonl.part-x");
    FILE *f = fopen(other, "w");
    ASSERT_TRUE(f != NULL);
    fclose(f);
    ASSERT_OK(open_sink(&a, "out.jsonl", TDM__FMT_JSON, 0, 0));
    ASSERT_OK(open_sink(&b, "out.jsonl", TDM__FMT_JSON, 0, 1));
    ASSERT_OK(a.vt->recover(a.s, NULL, a.err, sizeof a.err));
    ASSERT_OK(b.vt->recover(b.s, NULL, b.err, sizeof b.err));
    ASSERT_OK(run_steps(&a, N_STEPS));
    ASSERT_OK(write_epoch(&b, 2));
    ASSERT_OK(do_step(&b, &(step){'P', 1}));
    ASSERT_OK(b.vt->commit(b.s, 1, b.err, sizeof b.err));
    ASSERT_OK(a.vt->close(a.s, a.err, sizeof a.err));
    ASSERT_OK(b.vt->close(b.s, b.err, sizeof b.err));
    ASSERT_STR_EQ(visible("out.jsonl", 0, NULL),
                  expected(EPOCHS, TDM__FMT_JSON));
    ASSERT_STR_EQ(visible("out.jsonl", 1, NULL),
                  "{\"location\":\"e2r0\",\"reason\":\"r\",\"raw\":\"x\"}\n"
                  "{\"location\":\"e2r1\",\"reason\":\"r\",\"raw\":\"x\"}\n");
    const char *w1 = "{\"location\":\"e2r0\",\"reason\":\"r\",\"raw\":\"x\"}\n"
                     "{\"location\":\"e2r1\",\"reason\":\"r\",\"raw\":\"x\"}\n";
    /* Writer 1 restored from checkpoint 1 that did not have it (the
     * restored run had one writer): its part of checkpoint 1 stays. */
    run c = {0};
    ASSERT_OK(open_sink_at(&c, "out.jsonl", TDM__FMT_JSON, 0, 1, 1));
    ASSERT_OK(c.vt->recover(c.s, NULL, c.err, sizeof c.err));
    ASSERT_OK(c.vt->close(c.s, c.err, sizeof c.err));
    ASSERT_STR_EQ(visible("out.jsonl", 1, NULL), w1);
    ASSERT_OK(open_sink(&c, "out.jsonl", TDM__FMT_JSON, 0, 1));
    /* Writer 1 starts afresh (no checkpoint): nothing goes. */
    ASSERT_OK(c.vt->recover(c.s, NULL, c.err, sizeof c.err));
    ASSERT_OK(c.vt->close(c.s, c.err, sizeof c.err));
    ASSERT_STR_EQ(visible("out.jsonl", 1, NULL), w1);
    ASSERT_STR_EQ(visible("out.jsonl", 0, NULL),
                  expected(EPOCHS, TDM__FMT_JSON));
    /* The fresh lineage's first checkpoint is 100: both writers' parts
     * move aside, whole and still visible there. */
    size_t moved = 0;
    char aside[256];
    ASSERT_OK(supersede("out.jsonl", 100, 4, &moved));
    ASSERT_EQ(moved, 4);
    ASSERT_STR_EQ(visible("out.jsonl", 0, NULL), "");
    ASSERT_STR_EQ(visible("out.jsonl", 1, NULL), "");
    sink_path(aside, sizeof aside, "out.jsonl.replaced-0000000100");
    ASSERT_STR_EQ(visible_in(aside, "out.jsonl", 0, NULL),
                  expected(EPOCHS, TDM__FMT_JSON));
    ASSERT_STR_EQ(visible_in(aside, "out.jsonl", 1, NULL), w1);
    ASSERT_OK(supersede("out.jsonl", 100, 4, &moved)); /* idempotent */
    ASSERT_EQ(moved, 0);
    uint64_t top = 0;
    ASSERT_OK(parts_top("out.jsonl", &top));
    ASSERT_EQ(top, 100); /* new ids go above the folder's */
    ASSERT_EQ(access(other, F_OK), 0);
    free_blobs(&a);
    free_blobs(&b);
    remove_dir();
}

/* A checkpoint taken by an older tidemark lists a pending part under
 * its writer-first name ("part-<w>-<id>"): recovery finds it and
 * publishes it under the current name, so an upgrade loses nothing. */
TDM_TEST(pending_part_of_an_older_name_is_published)
{
    run r = {0}, n = {0};
    char from[256], to[256];
    tdm__dec d;
    make_dir();
    ASSERT_OK(open_sink(&r, "out.jsonl", TDM__FMT_JSON, 0, 0));
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    ASSERT_OK(write_epoch(&r, 1));
    ASSERT_OK(do_step(&r, &(step){'P', 1}));
    r.vt->abandon(r.s);
    sink_path(from, sizeof from, ".out.jsonl.part-0000000001-0.pending");
    sink_path(to, sizeof to, ".out.jsonl.part-0-0000000001.pending");
    ASSERT_EQ(rename(from, to), 0);
    ASSERT_OK(open_sink(&n, "out.jsonl", TDM__FMT_JSON, 0, 0));
    tdm__dec_init(&d, r.blob[1], r.blob_len[1]);
    ASSERT_OK(n.vt->recover(n.s, &d, n.err, sizeof n.err));
    ASSERT_OK(n.vt->close(n.s, n.err, sizeof n.err));
    ASSERT_STR_EQ(visible("out.jsonl", 0, NULL), expected(1, TDM__FMT_JSON));
    ASSERT_TRUE(access(to, F_OK) != 0);
    free_blobs(&r);
    remove_dir();
}

/* Several threads write while another pre-commits and commits: every
 * row ends up visible once, whole, each thread's rows in its order. */
#define THREADS 4
#define PER_THREAD 3000

static void *writer_thread(void *arg)
{
    run *r = ((void **)arg)[0];
    int t = (int)(intptr_t)((void **)arg)[1];
    char loc[32];
    for (int i = 0; i < PER_THREAD; i++) {
        snprintf(loc, sizeof loc, "t%d-%d", t, i);
        if (r->vt->write_dead(r->s, loc, "r", "x", 1) != TDM_OK)
            return (void *)1;
    }
    return NULL;
}

TDM_TEST(concurrent_writes_and_checkpoints)
{
    run r = {0};
    pthread_t th[THREADS];
    void *args[THREADS][2];
    make_dir();
    ASSERT_OK(open_sink(&r, "out.jsonl", TDM__FMT_JSON, 0, 0));
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    for (int t = 0; t < THREADS; t++) {
        args[t][0] = &r;
        args[t][1] = (void *)(intptr_t)t;
        ASSERT_EQ(pthread_create(&th[t], NULL, writer_thread, args[t]), 0);
    }
    uint64_t id = 0;
    for (int k = 0; k < 50; k++) {
        tdm__enc e;
        tdm__enc_init(&e);
        ASSERT_OK(r.vt->pre_commit(r.s, ++id, &e, r.err, sizeof r.err));
        tdm__enc_free(&e);
        if (k % 3 == 0)
            ASSERT_OK(r.vt->commit(r.s, id, r.err, sizeof r.err));
    }
    for (int t = 0; t < THREADS; t++) {
        void *ret;
        ASSERT_EQ(pthread_join(th[t], &ret), 0);
        ASSERT_TRUE(ret == NULL);
    }
    tdm__enc e;
    tdm__enc_init(&e);
    ASSERT_OK(r.vt->pre_commit(r.s, ++id, &e, r.err, sizeof r.err));
    tdm__enc_free(&e);
    ASSERT_OK(r.vt->commit(r.s, id, r.err, sizeof r.err));
    ASSERT_OK(r.vt->close(r.s, r.err, sizeof r.err));
    /* Walk the lines: each must be a whole row, the next of its thread. */
    int next[THREADS] = {0};
    const char *p = visible_big("out.jsonl");
    while (*p) {
        int t = -1, i = -1, used = 0;
        ASSERT_EQ(sscanf(p,
                         "{\"location\":\"t%d-%d\",\"reason\":\"r\","
                         "\"raw\":\"x\"}\n%n",
                         &t, &i, &used),
                  2);
        ASSERT_TRUE(used > 0 && t >= 0 && t < THREADS);
        ASSERT_EQ(i, next[t]);
        next[t]++;
        p += used;
    }
    for (int t = 0; t < THREADS; t++)
        ASSERT_EQ(next[t], PER_THREAD);
    remove_dir();
}

/* stdout stays at-least-once: pre_commit flushes and records nothing. */
TDM_TEST(stdout_has_no_transaction_state)
{
    tdm__sink_conf c = {0};
    tdm__sinkobj *s = NULL;
    char err[256];
    tdm__enc e;
    uint8_t *out = NULL;
    size_t len = 99;
    c.name = "out";
    c.type = TDM__SINK_STDOUT;
    c.format = TDM__FMT_JSON;
    c.exactly_once = true;
    ASSERT_OK(tdm__text_sink.open(&c, 0, &s, err, sizeof err));
    ASSERT_OK(tdm__text_sink.recover(s, NULL, err, sizeof err));
    tdm__enc_init(&e);
    ASSERT_OK(tdm__text_sink.pre_commit(s, 1, &e, err, sizeof err));
    ASSERT_OK(tdm__text_sink.commit(s, 1, err, sizeof err));
    ASSERT_OK(tdm__enc_finish(&e, &out, &len));
    ASSERT_EQ(len, 0);
    tdm__free(out);
    ASSERT_OK(tdm__text_sink.close(s, err, sizeof err));
}

/* ---- Kafka sink: the transaction calls ---- */

static char calls[4096];

static void note_call(const char *what, rd_kafka_t *rk)
{
    char id[256];
    size_t n = sizeof id;
    if (rd_kafka_conf_get(rd_kafka_conf(rk), "transactional.id", id, &n) !=
        RD_KAFKA_CONF_OK)
        snprintf(id, sizeof id, "?");
    size_t len = strlen(calls);
    snprintf(calls + len, sizeof calls - len, "%s %s\n", what, id);
}

static rd_kafka_error_t *shim_init(rd_kafka_t *rk, int ms)
{
    note_call("init", rk);
    return rd_kafka_init_transactions(rk, ms);
}

static rd_kafka_error_t *shim_begin(rd_kafka_t *rk)
{
    note_call("begin", rk);
    return rd_kafka_begin_transaction(rk);
}

static rd_kafka_error_t *shim_commit(rd_kafka_t *rk, int ms)
{
    note_call("commit", rk);
    return rd_kafka_commit_transaction(rk, ms);
}

static rd_kafka_error_t *shim_abort(rd_kafka_t *rk, int ms)
{
    note_call("abort", rk);
    return rd_kafka_abort_transaction(rk, ms);
}

static rd_kafka_error_t *
shim_send_offsets(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *l,
                  const rd_kafka_consumer_group_metadata_t *md, int ms)
{
    char what[64];
    /* The marker: offset = the epoch committed, on partition 0. */
    snprintf(what, sizeof what, "mark %lld",
             l->cnt == 1 && l->elems[0].partition == 0
                 ? (long long)l->elems[0].offset
                 : -2LL);
    note_call(what, rk);
    return rd_kafka_send_offsets_to_transaction(rk, l, md, ms);
}

static const tdm__kk_txn_ops shim = {shim_init, shim_begin, shim_commit,
                                     shim_abort, shim_send_offsets};

static tdm_err open_kafka(run *r)
{
    static const char *const props[] = {"test.mock.num.brokers", "1",
                                        "transaction.timeout.ms", "10000"};
    tdm__sink_conf c = {0};
    c.name = "k";
    c.type = TDM__SINK_KAFKA;
    c.kafka_topic = "results";
    c.kafka_props = props;
    c.kafka_n_props = 2;
    c.exactly_once = true;
    c.writer = 2;
    c.job_name = "j";
    c.kafka_txn_ops = &shim;
    r->vt = &tdm__kafka_sink;
    return r->vt->open(&c, 0, &r->s, r->err, sizeof r->err);
}

TDM_TEST(kafka_transaction_protocol)
{
    run r = {0};
    make_dir(); /* the script's durable checkpoints go there */
    calls[0] = '\0';
    ASSERT_OK(open_kafka(&r));
    ASSERT_STR_EQ(calls, ""); /* the producer comes with recover */
    /* A fresh start fences older producers and resets the marker. */
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    ASSERT_STR_EQ(calls, "init tidemark-j-k-2\nbegin tidemark-j-k-2\n"
                         "mark 0 tidemark-j-k-2\ncommit tidemark-j-k-2\n");
    calls[0] = '\0';
    if (run_steps(&r, N_STEPS) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "script: %s", r.err);
    /* Nothing is produced before a commit: each commit runs one
     * transaction per pending epoch with rows, marked with its id;
     * epoch 3 has no rows and so no transaction. */
    ASSERT_STR_EQ(calls, "begin tidemark-j-k-2\nmark 1 tidemark-j-k-2\n"
                         "commit tidemark-j-k-2\n" /* C1 */
                         "begin tidemark-j-k-2\nmark 2 tidemark-j-k-2\n"
                         "commit tidemark-j-k-2\n" /* C2 */
                         "begin tidemark-j-k-2\nmark 4 tidemark-j-k-2\n"
                         "commit tidemark-j-k-2\n" /* C4 */);
    /* Two epochs pending at once: one commit runs both, oldest first;
     * a repeated commit runs nothing. */
    calls[0] = '\0';
    tdm__enc e;
    tdm__enc_init(&e);
    ASSERT_OK(write_epoch(&r, 1));
    ASSERT_OK(r.vt->pre_commit(r.s, 5, &e, r.err, sizeof r.err));
    ASSERT_OK(write_epoch(&r, 2));
    ASSERT_OK(r.vt->pre_commit(r.s, 6, &e, r.err, sizeof r.err));
    ASSERT_STR_EQ(calls, "");
    ASSERT_ERR(r.vt->pre_commit(r.s, 6, &e, r.err, sizeof r.err),
               TDM_ERR_STATE);
    ASSERT_OK(write_epoch(&r, 4));
    ASSERT_OK(r.vt->commit(r.s, 6, r.err, sizeof r.err));
    ASSERT_OK(r.vt->commit(r.s, 6, r.err, sizeof r.err)); /* idempotent */
    ASSERT_STR_EQ(calls, "begin tidemark-j-k-2\nmark 5 tidemark-j-k-2\n"
                         "commit tidemark-j-k-2\n"
                         "begin tidemark-j-k-2\nmark 6 tidemark-j-k-2\n"
                         "commit tidemark-j-k-2\n");
    /* Close with epoch 7's rows not pre-committed: discarded (never
     * produced) and reported. */
    calls[0] = '\0';
    ASSERT_ERR(r.vt->close(r.s, r.err, sizeof r.err), TDM_ERR_STATE);
    ASSERT_STR_EQ(calls, "");
    tdm__enc_free(&e);
    free_blobs(&r);
    remove_dir();
}

TDM_TEST(kafka_recover_fences_and_validates)
{
    run r = {0};
    tdm__dec d;
    make_dir();
    calls[0] = '\0';
    ASSERT_OK(open_kafka(&r));
    ASSERT_OK(r.vt->recover(r.s, NULL, r.err, sizeof r.err));
    ASSERT_OK(run_steps(&r, 6)); /* checkpoint 2 pre-committed */
    r.vt->abandon(r.s);          /* crash before its commit */
    calls[0] = '\0';
    run r2 = {0};
    ASSERT_OK(open_kafka(&r2));
    tdm__dec_init(&d, r.blob[2], r.blob_len[2]);
    /* Epoch 2 is in the state and not marked committed (each mock
     * client here has a cluster of its own, so the marker reads as
     * never written): it is produced by recover. */
    if (r2.vt->recover(r2.s, &d, r2.err, sizeof r2.err) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "recover: %s", r2.err);
    ASSERT_STR_EQ(calls, "init tidemark-j-k-2\nbegin tidemark-j-k-2\n"
                         "mark 2 tidemark-j-k-2\ncommit tidemark-j-k-2\n");
    ASSERT_OK(r2.vt->close(r2.s, r2.err, sizeof r2.err));
    /* Truncations are parse errors naming an offset. */
    for (size_t cut = 0; cut < r.blob_len[2]; cut++) {
        run x = {0};
        ASSERT_OK(open_kafka(&x));
        tdm__dec_init(&d, r.blob[2], cut);
        ASSERT_ERR(x.vt->recover(x.s, &d, x.err, sizeof x.err), TDM_ERR_PARSE);
        ASSERT_TRUE(strstr(x.err, "offset") != NULL);
        x.vt->abandon(x.s);
    }
    free_blobs(&r);
    remove_dir();
}
