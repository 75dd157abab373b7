/* SPDX-License-Identifier: MIT */
/* run.c - tdm_job_run: turns a validated job into an execution plan
 * (sources with their watermark strategies and routing edges, operators
 * with their output columns, shared sinks), starts one thread per source
 * subtask and per operator subtask, reports progress from the calling
 * thread, and tears everything down once every subtask has finished and
 * every sink is flushed.
 *
 * An operator other operators read (chaining) is planned as a derived
 * source as well - its output schema, edges to its readers - without a
 * thread: its operator subtasks write it (task_source.c, tdm__rt_emit_*).
 *
 * Threads: sources x parallelism + (windows + joins) x parallelism.
 * Failure anywhere (I/O, memory) sets the run's abort flag: producers
 * stop, queues and pools wake their waiters, and the first error is
 * returned.  Cancel is softer: sources stop reading and end their input
 * normally, so the maximum watermark still flushes every window - unless
 * the job stops on cancel (on_cancel stop, or auto with an endless Kafka
 * source): then open windows are left for the next run.
 *
 * Sources whose partitions come and go (connector version 2, Kafka)
 * commit their positions at least once: every commit.interval this
 * thread takes what each source subtask's consumers handled and the
 * operators' watermark, flushes the sinks, and hands the pair to the
 * source threads; the final commit follows the sinks' close.  Watermark
 * alignment groups get one coordinator each, driven by their sources.
 */
#define _GNU_SOURCE /* pthread_setname_np (named threads for top, perf) */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/expr.h"
#include "runtime/ckpt.h"
#include "runtime/job_guard.h"
#include "runtime/live.h"
#include "runtime/metrics.h"
#include "runtime/plan.h"
#include "runtime/rt_ctx.h"
#include "runtime/task_op.h"
#include "runtime/task_source.h"

/* ---- Shared helpers ---- */

/* ---- Subtasks ---- */

/* Minimum over the subtask's consumer channels of what they handled:
 * the channel's watermark is published when the operator takes it, so
 * every row sent before it is in the operator's state by then. */
static tdm_time_ms tdm__rt_src_processed(const tdm__rt_src_task *t)
{
    const tdm__rt_source *s = t->src;
    int P = t->run->P;
    tdm_time_ms m = TDM_TIME_MAX;
    for (int e = 0; e < s->n_edges; e++) {
        const tdm__rt_edge *ed = &s->edges[e];
        int ch = ed->input * P + t->index;
        const tdm__rt_op_task *ots =
            tdm__rt_op_tasks(t->run, tdm__rt_op_index(t->run, ed->op));
        for (int j = 0; j < P; j++) {
            const tdm__rt_op_task *o = &ots[j];
            if (tdm__rt_pub_get(&o->chp[ch].ended))
                continue;
            tdm_time_ms w = atomic_load_explicit(
                (_Atomic int64_t *)&o->chp[ch].wm, memory_order_acquire);
            if (w < m)
                m = w;
        }
    }
    return m;
}

/* ---- Lifecycle ---- */

/* Opens the sinks some node writes to (unused sinks make no file); the
 * mode tells the connector how to write results. */
static tdm_err open_sinks(tdm__run *run, char *errbuf, size_t errbuf_size)
{
    for (int i = 0; i < run->n_sinks; i++) {
        tdm__rt_sink *s = &run->sinks[i];
        if (!s->used)
            continue;
        if (run->ck.on) {
            tdm_err err =
                tdm__rt_ckpt_open_sink(run, s, i, errbuf, errbuf_size);
            if (err != TDM_OK)
                return err;
            continue;
        }
        char msg[256] = "";
        tdm_err err = s->vt->open(&s->conf, s->mode, &s->obj, msg, sizeof msg);
        if (err != TDM_OK) {
            s->obj = NULL;
            return tdm__errf(errbuf, errbuf_size,
                             err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                             "sink \"%s\": %s", s->node->name,
                             msg[0] ? msg : tdm_strerror(err));
        }
    }
    return TDM_OK;
}

/* Closes (flushes) every open sink; the first failure is reported.
 * With checkpoints: every writer's object, after the final checkpoint
 * committed them (abandoned, as a crash leaves them, when the run
 * failed: the next run recovers them). */
