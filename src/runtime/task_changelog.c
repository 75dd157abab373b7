/* SPDX-License-Identifier: MIT */
/* task_changelog.c - a task's checkpoints in a changelog topic
 * (checkpoint.store: changelog, docs/scale-out.md "The changelog store").
 *
 * With the folder store every process of a job run as tasks must reach
 * one checkpoint folder.  With this store each process keeps its tasks'
 * checkpoints in a folder of its own, and the task's partition of a
 * compacted topic (partition n for task n, as Kafka Streams keeps a
 * task's changelog) is where they live between owners.  The local
 * checkpoint code is unchanged; this file copies each checkpoint into
 * the topic before it counts as durable, and on assignment makes the
 * local folder hold the topic's newest checkpoint, nothing else.
 *
 * An owner is named by a *tag*, "<epoch>.<nonce>": the owner epoch and a
 * nonce of the process that took the task, so that two processes that
 * compute the same epoch in the same instant never share a key.  The
 * records of a task's partition (keys, then values):
 *
 *   owner/<tag>            "tdmcl1 owner <who>": a process took the task;
 *   b/<tag>/<slot>/<blob>/<i>
 *                          chunk i (256 KiB) of a checkpoint blob;
 *   manifest/<tag>/<slot>  "tdmcl1 manifest <id>\n" and the checkpoint's
 *                          MANIFEST (blob names, sizes, CRCs).
 *
 * Every key is written by one owner, so compaction (the newest record of
 * each key kept) never drops one owner's record for another's.
 *
 *  C1  A checkpoint is durable once its manifest record is acknowledged;
 *      the chunks go first (the producer is idempotent: one partition's
 *      records land once each, in order).
 *  C2  An owner writes its checkpoints into two slots in turn, never into
 *      the slot of the last manifest known to be in the topic, so a
 *      publish cut short (a crash, a full topic) leaves the last complete
 *      checkpoint whole.  A publish whose outcome is unknown (its flush
 *      failed after the manifest was handed over) is settled by the next
 *      one before it writes anything: it flushes, reads on, and sees
 *      whether that manifest landed.
 *  C3  A manifest of epoch e counts only when no owner record of a higher
 *      epoch comes before it in the partition: one after a takeover was
 *      refused to its writer (C4) and is never restored.  Taking a task
 *      appends an owner record with the next epoch (the highest of any
 *      key plus one) and then reads the partition to its end; the take
 *      restores the newest manifest that counts and comes before that
 *      owner record, and falls back to the one before it when a chunk is
 *      missing or does not match.  An owner record of another process
 *      before ours with an epoch as high means both took the task at
 *      once: the later one gives up (the task host tries again).
 *  C4  A publish reads the partition after its manifest is written: an
 *      owner record with a higher epoch before the manifest means the
 *      task was taken over before this checkpoint existed, and it is
 *      dropped (nothing of it is committed, TDM_ERR_STATE).  One after
 *      the manifest means the new owner restores this checkpoint, so its
 *      output is committed; the next publish then stops the task.
 *  C5  The first publish of an owner tombstones every key of the owners
 *      before it that its take read (their owner records, manifests and
 *      chunks: superseded), and each publish tombstones the chunk keys of
 *      its slot's previous checkpoint that it did not write again, so
 *      compaction keeps the partition at about two checkpoints.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connect/kafka_changelog.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "core/map.h"
#include "runtime/task_changelog.h"
#include "runtime/task_owner.h"
#include "state/ckpt_codec.h"

#define TCL_CHUNK ((size_t)256 * 1024)
#define TCL_MAGIC "tdmcl1"
#define TCL_KEY_MAX 256
#define TCL_TAG_MAX 48

/* A list of owned key strings. */
typedef struct keys {
    char **v;
    size_t n, cap;
} keys;

struct tdm__tclog {
    tdm__kclog *log;
    int task;
    int64_t epoch;
    char tag[TCL_TAG_MAX]; /* "<epoch>.<nonce>" */
    char who[200];
    int slot;          /* the slot the next publish writes (C2) */
    int64_t pos;       /* the next offset to read */
    bool uncertain;    /* a manifest handed over, not seen landed (C2) */
    uint64_t unc_id;   /* its checkpoint */
    int unc_slot;      /* and slot */
    keys stale;        /* the earlier owners' keys (C5) */
    keys slot_keys[2]; /* the chunk keys each slot holds */
    bool taken;        /* a newer owner follows a published manifest (C4) */
    char taker[300];   /* its who */
    int64_t taker_epoch;
    tdm__log_fn logf;
    void *log_ud;
};

/* ---- Small pieces ---- */

static void keys_free(keys *k)
{
    for (size_t i = 0; i < k->n; i++)
        tdm__free(k->v[i]);
    tdm__free(k->v);
    memset(k, 0, sizeof *k);
}

