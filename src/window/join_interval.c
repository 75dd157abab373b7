/* SPDX-License-Identifier: MIT */
/* join_interval.c - the interval join (Flink's IntervalJoinOperator,
 * rules J1-J5 of watermark-semantics.md):
 *
 *   left l joins right r  iff  l.ts + lower <= r.ts <= l.ts + upper
 *   left l is cleaned when the watermark reaches l.ts + upper (l.ts if
 *   upper <= 0); right r at r.ts - lower (r.ts if lower >= 0)
 *
 * State without an allocation, key interning, kv slot or timer per
 * record.  Each side's records live in time slices of IJ_SLICE ms by
 * their timestamp; a slice is an append-only arena of chunks holding the
 * records (header and payload bytes) and, per key with records in it, a
 * segment: the key's records of that slice in arrival order.  One key
 * table shared by both sides maps the key bytes to a key entry with, per
 * side, the key's segments in slice order.  So a record costs one key
 * lookup (its own side's insert and the other side's probe share it),
 * an append to its slice, and no allocation once chunks recycle.
 *
 * Cleanup is driven by the watermark in bulk, not by a timer per
 * record: when the operator watermark advances to W, every slice of a
 * side whose last millisecond is at or below that side's dead line
 * (W - upper for the left side when upper > 0, else W; W + lower for the
 * right side when lower < 0, else W) is dropped at once - its segments
 * unlinked from their keys (a key's oldest segments are always the ones
 * dropped), keys left without records removed, its chunks recycled.
 * Records below the dead line in the one slice that straddles it stay in
 * memory until the slice goes, but are no longer joined: a record is
 * live iff its timestamp is above the dead line of the last advance, or
 * it was buffered after that advance (a record at the watermark whose
 * cleanup time is the watermark itself lives until the next advance, as
 * a Flink timer registered at the current watermark fires at the next
 * one).  Per slice, a count per distinct timestamp (runs sorted by ts)
 * keeps the buffered-records counter exact at each advance.
 *
 * A probe walks the other side's segments of the key that overlap the
 * range and hands the stored records to the emitter in place (no copy):
 * ascending timestamp, arrival order within a timestamp (a segment that
 * arrived out of order is sorted first).
 *
 * At the end: the interval join's key-group sections of a checkpoint
 * (join.h, docs/checkpoints.md "Operator state").
 */
#include <string.h>

#include "state/ckpt_codec.h"
#include "window/join.h"
#include "window/win.h"

/* Slice width: a power of two, so slice bounds never overflow. */
#define IJ_SLICE_LOG 6
#define IJ_SLICE ((tdm_time_ms)1 << IJ_SLICE_LOG)

/* One buffered record; payload bytes follow, padded to 8. */
typedef struct irec {
    tdm_time_ms ts;
    double value;
    struct irec *next; /* same key, side and slice, arrival order */
    uint32_t epoch;    /* advance count when it was buffered */
    uint32_t plen;
} irec;

/* A key's records in one slice of one side. */
typedef struct iseg {
    struct iseg *knext; /* the key's segment in its next slice */
    struct iseg *snext; /* the slice's next segment */
    irec *head, *tail;
    int64_t k; /* slice index: ts in [k * IJ_SLICE, k * IJ_SLICE + 63] */
    uint32_t key;
    uint32_t n;
} iseg;

/* A chunk of a slice's arena. */
typedef struct ichunk {
    struct ichunk *next;
    uint32_t used, cap;
    unsigned char data[]; /* 8-aligned: the header is 16 bytes */
} ichunk;

/* How many records of a slice have one timestamp. */
typedef struct irun {
    tdm_time_ms ts;
    int64_t n;
} irun;

typedef struct islice {
    int64_t k;
    ichunk *head, *tail;
    iseg *segs;
    irun *run; /* sorted by ts; [0, dead) already counted as cleaned */
    uint32_t nrun, caprun, dead;
    int64_t live; /* records not yet counted as cleaned */
} islice;

typedef struct iside {
    islice **sl; /* live slices, sorted by k */
    uint32_t n, cap, hint;
    bool any_dead;       /* a dead line exists */
    tdm_time_ms dead_le; /* records at or below it (buffered before the
                          * last advance) are cleaned */
} iside;

#define IJ_KEY_INLINE 16

/* A key with records on at least one side. */
typedef struct ikey {
    uint64_t hash;
    iseg *first[2], *last[2]; /* per side: segments in slice order */
    tdm_time_ms x;            /* the latest cleanup time of its records */
    uint32_t xe;              /* advance count when x was last raised */
    uint32_t len;
    uint32_t next_free; /* free list, while unused */
    union {
        char in[IJ_KEY_INLINE];
        char *heap;
    } b;
} ikey;

struct tdm__ijoin {
    iside side[2];
    ikey *key;
    uint32_t nkey, capkey; /* entries used (high-water), capacity */
    uint32_t free_key;     /* free list head + 1 (0: none) */
    uint32_t live_keys;    /* entries in the table */
    /* Keys by cleanup time of their latest record (runs sorted by time,
     * kr[krhead .. krn)), for the exact count of keys with live records:
     * an advance counts the keys of the runs it passes into kdead. */
    irun *kr;
    uint32_t krhead, krn, krcap;
    int64_t kdead; /* entries whose records are all cleaned */
    /* Open addressing, linear probing: hash high half << 32 | index + 1,
     * 0 empty; the home slot is the high half & mask. */
    uint64_t *tab;
    uint32_t tabcap;
    uint32_t epoch;
    ichunk *spare;
    uint32_t nspare;
    islice **free_sl;
    uint32_t nfree_sl, capfree_sl;
    const irec **scratch;
    size_t capscratch;
    size_t bytes; /* chunks (spares too), slices, runs, arrays */
};

