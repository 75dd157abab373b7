/* SPDX-License-Identifier: MIT */
/* wstore.h - the window store: keyed state of non-merging window
 * operators whose windows hold one or two doubles (the built-in
 * incremental aggregates), laid out so that a record touches one cache
 * line of key state.
 *
 *   key bytes -> key entry (32 bytes: the key and one window inline, for
 *                tumbling windows of one double; else 64 bytes: up to two
 *                windows inline; 128 bytes, up to seven, once keys are
 *                seen in more windows at a time - sliding windows - see
 *                tdm__ws_compact), stored in the hash table itself (open
 *                addressing with a byte of hash per slot), so a lookup
 *                reads one entry
 *   (key, span) -> cell: one window of one key (inline, or spilled to a
 *                  side table when the entry is full)
 *   span      -> one window interval [start, end) shared by all keys,
 *                with the keys that have a cell in it (creation order)
 *                and its fire and cleanup times (the window operator's
 *                sliced mode, window/winop_slice.c, has two kinds: slices
 *                with cells and no members, windows with members and no
 *                cells)
 *
 * A key's id is its slot in the table; ids change only when the table
 * is rebuilt (growing, shrinking, tombstones cleared in place), and the
 * store then renumbers the span members and spilled cells that hold
 * them.  The table is sized for the most keys seen between cleanups, so
 * that windows whose keys churn reuse one table.  Timers are per span, not
 * per cell: a span is due at its fire time, then at its cleanup time,
 * and the owner walks its member keys.  The lookups of the per-record
 * path are static inline here so that the operator's push compiles into
 * one function; the rest is in wstore.c.
 */
#ifndef TDM_WSTORE_H
#define TDM_WSTORE_H

#include <string.h>

#include "state/state.h"

#define TDM__WS_NONE UINT32_MAX
#define TDM__WS_KEY_INLINE 12 /* key bytes kept inside the entry */
#define TDM__WS_CELL_BYTES 32 /* room for inline cells in a 64-byte entry */
#define TDM__WS_MAX_ESHIFT 7  /* entries grow to at most 128 bytes */
#define TDM__WS_SPILL_BIT 0x80000000u
#define TDM__WS_HEAP_KEY 31u  /* key length code of a key on the heap */
#define TDM__WS_SPILL_ONE 32u /* one spilled cell in tdm__ws_key.meta */

/* One window of one key.  @c span is the span id + 1 (0: a free inline
 * cell), with TDM__WS_SPILL_BIT set for cells in the spill table.
 * @c fires counts the owner's firings; inline cells keep its low 32 bits
 * only (see tdm__ws_cell_widen).  Only the first n_vals values exist:
 * inline cells are laid out every 8 + 8 * n_vals bytes. */
typedef struct tdm__ws_cell {
    uint32_t span;
    uint32_t fires;
    double v[2];
} tdm__ws_cell;

/* The head of a key entry (32 or 64 bytes, aligned to its size, so
 * within one cache line); the inline cells follow it.  @c meta holds the
 * key's length in its low 5 bits (TDM__WS_HEAP_KEY: the key is on the
 * heap) and the number of the key's cells in the spill table above
 * them.  Keys of up to TDM__WS_KEY_INLINE bytes live in @c k, longer
 * ones on the heap: then @c k holds the length (32 bits) and the
 * pointer.  Only slots whose control byte says "full" hold an entry. */
typedef struct tdm__ws_key {
    uint32_t meta;
    unsigned char k[TDM__WS_KEY_INLINE];
} tdm__ws_key;

#define TDM__WS_HEAD 16 /* bytes before the inline cells */
_Static_assert(sizeof(tdm__ws_key) == TDM__WS_HEAD, "entry head");

/* A spilled cell: its key id and the high half of the firing count. */
typedef struct tdm__ws_spill {
    uint32_t key;
    uint32_t fires_hi;
    tdm__ws_cell c;
} tdm__ws_spill;

/* A window interval shared by every key.  Due at t_fire until fired,
 * then at t_clean; TDM_TIME_MAX means never. */
