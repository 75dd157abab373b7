/* SPDX-License-Identifier: MIT */
/* timers.c - the timer queue: (time, key id, namespace) triples fired in
 * time order, each triple at most once.
 *
 * Window operators register many timers at few distinct times (every
 * key's window ends at the same instant), so timers are grouped in one
 * bucket per distinct time: a FIFO list of timer nodes.  A small binary
 * heap orders the buckets; a hash table from time to bucket finds the
 * bucket to append to; an open-addressing table of node ids finds a
 * triple for deduplication and deletion.  Timers with equal times pop in
 * registration order, so runs are deterministic, and popping or deleting
 * costs O(1) apart from the rare bucket heap update.
 */
#include <string.h>

#include "state/state.h"
#include "testhooks.h"

#define NIL UINT32_MAX

typedef struct tnode {
    tdm_time_ms time;
    tdm__ns ns;
    uint32_t key;
    uint32_t next, prev; /* bucket list; next is the free link when free */
    uint32_t bucket;
} tnode;

typedef struct tbucket {
    tdm_time_ms time;
    uint32_t head, tail; /* node ids; head is the free link when free */
    uint32_t hpos;       /* position in the heap */
} tbucket;

/* A growable pool of fixed-size items with a free list, indexed by id. */
typedef struct pool {
    void *items;
    uint32_t n, cap; /* ids handed out so far, capacity */
    uint32_t free_head;
} pool;

struct tdm__timers {
    pool nodes;     /* tnode */
    pool buckets;   /* tbucket */
    uint32_t *ntab; /* node id + 1 by triple hash; 0 = empty */
    size_t nmask;
    uint32_t *btab; /* bucket id + 1 by time hash; 0 = empty */
    size_t bmask;
    uint32_t *heap; /* bucket ids, ordered by time */
    uint32_t n_heap, cap_heap;
    uint32_t n_timers;
    uint32_t n_buckets;
    uint32_t last_bucket; /* the bucket last appended to (or NIL) */
};

#define NODE(t, id) (((tnode *)(t)->nodes.items)[id])
#define BUCKET(t, id) (((tbucket *)(t)->buckets.items)[id])

static inline uint64_t timer_hash(tdm_time_ms time, uint32_t key, tdm__ns ns)
{
    uint64_t h = tdm__hash_start(32, TDM__HASH_TABLE);
    h = tdm__hash_step(tdm__hash_step(h, (uint64_t)time), key);
    return tdm__hash_last(tdm__hash_step(h, (uint64_t)ns.a), (uint64_t)ns.b);
}

static inline uint64_t time_hash(tdm_time_ms time)
{
    return tdm__hash_word((uint64_t)time);
}

/* ---- Pools ---- */

/* Makes sure one more item can be taken; false on OOM. */
static bool pool_reserve(pool *p, size_t size)
{
    if (p->free_head != NIL || p->n < p->cap)
        return true;
    uint32_t ncap = p->cap ? p->cap * 2 : 64;
    if (ncap >= NIL)
        return false;
    void *ni = tdm__realloc(p->items, (size_t)ncap * size);
    if (!ni)
        return false;
    p->items = ni;
    p->cap = ncap;
    return true;
}

/* ---- Tables (linear probing, backward-shift deletion) ---- */

static bool table_grow(uint32_t **tab, size_t *mask,
                       uint64_t (*home)(const tdm__timers *, uint32_t),
                       const tdm__timers *t)
{
    size_t nmask = *mask * 2 + 1;
    uint32_t *nt = tdm__calloc(nmask + 1, sizeof *nt);
    if (!nt)
        return false;
    for (size_t i = 0; i <= *mask; i++) {
        uint32_t v = (*tab)[i];
        if (!v)
            continue;
        size_t j = (size_t)home(t, v - 1) & nmask;
        while (nt[j])
            j = (j + 1) & nmask;
        nt[j] = v;
    }
    tdm__free(*tab);
    *tab = nt;
    *mask = nmask;
    return true;
}

