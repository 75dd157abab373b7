/* SPDX-License-Identifier: MIT */
/* fileio.c - file I/O for durable writes.
 *
 * Each operation (open, write, fsync, rename, unlink, read, mkdir, list)
 * is one system call retried on EINTR, with short writes completed.
 * Messages name the operation, the path and strerror.  In a build with
 * TDM_TEST_HOOKS each operation first asks the fault-injection seam
 * (fio_fault.c, testhooks.h) whether it is to fail; otherwise that check
 * is the constant 0 and compiles away.  See fileio.h and
 * docs/checkpoints.md.
 */
#define _DEFAULT_SOURCE /* flock(2) */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "fileio.h"
#ifdef TDM_TEST_HOOKS
#include "testhooks.h"
#endif

/* ---- Fault injection (a test seam, fio_fault.c) ---- */

/* Returns the errno an armed fault assigns to this operation, or 0. */
static inline int fault_hit(tdm__fio_op op)
{
#ifdef TDM_TEST_HOOKS
    return tdm__fio_fault_hit(op);
#else
    (void)op;
    return 0;
#endif
}

/* ---- Messages ---- */

/* Formats "VERB PATH: strerror(err)" and returns TDM_ERR_IO. */
static tdm_err io_err(char *errbuf, size_t errbuf_size, const char *verb,
                      const char *path, int err)
{
    char why[128];
    if (strerror_r(err, why, sizeof why) != 0)
        snprintf(why, sizeof why, "errno %d", err);
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "%s %s: %s", verb, path,
                     why);
}

/* ---- Files ---- */

/* open(2) with O_CLOEXEC, retrying EINTR; TDM_ERR_IO names the path. */
tdm_err tdm__fio_open(const char *path, int flags, int mode, int *fd_out,
                      char *errbuf, size_t errbuf_size)
{
    int fd = -1, err = fault_hit(TDM__FIO_OPEN);
    *fd_out = -1;
    if (err)
        goto fail;
    do
        fd = open(path, flags | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        err = errno;
        goto fail;
    }
    *fd_out = fd;
    return TDM_OK;
fail:
    return io_err(errbuf, errbuf_size, "open", path, err);
}

/* Writes all @p len bytes (EINTR and short writes retried); each
 * write(2) call is one WRITE operation for fault injection. */
tdm_err tdm__fio_write_all(int fd, const void *p, size_t len, const char *path,
                           char *errbuf, size_t errbuf_size)
{
    const char *c = p;
    int err = 0;
    while (len > 0) {
        err = fault_hit(TDM__FIO_WRITE);
        if (err)
            goto fail;
        ssize_t w = write(fd, c, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
            goto fail;
        }
        if (w == 0) { /* not expected from a regular file; avoid a spin */
            err = EIO;
            goto fail;
        }
        c += w;
        len -= (size_t)w;
    }
    return TDM_OK;
fail:
    return io_err(errbuf, errbuf_size, "write", path, err);
}

