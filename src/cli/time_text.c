/* SPDX-License-Identifier: MIT */
/* time_text.c - the CLI's words around tdm_time_format.
 *
 * The calendar conversion is the library's (tdm_time_format); each CLI
 * screen only chooses how the two sentinels read ("none"/"end" in run
 * summaries and diagnose, "-inf"/"+inf" in analyze's warnings, "-" in its
 * tables).
 */
#include <stdio.h>

#include "cli.h"

/* Formats a time as "2026-12-02T10:04:59.999Z" (see cli.h). */
const char *tdm__cli_iso_time(tdm_time_ms t, char *buf, size_t n)
{
    return tdm__cli_time(t, TDM_TIME_FORMAT_MILLIS, "none", "end", buf, n);
}

/* Calendar text through tdm_time_format, with the caller's words for the
 * two sentinels and milliseconds for times beyond four-digit years. */
const char *tdm__cli_time(tdm_time_ms t, unsigned flags, const char *min,
                          const char *max, char *buf, size_t n)
{
    if (t == TDM_TIME_MIN || t == TDM_TIME_MAX)
        snprintf(buf, n, "%s", t == TDM_TIME_MIN ? min : max);
    else if (!tdm_time_format(t, flags, buf, n))
        snprintf(buf, n, "%lldms", (long long)t);
    return buf;
}