static tdm_err close_sinks(tdm__run *run, char *errbuf, size_t errbuf_size,
                           tdm_err err)
{
    for (int i = 0; i < run->n_sinks; i++) {
        tdm__rt_sink *s = &run->sinks[i];
        for (int w = 0; s->wobj && w < s->n_roles * 256; w++) {
            if (!s->wobj[w])
                continue;
            char msg[256] = "";
            tdm_err e = TDM_OK;
            if (err != TDM_OK || run->ck.abandon)
                s->vt->abandon(s->wobj[w]);
            else
                e = s->vt->close(s->wobj[w], msg, sizeof msg);
            s->wobj[w] = NULL;
            if (e != TDM_OK && err == TDM_OK)
                err = tdm__errf(errbuf, errbuf_size,
                                e == TDM_ERR_NOMEM ? e : TDM_ERR_IO,
                                "sink \"%s\": %s", s->node->name,
                                msg[0] ? msg : "closing failed");
        }
        if (s->wobj && err == TDM_OK && !run->ck.abandon &&
            s->vt->version >= 4 && s->vt->finish) {
            char msg[512] = "";
            tdm_err e = s->vt->finish(&s->conf, s->mode, msg, sizeof msg);
            if (e != TDM_OK)
                err = tdm__errf(errbuf, errbuf_size,
                                e == TDM_ERR_NOMEM ? e : TDM_ERR_IO,
                                "sink \"%s\": %s", s->node->name,
                                msg[0] ? msg : tdm_strerror(e));
        }
        tdm__free(s->wobj);
        s->wobj = NULL;
        if (!s->obj)
            continue;
        char msg[256] = "";
        tdm_err e = s->vt->close(s->obj, msg, sizeof msg);
        s->obj = NULL;
        if (e != TDM_OK && err == TDM_OK)
            err = tdm__errf(errbuf, errbuf_size,
                            e == TDM_ERR_NOMEM ? e : TDM_ERR_IO,
                            "sink \"%s\": %s", s->node->name,
                            msg[0] ? msg : "closing failed");
    }
    return err;
}

/* Frees the subtasks of @p n sources (each entry's P, then the array). */
static void free_src_tasks(tdm__run *run, tdm__rt_src_task **tasks, int n)
{
    for (int i = 0; tasks && i < n; i++) {
        for (int j = 0; tasks[i] && j < run->P; j++)
            tdm__rt_source_task_fini(&tasks[i][j]);
        tdm__free(tasks[i]);
        tasks[i] = NULL;
    }
    tdm__free(tasks);
}

/* Frees every subtask (after the threads were joined), in the order the
 * partials pools need: source subtasks (and their local aggregates'
 * pools) before the operator subtasks, which free what they still hold
 * without returning it to a pool. */
static void free_tasks(tdm__run *run)
{
    free_src_tasks(run, run->src_tasks, run->n_srcs);
    run->src_tasks = NULL;
    free_src_tasks(run, run->dsrc_tasks, run->n_dsrcs);
    run->dsrc_tasks = NULL;
    for (int i = 0; run->op_tasks && i < run->n_ops; i++) {
        for (int j = 0; run->op_tasks[i] && j < run->P; j++)
            tdm__rt_op_task_fini(&run->op_tasks[i][j]);
        tdm__free(run->op_tasks[i]);
        run->op_tasks[i] = NULL;
    }
    tdm__free(run->op_tasks);
    run->op_tasks = NULL;
}

/* Frees the subtasks, then the plan. */
static void free_plan(tdm__run *run)
{
    free_tasks(run);
    tdm__plan_free(run);
}

/* Wakes every thread that may wait on a queue or a pool, so that it
 * sees the abort flag now rather than at its next timed wake-up
 * (run->wake_all, called by tdm__rt_fail). */
