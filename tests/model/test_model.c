/* SPDX-License-Identifier: MIT */
/* test_model.c - model-based test of the keyed window operator.
 *
 * Seeded random streams (several keys, out-of-order and late records,
 * interleaved watermarks, one or two channels) go through tdm_winop, and a
 * brute-force oracle written from the rulebook (window-semantics.md R1-R4,
 * R5 for sessions) recomputes every result, late record, counter, live
 * window count and forwarded watermark.  Only the public API is used.
 * Rerun one stream with TDM_MODEL_SEED=<seed> ./test_model <case>.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ====================================================================== */
/* Random numbers and small helpers                                        */
/* ====================================================================== */

/* splitmix64: one 64-bit state, good enough mixing for test streams. */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform integer in [lo, hi] (hi - lo small compared to 2^64). */
static int64_t rng_range(rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(rng_next(r) % span);
}

/* 1 with probability pct / 100. */
static int rng_pct(rng *r, int pct)
{
    return (int)(rng_next(r) % 100) < pct;
}

/* Saturating addition, written here rather than taken from the library so
 * that the oracle does not share code with the engine. */
static tdm_time_ms sat_add(tdm_time_ms a, tdm_time_ms b)
{
    if (b > 0 && a > TDM_TIME_MAX - b)
        return TDM_TIME_MAX;
    if (b < 0 && a < TDM_TIME_MIN - b)
        return TDM_TIME_MIN;
    return a + b;
}

/* Floor division for b > 0, by correcting C's truncation. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "test_model: out of memory\n");
        exit(2);
    }
    return q;
}

/* Keys of different lengths, including the empty key. */
static const char *const KEYS[] = {"a", "bb", "key-2", "", "k4", "kkkkk5"};
#define N_KEYS_MAX ((int)(sizeof KEYS / sizeof KEYS[0]))

static int key_index(const char *k, size_t len)
{
    for (int i = 0; i < N_KEYS_MAX; i++)
        if (strlen(KEYS[i]) == len &&
            (len == 0 || memcmp(KEYS[i], k, len) == 0))
            return i;
    return -1;
}

/* ====================================================================== */
/* Configuration and streams                                               */
/* ====================================================================== */

typedef enum win_type { W_TUMBLING, W_SLIDING, W_SESSION } win_type;

typedef struct model_cfg {
    win_type type;
    tdm_time_ms size, slide, offset; /* tumbling: slide == size */
    tdm_time_ms gap;                 /* sessions */
    tdm_time_ms lateness;
    int late_output;
    tdm_agg_kind agg;
    int n_channels;
    int explicit_trigger; /* 0: NULL trigger (the assigner's default) */
    int check_panes;      /* sessions: pane index is not checked */
} model_cfg;

typedef enum step_kind { ST_REC, ST_WM, ST_END } step_kind;

typedef struct step {
    step_kind kind;
    int key;
    int ch;
    tdm_time_ms ts; /* record timestamp or watermark */
    double value;
} step;

typedef struct stream {
    step *steps;
    int n, cap;
} stream;

static void stream_push(stream *st, step s)
{
    if (st->n == st->cap) {
        st->cap = st->cap ? 2 * st->cap : 256;
        st->steps = xrealloc(st->steps, (size_t)st->cap * sizeof *st->steps);
    }
    st->steps[st->n++] = s;
}

/* How a stream is drawn. */
typedef struct gen_params {
    int n_records;
    int n_keys;
    tdm_time_ms base;     /* first "true" time */
    tdm_time_ms max_step; /* true time advances by [0, max_step] */
    tdm_time_ms small_delay, big_delay;
    int pct_big_delay;
    int pct_wm;           /* chance of a watermark before a record */
    tdm_time_ms wm_lag;   /* watermark = true time - [0, wm_lag] */
    int allow_wm_regress; /* multi-channel: sometimes send a lower one */
} gen_params;

/* Draws a stream: records whose timestamps trail a rising "true" time by
 * a small or (sometimes) a big delay, and watermarks that trail it too.
 * Per channel, watermarks never decrease unless allow_wm_regress. */
static void gen_stream(rng *r, const gen_params *g, int n_channels, stream *st)
{
    tdm_time_ms t = g->base;
    tdm_time_ms last_wm[2] = {TDM_TIME_MIN, TDM_TIME_MIN};
    st->n = 0;
    for (int i = 0; i < g->n_records; i++) {
        t += rng_range(r, 0, g->max_step);
        while (rng_pct(r, g->pct_wm)) {
            step w = {.kind = ST_WM};
            w.ch = (int)rng_range(r, 0, n_channels - 1);
            w.ts = t - rng_range(r, 0, g->wm_lag);
            if (w.ts < last_wm[w.ch]) {
                if (!(g->allow_wm_regress && rng_pct(r, 30)))
                    w.ts = last_wm[w.ch];
            }
            if (w.ts > last_wm[w.ch])
                last_wm[w.ch] = w.ts;
            stream_push(st, w);
        }
        step s = {.kind = ST_REC};
        s.key = (int)rng_range(r, 0, g->n_keys - 1);
        s.ch = (int)rng_range(r, 0, n_channels - 1);
        if (rng_pct(r, g->pct_big_delay))
            s.ts = t - rng_range(r, 0, g->big_delay);
        else
            s.ts = t - rng_range(r, 0, g->small_delay);
        s.value = (double)rng_range(r, -50, 50);
        stream_push(st, s);
    }
    stream_push(st, (step){.kind = ST_END});
}

