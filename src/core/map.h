/* SPDX-License-Identifier: MIT */
/* map.h - the engine's one general-purpose hash map: key bytes -> a
 * 64-bit value (a small number, or a pointer cast to uintptr_t), for the
 * tables that are not on the per-record path (the key fence, the
 * connectors' partition map, count_distinct's sets).  The hot tables (the
 * key table, the window store, keyed state, the local aggregate) keep
 * their own layouts.
 *
 * Open addressing with linear probing over 32-bit entry numbers; entries
 * (hash, value, key bytes in one arena) are kept in insertion order, so
 * iteration is insertion order and deterministic whatever the hash.  The
 * index is at most half full.  A removed entry leaves a hole in the entry
 * array (reclaimed when the map next grows); removing during an
 * iteration is allowed, adding is not.
 *
 * The caller hashes: every function takes the key's hash @p h, any
 * 64-bit function of the bytes whose low bits are well spread
 * (tdm__hash_bytes, core/hash.h; the key fence passes the routing hash
 * it already has).  Not thread-safe: one owner thread.
 */
#ifndef TDM_CORE_MAP_H
#define TDM_CORE_MAP_H

#include "core.h"

typedef struct tdm__map tdm__map;

/* An empty map; NULL on OOM. */
tdm__map *tdm__map_new(void);
/* Frees the map and its key copies; NULL is a no-op. */
void tdm__map_destroy(tdm__map *m);
/* Number of keys. */
size_t tdm__map_count(const tdm__map *m);
/* The value of @p key (hash @p h), or NULL.  Valid until the next put. */
uint64_t *tdm__map_find(const tdm__map *m, const void *key, size_t len,
                        uint64_t h);
/* Finds @p key or adds it (copied) with the value 0; *val points at its
 * value (valid until the next put), *added (may be NULL) says whether it
 * is new.  TDM_OK or TDM_ERR_NOMEM (the map is unchanged). */
tdm_err tdm__map_put(tdm__map *m, const void *key, size_t len, uint64_t h,
                     uint64_t **val, bool *added);
/* Removes @p key; false when it was absent. */
bool tdm__map_remove(tdm__map *m, const void *key, size_t len, uint64_t h);

/* Iteration in insertion order: *pos starts at 0; each call returns the
 * next key's value (and its bytes in *key, *len; the key is valid until
 * the next put) and moves *pos on, or NULL at the end. */
uint64_t *tdm__map_next(const tdm__map *m, size_t *pos, const void **key,
                        size_t *len);
/* As tdm__map_remove for the key tdm__map_next just returned (*pos as
 * that call left it). */
void tdm__map_remove_at(tdm__map *m, size_t pos);
/* The hash the key tdm__map_next just returned was put with. */
uint64_t tdm__map_hash_at(const tdm__map *m, size_t pos);

#endif
