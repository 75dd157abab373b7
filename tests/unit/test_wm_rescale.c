/* SPDX-License-Identifier: MIT */
/* test_wm_rescale.c - the watermark layer restored at another
 * parallelism (issue 8, "Rescale"): the split states of the readers of
 * two subtasks, dealt to one and to three new readers
 * (tdm__reader_restore_splits / _finish), must behave like readers that
 * read those partitions at the new parallelism from the start.
 *
 * The method: partitions 0..5 are dealt as the runtime deals them
 * (partition g to subtask g % P, local split g / P).  A script of steps
 * on partitions (records, finishes, idle calls) and on every reader
 * (clock moves, ticks, alignment announcements) runs uninterrupted at
 * the new parallelism: the reference.  For every cut k, the script's
 * first k steps run at parallelism 2, every reader is snapshotted, the
 * blobs are restored into fresh readers at the new parallelism (clock
 * at the same reading), and both the restored readers and the
 * reference's readers cut at k run the rest.  At the cut the restored
 * readers' watermark, idle output and pauses must be the reference's;
 * after it every event must be the reference's.  The expected values
 * come from the reference readers, never from the restore.  Where a
 * reference reader still shows an older value than its splits'
 * combination (a split finished since it last combined, or back from
 * idleness below it), a reader made at the cut from other readers'
 * splits cannot know that history: there it must start at the
 * combination and agree with the reference from the reference's next
 * combination on (docs/checkpoints.md, "Restore at another
 * parallelism"); each test bounds how many such readers its script
 * has.
 */
#include <stdarg.h>

#include "harness.h"
#include "core.h"
#include "state/ckpt_codec.h"
#include "time/wm.h"

#define N_PARTS 6
#define MAX_P 3

/* ---- Traces ---- */

typedef struct trace {
    char buf[4096];
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

/* Every event a reader emits, as text.  Split events name the split's
 * partition (the same partition is another local split at another
 * parallelism): the trace knows its reader's subtask and P. */
typedef struct sink {
    trace t;
    int k, P;
} sink;

static void trace_cb(void *opaque, const tdm_event *ev)
{
    sink *s = opaque;
    trace *t = &s->t;
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
        put(t, "SP%d ", s->k + tdm_event_index(ev) * s->P);
        break;
    case TDM_EVENT_SPLIT_RESUMED:
        put(t, "SR%d ", s->k + tdm_event_index(ev) * s->P);
        break;
    default:
        put(t, "? ");
        break;
    }
}

/* ---- A parallel deployment: P readers sharing one clock ---- */

typedef struct deploy {
    int P;
    tdm_clock *clk;
    tdm_reader *r[MAX_P];
    sink out[MAX_P];
    tdm_record *rec;
} deploy;

typedef struct setup {
    tdm_wm_strategy *s;
    bool align; /* alignment with max drift 20, update interval 150 */
} setup;

/* Readers for parallelism @p P at clock 0, with their splits made
 * (@p with_splits) or not (a restore adds them). */
static void deploy_new(deploy *dp, const setup *su, int P, bool with_splits)
{
    memset(dp, 0, sizeof *dp);
    dp->P = P;
    ASSERT_OK(tdm_clock_new_manual(0, &dp->clk));
    ASSERT_OK(tdm_record_new(&dp->rec));
    for (int k = 0; k < P; k++) {
        int n = 0;
        for (int g = k; with_splits && g < N_PARTS; g += P)
            n++;
        dp->out[k].k = k;
        dp->out[k].P = P;
        ASSERT_OK(tdm_reader_new(n, su->s, dp->clk, trace_cb, &dp->out[k],
                                 &dp->r[k]));
        if (su->align)
            ASSERT_OK(tdm_reader_set_alignment(dp->r[k], 20, 150, NULL, 0));
    }
}

