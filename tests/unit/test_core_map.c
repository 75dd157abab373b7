/* SPDX-License-Identifier: MIT */
/* test_core_map.c - tdm__map (core/map.c): find, put, remove with the
 * probe runs shifted back, iteration in insertion order across growth and
 * compaction, the empty key, and allocation failure leaving the map as it
 * was. */
#include "harness.h"
#include "core.h"
#include "core/map.h"
#include "testhooks.h"

#define H(k, n) tdm__hash_bytes((k), (n))

/* Adds key "k<i>" with value i * 10. */
static void put_num(tdm__map *m, int i)
{
    char k[16];
    int n = snprintf(k, sizeof k, "k%d", i);
    uint64_t *v;
    bool added;
    ASSERT_OK(tdm__map_put(m, k, (size_t)n, H(k, (size_t)n), &v, &added));
    ASSERT_TRUE(added);
    ASSERT_EQ(*v, 0);
    *v = (uint64_t)i * 10;
}

/* The value of "k<i>", or -1 when absent. */
static int64_t get_num(const tdm__map *m, int i)
{
    char k[16];
    int n = snprintf(k, sizeof k, "k%d", i);
    uint64_t *v = tdm__map_find(m, k, (size_t)n, H(k, (size_t)n));
    return v ? (int64_t)*v : -1;
}

TDM_TEST(map_put_find_and_grow)
{
    tdm__map *m = tdm__map_new();
    ASSERT_TRUE(m != NULL);
    ASSERT_EQ(tdm__map_count(m), 0);
    ASSERT_TRUE(tdm__map_find(m, "x", 1, H("x", 1)) == NULL);
    for (int i = 0; i < 1000; i++)
        put_num(m, i);
    ASSERT_EQ(tdm__map_count(m), 1000);
    for (int i = 0; i < 1000; i++)
        ASSERT_EQ(get_num(m, i), (int64_t)i * 10);
    ASSERT_EQ(get_num(m, 1000), -1);
    uint64_t *v;
    bool added = true;
    ASSERT_OK(tdm__map_put(m, "k7", 2, H("k7", 2), &v, &added));
    ASSERT_TRUE(!added);
    ASSERT_EQ(*v, 70);
    /* The empty key is a key like any other. */
    ASSERT_OK(tdm__map_put(m, NULL, 0, H(NULL, 0), &v, &added));
    ASSERT_TRUE(added);
    *v = 5;
    ASSERT_EQ(*tdm__map_find(m, "", 0, H("", 0)), 5);
    tdm__map_destroy(m);
    tdm__map_destroy(NULL);
}

/* Every key colliding on one hash: equality decides, and removal in the
 * middle of the run keeps the rest findable. */
TDM_TEST(map_remove_shifts_runs_back)
{
    tdm__map *m = tdm__map_new();
    ASSERT_TRUE(m != NULL);
    uint64_t *v;
    for (int i = 0; i < 6; i++) {
        char k = (char)('a' + i);
        ASSERT_OK(tdm__map_put(m, &k, 1, 3, &v, NULL));
        *v = (uint64_t)i;
    }
    ASSERT_TRUE(tdm__map_remove(m, "c", 1, 3));
    ASSERT_TRUE(!tdm__map_remove(m, "c", 1, 3));
    ASSERT_TRUE(!tdm__map_remove(m, "z", 1, 3));
    ASSERT_EQ(tdm__map_count(m), 5);
    ASSERT_EQ(*tdm__map_find(m, "f", 1, 3), 5);
    ASSERT_EQ(*tdm__map_find(m, "d", 1, 3), 3);
    ASSERT_TRUE(tdm__map_find(m, "c", 1, 3) == NULL);
    /* Spread keys: remove every other one, the rest stay. */
    for (int i = 0; i < 500; i++)
        put_num(m, i);
    for (int i = 0; i < 500; i += 2) {
        char k[16];
        int n = snprintf(k, sizeof k, "k%d", i);
        ASSERT_TRUE(tdm__map_remove(m, k, (size_t)n, H(k, (size_t)n)));
    }
    for (int i = 0; i < 500; i++)
        ASSERT_EQ(get_num(m, i), i % 2 ? (int64_t)i * 10 : -1);
    ASSERT_EQ(tdm__map_count(m), 255);
    tdm__map_destroy(m);
}

/* Iteration is insertion order, skips removed keys, allows removing the
 * key just returned, and keeps the order through compaction. */
TDM_TEST(map_iterates_in_insertion_order)
{
    tdm__map *m = tdm__map_new();
    ASSERT_TRUE(m != NULL);
    for (int i = 0; i < 64; i++)
        put_num(m, i);
    size_t pos = 0, len;
    const void *k;
    uint64_t *v;
    while ((v = tdm__map_next(m, &pos, &k, &len)) != NULL)
        if (*v % 20 == 0) /* even i */
            tdm__map_remove_at(m, pos);
    ASSERT_EQ(tdm__map_count(m), 32);
    for (int i = 64; i < 200; i++) /* grows, compacting the holes */
        put_num(m, i);
    pos = 0;
    int want = 1;
    while ((v = tdm__map_next(m, &pos, &k, &len)) != NULL) {
        char buf[16];
        int n = snprintf(buf, sizeof buf, "k%d", want);
        ASSERT_EQ(len, (size_t)n);
        ASSERT_TRUE(memcmp(k, buf, len) == 0);
        ASSERT_EQ(*v, (uint64_t)want * 10);
        want += want < 63 ? 2 : 1; /* odd keys below 64, then all */
    }
    ASSERT_EQ(want, 200);
    tdm__map_destroy(m);
}

/* Every allocation failing in turn: new returns NULL, put returns NOMEM
 * and leaves the map as it was (every earlier key found, the failed one
 * absent), and a later put succeeds. */
TDM_TEST(map_allocation_failure_leaves_it_unchanged)
{
    for (long n = 1; n <= 2; n++) {
        tdm__alloc_fail_after(n);
        tdm__map *m = tdm__map_new();
        tdm__alloc_fail_after(0);
        ASSERT_TRUE(m == NULL);
    }
    tdm__map *m = tdm__map_new();
    ASSERT_TRUE(m != NULL);
    int fails = 0;
    for (int i = 0; i < 300; i++) {
        char k[16];
        int n = snprintf(k, sizeof k, "k%d", i);
        uint64_t *v;
        tdm__alloc_fail_after(1);
        tdm_err err = tdm__map_put(m, k, (size_t)n, H(k, (size_t)n), &v, NULL);
        tdm__alloc_fail_after(0);
        if (err != TDM_OK) {
            ASSERT_ERR(err, TDM_ERR_NOMEM);
            fails++;
            ASSERT_EQ(get_num(m, i), -1);
            ASSERT_EQ(tdm__map_count(m), (size_t)i);
            put_num(m, i);
        } else {
            *v = (uint64_t)i * 10;
        }
        for (int j = 0; j <= i; j++)
            ASSERT_EQ(get_num(m, j), (int64_t)j * 10);
    }
    ASSERT_TRUE(fails > 0);
    tdm__map_destroy(m);
}
