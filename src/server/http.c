/* SPDX-License-Identifier: MIT */
/* http.c - the embedded HTTP server: a libmicrohttpd daemon with a
 * thread per connection, so a slow request (a window question waits up
 * to 2 s) never holds up another; every answer comes from a snapshot,
 * so nothing here waits on the pipeline.  Here: the listen address, the
 * bearer token (compared in constant time), routing of the raw request
 * target (router.c), rendering (rest.c, prom.c, the page), the headers
 * of every reply, and the history sampler's start.
 *
 * What keeps the server answering (docs/rest-api.md, "Limits"): at most
 * 128 connections, at most 64 of them from one client address, so one
 * client cannot take every connection; and a connection gets
 * http.header_timeout to send each request (deadline.c), so clients
 * trickling headers cannot hold their connections for long.  Requests
 * naming a foreign Host get 403 (host.c: DNS rebinding). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "core.h"
#include "server/server.h"

#define HTTP_MAX_CONNECTIONS 128u
/* Half of them: a single client address never takes them all. */
#define HTTP_MAX_PER_CLIENT 64u
/* The longest token a request can carry within the memory limit, with
 * room to spare for the other headers. */
#define HTTP_MAX_TOKEN 4096u
#define HTTP_TIMEOUT_S 10u
/* Request line plus headers of one connection must fit in this. */
#define HTTP_MEMORY_LIMIT ((size_t)32 * 1024)

/* A served job: the request threads' view of it (ctx) and how many of
 * them use it now.  A task's job leaves the server when its host stops
 * the task: it is unlinked, then freed once no request uses it. */
typedef struct served {
    tdm__rest_ctx ctx; /* ctx.name and ctx.hist are the entry's own */
    int refs;
    struct served *next;
} served;

struct tdm_http {
    struct MHD_Daemon *d;
    tdm_job *job;       /* the job, or a task host's definition */
    char *name;         /* its name at start: the job id, or the host's */
    tdm_taskhost *host; /* a task host's server: its tasks are served */
    pthread_mutex_t mu; /* jobs and every entry's refs */
    pthread_cond_t cv;  /* an entry's refs fell */
    served *jobs;       /* in task order */
    char *token;        /* NULL: no authentication */
    size_t token_len;
    int port;
    tdm__deadline *deadline;
    char *allow; /* http.allowed_hosts (copied) */
    tdm__host_rule hosts;
};

/* What the server keeps per request: the request target exactly as the
 * client sent it (libmicrohttpd hands the handler a percent-decoded
 * path, in which "a%2Fb" and "a/b" can no longer be told apart). */
typedef struct http_req {
    char *target;
    int answered;
    /* A PATCH's body, gathered over the calls that bring it (at most
     * HTTP_MAX_BODY bytes; too_big past that). */
    int in_body;
    char *body;
    size_t body_len;
    int too_big;
} http_req;

/* The largest request body taken (PATCH /jobs/:id/config). */
#define HTTP_MAX_BODY 16384

/* ---- The address ---- */

/* Parses "HOST:PORT" (see tdm_http_start) into *ss / *len.  HOST is an
 * IPv4 literal, "localhost", an IPv6 literal in brackets, or empty
 * (loopback).  No name lookups: the server binds where it is told. */
