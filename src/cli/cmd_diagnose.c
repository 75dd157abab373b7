/* SPDX-License-Identifier: MIT */
/* cmd_diagnose.c - `tidemark diagnose URL`: asks a job served by
 * `tidemark run --http` what holds its windows back, and prints the
 * findings (or, with --window and --key, whether one window fired and
 * what it waits for) as readable text or raw JSON.  Carries its own small
 * HTTP/1.1 GET client on POSIX sockets (Content-Length and chunked
 * bodies, timeouts), so the command needs nothing but the C library.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"

/* Largest response body accepted (a diagnosis is a few KB). */
#define DG_MAX_BODY (64u << 20)

/* ====================================================================== */
/* URLs                                                                    */
/* ====================================================================== */

/* The parts of "http://host:port/prefix" the client needs. */
typedef struct dg_url {
    char host[256];     /* without IPv6 brackets */
    char hostport[300]; /* as written, for the Host header and messages */
    char port[16];
    char prefix[512]; /* path prefix without the trailing '/' */
} dg_url;

/* Parses @p text ("http://127.0.0.1:8081", "127.0.0.1:8081/",
 * "http://[::1]:8081/base").  Returns 0, or -1 with a message on
 * stderr. */
static int url_parse(const char *text, dg_url *u)
{
    const char *p = text, *hs, *he, *path, *auth;
    memset(u, 0, sizeof *u);
    if (strncmp(p, "http://", 7) == 0) {
        p += 7;
    } else if (strncmp(p, "https://", 8) == 0) {
        fprintf(stderr,
                "tidemark diagnose: %s: https is not supported; "
                "the embedded server speaks plain http on "
                "loopback\n",
                text);
        return -1;
    } else if (strstr(p, "://") != NULL) {
        fprintf(stderr,
                "tidemark diagnose: %s: expected an http:// "
                "URL\n",
                text);
        return -1;
    }
    auth = p;
    path = p + strcspn(p, "/?#");
    if (*p == '[') {
        hs = p + 1;
        he = memchr(hs, ']', (size_t)(path - hs));
        if (he == NULL) {
            fprintf(stderr,
                    "tidemark diagnose: %s: missing ']' after the "
                    "IPv6 address\n",
                    text);
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
        fprintf(stderr, "tidemark diagnose: %s: no host in the URL\n", text);
        return -1;
    }
    memcpy(u->host, hs, (size_t)(he - hs));
    if (*p == ':') {
        size_t n = (size_t)(path - p - 1);
        if (n == 0 || n >= sizeof u->port || strspn(p + 1, "0123456789") < n) {
            fprintf(stderr, "tidemark diagnose: %s: bad port\n", text);
            return -1;
        }
        memcpy(u->port, p + 1, n);
    } else if (p != path) {
        fprintf(stderr, "tidemark diagnose: %s: bad URL\n", text);
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
        fprintf(stderr, "tidemark diagnose: %s: path too long\n", text);
        return -1;
    }
    memcpy(u->prefix, path, pl);
    return 0;
}

/* Appends @p s percent-encoded (everything but unreserved characters) to
 * @p buf of @p n bytes.  Returns -1 when it does not fit. */
static int pct_append(char *buf, size_t n, const char *s)
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
static int dial(const dg_url *u, int64_t deadline, int timeout_s)
{
    struct addrinfo hints, *res = NULL;
    int fd = -1, last = 0, timed_out = 0;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(u->host, u->port, &hints, &res);
    if (gai != 0) {
        fprintf(stderr, "tidemark diagnose: cannot resolve %s: %s\n", u->host,
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
                "tidemark diagnose: cannot connect to %s: no "
                "answer within %d s\n",
                u->hostport, timeout_s);
    } else if (last == ECONNREFUSED) {
        fprintf(stderr,
                "tidemark diagnose: cannot connect to %s: "
                "connection refused (is `tidemark run --http %s` "
                "running?)\n",
                u->hostport, u->hostport);
    } else {
        fprintf(stderr, "tidemark diagnose: cannot connect to %s: %s\n",
                u->hostport, strerror(last));
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
static void timed_out(const dg_url *u, const char *what, int timeout_s)
{
    fprintf(stderr,
            "tidemark diagnose: %s: no answer from %s within %d "
            "s\n",
            what, u->hostport, timeout_s);
}

/* Sends "GET @p path" (with the bearer @p token, if any) on @p fd.
 * Returns 0, or -1 with a message on stderr. */
static int send_request(int fd, const dg_url *u, const char *path,
                        const char *token, int64_t deadline, int timeout_s)
{
    char req[4096];
    int n = snprintf(req, sizeof req,
                     "GET %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: "
                     "tidemark/%s\r\nAccept: application/json\r\n"
                     "Connection: close\r\n%s%s%s\r\n",
                     u->prefix, path, u->hostport, tdm_version(),
                     token ? "Authorization: Bearer " : "", token ? token : "",
                     token ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof req) {
        fprintf(stderr, "tidemark diagnose: request too long\n");
        return -1;
    }
    for (size_t off = 0; off < (size_t)n;) {
        ssize_t w = send(fd, req + off, (size_t)n - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, POLLOUT, deadline) != 1) {
                timed_out(u, "sending the request", timeout_s);
                return -1;
            }
        } else {
            fprintf(stderr, "tidemark diagnose: sending to %s: %s\n",
                    u->hostport, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Whether the response in @p in (headers ending at @p hend) is complete:
 * its last chunk (decoded into @p dec) or Content-Length bytes.  1, 0, or
 * -1 with a message for a malformed chunked body. */
static int response_done(const dg_url *u, dg_buf *in, const char *hend,
                         dg_buf *dec)
{
    size_t hl = (size_t)(hend - in->p) + 4, vl;
    const char *te = header(in->p, hend + 2, "Transfer-Encoding", &vl);
    const char *cl = header(in->p, hend + 2, "Content-Length", &vl);
    if (te != NULL && vl >= 7 && strncasecmp(te, "chunked", 7) == 0) {
        int d = dechunk(in->p + hl, in->len - hl, dec);
        if (d < 0)
            fprintf(stderr,
                    "tidemark diagnose: malformed chunked "
                    "response from %s\n",
                    u->hostport);
        return d;
    }
    if (cl != NULL)
        return in->len - hl >= strtoull(cl, NULL, 10);
    return 0;
}

/* Reads until the body is complete (Content-Length, last chunk) or the
 * server closes the connection.  Returns 0, or -1 with a message. */
static int read_response(int fd, const dg_url *u, int64_t deadline,
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
            fprintf(stderr, "tidemark diagnose: reading from %s: %s\n",
                    u->hostport, strerror(errno));
            return -1;
        }
        if (got == 0)
            break;
        if (in->len + (size_t)got > DG_MAX_BODY ||
            buf_add(in, chunk, (size_t)got) != 0) {
            fprintf(stderr,
                    "tidemark diagnose: response from %s too "
                    "large\n",
                    u->hostport);
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
static int plain_body(const dg_url *u, const dg_buf *in, size_t hl,
                      const char *cl, char **body)
{
    size_t blen = in->len - hl;
    if (cl != NULL) {
        unsigned long long want = strtoull(cl, NULL, 10);
        if (want > blen) {
            fprintf(stderr,
                    "tidemark diagnose: truncated "
                    "response from %s\n",
                    u->hostport);
            return -1;
        }
        blen = (size_t)want;
    }
    *body = malloc(blen + 1);
    if (*body == NULL) {
        fprintf(stderr, "tidemark diagnose: out of memory\n");
        return -1;
    }
    memcpy(*body, in->p + hl, blen);
    (*body)[blen] = '\0';
    return 0;
}

/* The status ("HTTP/1.x NNN reason") and the body of the response in
 * @p in.  Returns 0, or -1 with a message. */
static int take_body(const dg_url *u, dg_buf *in, dg_buf *dec, int *status,
                     char **body)
{
    const char *hend;
    if (in->p == NULL || (hend = strstr(in->p, "\r\n\r\n")) == NULL ||
        strncmp(in->p, "HTTP/1.", 7) != 0 || strlen(in->p) < 12) {
        fprintf(stderr,
                "tidemark diagnose: %s did not answer with "
                "HTTP\n",
                u->hostport);
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
                "tidemark diagnose: truncated response "
                "from %s\n",
                u->hostport);
        return -1;
    }
    *body = dec->p ? dec->p : strdup("");
    dec->p = NULL;
    return 0;
}

/* GETs @p path from @p u.  On success returns 0 with *status and the body
 * (NUL-terminated, caller frees) in *body; on failure -1 with a message on
 * stderr. */
static int http_get(const dg_url *u, const char *path, const char *token,
                    int timeout_s, int *status, char **body)
{
    int64_t deadline = mono_ms() + (int64_t)timeout_s * 1000;
    dg_buf in = {0}, dec = {0};
    *body = NULL;
    int fd = dial(u, deadline, timeout_s);
    if (fd < 0)
        return -1;
    int rc = send_request(fd, u, path, token, deadline, timeout_s);
    if (rc == 0)
        rc = read_response(fd, u, deadline, timeout_s, &in, &dec);
    if (rc == 0)
        rc = take_body(u, &in, &dec, status, body);
    close(fd);
    free(in.p);
    free(dec.p);
    return rc;
}

/* GETs @p path and parses the JSON body.  A non-200 answer is reported
 * with the server's {"error": ...} message.  Returns the JSON (caller
 * decrefs) or NULL; *raw receives the body text when not NULL. */
static json_t *get_json(const dg_url *u, const char *path, const char *token,
                        int timeout_s, char **raw)
{
    int status = 0;
    char *body = NULL;
    json_error_t jerr;
    if (raw != NULL) {
        *raw = NULL;
    }
    if (http_get(u, path, token, timeout_s, &status, &body) != 0) {
        return NULL;
    }
    json_t *j = json_loads(body, 0, &jerr);
    if (status != 200) {
        const char *msg = json_string_value(json_object_get(j, "error"));
        fprintf(stderr, "tidemark diagnose: GET %s%s: HTTP %d: %s%s\n",
                u->prefix, path, status, msg ? msg : body,
                status == 401 ? (token ? " (the token was refused)"
                                       : " (the server wants --token)")
                              : "");
        json_decref(j);
        free(body);
        return NULL;
    }
    if (j == NULL) {
        fprintf(stderr, "tidemark diagnose: GET %s%s: not JSON (%s)\n",
                u->prefix, path, jerr.text);
        free(body);
        return NULL;
    }
    if (raw != NULL) {
        *raw = body;
    } else {
        free(body);
    }
    return j;
}

/* ====================================================================== */
/* Times and durations on the command line                                 */
/* ====================================================================== */

/* Days from 1970-01-01 to year/month/day (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Parses epoch ms or ISO-8601 "YYYY-MM-DDTHH:MM[:SS[.fff]][Z|+HH:MM]"
 * (no zone: UTC).  Returns 0 or -1. */
static int parse_time(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, sec = 0, ms = 0, n = 0;
    char *e;
    if (strspn(s, "-0123456789") == strlen(s) && *s) {
        errno = 0;
        long long v = strtoll(s, &e, 10);
        if (errno != 0 || *e) {
            return -1;
        }
        *out = v;
        return 0;
    }
    if (sscanf(s, "%4d-%2d-%2d%*1[T ]%2d:%2d%n", &y, &mo, &d, &h, &mi, &n) !=
            5 ||
        n == 0) {
        return -1;
    }
    s += n;
    if (*s == ':') {
        if (s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9') {
            return -1;
        }
        sec = (s[1] - '0') * 10 + (s[2] - '0');
        s += 3;
        if (*s == '.') {
            int digits = 0;
            s++;
            while (*s >= '0' && *s <= '9') {
                if (digits < 3) {
                    ms = ms * 10 + (*s - '0');
                }
                digits++;
                s++;
            }
            if (digits == 0) {
                return -1;
            }
            for (; digits < 3; digits++) {
                ms *= 10;
            }
        }
    }
    int64_t off = 0;
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int oh, om;
        if (sscanf(s + 1, "%2d:%2d", &oh, &om) != 2 || strlen(s) != 6) {
            return -1;
        }
        off = (*s == '+' ? 1 : -1) * ((int64_t)oh * 60 + om) * 60000;
        s += 6;
    }
    if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        sec > 60) {
        return -1;
    }
    *out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 +
           (int64_t)sec * 1000 + ms - off;
    return 0;
}

/* Parses a duration: "5m", "30s", "250ms", "1h30m", "2d", bare ms.
 * Returns 0 or -1 (also for 0 or overflow). */
static int parse_duration(const char *s, int64_t *out)
{
    int64_t total = 0;
    if (!*s) {
        return -1;
    }
    while (*s) {
        char *e;
        errno = 0;
        long long v = strtoll(s, &e, 10);
        if (e == s || errno != 0 || v < 0) {
            return -1;
        }
        int64_t unit;
        if (strncmp(e, "ms", 2) == 0) {
            unit = 1, e += 2;
        } else if (*e == 's') {
            unit = 1000, e++;
        } else if (*e == 'm') {
            unit = 60000, e++;
        } else if (*e == 'h') {
            unit = 3600000, e++;
        } else if (*e == 'd') {
            unit = 86400000, e++;
        } else if (*e == '\0') {
            unit = 1;
        } else {
            return -1;
        }
        if (v > (INT64_MAX - total) / unit) {
            return -1;
        }
        total += v * unit;
        s = e;
    }
    if (total <= 0) {
        return -1;
    }
    *out = total;
    return 0;
}

/* ====================================================================== */
/* Text output                                                             */
/* ====================================================================== */

/* Prints @p text wrapped at 78 columns: the first line after @p first,
 * the following ones indented by @p indent spaces. */
static void wrap(FILE *f, const char *first, int indent, const char *text)
{
    int col = fprintf(f, "%s", first), fresh = 1;
    const char *p = text;
    while (*p == ' ') {
        p++;
    }
    while (*p) {
        size_t wl = strcspn(p, " ");
        if (!fresh && col + 1 + (int)wl > 78) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            fresh = 1;
        }
        if (!fresh) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, wl, f);
        col += (int)wl;
        fresh = 0;
        p += wl;
        while (*p == ' ') {
            p++;
        }
    }
    fputc('\n', f);
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Prints a diagnosis object as numbered findings. */
static void print_diagnosis(const json_t *d)
{
    char t[64], lead[64];
    const json_t *findings = json_object_get(d, "findings");
    json_t *now = json_object_get(d, "now");
    printf("Diagnosis of job \"%s\"%s%s%s:\n\n", jstr(d, "job"),
           json_is_true(json_object_get(d, "running")) ? " (running)"
                                                       : " (not running)",
           json_is_integer(now) ? " at " : "",
           json_is_integer(now)
               ? tdm__cli_iso_time(json_integer_value(now), t, sizeof t)
               : "");
    size_t i;
    json_t *f;
    json_array_foreach(findings, i, f)
    {
        char sev[16];
        size_t k;
        const char *s = jstr(f, "severity");
        for (k = 0; s[k] && k + 1 < sizeof sev; k++) {
            sev[k] = (char)(s[k] >= 'a' && s[k] <= 'z' ? s[k] - 32 : s[k]);
        }
        sev[k] = '\0';
        snprintf(lead, sizeof lead, "%zu. [%s] ", i + 1, sev);
        wrap(stdout, lead, 4, jstr(f, "title"));
        printf("    (%s)\n", jstr(f, "code"));
        json_t *e;
        size_t j;
        json_array_foreach(json_object_get(f, "evidence"), j, e)
        {
            wrap(stdout, "    - ", 6,
                 json_string_value(e) ? json_string_value(e) : "");
        }
        if (*jstr(f, "fix")) {
            wrap(stdout, "    fix: ", 9, jstr(f, "fix"));
        }
        printf("\n");
    }
    if (json_array_size(findings) == 0) {
        printf("No findings.\n");
    }
}

/* Prints a window explanation. */
static void print_window(const json_t *w)
{
    char a[64], b[64];
    const json_t *fj = json_object_get(w, "fired");
    /* null: a blocked subtask, answered for by its published figures. */
    const char *state = json_is_null(fj)   ? "blocked (backpressure)"
                        : json_is_true(fj) ? "fired"
                                           : "not fired";
    printf("Window [%s, %s) of key \"%s\" at %s: %s\n",
           tdm__cli_iso_time(json_integer_value(json_object_get(w, "start")), a,
                             sizeof a),
           tdm__cli_iso_time(json_integer_value(json_object_get(w, "end")), b,
                             sizeof b),
           jstr(w, "key"), jstr(w, "vertex"), state);
    wrap(stdout, "  ", 2, jstr(w, "verdict"));
    if (json_is_string(json_object_get(w, "waiting_for"))) {
        wrap(stdout, "  waiting for: ", 4, jstr(w, "waiting_for"));
    }
    printf("  evidence:\n");
    size_t j;
    json_t *e;
    json_array_foreach(json_object_get(w, "evidence"), j, e)
    {
        wrap(stdout, "    - ", 6,
             json_string_value(e) ? json_string_value(e) : "");
    }
}

/* ====================================================================== */
/* The command                                                             */
/* ====================================================================== */

typedef struct dg_opts {
    const char *url, *job, *window, *key, *vertex, *token;
    int json, timeout_s, help;
} dg_opts;

static int parse_opts(int argc, char **argv, dg_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_s = 10;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], *v;
        int missing = 0;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            o->help = 1;
        } else if (strcmp(arg, "--json") == 0) {
            o->json = 1;
        } else if ((v = tdm__cli_opt_value(argc, argv, &i, "--job",
                                           &missing))) {
            o->job = v;
        } else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i,
                                                       "--window", &missing))) {
            o->window = v;
        } else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i, "--key",
                                                       &missing))) {
            o->key = v;
        } else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i,
                                                       "--vertex", &missing))) {
            o->vertex = v;
        } else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i,
                                                       "--token", &missing))) {
            o->token = v;
        } else if (!missing && (v = tdm__cli_opt_value(
                                    argc, argv, &i, "--timeout", &missing))) {
            char *e;
            long t = strtol(v, &e, 10);
            if (*e || t < 1 || t > 3600) {
                fprintf(stderr,
                        "tidemark diagnose: --timeout: expected "
                        "seconds from 1 to 3600, got \"%s\"\n",
                        v);
                return TDM_EXIT_USAGE;
            }
            o->timeout_s = (int)t;
        } else if (missing) {
            fprintf(stderr,
                    "tidemark diagnose: %s needs a value (see "
                    "`tidemark help diagnose`)\n",
                    arg);
            return TDM_EXIT_USAGE;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            fprintf(stderr,
                    "tidemark diagnose: unknown option %s (see "
                    "`tidemark help diagnose`)\n",
                    arg);
            return TDM_EXIT_USAGE;
        } else if (o->url == NULL) {
            o->url = arg;
        } else {
            fprintf(stderr,
                    "tidemark diagnose: one URL expected, got "
                    "\"%s\" and \"%s\"\n",
                    o->url, arg);
            return TDM_EXIT_USAGE;
        }
    }
    if (o->help) {
        return TDM_EXIT_OK;
    }
    if (o->url == NULL) {
        fprintf(stderr, "tidemark diagnose: no URL given (usage: tidemark "
                        "diagnose http://127.0.0.1:8081; see `tidemark "
                        "help diagnose`)\n");
        return TDM_EXIT_USAGE;
    }
    if ((o->window == NULL) != (o->key == NULL)) {
        fprintf(stderr, "tidemark diagnose: --window and --key go "
                        "together\n");
        return TDM_EXIT_USAGE;
    }
    if (o->vertex != NULL && o->window == NULL) {
        fprintf(stderr, "tidemark diagnose: --vertex needs --window and "
                        "--key\n");
        return TDM_EXIT_USAGE;
    }
    return TDM_EXIT_OK;
}

