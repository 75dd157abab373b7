/* SPDX-License-Identifier: MIT */
/* fuzz_check.h - the fuzz targets' invariant check: a broken invariant
 * prints where and traps, so libFuzzer (and the replay runner) report it
 * as a crash with the input that caused it. */
#ifndef TDM_FUZZ_CHECK_H
#define TDM_FUZZ_CHECK_H

#include <stdio.h>

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            __builtin_trap();                                                  \
        }                                                                      \
    } while (0)

#endif /* TDM_FUZZ_CHECK_H */
