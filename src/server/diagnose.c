/* SPDX-License-Identifier: MIT */
/* diagnose.c - "why hasn't my window fired?": turns a metrics snapshot
 * and the job's configuration into findings in plain words (what is
 * wrong, the evidence, a concrete fix), most important first; finds the
 * source partition holding the watermark back; and explains one (key,
 * window) from the answer of tdm_job_window_status.  Every rule is
 * documented with its thresholds in docs/diagnosis.md.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "runtime/rt.h"
#include "server/server.h"

/* A partition that sent nothing for this long (and ten times longer than
 * the most recent silence of the partitions it is compared with) counts
 * as stalled. */
#define DX_STALL_MS 10000
/* A late fraction above this (per mille) is a HIGH_LATE_RATE ... */
#define DX_LATE_PERMILLE 10
/* ... once the operator has received at least this many records. */
#define DX_LATE_MIN_RECORDS 100

/* The has-bits of a unit are one uint64_t. */
_Static_assert(TDM_METRIC_COUNT_ <= 64, "metric bit set too small");

/* ====================================================================== */
/* A sorted view of a snapshot                                             */
/* ====================================================================== */

/* Scopes of the metric table, in the order units are sorted. */
enum { DX_JOB = 0, DX_VERTEX, DX_INPUT, DX_CHANNEL, DX_PARTITION };

/* Every value of one (scope, vertex, subtask, index) gathered: the
 * snapshot lists values one by one, the rules want them side by side. */
typedef struct dx_unit {
    int scope;
    const char *vertex;
    int subtask;
    int index;
    const char *label;
    int group;                    /* connected component of its vertex */
    uint64_t has;                 /* bit i: v[i] is present */
    int64_t v[TDM_METRIC_COUNT_];
} dx_unit;

/* The active partitions of one connected part of the job, summed up so
 * that "the others" of any partition are known without a second pass:
 * the two lowest and two highest watermarks and the two freshest. */
typedef struct dx_gstat {
    const dx_unit *lo[2];
    const dx_unit *hi[2];
    const dx_unit *fresh[2];
    int n;
} dx_gstat;

typedef struct dx_view {
    tdm_job *job;                 /* may be NULL (tdm__find_culprit) */
    const tdm_metrics *m;
    dx_unit *u;
    size_t n;
    tdm_time_ms now;
    int running;
    int *group;                   /* per vertex: connected component */
    size_t n_vertices;
    dx_gstat *gs;                 /* per component (index: a vertex) */
} dx_view;

/* The candidate culprit with the partition it was compared with. */
typedef struct dx_culprit {
    tdm__culprit pub;
    const dx_unit *unit;          /* the culprit partition */
    const dx_unit *next;          /* the next lowest one */
    int64_t other_age_ms;         /* freshest other partition's age (-1) */
} dx_culprit;

static int scope_of(tdm_metric id)
{
    const char *s = tdm_metric_scope(id);
    if (!s)
        return DX_JOB;
    if (strcmp(s, "VERTEX") == 0)
        return DX_VERTEX;
    if (strcmp(s, "INPUT") == 0)
        return DX_INPUT;
    if (strcmp(s, "CHANNEL") == 0)
        return DX_CHANNEL;
    if (strcmp(s, "PARTITION") == 0)
        return DX_PARTITION;
    return DX_JOB;
}

static int cmp_str(const char *a, const char *b)
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
    if ((c = cmp_str(va, vb)) != 0)
        return c;
    if (ta != tb)
        return ta < tb ? -1 : 1;
    if (ia != ib)
        return ia < ib ? -1 : 1;
    return 0;
}

/* Sort entries: a value with its scope looked up once. */
typedef struct dx_entry {
    int scope;
    const tdm_metric_value *mv;
} dx_entry;

static int cmp_entry(const void *pa, const void *pb)
{
    const dx_entry *a = pa, *b = pb;
    return cmp_key(a->scope, a->mv->vertex, a->mv->subtask, a->mv->index,
                   b->scope, b->mv->vertex, b->mv->subtask, b->mv->index);
}

static void view_free(dx_view *w)
{
    tdm__free(w->u);
    tdm__free(w->group);
    tdm__free(w->gs);
    memset(w, 0, sizeof *w);
}

/* Index of vertex @p name in the snapshot, -1 if absent. */
static int vertex_index(const dx_view *w, const char *name)
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

static void group_stats(dx_view *w);

/* Builds the view of @p m: units sorted by (scope, vertex, subtask,
 * index) so that every value of a subtask, channel or partition is
 * found side by side (binary search, contiguous runs), and the
 * connected components of the job graph (sources joined
 * through the operators reading them).  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err view_build(dx_view *w, tdm_job *job, const tdm_metrics *m)
{
    int scopes[TDM_METRIC_COUNT_];
    size_t count = tdm_metrics_count(m), k = 0;
    dx_entry *e = NULL;

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
            scopes[mv->id] == DX_JOB)
            continue;
        e[k].scope = scopes[mv->id];
        e[k].mv = mv;
        k++;
    }
    qsort(e, k, sizeof *e, cmp_entry);
    /* Equal keys are adjacent now: one unit per run of them. */
    for (size_t i = 0; i < k; i++) {
        const tdm_metric_value *mv = e[i].mv;
        dx_unit *u = w->n ? &w->u[w->n - 1] : NULL;
        if (!u || cmp_key(u->scope, u->vertex, u->subtask, u->index,
                          e[i].scope, mv->vertex, mv->subtask,
                          mv->index) != 0) {
            u = &w->u[w->n++];
            u->scope = e[i].scope;
            u->vertex = mv->vertex;
            u->subtask = mv->subtask;
            u->index = mv->index;
        }
        if (mv->label)
            u->label = mv->label;
        u->has |= (uint64_t)1 << mv->id;
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
                w->group[uf_find(w->group, o)] =
                    uf_find(w->group, (int)i);
        }
    }
    for (size_t i = 0; i < w->n_vertices; i++)
        w->group[i] = uf_find(w->group, (int)i);
    /* Units are sorted by vertex: one lookup per run of a vertex. */
    for (size_t i = 0; i < w->n; i++) {
        dx_unit *u = &w->u[i];
        if (i > 0 && cmp_str(u->vertex, u[-1].vertex) == 0) {
            u->group = u[-1].group;
        } else {
            int vi = vertex_index(w, u->vertex);
            u->group = vi < 0 ? -1 : w->group[vi];
        }
    }
    group_stats(w);
    tdm__free(e);
    return TDM_OK;
fail:
    tdm__free(e);
    view_free(w);
    return TDM_ERR_NOMEM;
}

static int has(const dx_unit *u, tdm_metric id)
{
    return u && (u->has >> id) & 1;
}

/* The value of @p id in @p u, or @p dflt when absent. */
static int64_t val(const dx_unit *u, tdm_metric id, int64_t dflt)
{
    return has(u, id) ? u->v[id] : dflt;
}

/* The position of the first unit at or after (scope, vertex, subtask,
 * index) in the sorted units. */
