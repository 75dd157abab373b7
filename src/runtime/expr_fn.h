/* SPDX-License-Identifier: MIT */
/* expr_fn.h - the scalar functions of the expression language, shared by
 * the compiler (expr_parse.c, which checks types and emits one OP_FN per
 * call; expr_parse.c for ||) and their run-time bodies (expr_fn.c for
 * numbers, strings and casts, expr_time.c for timestamps, called by
 * expr_eval.c).  Internal to those files.
 */
#ifndef TDM_EXPR_FN_H
#define TDM_EXPR_FN_H

#include "runtime/expr.h"

/* Function bodies: an OP_FN's k.  Its ck is the mode listed. */
typedef enum tdm__expr_fn {
    TDM__FN_ABS_I = 1,
    TDM__FN_ABS_D,
    TDM__FN_ROUND_I, /* 1 or 2 args */
    TDM__FN_ROUND_D,
    TDM__FN_FLOOR_D,
    TDM__FN_CEIL_D,
    TDM__FN_DECIMAL_D, /* (x, p, s): CAST(x AS DECIMAL(p, s)) */
    TDM__FN_CHAR_LENGTH,
    TDM__FN_LOWER,
    TDM__FN_UPPER,
    TDM__FN_TRIM,      /* mode: TDM__TRIM_* bits; 1 arg (s) or 2 (chars, s) */
    TDM__FN_SUBSTRING, /* 2 or 3 args */
    TDM__FN_CONCAT,    /* any number of strings */
    TDM__FN_LIKE,      /* mode: the escape byte, 0 for none */
    TDM__FN_CAST,      /* mode: from type | (TDM__CAST_* << 3) */
    TDM__FN_FLOOR_TS,  /* mode: TDM__UNIT_* */
    TDM__FN_CEIL_TS,
    TDM__FN_EXTRACT,
    TDM__FN_TO_TS_LTZ,     /* mode: precision, 0 or 3 */
    TDM__FN_DATE_FORMAT,   /* (ts, fmt) */
    TDM__FN_DATE_FORMAT_S, /* (string, fmt): parsed first */
    TDM__FN_TO_TS,         /* (s [, fmt]) */
    TDM__FN_UNIX_TS        /* (s [, fmt]) */
} tdm__expr_fn;

enum { TDM__TRIM_LEADING = 1, TDM__TRIM_TRAILING = 2, TDM__TRIM_BOTH = 3 };

/* CAST targets. */
enum {
    TDM__CAST_BIGINT = 1,
    TDM__CAST_INT, /* int64 checked to the int32 range */
    TDM__CAST_DOUBLE,
    TDM__CAST_STRING,
    TDM__CAST_BOOL,
    TDM__CAST_TIMESTAMP,
    TDM__CAST_DECIMAL /* parsed only: emitted as TDM__FN_DECIMAL_D */
};

/* Time units of FLOOR/CEIL ... TO and EXTRACT. */
enum {
    TDM__UNIT_SECOND = 1,
    TDM__UNIT_MINUTE,
    TDM__UNIT_HOUR,
    TDM__UNIT_DAY,
    TDM__UNIT_MONTH,
    TDM__UNIT_QUARTER,
    TDM__UNIT_YEAR,
    TDM__UNIT_DOW, /* EXTRACT only: Sunday 1 .. Saturday 7 */
    TDM__UNIT_DOY  /* EXTRACT only: 1 .. 366 */
};

/* Runs function @p fn (mode @p mode) on the @p n values at @p v and
 * leaves the result in v[0]; every body sees non-null arguments only
 * (a null one makes the result null before it is called).  Strings it
 * builds are taken from @p sc; when they do not fit the result is
 * null. */
void tdm__expr_fn_eval(int fn, int mode, tdm__expr_val *v, int n,
                       tdm__expr_scratch *sc);

/* The time bodies (expr_time.c), called by tdm__expr_fn_eval. */
void tdm__expr_time_eval(int fn, int mode, tdm__expr_val *v, int n,
                         tdm__expr_scratch *sc);

/* Whether @p fmt[0..len) is a pattern DATE_FORMAT and TO_TIMESTAMP
 * support; when not, *bad is the offending byte's index. */
bool tdm__expr_time_pattern_ok(const char *fmt, size_t len, size_t *bad);

/* Bytes @p n from the scratch, or NULL when they do not fit. */
char *tdm__expr_scratch_take(tdm__expr_scratch *sc, size_t n);

#endif /* TDM_EXPR_FN_H */
