/* SPDX-License-Identifier: MIT */
/* test_snap_ops.c - checkpoints of operator state (issue 8): the window
 * operator's snapshot and restore by key group.
 *
 * The method (as test_snap_time.c): a seeded script of inputs (records
 * with out-of-order and late timestamps and payloads, watermarks on two
 * channels, idle statuses, processing-time ticks) runs once uninterrupted
 * into trace T.  Then for every cut point k a fresh operator A runs the
 * first k steps (trace P), is snapshotted, the blob is restored into a
 * fresh B whose clock reads the same, and B runs the rest and the end
 * (trace S): P followed by S must equal T event by event.  The expected
 * trace is always the uninterrupted run's.
 *
 * Key groups: A's state snapshotted as two ranges, restored into two
 * operators each fed the records of the keys it owns (and every
 * watermark): their results and late records together equal T's suffix
 * as a multiset.  Rescale 2 -> 1: two operators that each own half the
 * keys, snapshotted, both restored into one.  Corrupt blobs: every
 * truncation is refused with TDM_ERR_PARSE; bit flips are refused or
 * accepted (a flipped value can be a valid value: the checkpoint store's
 * CRC catches those) but never crash - run under ASan/UBSan.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "core.h"
#include "state/ckpt_codec.h"
#include "state/wstore.h"
#include "window/join.h"
#include "window/win.h"
#include "testhooks.h"

/* ---- Traces ---- */

typedef struct trace {
    char **line;
    size_t n, cap;
} trace;

static void trace_add(trace *t, const char *s)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->line = realloc(t->line, t->cap * sizeof *t->line);
        ASSERT_TRUE(t->line != NULL);
    }
    t->line[t->n] = strdup(s);
    ASSERT_TRUE(t->line[t->n] != NULL);
    t->n++;
}

static void trace_free(trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->line[i]);
    free(t->line);
    memset(t, 0, sizeof *t);
}

/* Every field of an event, as text. */
static void on_event(void *opaque, const tdm_event *ev)
{
    trace *t = opaque;
    char buf[2048];
    int n = snprintf(buf, sizeof buf, "t%d time=%lld idle=%d key=%.*s",
                     (int)ev->type, (long long)ev->time, ev->idle,
                     (int)ev->key_len, ev->key ? ev->key : "");
    if (ev->type == TDM_EVENT_RESULT) {
        n += snprintf(buf + n, sizeof buf - (size_t)n,
                      " w=%d[%lld,%lld) v=%.17g pane=%d/%lld upd=%d",
                      ev->has_window, (long long)ev->win_start,
                      (long long)ev->win_end, ev->value, (int)ev->pane_timing,
                      (long long)ev->pane_index, ev->is_update);
        for (size_t i = 0; i < ev->n_values && n < 1800; i++)
            n += snprintf(buf + n, sizeof buf - (size_t)n, " %.17g",
                          ev->values[i]);
        if (ev->bytes)
            n += snprintf(buf + n, sizeof buf - (size_t)n, " b=%.*s",
                          (int)(ev->bytes_len > 200 ? 200 : ev->bytes_len),
                          (const char *)ev->bytes);
    }
    if (ev->type == TDM_EVENT_JOIN)
        for (int i = 0; i < 2; i++)
            n += snprintf(
                buf + n, sizeof buf - (size_t)n,
                " r%d=%lld,%.17g,%.*s w=%d[%lld,%lld)", i,
                (long long)ev->rec[i]->ts, ev->rec[i]->value,
                (int)ev->rec[i]->payload_len,
                ev->rec[i]->payload ? (const char *)ev->rec[i]->payload : "",
                ev->has_window, (long long)ev->win_start,
                (long long)ev->win_end);
    if (ev->type == TDM_EVENT_LATE && ev->rec[0])
        n += snprintf(buf + n, sizeof buf - (size_t)n, " rec=%lld,%.17g,%.*s",
                      (long long)ev->rec[0]->ts, ev->rec[0]->value,
                      (int)ev->rec[0]->payload_len,
                      ev->rec[0]->payload ? (const char *)ev->rec[0]->payload
                                          : "");
    (void)n;
    trace_add(t, buf);
}

/* ---- Scripts ---- */

enum { S_REC, S_WM, S_IDLE, S_CLOCK, S_LATE };

typedef struct step {
    int kind;
    int ch;
    char key[8];
    tdm_time_ms t;
    double v;
    char payload[16];
    int idle;
    int side;
} step;

#define N_STEPS 160
#define N_KEYS 7
#define N_GROUPS 4

static uint64_t rng_state;
/* Non-zero: scripts also change the allowed lateness while they run
 * (S_LATE, winop_lateness.c). */
static int live_steps;

static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

/* Records around a rising time with out-of-order and late ones,
 * watermarks on two channels, idle spells, clock moves. */
static void make_script(step *s, size_t n, uint64_t seed)
{
    rng_state = seed;
    tdm_time_ms now = 0, wm[2] = {-1000, -1000}, clock = 1000;
    for (size_t i = 0; i < n; i++) {
        step *p = &s[i];
        memset(p, 0, sizeof *p);
        uint32_t r = rnd() % 100;
        p->side = (int)(rnd() % 2);
        if (r < 62) {
            p->kind = S_REC;
            snprintf(p->key, sizeof p->key, "k%u", rnd() % N_KEYS);
            now += rnd() % 4;
            p->t = now - (tdm_time_ms)(rnd() % 100 < 20 ? rnd() % 25 : 0);
            p->v = (double)(rnd() % 100) / 4.0;
            snprintf(p->payload, sizeof p->payload, "p%u", (unsigned)i);
        } else if (r < 84) {
            p->kind = S_WM;
            p->ch = (int)(rnd() % 2);
            wm[p->ch] = now - (tdm_time_ms)(rnd() % 8);
            p->t = wm[p->ch];
        } else if (r < 90) {
            p->kind = S_IDLE;
            p->ch = (int)(rnd() % 2);
            p->idle = (int)(rnd() % 2);
        } else if (live_steps && r >= 96) {
            p->kind = S_LATE;
            p->t = (tdm_time_ms)(rnd() % 12);
        } else {
            p->kind = S_CLOCK;
            clock += 1 + rnd() % 9;
            p->t = clock;
        }
    }
}

/* ---- Operators under test ---- */

/* A custom sum whose accumulator holds a pointer (as the runtime's row
 * aggregates do), with a checkpoint codec. */
typedef struct pacc {
    double *sum;
    int64_t n;
} pacc;

static void pacc_add(void *ud, void *acc, const tdm_record *rec)
{
    (void)ud;
    pacc *a = acc;
    if (!a->sum) {
        a->sum = calloc(1, sizeof *a->sum);
        ASSERT_TRUE(a->sum != NULL);
    }
    *a->sum += rec->value;
    a->n++;
}

