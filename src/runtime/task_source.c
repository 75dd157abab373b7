/* SPDX-License-Identifier: MIT */
/* task_source.c - a source subtask: one thread that reads its share of a
 * source's partitions through the connector, stamps and checks each row
 * (ingestion/processing time, timestamp guard, unit check), runs the
 * user's filters and maps (chained: no queue), routes the row to the
 * downstream subtask owning its key group, and lets the tdm_reader turn
 * timestamps into watermarks, which are broadcast to every downstream
 * subtask after the rows that preceded them.
 *
 * Rows are not copied on the way: a polled batch is shared by every
 * downstream subtask, each getting a segment of row indexes.
 *
 * Version-2 connectors (Kafka) add splits as partitions are assigned and
 * finish them as they are revoked, get marks and commits (run.c), and
 * replay floors; alignment pauses splits at the connector, or a whole
 * version-1 source by not polling.
 *
 * This file is the loop and the scan only.  What it sends goes through
 * the outbox (outbox.c, outbox_route.h); each feature it interleaves is
 * a component with its own file and hooks, called from here and never
 * calling back: checkpoints (src_ckpt.c), alignment (src_align.c),
 * version-2 commits, replay floors and splits (src_v2.c), the key fence
 * (src_fence.c), the timestamp-unit check (src_unit.c), dead letters
 * (src_dead.c), published metrics and lag (src_metrics.c), and the
 * partition arrays (src_parts.c).  The loop's phases: step (between-poll
 * hooks, poll_batch, scan, after_batch with its after-tick hooks), then
 * finish.
 */
#include <string.h>

#include "runtime/ckpt.h"
#include "runtime/expr.h"
#include "runtime/live.h"
#include "runtime/localagg.h"
#include "runtime/outbox_route.h"
#include "runtime/src_ahead.h"
#include "runtime/src_align.h"
#include "runtime/src_ckpt.h"
#include "runtime/src_dead.h"
#include "runtime/src_fence.h"
#include "runtime/src_metrics.h"
#include "runtime/src_parts.h"
#include "runtime/src_unit.h"
#include "runtime/src_v2.h"
#include "runtime/task_source.h"
#include "time/wm.h"

/* The reader's output: watermarks and idle/active statuses, and the
 * alignment events (tdm__src_align_event).  Called from inside
 * tdm_reader_record (on-event watermarks), tdm_reader_advance (periodic,
 * reports), tdm_reader_announce and tdm_reader_end. */
static void reader_emit(void *opaque, const tdm_event *ev)
{
    tdm__rt_src_task *t = opaque;
    if (ev->type == TDM_EVENT_WATERMARK) {
        if (t->run->debug)
            tdm__src_metrics_debug_wm(t, ev->time);
        /* Published after the splits' watermarks (tdm__src_metrics_publish),
         * so that a snapshot never sees the output ahead of them. */
        t->wm_out = ev->time;
        /* A watermark sent outside scan_batch follows every row polled
         * so far (broadcast flushes them first): see tdm__src_v2_mark(). */
        t->wm_after_rows = !t->scanning;
        t->sweep = true;
        if (t->fb)
            t->dt_out = tdm_reader_data_watermark(t->reader);
        tdm__outbox_broadcast(t, TDM__ITEM_WATERMARK, ev->time, 0);
    } else if (ev->type == TDM_EVENT_DATA_WATERMARK) {
        /* The fallback drives: the same watermark goes out again with
         * the risen data watermark under it (op_fallback.h). */
        t->dt_out = ev->time;
        if (t->wm_out != TDM_TIME_MIN)
            tdm__outbox_broadcast(t, TDM__ITEM_WATERMARK, t->wm_out, 0);
    } else if (ev->type == TDM_EVENT_STATUS) {
        t->idle = ev->idle != 0;
        tdm__src_v2_reader_status(t, t->idle);
        t->sweep = true;
        tdm__outbox_broadcast(t, TDM__ITEM_STATUS, 0, ev->idle);
    } else {
        tdm__src_align_event(t, ev);
    }
}

/* ---- The scan ---- */

/* Specialisations of scan_batch (lean_kind; and the local aggregate). */
enum { LEAN_NO = 0, LEAN_P1, LEAN_PN };
enum { LAGG_NO = 0, LAGG_ANY, LAGG_COUNT };

/* The always-inline attribute of the scan's per-row steps: each is a
 * named step of scan_batch, folded into every specialisation of it. */
#define SCAN_STEP static inline __attribute__((always_inline))

/* The routing of a source with one or two consumers (the common cases;
 * two: NEXMark q7's bids feed a window and a join), decided once per
 * batch: each edge's key kind depends on the schema only; kind0 -1:
 * more edges, routed by tdm__outbox_route_all.  Per edge 0 and 1: key
 * kind and field, the selection and counts of its first target, its
 * local aggregate. */
typedef struct scan_routes {
    int kind0, kind1, kfield0, kfield1;
    tdm__sel *sel0, *sel1;
    uint32_t *sel_n0, *sel_n1;
    tdm__rt_lagg *lagg0, *lagg1;
} scan_routes;

