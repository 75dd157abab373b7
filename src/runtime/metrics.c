/* SPDX-License-Identifier: MIT */
/* metrics.c - the public side of the runtime's observability: the
 * TDM_METRIC_MAP table, snapshots of a running (or finished) job built
 * from what subtasks publish (metrics.h), the memory of window firings,
 * and tdm_job_window_status, whose questions a window subtask answers
 * between two groups of queue items.
 *
 * Locking: the metrics lock of the job's run record (mmu,
 * run_record.h) guards which run snapshots read and everything that
 * outlives it (the final snapshot, the window status memory).  Subtasks never
 * take it on their data path: their metrics are relaxed atomics read here; only
 * a source subtask growing its partition array, and an operator subtask
 * remembering a late record, take a lock of their own, which snapshots take
 * briefly too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/decimal.h"
#include "runtime/live.h"
#include "runtime/metrics.h"
#include "runtime/run_record.h"
#include "runtime/task_op.h"
#include "runtime/task_source.h"
#include "window/win.h"

/* ====================================================================== */
/* The table                                                               */
/* ====================================================================== */

static const struct {
    const char *name, *scope, *type, *unit, *help;
} metric_rows[] = {
#define TDM__METRIC_ROW(id, name, scope, type, unit, kind, agg, help)          \
    {name, #scope, #type, unit, help},
    TDM_METRIC_MAP(TDM__METRIC_ROW)
#undef TDM__METRIC_ROW
};

static bool metric_ok(tdm_metric id)
{
    return (int)id >= 0 && id < TDM_METRIC_COUNT_;
}

/* The table's name of @p id ("numRecordsIn"), NULL outside it. */
const char *tdm_metric_name(tdm_metric id)
{
    return metric_ok(id) ? metric_rows[id].name : NULL;
}

/* The table's scope of @p id ("VERTEX"), NULL outside it. */
const char *tdm_metric_scope(tdm_metric id)
{
    return metric_ok(id) ? metric_rows[id].scope : NULL;
}

/* "COUNTER" or "GAUGE", NULL outside the table. */
const char *tdm_metric_type(tdm_metric id)
{
    return metric_ok(id) ? metric_rows[id].type : NULL;
}

/* The unit of @p id ("ms", "records"), NULL outside the table. */
const char *tdm_metric_unit(tdm_metric id)
{
    return metric_ok(id) ? metric_rows[id].unit : NULL;
}

/* The one-line description of @p id, NULL outside the table. */
const char *tdm_metric_help(tdm_metric id)
{
    return metric_ok(id) ? metric_rows[id].help : NULL;
}

/* ====================================================================== */
/* Snapshots                                                               */
/* ====================================================================== */

struct tdm_metrics {
    atomic_int refs; /* the final snapshot is shared, immutable */
    tdm_time_ms now;
    int running;
    tdm_metric_value *v;
    size_t n, cap;
    tdm_vertex_info *vx;
    const tdm_node **nodes; /* the node of each vertex (while building) */
    size_t n_vx;
    tdm_late_sample *late;
    size_t n_late, cap_late;
    tdm_ahead_record *ahead; /* at most one per source subtask */
    size_t n_ahead, cap_ahead;
    char **strs; /* every string the snapshot owns */
    size_t n_strs, cap_strs;
    bool oom;
};

/* Copies @p s into the snapshot; NULL (and oom set) when memory is
 * short. */
static const char *keep(tdm_metrics *m, const char *s)
{
    if (!s || m->oom)
        return NULL;
    if (m->n_strs == m->cap_strs) {
        size_t cap = m->cap_strs ? 2 * m->cap_strs : 32;
        char **p = tdm__realloc(m->strs, cap * sizeof *p);
        if (!p) {
            m->oom = true;
            return NULL;
        }
        m->strs = p;
        m->cap_strs = cap;
    }
    char *c = tdm__strndup(s, strlen(s));
    if (!c) {
        m->oom = true;
        return NULL;
    }
    m->strs[m->n_strs++] = c;
    return c;
}

/* Appends one value. */
static void add(tdm_metrics *m, tdm_metric id, const char *vertex, int subtask,
                int index, const char *label, int64_t value)
{
    if (m->oom)
        return;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 128;
        tdm_metric_value *p = tdm__realloc(m->v, cap * sizeof *p);
        if (!p) {
            m->oom = true;
            return;
        }
        m->v = p;
        m->cap = cap;
    }
    m->v[m->n++] = (tdm_metric_value){id, vertex, subtask, index, label, value};
}

/* Frees a snapshot (NULL is fine). */
void tdm_metrics_free(tdm_metrics *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) > 1)
        return;
    for (size_t i = 0; i < m->n_strs; i++)
        tdm__free(m->strs[i]);
    for (size_t i = 0; i < m->n_vx; i++)
        tdm__free((void *)m->vx[i].inputs);
    tdm__free(m->strs);
    tdm__free(m->v);
    tdm__free(m->vx);
    tdm__free(m->nodes);
    tdm__free(m->late);
    tdm__free(m->ahead);
    tdm__free(m);
}

/* The canonical text of a node's type (a window's window.type): its
 * choice in the table. */
static void type_text(const tdm_node *n, char *buf, size_t size)
{
    const tdm__node_spec *s = &n->spec;
    int64_t v = n->kind == TDM_NODE_SOURCE   ? (int64_t)s->src.type
                : n->kind == TDM_NODE_WINDOW ? (int64_t)s->win.type
                : n->kind == TDM_NODE_JOIN   ? (int64_t)s->join.type
                                             : (int64_t)s->sink.type;
    tdm__conf_enum_text(n->scope,
                        n->kind == TDM_NODE_WINDOW ? "window.type" : "type", v,
                        buf, size);
}

/* Appends the vertex of node @p n: kind, type, parallelism and the
 * upstream vertices (windows: from; joins: left, right; sinks: the
 * operators writing results or late records to it, and every source
 * when it is the dead letter output). */
static void add_vertex(tdm_metrics *m, const tdm_job *job, const tdm_node *n,
                       int P)
{
    tdm_vertex_info *v = &m->vx[m->n_vx];
    char type[64];
    memset(v, 0, sizeof *v);
    m->nodes[m->n_vx++] = n;
    v->name = keep(m, n->name);
    v->kind = n->kind;
    type_text(n, type, sizeof type);
    v->type = keep(m, type);
    v->parallelism = n->kind == TDM_NODE_SINK ? 1 : P;
    const char **in = tdm__calloc((size_t)job->n_nodes + 2, sizeof *in);
    if (!in) {
        m->oom = true;
        return;
    }
    v->inputs = in;
    int k = 0;
    if (n->kind == TDM_NODE_WINDOW) {
        const tdm__conf_val *from = n->spec.win.from;
        for (int i = 0; i < from->n_fields && k < job->n_nodes + 1; i++)
            in[k++] = keep(m, from->fields[i]);
    } else if (n->kind == TDM_NODE_JOIN) {
        in[k++] = keep(m, n->spec.join.left);
        in[k++] = keep(m, n->spec.join.right);
    } else if (n->kind == TDM_NODE_SINK) {
        bool dead = strcmp(job->spec.dead_letter, n->name) == 0;
        for (int i = 0; i < job->n_nodes; i++) {
            const tdm_node *o = job->nodes[i];
            bool feeds = false;
            if (o->kind == TDM_NODE_WINDOW || o->kind == TDM_NODE_JOIN)
                feeds = strcmp(tdm__node_spec_sink(o->kind, &o->spec),
                               n->name) == 0 ||
                        strcmp(tdm__node_spec_late(o->kind, &o->spec),
                               n->name) == 0;
            else if (o->kind == TDM_NODE_SOURCE)
                feeds = dead;
            if (feeds)
                in[k++] = keep(m, o->name);
        }
    }
    v->n_inputs = k;
}