static tdm_err keys_add(keys *k, const char *s, size_t len)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 16;
        char **v = tdm__realloc(k->v, cap * sizeof *v);
        if (!v)
            return TDM_ERR_NOMEM;
        k->v = v;
        k->cap = cap;
    }
    char *c = tdm__malloc(len + 1);
    if (!c)
        return TDM_ERR_NOMEM;
    memcpy(c, s, len);
    c[len] = '\0';
    k->v[k->n++] = c;
    return TDM_OK;
}

static bool keys_has(const keys *k, const char *s)
{
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->v[i], s))
            return true;
    return false;
}

static void say(const tdm__tclog *l, const char *fmt, ...)
{
    char line[700];
    va_list ap;
    if (!l->logf)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    l->logf(l->log_ud, line);
}

/* The key of chunk @p i of blob @p name in @p slot of owner @p tag. */
static void chunk_key(char *out, size_t n, const char *tag, int slot,
                      const char *name, size_t i)
{
    snprintf(out, n, "b/%s/%d/%s/%zu", tag, slot, name, i);
}

/* A record's key, parsed: its kind ('o' owner, 'm' manifest, 'b' chunk,
 * 0 another), the owner tag in it, its epoch and (manifests) slot. */
typedef struct rkey {
    char kind;
    char tag[TCL_TAG_MAX];
    int64_t epoch;
    int slot;
} rkey;

static bool parse_key(const void *key, size_t klen, rkey *k)
{
    char text[TCL_KEY_MAX + 1];
    const char *rest;
    memset(k, 0, sizeof *k);
    if (!key || klen == 0 || klen > TCL_KEY_MAX)
        return false;
    memcpy(text, key, klen);
    text[klen] = '\0';
    if (!strncmp(text, "owner/", 6))
        k->kind = 'o', rest = text + 6;
    else if (!strncmp(text, "manifest/", 9))
        k->kind = 'm', rest = text + 9;
    else if (!strncmp(text, "b/", 2))
        k->kind = 'b', rest = text + 2;
    else
        return false; /* R-TCL-1: a record of a later version */
    size_t tl = strcspn(rest, "/");
    char *end = NULL;
    long long e = strtoll(rest, &end, 10);
    if (tl == 0 || tl >= TCL_TAG_MAX || e <= 0 || *end != '.')
        return false;
    memcpy(k->tag, rest, tl);
    k->tag[tl] = '\0';
    k->epoch = e;
    if (k->kind == 'm')
        k->slot = rest[tl] == '/' && rest[tl + 1] == '1' ? 1 : 0;
    return true;
}

/* Parses a manifest record's value: its checkpoint, and *body. */
static bool parse_manifest(const void *val, size_t vlen, uint64_t *id,
                           const uint8_t **body, size_t *blen)
{
    const char *nl = val ? memchr(val, '\n', vlen < 100 ? vlen : 100) : NULL;
    char head[101];
    unsigned long long i = 0;
    if (!nl)
        return false;
    size_t hl = (size_t)(nl - (const char *)val);
    memcpy(head, val, hl);
    head[hl] = '\0';
    if (sscanf(head, TCL_MAGIC " manifest %llu", &i) != 1)
        return false;
    *id = i;
    *body = (const uint8_t *)nl + 1;
    *blen = vlen - hl - 1;
    return true;
}

/* The who of an owner record's value ("" when it has none). */
static void owner_who(const void *val, size_t vlen, char *who, size_t n)
{
    size_t ml = strlen(TCL_MAGIC " owner ");
    who[0] = '\0';
    if (val && vlen > ml && !memcmp(val, TCL_MAGIC " owner ", ml))
        snprintf(who, n, "%.*s", (int)(vlen - ml), (const char *)val + ml);
}

