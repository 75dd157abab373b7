/* SPDX-License-Identifier: MIT */
/*
** load.c - decodes and validates one conformance vector (FORMAT.md).
**
** Every field of the format is part of the contract, so this file knows the
** complete list of fields and values and rejects anything else with
** "unsupported ...": a vector the runner does not understand must fail, not
** pass silently.  Type errors ("invalid ...") fail the same way.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* Nesting limit for purging triggers (purging of purging of ...). */
#define MAX_TRIGGER_DEPTH 8
/* Upper bound on channels, splits and subtasks: keeps allocation sane. */
#define MAX_CHANNELS 4096

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

/* Returns 1 if @p name is in the NULL-terminated list @p names. */
static int in_list(const char *name, const char *const *names)
{
    for (; *names; names++) {
        if (strcmp(name, *names) == 0)
            return 1;
    }
    return 0;
}

/* Fails on the first key of @p obj that is not in @p allowed. */
static int check_keys(const json_t *obj, const char *what,
                      const char *const *allowed, char *why, size_t why_size)
{
    const char *k = NULL;
    json_t *val;

    json_object_foreach((json_t *)obj, k, val)
    {
        (void)val;
        if (!in_list(k, allowed))
            return set_why(why, why_size, "unsupported field \"%s\" in %s", k,
                           what);
    }
    return 0;
}

/*
** Reads a JSON number that must be an exact int64: an integer, or a real
** with an integral value inside the int64 range (FORMAT: numbers compare
** numerically).  Returns 0 or -1.
*/
static int json_to_int64(const json_t *j, int64_t *out)
{
    double d;

    if (json_is_integer(j)) {
        *out = (int64_t)json_integer_value(j);
        return 0;
    }
    if (!json_is_real(j))
        return -1;
    d = json_real_value(j);
    /* 2^63 is exactly representable; the range is [-2^63, 2^63). */
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return -1;
    if ((double)(int64_t)d != d)
        return -1;
    *out = (int64_t)d;
    return 0;
}

/* Reads integer field @p field of @p obj into *out.  A missing field fails
** when @p required, else *out = dflt.  The value must lie in [lo, hi]. */
static int get_int(const json_t *obj, const char *field, const char *what,
                   int required, int64_t dflt, int64_t lo, int64_t hi,
                   int64_t *out, char *why, size_t why_size)
{
    const json_t *j = json_object_get(obj, field);

    if (!j) {
        if (required)
            return set_why(why, why_size, "invalid %s: missing \"%s\"", what,
                           field);
        *out = dflt;
        return 0;
    }
    if (json_to_int64(j, out) != 0)
        return set_why(why, why_size, "invalid %s: \"%s\" must be an integer",
                       what, field);
    if (*out < lo || *out > hi)
        return set_why(why, why_size,
                       "invalid %s: \"%s\" must be in [%lld, %lld] (got %lld)",
                       what, field, (long long)lo, (long long)hi,
                       (long long)*out);
    return 0;
}

/* Reads a time field (any int64). */
static int get_time(const json_t *obj, const char *field, const char *what,
                    int required, tdm_time_ms dflt, tdm_time_ms *out, char *why,
                    size_t why_size)
{
    int64_t v;

    if (get_int(obj, field, what, required, dflt, INT64_MIN, INT64_MAX, &v, why,
                why_size) != 0)
        return -1;
    *out = v;
    return 0;
}

/* Reads a boolean field; missing gives @p dflt. */
static int get_bool(const json_t *obj, const char *field, const char *what,
                    int dflt, int *out, char *why, size_t why_size)
{
    const json_t *j = json_object_get(obj, field);

    if (!j) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(j))
        return set_why(why, why_size,
                       "invalid %s: \"%s\" must be true or false", what, field);
    *out = json_is_true(j);
    return 0;
}

/* Reads a required string field. */
static int get_string(const json_t *obj, const char *field, const char *what,
                      const char **out, char *why, size_t why_size)
{
    const json_t *j = json_object_get(obj, field);

    if (!j)
        return set_why(why, why_size, "invalid %s: missing \"%s\"", what,
                       field);
    if (!json_is_string(j))
        return set_why(why, why_size, "invalid %s: \"%s\" must be a string",
                       what, field);
    *out = json_string_value(j);
    return 0;
}

