/* SPDX-License-Identifier: MIT */
/* source_scan.c - reading a file source's input without running the job
 * (tdm_source_scan_*, tidemark.h).
 *
 * A scan is the file source of a run at parallelism 1, minus the run:
 * the node's settings become the connectors' configuration as in run.c,
 * each path is a stream (stream.c) and one poll reads up to batch.size
 * rows from the current stream, going on with the next ones when it
 * ends, and the next poll starts with the next stream, so files
 * interleave batch by batch exactly as file_source.c interleaves them.
 * The caller then takes the batch's rows one at a time, followed by the
 * partitions that ended in that poll, in stream order:
 *
 *   poll 1   rows a1..a1024 (file a) ........ items RECORD x 1024
 *   poll 2   rows b1..b700, b ends, c1..c324  RECORD x 1024, END(b)
 *   ...      the last poll ends every stream  ..., TDM_SCAN_END
 *
 * Invariant: an item is delivered only after every row of the poll that
 * produced it, so PARTITION_END follows the partition's last record as
 * the runtime tells its reader after the batch.  Used by `tidemark
 * analyze` (src/cli/analyze_scan.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "connect/conn.h"
#include "runtime/rt.h"

struct tdm_source_scan {
    tdm__source_conf conf;
    tdm__stream *st;
    int n_st;
    uint8_t *finished; /* per stream: ended in the current poll */
    tdm__partmap pm;   /* partition.field values -> partitions */
    tdm__batch *b;
    size_t next_row; /* the batch's next row to deliver */
    int next_fin;    /* the next stream to look at for an end */
    int cur, n_done; /* the poll's stream; streams that ended */
    int polled, eof; /* a batch was read; every stream ended */
    tdm_bad_record_fn on_bad;
    void *opaque;
    tdm__keybuf kb;
    char msg[512];
};

/* ---- Opening ---- */

/* The parsers' dead-letter callback, handed on to the caller's. */
static void on_dead(void *ud, const char *location, const char *reason,
                    const char *raw, size_t raw_len)
{
    tdm_source_scan *sc = ud;
    if (sc->on_bad)
        sc->on_bad(sc->opaque, location, reason, raw, raw_len);
}

/* The connectors' configuration of source @p n, as run.c plans a file
 * source (tdm__spec_conn: the connectors' constants are the table's
 * choices counted from 1; the scan reads an unvalidated node, whose
 * spec job.c keeps in step with its keys). */
static tdm_err plan(tdm_source_scan *sc, const tdm_node *n, char *errbuf,
                    size_t errbuf_size)
{
    tdm__source_conf *c = &sc->conf;
    int type = tdm__spec_conn((int)n->spec.src.type);
    if (type != TDM__SRC_FILE && type != TDM__SRC_STDIN)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "source '%s': only file sources can be scanned",
                         n->name);
    if (n->spec.src.time != TDM__SOURCE_TIME_EVENT)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "source '%s': only event time can be scanned",
                         n->name);
    c->name = n->name;
    c->type = TDM__SRC_FILE;
    c->format = tdm__spec_conn((int)n->spec.src.format);
    c->csv_header = n->spec.src.csv_header;
    c->csv_delimiter = n->spec.src.csv_delimiter[0];
    c->schema = tdm__node_schema(n);
    c->time_mode = TDM__TIME_EVENT;
    c->ts_unit = tdm__spec_conn((int)n->spec.src.ts_unit);
    if (!c->schema)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "source '%s' has no schema", n->name);
    c->ts_field = tdm__schema_find(c->schema, n->spec.src.timestamp_field);
    if (c->ts_field < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "source '%s': timestamp.field is not in the "
                         "schema",
                         n->name);
    const char *pf = n->spec.src.partition_field;
    c->partition_field = *pf ? tdm__schema_find(c->schema, pf) : -1;
    if (*pf && c->partition_field < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "source '%s': partition.field is not in the "
                         "schema",
                         n->name);
    return TDM_OK;
}

