/* SPDX-License-Identifier: MIT */
/* src_align.c - a source subtask's share of watermark alignment: the
 * reader's alignment events (reports to the group's coordinator, pauses
 * and resumes of splits or of the whole reader), the pauses applied at a
 * version-2 connector, the coordinator's announcements applied between
 * polls, and the paused iteration of a version-1 source (which pauses by
 * not polling).
 *
 * State: t->align.ann_seen, t->align.reading_paused, t->ppaused (per split);
 * the announcement (t->align.ann_max, t->align.ann_seq) is written by the run
 * thread. Hooks: between_polls (tdm__src_align_step).
 */
#include <string.h>
#include <time.h>

#include "runtime/outbox.h"
#include "runtime/task_source.h"
#include "runtime/src_align.h"
#include "runtime/src_metrics.h"
#include "time/wm.h"

/* Makes the connector's pause state of every live split what alignment
 * wants: paused when the reader paused the split, or (version 2) the
 * whole reader.  Version-1 sources pause by not polling (the loop), so
 * only version 2 with a pause member gets calls.  Each change is a
 * debug log line. */
void tdm__src_align_apply_pauses(tdm__rt_src_task *t)
{
    const tdm__source_vtab *vt = t->src->vt;
    if (!t->src->v2 || !vt->pause)
        return;
    for (int p = 0; p < t->n_parts; p++) {
        if (t->reported[p])
            continue;
        uint8_t want = t->align.reading_paused ||
                       tdm_reader_split_is_paused(t->reader, p) == 1;
        if (want == t->align.ppaused[p])
            continue;
        t->align.ppaused[p] = want;
        vt->pause(t->conn, p, want);
        if (t->run->debug)
            tdm__job_log(t->run->job,
                         "debug pause vertex=%s subtask=%d partition=%s "
                         "paused=%d",
                         t->src->node->name, t->index,
                         t->met.parts[p].name ? t->met.parts[p].name : "?",
                         want);
    }
}

/* The reader's alignment events: its report goes to the group's
 * coordinator (under the group's lock: every source thread of the group
 * calls it); pauses and resumes of splits or of the whole reader reach
 * the connector through apply_pauses. */
void tdm__src_align_event(tdm__rt_src_task *t, const tdm_event *ev)
{
    tdm__rt_align *a = t->src->align;
    switch (ev->type) {
    case TDM_EVENT_REPORTED:
        if (a) {
            pthread_mutex_lock(&a->mu);
            tdm_align_coord_report(a->coord, t->src->align_base + t->index,
                                   ev->time);
            pthread_mutex_unlock(&a->mu);
        }
        break;
    case TDM_EVENT_READING_PAUSED:
    case TDM_EVENT_READING_RESUMED:
        t->align.reading_paused = ev->type == TDM_EVENT_READING_PAUSED;
        if (!t->src->v2 && t->run->debug)
            tdm__job_log(t->run->job,
                         "debug pause vertex=%s subtask=%d partition=* "
                         "paused=%d",
                         t->src->node->name, t->index, t->align.reading_paused);
        tdm__src_align_apply_pauses(t);
        break;
    case TDM_EVENT_SPLIT_PAUSED:
    case TDM_EVENT_SPLIT_RESUMED:
        tdm__src_align_apply_pauses(t);
        break;
    default:
        break;
    }
}

/* Alignment, at the top of each iteration: drive the group's
 * coordinator (any thread of the group may: the announcement is due by
 * the clock) and apply the latest announcement to this reader. */
void tdm__src_align_step(tdm__rt_src_task *t)
{
    tdm__rt_align *a = t->src->align;
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    tdm_align_coord_advance(a->coord);
    pthread_mutex_unlock(&a->mu);
    unsigned seq =
        atomic_load_explicit(&t->align.ann_seq, memory_order_acquire);
    if (seq != t->align.ann_seen) {
        t->align.ann_seen = seq;
        tdm_reader_announce(
            t->reader,
            atomic_load_explicit(&t->align.ann_max, memory_order_relaxed));
    }
}

/* A version-1 source paused by alignment reads nothing: the iteration
 * only ticks the reader (reports, idleness) and waits 20 ms. */
void tdm__src_align_paused_tick(tdm__rt_src_task *t)
{
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    t->now = tdm_clock_now(t->clk);
    tdm_reader_advance(t->reader);
    tdm__src_metrics_publish(t, false);
}

/* Initial state: no announcement yet, nothing paused. */
void tdm__src_align_init(tdm__rt_src_task *t)
{
    atomic_init(&t->align.ann_max, TDM_TIME_MAX);
    atomic_init(&t->align.ann_seq, 0);
}

/* The group's coordinator announces @p max (any thread of the group). */
void tdm__src_align_announce(tdm__rt_src_task *t, int64_t max)
{
    atomic_store_explicit(&t->align.ann_max, max, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->align.ann_seq, 1, memory_order_release);
}

/* Restore: the restored reader's pause. */
void tdm__src_align_restored(tdm__rt_src_task *t, bool paused)
{
    t->align.reading_paused = paused;
}

/* Whether alignment holds a version-1 source (the paused tick ran). */
bool tdm__src_align_hold(tdm__rt_src_task *t)
{
    if (t->src->v2 || !t->align.reading_paused)
        return false;
    tdm__src_align_paused_tick(t);
    return true;
}

/* See src_align.h.  A new split is not paused. */
tdm_err tdm__src_align_grow(tdm__rt_src_task *t, int old, int cap)
{
    uint8_t *pz = tdm__realloc(t->align.ppaused, (size_t)cap);
    if (!pz)
        return TDM_ERR_NOMEM;
    memset(pz + old, 0, (size_t)(cap - old));
    t->align.ppaused = pz;
    return TDM_OK;
}

/* See src_align.h. */
void tdm__src_align_free(tdm__rt_src_task *t)
{
    tdm__free(t->align.ppaused);
    t->align.ppaused = NULL;
}
