/* SPDX-License-Identifier: MIT */
/* test_rt_feed.h - a source the test feeds row by row while the job runs
 * (rows handed over under a mutex, read at the source's next poll; the
 * poll waits a few ms on a condition, never sleeps) and a clock the test
 * moves (clock_now, read through test_clock): periodic watermarks,
 * idleness and ages then follow from the rules.  Shared by
 * test_rt_metrics.c and test_rt_chain.c; included after test_rt_kit.h.
 */
#ifndef TDM_TEST_RT_FEED_H
#define TDM_TEST_RT_FEED_H

#include <stdlib.h>

#include "test_rt_kit.h"
#include "testhooks.h"

#define FEED_MAX 512

typedef struct feed {
    const char *name;
    int parts;
    kit_row rows[FEED_MAX];
    int n, pos;
    int end;
    atomic_int polls;
} feed;

static pthread_mutex_t feed_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t feed_cv = PTHREAD_COND_INITIALIZER;
static feed feeds[4];
static int n_feeds;

static inline feed *feed_new(const char *name, int parts)
{
    feed *f = &feeds[n_feeds++];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->parts = parts;
    atomic_init(&f->polls, 0);
    return f;
}

/* Waits until the source has polled twice more: one whole iteration of
 * its loop (poll, clock reading, watermark tick) then ran after the
 * call, e.g. with the clock the test just set. */
static inline void feed_sync(feed *f)
{
    int target = atomic_load(&f->polls) + 2;
    double t0 = kit_secs();
    while (atomic_load(&f->polls) < target) {
        ASSERT_TRUE(kit_secs() - t0 < 20);
        pthread_mutex_lock(&feed_mu);
        pthread_cond_broadcast(&feed_cv);
        pthread_mutex_unlock(&feed_mu);
        sched_yield();
    }
}

static inline feed *feed_find(const char *name)
{
    for (int i = 0; i < n_feeds; i++)
        if (strcmp(feeds[i].name, name) == 0)
            return &feeds[i];
    return NULL;
}

/* Hands rows to the source (it reads them at its next poll). */
static inline void feed_push(feed *f, int part, const char *k, int64_t ts)
{
    pthread_mutex_lock(&feed_mu);
    ASSERT_TRUE(f->n < FEED_MAX);
    f->rows[f->n++] = (kit_row){part, k, ts, 1};
    pthread_cond_broadcast(&feed_cv);
    pthread_mutex_unlock(&feed_mu);
}

static inline void feed_end(feed *f)
{
    pthread_mutex_lock(&feed_mu);
    f->end = 1;
    pthread_cond_broadcast(&feed_cv);
    pthread_mutex_unlock(&feed_mu);
}

/* Subtask 0 reads every partition (the tests run at parallelism 1 or
 * give other subtasks none). */
static inline tdm_err feed_open(const tdm__source_conf *conf, int index,
                                int count, tdm__dead_fn dead, void *dead_ud,
                                tdm__source **out, int *n_partitions,
                                char *errbuf, size_t errbuf_size)
{
    (void)count;
    (void)dead;
    (void)dead_ud;
    feed *f = feed_find(conf->path);
    if (!f)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "no feed \"%s\"",
                         conf->path);
    tdm__source *s = calloc(1, sizeof *s);
    s->index = index;
    s->d = (const kit_data *)(void *)f;
    *out = s;
    *n_partitions = index == 0 ? f->parts : 0;
    return TDM_OK;
}

/* Returns what was handed over; waits a little (on a condition, not a
 * sleep) when nothing is there, as a real connector's poll does. */
static inline tdm_err feed_poll(tdm__source *s, tdm__batch *b, size_t max,
                                uint8_t *finished, int *eof)
{
    feed *f = (feed *)(void *)s->d;
    atomic_fetch_add(&f->polls, 1);
    pthread_mutex_lock(&feed_mu);
    if (f->pos == f->n && !f->end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 5000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&feed_cv, &feed_mu, &ts);
    }
    while (b->n < max && f->pos < f->n) {
        const kit_row *r = &f->rows[f->pos++];
        kit_fill(b, r->part, r->k, r->ts, r->v);
    }
    if (f->end && f->pos == f->n) {
        for (int p = 0; p < f->parts; p++)
            finished[p] = 1;
        *eof = 1;
    }
    pthread_mutex_unlock(&feed_mu);
    return TDM_OK;
}

static inline void feed_close(tdm__source *s)
{
    free(s);
}

static const tdm__source_vtab feed_source = {
    .version = 1, .open = feed_open, .poll = feed_poll, .close = feed_close};

static inline tdm_node *feed_node(tdm_job *job, const char *name, const char *f)
{
    tdm_node *s = kit_node(job, TDM_NODE_SOURCE, name);
    tdm__node_set_source_vtab(s, &feed_source);
    KIT_SET(s, "path", f);
    KIT_SET(s, "schema", KIT_SCHEMA);
    KIT_SET(s, "timestamp.field", "ts");
    return s;
}

static _Atomic int64_t clock_now;

static inline tdm_time_ms test_clock(void *ud)
{
    (void)ud;
    return atomic_load(&clock_now);
}

#define T0 1000000000000LL /* 2001-09-09T01:46:40Z */

#endif /* TDM_TEST_RT_FEED_H */
