/* SPDX-License-Identifier: MIT */
/* http_get.c - a minimal HTTP/1.1 client for tests/cli/http.sh, so the
 * end-to-end tests of `tidemark run --http` need no curl or wget:
 *   http_get [-X METHOD] [-t TOKEN] [-H HOST] [-d BODY] [-i] PORT TARGET
 * sends METHOD (GET) TARGET to 127.0.0.1:PORT (with a bearer token if
 * given; with HOST as the Host header, 127.0.0.1:PORT by default; with
 * BODY as a JSON body) and
 * prints the body (-i: status line and headers first).  Exit
 * status: 0 for 2xx, 3 for another status ("HTTP <code>" on stderr), 1
 * when the server cannot be reached, 2 on bad usage. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr, "usage: http_get [-X METHOD] [-t TOKEN] [-H HOST] "
                    "[-d BODY] [-i] PORT TARGET\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *method = "GET", *token = NULL, *host = NULL, *target;
    const char *data = NULL;
    char clen[96] = "";
    int head = 0, i = 1, fd, status = 0;
    long port;
    char req[8192], hostbuf[32], *buf, *body, *end;
    size_t n = 0, cap = 1 << 16, len, off = 0;
    struct sockaddr_in a;
    struct timeval tv = {30, 0};

    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-X") == 0 && i + 1 < argc)
            method = argv[++i];
        else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
            token = argv[++i];
        else if (strcmp(argv[i], "-H") == 0 && i + 1 < argc)
            host = argv[++i];
        else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc)
            data = argv[++i];
        else if (strcmp(argv[i], "-i") == 0)
            head = 1;
        else
            return usage();
    }
    if (argc - i != 2)
        return usage();
    port = strtol(argv[i], NULL, 10);
    target = argv[i + 1];
    if (port <= 0 || port > 65535)
        return usage();
    if (host == NULL) {
        snprintf(hostbuf, sizeof hostbuf, "127.0.0.1:%ld", port);
        host = hostbuf;
    }
    if (data)
        snprintf(clen, sizeof clen,
                 "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                 strlen(data));
    len = (size_t)snprintf(
        req, sizeof req,
        "%s %s HTTP/1.1\r\nHost: %s\r\n"
        "%s%s%s%sConnection: close\r\n\r\n%s",
        method, target, host, token ? "Authorization: Bearer " : "",
        token ? token : "", token ? "\r\n" : "", clen, data ? data : "");
    if (len >= sizeof req)
        return usage();

    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "http_get: cannot connect to 127.0.0.1:%ld: %s\n", port,
                strerror(errno));
        return 1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (off < len) {
        ssize_t w = write(fd, req + off, len - off);
        if (w <= 0) {
            fprintf(stderr, "http_get: write: %s\n", strerror(errno));
            return 1;
        }
        off += (size_t)w;
    }
    buf = malloc(cap + 1);
    for (;;) {
        ssize_t r;
        if (buf == NULL)
            return 1;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            continue;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    end = strstr(buf, "\r\n\r\n");
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || end == NULL) {
        fprintf(stderr, "http_get: no HTTP reply\n");
        return 1;
    }
    body = end + 4;
    if (head)
        fwrite(buf, 1, (size_t)(body - buf), stdout);
    fwrite(body, 1, n - (size_t)(body - buf), stdout);
    free(buf);
    if (status < 200 || status > 299) {
        fprintf(stderr, "HTTP %d\n", status);
        return 3;
    }
    return 0;
}
