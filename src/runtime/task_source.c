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
 */
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/ckpt.h"
#include "runtime/expr.h"
#include "runtime/localagg.h"
#include "runtime/outbox_route.h"
#include "runtime/src_metrics.h"
#include "runtime/task_op.h"
#include "runtime/task_source.h"
#include "state/ckpt_codec.h"
#include "time/wm.h"

/* Debug log (log.level debug): one line per watermark the subtask
 * emits, naming the partition with the lowest watermark. */
static void debug_watermark(rt_src_task *t, tdm_time_ms wm)
{
    char from[48], to[48];
    const char *low = "-";
    tdm_time_ms lw = TDM_TIME_MAX;
    for (int p = 0; p < t->n_parts; p++) {
        tdm_time_ms w = tdm_reader_split_watermark_get(t->reader, p);
        if (!t->reported[p] && w < lw) {
            lw = w;
            low = t->parts[p].name ? t->parts[p].name : "?";
        }
    }
    rt_format_ms(t->wm_out, from, sizeof from);
    rt_format_ms(wm, to, sizeof to);
    tdm__job_log(t->run->job,
                 "debug wm vertex=%s subtask=%d from=%s to=%s "
                 "partition_min=%s",
                 t->src->node->name, t->index, from, to, low);
}

/* ---- Alignment ---- */

/* Makes the connector's pause state of every live split what alignment
 * wants: paused when the reader paused the split, or (version 2) the
 * whole reader.  Version-1 sources pause by not polling (the loop), so
 * only version 2 with a pause member gets calls.  Each change is a
 * debug log line. */
static void apply_pauses(rt_src_task *t)
{
    const tdm__source_vtab *vt = t->src->vt;
    if (!t->src->v2 || !vt->pause)
        return;
    for (int p = 0; p < t->n_parts; p++) {
        if (t->reported[p])
            continue;
        uint8_t want = t->reading_paused ||
                       tdm_reader_split_is_paused(t->reader, p) == 1;
        if (want == t->ppaused[p])
            continue;
        t->ppaused[p] = want;
        vt->pause(t->conn, p, want);
        if (t->run->debug)
            tdm__job_log(t->run->job,
                         "debug pause vertex=%s subtask=%d partition=%s "
                         "paused=%d",
                         t->src->node->name, t->index,
                         t->parts[p].name ? t->parts[p].name : "?", want);
    }
}

/* The reader's alignment events: its report goes to the group's
 * coordinator (under the group's lock: every source thread of the group
 * calls it); pauses and resumes of splits or of the whole reader reach
 * the connector through apply_pauses. */
static void reader_align(rt_src_task *t, const tdm_event *ev)
{
    rt_align *a = t->src->align;
    switch (ev->type) {
    case TDM_EVENT_REPORTED:
        if (a) {
            pthread_mutex_lock(&a->mu);
            tdm_align_coord_report(a->coord, t->src->align_base + t->index,
                                   ev->time);
            pthread_mutex_unlock(&a->mu);
        }
        break;
    case TDM_EVENT_READING_PAUSED:
    case TDM_EVENT_READING_RESUMED:
        t->reading_paused = ev->type == TDM_EVENT_READING_PAUSED;
        if (!t->src->v2 && t->run->debug)
            tdm__job_log(t->run->job,
                         "debug pause vertex=%s subtask=%d partition=* "
                         "paused=%d",
                         t->src->node->name, t->index, t->reading_paused);
        apply_pauses(t);
        break;
    case TDM_EVENT_SPLIT_PAUSED:
    case TDM_EVENT_SPLIT_RESUMED:
        apply_pauses(t);
        break;
    default:
        break;
    }
}

/* The reader's output: watermarks and idle/active statuses, and the
 * alignment events (reader_align).  Called from inside
 * tdm_reader_record (on-event watermarks), tdm_reader_advance (periodic,
 * reports), tdm_reader_announce and tdm_reader_end. */
static void reader_emit(void *opaque, const tdm_event *ev)
{
    rt_src_task *t = opaque;
    if (ev->type == TDM_EVENT_WATERMARK) {
        if (t->run->debug)
            debug_watermark(t, ev->time);
        /* Published after the splits' watermarks (publish_partitions),
         * so that a snapshot never sees the output ahead of them. */
        t->wm_out = ev->time;
        /* A watermark sent outside scan_batch follows every row polled
         * so far (broadcast flushes them first): see mark(). */
        t->wm_after_rows = !t->scanning;
        t->sweep = true;
        tdm__outbox_broadcast(t, TDM__ITEM_WATERMARK, ev->time, 0);
    } else if (ev->type == TDM_EVENT_STATUS) {
        t->idle = ev->idle != 0;
        t->reader_idle = t->idle;
        t->sweep = true;
        tdm__outbox_broadcast(t, TDM__ITEM_STATUS, 0, ev->idle);
    } else {
        reader_align(t, ev);
    }
}

/* ---- Dead letters ---- */

/* Without a dead letter sink, malformed records are reported on the log,
 * but only the first few: a file of garbage must not flood stderr. */
#define MAX_LOGGED_BAD 10

/* Counts a malformed record and hands it to the dead letter sink (shared,
 * thread-safe) or the log. */
static void dead_letter(rt_src_task *t, const char *source,
                        const char *location, const char *reason,
                        const char *raw, size_t raw_len, bool malformed)
{
    tdm__run *run = t->run;
    if (malformed)
        rt_count(run, TDM_STAT_BAD_RECORDS, 1);
    if (run->dead) {
        tdm_err err = run->dead->vt->write_dead(t->ck.obj[1], location,
                                                reason, raw, raw_len);
        if (err != TDM_OK) {
            char why[400];
            rt_sink_why(run->dead, t->ck.obj[1], why, sizeof why);
            rt_fail(run, TDM_ERR_IO, "sink \"%s\": writing a dead letter "
                                     "to %s failed%s",
                    run->dead->node->name,
                    *run->dead->conf.path ? run->dead->conf.path
                                          : "stdout",
                    why);
        }
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
    rt_pub_add(&t->m.bad, 1);
    if (t->run->dead)
        rt_pub_add(&t->m.dead, 1);
    dead_letter(t, t->src->node->name, location, reason, raw, raw_len,
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
        int *mt = tdm__realloc(t->mtouched, (size_t)cap * sizeof *mt);
        if (!mt)
            return TDM_ERR_NOMEM;
        t->mtouched = mt;
        tdm_time_ms *fl = tdm__realloc(t->floor, (size_t)cap * sizeof *fl);
        if (!fl)
            return TDM_ERR_NOMEM;
        t->floor = fl;
        tdm_time_ms *hz = tdm__realloc(t->hzbuf, (size_t)cap * sizeof *hz);
        if (!hz)
            return TDM_ERR_NOMEM;
        t->hzbuf = hz;
        uint8_t *pz = tdm__realloc(t->ppaused, (size_t)cap);
        if (!pz)
            return TDM_ERR_NOMEM;
        t->ppaused = pz;
        if (t->src->fence) {
            size_t ne = (size_t)t->src->n_edges;
            rt_keyset *fk = tdm__realloc(t->fk, (size_t)cap * ne * sizeof *fk);
            if (!fk)
                return TDM_ERR_NOMEM;
            memset(fk + (size_t)t->fk_cap * ne, 0,
                   (size_t)(cap - t->fk_cap) * ne * sizeof *fk);
            t->fk = fk;
            t->fk_cap = cap;
        }
        for (int p = t->part_cap; p < cap; p++) {
            fl[p] = TDM_TIME_MIN;
            pz[p] = 0;
        }
        rt_phot *h = tdm__realloc(t->hot, (size_t)cap * sizeof *h);
        if (!h)
            return TDM_ERR_NOMEM;
        t->hot = h;
        for (int p = t->part_cap; p < cap; p++) {
            memset(&h[p], 0, sizeof h[p]);
            h[p].hi = TDM_TIME_MIN;
        }
        /* Snapshots read parts under mx: the move must not race them. */
        pthread_mutex_lock(&t->mx);
        rt_part *pa = tdm__realloc(t->parts, (size_t)cap * sizeof *pa);
        if (pa) {
            t->parts = pa;
            for (int p = t->part_cap; p < cap; p++) {
                rt_part *pp = &pa[p];
                memset(pp, 0, sizeof *pp);
                pp->global = -1;
                atomic_init(&pp->p_records, 0);
                atomic_init(&pp->p_max_ts, TDM_TIME_MIN);
                atomic_init(&pp->p_last_at, TDM_TIME_MIN);
                atomic_init(&pp->p_wm, TDM_TIME_MIN);
                atomic_init(&pp->p_flags, 0);
            }
        }
        pthread_mutex_unlock(&t->mx);
        if (!pa)
            return TDM_ERR_NOMEM;
        memset(t->finished + t->part_cap, 0, (size_t)(cap - t->part_cap));
        memset(t->reported + t->part_cap, 0, (size_t)(cap - t->part_cap));
        memset(t->uc + t->part_cap, 0,
               (size_t)(cap - t->part_cap) * sizeof *u);
        t->part_cap = cap;
    }
    return TDM_OK;
}

/* The sorted files a file source's glob names (as the connector sees
 * them: folders left out), for partition names; *n = 0 when none. */
static char **list_files(const char *pattern, size_t *n)
{
    glob_t g;
    char **list = NULL;
    *n = 0;
    memset(&g, 0, sizeof g);
    if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
        list = tdm__calloc(g.gl_pathc, sizeof *list);
        for (size_t i = 0; list && i < g.gl_pathc; i++) {
            struct stat st;
            if (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode))
                continue;
            list[*n] = tdm__strndup(g.gl_pathv[i], strlen(g.gl_pathv[i]));
            if (list[*n])
                (*n)++;
        }
    }
    globfree(&g);
    return list;
}

