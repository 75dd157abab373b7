/* SPDX-License-Identifier: MIT */
/* clock.c - processing-time clocks: monotonic, manual (for tests and
 * conformance vectors) and user-supplied.  Operators never sleep; they
 * read a clock when called, so a manual clock makes them deterministic.
 */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "core.h"

enum clock_kind { CLOCK_KIND_MONOTONIC, CLOCK_KIND_MANUAL, CLOCK_KIND_CUSTOM };

struct tdm_clock {
    enum clock_kind kind;
    tdm_time_ms now; /* manual clocks */
    tdm_clock_fn fn; /* custom clocks */
    void *opaque;
};

static tdm_err clock_alloc(enum clock_kind kind, tdm_clock **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = tdm__calloc(1, sizeof **out);
    if (!*out)
        return TDM_ERR_NOMEM;
    (*out)->kind = kind;
    return TDM_OK;
}

tdm_err tdm_clock_new_monotonic(tdm_clock **out)
{
    return clock_alloc(CLOCK_KIND_MONOTONIC, out);
}

tdm_err tdm_clock_new_manual(tdm_time_ms start, tdm_clock **out)
{
    tdm_err err = clock_alloc(CLOCK_KIND_MANUAL, out);
    if (err == TDM_OK)
        (*out)->now = start;
    return err;
}

tdm_err tdm_clock_new_custom(tdm_clock_fn fn, void *opaque, tdm_clock **out)
{
    if (!fn)
        return TDM_ERR_INVAL;
    tdm_err err = clock_alloc(CLOCK_KIND_CUSTOM, out);
    if (err == TDM_OK) {
        (*out)->fn = fn;
        (*out)->opaque = opaque;
    }
    return err;
}

tdm_err tdm_clock_set(tdm_clock *clk, tdm_time_ms now)
{
    if (!clk || clk->kind != CLOCK_KIND_MANUAL)
        return TDM_ERR_STATE;
    if (now < clk->now)
        return TDM_ERR_RANGE;
    clk->now = now;
    return TDM_OK;
}

/* See core.h. */
int64_t tdm__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* See core.h. */
int64_t tdm__mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

tdm_time_ms tdm_clock_now(const tdm_clock *clk)
{
    switch (clk->kind) {
    case CLOCK_KIND_MANUAL:
        return clk->now;
    case CLOCK_KIND_CUSTOM:
        return clk->fn(clk->opaque);
    case CLOCK_KIND_MONOTONIC:
    default:
        return tdm__mono_ms();
    }
}

void tdm_clock_destroy(tdm_clock *clk)
{
    tdm__free(clk);
}
