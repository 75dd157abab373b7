/* SPDX-License-Identifier: MIT */
/* time.c - saturating time arithmetic and window-start computation.
 *
 * Times are int64 milliseconds whose extremes mean "no watermark" and
 * "end of input"; every operation here saturates instead of overflowing.
 */
#include "core.h"

tdm_time_ms tdm_time_add(tdm_time_ms a, tdm_time_ms b)
{
    return tdm__time_add_sat(a, b);
}

tdm_time_ms tdm_time_sub(tdm_time_ms a, tdm_time_ms b)
{
    return tdm__time_sub_sat(a, b);
}

/* Floored modulo start: offset + floor((ts - offset) / size) * size.
 * Precondition: size > 0 and |offset| < size.  The remainder is computed
 * from ts % size and offset % size separately, so nothing overflows; if
 * the start itself would lie below TDM_TIME_MIN it saturates. */
tdm_time_ms tdm__window_start(tdm_time_ms ts, tdm_time_ms offset,
                              tdm_time_ms size)
{
    /* r = (ts - offset) mod size, floored, in [0, size).  Both remainders
     * are first brought into [0, size), so that a - b lies in
     * (-size, size) and cannot overflow even when size > INT64_MAX / 2. */
    tdm_time_ms a = ts % size;
    tdm_time_ms b = offset % size;
    if (a < 0)
        a += size;
    if (b < 0)
        b += size;
    tdm_time_ms r = a - b;
    if (r < 0)
        r += size;
    return tdm__time_sub_sat(ts, r);
}
