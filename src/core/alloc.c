/* SPDX-License-Identifier: MIT */
/* alloc.c - the library's allocation functions.
 *
 * Every allocation in src/ goes through here so that tests can make the
 * N-th one fail and check that each API path reports TDM_ERR_NOMEM and
 * leaks nothing.  The fault counter is process-wide and used only by tests.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

static long fail_countdown; /* 0: off; else allocations left before fail */

void tdm__alloc_fail_after(long n)
{
    fail_countdown = n;
}

static bool should_fail(void)
{
    if (fail_countdown <= 0)
        return false;
    if (fail_countdown == 1)
        return true; /* stays at 1: every later allocation fails too */
    fail_countdown--;
    return false;
}

void *tdm__malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *tdm__calloc(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *tdm__realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

void tdm__free(void *p)
{
    free(p);
}

char *tdm__strndup(const char *s, size_t n)
{
    char *d = tdm__malloc(n + 1);
    if (!d)
        return NULL;
    if (n)
        memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void *tdm__memdup(const void *p, size_t n)
{
    void *d = tdm__malloc(n);
    if (d && n)
        memcpy(d, p, n);
    return d;
}
