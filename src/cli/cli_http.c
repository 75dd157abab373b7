/* SPDX-License-Identifier: MIT */
/* cli_http.c - the commands' small HTTP/1.1 client on POSIX sockets
 * (cli_http.h): URLs, one request per connection (GET, or PATCH with a
 * JSON body), Content-Length and chunked answers, timeouts; so that
 * `tidemark diagnose` and `tidemark set` need nothing but the C library
 * and jansson.  Every message names the command (u->cmd).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_http.h"

/* Largest response body accepted (a diagnosis is a few KB). */
#define DG_MAX_BODY (64u << 20)

/* ====================================================================== */
/* URLs                                                                    */
/* ====================================================================== */

/* Parses @p text ("http://127.0.0.1:8081", "127.0.0.1:8081/",
 * "http://[::1]:8081/base").  Returns 0, or -1 with a message on
 * stderr. */
int tdm__cli_url_parse(const char *cmd, const char *text, tdm__cli_url *u)
{
    const char *p = text, *hs, *he, *path, *auth;
    memset(u, 0, sizeof *u);
    u->cmd = cmd;
    if (strncmp(p, "http://", 7) == 0) {
        p += 7;
    } else if (strncmp(p, "https://", 8) == 0) {
        fprintf(stderr,
                "%s: %s: https is not supported; "
                "the embedded server speaks plain http on "
                "loopback\n",
                u->cmd, text);
        return -1;
    } else if (strstr(p, "://") != NULL) {
        fprintf(stderr,
                "%s: %s: expected an http:// "
                "URL\n",
                u->cmd, text);
        return -1;
    }
    auth = p;
    path = p + strcspn(p, "/?#");
    if (*p == '[') {
        hs = p + 1;
        he = memchr(hs, ']', (size_t)(path - hs));
        if (he == NULL) {
            fprintf(stderr,
                    "%s: %s: missing ']' after the "
                    "IPv6 address\n",
                    u->cmd, text);
            return -1;
        }
        p = he + 1;
    } else {
        hs = p;
        he = memchr(p, ':', (size_t)(path - p));
        if (he == NULL) {
            he = path;
        }
        p = he;
    }
    if (he == hs || (size_t)(he - hs) >= sizeof u->host) {
        fprintf(stderr, "%s: %s: no host in the URL\n", u->cmd, text);
        return -1;
    }
    memcpy(u->host, hs, (size_t)(he - hs));
    if (*p == ':') {
        size_t n = (size_t)(path - p - 1);
        if (n == 0 || n >= sizeof u->port || strspn(p + 1, "0123456789") < n) {
            fprintf(stderr, "%s: %s: bad port\n", u->cmd, text);
            return -1;
        }
        memcpy(u->port, p + 1, n);
    } else if (p != path) {
        fprintf(stderr, "%s: %s: bad URL\n", u->cmd, text);
        return -1;
    } else {
        strcpy(u->port, "80");
    }
    snprintf(u->hostport, sizeof u->hostport, "%.*s", (int)(path - auth), auth);
    /* Keep the path as a prefix, without a query and trailing '/'. */
    size_t pl = strcspn(path, "?#");
    while (pl > 0 && path[pl - 1] == '/') {
        pl--;
    }
    if (pl >= sizeof u->prefix) {
        fprintf(stderr, "%s: %s: path too long\n", u->cmd, text);
        return -1;
    }
    memcpy(u->prefix, path, pl);
    return 0;
}

/* Appends @p s percent-encoded (everything but unreserved characters) to
 * @p buf of @p n bytes.  Returns -1 when it does not fit. */
int tdm__cli_pct_append(char *buf, size_t n, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = strlen(buf);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        if (o + (plain ? 1 : 3) >= n) {
            return -1;
        }
        if (plain) {
            buf[o++] = (char)*p;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[*p >> 4];
            buf[o++] = hex[*p & 15];
        }
    }
    buf[o] = '\0';
    return 0;
}

/* ====================================================================== */
/* The HTTP client                                                         */
/* ====================================================================== */

typedef struct dg_buf {
    char *p;
    size_t len, cap;
} dg_buf;

static int buf_add(dg_buf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        char *q = realloc(b->p, cap);
        if (q == NULL) {
            return -1;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Milliseconds of a monotonic clock. */
static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until @p fd is ready for @p events or @p deadline passes.
 * Returns 1 ready, 0 timeout, -1 error (errno). */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        struct pollfd pfd = {fd, events, 0};
        if (left <= 0) {
            return 0;
        }
        int r = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0) {
            return 1;
        }
        if (r < 0 && errno != EINTR) {
            return -1;
        }
    }
}

