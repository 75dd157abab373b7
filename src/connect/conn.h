/* SPDX-License-Identifier: MIT */
/* conn.h - helpers shared by the connectors in src/connect (internal to
 * them; the runtime uses connect.h).  Text checks and messages common to
 * the JSON and CSV parsers, timestamp conversion of doubles, a buffered
 * line reader over a file descriptor, and the "stream" that turns the
 * lines of one partition into rows or dead letters (file and tcp sources).
 */
#ifndef TDM_CONN_H
#define TDM_CONN_H

#include "connect/connect.h"

/* ---- Text checks and messages (parse.c) ---- */

/* Longest line a source accepts; longer lines are dead-lettered. */
#define TDM__LINE_MAX ((size_t)16 << 20)
/* How much of an over-long line goes into its dead letter. */
#define TDM__RAW_MAX ((size_t)4096)

/* 1 if the line holds only blanks (space, tab, CR) or nothing. */
int tdm__conn_is_blank(const char *p, size_t len);
/* Checks that a line is text: valid UTF-8 (no overlong forms, surrogates
 * or code points above U+10FFFF) without control bytes other than tab and
 * CR.  Returns 0, or -1 with a reason "binary data: ..." in (reason, n). */
int tdm__conn_check_text(const char *p, size_t len, char *reason, size_t n);
/* Writes a short display form of a text value into (out, n): quoted,
 * control characters escaped, cut after 40 bytes with "...". */
void tdm__conn_quote(char *out, size_t n, const char *p, size_t len);
/* Shortest of %.15g, %.16g and %.17g that reads back as @p d. */
void tdm__conn_fmt_double(char *out, size_t n, double d);
/* What a field of @p type expects ("an integer", "a timestamp in s"),
 * for reasons "field 'x': expected ..., got ...". */
const char *tdm__conn_expected(tdm_type type, int unit);
/* Reads decimal text (a JSON or CSV literal, or a JSON string) for
 * decimal field @p f: TDM_OK, or TDM_ERR_PARSE with the reason "field
 * 'price': ..." (not a decimal number, or too many digits for the
 * field's precision). */
tdm_err tdm__conn_decimal(const tdm__field *f, const char *txt, size_t len,
                          int64_t *out, char *reason, size_t n);
/* An integer or a double (JSON numbers without their text) for decimal
 * field @p f, as tdm__conn_decimal. */
tdm_err tdm__conn_decimal_int(const tdm__field *f, int64_t i, int64_t *out,
                              char *reason, size_t n);
tdm_err tdm__conn_decimal_double(const tdm__field *f, double d, int64_t *out,
                                 char *reason, size_t n);
/* Writes the reason for a failed timestamp conversion (@p err from
 * tdm__ts_*) of field @p name shown as @p shown; returns TDM_ERR_PARSE. */
tdm_err tdm__conn_ts_error(char *reason, size_t n, const char *name,
                           tdm_err err, int unit, const char *shown);
/* The configuration name of a timestamp unit ("ms", "s", ...). */
const char *tdm__conn_unit_name(int unit);
/* Converts a number of @p unit (not ISO8601) to epoch ms, rounding down;
 * representation errors under a microsecond are rounded away.  Returns
 * TDM_OK, TDM_ERR_RANGE (not finite or out of range), TDM_ERR_PARSE
 * (unit is ISO8601). */
tdm_err tdm__ts_from_double(double d, int unit, tdm_time_ms *out);
/* Sets row->ts from conf->ts_field in event time (any field type but
 * BOOL; TIMESTAMP fields are already in ms).  Leaves it TDM_TIME_MIN for
 * ingestion and processing time.  Returns TDM_OK or TDM_ERR_PARSE with a
 * reason naming the field ("field 'ts' is missing"). */
tdm_err tdm__conn_finish_ts(const tdm__source_conf *conf, tdm__row *row,
                            char *reason, size_t n);