static void wake_all(tdm__run *run)
{
    for (int o = 0; o < run->n_ops; o++) {
        tdm__rt_op_task *ts = tdm__rt_op_tasks(run, o);
        for (int j = 0; ts && j < run->P; j++)
            tdm__queue_wake(&ts[j].q);
    }
    for (int s = 0; s < run->n_srcs; s++) {
        tdm__rt_src_task *ts = tdm__rt_src_tasks(run, s);
        for (int i = 0; ts && i < run->P; i++)
            if (ts[i].pool_ok)
                tdm__pool_wake(&ts[i].pool);
    }
    /* Operator subtasks waiting for a free batch of their output. */
    for (int s = 0; s < run->n_dsrcs; s++) {
        tdm__rt_src_task *ts = tdm__rt_dsrc_tasks(run, s);
        for (int i = 0; ts && i < run->P; i++)
            if (ts[i].pool_ok)
                tdm__pool_wake(&ts[i].pool);
    }
}

/* The coordinator's announcements: each target subtask (numbered
 * within the group) gets the allowed maximum; its thread applies it at
 * the top of its loop (tdm_reader_announce is the reader's own).  The
 * emit callback of every alignment coordinator (run->align_emit). */
static void align_emit(void *opaque, const tdm_event *ev)
{
    tdm__rt_align *a = opaque;
    tdm__run *run = a->run;
    if (ev->type != TDM_EVENT_ANNOUNCE)
        return;
    for (size_t k = 0; k < ev->n_targets; k++) {
        int g = ev->targets[k];
        for (int i = 0; i < run->n_srcs; i++) {
            tdm__rt_source *s = &run->srcs[i];
            tdm__rt_src_task *ts = tdm__rt_src_tasks(run, i);
            if (s->align != a || !ts || g < s->align_base ||
                g >= s->align_base + run->P)
                continue;
            tdm__src_align_announce(&ts[g - s->align_base], ev->time);
        }
    }
}

/* The sink objects a subtask writes through: the shared ones, or with
 * checkpoints its own writers (role * 256 + subtask). */
static void ck_bind(tdm__run *run, tdm__rt_ck_slot *c, tdm__rt_sink *s0, int r0,
                    tdm__rt_sink *s1, int r1, int k)
{
    tdm__rt_sink *s[2] = {s0, s1};
    int r[2] = {r0, r1};
    for (int j = 0; j < 2; j++) {
        c->sink[j] = s[j];
        c->w[j] = s[j] ? r[j] * 256 + k : -1;
        if (s[j])
            c->obj[j] = run->ck.on ? s[j]->wobj[c->w[j]] : s[j]->obj;
    }
}

