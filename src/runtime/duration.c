/* SPDX-License-Identifier: MIT */
/* duration.c - durations as the job file writes them, for callers of the
 * public API (tdm_duration_parse, tdm_duration_format).
 *
 * The configuration table's own reader and writer (conf.c) do the work,
 * so a tool reads "1m30s" exactly as a job key does and prints what the
 * job file would say.  Invariant: no second grammar of durations exists.
 * Used by `tidemark analyze` for its options and its report.
 */
#include "runtime/rt.h"

/* Parses a duration (see tidemark.h). */
tdm_err tdm_duration_parse(const char *text, tdm_time_ms *out)
{
    if (!text || !out)
        return TDM_ERR_INVAL;
    int64_t ms;
    if (!tdm__conf_duration(text, &ms))
        return TDM_ERR_PARSE;
    *out = ms;
    return TDM_OK;
}

/* Formats a duration (see tidemark.h). */
void tdm_duration_format(tdm_time_ms ms, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    tdm__conf_format_duration(ms, buf, n);
}