static void deploy_free(deploy *dp)
{
    for (int k = 0; k < dp->P; k++)
        tdm_reader_destroy(dp->r[k]);
    tdm_record_destroy(dp->rec);
    tdm_clock_destroy(dp->clk);
}

static void deploy_clear_traces(deploy *dp)
{
    for (int k = 0; k < dp->P; k++)
        dp->out[k].t.buf[0] = 0;
}

/* ---- Scripts ---- */

enum {
    OP_REC,      /* record on partition a with timestamp b */
    OP_TIME,     /* clock += b */
    OP_TICK,     /* every reader advances (periodic emission, reports) */
    OP_FINISH,   /* partition a finished */
    OP_STATUS,   /* partition a idle = b (the reader's own call) */
    OP_ANNOUNCE, /* alignment: every reader gets maximum b */
    OP_END
};

typedef struct op {
    int kind;
    int a;
    int64_t b;
} op;

static void step(deploy *dp, const op *o)
{
    int P = dp->P;
    tdm_reader *r =
        o->kind == OP_REC || o->kind == OP_FINISH || o->kind == OP_STATUS
            ? dp->r[o->a % P]
            : NULL;
    int split = o->a / P;
    switch (o->kind) {
    case OP_REC:
        tdm_record_set_ts(dp->rec, o->b);
        /* A paused split still gets what was read before the pause. */
        ASSERT_OK(tdm_reader_record(r, split, dp->rec));
        break;
    case OP_TIME:
        ASSERT_OK(tdm_clock_set(dp->clk, tdm_clock_now(dp->clk) + o->b));
        break;
    case OP_TICK:
        for (int k = 0; k < P; k++)
            ASSERT_OK(tdm_reader_advance(dp->r[k]));
        break;
    case OP_FINISH:
        ASSERT_OK(tdm_reader_split_finished(r, split));
        break;
    case OP_STATUS:
        ASSERT_OK(tdm_reader_split_status(r, split, (int)o->b));
        break;
    case OP_ANNOUNCE:
        for (int k = 0; k < P; k++)
            ASSERT_OK(tdm_reader_announce(dp->r[k], o->b));
        break;
    default:
        ASSERT_OK(TDM_ERR_INVAL);
    }
}

static int script_len(const op *script)
{
    int n = 0;
    while (script[n].kind != OP_END)
        n++;
    return n;
}

/* ---- Restore at another parallelism ---- */

/* Old subtask k of old_P dealt its partitions as the runtime does; the
 * new reader k2 of new_P takes those it now reads. */
typedef struct map_ctx {
    int k, old_P, k2, new_P;
} map_ctx;

static int map_split(void *ud, int i)
{
    const map_ctx *m = ud;
    int g = m->k + i * m->old_P;
    return g % m->new_P == m->k2 ? g / m->new_P : -1;
}

/* Snapshots every reader of @p old; the blobs go to @p blob/@p len. */
static void snapshot_all(const deploy *old, uint8_t **blob, size_t *len)
{
    for (int k = 0; k < old->P; k++) {
        tdm__enc e;
        tdm__enc_init(&e);
        ASSERT_OK(tdm__reader_snapshot(old->r[k], &e));
        ASSERT_OK(tdm__enc_finish(&e, &blob[k], &len[k]));
    }
}

/* Restores @p blob (old_P readers) into @p dp (fresh, new parallelism,
 * clock set by the caller). */
static void restore_all(deploy *dp, int old_P, uint8_t **blob, size_t *len)
{
    for (int k2 = 0; k2 < dp->P; k2++) {
        for (int k = 0; k < old_P; k++) {
            map_ctx m = {k, old_P, k2, dp->P};
            tdm__dec d;
            tdm__dec_init(&d, blob[k], len[k]);
            ASSERT_OK(tdm__reader_restore_splits(dp->r[k2], &d, map_split, &m));
        }
        ASSERT_OK(tdm__reader_restore_finish(dp->r[k2]));
    }
}

