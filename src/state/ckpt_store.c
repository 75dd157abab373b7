/* SPDX-License-Identifier: MIT */
/* ckpt_store.c - the checkpoint directory (format version 1): manifest
 * encoding, the atomic write protocol, retention, recovery of the newest
 * valid checkpoint, reading blobs, and the writer's lock.
 *
 * Invariant: a directory named chk-<id> only ever appears by the rename
 * of a temporary directory whose blobs, manifest and entries were all
 * fsynced first, so a crash at any moment leaves either the complete
 * checkpoint or none under that name.  Recovery still checks every CRC,
 * since disks and people do tear files.  See docs/checkpoints.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "state/ckpt_store.h"

/* ---- Manifest ---- */

/* "TDMCKPT" and a NUL: the first 8 bytes of every MANIFEST. */
static const uint8_t manifest_magic[8] = {'T', 'D', 'M', 'C', 'K', 'P', 'T', 0};
enum {
    SEC_HEADER = 1, /* id, kind, job, created, parallelism, groups, meta */
    SEC_BLOB = 2    /* name, size, crc */
};
/* Magic, version, and the trailing CRC. */
#define MANIFEST_MIN_LEN (8 + 4 + 4)
#define MANIFEST_NAME "MANIFEST"
#define WBUF_SIZE 65536

