/* SPDX-License-Identifier: MIT */
/* tcp_source.c - a source that connects to host:port and reads one record
 * per line (JSON or CSV, as a file), reconnecting when it loses the
 * connection.  docs/tcp.md has the rules; in short:
 *
 *   connected --reset, read error--------------> lost --+
 *   connected --clean close (tcp.on_close: reconnect)-> lost --+
 *   connected --clean close (tcp.on_close: end)--------> ended (eof)
 *   lost: wait backoff --> attempt --ok--> connected (a new stream)
 *                 ^            |
 *                 +-- failed --+  (the wait doubles up to max_backoff)
 *   no connection tcp.reconnect.timeout after the loss: poll fails,
 *   and poll_error names the cause of the loss and of the last attempt.
 *
 * A line is a record only with its newline, except the last line before
 * a clean close that ends the input (as the last line of a file): bytes
 * cut by a reset, an error or a close the source reconnects after are
 * dead-lettered as a cut line, never parsed.  Every connection is a new
 * stream (a CSV header is expected again); its lines are numbered from
 * 1 and located "host:port:line", from the second connection on
 * "host:port#n:line".
 *
 * The connection is one partition, read by subtask 0 (the others get no
 * partition).  Every wait is at most ~50 ms (poll), also while the source
 * waits to reconnect or a connect is under way, so the subtask regains
 * control to emit periodic watermarks, notice idleness and cancellation.
 * The first connect happens in open() and is not retried: an address
 * nobody listens on at the start is a configuration error.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "connect/conn.h"

/* Connect timeout when the configuration gives none (0). */
#define TCP_CONNECT_TIMEOUT_MS 5000
/* Longest wait of one poll() call. */
#define TCP_POLL_MS 50

enum { TCP_CONNECTED, TCP_WAITING, TCP_CONNECTING, TCP_ENDED };

/* One connection attempt: the resolved addresses, tried in turn with a
 * non-blocking connect each. */
typedef struct dialer {
    struct addrinfo *res; /* getaddrinfo's list, NULL: none */
    struct addrinfo *ai;  /* the address being tried */
    int fd;               /* its socket, -1 */
    int64_t deadline;     /* when its connect times out */
} dialer;

struct tdm__source {
    tdm__source_conf conf;
    tdm__dead_fn dead;
    void *dead_ud;
    tdm__stream st;
    bool have_stream;
    bool reader; /* subtask 0: it owns the connection */
    int state;   /* TCP_* */
    dialer dl;
    int64_t n_conn;     /* connections made so far */
    int64_t lost_at;    /* when the connection was lost */
    int64_t next_at;    /* when the next attempt starts */
    int64_t backoff;    /* the wait after the next failed attempt */
    int attempts;       /* failed attempts since the loss */
    char lost_why[160]; /* cause of the loss */
    char why[320];      /* cause of the last failed attempt */
    char errmsg[640];   /* poll_error */
    tdm__partmap pm;    /* partition_field values */
};

static int64_t tcp_now(const tdm__source *src)
{
    return src->conf.now ? src->conf.now(src->conf.now_ud) : tdm__mono_ms();
}

static int64_t connect_timeout(const tdm__source *src)
{
    return src->conf.tcp_connect_timeout > 0 ? src->conf.tcp_connect_timeout
                                             : TCP_CONNECT_TIMEOUT_MS;
}

/* A line for the job's log, "source "<name>": tcp <address>: <text>"
 * (nothing without a log). */
static void tcp_log(const tdm__source *src, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void tcp_log(const tdm__source *src, const char *fmt, ...)
{
    char text[512], line[800];
    va_list ap;

    if (!src->conf.log)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "source \"%s\": tcp %s: %s",
             src->conf.name ? src->conf.name : "?", src->conf.tcp_address,
             text);
    src->conf.log(src->conf.log_ud, line);
}

/* ---- Dialing ---- */

static void dial_stop(dialer *dl)
{
    if (dl->fd >= 0)
        close(dl->fd);
    if (dl->res)
        freeaddrinfo(dl->res);
    dl->fd = -1;
    dl->res = dl->ai = NULL;
}

/* Splits "host:port" ("[::1]:9000" for IPv6) into host and port.
 * Returns 0, or -1 when it is not of that form. */
static int split_address(const char *address, char *host, size_t host_size,
                         char *port, size_t port_size)
{
    const char *colon = address ? strrchr(address, ':') : NULL;
    size_t hl;

    if (!colon || colon == address || !colon[1] ||
        strlen(colon + 1) >= port_size ||
        (size_t)(colon - address) >= host_size)
        return -1;
    hl = (size_t)(colon - address);
    memcpy(host, address, hl);
    host[hl] = '\0';
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    snprintf(port, port_size, "%s", colon + 1);
    return 0;
}

