/* SPDX-License-Identifier: MIT */
/* wstore.c - the window store's slower half: adding and removing keys,
 * spilled cells and spans, rebuilding the tables, and the heap that
 * orders spans by due time (layouts and the per-record lookups:
 * wstore.h).
 *
 * Every change reserves what it may need before touching anything, so
 * TDM_ERR_NOMEM always leaves the store as it was.  The key table probes
 * linearly over control bytes and leaves tombstones on removal (entries
 * never move except when the whole table is rebuilt, into a new table
 * or in place); the spill table and the span map use linear probing with
 * backward-shift deletion.  Memory is kept across windows (table, member
 * lists, the renumbering map), so that a stream of tumbling windows
 * whose keys churn allocates nothing per window once it is warm.
 */
#include "state/wstore.h"

#define MIN_SLOTS 16
#define SPILL_SLAB 64

/* ====================================================================== */
/* Creation and accounting                                                 */
/* ====================================================================== */

static bool alloc_table(uint32_t eshift, size_t slots, uint8_t **ctrl,
                        void **raw, tdm__ws_key **ents);

/* Inline cells of @p stride bytes in an entry of 1 << @p eshift bytes:
 * one in 32 bytes, TDM__WS_CELL_BYTES worth in 64, and all the room
 * after the head in 128. */
static uint32_t inline_cells(uint32_t eshift, uint32_t stride)
{
    if (eshift == 5)
        return 1;
    if (eshift == 6)
        return TDM__WS_CELL_BYTES / stride;
    return (uint32_t)((((size_t)1 << eshift) - TDM__WS_HEAD) / stride);
}

/* Creates an empty store (16-slot key table, 16-entry spill table and
 * span map).  Returns NULL on OOM or when n_vals is not 1 or 2. */
tdm__wstore *tdm__ws_new(uint32_t n_vals, bool one_window)
{
    if (n_vals < 1 || n_vals > 2)
        return NULL;
    tdm__wstore *ws = tdm__calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->n_vals = n_vals;
    ws->stride = 8 + 8 * n_vals;
    /* One key, one window: a 32-byte entry has room for one cell of
     * one double; a 64-byte one keeps 32 bytes of cells. */
    bool small = one_window && n_vals == 1;
    ws->eshift = small ? 5 : 6;
    ws->n_inline = inline_cells(ws->eshift, ws->stride);
    ws->free_span = TDM__WS_NONE;
    ws->slots = MIN_SLOTS;
    ws->smask = 15;
    ws->spmask = 15;
    bool keys =
        alloc_table(ws->eshift, MIN_SLOTS, &ws->ctrl, &ws->ents_raw, &ws->ents);
    ws->stab = tdm__calloc(ws->smask + 1, sizeof *ws->stab);
    ws->smap = tdm__calloc(ws->spmask + 1, sizeof *ws->smap);
    if (!keys || !ws->stab || !ws->smap) {
        tdm__ws_destroy(ws);
        return NULL;
    }
    return ws;
}

/* Frees keys, spill slabs, spans and tables; NULL is a no-op. */
void tdm__ws_destroy(tdm__wstore *ws)
{
    if (!ws)
        return;
    if (ws->ctrl) {
        for (size_t i = 0; i < ws->slots; i++) {
            const tdm__ws_key *e = tdm__ws_key_at(ws, (uint32_t)i);
            if ((ws->ctrl[i] & TDM__WS_FULL) &&
                tdm__ws_key_len(e) > TDM__WS_KEY_INLINE)
                tdm__free((void *)tdm__ws_key_bytes(e));
        }
    }
    tdm__free(ws->ctrl);
    tdm__free(ws->ents_raw);
    for (size_t i = 0; i < ws->n_sslabs; i++)
        tdm__free(ws->sslabs[i]);
    tdm__free(ws->sslabs);
    tdm__free(ws->stab);
    for (uint32_t i = 0; i < ws->n_span_ids; i++)
        tdm__free(ws->spans[i].members);
    tdm__free(ws->spans);
    tdm__free(ws->smap);
    tdm__free(ws->heap);
    tdm__free(ws->renum);
    tdm__free(ws);
}

/* The key table as allocated while it holds keys (entries and control
 * bytes of every slot: at most 7/8 full, and sized for the most keys
 * since the last cleanup, so emptier right after a cleanup), spilled
 * cells (cell plus a half-full table's pointers), span members (one id
 * each), spans and long key bytes.  Inline cells are part of their
 * key's entry. */
size_t tdm__ws_bytes(const tdm__wstore *ws)
{
    size_t table =
        ws->live_keys ? ws->slots * (((size_t)1 << ws->eshift) + 1) : 0;
    return table + ws->heap_bytes +
           ws->n_spilled * (sizeof(tdm__ws_spill) + 2 * sizeof(void *)) +
           ws->n_members * sizeof(uint32_t) +
           ws->live_spans *
               (sizeof(tdm__ws_span) + 2 * sizeof(uint32_t) + sizeof(uint32_t));
}

/* ====================================================================== */
/* Keys                                                                    */
/* ====================================================================== */

/* Allocates a key table of @p slots entries of 1 << @p eshift bytes:
 * control bytes all EMPTY (and the copies of the first ones) and 64-byte
 * aligned entries.  False on OOM (nothing allocated). */
