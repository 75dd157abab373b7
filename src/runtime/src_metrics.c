/* SPDX-License-Identifier: MIT */
/* src_metrics.c - a source subtask's published metrics: their initial
 * "none" values, their publication per batch, and the debug line per
 * watermark.  The figures themselves (tdm__rt_src_metrics, tdm__rt_part) are
 * read by snapshots (metrics.c) under the rules of metrics.h; this file
 * only writes them from the subtask's own thread, or before it starts.
 */
#include <string.h>
#include "runtime/task_source.h"
#include "runtime/src_metrics.h"
#include "time/wm.h"

/* Zeroes the published metrics: watermarks at "none", no record yet,
 * no lag yet. */
void tdm__src_metrics_init(tdm__rt_src_task *t)
{
    tdm__rt_src_metrics *m = &t->met.m;
    atomic_init(&m->in, 0);
    atomic_init(&m->out, 0);
    atomic_init(&m->bad, 0);
    atomic_init(&m->guard, 0);
    atomic_init(&m->dead, 0);
    atomic_init(&m->bp, 0);
    atomic_init(&m->dup, 0);
    atomic_init(&m->tomb, 0);
    atomic_init(&m->wm_out, TDM_TIME_MIN);
    atomic_init(&m->idle, 0);
    atomic_init(&m->last_at, TDM_TIME_MIN);
    atomic_init(&m->max_ts, TDM_TIME_MIN);
    atomic_init(&m->unit, 0);
    for (int i = 0; i < 4; i++)
        atomic_init(&m->lag[i], -1);
    atomic_init(&m->data_wm, TDM_TIME_MIN);
    atomic_init(&m->fb_since, TDM_TIME_MIN);
    atomic_init(&m->fb_done, 0);
    t->wm_out = TDM_TIME_MIN;
    t->met.lag_next = TDM_TIME_MIN;
    t->met.sweep_next = TDM_TIME_MIN;
}

/* Debug log (log.level debug): one line per watermark the subtask
 * emits, naming the partition with the lowest watermark. */
void tdm__src_metrics_debug_wm(tdm__rt_src_task *t, tdm_time_ms wm)
{
    char from[48], to[48];
    const char *low = "-";
    tdm_time_ms lw = TDM_TIME_MAX;
    for (int p = 0; p < t->n_parts; p++) {
        tdm_time_ms w = tdm_reader_split_watermark_get(t->reader, p);
        if (!t->reported[p] && w < lw) {
            lw = w;
            low = t->met.parts[p].name ? t->met.parts[p].name : "?";
        }
    }
    tdm__rt_format_ms(t->wm_out, from, sizeof from);
    tdm__rt_format_ms(wm, to, sizeof to);
    tdm__job_log(t->run->job,
                 "debug wm vertex=%s subtask=%d from=%s to=%s "
                 "partition_min=%s",
                 t->src->node->name, t->index, from, to, low);
}

/* Publishes the event lag quantiles of the subtask's histogram and the
 * maximum (-1 while no record had a lag).  The per-record path only
 * counts buckets of the sampled batches and keeps their largest lag
 * (exact, not a bucket's bound), set here as the histogram's maximum
 * (the quantiles never exceed it). */
void tdm__src_metrics_publish_lag(tdm__rt_src_task *t)
{
    static const double q[3] = {0.5, 0.99, 0.999};
    tdm__hist *h = &t->met.lag;
    h->max = t->met.lag_max > (uint64_t)INT64_MAX ? INT64_MAX
                                                  : (int64_t)t->met.lag_max;
    bool any = t->met.lag_seen > 0;
    for (int i = 0; i < 3; i++)
        tdm__rt_pub_set(&t->met.m.lag[i],
                        any && h->n ? tdm__hist_quantile(h, q[i]) : -1);
    tdm__rt_pub_set(&t->met.m.lag[3], any ? h->max : -1);
}

/* The fallback watermark's figures (src/time/reader.c, F1-F4), for a
 * source that has one.  The stretch's start and the finished total
 * change together at a hand-back: they are published under the
 * metrics lock, which a snapshot takes to read them (metrics.c), so it
 * never sees one without the other. */
static void publish_fallback(tdm__rt_src_task *t)
{
    if (!t->fb)
        return;
    tdm_time_ms total, stretch = tdm_reader_fallback_time(t->reader, &total);
    tdm_time_ms since = tdm_reader_fallback_driving(t->reader) == 1
                            ? tdm__time_sub_sat(tdm_clock_now(t->clk), stretch)
                            : TDM_TIME_MIN;
    pthread_mutex_lock(&t->met.mx);
    tdm__rt_pub_set(&t->met.m.data_wm, tdm_reader_data_watermark(t->reader));
    tdm__rt_pub_set(&t->met.m.fb_since, since);
    tdm__rt_pub_set(&t->met.m.fb_done, total - stretch);
    pthread_mutex_unlock(&t->met.mx);
}

/* Publishes the watermark (and alignment pause) of the partitions this
 * batch touched, or of every partition when the reader emitted or
 * @p all is set or about every 200 ms (an idle partition's watermark
 * changes without records; a partition whose rows were all filtered out
 * or guarded has its records published then); then, about once per
 * second, the event lag quantiles (not per record: a quantile walks the
 * histogram). */
