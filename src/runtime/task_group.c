/* SPDX-License-Identifier: MIT */
/* task_group.c - the consumer group a job's Kafka sources name, read
 * into a membership configuration (connect/kafka_members.h) for the two
 * users of a process-level membership: the task host (taskhost.c, the
 * group itself) and the one-process guard of a checkpointed job
 * (job_guard.c, the group with ".guard.<job>" appended).  The first Kafka
 * source gives the brokers, the group and the librdkafka properties
 * (session timeouts and the like apply to the membership too); every
 * source gives its topics.  Invariant: every pointer in mc points into
 * this struct or into the job, which outlives it.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/rt_ctx.h"
#include "runtime/task_group.h"

/* Appends the comma-separated topics of @p list (modified: split in
 * place) to g->topics, blanks trimmed.  False: out of memory. */
static bool add_topics(tdm__task_group *g, char *list)
{
    char *save = NULL;
    for (char *p = strtok_r(list, ",", &save); p;
         p = strtok_r(NULL, ",", &save)) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t k = strlen(p);
        while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t'))
            p[--k] = '\0';
        if (!*p)
            continue;
        const char **nt =
            tdm__realloc(g->topics, (size_t)(g->mc.n_topics + 1) * sizeof *nt);
        if (!nt)
            return false;
        g->topics = nt;
        g->topics[g->mc.n_topics++] = p;
    }
    return true;
}

/* The group of source @p n plus @p suffix.  TDM_OK or NOMEM. */
static tdm_err group_of(tdm__task_group *g, const tdm_job *job,
                        const tdm_node *n, const char *suffix)
{
    const char *name = n->spec.src.group;
    size_t l = strlen(job->spec.name) + strlen(n->name) + strlen(name) +
               strlen(suffix) + 16;
    g->group = tdm__malloc(l);
    if (!g->group)
        return TDM_ERR_NOMEM;
    if (*name)
        snprintf(g->group, l, "%s%s", name, suffix);
    else
        snprintf(g->group, l, "tidemark-%s-%s%s", job->spec.name, n->name,
                 suffix);
    g->mc.group = g->group;
    return TDM_OK;
}

/* The first Kafka source's brokers and properties. */
static void first_source(tdm__task_group *g, const tdm_node *n)
{
    g->mc.brokers = *n->spec.src.brokers ? n->spec.src.brokers : NULL;
    g->mc.props = (const char *const *)n->spec.src.kafka->props;
    g->mc.n_props = n->spec.src.kafka->props ? n->spec.src.kafka->n_props : 0;
}

tdm_err tdm__task_group_init(tdm__task_group *g, const tdm_job *job,
                             const char *suffix)
{
    size_t len = 1, used = 0;
    memset(g, 0, sizeof *g);
    g->mc.log = tdm__ctx_log_line;
    g->mc.log_ud = (void *)job;
    for (int i = 0; i < job->n_nodes; i++)
        if (job->nodes[i]->kind == TDM_NODE_SOURCE)
            len += strlen(job->nodes[i]->spec.src.topics) + 1;
    g->topic_text = tdm__calloc(len, 1);
    if (!g->topic_text)
        return TDM_ERR_NOMEM;
    g->stop_at_end = true;
    for (int i = 0; i < job->n_nodes; i++) {
        const tdm_node *n = job->nodes[i];
        if (n->kind != TDM_NODE_SOURCE ||
            n->spec.src.type != TDM__SOURCE_TYPE_KAFKA)
            continue;
        if (!g->group) {
            if (group_of(g, job, n, suffix) != TDM_OK)
                return TDM_ERR_NOMEM;
            first_source(g, n);
        }
        g->stop_at_end &= n->spec.src.stop == TDM__SOURCE_STOP_END;
        char *at = g->topic_text + used;
        size_t k = strlen(n->spec.src.topics);
        memcpy(at, n->spec.src.topics, k + 1);
        used += k + 1;
        if (!add_topics(g, at))
            return TDM_ERR_NOMEM;
    }
    g->mc.topics = g->topics;
    return TDM_OK;
}

void tdm__task_group_fini(tdm__task_group *g)
{
    tdm__free(g->topics);
    tdm__free(g->topic_text);
    tdm__free(g->group);
    memset(g, 0, sizeof *g);
}
