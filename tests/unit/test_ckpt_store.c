/* SPDX-License-Identifier: MIT */
/* test_ckpt_store.c - the checkpoint directory (src/state/ckpt_store.c):
 * write/read round trips, retention (savepoints kept), a torn newest
 * checkpoint in every way we can tear it (truncated blob or manifest, any
 * one byte flipped, a blob or the manifest deleted) falling back to the
 * previous one with the reason logged, stray temporary directories, two
 * writers, and disk full: the n-th write, fsync, rename, open or mkdir
 * failing with ENOSPC for n = 1, 2, ... until a commit needs fewer, and
 * a writer process killed (SIGKILL) just before its n-th operation of
 * each kind.
 * Files are inspected and damaged with plain POSIX calls, not the code
 * under test; expected blob bytes come from a generator of their own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "core.h"
#include "core/fileio.h"
#include "state/ckpt_store.h"
#include "testhooks.h"

/* ---- Helpers ---- */

typedef struct logbuf {
    char text[16384];
    int lines;
} logbuf;

static void log_cb(void *opaque, uint64_t id, const char *msg)
{
    logbuf *lb = opaque;
    size_t used = strlen(lb->text);
    snprintf(lb->text + used, sizeof lb->text - used, "%llu|%s\n",
             (unsigned long long)id, msg);
    lb->lines++;
}

static void log_reset(logbuf *lb)
{
    lb->text[0] = 0;
    lb->lines = 0;
}

typedef struct fixture {
    char root[64]; /* mkdtemp */
    char dir[128]; /* the checkpoint directory, root/ck/a (made by open) */
    logbuf log;
} fixture;

static void fx_init(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    tdm__fio_fault_clear();
    snprintf(fx->root, sizeof fx->root, "/tmp/tdm-ckpt-XXXXXX");
    ASSERT_TRUE(mkdtemp(fx->root) != NULL);
    snprintf(fx->dir, sizeof fx->dir, "%s/ck/a", fx->root);
}

static void fx_done(fixture *fx)
{
    tdm__fio_fault_clear();
    ASSERT_OK(tdm__fio_remove_tree(fx->root, NULL, NULL, 0));
}

static tdm__ckpt_store *fx_open(fixture *fx, int mode)
{
    tdm__ckpt_store *st;
    char err[512];
    tdm_err rc = tdm__ckpt_store_open(fx->dir, mode, log_cb, &fx->log, &st, err,
                                      sizeof err);
    if (rc != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "open: %s", err);
    return st;
}

/* The deterministic content of blob @p which of checkpoint @p id. */
static size_t blob_bytes(uint64_t id, int which, uint8_t *out, size_t cap)
{
    size_t n = which == 0 ? 300 + (size_t)id : which == 1 ? 150000 : 0;
    uint32_t x = (uint32_t)(id * 2654435761u + (uint32_t)which * 40503u);
    for (size_t i = 0; i < n && i < cap; i++) {
        x = x * 1103515245u + 12345u;
        out[i] = (uint8_t)(x >> 16);
    }
    return n;
}

static const char *const blob_names[3] = {"state-a", "source.offsets", "empty"};
static uint8_t gen_buf[200000];

/* Writes checkpoint @p id: blob 0 with put, blob 1 streamed in uneven
 * pieces, blob 2 empty.  Returns the first error (the store's message
 * in @p err). */
static tdm_err write_ckpt(tdm__ckpt_store *st, uint64_t id, tdm__ckpt_kind kind,
                          char *err, size_t n)
{
    tdm__ckpt_info info = {.id = id,
                           .kind = kind,
                           .job = "clicks",
                           .created_ms = 1700000000000 + (int64_t)id,
                           .parallelism = 2,
                           .key_groups = 128,
                           .meta = "m",
                           .meta_len = 1};
    tdm_err rc = tdm__ckpt_begin(st, &info);
    if (rc != TDM_OK)
        goto out;
    size_t len = blob_bytes(id, 0, gen_buf, sizeof gen_buf);
    rc = tdm__ckpt_put(st, blob_names[0], gen_buf, len);
    if (rc != TDM_OK)
        goto out;
    len = blob_bytes(id, 1, gen_buf, sizeof gen_buf);
    rc = tdm__ckpt_blob_open(st, blob_names[1]);
    size_t at = 0, step = 1;
    while (rc == TDM_OK && at < len) {
        size_t k = step < len - at ? step : len - at;
        rc = tdm__ckpt_blob_append(st, gen_buf + at, k);
        at += k;
        step = step * 3 + 7; /* 1, 10, 37, ... up to pieces > 64 KiB */
    }
    if (rc == TDM_OK)
        rc = tdm__ckpt_blob_close(st);
    if (rc != TDM_OK)
        goto out;
    rc = tdm__ckpt_put(st, blob_names[2], NULL, 0);
    if (rc != TDM_OK)
        goto out;
    rc = tdm__ckpt_commit(st);
out:
    snprintf(err, n, "%s", tdm__ckpt_store_errmsg(st));
    return rc;
}

