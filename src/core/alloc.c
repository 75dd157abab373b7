/* SPDX-License-Identifier: MIT */
/* alloc.c - the library's allocation functions.
 *
 * Every allocation in src/ goes through here so that tests can make the
 * N-th one fail and check that each API path reports TDM_ERR_NOMEM and
 * leaks nothing.  That fault counter is a test seam (testhooks.h): it
 * exists only with TDM_TEST_HOOKS, and then it is one process-wide
 * atomic, since every runtime thread allocates.  Without the option each
 * function is its libc call and nothing more.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

#ifdef TDM_TEST_HOOKS
#include <stdatomic.h>

#include "testhooks.h"

static atomic_long fail_countdown; /* 0: off; else allocations left */

void tdm__alloc_fail_after(long n)
{
    atomic_store(&fail_countdown, n);
}

/* Counts one allocation down; true when it is to fail.  The count stays
 * at 1 once it gets there: every later allocation fails too. */
static bool should_fail(void)
{
    long c = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
    while (c > 1)
        if (atomic_compare_exchange_weak(&fail_countdown, &c, c - 1))
            return false;
    return c == 1;
}
#else
static inline bool should_fail(void)
{
    return false;
}
#endif

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