/* Names partitions [from, to) of the subtask as metrics label them, and
 * numbers them within the source: a file source's files are dealt
 * round-robin (local partition l of subtask i is file i + l * P of the
 * sorted glob), generator partitions likewise; partitions named by a
 * field take the field's value from @p row, the first row of the
 * partition (in order of appearance, read by subtask 0 only); stdin and
 * TCP have one partition.  A name that cannot be had is the number. */
static void name_partitions(rt_src_task *t, int from, int to,
                            const tdm__row *row)
{
    const tdm__source_conf *c = &t->src->conf;
    int P = t->run->P;
    char **files = NULL;
    size_t n_files = 0;
    bool by_field = c->partition_field >= 0;
    if (!by_field && !t->src->node->src_vt && c->type == TDM__SRC_FILE &&
        c->path && *c->path)
        files = list_files(c->path, &n_files);
    for (int l = from; l < to; l++) {
        rt_part *pp = &t->parts[l];
        char buf[256];
        /* A version-2 connector names its partitions ("clicks[3]"). */
        const char *name = t->src->v2 && t->src->vt->partition_name
                               ? t->src->vt->partition_name(t->conn, l)
                               : NULL;
        int global = by_field || c->type == TDM__SRC_STDIN ||
                             c->type == TDM__SRC_TCP
                         ? l
                         : t->index + l * P;
        if (name) {
            /* as named */
        } else if (by_field && row && l == to - 1) {
            const tdm__val *v = &row->v[c->partition_field];
            tdm_type ty = c->schema->fields[c->partition_field].type;
            if (v->null)
                snprintf(buf, sizeof buf, "null");
            else if (ty == TDM_TYPE_STRING)
                snprintf(buf, sizeof buf, "%.*s", (int)v->u.s.len,
                         v->u.s.p);
            else if (ty == TDM_TYPE_DOUBLE)
                snprintf(buf, sizeof buf, "%.17g", v->u.d);
            else if (ty == TDM_TYPE_BOOL)
                snprintf(buf, sizeof buf, "%s", v->u.i ? "true" : "false");
            else
                snprintf(buf, sizeof buf, "%lld", (long long)v->u.i);
            name = buf;
        } else if (c->type == TDM__SRC_STDIN && !t->src->node->src_vt) {
            name = "stdin";
        } else if (c->type == TDM__SRC_TCP && !t->src->node->src_vt) {
            name = c->tcp_address;
        } else if (files && (size_t)global < n_files) {
            name = files[global];
        }
        if (!name) {
            snprintf(buf, sizeof buf, "%d", global);
            name = buf;
        }
        char *copy = tdm__strndup(name, strlen(name));
        pthread_mutex_lock(&t->mx);
        tdm__free(pp->name);
        pp->name = copy;
        pp->global = global;
        pthread_mutex_unlock(&t->mx);
    }
    for (size_t i = 0; i < n_files; i++)
        tdm__free(files[i]);
    tdm__free(files);
    pthread_mutex_lock(&t->mx);
    if (to > t->n_pub)
        t->n_pub = to;
    pthread_mutex_unlock(&t->mx);
}

/* Version 2: splits [from, n_parts) were just assigned.  Each gets the
 * replay floor its previous owner committed (TDM_TIME_MAX, a drained
 * run's, is no floor: that run finished, later records are new input);
 * a subtask idle for want of splits becomes active again at once, so
 * that the new (maybe silent) splits hold its consumers as the seeds
 * describe; a paused reader pauses them too. */
static void splits_added(rt_src_task *t, int from)
{
    const tdm__source_vtab *vt = t->src->vt;
    for (int p = from; p < t->n_parts; p++) {
        tdm_time_ms f = vt->partition_floor ? vt->partition_floor(t->conn, p)
                                            : TDM_TIME_MIN;
        t->floor[p] = f == TDM_TIME_MAX ? TDM_TIME_MIN : f;
        if (t->floor[p] != TDM_TIME_MIN)
            t->any_floor = true;
        t->n_live++;
    }
    /* The first split of any subtask of the source starts the others'
     * grace (idle_without_splits). */
    tdm_time_ms now = tdm_clock_now(t->clk);
    tdm_time_ms first = atomic_load(&t->src->first_live);
    while (now < first &&
           !atomic_compare_exchange_weak(&t->src->first_live, &first, now))
        ;
    /* (A reader idle by its own account stays so: it says ACTIVE with
     * its next watermark.) */
    if (t->forced_idle) {
        t->forced_idle = false;
        if (!t->reader_idle) {
            t->idle = false;
            t->sweep = true;
            tdm__outbox_broadcast(t, TDM__ITEM_STATUS, 0, 0);
        }
    }
    apply_pauses(t);
}

/* Makes the arrays and the reader cover partition @p p (partitions
 * named by a field appear as rows arrive; @p row is the first row of
 * @p p then, NULL at setup).  Splits a restored reader already has
 * (partitions named by a field that the checkpoint knew) are not
 * added again. */