static size_t lower_bound(const dx_view *w, int scope, const char *vertex,
                          int subtask, int index)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const dx_unit *u = &w->u[mid];
        if (cmp_key(u->scope, u->vertex, u->subtask, u->index, scope,
                    vertex, subtask, index) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The unit of (scope, vertex, subtask, index), by binary search. */
static const dx_unit *view_find(const dx_view *w, int scope,
                                const char *vertex, int subtask, int index)
{
    size_t i = lower_bound(w, scope, vertex, subtask, index);
    const dx_unit *u = i < w->n ? &w->u[i] : NULL;
    if (u && cmp_key(u->scope, u->vertex, u->subtask, u->index, scope,
                     vertex, subtask, index) == 0)
        return u;
    return NULL;
}

/* Sum, minimum or maximum of a VERTEX metric over the subtasks of
 * @p vertex (all vertices when NULL).  *found receives how many subtasks
 * had the value. */
enum { AGG_SUM, AGG_MIN, AGG_MAX };
static int64_t vertex_agg(const dx_view *w, const char *vertex,
                          tdm_metric id, int how, int *found)
{
    int64_t r = how == AGG_MIN ? INT64_MAX : how == AGG_MAX ? INT64_MIN : 0;
    int n = 0;
    for (size_t i = 0; i < w->n; i++) {
        const dx_unit *u = &w->u[i];
        if (u->scope != DX_VERTEX || !has(u, id) ||
            (vertex && cmp_str(u->vertex, vertex) != 0))
            continue;
        n++;
        if (how == AGG_SUM)
            r = tdm__time_add_sat(r, u->v[id]);
        else if (how == AGG_MIN ? u->v[id] < r : u->v[id] > r)
            r = u->v[id];
    }
    if (found)
        *found = n;
    return n ? r : 0;
}

/* The node of the job named @p name, NULL without a job. */
static tdm_node *node_of(const dx_view *w, const char *name)
{
    return w->job && name ? tdm_job_node(w->job, name) : NULL;
}

/* 1 when @p vertex lists @p input among its inputs. */
static int reads(const tdm_vertex_info *vi, const char *input)
{
    for (int j = 0; vi && j < vi->n_inputs; j++)
        if (strcmp(vi->inputs[j], input) == 0)
            return 1;
    return 0;
}

/* ====================================================================== */
/* Words: times, durations, counts                                         */
/* ====================================================================== */

/* ISO-8601 UTC with milliseconds; "no watermark yet" and "end of input"
 * for the two sentinels. */
static const char *fmt_time(tdm_time_ms t, char *buf, size_t n)
{
    if (t == TDM_TIME_MIN) {
        snprintf(buf, n, "no watermark yet");
        return buf;
    }
    if (t == TDM_TIME_MAX) {
        snprintf(buf, n, "end of input");
        return buf;
    }
    if (!tdm_time_format(t, TDM_TIME_FORMAT_MILLIS, buf, n))
        snprintf(buf, n, "%" PRId64 " ms", t);
    return buf;}

/* A duration for people: "250ms", "2.5s", "42s", "4m12s", "1h5m",
 * "3d4h". */
static const char *fmt_dur(int64_t ms, char *buf, size_t n)
{
    const char *sign = "";
    uint64_t a;
    if (ms < 0) {
        sign = "-";
        a = (uint64_t)0 - (uint64_t)ms;
    } else {
        a = (uint64_t)ms;
    }
    if (a < 1000)
        snprintf(buf, n, "%s%" PRIu64 "ms", sign, a);
    else if (a < 10000)
        snprintf(buf, n, "%s%" PRIu64 ".%" PRIu64 "s", sign, a / 1000,
                 a % 1000 / 100);
    else if (a < 60000)
        snprintf(buf, n, "%s%" PRIu64 "s", sign, a / 1000);
    else if (a < 3600000)
        snprintf(buf, n, "%s%" PRIu64 "m%" PRIu64 "s", sign, a / 60000,
                 a / 1000 % 60);
    else if (a < 86400000)
        snprintf(buf, n, "%s%" PRIu64 "h%" PRIu64 "m", sign, a / 3600000,
                 a / 60000 % 60);
    else
        snprintf(buf, n, "%s%" PRIu64 "d%" PRIu64 "h", sign, a / 86400000,
                 a / 3600000 % 24);
    return buf;
}

/* A count with thousands separators ("1,234,567"). */
static const char *fmt_count(int64_t v, char *buf, size_t n)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    int start = tmp[0] == '-', o = 0;
    for (int i = 0; i < len && (size_t)o + 1 < n; i++) {
        if (i > start && (len - i) % 3 == 0 && (size_t)o + 2 < n)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = 0;
    return buf;
}

/* Rounds a duration up to a value a person would write in a job file:
 * 10 ms steps below 1 s, whole seconds below 1 min, 10 s steps below
 * 10 min, whole minutes below 1 h, then 10 min steps. */
static int64_t round_up_nice(int64_t ms)
{
    int64_t step;
    if (ms <= 0)
        return 0;
    if (ms < 1000)
        step = 10;
    else if (ms < 60000)
        step = 1000;
    else if (ms < 600000)
        step = 10000;
    else if (ms < 3600000)
        step = 60000;
    else
        step = 600000;
    if (ms > INT64_MAX - step)
        return ms;
    return (ms + step - 1) / step * step;
}

/* A duration as a job file value ("30s", "1m30s", "250ms"). */
static const char *fmt_conf(int64_t ms, char *buf, size_t n)
{
    int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60,
            r = ms % 1000;
    int o = 0;
    buf[0] = 0;
    if (ms <= 0) {
        snprintf(buf, n, "0");
        return buf;
    }
    if (h)
        o += snprintf(buf + o, n - (size_t)o, "%" PRId64 "h", h);
    if (m && (size_t)o < n)
        o += snprintf(buf + o, n - (size_t)o, "%" PRId64 "m", m);
    if (s && (size_t)o < n)
        o += snprintf(buf + o, n - (size_t)o, "%" PRId64 "s", s);
    if (r && (size_t)o < n)
        snprintf(buf + o, n - (size_t)o, "%" PRId64 "ms", r);
    return buf;
}

/* A watermark as REST JSON: integer ms, null (none yet), "end". */
static json_t *json_wm(tdm_time_ms t)
{
    if (t == TDM_TIME_MIN)
        return json_null();
    if (t == TDM_TIME_MAX)
        return json_string("end");
    return json_integer(t);
}

/* Appends a formatted string to a JSON array (best effort: a failed
 * allocation is caught by the caller's final check of *oom). */
static void add_str(json_t *arr, int *oom, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_str(json_t *arr, int *oom, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (json_array_append_new(arr, json_string(buf)) != 0)
        *oom = 1;
}

/* Sets @p key of @p obj, noting a failure in *oom. */
static void set_new(json_t *obj, const char *key, json_t *v, int *oom)
{
    if (!v || json_object_set_new(obj, key, v) != 0)
        *oom = 1;
}

/* ====================================================================== */
/* The job's configuration, as the rules need it                          */
/* ====================================================================== */

/* Window trigger choices (conf_table.def order). */
enum { TRG_DEFAULT = 0, TRG_EVENT, TRG_PROC, TRG_COUNT, TRG_CONT,
       TRG_NEVER };

/* The period at which windows of operator @p n end: a tumbling window's
 * size, a sliding window's slide, a session's gap; 0 when none (global
 * windows, interval joins). */
static int64_t window_period(tdm_node *n)
{
    if (!n)
        return 0;
    const char *type = tdm__node_str(n, "window.type");
    if (n->kind == TDM_NODE_JOIN) {
        if (strcmp(tdm__node_str(n, "type"), "window") != 0)
            return 0;
        if (strcmp(type, "sliding") == 0)
            return tdm__node_int(n, "window.slide");
        return tdm__node_int(n, "window.size");
    }
    if (strcmp(type, "sliding") == 0)
        return tdm__node_int(n, "window.slide");
    if (strcmp(type, "session") == 0)
        return tdm__node_int(n, "window.gap");
    if (strcmp(type, "global") == 0)
        return 0;
    return tdm__node_int(n, "window.size");
}

/* How far a partition of source @p src must be behind the next one to
 * hold a window back: the shortest period of the windows reading it
 * (1 s when none of them has one). */
static int64_t hold_threshold(const dx_view *w, const char *src)
{
    int64_t best = 0;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (!reads(vi, src))
            continue;
        int64_t p = window_period(node_of(w, vi->name));
        if (p > 0 && (best == 0 || p < best))
            best = p;
    }
    return best > 0 ? best : 1000;
}

/* A source's idle timeout (0: none, or no job to ask). */
static int64_t idle_timeout(const dx_view *w, const char *src)
{
    tdm_node *n = node_of(w, src);
    return n ? tdm__node_int(n, "watermark.idle_timeout") : 0;
}

/* ====================================================================== */
/* The culprit                                                             */
/* ====================================================================== */

static int part_active(const dx_unit *u)
{
    return u->scope == DX_PARTITION && has(u, TDM_METRIC_P_WM) &&
           !val(u, TDM_METRIC_P_IDLE, 0) && !val(u, TDM_METRIC_P_FINISHED, 0);
}

/* Keeps in @p top the two units with the smallest key (@p sign 1) or
 * largest (@p sign -1) value of metric @p id, first seen first on ties. */
static void top2(const dx_unit **top, const dx_unit *u, tdm_metric id,
                 int sign)
{
    int64_t x = u->v[id];
    if (!top[0] || (sign > 0 ? x < top[0]->v[id] : x > top[0]->v[id])) {
        top[1] = top[0];
        top[0] = u;
    } else if (!top[1] ||
               (sign > 0 ? x < top[1]->v[id] : x > top[1]->v[id])) {
        top[1] = u;
    }
}

/* Fills w->gs: per connected part, the extremes of its active
 * partitions. */
static void group_stats(dx_view *w)
{
    for (size_t i = 0; i < w->n; i++) {
        const dx_unit *u = &w->u[i];
        if (!part_active(u) || u->group < 0)
            continue;
        dx_gstat *g = &w->gs[u->group];
        g->n++;
        top2(g->lo, u, TDM_METRIC_P_WM, 1);
        top2(g->hi, u, TDM_METRIC_P_WM, -1);
        if (has(u, TDM_METRIC_P_LAST_AGE))
            top2(g->fresh, u, TDM_METRIC_P_LAST_AGE, 1);
    }
}

/* What the other active partitions of @p u's part of the job show. */
typedef struct dx_others {
    int n;                        /* how many */
    const dx_unit *lo, *hi;       /* lowest and highest watermark */
    int64_t fresh_age;            /* the freshest one's silence (-1) */
} dx_others;

static dx_others others_of(const dx_view *w, const dx_unit *u)
{
    dx_others r = { 0, NULL, NULL, -1 };
    if (u->group < 0)
        return r;
    const dx_gstat *g = &w->gs[u->group];
    const dx_unit *f = g->fresh[0] == u ? g->fresh[1] : g->fresh[0];
    r.n = g->n - (part_active(u) ? 1 : 0);
    r.lo = g->lo[0] == u ? g->lo[1] : g->lo[0];
    r.hi = g->hi[0] == u ? g->hi[1] : g->hi[0];
    r.fresh_age = f ? f->v[TDM_METRIC_P_LAST_AGE] : -1;
    return r;
}

/* The lowest active partition of the job and the next lowest active
 * partition of the same connected part of the graph (sources that share
 * no operator do not hold each other back).  Among partitions tied at
 * the lowest watermark, the first with a strictly higher next one. */
static void find_culprit(const dx_view *w, dx_culprit *c)
{
    tdm_time_ms low = TDM_TIME_MAX;
    int any = 0;
    memset(c, 0, sizeof *c);
    c->pub.last_record_age_ms = -1;
    c->other_age_ms = -1;
    for (size_t i = 0; i < w->n; i++)
        if (part_active(&w->u[i])) {
            any = 1;
            if (w->u[i].v[TDM_METRIC_P_WM] < low)
                low = w->u[i].v[TDM_METRIC_P_WM];
        }
    if (!any || low == TDM_TIME_MAX)
        return;
    for (size_t i = 0; i < w->n; i++) {
        const dx_unit *u = &w->u[i];
        if (!part_active(u) || u->v[TDM_METRIC_P_WM] != low)
            continue;
        dx_others o = others_of(w, u);
        const dx_unit *next = o.lo;
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
        c->pub.behind_ms = low == TDM_TIME_MIN
                               ? -1
                               : tdm__time_sub_sat(c->pub.next, low);
        c->pub.last_record_age_ms = val(u, TDM_METRIC_P_LAST_AGE, -1);
        return;
    }
}

/* Finds the culprit in a snapshot (server.h).  A snapshot that cannot be
 * indexed (no memory) has none. */
void tdm__find_culprit(const tdm_metrics *m, tdm__culprit *out)
{
    dx_view w;
    dx_culprit c;
    memset(out, 0, sizeof *out);
    out->last_record_age_ms = -1;
    if (!m || view_build(&w, NULL, m) != TDM_OK)
        return;
    find_culprit(&w, &c);
    *out = c.pub;
    view_free(&w);
}

/* 1 when partition @p u has been silent for long compared with the
 * freshest other partition it competes with (@p other_age, -1 unknown):
 * never read a record, or silent for DX_STALL_MS and ten times longer. */
static int stalled(const dx_unit *u, int64_t other_age)
{
    int64_t age = val(u, TDM_METRIC_P_LAST_AGE, -1);
    if (has(u, TDM_METRIC_P_RECORDS) && u->v[TDM_METRIC_P_RECORDS] == 0)
        return 1;
    if (age < DX_STALL_MS)
        return 0;
    return other_age < 0 || other_age > INT64_MAX / 10 ||
           age >= other_age * 10;
}

/* A partition's name for text: "p3" (quoted), or "#2" without one. */
static const char *part_name(const dx_unit *u, char *buf, size_t n)
{
    if (u->label && *u->label)
        snprintf(buf, n, "\"%s\"", u->label);
    else
        snprintf(buf, n, "#%d", u->index);
    return buf;
}

/* An idle timeout to recommend for a source: 30 s, or half the stall it
 * should cut when that is shorter (@p stall_age, -1 unknown), but never
 * below what the healthy partitions need: 5 x the freshest one's silence
 * (@p other_age), 2 watermark intervals and 1 s. */
static int64_t suggest_idle(const dx_view *w, const char *src,
                            int64_t other_age, int64_t stall_age)
{
    tdm_node *n = node_of(w, src);
    int64_t interval = n ? tdm__node_int(n, "watermark.interval") : 200;
    int64_t floor_ms = 1000, target = 30000;
    if (interval > 0 && interval < INT64_MAX / 2 && interval * 2 > floor_ms)
        floor_ms = interval * 2;
    if (other_age > 0 && other_age < INT64_MAX / 5 &&
        other_age * 5 > floor_ms)
        floor_ms = other_age * 5;
    if (stall_age > 0 && stall_age / 2 < target)
        target = stall_age / 2;
    if (target < floor_ms)
        target = floor_ms;
    return round_up_nice(target);
}

/* ====================================================================== */
/* Findings                                                                */
/* ====================================================================== */

enum { SEV_CRITICAL = 0, SEV_WARNING, SEV_INFO };
static const char *const sev_name[] = { "critical", "warning", "info" };

/* The findings being built; sorted by severity at the end. */
typedef struct dx_out {
    json_t *items[3];             /* one array per severity */
    int oom;
} dx_out;

/* Starts a finding: its object, with evidence array.  NULL on NOMEM. */
static json_t *finding(dx_out *o, int sev, const char *code,
                       const char *vertex, int subtask, int partition,
                       const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static json_t *finding(dx_out *o, int sev, const char *code,
                       const char *vertex, int subtask, int partition,
                       const char *fmt, ...)
{
    char title[512];
    va_list ap;
    json_t *f = json_object();
    if (!f) {
        o->oom = 1;
        return NULL;
    }
    va_start(ap, fmt);
    vsnprintf(title, sizeof title, fmt, ap);
    va_end(ap);
    set_new(f, "severity", json_string(sev_name[sev]), &o->oom);
    set_new(f, "code", json_string(code), &o->oom);
    set_new(f, "title", json_string(title), &o->oom);
    set_new(f, "evidence", json_array(), &o->oom);
    set_new(f, "fix", json_string(""), &o->oom);
    if (vertex)
        set_new(f, "vertex", json_string(vertex), &o->oom);
    if (subtask >= 0)
        set_new(f, "subtask", json_integer(subtask), &o->oom);
    if (partition >= 0)
        set_new(f, "partition", json_integer(partition), &o->oom);
    if (json_array_append_new(o->items[sev], f) != 0) {
        o->oom = 1;
        return NULL;
    }
    return f;
}

static json_t *evidence(json_t *f)
{
    return json_object_get(f, "evidence");
}

static void set_fix(dx_out *o, json_t *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_fix(dx_out *o, json_t *f, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_new(f, "fix", json_string(buf), &o->oom);
}

/* Evidence lines on the operators that read source @p src: where their
 * input watermark stands (what the partition holds back). */
static void consumer_evidence(const dx_view *w, dx_out *o, json_t *ev,
                              const char *src)
{
    char t[64], c[32];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int n = 0;
        if (!reads(vi, src))
            continue;
        int64_t in = vertex_agg(w, vi->name, TDM_METRIC_WM_INPUT, AGG_MIN,
                                &n);
        int64_t st = vertex_agg(w, vi->name, TDM_METRIC_STATE_WINDOWS,
                                AGG_SUM, NULL);
        if (!n)
            continue;
        add_str(ev, &o->oom,
                "%s %s reads it: its lowest input watermark is %s, so no "
                "window ending after that can fire (%s %s open)",
                vi->kind == TDM_NODE_JOIN ? "join" : "window", vi->name,
                fmt_time(in, t, sizeof t), fmt_count(st, c, sizeof c),
                vi->kind == TDM_NODE_JOIN
                    ? (st == 1 ? "record buffered" : "records buffered")
                    : (st == 1 ? "window" : "windows"));
    }
}

/* HELD_BACK_PARTITION from the culprit.
 *
 * Severity follows what the lag costs: a culprit behind the next
 * partition by at least the shortest window period of its readers holds
 * at least one window that every other partition has completed, so that
 * window cannot fire (critical); a smaller lag only delays results
 * (warning; reported at all only when the partition is stalled, see
 * tdm__diagnose).  The fix depends on what the partition does:
 *   - no idle timeout: set one (suggest_idle), and look at the producer;
 *   - an idle timeout that will run out: it will be left out soon;
 *   - still sending, but old data: the producer is behind. */
static void rule_held_back(const dx_view *w, const dx_culprit *c,
                           const tdm__history *hist, dx_out *o)
{
    char a[64], b[64], d[32], e[32], nm[160], nx[160], fx[32];
    const dx_unit *u = c->unit;
    int64_t threshold = hold_threshold(w, u->vertex);
    int64_t age = c->pub.last_record_age_ms;
    int64_t idle = idle_timeout(w, u->vertex);
    int is_stalled = stalled(u, c->other_age_ms);
    int crit = c->pub.behind_ms < 0 || c->pub.behind_ms >= threshold;
    json_t *f, *ev;

    part_name(u, nm, sizeof nm);
    part_name(c->next, nx, sizeof nx);
    if (c->pub.behind_ms < 0)
        f = finding(o, SEV_CRITICAL, "HELD_BACK_PARTITION", u->vertex,
                    u->subtask, u->index,
                    "Partition %s of source %s has no watermark yet and "
                    "holds every window back",
                    nm, u->vertex);
    else
        f = finding(o, crit ? SEV_CRITICAL : SEV_WARNING,
                    "HELD_BACK_PARTITION", u->vertex, u->subtask, u->index,
                    "Partition %s of source %s holds the watermark back by "
                    "%s",
                    nm, u->vertex, fmt_dur(c->pub.behind_ms, d, sizeof d));
    if (!f)
        return;
    if (u->label)
        set_new(f, "partitionName", json_string(u->label), &o->oom);
    ev = evidence(f);
    add_str(ev, &o->oom,
            "partition %s (index %d of subtask %d of source %s) is at %s; "
            "the next lowest partition, %s of %s subtask %d, is at %s",
            nm, u->index, u->subtask, u->vertex,
            fmt_time(c->pub.watermark, a, sizeof a), nx, c->next->vertex,
            c->next->subtask, fmt_time(c->pub.next, b, sizeof b));
    if (age >= 0)
        add_str(ev, &o->oom,
                "its last record arrived %s ago (since %s); the other "
                "partitions' latest came %s ago",
                fmt_dur(age, d, sizeof d),
                fmt_time(tdm__time_sub_sat(w->now, age), a, sizeof a),
                c->other_age_ms >= 0 ? fmt_dur(c->other_age_ms, e, sizeof e)
                                     : "an unknown time");
    /* The history samples once a second and remembers since when the
     * same partition has been the culprit. */
    tdm_time_ms since;
    if (tdm__history_culprit_since(hist, u->vertex, u->subtask, u->index,
                                   &since))
        add_str(ev, &o->oom,
                "it has held the watermark back since %s (%s)",
                fmt_time(since, a, sizeof a),
                fmt_dur(tdm__time_sub_sat(w->now, since), d, sizeof d));
    if (has(u, TDM_METRIC_P_RECORDS))
        add_str(ev, &o->oom, "it has read %s record%s%s%s",
                fmt_count(u->v[TDM_METRIC_P_RECORDS], d, sizeof d),
                u->v[TDM_METRIC_P_RECORDS] == 1 ? "" : "s",
                has(u, TDM_METRIC_P_MAX_TS) ? "; highest timestamp " : "",
                has(u, TDM_METRIC_P_MAX_TS)
                    ? fmt_time(u->v[TDM_METRIC_P_MAX_TS], a, sizeof a)
                    : "");
    consumer_evidence(w, o, ev, u->vertex);
    if (idle > 0)
        add_str(ev, &o->oom,
                "watermark.idle_timeout of %s is %s, but the partition is "
                "not idle",
                u->vertex, fmt_dur(idle, d, sizeof d));
    else
        add_str(ev, &o->oom, "source %s has no watermark.idle_timeout",
                u->vertex);
    if (idle <= 0) {
        int64_t s = suggest_idle(w, u->vertex, c->other_age_ms, age);
        fmt_conf(s, fx, sizeof fx);
        set_fix(o, f,
                "Set sources.%s.watermark.idle_timeout to %s (--set "
                "sources.%s.watermark.idle_timeout=%s) so that a partition "
                "silent for that long is left out of the minimum; and check "
                "the producer of partition %s, which %s.",
                u->vertex, fx, u->vertex, fx, nm,
                is_stalled ? "has stopped sending"
                           : "is behind the others");
    } else if (is_stalled || (age >= 0 && age < idle)) {
        set_fix(o, f,
                "Check the producer of partition %s; it will be marked idle "
                "(and left out of the minimum) after %s without records - "
                "lower sources.%s.watermark.idle_timeout to release windows "
                "sooner.",
                nm, fmt_dur(idle, d, sizeof d), u->vertex);
    } else {
        set_fix(o, f,
                "Check the producer of partition %s: it still sends, but "
                "with timestamps %s behind the other partitions (a backlog "
                "or a clock behind); windows fire as it catches up.",
                nm, fmt_dur(c->pub.behind_ms, d, sizeof d));
    }
}

/* HELD_BACK_PARTITION for an operator channel when no partition stands
 * out (a source without partition metrics): the active channel with the
 * lowest watermark, a window period or more below the next one. */
static void rule_held_channel(const dx_view *w, dx_out *o)
{
    char a[64], b[64], d[32];
    for (size_t i = 0; i < w->n; i++) {
        const dx_unit *u = &w->u[i], *low = NULL, *next = NULL;
        if (u->scope != DX_VERTEX)
            continue;
        /* The subtask's channels are one run of the CHANNEL scope. */
        for (size_t j = lower_bound(w, DX_CHANNEL, u->vertex, u->subtask,
                                    INT32_MIN);
             j < w->n; j++) {
            const dx_unit *ch = &w->u[j];
            if (ch->scope != DX_CHANNEL || ch->subtask != u->subtask ||
                cmp_str(ch->vertex, u->vertex) != 0)
                break;
            if (!has(ch, TDM_METRIC_CH_WM) ||
                val(ch, TDM_METRIC_CH_IDLE, 0) ||
                val(ch, TDM_METRIC_CH_ENDED, 0))
                continue;
            if (!low || ch->v[TDM_METRIC_CH_WM] < low->v[TDM_METRIC_CH_WM]) {
                next = low;
                low = ch;
            } else if (!next || ch->v[TDM_METRIC_CH_WM] <
                                    next->v[TDM_METRIC_CH_WM]) {
                next = ch;
            }
        }
        if (!low || !next)
            continue;
        tdm_time_ms lw = low->v[TDM_METRIC_CH_WM];
        tdm_time_ms nw = next->v[TDM_METRIC_CH_WM];
        int64_t per = window_period(node_of(w, u->vertex));
        if (nw <= lw || (lw != TDM_TIME_MIN &&
                         tdm__time_sub_sat(nw, lw) < (per > 0 ? per : 1000)))
            continue;
        json_t *f = finding(o, SEV_CRITICAL, "HELD_BACK_PARTITION",
                            u->vertex, u->subtask, -1,
                            "Channel %d (%s) holds %s subtask %d back by %s",
                            low->index, low->label ? low->label : "?",
                            u->vertex, u->subtask,
                            lw == TDM_TIME_MIN
                                ? "its whole input"
                                : fmt_dur(tdm__time_sub_sat(nw, lw), d,
                                          sizeof d));
        if (!f)
            return;
        set_new(f, "channel", json_integer(low->index), &o->oom);
        add_str(evidence(f), &o->oom,
                "channel %d (%s) is at %s; channel %d (%s) is at %s",
                low->index, low->label ? low->label : "?",
                fmt_time(lw, a, sizeof a), next->index,
                next->label ? next->label : "?", fmt_time(nw, b, sizeof b));
        set_fix(o, f,
                "Check the upstream source subtask %s: it sends no newer "
                "watermark (no data, or data behind the others); an idle "
                "timeout on its source lets the others go on.",
                low->label ? low->label : "?");
        return;
    }
}

/* NO_DATA_NO_IDLE: active partitions without data for long, in sources
 * without an idle timeout, competing with partitions that do get data.
 * The culprit is already reported.  A silent partition that is the
 * lowest of its part of the job (alone or tied: ties have no culprit)
 * while another partition is higher holds windows back: critical.  One
 * that is not the lowest will be once the others pass it: warning. */
static void rule_no_data(const dx_view *w, const dx_culprit *c, dx_out *o)
{
    char a[64], d[32], nm[160], fx[32];
    for (size_t i = 0; i < w->n; i++) {
        const dx_unit *u = &w->u[i];
        if (!part_active(u) || u == c->unit ||
            idle_timeout(w, u->vertex) > 0)
            continue;
        dx_others ot = others_of(w, u);
        int64_t fresh = ot.fresh_age;
        if (ot.n == 0 || !stalled(u, fresh))
            continue;
        tdm_time_ms others_min = ot.lo->v[TDM_METRIC_P_WM];
        tdm_time_ms others_max = ot.hi->v[TDM_METRIC_P_WM];
        tdm_time_ms pw = u->v[TDM_METRIC_P_WM];
        /* Holding (alone or tied) the minimum below someone: critical. */
        int holds = pw <= others_min && pw < others_max;
        int64_t age = val(u, TDM_METRIC_P_LAST_AGE, -1);
        int64_t recs = val(u, TDM_METRIC_P_RECORDS, -1);
        part_name(u, nm, sizeof nm);
        json_t *f = finding(o, holds ? SEV_CRITICAL : SEV_WARNING,
                            "NO_DATA_NO_IDLE", u->vertex, u->subtask,
                            u->index,
                            recs == 0
                                ? "Partition %s of source %s has had no "
                                  "data%s and there is no idle timeout"
                                : "Partition %s of source %s has had no "
                                  "data for %s and there is no idle timeout",
                            nm, u->vertex,
                            recs == 0 ? "" : fmt_dur(age, d, sizeof d));
        if (!f)
            return;
        if (u->label)
            set_new(f, "partitionName", json_string(u->label), &o->oom);
        json_t *ev = evidence(f);
        if (recs == 0)
            add_str(ev, &o->oom, "partition %s has read no record", nm);
        else if (age >= 0)
            add_str(ev, &o->oom, "its last record arrived %s ago (%s)",
                    fmt_dur(age, d, sizeof d),
                    fmt_time(tdm__time_sub_sat(w->now, age), a, sizeof a));
        add_str(ev, &o->oom, "its watermark is %s%s", fmt_time(pw, a,
                                                              sizeof a),
                holds ? ", the lowest: it holds the minimum back" : "");
        if (fresh >= 0)
            add_str(ev, &o->oom,
                    "the other partitions received records %s ago",
                    fmt_dur(fresh, d, sizeof d));
        int64_t s = suggest_idle(w, u->vertex, fresh, age);
        fmt_conf(s, fx, sizeof fx);
        set_fix(o, f,
                "Set sources.%s.watermark.idle_timeout to %s (--set "
                "sources.%s.watermark.idle_timeout=%s), or check the "
                "producer of partition %s.",
                u->vertex, fx, u->vertex, fx, nm);
    }
}

/* ALL_IDLE: every unfinished source partition is idle.  The valves then
 * flush the highest watermark once and wait: no window beyond it can
 * fire until a record arrives.  Only meaningful while the job runs (a
 * finished job's partitions are finished, not idle). */
static void rule_all_idle(const dx_view *w, dx_out *o)
{
    char a[64], d[32];
    int n_idle = 0, n_live = 0;
    int64_t youngest = -1;
    if (!w->running)
        return;
    for (size_t i = 0; i < w->n; i++) {
        const dx_unit *u = &w->u[i];
        if (u->scope != DX_PARTITION || val(u, TDM_METRIC_P_FINISHED, 0))
            continue;
        n_live++;
        if (val(u, TDM_METRIC_P_IDLE, 0)) {
            int64_t age = val(u, TDM_METRIC_P_LAST_AGE, -1);
            n_idle++;
            if (age >= 0 && (youngest < 0 || age < youngest))
                youngest = age;
        }
    }
    if (n_live == 0 || n_idle < n_live)
        return;
    json_t *f = finding(o, SEV_CRITICAL, "ALL_IDLE", NULL, -1, -1,
                        "Every source partition is idle: the watermark "
                        "cannot move");
    if (!f)
        return;
    json_t *ev = evidence(f);
    add_str(ev, &o->oom, "%d of %d unfinished partitions are idle", n_idle,
            n_live);
    if (youngest >= 0)
        add_str(ev, &o->oom, "the most recent record arrived %s ago",
                fmt_dur(youngest, d, sizeof d));
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int k = 0;
        if (vi->kind != TDM_NODE_WINDOW && vi->kind != TDM_NODE_JOIN)
            continue;
        int64_t wm = vertex_agg(w, vi->name, TDM_METRIC_WM_INPUT, AGG_MIN, &k);
        if (k)
            add_str(ev, &o->oom, "%s %s stays at watermark %s",
                    vi->kind == TDM_NODE_JOIN ? "join" : "window", vi->name,
                    fmt_time(wm, a, sizeof a));
    }
    set_fix(o, f,
            "Windows fire only when data moves the watermark: check that the "
            "producers still send. If the input has ended for good, end it "
            "(close the stream or stop the job): end of input fires every "
            "window.");
}

/* TIMESTAMP_UNIT: a source whose timestamps look like another unit.  The
 * runtime judges the first 100 timestamps of each partition and
 * publishes its suspicion per subtask (timestampUnitSuspect); the first
 * subtask that suspects something names the unit. */
static void rule_unit(const dx_view *w, dx_out *o)
{
    static const char *const unit_word[] = { "milliseconds", "seconds",
                                             "microseconds", "nanoseconds" };
    static const char *const unit_key[] = { "ms", "s", "us", "ns" };
    char a[64], b[64];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int64_t suspect = 0, sub = -1;
        if (vi->kind != TDM_NODE_SOURCE)
            continue;
        for (size_t j = 0; j < w->n; j++) {
            const dx_unit *u = &w->u[j];
            if (u->scope == DX_VERTEX && cmp_str(u->vertex, vi->name) == 0 &&
                val(u, TDM_METRIC_TS_UNIT, 0) > 0 && suspect == 0) {
                suspect = u->v[TDM_METRIC_TS_UNIT];
                sub = u->subtask;
            }
        }
        if (suspect < 1 || suspect > 3)
            continue;
        int n = 0;
        int64_t mx = vertex_agg(w, vi->name, TDM_METRIC_MAX_TS, AGG_MAX, &n);
        tdm_node *node = node_of(w, vi->name);
        const char *conf = node ? tdm__node_str(node, "timestamp.unit") : "";
        json_t *f = finding(o, SEV_CRITICAL, "TIMESTAMP_UNIT", vi->name,
                            (int)sub, -1,
                            "Timestamps of source %s look like %s, not "
                            "milliseconds",
                            vi->name, unit_word[suspect]);
        if (!f)
            return;
        json_t *ev = evidence(f);
        add_str(ev, &o->oom, "timestamp.unit is %s", *conf ? conf : "ms");
        if (n) {
            /* The highest timestamp converted from the suspected unit. */
            tdm_time_ms as_unit = suspect == 2   ? mx / 1000
                                  : suspect == 3 ? mx / 1000000
                                  : (mx > INT64_MAX / 1000 ||
                                     mx < INT64_MIN / 1000)
                                      ? mx
                                      : mx * 1000;
            add_str(ev, &o->oom,
                    "highest timestamp %" PRId64 " reads as %s in ms, but "
                    "as %s in %s",
                    mx, fmt_time(mx, a, sizeof a),
                    fmt_time(as_unit, b, sizeof b), unit_word[suspect]);
        }
        add_str(ev, &o->oom,
                "windows are measured in the wrong unit: results and "
                "watermarks are meaningless");
        set_fix(o, f,
                "Set sources.%s.timestamp.unit: %s (--set "
                "sources.%s.timestamp.unit=%s).",
                vi->name, unit_key[suspect], vi->name, unit_key[suspect]);
    }
}

