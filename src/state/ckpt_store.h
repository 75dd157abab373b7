/* SPDX-License-Identifier: MIT */
/* ckpt_store.h - the checkpoint directory: writing a checkpoint atomically
 * (temporary directory, fsyncs, rename), retention, finding the newest
 * valid checkpoint after a crash, reading blobs back, and the lock that
 * keeps a second writer out.
 *
 *   <dir>/LOCK                       flock'd by the writer; holds its pid
 *   <dir>/chk-0000000007/            a complete checkpoint (or savepoint)
 *         MANIFEST                   ids, metadata, per blob name/size/CRC
 *         <blob name>                one file per blob
 *   <dir>/chk-0000000008.tmp-<pid>/  being written; never read
 *
 * This is the storage layer of issue 8; barriers, operator snapshots and
 * restore are built on top later.  The format (version 1), the write
 * protocol and recovery are specified in docs/checkpoints.md.
 *
 * Threading: a store and a reader are each used by one thread at a time.
 * Errors: TDM_ERR_IO (a system call failed; the message names the
 * operation and path), TDM_ERR_PARSE (a corrupt manifest or blob),
 * TDM_ERR_STATE (misuse, or the directory is locked by another writer),
 * TDM_ERR_INVAL (bad argument), TDM_ERR_NOMEM.  Details are in
 * tdm__ckpt_store_errmsg() / tdm__ckpt_reader_errmsg().
 */
#ifndef TDM_CKPT_STORE_H
#define TDM_CKPT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "state/ckpt_codec.h"

/* The manifest format version this code writes and reads. */
#define TDM__CKPT_VERSION 1u
/* Checkpoint ids are printed with 10 digits. */
#define TDM__CKPT_ID_MAX 9999999999ull
/* Blob names: 1..TDM__CKPT_NAME_MAX bytes of [A-Za-z0-9._-], not starting
 * with '.', and not "MANIFEST" or "LOCK". */
#define TDM__CKPT_NAME_MAX 128
/* The default number of complete checkpoints kept (docs). */
#define TDM__CKPT_RETAIN_DEFAULT 3

typedef enum tdm__ckpt_kind {
    TDM__CKPT_CHECKPOINT = 0, /* periodic; subject to retention */
    TDM__CKPT_SAVEPOINT = 1   /* on demand; never deleted automatically */
} tdm__ckpt_kind;

/* ---- Manifest ---- */

typedef struct tdm__ckpt_blob_info {
    char *name;    /* owned by the manifest */
    uint64_t size; /* bytes */
    uint32_t crc;  /* CRC-32C of the bytes */
} tdm__ckpt_blob_info;

/* A decoded manifest.  Strings and arrays are owned by it and freed by
 * tdm__ckpt_manifest_free(). */
typedef struct tdm__ckpt_manifest {
    uint32_t version;
    uint64_t id;
    tdm__ckpt_kind kind;
    char *job;            /* job name, may be "" */
    int64_t created_ms;   /* wall-clock milliseconds since the epoch */
    uint32_t parallelism; /* opaque to the store: set by the caller */
    uint32_t key_groups;  /* opaque to the store: set by the caller */
    uint8_t *meta;        /* opaque caller bytes, may be NULL */
    size_t meta_len;
    tdm__ckpt_blob_info *blobs;
    size_t n_blobs;
} tdm__ckpt_manifest;

/* Frees what @p m owns and zeroes it; NULL or a zeroed manifest is fine. */
void tdm__ckpt_manifest_free(tdm__ckpt_manifest *m);
/* Encodes @p m (borrowed) into a new buffer freed with tdm__free(),
 * trailing CRC included.  Returns TDM_OK, TDM_ERR_NOMEM. */
tdm_err tdm__ckpt_manifest_encode(const tdm__ckpt_manifest *m, uint8_t **out,
                                  size_t *len);
/* Decodes and checks a manifest: magic, CRC, known version, one header,
 * valid and distinct blob names, the kind known; unknown sections are
 * skipped.  @p p is borrowed; *m is filled (owned by the caller; zeroed
 * on error).  Returns TDM_OK, TDM_ERR_PARSE with "offset N: reason" in
 * errbuf, TDM_ERR_NOMEM. */
tdm_err tdm__ckpt_manifest_decode(const void *p, size_t len,
                                  tdm__ckpt_manifest *m, char *errbuf,
                                  size_t errbuf_size);
/* Returns 1 if @p name is a valid blob name. */
int tdm__ckpt_name_ok(const char *name);

/* ---- The store ---- */

typedef struct tdm__ckpt_store tdm__ckpt_store;
typedef struct tdm__ckpt_reader tdm__ckpt_reader;

/* Called for every checkpoint that tdm__ckpt_latest() skips (with why it
 * is not valid), every stray temporary directory removed, and every
 * retention failure.  @p id is the checkpoint id (0 if none); @p msg is
 * borrowed for the call. */
typedef void (*tdm__ckpt_log_cb)(void *opaque, uint64_t id, const char *msg);

enum {
    TDM__CKPT_READ = 0, /* no lock, no writes: works on a locked dir */
    TDM__CKPT_WRITE = 1 /* creates the directory, takes <dir>/LOCK */
};

/* Opens the checkpoint directory @p dir (copied).  With TDM__CKPT_WRITE
 * the directory is created if missing, the lock taken, and stray
 * temporary directories removed.  A second writer gets TDM_ERR_STATE and
 * "checkpoint directory D is in use by another tidemark (pid N)".
 * @p log may be NULL.  On error *out is NULL and errbuf says why. */
tdm_err tdm__ckpt_store_open(const char *dir, int mode, tdm__ckpt_log_cb log,
                             void *opaque, tdm__ckpt_store **out, char *errbuf,
                             size_t errbuf_size);