/* Whether reference reader @p k shows an older value than the current
 * combination of its splits (minimum over live non-idle ones, maximum
 * if all are idle), or an idle output that does not follow from them:
 * a split finished since the reader last combined (S5) or one back from
 * idleness below its output.  A reader made at the cut from other
 * readers' splits has no such history (reader.c); computed here from
 * the reference's splits and the script's finishes. */
static bool ref_is_stale(const deploy *ref, int k, const bool *finished,
                         tdm_time_ms *comb_out)
{
    bool any = false, all_idle = true;
    tdm_time_ms min = TDM_TIME_MAX, max = TDM_TIME_MIN;
    for (int g = k; g < N_PARTS; g += ref->P) {
        if (finished[g])
            continue;
        int l = g / ref->P;
        tdm_time_ms w = tdm_reader_split_watermark_get(ref->r[k], l);
        any = true;
        if (w > max)
            max = w;
        if (tdm_reader_split_is_idle(ref->r[k], l) != 1) {
            all_idle = false;
            if (w < min)
                min = w;
        }
    }
    tdm_time_ms comb = !any ? TDM_TIME_MIN : all_idle ? max : min;
    *comb_out = comb;
    return tdm_reader_watermark(ref->r[k]) != comb ||
           tdm__reader_output_idle(ref->r[k]) != (any && all_idle);
}

/* @p in without its watermarks at or below @p floor. */
static void drop_watermarks_upto(const char *in, tdm_time_ms floor, char *out,
                                 size_t n)
{
    size_t used = 0;
    out[0] = 0;
    while (*in) {
        const char *end = strchr(in, ' ');
        size_t len = end ? (size_t)(end - in) + 1 : strlen(in);
        bool drop = in[0] == 'W' && strtoll(in + 1, NULL, 10) <= floor;
        if (!drop && used + len < n) {
            memcpy(out + used, in, len);
            used += len;
            out[used] = 0;
        }
        in += len;
    }
}

/* The whole method (file comment) for one script, one strategy and one
 * new parallelism.
 *
 * At a cut where a reference reader is stale (above) and the new
 * readers are made of several old readers' splits (not at parallelism
 * 2, where each takes back one whole reader), the restored reader
 * starts where the reference gets at its next combination: its
 * watermark must be the combination of the reference's splits, and
 * after the cut the traces must agree but for the reference's
 * watermarks up to that value (at most @p max_stale such readers over
 * all cuts). */
