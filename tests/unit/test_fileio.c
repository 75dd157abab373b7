/* SPDX-License-Identifier: MIT */
/* test_fileio.c - the durable file I/O layer (src/core/fileio.c): write,
 * read back, fsync, rename, mkdir -p, list, remove a tree, the lock, and
 * the fault-injection layer (the n-th operation of a kind fails once or
 * from then on, messages name the operation, the path and strerror, the
 * TDM_FIO_FAULT spec, and the environment variable in a fresh process).
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "core.h"
#include "core/fileio.h"
#include "testhooks.h"

extern char **environ;

/* A fresh temporary directory for one test; removed by rm_tmp(). */
static char *mk_tmp(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/tdm-fio-XXXXXX");
    ASSERT_TRUE(mkdtemp(buf) != NULL);
    return buf;
}

static void rm_tmp(const char *dir)
{
    tdm__fio_fault_clear();
    ASSERT_OK(tdm__fio_remove_tree(dir, NULL, NULL, 0));
}

/* Writes @p s to @p path through the layer, fsynced. */
static tdm_err write_file(const char *path, const char *s, char *err, size_t n)
{
    int fd;
    tdm_err rc =
        tdm__fio_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666, &fd, err, n);
    if (rc != TDM_OK)
        return rc;
    rc = tdm__fio_write_all(fd, s, strlen(s), path, err, n);
    if (rc == TDM_OK)
        rc = tdm__fio_fsync(fd, path, err, n);
    tdm__fio_close(fd, path, NULL, 0);
    return rc;
}

