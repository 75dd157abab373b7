/* SPDX-License-Identifier: MIT */
/* job_guard.h - one process per checkpointed Kafka job (job_guard.c). */
#ifndef TDM_RUNTIME_JOB_GUARD_H
#define TDM_RUNTIME_JOB_GUARD_H

#include "runtime/rt.h"

typedef struct tdm__guard tdm__guard;

/* Joins the guard group of @p job when it applies (checkpoint.dir set,
 * Kafka sources, not run as tasks; *out NULL otherwise) and waits for
 * the first assignment.  TDM_OK; TDM_ERR_STATE when another process of
 * the job is in the group (message names it); TDM_ERR_IO (no broker, no
 * assignment); TDM_ERR_NOMEM. */
tdm_err tdm__guard_open(tdm_job *job, tdm__guard **out, char *errbuf,
                        size_t errbuf_size);

/* Leaves the group and frees @p g (NULL-safe).  TDM_OK, or the error
 * that ended the membership during the run (TDM_ERR_STATE: a newer
 * process of the job fenced this one; the job was cancelled), with its
 * message in @p errbuf (may be NULL). */
tdm_err tdm__guard_close(tdm__guard *g, char *errbuf, size_t errbuf_size);

#endif
