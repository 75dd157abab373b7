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
#include "runtime/rt.h"
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
    if (age >= TDM__VIEW_STALL_MS && idle <= 0)
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
        snprintf(buf + len, n - len, ", whose lowest partition is %s",
                 nm);
    tdm__json_add_str(
        ev, oom,
        "partition %s of %s subtask %d is at %s; last record %s ago; "
        "watermark.idle_timeout %s",
        nm, src, sub, tdm__fmt_time(p->v[TDM_METRIC_P_WM], a, sizeof a),
        age >= 0 ? tdm__fmt_dur(age, d, sizeof d) : "(unknown)",
        idle > 0 ? "set" : "not set");
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
    tdm__json_set(s, "has_state", json_boolean(st->has_state), oom);
    tdm__json_set(s, "elements", json_integer(st->elements), oom);
    tdm__json_set(s, "fired", json_boolean(st->fired), oom);
    tdm__json_set(s, "fired_wm",
                  st->fired ? tdm__json_wm(st->fired_wm) : json_null(), oom);
    tdm__json_set(s, "holding_channel", json_integer(st->holding_channel), oom);
    tdm__json_set(s, "holding_wm",
                  st->holding_channel >= 0 ? tdm__json_wm(st->holding_wm)
                                           : json_null(),
                  oom);
    tdm__json_set(s, "idle_channels", json_integer(st->idle_channels), oom);
    tdm__json_set(s, "running", json_boolean(st->running), oom);
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

