/* SPDX-License-Identifier: MIT */
/* test_rt_kit.h - what the runtime tests share: an in-memory source whose
 * rows a test lists by hand (or generates), a collecting sink that turns
 * every row it receives into a line of text (optionally blocking until
 * the test releases it), and helpers to build, run and compare jobs.
 * Included by tests/unit/test_rt_*.c only.
 */
#ifndef TDM_TEST_RT_KIT_H
#define TDM_TEST_RT_KIT_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "runtime/rt.h"
#include "testhooks.h"

/* ====================================================================== */
/* Sources                                                                 */
/* ====================================================================== */

/* One row of a listed dataset: partition, key, timestamp, value.  The
 * kit's schema is "k:string, ts:int64, v:int64". */
typedef struct kit_row {
    int part;
    const char *k;
    int64_t ts;
    int64_t v;
} kit_row;

#define KIT_SCHEMA "k:string, ts:int64, v:int64"

/* A dataset: listed rows, or (rows == NULL) generated ones: row i has
 * key "k<i % keys>", ts i * step, v 1, partition i % parts; gen_n < 0
 * means endless. */
typedef struct kit_data {
    const char *name;
    int parts;
    const kit_row *rows;
    size_t n;
    int64_t gen_n;
    int keys;
    int64_t step;
} kit_data;

#define KIT_MAX_DATA 16
static kit_data kit_datasets[KIT_MAX_DATA];
static int kit_n_data;

static inline void kit_add_data(kit_data d)
{
    for (int i = 0; i < kit_n_data; i++)
        if (strcmp(kit_datasets[i].name, d.name) == 0) {
            kit_datasets[i] = d;
            return;
        }
    ASSERT_TRUE(kit_n_data < KIT_MAX_DATA);
    kit_datasets[kit_n_data++] = d;
}

static inline const kit_data *kit_find(const char *name)
{
    for (int i = 0; i < kit_n_data; i++)
        if (strcmp(kit_datasets[i].name, name) == 0)
            return &kit_datasets[i];
    return NULL;
}

struct tdm__source {
    const kit_data *d;
    const tdm__source_conf *conf;
    int index, count;
    int n_local;      /* partitions of this subtask */
    size_t pos;       /* next listed row (or generated index) */
    int64_t *last_of; /* listed: index of each partition's last row */
    uint8_t *done;
};

/* Partition p belongs to subtask p % count, as local index p / count. */
static inline tdm_err kit_open(const tdm__source_conf *conf, int index,
                               int count, tdm__dead_fn dead, void *dead_ud,
                               tdm__source **out, int *n_partitions,
                               char *errbuf, size_t errbuf_size)
{
    (void)dead;
    (void)dead_ud;
    const kit_data *d = kit_find(conf->path);
    if (!d)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "no dataset \"%s\"",
                         conf->path);
    tdm__source *s = calloc(1, sizeof *s);
    s->d = d;
    s->conf = conf;
    s->index = index;
    s->count = count;
    for (int p = 0; p < d->parts; p++)
        if (p % count == index)
            s->n_local++;
    s->last_of = calloc((size_t)d->parts + 1, sizeof *s->last_of);
    s->done = calloc((size_t)d->parts + 1, 1);
    for (int p = 0; p < d->parts; p++)
        s->last_of[p] = -1;
    for (size_t i = 0; d->rows && i < d->n; i++)
        s->last_of[d->rows[i].part] = (int64_t)i;
    *out = s;
    *n_partitions = s->n_local;
    return TDM_OK;
}

static inline void kit_fill(tdm__batch *b, int local, const char *k, int64_t ts,
                            int64_t v)
{
    tdm__row *row = tdm__batch_add(b);
    row->partition = (uint32_t)local;
    tdm__batch_set_string(b, row, 0, k, strlen(k));
    row->v[1].u.i = ts;
    row->v[1].null = 0;
    row->v[2].u.i = v;
    row->v[2].null = 0;
    row->ts = ts;
}

