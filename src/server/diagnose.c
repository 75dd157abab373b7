/* SPDX-License-Identifier: MIT */
/* diagnose.c - the findings of the diagnosis: turns a metrics snapshot
 * (through its sorted view, view.c) and the job's configuration into
 * findings in plain words (what is wrong, the evidence, a concrete
 * fix), most important first.  Every rule is documented with its
 * thresholds in docs/diagnosis.md; the partition holding the watermark
 * back is found in view.c and one window is explained in explain.c.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "server/view.h"

/* A partition watermark this far ahead of processing time is a
 * WATERMARK_AHEAD: no producer's clock is a minute fast by accident. */
#define DX_AHEAD_MS 60000
/* A late fraction above this (per mille) is a HIGH_LATE_RATE ... */
#define DX_LATE_PERMILLE 10
/* ... once the operator has received at least this many records. */
#define DX_LATE_MIN_RECORDS 100

/* ====================================================================== */
/* Words for job files                                                     */
/* ====================================================================== */

/* Rounds a duration up to a value a person would write in a job file:
 * 10 ms steps below 1 s, whole seconds below 1 min, 10 s steps below
 * 10 min, whole minutes below 1 h, then 10 min steps. */
static int64_t round_up_nice(int64_t ms)
{
    int64_t step;
    if (ms <= 0)
        return 0;
    if (ms < 1000)
        step = 10;
    else if (ms < 60000)
        step = 1000;
    else if (ms < 600000)
        step = 10000;
    else if (ms < 3600000)
        step = 60000;
    else
        step = 600000;
    if (ms > INT64_MAX - step)
        return ms;
    return (ms + step - 1) / step * step;
}

/* A duration as a job file value ("30s", "1m30s", "250ms"). */
static const char *fmt_conf(int64_t ms, char *buf, size_t n)
{
    int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60,
            r = ms % 1000;
    int o = 0;
    buf[0] = 0;
    if (ms <= 0) {
        snprintf(buf, n, "0");
        return buf;
    }
    if (h)
        o += snprintf(buf + o, n - (size_t)o, "%" PRId64 "h", h);
    if (m && (size_t)o < n)
        o += snprintf(buf + o, n - (size_t)o, "%" PRId64 "m", m);
    if (s && (size_t)o < n)
        o += snprintf(buf + o, n - (size_t)o, "%" PRId64 "s", s);
    if (r && (size_t)o < n)
        snprintf(buf + o, n - (size_t)o, "%" PRId64 "ms", r);
    return buf;
}

/* An idle timeout to recommend for a source: 30 s, or half the stall it
 * should cut when that is shorter (@p stall_age, -1 unknown), but never
 * below what the healthy partitions need: 5 x the freshest one's silence
 * (@p other_age), 2 watermark intervals and 1 s. */
static int64_t suggest_idle(const tdm__view *w, const char *src,
                            int64_t other_age, int64_t stall_age)
{
    tdm_node *n = tdm__view_node(w, src);
    int64_t interval = n ? tdm_node_get_int(n, "watermark.interval") : 200;
    int64_t floor_ms = 1000, target = 30000;
    if (interval > 0 && interval < INT64_MAX / 2 && interval * 2 > floor_ms)
        floor_ms = interval * 2;
    if (other_age > 0 && other_age < INT64_MAX / 5 && other_age * 5 > floor_ms)
        floor_ms = other_age * 5;
    if (stall_age > 0 && stall_age / 2 < target)
        target = stall_age / 2;
    if (target < floor_ms)
        target = floor_ms;
    return round_up_nice(target);
}

/* ====================================================================== */
/* Findings                                                                */
/* ====================================================================== */

enum { SEV_CRITICAL = 0, SEV_WARNING, SEV_INFO };
static const char *const sev_name[] = {"critical", "warning", "info"};

/* The findings being built; sorted by severity at the end. */
typedef struct dx_out {
    json_t *items[3]; /* one array per severity */
    int oom;
} dx_out;