static tdm_err parse_address(const char *addr, struct sockaddr_storage *ss,
                             socklen_t *len, int *v6, char *errbuf,
                             size_t errbuf_size)
{
    char host[64];
    const char *port_s, *colon;
    size_t hlen;
    long port = 0;

    memset(ss, 0, sizeof *ss);
    *v6 = 0;
    if (addr == NULL || addr[0] == '\0')
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "address: expected HOST:PORT such as "
                         "\"127.0.0.1:8081\", \"[::1]:8081\" or \":8081\", "
                         "got nothing");
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (close == NULL || close[1] != ':')
            goto bad;
        hlen = (size_t)(close - addr - 1);
        if (hlen == 0 || hlen >= sizeof host)
            goto bad;
        memcpy(host, addr + 1, hlen);
        host[hlen] = '\0';
        port_s = close + 2;
        *v6 = 1;
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL)
            goto bad;
        hlen = (size_t)(colon - addr);
        if (hlen >= sizeof host || memchr(addr, ':', hlen) != NULL)
            goto bad;
        memcpy(host, addr, hlen);
        host[hlen] = '\0';
        port_s = colon + 1;
    }
    if (port_s[0] == '\0' || strlen(port_s) > 5)
        goto bad;
    for (const char *p = port_s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            goto bad;
        port = port * 10 + (*p - '0');
    }
    if (port > 65535)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "address \"%s\": port %ld is above 65535", addr, port);
    if (*v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            goto bad;
        *len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (host[0] == '\0' || strcmp(host, "localhost") == 0)
            strcpy(host, "127.0.0.1");
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
            goto bad;
        *len = sizeof *a;
    }
    return TDM_OK;
bad:
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                     "address \"%s\": expected HOST:PORT such as "
                     "\"127.0.0.1:8081\", \"[::1]:8081\" or \":8081\" "
                     "(HOST an IP address, PORT 0-65535)",
                     addr);
}

/* Why binding @p ss failed, found by trying it: libmicrohttpd only says
 * that it could not start.  Fills errbuf; returns TDM_ERR_IO. */
static tdm_err bind_error(const char *addr, const struct sockaddr_storage *ss,
                          socklen_t len, char *errbuf, size_t errbuf_size)
{
    int fd = socket(ss->ss_family, SOCK_STREAM, 0), one = 1, e = 0;
    if (fd < 0) {
        e = errno;
    } else {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (const struct sockaddr *)ss, len) != 0 ||
            listen(fd, 1) != 0)
            e = errno;
        close(fd);
    }
    if (e != 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot listen on %s: %s", addr, strerror(e));
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                     "cannot listen on %s: the HTTP server did not start",
                     addr);
}

/* ---- The served jobs ---- */

/* Now, in epoch ms. */
static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Frees entry @p e (unlinked, unused): its sampler stops first. */
static void served_free(served *e)
{
    if (e == NULL)
        return;
    tdm__history_free(e->ctx.hist);
    tdm__free((char *)e->ctx.name);
    tdm__free(e);
}

/* Serves @p job as @p name (task @p task, -1 for none, with its owner
 * @p epoch): a history with its sampler, linked in task order.  TDM_OK or
 * TDM_ERR_NOMEM. */
static tdm_err serve_job(tdm_http *s, tdm_job *job, const char *name, int task,
                         int64_t epoch)
{
    served *e = tdm__calloc(1, sizeof *e), **at;
    tdm_err err = TDM_ERR_NOMEM;
    if (e == NULL)
        return err;
    e->ctx.job = job;
    e->ctx.task = task;
    e->ctx.epoch = epoch;
    e->ctx.since_ms = wall_ms();
    e->ctx.name = tdm__strndup(name, strlen(name));
    if (e->ctx.name != NULL)
        err = tdm__history_new(job, &e->ctx.hist);
    if (err == TDM_OK)
        err = tdm__history_start(e->ctx.hist, 1000);
    if (err != TDM_OK) {
        served_free(e);
        return err;
    }
    pthread_mutex_lock(&s->mu);
    for (at = &s->jobs; *at != NULL && (*at)->ctx.task < task;)
        at = &(*at)->next;
    e->next = *at;
    *at = e;
    pthread_mutex_unlock(&s->mu);
    return TDM_OK;
}

/* Stops serving task @p task (every task when -2): unlinks its entry,
 * waits until no request uses it, frees it. */
static void unserve(tdm_http *s, int task)
{
    for (;;) {
        served *e = NULL, **at;
        pthread_mutex_lock(&s->mu);
        for (at = &s->jobs; *at != NULL; at = &(*at)->next)
            if (task == -2 || (*at)->ctx.task == task)
                break;
        if ((e = *at) != NULL) {
            *at = e->next;
            while (e->refs > 0)
                pthread_cond_wait(&s->cv, &s->mu);
        }
        pthread_mutex_unlock(&s->mu);
        if (e == NULL)
            return;
        served_free(e);
    }
}

