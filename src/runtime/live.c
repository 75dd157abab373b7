/* SPDX-License-Identifier: MIT */
/* live.c - live settings (live.h): the table, the one validated change
 * path (tdm_job_config_set), what GET shows, the watched file, and the
 * source subtask's side.
 *
 * Rules (docs/live-settings.md):
 *   R-LV-1  A key is sources.<name>.<setting> for a live setting of a
 *           source, or windows.<name>.allowed_lateness; anything else is
 *           refused: INVAL for a key no job
 *           has (400), UNSUPPORTED for one that cannot change while the
 *           job runs (409), with the reason and what would apply.
 *   R-LV-2  A setting is live only where it applies: the bound for an
 *           event-time source with a bounded or punctuated strategy, the
 *           idle timeout for an event-time source with watermarks, the
 *           drift for a source in an alignment group (not the bound of
 *           a source with watermark.delay: its exact delay is fixed, and
 *           a change of another key leaves it); never for a source
 *           whose watermarks its repartition writer makes, nor in a job
 *           run as tasks (not yet: the change would reach one process);
 *           allowed lateness for an event-time window that keeps a
 *           cleanup time per window: not a session window (windows
 *           merge), nor a sliding count without lateness while its
 *           subtasks keep slices (the operators say so: sliced).
 *   R-LV-3  Values are durations, checked as the job file's are (bound
 *           and idle timeout >= 0, 0 turning idleness off; drift > 0).
 *           Only a running job takes a change (STATE otherwise, also
 *           while a run starts: its restore would overwrite it).
 *   R-LV-4  A change is stored, then the source's generation bumped; a
 *           subtask that sees a new generation between polls applies
 *           every value to its reader (all its partitions, and those
 *           added later) and the group's coordinator, then says so
 *           (applied: GET shows when all have).  Records already read
 *           keep the watermarks that went out with them; records polled
 *           after the change meet the new values.
 *   R-LV-5  The watermark never goes back: a raised bound holds each
 *           partition's watermark until max - bound - 1 passes it; a
 *           lowered one takes effect at the next emission (periodic)
 *           or record (on_event).
 *   R-LV-6  The watched file is a flat mapping of the same keys (YAML
 *           "key: value" lines or a JSON object), read when its bytes
 *           changed; every key is checked before any is applied, and a
 *           bad file is logged and ignored as a whole.
 *   R-LV-7  A checkpoint keeps the values in force when it is written
 *           (blob "live": each live key and its value in ms).  A fresh
 *           start restored from it takes them (origin "checkpoint"), so
 *           a restored job runs with the values it had; a key the job no
 *           longer has, or that no longer applies, is logged and left.
 *           An attempt after a failure keeps its table, which is newer.
 *   R-LV-8  A window subtask applies a new lateness before its next group
 *           of items (op_live.c): every live window's cleanup time moves;
 *           a lowered value cleans up at once what is due, a raised one
 *           keeps closed what was closed (window/winop_lateness.c, L3-L5).
 *           The commit horizon of the window's sources uses the highest
 *           value in force during the run (lat_max), so no record is
 *           taken as final while a window can still change with it.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/fileio.h"
#include "runtime/live.h"
#include "state/ckpt_codec.h"
#include "state/ckpt_store.h"
#include "runtime/run_record.h"
#include "runtime/task_op.h"
#include "runtime/task_source.h"
#include "time/wm.h"

/* Changes remembered in order (GET /jobs/:id/config, "changes"). */
#define LIVE_RING 64
/* The checkpoint blob (R-LV-7) and its version. */
#define LIVE_BLOB "live"
#define LIVE_BLOB_VERSION 1

/* The setting names of the live keys, by TDM__LIVE_*. */
static const char *const live_names[TDM__LIVE_N_] = {
    "watermark.max_out_of_orderness",
    "watermark.idle_timeout",
    "watermark.alignment.max_drift",
    "allowed_lateness",
};

/* What GET shows of one (source, key). */
typedef struct live_meta {
    tdm_time_ms at; /* TDM_TIME_MIN: never changed */
    char origin[16];
    int64_t changes;
} live_meta;

struct tdm__live {
    pthread_mutex_t mu;
    int n;              /* the job's nodes */
    tdm__live_src *src; /* per node */
    live_meta *meta;    /* per node and key, under mu */
    tdm_live_change ring[LIVE_RING];
    int64_t n_changes; /* under mu */
    /* The watched file: the next look (job clock) and its last bytes. */
    tdm_time_ms watch_next;
    char *watch_text;
};

/* ---- The table ---- */

