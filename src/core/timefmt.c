/* SPDX-License-Identifier: MIT */
/* timefmt.c - epoch milliseconds as ISO-8601 UTC text.
 *
 * The one place the library, the server and the CLI turn a tdm_time_ms
 * into calendar text.  Callers differ only in how they name the two
 * sentinels (TDM_TIME_MIN "no watermark yet" / "none" / "-inf",
 * TDM_TIME_MAX "end of input" / "end" / "+inf") and times too far out
 * for a four-digit year; this function writes none of those and says so
 * by returning 0, so each caller keeps its own words without a second
 * calendar conversion.
 *
 * Negative times are floored (-1 ms is 1969-12-31T23:59:59.999Z).
 */
#include <stdio.h>
#include <time.h>

#include "core.h"

/* Years 0000..9999 only: four-digit years read as times. */
#define FMT_MIN INT64_C(-62167219200000)
#define FMT_MAX INT64_C(253402300799999)

int tdm_time_format(tdm_time_ms ms, unsigned flags, char *buf, size_t n)
{
    if (!buf || !n || ms < FMT_MIN || ms > FMT_MAX)
        return 0;
    int64_t secs = ms / 1000, frac = ms % 1000;
    if (frac < 0) {
        frac += 1000;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    if ((int64_t)t != secs || !gmtime_r(&t, &tm))
        return 0;
    if (frac || (flags & TDM_TIME_FORMAT_MILLIS))
        snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (int)frac);
    else
        snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return 1;
}
