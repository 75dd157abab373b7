/* SPDX-License-Identifier: MIT */
/* ckpt_codec.c - the binary encoder and bounds-checked decoder of
 * checkpoint payloads, and CRC-32C.
 *
 * The decoder checks every length against the bytes left before touching
 * them, so no input makes it read out of range; varints must be minimal
 * (one encoding per value) and fit 64 bits.  The CRC tables are built
 * from the polynomial on first use.  See ckpt_codec.h and docs/checkpoints.md.
 */
#include <pthread.h>
#include <string.h>

#include "state/ckpt_codec.h"

/* ---- CRC-32C ---- */

/* The Castagnoli polynomial 0x1EDC6F41, bit-reversed (the CRC runs
 * least significant bit first). */
#define CRC32C_POLY_REFLECTED 0x82F63B78u

/* crc_table[0] is the classic byte-at-a-time table; crc_table[k][i] is
 * the CRC state after byte i is followed by k zero bytes, which lets the
 * main loop fold eight input bytes per step with eight independent
 * lookups ("slicing by 8").  All eight are derived from the polynomial. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* Entry i of table 0 is the remainder of the byte i shifted through eight
 * steps of the bitwise division; table k extends table k-1 by one zero
 * byte. */
static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i;
        for (int bit = 0; bit < 8; bit++)
            r = (r & 1) ? (r >> 1) ^ CRC32C_POLY_REFLECTED : r >> 1;
        crc_table[0][i] = r;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t r = crc_table[k - 1][i];
            crc_table[k][i] = (r >> 8) ^ crc_table[0][r & 0xFF];
        }
}

/* CRC-32C of @p n bytes continuing from @p crc (0 to start).
 * Thread-safe (the tables are built once). */
