/* SPDX-License-Identifier: MIT */
/* fuzz_ops.c - libFuzzer target driving the window operator and the
 * interval join through the public API.
 *
 * The first byte picks the operator, the next bytes its configuration,
 * the rest a sequence of calls (records, watermarks, idle/active,
 * processing-time steps, end).  Every emitted event is checked against
 * invariants that hold for any input; a violation is __builtin_trap().
 * tests/fuzz/replay.c runs the same entry point over the seed corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tidemark.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reports a broken invariant (which one, then a trap). */
#include "fuzz_check.h"

/* ====================================================================== */
/* Input decoding                                                           */
/* ====================================================================== */

typedef struct cursor {
    const uint8_t *p;
    size_t n;
} cursor;

static int more(const cursor *c)
{
    return c->n > 0;
}

/* The next byte, 0 once the input is exhausted. */
static uint8_t u8(cursor *c)
{
    if (c->n == 0)
        return 0;
    c->n--;
    return *c->p++;
}

static int16_t i16(cursor *c)
{
    uint16_t lo = u8(c), hi = u8(c);
    return (int16_t)(uint16_t)(lo | (hi << 8));
}

/* A timestamp: mostly small (so that windows meet), near the extremes
 * sometimes (unless @p no_extremes), to exercise saturation. */
static tdm_time_ms draw_ts(cursor *c, tdm_time_ms base, int no_extremes)
{
    uint8_t sel = u8(c);
    int16_t v = i16(c);
    switch (no_extremes ? 0 : sel & 7) {
    case 6:
        return TDM_TIME_MAX - 1 - (v & 0x3fff);
    case 7:
        return TDM_TIME_MIN + 1 + (v & 0x3fff);
    default:
        return base + v / 8;
    }
}

static const char *const KEYS[] = {"a",     "b",  "cc", "",
                                   "key-4", "k5", "k6", "seven"};

/* ====================================================================== */
/* What the checks remember between events                                 */
/* ====================================================================== */

typedef enum call_kind {
    CALL_PUSH,
    CALL_WATERMARK,
    CALL_STATUS,
    CALL_ADVANCE,
    CALL_END,
    CALL_AFTER_END
} call_kind;

typedef enum trig_kind {
    TRIG_DEFAULT,
    TRIG_EVENT,
    TRIG_PROC,
    TRIG_COUNT,
    TRIG_CONTINUOUS,
    TRIG_PURGING_EVENT,
    TRIG_PURGING_COUNT,
    TRIG_NEVER
} trig_kind;

typedef enum asg_kind { A_TUMBLING, A_SLIDING, A_SESSION, A_GLOBAL } asg_kind;

typedef struct state {
    int is_join;
    call_kind call;
    /* Emitted watermarks and statuses. */
    tdm_time_ms last_wm;
    int have_wm;
    int idle; /* last emitted status */
    /* Window operator configuration. */
    asg_kind asg;
    int proc_time;
    trig_kind trig;
    tdm_time_ms size, slide, offset, gap, lateness;
    int late_output;
    int no_extremes; /* see fuzz_winop */
    tdm_agg_kind agg;
    int64_t pushed; /* records pushed so far (bounds a count) */
    /* Join configuration (normalised inclusive bounds). */
    tdm_time_ms lower, upper;
    /* Per call: results and late records seen, for checks after it. */
    int n_results;
    tdm_time_ms max_result_ts;
    int n_late;
    tdm_time_ms max_late_ts, min_late_ts;
} state;

static tdm_time_ms sat_add(tdm_time_ms a, tdm_time_ms b)
{
    if (b > 0 && a > TDM_TIME_MAX - b)
        return TDM_TIME_MAX;
    if (b < 0 && a < TDM_TIME_MIN - b)
        return TDM_TIME_MIN;
    return a + b;
}

/* Watermarks strictly increase; none is sent while the output is idle;
 * statuses are sent only when they change. */
static void check_wm_status(state *s, const tdm_event *ev)
{
    if (tdm_event_get_type(ev) == TDM_EVENT_WATERMARK) {
        tdm_time_ms w = tdm_event_time(ev);
        CHECK(!s->have_wm || w > s->last_wm);
        CHECK(!s->idle);
        s->last_wm = w;
        s->have_wm = 1;
    } else {
        int idle = tdm_event_is_idle(ev);
        CHECK(idle == 0 || idle == 1);
        CHECK(idle != s->idle);
        s->idle = idle;
    }
}