/* Whether @p name may name a blob (see TDM__CKPT_NAME_MAX). */
int tdm__ckpt_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > TDM__CKPT_NAME_MAX || name[0] == '.')
        return 0;
    if (strcmp(name, MANIFEST_NAME) == 0 || strcmp(name, "LOCK") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* Frees what @p m owns and zeroes it. */
void tdm__ckpt_manifest_free(tdm__ckpt_manifest *m)
{
    if (!m)
        return;
    tdm__free(m->job);
    tdm__free(m->meta);
    for (size_t i = 0; i < m->n_blobs; i++)
        tdm__free(m->blobs[i].name);
    tdm__free(m->blobs);
    memset(m, 0, sizeof *m);
}

/* Encodes a manifest (borrowed) into a new buffer, CRC included. */
tdm_err tdm__ckpt_manifest_encode(const tdm__ckpt_manifest *m, uint8_t **out,
                                  size_t *len)
{
    tdm__enc e;
    tdm__enc_init(&e);
    tdm__enc_raw(&e, manifest_magic, sizeof manifest_magic);
    tdm__enc_u32(&e, m->version);
    tdm__enc_begin(&e, SEC_HEADER);
    tdm__enc_uvar(&e, m->id);
    tdm__enc_u8(&e, (uint8_t)m->kind);
    tdm__enc_str(&e, m->job ? m->job : "");
    tdm__enc_svar(&e, m->created_ms);
    tdm__enc_uvar(&e, m->parallelism);
    tdm__enc_uvar(&e, m->key_groups);
    tdm__enc_bytes(&e, m->meta, m->meta_len);
    tdm__enc_end(&e);
    for (size_t i = 0; i < m->n_blobs; i++) {
        tdm__enc_begin(&e, SEC_BLOB);
        tdm__enc_str(&e, m->blobs[i].name);
        tdm__enc_uvar(&e, m->blobs[i].size);
        tdm__enc_u32(&e, m->blobs[i].crc);
        tdm__enc_end(&e);
    }
    /* The CRC covers every byte before it. */
    tdm__enc_u32(&e, e.oom ? 0 : tdm__crc32c(0, e.buf, e.len));
    return tdm__enc_finish(&e, out, len);
}

/* Copies the error of @p d (the first bad byte and why) into errbuf. */
static tdm_err dec_msg(const tdm__dec *d, char *errbuf, size_t errbuf_size)
{
    size_t off;
    const char *why;
    tdm_err rc = tdm__dec_error(d, &off, &why);
    return tdm__errf(errbuf, errbuf_size, rc, "offset %zu: %s", off,
                     why ? why : "?");
}

/* Reads the header section's body into @p m. */
static tdm_err decode_header(tdm__dec *b, tdm__ckpt_manifest *m)
{
    uint64_t id, par, groups;
    uint8_t kind;
    const void *meta;
    size_t meta_len;

    tdm__dec_uvar(b, &id);
    if (b->err == TDM_OK && id > TDM__CKPT_ID_MAX)
        return tdm__dec_fail(b, "checkpoint id out of range");
    tdm__dec_u8(b, &kind);
    if (b->err == TDM_OK && kind > TDM__CKPT_SAVEPOINT)
        return tdm__dec_fail(b, "unknown checkpoint kind");
    tdm__dec_str(b, &m->job);
    tdm__dec_svar(b, &m->created_ms);
    tdm__dec_uvar(b, &par);
    tdm__dec_uvar(b, &groups);
    if (b->err == TDM_OK && (par > UINT32_MAX || groups > UINT32_MAX))
        return tdm__dec_fail(b, "parallelism or key groups out of range");
    tdm__dec_bytes(b, &meta, &meta_len);
    if (b->err != TDM_OK)
        return b->err;
    m->id = id;
    m->kind = (tdm__ckpt_kind)kind;
    m->parallelism = (uint32_t)par;
    m->key_groups = (uint32_t)groups;
    if (meta_len > 0) {
        m->meta = tdm__memdup(meta, meta_len);
        if (!m->meta)
            return TDM_ERR_NOMEM;
        m->meta_len = meta_len;
    }
    /* Later versions of the header may append fields: ignored. */
    return TDM_OK;
}

/* Reads one blob section's body and appends it to @p m. */
static tdm_err decode_blob(tdm__dec *b, tdm__ckpt_manifest *m, size_t *cap)
{
    tdm__ckpt_blob_info bi = {0};
    size_t at = b->pos;
    tdm_err rc;

    tdm__dec_str(b, &bi.name);
    tdm__dec_uvar(b, &bi.size);
    tdm__dec_u32(b, &bi.crc);
    if (b->err != TDM_OK) {
        rc = b->err;
        goto fail;
    }
    if (!tdm__ckpt_name_ok(bi.name)) {
        b->pos = at;
        rc = tdm__dec_fail(b, "invalid blob name");
        goto fail;
    }
    for (size_t i = 0; i < m->n_blobs; i++) {
        if (strcmp(m->blobs[i].name, bi.name) == 0) {
            b->pos = at;
            rc = tdm__dec_fail(b, "duplicate blob name");
            goto fail;
        }
    }
    if (m->n_blobs == *cap) {
        size_t ncap = *cap ? 2 * *cap : 8;
        tdm__ckpt_blob_info *nb = tdm__realloc(m->blobs, ncap * sizeof *nb);
        if (!nb) {
            rc = TDM_ERR_NOMEM;
            goto fail;
        }
        m->blobs = nb;
        *cap = ncap;
    }
    m->blobs[m->n_blobs++] = bi;
    return TDM_OK;
fail:
    tdm__free(bi.name);
    return rc;
}

/* Decodes and checks a manifest; on error *m is zeroed and errbuf
 * holds "offset N: reason". */
tdm_err tdm__ckpt_manifest_decode(const void *p, size_t len,
                                  tdm__ckpt_manifest *m, char *errbuf,
                                  size_t errbuf_size)
{
    tdm__dec d;
    const void *magic;
    uint32_t crc, want;
    int have_header = 0;
    size_t cap = 0;
    tdm_err rc;

    memset(m, 0, sizeof *m);
    tdm__dec_init(&d, p, len);
    if (len < MANIFEST_MIN_LEN) {
        tdm__dec_raw(&d, MANIFEST_MIN_LEN, &magic);
        goto bad;
    }
    tdm__dec_raw(&d, sizeof manifest_magic, &magic);
    if (memcmp(magic, manifest_magic, sizeof manifest_magic) != 0) {
        d.pos = 0;
        tdm__dec_fail(&d, "not a tidemark manifest (bad magic)");
        goto bad;
    }
    /* The CRC first: a torn manifest says "CRC mismatch", not whatever
     * its garbage happens to decode to. */
    const uint8_t *b = p;
    want = (uint32_t)b[len - 4] | (uint32_t)b[len - 3] << 8 |
           (uint32_t)b[len - 2] << 16 | (uint32_t)b[len - 1] << 24;
    crc = tdm__crc32c(0, p, len - 4);
    if (crc != want) {
        d.pos = len - 4;
        tdm__dec_fail(&d, "manifest CRC mismatch");
        goto bad;
    }
    d.len = len - 4; /* the sections end where the CRC starts */
    tdm__dec_u32(&d, &m->version);
    if (m->version != TDM__CKPT_VERSION) {
        d.pos -= 4;
        tdm__dec_fail(&d, "unknown manifest format version");
        goto bad;
    }
    while (tdm__dec_left(&d) > 0) {
        uint64_t tag;
        tdm__dec body;
        if (tdm__dec_section(&d, &tag, &body) != TDM_OK)
            goto bad;
        if (tag == SEC_HEADER) {
            if (have_header) {
                tdm__dec_fail(&body, "second header section");
                d = body;
                goto bad;
            }
            rc = decode_header(&body, m);
            have_header = 1;
        } else if (tag == SEC_BLOB) {
            if (!have_header) {
                tdm__dec_fail(&body, "blob section before the header");
                d = body;
                goto bad;
            }
            rc = decode_blob(&body, m, &cap);
        } else {
            continue; /* unknown section: skipped (format evolution) */
        }
        if (rc == TDM_ERR_NOMEM) {
            rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if (rc != TDM_OK) {
            d = body;
            goto bad;
        }
    }
    if (!have_header) {
        tdm__dec_fail(&d, "no header section");
        goto bad;
    }
    return TDM_OK;
bad:
    rc = dec_msg(&d, errbuf, errbuf_size);
    if (rc == TDM_OK) /* not expected: every path above set an error */
        rc = TDM_ERR_PARSE;
fail:
    tdm__ckpt_manifest_free(m);
    return rc;
}

/* ---- The store ---- */

struct tdm__ckpt_store {
    char *dir;
    int mode;
    int lock_fd;
    unsigned retain;
    tdm__ckpt_log_cb log;
    void *opaque;
    char msg[1024];

    /* The pending checkpoint (pending != 0). */
    int pending;
    tdm__ckpt_manifest man; /* the blobs written so far */
    size_t blobs_cap;
    char *tmp_path;
    char *final_path;

    /* The open streaming blob (blob_fd >= 0). */
    int blob_fd;
    char *blob_name;
    char *blob_path;
    uint32_t blob_crc;
    uint64_t blob_size;
    uint8_t *wbuf;
    size_t wlen;
};

struct tdm__ckpt_reader {
    char *path; /* the checkpoint's directory */
    tdm__ckpt_manifest man;
    char msg[1024];
};

/* A new string from a printf format, or NULL when out of memory. */
static char *pathf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *pathf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = tdm__malloc((size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

static tdm_err nomem(tdm__ckpt_store *st)
{
    return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_NOMEM,
                     "checkpoint directory %s: out of memory", st->dir);
}

static void logf_(tdm__ckpt_store *st, uint64_t id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(tdm__ckpt_store *st, uint64_t id, const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    if (!st->log)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    st->log(st->opaque, id, buf);
}

/* Parses "chk-" and exactly ten digits; with @p tmp, also requires
 * ".tmp-" and one or more digits after them.  Returns 1 on a match. */
static int parse_name(const char *name, int tmp, uint64_t *id)
{
    if (strncmp(name, "chk-", 4) != 0)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        char c = name[4 + i];
        if (c < '0' || c > '9')
            return 0;
        v = v * 10 + (uint64_t)(c - '0');
    }
    const char *rest = name + 14;
    if (!tmp) {
        if (*rest)
            return 0;
    } else {
        if (strncmp(rest, ".tmp-", 5) != 0 || !rest[5])
            return 0;
        for (const char *c = rest + 5; *c; c++)
            if (*c < '0' || *c > '9')
                return 0;
    }
    *id = v;
    return 1;
}

/* Removes stray temporary directories (only a writer, holding the lock,
 * may: no other process can be writing them). */
static void remove_strays(tdm__ckpt_store *st, char **names, size_t n)
{
    char err[512];
    for (size_t i = 0; i < n; i++) {
        uint64_t id;
        if (!parse_name(names[i], 1, &id))
            continue;
        char *p = pathf("%s/%s", st->dir, names[i]);
        if (!p)
            continue;
        if (st->pending && strcmp(p, st->tmp_path) == 0) {
            tdm__free(p); /* ours, being written */
            continue;
        }
        if (tdm__fio_remove_tree(p, MANIFEST_NAME, err, sizeof err) == TDM_OK)
            logf_(st, id, "removed stray temporary directory %s", p);
        else
            logf_(st, id, "cannot remove stray temporary directory: %s", err);
        tdm__free(p);
    }
}

/* Opens a checkpoint directory for reading or writing (see
 * ckpt_store.h); @p dir is copied. */
tdm_err tdm__ckpt_store_open(const char *dir, int mode, tdm__ckpt_log_cb log,
                             void *opaque, tdm__ckpt_store **out, char *errbuf,
                             size_t errbuf_size)
{
    tdm__ckpt_store *st = NULL;
    char *lock_path = NULL;
    char **names = NULL;
    size_t n = 0;
    tdm_err rc;

    *out = NULL;
    if (!dir || !*dir || (mode != TDM__CKPT_READ && mode != TDM__CKPT_WRITE))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "checkpoint directory: bad argument");
    st = tdm__calloc(1, sizeof *st);
    if (!st)
        goto nomem;
    st->lock_fd = -1;
    st->blob_fd = -1;
    st->mode = mode;
    st->retain = TDM__CKPT_RETAIN_DEFAULT;
    st->log = log;
    st->opaque = opaque;
    st->dir = tdm__strndup(dir, strlen(dir));
    if (!st->dir)
        goto nomem;
    if (mode == TDM__CKPT_WRITE) {
        rc = tdm__fio_mkdir_p(dir, errbuf, errbuf_size);
        if (rc != TDM_OK)
            goto fail;
        lock_path = pathf("%s/LOCK", dir);
        if (!lock_path)
            goto nomem;
        long holder;
        rc = tdm__fio_lock(lock_path, &st->lock_fd, &holder, errbuf,
                           errbuf_size);
        if (rc == TDM_ERR_STATE) {
            rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                           "checkpoint directory %s is in use by another "
                           "tidemark (pid %ld)",
                           dir, holder);
            goto fail;
        }
        if (rc != TDM_OK)
            goto fail;
        rc = tdm__fio_list(dir, &names, &n, errbuf, errbuf_size);
        if (rc != TDM_OK)
            goto fail;
        remove_strays(st, names, n);
    }
    tdm__fio_list_free(names, n);
    tdm__free(lock_path);
    *out = st;
    return TDM_OK;
nomem:
    rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                   "checkpoint directory %s: out of memory", dir);
fail:
    tdm__fio_list_free(names, n);
    tdm__free(lock_path);
    tdm__ckpt_store_close(st);
    return rc;
}