static bool alloc_table(uint32_t eshift, size_t slots, uint8_t **ctrl,
                        void **raw, tdm__ws_key **ents)
{
    *ctrl = NULL;
    if (slots > (SIZE_MAX - 63) >> eshift)
        return false;
    *ctrl = tdm__calloc(slots + TDM__WS_GROUP - 1, 1);
    *raw = *ctrl ? tdm__malloc((slots << eshift) + 63) : NULL;
    if (!*raw) {
        tdm__free(*ctrl);
        *ctrl = NULL;
        return false;
    }
    *ents = (tdm__ws_key *)(((uintptr_t)*raw + 63) & ~(uintptr_t)63);
    return true;
}

static inline uint64_t spill_hash(uint32_t key, uint32_t sid);
static inline uint32_t spill_sid(const tdm__ws_spill *s);

/* Sets control byte @p i of a table of @p slots, and its copy past the
 * end. */
static inline void set_ctrl(uint8_t *ctrl, size_t slots, size_t i, uint8_t v)
{
    ctrl[i] = v;
    if (i < TDM__WS_GROUP - 1)
        ctrl[slots + i] = v;
}

/* The first slot from @p i on that holds no key (empty or tombstone).
 * Full slots are the control bytes with the high bit set, so the
 * complement's high bits mark the free ones, eight slots per step. */
static size_t free_slot(const uint8_t *ctrl, size_t slots, size_t i)
{
    for (;;) {
        uint64_t m = ~tdm__ws_group(ctrl, i) & TDM__WS_MSB;
        if (m) {
            i += tdm__ws_first(m);
            return i >= slots ? i - slots : i;
        }
        i += TDM__WS_GROUP;
        if (i >= slots)
            i -= slots;
    }
}

/* Makes the renumbering map hold @p slots ids (it is kept between
 * rebuilds, so that a rebuild per window touches no fresh memory).
 * False on OOM (nothing changed). */
static bool reserve_renum(tdm__wstore *ws, size_t slots)
{
    if (ws->renum_cap >= slots)
        return true;
    uint32_t *r = tdm__realloc(ws->renum, slots * sizeof *r);
    if (!r)
        return false;
    ws->renum = r;
    ws->renum_cap = slots;
    return true;
}

/* After the keys moved (ws->renum[old id] is the new id, or
 * TDM__WS_NONE), renumbers the span members and rebuilds the spill
 * index, whose positions hash the key id, into @p nstab (NULL when no
 * cell is spilled: the index is empty and stays).  Cannot fail. */
static void renumber(tdm__wstore *ws, tdm__ws_spill **nstab)
{
    /* Members of cells released during a walk that is still going on
     * (the owner's callback added a key) are NONE and stay so; free
     * spans have none. */
    const uint32_t *renum = ws->renum;
    for (uint32_t sid = 0; sid < ws->n_span_ids; sid++) {
        tdm__ws_span *sp = &ws->spans[sid];
        for (uint32_t k = 0; k < sp->n; k++)
            if (sp->members[k] != TDM__WS_NONE)
                sp->members[k] = renum[sp->members[k]];
    }
    if (!nstab)
        return;
    /* Spilled cells: new key ids, so new positions in a new index of
     * the same size (the cells themselves stay where they are). */
    for (size_t i = 0; i <= ws->smask; i++) {
        tdm__ws_spill *c = ws->stab[i];
        if (!c)
            continue;
        c->key = renum[c->key];
        size_t j = (size_t)spill_hash(c->key, spill_sid(c)) & ws->smask;
        while (nstab[j])
            j = (j + 1) & ws->smask;
        nstab[j] = c;
    }
    tdm__free(ws->stab);
    ws->stab = nstab;
}

/* Moves every key into a new table of @p slots whose entries are 1 <<
 * @p eshift bytes (at least the current size: a bigger entry gets free
 * inline cells after the current ones) and renumbers the ids held by
 * span members and spilled cells.  Everything is allocated first: false
 * on OOM, with the store unchanged. */
static bool rebuild_as(tdm__wstore *ws, size_t slots, uint32_t eshift)
{
    uint8_t *nctrl;
    void *nraw;
    tdm__ws_key *nents;
    size_t olds = (size_t)1 << ws->eshift, news = (size_t)1 << eshift;
    if (slots >= (size_t)TDM__WS_NONE || !reserve_renum(ws, ws->slots) ||
        !alloc_table(eshift, slots, &nctrl, &nraw, &nents))
        return false;
    tdm__ws_spill **nstab = NULL;
    if (ws->n_spilled) {
        nstab = tdm__calloc(ws->smask + 1, sizeof *nstab);
        if (!nstab) {
            tdm__free(nctrl);
            tdm__free(nraw);
            return false;
        }
    }
    /* Every key moves to its place in the new table (no tombstones
     * there); renum[old id] is its new id. */
    for (size_t i = 0; i < ws->slots; i++) {
        ws->renum[i] = TDM__WS_NONE;
        if (!(ws->ctrl[i] & TDM__WS_FULL))
            continue;
        const tdm__ws_key *e = tdm__ws_key_at(ws, (uint32_t)i);
        uint64_t h = tdm__ws_hash(tdm__ws_key_bytes(e), tdm__ws_key_len(e));
        size_t j = free_slot(nctrl, slots, tdm__ws_home(h, slots));
        set_ctrl(nctrl, slots, j, tdm__ws_tag(h));
        char *to = (char *)nents + (j << eshift);
        memcpy(to, e, olds);
        if (news > olds)
            memset(to + olds, 0, news - olds);
        ws->renum[i] = (uint32_t)j;
    }
    /* Nothing can fail any more: swap the tables in. */
    renumber(ws, nstab);
    tdm__free(ws->ctrl);
    tdm__free(ws->ents_raw);
    ws->ctrl = nctrl;
    ws->ents_raw = nraw;
    ws->ents = nents;
    ws->eshift = eshift;
    ws->slots = slots;
    ws->deleted = 0;
    ws->gen++;
    ws->resizes++;
    return true;
}

