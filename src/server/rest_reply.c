/* SPDX-License-Identifier: MIT */
/* rest_reply.c - the REST routes' replies as JSON: an answer, or an
 * error {"error": "..."} with its status (server.h).  Shared by rest.c
 * and rest_config.c, below both.
 */
#include "core.h"
#include "server/server.h"

/* An error reply (see server.h).  The message is plain text of the
 * server's own or an id the router checked to be valid UTF-8. */
void tdm__rest_error(tdm__reply *out, int status, const char *msg)
{
    json_t *j = json_object();
    size_t n;
    out->status = status;
    out->type = "application/json";
    out->body = NULL;
    out->len = 0;
    if (j == NULL)
        return;
    if (json_object_set_new(j, "error", json_string(msg)) != 0 &&
        json_object_set_new(j, "error", json_string("invalid request")) != 0) {
        json_decref(j);
        return;
    }
    n = json_dumpb(j, NULL, 0, JSON_COMPACT);
    out->body = tdm__malloc(n + 1);
    if (out->body != NULL) {
        json_dumpb(j, out->body, n, JSON_COMPACT);
        out->body[n] = '\n';
        out->len = n + 1;
    }
    json_decref(j);
}

/* Replies with @p j (taken) and @p status; NULL means out of memory. */
void tdm__rest_reply_json(tdm__reply *out, int status, json_t *j)
{
    size_t n;
    if (j == NULL) {
        tdm__rest_error(out, 500, "out of memory");
        return;
    }
    n = json_dumpb(j, NULL, 0, JSON_COMPACT);
    out->body = n > 0 ? tdm__malloc(n + 1) : NULL;
    if (out->body == NULL) {
        json_decref(j);
        tdm__rest_error(out, 500, "out of memory");
        return;
    }
    json_dumpb(j, out->body, n, JSON_COMPACT);
    out->body[n] = '\n';
    out->len = n + 1;
    out->status = status;
    out->type = "application/json";
    json_decref(j);
}