/* Per-result checks of the window operator. */
static void check_result(state *s, const tdm_event *ev)
{
    tdm_time_ms start = 0, end = 0, t = tdm_event_time(ev);
    int timed = tdm_event_window(ev, &start, &end);
    size_t klen = 9;
    const char *key = tdm_event_key(ev, &klen);
    double v = tdm_event_value(ev);

    CHECK(klen <= 5 && (klen == 0 || key != NULL));
    CHECK(tdm_event_pane_index(ev) >= 0);
    CHECK((unsigned)tdm_event_pane_timing(ev) <= TDM_PANE_LATE);
    if (s->asg == A_GLOBAL) {
        CHECK(timed == 0);
        CHECK(t == TDM_TIME_MAX);
    } else {
        CHECK(timed == 1);
        CHECK(start < end);
        CHECK(t == end - 1);
        if (s->asg == A_SESSION) {
            CHECK(end - start >= s->gap || end == TDM_TIME_MAX);
        } else if (start > TDM_TIME_MIN / 2 && end < TDM_TIME_MAX / 2) {
            /* Aligned on the slide, offset applied (R1.2-R1.4). */
            tdm_time_ms r = (start - s->offset) % s->slide;
            CHECK(end - start == s->size);
            CHECK(r == 0);
        }
    }
    if (s->agg == TDM_AGG_COUNT) {
        CHECK(v >= 1 && v <= (double)s->pushed && v == (double)(int64_t)v);
    } else if (s->agg != TDM_AGG_COLLECT) {
        CHECK(v == v); /* not NaN: values are small integers */
    } else {
        size_t n = 0;
        const double *vals = tdm_event_values(ev, &n);
        CHECK(n >= 1 && vals != NULL);
        for (size_t i = 1; i < n; i++)
            CHECK(vals[i - 1] <= vals[i]);
    }
    /* Count triggers fire only on records (R6.3), never at end. */
    if (s->trig == TRIG_COUNT || s->trig == TRIG_PURGING_COUNT)
        CHECK(s->call == CALL_PUSH);
    CHECK(s->trig != TRIG_NEVER);
    CHECK(!(s->asg == A_GLOBAL && s->trig == TRIG_DEFAULT));
    if (s->n_results++ == 0 || t > s->max_result_ts)
        s->max_result_ts = t;
}

/* Per-pair checks of the interval join. */
static void check_join(state *s, const tdm_event *ev)
{
    const tdm_record *l = tdm_event_record(ev, 0);
    const tdm_record *r = tdm_event_record(ev, 1);
    size_t ll, rl;
    CHECK(l != NULL && r != NULL);
    const char *lk = tdm_record_key(l, &ll), *rk = tdm_record_key(r, &rl);
    tdm_time_ms lt = tdm_record_ts(l), rt = tdm_record_ts(r);
    CHECK(ll == rl && (ll == 0 || memcmp(lk, rk, ll) == 0));
    /* J1: l.ts + lower <= r.ts <= l.ts + upper, without overflow. */
    CHECK(sat_add(lt, s->lower) <= rt && rt <= sat_add(lt, s->upper));
    CHECK(tdm_event_time(ev) == (lt > rt ? lt : rt));
    /* J3: a pair is never behind the operator's watermark. */
    CHECK(!s->have_wm || tdm_event_time(ev) >= s->last_wm);
    CHECK(s->call == CALL_PUSH);
}

static void on_emit(void *opaque, const tdm_event *ev)
{
    state *s = opaque;
    const tdm_record *rec;

    /* Nothing comes out of a call made after end. */
    CHECK(s->call != CALL_AFTER_END);
    switch (tdm_event_get_type(ev)) {
    case TDM_EVENT_WATERMARK:
    case TDM_EVENT_STATUS:
        check_wm_status(s, ev);
        break;
    case TDM_EVENT_RESULT:
        CHECK(!s->is_join);
        check_result(s, ev);
        break;
    case TDM_EVENT_JOIN:
        CHECK(s->is_join);
        check_join(s, ev);
        break;
    case TDM_EVENT_LATE:
        rec = tdm_event_record(ev, 0);
        CHECK(rec != NULL);
        CHECK(s->late_output);
        CHECK(s->call == CALL_PUSH);
        CHECK(tdm_event_time(ev) == tdm_record_ts(rec));
        if (s->is_join)
            CHECK(tdm_event_side(ev) == 0 || tdm_event_side(ev) == 1);
        if (s->n_late++ == 0 || tdm_record_ts(rec) > s->max_late_ts)
            s->max_late_ts = tdm_record_ts(rec);
        break;
    default:
        CHECK(0);
    }
}

/* ====================================================================== */
/* The window operator                                                      */
/* ====================================================================== */