/* Connects to the URL's host within the deadline.  Returns the socket,
 * or -1 with a message on stderr. */
static int dial(const tdm__cli_url *u, int64_t deadline, int timeout_s)
{
    struct addrinfo hints, *res = NULL;
    int fd = -1, last = 0, timed_out = 0;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(u->host, u->port, &hints, &res);
    if (gai != 0) {
        fprintf(stderr, "%s: cannot resolve %s: %s\n", u->cmd, u->host,
                gai_strerror(gai));
        return -1;
    }
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        int s = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (s < 0) {
            last = errno;
            continue;
        }
        fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
        if (connect(s, a->ai_addr, a->ai_addrlen) == 0) {
            fd = s;
            break;
        }
        if (errno == EINPROGRESS) {
            int r = wait_fd(s, POLLOUT, deadline);
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (r == 1 &&
                getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
                soerr == 0) {
                fd = s;
                break;
            }
            if (r == 0) {
                timed_out = 1;
            }
            last = r == 1 ? soerr : errno;
        } else {
            last = errno;
        }
        close(s);
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        return fd;
    }
    if (timed_out) {
        fprintf(stderr,
                "%s: cannot connect to %s: no "
                "answer within %d s\n",
                u->cmd, u->hostport, timeout_s);
    } else if (last == ECONNREFUSED) {
        fprintf(stderr,
                "%s: cannot connect to %s: "
                "connection refused (is `tidemark run --http %s` "
                "running?)\n",
                u->cmd, u->hostport, u->hostport);
    } else {
        fprintf(stderr, "%s: cannot connect to %s: %s\n", u->cmd, u->hostport,
                strerror(last));
    }
    return -1;
}

/* Case-insensitive search for header @p name in the header block
 * [h, end); returns its value (leading blanks skipped) or NULL. */
static const char *header(const char *h, const char *end, const char *name,
                          size_t *vlen)
{
    size_t nl = strlen(name);
    const char *line = strstr(h, "\r\n");
    while (line != NULL && line + 2 < end) {
        line += 2;
        const char *eol = strstr(line, "\r\n");
        if (eol == NULL || eol > end) {
            eol = end;
        }
        if ((size_t)(eol - line) > nl && line[nl] == ':' &&
            strncasecmp(line, name, nl) == 0) {
            const char *v = line + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) {
                v++;
            }
            *vlen = (size_t)(eol - v);
            return v;
        }
        line = eol;
    }
    return NULL;
}

/* Decodes a chunked body [p, p + n) into @p out.  Returns 1 when the last
 * chunk was seen, 0 when more bytes are needed, -1 when malformed. */
static int dechunk(const char *p, size_t n, dg_buf *out)
{
    size_t i = 0;
    out->len = 0;
    for (;;) {
        const char *eol = NULL;
        for (size_t j = i; j + 1 < n; j++) {
            if (p[j] == '\r' && p[j + 1] == '\n') {
                eol = p + j;
                break;
            }
        }
        if (eol == NULL) {
            return 0;
        }
        char *e;
        errno = 0;
        unsigned long long sz = strtoull(p + i, &e, 16);
        if (e == p + i || errno != 0 || sz > DG_MAX_BODY ||
            (e < eol && *e != ';' && *e != ' ')) {
            return -1;
        }
        i = (size_t)(eol - p) + 2;
        if (sz == 0) {
            return 1; /* trailers, if any, are not needed */
        }
        if (n - i < sz + 2) {
            return 0;
        }
        if (buf_add(out, p + i, (size_t)sz) != 0) {
            return -1;
        }
        i += (size_t)sz;
        if (p[i] != '\r' || p[i + 1] != '\n') {
            return -1;
        }
        i += 2;
    }
}

/* Prints that no answer came from @p u while doing @p what. */
static void timed_out(const tdm__cli_url *u, const char *what, int timeout_s)
{
    fprintf(stderr,
            "%s: %s: no answer from %s within %d "
            "s\n",
            u->cmd, what, u->hostport, timeout_s);
}

/* Sends @p n bytes at @p p on @p fd within the deadline.  Returns 0, or
 * -1 with a message on stderr. */
