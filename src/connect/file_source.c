/* SPDX-License-Identifier: MIT */
/* file_source.c - the file source: a path or glob of JSON-lines or CSV
 * files, or standard input ("-" or type stdin).
 *
 * Partitions.  By default each file is one partition; the files matching
 * the glob (sorted by name) are dealt round-robin to the subtasks, file k
 * to subtask k % count, and a subtask reads its files interleaved, one
 * batch from one file and the next batch from the next, so that their
 * watermarks advance together.  Standard input is one partition, read by
 * subtask 0.
 *
 * With partition.field set, the partitions are the distinct values of
 * that field, which any file may contain.  Subtask 0 then reads every
 * file (the others get no partition) and numbers values in the order they
 * first appear, so partition indices grow while the source runs: open()
 * reports 0 partitions, rows carry indices 0, 1, 2, ... and the runtime
 * adds a reader split when it meets a new one.  No partition is reported
 * finished on its own (a value may appear again in a later file); *eof
 * ends them all.  This keeps the per-value watermarks exact at the cost of
 * reading such a source in one thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "connect/conn.h"

struct tdm__source {
    tdm__source_conf conf; /* shallow copy: strings and schema borrowed */
    tdm__dead_fn dead;
    void *dead_ud;
    tdm__stream *st; /* one per file (or stdin) this subtask reads */
    int n;
    int cur;      /* the stream the next poll starts with */
    int n_done;
    bool by_field; /* partitions are values of partition_field */
    tdm__partmap pm;
};

static void file_close(tdm__source *src)
{
    if (!src)
        return;
    for (int i = 0; i < src->n; i++)
        tdm__stream_free(&src->st[i]);
    tdm__free(src->st);
    tdm__partmap_free(&src->pm);
    tdm__free(src);
}

static bool has_glob_chars(const char *p)
{
    return strpbrk(p, "*?[") != NULL;
}

/* Frees a list of paths from expand(). */
static void free_paths(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tdm__free(paths[i]);
    tdm__free(paths);
}

/* Expands conf->path into the sorted list of the files it names (folders
 * left out), copied into *paths.  TDM_OK, TDM_ERR_IO (nothing matches;
 * the message names the path), TDM_ERR_NOMEM. */
static tdm_err expand(const tdm__source_conf *conf, char ***paths,
                      size_t *n_paths, char *errbuf, size_t errbuf_size)
{
    glob_t g;
    int rc;
    size_t n = 0;
    char **list = NULL;
    tdm_err err = TDM_OK;

    *paths = NULL;
    *n_paths = 0;
    memset(&g, 0, sizeof g);
    rc = glob(conf->path, 0, NULL, &g);
    if (rc == GLOB_NOSPACE) {
        err = TDM_ERR_NOMEM;
        goto out;
    }
    if (rc != 0 && rc != GLOB_NOMATCH) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "cannot read the folders of '%s'",
                        conf->path);
        goto out;
    }
    list = tdm__calloc(rc == 0 && g.gl_pathc ? g.gl_pathc : 1, sizeof *list);
    if (!list) {
        err = TDM_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode))
            continue;
        list[n] = tdm__strndup(g.gl_pathv[i], strlen(g.gl_pathv[i]));
        if (!list[n]) {
            err = TDM_ERR_NOMEM;
            goto out;
        }
        n++;
    }
    if (n == 0) {
        if (!has_glob_chars(conf->path)) {
            struct stat st;
            int e = stat(conf->path, &st) == 0 ? EISDIR : errno;
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                            "cannot open '%s': %s",
                            conf->path, strerror(e));
        } else {
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                            "no file matches '%s'",
                            conf->path);
        }
        goto out;
    }
out:
    globfree(&g);
    if (err != TDM_OK) {
        free_paths(list, n);
        return err;
    }
    *paths = list;
    *n_paths = n;
    return TDM_OK;
}

/* Adds a stream over @p path (or fd 0 when @p path is NULL). */
static tdm_err add_stream(tdm__source *src, const char *path, char *errbuf,
                          size_t errbuf_size)
{
    tdm__stream *st = &src->st[src->n];
    int fd = 0;
    tdm_err err;

    if (path) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                             "cannot open '%s': %s", path,
                             strerror(errno));
    }
    err = tdm__stream_init(st, &src->conf, fd, path != NULL,
                           path ? path : "<stdin>");
    if (err != TDM_OK)
        return err;
    src->n++;
    return TDM_OK;
}