static inline tdm_err kit_poll(tdm__source *s, tdm__batch *b, size_t max,
                               uint8_t *finished, int *eof)
{
    const kit_data *d = s->d;
    if (!d->rows) {
        char key[32];
        while (b->n < max && (d->gen_n < 0 || (int64_t)s->pos < d->gen_n)) {
            int64_t i = (int64_t)s->pos++;
            int p = (int)(i % d->parts);
            if (p % s->count != s->index)
                continue;
            snprintf(key, sizeof key, "k%lld", (long long)(i % d->keys));
            kit_fill(b, p / s->count, key, i * d->step, 1);
        }
        if (d->gen_n >= 0 && (int64_t)s->pos >= d->gen_n) {
            for (int l = 0; l < s->n_local; l++)
                finished[l] = 1;
            *eof = 1;
        }
        return TDM_OK;
    }
    while (b->n < max && s->pos < d->n) {
        size_t i = s->pos++;
        const kit_row *r = &d->rows[i];
        if (r->part % s->count != s->index)
            continue;
        int local = r->part / s->count;
        kit_fill(b, local, r->k, r->ts, r->v);
        if ((int64_t)i == s->last_of[r->part])
            finished[local] = 1;
    }
    if (s->pos >= d->n) {
        /* Partitions without rows finish at once. */
        for (int p = 0; p < d->parts; p++)
            if (p % s->count == s->index && s->last_of[p] < 0)
                finished[p / s->count] = 1;
        *eof = 1;
    }
    return TDM_OK;
}

static inline void kit_close(tdm__source *s)
{
    free(s->last_of);
    free(s->done);
    free(s);
}

static const tdm__source_vtab kit_source = {
    .version = 1, .open = kit_open, .poll = kit_poll, .close = kit_close};

/* ====================================================================== */
/* Sinks                                                                   */
/* ====================================================================== */

typedef struct kit_sink {
    const char *name;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char **lines;
    size_t n, cap;
    /* Blocking: while gate is 1, write_result waits (after counting
     * itself in blocked). */
    int gate;
    int blocked;
    int fail_writes; /* 1: writes return TDM_ERR_IO */
    int opened, closed, upsert;
} kit_sink;

#define KIT_MAX_SINKS 8
static kit_sink kit_sinks[KIT_MAX_SINKS];
static int kit_n_sinks;

static inline kit_sink *kit_sink_get(const char *name)
{
    for (int i = 0; i < kit_n_sinks; i++)
        if (strcmp(kit_sinks[i].name, name) == 0)
            return &kit_sinks[i];
    ASSERT_TRUE(kit_n_sinks < KIT_MAX_SINKS);
    kit_sink *k = &kit_sinks[kit_n_sinks++];
    memset(k, 0, sizeof *k);
    k->name = name;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    return k;
}

static inline void kit_sink_clear(kit_sink *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->lines[i]);
    free(k->lines);
    k->lines = NULL;
    k->n = k->cap = 0;
    k->opened = k->closed = k->upsert = 0;
    /* A new job's sink neither blocks nor fails: a case that gated or
     * failed "out" must not leave it so for the next case of the same
     * process (bug: test_rt_chain run as one process failed
     * stop_without_drain_passes_down_the_chain after 20 s, its sink
     * still failing every write from failure_downstream_...). */
    k->gate = 0;
    k->blocked = 0;
    k->fail_writes = 0;
}

static inline void kit_push_line(kit_sink *k, const char *line)
{
    if (k->n == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 64;
        k->lines = realloc(k->lines, k->cap * sizeof *k->lines);
    }
    k->lines[k->n++] = strdup(line);
}

struct tdm__sinkobj {
    kit_sink *k;
};

static inline tdm_err kit_sink_open(const tdm__sink_conf *conf, int upsert,
                                    tdm__sinkobj **out, char *errbuf, size_t n)
{
    (void)errbuf;
    (void)n;
    tdm__sinkobj *o = calloc(1, sizeof *o);
    o->k = kit_sink_get(conf->name);
    o->k->opened++;
    o->k->upsert = upsert;
    *out = o;
    return TDM_OK;
}