/* An empty snapshot with the job's vertices: sources, then windows and
 * joins, then sinks, each in the order they were added. */
static tdm_metrics *snapshot_new(const tdm_job *job, int P, tdm_time_ms now,
                                 int running)
{
    static const tdm_node_kind order[3][2] = {
        {TDM_NODE_SOURCE, TDM_NODE_SOURCE},
        {TDM_NODE_WINDOW, TDM_NODE_JOIN},
        {TDM_NODE_SINK, TDM_NODE_SINK}};
    tdm_metrics *m = tdm__calloc(1, sizeof *m);
    if (!m)
        return NULL;
    atomic_init(&m->refs, 1);
    m->now = now;
    m->running = running;
    size_t nn = (size_t)job->n_nodes + 1;
    m->vx = tdm__calloc(nn, sizeof *m->vx);
    m->nodes = tdm__calloc(nn, sizeof *m->nodes);
    if (!m->vx || !m->nodes) {
        tdm_metrics_free(m);
        return NULL;
    }
    for (int g = 0; g < 3; g++)
        for (int i = 0; i < job->n_nodes; i++) {
            const tdm_node *n = job->nodes[i];
            if (n->kind == order[g][0] || n->kind == order[g][1])
                add_vertex(m, job, n, P);
        }
    if (m->oom) {
        tdm_metrics_free(m);
        return NULL;
    }
    return m;
}

/* The snapshot's copy of node @p n's name. */
static const char *vname(const tdm_metrics *m, const tdm_node *n)
{
    for (size_t i = 0; i < m->n_vx; i++)
        if (m->nodes[i] == n)
            return m->vx[i].name;
    return NULL;
}

/* "ms ago" of a processing time, or -1 when it never happened. */
static int64_t age(tdm_time_ms now, tdm_time_ms at)
{
    if (at == TDM_TIME_MIN)
        return -1;
    return at > now ? 0 : now - at;
}

/* Adds a watermark lag (processing time minus the watermark) when the
 * watermark is a real one (not "none", not end of input). */
static void add_lag(tdm_metrics *m, const char *vx, int sub, tdm_time_ms now,
                    tdm_time_ms wm)
{
    if (wm != TDM_TIME_MIN && wm != TDM_TIME_MAX)
        add(m, TDM_METRIC_WM_LAG, vx, sub, -1, NULL,
            tdm__time_sub_sat(now, wm));
}

/* Where subtask @p sub's time went (core/busy.h): per second over the
 * last window, and as totals.  Nothing for a thread not started. */
static void busy_rows(tdm_metrics *m, const char *vx, int sub, tdm__busy *b)
{
    int64_t now = tdm__busy_now(), ms[TDM__BUSY_N_ + 1], tot[TDM__BUSY_N_ + 1];
    if (!tdm__busy_rates(b, now, ms, tot))
        return;
    int64_t busy = tot[TDM__BUSY_N_] - tot[TDM__BUSY_IDLE] - tot[TDM__BUSY_BP];
    add(m, TDM_METRIC_BUSY_RATE, vx, sub, -1, NULL, ms[TDM__BUSY_N_]);
    add(m, TDM_METRIC_BP_RATE, vx, sub, -1, NULL, ms[TDM__BUSY_BP]);
    add(m, TDM_METRIC_IDLE_RATE, vx, sub, -1, NULL, ms[TDM__BUSY_IDLE]);
    add(m, TDM_METRIC_SINK_RATE, vx, sub, -1, NULL, ms[TDM__BUSY_SINK]);
    add(m, TDM_METRIC_BUSY_TIME, vx, sub, -1, NULL, busy > 0 ? busy / 1000 : 0);
    add(m, TDM_METRIC_BP_TIME, vx, sub, -1, NULL, tot[TDM__BUSY_BP] / 1000);
    add(m, TDM_METRIC_IDLE_TIME, vx, sub, -1, NULL, tot[TDM__BUSY_IDLE] / 1000);
}

/* The fallback watermark of source subtask @p t, if it has one: which
 * drives, the data watermark, the current stretch (to the snapshot's
 * time) and the total. */
static void fallback_rows(tdm_metrics *m, const char *vx, tdm__rt_src_task *t)
{
    if (!t->fb)
        return;
    const tdm__rt_src_metrics *sm = tdm__src_metrics_pub(t);
    const tdm__rt_part *parts;
    /* The lock the subtask publishes them under (src_metrics.c). */
    (void)tdm__src_metrics_parts_lock(t, &parts);
    tdm_time_ms since = tdm__rt_pub_get(&sm->fb_since);
    int64_t done = tdm__rt_pub_get(&sm->fb_done);
    tdm_time_ms data = tdm__rt_pub_get(&sm->data_wm);
    tdm__src_metrics_parts_unlock(t);
    tdm_time_ms stretch = since == TDM_TIME_MIN ? 0 : age(m->now, since);
    add(m, TDM_METRIC_WM_SOURCE, vx, t->index, -1, NULL, since != TDM_TIME_MIN);
    add(m, TDM_METRIC_WM_DATA, vx, t->index, -1, NULL, data);
    add(m, TDM_METRIC_FB_STRETCH, vx, t->index, -1, NULL, stretch);
    add(m, TDM_METRIC_FB_TIME, vx, t->index, -1, NULL, done + stretch);
}

/* The record of source subtask @p t that ran ahead, if any (src_ahead.h). */
static void ahead_row(tdm_metrics *m, const char *vx, tdm__rt_src_task *t)
{
    tdm__rt_ahead a;
    tdm__src_ahead_read(t, &a);
    if (a.ts == TDM_TIME_MIN || m->oom)
        return;
    if (m->n_ahead == m->cap_ahead) {
        size_t cap = m->cap_ahead ? 2 * m->cap_ahead : 8;
        tdm_ahead_record *p = tdm__realloc(m->ahead, cap * sizeof *p);
        if (!p) {
            m->oom = true;
            return;
        }
        m->ahead = p;
        m->cap_ahead = cap;
    }
    m->ahead[m->n_ahead++] =
        (tdm_ahead_record){vx,
                           t->index,
                           a.part,
                           a.ts,
                           a.at,
                           *a.location ? keep(m, a.location) : NULL,
                           keep(m, a.raw)};
}

