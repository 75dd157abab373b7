/* SPDX-License-Identifier: MIT */
/* queue.c - what connects subtasks: bounded queues and batch pools.
 *
 * A consumer subtask has one queue whose ring is shared by its input
 * channels, each limited to `queue.capacity` items, so a full channel
 * blocks only the producer that filled it (backpressure) while items of
 * one channel stay in order with each other - batches and the watermarks,
 * statuses and end markers that follow them.
 *
 * A source subtask owns a pool of batches.  A batch is referenced by its
 * producer while being filled and by every consumer that got a segment of
 * it; the last release puts it back on the free list.  The pool never
 * holds more than its maximum, so a producer that outruns its consumers
 * waits for a batch to come back - the second bound on memory.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "core/busy.h"
#include "runtime/rt.h"
#include "runtime/run_record.h"

/* Condition variables wait on CLOCK_MONOTONIC so that timeouts do not
 * jump with the wall clock. */
static int cond_init(pthread_cond_t *c)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int r = pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return r;
}

static void deadline_after(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* ---- Queues ---- */

/* Allocates the ring and one condition per channel.  The ring holds
 * n_channels x per_channel items: every channel may be full at once, so
 * a push that passed its channel's check always finds a free slot. */
tdm_err tdm__queue_init(tdm__queue *q, int n_channels, int per_channel,
                        const atomic_int *abort, _Atomic int64_t *waits)
{
    memset(q, 0, sizeof *q);
    q->n_ch = n_channels;
    q->per_ch = per_channel;
    q->cap = (size_t)n_channels * (size_t)per_channel;
    /* Lazy pushes wake the consumer at a few items: at most a channel's
     * capacity, so a producer never blocks on a full channel whose
     * consumer sleeps unwoken. */
    q->wake_at = per_channel < 4 ? (size_t)per_channel : 4;
    if (q->wake_at < 1)
        q->wake_at = 1;
    q->abort = abort;
    q->waits = waits;
    q->ring = tdm__calloc(q->cap, sizeof *q->ring);
    q->ch_count = tdm__calloc((size_t)n_channels, sizeof *q->ch_count);
    q->not_full = tdm__calloc((size_t)n_channels, sizeof *q->not_full);
    q->ch_waits = tdm__calloc((size_t)n_channels, sizeof *q->ch_waits);
    if (!q->ring || !q->ch_count || !q->not_full || !q->ch_waits)
        goto fail;
    if (pthread_mutex_init(&q->mu, NULL) != 0)
        goto fail;
    if (cond_init(&q->not_empty) != 0) {
        pthread_mutex_destroy(&q->mu);
        goto fail;
    }
    for (int i = 0; i < n_channels; i++)
        if (cond_init(&q->not_full[i]) != 0) {
            while (i-- > 0)
                pthread_cond_destroy(&q->not_full[i]);
            pthread_cond_destroy(&q->not_empty);
            pthread_mutex_destroy(&q->mu);
            goto fail;
        }
    return TDM_OK;

fail:
    tdm__free(q->ring);
    tdm__free(q->ch_count);
    tdm__free(q->not_full);
    tdm__free(q->ch_waits);
    memset(q, 0, sizeof *q);
    return TDM_ERR_NOMEM;
}

/* Frees a queue (a zeroed one is fine). */
void tdm__queue_fini(tdm__queue *q)
{
    if (!q->ring)
        return;
    for (int i = 0; i < q->n_ch; i++)
        pthread_cond_destroy(&q->not_full[i]);
    pthread_cond_destroy(&q->not_empty);
    pthread_mutex_destroy(&q->mu);
    tdm__free(q->ring);
    tdm__free(q->ch_count);
    tdm__free(q->not_full);
    tdm__free(q->ch_waits);
    memset(q, 0, sizeof *q);
}

/* Appends an item, waiting while its channel is full; @p lazy says
 * whether a sleeping consumer may be left asleep below wake_at items.
 * The consumer is signalled only when it sleeps, so a busy pipeline
 * makes no syscalls here.  Each channel has exactly one producer, so one
 * condition per channel wakes exactly the producer that can go on.  The
 * first wait of a push is counted (backpressure statistics). */
static bool push(tdm__queue *q, const tdm__item *it, bool lazy)
{
    int ch = it->ch;
    pthread_mutex_lock(&q->mu);
    bool counted = false;
    int64_t bp = 0;
    while (q->ch_count[ch] >= q->per_ch) {
        if (atomic_load_explicit(q->abort, memory_order_relaxed))
            break;
        if (!counted) {
            bp = tdm__busy_begin(TDM__BUSY_BP);
            if (q->waits) {
                atomic_fetch_add_explicit(q->waits, 1, memory_order_relaxed);
                if (q->ch_waits[ch])
                    atomic_fetch_add_explicit(q->ch_waits[ch], 1,
                                              memory_order_relaxed);
            }
            counted = true;
        }
        /* Bounded waits, so an abort is noticed even if the waker
         * missed this thread; between two, the waiting thread answers
         * what it is asked (busy.h, on_wait), with no queue locked. */
        struct timespec ts;
        deadline_after(&ts, 100);
        pthread_cond_timedwait(&q->not_full[ch], &q->mu, &ts);
        if (q->ch_count[ch] >= q->per_ch) {
            pthread_mutex_unlock(&q->mu);
            tdm__busy_on_wait();
            pthread_mutex_lock(&q->mu);
        }
    }
    tdm__busy_end(TDM__BUSY_BP, bp);
    if (atomic_load_explicit(q->abort, memory_order_relaxed)) {
        pthread_mutex_unlock(&q->mu);
        return false;
    }
    q->ring[(q->head + q->count) % q->cap] = *it;
    q->count++;
    q->ch_count[ch]++;
    bool wake = q->consumer_waiting && (!lazy || q->count >= q->wake_at);
    q->signals += wake;
    pthread_mutex_unlock(&q->mu);
    if (wake)
        pthread_cond_signal(&q->not_empty);
    return true;
}

/* Appends an item and wakes a sleeping consumer (see rt.h). */
bool tdm__queue_push(tdm__queue *q, const tdm__item *it)
{
    return push(q, it, false);
}

/* Appends an item, waking a sleeping consumer only once wake_at items
 * wait (see rt.h for the producer's duty to kick). */
bool tdm__queue_push_lazy(tdm__queue *q, const tdm__item *it)
{
    return push(q, it, true);
}

/* Wakes a consumer that sleeps although items wait. */
void tdm__queue_kick(tdm__queue *q)
{
    pthread_mutex_lock(&q->mu);
    bool wake = q->consumer_waiting && q->count > 0;
    q->signals += wake;
    pthread_mutex_unlock(&q->mu);
    if (wake)
        pthread_cond_signal(&q->not_empty);
}

/* Takes what is there, waiting for the first item if none.  Taking many
 * items under one lock keeps the lock off the per-record path; items
 * leave in ring order, which is per-channel push order. */
size_t tdm__queue_pop(tdm__queue *q, tdm__item *out, size_t max,
                      int64_t timeout_ms)
{
    struct timespec ts;
    if (timeout_ms >= 0)
        deadline_after(&ts, timeout_ms);
    pthread_mutex_lock(&q->mu);
    int64_t idle = 0;
    while (q->count == 0) {
        if (atomic_load_explicit(q->abort, memory_order_relaxed))
            break;
        if (q->poked)
            break;
        if (!idle)
            idle = tdm__busy_begin(TDM__BUSY_IDLE);
        q->consumer_waiting = true;
        int r;
        if (timeout_ms >= 0) {
            r = pthread_cond_timedwait(&q->not_empty, &q->mu, &ts);
        } else {
            /* Wake up now and then to notice an abort. */
            struct timespec t2;
            deadline_after(&t2, 100);
            r = pthread_cond_timedwait(&q->not_empty, &q->mu, &t2);
            if (r == ETIMEDOUT)
                r = 0;
        }
        q->consumer_waiting = false;
        if (r == ETIMEDOUT)
            break;
    }
    tdm__busy_end(TDM__BUSY_IDLE, idle);
    q->poked = false;
    size_t n = 0;
    while (n < max && q->count > 0) {
        tdm__item *it = &q->ring[q->head];
        out[n++] = *it;
        q->head = (q->head + 1) % q->cap;
        q->count--;
        /* The producer of a channel that was full may go on. */
        if (q->ch_count[it->ch]-- == q->per_ch)
            pthread_cond_signal(&q->not_full[it->ch]);
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Checkpoint alignment: items of a blocked channel the consumer holds
 * keep their capacity (see rt.h). */
void tdm__queue_hold(tdm__queue *q, int ch, int n)
{
    pthread_mutex_lock(&q->mu);
    q->ch_count[ch] += n;
    pthread_mutex_unlock(&q->mu);
}

void tdm__queue_release(tdm__queue *q, int ch, int n)
{
    pthread_mutex_lock(&q->mu);
    bool was_full = q->ch_count[ch] >= q->per_ch;
    q->ch_count[ch] -= n;
    bool wake = was_full && q->ch_count[ch] < q->per_ch;
    pthread_mutex_unlock(&q->mu);
    if (wake)
        pthread_cond_signal(&q->not_full[ch]);
}

/* Broadcasts every condition of the queue. */
void tdm__queue_wake(tdm__queue *q)
{
    if (!q->ring)
        return;
    pthread_mutex_lock(&q->mu);
    pthread_cond_broadcast(&q->not_empty);
    for (int i = 0; i < q->n_ch; i++)
        pthread_cond_broadcast(&q->not_full[i]);
    pthread_mutex_unlock(&q->mu);
}

/* Sets the poke flag and wakes a sleeping consumer: its pop returns
 * (with no item if none waits), so it can answer a question. */
void tdm__queue_poke(tdm__queue *q)
{
    if (!q->ring)
        return;
    pthread_mutex_lock(&q->mu);
    q->poked = true;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

/* ---- Batch pools ---- */

/* An empty pool; batches are made on demand. */
tdm_err tdm__pool_init(tdm__pool *p, const tdm__schema *schema,
                       size_t batch_cap, int n_targets, int max,
                       const atomic_int *abort, tdm_job *job)
{
    memset(p, 0, sizeof *p);
    p->schema = schema;
    p->batch_cap = batch_cap;
    p->n_targets = n_targets;
    p->max = max;
    p->wake_at = max / 2 > 1 ? max / 2 : 1;
    p->abort = abort;
    p->job = job;
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        return TDM_ERR_NOMEM;
    if (cond_init(&p->freed) != 0) {
        pthread_mutex_destroy(&p->mu);
        return TDM_ERR_NOMEM;
    }
    p->job = job;
    return TDM_OK;
}

static void sbatch_free(tdm__sbatch *sb)
{
    if (!sb)
        return;
    tdm__batch_destroy(sb->b);
    tdm__free(sb->sel);
    tdm__free(sb->counts);
    tdm__free(sb);
}

static tdm__sbatch *sbatch_new(tdm__pool *p)
{
    tdm__sbatch *sb = tdm__calloc(1, sizeof *sb);
    if (!sb)
        return NULL;
    size_t nt = p->n_targets > 0 ? (size_t)p->n_targets : 1;
    sb->b = tdm__batch_new(p->schema, p->batch_cap);
    sb->sel = tdm__malloc(nt * p->batch_cap * sizeof *sb->sel);
    /* The per-target counters, written for every routed row, get 64
     * bytes of padding on either side: no other allocation (such as
     * another batch's reference count, which consumers update) may share
     * their cache lines. */
    sb->counts = tdm__calloc(2 * nt + 32, sizeof *sb->counts);
    if (sb->counts) {
        sb->sel_n = sb->counts + 16;
        sb->sel_sent = sb->sel_n + nt;
    }
    if (!sb->b || !sb->sel || !sb->counts) {
        sbatch_free(sb);
        return NULL;
    }
    sb->pool = p;
    atomic_init(&sb->refs, 0);
    return sb;
}

static void peak_update(tdm_job *job)
{
    int64_t live = atomic_fetch_add(&job->rec->batches_live, 1) + 1;
    int64_t peak = atomic_load(&job->rec->batches_peak);
    while (live > peak &&
           !atomic_compare_exchange_weak(&job->rec->batches_peak, &peak, live))
        ;
}

/* Takes a free batch, makes one below the maximum, or waits.  The
 * maximum bounds the memory of one source subtask however far its
 * consumers lag; batches are made lazily, so a slow source never holds
 * more than it uses.  A producer waits only with all max batches out,
 * every one of which comes back once its consumers are done, so the
 * wake-up at wake_at free batches always comes. */
tdm__sbatch *tdm__pool_get(tdm__pool *p, tdm_err *err)
{
    *err = TDM_OK;
    bool counted = false;
    int64_t bp = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (atomic_load_explicit(p->abort, memory_order_relaxed)) {
            pthread_mutex_unlock(&p->mu);
            tdm__busy_end(TDM__BUSY_BP, bp);
            return NULL;
        }
        if (p->free_list)
            break;
        if (p->n_all < p->max) {
            tdm__sbatch *sb = sbatch_new(p);
            if (!sb) {
                pthread_mutex_unlock(&p->mu);
                tdm__busy_end(TDM__BUSY_BP, bp);
                *err = TDM_ERR_NOMEM;
                return NULL;
            }
            sb->all_next = p->all;
            p->all = sb;
            p->n_all++;
            sb->next = p->free_list;
            p->free_list = sb;
            p->n_free++;
            break;
        }
        if (p->before_wait) {
            /* Let the consumers see what they must finish to free a
             * batch; then look again. */
            pthread_mutex_unlock(&p->mu);
            p->before_wait(p->before_wait_ud);
            pthread_mutex_lock(&p->mu);
            if (p->free_list)
                break;
        }
        if (!counted) {
            bp = tdm__busy_begin(TDM__BUSY_BP);
            atomic_fetch_add_explicit(&p->job->rec->queue_waits, 1,
                                      memory_order_relaxed);
            if (p->waits)
                atomic_fetch_add_explicit(p->waits, 1, memory_order_relaxed);
            counted = true;
        }
        p->waiting = true;
        struct timespec ts;
        deadline_after(&ts, 100);
        pthread_cond_timedwait(&p->freed, &p->mu, &ts);
        p->waiting = false;
    }
    tdm__busy_end(TDM__BUSY_BP, bp);
    tdm__sbatch *sb = p->free_list;
    p->free_list = sb->next;
    p->n_free--;
    sb->next = NULL;
    pthread_mutex_unlock(&p->mu);
    peak_update(p->job);
    tdm__batch_clear(sb->b);
    memset(sb->sel_n, 0,
           (size_t)(p->n_targets > 0 ? p->n_targets : 1) * sizeof *sb->sel_n);
    memset(sb->sel_sent, 0,
           (size_t)(p->n_targets > 0 ? p->n_targets : 1) *
               sizeof *sb->sel_sent);
    atomic_store_explicit(&sb->refs, 1, memory_order_relaxed);
    return sb;
}

/* Reference counting is atomic; the free list is locked.  The release
 * that drops the count to zero is the only one to touch the batch, so
 * the acq_rel ordering makes every consumer's reads happen before the
 * producer refills it. */
void tdm__sbatch_release(tdm__sbatch *sb)
{
    if (atomic_fetch_sub_explicit(&sb->refs, 1, memory_order_acq_rel) != 1)
        return;
    tdm__pool *p = sb->pool;
    atomic_fetch_sub(&p->job->rec->batches_live, 1);
    pthread_mutex_lock(&p->mu);
    sb->next = p->free_list;
    p->free_list = sb;
    p->n_free++;
    bool wake = p->waiting && p->n_free >= p->wake_at;
    p->signals += wake;
    pthread_mutex_unlock(&p->mu);
    if (wake)
        pthread_cond_signal(&p->freed);
}

/* Wakes a producer waiting for a batch. */
void tdm__pool_wake(tdm__pool *p)
{
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->freed);
    pthread_mutex_unlock(&p->mu);
}

/* Frees every batch the pool ever made (after all threads stopped). */
void tdm__pool_fini(tdm__pool *p)
{
    tdm__sbatch *sb = p->all;
    while (sb) {
        tdm__sbatch *next = sb->all_next;
        if (atomic_load(&sb->refs) > 0)
            atomic_fetch_sub(&p->job->rec->batches_live, 1);
        sbatch_free(sb);
        sb = next;
    }
    p->all = NULL;
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->mu);
}
