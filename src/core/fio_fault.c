/* SPDX-License-Identifier: MIT */
/* fio_fault.c - the fault-injection seam of fileio.c (a test hook).
 *
 * Compiled only with TDM_TEST_HOOKS (testhooks.h); a default build has
 * an empty object here.  Each file operation of fileio.c calls
 * tdm__fio_fault_hit() first, which checks one atomic flag ("is any
 * fault armed?"); only when a fault is armed does it take the slow path
 * that counts operations of its kind and fails the chosen one with the
 * chosen errno, exactly as if the system call had failed.  The flag
 * starts at -1 so that the first operation reads TDM_FIO_FAULT from the
 * environment.  The pseudo-errno KILL makes the process SIGKILL itself
 * instead, for crash tests (tests/crash/, tests/cli/checkpoint*.sh,
 * tests/kafka/checkpoint.sh).
 *
 * Invariant: a kind's counter moves only while that kind is armed, and
 * arming or clearing resets it; every field is an atomic, so tests and
 * runtime threads may arm, count and fail concurrently.
 */
#ifdef TDM_TEST_HOOKS

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "testhooks.h"

typedef struct fio_fault {
    atomic_long seen;   /* operations of this kind since armed */
    atomic_long target; /* 0: off; else the first failing operation */
    atomic_long last;   /* the last failing one (LONG_MAX: sticky) */
    atomic_int err;     /* errno to fail with */
} fio_fault;

static fio_fault faults[TDM__FIO_N_OPS];
/* -1: the environment was not read yet; 0: nothing armed; 1: armed. */
static atomic_int fio_armed = -1;
static atomic_long fio_fired;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static const char *const op_names[TDM__FIO_N_OPS] = {
    "open", "write", "fsync", "rename", "unlink", "read", "mkdir", "list",
};

/* The name of a fault kind, for messages (static storage). */
const char *tdm__fio_op_name(tdm__fio_op op)
{
    return (unsigned)op < TDM__FIO_N_OPS ? op_names[op] : "?";
}

static void recompute_armed(void)
{
    int any = 0;
    for (int i = 0; i < TDM__FIO_N_OPS; i++)
        any |= atomic_load(&faults[i].target) > 0;
    atomic_store(&fio_armed, any);
}

/* Arms operations @p n to @p last (inclusive) of kind @p op. */
static void arm(tdm__fio_op op, long n, long last, int err)
{
    fio_fault *f = &faults[op];
    atomic_store(&f->target, 0);
    atomic_store(&f->seen, 0);
    atomic_store(&f->err, err);
    atomic_store(&f->last, last);
    atomic_store(&f->target, n > 0 ? n : 0);
}

static void read_env(void)
{
    const char *spec = getenv("TDM_FIO_FAULT");
    char msg[200];
    if (spec && *spec && tdm__fio_fault_parse(spec, msg, sizeof msg) != TDM_OK)
        fprintf(stderr, "tidemark: ignoring TDM_FIO_FAULT: %s\n", msg);
    recompute_armed();
}

static void ensure_env(void)
{
    pthread_once(&env_once, read_env);
}

/* Arms the n-th operation of kind @p op to fail with @p err (once, or
 * from then on with @p sticky).  Thread-safe; see fileio.h. */
void tdm__fio_fault(tdm__fio_op op, long n, int err, int sticky)
{
    ensure_env();
    if ((unsigned)op >= TDM__FIO_N_OPS)
        return;
    arm(op, n, sticky ? LONG_MAX : n, err);
    recompute_armed();
}

/* Disarms every kind and zeroes the counters.  Thread-safe. */
void tdm__fio_fault_clear(void)
{
    ensure_env();
    for (int i = 0; i < TDM__FIO_N_OPS; i++)
        arm((tdm__fio_op)i, 0, 0, 0);
    atomic_store(&fio_fired, 0);
    recompute_armed();
}

/* Operations of kind @p op counted since it was armed. */
long tdm__fio_fault_count(tdm__fio_op op)
{
    return (unsigned)op < TDM__FIO_N_OPS ? atomic_load(&faults[op].seen) : 0;
}

/* Failures injected since the last clear. */
long tdm__fio_fault_fired(void)
{
    return atomic_load(&fio_fired);
}

/* The slow path: reads the environment once, then counts this operation
 * if its kind is armed.  Returns the errno to fail with, or 0. */