void tdm__live_free(tdm__live *lv)
{
    if (!lv)
        return;
    pthread_mutex_destroy(&lv->mu);
    tdm__free(lv->src);
    tdm__free(lv->meta);
    tdm__free(lv->watch_text);
    tdm__free(lv);
}

/* The definition's value of live key @p k of node @p n (0 where the
 * key is not the node's). */
static int64_t definition(const tdm_node *n, int k)
{
    if (n->kind == TDM_NODE_WINDOW)
        return k == TDM__LIVE_LATENESS ? n->spec.win.allowed_lateness_ms : 0;
    if (n->kind != TDM_NODE_SOURCE)
        return 0;
    const tdm__source_spec *s = &n->spec.src;
    switch (k) {
    case TDM__LIVE_BOUND:
        return s->wm_max_out_of_orderness_ms;
    case TDM__LIVE_IDLE:
        return s->wm_idle_timeout_ms;
    case TDM__LIVE_DRIFT:
        return s->wm_alignment_max_drift_ms;
    default:
        return 0;
    }
}

/* The name of live key @p k of node @p n ("sources.<name>.<setting>" or
 * "windows.<name>.allowed_lateness") into @p buf. */
static void key_of(const tdm_node *n, int k, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%s.%s",
             k == TDM__LIVE_LATENESS ? "windows" : "sources", n->name,
             live_names[k]);
}

/* Whether live key @p k is one of node @p n's kind. */
static bool key_of_kind(const tdm_node *n, int k)
{
    return n->kind == TDM_NODE_WINDOW
               ? k == TDM__LIVE_LATENESS
               : n->kind == TDM_NODE_SOURCE && k != TDM__LIVE_LATENESS;
}

/* A table with the definition's values. */
static tdm__live *live_new(const tdm_job *job)
{
    tdm__live *lv = tdm__calloc(1, sizeof *lv);
    if (!lv)
        return NULL;
    lv->n = job->n_nodes;
    lv->src = tdm__calloc((size_t)lv->n + 1, sizeof *lv->src);
    lv->meta = tdm__calloc((size_t)lv->n * TDM__LIVE_N_ + 1, sizeof *lv->meta);
    if (!lv->src || !lv->meta || pthread_mutex_init(&lv->mu, NULL) != 0) {
        tdm__free(lv->src);
        tdm__free(lv->meta);
        tdm__free(lv);
        return NULL;
    }
    for (int i = 0; i < lv->n; i++) {
        for (int k = 0; k < TDM__LIVE_N_; k++)
            atomic_init(&lv->src[i].v[k], definition(job->nodes[i], k));
        atomic_init(&lv->src[i].lat_max,
                    definition(job->nodes[i], TDM__LIVE_LATENESS));
        atomic_init(&lv->src[i].sliced, false);
        atomic_init(&lv->src[i].gen, 0);
        for (int k = 0; k < TDM__LIVE_N_; k++)
            lv->meta[i * TDM__LIVE_N_ + k] =
                (live_meta){.at = TDM_TIME_MIN, .origin = "job"};
    }
    lv->watch_next = TDM_TIME_MIN;
    return lv;
}

tdm_err tdm__live_begin(tdm_job *job, bool restart)
{
    tdm__run_record *rec = job->rec;
    if (restart && rec->live)
        return TDM_OK;
    tdm__live *lv = live_new(job);
    if (!lv)
        return TDM_ERR_NOMEM;
    pthread_mutex_lock(&rec->mmu);
    tdm__live *old = rec->live;
    rec->live = lv;
    pthread_mutex_unlock(&rec->mmu);
    tdm__live_free(old);
    return TDM_OK;
}

/* The index of node @p n in its job, or -1. */
static int node_index(const tdm_job *job, const tdm_node *n)
{
    for (int i = 0; i < job->n_nodes; i++)
        if (job->nodes[i] == n)
            return i;
    return -1;
}

tdm__live_src *tdm__live_of(const tdm_job *job, const tdm_node *n)
{
    tdm__live *lv = job->rec->live;
    int i = node_index(job, n);
    return lv && i >= 0 && i < lv->n ? &lv->src[i] : NULL;
}

int64_t tdm__live_value(const tdm_job *job, const tdm_node *n, int k,
                        int64_t dflt)
{
    const tdm__live_src *ls = tdm__live_of(job, n);
    return ls ? atomic_load(&ls->v[k]) : dflt;
}

int64_t tdm__live_changes(const tdm_job *job)
{
    tdm__live *lv = job->rec->live;
    if (!lv)
        return 0;
    pthread_mutex_lock(&lv->mu);
    int64_t n = lv->n_changes;
    pthread_mutex_unlock(&lv->mu);
    return n;
}

