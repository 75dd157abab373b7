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
 * The records of a task's partition (keys, then values):
 *
 *   owner                  "tdmcl1 owner <epoch> <who>": a process took
 *                          the task with that owner epoch;
 *   b/<epoch>/<slot>/<blob>/<i>
 *                          chunk i (256 KiB) of a checkpoint blob;
 *   manifest               "tdmcl1 manifest <id> <epoch> <slot>\n" and
 *                          the checkpoint's MANIFEST (blob names, sizes,
 *                          CRCs): checkpoint <id> is complete in the
 *                          topic.
 *
 *  C1  A checkpoint is durable once its manifest record is acknowledged;
 *      the chunks go first (the producer is idempotent: one partition's
 *      records land once each, in order).
 *  C2  An owner writes its checkpoints into two slots in turn, never into
 *      the slot the last manifest names, so a publish cut short (a crash,
 *      a full topic) leaves the last complete checkpoint whole, even
 *      after compaction keeps only the newest record of each key.  Keys
 *      carry the owner epoch, so two owners never write the same key.
 *  C3  Taking a task appends an owner record with the next epoch (the
 *      highest in the partition plus one) and then reads the partition to
 *      its end: the checkpoint restored is the newest whose manifest
 *      precedes that owner record.  An owner record of another process
 *      before it with an epoch as high means both took the task at once:
 *      the later one stops.
 *  C4  A publish reads the partition after its manifest is written: an
 *      owner record with a higher epoch before the manifest means the
 *      task was taken over before this checkpoint existed, and it is
 *      dropped (nothing of it is committed, TDM_ERR_STATE).  One after
 *      the manifest means the new owner restores this checkpoint, so its
 *      output is committed; the next publish then stops the task.
 *  C5  The first publish of an owner tombstones every chunk of the
 *      epochs before it (the restored checkpoint included: it is
 *      superseded), and each publish tombstones the keys of its slot's
 *      previous checkpoint that it did not write again, so compaction
 *      keeps the partition at about two checkpoints.
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
#include "state/ckpt_codec.h"

#define TCL_CHUNK ((size_t)256 * 1024)
#define TCL_MAGIC "tdmcl1"
#define TCL_KEY_MAX 256

/* A list of owned key strings. */
typedef struct keys {
    char **v;
    size_t n, cap;
} keys;