void tdm__src_metrics_publish(tdm__rt_src_task *t, bool all)
{
    if (t->sweep || t->now >= t->met.sweep_next)
        all = true;
    int n = all ? t->n_parts : t->met.n_mt;
    for (int k = 0; k < n; k++) {
        int p = all ? k : t->met.mtouched[k];
        tdm__rt_part *pp = &t->met.parts[p];
        const tdm__rt_phot *ph = &t->met.hot[p];
        if (all && ph->n != tdm__rt_pub_get(&pp->p_records)) {
            tdm__rt_pub_set(&pp->p_records, ph->n);
            tdm__rt_pub_set(&pp->p_last_at, t->now);
        }
        tdm_time_ms w = tdm_reader_split_watermark_get(t->reader, p);
        if (w != tdm__rt_pub_get(&pp->p_wm))
            tdm__rt_pub_set(&pp->p_wm, w);
        int64_t f = tdm__rt_pub_get(&pp->p_flags) &
                    ~(int64_t)(RT_PF_PAUSED | RT_PF_IDLE);
        if (tdm_reader_split_is_paused(t->reader, p) == 1)
            f |= RT_PF_PAUSED;
        if (tdm_reader_split_is_idle(t->reader, p) == 1)
            f |= RT_PF_IDLE;
        tdm__rt_pub_set(&pp->p_flags, f);
    }
    if (all) {
        t->sweep = false;
        t->met.sweep_next = tdm__time_add_sat(t->now, 200);
        /* The subtask's output and status last (release: a snapshot that
         * reads them, acquiring, sees the splits as new as they). */
        tdm__rt_pub_set(&t->met.m.idle, t->idle);
        publish_fallback(t);
        atomic_store_explicit(&t->met.m.wm_out, t->wm_out,
                              memory_order_release);
    }
    t->met.n_mt = 0;
    if (t->now >= t->met.lag_next) {
        t->met.lag_next = tdm__time_add_sat(t->now, 1000);
        tdm__src_metrics_publish_lag(t);
    }
}

/* The published figures of @p t (snapshots read them). */
const tdm__rt_src_metrics *tdm__src_metrics_pub(const tdm__rt_src_task *t)
{
    return &t->met.m;
}

/* Locks the published partitions against their growth; how many a
 * snapshot may read. */
int tdm__src_metrics_parts_lock(tdm__rt_src_task *t, const tdm__rt_part **parts)
{
    pthread_mutex_lock(&t->met.mx);
    *parts = t->met.parts;
    return t->met.parts ? t->met.n_pub : 0;
}

void tdm__src_metrics_parts_unlock(tdm__rt_src_task *t)
{
    pthread_mutex_unlock(&t->met.mx);
}

/* The source-wide number of local split @p l. */
int tdm__src_metrics_part_global(const tdm__rt_src_task *t, int64_t l)
{
    return t->met.parts[l].global;
}

/* The lock and the lag histogram. */
tdm_err tdm__src_metrics_open(tdm__rt_src_task *t)
{
    if (pthread_mutex_init(&t->met.mx, NULL) != 0)
        return TDM_ERR_NOMEM;
    t->met.mx_ok = true;
    tdm_err err = tdm__hist_init(&t->met.lag);
    if (err != TDM_OK)
        return err;
    t->met.lag_ok = true;
    return TDM_OK;
}

/* Frees the metrics state (a half-built one too). */
void tdm__src_metrics_fini(tdm__rt_src_task *t)
{
    tdm__free(t->met.mtouched);
    tdm__free(t->met.hot);
    for (int p = 0; p < t->part_cap && t->met.parts; p++)
        tdm__free(t->met.parts[p].name);
    tdm__free(t->met.parts);
    if (t->met.lag_ok)
        tdm__hist_fini(&t->met.lag);
    if (t->met.mx_ok)
        pthread_mutex_destroy(&t->met.mx);
}

/* Hook at the end: the final values (every split's watermark, the lag
 * quantiles). */
void tdm__src_metrics_on_end(tdm__rt_src_task *t)
{
    t->now = tdm_clock_now(t->clk);
    tdm__src_metrics_publish(t, true);
    tdm__src_metrics_publish_lag(t);
}

/* Hook when split @p p finished: published so. */
void tdm__src_metrics_split_finished(tdm__rt_src_task *t, int p)
{
    tdm__rt_pub_set(&t->met.parts[p].p_flags,
                    tdm__rt_pub_get(&t->met.parts[p].p_flags) | RT_PF_FINISHED);
}

/* The published entries of splits [old, cap) of @p pa, before any is
 * seen. */
static void parts_init(tdm__rt_part *pa, int old, int cap)
{
    for (int p = old; p < cap; p++) {
        tdm__rt_part *pp = &pa[p];
        memset(pp, 0, sizeof *pp);
        pp->global = -1;
        atomic_init(&pp->p_records, 0);
        atomic_init(&pp->p_max_ts, TDM_TIME_MIN);
        atomic_init(&pp->p_last_at, TDM_TIME_MIN);
        atomic_init(&pp->p_wm, TDM_TIME_MIN);
        atomic_init(&pp->p_flags, 0);
    }
}

/* See src_metrics.h. */
tdm_err tdm__src_metrics_grow(tdm__rt_src_task *t, int old, int cap)
{
    int *mt = tdm__realloc(t->met.mtouched, (size_t)cap * sizeof *mt);
    if (!mt)
        return TDM_ERR_NOMEM;
    t->met.mtouched = mt;
    tdm__rt_phot *h = tdm__realloc(t->met.hot, (size_t)cap * sizeof *h);
    if (!h)
        return TDM_ERR_NOMEM;
    t->met.hot = h;
    for (int p = old; p < cap; p++) {
        memset(&h[p], 0, sizeof h[p]);
        h[p].hi = TDM_TIME_MIN;
    }
    pthread_mutex_lock(&t->met.mx);
    tdm__rt_part *pa = tdm__realloc(t->met.parts, (size_t)cap * sizeof *pa);
    if (pa) {
        t->met.parts = pa;
        parts_init(pa, old, cap);
    }
    pthread_mutex_unlock(&t->met.mx);
    return pa ? TDM_OK : TDM_ERR_NOMEM;
}