static int fault_slow(tdm__fio_op op)
{
    ensure_env();
    fio_fault *f = &faults[op];
    long target = atomic_load(&f->target);
    if (target <= 0)
        return 0;
    long seen = atomic_fetch_add(&f->seen, 1) + 1;
    if (seen >= target && seen <= atomic_load(&f->last)) {
        atomic_fetch_add(&fio_fired, 1);
        int err = atomic_load(&f->err);
        if (err == TDM__FIO_KILL)
            raise(SIGKILL); /* a crash at this exact point; never returns */
        return err;
    }
    return 0;
}

/* Returns the errno an armed fault assigns to this operation, or 0
 * (testhooks.h); one relaxed atomic load when nothing is armed. */
int tdm__fio_fault_hit(tdm__fio_op op)
{
    if (__builtin_expect(
            atomic_load_explicit(&fio_armed, memory_order_relaxed) != 0, 0))
        return fault_slow(op);
    return 0;
}

static const struct {
    const char *name;
    int err;
} errno_names[] = {
    {"ENOSPC", ENOSPC},      {"EIO", EIO},       {"EDQUOT", EDQUOT},
    {"EROFS", EROFS},        {"EACCES", EACCES}, {"ENOENT", ENOENT},
    {"KILL", TDM__FIO_KILL},
};

/* Parses one "KIND:N[-M]:ERRNO[:sticky]" item of @p len bytes: *n and
 * *last are the first and the last failing operation. */
static tdm_err parse_item(const char *s, size_t len, int *op, long *n,
                          long *last, int *err, char *errbuf,
                          size_t errbuf_size)
{
    char item[128], *save = NULL;
    if (len == 0 || len >= sizeof item)
        goto fail;
    memcpy(item, s, len);
    item[len] = '\0';
    char *kind = strtok_r(item, ":", &save);
    char *num = strtok_r(NULL, ":", &save);
    char *en = strtok_r(NULL, ":", &save);
    char *st = strtok_r(NULL, ":", &save);
    if (!kind || !num || !en || strtok_r(NULL, ":", &save))
        goto fail;
    *op = -1;
    for (int i = 0; i < TDM__FIO_N_OPS; i++)
        if (strcmp(kind, op_names[i]) == 0)
            *op = i;
    char *end;
    errno = 0;
    *n = strtol(num, &end, 10);
    *last = *n;
    if (*end == '-') /* a range: a disk full for a while */
        *last = strtol(end + 1, &end, 10);
    if (*op < 0 || *end || errno || *n <= 0 || *last < *n)
        goto fail;
    *err = 0;
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
        if (strcmp(en, errno_names[i].name) == 0)
            *err = errno_names[i].err;
    if (*err == 0 && strcmp(en, "KILL") != 0) {
        long v = strtol(en, &end, 10);
        if (*end || v <= 0 || v > 4095)
            goto fail;
        *err = (int)v;
    }
    if (st) {
        if (strcmp(st, "sticky") != 0)
            goto fail;
        *last = LONG_MAX;
    }
    return TDM_OK;
fail:
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                     "bad fault \"%.*s\": want KIND:N[-M]:ERRNO[:sticky], "
                     "KIND "
                     "one of open, write, fsync, rename, unlink, read, "
                     "mkdir, list",
                     (int)(len > 100 ? 100 : len), s);
}

/* Parses "KIND:N[-M]:ERRNO[:sticky],..." and arms it all, or nothing on
 * error (TDM_ERR_INVAL with a message).  Borrows @p spec. */
tdm_err tdm__fio_fault_parse(const char *spec, char *errbuf, size_t errbuf_size)
{
    enum { MAX_ITEMS = 16 };
    int ops[MAX_ITEMS], errs[MAX_ITEMS];
    long ns[MAX_ITEMS], lasts[MAX_ITEMS];
    int count = 0;
    const char *p = spec;
    tdm_err rc = TDM_OK;

    if (!spec)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL, "no spec");
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (count == MAX_ITEMS) {
            rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                           "more than %d faults", MAX_ITEMS);
            goto fail;
        }
        rc = parse_item(p, len, &ops[count], &ns[count], &lasts[count],
                        &errs[count], errbuf, errbuf_size);
        if (rc != TDM_OK)
            goto fail;
        count++;
        p += len;
        if (*p == ',')
            p++;
    }
    /* Arm directly (not through tdm__fio_fault): this also runs inside
     * the pthread_once of the environment. */
    for (int i = 0; i < count; i++)
        arm((tdm__fio_op)ops[i], ns[i], lasts[i], errs[i]);
    recompute_armed();
    return TDM_OK;
fail:
    return rc;
}

#else
typedef int tdm__fio_fault_unused; /* ISO C: no empty translation unit */
#endif