/* The routes of the current batch (@p lean, @p lagg: scan_batch's). */
SCAN_STEP scan_routes scan_routes_of(const tdm__rt_src_task *t, const int lean,
                                     const int lagg, const int n_edges)
{
    const tdm__rt_source *s = t->src;
    const tdm__sbatch *sb = t->cur;
    const size_t cap = t->run->batch_size;
    const bool two = n_edges == 2;
    const int tb0 = s->n_edges ? s->edges[0].target_base : 0;
    const int tb1 = two ? s->edges[1].target_base : 0;
    scan_routes r;
    r.kind0 = lean ? TDM__KEY_BY_INT
              : n_edges == 1 || two
                  ? tdm__outbox_key_kind(sb->b->schema, &s->edges[0])
                  : -1;
    r.kind1 = two ? tdm__outbox_key_kind(sb->b->schema, &s->edges[1]) : -1;
    r.kfield0 = s->n_edges && s->edges[0].n_key ? s->edges[0].key_idx[0] : -1;
    r.kfield1 = two && s->edges[1].n_key ? s->edges[1].key_idx[0] : -1;
    r.sel0 = sb->sel + (size_t)tb0 * cap;
    r.sel_n0 = sb->sel_n + tb0;
    r.sel1 = sb->sel + (size_t)tb1 * cap;
    r.sel_n1 = sb->sel_n + tb1;
    r.lagg0 = lagg != LAGG_NO ? t->la.e[0] : NULL;
    r.lagg1 = lagg != LAGG_NO && two ? t->la.e[1] : NULL;
    return r;
}

/* Routes row @p i (step of scan_batch): to edges 0 and 1 in route_all's
 * order, to edge 0 alone, or through tdm__outbox_route_all; @p local:
 * fold into the local aggregates. */
SCAN_STEP tdm_err scan_route(tdm__rt_src_task *t, const tdm__row *row, size_t i,
                             const scan_routes *r, const int P,
                             const bool fence, const bool local, const int lagg)
{
    const size_t cap = t->run->batch_size;
    if (r->kind1 >= 0) {
        tdm_err rerr = tdm__outbox_route_edge(
            t, row, (uint32_t)i, 0, r->kind0, r->kfield0, P, fence, r->sel0,
            r->sel_n0, cap, local ? r->lagg0 : NULL, false);
        if (rerr != TDM_OK)
            return rerr;
        return tdm__outbox_route_edge(t, row, (uint32_t)i, 1, r->kind1,
                                      r->kfield1, P, fence, r->sel1, r->sel_n1,
                                      cap, local ? r->lagg1 : NULL, false);
    }
    if (r->kind0 >= 0)
        return tdm__outbox_route_edge(
            t, row, (uint32_t)i, 0, r->kind0, r->kfield0, P, fence, r->sel0,
            r->sel_n0, cap, local ? r->lagg0 : NULL, lagg == LAGG_COUNT);
    return tdm__outbox_route_all(t, row, (uint32_t)i, P, fence, local);
}

/* Pass-through (step of scan_batch): the row as read, written by this
 * subtask to sink @p pass (the sink serialises writers).  TDM_ERR_IO
 * fails the run. */
SCAN_STEP tdm_err scan_pass(tdm__rt_src_task *t, tdm__rt_sink *pass,
                            const tdm__row *row)
{
    if (pass->vt->write_row(t->ck.obj[0], row) == TDM_OK)
        return TDM_OK;
    char why[400];
    tdm__rt_sink_why(pass, t->ck.obj[0], why, sizeof why);
    tdm__rt_fail(
        t->run, TDM_ERR_IO,
        "sink \"%s\": writing a record of source \"%s\" to %s failed%s",
        pass->node->name, t->src->node->name,
        pass->conf.path && *pass->conf.path ? pass->conf.path : "stdout", why);
    return TDM_ERR_IO;
}

/* Records partition @p p as touched by batch @p seq (once). */
SCAN_STEP void scan_touch(tdm__rt_phot *ph, uint32_t p, const uint32_t seq,
                          int *touched, int *n_mt)
{
    if (ph->stamp != seq) {
        ph->stamp = seq;
        touched[(*n_mt)++] = (int)p;
    }
}

/* Event lag (step of scan_batch): how far timestamp @p ts is behind the
 * highest its partition has seen.  A row in order costs no count (they
 * are added in bulk after the scan); only a row behind the maximum costs
 * a bucket. */
SCAN_STEP void scan_lag(tdm__rt_phot *ph, tdm_time_ms ts, const bool lag_on,
                        uint64_t *lag_b, uint64_t *lag_max, uint64_t *behind)
{
    const tdm_time_ms hi = ph->hi;
    /* Selects rather than jumps: in or out of order is a coin toss. */
    ph->hi = ts > hi ? ts : hi;
    if (lag_on && ts < hi) {
        const uint64_t lag = (uint64_t)hi - (uint64_t)ts;
        lag_b[tdm__src_lag_bucket((int64_t)lag)]++;
        *lag_max = lag > *lag_max ? lag : *lag_max;
        (*behind)++;
    }
}

/* What a scan counted, published once per batch (scan_publish). */
typedef struct scan_counts {
    int64_t guard_hits, skipped, filtered, passed;
    uint64_t behind, lag_max;
    int n_mt;
} scan_counts;

/* Runs the job file's filter and computes (expr.c), then the user's
 * filters and maps, on @p row of batch @p b: 1 keeps the row, 0 when a
 * filter drops it (counted in @p cnt), -1 when a computed string finds
 * no memory. */
