/* SPDX-License-Identifier: MIT */
/* task_group.h - the consumer group a job's Kafka sources name, as a
 * membership configuration (task_group.c). */
#ifndef TDM_RUNTIME_TASK_GROUP_H
#define TDM_RUNTIME_TASK_GROUP_H

#include "connect/kafka_members.h"
#include "runtime/rt.h"

typedef struct tdm__task_group {
    tdm__kmembers_conf mc; /* points into the fields below and the job */
    char *group;           /* the group's name */
    const char **topics;   /* every Kafka source's topics, split */
    char *topic_text;      /* the storage topics points into */
    bool stop_at_end;      /* every source stops at the end of its input */
} tdm__task_group;

/* Fills @p g from the Kafka sources of @p job (borrowed: it must outlive
 * @p g): the brokers, group (its "group", else
 * "tidemark-<job>-<source>") and kafka.* properties of the first one,
 * with @p suffix appended to the group's name, and every source's
 * topics; log lines go to the job's log.  TDM_OK or TDM_ERR_NOMEM
 * (tdm__task_group_fini frees what was made). */
tdm_err tdm__task_group_init(tdm__task_group *g, const tdm_job *job,
                             const char *suffix);

/* Frees what tdm__task_group_init made (NULL-safe fields). */
void tdm__task_group_fini(tdm__task_group *g);

#endif
