/* SPDX-License-Identifier: MIT */
/* src_v2.c - what a version-2 source subtask (Kafka) does besides
 * reading: commits when the run thread asks, replay floors (rows a
 * previous owner already wrote are skipped), splits as the connector
 * assigns and revokes partitions, idleness while it has none, marks of
 * the connector's positions at each watermark, and the watermarks the
 * data itself carries.
 *
 * State: t->v2.c_seen, t->v2.commit_warned, t->v2.floor, t->v2.any_floor,
 * t->v2.hzbuf, t->v2.marked, t->v2.n_live, t->v2.forced_idle, t->replay_*; the
 * commit request (t->v2.c_proc, t->v2.c_done, t->v2.c_req) is the run thread's.
 * Hooks: between_polls (commit), on_batch (assigned splits, replay
 * floor), after_batch (carried watermarks, idleness), after_tick (mark).
 * Every hook does nothing for a version-1 source.
 */

#include "runtime/task_source.h"
#include "runtime/src_v2.h"
#include "runtime/outbox.h"
#include "runtime/src_align.h"
#include "runtime/src_fence.h"
#include "time/wm.h"

/* How long a subtask without splits keeps holding its consumers after
 * a sibling got splits: the members of one group get their shares of a
 * rebalance within a poll or two of each other. */
#define SPLITLESS_GRACE_MS 1000

/* Version 2: splits [from, n_parts) were just assigned.  Each gets the
 * replay floor its previous owner committed (TDM_TIME_MAX, a drained
 * run's, is no floor: that run finished, later records are new input);
 * a subtask idle for want of splits becomes active again at once, so
 * that the new (maybe silent) splits hold its consumers as the seeds
 * describe; a paused reader pauses them too. */
void tdm__src_v2_splits_added(tdm__rt_src_task *t, int from)
{
    const tdm__source_vtab *vt = t->src->vt;
    for (int p = from; p < t->n_parts; p++) {
        tdm_time_ms f = vt->partition_floor ? vt->partition_floor(t->conn, p)
                                            : TDM_TIME_MIN;
        t->v2.floor[p] = f == TDM_TIME_MAX ? TDM_TIME_MIN : f;
        if (t->v2.floor[p] != TDM_TIME_MIN)
            t->v2.any_floor = true;
        t->v2.n_live++;
    }
    /* The first split of any subtask of the source starts the others'
     * grace (tdm__src_v2_idle_without_splits). */
    tdm_time_ms now = tdm_clock_now(t->clk);
    tdm_time_ms first = atomic_load(&t->src->first_live);
    while (now < first &&
           !atomic_compare_exchange_weak(&t->src->first_live, &first, now))
        ;
    /* (A reader idle by its own account stays so: it says ACTIVE with
     * its next watermark.) */
    if (t->v2.forced_idle) {
        t->v2.forced_idle = false;
        if (!t->v2.reader_idle) {
            t->idle = false;
            t->sweep = true;
            tdm__outbox_broadcast(t, TDM__ITEM_STATUS, 0, 0);
        }
    }
    tdm__src_align_apply_pauses(t);
}

/* Drops the rows of the current batch whose partition has a replay
 * floor and whose horizon is at or below it: their previous owner
 * already wrote every window they belong to (or would have dropped them
 * as late).  Runs before the hot loop and only while a split has a
 * floor; kept rows are moved down by swapping row slots (each slot
 * keeps its own value array). */
static void drop_replayed(tdm__rt_src_task *t)
{
    tdm__batch *b = t->cur->b;
    size_t k = 0;
    int64_t skipped = 0;
    for (size_t i = 0; i < b->n; i++) {
        const tdm__row *row = &b->rows[i];
        tdm_time_ms f = t->v2.floor[row->partition];
        if (f != TDM_TIME_MIN && row->ts != TDM_TIME_MIN &&
            tdm__rt_horizon_of(t->src, row->ts) <= f) {
            skipped++;
            continue;
        }
        if (k != i) {
            tdm__row tmp = b->rows[k];
            b->rows[k] = b->rows[i];
            b->rows[i] = tmp;
        }
        k++;
    }
    b->n = k;
    if (!skipped)
        return;
    t->v2.replay_skipped += skipped;
    if (!t->v2.replay_logged) {
        t->v2.replay_logged = true;
        tdm__job_log(t->run->job,
                     "source %s subtask %d: skipping records whose results "
                     "the partition's previous owner already wrote (replay "
                     "floor)",
                     t->src->node->name, t->index);
    }
}