/* Starts a non-blocking connect to dl->ai and the ones after it until
 * one is under way or done.  Returns 0 (dl->fd set), or -1 when every
 * address failed at once (the cause in src->why). */
static int dial_next(tdm__source *src)
{
    dialer *dl = &src->dl;

    for (; dl->ai; dl->ai = dl->ai->ai_next) {
        const struct addrinfo *ai = dl->ai;
        int fd = socket(ai->ai_family,
                        ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        ai->ai_protocol);
        if (fd < 0) {
            snprintf(src->why, sizeof src->why, "%s", strerror(errno));
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
            errno == EINPROGRESS) {
            dl->fd = fd;
            dl->deadline = tcp_now(src) + connect_timeout(src);
            return 0;
        }
        snprintf(src->why, sizeof src->why, "%s", strerror(errno));
        close(fd);
    }
    return -1;
}

/* Resolves the address and starts connecting (when every address fails
 * at once, dial_step says so).  TDM_OK, TDM_ERR_INVAL (not host:port) or
 * TDM_ERR_IO (cannot resolve), the cause in src->why. */
static tdm_err dial_start(tdm__source *src)
{
    char host[256], port[32];
    const char *address = src->conf.tcp_address;
    struct addrinfo hints;
    int rc;

    dial_stop(&src->dl);
    if (split_address(address, host, sizeof host, port, sizeof port) != 0) {
        snprintf(src->why, sizeof src->why,
                 "tcp.address: expected host:port, got \"%s\"",
                 address ? address : "");
        return TDM_ERR_INVAL;
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, port, &hints, &src->dl.res);
    if (rc != 0) {
        src->dl.res = NULL;
        snprintf(src->why, sizeof src->why, "cannot resolve '%s': %s", address,
                 gai_strerror(rc));
        return TDM_ERR_IO;
    }
    src->dl.ai = src->dl.res;
    (void)dial_next(src); /* a failure now is dial_step's to report */
    return TDM_OK;
}

/* How a finished non-blocking connect ended: 0 connected, else its
 * errno.  Not SO_ERROR: a peer that accepts, sends and resets at once
 * leaves ECONNRESET there although the connection was made and its
 * bytes wait to be read, and taking the error would turn the reset into
 * a clean end.  A peek returns those bytes first and leaves the reset
 * for the reader; only with nothing to read does it take the error
 * (then the connection is refused, or reset before it carried a byte:
 * a failed attempt either way). */