#define IJ_CHUNK_MIN ((uint32_t)2048 - (uint32_t)sizeof(ichunk))
#define IJ_CHUNK_MAX ((uint32_t)65536 - (uint32_t)sizeof(ichunk))
/* Spare full-size chunks kept for the next slices (4 MB). */
#define IJ_SPARE_MAX 64
/* Largest payload a record takes. */
#define IJ_PAYLOAD_MAX ((size_t)1 << 30)

static inline const char *key_bytes(const ikey *e)
{
    return e->len <= IJ_KEY_INLINE ? e->b.in : e->b.heap;
}

static inline size_t rec_size(size_t plen)
{
    return (sizeof(irec) + plen + 7) & ~(size_t)7;
}

static inline const void *rec_payload(const irec *r)
{
    return r->plen ? (const void *)(r + 1) : NULL;
}

/* The slice index of @p ts: floor(ts / IJ_SLICE). */
static inline int64_t slice_of(tdm_time_ms ts)
{
    int64_t k = ts / IJ_SLICE;
    return (ts % IJ_SLICE < 0) ? k - 1 : k;
}

static inline tdm_time_ms slice_first(int64_t k)
{
    return k * IJ_SLICE;
}

/* k * IJ_SLICE + IJ_SLICE - 1 never overflows: IJ_SLICE is a power of
 * two, so the last slice ends at TDM_TIME_MAX exactly. */
static inline tdm_time_ms slice_last(int64_t k)
{
    return k * IJ_SLICE + (IJ_SLICE - 1);
}

/* ---- Range arithmetic ---- */

/* ts + off (or ts - off when @p sub), and in *ovf whether the exact
 * result is below TDM_TIME_MIN (-1), above TDM_TIME_MAX (+1) or fits (0);
 * the returned value is clamped. */
static tdm_time_ms shift(tdm_time_ms ts, tdm_time_ms off, bool sub, int *ovf)
{
    tdm_time_ms r;
    bool o = sub ? __builtin_sub_overflow(ts, off, &r)
                 : __builtin_add_overflow(ts, off, &r);
    if (!o) {
        *ovf = 0;
        return r;
    }
    bool up = sub ? off < 0 : off > 0;
    *ovf = up ? 1 : -1;
    return up ? TDM_TIME_MAX : TDM_TIME_MIN;
}

/* The timestamps of the other side that a record of @p side at @p ts
 * joins: [*lo, *hi].  Returns false when no representable timestamp is in
 * range (a bound lies beyond the time axis). */
static bool other_range(const tdm_joinop *op, int side, tdm_time_ms ts,
                        tdm_time_ms *lo, tdm_time_ms *hi)
{
    int olo, ohi;
    if (side == TDM_SIDE_LEFT) {
        /* Right r with ts + lower <= r <= ts + upper. */
        *lo = shift(ts, op->lower, false, &olo);
        *hi = shift(ts, op->upper, false, &ohi);
    } else {
        /* Left l with l + lower <= ts <= l + upper, i.e.
         * ts - upper <= l <= ts - lower. */
        *lo = shift(ts, op->upper, true, &olo);
        *hi = shift(ts, op->lower, true, &ohi);
    }
    return olo <= 0 && ohi >= 0;
}

/* The cleanup time of a record of @p side at @p ts (rule J4), saturated. */
static inline tdm_time_ms cleanup_time(const tdm_joinop *op, int side,
                                       tdm_time_ms ts)
{
    if (side == TDM_SIDE_LEFT)
        return op->upper > 0 ? tdm__time_add_sat(ts, op->upper) : ts;
    return op->lower < 0 ? tdm__time_sub_sat(ts, op->lower) : ts;
}

/* The dead line of @p side at watermark @p w: a record with ts <=
 * *dead_le has its cleanup time (saturated) at or below @p w.
 * Returns false when no timestamp is that old. */
static bool dead_line(const tdm_joinop *op, int side, tdm_time_ms w,
                      tdm_time_ms *dead_le)
{
    if (w == TDM_TIME_MAX) {
        /* Every cleanup time saturates at or below the maximum. */
        *dead_le = TDM_TIME_MAX;
        return true;
    }
    /* ts + upper <= w (left, upper > 0); ts - lower <= w (right, lower
     * < 0; lower may be TDM_TIME_MIN, so it is added, not negated). */
    int ovf = 0;
    if (side == TDM_SIDE_LEFT)
        *dead_le = op->upper > 0 ? shift(w, op->upper, true, &ovf) : w;
    else
        *dead_le = op->lower < 0 ? shift(w, op->lower, false, &ovf) : w;
    return ovf == 0;
}

/* Whether record @p r of side @p s is still joined (not cleaned). */
static inline bool rec_live(const struct tdm__ijoin *ij, int s, const irec *r)
{
    const iside *sd = &ij->side[s];
    return !sd->any_dead || r->ts > sd->dead_le || r->epoch == ij->epoch;
}

/* ---- Keys by cleanup time ---- */

/* Whether every record of key @p e is cleaned: its latest cleanup time
 * was at or below the watermark of the last advance, which counted it. */
static inline bool key_dead(const tdm_joinop *op, const ikey *e)
{
    return e->x <= op->wm && e->xe != op->ij->epoch;
}

/* Room for one more run.  Returns false on OOM (nothing changed). */
static bool kr_reserve(struct tdm__ijoin *ij)
{
    if (ij->krn < ij->krcap)
        return true;
    if (ij->krhead > 0) {
        memmove(ij->kr, ij->kr + ij->krhead,
                (size_t)(ij->krn - ij->krhead) * sizeof *ij->kr);
        ij->krn -= ij->krhead;
        ij->krhead = 0;
        return true;
    }
    uint32_t ncap = ij->krcap ? ij->krcap * 2 : 64;
    irun *nr = tdm__realloc(ij->kr, (size_t)ncap * sizeof *nr);
    if (!nr)
        return false;
    ij->bytes += (size_t)(ncap - ij->krcap) * sizeof *nr;
    ij->kr = nr;
    ij->krcap = ncap;
    return true;
}