/* rebuild_as with the current entry size. */
static bool rebuild(tdm__wstore *ws, size_t slots)
{
    return rebuild_as(ws, slots, ws->eshift);
}

/* A control byte used only while rehashing in place: a slot whose entry
 * has not been placed yet (neither empty nor full, so that free_slot
 * stops at it). */
#define PENDING 0x02

/* Clears the tombstones by rehashing the keys within the table itself:
 * no new table, and entries move only when their probe run got shorter.
 * Each pending entry goes to the first slot of its run that is not full:
 * there if it is that slot, into it if it is empty, else it swaps with
 * the pending entry there, which is placed next.  Full slots never
 * change again, so every key ends with only full slots between its home
 * and itself, which is what lookups need.  Renumbers like rebuild (the
 * second half of the renumbering map holds each slot's old id while
 * entries move); false on OOM (store unchanged). */
static bool rehash_in_place(tdm__wstore *ws)
{
    size_t n = ws->slots;
    if (!reserve_renum(ws, 2 * n))
        return false;
    tdm__ws_spill **nstab = NULL;
    if (ws->n_spilled) {
        nstab = tdm__calloc(ws->smask + 1, sizeof *nstab);
        if (!nstab)
            return false;
    }
    uint8_t *ctrl = ws->ctrl;
    uint32_t *renum = ws->renum, *old = ws->renum + n;
    size_t esize = (size_t)1 << ws->eshift;
    /* Full slots become pending, tombstones empty. */
    for (size_t i = 0; i < n; i++) {
        renum[i] = TDM__WS_NONE;
        old[i] = (uint32_t)i;
        set_ctrl(ctrl, n, i,
                 (ctrl[i] & TDM__WS_FULL) ? PENDING : TDM__WS_EMPTY);
    }
    for (size_t i = 0; i < n; i++) {
        while (ctrl[i] == PENDING) {
            tdm__ws_key *e = tdm__ws_key_at(ws, (uint32_t)i);
            uint64_t h = tdm__ws_hash(tdm__ws_key_bytes(e), tdm__ws_key_len(e));
            size_t j = free_slot(ctrl, n, tdm__ws_home(h, n));
            tdm__ws_key *to = tdm__ws_key_at(ws, (uint32_t)j);
            if (j == i) {
                set_ctrl(ctrl, n, i, tdm__ws_tag(h));
                renum[old[i]] = (uint32_t)i;
            } else if (ctrl[j] == TDM__WS_EMPTY) {
                memcpy(to, e, esize);
                set_ctrl(ctrl, n, j, tdm__ws_tag(h));
                set_ctrl(ctrl, n, i, TDM__WS_EMPTY);
                renum[old[i]] = (uint32_t)j;
            } else {
                /* j is pending: swap, and place what came to i next. */
                uint64_t t[((size_t)1 << TDM__WS_MAX_ESHIFT) / 8];
                memcpy(t, to, esize);
                memcpy(to, e, esize);
                memcpy(e, t, esize);
                set_ctrl(ctrl, n, j, tdm__ws_tag(h));
                uint32_t o = old[j];
                renum[old[i]] = (uint32_t)j;
                old[i] = o;
            }
        }
    }
    renumber(ws, nstab);
    ws->deleted = 0;
    ws->gen++;
    return true;
}

/* The table size for @p live keys: about 2/3 full after a rebuild (and
 * rebuilt again at 7/8), so that the table is 3/4 full on average. */
static size_t slots_for(size_t live)
{
    size_t slots = live + live / 2 + 1;
    return slots < MIN_SLOTS ? MIN_SLOTS : slots;
}

/* Makes room for one more key: full slots and tombstones at most 7/8 of
 * the table, so that probes end soon.  When the keys alone fill at most
 * 5/8 of it, the tombstones are the trouble and are cleared in place;
 * else the table grows by half at least (few rebuilds while the first
 * windows fill it), to fit the most keys seen lately (the previous
 * window's, say).  False on OOM (store unchanged). */
static bool make_room(tdm__wstore *ws)
{
    size_t live = ws->live_keys + 1;
    if ((live + ws->deleted) * 8 <= ws->slots * 7)
        return true;
    if (live * 8 <= ws->slots * 5)
        return rehash_in_place(ws);
    size_t want = slots_for(live > ws->peak ? live : ws->peak);
    if (want < ws->slots + ws->slots / 2)
        want = ws->slots + ws->slots / 2;
    return rebuild(ws, want);
}

/* Finds or adds a key; see wstore.h.  A new entry copies the key and
 * starts without cells. */
