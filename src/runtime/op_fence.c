/* SPDX-License-Identifier: MIT */
/* op_fence.c - a window subtask's side of the key fence: FENCE items
 * move fenced keys' epochs up, results of older identities are counted
 * and not written, and the count is logged at the end (op_fence.h).
 *
 * Invariant: an epoch only rises (tdm__rt_keyset_put_max).
 * State: t->fence (tdm__op_fence_state), its own.  Used by task_op.c
 * (FENCE items, rows, the end) and task_op_emit.c (results).
 */
#include <string.h>

#include "runtime/op_fence.h"
#include "runtime/task_op.h"

/* Each key of @p f: its epoch up by one (1 for a new key). */
void tdm__op_fence_apply(tdm__rt_op_task *t, const tdm__rt_fence *f)
{
    size_t off = 0;
    for (uint32_t i = 0; i < f->n && !t->failed; i++) {
        uint32_t len;
        memcpy(&len, f->data + off, sizeof len);
        const char *key = f->data + off + sizeof len;
        off += sizeof len + len;
        uint64_t h = tdm__keys_hash(key, len);
        int64_t *e = tdm__rt_keyset_find(&t->fence.keys, key, len, h);
        int64_t next = e ? *e + 1 : 1;
        if (tdm__rt_keyset_put_max(&t->fence.keys, key, len, h, next) != TDM_OK)
            tdm__rt_op_fail_nomem(t);
    }
}

/* Whether a result's key belongs to an older identity (counted). */
bool tdm__op_fence_result(tdm__op_fence_state *f, const char *key, size_t *len)
{
    size_t n = *len;
    uint32_t epoch = 0;
    if (n >= RT_FENCE_SUFFIX && memcmp(key + n - 8, RT_FENCE_MAGIC, 8) == 0) {
        size_t base = n - RT_FENCE_SUFFIX;
        const int64_t *e =
            tdm__rt_keyset_find(&f->keys, key, base, tdm__keys_hash(key, base));
        if (e) {
            memcpy(&epoch, key + base, sizeof epoch);
            if ((int64_t)epoch != *e)
                goto stale;
            *len = base;
            return false;
        }
    }
    if (tdm__rt_keyset_find(&f->keys, key, n, tdm__keys_hash(key, n)))
        goto stale;
    return false;
stale:
    f->c_fenced++;
    return true;
}

/* The results of fenced keys not written. */
void tdm__op_fence_on_end(tdm__rt_op_task *t)
{
    if (t->fence.c_fenced)
        tdm__job_log(t->run->job,
                     "window %s[%d]: %lld result(s) of fenced keys "
                     "not written (their partitions' new owners write "
                     "them)",
                     t->op->node->name, t->index, (long long)t->fence.c_fenced);
}

/* Frees the fence state. */
void tdm__op_fence_free(tdm__op_fence_state *f)
{
    tdm__free(f->kb.p);
    tdm__rt_keyset_free(&f->keys);
}