uint32_t tdm__crc32c(uint32_t crc, const void *p, size_t n)
{
    const uint8_t *b = p;
    pthread_once(&crc_once, crc_init);
    crc = ~crc;
    while (n >= 8) {
        /* The first four bytes meet the current state; the last four
         * enter fresh.  Bytes are read one by one (any alignment and
         * byte order). */
        uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 |
                             (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
              crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
              crc_table[3][b[4]] ^ crc_table[2][b[5]] ^ crc_table[1][b[6]] ^
              crc_table[0][b[7]];
        b += 8;
        n -= 8;
    }
    while (n--)
        crc = crc_table[0][(crc ^ *b++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* ---- Encoder ---- */

void tdm__enc_init(tdm__enc *e)
{
    memset(e, 0, sizeof *e);
}

/* Frees the encoder's buffer and resets it. */
void tdm__enc_free(tdm__enc *e)
{
    tdm__free(e->buf);
    tdm__enc_init(e);
}

/* Makes room for @p n more bytes; returns the write position or NULL
 * (and sets the sticky oom flag). */
static uint8_t *reserve(tdm__enc *e, size_t n)
{
    if (e->oom || n == 0)
        return NULL; /* callers write nothing for n == 0 */
    if (n > SIZE_MAX / 2 - e->len) {
        e->oom = 1;
        return NULL;
    }
    if (e->len + n > e->cap) {
        size_t cap = e->cap ? e->cap : 256;
        while (cap < e->len + n)
            cap *= 2;
        uint8_t *nb = tdm__realloc(e->buf, cap);
        if (!nb) {
            e->oom = 1;
            return NULL;
        }
        e->buf = nb;
        e->cap = cap;
    }
    uint8_t *w = e->buf + e->len;
    e->len += n;
    return w;
}

static void put_le(uint8_t *w, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        w[i] = (uint8_t)(v >> (8 * i));
}

/* Appends one byte. */
void tdm__enc_u8(tdm__enc *e, uint8_t v)
{
    uint8_t *w = reserve(e, 1);
    if (w)
        *w = v;
}

/* Appends a little-endian u32. */
void tdm__enc_u32(tdm__enc *e, uint32_t v)
{
    uint8_t *w = reserve(e, 4);
    if (w)
        put_le(w, v, 4);
}

/* Appends a little-endian u64. */
void tdm__enc_u64(tdm__enc *e, uint64_t v)
{
    uint8_t *w = reserve(e, 8);
    if (w)
        put_le(w, v, 8);
}

/* Appends an unsigned LEB128 varint (minimal form, 1..10 bytes). */
void tdm__enc_uvar(tdm__enc *e, uint64_t v)
{
    uint8_t tmp[10];
    int n = 0;
    do {
        uint8_t b = v & 0x7F;
        v >>= 7;
        tmp[n++] = (uint8_t)(b | (v ? 0x80 : 0));
    } while (v);
    tdm__enc_raw(e, tmp, (size_t)n);
}

/* Appends a zigzag-encoded signed varint. */
void tdm__enc_svar(tdm__enc *e, int64_t v)
{
    /* Zigzag: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ...; done on the unsigned
     * value so INT64_MIN does not overflow. */
    uint64_t u = (uint64_t)v;
    tdm__enc_uvar(e, (u << 1) ^ (v < 0 ? UINT64_MAX : 0));
}

/* Appends @p len bytes as they are (copies). */
void tdm__enc_raw(tdm__enc *e, const void *p, size_t len)
{
    uint8_t *w = reserve(e, len);
    if (w && len)
        memcpy(w, p, len);
}

/* Appends a varint length and the bytes (copies). */
void tdm__enc_bytes(tdm__enc *e, const void *p, size_t len)
{
    tdm__enc_uvar(e, len);
    tdm__enc_raw(e, p, len);
}

/* Appends a string as length-prefixed bytes, without its NUL. */
void tdm__enc_str(tdm__enc *e, const char *s)
{
    tdm__enc_bytes(e, s, strlen(s));
}

/* Opens a section: writes the tag and reserves the u32 length. */
void tdm__enc_begin(tdm__enc *e, uint64_t tag)
{
    if (e->depth == TDM__ENC_MAX_DEPTH) {
        e->bad = 1;
        return;
    }
    tdm__enc_uvar(e, tag);
    e->open[e->depth++] = e->len;
    tdm__enc_u32(e, 0); /* the body length, filled in by tdm__enc_end */
}

/* Closes the innermost section, filling in its body length. */
void tdm__enc_end(tdm__enc *e)
{
    if (e->depth == 0 || e->bad) {
        e->bad = 1;
        return;
    }
    size_t at = e->open[--e->depth];
    if (e->oom)
        return;
    size_t body = e->len - at - 4;
    if (body > UINT32_MAX) {
        e->bad = 1;
        return;
    }
    put_le(e->buf + at, body, 4);
}

/* Hands the bytes to the caller (takes them out of @p e) or reports
 * the sticky error (NOMEM, STATE) and frees them. */
tdm_err tdm__enc_finish(tdm__enc *e, uint8_t **out, size_t *len)
{
    tdm_err rc = TDM_OK;
    *out = NULL;
    *len = 0;
    if (e->oom) {
        rc = TDM_ERR_NOMEM;
        goto fail;
    }
    if (e->bad || e->depth != 0) {
        rc = TDM_ERR_STATE;
        goto fail;
    }
    if (!e->buf) { /* an empty result is still a buffer */
        e->buf = tdm__malloc(1);
        if (!e->buf) {
            rc = TDM_ERR_NOMEM;
            goto fail;
        }
    }
    *out = e->buf;
    *len = e->len;
    tdm__enc_init(e);
    return TDM_OK;
fail:
    tdm__enc_free(e);
    return rc;
}

/* ---- Decoder ---- */

void tdm__dec_init(tdm__dec *d, const void *p, size_t len)
{
    memset(d, 0, sizeof *d);
    d->p = p;
    d->len = len;
}

/* Records the first error at relative offset @p at. */
static tdm_err fail_at(tdm__dec *d, size_t at, const char *why)
{
    if (d->err == TDM_OK) {
        d->err = TDM_ERR_PARSE;
        d->err_off = d->base + at;
        d->why = why;
    }
    return TDM_ERR_PARSE;
}

/* Marks an error at the current position (keeps an earlier one). */
tdm_err tdm__dec_fail(tdm__dec *d, const char *why)
{
    return fail_at(d, d->pos, why);
}

/* Bytes not yet read in this decoder's range. */
size_t tdm__dec_left(const tdm__dec *d)
{
    return d->len - d->pos;
}

/* Checks that @p n bytes are left; on failure the error offset is the end
 * of the input (the first byte that is missing). */
static int need(tdm__dec *d, size_t n, const char *why)
{
    if (d->err != TDM_OK)
        return 0;
    if (n > d->len - d->pos) {
        fail_at(d, d->len, why);
        return 0;
    }
    return 1;
}

static uint64_t get_le(const uint8_t *r, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)r[i] << (8 * i);
    return v;
}

/* Reads one byte. */
tdm_err tdm__dec_u8(tdm__dec *d, uint8_t *v)
{
    *v = 0;
    if (!need(d, 1, "truncated u8"))
        return TDM_ERR_PARSE;
    *v = d->p[d->pos++];
    return TDM_OK;
}

/* Reads a little-endian u32. */
tdm_err tdm__dec_u32(tdm__dec *d, uint32_t *v)
{
    *v = 0;
    if (!need(d, 4, "truncated u32"))
        return TDM_ERR_PARSE;
    *v = (uint32_t)get_le(d->p + d->pos, 4);
    d->pos += 4;
    return TDM_OK;
}

/* Reads a little-endian u64. */
tdm_err tdm__dec_u64(tdm__dec *d, uint64_t *v)
{
    *v = 0;
    if (!need(d, 8, "truncated u64"))
        return TDM_ERR_PARSE;
    *v = get_le(d->p + d->pos, 8);
    d->pos += 8;
    return TDM_OK;
}

/* Reads an unsigned varint: at most 10 bytes, fits 64 bits, minimal. */
tdm_err tdm__dec_uvar(tdm__dec *d, uint64_t *v)
{
    uint64_t r = 0;
    *v = 0;
    if (d->err != TDM_OK)
        return TDM_ERR_PARSE;
    for (int i = 0; i < 10; i++) {
        if (d->pos + (size_t)i >= d->len)
            return fail_at(d, d->len, "truncated varint");
        uint8_t b = d->p[d->pos + (size_t)i];
        /* The tenth byte holds bit 63 only. */
        if (i == 9 && b > 1)
            return fail_at(d, d->pos + (size_t)i, "varint overflows 64 bits");
        r |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            if (b == 0 && i > 0)
                return fail_at(d, d->pos + (size_t)i,
                               "varint not in minimal form");
            d->pos += (size_t)i + 1;
            *v = r;
            return TDM_OK;
        }
    }
    return TDM_ERR_PARSE; /* not reached: i == 9 always returns */
}

/* Reads a zigzag-encoded signed varint. */
tdm_err tdm__dec_svar(tdm__dec *d, int64_t *v)
{
    uint64_t u;
    *v = 0;
    if (tdm__dec_uvar(d, &u) != TDM_OK)
        return TDM_ERR_PARSE;
    /* Undo the zigzag without signed overflow. */
    uint64_t r = (u >> 1) ^ (0 - (u & 1));
    memcpy(v, &r, sizeof r);
    return TDM_OK;
}

/* Borrows @p len bytes of the input. */
tdm_err tdm__dec_raw(tdm__dec *d, size_t len, const void **p)
{
    *p = NULL;
    if (!need(d, len, "truncated bytes"))
        return TDM_ERR_PARSE;
    *p = d->p + d->pos;
    d->pos += len;
    return TDM_OK;
}

/* Reads a varint length and borrows that many bytes of the input. */
tdm_err tdm__dec_bytes(tdm__dec *d, const void **p, size_t *len)
{
    uint64_t n;
    size_t at = d->pos;
    *p = NULL;
    *len = 0;
    if (tdm__dec_uvar(d, &n) != TDM_OK)
        return TDM_ERR_PARSE;
    if (n > d->len - d->pos)
        return fail_at(d, at, "byte string longer than its input");
    *len = (size_t)n;
    return tdm__dec_raw(d, (size_t)n, p);
}

/* Reads length-prefixed bytes into a new string (no NUL inside). */
tdm_err tdm__dec_str(tdm__dec *d, char **s)
{
    const void *p;
    size_t n, at = d->pos;
    *s = NULL;
    if (tdm__dec_bytes(d, &p, &n) != TDM_OK)
        return TDM_ERR_PARSE;
    if (memchr(p, '\0', n))
        return fail_at(d, at, "string holds a NUL byte");
    *s = tdm__strndup(p, n);
    if (!*s) {
        /* Not a format error, but the decode cannot go on. */
        fail_at(d, at, "out of memory");
        d->err = TDM_ERR_NOMEM;
        return TDM_ERR_NOMEM;
    }
    return TDM_OK;
}

/* Reads a section header; @p body covers the body, @p d moves past it. */
tdm_err tdm__dec_section(tdm__dec *d, uint64_t *tag, tdm__dec *body)
{
    uint32_t n;
    size_t at;
    tdm__dec_init(body, NULL, 0);
    body->base = d->base + d->pos;
    if (tdm__dec_uvar(d, tag) != TDM_OK)
        goto fail;
    at = d->pos;
    if (tdm__dec_u32(d, &n) != TDM_OK)
        goto fail;
    if (n > d->len - d->pos) {
        fail_at(d, at, "section longer than its input");
        goto fail;
    }
    body->p = d->p + d->pos;
    body->len = n;
    body->base = d->base + d->pos;
    d->pos += n;
    return TDM_OK;
fail:
    *tag = 0;
    /* The body shares the failure, so reading it fails too. */
    body->err = d->err;
    body->err_off = d->err_off;
    body->why = d->why;
    return TDM_ERR_PARSE;
}

/* The restore prelude (ckpt_codec.h): section, tag, version. */
tdm_err tdm__dec_expect(tdm__dec *d, uint64_t tag, uint64_t version,
                        const char *not_tag, const char *bad_version,
                        tdm__dec *body)
{
    uint64_t got_tag, got_version;

    if (tdm__dec_section(d, &got_tag, body) != TDM_OK)
        return TDM_ERR_PARSE;
    if (got_tag != tag)
        return tdm__dec_fail(d, not_tag);
    tdm__dec_uvar(body, &got_version);
    if (!body->err && got_version != version)
        tdm__dec_fail(body, bad_version);
    return TDM_OK;
}

/* Fails with "trailing bytes" unless the range was read to its end. */
tdm_err tdm__dec_done(tdm__dec *d)
{
    if (d->err != TDM_OK)
        return d->err;
    if (d->pos != d->len)
        return fail_at(d, d->pos, "trailing bytes");
    return TDM_OK;
}

/* The first error, its absolute offset and its reason. */
tdm_err tdm__dec_error(const tdm__dec *d, size_t *off, const char **why)
{
    if (off)
        *off = d->err == TDM_OK ? 0 : d->err_off;
    if (why)
        *why = d->err == TDM_OK ? NULL : d->why;
    return d->err;
}
