/* SPDX-License-Identifier: MIT */
/* nexmark.c - the NEXMark generator's rules (nexmark.h): event numbering
 * and kinds, the id arithmetic that fixes key cardinality, skew and join
 * selectivity, prices, event times and the perfect watermark, and the
 * strings of persons, auctions and bids.
 *
 * Randomness: a splitmix64 stream seeded with the event id (Beam seeds
 * java.util.Random per event the same way), so an event is a pure
 * function of its number.  Numbers come from one stream and strings from
 * a second one, so asking for an event's strings never changes its ids.
 *
 * tdm__nx_event_at is the definition of the stream.  The bulk path,
 * tdm__nx_fill (the source's), gives the same values bit for bit: it
 * writes the fields asked for straight into the caller's columns (rows),
 * without the per-event divisions and the draws that are not needed,
 * steps over the kinds not kept arithmetically and computes bids without
 * branches on their draws.  tests/unit/test_nexmark.c holds it to the
 * definition.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "connect/nexmark.h"
#include "testhooks.h"

/* ---- A small deterministic random stream ---- */

typedef struct nx_rng {
    uint64_t s;
} nx_rng;

/* The stream's increment: draw k of a stream mixes seed + k * this. */
#define NX_GOLDEN TDM__HASH_GOLDEN

static uint64_t rng_next(nx_rng *r)
{
    return tdm__hash_splitmix64(r->s += NX_GOLDEN);
}

static void rng_seed(nx_rng *r, int64_t event_id, uint64_t stream)
{
    r->s = (uint64_t)event_id * 0xd1342543de82ef95ULL ^ stream;
    (void)rng_next(r);
}

/* A uniform integer in [0, n) (n > 0): the high half of a 64 x 64-bit
 * product, so no modulo bias worth measuring and no division. */
static int64_t rng_int(nx_rng *r, int64_t n)
{
    if (n <= 1)
        return 0;
    return (int64_t)(((__uint128_t)rng_next(r) * (uint64_t)n) >> 64);
}

/* Moves @p r past a draw of rng_int(r, n) without computing it: the
 * state is a counter, and rng_int draws exactly when n > 1.  The draws
 * after it are then those of rng_int's caller. */
static inline void rng_skip_int(nx_rng *r, int64_t n)
{
    if (n > 1)
        r->s += NX_GOLDEN;
}

/* Moves @p r past one rng_next (or rng_unit) draw. */
static inline void rng_skip(nx_rng *r)
{
    r->s += NX_GOLDEN;
}

