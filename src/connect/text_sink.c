/* SPDX-License-Identifier: MIT */
/* text_sink.c - the stdout, file and discard sinks, writing JSON lines or
 * CSV: window results, join pairs, late records and dead letters.
 *
 * Rows (compact JSON, no blanks; CSV has the same columns in the same
 * order, with a header taken from the first row written):
 *   result   {<columns...>, "window_start": s, "window_end": e,
 *             "timing": "early"|"on_time"|"late", "pane": i,
 *             "update": bool}  (the window and pane members only when the
 *             row has a window), plus "op" by output mode:
 *             append - none; retract - "+" or "-" (a retraction of the
 *             previous result); upsert on stdout - "upsert".
 *   select   with the key "select" (conf->select, select.c), results and
 *             pass-through rows carry the selected columns instead, in
 *             its order, under their aliases ("op" stays last); a CSV
 *             header names them.
 *   late     {<the record's fields...>, "ts": event time} ("ts" is left
 *             out when the schema has a field of that name).
 *   dead     {"location": "f.jsonl:17", "reason": "...", "raw": "..."}.
 * Values: int64 and timestamps as integers (epoch ms), doubles in the
 * shortest form that reads back exactly with ".0" added to integral ones
 * (non-finite: null), bools true/false, null as null (CSV: empty).
 * Strings are escaped; bytes that are not UTF-8 become \u00XX.
 *
 * Output modes (the `upsert` argument of open): 0 append, 1 upsert,
 * 2 retract.  An upsert file sink keeps the latest row of every
 * upsert_key in memory, in order of first appearance, and writes the file
 * at close: to "path.tmp", then renamed over "path", so a reader never
 * sees half a table.
 *
 * Several subtasks share a sink: every write takes the sink's mutex.
 * Output is buffered and written when 64 KiB have gathered or 500 ms have
 * passed (checked at every write and at the run's tick), at flush
 * (version 2: also writes a changed upsert table) and at close.  A file
 * sink creates missing parent folders.  The JSON lines are
 * also exported (conn.h) for the Kafka sink, so both write the same text.
 *
 * Exactly-once (conf->exactly_once, connect.h version 3): a file sink
 * object belongs to one writer and writes hidden part files that
 * pre_commit seals and commit renames to "path.part-<ckpt>-<w>"; an
 * upsert file sink writes its rows as a changelog in the same way
 * ("path.changelog.part-<ckpt>-<w>", below), which finish() compacts into
 * "path" at the end of the run.  stdout stays at-least-once.  See
 * "Two-phase commit" below and docs/checkpoints.md, "Sinks: two-phase
 * commit".
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "connect/conn.h"
#include "core/busy.h"
#include "core/decimal.h"
#include "core/fileio.h"
#include "state/ckpt_codec.h"

#define FLUSH_BYTES ((size_t)64 << 10)
#define FLUSH_MS 500

/* The growable byte buffer of conn.h. */
typedef tdm__sbuf sbuf;

/* One key of an upsert table and its latest line. */
typedef struct upsert_entry {
    char *key;
    size_t key_len;
    char *line;
    size_t line_len;
    bool gone; /* retracted */
} upsert_entry;

struct tdm__sinkobj {
    char *name, *path;
    int type, format, mode;
    FILE *f;
    bool own_f;
    pthread_mutex_t mu;
    sbuf out;  /* pending output */
    sbuf line; /* scratch for upsert lines */
    bool header_done;
    char *header; /* upsert CSV: the header line */
    size_t header_len;
    int64_t last_flush_ms;
    int64_t (*now)(void *); /* conf->now, NULL: monotonic */
    void *now_ud;
    bool table_dirty; /* upsert table changed since it was written */
    tdm_err io_err;
    char io_msg[320];
    upsert_entry *ents;
    size_t n_ents, cap_ents;
    uint32_t *slots; /* entry + 1, 0 empty */
    size_t n_slots;
    /* Two-phase commit (conf->exactly_once on a file sink; see
     * "Two-phase commit" below).  Rows go to the in-progress part
     * (fd, opened at its first bytes); pre_commit turns it into a
     * pending part, commit into a visible one. */
    bool tpc;
    bool log; /* tpc in upsert mode: parts hold a changelog */
    int writer;
    uint64_t restored;   /* conf->restored: the checkpoint restored */
    int fd;              /* the in-progress part, -1: none yet */
    uint64_t part_bytes; /* bytes in the in-progress part */
    char *dir, *base;    /* folder and file name of path */
    char *inprog;        /* dir/.base.part-<w>.inprogress */
    uint64_t *pend;      /* ids of pending parts, ascending */
    size_t n_pend, cap_pend;
    bool recovered; /* recover() ran */
    tdm__sel *sel;  /* the key "select", or NULL (select.c) */
};

/* ---- Buffers ---- */

static void sb_reserve(sbuf *b, size_t extra)
{
    if (b->oom || b->cap - b->len >= extra)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < extra)
        cap *= 2;
    char *np = tdm__realloc(b->p, cap);
    if (!np) {
        b->oom = true;
        return;
    }
    b->p = np;
    b->cap = cap;
}

static void sb_put(sbuf *b, const char *s, size_t n)
{
    sb_reserve(b, n);
    if (b->oom)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void sb_puts(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_int(sbuf *b, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    sb_put(b, tmp, (size_t)n);
}

/* A double as JSON/CSV text; false when it is not finite. */
static bool fmt_double(char *out, size_t n, double d)
{
    size_t len;
    if (!isfinite(d))
        return false;
    tdm__conn_fmt_double(out, n, d);
    len = strlen(out);
    if (strspn(out, "-0123456789") == len && len + 2 < n)
        memcpy(out + len, ".0", 3);
    return true;
}

/* Length of the valid UTF-8 sequence at s[i] (1 for ASCII), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t len, size_t i)
{
    unsigned char c = s[i];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    if (i + need >= len || s[i + 1] < lo || s[i + 1] > hi)
        return 0;
    for (size_t k = 2; k <= need; k++)
        if (s[i + k] < 0x80 || s[i + k] > 0xBF)
            return 0;
    return need + 1;
}

/* A JSON string literal. */
static void json_str(sbuf *b, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;

    sb_reserve(b, n + 2);
    sb_put(b, "\"", 1);
    while (i < n) {
        size_t run = i;
        /* Copy plain runs in one go. */
        while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' &&
               s[run] != '\\')
            run++;
        if (run > i) {
            sb_put(b, p + i, run - i);
            i = run;
            continue;
        }
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
            i++;
        } else if (c == '\n') {
            sb_put(b, "\\n", 2);
            i++;
        } else if (c == '\t') {
            sb_put(b, "\\t", 2);
            i++;
        } else if (c == '\r') {
            sb_put(b, "\\r", 2);
            i++;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            sb_put(b, e, 6);
            i++;
        } else {
            size_t k = utf8_len(s, n, i);
            if (k > 0) {
                sb_put(b, p + i, k);
                i += k;
            } else {
                char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                sb_put(b, e, 6);
                i++;
            }
        }
    }
    sb_put(b, "\"", 1);
}

/* A CSV field: quoted when it holds a comma, quote, CR, LF or outer
 * blanks; quotes doubled. */
static void csv_str(sbuf *b, const char *p, size_t n)
{
    bool quote = n > 0 && (p[0] == ' ' || p[n - 1] == ' ');
    for (size_t i = 0; i < n && !quote; i++)
        quote = p[i] == ',' || p[i] == '"' || p[i] == '\n' || p[i] == '\r';
    if (!quote) {
        sb_put(b, p, n);
        return;
    }
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '"')
            sb_put(b, "\"", 1);
        sb_put(b, p + i, 1);
    }
    sb_put(b, "\"", 1);
}

/* ---- Rows as lines ---- */

/* Line builder: JSON members or CSV cells, and the CSV header. */
typedef struct lb {
    sbuf *b;   /* the line */
    sbuf *hdr; /* CSV header being collected, or NULL */
    bool json;
    int n; /* members so far */
} lb;

static void lb_begin(lb *l)
{
    l->n = 0;
    if (l->json)
        sb_put(l->b, "{", 1);
}