static int run_udfs(const tdm__rt_src_task *t, tdm__row *row, tdm__batch *b,
                    scan_counts *cnt)
{
    const tdm_node *n = t->src->node;
    int keep = n->exprs ? tdm__src_exprs_apply(n->exprs, row, t->wm_out, b) : 1;
    for (int i = 0; keep > 0 && i < n->n_udfs; i++) {
        const tdm__udf *u = &n->udfs[i];
        if (u->is_map)
            u->map(u->ud, row);
        else if (!u->filter(u->ud, row))
            keep = 0;
    }
    if (keep == 0) {
        cnt->skipped++;
        cnt->filtered++;
    }
    return keep;
}

/* Fetches the local count slot of row @p ahead, a few rows ahead of the
 * scan (a lean count's fixed-width key, localagg.h). */
SCAN_STEP void scan_prefetch(const tdm__row *ahead, const scan_routes *r)
{
    tdm__rt_lagg_prefetch_fixed(
        r->lagg0, ahead->ts,
        tdm__key_fixed_bits(&ahead->v[r->kfield0], TDM_TYPE_INT64));
}

/* A row the timestamp guard caught (step of scan_batch): flagged and
 * counted; with guard_dead, dead-lettered and skipped (true). */
SCAN_STEP bool scan_guarded(tdm__rt_src_task *t, tdm__row *row,
                            const bool guard_dead, scan_counts *n)
{
    row->flags |= TDM__ROW_GUARDED;
    n->guard_hits++;
    if (!guard_dead)
        return false;
    tdm__src_dead_guarded(t, row);
    n->skipped++;
    return true;
}

/* The watermark generator's view of a routed row (step of scan_batch).
 * The partitions a batch touched with a timestamp the generator sees
 * are listed (their metrics are published after the scan, and with
 * wm_max_only the generator is called once for each: scan_max_only);
 * otherwise the row goes to the generator now that it is on its way (an
 * on-event watermark then follows the row downstream). */
SCAN_STEP void scan_generator(tdm__rt_src_task *t, tdm__rt_phot *ph,
                              tdm__row *row, uint32_t p, const uint32_t seq,
                              const bool max_only, int *touched, int *n_mt)
{
    if (ph->gen != seq) {
        ph->gen = seq;
        scan_touch(ph, p, seq, touched, n_mt);
    }
    if (!max_only) {
        tdm_record rec = {
            .ts = row->ts, .payload = row, .payload_len = sizeof *row};
        tdm_reader_record(t->reader, (int)p, &rec);
    }
}

/* A generator that keeps only a maximum and emits on the periodic tick
 * (after this batch is sent) cannot tell one call with the partition's
 * highest timestamp from one call per row: the maximum, and the activity
 * its idleness timer looks for (one call per batch with such rows), come
 * out the same. */
static void scan_max_only(tdm__rt_src_task *t, const uint32_t seq, int n_mt)
{
    for (int k = 0; k < n_mt; k++) {
        const tdm__rt_phot *ph = &t->met.hot[t->met.mtouched[k]];
        if (ph->gen != seq)
            continue;
        tdm_record rec = {.ts = ph->hi};
        tdm_reader_record(t->reader, t->met.mtouched[k], &rec);
    }
}

/* Publishes once per batch: counters, the lag histogram's totals, and
 * the touched partitions' records, highest timestamp and last record
 * time.  Rows routed are those not skipped; rows with an event timestamp
 * (not guarded, not processing time) those routed minus the guarded
 * ones still routed. */
static void scan_publish(tdm__rt_src_task *t, const scan_counts n, int mode,
                         bool lag_on)
{
    tdm__rt_count(t->run, TDM_STAT_GUARD_HITS, n.guard_hits);
    if (n.passed)
        tdm__rt_count(t->run, TDM_STAT_RECORDS_OUT, n.passed);
    tdm__rt_count(t->run, TDM_STAT_FILTERED, n.filtered);
    int64_t routed = (int64_t)t->cur->b->n - n.skipped;
    if (mode != TDM__TIME_PROCESSING) {
        int64_t timed = routed - (t->run->guard_dead ? 0 : n.guard_hits);
        /* The histogram's maximum is set when the quantiles are
         * published (tdm__src_metrics_publish_lag). */
        if (lag_on) {
            t->met.lag.b[0] += (uint64_t)timed - n.behind;
            t->met.lag.n += (uint64_t)timed;
        }
        t->met.lag_seen += (uint64_t)timed;
        t->met.lag_max = n.lag_max;
    }
    tdm__rt_pub_add(&t->met.m.guard, n.guard_hits);
    tdm__rt_pub_add(&t->met.m.out, routed);
    tdm_time_ms vmax = tdm__rt_pub_get(&t->met.m.max_ts);
    for (int k = 0; k < n.n_mt; k++) {
        const tdm__rt_phot *ph = &t->met.hot[t->met.mtouched[k]];
        tdm__rt_part *pp = &t->met.parts[t->met.mtouched[k]];
        tdm__rt_pub_set(&pp->p_records, ph->n);
        tdm__rt_pub_set(&pp->p_last_at, t->now);
        if (ph->hi != tdm__rt_pub_get(&pp->p_max_ts))
            tdm__rt_pub_set(&pp->p_max_ts, ph->hi);
        if (ph->hi > vmax)
            vmax = ph->hi;
    }
    t->met.n_mt = n.n_mt;
    if (n.n_mt) {
        tdm__rt_pub_set(&t->met.m.last_at, t->now);
        tdm__rt_pub_set(&t->met.m.max_ts, vmax);
    }
}

