/* SPDX-License-Identifier: MIT */
/* ckpt.h - the checkpoint coordinator and what surrounds it: taking and
 * completing checkpoints, restoring from one (ckpt.c), the lineage of a
 * fresh start (ckpt_lineage.c), failed checkpoints and restarts
 * (restart.c).
 *
 * The coordinator runs on the run thread (tdm__rt_ckpt_step); the subtasks
 * acknowledge barriers into their tdm__rt_ck_slot (rt_ctx.h) under run->mu.
 * Design: docs/checkpoints.md, "In the runtime".
 */
#ifndef TDM_RT_CKPT_H
#define TDM_RT_CKPT_H

#include "runtime/plan.h"
#include "runtime/rt_ctx.h"

/* ---- Checkpoints (ckpt.c; docs/checkpoints.md "In the runtime") ---- */

/* Opens checkpoint.dir and, unless checkpoint.restore is none, loads the
 * newest valid checkpoint (checking the job's shape) for the subtasks
 * and sinks to restore from.  Before open_sinks and make_tasks.  TDM_OK
 * (checkpointing off: nothing done), TDM_ERR_IO, TDM_ERR_PARSE,
 * TDM_ERR_STATE (directory locked, another job's checkpoint). */
tdm_err tdm__rt_ckpt_open(tdm__run *run, char *errbuf, size_t errbuf_size);
/* Opens the per-writer sink objects of sink @p s and recovers each from
 * the restored checkpoint (or from scratch). */
tdm_err tdm__rt_ckpt_open_sink(tdm__run *run, tdm__rt_sink *s, int si,
                               char *errbuf, size_t errbuf_size);
/* Restores source subtask @p t's connector and reader (after open). */
tdm_err tdm__rt_ckpt_restore_source(tdm__rt_src_task *t, char *msg, size_t n);
/* Source subtask side, between polls: acknowledges barrier @p id with
 * its blob and sink sections (takes ownership of the buffers). */
void tdm__rt_ckpt_ack(tdm__run *run, tdm__rt_ck_slot *c, uint64_t id,
                      uint8_t *blob, size_t len, bool final);
/* Frees a slot's buffers. */
void tdm__rt_ckpt_slot_free(tdm__rt_ck_slot *c);
/* pre_commit of slot @p c's sink objects at @p id into c->sk (the
 * subtask's thread, or the run thread once it ended).  False: the run
 * failed. */
bool tdm__rt_ckpt_pre_commit(tdm__run *run, tdm__rt_ck_slot *c, uint64_t id);
/* commit(@p id) on slot @p c's sink objects (failures logged: retried
 * by the next checkpoint's commit). */
void tdm__rt_ckpt_commit(tdm__run *run, tdm__rt_ck_slot *c, uint64_t id);
/* Restores operator subtask @p t's state (after its operator exists;
 * task_op_ckpt.c). */
tdm_err tdm__rt_ckpt_restore_op(tdm__rt_op_task *t, char *msg, size_t n);
/* Supervisor side: starts a checkpoint when due, completes one every
 * subtask acknowledged.  @p at_end: threads all stopped. */
void tdm__rt_ckpt_step(tdm__run *run, bool at_end);
/* The final checkpoint at a clean end (every subtask stopped), then
 * sink commits; before the sinks close. */
void tdm__rt_ckpt_final(tdm__run *run);
/* Closes the store, frees restore data. */
void tdm__rt_ckpt_close(tdm__run *run);
/* ---- Lineages: a fresh start and the output it replaces
 * (ckpt_lineage.c) ---- */

/* A fresh start; @p newest: the newest valid checkpoint (0: none),
 * whose lineage's move aside the fresh start finishes first. */
tdm_err tdm__rt_lineage_begin(tdm__run *run, uint64_t newest, char *errbuf,
                              size_t errbuf_size);
/* At a restore (ck->rd open): the restored checkpoint's lineage. */
tdm_err tdm__rt_lineage_load(tdm__run *run, char *errbuf, size_t errbuf_size);
/* A checkpoint @p id started: the first of a fresh lineage is its id. */
void tdm__rt_lineage_started(tdm__run *run, uint64_t id);
/* Writes the lineage blob into the checkpoint being written. */
tdm_err tdm__rt_lineage_put(tdm__run *run);
/* Sink @p s before its writers open (a restore finishes the move aside)
 * and after (the run's ids go above every id its output names). */
tdm_err tdm__rt_lineage_sink_before(tdm__run *run, const tdm__rt_sink *s,
                                    char *errbuf, size_t errbuf_size);
tdm_err tdm__rt_lineage_sink_after(tdm__run *run, const tdm__rt_sink *s,
                                   char *errbuf, size_t errbuf_size);
/* A checkpoint is durable, before the sinks commit: a fresh lineage moves
 * the old output aside.  False: that failed and the run failed. */
bool tdm__rt_lineage_durable(tdm__run *run);

/* ---- Failed checkpoints and restarts (restart.c) ---- */

/* Counts checkpoint @p id's outcome (@p why: its failure, NULL when it
 * completed) and fails the run when the failures in a row exceed
 * checkpoint.tolerable_failed, or when the final one failed.  The run
 * thread, at the end of every checkpoint. */
void tdm__rt_ckpt_outcome(tdm__run *run, uint64_t id, const char *why);

/* Reads the job's restart.* keys. */
void tdm__rt_restart_init(tdm__rt_restart *rs, const tdm_job *job);
/* After a failed attempt (@p err, message in @p errbuf): whether to run
 * again.  When so, logs the restart, counts it and waits the back-off
 * (false if cancelled meanwhile); when not, and restarts were made,
 * says so in @p errbuf. */
bool tdm__rt_restart_next(tdm__rt_restart *rs, tdm_job *job, tdm_err err,
                          char *errbuf, size_t errbuf_size);
/* Blob name of a source subtask / a sink writer. */
void tdm__rt_ckpt_src_name(int si, int k, char *buf, size_t n);

#endif /* TDM_RT_CKPT_H */