static void lb_key(lb *l, const char *name)
{
    if (l->json) {
        if (l->n > 0)
            sb_put(l->b, ",", 1);
        json_str(l->b, name, strlen(name));
        sb_put(l->b, ":", 1);
    } else {
        if (l->n > 0)
            sb_put(l->b, ",", 1);
        if (l->hdr) {
            if (l->n > 0)
                sb_put(l->hdr, ",", 1);
            csv_str(l->hdr, name, strlen(name));
        }
    }
    l->n++;
}

static void lb_val(lb *l, tdm_type t, const tdm__val *v)
{
    char tmp[64];

    if (v->null) {
        if (l->json)
            sb_puts(l->b, "null");
        return;
    }
    switch (t) {
    case TDM_TYPE_INT64:
    case TDM_TYPE_TIMESTAMP:
        sb_int(l->b, v->u.i);
        break;
    case TDM_TYPE_DOUBLE:
        if (fmt_double(tmp, sizeof tmp, v->u.d))
            sb_puts(l->b, tmp);
        else if (l->json)
            sb_puts(l->b, "null");
        break;
    case TDM_TYPE_BOOL:
        sb_puts(l->b, v->u.i ? "true" : "false");
        break;
    case TDM_TYPE_STRING:
        if (l->json)
            json_str(l->b, v->u.s.p, v->u.s.len);
        else
            csv_str(l->b, v->u.s.p, v->u.s.len);
        break;
    default: /* decimal: exactly its scale's digits, a JSON number */
        sb_put(l->b, tmp,
               tdm__dec_format(tmp, sizeof tmp, v->u.i, TDM_DECIMAL_SCALE(t)));
        break;
    }
}

/* A text value (after its key). */
static void lb_text(lb *l, const char *s, size_t n)
{
    if (l->json)
        json_str(l->b, s, n);
    else
        csv_str(l->b, s, n);
}

static void lb_str(lb *l, const char *name, const char *s, size_t n)
{
    lb_key(l, name);
    lb_text(l, s, n);
}

/* A null value (after its key): JSON null, an empty CSV cell. */
static void lb_null(lb *l)
{
    tdm__val v = {.null = true};
    lb_val(l, TDM_TYPE_INT64, &v);
}

static void lb_int(lb *l, const char *name, int64_t v)
{
    lb_key(l, name);
    sb_int(l->b, v);
}

static void lb_end(lb *l)
{
    if (l->json)
        sb_put(l->b, "}", 1);
    sb_put(l->b, "\n", 1);
    if (l->hdr)
        sb_put(l->hdr, "\n", 1);
}

static const char *timing_name(tdm_pane_timing t)
{
    switch (t) {
    case TDM_PANE_EARLY:
        return "early";
    case TDM_PANE_LATE:
        return "late";
    default:
        return "on_time";
    }
}

/* Every column of a result, then its window and pane members. */
static void result_columns(lb *l, const tdm__out_row *row)
{
    for (int i = 0; i < row->n_cols; i++) {
        lb_key(l, row->cols[i].name);
        lb_val(l, row->cols[i].type, &row->cols[i].v);
    }
    if (row->has_window) {
        lb_int(l, "window_start", row->win_start);
        lb_int(l, "window_end", row->win_end);
        const char *t = timing_name(row->timing);
        lb_str(l, "timing", t, strlen(t));
        lb_int(l, "pane", row->pane_index);
        lb_key(l, "update");
        sb_puts(l->b, row->is_update ? "true" : "false");
    }
}

/* The value of a result's selected column @p src (an index or a
 * TDM__SEL_* member, select.c). */
static void result_value(lb *l, const tdm__out_row *row, int src)
{
    const char *t;
    if (src >= 0) {
        lb_val(l, row->cols[src].type, &row->cols[src].v);
        return;
    }
    switch (src) {
    case TDM__SEL_WIN_START:
        sb_int(l->b, row->win_start);
        break;
    case TDM__SEL_WIN_END:
        sb_int(l->b, row->win_end);
        break;
    case TDM__SEL_WIN_TIME:
        sb_int(l->b, tdm__time_sub_sat(row->win_end, 1));
        break;
    case TDM__SEL_TIMING:
        t = timing_name(row->timing);
        lb_text(l, t, strlen(t));
        break;
    case TDM__SEL_PANE:
        sb_int(l->b, row->pane_index);
        break;
    case TDM__SEL_UPDATE:
        sb_puts(l->b, row->is_update ? "true" : "false");
        break;
    default:
        lb_null(l);
        break;
    }
}

/* The selected columns of a result, in the selection's order, under
 * their output names. */
static void result_selected(lb *l, const tdm__out_row *row, tdm__sel *sel)
{
    const int *map = tdm__sel_map_result(sel, row);
    if (!map) {
        l->b->oom = true;
        return;
    }
    for (int i = 0; i < tdm__sel_count(sel); i++) {
        lb_key(l, tdm__sel_out(sel, i));
        result_value(l, row, map[i]);
    }
}

/* Formats a result row in output mode @p mode (0 append, 1 upsert,
 * 2 retract); @p upsert_op adds "op": "upsert" to upsert rows (a stream
 * of lines, where the reader must know they replace earlier ones).
 * With a selection @p sel only its columns are written; "op" always. */
static void format_result(lb *l, const tdm__out_row *row, int mode,
                          bool upsert_op, tdm__sel *sel)
{
    lb_begin(l);
    if (sel)
        result_selected(l, row, sel);
    else
        result_columns(l, row);
    if (mode == 2 || row->change == TDM__CHANGE_RETRACT) {
        const char *op = row->change == TDM__CHANGE_RETRACT ? "-" : "+";
        lb_str(l, "op", op, 1);
    } else if (mode == 1 && upsert_op) {
        lb_str(l, "op", "upsert", 6);
    }
    lb_end(l);
}

/* The value of a record's selected column @p src (a field index,
 * TDM__SEL_TS or TDM__SEL_NONE). */
static void record_value(lb *l, const tdm__row *row, int src)
{
    if (src >= 0) {
        lb_val(l, row->schema->fields[src].type, &row->v[src]);
    } else if (src == TDM__SEL_TS) {
        tdm__val v = {.u.i = row->ts, .null = row->ts == TDM_TIME_MIN};
        lb_val(l, TDM_TYPE_TIMESTAMP, &v);
    } else {
        lb_null(l);
    }
}

/* The selected columns of a record (a pass-through row). */
static void record_selected(lb *l, const tdm__row *row, tdm__sel *sel)
{
    const int *map = tdm__sel_map_record(sel, row);
    if (!map) {
        l->b->oom = true;
        return;
    }
    for (int i = 0; i < tdm__sel_count(sel); i++) {
        lb_key(l, tdm__sel_out(sel, i));
        record_value(l, row, map[i]);
    }
}

/* Formats a late record or a pass-through row: its fields and "ts"
 * ("ts" is left out when the schema has a field of that name), or the
 * columns @p sel selects (pass-through rows; late outputs refuse it). */
static void format_late(lb *l, const tdm__row *row, tdm__sel *sel)
{
    const tdm__schema *sc = row->schema;

    lb_begin(l);
    if (sel) {
        record_selected(l, row, sel);
        lb_end(l);
        return;
    }
    for (int i = 0; sc && i < sc->n; i++) {
        lb_key(l, sc->fields[i].name);
        lb_val(l, sc->fields[i].type, &row->v[i]);
    }
    if (tdm__schema_find(sc, "ts") < 0) {
        tdm__val v = {.u.i = row->ts, .null = row->ts == TDM_TIME_MIN};
        lb_key(l, "ts");
        lb_val(l, TDM_TYPE_TIMESTAMP, &v);
    }
    lb_end(l);
}

/* Formats a dead letter. */
static void format_dead(lb *l, const char *location, const char *reason,
                        const char *raw, size_t raw_len)
{
    lb_begin(l);
    lb_str(l, "location", location ? location : "",
           location ? strlen(location) : 0);
    lb_str(l, "reason", reason ? reason : "", reason ? strlen(reason) : 0);
    lb_str(l, "raw", raw ? raw : "", raw ? raw_len : 0);
    lb_end(l);
}

/* ---- JSON lines for other sinks (conn.h) ---- */

/* Removes the newline lb_end put at the end of @p b. */
static void drop_newline(sbuf *b)
{
    if (!b->oom && b->len > 0 && b->p[b->len - 1] == '\n')
        b->len--;
}

