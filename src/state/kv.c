/* SPDX-License-Identifier: MIT */
/* kv.c - keyed value slots: (key id, namespace) -> fixed-size bytes.
 *
 * Slots are carved from slabs and never move, so operators may keep slot
 * pointers across inserts.  The index is an open-addressing table of slot
 * pointers (linear probing, backward-shift deletion) with the slot's hash
 * cached in the slot; every slot is also on a doubly linked list of its
 * key so that "all windows of this key" (session merging) costs only the
 * key's own windows.
 */
#include <string.h>

#include "state/state.h"

typedef struct kv_slot {
    uint32_t key;
    uint32_t hash; /* low 32 bits of the slot's hash */
    tdm__ns ns;
    struct kv_slot *knext; /* next slot of the same key; free list link */
    struct kv_slot *kprev;
} kv_slot;

/* Slot memory is [value, rounded to 16][kv_slot], the whole rounded to a
 * multiple of 64 bytes inside 64-byte aligned slabs, so that a value of
 * up to 64 bytes sits in one cache line.  Slot pointers below point at
 * the kv_slot part. */
#define SLAB_SLOTS 256

typedef struct slab {
    struct slab *next;
    void *raw; /* what tdm__malloc returned */
} slab;

struct tdm__kv {
    size_t value_size;
    size_t val_off;   /* value size rounded to 16 */
    size_t slot_size; /* value + header, a multiple of 64 */
    kv_slot **tab;    /* NULL = empty */
    size_t mask;
    size_t count;
    kv_slot *free_list;
    slab *slabs;
    size_t n_slabs;
    kv_slot **heads; /* per key id: first slot of that key */
    uint32_t n_heads;
};

/* Mixes (key, ns) into a well-spread 64-bit value (core/hash.h's word
 * steps). */
static inline uint64_t kv_hash(uint32_t key, tdm__ns ns)
{
    uint64_t h = tdm__hash_step(tdm__hash_start(24, TDM__HASH_TABLE), key);
    return tdm__hash_last(tdm__hash_step(h, (uint64_t)ns.a), (uint64_t)ns.b);
}

static inline void *slot_value(const tdm__kv *kv, kv_slot *s)
{
    return (char *)s - kv->val_off;
}

static inline kv_slot *value_slot(const tdm__kv *kv, void *v)
{
    return (kv_slot *)(void *)((char *)v + kv->val_off);
}

/* Creates an empty store for values of @p value_size bytes
 * (64-slot index; slabs come on demand).  Returns NULL on OOM. */
tdm__kv *tdm__kv_new(size_t value_size)
{
    tdm__kv *kv = tdm__calloc(1, sizeof *kv);
    if (!kv)
        return NULL;
    kv->value_size = value_size;
    kv->val_off = (value_size + 15) & ~(size_t)15;
    kv->slot_size = (kv->val_off + sizeof(kv_slot) + 63) & ~(size_t)63;
    kv->mask = 63;
    kv->tab = tdm__calloc(kv->mask + 1, sizeof *kv->tab);
    if (!kv->tab) {
        tdm__free(kv);
        return NULL;
    }
    return kv;
}

/* Looks up (key, ns) with its precomputed hash; NULL when absent. */
static inline kv_slot *find(const tdm__kv *kv, uint32_t key, tdm__ns ns,
                            uint64_t h)
{
    size_t i = (size_t)h & kv->mask;
    uint32_t h32 = (uint32_t)h;
    for (;;) {
        kv_slot *s = kv->tab[i];
        if (!s)
            return NULL;
        if (s->hash == h32 && s->key == key && s->ns.a == ns.a &&
            s->ns.b == ns.b)
            return s;
        i = (i + 1) & kv->mask;
    }
}

/* The value of (key, ns), or NULL when absent. */
void *tdm__kv_get(tdm__kv *kv, uint32_t key, tdm__ns ns)
{
    kv_slot *s = find(kv, key, ns, kv_hash(key, ns));
    return s ? slot_value(kv, s) : NULL;
}

/* Home position of a stored slot.  Only the low 32 bits of the hash are
 * cached, which is enough while the table has at most 2^32 positions;
 * beyond that the hash is recomputed. */
