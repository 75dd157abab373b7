/* SPDX-License-Identifier: MIT */
/* test_state.c - the in-memory keyed state backend: interned keys with
 * reference counts, keyed value slots with stable pointers, and the timer
 * queue (order, deduplication, deletion, timers added while draining),
 * and the window store of the window operator's lean path (keys in the
 * table itself, renumbered on rebuilds; cells inline and spilled; spans
 * due in time order).  Randomised cases compare against brute-force
 * models with a fixed seed. */
#include "harness.h"
#include "core.h"
#include "state/state.h"
#include "state/wstore.h"
#include "testhooks.h"

/* A small deterministic generator for the randomised cases. */
static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* ---- keys ---- */

TDM_TEST(keys_intern_same_bytes_same_id)
{
    tdm__keys *ks = tdm__keys_new();
    ASSERT_TRUE(ks != NULL);
    uint32_t a, b, c;
    ASSERT_OK(tdm__keys_intern(ks, "alpha", 5, &a));
    ASSERT_OK(tdm__keys_intern(ks, "beta", 4, &b));
    ASSERT_OK(tdm__keys_intern(ks, "alpha", 5, &c));
    ASSERT_TRUE(a != b);
    ASSERT_EQ(a, c);
    ASSERT_EQ(tdm__keys_count(ks), 2);
    ASSERT_EQ(tdm__keys_refs(ks, a), 2);
    size_t len;
    ASSERT_STR_EQ(tdm__keys_get(ks, b, &len), "beta");
    ASSERT_EQ(len, 4);
    /* Prefixes and the empty key are different keys. */
    uint32_t p, e;
    ASSERT_OK(tdm__keys_intern(ks, "alph", 4, &p));
    ASSERT_OK(tdm__keys_intern(ks, NULL, 0, &e));
    ASSERT_TRUE(p != a && e != a && e != p);
    tdm__keys_get(ks, e, &len);
    ASSERT_EQ(len, 0);
    /* Embedded NUL bytes are part of the key. */
    uint32_t n1, n2;
    ASSERT_OK(tdm__keys_intern(ks, "a\0b", 3, &n1));
    ASSERT_OK(tdm__keys_intern(ks, "a\0c", 3, &n2));
    ASSERT_TRUE(n1 != n2);
    tdm__keys_destroy(ks);
}

TDM_TEST(keys_forgotten_after_last_unref_and_id_reused)
{
    tdm__keys *ks = tdm__keys_new();
    uint32_t a, b, again;
    ASSERT_OK(tdm__keys_intern(ks, "k1", 2, &a));
    tdm__keys_ref(ks, a);
    ASSERT_OK(tdm__keys_intern(ks, "k2", 2, &b));
    tdm__keys_unref(ks, a);
    ASSERT_EQ(tdm__keys_count(ks), 2); /* one reference left */
    uint64_t h = tdm__keys_hash("k1", 2);
    uint32_t found;
    ASSERT_TRUE(tdm__keys_find(ks, "k1", 2, h, &found));
    ASSERT_EQ(found, a);
    tdm__keys_unref(ks, a);
    ASSERT_EQ(tdm__keys_count(ks), 1);
    ASSERT_TRUE(!tdm__keys_find(ks, "k1", 2, h, &found));
    /* The freed id is handed out again for the next new key. */
    ASSERT_OK(tdm__keys_intern(ks, "k3", 2, &again));
    ASSERT_EQ(again, a);
    ASSERT_STR_EQ(tdm__keys_get(ks, again, NULL), "k3");
    ASSERT_TRUE(tdm__keys_find(ks, "k2", 2, tdm__keys_hash("k2", 2), &found));
    ASSERT_EQ(found, b);
    tdm__keys_destroy(ks);
}

/* Many keys with interleaved removals: every live key must still be found
 * after table growth and backward-shift deletions (model: an array of
 * reference counts indexed by key number). */
TDM_TEST(keys_random_against_model)
{
    enum { N = 3000 };
    static int refs[N];
    static uint32_t ids[N];
    memset(refs, 0, sizeof refs);
    tdm__keys *ks = tdm__keys_new();
    uint64_t seed = 42;
    char buf[32];
    size_t live = 0;
    for (int step = 0; step < 60000; step++) {
        int k = (int)(rng_next(&seed) % N);
        int len = snprintf(buf, sizeof buf, "key-%d", k);
        if (rng_next(&seed) % 3 != 0 || refs[k] == 0) {
            uint32_t id;
            ASSERT_OK(tdm__keys_intern(ks, buf, (size_t)len, &id));
            if (refs[k] == 0) {
                ids[k] = id;
                live++;
            } else {
                ASSERT_EQ(id, ids[k]);
            }
            refs[k]++;
        } else {
            tdm__keys_unref(ks, ids[k]);
            if (--refs[k] == 0)
                live--;
        }
        ASSERT_EQ(tdm__keys_count(ks), live);
    }
    for (int k = 0; k < N; k++) {
        int len = snprintf(buf, sizeof buf, "key-%d", k);
        uint32_t id;
        bool f = tdm__keys_find(ks, buf, (size_t)len,
                                tdm__keys_hash(buf, (size_t)len), &id);
        ASSERT_EQ(f, refs[k] > 0);
        if (f) {
            ASSERT_EQ(id, ids[k]);
            ASSERT_EQ(tdm__keys_refs(ks, id), refs[k]);
            ASSERT_STR_EQ(tdm__keys_get(ks, id, NULL), buf);
        }
    }
    ASSERT_TRUE(tdm__keys_bytes(ks) > live * 6);
    tdm__keys_destroy(ks);
}

TDM_TEST(keys_oom_reports_nomem_and_keeps_table_usable)
{
    tdm__keys *ks = tdm__keys_new();
    uint32_t id;
    int failures = 0;
    char buf[32];
    /* Fail one allocation at a time at increasing distances; every key
     * that was interned must still be found afterwards. */
    for (int i = 0; i < 200; i++) {
        int len = snprintf(buf, sizeof buf, "k%d", i);
        tdm__alloc_fail_after(1 + i % 3);
        tdm_err e = tdm__keys_intern(ks, buf, (size_t)len, &id);
        tdm__alloc_fail_after(0);
        if (e != TDM_OK) {
            ASSERT_ERR(e, TDM_ERR_NOMEM);
            failures++;
            ASSERT_TRUE(!tdm__keys_find(ks, buf, (size_t)len,
                                        tdm__keys_hash(buf, (size_t)len), &id));
        }
    }
    ASSERT_TRUE(failures > 0);
    ASSERT_EQ(tdm__keys_count(ks), 200 - failures);
    tdm__keys_destroy(ks);
    tdm__keys_destroy(NULL);
}

/* ---- kv ---- */

static tdm__ns ns2(tdm_time_ms a, tdm_time_ms b)
{
    tdm__ns n = {a, b};
    return n;
}