/* Appends a result as one JSON line without its newline (see conn.h). */
void tdm__json_result(const tdm__out_row *row, int mode, bool upsert_op,
                      tdm__sel *sel, tdm__sbuf *b)
{
    lb l = {.b = b, .json = true};
    format_result(&l, row, mode, upsert_op, sel);
    drop_newline(b);
}

/* Appends the JSON object of a result's group key (see conn.h). */
void tdm__json_key(const tdm__out_row *row, bool window, tdm__sbuf *b)
{
    lb l = {.b = b, .json = true};
    int n = row->n_key_cols < row->n_cols ? row->n_key_cols : row->n_cols;

    lb_begin(&l);
    for (int i = 0; i < n; i++) {
        lb_key(&l, row->cols[i].name);
        lb_val(&l, row->cols[i].type, &row->cols[i].v);
    }
    if (window && row->has_window) {
        lb_int(&l, "window_start", row->win_start);
        lb_int(&l, "window_end", row->win_end);
    }
    sb_put(b, "}", 1);
}

/* Appends a late record as one JSON line without its newline. */
void tdm__json_late(const tdm__row *row, tdm__sel *sel, tdm__sbuf *b)
{
    lb l = {.b = b, .json = true};
    format_late(&l, row, sel);
    drop_newline(b);
}

/* Appends a dead letter as one JSON line without its newline. */
void tdm__json_dead(const char *location, const char *reason, const char *raw,
                    size_t raw_len, tdm__sbuf *b)
{
    lb l = {.b = b, .json = true};
    format_dead(&l, location, reason, raw, raw_len);
    drop_newline(b);
}

/* Appends raw bytes to @p b (sets b->oom on failure). */
void tdm__sbuf_put(tdm__sbuf *b, const char *p, size_t n)
{
    sb_put(b, p, n);
}

/* Frees the bytes of @p b and empties it. */
void tdm__sbuf_free(tdm__sbuf *b)
{
    tdm__free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- Output ---- */

/* The buffer's clock: the configured one (tests) or CLOCK_MONOTONIC. */
static int64_t sink_now(const tdm__sinkobj *s)
{
    return s->now ? s->now(s->now_ud) : tdm__mono_ms();
}

/* Two-phase commit: appends s->out to the in-progress part, opening it
 * at its first bytes.  Mutex held; a failure is kept in io_err. */
static void tpc_write(tdm__sinkobj *s)
{
    tdm_err err = TDM_OK;

    if (s->fd < 0)
        err = tdm__fio_open(s->inprog, O_WRONLY | O_CREAT | O_TRUNC, 0666,
                            &s->fd, s->io_msg, sizeof s->io_msg);
    if (err == TDM_OK)
        err = tdm__fio_write_all(s->fd, s->out.p, s->out.len, s->inprog,
                                 s->io_msg, sizeof s->io_msg);
    if (err == TDM_OK)
        s->part_bytes += s->out.len;
    s->io_err = err;
}

/* Writes the pending output.  Call with the mutex held. */
static tdm_err flush_out(tdm__sinkobj *s)
{
    if (s->io_err != TDM_OK)
        return s->io_err;
    /* The writing thread's time in the file or pipe (core/busy.h). */
    int64_t busy = s->out.len > 0 ? tdm__busy_begin(TDM__BUSY_SINK) : 0;
    if (s->out.len > 0 && s->tpc) {
        tpc_write(s);
    } else if (s->out.len > 0 && s->f) {
        if (fwrite(s->out.p, 1, s->out.len, s->f) != s->out.len ||
            fflush(s->f) != 0) {
            s->io_err = TDM_ERR_IO;
            snprintf(s->io_msg, sizeof s->io_msg, "cannot write '%s': %s",
                     s->path ? s->path : "<stdout>", strerror(errno));
        }
    }
    tdm__busy_end(TDM__BUSY_SINK, busy);
    s->out.len = 0;
    s->last_flush_ms = sink_now(s);
    return s->io_err;
}

/* After a row was added to s->out: flush if due.  Mutex held. */
static tdm_err after_write(tdm__sinkobj *s)
{
    if (s->out.oom) {
        s->out.oom = false;
        s->out.len = 0;
        return TDM_ERR_NOMEM;
    }
    if (s->out.len >= FLUSH_BYTES || sink_now(s) - s->last_flush_ms >= FLUSH_MS)
        return flush_out(s);
    return s->io_err;
}

/* Starts a line in s->out; the CSV header goes first when due. */
static void start_line(tdm__sinkobj *s, lb *l, sbuf *hdr)
{
    l->b = &s->out;
    l->json = s->format != TDM__FMT_CSV;
    l->hdr = !l->json && !s->header_done ? hdr : NULL;
}

/* Appends a formatted line, putting a CSV header first once. */
static void commit_line(tdm__sinkobj *s, lb *l, sbuf *hdr, size_t mark)
{
    if (l->hdr && !hdr->oom) {
        /* The header was collected alongside the first line: move it in
         * front of that line. */
        size_t line_len = s->out.len - mark;
        sb_reserve(&s->out, hdr->len);
        if (!s->out.oom) {
            memmove(s->out.p + mark + hdr->len, s->out.p + mark, line_len);
            memcpy(s->out.p + mark, hdr->p, hdr->len);
            s->out.len += hdr->len;
            s->header_done = true;
        }
    }
    tdm__free(hdr->p);
}

/* ---- Upsert table ---- */

static upsert_entry *upsert_find(tdm__sinkobj *s, const char *key, size_t len,
                                 size_t *slot)
{
    size_t mask = s->n_slots - 1;
    size_t i = (size_t)tdm__hash_bytes(key, len) & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t e = s->slots[i];
        if (e == 0) {
            *slot = i;
            return NULL;
        }
        upsert_entry *u = &s->ents[e - 1];
        if (u->key_len == len && memcmp(u->key, key, len) == 0)
            return u;
    }
}

/* Rebuilds the slots of the keyed entries with @p ns (a power of two,
 * > 2 * n_ents) slots.  TDM_OK or NOMEM (the table is unchanged). */
static tdm_err upsert_rehash(tdm__sinkobj *s, size_t ns)
{
    uint32_t *sl = tdm__calloc(ns, sizeof *sl);
    if (!sl)
        return TDM_ERR_NOMEM;
    for (size_t e = 0; e < s->n_ents; e++) {
        if (!s->ents[e].key)
            continue;
        size_t i = (size_t)tdm__hash_bytes(s->ents[e].key, s->ents[e].key_len) &
                   (ns - 1);
        while (sl[i])
            i = (i + 1) & (ns - 1);
        sl[i] = (uint32_t)e + 1;
    }
    tdm__free(s->slots);
    s->slots = sl;
    s->n_slots = ns;
    return TDM_OK;
}

/* Stores the line s->line for @p key (replacing the previous one; gone:
 * retracted).  Rows without a key (NULL) are kept as they come. */
static tdm_err upsert_put_key(tdm__sinkobj *s, const char *key, size_t key_len,
                              bool gone)
{
    upsert_entry *u = NULL;
    size_t slot = 0;
    char *copy;

    if (s->n_ents == s->cap_ents) {
        size_t cap = s->cap_ents ? 2 * s->cap_ents : 64;
        upsert_entry *ne = tdm__realloc(s->ents, cap * sizeof *ne);
        if (!ne)
            return TDM_ERR_NOMEM;
        s->ents = ne;
        s->cap_ents = cap;
    }
    if (2 * (s->n_ents + 1) > s->n_slots &&
        upsert_rehash(s, s->n_slots ? 2 * s->n_slots : 128) != TDM_OK)
        return TDM_ERR_NOMEM;
    if (key)
        u = upsert_find(s, key, key_len, &slot);
    copy = tdm__memdup(s->line.p, s->line.len ? s->line.len : 1);
    if (!copy)
        return TDM_ERR_NOMEM;
    if (u) {
        tdm__free(u->line);
        u->line = copy;
        u->line_len = s->line.len;
        u->gone = gone;
        s->table_dirty = true;
        return TDM_OK;
    }
    u = &s->ents[s->n_ents];
    memset(u, 0, sizeof *u);
    u->line = copy;
    u->line_len = s->line.len;
    u->gone = gone;
    if (key) {
        u->key = tdm__memdup(key, key_len ? key_len : 1);
        if (!u->key) {
            tdm__free(copy);
            return TDM_ERR_NOMEM;
        }
        u->key_len = key_len;
        s->slots[slot] = (uint32_t)s->n_ents + 1;
    }
    s->n_ents++;
    s->table_dirty = true;
    return TDM_OK;
}