/* ---- Validation (R-LV-1 .. R-LV-3) ---- */

/* Why the allowed lateness of window @p n cannot change while the job
 * runs, in @p buf; NULL when it can (R-LV-2).  @p sliced: the running
 * subtasks said their operators keep slices (fixed_refusal asks, under
 * the metrics lock; false when not asked). */
static const char *window_refusal(const tdm_node *n, bool sliced, char *buf,
                                  size_t len)
{
    const tdm__window_spec *w = &n->spec.win;
    if (n->job->spec.scale_out == TDM__SCALE_OUT_TASKS)
        snprintf(buf, len,
                 "the job runs as tasks across processes: live "
                 "settings do not reach them yet");
    else if (w->time == TDM__WINDOW_TIME_PROCESSING)
        snprintf(buf, len,
                 "window \"%s\" runs on processing time: allowed lateness "
                 "applies to event-time windows only",
                 n->name);
    else if (w->type == TDM__WINDOW_TYPE_GLOBAL)
        snprintf(buf, len, "window \"%s\" is global: it never closes", n->name);
    else if (w->type == TDM__WINDOW_TYPE_SESSION)
        snprintf(buf, len,
                 "window \"%s\" is a session window: sessions merge, and a "
                 "merged window's cleanup time moves with it; restart the "
                 "job with --set windows.%s.allowed_lateness=...",
                 n->name, n->name);
    else if (sliced)
        snprintf(buf, len,
                 "window \"%s\" is a sliding count without allowed "
                 "lateness, which its subtasks keep in slices (no cleanup "
                 "time per window); give it an allowed_lateness in the job "
                 "(1ms will do) to change it live",
                 n->name);
    else
        return NULL;
    return buf;
}

/* Why live key @p k of node @p n cannot change while the job runs, in
 * @p buf; NULL when it can (R-LV-2). */
static const char *refusal(const tdm_node *n, int k, char *buf, size_t len)
{
    const tdm__source_spec *s = &n->spec.src;
    if (k == TDM__LIVE_LATENESS)
        return window_refusal(n, false, buf, len);
    if (n->job->spec.scale_out == TDM__SCALE_OUT_TASKS)
        snprintf(buf, len,
                 "the job runs as tasks across processes: live "
                 "settings do not reach them yet");
    else if (s->repartition != TDM__REPARTITION_NEVER)
        snprintf(buf, len,
                 "source \"%s\" repartitions: its repartition writer makes "
                 "its watermarks, and live settings do not reach it yet",
                 n->name);
    else if (s->time != TDM__SOURCE_TIME_EVENT)
        snprintf(
            buf, len, "source \"%s\" runs on %s time: it has no %s", n->name,
            s->time == TDM__SOURCE_TIME_INGESTION ? "ingestion" : "processing",
            k == TDM__LIVE_DRIFT ? "alignment" : "event-time watermark");
    else if (k == TDM__LIVE_BOUND &&
             s->wm_strategy != TDM__WATERMARK_STRATEGY_BOUNDED &&
             s->wm_strategy != TDM__WATERMARK_STRATEGY_PUNCTUATED)
        snprintf(buf, len,
                 "source \"%s\" has watermark.strategy %s, which has no "
                 "bound; run it with strategy: bounded to change the bound "
                 "live",
                 n->name,
                 s->wm_strategy == TDM__WATERMARK_STRATEGY_MONOTONOUS
                     ? "monotonous"
                     : "none");
    else if (k == TDM__LIVE_BOUND && s->wm_delay_ms >= 0)
        snprintf(buf, len,
                 "source \"%s\" uses watermark.delay (watermark = max - "
                 "delay exactly), which is fixed while the job runs; it has "
                 "no bound to change",
                 n->name);
    else if (k == TDM__LIVE_IDLE &&
             s->wm_strategy == TDM__WATERMARK_STRATEGY_NONE)
        snprintf(buf, len, "source \"%s\" has watermark.strategy none",
                 n->name);
    else if (k == TDM__LIVE_DRIFT && !*s->wm_alignment_group)
        snprintf(buf, len,
                 "source \"%s\" is in no alignment group "
                 "(watermark.alignment.group)",
                 n->name);
    else
        return NULL;
    return buf;
}

/* A parsed change: the source node, the key and the new value. */
typedef struct live_req {
    int node;
    int k;
    int64_t v;
} live_req;

/* The index of the node of @p kind whose name starts @p rest and is
 * followed by '.', with *setting after the dot; -1 when none. */