/* The index of the first run at or after time @p x. */
static uint32_t kr_find(const struct tdm__ijoin *ij, tdm_time_ms x)
{
    uint32_t lo = ij->krhead, hi = ij->krn;
    /* Keys mostly move to the latest times: look at the end first. */
    if (hi > lo && ij->kr[hi - 1].ts < x)
        return hi;
    if (hi > lo && ij->kr[hi - 1].ts == x)
        return hi - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ij->kr[mid].ts < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Counts one key at time @p x (room reserved). */
static void kr_add(struct tdm__ijoin *ij, tdm_time_ms x)
{
    uint32_t i = kr_find(ij, x);
    if (i < ij->krn && ij->kr[i].ts == x) {
        ij->kr[i].n++;
        return;
    }
    memmove(ij->kr + i + 1, ij->kr + i, (size_t)(ij->krn - i) * sizeof *ij->kr);
    ij->kr[i].ts = x;
    ij->kr[i].n = 1;
    ij->krn++;
}

/* Uncounts one key at time @p x (counted and not yet passed). */
static void kr_del(struct tdm__ijoin *ij, tdm_time_ms x)
{
    uint32_t i = kr_find(ij, x);
    if (i < ij->krn && ij->kr[i].ts == x)
        ij->kr[i].n--;
}

/* Key @p e got a record whose cleanup time is @p x (run room
 * reserved): a key whose records were all cleaned is live again. */
static void key_raise(tdm_joinop *op, ikey *e, tdm_time_ms x, bool created)
{
    struct tdm__ijoin *ij = op->ij;
    if (created) {
        kr_add(ij, x);
    } else if (key_dead(op, e)) {
        ij->kdead--;
        kr_add(ij, x);
    } else if (x > e->x) {
        kr_del(ij, e->x);
        kr_add(ij, x);
    } else {
        return;
    }
    e->x = x;
    e->xe = ij->epoch;
}

/* ---- Key table ---- */

static inline uint32_t tab_home(uint64_t h, uint32_t mask)
{
    return (uint32_t)(h >> 32) & mask;
}

/* The index of the key entry for these bytes, or UINT32_MAX. */
static uint32_t key_find(const struct tdm__ijoin *ij, uint64_t h,
                         const char *key, size_t len)
{
    if (!ij->tabcap)
        return UINT32_MAX;
    uint32_t mask = ij->tabcap - 1;
    uint64_t tag = h >> 32;
    for (uint32_t i = tab_home(h, mask);; i = (i + 1) & mask) {
        uint64_t s = ij->tab[i];
        if (!s)
            return UINT32_MAX;
        if ((s >> 32) != tag)
            continue;
        uint32_t idx = (uint32_t)s - 1;
        const ikey *e = &ij->key[idx];
        if (e->hash == h && e->len == len &&
            (len == 0 || memcmp(key_bytes(e), key, len) == 0))
            return idx;
    }
}

/* Rebuilds the table at @p cap slots (a power of two). */
static bool tab_resize(struct tdm__ijoin *ij, uint32_t cap)
{
    uint64_t *t = tdm__calloc(cap, sizeof *t);
    if (!t)
        return false;
    uint32_t mask = cap - 1;
    for (uint32_t i = 0; i < ij->tabcap; i++) {
        uint64_t s = ij->tab[i];
        if (!s)
            continue;
        uint32_t j = tab_home(ij->key[(uint32_t)s - 1].hash, mask);
        while (t[j])
            j = (j + 1) & mask;
        t[j] = s;
    }
    ij->bytes -= (size_t)ij->tabcap * sizeof *t;
    ij->bytes += (size_t)cap * sizeof *t;
    tdm__free(ij->tab);
    ij->tab = t;
    ij->tabcap = cap;
    return true;
}

/* Room for one more key in the table (load at most 1/2) and the entry
 * array.  Returns false on OOM (nothing changed). */
static bool key_reserve(struct tdm__ijoin *ij)
{
    if ((size_t)(ij->live_keys + 1) * 2 > ij->tabcap) {
        if (ij->tabcap >= (UINT32_C(1) << 31))
            return false;
        if (!tab_resize(ij, ij->tabcap ? ij->tabcap * 2 : 64))
            return false;
    }
    if (!ij->free_key && ij->nkey == ij->capkey) {
        if (ij->capkey >= UINT32_MAX / 2)
            return false;
        uint32_t ncap = ij->capkey ? ij->capkey * 2 : 32;
        ikey *nk = tdm__realloc(ij->key, (size_t)ncap * sizeof *nk);
        if (!nk)
            return false;
        ij->bytes += (size_t)(ncap - ij->capkey) * sizeof *nk;
        ij->key = nk;
        ij->capkey = ncap;
    }
    return true;
}

/* Adds a key entry (room reserved by key_reserve): copies short key
 * bytes inline; for a long key takes ownership of @p heap, a copy of
 * them.  Returns its index. */
static uint32_t key_add(struct tdm__ijoin *ij, uint64_t h, const char *key,
                        size_t len, char *heap)
{
    uint32_t idx;
    if (ij->free_key) {
        idx = ij->free_key - 1;
        ij->free_key = ij->key[idx].next_free;
    } else {
        idx = ij->nkey++;
    }
    ikey *e = &ij->key[idx];
    memset(e, 0, sizeof *e);
    e->hash = h;
    e->len = (uint32_t)len;
    if (len <= IJ_KEY_INLINE) {
        if (len)
            memcpy(e->b.in, key, len);
    } else {
        e->b.heap = heap;
        ij->bytes += len;
    }
    uint32_t mask = ij->tabcap - 1;
    uint32_t i = tab_home(h, mask);
    while (ij->tab[i])
        i = (i + 1) & mask;
    ij->tab[i] = ((h >> 32) << 32) | ((uint64_t)idx + 1);
    ij->live_keys++;
    return idx;
}

/* Removes key entry @p idx (no segments left on either side). */
static void key_remove(tdm_joinop *op, uint32_t idx)
{
    struct tdm__ijoin *ij = op->ij;
    ikey *e = &ij->key[idx];
    /* Its records were all cleaned, so the key was counted dead. */
    if (key_dead(op, e))
        ij->kdead--;
    else
        kr_del(ij, e->x);
    uint32_t mask = ij->tabcap - 1;
    uint32_t i = tab_home(e->hash, mask);
    while ((uint32_t)ij->tab[i] != idx + 1)
        i = (i + 1) & mask;
    /* Backward-shift deletion keeps every probe chain unbroken. */
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        uint64_t s = ij->tab[j];
        if (!s)
            break;
        uint32_t home = (uint32_t)(s >> 32) & mask;
        /* Move s to the hole unless its home lies cyclically in (i, j]. */
        bool stays =
            (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            ij->tab[i] = s;
            i = j;
        }
    }
    ij->tab[i] = 0;
    if (e->len > IJ_KEY_INLINE) {
        ij->bytes -= e->len;
        tdm__free(e->b.heap);
    }
    e->len = 0;
    e->first[0] = e->first[1] = e->last[0] = e->last[1] = NULL;
    e->next_free = ij->free_key;
    ij->free_key = idx + 1;
    ij->live_keys--;
}