static tdm_err upsert_put(tdm__sinkobj *s, const tdm__out_row *row)
{
    return upsert_put_key(s, row->upsert_key, row->upsert_key_len,
                          row->change == TDM__CHANGE_RETRACT);
}

/* ---- Upsert changelog ----
 * An exactly-once upsert file sink cannot keep its table in memory and
 * in every checkpoint (it grows with every key ever written), nor write
 * "path" from each writer (writers would overwrite each other's tables,
 * and a rescale moves keys between writers).  Its rows go instead, as
 * they come, into two-phase-commit parts named "path.changelog.part-
 * <ckpt>-<w>", committed with the checkpoints like any part; at the end
 * of a run finish() reads the committed parts in name order (checkpoint
 * first: every key's changes in order, whatever the parallelism of each
 * run) and writes the latest row of every key to "path".  A record:
 *
 *   <t> <key length> <line length> LF <key bytes> <line bytes>
 *
 * t: 'u' a row of a key, 'd' a retraction of a key (upsert mode drops
 * the key), 'r' a row without a key (kept as it comes), 'h' the CSV
 * header (first in every part).  Lengths in decimal; lines keep their
 * own newline.  The format is internal: "path" is the output. */

/* Appends one changelog record to s->out.  Mutex held. */
static void log_record(tdm__sinkobj *s, char t, const char *key, size_t key_len,
                       const char *line, size_t line_len)
{
    char head[64];
    int n = snprintf(head, sizeof head, "%c %zu %zu\n", t, key_len, line_len);
    sb_put(&s->out, head, (size_t)n);
    if (key_len)
        sb_put(&s->out, key, key_len);
    sb_put(&s->out, line, line_len);
}

/* The CSV header as the first record of a part.  Mutex held. */
static void log_header(tdm__sinkobj *s)
{
    if (!s->header_done && s->header)
        log_record(s, 'h', NULL, 0, s->header, s->header_len);
    s->header_done = true;
}

/* The row in s->line (and a new CSV header) as changelog records. */
static tdm_err log_row(tdm__sinkobj *s, const tdm__out_row *row)
{
    log_header(s);
    char t = !row->upsert_key                     ? 'r'
             : row->change == TDM__CHANGE_RETRACT ? 'd'
                                                  : 'u';
    log_record(s, t, row->upsert_key, row->upsert_key ? row->upsert_key_len : 0,
               s->line.p, s->line.len);
    if (s->out.oom) {
        s->out.oom = false;
        return TDM_ERR_NOMEM;
    }
    return after_write(s);
}

/* Parses the records of one changelog part into the table of @p s.
 * TDM_OK, TDM_ERR_PARSE (message names the part and offset), NOMEM. */
static tdm_err log_load(tdm__sinkobj *s, const char *part, const char *p,
                        size_t len, char *errbuf, size_t errbuf_size)
{
    size_t at = 0;
    while (at < len) {
        char t = 0;
        size_t kl = 0, ll = 0;
        int used = 0;
        const char *nl = memchr(p + at, '\n', len - at);
        if (!nl || sscanf(p + at, "%c %zu %zu%n", &t, &kl, &ll, &used) != 3 ||
            p + at + used != nl || kl > len || ll > len ||
            (size_t)(nl + 1 - p) + kl + ll > len || !strchr("udrh", t))
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                             "changelog part '%s': bad record at offset %zu",
                             part, at);
        const char *key = nl + 1, *line = key + kl;
        s->line.len = 0;
        sb_put(&s->line, line, ll);
        if (s->line.oom)
            return TDM_ERR_NOMEM;
        tdm_err err = TDM_OK;
        if (t == 'h' && !s->header) {
            s->header = tdm__memdup(line, ll ? ll : 1);
            s->header_len = ll;
            err = s->header ? TDM_OK : TDM_ERR_NOMEM;
        } else if (t != 'h') {
            err = upsert_put_key(s, t == 'r' ? NULL : key, kl, t == 'd');
        }
        if (err != TDM_OK)
            return err;
        at = (size_t)(line + ll - p);
    }
    return TDM_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads every committed changelog part of @p s's path, in name order,
 * into its table. */
static tdm_err log_compact(tdm__sinkobj *s, char *errbuf, size_t errbuf_size)
{
    char **names = NULL, base[4200];
    size_t n = 0;
    tdm_err err = tdm__fio_list(s->dir, &names, &n, errbuf, errbuf_size);
    snprintf(base, sizeof base, "%s.changelog", s->base);
    if (err == TDM_OK && n > 1)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; err == TDM_OK && i < n; i++) {
        tdm__part pt;
        char path[4300];
        void *p = NULL;
        size_t len = 0;
        if (!tdm__part_parse(base, names[i], &pt) ||
            pt.kind != TDM__PART_VISIBLE)
            continue;
        snprintf(path, sizeof path, "%s/%s", s->dir, names[i]);
        err = tdm__fio_read_file(path, &p, &len, errbuf, errbuf_size);
        if (err == TDM_OK)
            err = log_load(s, path, p, len, errbuf, errbuf_size);
        tdm__free(p);
    }
    tdm__fio_list_free(names, n);
    return err;
}

/* An upsert table restored from a checkpoint of an older tidemark (the
 * table in the checkpoint) becomes changelog records of the next part,
 * and leaves memory.  Mutex held. */
static tdm_err log_from_table(tdm__sinkobj *s)
{
    for (size_t e = 0; e < s->n_ents; e++) {
        const upsert_entry *u = &s->ents[e];
        log_header(s);
        log_record(s,
                   !u->key   ? 'r'
                   : u->gone ? 'd'
                             : 'u',
                   u->key, u->key ? u->key_len : 0, u->line, u->line_len);
        tdm__free(u->key);
        tdm__free(u->line);
    }
    s->n_ents = 0;
    if (s->slots)
        memset(s->slots, 0, s->n_slots * sizeof *s->slots);
    if (s->out.oom)
        return TDM_ERR_NOMEM;
    return TDM_OK;
}

/* ---- The vtable ---- */

/* Creates the missing parent folders of @p path. */
static void make_parents(const char *path)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n >= sizeof tmp)
        return;
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i < n; i++) {
        if (tmp[i] != '/')
            continue;
        tmp[i] = '\0';
        mkdir(tmp, 0777);
        tmp[i] = '/';
    }
}

static void free_sink(tdm__sinkobj *s)
{
    if (!s)
        return;
    if (s->f && s->own_f)
        fclose(s->f);
    if (s->fd >= 0)
        (void)tdm__fio_close(s->fd, s->inprog, NULL, 0);
    tdm__free(s->dir);
    tdm__free(s->base);
    tdm__free(s->inprog);
    tdm__free(s->pend);
    for (size_t e = 0; e < s->n_ents; e++) {
        tdm__free(s->ents[e].key);
        tdm__free(s->ents[e].line);
    }
    tdm__free(s->ents);
    tdm__free(s->slots);
    tdm__free(s->out.p);
    tdm__free(s->line.p);
    tdm__free(s->header);
    tdm__free(s->name);
    tdm__free(s->path);
    tdm__sel_free(s->sel);
    pthread_mutex_destroy(&s->mu);
    tdm__free(s);
}

/* ---- Two-phase commit ----
 * (docs/checkpoints.md, "Sinks").  Writer w of a file sink at
 * "dir/base" keeps its parts next to it:
 *   dir/.base.part-<w>.inprogress      rows since the last pre_commit
 *   dir/.base.part-<id>-<w>.pending    pre-committed at checkpoint <id>
 *   dir/base.part-<id>-<w>             committed (visible)
 * with <id> in ten digits, so names sort in checkpoint order first
 * (file_parts.c says why, and reads the older writer-first names).  An
 * upsert file sink has no parts: its table goes into the checkpoint
 * instead and is written to "path" at close as without checkpoints. */

