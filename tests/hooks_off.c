/* SPDX-License-Identifier: MIT */
/* hooks_off.c - the test seams of testhooks.h (part 1) for a library
 * built without TDM_TEST_HOOKS.
 *
 * Linked into the unit-test executables only when the option is off, so
 * that every suite still builds and registers all its cases.  A case
 * that arms a fault cannot mean anything against a library that has no
 * fault injection, so arming one ends the case with exit code 77, which
 * CTest reports as skipped (SKIP_RETURN_CODE in CMakeLists.txt).  A
 * case that arms the fault in a forked child (kill tests) is skipped
 * too: the child signals the case's process (SIGUSR2), whose handler
 * exits with 77.  Disarming, clearing and counting do nothing.  Cases
 * that pass TDM_FIO_FAULT to a child through the environment are
 * disabled by name in CMakeLists.txt.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testhooks.h"

#define TDM_TEST_SKIP 77

static pid_t case_pid; /* the process CTest started */

static void on_skip(int sig)
{
    (void)sig;
    _exit(TDM_TEST_SKIP);
}

__attribute__((constructor)) static void note_case_process(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_skip;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    case_pid = getpid();
}

static void skip(const char *seam)
{
    printf("skipped: %s needs a library built with -DTDM_TEST_HOOKS=ON\n",
           seam);
    fflush(stdout);
    if (getpid() != case_pid)
        kill(case_pid, SIGUSR2);
    _exit(TDM_TEST_SKIP);
}

void tdm__alloc_fail_after(long n)
{
    if (n > 0)
        skip("tdm__alloc_fail_after");
}

void tdm__fio_fault(tdm__fio_op op, long n, int err, int sticky)
{
    (void)op, (void)err, (void)sticky;
    if (n > 0)
        skip("tdm__fio_fault");
}

void tdm__fio_fault_clear(void)
{
}

long tdm__fio_fault_count(tdm__fio_op op)
{
    (void)op;
    return 0;
}

long tdm__fio_fault_fired(void)
{
    return 0;
}

tdm_err tdm__fio_fault_parse(const char *spec, char *errbuf, size_t errbuf_size)
{
    (void)spec, (void)errbuf, (void)errbuf_size;
    skip("tdm__fio_fault_parse");
    return TDM_ERR_INVAL;
}

const char *tdm__fio_op_name(tdm__fio_op op)
{
    static const char *const names[TDM__FIO_N_OPS] = {
        "open", "write", "fsync", "rename", "unlink", "read", "mkdir", "list",
    };
    return (unsigned)op < TDM__FIO_N_OPS ? names[op] : "?";
}

int tdm__fio_fault_hit(tdm__fio_op op)
{
    (void)op;
    return 0;
}