static const tdm_time_ms SIZES[] = {1, 2, 3, 7, 10, 100, 1000, 5000};
static const tdm_time_ms LATENESS[] = {0, 1, 10, 1000, TDM_TIME_MAX};

/* Builds the trigger @p k (NULL for the default). */
static tdm_trigger *make_trigger(trig_kind k, cursor *c)
{
    tdm_trigger *t = NULL, *inner = NULL;
    switch (k) {
    case TRIG_DEFAULT:
        return NULL;
    case TRIG_EVENT:
        tdm_trigger_new_event_time(&t);
        break;
    case TRIG_PROC:
        tdm_trigger_new_processing_time(&t);
        break;
    case TRIG_COUNT:
        tdm_trigger_new_count(1 + u8(c) % 4, &t, NULL, 0);
        break;
    case TRIG_CONTINUOUS:
        tdm_trigger_new_continuous_event_time(SIZES[u8(c) % 8] * 3, &t, NULL,
                                              0);
        break;
    case TRIG_PURGING_EVENT:
        tdm_trigger_new_event_time(&inner);
        tdm_trigger_new_purging(inner, &t);
        break;
    case TRIG_PURGING_COUNT:
        tdm_trigger_new_count(1 + u8(c) % 4, &inner, NULL, 0);
        tdm_trigger_new_purging(inner, &t);
        break;
    case TRIG_NEVER:
        tdm_trigger_new_never(&t);
        break;
    }
    return t;
}

/* Checks after a window-operator call returned: results of event-time
 * triggers are never ahead of the watermark, late records are behind it
 * by more than the allowed lateness. */
static void after_winop_call(state *s, tdm_winop *op)
{
    tdm_time_ms w = tdm_winop_current_watermark(op);
    int event_trig = s->trig == TRIG_EVENT || s->trig == TRIG_PURGING_EVENT ||
                     (s->trig == TRIG_DEFAULT && !s->proc_time);
    if (s->n_results && event_trig && !s->proc_time)
        CHECK(s->max_result_ts <= w);
    if (s->n_late) {
        CHECK(!s->proc_time && s->asg != A_GLOBAL);
        CHECK(sat_add(s->max_late_ts, s->lateness) <= w);
    }
    CHECK(tdm_winop_live_windows(op) >= 0);
    CHECK(tdm_winop_state_bytes(op) >= 0);
    s->n_results = 0;
    s->n_late = 0;
}