/* ====================================================================== */
/* Events: expected (oracle) and observed (engine), one format             */
/* ====================================================================== */

typedef enum ev_kind { EV_RESULT = 0, EV_LATE = 1, EV_WM = 2 } ev_kind;

typedef struct ev {
    int step;
    ev_kind kind;
    int key;
    tdm_time_ms a, b; /* RESULT: start, end; LATE: ts; WM: watermark */
    double value;
    int64_t pane; /* -1 when not checked */
    int timing;   /* -1 when not checked */
    int update;   /* -1 when not checked */
} ev;

typedef struct evvec {
    ev *v;
    int n, cap;
} evvec;

static void evvec_push(evvec *e, ev x)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 256;
        e->v = xrealloc(e->v, (size_t)e->cap * sizeof *e->v);
    }
    e->v[e->n++] = x;
}

#define CMP3(x, y) ((x) < (y) ? -1 : (x) > (y) ? 1 : 0)

/* Total order used to compare outputs step by step as multisets. */
static int ev_cmp(const void *pa, const void *pb)
{
    const ev *x = pa, *y = pb;
    int c;
    if ((c = CMP3(x->step, y->step)) || (c = CMP3(x->kind, y->kind)) ||
        (c = CMP3(x->key, y->key)) || (c = CMP3(x->a, y->a)) ||
        (c = CMP3(x->b, y->b)) || (c = CMP3(x->value, y->value)) ||
        (c = CMP3(x->pane, y->pane)) || (c = CMP3(x->timing, y->timing)))
        return c;
    return CMP3(x->update, y->update);
}

static void ev_format(const ev *x, char *buf, size_t n)
{
    switch (x->kind) {
    case EV_RESULT:
        snprintf(buf, n,
                 "step %d RESULT key=\"%s\" window=[%" PRId64 ",%" PRId64
                 ") value=%.17g pane=%" PRId64 " timing=%d update=%d",
                 x->step, KEYS[x->key], x->a, x->b, x->value, x->pane,
                 x->timing, x->update);
        break;
    case EV_LATE:
        snprintf(buf, n, "step %d LATE key=\"%s\" ts=%" PRId64 " value=%.17g",
                 x->step, KEYS[x->key], x->a, x->value);
        break;
    case EV_WM:
        snprintf(buf, n, "step %d WATERMARK %" PRId64, x->step, x->a);
        break;
    }
}

/* ====================================================================== */
/* The oracle                                                               */
/* ====================================================================== */

/* Everything the oracle predicts for one stream. */
typedef struct expect {
    evvec evs;
    int64_t *live;        /* live windows after each step (not END) */
    tdm_time_ms *w_after; /* operator watermark after each step */
    int64_t late_dropped, late_emitted;
} expect;

/* The operator watermark before and after every step, from the valve rule
 * (R3.6): per channel keep the highest watermark, the operator watermark
 * is the minimum over channels and only ever rises; END makes it MAX. */
static void oracle_watermarks(const model_cfg *c, const stream *st,
                              tdm_time_ms *w_before, tdm_time_ms *w_after)
{
    tdm_time_ms ch_wm[2] = {TDM_TIME_MIN, TDM_TIME_MIN};
    tdm_time_ms out = TDM_TIME_MIN;
    for (int i = 0; i < st->n; i++) {
        const step *s = &st->steps[i];
        w_before[i] = out;
        if (s->kind == ST_WM && s->ts > ch_wm[s->ch]) {
            tdm_time_ms m = TDM_TIME_MAX;
            ch_wm[s->ch] = s->ts;
            for (int k = 0; k < c->n_channels; k++)
                if (ch_wm[k] < m)
                    m = ch_wm[k];
            if (m > out)
                out = m;
        } else if (s->kind == ST_END) {
            out = TDM_TIME_MAX;
        }
        w_after[i] = out;
    }
}

/* Every start s of a window [s, s + size) that contains ts: candidates are
 * all s = offset + k * slide for k in a range wide enough to cover
 * (ts - size, ts], each tested for membership (R1.2-R1.4). */
static int oracle_window_starts(const model_cfg *c, tdm_time_ms ts,
                                tdm_time_ms *out, int cap)
{
    int64_t k_lo = floor_div(ts - c->size - c->offset, c->slide) - 1;
    int64_t k_hi = floor_div(ts - c->offset, c->slide) + 1;
    int n = 0;
    for (int64_t k = k_lo; k <= k_hi; k++) {
        tdm_time_ms s = c->offset + k * c->slide;
        if (s <= ts && ts < s + c->size) {
            if (n == cap) {
                fprintf(stderr, "test_model: too many windows\n");
                exit(2);
            }
            out[n++] = s;
        }
    }
    return n;
}

/* One accepted (record, window) pair. */
typedef struct acc {
    int key;
    tdm_time_ms start;
    int step;
} acc;

