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
 * Cost: rows are written by the generator itself (tdm__nx_fill): the
 * source hands it one column per schema field, pointing into the batch's
 * values, plus the rows' timestamps and partitions, and it writes the
 * events of the kept kinds only, stepping over the others
 * arithmetically.  When the subtask's partitions are visited in one
 * arithmetic progression of event counts (partitions a multiple of the
 * parallelism, the usual case) a poll is one call; otherwise one call
 * per round of partitions.  The generator clears each value's null flag
 * as it writes it; a short pass, only when needed, nulls the fields a
 * row's kind lacks (per-kind plan of the schema) and sets the strings.
 * The batch's layout this relies on (values of row r at vals + r * nf,
 * partition and flags adjacent, the null flag's word after the value)
 * is checked: statically, or once per fill.
 *
 * Checkpoints (version 3): a partition's position is its next event
 * count.  A restore rebuilds the progression when the counts form one,
 * else visits partitions one by one (whole rounds again once the counts
 * line up).
 */
#include <stddef.h>
#include <string.h>

#include "connect/conn.h"
#include "connect/nexmark.h"
#include "state/ckpt_codec.h"

/* The fields a NEXMark row can have, in this order in f[]. */
enum {
    NF_TYPE,
    NF_ID,
    NF_NAME,
    NF_EMAIL,
    NF_CARD,
    NF_CITY,
    NF_STATE,
    NF_ITEM,
    NF_DESC,
    NF_INITIAL,
    NF_RESERVE,
    NF_EXPIRES,
    NF_SELLER,
    NF_CATEGORY,
    NF_AUCTION,
    NF_BIDDER,
    NF_PRICE,
    NF_CHANNEL,
    NF_URL,
    NF_TIME,
    NF_COUNT
};

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
    {"event_type", 0},    {"id", 0},          {"name", 1},
    {"email_address", 1}, {"credit_card", 1}, {"city", 1},
    {"state", 1},         {"item_name", 1},   {"description", 1},
    {"initial_bid", 0},   {"reserve", 0},     {"expires", 2},
    {"seller", 0},        {"category", 0},    {"auction", 0},
    {"bidder", 0},        {"price", 0},       {"channel", 1},
    {"url", 1},           {"date_time", 2},
};

struct tdm__source {
    tdm__source_conf conf;
    tdm__nx_conf nx;
    int f[NF_COUNT]; /* schema index of each field, -1: absent */
    bool strings;    /* some string field is present */
    int nf;          /* schema fields */
    /* Per kind, the plan of its rows, one entry per schema field but
     * event_type: first the n_set[kind] integer fields the kind has,
     * then the n_null[kind] fields left null (strings too: put_strings
     * sets the kind's own).  puts[kind] points into plan. */
    nx_put *plan;
    const nx_put *puts[3];
    int n_set[3], n_null[3];
    int one_kind;         /* the only kind kept, or -1 */
    bool pass;            /* rows need fill_rows' pass (nulls, strings) */
    unsigned str_want;    /* TDM__NX_S_* the schema has */
    int col_of[NF_COUNT]; /* tdm__nx_fill column of field k, -1: none */
    /* Scratch columns of a fill (event ids for strings, kinds when
     * several are kept and the schema has no event_type), scratch_cap
     * entries each. */
    int64_t *scratch;
    size_t scratch_cap;
    int par; /* the parallelism (subtasks) */
    int64_t total, n_part;
    int64_t *parts; /* this subtask's partitions */
    int64_t *next;  /* per local partition: its next event count */
    uint8_t *fin;
    int n_parts, n_done, cur;
    /* Progression mode: the counts visited are pos, pos + stride, ...
     * (cur: the local partition of pos); next[] is then unused. */
    bool ap;
    int64_t pos, stride;
    bool ragged; /* after restore: next[] may not be one round */
};

/* The tdm__nx_fill column of field @p k (-1 for event_type and
 * strings). */
static int field_col(int k)
{
    switch (k) {
    case NF_ID:
        return 3;
    case NF_SELLER:
        return 4;
    case NF_CATEGORY:
        return 5;
    case NF_INITIAL:
        return 6;
    case NF_RESERVE:
        return 7;
    case NF_EXPIRES:
        return 8;
    case NF_AUCTION:
        return 9;
    case NF_BIDDER:
        return 10;
    case NF_PRICE:
        return 11;
    case NF_TIME:
        return 1;
    default:
        return -1;
    }
}

