/* SPDX-License-Identifier: MIT */
/* words.c - the diagnosis's words for numbers: times (ISO-8601 UTC,
 * with "no watermark yet" and "end of input" for the two sentinels),
 * durations ("4m12s"), counts with thousands separators, and the two
 * JSON helpers that note a failed allocation instead of returning it.
 *
 * Invariant: every formatter writes a NUL-terminated string into the
 * caller's buffer (truncated, never overrun) and returns that buffer, so
 * it can be an argument of printf.  Used by diagnose.c (the rules) and
 * explain.c (one window); the calendar itself is tdm_time_format's.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "server/server.h"

/* ISO-8601 UTC with milliseconds; "no watermark yet" and "end of input"
 * for the two sentinels: a thin wrapper of tdm_time_format that only
 * names them. */
const char *tdm__fmt_time(tdm_time_ms t, char *buf, size_t n)
{
    if (t == TDM_TIME_MIN) {
        snprintf(buf, n, "no watermark yet");
        return buf;
    }
    if (t == TDM_TIME_MAX) {
        snprintf(buf, n, "end of input");
        return buf;
    }
    if (!tdm_time_format(t, TDM_TIME_FORMAT_MILLIS, buf, n))
        snprintf(buf, n, "%" PRId64 " ms", t);
    return buf;
}

/* A duration for people: "250ms", "2.5s", "42s", "4m12s", "1h5m",
 * "3d4h". */
const char *tdm__fmt_dur(int64_t ms, char *buf, size_t n)
{
    const char *sign = "";
    uint64_t a;
    if (ms < 0) {
        sign = "-";
        a = (uint64_t)0 - (uint64_t)ms;
    } else {
        a = (uint64_t)ms;
    }
    if (a < 1000)
        snprintf(buf, n, "%s%" PRIu64 "ms", sign, a);
    else if (a < 10000)
        snprintf(buf, n, "%s%" PRIu64 ".%" PRIu64 "s", sign, a / 1000,
                 a % 1000 / 100);
    else if (a < 60000)
        snprintf(buf, n, "%s%" PRIu64 "s", sign, a / 1000);
    else if (a < 3600000)
        snprintf(buf, n, "%s%" PRIu64 "m%" PRIu64 "s", sign, a / 60000,
                 a / 1000 % 60);
    else if (a < 86400000)
        snprintf(buf, n, "%s%" PRIu64 "h%" PRIu64 "m", sign, a / 3600000,
                 a / 60000 % 60);
    else
        snprintf(buf, n, "%s%" PRIu64 "d%" PRIu64 "h", sign, a / 86400000,
                 a / 3600000 % 24);
    return buf;
}

/* A count with thousands separators ("1,234,567"). */
const char *tdm__fmt_count(int64_t v, char *buf, size_t n)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    int start = tmp[0] == '-', o = 0;
    for (int i = 0; i < len && (size_t)o + 1 < n; i++) {
        if (i > start && (len - i) % 3 == 0 && (size_t)o + 2 < n)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

/* A watermark as REST JSON: integer ms, null (none yet), "end". */
json_t *tdm__json_wm(tdm_time_ms t)
{
    if (t == TDM_TIME_MIN)
        return json_null();
    if (t == TDM_TIME_MAX)
        return json_string("end");
    return json_integer(t);
}

/* Appends a formatted string to a JSON array (best effort: a failed
 * allocation is caught by the caller's final check of *oom). */
void tdm__json_add_str(json_t *arr, int *oom, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (json_array_append_new(arr, json_string(buf)) != 0)
        *oom = 1;
}

/* Sets @p key of @p obj, noting a failure in *oom. */
void tdm__json_set(json_t *obj, const char *key, json_t *v, int *oom)
{
    if (!v || json_object_set_new(obj, key, v) != 0)
        *oom = 1;
}
