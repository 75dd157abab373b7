/* SPDX-License-Identifier: MIT */
/* lines.c - a buffered line reader over a file descriptor.
 *
 * Lines are returned in place from one buffer (64 KiB to start with), so
 * reading allocates nothing per line.  The buffer doubles for a longer
 * line, up to TDM__LINE_MAX; a line longer than that is reported once as
 * TDM__LINE_TOO_LONG (with its first bytes) and skipped up to its
 * newline.  A last line without a newline is an ordinary line, except
 * for a reader that keeps cut lines: a socket's peer can close or reset
 * the connection in the middle of a line, and the bytes it did send are
 * then a fragment for the caller to report, not a record.  Pipes,
 * terminals and sockets are polled first, so that a caller can stop
 * waiting after a timeout and come back later.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "connect/conn.h"

#define LINES_INITIAL ((size_t)64 << 10)

/* Starts reading @p fd.  Returns TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__lines_init(tdm__lines *lr, int fd, bool own_fd)
{
    struct stat st;

    memset(lr, 0, sizeof *lr);
    lr->fd = fd;
    lr->own_fd = own_fd;
    lr->wait = !(fstat(fd, &st) == 0 && S_ISREG(st.st_mode));
    lr->cap = LINES_INITIAL;
    lr->buf = tdm__malloc(lr->cap);
    if (!lr->buf)
        return TDM_ERR_NOMEM;
    return TDM_OK;
}

/* Frees the buffer and closes an owned descriptor; accepts a zeroed or
 * already freed reader. */
void tdm__lines_free(tdm__lines *lr)
{
    if (!lr)
        return;
    tdm__free(lr->buf);
    lr->buf = NULL;
    if (lr->own_fd && lr->fd >= 0)
        close(lr->fd);
    lr->fd = -1;
    lr->own_fd = false;
}

/* Makes room after lr->end: moves unread bytes to the front, else grows
 * the buffer (up to the line limit).  Returns 0, or -1 when the buffer
 * is full at the limit, or -2 on OOM. */
static int make_room(tdm__lines *lr)
{
    if (lr->beg > 0) {
        size_t n = lr->end - lr->beg;
        memmove(lr->buf, lr->buf + lr->beg, n);
        lr->scan -= lr->beg;
        lr->beg = 0;
        lr->end = n;
        return 0;
    }
    if (lr->end < lr->cap)
        return 0;
    if (lr->cap > TDM__LINE_MAX)
        return -1;
    {
        size_t cap = lr->cap * 2;
        char *nb;
        if (cap > TDM__LINE_MAX + 1)
            cap = TDM__LINE_MAX + 1;
        nb = tdm__realloc(lr->buf, cap);
        if (!nb)
            return -2;
        lr->buf = nb;
        lr->cap = cap;
    }
    return 0;
}

/* One read() into the free space.  Returns >0 bytes, 0 at end of input,
 * -1 on error, -2 when nothing is available within the timeout. */
static ssize_t fill(tdm__lines *lr, int timeout_ms)
{
    ssize_t got;

    if (lr->wait) {
        struct pollfd pfd = {.fd = lr->fd, .events = POLLIN};
        int rc = poll(&pfd, 1, timeout_ms);
        if (rc == 0 || (rc < 0 && errno == EINTR))
            return -2;
        if (rc < 0)
            return -1;
    }
    do {
        got = read(lr->fd, lr->buf + lr->end, lr->cap - lr->end);
    } while (got < 0 && errno == EINTR);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return -2;
    if (got < 0)
        lr->read_errno = errno;
    return got;
}

/* Returns the line buf[beg, nl) (CR of a CRLF removed) and moves past
 * it. */
static int take_line(tdm__lines *lr, size_t nl, size_t next, const char **line,
                     size_t *len)
{
    size_t e = nl;
    if (e > lr->beg && lr->buf[e - 1] == '\r')
        e--;
    *line = lr->buf + lr->beg;
    *len = e - lr->beg;
    lr->beg = next;
    lr->scan = next;
    lr->line_no++;
    return TDM__LINE_OK;
}