static int named_node(const tdm_job *job, const char *rest, tdm_node_kind kind,
                      const char **setting)
{
    for (int i = 0; i < job->n_nodes; i++) {
        const tdm_node *nd = job->nodes[i];
        size_t len = strlen(nd->name);
        if (nd->kind == kind && strncmp(rest, nd->name, len) == 0 &&
            rest[len] == '.') {
            *setting = rest + len + 1;
            return i;
        }
    }
    return -1;
}

/* Splits "sources.<name>.<setting>" or "windows.<name>.<setting>"
 * (R-LV-1).  TDM_OK with r->node and r->k set. */
static tdm_err parse_key(tdm_job *job, const char *key, live_req *r, char *err,
                         size_t n)
{
    bool win = strncmp(key, "windows.", 8) == 0;
    const char *setting = NULL;
    int i = win || strncmp(key, "sources.", 8) == 0
                ? named_node(job, key + 8,
                             win ? TDM_NODE_WINDOW : TDM_NODE_SOURCE, &setting)
                : -1;
    if (i < 0)
        return tdm__errf(err, n, TDM_ERR_INVAL,
                         "%s: unknown key (live keys are "
                         "sources.<source>.watermark.max_out_of_orderness, "
                         ".watermark.idle_timeout, "
                         ".watermark.alignment.max_drift and "
                         "windows.<window>.allowed_lateness)",
                         key);
    for (int k = 0; k < TDM__LIVE_N_; k++)
        if (key_of_kind(job->nodes[i], k) &&
            strcmp(setting, live_names[k]) == 0) {
            r->node = i;
            r->k = k;
            return TDM_OK;
        }
    return tdm__errf(err, n, TDM_ERR_UNSUPPORTED,
                     "%s: cannot change while the job runs (live: %s.%s.%s); "
                     "restart the job with --set for any other key",
                     key, win ? "windows" : "sources", job->nodes[i]->name,
                     win ? "allowed_lateness"
                         : "{watermark.max_out_of_orderness, "
                           "watermark.idle_timeout, "
                           "watermark.alignment.max_drift}");
}

/* Checks @p key = @p value against the definition (R-LV-1 .. R-LV-3). */
static tdm_err check(tdm_job *job, const char *key, const char *value,
                     live_req *r, char *err, size_t n)
{
    char why[256];
    tdm_err e = parse_key(job, key, r, err, n);
    if (e != TDM_OK)
        return e;
    if (refusal(job->nodes[r->node], r->k, why, sizeof why))
        return tdm__errf(err, n, TDM_ERR_UNSUPPORTED, "%s: %s", key, why);
    if (!value || !tdm__conf_duration(value, &r->v))
        return tdm__errf(err, n, TDM_ERR_INVAL,
                         "%s: \"%s\" is not a duration (e.g. 8s, 500ms, 2m)",
                         key, value ? value : "");
    if (r->v < 0 || (r->k == TDM__LIVE_DRIFT && r->v == 0))
        return tdm__errf(err, n, TDM_ERR_INVAL, "%s: must be %s (got %s)", key,
                         r->k == TDM__LIVE_DRIFT ? "> 0" : ">= 0", value);
    return TDM_OK;
}

/* ---- Changing ---- */

/* R-LV-2 for what only the running operators know (a sliding count kept
 * in slices): TDM_OK, or UNSUPPORTED with the reason.  Under the metrics
 * lock, @p lv the job's table. */
static tdm_err fixed_refusal(tdm_job *job, tdm__live *lv, const live_req *r,
                             char *err, size_t n)
{
    char why[400], key[192];
    if (r->k != TDM__LIVE_LATENESS)
        return TDM_OK;
    const tdm_node *nd = job->nodes[r->node];
    if (!window_refusal(nd, atomic_load(&lv->src[r->node].sliced), why,
                        sizeof why))
        return TDM_OK;
    key_of(nd, r->k, key, sizeof key);
    return tdm__errf(err, n, TDM_ERR_UNSUPPORTED, "%s: %s", key, why);
}

/* Stores one checked change, remembers it and announces it (R-LV-4);
 * under lv->mu.  false when the value was already in force. */