/* ---- Slices ---- */

static void chunk_release(struct tdm__ijoin *ij, ichunk *c)
{
    if (c->cap == IJ_CHUNK_MAX && ij->nspare < IJ_SPARE_MAX) {
        c->next = ij->spare;
        ij->spare = c;
        ij->nspare++;
        return;
    }
    ij->bytes -= sizeof(ichunk) + c->cap;
    tdm__free(c);
}

/* Room for @p need bytes at the end of slice @p s's arena.  Returns false
 * on OOM (nothing changed). */
static bool arena_reserve(struct tdm__ijoin *ij, islice *s, size_t need)
{
    ichunk *c = s->tail;
    if (c && (size_t)c->cap - c->used >= need)
        return true;
    size_t cap = c ? (size_t)c->cap * 2 + sizeof(ichunk) : IJ_CHUNK_MIN;
    if (cap > IJ_CHUNK_MAX)
        cap = IJ_CHUNK_MAX;
    if (cap < need)
        cap = need;
    /* Spares (full-size chunks of dropped slices) serve a log once it
     * has grown to full size, so a sparse slice does not hold one. */
    if (ij->spare && cap == IJ_CHUNK_MAX) {
        c = ij->spare;
        ij->spare = c->next;
        ij->nspare--;
    } else {
        c = tdm__malloc(sizeof(ichunk) + cap);
        if (!c)
            return false;
        c->cap = (uint32_t)cap;
        ij->bytes += sizeof(ichunk) + cap;
    }
    c->next = NULL;
    c->used = 0;
    if (s->tail)
        s->tail->next = c;
    else
        s->head = c;
    s->tail = c;
    return true;
}

/* Takes @p n bytes (reserved) from the end of slice @p s's arena. */
static inline void *arena_take(islice *s, size_t n)
{
    ichunk *c = s->tail;
    void *p = c->data + c->used;
    c->used += (uint32_t)n;
    return p;
}

/* The slice of side @p sd with index @p k, created when missing.  Returns
 * NULL on OOM (nothing changed). */
static islice *slice_get(struct tdm__ijoin *ij, iside *sd, int64_t k)
{
    uint32_t h = sd->hint;
    if (h < sd->n && sd->sl[h]->k == k)
        return sd->sl[h];
    uint32_t lo = 0, hi = sd->n;
    if (sd->n && sd->sl[sd->n - 1]->k < k) {
        lo = sd->n;
    } else {
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (sd->sl[mid]->k < k)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < sd->n && sd->sl[lo]->k == k) {
            sd->hint = lo;
            return sd->sl[lo];
        }
    }
    if (sd->n == sd->cap) {
        uint32_t ncap = sd->cap ? sd->cap * 2 : 16;
        islice **nsl = tdm__realloc(sd->sl, (size_t)ncap * sizeof *nsl);
        if (!nsl)
            return NULL;
        ij->bytes += (size_t)(ncap - sd->cap) * sizeof *nsl;
        sd->sl = nsl;
        sd->cap = ncap;
    }
    islice *s;
    if (ij->nfree_sl) {
        s = ij->free_sl[--ij->nfree_sl];
    } else {
        s = tdm__calloc(1, sizeof *s);
        if (!s)
            return NULL;
        ij->bytes += sizeof *s;
    }
    s->k = k;
    s->head = s->tail = NULL;
    s->segs = NULL;
    s->nrun = s->dead = 0;
    s->live = 0;
    memmove(sd->sl + lo + 1, sd->sl + lo,
            (size_t)(sd->n - lo) * sizeof *sd->sl);
    sd->sl[lo] = s;
    sd->n++;
    sd->hint = lo;
    return s;
}

/* Room for one more run in slice @p s.  Returns false on OOM. */
static bool run_reserve(struct tdm__ijoin *ij, islice *s)
{
    if (s->nrun < s->caprun)
        return true;
    uint32_t ncap = s->caprun ? s->caprun * 2 : 8;
    irun *nr = tdm__realloc(s->run, (size_t)ncap * sizeof *nr);
    if (!nr)
        return false;
    ij->bytes += (size_t)(ncap - s->caprun) * sizeof *nr;
    s->run = nr;
    s->caprun = ncap;
    return true;
}

