/* SPDX-License-Identifier: MIT */
/* view.c - a sorted view of one metrics snapshot, and the partition
 * holding the job's watermark back.
 *
 * A snapshot lists values one by one; the view gathers every value of
 * one (scope, vertex, subtask, index) into a unit, sorts the units so
 * that a subtask's, a channel's or a partition's values are found side
 * by side (binary search, contiguous runs), and joins the job graph's
 * vertices into connected parts (an operator joins its inputs), so that
 * sources that share no operator never hold each other back.
 *
 * Invariant: the view only reads its snapshot (borrowed) and, when it has
 * a job, that job's configuration; it never changes either.  The culprit
 * is the lowest active partition whose next lowest partition in the same
 * part of the job is strictly higher.  Readers: history.c (a culprit per
 * sample), rest.c and prom.c (tdm__find_culprit), diagnose.c (the rules)
 * and explain.c (one window); the rules are in docs/diagnosis.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "server/view.h"

/* ====================================================================== */
/* A sorted view of a snapshot                                             */
/* ====================================================================== */

static int scope_of(tdm_metric id)
{
    const char *s = tdm_metric_scope(id);
    if (!s)
        return TDM__VIEW_JOB;
    if (strcmp(s, "VERTEX") == 0)
        return TDM__VIEW_VERTEX;
    if (strcmp(s, "INPUT") == 0)
        return TDM__VIEW_INPUT;
    if (strcmp(s, "CHANNEL") == 0)
        return TDM__VIEW_CHANNEL;
    if (strcmp(s, "PARTITION") == 0)
        return TDM__VIEW_PARTITION;
    return TDM__VIEW_JOB;
}

/* strcmp with NULL sorted first (view.h). */
int tdm__view_strcmp(const char *a, const char *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    return strcmp(a, b);
}

static int cmp_key(int sa, const char *va, int ta, int ia, int sb,
                   const char *vb, int tb, int ib)
{
    int c;
    if (sa != sb)
        return sa < sb ? -1 : 1;
    if ((c = tdm__view_strcmp(va, vb)) != 0)
        return c;
    if (ta != tb)
        return ta < tb ? -1 : 1;
    if (ia != ib)
        return ia < ib ? -1 : 1;
    return 0;
}

/* Sort entries: a value with its scope looked up once. */
typedef struct view_entry {
    int scope;
    const tdm_metric_value *mv;
} view_entry;

static int cmp_entry(const void *pa, const void *pb)
{
    const view_entry *a = pa, *b = pb;
    return cmp_key(a->scope, a->mv->vertex, a->mv->subtask, a->mv->index,
                   b->scope, b->mv->vertex, b->mv->subtask, b->mv->index);
}

void tdm__view_free(tdm__view *w)
{
    tdm__free(w->u);
    tdm__free(w->group);
    tdm__free(w->gs);
    memset(w, 0, sizeof *w);
}

/* Index of vertex @p name in the snapshot, -1 if absent. */
static int vertex_index(const tdm__view *w, const char *name)
{
    for (size_t i = 0; name && i < w->n_vertices; i++)
        if (strcmp(tdm_metrics_vertex(w->m, i)->name, name) == 0)
            return (int)i;
    return -1;
}

static int uf_find(int *g, int i)
{
    while (g[i] != i) {
        g[i] = g[g[i]];
        i = g[i];
    }
    return i;
}

static void group_stats(tdm__view *w);

/* Marks the partitions of backpressured source subtasks (R-VW-2): a
 * reader blocked by its consumers reads nothing, so its partitions look
 * silent while their producers may be sending. */
static void mark_held(tdm__view *w)
{
    for (size_t i = 0; i < w->n; i++) {
        tdm__view_unit *u = &w->u[i];
        if (u->scope != TDM__VIEW_PARTITION)
            continue;
        const tdm__view_unit *s =
            tdm__view_find(w, TDM__VIEW_VERTEX, u->vertex, u->subtask, -1);
        u->held = tdm__view_val(s, TDM_METRIC_BP_RATE, 0) >= TDM__VIEW_HELD_MS;
    }
}