static int acc_cmp(const void *pa, const void *pb)
{
    const acc *x = pa, *y = pb;
    int c;
    if ((c = CMP3(x->key, y->key)) || (c = CMP3(x->start, y->start)))
        return c;
    return CMP3(x->step, y->step);
}

/* Aggregates the values of steps idx[0..n). */
static double oracle_agg(tdm_agg_kind k, const stream *st, const int *idx,
                         int n)
{
    double v = 0;
    for (int i = 0; i < n; i++) {
        double x = st->steps[idx[i]].value;
        switch (k) {
        case TDM_AGG_COUNT:
            v += 1;
            break;
        case TDM_AGG_SUM:
            v += x;
            break;
        case TDM_AGG_MIN:
            v = (i == 0 || x < v) ? x : v;
            break;
        case TDM_AGG_MAX:
            v = (i == 0 || x > v) ? x : v;
            break;
        default:
            break;
        }
    }
    return v;
}

static void push_result(expect *ex, int at, int key, tdm_time_ms s,
                        tdm_time_ms e, double value, int64_t pane)
{
    ev x = {.step = at,
            .kind = EV_RESULT,
            .key = key,
            .a = s,
            .b = e,
            .value = value,
            .pane = pane};
    if (pane < 0) {
        x.timing = -1;
        x.update = -1;
    } else {
        /* The event-time trigger never fires early: the first firing is
         * ON_TIME, every later one LATE and an update (contents kept). */
        x.timing = pane == 0 ? TDM_PANE_ON_TIME : TDM_PANE_LATE;
        x.update = pane > 0;
    }
    evvec_push(&ex->evs, x);
}

/* Late records (R2.1) and forwarded watermarks (R3.1), shared by both
 * oracles.  Called per record step that no window accepted. */
static void oracle_unhandled(const model_cfg *c, const stream *st, int i,
                             tdm_time_ms w, expect *ex)
{
    const step *s = &st->steps[i];
    if (sat_add(s->ts, c->lateness) > w)
        return; /* in no window, but not late itself: silently ignored */
    if (c->late_output) {
        ev x = {.step = i,
                .kind = EV_LATE,
                .key = s->key,
                .a = s->ts,
                .value = s->value,
                .pane = -1,
                .timing = -1,
                .update = -1};
        evvec_push(&ex->evs, x);
        ex->late_emitted++;
    } else {
        ex->late_dropped++;
    }
}

static void oracle_forwarded_watermarks(const stream *st,
                                        const tdm_time_ms *w_before,
                                        const tdm_time_ms *w_after, expect *ex)
{
    for (int i = 0; i < st->n; i++)
        if (w_after[i] > w_before[i]) {
            ev x = {.step = i,
                    .kind = EV_WM,
                    .a = w_after[i],
                    .pane = -1,
                    .timing = -1,
                    .update = -1};
            evvec_push(&ex->evs, x);
        }
}

/* Tumbling and sliding windows, recomputed from the whole record list:
 *  - a record is accepted by window w iff cleanup(w) = sat(end-1+L) is
 *    above the watermark at its arrival (R4.4; a cleaned-up window thus
 *    rejects it too);
 *  - a window with contents accepted before the watermark reached end-1
 *    fires once at the first step whose watermark reaches end-1 (R3.2),
 *    with those contents (pane 0);
 *  - every record accepted with watermark >= end-1 fires the window at
 *    its own step with all contents so far (R4.5);
 *  - the window is live from its first record until the step whose
 *    watermark reaches its cleanup time (R4.3). */
static void oracle_time_windows(const model_cfg *c, const stream *st,
                                expect *ex)
{
    int n = st->n;
    tdm_time_ms *w_before = xrealloc(NULL, (size_t)n * sizeof *w_before);
    int64_t *live_delta = xrealloc(NULL, ((size_t)n + 1) * sizeof *live_delta);
    acc *accs = NULL;
    int n_acc = 0, cap_acc = 0;
    int *idx = xrealloc(NULL, (size_t)n * sizeof *idx);
    tdm_time_ms starts[4096];

    memset(live_delta, 0, ((size_t)n + 1) * sizeof *live_delta);
    oracle_watermarks(c, st, w_before, ex->w_after);
    for (int i = 0; i < n; i++) {
        const step *s = &st->steps[i];
        int handled = 0;
        if (s->kind != ST_REC)
            continue;
        int k = oracle_window_starts(c, s->ts, starts, 4096);
        for (int j = 0; j < k; j++) {
            tdm_time_ms cleanup = sat_add(starts[j] + c->size - 1, c->lateness);
            if (cleanup <= w_before[i])
                continue; /* R2.2: this window is late, silently skipped */
            if (n_acc == cap_acc) {
                cap_acc = cap_acc ? 2 * cap_acc : 1024;
                accs = xrealloc(accs, (size_t)cap_acc * sizeof *accs);
            }
            accs[n_acc++] = (acc){s->key, starts[j], i};
            handled = 1;
        }
        if (!handled)
            oracle_unhandled(c, st, i, w_before[i], ex);
    }

    qsort(accs, (size_t)n_acc, sizeof *accs, acc_cmp);
    for (int g = 0; g < n_acc;) {
        int h = g;
        while (h < n_acc && accs[h].key == accs[g].key &&
               accs[h].start == accs[g].start)
            h++;
        tdm_time_ms start = accs[g].start, end = start + c->size;
        tdm_time_ms max_ts = end - 1;
        tdm_time_ms cleanup = sat_add(max_ts, c->lateness);
        int first = accs[g].step;
        int64_t pane = 0;
        int m = 0;
        if (w_before[first] < max_ts) {
            int s = first + 1;
            while (ex->w_after[s] < max_ts)
                s++; /* END reaches MAX, so this stops */
            for (int j = g; j < h && accs[j].step < s; j++)
                idx[m++] = accs[j].step;
            push_result(ex, s, accs[g].key, start, end,
                        oracle_agg(c->agg, st, idx, m), pane++);
        }
        for (int j = g; j < h; j++) {
            int r = accs[j].step;
            if (w_before[r] < max_ts)
                continue;
            m = 0;
            for (int q = g; q <= j; q++)
                idx[m++] = accs[q].step;
            push_result(ex, r, accs[g].key, start, end,
                        oracle_agg(c->agg, st, idx, m), pane++);
        }
        /* Live from `first` up to the step that reaches cleanup. */
        int d = first;
        while (d < n && ex->w_after[d] < cleanup)
            d++;
        live_delta[first]++;
        live_delta[d]--;
        g = h;
    }
    int64_t live = 0;
    for (int i = 0; i < n; i++) {
        live += live_delta[i];
        ex->live[i] = live;
    }
    oracle_forwarded_watermarks(st, w_before, ex->w_after, ex);
    free(w_before);
    free(live_delta);
    free(accs);
    free(idx);
}

