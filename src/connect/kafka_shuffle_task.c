/* SPDX-License-Identifier: MIT */
/* kafka_shuffle_task.c - what the repartition topic needs when its
 * writers and readers are tasks (scale_out: tasks, docs/scale-out.md,
 * "Repartition"): the offsets a reader took per origin, and the start
 * file of a run.  Pure logic and files; kafka_shuffle.c wires them in.
 *
 * A task that moves replays its input from its checkpoint, and its rows
 * reach the internal topic a second time (a crashed owner may have
 * written them after that checkpoint; on the mock cluster, aborted
 * writes are visible too).  A reader therefore remembers, per origin
 * (the input partition a row was read from, "clicks[3]"), the highest
 * offset it took, and drops a row at or below it: an origin is read by
 * one task at a time, from a checkpointed position, in offset order,
 * and the same offset always yields the same row, so a row at or below
 * that offset is one the reader already took.  The table is part of
 * the reader task's checkpoint, taken with its position in the topic,
 * so a restored reader makes the same decisions again.
 *
 * The start file says where a task without a checkpoint starts reading
 * its internal partition: the topic's end when the run began.  Before
 * it, the topic holds only what former runs of the group wrote (whose
 * markers could claim any watermark); after it, everything is this
 * run's.  It is created once per run through link(2), which fails when
 * the name exists, so of two tasks that raced exactly one wins and the
 * other loads the winner's offsets.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connect/kafka_shuffle.h"
#include "core/fileio.h"

/* ====================================================================== */
/* Offsets taken per origin                                                */
/* ====================================================================== */

typedef struct kseen_origin {
    char *name;
    size_t len;
    int64_t last;
} kseen_origin;

struct tdm__kseen {
    kseen_origin *o;
    int n, cap;
    int hint; /* the origin found last: rows come in runs */
};

tdm__kseen *tdm__kseen_new(void)
{
    return tdm__calloc(1, sizeof(tdm__kseen));
}

/* The index of @p origin, -1 if unknown. */
static int kseen_find(tdm__kseen *s, const char *origin, size_t len)
{
    if (s->hint < s->n && s->o[s->hint].len == len &&
        memcmp(s->o[s->hint].name, origin, len) == 0)
        return s->hint;
    for (int i = 0; i < s->n; i++)
        if (s->o[i].len == len && memcmp(s->o[i].name, origin, len) == 0)
            return s->hint = i;
    return -1;
}

/* Adds @p origin with nothing taken; its index, -1 on OOM. */
static int kseen_add(tdm__kseen *s, const char *origin, size_t len)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        kseen_origin *no = tdm__realloc(s->o, (size_t)cap * sizeof *no);
        if (!no)
            return -1;
        s->o = no;
        s->cap = cap;
    }
    char *name = tdm__strndup(origin, len);
    if (!name)
        return -1;
    s->o[s->n].name = name;
    s->o[s->n].len = len;
    s->o[s->n].last = -1;
    return s->hint = s->n++;
}

int tdm__kseen_take(tdm__kseen *s, const char *origin, size_t len,
                    int64_t offset)
{
    int i = kseen_find(s, origin, len);
    if (i < 0 && (i = kseen_add(s, origin, len)) < 0)
        return -1;
    if (offset <= s->o[i].last)
        return 0; /* R-KT-1: a replay of a row taken before */
    s->o[i].last = offset;
    return 1;
}

int tdm__kseen_count(const tdm__kseen *s)
{
    return s ? s->n : 0;
}

const char *tdm__kseen_origin(const tdm__kseen *s, int i, int64_t *offset)
{
    if (!s || i < 0 || i >= s->n)
        return NULL;
    *offset = s->o[i].last;
    return s->o[i].name;
}

void tdm__kseen_free(tdm__kseen *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        tdm__free(s->o[i].name);
    tdm__free(s->o);
    tdm__free(s);
}

/* ====================================================================== */
/* The start file                                                          */
/* ====================================================================== */

#define KSTART_HEAD "tidemark repartition start\n"