static inline void kit_val(char *buf, size_t n, tdm_type t, const tdm__val *v)
{
    if (v->null)
        snprintf(buf, n, "null");
    else if (t == TDM_TYPE_STRING)
        snprintf(buf, n, "%.*s", (int)v->u.s.len, v->u.s.p);
    else if (t == TDM_TYPE_DOUBLE)
        snprintf(buf, n, "%g", v->u.d);
    else if (t == TDM_TYPE_BOOL)
        snprintf(buf, n, "%s", v->u.i ? "true" : "false");
    else
        snprintf(buf, n, "%lld", (long long)v->u.i);
}

static const char *const kit_timing[] = {"early", "on_time", "late"};
static const char *const kit_change[] = {"+", "~", "-"};

/* "col=val col=val [s,e) timing#pane change" (update marked with u). */
static inline tdm_err kit_write_result(tdm__sinkobj *o, const tdm__out_row *r)
{
    kit_sink *k = o->k;
    char line[1024], v[256];
    size_t off = 0;
    line[0] = 0;
    for (int i = 0; i < r->n_cols; i++) {
        kit_val(v, sizeof v, r->cols[i].type, &r->cols[i].v);
        off += (size_t)snprintf(line + off, sizeof line - off, "%s=%s ",
                                r->cols[i].name, v);
    }
    if (r->has_window)
        off += (size_t)snprintf(line + off, sizeof line - off, "[%lld,%lld) ",
                                (long long)r->win_start, (long long)r->win_end);
    snprintf(line + off, sizeof line - off, "%s#%lld%s %s",
             kit_timing[r->timing], (long long)r->pane_index,
             r->is_update ? "u" : "", kit_change[r->change]);
    pthread_mutex_lock(&k->mu);
    if (k->gate) {
        k->blocked++;
        pthread_cond_broadcast(&k->cv);
        while (k->gate)
            pthread_cond_wait(&k->cv, &k->mu);
        k->blocked--;
    }
    tdm_err err = k->fail_writes ? TDM_ERR_IO : TDM_OK;
    if (err == TDM_OK)
        kit_push_line(k, line);
    pthread_mutex_unlock(&k->mu);
    return err;
}

static inline tdm_err kit_write_row(tdm__sinkobj *o, const tdm__row *row)
{
    char line[1024];
    tdm__row_render(row, line, sizeof line);
    pthread_mutex_lock(&o->k->mu);
    kit_push_line(o->k, line);
    pthread_mutex_unlock(&o->k->mu);
    return TDM_OK;
}

static inline tdm_err kit_write_dead(tdm__sinkobj *o, const char *loc,
                                     const char *reason, const char *raw,
                                     size_t raw_len)
{
    char line[1024];
    snprintf(line, sizeof line, "%s | %s | %.*s", loc, reason, (int)raw_len,
             raw);
    pthread_mutex_lock(&o->k->mu);
    kit_push_line(o->k, line);
    pthread_mutex_unlock(&o->k->mu);
    return TDM_OK;
}

static inline tdm_err kit_sink_close(tdm__sinkobj *o, char *errbuf, size_t n)
{
    (void)errbuf;
    (void)n;
    o->k->closed++;
    free(o);
    return TDM_OK;
}

static const tdm__sink_vtab kit_sink_vt = {.version = 1,
                                           .open = kit_sink_open,
                                           .write_result = kit_write_result,
                                           .write_row = kit_write_row,
                                           .write_dead = kit_write_dead,
                                           .close = kit_sink_close};

/* ====================================================================== */
/* Jobs                                                                    */
/* ====================================================================== */

static inline tdm_node *kit_node(tdm_job *job, tdm_node_kind kind,
                                 const char *name)
{
    tdm_node *n = NULL;
    char msg[256];
    tdm_err e = tdm_job_add_node(job, kind, name, &n, msg, sizeof msg);
    if (e != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "add %s: %s", name, msg);
    if (kind == TDM_NODE_SINK) {
        tdm__node_set_sink_vtab(n, &kit_sink_vt);
        kit_sink_clear(kit_sink_get(name));
    }
    return n;
}