static int connect_result(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

    if (n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
    return errno;
}

/* Waits at most @p wait_ms for the connect under way.  Returns 1 when
 * connected (*fd, blocking again, is the caller's), 0 while it is still
 * under way, -1 when every address failed (the cause in src->why: the
 * error of the last, or "connect timed out after N ms"). */
static int dial_step(tdm__source *src, int64_t wait_ms, int *fd)
{
    dialer *dl = &src->dl;
    struct pollfd pfd = {.fd = dl->fd, .events = POLLOUT};
    int e = 0, rc;

    if (dl->fd < 0)
        return -1;
    rc = poll(&pfd, 1, (int)(wait_ms < 0 ? 0 : wait_ms));
    if (rc < 0 && errno != EINTR)
        e = errno;
    else if (rc > 0)
        e = connect_result(dl->fd);
    if (rc > 0 && e == 0) {
        /* Blocking again: the line reader polls before it reads. */
        *fd = dl->fd;
        fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
        dl->fd = -1;
        dial_stop(dl);
        return 1;
    }
    if (e == 0 && tcp_now(src) < dl->deadline)
        return 0;
    if (e != 0)
        snprintf(src->why, sizeof src->why, "%s", strerror(e));
    else
        snprintf(src->why, sizeof src->why, "connect timed out after %lld ms",
                 (long long)connect_timeout(src));
    close(dl->fd);
    dl->fd = -1;
    dl->ai = dl->ai->ai_next;
    if (dial_next(src) == 0)
        return 0;
    dial_stop(dl);
    return -1;
}

/* ---- Connections ---- */

/* Makes the stream of a new connection over @p fd (taken).  TDM_OK or
 * NOMEM. */
static tdm_err start_stream(tdm__source *src, int fd)
{
    char name[300];
    tdm_err err;

    src->n_conn++;
    if (src->n_conn == 1)
        snprintf(name, sizeof name, "%s", src->conf.tcp_address);
    else
        snprintf(name, sizeof name, "%s#%lld", src->conf.tcp_address,
                 (long long)src->n_conn);
    err = tdm__stream_init(&src->st, &src->conf, fd, true, name);
    if (err != TDM_OK)
        return err; /* the stream closed fd */
    /* A close that ends the input makes the last line a line, as at the
     * end of a file; any other end cuts it. */
    src->st.lr.keep_cut = src->conf.tcp_reconnect_on_close;
    src->have_stream = true;
    src->state = TCP_CONNECTED;
    return TDM_OK;
}

/* Dead-letters the bytes of a line the end of the connection cut
 * (@p why says how it ended), located at the line they would have been. */
static void report_cut(tdm__source *src, const char *why)
{
    const char *p;
    size_t len = tdm__lines_rest(&src->st.lr, &p);
    char loc[400], reason[256];

    if (len == 0 || !src->dead)
        return;
    if (len > TDM__RAW_MAX)
        len = TDM__RAW_MAX;
    snprintf(loc, sizeof loc, "%s:%lld", src->st.name,
             (long long)src->st.lr.line_no + 1);
    snprintf(reason, sizeof reason,
             "line cut: the connection ended (%s) before its newline", why);
    src->dead(src->dead_ud, loc, reason, p, len);
}

/* The connection ended other than by a close that ends the input
 * (@p e: the read's errno, 0 for a clean close).  Reports a cut line,
 * closes the socket and schedules the first attempt.  TDM_OK, or
 * TDM_ERR_IO when the source does not reconnect (poll_error says why). */
static tdm_err connection_lost(tdm__source *src, int e)
{
    int64_t timeout = src->conf.tcp_reconnect_timeout;

    snprintf(src->lost_why, sizeof src->lost_why, "%s",
             e ? strerror(e) : "closed by the peer");
    report_cut(src, src->lost_why);
    tdm__stream_free(&src->st);
    src->have_stream = false;
    if (timeout <= 0) {
        snprintf(src->errmsg, sizeof src->errmsg,
                 "tcp %s: connection lost (%s); not reconnecting "
                 "(tcp.reconnect.timeout is 0)",
                 src->conf.tcp_address, src->lost_why);
        src->state = TCP_ENDED;
        return TDM_ERR_IO;
    }
    tcp_log(src, "connection lost (%s); reconnecting for up to %lld ms",
            src->lost_why, (long long)timeout);
    src->lost_at = tcp_now(src);
    src->attempts = 0;
    src->backoff = src->conf.tcp_backoff > 0 ? src->conf.tcp_backoff : 1;
    src->next_at = src->lost_at + src->backoff;
    src->state = TCP_WAITING;
    return TDM_OK;
}

/* An attempt failed: the next one after the back-off (doubled, at most
 * max_backoff), no later than the timeout; past it the source fails. */
static tdm_err attempt_failed(tdm__source *src, int64_t now)
{
    int64_t give_up = src->lost_at + src->conf.tcp_reconnect_timeout;
    int64_t max = src->conf.tcp_max_backoff > 0 ? src->conf.tcp_max_backoff
                                                : src->backoff;

    src->attempts++;
    if (now >= give_up) {
        snprintf(src->errmsg, sizeof src->errmsg,
                 "tcp %s: connection lost (%s); no reconnection within "
                 "tcp.reconnect.timeout (%lld ms, %d attempts, the last: "
                 "%s)",
                 src->conf.tcp_address, src->lost_why,
                 (long long)src->conf.tcp_reconnect_timeout, src->attempts,
                 src->why);
        src->state = TCP_ENDED;
        return TDM_ERR_IO;
    }
    src->backoff *= 2;
    if (src->backoff > max)
        src->backoff = max;
    src->next_at = now + src->backoff;
    if (src->next_at > give_up)
        src->next_at = give_up;
    src->state = TCP_WAITING;
    return TDM_OK;
}

/* One step towards a new connection, waiting at most ~50 ms: wait for
 * the next attempt, start it, or see it through.  TDM_OK (connected or
 * not yet), TDM_ERR_IO (given up), NOMEM. */
static tdm_err reconnect_step(tdm__source *src)
{
    int64_t now = tcp_now(src);

    if (src->state == TCP_WAITING) {
        if (now < src->next_at) {
            int64_t ms = src->next_at - now;
            poll(NULL, 0, (int)(ms < TCP_POLL_MS ? ms : TCP_POLL_MS));
            return TDM_OK;
        }
        tdm_err err = dial_start(src);
        if (err != TDM_OK)
            return attempt_failed(src, tcp_now(src));
        src->state = TCP_CONNECTING;
    }
    int64_t left = src->dl.deadline - now;
    int fd = -1;
    int rc = dial_step(src, left < TCP_POLL_MS ? left : TCP_POLL_MS, &fd);
    if (rc < 0)
        return attempt_failed(src, tcp_now(src));
    if (rc == 0)
        return TDM_OK;
    tcp_log(src, "reconnected after %d failed attempts (connection %lld)",
            src->attempts, (long long)src->n_conn + 1);
    return start_stream(src, fd);
}

/* ---- The source ---- */

static void tcp_close(tdm__source *src)
{
    if (!src)
        return;
    if (src->have_stream)
        tdm__stream_free(&src->st);
    dial_stop(&src->dl);
    tdm__partmap_free(&src->pm);
    tdm__free(src);
}

/* The first connection, blocking up to the connect timeout per address.
 * TDM_OK, TDM_ERR_INVAL (bad address), TDM_ERR_IO (the message names
 * the address and the cause), NOMEM. */
static tdm_err connect_first(tdm__source *src, char *errbuf, size_t errbuf_size)
{
    const char *address = src->conf.tcp_address;
    tdm_err err = dial_start(src);
    int rc = 0, fd = -1;

    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "%s", src->why);
    while (rc == 0)
        rc = dial_step(src, src->dl.deadline - tcp_now(src), &fd);
    if (rc < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot connect to %s: %s", address, src->why);
    return start_stream(src, fd);
}

/* Subtask 0 connects; the others read nothing.  TDM_OK, TDM_ERR_INVAL
 * (bad address), TDM_ERR_IO (cannot resolve or connect), NOMEM. */
static tdm_err tcp_open(const tdm__source_conf *conf, int index, int count,
                        tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                        int *n_partitions, char *errbuf, size_t errbuf_size)
{
    tdm__source *src;
    tdm_err err;

    *out = NULL;
    *n_partitions = 0;
    if (!conf || !conf->schema || count < 1 || index < 0 || index >= count)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "tcp source: bad arguments");
    src = tdm__calloc(1, sizeof *src);
    if (!src)
        return TDM_ERR_NOMEM;
    src->conf = *conf;
    src->dead = dead;
    src->dead_ud = dead_ud;
    src->dl.fd = -1;
    src->state = TCP_ENDED;
    if (index == 0) {
        err = connect_first(src, errbuf, errbuf_size);
        if (err != TDM_OK)
            goto fail;
        src->reader = true;
        *n_partitions = conf->partition_field >= 0 ? 0 : 1;
    }
    *out = src;
    return TDM_OK;
fail:
    tcp_close(src);
    return err;
}

