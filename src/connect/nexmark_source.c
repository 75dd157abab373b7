/* SPDX-License-Identifier: MIT */
/* nexmark_source.c - the NEXMark generator as a source (`type:
 * generator`, `generator.kind: nexmark`): persons, auctions and bids by
 * the rules of nexmark.c, event time from their dateTime.
 *
 * Event c (0 <= c < generator.records) goes to partition
 * c % generator.partitions, and partitions are dealt to subtasks
 * round-robin, so the events of all partitions together are exactly one
 * generator's stream whatever the parallelism (nexmark-flink splits id
 * ranges instead; the multiset of events is what matters for results).
 * Each partition's times never decrease when the out-of-order group is 1.
 *
 * The schema picks the fields (by name, absent ones are not made):
 * event_type (0 person, 1 auction, 2 bid), id, name, email_address,
 * credit_card, city, state, item_name, description, initial_bid,
 * reserve, expires, seller, category, auction, bidder, price, channel,
 * url, date_time.  Strings are made only when the schema has one.
 * `generator.nexmark.kinds` keeps only some kinds (their ids and times
 * are those of the full stream).
 *
 * Cost: events come from the bulk path (tdm__nx_events) with only the
 * fields the schema has, and when the subtask's partitions are visited
 * in one arithmetic progression of event counts (partitions a multiple
 * of the parallelism, the usual case) a whole run at a time.  Rows are
 * written in one pass from a per-kind plan of the schema.
 */
#include <stddef.h>
#include <string.h>

#include "connect/conn.h"
#include "connect/nexmark.h"

/* The fields a NEXMark row can have, in this order in f[]. */
enum {
    NF_TYPE, NF_ID, NF_NAME, NF_EMAIL, NF_CARD, NF_CITY, NF_STATE,
    NF_ITEM, NF_DESC, NF_INITIAL, NF_RESERVE, NF_EXPIRES, NF_SELLER,
    NF_CATEGORY, NF_AUCTION, NF_BIDDER, NF_PRICE, NF_CHANNEL, NF_URL,
    NF_TIME, NF_COUNT
};

/* Events computed per run of the bulk path (on the stack). */
#define NX_RUN 64

/* A plan entry: schema field f gets the int64 at byte offset off of
 * tdm__nx_event, or is null (off PLAN_NULL). */
enum { PLAN_NULL = -1 };
typedef struct nx_put {
    int f, off;
} nx_put;

static const struct {
    const char *name;
    int kind; /* 0: int64, 1: string, 2: timestamp */
} nx_fields[NF_COUNT] = {
    { "event_type", 0 }, { "id", 0 },          { "name", 1 },
    { "email_address", 1 }, { "credit_card", 1 }, { "city", 1 },
    { "state", 1 },      { "item_name", 1 },   { "description", 1 },
    { "initial_bid", 0 }, { "reserve", 0 },    { "expires", 2 },
    { "seller", 0 },     { "category", 0 },    { "auction", 0 },
    { "bidder", 0 },     { "price", 0 },       { "channel", 1 },
    { "url", 1 },        { "date_time", 2 },
};

struct tdm__source {
    tdm__source_conf conf;
    tdm__nx_conf nx;
    int f[NF_COUNT];   /* schema index of each field, -1: absent */
    bool strings;      /* some string field is present */
    unsigned want;     /* TDM__NX_F_* the rows need */
    int nf;            /* schema fields */
    /* Per kind, the plan of its rows, one entry per schema field: first
     * the n_set[kind] integer fields the kind has (event_type aside),
     * then the fields left null.  puts[kind] points into plan. */
    nx_put *plan;
    const nx_put *puts[3];
    int n_set[3];
    int64_t total, n_part;
    int64_t *parts;    /* this subtask's partitions */
    int64_t *next;     /* per local partition: its next event count */
    uint8_t *fin;
    int n_parts, n_done, cur;
    /* Progression mode: the counts visited are pos, pos + stride, ...
     * (cur: the local partition of pos); next[] is then unused. */
    bool ap;
    int64_t pos, stride;
};

/* The TDM__NX_F_* bit of field @p k (0 for event_type and strings). */
static unsigned field_bit(int k)
{
    switch (k) {
    case NF_ID: return TDM__NX_F_ID;
    case NF_INITIAL: return TDM__NX_F_INITIAL_BID;
    case NF_RESERVE: return TDM__NX_F_RESERVE;
    case NF_EXPIRES: return TDM__NX_F_EXPIRES;
    case NF_SELLER: return TDM__NX_F_SELLER;
    case NF_CATEGORY: return TDM__NX_F_CATEGORY;
    case NF_AUCTION: return TDM__NX_F_AUCTION;
    case NF_BIDDER: return TDM__NX_F_BIDDER;
    case NF_PRICE: return TDM__NX_F_PRICE;
    case NF_TIME: return TDM__NX_F_DATE_TIME;
    default: return 0;
    }
}