/* The next line (see conn.h).  One loop step: look for a newline in the
 * bytes not scanned yet; without one, either the input has ended (the
 * rest is the last line), or the buffer must make room - compact, grow,
 * or give up on an over-long line - and one read() adds bytes.  "scan"
 * keeps a long line from being searched again from its start after
 * every read. */
int tdm__lines_next(tdm__lines *lr, const char **line, size_t *len,
                    int timeout_ms)
{
    for (;;) {
        /* A newline among the bytes not yet scanned? */
        if (lr->scan < lr->beg)
            lr->scan = lr->beg;
        if (lr->scan < lr->end) {
            char *nl = memchr(lr->buf + lr->scan, '\n', lr->end - lr->scan);
            if (nl) {
                size_t at = (size_t)(nl - lr->buf);
                if (lr->skipping) {
                    /* The end of an over-long line: drop it. */
                    lr->skipping = false;
                    lr->beg = lr->scan = at + 1;
                    continue;
                }
                return take_line(lr, at, at + 1, line, len);
            }
            lr->scan = lr->end;
        }
        /* Bytes of an over-long line are dropped as they come. */
        if (lr->skipping) {
            lr->beg = lr->scan = lr->end = 0;
        }
        if (lr->eof) {
            /* A cut line stays in the buffer for tdm__lines_rest. */
            if (lr->keep_cut)
                return TDM__LINE_EOF;
            if (lr->beg < lr->end && !lr->skipping)
                return take_line(lr, lr->end, lr->end, line, len);
            lr->beg = lr->scan = lr->end = 0;
            return TDM__LINE_EOF;
        }
        {
            int rc = make_room(lr);
            if (rc == -2) {
                errno = ENOMEM;
                return TDM__LINE_ERROR;
            }
            if (rc == -1 || lr->end - lr->beg > TDM__LINE_MAX) {
                /* No newline within the limit: report the line's start,
                 * skip the rest. */
                size_t show = lr->end - lr->beg;
                if (show > TDM__RAW_MAX)
                    show = TDM__RAW_MAX;
                *line = lr->buf + lr->beg;
                *len = show;
                lr->line_no++;
                lr->skipping = true;
                /* The bytes stay readable until the next call, which
                 * discards them. */
                lr->scan = lr->end;
                return TDM__LINE_TOO_LONG;
            }
        }
        {
            ssize_t got = fill(lr, timeout_ms);
            if (got == -2)
                return TDM__LINE_AGAIN;
            if (got < 0)
                return TDM__LINE_ERROR;
            if (got == 0)
                lr->eof = true;
            lr->end += (size_t)got;
            lr->pos += got;
        }
    }
}

/* The bytes after the last newline (see conn.h): after an error or the
 * end they are all the reader holds of the line that was cut. */
size_t tdm__lines_rest(const tdm__lines *lr, const char **p)
{
    *p = lr->buf ? lr->buf + lr->beg : "";
    if (lr->skipping || !lr->buf)
        return 0;
    return lr->end - lr->beg;
}

/* ---- Positions (checkpoints) ---- */

/* The input offset of the next byte a line will start from (see conn.h):
 * bytes read minus those still buffered; while an over-long line is
 * being skipped every buffered byte belongs to it, so the position is
 * what was read. */
int64_t tdm__lines_offset(const tdm__lines *lr)
{
    if (lr->skipping)
        return lr->pos;
    return lr->pos - (int64_t)(lr->end - lr->beg);
}

/* Moves a regular file's reader to @p offset (see conn.h). */
tdm_err tdm__lines_seek(tdm__lines *lr, int64_t offset, int64_t line_no,
                        bool skipping)
{
    if (offset < 0 || lseek(lr->fd, (off_t)offset, SEEK_SET) < 0)
        return TDM_ERR_IO;
    lr->beg = lr->end = lr->scan = 0;
    lr->eof = false;
    lr->skipping = skipping;
    lr->pos = offset;
    lr->line_no = line_no;
    return TDM_OK;
}