static bool store(tdm_job *job, tdm__live *lv, const live_req *r,
                  const char *origin, tdm_time_ms now)
{
    tdm__live_src *ls = &lv->src[r->node];
    int64_t old = atomic_load(&ls->v[r->k]);
    if (old == r->v)
        return false;
    atomic_store(&ls->v[r->k], r->v);
    if (r->k == TDM__LIVE_LATENESS && r->v > atomic_load(&ls->lat_max))
        atomic_store(&ls->lat_max, r->v); /* R-LV-8; writers hold lv->mu */
    atomic_fetch_add_explicit(&ls->gen, 1, memory_order_release);
    live_meta *m = &lv->meta[r->node * TDM__LIVE_N_ + r->k];
    m->at = now;
    snprintf(m->origin, sizeof m->origin, "%s", origin);
    m->changes++;
    tdm_live_change *c = &lv->ring[lv->n_changes % LIVE_RING];
    lv->n_changes++;
    c->at = now;
    key_of(job->nodes[r->node], r->k, c->key, sizeof c->key);
    tdm__conf_format_duration(old, c->from, sizeof c->from);
    tdm__conf_format_duration(r->v, c->to, sizeof c->to);
    snprintf(c->origin, sizeof c->origin, "%s", origin);
    tdm__job_log(job, "live setting %s: %s -> %s (%s)", c->key, c->from, c->to,
                 origin);
    return true;
}

/* R-LV-8: the subtasks of window node @p node, asleep on their queues
 * until an item comes, wake to apply a change.  Under the metrics lock
 * (the run). */
static void poke_window(tdm_job *job, int node)
{
    tdm__run *run = job->rec->mrun;
    if (!run || job->nodes[node]->kind != TDM_NODE_WINDOW)
        return;
    for (int o = 0; o < run->n_ops; o++) {
        tdm__rt_op_task *ts = tdm__rt_op_tasks(run, o);
        for (int j = 0;
             ts && run->ops[o].node == job->nodes[node] && j < run->P; j++)
            tdm__queue_poke(&ts[j].q);
    }
}

tdm_err tdm_job_config_check(tdm_job *job, const char *key, const char *value,
                             char *errbuf, size_t errbuf_size)
{
    live_req r;
    if (!job || !key)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "job and key must not be NULL");
    return check(job, key, value, &r, errbuf, errbuf_size);
}

tdm_err tdm_job_config_set(tdm_job *job, const char *key, const char *value,
                           const char *origin, char *errbuf, size_t errbuf_size)
{
    live_req r;
    if (!job || !key)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "job and key must not be NULL");
    tdm_err e = check(job, key, value, &r, errbuf, errbuf_size);
    if (e != TDM_OK)
        return e;
    /* The metrics lock keeps the table from being replaced meanwhile
     * (and guards the job's clock). */
    pthread_mutex_lock(&job->rec->mmu);
    tdm_time_ms now = tdm__job_now(job);
    /* Running means with subtasks (mrun): a change made while the run
     * starts could be overwritten by the checkpoint it restores. */
    tdm__live *lv = job->rec->mrun ? job->rec->live : NULL;
    int starting = !lv && atomic_load(&job->rec->running);
    e = lv ? fixed_refusal(job, lv, &r, errbuf, errbuf_size) : TDM_OK;
    if (e != TDM_OK) {
        pthread_mutex_unlock(&job->rec->mmu);
        return e;
    }
    if (lv) {
        pthread_mutex_lock(&lv->mu);
        store(job, lv, &r, origin && *origin ? origin : "api", now);
        pthread_mutex_unlock(&lv->mu);
        poke_window(job, r.node);
    }
    pthread_mutex_unlock(&job->rec->mmu);
    if (lv)
        return TDM_OK;
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE, "%s",
                     starting ? "the job is starting (or restarting after "
                                "a failure): try again in a moment"
                              : "the job is not running");
}

/* ---- Reading ---- */

/* Whether every subtask of source node @p i runs with generation
 * @p gen (R-LV-4); under the metrics lock.  A job that does not run
 * counts as applied (its next run plans with the values); one starting
 * or between attempts as not yet. */
static int applied(tdm_job *job, int i, uint64_t gen)
{
    tdm__run *run = job->rec->mrun;
    if (!run)
        return !atomic_load(&job->rec->running);
    for (int s = 0; s < run->n_srcs; s++) {
        if (run->srcs[s].node != job->nodes[i])
            continue;
        tdm__rt_src_task *ts = tdm__rt_src_tasks(run, s);
        for (int j = 0; ts && j < run->P; j++)
            if (ts[j].reader && atomic_load(&ts[j].live_seen) != gen)
                return 0;
    }
    for (int o = 0; o < run->n_ops; o++) {
        if (run->ops[o].node != job->nodes[i])
            continue;
        tdm__rt_op_task *ts = tdm__rt_op_tasks(run, o);
        for (int j = 0; ts && j < run->P; j++)
            if (ts[j].win && atomic_load(&ts[j].live_seen) != gen)
                return 0;
    }
    return 1;
}