/* JSON parsing with a choice of path (json.c): TDM__JSON_AUTO tries the
 * allocation-free fast path and falls back to jansson for anything it
 * does not handle (errors, escapes, nested values, duplicates);
 * TDM__JSON_JANSSON always uses jansson; TDM__JSON_FAST never does and
 * returns TDM_ERR_UNSUPPORTED (no row added) where it would fall back.
 * Tests and the fuzz target check that the paths agree. */
enum { TDM__JSON_AUTO = 0, TDM__JSON_JANSSON, TDM__JSON_FAST };
tdm_err tdm__json_parse_line_mode(const tdm__source_conf *conf,
                                  const char *line, size_t len, tdm__batch *b,
                                  char *reason, size_t n, int mode);

/* What the fast path learned from the previous line of a stream: the
 * schema field of each of its first members, so that the next line's
 * keys are compared with one expected name instead of being scanned and
 * looked up (lines of one source usually share their layout).  A wrong
 * guess only costs the lookup.  Zeroed: no guesses. */
#define TDM__JSON_HINT_MAX 16
typedef struct tdm__json_hint {
    int8_t field[TDM__JSON_HINT_MAX]; /* field + 1 of member m, 0: none */
} tdm__json_hint;

/* tdm__json_parse_line (TDM__JSON_AUTO) that reads and updates @p hint
 * (NULL: none).  Same rows, reasons and return codes. */
tdm_err tdm__json_parse_line_hint(const tdm__source_conf *conf,
                                  tdm__json_hint *hint, const char *line,
                                  size_t len, tdm__batch *b, char *reason,
                                  size_t n);

/* ---- Line reader (lines.c) ---- */

typedef struct tdm__lines {
    int fd;
    bool own_fd;    /* close fd at the end */
    bool wait;      /* not a regular file: poll() before read() */
    bool eof;       /* read() returned 0 */
    bool skipping;  /* discarding the rest of an over-long line */
    bool keep_cut;  /* a last line without its newline is no line:
                       its bytes stay for tdm__lines_rest (sockets) */
    int read_errno; /* errno of the read() that failed */
    char *buf;
    size_t cap;      /* allocated bytes */
    size_t beg, end; /* unread bytes are buf[beg, end) */
    size_t scan;     /* buf[beg, scan) is known to hold no newline */
    int64_t line_no; /* number of the last line returned */
    int64_t pos;     /* bytes read from fd (plus the seek offset) */
} tdm__lines;

enum {
    TDM__LINE_OK = 0,   /* a line (without its LF / CRLF) */
    TDM__LINE_AGAIN,    /* nothing available right now */
    TDM__LINE_EOF,      /* end of input */
    TDM__LINE_TOO_LONG, /* the first TDM__RAW_MAX bytes of an over-long
                           line; the rest is skipped */
    TDM__LINE_ERROR     /* read() failed; errno is set */
};

/* Starts reading @p fd (owned when @p own_fd).  TDM_OK or NOMEM. */
tdm_err tdm__lines_init(tdm__lines *lr, int fd, bool own_fd);
/* The next line in (*line, *len), valid until the next call; lr->line_no
 * is its number (1-based, blank lines counted).  A last line without a
 * newline is returned as a line, unless lr->keep_cut.  @p timeout_ms
 * bounds the wait of a non-regular descriptor (0: do not wait).  Returns
 * a TDM__LINE_* code (TDM__LINE_ERROR: lr->read_errno says why, unless
 * errno is ENOMEM). */
int tdm__lines_next(tdm__lines *lr, const char **line, size_t *len,
                    int timeout_ms);
/* After TDM__LINE_EOF or TDM__LINE_ERROR: the bytes read after the last
 * newline that no line returned (a line cut by the end of the input),
 * in (*p, return value); 0 when there are none or they belong to an
 * over-long line already reported.  Valid until the next call. */
size_t tdm__lines_rest(const tdm__lines *lr, const char **p);
/* Frees the buffer and closes an owned descriptor. */
void tdm__lines_free(tdm__lines *lr);
/* The input offset where the next line starts (the byte after the last
 * line returned; after an over-long line's start, the bytes read so far,
 * its rest being skipped).  For checkpoints of regular files. */
