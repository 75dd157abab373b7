/* SPDX-License-Identifier: MIT */
/* bench_window.c - single-thread throughput of the keyed window operator.
 *
 * 10,000 keys, tumbling 1 s event-time windows, 5% of records out of order
 * by up to 500 ms, a watermark every 1000 records at max_ts - 1000, one run
 * with a count aggregate and one with sum.  Records are generated in
 * memory before the clock starts.  Usage:
 *   bench_window [records] [count|sum|both] [keys]
 * (default 50,000,000 records, both runs, 10,000 keys).  Public API only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tidemark.h"

#define N_KEYS_DEFAULT 10000
#define KEY_LEN 9          /* "k" + 8 digits */
#define RECORDS_PER_MS 100 /* event-time density */
#define PCT_OUT_OF_ORDER 5
#define MAX_DISORDER_MS 500
#define WM_EVERY 1000
#define WM_BOUND_MS 1000
#define WINDOW_MS 1000

/* What the result callback accumulates, so that no work can be skipped
 * and the count run can be checked. */
typedef struct sink {
    int64_t results;
    double value_sum; /* sum of result values */
    uint64_t mix;     /* order-independent hash of windows and values */
} sink;

static void on_emit(void *opaque, const tdm_event *ev)
{
    sink *s = opaque;
    tdm_time_ms start, end;
    if (tdm_event_get_type(ev) != TDM_EVENT_RESULT)
        return;
    double v = tdm_event_value(ev);
    tdm_event_window(ev, &start, &end);
    s->results++;
    s->value_sum += v;
    s->mix += ((uint64_t)start * 0x9e3779b97f4a7c15ULL) ^ (uint64_t)v;
}

/* The input, generated before timing. */
typedef struct input {
    uint32_t *key; /* key index per record */
    int64_t *ts;   /* timestamp per record */
    size_t n;
    uint32_t n_keys;
    char (*keys)[16]; /* n_keys pre-built key strings, KEY_LEN used */
} input;

static uint64_t xorshift64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Fills @p in with @p n records over @p n_keys keys: timestamps rise by
 * one ms every RECORDS_PER_MS records, 5% are moved back by 1..500 ms;
 * keys uniform. */
static int make_input(input *in, size_t n, uint32_t n_keys)
{
    uint64_t rs = 0x2545f4914f6cdd1dULL;
    in->n = n;
    in->n_keys = n_keys;
    in->key = malloc(n * sizeof *in->key);
    in->ts = malloc(n * sizeof *in->ts);
    in->keys = malloc(n_keys * sizeof *in->keys);
    if (!in->key || !in->ts || !in->keys)
        return -1;
    for (uint32_t k = 0; k < n_keys; k++)
        snprintf(in->keys[k], sizeof in->keys[k], "k%08u", k);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = xorshift64(&rs);
        int64_t ts = (int64_t)(i / RECORDS_PER_MS);
        in->key[i] = (uint32_t)(r % n_keys);
        if ((r >> 32) % 100 < PCT_OUT_OF_ORDER)
            ts -= 1 + (int64_t)((r >> 48) % MAX_DISORDER_MS);
        in->ts[i] = ts;
    }
    return 0;
}

/* The value of record i in the sum run (small integers: exact sums). */
static double value_of(size_t i)
{
    return (double)(i % 7);
}

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this process: on a machine shared with other jobs the wall
 * clock also counts the time the benchmark was not running at all. */
