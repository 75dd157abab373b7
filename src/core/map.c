/* SPDX-License-Identifier: MIT */
/* map.c - tdm__map, the open-addressing map from key bytes to a 64-bit
 * value for the engine's non-hot tables (see map.h).
 *
 * Invariant: slots[] holds entry number + 1 (0 empty) for every live
 * entry, at or after its home (h & mask) with no empty slot between;
 * n_slots is a power of two and more than twice the live count.  Entries
 * 0..n keep insertion order; a removed one has off == MAP_DEAD and is not
 * in slots[].  Removal shifts the probe run back (no tombstones), so
 * lookups never pass a hole.
 */
#include <string.h>

#include "core/map.h"

#define MAP_DEAD SIZE_MAX

typedef struct map_ent {
    uint64_t h, v;
    size_t off, len; /* key bytes in the arena; off MAP_DEAD: removed */
} map_ent;

struct tdm__map {
    uint32_t *slots;
    size_t n_slots;
    map_ent *ents;
    size_t n, cap, live; /* entries used (live or dead), allocated, live */
    char *bytes;
    size_t used, cap_bytes;
};

/* See map.h. */
tdm__map *tdm__map_new(void)
{
    tdm__map *m = tdm__calloc(1, sizeof *m);
    if (!m)
        goto fail;
    m->slots = tdm__calloc(16, sizeof *m->slots);
    if (!m->slots)
        goto fail;
    m->n_slots = 16;
    return m;
fail:
    tdm__map_destroy(m);
    return NULL;
}

/* See map.h. */
void tdm__map_destroy(tdm__map *m)
{
    if (!m)
        return;
    tdm__free(m->slots);
    tdm__free(m->ents);
    tdm__free(m->bytes);
    tdm__free(m);
}

/* See map.h. */
size_t tdm__map_count(const tdm__map *m)
{
    return m ? m->live : 0;
}

/* The slot of @p key: its own when present (*found), else the empty one
 * that ends its probe run. */
static size_t tdm__map_probe(const tdm__map *m, const void *key, size_t len,
                             uint64_t h, bool *found)
{
    size_t mask = m->n_slots - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t e = m->slots[i];
        if (e == 0) {
            *found = false;
            return i;
        }
        const map_ent *en = &m->ents[e - 1];
        if (en->h == h && en->len == len &&
            (len == 0 || memcmp(m->bytes + en->off, key, len) == 0)) {
            *found = true;
            return i;
        }
    }
}

/* See map.h. */
uint64_t *tdm__map_find(const tdm__map *m, const void *key, size_t len,
                        uint64_t h)
{
    bool found;
    if (!m || m->live == 0)
        return NULL;
    size_t i = tdm__map_probe(m, key, len, h, &found);
    return found ? &m->ents[m->slots[i] - 1].v : NULL;
}

/* Fills @p slots (@p n_slots, zeroed) from the live entries. */
static void tdm__map_index(const tdm__map *m, uint32_t *slots, size_t n_slots)
{
    for (size_t e = 0; e < m->n; e++) {
        if (m->ents[e].off == MAP_DEAD)
            continue;
        size_t i = (size_t)m->ents[e].h & (n_slots - 1);
        while (slots[i])
            i = (i + 1) & (n_slots - 1);
        slots[i] = (uint32_t)(e + 1);
    }
}

/* Drops the removed entries and their bytes (order kept), then rebuilds
 * the index in place; cannot fail. */
static void tdm__map_compact(tdm__map *m)
{
    size_t n = 0, used = 0;
    for (size_t e = 0; e < m->n; e++) {
        map_ent en = m->ents[e];
        if (en.off == MAP_DEAD)
            continue;
        if (en.len)
            memmove(m->bytes + used, m->bytes + en.off, en.len);
        en.off = used;
        used += en.len;
        m->ents[n++] = en;
    }
    m->n = n;
    m->used = used;
    memset(m->slots, 0, m->n_slots * sizeof *m->slots);
    tdm__map_index(m, m->slots, m->n_slots);
}