/* The TDM__NX_S_* bit of string field @p k (0 for the others). */
static unsigned field_str(int k)
{
    switch (k) {
    case NF_NAME:
        return TDM__NX_S_NAME;
    case NF_EMAIL:
        return TDM__NX_S_EMAIL;
    case NF_CARD:
        return TDM__NX_S_CREDIT_CARD;
    case NF_CITY:
        return TDM__NX_S_CITY;
    case NF_STATE:
        return TDM__NX_S_STATE;
    case NF_ITEM:
        return TDM__NX_S_ITEM_NAME;
    case NF_DESC:
        return TDM__NX_S_DESCRIPTION;
    case NF_CHANNEL:
        return TDM__NX_S_CHANNEL;
    case NF_URL:
        return TDM__NX_S_URL;
    default:
        return 0;
    }
}

/* The plan entry of integer field @p k for rows of kind @p kind: where
 * the value lives in tdm__nx_event (only "has it" matters: tdm__nx_fill
 * writes exactly these), or PLAN_NULL when the kind has no such field
 * (strings are PLAN_NULL too: put_strings sets them; event_type is in
 * no plan, fill_rows sets it). */
static int plan_entry(int k, int kind)
{
    const bool person = kind == TDM__NX_PERSON;
    const bool auction = kind == TDM__NX_AUCTION;
    const bool bid = kind == TDM__NX_BID;
    switch (k) {
    case NF_TIME:
        return (int)offsetof(tdm__nx_event, date_time);
    case NF_ID:
        return person || auction ? (int)offsetof(tdm__nx_event, id) : PLAN_NULL;
    case NF_INITIAL:
        return auction ? (int)offsetof(tdm__nx_event, initial_bid) : PLAN_NULL;
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
    default:
        return PLAN_NULL;
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
    tdm__free(src->scratch);
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
                            "nexmark field '%s' must be %s", nx_fields[k].name,
                            nx_fields[k].kind == 1 ? "a string"
                                                   : "an int64 or timestamp");
            goto fail;
        }
        if (nx_fields[k].kind == 1)
            src->strings = true;
    }
    src->nx.no_prices = src->f[NF_PRICE] < 0 && src->f[NF_INITIAL] < 0 &&
                        src->f[NF_RESERVE] < 0;
    src->one_kind = -1;
    for (int kind = 0; kind < 3; kind++)
        if (src->nx.kinds == 1 << kind)
            src->one_kind = kind;
    src->par = count;
    for (int k = 0; k < NF_COUNT; k++) {
        src->col_of[k] = src->f[k] >= 0 ? field_col(k) : -1;
        if (src->f[k] >= 0)
            src->str_want |= field_str(k);
    }
    /* The rows' plans. */
    src->nf = conf->schema->n;
    src->plan =
        tdm__calloc((size_t)(3 * (src->nf ? src->nf : 1)), sizeof *src->plan);
    if (!src->plan) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    for (int kind = 0; kind < 3; kind++) {
        nx_put *plan = src->plan + kind * src->nf;
        int set = 0, null = 0;
        /* Set entries first, then null ones; event_type in neither. */
        for (int pass = 0; pass < 2; pass++) {
            for (int f = 0; f < src->nf; f++) {
                int o = PLAN_NULL;
                if (f == src->f[NF_TYPE])
                    continue;
                for (int k = 0; k < NF_COUNT; k++)
                    if (src->f[k] == f && k != NF_TYPE)
                        o = plan_entry(k, kind);
                if ((o != PLAN_NULL) != (pass == 0))
                    continue;
                plan[set + null].f = f;
                plan[set + null].off = o;
                if (pass == 0)
                    set++;
                else
                    null++;
            }
        }
        src->puts[kind] = plan;
        src->n_set[kind] = set;
        src->n_null[kind] = null;
        if (null && (src->nx.kinds & (1 << kind)))
            src->pass = true;
    }
    if (src->strings)
        src->pass = true;
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

/* Sets the string fields of @p row from event (@p kind, @p event_id);
 * TDM_ERR_NOMEM if the arena cannot grow. */