/* The host's word on task @p task (tdm_taskhost_watch): served from
 * the start of its job to its end.  A task that cannot be served for
 * want of memory runs unserved. */
static void on_task(void *ud, int task, tdm_job *job, int64_t epoch)
{
    tdm_http *s = ud;
    char name[200];
    if (job == NULL) {
        unserve(s, task);
        return;
    }
    snprintf(name, sizeof name, "%s.task-%d", s->name, task);
    (void)serve_job(s, job, name, task, epoch);
}

/* Pins every served job for one request into *set (an array the caller
 * frees with unpin).  false on NOMEM. */
static bool pin(tdm_http *s, tdm__rest_set *set, served ***pinned)
{
    size_t n = 0, i = 0;
    pthread_mutex_lock(&s->mu);
    for (served *e = s->jobs; e != NULL; e = e->next)
        n++;
    tdm__rest_ctx *ctx = tdm__calloc(n ? n : 1, sizeof *ctx);
    *pinned = tdm__calloc(n ? n : 1, sizeof **pinned);
    if (ctx != NULL && *pinned != NULL)
        for (served *e = s->jobs; e != NULL; e = e->next, i++) {
            e->refs++;
            ctx[i] = e->ctx;
            (*pinned)[i] = e;
        }
    pthread_mutex_unlock(&s->mu);
    set->jobs = ctx;
    set->n = i;
    set->tasks = s->host != NULL;
    set->host = s->host != NULL ? s->name : NULL;
    set->restoring = NULL;
    set->n_restoring = 0;
    if (s->host != NULL) {
        /* A snapshot: tasks that end their restore between the two
         * calls are left out. */
        int k = tdm_taskhost_restoring(s->host, NULL, 0);
        tdm_task_restore *r = tdm__calloc((size_t)k + 1, sizeof *r);
        int got = r != NULL ? tdm_taskhost_restoring(s->host, r, k) : 0;
        set->restoring = r;
        set->n_restoring = (size_t)(got < k ? got : k);
    }
    return ctx != NULL && *pinned != NULL;
}

/* Ends a request's pin of @p set and @p pinned. */
static void unpin(tdm_http *s, tdm__rest_set *set, served **pinned)
{
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; pinned != NULL && i < set->n; i++)
        pinned[i]->refs--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    tdm__free((void *)set->jobs);
    tdm__free((void *)set->restoring);
    tdm__free(pinned);
}

/* ---- Requests ---- */

/* Called by libmicrohttpd with the request target before it decodes
 * it; the copy becomes the request's context. */
static void *on_target(void *cls, const char *uri, struct MHD_Connection *c)
{
    http_req *r = tdm__calloc(1, sizeof *r);
    (void)cls;
    (void)c;
    if (r == NULL)
        return NULL;
    r->target = tdm__strndup(uri, strlen(uri));
    return r;
}

/* The deadline watch of connection @p c (NULL when it has none). */
static tdm__deadline_conn *conn_watch(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}

/* A connection opened or closed: starts or ends its deadline watch,
 * which is its socket context. */
static void on_connection(void *cls, struct MHD_Connection *c,
                          void **socket_ctx,
                          enum MHD_ConnectionNotificationCode what)
{
    tdm_http *s = cls;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_ctx =
            tdm__deadline_open(s->deadline, ci != NULL ? ci->connect_fd : -1);
    } else {
        tdm__deadline_close(s->deadline, *socket_ctx);
        *socket_ctx = NULL;
    }
}

/* Frees the request's context once the reply is sent (or abandoned);
 * the connection's next request is due from now. */
static void on_done(void *cls, struct MHD_Connection *c, void **ctx,
                    enum MHD_RequestTerminationCode why)
{
    tdm_http *s = cls;
    http_req *r = *ctx;
    (void)why;
    tdm__deadline_rearm(s->deadline, conn_watch(c));
    if (r != NULL) {
        tdm__free(r->target);
        tdm__free(r->body);
        tdm__free(r);
        *ctx = NULL;
    }
}