/* The @p i-th live (source, key) of @p job, or -1 past the end. */
static int nth(const tdm_job *job, size_t i, int *k)
{
    char why[256];
    size_t seen = 0;
    for (int nd = 0; nd < job->n_nodes; nd++) {
        for (int kk = 0; kk < TDM__LIVE_N_; kk++) {
            if (!key_of_kind(job->nodes[nd], kk) ||
                refusal(job->nodes[nd], kk, why, sizeof why))
                continue;
            if (seen++ == i) {
                *k = kk;
                return nd;
            }
        }
    }
    return -1;
}

size_t tdm_job_config_count(tdm_job *job)
{
    size_t n = 0;
    int k;
    while (job && nth(job, n, &k) >= 0)
        n++;
    return n;
}

tdm_err tdm_job_config_get(tdm_job *job, size_t i, tdm_live_setting *out)
{
    int k = 0, nd = job && out ? nth(job, i, &k) : -1;
    if (nd < 0)
        return TDM_ERR_RANGE;
    const tdm_node *n = job->nodes[nd];
    memset(out, 0, sizeof *out);
    key_of(n, k, out->key, sizeof out->key);
    pthread_mutex_lock(&job->rec->mmu);
    tdm__live *lv = job->rec->live;
    int64_t v = definition(n, k);
    live_meta m = {.at = TDM_TIME_MIN, .origin = "job"};
    out->applied = 1;
    if (lv) {
        pthread_mutex_lock(&lv->mu);
        v = atomic_load(&lv->src[nd].v[k]);
        m = lv->meta[nd * TDM__LIVE_N_ + k];
        out->applied = applied(job, nd, atomic_load(&lv->src[nd].gen));
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&job->rec->mmu);
    tdm__conf_format_duration(v, out->value, sizeof out->value);
    out->value_ms = v;
    out->changed_at = m.at;
    out->changes = m.changes;
    snprintf(out->origin, sizeof out->origin, "%s", m.origin);
    return TDM_OK;
}

size_t tdm_job_config_change_count(tdm_job *job)
{
    if (!job)
        return 0;
    int64_t n = 0;
    pthread_mutex_lock(&job->rec->mmu);
    tdm__live *lv = job->rec->live;
    if (lv) {
        pthread_mutex_lock(&lv->mu);
        n = lv->n_changes < LIVE_RING ? lv->n_changes : LIVE_RING;
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&job->rec->mmu);
    return (size_t)n;
}

tdm_err tdm_job_config_change(tdm_job *job, size_t i, tdm_live_change *out)
{
    if (!job || !out)
        return TDM_ERR_RANGE;
    tdm_err e = TDM_ERR_RANGE;
    pthread_mutex_lock(&job->rec->mmu);
    tdm__live *lv = job->rec->live;
    if (lv) {
        pthread_mutex_lock(&lv->mu);
        int64_t n = lv->n_changes < LIVE_RING ? lv->n_changes : LIVE_RING;
        if ((int64_t)i < n) {
            *out = lv->ring[(lv->n_changes - n + (int64_t)i) % LIVE_RING];
            e = TDM_OK;
        }
        pthread_mutex_unlock(&lv->mu);
    }
    pthread_mutex_unlock(&job->rec->mmu);
    return e;
}

/* ---- The watched file (R-LV-6) ---- */

/* Trims blanks and one pair of quotes around [*p, *e). */
static void trim(const char **p, const char **e)
{
    while (*p < *e && (**p == ' ' || **p == '\t'))
        (*p)++;
    while (*e > *p && ((*e)[-1] == ' ' || (*e)[-1] == '\t' ||
                       (*e)[-1] == '\r' || (*e)[-1] == ','))
        (*e)--;
    if (*e - *p >= 2 && (**p == '"' || **p == '\'') && (*e)[-1] == **p) {
        (*p)++;
        (*e)--;
    }
}

/* One "key: value" of the file at @p line (a YAML line or a member of a
 * one-level JSON object, one per line), checked into @p r; blank lines,
 * comments and braces give 0 entries.  Returns 1, 0, or -1 with the
 * reason in @p err. */
static int file_entry(tdm_job *job, const char *line, const char *end,
                      live_req *r, char *err, size_t n)
{
    char key[256], val[64];
    const char *p = line, *e = end;
    trim(&p, &e);
    if (p == e || *p == '#' || *p == '{' || *p == '}')
        return 0;
    const char *colon = memchr(p, ':', (size_t)(e - p));
    if (!colon)
        return tdm__errf(err, n, TDM_ERR_PARSE, "expected \"key: value\""), -1;
    const char *kp = p, *ke = colon, *vp = colon + 1, *ve = e;
    trim(&kp, &ke);
    trim(&vp, &ve);
    snprintf(key, sizeof key, "%.*s", (int)(ke - kp), kp);
    snprintf(val, sizeof val, "%.*s", (int)(ve - vp), vp);
    return check(job, key, val, r, err, n) == TDM_OK ? 1 : -1;
}