/* Builds the view of @p m: units sorted by (scope, vertex, subtask,
 * index) so that every value of a subtask, channel or partition is
 * found side by side (binary search, contiguous runs), and the
 * connected components of the job graph (sources joined
 * through the operators reading them).  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__view_build(tdm__view *w, tdm_job *job, const tdm_metrics *m)
{
    int scopes[TDM_METRIC_COUNT_];
    size_t count = tdm_metrics_count(m), k = 0;
    view_entry *e = NULL;

    memset(w, 0, sizeof *w);
    w->job = job;
    w->m = m;
    w->now = tdm_metrics_time(m);
    w->running = tdm_metrics_running(m);
    w->n_vertices = tdm_metrics_vertex_count(m);
    for (int i = 0; i < TDM_METRIC_COUNT_; i++)
        scopes[i] = scope_of((tdm_metric)i);
    e = tdm__calloc(count + 1, sizeof *e);
    w->u = tdm__calloc(count + 1, sizeof *w->u);
    w->group = tdm__calloc(w->n_vertices + 1, sizeof *w->group);
    w->gs = tdm__calloc(w->n_vertices + 1, sizeof *w->gs);
    if (!e || !w->u || !w->group || !w->gs)
        goto fail;
    for (size_t i = 0; i < count; i++) {
        const tdm_metric_value *mv = tdm_metrics_at(m, i);
        if (!mv || (int)mv->id < 0 || mv->id >= TDM_METRIC_COUNT_ ||
            scopes[mv->id] == TDM__VIEW_JOB)
            continue;
        e[k].scope = scopes[mv->id];
        e[k].mv = mv;
        k++;
    }
    qsort(e, k, sizeof *e, cmp_entry);
    /* Equal keys are adjacent now: one unit per run of them. */
    for (size_t i = 0; i < k; i++) {
        const tdm_metric_value *mv = e[i].mv;
        tdm__view_unit *u = w->n ? &w->u[w->n - 1] : NULL;
        if (!u || cmp_key(u->scope, u->vertex, u->subtask, u->index, e[i].scope,
                          mv->vertex, mv->subtask, mv->index) != 0) {
            u = &w->u[w->n++];
            u->scope = e[i].scope;
            u->vertex = mv->vertex;
            u->subtask = mv->subtask;
            u->index = mv->index;
        }
        if (mv->label)
            u->label = mv->label;
        u->has[mv->id / 64] |= (uint64_t)1 << (mv->id % 64);
        u->v[mv->id] = mv->value;
    }
    /* Union-find over vertices: an operator joins its inputs. */
    for (size_t i = 0; i < w->n_vertices; i++)
        w->group[i] = (int)i;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(m, i);
        for (int j = 0; j < vi->n_inputs; j++) {
            int o = vertex_index(w, vi->inputs[j]);
            if (o >= 0)
                w->group[uf_find(w->group, o)] = uf_find(w->group, (int)i);
        }
    }
    for (size_t i = 0; i < w->n_vertices; i++)
        w->group[i] = uf_find(w->group, (int)i);
    /* Units are sorted by vertex: one lookup per run of a vertex. */
    for (size_t i = 0; i < w->n; i++) {
        tdm__view_unit *u = &w->u[i];
        if (i > 0 && tdm__view_strcmp(u->vertex, u[-1].vertex) == 0) {
            u->group = u[-1].group;
        } else {
            int vi = vertex_index(w, u->vertex);
            u->group = vi < 0 ? -1 : w->group[vi];
        }
    }
    mark_held(w);
    group_stats(w);
    tdm__free(e);
    return TDM_OK;
fail:
    tdm__free(e);
    tdm__view_free(w);
    return TDM_ERR_NOMEM;
}

