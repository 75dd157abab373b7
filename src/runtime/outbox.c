/* SPDX-License-Identifier: MIT */
/* outbox.c - a producer subtask's outbox: the consumers' queues it
 * sends to, and how.  Rows routed into the current batch's selection
 * regions (outbox_route.h) go out at a flush as one item per target;
 * control items (watermarks, statuses, barriers, the end) are broadcast
 * to every consumer subtask after the rows that preceded them, with
 * the local aggregates' partial rows in between; lazy pushes are kicked
 * before the producer could keep a consumer waiting.
 *
 * Two kinds of producer use it: a source subtask's thread
 * (task_source.c), and an operator subtask writing a chained operator's
 * output stream through the emitter (tdm__rt_emit_*), set up at init with
 * the derived source's targets.  So an operator thread runs outbox code
 * only, never the source loop.
 *
 * Invariant: on every channel a watermark follows exactly the rows it
 * covers, and a flushed batch region is never written again (consumers
 * read it without locks).
 */
#include "runtime/outbox.h"
#include "runtime/outbox_route.h"
#include "runtime/src_metrics.h"
#include "runtime/task_op.h"

/* ---- Sending ---- */

/* The subtasks of edge @p ed's consumer (the run holds them, rt_ctx.h):
 * target j of the edge is subtask j's queue. */
static tdm__rt_op_task *consumers(const tdm__rt_src_task *t,
                                  const tdm__rt_edge *ed)
{
    return tdm__rt_op_tasks(t->run, tdm__rt_op_index(t->run, ed->op));
}

/* Wakes the consumers of every target that got a lazy push since the
 * last kick (see flush_rows). */
void tdm__outbox_kick(tdm__rt_src_task *t)
{
    tdm__rt_source *s = t->src;
    for (int e = 0; e < s->n_edges; e++) {
        const tdm__rt_edge *ed = &s->edges[e];
        for (int j = 0; j < t->run->P; j++) {
            int tg = ed->target_base + j;
            if (!t->unkicked[tg])
                continue;
            t->unkicked[tg] = 0;
            tdm__queue_kick(&consumers(t, ed)[j].q);
        }
    }
}

/* The pool's hook before the subtask waits for a free batch: consumers
 * left asleep by lazy pushes must run to free one. */
void tdm__outbox_before_pool_wait(void *ud)
{
    tdm__outbox_kick(ud);
}

/* Sends the rows selected since the last flush to each target.
 *
 * Every target (a downstream subtask of one consumer) has its own region
 * of the batch's selection array, filled by route_edge() from sel_sent to
 * sel_n.  A flush hands the unsent part of each region to the target's
 * queue as one item holding one reference on the batch; the region's
 * bytes are never written again until the batch comes back from its
 * pool, so consumers read them without locks.  Targets with nothing new
 * get no item (a key-partitioned batch often skips some subtasks). */
void tdm__outbox_flush_rows(tdm__rt_src_task *t)
{
    tdm__sbatch *sb = t->cur;
    if (!sb)
        return;
    tdm__rt_source *s = t->src;
    size_t cap = t->run->batch_size;
    for (int e = 0; e < s->n_edges; e++) {
        const tdm__rt_edge *ed = &s->edges[e];
        tdm__rt_op_task *to_ts = consumers(t, ed);
        for (int j = 0; j < t->run->P; j++) {
            int tg = ed->target_base + j;
            uint32_t from = sb->sel_sent[tg], to = sb->sel_n[tg];
            if (to == from)
                continue;
            tdm__item it = {.kind = TDM__ITEM_BATCH,
                            .ch = ed->input * t->run->P + t->index,
                            .b = sb,
                            .sel = sb->sel + (size_t)tg * cap + from,
                            .n = to - from};
            /* The reference is taken before the push: the consumer may
             * release it before the push even returns. */
            atomic_fetch_add_explicit(&sb->refs, 1, memory_order_relaxed);
            /* A full poll means more rows follow at once: the push may
             * leave a sleeping consumer asleep for a few items (one
             * wake-up per few batches, not per batch); the subtask kicks
             * before it could keep them waiting. */
            bool ok;
            if (t->lazy) {
                ok = tdm__queue_push_lazy(&to_ts[j].q, &it);
                t->unkicked[tg] = 1;
            } else {
                ok = tdm__queue_push(&to_ts[j].q, &it);
            }
            /* Refused only when the run aborts: give the reference back. */
            if (!ok)
                tdm__sbatch_release(sb);
            sb->sel_sent[tg] = to;
        }
    }
}

