/* SPDX-License-Identifier: MIT */
/* outbox.h - what a producer subtask sends its consumers besides rows and
 * watermarks, and the emitter an operator's output stream is written
 * through.
 *
 *   key fence:  tdm__rt_keyset (fence.c), the keys of a revoked split, sent
 *               as an tdm__rt_fence message (item TDM__ITEM_FENCE);
 *   two-phase:  tdm__rt_partials, partial accumulators (item
 *               TDM__ITEM_PARTIAL), recycled through an tdm__rt_ppool
 *               (localagg.c);
 *   sending:    tdm__outbox_* (outbox.c), a producer's flush, broadcast
 *               and kick; routing is in outbox_route.h;
 *   emitter:    tdm__rt_emit_* (outbox.c), used by operator subtasks to
 *               write a chained operator's output stream.
 *
 * A message is allocated by its producer and freed or handed back by
 * its consumer; nothing here is shared between threads except through a
 * queue or the pool's lock.
 */
#ifndef TDM_RT_OUTBOX_H
#define TDM_RT_OUTBOX_H

#include "core/map.h"
#include "runtime/rt.h"

typedef struct tdm__rt_src_task tdm__rt_src_task;

/* A map from key bytes to an int64 (zero-initialised = empty): a
 * tdm__map (core/map.h) keyed with the routing hash, made on first put.
 * Keys are copied into the set.  Not thread-safe: one owner thread. */
typedef struct tdm__rt_keyset {
    struct tdm__map *map; /* NULL until the first put */
    size_t n;             /* keys held (read on the per-record path) */
} tdm__rt_keyset;

/* ---- Key fence (fence.c) ---- */

/* The value of @p key (hash @p h, the caller's tdm__keys_hash), or NULL.
 * The pointer is valid until the next put or prune. */
int64_t *tdm__rt_keyset_find(const tdm__rt_keyset *s, const char *key,
                             size_t len, uint64_t h);
/* Sets the value of @p key to @p v, or keeps the larger one if present
 * (copies the key).  TDM_OK or TDM_ERR_NOMEM (the set is unchanged). */
tdm_err tdm__rt_keyset_put_max(tdm__rt_keyset *s, const char *key, size_t len,
                               uint64_t h, int64_t v);
/* Removes every key whose value is <= @p le. */
void tdm__rt_keyset_prune(tdm__rt_keyset *s, int64_t le);
/* Frees the set's memory and empties it (the struct is the caller's). */
void tdm__rt_keyset_free(tdm__rt_keyset *s);

/* The keys of a fenced split as a source subtask sends them to one window
 * subtask (item TDM__ITEM_FENCE): n keys, each a uint32 length (native
 * order) and its bytes, in data.  Allocated by the source, freed by the
 * consumer (or by tdm__rt_op_task_fini when the run aborted with it queued). */
typedef struct tdm__rt_fence {
    uint32_t n;
    size_t len, cap;
    char *data;
} tdm__rt_fence;

/* Frees a fence message (NULL-safe). */
void tdm__rt_fence_free(tdm__rt_fence *f);

/* ---- Two-phase aggregation (localagg.c) ---- */

/* One partial row: the slice start (the record timestamp the window
 * subtask pushes it with), the key (as in tdm__sel: key_len
 * TDM__SEL_FIXED for a fixed-width key's value bytes in key, else
 * key_len bytes at offset key of tdm__rt_partials.keys); the accumulator
 * follows. */
typedef struct tdm__rt_pent {
    tdm_time_ms ts;
    uint32_t key_len;
    uint32_t pad_;
    uint64_t key;
    uint64_t records; /* records folded into it (the subtask's
                         numRecordsIn counts them) */
} tdm__rt_pent;

struct tdm__rt_ppool;

/* The partial rows a source subtask's local aggregate sends one window
 * subtask at one watermark (item TDM__ITEM_PARTIAL): n entries of stride
 * bytes (tdm__rt_pent, then acc_size accumulator bytes).  Taken by the source
 * from its local aggregate's pool (tdm__rt_ppool), handed back by the
 * consumer with tdm__rt_partials_release (or freed by tdm__rt_op_task_fini when
 * the run aborted with it queued). */
