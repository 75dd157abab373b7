/* SPDX-License-Identifier: MIT */
/* test_ckpt_codec.c - the checkpoint payload codec and CRC-32C
 * (src/state/ckpt_codec.c) and the manifest encoding
 * (src/state/ckpt_store.c): CRC check value and a bit-at-a-time reference,
 * hand-computed byte layouts, round trips at the extremes, every
 * truncation failing cleanly with an offset, unknown sections skipped,
 * non-minimal varints refused.  Expected bytes are worked out by hand in
 * the comments, never taken from the encoder.
 */
#include "harness.h"
#include "core.h"
#include "state/ckpt_codec.h"
#include "state/ckpt_store.h"
#include "testhooks.h"

/* An independent CRC-32C: bit by bit from the reflected polynomial, no
 * table. */
static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Finishes @p e into a buffer the test owns. */
static uint8_t *finish(tdm__enc *e, size_t *len)
{
    uint8_t *out;
    ASSERT_OK(tdm__enc_finish(e, &out, len));
    return out;
}

TDM_TEST(crc32c_check_value)
{
    /* The standard check value of CRC-32C. */
    ASSERT_EQ(tdm__crc32c(0, "123456789", 9), 0xE3069283u);
    ASSERT_EQ(tdm__crc32c(0, "", 0), 0);
    /* 32 zero bytes: the value given in RFC 3720 (iSCSI), B.4. */
    uint8_t zeros[32] = {0};
    ASSERT_EQ(tdm__crc32c(0, zeros, 32), 0x8A9136AAu);
    uint8_t ones[32];
    memset(ones, 0xFF, sizeof ones);
    ASSERT_EQ(tdm__crc32c(0, ones, 32), 0x62A8AB43u);
}

TDM_TEST(crc32c_matches_bitwise_and_chains)
{
    uint64_t seed = 7;
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rng_next(&seed);
    for (size_t n = 0; n <= sizeof buf; n += 37) {
        ASSERT_EQ(tdm__crc32c(0, buf, n), crc_bitwise(buf, n));
        /* Chaining at every split gives the whole. */
        size_t cut = n / 3;
        ASSERT_EQ(tdm__crc32c(tdm__crc32c(0, buf, cut), buf + cut, n - cut),
                  crc_bitwise(buf, n));
    }
    /* Every start offset and short length (the 8-byte steps and the
     * byte tail, at any alignment). */
    for (size_t off = 0; off < 16; off++)
        for (size_t n = 0; n < 40; n++)
            ASSERT_EQ(tdm__crc32c(0, buf + off, n), crc_bitwise(buf + off, n));
}