/* One session of the session oracle. */
typedef struct sess {
    int key;
    tdm_time_ms start, end;
    int alive;
    int timer; /* event-time trigger timer pending at end - 1 */
    int *members;
    int n, cap;
} sess;

static void sess_add(sess *s, int step_idx)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->members = xrealloc(s->members, (size_t)s->cap * sizeof(int));
    }
    s->members[s->n++] = step_idx;
}

/* Session windows, simulated step by step (merging depends on history):
 *  - a record opens [ts, ts + gap) and merges with every live session of
 *    its key that overlaps or touches it (R5.1);
 *  - the lateness check runs on the merged window (R5.3): a lone window
 *    whose cleanup is <= W is skipped, the record then late per R2.1;
 *  - a merged window with end-1 <= W fires at once with all contents
 *    (R5.4), otherwise its timer is pending at end-1;
 *  - on a watermark, pending timers <= W fire, then sessions whose
 *    cleanup time is <= W are removed (R4.3). */
static void oracle_sessions(const model_cfg *c, const stream *st, expect *ex,
                            char *err, size_t err_size)
{
    int n = st->n;
    tdm_time_ms *w_before = xrealloc(NULL, (size_t)n * sizeof *w_before);
    sess *ss = NULL;
    int n_ss = 0, cap_ss = 0;
    int64_t live = 0;

    oracle_watermarks(c, st, w_before, ex->w_after);
    for (int i = 0; i < n; i++) {
        const step *s = &st->steps[i];
        tdm_time_ms w = w_before[i];
        if (s->kind == ST_REC) {
            tdm_time_ms ns = s->ts, ne = sat_add(s->ts, c->gap);
            tdm_time_ms ms = ns, me = ne;
            int into = -1;
            for (int j = 0; j < n_ss; j++) {
                sess *x = &ss[j];
                if (!x->alive || x->key != s->key)
                    continue;
                if (x->start <= ne && x->end >= ns) {
                    if (x->start < ms)
                        ms = x->start;
                    if (x->end > me)
                        me = x->end;
                    if (into < 0)
                        into = j;
                }
            }
            if (sat_add(me - 1, c->lateness) <= w) {
                if (into >= 0) {
                    snprintf(err, err_size,
                             "oracle: merged session late at step %d", i);
                    break;
                }
                oracle_unhandled(c, st, i, w, ex);
                ex->live[i] = live;
                continue;
            }
            if (into < 0) {
                if (n_ss == cap_ss) {
                    cap_ss = cap_ss ? 2 * cap_ss : 64;
                    ss = xrealloc(ss, (size_t)cap_ss * sizeof *ss);
                }
                ss[n_ss] = (sess){.key = s->key, .alive = 1};
                into = n_ss++;
                live++;
            }
            /* Fold every other touching session into `into`. */
            for (int j = 0; j < n_ss; j++) {
                sess *x = &ss[j];
                if (j == into || !x->alive || x->key != s->key)
                    continue;
                if (x->start <= ne && x->end >= ns) {
                    for (int q = 0; q < x->n; q++)
                        sess_add(&ss[into], x->members[q]);
                    x->alive = 0;
                    live--;
                }
            }
            sess *m = &ss[into];
            m->start = ms;
            m->end = me;
            sess_add(m, i);
            if (me - 1 > w) {
                m->timer = 1;
            } else {
                m->timer = 0;
                push_result(ex, i, m->key, m->start, m->end,
                            oracle_agg(c->agg, st, m->members, m->n), -1);
            }
        } else if (ex->w_after[i] > w) {
            tdm_time_ms wa = ex->w_after[i];
            for (int j = 0; j < n_ss; j++) {
                sess *x = &ss[j];
                if (x->alive && x->timer && x->end - 1 <= wa) {
                    x->timer = 0;
                    push_result(ex, i, x->key, x->start, x->end,
                                oracle_agg(c->agg, st, x->members, x->n), -1);
                }
            }
            for (int j = 0; j < n_ss; j++) {
                sess *x = &ss[j];
                tdm_time_ms cleanup = sat_add(x->end - 1, c->lateness);
                if (x->alive && cleanup <= wa && cleanup != TDM_TIME_MAX) {
                    x->alive = 0;
                    live--;
                }
            }
        }
        ex->live[i] = live;
    }
    oracle_forwarded_watermarks(st, w_before, ex->w_after, ex);
    for (int j = 0; j < n_ss; j++)
        free(ss[j].members);
    free(ss);
    free(w_before);
}

