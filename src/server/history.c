/* SPDX-License-Identifier: MIT */
/* history.c - the last ten minutes of a job's watermarks, for the web
 * page's chart and for "since when" in the culprit and the diagnosis.
 * One sampler thread per server takes a snapshot every second and keeps,
 * per vertex, the minimum output watermark and the maximum lag over its
 * subtasks, plus the identity of the partition holding the watermark back
 * and since when it has been the same one.  Readers (the REST routes)
 * copy out under the history's lock; the pipeline is never touched.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "server/server.h"

#define HISTORY_CAP 600    /* samples: ten minutes at one per second */
#define HISTORY_NAMES 4096 /* distinct vertex names remembered */

/* One vertex in one sample. */
typedef struct hs_entry {
    int slot;       /* index into the history's names */
    tdm_time_ms wm; /* minimum output watermark (has_wm) */
    int64_t lag;    /* maximum lag (has_lag) */
    uint8_t has_wm, has_lag;
} hs_entry;

typedef struct hs_sample {
    tdm_time_ms t; /* processing time of the snapshot */
    hs_entry *v;
    int n;
} hs_sample;

struct tdm__history {
    tdm_job *job;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int started;
    int stop;
    int64_t interval_ms;
    /* Vertex names seen, interned: samples refer to them by slot. */
    char **names;
    int n_names, cap_names;
    /* The ring of samples: head is the oldest, n how many. */
    hs_sample ring[HISTORY_CAP];
    size_t head, n;
    /* The current culprit (c_vertex NULL: none) and its first sample. */
    char *c_vertex;
    int c_subtask, c_partition;
    tdm_time_ms c_since;
};