/* Processes the rows of one poll, in order:
 *   partition bookkeeping (partitions named by a field appear late; the
 *   records of each partition, and the partitions the batch touched),
 *   time stamping (ingestion and processing time use the poll's clock
 *   reading, so one batch shares one timestamp),
 *   filters and maps, the unit check and the timestamp guard,
 *   routing (or, with two-phase aggregation, @p lagg, folding into the
 *   edge's local aggregate: localagg.h), the event lag, and only then
 *   the watermark generator.
 * Nothing here allocates once the partition arrays have grown; the
 * common row costs no counter of its own (rows routed and in timestamp
 * order are counted by exception: scan_publish).  Inlined into
 * process_batch with and without the lag histogram, so that a batch it
 * does not sample pays no test per row for it, and for lean batches
 * (@p lean, see lean_kind) with what they cannot have folded away.
 * @p lagg: LAGG_NO (no local aggregate), LAGG_ANY, or LAGG_COUNT (edge
 * 0's is a single count(), which the fold then knows at compile time).
 * Its per-row steps (SCAN_STEP) are inlined too. */
static inline __attribute__((always_inline)) tdm_err
scan_batch(tdm__rt_src_task *t, const uint32_t seq, const bool lag_on,
           const int lean, const int lagg)
{
    tdm__rt_source *s = t->src;
    tdm__batch *b = t->cur->b;
    const tdm__source_conf *c = &s->conf;
    /* Loop invariants in locals: the compiler cannot tell that the
     * stores below leave them alone.  A lean batch (lean_kind) has them
     * as constants, and the branches they decide fold away. */
    const int mode = lean ? TDM__TIME_EVENT : c->time_mode;
    /* The unit check looks at the first rows of each partition only:
     * once every partition is judged, the batch skips it. */
    bool unit_check = mode == TDM__TIME_EVENT && c->ts_unit == TDM__UNIT_MS &&
                      tdm__src_unit_open(t);
    const int P = lean == LEAN_P1 ? 1 : t->run->P;
    const bool fence = lean ? false : s->fence;
    const scan_routes r = scan_routes_of(t, lean, lagg, lean ? 1 : s->n_edges);
    const bool max_only = s->wm_max_only;
    const bool guard_dead = t->run->guard_dead;
    /* Count slots of a lean count are fetched ahead when they scatter
     * keys (localagg.h); in direct mode rows share their lines and the
     * look ahead costs more than it saves (about 10 % of NEXMark-W). */
    const bool prefetch = lean && lagg == LAGG_COUNT && r.lagg0->cs_scatter;
    const int n_udfs = lean ? 0 : s->node->n_udfs + (s->node->exprs != NULL);
    tdm__rt_sink *const pass = lean ? NULL : s->pass;
    tdm_time_ms limit = t->run->guard > 0
                            ? tdm__time_add_sat(t->now, t->run->guard)
                            : TDM_TIME_MAX;
    /* Rows above look: caught by the guard, or the batch's furthest is
     * kept after the loop as the record that ran ahead (src_ahead.h). */
    const tdm_time_ms look = tdm__src_ahead_look(&t->ahead, t->now, limit);
    tdm_time_ms ahead_ts = look;
    size_t ahead_i = SIZE_MAX;
    scan_counts n = {.lag_max = t->met.lag_max};
    int *touched = t->met.mtouched;
    tdm__rt_phot *hot = t->met.hot;
    uint64_t *lag_b = t->met.lag.b;
    int n_parts = t->n_parts, keep;
    for (size_t i = 0; i < b->n; i++) {
        tdm__row *row = &b->rows[i];
        const uint32_t p = row->partition;
        if (prefetch && i + RT_LAGG_AHEAD < b->n)
            scan_prefetch(&b->rows[i + RT_LAGG_AHEAD], &r);
        if ((int)p >= n_parts) {
            if (tdm__src_parts_ensure(t, (int)p, row) != TDM_OK)
                return TDM_ERR_NOMEM;
            n_parts = t->n_parts;
            touched = t->met.mtouched;
            hot = t->met.hot;
            /* A new partition is yet to be judged. */
            unit_check = mode == TDM__TIME_EVENT && c->ts_unit == TDM__UNIT_MS;
        }
        /* Partition metrics: records read. */
        tdm__rt_phot *ph = &hot[p];
        ph->n++;
        if (mode != TDM__TIME_EVENT)
            row->ts = t->now;
        if (n_udfs && (keep = run_udfs(t, row, b, &n)) <= 0) {
            if (keep < 0)
                return TDM_ERR_NOMEM;
            continue;
        }
        bool guarded = false;
        if (mode == TDM__TIME_EVENT) {
            if (unit_check)
                tdm__src_unit_observe(t, &t->unit, (int)p, row->ts);
            if (row->ts > look) {
                if (row->ts > limit) {
                    guarded = true;
                    if (scan_guarded(t, row, guard_dead, &n))
                        continue;
                } else if (row->ts > ahead_ts) {
                    ahead_ts = row->ts;
                    ahead_i = i;
                }
            }
        }
        /* Guarded rows (far ahead) and rows without a timestamp go raw:
         * the window subtask treats them exactly as without the local
         * phase. */
        const bool local =
            lagg != LAGG_NO && !guarded && row->ts != TDM_TIME_MIN;
        if (scan_route(t, row, i, &r, P, fence, local, lagg) != TDM_OK)
            return TDM_ERR_NOMEM;
        if (pass) {
            if (scan_pass(t, pass, row) != TDM_OK)
                return TDM_ERR_IO;
            n.passed++;
        }
        if (guarded || mode == TDM__TIME_PROCESSING) {
            scan_touch(ph, p, seq, touched, &n.n_mt);
            continue;
        }
        scan_lag(ph, row->ts, lag_on, lag_b, &n.lag_max, &n.behind);
        scan_generator(t, ph, row, p, seq, max_only, touched, &n.n_mt);
    }
    if (ahead_i != SIZE_MAX)
        tdm__src_ahead_see(t, &b->rows[ahead_i]);
    if (max_only)
        scan_max_only(t, seq, n.n_mt);
    scan_publish(t, n, mode, lag_on);
    return TDM_OK;
}

