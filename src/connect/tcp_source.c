/* SPDX-License-Identifier: MIT */
/* tcp_source.c - a source that connects to host:port and reads one record
 * per line (JSON or CSV, as a file) until the peer closes the connection.
 *
 * The connection is one partition, read by subtask 0 (the others get no
 * partition).  Reads wait at most ~50 ms (poll), so the subtask regains
 * control to emit periodic watermarks and notice idleness while the peer
 * is silent.  Dead letters are located "host:port:line".
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "connect/conn.h"

/* How long connect() may take before the source gives up. */
#define TCP_CONNECT_TIMEOUT_MS 5000

struct tdm__source {
    tdm__source_conf conf;
    tdm__dead_fn dead;
    void *dead_ud;
    tdm__stream st;
    bool have_stream;
    tdm__partmap pm; /* partition_field values */
};

static void tcp_close(tdm__source *src)
{
    if (!src)
        return;
    if (src->have_stream)
        tdm__stream_free(&src->st);
    tdm__partmap_free(&src->pm);
    tdm__free(src);
}

/* Connects one address with a timeout.  Returns the socket, or -1 with
 * errno set. */
static int connect_one(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
    int flags, rc, e = 0;

    if (fd < 0)
        return -1;
    flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        socklen_t len = sizeof e;
        rc = poll(&pfd, 1, TCP_CONNECT_TIMEOUT_MS);
        if (rc == 0) {
            e = ETIMEDOUT;
        } else if (rc < 0) {
            e = errno;
        } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) {
            e = errno;
        }
    } else if (rc != 0) {
        e = errno;
    }
    if (e != 0) {
        close(fd);
        errno = e;
        return -1;
    }
    /* Back to blocking reads: the line reader polls before reading. */
    fcntl(fd, F_SETFL, flags);
    return fd;
}

/* Resolves and connects "host:port" ("[::1]:9000" for IPv6) into *out.
 * Returns TDM_OK, TDM_ERR_INVAL (not host:port) or TDM_ERR_IO (cannot
 * resolve or connect), with a message in errbuf. */
static tdm_err dial(const char *name, const char *address, int *out,
                    char *errbuf, size_t errbuf_size)
{
    char host[256], port[32];
    const char *colon = address ? strrchr(address, ':') : NULL;
    size_t hl;
    struct addrinfo hints, *res = NULL;
    int rc, fd = -1, e = 0;

    if (!colon || colon == address || !colon[1] ||
        strlen(colon + 1) >= sizeof port ||
        (size_t)(colon - address) >= sizeof host) {
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "tcp.address: expected host:port, got \"%s\"",
                         address ? address : "");
    }
    hl = (size_t)(colon - address);
    memcpy(host, address, hl);
    host[hl] = '\0';
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    snprintf(port, sizeof port, "%s", colon + 1);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot resolve '%s': %s",
                         address, gai_strerror(rc));
    }
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = connect_one(ai);
        if (fd < 0)
            e = errno;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot connect to %s: %s",
                         address, strerror(e));
    *out = fd;
    return TDM_OK;
}

/* Subtask 0 connects; the others read nothing.  TDM_OK, TDM_ERR_INVAL
 * (bad address), TDM_ERR_IO (cannot resolve or connect), NOMEM. */
static tdm_err tcp_open(const tdm__source_conf *conf, int index, int count,
                        tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                        int *n_partitions, char *errbuf, size_t errbuf_size)
{
    const char *name = conf && conf->name ? conf->name : "?";
    tdm__source *src;
    tdm_err err;
    int fd;

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
    if (index == 0) {
        err = dial(name, conf->tcp_address, &fd, errbuf, errbuf_size);
        if (err != TDM_OK) {
            tcp_close(src);
            return err;
        }
        err = tdm__stream_init(&src->st, &src->conf, fd, true,
                               conf->tcp_address);
        if (err != TDM_OK) {
            tcp_close(src); /* the stream closed fd */
            return err;
        }
        src->have_stream = true;
        *n_partitions = conf->partition_field >= 0 ? 0 : 1;
    }
    *out = src;
    return TDM_OK;
}

/* Reads what the peer sent, waiting at most ~50 ms for it. */
static tdm_err tcp_poll(tdm__source *src, tdm__batch *b, size_t max,
                        uint8_t *finished, int *eof)
{
    size_t limit = b->n + max > b->cap ? b->cap : b->n + max;
    int state;
    tdm_err err;

    *eof = 0;
    if (!src->have_stream || src->st.done) {
        *eof = 1;
        return TDM_OK;
    }
    err = tdm__stream_read(&src->st, &src->conf, b, limit, 0, &src->pm,
                           src->dead, src->dead_ud, 50, &state);
    if (err != TDM_OK)
        return err;
    if (state == TDM__STREAM_END) {
        if (finished && src->conf.partition_field < 0)
            finished[0] = 1;
        *eof = 1;
    }
    return TDM_OK;
}

/* A socket cannot be read again: no checkpoint position (a job that
 * checkpoints refuses this source; docs/checkpoints.md). */
static tdm_err tcp_snapshot(tdm__source *src, struct tdm__enc *e,
                            char *errbuf, size_t errbuf_size)
{
    (void)e;
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                     "source '%s': a tcp socket cannot be replayed, so it "
                     "has no checkpoint position",
                     src && src->conf.name ? src->conf.name : "?");
}

static tdm_err tcp_restore(tdm__source *src, struct tdm__dec *d,
                           char *errbuf, size_t errbuf_size)
{
    (void)d;
    return tcp_snapshot(src, NULL, errbuf, errbuf_size);
}

const tdm__source_vtab tdm__tcp_source = {
    .version = 3,
    .open = tcp_open,
    .poll = tcp_poll,
    .close = tcp_close,
    .snapshot = tcp_snapshot,
    .restore = tcp_restore,
};
