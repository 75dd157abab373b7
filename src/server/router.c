/* SPDX-License-Identifier: MIT */
/* router.c - turns a request's method and raw path into a route of the
 * REST API (server.h), and reads parameters out of the query string.
 * Both work on the bytes exactly as the client sent them: ids are
 * percent-decoded one path segment at a time, so "/jobs/a%2Fb" names the
 * job "a/b".  Both are total over arbitrary input (tests/fuzz/
 * fuzz_router.c) and never allocate.
 */
#include <string.h>

#include "core.h"
#include "server/server.h"

/* Value of hex digit @p c, or -1. */
static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Length of the valid UTF-8 sequence starting at @p s (at most @p n
 * bytes), or 0 when it is not one: overlong forms, surrogates and code
 * points above U+10FFFF are refused, as JSON strings need. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned long cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0;
    return len;
}

/* True when the @p n bytes at @p s are valid UTF-8. */
static int utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t l = utf8_seq(u + i, n - i);
        if (l == 0)
            return 0;
        i += l;
    }
    return 1;
}

/* Percent-decodes the @p n bytes at @p in into @p out (@p out_size bytes
 * with the terminating NUL); with @p plus_space, '+' becomes a space.
 * Returns 0, or -1 on a malformed escape, a decoded NUL, a result that
 * does not fit, or a result that is not valid UTF-8. */
static int pct_decode(const char *in, size_t n, int plus_space, char *out,
                      size_t out_size)
{
    size_t o = 0;
    if (out_size == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '%') {
            int hi, lo;
            if (i + 2 >= n)
                return -1;
            hi = hex_value((unsigned char)in[i + 1]);
            lo = hex_value((unsigned char)in[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        if (c == '\0' || o + 1 >= out_size)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return utf8_valid(out, o) ? 0 : -1;
}

/* The path's segments: up to @p max [start, end) pairs between '/'s of
 * the @p n bytes at @p p (which start with '/').  A single trailing '/'
 * is ignored ("/jobs/" is "/jobs").  Returns the number of segments, or
 * max + 1 when there are more. */
static int split_segments(const char *p, size_t n, const char **seg,
                          size_t *len, int max)
{
    int k = 0;
    size_t i = 1;
    if (n > 1 && p[n - 1] == '/')
        n--;
    if (n <= 1)
        return 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && p[j] != '/')
            j++;
        if (k == max)
            return max + 1;
        seg[k] = p + i;
        len[k] = j - i;
        k++;
        i = j + 1;
    }
    return k;
}

/* True when segment (@p s, @p n) is exactly @p word. */
static int seg_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* The route of a path after "/jobs/:id/" (one segment @p s, @p n). */
static tdm__route_id job_sub_route(const char *s, size_t n)
{
    static const struct {
        const char *word;
        tdm__route_id id;
    } subs[] = {
        {"metrics", TDM__R_JOB_METRICS}, {"partitions", TDM__R_PARTITIONS},
        {"history", TDM__R_HISTORY},     {"late", TDM__R_LATE},
        {"diagnosis", TDM__R_DIAGNOSIS}, {"windows", TDM__R_WINDOW},
        {"config", TDM__R_CONFIG},
    };
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        if (seg_is(s, n, subs[i].word))
            return subs[i].id;
    }
    return TDM__R_NOT_FOUND;
}

/* Parses a request (see server.h).  The order of decisions: a path that
 * names no route is 404 whatever the method; a route whose ids cannot be
 * decoded is 400; a known route with a method other than GET or HEAD is
 * 405, except PATCH on /jobs/:id/config (live settings). */
void tdm__route_parse(const char *method, const char *url, tdm__route *out)
{
    const char *seg[6];
    size_t len[6], n;
    int k;
    tdm__route_id id = TDM__R_NOT_FOUND;

    memset(out, 0, sizeof *out);
    out->id = TDM__R_NOT_FOUND;
    if (url == NULL || url[0] != '/')
        return;
    /* The path ends at the query or the fragment, if the caller left
     * them on. */
    n = strcspn(url, "?#");
    k = split_segments(url, n, seg, len, 5);
    if (k == 0) {
        id = TDM__R_PAGE;
    } else if (k == 1 && seg_is(seg[0], len[0], "index.html")) {
        id = TDM__R_PAGE;
    } else if (k == 1 && seg_is(seg[0], len[0], "metrics")) {
        id = TDM__R_PROMETHEUS;
    } else if (k == 1 && seg_is(seg[0], len[0], "tasks")) {
        id = TDM__R_TASKS;
    } else if (k >= 1 && k <= 5 && seg_is(seg[0], len[0], "jobs")) {
        if (k == 1)
            id = TDM__R_JOBS;
        else if (k == 2)
            id = TDM__R_JOB;
        else if (k == 3)
            id = job_sub_route(seg[2], len[2]);
        else if (k == 5 && seg_is(seg[2], len[2], "vertices") &&
                 seg_is(seg[4], len[4], "watermarks"))
            id = TDM__R_VERTEX_WATERMARKS;
        /* Ids: decoded, non-empty, no NUL, short enough. */
        if (id != TDM__R_NOT_FOUND && k >= 2) {
            if (len[1] == 0)
                return;
            if (pct_decode(seg[1], len[1], 0, out->job, sizeof out->job) != 0) {
                out->job[0] = '\0';
                out->id = TDM__R_BAD_REQUEST;
                return;
            }
        }
        if (id == TDM__R_VERTEX_WATERMARKS) {
            if (len[3] == 0) {
                out->job[0] = '\0';
                return;
            }
            if (pct_decode(seg[3], len[3], 0, out->vertex,
                           sizeof out->vertex) != 0) {
                out->job[0] = out->vertex[0] = '\0';
                out->id = TDM__R_BAD_REQUEST;
                return;
            }
        }
    }
    if (id == TDM__R_NOT_FOUND) {
        out->job[0] = out->vertex[0] = '\0';
        return;
    }
    /* PATCH changes live settings; nothing else changes anything. */
    out->patch =
        id == TDM__R_CONFIG && method != NULL && strcmp(method, "PATCH") == 0;
    if (!out->patch && (method == NULL || (strcmp(method, "GET") != 0 &&
                                           strcmp(method, "HEAD") != 0))) {
        out->id = TDM__R_METHOD;
        out->patchable = id == TDM__R_CONFIG;
        return;
    }
    out->id = id;
}

/* Looks a query parameter up (see server.h).  Parameters are separated
 * by '&' (or ';'); a parameter without '=' has the empty value. */
int tdm__query_get(const char *query, const char *name, char *out,
                   size_t out_size)
{
    const char *p = query;
    char key[64];
    if (out_size > 0)
        out[0] = '\0';
    if (query == NULL || name == NULL)
        return 0;
    while (*p != '\0' && *p != '#') {
        size_t plen = strcspn(p, "&;#");
        const char *eq = memchr(p, '=', plen);
        size_t klen = eq ? (size_t)(eq - p) : plen;
        /* Keys are compared decoded; a key too long to be ours is
         * skipped (it cannot match), a malformed one too. */
        if (klen > 0 && pct_decode(p, klen, 1, key, sizeof key) == 0 &&
            strcmp(key, name) == 0) {
            const char *v = eq ? eq + 1 : p + plen;
            size_t vlen = (size_t)(p + plen - v);
            if (pct_decode(v, vlen, 1, out, out_size) != 0) {
                if (out_size > 0)
                    out[0] = '\0';
                return -1;
            }
            return 1;
        }
        p += plen;
        if (*p == '&' || *p == ';')
            p++;
    }
    return 0;
}