/* Sends a control item to every downstream subtask, after the rows.
 *
 * Watermarks and statuses are broadcast: every consumer subtask merges
 * all source subtasks in its valve, so each must hear from each.  The
 * rows that preceded the item in this subtask go first (flush_rows), so
 * on every channel a watermark follows exactly the rows it covers. */
void tdm__outbox_broadcast(tdm__rt_src_task *t, tdm__item_kind kind,
                           tdm_time_ms wm, int idle)
{
    tdm__outbox_flush_rows(t);
    tdm__rt_source *s = t->src;
    /* Two-phase aggregation: the slices this watermark (END: the
     * maximum) closes go out as partial rows after the rows and before
     * the watermark, on the same channels. */
    if (t->la.any && (kind == TDM__ITEM_WATERMARK || kind == TDM__ITEM_END))
        for (int e = 0; e < s->n_edges; e++)
            if (t->la.e[e])
                tdm__rt_lagg_flush(t, t->la.e[e],
                                   kind == TDM__ITEM_END ? TDM_TIME_MAX : wm);
    /* Result latency runs from here: the moment this watermark left. */
    tdm__outbox_push_control(t, kind, wm, idle,
                             kind == TDM__ITEM_STATUS ? 0 : tdm__mono_us());
}

/* Queues a control item on this subtask's channel of every consumer
 * subtask (the rows before it were flushed). */
void tdm__outbox_push_control(tdm__rt_src_task *t, tdm__item_kind kind,
                              tdm_time_ms wm, int idle, int64_t at_us)
{
    tdm__rt_source *s = t->src;
    for (int e = 0; e < s->n_edges; e++) {
        const tdm__rt_edge *ed = &s->edges[e];
        for (int j = 0; j < t->run->P; j++) {
            tdm__item it = {.kind = (uint8_t)kind,
                            .ch = ed->input * t->run->P + t->index,
                            .t = wm,
                            .dt = t->fb ? t->dt_out : wm,
                            .idle = idle,
                            .at_us = at_us};
            tdm__queue_push(&consumers(t, ed)[j].q, &it);
        }
    }
}

/* Key fence: remembers that @p row's key (for consumer edge @p e; the
 * bytes in (key, klen) when @p have, else encoded here) was read from
 * its split, with the highest commit horizon of its records there. */
__attribute__((noinline)) tdm_err tdm__outbox_track_key(tdm__rt_src_task *t,
                                                        const tdm__row *row,
                                                        int e, const char *key,
                                                        size_t klen, bool have)
{
    const tdm__rt_edge *ed = &t->src->edges[e];
    if (!have && tdm__key_encode(row, ed->key_idx, ed->n_key, &t->kb, &key,
                                 &klen) != TDM_OK)
        return TDM_ERR_NOMEM;
    tdm__rt_keyset *ks =
        &t->fence
             .fk[(size_t)row->partition * (size_t)t->src->n_edges + (size_t)e];
    return tdm__rt_keyset_put_max(ks, key, klen, tdm__keys_hash(key, klen),
                                  tdm__rt_edge_horizon(ed, row->ts));
}

/* tdm__outbox_route_edge for every edge of the source (a source read by several
 * consumers), finding each edge's key kind per row. */
__attribute__((noinline)) tdm_err tdm__outbox_route_all(tdm__rt_src_task *t,
                                                        const tdm__row *row,
                                                        uint32_t i, int P,
                                                        bool fence, bool local)
{
    const tdm__rt_source *s = t->src;
    tdm__sbatch *sb = t->cur;
    size_t cap = t->run->batch_size;
    for (int e = 0; e < s->n_edges; e++) {
        const tdm__rt_edge *ed = &s->edges[e];
        int tb = ed->target_base;
        if (tdm__outbox_route_edge(
                t, row, i, e, tdm__outbox_key_kind(row->schema, ed),
                ed->n_key ? ed->key_idx[0] : -1, P, fence,
                sb->sel + (size_t)tb * cap, sb->sel_n + tb, cap,
                local ? t->la.e[e] : NULL, false) != TDM_OK)
            return TDM_ERR_NOMEM;
    }
    return TDM_OK;
}

