/* SPDX-License-Identifier: MIT */
/* state.h - keyed state and timers, the in-memory backend behind every
 * keyed operator (window operator, joins).
 *
 * Operators never touch a hash table or heap directly: they intern keys,
 * keep per-(key, namespace) value slots, and register timers through this
 * interface, so that a persistent backend can replace the in-memory one
 * later without touching the operators.
 *
 *   keys     interned key bytes -> key id (uint32), reference counted
 *   kv       (key id, namespace) -> fixed-size value slot
 *   timers   (time, key id, namespace) -> fired in time order, deduplicated
 *
 * A namespace is two int64s; the window operator uses (start, end) of a
 * window, a join uses (timestamp, 0).  Nothing here emits or allocates per
 * lookup once tables have grown.  All functions are @thread owner (the
 * operator's thread).
 *
 * wstore.h holds a second, specialised backend: the window store of the
 * window operator's lean path (keys with their windows inline, timers per
 * window interval).
 */
#ifndef TDM_STATE_H
#define TDM_STATE_H

#include <string.h>

#include "core.h"

typedef struct tdm__ns {
    tdm_time_ms a, b;
} tdm__ns;

/* ---- Interned keys ---- */

typedef struct tdm__keys tdm__keys;

/* Creates an empty key table; NULL on OOM. */
tdm__keys *tdm__keys_new(void);
/* Finds or adds (copies) the key bytes and takes one reference on it.
 * Returns TDM_OK and the id in *id, or TDM_ERR_NOMEM. */
tdm_err tdm__keys_intern(tdm__keys *ks, const char *key, size_t len,
                         uint32_t *id);
/* The hash the key table uses, and the routing hash (key -> key group ->
 * subtask, persisted in checkpoints): core/hash.h's seeded byte hash
 * with seed TDM__HASH_ROUTE (any length, key may be NULL when len is 0).
 * Inline so that callers hashing a key of a known length (the runtime's
 * fixed-width keys) get it folded. */
static inline uint64_t tdm__keys_hash(const void *key, size_t len)
{
    return tdm__hash_bytes_seeded(key, len, TDM__HASH_ROUTE);
}
/* As tdm__keys_intern with the caller's tdm__keys_hash(key, len), for
 * callers that hash once and look up several times. */
tdm_err tdm__keys_intern_hashed(tdm__keys *ks, const char *key, size_t len,
                                uint64_t hash, uint32_t *id);
/* Finds an interned key without taking a reference; @p hash must be
 * tdm__keys_hash(key, len).  Returns true and the id in *id, or false. */
bool tdm__keys_find(const tdm__keys *ks, const char *key, size_t len,
                    uint64_t hash, uint32_t *id);
/* Takes one more reference on an interned id. */
void tdm__keys_ref(tdm__keys *ks, uint32_t id);
/* Drops a reference; the key is forgotten when none is left. */
void tdm__keys_unref(tdm__keys *ks, uint32_t id);
/* The bytes of an id (borrowed until the key is forgotten). */
const char *tdm__keys_get(const tdm__keys *ks, uint32_t id, size_t *len);
/* A pointer-sized slot the owner may use for its own per-key data (e.g.
 * a cache), NULL when the key is interned anew; valid while the key
 * lives. */
void **tdm__keys_udata(tdm__keys *ks, uint32_t id);
/* Number of live keys. */
size_t tdm__keys_count(const tdm__keys *ks);
/* One more than the largest id ever handed out (live or free): the size
 * of an array indexed by key id, for snapshots (checkpoints). */
uint32_t tdm__keys_id_bound(const tdm__keys *ks);
/* Approximate bytes held by live keys (bytes, entry, index share).  The
 * *_bytes functions of this file count live entries, not capacity kept
 * for reuse, so that they fall back when state is cleaned up. */
size_t tdm__keys_bytes(const tdm__keys *ks);
void tdm__keys_destroy(tdm__keys *ks);

/* ---- Keyed value slots ---- */

typedef struct tdm__kv tdm__kv;

/* Creates a store whose slots are value_size bytes; NULL on OOM. */
tdm__kv *tdm__kv_new(size_t value_size);
/* Returns the slot of (key, ns), or NULL when absent. */
void *tdm__kv_get(tdm__kv *kv, uint32_t key, tdm__ns ns);
/* Returns the slot of (key, ns), creating a zeroed one when absent
 * (*created says which); NULL on OOM.  Slot pointers stay valid until
 * the slot is removed (slots do not move when the table grows). */