static void check_rescale(const setup *su, const op *script, int new_P,
                          int max_stale)
{
    int n = script_len(script), n_stale = 0;
    for (int cut = 0; cut <= n; cut++) {
        deploy ref, old, got;
        uint8_t *blob[MAX_P];
        size_t len[MAX_P];
        bool finished[N_PARTS] = {false};
        tdm_time_ms start[MAX_P];

        deploy_new(&ref, su, new_P, true);
        deploy_new(&old, su, 2, true);
        for (int i = 0; i < cut; i++) {
            step(&ref, &script[i]);
            step(&old, &script[i]);
            if (script[i].kind == OP_FINISH)
                finished[script[i].a] = true;
        }
        bool stale[MAX_P] = {0};
        tdm_time_ms comb[MAX_P] = {0};
        for (int k = 0; k < new_P; k++) {
            stale[k] = new_P != 2 && ref_is_stale(&ref, k, finished, &comb[k]);
            n_stale += stale[k];
        }
        snapshot_all(&old, blob, len);
        deploy_new(&got, su, new_P, false);
        ASSERT_OK(tdm_clock_set(got.clk, tdm_clock_now(old.clk)));
        restore_all(&got, 2, blob, len);
        /* At the cut: what each restored reader starts with (and the
         * runtime announces) is the reference reader's state. */
        for (int k = 0; k < new_P; k++) {
            start[k] = tdm_reader_watermark(got.r[k]);
            if (stale[k]) {
                ASSERT_EQ(start[k], comb[k]);
                continue;
            }
            if (tdm_reader_watermark(got.r[k]) !=
                    tdm_reader_watermark(ref.r[k]) ||
                tdm__reader_output_idle(got.r[k]) !=
                    tdm__reader_output_idle(ref.r[k]))
                fprintf(stderr,
                        "cut %d reader %d of %d: W%" PRId64
                        " idle %d, the reference W%" PRId64 " idle %d\n",
                        cut, k, new_P, tdm_reader_watermark(got.r[k]),
                        tdm__reader_output_idle(got.r[k]),
                        tdm_reader_watermark(ref.r[k]),
                        tdm__reader_output_idle(ref.r[k]));
            ASSERT_EQ(tdm_reader_watermark(got.r[k]),
                      tdm_reader_watermark(ref.r[k]));
            ASSERT_EQ(tdm__reader_output_idle(got.r[k]),
                      tdm__reader_output_idle(ref.r[k]));
            ASSERT_EQ(tdm_reader_is_paused(got.r[k]),
                      tdm_reader_is_paused(ref.r[k]));
        }
        for (int k = 0; k < new_P; k++) {
            ASSERT_EQ(tdm__reader_split_count(got.r[k]),
                      tdm__reader_split_count(ref.r[k]));
            for (int l = 0; l < tdm__reader_split_count(ref.r[k]); l++) {
                ASSERT_EQ(tdm_reader_split_watermark_get(got.r[k], l),
                          tdm_reader_split_watermark_get(ref.r[k], l));
                ASSERT_EQ(tdm_reader_split_is_idle(got.r[k], l),
                          tdm_reader_split_is_idle(ref.r[k], l));
                ASSERT_EQ(tdm_reader_split_is_paused(got.r[k], l),
                          tdm_reader_split_is_paused(ref.r[k], l));
            }
        }
        /* The rest: event for event. */
        deploy_clear_traces(&ref);
        for (int i = cut; i < n; i++) {
            step(&ref, &script[i]);
            step(&got, &script[i]);
        }
        for (int k = 0; k < new_P; k++) {
            ASSERT_OK(tdm_reader_end(ref.r[k]));
            ASSERT_OK(tdm_reader_end(got.r[k]));
            char want[sizeof ref.out[k].t.buf];
            drop_watermarks_upto(ref.out[k].t.buf,
                                 stale[k] ? start[k] : TDM_TIME_MIN, want,
                                 sizeof want);
            if (strcmp(got.out[k].t.buf, want) != 0)
                fprintf(stderr,
                        "cut %d reader %d of %d:\n  got  %s\n"
                        "  want %s\n",
                        cut, k, new_P, got.out[k].t.buf, want);
            ASSERT_STR_EQ(got.out[k].t.buf, want);
        }
        for (int k = 0; k < 2; k++)
            tdm__free(blob[k]);
        deploy_free(&ref);
        deploy_free(&old);
        deploy_free(&got);
    }
    ASSERT_TRUE(n_stale <= max_stale);
}