static void pacc_merge(void *ud, void *into, const void *from)
{
    (void)ud;
    pacc *a = into;
    const pacc *b = from;
    if (!a->sum) {
        a->sum = calloc(1, sizeof *a->sum);
        ASSERT_TRUE(a->sum != NULL);
    }
    if (b->sum)
        *a->sum += *b->sum;
    a->n += b->n;
}

static void pacc_result(void *ud, const void *acc, tdm_result_out *out)
{
    (void)ud;
    const pacc *a = acc;
    tdm_result_set_value(out, (a->sum ? *a->sum : 0) * 1000 + (double)a->n);
}

static void pacc_destroy(void *ud, void *acc)
{
    (void)ud;
    pacc *a = acc;
    free(a->sum);
    a->sum = NULL;
}

static tdm_err pacc_save(void *ud, const void *acc, tdm__enc *e)
{
    (void)ud;
    const pacc *a = acc;
    tdm__enc_u8(e, a->sum ? 1 : 0);
    if (a->sum) {
        uint64_t b;
        memcpy(&b, a->sum, 8);
        tdm__enc_u64(e, b);
    }
    tdm__enc_svar(e, a->n);
    return TDM_OK;
}

static tdm_err pacc_load(void *ud, void *acc, tdm__dec *d)
{
    (void)ud;
    pacc *a = acc;
    uint8_t has;
    if (tdm__dec_u8(d, &has) != TDM_OK)
        return TDM_ERR_PARSE;
    if (has > 1)
        return tdm__dec_fail(d, "bad flag");
    if (has) {
        uint64_t b;
        if (tdm__dec_u64(d, &b) != TDM_OK)
            return TDM_ERR_PARSE;
        a->sum = malloc(sizeof *a->sum);
        if (!a->sum)
            return TDM_ERR_NOMEM;
        memcpy(a->sum, &b, 8);
    }
    return tdm__dec_svar(d, &a->n);
}

/* A plain-bytes custom aggregate (max and count, no pointers). */
typedef struct bacc {
    double max;
    int64_t n;
} bacc;

static void bacc_add(void *ud, void *acc, const tdm_record *rec)
{
    (void)ud;
    bacc *a = acc;
    if (!a->n || rec->value > a->max)
        a->max = rec->value;
    a->n++;
}

static void bacc_merge(void *ud, void *into, const void *from)
{
    (void)ud;
    bacc *a = into;
    const bacc *b = from;
    if (b->n && (!a->n || b->max > a->max))
        a->max = b->max;
    a->n += b->n;
}

static void bacc_result(void *ud, const void *acc, tdm_result_out *out)
{
    (void)ud;
    const bacc *a = acc;
    tdm_result_set_value(out, a->max * 1000 + (double)a->n);
}

/* A window function: the records' values and payloads in order. */
static tdm_err wfn(void *ud, const tdm_window_ctx *ctx, tdm_result_out *out)
{
    (void)ud;
    char buf[1024];
    size_t n = 0;
    for (size_t i = 0; i < tdm_window_ctx_count(ctx) && n < 900; i++) {
        const tdm_record *r = tdm_window_ctx_record(ctx, i);
        size_t pl;
        const void *p = tdm_record_payload(r, &pl);
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%lld:%g:%.*s;",
                              (long long)tdm_record_ts(r), tdm_record_value(r),
                              (int)pl, p ? (const char *)p : "");
    }
    return tdm_result_set_bytes(out, buf, n);
}

/* A custom trigger with state: fires every second element, at the
 * window's end (purging) and 5 ms of processing time after each odd
 * element; counts merge. */
typedef struct ctrg {
    int64_t n;
    tdm_time_ms proc_at;
} ctrg;

static tdm_trigger_result ct_element(void *ud, tdm_trigger_ctx *ctx,
                                     const tdm_record *rec)
{
    (void)ud;
    (void)rec;
    ctrg *st = tdm_trigger_ctx_state(ctx);
    st->n++;
    ASSERT_OK(tdm_trigger_ctx_register_event_timer(
        ctx, tdm_trigger_ctx_max_timestamp(ctx)));
    if (st->n % 2)
        return TDM_TRIGGER_FIRE;
    if (st->proc_at)
        tdm_trigger_ctx_delete_proc_timer(ctx, st->proc_at);
    st->proc_at = tdm_trigger_ctx_proctime(ctx) + 5;
    ASSERT_OK(tdm_trigger_ctx_register_proc_timer(ctx, st->proc_at));
    return TDM_TRIGGER_CONTINUE;
}

static tdm_trigger_result ct_event(void *ud, tdm_trigger_ctx *ctx,
                                   tdm_time_ms t)
{
    (void)ud;
    return t == tdm_trigger_ctx_max_timestamp(ctx) ? TDM_TRIGGER_FIRE_AND_PURGE
                                                   : TDM_TRIGGER_CONTINUE;
}

static tdm_trigger_result ct_proc(void *ud, tdm_trigger_ctx *ctx, tdm_time_ms t)
{
    (void)ud;
    ctrg *st = tdm_trigger_ctx_state(ctx);
    if (t != st->proc_at)
        return TDM_TRIGGER_CONTINUE;
    st->proc_at = 0;
    return TDM_TRIGGER_FIRE;
}

static void ct_merge(void *ud, tdm_trigger_ctx *ctx, const void *const *merged,
                     size_t n)
{
    (void)ud;
    ctrg *st = tdm_trigger_ctx_state(ctx);
    for (size_t i = 0; i < n; i++)
        st->n += ((const ctrg *)merged[i])->n;
    ASSERT_OK(tdm_trigger_ctx_register_event_timer(
        ctx, tdm_trigger_ctx_max_timestamp(ctx)));
}

static void ct_clear(void *ud, tdm_trigger_ctx *ctx)
{
    (void)ud;
    ctrg *st = tdm_trigger_ctx_state(ctx);
    tdm_trigger_ctx_delete_event_timer(ctx, tdm_trigger_ctx_max_timestamp(ctx));
    if (st->proc_at)
        tdm_trigger_ctx_delete_proc_timer(ctx, st->proc_at);
}

typedef struct config {
    const char *name;
    char asg;  /* T tumbling, S sliding, U cumulate, E session, G global */
    bool proc; /* processing-time windows */
    char trg;  /* e event time, p proc, c count, C continuous,
                * P purging count, n default */
    int agg;   /* tdm_agg_kind, or -1 custom bytes, -2 custom
                * pointers, -3 window function */
    tdm_time_ms lateness;
    bool late_output;
    bool general; /* force the general path */
} config;

