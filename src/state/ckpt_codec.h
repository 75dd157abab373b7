/* SPDX-License-Identifier: MIT */
/* ckpt_codec.h - the binary encoding of checkpoint payloads and manifests,
 * and CRC-32C.
 *
 * Values: little-endian fixed-width integers (u8, u32, u64), unsigned
 * LEB128 varints (at most 10 bytes, minimal form only), signed varints
 * (zigzag then unsigned), byte strings (varint length, then the bytes),
 * and sections: a varint tag, a u32 length, then that many bytes of body.
 * A reader that does not know a tag skips the section by its length, so
 * writers can add sections without breaking older readers.
 *
 * The encoder grows a buffer; an allocation failure is sticky and
 * reported by tdm__enc_finish().  The decoder never reads past its end,
 * and its first error is sticky: every later read fails too, and
 * tdm__dec_error() gives the absolute offset of the first bad byte and a
 * reason.  Layouts are in docs/checkpoints.md.
 */
#ifndef TDM_CKPT_CODEC_H
#define TDM_CKPT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

/* ---- CRC-32C ---- */

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and
 * final xor 0xFFFFFFFF) of @p n bytes, continuing from @p crc (0 to
 * start): crc32c(crc32c(0, a), b) == crc32c(0, a || b).  The tables
 * (slicing by 8) are computed from the polynomial at first use
 * (thread-safe). */
uint32_t tdm__crc32c(uint32_t crc, const void *p, size_t n);

/* ---- Encoder ---- */

#define TDM__ENC_MAX_DEPTH 16

typedef struct tdm__enc {
    uint8_t *buf; /* owned; tdm__enc_free() or tdm__enc_finish() */
    size_t len, cap;
    int oom; /* sticky: an allocation failed */
    int bad; /* sticky: sections unbalanced or too deep */
    int depth;
    size_t open[TDM__ENC_MAX_DEPTH]; /* offsets of open length fields */
} tdm__enc;

void tdm__enc_init(tdm__enc *e);
/* Frees the buffer (if not taken by tdm__enc_finish). */
void tdm__enc_free(tdm__enc *e);
void tdm__enc_u8(tdm__enc *e, uint8_t v);
void tdm__enc_u32(tdm__enc *e, uint32_t v);
void tdm__enc_u64(tdm__enc *e, uint64_t v);
void tdm__enc_uvar(tdm__enc *e, uint64_t v);
void tdm__enc_svar(tdm__enc *e, int64_t v);
/* Raw bytes, no length.  Copies. */
void tdm__enc_raw(tdm__enc *e, const void *p, size_t len);
/* Length-prefixed bytes.  Copies. */
void tdm__enc_bytes(tdm__enc *e, const void *p, size_t len);
/* Length-prefixed string (without its NUL).  Copies. */
void tdm__enc_str(tdm__enc *e, const char *s);
/* Opens a section with @p tag; its body is what is encoded until the
 * matching tdm__enc_end().  Sections nest up to TDM__ENC_MAX_DEPTH. */
void tdm__enc_begin(tdm__enc *e, uint64_t tag);
void tdm__enc_end(tdm__enc *e);
/* Hands the encoded bytes to the caller (takes them out of @p e; freed
 * with tdm__free()) and resets @p e.  Returns TDM_ERR_NOMEM after an
 * allocation failure, TDM_ERR_STATE if sections are unbalanced or a body
 * exceeds 4 GiB; on error *out is NULL and the buffer is freed. */
tdm_err tdm__enc_finish(tdm__enc *e, uint8_t **out, size_t *len);

/* ---- Decoder ---- */

typedef struct tdm__dec {
    const uint8_t *p; /* borrowed input */
    size_t len;       /* bytes in this decoder's range */
    size_t pos;       /* next byte, relative to p */
    size_t base;      /* absolute offset of p[0] in the outermost input */
    tdm_err err;      /* first error (sticky), TDM_OK if none */
    size_t err_off;   /* absolute offset of the first bad byte */
    const char *why;  /* static reason of the first error */
} tdm__dec;

/* Starts decoding @p len bytes at @p p (borrowed until decoding ends). */
void tdm__dec_init(tdm__dec *d, const void *p, size_t len);
/* Each reader returns TDM_OK or TDM_ERR_PARSE (and then leaves *v zero).
 * After the first error every reader fails. */
tdm_err tdm__dec_u8(tdm__dec *d, uint8_t *v);
tdm_err tdm__dec_u32(tdm__dec *d, uint32_t *v);
tdm_err tdm__dec_u64(tdm__dec *d, uint64_t *v);
tdm_err tdm__dec_uvar(tdm__dec *d, uint64_t *v);
tdm_err tdm__dec_svar(tdm__dec *d, int64_t *v);
/* @p len raw bytes; *p points into the input (borrowed). */
tdm_err tdm__dec_raw(tdm__dec *d, size_t len, const void **p);
/* Length-prefixed bytes; *p points into the input (borrowed). */
tdm_err tdm__dec_bytes(tdm__dec *d, const void **p, size_t *len);
/* Length-prefixed string: copied into a new NUL-terminated string, freed
 * with tdm__free().  A string holding a NUL byte is an error. */
tdm_err tdm__dec_str(tdm__dec *d, char **s);
/* Reads a section header and sets @p body to a decoder over its body
 * (errors in @p body report absolute offsets but do not touch @p d);
 * @p d moves past the body, so ignoring @p body skips the section. */
tdm_err tdm__dec_section(tdm__dec *d, uint64_t *tag, tdm__dec *body);
/* The prelude of a versioned section's restore: reads a section header
 * from @p d into @p body, checks its tag against @p tag and reads its
 * version from @p body.  Returns TDM_ERR_PARSE when the section cannot
 * be opened: a bad header (error in @p d) or another tag (@p not_tag in
 * @p d, e.g. "not a valve section").  Otherwise TDM_OK, with @p body at
 * the first field after the version; another version than @p version
 * is marked in @p body (@p bad_version, e.g. "unknown valve version"),
 * whose reads then all fail, so that the caller's usual checks of body
 * report it.  Both reasons are static strings. */
tdm_err tdm__dec_expect(tdm__dec *d, uint64_t tag, uint64_t version,
                        const char *not_tag, const char *bad_version,
                        tdm__dec *body);
/* Bytes left in this decoder's range. */
size_t tdm__dec_left(const tdm__dec *d);
/* Marks an error at the current position with a static reason (for
 * checks of decoded values); returns TDM_ERR_PARSE.  Keeps an earlier
 * error if there is one. */
tdm_err tdm__dec_fail(tdm__dec *d, const char *why);
/* Fails unless every byte was read ("trailing bytes"). */
tdm_err tdm__dec_done(tdm__dec *d);
/* The first error (TDM_OK if none), with its absolute offset and
 * reason (static storage). */
tdm_err tdm__dec_error(const tdm__dec *d, size_t *off, const char **why);

#endif /* TDM_CKPT_CODEC_H */