/* Fails unless @p j is an object. */
static int need_object(const json_t *j, const char *what, char *why,
                       size_t why_size)
{
    if (!json_is_object(j))
        return set_why(why, why_size, "invalid %s: must be an object", what);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Pipeline parts                                                          */
/* ---------------------------------------------------------------------- */

/* pipeline.watermark.fallback (runner extension, README.md): the
** reader's fallback watermark, {"lag_ms": >= 0, "interval_ms": > 0}. */
static int load_fallback(const json_t *f, struct conf_wm *wm, char *why,
                         size_t why_size)
{
    static const char *const keys[] = {"lag_ms", "interval_ms", NULL};
    const char *what = "pipeline.watermark.fallback";
    if (!f)
        return 0;
    if (need_object(f, what, why, why_size) != 0 ||
        check_keys(f, what, keys, why, why_size) != 0 ||
        get_time(f, "lag_ms", what, 1, 0, &wm->fb_lag_ms, why, why_size) != 0 ||
        get_time(f, "interval_ms", what, 1, 0, &wm->fb_interval_ms, why,
                 why_size) != 0)
        return -1;
    if (wm->fb_interval_ms <= 0)
        return set_why(why, why_size, "invalid %s: \"interval_ms\" must be > 0",
                       what);
    wm->has_fallback = 1;
    return 0;
}

/* pipeline.watermark: the per-channel strategy. */
static int load_watermark(const json_t *j, struct conf_wm *wm, char *why,
                          size_t why_size)
{
    static const char *const explicit_keys[] = {"strategy", NULL};
    static const char *const bounded_keys[] = {
        "strategy",    "max_out_of_orderness_ms", "emit",
        "interval_ms", "idle_timeout_ms",         "fallback",
        NULL};
    static const char *const punct_keys[] = {
        "strategy",    "marker_field",    "max_out_of_orderness_ms",
        "interval_ms", "idle_timeout_ms", "fallback",
        NULL};
    static const char *const none_keys[] = {"strategy", "interval_ms",
                                            "idle_timeout_ms", NULL};
    const char *what = "pipeline.watermark";
    const char *s = NULL;
    const char *const *keys;
    const json_t *emit;
    int64_t v;

    memset(wm, 0, sizeof(*wm));
    if (need_object(j, what, why, why_size) != 0 ||
        get_string(j, "strategy", what, &s, why, why_size) != 0)
        return -1;
    if (strcmp(s, "explicit") == 0) {
        wm->strategy = STRAT_EXPLICIT;
        keys = explicit_keys;
    } else if (strcmp(s, "bounded_out_of_orderness") == 0) {
        wm->strategy = STRAT_BOUNDED;
        keys = bounded_keys;
    } else if (strcmp(s, "monotonous") == 0) {
        wm->strategy = STRAT_MONOTONOUS;
        keys = bounded_keys;
    } else if (strcmp(s, "punctuated") == 0) {
        wm->strategy = STRAT_PUNCTUATED;
        keys = punct_keys;
    } else if (strcmp(s, "none") == 0) {
        wm->strategy = STRAT_NONE;
        keys = none_keys;
    } else {
        return set_why(why, why_size, "unsupported watermark strategy \"%s\"",
                       s);
    }
    if (check_keys(j, what, keys, why, why_size) != 0)
        return -1;

    /* The bound: required for bounded, 0 by definition for monotonous
    ** (accepted only when it says 0), default 0 for punctuated. */
    if (wm->strategy == STRAT_BOUNDED || wm->strategy == STRAT_PUNCTUATED ||
        wm->strategy == STRAT_MONOTONOUS) {
        if (get_int(j, "max_out_of_orderness_ms", what,
                    wm->strategy == STRAT_BOUNDED, 0, INT64_MIN, INT64_MAX, &v,
                    why, why_size) != 0)
            return -1;
        if (wm->strategy == STRAT_MONOTONOUS && v != 0)
            return set_why(why, why_size,
                           "unsupported field \"max_out_of_orderness_ms\" in "
                           "pipeline.watermark (monotonous has bound 0)");
        wm->bound_ms = v;
    }
    emit = json_object_get(j, "emit");
    if (emit) {
        if (!json_is_string(emit))
            return set_why(why, why_size,
                           "invalid %s: \"emit\" must be a string", what);
        if (strcmp(json_string_value(emit), "on_event") == 0)
            wm->on_event = 1;
        else if (strcmp(json_string_value(emit), "periodic") != 0)
            return set_why(why, why_size, "unsupported watermark emit \"%s\"",
                           json_string_value(emit));
    }
    if (json_object_get(j, "interval_ms")) {
        wm->has_interval = 1;
        if (get_time(j, "interval_ms", what, 1, 0, &wm->interval_ms, why,
                     why_size) != 0)
            return -1;
    }
    if (json_object_get(j, "idle_timeout_ms")) {
        wm->has_idle = 1;
        if (get_time(j, "idle_timeout_ms", what, 1, 0, &wm->idle_timeout_ms,
                     why, why_size) != 0)
            return -1;
    }
    if (wm->strategy == STRAT_PUNCTUATED &&
        get_string(j, "marker_field", what, &wm->marker_field, why, why_size) !=
            0)
        return -1;
    return load_fallback(json_object_get(j, "fallback"), wm, why, why_size);
}

/* A window object (pipeline.window or pipeline.join.window). */
static int load_window(const json_t *j, const char *what, struct conf_window *w,
                       char *why, size_t why_size)
{
    static const char *const tumbling_keys[] = {"type", "size_ms", "offset_ms",
                                                "time", NULL};
    static const char *const sliding_keys[] = {
        "type", "size_ms", "slide_ms", "offset_ms", "time", NULL};
    static const char *const cumulate_keys[] = {
        "type", "size_ms", "step_ms", "offset_ms", "time", NULL};
    static const char *const session_keys[] = {"type", "gap_ms", "time", NULL};
    static const char *const global_keys[] = {"type", "time", NULL};
    const char *t = NULL;
    const char *const *keys;
    const json_t *time;

    memset(w, 0, sizeof(*w));
    if (need_object(j, what, why, why_size) != 0 ||
        get_string(j, "type", what, &t, why, why_size) != 0)
        return -1;
    if (strcmp(t, "tumbling") == 0) {
        w->type = WIN_TUMBLING;
        keys = tumbling_keys;
    } else if (strcmp(t, "sliding") == 0) {
        w->type = WIN_SLIDING;
        keys = sliding_keys;
    } else if (strcmp(t, "cumulate") == 0) {
        w->type = WIN_CUMULATE;
        keys = cumulate_keys;
    } else if (strcmp(t, "session") == 0) {
        w->type = WIN_SESSION;
        keys = session_keys;
    } else if (strcmp(t, "global") == 0) {
        w->type = WIN_GLOBAL;
        keys = global_keys;
    } else {
        return set_why(why, why_size, "unsupported window type \"%s\"", t);
    }
    if (check_keys(j, what, keys, why, why_size) != 0)
        return -1;
    if (w->type == WIN_TUMBLING || w->type == WIN_SLIDING ||
        w->type == WIN_CUMULATE) {
        if (get_time(j, "size_ms", what, 1, 0, &w->size_ms, why, why_size) !=
                0 ||
            get_time(j, "offset_ms", what, 0, 0, &w->offset_ms, why,
                     why_size) != 0)
            return -1;
    }
    if (w->type == WIN_SLIDING &&
        get_time(j, "slide_ms", what, 1, 0, &w->slide_ms, why, why_size) != 0)
        return -1;
    if (w->type == WIN_CUMULATE &&
        get_time(j, "step_ms", what, 1, 0, &w->step_ms, why, why_size) != 0)
        return -1;
    if (w->type == WIN_SESSION &&
        get_time(j, "gap_ms", what, 1, 0, &w->gap_ms, why, why_size) != 0)
        return -1;
    time = json_object_get(j, "time");
    if (time) {
        if (!json_is_string(time))
            return set_why(why, why_size,
                           "invalid %s: \"time\" must be a string", what);
        if (strcmp(json_string_value(time), "processing") == 0)
            w->processing = 1;
        else if (strcmp(json_string_value(time), "event") != 0)
            return set_why(why, why_size, "unsupported window time \"%s\"",
                           json_string_value(time));
    }
    return 0;
}

/* pipeline.trigger, recursively for purging's inner trigger. */
static int load_trigger(const json_t *j, const char *what, int depth,
                        struct conf_trigger **out, char *why, size_t why_size)
{
    static const char *const plain_keys[] = {"type", NULL};
    static const char *const count_keys[] = {"type", "count", NULL};
    static const char *const cont_keys[] = {"type", "interval_ms", NULL};
    static const char *const purging_keys[] = {"type", "inner", NULL};
    struct conf_trigger *t;
    const char *type = NULL;
    const char *const *keys;

    *out = NULL;
    if (depth > MAX_TRIGGER_DEPTH)
        return set_why(why, why_size,
                       "unsupported trigger nesting deeper than %d",
                       MAX_TRIGGER_DEPTH);
    if (need_object(j, what, why, why_size) != 0 ||
        get_string(j, "type", what, &type, why, why_size) != 0)
        return -1;
    t = calloc(1, sizeof(*t));
    if (!t)
        return set_why(why, why_size, "out of memory");
    *out = t;
    if (strcmp(type, "event_time") == 0) {
        t->type = TRIG_EVENT_TIME;
        keys = plain_keys;
    } else if (strcmp(type, "processing_time") == 0) {
        t->type = TRIG_PROCESSING_TIME;
        keys = plain_keys;
    } else if (strcmp(type, "count") == 0) {
        t->type = TRIG_COUNT;
        keys = count_keys;
    } else if (strcmp(type, "continuous_event_time") == 0) {
        t->type = TRIG_CONTINUOUS;
        keys = cont_keys;
    } else if (strcmp(type, "purging") == 0) {
        t->type = TRIG_PURGING;
        keys = purging_keys;
    } else {
        return set_why(why, why_size, "unsupported trigger type \"%s\"", type);
    }
    if (check_keys(j, what, keys, why, why_size) != 0)
        return -1;
    switch (t->type) {
    case TRIG_COUNT:
        return get_int(j, "count", what, 1, 0, INT64_MIN, INT64_MAX, &t->count,
                       why, why_size);
    case TRIG_CONTINUOUS:
        return get_time(j, "interval_ms", what, 1, 0, &t->interval_ms, why,
                        why_size);
    case TRIG_PURGING:
        if (!json_object_get(j, "inner"))
            return set_why(why, why_size, "invalid %s: missing \"inner\"",
                           what);
        return load_trigger(json_object_get(j, "inner"),
                            "pipeline.trigger.inner", depth + 1, &t->inner, why,
                            why_size);
    default:
        return 0;
    }
}

/* Releases a trigger chain. */
static void free_trigger(struct conf_trigger *t)
{
    while (t) {
        struct conf_trigger *inner = t->inner;

        free(t);
        t = inner;
    }
}

/* pipeline.aggregate. */
static int load_aggregate(const json_t *j, tdm_agg_kind *out, char *why,
                          size_t why_size)
{
    static const char *const keys[] = {"fn", "field", NULL};
    static const struct {
        const char *name;
        tdm_agg_kind kind;
    } fns[] = {{"count", TDM_AGG_COUNT}, {"sum", TDM_AGG_SUM},
               {"min", TDM_AGG_MIN},     {"max", TDM_AGG_MAX},
               {"avg", TDM_AGG_AVG},     {"collect", TDM_AGG_COLLECT}};
    const char *what = "pipeline.aggregate";
    const json_t *field;
    const char *fn = NULL;
    size_t i;

    if (need_object(j, what, why, why_size) != 0 ||
        check_keys(j, what, keys, why, why_size) != 0 ||
        get_string(j, "fn", what, &fn, why, why_size) != 0)
        return -1;
    for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        if (strcmp(fn, fns[i].name) == 0)
            break;
    }
    if (i == sizeof(fns) / sizeof(fns[0]))
        return set_why(why, why_size, "unsupported aggregate fn \"%s\"", fn);
    *out = fns[i].kind;
    /* Records carry one number, "value"; no other field can be read. */
    field = json_object_get(j, "field");
    if (field && !json_is_string(field))
        return set_why(why, why_size, "invalid %s: \"field\" must be a string",
                       what);
    if (field && strcmp(json_string_value(field), "value") != 0)
        return set_why(why, why_size, "unsupported aggregate field \"%s\"",
                       json_string_value(field));
    return 0;
}

