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
 */
#include <stdio.h>
#include <string.h>

#include "runtime/run.h"

/* ---- Sending ---- */

/* Wakes the consumers of every target that got a lazy push since the
 * last kick (see flush_rows). */
static void kick(rt_src_task *t)
{
    rt_source *s = t->src;
    for (int e = 0; e < s->n_edges; e++) {
        const rt_edge *ed = &s->edges[e];
        for (int j = 0; j < t->run->P; j++) {
            int tg = ed->target_base + j;
            if (!t->unkicked[tg])
                continue;
            t->unkicked[tg] = 0;
            tdm__queue_kick(&ed->op->tasks[j].q);
        }
    }
}

/* The pool's hook before the subtask waits for a free batch: consumers
 * left asleep by lazy pushes must run to free one. */
static void before_pool_wait(void *ud)
{
    kick(ud);
}

/* Sends the rows selected since the last flush to each target.
 *
 * Every target (a downstream subtask of one consumer) has its own region
 * of the batch's selection array, filled by route() from sel_sent to
 * sel_n.  A flush hands the unsent part of each region to the target's
 * queue as one item holding one reference on the batch; the region's
 * bytes are never written again until the batch comes back from its
 * pool, so consumers read them without locks.  Targets with nothing new
 * get no item (a key-partitioned batch often skips some subtasks). */
static void flush_rows(rt_src_task *t)
{
    tdm__sbatch *sb = t->cur;
    if (!sb)
        return;
    rt_source *s = t->src;
    size_t cap = t->run->batch_size;
    for (int e = 0; e < s->n_edges; e++) {
        const rt_edge *ed = &s->edges[e];
        for (int j = 0; j < t->run->P; j++) {
            int tg = ed->target_base + j;
            uint32_t from = sb->sel_sent[tg], to = sb->sel_n[tg];
            if (to == from)
                continue;
            tdm__item it = { .kind = TDM__ITEM_BATCH,
                             .ch = ed->input * t->run->P + t->index,
                             .b = sb,
                             .sel = sb->sel + (size_t)tg * cap + from,
                             .n = to - from };
            /* The reference is taken before the push: the consumer may
             * release it before the push even returns. */
            atomic_fetch_add_explicit(&sb->refs, 1, memory_order_relaxed);
            /* A full poll means more rows follow at once: the push may
             * leave a sleeping consumer asleep for a few items (one
             * wake-up per few batches, not per batch); the subtask kicks
             * before it could keep them waiting. */
            bool ok;
            if (t->lazy) {
                ok = tdm__queue_push_lazy(&ed->op->tasks[j].q, &it);
                t->unkicked[tg] = 1;
            } else {
                ok = tdm__queue_push(&ed->op->tasks[j].q, &it);
            }
            /* Refused only when the run aborts: give the reference back. */
            if (!ok)
                tdm__sbatch_release(sb);
            sb->sel_sent[tg] = to;
        }
    }
}

/* Sends a control item to every downstream subtask, after the rows.
 *
 * Watermarks and statuses are broadcast: every consumer subtask merges
 * all source subtasks in its valve, so each must hear from each.  The
 * rows that preceded the item in this subtask go first (flush_rows), so
 * on every channel a watermark follows exactly the rows it covers. */
static void broadcast(rt_src_task *t, tdm__item_kind kind, tdm_time_ms wm,
                      int idle)
{
    flush_rows(t);
    rt_source *s = t->src;
    for (int e = 0; e < s->n_edges; e++) {
        const rt_edge *ed = &s->edges[e];
        for (int j = 0; j < t->run->P; j++) {
            tdm__item it = { .kind = (uint8_t)kind,
                             .ch = ed->input * t->run->P + t->index,
                             .t = wm,
                             .idle = idle };
            tdm__queue_push(&ed->op->tasks[j].q, &it);
        }
    }
}