int64_t tdm__lines_offset(const tdm__lines *lr);
/* Continues reading at byte @p offset of a regular file, the last line
 * returned having been number @p line_no; @p skipping: the bytes from
 * @p offset up to the next newline belong to an over-long line already
 * reported.  TDM_OK or TDM_ERR_IO (lseek failed; errno set). */
tdm_err tdm__lines_seek(tdm__lines *lr, int64_t offset, int64_t line_no,
                        bool skipping);

/* ---- Checkpoint sections of the sources (docs/checkpoints.md) ----
 * One section per source subtask; tags are distinct so that a blob of
 * one kind of source is refused by another. */
#define TDM__SNAP_TAG_FILE UINT64_C(0x5346)      /* "SF" */
#define TDM__SNAP_TAG_GENERATOR UINT64_C(0x5347) /* "SG" */
#define TDM__SNAP_TAG_NEXMARK UINT64_C(0x534E)   /* "SN" */
#define TDM__SNAP_TAG_KAFKA UINT64_C(0x534B)     /* "SK" */
#define TDM__SNAP_SOURCE_VERSION 1

/* Writes "source '<name>' checkpoint: offset N: <reason>" for the first
 * error of @p d into (errbuf, n); returns TDM_ERR_PARSE (parse.c). */
tdm_err tdm__conn_snap_error(const tdm__source_conf *conf,
                             const struct tdm__dec *d, char *errbuf, size_t n);

/* ---- Streams: the lines of one partition as rows (stream.c) ---- */

/* Distinct values of conf->partition_field -> partition indices, in the
 * order they first appear. */
typedef struct tdm__partmap {
    char **keys; /* n keys (tdm__malloc'd), index = partition */
    size_t *lens;
    size_t n, cap;
    struct tdm__map *idx; /* key -> partition (core/map.h), or NULL */
} tdm__partmap;

/* Index of @p key, added if new.  TDM_OK or NOMEM. */
tdm_err tdm__partmap_get(tdm__partmap *m, const char *key, size_t len,
                         uint32_t *index);
void tdm__partmap_free(tdm__partmap *m);

typedef struct tdm__stream {
    tdm__lines lr;
    char *name;   /* for locations: "name:line" */
    int *columns; /* CSV column -> schema index */
    int n_columns;
    bool header_done;   /* CSV header seen (or not expected) */
    char *header_error; /* reason the CSV header was unusable */
    int64_t header_line;
    bool done;
    tdm__json_hint hint; /* JSON: the previous line's member layout */
} tdm__stream;

/* Opens a stream over @p fd named @p name (copied).  TDM_OK or NOMEM. */
tdm_err tdm__stream_init(tdm__stream *st, const tdm__source_conf *conf, int fd,
                         bool own_fd, const char *name);
void tdm__stream_free(tdm__stream *st);

enum {
    TDM__STREAM_FULL = 0, /* @p max rows reached */
    TDM__STREAM_AGAIN,    /* nothing available right now */
    TDM__STREAM_END       /* the stream ended (st->done) */
};

/* Reads lines of @p st into @p b until it holds @p max rows, the input
 * would block or ends.  Rows get @p partition, or with partition_field
 * the index of their value in @p pm.  Malformed lines go to @p dead with
 * location "name:line".  *state gets a TDM__STREAM_* code.  Returns
 * TDM_OK, TDM_ERR_IO (read error) or TDM_ERR_NOMEM. */
tdm_err tdm__stream_read(tdm__stream *st, const tdm__source_conf *conf,
                         tdm__batch *b, size_t max, uint32_t partition,
                         tdm__partmap *pm, tdm__dead_fn dead, void *dead_ud,
                         int timeout_ms, int *state);

/* ---- JSON lines shared by the text and Kafka sinks (text_sink.c) ---- */

/* A growable byte buffer; zero-initialised is empty.  oom is set (and
 * further bytes dropped) when it cannot grow. */
typedef struct tdm__sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} tdm__sbuf;

/* Appends @p n bytes of @p p to @p b. */
void tdm__sbuf_put(tdm__sbuf *b, const char *p, size_t n);
/* Frees the bytes of @p b and empties it. */
void tdm__sbuf_free(tdm__sbuf *b);