/* The job's processing time, read under the metrics lock (it may set
 * the clock's base). */
static tdm_time_ms job_now(tdm_job *job)
{
    pthread_mutex_lock(&job->rec->mmu);
    tdm_time_ms now = tdm__job_now(job);
    pthread_mutex_unlock(&job->rec->mmu);
    return now;
}

/* Checks every entry of @p text into @p reqs (at most @p cap), their
 * count in *nr (R-LV-6).  false with the reason (and its line) in @p err
 * when one is bad. */
static bool parse_file(tdm_job *job, const char *text, live_req *reqs, int cap,
                       int *nr, char *err, size_t n)
{
    int line = 1;
    *nr = 0;
    for (const char *p = text; *p; line++) {
        const char *e = strchr(p, '\n');
        if (!e)
            e = p + strlen(p);
        char why[400];
        live_req spare;
        int got = file_entry(job, p, e, *nr < cap ? &reqs[*nr] : &spare, why,
                             sizeof why);
        if (got > 0 && *nr == cap)
            snprintf(why, sizeof why, "more than %d settings", cap);
        if (got < 0 || (got > 0 && *nr == cap)) {
            snprintf(err, n, "line %d: %s", line, why);
            return false;
        }
        *nr += got;
        p = *e ? e + 1 : e;
    }
    return true;
}

int tdm__live_file_check(tdm_job *job, const char *text, char *err, size_t n)
{
    live_req reqs[64];
    int nr = 0;
    return parse_file(job, text, reqs, 64, &nr, err, n) ? nr : -1;
}

/* Checks every entry of @p text, then applies them all (R-LV-6).  false
 * with the reason (and its line) in @p err when one is bad. */
static bool apply_file(tdm_job *job, tdm__live *lv, const char *text, char *err,
                       size_t n)
{
    live_req reqs[64];
    int nr = 0;
    if (!parse_file(job, text, reqs, 64, &nr, err, n))
        return false;
    /* As tdm_job_config_set: the metrics lock (the run, the clock), then
     * the table's. */
    pthread_mutex_lock(&job->rec->mmu);
    for (int i = 0; i < nr; i++) {
        char why[512];
        if (fixed_refusal(job, lv, &reqs[i], why, sizeof why) != TDM_OK) {
            pthread_mutex_unlock(&job->rec->mmu);
            snprintf(err, n, "%s", why);
            return false;
        }
    }
    tdm_time_ms now = tdm__job_now(job);
    pthread_mutex_lock(&lv->mu);
    for (int i = 0; i < nr; i++)
        store(job, lv, &reqs[i], "file", now);
    pthread_mutex_unlock(&lv->mu);
    for (int i = 0; i < nr; i++)
        poke_window(job, reqs[i].node);
    pthread_mutex_unlock(&job->rec->mmu);
    return true;
}

void tdm__live_watch_tick(tdm_job *job)
{
    tdm__live *lv = job->rec->live;
    const char *path = job->spec.config_watch;
    if (!lv || !path || !*path)
        return;
    tdm_time_ms now = job_now(job);
    if (lv->watch_next != TDM_TIME_MIN && now < lv->watch_next)
        return;
    lv->watch_next = tdm__time_add_sat(now, job->spec.config_watch_interval_ms);
    void *buf = NULL;
    size_t len = 0;
    char why[512];
    if (tdm__fio_read_file(path, &buf, &len, why, sizeof why) != TDM_OK) {
        tdm__job_log(job, "config.watch: %s; the job keeps its settings", why);
        return;
    }
    char *text = buf;
    if (lv->watch_text && strcmp(lv->watch_text, text) == 0) {
        tdm__free(text);
        return;
    }
    tdm__free(lv->watch_text);
    lv->watch_text = text;
    if (!apply_file(job, lv, text, why, sizeof why))
        tdm__job_log(job,
                     "config.watch: %s: %s; the file is ignored, the job "
                     "keeps its settings",
                     path, why);
}

/* ---- Checkpoints (R-LV-7) ---- */