/* 1 when the diagnosis @p j holds a critical finding. */
static int has_critical(json_t *j)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(j, "findings"), i, f)
    {
        if (strcmp(jstr(f, "severity"), "critical") == 0) {
            return 1;
        }
    }
    return 0;
}

/* Picks the job: --job, or the only one /jobs lists. */
static int pick_job(const dg_url *u, const dg_opts *o, char *id, size_t n)
{
    if (o->job != NULL) {
        snprintf(id, n, "%s", o->job);
        return TDM_EXIT_OK;
    }
    json_t *jobs = get_json(u, "/jobs", o->token, o->timeout_s, NULL);
    if (jobs == NULL) {
        return TDM_EXIT_RUNTIME;
    }
    json_t *list = json_object_get(jobs, "jobs");
    if (json_array_size(list) != 1) {
        fprintf(stderr,
                "tidemark diagnose: the server has %zu jobs; "
                "choose one with --job",
                json_array_size(list));
        size_t i;
        json_t *j;
        json_array_foreach(list, i, j)
        {
            fprintf(stderr, "%s %s", i ? "," : ":", jstr(j, "id"));
        }
        fprintf(stderr, "\n");
        json_decref(jobs);
        return TDM_EXIT_RUNTIME;
    }
    snprintf(id, n, "%s", jstr(json_array_get(list, 0), "id"));
    json_decref(jobs);
    return TDM_EXIT_OK;
}