/* Creates operator @p o's subtasks (queues, operators). */
static tdm_err make_op_tasks(tdm__run *run, int o)
{
    tdm__rt_op *op = &run->ops[o];
    tdm__rt_op_task *ts = tdm__calloc((size_t)run->P, sizeof *ts);
    run->op_tasks[o] = ts;
    if (!ts)
        return TDM_ERR_NOMEM;
    for (int j = 0; j < run->P; j++) {
        ts[j].run = run;
        ts[j].op = op;
        ts[j].index = j;
        ck_bind(run, &ts[j].ck, op->sink, op->sink_role, op->late,
                op->late_role, j);
        tdm_err err = tdm__rt_op_task_init(&ts[j]);
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* Creates source @p s's subtasks (connectors, readers, pools). */
static tdm_err make_src_tasks(tdm__run *run, int s)
{
    tdm__rt_source *src = &run->srcs[s];
    tdm__rt_src_task *ts = tdm__calloc((size_t)run->P, sizeof *ts);
    run->src_tasks[s] = ts;
    if (!ts)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < run->P; i++) {
        tdm__rt_src_task *t = &ts[i];
        t->run = run;
        t->src = src;
        t->index = i;
        /* The objects it writes rows and dead letters through. */
        ck_bind(run, &t->ck, src->pass, src->pass_role, run->dead,
                src->dead_role, i);
        tdm_err err = tdm__rt_source_task_init(t);
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* Counts the waits of subtask @p i of a source (derived or not) whose
 * subtasks are @p ts on each channel it feeds as its backpressure. */
static void wire_waits(tdm__run *run, const tdm__rt_source *src,
                       tdm__rt_src_task *ts, int i)
{
    for (int e = 0; e < src->n_edges; e++) {
        const tdm__rt_edge *ed = &src->edges[e];
        tdm__rt_op_task *op_ts =
            tdm__rt_op_tasks(run, tdm__rt_op_index(run, ed->op));
        for (int j = 0; j < run->P; j++)
            op_ts[j].q.ch_waits[ed->input * run->P + i] = &ts[i].met.m.bp;
    }
}

/* Output streams of operators read by others: subtask i of derived
 * source @p s is written by op subtask i (no thread of its own). */
static tdm_err make_dsrc_tasks(tdm__run *run, int s)
{
    tdm__rt_source *src = &run->dsrcs[s];
    tdm__rt_src_task *ts = tdm__calloc((size_t)run->P, sizeof *ts);
    run->dsrc_tasks[s] = ts;
    if (!ts)
        return TDM_ERR_NOMEM;
    tdm__rt_op_task *from =
        tdm__rt_op_tasks(run, tdm__rt_op_index(run, src->from));
    for (int i = 0; i < run->P; i++) {
        ts[i].run = run;
        ts[i].src = src;
        ts[i].index = i;
        tdm_err err = tdm__rt_emit_init(&ts[i]);
        if (err != TDM_OK) {
            tdm__rt_fail(run, err, "%s \"%s\": out of memory",
                         tdm__node_kind_name(src->node->kind), src->node->name);
            return err;
        }
        from[i].emit = &ts[i];
    }
    for (int i = 0; i < run->P; i++)
        wire_waits(run, src, ts, i);
    return TDM_OK;
}

/* A source subtask that will never read a row ends its channels now,
 * before any thread runs: downstream valves then never wait for it,
 * whatever the thread timing (each channel's first item, so the push
 * cannot block). */
static void end_empty(tdm__run *run, int s)
{
    tdm__rt_source *src = &run->srcs[s];
    tdm__rt_src_task *ts = tdm__rt_src_tasks(run, s);
    for (int i = 0; i < run->P; i++) {
        if (!ts[i].empty)
            continue;
        /* Its END is its maximum watermark. */
        tdm__rt_pub_set(&ts[i].met.m.wm_out, TDM_TIME_MAX);
        for (int e = 0; e < src->n_edges; e++) {
            const tdm__rt_edge *ed = &src->edges[e];
            tdm__rt_op_task *op_ts =
                tdm__rt_op_tasks(run, tdm__rt_op_index(run, ed->op));
            for (int j = 0; j < run->P; j++) {
                tdm__item it = {.kind = TDM__ITEM_END,
                                .ch = ed->input * run->P + i,
                                .t = TDM_TIME_MAX};
                tdm__queue_push(&op_ts[j].q, &it);
            }
        }
    }
}

/* Creates the subtasks (queues, operators, connectors) of every node,
 * in the run's arrays (rt_ctx.h): operators first, whose queues the
 * sources feed. */
static tdm_err make_tasks(tdm__run *run)
{
    run->op_tasks = tdm__calloc((size_t)run->n_ops + 1, sizeof *run->op_tasks);
    run->src_tasks =
        tdm__calloc((size_t)run->n_srcs + 1, sizeof *run->src_tasks);
    run->dsrc_tasks =
        tdm__calloc((size_t)run->n_dsrcs + 1, sizeof *run->dsrc_tasks);
    if (!run->op_tasks || !run->src_tasks || !run->dsrc_tasks)
        return TDM_ERR_NOMEM;
    tdm_err err = TDM_OK;
    for (int o = 0; err == TDM_OK && o < run->n_ops; o++)
        err = make_op_tasks(run, o);
    for (int s = 0; err == TDM_OK && s < run->n_srcs; s++)
        err = make_src_tasks(run, s);
    for (int s = 0; err == TDM_OK && s < run->n_dsrcs; s++)
        err = make_dsrc_tasks(run, s);
    if (err != TDM_OK)
        return err;
    /* Backpressure per source subtask: its waits on each channel it
     * feeds count for it. */
    for (int s = 0; s < run->n_srcs; s++)
        for (int i = 0; i < run->P; i++)
            wire_waits(run, &run->srcs[s], tdm__rt_src_tasks(run, s), i);
    for (int s = 0; s < run->n_srcs; s++)
        end_empty(run, s);
    return TDM_OK;
}

/* Names subtask thread @p th "NODE/INDEX" (at most 15 bytes: the node
 * name is cut), as top -H, perf and gdb show it.  Best effort. */
static void name_thread(pthread_t th, const char *node, int index)
{
#if defined(__linux__)
    char name[16], tail[12];
    int tl = snprintf(tail, sizeof tail, "/%d", index);
    snprintf(name, sizeof name, "%.*s%s", 15 - tl, node, tail);
    (void)pthread_setname_np(th, name);
#else
    (void)th;
    (void)node;
    (void)index;
#endif
}

/* Operator subtasks start first, so their queues are being drained by
 * the time sources produce. */
static tdm_err start_threads(tdm__run *run)
{
    for (int o = 0; o < run->n_ops; o++)
        for (int j = 0; j < run->P; j++) {
            tdm__rt_op_task *t = &tdm__rt_op_tasks(run, o)[j];
            if (pthread_create(&t->th, NULL, tdm__rt_op_main, t) != 0)
                return TDM_ERR_NOMEM;
            t->started = true;
            run->n_threads++;
            name_thread(t->th, run->ops[o].node->name, j);
        }
    for (int s = 0; s < run->n_srcs; s++)
        for (int i = 0; i < run->P; i++) {
            tdm__rt_src_task *t = &tdm__rt_src_tasks(run, s)[i];
            if (pthread_create(&t->th, NULL, tdm__rt_source_main, t) != 0)
                return TDM_ERR_NOMEM;
            t->started = true;
            run->n_threads++;
            name_thread(t->th, run->srcs[s].node->name, i);
        }
    return TDM_OK;
}

/* Joins every started thread. */
static void join_threads(tdm__run *run)
{
    for (int o = 0; o < run->n_ops; o++) {
        tdm__rt_op_task *ts = tdm__rt_op_tasks(run, o);
        for (int j = 0; ts && j < run->P; j++)
            if (ts[j].started) {
                pthread_join(ts[j].th, NULL);
                ts[j].started = false;
            }
    }
    for (int s = 0; s < run->n_srcs; s++) {
        tdm__rt_src_task *ts = tdm__rt_src_tasks(run, s);
        for (int i = 0; ts && i < run->P; i++)
            if (ts[i].started) {
                pthread_join(ts[i].th, NULL);
                ts[i].started = false;
            }
    }
}

/* The lowest watermark over operator subtasks. */
static void update_watermark(tdm__run *run)
{
    tdm_time_ms wm = TDM_TIME_MAX;
    bool any = false;
    for (int o = 0; o < run->n_ops; o++) {
        tdm__rt_op_task *ts = tdm__rt_op_tasks(run, o);
        for (int j = 0; ts && j < run->P; j++) {
            tdm_time_ms w =
                atomic_load_explicit(&ts[j].wm, memory_order_relaxed);
            if (w < wm)
                wm = w;
            any = true;
        }
    }
    atomic_store(&run->rec->stats[TDM_STAT_WATERMARK], any ? wm : TDM_TIME_MIN);
}

/* Refreshes the watermark counter and calls the progress callback. */
static void progress(tdm__run *run)
{
    tdm_job *job = run->job;
    update_watermark(run);
    if (job->progress)
        job->progress(job->progress_ud, job);
}

/* The lowest published watermark over operator subtasks (acquire:
 * every result fired at or below it was written before), and in *top
 * (may be NULL) the highest: no result of a window with end - 1 above it
 * was written (event-time firing), MIN without operators. */
static tdm_time_ms ops_done(tdm__run *run, tdm_time_ms *top)
{
    tdm_time_ms done = TDM_TIME_MAX, hi = TDM_TIME_MIN;
    for (int o = 0; o < run->n_ops; o++) {
        tdm__rt_op_task *ts = tdm__rt_op_tasks(run, o);
        for (int j = 0; ts && j < run->P; j++) {
            tdm_time_ms w =
                atomic_load_explicit(&ts[j].wm, memory_order_acquire);
            if (w < done)
                done = w;
            if (w > hi)
                hi = w;
        }
    }
    if (top)
        *top = hi;
    return done;
}

/* Flushes every used sink that can (version 2); false when one failed
 * (logged: the commit waits for the next round). */
static bool flush_sinks(tdm__run *run)
{
    for (int i = 0; i < run->n_sinks; i++) {
        tdm__rt_sink *s = &run->sinks[i];
        if (!s->obj || s->vt->version < 2 || !s->vt->flush)
            continue;
        char msg[256] = "";
        if (s->vt->flush(s->obj, msg, sizeof msg) != TDM_OK) {
            /* Said once per failure spell, not every round. */
            if (!run->flush_warned)
                tdm__job_log(run->job,
                             "sink %s: flush failed (%s); "
                             "offsets are not committed until "
                             "a flush succeeds",
                             s->node->name, msg[0] ? msg : "no reason given");
            run->flush_warned = true;
            return false;
        }
    }
    run->flush_warned = false;
    return true;
}

/* One commit round (at-least-once, docs/kafka.md): for every subtask of
 * a committing source, what its consumers handled; then the operators'
 * watermark; then every sink flushed; only then are the pairs handed to
 * the source threads, which call the connector's commit themselves (a
 * connector is single-threaded). */
static void commit_round(tdm__run *run)
{
    for (int i = 0; i < run->n_srcs; i++) {
        tdm__rt_src_task *ts = tdm__rt_src_tasks(run, i);
        if (!run->srcs[i].v2 || !ts)
            continue;
        for (int k = 0; k < run->P; k++)
            tdm__src_v2_set_pending(&ts[k], tdm__rt_src_processed(&ts[k]));
    }
    tdm_time_ms done = ops_done(run, NULL);
    if (!flush_sinks(run))
        return;
    for (int i = 0; i < run->n_srcs; i++) {
        tdm__rt_src_task *ts = tdm__rt_src_tasks(run, i);
        if (!run->srcs[i].v2 || !ts)
            continue;
        for (int k = 0; k < run->P; k++) {
            tdm__src_v2_request_commit(&ts[k], done);
        }
    }
}

/* The final commit, once every thread stopped and the sinks closed
 * (flushed): every mark is processed; the operators' watermark says
 * which records' results were written (TDM_TIME_MAX after a drain).
 * Connectors are closed afterwards (free_plan), leaving their group. */
static void final_commit(tdm__run *run)
{
    tdm_time_ms top;
    tdm_time_ms done = ops_done(run, &top);
    if (run->any_early)
        top = TDM_TIME_MIN;
    for (int i = 0; i < run->n_srcs; i++) {
        tdm__rt_source *s = &run->srcs[i];
        tdm__rt_src_task *ts = tdm__rt_src_tasks(run, i);
        if (!s->v2 || !ts || !s->vt->commit)
            continue;
        for (int k = 0; k < run->P; k++) {
            tdm__rt_src_task *t = &ts[k];
            if (t->conn &&
                s->vt->commit(t->conn, TDM_TIME_MAX, done, top) != TDM_OK)
                tdm__job_log(run->job,
                             "source %s subtask %d: the final "
                             "offset commit failed",
                             s->node->name, k);
        }
    }
}

/* How often the supervisor ticks the sinks (connect.h, tick). */
#define RT_SINK_TICK_MS 100

/* Lets every sink write what waited too long in its buffer (tick). */
static void tick_sinks(tdm__run *run)
{
    for (int i = 0; i < run->n_sinks; i++) {
        tdm__rt_sink *s = &run->sinks[i];
        if (s->obj && s->vt->version >= 2 && s->vt->tick)
            s->vt->tick(s->obj);
        for (int w = 0; s->wobj && w < s->n_roles * 256; w++)
            if (s->wobj[w] && s->vt->tick)
                s->vt->tick(s->wobj[w]);
    }
}

/* Waits for every thread, calling the progress callback every
 * status.interval, ticking the sinks every RT_SINK_TICK_MS and, with a
 * committing source, running a commit round every commit.interval. */
static void supervise(tdm__run *run)
{
    int64_t interval = run->job->spec.status_interval_ms;
    int64_t next_status = tdm__mono_ms() + interval;
    int64_t next_commit = tdm__mono_ms() + run->commit_interval;
    int64_t next_tick = tdm__mono_ms() + RT_SINK_TICK_MS;
    pthread_mutex_lock(&run->mu);
    while (run->n_done < run->n_threads) {
        int64_t next = next_status < next_tick ? next_status : next_tick;
        if (run->any_v2 && next_commit < next)
            next = next_commit;
        if (run->ck.on && !run->ck.pending && run->ck.next_ms < next)
            next = run->ck.next_ms;
        if (run->ck.on && !run->ck.pending && atomic_load(&run->rec->savepoint))
            next = tdm__mono_ms();
        struct timespec at = {.tv_sec = (time_t)(next / 1000),
                              .tv_nsec = (long)(next % 1000) * 1000000};
        int r = 0;
        while (run->n_done < run->n_threads && r == 0 && !run->ck.wake)
            r = pthread_cond_timedwait(&run->cv, &run->mu, &at);
        run->ck.wake = false;
        if (run->n_done >= run->n_threads)
            break;
        pthread_mutex_unlock(&run->mu);
        int64_t now = tdm__mono_ms();
        tdm__rt_ckpt_step(run, false);
        if (run->any_v2 && now >= next_commit) {
            commit_round(run);
            next_commit = now + run->commit_interval;
        }
        if (now >= next_status) {
            progress(run);
            next_status = now + interval;
        }
        if (now >= next_tick) {
            tick_sinks(run);
            tdm__live_watch_tick(run->job);
            next_tick = now + RT_SINK_TICK_MS;
        }
        pthread_mutex_lock(&run->mu);
    }
    pthread_mutex_unlock(&run->mu);
}

/* Whether counter @p i spans a run's restarts: the checkpoint counters,
 * as Flink's checkpoint statistics span a job's restarts. */
static bool spans_restarts(int i)
{
    return (i >= TDM_STAT_CHECKPOINTS && i <= TDM_STAT_CHECKPOINT_ALIGN_MS) ||
           (i >= TDM_STAT_CHECKPOINTS_FAILED_IN_ROW &&
            i <= TDM_STAT_RESTARTS) ||
           i == TDM_STAT_RESTORED_ID;
}

/* Counters start from zero at every run; after a restart (@p restart)
 * only those that do not span restarts. */
static void reset_stats(tdm_job *job, bool restart)
{
    for (int i = 0; i < TDM_STAT_COUNT_; i++)
        if (!restart || !spans_restarts(i))
            atomic_store(&job->rec->stats[i], 0);
    if (!restart) {
        atomic_store(&job->rec->stats[TDM_STAT_CHECKPOINT_ID], -1);
        atomic_store(&job->rec->stats[TDM_STAT_CHECKPOINT_FAILED_ID], -1);
        atomic_store(&job->rec->stats[TDM_STAT_RESTORED_ID], -1);
    }
    atomic_store(&job->rec->stats[TDM_STAT_WATERMARK], TDM_TIME_MIN);
    atomic_store(&job->rec->queue_waits, 0);
    atomic_store(&job->rec->batches_peak, 0);
}

/* Reads the job keys the run needs; key groups are at least the
 * parallelism, so every subtask owns at least one group. */
static tdm_err init_run(tdm__run *run, tdm_job *job)
{
    memset(run, 0, sizeof *run);
    run->job = job;
    run->rec = job->rec;
    run->wake_all = wake_all;
    run->align_emit = align_emit;
    run->P = (int)job->spec.parallelism;
    run->key_groups = (int)job->spec.key_groups;
    run->batch_size = (size_t)job->spec.batch_size;
    run->qcap = (int)job->spec.queue_capacity;
    run->guard = job->spec.timestamp_guard_ms;
    run->guard_dead = job->spec.timestamp_guard_dead_letter;
    run->debug = job->spec.log_level == TDM__LOG_LEVEL_DEBUG;
    if (run->key_groups < run->P)
        run->key_groups = run->P;
    run->owner = tdm__calloc((size_t)run->key_groups, sizeof *run->owner);
    if (!run->owner)
        return TDM_ERR_NOMEM;
    for (int g = 0; g < run->key_groups; g++)
        run->owner[g] = (uint16_t)tdm__key_subtask(g, run->key_groups, run->P);
    atomic_init(&run->abort, 0);
    atomic_init(&run->bad_logged, 0);
    if (pthread_mutex_init(&run->mu, NULL) != 0) {
        tdm__free(run->owner);
        return TDM_ERR_NOMEM;
    }
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int r = pthread_cond_init(&run->cv, &a);
    pthread_condattr_destroy(&a);
    if (r != 0) {
        pthread_mutex_destroy(&run->mu);
        tdm__free(run->owner);
        return TDM_ERR_NOMEM;
    }
    return TDM_OK;
}

/* One attempt: plans, opens (restoring the newest checkpoint), runs the
 * job to its end (or cancel) on worker threads and tears it down. */
static tdm_err run_attempt(tdm_job *job, bool restart, char *errbuf,
                           size_t errbuf_size)
{
    tdm__run *run = tdm__calloc(1, sizeof *run);
    if (!run || init_run(run, job) != TDM_OK) {
        tdm__free(run);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "out of memory starting the job");
    }
    run->restarted = restart;
    reset_stats(job, restart);
    /* Snapshots read the clock under the metrics lock. */
    pthread_mutex_lock(&job->rec->mmu);
    job->clock_base_real = 0;
    atomic_store(&job->rec->start_ms, tdm__job_now(job));
    if (job->rec->lat.b)
        tdm__hist_reset(&job->rec->lat);
    pthread_mutex_unlock(&job->rec->mmu);
    job->rec->run = run;

    tdm_err err = tdm__live_begin(job, restart);
    if (err != TDM_OK)
        tdm__errf(errbuf, errbuf_size, err, "out of memory starting the job");
    if (err == TDM_OK)
        err = tdm__plan_build(run, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm__rt_ckpt_open(run, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = open_sinks(run, errbuf, errbuf_size);
    if (err == TDM_OK) {
        err = make_tasks(run);
        if (err == TDM_OK)
            err = tdm__rt_warea_start(run);
        if (err == TDM_OK)
            err = start_threads(run);
        if (err != TDM_OK)
            tdm__rt_fail(run, err, "%s", "could not start the job's subtasks");
        supervise(run);
        join_threads(run);
        /* The final checkpoint commits the last epoch before the sinks
         * close (docs/checkpoints.md, sink contract). */
        tdm__rt_ckpt_final(run);
        update_watermark(run);
        tdm__rt_metrics_finish(run);
        if (run->err != TDM_OK)
            err = tdm__errf(errbuf, errbuf_size, run->err, "%s", run->errmsg);
    }
    err = close_sinks(run, errbuf, errbuf_size, err);
    tdm__rt_ckpt_close(run);
    if (err == TDM_OK && run->any_v2)
        final_commit(run);
    atomic_store(&job->rec->stats[TDM_STAT_ELAPSED_MS],
                 tdm__job_now(job) - atomic_load(&job->rec->start_ms));
    if (job->progress && err == TDM_OK)
        job->progress(job->progress_ud, job);
    free_plan(run);
    pthread_cond_destroy(&run->cv);
    pthread_mutex_destroy(&run->mu);
    tdm__free(run->owner);
    tdm__free(run);
    job->rec->run = NULL;
    return err;
}

/* Validates and runs the job, again after a failure as restart.strategy
 * says (restart.c). */
tdm_err tdm_job_run(tdm_job *job, char *errbuf, size_t errbuf_size)
{
    if (!job)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "job must not be NULL");
    if (atomic_load(&job->rec->running))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "the job is already running");
    tdm_err err = tdm_job_validate(job, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    if (job->spec.scale_out == TDM__SCALE_OUT_TASKS && job->spec.task_id < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "a job with scale_out: tasks runs through a task "
                         "host (tidemark run does it; tdm_taskhost_run)");
    tdm__rt_restart rs;
    tdm__guard *guard = NULL;
    tdm__rt_restart_init(&rs, job);
    atomic_store(&job->rec->cancel, 0);
    atomic_store(&job->rec->running, 1);
    err = tdm__guard_open(job, &guard, errbuf, errbuf_size);
    if (err == TDM_OK) {
        err = run_attempt(job, false, errbuf, errbuf_size);
        while (tdm__rt_restart_next(&rs, job, err, errbuf, errbuf_size))
            err = run_attempt(job, true, errbuf, errbuf_size);
    }
    tdm_err gerr = tdm__guard_close(guard, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = gerr;
    atomic_store(&job->rec->running, 0);
    return err;
}