/* The start of a run (view.h): binary search over the sorted units. */
size_t tdm__view_lower_bound(const tdm__view *w, int scope, const char *vertex,
                             int subtask, int index)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const tdm__view_unit *u = &w->u[mid];
        if (cmp_key(u->scope, u->vertex, u->subtask, u->index, scope, vertex,
                    subtask, index) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The unit of (scope, vertex, subtask, index), by binary search. */
const tdm__view_unit *tdm__view_find(const tdm__view *w, int scope,
                                     const char *vertex, int subtask, int index)
{
    size_t i = tdm__view_lower_bound(w, scope, vertex, subtask, index);
    const tdm__view_unit *u = i < w->n ? &w->u[i] : NULL;
    if (u && cmp_key(u->scope, u->vertex, u->subtask, u->index, scope, vertex,
                     subtask, index) == 0)
        return u;
    return NULL;
}

/* Sum, minimum or maximum of a VERTEX metric over the subtasks of
 * @p vertex (all vertices when NULL).  *found receives how many subtasks
 * had the value.  The sum saturates. */
int64_t tdm__view_agg(const tdm__view *w, const char *vertex, tdm_metric id,
                      tdm_metric_agg how, int *found)
{
    int64_t r = how == TDM_METRIC_AGG_MIN   ? INT64_MAX
                : how == TDM_METRIC_AGG_MAX ? INT64_MIN
                                            : 0;
    int n = 0;
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (u->scope != TDM__VIEW_VERTEX || !tdm__view_has(u, id) ||
            (vertex && tdm__view_strcmp(u->vertex, vertex) != 0))
            continue;
        n++;
        if (how == TDM_METRIC_AGG_SUM)
            r = tdm__time_add_sat(r, u->v[id]);
        else if (how == TDM_METRIC_AGG_MIN ? u->v[id] < r : u->v[id] > r)
            r = u->v[id];
    }
    if (found)
        *found = n;
    return n ? r : 0;
}

/* The node of the job named @p name, NULL without a job. */
tdm_node *tdm__view_node(const tdm__view *w, const char *name)
{
    return w->job && name ? tdm_job_node(w->job, name) : NULL;
}

/* 1 when vertex @p vi lists @p input among its inputs. */
int tdm__view_reads(const tdm_vertex_info *vi, const char *input)
{
    for (int j = 0; vi && j < vi->n_inputs; j++)
        if (strcmp(vi->inputs[j], input) == 0)
            return 1;
    return 0;
}

/* ====================================================================== */
/* What the configuration says                                             */
/* ====================================================================== */

/* The period at which windows of operator @p n end: a tumbling window's
 * size, a sliding window's slide, a cumulate window's step, a session's
 * gap; 0 when none (global windows, interval joins). */
int64_t tdm__view_window_period(tdm_node *n)
{
    switch (tdm_node_window_kind(n)) {
    case TDM_WINDOW_KIND_TUMBLING:
        return tdm_node_get_int(n, "window.size");
    case TDM_WINDOW_KIND_SLIDING:
        return tdm_node_get_int(n, "window.slide");
    case TDM_WINDOW_KIND_CUMULATE:
        return tdm_node_get_int(n, "window.step");
    case TDM_WINDOW_KIND_SESSION:
        return tdm_node_get_int(n, "window.gap");
    default:
        return 0;
    }
}

/* How far a partition of source @p src must be behind the next one to
 * hold a window back: the shortest period of the windows reading it
 * (1 s when none of them has one). */
int64_t tdm__view_hold_threshold(const tdm__view *w, const char *src)
{
    int64_t best = 0;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (!tdm__view_reads(vi, src))
            continue;
        int64_t p = tdm__view_window_period(tdm__view_node(w, vi->name));
        if (p > 0 && (best == 0 || p < best))
            best = p;
    }
    return best > 0 ? best : 1000;
}

/* Live key @p key of @p job as it stands (GET /jobs/:id/config's
 * value), or @p dflt when the job has no such live key. */
int64_t tdm__job_live_value(tdm_job *job, const char *key, int64_t dflt)
{
    tdm_live_setting ls;
    size_t k = tdm_job_config_count(job);
    for (size_t i = 0; i < k; i++)
        if (tdm_job_config_get(job, i, &ls) == TDM_OK &&
            strcmp(ls.key, key) == 0)
            return ls.value_ms;
    return dflt;
}