/* FUTURE_TIMESTAMPS: timestamp guard hits, per source.  A warning: the
 * guard already keeps those records out of the watermark, so the other
 * windows fire; only the far-future windows wait for the end. */
static void rule_future(const dx_view *w, dx_out *o)
{
    char a[64], d[32], c1[32];
    int64_t guard = w->job ? tdm__job_int(w->job, "timestamp_guard") : 0;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (vi->kind != TDM_NODE_SOURCE)
            continue;
        int n = 0;
        int64_t hits = vertex_agg(w, vi->name, TDM_METRIC_GUARD_HITS,
                                  AGG_SUM, NULL);
        int64_t in = vertex_agg(w, vi->name, TDM_METRIC_RECORDS_IN, AGG_SUM,
                                NULL);
        int64_t mx = vertex_agg(w, vi->name, TDM_METRIC_MAX_TS, AGG_MAX, &n);
        if (hits <= 0)
            continue;
        json_t *f = finding(o, SEV_WARNING, "FUTURE_TIMESTAMPS", vi->name,
                            -1, -1,
                            "%s record%s of source %s had timestamps far in "
                            "the future",
                            fmt_count(hits, c1, sizeof c1),
                            hits == 1 ? "" : "s", vi->name);
        if (!f)
            return;
        json_t *ev = evidence(f);
        add_str(ev, &o->oom,
                "%s of %s records lay more than timestamp_guard (%s) ahead "
                "of processing time: they are processed but do not move the "
                "watermark",
                fmt_count(hits, c1, sizeof c1),
                fmt_count(in, a, sizeof a),
                guard > 0 ? fmt_dur(guard, d, sizeof d) : "off");
        /* Guarded records may not count in maxTimestamp: say it only
         * when it shows them. */
        if (n && mx != TDM_TIME_MIN && guard > 0 &&
            tdm__time_sub_sat(mx, w->now) > guard)
            add_str(ev, &o->oom, "highest timestamp seen: %s, %s ahead of "
                                 "now",
                    fmt_time(mx, a, sizeof a),
                    fmt_dur(tdm__time_sub_sat(mx, w->now), d, sizeof d));
        add_str(ev, &o->oom,
                "their windows lie in the future and fire only at the end "
                "of input");
        set_fix(o, f,
                "Check the producer's clock and the timestamp unit of "
                "source %s; with timestamp_guard.dead_letter: true such "
                "records go to the dead_letter sink instead.",
                vi->name);
    }
}