/* Creates an empty history (see server.h). */
tdm_err tdm__history_new(tdm_job *job, tdm__history **out)
{
    tdm__history *h = tdm__calloc(1, sizeof *h);
    pthread_condattr_t ca;

    *out = NULL;
    if (h == NULL)
        return TDM_ERR_NOMEM;
    h->job = job;
    if (pthread_mutex_init(&h->mu, NULL) != 0) {
        tdm__free(h);
        return TDM_ERR_NOMEM;
    }
    /* The sampler's timed wait runs on the monotonic clock, so that a
     * change of the wall clock neither stalls nor rushes it. */
    if (pthread_condattr_init(&ca) != 0) {
        pthread_mutex_destroy(&h->mu);
        tdm__free(h);
        return TDM_ERR_NOMEM;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (pthread_cond_init(&h->cv, &ca) != 0) {
        pthread_condattr_destroy(&ca);
        pthread_mutex_destroy(&h->mu);
        tdm__free(h);
        return TDM_ERR_NOMEM;
    }
    pthread_condattr_destroy(&ca);
    *out = h;
    return TDM_OK;
}

/* The sampler: a snapshot now, then one every interval until told to
 * stop.  The deadline advances by whole intervals; when a snapshot took
 * longer than an interval the schedule restarts from now instead of
 * catching up with a burst. */
static void *sampler_main(void *arg)
{
    tdm__history *h = arg;
    struct timespec next, now;

    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        tdm_metrics *m = NULL;
        pthread_mutex_unlock(&h->mu);
        if (tdm_job_metrics(h->job, &m) == TDM_OK) {
            /* Out of memory loses one sample; the next may succeed. */
            (void)tdm__history_add(h, m);
            tdm_metrics_free(m);
        }
        pthread_mutex_lock(&h->mu);
        next.tv_sec += (time_t)(h->interval_ms / 1000);
        next.tv_nsec += (long)(h->interval_ms % 1000) * 1000000L;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec ||
            (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
            next = now;
        while (!h->stop) {
            int rc = pthread_cond_timedwait(&h->cv, &h->mu, &next);
            if (rc == ETIMEDOUT)
                break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Starts the sampler thread (see server.h). */
tdm_err tdm__history_start(tdm__history *h, int64_t interval_ms)
{
    if (h == NULL || interval_ms <= 0)
        return TDM_ERR_INVAL;
    if (h->started)
        return TDM_ERR_STATE;
    h->interval_ms = interval_ms;
    h->stop = 0;
    if (pthread_create(&h->th, NULL, sampler_main, h) != 0)
        return TDM_ERR_NOMEM;
    h->started = 1;
    return TDM_OK;
}

/* Releases the entries of one sample. */
static void sample_clear(hs_sample *s)
{
    tdm__free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* Ends a helper thread of the server (see server.h). */
void tdm__thread_stop(pthread_mutex_t *mu, pthread_cond_t *cv, int *stop,
                      pthread_t th)
{
    pthread_mutex_lock(mu);
    *stop = 1;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
    pthread_join(th, NULL);
}

/* Stops the sampler and frees everything (see server.h). */
void tdm__history_free(tdm__history *h)
{
    if (h == NULL)
        return;
    if (h->started)
        tdm__thread_stop(&h->mu, &h->cv, &h->stop, h->th);
    for (size_t i = 0; i < HISTORY_CAP; i++)
        sample_clear(&h->ring[i]);
    for (int i = 0; i < h->n_names; i++)
        tdm__free(h->names[i]);
    tdm__free(h->names);
    tdm__free(h->c_vertex);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    tdm__free(h);
}

/* The slot of vertex name @p name, added if new; -1 on NOMEM or when
 * the table is full.  Called under the lock. */
static int intern(tdm__history *h, const char *name)
{
    for (int i = 0; i < h->n_names; i++) {
        if (strcmp(h->names[i], name) == 0)
            return i;
    }
    if (h->n_names >= HISTORY_NAMES)
        return -1;
    if (h->n_names == h->cap_names) {
        int cap = h->cap_names ? 2 * h->cap_names : 16;
        char **nn = tdm__realloc(h->names, (size_t)cap * sizeof *nn);
        if (nn == NULL)
            return -1;
        h->names = nn;
        h->cap_names = cap;
    }
    h->names[h->n_names] = tdm__strndup(name, strlen(name));
    if (h->names[h->n_names] == NULL)
        return -1;
    return h->n_names++;
}

/* The index of vertex @p name in the snapshot, or -1. */
static int vertex_index(const tdm_metrics *m, const char *name)
{
    size_t nv = tdm_metrics_vertex_count(m);
    for (size_t i = 0; i < nv; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(m, i);
        if (vi != NULL && vi->name != NULL && strcmp(vi->name, name) == 0)
            return (int)i;
    }
    return -1;
}

/* Remembers the culprit of the sample at time @p t: the same partition
 * as before keeps its since-time, another one (or none) starts over.
 * Called under the lock.  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err track_culprit(tdm__history *h, const tdm__culprit *c,
                             tdm_time_ms t)
{
    char *v;
    if (!c->found || c->vertex == NULL) {
        tdm__free(h->c_vertex);
        h->c_vertex = NULL;
        return TDM_OK;
    }
    if (h->c_vertex != NULL && strcmp(h->c_vertex, c->vertex) == 0 &&
        h->c_subtask == c->subtask && h->c_partition == c->partition)
        return TDM_OK;
    v = tdm__strndup(c->vertex, strlen(c->vertex));
    if (v == NULL)
        return TDM_ERR_NOMEM;
    tdm__free(h->c_vertex);
    h->c_vertex = v;
    h->c_subtask = c->subtask;
    h->c_partition = c->partition;
    h->c_since = t;
    return TDM_OK;
}

/* Adds one sample from a snapshot (see server.h). */
tdm_err tdm__history_add(tdm__history *h, const tdm_metrics *m)
{
    size_t nv, nval;
    hs_entry *e;
    hs_sample *s;
    tdm__culprit c;
    int n = 0;
    tdm_err err = TDM_OK;

    if (h == NULL || m == NULL)
        return TDM_ERR_INVAL;
    nval = tdm_metrics_count(m);
    if (nval == 0)
        return TDM_OK;
    nv = tdm_metrics_vertex_count(m);
    e = tdm__calloc(nv ? nv : 1, sizeof *e);
    if (e == NULL)
        return TDM_ERR_NOMEM;
    /* Aggregate over subtasks: the slowest subtask's watermark is the
     * vertex's, and so is the largest lag. */
    for (size_t i = 0; i < nval; i++) {
        const tdm_metric_value *v = tdm_metrics_at(m, i);
        int k;
        if (v == NULL || v->vertex == NULL ||
            (v->id != TDM_METRIC_WM_OUTPUT && v->id != TDM_METRIC_WM_LAG))
            continue;
        k = vertex_index(m, v->vertex);
        if (k < 0)
            continue;
        if (v->id == TDM_METRIC_WM_OUTPUT) {
            if (!e[k].has_wm || v->value < e[k].wm)
                e[k].wm = v->value;
            e[k].has_wm = 1;
        } else {
            if (!e[k].has_lag || v->value > e[k].lag)
                e[k].lag = v->value;
            e[k].has_lag = 1;
        }
    }
    tdm__find_culprit(m, &c);

    pthread_mutex_lock(&h->mu);
    /* A finished job's snapshot is its final one, always at the same
     * time: one sample of it is enough. */
    if (h->n > 0 &&
        tdm_metrics_time(m) <= h->ring[(h->head + h->n - 1) % HISTORY_CAP].t) {
        pthread_mutex_unlock(&h->mu);
        tdm__free(e);
        return TDM_OK;
    }
    for (size_t i = 0; i < nv; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(m, i);
        if (!e[i].has_wm && !e[i].has_lag)
            continue;
        e[i].slot = intern(h, vi->name);
        if (e[i].slot < 0)
            continue;
        e[n++] = e[i];
    }
    if (h->n == HISTORY_CAP) {
        sample_clear(&h->ring[h->head]);
        h->head = (h->head + 1) % HISTORY_CAP;
        h->n--;
    }
    s = &h->ring[(h->head + h->n) % HISTORY_CAP];
    s->t = tdm_metrics_time(m);
    s->v = e;
    s->n = n;
    h->n++;
    err = track_culprit(h, &c, s->t);
    pthread_mutex_unlock(&h->mu);
    return err;
}

/* Number of samples (see server.h). */
size_t tdm__history_count(const tdm__history *h)
{
    tdm__history *w = (tdm__history *)h;
    size_t n;
    if (h == NULL)
        return 0;
    pthread_mutex_lock(&w->mu);
    n = w->n;
    pthread_mutex_unlock(&w->mu);
    return n;
}

/* Since when a partition has been the culprit (see server.h).  The lock
 * is taken through a cast: reading the history is logically const. */
int tdm__history_culprit_since(const tdm__history *h, const char *vertex,
                               int subtask, int partition, tdm_time_ms *since)
{
    tdm__history *w = (tdm__history *)h;
    int found = 0;
    if (h == NULL || vertex == NULL)
        return 0;
    pthread_mutex_lock(&w->mu);
    if (w->c_vertex != NULL && strcmp(w->c_vertex, vertex) == 0 &&
        w->c_subtask == subtask && w->c_partition == partition) {
        *since = w->c_since;
        found = 1;
    }
    pthread_mutex_unlock(&w->mu);
    return found;
}

/* Since when vertex @p vertex's watermark has been @p wm (see
 * server.h): the newest samples are walked back while they hold it. */
int tdm__history_flat_since(const tdm__history *h, const char *vertex,
                            tdm_time_ms wm, tdm_time_ms *since)
{
    tdm__history *w = (tdm__history *)h;
    int found = 0;
    if (h == NULL || vertex == NULL)
        return 0;
    pthread_mutex_lock(&w->mu);
    for (size_t k = w->n; k > 0; k--) {
        const hs_sample *s = &w->ring[(w->head + k - 1) % HISTORY_CAP];
        int same = 0;
        for (int i = 0; i < s->n; i++)
            if (s->v[i].has_wm && s->v[i].wm == wm &&
                strcmp(w->names[s->v[i].slot], vertex) == 0)
                same = 1;
        if (!same)
            break;
        *since = s->t;
        found = 1;
    }
    pthread_mutex_unlock(&w->mu);
    return found;
}

/* A watermark as JSON: null for none yet, "end" for end of input. */
static json_t *json_time(tdm_time_ms t)
{
    if (t == TDM_TIME_MIN)
        return json_null();
    if (t == TDM_TIME_MAX)
        return json_string("end");
    return json_integer(t);
}

/* Sets @p key of @p obj to @p v (taken, also on failure); false on
 * NOMEM (a NULL @p v is the allocation that failed). */
static int put(json_t *obj, const char *key, json_t *v)
{
    return v != NULL && json_object_set_new(obj, key, v) == 0;
}

/* The samples as JSON (see server.h). */
json_t *tdm__history_json(const tdm__history *h)
{
    tdm__history *w = (tdm__history *)h;
    json_t *arr = json_array();
    if (arr == NULL || h == NULL)
        return arr;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->n; i++) {
        const hs_sample *s = &w->ring[(w->head + i) % HISTORY_CAP];
        json_t *o = json_object(), *vs = json_object();
        /* json_*_set_new and append_new take the value even when they
         * fail, so each value is released exactly once; vs is also held
         * here until it is filled. */
        if (o == NULL || vs == NULL) {
            json_decref(o);
            json_decref(vs);
            goto fail;
        }
        if (json_array_append_new(arr, o) != 0 ||
            !put(o, "t", json_integer(s->t)) ||
            json_object_set(o, "vertices", vs) != 0) {
            json_decref(vs);
            goto fail;
        }
        for (int j = 0; j < s->n; j++) {
            const hs_entry *e = &s->v[j];
            json_t *v = json_object();
            if (v == NULL ||
                json_object_set_new(vs, w->names[e->slot], v) != 0 ||
                !put(v, "watermark",
                     e->has_wm ? json_time(e->wm) : json_null()) ||
                !put(v, "lag",
                     e->has_lag ? json_integer(e->lag) : json_null())) {
                json_decref(vs);
                goto fail;
            }
        }
        json_decref(vs);
    }
    pthread_mutex_unlock(&w->mu);
    return arr;
fail:
    pthread_mutex_unlock(&w->mu);
    json_decref(arr);
    return NULL;
}
