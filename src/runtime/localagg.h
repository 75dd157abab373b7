/* SPDX-License-Identifier: MIT */
/* localagg.h - the local phase of two-phase (local/global) window
 * aggregation, Flink's table.optimizer.agg-phase-strategy TWO_PHASE: a
 * source subtask folds each record of an eligible window consumer into a
 * partial accumulator per (key, slice) instead of routing it, and before
 * every watermark it sends downstream it flushes the slices that
 * watermark closes as partial rows (tdm__rt_partials), routed by key like
 * rows.  A slice is the window for tumbling windows and a tumbling piece
 * of gcd(size, slide) for sliding ones, so every record updates one
 * slice and windows combine slices.
 *
 *   record ─▶ slice of ts open? ─yes─▶ (key, slice) entry += record
 *                  │ no (flushed: the source's watermark passed it)
 *                  ▼
 *             routed raw, as without the local phase
 *   watermark W ─▶ slices with end - 1 <= W ─▶ partials per target,
 *                  then W (same channels, in order)
 *
 * Why the results are Flink's own: docs/runtime.md, "Two-phase
 * aggregation".  The per-record fold is inline here; the rest is in
 * localagg.c.
 */
#ifndef TDM_LOCALAGG_H
#define TDM_LOCALAGG_H

#include "runtime/task_source.h"

/* One (key, slice) entry: the lookup hash, the key (the value bytes of
 * a fixed-width key, key_len TDM__SEL_FIXED; else an offset into the
 * slice's key bytes), the records folded into it (row aggregates only:
 * a count's accumulator is that number) and, after it, the accumulator
 * (an int64 count, or a row aggregate's). */
typedef struct tdm__rt_lent {
    uint64_t h;
    uint64_t key;
    uint64_t n;
    uint32_t key_len;
    uint32_t pad_;
} tdm__rt_lent;

/* A count slot: a fixed-width key and its count (0: the slot is empty).
 * A single count() keeps the count of a fixed-width key here, beside
 * the key, so that folding a record reads one cache line (the slot)
 * instead of two dependent ones (an index slot, then the entry); such a
 * key has no entry. */
typedef struct tdm__rt_cslot {
    uint64_t key;
    int64_t n;
} tdm__rt_cslot;

/* In a single count's creation order (tdm__rt_lslice.ord): an entry number
 * with this bit, else a count slot's. */
#define RT_ORD_ENT 0x80000000u

/* One open slice [start, end) of one consumer: an open-addressing index
 * (entry number + 1; 0 empty) over entries kept in creation order; for
 * a single count(), also the count slots of its fixed-width keys (open
 * addressing too; those keys have no entries) and the creation order of
 * all its keys. */
typedef struct tdm__rt_lslice {
    tdm_time_ms start, end;
    uint32_t *idx;
    uint32_t shift; /* index slot = h >> shift (64 - log2 slots) */
    uint32_t n_slots;
    char *ents; /* n entries of the consumer's stride */
    uint32_t n, cap;
    char *keys; /* key bytes of keys that are not fixed-width */
    size_t kused, kcap;
    tdm__rt_cslot *cs; /* count slots (NULL until the first one) */
    uint32_t cs_shift; /* 64 - log2(cs_slots) */
    uint32_t cs_slots; /* slots (a power of two), at most half used */
    uint32_t cs_n;     /* slots used */
    bool cs_scatter;   /* their placement (tdm__rt_cslot_home) */
    uint32_t *ord;     /* a single count's keys in creation order: slot
                          numbers, or entry numbers | RT_ORD_ENT */
    uint32_t n_ord, ord_cap;
    struct tdm__rt_lslice *next; /* open list (by start) or free list */
} tdm__rt_lslice;

/* The local aggregate of one source subtask for one consumer edge.  One
 * owner thread (the source subtask's). */
struct tdm__rt_lagg {
    tdm__rt_src_task *t;           /* the owner */
    int edge;                      /* index in the source's edges */
    tdm_time_ms g, off;            /* slice size, offset (|off| < g) */
    bool gaps;                     /* sliding with slide > size: records between
                                      windows are routed raw */
    tdm_time_ms size, slide, woff; /* the windows (gaps check) */
    bool count;                    /* a single count(): the accumulator is an
                                      int64 */
    tdm__rowagg *ra;               /* otherwise the row aggregates, this
                                      subtask's own instance */
    int input;                     /* the edge's input (field indexes) */
    size_t acc_size, stride;
    tdm__rt_lslice *open;  /* open slices, by start */
    tdm__rt_lslice *free;  /* recycled slices (their memory kept) */
    tdm__rt_lslice *cur;   /* the slice of the last folded record */
    tdm_time_ms cur_start; /* its start, and its width (0: no cur), so */
    uint64_t cur_g;        /* that "ts in cur" is one unsigned compare */
    bool cs_scatter;       /* count slot placement of new slices: direct,
                              or scatter once a slice had to
                              (tdm__rt_cslot_home) */
    tdm__keybuf kb;        /* key encoding scratch */
    int64_t folded;        /* records folded (counted as they are sent) */
    int64_t sent;          /* partial rows sent */
    tdm__rt_ppool pool;    /* messages the consumers handed back */
    bool pool_ok;          /* its mutex was initialised */
    struct tdm__rt_partials **msg; /* flush scratch: one message being filled
                                 per window subtask (P, all NULL between
                                 flushes) */
};