TDM_TEST(kv_upsert_get_remove)
{
    tdm__kv *kv = tdm__kv_new(sizeof(int64_t));
    bool created;
    int64_t *v = tdm__kv_upsert(kv, 1, ns2(0, 1000), &created);
    ASSERT_TRUE(v != NULL && created);
    ASSERT_EQ(*v, 0); /* zeroed */
    *v = 7;
    int64_t *w = tdm__kv_upsert(kv, 1, ns2(0, 1000), &created);
    ASSERT_TRUE(w == v && !created);
    /* Same namespace under another key, and swapped ns fields, differ. */
    ASSERT_TRUE(tdm__kv_get(kv, 2, ns2(0, 1000)) == NULL);
    ASSERT_TRUE(tdm__kv_get(kv, 1, ns2(1000, 0)) == NULL);
    ASSERT_EQ(tdm__kv_count(kv), 1);
    tdm__kv_remove(kv, 1, ns2(0, 1000));
    tdm__kv_remove(kv, 1, ns2(0, 1000)); /* absent: no-op */
    ASSERT_TRUE(tdm__kv_get(kv, 1, ns2(0, 1000)) == NULL);
    ASSERT_EQ(tdm__kv_count(kv), 0);
    /* A re-created slot starts zeroed again. */
    v = tdm__kv_upsert(kv, 1, ns2(0, 1000), &created);
    ASSERT_TRUE(created);
    ASSERT_EQ(*v, 0);
    tdm__kv_remove_slot(kv, v);
    ASSERT_EQ(tdm__kv_count(kv), 0);
    tdm__kv_destroy(kv);
    tdm__kv_destroy(NULL);
}

TDM_TEST(kv_slot_pointers_stable_across_growth)
{
    enum { N = 5000 };
    static int64_t *ptr[N];
    tdm__kv *kv = tdm__kv_new(24);
    for (int i = 0; i < N; i++) {
        ptr[i] = tdm__kv_upsert(kv, (uint32_t)(i % 97),
                                ns2(i, TDM_TIME_MAX - i), NULL);
        ASSERT_TRUE(ptr[i] != NULL);
        ASSERT_EQ(((uintptr_t)ptr[i]) % 8, 0);
        ptr[i][0] = i;
        ptr[i][2] = -i;
    }
    for (int i = 0; i < N; i++) {
        int64_t *p =
            tdm__kv_get(kv, (uint32_t)(i % 97), ns2(i, TDM_TIME_MAX - i));
        ASSERT_TRUE(p == ptr[i]);
        ASSERT_EQ(p[0], i);
        ASSERT_EQ(p[2], -i);
    }
    ASSERT_TRUE(tdm__kv_bytes(kv) >= (size_t)N * 24);
    ASSERT_TRUE(tdm__kv_slot_bytes(kv) >= 24);
    tdm__kv_destroy(kv);
}

struct collect {
    int n;
    int64_t sum_a;
    int64_t sum_val;
};

static void collect_of_key(void *ud, tdm__ns ns, void *slot)
{
    struct collect *c = ud;
    c->n++;
    c->sum_a += ns.a;
    c->sum_val += *(int64_t *)slot;
}

static void collect_all(void *ud, uint32_t key, tdm__ns ns, void *slot)
{
    struct collect *c = ud;
    c->n++;
    c->sum_a += ns.a + key;
    c->sum_val += *(int64_t *)slot;
}

TDM_TEST(kv_each_of_key_and_each)
{
    tdm__kv *kv = tdm__kv_new(sizeof(int64_t));
    /* Key 3 gets namespaces 10, 20, 30 with values 1, 2, 3; key 4 gets
     * namespace 100 with value 50. */
    for (int i = 1; i <= 3; i++)
        *(int64_t *)tdm__kv_upsert(kv, 3, ns2(10 * i, 0), NULL) = i;
    *(int64_t *)tdm__kv_upsert(kv, 4, ns2(100, 0), NULL) = 50;
    struct collect c = {0, 0, 0};
    tdm__kv_each_of_key(kv, 3, collect_of_key, &c);
    ASSERT_EQ(c.n, 3);
    ASSERT_EQ(c.sum_a, 60);
    ASSERT_EQ(c.sum_val, 6);
    /* Removing the middle slot unlinks it from the key's list. */
    tdm__kv_remove(kv, 3, ns2(20, 0));
    memset(&c, 0, sizeof c);
    tdm__kv_each_of_key(kv, 3, collect_of_key, &c);
    ASSERT_EQ(c.n, 2);
    ASSERT_EQ(c.sum_val, 4);
    /* A key never used, even one beyond every id seen, has no slots. */
    memset(&c, 0, sizeof c);
    tdm__kv_each_of_key(kv, 100000, collect_of_key, &c);
    ASSERT_EQ(c.n, 0);
    /* each: (10+3) + (30+3) + (100+4) = 150; values 1 + 3 + 50. */
    memset(&c, 0, sizeof c);
    tdm__kv_each(kv, collect_all, &c);
    ASSERT_EQ(c.n, 3);
    ASSERT_EQ(c.sum_a, 150);
    ASSERT_EQ(c.sum_val, 54);
    tdm__kv_destroy(kv);
}

/* Random inserts and removals against a dense model (present flag and
 * value per (key, namespace) pair). */
TDM_TEST(kv_random_against_model)
{
    enum { K = 50, W = 80 };
    static int64_t model[K][W];
    static bool present[K][W];
    memset(present, 0, sizeof present);
    tdm__kv *kv = tdm__kv_new(sizeof(int64_t));
    uint64_t seed = 7;
    size_t count = 0;
    for (int step = 0; step < 100000; step++) {
        uint32_t k = (uint32_t)(rng_next(&seed) % K);
        int w = (int)(rng_next(&seed) % W);
        tdm__ns ns = ns2((tdm_time_ms)w * 1000 - 40000, (tdm_time_ms)w);
        switch (rng_next(&seed) % 3) {
        case 0: {
            bool created;
            int64_t *v = tdm__kv_upsert(kv, k, ns, &created);
            ASSERT_EQ(created, !present[k][w]);
            if (created) {
                present[k][w] = true;
                model[k][w] = 0;
                count++;
            }
            ASSERT_EQ(*v, model[k][w]);
            *v = ++model[k][w];
            break;
        }
        case 1:
            if (present[k][w]) {
                present[k][w] = false;
                count--;
            }
            tdm__kv_remove(kv, k, ns);
            break;
        default: {
            int64_t *v = tdm__kv_get(kv, k, ns);
            ASSERT_EQ(v != NULL, present[k][w]);
            if (v)
                ASSERT_EQ(*v, model[k][w]);
        }
        }
        ASSERT_EQ(tdm__kv_count(kv), count);
    }
    for (uint32_t k = 0; k < K; k++) {
        struct collect c = {0, 0, 0};
        int64_t want_n = 0, want_val = 0;
        for (int w = 0; w < W; w++)
            if (present[k][w]) {
                want_n++;
                want_val += model[k][w];
            }
        tdm__kv_each_of_key(kv, k, collect_of_key, &c);
        ASSERT_EQ(c.n, want_n);
        ASSERT_EQ(c.sum_val, want_val);
    }
    tdm__kv_destroy(kv);
}

TDM_TEST(kv_oom_returns_null)
{
    tdm__kv *kv = tdm__kv_new(8);
    int ok = 0, failed = 0;
    for (int i = 0; i < 2000; i++) {
        tdm__alloc_fail_after(1);
        void *v = tdm__kv_upsert(kv, (uint32_t)i, ns2(i, i), NULL);
        tdm__alloc_fail_after(0);
        if (v) {
            ok++;
        } else {
            failed++;
            ASSERT_TRUE(tdm__kv_get(kv, (uint32_t)i, ns2(i, i)) == NULL);
            /* Retried without the fault, it works. */
            ASSERT_TRUE(tdm__kv_upsert(kv, (uint32_t)i, ns2(i, i), NULL));
            ok++;
        }
    }
    ASSERT_TRUE(failed > 0);
    ASSERT_EQ(tdm__kv_count(kv), ok);
    tdm__kv_destroy(kv);
}

/* ---- timers ---- */

