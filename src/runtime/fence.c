/* SPDX-License-Identifier: MIT */
/* fence.c - the key fence of partitions revoked while a job runs
 * (docs/kafka.md, "Key fence"): a small map from key bytes to a 64-bit
 * value, used twice.  A source subtask keeps one per split (and
 * consumer edge) with the highest commit horizon of the split's records
 * per key, pruned as commits settle; when the connector says a split was
 * revoked live, the keys left are sent to the window subtasks, which keep
 * a map key -> fence epoch: later records of a fenced key go to a new
 * key identity (the bytes plus an epoch suffix), and results of an older
 * identity are not written - its state was partial and the partition's
 * new owner writes those windows complete.
 */
#include <string.h>

#include "runtime/outbox.h"

/* Slot of the open-addressing index: entry index + 1, 0 empty. */
static size_t ks_probe(const tdm__rt_keyset *s, const char *key, size_t len,
                       uint64_t h, bool *found)
{
    size_t mask = s->n_slots - 1, i = (size_t)h & mask;
    for (;;) {
        uint32_t e = s->slots[i];
        if (e == 0) {
            *found = false;
            return i;
        }
        const tdm__rt_keyent *en = &s->ents[e - 1];
        if (en->h == h && en->len == len &&
            memcmp(s->bytes + en->off, key, len) == 0) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
}

/* Rebuilds the index with @p n_slots slots (a power of two). */
static tdm_err ks_reindex(tdm__rt_keyset *s, size_t n_slots)
{
    uint32_t *slots = tdm__calloc(n_slots, sizeof *slots);
    if (!slots)
        return TDM_ERR_NOMEM;
    tdm__free(s->slots);
    s->slots = slots;
    s->n_slots = n_slots;
    for (size_t e = 0; e < s->n; e++) {
        size_t i = (size_t)s->ents[e].h & (n_slots - 1);
        while (slots[i])
            i = (i + 1) & (n_slots - 1);
        slots[i] = (uint32_t)(e + 1);
    }
    return TDM_OK;
}

/* See outbox.h. */
int64_t *tdm__rt_keyset_find(const tdm__rt_keyset *s, const char *key,
                             size_t len, uint64_t h)
{
    bool found;
    if (s->n == 0)
        return NULL;
    size_t i = ks_probe(s, key, len, h, &found);
    return found ? &s->ents[s->slots[i] - 1].v : NULL;
}

/* See outbox.h. */
tdm_err tdm__rt_keyset_put_max(tdm__rt_keyset *s, const char *key, size_t len,
                               uint64_t h, int64_t v)
{
    bool found;
    if (2 * (s->n + 1) > s->n_slots &&
        ks_reindex(s, s->n_slots ? 2 * s->n_slots : 16) != TDM_OK)
        return TDM_ERR_NOMEM;
    size_t i = ks_probe(s, key, len, h, &found);
    if (found) {
        tdm__rt_keyent *en = &s->ents[s->slots[i] - 1];
        if (v > en->v)
            en->v = v;
        return TDM_OK;
    }
    if (s->n == s->cap_ents) {
        size_t cap = s->cap_ents ? 2 * s->cap_ents : 16;
        tdm__rt_keyent *ne = tdm__realloc(s->ents, cap * sizeof *ne);
        if (!ne)
            return TDM_ERR_NOMEM;
        s->ents = ne;
        s->cap_ents = cap;
    }
    if (s->used + len > s->cap_bytes) {
        size_t cap = s->cap_bytes ? 2 * s->cap_bytes : 256;
        while (cap < s->used + len)
            cap *= 2;
        char *nb = tdm__realloc(s->bytes, cap);
        if (!nb)
            return TDM_ERR_NOMEM;
        s->bytes = nb;
        s->cap_bytes = cap;
    }
    if (len)
        memcpy(s->bytes + s->used, key, len);
    s->ents[s->n] =
        (tdm__rt_keyent){.h = h, .v = v, .off = s->used, .len = len};
    s->used += len;
    s->slots[i] = (uint32_t)++s->n;
    return TDM_OK;
}

/* See outbox.h.  Compacts entries and key bytes in place, then re-indexes
 * (the index only shrinks, so it cannot fail for want of memory: the
 * old one is cleared and refilled when a smaller one is not granted). */
void tdm__rt_keyset_prune(tdm__rt_keyset *s, int64_t le)
{
    size_t n = 0, used = 0;
    for (size_t e = 0; e < s->n; e++) {
        tdm__rt_keyent en = s->ents[e];
        if (en.v <= le)
            continue;
        memmove(s->bytes + used, s->bytes + en.off, en.len);
        en.off = used;
        used += en.len;
        s->ents[n++] = en;
    }
    if (n == s->n)
        return;
    s->n = n;
    s->used = used;
    size_t want = 16;
    while (want < 2 * n)
        want *= 2;
    if (want < s->n_slots && ks_reindex(s, want) == TDM_OK)
        return;
    memset(s->slots, 0, s->n_slots * sizeof *s->slots);
    for (size_t e = 0; e < s->n; e++) {
        size_t i = (size_t)s->ents[e].h & (s->n_slots - 1);
        while (s->slots[i])
            i = (i + 1) & (s->n_slots - 1);
        s->slots[i] = (uint32_t)(e + 1);
    }
}

/* See outbox.h. */
void tdm__rt_keyset_free(tdm__rt_keyset *s)
{
    if (!s)
        return;
    tdm__free(s->slots);
    tdm__free(s->ents);
    tdm__free(s->bytes);
    memset(s, 0, sizeof *s);
}

/* See outbox.h. */
void tdm__rt_fence_free(tdm__rt_fence *f)
{
    if (!f)
        return;
    tdm__free(f->data);
    tdm__free(f);
}