/* Counts one record at @p ts in slice @p s (room reserved). */
static void run_add(islice *s, tdm_time_ms ts)
{
    uint32_t n = s->nrun;
    if (n && s->run[n - 1].ts == ts) {
        s->run[n - 1].n++;
        return;
    }
    uint32_t lo = 0;
    if (n && s->run[n - 1].ts > ts) {
        uint32_t hi = n;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (s->run[mid].ts < ts)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (s->run[lo].ts == ts) {
            s->run[lo].n++;
            return;
        }
        memmove(s->run + lo + 1, s->run + lo,
                (size_t)(n - lo) * sizeof *s->run);
    } else {
        lo = n;
    }
    s->run[lo].ts = ts;
    s->run[lo].n = 1;
    s->nrun++;
    /* Only a record at the last dead line can land below the counted
     * prefix (see slice_count_dead), and never between runs of it. */
    if (lo < s->dead)
        s->dead++;
}

/* Counts the records of slice @p s at or below @p dead_le as cleaned.
 * The run just below the counted prefix is looked at again: records at
 * the previous dead line buffered after that advance land there. */
static int64_t slice_count_dead(islice *s, tdm_time_ms dead_le)
{
    int64_t gone = 0;
    uint32_t i = s->dead ? s->dead - 1 : 0;
    for (; i < s->nrun && s->run[i].ts <= dead_le; i++) {
        gone += s->run[i].n;
        s->run[i].n = 0;
    }
    if (i > s->dead)
        s->dead = i;
    s->live -= gone;
    return gone;
}

/* Drops slice @p s of side @p side: unlinks its segments from their keys
 * (each is its key's oldest on that side), removes keys left empty,
 * recycles chunks and the slice.  Returns the records not yet counted
 * as cleaned. */
static int64_t slice_drop(tdm_joinop *op, int side, islice *s)
{
    struct tdm__ijoin *ij = op->ij;
    for (iseg *g = s->segs; g; g = g->snext) {
        ikey *e = &ij->key[g->key];
        e->first[side] = g->knext;
        if (!g->knext)
            e->last[side] = NULL;
        if (!e->first[0] && !e->first[1])
            key_remove(op, g->key);
    }
    ichunk *c = s->head;
    while (c) {
        ichunk *next = c->next;
        chunk_release(ij, c);
        c = next;
    }
    int64_t left = s->live;
    s->head = s->tail = NULL;
    s->segs = NULL;
    if (ij->nfree_sl < ij->capfree_sl) {
        ij->free_sl[ij->nfree_sl++] = s;
    } else {
        ij->bytes -= sizeof *s + (size_t)s->caprun * sizeof *s->run;
        tdm__free(s->run);
        tdm__free(s);
    }
    return left;
}

/* ---- Storing ---- */

/* Buffers a record on @p side: copies value and payload (borrowed) into
 * its slice and the key bytes (borrowed; hashing to @p h) into a new key
 * entry; *kid gets the key entry.  All allocation comes first: on
 * TDM_ERR_NOMEM nothing visible changed (an empty slice may stay). */
static tdm_err store(tdm_joinop *op, int side, uint64_t h, const char *key,
                     size_t klen, tdm_time_ms ts, double value,
                     const void *payload, size_t plen, uint32_t *kid)
{
    struct tdm__ijoin *ij = op->ij;
    if (!payload)
        plen = 0;
    if (plen > IJ_PAYLOAD_MAX || klen > UINT32_MAX)
        return TDM_ERR_NOMEM;
    if (!key_reserve(ij) || !kr_reserve(ij))
        return TDM_ERR_NOMEM;
    int64_t k = slice_of(ts);
    islice *s = slice_get(ij, &ij->side[side], k);
    if (!s || !run_reserve(ij, s))
        return TDM_ERR_NOMEM;
    uint32_t idx = key_find(ij, h, key, klen);
    /* The key's segment in this slice, or where a new one goes. */
    iseg *seg = NULL, *prev = NULL;
    if (idx != UINT32_MAX) {
        ikey *e = &ij->key[idx];
        iseg *l = e->last[side];
        if (l && l->k == k) {
            seg = l;
        } else if (l && l->k < k) {
            prev = l;
        } else {
            for (iseg *g = e->first[side]; g && g->k <= k; g = g->knext) {
                if (g->k == k) {
                    seg = g;
                    break;
                }
                prev = g;
            }
        }
    }
    size_t need = rec_size(plen) + (seg ? 0 : sizeof(iseg));
    if (!arena_reserve(ij, s, need))
        return TDM_ERR_NOMEM;
    bool created = idx == UINT32_MAX;
    if (created) {
        char *heap = NULL;
        if (klen > IJ_KEY_INLINE && !(heap = tdm__memdup(key, klen)))
            return TDM_ERR_NOMEM;
        idx = key_add(ij, h, key, klen, heap);
    }
    ikey *e = &ij->key[idx];
    key_raise(op, e, cleanup_time(op, side, ts), created);
    if (!seg) {
        seg = arena_take(s, sizeof(iseg));
        seg->k = k;
        seg->key = idx;
        seg->n = 0;
        seg->head = seg->tail = NULL;
        seg->snext = s->segs;
        s->segs = seg;
        if (prev) {
            seg->knext = prev->knext;
            prev->knext = seg;
        } else {
            seg->knext = e->first[side];
            e->first[side] = seg;
        }
        if (!seg->knext)
            e->last[side] = seg;
    }
    irec *r = arena_take(s, rec_size(plen));
    r->ts = ts;
    r->value = value;
    r->next = NULL;
    r->epoch = ij->epoch;
    r->plen = (uint32_t)plen;
    if (plen)
        memcpy(r + 1, payload, plen);
    if (seg->tail)
        seg->tail->next = r;
    else
        seg->head = r;
    seg->tail = r;
    seg->n++;
    run_add(s, ts);
    s->live++;
    op->buffered++;
    *kid = idx;
    return TDM_OK;
}

