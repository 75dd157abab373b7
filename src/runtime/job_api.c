/* SPDX-License-Identifier: MIT */
/* job_api.c - the public tdm_job_* calls that touch both halves of a
 * job: its definition (job.c, conf.c, expr.c) and the record of its
 * last run (metrics.c).  It sits above both, so that neither reaches
 * into the other.
 *
 * Invariant: the run record goes first (its callers are waited for),
 * then the definition; destroying NULL does nothing.
 */
#include "runtime/metrics.h"
#include "runtime/rt.h"

/* Frees the job and its nodes (NULL is fine). */
void tdm_job_destroy(tdm_job *job)
{
    if (!job)
        return;
    tdm__met_record_fini(job);
    tdm__job_free(job);
}