/* The rows of one source subtask: VERTEX, then one PARTITION group per
 * split.
 *
 * A partition is idle when the reader says so (tdm_reader_split_is_idle,
 * published by the subtask with the split's watermark) or the whole
 * subtask announced IDLE; a finished partition is "finished", not idle. */
static void source_rows(tdm_metrics *m, tdm__run *run, tdm__rt_src_task *t)
{
    const char *vx = vname(m, t->src->node);
    const tdm__rt_src_metrics *sm = tdm__src_metrics_pub(t);
    int sub = t->index;
    tdm_time_ms now = m->now;
    /* Acquire: the splits' values read below are at least as new. */
    tdm_time_ms wm_out = atomic_load_explicit((_Atomic int64_t *)&sm->wm_out,
                                              memory_order_acquire);
    int64_t idle = tdm__rt_pub_get(&sm->idle);
    tdm_time_ms in_wm = TDM_TIME_MAX;
    bool any_active = false;
    size_t first = m->n;

    /* Partitions first (their minimum is the input watermark), then the
     * VERTEX rows are moved in front of them. */
    const tdm__rt_part *parts;
    int n_pub = tdm__src_metrics_parts_lock(t, &parts);
    for (int p = 0; p < n_pub; p++) {
        const tdm__rt_part *pp = &parts[p];
        int64_t flags = tdm__rt_pub_get(&pp->p_flags);
        tdm_time_ms w = tdm__rt_pub_get(&pp->p_wm);
        tdm_time_ms last = tdm__rt_pub_get(&pp->p_last_at);
        bool fin = (flags & RT_PF_FINISHED) != 0;
        bool pidle = !fin && (idle || (flags & RT_PF_IDLE) != 0);
        const char *label = keep(m, pp->name ? pp->name : "?");
        int ix = pp->global >= 0 ? pp->global : p;
        add(m, TDM_METRIC_P_WM, vx, sub, ix, label, w);
        add(m, TDM_METRIC_P_IDLE, vx, sub, ix, label, pidle);
        tdm_time_ms mx = tdm__rt_pub_get(&pp->p_max_ts);
        if (mx != TDM_TIME_MIN)
            add(m, TDM_METRIC_P_MAX_TS, vx, sub, ix, label, mx);
        add(m, TDM_METRIC_P_RECORDS, vx, sub, ix, label,
            tdm__rt_pub_get(&pp->p_records));
        if (last != TDM_TIME_MIN)
            add(m, TDM_METRIC_P_LAST_AGE, vx, sub, ix, label, age(now, last));
        add(m, TDM_METRIC_P_PAUSED, vx, sub, ix, label,
            (flags & RT_PF_PAUSED) != 0);
        add(m, TDM_METRIC_P_FINISHED, vx, sub, ix, label, fin);
        if (!fin && !pidle) {
            any_active = true;
            if (w < in_wm)
                in_wm = w;
        }
    }
    tdm__src_metrics_parts_unlock(t);
    ahead_row(m, vx, t);
    if (!any_active)
        in_wm = wm_out;
    size_t n_part = m->n - first;

    add(m, TDM_METRIC_WM_INPUT, vx, sub, -1, NULL, in_wm);
    add(m, TDM_METRIC_WM_OUTPUT, vx, sub, -1, NULL, wm_out);
    add_lag(m, vx, sub, now, wm_out);
    add(m, TDM_METRIC_IDLE, vx, sub, -1, NULL, idle);
    add(m, TDM_METRIC_RECORDS_IN, vx, sub, -1, NULL, tdm__rt_pub_get(&sm->in));
    add(m, TDM_METRIC_RECORDS_OUT, vx, sub, -1, NULL,
        tdm__rt_pub_get(&sm->out));
    add(m, TDM_METRIC_BAD_RECORDS, vx, sub, -1, NULL,
        tdm__rt_pub_get(&sm->bad));
    add(m, TDM_METRIC_GUARD_HITS, vx, sub, -1, NULL,
        tdm__rt_pub_get(&sm->guard));
    add(m, TDM_METRIC_DUP_KEYS, vx, sub, -1, NULL, tdm__rt_pub_get(&sm->dup));
    add(m, TDM_METRIC_TOMBSTONES, vx, sub, -1, NULL,
        tdm__rt_pub_get(&sm->tomb));
    add(m, TDM_METRIC_BACKPRESSURE, vx, sub, -1, NULL,
        tdm__rt_pub_get(&sm->bp));
    busy_rows(m, vx, sub, &t->busy);
    tdm_time_ms last = tdm__rt_pub_get(&sm->last_at);
    if (last != TDM_TIME_MIN)
        add(m, TDM_METRIC_LAST_RECORD_AGE, vx, sub, -1, NULL, age(now, last));
    tdm_time_ms mx = tdm__rt_pub_get(&sm->max_ts);
    if (mx != TDM_TIME_MIN)
        add(m, TDM_METRIC_MAX_TS, vx, sub, -1, NULL, mx);
    add(m, TDM_METRIC_TS_UNIT, vx, sub, -1, NULL, tdm__rt_pub_get(&sm->unit));
    if (tdm__rt_pub_get(&sm->lag[3]) >= 0) {
        add(m, TDM_METRIC_LAG_P50, vx, sub, -1, NULL,
            tdm__rt_pub_get(&sm->lag[0]));
        add(m, TDM_METRIC_LAG_P99, vx, sub, -1, NULL,
            tdm__rt_pub_get(&sm->lag[1]));
        add(m, TDM_METRIC_LAG_P999, vx, sub, -1, NULL,
            tdm__rt_pub_get(&sm->lag[2]));
        add(m, TDM_METRIC_LAG_MAX, vx, sub, -1, NULL,
            tdm__rt_pub_get(&sm->lag[3]));
    }
    fallback_rows(m, vx, t);
    (void)run;
    /* VERTEX rows before PARTITION rows: rotate the two groups. */
    if (!m->oom && n_part > 0 && m->n > first + n_part) {
        size_t n_vx = m->n - first - n_part;
        tdm_metric_value *tmp = tdm__malloc(n_part * sizeof *tmp);
        if (!tmp) {
            m->oom = true;
            return;
        }
        memcpy(tmp, m->v + first, n_part * sizeof *tmp);
        memmove(m->v + first, m->v + first + n_part, n_vx * sizeof *tmp);
        memcpy(m->v + first + n_vx, tmp, n_part * sizeof *tmp);
        tdm__free(tmp);
    }
}

/* The watermark of logical input @p in of an operator subtask, from its
 * channels as published: the minimum over active channels; with none
 * active (all idle or ended), the maximum over all of them. */
