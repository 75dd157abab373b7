/* SPDX-License-Identifier: MIT */
/* tcp_peer.c - the other end of the TCP source in tests/cli/tcp.sh: a
 * server on 127.0.0.1 that plays a script, so that what the source sees
 * (lines, a line cut by a reset, a clean close, refused or hanging
 * connects) is fixed by the order of the steps, never by timing:
 *   tcp_peer SCRIPT
 * listens on a port the kernel chooses and runs the steps of SCRIPT, one
 * per line:
 *   ready       print the port and a newline on stdout and close it (the
 *               test starts the source once it read the port, so steps
 *               before this one are done before the source connects)
 *   accept      wait for the source to connect (at most 60 s: a source
 *               that never comes back fails the test instead of hanging)
 *   send TEXT   write TEXT, where \n is a newline, \r a carriage return
 *               and \\ a backslash
 *   request     read from the connection up to the end of an HTTP request's
 *               headers (an empty line), at most 60 s
 *   reset       close the connection with a reset (SO_LINGER 0)
 *   close       close the connection cleanly (FIN)
 *   unlisten    stop listening: later connects are refused
 *   fill        fill the accept queue: later connects hang (time out)
 *   hold        wait until killed (keeps the listener as it is)
 * Exit status 0 when every step ran, 1 when one failed (the step and the
 * reason on stderr), 2 on bad usage. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int lfd = -1, cfd = -1;
static struct sockaddr_in addr;

static int fail(const char *step, const char *why)
{
    fprintf(stderr, "tcp_peer: %s: %s\n", step, why);
    return 1;
}

/* Decodes \n, \r and \\ of @p text in place; returns its length. */
static size_t unescape(char *text)
{
    size_t o = 0;
    for (size_t i = 0; text[i]; i++) {
        if (text[i] == '\\' && text[i + 1] == 'n') {
            text[o++] = '\n';
            i++;
        } else if (text[i] == '\\' && text[i + 1] == 'r') {
            text[o++] = '\r';
            i++;
        } else if (text[i] == '\\' && text[i + 1] == '\\') {
            text[o++] = '\\';
            i++;
        } else {
            text[o++] = text[i];
        }
    }
    return o;
}

static int step_accept(void)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    if (lfd < 0)
        return fail("accept", "not listening");
    if (poll(&p, 1, 60000) != 1)
        return fail("accept", "no connection within 60 s");
    cfd = accept(lfd, NULL, NULL);
    return cfd < 0 ? fail("accept", strerror(errno)) : 0;
}

static int step_send(char *text)
{
    size_t len = unescape(text), off = 0;
    while (off < len) {
        ssize_t n = write(cfd, text + off, len - off);
        if (n < 0)
            return fail("send", strerror(errno));
        off += (size_t)n;
    }
    return 0;
}

/* Reads until the bytes read end with "\r\n\r\n" (a request with no body,
 * as an HTTP GET; so that the close that follows is not a reset for
 * unread data). */
static int step_request(void)
{
    char last[4] = {0}, c;
    struct pollfd p = {.fd = cfd, .events = POLLIN};
    if (cfd < 0)
        return fail("request", "no connection");
    while (memcmp(last, "\r\n\r\n", 4) != 0) {
        if (poll(&p, 1, 60000) != 1)
            return fail("request", "no request within 60 s");
        ssize_t n = read(cfd, &c, 1);
        if (n <= 0)
            return fail("request", n ? strerror(errno) : "connection closed");
        memmove(last, last + 1, 3);
        last[3] = c;
    }
    return 0;
}

/* Closes the connection: with a reset when @p rst. */
static int step_close(int rst)
{
    struct linger lg = {1, 0};
    if (cfd < 0)
        return fail(rst ? "reset" : "close", "no connection");
    if (rst && setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg))
        return fail("reset", strerror(errno));
    close(cfd);
    cfd = -1;
    return 0;
}

/* A backlog of 0 holds one connection, which the peer makes itself and
 * never accepts: the kernel then drops the SYNs of later connects. */
static int step_fill(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (listen(lfd, 0) != 0 || fd < 0 ||
        connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        return fail("fill", strerror(errno));
    return 0; /* fd stays open until the peer exits */
}

static int run_step(char *line)
{
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "send ", 5) == 0)
        return step_send(line + 5);
    if (strcmp(line, "accept") == 0)
        return step_accept();
    if (strcmp(line, "request") == 0)
        return step_request();
    if (strcmp(line, "reset") == 0 || strcmp(line, "close") == 0)
        return step_close(line[0] == 'r');
    if (strcmp(line, "unlisten") == 0) {
        close(lfd);
        lfd = -1;
        return 0;
    }
    if (strcmp(line, "fill") == 0)
        return step_fill();
    if (strcmp(line, "ready") == 0) {
        printf("%d\n", ntohs(addr.sin_port));
        return fclose(stdout) == 0 ? 0 : fail("ready", strerror(errno));
    }
    if (strcmp(line, "hold") == 0) {
        for (;;)
            pause();
    }
    return line[0] ? fail(line, "unknown step") : 0;
}

int main(int argc, char **argv)
{
    socklen_t len = sizeof addr;
    char line[4096];
    FILE *script;

    if (argc != 2 || !(script = fopen(argv[1], "r"))) {
        fprintf(stderr, "usage: tcp_peer SCRIPT\n");
        return 2;
    }
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(lfd, 4) != 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &len) != 0)
        return fail("listen", strerror(errno));
    while (fgets(line, sizeof line, script))
        if (run_step(line) != 0)
            return 1;
    return 0;
}
