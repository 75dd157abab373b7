/* SPDX-License-Identifier: MIT */
/* src_unit.c - the source subtask's timestamp-unit check: the first 100
 * timestamps of each partition are looked at, and a partition whose
 * values look like epoch seconds, microseconds or nanoseconds while
 * timestamp.unit is ms gets a TS_UNIT suspicion (a metric) and, once per
 * source, a warning on the log.
 *
 * State: per partition, t->uc (grown with the partition arrays,
 * src_parts.c): n < 0 once judged.  The per-row step is inline (the scan
 * specialises it); the verdict is not.
 */
#include <string.h>
#include <stdio.h>

#include "runtime/outbox.h"
#include "runtime/task_source.h"
#include "runtime/src_unit.h"
#include "time/wm.h"

/* Judges the unit evidence of a partition once: epoch seconds lie in
 * [1e8, 1e11) (1973-5138), microseconds and nanoseconds at or above 1e14
 * (the year 5138 in ms).  Small values (synthetic test data) say
 * nothing. */
void tdm__src_unit_verdict(tdm__rt_src_task *t, int p)
{
    struct tdm__rt_unit *u = &t->unit.uc[p];
    tdm__rt_source *s = t->src;
    if (u->n <= 0)
        return;
    const char *what = NULL;
    tdm_time_ms as_ms = 0;
    int suspect = 0;
    if (u->small * 2 > u->n) {
        what = "seconds";
        as_ms = u->first * 1000;
        suspect = 1;
    } else if (u->big * 2 > u->n) {
        bool ns = u->first >= 100000000000000000LL;
        what = ns ? "nanoseconds" : "microseconds";
        as_ms = u->first / (ns ? 1000000 : 1000);
        suspect = ns ? 3 : 2;
    }
    u->n = -1; /* judged */
    /* The subtask's suspicion is a metric (TS_UNIT); the warning is
     * logged once per source. */
    if (suspect && !t->unit.suspect) {
        t->unit.suspect = suspect;
        tdm__rt_pub_set(&t->met.m.unit, suspect);
    }
    if (!what || atomic_exchange(&s->unit_warned, 1))
        return;
    char iso[48], iso2[48];
    tdm__format_iso(u->first, iso, sizeof iso);
    tdm__format_iso(as_ms, iso2, sizeof iso2);
    tdm__job_log(t->run->job,
                 "source %s: timestamp.unit is ms but values look like %s "
                 "(first: %lld = %s; read as %s it would be %s); set "
                 "timestamp.unit to %s if so",
                 s->node->name, what, (long long)u->first, iso, what, iso2,
                 what[0] == 's'   ? "s"
                 : what[0] == 'n' ? "ns"
                                  : "us");
}

/* Whether some partition of the subtask still collects unit evidence
 * (tdm__src_unit_observe), so that a batch must look at its timestamps. */
bool tdm__src_unit_open(const tdm__rt_src_task *t)
{
    for (int p = 0; p < t->n_parts && p < t->part_cap; p++)
        if (t->unit.uc[p].n >= 0)
            return true;
    return false;
}

/* See src_unit.h. */
tdm_err tdm__src_unit_grow(tdm__rt_src_task *t, int old, int cap)
{
    struct tdm__rt_unit *u = tdm__realloc(t->unit.uc, (size_t)cap * sizeof *u);
    if (!u)
        return TDM_ERR_NOMEM;
    memset(u + old, 0, (size_t)(cap - old) * sizeof *u);
    t->unit.uc = u;
    return TDM_OK;
}

/* See src_unit.h. */
void tdm__src_unit_free(tdm__rt_src_task *t)
{
    tdm__free(t->unit.uc);
    t->unit.uc = NULL;
}
