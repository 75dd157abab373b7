/* SPDX-License-Identifier: MIT */
/* test_core_hash.c - core/hash.h's values that are data, pinned: the
 * routing hash (tdm__keys_hash, tdm__hash_bytes_seeded with
 * TDM__HASH_ROUTE, and its fixed-width spelling), whose key groups are in
 * checkpoints; the window store's key hash; the generators' random
 * streams.  The expected values were computed from the code before the
 * hashes moved into core/hash.h (issue 19), so a change to any of them
 * fails here first. */
#include "harness.h"
#include "runtime/rt.h"
#include "state/state.h"
#include "state/wstore.h"

typedef struct pinned_key {
    const char *key;
    uint64_t route, ws;
} pinned_key;

static const pinned_key keys[] = {
    {"", 0x0e5328aea7f05ec1ULL, 0x8468b267adb10f71ULL},
    {"a", 0xfc22e55f49f6a4a4ULL, 0x7b397db3c54282f4ULL},
    {"ab", 0xb8bf916c446b2f4eULL, 0xdf566497ec617c69ULL},
    {"abc", 0xdd53280c6dd76a1dULL, 0xf6939b8046db5226ULL},
    {"abcd", 0xd49f469cf4210a27ULL, 0xe1dca3492d339ed2ULL},
    {"hello", 0x0c16f3bd71286f9eULL, 0x019db5dcb4a5c049ULL},
    {"abcdefgh", 0xc10c86a343092901ULL, 0x30f4e910b7a4c19bULL},
    {"abcdefghi", 0x2b3938413408d1ffULL, 0xdbeaa06ea6d80bccULL},
    {"0123456789abcdefXYZ", 0x36b5bb4d816ffbdeULL, 0x2a8fedf378ff0cacULL},
    {"a much longer key of thirty-four b", 0xc34e7941ab4969baULL,
     0x7aff341e33ccb158ULL},
};

typedef struct pinned_word {
    uint64_t v, route9, ws9, gen, splitmix;
} pinned_word;

static const pinned_word words[] = {
    {0x0000000000000000ULL, 0xb152e1d1c9e5a8fdULL, 0x5133d612c199754aULL,
     0x0000000000000000ULL, 0x0000000000000000ULL},
    {0x0000000000000001ULL, 0x461b4b7131fa7ebdULL, 0xdbd2bc8d549e84d9ULL,
     0x52f04177bf063087ULL, 0x5692161d100b05e5ULL},
    {0x000000000000002aULL, 0x9b0cf0c748496030ULL, 0x3a8b3e8dd6d82808ULL,
     0x4ec349e950a6b621ULL, 0xa759ea27d4727622ULL},
    {0x8000000000000000ULL, 0x647fe09ee08da2b1ULL, 0x13279a9e3cb98becULL,
     0xdeaff0c15cd22589ULL, 0x25c26ea579cea98aULL},
    {0x0123456789abcdefULL, 0x25603fc67e35aac6ULL, 0xb15ef27bc28d9914ULL,
     0xd753f4ba17e3b6b4ULL, 0xb2c058e4ebb5112cULL},
};

TDM_TEST(routing_hash_of_bytes_is_pinned)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        size_t n = strlen(keys[i].key);
        ASSERT_EQ(tdm__keys_hash(keys[i].key, n), keys[i].route);
        ASSERT_EQ(tdm__hash_bytes_seeded(keys[i].key, n, TDM__HASH_ROUTE),
                  keys[i].route);
    }
    ASSERT_EQ(tdm__keys_hash(NULL, 0), keys[0].route);
}

TDM_TEST(window_store_hash_is_pinned)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ASSERT_EQ(tdm__ws_hash(keys[i].key, strlen(keys[i].key)), keys[i].ws);
}

TDM_TEST(fixed_width_hashes_are_pinned)
{
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char b[TDM__KEY_FIXED_LEN];
        tdm__key_fixed_put(words[i].v, b);
        ASSERT_EQ(tdm__keys_hash(b, sizeof b), words[i].route9);
        ASSERT_EQ(tdm__key_fixed_hash(words[i].v), words[i].route9);
        ASSERT_EQ(tdm__ws_hash(b, sizeof b), words[i].ws9);
        ASSERT_EQ(tdm__key_fixed_ws_hash(words[i].v), words[i].ws9);
    }
}

TDM_TEST(random_streams_are_pinned)
{
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        ASSERT_EQ(tdm__hash_gen_mix64(words[i].v), words[i].gen);
        ASSERT_EQ(tdm__hash_splitmix64(words[i].v), words[i].splitmix);
    }
}

/* The table hashes need no pinned values, only their contracts: the
 * length is part of the byte hash, the seeds give different values, and
 * the mixer is a bijection on a sample (no two of 4,096 inputs collide,
 * nor do their low 32 bits). */
TDM_TEST(table_hashes_keep_their_contracts)
{
    const char z[16] = {0};
    ASSERT_TRUE(tdm__hash_bytes(z, 3) != tdm__hash_bytes(z, 4));
    ASSERT_TRUE(tdm__hash_bytes(z, 8) != tdm__hash_bytes(z, 9));
    ASSERT_TRUE(tdm__hash_bytes("abc", 3) != tdm__keys_hash("abc", 3));
    ASSERT_EQ(tdm__hash_bytes("abc", 3),
              tdm__hash_bytes_seeded("abc", 3, TDM__HASH_TABLE));
    ASSERT_EQ(tdm__hash_mix64(0), 0);
    uint32_t seen[4096];
    for (uint32_t i = 0; i < 4096; i++) {
        seen[i] = (uint32_t)tdm__hash_mix64(i);
        for (uint32_t j = 0; j < i; j++)
            ASSERT_TRUE(seen[j] != seen[i]);
    }
    ASSERT_TRUE(tdm__hash_pair(1, 2) != tdm__hash_pair(2, 1));
    ASSERT_TRUE(tdm__hash_word(1) != tdm__hash_word(2));
}