static void table_delete_at(uint32_t *tab, size_t mask, size_t i,
                            uint64_t (*home)(const tdm__timers *, uint32_t),
                            const tdm__timers *t)
{
    size_t j = i;
    for (;;) {
        tab[i] = 0;
        for (;;) {
            j = (j + 1) & mask;
            uint32_t v = tab[j];
            if (!v)
                return;
            size_t h = (size_t)home(t, v - 1) & mask;
            /* The entry at j may fill the hole at i unless its home lies
             * cyclically in (i, j]. */
            bool stays = (i <= j) ? (i < h && h <= j) : (i < h || h <= j);
            if (!stays)
                break;
        }
        tab[i] = tab[j];
        i = j;
    }
}

static uint64_t node_home(const tdm__timers *t, uint32_t id)
{
    const tnode *n = &NODE(t, id);
    return timer_hash(n->time, n->key, n->ns);
}

static uint64_t bucket_home(const tdm__timers *t, uint32_t id)
{
    return time_hash(BUCKET(t, id).time);
}

/* ---- The bucket heap ---- */

static inline bool bucket_less(const tdm__timers *t, uint32_t a, uint32_t b)
{
    return BUCKET(t, a).time < BUCKET(t, b).time;
}

static inline void heap_set(tdm__timers *t, uint32_t pos, uint32_t b)
{
    t->heap[pos] = b;
    BUCKET(t, b).hpos = pos;
}

static void sift_up(tdm__timers *t, uint32_t pos)
{
    uint32_t b = t->heap[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 2;
        if (!bucket_less(t, b, t->heap[parent]))
            break;
        heap_set(t, pos, t->heap[parent]);
        pos = parent;
    }
    heap_set(t, pos, b);
}

static void sift_down(tdm__timers *t, uint32_t pos)
{
    uint32_t b = t->heap[pos];
    for (;;) {
        uint32_t c = 2 * pos + 1;
        if (c >= t->n_heap)
            break;
        if (c + 1 < t->n_heap && bucket_less(t, t->heap[c + 1], t->heap[c]))
            c++;
        if (!bucket_less(t, t->heap[c], b))
            break;
        heap_set(t, pos, t->heap[c]);
        pos = c;
    }
    heap_set(t, pos, b);
}

/* Removes an empty bucket from the heap, the time table and the pool. */
static void bucket_free(tdm__timers *t, uint32_t b)
{
    uint32_t pos = BUCKET(t, b).hpos;
    uint32_t last = --t->n_heap;
    if (pos != last) {
        uint32_t moved = t->heap[last];
        bool up = bucket_less(t, moved, t->heap[pos]);
        heap_set(t, pos, moved);
        if (up)
            sift_up(t, pos);
        else
            sift_down(t, pos);
    }
    size_t i = (size_t)time_hash(BUCKET(t, b).time) & t->bmask;
    while (t->btab[i] != b + 1)
        i = (i + 1) & t->bmask;
    table_delete_at(t->btab, t->bmask, i, bucket_home, t);
    BUCKET(t, b).head = t->buckets.free_head;
    t->buckets.free_head = b;
    t->n_buckets--;
    if (t->last_bucket == b)
        t->last_bucket = NIL;
}

/* Finds or creates the bucket of @p time; NIL on OOM. */
static uint32_t bucket_of(tdm__timers *t, tdm_time_ms time)
{
    if (t->last_bucket != NIL && BUCKET(t, t->last_bucket).time == time)
        return t->last_bucket;
    size_t i = (size_t)time_hash(time) & t->bmask;
    for (;;) {
        uint32_t v = t->btab[i];
        if (!v)
            break;
        if (BUCKET(t, v - 1).time == time) {
            t->last_bucket = v - 1;
            return v - 1;
        }
        i = (i + 1) & t->bmask;
    }
    /* A new distinct time: reserve everything first. */
    if (!pool_reserve(&t->buckets, sizeof(tbucket)))
        return NIL;
    if (t->n_heap == t->cap_heap) {
        uint32_t ncap = t->cap_heap ? t->cap_heap * 2 : 16;
        uint32_t *nh = tdm__realloc(t->heap, (size_t)ncap * sizeof *nh);
        if (!nh)
            return NIL;
        t->heap = nh;
        t->cap_heap = ncap;
    }
    if ((size_t)(t->n_buckets + 1) * 2 > t->bmask + 1) {
        if (!table_grow(&t->btab, &t->bmask, bucket_home, t))
            return NIL;
        i = (size_t)time_hash(time) & t->bmask;
        while (t->btab[i])
            i = (i + 1) & t->bmask;
    }
    uint32_t b;
    if (t->buckets.free_head != NIL) {
        b = t->buckets.free_head;
        t->buckets.free_head = BUCKET(t, b).head;
    } else {
        b = t->buckets.n++;
    }
    tbucket *bk = &BUCKET(t, b);
    bk->time = time;
    bk->head = bk->tail = NIL;
    t->btab[i] = b + 1;
    t->n_buckets++;
    t->heap[t->n_heap++] = b;
    sift_up(t, t->n_heap - 1);
    t->last_bucket = b;
    return b;
}

