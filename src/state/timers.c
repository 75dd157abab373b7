/* SPDX-License-Identifier: MIT */
/* timers.c - the timer queue: (time, key id, namespace) triples fired in
 * time order, each triple at most once.
 *
 * Timers live in a node pool indexed by a uint32 id.  A binary min-heap of
 * (time, sequence, node id) orders them; the sequence number makes timers
 * with equal times pop in registration order, so runs are deterministic.
 * An open-addressing table of node ids finds a triple for deduplication
 * and deletion; each node remembers its heap position so that deleting
 * from the middle of the heap is O(log n).
 */
#include <string.h>

#include "state/state.h"

#define NO_NODE UINT32_MAX

typedef struct tnode {
    tdm_time_ms time;
    uint32_t key;
    uint32_t pos;   /* heap position; next free node while free */
    tdm__ns ns;
} tnode;

typedef struct hent {
    tdm_time_ms time;
    uint64_t seq;
    uint32_t node;
} hent;

struct tdm__timers {
    tnode *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t free_node;
    hent *heap;
    uint32_t n_heap, cap_heap;
    uint32_t *tab;     /* node id + 1; 0 = empty */
    size_t mask;
    uint64_t seq;
};

static inline uint64_t timer_hash(tdm_time_ms time, uint32_t key,
                                  tdm__ns ns)
{
    uint64_t h = (uint64_t)time * 0x9e3779b97f4a7c15ULL;
    h ^= (uint64_t)key * 0xc2b2ae3d27d4eb4fULL;
    h = (h ^ (h >> 31)) * 0xbf58476d1ce4e5b9ULL;
    h ^= (uint64_t)ns.a * 0x94d049bb133111ebULL;
    h = (h ^ (h >> 29)) * 0xff51afd7ed558ccdULL;
    h ^= (uint64_t)ns.b * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 32;
    return h;
}

tdm__timers *tdm__timers_new(void)
{
    tdm__timers *t = tdm__calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->free_node = NO_NODE;
    t->mask = 63;
    t->tab = tdm__calloc(t->mask + 1, sizeof *t->tab);
    if (!t->tab) {
        tdm__free(t);
        return NULL;
    }
    return t;
}

static inline bool node_is(const tnode *n, tdm_time_ms time, uint32_t key,
                           tdm__ns ns)
{
    return n->time == time && n->key == key && n->ns.a == ns.a &&
           n->ns.b == ns.b;
}

/* The table position of the triple, or of the empty slot ending its probe
 * run. */
static size_t probe(const tdm__timers *t, tdm_time_ms time, uint32_t key,
                    tdm__ns ns, uint64_t h)
{
    size_t i = (size_t)h & t->mask;
    for (;;) {
        uint32_t v = t->tab[i];
        if (!v || node_is(&t->nodes[v - 1], time, key, ns))
            return i;
        i = (i + 1) & t->mask;
    }
}

static inline size_t home_of(const tdm__timers *t, uint32_t node)
{
    const tnode *n = &t->nodes[node];
    return (size_t)timer_hash(n->time, n->key, n->ns) & t->mask;
}

static bool grow_table(tdm__timers *t)
{
    size_t nmask = t->mask * 2 + 1;
    uint32_t *nt = tdm__calloc(nmask + 1, sizeof *nt);
    if (!nt)
        return false;
    uint32_t *ot = t->tab;
    size_t omask = t->mask;
    t->tab = nt;
    t->mask = nmask;
    for (size_t i = 0; i <= omask; i++) {
        if (!ot[i])
            continue;
        size_t j = home_of(t, ot[i] - 1);
        while (nt[j])
            j = (j + 1) & nmask;
        nt[j] = ot[i];
    }
    tdm__free(ot);
    return true;
}

/* Backward-shift deletion of table position i. */
static void table_delete_at(tdm__timers *t, size_t i)
{
    size_t j = i;
    for (;;) {
        t->tab[i] = 0;
        for (;;) {
            j = (j + 1) & t->mask;
            uint32_t v = t->tab[j];
            if (!v)
                return;
            size_t home = home_of(t, v - 1);
            bool stays = (i <= j) ? (i < home && home <= j)
                                  : (i < home || home <= j);
            if (!stays)
                break;
        }
        t->tab[i] = t->tab[j];
        i = j;
    }
}

static inline bool heap_less(const hent *x, const hent *y)
{
    return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static inline void heap_set(tdm__timers *t, uint32_t pos, hent e)
{
    t->heap[pos] = e;
    t->nodes[e.node].pos = pos;
}

static void sift_up(tdm__timers *t, uint32_t pos)
{
    hent e = t->heap[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 2;
        if (!heap_less(&e, &t->heap[parent]))
            break;
        heap_set(t, pos, t->heap[parent]);
        pos = parent;
    }
    heap_set(t, pos, e);
}

static void sift_down(tdm__timers *t, uint32_t pos)
{
    hent e = t->heap[pos];
    uint32_t n = t->n_heap;
    for (;;) {
        uint32_t c = 2 * pos + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_less(&t->heap[c + 1], &t->heap[c]))
            c++;
        if (!heap_less(&t->heap[c], &e))
            break;
        heap_set(t, pos, t->heap[c]);
        pos = c;
    }
    heap_set(t, pos, e);
}