/* The plan entry of integer field @p k for rows of kind @p kind: where
 * the value lives in tdm__nx_event, or PLAN_NULL when the kind has no
 * such field (strings are PLAN_NULL too: put_str sets them; event_type
 * is set by put_row itself). */
static int plan_entry(int k, int kind)
{
    const bool person = kind == TDM__NX_PERSON;
    const bool auction = kind == TDM__NX_AUCTION;
    const bool bid = kind == TDM__NX_BID;
    switch (k) {
    case NF_TIME: return (int)offsetof(tdm__nx_event, date_time);
    case NF_ID:
        return person || auction ? (int)offsetof(tdm__nx_event, id)
                                 : PLAN_NULL;
    case NF_INITIAL:
        return auction ? (int)offsetof(tdm__nx_event, initial_bid)
                       : PLAN_NULL;
    case NF_RESERVE:
        return auction ? (int)offsetof(tdm__nx_event, reserve) : PLAN_NULL;
    case NF_EXPIRES:
        return auction ? (int)offsetof(tdm__nx_event, expires) : PLAN_NULL;
    case NF_SELLER:
        return auction ? (int)offsetof(tdm__nx_event, seller) : PLAN_NULL;
    case NF_CATEGORY:
        return auction ? (int)offsetof(tdm__nx_event, category) : PLAN_NULL;
    case NF_AUCTION:
        return bid ? (int)offsetof(tdm__nx_event, auction) : PLAN_NULL;
    case NF_BIDDER:
        return bid ? (int)offsetof(tdm__nx_event, bidder) : PLAN_NULL;
    case NF_PRICE:
        return bid ? (int)offsetof(tdm__nx_event, price) : PLAN_NULL;
    default: return PLAN_NULL;
    }
}

/* The schema text of NEXMark rows (every field). */
const char *tdm__nexmark_schema(void)
{
    return "event_type:int64, id:int64, name:string, "
           "email_address:string, credit_card:string, city:string, "
           "state:string, item_name:string, description:string, "
           "initial_bid:int64, reserve:int64, expires:timestamp, "
           "seller:int64, category:int64, auction:int64, bidder:int64, "
           "price:int64, channel:string, url:string, date_time:timestamp";
}

static void nx_close(tdm__source *src)
{
    if (!src)
        return;
    tdm__free(src->parts);
    tdm__free(src->next);
    tdm__free(src->fin);
    tdm__free(src->plan);
    tdm__free(src);
}

/* Opens the partitions of subtask @p index of @p count.  TDM_OK,
 * TDM_ERR_INVAL (settings, or a schema field of the wrong type, named),
 * TDM_ERR_NOMEM. */