/* Aborts a pending checkpoint, drops the lock and frees the store. */
void tdm__ckpt_store_close(tdm__ckpt_store *st)
{
    if (!st)
        return;
    tdm__ckpt_abort(st);
    tdm__fio_unlock(st->lock_fd);
    tdm__free(st->dir);
    tdm__free(st);
}

/* The last failure's message (owned by the store). */
const char *tdm__ckpt_store_errmsg(const tdm__ckpt_store *st)
{
    return st->msg;
}

/* How many complete checkpoints retention keeps (0: all). */
void tdm__ckpt_store_set_retain(tdm__ckpt_store *st, unsigned n)
{
    st->retain = n;
}

/* ---- Writing ---- */

/* Closes the open streaming blob without completing it. */
static void drop_blob(tdm__ckpt_store *st)
{
    if (st->blob_fd >= 0)
        close(st->blob_fd);
    st->blob_fd = -1;
    tdm__free(st->blob_name);
    tdm__free(st->blob_path);
    tdm__free(st->wbuf);
    st->blob_name = st->blob_path = NULL;
    st->wbuf = NULL;
    st->wlen = 0;
}

/* Forgets the pending checkpoint's state (not its files). */
static void drop_pending(tdm__ckpt_store *st)
{
    drop_blob(st);
    tdm__ckpt_manifest_free(&st->man);
    tdm__free(st->tmp_path);
    tdm__free(st->final_path);
    st->tmp_path = st->final_path = NULL;
    st->blobs_cap = 0;
    st->pending = 0;
}