/* Whether a batch of the subtask is lean - event time, no filter or
 * map, one consumer keyed by one int64, timestamp or bool field, no key
 * fence - and at which parallelism (LEAN_P1: one target, no hashing):
 * the scan of such a batch is specialised (scan_batch), as most keyed
 * counts and NEXMark-W are. */
static int lean_kind(const tdm__rt_src_task *t)
{
    const tdm__rt_source *s = t->src;
    if (s->conf.time_mode != TDM__TIME_EVENT || s->node->n_udfs ||
        s->node->exprs || s->fence || s->n_edges != 1 || s->pass ||
        tdm__outbox_key_kind(t->cur->b->schema, &s->edges[0]) !=
            TDM__KEY_BY_INT)
        return LEAN_NO;
    return t->run->P == 1 ? LEAN_P1 : LEAN_PN;
}

/* Processes one poll's rows (scan_batch).  The lag histogram takes every
 * record of the first batches and then of one batch in RT_LAG_EVERY: a
 * bucket per out-of-order record was most of what metrics cost the
 * source loop (docs/metrics.md, Cost), and quantiles of a systematic
 * sample of batches are within a bucket of the full ones on any stream
 * whose disorder does not change every few batches.  The maximum is the
 * sample's too. */
static tdm_err process_batch(tdm__rt_src_task *t)
{
    const uint32_t seq = ++t->met.seq;
    const bool lag_on = seq <= RT_LAG_EXACT_BATCHES || seq % RT_LAG_EVERY == 0;
    /* Two-phase aggregation (t->la.any) is a variant of its own too:
     * without it the scan pays nothing for it. */
    const int la = t->la.any ? LAGG_ANY : LAGG_NO;
    switch (lean_kind(t)) {
    case LEAN_P1:
        /* A lean batch has one edge: a count's fold is its own variant
         * (the common keyed count, NEXMark-W). */
        if (la && t->la.e[0] && t->la.e[0]->count)
            return lag_on ? scan_batch(t, seq, true, LEAN_P1, LAGG_COUNT)
                          : scan_batch(t, seq, false, LEAN_P1, LAGG_COUNT);
        if (la)
            return lag_on ? scan_batch(t, seq, true, LEAN_P1, LAGG_ANY)
                          : scan_batch(t, seq, false, LEAN_P1, LAGG_ANY);
        return lag_on ? scan_batch(t, seq, true, LEAN_P1, LAGG_NO)
                      : scan_batch(t, seq, false, LEAN_P1, LAGG_NO);
    case LEAN_PN:
        if (la && t->la.e[0] && t->la.e[0]->count)
            return lag_on ? scan_batch(t, seq, true, LEAN_PN, LAGG_COUNT)
                          : scan_batch(t, seq, false, LEAN_PN, LAGG_COUNT);
        if (la)
            return lag_on ? scan_batch(t, seq, true, LEAN_PN, LAGG_ANY)
                          : scan_batch(t, seq, false, LEAN_PN, LAGG_ANY);
        return lag_on ? scan_batch(t, seq, true, LEAN_PN, LAGG_NO)
                      : scan_batch(t, seq, false, LEAN_PN, LAGG_NO);
    default:
        return lag_on ? scan_batch(t, seq, true, LEAN_NO, la)
                      : scan_batch(t, seq, false, LEAN_NO, la);
    }
}

#define N_HOOKS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Hooks when split @p p finished (told to the reader): a revoked split's
 * keys are fenced, a version-2 split is no longer live, the partition is
 * published finished. */
static void (*const on_split_finished[])(tdm__rt_src_task *, int) = {
    tdm__src_fence_on_finished,
    tdm__src_v2_split_finished,
    tdm__src_metrics_split_finished,
};

/* Tells the reader about partitions that finished in the last poll. */
static void report_finished(tdm__rt_src_task *t, bool eof)
{
    for (int p = 0; p < t->n_parts && p < t->part_cap; p++) {
        if ((t->finished[p] || eof) && !t->reported[p]) {
            t->reported[p] = 1;
            if (t->unit.uc[p].n > 0)
                tdm__src_unit_verdict(t, p);
            if (t->finished[p])
                tdm_reader_split_finished(t->reader, p);
            for (int h = 0; h < N_HOOKS(on_split_finished); h++)
                on_split_finished[h](t, p);
        }
    }
}

/* ---- The thread ---- */

/* Hooks run between polls, in this order: a version-2 commit the run
 * thread asked for, the checkpoint coordinator's commits and barriers,
 * the alignment coordinator's announcements.  Each does nothing for a
 * subtask without its feature. */
static void (*const between_polls[])(tdm__rt_src_task *) = {
    tdm__src_v2_between_polls,
    tdm__src_ckpt_between_polls,
    tdm__src_live_apply,
    tdm__src_align_step,
};