/* Compares the Authorization header with "Bearer TOKEN" in time that
 * depends on the token's length only, never on where they differ.  The
 * scheme is matched without regard to case ("bearer", "BEARER"), as RFC
 * 7235 section 2.1 says of every auth-scheme; the token is exact. */
static int token_ok(const tdm_http *s, const char *header)
{
    volatile unsigned char diff = 0;
    size_t n;
    if (s->token == NULL)
        return 1;
    if (header == NULL || strncasecmp(header, "Bearer ", 7) != 0)
        return 0;
    header += 7;
    while (*header == ' ')
        header++;
    n = strlen(header);
    diff |= (unsigned char)(n != s->token_len);
    for (size_t i = 0; i < s->token_len; i++)
        diff |= (unsigned char)(s->token[i] ^ (i < n ? header[i] : 0));
    return diff == 0;
}

/* Queues @p rep (its body is handed over) with the headers every reply
 * carries. */
static enum MHD_Result send_reply(struct MHD_Connection *c, tdm__reply *rep,
                                  int persistent)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;
    int status = rep->status;

    if (rep->body == NULL) {
        resp = MHD_create_response_from_buffer(0, (void *)"",
                                               MHD_RESPMEM_PERSISTENT);
        status = 500;
    } else if (persistent) {
        resp = MHD_create_response_from_buffer(rep->len, rep->body,
                                               MHD_RESPMEM_PERSISTENT);
    } else {
        resp = MHD_create_response_from_buffer_with_free_callback(
            rep->len, rep->body, tdm__free);
        if (resp == NULL)
            tdm__free(rep->body);
    }
    rep->body = NULL;
    if (resp == NULL)
        return MHD_NO;
    if (rep->type != NULL && status != 500)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep->type);
    else
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (status == 405)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                rep->allow ? rep->allow : "GET, HEAD");
    if (status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"tidemark\"");
    ret = MHD_queue_response(c, (unsigned int)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Gathers a PATCH's body: true while more calls are to come (the first,
 * with the headers only, and one per piece of body); false on the last
 * call, when the request is answered. */
static bool gathering(http_req *r, const char *method, const char *data,
                      size_t *size)
{
    if (r == NULL || method == NULL || strcmp(method, "PATCH") != 0)
        return false;
    if (!r->in_body) {
        r->in_body = 1;
        return true;
    }
    if (*size == 0)
        return false;
    if (r->body_len + *size > HTTP_MAX_BODY) {
        r->too_big = 1;
    } else if (!r->too_big) {
        char *p = tdm__realloc(r->body, r->body_len + *size + 1);
        if (p == NULL) {
            r->too_big = 1;
        } else {
            memcpy(p + r->body_len, data, *size);
            r->body = p;
            r->body_len += *size;
            p[r->body_len] = '\0';
        }
    }
    *size = 0;
    return true;
}

/* PATCH /jobs/:id/config: the body gathered, the door named by the
 * X-Tidemark-Origin header ("cli" from tidemark set). */
static void patch_reply(const tdm__rest_set *set, const tdm__route *route,
                        struct MHD_Connection *c, const http_req *r,
                        tdm__reply *rep)
{
    const tdm__rest_ctx *ctx = tdm__rest_find_job(set, route->job, rep);
    if (ctx == NULL)
        return;
    if (r->too_big) {
        tdm__rest_error(rep, 413, "request body larger than 16 KiB");
        return;
    }
    tdm__rest_config_patch(
        ctx, r->body, r->body_len,
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Tidemark-Origin"),
        rep);
}