#define KIT_SET(n, key, value)                                                 \
    do {                                                                       \
        char m_[256];                                                          \
        if (tdm_node_set((n), (key), (value), m_, sizeof m_) != TDM_OK)        \
            tdm_test_fail(__FILE__, __LINE__, "%s=%s: %s", (key), (value),     \
                          m_);                                                 \
    } while (0)

#define KIT_JOB_SET(j, key, value)                                             \
    do {                                                                       \
        char m_[256];                                                          \
        if (tdm_job_set((j), (key), (value), m_, sizeof m_) != TDM_OK)         \
            tdm_test_fail(__FILE__, __LINE__, "%s=%s: %s", (key), (value),     \
                          m_);                                                 \
    } while (0)

/* A source node reading dataset @p data through the kit source. */
static inline tdm_node *kit_source_node(tdm_job *job, const char *name,
                                        const char *data)
{
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, name);
    tdm__node_set_source_vtab(s, &kit_source);
    KIT_SET(s, "path", data);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    return s;
}

static inline int kit_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the sink's lines (a multiset compare) and checks them against
 * @p want (n lines, any order). */
static inline void kit_expect_lines(const char *file, int line,
                                    const char *sink, const char *const *want,
                                    size_t n)
{
    kit_sink *k = kit_sink_get(sink);
    char **w = malloc((n + 1) * sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = (char *)want[i];
    qsort(w, n, sizeof *w, kit_cmp);
    qsort(k->lines, k->n, sizeof *k->lines, kit_cmp);
    size_t i = 0;
    for (; i < n && i < k->n; i++)
        if (strcmp(w[i], k->lines[i]) != 0)
            break;
    if (i < n || i < k->n) {
        fprintf(stderr, "sink %s: got %zu lines, want %zu\n", sink, k->n, n);
        for (size_t j = 0; j < k->n; j++)
            fprintf(stderr, "  got:  %s\n", k->lines[j]);
        for (size_t j = 0; j < n; j++)
            fprintf(stderr, "  want: %s\n", w[j]);
        free(w);
        tdm_test_fail(file, line, "sink %s differs at sorted line %zu", sink,
                      i);
    }
    free(w);
}

#define KIT_EXPECT(sink, ...)                                                  \
    do {                                                                       \
        static const char *const w_[] = {__VA_ARGS__};                         \
        kit_expect_lines(__FILE__, __LINE__, (sink), w_,                       \
                         sizeof w_ / sizeof w_[0]);                            \
    } while (0)

#define KIT_EXPECT_NONE(sink) ASSERT_EQ(kit_sink_get(sink)->n, 0)

static inline void kit_run_ok(tdm_job *job)
{
    char msg[512] = "";
    tdm_err e = tdm_job_run(job, msg, sizeof msg);
    if (e != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "run: %s: %s", tdm_err_name(e), msg);
}

/* Seconds since some fixed point, for bounded spin-waits. */
static inline double kit_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A job run on another thread. */
typedef struct kit_bg {
    tdm_job *job;
    pthread_t th;
    tdm_err err;
    char msg[512];
    atomic_int done;
} kit_bg;

static inline void *kit_bg_main(void *arg)
{
    kit_bg *bg = arg;
    bg->err = tdm_job_run(bg->job, bg->msg, sizeof bg->msg);
    atomic_store(&bg->done, 1);
    return NULL;
}

static inline void kit_bg_start(kit_bg *bg, tdm_job *job)
{
    memset(bg, 0, sizeof *bg);
    bg->job = job;
    atomic_init(&bg->done, 0);
    ASSERT_EQ(pthread_create(&bg->th, NULL, kit_bg_main, bg), 0);
}

static inline tdm_err kit_bg_join(kit_bg *bg)
{
    pthread_join(bg->th, NULL);
    return bg->err;
}

#endif /* TDM_TEST_RT_KIT_H */
