/* SPDX-License-Identifier: MIT */
/* explain.c - "why has this window not fired?": asks the window
 * subtask owning a key about one (key, window) (tdm_job_window_status)
 * and explains its answer as a verdict in one sentence, what the window
 * is waiting for, and evidence lines.
 *
 * Invariant: the verdict comes from the subtask's answer alone; a
 * metrics snapshot (and its view, view.c) only adds evidence (channel
 * labels, partitions, late counts and samples), so without one the
 * verdict stands.  Used by the REST route GET /jobs/:id/windows
 * (rest.c); the cases are listed above tdm__explain_window and in
 * docs/diagnosis.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "server/view.h"

/* The lowest active partition of subtask @p sub of source @p src. */
static const tdm__view_unit *lowest_partition(const tdm__view *w,
                                              const char *src, int sub)
{
    const tdm__view_unit *low = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const tdm__view_unit *u = &w->u[i];
        if (!tdm__view_part_active(u) || u->subtask != sub ||
            tdm__view_strcmp(u->vertex, src) != 0)
            continue;
        if (!low || u->v[TDM_METRIC_P_WM] < low->v[TDM_METRIC_P_WM])
            low = u;
    }
    return low;
}

/* Appends to @p buf (of @p n bytes, holding a sentence) what holds the
 * subtask's watermark: the channel, its source subtask and that subtask's
 * lowest partition, with an evidence line for each.  Channel labels are
 * "source#subtask"; the partition holding a source subtask is its
 * lowest active one (the reader's output is their minimum). */
static void holding_clause(const tdm__view *w, int *oom, json_t *ev,
                           const char *vertex, const tdm_window_status *st,
                           char *buf, size_t n)
{
    char a[64], d[32], nm[160], src[128];
    size_t len = strlen(buf);
    const tdm__view_unit *ch;
    const char *hash;
    int sub;

    if (st->holding_channel < 0)
        return;
    ch = tdm__view_find(w, TDM__VIEW_CHANNEL, vertex, st->subtask,
                        st->holding_channel);
    if (!ch || !ch->label || !(hash = strrchr(ch->label, '#'))) {
        snprintf(buf + len, n - len, ", held back by channel %d",
                 st->holding_channel);
        tdm__json_add_str(ev, oom,
                          "channel %d has the lowest watermark of the "
                          "active channels: %s",
                          st->holding_channel,
                          tdm__fmt_time(st->holding_wm, a, sizeof a));
        return;
    }
    snprintf(src, sizeof src, "%.*s", (int)(hash - ch->label), ch->label);
    sub = atoi(hash + 1);
    len += (size_t)snprintf(buf + len, n - len,
                            ", held back by channel %d (source %s)",
                            st->holding_channel, ch->label);
    tdm__json_add_str(
        ev, oom,
        "channel %d (source %s) has the lowest watermark of the active "
        "channels: %s; %d channel%s idle",
        st->holding_channel, ch->label,
        tdm__fmt_time(st->holding_wm, a, sizeof a), st->idle_channels,
        st->idle_channels == 1 ? " is" : "s are");
    const tdm__view_unit *p = lowest_partition(w, src, sub);
    if (!p || len >= n)
        return;
    int64_t age = tdm__view_val(p, TDM_METRIC_P_LAST_AGE, -1);
    int64_t idle = tdm__view_idle_timeout(w, src);
    tdm__view_part_name(p, nm, sizeof nm);
    tdm__view_silence sl = tdm__view_silence_of(w);
    if (tdm__view_all_silent(w, &sl))
        /* R-EX-1: all silent: no partition to leave out. */
        snprintf(
            buf + len, n - len,
            "; every partition has been silent for %s or more, so only "
            "new records or the end of the input move the watermark "
            "(STALLED_WATERMARK)",
            tdm__fmt_dur(sl.youngest >= 0 ? sl.youngest : TDM__VIEW_STALL_MS, d,
                         sizeof d));
    else if (age >= TDM__VIEW_STALL_MS && idle <= 0)
        snprintf(buf + len, n - len,
                 ", whose partition %s has had no data for %s and no idle "
                 "timeout",
                 nm, tdm__fmt_dur(age, d, sizeof d));
    else if (age >= TDM__VIEW_STALL_MS)
        snprintf(buf + len, n - len,
                 ", whose partition %s has had no data for %s (idle after "
                 "%s)",
                 nm, tdm__fmt_dur(age, d, sizeof d),
                 tdm__fmt_dur(idle, a, sizeof a));
    else
        snprintf(buf + len, n - len, ", whose lowest partition is %s", nm);
    tdm__json_add_str(
        ev, oom,
        "partition %s of %s subtask %d is at %s; last record %s ago; "
        "watermark.idle_timeout %s",
        nm, src, sub, tdm__fmt_time(p->v[TDM_METRIC_P_WM], a, sizeof a),
        age >= 0 ? tdm__fmt_dur(age, d, sizeof d) : "(unknown)",
        idle > 0 ? "set" : "not set");
}