/* Append the JSON line the text sink writes (text_sink.c's header
 * comment has the members), without its newline, to @p b; b->oom tells
 * of a failed allocation.  tdm__json_result: @p mode is the output mode
 * (0 append, 1 upsert, 2 retract); @p upsert_op adds "op": "upsert" to
 * upsert rows (stdout does, a keyed table or topic does not); @p sel
 * (NULL: every column) chooses, orders and renames the columns of
 * results and of records (pass-through rows), connect.h. */
void tdm__json_result(const tdm__out_row *row, int mode, bool upsert_op,
                      tdm__sel *sel, tdm__sbuf *b);
void tdm__json_late(const tdm__row *row, tdm__sel *sel, tdm__sbuf *b);
/* Appends the JSON object of a result's group key, cols[0 ..
 * n_key_cols), plus "window_start" and "window_end" when @p window and
 * the row has a window: {"user":"a","window_start":0,"window_end":60000}
 * (the Kafka sink's message key). */
void tdm__json_key(const tdm__out_row *row, bool window, tdm__sbuf *b);
void tdm__json_dead(const char *location, const char *reason, const char *raw,
                    size_t raw_len, tdm__sbuf *b);

/* ---- Part files of an exactly-once file sink (file_parts.c) ---- */

enum { TDM__PART_VISIBLE = 1, TDM__PART_PENDING, TDM__PART_INPROGRESS };

/* A folder entry that is a part of a sink's base name. */
typedef struct tdm__part {
    int kind;    /* TDM__PART_* */
    uint64_t id; /* the checkpoint that closed it (0: in progress) */
    int writer;
    bool legacy; /* named writer first ("part-<w>-<id>", before 2026-12) */
} tdm__part;

/* Whether @p name (an entry of the sink's folder) is a part of the sink
 * whose file name is @p base, of any writer; fills @p pt. */
bool tdm__part_parse(const char *base, const char *name, tdm__part *pt);
/* The path of a part: "dir/base.part-<id>-<w>" (visible),
 * "dir/.base.part-<id>-<w>.pending", "dir/.base.part-<w>.inprogress". */
void tdm__part_path(char *out, size_t n, const char *dir, const char *base,
                    int kind, uint64_t id, int writer);
/* The same, named writer first as before 2026-12 (visible or pending). */
void tdm__part_legacy_path(char *out, size_t n, const char *dir,
                           const char *base, int kind, uint64_t id, int writer);
/* Splits a sink path into its folder ("." when none) and file name
 * (new strings; TDM_ERR_INVAL when the path names a folder). */
tdm_err tdm__part_split(const char *path, char **dir, char **base, char *errbuf,
                        size_t errbuf_size);
/* The highest checkpoint id in the name of any part or replaced-folder
 * of the sink at @p path (0: none); new ids must go above it. */
tdm_err tdm__parts_top(const char *path, uint64_t *top, char *errbuf,
                       size_t errbuf_size);
/* A fresh start's move aside: every part of any writer with an id below
 * @p first goes into "dir/base.replaced-<first>/", pending parts of
 * checkpoints <= @p committed (durable) under their visible names;
 * pending parts of later checkpoints (never durable) are removed.
 * Idempotent; *moved counts the parts moved by this call. */
tdm_err tdm__parts_supersede(const char *path, uint64_t first,
                             uint64_t committed, size_t *moved, char *errbuf,
                             size_t errbuf_size);

/* ---- Generator ---- */

/* The schema text of the generator's rows, for a source without one:
 * clicks "user:string, page:string, ts:timestamp", sensors
 * "sensor:string, value:double, ts:timestamp", nexmark every field of
 * tdm__nexmark_schema.  Static storage. */
const char *tdm__generator_schema(int gen_kind);
/* The schema text of NEXMark rows (nexmark_source.c): every field. */
const char *tdm__nexmark_schema(void);
/* Epoch ms of the generator's first position (2026-01-01T00:00:00Z). */
#define TDM__GEN_EPOCH_MS INT64_C(1767225600000)

#endif /* TDM_CONN_H */