static int send_all(int fd, const tdm__cli_url *u, const char *p, size_t n,
                    int64_t deadline, int timeout_s)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, POLLOUT, deadline) != 1) {
                timed_out(u, "sending the request", timeout_s);
                return -1;
            }
        } else {
            fprintf(stderr, "%s: sending to %s: %s\n", u->cmd, u->hostport,
                    strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Sends request @p q (with the bearer token, if any; a body as JSON,
 * named as coming from the command line) on @p fd.  Returns 0, or -1
 * with a message on stderr. */
static int send_request(int fd, const tdm__cli_url *u, const tdm__cli_req *q,
                        int64_t deadline)
{
    char req[4096], len[96] = "";
    if (q->body)
        snprintf(len, sizeof len,
                 "Content-Type: application/json\r\nContent-Length: "
                 "%zu\r\nX-Tidemark-Origin: cli\r\n",
                 strlen(q->body));
    int n = snprintf(req, sizeof req,
                     "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: "
                     "tidemark/%s\r\nAccept: application/json\r\n"
                     "Connection: close\r\n%s%s%s%s\r\n",
                     q->method, u->prefix, q->path, u->hostport, tdm_version(),
                     q->token ? "Authorization: Bearer " : "",
                     q->token ? q->token : "", q->token ? "\r\n" : "", len);
    if (n < 0 || (size_t)n >= sizeof req) {
        fprintf(stderr, "%s: request too long\n", u->cmd);
        return -1;
    }
    if (send_all(fd, u, req, (size_t)n, deadline, q->timeout_s) != 0)
        return -1;
    return q->body ? send_all(fd, u, q->body, strlen(q->body), deadline,
                              q->timeout_s)
                   : 0;
}

/* Whether the response in @p in (headers ending at @p hend) is complete:
 * its last chunk (decoded into @p dec) or Content-Length bytes.  1, 0, or
 * -1 with a message for a malformed chunked body. */
static int response_done(const tdm__cli_url *u, dg_buf *in, const char *hend,
                         dg_buf *dec)
{
    size_t hl = (size_t)(hend - in->p) + 4, vl;
    const char *te = header(in->p, hend + 2, "Transfer-Encoding", &vl);
    const char *cl = header(in->p, hend + 2, "Content-Length", &vl);
    if (te != NULL && vl >= 7 && strncasecmp(te, "chunked", 7) == 0) {
        int d = dechunk(in->p + hl, in->len - hl, dec);
        if (d < 0)
            fprintf(stderr,
                    "%s: malformed chunked "
                    "response from %s\n",
                    u->cmd, u->hostport);
        return d;
    }
    if (cl != NULL)
        return in->len - hl >= strtoull(cl, NULL, 10);
    return 0;
}

/* Reads until the body is complete (Content-Length, last chunk) or the
 * server closes the connection.  Returns 0, or -1 with a message. */
static int read_response(int fd, const tdm__cli_url *u, int64_t deadline,
                         int timeout_s, dg_buf *in, dg_buf *dec)
{
    char chunk[16384];
    /* Where the headers end, as an offset: buf_add may move in->p. */
    size_t hoff = 0;
    int have_headers = 0;
    int done = 0;
    while (!done) {
        int r = wait_fd(fd, POLLIN, deadline);
        if (r == 0) {
            timed_out(u, "reading the response", timeout_s);
            return -1;
        }
        ssize_t got = r < 0 ? -1 : recv(fd, chunk, sizeof chunk, 0);
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (got < 0) {
            fprintf(stderr, "%s: reading from %s: %s\n", u->cmd, u->hostport,
                    strerror(errno));
            return -1;
        }
        if (got == 0)
            break;
        if (in->len + (size_t)got > DG_MAX_BODY ||
            buf_add(in, chunk, (size_t)got) != 0) {
            fprintf(stderr,
                    "%s: response from %s too "
                    "large\n",
                    u->cmd, u->hostport);
            return -1;
        }
        if (!have_headers) {
            const char *hend = strstr(in->p, "\r\n\r\n");
            if (hend == NULL)
                continue;
            hoff = (size_t)(hend - in->p);
            have_headers = 1;
        }
        done = response_done(u, in, in->p + hoff, dec);
        if (done < 0)
            return -1;
    }
    return 0;
}

/* The body of a plain response: Content-Length bytes (all there must
 * be) or everything after the headers.  0, or -1 with a message. */
static int plain_body(const tdm__cli_url *u, const dg_buf *in, size_t hl,
                      const char *cl, char **body)
{
    size_t blen = in->len - hl;
    if (cl != NULL) {
        unsigned long long want = strtoull(cl, NULL, 10);
        if (want > blen) {
            fprintf(stderr,
                    "%s: truncated "
                    "response from %s\n",
                    u->cmd, u->hostport);
            return -1;
        }
        blen = (size_t)want;
    }
    *body = malloc(blen + 1);
    if (*body == NULL) {
        fprintf(stderr, "%s: out of memory\n", u->cmd);
        return -1;
    }
    memcpy(*body, in->p + hl, blen);
    (*body)[blen] = '\0';
    return 0;
}

/* The status ("HTTP/1.x NNN reason") and the body of the response in
 * @p in.  Returns 0, or -1 with a message. */
static int take_body(const tdm__cli_url *u, dg_buf *in, dg_buf *dec,
                     int *status, char **body)
{
    const char *hend;
    if (in->p == NULL || (hend = strstr(in->p, "\r\n\r\n")) == NULL ||
        strncmp(in->p, "HTTP/1.", 7) != 0 || strlen(in->p) < 12) {
        fprintf(stderr,
                "%s: %s did not answer with "
                "HTTP\n",
                u->cmd, u->hostport);
        return -1;
    }
    *status = atoi(in->p + 9);
    size_t hl = (size_t)(hend - in->p) + 4, vl;
    const char *te = header(in->p, hend + 2, "Transfer-Encoding", &vl);
    const char *cl = header(in->p, hend + 2, "Content-Length", &vl);
    if (te == NULL || vl < 7 || strncasecmp(te, "chunked", 7) != 0)
        return plain_body(u, in, hl, cl, body);
    if (dechunk(in->p + hl, in->len - hl, dec) != 1) {
        fprintf(stderr,
                "%s: truncated response "
                "from %s\n",
                u->cmd, u->hostport);
        return -1;
    }
    *body = dec->p ? dec->p : strdup("");
    dec->p = NULL;
    return 0;
}

/* Sends @p q to @p u.  On success returns 0 with *status and the body
 * (NUL-terminated, caller frees) in *body; on failure -1 with a message on
 * stderr. */
static int exchange(const tdm__cli_url *u, const tdm__cli_req *q, int *status,
                    char **body)
{
    int64_t deadline = mono_ms() + (int64_t)q->timeout_s * 1000;
    dg_buf in = {0}, dec = {0};
    *body = NULL;
    int fd = dial(u, deadline, q->timeout_s);
    if (fd < 0)
        return -1;
    int rc = send_request(fd, u, q, deadline);
    if (rc == 0)
        rc = read_response(fd, u, deadline, q->timeout_s, &in, &dec);
    if (rc == 0)
        rc = take_body(u, &in, &dec, status, body);
    close(fd);
    free(in.p);
    free(dec.p);
    return rc;
}

/* Sends @p q and parses the JSON body (see cli_http.h). */
json_t *tdm__cli_http_json(const tdm__cli_url *u, const tdm__cli_req *q,
                           char **raw)
{
    int status = 0;
    char *body = NULL;
    json_error_t jerr;
    if (raw != NULL)
        *raw = NULL;
    if (exchange(u, q, &status, &body) != 0)
        return NULL;
    json_t *j = json_loads(body, 0, &jerr);
    if (status != 200) {
        const char *msg = json_string_value(json_object_get(j, "error"));
        fprintf(stderr, "%s: %s %s%s: HTTP %d: %s%s\n", u->cmd, q->method,
                u->prefix, q->path, status, msg ? msg : body,
                status == 401 ? (q->token ? " (the token was refused)"
                                          : " (the server wants --token)")
                              : "");
        json_decref(j);
        free(body);
        return NULL;
    }
    if (j == NULL) {
        fprintf(stderr, "%s: %s %s%s: not JSON (%s)\n", u->cmd, q->method,
                u->prefix, q->path, jerr.text);
        free(body);
        return NULL;
    }
    if (raw != NULL)
        *raw = body;
    else
        free(body);
    return j;
}

/* The job to talk to (see cli_http.h). */
int tdm__cli_pick_job(const tdm__cli_url *u, const char *want,
                      const char *token, int timeout_s, char *id, size_t n)
{
    if (want != NULL) {
        snprintf(id, n, "%s", want);
        return TDM_EXIT_OK;
    }
    tdm__cli_req q = {"GET", "/jobs", token, NULL, timeout_s};
    json_t *jobs = tdm__cli_http_json(u, &q, NULL);
    if (jobs == NULL)
        return TDM_EXIT_RUNTIME;
    json_t *list = json_object_get(jobs, "jobs");
    if (json_array_size(list) != 1) {
        fprintf(stderr, "%s: the server has %zu jobs; choose one with --job",
                u->cmd, json_array_size(list));
        size_t i;
        json_t *j;
        json_array_foreach(list, i, j)
        {
            const char *nm = json_string_value(json_object_get(j, "id"));
            fprintf(stderr, "%s %s", i ? "," : ":", nm ? nm : "?");
        }
        fprintf(stderr, "\n");
        json_decref(jobs);
        return TDM_EXIT_RUNTIME;
    }
    const char *nm =
        json_string_value(json_object_get(json_array_get(list, 0), "id"));
    snprintf(id, n, "%s", nm ? nm : "");
    json_decref(jobs);
    return TDM_EXIT_OK;
}