TDM_TEST(timers_pop_in_time_order_upto)
{
    tdm__timers *t = tdm__timers_new();
    ASSERT_EQ(tdm__timers_peek(t), TDM_TIME_MAX);
    ASSERT_OK(tdm__timers_add(t, 300, 1, ns2(0, 1)));
    ASSERT_OK(tdm__timers_add(t, -5, 2, ns2(0, 1)));
    ASSERT_OK(tdm__timers_add(t, 100, 1, ns2(0, 1)));
    ASSERT_OK(tdm__timers_add(t, TDM_TIME_MAX, 1, ns2(0, 1)));
    ASSERT_OK(tdm__timers_add(t, TDM_TIME_MIN, 3, ns2(0, 1)));
    ASSERT_EQ(tdm__timers_count(t), 5);
    ASSERT_EQ(tdm__timers_peek(t), TDM_TIME_MIN);
    tdm__timer out;
    ASSERT_TRUE(tdm__timers_pop(t, 100, &out));
    ASSERT_EQ(out.time, TDM_TIME_MIN);
    ASSERT_EQ(out.key, 3);
    ASSERT_TRUE(tdm__timers_pop(t, 100, &out));
    ASSERT_EQ(out.time, -5);
    ASSERT_EQ(out.key, 2);
    ASSERT_TRUE(tdm__timers_pop(t, 100, &out));
    ASSERT_EQ(out.time, 100); /* <= upto is inclusive */
    ASSERT_TRUE(!tdm__timers_pop(t, 299, &out));
    ASSERT_EQ(tdm__timers_peek(t), 300);
    ASSERT_TRUE(tdm__timers_pop(t, TDM_TIME_MAX, &out));
    ASSERT_EQ(out.time, 300);
    ASSERT_TRUE(tdm__timers_pop(t, TDM_TIME_MAX, &out));
    ASSERT_EQ(out.time, TDM_TIME_MAX);
    ASSERT_TRUE(!tdm__timers_pop(t, TDM_TIME_MAX, &out));
    ASSERT_EQ(tdm__timers_count(t), 0);
    tdm__timers_destroy(t);
    tdm__timers_destroy(NULL);
}

TDM_TEST(timers_deduplicate_exact_triples_and_delete)
{
    tdm__timers *t = tdm__timers_new();
    ASSERT_OK(tdm__timers_add(t, 1999, 1, ns2(0, 2000)));
    ASSERT_OK(tdm__timers_add(t, 1999, 1, ns2(0, 2000))); /* duplicate */
    ASSERT_OK(tdm__timers_add(t, 1999, 2, ns2(0, 2000))); /* other key */
    ASSERT_OK(tdm__timers_add(t, 1999, 1, ns2(0, 3000))); /* other ns */
    ASSERT_OK(tdm__timers_add(t, 2999, 1, ns2(0, 2000))); /* other time */
    ASSERT_EQ(tdm__timers_count(t), 4);
    ASSERT_TRUE(tdm__timers_has(t, 1999, 1, ns2(0, 2000)));
    tdm__timers_del(t, 1999, 1, ns2(0, 2000));
    tdm__timers_del(t, 1999, 1, ns2(0, 2000)); /* absent: no-op */
    tdm__timers_del(t, 5, 9, ns2(0, 0));       /* never added */
    ASSERT_TRUE(!tdm__timers_has(t, 1999, 1, ns2(0, 2000)));
    ASSERT_TRUE(tdm__timers_has(t, 1999, 2, ns2(0, 2000)));
    ASSERT_EQ(tdm__timers_count(t), 3);
    /* Equal times pop in registration order: key 2 then ns (0, 3000). */
    tdm__timer out;
    ASSERT_TRUE(tdm__timers_pop(t, 1999, &out));
    ASSERT_EQ(out.key, 2);
    ASSERT_TRUE(tdm__timers_pop(t, 1999, &out));
    ASSERT_EQ(out.key, 1);
    ASSERT_EQ(out.ns.b, 3000);
    ASSERT_TRUE(!tdm__timers_pop(t, 1999, &out));
    /* After popping, the same triple can be registered again. */
    ASSERT_OK(tdm__timers_add(t, 1999, 2, ns2(0, 2000)));
    ASSERT_EQ(tdm__timers_peek(t), 1999);
    tdm__timers_destroy(t);
}

/* Flink fires timers registered while a watermark is being processed in
 * the same watermark when their time is <= the watermark. */
TDM_TEST(timers_added_while_draining_fire_in_same_pass)
{
    tdm__timers *t = tdm__timers_new();
    ASSERT_OK(tdm__timers_add(t, 10, 1, ns2(0, 0)));
    tdm__timer out;
    int fired = 0;
    tdm_time_ms times[8];
    while (tdm__timers_pop(t, 50, &out)) {
        times[fired++] = out.time;
        /* Each firing registers the next one 20 ms later (10, 30, 50, 70):
         * 70 is beyond the pass. */
        ASSERT_OK(tdm__timers_add(t, out.time + 20, 1, ns2(0, 0)));
    }
    ASSERT_EQ(fired, 3);
    ASSERT_EQ(times[0], 10);
    ASSERT_EQ(times[1], 30);
    ASSERT_EQ(times[2], 50);
    ASSERT_EQ(tdm__timers_peek(t), 70);
    tdm__timers_destroy(t);
}

/* Random adds, deletes and pops against a brute-force set: pops must
 * return the smallest time (earliest registration among equals). */
TDM_TEST(timers_random_against_model)
{
    enum { MAXN = 4000 };
    struct m {
        tdm_time_ms time;
        uint32_t key;
        tdm_time_ms a;
        uint64_t seq;
    };
    static struct m model[MAXN];
    int n = 0;
    uint64_t seq = 0, seed = 99;
    tdm__timers *t = tdm__timers_new();
    for (int step = 0; step < 40000; step++) {
        tdm_time_ms time = (tdm_time_ms)(rng_next(&seed) % 500) - 250;
        uint32_t key = (uint32_t)(rng_next(&seed) % 5);
        tdm_time_ms a = (tdm_time_ms)(rng_next(&seed) % 4);
        int op = (int)(rng_next(&seed) % 10);
        int found = -1;
        for (int i = 0; i < n; i++)
            if (model[i].time == time && model[i].key == key && model[i].a == a)
                found = i;
        if (op < 5 && n < MAXN) {
            ASSERT_OK(tdm__timers_add(t, time, key, ns2(a, -a)));
            if (found < 0) {
                struct m e = {time, key, a, seq++};
                model[n++] = e;
            }
        } else if (op < 7) {
            ASSERT_EQ(tdm__timers_has(t, time, key, ns2(a, -a)), found >= 0);
            tdm__timers_del(t, time, key, ns2(a, -a));
            if (found >= 0)
                model[found] = model[--n];
        } else {
            tdm_time_ms upto = (tdm_time_ms)(rng_next(&seed) % 500) - 250;
            int best = -1;
            for (int i = 0; i < n; i++)
                if (model[i].time <= upto &&
                    (best < 0 || model[i].time < model[best].time ||
                     (model[i].time == model[best].time &&
                      model[i].seq < model[best].seq)))
                    best = i;
            tdm__timer out;
            bool got = tdm__timers_pop(t, upto, &out);
            ASSERT_EQ(got, best >= 0);
            if (got) {
                ASSERT_EQ(out.time, model[best].time);
                ASSERT_EQ(out.key, model[best].key);
                ASSERT_EQ(out.ns.a, model[best].a);
                ASSERT_EQ(out.ns.b, -model[best].a);
                model[best] = model[--n];
            }
        }
        ASSERT_EQ(tdm__timers_count(t), n);
    }
    ASSERT_TRUE(tdm__timers_bytes(t) > 0);
    tdm__timers_destroy(t);
}

