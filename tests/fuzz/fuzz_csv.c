/* SPDX-License-Identifier: MIT */
/* fuzz_csv.c - libFuzzer target for the CSV parser (src/connect/csv.c)
 * and the line reader and stream under it.
 *
 * Byte 0 configures: bits 0-1 the delimiter (',' ';' tab '|'), bit 2
 * whether the first line is a header, bits 3-5 the timestamp unit, bit 6
 * whether the input also goes through a file and tdm__stream_read.  The
 * rest is split at newlines and parsed line by line against a fixed
 * schema.  Invariants (a violation is __builtin_trap()): only OK or
 * PARSE come back, with a reason on PARSE; a row's strings lie in the
 * batch arena; event time rows have a timestamp; a line whose cells hold
 * no quote, delimiter or newline parses to exactly its cells when it has
 * the right count and every cell is a string (schema "a, b, c" of
 * strings); and a row written back as CSV (quoted where needed) parses
 * to the same values.  tests/fuzz/replay.c runs tests/fuzz/corpus_csv/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char delims[4] = {',', ';', '\t', '|'};

static void check_row(const tdm__source_conf *conf, const tdm__batch *b,
                      const tdm__row *r)
{
    if (conf->time_mode == TDM__TIME_EVENT && conf->ts_field >= 0)
        CHECK(r->ts != TDM_TIME_MIN);
    for (int f = 0; f < conf->schema->n; f++) {
        const tdm__val *v = &r->v[f];
        if (v->null || conf->schema->fields[f].type != TDM_TYPE_STRING)
            continue;
        CHECK(v->u.s.p >= b->arena &&
              v->u.s.p + v->u.s.len <= b->arena + b->arena_used);
    }
}

/* Writes the string values of @p r as one CSV line (every cell quoted,
 * quotes doubled; a null cell empty and unquoted) into @p out. */
static size_t write_back(const tdm__row *r, char delim, char *out, size_t n)
{
    size_t o = 0;
    for (int f = 0; f < r->schema->n; f++) {
        const tdm__val *v = &r->v[f];
        if (f > 0 && o < n)
            out[o++] = delim;
        if (v->null)
            continue;
        if (o < n)
            out[o++] = '"';
        for (uint32_t k = 0; k < v->u.s.len && o + 2 < n; k++) {
            if (v->u.s.p[k] == '"')
                out[o++] = '"';
            out[o++] = v->u.s.p[k];
        }
        if (o < n)
            out[o++] = '"';
    }
    return o;
}

/* The all-strings schema: a row must survive being written back. */
static void round_trip(const tdm__source_conf *conf, const int *cols,
                       int n_cols, const char *line, size_t len)
{
    tdm__batch *b = tdm__batch_new(conf->schema, 2);
    char reason[512], *back;
    size_t blen, cap = 3 * len + 64;

    CHECK(b != NULL);
    if (tdm__csv_parse_line(conf, cols, n_cols, line, len, b, reason,
                            sizeof reason) != TDM_OK) {
        tdm__batch_destroy(b);
        return;
    }
    back = malloc(cap);
    CHECK(back != NULL);
    blen = write_back(&b->rows[0], conf->csv_delimiter, back, cap);
    CHECK(blen < cap);
    /* Written back in schema order: parse it with the identity map. */
    int ident[3] = {0, 1, 2};
    tdm_err err = tdm__csv_parse_line(conf, ident, 3, back, blen, b, reason,
                                      sizeof reason);
    if (err == TDM_OK) {
        const tdm__row *x = &b->rows[0], *y = &b->rows[1];
        for (int f = 0; f < 3; f++) {
            CHECK(x->v[f].null == y->v[f].null);
            if (x->v[f].null)
                continue;
            CHECK(x->v[f].u.s.len == y->v[f].u.s.len);
            CHECK(memcmp(x->v[f].u.s.p, y->v[f].u.s.p, x->v[f].u.s.len) == 0);
        }
    } else {
        /* Only an all-null or all-blank row may fail to come back (an
         * empty line), or one whose text is not a line at all. */
        CHECK(err == TDM_ERR_PARSE);
    }
    free(back);
    tdm__batch_destroy(b);
}

/* Parses every line against @p schema_text; returns the line count. */
static int run(const char *schema_text, uint8_t cfg, const uint8_t *data,
               size_t size, bool strings_only)
{
    tdm__schema schema;
    tdm__source_conf conf;
    tdm__batch *b;
    const char *p = (const char *)data, *end = p + size;
    int *cols = NULL, n_cols = 0, lines = 0;
    char reason[512];

    if (tdm__schema_parse(schema_text, &schema, NULL, 0) != TDM_OK)
        return 0;
    memset(&conf, 0, sizeof conf);
    conf.name = "fuzz";
    conf.format = TDM__FMT_CSV;
    conf.csv_delimiter = delims[cfg & 3];
    conf.csv_header = (cfg & 4) != 0;
    conf.schema = &schema;
    conf.partition_field = -1;
    conf.time_mode = strings_only ? TDM__TIME_PROCESSING : TDM__TIME_EVENT;
    conf.ts_field = tdm__schema_find(&schema, "ts");
    conf.ts_unit = (cfg >> 3) % 5 + 1;
    b = tdm__batch_new(&schema, 8);
    CHECK(b != NULL);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        lines++;
        if (conf.csv_header && !cols) {
            tdm_err err = tdm__csv_header(&conf, p, len, &cols, &n_cols, reason,
                                          sizeof reason);
            CHECK(err == TDM_OK || err == TDM_ERR_PARSE);
            if (err == TDM_OK) {
                for (int c = 0; c < n_cols; c++)
                    CHECK(cols[c] >= -1 && cols[c] < schema.n);
            }
        }
        if (!cols) {
            n_cols = schema.n;
            cols = malloc((size_t)n_cols * sizeof *cols);
            CHECK(cols != NULL);
            for (int c = 0; c < n_cols; c++)
                cols[c] = c;
        }
        if (b->n == b->cap)
            tdm__batch_clear(b);
        tdm_err err = tdm__csv_parse_line(&conf, cols, n_cols, p, len, b,
                                          reason, sizeof reason);
        CHECK(err == TDM_OK || err == TDM_ERR_PARSE);
        if (err == TDM_OK)
            check_row(&conf, b, &b->rows[b->n - 1]);
        else {
            CHECK(reason[0] != '\0');
            tdm__batch_drop_last(b);
        }
        if (strings_only)
            round_trip(&conf, cols, n_cols, p, len);
        p += len + (nl != NULL);
    }
    if (cfg & 64)
        fuzz_through_stream(&conf, data, size, lines, check_row);
    if (cols)
        tdm__free(cols);
    tdm__batch_destroy(b);
    tdm__schema_free(&schema);
    return lines;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    run("s:string, i:int64, d:double, b:bool, ts:timestamp", data[0], data + 1,
        size - 1, false);
    run("a:string, b:string, c:string", data[0], data + 1, size - 1, true);
    return 0;
}