/* A yes / no / unknown (-1) field: true, false or null. */
static json_t *tri(int v)
{
    return v < 0 ? json_null() : json_boolean(v);
}

/* The status as JSON (the tdm_window_status fields). */
static json_t *status_json(const tdm_window_status *st, int *oom)
{
    json_t *s = json_object();
    if (!s) {
        *oom = 1;
        return NULL;
    }
    tdm__json_set(s, "subtask", json_integer(st->subtask), oom);
    tdm__json_set(s, "watermark", tdm__json_wm(st->watermark), oom);
    tdm__json_set(s, "max_ts", tdm__json_wm(st->max_ts), oom);
    tdm__json_set(s, "cleanup", tdm__json_wm(st->cleanup), oom);
    tdm__json_set(s, "has_state", tri(st->has_state), oom);
    tdm__json_set(s, "elements", json_integer(st->elements), oom);
    tdm__json_set(s, "fired", tri(st->fired), oom);
    tdm__json_set(s, "fired_wm",
                  st->fired ? tdm__json_wm(st->fired_wm) : json_null(), oom);
    tdm__json_set(s, "holding_channel", json_integer(st->holding_channel), oom);
    tdm__json_set(s, "holding_wm",
                  st->holding_channel >= 0 ? tdm__json_wm(st->holding_wm)
                                           : json_null(),
                  oom);
    tdm__json_set(s, "idle_channels", json_integer(st->idle_channels), oom);
    tdm__json_set(s, "running", json_boolean(st->running), oom);
    tdm__json_set(s, "blocked_ms", json_integer(st->blocked_ms), oom);
    return s;
}

/* Maps tdm_job_window_status's error to an HTTP status. */
static int http_of(tdm_err e)
{
    switch (e) {
    case TDM_ERR_INVAL:
        return 400;
    case TDM_ERR_STATE:
    case TDM_ERR_IO:
        return 503;
    default:
        return 500;
    }
}

/* ---- One explanation ---- */

/* What the window's configuration says, as the verdicts need it. */
typedef struct ex_conf {
    int blind;             /* event-time windows, but a trigger that does
                              not fire on the watermark */
    tdm_trigger_kind trg;  /* the trigger */
    int64_t trigger_count; /* the count trigger's count */
    int64_t lateness;      /* allowed lateness, ms */
} ex_conf;

/* An explanation being built: the question, the subtask's answer, the
 * optional view of a snapshot, and the verdict's parts. */
typedef struct ex_ctx {
    const char *vertex, *key;
    tdm_time_ms start, end;
    tdm_window_status st;
    ex_conf conf;
    tdm_metrics *m; /* NULL when no snapshot could be taken */
    tdm__view w;
    int have_view;
    json_t *ev; /* evidence lines */
    int oom;
    char span[160]; /* "[start, end)" */
    char verdict[1024];
    char waiting[512];
    const char *waiting_for; /* waiting, or NULL (nothing to wait for) */
} ex_ctx;

/* Reads the facts the verdicts need from window node @p node. */
static void read_conf(tdm_job *job, const char *name, tdm_node *node,
                      ex_conf *cf)
{
    char key[192];
    int event_time = !tdm_node_processing_time(node) &&
                     tdm_node_window_kind(node) != TDM_WINDOW_KIND_GLOBAL;
    cf->trg = tdm_node_trigger(node);
    cf->blind = event_time && (cf->trg == TDM_TRIGGER_KIND_PROCESSING_TIME ||
                               cf->trg == TDM_TRIGGER_KIND_COUNT ||
                               cf->trg == TDM_TRIGGER_KIND_NEVER);
    cf->trigger_count = tdm_node_get_int(node, "trigger.count");
    /* The value in force (docs/live-settings.md). */
    snprintf(key, sizeof key, "windows.%s.allowed_lateness", name);
    cf->lateness = tdm__job_live_value(
        job, key, tdm_node_get_int(node, "allowed_lateness"));
}

