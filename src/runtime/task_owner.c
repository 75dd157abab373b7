/* SPDX-License-Identifier: MIT */
/* task_owner.c - who owns a task: the owner file beside its checkpoints.
 *
 * With scale_out: tasks (docs/scale-out.md) the consumer group decides
 * which process runs which task, but the group's word reaches a process
 * late, or not at all: a process paused for longer than the session
 * timeout (a stopped VM, a long GC-like stall, SIGSTOP) comes back still
 * running tasks the group has given to others.  Kafka fences such a
 * zombie's transactional producer; nothing fences its file output.  So
 * every task has an owner file, "<checkpoint dir of the task>.owner":
 *
 *     tidemark task owner
 *     epoch 7
 *     owner build-3-41872
 *
 * A process the group gives the task to writes the next epoch (the one
 * it read plus one) before it opens the task's checkpoints, through a
 * temporary file, fsync and rename, so a reader sees the old or the new
 * file whole.  The task's job carries that epoch (task.epoch) and reads
 * the file again before each of its checkpoints becomes durable
 * (ckpt.c): a newer epoch means another process took the task over, and
 * the job stops with TDM_ERR_STATE without making that checkpoint
 * durable, so nothing it wrote since its last durable checkpoint becomes
 * visible.  Invariant: a checkpoint of a task becomes durable only in a
 * process whose epoch was the file's newest when it checked.
 *
 * What it rests on: the group gives a task to one member per generation
 * and members take tasks in the order the group assigns them; two
 * processes writing the file at the same instant (one of them on a
 * stale assignment) can both read epoch N and write N+1, and then the
 * flock on the checkpoint directory (one machine) or the transactional
 * id (Kafka sinks) is what stops the second.  The check and the
 * checkpoint's commit are two steps: a takeover between them lets the
 * old owner make one more checkpoint durable, which the new owner's
 * restore then either sees (it restores it) or supersedes (file sinks
 * remove visible parts above the checkpoint they restore).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/task_owner.h"

/* "<dir>.owner" into @p out; false when it does not fit. */
static bool owner_path(const char *dir, char *out, size_t n)
{
    int k = snprintf(out, n, "%s.owner", dir);
    return k > 0 && (size_t)k < n;
}

/* Reads the owner file at @p path: *epoch and *who ("" and 0 when the
 * file does not exist).  TDM_OK, TDM_ERR_IO (unreadable or malformed:
 * named in @p errbuf). */
static tdm_err owner_read(const char *path, int64_t *epoch, char *who,
                          size_t who_n, char *errbuf, size_t errbuf_size)
{
    char line[256];
    long long e = -1;
    FILE *f = fopen(path, "r");
    *epoch = 0;
    who[0] = '\0';
    if (!f && errno == ENOENT)
        return TDM_OK;
    if (!f)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "%s: %s", path,
                         strerror(errno));
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "epoch ", 6) == 0)
            e = strtoll(line + 6, NULL, 10);
        else if (strncmp(line, "owner ", 6) == 0)
            snprintf(who, who_n, "%.150s", line + 6);
    }
    fclose(f);
    if (e < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "%s: no epoch line (not a task owner file)", path);
    *epoch = e;
    return TDM_OK;
}

void tdm__task_owner_name(char *out, size_t n)
{
    char host[128] = "host";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = '\0';
    snprintf(out, n, "%s-%ld", host, (long)getpid());
}

/* Writes @p text to @p path through "<path>.tmp", fsync and rename, then
 * fsyncs the folder @p dir.  TDM_OK or TDM_ERR_IO (named). */
static tdm_err write_atomic(const char *path, const char *text, char *errbuf,
                            size_t errbuf_size)
{
    char tmp[TDM__TASK_PATH_MAX + 8];
    size_t len = strlen(text);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "%s: %s", tmp,
                         strerror(errno));
    bool ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    int e = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0) {
        e = errno;
        ok = false;
    }
    if (!ok) {
        unlink(tmp);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "%s: %s", path,
                         strerror(e));
    }
    char dir[TDM__TASK_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return TDM_OK;
}

tdm_err tdm__task_owner_take(const char *dir, int64_t *epoch, char *errbuf,
                             size_t errbuf_size)
{
    char path[TDM__TASK_PATH_MAX], who[160], me[160], text[400];
    int64_t old = 0;
    *epoch = 0;
    if (!owner_path(dir, path, sizeof path))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "checkpoint.dir is too long: %s", dir);
    tdm_err err = owner_read(path, &old, who, sizeof who, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    tdm__task_owner_name(me, sizeof me);
    snprintf(text, sizeof text, "tidemark task owner\nepoch %lld\nowner %s\n",
             (long long)(old + 1), me);
    err = write_atomic(path, text, errbuf, errbuf_size);
    if (err == TDM_OK)
        *epoch = old + 1;
    return err;
}

tdm_err tdm__task_owner_check(const char *dir, int64_t task, int64_t epoch,
                              char *errbuf, size_t errbuf_size)
{
    char path[TDM__TASK_PATH_MAX], who[160];
    int64_t now = 0;
    if (epoch <= 0)
        return TDM_OK; /* R-OWN-1: not run by a task host */
    if (!owner_path(dir, path, sizeof path))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "checkpoint.dir is too long: %s", dir);
    tdm_err err = owner_read(path, &now, who, sizeof who, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    if (now == epoch)
        return TDM_OK; /* R-OWN-2: still ours */
    /* R-OWN-3: taken over (or the file is gone or older: not ours). */
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                     "task %lld was taken over by %s (owner epoch %lld, this "
                     "process holds %lld): stopping without writing; its "
                     "output since the last checkpoint stays uncommitted "
                     "and the new owner writes it",
                     (long long)task, who[0] ? who : "another process",
                     (long long)now, (long long)epoch);
}

bool tdm__task_owner_lock_free(const char *dir)
{
    char path[TDM__TASK_PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/LOCK", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true; /* R-OWN-4: never run here, or not locked */
    bool free_now = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd); /* drops the probe's lock with its descriptor */
    return free_now;
}
