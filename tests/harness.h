/* SPDX-License-Identifier: MIT */
/* harness.h - the unit-test harness.
 *
 * A test file defines cases with TDM_TEST(name) { ... } at the start of a
 * line; CMake reads those lines and registers each case as its own CTest
 * test (own process, timeout).  `test_suite NAME` runs one case, no
 * argument runs all.  ASSERT_* print both values and the location and end
 * the case with a failure.  Tests never sleep: time is injected with
 * tdm_clock_new_manual().
 */
#ifndef TDM_HARNESS_H
#define TDM_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tidemark.h"

typedef void (*tdm_test_fn)(void);
void tdm_test_register(const char *name, tdm_test_fn fn);
void tdm_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

#define TDM_TEST(name)                                                         \
    static void test_##name(void);                                             \
    __attribute__((constructor)) static void register_##name(void)             \
    {                                                                          \
        tdm_test_register(#name, test_##name);                                 \
    }                                                                          \
    static void test_##name(void)

#define ASSERT_TRUE(c)                                                         \
    do {                                                                       \
        if (!(c))                                                              \
            tdm_test_fail(__FILE__, __LINE__, "expected true: %s", #c);        \
    } while (0)

#define ASSERT_EQ(a, b)                                                        \
    do {                                                                       \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                          \
        if (a_ != b_)                                                          \
            tdm_test_fail(__FILE__, __LINE__,                                  \
                          "%s == %s: %" PRId64 " != %" PRId64, #a, #b, a_,     \
                          b_);                                                 \
    } while (0)

#define ASSERT_DBL_EQ(a, b)                                                    \
    do {                                                                       \
        double a_ = (a), b_ = (b);                                             \
        if (!(a_ == b_))                                                       \
            tdm_test_fail(__FILE__, __LINE__, "%s == %s: %.17g != %.17g", #a,  \
                          #b, a_, b_);                                         \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                    \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                 \
            tdm_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"",    \
                          #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");     \
    } while (0)

#define ASSERT_OK(e)                                                           \
    do {                                                                       \
        tdm_err e_ = (e);                                                      \
        if (e_ != TDM_OK)                                                      \
            tdm_test_fail(__FILE__, __LINE__, "%s: %s", #e, tdm_err_name(e_)); \
    } while (0)

#define ASSERT_ERR(e, code)                                                    \
    do {                                                                       \
        tdm_err e_ = (e);                                                      \
        if (e_ != (code))                                                      \
            tdm_test_fail(__FILE__, __LINE__, "%s: got %s, want %s", #e,       \
                          tdm_err_name(e_), tdm_err_name(code));               \
    } while (0)

#endif /* TDM_HARNESS_H */