/* Removes every checkpoint (chk-*) of the local folder @p dir. */
static tdm_err wipe(const char *dir, char *errbuf, size_t errbuf_size)
{
    char **names = NULL;
    size_t n = 0;
    tdm_err err = tdm__fio_mkdir_p(dir, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm__fio_list(dir, &names, &n, errbuf, errbuf_size);
    for (size_t i = 0; err == TDM_OK && i < n; i++) {
        char path[4200];
        if (strncmp(names[i], "chk-", 4) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        err = tdm__fio_remove_tree(path, "MANIFEST", errbuf, errbuf_size);
    }
    tdm__fio_list_free(names, n);
    return err;
}

/* ---- Reading a partition for a take (C3) ---- */

/* A manifest that counts (C3), the newest record of its key. */
typedef struct cand {
    char key[TCL_KEY_MAX + 1];
    rkey k;
    int64_t off;
    uint8_t *val;
    size_t len;
} cand;

/* What a read of the partition found. */
typedef struct scan {
    tdm__tclog *l;
    tdm__map *chunks; /* key -> (uintptr_t) buf: u64 length, then bytes */
    tdm__map *keys;   /* every key read (values unused), for C5 */
    cand *cands;      /* manifests that count, in the partition's order */
    size_t n_cands, cap_cands;
    int64_t max_epoch;   /* of any key */
    int64_t owner_epoch; /* the highest owner record's so far */
    bool cut;            /* this process's owner record was read */
    int64_t n;           /* records read */
    tdm_err err;
    char msg[700];
} scan;

/* A warm copy of a task's partition: its log, not taken, and what a
 * take would have read so far (task_changelog.h). */
struct tdm__tclog_standby {
    tdm__tclog *l;
    scan s;
};

static void scan_free(scan *s)
{
    size_t pos = 0;
    uint64_t *v;
    const void *k;
    size_t kl;
    while (s->chunks && (v = tdm__map_next(s->chunks, &pos, &k, &kl)))
        tdm__free((void *)(uintptr_t)*v);
    tdm__map_destroy(s->chunks);
    tdm__map_destroy(s->keys);
    for (size_t i = 0; i < s->n_cands; i++)
        tdm__free(s->cands[i].val);
    tdm__free(s->cands);
}

static tdm_err scan_init(scan *s, tdm__tclog *l)
{
    memset(s, 0, sizeof *s);
    s->l = l;
    s->chunks = tdm__map_new();
    s->keys = tdm__map_new();
    return s->chunks && s->keys ? TDM_OK : TDM_ERR_NOMEM;
}

static int scan_fail(scan *s, tdm_err err)
{
    s->err = err;
    return 1;
}

/* An owner record during a read. */
static int scan_owner(scan *s, const rkey *k, const void *val, size_t vlen)
{
    tdm__tclog *l = s->l;
    char who[300];
    if (k->epoch > s->owner_epoch)
        s->owner_epoch = k->epoch;
    if (!val || !l->tag[0] || s->cut)
        return 0; /* R-TCL-2: not taking, or after our own record */
    if (!strcmp(k->tag, l->tag)) {
        s->cut = true; /* R-TCL-3 */
        return 0;
    }
    if (k->epoch < l->epoch)
        return 0;
    /* R-TCL-4: another process took the task as this one did. */
    owner_who(val, vlen, who, sizeof who);
    snprintf(s->msg, sizeof s->msg,
             "task %d was taken by %s (owner epoch %lld) while this process "
             "took it (epoch %lld): leaving it to that process",
             l->task, who[0] ? who : "another process", (long long)k->epoch,
             (long long)l->epoch);
    return scan_fail(s, TDM_ERR_STATE);
}

/* A manifest record during a read: kept when it counts (C3), as the
 * newest of its key. */
static int scan_manifest(scan *s, const char *key, const rkey *k, int64_t off,
                         const void *val, size_t vlen)
{
    size_t i = 0;
    while (i < s->n_cands && strcmp(s->cands[i].key, key) != 0)
        i++;
    if (i < s->n_cands) { /* R-TCL-5: the key's older record goes */
        tdm__free(s->cands[i].val);
        memmove(&s->cands[i], &s->cands[i + 1],
                (s->n_cands - i - 1) * sizeof *s->cands);
        s->n_cands--;
    }
    if (!val || s->owner_epoch > k->epoch)
        return 0; /* R-TCL-6: a tombstone, or refused to its writer */
    if (s->n_cands == s->cap_cands) {
        size_t cap = s->cap_cands ? 2 * s->cap_cands : 4;
        cand *v = tdm__realloc(s->cands, cap * sizeof *v);
        if (!v)
            return scan_fail(s, TDM_ERR_NOMEM);
        s->cands = v;
        s->cap_cands = cap;
    }
    cand *c = &s->cands[s->n_cands];
    memset(c, 0, sizeof *c);
    snprintf(c->key, sizeof c->key, "%s", key);
    c->k = *k;
    c->off = off;
    c->val = tdm__malloc(vlen ? vlen : 1);
    if (!c->val)
        return scan_fail(s, TDM_ERR_NOMEM);
    memcpy(c->val, val, vlen);
    c->len = vlen;
    s->n_cands++;
    return 0;
}

/* A chunk record during a read: the newest value of each key. */
static int scan_chunk(scan *s, const void *key, size_t klen, const void *val,
                      size_t vlen)
{
    uint64_t h = tdm__hash_bytes_seeded(key, klen, 0), *slot;
    uint64_t *old = tdm__map_find(s->chunks, key, klen, h);
    if (old) {
        tdm__free((void *)(uintptr_t)*old);
        tdm__map_remove(s->chunks, key, klen, h);
    }
    if (!val)
        return 0; /* R-TCL-7: a tombstone */
    uint8_t *b = tdm__malloc(sizeof(uint64_t) + vlen + 1);
    if (!b || tdm__map_put(s->chunks, key, klen, h, &slot, NULL) != TDM_OK) {
        tdm__free(b);
        return scan_fail(s, TDM_ERR_NOMEM);
    }
    uint64_t len = vlen;
    memcpy(b, &len, sizeof len);
    memcpy(b + sizeof len, val, vlen);
    *slot = (uintptr_t)b;
    return 0;
}

/* Notes @p key as read (C5: an earlier owner's keys are dropped). */
static int scan_note_key(scan *s, const void *key, size_t klen, bool tomb)
{
    uint64_t h = tdm__hash_bytes_seeded(key, klen, 0), *v;
    if (tomb) {
        tdm__map_remove(s->keys, key, klen, h);
        return 0;
    }
    return tdm__map_put(s->keys, key, klen, h, &v, NULL) == TDM_OK
               ? 0
               : scan_fail(s, TDM_ERR_NOMEM);
}

static int on_take_record(void *ud, int64_t off, const void *key, size_t klen,
                          const void *val, size_t vlen)
{
    scan *s = ud;
    rkey k;
    char text[TCL_KEY_MAX + 1];
    s->n++;
    if (!parse_key(key, klen, &k))
        return 0;
    if (k.epoch > s->max_epoch)
        s->max_epoch = k.epoch;
    if (k.kind == 'o')
        return scan_owner(s, &k, val, vlen) ||
               scan_note_key(s, key, klen, !val);
    if (s->cut)
        return 0; /* C3: nothing after the owner record restores */
    if (scan_note_key(s, key, klen, !val))
        return 1;
    if (k.kind == 'b')
        return scan_chunk(s, key, klen, val, vlen);
    memcpy(text, key, klen);
    text[klen] = '\0';
    return scan_manifest(s, text, &k, off, val, vlen);
}

/* Reads from l->pos to the end into @p s. */
static tdm_err scan_read(tdm__tclog *l, scan *s, char *errbuf,
                         size_t errbuf_size)
{
    tdm_err err = tdm__kclog_read(l->log, l->pos, on_take_record, s, &l->pos,
                                  errbuf, errbuf_size);
    if (err == TDM_OK && s->err != TDM_OK)
        err = tdm__errf(errbuf, errbuf_size, s->err, "%s",
                        s->msg[0] ? s->msg : tdm_strerror(s->err));
    return err;
}

/* ---- Restoring: the local folder from a manifest ---- */

/* Blob @p b of the checkpoint of candidate @p c from the chunks read,
 * into a new buffer; checked against the manifest's size and CRC. */
static tdm_err assemble(tdm__tclog *l, scan *s, const cand *c, uint64_t id,
                        const tdm__ckpt_blob_info *b, uint8_t **out,
                        char *errbuf, size_t errbuf_size)
{
    size_t n = (size_t)b->size, at = 0;
    uint8_t *p = tdm__malloc(n ? n : 1);
    char key[TCL_KEY_MAX + 64];
    if (!p)
        return TDM_ERR_NOMEM;
    for (size_t i = 0; at < n; i++) {
        chunk_key(key, sizeof key, c->k.tag, c->k.slot, b->name, i);
        uint64_t *v =
            tdm__map_find(s->chunks, key, strlen(key),
                          tdm__hash_bytes_seeded(key, strlen(key), 0));
        const uint8_t *ch = v ? (const uint8_t *)(uintptr_t)*v : NULL;
        uint64_t cl = 0;
        if (ch)
            memcpy(&cl, ch, sizeof cl);
        if (!ch || cl != (n - at < TCL_CHUNK ? n - at : TCL_CHUNK)) {
            tdm__free(p);
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                             "changelog %s: checkpoint %llu lacks record "
                             "\"%s\"%s (task %d cannot be restored from it; "
                             "was the topic's retention shorter than the "
                             "task's downtime?)",
                             tdm__kclog_name(l->log), (unsigned long long)id,
                             key, ch ? " of the right length" : "", l->task);
        }
        memcpy(p + at, ch + sizeof cl, (size_t)cl);
        at += (size_t)cl;
    }
    if (tdm__crc32c(0, p, n) != b->crc) {
        tdm__free(p);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                         "changelog %s: checkpoint %llu: blob %s does not "
                         "match its CRC",
                         tdm__kclog_name(l->log), (unsigned long long)id,
                         b->name);
    }
    *out = p;
    return TDM_OK;
}

