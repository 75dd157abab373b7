/* SPDX-License-Identifier: MIT */
/* hash.h - the engine's hashing toolkit, header-only so that every
 * function folds into its caller: one 64-bit mixer, one seeded byte hash
 * for short keys (and the word steps it is made of, which the fixed-width
 * tables use directly), and the few named algorithms whose values are
 * data, not just table positions, and so must never change.
 *
 * Invariant: the routing hash (tdm__hash_bytes_seeded with seed
 * TDM__HASH_ROUTE, spelled tdm__keys_hash in state.h and
 * tdm__key_fixed_hash in rt.h) decides a key's key group, which is in
 * every checkpoint and savepoint and decides which subtask gets the key:
 * its values are pinned by tests/unit/test_core_hash.c and must stay
 * bit-identical.  So must tdm__hash_gen_mix64 (the generator's random
 * stream) and tdm__hash_splitmix64 (NEXMark's, splitmix64 by
 * definition): the generated data and every expected output depend on
 * them.  Everything else here is a table position and may change if no
 * hot path gets slower.
 *
 * Tables that hold the keys of one subtask must not index by the routing
 * hash's values: those keys share its key-group bits.  They hash with
 * another seed (TDM__HASH_TABLE, as tdm__hash_bytes does), or with the
 * window store's own two-word hash (wstore.h), which folds with
 * tdm__hash_fold below.
 *
 * Used by every module with a table or a random stream: the key table and
 * the routing (state, runtime), the window store, keyed state and timers,
 * the joins, the generators, tdm__map (map.c).  The CLI, a client of
 * tidemark.h only, keeps its own byte hash (cli_util.c).
 */
#ifndef TDM_CORE_HASH_H
#define TDM_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 2^64 / the golden ratio, odd: Fibonacci hashing's multiplier and
 * splitmix64's increment. */
#define TDM__HASH_GOLDEN 0x9e3779b97f4a7c15ULL
/* The seed of the routing hash (persisted: never change). */
#define TDM__HASH_ROUTE 0ULL
/* The seed of the tables' byte hash (a table position only). */
#define TDM__HASH_TABLE 0x13198a2e03707344ULL

/* The mixer: MurmurHash3's 64-bit finaliser.  A bijection in which every
 * input bit affects every output bit; for a value that is already a key
 * (an integer, a pair packed in a word). */
static inline uint64_t tdm__hash_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* ---- The word steps of the byte hash ---- */

/* The starting state for @p len bytes (or words) under @p seed: the
 * length is part of it, so keys that differ only in length hash apart. */
static inline uint64_t tdm__hash_start(size_t len, uint64_t seed)
{
    return TDM__HASH_GOLDEN ^ seed ^ ((uint64_t)len * 0xff51afd7ed558ccdULL);
}

/* Absorbs one word @p v into the state @p h (a multiply-xorshift). */
static inline uint64_t tdm__hash_step(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 31);
}

/* Absorbs the last word @p v and finalises: the result's low bits serve
 * directly as a table index, its high bits as a range reduction. */
static inline uint64_t tdm__hash_last(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x94d049bb133111ebULL;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 29;
    return h;
}

/* A table position of one word. */
static inline uint64_t tdm__hash_word(uint64_t a)
{
    return tdm__hash_last(tdm__hash_start(8, TDM__HASH_TABLE), a);
}

/* A table position of two words. */
static inline uint64_t tdm__hash_pair(uint64_t a, uint64_t b)
{
    return tdm__hash_last(
        tdm__hash_step(tdm__hash_start(16, TDM__HASH_TABLE), a), b);
}

/* ---- The byte hash ---- */

/* The last word of a key of @p len <= 8 bytes: (possibly overlapping)
 * halves for 4..8 bytes, three sampled bytes below, 0 when empty. */
static inline uint64_t tdm__hash_tail(const unsigned char *p, size_t len)
{
    uint64_t v;
    uint32_t a, b;
    if (len == 8) {
        memcpy(&v, p, 8);
    } else if (len >= 4) {
        memcpy(&a, p, 4);
        memcpy(&b, p + len - 4, 4);
        v = ((uint64_t)a << 32) | b;
    } else if (len > 0) {
        v = (uint64_t)p[0] | ((uint64_t)p[len / 2] << 8) |
            ((uint64_t)p[len - 1] << 16);
    } else {
        v = 0;
    }
    return v;
}

/* The seeded byte hash (any length; @p key may be NULL when @p len is
 * 0).  Eight bytes at a time with a multiply-xorshift step per word: a
 * few nanoseconds for the short keys records usually carry, where a
 * byte-at-a-time hash costs a multiply per byte.  Longer keys' tails are
 * read as a whole word overlapping the one before.  With seed
 * TDM__HASH_ROUTE it is the routing hash (see the file comment). */
static inline uint64_t tdm__hash_bytes_seeded(const void *key, size_t len,
                                              uint64_t seed)
{
    const unsigned char *p = key;
    uint64_t h = tdm__hash_start(len, seed);
    uint64_t v;
    if (len <= 8)
        return tdm__hash_last(h, tdm__hash_tail(p, len));
    size_t n = len;
    while (n > 8) {
        memcpy(&v, p, 8);
        h = tdm__hash_step(h, v);
        p += 8;
        n -= 8;
    }
    memcpy(&v, p + n - 8, 8);
    return tdm__hash_last(h, v);
}

/* tdm__hash_bytes_seeded of the 9 bytes "1, then the 8 bytes of @p bits"
 * on a little-endian machine, spelled out on the value: the first word
 * is (1 | bits << 8), the tail word is bits.  The runtime's fixed-width
 * keys are these bytes (rt.h, tdm__key_fixed_hash). */
static inline uint64_t tdm__hash_fixed9(uint64_t bits, uint64_t seed)
{
    return tdm__hash_last(
        tdm__hash_step(tdm__hash_start(9, seed), 1 | bits << 8), bits);
}

/* ---- Folded multiply (the window store's hash, wstore.h) ---- */

/* The 128-bit product of @p a and @p b folded to 64 bits (high half xor
 * low half): one multiply that mixes every input bit into every output
 * bit. */
static inline uint64_t tdm__hash_fold(uint64_t a, uint64_t b)
{
#ifdef __SIZEOF_INT128__
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
    uint64_t al = a & 0xffffffffu, ah = a >> 32;
    uint64_t bl = b & 0xffffffffu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    uint64_t lo = (mid << 32) | (ll & 0xffffffffu);
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return lo ^ hi;
#endif
}

/* ---- Random streams (values are data: never change) ---- */

/* The synthetic generator's finaliser (generator.c): its record fields
 * are this function of (index ^ key), so the generated data, and every
 * expected output of a generated job, are its values. */
static inline uint64_t tdm__hash_gen_mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0xd6e8feb86659fd93ULL;
    x ^= x >> 29;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 32;
    return x;
}

/* splitmix64's output function (NEXMark's random stream, nexmark.c):
 * the stream's draw k is this of seed + k * TDM__HASH_GOLDEN. */
static inline uint64_t tdm__hash_splitmix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