/* Reads what the peer sent, waiting at most ~50 ms for it; without a
 * connection, one step towards the next. */
static tdm_err tcp_poll(tdm__source *src, tdm__batch *b, size_t max,
                        uint8_t *finished, int *eof)
{
    size_t limit = b->n + max > b->cap ? b->cap : b->n + max;
    int state;
    tdm_err err;

    *eof = 0;
    if (!src->reader || src->state == TCP_ENDED) {
        *eof = 1;
        return TDM_OK;
    }
    if (src->state != TCP_CONNECTED)
        return reconnect_step(src);
    err = tdm__stream_read(&src->st, &src->conf, b, limit, 0, &src->pm,
                           src->dead, src->dead_ud, TCP_POLL_MS, &state);
    if (err == TDM_ERR_IO)
        return connection_lost(
            src, src->st.lr.read_errno ? src->st.lr.read_errno : EIO);
    if (err != TDM_OK || state != TDM__STREAM_END)
        return err;
    if (src->conf.tcp_reconnect_on_close)
        return connection_lost(src, 0);
    src->state = TCP_ENDED;
    if (finished && src->conf.partition_field < 0)
        finished[0] = 1;
    *eof = 1;
    return TDM_OK;
}

/* Why the last poll failed (version 5). */
static const char *tcp_poll_error(tdm__source *src)
{
    return src ? src->errmsg : NULL;
}

/* A socket cannot be read again: no checkpoint position (a job that
 * checkpoints refuses this source; docs/checkpoints.md). */
static tdm_err tcp_snapshot(tdm__source *src, struct tdm__enc *e, char *errbuf,
                            size_t errbuf_size)
{
    (void)e;
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                     "source '%s': a tcp socket cannot be replayed, so it "
                     "has no checkpoint position",
                     src && src->conf.name ? src->conf.name : "?");
}

static tdm_err tcp_restore(tdm__source *src, struct tdm__dec *d, char *errbuf,
                           size_t errbuf_size)
{
    (void)d;
    return tcp_snapshot(src, NULL, errbuf, errbuf_size);
}

const tdm__source_vtab tdm__tcp_source = {
    .version = 5,
    .open = tcp_open,
    .poll = tcp_poll,
    .close = tcp_close,
    .snapshot = tcp_snapshot,
    .restore = tcp_restore,
    .poll_error = tcp_poll_error,
};