enum {
    PART_VISIBLE = TDM__PART_VISIBLE,
    PART_PENDING = TDM__PART_PENDING,
    PART_INPROGRESS = TDM__PART_INPROGRESS
};

static tdm_err sink_flush(tdm__sinkobj *s, char *errbuf, size_t errbuf_size);

/* Sets up the part names of writer conf->writer.  Mutex not needed. */
static tdm_err tpc_open(tdm__sinkobj *s, const tdm__sink_conf *conf,
                        char *errbuf, size_t errbuf_size)
{
    if (conf->writer < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "writer index %d is negative", conf->writer);
    s->writer = conf->writer;
    s->restored = conf->restored;
    tdm_err err =
        tdm__part_split(s->path, &s->dir, &s->base, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    s->log = s->mode == 1;
    if (s->log) { /* "Upsert changelog" above */
        char *b = tdm__malloc(strlen(s->base) + sizeof ".changelog");
        if (!b)
            return TDM_ERR_NOMEM;
        sprintf(b, "%s.changelog", s->base);
        tdm__free(s->base);
        s->base = b;
    }
    size_t n = strlen(s->dir) + strlen(s->base) + 48;
    s->inprog = tdm__malloc(n);
    if (!s->inprog)
        return TDM_ERR_NOMEM;
    tdm__part_path(s->inprog, n, s->dir, s->base, PART_INPROGRESS, 0,
                   s->writer);
    s->tpc = true;
    if (access(s->dir, W_OK | X_OK) != 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot create files in '%s': %s", s->dir,
                         strerror(errno));
    return TDM_OK;
}

/* The path of part @p id of kind PART_VISIBLE or PART_PENDING. */
static void part_path(const tdm__sinkobj *s, int kind, uint64_t id, char *out,
                      size_t n)
{
    tdm__part_path(out, n, s->dir, s->base, kind, id, s->writer);
}

/* Classifies a folder entry: one of this writer's parts (kind, *id) or 0
 * for anything else. */
static int part_kind(const tdm__sinkobj *s, const char *name, uint64_t *id)
{
    tdm__part pt;

    *id = 0;
    if (!tdm__part_parse(s->base, name, &pt) || pt.writer != s->writer)
        return 0;
    *id = pt.id;
    return pt.kind;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Makes pending part @p id visible; already visible is fine, and so is a
 * part pre-committed under its writer-first name by an older tidemark
 * (file_parts.c, P2), which is published under the current one.  Mutex
 * held.  TDM_OK, TDM_ERR_IO (the message names the paths). */
static tdm_err publish_part(tdm__sinkobj *s, uint64_t id, char *errbuf,
                            size_t errbuf_size)
{
    char from[4300], to[4300], old[4300];

    part_path(s, PART_PENDING, id, from, sizeof from);
    part_path(s, PART_VISIBLE, id, to, sizeof to);
    if (exists(from))
        return tdm__fio_rename(from, to, errbuf, errbuf_size);
    if (exists(to))
        return TDM_OK; /* committed before */
    tdm__part_legacy_path(old, sizeof old, s->dir, s->base, PART_PENDING, id,
                          s->writer);
    if (exists(old))
        return tdm__fio_rename(old, to, errbuf, errbuf_size);
    tdm__part_legacy_path(old, sizeof old, s->dir, s->base, PART_VISIBLE, id,
                          s->writer);
    if (exists(old))
        return TDM_OK; /* committed before, by an older tidemark */
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                     "pending part '%s' of checkpoint %llu is missing", from,
                     (unsigned long long)id);
}

/* Writes what the in-progress part holds, fsyncs and closes it and
 * renames it to pending part @p id.  Mutex held.  A failure is kept in
 * io_err (the sink then needs recover in a new object). */
static tdm_err seal_part(tdm__sinkobj *s, uint64_t id)
{
    char to[4300];
    tdm_err err = flush_out(s);

    if (err != TDM_OK || s->part_bytes == 0)
        return err;
    part_path(s, PART_PENDING, id, to, sizeof to);
    err = tdm__fio_fsync(s->fd, s->inprog, s->io_msg, sizeof s->io_msg);
    if (err == TDM_OK) {
        int fd = s->fd;
        s->fd = -1;
        err = tdm__fio_close(fd, s->inprog, s->io_msg, sizeof s->io_msg);
    }
    if (err == TDM_OK)
        err = tdm__fio_rename(s->inprog, to, s->io_msg, sizeof s->io_msg);
    if (err == TDM_OK)
        err = tdm__fio_fsync_dir(s->dir, s->io_msg, sizeof s->io_msg);
    if (err == TDM_OK && s->n_pend == s->cap_pend) {
        size_t cap = s->cap_pend ? 2 * s->cap_pend : 8;
        uint64_t *np = tdm__realloc(s->pend, cap * sizeof *np);
        if (!np)
            err = TDM_ERR_NOMEM;
        else {
            s->pend = np;
            s->cap_pend = cap;
        }
    }
    if (err == TDM_OK) {
        s->pend[s->n_pend++] = id;
        s->part_bytes = 0;
        s->header_done = false; /* every part starts with a CSV header */
    }
    s->io_err = err;
    return err;
}

/* Encodes the upsert table (see docs/checkpoints.md).  Mutex held. */
static void enc_table(const tdm__sinkobj *s, tdm__enc *e)
{
    tdm__enc_u8(e, s->header ? 1 : 0);
    if (s->header)
        tdm__enc_bytes(e, s->header, s->header_len);
    tdm__enc_uvar(e, s->n_ents);
    for (size_t i = 0; i < s->n_ents; i++) {
        const upsert_entry *u = &s->ents[i];
        tdm__enc_u8(e, (uint8_t)((u->key ? 1 : 0) | (u->gone ? 2 : 0)));
        if (u->key)
            tdm__enc_bytes(e, u->key, u->key_len);
        tdm__enc_bytes(e, u->line, u->line_len);
    }
}

/* Pre-commit of checkpoint @p ckpt_id (connect.h, version 3). */
static tdm_err sink_pre_commit(tdm__sinkobj *s, uint64_t ckpt_id, tdm__enc *st,
                               char *errbuf, size_t errbuf_size)
{
    tdm_err err = TDM_OK;

    if (!s || s->type != TDM__SINK_FILE || !s->dir)
        return s ? sink_flush(s, errbuf, errbuf_size) : TDM_OK;
    pthread_mutex_lock(&s->mu);
    if (s->n_pend > 0 && s->pend[s->n_pend - 1] >= ckpt_id) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "sink '%s': pre-commit of checkpoint %llu after "
                        "%llu",
                        s->name, (unsigned long long)ckpt_id,
                        (unsigned long long)s->pend[s->n_pend - 1]);
        goto out;
    }
    if (s->tpc)
        err = seal_part(s, ckpt_id);
    if (err != TDM_OK) {
        tdm__errf(errbuf, errbuf_size, err, "%s", s->io_msg);
        goto out;
    }
    tdm__enc_begin(st, TDM__CKPT_TAG_FILE_SINK);
    tdm__enc_uvar(st, 1); /* version */
    tdm__enc_uvar(st, (uint64_t)s->writer);
    tdm__enc_uvar(st, ckpt_id);
    tdm__enc_u8(st, s->log ? 2 : s->tpc ? 0 : 1);
    if (s->tpc) {
        tdm__enc_uvar(st, s->n_pend);
        for (size_t i = 0; i < s->n_pend; i++)
            tdm__enc_uvar(st, s->pend[i]);
    } else {
        enc_table(s, st);
    }
    tdm__enc_end(st);
out:
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Commit of every pending part <= @p ckpt_id, in order, then an fsync of
 * the folder.  Idempotent. */
static tdm_err sink_commit(tdm__sinkobj *s, uint64_t ckpt_id, char *errbuf,
                           size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    size_t done = 0;

    if (!s || !s->tpc)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    while (done < s->n_pend && s->pend[done] <= ckpt_id && err == TDM_OK)
        if ((err = publish_part(s, s->pend[done], errbuf, errbuf_size)) ==
            TDM_OK)
            done++;
    if (done > 0) {
        tdm_err e2 = tdm__fio_fsync_dir(s->dir, errbuf, errbuf_size);
        if (err == TDM_OK && e2 != TDM_OK)
            err = e2;
        /* Renamed parts are visible now; a failed fsync is retried by
         * the next commit (or recover) through the same idempotent
         * path, so they may leave the list. */
        memmove(s->pend, s->pend + done, (s->n_pend - done) * sizeof *s->pend);
        s->n_pend -= done;
    }
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Decode helper: the decoder's first error as TDM_ERR_PARSE naming the
 * sink and the offset. */
static tdm_err dec_err(const tdm__sinkobj *s, const tdm__dec *d, char *errbuf,
                       size_t errbuf_size)
{
    size_t off = 0;
    const char *why = "bad input";
    (void)tdm__dec_error(d, &off, &why);
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                     "sink '%s' state: %s at offset %zu", s->name, why, off);
}