TDM_TEST(codec_fixed_and_varint_bytes)
{
    tdm__enc e;
    size_t len;
    tdm__enc_init(&e);
    tdm__enc_u32(&e, 0x01020304u);         /* 04 03 02 01 */
    tdm__enc_uvar(&e, 300);                /* 300 = 0b10_0101100: AC 02 */
    tdm__enc_svar(&e, -1);                 /* zigzag 1: 01 */
    tdm__enc_svar(&e, 1);                  /* zigzag 2: 02 */
    tdm__enc_svar(&e, INT64_MIN);          /* zigzag 2^64-1: FF x9, 01 */
    tdm__enc_str(&e, "hi");                /* 02 'h' 'i' */
    tdm__enc_u64(&e, 0x1122334455667788u); /* 88 77 .. 11 */
    uint8_t *b = finish(&e, &len);
    static const uint8_t want[] = {
        0x04, 0x03, 0x02, 0x01, 0xAC, 0x02, 0x01, 0x02, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x02, 'h',
        'i',  0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
    ASSERT_EQ(len, sizeof want);
    ASSERT_TRUE(memcmp(b, want, len) == 0);
    tdm__free(b);
}

/* Encodes one of every type at the extremes and reads it back. */
static uint8_t *encode_all(size_t *len)
{
    tdm__enc e;
    tdm__enc_init(&e);
    tdm__enc_u8(&e, 0);
    tdm__enc_u8(&e, 255);
    tdm__enc_u32(&e, 0);
    tdm__enc_u32(&e, UINT32_MAX);
    tdm__enc_u64(&e, UINT64_MAX);
    tdm__enc_uvar(&e, 0);
    tdm__enc_uvar(&e, 127);
    tdm__enc_uvar(&e, 128);
    tdm__enc_uvar(&e, UINT64_MAX);
    tdm__enc_svar(&e, 0);
    tdm__enc_svar(&e, INT64_MIN);
    tdm__enc_svar(&e, INT64_MAX);
    tdm__enc_svar(&e, -64);
    tdm__enc_svar(&e, 64);
    tdm__enc_bytes(&e, "", 0);
    tdm__enc_bytes(&e, "\0\1\2", 3);
    tdm__enc_str(&e, "checkpoint");
    tdm__enc_begin(&e, 9);
    tdm__enc_u32(&e, 42);
    tdm__enc_begin(&e, 10);
    tdm__enc_svar(&e, -5);
    tdm__enc_end(&e);
    tdm__enc_end(&e);
    tdm__enc_uvar(&e, 77);
    return finish(&e, len);
}

/* Decodes what encode_all() wrote; returns the first error code. */
static tdm_err decode_all(const uint8_t *b, size_t len, int check)
{
    tdm__dec d;
    uint8_t u8;
    uint32_t u32;
    uint64_t u64;
    int64_t s64;
    const void *p;
    size_t n;
    char *s = NULL;
    tdm__dec_init(&d, b, len);
    tdm__dec_u8(&d, &u8);
    if (check)
        ASSERT_EQ(u8, 0);
    tdm__dec_u8(&d, &u8);
    if (check)
        ASSERT_EQ(u8, 255);
    tdm__dec_u32(&d, &u32);
    if (check)
        ASSERT_EQ(u32, 0);
    tdm__dec_u32(&d, &u32);
    if (check)
        ASSERT_EQ(u32, UINT32_MAX);
    tdm__dec_u64(&d, &u64);
    if (check)
        ASSERT_TRUE(u64 == UINT64_MAX);
    tdm__dec_uvar(&d, &u64);
    if (check)
        ASSERT_EQ(u64, 0);
    tdm__dec_uvar(&d, &u64);
    if (check)
        ASSERT_EQ(u64, 127);
    tdm__dec_uvar(&d, &u64);
    if (check)
        ASSERT_EQ(u64, 128);
    tdm__dec_uvar(&d, &u64);
    if (check)
        ASSERT_TRUE(u64 == UINT64_MAX);
    tdm__dec_svar(&d, &s64);
    if (check)
        ASSERT_EQ(s64, 0);
    tdm__dec_svar(&d, &s64);
    if (check)
        ASSERT_TRUE(s64 == INT64_MIN);
    tdm__dec_svar(&d, &s64);
    if (check)
        ASSERT_TRUE(s64 == INT64_MAX);
    tdm__dec_svar(&d, &s64);
    if (check)
        ASSERT_EQ(s64, -64);
    tdm__dec_svar(&d, &s64);
    if (check)
        ASSERT_EQ(s64, 64);
    tdm__dec_bytes(&d, &p, &n);
    if (check)
        ASSERT_EQ(n, 0);
    tdm__dec_bytes(&d, &p, &n);
    if (check) {
        ASSERT_EQ(n, 3);
        ASSERT_TRUE(memcmp(p, "\0\1\2", 3) == 0);
    }
    tdm__dec_str(&d, &s);
    if (check)
        ASSERT_STR_EQ(s, "checkpoint");
    tdm__free(s);
    uint64_t tag;
    tdm__dec sec, inner;
    tdm__dec_section(&d, &tag, &sec);
    if (check)
        ASSERT_EQ(tag, 9);
    tdm__dec_u32(&sec, &u32);
    if (check)
        ASSERT_EQ(u32, 42);
    tdm__dec_section(&sec, &tag, &inner);
    if (check)
        ASSERT_EQ(tag, 10);
    tdm__dec_svar(&inner, &s64);
    if (check)
        ASSERT_EQ(s64, -5);
    tdm__dec_done(&inner);
    tdm__dec_done(&sec);
    tdm__dec_uvar(&d, &u64);
    if (check)
        ASSERT_EQ(u64, 77);
    tdm__dec_done(&d);
    if (sec.err != TDM_OK)
        return sec.err;
    if (inner.err != TDM_OK)
        return inner.err;
    return d.err;
}

TDM_TEST(codec_round_trip_extremes)
{
    size_t len;
    uint8_t *b = encode_all(&len);
    ASSERT_OK(decode_all(b, len, 1));
    tdm__free(b);
}

TDM_TEST(codec_truncated_at_every_length)
{
    size_t len;
    uint8_t *b = encode_all(&len);
    for (size_t cut = 0; cut < len; cut++) {
        /* A copy of exactly cut bytes, so ASan sees any overread. */
        uint8_t *c = tdm__malloc(cut ? cut : 1);
        memcpy(c, b, cut);
        tdm__dec d;
        tdm__dec_init(&d, c, cut);
        /* Read as a generic stream of the same shape. */
        ASSERT_ERR(decode_all(c, cut, 0), TDM_ERR_PARSE);
        /* The offset of the first bad byte is within (or at the end of)
         * the input. */
        uint64_t v;
        while (tdm__dec_uvar(&d, &v) == TDM_OK) {
        }
        size_t off;
        const char *why;
        ASSERT_ERR(tdm__dec_error(&d, &off, &why), TDM_ERR_PARSE);
        ASSERT_TRUE(off <= cut);
        ASSERT_TRUE(why != NULL);
        tdm__free(c);
    }
    tdm__free(b);
}

TDM_TEST(codec_errors_have_offsets)
{
    /* A varint cut after its continuation byte: missing byte at 1. */
    static const uint8_t cut_var[] = {0x80};
    tdm__dec d;
    uint64_t v;
    size_t off;
    const char *why;
    tdm__dec_init(&d, cut_var, sizeof cut_var);
    ASSERT_ERR(tdm__dec_uvar(&d, &v), TDM_ERR_PARSE);
    tdm__dec_error(&d, &off, &why);
    ASSERT_EQ(off, 1);
    /* Sticky: nothing reads after an error. */
    uint8_t u8;
    ASSERT_ERR(tdm__dec_u8(&d, &u8), TDM_ERR_PARSE);
    /* Non-minimal: 0x80 0x00 is 0 written in two bytes (bad byte at 1). */
    static const uint8_t overlong[] = {0x80, 0x00};
    tdm__dec_init(&d, overlong, sizeof overlong);
    ASSERT_ERR(tdm__dec_uvar(&d, &v), TDM_ERR_PARSE);
    tdm__dec_error(&d, &off, &why);
    ASSERT_EQ(off, 1);
    /* Eleven bytes / a tenth byte above 1 overflow 64 bits (byte 9). */
    static const uint8_t big[] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                  0xFF, 0xFF, 0xFF, 0xFF, 0x02};
    tdm__dec_init(&d, big, sizeof big);
    ASSERT_ERR(tdm__dec_uvar(&d, &v), TDM_ERR_PARSE);
    tdm__dec_error(&d, &off, &why);
    ASSERT_EQ(off, 9);
    /* A byte string claiming 5 bytes with 2 left: bad length at 1. */
    static const uint8_t str[] = {0x00, 0x05, 'a', 'b'};
    const void *p;
    size_t n;
    tdm__dec_init(&d, str, sizeof str);
    ASSERT_OK(tdm__dec_u8(&d, &u8));
    ASSERT_ERR(tdm__dec_bytes(&d, &p, &n), TDM_ERR_PARSE);
    tdm__dec_error(&d, &off, &why);
    ASSERT_EQ(off, 1);
    /* A string with a NUL inside is refused. */
    static const uint8_t nul[] = {0x03, 'a', 0, 'b'};
    char *s;
    tdm__dec_init(&d, nul, sizeof nul);
    ASSERT_ERR(tdm__dec_str(&d, &s), TDM_ERR_PARSE);
    ASSERT_TRUE(s == NULL);
    /* A section whose length runs past the end: bad length at 1. */
    static const uint8_t sec[] = {0x07, 0x10, 0x00, 0x00, 0x00, 0x01};
    tdm__dec body;
    uint64_t tag;
    tdm__dec_init(&d, sec, sizeof sec);
    ASSERT_ERR(tdm__dec_section(&d, &tag, &body), TDM_ERR_PARSE);
    tdm__dec_error(&d, &off, &why);
    ASSERT_EQ(off, 1);
    ASSERT_ERR(tdm__dec_u8(&body, &u8), TDM_ERR_PARSE);
    /* Trailing bytes. */
    static const uint8_t two[] = {0x01, 0x02};
    tdm__dec_init(&d, two, sizeof two);
    ASSERT_OK(tdm__dec_u8(&d, &u8));
    ASSERT_ERR(tdm__dec_done(&d), TDM_ERR_PARSE);
    tdm__dec_error(&d, &off, &why);
    ASSERT_EQ(off, 1);
}