static void must_write(tdm__ckpt_store *st, uint64_t id, tdm__ckpt_kind kind)
{
    char err[1024];
    if (write_ckpt(st, id, kind, err, sizeof err) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "checkpoint %llu: %s",
                      (unsigned long long)id, err);
}

/* Reads every blob of checkpoint @p id back and compares with the
 * generator. */
static void check_ckpt(tdm__ckpt_store *st, uint64_t id)
{
    tdm__ckpt_reader *rd;
    ASSERT_OK(tdm__ckpt_reader_open(st, id, &rd));
    const tdm__ckpt_manifest *m = tdm__ckpt_reader_manifest(rd);
    ASSERT_EQ(m->id, id);
    ASSERT_STR_EQ(m->job, "clicks");
    ASSERT_EQ(m->created_ms, 1700000000000 + (int64_t)id);
    ASSERT_EQ(m->parallelism, 2);
    ASSERT_EQ(m->key_groups, 128);
    ASSERT_EQ(m->n_blobs, 3);
    for (int w = 0; w < 3; w++) {
        void *p;
        size_t len, want = blob_bytes(id, w, gen_buf, sizeof gen_buf);
        ASSERT_OK(tdm__ckpt_get(rd, blob_names[w], &p, &len));
        ASSERT_EQ(len, want);
        ASSERT_TRUE(memcmp(p, gen_buf, len) == 0);
        tdm__free(p);
    }
    tdm__ckpt_reader_close(rd);
}

/* The directory's entries, sorted, joined by spaces (plain readdir). */
static const char *entries(const char *dir)
{
    static char out[4096];
    char names[64][80];
    int n = 0;
    DIR *d = opendir(dir);
    ASSERT_TRUE(d != NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 64) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            snprintf(names[n++], sizeof names[0], "%.79s", e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[80];
            memcpy(t, names[j], sizeof t);
            memcpy(names[j], names[j - 1], sizeof t);
            memcpy(names[j - 1], t, sizeof t);
        }
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        strcat(out, i ? " " : "");
        strcat(out, names[i]);
    }
    return out;
}

static uint64_t latest(tdm__ckpt_store *st)
{
    uint64_t id;
    int found;
    ASSERT_OK(tdm__ckpt_latest(st, &id, &found));
    return found ? id : UINT64_MAX;
}

/* ---- Round trip ---- */

TDM_TEST(store_round_trip)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    ASSERT_EQ(latest(st), UINT64_MAX); /* empty: none found */
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK chk-0000000001");
    char p[256];
    snprintf(p, sizeof p, "%s/chk-0000000001", fx.dir);
    ASSERT_STR_EQ(entries(p), "MANIFEST empty source.offsets state-a");
    ASSERT_EQ(latest(st), 1);
    check_ckpt(st, 1);
    must_write(st, 7, TDM__CKPT_CHECKPOINT);
    ASSERT_EQ(latest(st), 7);
    check_ckpt(st, 7);
    check_ckpt(st, 1);
    /* An unknown blob is a clear error. */
    tdm__ckpt_reader *rd;
    void *b;
    size_t len;
    ASSERT_OK(tdm__ckpt_reader_open(st, 7, &rd));
    ASSERT_ERR(tdm__ckpt_get(rd, "nope", &b, &len), TDM_ERR_STATE);
    ASSERT_TRUE(strstr(tdm__ckpt_reader_errmsg(rd), "no blob") != NULL);
    tdm__ckpt_reader_close(rd);
    ASSERT_EQ(fx.log.lines, 0);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

