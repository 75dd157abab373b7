/* SPDX-License-Identifier: MIT */
/* test_tasks.c - the pieces of scale_out: tasks that need no broker
 * (docs/scale-out.md): the owner file (task_owner.c: each take writes
 * the next epoch, a check with an older epoch is refused and names the
 * new owner, the checkpoint lock probe) and the rules of a job run as
 * tasks (task_rules.c, through tdm_job_validate: each refusal names the
 * key that would apply), and the positions a task host owes its group
 * (kafka_owed.c: the newest ask is owed, a stale answer is ignored, a
 * refusal is owed until the group holds that offset or a later one).
 * The processes themselves are tests/kafka/tasks.sh's. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "conf_kit.h"
#include "connect/kafka_members.h"
#include "harness.h"
#include "runtime/rt.h"
#include "runtime/task_owner.h"

/* A fresh folder under /tmp, its path in @p out. */
static void temp_dir(char *out, size_t n)
{
    snprintf(out, n, "/tmp/tdm-tasks-XXXXXX");
    ASSERT_TRUE(mkdtemp(out) != NULL);
}

static void remove_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

/* Each take writes the next epoch; the holder of the newest passes the
 * check, an older holder is refused with the new owner named. */
TDM_TEST(owner_epochs_fence_the_older_holder)
{
    char base[64], dir[128], msg[600];
    int64_t e1 = 0, e2 = 0;
    temp_dir(base, sizeof base);
    snprintf(dir, sizeof dir, "%s/task-3", base);
    ASSERT_OK(tdm__task_owner_take(dir, &e1, msg, sizeof msg));
    ASSERT_EQ(e1, 1);
    ASSERT_OK(tdm__task_owner_check(dir, 3, e1, msg, sizeof msg));
    ASSERT_OK(tdm__task_owner_take(dir, &e2, msg, sizeof msg));
    ASSERT_EQ(e2, 2);
    ASSERT_OK(tdm__task_owner_check(dir, 3, e2, msg, sizeof msg));
    ASSERT_ERR(tdm__task_owner_check(dir, 3, e1, msg, sizeof msg),
               TDM_ERR_STATE);
    ASSERT_TRUE(strstr(msg, "task 3 was taken over by ") != NULL);
    ASSERT_TRUE(strstr(msg, "owner epoch 2, this process holds 1") != NULL);
    /* Epoch 0 is a job no host runs: never checked. */
    ASSERT_OK(tdm__task_owner_check(dir, 3, 0, msg, sizeof msg));
    remove_tree(base);
}

/* A missing owner file is not ours; a damaged one is an I/O error. */
TDM_TEST(owner_file_gone_or_damaged)
{
    char base[64], dir[128], path[160], msg[600];
    temp_dir(base, sizeof base);
    snprintf(dir, sizeof dir, "%s/task-0", base);
    ASSERT_ERR(tdm__task_owner_check(dir, 0, 1, msg, sizeof msg),
               TDM_ERR_STATE);
    snprintf(path, sizeof path, "%s.owner", dir);
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs("something else\n", f);
    fclose(f);
    ASSERT_ERR(tdm__task_owner_check(dir, 0, 1, msg, sizeof msg), TDM_ERR_IO);
    ASSERT_TRUE(strstr(msg, "not a task owner file") != NULL);
    remove_tree(base);
}

/* The probe sees a checkpoint lock held by another descriptor (an older
 * owner in this machine) and lets it be. */
TDM_TEST(lock_probe)
{
    char base[64], lock[128];
    temp_dir(base, sizeof base);
    ASSERT_TRUE(tdm__task_owner_lock_free(base));
    snprintf(lock, sizeof lock, "%s/LOCK", base);
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(tdm__task_owner_lock_free(base));
    ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
    ASSERT_TRUE(!tdm__task_owner_lock_free(base));
    ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0); /* still ours */
    close(fd);
    ASSERT_TRUE(tdm__task_owner_lock_free(base));
    remove_tree(base);
}

/* A valid job run as tasks: kafka source -> window -> file sink. */
static tdm_job *tasks_job(void)
{
    tdm_job *job;
    char msg[256];
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_OK(tdm_job_set(job, "scale_out", "tasks", msg, sizeof msg));
    ASSERT_OK(tdm_job_set(job, "checkpoint.dir", "/tmp/ck", msg, sizeof msg));
    tdm_node *s = add(job, TDM_NODE_SOURCE, "clicks");
    set(s, "type", "kafka");
    set(s, "brokers", "127.0.0.1:9092");
    set(s, "topics", "clicks");
    set(s, "schema", "user:string, ts:int64");
    set(s, "timestamp.field", "ts");
    tdm_node *w = add(job, TDM_NODE_WINDOW, "counts");
    set(w, "from", "clicks");
    set(w, "key_by", "user");
    set(w, "window.size", "10s");
    set(w, "sink", "out");
    tdm_node *o = add(job, TDM_NODE_SINK, "out");
    set(o, "type", "file");
    set(o, "path", "/tmp/out.jsonl");
    return job;
}