/* pipeline.join. */
static int load_join(const json_t *j, struct conf_join *jn, char *why,
                     size_t why_size)
{
    static const char *const interval_keys[] = {
        "type", "lower_ms", "upper_ms", "lower_inclusive", "upper_inclusive",
        NULL};
    static const char *const window_keys[] = {"type", "window", NULL};
    const char *what = "pipeline.join";
    const char *type = NULL;

    memset(jn, 0, sizeof(*jn));
    if (need_object(j, what, why, why_size) != 0 ||
        get_string(j, "type", what, &type, why, why_size) != 0)
        return -1;
    if (strcmp(type, "interval") == 0) {
        if (check_keys(j, what, interval_keys, why, why_size) != 0 ||
            get_time(j, "lower_ms", what, 1, 0, &jn->lower_ms, why, why_size) !=
                0 ||
            get_time(j, "upper_ms", what, 1, 0, &jn->upper_ms, why, why_size) !=
                0 ||
            get_bool(j, "lower_inclusive", what, 1, &jn->lower_inclusive, why,
                     why_size) != 0 ||
            get_bool(j, "upper_inclusive", what, 1, &jn->upper_inclusive, why,
                     why_size) != 0)
            return -1;
        return 0;
    }
    if (strcmp(type, "window") == 0) {
        jn->is_window = 1;
        if (check_keys(j, what, window_keys, why, why_size) != 0)
            return -1;
        if (!json_object_get(j, "window"))
            return set_why(why, why_size, "invalid %s: missing \"window\"",
                           what);
        return load_window(json_object_get(j, "window"), "pipeline.join.window",
                           &jn->window, why, why_size);
    }
    return set_why(why, why_size, "unsupported join type \"%s\"", type);
}