/* The access handler: one call per request (a PATCH's body is gathered
 * first; other bodies are ignored), the reply queued on that call. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **ctx)
{
    tdm_http *s = cls;
    http_req *r = *ctx;
    tdm__reply rep;
    tdm__route route;
    tdm__rest_set set;
    served **pinned = NULL;
    char path[2048];
    const char *target, *query;
    size_t plen;

    (void)version;
    if (r != NULL && !r->answered &&
        gathering(r, method, upload_data, upload_data_size))
        return MHD_YES;
    if (r != NULL && r->answered) {
        /* A body after the reply was queued: swallow it. */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r != NULL)
        r->answered = 1;
    tdm__deadline_met(s->deadline, conn_watch(c));
    memset(&rep, 0, sizeof rep);
    if (r == NULL || r->target == NULL) {
        tdm__rest_error(&rep, 500, "out of memory");
        return send_reply(c, &rep, 0);
    }
    target = r->target;
    (void)url;
    plen = strcspn(target, "?#");
    query = target[plen] == '?' ? target + plen + 1 : NULL;
    if (plen >= sizeof path) {
        tdm__rest_error(&rep, 414, "request target too long");
        return send_reply(c, &rep, 0);
    }
    memcpy(path, target, plen);
    path[plen] = '\0';
    tdm__route_parse(method, path, &route);
    if (!tdm__host_allowed(&s->hosts,
                           MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                       MHD_HTTP_HEADER_HOST))) {
        tdm__rest_error(&rep, 403,
                        "this server does not answer that Host "
                        "header (add the name to the job key "
                        "http.allowed_hosts)");
        return send_reply(c, &rep, 0);
    }
    /* The page is static and holds no data (it fetches everything from
     * the API with the token), so a browser can load it without one. */
    if (route.id != TDM__R_PAGE &&
        !token_ok(s, MHD_lookup_connection_value(
                         c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION))) {
        tdm__rest_error(&rep, 401,
                        "missing or wrong bearer token "
                        "(Authorization: Bearer TOKEN)");
        return send_reply(c, &rep, 0);
    }
    if (route.id == TDM__R_PAGE) {
        rep.status = 200;
        rep.type = "text/html; charset=utf-8";
        rep.body = (char *)tdm__web_index;
        rep.len = tdm__web_index_len;
        return send_reply(c, &rep, 1);
    }
    if (!pin(s, &set, &pinned))
        tdm__rest_error(&rep, 500, "out of memory");
    else if (route.patch)
        patch_reply(&set, &route, c, r, &rep);
    else
        tdm__rest_reply(&set, &route, query, &rep);
    unpin(s, &set, pinned);
    return send_reply(c, &rep, 0);
}

/* ---- Start and stop ---- */

/* Checks @p token: 1 to HTTP_MAX_TOKEN bytes of printable ASCII without
 * spaces, since anything else could never arrive intact in a header
 * (a token of "" would lock every client out).  TDM_OK or TDM_ERR_INVAL
 * with a message. */
static tdm_err check_token(const char *token, char *errbuf, size_t errbuf_size)
{
    size_t n = strlen(token);
    if (n == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "bearer token: empty");
    if (n > HTTP_MAX_TOKEN)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "bearer token: longer than %u bytes", HTTP_MAX_TOKEN);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)token[i] <= ' ' || (unsigned char)token[i] > '~')
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "bearer token: byte %zu is a space, a control "
                             "character or not ASCII (a token is printable "
                             "ASCII without spaces)",
                             i + 1);
    return TDM_OK;
}

/* What the job says of the server: the header deadline and the allowed
 * Host names (copied: the job's keys may change while it serves). */
static tdm_err take_job_keys(tdm_http *s, const struct sockaddr_storage *ss)
{
    const char *allow = tdm_job_get(s->job, "http.allowed_hosts");
    if (allow == NULL)
        allow = "";
    s->allow = tdm__strndup(allow, strlen(allow));
    if (s->allow == NULL)
        return TDM_ERR_NOMEM;
    tdm__host_rule_init(&s->hosts, ss, s->allow);
    return tdm__deadline_new(tdm_job_get_int(s->job, "http.header_timeout"),
                             &s->deadline);
}