/* ====================================================================== */
/* Running the engine                                                       */
/* ====================================================================== */

typedef struct run_ctx {
    evvec got;
    int step;
    int check_panes;
    char err[512]; /* first protocol error seen in the callback */
} run_ctx;

static void run_error(run_ctx *rc, const char *msg)
{
    if (rc->err[0] == '\0')
        snprintf(rc->err, sizeof rc->err, "step %d: %s", rc->step, msg);
}

static void on_emit(void *opaque, const tdm_event *e)
{
    run_ctx *rc = opaque;
    ev x = {.step = rc->step, .pane = -1, .timing = -1, .update = -1};
    const tdm_record *rec;
    const char *k;
    size_t klen;

    /* R3.1: everything a step causes precedes the watermark it forwards. */
    if (rc->got.n > 0 && rc->got.v[rc->got.n - 1].step == rc->step &&
        rc->got.v[rc->got.n - 1].kind == EV_WM)
        run_error(rc, "event emitted after the step's watermark");
    switch (tdm_event_get_type(e)) {
    case TDM_EVENT_RESULT:
        x.kind = EV_RESULT;
        k = tdm_event_key(e, &klen);
        x.key = key_index(k, klen);
        if (x.key < 0)
            run_error(rc, "result with an unknown key");
        if (tdm_event_window(e, &x.a, &x.b) != 1)
            run_error(rc, "result without a time window");
        if (tdm_event_time(e) != x.b - 1)
            run_error(rc, "result timestamp is not window end - 1");
        x.value = tdm_event_value(e);
        if (rc->check_panes) {
            x.pane = tdm_event_pane_index(e);
            x.timing = (int)tdm_event_pane_timing(e);
            x.update = tdm_event_is_update(e);
        }
        break;
    case TDM_EVENT_LATE:
        x.kind = EV_LATE;
        rec = tdm_event_record(e, 0);
        if (!rec) {
            run_error(rc, "late event without a record");
            return;
        }
        k = tdm_record_key(rec, &klen);
        x.key = key_index(k, klen);
        if (x.key < 0)
            run_error(rc, "late record with an unknown key");
        x.a = tdm_record_ts(rec);
        x.value = tdm_record_value(rec);
        if (tdm_event_time(e) != x.a)
            run_error(rc, "late event time is not the record timestamp");
        break;
    case TDM_EVENT_WATERMARK:
        x.kind = EV_WM;
        x.a = tdm_event_time(e);
        break;
    default:
        run_error(rc, "unexpected event type");
        return;
    }
    if (x.key < 0)
        x.key = 0;
    evvec_push(&rc->got, x);
}

/* Builds the operator described by @p c; fails the test on error. */
static tdm_winop *make_op(const model_cfg *c, tdm_clock *clk, run_ctx *rc)
{
    char eb[256] = "";
    tdm_assigner *asg = NULL;
    tdm_trigger *trg = NULL;
    tdm_aggregate *agg = NULL;
    tdm_winop *op = NULL;

    if (c->type == W_TUMBLING)
        ASSERT_OK(
            tdm_assigner_new_tumbling(c->size, c->offset, &asg, eb, sizeof eb));
    else if (c->type == W_SLIDING)
        ASSERT_OK(tdm_assigner_new_sliding(c->size, c->slide, c->offset, &asg,
                                           eb, sizeof eb));
    else
        ASSERT_OK(tdm_assigner_new_session(c->gap, &asg, eb, sizeof eb));
    if (c->explicit_trigger)
        ASSERT_OK(tdm_trigger_new_event_time(&trg));
    ASSERT_OK(tdm_aggregate_new(c->agg, &agg));
    if (tdm_winop_new(asg, trg, agg, c->n_channels, clk, on_emit, rc, &op, eb,
                      sizeof eb) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "tdm_winop_new: %s", eb);
    ASSERT_OK(tdm_winop_set_allowed_lateness(op, c->lateness, eb, sizeof eb));
    ASSERT_OK(tdm_winop_set_late_output(op, c->late_output));
    return op;
}

