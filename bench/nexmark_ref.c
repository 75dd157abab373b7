/* SPDX-License-Identifier: MIT */
/* nexmark_ref.c - the naive reference for NEXMark-W: one loop over the
 * generated events that counts bids per (auction, tumbling window) in a
 * hash table, then prints every (auction, window_start, window_end,
 * count) sorted by window then auction.  No engine, no watermark: every
 * bid counts, which is what the engine must produce when no bid is late
 * (the generator's timestamps never fall behind max - 4 s by more than
 * the out-of-order group allows).  Used by bench/run_nexmark.sh to check
 * the engine's result multiset.
 *
 *   nexmark_ref EVENTS [RATE_PER_S] [WINDOW_MS] [OOO_GROUP]
 * (defaults: 50,000,000 events, 100,000 /s, 10,000 ms, 1); prints the
 * rows on stdout and "bids N rows M" on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/nexmark.h"

typedef struct cell {
    int64_t auction, start, count; /* count 0: empty slot */
} cell;

typedef struct table {
    cell *c;
    size_t cap, n;
} table;

static uint64_t mix(int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ULL ^ (uint64_t)b;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

static int grow(table *t)
{
    table u = { calloc(t->cap * 2, sizeof(cell)), t->cap * 2, 0 };
    if (!u.c)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->c[i].count)
            continue;
        size_t j = mix(t->c[i].auction, t->c[i].start) & (u.cap - 1);
        while (u.c[j].count)
            j = (j + 1) & (u.cap - 1);
        u.c[j] = t->c[i];
        u.n++;
    }
    free(t->c);
    *t = u;
    return 0;
}

static int add(table *t, int64_t auction, int64_t start)
{
    if ((t->n + 1) * 2 > t->cap && grow(t) != 0)
        return -1;
    size_t j = mix(auction, start) & (t->cap - 1);
    while (t->c[j].count &&
           (t->c[j].auction != auction || t->c[j].start != start))
        j = (j + 1) & (t->cap - 1);
    if (!t->c[j].count) {
        t->c[j].auction = auction;
        t->c[j].start = start;
        t->n++;
    }
    t->c[j].count++;
    return 0;
}

static int by_window_then_auction(const void *a, const void *b)
{
    const cell *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->auction > y->auction) - (x->auction < y->auction);
}

int main(int argc, char **argv)
{
    int64_t events = argc > 1 ? strtoll(argv[1], NULL, 10) : 50000000;
    tdm__nx_conf c;
    tdm__nx_conf_default(&c);
    c.rate = argc > 2 ? strtoll(argv[2], NULL, 10) : 100000;
    int64_t size = argc > 3 ? strtoll(argv[3], NULL, 10) : 10000;
    c.ooo_group = argc > 4 ? strtoll(argv[4], NULL, 10) : 1;
    if (events < 0 || c.rate <= 0 || size <= 0 || c.ooo_group <= 0) {
        fprintf(stderr, "usage: nexmark_ref EVENTS [RATE] [WINDOW_MS] "
                        "[OOO_GROUP]\n");
        return 2;
    }
    table t = { calloc(1024, sizeof(cell)), 1024, 0 };
    if (!t.c)
        return 1;
    int64_t bids = 0;
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(&c, i, &ev);
        if (ev.kind != TDM__NX_BID)
            continue;
        bids++;
        /* Epoch-aligned tumbling windows; times are positive here. */
        int64_t start = ev.date_time - ev.date_time % size;
        if (add(&t, ev.auction, start) != 0) {
            fprintf(stderr, "nexmark_ref: out of memory\n");
            return 1;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < t.cap; i++)
        if (t.c[i].count)
            t.c[k++] = t.c[i];
    qsort(t.c, k, sizeof(cell), by_window_then_auction);
    for (size_t i = 0; i < k; i++)
        printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
               t.c[i].auction, t.c[i].start, t.c[i].start + size,
               t.c[i].count);
    fprintf(stderr, "bids %" PRId64 " rows %zu\n", bids, k);
    free(t.c);
    return 0;
}