/* The evidence every answer starts with: the subtask and its watermark,
 * when the window fires and is dropped, what it holds. */
static void opening_evidence(ex_ctx *x)
{
    const tdm_window_status *st = &x->st;
    char a[64], b[64], d[32], e[32];
    tdm__json_add_str(
        x->ev, &x->oom,
        "key \"%s\" belongs to subtask %d of %s, whose watermark is %s", x->key,
        st->subtask, x->vertex, tdm__fmt_time(st->watermark, a, sizeof a));
    tdm__json_add_str(
        x->ev, &x->oom,
        "the window fires when that watermark reaches %s (its last "
        "timestamp); its state is dropped once it passes %s (allowed "
        "lateness %s)",
        tdm__fmt_time(st->max_ts, a, sizeof a),
        tdm__fmt_time(st->cleanup, b, sizeof b),
        tdm__fmt_dur(x->conf.lateness, d, sizeof d));
    if (st->blocked_ms > 0)
        tdm__json_add_str(x->ev, &x->oom,
                          "subtask %d could not be asked what the window "
                          "holds: it has been blocked for %s (backpressure); "
                          "this answer comes from its published figures",
                          st->subtask,
                          tdm__fmt_dur(st->blocked_ms, d, sizeof d));
    else if (st->has_state)
        tdm__json_add_str(x->ev, &x->oom,
                          st->elements >= 0
                              ? "the window holds %s record%s now"
                              : "the window holds records now%.0s%s",
                          tdm__fmt_count(st->elements, e, sizeof e),
                          st->elements == 1 ? "" : "s");
    else
        tdm__json_add_str(x->ev, &x->oom, "the window holds no records now");
}

/* Verdict: fired (at the end of input, early by its trigger, or when
 * the watermark reached the window's end). */
static void verdict_fired(ex_ctx *x)
{
    const tdm_window_status *st = &x->st;
    char a[64];
    if (st->fired_wm == TDM_TIME_MAX)
        snprintf(x->verdict, sizeof x->verdict,
                 "Fired: the window %s of key \"%s\" fired at the end "
                 "of input.",
                 x->span, x->key);
    else if (x->conf.blind || st->fired_wm < st->max_ts)
        snprintf(x->verdict, sizeof x->verdict,
                 "Fired: the window %s of key \"%s\" fired (early, by "
                 "its trigger) while the watermark of subtask %d was at "
                 "%s.",
                 x->span, x->key, st->subtask,
                 tdm__fmt_time(st->fired_wm, a, sizeof a));
    else
        snprintf(x->verdict, sizeof x->verdict,
                 "Fired: the window %s of key \"%s\" fired when the "
                 "watermark of subtask %d reached %s.",
                 x->span, x->key, st->subtask,
                 tdm__fmt_time(st->fired_wm, a, sizeof a));
    if (st->has_state && st->watermark < st->cleanup)
        tdm__json_add_str(x->ev, &x->oom,
                          "its state is kept until the watermark passes %s: "
                          "a late record until then refires it",
                          tdm__fmt_time(st->cleanup, a, sizeof a));
}

/* Verdict: holds records, but its trigger does not fire on the
 * watermark (processing_time, count, never). */
static void verdict_blind(ex_ctx *x)
{
    const char *what = tdm_trigger_name(x->conf.trg);
    char a[64];
    snprintf(x->verdict, sizeof x->verdict,
             "Not fired: the window %s of key \"%s\" holds records, but "
             "its %s trigger does not fire on the watermark.",
             x->span, x->key, what);
    if (x->conf.trg == TDM_TRIGGER_KIND_COUNT)
        snprintf(x->waiting, sizeof x->waiting,
                 "%" PRId64 " records of key \"%s\" in this window (the "
                 "count trigger)",
                 x->conf.trigger_count, x->key);
    else if (x->conf.trg == TDM_TRIGGER_KIND_PROCESSING_TIME)
        snprintf(x->waiting, sizeof x->waiting,
                 "processing time to reach %s (the processing_time "
                 "trigger)",
                 tdm__fmt_time(x->st.max_ts, a, sizeof a));
    else
        snprintf(x->waiting, sizeof x->waiting,
                 "nothing: the never trigger fires no window (only the "
                 "end of input does)");
    x->waiting_for = x->waiting;
    tdm__json_add_str(x->ev, &x->oom,
                      "windows.%s.trigger is %s: remove it to fire each "
                      "window when the watermark passes its end",
                      x->vertex, what);
}

