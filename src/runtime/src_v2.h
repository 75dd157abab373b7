/* SPDX-License-Identifier: MIT */
/* src_v2.h - what a version-2 source subtask (Kafka) does besides
 * reading: commits when the run thread asks, replay floors (rows a
 * previous owner already wrote are skipped), splits as the connector
 * assigns and revokes partitions, idleness while it has none, marks of
 * the connector's positions at each watermark, and the watermarks the
 * data itself carries.
 *
 * State: its own struct, tdm__src_v2_state (t->v2): c_seen,
 * commit_warned, floor, any_floor, hzbuf, marked, n_live, forced_idle,
 * reader_idle, replay_*; the commit request (c_proc, c_done, c_req,
 * c_pend) is the run thread's (tdm__src_v2_request_commit).
 * Hooks: between_polls (commit), on_batch (assigned splits, replay
 * floor), after_batch (carried watermarks, idleness), after_tick (mark).
 * Every hook does nothing for a version-1 source.
 */
#ifndef TDM_RT_SRC_V2_H
#define TDM_RT_SRC_V2_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/outbox.h"

/* A version-2 source subtask's own state. */
typedef struct tdm__src_v2_state {
    bool forced_idle;   /* idle because no split is live */
    bool reader_idle;   /* the reader's own last status */
    int n_live;         /* splits neither finished nor revoked */
    tdm_time_ms *floor; /* per split: replay floor (C(ts) <= floor: skip) */
    bool any_floor;     /* some live split has a floor */
    tdm_time_ms *hzbuf; /* per split: horizon handed to mark() */
    tdm_time_ms marked; /* watermark of the last mark() */
    bool replay_logged;
    int64_t replay_skipped;
    /* Commits: the run thread publishes (c_proc, c_done), then bumps
     * c_req (release); the source thread commits when it changed. */
    _Atomic int64_t c_proc, c_done;
    tdm_time_ms c_pend; /* the run thread's own, before the flush */
    atomic_uint c_req;
    unsigned c_seen;
    bool commit_warned;
} tdm__src_v2_state;

/* Initial state: nothing marked, no commit asked for. */
void tdm__src_v2_init(tdm__rt_src_task *t);

/* The run thread asks the subtask to commit: what it had processed when
 * the sinks were flushed (c_pend, set by tdm__src_v2_set_pending), with
 * results settled up to @p done. */
void tdm__src_v2_request_commit(tdm__rt_src_task *t, tdm_time_ms done);

/* The run thread notes @p proc, what the subtask had processed before the
 * flush (the commit it will request). */
void tdm__src_v2_set_pending(tdm__rt_src_task *t, tdm_time_ms proc);

/* The reader's own idle status (each status it emits, and the restored
 * reader's). */
void tdm__src_v2_reader_status(tdm__rt_src_task *t, bool reader_idle);

/* Version 2: splits [from, n_parts) were just assigned.  Each gets the
 * replay floor its previous owner committed (TDM_TIME_MAX, a drained
 * run's, is no floor: that run finished, later records are new input);
 * a subtask idle for want of splits becomes active again at once, so
 * that the new (maybe silent) splits hold its consumers as the seeds
 * describe; a paused reader pauses them too. */
void tdm__src_v2_splits_added(tdm__rt_src_task *t, int from);

/* Hands the connector a mark when the subtask's watermark moved (or
 * @p force): the positions after every row polled so far, and per split
 * the horizon of its highest timestamp.  The connector treats a mark
 * tagged w as handled once every consumer's watermark is above w.  When
 * the last watermark W went out after every polled row (a periodic
 * tick, carried watermarks, the end), consumers that reached W handled
 * them all: the tag is W - 1.  After an on-event watermark rows of the
 * same batch may follow it, so the tag is W itself (handled only at the
 * next watermark). */
void tdm__src_v2_mark(tdm__rt_src_task *t, bool force);

/* Watermarks the data itself carries (a repartition topic's markers),
 * applied after the poll's rows, per live split. */
void tdm__src_v2_carried_watermarks(tdm__rt_src_task *t);

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
void tdm__src_v2_idle_without_splits(tdm__rt_src_task *t);

/* Hook between polls: a commit the run thread asked for (version 2). */
void tdm__src_v2_between_polls(tdm__rt_src_task *t);

/* Hook after a poll, before its rows are scanned (version 2): rows
 * below a replay floor are dropped; what a previous owner may have
 * written is published.  The poll's assigned partitions must be splits
 * already. */
void tdm__src_v2_on_batch(tdm__rt_src_task *t);

/* Hook when split @p p finished: a version-2 split is no longer live. */
void tdm__src_v2_split_finished(tdm__rt_src_task *t, int p);

/* Hook at the end of the subtask's input: logs the replayed records it
 * skipped. */
void tdm__src_v2_on_end(tdm__rt_src_task *t);

/* Grows this component's per-split arrays from @p old to @p cap entries
 * (the new ones initialised); TDM_OK or TDM_ERR_NOMEM, the arrays then
 * still valid at their old size (src_parts.c's reserve). */
tdm_err tdm__src_v2_grow(tdm__rt_src_task *t, int old, int cap);
/* Frees the replay floors and horizons (NULL-safe). */
void tdm__src_v2_free(tdm__rt_src_task *t);

#endif /* TDM_RT_SRC_V2_H */