tdm_err tdm__live_ckpt_put(tdm__run *run, struct tdm__ckpt_store *st)
{
    tdm_job *job = run->job;
    tdm__live *lv = job->rec->live;
    if (!lv)
        return TDM_OK;
    tdm__enc e;
    tdm__enc_init(&e);
    tdm__enc_uvar(&e, LIVE_BLOB_VERSION);
    size_t n = tdm_job_config_count(job);
    tdm__enc_uvar(&e, n);
    for (size_t i = 0; i < n; i++) {
        int k = 0, nd = nth(job, i, &k);
        char key[192];
        key_of(job->nodes[nd], k, key, sizeof key);
        tdm__enc_str(&e, key);
        tdm__enc_svar(&e, atomic_load(&lv->src[nd].v[k]));
    }
    uint8_t *p = NULL;
    size_t len = 0;
    tdm_err err = tdm__enc_finish(&e, &p, &len);
    if (err == TDM_OK)
        err = tdm__ckpt_put(st, LIVE_BLOB, p, len);
    tdm__free(p);
    return err;
}

/* Takes one restored setting @p key = @p v (ms), or logs why not. */
static void restore_one(tdm_job *job, tdm__live *lv, const char *key, int64_t v,
                        uint64_t id)
{
    char text[32], why[512];
    live_req r;
    snprintf(text, sizeof text, "%lldms", (long long)v);
    if (check(job, key, text, &r, why, sizeof why) != TDM_OK) {
        tdm__job_log(job, "checkpoint %llu: live setting not restored: %s",
                     (unsigned long long)id, why);
        return;
    }
    /* The clock first: job_now takes the metrics lock, which is taken
     * before lv->mu everywhere. */
    tdm_time_ms now = job_now(job);
    pthread_mutex_lock(&lv->mu);
    store(job, lv, &r, "checkpoint", now);
    pthread_mutex_unlock(&lv->mu);
}

tdm_err tdm__live_ckpt_load(tdm__run *run, struct tdm__ckpt_reader *rd,
                            uint64_t id, char *errbuf, size_t errbuf_size)
{
    tdm__live *lv = run->job->rec->live;
    void *p = NULL;
    size_t len = 0, off = 0;
    const char *why = NULL;
    if (run->restarted || !lv)
        return TDM_OK;
    tdm_err err = tdm__ckpt_get(rd, LIVE_BLOB, &p, &len);
    if (err == TDM_ERR_STATE) /* an older checkpoint: no blob */
        return TDM_OK;
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "checkpoint %llu: %s",
                         (unsigned long long)id, tdm__ckpt_reader_errmsg(rd));
    tdm__dec d;
    uint64_t ver = 0, n = 0;
    tdm__dec_init(&d, p, len);
    if (tdm__dec_uvar(&d, &ver) == TDM_OK && ver != LIVE_BLOB_VERSION)
        (void)tdm__dec_fail(&d, "unknown version");
    (void)tdm__dec_uvar(&d, &n);
    for (uint64_t i = 0; i < n && d.err == TDM_OK; i++) {
        char *key = NULL;
        int64_t v = 0;
        if (tdm__dec_str(&d, &key) == TDM_OK && tdm__dec_svar(&d, &v) == TDM_OK)
            restore_one(run->job, lv, key, v, id);
        tdm__free(key);
    }
    tdm__free(p);
    if (tdm__dec_error(&d, &off, &why) == TDM_OK)
        return TDM_OK;
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                     "checkpoint %llu: blob %s: %s at offset %zu",
                     (unsigned long long)id, LIVE_BLOB, why, off);
}

/* ---- The source subtask's side (R-LV-4) ---- */

void tdm__src_live_apply(tdm__rt_src_task *t)
{
    const tdm__live_src *ls = t->src->live;
    if (!ls || !t->reader)
        return;
    uint64_t g = atomic_load_explicit(&ls->gen, memory_order_acquire);
    if (g == t->live_gen)
        return;
    t->live_gen = g;
    /* A source with watermark.delay keeps its exact delay (R-LV-2). */
    if (t->src->node->spec.src.wm_delay_ms < 0)
        (void)tdm_reader_set_bound(t->reader,
                                   atomic_load(&ls->v[TDM__LIVE_BOUND]));
    (void)tdm_reader_set_idle_timeout(t->reader,
                                      atomic_load(&ls->v[TDM__LIVE_IDLE]));
    tdm__rt_align *a = t->src->align;
    if (a && a->coord) {
        pthread_mutex_lock(&a->mu);
        tdm__align_coord_set_drift(a->coord,
                                   atomic_load(&ls->v[TDM__LIVE_DRIFT]));
        pthread_mutex_unlock(&a->mu);
    }
    atomic_store(&t->live_seen, g);
}