TDM_TEST(timers_oom_leaves_queue_consistent)
{
    tdm__timers *t = tdm__timers_new();
    int ok = 0, failed = 0;
    for (int i = 0; i < 1000; i++) {
        tdm__alloc_fail_after(1);
        tdm_err e = tdm__timers_add(t, i, 0, ns2(0, 0));
        tdm__alloc_fail_after(0);
        if (e == TDM_OK) {
            ok++;
        } else {
            ASSERT_ERR(e, TDM_ERR_NOMEM);
            ASSERT_TRUE(!tdm__timers_has(t, i, 0, ns2(0, 0)));
            failed++;
        }
    }
    ASSERT_TRUE(failed > 0);
    ASSERT_EQ(tdm__timers_count(t), ok);
    tdm__timer out;
    tdm_time_ms prev = TDM_TIME_MIN;
    int popped = 0;
    while (tdm__timers_pop(t, TDM_TIME_MAX, &out)) {
        ASSERT_TRUE(out.time > prev);
        prev = out.time;
        popped++;
    }
    ASSERT_EQ(popped, ok);
    tdm__timers_destroy(t);
}

/* ---- window store ---- */

/* Key i of the window store tests: lengths 0 to 40 (inline up to 16
 * bytes, on the heap above), distinct for distinct i. */
static size_t ws_key(uint32_t i, char *buf)
{
    size_t len = i % 41;
    for (size_t k = 0; k < len; k++)
        buf[k] = (char)('a' + (i / 41 + k * 7) % 26);
    if (len >= 4) {
        /* The index itself, so that keys of one length differ. */
        memcpy(buf, &i, 4);
    } else if (i >= 41) {
        /* Short keys repeat: keep only the first of each length. */
        return (size_t)-1;
    }
    return len;
}

static uint32_t ws_find(tdm__wstore *ws, const char *k, size_t len)
{
    return tdm__ws_find(ws, k, len, tdm__ws_hash(k, len));
}

static uint32_t ws_intern(tdm__wstore *ws, const char *k, size_t len)
{
    uint32_t id;
    ASSERT_OK(tdm__ws_intern(ws, k, len, tdm__ws_hash(k, len), &id));
    return id;
}

/* Keys of every length class: interning twice gives one id, the bytes
 * come back, a key with no cell can be dropped, the empty key is a key.
 * The empty store holds 0 bytes. */
TDM_TEST(ws_keys_intern_find_drop)
{
    tdm__wstore *ws = tdm__ws_new(1, false);
    ASSERT_TRUE(ws != NULL);
    ASSERT_EQ(tdm__ws_bytes(ws), 0);
    static const char *const keys[] = {"",
                                       "a",
                                       "abc",
                                       "abcd",
                                       "abcdefgh",
                                       "abcdefghi",
                                       "abcdefghijklmnop",
                                       "abcdefghijklmnopq"};
    uint32_t ids[8];
    for (int i = 0; i < 8; i++)
        ids[i] = ws_intern(ws, keys[i], strlen(keys[i]));
    for (int i = 0; i < 8; i++) {
        ASSERT_EQ(ws_intern(ws, keys[i], strlen(keys[i])), ids[i]);
        ASSERT_EQ(ws_find(ws, keys[i], strlen(keys[i])), ids[i]);
        const tdm__ws_key *e = tdm__ws_key_at(ws, ids[i]);
        ASSERT_EQ(tdm__ws_key_len(e), strlen(keys[i]));
        ASSERT_TRUE(!memcmp(tdm__ws_key_bytes(e), keys[i], strlen(keys[i])));
    }
    /* Same tail or same head, other length: other keys. */
    ASSERT_EQ(ws_find(ws, "bcdefghi", 8), TDM__WS_NONE);
    ASSERT_EQ(ws_find(ws, "abcdefghijklmnoq", 16), TDM__WS_NONE);
    ASSERT_EQ(ws->live_keys, 8);
    ASSERT_EQ(ws->heap_bytes, 16 + 17); /* keys over 12 bytes */
    for (int i = 0; i < 8; i++)
        tdm__ws_key_drop_if_empty(ws, ids[i]);
    ASSERT_EQ(ws->live_keys, 0);
    ASSERT_EQ(ws->heap_bytes, 0);
    ASSERT_EQ(tdm__ws_bytes(ws), 0);
    for (int i = 0; i < 8; i++)
        ASSERT_EQ(ws_find(ws, keys[i], strlen(keys[i])), TDM__WS_NONE);
    tdm__ws_destroy(ws);
    tdm__ws_destroy(NULL);
}

/* Cells: the first n_inline cells of a key live in its entry, more go
 * to the spill table (64-byte entries: one double, two inline; two
 * doubles, one; 32-byte entries for one window per key: one).  Each
 * span lists its keys in the order their cells were made. */
TDM_TEST(ws_cells_inline_then_spilled)
{
    for (int shape = 0; shape < 3; shape++) {
        uint32_t nv = shape == 1 ? 2 : 1;
        tdm__wstore *ws = tdm__ws_new(nv, shape == 2);
        ASSERT_EQ(ws->n_inline, shape == 0 ? 2 : 1);
        ASSERT_EQ(ws->eshift, shape == 2 ? 5 : 6);
        uint32_t k = ws_intern(ws, "key", 3);
        uint32_t sids[4];
        for (int i = 0; i < 4; i++) {
            ASSERT_OK(tdm__ws_span_get(ws, i * 10, i * 10 + 10, i * 10 + 9,
                                       i * 10 + 9, false, &sids[i]));
            tdm__ws_cell *c = tdm__ws_cell_add(ws, k, sids[i]);
            ASSERT_TRUE(c != NULL);
            c->v[0] = i;
            ASSERT_EQ(!!(c->span & TDM__WS_SPILL_BIT), i >= (int)ws->n_inline);
        }
        ASSERT_EQ(ws->n_cells, 4);
        ASSERT_EQ(ws->n_spilled, 4 - ws->n_inline);
        for (int i = 0; i < 4; i++) {
            tdm__ws_cell *c =
                tdm__ws_cell_of(ws, tdm__ws_key_at(ws, k), k, sids[i]);
            ASSERT_TRUE(c != NULL);
            ASSERT_DBL_EQ(c->v[0], i);
            ASSERT_EQ(tdm__ws_span_at(ws, sids[i])->n, 1);
            ASSERT_EQ(tdm__ws_span_at(ws, sids[i])->members[0], k);
        }
        /* Releasing the last cell drops the key. */
        for (int i = 0; i < 4; i++) {
            tdm__ws_cell *c =
                tdm__ws_cell_of(ws, tdm__ws_key_at(ws, k), k, sids[i]);
            tdm__ws_cell_release(ws, k, c);
            tdm__ws_span_free(ws, sids[i]);
            ASSERT_EQ(ws->live_keys, i < 3 ? 1 : 0);
        }
        ASSERT_EQ(ws->n_spilled, 0);
        ASSERT_EQ(tdm__ws_bytes(ws), 0);
        tdm__ws_destroy(ws);
    }
}

/* Spans are due in time order: at their fire time until marked fired,
 * then at their cleanup time; equal times in creation order; a time of
 * TDM_TIME_MAX is never due.  Expected order by hand: A fire 9, B fire
 * 9 (created after A), C created fired, due at cleanup 15; A cleanup 19;
 * B cleanup MAX never. */
