/* SPDX-License-Identifier: MIT */
/* task_rules.c - what a job run as tasks must be (scale_out: tasks,
 * docs/scale-out.md), checked by tdm_job_validate.
 *
 * A task is partition n of every input topic, run as a job of its own
 * by a task host (taskhost.c) with its state in checkpoint.dir/task-<n>.
 * That rests on: checkpoints (the state moves through them), Kafka
 * sources only (a file or a generator would be read whole by every
 * task), one set of brokers (the group's lead topic and the
 * co-partitioned others; a fixed topic list is checkpointing's rule,
 * job_validate.c), a repartition topic whose writers are the tasks
 * themselves (no writer count or timeout to set), one pipeline per task
 * (parallelism 1: a process runs as many tasks at once as the group
 * gives it), and the task keys only on a job run as tasks.  Each refusal names
 * the key that would apply.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"

/* Whether source @p n cannot be a task's (why in @p buf). */
static bool source_refused(const tdm_node *n, const tdm_node *first, char *buf,
                           size_t len)
{
    if (n->spec.src.type != TDM__SOURCE_TYPE_KAFKA) {
        /* R-TR-2 */
        snprintf(buf, len,
                 "source \"%s\": scale_out: tasks reads Kafka sources only "
                 "(every task would read this source whole)",
                 n->name);
        return true;
    }
    for (int k = 0; k < 2; k++) {
        static const char *const keys[2] = {"repartition.writers",
                                            "repartition.writer_timeout"};
        const tdm__conf_val *v = tdm__node_val(n, keys[k]);
        if (v->set && v->text && *v->text) {
            /* R-TR-9 */
            snprintf(buf, len,
                     "source \"%s\": %s does not apply to scale_out: tasks: "
                     "the writers are the tasks, and a task's writer holds "
                     "the repartition topic's watermark while it moves "
                     "(leave it out)",
                     n->name, keys[k]);
            return true;
        }
    }
    if (first && strcmp(n->spec.src.brokers, first->spec.src.brokers) != 0) {
        snprintf(buf, len,
                 "source \"%s\": scale_out: tasks needs every source on "
                 "the brokers of \"%s\"",
                 n->name, first->name); /* R-TR-5 */
        return true;
    }
    return false;
}

/* Whether the task keys are set on a job that is not a task's (why in
 * @p buf). */
static bool task_keys_refused(const tdm_job *job, char *buf, size_t len)
{
    if (job->spec.task_id >= 0 && job->spec.scale_out != TDM__SCALE_OUT_TASKS) {
        snprintf(buf, len,
                 "task.id is set by the task host of a job with "
                 "scale_out: tasks; this job has scale_out: process");
        return true; /* R-TR-6 */
    }
    if (job->spec.task_epoch > 0 && job->spec.task_id < 0) {
        snprintf(buf, len,
                 "task.epoch needs task.id (both are set by the "
                 "task host)");
        return true; /* R-TR-7 */
    }
    return false;
}

/* Whether the changelog store's keys are set where they do not apply
 * (why in @p buf). */
static bool store_refused(const tdm_job *job, char *buf, size_t len)
{
    bool changelog =
        job->spec.checkpoint_store == TDM__CHECKPOINT_STORE_CHANGELOG;
    if (changelog && job->spec.scale_out != TDM__SCALE_OUT_TASKS) {
        snprintf(buf, len,
                 "checkpoint.store: changelog applies to scale_out: tasks "
                 "only (a job in one process keeps its checkpoints in "
                 "checkpoint.dir)");
        return true; /* R-TR-10 */
    }
    const char *key = NULL;
    if (!changelog && job->spec.checkpoint_changelog_topic &&
        *job->spec.checkpoint_changelog_topic)
        key = "checkpoint.changelog.topic";
    else if (!changelog && job->spec.checkpoint_changelog_standby !=
                               TDM__CHECKPOINT_CHANGELOG_STANDBY_NONE)
        key = "checkpoint.changelog.standby";
    if (key) {
        snprintf(buf, len,
                 "%s applies to checkpoint.store: changelog only (this job "
                 "keeps its checkpoints in checkpoint.dir)",
                 key);
        return true; /* R-TR-11 */
    }
    for (int i = 0; changelog && i < job->n_nodes; i++) {
        const tdm_node *n = job->nodes[i];
        if (n->kind == TDM_NODE_SINK &&
            n->spec.sink.type == TDM__SINK_TYPE_FILE) {
            snprintf(buf, len,
                     "sink \"%s\": a file sink does not work with "
                     "checkpoint.store: changelog: a process that lost a task "
                     "without knowing it (paused past its session) would "
                     "write the task's part files beside its new owner's, "
                     "and no folder lock stops it; use a Kafka sink, or "
                     "checkpoint.store: dir",
                     n->name);
            return true; /* R-TR-12 */
        }
    }
    return false;
}

/* Whether @p job cannot run as tasks as configured (why in @p buf). */
static bool refused(const tdm_job *job, char *buf, size_t len)
{
    const tdm_node *first = NULL;
    if (task_keys_refused(job, buf, len) || store_refused(job, buf, len))
        return true;
    if (job->spec.scale_out != TDM__SCALE_OUT_TASKS)
        return false;
    if (!*job->spec.checkpoint_dir) {
        snprintf(buf, len,
                 "scale_out: tasks needs checkpoint.dir: a folder "
                 "every process of the job can reach, where each "
                 "task's state is checkpointed");
        return true; /* R-TR-1 */
    }
    if (job->spec.parallelism != 1) {
        snprintf(buf, len,
                 "parallelism %lld does not apply to scale_out: tasks: each "
                 "task is one pipeline, and a process runs every task the "
                 "group gives it (set parallelism: 1 or leave it out)",
                 (long long)job->spec.parallelism);
        return true; /* R-TR-8 */
    }
    for (int i = 0; i < job->n_nodes; i++) {
        const tdm_node *n = job->nodes[i];
        if (n->kind != TDM_NODE_SOURCE)
            continue;
        if (source_refused(n, first, buf, len))
            return true;
        first = first ? first : n;
    }
    return false;
}

const char *tdm__task_refusal(const tdm_job *job, char *buf, size_t len)
{
    return refused(job, buf, len) ? buf : NULL;
}