/* Abandons the pending checkpoint and removes its temporary directory
 * (failures to remove go to the log). */
void tdm__ckpt_abort(tdm__ckpt_store *st)
{
    char err[512];
    if (!st || !st->pending)
        return;
    drop_blob(st);
    if (tdm__fio_remove_tree(st->tmp_path, MANIFEST_NAME, err, sizeof err) !=
        TDM_OK)
        logf_(st, st->man.id, "cannot remove %s: %s", st->tmp_path, err);
    drop_pending(st);
}

/* Aborts after a failure, keeping the failure's message; returns rc. */
static tdm_err abort_with(tdm__ckpt_store *st, tdm_err rc)
{
    tdm__ckpt_abort(st);
    return rc;
}

/* Starts a checkpoint in a new temporary directory; @p info is copied. */
tdm_err tdm__ckpt_begin(tdm__ckpt_store *st, const tdm__ckpt_info *info)
{
    tdm_err rc;
    if (st->mode != TDM__CKPT_WRITE)
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                         "checkpoint directory %s is open read-only", st->dir);
    if (st->pending)
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                         "checkpoint %" PRIu64 " is still pending", st->man.id);
    if (!info || info->id > TDM__CKPT_ID_MAX ||
        (unsigned)info->kind > TDM__CKPT_SAVEPOINT ||
        (info->meta_len > 0 && !info->meta))
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_INVAL,
                         "checkpoint: bad id, kind or metadata");
    st->pending = 1; /* from here on, drop_pending() cleans up */
    st->man.version = TDM__CKPT_VERSION;
    st->man.id = info->id;
    st->man.kind = info->kind;
    st->man.created_ms = info->created_ms;
    st->man.parallelism = info->parallelism;
    st->man.key_groups = info->key_groups;
    const char *job = info->job ? info->job : "";
    st->man.job = tdm__strndup(job, strlen(job));
    if (!st->man.job)
        goto nomem;
    if (info->meta_len > 0) {
        st->man.meta = tdm__memdup(info->meta, info->meta_len);
        if (!st->man.meta)
            goto nomem;
        st->man.meta_len = info->meta_len;
    }
    st->final_path = pathf("%s/chk-%010" PRIu64, st->dir, info->id);
    st->tmp_path = pathf("%s/chk-%010" PRIu64 ".tmp-%ld", st->dir, info->id,
                         (long)getpid());
    if (!st->final_path || !st->tmp_path)
        goto nomem;
    if (access(st->final_path, F_OK) == 0) {
        rc = tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                       "checkpoint %s already exists", st->final_path);
        goto fail;
    }
    rc = tdm__fio_mkdir(st->tmp_path, st->msg, sizeof st->msg);
    if (rc != TDM_OK) {
        /* Nothing of ours to remove (the mkdir failed). */
        goto fail;
    }
    return TDM_OK;
nomem:
    rc = nomem(st);
fail:
    drop_pending(st);
    return rc;
}

