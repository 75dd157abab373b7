/* SPDX-License-Identifier: MIT */
/* stream.c - the lines of one partition (a file, stdin, a socket) as rows:
 * blank lines are skipped, a CSV header is read first, every other line
 * is parsed into the batch or sent to the dead-letter callback with its
 * location "name:line" and the reason.  Also the map from values of a
 * partition field to partition indices.
 *
 * A UTF-8 byte order mark is dropped from the first line.  Rows the
 * timestamp guard may catch after the poll are noted with their location
 * and line (row.h, keep_after), since the line buffer moves on.
 *
 * A CSV header that cannot be used (bad quoting, a column named twice) is
 * itself dead-lettered, and so is every later line of that stream, with a
 * reason pointing at the header: guessing the columns would turn bad
 * input into wrong results.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "connect/conn.h"
#include "core/map.h"

/* ---- Partition map ---- */

/* Makes room for one more key in the key arrays.  TDM_OK or NOMEM. */
static tdm_err partmap_reserve(tdm__partmap *m)
{
    if (m->n < m->cap)
        return TDM_OK;
    size_t cap = m->cap ? 2 * m->cap : 8;
    char **keys = tdm__realloc(m->keys, cap * sizeof *keys);
    if (!keys)
        return TDM_ERR_NOMEM;
    m->keys = keys;
    size_t *lens = tdm__realloc(m->lens, cap * sizeof *lens);
    if (!lens)
        return TDM_ERR_NOMEM;
    m->lens = lens;
    m->cap = cap;
    return TDM_OK;
}

/* Index of @p key in @p m, added if new (see conn.h). */
tdm_err tdm__partmap_get(tdm__partmap *m, const char *key, size_t len,
                         uint32_t *index)
{
    uint64_t h = tdm__hash_bytes(key, len);
    const uint64_t *found = tdm__map_find(m->idx, key, len, h);
    if (found) {
        *index = (uint32_t)*found;
        return TDM_OK;
    }
    if (partmap_reserve(m) != TDM_OK)
        return TDM_ERR_NOMEM;
    if (!m->idx && !(m->idx = tdm__map_new()))
        return TDM_ERR_NOMEM;
    char *copy = tdm__memdup(key, len ? len : 1);
    uint64_t *val;
    if (!copy || tdm__map_put(m->idx, key, len, h, &val, NULL) != TDM_OK) {
        tdm__free(copy);
        return TDM_ERR_NOMEM;
    }
    *val = m->n;
    m->keys[m->n] = copy;
    m->lens[m->n] = len;
    *index = (uint32_t)m->n++;
    return TDM_OK;
}

/* Frees the keys and tables; accepts NULL and a zeroed map. */
void tdm__partmap_free(tdm__partmap *m)
{
    if (!m)
        return;
    for (size_t e = 0; e < m->n; e++)
        tdm__free(m->keys[e]);
    tdm__free(m->keys);
    tdm__free(m->lens);
    tdm__map_destroy(m->idx);
    memset(m, 0, sizeof *m);
}

/* The partition of a parsed row by the value of conf->partition_field:
 * the key is a type tag and the value's text (null has its own key). */
static tdm_err partition_of(const tdm__source_conf *conf, const tdm__row *row,
                            tdm__partmap *pm, uint32_t *index)
{
    const tdm__val *v = &row->v[conf->partition_field];
    tdm_type t = conf->schema->fields[conf->partition_field].type;
    char buf[72];
    int len;

    if (v->null)
        return tdm__partmap_get(pm, "n", 1, index);
    if (t == TDM_TYPE_STRING) {
        /* Tag 's' then the bytes, without copying a long value twice:
         * strings are compared as they are. */
        char small[64];
        if (v->u.s.len + 1 <= sizeof small) {
            small[0] = 's';
            memcpy(small + 1, v->u.s.p, v->u.s.len);
            return tdm__partmap_get(pm, small, v->u.s.len + 1, index);
        }
        char *tmp = tdm__malloc(v->u.s.len + 1);
        if (!tmp)
            return TDM_ERR_NOMEM;
        tmp[0] = 's';
        memcpy(tmp + 1, v->u.s.p, v->u.s.len);
        tdm_err err = tdm__partmap_get(pm, tmp, v->u.s.len + 1, index);
        tdm__free(tmp);
        return err;
    }
    if (t == TDM_TYPE_DOUBLE) {
        buf[0] = 'd';
        tdm__conn_fmt_double(buf + 1, sizeof buf - 1, v->u.d);
        len = (int)strlen(buf);
    } else {
        len = snprintf(buf, sizeof buf, "i%lld", (long long)v->u.i);
    }
    return tdm__partmap_get(pm, buf, (size_t)len, index);
}