/* A watermark setting of source @p src as it stands: the live value
 * when one was set on the running job (docs/live-settings.md), else the
 * job file's; 0 without a job to ask. */
int64_t tdm__view_source_setting(const tdm__view *w, const char *src,
                                 const char *setting)
{
    char key[192];
    tdm_node *n = tdm__view_node(w, src);
    if (!n)
        return 0;
    snprintf(key, sizeof key, "sources.%s.%s", src, setting);
    return tdm__job_live_value(w->job, key, tdm_node_get_int(n, setting));
}

/* A source's idle timeout (0: none, or no job to ask). */
int64_t tdm__view_idle_timeout(const tdm__view *w, const char *src)
{
    return tdm__view_source_setting(w, src, "watermark.idle_timeout");
}

/* ====================================================================== */
/* The culprit                                                             */
/* ====================================================================== */

/* An active partition (view.h). */
int tdm__view_part_active(const tdm__view_unit *u)
{
    return u->scope == TDM__VIEW_PARTITION &&
           tdm__view_has(u, TDM_METRIC_P_WM) &&
           !tdm__view_val(u, TDM_METRIC_P_IDLE, 0) &&
           !tdm__view_val(u, TDM_METRIC_P_FINISHED, 0);
}

/* Keeps in @p top the two units with the smallest key (@p sign 1) or
 * largest (@p sign -1) value of metric @p id, first seen first on ties. */
static void top2(const tdm__view_unit **top, const tdm__view_unit *u,
                 tdm_metric id, int sign)
{
    int64_t x = u->v[id];
    if (!top[0] || (sign > 0 ? x < top[0]->v[id] : x > top[0]->v[id])) {
        top[1] = top[0];
        top[0] = u;
    } else if (!top[1] || (sign > 0 ? x < top[1]->v[id] : x > top[1]->v[id])) {
        top[1] = u;
    }
}

/* Fills w->gs: per connected part, the extremes of its active
 * partitions. */
static void group_stats(tdm__view *w)
{
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (!tdm__view_part_active(u) || u->group < 0)
            continue;
        tdm__view_gstat *g = &w->gs[u->group];
        g->n++;
        top2(g->lo, u, TDM_METRIC_P_WM, 1);
        top2(g->hi, u, TDM_METRIC_P_WM, -1);
        if (tdm__view_has(u, TDM_METRIC_P_LAST_AGE))
            top2(g->fresh, u, TDM_METRIC_P_LAST_AGE, 1);
    }
}

/* The other active partitions of @p u's part of the job (view.h). */
tdm__view_others tdm__view_others_of(const tdm__view *w,
                                     const tdm__view_unit *u)
{
    tdm__view_others r = {0, NULL, NULL, -1};
    if (u->group < 0)
        return r;
    const tdm__view_gstat *g = &w->gs[u->group];
    const tdm__view_unit *f = g->fresh[0] == u ? g->fresh[1] : g->fresh[0];
    r.n = g->n - (tdm__view_part_active(u) ? 1 : 0);
    r.lo = g->lo[0] == u ? g->lo[1] : g->lo[0];
    r.hi = g->hi[0] == u ? g->hi[1] : g->hi[0];
    r.fresh_age = f ? f->v[TDM_METRIC_P_LAST_AGE] : -1;
    return r;
}

/* The lowest active partition of the job and the next lowest active
 * partition of the same connected part of the graph (sources that share
 * no operator do not hold each other back).  Among partitions tied at
 * the lowest watermark, the first with a strictly higher next one. */