tdm_err tdm__ws_intern(tdm__wstore *ws, const char *key, size_t len,
                       uint64_t hash, uint32_t *id)
{
    uint32_t found = tdm__ws_find(ws, key, len, hash);
    if (found != TDM__WS_NONE) {
        *id = found;
        return TDM_OK;
    }
    return tdm__ws_intern_absent(ws, key, len, hash, id);
}

/* Adds a key known to be absent; see wstore.h. */
tdm_err tdm__ws_intern_absent(tdm__wstore *ws, const char *key, size_t len,
                              uint64_t hash, uint32_t *id)
{
    if (len >= UINT32_MAX)
        return TDM_ERR_NOMEM;
    /* Reserve: long key bytes, then room (full slots and tombstones at
     * most 7/8 of the table, so that probes end soon). */
    char *heap = NULL;
    if (len > TDM__WS_KEY_INLINE) {
        heap = tdm__malloc(len);
        if (!heap)
            return TDM_ERR_NOMEM;
        memcpy(heap, key, len);
    }
    if (!make_room(ws)) {
        tdm__free(heap);
        return TDM_ERR_NOMEM;
    }
    /* The key is absent, so the first free slot of its probe run is
     * where it goes; a tombstone there is reused. */
    size_t i = free_slot(ws->ctrl, ws->slots, tdm__ws_home(hash, ws->slots));
    if (ws->ctrl[i] == TDM__WS_DELETED)
        ws->deleted--;
    set_ctrl(ws->ctrl, ws->slots, i, tdm__ws_tag(hash));
    tdm__ws_key *e = tdm__ws_key_at(ws, (uint32_t)i);
    memset(e, 0, (size_t)1 << ws->eshift);
    if (heap) {
        uint32_t l = (uint32_t)len;
        e->meta = TDM__WS_HEAP_KEY;
        memcpy(e->k, &l, sizeof l);
        memcpy(e->k + 4, &heap, sizeof heap);
        ws->heap_bytes += len;
    } else {
        e->meta = (uint32_t)len;
        if (len)
            memcpy(e->k, key, len);
    }
    if (++ws->live_keys > ws->peak)
        ws->peak = ws->live_keys;
    *id = (uint32_t)i;
    return TDM_OK;
}

/* Removes key @p id when it has no cell: its slot becomes a tombstone
 * (an empty slot would cut the probe runs through it). */
void tdm__ws_key_drop_if_empty(tdm__wstore *ws, uint32_t id)
{
    tdm__ws_key *e = tdm__ws_key_at(ws, id);
    if (tdm__ws_n_spill(e))
        return;
    for (uint32_t i = 0; i < ws->n_inline; i++)
        if (tdm__ws_inline(ws, e, i)->span)
            return;
    size_t len = tdm__ws_key_len(e);
    if (len > TDM__WS_KEY_INLINE) {
        ws->heap_bytes -= len;
        tdm__free((void *)tdm__ws_key_bytes(e));
    }
    /* A slot followed by an empty one is the end of every probe run
     * through it, so it can be empty at once, and so can the tombstones
     * right before it. */
    size_t n = ws->slots;
    if (ws->ctrl[id + 1 < n ? id + 1 : 0] == TDM__WS_EMPTY) {
        size_t i = id;
        set_ctrl(ws->ctrl, n, i, TDM__WS_EMPTY);
        for (;;) {
            i = i ? i - 1 : n - 1;
            if (ws->ctrl[i] != TDM__WS_DELETED)
                break;
            set_ctrl(ws->ctrl, n, i, TDM__WS_EMPTY);
            ws->deleted--;
        }
    } else {
        set_ctrl(ws->ctrl, n, id, TDM__WS_DELETED);
        ws->deleted++;
    }
    ws->live_keys--;
}

static void unspill(tdm__wstore *ws);

/* Sizes the key table for the next window; see wstore.h.  The most keys
 * seen since the last call (the window just cleaned up, together with
 * the ones after it) is what the next window will likely need: the table
 * shrinks only when it is more than twice that size, so that a steady
 * stream of churning windows keeps one table.  Many tombstones are
 * cleared now, between windows, rather than while the next one fills. */
void tdm__ws_compact(tdm__wstore *ws)
{
    size_t want =
        slots_for(ws->peak > ws->live_keys ? ws->peak : ws->live_keys);
    /* 32-byte entries were a guess (one window per key at a time); when
     * over 1/8 of the cells made since the last call had to spill, keys
     * overlap windows after all, and 64-byte entries with two inline
     * cells serve them.  Sliding windows (a key in size / slide windows
     * at once, and in the windows the watermark has not reached yet)
     * spill from those too: then entries grow once more, to 128 bytes
     * (two cache lines) with seven inline cells of one double, four of
     * two.  Entries do not shrink back. */
    if (ws->eshift < TDM__WS_MAX_ESHIFT && ws->adds_spilled * 8 > ws->adds &&
        rebuild_as(ws, want * 2 <= ws->slots ? want : ws->slots,
                   ws->eshift + 1)) {
        ws->n_inline = inline_cells(ws->eshift, ws->stride);
        unspill(ws);
    } else if (want * 2 <= ws->slots)
        (void)rebuild(ws, want);
    else if (ws->deleted * 4 > ws->slots)
        (void)rehash_in_place(ws);
    ws->peak = ws->live_keys;
    ws->adds = ws->adds_spilled = 0;
}

/* ====================================================================== */
/* Spilled cells                                                           */
/* ====================================================================== */

