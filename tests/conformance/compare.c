/* SPDX-License-Identifier: MIT */
/*
** compare.c - canonical output items and the comparison rules of FORMAT.md.
**
** Expected and actual items share one canonical JSON shape per kind (with
** "after").  Per "after" group: results, late records and join pairs are a
** multiset, watermarks and statuses keep their order, and each result stays
** on its listed side of the group's watermarks.  Source and coordinator
** vectors are compared as one ordered list.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* Relative tolerance for non-integral numbers (avg). */
#define REL_TOL 1e-9

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

/* ---------------------------------------------------------------------- */
/* Canonical items                                                         */
/* ---------------------------------------------------------------------- */

/* See conformance.h: a double as an exact JSON number where possible. */
json_t *conf_number(double d)
{
    if (isnan(d))
        return json_string("nan");
    if (isinf(d))
        return json_string(d > 0 ? "inf" : "-inf");
    /* Integral and inside [-2^63, 2^63): exact as an int64. */
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
        (double)(int64_t)d == d)
        return json_integer((json_int_t)(int64_t)d);
    return json_real(d);
}

/* A JSON string of @p len bytes; bytes that are not valid UTF-8 are shown
** as \xNN so that any key can be rendered. */
static json_t *string_of(const char *s, size_t len)
{
    json_t *j = json_stringn(s ? s : "", s ? len : 0);
    char *buf;
    size_t i, o = 0;

    if (j)
        return j;
    buf = malloc(len * 4 + 1);
    if (!buf)
        return NULL;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c >= 0x20 && c < 0x7f)
            buf[o++] = (char)c;
        else
            o += (size_t)sprintf(buf + o, "\\x%02x", c);
    }
    buf[o] = '\0';
    j = json_string(buf);
    free(buf);
    return j;
}

/* See conformance.h: the canonical {key, ts, value} of a record. */
json_t *conf_record_json(const char *key, size_t key_len, tdm_time_ms ts,
                         double value)
{
    json_t *r = json_object();

    if (!r || json_object_set_new(r, "key", string_of(key, key_len)) != 0 ||
        json_object_set_new(r, "ts", json_integer(ts)) != 0 ||
        json_object_set_new(r, "value", conf_number(value)) != 0) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* Reads an exact int64 from an integer or an integral real. */
static int to_int64(const json_t *j, int64_t *out)
{
    double d;

    if (json_is_integer(j)) {
        *out = (int64_t)json_integer_value(j);
        return 0;
    }
    if (!json_is_real(j))
        return -1;
    d = json_real_value(j);
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ||
        (double)(int64_t)d != d)
        return -1;
    *out = (int64_t)d;
    return 0;
}

/* Fails on the first key of @p obj not in the NULL-terminated list. */
static int only_keys(const json_t *obj, const char *const *allowed, char *why,
                     size_t why_size)
{
    const char *k;
    json_t *val;

    json_object_foreach((json_t *)obj, k, val)
    {
        const char *const *a;

        (void)val;
        for (a = allowed; *a && strcmp(*a, k) != 0; a++)
            ;
        if (!*a)
            return set_why(why, why_size,
                           "unsupported field \"%s\" in an output item", k);
    }
    return 0;
}

/* Copies field @p f of @p src into @p dst as a canonical timestamp. */
static int put_time(json_t *dst, const json_t *src, const char *f, char *why,
                    size_t why_size)
{
    const json_t *j = json_object_get(src, f);
    int64_t t;

    if (!j)
        return set_why(why, why_size, "invalid output item: missing \"%s\"", f);
    if (to_int64(j, &t) != 0)
        return set_why(why, why_size,
                       "invalid output item: \"%s\" must be an integer", f);
    if (json_object_set_new(dst, f, json_integer(t)) != 0)
        return set_why(why, why_size, "out of memory");
    return 0;
}

/* Copies a numeric value (or, with @p allow_list, a list of numbers). */
static int put_value(json_t *dst, const json_t *src, int allow_list, char *why,
                     size_t why_size)
{
    const json_t *j = json_object_get(src, "value"), *x;
    size_t i;

    if (!j)
        return set_why(why, why_size, "invalid output item: missing \"value\"");
    if (json_is_array(j) && allow_list) {
        json_array_foreach(j, i, x)
        {
            if (!json_is_number(x))
                return set_why(why, why_size,
                               "invalid output item: \"value\" list must hold "
                               "numbers");
        }
    } else if (!json_is_number(j)) {
        return set_why(why, why_size,
                       "invalid output item: \"value\" must be a number%s",
                       allow_list ? " or a list of numbers" : "");
    }
    if (json_object_set_new(dst, "value", json_deep_copy(j)) != 0)
        return set_why(why, why_size, "out of memory");
    return 0;
}