/* Hooks after the reader's periodic tick: the version-2 mark (only when
 * the watermark moved), then the partitions' published metrics. */
static void after_tick_mark(tdm__rt_src_task *t)
{
    if (t->src->v2)
        tdm__src_v2_mark(t, false);
}

static void after_tick_publish(tdm__rt_src_task *t)
{
    tdm__src_metrics_publish(t, false);
}

static void (*const after_tick[])(tdm__rt_src_task *) = {
    after_tick_mark,
    after_tick_publish,
};

/* Hooks before the loop's first poll: a subtask restored at another
 * parallelism announces its restored watermark and status (the
 * consumers' channels started afresh) before anything else. */
static void on_open_announce(tdm__rt_src_task *t)
{
    if (t->run->ck.restored && t->run->ck.old_P != t->run->P)
        tdm__src_ckpt_announce_restored(t);
}

static void (*const on_open[])(tdm__rt_src_task *) = {
    on_open_announce,
};

/* Hooks at the end of input, before the end of output goes out: the
 * checkpoints' final state, before the reader ends (a restore from it
 * finds every partition finished and ends the same way). */
static void (*const before_end[])(tdm__rt_src_task *) = {
    tdm__src_ckpt_end,
};

/* Hooks after the end of output: the last positions marked (the run
 * thread commits them once the sinks are closed, and closes the
 * connector after that), the replay log, the local aggregates' debug
 * lines, then the final published values. */
static void on_end_mark(tdm__rt_src_task *t)
{
    if (t->src->v2)
        tdm__src_v2_mark(t, true);
}

static void (*const on_end[])(tdm__rt_src_task *) = {
    on_end_mark,
    tdm__src_v2_on_end,
    tdm__src_lagg_log,
    tdm__src_metrics_on_end,
};

/* Fails the run for want of memory (source @p t's message). */
static void fail_nomem(tdm__rt_src_task *t)
{
    tdm__rt_fail(t->run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
                 t->src->node->name);
}

/* Fails the run with a poll's error @p err, in the connector's words
 * when it can name the cause (version 5). */
static void fail_poll(tdm__rt_src_task *t, tdm_err err)
{
    const tdm__source_vtab *vt = t->src->vt;
    const char *why =
        vt->version >= 5 && vt->poll_error ? vt->poll_error(t->conn) : NULL;
    if (why && *why)
        tdm__rt_fail(t->run, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                     "source \"%s\": %s", t->src->node->name, why);
    else
        tdm__rt_fail(t->run, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                     "source \"%s\": reading failed (%s)", t->src->node->name,
                     tdm_strerror(err));
}

/* Takes a free batch and lets the connector fill it (*eof set at the end
 * of input).  false when the loop must stop: the run aborted, or it
 * failed here. */
static bool poll_batch(tdm__rt_src_task *t, int *eof)
{
    tdm__run *run = t->run;
    const tdm__source_vtab *vt = t->src->vt;
    tdm_err err;
    /* NULL: the run aborted (err OK) or no memory. */
    t->cur = tdm__pool_get(&t->pool, &err);
    if (!t->cur) {
        if (err != TDM_OK)
            tdm__rt_fail(run, err, "source \"%s\": out of memory",
                         t->src->node->name);
        return false;
    }
    /* The finished flags must cover partitions the connector may
     * add in this poll (partitions named by a field, or assigned). */
    int known = t->src->v2 ? vt->n_partitions(t->conn) : 0;
    if (known < t->n_parts)
        known = t->n_parts;
    if (tdm__src_parts_reserve(t, 2 * known + 16) != TDM_OK) {
        fail_nomem(t);
        return false;
    }
    tdm_time_ms dead = tdm__src_dead_keep_after(t);
    tdm_time_ms ahead = tdm__src_ahead_keep_after(t);
    t->cur->b->keep_after = dead < ahead ? dead : ahead;
    /* A poll is idle time while it waits for input: counted as such if
     * it brings nothing, given back if it brings rows (busy.h). */
    int64_t idle = tdm__busy_begin(TDM__BUSY_IDLE);
    err = vt->poll(t->conn, t->cur->b, run->batch_size, t->finished, eof);
    if (t->cur->b->n == 0)
        tdm__busy_end(TDM__BUSY_IDLE, idle);
    else
        tdm__busy_cancel(TDM__BUSY_IDLE, idle);
    if (err != TDM_OK) {
        fail_poll(t, err);
        return false;
    }
    return true;
}

/* Counts the poll's records (and the parser's repeated JSON keys). */
static void count_polled(tdm__rt_src_task *t)
{
    tdm__run *run = t->run;
    tdm__rt_count(run, TDM_STAT_RECORDS_IN, (int64_t)t->cur->b->n);
    tdm__rt_pub_add(&t->met.m.in, (int64_t)t->cur->b->n);
    if (t->cur->b->n_dup_keys) {
        /* Repeated JSON keys, counted by the parser per batch. */
        tdm__rt_count(run, TDM_STAT_DUP_KEYS, t->cur->b->n_dup_keys);
        tdm__rt_pub_add(&t->met.m.dup, t->cur->b->n_dup_keys);
    }
    if (t->cur->b->n_tombstones) {
        tdm__rt_count(run, TDM_STAT_TOMBSTONES, t->cur->b->n_tombstones);
        tdm__rt_pub_add(&t->met.m.tomb, t->cur->b->n_tombstones);
    }
}