static void cfg_format(const model_cfg *c, char *buf, size_t n)
{
    static const char *const types[] = {"tumbling", "sliding", "session"};
    static const char *const aggs[] = {"count", "sum", "min", "max"};
    snprintf(buf, n,
             "%s size=%" PRId64 " slide=%" PRId64 " offset=%" PRId64
             " gap=%" PRId64 " lateness=%" PRId64
             " late_output=%d agg=%s channels=%d explicit_trigger=%d",
             types[c->type], c->size, c->slide, c->offset, c->gap, c->lateness,
             c->late_output, aggs[c->agg], c->n_channels, c->explicit_trigger);
}

/* Prints the stream up to @p upto (inclusive), for failure reports. */
static void dump_stream(const stream *st, int upto)
{
    for (int i = 0; i <= upto && i < st->n; i++) {
        const step *s = &st->steps[i];
        if (s->kind == ST_REC)
            fprintf(stderr,
                    "  %4d record key=\"%s\" ts=%" PRId64 " value=%g ch=%d\n",
                    i, KEYS[s->key], s->ts, s->value, s->ch);
        else if (s->kind == ST_WM)
            fprintf(stderr, "  %4d watermark %" PRId64 " ch=%d\n", i, s->ts,
                    s->ch);
        else
            fprintf(stderr, "  %4d end\n", i);
    }
}

/* Reports a disagreement with everything needed to reproduce it. */
__attribute__((noreturn)) static void
model_fail(const char *case_name, uint64_t seed, const model_cfg *c,
           const stream *st, int step_idx, const char *what)
{
    char cfg[256];
    cfg_format(c, cfg, sizeof cfg);
    fprintf(stderr, "model disagreement in %s, seed %" PRIu64 "\n  %s\n",
            case_name, seed, cfg);
    if (getenv("TDM_MODEL_DUMP"))
        dump_stream(st, step_idx);
    else
        fprintf(stderr, "  (TDM_MODEL_DUMP=1 prints the stream)\n");
    tdm_test_fail(__FILE__, __LINE__,
                  "%s\n  rerun: TDM_MODEL_SEED=%" PRIu64 " ./test_model %s",
                  what, seed, case_name);
}

/* Totals over a case, printed so that a reader can see the streams
 * exercise what they should (late firings, late records, drops). */
typedef struct totals {
    int64_t streams, records, results, late_firings, late_records, dropped;
    int64_t watermarks;
} totals;

/* Feeds @p st to a fresh operator and compares with the oracle. */
static void run_and_compare(const char *case_name, uint64_t seed,
                            const model_cfg *c, const stream *st, totals *tot)
{
    expect ex = {0};
    run_ctx rc = {.check_panes = c->check_panes};
    tdm_clock *clk = NULL;
    tdm_record *rec = NULL;
    char msg[1024], a[256], b[256];

    ex.live = xrealloc(NULL, (size_t)st->n * sizeof *ex.live);
    ex.w_after = xrealloc(NULL, (size_t)st->n * sizeof *ex.w_after);
    msg[0] = '\0';
    if (c->type == W_SESSION)
        oracle_sessions(c, st, &ex, msg, sizeof msg);
    else
        oracle_time_windows(c, st, &ex);
    if (msg[0])
        model_fail(case_name, seed, c, st, st->n - 1, msg);

    ASSERT_OK(tdm_clock_new_manual(0, &clk));
    ASSERT_OK(tdm_record_new(&rec));
    tdm_winop *op = make_op(c, clk, &rc);
    for (int i = 0; i < st->n; i++) {
        const step *s = &st->steps[i];
        tdm_err e = TDM_OK;
        rc.step = i;
        if (s->kind == ST_REC) {
            const char *k = KEYS[s->key];
            tdm_record_set(rec, k, strlen(k), s->ts, s->value);
            e = tdm_winop_push(op, s->ch, rec);
        } else if (s->kind == ST_WM) {
            e = tdm_winop_watermark(op, s->ch, s->ts);
        } else {
            e = tdm_winop_end(op);
        }
        if (e != TDM_OK) {
            snprintf(msg, sizeof msg, "step %d returned %s: %s", i,
                     tdm_err_name(e), tdm_winop_errmsg(op));
            model_fail(case_name, seed, c, st, i, msg);
        }
        if (rc.err[0])
            model_fail(case_name, seed, c, st, i, rc.err);
        if (tdm_winop_current_watermark(op) != ex.w_after[i]) {
            snprintf(msg, sizeof msg,
                     "step %d: operator watermark %" PRId64 ", oracle %" PRId64,
                     i, tdm_winop_current_watermark(op), ex.w_after[i]);
            model_fail(case_name, seed, c, st, i, msg);
        }
        /* State after cleanup (R4.3); not checked at END, where windows
         * with a saturated cleanup time may stay. */
        if (s->kind != ST_END && tdm_winop_live_windows(op) != ex.live[i]) {
            snprintf(msg, sizeof msg,
                     "step %d: %" PRId64 " live windows, oracle %" PRId64, i,
                     tdm_winop_live_windows(op), ex.live[i]);
            model_fail(case_name, seed, c, st, i, msg);
        }
    }

    /* Compare all outputs, grouped by step, as multisets. */
    qsort(ex.evs.v, (size_t)ex.evs.n, sizeof(ev), ev_cmp);
    qsort(rc.got.v, (size_t)rc.got.n, sizeof(ev), ev_cmp);
    for (int i = 0; i < ex.evs.n || i < rc.got.n; i++) {
        const ev *x = i < ex.evs.n ? &ex.evs.v[i] : NULL;
        const ev *y = i < rc.got.n ? &rc.got.v[i] : NULL;
        if (x && y && ev_cmp(x, y) == 0)
            continue;
        if (x)
            ev_format(x, a, sizeof a);
        else
            snprintf(a, sizeof a, "(nothing)");
        if (y)
            ev_format(y, b, sizeof b);
        else
            snprintf(b, sizeof b, "(nothing)");
        snprintf(msg, sizeof msg,
                 "first difference:\n  oracle: %s\n"
                 "  engine: %s",
                 a, b);
        int at = x && y ? (x->step < y->step ? x->step : y->step)
                        : (x ? x->step : y->step);
        model_fail(case_name, seed, c, st, at, msg);
    }
    if (tdm_winop_late_dropped(op) != ex.late_dropped ||
        tdm_winop_late_emitted(op) != ex.late_emitted) {
        snprintf(msg, sizeof msg,
                 "counters: dropped %" PRId64 " emitted %" PRId64
                 ", oracle dropped %" PRId64 " emitted %" PRId64,
                 tdm_winop_late_dropped(op), tdm_winop_late_emitted(op),
                 ex.late_dropped, ex.late_emitted);
        model_fail(case_name, seed, c, st, st->n - 1, msg);
    }
    tot->streams++;
    tot->records += st->n - 1;
    tot->late_records += ex.late_emitted;
    tot->dropped += ex.late_dropped;
    for (int i = 0; i < ex.evs.n; i++) {
        const ev *x = &ex.evs.v[i];
        tot->results += x->kind == EV_RESULT;
        tot->late_firings += x->kind == EV_RESULT && x->pane > 0;
        tot->watermarks += x->kind == EV_WM;
    }
    tdm_winop_destroy(op);
    tdm_record_destroy(rec);
    tdm_clock_destroy(clk);
    free(rc.got.v);
    free(ex.evs.v);
    free(ex.live);
    free(ex.w_after);
}