/* Parses the text @p t of the file at @p path into @p offs. */
static tdm_err kstart_parse(const char *path, char *t, const char *topic, int n,
                            int64_t *offs, char *errbuf, size_t errbuf_size)
{
    size_t hl = strlen(KSTART_HEAD);
    if (strncmp(t, KSTART_HEAD, hl) != 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                         "%s:1: not a repartition start file", path);
    char *p = t + hl, *nl = strchr(p, '\n');
    if (strncmp(p, "topic ", 6) != 0 || !nl)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                         "%s:2: \"topic <name>\" expected", path);
    *nl = 0;
    if (strcmp(p + 6, topic) != 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "%s: the run reads topic \"%s\", this job \"%s\" "
                         "(another job's checkpoint folder?)",
                         path, p + 6, topic);
    p = nl + 1;
    int got = 0;
    for (int line = 3; *p; line++) {
        char *end;
        long part = strtol(p, &end, 10);
        long long off =
            end > p && *end == ' ' ? strtoll(end + 1, &end, 10) : -1;
        if (part != got || part >= n || off < 0 || *end != '\n')
            return tdm__errf(errbuf, errbuf_size,
                             part >= n ? TDM_ERR_STATE : TDM_ERR_PARSE,
                             "%s:%d: %s", path, line,
                             part >= n ? "more partitions than the topic "
                                         "has now (it was re-created?)"
                                       : "\"<partition> <offset>\" expected "
                                         "in partition order");
        offs[got++] = (int64_t)off;
        p = end + 1;
    }
    if (got != n)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "%s: %d partitions, the topic has %d now", path, got,
                         n);
    return TDM_OK;
}

tdm_err tdm__kstart_load(const char *path, const char *topic, int n,
                         int64_t *offs, bool *found, char *errbuf,
                         size_t errbuf_size)
{
    void *buf = NULL;
    size_t len = 0;
    *found = false;
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return TDM_OK;
    tdm_err err = tdm__fio_read_file(path, &buf, &len, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    err = kstart_parse(path, buf, topic, n, offs, errbuf, errbuf_size);
    tdm__free(buf);
    *found = err == TDM_OK;
    return err;
}

/* Writes the file's text into a new private file named from the
 * template @p tmp (mkstemp: tasks of one process race here too), durably. */
/* The start file's text for @p offs, in a new buffer (*len bytes). */
static char *kstart_text(const char *topic, int n, const int64_t *offs,
                         size_t *len)
{
    size_t cap = 64 + strlen(topic) + (size_t)n * 48;
    char *t = tdm__malloc(cap);
    if (!t)
        return NULL;
    size_t k = (size_t)snprintf(t, cap, KSTART_HEAD "topic %s\n", topic);
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(t + k, cap - k, "%d %" PRId64 "\n", i, offs[i]);
    *len = k;
    return t;
}

static tdm_err kstart_write(char *tmp, const char *topic, int n,
                            const int64_t *offs, char *errbuf,
                            size_t errbuf_size)
{
    size_t k = 0;
    char *t = kstart_text(topic, n, offs, &k);
    if (!t)
        return TDM_ERR_NOMEM;
    int fd = mkstemp(tmp);
    tdm_err err = TDM_OK;
    if (fd < 0)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "cannot create %s: %s",
                        tmp, strerror(errno));
    if (err == TDM_OK)
        err = tdm__fio_write_all(fd, t, k, tmp, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm__fio_fsync(fd, tmp, errbuf, errbuf_size);
    tdm_err cerr = tdm__fio_close(fd, tmp, errbuf, errbuf_size);
    tdm__free(t);
    return err != TDM_OK ? err : cerr;
}

/* Creates (@p make) or fsyncs (the new name in it durable) the folder
 * of @p path. */
static tdm_err parent_dir(const char *path, bool make, char *errbuf,
                          size_t errbuf_size)
{
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? tdm__strndup(path, slash == path ? 1 : (size_t)(slash - path))
              : tdm__strndup(".", 1);
    if (!dir)
        return TDM_ERR_NOMEM;
    tdm_err err = make ? tdm__fio_mkdir_p(dir, errbuf, errbuf_size)
                       : tdm__fio_fsync_dir(dir, errbuf, errbuf_size);
    tdm__free(dir);
    return err;
}

tdm_err tdm__kstart_publish(const char *path, const char *topic, int n,
                            int64_t *offs, char *errbuf, size_t errbuf_size)
{
    char tmp[4200];
    bool found;
    int k = snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
    if (k < 0 || (size_t)k >= sizeof tmp)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "start file path too long: %s", path);
    tdm_err err = parent_dir(path, true, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = kstart_write(tmp, topic, n, offs, errbuf, errbuf_size);
    if (err == TDM_OK && link(tmp, path) != 0 && errno != EEXIST)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "cannot create %s: %s",
                        path, strerror(errno));
    if (strstr(tmp, "XXXXXX") == NULL)
        unlink(tmp);
    if (err == TDM_OK)
        err = parent_dir(path, false, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    /* R-KT-2: ours or the one that won the race: the file says. */
    err = tdm__kstart_load(path, topic, n, offs, &found, errbuf, errbuf_size);
    if (err == TDM_OK && !found)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "%s vanished after it was created", path);
    return err;
}

