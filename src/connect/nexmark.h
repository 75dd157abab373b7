/* SPDX-License-Identifier: MIT */
/* nexmark.h - the NEXMark event generator's rules as pure functions:
 * event number -> (kind, ids, price, times, strings), following
 * ../shared/docs/nexmark.md section 1.3 (Beam's and nexmark-flink's
 * common generator).  Every event is a function of its number and the
 * configuration only (a splitmix64 stream seeded with the event id), so
 * generation parallelises and reproduces; the generator source
 * (generator.c, kind nexmark) deals event numbers to partitions.
 */
#ifndef TDM_NEXMARK_H
#define TDM_NEXMARK_H

#include <stddef.h>
#include <stdint.h>

#include "tidemark.h"

enum { TDM__NX_PERSON = 0, TDM__NX_AUCTION = 1, TDM__NX_BID = 2 };

#define TDM__NX_FIRST_PERSON_ID 1000
#define TDM__NX_FIRST_AUCTION_ID 1000
#define TDM__NX_FIRST_CATEGORY_ID 10
#define TDM__NX_PERSON_PROPORTION 1
#define TDM__NX_AUCTION_PROPORTION 3
#define TDM__NX_BID_PROPORTION 46
#define TDM__NX_PROPORTION_DENOMINATOR 50
#define TDM__NX_HOT_BATCH 100

/* The generator's configuration (Beam's names; defaults from
 * tdm__nx_conf_default). */
typedef struct tdm__nx_conf {
    int64_t first_event_id;     /* 0 (Beam); nexmark-flink uses 1 */
    int64_t first_event_number; /* 0 (Beam); nexmark-flink uses 1 */
    int64_t rate;               /* events per second of event time */
    tdm_time_ms base_time;      /* event time of event number 0 */
    int64_t ooo_group;          /* outOfOrderGroupSize G, >= 1 */
    int64_t hot_auction_ratio, hot_bidders_ratio, hot_sellers_ratio;
    int64_t in_flight_auctions; /* numInFlightAuctions */
    int64_t active_people;      /* numActivePeople */
    int flink_bidder_quirk;     /* 1: bidder ids + 2000 (nexmark-flink) */
    /* Work a caller does not need (the stream stays the same): kinds
     * outside the mask (bit k: kind k; 0: all) get only kind, event id and
     * times; with no_prices, prices are drawn but left 0 (a log-uniform
     * price costs a pow() in the per-event definition, a few
     * multiplications in tdm__nx_fill). */
    int kinds;
    int no_prices;
} tdm__nx_conf;

/* One generated event.  Strings are not made here (tdm__nx_strings). */
typedef struct tdm__nx_event {
    int kind;              /* TDM__NX_PERSON, _AUCTION, _BID */
    int64_t event_id;      /* after the out-of-order adjustment */
    tdm_time_ms date_time; /* event time (ms) */
    tdm_time_ms wm;        /* the generator's perfect watermark */
    /* person: id; auction: id, seller, category, initial_bid, reserve,
     * expires; bid: auction, bidder, price */
    int64_t id, seller, category, initial_bid, reserve, auction, bidder, price;
    tdm_time_ms expires;
} tdm__nx_event;

/* Fills @p c with the defaults of nexmark.md's table 1.3.8 (Beam's
 * column): rate 10,000/s, base 2015-07-15T00:00:00Z, G = 1, ratios
 * 2/4/4, 100 in-flight auctions, 1,000 active people. */
void tdm__nx_conf_default(tdm__nx_conf *c);

/* The event time of (adjusted) event number @p n:
 * base + floor(n * 1000 / rate) ms, without overflow. */
tdm_time_ms tdm__nx_time(const tdm__nx_conf *c, int64_t n);

/* The ids of the rules (1.3.2), base 0 (add the FIRST_*_ID offsets). */
int64_t tdm__nx_last_person(int64_t event_id);
int64_t tdm__nx_last_auction(int64_t event_id);

/* The reference computations tdm__nx_price_of and tdm__nx_event_at,
 * which only tests call, are declared in testhooks.h. */

/* The int64 fields of tdm__nx_event, as bits (tdm__nx_fill's columns
 * 0 .. 11 take the same numbers). */
