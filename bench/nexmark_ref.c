/* SPDX-License-Identifier: MIT */
/* nexmark_ref.c - naive references for the NEXMark jobs of bench/nexmark/
 * (NEXMark-W and its V1-rate variant, q5 and its hot items, q7, q8, q9, q11,
 * and the bids q0-q2 pass through):
 * plain loops over the generated events (tdm__nx_event_at, the definition
 * of the stream), grouping by hash table or by sorting, no engine and no
 * watermark: every event counts, which is what the engine must produce
 * when none is late.  bench/run_nexmark.sh and tests/cli/nexmark_*.sh
 * compare the engine's result multisets with these (usage above main).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/nexmark.h"
#include "testhooks.h"

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
    table u = {calloc(t->cap * 2, sizeof(cell)), t->cap * 2, 0};
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

/* Moves the filled cells of @p t to its front, sorted by window then
 * auction; returns how many there are. */
static size_t pack_sorted(table *t)
{
    size_t k = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->c[i].count)
            t->c[k++] = t->c[i];
    qsort(t->c, k, sizeof(cell), by_window_then_auction);
    return k;
}

/* NEXMark-W: bids counted per (auction, tumbling window of @p size). */
static int run_w(const tdm__nx_conf *c, int64_t events, int64_t size)
{
    table t = {calloc(1024, sizeof(cell)), 1024, 0};
    if (!t.c)
        return 1;
    int64_t bids = 0;
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind != TDM__NX_BID)
            continue;
        bids++;
        /* Epoch-aligned tumbling windows; times are positive here. */
        int64_t start = ev.date_time - ev.date_time % size;
        if (add(&t, ev.auction, start) != 0) {
            fprintf(stderr, "nexmark_ref: out of memory\n");
            free(t.c);
            return 1;
        }
    }
    size_t k = pack_sorted(&t);
    for (size_t i = 0; i < k; i++)
        printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
               t.c[i].auction, t.c[i].start, t.c[i].start + size, t.c[i].count);
    fprintf(stderr, "bids %" PRId64 " rows %zu\n", bids, k);
    free(t.c);
    return 0;
}

/* ---- q0, q1, q2: the bids themselves ---- */

/* Every bid as "auction bidder price date_time", in event order: what
 * the pass-through queries q0 (all), q1 (all, plus price * 0.908) and q2
 * (auction % 123 == 0, filtered by the caller) must write. */
static int run_bids(const tdm__nx_conf *c, int64_t events)
{
    int64_t bids = 0;
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind != TDM__NX_BID)
            continue;
        bids++;
        printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n", ev.auction,
               ev.bidder, ev.price, ev.date_time);
    }
    fprintf(stderr, "bids %" PRId64 "\n", bids);
    return 0;
}

/* ---- q5: bids per auction in sliding windows, and the hot items ---- */

/* q5 (@p hot 0): bids counted per (auction, sliding window of @p size
 * every @p slide ms), each bid added to every window containing it, one
 * at a time.  q5hot (@p hot 1): of those counts, per window the largest
 * and every auction having it. */
static int run_q5(const tdm__nx_conf *c, int64_t events, int64_t size,
                  int64_t slide, int hot)
{
    table t = {calloc(1024, sizeof(cell)), 1024, 0};
    if (!t.c)
        goto oom;
    int64_t bids = 0;
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind != TDM__NX_BID)
            continue;
        bids++;
        /* Windows start at multiples of the slide (times are positive
         * here); the last one to contain the bid starts at or before it,
         * the first one more than size before it. */
        int64_t last = ev.date_time - ev.date_time % slide;
        for (int64_t start = last; start > ev.date_time - size; start -= slide)
            if (add(&t, ev.auction, start) != 0)
                goto oom;
    }
    size_t k = pack_sorted(&t), windows = 0, rows = 0;
    for (size_t i = 0; i < k;) {
        /* The window's cells are [i, e). */
        size_t e = i;
        int64_t max = 0;
        while (e < k && t.c[e].start == t.c[i].start) {
            if (t.c[e].count > max)
                max = t.c[e].count;
            e++;
        }
        windows++;
        for (; i < e; i++) {
            if (hot && t.c[i].count != max)
                continue;
            printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
                   t.c[i].auction, t.c[i].start, t.c[i].start + size,
                   t.c[i].count);
            rows++;
        }
    }
    fprintf(stderr, "bids %" PRId64 " windows %zu rows %zu\n", bids, windows,
            rows);
    free(t.c);
    return 0;
oom:
    fprintf(stderr, "nexmark_ref: out of memory\n");
    free(t.c);
    return 1;
}