TDM_TEST(store_misuse)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    ASSERT_ERR(tdm__ckpt_put(st, "a", "x", 1), TDM_ERR_STATE);
    ASSERT_ERR(tdm__ckpt_commit(st), TDM_ERR_STATE);
    tdm__ckpt_info info = {.id = 3};
    ASSERT_OK(tdm__ckpt_begin(st, &info));
    ASSERT_ERR(tdm__ckpt_begin(st, &info), TDM_ERR_STATE);
    ASSERT_ERR(tdm__ckpt_put(st, "../evil", "x", 1), TDM_ERR_INVAL);
    ASSERT_ERR(tdm__ckpt_put(st, "MANIFEST", "x", 1), TDM_ERR_INVAL);
    ASSERT_OK(tdm__ckpt_put(st, "a", "x", 1));
    ASSERT_ERR(tdm__ckpt_put(st, "a", "y", 1), TDM_ERR_STATE);
    /* Abort removes the temporary directory; the id is free again. */
    tdm__ckpt_abort(st);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK");
    ASSERT_OK(tdm__ckpt_begin(st, &info));
    ASSERT_OK(tdm__ckpt_put(st, "a", "x", 1));
    ASSERT_OK(tdm__ckpt_commit(st));
    /* An id that exists cannot be written again. */
    ASSERT_ERR(tdm__ckpt_begin(st, &info), TDM_ERR_STATE);
    ASSERT_TRUE(strstr(tdm__ckpt_store_errmsg(st), "already exists"));
    info.id = TDM__CKPT_ID_MAX + 1;
    ASSERT_ERR(tdm__ckpt_begin(st, &info), TDM_ERR_INVAL);
    /* Misuse leaves the pending checkpoint as it was: committing with a
     * blob open, appending with none. */
    info.id = 4;
    ASSERT_OK(tdm__ckpt_begin(st, &info));
    ASSERT_ERR(tdm__ckpt_blob_append(st, "x", 1), TDM_ERR_STATE);
    ASSERT_OK(tdm__ckpt_blob_open(st, "b"));
    ASSERT_ERR(tdm__ckpt_commit(st), TDM_ERR_STATE);
    ASSERT_ERR(tdm__ckpt_blob_open(st, "c"), TDM_ERR_STATE);
    ASSERT_OK(tdm__ckpt_blob_append(st, "y", 1));
    ASSERT_TRUE(strstr(entries(fx.dir), "chk-0000000004.tmp-") != NULL);
    /* Closing with a checkpoint pending aborts it. */
    tdm__ckpt_store_close(st);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK chk-0000000003");
    /* A reader cannot write. */
    st = fx_open(&fx, TDM__CKPT_READ);
    ASSERT_ERR(tdm__ckpt_begin(st, &info), TDM_ERR_STATE);
    ASSERT_EQ(latest(st), 3);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* ---- Retention ---- */

TDM_TEST(store_retention_keeps_last_n_and_savepoints)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    /* Default: 3. */
    for (uint64_t id = 1; id <= 5; id++)
        must_write(st, id, TDM__CKPT_CHECKPOINT);
    ASSERT_STR_EQ(entries(fx.dir),
                  "LOCK chk-0000000003 chk-0000000004 chk-0000000005");
    /* Retain 2, with a savepoint among them: the savepoint neither counts
     * nor goes. */
    tdm__ckpt_store_set_retain(st, 2);
    must_write(st, 6, TDM__CKPT_SAVEPOINT);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK chk-0000000003 chk-0000000004 "
                                   "chk-0000000005 chk-0000000006");
    must_write(st, 7, TDM__CKPT_CHECKPOINT);
    must_write(st, 8, TDM__CKPT_CHECKPOINT);
    ASSERT_STR_EQ(entries(fx.dir),
                  "LOCK chk-0000000006 chk-0000000007 chk-0000000008");
    check_ckpt(st, 6);
    /* Retain 0 keeps everything. */
    tdm__ckpt_store_set_retain(st, 0);
    must_write(st, 9, TDM__CKPT_CHECKPOINT);
    must_write(st, 10, TDM__CKPT_CHECKPOINT);
    ASSERT_STR_EQ(entries(fx.dir),
                  "LOCK chk-0000000006 chk-0000000007 chk-0000000008 "
                  "chk-0000000009 chk-0000000010");
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* ---- Torn and corrupt checkpoints ---- */

static void read_raw(const char *path, uint8_t **out, size_t *len)
{
    struct stat sb;
    ASSERT_TRUE(stat(path, &sb) == 0);
    *len = (size_t)sb.st_size;
    *out = malloc(*len + 1);
    int fd = open(path, O_RDONLY);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(read(fd, *out, *len), (ssize_t)*len);
    close(fd);
}

static void write_raw(const char *path, const uint8_t *p, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, p, len), (ssize_t)len);
    close(fd);
}

/* Asserts that checkpoint 2 is skipped for a reason containing @p why and
 * checkpoint 1 is chosen. */
static void expect_fallback(fixture *fx, tdm__ckpt_store *st, const char *why)
{
    log_reset(&fx->log);
    ASSERT_EQ(latest(st), 1);
    ASSERT_EQ(fx->log.lines, 1);
    ASSERT_TRUE(strncmp(fx->log.text, "2|skipping checkpoint 2: ", 25) == 0);
    if (!strstr(fx->log.text, why))
        tdm_test_fail(__FILE__, __LINE__, "log \"%s\" lacks \"%s\"",
                      fx->log.text, why);
}