/* The sources an operator reads whose watermark settings explain its
 * late records, as evidence; *best receives the highest P99.9 seen and
 * *bound the largest configured bound. */
static void lag_evidence(const dx_view *w, dx_out *o, json_t *ev,
                         const tdm_vertex_info *op, int64_t *best,
                         int64_t *bound, const char **best_src)
{
    char p50[32], p99[32], p999[32], mx[32], bd[32];
    *best = -1;
    *bound = 0;
    *best_src = NULL;
    for (int j = 0; j < op->n_inputs; j++) {
        const char *src = op->inputs[j];
        int n = 0;
        int64_t q50 = vertex_agg(w, src, TDM_METRIC_LAG_P50, AGG_MAX, NULL);
        int64_t q99 = vertex_agg(w, src, TDM_METRIC_LAG_P99, AGG_MAX, &n);
        int64_t q999 = vertex_agg(w, src, TDM_METRIC_LAG_P999, AGG_MAX,
                                  NULL);
        int64_t qmax = vertex_agg(w, src, TDM_METRIC_LAG_MAX, AGG_MAX, NULL);
        tdm_node *sn = node_of(w, src);
        int64_t b = sn ? tdm__node_int(sn, "watermark.max_out_of_orderness")
                       : 0;
        if (b > *bound)
            *bound = b;
        if (!n)
            continue;
        add_str(ev, &o->oom,
                "source %s: records arrive behind the highest timestamp of "
                "their partition by %s (median), %s (P99), %s (P99.9), %s "
                "(max); watermark.max_out_of_orderness is %s",
                src, fmt_dur(q50, p50, sizeof p50),
                fmt_dur(q99, p99, sizeof p99),
                fmt_dur(q999, p999, sizeof p999),
                fmt_dur(qmax, mx, sizeof mx), fmt_dur(b, bd, sizeof bd));
        if (q999 > *best) {
            *best = q999;
            *best_src = src;
        }
    }
}