static void fuzz_winop(cursor *c)
{
    state s = {0};
    tdm_clock *clk = NULL;
    tdm_assigner *asg = NULL;
    tdm_trigger *trg = NULL;
    tdm_aggregate *agg = NULL;
    tdm_winop *op = NULL;
    tdm_record *rec = NULL;
    tdm_time_ms now = 0, base = 0;
    int n_ch, ended = 0;
    int64_t dropped_before;
    uint8_t b;

    s.last_wm = TDM_TIME_MIN;
    b = u8(c);
    s.asg = (asg_kind)(b & 3);
    s.proc_time = (b >> 2) & 1 && s.asg != A_GLOBAL;
    s.trig = (trig_kind)((b >> 3) & 7);
    /* A continuous event-time trigger on a processing-time window is
     * refused by tdm_winop_new (it would walk event-time fire points up to
     * a processing-time end); map it to the event-time trigger. */
    if (s.trig == TRIG_CONTINUOUS && s.proc_time)
        s.trig = TRIG_EVENT;
    /* Extreme timestamps are fuzzed for every shape, including continuous
     * on the global window, whose long walks now collapse (regression of
     * the 2026-12-02 hang). */
    s.no_extremes = 0;
    s.size = SIZES[u8(c) % 8];
    s.slide = s.size;
    b = u8(c);
    if (s.asg == A_SLIDING) {
        s.slide = s.size / (1 + b % 8);
        if (s.slide < 1)
            s.slide = 1;
        if (b & 0x80)
            s.slide = s.size + 1 + b % 5; /* gaps between windows */
    }
    s.offset = (int8_t)u8(c) % s.slide;
    s.gap = s.size;
    b = u8(c);
    s.lateness = LATENESS[b % 5];
    s.late_output = (b >> 3) & 1;
    s.agg = (tdm_agg_kind)((b >> 4) % 6);
    n_ch = 1 + ((b >> 7) & 1) + (u8(c) & 1);

    if (tdm_clock_new_manual(0, &clk) != TDM_OK ||
        tdm_record_new(&rec) != TDM_OK)
        goto done;
    switch (s.asg) {
    case A_TUMBLING:
        CHECK(tdm_assigner_new_tumbling(s.size, s.offset, &asg, NULL, 0) ==
              TDM_OK);
        break;
    case A_SLIDING:
        CHECK(tdm_assigner_new_sliding(s.size, s.slide, s.offset, &asg, NULL,
                                       0) == TDM_OK);
        break;
    case A_SESSION:
        CHECK(tdm_assigner_new_session(s.gap, &asg, NULL, 0) == TDM_OK);
        break;
    case A_GLOBAL:
        CHECK(tdm_assigner_new_global(&asg) == TDM_OK);
        break;
    }
    if (s.proc_time)
        CHECK(tdm_assigner_set_processing_time(asg) == TDM_OK);
    CHECK(tdm_aggregate_new(s.agg, &agg) == TDM_OK);
    trg = make_trigger(s.trig, c);
    CHECK(trg != NULL || s.trig == TRIG_DEFAULT);
    /* tdm_winop_new takes ownership of asg, trg and agg, even on failure.
     * Only a merging assigner may be refused (a trigger or aggregate that
     * cannot merge), and every built-in one can. */
    CHECK(tdm_winop_new(asg, trg, agg, n_ch, clk, on_emit, &s, &op, NULL, 0) ==
          TDM_OK);
    CHECK(tdm_winop_set_allowed_lateness(op, s.lateness, NULL, 0) == TDM_OK);
    CHECK(tdm_winop_set_late_output(op, s.late_output) == TDM_OK);

    while (more(c)) {
        uint8_t opc = u8(c);
        int ch = (opc >> 4) % (n_ch + 1); /* n_ch: an invalid channel */
        tdm_err e;
        s.call = ended ? CALL_AFTER_END : CALL_PUSH;
        switch (opc & 7) {
        case 0:
        case 1:
        case 2: {
            const char *k = KEYS[u8(c) & 7];
            tdm_time_ms ts = draw_ts(c, base, s.no_extremes);
            int64_t bad = tdm_winop_bad_records(op);
            if ((opc & 8) && !s.proc_time && !s.no_extremes)
                ts = TDM_TIME_MIN; /* no timestamp */
            tdm_record_set(rec, k, strlen(k), ts, (double)(int8_t)u8(c));
            dropped_before = tdm_winop_late_dropped(op);
            s.pushed++; /* before the call: results of this push count it */
            e = tdm_winop_push(op, ch, rec);
            if (ended) {
                CHECK(e == TDM_ERR_STATE || e == TDM_ERR_CHANNEL);
            } else if (ch == n_ch) {
                CHECK(e == TDM_ERR_CHANNEL);
            } else if (ts == TDM_TIME_MIN && !s.proc_time &&
                       s.asg != A_GLOBAL) {
                CHECK(e == TDM_ERR_NO_TIMESTAMP);
                CHECK(tdm_winop_bad_records(op) == bad + 1);
            } else if (e == TDM_OK) {
                if (s.late_output)
                    CHECK(tdm_winop_late_dropped(op) == dropped_before);
                else
                    CHECK(s.n_late == 0);
            }
            if ((opc & 0x70) == 0x70)
                base += 50; /* let time drift forward */
            break;
        }
        case 3:
        case 4:
            if (!ended)
                s.call = CALL_WATERMARK;
            e = tdm_winop_watermark(op, ch, draw_ts(c, base, s.no_extremes));
            if (ch == n_ch && !ended)
                CHECK(e == TDM_ERR_CHANNEL);
            break;
        case 5:
            if (!ended)
                s.call = CALL_STATUS;
            e = tdm_winop_status(op, ch, (opc >> 3) & 1);
            if (ch == n_ch && !ended)
                CHECK(e == TDM_ERR_CHANNEL);
            break;
        case 6:
            if (!ended)
                s.call = CALL_ADVANCE;
            now += u8(c) * ((opc & 8) ? 100 : 1);
            CHECK(tdm_clock_set(clk, now) == TDM_OK);
            tdm_winop_advance(op);
            break;
        case 7:
            if ((opc & 0x38) != 0x38)
                break; /* end is rarer than the other calls */
            if (!ended)
                s.call = CALL_END;
            e = tdm_winop_end(op);
            if (ended) {
                CHECK(e == TDM_ERR_STATE);
            } else {
                CHECK(e == TDM_OK);
                /* End forwards MAX (after ACTIVE if idle). */
                CHECK(s.have_wm && s.last_wm == TDM_TIME_MAX && !s.idle);
                CHECK(tdm_winop_current_watermark(op) == TDM_TIME_MAX);
            }
            ended = 1;
            break;
        }
        if (s.call != CALL_AFTER_END)
            after_winop_call(&s, op);
    }
done:
    tdm_winop_destroy(op);
    tdm_record_destroy(rec);
    tdm_clock_destroy(clk);
}