/* Starts a finding: its object, with evidence array.  NULL on NOMEM. */
static json_t *finding(dx_out *o, int sev, const char *code, const char *vertex,
                       int subtask, int partition, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static json_t *finding(dx_out *o, int sev, const char *code, const char *vertex,
                       int subtask, int partition, const char *fmt, ...)
{
    char title[512];
    va_list ap;
    json_t *f = json_object();
    if (!f) {
        o->oom = 1;
        return NULL;
    }
    va_start(ap, fmt);
    vsnprintf(title, sizeof title, fmt, ap);
    va_end(ap);
    tdm__json_set(f, "severity", json_string(sev_name[sev]), &o->oom);
    tdm__json_set(f, "code", json_string(code), &o->oom);
    tdm__json_set(f, "title", json_string(title), &o->oom);
    tdm__json_set(f, "evidence", json_array(), &o->oom);
    tdm__json_set(f, "fix", json_string(""), &o->oom);
    if (vertex)
        tdm__json_set(f, "vertex", json_string(vertex), &o->oom);
    if (subtask >= 0)
        tdm__json_set(f, "subtask", json_integer(subtask), &o->oom);
    if (partition >= 0)
        tdm__json_set(f, "partition", json_integer(partition), &o->oom);
    if (json_array_append_new(o->items[sev], f) != 0) {
        o->oom = 1;
        return NULL;
    }
    return f;
}

static json_t *evidence(json_t *f)
{
    return json_object_get(f, "evidence");
}

static void set_fix(dx_out *o, json_t *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_fix(dx_out *o, json_t *f, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tdm__json_set(f, "fix", json_string(buf), &o->oom);
}

/* Evidence lines on the operators that read source @p src: where their
 * input watermark stands (what the partition holds back). */
static void consumer_evidence(const tdm__view *w, dx_out *o, json_t *ev,
                              const char *src)
{
    char t[64], c[32];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int n = 0;
        if (!tdm__view_reads(vi, src))
            continue;
        int64_t in = tdm__view_agg(w, vi->name, TDM_METRIC_WM_INPUT,
                                   TDM_METRIC_AGG_MIN, &n);
        int64_t st = tdm__view_agg(w, vi->name, TDM_METRIC_STATE_WINDOWS,
                                   TDM_METRIC_AGG_SUM, NULL);
        if (!n)
            continue;
        tdm__json_add_str(
            ev, &o->oom,
            "%s %s reads it: its lowest input watermark is %s, so no "
            "window ending after that can fire (%s %s open)",
            vi->kind == TDM_NODE_JOIN ? "join" : "window", vi->name,
            tdm__fmt_time(in, t, sizeof t), tdm__fmt_count(st, c, sizeof c),
            vi->kind == TDM_NODE_JOIN
                ? (st == 1 ? "record buffered" : "records buffered")
                : (st == 1 ? "window" : "windows"));
    }
}

/* The fix of HELD_BACK_PARTITION (see rule_held_back): set an idle
 * timeout, wait for the one set, or look at a producer that is behind. */
static void held_back_fix(const tdm__view *w, const tdm__view_culprit *c,
                          dx_out *o, json_t *f, int64_t idle)
{
    char d[32], nm[160], fx[32];
    const tdm__view_unit *u = c->unit;
    int64_t age = c->pub.last_record_age_ms;
    int is_stalled = tdm__view_stalled(u, c->other_age_ms);

    tdm__view_part_name(u, nm, sizeof nm);
    if (u->held) {
        /* R-DX-H0: its reader is backpressured: the partition only looks
         * silent, and an idle timeout would drop its records as late. */
        set_fix(o, f,
                "Do not set an idle timeout for it: partition %s is not "
                "silent, its reader (%s subtask %d) is blocked by "
                "backpressure and reads nothing until its consumers take "
                "its output; see the BACKPRESSURE finding for the slow "
                "operator or sink.",
                nm, u->vertex, u->subtask);
    } else if (age >= 0 && age < TDM__VIEW_STALL_MS && c->pub.behind_ms >= 0 &&
               (idle <= 0 || age < idle)) {
        /* R-DX-H1: it sent within TDM__VIEW_STALL_MS, and is behind: skew,
         * not silence.  An idle timeout would drop its records as late
         * whenever it paused. */
        set_fix(o, f,
                "Do not set an idle timeout for it: partition %s still sends "
                "(its records are %s behind the others, a backlog or a clock "
                "behind), and a partition marked idle between its records has "
                "them dropped as late. Check its producer's backlog and the "
                "consumer lag of the partition; windows fire as it catches "
                "up. To keep the other partitions from running ahead and "
                "filling state meanwhile, align them: "
                "sources.%s.watermark.alignment.group and "
                ".alignment.max_drift.",
                nm, tdm__fmt_dur(c->pub.behind_ms, d, sizeof d), u->vertex);
    } else if (idle <= 0) {
        int64_t s = suggest_idle(w, u->vertex, c->other_age_ms, age);
        fmt_conf(s, fx, sizeof fx);
        set_fix(o, f,
                "Set sources.%s.watermark.idle_timeout to %s (--set "
                "sources.%s.watermark.idle_timeout=%s) so that a partition "
                "silent for that long is left out of the minimum; and check "
                "the producer of partition %s, which %s.",
                u->vertex, fx, u->vertex, fx, nm,
                is_stalled ? "has stopped sending" : "is behind the others");
    } else if (is_stalled || (age >= 0 && age < idle)) {
        set_fix(o, f,
                "Check the producer of partition %s; it will be marked idle "
                "(and left out of the minimum) after %s without records - "
                "lower sources.%s.watermark.idle_timeout to release windows "
                "sooner.",
                nm, tdm__fmt_dur(idle, d, sizeof d), u->vertex);
    } else {
        set_fix(o, f,
                "Check the producer of partition %s: it still sends, but "
                "with timestamps %s behind the other partitions (a backlog "
                "or a clock behind); windows fire as it catches up.",
                nm, tdm__fmt_dur(c->pub.behind_ms, d, sizeof d));
    }
}

/* HELD_BACK_PARTITION from the culprit.
 *
 * Severity follows what the lag costs: a culprit behind the next
 * partition by at least the shortest window period of its readers holds
 * at least one window that every other partition has completed, so that
 * window cannot fire (critical); a smaller lag only delays results
 * (warning; reported at all only when the partition is stalled, see
 * tdm__diagnose).  The fix depends on what the partition does:
 *   - no idle timeout: set one (suggest_idle), and look at the producer;
 *   - an idle timeout that will run out: it will be left out soon;
 *   - still sending, but old data: the producer is behind. */
static void rule_held_back(const tdm__view *w, const tdm__view_culprit *c,
                           const tdm__history *hist, dx_out *o)
{
    char a[64], b[64], d[32], e[32], nm[160], nx[160];
    const tdm__view_unit *u = c->unit;
    int64_t threshold = tdm__view_hold_threshold(w, u->vertex);
    int64_t age = c->pub.last_record_age_ms;
    int64_t idle = tdm__view_idle_timeout(w, u->vertex);
    int crit = c->pub.behind_ms < 0 || c->pub.behind_ms >= threshold;
    json_t *f, *ev;

    tdm__view_part_name(u, nm, sizeof nm);
    tdm__view_part_name(c->next, nx, sizeof nx);
    if (c->pub.behind_ms < 0)
        f = finding(o, SEV_CRITICAL, "HELD_BACK_PARTITION", u->vertex,
                    u->subtask, u->index,
                    "Partition %s of source %s has no watermark yet and "
                    "holds every window back",
                    nm, u->vertex);
    else
        f = finding(o, crit ? SEV_CRITICAL : SEV_WARNING, "HELD_BACK_PARTITION",
                    u->vertex, u->subtask, u->index,
                    "Partition %s of source %s holds the watermark back by "
                    "%s",
                    nm, u->vertex, tdm__fmt_dur(c->pub.behind_ms, d, sizeof d));
    if (!f)
        return;
    if (u->label)
        tdm__json_set(f, "partitionName", json_string(u->label), &o->oom);
    ev = evidence(f);
    tdm__json_add_str(
        ev, &o->oom,
        "partition %s (index %d of subtask %d of source %s) is at %s; "
        "the next lowest partition, %s of %s subtask %d, is at %s",
        nm, u->index, u->subtask, u->vertex,
        tdm__fmt_time(c->pub.watermark, a, sizeof a), nx, c->next->vertex,
        c->next->subtask, tdm__fmt_time(c->pub.next, b, sizeof b));
    if (age >= 0)
        tdm__json_add_str(
            ev, &o->oom,
            "its last record arrived %s ago (since %s); the other "
            "partitions' latest came %s ago",
            tdm__fmt_dur(age, d, sizeof d),
            tdm__fmt_time(tdm__time_sub_sat(w->now, age), a, sizeof a),
            c->other_age_ms >= 0 ? tdm__fmt_dur(c->other_age_ms, e, sizeof e)
                                 : "an unknown time");
    /* The history samples once a second and remembers since when the
     * same partition has been the culprit. */
    tdm_time_ms since;
    if (tdm__history_culprit_since(hist, u->vertex, u->subtask, u->index,
                                   &since))
        tdm__json_add_str(
            ev, &o->oom, "it has held the watermark back since %s (%s)",
            tdm__fmt_time(since, a, sizeof a),
            tdm__fmt_dur(tdm__time_sub_sat(w->now, since), d, sizeof d));
    if (tdm__view_has(u, TDM_METRIC_P_RECORDS))
        tdm__json_add_str(
            ev, &o->oom, "it has read %s record%s%s%s",
            tdm__fmt_count(u->v[TDM_METRIC_P_RECORDS], d, sizeof d),
            u->v[TDM_METRIC_P_RECORDS] == 1 ? "" : "s",
            tdm__view_has(u, TDM_METRIC_P_MAX_TS) ? "; highest timestamp " : "",
            tdm__view_has(u, TDM_METRIC_P_MAX_TS)
                ? tdm__fmt_time(u->v[TDM_METRIC_P_MAX_TS], a, sizeof a)
                : "");
    consumer_evidence(w, o, ev, u->vertex);
    if (idle > 0)
        tdm__json_add_str(
            ev, &o->oom,
            "watermark.idle_timeout of %s is %s, but the partition is "
            "not idle",
            u->vertex, tdm__fmt_dur(idle, d, sizeof d));
    else
        tdm__json_add_str(ev, &o->oom,
                          "source %s has no watermark.idle_timeout", u->vertex);
    held_back_fix(w, c, o, f, idle);
}

/* HELD_BACK_PARTITION for an operator channel when no partition stands
 * out (a source without partition metrics): the active channel with the
 * lowest watermark, a window period or more below the next one. */
static void rule_held_channel(const tdm__view *w, dx_out *o)
{
    char a[64], b[64], d[32];
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i], *low = NULL, *next = NULL;
        if (u->scope != TDM__VIEW_VERTEX)
            continue;
        /* The subtask's channels are one run of the CHANNEL scope. */
        for (size_t j = tdm__view_lower_bound(w, TDM__VIEW_CHANNEL, u->vertex,
                                              u->subtask, INT32_MIN);
             j < w->n; j++) {
            const tdm__view_unit *ch = &w->u[j];
            if (ch->scope != TDM__VIEW_CHANNEL || ch->subtask != u->subtask ||
                tdm__view_strcmp(ch->vertex, u->vertex) != 0)
                break;
            if (!tdm__view_has(ch, TDM_METRIC_CH_WM) ||
                tdm__view_val(ch, TDM_METRIC_CH_IDLE, 0) ||
                tdm__view_val(ch, TDM_METRIC_CH_ENDED, 0))
                continue;
            if (!low || ch->v[TDM_METRIC_CH_WM] < low->v[TDM_METRIC_CH_WM]) {
                next = low;
                low = ch;
            } else if (!next ||
                       ch->v[TDM_METRIC_CH_WM] < next->v[TDM_METRIC_CH_WM]) {
                next = ch;
            }
        }
        if (!low || !next)
            continue;
        tdm_time_ms lw = low->v[TDM_METRIC_CH_WM];
        tdm_time_ms nw = next->v[TDM_METRIC_CH_WM];
        int64_t per = tdm__view_window_period(tdm__view_node(w, u->vertex));
        if (nw <= lw || (lw != TDM_TIME_MIN &&
                         tdm__time_sub_sat(nw, lw) < (per > 0 ? per : 1000)))
            continue;
        json_t *f = finding(
            o, SEV_CRITICAL, "HELD_BACK_PARTITION", u->vertex, u->subtask, -1,
            "Channel %d (%s) holds %s subtask %d back by %s", low->index,
            low->label ? low->label : "?", u->vertex, u->subtask,
            lw == TDM_TIME_MIN
                ? "its whole input"
                : tdm__fmt_dur(tdm__time_sub_sat(nw, lw), d, sizeof d));
        if (!f)
            return;
        tdm__json_set(f, "channel", json_integer(low->index), &o->oom);
        tdm__json_add_str(evidence(f), &o->oom,
                          "channel %d (%s) is at %s; channel %d (%s) is at %s",
                          low->index, low->label ? low->label : "?",
                          tdm__fmt_time(lw, a, sizeof a), next->index,
                          next->label ? next->label : "?",
                          tdm__fmt_time(nw, b, sizeof b));
        set_fix(o, f,
                "Check the upstream source subtask %s: it sends no newer "
                "watermark (no data, or data behind the others); an idle "
                "timeout on its source lets the others go on.",
                low->label ? low->label : "?");
        return;
    }
}

/* NO_DATA_NO_IDLE: active partitions without data for long, in sources
 * without an idle timeout, competing with partitions that do get data.
 * The culprit is already reported.  A silent partition that is the
 * lowest of its part of the job (alone or tied: ties have no culprit)
 * while another partition is higher holds windows back: critical.  One
 * that is not the lowest will be once the others pass it: warning. */