TDM_TEST(codec_section_layout_and_skip)
{
    tdm__enc e;
    size_t len;
    tdm__enc_init(&e);
    tdm__enc_begin(&e, 200); /* tag 200 = C8 01; length 3 = 03 00 00 00 */
    tdm__enc_raw(&e, "xyz", 3);
    tdm__enc_end(&e);
    tdm__enc_begin(&e, 1); /* tag 01; length 1; body 2A */
    tdm__enc_u8(&e, 42);
    tdm__enc_end(&e);
    uint8_t *b = finish(&e, &len);
    static const uint8_t want[] = {0xC8, 0x01, 0x03, 0x00, 0x00, 0x00, 'x', 'y',
                                   'z',  0x01, 0x01, 0x00, 0x00, 0x00, 0x2A};
    ASSERT_EQ(len, sizeof want);
    ASSERT_TRUE(memcmp(b, want, len) == 0);
    /* A reader that knows only tag 1 skips tag 200 by its length. */
    tdm__dec d, body;
    uint64_t tag;
    int seen = 0;
    tdm__dec_init(&d, b, len);
    while (tdm__dec_left(&d) > 0) {
        ASSERT_OK(tdm__dec_section(&d, &tag, &body));
        if (tag != 1)
            continue;
        uint8_t v;
        ASSERT_OK(tdm__dec_u8(&body, &v));
        ASSERT_EQ(v, 42);
        /* Tag at 9, length at 10..13: the body starts at byte 14. */
        ASSERT_EQ(body.base, 14);
        seen++;
    }
    ASSERT_EQ(seen, 1);
    ASSERT_OK(tdm__dec_done(&d));
    tdm__free(b);
}