/* HIGH_LATE_RATE: more than 1 % of an operator's records were too late
 * (dropped or sent to the late output).  The recommendation compares the
 * observed out-of-orderness of the sources it reads (how far records
 * arrive behind their partition's highest timestamp: the P99.9 of the
 * runtime's histogram, within 0.8 %) with the configured bound: a bound
 * at that P99.9 leaves about 0.1 % of records behind the watermark.  A
 * P99.9 already within the bound means the late records are not
 * explained by disorder inside partitions, but by partitions behind
 * others (idleness, resumed partitions). */
static void rule_late(const dx_view *w, dx_out *o)
{
    char c1[32], c2[32], c3[32], c4[32], fx[32], d[32];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (vi->kind != TDM_NODE_WINDOW && vi->kind != TDM_NODE_JOIN)
            continue;
        int64_t in = vertex_agg(w, vi->name, TDM_METRIC_RECORDS_IN, AGG_SUM,
                                NULL);
        int64_t dropped = vertex_agg(w, vi->name, TDM_METRIC_LATE_DROPPED,
                                     AGG_SUM, NULL);
        int64_t side = vertex_agg(w, vi->name, TDM_METRIC_LATE_SIDE,
                                  AGG_SUM, NULL);
        int64_t late = tdm__time_add_sat(dropped, side);
        if (in < DX_LATE_MIN_RECORDS || late <= 0 ||
            late > INT64_MAX / 1000 ||
            late * 1000 <= (int64_t)DX_LATE_PERMILLE * in)
            continue;
        /* late / in > 1 % was checked in integers above (late * 1000 >
         * 10 * in); the title shows tenths of a percent, rounded half
         * up. */
        int64_t pm = (late * 1000 * 10 / in + 5) / 10;
        json_t *f = finding(o, SEV_WARNING, "HIGH_LATE_RATE", vi->name, -1,
                            -1,
                            "%" PRId64 ".%" PRId64 "%% of the records of "
                            "%s arrived too late for their window",
                            pm / 10, pm % 10, vi->name);
        if (!f)
            return;
        json_t *ev = evidence(f);
        add_str(ev, &o->oom,
                "%s of %s records were late: %s dropped, %s sent to the "
                "late output",
                fmt_count(late, c1, sizeof c1), fmt_count(in, c2, sizeof c2),
                fmt_count(dropped, c3, sizeof c3),
                fmt_count(side, c4, sizeof c4));
        int64_t best, bound;
        const char *src;
        lag_evidence(w, o, ev, vi, &best, &bound, &src);
        if (src && best > bound) {
            int64_t rec = round_up_nice(best);
            fmt_conf(rec, fx, sizeof fx);
            set_fix(o, f,
                    "The out-of-orderness bound is too small: set "
                    "sources.%s.watermark.max_out_of_orderness to %s (the "
                    "observed P99.9 lag, rounded up; --set "
                    "sources.%s.watermark.max_out_of_orderness=%s), or keep "
                    "it and set windows.%s.allowed_lateness to %s so late "
                    "records refire their windows.",
                    src, fx, src, fx, vi->name, fx);
        } else {
            set_fix(o, f,
                    "Out-of-orderness within partitions is below the bound "
                    "(%s), so the late records come from partitions behind "
                    "the others (an idle_timeout too short, a partition "
                    "resuming with old data): set windows.%s."
                    "allowed_lateness to cover them, or raise the idle "
                    "timeout.",
                    fmt_dur(bound, d, sizeof d), vi->name);
        }
    }
}

/* TRIGGER_NEVER_FIRES_ON_EVENT_TIME: an event-time window whose trigger
 * ignores the watermark (count, processing_time, never).  Global windows
 * and processing-time windows are left alone: there the watermark has
 * nothing to fire anyway.  Critical when the trigger is "never", or when
 * no pane has fired at all while windows hold records; a warning when
 * the trigger fires, just not on event time. */
static void rule_trigger(const dx_view *w, dx_out *o)
{
    static const char *const trg_name[] = {
        "default", "event_time", "processing_time", "count",
        "continuous_event_time", "never"
    };
    char c1[32], c2[32];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        tdm_node *n = node_of(w, vi->name);
        if (vi->kind != TDM_NODE_WINDOW || !n)
            continue;
        int64_t trg = tdm__node_int(n, "trigger");
        if (strcmp(tdm__node_str(n, "window.time"), "processing") == 0 ||
            strcmp(tdm__node_str(n, "window.type"), "global") == 0 ||
            (trg != TRG_PROC && trg != TRG_COUNT && trg != TRG_NEVER))
            continue;
        int64_t panes = vertex_agg(w, vi->name, TDM_METRIC_PANES, AGG_SUM,
                                   NULL);
        int64_t open = vertex_agg(w, vi->name, TDM_METRIC_STATE_WINDOWS,
                                  AGG_SUM, NULL);
        /* Nothing has ever fired while windows pile up: critical. */
        int crit = trg == TRG_NEVER || (panes == 0 && open > 0);
        json_t *f = finding(o, crit ? SEV_CRITICAL : SEV_WARNING,
                            "TRIGGER_NEVER_FIRES_ON_EVENT_TIME", vi->name,
                            -1, -1,
                            "Window %s has event-time windows but a %s "
                            "trigger: the watermark never fires them",
                            vi->name, trg_name[trg]);
        if (!f)
            return;
        json_t *ev = evidence(f);
        if (trg == TRG_COUNT)
            add_str(ev, &o->oom,
                    "trigger: count fires a window only every %" PRId64
                    " records of one key; the rest of a window is never "
                    "emitted when its end passes",
                    tdm__node_int(n, "trigger.count"));
        else if (trg == TRG_PROC)
            add_str(ev, &o->oom,
                    "trigger: processing_time fires on the wall clock, not "
                    "when the watermark passes a window's end");
        else
            add_str(ev, &o->oom, "the never trigger fires no window at all");
        add_str(ev, &o->oom, "%s pane%s fired so far; %s window%s open",
                fmt_count(panes, c1, sizeof c1), panes == 1 ? "" : "s",
                fmt_count(open, c2, sizeof c2), open == 1 ? "" : "s");
        set_fix(o, f,
                "Remove windows.%s.trigger (the default fires each window "
                "when the watermark passes its end), or use "
                "continuous_event_time for early results.",
                vi->name);
    }
}

