/* SPDX-License-Identifier: MIT */
/* outbox_route.h - the per-row half of a producer's outbox: which
 * subtask of each consumer a row goes to, written into the batch's
 * selection regions that the outbox (outbox.c) later hands to the
 * consumers' queues.
 *
 * It is a header of inline functions because it runs once per row and
 * edge inside the source subtask's scan (task_source.c), which
 * specialises it by constant folding (always_inline): the key kind,
 * the parallelism, the fence and the local aggregate are constants
 * there.  tdm__outbox_route_all (outbox.c) is the general, out-of-line
 * form used for several edges and by chained operator outputs.
 *
 * Invariant: a row routed here lands in exactly one target region per
 * edge (or is folded into the edge's local aggregate), in the order the
 * rows were routed; nothing is sent until the outbox flushes.
 */
#ifndef TDM_RT_OUTBOX_ROUTE_H
#define TDM_RT_OUTBOX_ROUTE_H

#include "runtime/localagg.h"
#include "runtime/task_source.h"

/* How an edge's key bytes are found, which depends on the source's
 * schema only (tdm__outbox_route_edge): a single string field read in place, a
 * single fixed-width field (ints, timestamps and bools, or a double),
 * no field at all (an unkeyed window: the empty key, as
 * tdm__key_encode gives it), or anything else, encoded by
 * tdm__key_encode. */
enum {
    TDM__KEY_BY_ENCODE = 0,
    TDM__KEY_BY_STRING,
    TDM__KEY_BY_INT,
    TDM__KEY_BY_DOUBLE,
    TDM__KEY_BY_NONE
};

/* The key kind of edge @p ed for rows of @p schema. */
static inline int tdm__outbox_key_kind(const tdm__schema *schema,
                                       const tdm__rt_edge *ed)
{
    if (ed->n_key == 0)
        return TDM__KEY_BY_NONE;
    if (ed->n_key != 1)
        return TDM__KEY_BY_ENCODE;
    switch (schema->fields[ed->key_idx[0]].type) {
    case TDM_TYPE_STRING:
        return TDM__KEY_BY_STRING;
    case TDM_TYPE_DOUBLE:
        return TDM__KEY_BY_DOUBLE;
    default:
        return TDM__KEY_BY_INT;
    }
}

/* Key fence: remembers that @p row's key (for consumer edge @p e; the
 * bytes in (key, klen) when @p have, else encoded here) was read from
 * its split, with the highest commit horizon of its records there. */
tdm_err tdm__outbox_track_key(tdm__rt_src_task *t, const tdm__row *row, int e,
                              const char *key, size_t klen, bool have);

/* Routes row @p i of the current batch to the target of edge @p e (of
 * key kind @p kind): the subtask that owns the key group of its key
 * bytes.  Every consumer of the source (a window, a join side) is an
 * edge with its own key fields, so one row may go to different subtasks
 * of different consumers.  The row is not copied: its index goes into
 * the target's selection, with its timestamp and the key (tdm__sel) when
 * it is a single field - the value bytes of a fixed-width one, or a
 * string read in place - which is all a window subtask reads of it for a
 * count.  At parallelism 1 (@p P) there is one target and no hashing;
 * the key bytes are then only built for the key fence (@p fence).
 * @p kfield is the edge's first key field (read for the fixed-width
 * kinds), @p sel and @p sel_n the selection and counts of the edge's
 * first target (its target_base), whose regions are @p cap rows. */
