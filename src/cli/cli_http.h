/* SPDX-License-Identifier: MIT */
/* cli_http.h - the commands' HTTP client (cli_http.c): `tidemark
 * diagnose` GETs from a job's server, `tidemark set` PATCHes its live
 * settings. */
#ifndef TDM_CLI_HTTP_H
#define TDM_CLI_HTTP_H

#include <jansson.h>

/* The parts of "http://host:port/prefix" the client needs. */
typedef struct tdm__cli_url {
    const char *cmd;    /* "tidemark diagnose": the messages' prefix */
    char host[256];     /* without IPv6 brackets */
    char hostport[300]; /* as written, for the Host header and messages */
    char port[16];
    char prefix[512]; /* path prefix without the trailing '/' */
} tdm__cli_url;

/* One request. */
typedef struct tdm__cli_req {
    const char *method; /* "GET", "PATCH" */
    const char *path;   /* after the URL's prefix, query included */
    const char *token;  /* bearer token, or NULL */
    const char *body;   /* a JSON body (sent with X-Tidemark-Origin: cli),
                           or NULL */
    int timeout_s;
} tdm__cli_req;

/* Parses @p text ("http://127.0.0.1:8081", "127.0.0.1:8081/",
 * "http://[::1]:8081/base") for command @p cmd.  Returns 0, or -1 with a
 * message on stderr. */
int tdm__cli_url_parse(const char *cmd, const char *text, tdm__cli_url *u);

/* Appends @p s percent-encoded (everything but unreserved characters) to
 * the string in @p buf (@p n bytes).  0, or -1 when it does not fit. */
int tdm__cli_pct_append(char *buf, size_t n, const char *s);

/* Sends @p q and parses the JSON answer.  A non-200 answer is reported
 * with the server's {"error": ...} message.  Returns the JSON (caller
 * decrefs) or NULL; *raw receives the body text when not NULL. */
json_t *tdm__cli_http_json(const tdm__cli_url *u, const tdm__cli_req *q,
                           char **raw);

/* The job to talk to: @p want when given, else the server's only one
 * (GET /jobs), into @p id.  TDM_EXIT_OK, or TDM_EXIT_RUNTIME with a
 * message (the server has several: --job). */
int tdm__cli_pick_job(const tdm__cli_url *u, const char *want,
                      const char *token, int timeout_s, char *id, size_t n);

#endif /* TDM_CLI_HTTP_H */
