/* SPDX-License-Identifier: MIT */
/* test_rt_keys.c - the fast key paths of the runtime: a single
 * fixed-width key field carried as its value in the selection
 * (tdm__sel) and rebuilt by the window subtask, tdm__key_get's inlined
 * encoding and the inlined routing hash must give exactly
 * tdm__key_encode's bytes and tdm__keys_hash's value; and jobs keyed by
 * one int64 (the lean source scan) or one double (folded -0.0), with
 * nulls, maps and two consumers of one source, give the counts derived
 * by hand at parallelism 1, 2 and 4. */
#include "state/state.h"
#include "test_rt_kit.h"

/* ---- Key bytes ---- */

/* A one-field row of @p type holding @p v (null when @p null). */
static void one_field(tdm__schema *s, tdm__val *val, tdm__row *row,
                      tdm_type type, tdm__val v, bool null)
{
    static tdm__field f;
    f.name = "k";
    f.type = type;
    s->n = 1;
    s->fields = &f;
    *val = v;
    val->null = null;
    memset(row, 0, sizeof *row);
    row->v = val;
    row->schema = s;
}

/* Checks the bytes of the fixed-width key (type, v): tdm__key_encode,
 * tdm__key_fixed_put of tdm__key_fixed_bits, tdm__key_get with a grown
 * buffer, and tdm__sel_key of a selection holding the bits all equal
 * @p want (@p n bytes). */
static void check_fixed(tdm_type type, tdm__val v, const unsigned char *want,
                        size_t n)
{
    tdm__schema s;
    tdm__val val;
    tdm__row row;
    one_field(&s, &val, &row, type, v, false);
    int idx = 0;
    tdm__keybuf kb = {0};
    const char *key;
    size_t len;
    ASSERT_OK(tdm__key_encode(&row, &idx, 1, &kb, &key, &len));
    ASSERT_EQ(len, n);
    ASSERT_TRUE(memcmp(key, want, n) == 0);
    char put[TDM__KEY_FIXED_LEN];
    tdm__key_fixed_put(tdm__key_fixed_bits(&val, type), put);
    ASSERT_TRUE(memcmp(put, want, n) == 0);
    /* kb has room now: tdm__key_get takes its inlined path. */
    ASSERT_TRUE(kb.cap >= TDM__KEY_FIXED_LEN);
    memset(kb.p, 0x5a, kb.cap);
    ASSERT_OK(tdm__key_get(&row, &idx, 1, &kb, &key, &len));
    ASSERT_EQ(len, n);
    ASSERT_TRUE(memcmp(key, want, n) == 0);
    tdm__sel sl = {.row = 0, .key_len = TDM__SEL_FIXED};
    sl.fixed = tdm__key_fixed_bits(&val, type);
    char buf[TDM__KEY_FIXED_LEN];
    ASSERT_TRUE(tdm__sel_key(&sl, buf, &key, &len));
    ASSERT_EQ(len, n);
    ASSERT_TRUE(memcmp(key, want, n) == 0);
    tdm__free(kb.p);
}

static bool little_endian(void)
{
    uint16_t x = 1;
    unsigned char c;
    memcpy(&c, &x, 1);
    return c == 1;
}

/* The format (rt.h): tag 1, then the value's 8 bytes in memory order.
 * On a little-endian host 0x0102030405060708 is 1, 08 07 .. 01; -1 is 1
 * and eight 0xff; INT64_MIN 1, seven 0x00 and 0x80; a timestamp and a
 * bool (true is 1) like an int64; the double 1.0 (0x3ff0000000000000)
 * 1, six 0x00, 0xf0 0x3f; -0.0 (0x8000000000000000) keys as 0.0 (eight
 * 0x00). */