/* Canonical {key, ts, value} of a record inside a late or join item; a
** "side" inside a late record is hoisted into *side. */
static json_t *canon_record(const json_t *r, int allow_side,
                            const json_t **side, char *why, size_t why_size)
{
    static const char *const keys[] = {"key", "ts", "value", NULL};
    static const char *const keys_side[] = {"key", "ts", "value", "side", NULL};
    const json_t *key;
    json_t *c;

    if (!json_is_object(r)) {
        set_why(why, why_size,
                "invalid output item: a record must be an "
                "object {key, ts, value}");
        return NULL;
    }
    if (only_keys(r, allow_side ? keys_side : keys, why, why_size) != 0)
        return NULL;
    key = json_object_get(r, "key");
    if (!json_is_string(key)) {
        set_why(why, why_size,
                "invalid output item: record \"key\" must be a "
                "string");
        return NULL;
    }
    c = json_object();
    if (!c || json_object_set_new(c, "key", json_deep_copy(key)) != 0) {
        json_decref(c);
        set_why(why, why_size, "out of memory");
        return NULL;
    }
    if (put_time(c, r, "ts", why, why_size) != 0 ||
        put_value(c, r, 0, why, why_size) != 0) {
        json_decref(c);
        return NULL;
    }
    if (allow_side && json_object_get(r, "side"))
        *side = json_object_get(r, "side");
    return c;
}

/* Canonical side string ("left" / "right"), validated. */
static int put_side(json_t *dst, const json_t *side, char *why, size_t why_size)
{
    const char *s = json_string_value(side);

    if (!s || (strcmp(s, "left") != 0 && strcmp(s, "right") != 0))
        return set_why(why, why_size,
                       "unsupported side in an output item (want \"left\" or "
                       "\"right\")");
    if (json_object_set_new(dst, "side", json_string(s)) != 0)
        return set_why(why, why_size, "out of memory");
    return 0;
}