static const config configs[] = {
    {"tumbling count lean", 'T', false, 'n', TDM_AGG_COUNT, 0, false, false},
    {"tumbling avg lean lateness", 'T', false, 'n', TDM_AGG_AVG, 6, true,
     false},
    {"sliding sum lean lateness", 'S', false, 'n', TDM_AGG_SUM, 4, true, false},
    /* The lean path's sliced mode (winop_slice.c): its snapshot holds
     * per-window counts, and the restored operator keeps per-window
     * cells. */
    {"sliding count sliced", 'S', false, 'n', TDM_AGG_COUNT, 0, true, false},
    {"sliding count lean lateness", 'S', false, 'n', TDM_AGG_COUNT, 3, false,
     false},
    {"tumbling count general lateness", 'T', false, 'n', TDM_AGG_COUNT, 5, true,
     true},
    {"sliding collect", 'S', false, 'n', TDM_AGG_COLLECT, 3, false, false},
    {"session count lateness", 'E', false, 'n', TDM_AGG_COUNT, 4, true, false},
    /* The session mode (winop_session.c): its snapshot holds the general
     * path's slots and timers, and the restored operator runs there. */
    {"session count mode", 'E', false, 'n', TDM_AGG_COUNT, 0, true, false},
    {"session avg mode", 'E', false, 'e', TDM_AGG_AVG, 0, false, false},
    {"session custom pointers", 'E', false, 'n', -2, 3, true, false},
    {"session custom bytes", 'E', false, 'n', -1, 0, false, false},
    {"session window fn", 'E', false, 'n', -3, 5, true, false},
    {"session count trigger", 'E', false, 'c', TDM_AGG_SUM, 2, true, false},
    {"tumbling count trigger collect", 'T', false, 'c', TDM_AGG_COLLECT, 4,
     true, false},
    {"tumbling purging count sum", 'T', false, 'P', TDM_AGG_SUM, 2, false,
     false},
    {"tumbling continuous max", 'T', false, 'C', TDM_AGG_MAX, 5, true, false},
    {"session continuous min", 'E', false, 'C', TDM_AGG_MIN, 0, true, false},
    {"global purging count", 'G', false, 'P', TDM_AGG_COUNT, 0, false, false},
    {"global count window fn", 'G', false, 'c', -3, 0, false, false},
    {"tumbling proc-time sum", 'T', true, 'n', TDM_AGG_SUM, 0, false, false},
    {"session proc-time window fn", 'E', true, 'n', -3, 0, false, false},
    {"tumbling event-time, proc trigger", 'T', false, 'p', TDM_AGG_AVG, 3, true,
     false},
    {"sliding window fn lateness", 'S', false, 'n', -3, 4, true, false},
    {"tumbling custom trigger", 'T', false, 'X', TDM_AGG_SUM, 3, true, false},
    {"session custom trigger window fn", 'E', false, 'X', -3, 2, true, false},
    /* Cumulate windows (the general path, W-CU1). */
    {"cumulate count", 'U', false, 'n', TDM_AGG_COUNT, 0, false, false},
    {"cumulate sum lateness", 'U', false, 'n', TDM_AGG_SUM, 4, true, false},
    {"cumulate window fn lateness", 'U', false, 'n', -3, 3, true, false},
};

#define N_CONFIGS (sizeof configs / sizeof configs[0])

static tdm_winop *make_op(const config *c, tdm_clock *clk, trace *out)
{
    char eb[256];
    tdm_assigner *asg = NULL;
    tdm_trigger *trg = NULL, *inner = NULL;
    tdm_aggregate *agg = NULL;
    switch (c->asg) {
    case 'T':
        ASSERT_OK(tdm_assigner_new_tumbling(10, 0, &asg, eb, sizeof eb));
        break;
    case 'S':
        ASSERT_OK(tdm_assigner_new_sliding(12, 4, 0, &asg, eb, sizeof eb));
        break;
    case 'U':
        ASSERT_OK(tdm_assigner_new_cumulate(12, 4, 0, &asg, eb, sizeof eb));
        break;
    case 'E':
        ASSERT_OK(tdm_assigner_new_session(5, &asg, eb, sizeof eb));
        break;
    default:
        ASSERT_OK(tdm_assigner_new_global(&asg));
        break;
    }
    if (c->proc)
        ASSERT_OK(tdm_assigner_set_processing_time(asg));
    switch (c->trg) {
    case 'e':
        ASSERT_OK(tdm_trigger_new_event_time(&trg));
        break;
    case 'p':
        ASSERT_OK(tdm_trigger_new_processing_time(&trg));
        break;
    case 'c':
        ASSERT_OK(tdm_trigger_new_count(3, &trg, eb, sizeof eb));
        break;
    case 'C':
        ASSERT_OK(
            tdm_trigger_new_continuous_event_time(3, &trg, eb, sizeof eb));
        break;
    case 'P':
        ASSERT_OK(tdm_trigger_new_count(2, &inner, eb, sizeof eb));
        ASSERT_OK(tdm_trigger_new_purging(inner, &trg));
        break;
    case 'X': {
        tdm_trigger_methods m = {1,       sizeof(ctrg), ct_element, ct_event,
                                 ct_proc, ct_merge,     ct_clear,   NULL};
        ASSERT_OK(tdm_trigger_new_custom(&m, NULL, &trg, eb, sizeof eb));
        break;
    }
    default:
        break;
    }
    if (c->agg >= 0) {
        ASSERT_OK(tdm_aggregate_new((tdm_agg_kind)c->agg, &agg));
    } else if (c->agg == -1) {
        tdm_aggregate_methods m = {1,          sizeof(bacc), NULL, bacc_add,
                                   bacc_merge, bacc_result,  NULL, NULL};
        ASSERT_OK(tdm_aggregate_new_custom(&m, NULL, &agg, eb, sizeof eb));
    } else if (c->agg == -2) {
        tdm_aggregate_methods m = {
            1,          sizeof(pacc), NULL,         pacc_add,
            pacc_merge, pacc_result,  pacc_destroy, NULL};
        ASSERT_OK(tdm_aggregate_new_custom(&m, NULL, &agg, eb, sizeof eb));
        ASSERT_OK(tdm__aggregate_set_codec(agg, pacc_save, pacc_load));
    } else {
        ASSERT_OK(tdm_aggregate_new_window_fn(wfn, NULL, NULL, &agg));
    }
    tdm_winop *op = NULL;
    ASSERT_OK(tdm_winop_new(asg, trg, agg, 2, clk, on_event, out, &op, eb,
                            sizeof eb));
    if (c->lateness)
        ASSERT_OK(
            tdm_winop_set_allowed_lateness(op, c->lateness, eb, sizeof eb));
    if (c->late_output)
        ASSERT_OK(tdm_winop_set_late_output(op, 1));
    if (c->general)
        ASSERT_OK(tdm__winop_disable_lean(op));
    return op;
}

/* Runs steps [from, to) into @p op; a key filter (group range) drops
 * other keys' records. */
static int key_group(void *ud, const char *key, size_t len)
{
    (void)ud;
    uint64_t h = tdm__hash_bytes(key, len);
    return (int)(h % N_GROUPS);
}

