/* SPDX-License-Identifier: MIT */
/* src_lagg.c - a source subtask's local aggregates (two-phase
 * aggregation, localagg.h): one per consumer edge that allows it, made
 * when the subtask opens, flushed after a batch that did not fill,
 * logged (debug) and freed at the end.
 *
 * Invariant: t->la.any exactly when some edge has a local aggregate.
 * State: t->la (tdm__src_lagg_state), its own.
 * Used by task_source.c (its hooks), outbox.c and outbox_route.h (the
 * folds and the flushes before a watermark).
 */
#include "runtime/localagg.h"
#include "runtime/src_lagg.h"
#include "runtime/task_source.h"

/* A local aggregate per eligible edge. */
tdm_err tdm__src_lagg_open(tdm__rt_src_task *t)
{
    tdm__rt_source *s = t->src;
    tdm_err err = TDM_OK;
    for (int e = 0; err == TDM_OK && e < s->n_edges; e++) {
        if (!s->edges[e].local)
            continue;
        if (!t->la.e) {
            t->la.e = tdm__calloc((size_t)s->n_edges, sizeof *t->la.e);
            if (!t->la.e)
                return TDM_ERR_NOMEM;
        }
        err = tdm__rt_lagg_new(t, e, &t->la.e[e]);
        t->la.any = err == TDM_OK;
    }
    return err;
}

/* After a batch that did not fill: every open slice's partials out. */
void tdm__src_lagg_flush(tdm__rt_src_task *t)
{
    for (int e = 0; !t->lazy && t->la.any && e < t->src->n_edges; e++)
        if (t->la.e[e])
            tdm__rt_lagg_flush(t, t->la.e[e], TDM_TIME_MAX);
}

/* The debug line of each edge's local aggregate, at the end. */
void tdm__src_lagg_log(tdm__rt_src_task *t)
{
    for (int e = 0; t->run->debug && t->la.e && e < t->src->n_edges; e++)
        if (t->la.e[e])
            tdm__job_log(
                t->run->job,
                "debug local_aggregation vertex=%s "
                "subtask=%d window=%s folded=%lld "
                "partials=%lld%s",
                t->src->node->name, t->index, t->src->edges[e].op->node->name,
                (long long)t->la.e[e]->folded, (long long)t->la.e[e]->sent,
                !t->la.e[e]->count       ? ""
                : t->la.e[e]->cs_scatter ? " count_slots=scatter"
                                         : " count_slots=direct");
}

/* Frees every edge's local aggregate. */
void tdm__src_lagg_free(tdm__rt_src_task *t)
{
    for (int e = 0; t->la.e && e < t->src->n_edges; e++)
        tdm__rt_lagg_free(t->la.e[e]);
    tdm__free(t->la.e);
    t->la.e = NULL;
    t->la.any = false;
}