/* Writes the checkpoint of manifest @p m (candidate @p c) into @p st. */
static tdm_err write_local(tdm__tclog *l, scan *s, const cand *c,
                           tdm__ckpt_store *st, const tdm__ckpt_manifest *m,
                           char *errbuf, size_t errbuf_size)
{
    tdm__ckpt_info info = {
        .id = m->id,
        .kind = m->kind,
        .job = m->job,
        .created_ms = m->created_ms,
        .parallelism = m->parallelism,
        .key_groups = m->key_groups,
        .meta = m->meta,
        .meta_len = m->meta_len,
    };
    tdm_err err = tdm__ckpt_begin(st, &info);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "%s",
                         tdm__ckpt_store_errmsg(st));
    for (size_t i = 0; err == TDM_OK && i < m->n_blobs; i++) {
        uint8_t *p = NULL;
        err = assemble(l, s, c, m->id, &m->blobs[i], &p, errbuf, errbuf_size);
        if (err == TDM_OK &&
            (err = tdm__ckpt_put(st, m->blobs[i].name, p,
                                 (size_t)m->blobs[i].size)) != TDM_OK)
            snprintf(errbuf, errbuf_size, "%s", tdm__ckpt_store_errmsg(st));
        tdm__free(p);
    }
    if (err == TDM_OK && (err = tdm__ckpt_commit(st)) != TDM_OK)
        snprintf(errbuf, errbuf_size, "%s", tdm__ckpt_store_errmsg(st));
    if (err != TDM_OK)
        tdm__ckpt_abort(st);
    return err;
}