static tdm_time_ms input_watermark(const tdm__rt_op_task *t, int in)
{
    int P = t->run->P;
    tdm_time_ms lo = TDM_TIME_MAX, hi = TDM_TIME_MIN;
    bool active = false;
    for (int ch = in * P; ch < (in + 1) * P; ch++) {
        const tdm__rt_chan *c = &t->chp[ch];
        tdm_time_ms w = tdm__rt_pub_get(&c->wm);
        if (w > hi)
            hi = w;
        if (!tdm__rt_pub_get(&c->idle) && !tdm__rt_pub_get(&c->ended)) {
            active = true;
            if (w < lo)
                lo = w;
        }
    }
    return active ? lo : hi;
}

/* The rows of one window or join subtask: VERTEX, INPUT, CHANNEL. */
static void op_rows(tdm_metrics *m, tdm__run *run, tdm__rt_op_task *t)
{
    const char *vx = vname(m, t->op->node);
    const tdm__rt_op_metrics *om = tdm__op_metrics_pub(t);
    int sub = t->index, P = run->P;
    bool win = t->op->kind == TDM_NODE_WINDOW;
    tdm_time_ms now = m->now;
    tdm_time_ms wm_out = atomic_load_explicit(&t->wm, memory_order_relaxed);
    add(m, TDM_METRIC_WM_INPUT, vx, sub, -1, NULL, tdm__rt_pub_get(&om->wm_in));
    add(m, TDM_METRIC_WM_OUTPUT, vx, sub, -1, NULL, wm_out);
    add_lag(m, vx, sub, now, wm_out);
    add(m, TDM_METRIC_IDLE, vx, sub, -1, NULL, tdm__rt_pub_get(&om->idle));
    add(m, TDM_METRIC_RECORDS_IN, vx, sub, -1, NULL, tdm__rt_pub_get(&om->in));
    add(m, TDM_METRIC_RECORDS_OUT, vx, sub, -1, NULL,
        tdm__rt_pub_get(&om->out));
    add(m, TDM_METRIC_LATE_DROPPED, vx, sub, -1, NULL,
        tdm__rt_pub_get(&om->late_drop));
    add(m, TDM_METRIC_LATE_SIDE, vx, sub, -1, NULL,
        tdm__rt_pub_get(&om->late_side));
    if (tdm__rt_pub_get(&om->late_fb) >= 0)
        add(m, TDM_METRIC_LATE_FALLBACK, vx, sub, -1, NULL,
            tdm__rt_pub_get(&om->late_fb));
    if (win) {
        add(m, TDM_METRIC_LATE_PANES, vx, sub, -1, NULL,
            tdm__rt_pub_get(&om->late_panes));
        add(m, TDM_METRIC_PANES, vx, sub, -1, NULL,
            tdm__rt_pub_get(&om->panes));
    }
    add(m, TDM_METRIC_WM_REGRESSIONS, vx, sub, -1, NULL,
        tdm__rt_pub_get(&om->regress));
    add(m, TDM_METRIC_STATE_KEYS, vx, sub, -1, NULL,
        tdm__rt_pub_get(&om->keys));
    add(m, TDM_METRIC_STATE_WINDOWS, vx, sub, -1, NULL,
        tdm__rt_pub_get(&om->windows));
    add(m, TDM_METRIC_STATE_BYTES, vx, sub, -1, NULL,
        tdm__rt_pub_get(&om->bytes));
    if (tdm__rt_pub_get(&om->lat_p50) >= 0) {
        add(m, TDM_METRIC_RESULT_LAT_P50, vx, sub, -1, NULL,
            tdm__rt_pub_get(&om->lat_p50));
        add(m, TDM_METRIC_RESULT_LAT_P99, vx, sub, -1, NULL,
            tdm__rt_pub_get(&om->lat_p99));
    }
    pthread_mutex_lock(&t->q.mu);
    int64_t qlen = (int64_t)t->q.count;
    pthread_mutex_unlock(&t->q.mu);
    add(m, TDM_METRIC_QUEUE_LEN, vx, sub, -1, NULL, qlen);
    add(m, TDM_METRIC_QUEUE_CAP, vx, sub, -1, NULL, (int64_t)t->q.cap);
    busy_rows(m, vx, sub, &t->busy);
    tdm_time_ms last = tdm__rt_pub_get(&om->last_at);
    if (last != TDM_TIME_MIN)
        add(m, TDM_METRIC_LAST_RECORD_AGE, vx, sub, -1, NULL, age(now, last));
    for (int in = 0; in < t->op->n_inputs; in++)
        add(m, TDM_METRIC_INPUT_WM, vx, sub, in + 1, NULL,
            input_watermark(t, in));
    for (int ch = 0; ch < t->op->n_channels; ch++) {
        char lab[200];
        snprintf(lab, sizeof lab, "%s#%d", t->op->inputs[ch / P]->node->name,
                 ch % P);
        const char *l = keep(m, lab);
        const tdm__rt_chan *c = &t->chp[ch];
        add(m, TDM_METRIC_CH_WM, vx, sub, ch, l, tdm__rt_pub_get(&c->wm));
        add(m, TDM_METRIC_CH_IDLE, vx, sub, ch, l, tdm__rt_pub_get(&c->idle));
        add(m, TDM_METRIC_CH_ENDED, vx, sub, ch, l, tdm__rt_pub_get(&c->ended));
    }
}

/* Orders late samples by processing time, keeping the collection order
 * (vertex, subtask, arrival) among equal times: a merge sort, stable
 * where qsort is not.  Returns false when scratch memory is short (the
 * samples then stay in collection order). */
static bool sort_late(tdm_late_sample *a, size_t n)
{
    tdm_late_sample *tmp = tdm__malloc(n * sizeof *tmp);
    if (!tmp)
        return false;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n;
            size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = a[j].at < a[i].at ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
    tdm__free(tmp);
    return true;
}

/* Copies an operator subtask's late samples, oldest first. */
static void late_rows(tdm_metrics *m, tdm__rt_op_task *t)
{
    const char *vx = vname(m, t->op->node);
    const tdm__rt_late *ring;
    int head, n_late = tdm__op_metrics_late_lock(t, &ring, &head);
    for (int k = 0; k < n_late && !m->oom; k++) {
        int i = (head - n_late + k + RT_LATE_RING) % RT_LATE_RING;
        const tdm__rt_late *l = &ring[i];
        if (m->n_late == m->cap_late) {
            size_t cap = m->cap_late ? 2 * m->cap_late : 32;
            tdm_late_sample *p = tdm__realloc(m->late, cap * sizeof *p);
            if (!p) {
                m->oom = true;
                break;
            }
            m->late = p;
            m->cap_late = cap;
        }
        m->late[m->n_late++] = (tdm_late_sample){
            vx, t->index, l->ts, l->wm, l->at, l->dropped, keep(m, l->row)};
    }
    tdm__op_metrics_late_unlock(t);
}

