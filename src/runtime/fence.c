/* SPDX-License-Identifier: MIT */
/* fence.c - the key fence of partitions revoked while a job runs
 * (docs/kafka.md, "Key fence"): a small map from key bytes to a 64-bit
 * value (a tdm__map, core/map.h), used twice.  A source subtask keeps one
 * per split (and consumer edge) with the highest commit horizon of the
 * split's records per key, pruned as commits settle; when the connector says a
 * split was revoked live, the keys left are sent to the window subtasks, which
 * keep a map key -> fence epoch: later records of a fenced key go to a new key
 * identity (the bytes plus an epoch suffix), and results of an older identity
 * are not written - its state was partial and the partition's new owner writes
 * those windows complete.
 */
#include <string.h>

#include "runtime/outbox.h"

/* See outbox.h. */
int64_t *tdm__rt_keyset_find(const tdm__rt_keyset *s, const char *key,
                             size_t len, uint64_t h)
{
    if (s->n == 0)
        return NULL;
    return (int64_t *)tdm__map_find(s->map, key, len, h);
}

/* See outbox.h. */
tdm_err tdm__rt_keyset_put_max(tdm__rt_keyset *s, const char *key, size_t len,
                               uint64_t h, int64_t v)
{
    uint64_t *val;
    bool added;
    if (!s->map && !(s->map = tdm__map_new()))
        return TDM_ERR_NOMEM;
    if (tdm__map_put(s->map, key, len, h, &val, &added) != TDM_OK)
        return TDM_ERR_NOMEM;
    if (added || v > (int64_t)*val)
        *val = (uint64_t)v;
    s->n = tdm__map_count(s->map);
    return TDM_OK;
}

/* See outbox.h.  The map is freed when no key is left. */
void tdm__rt_keyset_prune(tdm__rt_keyset *s, int64_t le)
{
    size_t pos = 0, len;
    const void *key;
    uint64_t *v;
    while ((v = tdm__map_next(s->map, &pos, &key, &len)) != NULL)
        if ((int64_t)*v <= le)
            tdm__map_remove_at(s->map, pos);
    s->n = tdm__map_count(s->map);
    if (s->n == 0)
        tdm__rt_keyset_free(s);
}

/* See outbox.h. */
void tdm__rt_keyset_free(tdm__rt_keyset *s)
{
    if (!s)
        return;
    tdm__map_destroy(s->map);
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
