/* SPDX-License-Identifier: MIT */
/* metrics.h - where the runtime keeps the metrics of TDM_METRIC_MAP while
 * a job runs, and what survives the run for tdm_job_window_status.
 *
 * Every subtask thread is the single writer of its metric fields: plain
 * counters on the per-record path, published with relaxed atomic stores
 * once per batch (sources) or per group of queue items (operators), and
 * read with relaxed loads by tdm_job_metrics on any thread (metrics.c).
 * No lock and no atomic read-modify-write is taken per record.
 */
#ifndef TDM_RT_METRICS_H
#define TDM_RT_METRICS_H

#include <pthread.h>
#include <stdatomic.h>

#include "core.h"
#include "core/hist.h"
#include "state/wstore.h"

/* Adds @p d to a published counter of which the caller is the only
 * writer: a relaxed load and a relaxed store, no read-modify-write. */
static inline void tdm__rt_pub_add(_Atomic int64_t *a, int64_t d)
{
    if (d)
        atomic_store_explicit(a,
                              atomic_load_explicit(a, memory_order_relaxed) + d,
                              memory_order_relaxed);
}

/* Stores a published value (single writer). */
static inline void tdm__rt_pub_set(_Atomic int64_t *a, int64_t v)
{
    atomic_store_explicit(a, v, memory_order_relaxed);
}

/* Reads a published value from any thread. */
static inline int64_t tdm__rt_pub_get(const _Atomic int64_t *a)
{
    return atomic_load_explicit((_Atomic int64_t *)a, memory_order_relaxed);
}

/* ---- Source partitions ---- */

enum { RT_PF_FINISHED = 1, RT_PF_PAUSED = 2, RT_PF_IDLE = 4 };

/* What the source thread touches per record of a partition, 32 bytes
 * (a shift to index, two to a cache line).  Never read by snapshots. */
typedef struct tdm__rt_phot {
    int64_t n;      /* records read */
    tdm_time_ms hi; /* highest timestamp so far (lag reference) */
    uint32_t stamp; /* batch sequence of the last record */
    uint32_t gen;   /* batch sequence of the last record the
                       generator must see (wm_max_only) */
    uint64_t spare;
} tdm__rt_phot;

/* One partition (reader split) of a source subtask as published for
 * snapshots (single writer: the source thread).  The array is
 * reallocated (under the subtask's metrics lock) when partitions named
 * by a field appear. */
typedef struct tdm__rt_part {
    int global; /* the partition's number within the source */
    char *name; /* file path, field value, or the number */
    _Atomic int64_t p_records;
    _Atomic int64_t p_max_ts;  /* TDM_TIME_MIN: none yet */
    _Atomic int64_t p_last_at; /* processing time; TDM_TIME_MIN: never */
    _Atomic int64_t p_wm;      /* the split's watermark */
    _Atomic int64_t p_flags;   /* RT_PF_* */
} tdm__rt_part;

/* The published metrics of a source subtask. */
typedef struct tdm__rt_src_metrics {
    _Atomic int64_t in, out, bad, guard, dead, bp, dup, tomb;
    _Atomic int64_t wm_out, idle, last_at, max_ts, unit;
    _Atomic int64_t lag[4]; /* p50, p99, p999, max; -1 none */
    /* The fallback watermark (sources with one): the data watermark,
     * when the current stretch began (MIN: the data drives) and the
     * finished stretches' total. */
    _Atomic int64_t data_wm, fb_since, fb_done;
} tdm__rt_src_metrics;

/* ---- Operator subtasks ---- */

/* One input channel of an operator subtask, as published. */
typedef struct tdm__rt_chan {
    _Atomic int64_t wm;
    _Atomic int64_t idle;
    _Atomic int64_t ended;
} tdm__rt_chan;

/* The published metrics of a window or join subtask. */
typedef struct tdm__rt_op_metrics {
    _Atomic int64_t in, out, late_side, late_drop, late_fb, panes, late_panes;
    _Atomic int64_t regress, wm_in, idle, last_at;
    _Atomic int64_t keys, windows, bytes;
    _Atomic int64_t lat_p50, lat_p99; /* us; -1 until a row fired */
} tdm__rt_op_metrics;

/* The event lag histogram of a source subtask takes every record of its
 * first RT_LAG_EXACT_BATCHES batches, then those of one batch in
 * RT_LAG_EVERY; the maximum is the largest lag of those records. */
#define RT_LAG_EXACT_BATCHES 16u
#define RT_LAG_EVERY 8u

/* A late record as remembered for tdm_metrics_late_at. */
#define RT_LATE_RING 32
#define RT_LATE_ROW 480
typedef struct tdm__rt_late {
    tdm_time_ms ts, wm, at;
    int dropped;
    char row[RT_LATE_ROW];
} tdm__rt_late;

/* Watermark advances an operator subtask remembers in debug mode, to
 * say how long after the watermark passed a window it fired. */
#define RT_DBG_RING 1024

/* ---- What a window subtask remembers of its firings ---- */

#define RT_FIRE_CAP 8192u /* firings remembered */

/* A ring of the last RT_FIRE_CAP first firings: a 64-bit fingerprint of
 * (key bytes, window start, end) and the watermark at that firing, side
 * by side.  Remembering one is a hash of the key (the window store's
 * own, cheap for short keys), one multiply and two adjacent stores,
 * inlined into the subtask's emit path; a question scans the ring
 * (128 KB, newest first), which costs tens of microseconds once per
 * question instead of a random memory access per firing (an index
 * measured 1-4% of the runtime benchmark, by evicting the window state
 * from the cache).  Allocated at the first firing. */
