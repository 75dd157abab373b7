/* SPDX-License-Identifier: MIT */
/* src_ahead.h - the record that ran ahead: a source subtask remembers the
 * furthest-ahead record it let into the watermark, where it came from
 * (file:line, topic[partition]@offset) and what it said, so that the
 * diagnosis of a watermark ahead of processing time (WATERMARK_AHEAD,
 * docs/diagnosis.md) can name it.
 *
 * Why the scan must do it.  A partition's watermark runs ahead of the
 * clocks because one record did: a producer's clock minutes fast, a
 * timestamp in the wrong unit that slipped under timestamp_guard.  By
 * the time anyone asks, the record is long gone downstream and the text
 * source's line buffer has moved on; only its timestamp survives, as the
 * partition's maximum.  Its location must be kept when it is read.
 *
 * How, at no cost to the common row.  The connector already notes the
 * location and raw bytes of every row above the batch's keep_after
 * (row.h), for the timestamp guard's dead letters.  This component
 * lowers keep_after to its own floor (tdm__src_ahead_keep_after): a
 * minute ahead of processing time, and past the record kept so far by
 * as much as it ran ahead (R-AH-1, below).  The scan already compares each
 * row's timestamp with the guard's limit; it compares it with the lower
 * of that limit and this floor instead (tdm__src_ahead_look), so the
 * common row still pays one comparison; a row above the floor and below
 * the limit is remembered as the batch's furthest, and after the scan
 * tdm__src_ahead_see keeps it (R-AH-2).  The loop calls nothing for it:
 * an opaque call in the scan loop, even one never taken, cost NEXMark-W
 * 2.6 % more instructions (the compiler then assumes memory changes).
 *
 * A new record replaces the kept one only when it runs at least twice
 * as far ahead of processing time (R-AH-1).  That bounds the cost when
 * a whole partition runs ahead - a producer's clock minutes fast, a
 * replay of future-dated data - where each row beats the last maximum
 * and would otherwise be copied: a few records are kept over a run, not
 * one per row.  The record kept then is the first that ran that far
 * ahead; the diagnosis shows the partition's highest timestamp beside
 * it.  Once processing time catches up with the kept record, the next
 * record more than a minute ahead replaces it.
 *
 * State: its own struct, tdm__src_ahead_state (t->ahead): the floor's
 * maximum (the subtask thread's own) and the published record, which
 * snapshots copy under t->met.mx (tdm__src_ahead_read).
 * Hooks: before each poll (keep_after), per row above the floor (see).
 * Used by task_source.c (the scan, the poll) and metrics.c (snapshots).
 */
#ifndef TDM_RT_SRC_AHEAD_H
#define TDM_RT_SRC_AHEAD_H

#include "core/core.h"
#include "runtime/outbox.h"
#include "runtime/row.h"

/* How far ahead of processing time a record must be to be kept: the
 * diagnosis's threshold for a watermark ahead (diagnose.c). */
#define TDM__AHEAD_MS 60000
/* The least a record must be past the kept one to replace it. */
#define TDM__AHEAD_SLACK_MS 1000

/* The record kept, as published.  ts TDM_TIME_MIN: none yet. */
typedef struct tdm__rt_ahead {
    tdm_time_ms ts;     /* its timestamp */
    tdm_time_ms at;     /* processing time it was read */
    int part;           /* its partition, source-wide */
    char location[160]; /* "" when its source does not say */
    char raw[256];      /* the raw record (cut), or the row rendered */
} tdm__rt_ahead;

/* The component's state. */
typedef struct tdm__src_ahead_state {
    tdm_time_ms hi;   /* timestamp of the record kept (TDM_TIME_MIN) */
    tdm_time_ms lead; /* how far it ran ahead when read (at least
                         TDM__AHEAD_SLACK_MS) */
    tdm__rt_ahead pub;
} tdm__src_ahead_state;

/* Sets the state to "nothing kept". */
void tdm__src_ahead_init(tdm__rt_src_task *t);

/* The timestamp above which the connector notes rows for this component
 * in the coming poll (R-AH-1); TDM_TIME_MAX outside event time. */
tdm_time_ms tdm__src_ahead_keep_after(tdm__rt_src_task *t);

/* The timestamp above which the scan calls tdm__src_ahead_see or the
 * guard: the lower of the guard's @p limit and this component's floor,
 * a minute ahead of @p now and past the kept record by as much as it
 * ran ahead when it was read (at least TDM__AHEAD_SLACK_MS). */
static inline tdm_time_ms tdm__src_ahead_look(const tdm__src_ahead_state *a,
                                              tdm_time_ms now,
                                              tdm_time_ms limit)
{
    tdm_time_ms floor = tdm__time_add_sat(now, TDM__AHEAD_MS);
    if (a->hi != TDM_TIME_MIN) {
        tdm_time_ms past = tdm__time_add_sat(a->hi, a->lead);
        if (past > floor)
            floor = past;
    }
    return floor < limit ? floor : limit;
}

/* Keeps @p row, the furthest-ahead row of the batch just scanned that
 * lies above the floor the scan read and at or below the guard's limit,
 * and publishes it (R-AH-2).  Called once per batch with such a row. */
void tdm__src_ahead_see(tdm__rt_src_task *t, const tdm__row *row);

/* Copies the published record of @p t (safe from any thread). */
void tdm__src_ahead_read(tdm__rt_src_task *t, tdm__rt_ahead *out);

#endif /* TDM_RT_SRC_AHEAD_H */
