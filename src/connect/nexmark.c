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
 * tdm__nx_event_at is the definition of the stream; tdm__nx_events, the
 * bulk path the source uses, computes runs of events with the same
 * helpers, but without the per-event divisions and the draws its caller
 * does not need.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "connect/nexmark.h"

/* ---- A small deterministic random stream ---- */

typedef struct nx_rng {
    uint64_t s;
} nx_rng;

/* The stream's increment: draw k of a stream mixes seed + k * this. */
#define NX_GOLDEN 0x9e3779b97f4a7c15ULL

static uint64_t rng_next(nx_rng *r)
{
    uint64_t z = (r->s += NX_GOLDEN);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
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
    if (n >= 0 && n < (INT64_C(1) << 52) && c->rate > 0 &&
        c->base_time >= 0 && c->base_time < (INT64_C(1) << 60))
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
    } else if (off >= TDM__NX_PERSON_PROPORTION +
                          TDM__NX_AUCTION_PROPORTION) {
        /* A bid slot: the block's last auction. */
        off = TDM__NX_AUCTION_PROPORTION - 1;
    } else {
        off -= TDM__NX_PERSON_PROPORTION;
    }
    return epoch * TDM__NX_AUCTION_PROPORTION + off;
}

/* The people next_person draws among when @p last_person
 * (tdm__nx_last_person of the event) is the newest. */
static inline int64_t active_people(const tdm__nx_conf *c,
                                    int64_t last_person)
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
static inline int64_t next_auction(const tdm__nx_conf *c, nx_rng *r,
                                   int64_t hi)
{
    int64_t lo = in_flight_lo(c, hi);
    return lo + rng_int(r, hi - lo + 1 + 10);
}

/* Moves @p r past next_auction's draw. */
static inline void skip_auction(const tdm__nx_conf *c, nx_rng *r,
                                int64_t hi)
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

/* "1 in ratio is not hot": hot with probability 1 - 1/ratio. */
static int is_hot(nx_rng *r, int64_t ratio)
{
    return rng_int(r, ratio) > 0;
}

void tdm__nx_event_at(const tdm__nx_conf *c, int64_t count,
                      tdm__nx_event *ev)
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
    } else if (slot < TDM__NX_PERSON_PROPORTION +
                          TDM__NX_AUCTION_PROPORTION) {
        ev->kind = TDM__NX_AUCTION;
        ev->id = tdm__nx_last_auction(id) + TDM__NX_FIRST_AUCTION_ID;
        int64_t seller = is_hot(&r, c->hot_sellers_ratio)
                             ? tdm__nx_last_person(id) /
                                   TDM__NX_HOT_BATCH * TDM__NX_HOT_BATCH
                             : next_person(c, &r,
                                           tdm__nx_last_person(id));
        ev->seller = seller + TDM__NX_FIRST_PERSON_ID;
        ev->category = TDM__NX_FIRST_CATEGORY_ID + rng_int(&r, 5);
        ev->initial_bid = next_price(c, &r);
        ev->reserve = ev->initial_bid + next_price(c, &r);
        /* Auctions live about as long as it takes to create
         * in_flight_auctions more: h = the event time of that many
         * auctions' worth of events (in_flight * 50 / 3) later. */
        int64_t span = c->in_flight_auctions *
                       TDM__NX_PROPORTION_DENOMINATOR /
                       TDM__NX_AUCTION_PROPORTION;
        int64_t h = tdm__nx_time(c, a + span) - ev->date_time;
        ev->expires = ev->date_time + 1 + rng_int(&r, h * 2 > 1 ? h * 2 : 1);
    } else {
        ev->kind = TDM__NX_BID;
        int64_t auction = is_hot(&r, c->hot_auction_ratio)
                              ? tdm__nx_last_auction(id) /
                                    TDM__NX_HOT_BATCH * TDM__NX_HOT_BATCH
                              : next_auction(c, &r,
                                             tdm__nx_last_auction(id));
        ev->auction = auction + TDM__NX_FIRST_AUCTION_ID;
        int64_t bidder = is_hot(&r, c->hot_bidders_ratio)
                             ? tdm__nx_last_person(id) /
                                       TDM__NX_HOT_BATCH *
                                       TDM__NX_HOT_BATCH +
                                   1
                             : next_person(c, &r,
                                           tdm__nx_last_person(id));
        ev->bidder = bidder + TDM__NX_FIRST_PERSON_ID +
                     (c->flink_bidder_quirk ? TDM__NX_FIRST_PERSON_ID : 0);
        ev->price = next_price(c, &r);
    }
}

/* ---- The bulk path ----
 * tdm__nx_events computes what tdm__nx_event_at would, field by field,
 * for a run of event numbers.  Why it is the same stream:
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
                         (c->flink_bidder_quirk ? TDM__NX_FIRST_PERSON_ID
                                                : 0);
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
static void auction_fields(const tdm__nx_conf *c, unsigned fields,
                           int64_t id, int64_t a, tdm_time_ms dt,
                           tdm__nx_event *ev)
{
    const unsigned after_category = TDM__NX_F_INITIAL_BID |
                                    TDM__NX_F_RESERVE | TDM__NX_F_EXPIRES;
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
        int64_t span = c->in_flight_auctions *
                       TDM__NX_PROPORTION_DENOMINATOR /
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

/* The in-order run (G = 1, so a = n): times from @p clk, and the id's
 * block and slot by increments too (id = epoch * 50 + slot, 0 <= slot <
 * 50, which is id / 50 and id % 50 for id >= 0), and the block's
 * nx_block when the block changes.  @p kinds is never 0 here.  Inlined
 * into each caller, so that constant @p fields specialise it. */
