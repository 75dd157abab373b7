/* SPDX-License-Identifier: MIT */
/* keys.c - interned keys: key bytes -> small dense ids, reference counted.
 *
 * Operators store a uint32 id instead of key bytes in every window, timer
 * and buffer, so a key is hashed and compared once per record.  Lookups
 * are the per-record hot path, so they touch two cache lines: the index
 * (open addressing, linear probing, backward-shift deletion) holds the id
 * next to a 32-bit hash tag, and the 64-byte entry holds the key bytes
 * inline (when short), the reference count and the owner's per-key
 * pointer.  Entries live in fixed, aligned chunks so they never move.
 */
#include <string.h>

#include "state/state.h"
#include "testhooks.h"

#define NO_ID UINT32_MAX
#define CHUNK_SHIFT 10
#define CHUNK_ENTS (1u << CHUNK_SHIFT)
#define INLINE_MAX 32 /* key bytes stored inside the entry, incl. NUL */

typedef struct key_ent {
    uint64_t hash;
    uint32_t len;
    uint32_t refs; /* 0 while the id is free */
    union {
        void *udata; /* the owner's per-key pointer while live */
        uint32_t next_free;
    } u;
    char *heap; /* key bytes when longer than INLINE_MAX - 1 */
    char in[INLINE_MAX];
} key_ent;

_Static_assert(sizeof(key_ent) == 64, "a key entry is one cache line");

struct tdm__keys {
    key_ent **chunks; /* 64-byte aligned views into the allocations */
    void **allocs;    /* what tdm__malloc returned, per chunk */
    uint32_t n_chunks;
    uint32_t n_ents;    /* ids handed out so far (live or free) */
    uint32_t free_head; /* first free id, NO_ID when none */
    uint64_t *table;    /* (tag << 32) | (id + 1); 0 = empty */
    size_t mask;        /* table size - 1 (a power of two) */
    size_t live;
    size_t heap_bytes; /* bytes of keys kept outside their entry */
};

static inline key_ent *ent(const tdm__keys *ks, uint32_t id)
{
    return &ks->chunks[id >> CHUNK_SHIFT][id & (CHUNK_ENTS - 1)];
}

static inline const char *ent_bytes(const key_ent *e)
{
    return e->heap ? e->heap : e->in;
}

static inline uint64_t table_word(uint64_t hash, uint32_t id)
{
    return ((hash >> 32) << 32) | (uint64_t)(id + 1);
}

/* Creates an empty key table (16-slot index, no chunks yet).
 * Returns NULL on OOM. */
tdm__keys *tdm__keys_new(void)
{
    tdm__keys *ks = tdm__calloc(1, sizeof *ks);
    if (!ks)
        return NULL;
    ks->free_head = NO_ID;
    ks->mask = 15;
    ks->table = tdm__calloc(ks->mask + 1, sizeof *ks->table);
    if (!ks->table) {
        tdm__free(ks);
        return NULL;
    }
    return ks;
}

/* Doubles the index and reinserts every live id; false on OOM (the old
 * index is kept, so the caller can fail cleanly). */
static bool grow_table(tdm__keys *ks)
{
    size_t nmask = ks->mask * 2 + 1;
    uint64_t *nt = tdm__calloc(nmask + 1, sizeof *nt);
    if (!nt)
        return false;
    for (size_t i = 0; i <= ks->mask; i++) {
        uint64_t w = ks->table[i];
        if (!w)
            continue;
        size_t j = (size_t)ent(ks, (uint32_t)w - 1)->hash & nmask;
        while (nt[j])
            j = (j + 1) & nmask;
        nt[j] = w;
    }
    tdm__free(ks->table);
    ks->table = nt;
    ks->mask = nmask;
    return true;
}

/* Adds one chunk of entries; false on OOM. */
static bool add_chunk(tdm__keys *ks)
{
    uint32_t n = ks->n_chunks + 1;
    key_ent **nc = tdm__realloc(ks->chunks, n * sizeof *nc);
    if (!nc)
        return false;
    ks->chunks = nc;
    void **na = tdm__realloc(ks->allocs, n * sizeof *na);
    if (!na)
        return false;
    ks->allocs = na;
    void *raw = tdm__malloc(CHUNK_ENTS * sizeof(key_ent) + 63);
    if (!raw)
        return false;
    uintptr_t p = ((uintptr_t)raw + 63) & ~(uintptr_t)63;
    ks->allocs[ks->n_chunks] = raw;
    ks->chunks[ks->n_chunks] = (key_ent *)p;
    ks->n_chunks = n;
    return true;
}

/* Finds the index position holding an equal key, or the empty position
 * where it would go. */
static inline size_t probe(const tdm__keys *ks, const char *key, size_t len,
                           uint64_t h)
{
    uint64_t tag = (h >> 32) << 32;
    size_t i = (size_t)h & ks->mask;
    for (;;) {
        uint64_t w = ks->table[i];
        if (!w)
            return i;
        if ((w & 0xffffffff00000000ULL) == tag) {
            const key_ent *e = ent(ks, (uint32_t)w - 1);
            if (e->hash == h && e->len == len &&
                memcmp(ent_bytes(e), key, len) == 0)
                return i;
        }
        i = (i + 1) & ks->mask;
    }
}

/* Looks @p key up without taking a reference (hash from
 * tdm__keys_hash).  Returns true and the id, or false when absent. */
bool tdm__keys_find(const tdm__keys *ks, const char *key, size_t len,
                    uint64_t hash, uint32_t *id)
{
    uint64_t w = ks->table[probe(ks, key, len, hash)];
    if (!w)
        return false;
    *id = (uint32_t)w - 1;
    return true;
}