/* The reader's output: watermarks and idle/active statuses (the
 * alignment events are not used by the runtime).  Called from inside
 * tdm_reader_record (on-event watermarks), tdm_reader_advance (periodic)
 * and tdm_reader_end. */
static void reader_emit(void *opaque, const tdm_event *ev)
{
    rt_src_task *t = opaque;
    if (ev->type == TDM_EVENT_WATERMARK)
        broadcast(t, TDM__ITEM_WATERMARK, ev->time, 0);
    else if (ev->type == TDM_EVENT_STATUS)
        broadcast(t, TDM__ITEM_STATUS, 0, ev->idle);
}

/* ---- Dead letters ---- */

/* Without a dead letter sink, malformed records are reported on the log,
 * but only the first few: a file of garbage must not flood stderr. */
#define MAX_LOGGED_BAD 10

/* Counts a malformed record and hands it to the dead letter sink (shared,
 * thread-safe) or the log. */
static void dead_letter(tdm__run *run, const char *source,
                        const char *location, const char *reason,
                        const char *raw, size_t raw_len, bool malformed)
{
    if (malformed)
        rt_count(run, TDM_STAT_BAD_RECORDS, 1);
    if (run->dead) {
        tdm_err err = run->dead->vt->write_dead(run->dead->obj, location,
                                                reason, raw, raw_len);
        if (err != TDM_OK)
            rt_fail(run, TDM_ERR_IO, "sink \"%s\": writing a dead letter "
                                     "failed (%s)",
                    run->dead->node->name,
                    *run->dead->conf.path ? run->dead->conf.path
                                          : "stdout");
        return;
    }
    int n = atomic_fetch_add(&run->bad_logged, 1);
    if (n < MAX_LOGGED_BAD)
        tdm__job_log(run->job, "source %s: bad record at %s: %s", source,
                     location, reason);
    else if (n == MAX_LOGGED_BAD)
        tdm__job_log(run->job, "further bad records are counted, not "
                               "shown (set dead_letter to keep them)");
}

/* The connector's dead-letter callback. */
static void conn_dead(void *ud, const char *location, const char *reason,
                      const char *raw, size_t raw_len)
{
    rt_src_task *t = ud;
    dead_letter(t->run, t->src->node->name, location, reason, raw, raw_len,
                true);
}

/* ---- Per-row checks ---- */

/* Makes the per-partition arrays hold at least @p need entries. */
static tdm_err ensure_arrays(rt_src_task *t, int need)
{
    if (need > t->part_cap) {
        int cap = t->part_cap ? t->part_cap : 16;
        while (cap < need)
            cap *= 2;
        uint8_t *f = tdm__realloc(t->finished, (size_t)cap);
        if (!f)
            return TDM_ERR_NOMEM;
        t->finished = f;
        uint8_t *r = tdm__realloc(t->reported, (size_t)cap);
        if (!r)
            return TDM_ERR_NOMEM;
        t->reported = r;
        struct rt_unit *u = tdm__realloc(t->uc, (size_t)cap * sizeof *u);
        if (!u)
            return TDM_ERR_NOMEM;
        t->uc = u;
        tdm_time_ms *m = tdm__realloc(t->pmax, (size_t)cap * sizeof *m);
        if (!m)
            return TDM_ERR_NOMEM;
        t->pmax = m;
        int *tp = tdm__realloc(t->touched, (size_t)cap * sizeof *tp);
        if (!tp)
            return TDM_ERR_NOMEM;
        t->touched = tp;
        for (int p = t->part_cap; p < cap; p++)
            m[p] = TDM_TIME_MIN;
        memset(t->finished + t->part_cap, 0, (size_t)(cap - t->part_cap));
        memset(t->reported + t->part_cap, 0, (size_t)(cap - t->part_cap));
        memset(t->uc + t->part_cap, 0,
               (size_t)(cap - t->part_cap) * sizeof *u);
        t->part_cap = cap;
    }
    return TDM_OK;
}