typedef struct tdm__rt_partials {
    uint32_t n, cap;
    size_t stride, acc_size;
    char *ents;
    char *keys;
    size_t kused, kcap;
    struct tdm__rt_ppool *pool;    /* where it returns (NULL: freed) */
    struct tdm__rt_partials *next; /* the pool's free list */
} tdm__rt_partials;

/* The recycled partials messages of one local aggregate: the consumer
 * thread puts a message back (its buffers kept), the source thread takes
 * it for the next flush, so a flush neither allocates nor faults fresh
 * pages once messages have grown.  At most keep messages wait here (the
 * rest are freed), which is what can be in flight at once: (queue
 * capacity + 1) per consumer subtask.  Locked: one lock per message of
 * thousands of rows. */
typedef struct tdm__rt_ppool {
    pthread_mutex_t mu;
    tdm__rt_partials *free;
    int n_free, keep;
} tdm__rt_ppool;

/* Frees a partials message and its buffers (NULL-safe; never touches
 * its pool, so it is safe after the pool's owner is gone). */
void tdm__rt_partials_free(tdm__rt_partials *m);
/* Hands a partials message the consumer has merged back to its pool
 * (takes ownership; NULL-safe).  Any thread; the pool must still exist,
 * which it does until the source subtasks are freed after every thread
 * was joined. */
void tdm__rt_partials_release(tdm__rt_partials *m);

/* The suffix a fenced key's later records carry at the window operator:
 * the epoch (uint32, native order) then these 8 bytes. */
#define RT_FENCE_MAGIC "\xf3\x7e\x1d\xa9\x5c\x02\xe8\x6b"
#define RT_FENCE_SUFFIX (4 + 8)

/* ---- Sending: a producer's outbox (outbox.c) ---- */

/* Wakes the consumers of every target that got a lazy push since the
 * last kick. */
void tdm__outbox_kick(tdm__rt_src_task *t);
/* The batch pool's hook before its owner waits for a free batch (@p ud:
 * the tdm__rt_src_task): kicks, so that consumers left asleep by lazy pushes
 * run and free one. */
void tdm__outbox_before_pool_wait(void *ud);
/* Sends the rows routed into the current batch since the last flush:
 * one item per target with new rows, each holding a reference on the
 * batch (lazily pushed when t->lazy). */
void tdm__outbox_flush_rows(tdm__rt_src_task *t);
/* Flushes the rows, then (WATERMARK, END) the local aggregates' partial
 * rows the watermark closes, then queues control item @p kind (@p wm,
 * @p idle) to every consumer subtask, stamped for result latency. */
void tdm__outbox_broadcast(tdm__rt_src_task *t, tdm__item_kind kind,
                           tdm_time_ms wm, int idle);
/* Queues a control item on this producer's channel of every consumer
 * subtask (the rows before it must have been flushed). */
void tdm__outbox_push_control(tdm__rt_src_task *t, tdm__item_kind kind,
                              tdm_time_ms wm, int idle, int64_t at_us);

/* ---- Emitter: an operator's output stream (outbox.c) ---- */

/* Sets up derived source subtask @p t (run, src, index set): its batch
 * pool and routing scratch.  Frees with tdm__rt_source_task_fini.  TDM_OK or
 * TDM_ERR_NOMEM. */
tdm_err tdm__rt_emit_init(tdm__rt_src_task *t);
/* Appends one row of the derived schema (@p vals: schema->n values,
 * strings copied) stamped @p ts to the batch being filled, flushing the
 * batch first when it is full.  May wait for a free batch or a full
 * queue (backpressure).  TDM_OK; TDM_ERR_NOMEM; TDM_ERR_STATE when the
 * run aborted (nothing queued). */
tdm_err tdm__rt_emit_row(tdm__rt_src_task *t, const tdm__val *vals,
                         tdm_time_ms ts);
/* Routes the rows appended since the last flush to the consumers'
 * subtasks owning their keys and queues them. */
void tdm__rt_emit_flush(tdm__rt_src_task *t);
/* Flushes, then sends a control item (WATERMARK @p wm, STATUS @p idle,
 * END with @p idle set for a stop without drain) to every consumer
 * subtask; @p at_us is the result-latency stamp carried along. */
void tdm__rt_emit_control(tdm__rt_src_task *t, tdm__item_kind kind,
                          tdm_time_ms wm, int idle, int64_t at_us);

#endif /* TDM_RT_OUTBOX_H */