/* Reads until @p cap bytes or end of file; *got says how many. */
tdm_err tdm__fio_read_full(int fd, void *buf, size_t cap, size_t *got,
                           const char *path, char *errbuf, size_t errbuf_size)
{
    char *c = buf;
    size_t n = 0;
    int err = 0;
    while (n < cap) {
        err = fault_hit(TDM__FIO_READ);
        if (err)
            goto fail;
        ssize_t r = read(fd, c + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
            goto fail;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *got = n;
    return TDM_OK;
fail:
    *got = n;
    return io_err(errbuf, errbuf_size, "read", path, err);
}

/* fsync(2) of an open file, retrying EINTR. */
tdm_err tdm__fio_fsync(int fd, const char *path, char *errbuf,
                       size_t errbuf_size)
{
    int err = fault_hit(TDM__FIO_FSYNC);
    if (err)
        goto fail;
    /* fsync is not restarted after EINTR by every kernel; retry. */
    while (fsync(fd) != 0) {
        if (errno != EINTR) {
            err = errno;
            goto fail;
        }
    }
    return TDM_OK;
fail:
    return io_err(errbuf, errbuf_size, "fsync", path, err);
}

/* close(2), reporting a deferred error; never retried. */
tdm_err tdm__fio_close(int fd, const char *path, char *errbuf,
                       size_t errbuf_size)
{
    /* Linux closes the descriptor even when close() fails (EINTR too),
     * so it is never retried. */
    if (fd < 0 || close(fd) == 0)
        return TDM_OK;
    return io_err(errbuf, errbuf_size, "close", path, errno);
}

/* Opens directory @p path and fsyncs it, making its entries durable. */
tdm_err tdm__fio_fsync_dir(const char *path, char *errbuf, size_t errbuf_size)
{
    int fd = -1;
    tdm_err rc = tdm__fio_open(path, O_RDONLY | O_DIRECTORY, 0, &fd, errbuf,
                               errbuf_size);
    if (rc != TDM_OK)
        goto fail;
    rc = tdm__fio_fsync(fd, path, errbuf, errbuf_size);
    if (rc != TDM_OK)
        goto fail;
    close(fd);
    return TDM_OK;
fail:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* rename(2); the message names both paths. */
tdm_err tdm__fio_rename(const char *from, const char *to, char *errbuf,
                        size_t errbuf_size)
{
    int err = fault_hit(TDM__FIO_RENAME);
    if (err)
        goto fail;
    if (rename(from, to) != 0) {
        err = errno;
        goto fail;
    }
    return TDM_OK;
fail:;
    char why[128];
    if (strerror_r(err, why, sizeof why) != 0)
        snprintf(why, sizeof why, "errno %d", err);
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "rename %s to %s: %s",
                     from, to, why);
}

/* unlink(2) of one file. */
tdm_err tdm__fio_unlink(const char *path, char *errbuf, size_t errbuf_size)
{
    int err = fault_hit(TDM__FIO_UNLINK);
    if (err)
        goto fail;
    if (unlink(path) != 0) {
        err = errno;
        goto fail;
    }
    return TDM_OK;
fail:
    return io_err(errbuf, errbuf_size, "unlink", path, err);
}

/* Reads a whole file into a new NUL-terminated buffer (caller frees
 * with tdm__free). */
tdm_err tdm__fio_read_file(const char *path, void **out, size_t *len,
                           char *errbuf, size_t errbuf_size)
{
    int fd = -1;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    struct stat st;
    tdm_err rc;

    *out = NULL;
    *len = 0;
    rc = tdm__fio_open(path, O_RDONLY, 0, &fd, errbuf, errbuf_size);
    if (rc != TDM_OK)
        goto fail;
    /* The size is a hint: the file may grow or shrink while we read. */
    cap =
        (fstat(fd, &st) == 0 && st.st_size > 0) ? (size_t)st.st_size + 1 : 4096;
    for (;;) {
        if (n == cap || !buf) {
            size_t ncap = buf ? 2 * cap : cap;
            char *nb = tdm__realloc(buf, ncap);
            if (!nb) {
                rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                               "read %s: out of memory", path);
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got;
        rc = tdm__fio_read_full(fd, buf + n, cap - n, &got, path, errbuf,
                                errbuf_size);
        if (rc != TDM_OK)
            goto fail;
        n += got;
        if (n < cap)
            break;
    }
    close(fd);
    buf[n] = '\0'; /* n < cap here */
    *out = buf;
    *len = n;
    return TDM_OK;
fail:
    if (fd >= 0)
        close(fd);
    tdm__free(buf);
    return rc;
}

/* mkdir(2) of one directory (mode 0777 less umask). */
tdm_err tdm__fio_mkdir(const char *path, char *errbuf, size_t errbuf_size)
{
    int err = fault_hit(TDM__FIO_MKDIR);
    if (err)
        goto fail;
    if (mkdir(path, 0777) != 0) {
        err = errno;
        goto fail;
    }
    return TDM_OK;
fail:
    return io_err(errbuf, errbuf_size, "mkdir", path, err);
}

/* Creates @p path and its missing parents; existing ones are fine. */
tdm_err tdm__fio_mkdir_p(const char *path, char *errbuf, size_t errbuf_size)
{
    size_t len = strlen(path);
    char *tmp = tdm__strndup(path, len);
    tdm_err rc = TDM_OK;
    struct stat st;

    if (!tmp) {
        rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                       "mkdir %s: out of memory", path);
        goto fail;
    }
    /* Each prefix ending before a '/' (and the whole path) in turn. */
    for (size_t i = 1; i <= len; i++) {
        if (i < len && tmp[i] != '/')
            continue;
        char saved = tmp[i];
        tmp[i] = '\0';
        if (stat(tmp, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) {
                rc = io_err(errbuf, errbuf_size, "mkdir", tmp, ENOTDIR);
                goto fail;
            }
        } else {
            rc = tdm__fio_mkdir(tmp, errbuf, errbuf_size);
            /* Someone else may have created it meanwhile. */
            if (rc != TDM_OK && !(stat(tmp, &st) == 0 && S_ISDIR(st.st_mode)))
                goto fail;
            rc = TDM_OK;
        }
        tmp[i] = saved;
    }
    tdm__free(tmp);
    return TDM_OK;
fail:
    tdm__free(tmp);
    return rc;
}

/* Frees a listing from tdm__fio_list (NULL is fine). */
void tdm__fio_list_free(char **names, size_t n)
{
    if (!names)
        return;
    for (size_t i = 0; i < n; i++)
        tdm__free(names[i]);
    tdm__free(names);
}

/* Lists a directory except "." and ".."; *names owned by the caller. */
tdm_err tdm__fio_list(const char *dir, char ***names, size_t *n, char *errbuf,
                      size_t errbuf_size)
{
    DIR *d = NULL;
    char **v = NULL;
    size_t count = 0, cap = 0;
    tdm_err rc = TDM_OK;
    int err = fault_hit(TDM__FIO_LIST);

    *names = NULL;
    *n = 0;
    if (err) {
        rc = io_err(errbuf, errbuf_size, "list", dir, err);
        goto fail;
    }
    d = opendir(dir);
    if (!d) {
        rc = io_err(errbuf, errbuf_size, "list", dir, errno);
        goto fail;
    }
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno) {
                rc = io_err(errbuf, errbuf_size, "list", dir, errno);
                goto fail;
            }
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (count == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            char **nv = tdm__realloc(v, ncap * sizeof *nv);
            if (!nv)
                goto nomem;
            v = nv;
            cap = ncap;
        }
        v[count] = tdm__strndup(e->d_name, strlen(e->d_name));
        if (!v[count])
            goto nomem;
        count++;
    }
    closedir(d);
    *names = v;
    *n = count;
    return TDM_OK;
nomem:
    rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "list %s: out of memory",
                   dir);