/* Makes the arrays and the reader cover partition @p p (partitions
 * named by a field appear as rows arrive). */
static tdm_err ensure_partition(rt_src_task *t, int p)
{
    if (ensure_arrays(t, 2 * (p + 1) + 16) != TDM_OK)
        return TDM_ERR_NOMEM;
    while (t->n_parts <= p) {
        int idx;
        if (tdm_reader_add_split(t->reader, &idx) != TDM_OK)
            return TDM_ERR_NOMEM;
        t->n_parts++;
    }
    return TDM_OK;
}

/* Judges the unit evidence of a partition once: epoch seconds lie in
 * [1e8, 1e11) (1973-5138), microseconds and nanoseconds at or above 1e14
 * (the year 5138 in ms).  Small values (synthetic test data) say
 * nothing. */
static void unit_verdict(rt_src_task *t, int p)
{
    struct rt_unit *u = &t->uc[p];
    rt_source *s = t->src;
    if (u->n == 0 || atomic_load(&s->unit_warned))
        return;
    const char *what = NULL;
    tdm_time_ms as_ms = 0;
    if (u->small * 2 > u->n) {
        what = "seconds";
        as_ms = u->first * 1000;
    } else if (u->big * 2 > u->n) {
        bool ns = u->first >= 100000000000000000LL;
        what = ns ? "nanoseconds" : "microseconds";
        as_ms = u->first / (ns ? 1000000 : 1000);
    }
    u->n = -1; /* judged */
    if (!what || atomic_exchange(&s->unit_warned, 1))
        return;
    char iso[48], iso2[48];
    tdm__format_iso(u->first, iso, sizeof iso);
    tdm__format_iso(as_ms, iso2, sizeof iso2);
    tdm__job_log(t->run->job,
                 "source %s: timestamp.unit is ms but values look like %s "
                 "(first: %lld = %s; read as %s it would be %s); set "
                 "timestamp.unit to %s if so",
                 s->node->name, what, (long long)u->first, iso, what, iso2,
                 what[0] == 's' ? "s" : what[0] == 'n' ? "ns" : "us");
}

/* Collects unit evidence from the first 100 timestamps of a partition;
 * the verdict comes at the 100th or when the partition ends. */
static void unit_observe(rt_src_task *t, int p, tdm_time_ms ts)
{
    struct rt_unit *u = &t->uc[p];
    if (u->n < 0)
        return;
    if (u->n++ == 0)
        u->first = ts;
    if (ts >= 100000000LL && ts < 100000000000LL)
        u->small++;
    else if (ts >= 100000000000000LL)
        u->big++;
    if (u->n >= 100)
        unit_verdict(t, p);
}

/* Punctuated strategy: a row whose marker field is true is a marker. */
int rt_marker_fn(void *ud, const tdm_record *rec)
{
    const rt_source *s = ud;
    const tdm__row *row = rec->payload;
    return row && !row->v[s->marker_idx].null && row->v[s->marker_idx].u.i;
}

/* Runs filters and maps; false when a filter drops the row. */
static bool run_udfs(const tdm_node *n, tdm__row *row)
{
    for (int i = 0; i < n->n_udfs; i++) {
        const tdm__udf *u = &n->udfs[i];
        if (u->is_map)
            u->map(u->ud, row);
        else if (!u->filter(u->ud, row))
            return false;
    }
    return true;
}

/* Sends a row caught by the timestamp guard to the dead letter output,
 * with the reason spelled out and the row rendered as its raw text. */