/*
** Fields that only mean something for some operators.  Elsewhere they are
** accepted only when they hold their default value (a vector written from
** a template may spell defaults out); any other value would be silently
** ignored, so it is unsupported.
*/
static int is_default(const char *field, const json_t *val)
{
    static const struct {
        const char *field;
        const char *json;
    } defaults[] = {
        {"channels", "1"},
        {"watermark", "{\"strategy\":\"explicit\"}"},
        {"trigger", "{\"type\":\"event_time\"}"},
        {"aggregate", "{\"fn\":\"count\"}"},
        {"aggregate", "{\"fn\":\"count\",\"field\":\"value\"}"},
        {"allowed_lateness_ms", "0"},
        {"late_output", "false"},
    };
    size_t i;
    int same = 0;

    for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]) && !same; i++) {
        json_t *d;

        if (strcmp(field, defaults[i].field) != 0)
            continue;
        d = json_loads(defaults[i].json, JSON_DECODE_ANY, NULL);
        same = d && json_equal(d, (json_t *)val);
        json_decref(d);
    }
    return same;
}

/* Names of the pipeline kinds, for messages. */
static const char *pipe_name(enum conf_pipe p)
{
    switch (p) {
    case PIPE_WATERMARK:
        return "watermark-path";
    case PIPE_WINDOW:
        return "window";
    case PIPE_JOIN:
        return "join";
    case PIPE_SOURCE:
        return "source";
    default:
        return "alignment_coordinator";
    }
}