/* Finds or adds @p key and takes a reference.  Short keys are
 * copied into the entry, longer ones to the heap.  Returns TDM_OK or
 * TDM_ERR_NOMEM (then nothing changed). */
tdm_err tdm__keys_intern_hashed(tdm__keys *ks, const char *key, size_t len,
                                uint64_t hash, uint32_t *id)
{
    size_t pos = probe(ks, key, len, hash);
    if (ks->table[pos]) {
        *id = (uint32_t)ks->table[pos] - 1;
        ent(ks, *id)->refs++;
        return TDM_OK;
    }
    if (len > UINT32_MAX)
        return TDM_ERR_NOMEM;
    /* A new key.  Keep the load factor under 1/2 for short probes. */
    if ((ks->live + 1) * 2 > ks->mask + 1) {
        if (!grow_table(ks))
            return TDM_ERR_NOMEM;
        pos = probe(ks, key, len, hash);
    }
    if (ks->free_head == NO_ID && ks->n_ents == ks->n_chunks * CHUNK_ENTS) {
        if (ks->n_ents >= NO_ID - CHUNK_ENTS || !add_chunk(ks))
            return TDM_ERR_NOMEM;
    }
    char *heap = NULL;
    if (len >= INLINE_MAX) {
        heap = tdm__malloc(len + 1);
        if (!heap)
            return TDM_ERR_NOMEM;
        memcpy(heap, key, len);
        heap[len] = '\0';
    }
    uint32_t nid;
    if (ks->free_head != NO_ID) {
        nid = ks->free_head;
        ks->free_head = ent(ks, nid)->u.next_free;
    } else {
        nid = ks->n_ents++;
    }
    key_ent *e = ent(ks, nid);
    e->hash = hash;
    e->len = (uint32_t)len;
    e->refs = 1;
    e->u.udata = NULL;
    e->heap = heap;
    if (!heap) {
        if (len)
            memcpy(e->in, key, len);
        e->in[len] = '\0';
    } else {
        ks->heap_bytes += len + 1;
    }
    ks->table[pos] = table_word(hash, nid);
    ks->live++;
    *id = nid;
    return TDM_OK;
}

/* tdm__keys_intern_hashed with the hash computed here. */
tdm_err tdm__keys_intern(tdm__keys *ks, const char *key, size_t len,
                         uint32_t *id)
{
    return tdm__keys_intern_hashed(ks, key, len, tdm__keys_hash(key, len), id);
}

/* Takes a reference on a live id (precondition: refs > 0). */
void tdm__keys_ref(tdm__keys *ks, uint32_t id)
{
    ent(ks, id)->refs++;
}

/* Removes index position i and shifts later members of the probe run back
 * so that every remaining key stays reachable from its home position. */
static void table_delete_at(tdm__keys *ks, size_t i)
{
    size_t j = i;
    for (;;) {
        ks->table[i] = 0;
        for (;;) {
            j = (j + 1) & ks->mask;
            uint64_t w = ks->table[j];
            if (!w)
                return;
            size_t home = (size_t)ent(ks, (uint32_t)w - 1)->hash & ks->mask;
            /* The entry at j may fill the hole at i unless its home lies
             * cyclically in (i, j]. */
            bool stays =
                (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
            if (!stays)
                break;
        }
        ks->table[i] = ks->table[j];
        i = j;
    }
}

/* Drops a reference; the last one removes the key from the
 * index and puts its id on the free list for reuse. */
void tdm__keys_unref(tdm__keys *ks, uint32_t id)
{
    key_ent *e = ent(ks, id);
    if (--e->refs > 0)
        return;
    uint64_t w = table_word(e->hash, id);
    size_t i = (size_t)e->hash & ks->mask;
    while (ks->table[i] != w)
        i = (i + 1) & ks->mask;
    table_delete_at(ks, i);
    if (e->heap) {
        ks->heap_bytes -= e->len + 1;
        tdm__free(e->heap);
        e->heap = NULL;
    }
    e->len = 0;
    e->u.next_free = ks->free_head;
    ks->free_head = id;
    ks->live--;
}

/* The NUL-terminated bytes of a live id and their length. */
const char *tdm__keys_get(const tdm__keys *ks, uint32_t id, size_t *len)
{
    const key_ent *e = ent(ks, id);
    if (len)
        *len = e->len;
    return ent_bytes(e);
}

/* The owner's per-key pointer of a live id. */
void **tdm__keys_udata(tdm__keys *ks, uint32_t id)
{
    return &ent(ks, id)->u.udata;
}

/* The reference count of a live id. */
uint32_t tdm__keys_refs(const tdm__keys *ks, uint32_t id)
{
    return ent(ks, id)->refs;
}

/* Number of live keys. */
size_t tdm__keys_count(const tdm__keys *ks)
{
    return ks->live;
}

/* One more than the largest id handed out (state.h). */
uint32_t tdm__keys_id_bound(const tdm__keys *ks)
{
    return ks->n_ents;
}

/* Bytes held by live keys: entry, index share, long key bytes. */
size_t tdm__keys_bytes(const tdm__keys *ks)
{
    return ks->live * (sizeof(key_ent) + 2 * sizeof(uint64_t)) + ks->heap_bytes;
}

/* Frees the table, every entry chunk and long key; NULL is a
 * no-op. */
void tdm__keys_destroy(tdm__keys *ks)
{
    if (!ks)
        return;
    for (uint32_t i = 0; i < ks->n_ents; i++) {
        key_ent *e = ent(ks, i);
        if (e->refs)
            tdm__free(e->heap);
    }
    for (uint32_t c = 0; c < ks->n_chunks; c++)
        tdm__free(ks->allocs[c]);
    tdm__free(ks->chunks);
    tdm__free(ks->allocs);
    tdm__free(ks->table);
    tdm__free(ks);
}