/* ---- Streams ---- */

/* Opens a stream over @p fd (see conn.h).  Without a CSV header the
 * columns are the schema's fields in order. */
tdm_err tdm__stream_init(tdm__stream *st, const tdm__source_conf *conf, int fd,
                         bool own_fd, const char *name)
{
    tdm_err err;

    memset(st, 0, sizeof *st);
    st->lr.fd = -1;
    err = tdm__lines_init(&st->lr, fd, own_fd);
    if (err != TDM_OK)
        goto fail; /* an owned fd is closed by tdm__stream_free */
    st->name = tdm__strndup(name, strlen(name));
    if (!st->name) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    st->header_done = !(conf->format == TDM__FMT_CSV && conf->csv_header);
    if (conf->format == TDM__FMT_CSV && !conf->csv_header) {
        st->n_columns = conf->schema->n;
        st->columns = tdm__malloc((size_t)(st->n_columns ? st->n_columns : 1) *
                                  sizeof *st->columns);
        if (!st->columns) {
            err = TDM_ERR_NOMEM;
            goto fail;
        }
        for (int i = 0; i < st->n_columns; i++)
            st->columns[i] = i;
    }
    return TDM_OK;
fail:
    tdm__stream_free(st);
    return err;
}

/* Frees a stream; accepts a zeroed or half-built one. */
void tdm__stream_free(tdm__stream *st)
{
    if (!st)
        return;
    tdm__lines_free(&st->lr);
    tdm__free(st->name);
    tdm__free(st->columns);
    tdm__free(st->header_error);
    st->name = NULL;
    st->columns = NULL;
    st->header_error = NULL;
}

/* Writes the location of the stream's current line, "name:line". */
static void locate(const tdm__stream *st, char *loc, size_t n)
{
    snprintf(loc, n, "%s:%lld", st->name, (long long)st->lr.line_no);
}

/* Sends a dead letter located at the stream's current line. */
static void dead_letter(tdm__stream *st, tdm__dead_fn dead, void *ud,
                        const char *reason, const char *raw, size_t len)
{
    char loc[4096 + 32];

    if (!dead)
        return;
    locate(st, loc, sizeof loc);
    dead(ud, loc, reason, raw, len);
}

/* Notes the location and bytes of the row just parsed from @p line for
 * a dead letter after the poll (row.h, keep_after).  Without memory the
 * note is skipped: the dead letter then shows the row as parsed, which
 * is no reason to stop the stream. */
static void keep(const tdm__stream *st, tdm__batch *b, const char *line,
                 size_t len)
{
    char loc[4096 + 32];

    locate(st, loc, sizeof loc);
    (void)tdm__batch_keep(b, loc, line, len);
}

/* The UTF-8 byte order mark some editors put at the start of a file.  It
 * is no part of the first line's text (a CSV header's first column, a
 * JSON object), so the first line of a stream loses it. */
static void strip_bom(const tdm__stream *st, const char **line, size_t *len)
{
    if (st->lr.line_no == 1 && *len >= 3 &&
        memcmp(*line, "\xEF\xBB\xBF", 3) == 0) {
        *line += 3;
        *len -= 3;
    }
}