static void rule_no_data(const tdm__view *w, const tdm__view_culprit *c,
                         dx_out *o)
{
    char a[64], d[32], nm[160], fx[32];
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (!tdm__view_part_active(u) || u == c->unit ||
            tdm__view_idle_timeout(w, u->vertex) > 0)
            continue;
        tdm__view_others ot = tdm__view_others_of(w, u);
        int64_t fresh = ot.fresh_age;
        if (ot.n == 0 || !tdm__view_stalled(u, fresh))
            continue;
        tdm_time_ms others_min = ot.lo->v[TDM_METRIC_P_WM];
        tdm_time_ms others_max = ot.hi->v[TDM_METRIC_P_WM];
        tdm_time_ms pw = u->v[TDM_METRIC_P_WM];
        /* Holding (alone or tied) the minimum below someone: critical. */
        int holds = pw <= others_min && pw < others_max;
        int64_t age = tdm__view_val(u, TDM_METRIC_P_LAST_AGE, -1);
        int64_t recs = tdm__view_val(u, TDM_METRIC_P_RECORDS, -1);
        tdm__view_part_name(u, nm, sizeof nm);
        json_t *f = finding(
            o, holds ? SEV_CRITICAL : SEV_WARNING, "NO_DATA_NO_IDLE", u->vertex,
            u->subtask, u->index,
            recs == 0 ? "Partition %s of source %s has had no "
                        "data%s and there is no idle timeout"
                      : "Partition %s of source %s has had no "
                        "data for %s and there is no idle timeout",
            nm, u->vertex, recs == 0 ? "" : tdm__fmt_dur(age, d, sizeof d));
        if (!f)
            return;
        if (u->label)
            tdm__json_set(f, "partitionName", json_string(u->label), &o->oom);
        json_t *ev = evidence(f);
        if (recs == 0)
            tdm__json_add_str(ev, &o->oom, "partition %s has read no record",
                              nm);
        else if (age >= 0)
            tdm__json_add_str(
                ev, &o->oom, "its last record arrived %s ago (%s)",
                tdm__fmt_dur(age, d, sizeof d),
                tdm__fmt_time(tdm__time_sub_sat(w->now, age), a, sizeof a));
        tdm__json_add_str(ev, &o->oom, "its watermark is %s%s",
                          tdm__fmt_time(pw, a, sizeof a),
                          holds ? ", the lowest: it holds the minimum back"
                                : "");
        if (fresh >= 0)
            tdm__json_add_str(ev, &o->oom,
                              "the other partitions received records %s ago",
                              tdm__fmt_dur(fresh, d, sizeof d));
        int64_t s = suggest_idle(w, u->vertex, fresh, age);
        fmt_conf(s, fx, sizeof fx);
        set_fix(o, f,
                "Set sources.%s.watermark.idle_timeout to %s (--set "
                "sources.%s.watermark.idle_timeout=%s), or check the "
                "producer of partition %s.",
                u->vertex, fx, u->vertex, fx, nm);
    }
}

/* ALL_IDLE: every unfinished source partition is idle.  The valves then
 * flush the highest watermark once and wait: no window beyond it can
 * fire until a record arrives.  Only meaningful while the job runs (a
 * finished job's partitions are finished, not idle). */
static void rule_all_idle(const tdm__view *w, dx_out *o)
{
    char a[64], d[32];
    int n_idle = 0, n_live = 0;
    int64_t youngest = -1;
    if (!w->running)
        return;
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (u->scope != TDM__VIEW_PARTITION ||
            tdm__view_val(u, TDM_METRIC_P_FINISHED, 0))
            continue;
        n_live++;
        if (tdm__view_val(u, TDM_METRIC_P_IDLE, 0)) {
            int64_t age = tdm__view_val(u, TDM_METRIC_P_LAST_AGE, -1);
            n_idle++;
            if (age >= 0 && (youngest < 0 || age < youngest))
                youngest = age;
        }
    }
    if (n_live == 0 || n_idle < n_live)
        return;
    json_t *f = finding(o, SEV_CRITICAL, "ALL_IDLE", NULL, -1, -1,
                        "Every source partition is idle: the watermark "
                        "cannot move");
    if (!f)
        return;
    json_t *ev = evidence(f);
    tdm__json_add_str(ev, &o->oom, "%d of %d unfinished partitions are idle",
                      n_idle, n_live);
    if (youngest >= 0)
        tdm__json_add_str(ev, &o->oom, "the most recent record arrived %s ago",
                          tdm__fmt_dur(youngest, d, sizeof d));
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int k = 0;
        if (vi->kind != TDM_NODE_WINDOW && vi->kind != TDM_NODE_JOIN)
            continue;
        int64_t wm = tdm__view_agg(w, vi->name, TDM_METRIC_WM_INPUT,
                                   TDM_METRIC_AGG_MIN, &k);
        if (k)
            tdm__json_add_str(ev, &o->oom, "%s %s stays at watermark %s",
                              vi->kind == TDM_NODE_JOIN ? "join" : "window",
                              vi->name, tdm__fmt_time(wm, a, sizeof a));
    }
    set_fix(o, f,
            "Windows fire only when data moves the watermark: check that the "
            "producers still send. If the input has ended for good, end it "
            "(close the stream or stop the job): end of input fires every "
            "window.");
}

/* 1 when operator @p vi reads a source with a fallback watermark (its
 * watermark follows the clock: it is not stuck; FALLBACK_DRIVING says
 * when the fallback drives). */
static int reads_fallback(const tdm__view *w, const tdm_vertex_info *vi)
{
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *si = tdm_metrics_vertex(w->m, i);
        int n = 0;
        if (si->kind != TDM_NODE_SOURCE || !tdm__view_reads(vi, si->name))
            continue;
        tdm__view_agg(w, si->name, TDM_METRIC_WM_SOURCE, TDM_METRIC_AGG_MAX,
                      &n);
        if (n)
            return 1;
    }
    return 0;
}

/* Adds, per window or join that holds state, where its watermark stays
 * and since when (from the history, when it has the run), to @p ev
 * unless it is NULL; returns how many hold state.  Operators reading a source
 * with a fallback watermark are not stuck (R-DX-S3). */
static int stuck_operators(const tdm__view *w, const tdm__history *hist,
                           dx_out *o, json_t *ev)
{
    char a[64], b[64], d[32], c[32];
    int holding = 0;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int k = 0;
        tdm_time_ms since;
        if ((vi->kind != TDM_NODE_WINDOW && vi->kind != TDM_NODE_JOIN) ||
            reads_fallback(w, vi))
            continue;
        int64_t st = tdm__view_agg(w, vi->name, TDM_METRIC_STATE_WINDOWS,
                                   TDM_METRIC_AGG_SUM, NULL);
        int64_t wm = tdm__view_agg(w, vi->name, TDM_METRIC_WM_OUTPUT,
                                   TDM_METRIC_AGG_MIN, &k);
        if (st <= 0 || !k)
            continue;
        holding++;
        if (!ev)
            continue;
        if (tdm__history_flat_since(hist, vi->name, wm, &since))
            tdm__json_add_str(
                ev, &o->oom,
                "%s %s holds %s %s at watermark %s, flat since %s "
                "(%s)",
                vi->kind == TDM_NODE_JOIN ? "join" : "window", vi->name,
                tdm__fmt_count(st, c, sizeof c),
                vi->kind == TDM_NODE_JOIN ? "buffered records" : "open windows",
                tdm__fmt_time(wm, a, sizeof a),
                tdm__fmt_time(since, b, sizeof b),
                tdm__fmt_dur(tdm__time_sub_sat(w->now, since), d, sizeof d));
        else
            tdm__json_add_str(ev, &o->oom, "%s %s holds %s %s at watermark %s",
                              vi->kind == TDM_NODE_JOIN ? "join" : "window",
                              vi->name, tdm__fmt_count(st, c, sizeof c),
                              vi->kind == TDM_NODE_JOIN ? "buffered records"
                                                        : "open windows",
                              tdm__fmt_time(wm, a, sizeof a));
    }
    return holding;
}

/* STALLED_WATERMARK: every unfinished partition has been silent for
 * TDM__VIEW_STALL_MS or more, none of them idle-marked (that is
 * ALL_IDLE), and windows hold records.  Nothing can move the watermark:
 * no partition sends, so no partition holds the others back either (the
 * culprit rules stay quiet), and an idle timeout would not help - it
 * leaves silent partitions out of the minimum, and here every one is
 * silent.  Only records, or the end of the input, fire those windows. */
static void rule_stalled(const tdm__view *w, const tdm__history *hist,
                         dx_out *o)
{
    char d[32], nm[32];
    tdm__view_silence sl = tdm__view_silence_of(w);
    int64_t youngest = sl.youngest;
    /* R-DX-S1: some partition sends, or all are idle (ALL_IDLE); R-DX-S2:
     * no window holds anything, so nothing waits (between bursts). */
    if (!tdm__view_all_silent(w, &sl) || stuck_operators(w, hist, o, NULL) == 0)
        return;
    json_t *f = finding(o, SEV_CRITICAL, "STALLED_WATERMARK", NULL, -1, -1,
                        "No partition has sent a record for %s: the "
                        "watermark cannot move, and windows wait",
                        youngest >= 0 ? tdm__fmt_dur(youngest, d, sizeof d)
                                      : "a long time");
    if (!f)
        return;
    json_t *ev = evidence(f);
    char marked[48] = "none is marked idle";
    if (sl.idle > 0)
        snprintf(marked, sizeof marked, "%d of them marked idle", sl.idle);
    tdm__json_add_str(ev, &o->oom,
                      "%d of %d unfinished partitions are silent (no record "
                      "for %s or more), and %s",
                      sl.silent, sl.live,
                      tdm__fmt_dur(TDM__VIEW_STALL_MS, nm, sizeof nm), marked);
    stuck_operators(w, hist, o, ev);
    tdm__json_add_str(ev, &o->oom,
                      "an idle timeout cannot help: it leaves silent "
                      "partitions out of the minimum, and every partition "
                      "is silent");
    set_fix(o, f,
            "Check that the producers still send: the windows fire when "
            "records move the watermark past their end. If the input is "
            "complete (a replay or a backfill), let it end - a file or a "
            "closed stdin ends by itself, and a Kafka source with stop: end "
            "stops at the offsets it found at start: end of input fires "
            "every window.");
}