/* Fills the canonical form of @p item (already known to be an object)
** into @p c, which holds "after". */
static int canon_body(const json_t *item, json_t *c, char *why, size_t why_size)
{
    static const char *const wm_keys[] = {"after", "watermark", NULL};
    static const char *const status_keys[] = {"after", "status", NULL};
    static const char *const result_keys[] = {"after", "key", "window",
                                              "value", "ts",  NULL};
    static const char *const join_keys[] = {"after", "left", "right", "ts",
                                            NULL};
    static const char *const late_keys[] = {"after", "late", "side", NULL};
    static const char *const reported_keys[] = {"after", "reported", NULL};
    static const char *const data_wm_keys[] = {"after", "data_watermark", NULL};
    static const char *const reading_keys[] = {"after", "reading", NULL};
    static const char *const paused_keys[] = {"after", "split_paused", NULL};
    static const char *const resumed_keys[] = {"after", "split_resumed", NULL};
    static const char *const announce_keys[] = {"after", "announce", "to",
                                                NULL};
    const json_t *j, *side = NULL;
    json_t *r;
    size_t i;

    if (json_object_get(item, "watermark")) {
        return only_keys(item, wm_keys, why, why_size) != 0
                   ? -1
                   : put_time(c, item, "watermark", why, why_size);
    }
    if ((j = json_object_get(item, "status"))) {
        const char *s = json_string_value(j);

        if (only_keys(item, status_keys, why, why_size) != 0)
            return -1;
        if (!s || (strcmp(s, "idle") != 0 && strcmp(s, "active") != 0))
            return set_why(why, why_size,
                           "unsupported status in an output item (want "
                           "\"idle\" or \"active\")");
        return json_object_set_new(c, "status", json_string(s));
    }
    if ((j = json_object_get(item, "late"))) {
        if (only_keys(item, late_keys, why, why_size) != 0)
            return -1;
        r = canon_record(j, 1, &side, why, why_size);
        if (!r || json_object_set_new(c, "late", r) != 0)
            return -1;
        if (json_object_get(item, "side"))
            side = json_object_get(item, "side");
        return side ? put_side(c, side, why, why_size) : 0;
    }
    if (json_object_get(item, "left") || json_object_get(item, "right")) {
        static const char *const sides[] = {"left", "right"};

        if (only_keys(item, join_keys, why, why_size) != 0)
            return -1;
        for (i = 0; i < 2; i++) {
            if (!json_object_get(item, sides[i]))
                return set_why(why, why_size,
                               "invalid output item: missing \"%s\"", sides[i]);
            r = canon_record(json_object_get(item, sides[i]), 0, NULL, why,
                             why_size);
            if (!r || json_object_set_new(c, sides[i], r) != 0)
                return -1;
        }
        return put_time(c, item, "ts", why, why_size);
    }
    if (json_object_get(item, "data_watermark")) {
        return only_keys(item, data_wm_keys, why, why_size) != 0
                   ? -1
                   : put_time(c, item, "data_watermark", why, why_size);
    }
    if (json_object_get(item, "reported")) {
        return only_keys(item, reported_keys, why, why_size) != 0
                   ? -1
                   : put_time(c, item, "reported", why, why_size);
    }
    if ((j = json_object_get(item, "reading"))) {
        const char *s = json_string_value(j);

        if (only_keys(item, reading_keys, why, why_size) != 0)
            return -1;
        if (!s || (strcmp(s, "paused") != 0 && strcmp(s, "resumed") != 0))
            return set_why(why, why_size,
                           "unsupported reading in an output item (want "
                           "\"paused\" or \"resumed\")");
        return json_object_set_new(c, "reading", json_string(s));
    }
    if (json_object_get(item, "split_paused")) {
        return only_keys(item, paused_keys, why, why_size) != 0
                   ? -1
                   : put_time(c, item, "split_paused", why, why_size);
    }
    if (json_object_get(item, "split_resumed")) {
        return only_keys(item, resumed_keys, why, why_size) != 0
                   ? -1
                   : put_time(c, item, "split_resumed", why, why_size);
    }
    if (json_object_get(item, "announce")) {
        json_t *to;
        const json_t *x;

        if (only_keys(item, announce_keys, why, why_size) != 0 ||
            put_time(c, item, "announce", why, why_size) != 0)
            return -1;
        j = json_object_get(item, "to");
        if (!json_is_array(j))
            return set_why(why, why_size,
                           "invalid output item: \"to\" must be a list of "
                           "subtasks");
        to = json_array();
        if (!to || json_object_set_new(c, "to", to) != 0)
            return set_why(why, why_size, "out of memory");
        json_array_foreach(j, i, x)
        {
            int64_t t;

            if (to_int64(x, &t) != 0)
                return set_why(why, why_size,
                               "invalid output item: \"to\" must be a list of "
                               "subtasks");
            if (json_array_append_new(to, json_integer(t)) != 0)
                return set_why(why, why_size, "out of memory");
        }
        return 0;
    }
    if (json_object_get(item, "key") || json_object_get(item, "window")) {
        const json_t *w;

        if (only_keys(item, result_keys, why, why_size) != 0)
            return -1;
        j = json_object_get(item, "key");
        if (!json_is_string(j))
            return set_why(why, why_size,
                           "invalid output item: \"key\" must be a string");
        if (json_object_set_new(c, "key", json_deep_copy(j)) != 0)
            return set_why(why, why_size, "out of memory");
        w = json_object_get(item, "window");
        if (!w)
            return set_why(why, why_size,
                           "invalid output item: missing \"window\"");
        if (json_is_null(w)) {
            if (json_object_set_new(c, "window", json_null()) != 0)
                return set_why(why, why_size, "out of memory");
        } else {
            int64_t s, e;

            if (!json_is_array(w) || json_array_size(w) != 2 ||
                to_int64(json_array_get(w, 0), &s) != 0 ||
                to_int64(json_array_get(w, 1), &e) != 0)
                return set_why(why, why_size,
                               "invalid output item: \"window\" must be "
                               "[start, end] or null");
            if (json_object_set_new(
                    c, "window",
                    json_pack("[II]", (json_int_t)s, (json_int_t)e)) != 0)
                return set_why(why, why_size, "out of memory");
        }
        if (put_value(c, item, 1, why, why_size) != 0)
            return -1;
        return put_time(c, item, "ts", why, why_size);
    }
    {
        const char *k;
        json_t *val;

        json_object_foreach((json_t *)item, k, val)
        {
            (void)val;
            if (strcmp(k, "after") != 0)
                return set_why(why, why_size,
                               "unsupported output item field \"%s\"", k);
        }
    }
    return set_why(why, why_size, "invalid output item: nothing but \"after\"");
}