/* Restores the upsert table from @p d into the (empty) table.  Mutex
 * held.  TDM_OK, TDM_ERR_PARSE (d's error set), NOMEM. */
static tdm_err dec_table(tdm__sinkobj *s, tdm__dec *d)
{
    uint8_t has_hdr = 0;
    uint64_t n = 0;
    const void *p;
    size_t len;

    if (tdm__dec_u8(d, &has_hdr) != TDM_OK)
        return TDM_ERR_PARSE;
    if (has_hdr > 1)
        return tdm__dec_fail(d, "bad header flag");
    if (has_hdr) {
        if (tdm__dec_bytes(d, &p, &len) != TDM_OK)
            return TDM_ERR_PARSE;
        if (!(s->header = tdm__memdup(p, len ? len : 1)))
            return TDM_ERR_NOMEM;
        s->header_len = len;
    }
    if (tdm__dec_uvar(d, &n) != TDM_OK)
        return TDM_ERR_PARSE;
    if (n > tdm__dec_left(d) / 2 || n >= UINT32_MAX / 4)
        return tdm__dec_fail(d, "entry count exceeds the input");
    if (n > 0 && !(s->ents = tdm__calloc((size_t)n, sizeof *s->ents)))
        return TDM_ERR_NOMEM;
    s->cap_ents = (size_t)n;
    size_t ns = 128;
    while (ns < 2 * (n + 1))
        ns *= 2;
    if (upsert_rehash(s, ns) != TDM_OK)
        return TDM_ERR_NOMEM;
    for (uint64_t i = 0; i < n; i++) {
        upsert_entry *u = &s->ents[i];
        uint8_t fl = 0;
        size_t slot = 0;
        s->n_ents++; /* counted from here, so free_sink frees it */
        if (tdm__dec_u8(d, &fl) != TDM_OK)
            return TDM_ERR_PARSE;
        if (fl > 3)
            return tdm__dec_fail(d, "bad entry flags");
        u->gone = (fl & 2) != 0;
        if (fl & 1) {
            if (tdm__dec_bytes(d, &p, &len) != TDM_OK)
                return TDM_ERR_PARSE;
            if (upsert_find(s, p, len, &slot))
                return tdm__dec_fail(d, "duplicate key");
            if (!(u->key = tdm__memdup(p, len ? len : 1)))
                return TDM_ERR_NOMEM;
            u->key_len = len;
            s->slots[slot] = (uint32_t)i + 1;
        }
        if (tdm__dec_bytes(d, &p, &len) != TDM_OK)
            return TDM_ERR_PARSE;
        if (!(u->line = tdm__memdup(p, len ? len : 1)))
            return TDM_ERR_NOMEM;
        u->line_len = len;
    }
    s->table_dirty = true;
    return TDM_OK;
}

/* Removes this writer's parts that the restored checkpoint does not
 * keep: the in-progress one, pending ones not in pend[], visible ones
 * newer than @p ckpt_id; and any writer's pending parts newer than it
 * (their checkpoint never became durable: a crashed run at a higher
 * parallelism leaves them for writers no later run has, and a fresh
 * start would otherwise take them for committed rows).  On a fresh start (@p
 * fresh) only the in-progress part goes: what an earlier run committed or
 * pre-committed stays until the new run's first checkpoint is durable, so that
 * a fresh start killed before it leaves the old run able to resume (the runtime
 * then moves the old parts aside: tdm__parts_supersede).  Mutex held. */
static tdm_err sweep_parts(tdm__sinkobj *s, uint64_t ckpt_id, bool fresh,
                           char *errbuf, size_t errbuf_size)
{
    char **names = NULL;
    size_t n = 0;
    tdm_err err = tdm__fio_list(s->dir, &names, &n, errbuf, errbuf_size);

    for (size_t i = 0; err == TDM_OK && i < n; i++) {
        uint64_t id;
        int kind = part_kind(s, names[i], &id);
        bool keep = kind == 0 || (kind != PART_INPROGRESS && fresh) ||
                    (kind == PART_VISIBLE && id <= ckpt_id);
        for (size_t k = 0; kind == PART_PENDING && k < s->n_pend; k++)
            keep = keep || s->pend[k] == id;
        tdm__part any;
        if (kind == 0 && !fresh && tdm__part_parse(s->base, names[i], &any) &&
            any.kind == PART_PENDING && any.id > ckpt_id)
            keep = false; /* another writer's, of a checkpoint never durable */
        if (keep)
            continue;
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", s->dir, names[i]);
        err = tdm__fio_unlink(path, errbuf, errbuf_size);
    }
    tdm__fio_list_free(names, n);
    if (err == TDM_OK)
        err = tdm__fio_fsync_dir(s->dir, errbuf, errbuf_size);
    return err;
}

/* Recover (connect.h, version 3): publishes the parts @p st recorded as
 * pending, removes the parts written after it, restores an upsert
 * table.  @p st NULL: a writer the restored checkpoint did not have
 * (conf->restored set: what a crashed run left after it goes), or a
 * fresh start (only the in-progress part goes; see sweep_parts). */
static tdm_err sink_recover(tdm__sinkobj *s, tdm__dec *st, char *errbuf,
                            size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    uint64_t tag = 0, ver = 0, writer = 0, id = 0, n = 0;
    uint8_t kind = 0;
    tdm__dec d;

    if (!s || s->type != TDM__SINK_FILE || !s->dir)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    if (s->recovered || s->part_bytes > 0 || s->out.len > 0 || s->n_ents) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "sink '%s': recover after writes", s->name);
        goto out;
    }
    s->recovered = true;
    if (!st) {
        err = s->tpc ? sweep_parts(s, s->restored, s->restored == 0, errbuf,
                                   errbuf_size)
                     : TDM_OK;
        goto out;
    }
    if (tdm__dec_section(st, &tag, &d) != TDM_OK) {
        err = dec_err(s, st, errbuf, errbuf_size);
        goto out;
    }
    if (tag != TDM__CKPT_TAG_FILE_SINK)
        (void)tdm__dec_fail(&d, "not a file sink section");
    else if (tdm__dec_uvar(&d, &ver) == TDM_OK && ver != 1)
        (void)tdm__dec_fail(&d, "unknown version");
    else if (tdm__dec_uvar(&d, &writer) == TDM_OK &&
             writer != (uint64_t)s->writer)
        (void)tdm__dec_fail(&d, "state of another writer");
    else if (tdm__dec_uvar(&d, &id) == TDM_OK &&
             tdm__dec_u8(&d, &kind) == TDM_OK &&
             kind != (s->log   ? 2
                      : s->tpc ? 0
                               : 1) &&
             !(s->log && kind == 1)) /* an older tidemark's upsert table */
        (void)tdm__dec_fail(&d, "output mode differs from the checkpoint");
    if (kind == 1 && d.err == TDM_OK && dec_table(s, &d) == TDM_ERR_NOMEM)
        err = TDM_ERR_NOMEM;
    if (kind == 1 && s->log && err == TDM_OK && d.err == TDM_OK)
        err = log_from_table(s);
    if (kind != 1 && d.err == TDM_OK && tdm__dec_uvar(&d, &n) == TDM_OK &&
        n > tdm__dec_left(&d))
        (void)tdm__dec_fail(&d, "part count exceeds the input");
    if (kind != 1 && d.err == TDM_OK && n > 0) {
        s->pend = tdm__calloc((size_t)n, sizeof *s->pend);
        if (!s->pend) {
            err = TDM_ERR_NOMEM;
            goto out;
        }
        s->cap_pend = (size_t)n;
        for (uint64_t i = 0; i < n && d.err == TDM_OK; i++) {
            uint64_t v = 0;
            if (tdm__dec_uvar(&d, &v) != TDM_OK)
                break;
            if ((i > 0 && v <= s->pend[i - 1]) || v > id)
                (void)tdm__dec_fail(&d, "pending ids out of order");
            else
                s->pend[s->n_pend++] = v;
        }
    }
    if (err == TDM_ERR_NOMEM)
        goto out;
    if (d.err != TDM_OK) {
        err = dec_err(s, &d, errbuf, errbuf_size);
        goto out;
    }
    if (!s->tpc)
        goto out;
    /* Publish what the checkpoint recorded, then drop the rest. */
    pthread_mutex_unlock(&s->mu);
    err = sink_commit(s, id, errbuf, errbuf_size);
    pthread_mutex_lock(&s->mu);
    if (err == TDM_OK)
        err = sweep_parts(s, id, false, errbuf, errbuf_size);
