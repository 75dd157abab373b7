/* SPDX-License-Identifier: MIT */
/* fuzz_router.c - libFuzzer target for the request router and query
 * parser (src/server/router.c) and the Host check (src/server/host.c).
 * Input: "METHOD\nTARGET" (no newline: method NULL); the whole input is
 * also tried as a Host header.  Traps unless both parsers stay in bounds
 * and are deterministic, routes with ids have non-empty NUL-free ids
 * that survive a round trip (percent-encode every byte, parse again),
 * only GET and HEAD reach a route, and the Host check keeps the promises
 * of host_check below.  replay.c runs tests/fuzz/corpus_router/ in every build;
 * with -DTDM_FUZZ=ON (clang):
 *   ./build-fuzz/fuzz_router -max_len=1024 tests/fuzz/corpus_router */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzz_check.h"

/* True for the routes that carry a job id. */
static int has_job(tdm__route_id id)
{
    return id == TDM__R_JOB || id == TDM__R_VERTEX_WATERMARKS ||
           id == TDM__R_JOB_METRICS || id == TDM__R_PARTITIONS ||
           id == TDM__R_HISTORY || id == TDM__R_LATE ||
           id == TDM__R_DIAGNOSIS || id == TDM__R_WINDOW;
}

/* Appends every byte of @p s percent-encoded to @p out at *o. */
static void encode(const char *s, char *out, size_t *o)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        out[(*o)++] = '%';
        out[(*o)++] = hex[c >> 4];
        out[(*o)++] = hex[c & 15];
    }
}

/* The round trip: the route's ids, fully percent-encoded into a fresh
 * path of the same shape, must parse to the same route and ids. */
static void round_trip(const char *method, const tdm__route *r)
{
    static const char *const sub[] = {
        [TDM__R_JOB_METRICS] = "metrics", [TDM__R_PARTITIONS] = "partitions",
        [TDM__R_HISTORY] = "history",     [TDM__R_LATE] = "late",
        [TDM__R_DIAGNOSIS] = "diagnosis", [TDM__R_WINDOW] = "windows",
    };
    char path[1024];
    size_t o = 0;
    tdm__route again;

    memcpy(path, "/jobs/", 6);
    o = 6;
    encode(r->job, path, &o);
    if (r->id == TDM__R_VERTEX_WATERMARKS) {
        memcpy(path + o, "/vertices/", 10);
        o += 10;
        encode(r->vertex, path, &o);
        memcpy(path + o, "/watermarks", 11);
        o += 11;
    } else if (r->id != TDM__R_JOB) {
        size_t n = strlen(sub[r->id]);
        path[o++] = '/';
        memcpy(path + o, sub[r->id], n);
        o += n;
    }
    path[o] = '\0';
    tdm__route_parse(method, path, &again);
    CHECK(again.id == r->id);
    CHECK(strcmp(again.job, r->job) == 0);
    CHECK(strcmp(again.vertex, r->vertex) == 0);
}

/* Looks @p name up with several output sizes and checks the contract. */
static void query(const char *q, const char *name)
{
    static const size_t sizes[] = {1, 2, 8, 64, 1024};
    int first = -2;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char out[1024 + 8];
        int rc;
        memset(out, 'x', sizeof out);
        rc = tdm__query_get(q, name, out, sizes[i]);
        CHECK(rc >= -1 && rc <= 1);
        CHECK(memchr(out, '\0', sizes[i]) != NULL);
        CHECK(out[sizes[i]] == 'x'); /* nothing written past the end */
        if (rc != 1)
            CHECK(out[0] == '\0');
        /* Absent stays absent whatever the buffer. */
        if (first == -2)
            first = rc;
        CHECK((first == 0) == (rc == 0));
    }
}

/* True when @p host starts with @p name followed by its end or ':'. */
static int names(const char *host, const char *name)
{
    size_t n = strlen(name);
    return strncasecmp(host, name, n) == 0 &&
           (host[n] == '\0' || host[n] == ':');
}

/* The Host check with the input (up to its first NUL) as the header, for
 * a loopback, a wildcard and an IPv6 server: deterministic; "*" admits
 * everything and the allow list only adds; a loopback server without an
 * allow list admits only "127.0.0.1" and "localhost" (any port). */
static void host_check(const char *host)
{
    struct sockaddr_storage ss;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    tdm__host_rule plain, listed, any;
    int ok;

    memset(&ss, 0, sizeof ss);
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    tdm__host_rule_init(&plain, &ss, NULL);
    tdm__host_rule_init(&listed, &ss, "a.example, b.example:1,,");
    tdm__host_rule_init(&any, &ss, " * ");
    ok = tdm__host_allowed(&plain, host);
    CHECK(ok == tdm__host_allowed(&plain, host));
    CHECK(!ok || names(host, "127.0.0.1") || names(host, "localhost"));
    CHECK(!ok || tdm__host_allowed(&listed, host));
    CHECK(tdm__host_allowed(&any, host));
    CHECK(tdm__host_allowed(&plain, NULL));
    v4->sin_addr.s_addr = htonl(INADDR_ANY);
    tdm__host_rule_init(&plain, &ss, "");
    CHECK(!ok || tdm__host_allowed(&plain, host));
    memset(&ss, 0, sizeof ss);
    v6->sin6_family = AF_INET6;
    tdm__host_rule_init(&plain, &ss, NULL);
    ok = tdm__host_allowed(&plain, host);
    CHECK(ok == tdm__host_allowed(&plain, host));
    CHECK(!ok || host[0] == '[' || strchr(host, '.') != NULL ||
          names(host, "localhost"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    const char *method = NULL, *target;
    char *nl;
    tdm__route r, r2;

    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    host_check(buf);
    nl = memchr(buf, '\n', size);
    if (nl != NULL) {
        *nl = '\0';
        method = buf;
        target = nl + 1;
    } else {
        target = buf;
    }

    memset(&r, 0xA5, sizeof r);
    tdm__route_parse(method, target, &r);
    CHECK(r.id >= TDM__R_NOT_FOUND && r.id <= TDM__R_PROMETHEUS);
    CHECK(memchr(r.job, '\0', sizeof r.job) != NULL);
    CHECK(memchr(r.vertex, '\0', sizeof r.vertex) != NULL);
    memset(&r2, 0x5A, sizeof r2);
    tdm__route_parse(method, target, &r2);
    CHECK(r2.id == r.id && strcmp(r2.job, r.job) == 0 &&
          strcmp(r2.vertex, r.vertex) == 0);
    if (r.id > TDM__R_METHOD) {
        /* A route was reached: only by GET or HEAD. */
        CHECK(method != NULL &&
              (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0));
    }
    if (has_job(r.id)) {
        CHECK(r.job[0] != '\0');
        CHECK(r.id != TDM__R_VERTEX_WATERMARKS || r.vertex[0] != '\0');
        round_trip(method, &r);
    } else {
        CHECK(r.job[0] == '\0' || r.id == TDM__R_METHOD);
    }
    if (strchr(target, '?') != NULL) {
        const char *q = strchr(target, '?') + 1;
        query(q, "get");
        query(q, "window");
        query(q, "");
    }
    query(target, "vertex");
    free(buf);
    return 0;
}