/* BACKPRESSURE: an operator subtask whose input queue is 3/4 full or
 * more (it, or the sink it writes, is slower than its input).  A full
 * queue stops its producers, and watermarks travel in the same queues,
 * so the watermark lags with the data.  The fullest subtask (by
 * fraction) is named; sinks are written by their operator's thread, so
 * a slow sink shows as its operator's full queue. */
static void rule_backpressure(const dx_view *w, dx_out *o)
{
    char c1[32];
    const dx_unit *worst = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const dx_unit *u = &w->u[i];
        int64_t len = val(u, TDM_METRIC_QUEUE_LEN, 0);
        int64_t cap = val(u, TDM_METRIC_QUEUE_CAP, 0);
        if (u->scope != DX_VERTEX || cap <= 0 || len * 4 < cap * 3)
            continue;
        if (!worst || len * worst->v[TDM_METRIC_QUEUE_CAP] >
                          worst->v[TDM_METRIC_QUEUE_LEN] * cap)
            worst = u;
    }
    if (!worst)
        return;
    tdm_node *n = node_of(w, worst->vertex);
    const char *sink = n ? tdm__node_str(n, "sink") : "";
    int64_t waits = vertex_agg(w, NULL, TDM_METRIC_BACKPRESSURE, AGG_SUM,
                               NULL);
    json_t *f = finding(o, SEV_WARNING, "BACKPRESSURE", worst->vertex,
                        worst->subtask, -1,
                        "%s subtask %d cannot keep up: its input queue is "
                        "full",
                        worst->vertex, worst->subtask);
    if (!f)
        return;
    json_t *ev = evidence(f);
    add_str(ev, &o->oom, "input queue of %s subtask %d: %" PRId64 " of %"
                         PRId64 " items",
            worst->vertex, worst->subtask, worst->v[TDM_METRIC_QUEUE_LEN],
            worst->v[TDM_METRIC_QUEUE_CAP]);
    add_str(ev, &o->oom, "sources waited %s times for a full queue",
            fmt_count(waits, c1, sizeof c1));
    if (*sink)
        add_str(ev, &o->oom, "%s writes its results to sink %s",
                worst->vertex, sink);
    if (*sink)
        set_fix(o, f,
                "Speed up sink %s (a slow disk, a blocked pipe on stdout) "
                "or the work of %s: raise parallelism to spread its keys, "
                "or queue.capacity to absorb bursts.",
                sink, worst->vertex);
    else
        set_fix(o, f,
                "Raise parallelism to spread the work of %s, or "
                "queue.capacity to absorb bursts.",
                worst->vertex);
}

/* WATERMARK_REGRESSIONS and BAD_RECORDS: counters that should stay 0. */
static void rule_counters(const dx_view *w, dx_out *o)
{
    char c1[32];
    int64_t reg = vertex_agg(w, NULL, TDM_METRIC_WM_REGRESSIONS, AGG_SUM,
                             NULL);
    if (reg > 0) {
        json_t *f = finding(o, SEV_WARNING, "WATERMARK_REGRESSIONS", NULL,
                            -1, -1,
                            "%s watermark%s tried to move backwards and "
                            "%s ignored",
                            fmt_count(reg, c1, sizeof c1),
                            reg == 1 ? "" : "s", reg == 1 ? "was" : "were");
        if (!f)
            return;
        for (size_t i = 0; i < w->n_vertices; i++) {
            const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
            int64_t r = vertex_agg(w, vi->name, TDM_METRIC_WM_REGRESSIONS,
                                   AGG_SUM, NULL);
            if (r > 0)
                add_str(evidence(f), &o->oom, "%s: %s", vi->name,
                        fmt_count(r, c1, sizeof c1));
        }
        set_fix(o, f,
                "Results are not affected (a watermark never goes back), but "
                "an upstream watermark is inconsistent: check punctuated "
                "markers and custom strategies for values that decrease.");
    }
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int64_t bad = vertex_agg(w, vi->name, TDM_METRIC_BAD_RECORDS,
                                 AGG_SUM, NULL);
        if (bad <= 0)
            continue;
        const char *dead = w->job ? tdm__job_str(w->job, "dead_letter") : "";
        json_t *f = finding(o, SEV_WARNING, "BAD_RECORDS", vi->name, -1, -1,
                            "%s malformed record%s in %s",
                            fmt_count(bad, c1, sizeof c1),
                            bad == 1 ? "" : "s", vi->name);
        if (!f)
            return;
        add_str(evidence(f), &o->oom,
                "records that did not parse or lacked their timestamp were "
                "skipped%s%s",
                *dead ? " and sent to " : "", dead);
        if (*dead)
            set_fix(o, f,
                    "Look at the records in sink %s: each carries its "
                    "location and the reason; fix the producer or the "
                    "source's schema and format.",
                    dead);
        else
            set_fix(o, f,
                    "Set dead_letter to a sink to see each bad record with "
                    "its location and reason; then fix the producer or the "
                    "source's schema and format.");
    }
}

/* A JOB-scope metric of the snapshot (the view keeps none), or @p dflt
 * when absent. */
static int64_t job_val(const tdm_metrics *m, tdm_metric id, int64_t dflt)
{
    for (size_t i = 0; i < tdm_metrics_count(m); i++) {
        const tdm_metric_value *mv = tdm_metrics_at(m, i);
        if (mv && mv->id == id && !mv->vertex)
            return mv->value;
    }
    return dflt;
}

/* CHECKPOINTS_FAILING: checkpoints failed since the last completed one,
 * so the sinks' output since then is hidden; critical once the failures
 * exceed checkpoint.tolerable_failed (the run failed, or restarts), a
 * warning while tolerated.  CHECKPOINTS_FAILED (warning): failures
 * earlier in the run that a completed checkpoint has covered since. */
static void rule_checkpoints(const dx_view *w, dx_out *o)
{
    int64_t failed = job_val(w->m, TDM_METRIC_CKPT_FAILED, 0);
    if (!w->job || failed == 0)
        return;
    tdm_job *job = w->job;
    int64_t in_row = job_val(w->m, TDM_METRIC_CKPT_FAILED_IN_ROW, 0);
    int64_t tol = tdm__job_int(job, "checkpoint.tolerable_failed");
    int64_t last = job_val(w->m, TDM_METRIC_CKPT_LAST_ID, -1);
    int64_t rs = job_val(w->m, TDM_METRIC_RESTARTS, 0);
    const char *dir = tdm__job_str(job, "checkpoint.dir");
    char why[sizeof job->ck_fail_msg], done[48];
    pthread_mutex_lock(&job->mmu);
    memcpy(why, job->ck_fail_msg, sizeof why);
    pthread_mutex_unlock(&job->mmu);
    if (last > 0)
        snprintf(done, sizeof done, "checkpoint %" PRId64, last);
    else
        snprintf(done, sizeof done, "the run's start");
    json_t *f = in_row == 0
        ? finding(o, SEV_WARNING, "CHECKPOINTS_FAILED", NULL, -1, -1,
                  "%" PRId64 " checkpoint%s failed earlier; checkpoint %"
                  PRId64 " completed since",
                  failed, failed == 1 ? "" : "s", last)
        : finding(o, in_row > tol ? SEV_CRITICAL : SEV_WARNING,
                  "CHECKPOINTS_FAILING", NULL, -1, -1,
                  "Checkpoint %" PRId64 " failed: %" PRId64 " in a row, %s "
                  "checkpoint.tolerable_failed (%" PRId64 ")",
                  job_val(w->m, TDM_METRIC_CKPT_FAILED_ID, 0), in_row,
                  in_row > tol ? "more than" : "within", tol);
    if (!f)
        return;
    json_t *ev = evidence(f);
    add_str(ev, &o->oom, "the last failure: %s", why);
    add_str(ev, &o->oom, "the last completed checkpoint: %s",
            last > 0 ? done : "none in this run");
    add_str(ev, &o->oom, "restarts: %" PRId64 " (restart.strategy %s)", rs,
            tdm__job_str(job, "restart.strategy"));
    if (in_row == 0) {
        set_fix(o, f, "Check the free space and health of %s: the next "
                      "failures may fail the job.", dir);
        return;
    }
    add_str(ev, &o->oom, "results written since %s are pending (hidden "
                         "parts) until a checkpoint completes",
            done);
    set_fix(o, f,
            "Make room in %s (or fix the disk or its permissions). %s "
            "resumes from the newest checkpoint with the exact output; "
            "restart.strategy exponential-delay restarts it in the "
            "process, and checkpoint.tolerable_failed rides out short "
            "outages (the output stays hidden meanwhile).",
            dir,
            in_row > tol && !atomic_load(&job->restarting)
                ? "Then run the job again: it"
                : "The job");
}

/* The "all clear" finding, with the numbers that show it. */
static void rule_all_clear(const dx_view *w, dx_out *o)
{
    char a[64], d[32], c1[32], c2[32];
    int n = 0, k = 0;
    json_t *f = finding(o, SEV_INFO, "ALL_CLEAR", NULL, -1, -1,
                        "Nothing holds the watermark back; no problem "
                        "found");
    if (!f)
        return;
    json_t *ev = evidence(f);
    int64_t wm = vertex_agg(w, NULL, TDM_METRIC_WM_OUTPUT, AGG_MIN, &n);
    int64_t lag = vertex_agg(w, NULL, TDM_METRIC_WM_LAG, AGG_MAX, &k);
    add_str(ev, &o->oom, "the job %s", w->running ? "is running"
                                                  : "is not running");
    if (n)
        add_str(ev, &o->oom, "lowest output watermark: %s%s%s",
                fmt_time(wm, a, sizeof a), k ? ", lag " : "",
                k ? fmt_dur(lag, d, sizeof d) : "");
    int64_t in = 0, out = 0;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (vi->kind == TDM_NODE_SOURCE)
            in += vertex_agg(w, vi->name, TDM_METRIC_RECORDS_IN, AGG_SUM,
                             NULL);
        else if (vi->kind == TDM_NODE_WINDOW || vi->kind == TDM_NODE_JOIN)
            out += vertex_agg(w, vi->name, TDM_METRIC_RECORDS_OUT, AGG_SUM,
                              NULL);
    }
    add_str(ev, &o->oom, "%s records read, %s results written",
            fmt_count(in, c1, sizeof c1), fmt_count(out, c2, sizeof c2));
    set_fix(o, f, "Nothing to do.");
}