TDM_TEST(ws_spans_due_in_time_order)
{
    tdm__wstore *ws = tdm__ws_new(1, false);
    uint32_t a, b, c, x;
    ASSERT_OK(tdm__ws_span_get(ws, 0, 10, 9, 19, false, &a));
    ASSERT_OK(tdm__ws_span_get(ws, 5, 10, 9, TDM_TIME_MAX, false, &b));
    ASSERT_OK(tdm__ws_span_get(ws, -10, 0, -1, 15, true, &c));
    ASSERT_OK(tdm__ws_span_get(ws, 0, 10, 0, 0, false, &x));
    ASSERT_EQ(x, a); /* found, not made again */
    ASSERT_EQ(tdm__ws_span_find(ws, 5, 10), b);
    ASSERT_EQ(tdm__ws_span_find(ws, 5, 11), TDM__WS_NONE);
    ASSERT_EQ(tdm__ws_span_due(ws, 8), TDM__WS_NONE);
    ASSERT_EQ(tdm__ws_span_due(ws, 9), a);
    tdm__ws_span_set_fired(ws, a);
    ASSERT_EQ(tdm__ws_span_due(ws, 9), b);
    tdm__ws_span_set_fired(ws, b);
    ASSERT_EQ(tdm__ws_span_due(ws, 14), TDM__WS_NONE);
    ASSERT_EQ(tdm__ws_span_due(ws, TDM_TIME_MAX), c);
    tdm__ws_span_free(ws, c);
    ASSERT_EQ(tdm__ws_span_due(ws, TDM_TIME_MAX), a);
    tdm__ws_span_free(ws, a);
    ASSERT_EQ(tdm__ws_span_due(ws, TDM_TIME_MAX), TDM__WS_NONE);
    ASSERT_EQ(ws->live_spans, 1);
    ASSERT_EQ(tdm__ws_span_find(ws, 0, 10), TDM__WS_NONE);
    ASSERT_EQ(tdm__ws_span_find(ws, 5, 10), b);
    tdm__ws_destroy(ws);
}

/* Firing counts past 32 bits: an inline cell is widened (moved to the
 * spill table) and its count goes on from 2^32 - 1 to 2^32 and beyond. */
TDM_TEST(ws_fire_count_widens)
{
    tdm__wstore *ws = tdm__ws_new(1, false);
    uint32_t k = ws_intern(ws, "k", 1), sid;
    ASSERT_OK(tdm__ws_span_get(ws, 0, 10, 9, 9, false, &sid));
    tdm__ws_cell *c = tdm__ws_cell_add(ws, k, sid);
    c->v[0] = 42;
    c->fires = UINT32_MAX;
    ASSERT_EQ(tdm__ws_fires(c), UINT32_MAX);
    ASSERT_OK(tdm__ws_cell_widen(ws, k, &c));
    ASSERT_TRUE(c->span & TDM__WS_SPILL_BIT);
    ASSERT_EQ(tdm__ws_fires(c), UINT32_MAX);
    ASSERT_DBL_EQ(c->v[0], 42);
    tdm__ws_fires_inc(c);
    ASSERT_EQ(tdm__ws_fires(c), (int64_t)UINT32_MAX + 1);
    tdm__ws_fires_inc(c);
    ASSERT_EQ(tdm__ws_fires(c), (int64_t)UINT32_MAX + 2);
    ASSERT_TRUE(tdm__ws_cell_of(ws, tdm__ws_key_at(ws, k), k, sid) == c);
    ASSERT_EQ(ws->n_cells, 1);
    ASSERT_OK(tdm__ws_cell_widen(ws, k, &c)); /* already wide: no-op */
    tdm__ws_cell_release(ws, k, c);
    tdm__ws_span_free(ws, sid);
    ASSERT_EQ(tdm__ws_bytes(ws), 0);
    tdm__ws_destroy(ws);
}

/* Random keys and cells against a model, across many table rebuilds
 * (growth, tombstone cleanup, compaction).  Cells are removed as the
 * window operator removes them: a whole span at a time, walking its
 * members (which name each key once) and then freeing it.  After every
 * step each model key is found; cell values encode (key, span) so that
 * a cell reached through a stale id would be noticed. */
static void ws_random_case(bool one_window)
{
    enum { N_KEYS = 3000, N_SPANS = 4 };
    static unsigned char has[N_KEYS][N_SPANS]; /* model: cell present */
    memset(has, 0, sizeof has);
    tdm__wstore *ws = tdm__ws_new(1, one_window);
    uint32_t sids[N_SPANS];
    tdm_time_ms next_start = 0;
    for (int s = 0; s < N_SPANS; s++, next_start++)
        ASSERT_OK(tdm__ws_span_get(ws, next_start, next_start + 1, 0, 0, false,
                                   &sids[s]));
    uint64_t rs = 7;
    char buf[48];
    size_t cells = 0, rebuilt = 0, max_live = 0;
    for (int step = 0; step < 40000; step++) {
        uint32_t i = (uint32_t)(rng_next(&rs) % N_KEYS);
        size_t len = ws_key(i, buf);
        if (len == (size_t)-1)
            continue;
        /* Fewer keys in the second half, so that the table shrinks. */
        if (step > 20000 && i >= N_KEYS / 10)
            continue;
        int s = (int)(rng_next(&rs) % N_SPANS);
        uint32_t id = ws_find(ws, buf, len);
        bool key_live = false;
        for (int t = 0; t < N_SPANS; t++)
            key_live |= has[i][t];
        ASSERT_EQ(id != TDM__WS_NONE, key_live);
        if (!has[i][s]) {
            size_t slots = ws->slots;
            id = ws_intern(ws, buf, len);
            rebuilt += ws->slots != slots;
            tdm__ws_cell *c = tdm__ws_cell_add(ws, id, sids[s]);
            ASSERT_TRUE(c != NULL);
            c->v[0] = i * 10.0 + s;
            has[i][s] = 1;
            cells++;
        } else {
            tdm__ws_cell *c =
                tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id), id, sids[s]);
            ASSERT_TRUE(c != NULL);
            ASSERT_DBL_EQ(c->v[0], i * 10.0 + s);
        }
        if (ws->live_keys > max_live)
            max_live = ws->live_keys;
        if (step % 1500 == 1499) {
            /* Clean up one span through its members, then compact. */
            int d = (int)(rng_next(&rs) % N_SPANS);
            const tdm__ws_span *sp = tdm__ws_span_at(ws, sids[d]);
            for (uint32_t m = 0; m < sp->n; m++) {
                uint32_t k = sp->members[m];
                tdm__ws_key *e = tdm__ws_key_at(ws, k);
                tdm__ws_cell *c = tdm__ws_cell_of(ws, e, k, sids[d]);
                ASSERT_TRUE(c != NULL);
                uint32_t ki = (uint32_t)(c->v[0] / 10);
                ASSERT_TRUE(ki < N_KEYS && has[ki][d]);
                ASSERT_DBL_EQ(c->v[0], ki * 10.0 + d);
                size_t klen = ws_key(ki, buf);
                ASSERT_EQ(tdm__ws_key_len(e), klen);
                ASSERT_TRUE(!memcmp(tdm__ws_key_bytes(e), buf, klen));
                tdm__ws_cell_release(ws, k, c);
                has[ki][d] = 0;
                cells--;
            }
            tdm__ws_span_free(ws, sids[d]);
            ASSERT_OK(tdm__ws_span_get(ws, next_start, next_start + 1, 0, 0,
                                       false, &sids[d]));
            next_start++;
            size_t slots = ws->slots;
            tdm__ws_compact(ws);
            rebuilt += ws->slots != slots;
        }
        size_t live = 0;
        if (step % 997 == 0) {
            for (uint32_t k = 0; k < N_KEYS; k++) {
                bool any = false;
                for (int t = 0; t < N_SPANS; t++)
                    any |= has[k][t];
                live += any;
            }
            ASSERT_EQ(ws->live_keys, live);
        }
        ASSERT_EQ(ws->n_cells, cells);
    }
    /* The table grew and shrank several times. */
    ASSERT_TRUE(rebuilt >= 6);
    ASSERT_TRUE(max_live > 1000);
    for (uint32_t i = 0; i < N_KEYS; i++) {
        size_t len = ws_key(i, buf);
        if (len == (size_t)-1)
            continue;
        uint32_t id = ws_find(ws, buf, len);
        for (int s = 0; s < N_SPANS; s++) {
            if (!has[i][s])
                continue;
            tdm__ws_cell *c =
                tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id), id, sids[s]);
            ASSERT_TRUE(c != NULL);
            ASSERT_DBL_EQ(c->v[0], i * 10.0 + s);
        }
    }
    tdm__ws_destroy(ws);
}