typedef struct tdm__ws_span {
    tdm_time_ms start, end;
    tdm_time_ms t_fire, t_clean;
    uint64_t seq;      /* creation order, breaks ties between due times */
    uint32_t *members; /* key ids, in the order their cells were made */
    uint32_t n, cap;
    uint32_t hpos;  /* position in the due heap, NONE if not due */
    uint32_t fired; /* 1 once the fire time was handled; next free
                     * id while the span is free */
    uint32_t cells; /* live cells in the span (the slices of the
                     * operator's sliced mode have cells but no
                     * members) */
} tdm__ws_span;

/* Control bytes of the key table. */
#define TDM__WS_EMPTY 0x00
#define TDM__WS_DELETED 0x01 /* a tombstone: probing goes on past it */
#define TDM__WS_FULL 0x80    /* ORed with 7 bits of the key's hash */
#define TDM__WS_GROUP 8      /* control bytes probed at once */

typedef struct tdm__wstore {
    /* Keys: slot i holds entry ents[i] when ctrl[i] & TDM__WS_FULL.
     * ctrl has TDM__WS_GROUP - 1 more bytes, copies of the first ones,
     * so that a group of control bytes can be read at any slot. */
    uint8_t *ctrl;
    tdm__ws_key *ents; /* 64-byte aligned view of ents_raw; entry i
                        * starts i << eshift bytes in */
    uint32_t eshift;   /* log2 of the entry size: 5 or 6 */
    void *ents_raw;
    size_t slots; /* table size (any size from 16 on) */
    size_t live_keys;
    size_t deleted;   /* tombstones */
    size_t peak;      /* most live keys since the last compaction: the
                       * size the next window is likely to need */
    uint64_t gen;     /* rebuilds so far: ids change with it */
    uint64_t resizes; /* rebuilds into a newly allocated table (the
                       * others rehash in place) */
    uint32_t *renum;  /* old id -> new id while rebuilding (then the
                       * old ids by slot, while rehashing in place);
                       * kept */
    size_t renum_cap;
    size_t heap_bytes; /* long keys */
    /* Cells. */
    uint32_t n_vals;     /* doubles per cell: 1 or 2 */
    uint32_t stride;     /* bytes between inline cells */
    uint32_t n_inline;   /* inline cells per entry */
    size_t n_cells;      /* live cells, inline and spilled */
    size_t adds;         /* cells made since the last compaction */
    size_t adds_spilled; /* ... of which had to spill */
    /* Spill table: open addressing over (key, span), cells in slabs. */
    tdm__ws_spill **stab;
    size_t smask;
    size_t n_spilled;
    tdm__ws_spill *sfree;
    void **sslabs;
    size_t n_sslabs;
    /* Spans: an id-indexed array, a (start, end) -> id + 1 map and a
     * heap of due spans ordered by (due time, seq). */
    tdm__ws_span *spans;
    uint32_t n_span_ids, cap_spans, free_span;
    uint32_t live_spans;
    uint32_t *smap;
    size_t spmask;
    uint32_t *heap;
    uint32_t n_heap, cap_heap;
    uint64_t seq;
    size_t n_members; /* members of all spans (= n_cells) */
} tdm__wstore;

/* ---- Creation ---- */

/* Creates an empty store whose cells hold @p n_vals doubles (1 or 2).
 * @p one_window: keys likely have one window at a time (tumbling
 * windows), so that 32-byte entries with one inline cell do when
 * n_vals is 1 (tdm__ws_compact switches to 64-byte entries if many
 * cells spill); else entries are 64 bytes with 32 bytes of inline cells
 * (two of one double, one of two).  NULL on OOM. */
tdm__wstore *tdm__ws_new(uint32_t n_vals, bool one_window);
/* Frees everything; NULL is a no-op. */
void tdm__ws_destroy(tdm__wstore *ws);
/* Bytes held by live keys, cells and spans (live entries, not spare
 * capacity, so that the figure falls back as state is cleaned up). */
size_t tdm__ws_bytes(const tdm__wstore *ws);

/* ---- Hashing and key lookup (the per-record path) ---- */

static inline uint64_t tdm__ws_rd64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t tdm__ws_rd32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The folded multiply of core/hash.h (tdm__hash_fold). */
static inline uint64_t tdm__ws_fold(uint64_t a, uint64_t b)
{
    return tdm__hash_fold(a, b);
}

