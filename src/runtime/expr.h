/* SPDX-License-Identifier: MIT */
/* expr.h - expressions of the job file: a source's `filter` and
 * `compute.<field>` keys.
 *
 * An expression is compiled once against a source schema (parsing, name
 * resolution and type checking all happen there, so a bad expression is a
 * validation error with a column) into a small postfix program that is
 * evaluated on every row without allocating and without touching shared
 * state, so one program serves every subtask of the source at once.  The
 * grammar and the null and overflow rules are in docs/job-format.md,
 * section "Expressions".
 */
#ifndef TDM_EXPR_H
#define TDM_EXPR_H

#include <stdbool.h>

#include "runtime/row.h"

/* Static type of an expression (or of a value on the evaluation stack). */
typedef enum tdm__expr_type {
    TDM__EXPR_INT = 1, /* int64 (int64 and timestamp fields) */
    TDM__EXPR_DOUBLE,
    TDM__EXPR_STRING,
    TDM__EXPR_BOOL,
    TDM__EXPR_NULL /* the literal NULL: fits any type */
} tdm__expr_type;

/* A value: the union the type says, and whether it is null. */
typedef struct tdm__expr_val {
    union {
        int64_t i; /* INT, BOOL (0/1) */
        double d;  /* DOUBLE */
        struct {
            const char *p; /* STRING: borrowed from the row or program */
            uint32_t len;
        } s;
    } u;
    uint8_t null;
} tdm__expr_val;

typedef struct tdm__expr tdm__expr;

/* Bytes one evaluation may build strings in (LOWER, UPPER, CONCAT and
 * ||, CAST to a string, DATE_FORMAT): together at most this many; a
 * function whose result would not fit gives null. */
#define TDM__EXPR_SCRATCH_BYTES 16384

/* Where an evaluation builds strings: owned by the caller (one per
 * thread, e.g. on its stack), reset by every evaluation, so a string
 * result built there lives until the scratch is used again. */
typedef struct tdm__expr_scratch {
    uint32_t used;
    char buf[TDM__EXPR_SCRATCH_BYTES];
} tdm__expr_scratch;

/* Compiles @p text against @p schema (borrowed: field indexes and types
 * are resolved now, so rows evaluated later must have this schema's
 * layout).  On failure *out is NULL and errbuf holds "column N: what was
 * expected, got what" (columns count bytes from 1) or, for an unknown
 * field, its name and the closest field of the schema.  Returns TDM_OK,
 * TDM_ERR_INVAL or TDM_ERR_NOMEM.  The program copies what it needs of
 * @p text. */
tdm_err tdm__expr_compile(const char *text, const tdm__schema *schema,
                          tdm__expr **out, char *errbuf, size_t errbuf_size);

/* The field of @p s whose name is closest to @p name (edit distance,
 * case-insensitive, within about a third of its length), or NULL: the
 * "did you mean" of unknown names. */
const char *tdm__expr_closest(const tdm__schema *s, const char *name);

/* The static type of a compiled expression. */
tdm__expr_type tdm__expr_result_type(const tdm__expr *e);

/* Evaluates @p e on @p row (borrowed) into *out.  @p wm is the current
 * watermark of the operator evaluating it (CURRENT_WATERMARK), or
 * TDM_TIME_MIN before its first one (CURRENT_WATERMARK is then null).
 * Allocates nothing and writes nothing but *out and @p sc (not NULL): a
 * string result borrows from the row, the program or @p sc, and stays
 * valid until @p sc is used again.  Safe to call from several threads at
 * once, each with its own scratch.
 * @thread any */
void tdm__expr_eval(const tdm__expr *e, const tdm__row *row, tdm_time_ms wm,
                    tdm__expr_scratch *sc, tdm__expr_val *out);

/* A condition holds: evaluates @p e (of type BOOL or NULL) with the
 * watermark @p wm and returns true only for a non-null true (SQL's
 * WHERE).  Uses a scratch on its own stack. */
bool tdm__expr_true(const tdm__expr *e, const tdm__row *row, tdm_time_ms wm);

/* Whether @p e calls CURRENT_WATERMARK (an operator that has no input
 * watermark to give refuses it). */
bool tdm__expr_uses_watermark(const tdm__expr *e);

/* Frees a program (NULL is fine). */
void tdm__expr_destroy(tdm__expr *e);

/* Name of a type for messages ("int64", "double", ...). */
const char *tdm__expr_type_name(tdm__expr_type t);

/* ---- A source's filter and computed fields ---- */

typedef struct tdm__expr_compute {
    int field;     /* schema index of the assigned field */
    tdm_type type; /* its schema type */
    tdm__expr *e;
} tdm__expr_compute;

/* What the `filter` and `compute.*` keys of one source compiled to
 * (built and freed from a node's keys by job_exprs.c). */
typedef struct tdm__src_exprs {
    tdm__expr *filter; /* NULL: none */
    tdm__expr_compute *compute;
    int n_compute;
} tdm__src_exprs;

/* Compiles @p text, the `filter` key of a source, against @p schema
 * into *out (owned by the caller): it must be a condition.  On failure
 * *out is NULL and errbuf holds "filter: column N: ..." or "filter: the
 * expression is int64, expected a condition ...".  Returns TDM_OK,
 * TDM_ERR_INVAL or TDM_ERR_NOMEM. */
tdm_err tdm__expr_compile_filter(const char *text, const tdm__schema *schema,
                                 tdm__expr **out, char *errbuf,
                                 size_t errbuf_size);

/* Compiles @p text, the key `compute.<field>`, against @p schema into
 * *out (its program owned by the caller): @p field must be an int64,
 * double or timestamp field of the schema, other than @p ts_field (the
 * field event time is read from) and @p partition_field (either may be
 * NULL), and the expression's type must fit it.  Messages start with
 * "compute.<field>: ".  Returns TDM_OK, TDM_ERR_INVAL or
 * TDM_ERR_NOMEM. */
tdm_err tdm__expr_compile_compute(const tdm__schema *schema, const char *field,
                                  const char *text, const char *ts_field,
                                  const char *partition_field,
                                  tdm__expr_compute *out, char *errbuf,
                                  size_t errbuf_size);

/* Applies the filter, then the computes in key order, to @p row of
 * batch @p b in place (a string compute's text goes to the batch's
 * arena), with @p wm the source subtask's current watermark (see
 * tdm__expr_eval).  Returns 1 to keep the row, 0 when the filter does
 * not hold (the row is then left as it was), -1 when the batch cannot
 * hold a computed string (out of memory).  @thread any (the set is read
 * only). */
int tdm__src_exprs_apply(const tdm__src_exprs *x, tdm__row *row, tdm_time_ms wm,
                         tdm__batch *b);

#endif /* TDM_EXPR_H */