/* Aborts a pending checkpoint, releases the lock, frees.  NULL is fine. */
void tdm__ckpt_store_close(tdm__ckpt_store *st);
/* The message of the last failed call on @p st (library-owned, valid
 * until the next call). */
const char *tdm__ckpt_store_errmsg(const tdm__ckpt_store *st);
/* How many complete checkpoints (kind CHECKPOINT) to keep; 0 keeps all.
 * Default TDM__CKPT_RETAIN_DEFAULT. */
void tdm__ckpt_store_set_retain(tdm__ckpt_store *st, unsigned n);

/* What tdm__ckpt_begin() needs; borrowed, the store copies. */
typedef struct tdm__ckpt_info {
    uint64_t id; /* 0 .. TDM__CKPT_ID_MAX, not yet in the dir */
    tdm__ckpt_kind kind;
    const char *job; /* NULL means "" */
    int64_t created_ms;
    uint32_t parallelism;
    uint32_t key_groups;
    const void *meta; /* opaque bytes, may be NULL */
    size_t meta_len;
} tdm__ckpt_info;

/* Starts checkpoint info->id in <dir>/chk-<id>.tmp-<pid>/.  One pending
 * checkpoint per store.  TDM_ERR_STATE if read-only, one is pending, or
 * chk-<id> exists. */
tdm_err tdm__ckpt_begin(tdm__ckpt_store *st, const tdm__ckpt_info *info);
/* Writes and fsyncs the blob @p name (copied) with @p len bytes from
 * @p p (borrowed).  On a failure to write (TDM_ERR_IO, TDM_ERR_NOMEM) the
 * pending checkpoint is aborted; misuse (TDM_ERR_STATE: nothing pending,
 * a blob still open, a name written twice; TDM_ERR_INVAL: a bad name)
 * leaves it as it was. */
tdm_err tdm__ckpt_put(tdm__ckpt_store *st, const char *name, const void *p,
                      size_t len);
/* The streaming form of put: open a blob, append any number of times,
 * close (which fsyncs).  One open blob at a time; appends are buffered.
 * Failures as for tdm__ckpt_put. */
tdm_err tdm__ckpt_blob_open(tdm__ckpt_store *st, const char *name);
tdm_err tdm__ckpt_blob_append(tdm__ckpt_store *st, const void *p, size_t len);
tdm_err tdm__ckpt_blob_close(tdm__ckpt_store *st);
/* Writes and fsyncs MANIFEST, fsyncs the temporary directory, renames it
 * to chk-<id>, fsyncs <dir>; then applies retention (its failures go to
 * the log callback, not to the result).  On an I/O failure nothing is
 * left under chk-<id> and the temporary directory is removed (best
 * effort).  TDM_ERR_STATE (nothing pending, a blob still open) changes
 * nothing. */
tdm_err tdm__ckpt_commit(tdm__ckpt_store *st);
/* Abandons the pending checkpoint and removes its temporary directory.
 * No-op without one. */
void tdm__ckpt_abort(tdm__ckpt_store *st);

/* Finds the newest valid checkpoint: every chk-<id> directory, newest
 * first, is checked (manifest decodes, CRCs, its id, every blob present
 * with its size and CRC) and the first that passes is returned in *id
 * with *found = 1; every damaged one skipped (bad bytes, a missing file)
 * is reported to the log callback with the reason.  *found = 0 when there
 * is none.  A writable store also removes stray temporary directories
 * (never its own pending one).  Returns TDM_ERR_IO when the directory
 * cannot be listed or a checkpoint cannot be read for another reason than
 * damage (EIO, EACCES, ...): recovery must not silently fall back past a
 * checkpoint that may be complete.  TDM_ERR_NOMEM. */
tdm_err tdm__ckpt_latest(tdm__ckpt_store *st, uint64_t *id, int *found);
/* The highest id of any chk-<id> directory, valid or damaged, in *id
 * (0: none): a writer numbers new checkpoints above it, since a damaged
 * checkpoint's directory stays and a new one of the same id could not be
 * renamed into place.  TDM_ERR_IO if the directory cannot be listed;
 * TDM_ERR_NOMEM. */
tdm_err tdm__ckpt_highest(tdm__ckpt_store *st, uint64_t *id);
/* Checks one checkpoint as tdm__ckpt_latest() does; TDM_OK if valid,
 * TDM_ERR_PARSE if damaged (including a missing manifest or blob),
 * TDM_ERR_IO if it could not be read; the reason is in the errmsg. */
tdm_err tdm__ckpt_verify(tdm__ckpt_store *st, uint64_t id);

/* Opens checkpoint @p id for reading: reads and checks its manifest (not
 * the blobs; tdm__ckpt_get checks each).  *out is freed with
 * tdm__ckpt_reader_close(); errors are in the store's errmsg. */
tdm_err tdm__ckpt_reader_open(tdm__ckpt_store *st, uint64_t id,
                              tdm__ckpt_reader **out);
/* The manifest (owned by the reader). */
const tdm__ckpt_manifest *tdm__ckpt_reader_manifest(const tdm__ckpt_reader *rd);
/* Reads blob @p name, checks size and CRC; *p (freed with tdm__free) and
 * *len.  TDM_ERR_STATE if the manifest has no such blob, TDM_ERR_PARSE if
 * the bytes do not match, TDM_ERR_IO. */
tdm_err tdm__ckpt_get(tdm__ckpt_reader *rd, const char *name, void **p,
                      size_t *len);
const char *tdm__ckpt_reader_errmsg(const tdm__ckpt_reader *rd);
void tdm__ckpt_reader_close(tdm__ckpt_reader *rd);

#endif /* TDM_CKPT_STORE_H */