TDM_TEST(fio_write_read_rename_list)
{
    char dir[64], a[128], b[128], sub[128], err[256];
    mk_tmp(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    ASSERT_OK(write_file(a, "hello", err, sizeof err));
    ASSERT_OK(tdm__fio_rename(a, b, err, sizeof err));
    ASSERT_OK(tdm__fio_fsync_dir(dir, err, sizeof err));
    void *bytes;
    size_t len;
    ASSERT_OK(tdm__fio_read_file(b, &bytes, &len, err, sizeof err));
    ASSERT_EQ(len, 5);
    ASSERT_STR_EQ((char *)bytes, "hello");
    tdm__free(bytes);
    /* An empty file reads as zero bytes. */
    ASSERT_OK(write_file(a, "", err, sizeof err));
    ASSERT_OK(tdm__fio_read_file(a, &bytes, &len, err, sizeof err));
    ASSERT_EQ(len, 0);
    tdm__free(bytes);
    /* mkdir -p of a nested path; an existing one is fine. */
    snprintf(sub, sizeof sub, "%s/x/y/z", dir);
    ASSERT_OK(tdm__fio_mkdir_p(sub, err, sizeof err));
    ASSERT_OK(tdm__fio_mkdir_p(sub, err, sizeof err));
    char **names;
    size_t n;
    ASSERT_OK(tdm__fio_list(dir, &names, &n, err, sizeof err));
    ASSERT_EQ(n, 3); /* a, b, x */
    tdm__fio_list_free(names, n);
    /* Reading a missing file names the path and the reason. */
    char missing[128];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    ASSERT_ERR(tdm__fio_read_file(missing, &bytes, &len, err, sizeof err),
               TDM_ERR_IO);
    char want[256];
    snprintf(want, sizeof want, "open %s: No such file or directory", missing);
    ASSERT_STR_EQ(err, want);
    /* remove_tree takes nested directories; a missing tree is fine. */
    char x[128];
    snprintf(x, sizeof x, "%s/x", dir);
    ASSERT_OK(tdm__fio_remove_tree(x, NULL, err, sizeof err));
    ASSERT_TRUE(access(x, F_OK) != 0);
    ASSERT_OK(tdm__fio_remove_tree(x, NULL, err, sizeof err));
    rm_tmp(dir);
}

TDM_TEST(fio_fault_nth_once_and_sticky)
{
    char dir[64], p[128], err[512], want[512];
    mk_tmp(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/f", dir);
    int fd;
    ASSERT_OK(tdm__fio_open(p, O_WRONLY | O_CREAT, 0666, &fd, err, sizeof err));
    /* The third write from now fails once with ENOSPC. */
    tdm__fio_fault(TDM__FIO_WRITE, 3, ENOSPC, 0);
    ASSERT_OK(tdm__fio_write_all(fd, "1", 1, p, err, sizeof err));
    ASSERT_OK(tdm__fio_write_all(fd, "2", 1, p, err, sizeof err));
    ASSERT_ERR(tdm__fio_write_all(fd, "3", 1, p, err, sizeof err), TDM_ERR_IO);
    snprintf(want, sizeof want, "write %s: No space left on device", p);
    ASSERT_STR_EQ(err, want);
    ASSERT_OK(tdm__fio_write_all(fd, "4", 1, p, err, sizeof err));
    ASSERT_EQ(tdm__fio_fault_count(TDM__FIO_WRITE), 4);
    ASSERT_EQ(tdm__fio_fault_fired(), 1);
    /* Sticky: the second fsync and every one after it fail with EIO;
     * other kinds are untouched. */
    tdm__fio_fault(TDM__FIO_FSYNC, 2, EIO, 1);
    ASSERT_OK(tdm__fio_fsync(fd, p, err, sizeof err));
    for (int i = 0; i < 3; i++) {
        ASSERT_ERR(tdm__fio_fsync(fd, p, err, sizeof err), TDM_ERR_IO);
        snprintf(want, sizeof want, "fsync %s: Input/output error", p);
        ASSERT_STR_EQ(err, want);
    }
    ASSERT_OK(tdm__fio_write_all(fd, "5", 1, p, err, sizeof err));
    ASSERT_EQ(tdm__fio_fault_fired(), 4);
    /* Clearing disarms everything. */
    tdm__fio_fault_clear();
    ASSERT_OK(tdm__fio_fsync(fd, p, err, sizeof err));
    ASSERT_EQ(tdm__fio_fault_fired(), 0);
    tdm__fio_close(fd, p, NULL, 0);
    /* The file holds exactly the writes that were not failed. */
    void *bytes;
    size_t len;
    ASSERT_OK(tdm__fio_read_file(p, &bytes, &len, err, sizeof err));
    ASSERT_STR_EQ((char *)bytes, "1245");
    tdm__free(bytes);
    /* Rename, mkdir, open and unlink faults name their paths. */
    char q[128];
    snprintf(q, sizeof q, "%s/g", dir);
    tdm__fio_fault(TDM__FIO_RENAME, 1, ENOSPC, 0);
    ASSERT_ERR(tdm__fio_rename(p, q, err, sizeof err), TDM_ERR_IO);
    snprintf(want, sizeof want, "rename %s to %s: No space left on device", p,
             q);
    ASSERT_STR_EQ(err, want);
    ASSERT_TRUE(access(p, F_OK) == 0 && access(q, F_OK) != 0);
    tdm__fio_fault(TDM__FIO_MKDIR, 1, EDQUOT, 0);
    ASSERT_ERR(tdm__fio_mkdir(q, err, sizeof err), TDM_ERR_IO);
    ASSERT_TRUE(strstr(err, q) != NULL);
    tdm__fio_fault(TDM__FIO_UNLINK, 1, EIO, 0);
    ASSERT_ERR(tdm__fio_unlink(p, err, sizeof err), TDM_ERR_IO);
    ASSERT_TRUE(access(p, F_OK) == 0);
    rm_tmp(dir);
}

TDM_TEST(fio_fault_spec_parse)
{
    char err[256];
    ASSERT_OK(tdm__fio_fault_parse("fsync:3:ENOSPC", err, sizeof err));
    ASSERT_OK(tdm__fio_fault_parse("write:1:EIO:sticky,rename:2:28", err,
                                   sizeof err));
    tdm__fio_fault_clear();
    ASSERT_OK(tdm__fio_fault_parse("rename:5:KILL", err, sizeof err));
    tdm__fio_fault_clear(); /* disarmed before any rename */
    ASSERT_ERR(tdm__fio_fault_parse("fsink:3:ENOSPC", err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "fsink:3:ENOSPC") != NULL);
    ASSERT_ERR(tdm__fio_fault_parse("fsync:0:ENOSPC", err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm__fio_fault_parse("fsync:2:ENOTANERRNO", err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm__fio_fault_parse("fsync:2", err, sizeof err), TDM_ERR_INVAL);
    ASSERT_ERR(tdm__fio_fault_parse("fsync:2:EIO:often", err, sizeof err),
               TDM_ERR_INVAL);
    /* A bad item arms nothing, even after good ones. */
    ASSERT_ERR(tdm__fio_fault_parse("write:1:EIO,bad", err, sizeof err),
               TDM_ERR_INVAL);
    char dir[64], p[128];
    mk_tmp(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/f", dir);
    ASSERT_OK(write_file(p, "x", err, sizeof err));
    rm_tmp(dir);
}

/* N-M: the N-th to the M-th operation fail, the ones around them not (a
 * disk full for a while: tests/cli/ckpt_fail.sh). */
TDM_TEST(fio_fault_range)
{
    char dir[64], q[128], err[256];
    mk_tmp(dir, sizeof dir);
    ASSERT_OK(tdm__fio_fault_parse("mkdir:2-3:ENOSPC", err, sizeof err));
    for (int i = 1; i <= 4; i++) {
        snprintf(q, sizeof q, "%s/d%d", dir, i);
        tdm_err rc = tdm__fio_mkdir(q, err, sizeof err);
        ASSERT_EQ(rc, i == 2 || i == 3 ? TDM_ERR_IO : TDM_OK);
    }
    ASSERT_EQ(tdm__fio_fault_fired(), 2);
    tdm__fio_fault_clear();
    ASSERT_ERR(tdm__fio_fault_parse("mkdir:3-2:ENOSPC", err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_ERR(tdm__fio_fault_parse("mkdir:1-x:ENOSPC", err, sizeof err),
               TDM_ERR_INVAL);
    for (int i = 1; i <= 4; i++) {
        snprintf(q, sizeof q, "%s/d%d", dir, i);
        rmdir(q);
    }
    rm_tmp(dir);
}

/* Run by fio_fault_from_environment in a fresh process with
 * TDM_FIO_FAULT=fsync:2:EIO; without it (as its own CTest case) it only
 * checks that nothing is armed. */
TDM_TEST(fio_env_child)
{
    char dir[64], p[128], err[256];
    const char *spec = getenv("TDM_FIO_FAULT");
    mk_tmp(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/f", dir);
    int fd;
    ASSERT_OK(tdm__fio_open(p, O_WRONLY | O_CREAT, 0666, &fd, err, sizeof err));
    ASSERT_OK(tdm__fio_fsync(fd, p, err, sizeof err));
    if (spec && strcmp(spec, "fsync:2:EIO") == 0) {
        ASSERT_ERR(tdm__fio_fsync(fd, p, err, sizeof err), TDM_ERR_IO);
        ASSERT_TRUE(strstr(err, "Input/output error") != NULL);
        ASSERT_EQ(tdm__fio_fault_fired(), 1);
    } else {
        ASSERT_OK(tdm__fio_fsync(fd, p, err, sizeof err));
    }
    ASSERT_OK(tdm__fio_fsync(fd, p, err, sizeof err));
    tdm__fio_close(fd, p, NULL, 0);
    rm_tmp(dir);
}

TDM_TEST(fio_fault_from_environment)
{
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ASSERT_TRUE(n > 0);
    exe[n] = 0;
    char *argv[] = {exe, "fio_env_child", NULL};
    char *envp[] = {"TDM_FIO_FAULT=fsync:2:EIO", NULL};
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, exe, NULL, NULL, argv, envp), 0);
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
}

TDM_TEST(fio_lock_excludes_second_holder)
{
    char dir[64], p[128], err[256];
    mk_tmp(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/LOCK", dir);
    int fd1, fd2;
    long holder;
    ASSERT_OK(tdm__fio_lock(p, &fd1, &holder, err, sizeof err));
    /* flock belongs to the open file, so a second open in this process
     * conflicts like another process would. */
    ASSERT_ERR(tdm__fio_lock(p, &fd2, &holder, err, sizeof err), TDM_ERR_STATE);
    ASSERT_EQ(holder, getpid());
    ASSERT_EQ(fd2, -1);
    tdm__fio_unlock(fd1);
    ASSERT_OK(tdm__fio_lock(p, &fd2, &holder, err, sizeof err));
    tdm__fio_unlock(fd2);
    rm_tmp(dir);
}