static tdm_err nx_open(const tdm__source_conf *conf, int index, int count,
                       tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                       int *n_partitions, char *errbuf, size_t errbuf_size)
{
    tdm__source *src = NULL;
    tdm_err err = TDM_OK;
    (void)dead;
    (void)dead_ud;
    *out = NULL;
    *n_partitions = 0;
    if (!conf || !conf->schema || count < 1 || index < 0 || index >= count)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "nexmark: bad arguments");
    if (conf->gen_rate < 1 || conf->gen_partitions < 1 ||
        conf->gen_records < 0 || conf->nx_ooo_group < 1)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "generator.rate, partitions and "
                         "nexmark.out_of_order_group must be >= 1, "
                         "records >= 0");
    src = tdm__calloc(1, sizeof *src);
    if (!src)
        return TDM_ERR_NOMEM;
    src->conf = *conf;
    tdm__nx_conf_default(&src->nx);
    src->nx.rate = conf->gen_rate;
    src->nx.ooo_group = conf->nx_ooo_group;
    if (conf->nx_flink) {
        src->nx.first_event_id = 1;
        src->nx.first_event_number = 1;
        src->nx.flink_bidder_quirk = 1;
    }
    src->nx.kinds = conf->nx_kinds ? conf->nx_kinds : 7;
    src->total = conf->gen_records;
    src->n_part = conf->gen_partitions;
    for (int k = 0; k < NF_COUNT; k++) {
        int f = tdm__schema_find(conf->schema, nx_fields[k].name);
        src->f[k] = f;
        if (f < 0)
            continue;
        tdm_type t = conf->schema->fields[f].type;
        bool ok = nx_fields[k].kind == 1
                      ? t == TDM_TYPE_STRING
                      : t == TDM_TYPE_INT64 || t == TDM_TYPE_TIMESTAMP;
        if (!ok) {
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                            "nexmark field '%s' must be %s",
                            nx_fields[k].name,
                            nx_fields[k].kind == 1 ? "a string"
                                                   : "an int64 or timestamp");
            goto fail;
        }
        if (nx_fields[k].kind == 1)
            src->strings = true;
    }
    src->nx.no_prices = src->f[NF_PRICE] < 0 && src->f[NF_INITIAL] < 0 &&
                        src->f[NF_RESERVE] < 0;
    /* The fields to compute (the time is every row's timestamp, the id
     * seeds the strings), and the rows' plans. */
    src->want = TDM__NX_F_DATE_TIME |
                (src->strings ? TDM__NX_F_EVENT_ID : 0u);
    src->nf = conf->schema->n;
    src->plan = tdm__calloc((size_t)(3 * (src->nf ? src->nf : 1)),
                            sizeof *src->plan);
    if (!src->plan) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    for (int k = 0; k < NF_COUNT; k++)
        if (src->f[k] >= 0)
            src->want |= field_bit(k);
    for (int kind = 0; kind < 3; kind++) {
        nx_put *plan = src->plan + kind * src->nf;
        int set = 0, null = src->nf;
        for (int f = 0; f < src->nf; f++) {
            int o = PLAN_NULL;
            for (int k = 0; k < NF_COUNT; k++)
                if (src->f[k] == f && k != NF_TYPE)
                    o = plan_entry(k, kind);
            int at = o == PLAN_NULL ? --null : set++;
            plan[at].f = f;
            plan[at].off = o;
        }
        src->puts[kind] = plan;
        src->n_set[kind] = set;
    }
    /* Partitions p with p % count == index. */
    src->n_parts = index < src->n_part
                       ? (int)((src->n_part - index + count - 1) / count)
                       : 0;
    size_t n = (size_t)(src->n_parts ? src->n_parts : 1);
    src->parts = tdm__calloc(n, sizeof *src->parts);
    src->next = tdm__calloc(n, sizeof *src->next);
    src->fin = tdm__calloc(n, 1);
    if (!src->parts || !src->next || !src->fin) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    for (int64_t p = index, j = 0; p < src->n_part; p += count, j++) {
        src->parts[j] = p;
        src->next[j] = p;
    }
    /* With count dividing the partitions, the subtask owns n_part /
     * count of them, index + j * count, and visiting them in turn visits
     * the counts index, index + count, index + 2 * count, ... */
    src->ap = src->n_parts > 0 && src->n_part % count == 0;
    src->pos = index;
    src->stride = count;
    *n_partitions = src->n_parts;
    *out = src;
    return TDM_OK;
fail:
    nx_close(src);
    return err;
}

static inline tdm_err put_str(const tdm__source *src, tdm__batch *b,
                              tdm__row *row, int k, const char *s)
{
    int f = src->f[k];
    if (f < 0 || !s)
        return TDM_OK;
    return tdm__batch_set_string(b, row, f, s, strlen(s));
}

/* Sets the string fields of @p row, the last of @p b, from event @p ev
 * (kind and event id); on failure the row is dropped. */
static tdm_err put_strings(tdm__source *src, tdm__batch *b, tdm__row *row,
                           const tdm__nx_event *ev)
{
    char mem[512];
    tdm__nx_strings s;
    tdm__nx_strings_of(ev, mem, sizeof mem, &s);
    tdm_err err;
    if ((err = put_str(src, b, row, NF_NAME, s.name)) ||
        (err = put_str(src, b, row, NF_EMAIL, s.email)) ||
        (err = put_str(src, b, row, NF_CARD, s.credit_card)) ||
        (err = put_str(src, b, row, NF_CITY, s.city)) ||
        (err = put_str(src, b, row, NF_STATE, s.state)) ||
        (err = put_str(src, b, row, NF_ITEM, s.item_name)) ||
        (err = put_str(src, b, row, NF_DESC, s.description)) ||
        (err = put_str(src, b, row, NF_CHANNEL, s.channel)) ||
        (err = put_str(src, b, row, NF_URL, s.url))) {
        tdm__batch_drop_last(b);
        return err;
    }
    return TDM_OK;
}