/* Opens one stream per path ("-": standard input). */
static tdm_err open_streams(tdm_source_scan *sc, const char *const *paths,
                            int n_paths, char *errbuf, size_t errbuf_size)
{
    sc->st = tdm__calloc((size_t)n_paths, sizeof *sc->st);
    sc->finished = tdm__calloc((size_t)n_paths, 1);
    if (!sc->st || !sc->finished)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < n_paths; i++) {
        bool in = strcmp(paths[i], "-") == 0;
        int fd = in ? 0 : open(paths[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                             "cannot open '%s': %s", paths[i], strerror(errno));
        tdm_err err = tdm__stream_init(&sc->st[i], &sc->conf, fd, !in,
                                       in ? "<stdin>" : paths[i]);
        sc->n_st++;
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* Opens a scan (see tidemark.h). */
tdm_err tdm_source_scan_new(tdm_job *job, const char *source,
                            const char *const *paths, int n_paths,
                            tdm_bad_record_fn on_bad, void *opaque,
                            tdm_source_scan **out, char *errbuf,
                            size_t errbuf_size)
{
    tdm_source_scan *sc = NULL;
    tdm_err err = TDM_ERR_INVAL;
    if (!out)
        return TDM_ERR_INVAL;
    *out = NULL;
    tdm_node *n = job && source ? tdm_job_node(job, source) : NULL;
    if (!paths || n_paths < 1) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "a scan needs at least one path");
        goto fail;
    }
    if (!n || n->kind != TDM_NODE_SOURCE) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "no source named '%s'", source ? source : "(null)");
        goto fail;
    }
    sc = tdm__calloc(1, sizeof *sc);
    if (!sc) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    sc->on_bad = on_bad;
    sc->opaque = opaque;
    if ((err = plan(sc, n, errbuf, errbuf_size)) != TDM_OK ||
        (err = open_streams(sc, paths, n_paths, errbuf, errbuf_size)) != TDM_OK)
        goto fail;
    sc->b = tdm__batch_new(sc->conf.schema, (size_t)job->spec.batch_size);
    if (!sc->b) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    *out = sc;
    return TDM_OK;
fail:
    tdm_source_scan_destroy(sc);
    return err;
}

/* Closes the inputs and frees the scan (see tidemark.h). */
void tdm_source_scan_destroy(tdm_source_scan *sc)
{
    if (!sc)
        return;
    for (int i = 0; i < sc->n_st; i++)
        tdm__stream_free(&sc->st[i]);
    tdm__free(sc->st);
    tdm__free(sc->finished);
    tdm__batch_destroy(sc->b);
    tdm__partmap_free(&sc->pm);
    tdm__free(sc->kb.p);
    tdm__free(sc);
}

/* ---- Reading ---- */

/* One poll of the file source at parallelism 1 (file_source.c): up to
 * batch.size rows from the current stream, going on with the next ones
 * when it ends; the next poll starts with the next stream.  Streams that
 * end get their flag set (file partitions only). */
static tdm_err poll_once(tdm_source_scan *sc)
{
    size_t limit = sc->b->cap;
    int waits_left = sc->n_st;
    int timeout = 50;
    bool by_field = sc->conf.partition_field >= 0;
    while (sc->n_done < sc->n_st && sc->b->n < limit && waits_left > 0) {
        tdm__stream *st = &sc->st[sc->cur];
        int state;
        if (st->done) {
            sc->cur = (sc->cur + 1) % sc->n_st;
            continue;
        }
        tdm_err err = tdm__stream_read(
            st, &sc->conf, sc->b, limit, (uint32_t)sc->cur,
            by_field ? &sc->pm : NULL, on_dead, sc, timeout, &state);
        if (err != TDM_OK)
            return tdm__errf(sc->msg, sizeof sc->msg, err,
                             "reading '%s' failed: %s", st->name,
                             err == TDM_ERR_IO ? strerror(errno)
                                               : tdm_strerror(err));
        if (state == TDM__STREAM_END) {
            sc->n_done++;
            if (!by_field)
                sc->finished[sc->cur] = 1;
        } else if (state == TDM__STREAM_AGAIN) {
            waits_left--;
            timeout = 0;
        }
        sc->cur = (sc->cur + 1) % sc->n_st;
        if (state == TDM__STREAM_FULL)
            break;
    }
    sc->eof = sc->n_done == sc->n_st;
    return TDM_OK;
}

