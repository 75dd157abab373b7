/* SPDX-License-Identifier: MIT */
/* job_guard.c - a checkpointed Kafka job runs in one process: the guard
 * that enforces it (docs/scale-out.md, "Fencing").
 *
 * A checkpointed job that is not run as tasks reads its partitions by
 * static assignment: the consumer group plays no part, so a second
 * process started on the same job reads every partition again and every
 * row is written twice (the checkpoint folder's lock does not see it
 * when the two use different folders or machines).  The guard makes the
 * process a member of the group "<group>.guard.<job>" (the sources'
 * group, then the job's name: two jobs that share a group are not each
 * other's second process; the sources' own group receives monitoring
 * commits from non-members and must stay empty) subscribed to the lead
 * topic, and waits for its first assignment: a process not given every
 * partition of it shares the group with another process of the same
 * job, and the run is refused with TDM_ERR_STATE before it reads
 * anything.  The member stays in the group for the whole run (a thread
 * polls it), so a later second process is the one refused.  Two
 * processes that start within the same group round are both refused.
 *
 * It costs one consumer and the group's first assignment (about 3 s on
 * the mock cluster, group.initial.rebalance.delay.ms on a broker) at
 * the start of every checkpointed Kafka job.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "runtime/job_guard.h"
#include "runtime/rt_ctx.h"
#include "runtime/run_record.h"
#include "runtime/task_group.h"

/* How long the first assignment may take (ms). */
#define GUARD_WAIT_MS 60000
/* How long each poll of the guard's thread waits (ms). */
#define GUARD_POLL_MS 200

struct tdm__guard {
    tdm__task_group g;
    tdm__kmembers *mem;
    int n_parts;        /* partitions of the lead topic */
    int held;           /* partitions assigned now */
    bool assigned_once; /* the first assignment came */
    pthread_t th;
    bool th_ok;
    atomic_bool stop;
    tdm_job *job;
    tdm_err err; /* the thread's: a fatal membership error */
    char msg[400];
};

/* Counts the lead topic's partitions this member holds. */
static void on_change(void *ud, int part, tdm__km_event ev, bool lost)
{
    tdm__guard *g = ud;
    (void)part;
    (void)lost;
    if (ev == TDM__KM_LEAVING)
        return;
    g->held += ev == TDM__KM_ASSIGNED ? 1 : -1;
    g->assigned_once |= ev == TDM__KM_ASSIGNED;
}

/* The guard's thread: keeps the membership alive (polls).  On a real
 * broker a newer process of the job with the same group.instance.id
 * fences this member (a fatal error): the job is cancelled and
 * tdm__guard_close returns why. */
static void *guard_main(void *arg)
{
    tdm__guard *g = arg;
    while (!atomic_load(&g->stop)) {
        g->err = tdm__kmembers_poll(g->mem, GUARD_POLL_MS, on_change, g, g->msg,
                                    sizeof g->msg);
        if (g->err != TDM_OK) {
            tdm__job_log(g->job, "%s: stopping", g->msg);
            tdm_job_cancel(g->job); /* R-GUARD-3 */
            break;
        }
    }
    return NULL;
}

/* Whether @p job needs the guard: checkpointed, Kafka sources, not run
 * as tasks. */
static bool applies(const tdm_job *job)
{
    if (!*job->spec.checkpoint_dir || job->spec.task_id >= 0 ||
        job->spec.scale_out == TDM__SCALE_OUT_TASKS)
        return false;
    for (int i = 0; i < job->n_nodes; i++)
        if (job->nodes[i]->kind == TDM_NODE_SOURCE &&
            job->nodes[i]->spec.src.type == TDM__SOURCE_TYPE_KAFKA)
            return true;
    return false;
}

/* Polls until the first assignment (or the cancel, or the limit); then
 * refuses when another member holds part of the lead topic. */
static tdm_err first_round(tdm__guard *g, tdm_job *job, char *errbuf,
                           size_t errbuf_size)
{
    int64_t until = tdm__mono_ms() + GUARD_WAIT_MS;
    tdm_err err = TDM_OK;
    while (err == TDM_OK && !g->assigned_once && tdm__mono_ms() < until &&
           !atomic_load(&job->rec->cancel))
        err =
            tdm__kmembers_poll(g->mem, 100, on_change, g, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    if (g->assigned_once && g->held >= g->n_parts)
        return TDM_OK; /* R-GUARD-1: alone */
    if (!g->assigned_once)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "group '%s' gave no assignment in %d s", g->g.mc.group,
                         GUARD_WAIT_MS / 1000);
    /* R-GUARD-2: another process of this job is in the group. */
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                     "job \"%s\" already runs in another process (group "
                     "'%s' has another member: this process was given %d "
                     "of %d partitions of '%s'); a checkpointed job runs in "
                     "one process, or as tasks in several (scale_out: "
                     "tasks, docs/scale-out.md)",
                     job->spec.name, g->g.mc.group, g->held, g->n_parts,
                     g->g.mc.topics[0]);
}

tdm_err tdm__guard_open(tdm_job *job, tdm__guard **out, char *errbuf,
                        size_t errbuf_size)
{
    tdm__guard *g = NULL;
    tdm_err err = TDM_OK;
    *out = NULL;
    if (!applies(job))
        return TDM_OK;
    g = tdm__calloc(1, sizeof *g);
    if (!g)
        return TDM_ERR_NOMEM;
    g->job = job;
    char suffix[300];
    snprintf(suffix, sizeof suffix, ".guard.%s", job->spec.name);
    err = tdm__task_group_init(&g->g, job, suffix);
    g->g.mc.any_counts = true;
    g->g.mc.instance_id = g->g.group;
    if (err == TDM_OK)
        err = tdm__kmembers_open(&g->g.mc, &g->mem, &g->n_parts, errbuf,
                                 errbuf_size);
    if (err == TDM_OK)
        err = first_round(g, job, errbuf, errbuf_size);
    if (err == TDM_OK && pthread_create(&g->th, NULL, guard_main, g) != 0)
        err = TDM_ERR_NOMEM;
    if (err != TDM_OK)
        goto fail;
    g->th_ok = true;
    *out = g;
    return TDM_OK;
fail:
    tdm__guard_close(g, NULL, 0);
    return err;
}

tdm_err tdm__guard_close(tdm__guard *g, char *errbuf, size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    if (!g)
        return TDM_OK;
    if (g->th_ok) {
        atomic_store(&g->stop, true);
        pthread_join(g->th, NULL);
        err = g->err;
        if (err != TDM_OK)
            tdm__errf(errbuf, errbuf_size, err, "%s", g->msg);
    }
    tdm__kmembers_close(g->mem, on_change, g);
    tdm__task_group_fini(&g->g);
    tdm__free(g);
    return err;
}
