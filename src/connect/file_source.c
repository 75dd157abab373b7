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
 *
 * Checkpoints (version 3): a file's position is the byte offset of its
 * next unread line and the number of the last line read, with the CSV
 * header's column map, so a restored partition neither re-reads its
 * header nor loses its columns, and dead letters name the same
 * file:line.  Partitions are identified by path; stdin is not
 * replayable.  Layout in docs/checkpoints.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "connect/conn.h"
#include "state/ckpt_codec.h"

struct tdm__source {
    tdm__source_conf conf; /* shallow copy: strings and schema borrowed */
    tdm__dead_fn dead;
    void *dead_ud;
    tdm__stream *st; /* one per file (or stdin) this subtask reads */
    int n;
    int cur; /* the stream the next poll starts with */
    int n_done;
    bool by_field; /* partitions are values of partition_field */
    tdm__partmap pm;
    bool is_stdin;
    int index;  /* this subtask */
    int *gid;   /* per stream: its index in the sorted expansion */
    char **all; /* every path of the expansion (for restore) */
    size_t n_all;
};

static void file_close(tdm__source *src)
{
    if (!src)
        return;
    for (int i = 0; i < src->n; i++)
        tdm__stream_free(&src->st[i]);
    tdm__free(src->st);
    tdm__partmap_free(&src->pm);
    tdm__free(src->gid);
    for (size_t i = 0; i < src->n_all; i++)
        tdm__free(src->all[i]);
    tdm__free(src->all);
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
                        "cannot read the folders of '%s'", conf->path);
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
                            "cannot open '%s': %s", conf->path, strerror(e));
        } else {
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                            "no file matches '%s'", conf->path);
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
                             "cannot open '%s': %s", path, strerror(errno));
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
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL, "path is not set");
    src = tdm__calloc(1, sizeof *src);
    if (!src)
        return TDM_ERR_NOMEM;
    src->conf = *conf;
    src->dead = dead;
    src->dead_ud = dead_ud;
    src->by_field =
        conf->partition_field >= 0 && conf->partition_field < conf->schema->n;
    src->is_stdin = is_stdin;
    src->index = index;
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
        src->gid = tdm__calloc(n_paths, sizeof *src->gid);
        if (!src->st || !src->gid) {
            err = TDM_ERR_NOMEM;
            goto fail;
        }
        for (size_t k = 0; k < n_paths; k++) {
            bool mine =
                src->by_field ? index == 0 : (int)(k % (size_t)count) == index;
            if (!mine)
                continue;
            src->gid[src->n] = (int)k;
            err = add_stream(src, paths[k], errbuf, errbuf_size);
            if (err != TDM_OK)
                goto fail;
        }
        src->all = paths; /* kept for restore */
        src->n_all = n_paths;
        paths = NULL;
        n_paths = 0;
    }
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

/* ---- Checkpoints ---- */

enum { SNAP_FINISHED = 1, SNAP_SKIPPING = 2, SNAP_HEADER_DONE = 4 };

/* Encodes this subtask's files (docs/checkpoints.md, "File source"). */
static tdm_err file_snapshot(tdm__source *src, struct tdm__enc *e, char *errbuf,
                             size_t errbuf_size)
{
    if (src->is_stdin)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "source '%s': standard input cannot be replayed, "
                         "so it has no checkpoint position",
                         src->conf.name ? src->conf.name : "?");
    tdm__enc_begin(e, TDM__SNAP_TAG_FILE);
    tdm__enc_uvar(e, TDM__SNAP_SOURCE_VERSION);
    tdm__enc_u8(e, src->by_field ? 1 : 0);
    tdm__enc_svar(e, src->n ? src->gid[src->cur] : -1);
    tdm__enc_uvar(e, (uint64_t)src->n);
    for (int i = 0; i < src->n; i++) {
        const tdm__stream *st = &src->st[i];
        uint8_t flags = (uint8_t)((st->done ? SNAP_FINISHED : 0) |
                                  (st->lr.skipping ? SNAP_SKIPPING : 0) |
                                  (st->header_done ? SNAP_HEADER_DONE : 0));
        tdm__enc_uvar(e, (uint64_t)src->gid[i]);
        tdm__enc_str(e, st->name);
        tdm__enc_uvar(e, (uint64_t)tdm__lines_offset(&st->lr));
        tdm__enc_uvar(e, (uint64_t)st->lr.line_no);
        tdm__enc_u8(e, flags);
        tdm__enc_uvar(e, (uint64_t)st->header_line);
        tdm__enc_str(e, st->header_error ? st->header_error : "");
        tdm__enc_uvar(e, (uint64_t)(st->columns ? st->n_columns : 0));
        for (int c = 0; st->columns && c < st->n_columns; c++)
            tdm__enc_svar(e, st->columns[c]);
    }
    if (src->by_field) {
        tdm__enc_uvar(e, (uint64_t)src->pm.n);
        for (size_t k = 0; k < src->pm.n; k++)
            tdm__enc_bytes(e, src->pm.keys[k], src->pm.lens[k]);
    }
    tdm__enc_end(e);
    return e->oom ? TDM_ERR_NOMEM : TDM_OK;
}