void *tdm__kv_upsert(tdm__kv *kv, uint32_t key, tdm__ns ns, bool *created);
/* Removes (key, ns); no-op when absent.  The caller releases whatever the
 * slot points to first. */
void tdm__kv_remove(tdm__kv *kv, uint32_t key, tdm__ns ns);
/* Removes the slot whose value pointer is @p slot (as returned by get or
 * upsert), without hashing its key again. */
void tdm__kv_remove_slot(tdm__kv *kv, void *slot);
/* Calls fn for every slot of one key (any order); fn must not insert or
 * remove. */
void tdm__kv_each_of_key(tdm__kv *kv, uint32_t key,
                         void (*fn)(void *ud, tdm__ns ns, void *slot),
                         void *ud);
/* Calls fn for every slot (any order); fn must not insert or remove. */
void tdm__kv_each(tdm__kv *kv,
                  void (*fn)(void *ud, uint32_t key, tdm__ns ns, void *slot),
                  void *ud);
size_t tdm__kv_count(const tdm__kv *kv);
/* The (key, namespace) of every slot, in index order, in a new array
 * (*n entries; the caller frees it): a walk that removes or inserts
 * looks each up again.  NULL on OOM. */
typedef struct tdm__kv_ref {
    uint32_t key;
    tdm__ns ns;
} tdm__kv_ref;
tdm__kv_ref *tdm__kv_refs(const tdm__kv *kv, size_t *n);
size_t tdm__kv_bytes(const tdm__kv *kv);
/* Bytes one live slot costs (slot plus its share of the index), for
 * per-window state accounting. */
size_t tdm__kv_slot_bytes(const tdm__kv *kv);
void tdm__kv_destroy(tdm__kv *kv);

/* ---- Timers ---- */

typedef struct tdm__timers tdm__timers;

typedef struct tdm__timer {
    tdm_time_ms time;
    uint32_t key;
    tdm__ns ns;
} tdm__timer;

/* Creates an empty timer queue; NULL on OOM. */
tdm__timers *tdm__timers_new(void);
/* Registers a timer; registering the same (time, key, ns) again is a
 * no-op.  Returns TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__timers_add(tdm__timers *t, tdm_time_ms time, uint32_t key,
                        tdm__ns ns);
/* As tdm__timers_add; *added says whether the timer is new (false: it
 * was registered already). */
tdm_err tdm__timers_insert(tdm__timers *t, tdm_time_ms time, uint32_t key,
                           tdm__ns ns, bool *added);
/* Deletes that exact timer; no-op when absent. */
void tdm__timers_del(tdm__timers *t, tdm_time_ms time, uint32_t key,
                     tdm__ns ns);
/* As tdm__timers_del; returns true when a timer was deleted. */
bool tdm__timers_remove(tdm__timers *t, tdm_time_ms time, uint32_t key,
                        tdm__ns ns);
/* True when the (time, key, ns) timer is registered. */
bool tdm__timers_has(const tdm__timers *t, tdm_time_ms time, uint32_t key,
                     tdm__ns ns);
/* Removes and returns in *out the timer with the smallest time if that
 * time is <= upto; false when there is none.  Timers added while draining
 * with a time <= upto are returned by later calls (Flink fires them in the
 * same watermark). */
bool tdm__timers_pop(tdm__timers *t, tdm_time_ms upto, tdm__timer *out);
size_t tdm__timers_count(const tdm__timers *t);
/* Calls fn for every registered timer (for snapshots) with its rank:
 * among the timers of one time, the order they pop in (0, 1, ...).  So
 * re-adding them sorted by (time, rank) into an empty queue gives the
 * same pop order.  Buckets are visited in no particular order; fn must
 * not change the queue. */
void tdm__timers_each(const tdm__timers *t,
                      void (*fn)(void *ud, const tdm__timer *tm, uint32_t rank),
                      void *ud);
size_t tdm__timers_bytes(const tdm__timers *t);
void tdm__timers_destroy(tdm__timers *t);

#endif /* TDM_STATE_H */