typedef struct tdm__rt_fired_ent {
    uint64_t fp;
    tdm_time_ms wm;
} tdm__rt_fired_ent;

typedef struct tdm__rt_fired {
    tdm__rt_fired_ent *ring;
    uint64_t total; /* firings remembered so far (the next slot) */
} tdm__rt_fired;

/* The fingerprint of a window of a key. */
static inline uint64_t tdm__rt_fired_fp(const char *key, size_t len,
                                        tdm_time_ms start, tdm_time_ms end)
{
    return tdm__ws_fold(tdm__ws_hash(key, len) ^ (uint64_t)start,
                        ((uint64_t)end << 1) | 1);
}

/* Allocates the ring; TDM_ERR_NOMEM leaves it absent. */
tdm_err tdm__rt_fired_alloc(tdm__rt_fired *f);

/* Remembers a first firing, forgetting the oldest when the ring is full.
 * Returns TDM_OK or TDM_ERR_NOMEM (the memory then stays as it was). */
static inline tdm_err tdm__rt_fired_add(tdm__rt_fired *f, uint64_t fp,
                                        tdm_time_ms wm)
{
    if (!f->ring && tdm__rt_fired_alloc(f) != TDM_OK)
        return TDM_ERR_NOMEM;
    tdm__rt_fired_ent *e = &f->ring[f->total++ & (RT_FIRE_CAP - 1)];
    e->fp = fp;
    e->wm = wm;
    return TDM_OK;
}
/* Looks a fingerprint up: true with *wm the watermark of its most
 * recent first firing. */
bool tdm__rt_fired_find(const tdm__rt_fired *f, uint64_t fp, tdm_time_ms *wm);
void tdm__rt_fired_free(tdm__rt_fired *f);

/* The mailbox and memory of one window subtask, owned by the job so that
 * questions can be answered after the run (tdm_job_window_status).  The
 * question and answer are guarded by the job's metrics lock; the subtask
 * sees a question through @c req (one relaxed load per group of queue
 * items) and a wake-up of its queue. */
typedef struct tdm__rt_wstat {
    pthread_cond_t cv;
    atomic_int req;
    bool asked, answered;
    char *key;
    size_t key_len, key_cap;
    tdm_time_ms start, end;
    tdm_window_status ans;
    tdm__rt_fired fired;
    /* Left by the subtask when it stops (or by the run when it ends). */
    tdm_time_ms final_wm;
    bool ended;
    bool done; /* the subtask stopped: answers come from here */
} tdm__rt_wstat;

/* The window vertices of the last (or current) run. */
typedef struct tdm__rt_wvertex {
    char *name;
    int op; /* index in the run's ops */
    int n_key;
    tdm_type *key_types;
    char **key_names;
    int n_cv; /* st[0..n_cv) have their condition made */
    bool event_time, global;
    tdm_time_ms lateness;
    /* The live value (live.h: windows.<name>.allowed_lateness), read
     * instead of lateness when there is a table; NULL: none. */
    const _Atomic int64_t *live;
    tdm__rt_wstat *st; /* P entries */
} tdm__rt_wvertex;

typedef struct tdm__rt_warea {
    int P, key_groups;
    int n;
    tdm__rt_wvertex *v;
} tdm__rt_warea;

/* The window's last timestamp and cleanup time for vertex @p v and a
 * window ending at @p end (the two sides of tdm_job_window_status). */
static inline void tdm__met_window_times(const tdm__rt_wvertex *v,
                                         tdm_time_ms end, tdm_time_ms *max_ts,
                                         tdm_time_ms *cleanup)
{
    *max_ts = v->global ? TDM_TIME_MAX : end - 1;
    tdm_time_ms late = v->live
                           ? atomic_load_explicit(v->live, memory_order_relaxed)
                           : v->lateness;
    *cleanup = v->event_time ? tdm__time_add_sat(*max_ts, late) : *max_ts;
}

/* Frees an area (NULL is fine). */
void tdm__rt_warea_free(tdm__rt_warea *a);

typedef struct tdm__run tdm__run;
typedef struct tdm__rt_op_task tdm__rt_op_task;

/* ---- Metrics (metrics.c) ---- */

/* Builds a snapshot of a run's published metrics at processing time
 * @p now (@p running: 1 while subtasks run).  The caller holds the
 * job's metrics lock.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__rt_metrics_build(tdm__run *run, tdm_time_ms now, int running,
                              struct tdm_metrics **out);
/* Prepares the job's window status memory for a new run (under the
 * metrics lock, after the status callers left).  TDM_OK or NOMEM. */
tdm_err tdm__rt_warea_start(tdm__run *run);
/* Called by the run thread after every subtask stopped: keeps the final
 * snapshot and the window subtasks' final state, and ends the live view
 * (tasks are freed right after). */
void tdm__rt_metrics_finish(tdm__run *run);
/* The channel holding an operator subtask's watermark: the lowest
 * watermark among channels neither idle nor ended; -1 when none. */
int tdm__rt_holding_channel(const tdm__rt_op_task *t);

/* Frees the job's run record (run_record.h): the last run's final
 * snapshot and window status memory once the callers of
 * tdm_job_window_status left, then the record itself (its lock,
 * condition and result latencies, tdm__run_record_free); job->rec is
 * NULL after.  Part of tdm_job_destroy (job_api.c); no run may be going
 * on. */
void tdm__met_record_fini(tdm_job *job);

#endif /* TDM_RT_METRICS_H */
