/* SPDX-License-Identifier: MIT */
/* test_rt_fence.c - the key map of the key fence (src/runtime/fence.c):
 * values keep their maximum, lookups compare the bytes (not only the
 * hash), pruning removes exactly the keys at or below a bound and keeps
 * the others findable, and the map grows past its first index.  The
 * runtime's use of it is in test_rt_dynamic (fenced_* cases).
 */
#include "harness.h"
#include "runtime/outbox.h"

TDM_TEST(put_max_keeps_the_larger_value)
{
    tdm__rt_keyset s = {0};
    ASSERT_OK(tdm__rt_keyset_put_max(&s, "ab", 2, 7, 10));
    ASSERT_OK(tdm__rt_keyset_put_max(&s, "ab", 2, 7, 5));
    ASSERT_EQ(*tdm__rt_keyset_find(&s, "ab", 2, 7), 10);
    ASSERT_OK(tdm__rt_keyset_put_max(&s, "ab", 2, 7, 12));
    ASSERT_EQ(*tdm__rt_keyset_find(&s, "ab", 2, 7), 12);
    ASSERT_EQ(s.n, 1);
    ASSERT_TRUE(tdm__rt_keyset_find(&s, "abc", 3, 7) == NULL);
    tdm__rt_keyset_free(&s);
}

/* Every key with the same hash 42: only the bytes tell them apart. */
TDM_TEST(same_hash_keys_stay_apart)
{
    tdm__rt_keyset s = {0};
    ASSERT_OK(tdm__rt_keyset_put_max(&s, "x", 1, 42, 1));
    ASSERT_OK(tdm__rt_keyset_put_max(&s, "y", 1, 42, 2));
    ASSERT_OK(tdm__rt_keyset_put_max(&s, "", 0, 42, 3));
    ASSERT_EQ(*tdm__rt_keyset_find(&s, "x", 1, 42), 1);
    ASSERT_EQ(*tdm__rt_keyset_find(&s, "y", 1, 42), 2);
    ASSERT_EQ(*tdm__rt_keyset_find(&s, "", 0, 42), 3);
    ASSERT_TRUE(tdm__rt_keyset_find(&s, "z", 1, 42) == NULL);
    tdm__rt_keyset_free(&s);
}

/* 1000 keys "k<i>" with value i: prune(499) leaves 500..999, each
 * still found with its value; pruning everything empties the map. */
TDM_TEST(prune_removes_keys_at_or_below_the_bound)
{
    tdm__rt_keyset s = {0};
    char k[16];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(k, sizeof k, "k%d", i);
        ASSERT_OK(tdm__rt_keyset_put_max(&s, k, (size_t)n,
                                         tdm__keys_hash(k, (size_t)n), i));
    }
    ASSERT_EQ(s.n, 1000);
    tdm__rt_keyset_prune(&s, 499);
    ASSERT_EQ(s.n, 500);
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(k, sizeof k, "k%d", i);
        const int64_t *v =
            tdm__rt_keyset_find(&s, k, (size_t)n, tdm__keys_hash(k, (size_t)n));
        if (i < 500) {
            ASSERT_TRUE(v == NULL);
        } else {
            ASSERT_TRUE(v != NULL);
            ASSERT_EQ(*v, i);
        }
    }
    /* Added again after a prune: found, the old bytes not mixed in. */
    ASSERT_OK(tdm__rt_keyset_put_max(&s, "k3", 2, tdm__keys_hash("k3", 2), 3));
    ASSERT_EQ(*tdm__rt_keyset_find(&s, "k3", 2, tdm__keys_hash("k3", 2)), 3);
    tdm__rt_keyset_prune(&s, TDM_TIME_MAX);
    ASSERT_EQ(s.n, 0);
    ASSERT_TRUE(tdm__rt_keyset_find(&s, "k999", 4, tdm__keys_hash("k999", 4)) ==
                NULL);
    tdm__rt_keyset_free(&s);
}