out:
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Opens a sink; @p upsert is the output mode (0 append, 1 upsert,
 * 2 retract).  TDM_OK, TDM_ERR_INVAL (no path for a file sink),
 * TDM_ERR_IO (cannot create the file; message names it), NOMEM. */
static tdm_err sink_open(const tdm__sink_conf *conf, int upsert,
                         tdm__sinkobj **out, char *errbuf, size_t errbuf_size)
{
    tdm__sinkobj *s;
    const char *name = conf && conf->name ? conf->name : "?";
    tdm_err err = TDM_ERR_NOMEM;

    *out = NULL;
    if (!conf)
        return TDM_ERR_INVAL;
    if (conf->type == TDM__SINK_FILE && (!conf->path || !conf->path[0]))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL, "path is not set");
    s = tdm__calloc(1, sizeof *s);
    if (!s)
        return TDM_ERR_NOMEM;
    s->fd = -1;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        tdm__free(s);
        return TDM_ERR_NOMEM;
    }
    s->type = conf->type;
    s->format = conf->format;
    s->mode = upsert;
    s->now = conf->now;
    s->now_ud = conf->now_ud;
    s->name = tdm__strndup(name, strlen(name));
    if (!s->name)
        goto fail;
    err = tdm__sel_new(conf->select, conf->n_select, &s->sel, errbuf,
                       errbuf_size);
    if (err != TDM_OK)
        goto fail;
    err = TDM_ERR_NOMEM;
    s->last_flush_ms = sink_now(s);
    if (conf->type == TDM__SINK_FILE) {
        s->path = tdm__strndup(conf->path, strlen(conf->path));
        if (!s->path)
            goto fail;
        make_parents(s->path);
        if (conf->exactly_once) {
            err = tpc_open(s, conf, errbuf, errbuf_size);
            if (err != TDM_OK)
                goto fail;
        } else if (upsert == 1) {
            /* Written at close; check now that the folder takes a file. */
            char tmp[4200];
            FILE *f;
            snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
            f = fopen(tmp, "w");
            if (!f) {
                err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                                "cannot create '%s': %s", tmp, strerror(errno));
                goto fail;
            }
            fclose(f);
            remove(tmp);
        } else {
            s->f = fopen(s->path, "w");
            if (!s->f) {
                err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                                "cannot create '%s': %s", s->path,
                                strerror(errno));
                goto fail;
            }
            s->own_f = true;
        }
    } else if (conf->type == TDM__SINK_STDOUT) {
        s->f = stdout;
    }
    *out = s;
    return TDM_OK;
fail:
    free_sink(s);
    return err;
}

/* True when rows go to the in-memory upsert table (a file sink in
 * upsert mode without checkpoints; with them: the changelog). */
static bool upsert_table(const tdm__sinkobj *s)
{
    return s->mode == 1 && s->path != NULL && !s->log;
}