TDM_TEST(fixed_keys_are_the_encoded_bytes)
{
    if (!little_endian())
        return; /* the expected bytes below are written for one order */
    tdm__val v = {0};
    v.u.i = 0x0102030405060708LL;
    static const unsigned char i1[] = {1, 8, 7, 6, 5, 4, 3, 2, 1};
    check_fixed(TDM_TYPE_INT64, v, i1, 9);
    v.u.i = -1;
    static const unsigned char i2[] = {1,    0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff};
    check_fixed(TDM_TYPE_INT64, v, i2, 9);
    v.u.i = INT64_MIN;
    static const unsigned char i3[] = {1, 0, 0, 0, 0, 0, 0, 0, 0x80};
    check_fixed(TDM_TYPE_INT64, v, i3, 9);
    v.u.i = 0x0102030405060708LL;
    check_fixed(TDM_TYPE_TIMESTAMP, v, i1, 9);
    v.u.i = 1;
    static const unsigned char b1[] = {1, 1, 0, 0, 0, 0, 0, 0, 0};
    check_fixed(TDM_TYPE_BOOL, v, b1, 9);
    v.u.d = 1.0;
    static const unsigned char d1[] = {1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    check_fixed(TDM_TYPE_DOUBLE, v, d1, 9);
    v.u.d = -0.0;
    static const unsigned char d0[] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
    check_fixed(TDM_TYPE_DOUBLE, v, d0, 9);
    v.u.d = 0.0;
    check_fixed(TDM_TYPE_DOUBLE, v, d0, 9);
}

/* Holds @p of_value(bits) equal to @p of_bytes over the key bytes of
 * bits (tdm__key_fixed_put), for edge values and a run of pseudo-random
 * ones (an xorshift sequence). */
static void check_fixed_hash(uint64_t (*of_value)(uint64_t),
                             uint64_t (*of_bytes)(const void *, size_t))
{
    static const uint64_t edge[] = {0,
                                    1,
                                    UINT64_MAX,
                                    (uint64_t)INT64_MIN,
                                    (uint64_t)INT64_MAX,
                                    0x00ff00ff00ff00ffULL,
                                    0x8000000000000001ULL,
                                    256};
    char b[TDM__KEY_FIXED_LEN];
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        tdm__key_fixed_put(edge[i], b);
        ASSERT_TRUE(of_value(edge[i]) == of_bytes(b, TDM__KEY_FIXED_LEN));
    }
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        tdm__key_fixed_put(x, b);
        ASSERT_TRUE(of_value(x) == of_bytes(b, TDM__KEY_FIXED_LEN));
    }
}

static uint64_t keys_hash(const void *key, size_t len)
{
    return tdm__keys_hash(key, len);
}

static uint64_t ws_hash(const void *key, size_t len)
{
    return tdm__ws_hash(key, len);
}

static uint64_t fixed_hash(uint64_t bits)
{
    return tdm__key_fixed_hash(bits);
}

static uint64_t fixed_ws_hash(uint64_t bits)
{
    return tdm__key_fixed_ws_hash(bits);
}

/* The inlined routing hash of a fixed-width key equals tdm__keys_hash
 * of its bytes: a difference would route a key to another subtask than
 * the one metrics and the fence compute. */
TDM_TEST(fixed_key_hash_is_keys_hash_of_its_bytes)
{
    check_fixed_hash(fixed_hash, keys_hash);
}

/* The same for the window store's hash (tdm__key_fixed_ws_hash, what
 * a window subtask hashes a partial row's fixed-width key with): a
 * difference would make a partial miss its key's entry and count into a
 * second one. */
TDM_TEST(fixed_key_ws_hash_is_ws_hash_of_its_bytes)
{
    check_fixed_hash(fixed_ws_hash, ws_hash);
}

/* A null single field is the one byte 0 whatever its type, on every
 * path: tdm__key_get with a grown buffer falls back to the encoder. */
TDM_TEST(null_fixed_key_is_one_zero_byte)
{
    static const tdm_type types[] = {TDM_TYPE_INT64, TDM_TYPE_DOUBLE,
                                     TDM_TYPE_BOOL, TDM_TYPE_TIMESTAMP};
    for (int t = 0; t < 4; t++) {
        tdm__schema s;
        tdm__val val;
        tdm__row row;
        tdm__val v = {0};
        v.u.i = 42;
        one_field(&s, &val, &row, types[t], v, true);
        int idx = 0;
        tdm__keybuf kb = {0};
        const char *key;
        size_t len;
        ASSERT_OK(tdm__key_encode(&row, &idx, 1, &kb, &key, &len));
        ASSERT_EQ(len, 1);
        ASSERT_EQ(key[0], 0);
        ASSERT_OK(tdm__key_get(&row, &idx, 1, &kb, &key, &len));
        ASSERT_EQ(len, 1);
        ASSERT_EQ(key[0], 0);
        tdm__free(kb.p);
    }
}

