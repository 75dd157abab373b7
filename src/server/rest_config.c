/* SPDX-License-Identifier: MIT */
/* rest_config.c - the live settings routes (docs/rest-api.md, "Live
 * settings"): GET /jobs/:id/config shows every live setting of the job
 * and its last changes; PATCH /jobs/:id/config changes some.  Both sit
 * on the public API (tdm_job_config_*), which every door shares:
 * `tidemark set` is a client of PATCH, and the config.watch file goes
 * straight to it.
 *
 * Rules:
 *   R-RC-1  A PATCH body is one JSON object of dotted keys; a value is a
 *           duration as text ("8s") or a whole number of ms.  Anything
 *           else is 400, naming what was wrong.
 *   R-RC-2  Every key is checked before any is applied: a body with one
 *           bad key changes nothing.  400 for an unknown key or a bad
 *           value, 409 for a key that cannot change while the job runs
 *           (or a job that does not run), with the runtime's reason.
 *   R-RC-3  The answer to a PATCH that applied is the GET answer.
 */
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "server/server.h"

/* One setting as JSON. */
static json_t *setting_json(const tdm_live_setting *s)
{
    return json_pack(
        "{s:s, s:s, s:I, s:s, s:o, s:I, s:b}", "key", s->key, "value", s->value,
        "valueMs", (json_int_t)s->value_ms, "origin", s->origin, "changedAt",
        s->changed_at == TDM_TIME_MIN ? json_null()
                                      : json_integer(s->changed_at),
        "changes", (json_int_t)s->changes, "applied", s->applied);
}

/* One remembered change as JSON. */
static json_t *change_json(const tdm_live_change *c)
{
    return json_pack("{s:I, s:s, s:s, s:s, s:s}", "at", (json_int_t)c->at,
                     "key", c->key, "from", c->from, "to", c->to, "origin",
                     c->origin);
}

/* The GET answer, or NULL when memory is short. */
static json_t *config_json(tdm_job *job)
{
    json_t *settings = json_array(), *changes = json_array();
    json_t *root =
        json_pack("{s:o, s:o}", "settings", settings, "changes", changes);
    if (!root)
        return NULL;
    for (size_t i = 0; i < tdm_job_config_count(job); i++) {
        tdm_live_setting s;
        if (tdm_job_config_get(job, i, &s) == TDM_OK &&
            json_array_append_new(settings, setting_json(&s)) != 0)
            goto fail;
    }
    for (size_t i = 0; i < tdm_job_config_change_count(job); i++) {
        tdm_live_change c;
        if (tdm_job_config_change(job, i, &c) == TDM_OK &&
            json_array_append_new(changes, change_json(&c)) != 0)
            goto fail;
    }
    return root;
fail:
    json_decref(root);
    return NULL;
}

void tdm__rest_config_get(const tdm__rest_ctx *ctx, tdm__reply *out)
{
    tdm__rest_reply_json(out, 200, config_json(ctx->job));
}

/* The text of value @p v of key @p key into @p buf (R-RC-1); false with
 * a 400 in *out. */
static bool value_text(const char *key, json_t *v, char *buf, size_t n,
                       tdm__reply *out)
{
    char msg[400];
    if (json_is_string(v)) {
        snprintf(buf, n, "%s", json_string_value(v));
        return true;
    }
    if (json_is_integer(v)) {
        snprintf(buf, n, "%lldms", (long long)json_integer_value(v));
        return true;
    }
    snprintf(msg, sizeof msg,
             "%s: the value must be a duration as text (\"8s\") or a whole "
             "number of milliseconds",
             key);
    tdm__rest_error(out, 400, msg);
    return false;
}

/* The status of a refusal of the runtime (R-RC-2). */
static int refusal_status(tdm_err e)
{
    return e == TDM_ERR_UNSUPPORTED || e == TDM_ERR_STATE ? 409 : 400;
}

/* Checks (apply false) or applies every member of @p obj; false with the
 * reply set at the first refusal. */
static bool each_member(tdm_job *job, json_t *obj, bool apply,
                        const char *origin, tdm__reply *out)
{
    const char *key;
    json_t *v;
    char val[64], err[512];
    json_object_foreach(obj, key, v)
    {
        if (!value_text(key, v, val, sizeof val, out))
            return false;
        tdm_err e =
            apply ? tdm_job_config_set(job, key, val, origin, err, sizeof err)
                  : tdm_job_config_check(job, key, val, err, sizeof err);
        if (e != TDM_OK) {
            tdm__rest_error(out, refusal_status(e), err);
            return false;
        }
    }
    return true;
}

/* The door named by the X-Tidemark-Origin header: 1 to 15 lower-case
 * letters, digits or '-'; "rest" otherwise. */
static const char *door_name(const char *origin)
{
    size_t n = origin ? strlen(origin) : 0;
    if (n == 0 || n > 15 ||
        strspn(origin, "abcdefghijklmnopqrstuvwxyz"
                       "0123456789-") != n)
        return "rest";
    return origin;
}

void tdm__rest_config_patch(const tdm__rest_ctx *ctx, const char *body,
                            size_t len, const char *origin, tdm__reply *out)
{
    json_error_t jerr;
    char msg[400];
    json_t *obj =
        body ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (!obj || !json_is_object(obj) || json_object_size(obj) == 0) {
        snprintf(msg, sizeof msg,
                 "the body must be a non-empty JSON object of settings, "
                 "e.g. {\"sources.clicks.watermark.max_out_of_orderness\": "
                 "\"8s\"}%s%s",
                 obj ? "" : ": ", obj ? "" : jerr.text);
        json_decref(obj);
        tdm__rest_error(out, 400, msg);
        return;
    }
    const char *door = door_name(origin);
    if (each_member(ctx->job, obj, false, door, out) &&
        each_member(ctx->job, obj, true, door, out))
        tdm__rest_config_get(ctx, out);
    json_decref(obj);
}