/* ---- Joining ---- */

/* One pair of @p rec (of @p side) with the stored record @p o. */
static inline void emit_one(tdm_joinop *op, int side, const tdm_record *rec,
                            const irec *o)
{
    tdm_record other = {
        .key = rec->key,
        .key_len = rec->key_len,
        .ts = o->ts,
        .value = o->value,
        .payload = rec_payload(o),
        .payload_len = o->plen,
    };
    /* The pair carries the later of the two timestamps (J3). */
    tdm_time_ms t = o->ts > rec->ts ? o->ts : rec->ts;
    if (side == TDM_SIDE_LEFT)
        tdm__join_emit_pair(op, rec, &other, t, rec->key, rec->key_len, 0, 0,
                            0);
    else
        tdm__join_emit_pair(op, &other, rec, t, rec->key, rec->key_len, 0, 0,
                            0);
}

static inline bool in_range(const struct tdm__ijoin *ij, int o, const irec *r,
                            tdm_time_ms lo, tdm_time_ms hi)
{
    return r->ts >= lo && r->ts <= hi && rec_live(ij, o, r);
}

/* Emits the pairs of @p rec with the records of segment @p g (side
 * @p o) in [lo, hi]: by timestamp, arrival order within one. */
static void join_seg(tdm_joinop *op, int side, const tdm_record *rec,
                     const iseg *g, tdm_time_ms lo, tdm_time_ms hi)
{
    struct tdm__ijoin *ij = op->ij;
    int o = !side;
    size_t n = 0;
    bool sorted = true;
    tdm_time_ms last = TDM_TIME_MIN;
    for (const irec *r = g->head; r; r = r->next) {
        if (!in_range(ij, o, r, lo, hi))
            continue;
        if (r->ts < last)
            sorted = false;
        last = r->ts;
        n++;
    }
    if (n == 0)
        return;
    if (sorted) {
        for (const irec *r = g->head; r; r = r->next)
            if (in_range(ij, o, r, lo, hi))
                emit_one(op, side, rec, r);
        return;
    }
    if (n > ij->capscratch) {
        size_t ncap = n < 64 ? 64 : n * 2;
        const irec **ns = tdm__realloc(ij->scratch, ncap * sizeof *ns);
        if (!ns) {
            /* No room to sort: the next timestamp each time, by scans. */
            tdm_time_ms cur = TDM_TIME_MIN;
            bool first = true;
            for (;;) {
                bool found = false;
                tdm_time_ms next = TDM_TIME_MAX;
                for (const irec *r = g->head; r; r = r->next)
                    if (in_range(ij, o, r, lo, hi) && (first || r->ts > cur) &&
                        r->ts <= next) {
                        next = r->ts;
                        found = true;
                    }
                if (!found)
                    return;
                for (const irec *r = g->head; r; r = r->next)
                    if (r->ts == next && in_range(ij, o, r, lo, hi))
                        emit_one(op, side, rec, r);
                if (next == TDM_TIME_MAX)
                    return;
                cur = next;
                first = false;
            }
        }
        ij->bytes += (ncap - ij->capscratch) * sizeof *ns;
        ij->scratch = ns;
        ij->capscratch = ncap;
    }
    size_t m = 0;
    for (const irec *r = g->head; r; r = r->next)
        if (in_range(ij, o, r, lo, hi))
            ij->scratch[m++] = r;
    /* Insertion sort, stable: arrival order stays within a timestamp,
     * and out-of-order segments are nearly sorted. */
    for (size_t i = 1; i < m; i++) {
        const irec *x = ij->scratch[i];
        size_t j = i;
        while (j > 0 && ij->scratch[j - 1]->ts > x->ts) {
            ij->scratch[j] = ij->scratch[j - 1];
            j--;
        }
        ij->scratch[j] = x;
    }
    for (size_t i = 0; i < m; i++)
        emit_one(op, side, rec, ij->scratch[i]);
}

/* Emits a pair for @p rec (of @p side, key entry @p kid) with every live
 * record of the other side of the same key whose timestamp is in range. */
static void join_other(tdm_joinop *op, int side, uint32_t kid,
                       const tdm_record *rec)
{
    struct tdm__ijoin *ij = op->ij;
    tdm_time_ms lo, hi;
    const iseg *g = ij->key[kid].first[!side];
    if (!g || !other_range(op, side, rec->ts, &lo, &hi))
        return;
    int64_t klo = slice_of(lo), khi = slice_of(hi);
    for (; g && g->k <= khi; g = g->knext) {
        if (g->k < klo)
            continue;
        /* Emitting may run downstream operators, never this join: the
         * segment list does not change under the walk. */
        join_seg(op, side, rec, g, lo, hi);
    }
}

/* ---- Entry points from join.c ---- */

tdm_err tdm__join_interval_init(tdm_joinop *op)
{
    op->ij = tdm__calloc(1, sizeof *op->ij);
    if (!op->ij)
        return TDM_ERR_NOMEM;
    op->ij->capfree_sl = 64;
    op->ij->free_sl = tdm__calloc(op->ij->capfree_sl, sizeof(islice *));
    if (!op->ij->free_sl)
        return TDM_ERR_NOMEM;
    op->ij->bytes = sizeof *op->ij + op->ij->capfree_sl * sizeof(islice *);
    return TDM_OK;
}

/* Rule J2: late check, buffer, join.  All allocation happens before the
 * first pair is emitted but for the sort buffer of an out-of-order
 * segment, whose failure falls back to scans: an error leaves neither
 * output nor state behind. */
