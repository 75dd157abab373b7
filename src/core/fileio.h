/* SPDX-License-Identifier: MIT */
/* fileio.h - the project's file I/O for durable writes (checkpoints), with
 * a fault-injection layer for tests.
 *
 * Every function returns TDM_OK or TDM_ERR_IO with a message naming the
 * operation, the path and strerror, e.g.
 * "fsync /x/chk-0000000003.tmp-42/MANIFEST: No space left on device",
 * written into the caller's (errbuf, errbuf_size) (errbuf may be NULL).
 * Allocation failures return TDM_ERR_NOMEM.
 *
 * Fault injection (a test seam: fio_fault.c, declared in testhooks.h,
 * compiled only with TDM_TEST_HOOKS): tdm__fio_fault() (or the
 * environment variable TDM_FIO_FAULT, read at the first operation) makes
 * the n-th operation of one kind, counted from the moment it is armed,
 * fail with a chosen errno, once, for a range of operations or from then
 * on.  When nothing is armed every operation pays one predictable branch;
 * without TDM_TEST_HOOKS, nothing.  See docs/checkpoints.md#fault-injection.
 * All functions are thread-safe in the sense of the underlying system
 * calls; the fault counters are atomics.
 */
#ifndef TDM_FILEIO_H
#define TDM_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

/* ---- Fault injection ---- */

/* The kinds of operation a fault can target.  FSYNC covers both files and
 * directories; OPEN covers creating and opening files (not directories);
 * READ is every read(2) call; LIST is opening a directory to list it. */
typedef enum tdm__fio_op {
    TDM__FIO_OPEN = 0,
    TDM__FIO_WRITE,
    TDM__FIO_FSYNC,
    TDM__FIO_RENAME,
    TDM__FIO_UNLINK,
    TDM__FIO_READ,
    TDM__FIO_MKDIR,
    TDM__FIO_LIST,
    TDM__FIO_N_OPS
} tdm__fio_op;

/* Fault injection (tdm__fio_fault, TDM_FIO_FAULT) is a test seam,
 * declared in testhooks.h and compiled only with TDM_TEST_HOOKS. */

/* ---- Files ---- */

/* open(2) with @p flags and @p mode (O_CLOEXEC is added); EINTR is
 * retried.  *fd_out is the descriptor on success, -1 otherwise. */
tdm_err tdm__fio_open(const char *path, int flags, int mode, int *fd_out,
                      char *errbuf, size_t errbuf_size);
/* Writes all @p len bytes (retrying EINTR and short writes); @p path is
 * only for the message.  Borrows @p p. */
tdm_err tdm__fio_write_all(int fd, const void *p, size_t len, const char *path,
                           char *errbuf, size_t errbuf_size);
/* Reads up to @p cap bytes (retrying EINTR and short reads until @p cap
 * or end of file); *got is how many were read (< cap only at end). */
tdm_err tdm__fio_read_full(int fd, void *buf, size_t cap, size_t *got,
                           const char *path, char *errbuf, size_t errbuf_size);
/* fsync(2) of an open file. */
tdm_err tdm__fio_fsync(int fd, const char *path, char *errbuf,
                       size_t errbuf_size);
/* close(2); an error (which can be a deferred write error) is reported.
 * The descriptor is closed either way.  fd < 0 is a no-op. */
tdm_err tdm__fio_close(int fd, const char *path, char *errbuf,
                       size_t errbuf_size);
/* Opens a directory and fsyncs it, so that entries created, renamed or
 * removed in it are durable. */
tdm_err tdm__fio_fsync_dir(const char *path, char *errbuf, size_t errbuf_size);
/* rename(2): atomically replaces @p to (an empty directory or a file). */
tdm_err tdm__fio_rename(const char *from, const char *to, char *errbuf,
                        size_t errbuf_size);
/* unlink(2) of a file. */
tdm_err tdm__fio_unlink(const char *path, char *errbuf, size_t errbuf_size);
/* Reads a whole file into a new buffer (NUL-terminated one past *len,
 * for convenience); *out is freed by the caller with tdm__free(). */
tdm_err tdm__fio_read_file(const char *path, void **out, size_t *len,
                           char *errbuf, size_t errbuf_size);
/* Creates @p path and any missing parents with mode 0777 (less umask);
 * an existing directory is not an error. */
tdm_err tdm__fio_mkdir_p(const char *path, char *errbuf, size_t errbuf_size);
/* mkdir(2) of one directory; EEXIST is an error. */
tdm_err tdm__fio_mkdir(const char *path, char *errbuf, size_t errbuf_size);
/* Lists a directory's entries except "." and "..", in no particular
 * order.  *names (an array of *n strings) is freed with
 * tdm__fio_list_free(). */
tdm_err tdm__fio_list(const char *dir, char ***names, size_t *n, char *errbuf,
                      size_t errbuf_size);
void tdm__fio_list_free(char **names, size_t n);
/* Removes a directory and everything in it (one level of files and, by
 * recursion, subdirectories).  A name called @p first_name, if present, is
 * removed before the others (the checkpoint store removes MANIFEST first
 * so that a half-removed directory is never mistaken for a complete one).
 * A missing directory is not an error.  Stops at the first error. */
tdm_err tdm__fio_remove_tree(const char *path, const char *first_name,
                             char *errbuf, size_t errbuf_size);

/* ---- Locks ---- */

/* Takes an exclusive, non-blocking flock(2) on @p path (created if
 * missing) and writes this process's pid into it.  On success *fd_out
 * holds the lock until tdm__fio_unlock().  When another open file holds
 * it, returns TDM_ERR_STATE and *holder_pid is the pid written in the
 * file (0 if unreadable); errbuf is left to the caller.  Other failures
 * are TDM_ERR_IO. */
tdm_err tdm__fio_lock(const char *path, int *fd_out, long *holder_pid,
                      char *errbuf, size_t errbuf_size);
/* Releases a lock taken by tdm__fio_lock (closes the descriptor). */
void tdm__fio_unlock(int fd);

#endif /* TDM_FILEIO_H */