/* See conformance.h.  "after" must index an input item; the rest of the
** item is validated and rewritten by canon_body(). */
json_t *conf_canon_expected(const json_t *item, size_t n_input, char *why,
                            size_t why_size)
{
    const json_t *after;
    int64_t a;
    json_t *c;

    if (!json_is_object(item)) {
        set_why(why, why_size, "invalid output item: must be an object");
        return NULL;
    }
    after = json_object_get(item, "after");
    if (!after || to_int64(after, &a) != 0) {
        set_why(why, why_size,
                "invalid output item: \"after\" must be an input index");
        return NULL;
    }
    if (a < 0 || (uint64_t)a >= n_input) {
        set_why(why, why_size,
                "invalid output item: \"after\" %lld is not an input index "
                "(%zu inputs)",
                (long long)a, n_input);
        return NULL;
    }
    c = json_object();
    if (!c || json_object_set_new(c, "after", json_integer(a)) != 0) {
        json_decref(c);
        set_why(why, why_size, "out of memory");
        return NULL;
    }
    if (canon_body(item, c, why, why_size) != 0) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* See conformance.h: compact JSON without "after". */
char *conf_render(const json_t *item)
{
    static char fallback[] = "?";
    json_t *copy = json_copy((json_t *)item);
    char *s;

    if (!copy)
        return fallback;
    json_object_del(copy, "after");
    s = json_dumps(copy,
                   JSON_COMPACT | JSON_REAL_PRECISION(16) | JSON_ENCODE_ANY);
    json_decref(copy);
    return s ? s : fallback;
}

/* See conformance.h; ignores the static fallback string. */
void conf_render_free(char *s)
{
    if (s && strcmp(s, "?") != 0)
        free(s);
}

/* ---------------------------------------------------------------------- */
/* Equality                                                                */
/* ---------------------------------------------------------------------- */

/* Numbers compare numerically: integers exactly, 3 equals 3.0, and
** non-integral values (avg) within a relative tolerance. */
static int num_equal(const json_t *a, const json_t *b)
{
    double x, y;

    if (json_is_integer(a) && json_is_integer(b))
        return json_integer_value(a) == json_integer_value(b);
    x = json_number_value(a);
    y = json_number_value(b);
    if (x == y)
        return 1;
    if (x == floor(x) && y == floor(y))
        return 0;
    return fabs(x - y) <= REL_TOL * fmax(fabs(x), fabs(y));
}

/* Expected @p e equals actual @p a.  "after" is ignored (callers group by
** it); an actual "side" counts only when the expected item names one. */
static int item_equal(const json_t *e, const json_t *a)
{
    const char *k;
    json_t *ev, *av;
    size_t i;

    if (json_is_number(e) && json_is_number(a))
        return num_equal(e, a);
    if (json_typeof(e) != json_typeof(a))
        return 0;
    switch (json_typeof(e)) {
    case JSON_OBJECT:
        json_object_foreach((json_t *)e, k, ev)
        {
            if (strcmp(k, "after") == 0)
                continue;
            av = json_object_get(a, k);
            if (!av || !item_equal(ev, av))
                return 0;
        }
        json_object_foreach((json_t *)a, k, av)
        {
            (void)av;
            if (strcmp(k, "after") != 0 && strcmp(k, "side") != 0 &&
                !json_object_get(e, k))
                return 0;
        }
        return 1;
    case JSON_ARRAY:
        if (json_array_size(e) != json_array_size(a))
            return 0;
        json_array_foreach((json_t *)e, i, ev)
        {
            if (!item_equal(ev, json_array_get(a, i)))
                return 0;
        }
        return 1;
    case JSON_STRING:
        return json_string_length(e) == json_string_length(a) &&
               memcmp(json_string_value(e), json_string_value(a),
                      json_string_length(e)) == 0;
    default:
        return json_equal((json_t *)e, (json_t *)a);
    }
}

static int64_t after_of(const json_t *item)
{
    return (int64_t)json_integer_value(json_object_get(item, "after"));
}

static int is_watermark(const json_t *item)
{
    return json_object_get(item, "watermark") != NULL;
}

/* Watermarks and statuses: ordered among themselves. */
static int is_progress(const json_t *item)
{
    return is_watermark(item) || json_object_get(item, "status") != NULL;
}

/* Which kind of data item (result, late, join, other) for "got" hints. */
static int data_kind(const json_t *item)
{
    if (json_object_get(item, "late"))
        return 1;
    if (json_object_get(item, "left"))
        return 2;
    if (json_object_get(item, "window"))
        return 0;
    return 3;
}

/* ---------------------------------------------------------------------- */
/* Group comparison                                                        */
/* ---------------------------------------------------------------------- */

struct entry {
    const json_t *item;
    int progress; /* watermark or status */
    int seg;      /* watermarks before it in its own list */
    int match;    /* data: index of the matched entry on the other side,
                     -1 if none */
};

/* Fills entries for the items of @p list whose after is @p after. */
static size_t collect(const json_t *list, int64_t after, struct entry *out)
{
    const json_t *item;
    size_t i, n = 0;
    int seg = 0;

    json_array_foreach(list, i, item)
    {
        if (after_of(item) != after)
            continue;
        out[n].item = item;
        out[n].progress = is_progress(item);
        out[n].seg = seg;
        out[n].match = -1;
        if (is_watermark(item))
            seg++;
        n++;
    }
    return n;
}

/*
** Writes "after input N: " and then @p fmt, whose %s conversions take the
** renderings of @p x, @p y and @p z in that order (NULL renders as "";
** unused ones are ignored).  Returns -1.
*/
static int report(char *why, size_t why_size, int64_t after, const char *fmt,
                  const json_t *x, const json_t *y, const json_t *z)
{
    char *r[3] = {NULL, NULL, NULL};
    const json_t *items[3] = {x, y, z};
    size_t used;
    int i;

    for (i = 0; i < 3; i++)
        r[i] = items[i] ? conf_render(items[i]) : NULL;
    if (after < 0)
        snprintf(why, why_size, "before the first input: ");
    else
        snprintf(why, why_size, "after input %lld: ", (long long)after);
    used = strlen(why);
    snprintf(why + used, why_size - used, fmt, r[0] ? r[0] : "",
             r[1] ? r[1] : "", r[2] ? r[2] : "");
    for (i = 0; i < 3; i++)
        conf_render_free(r[i]);
    return -1;
}

/* The @p k-th watermark (from 0) among @p n entries. */
static const json_t *nth_watermark(const struct entry *en, size_t n, int k)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (is_watermark(en[i].item) && k-- == 0)
            return en[i].item;
    }
    return NULL;
}