TDM_TEST(store_torn_newest_falls_back)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    must_write(st, 2, TDM__CKPT_CHECKPOINT);
    ASSERT_EQ(latest(st), 2);
    char man[256], blob[256];
    snprintf(man, sizeof man, "%s/chk-0000000002/MANIFEST", fx.dir);
    snprintf(blob, sizeof blob, "%s/chk-0000000002/state-a", fx.dir);
    uint8_t *mb, *bb;
    size_t ml, bl;
    read_raw(man, &mb, &ml);
    read_raw(blob, &bb, &bl);

    /* A truncated blob: short by one byte, and empty. */
    ASSERT_TRUE(truncate(blob, (off_t)bl - 1) == 0);
    expect_fallback(&fx, st, "bytes, the manifest says");
    ASSERT_TRUE(truncate(blob, 0) == 0);
    expect_fallback(&fx, st, "0 bytes, the manifest says");
    write_raw(blob, bb, bl);
    ASSERT_EQ(latest(st), 2);

    /* A truncated manifest, at every length. */
    for (size_t cut = 0; cut < ml; cut++) {
        ASSERT_TRUE(truncate(man, (off_t)cut) == 0);
        expect_fallback(&fx, st, "manifest ");
        write_raw(man, mb, ml);
    }
    ASSERT_EQ(latest(st), 2);

    /* One byte flipped anywhere in the manifest or the blob. */
    for (size_t i = 0; i < ml; i++) {
        mb[i] ^= 0x01;
        write_raw(man, mb, ml);
        expect_fallback(&fx, st, "manifest ");
        mb[i] ^= 0x01;
    }
    write_raw(man, mb, ml);
    for (size_t i = 0; i < bl; i++) {
        bb[i] ^= 0x80;
        write_raw(blob, bb, bl);
        expect_fallback(&fx, st, "CRC mismatch");
        bb[i] ^= 0x80;
    }
    write_raw(blob, bb, bl);
    ASSERT_EQ(latest(st), 2);

    /* A blob or the manifest deleted. */
    ASSERT_TRUE(unlink(blob) == 0);
    expect_fallback(&fx, st, "No such file or directory");
    write_raw(blob, bb, bl);
    ASSERT_TRUE(unlink(man) == 0);
    expect_fallback(&fx, st, "MANIFEST: No such file or directory");
    write_raw(man, mb, ml);
    ASSERT_EQ(latest(st), 2);

    /* A manifest copied from another checkpoint is caught by its id. */
    char man1[256];
    uint8_t *m1;
    size_t l1;
    snprintf(man1, sizeof man1, "%s/chk-0000000001/MANIFEST", fx.dir);
    read_raw(man1, &m1, &l1);
    write_raw(man, m1, l1);
    expect_fallback(&fx, st, "is of checkpoint 1");

    /* A plain file with a checkpoint's name is skipped like damage. */
    char fake[256];
    snprintf(fake, sizeof fake, "%s/chk-0000000003", fx.dir);
    write_raw(fake, (const uint8_t *)"x", 1);
    log_reset(&fx.log);
    ASSERT_EQ(latest(st), 1);
    ASSERT_TRUE(strstr(fx.log.text, "3|skipping checkpoint 3: ") != NULL);
    ASSERT_TRUE(unlink(fake) == 0);

    /* Both broken: none found, both reasons logged. */
    write_raw(man1, m1, l1 - 1);
    log_reset(&fx.log);
    ASSERT_EQ(latest(st), UINT64_MAX);
    ASSERT_EQ(fx.log.lines, 2);
    free(m1);
    free(mb);
    free(bb);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* A damaged newest checkpoint is skipped for reading but still counts for
 * numbering: the runtime numbers new checkpoints above it (the bug
 * cli.checkpoint_damage found: a run restored past damaged checkpoint 2
 * numbered its next one 2, whose directory already existed, and a final
 * checkpoint could never be written). */
