/* SPDX-License-Identifier: MIT */
/* live.h - live settings: the watermark settings a running job accepts
 * new values for, and the one validated path every change goes through
 * (docs/live-settings.md).
 *
 * Disorder changes with traffic, and a bound chosen at deploy time is
 * wrong an hour later; Flink users poll a configuration service from a
 * custom WatermarkGenerator.  Here a running job takes new values of
 * watermark.max_out_of_orderness, watermark.idle_timeout and
 * watermark.alignment.max_drift per source through three doors - REST
 * (PATCH /jobs/:id/config), `tidemark set` (a client of it) and a
 * watched file (config.watch) - and all three call tdm_job_config_set.
 *
 * The table (tdm__live) belongs to the job's run record: made fresh from
 * the definition when tdm_job_run starts (tdm__live_begin), kept across
 * restarts by restart.strategy, so a restarted attempt plans with the
 * values in force (tdm__live_value).  A change is validated against the
 * definition (which cannot change while the job runs), stored in the
 * source's atomics, and announced by bumping the source's generation; each
 * source subtask compares the generation between polls and applies the
 * new values to its reader (tdm__src_live_apply, R-LV-4), which then
 * reaches every partition.  The watermark never goes back: a split's
 * watermark only rises (reader.c), so a higher bound holds the last
 * watermark until max - bound - 1 passes it (R-LV-5).
 *
 * State: the table's values (atomics, read by source subtasks), and under
 * its lock what each key's last change was and the last changes in order
 * (read by GET /jobs/:id/config and tdm_job_config_get).  Lock order: the
 * run record's metrics lock (mmu, which also guards the job's clock)
 * before the table's; nothing takes mmu while holding the table's.
 * Used by run.c (begin, the watch tick), plan.c (values), task_source.c
 * (apply), metrics.c (the change counter), the REST routes.
 */
#ifndef TDM_RT_LIVE_H
#define TDM_RT_LIVE_H

#include "runtime/rt.h"
#include "runtime/rt_ctx.h"

/* The live keys: a source's, in the order GET lists them, then a
 * window's (windows.<name>.allowed_lateness). */
enum {
    TDM__LIVE_BOUND,
    TDM__LIVE_IDLE,
    TDM__LIVE_DRIFT,
    TDM__LIVE_LATENESS,
    TDM__LIVE_N_
};

/* The live values of one node (one per node; sources use the first
 * three, windows the lateness). */
typedef struct tdm__live_src {
    _Atomic int64_t v[TDM__LIVE_N_];
    _Atomic uint64_t gen; /* bumped after each change (release) */
    /* Windows: the highest lateness in force during the run (the commit
     * horizon, plan.c, only moves out), and whether the subtasks'
     * operators keep slices, not windows (R-LV-2: no lateness change). */
    _Atomic int64_t lat_max;
    _Atomic bool sliced;
} tdm__live_src;

typedef struct tdm__live tdm__live;

/* At the start of tdm_job_run (@p restart false): a fresh table from the
 * definition; at a restart: the table kept.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__live_begin(tdm_job *job, bool restart);
/* Frees the table (NULL is fine). */
void tdm__live_free(tdm__live *lv);

/* The value in force of live key @p k of source node @p n: the table's
 * when there is one, else @p dflt (the definition's). */
int64_t tdm__live_value(const tdm_job *job, const tdm_node *n, int k,
                        int64_t dflt);
/* The live values of source node @p n, or NULL (no table). */
tdm__live_src *tdm__live_of(const tdm_job *job, const tdm_node *n);
/* Changes applied since the run started (metrics). */
int64_t tdm__live_changes(const tdm_job *job);

/* Checkpoints: the values in force as blob "live" of the checkpoint
 * being written to @p st (R-LV-7).  TDM_OK or the store's error. */
struct tdm__ckpt_store;
struct tdm__ckpt_reader;
tdm_err tdm__live_ckpt_put(tdm__run *run, struct tdm__ckpt_store *st);
/* At a fresh start restored from checkpoint @p id (@p rd): its values
 * become the job's (origin "checkpoint"), applied by the sources before
 * their first poll; an attempt after a failure keeps the table it has,
 * which is newer (R-LV-7).  A checkpoint without the blob (older) leaves
 * the values alone.  TDM_OK or TDM_ERR_PARSE with the reason. */
tdm_err tdm__live_ckpt_load(tdm__run *run, struct tdm__ckpt_reader *rd,
                            uint64_t id, char *errbuf, size_t errbuf_size);

/* The watched file (config.watch): read again when config.watch.interval
 * has passed on the job's clock and its contents changed; called by the
 * run thread's supervisor. */
void tdm__live_watch_tick(tdm_job *job);

/* Checks the text of a watched file as tdm__live_watch_tick would,
 * applying nothing: the number of settings, or -1 with the reason (and
 * its line) in @p err (tests/fuzz/fuzz_live.c). */
int tdm__live_file_check(tdm_job *job, const char *text, char *err, size_t n);

/* Between polls: applies a change the subtask has not applied yet to its
 * reader and alignment coordinator (R-LV-4). */
void tdm__src_live_apply(tdm__rt_src_task *t);

/* The window subtask's side (op_live.c): the operator's lateness set to
 * the value in force when the node's generation moved (R-LV-4), the
 * retract memory's cleanup times with it.  Called before each group of
 * items, and once after the restore (force). */
struct tdm__rt_op_task;
void tdm__op_live_apply(struct tdm__rt_op_task *t, bool force);

#endif /* TDM_RT_LIVE_H */
