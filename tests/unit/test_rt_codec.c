/* SPDX-License-Identifier: MIT */
/* test_rt_codec.c - key bytes, packed rows, queues and batch pools: one
 * value has one encoding (so equal keys group together and different
 * ones never collide), rows survive a pack/unpack round trip, a full
 * queue channel refuses more without blocking the others, and wake-ups
 * are batched (lazy pushes, kicks, the pool's half-free wake-up and its
 * hook before waiting). */
#include <stdatomic.h>

#include "harness.h"
#include "runtime/rt.h"

static tdm__schema schema_of(const char *text)
{
    tdm__schema s = {0};
    ASSERT_OK(tdm__schema_parse(text, &s, NULL, 0));
    return s;
}

/* Encodes field 0 of a one-string-field row holding @p s (NULL: null). */
static size_t enc_string(tdm__batch *b, const char *s, size_t len,
                         tdm__keybuf *kb, char *out)
{
    tdm__batch_clear(b);
    tdm__row *row = tdm__batch_add(b);
    if (s)
        ASSERT_OK(tdm__batch_set_string(b, row, 0, s, len));
    int idx = 0;
    const char *key;
    size_t klen;
    ASSERT_OK(tdm__key_encode(row, &idx, 1, kb, &key, &klen));
    memcpy(out, key, klen);
    tdm__val v;
    tdm_type t = TDM_TYPE_STRING;
    ASSERT_TRUE(tdm__key_decode(key, klen, &t, 1, &v));
    ASSERT_EQ(v.null, s == NULL);
    if (s) {
        ASSERT_EQ(v.u.s.len, len);
        ASSERT_TRUE(memcmp(v.u.s.p, s, len) == 0);
    }
    return klen;
}

/* A single string key is its own bytes; null is "\0"; a string that
 * starts with NUL is escaped with one more, so "", null, "\0" and "a"
 * all differ. */
TDM_TEST(single_string_key_is_its_own_bytes)
{
    tdm__schema s = schema_of("k:string");
    tdm__batch *b = tdm__batch_new(&s, 4);
    tdm__keybuf kb = {0};
    char out[16];
    ASSERT_EQ(enc_string(b, "abc", 3, &kb, out), 3);
    ASSERT_TRUE(memcmp(out, "abc", 3) == 0);
    ASSERT_EQ(enc_string(b, "", 0, &kb, out), 0);
    ASSERT_EQ(enc_string(b, NULL, 0, &kb, out), 1);
    ASSERT_EQ(out[0], 0);
    ASSERT_EQ(enc_string(b, "\0x", 2, &kb, out), 3);
    ASSERT_TRUE(memcmp(out, "\0\0x", 3) == 0);
    ASSERT_EQ(enc_string(b, "\0", 1, &kb, out), 2);
    tdm__free(kb.p);
    tdm__batch_destroy(b);
    tdm__schema_free(&s);
}

/* Several fields: tag + 8 bytes per number, tag + length + bytes per
 * string: ("ab", 7, null double) is 1+4+2 + 1+8 + 1 = 17 bytes, and the
 * decode gives the values back; -0.0 keys like 0.0. */
TDM_TEST(compound_keys_round_trip)
{
    tdm__schema s = schema_of("a:string, n:int64, d:double");
    tdm__batch *b = tdm__batch_new(&s, 4);
    tdm__row *row = tdm__batch_add(b);
    ASSERT_OK(tdm__batch_set_string(b, row, 0, "ab", 2));
    row->v[1].u.i = 7;
    row->v[1].null = 0;
    int idx[3] = {0, 1, 2};
    tdm__keybuf kb = {0};
    const char *key;
    size_t len;
    ASSERT_OK(tdm__key_encode(row, idx, 3, &kb, &key, &len));
    ASSERT_EQ(len, 17);
    tdm_type types[3] = {TDM_TYPE_STRING, TDM_TYPE_INT64, TDM_TYPE_DOUBLE};
    tdm__val v[3];
    ASSERT_TRUE(tdm__key_decode(key, len, types, 3, v));
    ASSERT_EQ(v[0].u.s.len, 2);
    ASSERT_TRUE(memcmp(v[0].u.s.p, "ab", 2) == 0);
    ASSERT_EQ(v[1].u.i, 7);
    ASSERT_EQ(v[2].null, 1);
    /* Truncated bytes are refused. */
    ASSERT_TRUE(!tdm__key_decode(key, len - 1, types, 3, v));
    /* -0.0 and 0.0 encode alike. */
    int di = 2;
    char k1[16], k2[16];
    row->v[2].null = 0;
    row->v[2].u.d = 0.0;
    ASSERT_OK(tdm__key_encode(row, &di, 1, &kb, &key, &len));
    memcpy(k1, key, len);
    row->v[2].u.d = -0.0;
    ASSERT_OK(tdm__key_encode(row, &di, 1, &kb, &key, &len));
    memcpy(k2, key, len);
    ASSERT_TRUE(memcmp(k1, k2, len) == 0);
    /* No key fields: empty bytes, never NULL. */
    ASSERT_OK(tdm__key_encode(row, idx, 0, &kb, &key, &len));
    ASSERT_EQ(len, 0);
    ASSERT_TRUE(key != NULL);
    tdm__free(kb.p);
    tdm__batch_destroy(b);
    tdm__schema_free(&s);
}