/* Verdict: holds records, waiting for the watermark, and what holds
 * the watermark back. */
static void verdict_waiting(ex_ctx *x)
{
    const tdm_window_status *st = &x->st;
    char a[64], b[64];
    snprintf(x->verdict, sizeof x->verdict,
             "Not fired: waiting for the watermark of subtask %d to "
             "pass %s; it is at %s",
             st->subtask, tdm__fmt_time(st->max_ts, a, sizeof a),
             st->watermark == TDM_TIME_MIN
                 ? "nothing yet (no watermark)"
                 : tdm__fmt_time(st->watermark, b, sizeof b));
    if (x->have_view)
        holding_clause(&x->w, &x->oom, x->ev, x->vertex, st, x->verdict,
                       sizeof x->verdict - 1);
    strcat(x->verdict, ".");
    snprintf(x->waiting, sizeof x->waiting,
             "the watermark of %s subtask %d to pass %s", x->vertex,
             st->subtask, tdm__fmt_time(st->max_ts, a, sizeof a));
    x->waiting_for = x->waiting;
}

/* Verdict: holds records and the watermark has passed its end: it
 * fires with the next watermark step (asked between two steps). */
static void verdict_next_step(ex_ctx *x)
{
    char a[64];
    snprintf(x->verdict, sizeof x->verdict,
             "Not fired yet: the watermark of subtask %d (%s) has "
             "passed the window's end; it fires with the subtask's next "
             "watermark step.",
             x->st.subtask, tdm__fmt_time(x->st.watermark, a, sizeof a));
    snprintf(x->waiting, sizeof x->waiting,
             "the next watermark step of %s subtask %d", x->vertex,
             x->st.subtask);
    x->waiting_for = x->waiting;
}

/* Verdict: no records and the watermark has passed its end: no record
 * came in time (with the vertex's late counts). */
static void verdict_no_result(ex_ctx *x)
{
    const tdm_window_status *st = &x->st;
    int64_t dropped = 0, side = 0;
    char a[64], d[32], e[32];
    if (x->have_view) {
        dropped = tdm__view_agg(&x->w, x->vertex, TDM_METRIC_LATE_DROPPED,
                                TDM_METRIC_AGG_SUM, NULL);
        side = tdm__view_agg(&x->w, x->vertex, TDM_METRIC_LATE_SIDE,
                             TDM_METRIC_AGG_SUM, NULL);
    }
    snprintf(x->verdict, sizeof x->verdict,
             "No result: no record with key \"%s\" arrived for the "
             "window %s before the watermark passed its end (%s late "
             "record%s %s dropped by %s, %s sent to the late output).",
             x->key, x->span, tdm__fmt_count(dropped, d, sizeof d),
             dropped == 1 ? "" : "s", dropped == 1 ? "was" : "were", x->vertex,
             tdm__fmt_count(side, e, sizeof e));
    if (st->watermark < st->cleanup) {
        snprintf(x->waiting, sizeof x->waiting,
                 "a record with key \"%s\" in the window before the "
                 "watermark passes %s (allowed lateness)",
                 x->key, tdm__fmt_time(st->cleanup, a, sizeof a));
        x->waiting_for = x->waiting;
    }
    tdm__json_add_str(x->ev, &x->oom,
                      "(or it fired longer ago than the last 8,192 firings "
                      "subtask %d remembers)",
                      st->subtask);
}

/* Verdict: no records and the watermark below its end: no record yet. */
static void verdict_no_record(ex_ctx *x)
{
    char a[64];
    snprintf(x->verdict, sizeof x->verdict,
             "Not fired: no record with key \"%s\" has arrived for the "
             "window %s yet; the watermark of subtask %d is at %s.",
             x->key, x->span, x->st.subtask,
             tdm__fmt_time(x->st.watermark, a, sizeof a));
    snprintf(x->waiting, sizeof x->waiting,
             "a record with key \"%s\" in the window, then the "
             "watermark of %s subtask %d to pass %s",
             x->key, x->vertex, x->st.subtask,
             tdm__fmt_time(x->st.max_ts, a, sizeof a));
    x->waiting_for = x->waiting;
}

/* Verdict: the subtask is blocked (its sink, or a full queue
 * downstream) and was answered for from its published figures: the
 * watermark says whether the window is due (R-EX-2). */