static tdm_err put_strings(const tdm__source *src, tdm__batch *b, tdm__row *row,
                           int kind, int64_t event_id)
{
    static const int str_fields[] = {NF_NAME, NF_EMAIL,   NF_CARD,
                                     NF_CITY, NF_STATE,   NF_ITEM,
                                     NF_DESC, NF_CHANNEL, NF_URL};
    char mem[512];
    tdm__nx_strings s;
    tdm__nx_event ev;
    ev.kind = kind;
    ev.event_id = event_id;
    tdm__nx_strings_some(&ev, src->str_want, mem, sizeof mem, &s);
    const char *val[] = {s.name,        s.email,   s.credit_card,
                         s.city,        s.state,   s.item_name,
                         s.description, s.channel, s.url};
    for (size_t k = 0; k < sizeof val / sizeof val[0]; k++) {
        int f = src->f[str_fields[k]];
        if (f < 0 || !val[k])
            continue;
        tdm_err err = tdm__batch_put_string(b, row, f, val[k], strlen(val[k]));
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* The partition of a row goes to the 8 bytes of partition and flags
 * (the generator writes its turn, below 2^32, as an int64: partition =
 * turn, flags = 0). */
_Static_assert(offsetof(tdm__row, flags) ==
                   offsetof(tdm__row, partition) + sizeof(uint32_t),
               "partition and flags adjacent");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the turn's low half is the partition");
/* A value's null flag is cleared by the generator's 8-byte "flag" word
 * (tdm__nx_cols.flag): null and the padding after it. */
_Static_assert(offsetof(tdm__val, null) >= sizeof(int64_t) &&
                   offsetof(tdm__val, null) + sizeof(int64_t) <=
                       sizeof(tdm__val),
               "null's word inside the value, after u.i");

/* Appends the rows of the kept events among the @p n counts count,
 * count + stride, ... (local partitions turn, turn + 1, ... mod n_parts)
 * until the batch holds @p limit rows; *walked: the counts walked (see
 * tdm__nx_fill).  The generator writes values, timestamps and
 * partitions straight into the batch; the null flags, event_type's and
 * the strings are set here.  TDM_OK, or TDM_ERR_NOMEM (scratch or
 * strings; the rows from the failing one on are dropped). */
static tdm_err fill_rows(tdm__source *src, tdm__batch *b, size_t limit,
                         int64_t count, int64_t stride, int64_t n, int turn,
                         int64_t *walked)
{
    const size_t row0 = b->n, room = limit - b->n, nf = (size_t)src->nf;
    const bool need_kind = src->one_kind < 0 && src->f[NF_TYPE] < 0;
    tdm__nx_cols cols;
    *walked = 0;
    if (room == 0 || n <= 0)
        return TDM_OK;
    /* The rows' values are one array (tdm__batch_new): row r's value f
     * is vals[r * nf + f]; checked at both ends of the rows written. */
    if (nf && b->rows[limit - 1].v != b->rows[row0].v + (room - 1) * nf)
        return TDM_ERR_INVAL;
    if ((src->strings || need_kind) && src->scratch_cap < room) {
        int64_t *p = tdm__realloc(src->scratch, 2 * room * sizeof *p);
        if (!p)
            return TDM_ERR_NOMEM;
        src->scratch = p;
        src->scratch_cap = room;
    }
    memset(&cols, 0, sizeof cols);
    for (int k = 0; k < NF_COUNT; k++) {
        int col = src->col_of[k];
        if (col < 0)
            continue;
        cols.p[col] = (char *)&b->rows[row0].v[src->f[k]].u.i;
        cols.stride[col] = nf * sizeof(tdm__val);
        cols.flag[col] = offsetof(tdm__val, null);
    }
    if (src->f[NF_TYPE] >= 0) {
        cols.p[TDM__NX_C_KIND] = (char *)&b->rows[row0].v[src->f[NF_TYPE]].u.i;
        cols.stride[TDM__NX_C_KIND] = nf * sizeof(tdm__val);
        cols.flag[TDM__NX_C_KIND] = offsetof(tdm__val, null);
    } else if (need_kind) {
        cols.p[TDM__NX_C_KIND] = (char *)src->scratch;
        cols.stride[TDM__NX_C_KIND] = sizeof(int64_t);
    }
    if (src->strings) {
        cols.p[0] = (char *)(src->scratch + src->scratch_cap);
        cols.stride[0] = sizeof(int64_t);
    }
    cols.p[TDM__NX_C_DATE_TIME2] = (char *)&b->rows[row0].ts;
    cols.stride[TDM__NX_C_DATE_TIME2] = sizeof(tdm__row);
    cols.p[TDM__NX_C_TURN] = (char *)&b->rows[row0].partition;
    cols.stride[TDM__NX_C_TURN] = sizeof(tdm__row);
    cols.turn = turn;
    cols.turns = src->n_parts;
    size_t got = tdm__nx_fill(&src->nx, &cols, count, stride, n, room, walked);
    /* The values written are flagged not null; the fields the row's kind
     * does not have are made null here, and the strings set. */
    if (!src->pass) {
        b->n = row0 + got;
        return TDM_OK;
    }
    for (size_t r = 0; r < got; r++) {
        tdm__row *row = &b->rows[row0 + r];
        tdm__val *vals = row->v;
        int kind = src->one_kind;
        if (kind < 0)
            kind = src->f[NF_TYPE] >= 0 ? (int)vals[src->f[NF_TYPE]].u.i
                                        : (int)src->scratch[r];
        const nx_put *put = src->puts[kind] + src->n_set[kind];
        const nx_put *end = put + src->n_null[kind];
        for (; put < end; put++) {
            tdm__val *v = &vals[put->f];
            memset(v, 0, sizeof *v);
            v->null = 1;
        }
        if (src->strings) {
            b->n = row0 + r + 1;
            tdm_err err = put_strings(src, b, row, kind,
                                      src->scratch[src->scratch_cap + r]);
            if (err != TDM_OK) {
                tdm__batch_drop_last(b);
                return err;
            }
        }
    }
    b->n = row0 + got;
    return TDM_OK;
}

/* nx_poll in progression mode: the counts pos, pos + stride, ..., each
 * row tagged with its partition (the partitions take turns), until the
 * batch is full or the counts pass the end; then every partition is
 * finished at once (their next counts are all past it), as the
 * turn-taking loop would find them. */
static tdm_err poll_run(tdm__source *src, tdm__batch *b, size_t limit,
                        uint8_t *finished)
{
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
        int64_t left = (src->total - src->pos - 1) / src->stride + 1;
        int64_t walked = 0;
        tdm_err err = fill_rows(src, b, limit, src->pos, src->stride, left,
                                src->cur, &walked);
        src->pos += walked * src->stride;
        src->cur = (int)((src->cur + walked % src->n_parts) % src->n_parts);
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* Whether next[] is one round (next[k] = next[0] + k * par), as it
 * always is at j = 0 unless a restore took partitions at different
 * rounds; checked only then, and cleared once true. */
static bool in_step(tdm__source *src)
{
    if (!src->ragged)
        return true;
    for (int k = 1; k < src->n_parts; k++)
        if (src->next[k] != src->next[0] + (int64_t)k * src->par)
            return false;
    src->ragged = false;
    return true;
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
    /* Otherwise one event of each local partition in turn: a whole
     * round (partition j's next count is index + j * par + r * P, so a
     * round is a progression of stride par) in one fill while every
     * partition has its event, else partition by partition. */
    while (!src->ap && src->n_done < src->n_parts && b->n < limit) {
        int j = src->cur;
        int64_t walked = 0;
        tdm_err err;
        if (j == 0 && src->n_done == 0 &&
            src->next[src->n_parts - 1] < src->total && in_step(src)) {
            err = fill_rows(src, b, limit, src->next[0], src->par, src->n_parts,
                            0, &walked);
            for (int64_t k = 0; k < walked; k++)
                src->next[k] += src->n_part;
            src->cur = walked == src->n_parts ? 0 : (int)walked;
            if (err != TDM_OK)
                return err;
            continue;
        }
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
        err = fill_rows(src, b, limit, c, 1, 1, j, &walked);
        if (err != TDM_OK)
            return err;
    }
    if (src->n_done == src->n_parts)
        *eof = 1;
    return TDM_OK;
}

/* ---- Checkpoints ---- */

/* The next event count of local partition @p j. */
static int64_t nx_next_count(const tdm__source *src, int j)
{
    if (!src->ap)
        return src->next[j];
    int64_t k = (j - src->cur + src->n_parts) % src->n_parts;
    int64_t c;
    if (__builtin_mul_overflow(k, src->stride, &c) ||
        __builtin_add_overflow(c, src->pos, &c))
        return INT64_MAX;
    return c;
}

/* Encodes this subtask's partitions (docs/checkpoints.md). */
static tdm_err nx_snapshot(tdm__source *src, struct tdm__enc *e, char *errbuf,
                           size_t errbuf_size)
{
    (void)errbuf;
    (void)errbuf_size;
    tdm__enc_begin(e, TDM__SNAP_TAG_NEXMARK);
    tdm__enc_uvar(e, TDM__SNAP_SOURCE_VERSION);
    tdm__enc_uvar(e, (uint64_t)src->n_part);
    tdm__enc_uvar(e, (uint64_t)src->n_parts);
    for (int j = 0; j < src->n_parts; j++) {
        tdm__enc_uvar(e, (uint64_t)src->parts[j]);
        tdm__enc_uvar(e, (uint64_t)nx_next_count(src, j));
        tdm__enc_u8(e, src->fin[j]);
    }
    tdm__enc_end(e);
    return e->oom ? TDM_ERR_NOMEM : TDM_OK;
}

/* Sets the poll state from the next counts in src->next (every local
 * partition restored). */
static void nx_resume(tdm__source *src)
{
    int n = src->n_parts;
    /* The partition that goes first: the lowest round, first index. */
    int first = 0;
    for (int j = 1; j < n; j++)
        if ((src->next[j] - src->parts[j]) / src->n_part <
            (src->next[first] - src->parts[first]) / src->n_part)
            first = j;
    src->cur = first;
    src->n_done = 0;
    for (int j = 0; j < n; j++)
        src->n_done += src->fin[j];
    /* Finished partitions stay finished, not reported again.  The
     * progression finishes its partitions all at once: only when none or
     * all are. */
    if (src->ap && src->n_done > 0 && src->n_done < n)
        src->ap = false;
    if (src->ap) {
        /* Still one progression from next[first]? */
        bool prog = true;
        for (int k = 0; k < n && prog; k++) {
            int j = (first + k) % n;
            int64_t want;
            prog = !__builtin_mul_overflow((int64_t)k, src->stride, &want) &&
                   !__builtin_add_overflow(want, src->next[first], &want) &&
                   (src->next[j] == want ||
                    (src->next[j] >= src->total && want >= src->total));
        }
        if (prog) {
            src->pos = src->next[first];
            return;
        }
        src->ap = false;
    }
    src->ragged = true;
}

/* Reads the merged sections of the old subtasks (see connect.h): every
 * local partition must be listed once, with a count of its own. */
static tdm_err nx_restore(tdm__source *src, struct tdm__dec *d, char *errbuf,
                          size_t errbuf_size)
{
    tdm__dec body;
    size_t n_alloc = (size_t)(src->n_parts ? src->n_parts : 1);
    uint8_t *seen = tdm__calloc(n_alloc, 1);
    tdm_err err = TDM_OK;

    memset(&body, 0, sizeof body);
    if (!seen)
        return TDM_ERR_NOMEM;
    while (tdm__dec_left(d) > 0) {
        uint64_t tag, version, n_part, n;
        if (tdm__dec_section(d, &tag, &body) != TDM_OK) {
            err = tdm__conn_snap_error(&src->conf, d, errbuf, errbuf_size);
            goto out;
        }
        if (tag != TDM__SNAP_TAG_NEXMARK)
            tdm__dec_fail(&body, "not a NEXMark section");
        tdm__dec_uvar(&body, &version);
        if (!body.err && version != TDM__SNAP_SOURCE_VERSION)
            tdm__dec_fail(&body, "unknown NEXMark version");
        tdm__dec_uvar(&body, &n_part);
        if (!body.err && n_part != (uint64_t)src->n_part)
            tdm__dec_fail(&body, "generator.partitions differs from the "
                                 "checkpoint's");
        tdm__dec_uvar(&body, &n);
        if (!body.err && n > tdm__dec_left(&body))
            tdm__dec_fail(&body, "too many partitions");
        for (uint64_t k = 0; !body.err && k < n; k++) {
            uint64_t p, c;
            uint8_t fin;
            tdm__dec_uvar(&body, &p);
            tdm__dec_uvar(&body, &c);
            if (tdm__dec_u8(&body, &fin) != TDM_OK)
                break;
            if (p >= n_part || c > INT64_MAX / 2 || fin > 1 ||
                c % n_part != p) {
                tdm__dec_fail(&body, "bad partition entry");
                break;
            }
            for (int j = 0; j < src->n_parts; j++) {
                if ((uint64_t)src->parts[j] != p)
                    continue;
                if (seen[j]) {
                    tdm__dec_fail(&body, "partition listed twice");
                    break;
                }
                seen[j] = 1;
                if (fin && (int64_t)c < src->total) {
                    tdm__dec_fail(&body, "partition finished before its "
                                         "end");
                    break;
                }
                src->next[j] = (int64_t)c;
                src->fin[j] = fin;
            }
        }
        if (body.err) {
            err = tdm__conn_snap_error(&src->conf, &body, errbuf, errbuf_size);
            goto out;
        }
    }
    if (d->err) {
        err = tdm__conn_snap_error(&src->conf, d, errbuf, errbuf_size);
        goto out;
    }
    for (int j = 0; j < src->n_parts; j++) {
        if (!seen[j]) {
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                            "source '%s' checkpoint: NEXMark partition "
                            "%lld is missing",
                            src->conf.name ? src->conf.name : "?",
                            (long long)src->parts[j]);
            goto out;
        }
    }
    if (src->n_parts > 0)
        nx_resume(src);
out:
    tdm__free(seen);
    return err;
}

const tdm__source_vtab tdm__nexmark_source = {
    .version = 3,
    .open = nx_open,
    .poll = nx_poll,
    .close = nx_close,
    .snapshot = nx_snapshot,
    .restore = nx_restore,
};