TDM_TEST(packed_rows_round_trip)
{
    tdm__schema s = schema_of("a:string, n:int64, d:double, f:bool");
    tdm__batch *b = tdm__batch_new(&s, 4);
    tdm__row *row = tdm__batch_add(b);
    ASSERT_OK(tdm__batch_set_string(b, row, 0, "hello", 5));
    row->v[1].u.i = -42;
    row->v[1].null = 0;
    row->v[3].u.i = 1;
    row->v[3].null = 0;
    row->ts = 1234;
    row->flags = TDM__ROW_GUARDED;
    tdm__keybuf kb = {0};
    ASSERT_OK(tdm__row_pack(row, &kb));
    tdm__val vals[4];
    tdm__row out;
    tdm__row_unpack(kb.p, kb.len, &s, vals, &out);
    ASSERT_EQ(out.ts, 1234);
    ASSERT_EQ(out.flags, TDM__ROW_GUARDED);
    ASSERT_EQ(tdm_row_is_null(&out, 2), 1);
    ASSERT_EQ(tdm_row_int(&out, 1), -42);
    ASSERT_EQ(tdm_row_int(&out, 3), 1);
    size_t l;
    const char *str = tdm_row_string(&out, 0, &l);
    ASSERT_EQ(l, 5);
    ASSERT_TRUE(memcmp(str, "hello", 5) == 0);
    char text[256];
    tdm__row_render(&out, text, sizeof text);
    ASSERT_STR_EQ(text, "{\"a\": \"hello\", \"n\": -42, \"d\": null, "
                        "\"f\": true}");
    tdm__free(kb.p);
    tdm__batch_destroy(b);
    tdm__schema_free(&s);
}

/* A decimal field renders at its scale (dead letters, late rows):
 * 1658.20, not the scaled 165820. */
TDM_TEST(decimal_rows_render_at_their_scale)
{
    tdm__schema s = schema_of("price:decimal(10,2), n:int64");
    tdm__batch *b = tdm__batch_new(&s, 1);
    tdm__row *row = tdm__batch_add(b);
    row->v[0].u.i = 165820;
    row->v[0].null = 0;
    row->v[1].u.i = 7;
    row->v[1].null = 0;
    char text[128];
    tdm__row_render(row, text, sizeof text);
    ASSERT_STR_EQ(text, "{\"price\": 1658.20, \"n\": 7}");
    row->v[0].u.i = -5;
    tdm__row_render(row, text, sizeof text);
    ASSERT_STR_EQ(text, "{\"price\": -0.05, \"n\": 7}");
    tdm__batch_destroy(b);
    tdm__schema_free(&s);
}

TDM_TEST(iso_formatting)
{
    char b[48];
    tdm__format_iso(0, b, sizeof b);
    ASSERT_STR_EQ(b, "1970-01-01T00:00:00Z");
    /* 1733133600 s = 2024-12-02T10:00:00Z (date -u -d @1733133600). */
    tdm__format_iso(1733133600000LL, b, sizeof b);
    ASSERT_STR_EQ(b, "2024-12-02T10:00:00Z");
    tdm__format_iso(-1, b, sizeof b);
    ASSERT_STR_EQ(b, "1969-12-31T23:59:59.999Z");
    tdm__format_iso(TDM_TIME_MAX, b, sizeof b);
    ASSERT_STR_EQ(b, "+inf");
}

