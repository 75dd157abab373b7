/* SPDX-License-Identifier: MIT */
/* row.h - typed records of the runtime: schemas, rows and batches.
 *
 * A source parses text into rows of a schema; rows travel between subtasks
 * in batches (the unit of a queue slot).  A batch owns every byte its rows
 * point to (an arena for strings), so passing a batch passes ownership of
 * its rows, and the hot path allocates nothing once batches are recycled.
 * struct tdm_row (public, opaque) is tdm__row.
 */
#ifndef TDM_ROW_H
#define TDM_ROW_H

#include "core.h"

/* ---- Schemas ---- */

typedef struct tdm__field {
    char *name;
    tdm_type type;
} tdm__field;

typedef struct tdm__schema {
    int n;
    tdm__field *fields;
} tdm__schema;

/* Parses "name:type, name:type" (types int64|double|string|bool|
 * timestamp|decimal(p,s), p <= 18; a comma inside parentheses does not
 * end an entry) into *out.  TDM_ERR_INVAL with a message naming the bad
 * entry, or TDM_ERR_NOMEM. */
tdm_err tdm__schema_parse(const char *text, tdm__schema *out, char *errbuf,
                          size_t errbuf_size);
/* Index of field @p name, or -1. */
int tdm__schema_find(const tdm__schema *s, const char *name);
/* Frees the fields (not the struct). */
void tdm__schema_free(tdm__schema *s);

/* ---- Values and rows ---- */

typedef struct tdm__val {
    union {
        int64_t i; /* INT64, TIMESTAMP, BOOL (0/1) */
        double d;  /* DOUBLE */
        struct {
            const char *p; /* STRING: into the batch arena */
            uint32_t len;
        } s;
    } u;
    uint8_t null; /* absent from the input */
} tdm__val;

/* One row.  v has schema->n values and lives in the batch. */
struct tdm_row {
    tdm_time_ms ts;     /* event (or ingestion/processing) timestamp */
    uint32_t partition; /* partition (split) index within the subtask */
    uint32_t flags;     /* TDM__ROW_* */
    tdm__val *v;
    const tdm__schema *schema;
};
typedef struct tdm_row tdm__row;

#define TDM__ROW_GUARDED 1u /* caught by the timestamp guard */

/* ---- Batches ---- */

/* Where a row came from and its bytes as read, noted by its source for a
 * dead letter that a check after the poll may send (tdm__batch_keep). */
typedef struct tdm__kept {
    const tdm__val *v; /* the row's values: they identify the row,
                          which may be moved within the batch */
    char *location;    /* "file.jsonl:17", "topic[3]@42" */
    const char *raw;   /* in the same allocation as location */
    size_t raw_len;
} tdm__kept;

/* A batch of rows of one schema plus the bytes they point to.  Items
 * besides rows (watermarks, statuses, end) travel as separate queue
 * items, in order with batches.
 *
 * The timestamp guard runs after the poll, when a text source's line
 * buffer has moved on.  So that its dead letters still carry file:line
 * and the original bytes, the runtime sets keep_after before the poll
 * and the source notes every row whose timestamp lies above it (rows
 * the guard may catch: rare).  Any other row costs one comparison. */
typedef struct tdm__batch {
    const tdm__schema *schema;
    size_t n, cap;  /* rows used / allocated */
    tdm__row *rows; /* cap rows */
    tdm__val *vals; /* cap * schema->n values */
    char *arena;    /* string bytes */
    size_t arena_used, arena_cap;

    /* Notes (above): rows with a timestamp above keep_after are noted,
     * none with TDM_TIME_MAX (the default); n_kept notes, in the order
     * rows were added, in cap places made at the first note. */
    tdm_time_ms keep_after;
    tdm__kept *kept;
    size_t n_kept;
    /* Rows parsed from JSON that named a member twice in one object
     * (json.c). */
    uint32_t n_dup_keys;
    /* Kafka messages with a null value, skipped (kafka_source.c). */
    uint32_t n_tombstones;
} tdm__batch;

/* Creates a batch for up to @p cap rows of @p schema; NULL on OOM. */
tdm__batch *tdm__batch_new(const tdm__schema *schema, size_t cap);
/* Appends a row (values zeroed and null) and returns it, or NULL when
 * the batch is full. */
tdm__row *tdm__batch_add(tdm__batch *b);
/* Removes the last row (e.g. when parsing it failed). */
void tdm__batch_drop_last(tdm__batch *b);
/* Copies @p len bytes into the arena and stores them as field @p i of
 * @p row.  TDM_ERR_NOMEM if the arena cannot grow.  (Growing the arena
 * moves it: rows already added are re-pointed by the batch.) */
tdm_err tdm__batch_set_string(tdm__batch *b, tdm__row *row, int i,
                              const char *s, size_t len);
/* tdm__batch_set_string with the common case inlined: a short string
 * from outside the arena that fits without growing it (parsers call this
 * for every string field, mostly a few bytes long). */
static inline tdm_err tdm__batch_put_string(tdm__batch *b, tdm__row *row, int i,
                                            const char *s, size_t len)
{
    if (len <= 16 && b->arena_cap - b->arena_used >= len) {
        char *dst = b->arena + b->arena_used;
        for (size_t k = 0; k < len; k++)
            dst[k] = s[k];
        b->arena_used += len;
        row->v[i].u.s.p = dst;
        row->v[i].u.s.len = (uint32_t)len;
        row->v[i].null = 0;
        return TDM_OK;
    }
    return tdm__batch_set_string(b, row, i, s, len);
}
/* Whether the source should note @p row (tdm__batch_keep): its
 * timestamp lies above b->keep_after. */
static inline bool tdm__batch_wants(const tdm__batch *b, const tdm__row *row)
{
    return __builtin_expect(row->ts > b->keep_after, 0);
}
/* Notes @p location and the @p raw_len bytes at @p raw (both copied)
 * for the last row added.  TDM_OK, TDM_ERR_INVAL (no row, or the row
 * has its note), or TDM_ERR_NOMEM with nothing noted (a dead letter
 * then shows the row as parsed). */
tdm_err tdm__batch_keep(tdm__batch *b, const char *location, const char *raw,
                        size_t raw_len);
/* The note of @p row (a row of @p b), or NULL; borrowed until the batch
 * is cleared. */
const tdm__kept *tdm__batch_kept(const tdm__batch *b, const tdm__row *row);
/* Empties the batch for reuse (keeps its memory; drops the notes, sets
 * keep_after back to TDM_TIME_MAX and n_dup_keys to 0). */
void tdm__batch_clear(tdm__batch *b);
void tdm__batch_destroy(tdm__batch *b);

#endif /* TDM_ROW_H */
