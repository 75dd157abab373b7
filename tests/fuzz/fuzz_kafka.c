/* SPDX-License-Identifier: MIT */
/* fuzz_kafka.c - libFuzzer target for the two parsers of bytes that come
 * from Kafka rather than from tidemark's own memory: the commit metadata
 * ("tdm1 wm=<ms>", src/connect/kafka_common.c), which any group member
 * or tool may have written, and the repartition topic's row values
 * (src/connect/kafka_shuffle.c), which any producer may have written.
 *
 * Byte 0 picks the parser (even: metadata, odd: row value); the rest is
 * the input.  Invariants (a violation is __builtin_trap()): metadata
 * parses to 1 or 0 and a parsed watermark formats back to text that
 * parses to the same watermark; a row value decodes to OK or PARSE (never
 * NOMEM for a batch with room), and a decoded row encodes to bytes that
 * decode to a row encoding to the same bytes again (a fixed point).
 * tests/fuzz/replay.c runs tests/fuzz/corpus_kafka/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/kafka.h"
#include "connect/kafka_shuffle.h"
#include "runtime/rt.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_meta(const uint8_t *p, size_t n)
{
    tdm_time_ms wm = 0, top = 0, again = 0, again_top = 0;
    int ok = tdm__kafka_meta_parse(p, n, &wm, &top);
    CHECK(ok == 0 || ok == 1);
    if (!ok) {
        CHECK(wm == TDM_TIME_MIN && top == TDM_TIME_MIN);
        return;
    }
    char text[64];
    size_t len = tdm__kafka_meta_format(wm, top, text, sizeof text);
    CHECK(len < sizeof text);
    CHECK(tdm__kafka_meta_parse(text, len, &again, &again_top) == 1 &&
          again == wm && again_top == top);
}

static void fuzz_row(const uint8_t *p, size_t n)
{
    tdm__schema sc;
    CHECK(tdm__schema_parse("k:string, n:int64, x:double, t:timestamp, "
                            "b:bool",
                            &sc, NULL, 0) == TDM_OK);
    tdm__batch *b = tdm__batch_new(&sc, 4);
    CHECK(b != NULL);
    tdm__row *row = NULL;
    tdm_err e = tdm__kshuffle_decode(p, n, b, &row);
    CHECK(e == TDM_OK || e == TDM_ERR_PARSE);
    if (e == TDM_OK) {
        tdm__keybuf k1 = {0}, k2 = {0};
        tdm__row *r2 = NULL;
        CHECK(tdm__kshuffle_encode(row, &k1) == TDM_OK);
        CHECK(tdm__kshuffle_decode(k1.p, k1.len, b, &r2) == TDM_OK);
        CHECK(tdm__kshuffle_encode(r2, &k2) == TDM_OK);
        CHECK(k1.len == k2.len && memcmp(k1.p, k2.p, k1.len) == 0);
        tdm__free(k1.p);
        tdm__free(k2.p);
    }
    tdm__batch_destroy(b);
    tdm__schema_free(&sc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] % 2 == 0)
        fuzz_meta(data + 1, size - 1);
    else
        fuzz_row(data + 1, size - 1);
    return 0;
}