/* The public formatter: milliseconds on request, the sentinels and
 * five-digit years left to the caller (0, nothing written). */
TDM_TEST(public_time_format)
{
    char b[48] = "untouched";
    ASSERT_EQ(
        tdm_time_format(1733133600000LL, TDM_TIME_FORMAT_MILLIS, b, sizeof b),
        1);
    ASSERT_STR_EQ(b, "2024-12-02T10:00:00.000Z");
    ASSERT_EQ(tdm_time_format(1733133600250LL, 0, b, sizeof b), 1);
    ASSERT_STR_EQ(b, "2024-12-02T10:00:00.250Z");
    strcpy(b, "untouched");
    ASSERT_EQ(tdm_time_format(TDM_TIME_MIN, 0, b, sizeof b), 0);
    ASSERT_EQ(tdm_time_format(TDM_TIME_MAX, 0, b, sizeof b), 0);
    ASSERT_EQ(tdm_time_format(253402300800000LL, 0, b, sizeof b), 0);
    ASSERT_STR_EQ(b, "untouched");
    ASSERT_EQ(tdm_time_format(-62167219200000LL, 0, b, sizeof b), 1);
    ASSERT_STR_EQ(b, "0000-01-01T00:00:00Z");
    ASSERT_EQ(tdm_time_format(0, 0, b, 8), 1);
    ASSERT_STR_EQ(b, "1970-01");
}

/* Channel 0 holds at most 2 items: a third push would wait, but with
 * the run aborted it returns false at once; channel 1 is unaffected;
 * items come out in order. */
TDM_TEST(queue_channels_are_bounded_separately)
{
    atomic_int abort_flag;
    atomic_init(&abort_flag, 0);
    _Atomic int64_t waits;
    atomic_init(&waits, 0);
    tdm__queue q;
    ASSERT_OK(tdm__queue_init(&q, 2, 2, &abort_flag, &waits));
    tdm__item it = {.kind = TDM__ITEM_WATERMARK, .ch = 0, .t = 1};
    ASSERT_TRUE(tdm__queue_push(&q, &it));
    it.t = 2;
    ASSERT_TRUE(tdm__queue_push(&q, &it));
    it.ch = 1;
    it.t = 3;
    ASSERT_TRUE(tdm__queue_push(&q, &it));
    atomic_store(&abort_flag, 1);
    it.ch = 0;
    it.t = 4;
    ASSERT_TRUE(!tdm__queue_push(&q, &it));
    ASSERT_EQ(atomic_load(&waits), 0); /* refused without waiting */
    atomic_store(&abort_flag, 0);
    tdm__item out[8];
    ASSERT_EQ(tdm__queue_pop(&q, out, 8, 0), 3);
    ASSERT_EQ(out[0].t, 1);
    ASSERT_EQ(out[1].t, 2);
    ASSERT_EQ(out[2].t, 3);
    ASSERT_EQ(out[2].ch, 1);
    /* Empty: a zero timeout returns nothing. */
    ASSERT_EQ(tdm__queue_pop(&q, out, 8, 0), 0);
    tdm__queue_fini(&q);
}

/* Lazy pushes leave a sleeping consumer asleep until wake_at items wait
 * (4 with 16 per channel); a kick wakes it whenever items wait; a plain
 * push always wakes it; an awake consumer is never signalled.  The
 * sleeping consumer is simulated by its flag, and the signals counted,
 * so nothing here depends on thread timing. */