TDM_TEST(codec_unbalanced_sections)
{
    tdm__enc e;
    uint8_t *b;
    size_t len;
    tdm__enc_init(&e);
    tdm__enc_begin(&e, 1);
    ASSERT_ERR(tdm__enc_finish(&e, &b, &len), TDM_ERR_STATE);
    ASSERT_TRUE(b == NULL);
    tdm__enc_init(&e);
    tdm__enc_end(&e);
    ASSERT_ERR(tdm__enc_finish(&e, &b, &len), TDM_ERR_STATE);
    /* Out of memory is reported at the end, not lost. */
    tdm__enc_init(&e);
    tdm__alloc_fail_after(1);
    tdm__enc_u64(&e, 1);
    tdm__alloc_fail_after(0);
    ASSERT_ERR(tdm__enc_finish(&e, &b, &len), TDM_ERR_NOMEM);
}

/* ---- Manifest ---- */

static tdm__ckpt_blob_info blobs3[] = {
    {"source-0", 10, 0x11111111u},
    {"op.window-1", 0, 0u},
    {"x", UINT64_MAX, 0xFFFFFFFFu},
};

static tdm__ckpt_manifest sample(void)
{
    tdm__ckpt_manifest m = {0};
    m.version = 1;
    m.id = TDM__CKPT_ID_MAX;
    m.kind = TDM__CKPT_SAVEPOINT;
    m.job = "clicks";
    m.created_ms = INT64_MIN;
    m.parallelism = UINT32_MAX;
    m.key_groups = 128;
    m.meta = (uint8_t *)"\x00\x01meta";
    m.meta_len = 6;
    m.blobs = blobs3;
    m.n_blobs = 3;
    return m;
}