static tdm_err ensure_partition(rt_src_task *t, int p, const tdm__row *row)
{
    if (ensure_arrays(t, 2 * (p + 1) + 16) != TDM_OK)
        return TDM_ERR_NOMEM;
    int from = t->n_parts;
    while (t->n_parts <= p) {
        int idx;
        if (tdm__reader_split_count(t->reader) <= t->n_parts &&
            tdm_reader_add_split(t->reader, &idx) != TDM_OK)
            return TDM_ERR_NOMEM;
        t->n_parts++;
    }
    if (t->n_parts > from) {
        name_partitions(t, from, t->n_parts, row);
        if (t->src->v2)
            splits_added(t, from);
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
    if (u->n <= 0)
        return;
    const char *what = NULL;
    tdm_time_ms as_ms = 0;
    int suspect = 0;
    if (u->small * 2 > u->n) {
        what = "seconds";
        as_ms = u->first * 1000;
        suspect = 1;
    } else if (u->big * 2 > u->n) {
        bool ns = u->first >= 100000000000000000LL;
        what = ns ? "nanoseconds" : "microseconds";
        as_ms = u->first / (ns ? 1000000 : 1000);
        suspect = ns ? 3 : 2;
    }
    u->n = -1; /* judged */
    /* The subtask's suspicion is a metric (TS_UNIT); the warning is
     * logged once per source. */
    if (suspect && !t->unit) {
        t->unit = suspect;
        rt_pub_set(&t->m.unit, suspect);
    }
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
static inline __attribute__((always_inline)) void
unit_observe(rt_src_task *t, int p, tdm_time_ms ts)
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

/* Whether some partition of the subtask still collects unit evidence
 * (unit_observe), so that a batch must look at its timestamps. */
static bool unit_open(const rt_src_task *t)
{
    for (int p = 0; p < t->n_parts && p < t->part_cap; p++)
        if (t->uc[p].n >= 0)
            return true;
    return false;
}

/* Runs the job file's filter and computes (expr.c), then the user's
 * filters and maps; false when a filter drops the row. */
static bool run_udfs(const tdm_node *n, tdm__row *row)
{
    if (n->exprs && !tdm__src_exprs_apply(n->exprs, row))
        return false;
    for (int i = 0; i < n->n_udfs; i++) {
        const tdm__udf *u = &n->udfs[i];
        if (u->is_map)
            u->map(u->ud, row);
        else if (!u->filter(u->ud, row))
            return false;
    }
    return true;
}

/* The timestamp above which the connector notes each row's location
 * and raw bytes in this poll's batch (row.h, keep_after): the guard's
 * limit at the previous poll's clock reading.  The limit the scan uses,
 * read after this poll, is no lower, so every row the guard catches was
 * noted; a row between the two limits is noted for nothing, which is
 * rare unless the clock jumped (the first poll notes every row with a
 * timestamp).  Nothing is noted when the guard dead-letters nothing. */
static tdm_time_ms keep_after(const rt_src_task *t)
{
    if (!t->run->guard_dead || t->run->guard <= 0 ||
        t->src->conf.time_mode != TDM__TIME_EVENT)
        return TDM_TIME_MAX;
    return t->now ? tdm__time_add_sat(t->now, t->run->guard) : TDM_TIME_MIN;
}

/* Sends a row caught by the timestamp guard to the dead letter output,
 * with the reason spelled out, located and shown as its source noted it
 * (file:line and the line, topic[p]@offset and the message); a row
 * without a note (a generator's, one read back from a repartition topic,
 * one the source had no memory to note) at its partition and rendered as
 * text. */
static void guard_dead_letter(rt_src_task *t, const tdm__row *row)
{
    char loc[160], reason[256], raw[1024], iso[48], span[32], lim[32];
    tdm__format_iso(row->ts, iso, sizeof iso);
    tdm__conf_format_duration(row->ts - t->now, span, sizeof span);
    tdm__conf_format_duration(t->run->guard, lim, sizeof lim);
    snprintf(reason, sizeof reason,
             "timestamp %s is %s ahead of processing time (timestamp_guard "
             "%s)",
             iso, span, lim);
    if (t->run->dead)
        rt_pub_add(&t->m.dead, 1);
    /* Counted as a guard hit by the caller, not as malformed. */
    const tdm__kept *k = tdm__batch_kept(t->cur->b, row);
    if (k) {
        dead_letter(t, t->src->node->name, k->location, reason, k->raw,
                    k->raw_len, false);
        return;
    }
    snprintf(loc, sizeof loc, "%s partition %u", t->src->node->name,
             row->partition);
    tdm__row_render(row, raw, sizeof raw);
    dead_letter(t, t->src->node->name, loc, reason, raw, strlen(raw),
                false);
}

/* Specialisations of scan_batch (lean_kind; and the local aggregate). */
enum { LEAN_NO = 0, LEAN_P1, LEAN_PN };
enum { LAGG_NO = 0, LAGG_ANY, LAGG_COUNT };

/* tdm__hist_bucket without its branch: whether a lag is below 256 (its
 * own bucket) or not is a coin toss for out-of-order data, and a
 * mispredicted branch per record costs more than computing both
 * answers and selecting one. */
static inline int lag_bucket(int64_t v)
{
    uint64_t u = (uint64_t)v;
    int x = 63 - __builtin_clzll(u | 1) - TDM__HIST_SUB_BITS;
    int big = -(x > 0);   /* all ones when v >= 256 (a compare, no jump) */
    int b = TDM__HIST_EXACT + (x - 1) * (1 << TDM__HIST_SUB_BITS) +
            (int)(u >> (x & big)) - (1 << TDM__HIST_SUB_BITS);
    return (b & big) | ((int)u & ~big);
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
 * order are counted by exception, below).  Inlined into process_batch
 * with and without the lag histogram, so that a batch it does not sample
 * pays no test per row for it, and for lean batches (@p lean, see
 * lean_kind) with what they cannot have folded away.  @p lagg: LAGG_NO
 * (no local aggregate), LAGG_ANY, or LAGG_COUNT (edge 0's is a single
 * count(), which the fold then knows at compile time). */
static inline __attribute__((always_inline)) tdm_err
scan_batch(rt_src_task *t, const uint32_t seq, const bool lag_on,
           const int lean, const int lagg)
{
    rt_source *s = t->src;
    tdm__batch *b = t->cur->b;
    const tdm__source_conf *c = &s->conf;
    /* Loop invariants in locals: the compiler cannot tell that the
     * stores below leave them alone.  A lean batch (lean_kind) has them
     * as constants, and the branches they decide fold away. */
    const int mode = lean ? TDM__TIME_EVENT : c->time_mode;
    /* The unit check looks at the first rows of each partition only:
     * once every partition is judged, the batch skips it. */
    bool unit_check = mode == TDM__TIME_EVENT &&
                      c->ts_unit == TDM__UNIT_MS && unit_open(t);
    /* The routing of a source with one or two consumers (the common
     * cases; two: NEXMark q7's bids feed a window and a join) is decided
     * here once: each edge's key kind depends on the schema only.  More
     * edges go through route_all. */
    const int P = lean == LEAN_P1 ? 1 : t->run->P;
    const bool fence = lean ? false : s->fence;
    const int n_edges = lean ? 1 : s->n_edges;
    const int kind0 = lean ? TDM__KEY_BY_INT
                      : n_edges == 1 || n_edges == 2
                          ? tdm__outbox_key_kind(b->schema, &s->edges[0])
                          : -1;
    const int kind1 =
        n_edges == 2 ? tdm__outbox_key_kind(b->schema, &s->edges[1]) : -1;
    /* Edges 0 and 1: key field and their targets' selections. */
    const size_t cap = t->run->batch_size;
    const int tb0 = s->n_edges ? s->edges[0].target_base : 0;
    const int kfield0 = s->n_edges && s->edges[0].n_key
                            ? s->edges[0].key_idx[0]
                            : -1;
    tdm__sel *const sel0 = t->cur->sel + (size_t)tb0 * cap;
    uint32_t *const sel_n0 = t->cur->sel_n + tb0;
    const int tb1 = n_edges == 2 ? s->edges[1].target_base : 0;
    const int kfield1 = n_edges == 2 && s->edges[1].n_key
                            ? s->edges[1].key_idx[0]
                            : -1;
    tdm__sel *const sel1 = t->cur->sel + (size_t)tb1 * cap;
    uint32_t *const sel_n1 = t->cur->sel_n + tb1;
    const bool max_only = s->wm_max_only;
    const bool guard_dead = t->run->guard_dead;
    /* Two-phase aggregation: edge 0's local aggregate (and whether any
     * edge has one). */
    const bool any_lagg = lagg != LAGG_NO;
    rt_lagg *const lagg0 = any_lagg ? t->lagg[0] : NULL;
    rt_lagg *const lagg1 = any_lagg && n_edges == 2 ? t->lagg[1] : NULL;
    /* Count slots of a lean count are fetched ahead when they scatter
     * keys (localagg.h); in direct mode rows share their lines and the
     * look ahead costs more than it saves (about 10 % of NEXMark-W). */
    const bool prefetch = lean && lagg == LAGG_COUNT && lagg0->cs_scatter;
    const int n_udfs = lean ? 0 : s->node->n_udfs + (s->node->exprs != NULL);
    rt_sink *const pass = lean ? NULL : s->pass;
    int64_t passed = 0;
    tdm_time_ms limit = t->run->guard > 0
                            ? tdm__time_add_sat(t->now, t->run->guard)
                            : TDM_TIME_MAX;
    int64_t guard_hits = 0, skipped = 0, filtered = 0;
    uint64_t behind = 0;
    int n_mt = 0;
    int *touched = t->mtouched;
    rt_phot *hot = t->hot;
    uint64_t *lag_b = t->lag.b;
    uint64_t lag_max = t->lag_max;
    int n_parts = t->n_parts;
    for (size_t i = 0; i < b->n; i++) {
        tdm__row *row = &b->rows[i];
        const uint32_t p = row->partition;
        if (prefetch && i + RT_LAGG_AHEAD < b->n) {
            /* The fold's count slot of a row ahead (a fixed-width key). */
            const tdm__row *ahead = &b->rows[i + RT_LAGG_AHEAD];
            rt_lagg_prefetch_fixed(lagg0, ahead->ts,
                                   tdm__key_fixed_bits(&ahead->v[kfield0],
                                                       TDM_TYPE_INT64));
        }
        if ((int)p >= n_parts) {
            if (ensure_partition(t, (int)p, row) != TDM_OK)
                return TDM_ERR_NOMEM;
            n_parts = t->n_parts;
            touched = t->mtouched;
            hot = t->hot;
            /* A new partition is yet to be judged. */
            unit_check = mode == TDM__TIME_EVENT &&
                         c->ts_unit == TDM__UNIT_MS;
        }
        /* Partition metrics: records read. */
        rt_phot *ph = &hot[p];
        ph->n++;
        if (mode != TDM__TIME_EVENT)
            row->ts = t->now;
        if (n_udfs && !run_udfs(s->node, row)) {
            skipped++;
            filtered++;
            continue;
        }
        bool guarded = false;
        if (mode == TDM__TIME_EVENT) {
            if (unit_check)
                unit_observe(t, (int)p, row->ts);
            if (row->ts > limit) {
                guarded = true;
                row->flags |= TDM__ROW_GUARDED;
                guard_hits++;
                if (guard_dead) {
                    guard_dead_letter(t, row);
                    skipped++;
                    continue;
                }
            }
        }
        /* Guarded rows (far ahead) and rows without a timestamp go raw:
         * the window subtask treats them exactly as without the local
         * phase. */
        const bool local = any_lagg && !guarded && row->ts != TDM_TIME_MIN;
        tdm_err rerr;
        if (kind1 >= 0) {
            /* Two edges, in route_all's order. */
            rerr = tdm__outbox_route_edge(t, row, (uint32_t)i, 0, kind0,
                                          kfield0, P, fence, sel0, sel_n0, cap,
                                          local ? lagg0 : NULL, false);
            if (rerr == TDM_OK)
                rerr = tdm__outbox_route_edge(t, row, (uint32_t)i, 1, kind1,
                                              kfield1, P, fence, sel1, sel_n1,
                                              cap, local ? lagg1 : NULL, false);
        } else {
            rerr = kind0 >= 0
                       ? tdm__outbox_route_edge(t, row, (uint32_t)i, 0, kind0,
                                                kfield0, P, fence, sel0, sel_n0,
                                                cap, local ? lagg0 : NULL,
                                                lagg == LAGG_COUNT)
                       : tdm__outbox_route_all(t, row, (uint32_t)i, P, fence,
                                               local);
        }
        if (rerr != TDM_OK)
            return TDM_ERR_NOMEM;
        if (pass) {
            /* Pass-through: the row as read, written by this subtask
             * (the sink serialises writers). */
            if (pass->vt->write_row(t->ck.obj[0], row) != TDM_OK) {
                char why[400];
                rt_sink_why(pass, t->ck.obj[0], why, sizeof why);
                rt_fail(t->run, TDM_ERR_IO,
                        "sink \"%s\": writing a record of source \"%s\" "
                        "to %s failed%s",
                        pass->node->name, s->node->name,
                        pass->conf.path && *pass->conf.path
                            ? pass->conf.path
                            : "stdout",
                        why);
                return TDM_ERR_IO;
            }
            passed++;
        }
        if (guarded || mode == TDM__TIME_PROCESSING) {
            if (ph->stamp != seq) {
                ph->stamp = seq;
                touched[n_mt++] = (int)p;
            }
            continue;
        }
        /* Event lag: how far the row is behind the highest timestamp
         * its partition has seen.  A row in order costs no count (they
         * are added in bulk below); only a row behind the maximum costs
         * a bucket. */
        tdm_time_ms ts = row->ts;
        const tdm_time_ms hi = ph->hi;
        /* Selects rather than jumps: in or out of order is a coin toss. */
        ph->hi = ts > hi ? ts : hi;
        if (lag_on && ts < hi) {
            const uint64_t lag = (uint64_t)hi - (uint64_t)ts;
            lag_b[lag_bucket((int64_t)lag)]++;
            lag_max = lag > lag_max ? lag : lag_max;
            behind++;
        }
        /* The partitions this batch touched with a timestamp the
         * generator sees (their metrics are published below, and with
         * wm_max_only the generator is called once for each). */
        if (ph->gen != seq) {
            ph->gen = seq;
            if (ph->stamp != seq) {
                ph->stamp = seq;
                touched[n_mt++] = (int)p;
            }
        }
        if (!max_only) {
            /* The row is on its way; now the generator may see it (an
             * on-event watermark then follows the row downstream). */
            tdm_record rec = { .ts = ts, .payload = row,
                               .payload_len = sizeof *row };
            tdm_reader_record(t->reader, (int)p, &rec);
        }
    }
    /* A generator that keeps only a maximum and emits on the periodic
     * tick (after this batch is sent) cannot tell one call with the
     * partition's highest timestamp from one call per row: the maximum,
     * and the activity its idleness timer looks for (one call per batch
     * with such rows), come out the same. */
    if (max_only)
        for (int k = 0; k < n_mt; k++) {
            const rt_phot *ph = &hot[touched[k]];
            if (ph->gen != seq)
                continue;
            tdm_record rec = { .ts = ph->hi };
            tdm_reader_record(t->reader, touched[k], &rec);
        }
    rt_count(t->run, TDM_STAT_GUARD_HITS, guard_hits);
    if (passed)
        rt_count(t->run, TDM_STAT_RECORDS_OUT, passed);
    rt_count(t->run, TDM_STAT_FILTERED, filtered);
    /* Publish once per batch: counters, the lag histogram's totals, and
     * the touched partitions' records, highest timestamp and last record
     * time.  Rows routed are those not skipped; rows with an event
     * timestamp (not guarded, not processing time) those routed minus
     * the guarded ones still routed. */
    int64_t routed = (int64_t)b->n - skipped;
    if (mode != TDM__TIME_PROCESSING) {
        int64_t timed = routed - (guard_dead ? 0 : guard_hits);
        /* The histogram's maximum is set when the quantiles are
         * published (publish_lag). */
        if (lag_on) {
            lag_b[0] += (uint64_t)timed - behind;
            t->lag.n += (uint64_t)timed;
        }
        t->lag_seen += (uint64_t)timed;
        t->lag_max = lag_max;
    }
    rt_pub_add(&t->m.guard, guard_hits);
    rt_pub_add(&t->m.out, routed);
    tdm_time_ms vmax = rt_pub_get(&t->m.max_ts);
    for (int k = 0; k < n_mt; k++) {
        const rt_phot *ph = &hot[touched[k]];
        rt_part *pp = &t->parts[touched[k]];
        rt_pub_set(&pp->p_records, ph->n);
        rt_pub_set(&pp->p_last_at, t->now);
        if (ph->hi != rt_pub_get(&pp->p_max_ts))
            rt_pub_set(&pp->p_max_ts, ph->hi);
        if (ph->hi > vmax)
            vmax = ph->hi;
    }
    t->n_mt = n_mt;
    if (n_mt) {
        rt_pub_set(&t->m.last_at, t->now);
        rt_pub_set(&t->m.max_ts, vmax);
    }
    return TDM_OK;
}

/* Whether a batch of the subtask is lean - event time, no filter or
 * map, one consumer keyed by one int64, timestamp or bool field, no key
 * fence - and at which parallelism (LEAN_P1: one target, no hashing):
 * the scan of such a batch is specialised (scan_batch), as most keyed
 * counts and NEXMark-W are. */
static int lean_kind(const rt_src_task *t)
{
    const rt_source *s = t->src;
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
static tdm_err process_batch(rt_src_task *t)
{
    const uint32_t seq = ++t->seq;
    const bool lag_on = seq <= RT_LAG_EXACT_BATCHES ||
                        seq % RT_LAG_EVERY == 0;
    /* Two-phase aggregation (t->any_lagg) is a variant of its own too:
     * without it the scan pays nothing for it. */
    const int la = t->any_lagg ? LAGG_ANY : LAGG_NO;
    switch (lean_kind(t)) {
    case LEAN_P1:
        /* A lean batch has one edge: a count's fold is its own variant
         * (the common keyed count, NEXMark-W). */
        if (la && t->lagg[0] && t->lagg[0]->count)
            return lag_on ? scan_batch(t, seq, true, LEAN_P1, LAGG_COUNT)
                          : scan_batch(t, seq, false, LEAN_P1, LAGG_COUNT);
        if (la)
            return lag_on ? scan_batch(t, seq, true, LEAN_P1, LAGG_ANY)
                          : scan_batch(t, seq, false, LEAN_P1, LAGG_ANY);
        return lag_on ? scan_batch(t, seq, true, LEAN_P1, LAGG_NO)
                      : scan_batch(t, seq, false, LEAN_P1, LAGG_NO);
    case LEAN_PN:
        if (la && t->lagg[0] && t->lagg[0]->count)
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

/* Publishes the event lag quantiles of the subtask's histogram and the
 * maximum (-1 while no record had a lag).  The per-record path only
 * counts buckets of the sampled batches and keeps their largest lag
 * (exact, not a bucket's bound), set here as the histogram's maximum
 * (the quantiles never exceed it). */
static void publish_lag(rt_src_task *t)
{
    static const double q[3] = { 0.5, 0.99, 0.999 };
    tdm__hist *h = &t->lag;
    h->max = t->lag_max > (uint64_t)INT64_MAX ? INT64_MAX
                                               : (int64_t)t->lag_max;
    bool any = t->lag_seen > 0;
    for (int i = 0; i < 3; i++)
        rt_pub_set(&t->m.lag[i],
                   any && h->n ? tdm__hist_quantile(h, q[i]) : -1);
    rt_pub_set(&t->m.lag[3], any ? h->max : -1);
}

/* Publishes the watermark (and alignment pause) of the partitions this
 * batch touched, or of every partition when the reader emitted or
 * @p all is set or about every 200 ms (an idle partition's watermark
 * changes without records; a partition whose rows were all filtered out
 * or guarded has its records published then); then, about once per
 * second, the event lag quantiles (not per record: a quantile walks the
 * histogram). */
static void publish_partitions(rt_src_task *t, bool all)
{
    if (t->sweep || t->now >= t->sweep_next)
        all = true;
    int n = all ? t->n_parts : t->n_mt;
    for (int k = 0; k < n; k++) {
        int p = all ? k : t->mtouched[k];
        rt_part *pp = &t->parts[p];
        const rt_phot *ph = &t->hot[p];
        if (all && ph->n != rt_pub_get(&pp->p_records)) {
            rt_pub_set(&pp->p_records, ph->n);
            rt_pub_set(&pp->p_last_at, t->now);
        }
        tdm_time_ms w = tdm_reader_split_watermark_get(t->reader, p);
        if (w != rt_pub_get(&pp->p_wm))
            rt_pub_set(&pp->p_wm, w);
        int64_t f = rt_pub_get(&pp->p_flags) &
                    ~(int64_t)(RT_PF_PAUSED | RT_PF_IDLE);
        if (tdm_reader_split_is_paused(t->reader, p) == 1)
            f |= RT_PF_PAUSED;
        if (tdm_reader_split_is_idle(t->reader, p) == 1)
            f |= RT_PF_IDLE;
        rt_pub_set(&pp->p_flags, f);
    }
    if (all) {
        t->sweep = false;
        t->sweep_next = tdm__time_add_sat(t->now, 200);
        /* The subtask's output and status last (release: a snapshot that
         * reads them, acquiring, sees the splits as new as they). */
        rt_pub_set(&t->m.idle, t->idle);
        atomic_store_explicit(&t->m.wm_out, t->wm_out, memory_order_release);
    }
    t->n_mt = 0;
    if (t->now >= t->lag_next) {
        t->lag_next = tdm__time_add_sat(t->now, 1000);
        publish_lag(t);
    }
}

/* Key fence: split @p p was revoked while running.  Its keys with a
 * record whose results are not settled yet go, each to the window
 * subtask that owns it, in a FENCE item after the rows sent so far (so
 * every record of the split is in the operator before its keys are
 * fenced).  Out of memory fails the run. */
static void send_fence(rt_src_task *t, int p)
{
    rt_source *s = t->src;
    int P = t->run->P;
    rt_fence **msg = tdm__calloc((size_t)P, sizeof *msg);
    size_t total = 0;
    if (!msg)
        goto nomem;
    tdm__outbox_flush_rows(t);
    for (int e = 0; e < s->n_edges; e++) {
        const rt_edge *ed = &s->edges[e];
        const rt_keyset *ks = &t->fk[(size_t)p * (size_t)s->n_edges +
                                     (size_t)e];
        for (int j = 0; j < P; j++)
            msg[j] = NULL;
        for (size_t k = 0; k < ks->n; k++) {
            const rt_keyent *en = &ks->ents[k];
            int j = P > 1 ? t->run->owner[tdm__key_group(
                                en->h, t->run->key_groups)]
                          : 0;
            if (!msg[j] && !(msg[j] = tdm__calloc(1, sizeof *msg[j])))
                goto nomem;
            rt_fence *f = msg[j];
            size_t need = f->len + sizeof(uint32_t) + en->len;
            if (need > f->cap) {
                size_t cap = f->cap ? 2 * f->cap : 256;
                while (cap < need)
                    cap *= 2;
                char *nd = tdm__realloc(f->data, cap);
                if (!nd)
                    goto nomem;
                f->data = nd;
                f->cap = cap;
            }
            uint32_t len = (uint32_t)en->len;
            memcpy(f->data + f->len, &len, sizeof len);
            memcpy(f->data + f->len + sizeof len, ks->bytes + en->off,
                   en->len);
            f->len = need;
            f->n++;
        }
        for (int j = 0; j < P; j++) {
            if (!msg[j])
                continue;
            total += msg[j]->n;
            tdm__item it = { .kind = TDM__ITEM_FENCE,
                             .ch = ed->input * P + t->index,
                             .fence = msg[j] };
            msg[j] = NULL; /* the consumer's now, unless the run aborts */
            if (!tdm__queue_push(&ed->op->tasks[j].q, &it))
                rt_fence_free(it.fence);
        }
    }
    if (total > 0)
        tdm__job_log(t->run->job, "source %s subtask %d: partition %s was "
                     "revoked with %zu key(s) in open windows: fenced (their "
                     "windows are left to its next owner)",
                     s->node->name, t->index,
                     t->parts[p].name ? t->parts[p].name : "?", total);
    tdm__free(msg);
    return;
nomem:
    for (int j = 0; msg && j < P; j++)
        rt_fence_free(msg[j]);
    tdm__free(msg);
    rt_fail(t->run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
            s->node->name);
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
            if (t->src->fence && p < t->fk_cap) {
                if (t->finished[p] && t->src->vt->fenced(t->conn, p))
                    send_fence(t, p);
                for (int e = 0; e < t->src->n_edges; e++)
                    rt_keyset_free(&t->fk[(size_t)p * (size_t)t->src->n_edges
                                          + (size_t)e]);
            }
            if (t->src->v2)
                t->n_live--;
            rt_pub_set(&t->parts[p].p_flags,
                       rt_pub_get(&t->parts[p].p_flags) | RT_PF_FINISHED);
        }
    }
}

/* ---- Version 2: commits, replay floor, carried watermarks ---- */

/* Drops the rows of the current batch whose partition has a replay
 * floor and whose horizon is at or below it: their previous owner
 * already wrote every window they belong to (or would have dropped them
 * as late).  Runs before the hot loop and only while a split has a
 * floor; kept rows are moved down by swapping row slots (each slot
 * keeps its own value array). */
static void drop_replayed(rt_src_task *t)
{
    tdm__batch *b = t->cur->b;
    size_t k = 0;
    int64_t skipped = 0;
    for (size_t i = 0; i < b->n; i++) {
        const tdm__row *row = &b->rows[i];
        tdm_time_ms f = t->floor[row->partition];
        if (f != TDM_TIME_MIN && row->ts != TDM_TIME_MIN &&
            rt_horizon_of(t->src, row->ts) <= f) {
            skipped++;
            continue;
        }
        if (k != i) {
            tdm__row tmp = b->rows[k];
            b->rows[k] = b->rows[i];
            b->rows[i] = tmp;
        }
        k++;
    }
    b->n = k;
    if (!skipped)
        return;
    t->replay_skipped += skipped;
    if (!t->replay_logged) {
        t->replay_logged = true;
        tdm__job_log(t->run->job,
                     "source %s subtask %d: skipping records whose results "
                     "the partition's previous owner already wrote (replay "
                     "floor)",
                     t->src->node->name, t->index);
    }
}

/* Hands the connector a mark when the subtask's watermark moved (or
 * @p force): the positions after every row polled so far, and per split
 * the horizon of its highest timestamp.  The connector treats a mark
 * tagged w as handled once every consumer's watermark is above w.  When
 * the last watermark W went out after every polled row (a periodic
 * tick, carried watermarks, the end), consumers that reached W handled
 * them all: the tag is W - 1.  After an on-event watermark rows of the
 * same batch may follow it, so the tag is W itself (handled only at the
 * next watermark). */
static void mark(rt_src_task *t, bool force)
{
    const tdm__source_vtab *vt = t->src->vt;
    if (!t->src->v2 || !vt->mark || (!force && t->wm_out == t->marked))
        return;
    for (int p = 0; p < t->n_parts; p++)
        t->hzbuf[p] = rt_horizon_of(t->src, t->hot[p].hi);
    tdm_time_ms tag = t->wm_out;
    if (t->wm_after_rows && tag != TDM_TIME_MIN)
        tag--;
    vt->mark(t->conn, tag, t->hzbuf, t->n_parts);
    t->marked = t->wm_out;
}

/* Raises  bound to at least  v (several source threads). */
static void atomic_max(_Atomic int64_t *bound, int64_t v)
{
    int64_t cur = atomic_load_explicit(bound, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(
                          bound, &cur, v, memory_order_relaxed,
                          memory_order_relaxed))
        ;
}

/* Publishes what the connector says a previous owner may have written
 * (connect.h, replayed) before this poll's rows are pushed. */
static void note_replayed(rt_src_task *t)
{
    tdm_time_ms start_le = TDM_TIME_MIN, last_le = TDM_TIME_MIN;
    t->src->vt->replayed(t->conn, &start_le, &last_le);
    atomic_max(&t->src->replay_start, start_le);
    atomic_max(&t->src->replay_last, last_le);
}

/* Commits when the run thread published a new (processed, done) pair
 * (acquire: the pair is as new as the request). */
static void maybe_commit(rt_src_task *t)
{
    const tdm__source_vtab *vt = t->src->vt;
    unsigned req = atomic_load_explicit(&t->c_req, memory_order_acquire);
    if (req == t->c_seen || !vt->commit)
        return;
    t->c_seen = req;
    tdm_time_ms proc = atomic_load_explicit(&t->c_proc,
                                            memory_order_relaxed);
    tdm_time_ms done = atomic_load_explicit(&t->c_done,
                                            memory_order_relaxed);
    if (vt->commit(t->conn, proc, done, TDM_TIME_MIN) != TDM_OK &&
        !t->commit_warned) {
        t->commit_warned = true;
        tdm__job_log(t->run->job, "source %s subtask %d: an offset commit "
                                  "failed; the next one will retry",
                     t->src->node->name, t->index);
    }
    /* Keys whose records' results are all settled need no fence. */
    for (int i = 0; t->fk && i < t->fk_cap * t->src->n_edges; i++)
        rt_keyset_prune(&t->fk[i], done);
}

/* Watermarks the data itself carries (a repartition topic's markers),
 * applied after the poll's rows, per live split. */
static void carried_watermarks(rt_src_task *t)
{
    const tdm__source_vtab *vt = t->src->vt;
    for (int p = 0; p < t->n_parts; p++) {
        tdm_time_ms wm;
        int idle;
        if (t->reported[p] || !vt->partition_watermark(t->conn, p, &wm,
                                                       &idle))
            continue;
        if (idle) {
            tdm_reader_split_status(t->reader, p, 1);
            continue;
        }
        if (tdm_reader_split_is_idle(t->reader, p) == 1)
            tdm_reader_split_status(t->reader, p, 0);
        if (wm != TDM_TIME_MIN)
            tdm_reader_split_watermark(t->reader, p, wm);
    }
}

/* How long a subtask without splits keeps holding its consumers after
 * a sibling got splits: the members of one group get their shares of a
 * rebalance within a poll or two of each other. */
#define SPLITLESS_GRACE_MS 1000

/* Version 2: a subtask without a live split says it is idle (once), so
 * that its channels do not hold every consumer at TDM_TIME_MIN while it
 * has nothing to read.  Not at once while its siblings (the other
 * subtasks of the source, other members of the same group) are being
 * assigned: the first to get partitions would run ahead and every
 * record of a sibling assigned a moment later would be late.  So a
 * subtask with siblings waits until one of them has had splits for
 * SPLITLESS_GRACE_MS; one without siblings is idle at once.  A Kafka
 * subtask that stops at the end and never had a split is never idle
 * for want of them: it ends (eof) once its first assignment, maybe
 * empty, is in, and until then it may still be given partitions in a
 * later rebalance round, whose records a sibling that already ended
 * would otherwise have made late. */
static void idle_without_splits(rt_src_task *t)
{
    if (t->n_live > 0 || t->forced_idle)
        return;
    if (t->src->conf.type == TDM__SRC_KAFKA && t->src->conf.kafka_stop_at_end &&
        t->n_parts == 0)
        return;
    if (t->run->P > 1) {
        tdm_time_ms first = atomic_load_explicit(&t->src->first_live,
                                                 memory_order_relaxed);
        if (first == TDM_TIME_MAX ||
            t->now < tdm__time_add_sat(first, SPLITLESS_GRACE_MS))
            return;
    }
    t->forced_idle = true;
    if (!t->idle) {
        t->idle = true;
        t->sweep = true;
        tdm__outbox_broadcast(t, TDM__ITEM_STATUS, 0, 1);
    }
}

/* Alignment, at the top of each iteration: drive the group's
 * coordinator (any thread of the group may: the announcement is due by
 * the clock) and apply the latest announcement to this reader. */
static void align_step(rt_src_task *t)
{
    rt_align *a = t->src->align;
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    tdm_align_coord_advance(a->coord);
    pthread_mutex_unlock(&a->mu);
    unsigned seq = atomic_load_explicit(&t->ann_seq, memory_order_acquire);
    if (seq != t->ann_seen) {
        t->ann_seen = seq;
        tdm_reader_announce(t->reader,
                            atomic_load_explicit(&t->ann_max,
                                                 memory_order_relaxed));
    }
}

/* ---- The thread ---- */

/* A version-1 source paused by alignment reads nothing: the iteration
 * only ticks the reader (reports, idleness) and waits 20 ms. */
static void paused_tick(rt_src_task *t)
{
    struct timespec ts = { 0, 20 * 1000000L };
    nanosleep(&ts, NULL);
    t->now = tdm_clock_now(t->clk);
    tdm_reader_advance(t->reader);
    publish_partitions(t, false);
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
 * every watermark. */
/* ---- Checkpoints (docs/checkpoints.md, "In the runtime") ---- */

/* Encodes the connector's positions and the reader's state, which
 * describe the same rows: called between polls, after the last poll's
 * rows went to the reader and downstream.  *out NULL on failure (the
 * run failed). */
static bool src_snapshot(rt_src_task *t, uint8_t **out, size_t *len)
{
    const tdm__source_vtab *vt = t->src->vt;
    char msg[256] = "";
    tdm__enc e;
    tdm__enc_init(&e);
    *out = NULL;
    *len = 0;
    tdm_err err = vt->version >= 3 && vt->snapshot && t->conn
                      ? vt->snapshot(t->conn, &e, msg, sizeof msg)
                      : TDM_ERR_UNSUPPORTED;
    if (err == TDM_OK)
        err = tdm__reader_snapshot(t->reader, &e);
    if (err == TDM_OK)
        err = tdm__enc_finish(&e, out, len);
    else
        tdm__enc_free(&e);
    if (err != TDM_OK) {
        rt_fail(t->run, err, "source \"%s\" subtask %d: checkpoint "
                             "snapshot failed: %s",
                t->src->node->name, t->index,
                msg[0] ? msg : tdm_strerror(err));
        return false;
    }
    return true;
}

/* Tells a version-4 connector about checkpoint @p id (connect.h,
 * checkpoint): its barrier arrived (@p complete 0) or it is durable. */
static void src_ckpt_notify(rt_src_task *t, uint64_t id, int complete)
{
    const tdm__source_vtab *vt = t->src->vt;
    if (vt->version >= 4 && vt->checkpoint && t->conn)
        vt->checkpoint(t->conn, id, complete);
}

/* Barrier @p id at this source subtask: everything before it leaves
 * (pending rows, two-phase partials of every open slice, so no partial
 * state stays in the source), the positions and the reader are
 * snapshotted, this subtask's sinks pre-commit, then BARRIER goes out
 * on every channel and the coordinator gets the acknowledgement. */
static void src_barrier(rt_src_task *t, uint64_t id)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    tdm__outbox_flush_rows(t);
    for (int e = 0; t->any_lagg && e < t->src->n_edges; e++)
        if (t->lagg[e])
            rt_lagg_flush(t, t->lagg[e], TDM_TIME_MAX);
    src_ckpt_notify(t, id, 0);
    if (!src_snapshot(t, &blob, &len))
        return;
    if (!rt_ckpt_pre_commit(t->run, &t->ck, id)) {
        tdm__free(blob);
        return;
    }
    /* A subtask that never reads sent its END before the threads
     * started (run.c): its channels have ended, which consumers count
     * as aligned.  A barrier after the END would block such a channel
     * again, and the consumer would take the checkpoint a second time
     * when its last channel ends (with everything written since in the
     * first epoch: output duplicated after a restore). */
    if (!t->empty)
        tdm__outbox_push_control(t, TDM__ITEM_BARRIER, (tdm_time_ms)id, 0, 0);
    rt_ckpt_ack(t->run, &t->ck, id, blob, len, false);
}

/* Between polls: a commit the coordinator published (every call on a
 * writer's object from its thread, the sink contract), a barrier it
 * requested. */
static void src_ckpt_poll(rt_src_task *t)
{
    rt_ckpt *ck = &t->run->ck;
    uint64_t c = atomic_load_explicit(&ck->committed, memory_order_acquire);
    if (c > t->ck.committed) {
        rt_ckpt_commit(t->run, &t->ck, c);
        src_ckpt_notify(t, c, 1);
    }
    uint64_t req = atomic_load_explicit(&ck->req, memory_order_acquire);
    if (req > t->ck.acked)
        src_barrier(t, req);
}

/* At the end of the subtask's input (not after a failure): answers the
 * barriers still asked for, then hands the coordinator its final state;
 * from then on the coordinator pre-commits and commits this subtask's
 * sink objects itself (the final checkpoint). */
static void src_ckpt_end(rt_src_task *t)
{
    tdm__run *run = t->run;
    uint8_t *fin = NULL;
    size_t len = 0;
    if (!run->ck.on || atomic_load(&run->abort))
        return;
    if (!src_snapshot(t, &fin, &len))
        return;
    for (;;) {
        src_ckpt_poll(t);
        if (atomic_load(&run->abort))
            break;
        /* Under the lock: the coordinator checks "acked or ended" under
         * it, so no request can fall between the check and the end. */
        pthread_mutex_lock(&run->mu);
        if (atomic_load_explicit(&run->ck.req, memory_order_acquire) >
            t->ck.acked) {
            pthread_mutex_unlock(&run->mu);
            continue;
        }
        tdm__free(t->ck.fin);
        t->ck.fin = fin;
        t->ck.fin_len = len;
        t->ck.ended = true;
        run->ck.wake = true;
        pthread_cond_broadcast(&run->cv);
        pthread_mutex_unlock(&run->mu);
        return;
    }
    tdm__free(fin);
}

/* Sends the watermark and idle status a reader restored at another
 * parallelism starts with (tdm__reader_restore_finish): the operator
 * subtasks' channel state was not restored, and without this a channel
 * would hold their minimum at "no watermark" until the reader's output
 * rises again.  A watermark at or below an operator's restored one is
 * ignored there, so nothing moves back. */
static void announce_restored(rt_src_task *t)
{
    if (t->wm_out != TDM_TIME_MIN)
        tdm__outbox_broadcast(t, TDM__ITEM_WATERMARK, t->wm_out, 0);
    if (t->idle)
        tdm__outbox_broadcast(t, TDM__ITEM_STATUS, 0, 1);
    t->sweep = true;
}

void *rt_source_main(void *arg)
{
    rt_src_task *t = arg;
    tdm__run *run = t->run;
    tdm_job *job = run->job;
    const tdm__source_vtab *vt = t->src->vt;
    const bool v2 = t->src->v2;
    bool cancelled = false;
    if (t->empty) {
        /* Its END went out before the threads started (run.c). */
        src_ckpt_end(t);
        vt->close(t->conn);
        t->conn = NULL;
        rt_thread_done(run);
        return NULL;
    }
    /* Restored at another parallelism: the consumers' channels started
     * afresh, so this subtask's restored watermark and status go out
     * before anything else. */
    if (run->ck.restored && run->ck.old_P != run->P)
        announce_restored(t);
    int eof = t->conn ? 0 : 1;
    while (!eof) {
        if (atomic_load_explicit(&run->abort, memory_order_relaxed))
            break;
        if (atomic_load_explicit(&job->cancel, memory_order_relaxed)) {
            cancelled = true;
            break;
        }
        if (v2)
            maybe_commit(t);
        if (run->ck.on)
            src_ckpt_poll(t);
        align_step(t);
        if (!v2 && t->reading_paused) {
            paused_tick(t);
            continue;
        }
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
         * add in this poll (partitions named by a field, or assigned). */
        int known = v2 ? vt->n_partitions(t->conn) : 0;
        if (known < t->n_parts)
            known = t->n_parts;
        if (ensure_arrays(t, 2 * known + 16) != TDM_OK) {
            rt_fail(run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
                    t->src->node->name);
            break;
        }
        t->cur->b->keep_after = keep_after(t);
        err = vt->poll(t->conn, t->cur->b, run->batch_size, t->finished,
                       &eof);
        if (err != TDM_OK) {
            /* A connector that can name the cause does (version 5). */
            const char *why = vt->version >= 5 && vt->poll_error
                                  ? vt->poll_error(t->conn)
                                  : NULL;
            if (why && *why)
                rt_fail(run, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                        "source \"%s\": %s", t->src->node->name, why);
            else
                rt_fail(run, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                        "source \"%s\": reading failed (%s)",
                        t->src->node->name, tdm_strerror(err));
            break;
        }
        /* Partitions assigned in this poll are splits before its rows
         * (an assigned partition without rows holds the watermark). */
        if (v2) {
            int n = vt->n_partitions(t->conn);
            if (n > t->n_parts && ensure_partition(t, n - 1, NULL) != TDM_OK) {
                rt_fail(run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
                        t->src->node->name);
                break;
            }
            if (t->any_floor && t->cur->b->n &&
                t->src->conf.time_mode == TDM__TIME_EVENT)
                drop_replayed(t);
            if (vt->replayed &&
                t->src->conf.time_mode == TDM__TIME_EVENT)
                note_replayed(t);
        }
        /* One clock reading per batch: the guard and ingestion time
         * need no finer resolution, and the hot loop no syscall. */
        t->now = tdm_clock_now(t->clk);
        rt_count(run, TDM_STAT_RECORDS_IN, (int64_t)t->cur->b->n);
        rt_pub_add(&t->m.in, (int64_t)t->cur->b->n);
        if (t->cur->b->n_dup_keys) {
            /* Repeated JSON keys, counted by the parser per batch. */
            rt_count(run, TDM_STAT_DUP_KEYS, t->cur->b->n_dup_keys);
            rt_pub_add(&t->m.dup, t->cur->b->n_dup_keys);
        }
        /* Only a poll that filled its batch may push lazily: a partial
         * one means the input is slow or ending, and its rows must not
         * wait for more. */
        t->lazy = t->cur->b->n >= run->batch_size;
        t->scanning = true;
        err = process_batch(t);
        t->scanning = false;
        if (err != TDM_OK) {
            /* The first failure stands (a sink's I/O error was
             * reported by the scan). */
            rt_fail(run, TDM_ERR_NOMEM, "source \"%s\": out of memory",
                    t->src->node->name);
            break;
        }
        /* Watermarks carried by the data follow the rows they came
         * after. */
        if (v2 && vt->partition_watermark)
            carried_watermarks(t);
        report_finished(t, eof != 0);
        if (v2)
            idle_without_splits(t);
        /* Rows first, then whatever the periodic tick emits. */
        tdm__outbox_flush_rows(t);
        /* Two-phase aggregation: a poll that did not fill its batch
         * means the input is slow, stalled or ending; the partials of
         * every open slice go out now rather than wait at the source
         * for a watermark (a slice may then send several partials per
         * key, each before the watermark that closes it). */
        for (int e = 0; !t->lazy && t->any_lagg && e < t->src->n_edges; e++)
            if (t->lagg[e])
                rt_lagg_flush(t, t->lagg[e], TDM_TIME_MAX);
        if (!t->lazy)
            tdm__outbox_kick(t);
        tdm_reader_advance(t->reader);
        if (v2)
            mark(t, false);
        publish_partitions(t, false);
        tdm__sbatch_release(t->cur);
        t->cur = NULL;
    }
    if (t->cur) {
        tdm__sbatch_release(t->cur);
        t->cur = NULL;
    }
    /* Nothing more follows: no item may wait for a wake-up. */
    t->lazy = false;
    tdm__outbox_kick(t);
    /* Checkpoints: the final state, before the reader ends (a restore
     * from it finds every partition finished and ends the same way). */
    src_ckpt_end(t);
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
    /* The last positions; the run thread commits them once the sinks
     * are closed, and closes the connector after that. */
    if (v2)
        mark(t, true);
    if (t->replay_skipped)
        tdm__job_log(job, "source %s subtask %d: %lld replayed records "
                          "skipped",
                     t->src->node->name, t->index,
                     (long long)t->replay_skipped);
    for (int e = 0; run->debug && t->lagg && e < t->src->n_edges; e++)
        if (t->lagg[e])
            tdm__job_log(job, "debug local_aggregation vertex=%s "
                              "subtask=%d window=%s folded=%lld "
                              "partials=%lld%s",
                         t->src->node->name, t->index,
                         t->src->edges[e].op->node->name,
                         (long long)t->lagg[e]->folded,
                         (long long)t->lagg[e]->sent,
                         !t->lagg[e]->count ? ""
                         : t->lagg[e]->cs_scatter ? " count_slots=scatter"
                                                  : " count_slots=direct");
    /* The final values: every split's watermark, the lag quantiles. */
    t->now = tdm_clock_now(t->clk);
    publish_partitions(t, true);
    publish_lag(t);
    if (t->conn && !v2) {
        vt->close(t->conn);
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
    tdm__src_metrics_init(t);
    if (pthread_mutex_init(&t->mx, NULL) != 0)
        return TDM_ERR_NOMEM;
    t->mx_ok = true;
    tdm_err err = tdm__hist_init(&t->lag);
    if (err != TDM_OK)
        return err;
    t->lag_ok = true;
    err = rt_clock_new(run->job, &t->clk);
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
    t->empty = !s->v2 && n_parts == 0 &&
               (s->conf.partition_field < 0 || t->index > 0);
    t->marked = TDM_TIME_MIN;
    atomic_init(&t->c_proc, TDM_TIME_MIN);
    atomic_init(&t->c_done, TDM_TIME_MIN);
    atomic_init(&t->c_req, 0);
    atomic_init(&t->ann_max, TDM_TIME_MAX);
    atomic_init(&t->ann_seq, 0);
    err = tdm_reader_new(0, s->strat, t->clk, reader_emit, t, &t->reader);
    if (err == TDM_OK && s->align)
        err = tdm_reader_set_alignment(t->reader, s->align->drift,
                                       s->align->interval, msg, sizeof msg);
    if (err == TDM_OK && n_parts > 0)
        err = ensure_partition(t, n_parts - 1, NULL);
    if (err == TDM_OK)
        err = ensure_arrays(t, 16);
    /* Restore (checkpoint.dir): positions, then the reader's state.  A
     * reader restored with partitions named by a field has a split for
     * each value the checkpoint knew: the arrays follow it.  (Version-2
     * connectors assign their partitions at the first poll, where
     * ensure_partition finds the restored splits.) */
    if (err == TDM_OK && run->ck.restored) {
        err = rt_ckpt_restore_source(t, msg, sizeof msg);
        if (err != TDM_OK) {
            rt_fail(run, err, "source \"%s\": %s", s->node->name, msg);
            return err;
        }
        int n_splits = tdm__reader_split_count(t->reader);
        if (!s->v2 && n_splits > t->n_parts)
            err = ensure_partition(t, n_splits - 1, NULL);
    }
    if (err == TDM_OK) {
        /* Batches out at once: queue capacity per channel plus the one
         * being filled and the one being consumed. */
        err = tdm__pool_init(&t->pool, s->schema, run->batch_size,
                             s->n_targets, run->qcap + 2, &run->abort,
                             run->job);
        t->pool_ok = err == TDM_OK;
        t->pool.before_wait = tdm__outbox_before_pool_wait;
        t->pool.before_wait_ud = t;
        t->pool.waits = &t->m.bp;
    }
    if (err == TDM_OK) {
        t->unkicked = tdm__calloc(s->n_targets > 0 ? (size_t)s->n_targets
                                                   : 1, 1);
        if (!t->unkicked)
            err = TDM_ERR_NOMEM;
    }
    /* Two-phase aggregation: a local aggregate per eligible edge. */
    for (int e = 0; err == TDM_OK && e < s->n_edges; e++) {
        if (!s->edges[e].local)
            continue;
        if (!t->lagg) {
            t->lagg = tdm__calloc((size_t)s->n_edges, sizeof *t->lagg);
            if (!t->lagg) {
                err = TDM_ERR_NOMEM;
                break;
            }
        }
        err = rt_lagg_new(t, e, &t->lagg[e]);
        t->any_lagg = err == TDM_OK;
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
    tdm__free(t->mtouched);
    tdm__free(t->hot);
    tdm__free(t->floor);
    tdm__free(t->hzbuf);
    tdm__free(t->ppaused);
    for (int i = 0; t->fk && i < t->fk_cap * t->src->n_edges; i++)
        rt_keyset_free(&t->fk[i]);
    tdm__free(t->fk);
    for (int p = 0; p < t->part_cap && t->parts; p++)
        tdm__free(t->parts[p].name);
    tdm__free(t->parts);
    if (t->lag_ok)
        tdm__hist_fini(&t->lag);
    if (t->mx_ok)
        pthread_mutex_destroy(&t->mx);
    tdm__free(t->unkicked);
    tdm__free(t->kb.p);
    for (int e = 0; t->lagg && e < t->src->n_edges; e++)
        rt_lagg_free(t->lagg[e]);
    tdm__free(t->lagg);
    rt_ckpt_slot_free(&t->ck);
    memset(t, 0, sizeof *t);
}