static double cpu_s(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* One timed run; returns 0 when the checksum checks out. */
static int run(const input *in, tdm_agg_kind kind, const char *name)
{
    char eb[256] = "";
    tdm_clock *clk = NULL;
    tdm_assigner *asg = NULL;
    tdm_aggregate *agg = NULL;
    tdm_winop *op = NULL;
    tdm_record *rec = NULL;
    sink s = {0};
    int64_t peak_live = 0, peak_bytes = 0, max_ts = INT64_MIN;
    double expect_sum = 0;

    if (tdm_clock_new_manual(0, &clk) ||
        tdm_assigner_new_tumbling(WINDOW_MS, 0, &asg, eb, sizeof eb) ||
        tdm_aggregate_new(kind, &agg) ||
        tdm_winop_new(asg, NULL, agg, 1, clk, on_emit, &s, &op, eb,
                      sizeof eb) ||
        tdm_record_new(&rec)) {
        fprintf(stderr, "setup failed: %s\n", eb);
        return 1;
    }

    double t0 = now_s(), c0 = cpu_s();
    for (size_t i = 0; i < in->n; i++) {
        uint32_t k = in->key[i];
        int64_t ts = in->ts[i];
        double v = kind == TDM_AGG_SUM ? value_of(i) : 1.0;
        tdm_record_set(rec, in->keys[k], KEY_LEN, ts, v);
        if (tdm_winop_push(op, 0, rec) != TDM_OK) {
            fprintf(stderr, "push failed: %s\n", tdm_winop_errmsg(op));
            return 1;
        }
        if (ts > max_ts)
            max_ts = ts;
        if ((i + 1) % WM_EVERY == 0) {
            /* Peak state is just before the watermark frees windows. */
            int64_t live = tdm_winop_live_windows(op);
            if (live > peak_live) {
                peak_live = live;
                peak_bytes = tdm_winop_state_bytes(op);
            }
            tdm_winop_watermark(op, 0, max_ts - WM_BOUND_MS);
        }
    }
    tdm_winop_end(op);
    double t1 = now_s(), c1 = cpu_s();

    int64_t dropped = tdm_winop_late_dropped(op);
    double secs = t1 - t0;
    int ok;
    if (kind == TDM_AGG_COUNT) {
        ok = s.value_sum == (double)((int64_t)in->n - dropped);
    } else {
        /* Late records cannot occur here (disorder 500 < bound 1000),
         * so every value must be in some result. */
        for (size_t i = 0; i < in->n; i++)
            expect_sum += value_of(i);
        ok = dropped == 0 && s.value_sum == expect_sum;
    }
    printf("%-5s records %zu  %.2f M records/s  %.1f ns/record  "
           "(%.3f s; cpu %.1f ns/record)\n",
           name, in->n, (double)in->n / secs / 1e6, secs * 1e9 / (double)in->n,
           secs, (c1 - c0) * 1e9 / (double)in->n);
    printf("      peak live windows %" PRId64 "  state bytes %" PRId64
           "  bytes/window %.1f\n",
           peak_live, peak_bytes,
           peak_live ? (double)peak_bytes / (double)peak_live : 0.0);
    printf("      results %" PRId64 "  late dropped %" PRId64
           "  value sum %.0f  checksum %016" PRIx64 "  check %s\n",
           s.results, dropped, s.value_sum, s.mix, ok ? "OK" : "FAILED");
    tdm_winop_destroy(op);
    tdm_record_destroy(rec);
    tdm_clock_destroy(clk);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    size_t n = 50000000;
    unsigned long n_keys = N_KEYS_DEFAULT;
    const char *runs = "both";
    static input in;
    int rc = 0;

    if (argc > 1)
        n = (size_t)strtoull(argv[1], NULL, 10);
    if (argc > 2)
        runs = argv[2];
    if (argc > 3)
        n_keys = strtoul(argv[3], NULL, 10);
    if (n == 0 || n_keys == 0 || n_keys > 99999999 ||
        (strcmp(runs, "count") && strcmp(runs, "sum") &&
         strcmp(runs, "both"))) {
        fprintf(stderr, "usage: %s [records] [count|sum|both] [keys]\n",
                argv[0]);
        return 2;
    }
    if (make_input(&in, n, (uint32_t)n_keys) != 0) {
        fprintf(stderr, "out of memory generating %zu records\n", n);
        return 1;
    }
    printf("tidemark %s: %lu keys, tumbling %d ms, %d%% out of order by "
           "<= %d ms, watermark every %d records at max_ts - %d\n",
           tdm_version(), n_keys, WINDOW_MS, PCT_OUT_OF_ORDER, MAX_DISORDER_MS,
           WM_EVERY, WM_BOUND_MS);
    if (strcmp(runs, "sum") != 0)
        rc |= run(&in, TDM_AGG_COUNT, "count");
    if (strcmp(runs, "count") != 0)
        rc |= run(&in, TDM_AGG_SUM, "sum");
    free(in.key);
    free(in.ts);
    free(in.keys);
    return rc;
}
