/* SPDX-License-Identifier: MIT */
/* src_metrics.c - a source subtask's published metrics: their initial
 * "none" values, their publication per batch, and the debug line per
 * watermark.  The figures themselves (tdm__rt_src_metrics, tdm__rt_part) are
 * read by snapshots (metrics.c) under the rules of metrics.h; this file
 * only writes them from the subtask's own thread, or before it starts.
 */
#include "runtime/src_metrics.h"
#include "time/wm.h"

/* Zeroes the published metrics: watermarks at "none", no record yet,
 * no lag yet. */
void tdm__src_metrics_init(tdm__rt_src_task *t)
{
    tdm__rt_src_metrics *m = &t->m;
    atomic_init(&m->in, 0);
    atomic_init(&m->out, 0);
    atomic_init(&m->bad, 0);
    atomic_init(&m->guard, 0);
    atomic_init(&m->dead, 0);
    atomic_init(&m->bp, 0);
    atomic_init(&m->dup, 0);
    atomic_init(&m->wm_out, TDM_TIME_MIN);
    atomic_init(&m->idle, 0);
    atomic_init(&m->last_at, TDM_TIME_MIN);
    atomic_init(&m->max_ts, TDM_TIME_MIN);
    atomic_init(&m->unit, 0);
    for (int i = 0; i < 4; i++)
        atomic_init(&m->lag[i], -1);
    t->wm_out = TDM_TIME_MIN;
    t->lag_next = TDM_TIME_MIN;
    t->sweep_next = TDM_TIME_MIN;
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
            low = t->parts[p].name ? t->parts[p].name : "?";
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
    tdm__hist *h = &t->lag;
    h->max = t->lag_max > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)t->lag_max;
    bool any = t->lag_seen > 0;
    for (int i = 0; i < 3; i++)
        tdm__rt_pub_set(&t->m.lag[i],
                        any && h->n ? tdm__hist_quantile(h, q[i]) : -1);
    tdm__rt_pub_set(&t->m.lag[3], any ? h->max : -1);
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
    if (t->sweep || t->now >= t->sweep_next)
        all = true;
    int n = all ? t->n_parts : t->n_mt;
    for (int k = 0; k < n; k++) {
        int p = all ? k : t->mtouched[k];
        tdm__rt_part *pp = &t->parts[p];
        const tdm__rt_phot *ph = &t->hot[p];
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
        t->sweep_next = tdm__time_add_sat(t->now, 200);
        /* The subtask's output and status last (release: a snapshot that
         * reads them, acquiring, sees the splits as new as they). */
        tdm__rt_pub_set(&t->m.idle, t->idle);
        atomic_store_explicit(&t->m.wm_out, t->wm_out, memory_order_release);
    }
    t->n_mt = 0;
    if (t->now >= t->lag_next) {
        t->lag_next = tdm__time_add_sat(t->now, 1000);
        tdm__src_metrics_publish_lag(t);
    }
}