TDM_TEST(store_highest_counts_damaged_checkpoints)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    uint64_t top = 99;
    ASSERT_OK(tdm__ckpt_highest(st, &top));
    ASSERT_EQ(top, 0);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    must_write(st, 2, TDM__CKPT_CHECKPOINT);
    char blob[256];
    snprintf(blob, sizeof blob, "%s/chk-0000000002/state-a", fx.dir);
    ASSERT_TRUE(truncate(blob, 0) == 0);
    ASSERT_EQ(latest(st), 1);
    ASSERT_OK(tdm__ckpt_highest(st, &top));
    ASSERT_EQ(top, 2);
    /* Id 2 cannot be written again; 3 can. */
    char err[1024];
    ASSERT_TRUE(write_ckpt(st, 2, TDM__CKPT_CHECKPOINT, err, sizeof err) !=
                TDM_OK);
    ASSERT_TRUE(strstr(err, "already exists") != NULL);
    tdm__ckpt_abort(st);
    must_write(st, 3, TDM__CKPT_CHECKPOINT);
    ASSERT_EQ(latest(st), 3);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* A reader also refuses a corrupt blob on get. */
TDM_TEST(store_get_checks_crc)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    char blob[256];
    snprintf(blob, sizeof blob, "%s/chk-0000000001/state-a", fx.dir);
    uint8_t *bb;
    size_t bl;
    read_raw(blob, &bb, &bl);
    bb[bl / 2] ^= 4;
    write_raw(blob, bb, bl);
    tdm__ckpt_reader *rd;
    void *p;
    size_t len;
    ASSERT_OK(tdm__ckpt_reader_open(st, 1, &rd));
    ASSERT_ERR(tdm__ckpt_get(rd, "state-a", &p, &len), TDM_ERR_PARSE);
    ASSERT_TRUE(strstr(tdm__ckpt_reader_errmsg(rd), "CRC mismatch"));
    ASSERT_TRUE(strstr(tdm__ckpt_reader_errmsg(rd), blob));
    ASSERT_TRUE(p == NULL);
    tdm__ckpt_reader_close(rd);
    free(bb);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* ---- Stray temporary directories ---- */

TDM_TEST(store_stray_tmp_ignored_and_cleaned)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    tdm__ckpt_store_close(st);
    /* What a writer killed mid-checkpoint leaves: a temporary directory
     * with a blob and even a complete-looking manifest. */
    char tmp[256], f[300];
    snprintf(tmp, sizeof tmp, "%s/chk-0000000002.tmp-99999", fx.dir);
    ASSERT_TRUE(mkdir(tmp, 0777) == 0);
    snprintf(f, sizeof f, "%s/state-a", tmp);
    write_raw(f, (const uint8_t *)"partial", 7);
    char src[256];
    snprintf(src, sizeof src, "%s/chk-0000000001/MANIFEST", fx.dir);
    uint8_t *mb;
    size_t ml;
    read_raw(src, &mb, &ml);
    snprintf(f, sizeof f, "%s/MANIFEST", tmp);
    write_raw(f, mb, ml);
    free(mb);
    /* A reader ignores it and leaves it alone (a writer may own it). */
    st = fx_open(&fx, TDM__CKPT_READ);
    ASSERT_EQ(latest(st), 1);
    ASSERT_EQ(fx.log.lines, 0);
    tdm__ckpt_store_close(st);
    ASSERT_STR_EQ(entries(fx.dir),
                  "LOCK chk-0000000001 chk-0000000002.tmp-99999");
    /* A writer holds the lock, so it is stray: removed, and said so. */
    st = fx_open(&fx, TDM__CKPT_WRITE);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK chk-0000000001");
    ASSERT_TRUE(strstr(fx.log.text, "removed stray temporary directory"));
    ASSERT_TRUE(strstr(fx.log.text, "chk-0000000002.tmp-99999"));
    ASSERT_EQ(latest(st), 1);
    /* Names that merely look similar are not touched. */
    char other[256];
    snprintf(other, sizeof other, "%s/chk-2.tmp-1", fx.dir);
    ASSERT_TRUE(mkdir(other, 0777) == 0);
    ASSERT_EQ(latest(st), 1);
    ASSERT_TRUE(access(other, F_OK) == 0);
    must_write(st, 2, TDM__CKPT_CHECKPOINT);
    ASSERT_EQ(latest(st), 2);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* ---- Two writers ---- */

TDM_TEST(store_two_writers_second_refused)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *a = fx_open(&fx, TDM__CKPT_WRITE), *b = NULL;
    must_write(a, 1, TDM__CKPT_CHECKPOINT);
    char err[512], want[512];
    ASSERT_ERR(tdm__ckpt_store_open(fx.dir, TDM__CKPT_WRITE, NULL, NULL, &b,
                                    err, sizeof err),
               TDM_ERR_STATE);
    ASSERT_TRUE(b == NULL);
    snprintf(want, sizeof want,
             "checkpoint directory %s is in use by another tidemark "
             "(pid %ld)",
             fx.dir, (long)getpid());
    ASSERT_STR_EQ(err, want);
    /* Readers of a locked directory still work. */
    tdm__ckpt_store *r = fx_open(&fx, TDM__CKPT_READ);
    ASSERT_EQ(latest(r), 1);
    check_ckpt(r, 1);
    tdm__ckpt_store_close(r);
    /* The first writer carries on; once it closes, another may open. */
    must_write(a, 2, TDM__CKPT_CHECKPOINT);
    tdm__ckpt_store_close(a);
    b = fx_open(&fx, TDM__CKPT_WRITE);
    ASSERT_EQ(latest(b), 2);
    tdm__ckpt_store_close(b);
    fx_done(&fx);
}