static void expect_refused(tdm_job *job, const char *part)
{
    char msg[512];
    ASSERT_ERR(tdm_job_validate(job, msg, sizeof msg), TDM_ERR_INVAL);
    if (strstr(msg, part) == NULL)
        tdm_test_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", msg,
                      part);
    tdm_job_destroy(job);
}

TDM_TEST(rules_of_a_job_run_as_tasks)
{
    char msg[512];
    tdm_job *job = tasks_job();
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    /* It runs through a task host only. */
    ASSERT_ERR(tdm_job_run(job, msg, sizeof msg), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(msg, "task host") != NULL);
    tdm_job_destroy(job);

    job = tasks_job();
    ASSERT_OK(tdm_job_set(job, "checkpoint.dir", "", msg, sizeof msg));
    expect_refused(job, "scale_out: tasks needs checkpoint.dir");

    job = tasks_job();
    ASSERT_OK(tdm_job_set(job, "parallelism", "2", msg, sizeof msg));
    expect_refused(job, "parallelism 2 does not apply to scale_out: tasks");

    job = tasks_job();
    set(tdm_job_node(job, "clicks"), "topics", "");
    set(tdm_job_node(job, "clicks"), "topic_pattern", "^c.*");
    expect_refused(job, "topic_pattern cannot be used with checkpointing");

    /* A repartition topic runs as tasks (each task writes and reads its
     * partition), but its writer count and timeout do not apply. */
    job = tasks_job();
    set(tdm_job_node(job, "clicks"), "repartition", "always");
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    set(tdm_job_node(job, "clicks"), "repartition.writers", "2");
    expect_refused(job, "source \"clicks\": repartition.writers does not "
                        "apply to scale_out: tasks");
    job = tasks_job();
    set(tdm_job_node(job, "clicks"), "repartition", "auto");
    set(tdm_job_node(job, "clicks"), "repartition.writer_timeout", "5s");
    expect_refused(job, "repartition.writer_timeout does not apply");
    /* Outside tasks, a checkpointed job cannot repartition. */
    job = tasks_job();
    ASSERT_OK(tdm_job_set(job, "scale_out", "process", msg, sizeof msg));
    set(tdm_job_node(job, "clicks"), "repartition", "always");
    expect_refused(job, "repartition: always with checkpointing "
                        "(checkpoint.dir) needs scale_out: tasks");

    job = tasks_job();
    tdm_node *f = add(job, TDM_NODE_SOURCE, "more");
    set(f, "type", "file");
    set(f, "path", "/tmp/more.jsonl");
    set(f, "schema", "user:string, ts:int64");
    set(f, "timestamp.field", "ts");
    set(f, "sink", "out");
    expect_refused(job, "source \"more\": scale_out: tasks reads Kafka "
                        "sources only");
}

TDM_TEST(task_keys_only_on_a_task)
{
    char msg[512];
    tdm_job *job = tasks_job();
    ASSERT_OK(tdm_job_set(job, "scale_out", "process", msg, sizeof msg));
    ASSERT_OK(tdm_job_set(job, "task.id", "3", msg, sizeof msg));
    expect_refused(job, "task.id is set by the task host");

    job = tasks_job();
    ASSERT_OK(tdm_job_set(job, "task.epoch", "4", msg, sizeof msg));
    expect_refused(job, "task.epoch needs task.id");

    job = tasks_job();
    ASSERT_OK(tdm_job_set(job, "task.id", "3", msg, sizeof msg));
    ASSERT_OK(tdm_job_set(job, "task.epoch", "4", msg, sizeof msg));
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    tdm_job_destroy(job);
}

/* A job run as tasks with the changelog store, its sink a Kafka topic. */
static tdm_job *changelog_job(void)
{
    char msg[256];
    tdm_job *job = tasks_job();
    ASSERT_OK(
        tdm_job_set(job, "checkpoint.store", "changelog", msg, sizeof msg));
    tdm_node *o = tdm_job_node(job, "out");
    set(o, "path", "");
    set(o, "type", "kafka");
    set(o, "brokers", "127.0.0.1:9092");
    set(o, "topic", "counts");
    return job;
}

/* The changelog store's keys apply to a job run as tasks; a file sink
 * does not go with it. */