TDM_TEST(queue_lazy_pushes_wake_at_a_few_items_or_a_kick)
{
    atomic_int abort_flag;
    atomic_init(&abort_flag, 0);
    tdm__queue q;
    ASSERT_OK(tdm__queue_init(&q, 2, 16, &abort_flag, NULL));
    ASSERT_EQ(q.wake_at, 4);
    tdm__item it = {.kind = TDM__ITEM_WATERMARK, .ch = 0};
    q.consumer_waiting = true;
    for (int i = 1; i <= 3; i++) {
        it.t = i;
        ASSERT_TRUE(tdm__queue_push_lazy(&q, &it));
        ASSERT_EQ(q.signals, 0);
    }
    /* The 4th item (on the other channel: all channels count). */
    it.ch = 1;
    it.t = 4;
    ASSERT_TRUE(tdm__queue_push_lazy(&q, &it));
    ASSERT_EQ(q.signals, 1);
    tdm__queue_kick(&q);
    ASSERT_EQ(q.signals, 2);
    it.t = 5;
    ASSERT_TRUE(tdm__queue_push(&q, &it));
    ASSERT_EQ(q.signals, 3);
    /* Awake: neither pushes nor kicks signal. */
    q.consumer_waiting = false;
    it.t = 6;
    ASSERT_TRUE(tdm__queue_push(&q, &it));
    tdm__queue_kick(&q);
    ASSERT_EQ(q.signals, 3);
    tdm__item out[8];
    ASSERT_EQ(tdm__queue_pop(&q, out, 8, 0), 6);
    for (int i = 0; i < 6; i++)
        ASSERT_EQ(out[i].t, i + 1);
    /* Asleep over an empty queue: a kick has nothing to wake it for. */
    q.consumer_waiting = true;
    tdm__queue_kick(&q);
    ASSERT_EQ(q.signals, 3);
    q.consumer_waiting = false;
    tdm__queue_fini(&q);
    /* A channel of 2 items: lazy pushes wake at 2, so a full channel
     * never holds a consumer that was not woken. */
    ASSERT_OK(tdm__queue_init(&q, 1, 2, &abort_flag, NULL));
    ASSERT_EQ(q.wake_at, 2);
    tdm__queue_fini(&q);
}

/* Pool of 8: a producer waiting for a batch is woken when 4 (half) are
 * free, not at each release. */
TDM_TEST(pool_wakes_a_waiting_producer_at_half_free)
{
    atomic_int abort_flag;
    atomic_init(&abort_flag, 0);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__schema s = schema_of("k:string");
    tdm__pool p;
    ASSERT_OK(tdm__pool_init(&p, &s, 4, 1, 8, &abort_flag, job));
    ASSERT_EQ(p.wake_at, 4);
    tdm__sbatch *out[8];
    tdm_err err;
    for (int i = 0; i < 8; i++) {
        out[i] = tdm__pool_get(&p, &err);
        ASSERT_TRUE(out[i] != NULL);
    }
    p.waiting = true; /* as if the producer slept in tdm__pool_get */
    for (int i = 0; i < 3; i++) {
        tdm__sbatch_release(out[i]);
        ASSERT_EQ(p.signals, 0);
    }
    tdm__sbatch_release(out[3]);
    ASSERT_EQ(p.signals, 1);
    p.waiting = false;
    for (int i = 4; i < 8; i++)
        tdm__sbatch_release(out[i]);
    ASSERT_EQ(p.signals, 1);
    ASSERT_EQ(p.n_free, 8);
    tdm__pool_fini(&p);
    tdm__schema_free(&s);
    tdm_job_destroy(job);
}

/* The hook that runs before a producer would wait: here it gives back
 * the one batch of a pool of 1, so tdm__pool_get returns that batch
 * instead of blocking (without the hook the call would never return). */
typedef struct hook_ctx {
    tdm__sbatch *held;
    int calls;
} hook_ctx;

static void give_back(void *ud)
{
    hook_ctx *h = ud;
    h->calls++;
    if (h->held) {
        tdm__sbatch_release(h->held);
        h->held = NULL;
    }
}

TDM_TEST(pool_runs_the_before_wait_hook_before_blocking)
{
    atomic_int abort_flag;
    atomic_init(&abort_flag, 0);
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm__schema s = schema_of("k:string");
    tdm__pool p;
    ASSERT_OK(tdm__pool_init(&p, &s, 4, 1, 1, &abort_flag, job));
    hook_ctx h = {NULL, 0};
    p.before_wait = give_back;
    p.before_wait_ud = &h;
    tdm_err err;
    h.held = tdm__pool_get(&p, &err);
    ASSERT_TRUE(h.held != NULL);
    ASSERT_EQ(h.calls, 0); /* a batch could be made: no wait, no hook */
    tdm__sbatch *first = h.held;
    tdm__sbatch *again = tdm__pool_get(&p, &err);
    ASSERT_TRUE(again == first);
    ASSERT_EQ(h.calls, 1);
    tdm__sbatch_release(again);
    tdm__pool_fini(&p);
    tdm__schema_free(&s);
    tdm_job_destroy(job);
}