/* ---- Disk full ---- */

/* For n = 1, 2, ...: arm the n-th operation of @p op (from the start of
 * checkpoint id) to fail with ENOSPC and write checkpoint id.  Each
 * failure must be TDM_ERR_IO naming a path under the directory and the
 * errno, leave no chk-<id> and no temporary directory, and leave the
 * previous checkpoint the latest; then, the fault cleared, the same
 * checkpoint commits.  Stops at the first n the checkpoint no longer
 * reaches.  Returns how many failures were seen. */
static int disk_full_loop(fixture *fx, tdm__ckpt_store *st, tdm__fio_op op,
                          int sticky, uint64_t *next_id)
{
    int failures = 0;
    for (long n = 1;; n++) {
        uint64_t prev = *next_id - 1, id = *next_id;
        char err[1024], final[256];
        snprintf(final, sizeof final, "%s/chk-%010llu", fx->dir,
                 (unsigned long long)id);
        tdm__fio_fault_clear();
        tdm__fio_fault(op, n, ENOSPC, sticky);
        tdm_err rc = write_ckpt(st, id, TDM__CKPT_CHECKPOINT, err, sizeof err);
        long fired = tdm__fio_fault_fired();
        tdm__fio_fault_clear();
        if (rc == TDM_OK) {
            /* The fault came after the commit point (a retention step)
             * or not at all; either way the checkpoint is complete. */
            check_ckpt(st, id);
            ASSERT_EQ(latest(st), id);
            *next_id = id + 1;
            if (fired == 0) {
                ASSERT_TRUE(n > 1); /* the op happened at least once */
                return failures;
            }
            continue;
        }
        failures++;
        ASSERT_TRUE(fired >= 1);
        if (rc != TDM_ERR_IO)
            tdm_test_fail(__FILE__, __LINE__, "%s #%ld: %s: %s",
                          tdm__fio_op_name(op), n, tdm_err_name(rc), err);
        ASSERT_TRUE(strstr(err, fx->dir) != NULL);
        ASSERT_TRUE(strstr(err, "No space left on device") != NULL);
        ASSERT_TRUE(access(final, F_OK) != 0);
        /* No temporary directory left, no chk-<id>. */
        const char *ls = entries(fx->dir);
        if (strstr(ls, ".tmp-") || strstr(ls, final + strlen(fx->dir) + 1))
            tdm_test_fail(__FILE__, __LINE__, "%s #%ld left: %s",
                          tdm__fio_op_name(op), n, ls);
        ASSERT_EQ(latest(st), prev);
        /* Space is back: the same checkpoint commits. */
        must_write(st, id, TDM__CKPT_CHECKPOINT);
        check_ckpt(st, id);
        ASSERT_EQ(latest(st), id);
        *next_id = id + 1;
    }
}

TDM_TEST(store_disk_full_every_step)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    uint64_t next = 2;
    /* Writes: blob 0 (1 write), blob 1 (several buffered writes and one
     * direct), blob 2 (none), the manifest (1). */
    int w = disk_full_loop(&fx, st, TDM__FIO_WRITE, 0, &next);
    ASSERT_TRUE(w >= 4);
    /* fsyncs: 3 blobs, the manifest, the temporary directory and the
     * checkpoint directory after the rename = 6 that fail the commit. */
    int f = disk_full_loop(&fx, st, TDM__FIO_FSYNC, 0, &next);
    ASSERT_EQ(f, 6);
    /* The one rename. */
    ASSERT_EQ(disk_full_loop(&fx, st, TDM__FIO_RENAME, 0, &next), 1);
    /* Opens: 3 blobs, the manifest, the two directory fsyncs' opens. */
    ASSERT_EQ(disk_full_loop(&fx, st, TDM__FIO_OPEN, 0, &next), 6);
    /* The temporary directory's mkdir. */
    ASSERT_EQ(disk_full_loop(&fx, st, TDM__FIO_MKDIR, 0, &next), 1);
    /* A disk that stays full from the n-th write on. */
    ASSERT_TRUE(disk_full_loop(&fx, st, TDM__FIO_WRITE, 1, &next) >= 4);
    /* Faults after the commit point hit only retention's removal of old
     * checkpoints, which is logged (the commit already succeeded). */
    for (char *line = fx.log.text; *line; line = strchr(line, '\n') + 1)
        if (strncmp(line, "0|retention: ", 13) != 0)
            tdm_test_fail(__FILE__, __LINE__, "log: %s", fx.log.text);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* The rollback after the final directory fsync fails: the renamed
 * directory is taken back even though it was briefly visible. */