/* TIMESTAMP_UNIT: a source whose timestamps look like another unit.  The
 * runtime judges the first 100 timestamps of each partition and
 * publishes its suspicion per subtask (timestampUnitSuspect); the first
 * subtask that suspects something names the unit. */
static void rule_unit(const tdm__view *w, dx_out *o)
{
    static const char *const unit_word[] = {"milliseconds", "seconds",
                                            "microseconds", "nanoseconds"};
    static const char *const unit_key[] = {"ms", "s", "us", "ns"};
    char a[64], b[64];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int64_t suspect = 0, sub = -1;
        if (vi->kind != TDM_NODE_SOURCE)
            continue;
        for (size_t j = 0; j < w->n; j++) {
            const tdm__view_unit *u = &w->u[j];
            if (u->scope == TDM__VIEW_VERTEX &&
                tdm__view_strcmp(u->vertex, vi->name) == 0 &&
                tdm__view_val(u, TDM_METRIC_TS_UNIT, 0) > 0 && suspect == 0) {
                suspect = u->v[TDM_METRIC_TS_UNIT];
                sub = u->subtask;
            }
        }
        if (suspect < 1 || suspect > 3)
            continue;
        int n = 0;
        int64_t mx = tdm__view_agg(w, vi->name, TDM_METRIC_MAX_TS,
                                   TDM_METRIC_AGG_MAX, &n);
        tdm_node *node = tdm__view_node(w, vi->name);
        const char *conf = node ? tdm_node_get(node, "timestamp.unit") : "";
        json_t *f =
            finding(o, SEV_CRITICAL, "TIMESTAMP_UNIT", vi->name, (int)sub, -1,
                    "Timestamps of source %s look like %s, not "
                    "milliseconds",
                    vi->name, unit_word[suspect]);
        if (!f)
            return;
        json_t *ev = evidence(f);
        tdm__json_add_str(ev, &o->oom, "timestamp.unit is %s",
                          *conf ? conf : "ms");
        if (n) {
            /* The highest timestamp converted from the suspected unit. */
            tdm_time_ms as_unit =
                suspect == 2   ? mx / 1000
                : suspect == 3 ? mx / 1000000
                : (mx > INT64_MAX / 1000 || mx < INT64_MIN / 1000) ? mx
                                                                   : mx * 1000;
            tdm__json_add_str(
                ev, &o->oom,
                "highest timestamp %" PRId64 " reads as %s in ms, but "
                "as %s in %s",
                mx, tdm__fmt_time(mx, a, sizeof a),
                tdm__fmt_time(as_unit, b, sizeof b), unit_word[suspect]);
        }
        tdm__json_add_str(ev, &o->oom,
                          "windows are measured in the wrong unit: results and "
                          "watermarks are meaningless");
        set_fix(o, f,
                "Set sources.%s.timestamp.unit: %s (--set "
                "sources.%s.timestamp.unit=%s).",
                vi->name, unit_key[suspect], vi->name, unit_key[suspect]);
    }
}

/* FUTURE_TIMESTAMPS: timestamp guard hits, per source.  A warning: the
 * guard already keeps those records out of the watermark, so the other
 * windows fire; only the far-future windows wait for the end. */
static void rule_future(const tdm__view *w, dx_out *o)
{
    char a[64], d[32], c1[32];
    int64_t guard = w->job ? tdm_job_get_int(w->job, "timestamp_guard") : 0;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (vi->kind != TDM_NODE_SOURCE)
            continue;
        int n = 0;
        int64_t hits = tdm__view_agg(w, vi->name, TDM_METRIC_GUARD_HITS,
                                     TDM_METRIC_AGG_SUM, NULL);
        int64_t in = tdm__view_agg(w, vi->name, TDM_METRIC_RECORDS_IN,
                                   TDM_METRIC_AGG_SUM, NULL);
        int64_t mx = tdm__view_agg(w, vi->name, TDM_METRIC_MAX_TS,
                                   TDM_METRIC_AGG_MAX, &n);
        if (hits <= 0)
            continue;
        json_t *f =
            finding(o, SEV_WARNING, "FUTURE_TIMESTAMPS", vi->name, -1, -1,
                    "%s record%s of source %s had timestamps far in "
                    "the future",
                    tdm__fmt_count(hits, c1, sizeof c1), hits == 1 ? "" : "s",
                    vi->name);
        if (!f)
            return;
        json_t *ev = evidence(f);
        tdm__json_add_str(
            ev, &o->oom,
            "%s of %s records lay more than timestamp_guard (%s) ahead "
            "of processing time: they are processed but do not move the "
            "watermark",
            tdm__fmt_count(hits, c1, sizeof c1),
            tdm__fmt_count(in, a, sizeof a),
            guard > 0 ? tdm__fmt_dur(guard, d, sizeof d) : "off");
        /* Guarded records may not count in maxTimestamp: say it only
         * when it shows them. */
        if (n && mx != TDM_TIME_MIN && guard > 0 &&
            tdm__time_sub_sat(mx, w->now) > guard)
            tdm__json_add_str(
                ev, &o->oom,
                "highest timestamp seen: %s, %s ahead of "
                "now",
                tdm__fmt_time(mx, a, sizeof a),
                tdm__fmt_dur(tdm__time_sub_sat(mx, w->now), d, sizeof d));
        tdm__json_add_str(
            ev, &o->oom,
            "their windows lie in the future and fire only at the end "
            "of input");
        set_fix(o, f,
                "Check the producer's clock and the timestamp unit of "
                "source %s; with timestamp_guard.dead_letter: true such "
                "records go to the dead_letter sink instead.",
                vi->name);
    }
}

/* The unfinished, active partition of source @p vx with the lowest
 * watermark (it holds the data watermark back), or NULL. */
static const tdm__view_unit *lowest_part(const tdm__view *w, const char *vx)
{
    const tdm__view_unit *lo = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (u->scope != TDM__VIEW_PARTITION ||
            tdm__view_strcmp(u->vertex, vx) != 0 || !tdm__view_part_active(u))
            continue;
        if (!lo || u->v[TDM_METRIC_P_WM] < lo->v[TDM_METRIC_P_WM])
            lo = u;
    }
    return lo;
}

/* The evidence of a FALLBACK_DRIVING finding: the two watermarks, the
 * partition behind, the time driven and what the fallback made late. */
static void fallback_evidence(const tdm__view *w, dx_out *o, json_t *ev,
                              const char *vx)
{
    char a[64], b[64], d[32], p[64];
    int64_t data =
        tdm__view_agg(w, vx, TDM_METRIC_WM_DATA, TDM_METRIC_AGG_MIN, NULL);
    int64_t out =
        tdm__view_agg(w, vx, TDM_METRIC_WM_OUTPUT, TDM_METRIC_AGG_MIN, NULL);
    tdm__json_add_str(ev, &o->oom,
                      "data watermark %s, output watermark %s (processing "
                      "time minus watermark.fallback.lag)",
                      tdm__fmt_time(data, a, sizeof a),
                      tdm__fmt_time(out, b, sizeof b));
    const tdm__view_unit *lo = lowest_part(w, vx);
    if (lo) {
        int64_t age = tdm__view_val(lo, TDM_METRIC_P_LAST_AGE, -1);
        char since[64] = "it has read no record";
        if (age >= 0)
            snprintf(since, sizeof since, "its last record came %s ago",
                     tdm__fmt_dur(age, d, sizeof d));
        tdm__json_add_str(
            ev, &o->oom, "partition %s holds the data watermark at %s; %s",
            tdm__view_part_name(lo, p, sizeof p),
            tdm__fmt_time(lo->v[TDM_METRIC_P_WM], a, sizeof a), since);
    }
    int64_t total =
        tdm__view_agg(w, vx, TDM_METRIC_FB_TIME, TDM_METRIC_AGG_MAX, NULL);
    tdm__json_add_str(ev, &o->oom,
                      "the fallback has driven it for %s in total since the "
                      "run started",
                      tdm__fmt_dur(total, d, sizeof d));
}

/* FALLBACK_DRIVING: a source's processing-time fallback watermark
 * (watermark.fallback) drives its output watermark because the data's
 * own has stayed behind: windows fire by the clock, and which records
 * are late depends on it (docs/diagnosis.md). */