/* A selection holding a key pointer gives it back unchanged; one
 * without a key (NULL) says the consumer must encode it. */
TDM_TEST(selection_key_pointer_or_none)
{
    char buf[TDM__KEY_FIXED_LEN];
    const char *key = NULL;
    size_t len = 99;
    tdm__sel sl = {.row = 3, .key_len = 3, .ts = 7};
    sl.key = "abc";
    ASSERT_TRUE(tdm__sel_key(&sl, buf, &key, &len));
    ASSERT_TRUE(key == sl.key);
    ASSERT_EQ(len, 3);
    sl.key = NULL;
    sl.key_len = 0;
    ASSERT_TRUE(!tdm__sel_key(&sl, buf, &key, &len));
}

/* ---- Jobs keyed by one fixed-width field ---- */

/* Four partitions, each in timestamp order (nothing late). */
static const kit_row ik_rows[] = {
    {0, "a", 1000, 5},         {1, "b", 2000, 5},    {2, "a", 3000, -3},
    {3, "b", 4000, INT64_MIN}, {1, "a", 5000, -999}, {2, "b", 6000, 0},
    {3, "a", 7000, 100},       {0, "b", 12000, 5},
};

static void add_ik(void)
{
    kit_add_data((kit_data){"ik", 4, ik_rows, 8, 0, 0, 0});
}

/* A job reading "ik" (with @p schema instead of the kit's, if not NULL)
 * with a count() window keyed by @p key1 into "out" and, when @p key2 is
 * not NULL, a second one "w2" keyed by it into "out2". */
static tdm_job *ik_job(const char *parallelism, const char *schema,
                       const char *key1, const char *key2)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    KIT_JOB_SET(job, "parallelism", parallelism);
    tdm_node *s = kit_source_node(job, "src", "ik");
    if (schema)
        KIT_SET(s, "schema", schema);
    tdm_node *w = kit_node(job, TDM_NODE_WINDOW, "w");
    KIT_SET(w, "from", "src");
    KIT_SET(w, "key_by", key1);
    KIT_SET(w, "window.size", "10s");
    KIT_SET(w, "aggregates", "count()");
    KIT_SET(w, "sink", "out");
    kit_node(job, TDM_NODE_SINK, "out");
    if (key2) {
        tdm_node *w2 = kit_node(job, TDM_NODE_WINDOW, "w2");
        KIT_SET(w2, "from", "src");
        KIT_SET(w2, "key_by", key2);
        KIT_SET(w2, "window.size", "10s");
        KIT_SET(w2, "aggregates", "count()");
        KIT_SET(w2, "sink", "out2");
        kit_node(job, TDM_NODE_SINK, "out2");
    }
    return job;
}

static const char *const ik_ps[] = {"1", "2", "4"};

/* Keyed by v (int64; the lean scan: event time, no map, one consumer):
 *   [0,10000)     5: 1000, 2000 -> 2; -3, INT64_MIN, -999, 0, 100: 1
 *   [10000,20000) 5: 12000 -> 1. */
TDM_TEST(int64_key_counts_at_parallelism_1_2_4)
{
    add_ik();
    for (int i = 0; i < 3; i++) {
        tdm_job *job = ik_job(ik_ps[i], NULL, "v", NULL);
        kit_run_ok(job);
        KIT_EXPECT("out", "v=5 count=2 [0,10000) on_time#0 +",
                   "v=-3 count=1 [0,10000) on_time#0 +",
                   "v=-9223372036854775808 count=1 [0,10000) on_time#0 +",
                   "v=-999 count=1 [0,10000) on_time#0 +",
                   "v=0 count=1 [0,10000) on_time#0 +",
                   "v=100 count=1 [0,10000) on_time#0 +",
                   "v=5 count=1 [10000,20000) on_time#0 +");
        tdm_job_destroy(job);
    }
}