/* Makes room for one more entry of @p len key bytes: a bigger index at
 * half load, compaction or a bigger entry array when full, a bigger
 * arena.  TDM_OK or NOMEM (nothing changed that a lookup can see). */
static tdm_err tdm__map_reserve(tdm__map *m, size_t len)
{
    if (2 * (m->live + 1) > m->n_slots) {
        size_t ns = 2 * m->n_slots;
        uint32_t *slots = tdm__calloc(ns, sizeof *slots);
        if (!slots)
            return TDM_ERR_NOMEM;
        tdm__map_index(m, slots, ns);
        tdm__free(m->slots);
        m->slots = slots;
        m->n_slots = ns;
    }
    if (m->n == m->cap && 2 * m->live < m->n)
        tdm__map_compact(m);
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 8;
        map_ent *ne = tdm__realloc(m->ents, cap * sizeof *ne);
        if (!ne)
            return TDM_ERR_NOMEM;
        m->ents = ne;
        m->cap = cap;
    }
    if (len > m->cap_bytes - m->used) {
        size_t cap = m->cap_bytes ? 2 * m->cap_bytes : 64;
        while (cap - m->used < len)
            cap *= 2;
        char *nb = tdm__realloc(m->bytes, cap);
        if (!nb)
            return TDM_ERR_NOMEM;
        m->bytes = nb;
        m->cap_bytes = cap;
    }
    return TDM_OK;
}

/* See map.h. */
tdm_err tdm__map_put(tdm__map *m, const void *key, size_t len, uint64_t h,
                     uint64_t **val, bool *added)
{
    bool found;
    size_t i = tdm__map_probe(m, key, len, h, &found);
    if (!found) {
        if (tdm__map_reserve(m, len) != TDM_OK)
            return TDM_ERR_NOMEM;
        i = tdm__map_probe(m, key, len, h, &found);
        if (len)
            memcpy(m->bytes + m->used, key, len);
        m->ents[m->n] = (map_ent){.h = h, .off = m->used, .len = len};
        m->used += len;
        m->slots[i] = (uint32_t)++m->n;
        m->live++;
    }
    if (added)
        *added = !found;
    *val = &m->ents[m->slots[i] - 1].v;
    return TDM_OK;
}

/* Empties slot @p i and shifts the rest of its probe run back so that
 * no lookup meets a hole before its key. */
static void tdm__map_unslot(tdm__map *m, size_t i)
{
    size_t mask = m->n_slots - 1;
    for (size_t j = (i + 1) & mask; m->slots[j]; j = (j + 1) & mask) {
        size_t home = (size_t)m->ents[m->slots[j] - 1].h & mask;
        /* Entry at j may move to i when i lies cyclically in [home, j). */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i] = 0;
}

/* See map.h. */
bool tdm__map_remove(tdm__map *m, const void *key, size_t len, uint64_t h)
{
    bool found;
    if (!m || m->live == 0)
        return false;
    size_t i = tdm__map_probe(m, key, len, h, &found);
    if (!found)
        return false;
    m->ents[m->slots[i] - 1].off = MAP_DEAD;
    m->live--;
    tdm__map_unslot(m, i);
    return true;
}

/* See map.h. */
uint64_t *tdm__map_next(const tdm__map *m, size_t *pos, const void **key,
                        size_t *len)
{
    for (; m && *pos < m->n; (*pos)++) {
        map_ent *en = &m->ents[*pos];
        if (en->off == MAP_DEAD)
            continue;
        *key = en->len ? m->bytes + en->off : (const void *)"";
        *len = en->len;
        (*pos)++;
        return &en->v;
    }
    return NULL;
}

/* See map.h. */
void tdm__map_remove_at(tdm__map *m, size_t pos)
{
    const map_ent *en = &m->ents[pos - 1];
    tdm__map_remove(m, en->len ? m->bytes + en->off : "", en->len, en->h);
}

/* See map.h. */
uint64_t tdm__map_hash_at(const tdm__map *m, size_t pos)
{
    return m->ents[pos - 1].h;
}
