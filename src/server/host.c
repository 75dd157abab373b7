/* SPDX-License-Identifier: MIT */
/* host.c - which Host headers the server answers: the defence against
 * DNS rebinding.  A web page on evil.example can make its own name point
 * at 127.0.0.1 and then read http://evil.example:8081/jobs/x/late as a
 * same-origin request: the browser connects to us, but the Host header
 * still says evil.example.  So the server answers only the names a
 * browser uses when the page really is ours:
 *
 *   bound to            allowed host names (any port)
 *   127.0.0.1, ::1      that address, localhost
 *   0.0.0.0, ::         any IP address literal, localhost
 *   another address     that address
 *   always              the names of http.allowed_hosts ("*": any)
 *
 * An IP literal is safe because a rebinding page needs a name it
 * controls; the port is not checked because rebinding does not change
 * it while port mapping (docker -p, ssh -L) does.  A request without
 * Host (HTTP/1.0) is answered: only browsers rebind, and they always
 * send one.  Total over arbitrary bytes (fuzzed by fuzz_router.c). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

#include "server/server.h"

/* Fills *r for a server bound to @p ss (see server.h). */
void tdm__host_rule_init(tdm__host_rule *r, const struct sockaddr_storage *ss,
                         const char *allow)
{
    static const unsigned char v6_loop[16] = {[15] = 1};
    static const unsigned char v6_any[16] = {0};

    memset(r, 0, sizeof *r);
    r->allow = allow;
    r->family = ss->ss_family;
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        memcpy(r->ip, &a->sin6_addr, 16);
        r->any_ip = memcmp(r->ip, v6_any, 16) == 0;
        r->localhost = r->any_ip || memcmp(r->ip, v6_loop, 16) == 0;
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        uint32_t ip = ntohl(a->sin_addr.s_addr);
        memcpy(r->ip, &a->sin_addr, 4);
        r->any_ip = ip == 0;
        r->localhost = r->any_ip || (ip >> 24) == 127;
    }
}

/* The name part of "NAME[:PORT]" (an IPv6 literal keeps its brackets)
 * as @p s .. *len.  Returns 0 when the text is no host at all: empty, an
 * unclosed bracket, or a port that is not digits. */
static int host_name(const char *s, size_t n, size_t *len)
{
    size_t i;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL)
            return 0;
        i = (size_t)(close - s) + 1;
    } else {
        for (i = 0; i < n && s[i] != ':'; i++)
            ;
    }
    if (i == 0 || (i < n && s[i] != ':'))
        return 0;
    for (size_t k = i + 1; k < n; k++)
        if (s[k] < '0' || s[k] > '9')
            return 0;
    *len = i;
    return 1;
}

/* Parses the IP literal @p name (n bytes: "1.2.3.4" or "[::1]") into
 * @p ip and returns its family, or 0 when it is not one. */
static int ip_literal(const char *name, size_t n, unsigned char ip[16])
{
    char buf[64];
    int v6 = n > 2 && name[0] == '[';
    if (v6) {
        name++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof buf || memchr(name, '\0', n) != NULL)
        return 0;
    memcpy(buf, name, n);
    buf[n] = '\0';
    if (v6)
        return inet_pton(AF_INET6, buf, ip) == 1 ? AF_INET6 : 0;
    return inet_pton(AF_INET, buf, ip) == 1 ? AF_INET : 0;
}

/* True when @p name (n bytes) is one of the comma-separated names of
 * @p allow (spaces around a name are ignored; a name may carry a port,
 * which is ignored), or @p allow has the entry "*", the only one that
 * matches a NULL name. */
static int in_allow_list(const char *allow, const char *name, size_t n)
{
    while (allow != NULL && *allow != '\0') {
        size_t e = strcspn(allow, ","), b = 0, len;
        while (b < e && allow[b] == ' ')
            b++;
        while (e > b && allow[e - 1] == ' ')
            e--;
        if (e - b == 1 && allow[b] == '*')
            return 1;
        if (host_name(allow + b, e - b, &len) && len == n &&
            strncasecmp(allow + b, name, n) == 0)
            return 1;
        allow += strcspn(allow, ",");
        if (*allow == ',')
            allow++;
    }
    return 0;
}

/* Decides whether a request with Host header @p host is answered (see
 * the table above and server.h). */
int tdm__host_allowed(const tdm__host_rule *r, const char *host)
{
    unsigned char ip[16];
    size_t n;
    int family;

    if (host == NULL)
        return 1;
    if (!host_name(host, strlen(host), &n))
        return in_allow_list(r->allow, NULL, 0);
    if (in_allow_list(r->allow, host, n))
        return 1;
    if (r->localhost && n == 9 && strncasecmp(host, "localhost", 9) == 0)
        return 1;
    family = ip_literal(host, n, ip);
    if (family == 0)
        return 0;
    if (r->any_ip)
        return 1;
    return family == r->family &&
           memcmp(ip, r->ip, family == AF_INET6 ? 16 : 4) == 0;
}