/* Builds a snapshot of the run's published metrics (see metrics.h). */
tdm_err tdm__rt_metrics_build(tdm__run *run, tdm_time_ms now, int running,
                              tdm_metrics **out)
{
    tdm_job *job = run->job;
    int P = run->P;
    tdm_metrics *m = snapshot_new(job, P, now, running);
    if (!m)
        return TDM_ERR_NOMEM;
    tdm_time_ms start = atomic_load(&run->rec->start_ms);
    add(m, TDM_METRIC_UPTIME, NULL, -1, -1, NULL,
        tdm__time_sub_sat(now, start));
    add(m, TDM_METRIC_CONFIG_CHANGES, NULL, -1, -1, NULL,
        tdm__live_changes(job));
    if (run->ck.on) {
        static const struct {
            tdm_metric id;
            tdm_stat st;
        } ck[] = {
            {TDM_METRIC_CKPT_COMPLETED, TDM_STAT_CHECKPOINTS},
            {TDM_METRIC_CKPT_FAILED, TDM_STAT_CHECKPOINTS_FAILED},
            {TDM_METRIC_CKPT_LAST_ID, TDM_STAT_CHECKPOINT_ID},
            {TDM_METRIC_CKPT_DURATION, TDM_STAT_CHECKPOINT_MS},
            {TDM_METRIC_CKPT_SIZE, TDM_STAT_CHECKPOINT_BYTES},
            {TDM_METRIC_CKPT_ALIGN, TDM_STAT_CHECKPOINT_ALIGN_MS},
            {TDM_METRIC_CKPT_FAILED_IN_ROW, TDM_STAT_CHECKPOINTS_FAILED_IN_ROW},
            {TDM_METRIC_RESTARTS, TDM_STAT_RESTARTS},
            {TDM_METRIC_CKPT_FAILED_ID, TDM_STAT_CHECKPOINT_FAILED_ID},
            {TDM_METRIC_CKPT_FAILED_AT, TDM_STAT_CHECKPOINT_FAILED_AT},
        };
        /* The last failure's rows exist once one failed (the last two). */
        size_t n = sizeof ck / sizeof ck[0];
        if (atomic_load(&run->rec->stats[TDM_STAT_CHECKPOINT_FAILED_ID]) < 0)
            n -= 2;
        for (size_t i = 0; i < n; i++)
            add(m, ck[i].id, NULL, -1, -1, NULL,
                atomic_load(&run->rec->stats[ck[i].st]));
    }
    for (int s = 0; s < run->n_srcs; s++) {
        tdm__rt_src_task *ts = tdm__rt_src_tasks(run, s);
        for (int i = 0; ts && i < P; i++)
            source_rows(m, run, &ts[i]);
    }
    for (int o = 0; o < run->n_ops; o++) {
        tdm__rt_op_task *ts = tdm__rt_op_tasks(run, o);
        for (int j = 0; ts && j < P; j++)
            op_rows(m, run, &ts[j]);
    }
    /* Sinks: rows written, counted by their writers (operators' results
     * and late records, sources' dead letters). */
    for (int k = 0; k < run->n_sinks; k++) {
        tdm__rt_sink *sk = &run->sinks[k];
        int64_t n = 0;
        for (int o = 0; o < run->n_ops; o++)
            for (int j = 0; tdm__rt_op_tasks(run, o) && j < P; j++) {
                const tdm__rt_op_task *t = &run->op_tasks[o][j];
                if (run->ops[o].sink == sk)
                    n += tdm__rt_pub_get(&tdm__op_metrics_pub(t)->out);
                if (run->ops[o].late == sk)
                    n += tdm__rt_pub_get(&tdm__op_metrics_pub(t)->late_side);
            }
        if (run->dead == sk)
            for (int s = 0; s < run->n_srcs; s++)
                for (int i = 0; tdm__rt_src_tasks(run, s) && i < P; i++)
                    n += tdm__rt_pub_get(
                        &tdm__src_metrics_pub(&run->src_tasks[s][i])->dead);
        add(m, TDM_METRIC_RECORDS_IN, vname(m, sk->node), 0, -1, NULL, n);
    }
    for (int o = 0; o < run->n_ops; o++)
        for (int j = 0; tdm__rt_op_tasks(run, o) && j < P; j++)
            late_rows(m, &run->op_tasks[o][j]);
    if (m->n_late > 1)
        sort_late(m->late, m->n_late);
    if (m->oom) {
        tdm_metrics_free(m);
        return TDM_ERR_NOMEM;
    }
    *out = m;
    return TDM_OK;
}

/* Takes a snapshot: of the live run, of the last run's final values, or
 * (never run) of the vertices alone. */
tdm_err tdm_job_metrics(tdm_job *job, tdm_metrics **out)
{
    if (!job || !out)
        return TDM_ERR_INVAL;
    tdm__run_record *rec = job->rec;
    *out = NULL;
    tdm_err err;
    pthread_mutex_lock(&rec->mmu);
    if (rec->mrun) {
        err = tdm__rt_metrics_build(rec->mrun, tdm__job_now(job), 1, out);
    } else if (rec->final) {
        /* Immutable: every caller shares it (tdm_metrics_free drops a
         * reference). */
        atomic_fetch_add(&rec->final->refs, 1);
        *out = rec->final;
        err = TDM_OK;
    } else {
        *out =
            snapshot_new(job, (int)job->spec.parallelism, tdm__job_now(job), 0);
        err = *out ? TDM_OK : TDM_ERR_NOMEM;
    }
    pthread_mutex_unlock(&rec->mmu);
    return err;
}

tdm_time_ms tdm_metrics_time(const tdm_metrics *m)
{
    return m ? m->now : TDM_TIME_MIN;
}

int tdm_metrics_running(const tdm_metrics *m)
{
    return m ? m->running : 0;
}

size_t tdm_metrics_count(const tdm_metrics *m)
{
    return m ? m->n : 0;
}

const tdm_metric_value *tdm_metrics_at(const tdm_metrics *m, size_t i)
{
    return m && i < m->n ? &m->v[i] : NULL;
}

/* Linear search: snapshots are read a few values at a time, and the
 * REST and Prometheus renderings walk them in order instead. */
int tdm_metrics_find(const tdm_metrics *m, tdm_metric id, const char *vertex,
                     int subtask, int index, int64_t *value)
{
    if (!m)
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        const tdm_metric_value *v = &m->v[i];
        if (v->id != id || v->subtask != subtask || v->index != index)
            continue;
        if ((vertex == NULL) != (v->vertex == NULL))
            continue;
        if (vertex && strcmp(vertex, v->vertex) != 0)
            continue;
        if (value)
            *value = v->value;
        return 1;
    }
    return 0;
}

size_t tdm_metrics_vertex_count(const tdm_metrics *m)
{
    return m ? m->n_vx : 0;
}