/* ====================================================================== */
/* The interval join                                                        */
/* ====================================================================== */

static void fuzz_join(cursor *c)
{
    state s = {0};
    tdm_clock *clk = NULL;
    tdm_joinop *op = NULL;
    tdm_record *rec = NULL;
    tdm_time_ms lower, upper, base = 0;
    int lower_inc, upper_inc, n_ch, ended = 0;
    uint8_t b;
    tdm_err e;

    s.is_join = 1;
    s.last_wm = TDM_TIME_MIN;
    lower = (int8_t)u8(c);
    upper = (int8_t)u8(c);
    b = u8(c);
    lower_inc = b & 1;
    upper_inc = (b >> 1) & 1;
    s.late_output = (b >> 2) & 1;
    n_ch = 1 + ((b >> 3) & 1);
    if (b & 0x10) { /* wide bounds near the extremes */
        lower = TDM_TIME_MIN / 2 + lower;
        upper = TDM_TIME_MAX / 2 + upper;
    }
    s.lower = lower_inc ? lower : lower + 1;
    s.upper = upper_inc ? upper : upper - 1;

    if (tdm_clock_new_manual(0, &clk) != TDM_OK ||
        tdm_record_new(&rec) != TDM_OK)
        goto done;
    e = tdm_joinop_new_interval(lower, upper, lower_inc, upper_inc, n_ch, clk,
                                on_emit, &s, &op, NULL, 0);
    if (s.lower > s.upper) {
        CHECK(e == TDM_ERR_INVAL && op == NULL);
        goto done;
    }
    CHECK(e == TDM_OK);
    CHECK(tdm_joinop_set_late_output(op, s.late_output) == TDM_OK);

    while (more(c)) {
        uint8_t opc = u8(c);
        int side = (opc >> 3) & 1;
        int ch = (opc >> 4) % (n_ch + 1);
        s.call = ended ? CALL_AFTER_END : CALL_PUSH;
        switch (opc & 7) {
        case 0:
        case 1:
        case 2: {
            const char *k = KEYS[u8(c) & 3];
            tdm_time_ms ts = draw_ts(c, base, 0);
            int64_t dropped = tdm_joinop_late_dropped(op);
            tdm_record_set(rec, k, strlen(k), ts, (double)(int8_t)u8(c));
            e = tdm_joinop_push(op, side, ch, rec);
            if (ended)
                CHECK(e == TDM_ERR_STATE || e == TDM_ERR_CHANNEL);
            else if (ch == n_ch)
                CHECK(e == TDM_ERR_CHANNEL);
            else if (e == TDM_OK && s.n_late)
                CHECK(tdm_joinop_late_dropped(op) == dropped);
            /* J2: a late record is behind the watermark. */
            if (s.n_late)
                CHECK(s.have_wm && s.max_late_ts < s.last_wm);
            if ((opc & 0x70) == 0x70)
                base += 20;
            break;
        }
        case 3:
        case 4:
            if (!ended)
                s.call = CALL_WATERMARK;
            e = tdm_joinop_watermark(op, side, ch, draw_ts(c, base, 0));
            if (ch == n_ch && !ended)
                CHECK(e == TDM_ERR_CHANNEL);
            break;
        case 5:
        case 6:
            if (!ended)
                s.call = CALL_STATUS;
            e = tdm_joinop_status(op, side, ch, opc & 1);
            if (ch == n_ch && !ended)
                CHECK(e == TDM_ERR_CHANNEL);
            break;
        case 7:
            if ((opc & 0x30) != 0x30)
                break;
            if (!ended)
                s.call = CALL_END;
            e = tdm_joinop_end(op);
            if (ended) {
                CHECK(e == TDM_ERR_STATE);
            } else {
                CHECK(e == TDM_OK);
                CHECK(s.have_wm && s.last_wm == TDM_TIME_MAX && !s.idle);
                /* J4: the MAX watermark reaches every cleanup time. */
                CHECK(tdm_joinop_buffered(op) == 0);
            }
            ended = 1;
            break;
        }
        CHECK(tdm_joinop_buffered(op) >= 0);
        s.n_late = 0;
    }
done:
    tdm_joinop_destroy(op);
    tdm_record_destroy(rec);
    tdm_clock_destroy(clk);
}

/* The libFuzzer entry point: byte 0 picks the operator. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cursor c = {data, size};
    if (size == 0)
        return 0;
    if (u8(&c) & 1)
        fuzz_join(&c);
    else
        fuzz_winop(&c);
    return 0;
}
