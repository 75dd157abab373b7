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
 */
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
    int64_t total, n_part;
    int64_t *parts;    /* this subtask's partitions */
    int64_t *next;     /* per local partition: its next event count */
    uint8_t *fin;
    int n_parts, n_done, cur;
};

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
    *n_partitions = src->n_parts;
    *out = src;
    return TDM_OK;
fail:
    nx_close(src);
    return err;
}

/* Sets integer field @p k of @p row if the schema has it. */
static inline void put_int(const tdm__source *src, tdm__row *row, int k,
                           int64_t v)
{
    int f = src->f[k];
    if (f >= 0) {
        row->v[f].u.i = v;
        row->v[f].null = 0;
    }
}

static inline tdm_err put_str(const tdm__source *src, tdm__batch *b,
                              tdm__row *row, int k, const char *s)
{
    int f = src->f[k];
    if (f < 0 || !s)
        return TDM_OK;
    return tdm__batch_set_string(b, row, f, s, strlen(s));
}

/* Appends event @p ev as a row of local partition @p j. */
static tdm_err emit(tdm__source *src, tdm__batch *b, const tdm__nx_event *ev,
                    int j)
{
    tdm__row *row = tdm__batch_add(b);
    if (!row)
        return TDM_ERR_NOMEM;
    row->ts = ev->date_time;
    row->partition = (uint32_t)j;
    put_int(src, row, NF_TYPE, ev->kind);
    put_int(src, row, NF_TIME, ev->date_time);
    switch (ev->kind) {
    case TDM__NX_PERSON:
        put_int(src, row, NF_ID, ev->id);
        break;
    case TDM__NX_AUCTION:
        put_int(src, row, NF_ID, ev->id);
        put_int(src, row, NF_INITIAL, ev->initial_bid);
        put_int(src, row, NF_RESERVE, ev->reserve);
        put_int(src, row, NF_EXPIRES, ev->expires);
        put_int(src, row, NF_SELLER, ev->seller);
        put_int(src, row, NF_CATEGORY, ev->category);
        break;
    default:
        put_int(src, row, NF_AUCTION, ev->auction);
        put_int(src, row, NF_BIDDER, ev->bidder);
        put_int(src, row, NF_PRICE, ev->price);
        break;
    }
    if (!src->strings)
        return TDM_OK;
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

/* Appends up to @p max rows, one event of each local partition in turn
 * (so partitions advance together in event time). */
static tdm_err nx_poll(tdm__source *src, tdm__batch *b, size_t max,
                       uint8_t *finished, int *eof)
{
    size_t limit = b->n + max > b->cap ? b->cap : b->n + max;
    *eof = 0;
    while (src->n_done < src->n_parts && b->n < limit) {
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
        tdm__nx_event_at(&src->nx, c, &ev);
        if (!(src->nx.kinds & (1 << ev.kind)))
            continue;
        tdm_err err = emit(src, b, &ev, j);
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