static void guard_dead_letter(rt_src_task *t, const tdm__row *row)
{
    char loc[160], reason[256], raw[1024], iso[48], span[32], lim[32];
    snprintf(loc, sizeof loc, "%s partition %u", t->src->node->name,
             row->partition);
    tdm__format_iso(row->ts, iso, sizeof iso);
    tdm__conf_format_duration(row->ts - t->now, span, sizeof span);
    tdm__conf_format_duration(t->run->guard, lim, sizeof lim);
    snprintf(reason, sizeof reason,
             "timestamp %s is %s ahead of processing time (timestamp_guard "
             "%s)",
             iso, span, lim);
    tdm__row_render(row, raw, sizeof raw);
    /* Counted as a guard hit by the caller, not as malformed. */
    dead_letter(t->run, t->src->node->name, loc, reason, raw, strlen(raw),
                false);
}

/* Routes row @p i of the current batch to the target of each edge: the
 * subtask that owns the key group of its key bytes.  Every consumer of
 * the source (a window, a join side) is an edge with its own key fields,
 * so one row may go to different subtasks of different consumers.  The
 * row is not copied: its index goes into the target's selection, with
 * its timestamp and, when the key is a string read in place, the key
 * bytes (tdm__sel), which is all a window subtask reads of it for a
 * count.  At parallelism 1 there is one target and no hashing. */
static tdm_err route(rt_src_task *t, const tdm__row *row, uint32_t i)
{
    rt_source *s = t->src;
    tdm__sbatch *sb = t->cur;
    size_t cap = t->run->batch_size;
    for (int e = 0; e < s->n_edges; e++) {
        const rt_edge *ed = &s->edges[e];
        const char *key;
        size_t klen;
        bool inplace = tdm__key_inplace(row, ed->key_idx, ed->n_key, &key,
                                        &klen);
        int j = 0;
        if (t->run->P > 1) {
            if (!inplace && tdm__key_encode(row, ed->key_idx, ed->n_key,
                                            &t->kb, &key, &klen) != TDM_OK)
                return TDM_ERR_NOMEM;
            uint64_t h = tdm__keys_hash(key, klen);
            j = t->run->owner[tdm__key_group(h, t->run->key_groups)];
        }
        int tg = ed->target_base + j;
        /* An encoded key lives in the subtask's scratch buffer, which the
         * next row overwrites: the consumer encodes it again. */
        tdm__sel *sl = &sb->sel[(size_t)tg * cap + sb->sel_n[tg]++];
        sl->row = i;
        sl->key = inplace ? key : NULL;
        sl->key_len = inplace ? (uint32_t)klen : 0;
        sl->ts = row->ts;
    }
    return TDM_OK;
}

/* Processes the rows of one poll, in order:
 *   partition bookkeeping (partitions named by a field appear late),
 *   time stamping (ingestion and processing time use the poll's clock
 *   reading, so one batch shares one timestamp),
 *   filters and maps, the unit check and the timestamp guard,
 *   routing, and only then the watermark generator.
 * Nothing here allocates once the partition arrays have grown. */