/* After the scan: what follows the batch's rows, then the batch goes
 * out and the reader ticks. */
static void after_batch(tdm__rt_src_task *t, int eof)
{
    const bool v2 = t->src->v2;
    /* Watermarks carried by the data follow the rows they came
     * after. */
    if (v2 && t->src->vt->partition_watermark)
        tdm__src_v2_carried_watermarks(t);
    report_finished(t, eof != 0);
    if (v2)
        tdm__src_v2_idle_without_splits(t);
    /* Rows first, then whatever the periodic tick emits. */
    tdm__outbox_flush_rows(t);
    /* Two-phase aggregation: a poll that did not fill its batch means
     * the input is slow, stalled or ending (src_lagg.h). */
    tdm__src_lagg_flush(t);
    if (!t->lazy)
        tdm__outbox_kick(t);
    tdm_reader_advance(t->reader);
    for (int h = 0; h < N_HOOKS(after_tick); h++)
        after_tick[h](t);
}

/* Version 2: makes the partitions the connector assigned splits.  false
 * for want of memory. */
static bool assigned_splits(tdm__rt_src_task *t)
{
    int n = t->src->vt->n_partitions(t->conn);
    return n <= t->n_parts || tdm__src_parts_ensure(t, n - 1, NULL) == TDM_OK;
}

/* One iteration: between-poll hooks, then one batch polled, scanned and
 * sent.  false when the loop must stop (*eof untouched then). */
static bool step(tdm__rt_src_task *t, int *eof)
{
    tdm__run *run = t->run;
    for (int h = 0; h < N_HOOKS(between_polls); h++)
        between_polls[h](t);
    if (tdm__src_align_hold(t))
        return true;
    if (!poll_batch(t, eof))
        return false;
    /* Partitions assigned in this poll are splits before its rows (an
     * assigned partition without rows holds the watermark). */
    if (t->src->v2 && !assigned_splits(t)) {
        fail_nomem(t);
        return false;
    }
    tdm__src_v2_on_batch(t);
    /* One clock reading per batch: the guard and ingestion time
     * need no finer resolution, and the hot loop no syscall. */
    t->now = tdm_clock_now(t->clk);
    count_polled(t);
    /* Only a poll that filled its batch may push lazily: a partial
     * one means the input is slow or ending, and its rows must not
     * wait for more. */
    t->lazy = t->cur->b->n >= run->batch_size;
    t->scanning = true;
    tdm_err err = process_batch(t);
    t->scanning = false;
    if (err != TDM_OK) {
        /* The first failure stands (a sink's I/O error was
         * reported by the scan). */
        fail_nomem(t);
        return false;
    }
    after_batch(t, *eof);
    tdm__sbatch_release(t->cur);
    t->cur = NULL;
    return true;
}

/* The loop: steps until the end of input, an abort or a cancel (then
 * *cancelled set). */
static void run_loop(tdm__rt_src_task *t, bool *cancelled)
{
    tdm__run *run = t->run;
    int eof = t->conn ? 0 : 1;
    while (!eof) {
        if (atomic_load_explicit(&run->abort, memory_order_relaxed))
            break;
        if (atomic_load_explicit(&run->rec->cancel, memory_order_relaxed)) {
            *cancelled = true;
            break;
        }
        if (!step(t, &eof))
            break;
    }
    if (t->cur) {
        tdm__sbatch_release(t->cur);
        t->cur = NULL;
    }
}

/* After the loop: the final state, the end of output, the last marks
 * and metrics. */
static void finish(tdm__rt_src_task *t, bool cancelled)
{
    tdm__run *run = t->run;
    /* Nothing more follows: no item may wait for a wake-up. */
    t->lazy = false;
    tdm__outbox_kick(t);
    for (int h = 0; h < N_HOOKS(before_end); h++)
        before_end[h](t);
    /* End of input (or cancel): the maximum watermark, then END; or,
     * stopping without a drain, END marked so (idle = 1): consumers
     * write nothing more for open windows. */
    if (!atomic_load(&run->abort)) {
        if (cancelled && run->stop_on_cancel) {
            tdm__outbox_broadcast(t, TDM__ITEM_END, TDM_TIME_MAX, 1);
        } else {
            tdm_reader_end(t->reader);
            tdm__outbox_broadcast(t, TDM__ITEM_END, TDM_TIME_MAX, 0);
        }
    }
    for (int h = 0; h < N_HOOKS(on_end); h++)
        on_end[h](t);
    if (t->conn && !t->src->v2) {
        t->src->vt->close(t->conn);
        t->conn = NULL;
    }
}

/* The subtask loop: poll, process, send, tick; then end.
 *
 * One iteration handles one batch: take a free batch from the pool (this
 * is where a subtask waits when its consumers are behind), let the
 * connector fill it, process its rows, send each target its segment, and
 * give the reader its periodic tick.  The producer's own reference on
 * the batch is dropped last, so the batch returns to the pool only when
 * every consumer is done with it.  Cancel is checked between batches:
 * a cancelled source ends its input like an exhausted one, or, when the
 * job stops on cancel (on_cancel), sends END marked "no drain".
 *
 * Version-2 sources (Kafka) also: commit when asked (the connector is
 * this thread's alone), skip replayed records, gain splits as the
 * connector assigns partitions and lose them as it revokes them, report
 * idleness while they have none, and mark the connector's positions at
 * every watermark (src_v2.c). */