TDM_TEST(store_disk_full_after_rename_takes_it_back)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    /* fsyncs of checkpoint 2: blobs 1-3, manifest 4, tmp dir 5, dir 6. */
    tdm__fio_fault(TDM__FIO_FSYNC, 6, EIO, 0);
    char err[1024], want[512];
    ASSERT_ERR(write_ckpt(st, 2, TDM__CKPT_CHECKPOINT, err, sizeof err),
               TDM_ERR_IO);
    snprintf(want, sizeof want, "fsync %s: Input/output error", fx.dir);
    ASSERT_STR_EQ(err, want);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK chk-0000000001");
    /* And if the rename back fails too, the directory is removed in
     * place. */
    tdm__fio_fault_clear();
    tdm__fio_fault(TDM__FIO_FSYNC, 6, EIO, 0);
    tdm__fio_fault(TDM__FIO_RENAME, 2, EIO, 0);
    ASSERT_ERR(write_ckpt(st, 2, TDM__CKPT_CHECKPOINT, err, sizeof err),
               TDM_ERR_IO);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK chk-0000000001");
    tdm__fio_fault_clear();
    ASSERT_EQ(latest(st), 1);
    must_write(st, 2, TDM__CKPT_CHECKPOINT);
    ASSERT_EQ(latest(st), 2);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* Retention counts only checkpoints that look complete: a newer one with
 * a truncated blob does not push out an older good one. */
TDM_TEST(store_retention_skips_broken_in_count)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    tdm__ckpt_store_set_retain(st, 2);
    for (uint64_t id = 1; id <= 3; id++)
        must_write(st, id, TDM__CKPT_CHECKPOINT);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK chk-0000000002 chk-0000000003");
    char blob[256];
    snprintf(blob, sizeof blob, "%s/chk-0000000003/state-a", fx.dir);
    ASSERT_TRUE(truncate(blob, 10) == 0);
    must_write(st, 4, TDM__CKPT_CHECKPOINT);
    /* Kept: 4 and 2 (the two newest good ones), and the broken 3 that
     * lies between them. */
    ASSERT_STR_EQ(entries(fx.dir),
                  "LOCK chk-0000000002 chk-0000000003 chk-0000000004");
    must_write(st, 5, TDM__CKPT_CHECKPOINT);
    ASSERT_STR_EQ(entries(fx.dir), "LOCK chk-0000000004 chk-0000000005");
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* A writer's latest() while its own checkpoint is pending leaves that
 * temporary directory alone. */
TDM_TEST(store_latest_while_pending_keeps_own_tmp)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    tdm__ckpt_info info = {.id = 2, .job = "clicks"};
    ASSERT_OK(tdm__ckpt_begin(st, &info));
    ASSERT_OK(tdm__ckpt_put(st, "a", "abc", 3));
    ASSERT_EQ(latest(st), 1);
    ASSERT_EQ(fx.log.lines, 0);
    ASSERT_OK(tdm__ckpt_commit(st));
    ASSERT_EQ(latest(st), 2);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* A checkpoint that cannot be read (EIO) is not silently passed over:
 * falling back past a checkpoint whose outputs were already committed
 * would repeat them.  Only damage (bad bytes, missing files) is skipped. */
TDM_TEST(store_latest_io_error_is_reported_not_skipped)
{
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    must_write(st, 2, TDM__CKPT_CHECKPOINT);
    uint64_t id;
    int found;
    tdm__fio_fault(TDM__FIO_READ, 1, EIO, 0);
    ASSERT_ERR(tdm__ckpt_latest(st, &id, &found), TDM_ERR_IO);
    ASSERT_EQ(found, 0);
    ASSERT_TRUE(strstr(tdm__ckpt_store_errmsg(st), "chk-0000000002/MANIFEST"));
    ASSERT_TRUE(strstr(tdm__ckpt_store_errmsg(st), "Input/output error"));
    ASSERT_EQ(fx.log.lines, 0);
    tdm__fio_fault_clear();
    ASSERT_EQ(latest(st), 2);
    tdm__ckpt_store_close(st);
    fx_done(&fx);
}

/* ---- Killed writers ---- */