/* Restores candidate @p c into @p st; *id is its checkpoint. */
static tdm_err restore_cand(tdm__tclog *l, scan *s, const cand *c,
                            tdm__ckpt_store *st, uint64_t *id, char *errbuf,
                            size_t errbuf_size)
{
    const uint8_t *body = NULL;
    size_t blen = 0;
    tdm__ckpt_manifest m = {0};
    if (!parse_manifest(c->val, c->len, id, &body, &blen))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                         "changelog %s: manifest record \"%s\" without its "
                         "header",
                         tdm__kclog_name(l->log), c->key);
    tdm_err err =
        tdm__ckpt_manifest_decode(body, blen, &m, errbuf, errbuf_size);
    if (err == TDM_OK && m.id != *id)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                        "changelog %s: manifest record of checkpoint %llu "
                        "holds checkpoint %llu",
                        tdm__kclog_name(l->log), (unsigned long long)*id,
                        (unsigned long long)m.id);
    if (err == TDM_OK)
        err = write_local(l, s, c, st, &m, errbuf, errbuf_size);
    tdm__ckpt_manifest_free(&m);
    return err;
}

/* Makes the local folder @p dir hold the newest checkpoint the read
 * found whole (C3: newest first, falling back), or none. */
static tdm_err materialize(tdm__tclog *l, scan *s, const char *dir,
                           uint64_t *restored, char *errbuf, size_t errbuf_size)
{
    tdm__ckpt_store *st = NULL;
    char first[700] = "";
    *restored = 0;
    tdm_err err = wipe(dir, errbuf, errbuf_size);
    if (err != TDM_OK || s->n_cands == 0)
        return err; /* R-TCL-8: no checkpoint: a fresh task */
    err = tdm__ckpt_store_open(dir, TDM__CKPT_WRITE, NULL, NULL, &st, errbuf,
                               errbuf_size);
    for (size_t i = s->n_cands; err == TDM_OK && i-- > 0;) {
        uint64_t id = 0;
        char why[700] = "";
        tdm_err e = restore_cand(l, s, &s->cands[i], st, &id, why, sizeof why);
        if (e == TDM_OK) {
            *restored = id;
            break;
        }
        if (e != TDM_ERR_PARSE) {
            err = tdm__errf(errbuf, errbuf_size, e, "%s", why);
            break;
        }
        if (!first[0])
            snprintf(first, sizeof first, "%s", why);
        if (i > 0) /* R-TCL-9: the one before it may be whole */
            say(l,
                "task %d: %s; trying the checkpoint before it: output "
                "committed after that one may be written again",
                l->task, why);
    }
    tdm__ckpt_store_close(st);
    if (err == TDM_OK && !*restored)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE, "%s", first);
    return err;
}

/* Appends the owner record of l->tag and waits for it. */
static tdm_err put_owner(tdm__tclog *l, char *errbuf, size_t errbuf_size)
{
    char key[TCL_TAG_MAX + 8], val[300];
    int kn = snprintf(key, sizeof key, "owner/%s", l->tag);
    int vn = snprintf(val, sizeof val, TCL_MAGIC " owner %s", l->who);
    tdm_err err = tdm__kclog_put(l->log, key, (size_t)kn, val, (size_t)vn,
                                 errbuf, errbuf_size);
    return err == TDM_OK ? tdm__kclog_flush(l->log, errbuf, errbuf_size) : err;
}

/* The keys of earlier owners the read found: dropped once this owner
 * publishes (C5). */
static tdm_err note_stale(tdm__tclog *l, scan *s)
{
    size_t pos = 0, kl;
    const void *k;
    rkey r;
    while (tdm__map_next(s->keys, &pos, &k, &kl))
        if (parse_key(k, kl, &r) && strcmp(r.tag, l->tag) != 0 &&
            keys_add(&l->stale, k, kl) != TDM_OK)
            return TDM_ERR_NOMEM;
    return TDM_OK;
}

/* The take after the log is open, from what @p s read so far (see the
 * header). */