/* The model case with 64-byte entries (two inline cells) and with
 * 32-byte ones (one inline cell, so most cells spill). */
TDM_TEST(ws_random_against_model)
{
    ws_random_case(false);
    ws_random_case(true);
}

/* Allocation failures: interning (long key bytes, table rebuild), span
 * creation and cell creation (spill slab, member list) fail with
 * TDM_ERR_NOMEM or NULL and leave the store as it was; it works again
 * afterwards. */
TDM_TEST(ws_oom_leaves_store_unchanged)
{
    tdm__wstore *ws = tdm__ws_new(2, false);
    char buf[48];
    uint32_t sid, id;
    ASSERT_OK(tdm__ws_span_get(ws, 0, 10, 9, 9, false, &sid));
    for (uint32_t i = 41; i < 200; i++) {
        size_t len = ws_key(i, buf);
        if (len == (size_t)-1)
            continue;
        uint64_t h = tdm__ws_hash(buf, len);
        tdm__alloc_fail_after(1);
        tdm_err err = tdm__ws_intern(ws, buf, len, h, &id);
        tdm__alloc_fail_after(0);
        if (err == TDM_OK) {
            /* No allocation needed (inline key, room in the table). */
            ASSERT_TRUE(len <= TDM__WS_KEY_INLINE);
        } else {
            ASSERT_ERR(err, TDM_ERR_NOMEM);
            ASSERT_EQ(ws_find(ws, buf, len), TDM__WS_NONE);
            id = ws_intern(ws, buf, len);
        }
        size_t cells = ws->n_cells;
        tdm__alloc_fail_after(1);
        tdm__ws_cell *c = tdm__ws_cell_add(ws, id, sid);
        tdm__alloc_fail_after(0);
        if (!c) {
            ASSERT_EQ(ws->n_cells, cells);
            ASSERT_TRUE(tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id), id, sid) ==
                        NULL);
            c = tdm__ws_cell_add(ws, id, sid);
            ASSERT_TRUE(c != NULL);
        }
        c->v[0] = i;
    }
    /* New spans need memory now and then (ids, map, heap). */
    int failed = 0;
    for (tdm_time_ms t = 100; t < 140; t++) {
        uint32_t other;
        tdm__alloc_fail_after(1);
        tdm_err err =
            tdm__ws_span_get(ws, t, t + 10, t + 9, t + 9, false, &other);
        tdm__alloc_fail_after(0);
        if (err != TDM_OK) {
            ASSERT_ERR(err, TDM_ERR_NOMEM);
            ASSERT_EQ(tdm__ws_span_find(ws, t, t + 10), TDM__WS_NONE);
            failed++;
            ASSERT_OK(
                tdm__ws_span_get(ws, t, t + 10, t + 9, t + 9, false, &other));
        }
        ASSERT_EQ(tdm__ws_span_find(ws, t, t + 10), other);
    }
    ASSERT_TRUE(failed >= 2);
    ASSERT_EQ(ws->live_spans, 41);
    ASSERT_EQ(tdm__ws_span_at(ws, sid)->n, ws->n_cells);
    for (uint32_t i = 41; i < 200; i++) {
        size_t len = ws_key(i, buf);
        if (len == (size_t)-1)
            continue;
        id = ws_find(ws, buf, len);
        ASSERT_TRUE(id != TDM__WS_NONE);
        tdm__ws_cell *c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id), id, sid);
        ASSERT_TRUE(c != NULL);
        ASSERT_DBL_EQ(c->v[0], i);
    }
    tdm__ws_destroy(ws);
}

/* Puts key number @p i into span @p sid with value @p v (the key's 4
 * bytes are the number, so keys never repeat). */
static void ws_put(tdm__wstore *ws, uint32_t i, uint32_t sid, double v)
{
    char buf[4];
    memcpy(buf, &i, 4);
    uint32_t id = ws_intern(ws, buf, 4);
    tdm__ws_cell *c = tdm__ws_cell_add(ws, id, sid);
    ASSERT_TRUE(c != NULL);
    c->v[0] = v;
}

/* Releases every cell of span @p sid through its members (as the
 * window operator cleans up a window), frees it and compacts. */
static void ws_clean(tdm__wstore *ws, uint32_t sid)
{
    const tdm__ws_span *sp = tdm__ws_span_at(ws, sid);
    for (uint32_t m = 0; m < sp->n; m++) {
        uint32_t k = sp->members[m];
        tdm__ws_cell *c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, k), k, sid);
        ASSERT_TRUE(c != NULL);
        tdm__ws_cell_release(ws, k, c);
    }
    tdm__ws_span_free(ws, sid);
    tdm__ws_compact(ws);
}

/* Tumbling windows whose keys churn (issue 7): each window has 3000 new
 * keys, and the previous window is cleaned up a third of the way into
 * the next, so that live keys swing between 1000 and 4000.  After the
 * first two windows the key table keeps its size and memory: no more
 * table allocations (resizes), only in-place tombstone clearing, and
 * each new window's member list reuses the freed one's memory.  Every
 * live key is found with its value after every window. */
TDM_TEST(ws_churning_windows_keep_one_table)
{
    enum { PER_WIN = 3000, WINDOWS = 12 };
    tdm__wstore *ws = tdm__ws_new(1, true);
    ASSERT_EQ(ws->eshift, 5); /* 32-byte entries, one inline cell */
    ASSERT_EQ(ws->n_inline, 1);
    uint32_t prev = TDM__WS_NONE;
    uint64_t resizes = 0;
    size_t slots = 0;
    const uint32_t *freed_members = NULL;
    for (uint32_t w = 0; w < WINDOWS; w++) {
        uint32_t sid;
        ASSERT_OK(tdm__ws_span_get(ws, w * 10, w * 10 + 10, w * 10 + 9,
                                   w * 10 + 9, false, &sid));
        if (w >= 2)
            ASSERT_TRUE(tdm__ws_span_at(ws, sid)->members == freed_members);
        for (uint32_t i = 0; i < PER_WIN; i++) {
            ws_put(ws, w * PER_WIN + i, sid, w * PER_WIN + i);
            if (i == PER_WIN / 3 && prev != TDM__WS_NONE) {
                freed_members = tdm__ws_span_at(ws, prev)->members;
                ws_clean(ws, prev);
                ASSERT_EQ(ws->live_keys, i + 1);
            }
        }
        prev = sid;
        if (w == 2) {
            resizes = ws->resizes;
            slots = ws->slots;
        } else if (w > 2) {
            ASSERT_EQ(ws->resizes, resizes);
            ASSERT_EQ(ws->slots, slots);
        }
        /* This window's keys are all there, with their values. */
        for (uint32_t i = 0; i < PER_WIN; i++) {
            uint32_t k = w * PER_WIN + i;
            uint32_t id =
                tdm__ws_find(ws, (const char *)&k, 4, tdm__ws_hash(&k, 4));
            ASSERT_TRUE(id != TDM__WS_NONE);
            tdm__ws_cell *c =
                tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id), id, sid);
            ASSERT_TRUE(c != NULL);
            ASSERT_DBL_EQ(c->v[0], k);
        }
    }
    /* Tombstones were cleared without a new table; no cell spilled, so
     * the entries stayed at 32 bytes. */
    ASSERT_TRUE(ws->gen > ws->resizes);
    ASSERT_EQ(ws->eshift, 5);
    ASSERT_EQ(ws->n_cells, PER_WIN);
    /* Once everything is gone the table shrinks (the last period's peak
     * is 4000 keys; the next compaction sees none). */
    ws_clean(ws, prev);
    tdm__ws_compact(ws);
    ASSERT_EQ(ws->live_keys, 0);
    ASSERT_TRUE(ws->slots < slots);
    tdm__ws_destroy(ws);
}