/* Handles the CSV header line.  Returns TDM_OK or NOMEM. */
static tdm_err read_header(tdm__stream *st, const tdm__source_conf *conf,
                           const char *line, size_t len, tdm__dead_fn dead,
                           void *ud)
{
    char reason[256];
    tdm_err err = tdm__csv_header(conf, line, len, &st->columns, &st->n_columns,
                                  reason, sizeof reason);

    st->header_done = true;
    st->header_line = st->lr.line_no;
    if (err == TDM_ERR_NOMEM)
        return err;
    if (err != TDM_OK) {
        char msg[320];
        snprintf(msg, sizeof msg, "unusable CSV header: %s", reason);
        st->header_error = tdm__strndup(msg, strlen(msg));
        if (!st->header_error)
            return TDM_ERR_NOMEM;
        dead_letter(st, dead, ud, msg, line, len);
    }
    return TDM_OK;
}

/* Reads lines of @p st into @p b (see conn.h). */
tdm_err tdm__stream_read(tdm__stream *st, const tdm__source_conf *conf,
                         tdm__batch *b, size_t max, uint32_t partition,
                         tdm__partmap *pm, tdm__dead_fn dead, void *dead_ud,
                         int timeout_ms, int *state)
{
    char reason[512];
    bool waited = false;

    if (max > b->cap)
        max = b->cap;
    if (st->done) {
        *state = TDM__STREAM_END;
        return TDM_OK;
    }
    while (b->n < max) {
        const char *line;
        size_t len;
        tdm_err err;
        /* Wait for input at most once per call: once something was read,
         * hand it over rather than wait for more. */
        int rc = tdm__lines_next(&st->lr, &line, &len, waited ? 0 : timeout_ms);
        waited = true;
        switch (rc) {
        case TDM__LINE_EOF:
            st->done = true;
            *state = TDM__STREAM_END;
            return TDM_OK;
        case TDM__LINE_AGAIN:
            *state = TDM__STREAM_AGAIN;
            return TDM_OK;
        case TDM__LINE_ERROR:
            return errno == ENOMEM ? TDM_ERR_NOMEM : TDM_ERR_IO;
        case TDM__LINE_TOO_LONG:
            snprintf(reason, sizeof reason,
                     "line too long (more than %zu bytes)", TDM__LINE_MAX);
            dead_letter(st, dead, dead_ud, reason, line, len);
            continue;
        default:
            break;
        }
        strip_bom(st, &line, &len);
        /* Blank lines are skipped silently, also before a header:
         * they are not records, so they are neither rows nor dead
         * letters (their numbers still count in locations). */
        if (tdm__conn_is_blank(line, len))
            continue;
        if (!st->header_done) {
            err = read_header(st, conf, line, len, dead, dead_ud);
            if (err != TDM_OK)
                return err;
            continue;
        }
        if (st->header_error) {
            snprintf(reason, sizeof reason, "no usable CSV header (line %lld)",
                     (long long)st->header_line);
            dead_letter(st, dead, dead_ud, reason, line, len);
            continue;
        }
        if (conf->format == TDM__FMT_CSV)
            err = tdm__csv_parse_line(conf, st->columns, st->n_columns, line,
                                      len, b, reason, sizeof reason);
        else
            err = tdm__json_parse_line_hint(conf, &st->hint, line, len, b,
                                            reason, sizeof reason);
        if (err == TDM_OK) {
            tdm__row *row = &b->rows[b->n - 1];
            row->partition = partition;
            if (pm && conf->partition_field >= 0 &&
                conf->partition_field < conf->schema->n) {
                err = partition_of(conf, row, pm, &row->partition);
                if (err != TDM_OK) {
                    tdm__batch_drop_last(b);
                    return err;
                }
            }
            if (tdm__batch_wants(b, row))
                keep(st, b, line, len);
            continue;
        }
        /* The parser added a row before failing: drop it, then report
         * the line as data (only NOMEM stops the stream). */
        tdm__batch_drop_last(b);
        if (err != TDM_ERR_PARSE)
            return err;
        dead_letter(st, dead, dead_ud, reason, line, len);
    }
    *state = TDM__STREAM_FULL;
    return TDM_OK;
}