/* Creates blob @p name in the pending checkpoint for appending. */
tdm_err tdm__ckpt_blob_open(tdm__ckpt_store *st, const char *name)
{
    tdm_err rc;
    if (!st->pending)
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                         "no checkpoint pending (call begin first)");
    if (st->blob_fd >= 0)
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                         "blob %s is still open", st->blob_name);
    if (!name || !tdm__ckpt_name_ok(name))
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_INVAL,
                         "invalid blob name \"%.*s\"", 140,
                         name ? name : "(null)");
    for (size_t i = 0; i < st->man.n_blobs; i++)
        if (strcmp(st->man.blobs[i].name, name) == 0)
            return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                             "blob %s written twice", name);
    st->blob_name = tdm__strndup(name, strlen(name));
    st->blob_path = pathf("%s/%s", st->tmp_path, name);
    st->wbuf = tdm__malloc(WBUF_SIZE);
    if (!st->blob_name || !st->blob_path || !st->wbuf) {
        rc = nomem(st);
        goto fail;
    }
    st->blob_crc = 0;
    st->blob_size = 0;
    st->wlen = 0;
    rc = tdm__fio_open(st->blob_path, O_WRONLY | O_CREAT | O_EXCL, 0666,
                       &st->blob_fd, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    return TDM_OK;
fail:
    return abort_with(st, rc);
}

/* Writes the buffered bytes of the open blob. */
static tdm_err flush_blob(tdm__ckpt_store *st)
{
    if (st->wlen == 0)
        return TDM_OK;
    tdm_err rc = tdm__fio_write_all(st->blob_fd, st->wbuf, st->wlen,
                                    st->blob_path, st->msg, sizeof st->msg);
    st->wlen = 0;
    return rc;
}

/* Appends to the open blob through the 64 KiB buffer (borrows @p p). */
tdm_err tdm__ckpt_blob_append(tdm__ckpt_store *st, const void *p, size_t len)
{
    tdm_err rc;
    if (st->blob_fd < 0)
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                         "no blob open");
    if (len == 0)
        return TDM_OK;
    st->blob_crc = tdm__crc32c(st->blob_crc, p, len);
    st->blob_size += len;
    if (st->wlen + len <= WBUF_SIZE) {
        memcpy(st->wbuf + st->wlen, p, len);
        st->wlen += len;
        return TDM_OK;
    }
    rc = flush_blob(st);
    if (rc != TDM_OK)
        goto fail;
    if (len >= WBUF_SIZE) {
        rc = tdm__fio_write_all(st->blob_fd, p, len, st->blob_path, st->msg,
                                sizeof st->msg);
        if (rc != TDM_OK)
            goto fail;
    } else {
        memcpy(st->wbuf, p, len);
        st->wlen = len;
    }
    return TDM_OK;
fail:
    return abort_with(st, rc);
}

/* Flushes, fsyncs and closes the open blob and records it for the
 * manifest. */
tdm_err tdm__ckpt_blob_close(tdm__ckpt_store *st)
{
    tdm_err rc;
    if (st->blob_fd < 0)
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                         "no blob open");
    rc = flush_blob(st);
    if (rc != TDM_OK)
        goto fail;
    /* The blob's bytes must be on disk before the manifest that vouches
     * for them. */
    rc = tdm__fio_fsync(st->blob_fd, st->blob_path, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    rc = tdm__fio_close(st->blob_fd, st->blob_path, st->msg, sizeof st->msg);
    st->blob_fd = -1;
    if (rc != TDM_OK)
        goto fail;
    if (st->man.n_blobs == st->blobs_cap) {
        size_t ncap = st->blobs_cap ? 2 * st->blobs_cap : 8;
        tdm__ckpt_blob_info *nb =
            tdm__realloc(st->man.blobs, ncap * sizeof *nb);
        if (!nb) {
            rc = nomem(st);
            goto fail;
        }
        st->man.blobs = nb;
        st->blobs_cap = ncap;
    }
    tdm__ckpt_blob_info *bi = &st->man.blobs[st->man.n_blobs++];
    bi->name = st->blob_name; /* moves to the manifest */
    bi->size = st->blob_size;
    bi->crc = st->blob_crc;
    st->blob_name = NULL;
    drop_blob(st);
    return TDM_OK;
fail:
    return abort_with(st, rc);
}

/* Writes a whole blob: open, append, close. */
tdm_err tdm__ckpt_put(tdm__ckpt_store *st, const char *name, const void *p,
                      size_t len)
{
    tdm_err rc = tdm__ckpt_blob_open(st, name);
    if (rc == TDM_OK)
        rc = tdm__ckpt_blob_append(st, p, len);
    if (rc == TDM_OK)
        rc = tdm__ckpt_blob_close(st);
    return rc;
}