/* The findings for a snapshot (server.h).  Every rule appends to the
 * list of its severity; the lists are concatenated critical, warning,
 * info, so within a severity the rule order below holds.  The held-back
 * partition is reported when it holds a window (behind by a window
 * period) or has stalled; otherwise an operator channel may stand out
 * instead (sources without partition metrics). */
json_t *tdm__diagnose(tdm_job *job, const tdm_metrics *m,
                      const tdm__history *hist)
{
    dx_view w;
    dx_culprit c;
    dx_out o;
    json_t *res = NULL, *all = NULL;
    char name[160];

    memset(&o, 0, sizeof o);
    if (!m || view_build(&w, job, m) != TDM_OK)
        return NULL;
    for (int s = 0; s < 3; s++)
        if (!(o.items[s] = json_array()))
            goto fail;
    find_culprit(&w, &c);
    if (w.n == 0) {
        /* Vertices but no values: the job has not run. */
        json_t *f = finding(&o, SEV_INFO, "NOT_STARTED", NULL, -1, -1,
                            "The job has not started: there is nothing to "
                            "diagnose yet");
        if (f)
            set_fix(&o, f, "Start the job (tdm_job_run, tidemark run) and "
                           "ask again.");
    } else if (c.pub.found && (c.pub.behind_ms < 0 ||
                        c.pub.behind_ms >= hold_threshold(&w, c.unit->vertex)
                        || stalled(c.unit, c.other_age_ms)))
        rule_held_back(&w, &c, hist, &o);
    else
        rule_held_channel(&w, &o);
    if (w.n > 0) {
        rule_no_data(&w, &c, &o);
        rule_all_idle(&w, &o);
        rule_unit(&w, &o);
        rule_trigger(&w, &o);
        rule_future(&w, &o);
        rule_late(&w, &o);
        rule_backpressure(&w, &o);
        rule_counters(&w, &o);
        rule_checkpoints(&w, &o);
        if (json_array_size(o.items[SEV_CRITICAL]) == 0 &&
            json_array_size(o.items[SEV_WARNING]) == 0)
            rule_all_clear(&w, &o);
    }
    /* Most important first: critical, warning, info, each in rule order. */
    if (!(all = json_array()) || !(res = json_object()))
        goto fail;
    for (int s = 0; s < 3; s++)
        if (json_array_extend(all, o.items[s]) != 0)
            goto fail;
    set_new(res, "job", json_string(job ? tdm__job_str(job, "name") : ""),
            &o.oom);
    set_new(res, "now", json_integer(w.now), &o.oom);
    set_new(res, "running", json_boolean(w.running), &o.oom);
    if (c.pub.found) {
        json_t *cj = json_object();
        set_new(res, "culprit", cj, &o.oom);
        if (cj) {
            set_new(cj, "vertex", json_string(c.pub.vertex), &o.oom);
            set_new(cj, "subtask", json_integer(c.pub.subtask), &o.oom);
            set_new(cj, "partition", json_integer(c.pub.partition), &o.oom);
            snprintf(name, sizeof name, "%s",
                     c.pub.name ? c.pub.name : "");
            set_new(cj, "name", json_string(name), &o.oom);
            set_new(cj, "watermark", json_wm(c.pub.watermark), &o.oom);
            set_new(cj, "next", json_wm(c.pub.next), &o.oom);
            /* As GET /jobs/:id/partitions has it: unknowns are null,
             * sinceMs 0 without history. */
            tdm_time_ms since;
            int64_t since_ms = 0;
            if (tdm__history_culprit_since(hist, c.pub.vertex,
                                           c.pub.subtask, c.pub.partition,
                                           &since) &&
                since <= w.now)
                since_ms = w.now - since;
            set_new(cj, "behindMs",
                    c.pub.behind_ms >= 0 ? json_integer(c.pub.behind_ms)
                                         : json_null(),
                    &o.oom);
            set_new(cj, "lastRecordAgeMs",
                    c.pub.last_record_age_ms >= 0
                        ? json_integer(c.pub.last_record_age_ms)
                        : json_null(),
                    &o.oom);
            set_new(cj, "sinceMs", json_integer(since_ms), &o.oom);
        }
    } else {
        set_new(res, "culprit", json_null(), &o.oom);
    }
    if (json_object_set(res, "findings", all) != 0 || o.oom)
        goto fail;
    json_decref(all);
    for (int s = 0; s < 3; s++)
        json_decref(o.items[s]);
    view_free(&w);
    return res;
fail:
    json_decref(res);
    json_decref(all);
    for (int s = 0; s < 3; s++)
        json_decref(o.items[s]);
    view_free(&w);
    return NULL;
}

/* ====================================================================== */
/* "Why has this window not fired?"                                        */
/* ====================================================================== */

/* The lowest active partition of subtask @p sub of source @p src. */
static const dx_unit *lowest_partition(const dx_view *w, const char *src,
                                       int sub)
{
    const dx_unit *low = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const dx_unit *u = &w->u[i];
        if (!part_active(u) || u->subtask != sub ||
            cmp_str(u->vertex, src) != 0)
            continue;
        if (!low || u->v[TDM_METRIC_P_WM] < low->v[TDM_METRIC_P_WM])
            low = u;
    }
    return low;
}

/* Appends to @p buf (of @p n bytes, holding a sentence) what holds the
 * subtask's watermark: the channel, its source subtask and that subtask's
 * lowest partition, with an evidence line for each.  Channel labels are
 * "source#subtask"; the partition holding a source subtask is its
 * lowest active one (the reader's output is their minimum). */
static void holding_clause(const dx_view *w, dx_out *o, json_t *ev,
                           const char *vertex, const tdm_window_status *st,
                           char *buf, size_t n)
{
    char a[64], d[32], nm[160], src[128];
    size_t len = strlen(buf);
    const dx_unit *ch;
    const char *hash;
    int sub;

    if (st->holding_channel < 0)
        return;
    ch = view_find(w, DX_CHANNEL, vertex, st->subtask, st->holding_channel);
    if (!ch || !ch->label || !(hash = strrchr(ch->label, '#'))) {
        snprintf(buf + len, n - len, ", held back by channel %d",
                 st->holding_channel);
        add_str(ev, &o->oom, "channel %d has the lowest watermark of the "
                             "active channels: %s",
                st->holding_channel, fmt_time(st->holding_wm, a, sizeof a));
        return;
    }
    snprintf(src, sizeof src, "%.*s", (int)(hash - ch->label), ch->label);
    sub = atoi(hash + 1);
    len += (size_t)snprintf(buf + len, n - len,
                            ", held back by channel %d (source %s)",
                            st->holding_channel, ch->label);
    add_str(ev, &o->oom,
            "channel %d (source %s) has the lowest watermark of the active "
            "channels: %s; %d channel%s idle",
            st->holding_channel, ch->label,
            fmt_time(st->holding_wm, a, sizeof a), st->idle_channels,
            st->idle_channels == 1 ? " is" : "s are");
    const dx_unit *p = lowest_partition(w, src, sub);
    if (!p || len >= n)
        return;
    int64_t age = val(p, TDM_METRIC_P_LAST_AGE, -1);
    int64_t idle = idle_timeout(w, src);
    part_name(p, nm, sizeof nm);
    if (age >= DX_STALL_MS && idle <= 0)
        snprintf(buf + len, n - len,
                 ", whose partition %s has had no data for %s and no idle "
                 "timeout",
                 nm, fmt_dur(age, d, sizeof d));
    else if (age >= DX_STALL_MS)
        snprintf(buf + len, n - len,
                 ", whose partition %s has had no data for %s (idle after "
                 "%s)",
                 nm, fmt_dur(age, d, sizeof d),
                 fmt_dur(idle, a, sizeof a));
    else
        snprintf(buf + len, n - len, ", whose lowest partition is %s",
                 nm);
    add_str(ev, &o->oom,
            "partition %s of %s subtask %d is at %s; last record %s ago; "
            "watermark.idle_timeout %s",
            nm, src, sub, fmt_time(p->v[TDM_METRIC_P_WM], a, sizeof a),
            age >= 0 ? fmt_dur(age, d, sizeof d) : "(unknown)",
            idle > 0 ? "set" : "not set");
}

/* The status as JSON (the tdm_window_status fields). */
static json_t *status_json(const tdm_window_status *st, int *oom)
{
    json_t *s = json_object();
    if (!s) {
        *oom = 1;
        return NULL;
    }
    set_new(s, "subtask", json_integer(st->subtask), oom);
    set_new(s, "watermark", json_wm(st->watermark), oom);
    set_new(s, "max_ts", json_wm(st->max_ts), oom);
    set_new(s, "cleanup", json_wm(st->cleanup), oom);
    set_new(s, "has_state", json_boolean(st->has_state), oom);
    set_new(s, "elements", json_integer(st->elements), oom);
    set_new(s, "fired", json_boolean(st->fired), oom);
    set_new(s, "fired_wm", st->fired ? json_wm(st->fired_wm) : json_null(),
            oom);
    set_new(s, "holding_channel", json_integer(st->holding_channel), oom);
    set_new(s, "holding_wm", st->holding_channel >= 0
                                 ? json_wm(st->holding_wm)
                                 : json_null(),
            oom);
    set_new(s, "idle_channels", json_integer(st->idle_channels), oom);
    set_new(s, "running", json_boolean(st->running), oom);
    return s;
}

/* Maps tdm_job_window_status's error to an HTTP status. */
static int http_of(tdm_err e)
{
    switch (e) {
    case TDM_ERR_INVAL:
        return 400;
    case TDM_ERR_STATE:
    case TDM_ERR_IO:
        return 503;
    default:
        return 500;
    }
}

/* Explains one (key, window) of a window vertex (server.h).
 *
 * The verdict is one of six cases, from the subtask's answer:
 *   fired                              -> when, at which watermark;
 *   holds records, trigger blind to    -> what the trigger waits for;
 *     the watermark
 *   holds records, watermark < max_ts  -> waiting for the watermark, and
 *                                         what holds it (channel, source
 *                                         subtask, its lowest partition);
 *   holds records, watermark >= max_ts -> fires at the next step (asked
 *                                         between two steps);
 *   no records, watermark >= max_ts    -> no record came in time (late
 *                                         counts of the vertex);
 *   no records, watermark < max_ts     -> no record yet.
 * The metrics snapshot only adds evidence (channel labels, partitions,
 * late samples); without it the verdict stands. */
