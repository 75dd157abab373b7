/* SPDX-License-Identifier: MIT */
/* decimal.h - exact DECIMAL(p, s) values as scaled int64 (see decimal.c):
 * the value 1658.20 of a decimal(10, 2) field is the int64 165820.  The
 * type itself is a tdm_type that carries p and s (TDM_TYPE_DECIMAL_OF in
 * tidemark.h), so every place that passes a field's type along passes
 * its scale with it.
 */
#ifndef TDM_DECIMAL_H
#define TDM_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tidemark.h"

/* Largest precision: every decimal(18, s) value fits an int64. */
#define TDM__DEC_MAX_PRECISION 18

/* Whether @p t is a decimal type (any precision and scale). */
static inline bool tdm__is_decimal(tdm_type t)
{
    return TDM_TYPE_BASE(t) == TDM_TYPE_DECIMAL;
}

/* 10^@p s for 0 <= s <= 18. */
int64_t tdm__dec_pow10(int s);
/* Reads decimal text ("-12.3", "12.30", "+5", ".5", "7.") at scale @p s:
 * digits beyond the scale round half away from zero, as Flink's CAST to
 * DECIMAL.  TDM_OK; TDM_ERR_PARSE if the text is not a plain decimal
 * number (no exponent, no blanks); TDM_ERR_RANGE if the value needs more
 * than @p p digits. */
tdm_err tdm__dec_parse(const char *txt, size_t len, int p, int s, int64_t *out);
/* Writes @p v at scale @p s with exactly s fractional digits ("1658.20",
 * "-0.05", "42"); returns the length (at most 21 bytes plus the NUL,
 * truncated to @p n as snprintf does). */
size_t tdm__dec_format(char *buf, size_t n, int64_t v, int s);
/* The value as a double (nearest). */
double tdm__dec_to_double(int64_t v, int s);
/* round(@p r) into *out when r is clearly not near a half (its binary
 * error cannot decide the rounding), the common case: true; false when
 * the slower rounding of the shortest text is needed. */
bool tdm__dec_round_fast(double r, double *out);
/* @p d at scale @p s, rounded half away from zero; false when it is not
 * finite or needs more than @p p digits. */
bool tdm__dec_from_double(double d, int p, int s, int64_t *out);
/* @p v (scale @p from) at scale @p to, rounded half away from zero when
 * digits are dropped; false when it does not fit @p p digits. */
bool tdm__dec_rescale(int64_t v, int from, int to, int p, int64_t *out);
/* Whether @p v has at most @p p digits. */
bool tdm__dec_fits(int64_t v, int p);

#endif