/* Spilled cells are rare (a key with more live windows than fit in its
 * entry: sliding windows, large lateness, averages), so they live in
 * 64-cell slabs with a free list and a plain open-addressing index of
 * cell pointers keyed by (key id, span id). */

/* Mixes (key id, span id) into a table position. */
static inline uint64_t spill_hash(uint32_t key, uint32_t sid)
{
    return tdm__hash_word((uint64_t)key << 32 | sid);
}

/* The span id of a spilled cell (its span field carries the spill
 * bit). */
static inline uint32_t spill_sid(const tdm__ws_spill *s)
{
    return (s->c.span & ~TDM__WS_SPILL_BIT) - 1;
}

/* The spilled cell of (key, sid); see wstore.h. */
tdm__ws_cell *tdm__ws_spill_find(const tdm__wstore *ws, uint32_t key,
                                 uint32_t sid)
{
    size_t i = (size_t)spill_hash(key, sid) & ws->smask;
    for (;;) {
        tdm__ws_spill *s = ws->stab[i];
        if (!s)
            return NULL;
        if (s->key == key && spill_sid(s) == sid)
            return &s->c;
        i = (i + 1) & ws->smask;
    }
}

/* Makes room for one more spilled cell: table load <= 1/2 and a free
 * cell.  False on OOM (anything grown stays, harmlessly). */
static bool spill_reserve(tdm__wstore *ws)
{
    /* A bigger index first: its positions are recomputed from each
     * cell's (key, span), the cells do not move. */
    if ((ws->n_spilled + 1) * 2 > ws->smask + 1) {
        size_t nmask = ws->smask * 2 + 1;
        tdm__ws_spill **nt = tdm__calloc(nmask + 1, sizeof *nt);
        if (!nt)
            return false;
        for (size_t i = 0; i <= ws->smask; i++) {
            tdm__ws_spill *s = ws->stab[i];
            if (!s)
                continue;
            size_t j = (size_t)spill_hash(s->key, spill_sid(s)) & nmask;
            while (nt[j])
                j = (j + 1) & nmask;
            nt[j] = s;
        }
        tdm__free(ws->stab);
        ws->stab = nt;
        ws->smask = nmask;
    }
    /* Then a free cell: a new slab when the free list is empty (slabs
     * are kept until the store is destroyed). */
    if (!ws->sfree) {
        void **nl = tdm__realloc(ws->sslabs, (ws->n_sslabs + 1) * sizeof *nl);
        if (!nl)
            return false;
        ws->sslabs = nl;
        tdm__ws_spill *slab = tdm__malloc(SPILL_SLAB * sizeof *slab);
        if (!slab)
            return false;
        ws->sslabs[ws->n_sslabs++] = slab;
        for (size_t i = SPILL_SLAB; i-- > 0;) {
            /* Free cells are linked through their first value. */
            memcpy(&slab[i].c.v[0], &ws->sfree, sizeof ws->sfree);
            ws->sfree = &slab[i];
        }
    }
    return true;
}

/* Takes a reserved spilled cell for (key, sid) and indexes it. */
static tdm__ws_spill *spill_take(tdm__wstore *ws, uint32_t key, uint32_t sid)
{
    tdm__ws_spill *s = ws->sfree;
    memcpy(&ws->sfree, &s->c.v[0], sizeof ws->sfree);
    memset(s, 0, sizeof *s);
    s->key = key;
    s->c.span = (sid + 1) | TDM__WS_SPILL_BIT;
    size_t i = (size_t)spill_hash(key, sid) & ws->smask;
    while (ws->stab[i])
        i = (i + 1) & ws->smask;
    ws->stab[i] = s;
    ws->n_spilled++;
    return s;
}

/* Removes spilled cell @p s from the table (backward shift) and frees
 * it. */
