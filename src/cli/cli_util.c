/* SPDX-License-Identifier: MIT */
/* cli_util.c - the few generic tools the CLI keeps for itself: copying a
 * string, formatting a message into an error buffer, hashing bytes for
 * its own tables (analyze's key interning and distinct window sets).
 *
 * CLI business, not API: the library has its own internal versions and
 * the CLI, a client of tidemark.h only, does not borrow them (not even
 * core/hash.h).  The hash is FNV-1a 64 with its offset basis, then a
 * 64-bit finaliser, so that the low bits serve directly as an
 * open-addressing index; its values are table positions only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A terminated copy of at most len bytes (see cli.h). */
char *tdm__cli_strndup(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d)
        return NULL;
    if (len)
        memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* Formats a message into an error buffer (see cli.h). */
tdm_err tdm__cli_errf(char *errbuf, size_t errbuf_size, tdm_err err,
                      const char *fmt, ...)
{
    if (errbuf && errbuf_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, errbuf_size, fmt, ap);
        va_end(ap);
    }
    return err;
}

/* FNV-1a 64, then a finaliser (see the file comment). */
uint64_t tdm__cli_hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= UINT64_C(1099511628211);
    }
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h;
}