/* A server for @p job (a job, or a task host's definition) on
 * @p address, with @p token: checked, allocated, listening.  Serves no
 * job yet.  TDM_OK with *out set, or an error with its message. */
static tdm_err start_server(tdm_job *job, const char *address,
                            const char *token, tdm_http **out, char *errbuf,
                            size_t errbuf_size)
{
    struct sockaddr_storage ss;
    socklen_t slen = 0;
    int v6 = 0;
    const union MHD_DaemonInfo *info;
    const char *name;
    tdm_http *s = NULL;
    tdm_err err;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD |
                         MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;

    if (out != NULL)
        *out = NULL;
    if (job == NULL || out == NULL)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s must not be NULL", job == NULL ? "job" : "out");
    err = parse_address(address, &ss, &slen, &v6, errbuf, errbuf_size);
    if (err == TDM_OK && token != NULL)
        err = check_token(token, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    s = tdm__calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->job = job;
    name = tdm_job_get(job, "name");
    if (name == NULL || name[0] == '\0')
        name = "job";
    s->name = tdm__strndup(name, strlen(name));
    if (s->name == NULL)
        goto nomem;
    if (token != NULL) {
        s->token_len = strlen(token);
        s->token = tdm__strndup(token, s->token_len);
        if (s->token == NULL)
            goto nomem;
    }
    if (take_job_keys(s, &ss) != TDM_OK)
        goto nomem;
    if (v6)
        flags |= MHD_USE_IPv6;
    s->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
        HTTP_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        HTTP_MAX_PER_CLIENT, MHD_OPTION_CONNECTION_TIMEOUT, HTTP_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_MEMORY_LIMIT,
        MHD_OPTION_URI_LOG_CALLBACK, on_target, s, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, s, MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
        MHD_OPTION_END);
    if (s->d == NULL) {
        err = bind_error(address, &ss, slen, errbuf, errbuf_size);
        goto fail;
    }
    info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL ? (int)info->port : 0;
    *out = s;
    return TDM_OK;
nomem:
    err = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                    "out of memory starting the HTTP server");
fail:
    tdm_http_stop(s);
    return err;
}

/* Starts the server of one job (see tidemark.h). */
tdm_err tdm_http_start(tdm_job *job, const char *address, const char *token,
                       tdm_http **out, char *errbuf, size_t errbuf_size)
{
    tdm_err err = start_server(job, address, token, out, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    if (serve_job(*out, job, (*out)->name, -1, 0) != TDM_OK) {
        tdm_http_stop(*out);
        *out = NULL;
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "out of memory starting the HTTP server");
    }
    return TDM_OK;
}

/* Starts the server of a task host (see tidemark.h): its tasks come and
 * go through the host's watcher. */
tdm_err tdm_http_start_tasks(tdm_taskhost *host, tdm_job *def,
                             const char *address, const char *token,
                             tdm_http **out, char *errbuf, size_t errbuf_size)
{
    if (host == NULL)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "host must not be NULL");
    tdm_err err = start_server(def, address, token, out, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    (*out)->host = host;
    tdm_taskhost_watch(host, on_task, *out);
    return TDM_OK;
}

/* The port the server listens on (see tidemark.h). */
int tdm_http_port(const tdm_http *srv)
{
    return srv != NULL ? srv->port : -1;
}

/* Stops the server: no new connections, open ones finish their reply,
 * then the sampler stops (see tidemark.h).  Accepts a half-built server
 * from tdm_http_start's failure path. */
void tdm_http_stop(tdm_http *srv)
{
    if (srv == NULL)
        return;
    if (srv->d != NULL)
        MHD_stop_daemon(srv->d);
    if (srv->host != NULL)
        tdm_taskhost_watch(srv->host, NULL, NULL);
    unserve(srv, -2);
    tdm__deadline_free(srv->deadline);
    tdm__free(srv->allow);
    tdm__free(srv->token);
    tdm__free(srv->name);
    pthread_cond_destroy(&srv->cv);
    pthread_mutex_destroy(&srv->mu);
    tdm__free(srv);
}