/* A uniform double in [0, 1). */
static double rng_unit(nx_rng *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- Configuration and time ---- */

void tdm__nx_conf_default(tdm__nx_conf *c)
{
    memset(c, 0, sizeof *c);
    c->rate = 10000;
    c->base_time = 1436918400000LL; /* 2015-07-15T00:00:00Z */
    c->ooo_group = 1;
    c->hot_auction_ratio = 2;
    c->hot_bidders_ratio = 4;
    c->hot_sellers_ratio = 4;
    c->in_flight_auctions = 100;
    c->active_people = 1000;
}

tdm_time_ms tdm__nx_time(const tdm__nx_conf *c, int64_t n)
{
    /* The common case in 64 bits (a 128-bit division is a library call
     * that showed in the profile); the general one below. */
    if (n >= 0 && n < (INT64_C(1) << 52) && c->rate > 0 && c->base_time >= 0 &&
        c->base_time < (INT64_C(1) << 60))
        return c->base_time + n * 1000 / c->rate;
    __int128 off = (__int128)n * 1000 / (c->rate > 0 ? c->rate : 1);
    __int128 t = (__int128)c->base_time + off;
    if (t >= TDM_TIME_MAX)
        return TDM_TIME_MAX - 1;
    if (t <= TDM_TIME_MIN)
        return TDM_TIME_MIN + 1;
    return (tdm_time_ms)t;
}

/* ---- Ids (nexmark.md 1.3.2) ---- */

int64_t tdm__nx_last_person(int64_t event_id)
{
    /* The person created in the current block of 50 (offsets past the
     * person slot fall back to it). */
    return event_id / TDM__NX_PROPORTION_DENOMINATOR *
           TDM__NX_PERSON_PROPORTION;
}

int64_t tdm__nx_last_auction(int64_t event_id)
{
    int64_t epoch = event_id / TDM__NX_PROPORTION_DENOMINATOR;
    int64_t off = event_id % TDM__NX_PROPORTION_DENOMINATOR;
    if (off < TDM__NX_PERSON_PROPORTION) {
        /* The person slot: the last auction of the previous block. */
        epoch--;
        off = TDM__NX_AUCTION_PROPORTION - 1;
    } else if (off >= TDM__NX_PERSON_PROPORTION + TDM__NX_AUCTION_PROPORTION) {
        /* A bid slot: the block's last auction. */
        off = TDM__NX_AUCTION_PROPORTION - 1;
    } else {
        off -= TDM__NX_PERSON_PROPORTION;
    }
    return epoch * TDM__NX_AUCTION_PROPORTION + off;
}

/* The people next_person draws among when @p last_person
 * (tdm__nx_last_person of the event) is the newest. */
static inline int64_t active_people(const tdm__nx_conf *c, int64_t last_person)
{
    int64_t people = last_person + 1;
    return people < c->active_people ? people : c->active_people;
}

/* A random existing person (base 0), with a lead of 10 that may name a
 * person not created yet (joins then see the child first). */
static inline int64_t next_person(const tdm__nx_conf *c, nx_rng *r,
                                  int64_t last_person)
{
    int64_t active = active_people(c, last_person);
    return last_person + 1 - active + rng_int(r, active + 10);
}

/* Moves @p r past next_person's draw (its range, without the draw). */
static inline void skip_person(const tdm__nx_conf *c, nx_rng *r,
                               int64_t last_person)
{
    rng_skip_int(r, active_people(c, last_person) + 10);
}

/* The lowest auction in flight (base 0) when @p hi is the last one. */
static inline int64_t in_flight_lo(const tdm__nx_conf *c, int64_t hi)
{
    int64_t lo = hi - c->in_flight_auctions;
    return lo < 0 ? 0 : lo;
}

/* A random auction still in flight (base 0), with the same lead, when
 * @p hi (tdm__nx_last_auction of the event) is the newest. */
static inline int64_t next_auction(const tdm__nx_conf *c, nx_rng *r, int64_t hi)
{
    int64_t lo = in_flight_lo(c, hi);
    return lo + rng_int(r, hi - lo + 1 + 10);
}

/* Moves @p r past next_auction's draw. */
static inline void skip_auction(const tdm__nx_conf *c, nx_rng *r, int64_t hi)
{
    int64_t lo = in_flight_lo(c, hi);
    rng_skip_int(r, hi - lo + 1 + 10);
}

/* Log-uniform on [100, 10^8): round(10^(6 U) * 100); with no_prices the
 * draw is made (later draws stay the same) and 0 returned. */
static int64_t next_price(const tdm__nx_conf *c, nx_rng *r)
{
    double u = rng_unit(r);
    return c->no_prices ? 0 : llround(pow(10.0, 6.0 * u) * 100.0);
}

/* ---- Prices without pow() ---- */

/* tdm__nx_price_of computes next_price's llround(pow(10, w) * 100), w =
 * 6u, bit for bit, in a few multiplications.  The draw m (u = m / 2^53)
 * splits into its top 16 bits i and the rest r: 10^(6u) =
 * 10^(6 (i >> 8) / 2^8) * 10^(6 (i & 255) / 2^16) * e^x, x = 6 r ln 10 /
 * 2^53 < 2.2e-4; the first two factors come from two tables of 256
 * (the first scaled by 100), e^x is 1 + x + x^2 (1/2 + x/6)
 * (truncation below 1e-16).  Against pow's value of the rounded w =
 * fl(6u) (w differs from 6u by at most 2^-51, so its power by 1e-15 of
 * itself) the product is within about 3e-15 of itself: when it is
 * farther than 2^-40 of itself (9e-13) from a half, a rounding
 * boundary, both round to the same integer; closer than that (about 1
 * price in 10^5), pow decides.  Integer splitting and a short
 * polynomial keep the chain of dependent operations short: a price is
 * computed per bid.  test_nexmark.c compares it with pow next to
 * boundaries. */
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "nx_price_fast rounds with double arithmetic (FLT_EVAL_METHOD 0)"
#endif
#define NX_PRICE_BITS 8
#define NX_PRICE_N (1 << NX_PRICE_BITS)

static double nx_price_hi[NX_PRICE_N]; /* 100 * 10^(6 j / 2^8) */
static double nx_price_lo[NX_PRICE_N]; /* 10^(6 j / 2^16) */
static pthread_once_t nx_price_once = PTHREAD_ONCE_INIT;

static void nx_price_tables(void)
{
    for (int j = 0; j < NX_PRICE_N; j++) {
        nx_price_hi[j] = 100.0 * pow(10.0, 6.0 * (double)j / NX_PRICE_N);
        nx_price_lo[j] =
            pow(10.0, 6.0 * (double)j / ((double)NX_PRICE_N * NX_PRICE_N));
    }
}

/* The price for a 53-bit draw @p m (u = m / 2^53), as next_price
 * computes it; the tables must be made (nx_price_init). */
static inline int64_t nx_price_fast(uint64_t m)
{
    const unsigned i = (unsigned)(m >> (53 - 2 * NX_PRICE_BITS));
    const uint64_t r = m & ((UINT64_C(1) << (53 - 2 * NX_PRICE_BITS)) - 1);
    /* 6 ln 10 / 2^53 */
    const double x =
        (double)(int64_t)r * (13.815510557964274104 / 9007199254740992.0);
    const double e = (1.0 + x) + (x * x) * (0.5 + x * (1.0 / 6.0));
    const double v =
        nx_price_hi[i >> NX_PRICE_BITS] * nx_price_lo[i & (NX_PRICE_N - 1)] * e;
    /* v rounded to an integer by the addition (v < 2^52; double
     * arithmetic, FLT_EVAL_METHOD 0), and how far v is from it: near a
     * half, pow decides; elsewhere the nearest integer is the answer. */
    const double k = (v + 0x1p52) - 0x1p52;
    if (__builtin_expect(fabs(fabs(v - k) - 0.5) <= v * 0x1p-40, 0)) {
        const double u = (double)m * (1.0 / 9007199254740992.0);
        return llround(pow(10.0, 6.0 * u) * 100.0);
    }
    return (int64_t)k;
}

static void nx_price_init(void)
{
    pthread_once(&nx_price_once, nx_price_tables);
}

int64_t tdm__nx_price_of(uint64_t m)
{
    nx_price_init();
    return nx_price_fast(m & ((UINT64_C(1) << 53) - 1));
}

/* "1 in ratio is not hot": hot with probability 1 - 1/ratio. */
static int is_hot(nx_rng *r, int64_t ratio)
{
    return rng_int(r, ratio) > 0;
}

void tdm__nx_event_at(const tdm__nx_conf *c, int64_t count, tdm__nx_event *ev)
{
    const int64_t g = c->ooo_group > 0 ? c->ooo_group : 1;
    const int64_t n = c->first_event_number + count;
    /* A fixed permutation inside each block of g numbers; the watermark
     * is the block's first time, so no event is ever behind it. */
    const int64_t a = n / g * g + (n * 953) % g;
    const int64_t id = c->first_event_id + a;
    nx_rng r;
    rng_seed(&r, id, 0);
    memset(ev, 0, sizeof *ev);
    ev->event_id = id;
    ev->date_time = tdm__nx_time(c, a);
    ev->wm = tdm__nx_time(c, n / g * g);
    int64_t slot = id % TDM__NX_PROPORTION_DENOMINATOR;
    int kind = slot < TDM__NX_PERSON_PROPORTION ? TDM__NX_PERSON
               : slot < TDM__NX_PERSON_PROPORTION + TDM__NX_AUCTION_PROPORTION
                   ? TDM__NX_AUCTION
                   : TDM__NX_BID;
    if (c->kinds && !(c->kinds & (1 << kind))) {
        ev->kind = kind;
        return;
    }
    if (slot < TDM__NX_PERSON_PROPORTION) {
        ev->kind = TDM__NX_PERSON;
        ev->id = tdm__nx_last_person(id) + TDM__NX_FIRST_PERSON_ID;
    } else if (slot < TDM__NX_PERSON_PROPORTION + TDM__NX_AUCTION_PROPORTION) {
        ev->kind = TDM__NX_AUCTION;
        ev->id = tdm__nx_last_auction(id) + TDM__NX_FIRST_AUCTION_ID;
        int64_t seller = is_hot(&r, c->hot_sellers_ratio)
                             ? tdm__nx_last_person(id) / TDM__NX_HOT_BATCH *
                                   TDM__NX_HOT_BATCH
                             : next_person(c, &r, tdm__nx_last_person(id));
        ev->seller = seller + TDM__NX_FIRST_PERSON_ID;
        ev->category = TDM__NX_FIRST_CATEGORY_ID + rng_int(&r, 5);
        ev->initial_bid = next_price(c, &r);
        ev->reserve = ev->initial_bid + next_price(c, &r);
        /* Auctions live about as long as it takes to create
         * in_flight_auctions more: h = the event time of that many
         * auctions' worth of events (in_flight * 50 / 3) later. */
        int64_t span = c->in_flight_auctions * TDM__NX_PROPORTION_DENOMINATOR /
                       TDM__NX_AUCTION_PROPORTION;
        int64_t h = tdm__nx_time(c, a + span) - ev->date_time;
        ev->expires = ev->date_time + 1 + rng_int(&r, h * 2 > 1 ? h * 2 : 1);
    } else {
        ev->kind = TDM__NX_BID;
        int64_t auction = is_hot(&r, c->hot_auction_ratio)
                              ? tdm__nx_last_auction(id) / TDM__NX_HOT_BATCH *
                                    TDM__NX_HOT_BATCH
                              : next_auction(c, &r, tdm__nx_last_auction(id));
        ev->auction = auction + TDM__NX_FIRST_AUCTION_ID;
        int64_t bidder = is_hot(&r, c->hot_bidders_ratio)
                             ? tdm__nx_last_person(id) / TDM__NX_HOT_BATCH *
                                       TDM__NX_HOT_BATCH +
                                   1
                             : next_person(c, &r, tdm__nx_last_person(id));
        ev->bidder = bidder + TDM__NX_FIRST_PERSON_ID +
                     (c->flink_bidder_quirk ? TDM__NX_FIRST_PERSON_ID : 0);
        ev->price = next_price(c, &r);
    }
}

/* ---- The bulk path's helpers ----
 * They compute what tdm__nx_event_at would, field by field, for a run of
 * event numbers (tdm__nx_fill below).  Why it is the same stream:
 *   - numbers, ids and kinds are the same expressions, except in order
 *     (G = 1, so a = n) where the id's block and slot are stepped;
 *   - times: with G = 1, and the whole run inside tdm__nx_time's 64-bit
 *     branch (checked once per run), time(n) = base + q where n * 1000 =
 *     q * rate + rem; stepping n by s adds s * 1000 = dq * rate + drem,
 *     so q grows by dq plus one carry when rem + drem reaches rate.
 *     Otherwise tdm__nx_time itself, per event;
 *   - draws: each event's stream is seeded as in tdm__nx_event_at and
 *     its draws are taken in the same order by the same helpers; a field
 *     that is not asked for is skipped with rng_skip*, which leaves the
 *     stream where the helper would have left it, and the draws after
 *     the last field asked for are not taken at all (nothing later in
 *     the event depends on them, and the next event reseeds).
 * tests/unit/test_nexmark.c checks this over millions of events. */

/* Event times by increments (see above). */
typedef struct nx_clock {
    tdm_time_ms base;
    int64_t q, dq;
    uint64_t rem, drem, rate; /* rem, drem < rate < 2^63: no overflow */
} nx_clock;

/* Sets up @p k at number @p num for the run num, num + stride, ...
 * (@p n numbers) if tdm__nx_time takes its 64-bit branch for all of
 * them; returns 0 (k unused) if not. */
static int clock_init(nx_clock *k, const tdm__nx_conf *c, int64_t num,
                      int64_t stride, size_t n)
{
    const int64_t lim = INT64_C(1) << 52;
    if (n == 0 || c->rate <= 0 || c->base_time < 0 ||
        c->base_time >= (INT64_C(1) << 60) || num < 0 || num >= lim)
        return 0;
    /* The last number, num + (n - 1) * stride, must stay below lim. */
    if ((uint64_t)(n - 1) > (uint64_t)(lim - 1 - num) / (uint64_t)stride)
        return 0;
    k->base = c->base_time;
    k->rate = (uint64_t)c->rate;
    k->q = num * 1000 / c->rate;
    k->rem = (uint64_t)(num * 1000 % c->rate);
    k->dq = 0;
    k->drem = 0;
    if (n > 1) {
        /* stride < lim here, so stride * 1000 < 2^62. */
        k->dq = stride * 1000 / c->rate;
        k->drem = (uint64_t)(stride * 1000 % c->rate);
    }
    return 1;
}

/* Moves @p k on by one stride. */
static inline void clock_step(nx_clock *k)
{
    k->q += k->dq;
    k->rem += k->drem;
    if (k->rem >= k->rate) {
        k->rem -= k->rate;
        k->q++;
    }
}

/* What a bid of one block of 50 ids needs: tdm__nx_last_auction and
 * tdm__nx_last_person of its ids (the same for every bid slot), and the
 * hot auction and bidder they make (base 0). */
typedef struct nx_block {
    int64_t last_a, last_p, hot_a, hot_p;
} nx_block;

/* The nx_block of a bid whose last auction and person are @p last_a and
 * @p last_p. */
static inline nx_block block_from(int64_t last_a, int64_t last_p)
{
    nx_block k;
    k.last_a = last_a;
    k.last_p = last_p;
    k.hot_a = last_a / TDM__NX_HOT_BATCH * TDM__NX_HOT_BATCH;
    k.hot_p = last_p / TDM__NX_HOT_BATCH * TDM__NX_HOT_BATCH + 1;
    return k;
}

/* The nx_block of the bid slots of block @p epoch (id / 50, id >= 0):
 * tdm__nx_last_auction of a bid slot is the block's last auction, and
 * tdm__nx_last_person the block's person. */
static inline nx_block block_of(int64_t epoch)
{
    return block_from(epoch * TDM__NX_AUCTION_PROPORTION +
                          TDM__NX_AUCTION_PROPORTION - 1,
                      epoch * TDM__NX_PERSON_PROPORTION);
}

/* The bid fields of event @p id (in the block @p blk) that @p fields
 * asks for, drawn as in tdm__nx_event_at: hot auction?, [an auction in
 * flight], hot bidder?, [a person], price. */
static inline __attribute__((always_inline)) void
bid_fields(const tdm__nx_conf *c, unsigned fields, int64_t id,
           const nx_block *blk, tdm__nx_event *ev)
{
    const int64_t last_a = blk->last_a, last_p = blk->last_p;
    const unsigned after_auction = TDM__NX_F_BIDDER | TDM__NX_F_PRICE;
    if (!(fields & (TDM__NX_F_AUCTION | after_auction)))
        return;
    nx_rng r;
    rng_seed(&r, id, 0);
    if (is_hot(&r, c->hot_auction_ratio)) {
        if (fields & TDM__NX_F_AUCTION)
            ev->auction = blk->hot_a + TDM__NX_FIRST_AUCTION_ID;
    } else if (fields & TDM__NX_F_AUCTION) {
        ev->auction = next_auction(c, &r, last_a) + TDM__NX_FIRST_AUCTION_ID;
    } else {
        skip_auction(c, &r, last_a);
    }
    if (!(fields & after_auction))
        return;
    if (is_hot(&r, c->hot_bidders_ratio)) {
        if (fields & TDM__NX_F_BIDDER)
            ev->bidder = blk->hot_p + TDM__NX_FIRST_PERSON_ID +
                         (c->flink_bidder_quirk ? TDM__NX_FIRST_PERSON_ID : 0);
    } else if (fields & TDM__NX_F_BIDDER) {
        ev->bidder = next_person(c, &r, last_p) + TDM__NX_FIRST_PERSON_ID +
                     (c->flink_bidder_quirk ? TDM__NX_FIRST_PERSON_ID : 0);
    } else {
        skip_person(c, &r, last_p);
    }
    if (fields & TDM__NX_F_PRICE)
        ev->price = next_price(c, &r);
}

/* The auction fields of event @p id (adjusted number @p a, event time
 * @p dt) that @p fields asks for, drawn as in tdm__nx_event_at: hot
 * seller?, [a person], category, initial bid, reserve, expiry. */
static void auction_fields(const tdm__nx_conf *c, unsigned fields, int64_t id,
                           int64_t a, tdm_time_ms dt, tdm__nx_event *ev)
{
    const unsigned after_category =
        TDM__NX_F_INITIAL_BID | TDM__NX_F_RESERVE | TDM__NX_F_EXPIRES;
    const unsigned after_seller = TDM__NX_F_CATEGORY | after_category;
    const int64_t last_p = tdm__nx_last_person(id);
    if (fields & TDM__NX_F_ID)
        ev->id = tdm__nx_last_auction(id) + TDM__NX_FIRST_AUCTION_ID;
    if (!(fields & (TDM__NX_F_SELLER | after_seller)))
        return;
    nx_rng r;
    rng_seed(&r, id, 0);
    if (is_hot(&r, c->hot_sellers_ratio)) {
        if (fields & TDM__NX_F_SELLER)
            ev->seller = last_p / TDM__NX_HOT_BATCH * TDM__NX_HOT_BATCH +
                         TDM__NX_FIRST_PERSON_ID;
    } else if (fields & TDM__NX_F_SELLER) {
        ev->seller = next_person(c, &r, last_p) + TDM__NX_FIRST_PERSON_ID;
    } else {
        skip_person(c, &r, last_p);
    }
    if (!(fields & after_seller))
        return;
    if (fields & TDM__NX_F_CATEGORY)
        ev->category = TDM__NX_FIRST_CATEGORY_ID + rng_int(&r, 5);
    else
        rng_skip_int(&r, 5);
    if (!(fields & after_category))
        return;
    if (fields & (TDM__NX_F_INITIAL_BID | TDM__NX_F_RESERVE)) {
        int64_t initial = next_price(c, &r);
        if (fields & TDM__NX_F_INITIAL_BID)
            ev->initial_bid = initial;
        if (fields & TDM__NX_F_RESERVE)
            ev->reserve = initial + next_price(c, &r);
        else
            rng_skip(&r);
    } else {
        rng_skip(&r);
        rng_skip(&r);
    }
    if (fields & TDM__NX_F_EXPIRES) {
        int64_t span = c->in_flight_auctions * TDM__NX_PROPORTION_DENOMINATOR /
                       TDM__NX_AUCTION_PROPORTION;
        int64_t h = tdm__nx_time(c, a + span) - dt;
        ev->expires = dt + 1 + rng_int(&r, h * 2 > 1 ? h * 2 : 1);
    }
}

/* The kind of the event in slot @p slot (id % 50) of its block. */
static inline int kind_of_slot(int64_t slot)
{
    return slot < TDM__NX_PERSON_PROPORTION ? TDM__NX_PERSON
           : slot < TDM__NX_PERSON_PROPORTION + TDM__NX_AUCTION_PROPORTION
               ? TDM__NX_AUCTION
               : TDM__NX_BID;
}

/* Any other run, event by event with tdm__nx_event_at's arithmetic. */
static void run_general(const tdm__nx_conf *c, unsigned fields, int kinds,
                        int64_t num, int64_t stride, size_t n,
                        tdm__nx_event *out)
{
    const int64_t g = c->ooo_group > 0 ? c->ooo_group : 1;
    for (size_t k = 0; k < n; k++) {
        const int64_t a = num / g * g + (num * 953) % g;
        const int64_t id = c->first_event_id + a;
        const int kind = kind_of_slot(id % TDM__NX_PROPORTION_DENOMINATOR);
        tdm__nx_event *ev = &out[k];
        ev->kind = kind;
        if (kinds & (1 << kind)) {
            tdm_time_ms dt = TDM_TIME_MIN;
            if (fields & TDM__NX_F_EVENT_ID)
                ev->event_id = id;
            if ((fields & TDM__NX_F_DATE_TIME) ||
                (kind == TDM__NX_AUCTION && (fields & TDM__NX_F_EXPIRES)))
                dt = tdm__nx_time(c, a);
            if (fields & TDM__NX_F_DATE_TIME)
                ev->date_time = dt;
            if (fields & TDM__NX_F_WM)
                ev->wm = tdm__nx_time(c, num / g * g);
            if (kind == TDM__NX_BID) {
                nx_block blk = block_from(tdm__nx_last_auction(id),
                                          tdm__nx_last_person(id));
                bid_fields(c, fields, id, &blk, ev);
            } else if (kind == TDM__NX_AUCTION)
                auction_fields(c, fields, id, a, dt, ev);
            else if (fields & TDM__NX_F_ID)
                ev->id = tdm__nx_last_person(id) + TDM__NX_FIRST_PERSON_ID;
        }
        if (k + 1 < n)
            num += stride;
    }
}

/* ---- Columns (tdm__nx_fill) ----
 * The source's path.  In order (G = 1), the walk goes slot region by
 * slot region of the 50-id blocks (person slot 0, auction slots 1-3, bid
 * slots 4-49): a region of a kind not kept is stepped over in one go
 * (time, id and turn advanced by the number of events in it), a kept one
 * is computed event by event.  Bids, the bulk of the stream, have a
 * kernel without branches on the draws: every event of a bid region
 * shares its block's last auction and person, and each draw is taken by
 * its position in the event's stream (the state is a counter: draw t of
 * event id mixes id * K + (t + 1) * NX_GOLDEN, see rng_seed), so the
 * hot-auction coin, the auction in flight and the later draws are
 * computed without reseeding and the hot/not-hot choice is a select.
 * Everything else goes through the helpers above. */

/* The splitmix64 output function of rng_next, on the state it mixes. */
static inline uint64_t nx_mix(uint64_t z)
{
    return tdm__hash_splitmix64(z);
}

/* rng_int's value for draw output @p z and range @p n > 1. */
static inline int64_t nx_scale(uint64_t z, uint64_t n)
{
    return (int64_t)(((__uint128_t)z * n) >> 64);
}

/* The smallest draw output z with rng_int(z, ratio) > 0 (is_hot), for
 * ratio > 1: z * ratio >= 2^64, i.e. z >= ceil(2^64 / ratio). */
static inline uint64_t hot_threshold(int64_t ratio)
{
    return UINT64_MAX / (uint64_t)ratio + 1;
}

/* The seed state of event @p id, stream 0: rng_seed's before its first
 * (discarded) draw. */
#define NX_SEED_MUL 0xd1342543de82ef95ULL

/* Running write positions of the columns. */
typedef struct nx_dst {
    char *p[TDM__NX_NCOL];
    size_t st[TDM__NX_NCOL];
    size_t flag[TDM__NX_NCOL]; /* tdm__nx_cols.flag */
} nx_dst;

/* Stores @p v at *p (and 8 zero bytes @p flag bytes past it, when
 * nonzero), then steps *p by @p st. */
static inline void col_store(char **p, size_t st, size_t flag, int64_t v)
{
    memcpy(*p, &v, sizeof v);
    if (flag) {
        const int64_t zero = 0;
        memcpy(*p + flag, &zero, sizeof zero);
    }
    *p += st;
}

/* Stores @p v at @p p (and the flag word @p flag bytes past it, when
 * nonzero), without stepping. */
static inline void col_at(char *p, size_t flag, int64_t v)
{
    memcpy(p, &v, sizeof v);
    if (flag) {
        const int64_t zero = 0;
        memcpy(p + flag, &zero, sizeof zero);
    }
}

static inline void col_put(nx_dst *d, int col, int64_t v)
{
    col_store(&d->p[col], d->st[col], d->flag[col], v);
}

/* The columns (bits 0 .. 11) each kind has. */
static const unsigned kind_cols[3] = {
    TDM__NX_F_EVENT_ID | TDM__NX_F_DATE_TIME | TDM__NX_F_WM | TDM__NX_F_ID,
    TDM__NX_F_EVENT_ID | TDM__NX_F_DATE_TIME | TDM__NX_F_WM | TDM__NX_F_ID |
        TDM__NX_F_SELLER | TDM__NX_F_CATEGORY | TDM__NX_F_INITIAL_BID |
        TDM__NX_F_RESERVE | TDM__NX_F_EXPIRES,
    TDM__NX_F_EVENT_ID | TDM__NX_F_DATE_TIME | TDM__NX_F_WM |
        TDM__NX_F_AUCTION | TDM__NX_F_BIDDER | TDM__NX_F_PRICE,
};

/* Writes event @p ev (its fields among @p want computed) with turn
 * @p turn to the columns @p want names. */
static void col_event(nx_dst *d, unsigned want, const tdm__nx_event *ev,
                      int64_t turn)
{
    const unsigned has = kind_cols[ev->kind];
    static const size_t off[12] = {
        offsetof(tdm__nx_event, event_id),
        offsetof(tdm__nx_event, date_time),
        offsetof(tdm__nx_event, wm),
        offsetof(tdm__nx_event, id),
        offsetof(tdm__nx_event, seller),
        offsetof(tdm__nx_event, category),
        offsetof(tdm__nx_event, initial_bid),
        offsetof(tdm__nx_event, reserve),
        offsetof(tdm__nx_event, expires),
        offsetof(tdm__nx_event, auction),
        offsetof(tdm__nx_event, bidder),
        offsetof(tdm__nx_event, price),
    };
    for (unsigned left = want & TDM__NX_F_ALL; left; left &= left - 1) {
        const int col = __builtin_ctz(left);
        if ((has >> col) & 1) {
            int64_t v;
            memcpy(&v, (const char *)ev + off[col], sizeof v);
            col_put(d, col, v);
        } else {
            d->p[col] += d->st[col];
        }
    }
    if (want & (1u << TDM__NX_C_DATE_TIME2))
        col_put(d, TDM__NX_C_DATE_TIME2, ev->date_time);
    if (want & (1u << TDM__NX_C_KIND))
        col_put(d, TDM__NX_C_KIND, ev->kind);
    if (want & (1u << TDM__NX_C_TURN))
        col_put(d, TDM__NX_C_TURN, turn);
}

/* The TDM__NX_F_* fields an event must have computed for the columns
 * @p want. */
static unsigned cols_fields(unsigned want)
{
    unsigned f = want & TDM__NX_F_ALL;
    if (want & (1u << TDM__NX_C_DATE_TIME2))
        f |= TDM__NX_F_DATE_TIME;
    return f;
}

/* @p turn + @p m, modulo @p turns (0 <= turn < turns, m >= 0). */
static inline int64_t turn_add(int64_t turn, int64_t m, int64_t turns)
{
    if (m >= turns)
        m %= turns;
    turn += m;
    return turn >= turns ? turn - turns : turn;
}

/* Moves @p k on by @p m strides. */
static void clock_advance(nx_clock *k, int64_t m)
{
    if (m <= 64 && k->rate < (UINT64_C(1) << 57)) {
        /* rem + m * drem < 65 * 2^57 < 2^64: no overflow. */
        k->q += k->dq * m;
        k->rem += k->drem * (uint64_t)m;
        if (k->rem >= k->rate) {
            k->q += (int64_t)(k->rem / k->rate);
            k->rem %= k->rate;
        }
        return;
    }
    /* rem, drem < rate: m * drem + rem in 128 bits. */
    __uint128_t t = (__uint128_t)k->drem * (uint64_t)m + k->rem;
    k->q += k->dq * m + (int64_t)(t / k->rate);
    k->rem = (uint64_t)(t % k->rate);
}

/* Where a walk is: the walked event's number (a = num in order), id,
 * block, slot, seed state and turn; and one stride's increments. */
typedef struct nx_pos {
    int64_t num, id, epoch, slot, turn;
    uint64_t sid;
} nx_pos;

/* Whether the branch-free bid kernel applies to the block of last
 * auction @p last_a and last person @p last_p for columns @p want: the
 * draws it takes by position are drawn (ranges above 1). */
static inline bool bid_fast_ok(const tdm__nx_conf *c, unsigned want,
                               int64_t last_a, int64_t last_p)
{
    if (c->hot_auction_ratio <= 1)
        return false;
    if (last_a - in_flight_lo(c, last_a) + 1 + 10 <= 1)
        return false;
    if (want & (TDM__NX_F_BIDDER | TDM__NX_F_PRICE)) {
        if (c->hot_bidders_ratio <= 1 || active_people(c, last_p) + 10 <= 1)
            return false;
    }
    return true;
}

/* @p m bids of one block from @p at (stride @p stride), columns @p want
 * (a constant where inlined, so the compiler drops the others), by
 * position in each event's stream:
 *   draw 1: hot-auction coin; draw 2: the auction in flight (used when
 *   not hot); then the hot-bidder coin at t = 2 (hot auction) or 3, the
 *   person at t + 1 (used when not hot), the price after them.
 * bid_fast_ok holds for the block. */
static inline __attribute__((always_inline)) void
bids_fast(const tdm__nx_conf *c, nx_dst *d, const unsigned want,
          const size_t kflag, int64_t m, const nx_pos *at, int64_t stride,
          nx_clock *clk, int64_t turns)
{
    const uint64_t G = NX_GOLDEN;
    const int64_t last_a =
        at->epoch * TDM__NX_AUCTION_PROPORTION + TDM__NX_AUCTION_PROPORTION - 1;
    const int64_t last_p = at->epoch * TDM__NX_PERSON_PROPORTION;
    const int64_t hot_a = last_a / TDM__NX_HOT_BATCH * TDM__NX_HOT_BATCH +
                          TDM__NX_FIRST_AUCTION_ID;
    const int64_t lo_a = in_flight_lo(c, last_a);
    const uint64_t range_a = (uint64_t)(last_a - lo_a + 1 + 10);
    const int64_t base_a = lo_a + TDM__NX_FIRST_AUCTION_ID;
    const uint64_t thr_a = hot_threshold(c->hot_auction_ratio);
    const int64_t p_off = TDM__NX_FIRST_PERSON_ID +
                          (c->flink_bidder_quirk ? TDM__NX_FIRST_PERSON_ID : 0);
    const bool bidder = (want & (TDM__NX_F_BIDDER | TDM__NX_F_PRICE)) != 0;
    const int64_t active = bidder ? active_people(c, last_p) : 0;
    const int64_t hot_p =
        last_p / TDM__NX_HOT_BATCH * TDM__NX_HOT_BATCH + 1 + p_off;
    const int64_t base_p = last_p + 1 - active + p_off;
    const uint64_t range_p = (uint64_t)(active + 10);
    const uint64_t thr_b = bidder ? hot_threshold(c->hot_bidders_ratio) : 0;
    const uint64_t dsid = (uint64_t)stride * NX_SEED_MUL;
    uint64_t b = at->sid + G; /* the state after the seed's draw */
    int64_t id = at->id, turn = at->turn;
    /* Columns of fields bids do not have are stepped over. */
    const unsigned other = want & TDM__NX_F_ALL & ~kind_cols[TDM__NX_BID];
    if (other)
        for (int col = 0; col < 12; col++)
            if ((other >> col) & 1)
                d->p[col] += (size_t)m * d->st[col];
    /* Locals, so that the loop keeps them in registers. */
    /* kflag (a constant where inlined): the flags are known, kflag for
     * the value columns and none for the row ones. */
    const size_t f_ev = kflag ? kflag : d->flag[0];
    const size_t f_dt = kflag ? kflag : d->flag[1];
    const size_t f_wm = kflag ? kflag : d->flag[2];
    const size_t f_auc = kflag ? kflag : d->flag[9];
    const size_t f_bdr = kflag ? kflag : d->flag[10];
    const size_t f_pri = kflag ? kflag : d->flag[11];
    const size_t f_dt2 = kflag ? 0 : d->flag[TDM__NX_C_DATE_TIME2];
    const size_t f_kind = kflag ? kflag : d->flag[TDM__NX_C_KIND];
    const size_t f_turn = kflag ? 0 : d->flag[TDM__NX_C_TURN];
    char *p_ev = d->p[0], *p_dt = d->p[1], *p_wm = d->p[2];
    char *p_auc = d->p[9], *p_bdr = d->p[10], *p_pri = d->p[11];
    char *p_dt2 = d->p[TDM__NX_C_DATE_TIME2], *p_kind = d->p[TDM__NX_C_KIND];
    char *p_turn = d->p[TDM__NX_C_TURN];
    const size_t s_ev = d->st[0], s_dt = d->st[1], s_wm = d->st[2];
    const size_t s_auc = d->st[9], s_bdr = d->st[10], s_pri = d->st[11];
    const size_t s_dt2 = d->st[TDM__NX_C_DATE_TIME2];
    const size_t s_kind = d->st[TDM__NX_C_KIND];
    const size_t s_turn = d->st[TDM__NX_C_TURN];
    /* With kflag the value columns share one stride and the row columns
     * another (fill_in_order's caller checked): one running pointer per
     * group, the columns at fixed distances from it. */
#define NX_DIST(x, from) (kflag && (x) ? (uintptr_t)(x) - (uintptr_t)(from) : 0)
    char *const v0 = p_dt, *const r0 = p_dt2;
    const uintptr_t o_ev = NX_DIST(p_ev, v0), o_wm = NX_DIST(p_wm, v0);
    const uintptr_t o_auc = NX_DIST(p_auc, v0), o_bdr = NX_DIST(p_bdr, v0);
    const uintptr_t o_pri = NX_DIST(p_pri, v0), o_kind = NX_DIST(p_kind, v0);
    const uintptr_t o_turn = NX_DIST(p_turn, r0);
#undef NX_DIST
    uintptr_t pv = (uintptr_t)v0, pr = (uintptr_t)r0;
    const tdm_time_ms base = clk->base;
    const int64_t dq = clk->dq;
    const uint64_t drem = clk->drem, rate = clk->rate;
    int64_t q = clk->q;
    uint64_t rem = clk->rem;
    /* A store to column x: grouped (kflag) or on its own pointer. */
#define PUTV(x, o, v)                                                          \
    (kflag ? col_at((char *)(pv + (o)), kflag, (v))                            \
           : col_store(&p_##x, s_##x, f_##x, (v)))
#define PUTR(x, o, v)                                                          \
    (kflag ? col_at((char *)(pr + (o)), 0, (v))                                \
           : col_store(&p_##x, s_##x, f_##x, (v)))
    /* Sub-runs of one event time: with several events per ms (dq = 0)
     * the time moves on when rem passes rate, after ceil((rate - rem) /
     * drem) steps; otherwise every step may move it. */
    for (int64_t e = 0, run; e < m; e += run) {
        run = m - e;
        if (dq == 0 && drem > 0) {
            const uint64_t steps = (rate - rem + drem - 1) / drem;
            if ((uint64_t)run > steps)
                run = (int64_t)steps;
        } else if (dq != 0) {
            run = 1;
        }
        const tdm_time_ms dt = base + q;
        for (int64_t r = 0; r < run; r++) {
            const bool hot = nx_mix(b + G) >= thr_a;
            if (want & TDM__NX_F_EVENT_ID)
                PUTV(ev, o_ev, id);
            if (want & TDM__NX_F_DATE_TIME)
                PUTV(dt, 0, dt);
            if (want & TDM__NX_F_WM)
                PUTV(wm, o_wm, dt);
            /* Both sides of each hot/not-hot choice are computed and one
             * kept with a mask: the coin is a fair one for auctions, and a
             * branch on it mispredicts half the time (1.7x slower in wall
             * time for a few instructions fewer). */
            const int64_t hot_mask = -(int64_t)hot;
            if (want & TDM__NX_F_AUCTION) {
                int64_t a = base_a + nx_scale(nx_mix(b + 2 * G), range_a);
                PUTV(auc, o_auc, a ^ ((a ^ hot_a) & hot_mask));
            }
            if (bidder) {
                const uint64_t tb = b + 3 * G - (G & (uint64_t)hot_mask);
                const bool hot_b = nx_mix(tb) >= thr_b;
                if (want & TDM__NX_F_BIDDER) {
                    int64_t p = base_p + nx_scale(nx_mix(tb + G), range_p);
                    PUTV(bdr, o_bdr, p ^ ((p ^ hot_p) & -(int64_t)hot_b));
                }
                if (want & TDM__NX_F_PRICE) {
                    const uint64_t z = nx_mix(tb + (hot_b ? G : 2 * G));
                    PUTV(pri, o_pri, c->no_prices ? 0 : nx_price_fast(z >> 11));
                }
            }
            if (want & (1u << TDM__NX_C_DATE_TIME2))
                PUTR(dt2, 0, dt);
            if (want & (1u << TDM__NX_C_KIND))
                PUTV(kind, o_kind, TDM__NX_BID);
            if (want & (1u << TDM__NX_C_TURN)) {
                PUTR(turn, o_turn, turn);
                turn = turn + 1 == turns ? 0 : turn + 1;
            }
            b += dsid;
            id += stride;
            if (kflag) {
                pv += s_dt;
                pr += s_dt2;
            }
        }
        /* run steps of the clock: at most one carry when dq = 0 (run is
         * at most the steps to it), one step otherwise. */
        q += dq * run;
        rem += drem * (uint64_t)run;
        if (rem >= rate) {
            rem -= rate;
            q++;
        }
    }
#undef PUTV
#undef PUTR
    clk->q = q;
    clk->rem = rem;
    if (kflag) {
        const size_t dv = pv - (uintptr_t)v0, dr = pr - (uintptr_t)r0;
        p_ev += dv, p_dt += dv, p_wm += dv, p_auc += dv, p_bdr += dv;
        p_pri += dv, p_kind += dv, p_dt2 += dr, p_turn += dr;
    }
    d->p[0] = p_ev, d->p[1] = p_dt, d->p[2] = p_wm;
    d->p[9] = p_auc, d->p[10] = p_bdr, d->p[11] = p_pri;
    d->p[TDM__NX_C_DATE_TIME2] = p_dt2, d->p[TDM__NX_C_KIND] = p_kind;
    d->p[TDM__NX_C_TURN] = p_turn;
}

/* @p m events of one slot region of kind @p kind from @p at, one by
 * one with the bulk path's helpers (person and auction regions,
 * and bids where bids_fast does not apply). */
static void region_slow(const tdm__nx_conf *c, nx_dst *d, unsigned want,
                        int kind, int64_t m, const nx_pos *at, int64_t stride,
                        nx_clock *clk, int64_t turns)
{
    const unsigned fields = cols_fields(want);
    const nx_block blk = block_of(at->epoch);
    int64_t id = at->id, num = at->num, turn = at->turn;
    for (int64_t e = 0; e < m; e++) {
        tdm__nx_event ev;
        ev.kind = kind;
        ev.event_id = id;
        ev.date_time = ev.wm = clk->base + clk->q;
        if (kind == TDM__NX_BID)
            bid_fields(c, fields, id, &blk, &ev);
        else if (kind == TDM__NX_AUCTION)
            auction_fields(c, fields, id, num, ev.date_time, &ev);
        else
            ev.id =
                at->epoch * TDM__NX_PERSON_PROPORTION + TDM__NX_FIRST_PERSON_ID;
        col_event(d, want, &ev, turn);
        clock_step(clk);
        turn = turn + 1 == turns ? 0 : turn + 1;
        id += stride;
        num += stride;
    }
}

/* @p m persons, or auctions without category, prices or expiry (q8's
 * columns), of one slot region from @p at, written directly: a person's
 * id, an auction's id and its seller by position in its stream (draw 1:
 * the hot-seller coin when hot_sellers_ratio > 1; then the person when
 * its range is above 1), as auction_fields draws them. */
static void region_direct(const tdm__nx_conf *c, nx_dst *d, unsigned want,
                          int kind, int64_t m, const nx_pos *at, int64_t stride,
                          nx_clock *clk, int64_t turns)
{
    const uint64_t G = NX_GOLDEN;
    const int64_t last_p = at->epoch * TDM__NX_PERSON_PROPORTION;
    const int64_t ratio = c->hot_sellers_ratio;
    const uint64_t thr = ratio > 1 ? hot_threshold(ratio) : 0;
    const int64_t active = active_people(c, last_p);
    const uint64_t range = active + 10 > 1 ? (uint64_t)(active + 10) : 0;
    const int64_t lo = last_p + 1 - active + TDM__NX_FIRST_PERSON_ID;
    const int64_t hot_s = last_p / TDM__NX_HOT_BATCH * TDM__NX_HOT_BATCH +
                          TDM__NX_FIRST_PERSON_ID;
    const uint64_t dsid = (uint64_t)stride * NX_SEED_MUL;
    const unsigned other = want & TDM__NX_F_ALL & ~kind_cols[kind];
    uint64_t b = at->sid + G; /* the state after the seed's draw */
    int64_t id = at->id, slot = at->slot, turn = at->turn;
    for (int col = 0; other && col < 12; col++)
        if ((other >> col) & 1)
            d->p[col] += (size_t)m * d->st[col];
    for (int64_t e = 0; e < m; e++) {
        const tdm_time_ms dt = clk->base + clk->q;
        if (want & TDM__NX_F_EVENT_ID)
            col_put(d, 0, id);
        if (want & TDM__NX_F_DATE_TIME)
            col_put(d, 1, dt);
        if (want & TDM__NX_F_WM)
            col_put(d, 2, dt);
        if (want & TDM__NX_F_ID)
            col_put(d, 3,
                    kind == TDM__NX_PERSON
                        ? last_p + TDM__NX_FIRST_PERSON_ID
                        : at->epoch * TDM__NX_AUCTION_PROPORTION + slot -
                              TDM__NX_PERSON_PROPORTION +
                              TDM__NX_FIRST_AUCTION_ID);
        if (kind == TDM__NX_AUCTION && (want & TDM__NX_F_SELLER)) {
            uint64_t t = b + G;
            bool hot = false;
            if (ratio > 1) {
                hot = nx_mix(t) >= thr;
                t += G;
            }
            col_put(d, 4,
                    hot ? hot_s
                        : lo + (range ? nx_scale(nx_mix(t), range) : 0));
        }
        if (want & (1u << TDM__NX_C_DATE_TIME2))
            col_put(d, TDM__NX_C_DATE_TIME2, dt);
        if (want & (1u << TDM__NX_C_KIND))
            col_put(d, TDM__NX_C_KIND, kind);
        if (want & (1u << TDM__NX_C_TURN)) {
            col_put(d, TDM__NX_C_TURN, turn);
            turn = turn + 1 == turns ? 0 : turn + 1;
        }
        clock_step(clk);
        b += dsid;
        id += stride;
        slot += stride;
    }
}

/* The in-order walk (see above); the caller checked that ids stay >= 0
 * and below 2^61 and set @p clk up (clock_init). */
static inline __attribute__((always_inline)) size_t
fill_in_order(const tdm__nx_conf *c, nx_dst *d, const unsigned want,
              const size_t kflag, int kinds, int64_t num, int64_t stride,
              int64_t n, size_t max, nx_clock *clk, int64_t turn, int64_t turns,
              int64_t *walked)
{
    const int64_t den = TDM__NX_PROPORTION_DENOMINATOR;
    nx_pos at;
    at.num = num;
    at.id = c->first_event_id + num;
    at.epoch = at.id / den;
    at.slot = at.id % den;
    at.turn = turn;
    at.sid = (uint64_t)at.id * NX_SEED_MUL;
    /* One event: no step (stride may be anything then). */
    if (n == 1)
        stride = 0;
    const uint64_t dsid = (uint64_t)stride * NX_SEED_MUL;
    int64_t k = 0;
    size_t i = 0;
    while (k < n && i < max) {
        const int kind = kind_of_slot(at.slot);
        const int64_t end =
            kind == TDM__NX_PERSON ? TDM__NX_PERSON_PROPORTION
            : kind == TDM__NX_AUCTION
                ? TDM__NX_PERSON_PROPORTION + TDM__NX_AUCTION_PROPORTION
                : den;
        /* The events of the walk left in this region of the block. */
        int64_t m = stride == 1 ? end - at.slot
                    : stride == 0 || stride >= den
                        ? 1
                        : (end - at.slot + stride - 1) / stride;
        if (m > n - k)
            m = n - k;
        if (kinds & (1 << kind)) {
            if ((uint64_t)m > max - i)
                m = (int64_t)(max - i);
            if (kind == TDM__NX_BID &&
                bid_fast_ok(c, want,
                            at.epoch * TDM__NX_AUCTION_PROPORTION +
                                TDM__NX_AUCTION_PROPORTION - 1,
                            at.epoch * TDM__NX_PERSON_PROPORTION))
                bids_fast(c, d, want, kflag, m, &at, stride, clk, turns);
            else if (kind == TDM__NX_PERSON ||
                     (kind == TDM__NX_AUCTION &&
                      !(want & (TDM__NX_F_CATEGORY | TDM__NX_F_INITIAL_BID |
                                TDM__NX_F_RESERVE | TDM__NX_F_EXPIRES))))
                region_direct(c, d, want, kind, m, &at, stride, clk, turns);
            else
                region_slow(c, d, want, kind, m, &at, stride, clk, turns);
            i += (size_t)m;
        } else {
            clock_advance(clk, m);
        }
        k += m;
        if (k == n)
            break; /* no step past the last event */
        at.turn = turn_add(at.turn, m, turns);
        at.num += m * stride;
        at.id += m * stride;
        at.sid += (uint64_t)m * dsid;
        at.slot += m * stride;
        if (at.slot >= den) {
            at.epoch += at.slot / den;
            at.slot %= den;
        }
    }
    *walked = k;
    return i;
}

/* The columns path (nexmark.h): the in-order walk when the stream is in
 * order and inside the 64-bit time range, else event by event with
 * run_general.  Borrows @p c and @p cols.  @thread any (pure). */
size_t tdm__nx_fill(const tdm__nx_conf *c, const tdm__nx_cols *cols,
                    int64_t count, int64_t stride, int64_t n, size_t max,
                    int64_t *walked)
{
    /* The source's usual column sets: NEXMark-W's (auction and time,
     * row timestamp, partition) and q11's (bidder instead of auction),
     * specialised by the compiler through the constant masks. */
    const unsigned extra =
        (1u << TDM__NX_C_DATE_TIME2) | (1u << TDM__NX_C_TURN);
    const unsigned w_cols = TDM__NX_F_DATE_TIME | TDM__NX_F_AUCTION | extra;
    const unsigned q11_cols = TDM__NX_F_DATE_TIME | TDM__NX_F_BIDDER | extra;
    const int kinds = c->kinds ? c->kinds : 7;
    const int64_t turns = cols->turns > 0 ? cols->turns : 1;
    const int64_t turn0 =
        cols->turn >= 0 && cols->turn < turns ? cols->turn : 0;
    int64_t num = c->first_event_number + count;
    nx_dst d;
    unsigned want = 0;
    for (int col = 0; col < TDM__NX_NCOL; col++) {
        d.p[col] = cols->p[col];
        d.st[col] = cols->stride[col];
        d.flag[col] = cols->flag[col];
        if (cols->p[col])
            want |= 1u << col;
    }
    *walked = 0;
    if (n <= 0 || max == 0)
        return 0;
    if ((want & TDM__NX_F_PRICE) && !c->no_prices)
        nx_price_init();
    nx_clock clk = {0, 0, 0, 0, 0, 0};
    /* In order, with ids that stay >= 0 and far from overflow (num <
     * 2^52 by clock_init). */
    if (c->ooo_group <= 1 && c->first_event_id >= 0 &&
        c->first_event_id < (INT64_C(1) << 60) &&
        clock_init(&clk, c, num, stride, (size_t)n)) {
        /* ... with the flags a row of 24-byte values has (tdm__val: the
         * null flag 16 bytes past the value), for the value columns
         * only. */
        const size_t vf = 16;
        bool row_flags =
            d.flag[TDM__NX_C_DATE_TIME2] == 0 && d.flag[TDM__NX_C_TURN] == 0;
        for (int col = 0; col < 12; col++)
            if ((want >> col) & 1)
                row_flags = row_flags && d.flag[col] == vf;
        /* ... and, for bids_fast's grouped stores, one stride for the
         * value columns and one for the row ones. */
        for (int col = 0; col < 12; col++)
            if ((want >> col) & 1)
                row_flags = row_flags && d.st[col] == d.st[1];
        row_flags =
            row_flags && d.st[TDM__NX_C_TURN] == d.st[TDM__NX_C_DATE_TIME2];
        if (want == w_cols && row_flags)
            return fill_in_order(c, &d, w_cols, vf, kinds, num, stride, n, max,
                                 &clk, turn0, turns, walked);
        if (want == q11_cols && row_flags)
            return fill_in_order(c, &d, q11_cols, vf, kinds, num, stride, n,
                                 max, &clk, turn0, turns, walked);
        return fill_in_order(c, &d, want, 0, kinds, num, stride, n, max, &clk,
                             turn0, turns, walked);
    }
    /* Otherwise event by event with the general arithmetic (run_general). */
    const unsigned fields = cols_fields(want);
    int64_t k = 0, turn = turn0;
    size_t i = 0;
    for (; k < n && i < max; k++) {
        tdm__nx_event ev;
        run_general(c, fields, kinds, num, 1, 1, &ev);
        if (kinds & (1 << ev.kind)) {
            col_event(&d, want, &ev, turn);
            i++;
        }
        turn = turn + 1 == turns ? 0 : turn + 1;
        if (k + 1 < n)
            num += stride;
    }
    *walked = k;
    return i;
}

/* ---- Strings (nexmark.md 1.3.4) ---- */

static const char *const first_names[11] = {"Peter", "Paul",   "Luke",  "John",
                                            "Saul",  "Vicky",  "Kate",  "Julie",
                                            "Sarah", "Deiter", "Walter"};
static const char *const last_names[9] = {"Shultz", "Abrams",  "Spencer",
                                          "White",  "Bartels", "Walton",
                                          "Smith",  "Jones",   "Noris"};
static const char *const cities[10] = {
    "Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
    "Bend",    "Redmond",     "Seattle",       "Kent",  "Cheyenne"};
static const char *const states[6] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
static const char *const hot_channels[4] = {"Google", "Facebook", "Baidu",
                                            "Apple"};

/* A writer over the caller's buffer: strings are appended with their
 * NUL; the buffer is large enough by construction (nexmark.h). */
typedef struct nx_buf {
    char *p;
    size_t len, cap;
} nx_buf;

static const char *buf_put(nx_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap)
        return "";
    char *out = b->p + b->len;
    memcpy(out, s, n);
    out[n] = '\0';
    b->len += n + 1;
    return out;
}

/* str(m): 3 + rand(m - 3) characters, each a space with probability
 * 1/13 or a lowercase letter, then trimmed. */
static size_t rand_str(nx_rng *r, int m, char *out)
{
    int n = 3 + (int)rng_int(r, m - 3);
    for (int i = 0; i < n; i++)
        out[i] = rng_int(r, 13) == 0 ? ' ' : (char)('a' + rng_int(r, 26));
    int lo = 0, hi = n;
    while (lo < hi && out[lo] == ' ')
        lo++;
    while (hi > lo && out[hi - 1] == ' ')
        hi--;
    memmove(out, out + lo, (size_t)(hi - lo));
    return (size_t)(hi - lo);
}

/* Java's Integer.reverse: the 32 bits in reverse order. */
static uint32_t bit_reverse(uint32_t v)
{
    uint32_t out = 0;
    for (int i = 0; i < 32; i++) {
        out = (out << 1) | (v & 1);
        v >>= 1;
    }
    return out;
}

void tdm__nx_strings_of(const tdm__nx_event *ev, char *mem, size_t cap,
                        tdm__nx_strings *out)
{
    nx_buf b = {mem, 0, cap};
    char tmp[256];
    size_t n;
    nx_rng r;
    rng_seed(&r, ev->event_id, 0x5851f42d4c957f2dULL);
    memset(out, 0, sizeof *out);
    switch (ev->kind) {
    case TDM__NX_PERSON: {
        /* The draws are sequenced explicitly: the last name first, and
         * the credit card's groups from the last one.  (They used to be
         * printf arguments, whose order of evaluation C leaves open; this
         * is the order gcc gave them, so the stream did not change.) */
        const char *last = last_names[rng_int(&r, 9)];
        const char *first = first_names[rng_int(&r, 11)];
        int len = snprintf(tmp, sizeof tmp, "%s %s", first, last);
        out->name = buf_put(&b, tmp, (size_t)len);
        n = rand_str(&r, 7, tmp);
        tmp[n++] = '@';
        n += rand_str(&r, 5, tmp + n);
        memcpy(tmp + n, ".com", 4);
        out->email = buf_put(&b, tmp, n + 4);
        int card[4];
        for (int g = 3; g >= 0; g--)
            card[g] = (int)rng_int(&r, 10000);
        len = snprintf(tmp, sizeof tmp, "%04d %04d %04d %04d", card[0], card[1],
                       card[2], card[3]);
        out->credit_card = buf_put(&b, tmp, (size_t)len);
        const char *city = cities[rng_int(&r, 10)];
        out->city = buf_put(&b, city, strlen(city));
        const char *state = states[rng_int(&r, 6)];
        out->state = buf_put(&b, state, strlen(state));
        break;
    }
    case TDM__NX_AUCTION:
        n = rand_str(&r, 20, tmp);
        out->item_name = buf_put(&b, tmp, n);
        n = rand_str(&r, 100, tmp);
        out->description = buf_put(&b, tmp, n);
        break;
    default: {
        if (rng_int(&r, 2) == 0) {
            int h = (int)rng_int(&r, 4);
            out->channel =
                buf_put(&b, hot_channels[h], strlen(hot_channels[h]));
            int len = snprintf(tmp, sizeof tmp,
                               "https://www.nexmark.com/%s/item.htm?query=1",
                               hot_channels[h]);
            out->url = buf_put(&b, tmp, (size_t)len);
        } else {
            uint32_t i = (uint32_t)rng_int(&r, 10000);
            int len = snprintf(tmp, sizeof tmp, "channel-%u", i);
            out->channel = buf_put(&b, tmp, (size_t)len);
            memcpy(tmp, "https://www.nexmark.com/", 24);
            n = 24;
            for (int part = 0; part < 3; part++) {
                for (int k = 0; k < 5; k++)
                    tmp[n++] = (char)('a' + rng_int(&r, 26));
                tmp[n++] = '/';
            }
            memcpy(tmp + n, "item.htm?query=1", 16);
            n += 16;
            if (rng_int(&r, 10) > 0)
                n += (size_t)snprintf(tmp + n, sizeof tmp - n, "&channel_id=%u",
                                      bit_reverse(i));
            out->url = buf_put(&b, tmp, n);
        }
        break;
    }
    }
}

/* Appends the decimal digits of @p v, at least @p width of them (zeros
 * in front), to @p out; returns how many (printf's %0*u). */
static size_t put_dec(char *out, uint32_t v, int width)
{
    char tmp[10];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < width)
        tmp[n++] = '0';
    for (int k = 0; k < n; k++)
        out[k] = tmp[n - 1 - k];
    return (size_t)n;
}

/* Appends the NUL-terminated @p s to @p out; returns its length. */
static size_t put_cstr(char *out, const char *s)
{
    size_t n = strlen(s);
    memcpy(out, s, n);
    return n;
}

/* tdm__nx_strings_of's strings, only those in @p which (nexmark.h): the
 * same draws in the same order, formatted by hand.  Borrows @p ev;
 * writes into @p mem (cap bytes, 512 always enough). */
void tdm__nx_strings_some(const tdm__nx_event *ev, unsigned which, char *mem,
                          size_t cap, tdm__nx_strings *out)
{
    nx_buf b = {mem, 0, cap};
    char tmp[256];
    size_t n;
    nx_rng r;
    memset(out, 0, sizeof *out);
    /* The draws follow tdm__nx_strings_of's order; "left" is the strings
     * still wanted, so nothing is drawn after the last of them. */
    unsigned left = which & (ev->kind == TDM__NX_PERSON
                                 ? TDM__NX_S_NAME | TDM__NX_S_EMAIL |
                                       TDM__NX_S_CREDIT_CARD | TDM__NX_S_CITY |
                                       TDM__NX_S_STATE
                             : ev->kind == TDM__NX_AUCTION
                                 ? TDM__NX_S_ITEM_NAME | TDM__NX_S_DESCRIPTION
                                 : TDM__NX_S_CHANNEL | TDM__NX_S_URL);
    if (!left)
        return;
    rng_seed(&r, ev->event_id, 0x5851f42d4c957f2dULL);
    switch (ev->kind) {
    case TDM__NX_PERSON: {
        const char *last = last_names[rng_int(&r, 9)];
        const char *first = first_names[rng_int(&r, 11)];
        if (left & TDM__NX_S_NAME) {
            n = put_cstr(tmp, first);
            tmp[n++] = ' ';
            n += put_cstr(tmp + n, last);
            out->name = buf_put(&b, tmp, n);
        }
        if (!(left &= ~(unsigned)TDM__NX_S_NAME))
            break;
        n = rand_str(&r, 7, tmp);
        tmp[n++] = '@';
        n += rand_str(&r, 5, tmp + n);
        memcpy(tmp + n, ".com", 4);
        if (left & TDM__NX_S_EMAIL)
            out->email = buf_put(&b, tmp, n + 4);
        if (!(left &= ~(unsigned)TDM__NX_S_EMAIL))
            break;
        uint32_t card[4];
        for (int g = 3; g >= 0; g--)
            card[g] = (uint32_t)rng_int(&r, 10000);
        n = 0;
        for (int g = 0; g < 4; g++) {
            if (g)
                tmp[n++] = ' ';
            n += put_dec(tmp + n, card[g], 4);
        }
        if (left & TDM__NX_S_CREDIT_CARD)
            out->credit_card = buf_put(&b, tmp, n);
        if (!(left &= ~(unsigned)TDM__NX_S_CREDIT_CARD))
            break;
        const char *city = cities[rng_int(&r, 10)];
        if (left & TDM__NX_S_CITY)
            out->city = buf_put(&b, city, strlen(city));
        if (!(left &= ~(unsigned)TDM__NX_S_CITY))
            break;
        const char *state = states[rng_int(&r, 6)];
        out->state = buf_put(&b, state, strlen(state));
        break;
    }
    case TDM__NX_AUCTION:
        n = rand_str(&r, 20, tmp);
        if (left & TDM__NX_S_ITEM_NAME)
            out->item_name = buf_put(&b, tmp, n);
        if (!(left &= ~(unsigned)TDM__NX_S_ITEM_NAME))
            break;
        n = rand_str(&r, 100, tmp);
        out->description = buf_put(&b, tmp, n);
        break;
    default: {
        size_t cn;
        char chan[32];
        if (rng_int(&r, 2) == 0) {
            const char *h = hot_channels[rng_int(&r, 4)];
            cn = put_cstr(chan, h);
            if (left & TDM__NX_S_CHANNEL)
                out->channel = buf_put(&b, chan, cn);
            if (left & TDM__NX_S_URL) {
                n = put_cstr(tmp, "https://www.nexmark.com/");
                n += put_cstr(tmp + n, h);
                n += put_cstr(tmp + n, "/item.htm?query=1");
                out->url = buf_put(&b, tmp, n);
            }
            break;
        }
        uint32_t i = (uint32_t)rng_int(&r, 10000);
        cn = put_cstr(chan, "channel-");
        cn += put_dec(chan + cn, i, 1);
        if (left & TDM__NX_S_CHANNEL)
            out->channel = buf_put(&b, chan, cn);
        if (!(left & TDM__NX_S_URL))
            break;
        n = put_cstr(tmp, "https://www.nexmark.com/");
        for (int part = 0; part < 3; part++) {
            for (int k = 0; k < 5; k++)
                tmp[n++] = (char)('a' + rng_int(&r, 26));
            tmp[n++] = '/';
        }
        n += put_cstr(tmp + n, "item.htm?query=1");
        if (rng_int(&r, 10) > 0) {
            n += put_cstr(tmp + n, "&channel_id=");
            n += put_dec(tmp + n, bit_reverse(i), 1);
        }
        out->url = buf_put(&b, tmp, n);
        break;
    }
    }
}
