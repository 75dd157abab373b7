/* SPDX-License-Identifier: MIT */
/* cmd_set.c - `tidemark set URL KEY=VALUE...`: changes live settings of a
 * job served by `tidemark run --http` (PATCH /jobs/:id/config, through
 * the commands' HTTP client, cli_http.h), then prints what stands.  The
 * server checks every setting before it applies any: a refused one
 * changes nothing, and its reason is printed.
 *
 * Exit codes: 0 applied, 1 the server could not be reached or refused
 * (the reason printed: a bad key or value, a key that cannot change
 * while the job runs), 2 usage.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "cli_http.h"

#define SET_CMD "tidemark set"

/* The command line. */
typedef struct set_opts {
    const char *url, *job, *token;
    int json, timeout_s, help;
    json_t *body; /* the KEY=VALUE pairs as a JSON object */
} set_opts;

/* Adds KEY=VALUE @p arg to the body; TDM_EXIT_USAGE when it is not one. */
static int add_pair(set_opts *o, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg || eq[1] == '\0') {
        fprintf(stderr,
                SET_CMD ": expected KEY=VALUE, got \"%s\" (e.g. "
                        "sources.clicks.watermark.max_out_of_orderness=8s)\n",
                arg);
        return TDM_EXIT_USAGE;
    }
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
    if (json_object_set_new(o->body, key, json_string(eq + 1)) != 0) {
        fprintf(stderr, SET_CMD ": \"%s\" is not valid UTF-8\n", arg);
        return TDM_EXIT_USAGE;
    }
    return TDM_EXIT_OK;
}

/* The value of --timeout; TDM_EXIT_USAGE when it is no number of seconds
 * from 1 to 3600. */
static int timeout_of(const char *v, int *out)
{
    char *e;
    long t = strtol(v, &e, 10);
    if (*e || t < 1 || t > 3600) {
        fprintf(stderr,
                SET_CMD ": --timeout: expected seconds from 1 to 3600, got "
                        "\"%s\"\n",
                v);
        return TDM_EXIT_USAGE;
    }
    *out = (int)t;
    return TDM_EXIT_OK;
}

/* One argument that is not an option: the URL first, then pairs. */
static int positional(set_opts *o, const char *arg)
{
    if (o->url == NULL) {
        o->url = arg;
        return TDM_EXIT_OK;
    }
    return add_pair(o, arg);
}

static int parse_opts(int argc, char **argv, set_opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], *v;
        int missing = 0, rc = TDM_EXIT_OK;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
            o->help = 1;
        else if (strcmp(arg, "--json") == 0)
            o->json = 1;
        else if ((v = tdm__cli_opt_value(argc, argv, &i, "--job", &missing)))
            o->job = v;
        else if (!missing &&
                 (v = tdm__cli_opt_value(argc, argv, &i, "--token", &missing)))
            o->token = v;
        else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i,
                                                     "--timeout", &missing)))
            rc = timeout_of(v, &o->timeout_s);
        else if (missing || (arg[0] == '-' && arg[1] == '-')) {
            fprintf(stderr, SET_CMD ": %s %s (see `tidemark help set`)\n", arg,
                    missing ? "needs a value" : "is an unknown option");
            rc = TDM_EXIT_USAGE;
        } else
            rc = positional(o, arg);
        if (rc != TDM_EXIT_OK)
            return rc;
    }
    if (!o->help && (o->url == NULL || json_object_size(o->body) == 0)) {
        fprintf(stderr, SET_CMD ": expected URL KEY=VALUE... (see `tidemark "
                                "help set`)\n");
        return TDM_EXIT_USAGE;
    }
    return TDM_EXIT_OK;
}

/* Prints the settings of the GET/PATCH answer @p j, one per line. */
static void print_settings(const json_t *j)
{
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(j, "settings"), i, s)
    {
        const char *k = json_string_value(json_object_get(s, "key"));
        const char *v = json_string_value(json_object_get(s, "value"));
        const char *from = json_string_value(json_object_get(s, "origin"));
        printf("%s = %s (%s%s)\n", k ? k : "?", v ? v : "?", from ? from : "?",
               json_is_false(json_object_get(s, "applied")) ? ", being applied"
                                                            : "");
    }
}

/* PATCHes the body to the job and prints the answer. */
static int patch(const set_opts *o)
{
    tdm__cli_url u;
    char id[256], path[600] = "/jobs/";
    if (tdm__cli_url_parse(SET_CMD, o->url, &u) != 0)
        return TDM_EXIT_USAGE;
    int rc =
        tdm__cli_pick_job(&u, o->job, o->token, o->timeout_s, id, sizeof id);
    if (rc != TDM_EXIT_OK)
        return rc;
    if (tdm__cli_pct_append(path, sizeof path, id) != 0 ||
        strlen(path) + sizeof "/config" > sizeof path) {
        fprintf(stderr, SET_CMD ": job id too long\n");
        return TDM_EXIT_USAGE;
    }
    strcat(path, "/config");
    char *body = json_dumps(o->body, JSON_COMPACT), *raw = NULL;
    tdm__cli_req q = {"PATCH", path, o->token, body, o->timeout_s};
    json_t *j = body ? tdm__cli_http_json(&u, &q, &raw) : NULL;
    free(body);
    if (j == NULL) {
        free(raw);
        return TDM_EXIT_RUNTIME;
    }
    if (o->json)
        printf("%s\n", raw);
    else
        print_settings(j);
    free(raw);
    json_decref(j);
    return TDM_EXIT_OK;
}

int tdm__cli_cmd_set(int argc, char **argv)
{
    set_opts o = {.timeout_s = 10, .body = json_object()};
    if (o.body == NULL) {
        fprintf(stderr, SET_CMD ": out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    int rc = parse_opts(argc, argv, &o);
    if (rc == TDM_EXIT_OK && o.help)
        rc = tdm__cli_help("set", stdout);
    else if (rc == TDM_EXIT_OK)
        rc = patch(&o);
    json_decref(o.body);
    return rc;
}