/* ---- q8: persons x auctions in the same tumbling window ---- */

/* A person (key id) or an auction (key seller), with its window. */
typedef struct side {
    int64_t start, key, id;
    char name[48]; /* persons only */
} side;

/* A growable array of sides. */
typedef struct sides {
    side *v;
    size_t n, cap;
} sides;

static side *push(sides *s)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        side *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return NULL;
        s->v = v;
        s->cap = cap;
    }
    return &s->v[s->n++];
}

static int by_window_key(const side *x, const side *y)
{
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

static int by_window_key_id(const void *a, const void *b)
{
    const side *x = a, *y = b;
    int o = by_window_key(x, y);
    return o ? o : (x->id > y->id) - (x->id < y->id);
}

/* Groups both sides by (window, key) by sorting, then prints the cross
 * product of every group present on both sides. */
static int run_q8(const tdm__nx_conf *c, int64_t events, int64_t size)
{
    sides p = {0}, a = {0};
    int rc = 1;
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind == TDM__NX_BID)
            continue;
        side *s = push(ev.kind == TDM__NX_PERSON ? &p : &a);
        if (!s)
            goto fail;
        s->start = ev.date_time - ev.date_time % size;
        s->id = ev.id;
        s->key = ev.kind == TDM__NX_PERSON ? ev.id : ev.seller;
        s->name[0] = '\0';
        if (ev.kind == TDM__NX_PERSON) {
            char buf[512];
            tdm__nx_strings str;
            tdm__nx_strings_of(&ev, buf, sizeof buf, &str);
            snprintf(s->name, sizeof s->name, "%s", str.name);
        }
    }
    if (p.n)
        qsort(p.v, p.n, sizeof(side), by_window_key_id);
    if (a.n)
        qsort(a.v, a.n, sizeof(side), by_window_key_id);
    size_t i = 0, j = 0, pairs = 0, rows = 0;
    while (i < p.n && j < a.n) {
        int o = by_window_key(&p.v[i], &a.v[j]);
        if (o < 0) {
            i++;
            continue;
        }
        if (o > 0) {
            j++;
            continue;
        }
        /* The groups [i, ie) and [j, je) share window and key. */
        size_t ie = i, je = j;
        while (ie < p.n && !by_window_key(&p.v[ie], &p.v[i]))
            ie++;
        while (je < a.n && !by_window_key(&a.v[je], &a.v[j]))
            je++;
        for (size_t x = i; x < ie; x++) {
            rows++;
            for (size_t y = j; y < je; y++, pairs++)
                printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %s\n",
                       p.v[x].id, a.v[y].id, p.v[x].start, p.v[x].start + size,
                       p.v[x].name);
        }
        i = ie;
        j = je;
    }
    fprintf(stderr, "persons %zu auctions %zu pairs %zu rows %zu\n", p.n, a.n,
            pairs, rows);
    rc = 0;
fail:
    if (rc)
        fprintf(stderr, "nexmark_ref: out of memory\n");
    free(p.v);
    free(a.v);
    return rc;
}

/* ---- q11: bids per bidder per session ---- */

typedef struct bid {
    int64_t bidder, t;
} bid;

static int by_bidder_time(const void *a, const void *b)
{
    const bid *x = a, *y = b;
    if (x->bidder != y->bidder)
        return x->bidder < y->bidder ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/* Sorts all bids by (bidder, time) and cuts each bidder's run where two
 * consecutive bids lie more than @p gap apart. */
static int run_q11(const tdm__nx_conf *c, int64_t events, int64_t gap)
{
    size_t n = 0, cap = 1024, rows = 0;
    bid *v = malloc(cap * sizeof *v);
    if (!v)
        goto oom;
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind != TDM__NX_BID)
            continue;
        if (n == cap) {
            bid *w = realloc(v, cap * 2 * sizeof *v);
            if (!w)
                goto oom;
            v = w;
            cap *= 2;
        }
        v[n].bidder = ev.bidder;
        v[n++].t = ev.date_time;
    }
    qsort(v, n, sizeof *v, by_bidder_time);
    for (size_t i = 0; i < n;) {
        size_t e = i + 1;
        while (e < n && v[e].bidder == v[i].bidder &&
               v[e].t - v[e - 1].t <= gap)
            e++;
        printf("%" PRId64 " %" PRId64 " %" PRId64 " %zu\n", v[i].bidder, v[i].t,
               v[e - 1].t + gap, e - i);
        rows++;
        i = e;
    }
    fprintf(stderr, "bids %zu rows %zu\n", n, rows);
    free(v);
    return 0;
oom:
    fprintf(stderr, "nexmark_ref: out of memory\n");
    free(v);
    return 1;
}