static inline __attribute__((always_inline)) void
run_in_order(const tdm__nx_conf *c, unsigned fields, int kinds, int64_t num,
             int64_t stride, size_t n, nx_clock *clk, tdm__nx_event *out)
{
    const int64_t den = TDM__NX_PROPORTION_DENOMINATOR;
    int64_t id = c->first_event_id + num;
    int64_t epoch = id / den, slot = id % den;
    /* One event: no step (stride may be anything then).  Otherwise
     * stride < 2^52 and the step past the last event cannot overflow. */
    if (n == 1)
        stride = 0;
    const int64_t d_epoch = stride / den, d_slot = stride % den;
    nx_block blk = block_of(epoch);
    int64_t blk_epoch = epoch;
    for (size_t k = 0; k < n; k++) {
        tdm__nx_event *ev = &out[k];
        const int kind = kind_of_slot(slot);
        ev->kind = kind;
        if (kinds & (1 << kind)) {
            const tdm_time_ms dt = clk->base + clk->q;
            if (fields & TDM__NX_F_EVENT_ID)
                ev->event_id = id;
            if (fields & TDM__NX_F_DATE_TIME)
                ev->date_time = dt;
            if (fields & TDM__NX_F_WM)
                ev->wm = dt;
            if (kind == TDM__NX_BID) {
                if (epoch != blk_epoch) {
                    blk = block_of(epoch);
                    blk_epoch = epoch;
                }
                bid_fields(c, fields, id, &blk, ev);
            } else if (kind == TDM__NX_AUCTION) {
                auction_fields(c, fields, id, num, dt, ev);
            } else if (fields & TDM__NX_F_ID) {
                ev->id = epoch * TDM__NX_PERSON_PROPORTION +
                         TDM__NX_FIRST_PERSON_ID;
            }
        }
        clock_step(clk);
        num += stride;
        id += stride;
        epoch += d_epoch;
        slot += d_slot;
        if (slot >= den) {
            slot -= den;
            epoch++;
        }
    }
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

void tdm__nx_events(const tdm__nx_conf *c, unsigned fields, int64_t count,
                    int64_t stride, size_t n, tdm__nx_event *out)
{
    /* NEXMark-W's fields: a call with them as a constant lets the
     * compiler specialise run_in_order for them. */
    const unsigned w_fields = TDM__NX_F_DATE_TIME | TDM__NX_F_AUCTION;
    const int64_t num = c->first_event_number + count;
    const int kinds = c->kinds ? c->kinds : 7;
    nx_clock clk = { 0, 0, 0, 0, 0, 0 };
    /* The in-order run also needs ids >= 0 (block and slot by
     * increments) that cannot overflow (num < 2^52 by clock_init). */
    if (c->ooo_group <= 1 && c->first_event_id >= 0 &&
        c->first_event_id < (INT64_C(1) << 60) &&
        clock_init(&clk, c, num, stride, n)) {
        if (fields == w_fields)
            run_in_order(c, w_fields, kinds, num, stride, n, &clk, out);
        else
            run_in_order(c, fields, kinds, num, stride, n, &clk, out);
        return;
    }
    run_general(c, fields, kinds, num, stride, n, out);
}

/* ---- Strings (nexmark.md 1.3.4) ---- */

static const char *const first_names[11] = {
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky",
    "Kate", "Julie", "Sarah", "Deiter", "Walter"
};
static const char *const last_names[9] = {
    "Shultz", "Abrams", "Spencer", "White", "Bartels",
    "Walton", "Smith", "Jones", "Noris"
};
static const char *const cities[10] = {
    "Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
    "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"
};
static const char *const states[6] = { "AZ", "CA", "ID", "OR", "WA", "WY" };
static const char *const hot_channels[4] = { "Google", "Facebook", "Baidu",
                                             "Apple" };

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
    nx_buf b = { mem, 0, cap };
    char tmp[256];
    size_t n;
    nx_rng r;
    rng_seed(&r, ev->event_id, 0x5851f42d4c957f2dULL);
    memset(out, 0, sizeof *out);
    switch (ev->kind) {
    case TDM__NX_PERSON: {
        int len = snprintf(tmp, sizeof tmp, "%s %s",
                           first_names[rng_int(&r, 11)],
                           last_names[rng_int(&r, 9)]);
        out->name = buf_put(&b, tmp, (size_t)len);
        n = rand_str(&r, 7, tmp);
        tmp[n++] = '@';
        n += rand_str(&r, 5, tmp + n);
        memcpy(tmp + n, ".com", 4);
        out->email = buf_put(&b, tmp, n + 4);
        len = snprintf(tmp, sizeof tmp, "%04d %04d %04d %04d",
                       (int)rng_int(&r, 10000), (int)rng_int(&r, 10000),
                       (int)rng_int(&r, 10000), (int)rng_int(&r, 10000));
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
            out->channel = buf_put(&b, hot_channels[h],
                                   strlen(hot_channels[h]));
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
                n += (size_t)snprintf(tmp + n, sizeof tmp - n,
                                      "&channel_id=%u", bit_reverse(i));
            out->url = buf_put(&b, tmp, n);
        }
        break;
    }
    }
}