const tdm_vertex_info *tdm_metrics_vertex(const tdm_metrics *m, size_t i)
{
    return m && i < m->n_vx ? &m->vx[i] : NULL;
}

size_t tdm_metrics_late_count(const tdm_metrics *m)
{
    return m ? m->n_late : 0;
}

const tdm_late_sample *tdm_metrics_late_at(const tdm_metrics *m, size_t i)
{
    return m && i < m->n_late ? &m->late[i] : NULL;
}

size_t tdm_metrics_ahead_count(const tdm_metrics *m)
{
    return m ? m->n_ahead : 0;
}

const tdm_ahead_record *tdm_metrics_ahead_at(const tdm_metrics *m, size_t i)
{
    return m && i < m->n_ahead ? &m->ahead[i] : NULL;
}

/* ====================================================================== */
/* The firing memory                                                       */
/* ====================================================================== */

/* Allocates the firing ring (RT_FIRE_CAP entries). */
tdm_err tdm__rt_fired_alloc(tdm__rt_fired *f)
{
    f->ring = tdm__malloc(RT_FIRE_CAP * sizeof *f->ring);
    if (!f->ring)
        return TDM_ERR_NOMEM;
    f->total = 0;
    return TDM_OK;
}

/* Scans the ring from the newest entry back. */
bool tdm__rt_fired_find(const tdm__rt_fired *f, uint64_t fp, tdm_time_ms *wm)
{
    if (!f->ring)
        return false;
    uint64_t n = f->total < RT_FIRE_CAP ? f->total : RT_FIRE_CAP;
    for (uint64_t k = 1; k <= n; k++) {
        const tdm__rt_fired_ent *e =
            &f->ring[(f->total - k) & (RT_FIRE_CAP - 1)];
        if (e->fp == fp) {
            *wm = e->wm;
            return true;
        }
    }
    return false;
}

/* Frees the ring (a zeroed one is fine). */
void tdm__rt_fired_free(tdm__rt_fired *f)
{
    tdm__free(f->ring);
    memset(f, 0, sizeof *f);
}

/* ====================================================================== */
/* Window status                                                           */
/* ====================================================================== */

/* Frees the window status memory of a run (NULL is fine). */
void tdm__rt_warea_free(tdm__rt_warea *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->n; i++) {
        tdm__rt_wvertex *v = &a->v[i];
        for (int j = 0; v->st && j < a->P; j++) {
            tdm__rt_fired_free(&v->st[j].fired);
            tdm__free(v->st[j].key);
            if (j < v->n_cv)
                pthread_cond_destroy(&v->st[j].cv);
        }
        tdm__free(v->st);
        tdm__free(v->name);
        tdm__free(v->key_types);
        if (v->key_names)
            for (int k = 0; k < v->n_key; k++)
                tdm__free(v->key_names[k]);
        tdm__free(v->key_names);
    }
    tdm__free(a->v);
    tdm__free(a);
}

/* Builds the area of a run: one entry per window vertex with what a
 * question needs after the run (key types, lateness), and one mailbox
 * and firing memory per subtask, handed to the subtasks. */
static tdm__rt_warea *warea_new(tdm__run *run)
{
    tdm__rt_warea *a = tdm__calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->P = run->P;
    a->key_groups = run->key_groups;
    a->v = tdm__calloc((size_t)run->n_ops + 1, sizeof *a->v);
    if (!a->v)
        goto fail;
    for (int o = 0; o < run->n_ops; o++) {
        tdm__rt_op *op = &run->ops[o];
        if (op->kind != TDM_NODE_WINDOW)
            continue;
        tdm__rt_wvertex *v = &a->v[a->n++];
        const tdm__conf_val *keys = op->node->spec.win.key_by;
        v->op = o;
        v->n_key = op->n_key;
        v->event_time = op->event_time;
        v->global = op->node->spec.win.type == TDM__WINDOW_TYPE_GLOBAL;
        v->lateness = op->lateness;
        tdm__live_src *ls = tdm__live_of(run->job, op->node);
        v->live = ls ? &ls->v[TDM__LIVE_LATENESS] : NULL;
        v->name = tdm__strndup(op->node->name, strlen(op->node->name));
        v->key_types = tdm__calloc((size_t)op->n_key + 1, sizeof *v->key_types);
        v->key_names = tdm__calloc((size_t)op->n_key + 1, sizeof *v->key_names);
        v->st = tdm__calloc((size_t)run->P, sizeof *v->st);
        if (!v->name || !v->key_types || !v->key_names || !v->st)
            goto fail;
        for (int k = 0; k < op->n_key; k++) {
            v->key_types[k] = op->col_types[k];
            v->key_names[k] =
                tdm__strndup(keys->fields[k], strlen(keys->fields[k]));
            if (!v->key_names[k])
                goto fail;
        }
        for (int j = 0; j < run->P; j++) {
            tdm__rt_wstat *st = &v->st[j];
            if (pthread_cond_init(&st->cv, NULL) != 0)
                goto fail;
            v->n_cv = j + 1;
            atomic_init(&st->req, 0);
            st->final_wm = TDM_TIME_MIN;
        }
    }
    return a;

fail:
    tdm__rt_warea_free(a);
    return NULL;
}

/* Replaces the job's window status memory and final snapshot with new
 * ones for @p run, and makes the run the one snapshots read. */
tdm_err tdm__rt_warea_start(tdm__run *run)
{
    tdm__run_record *rec = run->rec;
    tdm__rt_warea *a = warea_new(run);
    if (!a)
        return TDM_ERR_NOMEM;
    pthread_mutex_lock(&rec->mmu);
    while (rec->status_waiters > 0)
        pthread_cond_wait(&rec->mcv, &rec->mmu);
    tdm__rt_warea_free(rec->warea);
    tdm_metrics_free(rec->final);
    rec->final = NULL;
    rec->warea = a;
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < run->P; j++)
            tdm__rt_op_tasks(run, a->v[i].op)[j].status.ws = &a->v[i].st[j];
    rec->mrun = run;
    pthread_mutex_unlock(&rec->mmu);
    return TDM_OK;
}

/* Keeps the final snapshot and what window subtasks leave, and ends the
 * live view (subtasks are freed right after; waiting status callers are
 * woken to answer from what was kept). */