/* The next stream that ended in the current poll, or -1. */
static int next_finished(tdm_source_scan *sc)
{
    while (sc->next_fin < sc->n_st) {
        int f = sc->next_fin++;
        if (sc->finished[f]) {
            sc->finished[f] = 0;
            return f;
        }
    }
    return -1;
}

/* Delivers the next item (see tidemark.h and the file comment). */
tdm_err tdm_source_scan_next(tdm_source_scan *sc, tdm_scan_item *item,
                             const tdm_row **row, int *partition)
{
    *row = NULL;
    *partition = -1;
    for (;;) {
        if (sc->next_row < sc->b->n) {
            const tdm__row *r = &sc->b->rows[sc->next_row++];
            *item = TDM_SCAN_RECORD;
            *row = r;
            *partition = (int)r->partition;
            return TDM_OK;
        }
        int f = sc->polled ? next_finished(sc) : -1;
        if (f >= 0) {
            *item = TDM_SCAN_PARTITION_END;
            *partition = f;
            return TDM_OK;
        }
        if (sc->eof) {
            *item = TDM_SCAN_END;
            return TDM_OK;
        }
        tdm__batch_clear(sc->b);
        sc->next_row = 0;
        sc->next_fin = 0;
        sc->polled = 1;
        tdm_err err = poll_once(sc);
        if (err != TDM_OK)
            return err;
    }
}

/* The message of the last error (see tidemark.h). */
const char *tdm_source_scan_errmsg(const tdm_source_scan *sc)
{
    return sc ? sc->msg : "";
}

/* ---- Records ---- */

/* A partition's name (see tidemark.h). */
tdm_err tdm_source_scan_partition_name(const tdm_source_scan *sc, int partition,
                                       const char **name, size_t *len)
{
    if (sc->conf.partition_field < 0) {
        if (partition < 0 || partition >= sc->n_st)
            return TDM_ERR_RANGE;
        *name = sc->st[partition].name;
        *len = strlen(*name);
        return TDM_OK;
    }
    if (partition < 0 || (size_t)partition >= sc->pm.n)
        return TDM_ERR_RANGE;
    /* A partition map key is a type tag ('n' for null), then the text. */
    const char *k = sc->pm.keys[partition];
    size_t kl = sc->pm.lens[partition];
    if (kl >= 1 && k[0] == 'n') {
        *name = "null";
        *len = 4;
    } else {
        *name = kl ? k + 1 : "";
        *len = kl ? kl - 1 : 0;
    }
    return TDM_OK;
}

/* A field as a time (see tidemark.h). */
tdm_err tdm_source_scan_field_time(const tdm_source_scan *sc,
                                   const tdm_row *row, int field,
                                   tdm_time_ms *out)
{
    const tdm__schema *s = sc->conf.schema;
    if (field < 0 || field >= s->n)
        return TDM_ERR_INVAL;
    const tdm__val *v = &row->v[field];
    int unit = sc->conf.ts_unit;
    if (v->null)
        return TDM_ERR_NO_TIMESTAMP;
    switch (s->fields[field].type) {
    case TDM_TYPE_TIMESTAMP:
        *out = v->u.i;
        return TDM_OK;
    case TDM_TYPE_INT64:
        return tdm__ts_from_int(v->u.i, unit, out);
    case TDM_TYPE_DOUBLE:
        return tdm__ts_from_double(v->u.d, unit, out);
    case TDM_TYPE_STRING:
        return tdm__ts_from_text(v->u.s.p, v->u.s.len, unit, out);
    default:
        return TDM_ERR_INVAL;
    }
}

/* A record's key (see tidemark.h). */
tdm_err tdm_source_scan_key(tdm_source_scan *sc, const tdm_row *row,
                            const int *fields, int n_fields, const char **key,
                            size_t *len)
{
    if (n_fields < 1 || !fields)
        return TDM_ERR_INVAL;
    for (int i = 0; i < n_fields; i++)
        if (fields[i] < 0 || fields[i] >= sc->conf.schema->n)
            return TDM_ERR_INVAL;
    return tdm__key_get(row, fields, n_fields, &sc->kb, key, len);
}