/* Writes, fsyncs and closes the manifest file of the pending checkpoint. */
static tdm_err write_manifest(tdm__ckpt_store *st)
{
    uint8_t *buf = NULL;
    size_t len;
    int fd = -1;
    char *path = pathf("%s/" MANIFEST_NAME, st->tmp_path);
    tdm_err rc;

    if (!path || tdm__ckpt_manifest_encode(&st->man, &buf, &len) != TDM_OK) {
        rc = nomem(st);
        goto fail;
    }
    rc = tdm__fio_open(path, O_WRONLY | O_CREAT | O_EXCL, 0666, &fd, st->msg,
                       sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    rc = tdm__fio_write_all(fd, buf, len, path, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    rc = tdm__fio_fsync(fd, path, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    rc = tdm__fio_close(fd, path, st->msg, sizeof st->msg);
    fd = -1;
    if (rc != TDM_OK)
        goto fail;
    tdm__free(buf);
    tdm__free(path);
    return TDM_OK;
fail:
    if (fd >= 0)
        close(fd);
    tdm__free(buf);
    tdm__free(path);
    return rc;
}

/* After a failed open or read of @p path: a file that does not exist
 * (or a chk-<id> that is not a directory) is damage to the checkpoint
 * (TDM_ERR_PARSE, so recovery skips it); any other I/O error stays TDM_ERR_IO
 * (recovery stops rather than silently fall back past a checkpoint it merely
 * could not read). */
static tdm_err missing_is_damage(const char *path, tdm_err rc)
{
    struct stat sb;
    if (rc == TDM_ERR_IO && stat(path, &sb) != 0 &&
        (errno == ENOENT || errno == ENOTDIR))
        return TDM_ERR_PARSE;
    return rc;
}

/* Reads and decodes the manifest of <dir>/<name>; errors into @p errbuf
 * ("manifest PATH: offset N: why" or the I/O message). */
static tdm_err load_manifest(const char *chk_path, tdm__ckpt_manifest *m,
                             char *errbuf, size_t errbuf_size)
{
    void *bytes = NULL;
    size_t len;
    char why[300];
    char *path = pathf("%s/" MANIFEST_NAME, chk_path);
    tdm_err rc;

    memset(m, 0, sizeof *m);
    if (!path) {
        rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    rc = tdm__fio_read_file(path, &bytes, &len, errbuf, errbuf_size);
    if (rc != TDM_OK) {
        rc = missing_is_damage(path, rc);
        goto fail;
    }
    rc = tdm__ckpt_manifest_decode(bytes, len, m, why, sizeof why);
    if (rc != TDM_OK) {
        tdm__errf(errbuf, errbuf_size, rc, "manifest %s: %s", path, why);
        goto fail;
    }
    tdm__free(bytes);
    tdm__free(path);
    return TDM_OK;
fail:
    tdm__free(bytes);
    tdm__free(path);
    return rc;
}

static int id_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Lists the ids of every chk-<id> directory, newest first; *ids is freed
 * with tdm__free().  Strays are removed on the way when @p clean. */
static tdm_err list_ids(tdm__ckpt_store *st, int clean, uint64_t **ids,
                        size_t *n_ids)
{
    char **names = NULL;
    size_t n = 0, k = 0;
    uint64_t *v = NULL;
    tdm_err rc;

    *ids = NULL;
    *n_ids = 0;
    rc = tdm__fio_list(st->dir, &names, &n, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    if (clean)
        remove_strays(st, names, n);
    v = tdm__malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        rc = nomem(st);
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        if (parse_name(names[i], 0, &v[k]))
            k++;
    qsort(v, k, sizeof *v, id_desc);
    tdm__fio_list_free(names, n);
    *ids = v;
    *n_ids = k;
    return TDM_OK;
fail:
    tdm__fio_list_free(names, n);
    tdm__free(v);
    return rc;
}

/* The cheap validity check of retention: the manifest is valid and every
 * blob exists with its size (CRCs are not read: that would re-read every
 * kept checkpoint at each commit).  Returns 1 if it passes; *savepoint
 * tells the kind when the manifest is valid. */
static int quick_valid(const char *path, int *savepoint)
{
    tdm__ckpt_manifest m;
    struct stat sb;
    char err[600];
    int ok;

    *savepoint = 0;
    if (load_manifest(path, &m, err, sizeof err) != TDM_OK)
        return 0;
    *savepoint = m.kind == TDM__CKPT_SAVEPOINT;
    ok = 1;
    for (size_t i = 0; i < m.n_blobs && ok; i++) {
        char *bp = pathf("%s/%s", path, m.blobs[i].name);
        ok =
            bp && stat(bp, &sb) == 0 && (uint64_t)sb.st_size == m.blobs[i].size;
        tdm__free(bp);
    }
    tdm__ckpt_manifest_free(&m);
    return ok;
}

/* Keeps the newest st->retain checkpoints that pass quick_valid() and are
 * of kind CHECKPOINT, and every savepoint; removes the other chk-<id>
 * directories older than the last one kept (their MANIFEST first).
 * Problems go to the log. */
static void apply_retention(tdm__ckpt_store *st)
{
    uint64_t *ids = NULL;
    size_t n = 0;
    unsigned kept = 0;
    int removed = 0;
    char err[600];

    if (st->retain == 0)
        return;
    if (list_ids(st, 0, &ids, &n) != TDM_OK) {
        logf_(st, 0, "retention: %s", st->msg);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char *path = pathf("%s/chk-%010" PRIu64, st->dir, ids[i]);
        int savepoint;
        if (!path)
            break;
        int ok = quick_valid(path, &savepoint);
        if (savepoint) {
            tdm__free(path);
            continue;
        }
        if (kept < st->retain) {
            kept += ok; /* a broken one newer than the last kept stays */
            tdm__free(path);
            continue;
        }
        if (tdm__fio_remove_tree(path, MANIFEST_NAME, err, sizeof err) !=
            TDM_OK)
            logf_(st, ids[i], "retention: %s", err);
        else
            removed = 1;
        tdm__free(path);
    }
    if (removed && tdm__fio_fsync_dir(st->dir, err, sizeof err) != TDM_OK)
        logf_(st, 0, "retention: %s", err);
    tdm__free(ids);
}

/* Publishes the pending checkpoint: manifest, fsyncs, rename, fsync
 * of the directory, then retention.  See docs/checkpoints.md. */
tdm_err tdm__ckpt_commit(tdm__ckpt_store *st)
{
    tdm_err rc;
    char err[600];

    if (!st->pending)
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                         "no checkpoint pending (call begin first)");
    if (st->blob_fd >= 0)
        return tdm__errf(st->msg, sizeof st->msg, TDM_ERR_STATE,
                         "commit with blob %s still open", st->blob_name);
    rc = write_manifest(st);
    if (rc != TDM_OK)
        goto fail;
    /* The entries of the blobs and the manifest must be durable before
     * the rename publishes the directory. */
    rc = tdm__fio_fsync_dir(st->tmp_path, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    rc = tdm__fio_rename(st->tmp_path, st->final_path, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    /* The rename itself must be durable before the caller acts on the
     * checkpoint (e.g. commits sink transactions). */
    rc = tdm__fio_fsync_dir(st->dir, st->msg, sizeof st->msg);
    if (rc != TDM_OK) {
        /* Not known to be durable, so not committed: take it back under
         * the temporary name (which the abort removes); if even that
         * fails, remove it where it is, MANIFEST first. */
        if (tdm__fio_rename(st->final_path, st->tmp_path, err, sizeof err) !=
                TDM_OK &&
            tdm__fio_remove_tree(st->final_path, MANIFEST_NAME, err,
                                 sizeof err) != TDM_OK)
            logf_(st, st->man.id, "cannot take back %s: %s", st->final_path,
                  err);
        goto fail;
    }
    int is_checkpoint = st->man.kind == TDM__CKPT_CHECKPOINT;
    drop_pending(st);
    if (is_checkpoint)
        apply_retention(st);
    return TDM_OK;
fail:
    return abort_with(st, rc);
}

/* ---- Reading ---- */

/* Checks blob @p bi of the checkpoint at @p chk_path: present, of the
 * manifest's size and CRC.  Reads in chunks through @p buf. */
static tdm_err verify_blob(const char *chk_path, const tdm__ckpt_blob_info *bi,
                           uint8_t *buf, size_t cap, char *errbuf,
                           size_t errbuf_size)
{
    int fd = -1;
    uint64_t size = 0;
    uint32_t crc = 0;
    char *path = pathf("%s/%s", chk_path, bi->name);
    tdm_err rc;

    if (!path) {
        rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    rc = tdm__fio_open(path, O_RDONLY, 0, &fd, errbuf, errbuf_size);
    if (rc != TDM_OK) {
        rc = missing_is_damage(path, rc);
        goto fail;
    }
    for (;;) {
        size_t got;
        rc = tdm__fio_read_full(fd, buf, cap, &got, path, errbuf, errbuf_size);
        if (rc != TDM_OK)
            goto fail;
        crc = tdm__crc32c(crc, buf, got);
        size += got;
        if (got < cap)
            break;
    }
    if (size != bi->size) {
        rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                       "blob %s: %" PRIu64 " bytes, the manifest says %" PRIu64,
                       path, size, bi->size);
        goto fail;
    }
    if (crc != bi->crc) {
        rc = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                       "blob %s: CRC mismatch (%08" PRIx32 ", the manifest "
                       "says %08" PRIx32 ")",
                       path, crc, bi->crc);
        goto fail;
    }
    close(fd);
    tdm__free(path);
    return TDM_OK;
fail:
    if (fd >= 0)
        close(fd);
    tdm__free(path);
    return rc;
}

/* Checks one checkpoint completely (manifest, id, every blob's size
 * and CRC). */
tdm_err tdm__ckpt_verify(tdm__ckpt_store *st, uint64_t id)
{
    tdm__ckpt_manifest m = {0};
    uint8_t *buf = NULL;
    char *path = pathf("%s/chk-%010" PRIu64, st->dir, id);
    tdm_err rc;

    if (!path) {
        rc = nomem(st);
        goto fail;
    }
    rc = load_manifest(path, &m, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    if (m.id != id) {
        rc =
            tdm__errf(st->msg, sizeof st->msg, TDM_ERR_PARSE,
                      "manifest %s/" MANIFEST_NAME " is of checkpoint %" PRIu64,
                      path, m.id);
        goto fail;
    }
    buf = tdm__malloc(WBUF_SIZE);
    if (!buf) {
        rc = nomem(st);
        goto fail;
    }
    for (size_t i = 0; i < m.n_blobs; i++) {
        rc = verify_blob(path, &m.blobs[i], buf, WBUF_SIZE, st->msg,
                         sizeof st->msg);
        if (rc != TDM_OK)
            goto fail;
    }
    tdm__free(buf);
    tdm__ckpt_manifest_free(&m);
    tdm__free(path);
    return TDM_OK;
fail:
    tdm__free(buf);
    tdm__ckpt_manifest_free(&m);
    tdm__free(path);
    return rc;
}

/* The newest valid checkpoint, skipping (and logging) damaged ones. */
tdm_err tdm__ckpt_latest(tdm__ckpt_store *st, uint64_t *id, int *found)
{
    uint64_t *ids = NULL;
    size_t n = 0;
    tdm_err rc;

    *id = 0;
    *found = 0;
    rc = list_ids(st, st->mode == TDM__CKPT_WRITE, &ids, &n);
    if (rc != TDM_OK)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        rc = tdm__ckpt_verify(st, ids[i]);
        if (rc == TDM_OK) {
            *id = ids[i];
            *found = 1;
            break;
        }
        if (rc != TDM_ERR_PARSE)
            goto fail; /* could not read it: not known to be damaged */
        logf_(st, ids[i], "skipping checkpoint %" PRIu64 ": %s", ids[i],
              st->msg);
    }
    tdm__free(ids);
    return TDM_OK;
fail:
    tdm__free(ids);
    return rc;
}

/* The highest chk-<id> present, damaged or not. */
tdm_err tdm__ckpt_highest(tdm__ckpt_store *st, uint64_t *id)
{
    uint64_t *ids = NULL;
    size_t n = 0;
    *id = 0;
    tdm_err rc = list_ids(st, 0, &ids, &n);
    if (rc == TDM_OK && n > 0)
        *id = ids[0];
    tdm__free(ids);
    return rc;
}

/* Opens checkpoint @p id for reading; errors in the store's errmsg. */
tdm_err tdm__ckpt_reader_open(tdm__ckpt_store *st, uint64_t id,
                              tdm__ckpt_reader **out)
{
    tdm__ckpt_reader *rd = tdm__calloc(1, sizeof *rd);
    tdm_err rc;

    *out = NULL;
    if (!rd) {
        rc = nomem(st);
        goto fail;
    }
    rd->path = pathf("%s/chk-%010" PRIu64, st->dir, id);
    if (!rd->path) {
        rc = nomem(st);
        goto fail;
    }
    rc = load_manifest(rd->path, &rd->man, st->msg, sizeof st->msg);
    if (rc != TDM_OK)
        goto fail;
    if (rd->man.id != id) {
        rc =
            tdm__errf(st->msg, sizeof st->msg, TDM_ERR_PARSE,
                      "manifest %s/" MANIFEST_NAME " is of checkpoint %" PRIu64,
                      rd->path, rd->man.id);
        goto fail;
    }
    *out = rd;
    return TDM_OK;
fail:
    tdm__ckpt_reader_close(rd);
    return rc;
}

/* The checkpoint's manifest (owned by the reader). */
const tdm__ckpt_manifest *tdm__ckpt_reader_manifest(const tdm__ckpt_reader *rd)
{
    return &rd->man;
}

/* The reader's last failure message. */
const char *tdm__ckpt_reader_errmsg(const tdm__ckpt_reader *rd)
{
    return rd->msg;
}

/* Reads one blob and checks its size and CRC; *p freed by the caller. */
tdm_err tdm__ckpt_get(tdm__ckpt_reader *rd, const char *name, void **p,
                      size_t *len)
{
    const tdm__ckpt_blob_info *bi = NULL;
    void *bytes = NULL;
    size_t n = 0;
    char *path = NULL;
    tdm_err rc;

    *p = NULL;
    *len = 0;
    for (size_t i = 0; i < rd->man.n_blobs && name; i++)
        if (strcmp(rd->man.blobs[i].name, name) == 0)
            bi = &rd->man.blobs[i];
    if (!bi) {
        rc = tdm__errf(rd->msg, sizeof rd->msg, TDM_ERR_STATE,
                       "checkpoint %s has no blob \"%.*s\"", rd->path, 140,
                       name ? name : "(null)");
        goto fail;
    }
    path = pathf("%s/%s", rd->path, name);
    if (!path) {
        rc = tdm__errf(rd->msg, sizeof rd->msg, TDM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    rc = tdm__fio_read_file(path, &bytes, &n, rd->msg, sizeof rd->msg);
    if (rc != TDM_OK)
        goto fail;
    if (n != bi->size || tdm__crc32c(0, bytes, n) != bi->crc) {
        rc = tdm__errf(
            rd->msg, sizeof rd->msg, TDM_ERR_PARSE, "blob %s: %s", path,
            n != bi->size ? "size differs from the manifest" : "CRC mismatch");
        goto fail;
    }
    tdm__free(path);
    *p = bytes;
    *len = n;
    return TDM_OK;
fail:
    tdm__free(bytes);
    tdm__free(path);
    return rc;
}

/* Frees a reader (NULL is fine). */
void tdm__ckpt_reader_close(tdm__ckpt_reader *rd)
{
    if (!rd)
        return;
    tdm__ckpt_manifest_free(&rd->man);
    tdm__free(rd->path);
    tdm__free(rd);
}