void tdm__rt_metrics_finish(tdm__run *run)
{
    tdm_job *job = run->job;
    tdm__run_record *rec = run->rec;
    pthread_mutex_lock(&rec->mmu);
    if (rec->mrun != run) {
        pthread_mutex_unlock(&rec->mmu);
        return;
    }
    tdm_metrics *fin = NULL;
    if (tdm__rt_metrics_build(run, tdm__job_now(job), 0, &fin) == TDM_OK) {
        tdm_metrics_free(rec->final);
        rec->final = fin;
    }
    tdm__rt_warea *a = rec->warea;
    for (int i = 0; a && i < a->n; i++) {
        /* The area outlives the run, the live table may not (a next run
         * makes a new one): the lateness in force is kept by value. */
        if (a->v[i].live)
            a->v[i].lateness = atomic_load(a->v[i].live);
        a->v[i].live = NULL;
        for (int j = 0; j < a->P; j++) {
            const tdm__rt_op_task *t = &tdm__rt_op_tasks(run, a->v[i].op)[j];
            a->v[i].st[j].final_wm = t->win ? t->win->wm : TDM_TIME_MIN;
            a->v[i].st[j].ended = t->win && t->win->ended;
            pthread_cond_broadcast(&a->v[i].st[j].cv);
        }
    }
    rec->mrun = NULL;
    pthread_mutex_unlock(&rec->mmu);
}

/* The channel holding the subtask's watermark (see metrics.h). */
int tdm__rt_holding_channel(const tdm__rt_op_task *t)
{
    int best = -1;
    for (int ch = 0; ch < t->op->n_channels; ch++) {
        if (t->ch_idle[ch] || t->ch_ended[ch])
            continue;
        if (best < 0 || t->ch_wm[ch] < t->ch_wm[best])
            best = ch;
    }
    return best;
}

/* Parses the key text by the key fields' types (several fields joined
 * by ',') and encodes it as the exchange does.  *key points into @p kb
 * or @p text. */
static tdm_err parse_key(const tdm__rt_wvertex *v, const char *text,
                         tdm__keybuf *kb, const char **key, size_t *len,
                         char *errbuf, size_t errbuf_size)
{
    enum { MAXK = 16 };
    tdm__field fields[MAXK];
    tdm__val vals[MAXK];
    int idx[MAXK];
    if (v->n_key < 1 || v->n_key > MAXK)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "key: window \"%s\" has %d key fields", v->name,
                         v->n_key);
    const char *p = text;
    for (int k = 0; k < v->n_key; k++) {
        const char *e = k == v->n_key - 1 ? p + strlen(p) : strchr(p, ',');
        if (!e)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "key: expected %d values separated by ',' "
                             "(fields %s...), got \"%s\"",
                             v->n_key, v->key_names[0], text);
        size_t l = (size_t)(e - p);
        char num[64];
        fields[k].name = v->key_names[k];
        fields[k].type = v->key_types[k];
        memset(&vals[k], 0, sizeof vals[k]);
        idx[k] = k;
        if (v->key_types[k] == TDM_TYPE_STRING) {
            vals[k].u.s.p = p;
            vals[k].u.s.len = (uint32_t)l;
        } else {
            char *end = NULL;
            if (l == 0 || l >= sizeof num)
                goto bad;
            memcpy(num, p, l);
            num[l] = 0;
            if (v->key_types[k] == TDM_TYPE_DOUBLE) {
                vals[k].u.d = strtod(num, &end);
            } else if (tdm__is_decimal(v->key_types[k])) {
                tdm_type dt = v->key_types[k];
                end = tdm__dec_parse(num, l, TDM_DECIMAL_PRECISION(dt),
                                     TDM_DECIMAL_SCALE(dt),
                                     &vals[k].u.i) == TDM_OK
                          ? num + l
                          : NULL;
            } else if (v->key_types[k] == TDM_TYPE_BOOL) {
                if (strcmp(num, "true") == 0 || strcmp(num, "1") == 0)
                    vals[k].u.i = 1;
                else if (strcmp(num, "false") == 0 || strcmp(num, "0") == 0)
                    vals[k].u.i = 0;
                else
                    goto bad;
                end = num + l;
            } else {
                vals[k].u.i = strtoll(num, &end, 10);
            }
            if (!end || *end)
                goto bad;
        }
        p = e + (k < v->n_key - 1);
        continue;
    bad:
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "key: \"%.*s\" is not a valid %s for key field "
                         "'%s'",
                         (int)l, p,
                         v->key_types[k] == TDM_TYPE_DOUBLE ? "number"
                         : v->key_types[k] == TDM_TYPE_BOOL ? "bool"
                                                            : "integer",
                         v->key_names[k]);
    }
    tdm__schema schema = {v->n_key, fields};
    tdm__row row = {.v = vals, .schema = &schema};
    if (tdm__key_encode(&row, idx, v->n_key, kb, key, len) != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "key: out of memory");
    return TDM_OK;
}

/* The answer from what the subtask left when it stopped (or the run when
 * it ended): the final watermark and the firing memory; a window subtask
 * that reached the end of its input holds nothing. */
static void final_answer(const tdm__rt_wvertex *v, tdm__rt_wstat *st, int j,
                         const char *key, size_t len, tdm_time_ms start,
                         tdm_time_ms end, tdm_window_status *a)
{
    memset(a, 0, sizeof *a);
    a->subtask = j;
    a->watermark = st->final_wm;
    tdm__met_window_times(v, end, &a->max_ts, &a->cleanup);
    a->has_state = 0;
    a->elements = st->ended ? 0 : -1;
    tdm_time_ms fwm = TDM_TIME_MIN;
    a->fired = tdm__rt_fired_find(&st->fired,
                                  tdm__rt_fired_fp(key, len, start, end), &fwm);
    a->fired_wm = a->fired ? fwm : TDM_TIME_MIN;
    a->holding_channel = -1;
    a->holding_wm = TDM_TIME_MIN;
    a->idle_channels = 0;
    a->running = 0;
}

/* The answer for a live subtask that cannot give one (R-WS-2): blocked
 * for @p blocked_us in its sink, or silent past the deadline.  What its
 * published figures say: the watermark, the channel holding it, idle
 * channels; whether the window holds records or fired stays unknown.
 * Metrics lock held. */
static void published_answer(const tdm__rt_wvertex *v, tdm__rt_op_task *t,
                             tdm_time_ms end, int64_t blocked_us,
                             tdm_window_status *a)
{
    memset(a, 0, sizeof *a);
    a->subtask = t->index;
    a->watermark = tdm__rt_pub_get(&tdm__op_metrics_pub(t)->wm_in);
    tdm__met_window_times(v, end, &a->max_ts, &a->cleanup);
    a->has_state = -1;
    a->elements = -1;
    a->fired = -1;
    a->fired_wm = TDM_TIME_MIN;
    a->holding_channel = -1;
    a->holding_wm = TDM_TIME_MIN;
    for (int ch = 0; ch < t->op->n_channels; ch++) {
        const tdm__rt_chan *c = &t->chp[ch];
        tdm_time_ms w = tdm__rt_pub_get(&c->wm);
        if (tdm__rt_pub_get(&c->ended))
            continue;
        if (tdm__rt_pub_get(&c->idle)) {
            a->idle_channels++;
        } else if (a->holding_channel < 0 || w < a->holding_wm) {
            a->holding_channel = ch;
            a->holding_wm = w;
        }
    }
    /* The operator's watermark is published after each group of items,
     * its channels' as they arrive: a subtask blocked inside a group
     * (firing the windows a watermark released) is at its channels'
     * minimum already. */
    if (a->holding_channel >= 0 && a->holding_wm > a->watermark)
        a->watermark = a->holding_wm;
    a->running = 1;
    a->blocked_ms = blocked_us / 1000 > 0 ? blocked_us / 1000 : 1;
}

