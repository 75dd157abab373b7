/* SPDX-License-Identifier: MIT */
/* window_start.c - the public tdm_window_start: the start of the aligned
 * window (tumbling, or a sliding window's latest) holding a timestamp.
 *
 * The assigners' own floor (time/time.c, tdm__window_start), exported so
 * that a tool computes the windows a job would, never a second formula.
 * Invariant: no overflow for any timestamp; the start saturates at
 * TDM_TIME_MIN.  Used by `tidemark analyze`'s what-if replays.
 */
#include "core.h"

/* The window start of @p ts (see tidemark.h). */
tdm_time_ms tdm_window_start(tdm_time_ms ts, tdm_time_ms offset_ms,
                             tdm_time_ms size_ms)
{
    if (size_ms <= 0)
        return ts;
    return tdm__window_start(ts, offset_ms, size_ms);
}
