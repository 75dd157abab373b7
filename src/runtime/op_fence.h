/* SPDX-License-Identifier: MIT */
/* op_fence.h - a window subtask's side of the key fence (fence.c,
 * src_fence.h): a FENCE item names the keys of a split revoked from this
 * member, and each such key's epoch moves up by one.  From then on its
 * records go to the operator under a new identity (the key, its epoch
 * and RT_FENCE_MAGIC), and results of older identities are not written:
 * the split's new owner writes them.
 *
 * Invariant: keys holds exactly the fenced keys, each with its current
 * epoch (>= 1); with none, the per-row and per-result paths skip the
 * fence after one test (keys.n == 0).
 * State: its own struct, tdm__op_fence_state (t->fence): keys, the
 * fenced key bytes kb, the count of results not written.
 * Hooks: per FENCE item (tdm__op_fence_apply), per row (the inline
 * tdm__op_fence_key), per result (tdm__op_fence_result), on_end (the
 * log line, tdm__op_fence_on_end).
 */
#ifndef TDM_RT_OP_FENCE_H
#define TDM_RT_OP_FENCE_H

#include <stdbool.h>
#include <string.h>

#include "runtime/outbox.h"

typedef struct tdm__rt_op_task tdm__rt_op_task;

/* Key -> epoch of the keys of revoked splits; kb holds a fenced key's
 * bytes with its epoch suffix; c_fenced: results of fenced identities
 * not written. */
typedef struct tdm__op_fence_state {
    struct tdm__rt_keyset keys;
    tdm__keybuf kb;
    int64_t c_fenced;
} tdm__op_fence_state;

/* A FENCE item's keys @p f: each key's epoch moves up by one.  Out of
 * memory fails the subtask. */
void tdm__op_fence_apply(tdm__rt_op_task *t, const tdm__rt_fence *f);

/* A result's key @p key (*len bytes): true when it belongs to an older
 * identity of a fenced key (not written, counted); otherwise *len
 * becomes the length of the key without its fence suffix. */
bool tdm__op_fence_result(tdm__op_fence_state *f, const char *key, size_t *len);

/* Hook at the end: the results of fenced keys not written, logged. */
void tdm__op_fence_on_end(tdm__rt_op_task *t);

/* Frees the fence state (NULL-safe parts). */
void tdm__op_fence_free(tdm__op_fence_state *f);

/* The bytes a record of @p key goes to the operator with: the key
 * itself, or for a fenced key the key, its epoch and RT_FENCE_MAGIC (in
 * f->kb).  NULL on OOM.  Inline: the row path calls it when keys are
 * fenced. */
static inline const char *tdm__op_fence_key(tdm__op_fence_state *f,
                                            const char *key, size_t *len)
{
    const int64_t *e =
        tdm__rt_keyset_find(&f->keys, key, *len, tdm__keys_hash(key, *len));
    if (!e)
        return key;
    size_t need = *len + RT_FENCE_SUFFIX;
    if (need > f->kb.cap) {
        char *p = tdm__realloc(f->kb.p, need);
        if (!p)
            return NULL;
        f->kb.p = p;
        f->kb.cap = need;
    }
    uint32_t epoch = (uint32_t)*e;
    memmove(f->kb.p, key, *len);
    memcpy(f->kb.p + *len, &epoch, sizeof epoch);
    memcpy(f->kb.p + *len + sizeof epoch, RT_FENCE_MAGIC, 8);
    *len = need;
    return f->kb.p;
}

#endif /* TDM_RT_OP_FENCE_H */