static void run_steps(tdm_winop *op, tdm_clock *clk, const step *s, size_t from,
                      size_t to, int glo, int ghi)
{
    tdm_record rec;
    for (size_t i = from; i < to; i++) {
        const step *p = &s[i];
        switch (p->kind) {
        case S_REC: {
            int g = key_group(NULL, p->key, strlen(p->key));
            if (g < glo || g > ghi)
                break;
            memset(&rec, 0, sizeof rec);
            rec.key = p->key;
            rec.key_len = strlen(p->key);
            rec.ts = p->t;
            rec.value = p->v;
            rec.payload = p->payload;
            rec.payload_len = strlen(p->payload);
            ASSERT_OK(tdm_winop_push(op, 0, &rec));
            break;
        }
        case S_WM:
            ASSERT_OK(tdm_winop_watermark(op, p->ch, p->t));
            break;
        case S_IDLE:
            ASSERT_OK(tdm_winop_status(op, p->ch, p->idle));
            break;
        case S_LATE:
            ASSERT_OK(tdm_winop_set_allowed_lateness(op, p->t, NULL, 0));
            break;
        default:
            ASSERT_OK(tdm_clock_set(clk, p->t));
            ASSERT_OK(tdm_winop_advance(op));
            break;
        }
    }
}

static void snapshot(const tdm_winop *op, int glo, int ghi, uint8_t **blob,
                     size_t *len)
{
    tdm__enc e;
    tdm__enc_init(&e);
    ASSERT_OK(tdm__winop_snapshot(op, &e, key_group, NULL, glo, ghi));
    ASSERT_OK(tdm__enc_finish(&e, blob, len));
}

static tdm_err restore(tdm_winop *op, const uint8_t *blob, size_t len, int glo,
                       int ghi)
{
    tdm__dec d;
    tdm__dec_init(&d, blob, len);
    tdm_err err = tdm__winop_restore(op, &d, glo, ghi);
    if (err == TDM_OK)
        err = tdm__dec_done(&d);
    return err;
}

static void expect_same(const trace *want, size_t from, const trace *got,
                        size_t got_from, const char *what, size_t cut)
{
    if (want->n - from != got->n - got_from)
        fprintf(stderr, "%s cut %zu: %zu events, want %zu\n", what, cut,
                got->n - got_from, want->n - from);
    ASSERT_EQ(want->n - from, got->n - got_from);
    for (size_t i = 0; i < want->n - from; i++) {
        if (strcmp(want->line[from + i], got->line[got_from + i]) != 0)
            fprintf(stderr, "%s cut %zu event %zu:\n got  %s\n want %s\n", what,
                    cut, i, got->line[got_from + i], want->line[from + i]);
        ASSERT_STR_EQ(want->line[from + i], got->line[got_from + i]);
    }
}

/* State left before the end of the golden run (cleanup must match). */
static int64_t g_windows, g_keys, g_dropped;

/* The golden trace of a script. */
static void golden(const config *c, const step *s, size_t n, trace *t)
{
    tdm_clock *clk = NULL;
    ASSERT_OK(tdm_clock_new_manual(1000, &clk));
    tdm_winop *op = make_op(c, clk, t);
    run_steps(op, clk, s, 0, n, 0, N_GROUPS - 1);
    g_windows = tdm_winop_live_windows(op);
    g_keys = tdm__winop_keys(op);
    g_dropped = tdm_winop_late_dropped(op);
    ASSERT_OK(tdm_winop_end(op));
    tdm_winop_destroy(op);
    tdm_clock_destroy(clk);
}

/* The clock reading after steps [0, k). */
static tdm_time_ms clock_at(const step *s, size_t k)
{
    tdm_time_ms t = 1000;
    for (size_t i = 0; i < k; i++)
        if (s[i].kind == S_CLOCK)
            t = s[i].t;
    return t;
}

/* Cut at every step: P + S == T. */
/* With SNAP_STATS set, prints how many results, late records and pairs
 * a golden trace holds (to see that the scripts exercise something). */
static void stats(const char *name, const trace *t)
{
    if (!getenv("SNAP_STATS"))
        return;
    size_t n[8] = {0};
    for (size_t i = 0; i < t->n; i++) {
        int ty = atoi(t->line[i] + 1);
        if (ty >= 0 && ty < 8)
            n[ty]++;
    }
    fprintf(stderr, "%-36s results %zu late %zu pairs %zu wm %zu\n", name,
            n[TDM_EVENT_RESULT], n[TDM_EVENT_LATE], n[TDM_EVENT_JOIN],
            n[TDM_EVENT_WATERMARK]);
}

static void cut_everywhere(const config *c, uint64_t seed)
{
    step s[N_STEPS];
    make_script(s, N_STEPS, seed);
    trace t = {0};
    golden(c, s, N_STEPS, &t);
    stats(c->name, &t);
    for (size_t k = 0; k <= N_STEPS; k++) {
        trace got = {0};
        tdm_clock *ca = NULL, *cb = NULL;
        ASSERT_OK(tdm_clock_new_manual(1000, &ca));
        tdm_winop *a = make_op(c, ca, &got);
        run_steps(a, ca, s, 0, k, 0, N_GROUPS - 1);
        uint8_t *blob;
        size_t len;
        snapshot(a, 0, N_GROUPS - 1, &blob, &len);
        tdm_winop_destroy(a);
        ASSERT_OK(tdm_clock_new_manual(clock_at(s, k), &cb));
        tdm_winop *b = make_op(c, cb, &got);
        ASSERT_OK(restore(b, blob, len, 0, N_GROUPS - 1));
        run_steps(b, cb, s, k, N_STEPS, 0, N_GROUPS - 1);
        ASSERT_EQ(tdm_winop_live_windows(b), g_windows);
        ASSERT_EQ(tdm__winop_keys(b), g_keys);
        ASSERT_EQ(tdm_winop_late_dropped(b), g_dropped);
        ASSERT_OK(tdm_winop_end(b));
        expect_same(&t, 0, &got, 0, c->name, k);
        tdm_winop_destroy(b);
        tdm_clock_destroy(ca);
        tdm_clock_destroy(cb);
        tdm__free(blob);
        trace_free(&got);
    }
    trace_free(&t);
}