/* ---- q7: the highest bids of each tumbling window ---- */

/* Two passes over the stream: the largest price of each tumbling window
 * of @p size (windows are numbered from the first bid's), then every bid
 * whose price is its window's largest. */
static int run_q7(const tdm__nx_conf *c, int64_t events, int64_t size)
{
    int64_t *max = NULL, first = -1, n = 0, bids = 0, rows = 0;
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind != TDM__NX_BID)
            continue;
        bids++;
        int64_t start = ev.date_time - ev.date_time % size;
        if (first < 0)
            first = start;
        if (start < first) {
            fprintf(stderr, "nexmark_ref: q7 needs the first bid's window "
                            "to be the earliest\n");
            free(max);
            return 1;
        }
        int64_t w = (start - first) / size;
        if (w >= n) {
            int64_t *m = realloc(max, (size_t)(w + 1) * sizeof *m);
            if (!m)
                goto oom;
            for (int64_t k = n; k <= w; k++)
                m[k] = -1;
            max = m;
            n = w + 1;
        }
        if (ev.price > max[w])
            max[w] = ev.price;
    }
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind != TDM__NX_BID)
            continue;
        int64_t start = ev.date_time - ev.date_time % size;
        if (ev.price != max[(start - first) / size])
            continue;
        printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
               " %" PRId64 "\n",
               ev.auction, ev.price, ev.bidder, ev.date_time, start,
               start + size);
        rows++;
    }
    fprintf(stderr, "bids %" PRId64 " windows %" PRId64 " rows %" PRId64 "\n",
            bids, n, rows);
    free(max);
    return 0;
oom:
    fprintf(stderr, "nexmark_ref: out of memory\n");
    free(max);
    return 1;
}

/* ---- q9: the winning bid of each auction ---- */

/* An auction and what its valid bids add up to. */
typedef struct lot {
    int64_t id, category, date_time, expires;
    int64_t price, bids, first, last; /* bids 0: none valid */
} lot;

/* A first pass keeps the auctions in event order, which is id order; a
 * second pass finds each bid's auction by binary search (a bid may name
 * an auction generated after it: Beam's generator picks among the
 * auctions in flight plus a few ahead, and a bid in the same millisecond
 * before its auction is valid) and counts it when its time lies in
 * [date_time, expires] (both inclusive).  A lot's bids span at most
 * expires - date_time, less than @p gap, so they form one session: from
 * the first valid bid to the last plus the gap. */
static int run_q9(const tdm__nx_conf *c, int64_t events, int64_t gap)
{
    lot *v = NULL;
    size_t n = 0, cap = 0, rows = 0;
    int64_t bids = 0, valid = 0;
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind != TDM__NX_AUCTION)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            lot *w = realloc(v, cap * sizeof *v);
            if (!w)
                goto oom;
            v = w;
        }
        v[n++] = (lot){.id = ev.id,
                       .category = ev.category,
                       .date_time = ev.date_time,
                       .expires = ev.expires};
    }
    for (int64_t i = 0; i < events; i++) {
        tdm__nx_event ev;
        tdm__nx_event_at(c, i, &ev);
        if (ev.kind != TDM__NX_BID)
            continue;
        bids++;
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (v[mid].id < ev.auction)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == n || v[lo].id != ev.auction)
            continue;
        lot *a = &v[lo];
        if (ev.date_time < a->date_time || ev.date_time > a->expires)
            continue;
        valid++;
        if (a->bids == 0 || ev.price > a->price)
            a->price = ev.price;
        if (a->bids == 0 || ev.date_time < a->first)
            a->first = ev.date_time;
        if (a->bids == 0 || ev.date_time > a->last)
            a->last = ev.date_time;
        a->bids++;
    }
    for (size_t i = 0; i < n; i++) {
        if (!v[i].bids)
            continue;
        if (v[i].last - v[i].first > gap) {
            fprintf(stderr,
                    "nexmark_ref: auction %" PRId64 " lives longer "
                    "than the gap\n",
                    v[i].id);
            free(v);
            return 1;
        }
        printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
               " %" PRId64 "\n",
               v[i].id, v[i].category, v[i].price, v[i].bids, v[i].first,
               v[i].last + gap);
        rows++;
    }
    fprintf(stderr,
            "auctions %zu bids %" PRId64 " valid %" PRId64 " rows %zu\n", n,
            bids, valid, rows);
    free(v);
    return 0;
oom:
    fprintf(stderr, "nexmark_ref: out of memory\n");
    free(v);
    return 1;
}