/* ====================================================================== */
/* Drawing configurations                                                   */
/* ====================================================================== */

static const tdm_time_ms SIZES[] = {1, 2, 3, 5, 7, 10, 20, 50, 100, 1000};
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

/* Allowed lateness: 0, small (about a window), or large, a third each;
 * with @p extreme the large values sit at the saturation edge. */
static tdm_time_ms draw_lateness(rng *r, tdm_time_ms size, int extreme)
{
    if (extreme) {
        switch (rng_range(r, 0, 3)) {
        case 0:
            return TDM_TIME_MAX;
        case 1:
            return TDM_TIME_MAX - rng_range(r, 0, 1000);
        case 2:
            return (tdm_time_ms)1 << 62;
        default:
            return rng_range(r, 1, 3 * size);
        }
    }
    switch (rng_range(r, 0, 2)) {
    case 0:
        return 0;
    case 1:
        return rng_range(r, 1, 2 * size);
    default:
        return rng_range(r, 10 * size, 1000 * size);
    }
}

/* Stream shape scaled to the window size (or session gap) @p unit: a few
 * records per key and window, a fifth of them delayed by up to several
 * windows so that many are late. */
static void draw_gen(rng *r, tdm_time_ms unit, tdm_time_ms lateness,
                     gen_params *g)
{
    tdm_time_ms small_l = lateness < 3 * unit ? lateness : 3 * unit;
    g->n_records = (int)rng_range(r, 150, 250);
    g->n_keys = (int)rng_range(r, 1, N_KEYS_MAX);
    g->base = rng_range(r, -4000, 2000);
    g->max_step = unit / 3 + 1;
    g->small_delay = rng_range(r, 0, unit);
    g->big_delay = 3 * unit + small_l + 2;
    g->pct_big_delay = (int)rng_range(r, 5, 30);
    g->pct_wm = (int)rng_range(r, 5, 35);
    g->wm_lag = rng_range(r, 0, 2 * unit);
    g->allow_wm_regress = 0;
}

typedef enum case_kind {
    C_TUMBLING,
    C_TUMBLING_NEG,
    C_SLIDING,
    C_SLIDING_SPARSE,
    C_TWO_CHANNELS,
    C_EXTREME_LATENESS,
    C_SESSION
} case_kind;