/* The whole pipeline object. */
static int load_pipeline(const json_t *p, struct conf_vector *v, char *why,
                         size_t why_size)
{
    static const char *const keys[] = {"channels",
                                       "watermark",
                                       "window",
                                       "trigger",
                                       "allowed_lateness_ms",
                                       "late_output",
                                       "aggregate",
                                       "join",
                                       "source",
                                       "alignment",
                                       "alignment_coordinator",
                                       NULL};
    static const char *const operators[] = {"window", "join", "source",
                                            "alignment_coordinator"};
    /* Which pipelines each optional field applies to (bit per conf_pipe). */
    static const struct {
        const char *field;
        unsigned pipes;
    } scope[] = {
        {"channels",
         1u << PIPE_WATERMARK | 1u << PIPE_WINDOW | 1u << PIPE_JOIN},
        {"watermark", 1u << PIPE_WATERMARK | 1u << PIPE_WINDOW |
                          1u << PIPE_JOIN | 1u << PIPE_SOURCE},
        {"trigger", 1u << PIPE_WINDOW},
        {"aggregate", 1u << PIPE_WINDOW},
        {"allowed_lateness_ms", 1u << PIPE_WINDOW},
        {"late_output", 1u << PIPE_WINDOW | 1u << PIPE_JOIN},
        {"alignment", 1u << PIPE_SOURCE},
    };
    const char *what = "pipeline";
    const char *op = NULL;
    const json_t *j;
    int64_t n;
    size_t i;

    if (need_object(p, what, why, why_size) != 0 ||
        check_keys(p, what, keys, why, why_size) != 0)
        return -1;

    /* At most one operator; none means the watermark path. */
    v->pipe = PIPE_WATERMARK;
    for (i = 0; i < sizeof(operators) / sizeof(operators[0]); i++) {
        if (!json_object_get(p, operators[i]))
            continue;
        if (op)
            return set_why(why, why_size,
                           "unsupported pipeline: both \"%s\" and \"%s\"", op,
                           operators[i]);
        op = operators[i];
        v->pipe = (enum conf_pipe)(PIPE_WINDOW + (int)i);
    }
    for (i = 0; i < sizeof(scope) / sizeof(scope[0]); i++) {
        j = json_object_get(p, scope[i].field);
        if (j && !(scope[i].pipes & (1u << v->pipe)) &&
            !is_default(scope[i].field, j))
            return set_why(why, why_size,
                           "unsupported pipeline: \"%s\" in a %s pipeline",
                           scope[i].field, pipe_name(v->pipe));
    }

    if (get_int(p, "channels", what, 0, 1, 1, MAX_CHANNELS, &n, why,
                why_size) != 0)
        return -1;
    v->channels = (int)n;
    v->wm.strategy = STRAT_EXPLICIT;
    if ((j = json_object_get(p, "watermark")) &&
        load_watermark(j, &v->wm, why, why_size) != 0)
        return -1;
    if (v->wm.has_fallback && v->pipe != PIPE_SOURCE)
        return set_why(why, why_size,
                       "unsupported field \"fallback\" in pipeline.watermark "
                       "of a %s pipeline (only a source reader runs one)",
                       pipe_name(v->pipe));

    /* Window operator fields (validated even where only defaults are
    ** accepted, so that types are always checked). */
    v->agg = TDM_AGG_COUNT;
    if ((j = json_object_get(p, "window")) &&
        load_window(j, "pipeline.window", &v->window, why, why_size) != 0)
        return -1;
    if ((j = json_object_get(p, "trigger")) &&
        load_trigger(j, "pipeline.trigger", 0, &v->trigger, why, why_size) != 0)
        return -1;
    if ((j = json_object_get(p, "aggregate")) &&
        load_aggregate(j, &v->agg, why, why_size) != 0)
        return -1;
    if (get_time(p, "allowed_lateness_ms", what, 0, 0, &v->allowed_lateness_ms,
                 why, why_size) != 0 ||
        get_bool(p, "late_output", what, 0, &v->late_output, why, why_size) !=
            0)
        return -1;
    if ((j = json_object_get(p, "join")) &&
        load_join(j, &v->join, why, why_size) != 0)
        return -1;

    if ((j = json_object_get(p, "source"))) {
        static const char *const src_keys[] = {"splits", NULL};

        if (need_object(j, "pipeline.source", why, why_size) != 0 ||
            check_keys(j, "pipeline.source", src_keys, why, why_size) != 0 ||
            get_int(j, "splits", "pipeline.source", 1, 0, 0, MAX_CHANNELS, &n,
                    why, why_size) != 0)
            return -1;
        v->channels = (int)n;
    }
    if ((j = json_object_get(p, "alignment"))) {
        static const char *const al_keys[] = {"max_drift_ms",
                                              "update_interval_ms", NULL};
        const char *w = "pipeline.alignment";

        v->has_alignment = 1;
        if (need_object(j, w, why, why_size) != 0 ||
            check_keys(j, w, al_keys, why, why_size) != 0 ||
            get_time(j, "max_drift_ms", w, 1, 0, &v->align_drift_ms, why,
                     why_size) != 0 ||
            get_time(j, "update_interval_ms", w, 1, 0, &v->align_interval_ms,
                     why, why_size) != 0)
            return -1;
    }
    if ((j = json_object_get(p, "alignment_coordinator"))) {
        static const char *const co_keys[] = {"subtasks", "max_drift_ms",
                                              "update_interval_ms", NULL};
        const char *w = "pipeline.alignment_coordinator";

        if (need_object(j, w, why, why_size) != 0 ||
            check_keys(j, w, co_keys, why, why_size) != 0 ||
            get_int(j, "subtasks", w, 1, 0, 0, MAX_CHANNELS, &n, why,
                    why_size) != 0 ||
            get_time(j, "max_drift_ms", w, 1, 0, &v->coord_drift_ms, why,
                     why_size) != 0 ||
            get_time(j, "update_interval_ms", w, 1, 0, &v->coord_interval_ms,
                     why, why_size) != 0)
            return -1;
        v->subtasks = (int)n;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Input items                                                             */
/* ---------------------------------------------------------------------- */

/* Reads the position of an item: channel (and side) or split. */
static int load_position(const json_t *it, const struct conf_vector *v,
                         const char *what, struct conf_input *in, char *why,
                         size_t why_size)
{
    int64_t n;

    if (v->pipe == PIPE_SOURCE) {
        if (get_int(it, "split", what, 0, 0, 0, (int64_t)v->channels - 1, &n,
                    why, why_size) != 0)
            return -1;
        in->channel = (int)n;
        return 0;
    }
    if (get_int(it, "channel", what, 0, 0, 0, (int64_t)v->channels - 1, &n, why,
                why_size) != 0)
        return -1;
    in->channel = (int)n;
    if (v->pipe == PIPE_JOIN) {
        const char *side = NULL;

        if (get_string(it, "side", what, &side, why, why_size) != 0)
            return -1;
        if (strcmp(side, "left") == 0)
            in->side = TDM_SIDE_LEFT;
        else if (strcmp(side, "right") == 0)
            in->side = TDM_SIDE_RIGHT;
        else
            return set_why(why, why_size, "unsupported side \"%s\" in %s", side,
                           what);
    }
    return 0;
}

/* A "set" item: in a source pipeline exactly one of
** max_out_of_orderness and idle_timeout, in a window pipeline
** allowed_lateness; in ms, >= 0 (runner extension, README.md). */
static int load_set(json_t *it, const char *what, const struct conf_vector *v,
                    struct conf_input *in, char *why, size_t why_size)
{
    int64_t n;
    int has_bound = json_object_get(it, "max_out_of_orderness") != NULL;
    int has_late = json_object_get(it, "allowed_lateness") != NULL;
    if (has_late != (v->pipe == PIPE_WINDOW))
        return set_why(why, why_size,
                       "invalid %s: a set item has \"allowed_lateness\" in "
                       "a window pipeline, and only there",
                       what);
    if (has_late) {
        in->setting = 2;
        if (get_int(it, "allowed_lateness", what, 1, 0, 0, INT64_MAX, &n, why,
                    why_size) != 0)
            return -1;
        in->ts = n;
        return 0;
    }
    if (has_bound == (json_object_get(it, "idle_timeout") != NULL))
        return set_why(why, why_size,
                       "invalid %s: a set item has exactly one of "
                       "\"max_out_of_orderness\" and \"idle_timeout\"",
                       what);
    in->setting = has_bound ? 0 : 1;
    if (get_int(it, has_bound ? "max_out_of_orderness" : "idle_timeout", what,
                1, 0, 0, INT64_MAX, &n, why, why_size) != 0)
        return -1;
    in->ts = n;
    return 0;
}

/* Decodes input item @p idx. */
static int load_input_item(json_t *it, size_t idx, const struct conf_vector *v,
                           struct conf_input *in, char *why, size_t why_size)
{
    static const char *const kinds[] = {
        "record",         "watermark", "idle",   "active", "proctime", "end",
        "split_finished", "announce",  "report", "set",    NULL};
    /* Fields each kind may carry besides "kind" and its position. */
    static const char *const wm_keys[] = {"kind", "ts",    "channel",
                                          "side", "split", NULL};
    static const char *const status_keys[] = {"kind", "channel", "side",
                                              "split", NULL};
    static const char *const proctime_keys[] = {"kind", "ts", NULL};
    static const char *const end_keys[] = {"kind", NULL};
    static const char *const finished_keys[] = {"kind", "split", NULL};
    static const char *const announce_keys[] = {"kind", "max_watermark", NULL};
    static const char *const report_keys[] = {"kind", "subtask", "watermark",
                                              NULL};
    static const char *const set_keys[] = {"kind", "max_out_of_orderness",
                                           "idle_timeout", "allowed_lateness",
                                           NULL};
    static const char *const *const kind_keys[] = {
        NULL,     wm_keys,       status_keys,   status_keys, proctime_keys,
        end_keys, finished_keys, announce_keys, report_keys, set_keys};
    /* Which kinds each pipeline accepts (bit per conf_in_kind). */
    const unsigned common = 1u << IN_RECORD | 1u << IN_WATERMARK |
                            1u << IN_IDLE | 1u << IN_ACTIVE |
                            1u << IN_PROCTIME | 1u << IN_END;
    unsigned ok;
    char what[64];
    const char *kind = NULL;
    const json_t *j;
    int64_t n;
    int k;

    snprintf(what, sizeof(what), "input %zu", idx);
    memset(in, 0, sizeof(*in));
    in->obj = it;
    in->key = "";
    in->ts = TDM_TIME_MIN;
    if (need_object(it, what, why, why_size) != 0 ||
        get_string(it, "kind", what, &kind, why, why_size) != 0)
        return -1;
    for (k = 0; kinds[k]; k++) {
        if (strcmp(kind, kinds[k]) == 0)
            break;
    }
    if (!kinds[k])
        return set_why(why, why_size, "unsupported input kind \"%s\" (%s)",
                       kind, what);
    in->kind = (enum conf_in_kind)k;
    switch (v->pipe) {
    case PIPE_SOURCE:
        ok = common | 1u << IN_SPLIT_FINISHED | 1u << IN_SET |
             (v->has_alignment ? 1u << IN_ANNOUNCE : 0);
        break;
    case PIPE_COORD:
        ok = 1u << IN_PROCTIME | 1u << IN_REPORT;
        break;
    case PIPE_WINDOW:
        ok = common | 1u << IN_SET;
        break;
    default:
        ok = common;
        break;
    }
    if (!(ok & (1u << in->kind)))
        return set_why(why, why_size,
                       "unsupported input kind \"%s\" in a %s pipeline%s (%s)",
                       kind, pipe_name(v->pipe),
                       in->kind == IN_ANNOUNCE ? " without alignment" : "",
                       what);

    /* Fields: a record may carry extra fields (punctuation markers), every
    ** other kind only its own. */
    if (kind_keys[in->kind] &&
        check_keys(it, what, kind_keys[in->kind], why, why_size) != 0)
        return -1;
    /* Position fields must fit the pipeline, for records too. */
    if (v->pipe != PIPE_SOURCE && json_object_get(it, "split"))
        return set_why(why, why_size,
                       "unsupported field \"split\" in %s (not a source "
                       "pipeline)",
                       what);
    if (v->pipe == PIPE_SOURCE && json_object_get(it, "channel"))
        return set_why(why, why_size,
                       "unsupported field \"channel\" in %s (source items "
                       "carry \"split\")",
                       what);
    if (v->pipe != PIPE_JOIN && json_object_get(it, "side"))
        return set_why(why, why_size,
                       "unsupported field \"side\" in %s (not a join)", what);

    switch (in->kind) {
    case IN_RECORD:
        if ((j = json_object_get(it, "key"))) {
            if (!json_is_string(j))
                return set_why(why, why_size,
                               "invalid %s: \"key\" must be a string", what);
            in->key = json_string_value(j);
            in->key_len = json_string_length(j);
        }
        if ((j = json_object_get(it, "value"))) {
            if (!json_is_number(j))
                return set_why(why, why_size,
                               "invalid %s: \"value\" must be a number", what);
            in->value = json_number_value(j);
        }
        if (v->wm.strategy == STRAT_PUNCTUATED &&
            (j = json_object_get(it, v->wm.marker_field)) &&
            !json_is_boolean(j))
            return set_why(why, why_size,
                           "invalid %s: marker field \"%s\" must be true or "
                           "false",
                           what, v->wm.marker_field);
        if (get_time(it, "ts", what, 0, TDM_TIME_MIN, &in->ts, why, why_size) !=
            0)
            return -1;
        return load_position(it, v, what, in, why, why_size);
    case IN_WATERMARK:
        if (get_time(it, "ts", what, 1, 0, &in->ts, why, why_size) != 0)
            return -1;
        return load_position(it, v, what, in, why, why_size);
    case IN_IDLE:
    case IN_ACTIVE:
    case IN_SPLIT_FINISHED:
        return load_position(it, v, what, in, why, why_size);
    case IN_PROCTIME:
        return get_time(it, "ts", what, 1, 0, &in->ts, why, why_size);
    case IN_ANNOUNCE:
        return get_time(it, "max_watermark", what, 1, 0, &in->ts, why,
                        why_size);
    case IN_REPORT:
        if (get_int(it, "subtask", what, 1, 0, 0, (int64_t)v->subtasks - 1, &n,
                    why, why_size) != 0)
            return -1;
        in->subtask = (int)n;
        return get_time(it, "watermark", what, 1, 0, &in->ts, why, why_size);
    case IN_SET:
        return load_set(it, what, v, in, why, why_size);
    default:
        return 0;
    }
}

/* expect: output items (canonicalised) and counters. */
static int load_expect(const json_t *e, struct conf_vector *v, char *why,
                       size_t why_size)
{
    static const char *const keys[] = {"output", "counters", NULL};
    static const char *const counter_keys[] = {"late_dropped", NULL};
    const json_t *out, *counters, *item;
    const char *k = NULL;
    json_t *val;
    size_t i;

    if (need_object(e, "expect", why, why_size) != 0 ||
        check_keys(e, "expect", keys, why, why_size) != 0)
        return -1;
    out = json_object_get(e, "output");
    if (!json_is_array(out))
        return set_why(why, why_size,
                       "invalid expect: \"output\" must be an array");
    v->expected = json_array();
    if (!v->expected)
        return set_why(why, why_size, "out of memory");
    json_array_foreach(out, i, item)
    {
        char sub[CONF_MSG];
        json_t *c = conf_canon_expected(item, v->n_input, sub, sizeof(sub));

        if (!c)
            return set_why(why, why_size, "%s (expect.output[%zu])", sub, i);
        if (json_array_append_new(v->expected, c) != 0)
            return set_why(why, why_size, "out of memory");
    }
    counters = json_object_get(e, "counters");
    if (counters) {
        if (need_object(counters, "expect.counters", why, why_size) != 0)
            return -1;
        json_object_foreach((json_t *)counters, k, val)
        {
            (void)val;
            if (!in_list(k, counter_keys))
                return set_why(why, why_size, "unsupported counter \"%s\"", k);
        }
        if (json_object_get(counters, "late_dropped")) {
            v->has_late_dropped = 1;
            if (get_int(counters, "late_dropped", "expect.counters", 1, 0, 0,
                        INT64_MAX, &v->late_dropped, why, why_size) != 0)
                return -1;
        }
    }
    return 0;
}

/* See conformance.h.  The name is read first so that even an invalid
** vector is reported under its own name. */
int conf_load(json_t *doc, struct conf_vector *v, char *why, size_t why_size)
{
    static const char *const keys[] = {"name",      "origin", "description",
                                       "pipeline",  "input",  "expect",
                                       "semantics", NULL};
    static const char *const texts[] = {"origin", "description", "semantics"};
    const json_t *input, *j;
    size_t i;

    memset(v, 0, sizeof(*v));
    v->doc = doc;
    if (need_object(doc, "vector", why, why_size) != 0)
        return -1;
    if ((j = json_object_get(doc, "name")) && json_is_string(j))
        v->name = json_string_value(j);
    if (check_keys(doc, "the vector", keys, why, why_size) != 0 ||
        get_string(doc, "name", "vector", &v->name, why, why_size) != 0)
        return -1;
    for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        j = json_object_get(doc, texts[i]);
        if (j && !json_is_string(j))
            return set_why(why, why_size,
                           "invalid vector: \"%s\" must be a string", texts[i]);
    }
    if (!json_object_get(doc, "pipeline"))
        return set_why(why, why_size, "invalid vector: missing \"pipeline\"");
    if (load_pipeline(json_object_get(doc, "pipeline"), v, why, why_size) != 0)
        return -1;

    input = json_object_get(doc, "input");
    if (!json_is_array(input))
        return set_why(why, why_size,
                       "invalid vector: \"input\" must be an array");
    v->n_input = json_array_size(input);
    v->input = calloc(v->n_input ? v->n_input : 1, sizeof(*v->input));
    if (!v->input)
        return set_why(why, why_size, "out of memory");
    for (i = 0; i < v->n_input; i++) {
        if (load_input_item(json_array_get(input, i), i, v, &v->input[i], why,
                            why_size) != 0)
            return -1;
    }
    if (!json_object_get(doc, "expect"))
        return set_why(why, why_size, "invalid vector: missing \"expect\"");
    return load_expect(json_object_get(doc, "expect"), v, why, why_size);
}

/* See conformance.h. */
void conf_vector_free(struct conf_vector *v)
{
    if (!v)
        return;
    free_trigger(v->trigger);
    free(v->input);
    json_decref(v->expected);
    json_decref(v->doc);
    memset(v, 0, sizeof(*v));
}
