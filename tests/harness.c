/* SPDX-License-Identifier: MIT */
/* harness.c - registry and main() of the unit-test harness (harness.h).
 * Each case runs under an alarm of TDM_TEST_TIMEOUT seconds (default 300)
 * times TDM_TEST_TIMEOUT_MULTIPLIER, as a second guard behind CTest's.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <unistd.h>

#include "harness.h"

#define MAX_TESTS 512

static struct {
    const char *name;
    tdm_test_fn fn;
} tests[MAX_TESTS];
static int n_tests;

void tdm_test_register(const char *name, tdm_test_fn fn)
{
    if (n_tests < MAX_TESTS) {
        tests[n_tests].name = name;
        tests[n_tests].fn = fn;
        n_tests++;
    }
}

void tdm_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static unsigned timeout_seconds(void)
{
    const char *t = getenv("TDM_TEST_TIMEOUT");
    const char *m = getenv("TDM_TEST_TIMEOUT_MULTIPLIER");
    unsigned s = t ? (unsigned)atoi(t) : 300;
    unsigned k = m ? (unsigned)atoi(m) : 1;
    return (s ? s : 300) * (k ? k : 1);
}

int main(int argc, char **argv)
{
    int ran = 0;
    alarm(timeout_seconds());
    for (int i = 0; i < n_tests; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)
            continue;
        tests[i].fn();
        printf("ok %s\n", tests[i].name);
        ran++;
    }
    if (ran == 0) {
        fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(any)");
        return 1;
    }
    return 0;
}