/*   nexmark_ref [QUERY] EVENTS [RATE_PER_S] [SIZE_MS] [OOO_GROUP] [SLIDE_MS]
 *
 * QUERY is w (the default when the first argument is a number, NEXMark-W's
 * original command line), q5, q5hot, q7, q8, q9, q11 or bids; defaults
 * 50,000,000 events, 100,000 /s, 10,000 ms, 1, 2,000 ms.  RATE_PER_S is the
 * event-time rate (10,000,000 for the V1-rate stress: w at that rate).
 * SIZE_MS is the tumbling window (w, q7, q8), the sliding window (q5,
 * q5hot, which slide by SLIDE_MS) or the session gap (q9, q11).  Rows go to
 * stdout, one line each, a summary to stderr: w      auction window_start
 * window_end count   "bids N rows M" (sorted by window then auction) q5 auction
 * window_start window_end count   "bids N windows W rows M" q5hot  auction
 * window_start window_end count   "bids N windows W rows M" q7     auction
 * price bidder date_time window_start window_end "bids N windows W rows M" q8
 * person auction window_start window_end name "persons P auctions A pairs K
 * rows R" q9     auction category price bids session_start session_end
 *          "auctions A bids N valid V rows M"
 *   q11    bidder session_start session_end count  "bids N rows M"
 *   bids   auction bidder price date_time          "bids N"
 *          (every bid in event order: q0-q2's rows before their
 *          filter or computed field)
 * q5 counts each auction's bids in every window [s, s + size) with s a
 * multiple of the slide that holds at least one of them (so a bid counts
 * in size / slide windows when the slide divides the size, windows before
 * the first bid and after the last included); q5hot keeps, per window,
 * the rows of q5 whose count is the window's largest (several on a tie).
 * q8 is the window join persons x auctions on person.id = auction.seller
 * within one tumbling window: one line per (person, auction) pair, R the
 * distinct (person, window) rows of NEXMark's q8.  q7 prints every bid
 * whose price is the largest of its tumbling window (several on a tie).
 * q9 prints, per auction with at least one bid in [date_time, expires]
 * (both inclusive), the largest such price, how many there are, and the
 * session those bids form (first bid, last bid + gap).  q11 counts each
 * bidder's bids per session: bids at t1 <= t2 share one when t2 - t1 <=
 * gap (touching windows [t, t + gap) merge), a session ends gap after its
 * last bid.  No record is late when the out-of-order group is small (the
 * generator's times then never fall behind max - 4 s).  Exit code 0, 1 on
 * out of memory, 2 on bad arguments.
 */
int main(int argc, char **argv)
{
    /* An optional query name first; a number there is NEXMark-W's
     * original command line. */
    const char *q = "w";
    if (argc > 1 && (argv[1][0] < '0' || argv[1][0] > '9')) {
        q = argv[1];
        argc--;
        argv++;
    }
    int64_t events = argc > 1 ? strtoll(argv[1], NULL, 10) : 50000000;
    tdm__nx_conf c;
    tdm__nx_conf_default(&c);
    c.rate = argc > 2 ? strtoll(argv[2], NULL, 10) : 100000;
    int64_t size = argc > 3 ? strtoll(argv[3], NULL, 10) : 10000;
    c.ooo_group = argc > 4 ? strtoll(argv[4], NULL, 10) : 1;
    int64_t slide = argc > 5 ? strtoll(argv[5], NULL, 10) : 2000;
    int q5 = !strcmp(q, "q5"), q5hot = !strcmp(q, "q5hot");
    int known = !strcmp(q, "w") || q5 || q5hot || !strcmp(q, "q7") ||
                !strcmp(q, "q8") || !strcmp(q, "q9") || !strcmp(q, "q11") ||
                !strcmp(q, "bids");
    if (!known || events < 0 || c.rate <= 0 || size <= 0 || c.ooo_group <= 0 ||
        slide <= 0 || ((q5 || q5hot) && slide > size)) {
        fprintf(stderr, "usage: nexmark_ref [w|q5|q5hot|q7|q8|q9|q11|bids] "
                        "EVENTS [RATE] [SIZE_MS] [OOO_GROUP] [SLIDE_MS]\n");
        return 2;
    }
    if (!strcmp(q, "bids"))
        return run_bids(&c, events);
    if (q5 || q5hot)
        return run_q5(&c, events, size, slide, q5hot);
    if (!strcmp(q, "q7"))
        return run_q7(&c, events, size);
    if (!strcmp(q, "q8"))
        return run_q8(&c, events, size);
    if (!strcmp(q, "q9"))
        return run_q9(&c, events, size);
    if (!strcmp(q, "q11"))
        return run_q11(&c, events, size);
    return run_w(&c, events, size);
}