/* Picks the window vertex: --vertex, or the job's only window. */
static int pick_vertex(const dg_url *u, const dg_opts *o, const char *path,
                       char *name, size_t n)
{
    if (o->vertex != NULL) {
        snprintf(name, n, "%s", o->vertex);
        return TDM_EXIT_OK;
    }
    json_t *job = get_json(u, path, o->token, o->timeout_s, NULL);
    if (job == NULL) {
        return TDM_EXIT_RUNTIME;
    }
    size_t i, count = 0;
    json_t *v;
    json_array_foreach(json_object_get(job, "vertices"), i, v)
    {
        if (strcmp(jstr(v, "kind"), "window") == 0 && count++ == 0) {
            snprintf(name, n, "%s", jstr(v, "id"));
        }
    }
    if (count != 1) {
        fprintf(stderr,
                "tidemark diagnose: the job has %zu windows; "
                "choose one with --vertex",
                count);
        json_array_foreach(json_object_get(job, "vertices"), i, v)
        {
            if (strcmp(jstr(v, "kind"), "window") == 0) {
                fprintf(stderr, " %s", jstr(v, "id"));
            }
        }
        fprintf(stderr, "\n");
        json_decref(job);
        return TDM_EXIT_RUNTIME;
    }
    json_decref(job);
    return TDM_EXIT_OK;
}