static void rule_fallback(const tdm__view *w, dx_out *o)
{
    char d[32];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int n = 0;
        if (vi->kind != TDM_NODE_SOURCE ||
            tdm__view_agg(w, vi->name, TDM_METRIC_WM_SOURCE, TDM_METRIC_AGG_MAX,
                          &n) != 1 ||
            !n)
            continue;
        int64_t stretch = tdm__view_agg(w, vi->name, TDM_METRIC_FB_STRETCH,
                                        TDM_METRIC_AGG_MAX, NULL);
        json_t *f =
            finding(o, SEV_WARNING, "FALLBACK_DRIVING", vi->name, -1, -1,
                    "The fallback watermark is driving source %s: "
                    "its data watermark has stayed behind for %s",
                    vi->name, tdm__fmt_dur(stretch, d, sizeof d));
        if (!f)
            return;
        fallback_evidence(w, o, evidence(f), vi->name);
        set_fix(o, f,
                "Find why the data of source %s stalls (a silent partition, "
                "a producer whose clock runs behind): while the fallback "
                "drives, windows fire by the clock and records the data "
                "would have kept on time go to the late output. It hands "
                "back by itself once the data watermark catches up; a "
                "partition silent for good wants watermark.idle_timeout.",
                vi->name);
    }
}

/* The partition whose watermark is furthest ahead of processing time,
 * by more than DX_AHEAD_MS, or NULL; *ahead says by how much. */
static const tdm__view_unit *ahead_part(const tdm__view *w, int64_t *ahead)
{
    const tdm__view_unit *best = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (u->scope != TDM__VIEW_PARTITION ||
            !tdm__view_has(u, TDM_METRIC_P_WM) ||
            u->v[TDM_METRIC_P_WM] == TDM_TIME_MIN ||
            u->v[TDM_METRIC_P_WM] == TDM_TIME_MAX)
            continue;
        int64_t by = tdm__time_sub_sat(u->v[TDM_METRIC_P_WM], w->now);
        if (by > DX_AHEAD_MS && (!best || by > *ahead)) {
            best = u;
            *ahead = by;
        }
    }
    return best;
}

/* The record that ran ahead in partition @p u, as its source subtask
 * kept it (tdm_ahead_record), or NULL. */
static const tdm_ahead_record *ahead_record(const tdm__view *w,
                                            const tdm__view_unit *u)
{
    for (size_t i = 0; w->m && i < tdm_metrics_ahead_count(w->m); i++) {
        const tdm_ahead_record *r = tdm_metrics_ahead_at(w->m, i);
        if (r && r->subtask == u->subtask && r->partition == u->index &&
            tdm__view_strcmp(r->vertex, u->vertex) == 0)
            return r;
    }
    return NULL;
}

/* R-DX-A2: the record behind a watermark ahead, by its location (file:
 * line, topic[partition]@offset) and timestamp, as evidence and as the
 * finding's "record" member. */
static void ahead_record_evidence(const tdm__view *w, dx_out *o, json_t *f,
                                  json_t *ev, const tdm__view_unit *u)
{
    char a[64], b[64], d[32];
    const tdm_ahead_record *r = ahead_record(w, u);
    if (!r)
        return;
    tdm__json_add_str(
        ev, &o->oom,
        "a record that moved it: %s, timestamp %s, %s ahead of "
        "processing time when it was read at %s: %s",
        r->location ? r->location : "(its source gives no location)",
        tdm__fmt_time(r->ts, a, sizeof a),
        tdm__fmt_dur(tdm__time_sub_sat(r->ts, r->at), d, sizeof d),
        tdm__fmt_time(r->at, b, sizeof b), r->raw ? r->raw : "");
    json_t *rec = json_object();
    tdm__json_set(f, "record", rec, &o->oom);
    if (!rec)
        return;
    tdm__json_set(rec, "location",
                  r->location ? json_string(r->location) : json_null(),
                  &o->oom);
    tdm__json_set(rec, "timestamp", json_integer(r->ts), &o->oom);
    tdm__json_set(rec, "readAt", json_integer(r->at), &o->oom);
    tdm__json_set(rec, "raw", json_string(r->raw ? r->raw : ""), &o->oom);
}

/* WATERMARK_AHEAD: a partition's watermark runs ahead of processing time
 * (ahead_part): a record from the future, inside timestamp_guard, moved
 * it, and every record on time by the clocks is now late.  The fix is
 * the guard that would have kept that record out of the watermark, and
 * the producer's clock; never a larger bound. */
static void rule_ahead(const tdm__view *w, dx_out *o)
{
    char a[64], b[64], d[32], g[32], fx[32], nm[160];
    int64_t ahead = 0;
    const tdm__view_unit *u = ahead_part(w, &ahead);
    int64_t guard = w->job ? tdm_job_get_int(w->job, "timestamp_guard") : 0;
    if (!u)
        return;
    tdm__view_part_name(u, nm, sizeof nm);
    json_t *f = finding(o, SEV_CRITICAL, "WATERMARK_AHEAD", u->vertex,
                        u->subtask, u->index,
                        "Partition %s of source %s has a watermark %s ahead of "
                        "processing time",
                        nm, u->vertex, tdm__fmt_dur(ahead, d, sizeof d));
    if (!f)
        return;
    if (u->label)
        tdm__json_set(f, "partitionName", json_string(u->label), &o->oom);
    json_t *ev = evidence(f);
    tdm__json_add_str(ev, &o->oom, "its watermark is %s; processing time is %s",
                      tdm__fmt_time(u->v[TDM_METRIC_P_WM], a, sizeof a),
                      tdm__fmt_time(w->now, b, sizeof b));
    if (tdm__view_has(u, TDM_METRIC_P_MAX_TS))
        tdm__json_add_str(
            ev, &o->oom,
            "its highest record timestamp is %s: a record from "
            "the future moved it",
            tdm__fmt_time(u->v[TDM_METRIC_P_MAX_TS], a, sizeof a));
    ahead_record_evidence(w, o, f, ev, u);
    tdm__json_add_str(ev, &o->oom,
                      "timestamp_guard is %s, so the record counted",
                      guard > 0 ? tdm__fmt_dur(guard, g, sizeof g) : "off");
    tdm__json_add_str(ev, &o->oom,
                      "records whose time is near processing time are now "
                      "behind the watermark: they are late, and a larger "
                      "out-of-orderness bound would not change that");
    /* R-DX-A1: a guard below how far ahead the record was keeps such a
     * record out of the watermark: half of it, at least 1 minute. */
    int64_t want = ahead / 2 > 60000 ? ahead / 2 / 60000 * 60000 : 60000;
    fmt_conf(want, fx, sizeof fx);
    set_fix(o, f,
            "Set timestamp_guard to %s (--set timestamp_guard=%s): a record "
            "more than that ahead of processing time is then processed but "
            "does not move the watermark (timestamp_guard.dead_letter: true "
            "sends it to the dead_letter sink instead). Check the clock of "
            "the producer of partition %s. The watermark never goes back: "
            "restart the job from a checkpoint taken before the record, or "
            "from scratch, for the late records to count.",
            fx, fx, nm);
}

/* The sources an operator reads whose watermark settings explain its
 * late records, as evidence; *best receives the highest P99.9 seen and
 * *bound the largest configured bound. */
static void lag_evidence(const tdm__view *w, dx_out *o, json_t *ev,
                         const tdm_vertex_info *op, int64_t *best,
                         int64_t *bound, const char **best_src)
{
    char p50[32], p99[32], p999[32], mx[32], bd[32];
    *best = -1;
    *bound = 0;
    *best_src = NULL;
    for (int j = 0; j < op->n_inputs; j++) {
        const char *src = op->inputs[j];
        int n = 0;
        int64_t q50 =
            tdm__view_agg(w, src, TDM_METRIC_LAG_P50, TDM_METRIC_AGG_MAX, NULL);
        int64_t q99 =
            tdm__view_agg(w, src, TDM_METRIC_LAG_P99, TDM_METRIC_AGG_MAX, &n);
        int64_t q999 = tdm__view_agg(w, src, TDM_METRIC_LAG_P999,
                                     TDM_METRIC_AGG_MAX, NULL);
        int64_t qmax =
            tdm__view_agg(w, src, TDM_METRIC_LAG_MAX, TDM_METRIC_AGG_MAX, NULL);
        int64_t b =
            tdm__view_source_setting(w, src, "watermark.max_out_of_orderness");
        if (b > *bound)
            *bound = b;
        if (!n)
            continue;
        tdm__json_add_str(
            ev, &o->oom,
            "source %s: records arrive behind the highest timestamp of "
            "their partition by %s (median), %s (P99), %s (P99.9), %s "
            "(max); watermark.max_out_of_orderness is %s",
            src, tdm__fmt_dur(q50, p50, sizeof p50),
            tdm__fmt_dur(q99, p99, sizeof p99),
            tdm__fmt_dur(q999, p999, sizeof p999),
            tdm__fmt_dur(qmax, mx, sizeof mx), tdm__fmt_dur(b, bd, sizeof bd));
        if (q999 > *best) {
            *best = q999;
            *best_src = src;
        }
    }
}

/* HIGH_LATE_RATE: more than 1 % of an operator's records were too late
 * (dropped or sent to the late output).  The recommendation compares the
 * observed out-of-orderness of the sources it reads (how far records
 * arrive behind their partition's highest timestamp: the P99.9 of the
 * runtime's histogram, within 0.8 %) with the configured bound: a bound
 * at that P99.9 leaves about 0.1 % of records behind the watermark.  A
 * P99.9 already within the bound means the late records are not
 * explained by disorder inside partitions, but by partitions behind
 * others (idleness, resumed partitions). */