/* Makes v null when it is -999 (an int64 key with a map: not lean). */
static void null_999(void *ud, tdm_row *row)
{
    (void)ud;
    if (row->v[2].u.i == -999)
        row->v[2].null = 1;
}

/* As int64_key_counts with -999 made null: that row keys as null. */
TDM_TEST(null_int64_key_counts_at_parallelism_1_2_4)
{
    add_ik();
    for (int i = 0; i < 3; i++) {
        tdm_job *job = ik_job(ik_ps[i], NULL, "v", NULL);
        ASSERT_OK(tdm_node_add_map(tdm_job_node(job, "src"), null_999, NULL));
        kit_run_ok(job);
        KIT_EXPECT("out", "v=5 count=2 [0,10000) on_time#0 +",
                   "v=-3 count=1 [0,10000) on_time#0 +",
                   "v=-9223372036854775808 count=1 [0,10000) on_time#0 +",
                   "v=null count=1 [0,10000) on_time#0 +",
                   "v=0 count=1 [0,10000) on_time#0 +",
                   "v=100 count=1 [0,10000) on_time#0 +",
                   "v=5 count=1 [10000,20000) on_time#0 +");
        tdm_job_destroy(job);
    }
}

/* Turns the kit's int64 v (written as an int) into a double: -999 is
 * null, 100 is -0.0, anything else its value. */
static void to_double(void *ud, tdm_row *row)
{
    (void)ud;
    int64_t i = row->v[2].u.i;
    if (i == -999)
        row->v[2].null = 1;
    else
        row->v[2].u.d = i == 100 ? -0.0 : (double)i;
}

/* Keyed by a double v: 0.0 (from 0) and -0.0 (from 100) are one key,
 * printed "0"; INT64_MIN as a double prints -9.22337e+18:
 *   [0,10000)     5 -> 2; -3, -9.22337e+18, null -> 1; 0 -> 2
 *   [10000,20000) 5 -> 1. */
TDM_TEST(double_key_folds_negative_zero_at_parallelism_1_2_4)
{
    add_ik();
    for (int i = 0; i < 3; i++) {
        tdm_job *job =
            ik_job(ik_ps[i], "k:string, ts:int64, v:double", "v", NULL);
        ASSERT_OK(tdm_node_add_map(tdm_job_node(job, "src"), to_double, NULL));
        kit_run_ok(job);
        KIT_EXPECT("out", "v=5 count=2 [0,10000) on_time#0 +",
                   "v=-3 count=1 [0,10000) on_time#0 +",
                   "v=-9.22337e+18 count=1 [0,10000) on_time#0 +",
                   "v=null count=1 [0,10000) on_time#0 +",
                   "v=0 count=2 [0,10000) on_time#0 +",
                   "v=5 count=1 [10000,20000) on_time#0 +");
        tdm_job_destroy(job);
    }
}

/* Two consumers of one source, one keyed by v, one by k (each row
 * routed twice): out as int64_key_counts; out2 counts k:
 *   [0,10000)     a: 1000, 3000, 5000, 7000 -> 4; b: 2000, 4000, 6000 -> 3
 *   [10000,20000) b: 12000 -> 1. */
TDM_TEST(two_consumers_route_each_row_by_its_own_key)
{
    add_ik();
    for (int i = 0; i < 3; i++) {
        tdm_job *job = ik_job(ik_ps[i], NULL, "v", "k");
        kit_run_ok(job);
        KIT_EXPECT("out", "v=5 count=2 [0,10000) on_time#0 +",
                   "v=-3 count=1 [0,10000) on_time#0 +",
                   "v=-9223372036854775808 count=1 [0,10000) on_time#0 +",
                   "v=-999 count=1 [0,10000) on_time#0 +",
                   "v=0 count=1 [0,10000) on_time#0 +",
                   "v=100 count=1 [0,10000) on_time#0 +",
                   "v=5 count=1 [10000,20000) on_time#0 +");
        KIT_EXPECT("out2", "k=a count=4 [0,10000) on_time#0 +",
                   "k=b count=3 [0,10000) on_time#0 +",
                   "k=b count=1 [10000,20000) on_time#0 +");
        tdm_job_destroy(job);
    }
}