static inline size_t home_of(const tdm__kv *kv, const kv_slot *s)
{
    if (kv->mask <= UINT32_MAX)
        return (size_t)s->hash & kv->mask;
    return (size_t)kv_hash(s->key, s->ns) & kv->mask;
}

static bool grow_table(tdm__kv *kv)
{
    size_t nmask = kv->mask * 2 + 1;
    kv_slot **nt = tdm__calloc(nmask + 1, sizeof *nt);
    if (!nt)
        return false;
    size_t omask = kv->mask;
    kv_slot **ot = kv->tab;
    kv->tab = nt;
    kv->mask = nmask;
    for (size_t i = 0; i <= omask; i++) {
        kv_slot *s = ot[i];
        if (!s)
            continue;
        size_t j = home_of(kv, s);
        while (nt[j])
            j = (j + 1) & nmask;
        nt[j] = s;
    }
    tdm__free(ot);
    return true;
}

/* Takes a slot from the free list, adding a slab when it is empty. */
static kv_slot *alloc_slot(tdm__kv *kv)
{
    if (!kv->free_list) {
        slab *sb = tdm__malloc(sizeof(slab));
        void *raw = sb ? tdm__malloc(kv->slot_size * SLAB_SLOTS + 63) : NULL;
        if (!raw) {
            tdm__free(sb);
            return NULL;
        }
        sb->raw = raw;
        sb->next = kv->slabs;
        kv->slabs = sb;
        kv->n_slabs++;
        char *base = (char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
        for (size_t i = SLAB_SLOTS; i-- > 0;) {
            kv_slot *s =
                (kv_slot *)(void *)(base + i * kv->slot_size + kv->val_off);
            s->knext = kv->free_list;
            kv->free_list = s;
        }
    }
    kv_slot *s = kv->free_list;
    kv->free_list = s->knext;
    return s;
}

/* Makes sure the per-key head array covers id @p key. */
static bool ensure_head(tdm__kv *kv, uint32_t key)
{
    if (key < kv->n_heads)
        return true;
    size_t n = kv->n_heads ? kv->n_heads : 64;
    while (n <= key)
        n *= 2;
    kv_slot **nh = tdm__realloc(kv->heads, n * sizeof *nh);
    if (!nh)
        return false;
    memset(nh + kv->n_heads, 0, (n - kv->n_heads) * sizeof *nh);
    kv->heads = nh;
    kv->n_heads = (uint32_t)n;
    return true;
}

/* The value of (key, ns), created zeroed when absent (*created
 * says which).  Grows the index first, so a NULL return (OOM) leaves
 * the store unchanged. */
void *tdm__kv_upsert(tdm__kv *kv, uint32_t key, tdm__ns ns, bool *created)
{
    uint64_t h = kv_hash(key, ns);
    kv_slot *s = find(kv, key, ns, h);
    if (s) {
        if (created)
            *created = false;
        return slot_value(kv, s);
    }
    /* Load factor at most 1/2. */
    if ((kv->count + 1) * 2 > kv->mask + 1 && !grow_table(kv))
        return NULL;
    if (!ensure_head(kv, key))
        return NULL;
    s = alloc_slot(kv);
    if (!s)
        return NULL;
    s->key = key;
    s->hash = (uint32_t)h;
    s->ns = ns;
    s->kprev = NULL;
    s->knext = kv->heads[key];
    if (s->knext)
        s->knext->kprev = s;
    kv->heads[key] = s;
    memset(slot_value(kv, s), 0, kv->value_size);
    size_t i = (size_t)h & kv->mask;
    while (kv->tab[i])
        i = (i + 1) & kv->mask;
    kv->tab[i] = s;
    kv->count++;
    if (created)
        *created = true;
    return slot_value(kv, s);
}

/* Empties table position i, shifting later members of its probe run back
 * (no tombstones, so lookups stay short after many removals). */
static void table_delete_at(tdm__kv *kv, size_t i)
{
    size_t j = i;
    for (;;) {
        kv->tab[i] = NULL;
        for (;;) {
            j = (j + 1) & kv->mask;
            kv_slot *s = kv->tab[j];
            if (!s)
                return;
            size_t home = home_of(kv, s);
            bool stays =
                (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
            if (!stays)
                break;
        }
        kv->tab[i] = kv->tab[j];
        i = j;
    }
}

/* Unlinks and frees a slot found at table position i. */
static void remove_at(tdm__kv *kv, size_t i)
{
    kv_slot *s = kv->tab[i];
    table_delete_at(kv, i);
    if (s->kprev)
        s->kprev->knext = s->knext;
    else
        kv->heads[s->key] = s->knext;
    if (s->knext)
        s->knext->kprev = s->kprev;
    s->knext = kv->free_list;
    kv->free_list = s;
    kv->count--;
}

/* Removes (key, ns) if present; its value must hold nothing that
 * needs freeing any more. */
void tdm__kv_remove(tdm__kv *kv, uint32_t key, tdm__ns ns)
{
    uint64_t h = kv_hash(key, ns);
    size_t i = (size_t)h & kv->mask;
    for (;;) {
        kv_slot *s = kv->tab[i];
        if (!s)
            return;
        if (s->key == key && s->ns.a == ns.a && s->ns.b == ns.b) {
            remove_at(kv, i);
            return;
        }
        i = (i + 1) & kv->mask;
    }
}

/* Removes the slot owning @p value (a live value pointer). */
void tdm__kv_remove_slot(tdm__kv *kv, void *value)
{
    kv_slot *s = value_slot(kv, value);
    size_t i = home_of(kv, s);
    while (kv->tab[i] != s)
        i = (i + 1) & kv->mask;
    remove_at(kv, i);
}

/* Calls fn for the slots of one key through the key's list;
 * fn must not insert or remove. */
void tdm__kv_each_of_key(tdm__kv *kv, uint32_t key,
                         void (*fn)(void *ud, tdm__ns ns, void *slot), void *ud)
{
    if (key >= kv->n_heads)
        return;
    for (kv_slot *s = kv->heads[key]; s; s = s->knext)
        fn(ud, s->ns, slot_value(kv, s));
}

/* Calls fn for every slot in index order; fn must not insert or
 * remove. */
void tdm__kv_each(tdm__kv *kv,
                  void (*fn)(void *ud, uint32_t key, tdm__ns ns, void *slot),
                  void *ud)
{
    for (size_t i = 0; i <= kv->mask; i++) {
        kv_slot *s = kv->tab[i];
        if (s)
            fn(ud, s->key, s->ns, slot_value(kv, s));
    }
}

/* See state.h. */
tdm__kv_ref *tdm__kv_refs(const tdm__kv *kv, size_t *n)
{
    tdm__kv_ref *v = tdm__malloc((tdm__kv_count(kv) + 1) * sizeof *v);
    *n = 0;
    for (size_t i = 0; v && i <= kv->mask; i++) {
        const kv_slot *s = kv->tab[i];
        if (s)
            v[(*n)++] = (tdm__kv_ref){s->key, s->ns};
    }
    return v;
}

/* Number of live slots. */
size_t tdm__kv_count(const tdm__kv *kv)
{
    return kv->count;
}

/* Bytes held by live slots (slot memory and index share). */
size_t tdm__kv_bytes(const tdm__kv *kv)
{
    return kv->count * tdm__kv_slot_bytes(kv);
}

/* Bytes one live slot costs: its memory and half-full index
 * share. */
size_t tdm__kv_slot_bytes(const tdm__kv *kv)
{
    /* A slot plus its share of a half-full table. */
    return kv->slot_size + 2 * sizeof(kv_slot *);
}

/* Frees every slab, the index and the key lists; values must be
 * released by the caller first.  NULL is a no-op. */
void tdm__kv_destroy(tdm__kv *kv)
{
    if (!kv)
        return;
    slab *sb = kv->slabs;
    while (sb) {
        slab *next = sb->next;
        tdm__free(sb->raw);
        tdm__free(sb);
        sb = next;
    }
    tdm__free(kv->tab);
    tdm__free(kv->heads);
    tdm__free(kv);
}
