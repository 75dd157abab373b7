/* SPDX-License-Identifier: MIT */
/* fuzz_json.c - libFuzzer target for the JSON-lines parser
 * (src/connect/json.c) and the line reader and stream under it.
 *
 * Byte 0 configures: bits 0-2 the timestamp unit (ms, s, us, ns,
 * iso8601), bit 3 event or ingestion time, bits 4-5 which field holds the
 * timestamp (ts:timestamp, i:int64, s:string, d:double), bit 6 whether
 * the input also goes through a file and tdm__stream_read.  The rest is
 * split at newlines; each line is parsed three ways - automatic (fast
 * scanner, jansson fallback), jansson only, fast scanner only - and the
 * results must agree exactly: same code, same reason, same row.  Any
 * disagreement or broken invariant is a __builtin_trap().
 * tests/fuzz/replay.c runs the seed corpus (tests/fuzz/corpus_json/).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const ts_fields[4] = {"ts", "i", "s", "d"};

/* Two rows are the same: timestamp, nulls and values (strings by bytes,
 * doubles by bits so that -0.0 and NaN compare exactly). */
static void same_row(const tdm__row *a, const tdm__row *b)
{
    CHECK(a->ts == b->ts);
    for (int f = 0; f < a->schema->n; f++) {
        CHECK(a->v[f].null == b->v[f].null);
        if (a->v[f].null)
            continue;
        switch (a->schema->fields[f].type) {
        case TDM_TYPE_STRING:
            CHECK(a->v[f].u.s.len == b->v[f].u.s.len);
            CHECK(memcmp(a->v[f].u.s.p, b->v[f].u.s.p, a->v[f].u.s.len) == 0);
            break;
        case TDM_TYPE_DOUBLE:
            CHECK(memcmp(&a->v[f].u.d, &b->v[f].u.d, sizeof(double)) == 0);
            break;
        default:
            CHECK(a->v[f].u.i == b->v[f].u.i);
            break;
        }
    }
}

/* Checks a parsed row: strings inside the arena, a timestamp in event
 * time. */
static void check_row(const tdm__source_conf *conf, const tdm__batch *b,
                      const tdm__row *r)
{
    if (conf->time_mode == TDM__TIME_EVENT)
        CHECK(r->ts != TDM_TIME_MIN);
    else
        CHECK(r->ts == TDM_TIME_MIN);
    for (int f = 0; f < conf->schema->n; f++) {
        const tdm__val *v = &r->v[f];
        if (v->null || conf->schema->fields[f].type != TDM_TYPE_STRING)
            continue;
        CHECK(v->u.s.p >= b->arena &&
              v->u.s.p + v->u.s.len <= b->arena + b->arena_used);
    }
}

static void parse_three_ways(const tdm__source_conf *conf, tdm__batch *ba,
                             tdm__batch *bj, tdm__batch *bf, const char *line,
                             size_t len)
{
    char ra[512], rj[512], rf[512];
    tdm_err ea, ej, ef;

    if (ba->n == ba->cap) {
        tdm__batch_clear(ba);
        tdm__batch_clear(bj);
        tdm__batch_clear(bf);
    }
    uint32_t da = ba->n_dup_keys, dj = bj->n_dup_keys;
    ea = tdm__json_parse_line_mode(conf, line, len, ba, ra, sizeof ra,
                                   TDM__JSON_AUTO);
    ej = tdm__json_parse_line_mode(conf, line, len, bj, rj, sizeof rj,
                                   TDM__JSON_JANSSON);
    ef = tdm__json_parse_line_mode(conf, line, len, bf, rf, sizeof rf,
                                   TDM__JSON_FAST);
    CHECK(ea == TDM_OK || ea == TDM_ERR_PARSE);
    CHECK(ea == ej);
    if (ea == TDM_ERR_PARSE) {
        CHECK(strcmp(ra, rj) == 0);
        CHECK(ra[0] != '\0');
    } else {
        check_row(conf, ba, &ba->rows[ba->n - 1]);
        same_row(&ba->rows[ba->n - 1], &bj->rows[bj->n - 1]);
    }
    if (ef != TDM_ERR_UNSUPPORTED) {
        /* The fast path decided: it must have decided like jansson. */
        CHECK(ef == ej);
        if (ef == TDM_OK)
            same_row(&bf->rows[bf->n - 1], &bj->rows[bj->n - 1]);
        else
            CHECK(strcmp(rf, rj) == 0);
    }
    /* A repeated key is counted alike on both paths, and only by
     * jansson: the fast path takes no line with one. */
    CHECK(ba->n_dup_keys - da == bj->n_dup_keys - dj);
    CHECK(bf->n_dup_keys == 0);
    if (ef == TDM_OK)
        CHECK(bj->n_dup_keys == dj);
    /* The caller of a failed parse drops the row. */
    if (ea != TDM_OK)
        tdm__batch_drop_last(ba);
    if (ej != TDM_OK)
        tdm__batch_drop_last(bj);
    if (ef != TDM_OK && ef != TDM_ERR_UNSUPPORTED)
        tdm__batch_drop_last(bf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tdm__schema schema;
    tdm__source_conf conf;
    tdm__batch *ba, *bj, *bf;
    const char *p, *end;
    int lines = 0;

    if (size < 1)
        return 0;
    if (tdm__schema_parse("s:string, i:int64, d:double, b:bool, "
                          "ts:timestamp",
                          &schema, NULL, 0) != TDM_OK)
        return 0;
    memset(&conf, 0, sizeof conf);
    conf.name = "fuzz";
    conf.format = TDM__FMT_JSON;
    conf.schema = &schema;
    conf.partition_field = -1;
    conf.ts_unit = data[0] % 5 + 1;
    conf.time_mode = data[0] & 8 ? TDM__TIME_INGESTION : TDM__TIME_EVENT;
    conf.ts_field = tdm__schema_find(&schema, ts_fields[(data[0] >> 4) & 3]);
    ba = tdm__batch_new(&schema, 8);
    bj = tdm__batch_new(&schema, 8);
    bf = tdm__batch_new(&schema, 8);
    CHECK(ba && bj && bf);
    p = (const char *)data + 1;
    end = (const char *)data + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        parse_three_ways(&conf, ba, bj, bf, p, len);
        lines++;
        p += len + (nl != NULL);
    }
    if (data[0] & 64)
        fuzz_through_stream(&conf, data + 1, size - 1, lines, check_row);
    tdm__batch_destroy(ba);
    tdm__batch_destroy(bj);
    tdm__batch_destroy(bf);
    tdm__schema_free(&schema);
    return 0;
}
