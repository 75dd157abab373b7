/* SPDX-License-Identifier: MIT */
/* rt_ctx.c - the run's services, the layer every runtime thread may call
 * and which calls nothing above it: the first error and the abort flag
 * (tdm__rt_fail, which wakes every waiter), the count of finished threads the
 * supervisor waits on, the processing-time clock, the connectors' log
 * line, and the text of times and keys for the debug log.
 *
 * Invariant: tdm__rt_fail keeps only the first error (under run->mu) and sets
 * abort once; the wake-up that follows is idempotent and is left to the
 * owner of the subtasks (run->wake_all, run.c): this file knows none.
 * Used by run.c, plan.c, every subtask file and their components;
 * declared in rt_ctx.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/decimal.h"
#include "runtime/plan.h"
#include "runtime/rt_ctx.h"

/* ---- Failure and the end of threads ---- */

/* Only the first error is kept; abort wakes every waiter. */
void tdm__rt_fail(tdm__run *run, tdm_err err, const char *fmt, ...)
{
    pthread_mutex_lock(&run->mu);
    bool first = run->err == TDM_OK;
    if (first) {
        run->err = err;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(run->errmsg, sizeof run->errmsg, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&run->mu);
    /* The subtasks are run.c's: it wakes them (run->wake_all). */
    if (!atomic_exchange(&run->abort, 1) && run->wake_all)
        run->wake_all(run);
}

/* Counts a finished subtask and wakes the run thread. */
void tdm__rt_thread_done(tdm__run *run)
{
    pthread_mutex_lock(&run->mu);
    run->n_done++;
    pthread_cond_signal(&run->cv);
    pthread_mutex_unlock(&run->mu);
}

/* The processing-time clock every subtask reads (one tdm_clock each, all
 * over the job's time source). */
static tdm_time_ms clock_read(void *opaque)
{
    return tdm__job_now(opaque);
}

/* A custom clock over tdm__job_now. */
tdm_err tdm__rt_clock_new(tdm_job *job, tdm_clock **out)
{
    return tdm_clock_new_custom(clock_read, job, out);
}

/* ---- Logging and text ---- */

/* The connectors' log: one line of the job's log. */
void tdm__ctx_log_line(void *ud, const char *line)
{
    tdm__job_log(ud, "%s", line);
}

/* ISO-8601 with milliseconds, "none" and "end" for the two ends. */
void tdm__rt_format_ms(tdm_time_ms ms, char *buf, size_t n)
{
    if (ms == TDM_TIME_MIN || ms == TDM_TIME_MAX)
        snprintf(buf, n, "%s", ms == TDM_TIME_MIN ? "none" : "end");
    else if (!tdm_time_format(ms, TDM_TIME_FORMAT_MILLIS, buf, n))
        snprintf(buf, n, "%lld", (long long)ms);
}

/* A decimal key value as text in @p tmp (32 bytes). */
static const char *dec_text(char *tmp, int64_t v, tdm_type t)
{
    tdm__dec_format(tmp, 32, v, TDM_DECIMAL_SCALE(t));
    return tmp;
}

/* Decodes an operator's key bytes and prints the values joined by ','
 * (strings as they are). */
void tdm__rt_key_text(const tdm__rt_op *op, const char *key, size_t len,
                      char *buf, size_t n)
{
    tdm__val vals[16];
    char dec[32];
    size_t o = 0;
    buf[0] = 0;
    if (op->n_key > 16 ||
        !tdm__key_decode(key, len, op->col_types, op->n_key, vals)) {
        snprintf(buf, n, "?");
        return;
    }
    for (int k = 0; k < op->n_key && o < n; k++) {
        const tdm__val *v = &vals[k];
        const char *sep = k ? "," : "";
        int w;
        if (v->null)
            w = snprintf(buf + o, n - o, "%snull", sep);
        else if (op->col_types[k] == TDM_TYPE_STRING)
            w = snprintf(buf + o, n - o, "%s%.*s", sep, (int)v->u.s.len,
                         v->u.s.p);
        else if (op->col_types[k] == TDM_TYPE_DOUBLE)
            w = snprintf(buf + o, n - o, "%s%.17g", sep, v->u.d);
        else if (op->col_types[k] == TDM_TYPE_BOOL)
            w = snprintf(buf + o, n - o, "%s%s", sep,
                         v->u.i ? "true" : "false");
        else if (tdm__is_decimal(op->col_types[k]))
            w = snprintf(buf + o, n - o, "%s%s", sep,
                         dec_text(dec, v->u.i, op->col_types[k]));
        else
            w = snprintf(buf + o, n - o, "%s%lld", sep, (long long)v->u.i);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* See rt_ctx.h.  The sink's own words (tdm__sink_vtab.last_error, version
 * 5), in parentheses; nothing when it cannot tell. */
void tdm__rt_sink_why(const tdm__rt_sink *s, tdm__sinkobj *obj, char *buf,
                      size_t n)
{
    char msg[360];
    buf[0] = 0;
    msg[0] = 0;
    if (!obj || s->vt->version < 5 || !s->vt->last_error)
        return;
    s->vt->last_error(obj, msg, sizeof msg);
    if (msg[0])
        snprintf(buf, n, " (%s)", msg);
}