/* Writes a window result or join pair.  TDM_OK, TDM_ERR_IO, NOMEM. */
static tdm_err sink_write_result(tdm__sinkobj *s, const tdm__out_row *row)
{
    tdm_err err;
    sbuf hdr = {0};
    lb l;

    if (s->type == TDM__SINK_DISCARD)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    if (upsert_table(s) || s->log) {
        s->line.len = 0;
        l.b = &s->line;
        l.json = s->format != TDM__FMT_CSV;
        l.hdr = !l.json && !s->header ? &hdr : NULL;
        format_result(&l, row, s->mode, !s->path, s->sel);
        if (s->line.oom || hdr.oom) {
            s->line.oom = false;
            tdm__free(hdr.p);
            pthread_mutex_unlock(&s->mu);
            return TDM_ERR_NOMEM;
        }
        if (l.hdr) {
            s->header = hdr.p;
            s->header_len = hdr.len;
        }
        err = s->log ? log_row(s, row) : upsert_put(s, row);
        pthread_mutex_unlock(&s->mu);
        return err;
    }
    size_t mark = s->out.len;
    start_line(s, &l, &hdr);
    format_result(&l, row, s->mode, !s->path, s->sel);
    commit_line(s, &l, &hdr, mark);
    err = after_write(s);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Writes a late record: its fields and "ts". */
static tdm_err sink_write_row(tdm__sinkobj *s, const tdm__row *row)
{
    sbuf hdr = {0};
    tdm_err err;
    lb l;

    if (s->type == TDM__SINK_DISCARD)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    size_t mark = s->out.len;
    start_line(s, &l, &hdr);
    format_late(&l, row, s->sel);
    commit_line(s, &l, &hdr, mark);
    err = after_write(s);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Writes a dead letter. */
static tdm_err sink_write_dead(tdm__sinkobj *s, const char *location,
                               const char *reason, const char *raw,
                               size_t raw_len)
{
    sbuf hdr = {0};
    tdm_err err;
    lb l;

    if (s->type == TDM__SINK_DISCARD)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    size_t mark = s->out.len;
    start_line(s, &l, &hdr);
    format_dead(&l, location, reason, raw, raw_len);
    commit_line(s, &l, &hdr, mark);
    err = after_write(s);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Writes the upsert table to path.tmp and renames it over path. */
static tdm_err write_table_durable(tdm__sinkobj *s);

static tdm_err write_table(tdm__sinkobj *s)
{
    char tmp[4200];
    FILE *f;
    bool ok;

    if (s->dir)
        return write_table_durable(s);
    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    f = fopen(tmp, "w");
    if (!f)
        goto io;
    ok = true;
    if (s->header)
        ok = fwrite(s->header, 1, s->header_len, f) == s->header_len;
    for (size_t e = 0; ok && e < s->n_ents; e++)
        if (!s->ents[e].gone)
            ok = fwrite(s->ents[e].line, 1, s->ents[e].line_len, f) ==
                 s->ents[e].line_len;
    if (fclose(f) != 0 || !ok) {
        remove(tmp);
        goto io;
    }
    if (rename(tmp, s->path) != 0) {
        remove(tmp);
        goto io;
    }
    s->table_dirty = false;
    return TDM_OK;
io:
    s->io_err = TDM_ERR_IO;
    snprintf(s->io_msg, sizeof s->io_msg, "cannot write '%s': %s", s->path,
             strerror(errno));
    return TDM_ERR_IO;
}

/* Two-phase commit at close: what was not pre-committed is discarded
 * (the runtime's final pre_commit + commit come before close), and that
 * is reported as TDM_ERR_STATE.  Mutex held. */
static void tpc_close(tdm__sinkobj *s)
{
    uint64_t lost = s->part_bytes + s->out.len;

    if (s->fd >= 0) {
        (void)tdm__fio_close(s->fd, s->inprog, NULL, 0);
        s->fd = -1;
        (void)tdm__fio_unlink(s->inprog, NULL, 0);
    }
    if (s->io_err != TDM_OK || (lost == 0 && s->n_pend == 0))
        return;
    s->io_err = TDM_ERR_STATE;
    snprintf(s->io_msg, sizeof s->io_msg,
             "closed with %llu bytes not pre-committed (discarded) and "
             "%zu parts not committed (left for recovery)",
             (unsigned long long)lost, s->n_pend);
}

/* Frees the sink as a crash would leave it (connect.h, abandon). */
static void sink_abandon(tdm__sinkobj *s)
{
    free_sink(s);
}

/* Exactly-once upsert at close: the table goes to "path.tmp" through
 * fileio (written, fsynced), is renamed over "path", and the folder is
 * fsynced.  Mutex held; a failure is kept in io_err. */
static tdm_err write_table_durable(tdm__sinkobj *s)
{
    char tmp[4200];
    int fd = -1;
    tdm_err err;

    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    err = tdm__fio_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666, &fd, s->io_msg,
                        sizeof s->io_msg);
    s->out.len = 0;
    if (s->header)
        sb_put(&s->out, s->header, s->header_len);
    for (size_t e = 0; e < s->n_ents; e++) {
        if (!s->ents[e].gone)
            sb_put(&s->out, s->ents[e].line, s->ents[e].line_len);
        if (err == TDM_OK &&
            (s->out.len >= FLUSH_BYTES || e + 1 == s->n_ents)) {
            err = tdm__fio_write_all(fd, s->out.p, s->out.len, tmp, s->io_msg,
                                     sizeof s->io_msg);
            s->out.len = 0;
        }
    }
    if (err == TDM_OK && s->n_ents == 0 && s->out.len > 0)
        err = tdm__fio_write_all(fd, s->out.p, s->out.len, tmp, s->io_msg,
                                 sizeof s->io_msg);
    if (s->out.oom && err == TDM_OK)
        err = TDM_ERR_NOMEM;
    s->out.len = 0;
    s->out.oom = false;
    if (err == TDM_OK)
        err = tdm__fio_fsync(fd, tmp, s->io_msg, sizeof s->io_msg);
    tdm_err cerr = tdm__fio_close(fd, tmp, s->io_msg, sizeof s->io_msg);
    if (err == TDM_OK)
        err = cerr;
    if (err == TDM_OK)
        err = tdm__fio_rename(tmp, s->path, s->io_msg, sizeof s->io_msg);
    if (err == TDM_OK)
        err = tdm__fio_fsync_dir(s->dir, s->io_msg, sizeof s->io_msg);
    if (err == TDM_OK)
        s->table_dirty = false;
    else
        (void)tdm__fio_unlink(tmp, NULL, 0);
    s->io_err = err;
    return err;
}

/* Flushes, writes an upsert table, closes the file and frees the sink.
 * Returns TDM_OK or TDM_ERR_IO (message names the path; the first write
 * error of the run if there was one). */
static tdm_err sink_close(tdm__sinkobj *s, char *errbuf, size_t errbuf_size)
{
    tdm_err err;

    if (!s)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    if (s->tpc) {
        tpc_close(s);
        err = s->io_err;
    } else {
        err = flush_out(s);
    }
    if (err == TDM_OK && upsert_table(s))
        err = write_table(s);
    if (err == TDM_OK && s->f && s->own_f) {
        FILE *f = s->f;
        s->f = NULL;
        if (fclose(f) != 0) {
            s->io_err = err = TDM_ERR_IO;
            snprintf(s->io_msg, sizeof s->io_msg, "cannot write '%s': %s",
                     s->path, strerror(errno));
        }
    }
    if (err != TDM_OK)
        tdm__errf(errbuf, errbuf_size, err, "%s", s->io_msg);
    pthread_mutex_unlock(&s->mu);
    free_sink(s);
    return err;
}

/* Makes everything written so far durable (see connect.h): the pending
 * output written and fflush'ed; an upsert file's table written (to
 * path.tmp, renamed over path) when it changed.  Returns TDM_OK or
 * TDM_ERR_IO (message names the path). */
static tdm_err sink_flush(tdm__sinkobj *s, char *errbuf, size_t errbuf_size)
{
    tdm_err err;

    if (!s || s->type == TDM__SINK_DISCARD)
        return TDM_OK;
    pthread_mutex_lock(&s->mu);
    err = flush_out(s);
    if (err == TDM_OK && upsert_table(s) && s->table_dirty && !s->dir)
        err = write_table(s);
    if (err != TDM_OK)
        tdm__errf(errbuf, errbuf_size, err, "%s", s->io_msg);
    pthread_mutex_unlock(&s->mu);
    return err;
}

/* Writes output buffered FLUSH_MS or longer (see connect.h, tick): with
 * the supervisor's 100 ms tick a row waits at most about 600 ms when no
 * further row arrives to trigger after_write. */
static void sink_tick(tdm__sinkobj *s)
{
    if (!s || s->type == TDM__SINK_DISCARD)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->out.len > 0 && sink_now(s) - s->last_flush_ms >= FLUSH_MS)
        (void)flush_out(s); /* an error is kept in io_err */
    pthread_mutex_unlock(&s->mu);
}

/* Version 4 (connect.h): a file sink's parts as a whole (file_parts.c),
 * those of "path" and of its upsert changelog; stdout and discard have
 * none.  Both names of @p conf's path in @p names (0: not a file sink). */
static int part_names(const tdm__sink_conf *conf, char names[2][4200])
{
    if (conf->type != TDM__SINK_FILE || !conf->path)
        return 0;
    snprintf(names[0], sizeof names[0], "%s", conf->path);
    snprintf(names[1], sizeof names[1], "%s.changelog", conf->path);
    return 2;
}

static tdm_err sink_top(const tdm__sink_conf *conf, uint64_t *id, char *errbuf,
                        size_t errbuf_size)
{
    char names[2][4200];
    tdm_err err = TDM_OK;
    int n = part_names(conf, names);
    *id = 0;
    for (int i = 0; err == TDM_OK && i < n; i++) {
        uint64_t top = 0;
        err = tdm__parts_top(names[i], &top, errbuf, errbuf_size);
        if (top > *id)
            *id = top;
    }
    return err;
}

static tdm_err sink_supersede(const tdm__sink_conf *conf, uint64_t first,
                              uint64_t committed, size_t *moved, char *errbuf,
                              size_t errbuf_size)
{
    char names[2][4200];
    tdm_err err = TDM_OK;
    int n = part_names(conf, names);
    *moved = 0;
    for (int i = 0; err == TDM_OK && i < n; i++) {
        size_t m = 0;
        err = tdm__parts_supersede(names[i], first, committed, &m, errbuf,
                                   errbuf_size);
        *moved += m;
    }
    return err;
}

/* Version 4: an exactly-once upsert file sink's table, compacted from
 * its committed changelog into "path" ("Upsert changelog" above). */
static tdm_err sink_finish(const tdm__sink_conf *conf, int mode, char *errbuf,
                           size_t errbuf_size)
{
    tdm__sink_conf c;
    tdm__sinkobj *s = NULL;
    if (conf->type != TDM__SINK_FILE || !conf->path || mode != 1)
        return TDM_OK;
    c = *conf;
    c.exactly_once = false;
    tdm_err err = sink_open(&c, mode, &s, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm__part_split(s->path, &s->dir, &s->base, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = log_compact(s, errbuf, errbuf_size);
    if (err == TDM_OK && write_table_durable(s) != TDM_OK)
        err = tdm__errf(errbuf, errbuf_size, s->io_err, "%s", s->io_msg);
    if (err == TDM_ERR_NOMEM)
        tdm__errf(errbuf, errbuf_size, err, "out of memory compacting '%s'",
                  conf->path);
    free_sink(s);
    return err;
}

/* last_error: an object keeps its first I/O error with the file and
 * the system's reason, and its flush returns it.  A write fails when the
 * object's buffer could not go to its file (the error is then sticky,
 * and flush only reports it) or for want of memory (flush then writes
 * the buffer out: harmless, the failing run abandons its sinks).  (The
 * Kafka sink has none: its flush waits for the broker.) */
static void sink_last_error(tdm__sinkobj *s, char *buf, size_t n)
{
    buf[0] = 0;
    if (sink_flush(s, buf, n) == TDM_OK)
        buf[0] = 0;
}

const tdm__sink_vtab tdm__text_sink = {
    .version = 5,
    .open = sink_open,
    .write_result = sink_write_result,
    .write_row = sink_write_row,
    .write_dead = sink_write_dead,
    .close = sink_close,
    .flush = sink_flush,
    .tick = sink_tick,
    .pre_commit = sink_pre_commit,
    .commit = sink_commit,
    .recover = sink_recover,
    .abandon = sink_abandon,
    .top = sink_top,
    .supersede = sink_supersede,
    .finish = sink_finish,
    .last_error = sink_last_error,
};