struct tdm__tclog {
    tdm__kclog *log;
    int task;
    int64_t epoch;
    char who[200];
    int slot;          /* the slot the next publish writes (C2) */
    int64_t pos;       /* the next offset to read */
    keys stale;        /* chunks of earlier epochs (C5) */
    keys slot_keys[2]; /* the chunk keys each slot holds */
    bool taken;        /* a newer owner follows a published manifest (C4) */
    char taker[300];
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

static bool key_is(const void *key, size_t klen, const char *s)
{
    return klen == strlen(s) && memcmp(key, s, klen) == 0;
}

/* The key of chunk @p i of blob @p name in @p slot of @p epoch. */
static void chunk_key(char *out, size_t n, int64_t epoch, int slot,
                      const char *name, size_t i)
{
    snprintf(out, n, "b/%lld/%d/%s/%zu", (long long)epoch, slot, name, i);
}

/* Parses an owner record's value. */
static bool parse_owner(const void *val, size_t vlen, int64_t *epoch, char *who,
                        size_t who_n)
{
    char text[400];
    long long e = 0;
    int at = 0;
    if (!val || vlen >= sizeof text)
        return false;
    memcpy(text, val, vlen);
    text[vlen] = '\0';
    if (sscanf(text, TCL_MAGIC " owner %lld %n", &e, &at) != 1 || at <= 0)
        return false;
    snprintf(who, who_n, "%s", text + at);
    *epoch = e;
    return true;
}

/* Parses a manifest record's header line; *body is the MANIFEST. */
static bool parse_manifest(const void *val, size_t vlen, uint64_t *id,
                           int64_t *epoch, int *slot, const uint8_t **body,
                           size_t *blen)
{
    const char *nl = val ? memchr(val, '\n', vlen < 100 ? vlen : 100) : NULL;
    char head[101];
    unsigned long long i = 0;
    long long e = 0;
    if (!nl)
        return false;
    size_t hl = (size_t)(nl - (const char *)val);
    memcpy(head, val, hl);
    head[hl] = '\0';
    if (sscanf(head, TCL_MAGIC " manifest %llu %lld %d", &i, &e, slot) != 3 ||
        (*slot != 0 && *slot != 1))
        return false;
    *id = i;
    *epoch = e;
    *body = (const uint8_t *)nl + 1;
    *blen = vlen - hl - 1;
    return true;
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

/* ---- Taking a task (C3) ---- */

/* What a read of the partition found. */
typedef struct scan {
    tdm__tclog *l;
    tdm__map *chunks; /* key -> (uintptr_t) buf: u64 length, then bytes */
    int64_t max_epoch;
    uint8_t *manifest; /* the newest manifest record before the cutoff */
    size_t manifest_len;
    bool cut;  /* this process's owner record was read */
    int64_t n; /* records read */
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
    tdm__free(s->manifest);
}

static int scan_fail(scan *s, tdm_err err)
{
    s->err = err;
    return 1;
}

/* An owner record during a take. */
static int scan_owner(scan *s, const void *val, size_t vlen)
{
    tdm__tclog *l = s->l;
    int64_t e = 0;
    char who[300];
    if (!parse_owner(val, vlen, &e, who, sizeof who))
        return 0; /* R-TCL-1: not ours to read */
    if (e > s->max_epoch)
        s->max_epoch = e;
    if (l->epoch == 0)
        return 0; /* R-TCL-2: the first read: epochs only */
    if (e == l->epoch && !strcmp(who, l->who)) {
        s->cut = true; /* R-TCL-3 */
        return 0;
    }
    if (e < l->epoch)
        return 0;
    /* R-TCL-4: another process took the task as this one did, or after. */
    snprintf(s->msg, sizeof s->msg,
             "task %d was taken by %s (owner epoch %lld) while this process "
             "took it (epoch %lld): leaving it to that process",
             l->task, who, (long long)e, (long long)l->epoch);
    return scan_fail(s, TDM_ERR_STATE);
}

/* A manifest record during a take: the newest one before the cutoff. */
static int scan_manifest(scan *s, const void *val, size_t vlen)
{
    if (!val)
        return 0;
    uint8_t *p = tdm__malloc(vlen);
    if (!p)
        return scan_fail(s, TDM_ERR_NOMEM);
    memcpy(p, val, vlen);
    tdm__free(s->manifest);
    s->manifest = p;
    s->manifest_len = vlen;
    return 0;
}

/* A chunk record during a take: the newest value of each key. */
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
        return 0; /* R-TCL-5: a tombstone */
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

static int on_take_record(void *ud, int64_t off, const void *key, size_t klen,
                          const void *val, size_t vlen)
{
    scan *s = ud;
    (void)off;
    s->n++;
    if (key_is(key, klen, "owner"))
        return scan_owner(s, val, vlen);
    if (s->cut)
        return 0; /* C3: nothing after the owner record restores */
    if (key_is(key, klen, "manifest"))
        return scan_manifest(s, val, vlen);
    if (klen > 2 && klen < TCL_KEY_MAX && !memcmp(key, "b/", 2))
        return scan_chunk(s, key, klen, val, vlen);
    return 0; /* R-TCL-6: a record of a later version */
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

/* Blob @p b of checkpoint (@p epoch, @p slot) from the chunks read, into
 * a new buffer; checked against the manifest's size and CRC. */
static tdm_err assemble(tdm__tclog *l, scan *s, int64_t epoch, int slot,
                        uint64_t id, const tdm__ckpt_blob_info *b,
                        uint8_t **out, char *errbuf, size_t errbuf_size)
{
    size_t n = (size_t)b->size, at = 0;
    uint8_t *p = tdm__malloc(n ? n : 1);
    char key[TCL_KEY_MAX + 64];
    if (!p)
        return TDM_ERR_NOMEM;
    for (size_t i = 0; at < n; i++) {
        chunk_key(key, sizeof key, epoch, slot, b->name, i);
        uint64_t *v =
            tdm__map_find(s->chunks, key, strlen(key),
                          tdm__hash_bytes_seeded(key, strlen(key), 0));
        const uint8_t *c = v ? (const uint8_t *)(uintptr_t)*v : NULL;
        uint64_t cl = 0;
        if (c)
            memcpy(&cl, c, sizeof cl);
        if (!c || cl != (n - at < TCL_CHUNK ? n - at : TCL_CHUNK)) {
            tdm__free(p);
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                             "changelog %s: checkpoint %llu lacks record "
                             "\"%s\"%s (task %d cannot be restored; was "
                             "the topic's retention shorter than the "
                             "task's downtime?)",
                             tdm__kclog_name(l->log), (unsigned long long)id,
                             key, c ? " of the right length" : "", l->task);
        }
        memcpy(p + at, c + sizeof cl, (size_t)cl);
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

/* Writes the checkpoint of manifest @p m (from @p s) into @p st. */
static tdm_err write_local(tdm__tclog *l, scan *s, tdm__ckpt_store *st,
                           const tdm__ckpt_manifest *m, int64_t epoch, int slot,
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
    for (size_t i = 0; err == TDM_OK && i < m->n_blobs; i++) {
        uint8_t *p = NULL;
        err = assemble(l, s, epoch, slot, m->id, &m->blobs[i], &p, errbuf,
                       errbuf_size);
        if (err == TDM_OK)
            err = tdm__ckpt_put(st, m->blobs[i].name, p,
                                (size_t)m->blobs[i].size);
        tdm__free(p);
    }
    if (err == TDM_OK)
        err = tdm__ckpt_commit(st);
    else
        tdm__ckpt_abort(st);
    return err;
}

/* Makes the local folder @p dir hold the checkpoint of the manifest
 * record @p s found (or none). */
static tdm_err materialize(tdm__tclog *l, scan *s, const char *dir,
                           uint64_t *restored, char *errbuf, size_t errbuf_size)
{
    const uint8_t *body = NULL;
    size_t blen = 0;
    int64_t epoch = 0;
    int slot = 0;
    uint64_t id = 0;
    tdm__ckpt_manifest m = {0};
    tdm__ckpt_store *st = NULL;
    *restored = 0;
    tdm_err err = wipe(dir, errbuf, errbuf_size);
    if (err != TDM_OK || !s->manifest)
        return err; /* R-TCL-7: no checkpoint: a fresh task */
    if (!parse_manifest(s->manifest, s->manifest_len, &id, &epoch, &slot, &body,
                        &blen))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                         "changelog %s: a manifest record without its "
                         "header",
                         tdm__kclog_name(l->log));
    err = tdm__ckpt_manifest_decode(body, blen, &m, errbuf, errbuf_size);
    if (err == TDM_OK && m.id != id)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                        "changelog %s: manifest record of checkpoint %llu "
                        "holds checkpoint %llu",
                        tdm__kclog_name(l->log), (unsigned long long)id,
                        (unsigned long long)m.id);
    if (err == TDM_OK)
        err = tdm__ckpt_store_open(dir, TDM__CKPT_WRITE, NULL, NULL, &st,
                                   errbuf, errbuf_size);
    if (err == TDM_OK)
        err = write_local(l, s, st, &m, epoch, slot, errbuf, errbuf_size);
    if (err != TDM_OK && st && !*errbuf)
        snprintf(errbuf, errbuf_size, "%s", tdm__ckpt_store_errmsg(st));
    tdm__ckpt_store_close(st);
    tdm__ckpt_manifest_free(&m);
    if (err == TDM_OK)
        *restored = id;
    return err;
}

/* This process's name in owner records. */
static void self_name(tdm__tclog *l)
{
    char host[128] = "host";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = '\0';
    snprintf(l->who, sizeof l->who, "%s-%ld/%lld", host, (long)getpid(),
             (long long)tdm__mono_us());
}

/* Appends the owner record of epoch l->epoch and waits for it. */
static tdm_err put_owner(tdm__tclog *l, char *errbuf, size_t errbuf_size)
{
    char val[400];
    int n = snprintf(val, sizeof val, TCL_MAGIC " owner %lld %s",
                     (long long)l->epoch, l->who);
    tdm_err err =
        tdm__kclog_put(l->log, "owner", 5, val, (size_t)n, errbuf, errbuf_size);
    return err == TDM_OK ? tdm__kclog_flush(l->log, errbuf, errbuf_size) : err;
}

/* The chunk keys the read found: all superseded once this owner
 * publishes (C5). */
static tdm_err note_stale(tdm__tclog *l, scan *s)
{
    size_t pos = 0, kl;
    const void *k;
    while (tdm__map_next(s->chunks, &pos, &k, &kl))
        if (keys_add(&l->stale, k, kl) != TDM_OK)
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
        l->epoch = s->max_epoch + 1;
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
    self_name(l);
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
        /* R-TCL-8: the standby's log and what it read so far. */
        l = sb->l;
        s = sb->s;
        tdm__free(sb);
    } else {
        err = tclog_new(c, &l, errbuf, errbuf_size);
        s.chunks = err == TDM_OK ? tdm__map_new() : NULL;
        if (err == TDM_OK && !s.chunks)
            err = TDM_ERR_NOMEM;
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
    sb->s.l = sb->l;
    sb->s.chunks = err == TDM_OK ? tdm__map_new() : NULL;
    if (err == TDM_OK && !sb->s.chunks)
        err = TDM_ERR_NOMEM;
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
        chunk_key(key, sizeof key, l->epoch, l->slot, name, i);
        err = tdm__kclog_put(l->log, key, strlen(key), p + at, len, errbuf,
                             errbuf_size);
        if (err == TDM_OK)
            err = keys_add(written, key, strlen(key));
        at += len;
    }
    return err;
}

/* Appends every blob of checkpoint @p id and then its manifest record. */
static tdm_err put_checkpoint(tdm__tclog *l, tdm__ckpt_store *st,
                              const char *dir, uint64_t id, keys *written,
                              char *errbuf, size_t errbuf_size)
{
    tdm__ckpt_reader *rd = NULL;
    char path[4200], head[120];
    void *mf = NULL;
    size_t mlen = 0;
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
    snprintf(path, sizeof path, "%s/chk-%010" PRIu64 "/MANIFEST", dir, id);
    if (err == TDM_OK)
        err = tdm__fio_read_file(path, &mf, &mlen, errbuf, errbuf_size);
    int hl = snprintf(head, sizeof head, TCL_MAGIC " manifest %llu %lld %d\n",
                      (unsigned long long)id, (long long)l->epoch, l->slot);
    uint8_t *val = err == TDM_OK ? tdm__malloc((size_t)hl + mlen) : NULL;
    if (err == TDM_OK && !val)
        err = TDM_ERR_NOMEM;
    if (err == TDM_OK) {
        memcpy(val, head, (size_t)hl);
        memcpy(val + hl, mf, mlen);
        err = tdm__kclog_put(l->log, "manifest", 8, val, (size_t)hl + mlen,
                             errbuf, errbuf_size);
    }
    tdm__free(val);
    tdm__free(mf);
    return err;
}

/* What the read after a publish found (C4). */
typedef struct fence {
    tdm__tclog *l;
    uint64_t id;
    bool mine; /* this checkpoint's manifest record was read */
    int64_t newer;
    bool before; /* the newer owner record came before it */
    char who[300];
} fence;

static int on_fence_record(void *ud, int64_t off, const void *key, size_t klen,
                           const void *val, size_t vlen)
{
    fence *f = ud;
    int64_t e = 0;
    uint64_t id = 0;
    int slot = 0;
    const uint8_t *body;
    size_t blen;
    (void)off;
    if (key_is(key, klen, "manifest") &&
        parse_manifest(val, vlen, &id, &e, &slot, &body, &blen) &&
        e == f->l->epoch && id == f->id)
        f->mine = true;
    else if (key_is(key, klen, "owner") &&
             parse_owner(val, vlen, &e, f->who, sizeof f->who) &&
             e > f->l->epoch && !f->newer) {
        f->newer = e;
        f->before = !f->mine;
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

/* The fence check after a publish (C4) and what a success changes (C2,
 * C5). */
static tdm_err after_publish(tdm__tclog *l, uint64_t id, keys *written,
                             char *errbuf, size_t errbuf_size)
{
    fence f = {.l = l, .id = id};
    tdm_err err = tdm__kclog_read(l->log, l->pos, on_fence_record, &f, &l->pos,
                                  errbuf, errbuf_size);
    if (err == TDM_OK && !f.mine)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "changelog %s: checkpoint %llu's manifest record "
                        "is not in the partition",
                        tdm__kclog_name(l->log), (unsigned long long)id);
    if (err != TDM_OK)
        return err;
    if (f.newer) {
        l->taken = true; /* C4: every later publish stops */
        snprintf(l->taker, sizeof l->taker, "%.200s (owner epoch %lld)", f.who,
                 (long long)f.newer);
    }
    if (f.newer && f.before)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "task %d was taken over by %s (owner epoch %lld, "
                         "this process holds %lld): stopping without "
                         "writing; its output since the last checkpoint "
                         "stays uncommitted and the new owner writes it",
                         l->task, f.who, (long long)f.newer,
                         (long long)l->epoch);
    /* C4: a newer owner after the manifest restores this checkpoint:
     * committed, and the next publish stops. */
    err = tombstone(l, &l->slot_keys[l->slot], written, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tombstone(l, &l->stale, NULL, errbuf, errbuf_size);
    keys_free(&l->stale);
    keys_free(&l->slot_keys[l->slot]);
    l->slot_keys[l->slot] = *written;
    memset(written, 0, sizeof *written);
    l->slot ^= 1;
    return err;
}

tdm_err tdm__tclog_publish(tdm__tclog *l, tdm__ckpt_store *st, const char *dir,
                           uint64_t id, char *errbuf, size_t errbuf_size)
{
    keys written = {0};
    tdm_err err = TDM_OK;
    if (l->taken)
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "task %d was taken over by %s: stopping without "
                        "writing; its output since the last checkpoint "
                        "stays uncommitted and the new owner writes it",
                        l->task, l->taker);
    if (err == TDM_OK)
        err = put_checkpoint(l, st, dir, id, &written, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm__kclog_flush(l->log, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = after_publish(l, id, &written, errbuf, errbuf_size);
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