/* The seed of tdm__ws_hash for keys of @p len bytes. */
static inline uint64_t tdm__ws_seed(size_t len)
{
    return 0x243f6a8885a308d3ULL ^ ((uint64_t)len * TDM__HASH_GOLDEN);
}

/* tdm__ws_hash's last step: the two words @p a, @p b read from the key
 * (its last 16 bytes, or fewer) mixed with @p seed.  Callers that know
 * a key's words without its bytes (a fixed-width key: the runtime's
 * tdm__key_fixed_ws_hash) hash with it directly. */
static inline uint64_t tdm__ws_mix(uint64_t a, uint64_t b, uint64_t seed)
{
    uint64_t h = tdm__ws_fold(a ^ 0xe7037ed1a0b428dbULL, b ^ seed);
    return tdm__ws_fold(h ^ 0x8ebc6af09c88c6e3ULL, 0x589965cc75374cc3ULL);
}

/* The key hash of the window store.  Keys of up to 16 bytes are read as
 * two (possibly overlapping) words and mixed with two folded multiplies;
 * longer keys fold 16 bytes per step first.  The length is part of the
 * seed, so keys that differ only in length hash apart.  Kept apart from
 * core/hash.h's byte hash (but built from its folded multiply): the
 * hottest table of the engine, and independent of the routing hash,
 * whose bits the keys of one window subtask share. */
static inline uint64_t tdm__ws_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t seed = tdm__ws_seed(len);
    uint64_t a, b;
    if (len > 16) {
        size_t n = len;
        while (n > 16) {
            seed = tdm__ws_fold(tdm__ws_rd64(p) ^ 0xa0761d6478bd642fULL,
                                tdm__ws_rd64(p + 8) ^ seed);
            p += 16;
            n -= 16;
        }
        a = tdm__ws_rd64(p + n - 16);
        b = tdm__ws_rd64(p + n - 8);
    } else if (len >= 8) {
        a = tdm__ws_rd64(p);
        b = tdm__ws_rd64(p + len - 8);
    } else if (len >= 4) {
        a = tdm__ws_rd32(p);
        b = tdm__ws_rd32(p + len - 4);
    } else if (len > 0) {
        a = (uint64_t)p[0] | ((uint64_t)p[len / 2] << 8) |
            ((uint64_t)p[len - 1] << 16);
        b = 0;
    } else {
        a = b = 0;
    }
    return tdm__ws_mix(a, b, seed);
}

/* The entry of key @p id. */
static inline tdm__ws_key *tdm__ws_key_at(const tdm__wstore *ws, uint32_t id)
{
    return (tdm__ws_key *)(void *)((char *)ws->ents +
                                   ((size_t)id << ws->eshift));
}

/* The home slot of a key with hash @p hash in a table of @p slots: the
 * low 32 bits of the hash scaled to [0, slots) (slots < 2^32), so that
 * the table can have any size. */
/* Starts fetching key @p kid's entry (both ends: the cell may be in
 * either cache line of a 128-byte entry); a walk over a window's
 * scattered members calls it a few members ahead. */
static inline void tdm__ws_prefetch_key(const tdm__wstore *ws, uint32_t kid)
{
#if defined(__GNUC__)
    const char *e = (const char *)tdm__ws_key_at(ws, kid);
    __builtin_prefetch(e);
    __builtin_prefetch(e + ((size_t)1 << ws->eshift) - 1);
#else
    (void)ws;
    (void)kid;
#endif
}

static inline size_t tdm__ws_home(uint64_t hash, size_t slots)
{
    return (size_t)(((hash & 0xffffffffu) * (uint64_t)slots) >> 32);
}

/* The control byte of a key with hash @p hash: its top 7 bits. */
static inline uint8_t tdm__ws_tag(uint64_t hash)
{
    return (uint8_t)(TDM__WS_FULL | (hash >> 57));
}