/* Removes heap position pos, keeping the heap ordered. */
static void heap_remove(tdm__timers *t, uint32_t pos)
{
    uint32_t last = --t->n_heap;
    if (pos == last)
        return;
    hent moved = t->heap[last];
    bool up = heap_less(&moved, &t->heap[pos]);
    heap_set(t, pos, moved);
    if (up)
        sift_up(t, pos);
    else
        sift_down(t, pos);
}

/* Grows the node pool and heap so one more timer fits. */
static bool reserve_one(tdm__timers *t)
{
    if (t->free_node == NO_NODE && t->n_nodes == t->cap_nodes) {
        uint32_t ncap = t->cap_nodes ? t->cap_nodes * 2 : 64;
        if (ncap >= NO_NODE)
            return false;
        tnode *nn = tdm__realloc(t->nodes, (size_t)ncap * sizeof *nn);
        if (!nn)
            return false;
        t->nodes = nn;
        t->cap_nodes = ncap;
    }
    if (t->n_heap == t->cap_heap) {
        uint32_t ncap = t->cap_heap ? t->cap_heap * 2 : 64;
        hent *nh = tdm__realloc(t->heap, (size_t)ncap * sizeof *nh);
        if (!nh)
            return false;
        t->heap = nh;
        t->cap_heap = ncap;
    }
    if ((size_t)(t->n_heap + 1) * 2 > t->mask + 1 && !grow_table(t))
        return false;
    return true;
}

tdm_err tdm__timers_insert(tdm__timers *t, tdm_time_ms time, uint32_t key,
                           tdm__ns ns, bool *added)
{
    uint64_t h = timer_hash(time, key, ns);
    size_t i = probe(t, time, key, ns, h);
    *added = false;
    if (t->tab[i])
        return TDM_OK; /* already registered */
    if (!reserve_one(t))
        return TDM_ERR_NOMEM;
    i = probe(t, time, key, ns, h); /* the table may have grown */
    uint32_t id;
    if (t->free_node != NO_NODE) {
        id = t->free_node;
        t->free_node = t->nodes[id].pos;
    } else {
        id = t->n_nodes++;
    }
    tnode *n = &t->nodes[id];
    n->time = time;
    n->key = key;
    n->ns = ns;
    t->tab[i] = id + 1;
    hent e = { .time = time, .seq = t->seq++, .node = id };
    t->heap[t->n_heap++] = e;
    sift_up(t, t->n_heap - 1);
    *added = true;
    return TDM_OK;
}

tdm_err tdm__timers_add(tdm__timers *t, tdm_time_ms time, uint32_t key,
                        tdm__ns ns)
{
    bool added;
    return tdm__timers_insert(t, time, key, ns, &added);
}

/* Forgets node id found at table position i: heap, table, pool. */
static void remove_node(tdm__timers *t, uint32_t id, size_t i)
{
    heap_remove(t, t->nodes[id].pos);
    table_delete_at(t, i);
    t->nodes[id].pos = t->free_node;
    t->free_node = id;
}

bool tdm__timers_remove(tdm__timers *t, tdm_time_ms time, uint32_t key,
                        tdm__ns ns)
{
    size_t i = probe(t, time, key, ns, timer_hash(time, key, ns));
    if (!t->tab[i])
        return false;
    remove_node(t, t->tab[i] - 1, i);
    return true;
}

void tdm__timers_del(tdm__timers *t, tdm_time_ms time, uint32_t key,
                     tdm__ns ns)
{
    tdm__timers_remove(t, time, key, ns);
}

bool tdm__timers_has(const tdm__timers *t, tdm_time_ms time, uint32_t key,
                     tdm__ns ns)
{
    return t->tab[probe(t, time, key, ns, timer_hash(time, key, ns))] != 0;
}

bool tdm__timers_pop(tdm__timers *t, tdm_time_ms upto, tdm__timer *out)
{
    if (t->n_heap == 0 || t->heap[0].time > upto)
        return false;
    uint32_t id = t->heap[0].node;
    tnode *n = &t->nodes[id];
    out->time = n->time;
    out->key = n->key;
    out->ns = n->ns;
    size_t i = home_of(t, id);
    while (t->tab[i] != id + 1)
        i = (i + 1) & t->mask;
    remove_node(t, id, i);
    return true;
}

tdm_time_ms tdm__timers_peek(const tdm__timers *t)
{
    return t->n_heap ? t->heap[0].time : TDM_TIME_MAX;
}

size_t tdm__timers_count(const tdm__timers *t)
{
    return t->n_heap;
}

size_t tdm__timers_bytes(const tdm__timers *t)
{
    /* Node, heap entry and a half-full table's share per live timer. */
    return (size_t)t->n_heap *
           (sizeof(tnode) + sizeof(hent) + 2 * sizeof(uint32_t));
}

void tdm__timers_destroy(tdm__timers *t)
{
    if (!t)
        return;
    tdm__free(t->nodes);
    tdm__free(t->heap);
    tdm__free(t->tab);
    tdm__free(t);
}
