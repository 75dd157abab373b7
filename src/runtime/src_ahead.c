/* SPDX-License-Identifier: MIT */
/* src_ahead.c - the record that ran ahead (src_ahead.h): a record a
 * source subtask let into the watermark far ahead of processing time,
 * kept with its location for the diagnosis.
 *
 * Rules:
 *   R-AH-1  The connector notes rows above the floor: a minute ahead of
 *           the previous poll's clock reading (or of the clock now, at
 *           the first poll), and past the record kept by as much as it
 *           ran ahead when it was read (at least a second).  The scan's
 *           floor, read after the poll, is no lower (the clock does not
 *           go back), so every row the scan keeps was noted.  Outside
 *           event time nothing is.
 *   R-AH-2  A row above the floor and at or below the guard's limit (a
 *           row the guard catches does not move the watermark) is kept,
 *           with its note's location and raw bytes, or rendered when its
 *           source noted nothing (a generator, a repartition topic).
 *   R-AH-3  What is kept is text a JSON answer can carry: the raw bytes
 *           cut at a character's start; bytes that are not text (a
 *           binary message, a line cut mid-sequence by the source) give
 *           way to the row rendered as JSON.
 */
#include <stdio.h>
#include <string.h>

#include "connect/conn.h"
#include "runtime/src_ahead.h"
#include "runtime/task_source.h"

void tdm__src_ahead_init(tdm__rt_src_task *t)
{
    t->ahead.hi = TDM_TIME_MIN;
    t->ahead.lead = TDM__AHEAD_SLACK_MS;
    memset(&t->ahead.pub, 0, sizeof t->ahead.pub);
    t->ahead.pub.ts = TDM_TIME_MIN;
}

/* R-AH-1 */
tdm_time_ms tdm__src_ahead_keep_after(tdm__rt_src_task *t)
{
    if (t->src->conf.time_mode != TDM__TIME_EVENT)
        return TDM_TIME_MAX;
    tdm_time_ms now = t->now ? t->now : tdm_clock_now(t->clk);
    return tdm__src_ahead_look(&t->ahead, now, TDM_TIME_MAX);
}

/* Copies at most @p cap - 1 bytes of @p s (length @p n), cut before a
 * UTF-8 sequence that would not fit, and ends them.  false (dst empty)
 * when they are not text (R-AH-3). */
static bool copy_cut(char *dst, size_t cap, const char *s, size_t n)
{
    char why[64];
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    if (tdm__conn_check_text(s, n, why, sizeof why) != 0) {
        dst[0] = '\0';
        return false;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
    return true;
}

/* R-AH-2 */
void tdm__src_ahead_see(tdm__rt_src_task *t, const tdm__row *row)
{
    if (row->ts <= tdm__src_ahead_look(&t->ahead, t->now, TDM_TIME_MAX))
        return;
    tdm__rt_ahead a = {.ts = row->ts, .at = t->now};
    a.part = tdm__src_metrics_part_global(t, row->partition);
    const tdm__kept *k = tdm__batch_kept(t->cur->b, row);
    if (k)
        copy_cut(a.location, sizeof a.location, k->location,
                 strlen(k->location));
    if (!k || !copy_cut(a.raw, sizeof a.raw, k->raw, k->raw_len))
        tdm__row_render(row, a.raw, sizeof a.raw);
    t->ahead.hi = row->ts;
    t->ahead.lead = tdm__time_sub_sat(row->ts, t->now);
    if (t->ahead.lead < TDM__AHEAD_SLACK_MS)
        t->ahead.lead = TDM__AHEAD_SLACK_MS;
    pthread_mutex_lock(&t->met.mx);
    t->ahead.pub = a;
    pthread_mutex_unlock(&t->met.mx);
}

void tdm__src_ahead_read(tdm__rt_src_task *t, tdm__rt_ahead *out)
{
    pthread_mutex_lock(&t->met.mx);
    *out = t->ahead.pub;
    pthread_mutex_unlock(&t->met.mx);
}