/* Compares one "after" group.  @p E and @p A have room for the group. */
static int compare_group(const json_t *expected, const json_t *actual,
                         int64_t after, struct entry *E, struct entry *A,
                         char *why, size_t why_size)
{
    size_t ne = collect(expected, after, E);
    size_t na = collect(actual, after, A);
    size_t i, j, n_progress = 0, p_act = 0;
    int pass;

    /* Match data items: first with the same segment (same side of every
    ** watermark of the group), then anywhere (reported as misplaced). */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < ne; i++) {
            if (E[i].progress || E[i].match >= 0)
                continue;
            for (j = 0; j < na; j++) {
                if (A[j].progress || A[j].match >= 0)
                    continue;
                if ((pass == 1 || A[j].seg == E[i].seg) &&
                    item_equal(E[i].item, A[j].item)) {
                    E[i].match = (int)j;
                    A[j].match = (int)i;
                    break;
                }
            }
        }
    }

    /* Walk the expected items in listed order. */
    for (i = 0; i < ne; i++) {
        const struct entry *a;

        if (E[i].progress) {
            /* Watermarks and statuses: the next actual one must equal. */
            while (p_act < na && !A[p_act].progress)
                p_act++;
            if (p_act == na)
                return report(why, why_size, after,
                              "expected %s but got nothing", E[i].item, NULL,
                              NULL);
            if (!item_equal(E[i].item, A[p_act].item))
                return report(why, why_size, after, "expected %s but got %s",
                              E[i].item, A[p_act].item, NULL);
            p_act++;
            n_progress++;
            continue;
        }
        if (E[i].match < 0) {
            /* Show the first unmatched actual item of the same kind. */
            for (j = 0; j < na; j++) {
                if (!A[j].progress && A[j].match < 0 &&
                    data_kind(A[j].item) == data_kind(E[i].item))
                    return report(why, why_size, after,
                                  "expected %s but got %s", E[i].item,
                                  A[j].item, NULL);
            }
            return report(why, why_size, after, "expected %s but got nothing",
                          E[i].item, NULL, NULL);
        }
        a = &A[E[i].match];
        if (a->seg > E[i].seg)
            /* Emitted after a watermark it should precede.  Every expected
            ** watermark before E[i] matched, so that one exists. */
            return report(why, why_size, after,
                          "expected %s before %s but got it after", E[i].item,
                          nth_watermark(A, na, E[i].seg), NULL);
        if (a->seg < E[i].seg)
            return report(why, why_size, after,
                          "expected %s after %s but got it before", E[i].item,
                          nth_watermark(A, na, a->seg), NULL);
    }
    /* Anything emitted that the vector does not list, in emission order. */
    for (j = 0, i = 0; j < na; j++) {
        if (A[j].progress ? i++ >= n_progress : A[j].match < 0)
            return report(why, why_size, after, "unexpected %s", A[j].item,
                          NULL, NULL);
    }
    return 0;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

    return (a > b) - (a < b);
}