static tdm_err take(tdm__tclog *l, scan *s, const char *dir,
                    tdm__tclog_took *took, char *errbuf, size_t errbuf_size)
{
    int64_t warm = s->n;
    tdm_err err = scan_read(l, s, errbuf, errbuf_size);
    if (err == TDM_OK) {
        uint64_t nonce = tdm__hash_mix64((uint64_t)tdm__mono_us() ^
                                         ((uint64_t)getpid() << 32) ^
                                         (uint64_t)(uintptr_t)l);
        l->epoch = s->max_epoch + 1;
        snprintf(l->tag, sizeof l->tag, "%lld.%08x", (long long)l->epoch,
                 (unsigned)(nonce & 0xffffffffu));
        err = put_owner(l, errbuf, errbuf_size);
    }
    if (err == TDM_OK)
        err = scan_read(l, s, errbuf, errbuf_size);
    if (err == TDM_OK && !s->cut)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "changelog %s: the owner record written is not in "
                        "the partition",
                        tdm__kclog_name(l->log));
    if (err == TDM_OK)
        err = materialize(l, s, dir, &took->restored, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = note_stale(l, s);
    took->epoch = l->epoch;
    snprintf(took->tag, sizeof took->tag, "%s", l->tag);
    took->warm = warm;
    took->read = s->n - warm;
    return err;
}

/* A log of task c->task's partition, not yet taken. */
static tdm_err tclog_new(const tdm__tclog_conf *c, tdm__tclog **out,
                         char *errbuf, size_t errbuf_size)
{
    tdm__kclog_conf kc = {
        .brokers = c->brokers,
        .props = c->props,
        .n_props = c->n_props,
        .topic = c->topic,
        .partition = c->task,
        .timeout_ms = c->timeout_ms,
        .log = c->log,
        .log_ud = c->log_ud,
        .progress = c->progress,
        .progress_ud = c->progress_ud,
    };
    tdm__tclog *l = tdm__calloc(1, sizeof *l);
    *out = NULL;
    if (!l)
        return TDM_ERR_NOMEM;
    l->task = c->task;
    l->logf = c->log;
    l->log_ud = c->log_ud;
    l->pos = -1;
    tdm__task_owner_name(l->who, sizeof l->who);
    tdm_err err = tdm__kclog_open(&kc, &l->log, errbuf, errbuf_size);
    if (err != TDM_OK) {
        tdm__tclog_close(l);
        return err;
    }
    *out = l;
    return TDM_OK;
}

/* The log line of a take. */
static void say_taken(const tdm__tclog *l, const tdm__tclog_took *t)
{
    char warm[120] = "";
    if (t->warm)
        snprintf(warm, sizeof warm, ", %lld kept warm by a standby",
                 (long long)t->warm);
    if (t->restored)
        say(l,
            "task %d: changelog %s: checkpoint %llu restored (owner epoch "
            "%lld; %lld record(s) read%s)",
            l->task, tdm__kclog_name(l->log), (unsigned long long)t->restored,
            (long long)l->epoch, (long long)t->read, warm);
    else
        say(l,
            "task %d: changelog %s: no checkpoint, a fresh task (owner "
            "epoch %lld)",
            l->task, tdm__kclog_name(l->log), (long long)l->epoch);
}

tdm_err tdm__tclog_take(const tdm__tclog_conf *c, const char *dir,
                        tdm__tclog_standby *sb, tdm__tclog **out,
                        tdm__tclog_took *took, char *errbuf, size_t errbuf_size)
{
    tdm__tclog *l = NULL;
    scan s = {0};
    tdm_err err = TDM_OK;
    memset(took, 0, sizeof *took);
    *out = NULL;
    if (sb) {
        /* R-TCL-10: the standby's log and what it read so far; the
         * take's reads report their progress. */
        l = sb->l;
        s = sb->s;
        tdm__free(sb);
        tdm__kclog_set_progress(l->log, c->progress, c->progress_ud);
    } else {
        err = tclog_new(c, &l, errbuf, errbuf_size);
        if (err == TDM_OK)
            err = scan_init(&s, l);
    }
    s.l = l;
    if (err == TDM_OK)
        err = take(l, &s, dir, took, errbuf, errbuf_size);
    scan_free(&s);
    if (err != TDM_OK) {
        tdm__tclog_close(l);
        return err;
    }
    say_taken(l, took);
    *out = l;
    return TDM_OK;
}

/* ---- Standbys ---- */