TDM_TEST(manifest_round_trip_and_layout)
{
    tdm__ckpt_manifest m = sample(), back;
    uint8_t *b;
    size_t len;
    char err[200];
    ASSERT_OK(tdm__ckpt_manifest_encode(&m, &b, &len));
    /* Magic "TDMCKPT\0", version 1 little-endian, then the header section
     * (tag 01), and the CRC-32C of all before it in the last 4 bytes. */
    ASSERT_TRUE(memcmp(b, "TDMCKPT\0\x01\x00\x00\x00\x01", 13) == 0);
    uint32_t crc = crc_bitwise(b, len - 4);
    ASSERT_EQ(b[len - 4] | b[len - 3] << 8 | b[len - 2] << 16 |
                  (uint32_t)b[len - 1] << 24,
              crc);
    ASSERT_OK(tdm__ckpt_manifest_decode(b, len, &back, err, sizeof err));
    ASSERT_EQ(back.version, 1);
    ASSERT_TRUE(back.id == TDM__CKPT_ID_MAX);
    ASSERT_EQ(back.kind, TDM__CKPT_SAVEPOINT);
    ASSERT_STR_EQ(back.job, "clicks");
    ASSERT_TRUE(back.created_ms == INT64_MIN);
    ASSERT_TRUE(back.parallelism == UINT32_MAX);
    ASSERT_EQ(back.key_groups, 128);
    ASSERT_EQ(back.meta_len, 6);
    ASSERT_TRUE(memcmp(back.meta, "\x00\x01meta", 6) == 0);
    ASSERT_EQ(back.n_blobs, 3);
    for (size_t i = 0; i < 3; i++) {
        ASSERT_STR_EQ(back.blobs[i].name, blobs3[i].name);
        ASSERT_TRUE(back.blobs[i].size == blobs3[i].size);
        ASSERT_EQ(back.blobs[i].crc, blobs3[i].crc);
    }
    tdm__ckpt_manifest_free(&back);
    tdm__free(b);
}

TDM_TEST(manifest_every_truncation_and_flip_fails)
{
    tdm__ckpt_manifest m = sample(), back;
    uint8_t *b;
    size_t len;
    char err[200];
    ASSERT_OK(tdm__ckpt_manifest_encode(&m, &b, &len));
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *c = tdm__malloc(cut ? cut : 1);
        memcpy(c, b, cut);
        err[0] = 0;
        ASSERT_ERR(tdm__ckpt_manifest_decode(c, cut, &back, err, sizeof err),
                   TDM_ERR_PARSE);
        ASSERT_TRUE(strncmp(err, "offset ", 7) == 0);
        ASSERT_TRUE(back.job == NULL && back.blobs == NULL);
        tdm__free(c);
    }
    for (size_t i = 0; i < len; i++) {
        b[i] ^= 0x20;
        ASSERT_ERR(tdm__ckpt_manifest_decode(b, len, &back, err, sizeof err),
                   TDM_ERR_PARSE);
        b[i] ^= 0x20;
    }
    tdm__free(b);
}

/* Builds a manifest by hand with the codec, optionally with an unknown
 * section, and seals it with the (independent) bitwise CRC. */
