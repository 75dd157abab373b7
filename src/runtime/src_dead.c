/* SPDX-License-Identifier: MIT */
/* src_dead.c - a source subtask's dead letters: malformed records the
 * connector reports (its callback, tdm__src_dead_conn_cb) and rows the
 * timestamp guard catches, each counted and handed to the dead letter
 * sink (shared, thread-safe) or, without one, to the log (the first
 * few only: a file of garbage must not flood stderr).
 *
 * State: none of its own beyond the subtask's counters (t->met.m.bad,
 * t->met.m.dead) and the run's shared log budget (run->bad_logged).
 * Used by task_source.c (the scan, the connector's open) only.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/ckpt.h"
#include "runtime/outbox.h"
#include "runtime/task_source.h"
#include "runtime/src_dead.h"
#include "time/wm.h"

/* Without a dead letter sink, malformed records are reported on the log,
 * but only the first few: a file of garbage must not flood stderr. */
#define MAX_LOGGED_BAD 10

/* Counts a malformed record and hands it to the dead letter sink (shared,
 * thread-safe) or the log. */
void tdm__src_dead_letter(tdm__rt_src_task *t, const char *source,
                          const char *location, const char *reason,
                          const char *raw, size_t raw_len, bool malformed)
{
    tdm__run *run = t->run;
    if (malformed)
        tdm__rt_count(run, TDM_STAT_BAD_RECORDS, 1);
    if (run->dead) {
        tdm_err err = run->dead->vt->write_dead(t->ck.obj[1], location, reason,
                                                raw, raw_len);
        if (err != TDM_OK) {
            char why[400];
            tdm__rt_sink_why(run->dead, t->ck.obj[1], why, sizeof why);
            tdm__rt_fail(
                run, TDM_ERR_IO,
                "sink \"%s\": writing a dead letter "
                "to %s failed%s",
                run->dead->node->name,
                *run->dead->conf.path ? run->dead->conf.path : "stdout", why);
        }
        return;
    }
    int n = atomic_fetch_add(&run->bad_logged, 1);
    if (n < MAX_LOGGED_BAD)
        tdm__job_log(run->job, "source %s: bad record at %s: %s", source,
                     location, reason);
    else if (n == MAX_LOGGED_BAD)
        tdm__job_log(run->job, "further bad records are counted, not "
                               "shown (set dead_letter to keep them)");
}

/* The connector's dead-letter callback. */
void tdm__src_dead_conn_cb(void *ud, const char *location, const char *reason,
                           const char *raw, size_t raw_len)
{
    tdm__rt_src_task *t = ud;
    tdm__rt_pub_add(&t->met.m.bad, 1);
    if (t->run->dead)
        tdm__rt_pub_add(&t->met.m.dead, 1);
    tdm__src_dead_letter(t, t->src->node->name, location, reason, raw, raw_len,
                         true);
}

/* The timestamp above which the connector notes each row's location
 * and raw bytes in this poll's batch (row.h, tdm__src_dead_keep_after): the
 * guard's limit at the previous poll's clock reading.  The limit the scan uses,
 * read after this poll, is no lower, so every row the guard catches was
 * noted; a row between the two limits is noted for nothing, which is
 * rare unless the clock jumped (the first poll notes every row with a
 * timestamp).  Nothing is noted when the guard dead-letters nothing. */
tdm_time_ms tdm__src_dead_keep_after(const tdm__rt_src_task *t)
{
    if (!t->run->guard_dead || t->run->guard <= 0 ||
        t->src->conf.time_mode != TDM__TIME_EVENT)
        return TDM_TIME_MAX;
    return t->now ? tdm__time_add_sat(t->now, t->run->guard) : TDM_TIME_MIN;
}

/* Sends a row caught by the timestamp guard to the dead letter output,
 * with the reason spelled out, located and shown as its source noted it
 * (file:line and the line, topic[p]@offset and the message); a row
 * without a note (a generator's, one read back from a repartition topic,
 * one the source had no memory to note) at its partition and rendered as
 * text. */
void tdm__src_dead_guarded(tdm__rt_src_task *t, const tdm__row *row)
{
    char loc[160], reason[256], raw[1024], iso[48], span[32], lim[32];
    tdm__format_iso(row->ts, iso, sizeof iso);
    tdm__conf_format_duration(row->ts - t->now, span, sizeof span);
    tdm__conf_format_duration(t->run->guard, lim, sizeof lim);
    snprintf(reason, sizeof reason,
             "timestamp %s is %s ahead of processing time (timestamp_guard "
             "%s)",
             iso, span, lim);
    if (t->run->dead)
        tdm__rt_pub_add(&t->met.m.dead, 1);
    /* Counted as a guard hit by the caller, not as malformed. */
    const tdm__kept *k = tdm__batch_kept(t->cur->b, row);
    if (k) {
        tdm__src_dead_letter(t, t->src->node->name, k->location, reason, k->raw,
                             k->raw_len, false);
        return;
    }
    snprintf(loc, sizeof loc, "%s partition %u", t->src->node->name,
             row->partition);
    tdm__row_render(row, raw, sizeof raw);
    tdm__src_dead_letter(t, t->src->node->name, loc, reason, raw, strlen(raw),
                         false);
}