static void rule_late(const tdm__view *w, dx_out *o)
{
    char c1[32], c2[32], c3[32], c4[32], fx[32], d[32];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (vi->kind != TDM_NODE_WINDOW && vi->kind != TDM_NODE_JOIN)
            continue;
        int64_t in = tdm__view_agg(w, vi->name, TDM_METRIC_RECORDS_IN,
                                   TDM_METRIC_AGG_SUM, NULL);
        int64_t dropped = tdm__view_agg(w, vi->name, TDM_METRIC_LATE_DROPPED,
                                        TDM_METRIC_AGG_SUM, NULL);
        int64_t side = tdm__view_agg(w, vi->name, TDM_METRIC_LATE_SIDE,
                                     TDM_METRIC_AGG_SUM, NULL);
        int64_t late = tdm__time_add_sat(dropped, side);
        if (in < DX_LATE_MIN_RECORDS || late <= 0 || late > INT64_MAX / 1000 ||
            late * 1000 <= (int64_t)DX_LATE_PERMILLE * in)
            continue;
        /* late / in > 1 % was checked in integers above (late * 1000 >
         * 10 * in); the title shows tenths of a percent, rounded half
         * up. */
        int64_t pm = (late * 1000 * 10 / in + 5) / 10;
        json_t *f = finding(o, SEV_WARNING, "HIGH_LATE_RATE", vi->name, -1, -1,
                            "%" PRId64 ".%" PRId64 "%% of the records of "
                            "%s arrived too late for their window",
                            pm / 10, pm % 10, vi->name);
        if (!f)
            return;
        json_t *ev = evidence(f);
        tdm__json_add_str(
            ev, &o->oom,
            "%s of %s records were late: %s dropped, %s sent to the "
            "late output",
            tdm__fmt_count(late, c1, sizeof c1),
            tdm__fmt_count(in, c2, sizeof c2),
            tdm__fmt_count(dropped, c3, sizeof c3),
            tdm__fmt_count(side, c4, sizeof c4));
        int64_t best, bound, ahead = 0;
        const char *src;
        lag_evidence(w, o, ev, vi, &best, &bound, &src);
        if (ahead_part(w, &ahead)) {
            /* R-DX-L1: the watermark ran ahead of the clocks. */
            set_fix(o, f,
                    "The watermark is %s ahead of processing time "
                    "(WATERMARK_AHEAD): records on time by the clocks are "
                    "late. Follow that finding's fix; a larger bound would "
                    "not help.",
                    tdm__fmt_dur(ahead, d, sizeof d));
        } else if (src && best > bound) {
            int64_t rec = round_up_nice(best);
            fmt_conf(rec, fx, sizeof fx);
            set_fix(o, f,
                    "The out-of-orderness bound is too small: set "
                    "sources.%s.watermark.max_out_of_orderness to %s (the "
                    "observed P99.9 lag, rounded up; --set "
                    "sources.%s.watermark.max_out_of_orderness=%s), or keep "
                    "it and set windows.%s.allowed_lateness to %s so late "
                    "records refire their windows (tidemark set URL KEY=VALUE "
                    "changes either on the running job where it is live, "
                    "docs/live-settings.md).",
                    src, fx, src, fx, vi->name, fx);
        } else {
            set_fix(o, f,
                    "Out-of-orderness within partitions is below the bound "
                    "(%s), so the late records come from partitions behind "
                    "the others (an idle_timeout too short, a partition "
                    "resuming with old data): set windows.%s."
                    "allowed_lateness to cover them, or raise the idle "
                    "timeout.",
                    tdm__fmt_dur(bound, d, sizeof d), vi->name);
        }
    }
}

/* TRIGGER_NEVER_FIRES_ON_EVENT_TIME: an event-time window whose trigger
 * ignores the watermark (count, processing_time, never).  Global windows
 * and processing-time windows are left alone: there the watermark has
 * nothing to fire anyway.  Critical when the trigger is "never", or when
 * no pane has fired at all while windows hold records; a warning when
 * the trigger fires, just not on event time. */
static void rule_trigger(const tdm__view *w, dx_out *o)
{
    char c1[32], c2[32];
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        tdm_node *n = tdm__view_node(w, vi->name);
        if (vi->kind != TDM_NODE_WINDOW || !n)
            continue;
        tdm_trigger_kind trg = tdm_node_trigger(n);
        if (tdm_node_processing_time(n) ||
            tdm_node_window_kind(n) == TDM_WINDOW_KIND_GLOBAL ||
            (trg != TDM_TRIGGER_KIND_PROCESSING_TIME &&
             trg != TDM_TRIGGER_KIND_COUNT && trg != TDM_TRIGGER_KIND_NEVER))
            continue;
        int64_t panes = tdm__view_agg(w, vi->name, TDM_METRIC_PANES,
                                      TDM_METRIC_AGG_SUM, NULL);
        int64_t open = tdm__view_agg(w, vi->name, TDM_METRIC_STATE_WINDOWS,
                                     TDM_METRIC_AGG_SUM, NULL);
        /* Nothing has ever fired while windows pile up: critical. */
        int crit = trg == TDM_TRIGGER_KIND_NEVER || (panes == 0 && open > 0);
        json_t *f =
            finding(o, crit ? SEV_CRITICAL : SEV_WARNING,
                    "TRIGGER_NEVER_FIRES_ON_EVENT_TIME", vi->name, -1, -1,
                    "Window %s has event-time windows but a %s "
                    "trigger: the watermark never fires them",
                    vi->name, tdm_trigger_name(trg));
        if (!f)
            return;
        json_t *ev = evidence(f);
        if (trg == TDM_TRIGGER_KIND_COUNT)
            tdm__json_add_str(
                ev, &o->oom,
                "trigger: count fires a window only every %" PRId64
                " records of one key; the rest of a window is never "
                "emitted when its end passes",
                tdm_node_get_int(n, "trigger.count"));
        else if (trg == TDM_TRIGGER_KIND_PROCESSING_TIME)
            tdm__json_add_str(
                ev, &o->oom,
                "trigger: processing_time fires on the wall clock, not "
                "when the watermark passes a window's end");
        else
            tdm__json_add_str(ev, &o->oom,
                              "the never trigger fires no window at all");
        tdm__json_add_str(
            ev, &o->oom, "%s pane%s fired so far; %s window%s open",
            tdm__fmt_count(panes, c1, sizeof c1), panes == 1 ? "" : "s",
            tdm__fmt_count(open, c2, sizeof c2), open == 1 ? "" : "s");
        set_fix(o, f,
                "Remove windows.%s.trigger (the default fires each window "
                "when the watermark passes its end), or use "
                "continuous_event_time for early results.",
                vi->name);
    }
}

/* The most backpressured subtask of the vertices feeding @p vx
 * (backPressuredTimeMsPerSecond), or NULL when none is at
 * TDM__VIEW_HELD_MS. */
static const tdm__view_unit *pressed_input(const tdm__view *w, const char *vx)
{
    const tdm__view_unit *best = NULL;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (tdm__view_strcmp(vi->name, vx) != 0)
            continue;
        for (int j = 0; j < vi->n_inputs; j++)
            for (size_t k = 0; k < w->n; k++) {
                const tdm__view_unit *u = &w->u[k];
                int64_t bp = tdm__view_val(u, TDM_METRIC_BP_RATE, 0);
                if (u->scope == TDM__VIEW_VERTEX && bp >= TDM__VIEW_HELD_MS &&
                    tdm__view_strcmp(u->vertex, vi->inputs[j]) == 0 &&
                    (!best || bp > best->v[TDM_METRIC_BP_RATE]))
                    best = u;
            }
    }
    return best;
}

/* The bottleneck, as Flink finds it: a subtask that is not itself
 * backpressured while a vertex feeding it is; the busiest (then the one
 * longest in its sink).  *in is set to its most backpressured input. */
static const tdm__view_unit *bottleneck(const tdm__view *w,
                                        const tdm__view_unit **in)
{
    const tdm__view_unit *best = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i], *p;
        if (u->scope != TDM__VIEW_VERTEX ||
            !tdm__view_has(u, TDM_METRIC_BUSY_RATE) ||
            tdm__view_val(u, TDM_METRIC_BP_RATE, 0) >= TDM__VIEW_HELD_MS ||
            !(p = pressed_input(w, u->vertex)))
            continue;
        if (!best ||
            u->v[TDM_METRIC_BUSY_RATE] > best->v[TDM_METRIC_BUSY_RATE] ||
            (u->v[TDM_METRIC_BUSY_RATE] == best->v[TDM_METRIC_BUSY_RATE] &&
             tdm__view_val(u, TDM_METRIC_SINK_RATE, 0) >
                 tdm__view_val(best, TDM_METRIC_SINK_RATE, 0))) {
            best = u;
            *in = p;
        }
    }
    return best;
}

/* The subtask whose input queue is fullest, at 3/4 or more (the
 * evidence without time figures: a snapshot of an older server). */