void *tdm__rt_source_main(void *arg)
{
    tdm__rt_src_task *t = arg;
    tdm__run *run = t->run;
    bool cancelled = false;
    if (t->empty) {
        /* Its END went out before the threads started (run.c). */
        tdm__src_ckpt_end(t);
        t->src->vt->close(t->conn);
        t->conn = NULL;
        tdm__rt_thread_done(run);
        return NULL;
    }
    tdm__busy_attach(&t->busy);
    for (int h = 0; h < N_HOOKS(on_open); h++)
        on_open[h](t);
    run_loop(t, &cancelled);
    finish(t, cancelled);
    tdm__busy_attach(NULL);
    tdm__rt_thread_done(run);
    return NULL;
}

/* Opens the connector share, the reader and the batch pool. */
tdm_err tdm__rt_source_task_init(tdm__rt_src_task *t)
{
    tdm__run *run = t->run;
    tdm__rt_source *s = t->src;
    char msg[256] = "";
    int n_parts = 0;
    tdm__src_metrics_init(t);
    tdm__src_ahead_init(t);
    tdm_err err = tdm__src_metrics_open(t);
    if (err != TDM_OK)
        return err;
    err = tdm__rt_clock_new(run->job, &t->clk);
    if (err != TDM_OK)
        return err;
    err = s->vt->open(&s->conf, t->index, run->P, tdm__src_dead_conn_cb, t,
                      &t->conn, &n_parts, msg, sizeof msg);
    if (err != TDM_OK) {
        t->conn = NULL;
        tdm__rt_fail(run, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                     "source \"%s\": %s", s->node->name,
                     msg[0] ? msg : tdm_strerror(err));
        return err;
    }
    /* A subtask with no partition has a reader with no split: it emits
     * nothing until its end (the maximum), so it never holds the
     * downstream watermark for long. */
    /* Connectors deal fixed partitions over subtasks; partitions named
     * by a field appear only at subtask 0 (connect.h).  So a subtask
     * other than 0 with none, or any subtask with none when partitions
     * are fixed, will never read a row. */
    t->empty =
        !s->v2 && n_parts == 0 && (s->conf.partition_field < 0 || t->index > 0);
    tdm__src_v2_init(t);
    tdm__src_align_init(t);
    err = tdm_reader_new(0, s->strat, t->clk, reader_emit, t, &t->reader);
    t->fb = s->node->spec.src.wm_fallback_interval_ms > 0;
    if (err == TDM_OK && s->align)
        err = tdm_reader_set_alignment(t->reader, s->align->drift,
                                       s->align->interval, msg, sizeof msg);
    if (err == TDM_OK && n_parts > 0)
        err = tdm__src_parts_ensure(t, n_parts - 1, NULL);
    if (err == TDM_OK)
        err = tdm__src_parts_reserve(t, 16);
    /* Restore (checkpoint.dir): positions, then the reader's state.  A
     * reader restored with partitions named by a field has a split for
     * each value the checkpoint knew: the arrays follow it.  (Version-2
     * connectors assign their partitions at the first poll, where
     * ensure_partition finds the restored splits.) */
    if (err == TDM_OK && run->ck.restored) {
        err = tdm__rt_ckpt_restore_source(t, msg, sizeof msg);
        if (err != TDM_OK) {
            tdm__rt_fail(run, err, "source \"%s\": %s", s->node->name, msg);
            return err;
        }
        int n_splits = tdm__reader_split_count(t->reader);
        if (!s->v2 && n_splits > t->n_parts)
            err = tdm__src_parts_ensure(t, n_splits - 1, NULL);
    }
    if (err == TDM_OK) {
        /* Batches out at once: queue capacity per channel plus the one
         * being filled and the one being consumed. */
        err = tdm__pool_init(&t->pool, s->schema, run->batch_size, s->n_targets,
                             run->qcap + 2, &run->abort, run->job);
        t->pool_ok = err == TDM_OK;
        t->pool.before_wait = tdm__outbox_before_pool_wait;
        t->pool.before_wait_ud = t;
        t->pool.waits = &t->met.m.bp;
    }
    if (err == TDM_OK) {
        t->unkicked =
            tdm__calloc(s->n_targets > 0 ? (size_t)s->n_targets : 1, 1);
        if (!t->unkicked)
            err = TDM_ERR_NOMEM;
    }
    /* Two-phase aggregation: a local aggregate per eligible edge. */
    if (err == TDM_OK)
        err = tdm__src_lagg_open(t);
    if (err != TDM_OK)
        tdm__rt_fail(run, err, "source \"%s\": out of memory", s->node->name);
    return err;
}

/* Closes and frees a source subtask (a half-built one too). */
void tdm__rt_source_task_fini(tdm__rt_src_task *t)
{
    if (t->conn)
        t->src->vt->close(t->conn);
    t->conn = NULL;
    tdm_reader_destroy(t->reader);
    tdm_clock_destroy(t->clk);
    if (t->pool_ok)
        tdm__pool_fini(&t->pool);
    tdm__free(t->finished);
    tdm__free(t->reported);
    tdm__src_unit_free(t);
    tdm__src_v2_free(t);
    tdm__src_align_free(t);
    tdm__src_fence_free(t);
    tdm__src_metrics_fini(t);
    tdm__free(t->unkicked);
    tdm__free(t->kb.p);
    tdm__src_lagg_free(t);
    tdm__rt_ckpt_slot_free(&t->ck);
    memset(t, 0, sizeof *t);
}