TDM_TEST(changelog_store_rules)
{
    char msg[512];
    tdm_job *job = changelog_job();
    ASSERT_OK(
        tdm_job_set(job, "checkpoint.changelog.topic", "cl", msg, sizeof msg));
    ASSERT_OK(tdm_job_set(job, "checkpoint.changelog.standby", "all", msg,
                          sizeof msg));
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    tdm_job_destroy(job);

    job = changelog_job();
    ASSERT_OK(tdm_job_set(job, "scale_out", "process", msg, sizeof msg));
    expect_refused(job, "checkpoint.store: changelog applies to scale_out: "
                        "tasks only");

    job = tasks_job();
    ASSERT_OK(
        tdm_job_set(job, "checkpoint.changelog.topic", "cl", msg, sizeof msg));
    expect_refused(job, "checkpoint.changelog.topic applies to "
                        "checkpoint.store: changelog only");
    job = tasks_job();
    ASSERT_OK(tdm_job_set(job, "checkpoint.changelog.standby", "all", msg,
                          sizeof msg));
    expect_refused(job, "checkpoint.changelog.standby applies to "
                        "checkpoint.store: changelog only");

    /* A paused owner would write a task's part files beside its new
     * owner's: file sinks are refused with it. */
    job = tasks_job();
    ASSERT_OK(
        tdm_job_set(job, "checkpoint.store", "changelog", msg, sizeof msg));
    expect_refused(job, "sink \"out\": a file sink does not work with "
                        "checkpoint.store: changelog");

    /* A repartition topic's start record goes to the changelog too. */
    job = changelog_job();
    set(tdm_job_node(job, "clicks"), "repartition", "always");
    ASSERT_OK(tdm_job_validate(job, msg, sizeof msg));
    tdm_job_destroy(job);
}

/* Counts the refused positions seen by tdm__kowed_refused. */
static void count_refused(void *ud, const char *topic, int32_t part,
                          int64_t offset, const char *meta)
{
    int *k = ud;
    ASSERT_STR_EQ(topic, "clicks");
    ASSERT_EQ(part, 3);
    ASSERT_EQ(offset, 361);
    ASSERT_STR_EQ(meta, "tdm1 ckpt=final");
    (*k)++;
}

/* A task's positions through a rebalance: the final commit is refused
 * (owed), an answer to an older ask changes nothing, and the position
 * is owed until the group takes it or holds it (or a later one, a newer
 * owner's). */
TDM_TEST(owed_positions_survive_a_refusal)
{
    tdm__kowed *o = tdm__kowed_new();
    int asked = -1, refused = -1, k = 0;
    ASSERT_TRUE(o != NULL);
    ASSERT_TRUE(tdm__kowed_ask(o, "clicks", 3, 300, "tdm1 ckpt=9"));
    ASSERT_TRUE(tdm__kowed_ask(o, "clicks", 3, 361, "tdm1 ckpt=final"));
    ASSERT_TRUE(tdm__kowed_ask(o, "clicks", 4, 361, "tdm1 ckpt=final"));
    tdm__kowed_count(o, &asked, &refused);
    ASSERT_EQ(asked, 2);
    ASSERT_EQ(refused, 0);
    /* The answer to 300 is stale: 361 is still in flight. */
    tdm__kowed_answer(o, "clicks", 3, 300, true);
    tdm__kowed_answer(o, "clicks", 3, 361, false);
    tdm__kowed_answer(o, "clicks", 4, 361, true);
    tdm__kowed_count(o, &asked, &refused);
    ASSERT_EQ(asked, 0);
    ASSERT_EQ(refused, 1);
    ASSERT_EQ(tdm__kowed_refused(o, count_refused, &k), 1);
    ASSERT_EQ(k, 1);
    /* The group holds less: still owed; a later offset: owed no more. */
    tdm__kowed_held(o, "clicks", 3, 300);
    ASSERT_EQ(tdm__kowed_refused(o, NULL, NULL), 1);
    tdm__kowed_held(o, "clicks", 3, 400);
    ASSERT_EQ(tdm__kowed_refused(o, NULL, NULL), 0);
    /* Asked again, refused, then taken. */
    ASSERT_TRUE(tdm__kowed_ask(o, "clicks", 5, 10, "m"));
    tdm__kowed_answer(o, "clicks", 5, 10, false);
    ASSERT_TRUE(tdm__kowed_ask(o, "clicks", 5, 10, "m"));
    tdm__kowed_answer(o, "clicks", 5, 10, true);
    tdm__kowed_answer(o, "other", 0, 10, false); /* never asked */
    tdm__kowed_count(o, &asked, &refused);
    ASSERT_EQ(asked + refused, 0);
    tdm__kowed_free(o);
    tdm__kowed_free(NULL);
}
