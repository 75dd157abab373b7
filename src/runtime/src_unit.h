/* SPDX-License-Identifier: MIT */
/* src_unit.h - the source subtask's timestamp-unit check: the first 100
 * timestamps of each partition are looked at, and a partition whose
 * values look like epoch seconds, microseconds or nanoseconds while
 * timestamp.unit is ms gets a TS_UNIT suspicion (a metric) and, once per
 * source, a warning on the log.
 *
 * State: its own struct, tdm__src_unit_state (t->unit): per partition
 * the evidence uc (grown with the partition arrays, src_parts.c; n < 0
 * once judged), and the subtask's suspicion.  The per-row step is inline
 * (the scan specialises it); the verdict is not.
 * Hooks: per row (tdm__src_unit_observe), on a partition's end (the
 * verdict).
 */
#ifndef TDM_RT_SRC_UNIT_H
#define TDM_RT_SRC_UNIT_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/outbox.h"

/* Timestamp unit evidence of one partition. */
struct tdm__rt_unit {
    int n, small, big;
    int64_t first;
};

/* The check's state. */
typedef struct tdm__src_unit_state {
    struct tdm__rt_unit *uc; /* per partition */
    int suspect;             /* timestamp unit suspicion (TS_UNIT) */
} tdm__src_unit_state;

/* Judges the unit evidence of a partition once: epoch seconds lie in
 * [1e8, 1e11) (1973-5138), microseconds and nanoseconds at or above 1e14
 * (the year 5138 in ms).  Small values (synthetic test data) say
 * nothing. */
void tdm__src_unit_verdict(tdm__rt_src_task *t, int p);

/* Whether some partition of the subtask still collects unit evidence
 * (tdm__src_unit_observe), so that a batch must look at its timestamps. */
bool tdm__src_unit_open(const tdm__rt_src_task *t);

/* Collects unit evidence from the first 100 timestamps of a partition;
 * the verdict comes at the 100th or when the partition ends.  @p us is
 * t's own state (t->unit: this header cannot see the subtask's struct). */
static inline __attribute__((always_inline)) void
tdm__src_unit_observe(tdm__rt_src_task *t, tdm__src_unit_state *us, int p,
                      tdm_time_ms ts)
{
    struct tdm__rt_unit *u = &us->uc[p];
    if (u->n < 0)
        return;
    if (u->n++ == 0)
        u->first = ts;
    if (ts >= 100000000LL && ts < 100000000000LL)
        u->small++;
    else if (ts >= 100000000000000LL)
        u->big++;
    if (u->n >= 100)
        tdm__src_unit_verdict(t, p);
}

/* Grows this component's per-split arrays from @p old to @p cap entries
 * (the new ones initialised); TDM_OK or TDM_ERR_NOMEM, the arrays then
 * still valid at their old size (src_parts.c's reserve). */
tdm_err tdm__src_unit_grow(tdm__rt_src_task *t, int old, int cap);
/* Frees the unit evidence (NULL-safe). */
void tdm__src_unit_free(tdm__rt_src_task *t);

#endif /* TDM_RT_SRC_UNIT_H */
