/* SPDX-License-Identifier: MIT */
/*
** drive.c - builds the operator a vector describes (public API only), feeds
** it the input items in order and records what it emits.
**
** Unless the strategy is "explicit", each channel (per side for joins) gets
** a tdm_wmgen whose events go into the operator's channel.  Every emitted
** event becomes a canonical item tagged with the input index ("after").
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* Where one generator's events go. */
struct gen_target {
    struct drive *d;
    int side;
    int ch;
};

/* Everything one run needs. */
struct drive {
    const struct conf_vector *v;
    tdm_clock *clk;
    tdm_valve *valve;
    tdm_winop *winop;
    tdm_joinop *joinop;
    tdm_reader *reader;
    tdm_align_coord *coord;
    tdm_wm_strategy *strategy;
    tdm_wmgen **gens; /* n_gens, side-major; NULL: explicit */
    struct gen_target *targets;
    int n_sides;
    int n_gens;
    tdm_record *rec;
    json_t *actual;        /* borrowed: where outputs go */
    int64_t after;         /* index of the input item being processed */
    char cb_err[CONF_MSG]; /* first error raised inside a callback */
    int cb_failed;
};

/* Writes a formatted reason into why and returns -1. */
static int set_why(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_why(char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* Remembers the first error seen inside a callback. */
static void cb_fail(struct drive *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void cb_fail(struct drive *d, const char *fmt, ...)
{
    va_list ap;

    if (d->cb_failed)
        return;
    d->cb_failed = 1;
    va_start(ap, fmt);
    vsnprintf(d->cb_err, sizeof(d->cb_err), fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------------- */
/* Events -> canonical items                                               */
/* ---------------------------------------------------------------------- */

/* The canonical {key, ts, value} of an event's record @p which. */
static json_t *event_record(const tdm_event *ev, int which)
{
    const tdm_record *r = tdm_event_record(ev, which);
    const char *key;
    size_t len = 0;

    if (!r)
        return json_string("<no record>");
    key = tdm_record_key(r, &len);
    return conf_record_json(key, len, tdm_record_ts(r), tdm_record_value(r));
}

/* Fills @p o (which holds "after") from a RESULT event. */
static int result_item(const struct drive *d, const tdm_event *ev, json_t *o)
{
    tdm_time_ms start = 0, end = 0;
    const char *key;
    size_t len = 0, i, n = 0;
    json_t *window, *value;

    key = tdm_event_key(ev, &len);
    if (tdm_event_window(ev, &start, &end))
        window = json_pack("[II]", (json_int_t)start, (json_int_t)end);
    else
        window = json_null();
    if (d->v->agg == TDM_AGG_COLLECT) {
        const double *vals = tdm_event_values(ev, &n);

        value = json_array();
        for (i = 0; value && i < n; i++) {
            if (json_array_append_new(value, conf_number(vals[i])) != 0) {
                json_decref(value);
                value = NULL;
            }
        }
    } else {
        value = conf_number(tdm_event_value(ev));
    }
    if (json_object_set_new(o, "key",
                            json_stringn(key ? key : "", key ? len : 0)) != 0 ||
        json_object_set_new(o, "window", window) != 0 ||
        json_object_set_new(o, "value", value) != 0 ||
        json_object_set_new(o, "ts", json_integer(tdm_event_time(ev))) != 0)
        return -1;
    return 0;
}

/* Fills @p o from any event. */
static int event_item(const struct drive *d, const tdm_event *ev, json_t *o)
{
    tdm_event_type type = tdm_event_get_type(ev);
    json_t *to;
    const int *targets;
    size_t i, n = 0;
    int side;

    switch (type) {
    case TDM_EVENT_WATERMARK:
        return json_object_set_new(o, "watermark",
                                   json_integer(tdm_event_time(ev)));
    case TDM_EVENT_STATUS:
        return json_object_set_new(
            o, "status",
            json_string(tdm_event_is_idle(ev) ? "idle" : "active"));
    case TDM_EVENT_RESULT:
        return result_item(d, ev, o);
    case TDM_EVENT_LATE:
        if (json_object_set_new(o, "late", event_record(ev, 0)) != 0)
            return -1;
        side = tdm_event_side(ev);
        if (side == TDM_SIDE_LEFT || side == TDM_SIDE_RIGHT)
            return json_object_set_new(
                o, "side",
                json_string(side == TDM_SIDE_LEFT ? "left" : "right"));
        return 0;
    case TDM_EVENT_JOIN:
        if (json_object_set_new(o, "left", event_record(ev, 0)) != 0 ||
            json_object_set_new(o, "right", event_record(ev, 1)) != 0)
            return -1;
        return json_object_set_new(o, "ts", json_integer(tdm_event_time(ev)));
    case TDM_EVENT_REPORTED:
        return json_object_set_new(o, "reported",
                                   json_integer(tdm_event_time(ev)));
    case TDM_EVENT_DATA_WATERMARK:
        return json_object_set_new(o, "data_watermark",
                                   json_integer(tdm_event_time(ev)));
    case TDM_EVENT_READING_PAUSED:
    case TDM_EVENT_READING_RESUMED:
        return json_object_set_new(o, "reading",
                                   json_string(type == TDM_EVENT_READING_PAUSED
                                                   ? "paused"
                                                   : "resumed"));
    case TDM_EVENT_SPLIT_PAUSED:
        return json_object_set_new(o, "split_paused",
                                   json_integer(tdm_event_index(ev)));
    case TDM_EVENT_SPLIT_RESUMED:
        return json_object_set_new(o, "split_resumed",
                                   json_integer(tdm_event_index(ev)));
    case TDM_EVENT_ANNOUNCE:
        if (json_object_set_new(o, "announce",
                                json_integer(tdm_event_time(ev))) != 0)
            return -1;
        to = json_array();
        if (!to || json_object_set_new(o, "to", to) != 0)
            return -1;
        targets = tdm_event_targets(ev, &n);
        for (i = 0; targets && i < n; i++) {
            if (json_array_append_new(to, json_integer(targets[i])) != 0)
                return -1;
        }
        return 0;
    default:
        /* Never equal to an expected item: shows up as "unexpected". */
        return json_object_set_new(o, "unknown_event_type",
                                   json_integer((json_int_t)type));
    }
}

/* The operator's output callback: records the event. */
static void on_output(void *opaque, const tdm_event *ev)
{
    struct drive *d = opaque;
    json_t *o = json_object();

    if (!o || json_object_set_new(o, "after", json_integer(d->after)) != 0 ||
        event_item(d, ev, o) != 0 || json_array_append_new(d->actual, o) != 0) {
        cb_fail(d, "out of memory while recording an output");
        return;
    }
}

/* A generator's callback: its watermark or status goes into the channel
** of the operator behind it. */
static void on_generator(void *opaque, const tdm_event *ev)
{
    const struct gen_target *t = opaque;
    struct drive *d = t->d;
    tdm_event_type type = tdm_event_get_type(ev);
    tdm_err err;
    const char *call;

    if (type == TDM_EVENT_WATERMARK) {
        tdm_time_ms wm = tdm_event_time(ev);

        if (d->valve) {
            call = "tdm_valve_watermark";
            err = tdm_valve_watermark(d->valve, t->ch, wm);
        } else if (d->winop) {
            call = "tdm_winop_watermark";
            err = tdm_winop_watermark(d->winop, t->ch, wm);
        } else {
            call = "tdm_joinop_watermark";
            err = tdm_joinop_watermark(d->joinop, t->side, t->ch, wm);
        }
    } else if (type == TDM_EVENT_STATUS) {
        int idle = tdm_event_is_idle(ev);

        if (d->valve) {
            call = "tdm_valve_status";
            err = tdm_valve_status(d->valve, t->ch, idle);
        } else if (d->winop) {
            call = "tdm_winop_status";
            err = tdm_winop_status(d->winop, t->ch, idle);
        } else {
            call = "tdm_joinop_status";
            err = tdm_joinop_status(d->joinop, t->side, t->ch, idle);
        }
    } else {
        cb_fail(d, "a watermark generator emitted event type %d", (int)type);
        return;
    }
    if (err != TDM_OK)
        cb_fail(d, "%s(channel %d) failed: %s (%s)", call, t->ch,
                tdm_err_name(err), tdm_strerror(err));
}

/* ---------------------------------------------------------------------- */
/* Building                                                                */
/* ---------------------------------------------------------------------- */

/* Punctuation: a record is a marker when its JSON item has the marker
** field set to true.  The record's payload holds a pointer to the item. */
static int is_marker(void *ud, const tdm_record *rec)
{
    const char *field = ud;
    const void *p;
    json_t *item;
    size_t len = 0;

    p = tdm_record_payload(rec, &len);
    if (!p || len != sizeof(item))
        return 0;
    memcpy(&item, p, sizeof(item));
    return json_is_true(json_object_get(item, field));
}

/* The tdm_wm_strategy of pipeline.watermark ("explicit" gives NONE, used
** only by source readers, which always need one). */
static int build_strategy(struct drive *d, char *why, size_t why_size)
{
    const struct conf_wm *wm = &d->v->wm;
    char eb[CONF_MSG] = "";
    tdm_wm_kind kind;
    tdm_err err;

    switch (wm->strategy) {
    case STRAT_BOUNDED:
        kind = TDM_WM_BOUNDED;
        break;
    case STRAT_MONOTONOUS:
        kind = TDM_WM_MONOTONOUS;
        break;
    case STRAT_PUNCTUATED:
        kind = TDM_WM_PUNCTUATED;
        break;
    default:
        kind = TDM_WM_NONE;
        break;
    }
    err = tdm_wm_strategy_new(kind, wm->bound_ms, &d->strategy, eb, sizeof(eb));
    if (err == TDM_OK && wm->has_interval)
        err = tdm_wm_strategy_set_interval(d->strategy, wm->interval_ms, eb,
                                           sizeof(eb));
    if (err == TDM_OK && wm->on_event)
        err = tdm_wm_strategy_set_emit_on_event(d->strategy, 1);
    if (err == TDM_OK && wm->has_idle)
        err = tdm_wm_strategy_set_idle_timeout(d->strategy, wm->idle_timeout_ms,
                                               eb, sizeof(eb));
    if (err == TDM_OK && wm->has_fallback)
        err = tdm_wm_strategy_set_fallback(d->strategy, wm->fb_lag_ms,
                                           wm->fb_interval_ms, eb, sizeof(eb));
    if (err == TDM_OK && wm->strategy == STRAT_PUNCTUATED)
        err = tdm_wm_strategy_set_marker(d->strategy, is_marker,
                                         (void *)wm->marker_field);
    if (err != TDM_OK)
        return set_why(why, why_size,
                       "building the watermark strategy "
                       "failed: %s: %s",
                       tdm_err_name(err), eb[0] ? eb : tdm_strerror(err));
    return 0;
}

/* One generator per channel (and side), unless the strategy is explicit. */
static int build_generators(struct drive *d, char *why, size_t why_size)
{
    int i;

    if (d->v->wm.strategy == STRAT_EXPLICIT)
        return 0;
    d->n_gens = d->n_sides * d->v->channels;
    d->gens = calloc((size_t)d->n_gens, sizeof(*d->gens));
    d->targets = calloc((size_t)d->n_gens, sizeof(*d->targets));
    if (!d->gens || !d->targets)
        return set_why(why, why_size, "out of memory");
    for (i = 0; i < d->n_gens; i++) {
        tdm_err err;

        d->targets[i].d = d;
        d->targets[i].side = i / d->v->channels;
        d->targets[i].ch = i % d->v->channels;
        err = tdm_wmgen_new(d->strategy, d->clk, on_generator, &d->targets[i],
                            &d->gens[i]);
        if (err != TDM_OK)
            return set_why(why, why_size, "tdm_wmgen_new failed: %s (%s)",
                           tdm_err_name(err), tdm_strerror(err));
    }
    return 0;
}

/* A tdm_assigner from a window object. */
static int build_assigner(const struct conf_window *w, tdm_assigner **out,
                          char *why, size_t why_size)
{
    char eb[CONF_MSG] = "";
    tdm_err err;

    switch (w->type) {
    case WIN_TUMBLING:
        err = tdm_assigner_new_tumbling(w->size_ms, w->offset_ms, out, eb,
                                        sizeof(eb));
        break;
    case WIN_SLIDING:
        err = tdm_assigner_new_sliding(w->size_ms, w->slide_ms, w->offset_ms,
                                       out, eb, sizeof(eb));
        break;
    case WIN_CUMULATE:
        err = tdm_assigner_new_cumulate(w->size_ms, w->step_ms, w->offset_ms,
                                        out, eb, sizeof(eb));
        break;
    case WIN_SESSION:
        err = tdm_assigner_new_session(w->gap_ms, out, eb, sizeof(eb));
        break;
    default:
        err = tdm_assigner_new_global(out);
        break;
    }
    if (err == TDM_OK && w->processing) {
        err = tdm_assigner_set_processing_time(*out);
        if (err != TDM_OK)
            snprintf(eb, sizeof(eb), "time: processing rejected");
    }
    if (err != TDM_OK) {
        tdm_assigner_destroy(*out);
        *out = NULL;
        return set_why(why, why_size,
                       "building the window assigner failed: "
                       "%s: %s",
                       tdm_err_name(err), eb[0] ? eb : tdm_strerror(err));
    }
    return 0;
}

/* A tdm_trigger from a trigger spec (recursively for purging). */
static int build_trigger(const struct conf_trigger *t, tdm_trigger **out,
                         char *why, size_t why_size)
{
    char eb[CONF_MSG] = "";
    tdm_trigger *inner = NULL;
    tdm_err err;

    *out = NULL;
    switch (t->type) {
    case TRIG_EVENT_TIME:
        err = tdm_trigger_new_event_time(out);
        break;
    case TRIG_PROCESSING_TIME:
        err = tdm_trigger_new_processing_time(out);
        break;
    case TRIG_COUNT:
        err = tdm_trigger_new_count(t->count, out, eb, sizeof(eb));
        break;
    case TRIG_CONTINUOUS:
        err = tdm_trigger_new_continuous_event_time(t->interval_ms, out, eb,
                                                    sizeof(eb));
        break;
    default:
        if (build_trigger(t->inner, &inner, why, why_size) != 0)
            return -1;
        /* Takes ownership of inner, even on failure. */
        err = tdm_trigger_new_purging(inner, out);
        break;
    }
    if (err != TDM_OK) {
        tdm_trigger_destroy(*out);
        *out = NULL;
        return set_why(why, why_size, "building the trigger failed: %s: %s",
                       tdm_err_name(err), eb[0] ? eb : tdm_strerror(err));
    }
    return 0;
}

/* The window operator of a window pipeline. */
static int build_winop(struct drive *d, char *why, size_t why_size)
{
    const struct conf_vector *v = d->v;
    tdm_assigner *asg = NULL;
    tdm_trigger *trg = NULL;
    tdm_aggregate *agg = NULL;
    char eb[CONF_MSG] = "";
    tdm_err err;

    if (build_assigner(&v->window, &asg, why, why_size) != 0)
        goto fail;
    /*
    ** FORMAT's default trigger is event_time.  For processing-time windows
    ** that default could never fire on time, so the assigner's own default
    ** (processing time, as in Flink) is used there instead.
    */
    if (v->trigger) {
        if (build_trigger(v->trigger, &trg, why, why_size) != 0)
            goto fail;
    } else {
        err = v->window.processing ? tdm_trigger_new_processing_time(&trg)
                                   : tdm_trigger_new_event_time(&trg);
        if (err != TDM_OK) {
            set_why(why, why_size, "building the default trigger failed: %s",
                    tdm_err_name(err));
            goto fail;
        }
    }
    err = tdm_aggregate_new(v->agg, &agg);
    if (err != TDM_OK) {
        set_why(why, why_size, "tdm_aggregate_new failed: %s (%s)",
                tdm_err_name(err), tdm_strerror(err));
        goto fail;
    }
    /* Takes ownership of asg, trg and agg, even on failure. */
    err = tdm_winop_new(asg, trg, agg, v->channels, d->clk, on_output, d,
                        &d->winop, eb, sizeof(eb));
    asg = NULL;
    trg = NULL;
    agg = NULL;
    if (err != TDM_OK) {
        set_why(why, why_size, "tdm_winop_new failed: %s: %s",
                tdm_err_name(err), eb[0] ? eb : tdm_strerror(err));
        goto fail;
    }
    err = tdm_winop_set_allowed_lateness(d->winop, v->allowed_lateness_ms, eb,
                                         sizeof(eb));
    if (err != TDM_OK) {
        set_why(why, why_size, "tdm_winop_set_allowed_lateness failed: %s: %s",
                tdm_err_name(err), eb[0] ? eb : tdm_strerror(err));
        goto fail;
    }
    err = tdm_winop_set_late_output(d->winop, v->late_output);
    if (err != TDM_OK) {
        set_why(why, why_size, "tdm_winop_set_late_output failed: %s",
                tdm_err_name(err));
        goto fail;
    }
    return 0;
fail:
    tdm_assigner_destroy(asg);
    tdm_trigger_destroy(trg);
    tdm_aggregate_destroy(agg);
    return -1;
}

/* The join operator of a join pipeline. */
static int build_joinop(struct drive *d, char *why, size_t why_size)
{
    const struct conf_join *j = &d->v->join;
    tdm_assigner *asg = NULL;
    char eb[CONF_MSG] = "";
    tdm_err err;

    if (j->is_window) {
        if (build_assigner(&j->window, &asg, why, why_size) != 0)
            return -1;
        /* Takes ownership of asg. */
        err = tdm_joinop_new_window(asg, d->v->channels, d->clk, on_output, d,
                                    &d->joinop, eb, sizeof(eb));
    } else {
        err = tdm_joinop_new_interval(
            j->lower_ms, j->upper_ms, j->lower_inclusive, j->upper_inclusive,
            d->v->channels, d->clk, on_output, d, &d->joinop, eb, sizeof(eb));
    }
    if (err != TDM_OK)
        return set_why(why, why_size, "creating the join failed: %s: %s",
                       tdm_err_name(err), eb[0] ? eb : tdm_strerror(err));
    err = tdm_joinop_set_late_output(d->joinop, d->v->late_output);
    if (err != TDM_OK)
        return set_why(why, why_size, "tdm_joinop_set_late_output failed: %s",
                       tdm_err_name(err));
    return 0;
}

/* Builds the whole pipeline. */
static int build(struct drive *d, char *why, size_t why_size)
{
    const struct conf_vector *v = d->v;
    char eb[CONF_MSG] = "";
    tdm_err err;

    d->n_sides = v->pipe == PIPE_JOIN ? 2 : 1;
    err = tdm_clock_new_manual(0, &d->clk);
    if (err == TDM_OK)
        err = tdm_record_new(&d->rec);
    if (err != TDM_OK)
        return set_why(why, why_size, "setup failed: %s", tdm_err_name(err));

    switch (v->pipe) {
    case PIPE_WATERMARK:
        err = tdm_valve_new(v->channels, on_output, d, &d->valve);
        if (err != TDM_OK)
            return set_why(why, why_size, "tdm_valve_new failed: %s",
                           tdm_err_name(err));
        break;
    case PIPE_WINDOW:
        if (build_winop(d, why, why_size) != 0)
            return -1;
        break;
    case PIPE_JOIN:
        if (build_joinop(d, why, why_size) != 0)
            return -1;
        break;
    case PIPE_SOURCE:
        if (build_strategy(d, why, why_size) != 0)
            return -1;
        err = tdm_reader_new(v->channels, d->strategy, d->clk, on_output, d,
                             &d->reader);
        if (err != TDM_OK)
            return set_why(why, why_size, "tdm_reader_new failed: %s",
                           tdm_err_name(err));
        if (v->has_alignment) {
            err =
                tdm_reader_set_alignment(d->reader, v->align_drift_ms,
                                         v->align_interval_ms, eb, sizeof(eb));
            if (err != TDM_OK)
                return set_why(
                    why, why_size, "tdm_reader_set_alignment failed: %s: %s",
                    tdm_err_name(err), eb[0] ? eb : tdm_strerror(err));
        }
        return 0;
    case PIPE_COORD:
        err = tdm_align_coord_new(v->subtasks, v->coord_drift_ms,
                                  v->coord_interval_ms, d->clk, on_output, d,
                                  &d->coord, eb, sizeof(eb));
        if (err != TDM_OK)
            return set_why(why, why_size, "tdm_align_coord_new failed: %s: %s",
                           tdm_err_name(err), eb[0] ? eb : tdm_strerror(err));
        return 0;
    }
    if (v->wm.strategy != STRAT_EXPLICIT &&
        build_strategy(d, why, why_size) != 0)
        return -1;
    return build_generators(d, why, why_size);
}

/* Destroys everything; accepts a half-built drive. */
static void teardown(struct drive *d)
{
    int i;

    for (i = 0; d->gens && i < d->n_gens; i++)
        tdm_wmgen_destroy(d->gens[i]);
    free(d->gens);
    free(d->targets);
    tdm_valve_destroy(d->valve);
    tdm_winop_destroy(d->winop);
    tdm_joinop_destroy(d->joinop);
    tdm_reader_destroy(d->reader);
    tdm_align_coord_destroy(d->coord);
    tdm_wm_strategy_destroy(d->strategy);
    tdm_record_destroy(d->rec);
    tdm_clock_destroy(d->clk);
}

/* ---------------------------------------------------------------------- */
/* Feeding                                                                 */
/* ---------------------------------------------------------------------- */

/* Describes a failed API call of the current item. */
static int api_fail(const struct drive *d, const char *call, tdm_err err,
                    const char *detail, char *why, size_t why_size)
{
    return set_why(why, why_size, "input %lld: %s failed: %s (%s)",
                   (long long)d->after, call, tdm_err_name(err),
                   detail ? detail : tdm_strerror(err));
}

/* A record item. */
static int feed_record(struct drive *d, const struct conf_input *in, char *why,
                       size_t why_size)
{
    tdm_wmgen *gen = NULL;
    tdm_err err = TDM_OK;
    const char *call = "";

    tdm_record_set(d->rec, in->key, in->key_len, in->ts, in->value);
    /* Punctuation markers read the item through the payload. */
    tdm_record_set_payload(d->rec, &in->obj, sizeof(in->obj));
    if (d->reader) {
        err = tdm_reader_record(d->reader, in->channel, d->rec);
        return err == TDM_OK
                   ? 0
                   : api_fail(d, "tdm_reader_record", err, NULL, why, why_size);
    }
    if (d->gens) {
        gen = d->gens[in->side * d->v->channels + in->channel];
        tdm_wmgen_assign(gen, d->rec);
    }
    /* The record goes downstream first, then the generator sees it (T4). */
    if (d->winop) {
        call = "tdm_winop_push";
        err = tdm_winop_push(d->winop, in->channel, d->rec);
        if (err != TDM_OK)
            return api_fail(d, call, err, tdm_winop_errmsg(d->winop), why,
                            why_size);
    } else if (d->joinop) {
        call = "tdm_joinop_push";
        err = tdm_joinop_push(d->joinop, in->side, in->channel, d->rec);
        if (err != TDM_OK)
            return api_fail(d, call, err, tdm_joinop_errmsg(d->joinop), why,
                            why_size);
    }
    if (gen) {
        err = tdm_wmgen_on_event(gen, d->rec);
        /* A record without a timestamp is ignored by the generator; if the
        ** operator needed one, its push failed above. */
        if (err != TDM_OK && err != TDM_ERR_NO_TIMESTAMP)
            return api_fail(d, "tdm_wmgen_on_event", err, NULL, why, why_size);
    }
    return 0;
}

/* A watermark, idle or active item. */
static int feed_progress(struct drive *d, const struct conf_input *in,
                         char *why, size_t why_size)
{
    int is_wm = in->kind == IN_WATERMARK;
    int idle = in->kind == IN_IDLE;
    const char *call;
    tdm_err err;

    if (d->reader) {
        call = is_wm ? "tdm_reader_split_watermark" : "tdm_reader_split_status";
        err = is_wm ? tdm_reader_split_watermark(d->reader, in->channel, in->ts)
                    : tdm_reader_split_status(d->reader, in->channel, idle);
    } else if (d->valve) {
        call = is_wm ? "tdm_valve_watermark" : "tdm_valve_status";
        err = is_wm ? tdm_valve_watermark(d->valve, in->channel, in->ts)
                    : tdm_valve_status(d->valve, in->channel, idle);
    } else if (d->winop) {
        call = is_wm ? "tdm_winop_watermark" : "tdm_winop_status";
        err = is_wm ? tdm_winop_watermark(d->winop, in->channel, in->ts)
                    : tdm_winop_status(d->winop, in->channel, idle);
    } else {
        call = is_wm ? "tdm_joinop_watermark" : "tdm_joinop_status";
        err = is_wm ? tdm_joinop_watermark(d->joinop, in->side, in->channel,
                                           in->ts)
                    : tdm_joinop_status(d->joinop, in->side, in->channel, idle);
    }
    return err == TDM_OK ? 0 : api_fail(d, call, err, NULL, why, why_size);
}

/* A proctime item: clock, generators in channel order, then the
** operator's own processing-time work. */
static int feed_proctime(struct drive *d, const struct conf_input *in,
                         char *why, size_t why_size)
{
    tdm_err err;
    int i;

    err = tdm_clock_set(d->clk, in->ts);
    if (err != TDM_OK)
        return api_fail(d, "tdm_clock_set", err,
                        err == TDM_ERR_RANGE ? "processing time went "
                                               "backwards"
                                             : NULL,
                        why, why_size);
    for (i = 0; i < d->n_gens; i++) {
        err = tdm_wmgen_advance(d->gens[i]);
        if (err != TDM_OK)
            return api_fail(d, "tdm_wmgen_advance", err, NULL, why, why_size);
        if (d->cb_failed)
            return 0;
    }
    if (d->winop && (err = tdm_winop_advance(d->winop)) != TDM_OK)
        return api_fail(d, "tdm_winop_advance", err, tdm_winop_errmsg(d->winop),
                        why, why_size);
    if (d->reader && (err = tdm_reader_advance(d->reader)) != TDM_OK)
        return api_fail(d, "tdm_reader_advance", err, NULL, why, why_size);
    if (d->coord && (err = tdm_align_coord_advance(d->coord)) != TDM_OK)
        return api_fail(d, "tdm_align_coord_advance", err, NULL, why, why_size);
    return 0;
}

/* An end item: atomic end of input on every channel.  Generators are not
** asked (FORMAT "end is atomic"); the operator ends all channels. */
static int feed_end(struct drive *d, char *why, size_t why_size)
{
    tdm_err err;

    if (d->valve && (err = tdm_valve_end(d->valve)) != TDM_OK)
        return api_fail(d, "tdm_valve_end", err, NULL, why, why_size);
    if (d->winop && (err = tdm_winop_end(d->winop)) != TDM_OK)
        return api_fail(d, "tdm_winop_end", err, tdm_winop_errmsg(d->winop),
                        why, why_size);
    if (d->joinop && (err = tdm_joinop_end(d->joinop)) != TDM_OK)
        return api_fail(d, "tdm_joinop_end", err, tdm_joinop_errmsg(d->joinop),
                        why, why_size);
    if (d->reader && (err = tdm_reader_end(d->reader)) != TDM_OK)
        return api_fail(d, "tdm_reader_end", err, NULL, why, why_size);
    return 0;
}

/* One input item. */
static int feed(struct drive *d, const struct conf_input *in, char *why,
                size_t why_size)
{
    tdm_err err;

    switch (in->kind) {
    case IN_RECORD:
        return feed_record(d, in, why, why_size);
    case IN_WATERMARK:
    case IN_IDLE:
    case IN_ACTIVE:
        return feed_progress(d, in, why, why_size);
    case IN_PROCTIME:
        return feed_proctime(d, in, why, why_size);
    case IN_END:
        return feed_end(d, why, why_size);
    case IN_SPLIT_FINISHED:
        err = tdm_reader_split_finished(d->reader, in->channel);
        return err == TDM_OK ? 0
                             : api_fail(d, "tdm_reader_split_finished", err,
                                        NULL, why, why_size);
    case IN_ANNOUNCE:
        err = tdm_reader_announce(d->reader, in->ts);
        return err == TDM_OK ? 0
                             : api_fail(d, "tdm_reader_announce", err, NULL,
                                        why, why_size);
    case IN_REPORT:
        err = tdm_align_coord_report(d->coord, in->subtask, in->ts);
        return err == TDM_OK ? 0
                             : api_fail(d, "tdm_align_coord_report", err, NULL,
                                        why, why_size);
    case IN_SET:
        if (in->setting == 2) {
            err = tdm_winop_set_allowed_lateness(d->winop, in->ts, NULL, 0);
            return err == TDM_OK ? 0
                                 : api_fail(d, "tdm_winop_set_allowed_lateness",
                                            err, NULL, why, why_size);
        }
        err = in->setting == 0 ? tdm_reader_set_bound(d->reader, in->ts)
                               : tdm_reader_set_idle_timeout(d->reader, in->ts);
        return err == TDM_OK
                   ? 0
                   : api_fail(d,
                              in->setting == 0 ? "tdm_reader_set_bound"
                                               : "tdm_reader_set_idle_timeout",
                              err, NULL, why, why_size);
    }
    return set_why(why, why_size, "input %lld: unsupported input kind",
                   (long long)d->after);
}

/* See conformance.h.  Outputs emitted while building would carry after -1
** and then show up as unexpected. */
int conf_drive(const struct conf_vector *v, json_t *actual,
               int64_t *late_dropped, char *why, size_t why_size)
{
    struct drive d;
    size_t i;
    int rc = 0;

    memset(&d, 0, sizeof(d));
    d.v = v;
    d.actual = actual;
    d.after = -1; /* anything emitted while building: before input 0 */
    *late_dropped = 0;
    if (build(&d, why, why_size) != 0) {
        rc = -1;
        goto done;
    }
    for (i = 0; i < v->n_input && rc == 0; i++) {
        d.after = (int64_t)i;
        rc = feed(&d, &v->input[i], why, why_size);
        if (rc == 0 && d.cb_failed)
            rc = set_why(why, why_size, "input %zu: %s", i, d.cb_err);
    }
    if (rc == 0 && d.cb_failed)
        rc = set_why(why, why_size, "%s", d.cb_err);
    if (d.winop)
        *late_dropped = tdm_winop_late_dropped(d.winop);
    else if (d.joinop)
        *late_dropped = tdm_joinop_late_dropped(d.joinop);
done:
    teardown(&d);
    return rc;
}