/* The writer process of store_killed_at_every_step: with
 * TDM_CKPT_CHILD_DIR and TDM_CKPT_CHILD_ID set it opens the directory and
 * writes that checkpoint (TDM_FIO_FAULT kills it on the way); run as its
 * own CTest case, without them, it does nothing. */
TDM_TEST(store_crash_child)
{
    const char *dir = getenv("TDM_CKPT_CHILD_DIR");
    const char *ids = getenv("TDM_CKPT_CHILD_ID");
    if (!dir || !ids)
        return;
    tdm__ckpt_store *st;
    char err[1024];
    ASSERT_OK(tdm__ckpt_store_open(dir, TDM__CKPT_WRITE, NULL, NULL, &st, err,
                                   sizeof err));
    must_write(st, strtoull(ids, NULL, 10), TDM__CKPT_CHECKPOINT);
    tdm__ckpt_store_close(st);
}

/* Runs the child writing checkpoint @p id into @p dir with @p fault in
 * TDM_FIO_FAULT; returns its wait status. */
static int run_child(const char *dir, uint64_t id, const char *fault)
{
    char exe[512], e_dir[300], e_id[64], e_fault[128];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ASSERT_TRUE(n > 0);
    exe[n] = 0;
    snprintf(e_dir, sizeof e_dir, "TDM_CKPT_CHILD_DIR=%s", dir);
    snprintf(e_id, sizeof e_id, "TDM_CKPT_CHILD_ID=%llu",
             (unsigned long long)id);
    snprintf(e_fault, sizeof e_fault, "TDM_FIO_FAULT=%s", fault);
    char *argv[] = {exe, "store_crash_child", NULL};
    char *envp[] = {e_dir, e_id, e_fault, NULL};
    pid_t pid;
    int status;
    ASSERT_EQ(posix_spawn(&pid, exe, NULL, NULL, argv, envp), 0);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

/* For each kind of operation and n = 1, 2, ...: a writer process is
 * killed just before its n-th operation of that kind.  Afterwards the
 * newest valid checkpoint is the previous one, or the new one complete
 * (a kill after the rename); a reader ignores the leftover temporary
 * directory, the next writer removes it and writes the checkpoint.
 * Stops when the writer finishes before its n-th operation. */
TDM_TEST(store_killed_at_every_step)
{
    static const char *const kinds[] = {"mkdir", "open",   "write",
                                        "fsync", "rename", "unlink"};
    fixture fx;
    fx_init(&fx);
    tdm__ckpt_store *st = fx_open(&fx, TDM__CKPT_WRITE);
    must_write(st, 1, TDM__CKPT_CHECKPOINT);
    tdm__ckpt_store_close(st);
    uint64_t next = 2;
    int kills = 0, after_commit = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (long n = 1;; n++) {
            char fault[64];
            uint64_t id = next;
            snprintf(fault, sizeof fault, "%s:%ld:KILL", kinds[k], n);
            int status = run_child(fx.dir, id, fault);
            if (WIFEXITED(status)) {
                /* Finished without reaching its n-th such operation. */
                ASSERT_EQ(WEXITSTATUS(status), 0);
                ASSERT_TRUE(n > 1 || strcmp(kinds[k], "unlink") == 0);
                st = fx_open(&fx, TDM__CKPT_READ);
                ASSERT_EQ(latest(st), id);
                tdm__ckpt_store_close(st);
                next = id + 1;
                break;
            }
            ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
            kills++;
            /* A reader (no lock, writes nothing) sees the previous or the
             * complete new checkpoint, never a partial one. */
            log_reset(&fx.log);
            st = fx_open(&fx, TDM__CKPT_READ);
            uint64_t got = latest(st);
            tdm__ckpt_store_close(st);
            if (got != id - 1 && got != id)
                tdm_test_fail(__FILE__, __LINE__, "%s: latest %llu", fault,
                              (unsigned long long)got);
            /* The next writer cleans up and carries on. */
            st = fx_open(&fx, TDM__CKPT_WRITE);
            if (strstr(entries(fx.dir), ".tmp-"))
                tdm_test_fail(__FILE__, __LINE__, "%s left %s", fault,
                              entries(fx.dir));
            if (got == id) {
                after_commit++;
                check_ckpt(st, id);
            } else {
                must_write(st, id, TDM__CKPT_CHECKPOINT);
            }
            ASSERT_EQ(latest(st), id);
            tdm__ckpt_store_close(st);
            next = id + 1;
        }
    }
    /* Kills happened before and after the commit point. */
    ASSERT_TRUE(kills > 10);
    ASSERT_TRUE(after_commit >= 2);
    fx_done(&fx);
}