/* The length of a live key. */
static inline size_t tdm__ws_key_len(const tdm__ws_key *e)
{
    uint32_t code = e->meta & TDM__WS_HEAP_KEY;
    if (code != TDM__WS_HEAP_KEY)
        return code;
    uint32_t len;
    memcpy(&len, e->k, sizeof len);
    return len;
}

/* The bytes of a live key (not NUL-terminated). */
static inline const char *tdm__ws_key_bytes(const tdm__ws_key *e)
{
    if ((e->meta & TDM__WS_HEAP_KEY) != TDM__WS_HEAP_KEY)
        return (const char *)e->k;
    char *heap;
    memcpy(&heap, e->k + 4, sizeof heap);
    return heap;
}

/* The number of key @p e's cells in the spill table. */
static inline uint32_t tdm__ws_n_spill(const tdm__ws_key *e)
{
    return e->meta / TDM__WS_SPILL_ONE;
}

/* True when entry @p e holds exactly @p key.  Short keys compare as one
 * or two words: the entry side is padded, the key side is read only
 * within its length. */
static inline bool tdm__ws_key_eq(const tdm__ws_key *e, const char *key,
                                  size_t len)
{
    uint32_t code = e->meta & TDM__WS_HEAP_KEY;
    if (len > TDM__WS_KEY_INLINE)
        return code == TDM__WS_HEAP_KEY && tdm__ws_key_len(e) == len &&
               memcmp(tdm__ws_key_bytes(e), key, len) == 0;
    if (code != len)
        return false;
    if (len >= 8)
        return tdm__ws_rd64(e->k) == tdm__ws_rd64(key) &&
               tdm__ws_rd64(e->k + len - 8) == tdm__ws_rd64(key + len - 8);
    if (len >= 4)
        return tdm__ws_rd32(e->k) == tdm__ws_rd32(key) &&
               tdm__ws_rd32(e->k + len - 4) == tdm__ws_rd32(key + len - 4);
    return len == 0 || memcmp(e->k, key, len) == 0;
}

#define TDM__WS_LSB 0x0101010101010101ULL
#define TDM__WS_MSB 0x8080808080808080ULL

/* The high bit of every byte of @p x that is zero (and possibly of
 * bytes above a zero byte: callers only trust the lowest bit, or check
 * what each bit points at). */
static inline uint64_t tdm__ws_zero_bytes(uint64_t x)
{
    return (x - TDM__WS_LSB) & ~x & TDM__WS_MSB;
}

/* The slot offset (0-7) of the lowest flagged byte of a nonzero mask. */
static inline unsigned tdm__ws_first(uint64_t m)
{
    return (unsigned)__builtin_ctzll(m) >> 3;
}

/* The eight control bytes from slot @p i on (little-endian order: slot i
 * in the low byte). */