json_t *tdm__explain_window(tdm_job *job, const char *vertex,
                            const char *key, tdm_time_ms start,
                            tdm_time_ms end, int *http_status,
                            char *errbuf, size_t errbuf_size)
{
    tdm_window_status st;
    tdm_metrics *m = NULL;
    dx_view w;
    dx_out o;
    json_t *res = NULL, *ev = NULL;
    char verdict[1024], waiting[512], a[64], b[64], c[64], d[32], e[32];
    const char *waiting_for = NULL;
    tdm_node *node;
    tdm_err err;
    int have_view = 0, status = 200;

    memset(&o, 0, sizeof o);
    memset(&w, 0, sizeof w);
    if (!job || !vertex || !*vertex) {
        status = 400;
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "vertex is required (the name of a window)");
        goto fail;
    }
    node = tdm_job_node(job, vertex);
    if (!node || node->kind != TDM_NODE_WINDOW) {
        status = 404;
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  node ? "vertex \"%s\" is not a window"
                       : "no window named \"%s\" in the job",
                  vertex);
        goto fail;
    }
    if (!key) {
        status = 400;
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "key is required (the key fields' values, joined by ',')");
        goto fail;
    }
    if (start >= end) {
        status = 400;
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "start must be before end (got %" PRId64 " and %" PRId64
                  ")",
                  start, end);
        goto fail;
    }
    err = tdm_job_window_status(job, vertex, key, start, end, &st, errbuf,
                                errbuf_size);
    if (err != TDM_OK) {
        status = http_of(err);
        if (err == TDM_ERR_STATE)
            tdm__errf(errbuf, errbuf_size, err, "the job has not run yet");
        else if (err == TDM_ERR_NOMEM)
            tdm__errf(errbuf, errbuf_size, err, "out of memory");
        goto fail;
    }
    /* The snapshot only adds evidence: without it the answer stands. */
    if (tdm_job_metrics(job, &m) == TDM_OK &&
        view_build(&w, job, m) == TDM_OK)
        have_view = 1;
    if (!(res = json_object()) || !(ev = json_array()))
        goto nomem;

    int64_t trg = tdm__node_int(node, "trigger");
    int event_time =
        strcmp(tdm__node_str(node, "window.time"), "processing") != 0 &&
        strcmp(tdm__node_str(node, "window.type"), "global") != 0;
    int blind = event_time &&
                (trg == TRG_PROC || trg == TRG_COUNT || trg == TRG_NEVER);
    int64_t lateness = tdm__node_int(node, "allowed_lateness");
    char span[160];
    snprintf(span, sizeof span, "[%s, %s)", fmt_time(start, a, sizeof a),
             fmt_time(end, b, sizeof b));

    add_str(ev, &o.oom,
            "key \"%s\" belongs to subtask %d of %s, whose watermark is %s",
            key, st.subtask, vertex, fmt_time(st.watermark, a, sizeof a));
    add_str(ev, &o.oom,
            "the window fires when that watermark reaches %s (its last "
            "timestamp); its state is dropped once it passes %s (allowed "
            "lateness %s)",
            fmt_time(st.max_ts, a, sizeof a),
            fmt_time(st.cleanup, b, sizeof b),
            fmt_dur(lateness, d, sizeof d));
    if (st.has_state)
        add_str(ev, &o.oom, st.elements >= 0
                                ? "the window holds %s record%s now"
                                : "the window holds records now%.0s%s",
                fmt_count(st.elements, e, sizeof e),
                st.elements == 1 ? "" : "s");
    else
        add_str(ev, &o.oom, "the window holds no records now");

    if (st.fired) {
        if (st.fired_wm == TDM_TIME_MAX)
            snprintf(verdict, sizeof verdict,
                     "Fired: the window %s of key \"%s\" fired at the end "
                     "of input.",
                     span, key);
        else if (blind || st.fired_wm < st.max_ts)
            snprintf(verdict, sizeof verdict,
                     "Fired: the window %s of key \"%s\" fired (early, by "
                     "its trigger) while the watermark of subtask %d was at "
                     "%s.",
                     span, key, st.subtask,
                     fmt_time(st.fired_wm, a, sizeof a));
        else
            snprintf(verdict, sizeof verdict,
                     "Fired: the window %s of key \"%s\" fired when the "
                     "watermark of subtask %d reached %s.",
                     span, key, st.subtask,
                     fmt_time(st.fired_wm, a, sizeof a));
        if (st.has_state && st.watermark < st.cleanup)
            add_str(ev, &o.oom,
                    "its state is kept until the watermark passes %s: a "
                    "late record until then refires it",
                    fmt_time(st.cleanup, a, sizeof a));
    } else if (st.has_state && blind) {
        static const char *const what[] = { "", "", "processing_time",
                                             "count", "", "never" };
        snprintf(verdict, sizeof verdict,
                 "Not fired: the window %s of key \"%s\" holds records, but "
                 "its %s trigger does not fire on the watermark.",
                 span, key, what[trg]);
        if (trg == TRG_COUNT)
            snprintf(waiting, sizeof waiting,
                     "%" PRId64 " records of key \"%s\" in this window (the "
                     "count trigger)",
                     tdm__node_int(node, "trigger.count"), key);
        else if (trg == TRG_PROC)
            snprintf(waiting, sizeof waiting,
                     "processing time to reach %s (the processing_time "
                     "trigger)",
                     fmt_time(st.max_ts, a, sizeof a));
        else
            snprintf(waiting, sizeof waiting,
                     "nothing: the never trigger fires no window (only the "
                     "end of input does)");
        waiting_for = waiting;
        add_str(ev, &o.oom,
                "windows.%s.trigger is %s: remove it to fire each window "
                "when the watermark passes its end",
                vertex, what[trg]);
    } else if (st.has_state && st.watermark < st.max_ts) {
        snprintf(verdict, sizeof verdict,
                 "Not fired: waiting for the watermark of subtask %d to "
                 "pass %s; it is at %s",
                 st.subtask, fmt_time(st.max_ts, a, sizeof a),
                 st.watermark == TDM_TIME_MIN
                     ? "nothing yet (no watermark)"
                     : fmt_time(st.watermark, b, sizeof b));
        if (have_view)
            holding_clause(&w, &o, ev, vertex, &st, verdict,
                           sizeof verdict - 1);
        strcat(verdict, ".");
        snprintf(waiting, sizeof waiting,
                 "the watermark of %s subtask %d to pass %s", vertex,
                 st.subtask, fmt_time(st.max_ts, a, sizeof a));
        waiting_for = waiting;
    } else if (st.has_state) {
        snprintf(verdict, sizeof verdict,
                 "Not fired yet: the watermark of subtask %d (%s) has "
                 "passed the window's end; it fires with the subtask's next "
                 "watermark step.",
                 st.subtask, fmt_time(st.watermark, a, sizeof a));
        snprintf(waiting, sizeof waiting,
                 "the next watermark step of %s subtask %d", vertex,
                 st.subtask);
        waiting_for = waiting;
    } else if (st.watermark >= st.max_ts) {
        int64_t dropped = 0, side = 0;
        if (have_view) {
            dropped = vertex_agg(&w, vertex, TDM_METRIC_LATE_DROPPED,
                                 AGG_SUM, NULL);
            side = vertex_agg(&w, vertex, TDM_METRIC_LATE_SIDE, AGG_SUM,
                              NULL);
        }
        snprintf(verdict, sizeof verdict,
                 "No result: no record with key \"%s\" arrived for the "
                 "window %s before the watermark passed its end (%s late "
                 "record%s %s dropped by %s, %s sent to the late output).",
                 key, span, fmt_count(dropped, d, sizeof d),
                 dropped == 1 ? "" : "s", dropped == 1 ? "was" : "were",
                 vertex, fmt_count(side, e, sizeof e));
        if (st.watermark < st.cleanup) {
            snprintf(waiting, sizeof waiting,
                     "a record with key \"%s\" in the window before the "
                     "watermark passes %s (allowed lateness)",
                     key, fmt_time(st.cleanup, a, sizeof a));
            waiting_for = waiting;
        }
        add_str(ev, &o.oom,
                "(or it fired longer ago than the last 8,192 firings "
                "subtask %d remembers)",
                st.subtask);
    } else {
        snprintf(verdict, sizeof verdict,
                 "Not fired: no record with key \"%s\" has arrived for the "
                 "window %s yet; the watermark of subtask %d is at %s.",
                 key, span, st.subtask,
                 fmt_time(st.watermark, a, sizeof a));
        snprintf(waiting, sizeof waiting,
                 "a record with key \"%s\" in the window, then the "
                 "watermark of %s subtask %d to pass %s",
                 key, vertex, st.subtask, fmt_time(st.max_ts, a, sizeof a));
        waiting_for = waiting;
    }
    if (!st.running)
        add_str(ev, &o.oom,
                "the job has finished: this is its final state");
    /* Recent late records that fell into this window. */
    for (size_t i = 0, shown = 0; m && i < tdm_metrics_late_count(m); i++) {
        const tdm_late_sample *ls = tdm_metrics_late_at(m, i);
        if (!ls || cmp_str(ls->vertex, vertex) != 0 || ls->ts < start ||
            ls->ts >= end || shown >= 5)
            continue;
        shown++;
        add_str(ev, &o.oom,
                "a late record of this window at %s met watermark %s and "
                "was %s: %s",
                fmt_time(ls->ts, a, sizeof a),
                fmt_time(ls->watermark, c, sizeof c),
                ls->dropped ? "dropped" : "sent to the late output",
                ls->row ? ls->row : "");
    }
    set_new(res, "vertex", json_string(vertex), &o.oom);
    set_new(res, "key", json_string(key), &o.oom);
    set_new(res, "start", json_integer(start), &o.oom);
    set_new(res, "end", json_integer(end), &o.oom);
    set_new(res, "fired", json_boolean(st.fired), &o.oom);
    set_new(res, "verdict", json_string(verdict), &o.oom);
    set_new(res, "waiting_for",
            waiting_for ? json_string(waiting_for) : json_null(), &o.oom);
    set_new(res, "evidence", ev, &o.oom);
    ev = NULL;
    set_new(res, "status", status_json(&st, &o.oom), &o.oom);
    if (o.oom)
        goto nomem;
    if (have_view)
        view_free(&w);
    tdm_metrics_free(m);
    *http_status = 200;
    return res;
nomem:
    status = 500;
    tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
fail:
    json_decref(res);
    json_decref(ev);
    if (have_view)
        view_free(&w);
    tdm_metrics_free(m);
    *http_status = status;
    return NULL;
}