/* The entry @p i of slice @p sl. */
static inline tdm__rt_lent *
tdm__rt_lagg_ent(const tdm__rt_lagg *la, const tdm__rt_lslice *sl, uint32_t i)
{
    return (tdm__rt_lent *)(void *)(sl->ents + (size_t)i * la->stride);
}

/* The accumulator of entry @p e. */
static inline void *tdm__rt_lagg_acc(tdm__rt_lent *e)
{
    return (char *)e + sizeof *e;
}

/* The lookup hash of a fixed-width key's value bytes (Fibonacci
 * hashing: the index takes the product's top bits). */
static inline uint64_t tdm__rt_lagg_hash_fixed(uint64_t bits)
{
    return (bits ^ (bits >> 31)) * TDM__HASH_GOLDEN;
}

/* Count slots: where a key goes.  In direct mode a fixed-width key's
 * home is its own low bits (key & mask, as Java and Python hash
 * integers), so keys close together (ids; the keys a stream is busy with
 * at any moment) sit in consecutive slots and share cache lines: a batch
 * reads a few lines instead of one per key, and nothing need be fetched
 * ahead.  Keys that pile up on a few homes (strides of a power of two,
 * say) push whole runs along: an insert that lands more than
 * RT_CS_MAX_PROBE slots past its home switches the aggregate to scatter
 * mode (Fibonacci hashing of every key, the slice's slots placed again)
 * for good, which bounds every probe of direct mode. */
#define RT_CS_MAX_PROBE 16

/* The home count slot of fixed-width key @p key among @p mask + 1 =
 * 2^(64 - @p shift) slots, in scatter mode or not. */
static inline uint32_t tdm__rt_cslot_home(uint64_t key, uint32_t shift,
                                          uint32_t mask, bool scatter)
{
    return scatter ? (uint32_t)((key * TDM__HASH_GOLDEN) >> shift)
                   : (uint32_t)key & mask;
}

/* The slow paths (localagg.c).  tdm__rt_lagg_slice: the open slice of @p ts,
 * made if needed, or NULL with *raw when the record must be routed raw
 * (its slice was flushed: end - 1 <= @p wm; between sliding windows; at
 * the ends of time), or NULL and !*raw when out of memory. */
tdm__rt_lslice *tdm__rt_lagg_slice(tdm__rt_lagg *la, tdm_time_ms ts,
                                   tdm_time_ms wm, bool *raw);
/* Adds an entry for a key to @p sl (copies key bytes); NULL on OOM. */
tdm__rt_lent *tdm__rt_lagg_insert(tdm__rt_lagg *la, tdm__rt_lslice *sl,
                                  uint64_t h, uint64_t fixed, const char *key,
                                  uint32_t len);
/* Adds the count slot (count 1) of fixed-width key @p fixed to @p sl,
 * a single count's slice; false on OOM. */
bool tdm__rt_lagg_cinsert(tdm__rt_lagg *la, tdm__rt_lslice *sl, uint64_t fixed);

/* Adds @p row to the accumulator of entry @p e. */
static inline void tdm__rt_lagg_add(tdm__rt_lagg *la, tdm__rt_lent *e,
                                    const tdm__row *row)
{
    if (la->count) {
        int64_t *n = tdm__rt_lagg_acc(e);
        (*n)++;
    } else {
        e->n++;
        /* Two-phase aggregates (count, integer min and max) never
         * allocate, so adding cannot fail. */
        (void)tdm__rowagg_add(la->ra, tdm__rt_lagg_acc(e), la->input, row);
    }
}

/* Makes @p sl the slice the next records are tried in first (NULL:
 * none). */
static inline void tdm__rt_lagg_set_cur(tdm__rt_lagg *la, tdm__rt_lslice *sl)
{
    la->cur = sl;
    la->cur_start = sl ? sl->start : 0;
    la->cur_g = sl ? (uint64_t)(sl->end - sl->start) : 0;
}

/* Count slot distance of tdm__rt_lagg_prefetch_fixed: rows looked at ahead
 * of the one being folded. */
#define RT_LAGG_AHEAD 8

/* A hint for a later row with the fixed-width key @p fixed at @p ts, for
 * a single count() whose count slots scatter keys (la->cs_scatter): when
 * ts lies in the current slice, starts fetching the slot the fold will
 * read first (its load misses the cache when a slice holds many keys; in
 * direct mode rows share lines and the look-ahead costs more than it
 * saves, so callers skip it).  Changes nothing. */