fail:
    if (d)
        closedir(d);
    tdm__fio_list_free(v, count);
    return rc;
}

/* Joins dir and name into a new string (NULL when out of memory). */
static char *join_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = tdm__malloc(a + b + 2);
    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

/* Removes one entry of a directory being removed: a file, or by
 * recursion a directory. */
static tdm_err remove_entry(const char *dir, const char *name, char *errbuf,
                            size_t errbuf_size)
{
    char *p = join_path(dir, name);
    struct stat st;
    tdm_err rc = TDM_OK;
    if (!p) {
        rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                       "remove %s: out of memory", dir);
        goto fail;
    }
    if (lstat(p, &st) != 0) {
        if (errno == ENOENT)
            goto out;
        rc = io_err(errbuf, errbuf_size, "stat", p, errno);
        goto fail;
    }
    if (S_ISDIR(st.st_mode))
        rc = tdm__fio_remove_tree(p, NULL, errbuf, errbuf_size);
    else
        rc = tdm__fio_unlink(p, errbuf, errbuf_size);
    if (rc != TDM_OK)
        goto fail;
out:
    tdm__free(p);
    return TDM_OK;
fail:
    tdm__free(p);
    return rc;
}

/* Removes a directory tree, @p first_name (if any) first; a missing
 * directory is fine. */
tdm_err tdm__fio_remove_tree(const char *path, const char *first_name,
                             char *errbuf, size_t errbuf_size)
{
    char **names = NULL;
    size_t n = 0;
    struct stat st;
    tdm_err rc;

    if (lstat(path, &st) != 0 && errno == ENOENT)
        return TDM_OK;
    rc = tdm__fio_list(path, &names, &n, errbuf, errbuf_size);
    if (rc != TDM_OK)
        goto fail;
    if (first_name) {
        rc = remove_entry(path, first_name, errbuf, errbuf_size);
        if (rc != TDM_OK)
            goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if (first_name && strcmp(names[i], first_name) == 0)
            continue;
        rc = remove_entry(path, names[i], errbuf, errbuf_size);
        if (rc != TDM_OK)
            goto fail;
    }
    int err = fault_hit(TDM__FIO_UNLINK);
    if (err || rmdir(path) != 0) {
        rc = io_err(errbuf, errbuf_size, "rmdir", path, err ? err : errno);
        goto fail;
    }
    tdm__fio_list_free(names, n);
    return TDM_OK;
fail:
    tdm__fio_list_free(names, n);
    return rc;
}

/* ---- Locks ---- */

/* Takes the exclusive flock on @p path and writes our pid into it;
 * TDM_ERR_STATE with *holder_pid when another open file holds it. */
tdm_err tdm__fio_lock(const char *path, int *fd_out, long *holder_pid,
                      char *errbuf, size_t errbuf_size)
{
    int fd = -1;
    tdm_err rc;
    char buf[32];

    *fd_out = -1;
    *holder_pid = 0;
    rc = tdm__fio_open(path, O_RDWR | O_CREAT, 0666, &fd, errbuf, errbuf_size);
    if (rc != TDM_OK)
        goto fail;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR)
            continue;
        if (errno == EWOULDBLOCK) {
            ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
            if (r > 0) {
                buf[r] = '\0';
                *holder_pid = strtol(buf, NULL, 10);
            }
            rc = TDM_ERR_STATE;
            goto fail;
        }
        rc = io_err(errbuf, errbuf_size, "lock", path, errno);
        goto fail;
    }
    int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0) {
        rc = io_err(errbuf, errbuf_size, "truncate", path, errno);
        goto fail;
    }
    if (pwrite(fd, buf, (size_t)len, 0) != len) {
        rc = io_err(errbuf, errbuf_size, "write", path, errno);
        goto fail;
    }
    *fd_out = fd;
    return TDM_OK;
fail:
    if (fd >= 0)
        close(fd); /* also drops the lock if we had taken it */
    return rc;
}

/* Releases a lock from tdm__fio_lock (closing drops the flock). */
void tdm__fio_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}