static void draw_case(case_kind kind, rng *r, model_cfg *c, gen_params *g)
{
    memset(c, 0, sizeof *c);
    c->type = W_TUMBLING;
    c->size = SIZES[rng_range(r, 0, N_SIZES - 1)];
    c->slide = c->size;
    c->agg = (tdm_agg_kind)rng_range(r, 0, 3);
    c->n_channels = 1;
    c->explicit_trigger = rng_pct(r, 50);
    c->late_output = rng_pct(r, 50);
    c->check_panes = 1;
    switch (kind) {
    case C_TUMBLING:
        c->agg = (tdm_agg_kind)rng_range(r, 0, 1); /* count, sum */
        if (rng_pct(r, 50))
            c->offset = rng_range(r, -(c->size - 1), c->size - 1);
        break;
    case C_TUMBLING_NEG:
        c->agg = (tdm_agg_kind)rng_range(r, 2, 3); /* min, max */
        c->offset = rng_range(r, -(c->size - 1), c->size - 1);
        break;
    case C_SLIDING:
    case C_TWO_CHANNELS:
        c->type = W_SLIDING;
        c->slide = c->size / rng_range(r, 1, c->size < 12 ? c->size : 12);
        if (c->slide < 1)
            c->slide = 1;
        c->offset = rng_range(r, -(c->slide - 1), c->slide - 1);
        if (kind == C_TWO_CHANNELS) {
            c->n_channels = 2;
            if (rng_pct(r, 40)) { /* tumbling half the time */
                c->type = W_TUMBLING;
                c->slide = c->size;
                c->offset = rng_range(r, -(c->size - 1), c->size - 1);
            }
        }
        break;
    case C_SLIDING_SPARSE:
        /* slide > size: gaps between windows, so some records are in no
         * window at all (skipped, late only if ts + L <= W). */
        c->type = W_SLIDING;
        c->slide = c->size + rng_range(r, 1, 2 * c->size);
        c->offset = rng_range(r, -(c->slide - 1), c->slide - 1);
        break;
    case C_EXTREME_LATENESS:
        c->offset = rng_range(r, -(c->size - 1), c->size - 1);
        if (rng_pct(r, 50)) {
            c->type = W_SLIDING;
            c->slide = c->size / rng_range(r, 1, c->size < 4 ? c->size : 4);
            c->offset = rng_range(r, -(c->slide - 1), c->slide - 1);
        }
        break;
    case C_SESSION:
        c->type = W_SESSION;
        c->gap = SIZES[rng_range(r, 0, 8)];
        c->size = c->slide = 0;
        c->check_panes = 0;
        break;
    }
    c->lateness = draw_lateness(r, c->type == W_SESSION ? c->gap : c->size,
                                kind == C_EXTREME_LATENESS);
    draw_gen(r, c->type == W_SESSION ? c->gap : c->size,
             kind == C_EXTREME_LATENESS ? 3 * c->size : c->lateness, g);
    if (kind == C_TUMBLING_NEG)
        g->base = rng_range(r, -20000, -1000);
    if (kind == C_SESSION)
        g->max_step = c->gap + c->gap / 2 + 1; /* sessions break often */
    if (kind == C_TWO_CHANNELS)
        g->allow_wm_regress = 1;
}

/* Runs @p n_seeds streams of one case; TDM_MODEL_SEED runs only that one.
 * Seeds are (case number << 32) + i, so every case has its own streams. */
static void run_case(const char *name, case_kind kind, int n_seeds)
{
    const char *only = getenv("TDM_MODEL_SEED");
    stream st = {0};
    totals tot = {0};
    for (int i = 0; i < n_seeds; i++) {
        uint64_t seed = ((uint64_t)(kind + 1) << 32) + (uint64_t)i;
        if (only) {
            seed = strtoull(only, NULL, 0);
            i = n_seeds;
        }
        rng r = {seed};
        model_cfg c;
        gen_params g;
        draw_case(kind, &r, &c, &g);
        gen_stream(&r, &g, c.n_channels, &st);
        run_and_compare(name, seed, &c, &st, &tot);
    }
    printf("%s: %" PRId64 " streams, %" PRId64 " records, %" PRId64
           " results (%" PRId64 " late firings), %" PRId64
           " watermarks, %" PRId64 " late records out, %" PRId64 " dropped\n",
           name, tot.streams, tot.records, tot.results, tot.late_firings,
           tot.watermarks, tot.late_records, tot.dropped);
    free(st.steps);
}

/* ====================================================================== */
/* Cases                                                                    */
/* ====================================================================== */

/* Tumbling windows with and without offsets, count and sum. */
TDM_TEST(tumbling_count_sum)
{
    run_case("tumbling_count_sum", C_TUMBLING, 700);
}

/* Tumbling windows over negative timestamps, offsets, min and max. */
TDM_TEST(tumbling_negative_min_max)
{
    run_case("tumbling_negative_min_max", C_TUMBLING_NEG, 600);
}

/* Sliding windows, slide dividing the size or not, with offsets. */
TDM_TEST(sliding_all_aggregates)
{
    run_case("sliding_all_aggregates", C_SLIDING, 500);
}

/* Sliding windows with gaps (slide > size). */
TDM_TEST(sliding_with_gaps)
{
    run_case("sliding_with_gaps", C_SLIDING_SPARSE, 500);
}

/* Two channels merged by the valve: the operator watermark is the minimum
 * of the channels' highest watermarks; lower watermarks are ignored. */
TDM_TEST(two_channels_valve)
{
    run_case("two_channels_valve", C_TWO_CHANNELS, 500);
}

/* Allowed lateness at the saturation edge: end - 1 + L overflows, so the
 * cleanup time is MAX and windows are never cleaned or late. */
TDM_TEST(lateness_saturation)
{
    run_case("lateness_saturation", C_EXTREME_LATENESS, 400);
}

/* Session windows: touching merges, late records merging into live
 * sessions within allowed lateness, firing at once when already due. */
TDM_TEST(sessions)
{
    run_case("sessions", C_SESSION, 1000);
}
