/* SPDX-License-Identifier: MIT */
/* src_dead.h - a source subtask's dead letters: malformed records the
 * connector reports (its callback, tdm__src_dead_conn_cb) and rows the
 * timestamp guard catches, each counted and handed to the dead letter
 * sink (shared, thread-safe) or, without one, to the log (the first
 * few only: a file of garbage must not flood stderr).
 *
 * State: none of its own beyond the subtask's counters (t->met.m.bad,
 * t->met.m.dead) and the run's shared log budget (run->bad_logged).
 * Used by task_source.c (the scan, the connector's open) only.
 */
#ifndef TDM_RT_SRC_DEAD_H
#define TDM_RT_SRC_DEAD_H

#include "runtime/task_source.h"

/* Counts a malformed record and hands it to the dead letter sink (shared,
 * thread-safe) or the log. */
void tdm__src_dead_letter(tdm__rt_src_task *t, const char *source,
                          const char *location, const char *reason,
                          const char *raw, size_t raw_len, bool malformed);

/* The connector's dead-letter callback. */
void tdm__src_dead_conn_cb(void *ud, const char *location, const char *reason,
                           const char *raw, size_t raw_len);

/* The timestamp above which the connector notes each row's location
 * and raw bytes in this poll's batch (row.h, tdm__src_dead_keep_after): the
 * guard's limit at the previous poll's clock reading.  The limit the scan uses,
 * read after this poll, is no lower, so every row the guard catches was
 * noted; a row between the two limits is noted for nothing, which is
 * rare unless the clock jumped (the first poll notes every row with a
 * timestamp).  Nothing is noted when the guard dead-letters nothing. */
tdm_time_ms tdm__src_dead_keep_after(const tdm__rt_src_task *t);

/* Sends a row caught by the timestamp guard to the dead letter output,
 * with the reason spelled out, located and shown as its source noted it
 * (file:line and the line, topic[p]@offset and the message); a row
 * without a note (a generator's, one read back from a repartition topic,
 * one the source had no memory to note) at its partition and rendered as
 * text. */
void tdm__src_dead_guarded(tdm__rt_src_task *t, const tdm__row *row);

#endif /* TDM_RT_SRC_DEAD_H */
