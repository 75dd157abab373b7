/* SPDX-License-Identifier: MIT */
/* test_snap_time.c - checkpoints of the watermark layer (issue 8): the
 * channel generator, the reader with several splits, the valve and the
 * combiner.
 *
 * The method: a script of inputs (records, clock moves, ticks, idle
 * calls, alignment announcements) runs once uninterrupted into trace T.
 * Then, for every cut point k, a fresh object runs the first k steps
 * (trace P), is snapshotted, the blob is restored into another fresh
 * object whose clock reads the same time, and that one runs the rest
 * (trace S).  P followed by S must equal T, event by event: the expected
 * trace is the uninterrupted run's, not anything the restore computes.
 * Corrupt blobs (every truncation, every single flipped byte) must be
 * refused with TDM_ERR_PARSE or, for flips that still decode, accepted;
 * never a crash (the ASan/UBSan build runs this file too).
 */
#include <stdarg.h>

#include "harness.h"
#include "core.h"
#include "state/ckpt_codec.h"
#include "time/wm.h"
#include "testhooks.h"

/* ---- Traces ---- */

typedef struct trace {
    char buf[8192];
} trace;

static void put(trace *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(trace *t, const char *fmt, ...)
{
    size_t n = strlen(t->buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->buf + n, sizeof t->buf - n, fmt, ap);
    va_end(ap);
}

static void trace_cb(void *opaque, const tdm_event *ev)
{
    trace *t = opaque;
    switch (tdm_event_get_type(ev)) {
    case TDM_EVENT_WATERMARK:
        put(t, "W%" PRId64 " ", tdm_event_time(ev));
        break;
    case TDM_EVENT_STATUS:
        put(t, "%s ", tdm_event_is_idle(ev) ? "IDLE" : "ACTIVE");
        break;
    case TDM_EVENT_REPORTED:
        put(t, "R%" PRId64 " ", tdm_event_time(ev));
        break;
    case TDM_EVENT_READING_PAUSED:
        put(t, "PAUSED ");
        break;
    case TDM_EVENT_READING_RESUMED:
        put(t, "RESUMED ");
        break;
    case TDM_EVENT_SPLIT_PAUSED:
        put(t, "SP%d ", tdm_event_index(ev));
        break;
    case TDM_EVENT_SPLIT_RESUMED:
        put(t, "SR%d ", tdm_event_index(ev));
        break;
    default:
        put(t, "? ");
        break;
    }
}

/* ---- Scripts ---- */

enum {
    OP_REC,      /* record a (split / channel b) with timestamp c */
    OP_TIME,     /* clock += a */
    OP_TICK,     /* advance (periodic emission, reports) */
    OP_WM,       /* explicit watermark c on split / channel b */
    OP_STATUS,   /* split / channel b idle = c */
    OP_FINISH,   /* split b finished */
    OP_ANNOUNCE, /* alignment: max watermark c */
    OP_END
};

typedef struct op {
    int kind;
    int b;
    int64_t c;
} op;

/* Encodes with @p snap, checks the encoder, returns the bytes. */
typedef tdm_err (*snap_fn)(const void *obj, tdm__enc *e);

static uint8_t *finish(tdm__enc *e, size_t *len)
{
    uint8_t *blob = NULL;
    ASSERT_OK(tdm__enc_finish(e, &blob, len));
    return blob;
}

/* ---- Generator ---- */

typedef struct gen_rig {
    tdm_clock *clk;
    tdm_wmgen *gen;
    tdm_record *rec;
    trace *t;
} gen_rig;

static tdm_wm_strategy *bounded_strategy(tdm_time_ms bound, int on_event,
                                         tdm_time_ms idle)
{
    tdm_wm_strategy *s = NULL;
    ASSERT_OK(tdm_wm_strategy_new(TDM_WM_BOUNDED, bound, &s, NULL, 0));
    ASSERT_OK(tdm_wm_strategy_set_interval(s, 100, NULL, 0));
    ASSERT_OK(tdm_wm_strategy_set_emit_on_event(s, on_event));
    if (idle > 0)
        ASSERT_OK(tdm_wm_strategy_set_idle_timeout(s, idle, NULL, 0));
    return s;
}

static void gen_rig_new(gen_rig *g, const tdm_wm_strategy *s, tdm_time_ms now,
                        trace *t)
{
    ASSERT_OK(tdm_clock_new_manual(now, &g->clk));
    ASSERT_OK(tdm_wmgen_new(s, g->clk, trace_cb, t, &g->gen));
    ASSERT_OK(tdm_record_new(&g->rec));
    g->t = t;
}

static void gen_rig_free(gen_rig *g)
{
    tdm_wmgen_destroy(g->gen);
    tdm_record_destroy(g->rec);
    tdm_clock_destroy(g->clk);
}

static void gen_step(gen_rig *g, const op *o)
{
    switch (o->kind) {
    case OP_REC:
        tdm_record_set_ts(g->rec, o->c);
        ASSERT_OK(tdm_wmgen_on_event(g->gen, g->rec));
        break;
    case OP_TIME:
        ASSERT_OK(tdm_clock_set(g->clk, tdm_clock_now(g->clk) + o->b));
        break;
    case OP_TICK:
        ASSERT_OK(tdm_wmgen_advance(g->gen));
        break;
    case OP_END:
        ASSERT_OK(tdm_wmgen_end(g->gen));
        break;
    default:
        ASSERT_TRUE(0);
    }
}

/* Bounded 5 ms, interval 100, idle after 250: records, silence long
 * enough to go idle, records again (ACTIVE), silence, end. */
static const op gen_script[] = {
    {OP_REC, 0, 1000}, {OP_REC, 0, 990},  {OP_TIME, 60, 0},  {OP_TICK, 0, 0},
    {OP_TIME, 50, 0},  {OP_TICK, 0, 0},   {OP_REC, 0, 1200}, {OP_TIME, 100, 0},
    {OP_TICK, 0, 0},   {OP_TIME, 100, 0}, {OP_TICK, 0, 0},   {OP_TIME, 100, 0},
    {OP_TICK, 0, 0},   {OP_TIME, 100, 0}, {OP_TICK, 0, 0},   {OP_TIME, 100, 0},
    {OP_TICK, 0, 0},   {OP_TIME, 100, 0}, {OP_TICK, 0, 0},   {OP_REC, 0, 1300},
    {OP_TIME, 30, 0},  {OP_TICK, 0, 0},   {OP_TIME, 80, 0},  {OP_TICK, 0, 0},
    {OP_REC, 0, 1250}, {OP_TIME, 100, 0}, {OP_TICK, 0, 0},   {OP_END, 0, 0},
};
#define N_GEN_SCRIPT ((int)(sizeof gen_script / sizeof gen_script[0]))

static tdm_err gen_snap(const void *obj, tdm__enc *e)
{
    return tdm__wmgen_snapshot(obj, e);
}

/* The cut-and-restore check for one strategy. */
static void gen_check(const tdm_wm_strategy *s, const char *must_contain)
{
    trace full = {{0}};
    gen_rig a;
    gen_rig_new(&a, s, 0, &full);
    for (int i = 0; i < N_GEN_SCRIPT; i++)
        gen_step(&a, &gen_script[i]);
    gen_rig_free(&a);
    if (!strstr(full.buf, must_contain))
        tdm_test_fail(__FILE__, __LINE__, "trace lacks \"%s\": %s",
                      must_contain, full.buf);

    for (int k = 0; k <= N_GEN_SCRIPT; k++) {
        trace got = {{0}};
        gen_rig p, r;
        tdm__enc e;
        size_t len;
        gen_rig_new(&p, s, 0, &got);
        for (int i = 0; i < k; i++)
            gen_step(&p, &gen_script[i]);
        tdm__enc_init(&e);
        ASSERT_OK(gen_snap(p.gen, &e));
        uint8_t *blob = finish(&e, &len);
        gen_rig_new(&r, s, tdm_clock_now(p.clk), &got);
        gen_rig_free(&p);
        tdm__dec d;
        tdm__dec_init(&d, blob, len);
        ASSERT_OK(tdm__wmgen_restore(r.gen, &d));
        ASSERT_OK(tdm__dec_done(&d));
        for (int i = k; i < N_GEN_SCRIPT; i++)
            gen_step(&r, &gen_script[i]);
        gen_rig_free(&r);
        tdm__free(blob);
        if (strcmp(got.buf, full.buf) != 0)
            tdm_test_fail(__FILE__, __LINE__, "cut at %d:\n got  %s\n want %s",
                          k, got.buf, full.buf);
    }
}

TDM_TEST(wmgen_periodic_idle_cut_everywhere)
{
    tdm_wm_strategy *s = bounded_strategy(5, 0, 250);
    /* Hand check of the uninterrupted run: idleness is declared and
     * revoked, so the cuts cover a running countdown and an idle
     * channel. */
    gen_check(s, "IDLE ACTIVE W1294");
    tdm_wm_strategy_destroy(s);
}

TDM_TEST(wmgen_on_event_cut_everywhere)
{
    tdm_wm_strategy *s = bounded_strategy(0, 1, 0);
    gen_check(s, "W999 W1199 W1299 W9223372036854775807 ");
    tdm_wm_strategy_destroy(s);
}

/* A blob restored at a later processing time: the periodic emission keeps
 * the delay it had left, counted from the restore moment. */
TDM_TEST(wmgen_schedule_resumes_from_restore_moment)
{
    tdm_wm_strategy *s = bounded_strategy(0, 0, 0);
    trace t = {{0}};
    gen_rig a, b;
    tdm__enc e;
    size_t len;
    gen_rig_new(&a, s, 0, &t);
    tdm_record_set_ts(a.rec, 500);
    ASSERT_OK(tdm_wmgen_on_event(a.gen, a.rec));
    ASSERT_OK(tdm_clock_set(a.clk, 70)); /* 30 ms left to the first tick */
    tdm__enc_init(&e);
    ASSERT_OK(tdm__wmgen_snapshot(a.gen, &e));
    uint8_t *blob = finish(&e, &len);
    gen_rig_new(&b, s, 1000000, &t);
    tdm__dec d;
    tdm__dec_init(&d, blob, len);
    ASSERT_OK(tdm__wmgen_restore(b.gen, &d));
    ASSERT_OK(tdm_clock_set(b.clk, 1000029));
    ASSERT_OK(tdm_wmgen_advance(b.gen));
    ASSERT_STR_EQ(t.buf, "");
    ASSERT_OK(tdm_clock_set(b.clk, 1000030));
    ASSERT_OK(tdm_wmgen_advance(b.gen));
    ASSERT_STR_EQ(t.buf, "W499 ");
    tdm__free(blob);
    gen_rig_free(&a);
    gen_rig_free(&b);
    tdm_wm_strategy_destroy(s);
}

/* ---- Custom generators cannot be saved ---- */

static void custom_periodic(void *ud, void *state, tdm_wm_output *out)
{
    (void)ud;
    (void)state;
    tdm_wm_output_emit(out, 1);
}

TDM_TEST(custom_generator_refused)
{
    tdm_wm_generator_methods m;
    memset(&m, 0, sizeof m);
    m.version = 1;
    m.on_periodic_emit = custom_periodic;
    tdm_wm_strategy *s = NULL;
    ASSERT_OK(tdm_wm_strategy_new_custom(&m, NULL, &s, NULL, 0));
    trace t = {{0}};
    gen_rig g;
    gen_rig_new(&g, s, 0, &t);
    tdm__enc e;
    tdm__enc_init(&e);
    ASSERT_ERR(tdm__wmgen_snapshot(g.gen, &e), TDM_ERR_UNSUPPORTED);
    tdm__enc_free(&e);
    tdm_reader *r = NULL;
    ASSERT_OK(tdm_reader_new(2, s, g.clk, trace_cb, &t, &r));
    tdm__enc_init(&e);
    ASSERT_ERR(tdm__reader_snapshot(r, &e), TDM_ERR_UNSUPPORTED);
    tdm__enc_free(&e);
    tdm_reader_destroy(r);
    gen_rig_free(&g);
    tdm_wm_strategy_destroy(s);
}

/* ---- Reader ---- */

typedef struct reader_rig {
    tdm_clock *clk;
    tdm_reader *r;
    tdm_record *rec;
    bool align;
} reader_rig;

static void reader_rig_new(reader_rig *g, const tdm_wm_strategy *s,
                           int n_splits, bool align, tdm_time_ms now, trace *t)
{
    ASSERT_OK(tdm_clock_new_manual(now, &g->clk));
    ASSERT_OK(tdm_reader_new(n_splits, s, g->clk, trace_cb, t, &g->r));
    if (align)
        ASSERT_OK(tdm_reader_set_alignment(g->r, 0, 100, NULL, 0));
    ASSERT_OK(tdm_record_new(&g->rec));
    g->align = align;
}

static void reader_rig_free(reader_rig *g)
{
    tdm_reader_destroy(g->r);
    tdm_record_destroy(g->rec);
    tdm_clock_destroy(g->clk);
}

/* Every call's status and the split's watermark go into the trace too,
 * so a restore that loses a split's state shows even when the combined
 * output hides it. */
static void reader_step(reader_rig *g, const op *o, trace *t)
{
    switch (o->kind) {
    case OP_REC:
        tdm_record_set_ts(g->rec, o->c);
        put(t, "[%s] ", tdm_err_name(tdm_reader_record(g->r, o->b, g->rec)));
        break;
    case OP_TIME:
        ASSERT_OK(tdm_clock_set(g->clk, tdm_clock_now(g->clk) + o->b));
        break;
    case OP_TICK:
        ASSERT_OK(tdm_reader_advance(g->r));
        break;
    case OP_WM:
        ASSERT_OK(tdm_reader_split_watermark(g->r, o->b, o->c));
        break;
    case OP_STATUS:
        ASSERT_OK(tdm_reader_split_status(g->r, o->b, (int)o->c));
        break;
    case OP_FINISH:
        ASSERT_OK(tdm_reader_split_finished(g->r, o->b));
        break;
    case OP_ANNOUNCE:
        ASSERT_OK(tdm_reader_announce(g->r, o->c));
        break;
    case OP_END:
        ASSERT_OK(tdm_reader_end(g->r));
        break;
    default:
        ASSERT_TRUE(0);
    }
    put(t, "{");
    for (int i = 0; i < 3; i++)
        put(t, "%" PRId64 "/%d/%d ", tdm_reader_split_watermark_get(g->r, i),
            tdm_reader_split_is_idle(g->r, i),
            tdm_reader_split_is_paused(g->r, i));
    tdm_time_ms total, stretch = tdm_reader_fallback_time(g->r, &total);
    put(t, "%d F%d/%" PRId64 "/%" PRId64 "/%" PRId64 "} ",
        tdm_reader_is_paused(g->r), tdm_reader_fallback_driving(g->r), stretch,
        total, tdm_reader_data_watermark(g->r));
}

/* Three splits, bounded 0, interval 100, idle after 150, alignment with
 * drift 0 and reports every 100: uneven splits, a split going idle by
 * its countdown and coming back, explicit watermarks and status, an
 * announcement that pauses a split and the reader, one that resumes
 * them, a finished split, then the end. */
static const op reader_script[] = {
    {OP_REC, 0, 100},      {OP_REC, 1, 200},       {OP_REC, 2, 150},
    {OP_TIME, 100, 0},     {OP_TICK, 0, 0},        {OP_REC, 0, 300},
    {OP_REC, 1, 250},      {OP_TIME, 100, 0},      {OP_TICK, 0, 0},
    {OP_ANNOUNCE, 0, 200}, {OP_REC, 0, 320},       {OP_REC, 1, 260},
    {OP_TIME, 100, 0},     {OP_TICK, 0, 0},        {OP_TIME, 100, 0},
    {OP_TICK, 0, 0},       {OP_ANNOUNCE, 0, 1000}, {OP_REC, 1, 400},
    {OP_REC, 0, 410},      {OP_TIME, 100, 0},      {OP_TICK, 0, 0},
    {OP_WM, 1, 500},       {OP_STATUS, 0, 1},      {OP_TIME, 100, 0},
    {OP_TICK, 0, 0},       {OP_STATUS, 0, 0},      {OP_FINISH, 2, 0},
    {OP_REC, 0, 600},      {OP_REC, 1, 650},       {OP_TIME, 100, 0},
    {OP_TICK, 0, 0},       {OP_TIME, 100, 0},      {OP_TICK, 0, 0},
    {OP_TIME, 100, 0},     {OP_TICK, 0, 0},        {OP_REC, 1, 700},
    {OP_TIME, 100, 0},     {OP_TICK, 0, 0},        {OP_END, 0, 0},
    {OP_TIME, 100, 0},     {OP_TICK, 0, 0},
};
#define N_READER_SCRIPT ((int)(sizeof reader_script / sizeof reader_script[0]))

static void reader_check(bool align, bool fallback, const char *must_contain)
{
    tdm_wm_strategy *s = bounded_strategy(0, 0, 150);
    if (fallback)
        ASSERT_OK(tdm_wm_strategy_set_fallback(s, 150, 150, NULL, 0));
    trace full = {{0}};
    reader_rig a;
    reader_rig_new(&a, s, 3, align, 0, &full);
    for (int i = 0; i < N_READER_SCRIPT; i++) {
        if (!align && reader_script[i].kind == OP_ANNOUNCE)
            continue;
        reader_step(&a, &reader_script[i], &full);
    }
    reader_rig_free(&a);
    if (!strstr(full.buf, must_contain))
        tdm_test_fail(__FILE__, __LINE__, "trace lacks \"%s\": %s",
                      must_contain, full.buf);

    for (int k = 0; k <= N_READER_SCRIPT; k++) {
        trace got = {{0}};
        reader_rig p, r;
        tdm__enc e;
        size_t len;
        reader_rig_new(&p, s, 3, align, 0, &got);
        for (int i = 0; i < k; i++) {
            if (!align && reader_script[i].kind == OP_ANNOUNCE)
                continue;
            reader_step(&p, &reader_script[i], &got);
        }
        tdm__enc_init(&e);
        ASSERT_OK(tdm__reader_snapshot(p.r, &e));
        uint8_t *blob = finish(&e, &len);
        reader_rig_new(&r, s, 3, align, tdm_clock_now(p.clk), &got);
        reader_rig_free(&p);
        tdm__dec d;
        tdm__dec_init(&d, blob, len);
        ASSERT_OK(tdm__reader_restore(r.r, &d));
        ASSERT_OK(tdm__dec_done(&d));
        for (int i = k; i < N_READER_SCRIPT; i++) {
            if (!align && reader_script[i].kind == OP_ANNOUNCE)
                continue;
            reader_step(&r, &reader_script[i], &got);
        }
        reader_rig_free(&r);
        tdm__free(blob);
        if (strcmp(got.buf, full.buf) != 0)
            tdm_test_fail(__FILE__, __LINE__, "cut at %d:\n got  %s\n want %s",
                          k, got.buf, full.buf);
    }
    tdm_wm_strategy_destroy(s);
}

TDM_TEST(reader_cut_everywhere)
{
    /* Split 2 goes idle by its countdown (150 ms without a record). */
    reader_check(false, false, " 149/1/0 ");
}

TDM_TEST(reader_aligned_cut_everywhere)
{
    /* The announcement of 200 pauses split 0 (at 300) and the reader. */
    reader_check(true, false, "SP0");
}

/* With a fallback watermark 150 ms behind the clock every 150 ms: it
 * lifts the output above the data while split 0 lags, and the data
 * takes it back; a restore anywhere keeps its schedule, its current
 * stretch and its total (F4). */
TDM_TEST(reader_fallback_cut_everywhere)
{
    reader_check(false, true, " F1/");
}

/* A reader created with no splits (Kafka) gets the checkpoint's splits;
 * one with more splits than the checkpoint is refused. */
TDM_TEST(reader_split_count)
{
    tdm_wm_strategy *s = bounded_strategy(0, 0, 0);
    trace t = {{0}};
    reader_rig a, b, c;
    tdm__enc e;
    size_t len;
    reader_rig_new(&a, s, 2, false, 0, &t);
    tdm_record_set_ts(a.rec, 40);
    ASSERT_OK(tdm_reader_record(a.r, 1, a.rec));
    tdm__enc_init(&e);
    ASSERT_OK(tdm__reader_snapshot(a.r, &e));
    uint8_t *blob = finish(&e, &len);
    reader_rig_new(&b, s, 0, false, 0, &t);
    tdm__dec d;
    tdm__dec_init(&d, blob, len);
    ASSERT_OK(tdm__reader_restore(b.r, &d));
    ASSERT_EQ(tdm_reader_split_watermark_get(b.r, 1), TDM_TIME_MIN);
    ASSERT_OK(tdm_clock_set(b.clk, 200));
    ASSERT_OK(tdm_reader_split_watermark(b.r, 0, 100));
    ASSERT_OK(tdm_reader_advance(b.r));
    ASSERT_EQ(tdm_reader_split_watermark_get(b.r, 1), 39);
    ASSERT_EQ(tdm_reader_watermark(b.r), 39);
    reader_rig_new(&c, s, 3, false, 0, &t);
    tdm__dec_init(&d, blob, len);
    ASSERT_ERR(tdm__reader_restore(c.r, &d), TDM_ERR_PARSE);
    size_t off;
    const char *why;
    ASSERT_ERR(tdm__dec_error(&d, &off, &why), TDM_ERR_PARSE);
    ASSERT_STR_EQ(why, "split count differs");
    tdm__free(blob);
    reader_rig_free(&a);
    reader_rig_free(&b);
    reader_rig_free(&c);
    tdm_wm_strategy_destroy(s);
}

/* A split moved alone to another reader (restore at another parallelism)
 * keeps its partial watermark and idleness. */
TDM_TEST(reader_split_alone)
{
    tdm_wm_strategy *s = bounded_strategy(0, 0, 0);
    trace t = {{0}};
    reader_rig a, b;
    tdm__enc e;
    size_t len;
    reader_rig_new(&a, s, 2, false, 0, &t);
    tdm_record_set_ts(a.rec, 70);
    ASSERT_OK(tdm_reader_record(a.r, 1, a.rec));
    ASSERT_OK(tdm_clock_set(a.clk, 100));
    ASSERT_OK(tdm_reader_advance(a.r));
    ASSERT_OK(tdm_reader_split_status(a.r, 1, 1));
    tdm__enc_init(&e);
    ASSERT_OK(tdm__reader_split_snapshot(a.r, 1, &e));
    uint8_t *blob = finish(&e, &len);
    reader_rig_new(&b, s, 3, false, 0, &t);
    tdm__dec d;
    tdm__dec_init(&d, blob, len);
    ASSERT_OK(tdm__reader_split_restore(b.r, 2, &d));
    ASSERT_EQ(tdm_reader_split_watermark_get(b.r, 2), 69);
    ASSERT_EQ(tdm_reader_split_is_idle(b.r, 2), 1);
    ASSERT_EQ(tdm_reader_split_watermark_get(b.r, 0), TDM_TIME_MIN);
    tdm__dec_init(&d, blob, len);
    ASSERT_ERR(tdm__reader_split_restore(b.r, 3, &d), TDM_ERR_INVAL);
    tdm__free(blob);
    reader_rig_free(&a);
    reader_rig_free(&b);
    tdm_wm_strategy_destroy(s);
}

/* ---- Valve and combiner ---- */

static const op valve_script[] = {
    {OP_WM, 0, 10},    {OP_WM, 1, 20},    {OP_WM, 2, 25},    {OP_WM, 0, 30},
    {OP_STATUS, 1, 1}, {OP_STATUS, 0, 1}, {OP_STATUS, 1, 0}, {OP_STATUS, 0, 0},
    {OP_WM, 1, 35},    {OP_STATUS, 2, 1}, {OP_STATUS, 1, 1}, {OP_STATUS, 0, 1},
    {OP_STATUS, 2, 0}, {OP_WM, 2, 31},    {OP_WM, 2, 40},    {OP_STATUS, 0, 0},
    {OP_WM, 0, 45},    {OP_STATUS, 1, 0}, {OP_WM, 1, 50},    {OP_END, 0, 0},
};
#define N_VALVE_SCRIPT ((int)(sizeof valve_script / sizeof valve_script[0]))

static void valve_step(tdm_valve *v, const op *o, trace *t)
{
    if (o->kind == OP_WM)
        ASSERT_OK(tdm_valve_watermark(v, o->b, o->c));
    else if (o->kind == OP_STATUS)
        ASSERT_OK(tdm_valve_status(v, o->b, (int)o->c));
    else
        ASSERT_OK(tdm_valve_end(v));
    put(t, "{");
    for (int i = 0; i < 3; i++)
        put(t, "%" PRId64 "/%d ", tdm_valve_channel_watermark(v, i),
            tdm_valve_channel_is_idle(v, i));
    put(t, "} ");
}

static void comb_step(tdm_combiner *c, const op *o, trace *t)
{
    (void)t;
    if (o->kind == OP_WM)
        ASSERT_OK(tdm_combiner_watermark(c, o->b, o->c));
    else if (o->kind == OP_STATUS)
        ASSERT_OK(tdm_combiner_status(c, o->b, (int)o->c));
    else
        ASSERT_OK(tdm_combiner_watermark(c, 0, TDM_TIME_MAX));
}

TDM_TEST(valve_cut_everywhere)
{
    trace full = {{0}};
    tdm_valve *v;
    ASSERT_OK(tdm_valve_new(3, trace_cb, &full, &v));
    for (int i = 0; i < N_VALVE_SCRIPT; i++)
        valve_step(v, &valve_script[i], &full);
    tdm_valve_destroy(v);
    /* By hand (valve.c's timeline): 10, 20, 25; ch1 and ch0 idle with
     * ch2 active: nothing; all idle: flush 35 and IDLE; ch2 back at 25
     * (unaligned): ACTIVE. */
    ASSERT_TRUE(strstr(full.buf, "W35 ") && strstr(full.buf, "IDLE"));
    for (int k = 0; k <= N_VALVE_SCRIPT; k++) {
        trace got = {{0}};
        tdm_valve *p, *r;
        tdm__enc e;
        size_t len;
        ASSERT_OK(tdm_valve_new(3, trace_cb, &got, &p));
        for (int i = 0; i < k; i++)
            valve_step(p, &valve_script[i], &got);
        tdm__enc_init(&e);
        ASSERT_OK(tdm__valve_snapshot(p, &e));
        uint8_t *blob = finish(&e, &len);
        tdm_valve_destroy(p);
        ASSERT_OK(tdm_valve_new(3, trace_cb, &got, &r));
        tdm__dec d;
        tdm__dec_init(&d, blob, len);
        ASSERT_OK(tdm__valve_restore(r, &d));
        ASSERT_OK(tdm__dec_done(&d));
        for (int i = k; i < N_VALVE_SCRIPT; i++)
            valve_step(r, &valve_script[i], &got);
        tdm_valve_destroy(r);
        tdm__free(blob);
        if (strcmp(got.buf, full.buf) != 0)
            tdm_test_fail(__FILE__, __LINE__, "cut at %d:\n got  %s\n want %s",
                          k, got.buf, full.buf);
    }
}

TDM_TEST(combiner_cut_everywhere)
{
    trace full = {{0}};
    tdm_combiner *c;
    ASSERT_OK(tdm_combiner_new(3, trace_cb, &full, &c));
    for (int i = 0; i < N_VALVE_SCRIPT; i++)
        comb_step(c, &valve_script[i], &full);
    tdm_combiner_destroy(c);
    ASSERT_TRUE(strstr(full.buf, "IDLE") != NULL);
    for (int k = 0; k <= N_VALVE_SCRIPT; k++) {
        trace got = {{0}};
        tdm_combiner *p, *r;
        tdm__enc e;
        size_t len;
        ASSERT_OK(tdm_combiner_new(3, trace_cb, &got, &p));
        for (int i = 0; i < k; i++)
            comb_step(p, &valve_script[i], &got);
        tdm__enc_init(&e);
        ASSERT_OK(tdm__combiner_snapshot(p, &e));
        uint8_t *blob = finish(&e, &len);
        tdm_combiner_destroy(p);
        ASSERT_OK(tdm_combiner_new(3, trace_cb, &got, &r));
        tdm__dec d;
        tdm__dec_init(&d, blob, len);
        ASSERT_OK(tdm__combiner_restore(r, &d));
        for (int i = k; i < N_VALVE_SCRIPT; i++)
            comb_step(r, &valve_script[i], &got);
        tdm_combiner_destroy(r);
        tdm__free(blob);
        if (strcmp(got.buf, full.buf) != 0)
            tdm_test_fail(__FILE__, __LINE__, "cut at %d:\n got  %s\n want %s",
                          k, got.buf, full.buf);
    }
}

/* ---- Corrupt blobs ---- */

typedef tdm_err (*restore_fn)(void *obj, tdm__dec *d);
typedef void *(*make_fn)(void *ud);
typedef void (*drop_fn)(void *obj);

/* Every truncation of @p blob must be refused with PARSE; every single
 * flipped byte is refused with PARSE or accepted (a flipped watermark is
 * still a watermark), never anything else. */
static void corrupt_check(const uint8_t *blob, size_t len, make_fn make,
                          restore_fn restore, drop_fn drop, void *ud)
{
    uint8_t *copy = malloc(len ? len : 1);
    ASSERT_TRUE(copy != NULL);
    for (size_t cut = 0; cut < len; cut++) {
        void *obj = make(ud);
        memcpy(copy, blob, cut);
        tdm__dec d;
        tdm__dec_init(&d, copy, cut);
        tdm_err err = restore(obj, &d);
        if (err == TDM_OK)
            err = tdm__dec_done(&d);
        if (err != TDM_ERR_PARSE)
            tdm_test_fail(__FILE__, __LINE__, "cut at %zu: %s", cut,
                          tdm_err_name(err));
        size_t off;
        const char *why;
        ASSERT_ERR(tdm__dec_error(&d, &off, &why), TDM_ERR_PARSE);
        ASSERT_TRUE(off <= cut && why != NULL);
        drop(obj);
    }
    for (size_t at = 0; at < len; at++) {
        for (int bit = 0; bit < 8; bit++) {
            void *obj = make(ud);
            memcpy(copy, blob, len);
            copy[at] ^= (uint8_t)(1u << bit);
            tdm__dec d;
            tdm__dec_init(&d, copy, len);
            tdm_err err = restore(obj, &d);
            if (err != TDM_OK && err != TDM_ERR_PARSE)
                tdm_test_fail(__FILE__, __LINE__, "flip %zu.%d: %s", at, bit,
                              tdm_err_name(err));
            drop(obj);
        }
    }
    free(copy);
}

typedef struct time_ud {
    tdm_clock *clk;
    tdm_wm_strategy *s;
    trace t;
} time_ud;

static void *make_reader(void *ud)
{
    time_ud *u = ud;
    tdm_reader *r = NULL;
    ASSERT_OK(tdm_reader_new(3, u->s, u->clk, trace_cb, &u->t, &r));
    ASSERT_OK(tdm_reader_set_alignment(r, 0, 100, NULL, 0));
    u->t.buf[0] = '\0';
    return r;
}
static tdm_err restore_reader(void *obj, tdm__dec *d)
{
    return tdm__reader_restore(obj, d);
}
static void drop_reader(void *obj)
{
    tdm_reader_destroy(obj);
}
static void *make_gen(void *ud)
{
    time_ud *u = ud;
    tdm_wmgen *g = NULL;
    ASSERT_OK(tdm_wmgen_new(u->s, u->clk, trace_cb, &u->t, &g));
    return g;
}
static tdm_err restore_gen(void *obj, tdm__dec *d)
{
    return tdm__wmgen_restore(obj, d);
}
static void drop_gen(void *obj)
{
    tdm_wmgen_destroy(obj);
}
static void *make_valve(void *ud)
{
    time_ud *u = ud;
    tdm_valve *v = NULL;
    ASSERT_OK(tdm_valve_new(3, trace_cb, &u->t, &v));
    return v;
}
static tdm_err restore_valve(void *obj, tdm__dec *d)
{
    return tdm__valve_restore(obj, d);
}
static void drop_valve(void *obj)
{
    tdm_valve_destroy(obj);
}

TDM_TEST(corrupt_blobs_refused)
{
    time_ud u;
    memset(&u, 0, sizeof u);
    u.s = bounded_strategy(0, 0, 150);
    ASSERT_OK(tdm_clock_new_manual(0, &u.clk));
    /* A reader in the middle of the aligned script. */
    trace t = {{0}};
    reader_rig a;
    reader_rig_new(&a, u.s, 3, true, 0, &t);
    for (int i = 0; i < 20; i++)
        reader_step(&a, &reader_script[i], &t);
    tdm__enc e;
    size_t len;
    tdm__enc_init(&e);
    ASSERT_OK(tdm__reader_snapshot(a.r, &e));
    uint8_t *blob = finish(&e, &len);
    corrupt_check(blob, len, make_reader, restore_reader, drop_reader, &u);
    tdm__free(blob);
    reader_rig_free(&a);

    gen_rig g;
    gen_rig_new(&g, u.s, 0, &t);
    for (int i = 0; i < 12; i++)
        gen_step(&g, &gen_script[i]);
    tdm__enc_init(&e);
    ASSERT_OK(tdm__wmgen_snapshot(g.gen, &e));
    blob = finish(&e, &len);
    corrupt_check(blob, len, make_gen, restore_gen, drop_gen, &u);
    tdm__free(blob);
    gen_rig_free(&g);

    tdm_valve *v;
    ASSERT_OK(tdm_valve_new(3, trace_cb, &t, &v));
    for (int i = 0; i < 10; i++)
        valve_step(v, &valve_script[i], &t);
    tdm__enc_init(&e);
    ASSERT_OK(tdm__valve_snapshot(v, &e));
    blob = finish(&e, &len);
    corrupt_check(blob, len, make_valve, restore_valve, drop_valve, &u);
    tdm__free(blob);
    tdm_valve_destroy(v);

    tdm_clock_destroy(u.clk);
    tdm_wm_strategy_destroy(u.s);
}

/* Old reader k's only split becomes split k of the new reader. */
static int split_k(void *ud, int i)
{
    return *(const int *)ud + i;
}

/* F4 at another parallelism: two readers of one split each, both lifted
 * by the fallback to 9500 (data 4999 and 5999), dealt to one new reader:
 * it keeps the lift (the lower of the old outputs), the fallback drives
 * it, its data watermark is the new combination, and the next fallback
 * tick (1000 after the last) lifts it further. */
TDM_TEST(reader_fallback_lift_survives_a_rescale)
{
    tdm_wm_strategy *s = bounded_strategy(0, 0, 0);
    ASSERT_OK(tdm_wm_strategy_set_fallback(s, 500, 1000, NULL, 0));
    trace t = {{0}};
    reader_rig old[2], n;
    tdm_time_ms ts[2] = {5000, 6000};
    reader_rig_new(&n, s, 0, false, 10000, &t);
    for (int k = 0; k < 2; k++) {
        reader_rig_new(&old[k], s, 1, false, 0, &t);
        tdm_record_set_ts(old[k].rec, ts[k]);
        ASSERT_OK(tdm_reader_record(old[k].r, 0, old[k].rec));
        ASSERT_OK(tdm_clock_set(old[k].clk, 10000));
        ASSERT_OK(tdm_reader_advance(old[k].r));
        ASSERT_EQ(tdm_reader_watermark(old[k].r), 9500);
        ASSERT_EQ(tdm_reader_fallback_driving(old[k].r), 1);
        tdm__enc e;
        size_t len;
        tdm__enc_init(&e);
        ASSERT_OK(tdm__reader_snapshot(old[k].r, &e));
        uint8_t *blob = finish(&e, &len);
        tdm__dec d;
        tdm__dec_init(&d, blob, len);
        ASSERT_OK(tdm__reader_restore_splits(n.r, &d, split_k, &k));
        tdm__free(blob);
        reader_rig_free(&old[k]);
    }
    ASSERT_OK(tdm__reader_restore_finish(n.r));
    ASSERT_EQ(tdm_reader_watermark(n.r), 9500);
    ASSERT_EQ(tdm_reader_data_watermark(n.r), 4999);
    ASSERT_EQ(tdm_reader_fallback_driving(n.r), 1);
    t.buf[0] = '\0';
    ASSERT_OK(tdm_clock_set(n.clk, 11000));
    ASSERT_OK(tdm_reader_advance(n.r));
    ASSERT_EQ(tdm_reader_watermark(n.r), 10500);
    reader_rig_free(&n);
    tdm_wm_strategy_destroy(s);
}