/* Clearing tombstones in place renumbers keys like a rebuild: span
 * members and spilled cells (two doubles: one inline cell, the second
 * window spills) follow their keys.  Keys 0-1189 get a cell in span A
 * (the table of 1369 slots is then 87% full), every eighth one in span B
 * too; then the A cells of keys that are not multiples of 4 go (and so
 * do those 892 keys), leaving mostly tombstones, and a compaction with no
 * shrink due (the peak, 1190 keys, needs the table) clears them in
 * place.  Expected: same slots, no new table, no tombstone, and each
 * remaining cell holds the value put in (key * 10 + span). */
TDM_TEST(ws_rehash_in_place_renumbers)
{
    tdm__wstore *ws = tdm__ws_new(2, false);
    uint32_t a, b;
    ASSERT_OK(tdm__ws_span_get(ws, 0, 10, 9, 9, false, &a));
    ASSERT_OK(tdm__ws_span_get(ws, 5, 15, 14, 14, false, &b));
    for (uint32_t i = 0; i < 1190; i++) {
        ws_put(ws, i, a, i * 10.0);
        if (i % 8 == 0)
            ws_put(ws, i, b, i * 10.0 + 1);
    }
    ASSERT_EQ(ws->n_spilled, 149);
    ASSERT_EQ(ws->slots, 1369);
    size_t before = ws->slots;
    uint64_t resizes = ws->resizes;
    for (uint32_t i = 0; i < 1190; i++) {
        if (i % 4 == 0)
            continue;
        uint32_t id =
            tdm__ws_find(ws, (const char *)&i, 4, tdm__ws_hash(&i, 4));
        tdm__ws_cell *c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id), id, a);
        tdm__ws_cell_release(ws, id, c);
    }
    ASSERT_EQ(ws->live_keys, 298);
    ASSERT_TRUE(ws->deleted * 4 > ws->slots);
    uint64_t gen = ws->gen;
    tdm__ws_compact(ws);
    ASSERT_EQ(ws->gen, gen + 1);
    ASSERT_EQ(ws->resizes, resizes);
    ASSERT_EQ(ws->slots, before);
    ASSERT_EQ(ws->deleted, 0);
    for (uint32_t i = 0; i < 1190; i++) {
        uint32_t id =
            tdm__ws_find(ws, (const char *)&i, 4, tdm__ws_hash(&i, 4));
        ASSERT_EQ(id != TDM__WS_NONE, i % 4 == 0);
        if (id == TDM__WS_NONE)
            continue;
        tdm__ws_key *e = tdm__ws_key_at(ws, id);
        tdm__ws_cell *c = tdm__ws_cell_of(ws, e, id, a);
        ASSERT_EQ(c != NULL, i % 4 == 0);
        if (c)
            ASSERT_DBL_EQ(c->v[0], i * 10.0);
        c = tdm__ws_cell_of(ws, e, id, b);
        ASSERT_EQ(c != NULL, i % 8 == 0);
        if (c)
            ASSERT_DBL_EQ(c->v[0], i * 10.0 + 1);
    }
    /* Members name the keys that hold cells there, values match. */
    for (int s = 0; s < 2; s++) {
        uint32_t sid = s ? b : a;
        const tdm__ws_span *sp = tdm__ws_span_at(ws, sid);
        size_t live = 0;
        for (uint32_t m = 0; m < sp->n; m++) {
            uint32_t k = sp->members[m];
            if (k == TDM__WS_NONE)
                continue;
            tdm__ws_cell *c =
                tdm__ws_cell_of(ws, tdm__ws_key_at(ws, k), k, sid);
            if (!c)
                continue;
            uint32_t ki;
            memcpy(&ki, tdm__ws_key_bytes(tdm__ws_key_at(ws, k)), 4);
            ASSERT_DBL_EQ(c->v[0], ki * 10.0 + s);
            live++;
        }
        ASSERT_EQ(live, s ? 149 : 298);
    }
    tdm__ws_destroy(ws);
}

/* 32-byte entries (one inline cell) grow to 64 bytes (two) at the next
 * compaction once over 1/8 of new cells spilled: 100 keys with a cell in
 * span A, then in span B too, so that 100 of 200 cells spilled.  After
 * tdm__ws_compact the B cells are inline again (values and firing
 * counts kept), except key 0's, whose firing count was pushed past 32
 * bits and has to stay in the spill table. */
TDM_TEST(ws_small_entries_grow_when_keys_overlap_windows)
{
    tdm__wstore *ws = tdm__ws_new(1, true);
    uint32_t a, b;
    ASSERT_OK(tdm__ws_span_get(ws, 0, 10, 9, 9, false, &a));
    ASSERT_OK(tdm__ws_span_get(ws, 5, 15, 14, 14, false, &b));
    for (uint32_t i = 0; i < 100; i++)
        ws_put(ws, i, a, i * 10.0);
    for (uint32_t i = 0; i < 100; i++)
        ws_put(ws, i, b, i * 10.0 + 1);
    ASSERT_EQ(ws->n_spilled, 100);
    /* Firing counts: 5 on key 1's B cell, 2^32 on key 0's. */
    uint32_t k0 = 0, k1 = 1;
    uint32_t id0 = ws_find(ws, (const char *)&k0, 4);
    uint32_t id1 = ws_find(ws, (const char *)&k1, 4);
    tdm__ws_cell *c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id1), id1, b);
    c->fires = 5;
    c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id0), id0, b);
    c->fires = UINT32_MAX;
    tdm__ws_fires_inc(c);
    ASSERT_EQ(tdm__ws_fires(c), (uint64_t)UINT32_MAX + 1);
    uint64_t resizes = ws->resizes;
    tdm__ws_compact(ws);
    ASSERT_EQ(ws->eshift, 6);
    ASSERT_EQ(ws->n_inline, 2);
    ASSERT_EQ(ws->resizes, resizes + 1);
    ASSERT_EQ(ws->n_spilled, 1);
    ASSERT_EQ(ws->n_cells, 200);
    for (uint32_t i = 0; i < 100; i++) {
        uint32_t id = ws_find(ws, (const char *)&i, 4);
        ASSERT_TRUE(id != TDM__WS_NONE);
        tdm__ws_key *e = tdm__ws_key_at(ws, id);
        ASSERT_EQ(tdm__ws_n_spill(e), i == 0 ? 1 : 0);
        c = tdm__ws_cell_of(ws, e, id, a);
        ASSERT_TRUE(c && !(c->span & TDM__WS_SPILL_BIT));
        ASSERT_DBL_EQ(c->v[0], i * 10.0);
        c = tdm__ws_cell_of(ws, e, id, b);
        ASSERT_TRUE(c != NULL);
        ASSERT_EQ(!!(c->span & TDM__WS_SPILL_BIT), i == 0);
        ASSERT_DBL_EQ(c->v[0], i * 10.0 + 1);
        ASSERT_EQ(tdm__ws_fires(c), i == 0   ? (uint64_t)UINT32_MAX + 1
                                    : i == 1 ? 5
                                             : 0);
    }
    /* Members still name each key once per span. */
    ASSERT_EQ(tdm__ws_span_at(ws, a)->n, 100);
    ASSERT_EQ(tdm__ws_span_at(ws, b)->n, 100);
    ws_clean(ws, a);
    ws_clean(ws, b);
    ASSERT_EQ(ws->live_keys, 0);
    ASSERT_EQ(ws->n_spilled, 0);
    ASSERT_EQ(tdm__ws_bytes(ws), 0);
    tdm__ws_destroy(ws);
}