TDM_TEST(cut_at_every_step)
{
    for (size_t i = 0; i < N_CONFIGS; i++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            cut_everywhere(&configs[i], seed * 7919 + i);
}

/* Results and late records only (watermarks and statuses are forwarded
 * by every subtask), sorted. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void keyed_only(const trace *t, size_t from, trace *out)
{
    for (size_t i = from; i < t->n; i++)
        if (strncmp(t->line[i], "t1 ", 3) != 0 &&
            strncmp(t->line[i], "t2 ", 3) != 0)
            trace_add(out, t->line[i]);
}

static void sort_trace(trace *t)
{
    qsort(t->line, t->n, sizeof *t->line, cmp_str);
}

/* Splits A's state at cut k into two key-group ranges; two operators
 * each restore their range (from the whole blob, skipping the rest) and
 * see only their keys' records. */
static void split_two(const config *c, uint64_t seed)
{
    step s[N_STEPS];
    make_script(s, N_STEPS, seed);
    trace t = {0};
    golden(c, s, N_STEPS, &t);
    ASSERT_TRUE(t.n > 0);
    /* Watermark events are type TDM_EVENT_WATERMARK, statuses
     * TDM_EVENT_STATUS: find their numbers from the golden trace's
     * first characters is not possible, so filter by type values. */
    for (size_t k = 0; k <= N_STEPS; k += 7) {
        trace pa = {0}, r1 = {0}, r2 = {0};
        tdm_clock *ca = NULL, *c1 = NULL, *c2 = NULL;
        ASSERT_OK(tdm_clock_new_manual(1000, &ca));
        tdm_winop *a = make_op(c, ca, &pa);
        run_steps(a, ca, s, 0, k, 0, N_GROUPS - 1);
        uint8_t *b1, *b2;
        size_t l1, l2;
        snapshot(a, 0, 1, &b1, &l1);
        snapshot(a, 2, N_GROUPS - 1, &b2, &l2);
        tdm_winop_destroy(a);
        ASSERT_OK(tdm_clock_new_manual(clock_at(s, k), &c1));
        ASSERT_OK(tdm_clock_new_manual(clock_at(s, k), &c2));
        tdm_winop *o1 = make_op(c, c1, &r1);
        tdm_winop *o2 = make_op(c, c2, &r2);
        /* Each gets both blobs and keeps its range. */
        ASSERT_OK(restore(o1, b1, l1, 0, 1));
        ASSERT_OK(restore(o2, b2, l2, 2, N_GROUPS - 1));
        run_steps(o1, c1, s, k, N_STEPS, 0, 1);
        run_steps(o2, c2, s, k, N_STEPS, 2, N_GROUPS - 1);
        ASSERT_OK(tdm_winop_end(o1));
        ASSERT_OK(tdm_winop_end(o2));
        trace want = {0}, got = {0};
        keyed_only(&t, 0, &want);
        keyed_only(&pa, 0, &got);
        keyed_only(&r1, 0, &got);
        keyed_only(&r2, 0, &got);
        sort_trace(&want);
        sort_trace(&got);
        expect_same(&want, 0, &got, 0, c->name, k);
        trace_free(&want);
        trace_free(&got);
        tdm_winop_destroy(o1);
        tdm_winop_destroy(o2);
        tdm_clock_destroy(ca);
        tdm_clock_destroy(c1);
        tdm_clock_destroy(c2);
        tdm__free(b1);
        tdm__free(b2);
        trace_free(&pa);
        trace_free(&r1);
        trace_free(&r2);
    }
    trace_free(&t);
}

TDM_TEST(split_into_two_key_group_ranges)
{
    for (size_t i = 0; i < N_CONFIGS; i++)
        split_two(&configs[i], 31 + i);
}

/* Rescale 2 -> 1: two operators own half the key groups each (fed the
 * same watermarks); at cut k both are snapshotted and one fresh operator
 * restores both blobs.  Its results and late records, with what the two
 * emitted before, equal the uninterrupted run's as a multiset. */
static void merge_two(const config *c, uint64_t seed)
{
    step s[N_STEPS];
    make_script(s, N_STEPS, seed);
    trace t = {0};
    golden(c, s, N_STEPS, &t);
    for (size_t k = 0; k <= N_STEPS; k += 9) {
        trace p1 = {0}, p2 = {0}, r = {0};
        tdm_clock *c1 = NULL, *c2 = NULL, *cr = NULL;
        ASSERT_OK(tdm_clock_new_manual(1000, &c1));
        ASSERT_OK(tdm_clock_new_manual(1000, &c2));
        tdm_winop *o1 = make_op(c, c1, &p1);
        tdm_winop *o2 = make_op(c, c2, &p2);
        run_steps(o1, c1, s, 0, k, 0, 1);
        run_steps(o2, c2, s, 0, k, 2, N_GROUPS - 1);
        uint8_t *b1, *b2;
        size_t l1, l2;
        snapshot(o1, 0, N_GROUPS - 1, &b1, &l1);
        snapshot(o2, 0, N_GROUPS - 1, &b2, &l2);
        ASSERT_OK(tdm_clock_new_manual(clock_at(s, k), &cr));
        tdm_winop *m = make_op(c, cr, &r);
        ASSERT_OK(restore(m, b1, l1, 0, N_GROUPS - 1));
        ASSERT_OK(restore(m, b2, l2, 0, N_GROUPS - 1));
        ASSERT_EQ(tdm_winop_late_dropped(m),
                  tdm_winop_late_dropped(o1) + tdm_winop_late_dropped(o2));
        run_steps(m, cr, s, k, N_STEPS, 0, N_GROUPS - 1);
        ASSERT_OK(tdm_winop_end(m));
        trace want = {0}, got = {0};
        keyed_only(&t, 0, &want);
        keyed_only(&p1, 0, &got);
        keyed_only(&p2, 0, &got);
        keyed_only(&r, 0, &got);
        sort_trace(&want);
        sort_trace(&got);
        expect_same(&want, 0, &got, 0, c->name, k);
        trace_free(&want);
        trace_free(&got);
        tdm_winop_destroy(o1);
        tdm_winop_destroy(o2);
        tdm_winop_destroy(m);
        tdm_clock_destroy(c1);
        tdm_clock_destroy(c2);
        tdm_clock_destroy(cr);
        tdm__free(b1);
        tdm__free(b2);
        trace_free(&p1);
        trace_free(&p2);
        trace_free(&r);
    }
    trace_free(&t);
}

TDM_TEST(rescale_two_into_one)
{
    for (size_t i = 0; i < N_CONFIGS; i++)
        merge_two(&configs[i], 77 + i);
}

/* ---- Live changes of the allowed lateness (winop_lateness.c) ---- */

/* The event-time configurations whose lateness can change while they
 * run: neither merging nor sliced (L2). */
static bool live_ok(const config *c)
{
    return !c->proc && c->asg != 'E' && c->asg != 'G' &&
           !(c->asg == 'S' && c->agg == TDM_AGG_COUNT && c->lateness == 0);
}

/* L6: a restore at every step (and into two key-group ranges, and two
 * into one) replays scripts that raise and lower the lateness. */
TDM_TEST(live_lateness_cut_split_and_merge)
{
    live_steps = 1;
    int n = 0;
    for (size_t i = 0; i < N_CONFIGS; i++) {
        if (!live_ok(&configs[i]))
            continue;
        n++;
        cut_everywhere(&configs[i], 4001 + i);
        split_two(&configs[i], 5003 + i);
        merge_two(&configs[i], 6007 + i);
    }
    live_steps = 0;
    ASSERT_TRUE(n >= 10);
}

/* The lean path (cells by window interval) and the general one (a slot
 * and timers per window) give the same trace under live changes. */
TDM_TEST(live_lateness_lean_equals_general)
{
    static const config pairs[][2] = {
        {{"tumbling count lean", 'T', false, 'n', TDM_AGG_COUNT, 0, true, 0},
         {"tumbling count general", 'T', false, 'n', TDM_AGG_COUNT, 0, true,
          1}},
        {{"sliding sum lean", 'S', false, 'n', TDM_AGG_SUM, 4, true, 0},
         {"sliding sum general", 'S', false, 'n', TDM_AGG_SUM, 4, true, 1}},
        {{"tumbling avg lean", 'T', false, 'n', TDM_AGG_AVG, 6, false, 0},
         {"tumbling avg general", 'T', false, 'n', TDM_AGG_AVG, 6, false, 1}},
    };
    live_steps = 1;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        for (uint64_t seed = 1; seed <= 4; seed++) {
            step s[N_STEPS];
            make_script(s, N_STEPS, seed * 131 + i);
            trace a = {0}, b = {0};
            golden(&pairs[i][0], s, N_STEPS, &a);
            int64_t wa = g_windows, da = g_dropped;
            golden(&pairs[i][1], s, N_STEPS, &b);
            expect_same(&a, 0, &b, 0, pairs[i][1].name, (size_t)seed);
            ASSERT_EQ(g_windows, wa);
            ASSERT_EQ(g_dropped, da);
            trace_free(&a);
            trace_free(&b);
        }
    live_steps = 0;
}

/* ---- Refusals ---- */

TDM_TEST(corrupt_blobs_refused_without_crash)
{
    static const size_t picks[] = {0, 1, 3, 6, 8, 9, 13, 15};
    for (size_t pi = 0; pi < sizeof picks / sizeof picks[0]; pi++) {
        const config *c = &configs[picks[pi]];
        step s[N_STEPS];
        make_script(s, N_STEPS, 5 + pi);
        trace t = {0};
        tdm_clock *clk = NULL;
        ASSERT_OK(tdm_clock_new_manual(1000, &clk));
        tdm_winop *a = make_op(c, clk, &t);
        run_steps(a, clk, s, 0, N_STEPS * 2 / 3, 0, N_GROUPS - 1);
        uint8_t *blob;
        size_t len;
        snapshot(a, 0, N_GROUPS - 1, &blob, &len);
        tdm_winop_destroy(a);
        /* Every truncation. */
        for (size_t cut = 0; cut < len; cut++) {
            trace o = {0};
            tdm_winop *b = make_op(c, clk, &o);
            tdm_err err = restore(b, blob, cut, 0, N_GROUPS - 1);
            if (err != TDM_ERR_PARSE)
                fprintf(stderr, "%s: truncation at %zu of %zu: %s\n", c->name,
                        cut, len, tdm_err_name(err));
            ASSERT_EQ(err, TDM_ERR_PARSE);
            ASSERT_TRUE(strstr(tdm_winop_errmsg(b), "offset") != NULL);
            tdm_winop_destroy(b);
            trace_free(&o);
        }
        /* Random bit flips: refused or taken, never a crash; a taken
         * blob leaves a usable operator. */
        uint8_t *bad = malloc(len);
        ASSERT_TRUE(bad != NULL);
        rng_state = 99 + pi;
        for (int i = 0; i < 400; i++) {
            memcpy(bad, blob, len);
            int flips = 1 + (int)(rnd() % 3);
            for (int f = 0; f < flips; f++)
                bad[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
            trace o = {0};
            tdm_winop *b = make_op(c, clk, &o);
            tdm_err err = restore(b, bad, len, 0, N_GROUPS - 1);
            ASSERT_TRUE(err == TDM_OK || err == TDM_ERR_PARSE);
            tdm_winop_destroy(b);
            trace_free(&o);
        }
        free(bad);
        /* Another configuration is refused. */
        const config *other = &configs[(picks[pi] + 1) % N_CONFIGS];
        trace o = {0};
        tdm_winop *b = make_op(other, clk, &o);
        ASSERT_ERR(restore(b, blob, len, 0, N_GROUPS - 1), TDM_ERR_PARSE);
        tdm_winop_destroy(b);
        trace_free(&o);
        tdm__free(blob);
        tdm_clock_destroy(clk);
        trace_free(&t);
    }
}

TDM_TEST(custom_pointer_aggregate_without_codec_refused)
{
    char eb[128];
    tdm_assigner *asg = NULL;
    tdm_aggregate *agg = NULL;
    ASSERT_OK(tdm_assigner_new_tumbling(10, 0, &asg, eb, sizeof eb));
    tdm_aggregate_methods m = {1,          sizeof(pacc), NULL,         pacc_add,
                               pacc_merge, pacc_result,  pacc_destroy, NULL};
    ASSERT_OK(tdm_aggregate_new_custom(&m, NULL, &agg, eb, sizeof eb));
    trace t = {0};
    tdm_winop *op = NULL;
    ASSERT_OK(tdm_winop_new(asg, NULL, agg, 1, NULL, on_event, &t, &op, eb,
                            sizeof eb));
    tdm__enc e;
    tdm__enc_init(&e);
    ASSERT_ERR(tdm__winop_snapshot(op, &e, NULL, NULL, 0, 0),
               TDM_ERR_UNSUPPORTED);
    tdm__enc_free(&e);
    tdm_winop_destroy(op);
    trace_free(&t);
}

TDM_TEST(restore_after_input_refused)
{
    trace t = {0};
    tdm_clock *clk = NULL;
    ASSERT_OK(tdm_clock_new_manual(1000, &clk));
    tdm_winop *a = make_op(&configs[0], clk, &t);
    uint8_t *blob;
    size_t len;
    snapshot(a, 0, 0, &blob, &len);
    tdm_winop *b = make_op(&configs[0], clk, &t);
    ASSERT_OK(tdm_winop_watermark(b, 0, 5));
    ASSERT_ERR(restore(b, blob, len, 0, 0), TDM_ERR_STATE);
    tdm_winop_destroy(a);
    tdm_winop_destroy(b);
    tdm_clock_destroy(clk);
    tdm__free(blob);
    trace_free(&t);
}

/* ====================================================================== */
/* Joins                                                                   */
/* ====================================================================== */

typedef struct jconfig {
    const char *name;
    char kind; /* I interval, T tumbling window, S sliding window */
    tdm_time_ms lower, upper;
    int lower_incl, upper_incl;
    bool late_output;
} jconfig;

static const jconfig jconfigs[] = {
    {"interval -3..5", 'I', -3, 5, 1, 1, true},
    {"interval 0..0", 'I', 0, 0, 1, 1, false},
    {"interval (-10,-2)", 'I', -10, -2, 0, 0, true},
    {"interval 2..12", 'I', 2, 12, 1, 1, false},
    {"window tumbling", 'T', 0, 0, 0, 0, true},
    {"window sliding", 'S', 0, 0, 0, 0, false},
};

#define N_JCONFIGS (sizeof jconfigs / sizeof jconfigs[0])

static tdm_joinop *make_join(const jconfig *c, tdm_clock *clk, trace *out)
{
    char eb[256];
    tdm_joinop *op = NULL;
    if (c->kind == 'I') {
        ASSERT_OK(tdm_joinop_new_interval(c->lower, c->upper, c->lower_incl,
                                          c->upper_incl, 2, clk, on_event, out,
                                          &op, eb, sizeof eb));
    } else {
        tdm_assigner *asg = NULL;
        if (c->kind == 'T')
            ASSERT_OK(tdm_assigner_new_tumbling(10, 0, &asg, eb, sizeof eb));
        else
            ASSERT_OK(tdm_assigner_new_sliding(12, 4, 0, &asg, eb, sizeof eb));
        ASSERT_OK(tdm_joinop_new_window(asg, 2, clk, on_event, out, &op, eb,
                                        sizeof eb));
    }
    if (c->late_output)
        ASSERT_OK(tdm_joinop_set_late_output(op, 1));
    return op;
}

/* Set while feeding an operator restored from a damaged blob: its calls
 * may be refused (e.g. a flipped end flag), they must only not crash. */
static bool g_tolerant;

#define JCALL(x)                                                               \
    do {                                                                       \
        tdm_err jc_err_ = (x);                                                 \
        if (!g_tolerant)                                                       \
            ASSERT_OK(jc_err_);                                                \
    } while (0)

/* Watermarks and statuses go to the step's side and channel. */
static void run_join(tdm_joinop *op, const step *s, size_t from, size_t to,
                     int glo, int ghi)
{
    tdm_record rec;
    for (size_t i = from; i < to; i++) {
        const step *p = &s[i];
        switch (p->kind) {
        case S_REC: {
            int g = key_group(NULL, p->key, strlen(p->key));
            if (g < glo || g > ghi)
                break;
            memset(&rec, 0, sizeof rec);
            rec.key = p->key;
            rec.key_len = strlen(p->key);
            rec.ts = p->t;
            rec.value = p->v;
            rec.payload = p->payload;
            rec.payload_len = strlen(p->payload);
            JCALL(tdm_joinop_push(op, p->side, 0, &rec));
            break;
        }
        case S_WM:
            JCALL(tdm_joinop_watermark(op, p->side, p->ch, p->t));
            break;
        case S_IDLE:
            JCALL(tdm_joinop_status(op, p->side, p->ch, p->idle));
            break;
        default:
            break; /* joins use event time only */
        }
    }
}

static void jsnapshot(const tdm_joinop *op, int glo, int ghi, uint8_t **blob,
                      size_t *len)
{
    tdm__enc e;
    tdm__enc_init(&e);
    ASSERT_OK(tdm__joinop_snapshot(op, &e, key_group, NULL, glo, ghi));
    ASSERT_OK(tdm__enc_finish(&e, blob, len));
}

static tdm_err jrestore(tdm_joinop *op, const uint8_t *blob, size_t len,
                        int glo, int ghi)
{
    tdm__dec d;
    tdm__dec_init(&d, blob, len);
    tdm_err err = tdm__joinop_restore(op, &d, glo, ghi);
    if (err == TDM_OK)
        err = tdm__dec_done(&d);
    return err;
}

static int64_t g_buffered, g_jkeys;

static void jgolden(const jconfig *c, const step *s, trace *t)
{
    tdm_joinop *op = make_join(c, NULL, t);
    run_join(op, s, 0, N_STEPS, 0, N_GROUPS - 1);
    g_buffered = tdm_joinop_buffered(op);
    g_jkeys = tdm__joinop_state_keys(op);
    g_dropped = tdm_joinop_late_dropped(op);
    ASSERT_OK(tdm_joinop_end(op));
    tdm_joinop_destroy(op);
}

static void jcut_everywhere(const jconfig *c, uint64_t seed)
{
    step s[N_STEPS];
    make_script(s, N_STEPS, seed);
    trace t = {0};
    jgolden(c, s, &t);
    stats(c->name, &t);
    for (size_t k = 0; k <= N_STEPS; k++) {
        trace got = {0};
        tdm_joinop *a = make_join(c, NULL, &got);
        run_join(a, s, 0, k, 0, N_GROUPS - 1);
        uint8_t *blob;
        size_t len;
        jsnapshot(a, 0, N_GROUPS - 1, &blob, &len);
        tdm_joinop_destroy(a);
        tdm_joinop *b = make_join(c, NULL, &got);
        ASSERT_OK(jrestore(b, blob, len, 0, N_GROUPS - 1));
        run_join(b, s, k, N_STEPS, 0, N_GROUPS - 1);
        ASSERT_EQ(tdm_joinop_buffered(b), g_buffered);
        ASSERT_EQ(tdm__joinop_state_keys(b), g_jkeys);
        ASSERT_EQ(tdm_joinop_late_dropped(b), g_dropped);
        ASSERT_OK(tdm_joinop_end(b));
        expect_same(&t, 0, &got, 0, c->name, k);
        tdm_joinop_destroy(b);
        tdm__free(blob);
        trace_free(&got);
    }
    trace_free(&t);
}

TDM_TEST(join_cut_at_every_step)
{
    for (size_t i = 0; i < N_JCONFIGS; i++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            jcut_everywhere(&jconfigs[i], seed * 104729 + i);
}

/* Two key-group ranges restored into two joins (each fed its keys), and
 * two joins owning half the keys each restored into one: pairs and late
 * records as a multiset equal the uninterrupted run's. */
static void jsplit_and_merge(const jconfig *c, uint64_t seed)
{
    step s[N_STEPS];
    make_script(s, N_STEPS, seed);
    trace t = {0}, want = {0};
    jgolden(c, s, &t);
    keyed_only(&t, 0, &want);
    sort_trace(&want);
    for (size_t k = 0; k <= N_STEPS; k += 5) {
        /* 1 -> 2 */
        trace pa = {0}, r1 = {0}, r2 = {0}, got = {0};
        tdm_joinop *a = make_join(c, NULL, &pa);
        run_join(a, s, 0, k, 0, N_GROUPS - 1);
        uint8_t *b1, *b2;
        size_t l1, l2;
        jsnapshot(a, 0, N_GROUPS - 1, &b1, &l1);
        tdm_joinop_destroy(a);
        tdm_joinop *o1 = make_join(c, NULL, &r1);
        tdm_joinop *o2 = make_join(c, NULL, &r2);
        ASSERT_OK(jrestore(o1, b1, l1, 0, 1));
        ASSERT_OK(jrestore(o2, b1, l1, 2, N_GROUPS - 1));
        run_join(o1, s, k, N_STEPS, 0, 1);
        run_join(o2, s, k, N_STEPS, 2, N_GROUPS - 1);
        ASSERT_OK(tdm_joinop_end(o1));
        ASSERT_OK(tdm_joinop_end(o2));
        keyed_only(&pa, 0, &got);
        keyed_only(&r1, 0, &got);
        keyed_only(&r2, 0, &got);
        sort_trace(&got);
        expect_same(&want, 0, &got, 0, c->name, k);
        tdm_joinop_destroy(o1);
        tdm_joinop_destroy(o2);
        tdm__free(b1);
        trace_free(&pa);
        trace_free(&r1);
        trace_free(&r2);
        trace_free(&got);
        /* 2 -> 1 */
        trace p1 = {0}, p2 = {0}, r = {0};
        o1 = make_join(c, NULL, &p1);
        o2 = make_join(c, NULL, &p2);
        run_join(o1, s, 0, k, 0, 1);
        run_join(o2, s, 0, k, 2, N_GROUPS - 1);
        jsnapshot(o1, 0, N_GROUPS - 1, &b1, &l1);
        jsnapshot(o2, 0, N_GROUPS - 1, &b2, &l2);
        tdm_joinop *m = make_join(c, NULL, &r);
        ASSERT_OK(jrestore(m, b1, l1, 0, N_GROUPS - 1));
        ASSERT_OK(jrestore(m, b2, l2, 0, N_GROUPS - 1));
        run_join(m, s, k, N_STEPS, 0, N_GROUPS - 1);
        ASSERT_OK(tdm_joinop_end(m));
        keyed_only(&p1, 0, &got);
        keyed_only(&p2, 0, &got);
        keyed_only(&r, 0, &got);
        sort_trace(&got);
        expect_same(&want, 0, &got, 0, c->name, k);
        tdm_joinop_destroy(o1);
        tdm_joinop_destroy(o2);
        tdm_joinop_destroy(m);
        tdm__free(b1);
        tdm__free(b2);
        trace_free(&p1);
        trace_free(&p2);
        trace_free(&r);
        trace_free(&got);
    }
    trace_free(&t);
    trace_free(&want);
}

TDM_TEST(join_key_groups_split_and_merge)
{
    for (size_t i = 0; i < N_JCONFIGS; i++)
        jsplit_and_merge(&jconfigs[i], 501 + i);
}

TDM_TEST(join_corrupt_blobs_refused_without_crash)
{
    for (size_t ci = 0; ci < N_JCONFIGS; ci++) {
        const jconfig *c = &jconfigs[ci];
        step s[N_STEPS];
        make_script(s, N_STEPS, 900 + ci);
        trace t = {0};
        tdm_joinop *a = make_join(c, NULL, &t);
        run_join(a, s, 0, N_STEPS / 2, 0, N_GROUPS - 1);
        uint8_t *blob;
        size_t len;
        jsnapshot(a, 0, N_GROUPS - 1, &blob, &len);
        tdm_joinop_destroy(a);
        ASSERT_TRUE(len > 40);
        for (size_t cut = 0; cut < len; cut++) {
            trace o = {0};
            tdm_joinop *b = make_join(c, NULL, &o);
            tdm_err err = jrestore(b, blob, cut, 0, N_GROUPS - 1);
            if (err != TDM_ERR_PARSE)
                fprintf(stderr, "%s: truncation at %zu of %zu: %s\n", c->name,
                        cut, len, tdm_err_name(err));
            ASSERT_EQ(err, TDM_ERR_PARSE);
            ASSERT_TRUE(strstr(tdm_joinop_errmsg(b), "offset") != NULL);
            tdm_joinop_destroy(b);
            trace_free(&o);
        }
        uint8_t *bad = malloc(len);
        ASSERT_TRUE(bad != NULL);
        rng_state = 1234 + ci;
        for (int i = 0; i < 400; i++) {
            memcpy(bad, blob, len);
            int flips = 1 + (int)(rnd() % 3);
            for (int f = 0; f < flips; f++)
                bad[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
            trace o = {0};
            tdm_joinop *b = make_join(c, NULL, &o);
            tdm_err err = jrestore(b, bad, len, 0, N_GROUPS - 1);
            ASSERT_TRUE(err == TDM_OK || err == TDM_ERR_PARSE);
            if (err == TDM_OK) {
                /* A taken blob leaves a working operator. */
                g_tolerant = true;
                run_join(b, s, N_STEPS / 2, N_STEPS, 0, N_GROUPS - 1);
                (void)tdm_joinop_end(b);
                g_tolerant = false;
            }
            tdm_joinop_destroy(b);
            trace_free(&o);
        }
        free(bad);
        /* Another configuration is refused. */
        trace o = {0};
        tdm_joinop *b = make_join(&jconfigs[(ci + 1) % N_JCONFIGS], NULL, &o);
        ASSERT_ERR(jrestore(b, blob, len, 0, N_GROUPS - 1), TDM_ERR_PARSE);
        tdm_joinop_destroy(b);
        trace_free(&o);
        tdm__free(blob);
        trace_free(&t);
    }
}

/* A lean-path cell whose firing count passed 2^32 (kept in the spill
 * table with a high half) is restored with its whole count: the next
 * late firing of both operators carries the same pane index. */
TDM_TEST(lean_firing_count_beyond_32_bits)
{
    config c = {"tumbling count lean", 'T', false, 'n',
                TDM_AGG_COUNT,         100, false, false};
    trace ta = {0}, tb = {0};
    tdm_winop *a = make_op(&c, NULL, &ta);
    ASSERT_TRUE(a->lean);
    tdm_record rec = {"k", 1, 1, 1.0, NULL, 0};
    ASSERT_OK(tdm_winop_push(a, 0, &rec));
    ASSERT_OK(tdm_winop_watermark(a, 0, 9));
    ASSERT_OK(tdm_winop_watermark(a, 1, 9));
    tdm__wstore *ws = a->ws;
    uint32_t kid = tdm__ws_find(ws, "k", 1, tdm__ws_hash("k", 1));
    uint32_t sid = tdm__ws_span_find(ws, 0, 10);
    ASSERT_TRUE(kid != TDM__WS_NONE && sid != TDM__WS_NONE);
    tdm__ws_cell *cell = tdm__ws_cell_of(ws, tdm__ws_key_at(ws, kid), kid, sid);
    ASSERT_TRUE(cell != NULL);
    ASSERT_OK(tdm__ws_cell_widen(ws, kid, &cell));
    cell->fires = 7;
    ((tdm__ws_spill *)(void *)((char *)cell - offsetof(tdm__ws_spill, c)))
        ->fires_hi = 1;
    ASSERT_EQ(tdm__ws_fires(cell), ((uint64_t)1 << 32) + 7);
    uint8_t *blob;
    size_t len;
    snapshot(a, 0, N_GROUPS - 1, &blob, &len);
    tdm_winop *b = make_op(&c, NULL, &tb);
    ASSERT_OK(restore(b, blob, len, 0, N_GROUPS - 1));
    size_t na = ta.n;
    rec.ts = 2;
    ASSERT_OK(tdm_winop_push(a, 0, &rec));
    ASSERT_OK(tdm_winop_push(b, 0, &rec));
    ASSERT_EQ(ta.n, na + 1);
    ASSERT_EQ(tb.n, 1);
    ASSERT_STR_EQ(ta.line[na], tb.line[0]);
    ASSERT_TRUE(strstr(tb.line[0], "/4294967303 ") != NULL);
    tdm_winop_destroy(a);
    tdm_winop_destroy(b);
    tdm__free(blob);
    trace_free(&ta);
    trace_free(&tb);
}
