/* SPDX-License-Identifier: MIT */
/* src_fence.c - the source subtask's key fence: when a version-2
 * split is revoked while running, the keys it read whose results are not
 * settled yet go to the window subtasks owning them in FENCE items, after
 * the rows sent so far, so that its next owner writes their windows.
 *
 * State: t->fence.fk, per split and consumer edge a key set filled per row by
 * the outbox's router (tdm__outbox_track_key) and pruned at each commit.
 * Hooks: on_split_finished (tdm__src_fence_send), after a commit
 * (tdm__src_fence_prune).
 */
#include <string.h>

#include "runtime/outbox.h"
#include "runtime/task_source.h"
#include "runtime/src_fence.h"
#include "runtime/task_op.h"
#include "time/wm.h"

/* Key fence: split @p p was revoked while running.  Its keys with a
 * record whose results are not settled yet go, each to the window
 * subtask that owns it, in a FENCE item after the rows sent so far (so
 * every record of the split is in the operator before its keys are
 * fenced).  Out of memory fails the run. */
void tdm__src_fence_send(tdm__rt_src_task *t, int p)
{
    tdm__rt_source *s = t->src;
    int P = t->run->P;
    tdm__rt_fence **msg = tdm__calloc((size_t)P, sizeof *msg);
    size_t total = 0;
    if (!msg)
        goto nomem;
    tdm__outbox_flush_rows(t);
    for (int e = 0; e < s->n_edges; e++) {
        const tdm__rt_edge *ed = &s->edges[e];
        const tdm__rt_keyset *ks =
            &t->fence.fk[(size_t)p * (size_t)s->n_edges + (size_t)e];
        for (int j = 0; j < P; j++)
            msg[j] = NULL;
        size_t pos = 0, klen;
        const void *kp;
        while (tdm__map_next(ks->map, &pos, &kp, &klen)) {
            uint64_t kh = tdm__map_hash_at(ks->map, pos);
            int j = P > 1
                        ? t->run->owner[tdm__key_group(kh, t->run->key_groups)]
                        : 0;
            if (!msg[j] && !(msg[j] = tdm__calloc(1, sizeof *msg[j])))
                goto nomem;
            tdm__rt_fence *f = msg[j];
            size_t need = f->len + sizeof(uint32_t) + klen;
            if (need > f->cap) {
                size_t cap = f->cap ? 2 * f->cap : 256;
                while (cap < need)
                    cap *= 2;
                char *nd = tdm__realloc(f->data, cap);
                if (!nd)
                    goto nomem;
                f->data = nd;
                f->cap = cap;
            }
            uint32_t len = (uint32_t)klen;
            memcpy(f->data + f->len, &len, sizeof len);
            memcpy(f->data + f->len + sizeof len, kp, klen);
            f->len = need;
            f->n++;
        }
        for (int j = 0; j < P; j++) {
            if (!msg[j])
                continue;
            total += msg[j]->n;
            tdm__item it = {.kind = TDM__ITEM_FENCE,
                            .ch = ed->input * P + t->index,
                            .fence = msg[j]};
            msg[j] = NULL; /* the consumer's now, unless the run aborts */
            tdm__rt_op_task *to =
                tdm__rt_op_tasks(t->run, tdm__rt_op_index(t->run, ed->op));
            if (!tdm__queue_push(&to[j].q, &it))
                tdm__rt_fence_free(it.fence);
        }
    }
    if (total > 0)
        tdm__job_log(t->run->job,
                     "source %s subtask %d: partition %s was "
                     "revoked with %zu key(s) in open windows: fenced (their "
                     "windows are left to its next owner)",
                     s->node->name, t->index,
                     t->met.parts[p].name ? t->met.parts[p].name : "?", total);
    tdm__free(msg);
    return;
nomem:
    for (int j = 0; msg && j < P; j++)
        tdm__rt_fence_free(msg[j]);
    tdm__free(msg);
    tdm__rt_fail(t->run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
                 s->node->name);
}

/* Split @p p finished (reported to the reader): a revoked split's keys
 * are fenced (tdm__src_fence_send), and the split's key sets freed. */
void tdm__src_fence_on_finished(tdm__rt_src_task *t, int p)
{
    if (!t->src->fence || p >= t->fence.fk_cap)
        return;
    if (t->finished[p] && t->src->vt->fenced(t->conn, p))
        tdm__src_fence_send(t, p);
    for (int e = 0; e < t->src->n_edges; e++)
        tdm__rt_keyset_free(
            &t->fence.fk[(size_t)p * (size_t)t->src->n_edges + (size_t)e]);
}

/* After a commit with results settled up to @p done: keys whose records'
 * results are all settled need no fence. */
void tdm__src_fence_prune(tdm__rt_src_task *t, tdm_time_ms done)
{
    for (int i = 0; t->fence.fk && i < t->fence.fk_cap * t->src->n_edges; i++)
        tdm__rt_keyset_prune(&t->fence.fk[i], done);
}

/* Frees every split's key sets (NULL-safe parts). */
void tdm__src_fence_free(tdm__rt_src_task *t)
{
    for (int i = 0; t->fence.fk && i < t->fence.fk_cap * t->src->n_edges; i++)
        tdm__rt_keyset_free(&t->fence.fk[i]);
    tdm__free(t->fence.fk);
    t->fence.fk = NULL;
}

/* See src_fence.h.  Key sets per split and consumer edge, only for a
 * fenced source; new ones empty. */
tdm_err tdm__src_fence_grow(tdm__rt_src_task *t, int old, int cap)
{
    (void)old;
    if (!t->src->fence)
        return TDM_OK;
    size_t ne = (size_t)t->src->n_edges;
    tdm__rt_keyset *fk =
        tdm__realloc(t->fence.fk, (size_t)cap * ne * sizeof *fk);
    if (!fk)
        return TDM_ERR_NOMEM;
    memset(fk + (size_t)t->fence.fk_cap * ne, 0,
           (size_t)(cap - t->fence.fk_cap) * ne * sizeof *fk);
    t->fence.fk = fk;
    t->fence.fk_cap = cap;
    return TDM_OK;
}
