/* SPDX-License-Identifier: MIT */
/* fuzz_ckpt.c - libFuzzer target for the checkpoint codec and manifest
 * decoder (src/state/ckpt_codec.c, ckpt_store.c).
 *
 * Every input is decoded three ways: (1) as a MANIFEST file as is;
 * (2) as the body of a manifest, sealed with the magic in front and a
 * correct CRC-32C behind, so the fuzzer reaches the section parser
 * without having to forge checksums; (3) as a generic section stream,
 * walked recursively, each body read as nested sections or else as a
 * run of values chosen by its tag.  Invariants (a violation is
 * __builtin_trap()): only OK, PARSE (or NOMEM) come back; an error's
 * offset lies within the input and the message starts with "offset ";
 * a decoded manifest has valid, distinct blob names and re-encodes to
 * bytes that decode to the same manifest; every varint decoded
 * re-encodes to exactly the bytes it was read from (minimal form); a
 * decoder never moves past its end.  tests/fuzz/replay.c runs
 * tests/fuzz/corpus_ckpt/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "fuzz_check.h"
#include "state/ckpt_codec.h"
#include "state/ckpt_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_same(const tdm__ckpt_manifest *a, const tdm__ckpt_manifest *b)
{
    CHECK(a->version == b->version && a->id == b->id && a->kind == b->kind);
    CHECK(strcmp(a->job, b->job) == 0);
    CHECK(a->created_ms == b->created_ms);
    CHECK(a->parallelism == b->parallelism && a->key_groups == b->key_groups);
    CHECK(a->meta_len == b->meta_len);
    CHECK(a->meta_len == 0 || memcmp(a->meta, b->meta, a->meta_len) == 0);
    CHECK(a->n_blobs == b->n_blobs);
    for (size_t i = 0; i < a->n_blobs; i++) {
        CHECK(strcmp(a->blobs[i].name, b->blobs[i].name) == 0);
        CHECK(a->blobs[i].size == b->blobs[i].size);
        CHECK(a->blobs[i].crc == b->blobs[i].crc);
    }
}

static void manifest(const uint8_t *p, size_t len)
{
    tdm__ckpt_manifest m, back;
    char err[200];
    tdm_err rc = tdm__ckpt_manifest_decode(p, len, &m, err, sizeof err);
    if (rc != TDM_OK) {
        CHECK(rc == TDM_ERR_PARSE || rc == TDM_ERR_NOMEM);
        if (rc == TDM_ERR_PARSE) {
            CHECK(strncmp(err, "offset ", 7) == 0);
            CHECK(strtoull(err + 7, NULL, 10) <= len);
        }
        CHECK(m.job == NULL && m.blobs == NULL && m.n_blobs == 0);
        return;
    }
    CHECK(m.version == TDM__CKPT_VERSION);
    CHECK(m.id <= TDM__CKPT_ID_MAX);
    CHECK(m.kind == TDM__CKPT_CHECKPOINT || m.kind == TDM__CKPT_SAVEPOINT);
    for (size_t i = 0; i < m.n_blobs; i++) {
        CHECK(tdm__ckpt_name_ok(m.blobs[i].name));
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(m.blobs[i].name, m.blobs[j].name) != 0);
    }
    uint8_t *enc;
    size_t enc_len;
    if (tdm__ckpt_manifest_encode(&m, &enc, &enc_len) == TDM_OK) {
        CHECK(tdm__ckpt_manifest_decode(enc, enc_len, &back, err, sizeof err) ==
              TDM_OK);
        check_same(&m, &back);
        tdm__ckpt_manifest_free(&back);
        tdm__free(enc);
    }
    tdm__ckpt_manifest_free(&m);
}

/* The input as a manifest body: magic in front, CRC behind. */
static void sealed_manifest(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size + 12);
    if (!buf)
        return;
    memcpy(buf, "TDMCKPT", 8);
    if (size)
        memcpy(buf + 8, data, size);
    uint32_t crc = tdm__crc32c(0, buf, size + 8);
    for (int i = 0; i < 4; i++)
        buf[size + 8 + (size_t)i] = (uint8_t)(crc >> (8 * i));
    manifest(buf, size + 12);
    free(buf);
}

static void check_error(const tdm__dec *d, size_t total)
{
    size_t off;
    const char *why;
    CHECK(d->pos <= d->len);
    if (tdm__dec_error(d, &off, &why) != TDM_OK) {
        CHECK(off <= total);
        CHECK(why != NULL);
    }
}

/* Reads values from @p d, picked by @p tag, until it ends or fails. */
static void values(tdm__dec *d, uint64_t tag, const uint8_t *all, size_t total)
{
    for (int k = 0; tdm__dec_left(d) > 0 && k < 256; k++) {
        size_t start = d->pos;
        uint64_t u;
        int64_t s;
        uint32_t u32;
        const void *p;
        size_t n;
        char *str;
        tdm_err rc;
        switch ((tag + (uint64_t)k) % 4) {
        case 0:
            rc = tdm__dec_uvar(d, &u);
            if (rc == TDM_OK) {
                /* Minimal form: re-encoding gives the same bytes. */
                tdm__enc e;
                uint8_t *b;
                size_t bl;
                tdm__enc_init(&e);
                tdm__enc_uvar(&e, u);
                if (tdm__enc_finish(&e, &b, &bl) == TDM_OK) {
                    CHECK(bl == d->pos - start);
                    CHECK(memcmp(b, d->p + start, bl) == 0);
                    tdm__free(b);
                }
            }
            break;
        case 1:
            rc = tdm__dec_svar(d, &s);
            break;
        case 2:
            rc = tdm__dec_bytes(d, &p, &n);
            if (rc == TDM_OK)
                CHECK(n == 0 || ((const uint8_t *)p >= all &&
                                 (const uint8_t *)p + n <= all + total));
            break;
        default:
            rc = (tag & 4) ? tdm__dec_u32(d, &u32) : tdm__dec_str(d, &str);
            if (rc == TDM_OK && !(tag & 4)) {
                CHECK(strlen(str) + 1 <= d->pos - start);
                tdm__free(str);
            }
            break;
        }
        check_error(d, total);
        if (rc != TDM_OK)
            return;
    }
}

/* Walks @p d as a stream of sections; each body is walked the same way
 * (to depth 4) and, if it is not made of sections, read as values. */
static void sections(tdm__dec *d, int depth, const uint8_t *all, size_t total)
{
    while (tdm__dec_left(d) > 0) {
        uint64_t tag;
        tdm__dec body;
        if (tdm__dec_section(d, &tag, &body) != TDM_OK) {
            check_error(d, total);
            return;
        }
        CHECK(body.base + body.len <= total);
        tdm__dec probe = body;
        if (depth < 4)
            sections(&probe, depth + 1, all, total);
        if (probe.err != TDM_OK)
            values(&body, tag, all, total);
    }
    CHECK(tdm__dec_done(d) == TDM_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    manifest(data, size);
    sealed_manifest(data, size);
    tdm__dec d;
    tdm__dec_init(&d, data, size);
    sections(&d, 0, data, size);
    return 0;
}