tdm_err tdm__tclog_standby_open(const tdm__tclog_conf *c,
                                tdm__tclog_standby **out, char *errbuf,
                                size_t errbuf_size)
{
    tdm__tclog_standby *sb = tdm__calloc(1, sizeof *sb);
    *out = NULL;
    if (!sb)
        return TDM_ERR_NOMEM;
    tdm_err err = tclog_new(c, &sb->l, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = scan_init(&sb->s, sb->l);
    if (err != TDM_OK) {
        tdm__tclog_standby_close(sb);
        return err;
    }
    *out = sb;
    return TDM_OK;
}

tdm_err tdm__tclog_standby_poll(tdm__tclog_standby *sb, int64_t *records,
                                char *errbuf, size_t errbuf_size)
{
    int64_t before = sb->s.n;
    tdm_err err = scan_read(sb->l, &sb->s, errbuf, errbuf_size);
    *records = sb->s.n - before;
    return err;
}

void tdm__tclog_standby_close(tdm__tclog_standby *sb)
{
    if (!sb)
        return;
    scan_free(&sb->s);
    tdm__tclog_close(sb->l);
    tdm__free(sb);
}

/* ---- Publishing a checkpoint (C1, C2, C4, C5) ---- */

/* Appends blob @p name (@p p, @p n bytes) as chunks of the next slot. */
static tdm_err put_blob(tdm__tclog *l, keys *written, const char *name,
                        const uint8_t *p, size_t n, char *errbuf,
                        size_t errbuf_size)
{
    char key[TCL_KEY_MAX + 64];
    tdm_err err = TDM_OK;
    for (size_t i = 0, at = 0; err == TDM_OK && at < n; i++) {
        size_t len = n - at < TCL_CHUNK ? n - at : TCL_CHUNK;
        chunk_key(key, sizeof key, l->tag, l->slot, name, i);
        err = tdm__kclog_put(l->log, key, strlen(key), p + at, len, errbuf,
                             errbuf_size);
        if (err == TDM_OK)
            err = keys_add(written, key, strlen(key));
        at += len;
    }
    return err;
}

/* Appends the manifest record of checkpoint @p id (its MANIFEST read
 * from the folder @p dir); from then on the publish's outcome is
 * uncertain until a read sees the record (C2). */
static tdm_err put_manifest(tdm__tclog *l, const char *dir, uint64_t id,
                            char *errbuf, size_t errbuf_size)
{
    char path[4200], head[80], key[TCL_TAG_MAX + 16];
    void *mf = NULL;
    size_t mlen = 0;
    snprintf(path, sizeof path, "%s/chk-%010" PRIu64 "/MANIFEST", dir, id);
    tdm_err err = tdm__fio_read_file(path, &mf, &mlen, errbuf, errbuf_size);
    int hl = snprintf(head, sizeof head, TCL_MAGIC " manifest %llu\n",
                      (unsigned long long)id);
    int kl = snprintf(key, sizeof key, "manifest/%s/%d", l->tag, l->slot);
    uint8_t *val = err == TDM_OK ? tdm__malloc((size_t)hl + mlen) : NULL;
    if (err == TDM_OK && !val)
        err = TDM_ERR_NOMEM;
    if (err == TDM_OK) {
        memcpy(val, head, (size_t)hl);
        memcpy(val + hl, mf, mlen);
        err = tdm__kclog_put(l->log, key, (size_t)kl, val, (size_t)hl + mlen,
                             errbuf, errbuf_size);
    }
    if (err == TDM_OK) {
        l->uncertain = true;
        l->unc_id = id;
        l->unc_slot = l->slot;
    }
    tdm__free(val);
    tdm__free(mf);
    return err;
}

/* Appends every blob of checkpoint @p id and then its manifest record. */
static tdm_err put_checkpoint(tdm__tclog *l, tdm__ckpt_store *st,
                              const char *dir, uint64_t id, keys *written,
                              char *errbuf, size_t errbuf_size)
{
    tdm__ckpt_reader *rd = NULL;
    tdm_err err = tdm__ckpt_reader_open(st, id, &rd);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "%s",
                         tdm__ckpt_store_errmsg(st));
    const tdm__ckpt_manifest *m = tdm__ckpt_reader_manifest(rd);
    for (size_t i = 0; err == TDM_OK && i < m->n_blobs; i++) {
        void *p = NULL;
        size_t n = 0;
        err = tdm__ckpt_get(rd, m->blobs[i].name, &p, &n);
        if (err != TDM_OK)
            snprintf(errbuf, errbuf_size, "%s", tdm__ckpt_reader_errmsg(rd));
        else
            err = put_blob(l, written, m->blobs[i].name, p, n, errbuf,
                           errbuf_size);
        tdm__free(p);
    }
    tdm__ckpt_reader_close(rd);
    return err == TDM_OK ? put_manifest(l, dir, id, errbuf, errbuf_size) : err;
}

/* What a read after a publish found (C2, C4). */
typedef struct fence {
    tdm__tclog *l;
    bool mine; /* the uncertain manifest's record was read */
    int64_t newer;
    bool before; /* the newer owner record came before it */
    char who[300];
} fence;

static int on_fence_record(void *ud, int64_t off, const void *key, size_t klen,
                           const void *val, size_t vlen)
{
    fence *f = ud;
    rkey k;
    uint64_t id = 0;
    const uint8_t *body;
    size_t blen;
    (void)off;
    if (!val || !parse_key(key, klen, &k) || k.kind == 'b')
        return 0;
    if (k.kind == 'm' && !strcmp(k.tag, f->l->tag) &&
        k.slot == f->l->unc_slot &&
        parse_manifest(val, vlen, &id, &body, &blen) && id == f->l->unc_id)
        f->mine = true;
    else if (k.kind == 'o' && k.epoch > f->l->epoch && !f->newer) {
        f->newer = k.epoch;
        f->before = !f->mine;
        owner_who(val, vlen, f->who, sizeof f->who);
    }
    return 0;
}