static inline uint64_t tdm__ws_group(const uint8_t *ctrl, size_t i)
{
    uint64_t g;
    memcpy(&g, ctrl + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    g = __builtin_bswap64(g);
#endif
    return g;
}

/* The id of @p key (hash from tdm__ws_hash), TDM__WS_NONE when absent.
 * Probing reads eight control bytes at a time and finds the bytes equal
 * to the key's tag (7 more bits of its hash) with word arithmetic, so
 * the common lookup is branch-free until the one entry it reads.  A
 * group with an empty slot ends the probe run (keys are placed at the
 * first free slot of their run, and a slot only becomes empty when no
 * run goes on past it). */
static inline __attribute__((always_inline)) uint32_t
tdm__ws_find(const tdm__wstore *ws, const char *key, size_t len, uint64_t hash)
{
    uint64_t tags = TDM__WS_LSB * tdm__ws_tag(hash);
    size_t i = tdm__ws_home(hash, ws->slots);
    for (;;) {
        uint64_t g = tdm__ws_group(ws->ctrl, i);
        for (uint64_t m = tdm__ws_zero_bytes(g ^ tags); m; m &= m - 1) {
            size_t j = i + tdm__ws_first(m);
            if (j >= ws->slots)
                j -= ws->slots;
            if (tdm__ws_key_eq(tdm__ws_key_at(ws, (uint32_t)j), key, len))
                return (uint32_t)j;
        }
        if (tdm__ws_zero_bytes(g))
            return TDM__WS_NONE;
        i += TDM__WS_GROUP;
        if (i >= ws->slots)
            i -= ws->slots;
    }
}

/* ---- Cells ---- */

/* Inline cell @p i of entry @p e (i < ws->n_inline). */
static inline tdm__ws_cell *tdm__ws_inline(const tdm__wstore *ws,
                                           tdm__ws_key *e, uint32_t i)
{
    return (tdm__ws_cell *)(void *)((char *)e + TDM__WS_HEAD + i * ws->stride);
}

static inline tdm__ws_span *tdm__ws_span_at(const tdm__wstore *ws, uint32_t sid)
{
    return &ws->spans[sid];
}

/* The spilled cell of (key, span id), NULL when none. */
tdm__ws_cell *tdm__ws_spill_find(const tdm__wstore *ws, uint32_t key,
                                 uint32_t sid);

/* The cell of key @p id (entry @p e) in span @p sid, NULL when none. */
static inline tdm__ws_cell *tdm__ws_cell_of(const tdm__wstore *ws,
                                            tdm__ws_key *e, uint32_t id,
                                            uint32_t sid)
{
    for (uint32_t i = 0; i < ws->n_inline; i++) {
        tdm__ws_cell *c = tdm__ws_inline(ws, e, i);
        if (c->span == sid + 1)
            return c;
    }
    return tdm__ws_n_spill(e) ? tdm__ws_spill_find(ws, id, sid) : NULL;
}

/* The firing count of a cell. */
static inline uint64_t tdm__ws_fires(const tdm__ws_cell *c)
{
    uint64_t n = c->fires;
    if (c->span & TDM__WS_SPILL_BIT)
        n |= (uint64_t)((const tdm__ws_spill *)(const void *)((const char *)c -
                                                              offsetof(
                                                                  tdm__ws_spill,
                                                                  c)))
                 ->fires_hi
             << 32;
    return n;
}

/* Counts one firing.  Precondition: the count of an inline cell is
 * below UINT32_MAX (tdm__ws_cell_widen moves it to the spill table
 * first). */
static inline void tdm__ws_fires_inc(tdm__ws_cell *c)
{
    if (++c->fires == 0)
        ((tdm__ws_spill *)(void *)((char *)c - offsetof(tdm__ws_spill, c)))
            ->fires_hi++;
}

/* Moves inline cell *@p c of key @p id to the spill table, so that its
 * firing count can pass 2^32 - 1; *@p c is updated.  Returns TDM_OK or
 * TDM_ERR_NOMEM (nothing changed). */
tdm_err tdm__ws_cell_widen(tdm__wstore *ws, uint32_t id, tdm__ws_cell **c);

/* ---- Changes ---- */

/* Finds or adds @p key (hash from tdm__ws_hash).  A key added here has
 * no cell: give it one, or call tdm__ws_key_drop_if_empty.  Adding may
 * rebuild the table, which renumbers every key: ids held by the caller
 * are stale afterwards.  Returns TDM_OK and the id, or TDM_ERR_NOMEM
 * (nothing changed). */
tdm_err tdm__ws_intern(tdm__wstore *ws, const char *key, size_t len,
                       uint64_t hash, uint32_t *id);
/* tdm__ws_intern for a key that tdm__ws_find just did not find (no
 * change to the store since): the same, without looking again. */
tdm_err tdm__ws_intern_absent(tdm__wstore *ws, const char *key, size_t len,
                              uint64_t hash, uint32_t *id);
/* Removes key @p id if it has no cell left. */
void tdm__ws_key_drop_if_empty(tdm__wstore *ws, uint32_t id);
/* Call after cleaning up windows: rebuilds the key table smaller when it
 * is more than twice the size that the most keys since the last call
 * need, or clears its tombstones in place when they fill over 1/4 of
 * it; when over 1/8 of the cells made since the last call spilled,
 * doubles the entries instead (32 -> 64 bytes: two inline cells of one
 * double, one of two; 64 -> 128 bytes: seven, or four) and moves
 * spilled cells inline.  Like tdm__ws_intern it may renumber the keys.
 * Does nothing that needs memory when memory is short. */
void tdm__ws_compact(tdm__wstore *ws);
/* The id of span [start, end), TDM__WS_NONE when absent. */
uint32_t tdm__ws_span_find(const tdm__wstore *ws, tdm_time_ms start,
                           tdm_time_ms end);
/* Finds or adds span [start, end).  A new span is due at @p t_fire, or
 * at @p t_clean when @p fired (its fire time has passed already); a due
 * time of TDM_TIME_MAX means never.  Returns TDM_OK or TDM_ERR_NOMEM
 * (nothing changed). */
tdm_err tdm__ws_span_get(tdm__wstore *ws, tdm_time_ms start, tdm_time_ms end,
                         tdm_time_ms t_fire, tdm_time_ms t_clean, bool fired,
                         uint32_t *sid);
/* Adds a cell for key @p id in span @p sid (precondition: none exists)
 * and appends the key to the span's members.  The values are zero.
 * Returns the cell, or NULL on OOM (nothing changed). */
tdm__ws_cell *tdm__ws_cell_add(tdm__wstore *ws, uint32_t id, uint32_t sid);
/* tdm__ws_cell_add without the member: for spans that do not list their
 * keys (the slices of the window operator's sliced mode, whose windows
 * list the keys instead).  Returns the cell (values zero), or NULL on
 * OOM (nothing changed). */
tdm__ws_cell *tdm__ws_cell_add_bare(tdm__wstore *ws, uint32_t id, uint32_t sid);
/* Grows the member list of span @p sid (doubling).  False on OOM
 * (nothing changed). */
bool tdm__ws_member_grow(tdm__wstore *ws, uint32_t sid);
/* Makes room for one more member of span @p sid, so that
 * tdm__ws_member_push cannot fail.  False on OOM (nothing changed). */
static inline bool tdm__ws_member_reserve(tdm__wstore *ws, uint32_t sid)
{
    return ws->spans[sid].n < ws->spans[sid].cap ||
           tdm__ws_member_grow(ws, sid);
}
/* Appends key @p id to the members of span @p sid without a cell (room
 * reserved by tdm__ws_member_reserve): a window of the sliced mode,
 * whose values live in the cells of its slices. */
static inline void tdm__ws_member_push(tdm__wstore *ws, uint32_t sid,
                                       uint32_t id)
{
    tdm__ws_span *s = &ws->spans[sid];
    s->members[s->n++] = id;
    ws->n_members++;
}
/* Removes cell @p c of key @p id (the span's member list is left alone:
 * this is for walking a span that is then freed), and the key when it
 * has no cell left. */
void tdm__ws_cell_release(tdm__wstore *ws, uint32_t id, tdm__ws_cell *c);
/* The span due first if its due time is <= @p upto, else TDM__WS_NONE.
 * The span stays due until tdm__ws_span_set_fired or tdm__ws_span_free. */
uint32_t tdm__ws_span_due(const tdm__wstore *ws, tdm_time_ms upto);
/* Takes span @p sid out of the due order (its owner is walking it;
 * tdm__ws_span_set_fired or tdm__ws_span_free ends the walk). */
void tdm__ws_span_take(tdm__wstore *ws, uint32_t sid);
/* Marks a span fired: it is due next at its cleanup time. */
void tdm__ws_span_set_fired(tdm__wstore *ws, uint32_t sid);
/* Moves span @p sid's cleanup time to @p t_clean (a live change of the
 * allowed lateness): it is due then once fired.  TDM_OK or
 * TDM_ERR_NOMEM (the heap could not grow; nothing changed). */
tdm_err tdm__ws_span_set_clean(tdm__wstore *ws, uint32_t sid,
                               tdm_time_ms t_clean);
/* Calls @p fn with the id of every live span, in no order; @p fn must
 * not add or free spans. */
void tdm__ws_span_each(const tdm__wstore *ws, void (*fn)(void *, uint32_t),
                       void *ud);
/* Frees span @p sid once every member cell was released (or when it
 * never got one).  Its member list's memory is kept for the next span
 * (the next window of a tumbling stream needs about as much). */
void tdm__ws_span_free(tdm__wstore *ws, uint32_t sid);

#endif /* TDM_WSTORE_H */