/* Explains one (key, window) of a window vertex (server.h).
 *
 * The verdict is one of six cases, from the subtask's answer:
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
json_t *tdm__explain_window(tdm_job *job, const char *vertex,
                            const char *key, tdm_time_ms start,
                            tdm_time_ms end, int *http_status,
                            char *errbuf, size_t errbuf_size)
{
    tdm_window_status st;
    tdm_metrics *m = NULL;
    tdm__view w;
    int oom = 0;
    json_t *res = NULL, *ev = NULL;
    char verdict[1024], waiting[512], a[64], b[64], c[64], d[32], e[32];
    const char *waiting_for = NULL;
    tdm_node *node;
    tdm_err err;
    int have_view = 0, status = 200;

    memset(&w, 0, sizeof w);
    if (!job || !vertex || !*vertex) {
        status = 400;
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "vertex is required (the name of a window)");
        goto fail;
    }
    node = tdm_job_node(job, vertex);
    if (!node || node->kind != TDM_NODE_WINDOW) {
        status = 404;
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  node ? "vertex \"%s\" is not a window"
                       : "no window named \"%s\" in the job",
                  vertex);
        goto fail;
    }
    if (!key) {
        status = 400;
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "key is required (the key fields' values, joined by ',')");
        goto fail;
    }
    if (start >= end) {
        status = 400;
        tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                  "start must be before end (got %" PRId64 " and %" PRId64
                  ")",
                  start, end);
        goto fail;
    }
    err = tdm_job_window_status(job, vertex, key, start, end, &st, errbuf,
                                errbuf_size);
    if (err != TDM_OK) {
        status = http_of(err);
        if (err == TDM_ERR_STATE)
            tdm__errf(errbuf, errbuf_size, err, "the job has not run yet");
        else if (err == TDM_ERR_NOMEM)
            tdm__errf(errbuf, errbuf_size, err, "out of memory");
        goto fail;
    }
    /* The snapshot only adds evidence: without it the answer stands. */
    if (tdm_job_metrics(job, &m) == TDM_OK &&
        tdm__view_build(&w, job, m) == TDM_OK)
        have_view = 1;
    if (!(res = json_object()) || !(ev = json_array()))
        goto nomem;

    int64_t trg = tdm__node_int(node, "trigger");
    int event_time =
        strcmp(tdm__node_str(node, "window.time"), "processing") != 0 &&
        strcmp(tdm__node_str(node, "window.type"), "global") != 0;
    int blind = event_time &&
                (trg == TRG_PROC || trg == TRG_COUNT || trg == TRG_NEVER);
    int64_t lateness = tdm__node_int(node, "allowed_lateness");
    char span[160];
    snprintf(span, sizeof span, "[%s, %s)", tdm__fmt_time(start, a, sizeof a),
             tdm__fmt_time(end, b, sizeof b));

    tdm__json_add_str(
        ev, &oom,
        "key \"%s\" belongs to subtask %d of %s, whose watermark is %s", key,
        st.subtask, vertex, tdm__fmt_time(st.watermark, a, sizeof a));
    tdm__json_add_str(
        ev, &oom,
        "the window fires when that watermark reaches %s (its last "
        "timestamp); its state is dropped once it passes %s (allowed "
        "lateness %s)",
        tdm__fmt_time(st.max_ts, a, sizeof a),
        tdm__fmt_time(st.cleanup, b, sizeof b),
        tdm__fmt_dur(lateness, d, sizeof d));
    if (st.has_state)
        tdm__json_add_str(ev, &oom,
                          st.elements >= 0
                              ? "the window holds %s record%s now"
                              : "the window holds records now%.0s%s",
                          tdm__fmt_count(st.elements, e, sizeof e),
                          st.elements == 1 ? "" : "s");
    else
        tdm__json_add_str(ev, &oom, "the window holds no records now");

    if (st.fired) {
        if (st.fired_wm == TDM_TIME_MAX)
            snprintf(verdict, sizeof verdict,
                     "Fired: the window %s of key \"%s\" fired at the end "
                     "of input.",
                     span, key);
        else if (blind || st.fired_wm < st.max_ts)
            snprintf(verdict, sizeof verdict,
                     "Fired: the window %s of key \"%s\" fired (early, by "
                     "its trigger) while the watermark of subtask %d was at "
                     "%s.",
                     span, key, st.subtask,
                     tdm__fmt_time(st.fired_wm, a, sizeof a));
        else
            snprintf(verdict, sizeof verdict,
                     "Fired: the window %s of key \"%s\" fired when the "
                     "watermark of subtask %d reached %s.",
                     span, key, st.subtask,
                     tdm__fmt_time(st.fired_wm, a, sizeof a));
        if (st.has_state && st.watermark < st.cleanup)
            tdm__json_add_str(
                ev, &oom,
                "its state is kept until the watermark passes %s: a "
                "late record until then refires it",
                tdm__fmt_time(st.cleanup, a, sizeof a));
    } else if (st.has_state && blind) {
        static const char *const what[] = { "", "", "processing_time",
                                             "count", "", "never" };
        snprintf(verdict, sizeof verdict,
                 "Not fired: the window %s of key \"%s\" holds records, but "
                 "its %s trigger does not fire on the watermark.",
                 span, key, what[trg]);
        if (trg == TRG_COUNT)
            snprintf(waiting, sizeof waiting,
                     "%" PRId64 " records of key \"%s\" in this window (the "
                     "count trigger)",
                     tdm__node_int(node, "trigger.count"), key);
        else if (trg == TRG_PROC)
            snprintf(waiting, sizeof waiting,
                     "processing time to reach %s (the processing_time "
                     "trigger)",
                     tdm__fmt_time(st.max_ts, a, sizeof a));
        else
            snprintf(waiting, sizeof waiting,
                     "nothing: the never trigger fires no window (only the "
                     "end of input does)");
        waiting_for = waiting;
        tdm__json_add_str(
            ev, &oom,
            "windows.%s.trigger is %s: remove it to fire each window "
            "when the watermark passes its end",
            vertex, what[trg]);
    } else if (st.has_state && st.watermark < st.max_ts) {
        snprintf(verdict, sizeof verdict,
                 "Not fired: waiting for the watermark of subtask %d to "
                 "pass %s; it is at %s",
                 st.subtask, tdm__fmt_time(st.max_ts, a, sizeof a),
                 st.watermark == TDM_TIME_MIN
                     ? "nothing yet (no watermark)"
                     : tdm__fmt_time(st.watermark, b, sizeof b));
        if (have_view)
            holding_clause(&w, &oom, ev, vertex, &st, verdict,
                           sizeof verdict - 1);
        strcat(verdict, ".");
        snprintf(waiting, sizeof waiting,
                 "the watermark of %s subtask %d to pass %s", vertex,
                 st.subtask, tdm__fmt_time(st.max_ts, a, sizeof a));
        waiting_for = waiting;
    } else if (st.has_state) {
        snprintf(verdict, sizeof verdict,
                 "Not fired yet: the watermark of subtask %d (%s) has "
                 "passed the window's end; it fires with the subtask's next "
                 "watermark step.",
                 st.subtask, tdm__fmt_time(st.watermark, a, sizeof a));
        snprintf(waiting, sizeof waiting,
                 "the next watermark step of %s subtask %d", vertex,
                 st.subtask);
        waiting_for = waiting;
    } else if (st.watermark >= st.max_ts) {
        int64_t dropped = 0, side = 0;
        if (have_view) {
            dropped = tdm__view_agg(&w, vertex, TDM_METRIC_LATE_DROPPED,
                                    TDM_METRIC_AGG_SUM, NULL);
            side = tdm__view_agg(&w, vertex, TDM_METRIC_LATE_SIDE,
                                 TDM_METRIC_AGG_SUM, NULL);
        }
        snprintf(verdict, sizeof verdict,
                 "No result: no record with key \"%s\" arrived for the "
                 "window %s before the watermark passed its end (%s late "
                 "record%s %s dropped by %s, %s sent to the late output).",
                 key, span, tdm__fmt_count(dropped, d, sizeof d),
                 dropped == 1 ? "" : "s", dropped == 1 ? "was" : "were",
                 vertex, tdm__fmt_count(side, e, sizeof e));
        if (st.watermark < st.cleanup) {
            snprintf(waiting, sizeof waiting,
                     "a record with key \"%s\" in the window before the "
                     "watermark passes %s (allowed lateness)",
                     key, tdm__fmt_time(st.cleanup, a, sizeof a));
            waiting_for = waiting;
        }
        tdm__json_add_str(ev, &oom,
                          "(or it fired longer ago than the last 8,192 firings "
                          "subtask %d remembers)",
                          st.subtask);
    } else {
        snprintf(verdict, sizeof verdict,
                 "Not fired: no record with key \"%s\" has arrived for the "
                 "window %s yet; the watermark of subtask %d is at %s.",
                 key, span, st.subtask,
                 tdm__fmt_time(st.watermark, a, sizeof a));
        snprintf(waiting, sizeof waiting,
                 "a record with key \"%s\" in the window, then the "
                 "watermark of %s subtask %d to pass %s",
                 key, vertex, st.subtask,
                 tdm__fmt_time(st.max_ts, a, sizeof a));
        waiting_for = waiting;
    }
    if (!st.running)
        tdm__json_add_str(ev, &oom,
                          "the job has finished: this is its final state");
    /* Recent late records that fell into this window. */
    for (size_t i = 0, shown = 0; m && i < tdm_metrics_late_count(m); i++) {
        const tdm_late_sample *ls = tdm_metrics_late_at(m, i);
        if (!ls || tdm__view_strcmp(ls->vertex, vertex) != 0 ||
            ls->ts < start || ls->ts >= end || shown >= 5)
            continue;
        shown++;
        tdm__json_add_str(
            ev, &oom,
            "a late record of this window at %s met watermark %s and "
            "was %s: %s",
            tdm__fmt_time(ls->ts, a, sizeof a),
            tdm__fmt_time(ls->watermark, c, sizeof c),
            ls->dropped ? "dropped" : "sent to the late output",
            ls->row ? ls->row : "");
    }
    tdm__json_set(res, "vertex", json_string(vertex), &oom);
    tdm__json_set(res, "key", json_string(key), &oom);
    tdm__json_set(res, "start", json_integer(start), &oom);
    tdm__json_set(res, "end", json_integer(end), &oom);
    tdm__json_set(res, "fired", json_boolean(st.fired), &oom);
    tdm__json_set(res, "verdict", json_string(verdict), &oom);
    tdm__json_set(res, "waiting_for",
                  waiting_for ? json_string(waiting_for) : json_null(), &oom);
    tdm__json_set(res, "evidence", ev, &oom);
    ev = NULL;
    tdm__json_set(res, "status", status_json(&st, &oom), &oom);
    if (oom)
        goto nomem;
    if (have_view)
        tdm__view_free(&w);
    tdm_metrics_free(m);
    *http_status = 200;
    return res;
nomem:
    status = 500;
    tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
fail:
    json_decref(res);
    json_decref(ev);
    if (have_view)
        tdm__view_free(&w);
    tdm_metrics_free(m);
    *http_status = status;
    return NULL;
}