static void spill_remove(tdm__wstore *ws, tdm__ws_spill *s)
{
    size_t i = (size_t)spill_hash(s->key, spill_sid(s)) & ws->smask;
    while (ws->stab[i] != s)
        i = (i + 1) & ws->smask;
    /* Backward shift: later cells of the probe run move into the hole
     * unless their home lies cyclically in (hole, their position]. */
    size_t j = i;
    for (;;) {
        ws->stab[i] = NULL;
        for (;;) {
            j = (j + 1) & ws->smask;
            tdm__ws_spill *o = ws->stab[j];
            if (!o)
                goto done;
            size_t home = (size_t)spill_hash(o->key, spill_sid(o)) & ws->smask;
            bool stays =
                (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
            if (!stays)
                break;
        }
        ws->stab[i] = ws->stab[j];
        i = j;
    }
done:
    memcpy(&s->c.v[0], &ws->sfree, sizeof ws->sfree);
    ws->sfree = s;
    ws->n_spilled--;
}

/* Moves spilled cells into free inline cells of their keys (after the
 * entries grew), so that the windows open now do not stay on the slow
 * path.  Cells whose firing count needs more than 32 bits stay.  A
 * removal shifts later cells of the run back, maybe into the position
 * just looked at, so that position is looked at again. */
static void unspill(tdm__wstore *ws)
{
    for (size_t i = 0; i <= ws->smask;) {
        tdm__ws_spill *s = ws->stab[i];
        tdm__ws_cell *to = NULL;
        tdm__ws_key *e = NULL;
        if (s && !s->fires_hi) {
            e = tdm__ws_key_at(ws, s->key);
            for (uint32_t k = 0; k < ws->n_inline && !to; k++) {
                to = tdm__ws_inline(ws, e, k);
                if (to->span)
                    to = NULL;
            }
        }
        if (!to) {
            i++;
            continue;
        }
        to->span = s->c.span & ~TDM__WS_SPILL_BIT;
        to->fires = s->c.fires;
        for (uint32_t k = 0; k < ws->n_vals; k++)
            to->v[k] = s->c.v[k];
        e->meta -= TDM__WS_SPILL_ONE;
        spill_remove(ws, s);
    }
}

/* The spilled cell around cell @p c (which has the spill bit). */
static inline tdm__ws_spill *spill_of(tdm__ws_cell *c)
{
    return (tdm__ws_spill *)(void *)((char *)c - offsetof(tdm__ws_spill, c));
}

/* Moves an inline cell to the spill table; see wstore.h. */
tdm_err tdm__ws_cell_widen(tdm__wstore *ws, uint32_t id, tdm__ws_cell **c)
{
    tdm__ws_cell *old = *c;
    tdm__ws_key *e = tdm__ws_key_at(ws, id);
    if (old->span & TDM__WS_SPILL_BIT)
        return TDM_OK;
    if (e->meta >= UINT32_MAX - TDM__WS_SPILL_ONE || !spill_reserve(ws))
        return TDM_ERR_NOMEM;
    /* Same span, count and values; the inline cell becomes free. */
    tdm__ws_spill *s = spill_take(ws, id, old->span - 1);
    s->c.fires = old->fires;
    for (uint32_t k = 0; k < ws->n_vals; k++)
        s->c.v[k] = old->v[k];
    old->span = 0;
    e->meta += TDM__WS_SPILL_ONE;
    *c = &s->c;
    return TDM_OK;
}

/* ====================================================================== */
/* Spans and their due heap                                                */
/* ====================================================================== */

/* There are few spans at a time (the window intervals between the
 * watermark and the newest record, plus those kept for lateness), so a
 * binary heap of span ids does: O(log n) per fire or cleanup of a whole
 * interval, instead of one timer per (key, window). */

/* Mixes a window interval into a span-map position. */
static inline uint64_t span_hash(tdm_time_ms start, tdm_time_ms end)
{
    return tdm__hash_pair((uint64_t)start, (uint64_t)end);
}

/* The next time a span is due: its fire time, then its cleanup time. */
static inline tdm_time_ms span_due(const tdm__ws_span *s)
{
    return s->fired ? s->t_clean : s->t_fire;
}

/* Heap order: earlier due time first, then earlier creation. */
static inline bool span_before(const tdm__wstore *ws, uint32_t a, uint32_t b)
{
    const tdm__ws_span *x = &ws->spans[a], *y = &ws->spans[b];
    tdm_time_ms dx = span_due(x), dy = span_due(y);
    return dx < dy || (dx == dy && x->seq < y->seq);
}

/* Puts span @p sid at heap position @p pos and remembers it there. */
static inline void heap_put(tdm__wstore *ws, uint32_t pos, uint32_t sid)
{
    ws->heap[pos] = sid;
    ws->spans[sid].hpos = pos;
}

/* Moves the span at @p pos up while it is due before its parent. */
static void sift_up(tdm__wstore *ws, uint32_t pos)
{
    uint32_t sid = ws->heap[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 2;
        if (!span_before(ws, sid, ws->heap[parent]))
            break;
        heap_put(ws, pos, ws->heap[parent]);
        pos = parent;
    }
    heap_put(ws, pos, sid);
}

/* Moves the span at @p pos down while a child is due before it. */
static void sift_down(tdm__wstore *ws, uint32_t pos)
{
    uint32_t sid = ws->heap[pos];
    for (;;) {
        uint32_t c = 2 * pos + 1;
        if (c >= ws->n_heap)
            break;
        if (c + 1 < ws->n_heap && span_before(ws, ws->heap[c + 1], ws->heap[c]))
            c++;
        if (!span_before(ws, ws->heap[c], sid))
            break;
        heap_put(ws, pos, ws->heap[c]);
        pos = c;
    }
    heap_put(ws, pos, sid);
}

/* Takes span @p sid out of the heap (if it is in). */
static void heap_remove(tdm__wstore *ws, uint32_t sid)
{
    uint32_t pos = ws->spans[sid].hpos;
    if (pos == TDM__WS_NONE)
        return;
    ws->spans[sid].hpos = TDM__WS_NONE;
    uint32_t last = --ws->n_heap;
    if (pos == last)
        return;
    /* The last span fills the hole and moves up or down from there. */
    uint32_t moved = ws->heap[last];
    heap_put(ws, pos, moved);
    sift_up(ws, pos);
    sift_down(ws, ws->spans[moved].hpos);
}

/* The id of span [start, end); see wstore.h. */
uint32_t tdm__ws_span_find(const tdm__wstore *ws, tdm_time_ms start,
                           tdm_time_ms end)
{
    size_t i = (size_t)span_hash(start, end) & ws->spmask;
    for (;;) {
        uint32_t v = ws->smap[i];
        if (!v)
            return TDM__WS_NONE;
        const tdm__ws_span *s = &ws->spans[v - 1];
        if (s->start == start && s->end == end)
            return v - 1;
        i = (i + 1) & ws->spmask;
    }
}

/* Doubles the span map; false on OOM. */
static bool grow_smap(tdm__wstore *ws)
{
    size_t nmask = ws->spmask * 2 + 1;
    uint32_t *nt = tdm__calloc(nmask + 1, sizeof *nt);
    if (!nt)
        return false;
    for (size_t i = 0; i <= ws->spmask; i++) {
        uint32_t v = ws->smap[i];
        if (!v)
            continue;
        const tdm__ws_span *s = &ws->spans[v - 1];
        size_t j = (size_t)span_hash(s->start, s->end) & nmask;
        while (nt[j])
            j = (j + 1) & nmask;
        nt[j] = v;
    }
    tdm__free(ws->smap);
    ws->smap = nt;
    ws->spmask = nmask;
    return true;
}

/* Room for one more span in the heap (doubled when full); false on
 * OOM. */
static bool heap_room(tdm__wstore *ws)
{
    if (ws->n_heap < ws->cap_heap)
        return true;
    uint32_t ncap = ws->cap_heap ? ws->cap_heap * 2 : 8;
    uint32_t *nh = tdm__realloc(ws->heap, ncap * sizeof *nh);
    if (!nh)
        return false;
    ws->heap = nh;
    ws->cap_heap = ncap;
    return true;
}

/* Finds or adds a span; see wstore.h. */
tdm_err tdm__ws_span_get(tdm__wstore *ws, tdm_time_ms start, tdm_time_ms end,
                         tdm_time_ms t_fire, tdm_time_ms t_clean, bool fired,
                         uint32_t *sid)
{
    uint32_t found = tdm__ws_span_find(ws, start, end);
    if (found != TDM__WS_NONE) {
        *sid = found;
        return TDM_OK;
    }
    /* Reserve an id, map room (load <= 1/2) and a heap place. */
    if (ws->free_span == TDM__WS_NONE && ws->n_span_ids == ws->cap_spans) {
        uint32_t ncap = ws->cap_spans ? ws->cap_spans * 2 : 8;
        if (ncap >= TDM__WS_SPILL_BIT)
            return TDM_ERR_NOMEM;
        tdm__ws_span *ns = tdm__realloc(ws->spans, ncap * sizeof *ns);
        if (!ns)
            return TDM_ERR_NOMEM;
        ws->spans = ns;
        ws->cap_spans = ncap;
    }
    if ((ws->live_spans + 1) * 2 > ws->spmask + 1 && !grow_smap(ws))
        return TDM_ERR_NOMEM;
    if (!heap_room(ws))
        return TDM_ERR_NOMEM;
    /* Free span ids are reused first (linked through "fired"). */
    uint32_t id;
    uint32_t *members = NULL, mcap = 0;
    if (ws->free_span != TDM__WS_NONE) {
        /* A reused id brings its member list's memory along. */
        id = ws->free_span;
        ws->free_span = ws->spans[id].fired;
        members = ws->spans[id].members;
        mcap = ws->spans[id].cap;
    } else {
        id = ws->n_span_ids++;
    }
    tdm__ws_span *s = &ws->spans[id];
    memset(s, 0, sizeof *s);
    s->members = members;
    s->cap = mcap;
    s->start = start;
    s->end = end;
    s->t_fire = t_fire;
    s->t_clean = t_clean;
    s->fired = fired ? 1 : 0;
    s->seq = ws->seq++;
    s->hpos = TDM__WS_NONE;
    size_t i = (size_t)span_hash(start, end) & ws->spmask;
    while (ws->smap[i])
        i = (i + 1) & ws->spmask;
    ws->smap[i] = id + 1;
    ws->live_spans++;
    /* Due at its fire time, or at its cleanup time when that has passed
     * already; never when that time is TDM_TIME_MAX. */
    if (span_due(s) != TDM_TIME_MAX) {
        ws->heap[ws->n_heap++] = id;
        sift_up(ws, ws->n_heap - 1);
    }
    *sid = id;
    return TDM_OK;
}

/* The first due span; see wstore.h. */
uint32_t tdm__ws_span_due(const tdm__wstore *ws, tdm_time_ms upto)
{
    if (!ws->n_heap)
        return TDM__WS_NONE;
    uint32_t sid = ws->heap[0];
    return span_due(&ws->spans[sid]) <= upto ? sid : TDM__WS_NONE;
}

/* Takes a due span out of the heap while its owner walks it. */
void tdm__ws_span_take(tdm__wstore *ws, uint32_t sid)
{
    heap_remove(ws, sid);
}

/* Marks a span fired and moves it to its cleanup time (or out of the
 * heap when that is TDM_TIME_MAX). */
void tdm__ws_span_set_fired(tdm__wstore *ws, uint32_t sid)
{
    tdm__ws_span *s = &ws->spans[sid];
    heap_remove(ws, sid);
    s->fired = 1;
    if (s->t_clean != TDM_TIME_MAX) {
        ws->heap[ws->n_heap++] = sid;
        sift_up(ws, ws->n_heap - 1);
    }
}

/* Moves a span's cleanup time: out of the heap and back in at its new
 * due time, the heap grown first when the span was not in it. */
tdm_err tdm__ws_span_set_clean(tdm__wstore *ws, uint32_t sid,
                               tdm_time_ms t_clean)
{
    tdm__ws_span *s = &ws->spans[sid];
    if (s->hpos == TDM__WS_NONE && !heap_room(ws))
        return TDM_ERR_NOMEM;
    heap_remove(ws, sid);
    s->t_clean = t_clean;
    if (span_due(s) != TDM_TIME_MAX) {
        ws->heap[ws->n_heap++] = sid;
        sift_up(ws, ws->n_heap - 1);
    }
    return TDM_OK;
}

/* Every live span: the span map holds each once (id + 1). */
void tdm__ws_span_each(const tdm__wstore *ws, void (*fn)(void *, uint32_t),
                       void *ud)
{
    for (size_t i = 0; ws->smap && i <= ws->spmask; i++)
        if (ws->smap[i])
            fn(ud, ws->smap[i] - 1);
}

/* Frees a span whose cells were all released: heap, map, members. */
void tdm__ws_span_free(tdm__wstore *ws, uint32_t sid)
{
    tdm__ws_span *s = &ws->spans[sid];
    heap_remove(ws, sid);
    /* Out of the map, with a backward shift as in spill_remove. */
    size_t i = (size_t)span_hash(s->start, s->end) & ws->spmask;
    while (ws->smap[i] != sid + 1)
        i = (i + 1) & ws->spmask;
    size_t j = i;
    for (;;) {
        ws->smap[i] = 0;
        for (;;) {
            j = (j + 1) & ws->spmask;
            uint32_t v = ws->smap[j];
            if (!v)
                goto done;
            const tdm__ws_span *o = &ws->spans[v - 1];
            size_t home = (size_t)span_hash(o->start, o->end) & ws->spmask;
            bool stays =
                (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
            if (!stays)
                break;
        }
        ws->smap[i] = ws->smap[j];
        i = j;
    }
done:
    ws->n_members -= s->n;
    s->n = 0;
    s->fired = ws->free_span;
    ws->free_span = sid;
    ws->live_spans--;
}

/* ====================================================================== */
/* Cells                                                                   */
/* ====================================================================== */

/* Grows a span's member list (by doubling); see wstore.h. */
bool tdm__ws_member_grow(tdm__wstore *ws, uint32_t sid)
{
    tdm__ws_span *s = &ws->spans[sid];
    uint32_t ncap = s->cap ? s->cap * 2 : 4;
    if (ncap <= s->cap)
        return false;
    uint32_t *nm = tdm__realloc(s->members, ncap * sizeof *nm);
    if (!nm)
        return false;
    s->members = nm;
    s->cap = ncap;
    return true;
}

/* Adds the cell of (key id, sid), and the key to the span's members
 * when @p member.  Inline when the entry has a free cell, else
 * spilled. */
static tdm__ws_cell *cell_make(tdm__wstore *ws, uint32_t id, uint32_t sid,
                               bool member)
{
    tdm__ws_key *e = tdm__ws_key_at(ws, id);
    tdm__ws_span *s = &ws->spans[sid];
    /* Reserve a spilled cell (when the entry is full) and a member
     * place; member lists grow by doubling. */
    tdm__ws_cell *c = NULL;
    for (uint32_t i = 0; i < ws->n_inline && !c; i++) {
        c = tdm__ws_inline(ws, e, i);
        if (c->span)
            c = NULL;
    }
    bool inline_room = c != NULL;
    if (!inline_room &&
        (e->meta >= UINT32_MAX - TDM__WS_SPILL_ONE || !spill_reserve(ws)))
        return NULL;
    if (member && !tdm__ws_member_reserve(ws, sid))
        return NULL;
    if (inline_room) {
        /* The first free inline cell (span 0). */
        c->span = sid + 1;
        c->fires = 0;
        for (uint32_t k = 0; k < ws->n_vals; k++)
            c->v[k] = 0;
    } else {
        c = &spill_take(ws, id, sid)->c;
        e->meta += TDM__WS_SPILL_ONE;
        ws->adds_spilled++;
    }
    ws->adds++;
    /* Members keep creation order: the owner fires a span's windows in
     * it (as equal-time timers fire in registration order). */
    if (member)
        tdm__ws_member_push(ws, sid, id);
    s->cells++;
    ws->n_cells++;
    return c;
}

/* Adds the cell of (key id, sid) and the key to the span's members. */
tdm__ws_cell *tdm__ws_cell_add(tdm__wstore *ws, uint32_t id, uint32_t sid)
{
    return cell_make(ws, id, sid, true);
}

/* Adds the cell of (key id, sid) only; see wstore.h. */
tdm__ws_cell *tdm__ws_cell_add_bare(tdm__wstore *ws, uint32_t id, uint32_t sid)
{
    return cell_make(ws, id, sid, false);
}

/* Removes a cell and, when it was the key's last, the key. */
void tdm__ws_cell_release(tdm__wstore *ws, uint32_t id, tdm__ws_cell *c)
{
    tdm__ws_key *e = tdm__ws_key_at(ws, id);
    ws->spans[(c->span & ~TDM__WS_SPILL_BIT) - 1].cells--;
    if (c->span & TDM__WS_SPILL_BIT) {
        spill_remove(ws, spill_of(c));
        e->meta -= TDM__WS_SPILL_ONE;
    } else {
        c->span = 0;
    }
    ws->n_cells--;
    tdm__ws_key_drop_if_empty(ws, id);
}