static tdm_wm_strategy *bounded(tdm_time_ms bound, int on_event,
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

/* ---- Scripts ---- */

/* Out-of-order records on six partitions, a partition that finishes
 * (followed by a tick, as the runtime's loop ticks after every poll),
 * records at or below a partition's watermark. */
static const op on_event_script[] = {
    {OP_REC, 0, 100}, {OP_REC, 1, 105},  {OP_REC, 2, 98},   {OP_REC, 3, 120},
    {OP_REC, 4, 101}, {OP_REC, 5, 99},   {OP_TIME, 0, 50},  {OP_TICK, 0, 0},
    {OP_REC, 0, 130}, {OP_REC, 2, 125},  {OP_REC, 1, 90},   {OP_REC, 3, 140},
    {OP_REC, 4, 135}, {OP_REC, 5, 131},  {OP_REC, 5, 129},  {OP_TIME, 0, 60},
    {OP_TICK, 0, 0},  {OP_FINISH, 2, 0}, {OP_TIME, 0, 60},  {OP_TICK, 0, 0},
    {OP_REC, 0, 160}, {OP_REC, 1, 150},  {OP_REC, 3, 170},  {OP_REC, 4, 155},
    {OP_REC, 5, 152}, {OP_REC, 0, 158},  {OP_TIME, 0, 100}, {OP_TICK, 0, 0},
    {OP_REC, 0, 200}, {OP_REC, 1, 210},  {OP_REC, 3, 205},  {OP_REC, 4, 199},
    {OP_REC, 5, 220}, {OP_FINISH, 4, 0}, {OP_TIME, 0, 100}, {OP_TICK, 0, 0},
    {OP_REC, 0, 240}, {OP_REC, 5, 230},  {OP_END, 0, 0},
};

/* Periodic emission with idleness: partition 5 falls silent (idle after
 * 250 ms of processing time without records) and comes back; partition
 * 3 is declared idle by the reader and active again. */
static const op idle_script[] = {
    {OP_REC, 0, 100},  {OP_REC, 1, 105},  {OP_REC, 2, 98},   {OP_REC, 3, 120},
    {OP_REC, 4, 101},  {OP_REC, 5, 99},   {OP_TIME, 0, 100}, {OP_TICK, 0, 0},
    {OP_REC, 0, 130},  {OP_REC, 1, 128},  {OP_REC, 2, 125},  {OP_REC, 3, 140},
    {OP_REC, 4, 135},  {OP_TIME, 0, 100}, {OP_TICK, 0, 0},   {OP_REC, 0, 150},
    {OP_REC, 1, 151},  {OP_REC, 2, 149},  {OP_REC, 3, 160},  {OP_REC, 4, 155},
    {OP_TIME, 0, 100}, {OP_TICK, 0, 0},   {OP_REC, 0, 170},  {OP_REC, 1, 175},
    {OP_REC, 2, 172},  {OP_REC, 3, 180},  {OP_REC, 4, 171},  {OP_TIME, 0, 100},
    {OP_TICK, 0, 0},   {OP_STATUS, 3, 1}, {OP_REC, 0, 190},  {OP_REC, 1, 191},
    {OP_REC, 2, 195},  {OP_REC, 4, 192},  {OP_TIME, 0, 100}, {OP_TICK, 0, 0},
    {OP_REC, 5, 185},  {OP_REC, 3, 200},  {OP_REC, 0, 210},  {OP_REC, 1, 205},
    {OP_REC, 2, 206},  {OP_REC, 4, 208},  {OP_TIME, 0, 100}, {OP_TICK, 0, 0},
    {OP_END, 0, 0},
};

/* Watermark alignment: announcements pause partitions (and readers)
 * that run ahead and resume them; reports every 150 ms. */
static const op align_script[] = {
    {OP_REC, 0, 100},      {OP_REC, 1, 105},      {OP_REC, 2, 98},
    {OP_REC, 3, 120},      {OP_REC, 4, 101},      {OP_REC, 5, 99},
    {OP_TIME, 0, 150},     {OP_TICK, 0, 0},       {OP_ANNOUNCE, 0, 107},
    {OP_REC, 0, 140},      {OP_REC, 2, 110},      {OP_REC, 4, 112},
    {OP_REC, 5, 111},      {OP_TIME, 0, 150},     {OP_TICK, 0, 0},
    {OP_ANNOUNCE, 0, 119}, {OP_REC, 1, 125},      {OP_REC, 2, 131},
    {OP_REC, 4, 150},      {OP_REC, 5, 129},      {OP_TIME, 0, 150},
    {OP_TICK, 0, 0},       {OP_ANNOUNCE, 0, 135}, {OP_REC, 1, 160},
    {OP_REC, 3, 165},      {OP_REC, 5, 158},      {OP_TIME, 0, 150},
    {OP_TICK, 0, 0},       {OP_ANNOUNCE, 0, 170}, {OP_REC, 0, 180},
    {OP_REC, 2, 182},      {OP_END, 0, 0},
};

/* ---- Tests ---- */

/* The stale cuts (check_rescale): after partition 2 finishes while it
 * is the lowest of reader 2 at parallelism 3 (cuts 18-24, until a record
 * raises that reader's other partition) and partition 4 while it is the
 * lowest (cuts 34-35, until the next tick). */
TDM_TEST(two_readers_dealt_to_one_and_three_on_event)
{
    setup su = {bounded(10, 1, 0), false};
    check_rescale(&su, on_event_script, 1, 2);
    check_rescale(&su, on_event_script, 3, 9);
    tdm_wm_strategy_destroy(su.s);
}

/* The stale cut: the last, where partition 5 is back from idleness
 * below the output of reader 2 at parallelism 3. */
TDM_TEST(two_readers_dealt_to_one_and_three_periodic_with_idleness)
{
    setup su = {bounded(10, 0, 250), false};
    check_rescale(&su, idle_script, 1, 0);
    check_rescale(&su, idle_script, 3, 1);
    tdm_wm_strategy_destroy(su.s);
}

TDM_TEST(two_readers_dealt_to_one_and_three_with_alignment)
{
    setup su = {bounded(10, 1, 0), true};
    check_rescale(&su, align_script, 1, 0);
    check_rescale(&su, align_script, 3, 0);
    tdm_wm_strategy_destroy(su.s);
}

/* At the same parallelism every reader takes back exactly its own
 * splits, so it continues as the old reader (its combined history too:
 * here partition 2 finishes while it is the lowest, and the old reader
 * keeps its value until its next combination, S5). */
TDM_TEST(same_dealing_continues_as_the_old_reader)
{
    setup su = {bounded(10, 1, 0), false};
    check_rescale(&su, on_event_script, 2, 0);
    tdm_wm_strategy_destroy(su.s);
}

/* A split handed out twice, and every truncation of a reader section,
 * are refused (TDM_ERR_PARSE with the offset), never a crash. */
TDM_TEST(bad_input_is_refused)
{
    setup su = {bounded(10, 1, 0), false};
    deploy old, got;
    uint8_t *blob[MAX_P];
    size_t len[MAX_P];
    deploy_new(&old, &su, 2, true);
    for (int i = 0; i < 12; i++)
        step(&old, &on_event_script[i]);
    snapshot_all(&old, blob, len);
    /* Both old readers' split 0 into the same split. */
    map_ctx all = {0, 2, 0, 1};
    deploy_new(&got, &su, 1, false);
    tdm__dec d;
    tdm__dec_init(&d, blob[0], len[0]);
    ASSERT_OK(tdm__reader_restore_splits(got.r[0], &d, map_split, &all));
    tdm__dec_init(&d, blob[0], len[0]);
    ASSERT_ERR(tdm__reader_restore_splits(got.r[0], &d, map_split, &all),
               TDM_ERR_PARSE);
    size_t off;
    const char *why;
    ASSERT_ERR(tdm__dec_error(&d, &off, &why), TDM_ERR_PARSE);
    ASSERT_STR_EQ(why, "split restored twice");
    deploy_free(&got);
    for (size_t cut = 0; cut < len[1]; cut++) {
        deploy_new(&got, &su, 1, false);
        map_ctx m = {1, 2, 0, 1};
        tdm__dec_init(&d, blob[1], cut);
        ASSERT_ERR(tdm__reader_restore_splits(got.r[0], &d, map_split, &m),
                   TDM_ERR_PARSE);
        deploy_free(&got);
    }
    for (int k = 0; k < 2; k++)
        tdm__free(blob[k]);
    deploy_free(&old);
    tdm_wm_strategy_destroy(su.s);
}