static inline __attribute__((always_inline)) tdm_err
tdm__outbox_route_edge(tdm__rt_src_task *t, const tdm__row *row, uint32_t i,
                       int e, int kind, int kfield, int P, bool fence,
                       tdm__sel *sel, uint32_t *sel_n, size_t cap,
                       tdm__rt_lagg *la, const bool count_only)
{
    const tdm__rt_edge *ed = &t->src->edges[e];
    char buf[TDM__KEY_FIXED_LEN];
    const char *key = NULL;
    size_t klen = 0;
    bool have = false;
    /* What goes into the selection: key_len and the key word (the
     * fixed value bytes, or the key pointer). */
    uint32_t sel_len = 0;
    uint64_t fixed = 0;
    if (kind == TDM__KEY_BY_INT || kind == TDM__KEY_BY_DOUBLE) {
        const tdm__val *v = &row->v[kfield];
        if (__builtin_expect(v->null, 0)) {
            /* A null single field is the one byte 0 (tdm__key_encode). */
            key = "";
            klen = 1;
            sel_len = 1;
        } else {
            fixed = tdm__key_fixed_bits(v, kind == TDM__KEY_BY_DOUBLE
                                               ? TDM_TYPE_DOUBLE
                                               : TDM_TYPE_INT64);
            sel_len = TDM__SEL_FIXED;
            if (fence) {
                tdm__key_fixed_put(fixed, buf);
                key = buf;
                klen = TDM__KEY_FIXED_LEN;
            }
        }
        have = true;
    } else if (kind == TDM__KEY_BY_STRING &&
               tdm__key_inplace(row, ed->key_idx, 1, &key, &klen) &&
               klen != TDM__SEL_FIXED) {
        sel_len = (uint32_t)klen;
        have = true;
    } else if (kind == TDM__KEY_BY_NONE) {
        /* No key fields: the empty key (static, so the selection may
         * carry it), without a call to encode nothing. */
        key = "";
        klen = 0;
        have = true;
    }
    if (la) {
        /* Two-phase aggregation: folded into the key's slice unless the
         * slice was flushed (then routed raw, below). */
        if (!have && tdm__key_encode(row, ed->key_idx, ed->n_key, &la->kb, &key,
                                     &klen) != TDM_OK)
            return TDM_ERR_NOMEM;
        int r = tdm__rt_lagg_fold(la, row, row->ts, fixed,
                                  sel_len == TDM__SEL_FIXED ? NULL : key, klen,
                                  t->wm_out, count_only);
        if (r > 0)
            return TDM_OK;
        if (r < 0)
            return TDM_ERR_NOMEM;
        if (!have && sel_len != TDM__SEL_FIXED) {
            key = NULL; /* encoded in la->kb: the consumer encodes it */
            klen = 0;
        }
    }
    int j = 0;
    if (P > 1) {
        /* An encoded key lives in the subtask's scratch buffer, which the
         * next row overwrites: the consumer encodes it again (key NULL in
         * the selection). */
        if (!have && tdm__key_encode(row, ed->key_idx, ed->n_key, &t->kb, &key,
                                     &klen) != TDM_OK)
            return TDM_ERR_NOMEM;
        /* A fixed-width key hashes from its value (no bytes, no call). */
        uint64_t h = sel_len == TDM__SEL_FIXED ? tdm__key_fixed_hash(fixed)
                                               : tdm__keys_hash(key, klen);
        j = t->run->owner[tdm__key_group(h, t->run->key_groups)];
    }
    if (__builtin_expect(fence, 0) &&
        tdm__outbox_track_key(t, row, e, key, klen, have || P > 1) != TDM_OK)
        return TDM_ERR_NOMEM;
    tdm__sel *sl =
        P > 1 ? &sel[(size_t)j * cap + sel_n[j]++] : &sel[sel_n[0]++];
    sl->row = i;
    sl->key_len = sel_len;
    if (sel_len == TDM__SEL_FIXED)
        sl->fixed = fixed;
    else
        sl->key = have ? key : NULL;
    sl->ts = row->ts;
    return TDM_OK;
}

/* tdm__outbox_route_edge for every edge of the source (a source read by
 * several consumers), finding each edge's key kind per row; @p local:
 * fold into the edges' local aggregates. */
tdm_err tdm__outbox_route_all(tdm__rt_src_task *t, const tdm__row *row,
                              uint32_t i, int P, bool fence, bool local);

#endif /* TDM_RT_OUTBOX_ROUTE_H */