static uint8_t *hand_manifest(uint32_t version, int unknown, int dup,
                              size_t *len)
{
    tdm__enc e;
    tdm__enc_init(&e);
    tdm__enc_raw(&e, "TDMCKPT\0", 8);
    tdm__enc_u32(&e, version);
    if (unknown) {
        tdm__enc_begin(&e, 99);
        tdm__enc_str(&e, "from the future");
        tdm__enc_end(&e);
    }
    tdm__enc_begin(&e, 1);
    tdm__enc_uvar(&e, 5); /* id */
    tdm__enc_u8(&e, 0);   /* checkpoint */
    tdm__enc_str(&e, "j");
    tdm__enc_svar(&e, 1000);
    tdm__enc_uvar(&e, 2);
    tdm__enc_uvar(&e, 16);
    tdm__enc_bytes(&e, NULL, 0);
    if (unknown)
        tdm__enc_u64(&e, 12345); /* a later header field */
    tdm__enc_end(&e);
    for (int i = 0; i < 1 + dup; i++) {
        tdm__enc_begin(&e, 2);
        tdm__enc_str(&e, "b");
        tdm__enc_uvar(&e, 3);
        tdm__enc_u32(&e, 7);
        tdm__enc_end(&e);
    }
    uint8_t *b;
    ASSERT_OK(tdm__enc_finish(&e, &b, len));
    uint32_t crc = crc_bitwise(b, *len);
    b = tdm__realloc(b, *len + 4);
    for (int i = 0; i < 4; i++)
        b[*len + (size_t)i] = (uint8_t)(crc >> (8 * i));
    *len += 4;
    return b;
}

TDM_TEST(manifest_unknown_sections_skipped)
{
    tdm__ckpt_manifest m;
    char err[200];
    size_t len;
    uint8_t *b = hand_manifest(1, 1, 0, &len);
    ASSERT_OK(tdm__ckpt_manifest_decode(b, len, &m, err, sizeof err));
    ASSERT_EQ(m.id, 5);
    ASSERT_STR_EQ(m.job, "j");
    ASSERT_EQ(m.created_ms, 1000);
    ASSERT_EQ(m.parallelism, 2);
    ASSERT_EQ(m.key_groups, 16);
    ASSERT_EQ(m.n_blobs, 1);
    ASSERT_STR_EQ(m.blobs[0].name, "b");
    tdm__ckpt_manifest_free(&m);
    tdm__free(b);

    /* Version 2 is refused by name, at offset 8. */
    b = hand_manifest(2, 0, 0, &len);
    ASSERT_ERR(tdm__ckpt_manifest_decode(b, len, &m, err, sizeof err),
               TDM_ERR_PARSE);
    ASSERT_STR_EQ(err, "offset 8: unknown manifest format version");
    tdm__free(b);

    /* The same blob twice is refused. */
    b = hand_manifest(1, 0, 1, &len);
    ASSERT_ERR(tdm__ckpt_manifest_decode(b, len, &m, err, sizeof err),
               TDM_ERR_PARSE);
    ASSERT_TRUE(strstr(err, "duplicate blob name") != NULL);
    tdm__free(b);
}

TDM_TEST(manifest_blob_names)
{
    ASSERT_TRUE(tdm__ckpt_name_ok("op-3.keyed_state"));
    ASSERT_TRUE(!tdm__ckpt_name_ok(""));
    ASSERT_TRUE(!tdm__ckpt_name_ok(".hidden"));
    ASSERT_TRUE(!tdm__ckpt_name_ok("a/b"));
    ASSERT_TRUE(!tdm__ckpt_name_ok(".."));
    ASSERT_TRUE(!tdm__ckpt_name_ok("MANIFEST"));
    ASSERT_TRUE(!tdm__ckpt_name_ok("LOCK"));
    ASSERT_TRUE(!tdm__ckpt_name_ok("sp ace"));
    char longname[TDM__CKPT_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname);
    longname[TDM__CKPT_NAME_MAX] = 0;
    ASSERT_TRUE(tdm__ckpt_name_ok(longname));
    longname[TDM__CKPT_NAME_MAX] = 'a';
    longname[TDM__CKPT_NAME_MAX + 1] = 0;
    ASSERT_TRUE(!tdm__ckpt_name_ok(longname));
}