/* One decoded file entry. */
typedef struct file_entry {
    uint64_t gid, offset, line_no, header_line;
    uint8_t flags;
    char *path, *header_error;
    int *columns;
    int n_columns;
} file_entry;

static void entry_free(file_entry *fe)
{
    tdm__free(fe->path);
    tdm__free(fe->header_error);
    tdm__free(fe->columns);
    memset(fe, 0, sizeof *fe);
}

/* Decodes one entry, checking every value.  TDM_OK or TDM_ERR_PARSE /
 * NOMEM (the decoder holds the parse error). */
static tdm_err entry_read(tdm__source *src, tdm__dec *d, file_entry *fe)
{
    uint64_t n_col;

    memset(fe, 0, sizeof *fe);
    tdm__dec_uvar(d, &fe->gid);
    tdm__dec_str(d, &fe->path);
    tdm__dec_uvar(d, &fe->offset);
    tdm__dec_uvar(d, &fe->line_no);
    tdm__dec_u8(d, &fe->flags);
    tdm__dec_uvar(d, &fe->header_line);
    tdm__dec_str(d, &fe->header_error);
    if (tdm__dec_uvar(d, &n_col) != TDM_OK)
        return TDM_ERR_PARSE;
    if (fe->offset > INT64_MAX || fe->line_no > INT64_MAX ||
        fe->header_line > INT64_MAX || fe->gid > INT32_MAX)
        return tdm__dec_fail(d, "position out of range");
    if (fe->flags & ~(SNAP_FINISHED | SNAP_SKIPPING | SNAP_HEADER_DONE))
        return tdm__dec_fail(d, "unknown file flags");
    if (n_col > tdm__dec_left(d) || n_col > 65536)
        return tdm__dec_fail(d, "too many CSV columns");
    if (n_col > 0 &&
        (src->conf.format != TDM__FMT_CSV || !(fe->flags & SNAP_HEADER_DONE)))
        return tdm__dec_fail(d, "CSV columns without a header");
    if (!(fe->flags & SNAP_HEADER_DONE) &&
        !(src->conf.format == TDM__FMT_CSV && src->conf.csv_header))
        return tdm__dec_fail(d, "header state of a source without one");
    if (n_col > 0) {
        fe->columns = tdm__malloc((size_t)n_col * sizeof *fe->columns);
        if (!fe->columns)
            return TDM_ERR_NOMEM;
        for (uint64_t c = 0; c < n_col; c++) {
            int64_t v;
            if (tdm__dec_svar(d, &v) != TDM_OK)
                return TDM_ERR_PARSE;
            if (v < -1 || v >= src->conf.schema->n)
                return tdm__dec_fail(d, "CSV column maps to no field");
            fe->columns[c] = (int)v;
        }
    }
    fe->n_columns = (int)n_col;
    return tdm__dec_error(d, NULL, NULL);
}