enum {
    TDM__NX_F_EVENT_ID = 1 << 0,
    TDM__NX_F_DATE_TIME = 1 << 1,
    TDM__NX_F_WM = 1 << 2,
    TDM__NX_F_ID = 1 << 3,
    TDM__NX_F_SELLER = 1 << 4,
    TDM__NX_F_CATEGORY = 1 << 5,
    TDM__NX_F_INITIAL_BID = 1 << 6,
    TDM__NX_F_RESERVE = 1 << 7,
    TDM__NX_F_EXPIRES = 1 << 8,
    TDM__NX_F_AUCTION = 1 << 9,
    TDM__NX_F_BIDDER = 1 << 10,
    TDM__NX_F_PRICE = 1 << 11,
    TDM__NX_F_ALL = (1 << 12) - 1
};

/* ---- Columns: the source's path ----
 * tdm__nx_fill walks a run of event counts and writes only the events
 * of the kinds kept (c->kinds, 0: all), one after
 * the other, as columns: value v of kept event i goes to the 8 bytes at
 * p[col] + i * stride[col] (stored with memcpy, so any byte layout does).
 * Columns 0 .. 11 are the fields of the TDM__NX_F_* bit of the same
 * number; a column of a field the event's kind does not have is skipped
 * (its 8 bytes are left as they were).  The others are written for every
 * kept event. */
enum {
    TDM__NX_C_DATE_TIME2 = 12, /* date_time again (a second copy) */
    TDM__NX_C_KIND = 13,       /* TDM__NX_PERSON, _AUCTION or _BID */
    TDM__NX_C_TURN = 14,       /* (turn + k) % turns, k: walk position */
    TDM__NX_NCOL = 15
};

/* Where tdm__nx_fill writes.  p[col] NULL: column not written (stride
 * ignored).  turn, turns (>= 1): see TDM__NX_C_TURN (a round-robin
 * position, e.g. the partition of an event dealt in turns).  flag[col],
 * when not 0: with each value of that column, 8 zero bytes are written
 * flag[col] bytes past it (a "not null" word beside the value; the
 * value's 8 bytes and these must not overlap). */
typedef struct tdm__nx_cols {
    char *p[TDM__NX_NCOL];
    size_t stride[TDM__NX_NCOL];
    int64_t turn, turns;
    size_t flag[TDM__NX_NCOL];
} tdm__nx_cols;

/* Walks the events count, count + stride, ..., count + (n - 1) * stride
 * (walk positions k = 0 .. n - 1) and writes those of a kept kind to
 * @p cols (borrowed) until @p max are written.  Returns how many were
 * written; *walked is how many events were walked: n, or fewer when the
 * max-th kept event was written (walked then ends just after it).  Every
 * value equals tdm__nx_event_at's for that count, bit for bit.  Kinds
 * not kept cost next to nothing (whole slots of the 50-id block are
 * stepped over arithmetically when the stream is in order).
 * Preconditions: count >= 0, stride >= 1, n >= 0, and
 * c->first_event_number + count + (n - 1) * stride does not overflow. */
size_t tdm__nx_fill(const tdm__nx_conf *c, const tdm__nx_cols *cols,
                    int64_t count, int64_t stride, int64_t n, size_t max,
                    int64_t *walked);

/* The strings of an event, written into @p buf (NUL-separated, borrowed
 * pointers into it set below; fields that do not apply to the kind are
 * set to NULL).  @p cap of 512 bytes is always enough.  Persons: name
 * ("first last"), email, credit card, city, state; auctions: item name,
 * description; bids: channel, url. */
typedef struct tdm__nx_strings {
    const char *name, *email, *credit_card, *city, *state;
    const char *item_name, *description;
    const char *channel, *url;
} tdm__nx_strings;
/* (tdm__nx_strings_of, the reference, is in testhooks.h.) */

/* Bits of tdm__nx_strings_some's @p which (one per string). */
enum {
    TDM__NX_S_NAME = 1 << 0,
    TDM__NX_S_EMAIL = 1 << 1,
    TDM__NX_S_CREDIT_CARD = 1 << 2,
    TDM__NX_S_CITY = 1 << 3,
    TDM__NX_S_STATE = 1 << 4,
    TDM__NX_S_ITEM_NAME = 1 << 5,
    TDM__NX_S_DESCRIPTION = 1 << 6,
    TDM__NX_S_CHANNEL = 1 << 7,
    TDM__NX_S_URL = 1 << 8,
    TDM__NX_S_ALL = (1 << 9) - 1
};

/* tdm__nx_strings_of for the strings named in @p which only (the others
 * are NULL; those named equal tdm__nx_strings_of's, byte for byte), made
 * without printf and without the draws after the last one named.  Only
 * ev->kind and ev->event_id are read. */
void tdm__nx_strings_some(const tdm__nx_event *ev, unsigned which, char *buf,
                          size_t cap, tdm__nx_strings *out);

#endif /* TDM_NEXMARK_H */