/* Sliding windows: a key has a cell in several windows at once, more
 * than a 64-byte entry holds, so most of its cells spill.  At the next
 * compaction the entries grow once more, to 128 bytes (seven inline
 * cells of one double, four of two), and every spilled cell moves
 * inline with its values and firing count.  Then three keys in four
 * lose all their cells, and the tombstones are cleared in place, which
 * moves (and swaps) 128-byte entries: every remaining key keeps all its
 * cells and values, and the span members follow the moves.  Swaps are
 * rare (an entry whose probe run wraps around the table's end), so the
 * case runs over 24 key sets per cell size; at the time of writing they
 * make four swaps of 128-byte entries. */
TDM_TEST(ws_entries_grow_to_128_bytes_for_sliding_windows)
{
    enum { KEYS = 1190, TRIALS = 24 };
    for (uint32_t run = 0; run < 2 * TRIALS; run++) {
        uint32_t nv = 1 + run % 2;
        uint32_t base = run / 2 * 100000;       /* other keys, other layouts */
        uint32_t want_inline = nv == 1 ? 7 : 4; /* (128 - 16) / (8 + 8nv) */
        uint32_t was_inline = nv == 1 ? 2 : 1;  /* 32 / (8 + 8nv) */
        tdm__wstore *ws = tdm__ws_new(nv, false);
        ASSERT_EQ(ws->eshift, 6);
        ASSERT_EQ(ws->n_inline, was_inline);
        uint32_t sid[7];
        for (uint32_t s = 0; s < want_inline; s++)
            ASSERT_OK(tdm__ws_span_get(ws, 2 * s, 2 * s + 10, 2 * s + 9,
                                       2 * s + 9, false, &sid[s]));
        for (uint32_t s = 0; s < want_inline; s++)
            for (uint32_t i = 0; i < KEYS; i++)
                ws_put(ws, base + i, sid[s], i * 10.0 + s);
        ASSERT_EQ(ws->n_spilled, (size_t)KEYS * (want_inline - was_inline));
        /* A firing count on a spilled cell of key 3 travels with it. */
        uint32_t k3 = base + 3;
        uint32_t id = ws_find(ws, (const char *)&k3, 4);
        tdm__ws_cell *c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id), id,
                                          sid[want_inline - 1]);
        ASSERT_TRUE(c && (c->span & TDM__WS_SPILL_BIT));
        c->fires = 9;
        uint64_t resizes = ws->resizes;
        tdm__ws_compact(ws);
        ASSERT_EQ(ws->eshift, 7);
        ASSERT_EQ(ws->n_inline, want_inline);
        ASSERT_EQ(ws->resizes, resizes + 1);
        ASSERT_EQ(ws->n_spilled, 0);
        ASSERT_EQ(ws->n_cells, (size_t)KEYS * want_inline);
        for (uint32_t i = 0; i < KEYS; i++) {
            uint32_t k = base + i;
            id = ws_find(ws, (const char *)&k, 4);
            ASSERT_TRUE(id != TDM__WS_NONE);
            tdm__ws_key *e = tdm__ws_key_at(ws, id);
            ASSERT_EQ(tdm__ws_n_spill(e), 0);
            for (uint32_t s = 0; s < want_inline; s++) {
                c = tdm__ws_cell_of(ws, e, id, sid[s]);
                ASSERT_TRUE(c && !(c->span & TDM__WS_SPILL_BIT));
                ASSERT_DBL_EQ(c->v[0], i * 10.0 + s);
                ASSERT_EQ(tdm__ws_fires(c),
                          i == 3 && s == want_inline - 1 ? 9 : 0);
            }
        }
        /* Keys i % 4 != 0 lose every cell (and so their slots). */
        for (uint32_t i = 0; i < KEYS; i++) {
            if (i % 4 == 0)
                continue;
            uint32_t k = base + i;
            for (uint32_t s = 0; s < want_inline; s++) {
                id = ws_find(ws, (const char *)&k, 4);
                c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, id), id, sid[s]);
                ASSERT_TRUE(c != NULL);
                tdm__ws_cell_release(ws, id, c);
            }
        }
        ASSERT_EQ(ws->live_keys, (KEYS + 3) / 4);
        ASSERT_TRUE(ws->deleted * 4 > ws->slots);
        size_t slots = ws->slots;
        uint64_t gen = ws->gen;
        resizes = ws->resizes;
        tdm__ws_compact(ws);
        ASSERT_EQ(ws->gen, gen + 1); /* rehashed in place */
        ASSERT_EQ(ws->resizes, resizes);
        ASSERT_EQ(ws->slots, slots);
        ASSERT_EQ(ws->deleted, 0);
        ASSERT_EQ(ws->eshift, 7);
        for (uint32_t i = 0; i < KEYS; i++) {
            uint32_t k = base + i;
            id = ws_find(ws, (const char *)&k, 4);
            ASSERT_EQ(id != TDM__WS_NONE, i % 4 == 0);
            if (id == TDM__WS_NONE)
                continue;
            tdm__ws_key *e = tdm__ws_key_at(ws, id);
            uint32_t got;
            memcpy(&got, tdm__ws_key_bytes(e), 4);
            ASSERT_EQ(got, k);
            for (uint32_t s = 0; s < want_inline; s++) {
                c = tdm__ws_cell_of(ws, e, id, sid[s]);
                ASSERT_TRUE(c != NULL);
                ASSERT_DBL_EQ(c->v[0], i * 10.0 + s);
            }
        }
        /* Each span's members name its KEYS / 4 live keys, renumbered. */
        for (uint32_t s = 0; s < want_inline; s++) {
            const tdm__ws_span *sp = tdm__ws_span_at(ws, sid[s]);
            size_t live = 0;
            for (uint32_t m = 0; m < sp->n; m++) {
                uint32_t k = sp->members[m];
                if (k == TDM__WS_NONE)
                    continue;
                c = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, k), k, sid[s]);
                ASSERT_TRUE(c != NULL);
                uint32_t ki;
                memcpy(&ki, tdm__ws_key_bytes(tdm__ws_key_at(ws, k)), 4);
                ASSERT_DBL_EQ(c->v[0], (ki - base) * 10.0 + s);
                tdm__ws_cell_release(ws, k, c);
                live++;
            }
            ASSERT_EQ(live, (KEYS + 3) / 4);
            tdm__ws_span_free(ws, sid[s]);
        }
        ASSERT_EQ(ws->live_keys, 0);
        ASSERT_EQ(tdm__ws_bytes(ws), 0);
        tdm__ws_destroy(ws);
    }
}