static tdm_err process_batch(rt_src_task *t)
{
    rt_source *s = t->src;
    tdm__batch *b = t->cur->b;
    const tdm__source_conf *c = &s->conf;
    bool unit_check = c->time_mode == TDM__TIME_EVENT &&
                      c->ts_unit == TDM__UNIT_MS &&
                      !atomic_load_explicit(&s->unit_warned,
                                            memory_order_relaxed);
    tdm_time_ms limit = t->run->guard > 0
                            ? tdm__time_add_sat(t->now, t->run->guard)
                            : TDM_TIME_MAX;
    int64_t guard_hits = 0;
    int n_touched = 0;
    for (size_t i = 0; i < b->n; i++) {
        tdm__row *row = &b->rows[i];
        if ((int)row->partition >= t->n_parts &&
            ensure_partition(t, (int)row->partition) != TDM_OK)
            return TDM_ERR_NOMEM;
        if (c->time_mode != TDM__TIME_EVENT)
            row->ts = t->now;
        if (s->node->n_udfs && !run_udfs(s->node, row))
            continue;
        bool guarded = false;
        if (c->time_mode == TDM__TIME_EVENT) {
            if (unit_check)
                unit_observe(t, (int)row->partition, row->ts);
            if (row->ts > limit) {
                guarded = true;
                row->flags |= TDM__ROW_GUARDED;
                guard_hits++;
                if (t->run->guard_dead) {
                    guard_dead_letter(t, row);
                    continue;
                }
            }
        }
        if (route(t, row, (uint32_t)i) != TDM_OK)
            return TDM_ERR_NOMEM;
        if (guarded || c->time_mode == TDM__TIME_PROCESSING)
            continue;
        if (s->wm_max_only) {
            /* Only the batch's maximum per partition matters (below). */
            int p = (int)row->partition;
            if (row->ts > t->pmax[p]) {
                if (t->pmax[p] == TDM_TIME_MIN)
                    t->touched[n_touched++] = p;
                t->pmax[p] = row->ts;
            }
        } else {
            /* The row is on its way; now the generator may see it (an
             * on-event watermark then follows the row downstream). */
            tdm_record rec = { .ts = row->ts, .payload = row,
                               .payload_len = sizeof *row };
            tdm_reader_record(t->reader, (int)row->partition, &rec);
        }
    }
    /* A generator that keeps only a maximum and emits on the periodic
     * tick (after this batch is sent) cannot tell one call with the
     * batch's highest timestamp of a partition from one call per row: the
     * maximum, and the activity its idleness timer looks for, come out
     * the same. */
    for (int k = 0; k < n_touched; k++) {
        int p = t->touched[k];
        tdm_record rec = { .ts = t->pmax[p] };
        t->pmax[p] = TDM_TIME_MIN;
        tdm_reader_record(t->reader, p, &rec);
    }
    rt_count(t->run, TDM_STAT_GUARD_HITS, guard_hits);
    return TDM_OK;
}

/* Tells the reader about partitions that finished in the last poll. */
static void report_finished(rt_src_task *t, bool eof)
{
    for (int p = 0; p < t->n_parts && p < t->part_cap; p++) {
        if ((t->finished[p] || eof) && !t->reported[p]) {
            t->reported[p] = 1;
            if (t->uc[p].n > 0)
                unit_verdict(t, p);
            if (t->finished[p])
                tdm_reader_split_finished(t->reader, p);
        }
    }
}

/* ---- The thread ---- */

/* The subtask loop: poll, process, send, tick; then end.
 *
 * One iteration handles one batch: take a free batch from the pool (this
 * is where a subtask waits when its consumers are behind), let the
 * connector fill it, process its rows, send each target its segment, and
 * give the reader its periodic tick.  The producer's own reference on
 * the batch is dropped last, so the batch returns to the pool only when
 * every consumer is done with it.  Cancel is checked between batches:
 * a cancelled source ends its input like an exhausted one. */