static void verdict_blocked(ex_ctx *x)
{
    const tdm_window_status *st = &x->st;
    char a[64], b[64], d[32];
    tdm__fmt_dur(st->blocked_ms, d, sizeof d);
    if (st->watermark >= st->max_ts) {
        snprintf(x->verdict, sizeof x->verdict,
                 "Due: the watermark of subtask %d (%s) has passed the "
                 "window's end, so the window %s of key \"%s\" has fired "
                 "or is firing, if it holds records; but subtask %d has "
                 "been blocked for %s by backpressure (its sink or the "
                 "next operator does not take its output), so its results "
                 "wait there.",
                 st->subtask, tdm__fmt_time(st->watermark, a, sizeof a),
                 x->span, x->key, st->subtask, d);
        snprintf(x->waiting, sizeof x->waiting,
                 "the output of %s subtask %d to be taken (backpressure: "
                 "see the BACKPRESSURE finding of the diagnosis)",
                 x->vertex, st->subtask);
    } else {
        snprintf(x->verdict, sizeof x->verdict,
                 "Not fired: the watermark of subtask %d is at %s, before "
                 "the window's end %s",
                 st->subtask,
                 st->watermark == TDM_TIME_MIN
                     ? "nothing yet (no watermark)"
                     : tdm__fmt_time(st->watermark, a, sizeof a),
                 tdm__fmt_time(st->max_ts, b, sizeof b));
        if (x->have_view)
            holding_clause(&x->w, &x->oom, x->ev, x->vertex, st, x->verdict,
                           sizeof x->verdict - 80);
        size_t len = strlen(x->verdict);
        snprintf(x->verdict + len, sizeof x->verdict - len,
                 "; subtask %d has been blocked for %s by backpressure.",
                 st->subtask, d);
        snprintf(x->waiting, sizeof x->waiting,
                 "the watermark of %s subtask %d to pass %s, and its "
                 "output to be taken (backpressure)",
                 x->vertex, st->subtask,
                 tdm__fmt_time(st->max_ts, a, sizeof a));
    }
    x->waiting_for = x->waiting;
}

/* Picks the verdict of the seven cases (see tdm__explain_window). */
static void verdict(ex_ctx *x)
{
    const tdm_window_status *st = &x->st;
    if (st->blocked_ms > 0)
        verdict_blocked(x);
    else if (st->fired)
        verdict_fired(x);
    else if (st->has_state && x->conf.blind)
        verdict_blind(x);
    else if (st->has_state && st->watermark < st->max_ts)
        verdict_waiting(x);
    else if (st->has_state)
        verdict_next_step(x);
    else if (st->watermark >= st->max_ts)
        verdict_no_result(x);
    else
        verdict_no_record(x);
}

/* The closing evidence: a finished job, and the recent late records
 * (at most 5) that fell into this window. */
static void closing_evidence(ex_ctx *x)
{
    char a[64], c[64];
    if (!x->st.running)
        tdm__json_add_str(x->ev, &x->oom,
                          "the job has finished: this is its final state");
    for (size_t i = 0, shown = 0; x->m && i < tdm_metrics_late_count(x->m);
         i++) {
        const tdm_late_sample *ls = tdm_metrics_late_at(x->m, i);
        if (!ls || tdm__view_strcmp(ls->vertex, x->vertex) != 0 ||
            ls->ts < x->start || ls->ts >= x->end || shown >= 5)
            continue;
        shown++;
        tdm__json_add_str(
            x->ev, &x->oom,
            "a late record of this window at %s met watermark %s and "
            "was %s: %s",
            tdm__fmt_time(ls->ts, a, sizeof a),
            tdm__fmt_time(ls->watermark, c, sizeof c),
            ls->dropped ? "dropped" : "sent to the late output",
            ls->row ? ls->row : "");
    }
}

/* The answer's JSON: the question, the verdict, the evidence (taken:
 * x->ev is NULL afterwards) and the status.  NULL on NOMEM. */