/* ---- Emitter: an operator's output stream (chaining) ---- */

/* A derived source subtask has no connector, reader or thread: the
 * operator subtask with its index appends result rows to a batch of the
 * output schema and, at a flush, routes them with the same code as a
 * source's polled rows (tdm__outbox_route_all) and queues them
 * (tdm__outbox_flush_rows).  Rows are routed only at the flush, after the last
 * row was added: adding a row may grow the batch's arena and move its strings,
 * which in-place string keys in the selection point to.  A flushed batch is
 * released (the consumers hold it) and never written again: a consumer may be
 * reading it. */
tdm_err tdm__rt_emit_init(tdm__rt_src_task *t)
{
    tdm__run *run = t->run;
    tdm__rt_source *s = t->src;
    tdm__src_metrics_init(t);
    tdm__src_ahead_init(t);
    if (pthread_mutex_init(&t->met.mx, NULL) != 0)
        return TDM_ERR_NOMEM;
    t->met.mx_ok = true;
    tdm_err err =
        tdm__pool_init(&t->pool, s->schema, run->batch_size, s->n_targets,
                       run->qcap + 2, &run->abort, run->job);
    t->pool_ok = err == TDM_OK;
    if (err != TDM_OK)
        return err;
    t->pool.waits = &t->met.m.bp;
    t->unkicked = tdm__calloc(s->n_targets > 0 ? (size_t)s->n_targets : 1, 1);
    return t->unkicked ? TDM_OK : TDM_ERR_NOMEM;
}

void tdm__rt_emit_flush(tdm__rt_src_task *t)
{
    tdm__sbatch *sb = t->cur;
    if (!sb)
        return;
    int P = t->run->P;
    const tdm__batch *b = sb->b;
    for (uint32_t i = t->routed; i < b->n; i++)
        if (tdm__outbox_route_all(t, &b->rows[i], i, P, false, false) !=
            TDM_OK) {
            tdm__rt_fail(t->run, TDM_ERR_NOMEM, "%s \"%s\": out of memory",
                         tdm__node_kind_name(t->src->node->kind),
                         t->src->node->name);
            break;
        }
    t->routed = (uint32_t)b->n;
    tdm__outbox_flush_rows(t);
    tdm__sbatch_release(sb);
    t->cur = NULL;
    t->routed = 0;
}

tdm_err tdm__rt_emit_row(tdm__rt_src_task *t, const tdm__val *vals,
                         tdm_time_ms ts)
{
    const tdm__schema *sc = t->src->schema;
    tdm__row *row = NULL;
    for (int tries = 0; !row && tries < 2; tries++) {
        if (!t->cur) {
            tdm_err err = TDM_OK;
            t->cur = tdm__pool_get(&t->pool, &err);
            if (!t->cur)
                return err != TDM_OK ? err : TDM_ERR_STATE;
            t->routed = 0;
        }
        row = tdm__batch_add(t->cur->b);
        if (!row)
            tdm__rt_emit_flush(t); /* full: send it, take a fresh one */
    }
    if (!row)
        return TDM_ERR_NOMEM;
    row->ts = ts;
    for (int i = 0; i < sc->n; i++) {
        const tdm__val *v = &vals[i];
        if (sc->fields[i].type == TDM_TYPE_STRING && !v->null) {
            if (tdm__batch_set_string(t->cur->b, row, i, v->u.s.p,
                                      v->u.s.len) != TDM_OK) {
                tdm__batch_drop_last(t->cur->b);
                return TDM_ERR_NOMEM;
            }
        } else {
            row->v[i] = *v;
        }
    }
    return TDM_OK;
}

void tdm__rt_emit_control(tdm__rt_src_task *t, tdm__item_kind kind,
                          tdm_time_ms wm, int idle, int64_t at_us)
{
    tdm__rt_emit_flush(t);
    if (kind == TDM__ITEM_WATERMARK) {
        t->wm_out = wm;
        tdm__rt_pub_set(&t->met.m.wm_out, wm);
    } else if (kind == TDM__ITEM_STATUS) {
        t->idle = idle != 0;
        tdm__rt_pub_set(&t->met.m.idle, idle != 0);
    } else if (kind == TDM__ITEM_END) {
        tdm__rt_pub_set(&t->met.m.wm_out, TDM_TIME_MAX);
    }
    tdm__outbox_push_control(t, kind, wm, idle, at_us);
}