/* Tombstones keys of @p k not in @p keep (NULL: all). */
static tdm_err tombstone(tdm__tclog *l, const keys *k, const keys *keep,
                         char *errbuf, size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    for (size_t i = 0; err == TDM_OK && i < k->n; i++)
        if (!keep || !keys_has(keep, k->v[i]))
            err = tdm__kclog_put(l->log, k->v[i], strlen(k->v[i]), NULL, 0,
                                 errbuf, errbuf_size);
    return err;
}

/* The message of a takeover. */
static tdm_err taken_over(tdm__tclog *l, char *errbuf, size_t errbuf_size)
{
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                     "task %d was taken over by %s (owner epoch %lld, this "
                     "process holds %lld): stopping without writing; its "
                     "output since the last checkpoint stays uncommitted "
                     "and the new owner writes it",
                     l->task, l->taker, (long long)l->taker_epoch,
                     (long long)l->epoch);
}

/* Reads on after a manifest was handed over: whether it landed
 * (*landed; the slot then turns, C2) and whether a newer owner took the
 * task (C4: TDM_ERR_STATE).  TDM_ERR_IO when the read fails (the
 * outcome stays unknown). */
static tdm_err settle(tdm__tclog *l, bool *landed, char *errbuf,
                      size_t errbuf_size)
{
    fence f = {.l = l};
    *landed = false;
    tdm_err err = tdm__kclog_read(l->log, l->pos, on_fence_record, &f, &l->pos,
                                  errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    l->uncertain = false;
    *landed = f.mine;
    /* R-TCL-11: landed, the other slot is next; not, its slot is free. */
    l->slot = f.mine ? 1 - l->unc_slot : l->unc_slot;
    if (f.newer) {
        l->taken = true;
        snprintf(l->taker, sizeof l->taker, "%s",
                 f.who[0] ? f.who : "another process");
        l->taker_epoch = f.newer;
    }
    if (f.newer && (f.before || !f.mine))
        return taken_over(l, errbuf, errbuf_size); /* C4 */
    return TDM_OK;
}

/* A publish cut short left its manifest's outcome unknown: the producer
 * is flushed (every record delivered or failed) and the partition read,
 * before anything is written again (C2). */
static tdm_err settle_earlier(tdm__tclog *l, char *errbuf, size_t errbuf_size)
{
    bool landed = false;
    tdm_err err = tdm__kclog_flush(l->log, errbuf, errbuf_size);
    if (err != TDM_OK && tdm__kclog_pending(l->log) > 0)
        return err; /* R-TCL-12: still in flight: write nothing */
    return settle(l, &landed, errbuf, errbuf_size);
}

/* What a success changes (C5): the tombstones.  They only tidy up, so a
 * failure to queue one is logged, not the publish's. */
static void after_publish(tdm__tclog *l, keys *written)
{
    char why[400];
    int used = 1 - l->slot; /* settle turned it */
    tdm_err err = tombstone(l, &l->slot_keys[used], written, why, sizeof why);
    if (err == TDM_OK)
        err = tombstone(l, &l->stale, NULL, why, sizeof why);
    if (err != TDM_OK)
        say(l, "task %d: changelog %s: %s (left for the next checkpoint)",
            l->task, tdm__kclog_name(l->log), why);
    else
        keys_free(&l->stale);
    keys_free(&l->slot_keys[used]);
    l->slot_keys[used] = *written;
    memset(written, 0, sizeof *written);
}

tdm_err tdm__tclog_publish(tdm__tclog *l, tdm__ckpt_store *st, const char *dir,
                           uint64_t id, char *errbuf, size_t errbuf_size)
{
    keys written = {0};
    tdm_err err = TDM_OK;
    if (l->uncertain)
        err = settle_earlier(l, errbuf, errbuf_size);
    if (err == TDM_OK && l->taken)
        err = taken_over(l, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = put_checkpoint(l, st, dir, id, &written, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm__kclog_flush(l->log, errbuf, errbuf_size);
    bool landed = false;
    if (err == TDM_OK)
        err = settle(l, &landed, errbuf, errbuf_size);
    if (err == TDM_OK && !landed)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "changelog %s: checkpoint %llu's manifest record did "
                        "not reach the partition",
                        tdm__kclog_name(l->log), (unsigned long long)id);
    if (err == TDM_OK)
        after_publish(l, &written);
    keys_free(&written);
    if (err != TDM_OK) {
        char path[4200], why[300];
        snprintf(path, sizeof path, "%s/chk-%010" PRIu64, dir, id);
        (void)tdm__fio_remove_tree(path, "MANIFEST", why, sizeof why);
    }
    return err;
}

void tdm__tclog_close(tdm__tclog *l)
{
    if (!l)
        return;
    tdm__kclog_close(l->log);
    keys_free(&l->stale);
    keys_free(&l->slot_keys[0]);
    keys_free(&l->slot_keys[1]);
    tdm__free(l);
}