/* Hands the connector a mark when the subtask's watermark moved (or
 * @p force): the positions after every row polled so far, and per split
 * the horizon of its highest timestamp.  The connector treats a mark
 * tagged w as handled once every consumer's watermark is above w.  When
 * the last watermark W went out after every polled row (a periodic
 * tick, carried watermarks, the end), consumers that reached W handled
 * them all: the tag is W - 1.  After an on-event watermark rows of the
 * same batch may follow it, so the tag is W itself (handled only at the
 * next watermark). */
void tdm__src_v2_mark(tdm__rt_src_task *t, bool force)
{
    const tdm__source_vtab *vt = t->src->vt;
    if (!t->src->v2 || !vt->mark || (!force && t->wm_out == t->v2.marked))
        return;
    for (int p = 0; p < t->n_parts; p++)
        t->v2.hzbuf[p] = tdm__rt_horizon_of(t->src, t->met.hot[p].hi);
    tdm_time_ms tag = t->wm_out;
    if (t->wm_after_rows && tag != TDM_TIME_MIN)
        tag--;
    vt->mark(t->conn, tag, t->v2.hzbuf, t->n_parts);
    t->v2.marked = t->wm_out;
}

/* Raises  bound to at least  v (several source threads). */
static void atomic_max(_Atomic int64_t *bound, int64_t v)
{
    int64_t cur = atomic_load_explicit(bound, memory_order_relaxed);
    while (v > cur &&
           !atomic_compare_exchange_weak_explicit(
               bound, &cur, v, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* Publishes what the connector says a previous owner may have written
 * (connect.h, replayed) before this poll's rows are pushed. */
static void note_replayed(tdm__rt_src_task *t)
{
    tdm_time_ms start_le = TDM_TIME_MIN, last_le = TDM_TIME_MIN;
    t->src->vt->replayed(t->conn, &start_le, &last_le);
    atomic_max(&t->src->replay_start, start_le);
    atomic_max(&t->src->replay_last, last_le);
}

/* Commits when the run thread published a new (processed, done) pair
 * (acquire: the pair is as new as the request). */
static void maybe_commit(tdm__rt_src_task *t)
{
    const tdm__source_vtab *vt = t->src->vt;
    unsigned req = atomic_load_explicit(&t->v2.c_req, memory_order_acquire);
    if (req == t->v2.c_seen || !vt->commit)
        return;
    t->v2.c_seen = req;
    tdm_time_ms proc =
        atomic_load_explicit(&t->v2.c_proc, memory_order_relaxed);
    tdm_time_ms done =
        atomic_load_explicit(&t->v2.c_done, memory_order_relaxed);
    if (vt->commit(t->conn, proc, done, TDM_TIME_MIN) != TDM_OK &&
        !t->v2.commit_warned) {
        t->v2.commit_warned = true;
        tdm__job_log(t->run->job,
                     "source %s subtask %d: an offset commit "
                     "failed; the next one will retry",
                     t->src->node->name, t->index);
    }
    /* Keys whose records' results are all settled need no fence. */
    tdm__src_fence_prune(t, done);
}

/* Watermarks the data itself carries (a repartition topic's markers),
 * applied after the poll's rows, per live split. */
void tdm__src_v2_carried_watermarks(tdm__rt_src_task *t)
{
    const tdm__source_vtab *vt = t->src->vt;
    for (int p = 0; p < t->n_parts; p++) {
        tdm_time_ms wm;
        int idle;
        if (t->reported[p] || !vt->partition_watermark(t->conn, p, &wm, &idle))
            continue;
        if (idle) {
            tdm_reader_split_status(t->reader, p, 1);
            continue;
        }
        if (tdm_reader_split_is_idle(t->reader, p) == 1)
            tdm_reader_split_status(t->reader, p, 0);
        if (wm != TDM_TIME_MIN)
            tdm_reader_split_watermark(t->reader, p, wm);
    }
}

/* Version 2: a subtask without a live split says it is idle (once), so
 * that its channels do not hold every consumer at TDM_TIME_MIN while it
 * has nothing to read.  Not at once while its siblings (the other
 * subtasks of the source, other members of the same group) are being
 * assigned: the first to get partitions would run ahead and every
 * record of a sibling assigned a moment later would be late.  So a
 * subtask with siblings waits until one of them has had splits for
 * SPLITLESS_GRACE_MS; one without siblings is idle at once.  A Kafka
 * subtask that stops at the end and never had a split is never idle
 * for want of them: it ends (eof) once its first assignment, maybe
 * empty, is in, and until then it may still be given partitions in a
 * later rebalance round, whose records a sibling that already ended
 * would otherwise have made late. */
void tdm__src_v2_idle_without_splits(tdm__rt_src_task *t)
{
    if (t->v2.n_live > 0 || t->v2.forced_idle)
        return;
    if (t->src->conf.type == TDM__SRC_KAFKA && t->src->conf.kafka_stop_at_end &&
        t->n_parts == 0)
        return;
    if (t->run->P > 1) {
        tdm_time_ms first =
            atomic_load_explicit(&t->src->first_live, memory_order_relaxed);
        if (first == TDM_TIME_MAX ||
            t->now < tdm__time_add_sat(first, SPLITLESS_GRACE_MS))
            return;
    }
    t->v2.forced_idle = true;
    if (!t->idle) {
        t->idle = true;
        t->sweep = true;
        tdm__outbox_broadcast(t, TDM__ITEM_STATUS, 0, 1);
    }
}

/* Hook between polls: a commit the run thread asked for (version 2). */
void tdm__src_v2_between_polls(tdm__rt_src_task *t)
{
    if (t->src->v2)
        maybe_commit(t);
}

/* Hook after a poll, before its rows are scanned (version 2; the
 * partitions assigned in this poll are splits by then, tdm__src_parts_ensure):
 * rows below a replay floor are dropped; what a previous owner may have
 * written is published. */
void tdm__src_v2_on_batch(tdm__rt_src_task *t)
{
    const tdm__source_vtab *vt = t->src->vt;
    if (!t->src->v2)
        return;
    if (t->v2.any_floor && t->cur->b->n &&
        t->src->conf.time_mode == TDM__TIME_EVENT)
        drop_replayed(t);
    if (vt->replayed && t->src->conf.time_mode == TDM__TIME_EVENT)
        note_replayed(t);
}

/* Hook at the end of the subtask's input: logs the replayed records it
 * skipped. */
void tdm__src_v2_on_end(tdm__rt_src_task *t)
{
    if (t->v2.replay_skipped)
        tdm__job_log(t->run->job,
                     "source %s subtask %d: %lld replayed "
                     "records skipped",
                     t->src->node->name, t->index,
                     (long long)t->v2.replay_skipped);
}

/* Initial state: nothing marked, no commit asked for. */
void tdm__src_v2_init(tdm__rt_src_task *t)
{
    t->v2.marked = TDM_TIME_MIN;
    atomic_init(&t->v2.c_proc, TDM_TIME_MIN);
    atomic_init(&t->v2.c_done, TDM_TIME_MIN);
    atomic_init(&t->v2.c_req, 0);
}

/* The run thread notes what the subtask had processed before the
 * flush. */
void tdm__src_v2_set_pending(tdm__rt_src_task *t, tdm_time_ms proc)
{
    t->v2.c_pend = proc;
}

/* The run thread asks for a commit: (c_pend, done), then c_req bumped
 * (release). */
void tdm__src_v2_request_commit(tdm__rt_src_task *t, tdm_time_ms done)
{
    atomic_store_explicit(&t->v2.c_proc, t->v2.c_pend, memory_order_relaxed);
    atomic_store_explicit(&t->v2.c_done, done, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->v2.c_req, 1, memory_order_release);
}

/* The reader's own idle status. */
void tdm__src_v2_reader_status(tdm__rt_src_task *t, bool reader_idle)
{
    t->v2.reader_idle = reader_idle;
}

/* Hook when a split finished: a version-2 split is no longer live. */
void tdm__src_v2_split_finished(tdm__rt_src_task *t, int p)
{
    (void)p;
    if (t->src->v2)
        t->v2.n_live--;
}

/* See src_v2.h.  A new split has no replay floor. */
tdm_err tdm__src_v2_grow(tdm__rt_src_task *t, int old, int cap)
{
    tdm_time_ms *fl = tdm__realloc(t->v2.floor, (size_t)cap * sizeof *fl);
    if (!fl)
        return TDM_ERR_NOMEM;
    t->v2.floor = fl;
    for (int p = old; p < cap; p++)
        fl[p] = TDM_TIME_MIN;
    tdm_time_ms *hz = tdm__realloc(t->v2.hzbuf, (size_t)cap * sizeof *hz);
    if (!hz)
        return TDM_ERR_NOMEM;
    t->v2.hzbuf = hz;
    return TDM_OK;
}

/* See src_v2.h. */
void tdm__src_v2_free(tdm__rt_src_task *t)
{
    tdm__free(t->v2.floor);
    tdm__free(t->v2.hzbuf);
    t->v2.floor = NULL;
    t->v2.hzbuf = NULL;
}