/* Moves stream @p i to the position of @p fe (takes fe's column map). */
static tdm_err entry_apply(tdm__source *src, int i, file_entry *fe,
                           char *errbuf, size_t errbuf_size)
{
    tdm__stream *st = &src->st[i];
    struct stat sb;

    if (fstat(st->lr.fd, &sb) != 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot restore '%s': %s", st->name, strerror(errno));
    if ((uint64_t)sb.st_size < fe->offset)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot restore '%s': it has %lld bytes, fewer "
                         "than its checkpointed position %llu (the file "
                         "shrank or was replaced)",
                         st->name, (long long)sb.st_size,
                         (unsigned long long)fe->offset);
    if (tdm__lines_seek(&st->lr, (int64_t)fe->offset, (int64_t)fe->line_no,
                        (fe->flags & SNAP_SKIPPING) != 0) != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot seek '%s': %s", st->name, strerror(errno));
    st->header_done = (fe->flags & SNAP_HEADER_DONE) != 0;
    st->header_line = (int64_t)fe->header_line;
    tdm__free(st->header_error);
    st->header_error = NULL;
    if (fe->header_error[0]) {
        st->header_error = fe->header_error;
        fe->header_error = NULL;
    }
    if (fe->n_columns > 0 || st->header_done) {
        tdm__free(st->columns);
        st->columns = fe->columns;
        st->n_columns = fe->n_columns;
        fe->columns = NULL;
    }
    memset(&st->hint, 0, sizeof st->hint);
    /* Finished stays finished, not reported again (the reader's
     * restored split says so). */
    if ((fe->flags & SNAP_FINISHED) && !st->done) {
        st->done = true;
        src->n_done++;
    }
    return TDM_OK;
}

/* Whether @p path is in the current expansion. */
static bool path_known(const tdm__source *src, const char *path)
{
    for (size_t k = 0; k < src->n_all; k++)
        if (strcmp(src->all[k], path) == 0)
            return true;
    return false;
}

/* Restores the files this subtask reads from the merged sections of the
 * old subtasks (see connect.h).  On error the source must be closed. */
static tdm_err file_restore(tdm__source *src, struct tdm__dec *d, char *errbuf,
                            size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    file_entry fe;
    uint8_t *seen = NULL;
    tdm__dec body;
    bool have_cursor = false;

    memset(&fe, 0, sizeof fe);
    if (src->is_stdin)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "source '%s': standard input cannot be replayed",
                         src->conf.name ? src->conf.name : "?");
    seen = tdm__calloc((size_t)(src->n ? src->n : 1), 1);
    if (!seen)
        return TDM_ERR_NOMEM;
    while (tdm__dec_left(d) > 0) {
        uint64_t tag, version, n;
        uint8_t by_field;
        int64_t cursor;
        if (tdm__dec_section(d, &tag, &body) != TDM_OK)
            goto bad_d;
        if (tag != TDM__SNAP_TAG_FILE) {
            tdm__dec_fail(&body, "not a file source section");
            goto bad;
        }
        tdm__dec_uvar(&body, &version);
        if (tdm__dec_error(&body, NULL, NULL) == TDM_OK &&
            version != TDM__SNAP_SOURCE_VERSION)
            tdm__dec_fail(&body, "unknown file source version");
        tdm__dec_u8(&body, &by_field);
        if (tdm__dec_error(&body, NULL, NULL) == TDM_OK &&
            (by_field != 0) != src->by_field)
            tdm__dec_fail(&body, "partition.field differs from the "
                                 "checkpoint's");
        tdm__dec_svar(&body, &cursor);
        if (tdm__dec_uvar(&body, &n) != TDM_OK)
            goto bad;
        if (n > tdm__dec_left(&body))
            tdm__dec_fail(&body, "too many files");
        for (uint64_t k = 0; k < n; k++) {
            err = entry_read(src, &body, &fe);
            if (err == TDM_ERR_NOMEM)
                goto out;
            if (err != TDM_OK)
                goto bad;
            int i = 0;
            while (i < src->n && strcmp(src->st[i].name, fe.path) != 0)
                i++;
            if (i < src->n) {
                if (seen[i]) {
                    tdm__dec_fail(&body, "file listed twice");
                    goto bad;
                }
                seen[i] = 1;
                err = entry_apply(src, i, &fe, errbuf, errbuf_size);
                if (err != TDM_OK)
                    goto out;
                if (!have_cursor && cursor == (int64_t)fe.gid) {
                    src->cur = i;
                    have_cursor = true;
                }
            } else if (!(fe.flags & SNAP_FINISHED) && src->index == 0 &&
                       !path_known(src, fe.path)) {
                err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                                "cannot restore '%s': the file of the "
                                "checkpoint is gone",
                                fe.path);
                goto out;
            }
            entry_free(&fe);
        }
        if (by_field) {
            uint64_t n_keys;
            if (tdm__dec_uvar(&body, &n_keys) != TDM_OK)
                goto bad;
            if (n_keys > tdm__dec_left(&body) || n_keys > UINT32_MAX)
                tdm__dec_fail(&body, "too many partition values");
            for (uint64_t k = 0; k < n_keys; k++) {
                const void *p;
                size_t len;
                uint32_t idx;
                if (tdm__dec_bytes(&body, &p, &len) != TDM_OK)
                    goto bad;
                if (src->index != 0)
                    continue;
                err = tdm__partmap_get(&src->pm, p, len, &idx);
                if (err != TDM_OK)
                    goto out;
                if (idx != k) {
                    tdm__dec_fail(&body, "partition value listed twice");
                    goto bad;
                }
            }
        }
        if (tdm__dec_error(&body, NULL, NULL) != TDM_OK)
            goto bad;
    }
    if (tdm__dec_error(d, NULL, NULL) != TDM_OK)
        goto bad_d;
    goto out;
bad_d:
    err = tdm__conn_snap_error(&src->conf, d, errbuf, errbuf_size);
    goto out;
bad:
    err = tdm__conn_snap_error(&src->conf, &body, errbuf, errbuf_size);
out:
    entry_free(&fe);
    tdm__free(seen);
    return err;
}

const tdm__source_vtab tdm__file_source = {
    .version = 3,
    .open = file_open,
    .poll = file_poll,
    .close = file_close,
    .snapshot = file_snapshot,
    .restore = file_restore,
};