tdm_err tdm__join_interval_push(tdm_joinop *op, int side, const tdm_record *rec)
{
    /* Late iff strictly below the operator watermark (equal is not). */
    if (rec->ts < op->wm)
        return tdm__join_late(op, side, rec);
    uint64_t h = tdm__keys_hash(rec->key, rec->key_len);
    uint32_t kid;
    tdm_err err = store(op, side, h, rec->key, rec->key_len, rec->ts,
                        rec->value, rec->payload, rec->payload_len, &kid);
    if (err != TDM_OK)
        return err;
    join_other(op, side, kid, rec);
    return TDM_OK;
}

/* Rule J4 in bulk: the watermark advanced to @p w (op->wm is already
 * @p w).  Drops the slices wholly at or below each side's dead line and
 * counts the cleaned records of the slice straddling it. */
void tdm__join_interval_advance(tdm_joinop *op, tdm_time_ms w)
{
    struct tdm__ijoin *ij = op->ij;
    /* Keys whose latest record is cleaned now. */
    while (ij->krhead < ij->krn && ij->kr[ij->krhead].ts <= w)
        ij->kdead += ij->kr[ij->krhead++].n;
    if (ij->krhead == ij->krn)
        ij->krhead = ij->krn = 0;
    /* Records buffered from now on belong to the next advance. */
    ij->epoch++;
    for (int side = 0; side < 2; side++) {
        iside *sd = &ij->side[side];
        tdm_time_ms dl;
        if (!dead_line(op, side, w, &dl))
            continue;
        sd->any_dead = true;
        sd->dead_le = dl;
        uint32_t m = 0;
        while (m < sd->n && slice_last(sd->sl[m]->k) <= dl)
            op->buffered -= slice_drop(op, side, sd->sl[m++]);
        if (m) {
            memmove(sd->sl, sd->sl + m, (size_t)(sd->n - m) * sizeof *sd->sl);
            sd->n -= m;
            sd->hint = 0;
        }
        if (sd->n && slice_first(sd->sl[0]->k) <= dl)
            op->buffered -= slice_count_dead(sd->sl[0], dl);
    }
}

/* Keys with live records. */
int64_t tdm__join_interval_keys(const tdm_joinop *op)
{
    return op->ij ? (int64_t)op->ij->live_keys - op->ij->kdead : 0;
}

/* Bytes of the interval join's state. */
size_t tdm__join_interval_bytes(const tdm_joinop *op)
{
    return op->ij ? op->ij->bytes : 0;
}

void tdm__join_interval_free(tdm_joinop *op)
{
    struct tdm__ijoin *ij = op->ij;
    if (!ij)
        return;
    for (int side = 0; side < 2; side++) {
        iside *sd = &ij->side[side];
        for (uint32_t i = 0; i < sd->n; i++) {
            islice *s = sd->sl[i];
            for (ichunk *c = s->head; c;) {
                ichunk *next = c->next;
                tdm__free(c);
                c = next;
            }
            tdm__free(s->run);
            tdm__free(s);
        }
        tdm__free(sd->sl);
    }
    for (uint32_t i = 0; i < ij->nfree_sl; i++) {
        tdm__free(ij->free_sl[i]->run);
        tdm__free(ij->free_sl[i]);
    }
    tdm__free(ij->free_sl);
    while (ij->spare) {
        ichunk *next = ij->spare->next;
        tdm__free(ij->spare);
        ij->spare = next;
    }
    for (uint32_t i = 0; i < ij->nkey; i++) {
        const ikey *e = &ij->key[i];
        if ((e->first[0] || e->first[1]) && e->len > IJ_KEY_INLINE)
            tdm__free(e->b.heap);
    }
    tdm__free(ij->key);
    tdm__free(ij->tab);
    tdm__free(ij->kr);
    tdm__free(ij->scratch);
    tdm__free(ij);
    op->ij = NULL;
    op->buffered = 0;
}

/* ---- Checkpoints (join.h; layout in docs/checkpoints.md) ---- */

/* The live records of key entry @p e on side @p s, by timestamp and
 * arrival order within one, into @p v (room for the key's records on
 * that side); returns how many. */
static size_t key_live(const struct tdm__ijoin *ij, const ikey *e, int s,
                       const irec **v)
{
    size_t m = 0;
    for (const iseg *g = e->first[s]; g; g = g->knext) {
        size_t from = m;
        for (const irec *r = g->head; r; r = r->next)
            if (rec_live(ij, s, r))
                v[m++] = r;
        /* Slices are disjoint and in order: sort within each. */
        for (size_t i = from + 1; i < m; i++) {
            const irec *x = v[i];
            size_t j = i;
            while (j > from && v[j - 1]->ts > x->ts) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = x;
        }
    }
    return m;
}

/* Records of key entry @p e on side @p s, dead ones included. */
static size_t key_count(const ikey *e, int s)
{
    size_t n = 0;
    for (const iseg *g = e->first[s]; g; g = g->knext)
        n += g->n;
    return n;
}

/* One group section per key group with buffered records: per side the
 * number of keys, then per key its bytes and buckets (ts, records:
 * value bits, payload). */