/* Runs `tidemark diagnose` (argv after the command name).  Returns
 * TDM_EXIT_OK when an answer was printed, TDM_EXIT_CRITICAL when that
 * diagnosis holds a critical finding, TDM_EXIT_RUNTIME when the server
 * could not be reached or refused, TDM_EXIT_USAGE on a bad command
 * line. */
int tdm__cli_cmd_diagnose(int argc, char **argv)
{
    dg_opts o;
    dg_url u;
    char id[256], path[2048], vertex[256];
    int64_t start = 0, len = 0;
    int rc = parse_opts(argc, argv, &o);
    if (rc != TDM_EXIT_OK || o.help) {
        return rc != TDM_EXIT_OK ? rc : tdm__cli_help("diagnose", stdout);
    }
    if (url_parse(o.url, &u) != 0) {
        return TDM_EXIT_USAGE;
    }
    if (o.window != NULL) {
        const char *slash = strrchr(o.window, '/');
        char st[128];
        if (slash == NULL || (size_t)(slash - o.window) >= sizeof st) {
            fprintf(stderr,
                    "tidemark diagnose: --window: expected "
                    "START/DURATION such as "
                    "2026-12-02T10:00:00Z/5m, got \"%s\"\n",
                    o.window);
            return TDM_EXIT_USAGE;
        }
        snprintf(st, sizeof st, "%.*s", (int)(slash - o.window), o.window);
        if (parse_time(st, &start) != 0) {
            fprintf(stderr,
                    "tidemark diagnose: --window: bad start \"%s\" "
                    "(ISO-8601 such as 2026-12-02T10:00:00Z, or "
                    "epoch ms)\n",
                    st);
            return TDM_EXIT_USAGE;
        }
        if (parse_duration(slash + 1, &len) != 0 || start > INT64_MAX - len) {
            fprintf(stderr,
                    "tidemark diagnose: --window: bad duration "
                    "\"%s\" (such as 5m, 30s, 1h, 250ms)\n",
                    slash + 1);
            return TDM_EXIT_USAGE;
        }
    }
    rc = pick_job(&u, &o, id, sizeof id);
    if (rc != TDM_EXIT_OK) {
        return rc;
    }
    strcpy(path, "/jobs/");
    if (pct_append(path, sizeof path, id) != 0) {
        fprintf(stderr, "tidemark diagnose: job id too long\n");
        return TDM_EXIT_USAGE;
    }
    if (o.window != NULL) {
        char num[64];
        rc = pick_vertex(&u, &o, path, vertex, sizeof vertex);
        if (rc != TDM_EXIT_OK) {
            return rc;
        }
        snprintf(num, sizeof num, "&start=%lld&end=%lld", (long long)start,
                 (long long)(start + len));
        if (strlen(path) + 20 >= sizeof path) {
            return TDM_EXIT_USAGE;
        }
        strcat(path, "/windows?vertex=");
        if (pct_append(path, sizeof path, vertex) != 0 ||
            strlen(path) + 6 >= sizeof path) {
            fprintf(stderr, "tidemark diagnose: arguments too long\n");
            return TDM_EXIT_USAGE;
        }
        strcat(path, "&key=");
        if (pct_append(path, sizeof path, o.key) != 0 ||
            strlen(path) + strlen(num) >= sizeof path) {
            fprintf(stderr, "tidemark diagnose: arguments too long\n");
            return TDM_EXIT_USAGE;
        }
        strcat(path, num);
    } else {
        strcat(path, "/diagnosis");
    }
    char *raw = NULL;
    json_t *j = get_json(&u, path, o.token, o.timeout_s, &raw);
    if (j == NULL) {
        return TDM_EXIT_RUNTIME;
    }
    if (o.json) {
        size_t n = strlen(raw);
        fputs(raw, stdout);
        if (n == 0 || raw[n - 1] != '\n') {
            fputc('\n', stdout);
        }
    } else if (o.window != NULL) {
        print_window(j);
    } else {
        print_diagnosis(j);
    }
    /* R-CD-1: a critical finding fails a script or an alert's check. */
    int crit = o.window == NULL && has_critical(j);
    json_decref(j);
    free(raw);
    if (fflush(stdout) != 0)
        return TDM_EXIT_RUNTIME;
    return crit ? TDM_EXIT_CRITICAL : TDM_EXIT_OK;
}