static inline void tdm__rt_lagg_prefetch_fixed(const tdm__rt_lagg *la,
                                               tdm_time_ms ts, uint64_t fixed)
{
#if defined(__GNUC__)
    const tdm__rt_lslice *sl = la->cur;
    if ((uint64_t)ts - (uint64_t)la->cur_start >= la->cur_g || !sl->cs ||
        !sl->cs_scatter)
        return;
    __builtin_prefetch(&sl->cs[tdm__rt_cslot_home(fixed, sl->cs_shift,
                                                  sl->cs_slots - 1, true)]);
#else
    (void)la;
    (void)ts;
    (void)fixed;
#endif
}

/* Folds @p row (timestamp @p ts, a proper event time) into its slice
 * under key @p fixed (a fixed-width key's value bytes, when @p key is
 * NULL) or (@p key, @p len).  @p wm is the last watermark the subtask
 * sent.  @p count_only says the caller knows la->count (a constant
 * there, so the count's path is all that is compiled).  Returns 1
 * (folded), 0 (route it raw) or -1 (out of memory). */
static inline __attribute__((always_inline)) int
tdm__rt_lagg_fold(tdm__rt_lagg *la, const tdm__row *row, tdm_time_ms ts,
                  uint64_t fixed, const char *key, size_t len, tdm_time_ms wm,
                  const bool count_only)
{
    tdm__rt_lslice *sl = la->cur;
    /* ts in [cur_start, cur_start + cur_g): one unsigned compare (false
     * when there is no current slice, cur_g 0). */
    if (__builtin_expect((uint64_t)ts - (uint64_t)la->cur_start >= la->cur_g,
                         0)) {
        bool raw;
        sl = tdm__rt_lagg_slice(la, ts, wm, &raw);
        if (!sl)
            return raw ? 0 : -1;
        tdm__rt_lagg_set_cur(la, sl);
    }
    if (!key && (count_only || la->count)) {
        /* A single count() of a fixed-width key: its count slot. */
        if (__builtin_expect(sl->cs != NULL, 1)) {
            tdm__rt_cslot *cs = sl->cs;
            uint32_t cmask = sl->cs_slots - 1;
            for (uint32_t i = tdm__rt_cslot_home(fixed, sl->cs_shift, cmask,
                                                 sl->cs_scatter);
                 ; i = (i + 1) & cmask) {
                if (cs[i].key == fixed && cs[i].n) {
                    cs[i].n++;
                    return 1;
                }
                if (!cs[i].n)
                    break;
            }
        }
        return tdm__rt_lagg_cinsert(la, sl, fixed) ? 1 : -1;
    }
    uint64_t h = key ? tdm__keys_hash(key, len) * TDM__HASH_GOLDEN
                     : tdm__rt_lagg_hash_fixed(fixed);
    uint32_t mask = sl->n_slots - 1;
    const uint32_t *idx = sl->idx;
    for (uint32_t i = (uint32_t)(h >> sl->shift);; i = (i + 1) & mask) {
        uint32_t x = idx[i];
        if (!x)
            break;
        tdm__rt_lent *e = tdm__rt_lagg_ent(la, sl, x - 1);
        /* A fixed-width key's hash is a function of its bytes: compare
         * the bytes alone. */
        if (key ? e->h == h && e->key_len == len &&
                      (len == 0 || memcmp(sl->keys + e->key, key, len) == 0)
                : e->key == fixed && e->key_len == TDM__SEL_FIXED) {
            if (count_only)
                (*(int64_t *)tdm__rt_lagg_acc(e))++;
            else
                tdm__rt_lagg_add(la, e, row);
            return 1;
        }
    }
    tdm__rt_lent *e = tdm__rt_lagg_insert(la, sl, h, fixed, key, (uint32_t)len);
    if (!e)
        return -1;
    if (count_only)
        (*(int64_t *)tdm__rt_lagg_acc(e))++;
    else
        tdm__rt_lagg_add(la, e, row);
    return 1;
}

/* Creates the local aggregate of source subtask @p t for consumer edge
 * @p e (which must be eligible: tdm__rt_edge.local).  TDM_OK or
 * TDM_ERR_NOMEM (*out NULL). */
tdm_err tdm__rt_lagg_new(tdm__rt_src_task *t, int e, tdm__rt_lagg **out);
/* Frees it (NULL is fine). */
void tdm__rt_lagg_free(tdm__rt_lagg *la);
/* Sends the partials of every open slice whose end - 1 <= @p wm, slice
 * by slice in time order and within a slice in the order their keys
 * first appeared, to the consumer subtasks owning their keys (items of
 * at most a few thousand tdm__rt_partials rows per subtask), and recycles
 * those slices.  Call it after the rows sent so far and before the
 * watermark @p wm (or END: TDM_TIME_MAX).  Out of memory fails the
 * run. */
void tdm__rt_lagg_flush(tdm__rt_src_task *t, tdm__rt_lagg *la, tdm_time_ms wm);

#endif /* TDM_LOCALAGG_H */