/* ====================================================================== */
/* The start record (checkpoint.store: changelog)                          */
/* ====================================================================== */

/* With the changelog store no folder is shared, so the start file is a
 * record of partition 0 of the changelog topic instead: key
 * "rstart/<internal topic>/<writer>/<pid>.<time>", the file's text as its
 * value.
 * Every creator's key is its own, so compaction keeps them all, and the
 * first of them in the partition's order is the run's: a creator
 * appends its record and then reads the partition from its start to the
 * first one (usually among the partition's first records: tasks create
 * it before their writers send anything). */

typedef struct kstart_find {
    char prefix[300];
    size_t plen;
    const char *where;
    const char *topic;
    int n;
    int64_t *offs;
    bool found;
    tdm_err err;
    char *errbuf;
    size_t errbuf_size;
} kstart_find;

static int kstart_record(void *ud, int64_t off, const void *key, size_t klen,
                         const void *val, size_t vlen)
{
    kstart_find *f = ud;
    (void)off;
    if (!val || klen < f->plen || memcmp(key, f->prefix, f->plen) != 0)
        return 0;
    char *t = tdm__strndup(val, vlen);
    if (!t) {
        f->err = TDM_ERR_NOMEM;
        return 1;
    }
    f->err = kstart_parse(f->where, t, f->topic, f->n, f->offs, f->errbuf,
                          f->errbuf_size);
    f->found = f->err == TDM_OK;
    tdm__free(t);
    return 1; /* R-KT-3: the first one is the run's */
}

/* Reads partition 0 of @p l to the first start record of @p topic. */
static tdm_err kstart_find_first(tdm__kclog *l, const char *topic, int n,
                                 int64_t *offs, bool *found, char *errbuf,
                                 size_t errbuf_size)
{
    int64_t next = 0;
    kstart_find f = {.where = tdm__kclog_name(l),
                     .topic = topic,
                     .n = n,
                     .offs = offs,
                     .errbuf = errbuf,
                     .errbuf_size = errbuf_size};
    snprintf(f.prefix, sizeof f.prefix, "rstart/%s/", topic);
    f.plen = strlen(f.prefix);
    tdm_err err =
        tdm__kclog_read(l, -1, kstart_record, &f, &next, errbuf, errbuf_size);
    *found = f.found;
    return err != TDM_OK ? err : f.err;
}

tdm_err tdm__kstart_log_get(const tdm__kclog_conf *c, const char *topic,
                            const char *writer, int n, int64_t *offs,
                            bool *found, bool create, char *errbuf,
                            size_t errbuf_size)
{
    tdm__kclog *l = NULL;
    tdm__kclog_conf c0 = *c;
    c0.partition = 0;
    *found = false;
    tdm_err err = tdm__kclog_open(&c0, &l, errbuf, errbuf_size);
    if (err == TDM_OK && !create)
        err = kstart_find_first(l, topic, n, offs, found, errbuf, errbuf_size);
    if (err == TDM_OK && create) {
        char key[400];
        size_t len = 0;
        char *t = kstart_text(topic, n, offs, &len);
        /* R-KT-4: the writer's name is the task's, which two processes
         * may share: the key also names this process and instant. */
        snprintf(key, sizeof key, "rstart/%s/%s/%ld.%lld", topic, writer,
                 (long)getpid(), (long long)tdm__mono_us());
        err =
            t ? tdm__kclog_put(l, key, strlen(key), t, len, errbuf, errbuf_size)
              : TDM_ERR_NOMEM;
        tdm__free(t);
        if (err == TDM_OK)
            err = tdm__kclog_flush(l, errbuf, errbuf_size);
        if (err == TDM_OK)
            err = kstart_find_first(l, topic, n, offs, found, errbuf,
                                    errbuf_size);
        if (err == TDM_OK && !*found)
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                            "%s: the start record written is not there",
                            tdm__kclog_name(l));
    }
    tdm__kclog_close(l);
    return err;
}