/* How long op subtask @p t has been blocked where it cannot answer: in
 * its sink, or (after the deadline) waiting for room downstream. */
static int64_t blocked_us(const tdm__rt_op_task *t, int64_t now_us)
{
    int64_t s = tdm__busy_waiting(&t->busy, TDM__BUSY_SINK, now_us);
    int64_t b = tdm__busy_waiting(&t->busy, TDM__BUSY_BP, now_us);
    return s > b ? s : b;
}

/* Posts the question to the owning subtask and waits (up to the
 * deadline) for its answer.  Called and returns with the metrics lock
 * held.  TDM_OK with *done set when answered; *done clear when the run
 * ended meanwhile; TDM_ERR_IO on timeout; TDM_ERR_NOMEM. */
static tdm_err ask_live(tdm_job *job, const tdm__rt_wvertex *v,
                        tdm__rt_wstat *st, int j, const char *key, size_t len,
                        tdm_time_ms start, tdm_time_ms end,
                        tdm_window_status *out, bool *done)
{
    tdm__run_record *rec = job->rec;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 2;
    *done = false;
    /* One question at a time per subtask. */
    while (st->asked && rec->mrun && !st->done)
        if (pthread_cond_timedwait(&st->cv, &rec->mmu, &dl) != 0)
            return TDM_ERR_IO;
    if (!rec->mrun || st->done)
        return TDM_OK;
    /* R-WS-1: a subtask blocked in its sink for 200 ms or more cannot
     * answer before the sink takes its output: answered for at once. */
    tdm__rt_op_task *t = &tdm__rt_op_tasks(rec->mrun, v->op)[j];
    int64_t in_sink =
        tdm__busy_waiting(&t->busy, TDM__BUSY_SINK, tdm__busy_now());
    if (in_sink >= 200000) {
        published_answer(v, t, end, in_sink, out);
        *done = true;
        return TDM_OK;
    }
    if (len > st->key_cap) {
        char *p = tdm__realloc(st->key, len);
        if (!p)
            return TDM_ERR_NOMEM;
        st->key = p;
        st->key_cap = len;
    }
    if (len)
        memcpy(st->key, key, len);
    st->key_len = len;
    st->start = start;
    st->end = end;
    st->asked = true;
    st->answered = false;
    atomic_store_explicit(&st->req, 1, memory_order_relaxed);
    tdm__queue_poke(&tdm__rt_op_tasks(rec->mrun, v->op)[j].q);
    tdm_err err = TDM_OK;
    while (!st->answered && rec->mrun && !st->done)
        if (pthread_cond_timedwait(&st->cv, &rec->mmu, &dl) != 0) {
            err = st->answered ? TDM_OK : TDM_ERR_IO;
            break;
        }
    if (st->answered) {
        *out = st->ans;
        *done = true;
    } else if (err == TDM_ERR_IO && rec->mrun) {
        /* R-WS-2: silent for 2 s (blocked, or very slow): what its
         * published figures say. */
        int64_t b = blocked_us(t, tdm__busy_now());
        published_answer(v, t, end, b > 2000000 ? b : 2000000, out);
        *done = true;
        err = TDM_OK;
    }
    st->asked = false;
    st->answered = false;
    atomic_store_explicit(&st->req, 0, memory_order_relaxed);
    pthread_cond_broadcast(&st->cv);
    return *done ? TDM_OK : err;
}

/* Asks the subtask owning @p key about window [start, end) of window
 * vertex @p vertex (see tidemark.h). */
tdm_err tdm_job_window_status(tdm_job *job, const char *vertex, const char *key,
                              tdm_time_ms start, tdm_time_ms end,
                              tdm_window_status *out, char *errbuf,
                              size_t errbuf_size)
{
    if (!job || !out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s must not be NULL", job ? "out" : "job");
    if (!vertex || !key)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s must not be NULL", vertex ? "key" : "vertex");
    if (start >= end)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "start must be < end (got start %lld, end %lld)",
                         (long long)start, (long long)end);
    const tdm_node *n = tdm_job_node(job, vertex);
    if (!n || n->kind != TDM_NODE_WINDOW)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "vertex: no window named \"%s\"%s", vertex,
                         n ? " (it is not a window)" : "");
    tdm__keybuf kb = {0};
    tdm_err err = TDM_OK;
    tdm__run_record *rec = job->rec;
    pthread_mutex_lock(&rec->mmu);
    tdm__rt_warea *a = rec->warea;
    const tdm__rt_wvertex *v = NULL;
    for (int i = 0; a && i < a->n; i++)
        if (strcmp(a->v[i].name, vertex) == 0)
            v = &a->v[i];
    if (!v) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "the job has not run yet");
        goto out;
    }
    const char *kbytes;
    size_t klen;
    err = parse_key(v, key, &kb, &kbytes, &klen, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto out;
    /* The owning subtask, as the exchange routes the key. */
    int j = 0;
    if (a->P > 1)
        j = tdm__key_subtask(
            tdm__key_group(tdm__keys_hash(kbytes, klen), a->key_groups),
            a->key_groups, a->P);
    tdm__rt_wstat *st = &v->st[j];
    bool done = false;
    if (rec->mrun && !st->done) {
        rec->status_waiters++;
        err = ask_live(job, v, st, j, kbytes, klen, start, end, out, &done);
        if (--rec->status_waiters == 0)
            pthread_cond_broadcast(&rec->mcv);
        if (err == TDM_ERR_IO)
            tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                      "window \"%s\" subtask %d did not answer within 2 s",
                      vertex, j);
        if (err != TDM_OK)
            goto out;
    }
    if (!done)
        final_answer(v, st, j, kbytes, klen, start, end, out);
out:
    pthread_mutex_unlock(&rec->mmu);
    tdm__free(kb.p);
    return err;
}

/* ====================================================================== */
/* The run record                                                          */
/* ====================================================================== */

/* See metrics.h.  Callers of tdm_job_window_status may still be
 * leaving: wait for them under the lock. */
void tdm__met_record_fini(tdm_job *job)
{
    tdm__run_record *rec = job->rec;
    if (!rec)
        return;
    pthread_mutex_lock(&rec->mmu);
    while (rec->status_waiters > 0)
        pthread_cond_wait(&rec->mcv, &rec->mmu);
    tdm_metrics_free(rec->final);
    tdm__rt_warea_free(rec->warea);
    rec->final = NULL;
    rec->warea = NULL;
    tdm__live_free(rec->live);
    rec->live = NULL;
    pthread_mutex_unlock(&rec->mmu);
    tdm__run_record_free(rec);
    job->rec = NULL;
}