static const tdm__view_unit *fullest_queue(const tdm__view *w)
{
    const tdm__view_unit *worst = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        int64_t len = tdm__view_val(u, TDM_METRIC_QUEUE_LEN, 0);
        int64_t cap = tdm__view_val(u, TDM_METRIC_QUEUE_CAP, 0);
        if (u->scope != TDM__VIEW_VERTEX || cap <= 0 || len * 4 < cap * 3)
            continue;
        if (!worst || len * worst->v[TDM_METRIC_QUEUE_CAP] >
                          worst->v[TDM_METRIC_QUEUE_LEN] * cap)
            worst = u;
    }
    return worst;
}

/* The fix of BACKPRESSURE: the sink when the bottleneck spends most of
 * its busy time in it (R-DX-B2), else its own work. */
static void backpressure_fix(dx_out *o, json_t *f, const tdm__view_unit *u,
                             const char *sink)
{
    int64_t busy = tdm__view_val(u, TDM_METRIC_BUSY_RATE, 0);
    int64_t in_sink = tdm__view_val(u, TDM_METRIC_SINK_RATE, 0);
    if (*sink && in_sink * 2 >= busy && in_sink > 0)
        set_fix(o, f,
                "Speed up sink %s: %s subtask %d spends %" PRId64 " ms of "
                "every second blocked writing to it (a slow disk, a pipe "
                "whose reader does not keep up, a slow broker). Results, "
                "and the watermark with them, move as fast as the sink "
                "takes them.",
                sink, u->vertex, u->subtask, in_sink);
    else if (*sink)
        set_fix(o, f,
                "Speed up sink %s or the work of %s: raise parallelism to "
                "spread its keys, or queue.capacity to absorb bursts.",
                sink, u->vertex);
    else
        set_fix(o, f,
                "Raise parallelism to spread the work of %s, or "
                "queue.capacity to absorb bursts.",
                u->vertex);
}

/* BACKPRESSURE: a subtask that does not keep up with its input, found
 * as Flink finds it (R-DX-B1): a vertex feeding it waits for room
 * (backPressuredTimeMsPerSecond at TDM__VIEW_HELD_MS or more) while it
 * does not; failing time figures, an input queue 3/4 full.  A full
 * queue stops its producers, and watermarks travel in the same queues,
 * so the watermark lags with the data.  Sinks are written by their
 * operator's thread, so a slow sink shows as its operator's time in the
 * sink (sinkTimeMsPerSecond). */
static void rule_backpressure(const tdm__view *w, dx_out *o)
{
    char c1[32];
    const tdm__view_unit *in = NULL;
    if (!w->running)
        return; /* R-DX-B3: a finished job's time figures are history */
    const tdm__view_unit *worst = bottleneck(w, &in);
    if (!worst)
        worst = fullest_queue(w);
    if (!worst)
        return;
    tdm_node *n = tdm__view_node(w, worst->vertex);
    const char *sink = n ? tdm_node_get(n, "sink") : "";
    int64_t waits = tdm__view_agg(w, NULL, TDM_METRIC_BACKPRESSURE,
                                  TDM_METRIC_AGG_SUM, NULL);
    json_t *f =
        finding(o, SEV_WARNING, "BACKPRESSURE", worst->vertex, worst->subtask,
                -1, "%s subtask %d cannot keep up with its input",
                worst->vertex, worst->subtask);
    if (!f)
        return;
    json_t *ev = evidence(f);
    if (in)
        tdm__json_add_str(ev, &o->oom,
                          "%s subtask %d is backpressured %" PRId64
                          " ms of every second (waiting for room in %s)",
                          in->vertex, in->subtask, in->v[TDM_METRIC_BP_RATE],
                          worst->vertex);
    if (tdm__view_has(worst, TDM_METRIC_BUSY_RATE))
        tdm__json_add_str(
            ev, &o->oom,
            "%s subtask %d is busy %" PRId64 " ms of every second, %" PRId64
            " of them blocked in its sink",
            worst->vertex, worst->subtask, worst->v[TDM_METRIC_BUSY_RATE],
            tdm__view_val(worst, TDM_METRIC_SINK_RATE, 0));
    tdm__json_add_str(ev, &o->oom,
                      "input queue of %s subtask %d: %" PRId64 " of %" PRId64
                      " items",
                      worst->vertex, worst->subtask,
                      tdm__view_val(worst, TDM_METRIC_QUEUE_LEN, 0),
                      tdm__view_val(worst, TDM_METRIC_QUEUE_CAP, 0));
    tdm__json_add_str(ev, &o->oom, "sources waited %s times for a full queue",
                      tdm__fmt_count(waits, c1, sizeof c1));
    if (*sink)
        tdm__json_add_str(ev, &o->oom, "%s writes its results to sink %s",
                          worst->vertex, sink);
    backpressure_fix(o, f, worst, sink);
}

/* WATERMARK_REGRESSIONS and BAD_RECORDS: counters that should stay 0. */
static void rule_counters(const tdm__view *w, dx_out *o)
{
    char c1[32];
    int64_t reg = tdm__view_agg(w, NULL, TDM_METRIC_WM_REGRESSIONS,
                                TDM_METRIC_AGG_SUM, NULL);
    if (reg > 0) {
        json_t *f =
            finding(o, SEV_WARNING, "WATERMARK_REGRESSIONS", NULL, -1, -1,
                    "%s watermark%s tried to move backwards and "
                    "%s ignored",
                    tdm__fmt_count(reg, c1, sizeof c1), reg == 1 ? "" : "s",
                    reg == 1 ? "was" : "were");
        if (!f)
            return;
        for (size_t i = 0; i < w->n_vertices; i++) {
            const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
            int64_t r = tdm__view_agg(w, vi->name, TDM_METRIC_WM_REGRESSIONS,
                                      TDM_METRIC_AGG_SUM, NULL);
            if (r > 0)
                tdm__json_add_str(evidence(f), &o->oom, "%s: %s", vi->name,
                                  tdm__fmt_count(r, c1, sizeof c1));
        }
        set_fix(o, f,
                "Results are not affected (a watermark never goes back), but "
                "an upstream watermark is inconsistent: check punctuated "
                "markers and custom strategies for values that decrease.");
    }
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        int64_t bad = tdm__view_agg(w, vi->name, TDM_METRIC_BAD_RECORDS,
                                    TDM_METRIC_AGG_SUM, NULL);
        if (bad <= 0)
            continue;
        const char *dead = w->job ? tdm_job_get(w->job, "dead_letter") : "";
        json_t *f = finding(o, SEV_WARNING, "BAD_RECORDS", vi->name, -1, -1,
                            "%s malformed record%s in %s",
                            tdm__fmt_count(bad, c1, sizeof c1),
                            bad == 1 ? "" : "s", vi->name);
        if (!f)
            return;
        tdm__json_add_str(
            evidence(f), &o->oom,
            "records that did not parse or lacked their timestamp were "
            "skipped%s%s",
            *dead ? " and sent to " : "", dead);
        if (*dead)
            set_fix(o, f,
                    "Look at the records in sink %s: each carries its "
                    "location and the reason; fix the producer or the "
                    "source's schema and format.",
                    dead);
        else
            set_fix(o, f,
                    "Set dead_letter to a sink to see each bad record with "
                    "its location and reason; then fix the producer or the "
                    "source's schema and format.");
    }
}

/* A JOB-scope metric of the snapshot (the view keeps none), or @p dflt
 * when absent. */
static int64_t job_val(const tdm_metrics *m, tdm_metric id, int64_t dflt)
{
    for (size_t i = 0; i < tdm_metrics_count(m); i++) {
        const tdm_metric_value *mv = tdm_metrics_at(m, i);
        if (mv && mv->id == id && !mv->vertex)
            return mv->value;
    }
    return dflt;
}

/* CHECKPOINTS_FAILING: checkpoints failed since the last completed one,
 * so the sinks' output since then is hidden; critical once the failures
 * exceed checkpoint.tolerable_failed (the run failed, or restarts), a
 * warning while tolerated.  CHECKPOINTS_FAILED (warning): failures
 * earlier in the run that a completed checkpoint has covered since. */
