/* SPDX-License-Identifier: MIT */
/* src_v2.h - what a version-2 source subtask (Kafka) does besides
 * reading: commits when the run thread asks, replay floors (rows a
 * previous owner already wrote are skipped), splits as the connector
 * assigns and revokes partitions, idleness while it has none, marks of
 * the connector's positions at each watermark, and the watermarks the
 * data itself carries.
 *
 * State: t->c_seen, t->commit_warned, t->floor, t->any_floor, t->hzbuf,
 * t->marked, t->n_live, t->forced_idle, t->replay_*; the commit request
 * (t->c_proc, t->c_done, t->c_req) is the run thread's.
 * Hooks: between_polls (commit), on_batch (assigned splits, replay
 * floor), after_batch (carried watermarks, idleness), after_tick (mark).
 * Every hook does nothing for a version-1 source.
 */
#ifndef TDM_RT_SRC_V2_H
#define TDM_RT_SRC_V2_H

#include "runtime/task_source.h"

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

/* Hook at the end of the subtask's input: logs the replayed records it
 * skipped. */
void tdm__src_v2_on_end(tdm__rt_src_task *t);

#endif /* TDM_RT_SRC_V2_H */