/* Opens this subtask's share of the files (see the file comment). */
static tdm_err file_open(const tdm__source_conf *conf, int index, int count,
                         tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                         int *n_partitions, char *errbuf, size_t errbuf_size)
{
    tdm__source *src = NULL;
    char **paths = NULL;
    size_t n_paths = 0;
    bool is_stdin;
    tdm_err err = TDM_OK;

    *out = NULL;
    *n_partitions = 0;
    if (!conf || !conf->schema || count < 1 || index < 0 || index >= count)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "file source: bad arguments");
    is_stdin = conf->type == TDM__SRC_STDIN ||
               (conf->path && strcmp(conf->path, "-") == 0);
    if (!is_stdin && (!conf->path || !conf->path[0]))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "path is not set");
    src = tdm__calloc(1, sizeof *src);
    if (!src)
        return TDM_ERR_NOMEM;
    src->conf = *conf;
    src->dead = dead;
    src->dead_ud = dead_ud;
    src->by_field = conf->partition_field >= 0 &&
                    conf->partition_field < conf->schema->n;
    if (is_stdin) {
        if (index == 0) {
            src->st = tdm__calloc(1, sizeof *src->st);
            if (!src->st) {
                err = TDM_ERR_NOMEM;
                goto fail;
            }
            err = add_stream(src, NULL, errbuf, errbuf_size);
            if (err != TDM_OK)
                goto fail;
        }
    } else {
        err = expand(conf, &paths, &n_paths, errbuf, errbuf_size);
        if (err != TDM_OK)
            goto fail;
        src->st = tdm__calloc(n_paths, sizeof *src->st);
        if (!src->st) {
            err = TDM_ERR_NOMEM;
            goto fail;
        }
        for (size_t k = 0; k < n_paths; k++) {
            bool mine = src->by_field ? index == 0
                                      : (int)(k % (size_t)count) == index;
            if (!mine)
                continue;
            err = add_stream(src, paths[k], errbuf, errbuf_size);
            if (err != TDM_OK)
                goto fail;
        }
    }
    free_paths(paths, n_paths);
    *n_partitions = src->by_field ? 0 : src->n;
    *out = src;
    return TDM_OK;
fail:
    free_paths(paths, n_paths);
    file_close(src);
    return err;
}

/* Reads the next batch (see connect.h): up to @p max rows from the
 * current stream, going on with the next ones if it ends; streams that
 * have nothing now are passed over (waiting only on the first). */
static tdm_err file_poll(tdm__source *src, tdm__batch *b, size_t max,
                         uint8_t *finished, int *eof)
{
    size_t limit = b->n + max > b->cap ? b->cap : b->n + max;
    int waits_left = src->n; /* streams that may still say "again" */
    int timeout = 50;

    *eof = 0;
    while (src->n_done < src->n && b->n < limit && waits_left > 0) {
        tdm__stream *st = &src->st[src->cur];
        int state;
        tdm_err err;

        if (st->done) {
            src->cur = (src->cur + 1) % src->n;
            continue;
        }
        err = tdm__stream_read(st, &src->conf, b, limit, (uint32_t)src->cur,
                               src->by_field ? &src->pm : NULL, src->dead,
                               src->dead_ud, timeout, &state);
        if (err != TDM_OK)
            return err;
        if (state == TDM__STREAM_END) {
            src->n_done++;
            if (!src->by_field && finished)
                finished[src->cur] = 1;
        } else if (state == TDM__STREAM_AGAIN) {
            waits_left--;
            timeout = 0;
        }
        /* Next poll (or the rest of this one) starts with the next
         * stream: files interleave batch by batch. */
        src->cur = (src->cur + 1) % src->n;
        if (state == TDM__STREAM_FULL)
            break;
    }
    if (src->n_done == src->n)
        *eof = 1;
    return TDM_OK;
}

const tdm__source_vtab tdm__file_source = {
    .version = 1,
    .open = file_open,
    .poll = file_poll,
    .close = file_close,
};
