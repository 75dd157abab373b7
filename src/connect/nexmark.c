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
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "connect/nexmark.h"

/* ---- A small deterministic random stream ---- */

typedef struct nx_rng {
    uint64_t s;
} nx_rng;

static uint64_t rng_next(nx_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
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

/* A random existing person (base 0), with a lead of 10 that may name a
 * person not created yet (joins then see the child first). */
static int64_t next_person(const tdm__nx_conf *c, nx_rng *r,
                           int64_t event_id)
{
    int64_t people = tdm__nx_last_person(event_id) + 1;
    int64_t active = people < c->active_people ? people : c->active_people;
    return people - active + rng_int(r, active + 10);
}

/* A random auction still in flight (base 0), with the same lead. */
static int64_t next_auction(const tdm__nx_conf *c, nx_rng *r,
                            int64_t event_id)
{
    int64_t hi = tdm__nx_last_auction(event_id);
    int64_t lo = hi - c->in_flight_auctions;
    if (lo < 0)
        lo = 0;
    return lo + rng_int(r, hi - lo + 1 + 10);
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
                             : next_person(c, &r, id);
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
                              : next_auction(c, &r, id);
        ev->auction = auction + TDM__NX_FIRST_AUCTION_ID;
        int64_t bidder = is_hot(&r, c->hot_bidders_ratio)
                             ? tdm__nx_last_person(id) /
                                       TDM__NX_HOT_BATCH *
                                       TDM__NX_HOT_BATCH +
                                   1
                             : next_person(c, &r, id);
        ev->bidder = bidder + TDM__NX_FIRST_PERSON_ID +
                     (c->flink_bidder_quirk ? TDM__NX_FIRST_PERSON_ID : 0);
        ev->price = next_price(c, &r);
    }
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