tdm_err tdm__join_interval_snap(const tdm_joinop *op, struct tdm__enc *e,
                                tdm__join_kg_fn kg, void *ud, int lo, size_t ng)
{
    const struct tdm__ijoin *ij = op->ij;
    tdm_err err = TDM_ERR_NOMEM;
    size_t n = ij->nkey;
    size_t maxrec = 0;
    uint32_t *ent = tdm__malloc((n + 1) * sizeof *ent);
    int *grp = tdm__malloc((n + 1) * sizeof *grp);
    uint32_t *order = tdm__malloc((n + 1) * sizeof *order);
    size_t *first = tdm__malloc((ng + 1) * sizeof *first);
    /* Per (entry, side): live records, 0 for none. */
    size_t *nlive = tdm__calloc(2 * (n + 1), sizeof *nlive);
    const irec **v = NULL;
    if (!ent || !grp || !order || !first || !nlive)
        goto fail;
    size_t ne = 0;
    for (uint32_t i = 0; i < ij->nkey; i++) {
        const ikey *k = &ij->key[i];
        if (!k->first[0] && !k->first[1])
            continue;
        size_t c0 = key_count(k, 0), c1 = key_count(k, 1);
        if (c0 > maxrec)
            maxrec = c0;
        if (c1 > maxrec)
            maxrec = c1;
        ent[ne] = i;
        int x = kg ? kg(ud, key_bytes(k), k->len) : 0;
        grp[ne] = (x < lo || (size_t)(x - lo) >= ng) ? -1 : x - lo;
        ne++;
    }
    v = tdm__malloc((maxrec + 1) * sizeof *v);
    if (!v)
        goto fail;
    for (size_t i = 0; i < ne; i++)
        for (int s = 0; s < 2; s++)
            nlive[2 * i + (size_t)s] = key_live(ij, &ij->key[ent[i]], s, v);
    if (!tdm__snap_by_group(grp, ne, ng, order, first))
        goto fail;
    for (size_t gi = 0; gi < ng; gi++) {
        size_t nk[2] = {0, 0};
        for (size_t j = first[gi]; j < first[gi + 1]; j++)
            for (int s = 0; s < 2; s++)
                nk[s] += nlive[2 * order[j] + (size_t)s] > 0;
        if (nk[0] + nk[1] == 0)
            continue;
        tdm__enc_begin(e, TDM__SNAP_TAG_JOINOP_GROUP);
        tdm__enc_uvar(e, (uint64_t)gi + (uint64_t)lo);
        for (int s = 0; s < 2; s++) {
            tdm__enc_uvar(e, nk[s]);
            for (size_t j = first[gi]; j < first[gi + 1]; j++) {
                if (!nlive[2 * order[j] + (size_t)s])
                    continue;
                const ikey *k = &ij->key[ent[order[j]]];
                size_t m = key_live(ij, k, s, v);
                tdm__enc_bytes(e, key_bytes(k), k->len);
                size_t nb = 0;
                for (size_t r = 0; r < m; r++)
                    nb += r == 0 || v[r]->ts != v[r - 1]->ts;
                tdm__enc_uvar(e, nb);
                for (size_t r = 0; r < m;) {
                    size_t q = r;
                    while (q < m && v[q]->ts == v[r]->ts)
                        q++;
                    tdm__enc_svar(e, v[r]->ts);
                    tdm__enc_uvar(e, q - r);
                    for (; r < q; r++) {
                        uint64_t bits;
                        memcpy(&bits, &v[r]->value, 8);
                        tdm__enc_u64(e, bits);
                        tdm__enc_bytes(e, rec_payload(v[r]), v[r]->plen);
                    }
                }
            }
        }
        tdm__enc_end(e);
    }
    err = TDM_OK;
fail:
    tdm__free(ent);
    tdm__free(grp);
    tdm__free(order);
    tdm__free(first);
    tdm__free(nlive);
    tdm__free(v);
    return err;
}

/* Reads one group section's keys into the buffers, in bucket order (so
 * arrival order within a timestamp is kept).  Restored records count as
 * buffered since the last advance: one whose cleanup time is at or below
 * the restored watermark goes at the next advance, as its timer did. */
tdm_err tdm__join_interval_restore_group(tdm_joinop *op, struct tdm__dec *d)
{
    struct tdm__ijoin *ij = op->ij;
    for (int s = 0; s < 2; s++) {
        uint64_t nk;
        if (tdm__dec_uvar(d, &nk) != TDM_OK)
            return TDM_ERR_PARSE;
        if (nk > tdm__dec_left(d))
            return tdm__dec_fail(d, "bad key count");
        for (uint64_t k = 0; k < nk; k++) {
            const void *key;
            size_t klen;
            uint64_t nb;
            tdm__dec_bytes(d, &key, &klen);
            if (tdm__dec_uvar(d, &nb) != TDM_OK)
                return TDM_ERR_PARSE;
            if (nb == 0 || nb > tdm__dec_left(d))
                return tdm__dec_fail(d, "bad bucket count");
            uint64_t h = tdm__keys_hash(key, klen);
            uint32_t kid = key_find(ij, h, key, klen);
            if (kid != UINT32_MAX && ij->key[kid].first[s])
                return tdm__dec_fail(d, "key twice");
            tdm_time_ms prev = TDM_TIME_MIN;
            for (uint64_t b = 0; b < nb; b++) {
                int64_t ts;
                uint64_t nr;
                tdm__dec_svar(d, &ts);
                if (tdm__dec_uvar(d, &nr) != TDM_OK)
                    return TDM_ERR_PARSE;
                if (b > 0 && ts <= prev)
                    return tdm__dec_fail(d, "buckets out of order");
                prev = ts;
                if (nr == 0 || nr > tdm__dec_left(d) / 9 || nr > UINT32_MAX)
                    return tdm__dec_fail(d, "bad record count");
                for (uint64_t r = 0; r < nr; r++) {
                    uint64_t bits;
                    const void *p;
                    size_t plen;
                    double value;
                    tdm__dec_u64(d, &bits);
                    if (tdm__dec_bytes(d, &p, &plen) != TDM_OK)
                        return TDM_ERR_PARSE;
                    memcpy(&value, &bits, 8);
                    tdm_err err = store(op, s, h, key, klen, ts, value,
                                        plen ? p : NULL, plen, &kid);
                    if (err != TDM_OK)
                        return err;
                }
            }
        }
    }
    return TDM_OK;
}