static json_t *answer_json(ex_ctx *x)
{
    json_t *res = json_object();
    if (!res)
        return NULL;
    tdm__json_set(res, "vertex", json_string(x->vertex), &x->oom);
    tdm__json_set(res, "key", json_string(x->key), &x->oom);
    tdm__json_set(res, "start", json_integer(x->start), &x->oom);
    tdm__json_set(res, "end", json_integer(x->end), &x->oom);
    tdm__json_set(res, "fired", tri(x->st.fired), &x->oom);
    tdm__json_set(res, "verdict", json_string(x->verdict), &x->oom);
    tdm__json_set(res, "waiting_for",
                  x->waiting_for ? json_string(x->waiting_for) : json_null(),
                  &x->oom);
    tdm__json_set(res, "evidence", x->ev, &x->oom);
    x->ev = NULL;
    tdm__json_set(res, "status", status_json(&x->st, &x->oom), &x->oom);
    if (x->oom) {
        json_decref(res);
        return NULL;
    }
    return res;
}

/* Checks the question and asks the window subtask: 200 with the answer
 * in x->st and the window's configuration in x->conf, or the HTTP status
 * of the refusal (with its message in errbuf). */
static int ask(tdm_job *job, ex_ctx *x, char *errbuf, size_t errbuf_size)
{
    tdm_node *node;
    tdm_err err;
    if (!job || !x->vertex || !*x->vertex) {
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "vertex is required (the name of a window)");
        return 400;
    }
    node = tdm_job_node(job, x->vertex);
    if (!node || tdm_node_kind_of(node) != TDM_NODE_WINDOW) {
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  node ? "vertex \"%s\" is not a window"
                       : "no window named \"%s\" in the job",
                  x->vertex);
        return 404;
    }
    if (!x->key) {
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "key is required (the key fields' values, joined by ',')");
        return 400;
    }
    if (x->start >= x->end) {
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "start must be before end (got %" PRId64 " and %" PRId64 ")",
                  x->start, x->end);
        return 400;
    }
    err = tdm_job_window_status(job, x->vertex, x->key, x->start, x->end,
                                &x->st, errbuf, errbuf_size);
    if (err == TDM_ERR_STATE)
        tdm__errf(errbuf, errbuf_size, err, "the job has not run yet");
    else if (err == TDM_ERR_NOMEM)
        tdm__errf(errbuf, errbuf_size, err, "out of memory");
    if (err != TDM_OK)
        return http_of(err);
    read_conf(job, x->vertex, node, &x->conf);
    return 200;
}

/* Explains one (key, window) of a window vertex (server.h).
 *
 * The verdict is one of seven cases, from the subtask's answer:
 *   blocked (answered for from its     -> due or not by the watermark,
 *     published figures)                  and the backpressure;
 *   fired                              -> when, at which watermark;
 *   holds records, trigger blind to    -> what the trigger waits for;
 *     the watermark
 *   holds records, watermark < max_ts  -> waiting for the watermark, and
 *                                         what holds it (channel, source
 *                                         subtask, its lowest partition);
 *   holds records, watermark >= max_ts -> fires at the next step (asked
 *                                         between two steps);
 *   no records, watermark >= max_ts    -> no record came in time (late
 *                                         counts of the vertex);
 *   no records, watermark < max_ts     -> no record yet.
 * The metrics snapshot only adds evidence (channel labels, partitions,
 * late samples); without it the verdict stands. */
json_t *tdm__explain_window(tdm_job *job, const char *vertex, const char *key,
                            tdm_time_ms start, tdm_time_ms end,
                            int *http_status, char *errbuf, size_t errbuf_size)
{
    ex_ctx x;
    json_t *res = NULL;
    char a[64], b[64];
    int status;

    memset(&x, 0, sizeof x);
    x.vertex = vertex;
    x.key = key;
    x.start = start;
    x.end = end;
    if ((status = ask(job, &x, errbuf, errbuf_size)) != 200)
        goto out;
    /* The snapshot only adds evidence: without it the answer stands. */
    if (tdm_job_metrics(job, &x.m) == TDM_OK &&
        tdm__view_build(&x.w, job, x.m) == TDM_OK)
        x.have_view = 1;
    if (!(x.ev = json_array()))
        goto nomem;
    snprintf(x.span, sizeof x.span, "[%s, %s)",
             tdm__fmt_time(start, a, sizeof a),
             tdm__fmt_time(end, b, sizeof b));
    opening_evidence(&x);
    verdict(&x);
    closing_evidence(&x);
    if ((res = answer_json(&x)) != NULL)
        goto out;
nomem:
    status = 500;
    tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
out:
    json_decref(x.ev);
    if (x.have_view)
        tdm__view_free(&x.w);
    tdm_metrics_free(x.m);
    *http_status = status;
    return res;
}