/* Compares two lists in order (source and coordinator vectors). */
static int compare_ordered(const json_t *expected, const json_t *actual,
                           char *why, size_t why_size)
{
    size_t ne = json_array_size(expected), na = json_array_size(actual);
    size_t i;

    for (i = 0; i < ne || i < na; i++) {
        const json_t *e = json_array_get(expected, i);
        const json_t *a = json_array_get(actual, i);

        if (!a)
            return report(why, why_size, after_of(e),
                          "expected %s but got nothing", e, NULL, NULL);
        if (!e)
            return report(why, why_size, after_of(a), "unexpected %s", a, NULL,
                          NULL);
        if (after_of(e) == after_of(a)) {
            if (!item_equal(e, a))
                return report(why, why_size, after_of(e),
                              "expected %s but got %s", e, a, NULL);
            continue;
        }
        /* Emitted at another step (the same item or another one). */
        {
            char *re = conf_render(e), *ra = conf_render(a);

            if (item_equal(e, a))
                snprintf(why, why_size,
                         "expected %s after input %lld but got it after "
                         "input %lld",
                         re, (long long)after_of(e), (long long)after_of(a));
            else
                snprintf(why, why_size,
                         "expected %s after input %lld but got %s after "
                         "input %lld",
                         re, (long long)after_of(e), ra,
                         (long long)after_of(a));
            conf_render_free(re);
            conf_render_free(ra);
            return -1;
        }
    }
    return 0;
}

/* See conformance.h.  Window and join vectors are compared per "after"
** group in ascending order; source and coordinator vectors in order. */
int conf_compare(const struct conf_vector *v, const json_t *actual, char *why,
                 size_t why_size)
{
    size_t ne = json_array_size(v->expected), na = json_array_size(actual);
    int64_t *afters;
    struct entry *E, *A;
    size_t i, n = 0;
    int rc = 0;

    if (v->pipe == PIPE_SOURCE || v->pipe == PIPE_COORD)
        return compare_ordered(v->expected, actual, why, why_size);

    /* Every distinct "after", ascending. */
    afters = malloc((ne + na + 1) * sizeof(*afters));
    E = malloc((ne + 1) * sizeof(*E));
    A = malloc((na + 1) * sizeof(*A));
    if (!afters || !E || !A) {
        rc = set_why(why, why_size, "out of memory");
        goto done;
    }
    for (i = 0; i < ne; i++)
        afters[n++] = after_of(json_array_get(v->expected, i));
    for (i = 0; i < na; i++)
        afters[n++] = after_of(json_array_get(actual, i));
    qsort(afters, n, sizeof(*afters), cmp_i64);
    for (i = 0; i < n && rc == 0; i++) {
        if (i > 0 && afters[i] == afters[i - 1])
            continue;
        rc = compare_group(v->expected, actual, afters[i], E, A, why, why_size);
    }
done:
    free(afters);
    free(E);
    free(A);
    return rc;
}