/* Appends event @p ev as a row of local partition @p j; the batch has
 * room (callers check).  Every value of the row is written from the
 * kind's plan (a value or zero and null), so the row starts as
 * tdm__batch_add would leave it, in one pass instead of two. */
static inline __attribute__((always_inline)) tdm_err
put_row(tdm__source *src, tdm__batch *b, const tdm__nx_event *ev, int j)
{
    tdm__row *row = &b->rows[b->n++];
    const nx_put *put = src->puts[ev->kind];
    const nx_put *set = put + src->n_set[ev->kind], *end = put + src->nf;
    tdm__val *vals = row->v;
    row->ts = ev->date_time;
    row->partition = (uint32_t)j;
    row->flags = 0;
    for (; put < set; put++) {
        tdm__val *v = &vals[put->f];
        memcpy(&v->u.i, (const char *)ev + put->off, sizeof v->u.i);
        v->null = 0;
    }
    for (; put < end; put++) {
        tdm__val *v = &vals[put->f];
        memset(v, 0, sizeof *v);
        v->null = 1;
    }
    /* event_type: a null entry of every plan, overwritten. */
    if (src->f[NF_TYPE] >= 0) {
        vals[src->f[NF_TYPE]].u.i = ev->kind;
        vals[src->f[NF_TYPE]].null = 0;
    }
    return src->strings ? put_strings(src, b, row, ev) : TDM_OK;
}

/* nx_poll in progression mode: runs of up to NX_RUN events of the
 * counts pos, pos + stride, ..., each row tagged with its partition (the
 * partitions take turns), until the batch is full or the counts pass
 * the end; then every partition is finished at once (their next counts
 * are all past it), as the turn-taking loop would find them. */
static tdm_err poll_run(tdm__source *src, tdm__batch *b, size_t limit,
                        uint8_t *finished)
{
    tdm__nx_event evs[NX_RUN];
    while (b->n < limit) {
        if (src->pos >= src->total) {
            for (int j = 0; j < src->n_parts; j++) {
                src->fin[j] = 1;
                if (finished)
                    finished[j] = 1;
            }
            src->n_done = src->n_parts;
            break;
        }
        /* Each event makes at most one row: no run overfills. */
        int64_t left = (src->total - src->pos - 1) / src->stride + 1;
        size_t n = limit - b->n < NX_RUN ? limit - b->n : NX_RUN;
        if ((int64_t)n > left)
            n = (size_t)left;
        tdm__nx_events(&src->nx, src->want, src->pos, src->stride, n, evs);
        int j = src->cur;
        for (size_t k = 0; k < n; k++) {
            int jk = j;
            j = j + 1 == src->n_parts ? 0 : j + 1;
            if (!(src->nx.kinds & (1 << evs[k].kind)))
                continue;
            tdm_err err = put_row(src, b, &evs[k], jk);
            if (err != TDM_OK) {
                src->pos += (int64_t)(k + 1) * src->stride;
                src->cur = j;
                return err;
            }
        }
        src->cur = j;
        src->pos += (int64_t)n * src->stride;
    }
    return TDM_OK;
}

/* Appends up to @p max rows, one event of each local partition in turn
 * (so partitions advance together in event time). */
static tdm_err nx_poll(tdm__source *src, tdm__batch *b, size_t max,
                       uint8_t *finished, int *eof)
{
    size_t limit = b->n + max > b->cap ? b->cap : b->n + max;
    *eof = 0;
    if (src->ap && src->n_done < src->n_parts) {
        tdm_err err = poll_run(src, b, limit, finished);
        if (err != TDM_OK)
            return err;
    }
    /* Otherwise one event of each local partition in turn. */
    while (!src->ap && src->n_done < src->n_parts && b->n < limit) {
        int j = src->cur;
        src->cur = j + 1 == src->n_parts ? 0 : j + 1;
        if (src->fin[j])
            continue;
        int64_t c = src->next[j];
        if (c >= src->total) {
            src->fin[j] = 1;
            src->n_done++;
            if (finished)
                finished[j] = 1;
            continue;
        }
        src->next[j] = c + src->n_part;
        tdm__nx_event ev;
        tdm__nx_events(&src->nx, src->want, c, 1, 1, &ev);
        if (!(src->nx.kinds & (1 << ev.kind)))
            continue;
        tdm_err err = put_row(src, b, &ev, j);
        if (err != TDM_OK)
            return err;
    }
    if (src->n_done == src->n_parts)
        *eof = 1;
    return TDM_OK;
}

const tdm__source_vtab tdm__nexmark_source = {
    .version = 1,
    .open = nx_open,
    .poll = nx_poll,
    .close = nx_close,
};