void *rt_source_main(void *arg)
{
    rt_src_task *t = arg;
    tdm__run *run = t->run;
    tdm_job *job = run->job;
    if (t->empty) {
        /* Its END went out before the threads started (run.c). */
        t->src->vt->close(t->conn);
        t->conn = NULL;
        rt_thread_done(run);
        return NULL;
    }
    int eof = t->conn ? 0 : 1;
    while (!eof) {
        if (atomic_load_explicit(&run->abort, memory_order_relaxed) ||
            atomic_load_explicit(&job->cancel, memory_order_relaxed))
            break;
        tdm_err err;
        /* NULL: the run aborted (err OK) or no memory. */
        t->cur = tdm__pool_get(&t->pool, &err);
        if (!t->cur) {
            if (err != TDM_OK)
                rt_fail(run, err, "source \"%s\": out of memory",
                        t->src->node->name);
            break;
        }
        /* The finished flags must cover partitions the connector may
         * add in this poll (partitions named by a field). */
        if (ensure_arrays(t, 2 * t->n_parts + 16) != TDM_OK) {
            rt_fail(run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
                    t->src->node->name);
            break;
        }
        err = t->src->vt->poll(t->conn, t->cur->b, run->batch_size,
                               t->finished, &eof);
        if (err != TDM_OK) {
            rt_fail(run, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                    "source \"%s\": reading failed (%s)",
                    t->src->node->name, tdm_strerror(err));
            break;
        }
        /* One clock reading per batch: the guard and ingestion time
         * need no finer resolution, and the hot loop no syscall. */
        t->now = tdm_clock_now(t->clk);
        rt_count(run, TDM_STAT_RECORDS_IN, (int64_t)t->cur->b->n);
        /* Only a poll that filled its batch may push lazily: a partial
         * one means the input is slow or ending, and its rows must not
         * wait for more. */
        t->lazy = t->cur->b->n >= run->batch_size;
        if (process_batch(t) != TDM_OK) {
            rt_fail(run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
                    t->src->node->name);
            break;
        }
        report_finished(t, eof != 0);
        /* Rows first, then whatever the periodic tick emits. */
        flush_rows(t);
        if (!t->lazy)
            kick(t);
        tdm_reader_advance(t->reader);
        tdm__sbatch_release(t->cur);
        t->cur = NULL;
    }
    if (t->cur) {
        tdm__sbatch_release(t->cur);
        t->cur = NULL;
    }
    /* Nothing more follows: no item may wait for a wake-up. */
    t->lazy = false;
    kick(t);
    /* End of input (or cancel): the maximum watermark, then END. */
    if (!atomic_load(&run->abort)) {
        tdm_reader_end(t->reader);
        broadcast(t, TDM__ITEM_END, TDM_TIME_MAX, 0);
    }
    if (t->conn) {
        t->src->vt->close(t->conn);
        t->conn = NULL;
    }
    rt_thread_done(run);
    return NULL;
}

/* Opens the connector share, the reader and the batch pool. */
tdm_err rt_source_task_init(rt_src_task *t)
{
    tdm__run *run = t->run;
    rt_source *s = t->src;
    char msg[256] = "";
    int n_parts = 0;
    tdm_err err = rt_clock_new(run->job, &t->clk);
    if (err != TDM_OK)
        return err;
    err = s->vt->open(&s->conf, t->index, run->P, conn_dead, t, &t->conn,
                      &n_parts, msg, sizeof msg);
    if (err != TDM_OK) {
        t->conn = NULL;
        rt_fail(run, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
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
    t->empty = n_parts == 0 && (s->conf.partition_field < 0 || t->index > 0);
    err = tdm_reader_new(0, s->strat, t->clk, reader_emit, t, &t->reader);
    if (err == TDM_OK && n_parts > 0)
        err = ensure_partition(t, n_parts - 1);
    if (err == TDM_OK)
        err = ensure_arrays(t, 16);
    if (err == TDM_OK) {
        /* Batches out at once: queue capacity per channel plus the one
         * being filled and the one being consumed. */
        err = tdm__pool_init(&t->pool, s->schema, run->batch_size,
                             s->n_targets, run->qcap + 2, &run->abort,
                             run->job);
        t->pool_ok = err == TDM_OK;
        t->pool.before_wait = before_pool_wait;
        t->pool.before_wait_ud = t;
    }
    if (err == TDM_OK) {
        t->unkicked = tdm__calloc(s->n_targets > 0 ? (size_t)s->n_targets
                                                   : 1, 1);
        if (!t->unkicked)
            err = TDM_ERR_NOMEM;
    }
    if (err != TDM_OK)
        rt_fail(run, err, "source \"%s\": out of memory", s->node->name);
    return err;
}

/* Closes and frees a source subtask (a half-built one too). */
void rt_source_task_fini(rt_src_task *t)
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
    tdm__free(t->uc);
    tdm__free(t->pmax);
    tdm__free(t->touched);
    tdm__free(t->unkicked);
    tdm__free(t->kb.p);
    memset(t, 0, sizeof *t);
}