/* ---- Public operations ---- */

/* Creates an empty queue.  Returns NULL on OOM. */
tdm__timers *tdm__timers_new(void)
{
    tdm__timers *t = tdm__calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->nodes.free_head = NIL;
    t->buckets.free_head = NIL;
    t->last_bucket = NIL;
    t->nmask = 63;
    t->bmask = 15;
    t->ntab = tdm__calloc(t->nmask + 1, sizeof *t->ntab);
    t->btab = tdm__calloc(t->bmask + 1, sizeof *t->btab);
    if (!t->ntab || !t->btab) {
        tdm__timers_destroy(t);
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

/* The node-table position of the triple, or of the empty slot ending its
 * probe run. */
static size_t probe(const tdm__timers *t, tdm_time_ms time, uint32_t key,
                    tdm__ns ns, uint64_t h)
{
    size_t i = (size_t)h & t->nmask;
    for (;;) {
        uint32_t v = t->ntab[i];
        if (!v || node_is(&NODE(t, v - 1), time, key, ns))
            return i;
        i = (i + 1) & t->nmask;
    }
}

/* Registers (time, key, ns) unless present (*added says
 * which), appending it to its time's bucket.  Everything that can fail
 * is reserved first: TDM_ERR_NOMEM leaves the queue unchanged. */
tdm_err tdm__timers_insert(tdm__timers *t, tdm_time_ms time, uint32_t key,
                           tdm__ns ns, bool *added)
{
    uint64_t h = timer_hash(time, key, ns);
    size_t i = probe(t, time, key, ns, h);
    *added = false;
    if (t->ntab[i])
        return TDM_OK; /* already registered */
    /* Reserve node space and table room before touching anything. */
    if (!pool_reserve(&t->nodes, sizeof(tnode)))
        return TDM_ERR_NOMEM;
    if ((size_t)(t->n_timers + 1) * 2 > t->nmask + 1) {
        if (!table_grow(&t->ntab, &t->nmask, node_home, t))
            return TDM_ERR_NOMEM;
        i = probe(t, time, key, ns, h);
    }
    uint32_t b = bucket_of(t, time);
    if (b == NIL)
        return TDM_ERR_NOMEM;
    uint32_t id;
    if (t->nodes.free_head != NIL) {
        id = t->nodes.free_head;
        t->nodes.free_head = NODE(t, id).next;
    } else {
        id = t->nodes.n++;
    }
    tnode *n = &NODE(t, id);
    n->time = time;
    n->key = key;
    n->ns = ns;
    n->bucket = b;
    n->next = NIL;
    tbucket *bk = &BUCKET(t, b);
    n->prev = bk->tail;
    if (bk->tail != NIL)
        NODE(t, bk->tail).next = id;
    else
        bk->head = id;
    bk->tail = id;
    t->ntab[i] = id + 1;
    t->n_timers++;
    *added = true;
    return TDM_OK;
}

/* tdm__timers_insert without the "added" answer. */
tdm_err tdm__timers_add(tdm__timers *t, tdm_time_ms time, uint32_t key,
                        tdm__ns ns)
{
    bool added;
    return tdm__timers_insert(t, time, key, ns, &added);
}

/* Forgets node id found at node-table position i: its bucket (freed when
 * empty), the table, the pool. */
static void remove_node(tdm__timers *t, uint32_t id, size_t i)
{
    tnode *n = &NODE(t, id);
    uint32_t b = n->bucket;
    tbucket *bk = &BUCKET(t, b);
    if (n->prev != NIL)
        NODE(t, n->prev).next = n->next;
    else
        bk->head = n->next;
    if (n->next != NIL)
        NODE(t, n->next).prev = n->prev;
    else
        bk->tail = n->prev;
    table_delete_at(t->ntab, t->nmask, i, node_home, t);
    n->next = t->nodes.free_head;
    t->nodes.free_head = id;
    t->n_timers--;
    if (bk->head == NIL)
        bucket_free(t, b);
}

/* Deletes (time, key, ns); returns whether it was there. */
bool tdm__timers_remove(tdm__timers *t, tdm_time_ms time, uint32_t key,
                        tdm__ns ns)
{
    size_t i = probe(t, time, key, ns, timer_hash(time, key, ns));
    if (!t->ntab[i])
        return false;
    remove_node(t, t->ntab[i] - 1, i);
    return true;
}

/* Deletes (time, key, ns) if present. */
void tdm__timers_del(tdm__timers *t, tdm_time_ms time, uint32_t key, tdm__ns ns)
{
    tdm__timers_remove(t, time, key, ns);
}

/* True when (time, key, ns) is registered. */
bool tdm__timers_has(const tdm__timers *t, tdm_time_ms time, uint32_t key,
                     tdm__ns ns)
{
    return t->ntab[probe(t, time, key, ns, timer_hash(time, key, ns))] != 0;
}

/* Takes the earliest timer (first registered among equal times)
 * when its time is <= upto.  Returns false when there is none. */
bool tdm__timers_pop(tdm__timers *t, tdm_time_ms upto, tdm__timer *out)
{
    if (t->n_heap == 0)
        return false;
    tbucket *bk = &BUCKET(t, t->heap[0]);
    if (bk->time > upto)
        return false;
    uint32_t id = bk->head;
    const tnode *n = &NODE(t, id);
    out->time = n->time;
    out->key = n->key;
    out->ns = n->ns;
    size_t i = (size_t)timer_hash(n->time, n->key, n->ns) & t->nmask;
    while (t->ntab[i] != id + 1)
        i = (i + 1) & t->nmask;
    remove_node(t, id, i);
    return true;
}

/* Every timer, bucket by bucket, each bucket in pop order (state.h). */
void tdm__timers_each(const tdm__timers *t,
                      void (*fn)(void *ud, const tdm__timer *tm, uint32_t rank),
                      void *ud)
{
    for (uint32_t h = 0; h < t->n_heap; h++) {
        uint32_t rank = 0;
        for (uint32_t id = BUCKET(t, t->heap[h]).head; id != NIL;
             id = NODE(t, id).next) {
            const tnode *n = &NODE(t, id);
            tdm__timer tm = {n->time, n->key, n->ns};
            fn(ud, &tm, rank++);
        }
    }
}

/* The earliest time, TDM_TIME_MAX when empty. */
tdm_time_ms tdm__timers_peek(const tdm__timers *t)
{
    return t->n_heap ? BUCKET(t, t->heap[0]).time : TDM_TIME_MAX;
}

/* Number of registered timers. */
size_t tdm__timers_count(const tdm__timers *t)
{
    return t->n_timers;
}

/* Bytes held by live timers and their time buckets. */
size_t tdm__timers_bytes(const tdm__timers *t)
{
    /* A node and a half-full table's share per live timer, plus the
     * buckets of the distinct times. */
    return (size_t)t->n_timers * (sizeof(tnode) + 2 * sizeof(uint32_t)) +
           (size_t)t->n_buckets * (sizeof(tbucket) + 3 * sizeof(uint32_t));
}

/* Frees the queue; NULL is a no-op. */
void tdm__timers_destroy(tdm__timers *t)
{
    if (!t)
        return;
    tdm__free(t->nodes.items);
    tdm__free(t->buckets.items);
    tdm__free(t->ntab);
    tdm__free(t->btab);
    tdm__free(t->heap);
    tdm__free(t);
}