void tdm__view_culprit_find(const tdm__view *w, tdm__view_culprit *c)
{
    tdm_time_ms low = TDM_TIME_MAX;
    int any = 0;
    memset(c, 0, sizeof *c);
    c->pub.last_record_age_ms = -1;
    c->other_age_ms = -1;
    for (size_t i = 0; i < w->n; i++)
        if (tdm__view_part_active(&w->u[i])) {
            any = 1;
            if (w->u[i].v[TDM_METRIC_P_WM] < low)
                low = w->u[i].v[TDM_METRIC_P_WM];
        }
    if (!any || low == TDM_TIME_MAX)
        return;
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (!tdm__view_part_active(u) || u->v[TDM_METRIC_P_WM] != low)
            continue;
        tdm__view_others o = tdm__view_others_of(w, u);
        const tdm__view_unit *next = o.lo;
        if (!next || next->v[TDM_METRIC_P_WM] <= low)
            continue;
        c->unit = u;
        c->next = next;
        c->other_age_ms = o.fresh_age;
        c->pub.found = 1;
        c->pub.vertex = u->vertex;
        c->pub.subtask = u->subtask;
        c->pub.partition = u->index;
        c->pub.name = u->label;
        c->pub.watermark = low;
        c->pub.next = next->v[TDM_METRIC_P_WM];
        /* No watermark at all is not a distance: -1 says "unknown". */
        c->pub.behind_ms =
            low == TDM_TIME_MIN ? -1 : tdm__time_sub_sat(c->pub.next, low);
        c->pub.last_record_age_ms = tdm__view_val(u, TDM_METRIC_P_LAST_AGE, -1);
        return;
    }
}

/* Finds the culprit in a snapshot (server.h).  A snapshot that cannot be
 * indexed (no memory) has none. */
void tdm__find_culprit(const tdm_metrics *m, tdm__culprit *out)
{
    tdm__view w;
    tdm__view_culprit c;
    memset(out, 0, sizeof *out);
    out->last_record_age_ms = -1;
    if (!m || tdm__view_build(&w, NULL, m) != TDM_OK)
        return;
    tdm__view_culprit_find(&w, &c);
    *out = c.pub;
    tdm__view_free(&w);
}

/* Stalled (view.h): never read a record, or silent for
 * TDM__VIEW_STALL_MS and ten times longer than @p other_age. */
int tdm__view_stalled(const tdm__view_unit *u, int64_t other_age)
{
    int64_t age = tdm__view_val(u, TDM_METRIC_P_LAST_AGE, -1);
    if (u->held)
        return 0; /* R-VW-2: the reader is blocked, not the producer */
    if (tdm__view_has(u, TDM_METRIC_P_RECORDS) &&
        u->v[TDM_METRIC_P_RECORDS] == 0)
        return 1;
    if (age < TDM__VIEW_STALL_MS)
        return 0;
    return other_age < 0 || other_age > INT64_MAX / 10 || age >= other_age * 10;
}

/* A partition's name for text: "p3" (quoted), or "#2" without one. */
const char *tdm__view_part_name(const tdm__view_unit *u, char *buf, size_t n)
{
    if (u->label && *u->label)
        snprintf(buf, n, "\"%s\"", u->label);
    else
        snprintf(buf, n, "#%d", u->index);
    return buf;
}

/* Counts the unfinished partitions by silence (see view.h). */
tdm__view_silence tdm__view_silence_of(const tdm__view *w)
{
    tdm__view_silence s = {0, 0, 0, -1};
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (u->scope != TDM__VIEW_PARTITION ||
            tdm__view_val(u, TDM_METRIC_P_FINISHED, 0))
            continue;
        int64_t age = tdm__view_val(u, TDM_METRIC_P_LAST_AGE, -1);
        s.live++;
        s.idle += tdm__view_val(u, TDM_METRIC_P_IDLE, 0) != 0;
        /* R-VW-2: a held partition is not silent. */
        if (!u->held && (tdm__view_val(u, TDM_METRIC_P_RECORDS, -1) == 0 ||
                         age >= TDM__VIEW_STALL_MS))
            s.silent++;
        if (age >= 0 && (s.youngest < 0 || age < s.youngest))
            s.youngest = age;
    }
    return s;
}

int tdm__view_all_silent(const tdm__view *w, const tdm__view_silence *s)
{
    return w->running && s->live > 0 && s->silent == s->live &&
           s->idle < s->live;
}