static void rule_checkpoints(const tdm__view *w, dx_out *o)
{
    int64_t failed = job_val(w->m, TDM_METRIC_CKPT_FAILED, 0);
    if (!w->job || failed == 0)
        return;
    tdm_job *job = w->job;
    int64_t in_row = job_val(w->m, TDM_METRIC_CKPT_FAILED_IN_ROW, 0);
    int64_t tol = tdm_job_get_int(job, "checkpoint.tolerable_failed");
    int64_t last = job_val(w->m, TDM_METRIC_CKPT_LAST_ID, -1);
    int64_t rs = job_val(w->m, TDM_METRIC_RESTARTS, 0);
    const char *dir = tdm_job_get(job, "checkpoint.dir");
    char why[400], done[48];
    tdm_job_checkpoint_failure(job, why, sizeof why);
    if (last > 0)
        snprintf(done, sizeof done, "checkpoint %" PRId64, last);
    else
        snprintf(done, sizeof done, "the run's start");
    json_t *f =
        in_row == 0
            ? finding(o, SEV_WARNING, "CHECKPOINTS_FAILED", NULL, -1, -1,
                      "%" PRId64
                      " checkpoint%s failed earlier; checkpoint %" PRId64
                      " completed since",
                      failed, failed == 1 ? "" : "s", last)
            : finding(o, in_row > tol ? SEV_CRITICAL : SEV_WARNING,
                      "CHECKPOINTS_FAILING", NULL, -1, -1,
                      "Checkpoint %" PRId64 " failed: %" PRId64 " in a row, %s "
                      "checkpoint.tolerable_failed (%" PRId64 ")",
                      job_val(w->m, TDM_METRIC_CKPT_FAILED_ID, 0), in_row,
                      in_row > tol ? "more than" : "within", tol);
    if (!f)
        return;
    json_t *ev = evidence(f);
    tdm__json_add_str(ev, &o->oom, "the last failure: %s", why);
    tdm__json_add_str(ev, &o->oom, "the last completed checkpoint: %s",
                      last > 0 ? done : "none in this run");
    tdm__json_add_str(ev, &o->oom,
                      "restarts: %" PRId64 " (restart.strategy %s)", rs,
                      tdm_job_get(job, "restart.strategy"));
    if (in_row == 0) {
        set_fix(o, f,
                "Check the free space and health of %s: the next "
                "failures may fail the job.",
                dir);
        return;
    }
    tdm__json_add_str(ev, &o->oom,
                      "results written since %s are pending (hidden "
                      "parts) until a checkpoint completes",
                      done);
    set_fix(o, f,
            "Make room in %s (or fix the disk or its permissions). %s "
            "resumes from the newest checkpoint with the exact output; "
            "restart.strategy exponential-delay restarts it in the "
            "process, and checkpoint.tolerable_failed rides out short "
            "outages (the output stays hidden meanwhile).",
            dir,
            in_row > tol && !tdm_job_is_restarting(job)
                ? "Then run the job again: it"
                : "The job");
}

/* The "all clear" finding, with the numbers that show it. */
static void rule_all_clear(const tdm__view *w, dx_out *o)
{
    char a[64], d[32], c1[32], c2[32];
    int n = 0, k = 0;
    json_t *f = finding(o, SEV_INFO, "ALL_CLEAR", NULL, -1, -1,
                        "Nothing holds the watermark back; no problem "
                        "found");
    if (!f)
        return;
    json_t *ev = evidence(f);
    int64_t wm =
        tdm__view_agg(w, NULL, TDM_METRIC_WM_OUTPUT, TDM_METRIC_AGG_MIN, &n);
    int64_t lag =
        tdm__view_agg(w, NULL, TDM_METRIC_WM_LAG, TDM_METRIC_AGG_MAX, &k);
    tdm__json_add_str(ev, &o->oom, "the job %s",
                      w->running ? "is running" : "is not running");
    if (n)
        tdm__json_add_str(ev, &o->oom, "lowest output watermark: %s%s%s",
                          tdm__fmt_time(wm, a, sizeof a), k ? ", lag " : "",
                          k ? tdm__fmt_dur(lag, d, sizeof d) : "");
    int64_t in = 0, out = 0;
    for (size_t i = 0; i < w->n_vertices; i++) {
        const tdm_vertex_info *vi = tdm_metrics_vertex(w->m, i);
        if (vi->kind == TDM_NODE_SOURCE)
            in += tdm__view_agg(w, vi->name, TDM_METRIC_RECORDS_IN,
                                TDM_METRIC_AGG_SUM, NULL);
        else if (vi->kind == TDM_NODE_WINDOW || vi->kind == TDM_NODE_JOIN)
            out += tdm__view_agg(w, vi->name, TDM_METRIC_RECORDS_OUT,
                                 TDM_METRIC_AGG_SUM, NULL);
    }
    tdm__json_add_str(ev, &o->oom, "%s records read, %s results written",
                      tdm__fmt_count(in, c1, sizeof c1),
                      tdm__fmt_count(out, c2, sizeof c2));
    set_fix(o, f, "Nothing to do.");
}

/* Runs every rule over view @p w with culprit @p c (see tdm__diagnose
 * for the order). */
static void run_rules(const tdm__view *w, const tdm__view_culprit *c,
                      const tdm__history *hist, dx_out *o)
{
    if (w->n == 0) {
        /* Vertices but no values: the job has not run. */
        json_t *f = finding(o, SEV_INFO, "NOT_STARTED", NULL, -1, -1,
                            "The job has not started: there is nothing to "
                            "diagnose yet");
        if (f)
            set_fix(o, f,
                    "Start the job (tdm_job_run, tidemark run) and "
                    "ask again.");
    } else if (c->pub.found && (c->pub.behind_ms < 0 ||
                                c->pub.behind_ms >= tdm__view_hold_threshold(
                                                        w, c->unit->vertex) ||
                                tdm__view_stalled(c->unit, c->other_age_ms))) {
        rule_held_back(w, c, hist, o);
    } else {
        rule_held_channel(w, o);
    }
    if (w->n > 0) {
        rule_no_data(w, c, o);
        rule_all_idle(w, o);
        rule_stalled(w, hist, o);
        rule_unit(w, o);
        rule_trigger(w, o);
        rule_ahead(w, o);
        rule_fallback(w, o);
        rule_future(w, o);
        rule_late(w, o);
        rule_backpressure(w, o);
        rule_counters(w, o);
        rule_checkpoints(w, o);
        if (json_array_size(o->items[SEV_CRITICAL]) == 0 &&
            json_array_size(o->items[SEV_WARNING]) == 0)
            rule_all_clear(w, o);
    }
}

/* The "culprit" member: the partition holding the watermark back, as
 * GET /jobs/:id/partitions has it (unknowns are null, sinceMs 0 without
 * history), or null.  Sets *oom on a failed allocation. */
static json_t *culprit_json(const tdm__view *w, const tdm__view_culprit *c,
                            const tdm__history *hist, int *oom)
{
    json_t *cj;
    char name[160];
    tdm_time_ms since;
    int64_t since_ms = 0;
    if (!c->pub.found)
        return json_null();
    if (!(cj = json_object()))
        return NULL;
    tdm__json_set(cj, "vertex", json_string(c->pub.vertex), oom);
    tdm__json_set(cj, "subtask", json_integer(c->pub.subtask), oom);
    tdm__json_set(cj, "partition", json_integer(c->pub.partition), oom);
    snprintf(name, sizeof name, "%s", c->pub.name ? c->pub.name : "");
    tdm__json_set(cj, "name", json_string(name), oom);
    tdm__json_set(cj, "watermark", tdm__json_wm(c->pub.watermark), oom);
    tdm__json_set(cj, "next", tdm__json_wm(c->pub.next), oom);
    if (tdm__history_culprit_since(hist, c->pub.vertex, c->pub.subtask,
                                   c->pub.partition, &since) &&
        since <= w->now)
        since_ms = w->now - since;
    tdm__json_set(cj, "behindMs",
                  c->pub.behind_ms >= 0 ? json_integer(c->pub.behind_ms)
                                        : json_null(),
                  oom);
    tdm__json_set(cj, "lastRecordAgeMs",
                  c->pub.last_record_age_ms >= 0
                      ? json_integer(c->pub.last_record_age_ms)
                      : json_null(),
                  oom);
    tdm__json_set(cj, "sinceMs", json_integer(since_ms), oom);
    return cj;
}

/* The findings for a snapshot (server.h).  Every rule appends to the
 * list of its severity; the lists are concatenated critical, warning,
 * info, so within a severity the rule order below holds.  The held-back
 * partition is reported when it holds a window (behind by a window
 * period) or has stalled; otherwise an operator channel may stand out
 * instead (sources without partition metrics). */
json_t *tdm__diagnose(tdm_job *job, const tdm_metrics *m,
                      const tdm__history *hist)
{
    tdm__view w;
    tdm__view_culprit c;
    dx_out o;
    json_t *res = NULL, *all = NULL;

    memset(&o, 0, sizeof o);
    if (!m || tdm__view_build(&w, job, m) != TDM_OK)
        return NULL;
    for (int s = 0; s < 3; s++)
        if (!(o.items[s] = json_array()))
            goto fail;
    tdm__view_culprit_find(&w, &c);
    run_rules(&w, &c, hist, &o);
    /* Most important first: critical, warning, info, each in rule order. */
    if (!(all = json_array()) || !(res = json_object()))
        goto fail;
    for (int s = 0; s < 3; s++)
        if (json_array_extend(all, o.items[s]) != 0)
            goto fail;
    tdm__json_set(res, "job", json_string(job ? tdm_job_get(job, "name") : ""),
                  &o.oom);
    tdm__json_set(res, "now", json_integer(w.now), &o.oom);
    tdm__json_set(res, "running", json_boolean(w.running), &o.oom);
    tdm__json_set(res, "culprit", culprit_json(&w, &c, hist, &o.oom), &o.oom);
    if (json_object_set(res, "findings", all) != 0 || o.oom)
        goto fail;
    json_decref(all);
    for (int s = 0; s < 3; s++)
        json_decref(o.items[s]);
    tdm__view_free(&w);
    return res;
fail:
    json_decref(res);
    json_decref(all);
    for (int s = 0; s < 3; s++)
        json_decref(o.items[s]);
    tdm__view_free(&w);
    return NULL;
}
