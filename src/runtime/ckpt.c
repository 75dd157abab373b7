/* SPDX-License-Identifier: MIT */
/* ckpt.c - checkpoints in the running job: the coordinator (the run
 * thread: start a checkpoint every checkpoint.interval, collect every
 * subtask's acknowledgement, write the checkpoint with ckpt_store, then
 * let the sinks commit), the per-writer sink objects and their
 * recovery, the final checkpoint at a clean end, and restore at start
 * (the job's shape checked, source sections merged for any parallelism).
 * The subtasks' side of a barrier is in task_source.c (sources) and
 * task_op_ckpt.c (operators).  docs/checkpoints.md, "In the runtime".
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/ckpt.h"
#include "runtime/task_changelog.h"
#include "runtime/live.h"
#include "runtime/task_op.h"
#include "runtime/task_owner.h"
#include "runtime/task_source.h"
#include "state/ckpt_codec.h"
#include "state/ckpt_store.h"
#include "time/wm.h"

/* Writer numbers are role * RT_CK_ROLE + subtask: the same writer keeps
 * its number (and its part files) at any parallelism (at most 256). */
#define RT_CK_ROLE 256

/* Version of the job-shape metadata in the manifest. */
#define RT_CK_META_VERSION 1

void tdm__rt_ckpt_src_name(int si, int k, char *buf, size_t n)
{
    snprintf(buf, n, "s%d-%d", si, k);
}

static void sink_blob_name(int si, int w, char *buf, size_t n)
{
    snprintf(buf, n, "w%d-%d", si, w);
}

static void store_log(void *opaque, uint64_t id, const char *msg)
{
    tdm__run *run = opaque;
    (void)id;
    tdm__job_log(run->job, "checkpoint: %s", msg);
}

/* The job's shape as the manifest keeps it: every node's kind and name
 * in order, every source's pass-through sink and the dead-letter sink
 * (the writer roles of the sinks follow from them). */
static tdm_err shape_meta(const tdm_job *job, uint8_t **out, size_t *len)
{
    tdm__enc e;
    tdm__enc_init(&e);
    tdm__enc_uvar(&e, RT_CK_META_VERSION);
    tdm__enc_uvar(&e, (uint64_t)job->n_nodes);
    for (int i = 0; i < job->n_nodes; i++) {
        const tdm_node *n = job->nodes[i];
        tdm__enc_u8(&e, (uint8_t)n->kind);
        tdm__enc_str(&e, n->name);
        bool op = n->kind == TDM_NODE_WINDOW || n->kind == TDM_NODE_JOIN;
        tdm__enc_str(&e, n->kind == TDM_NODE_SOURCE || op
                             ? tdm__node_spec_sink(n->kind, &n->spec)
                             : "");
        tdm__enc_str(&e, op ? tdm__node_spec_late(n->kind, &n->spec) : "");
    }
    tdm__enc_str(&e, job->spec.dead_letter);
    return tdm__enc_finish(&e, out, len);
}

/* "a (source), out (sink)" from shape metadata, for the refusal. */
static void shape_text(const uint8_t *p, size_t len, char *buf, size_t n)
{
    tdm__dec d;
    uint64_t v = 0, cnt = 0;
    size_t used = 0;
    buf[0] = 0;
    tdm__dec_init(&d, p, len);
    tdm__dec_uvar(&d, &v);
    tdm__dec_uvar(&d, &cnt);
    for (uint64_t i = 0; i < cnt && !d.err && used + 1 < n; i++) {
        uint8_t kind = 0;
        char *name = NULL, *sink = NULL, *late = NULL;
        tdm__dec_u8(&d, &kind);
        tdm__dec_str(&d, &name);
        tdm__dec_str(&d, &sink);
        tdm__dec_str(&d, &late);
        tdm__free(late);
        if (!d.err) {
            int w = snprintf(buf + used, n - used, "%s%s (%s)", i ? ", " : "",
                             name, tdm__node_kind_name((tdm_node_kind)kind));
            if (w > 0)
                used += (size_t)w < n - used ? (size_t)w : n - used - 1;
        }
        tdm__free(name);
        tdm__free(sink);
    }
}

/* Reads source @p si's blobs of the restored checkpoint: the connector
 * sections of every old subtask concatenated, and each old subtask's
 * reader section (kept at si * old_P + k). */
static tdm_err load_source(tdm__run *run, int si, char *errbuf,
                           size_t errbuf_size)
{
    tdm__rt_ckpt *ck = &run->ck;
    tdm__enc merged;
    tdm__enc_init(&merged);
    tdm_err err = TDM_OK;
    for (int k = 0; k < ck->old_P; k++) {
        char name[64];
        void *p = NULL;
        size_t len = 0;
        tdm__rt_ckpt_src_name(si, k, name, sizeof name);
        err = tdm__ckpt_get(ck->rd, name, &p, &len);
        if (err != TDM_OK) {
            err = tdm__errf(
                errbuf, errbuf_size, err, "restoring checkpoint %llu: %s",
                (unsigned long long)ck->from, tdm__ckpt_reader_errmsg(ck->rd));
            goto fail;
        }
        tdm__dec d;
        uint64_t tag;
        tdm__dec body;
        tdm__dec_init(&d, p, len);
        if (len && tdm__dec_section(&d, &tag, &body) != TDM_OK) {
            tdm__free(p);
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                            "restoring checkpoint %llu: blob %s: offset "
                            "%zu: %s",
                            (unsigned long long)ck->from, name, d.err_off,
                            d.why ? d.why : "malformed");
            goto fail;
        }
        tdm__enc_raw(&merged, p, d.pos);
        if (len > d.pos) {
            size_t i = (size_t)si * (size_t)ck->old_P + (size_t)k;
            ck->src_rd[i] = tdm__malloc(len - d.pos);
            if (!ck->src_rd[i]) {
                tdm__free(p);
                err = TDM_ERR_NOMEM;
                goto fail;
            }
            memcpy(ck->src_rd[i], (uint8_t *)p + d.pos, len - d.pos);
            ck->src_rd_len[i] = len - d.pos;
        }
        tdm__free(p);
    }
    err = tdm__enc_finish(&merged, &ck->src_pos[si], &ck->src_pos_len[si]);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "out of memory");
    return TDM_OK;
fail:
    tdm__enc_free(&merged);
    if (err == TDM_ERR_NOMEM)
        return tdm__errf(errbuf, errbuf_size, err, "out of memory");
    return err;
}

/* Restores from checkpoint @p id in @p dir (tdm__rt_ckpt_open found it and
 * restoring is on): checks the job's shape and parallelism, loads the
 * lineage and every source's sections.  TDM_OK, or an error with its
 * message in @p errbuf. */
static tdm_err restore_from(tdm__run *run, uint64_t id, const char *dir,
                            char *errbuf, size_t errbuf_size)
{
    tdm__rt_ckpt *ck = &run->ck;
    tdm_job *job = run->job;
    uint8_t *meta = NULL;
    size_t meta_len = 0;
    tdm_err err;
    err = tdm__ckpt_reader_open(ck->st, id, &ck->rd);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "checkpoint.dir: %s",
                         tdm__ckpt_store_errmsg(ck->st));
    const tdm__ckpt_manifest *m = tdm__ckpt_reader_manifest(ck->rd);
    err = shape_meta(job, &meta, &meta_len);
    if (err != TDM_OK)
        goto fail;
    if (m->meta_len != meta_len || memcmp(m->meta, meta, meta_len) != 0) {
        char was[512];
        shape_text(m->meta, m->meta_len, was, sizeof was);
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                        "checkpoint %llu in %s is of another job shape "
                        "(its nodes: %s); the nodes, their kinds, names "
                        "and sinks must be unchanged to resume (start "
                        "from scratch with --from-scratch or "
                        "checkpoint.restore: none, or use another "
                        "checkpoint.dir)",
                        (unsigned long long)id, dir, was);
        goto done;
    }
    if (m->parallelism < 1 || m->parallelism > RT_CK_ROLE) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                        "checkpoint %llu in %s: parallelism %u out of "
                        "range",
                        (unsigned long long)id, dir, m->parallelism);
        goto done;
    }
    ck->old_P = (int)m->parallelism;
    ck->from = id;
    ck->restored = true;
    err = tdm__rt_lineage_load(run, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = tdm__live_ckpt_load(run, ck->rd, id, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto done;
    size_t n_rd = (size_t)run->n_srcs * (size_t)ck->old_P;
    ck->src_pos = tdm__calloc((size_t)run->n_srcs + 1, sizeof *ck->src_pos);
    ck->src_pos_len =
        tdm__calloc((size_t)run->n_srcs + 1, sizeof *ck->src_pos_len);
    ck->src_rd = tdm__calloc(n_rd + 1, sizeof *ck->src_rd);
    ck->src_rd_len = tdm__calloc(n_rd + 1, sizeof *ck->src_rd_len);
    if (!ck->src_pos || !ck->src_pos_len || !ck->src_rd || !ck->src_rd_len) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    for (int si = 0; si < run->n_srcs; si++) {
        err = load_source(run, si, errbuf, errbuf_size);
        if (err != TDM_OK)
            goto done;
    }
    atomic_store(&run->rec->stats[TDM_STAT_RESTORED_ID], (int64_t)id);
    tdm__job_log(job, "checkpoint: resuming from %s %llu in %s%s",
                 m->kind == TDM__CKPT_SAVEPOINT ? "savepoint" : "checkpoint",
                 (unsigned long long)id, dir,
                 ck->old_P != run->P ? " (at another parallelism)" : "");
    goto done;
fail:
    err = tdm__errf(errbuf, errbuf_size, err, "checkpoint.dir: %s",
                    tdm_strerror(err));
done:
    tdm__free(meta);
    return err;
}

/* See ckpt.h. */
tdm_err tdm__rt_ckpt_open(tdm__run *run, char *errbuf, size_t errbuf_size)
{
    tdm__rt_ckpt *ck = &run->ck;
    tdm_job *job = run->job;
    const char *dir = job->spec.checkpoint_dir;
    atomic_init(&ck->req, 0);
    atomic_init(&ck->committed, 0);
    if (!*dir)
        return TDM_OK;
    ck->on = true;
    ck->interval = job->spec.checkpoint_interval_ms;
    ck->next_ms = tdm__mono_ms() + ck->interval;
    char msg[512] = "";
    tdm_err err = tdm__ckpt_store_open(dir, TDM__CKPT_WRITE, store_log, run,
                                       &ck->st, msg, sizeof msg);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "checkpoint.dir: %s", msg);
    tdm__ckpt_store_set_retain(ck->st, (unsigned)job->spec.checkpoint_retain);
    uint64_t id = 0, top = 0;
    int found = 0;
    err = tdm__ckpt_latest(ck->st, &id, &found);
    if (err == TDM_OK)
        err = tdm__ckpt_highest(ck->st, &top);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "checkpoint.dir: %s",
                         tdm__ckpt_store_errmsg(ck->st));
    /* Ids go on above every checkpoint directory present, restored or
     * not, valid or damaged (a fresh start keeps the old checkpoints,
     * and a damaged newest one stays: new ones must not collide with
     * them - cli.checkpoint_damage found a restore past a damaged
     * checkpoint numbering its final checkpoint like the damaged one,
     * which then could never be written). */
    ck->last = top > id ? top : id;
    if (!found)
        return tdm__rt_lineage_begin(run, 0, errbuf, errbuf_size);
    if (job->spec.checkpoint_restore == TDM__CHECKPOINT_RESTORE_NONE) {
        tdm__job_log(job,
                     "checkpoint: starting from scratch (checkpoint "
                     "%llu in %s not restored)",
                     (unsigned long long)id, dir);
        return tdm__rt_lineage_begin(run, id, errbuf, errbuf_size);
    }
    return restore_from(run, id, dir, errbuf, errbuf_size);
}

/* The sink section of writer @p w in the restored checkpoint (NULL: none
 * or not restoring; *p to free). */
static tdm_err restored_section(tdm__run *run, int si, int w, void **p,
                                size_t *len, char *errbuf, size_t errbuf_size)
{
    tdm__rt_ckpt *ck = &run->ck;
    char name[64];
    *p = NULL;
    *len = 0;
    if (!ck->restored)
        return TDM_OK;
    sink_blob_name(si, w, name, sizeof name);
    tdm_err err = tdm__ckpt_get(ck->rd, name, p, len);
    if (err == TDM_ERR_STATE) { /* no such blob: this writer wrote none */
        *p = NULL;
        return TDM_OK;
    }
    if (err != TDM_OK)
        return tdm__errf(
            errbuf, errbuf_size, err, "restoring checkpoint %llu: %s",
            (unsigned long long)ck->from, tdm__ckpt_reader_errmsg(ck->rd));
    return TDM_OK;
}

/* Opens writer @p w of sink @p s and recovers it (its section, or from
 * scratch); *out NULL on error. */
static tdm_err open_writer(tdm__run *run, tdm__rt_sink *s, int si, int w,
                           tdm__sinkobj **out, char *errbuf, size_t errbuf_size)
{
    tdm__sink_conf conf = s->conf;
    void *p = NULL;
    size_t len = 0;
    char msg[256] = "";
    conf.exactly_once = true;
    conf.writer = w;
    conf.restored = run->ck.restored ? run->ck.from : 0;
    conf.job_name = s->conf.job_name ? s->conf.job_name : run->job->spec.name;
    *out = NULL;
    tdm_err err = restored_section(run, si, w, &p, &len, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    err = s->vt->open(&conf, s->mode, out, msg, sizeof msg);
    if (err != TDM_OK) {
        *out = NULL;
        tdm__free(p);
        return tdm__errf(
            errbuf, errbuf_size, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
            "sink \"%s\": %s", s->node->name, msg[0] ? msg : tdm_strerror(err));
    }
    tdm__dec d;
    tdm__dec_init(&d, p ? p : "", len);
    err = s->vt->recover(*out, p ? &d : NULL, msg, sizeof msg);
    tdm__free(p);
    if (err != TDM_OK) {
        s->vt->abandon(*out);
        *out = NULL;
        return tdm__errf(errbuf, errbuf_size, err, "sink \"%s\": %s",
                         s->node->name, msg[0] ? msg : tdm_strerror(err));
    }
    return TDM_OK;
}

tdm_err tdm__rt_ckpt_open_sink(tdm__run *run, tdm__rt_sink *s, int si,
                               char *errbuf, size_t errbuf_size)
{
    tdm__rt_ckpt *ck = &run->ck;
    if (s->vt->version < 3 || !s->vt->pre_commit)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "sink \"%s\": this connector cannot take part in "
                         "checkpoints",
                         s->node->name);
    size_t n = (size_t)s->n_roles * RT_CK_ROLE;
    s->wobj = tdm__calloc(n + 1, sizeof *s->wobj);
    if (!s->wobj)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
    tdm_err err = tdm__rt_lineage_sink_before(run, s, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    for (int r = 0; r < s->n_roles; r++) {
        for (int k = 0; k < run->P; k++) {
            int w = r * RT_CK_ROLE + k;
            err = open_writer(run, s, si, w, &s->wobj[w], errbuf, errbuf_size);
            if (err != TDM_OK)
                return err;
        }
        /* Writers of the checkpoint beyond today's parallelism: commit
         * what they had pending, drop their in-progress rows (replayed
         * by the subtasks that now read their partitions). */
        for (int k = run->P; ck->restored && k < ck->old_P; k++) {
            tdm__sinkobj *o = NULL;
            err = open_writer(run, s, si, r * RT_CK_ROLE + k, &o, errbuf,
                              errbuf_size);
            if (err != TDM_OK)
                return err;
            s->vt->abandon(o);
        }
    }
    return tdm__rt_lineage_sink_after(run, s, errbuf, errbuf_size);
}

/* Which old split goes where at another parallelism: old subtask @p k
 * of @p old_P dealt its partitions as every connector does (local split
 * i is partition k + i * old_P; partitions named by a field are all
 * subtask 0's, split i being partition i). */
typedef struct split_map {
    const tdm__rt_src_task *t;
    int k, old_P;
} split_map;

/* The local split of the new subtask that reads old split @p i, or -1
 * when another subtask reads it (or no longer anyone: a file gone from
 * the glob, which the connector's restore judges).  Version-2
 * connectors (Kafka with checkpoints: a static assignment by the same
 * rule) assign their partitions at the first poll, after the restore:
 * the reader makes the splits ahead of them. */
static int map_split(void *ud, int i)
{
    const split_map *m = ud;
    const tdm__rt_src_task *t = m->t;
    if (t->src->conf.partition_field >= 0)
        return t->index == 0 ? i : -1;
    int64_t g = (int64_t)m->k + (int64_t)i * m->old_P;
    int64_t P = t->run->P;
    if (g % P != t->index)
        return -1;
    int64_t l = g / P;
    if (l < t->n_parts ? tdm__src_metrics_part_global(t, l) != g : !t->src->v2)
        return -1;
    return (int)l;
}

/* A reader section's error, for the run's message. */
static tdm_err reader_fail(const tdm__rt_src_task *t, tdm_err err,
                           const tdm__dec *d, int k, char *msg, size_t n)
{
    size_t off = 0;
    const char *why = NULL;
    tdm__dec_error(d, &off, &why);
    return tdm__errf(msg, n, err,
                     "checkpoint %llu: reader of subtask "
                     "%d: offset %zu: %s",
                     (unsigned long long)t->run->ck.from, k, off,
                     why ? why : tdm_strerror(err));
}

/* Restores source subtask @p t: the connector's positions from every
 * old subtask's section, then the watermark layer.  At the same
 * parallelism the subtask's reader is restored whole; at another one
 * every old reader's splits go to the subtasks that now read their
 * partitions and what belonged to a reader as a whole is merged
 * (tdm__reader_restore_splits / _finish; docs/checkpoints.md).  The
 * subtask's last sent watermark and status follow the restored reader;
 * at another parallelism the subtask announces them when it starts
 * (task_source.c). */
tdm_err tdm__rt_ckpt_restore_source(tdm__rt_src_task *t, char *msg, size_t n)
{
    tdm__run *run = t->run;
    tdm__rt_ckpt *ck = &run->ck;
    if (!ck->restored)
        return TDM_OK;
    int si = (int)(t->src - run->srcs);
    const tdm__source_vtab *vt = t->src->vt;
    if (vt->version < 3 || !vt->restore)
        return tdm__errf(msg, n, TDM_ERR_UNSUPPORTED,
                         "this connector cannot restore a checkpoint");
    tdm__dec d;
    tdm__dec_init(&d, ck->src_pos[si] ? (const void *)ck->src_pos[si] : "",
                  ck->src_pos_len[si]);
    tdm_err err = vt->restore(t->conn, &d, msg, n);
    if (err != TDM_OK)
        return err;
    size_t base = (size_t)si * (size_t)ck->old_P;
    if (ck->old_P == run->P) {
        size_t i = base + (size_t)t->index;
        if (!ck->src_rd[i])
            return TDM_OK; /* the reader starts afresh */
        tdm__dec_init(&d, ck->src_rd[i], ck->src_rd_len[i]);
        err = tdm__reader_restore(t->reader, &d);
        if (err != TDM_OK)
            return reader_fail(t, err, &d, t->index, msg, n);
    } else {
        for (int k = 0; k < ck->old_P; k++) {
            size_t i = base + (size_t)k;
            if (!ck->src_rd[i])
                continue;
            split_map m = {.t = t, .k = k, .old_P = ck->old_P};
            tdm__dec_init(&d, ck->src_rd[i], ck->src_rd_len[i]);
            err = tdm__reader_restore_splits(t->reader, &d, map_split, &m);
            if (err != TDM_OK)
                return reader_fail(t, err, &d, k, msg, n);
        }
        err = tdm__reader_restore_finish(t->reader);
        if (err != TDM_OK)
            return tdm__errf(msg, n, err, "%s", tdm_strerror(err));
    }
    /* The last watermark the subtask sent: two-phase aggregation routes
     * records of slices at or below it raw (a late record must stay a
     * raw record after the restore). */
    t->wm_out = tdm_reader_watermark(t->reader);
    t->idle = tdm__reader_output_idle(t->reader);
    tdm__src_v2_reader_status(t, t->idle);
    tdm__src_align_restored(t, tdm_reader_is_paused(t->reader) == 1);
    return TDM_OK;
}

void tdm__rt_ckpt_slot_free(tdm__rt_ck_slot *c)
{
    tdm__free(c->blob);
    tdm__free(c->fin);
    tdm__free(c->sk[0]);
    tdm__free(c->sk[1]);
    c->blob = c->fin = c->sk[0] = c->sk[1] = NULL;
}

void tdm__rt_ckpt_ack(tdm__run *run, tdm__rt_ck_slot *c, uint64_t id,
                      uint8_t *blob, size_t len, bool final)
{
    pthread_mutex_lock(&run->mu);
    if (final) {
        tdm__free(c->fin);
        c->fin = blob;
        c->fin_len = len;
        c->ended = true;
    } else {
        tdm__free(c->blob);
        c->blob = blob;
        c->len = len;
        c->acked = id;
    }
    run->ck.wake = true;
    pthread_cond_broadcast(&run->cv);
    pthread_mutex_unlock(&run->mu);
}

bool tdm__rt_ckpt_pre_commit(tdm__run *run, tdm__rt_ck_slot *c, uint64_t id)
{
    for (int j = 0; j < 2; j++) {
        tdm__free(c->sk[j]);
        c->sk[j] = NULL;
        c->sk_len[j] = 0;
        if (!c->obj[j])
            continue;
        tdm__rt_sink *s = c->sink[j];
        tdm__enc e;
        char msg[256] = "";
        tdm__enc_init(&e);
        tdm_err err = s->vt->pre_commit(c->obj[j], id, &e, msg, sizeof msg);
        if (err == TDM_OK)
            err = tdm__enc_finish(&e, &c->sk[j], &c->sk_len[j]);
        else
            tdm__enc_free(&e);
        if (err != TDM_OK) {
            tdm__rt_fail(
                run, err == TDM_ERR_NOMEM ? err : TDM_ERR_IO,
                "sink \"%s\": pre-commit of checkpoint %llu failed: %s",
                s->node->name, (unsigned long long)id,
                msg[0] ? msg : tdm_strerror(err));
            return false;
        }
    }
    return true;
}

void tdm__rt_ckpt_commit(tdm__run *run, tdm__rt_ck_slot *c, uint64_t id)
{
    for (int j = 0; j < 2; j++) {
        char msg[256] = "";
        if (c->obj[j] &&
            c->sink[j]->vt->commit(c->obj[j], id, msg, sizeof msg) != TDM_OK)
            tdm__job_log(run->job,
                         "sink %s: commit of checkpoint %llu "
                         "failed (%s); retried at the next "
                         "checkpoint",
                         c->sink[j]->node->name, (unsigned long long)id, msg);
    }
    c->committed = id;
}

/* Every subtask's slot in a fixed order (sources, then operators), with
 * its blob name. */
static int n_slots(const tdm__run *run)
{
    return (run->n_srcs + run->n_ops) * run->P;
}

static tdm__rt_ck_slot *slot_at(tdm__run *run, int i, char *name, size_t n)
{
    int P = run->P, s = i / P, k = i % P;
    if (s < run->n_srcs) {
        if (name)
            tdm__rt_ckpt_src_name(s, k, name, n);
        tdm__rt_src_task *ts = tdm__rt_src_tasks(run, s);
        return ts ? &ts[k].ck : NULL;
    }
    s -= run->n_srcs;
    if (name)
        snprintf(name, n, "o%d-%d", s, k);
    tdm__rt_op_task *ts = tdm__rt_op_tasks(run, s);
    return ts ? &ts[k].ck : NULL;
}

/* What one subtask contributes to the checkpoint being written. */
typedef struct ck_part {
    uint8_t *blob;
    size_t len;
    uint8_t *sk[2];
    size_t sk_len[2];
    bool ended_late; /* ended before the barrier: sinks pre-committed here */
} ck_part;

static void start(tdm__run *run, int kind)
{
    tdm__rt_ckpt *ck = &run->ck;
    ck->pending = ++ck->last;
    tdm__rt_lineage_started(run, ck->pending);
    ck->pending_kind = kind;
    ck->started_us = tdm__mono_us();
    atomic_store_explicit(&ck->req, ck->pending, memory_order_release);
}

/* Whether every subtask acknowledged the pending checkpoint or ended
 * (run->mu held). */
static bool all_acked(tdm__run *run)
{
    for (int i = 0; i < n_slots(run); i++) {
        const tdm__rt_ck_slot *c = slot_at(run, i, NULL, 0);
        if (c && c->acked != run->ck.pending && !c->ended)
            return false;
    }
    return true;
}

/* Commits the sink objects of the subtasks that ended (the run thread
 * owns them now); all of them with @p every. */
static void commit_ended(tdm__run *run, uint64_t id, bool every)
{
    for (int i = 0; i < n_slots(run); i++) {
        tdm__rt_ck_slot *c = slot_at(run, i, NULL, 0);
        if (!c)
            continue;
        pthread_mutex_lock(&run->mu);
        bool ended = c->ended;
        pthread_mutex_unlock(&run->mu);
        if (ended || every)
            tdm__rt_ckpt_commit(run, c, id);
    }
}

/* Takes the parts of checkpoint @p id (under run->mu): the acknowledged
 * ones move into @p parts; a subtask that ended before the barrier gives
 * a copy of its final state.  The largest alignment goes to
 * @p align_us.  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err take_parts(tdm__run *run, uint64_t id, ck_part *parts,
                          int n_parts, int64_t *align_us)
{
    tdm_err err = TDM_OK;
    pthread_mutex_lock(&run->mu);
    for (int i = 0; i < n_parts; i++) {
        tdm__rt_ck_slot *c = slot_at(run, i, NULL, 0);
        ck_part *pt = &parts[i];
        if (c->acked == id) {
            pt->blob = c->blob;
            pt->len = c->len;
            c->blob = NULL;
            for (int j = 0; j < 2; j++) {
                pt->sk[j] = c->sk[j];
                pt->sk_len[j] = c->sk_len[j];
                c->sk[j] = NULL;
            }
            if (c->align_us > *align_us)
                *align_us = c->align_us;
        } else {
            pt->ended_late = true;
            pt->len = c->fin_len;
            pt->blob = tdm__malloc(pt->len + 1);
            if (pt->blob && pt->len)
                memcpy(pt->blob, c->fin, pt->len);
            if (!pt->blob)
                err = TDM_ERR_NOMEM;
        }
    }
    pthread_mutex_unlock(&run->mu);
    return err;
}

/* The sinks of the subtasks that ended before the barrier pre-commit
 * here (their threads no longer use them).  TDM_OK, or TDM_ERR_IO when
 * that failed (the run failed). */
static tdm_err pre_commit_ended(tdm__run *run, uint64_t id, ck_part *parts,
                                int n_parts)
{
    for (int i = 0; i < n_parts; i++) {
        tdm__rt_ck_slot *c = slot_at(run, i, NULL, 0);
        if (!parts[i].ended_late)
            continue;
        if (!tdm__rt_ckpt_pre_commit(run, c, id))
            return TDM_ERR_IO;
        for (int j = 0; j < 2; j++) {
            parts[i].sk[j] = c->sk[j];
            parts[i].sk_len[j] = c->sk_len[j];
            c->sk[j] = NULL;
        }
    }
    return TDM_OK;
}

/* Writes checkpoint @p id: the manifest (@p meta), the lineage, every
 * part and its sink sections, then commits it in the store; the bytes
 * written go to @p bytes.  TDM_OK or the store's error (its message in
 * tdm__ckpt_store_errmsg). */
static tdm_err write_parts(tdm__run *run, uint64_t id, const uint8_t *meta,
                           size_t meta_len, const ck_part *parts, int n_parts,
                           uint64_t *bytes)
{
    tdm__rt_ckpt *ck = &run->ck;
    tdm__ckpt_info info = {
        .id = id,
        .kind = (tdm__ckpt_kind)ck->pending_kind,
        .job = run->job->spec.name,
        .created_ms = (int64_t)time(NULL) * 1000,
        .parallelism = (uint32_t)run->P,
        .key_groups = (uint32_t)run->key_groups,
        .meta = meta,
        .meta_len = meta_len,
    };
    tdm_err err = tdm__ckpt_begin(ck->st, &info);
    if (err == TDM_OK)
        err = tdm__rt_lineage_put(run);
    if (err == TDM_OK)
        err = tdm__live_ckpt_put(run, ck->st);
    for (int i = 0; err == TDM_OK && i < n_parts; i++) {
        char name[64];
        tdm__rt_ck_slot *c = slot_at(run, i, name, sizeof name);
        const ck_part *pt = &parts[i];
        err = tdm__ckpt_put(ck->st, name, pt->blob ? pt->blob : (uint8_t *)"",
                            pt->len);
        *bytes += pt->len;
        for (int j = 0; err == TDM_OK && j < 2; j++) {
            if (!c->obj[j])
                continue;
            sink_blob_name((int)(c->sink[j] - run->sinks), c->w[j], name,
                           sizeof name);
            err = tdm__ckpt_put(ck->st, name,
                                pt->sk[j] ? pt->sk[j] : (uint8_t *)"",
                                pt->sk_len[j]);
            *bytes += pt->sk_len[j];
        }
    }
    if (err == TDM_OK)
        err = tdm__ckpt_commit(ck->st);
    return err;
}

/* Counts and logs checkpoint @p id as completed. */
static void report_completed(tdm__run *run, uint64_t id, uint64_t bytes,
                             int64_t align_us)
{
    tdm__rt_ckpt *ck = &run->ck;
    tdm_job *job = run->job;
    int64_t took = (tdm__mono_us() - ck->started_us) / 1000;
    atomic_fetch_add(&run->rec->stats[TDM_STAT_CHECKPOINTS], 1);
    atomic_store(&run->rec->stats[TDM_STAT_CHECKPOINT_ID], (int64_t)id);
    atomic_store(&run->rec->stats[TDM_STAT_CHECKPOINT_MS], took);
    atomic_store(&run->rec->stats[TDM_STAT_CHECKPOINT_BYTES], (int64_t)bytes);
    atomic_store(&run->rec->stats[TDM_STAT_CHECKPOINT_ALIGN_MS],
                 align_us / 1000);
    if (ck->pending_kind == TDM__CKPT_SAVEPOINT)
        tdm__job_log(job, "savepoint %llu written to %s",
                     (unsigned long long)id, job->spec.checkpoint_dir);
    else
        tdm__job_log(job,
                     "checkpoint %llu completed: %llu bytes, %lld ms, "
                     "alignment %lld ms",
                     (unsigned long long)id, (unsigned long long)bytes,
                     (long long)took, (long long)(align_us / 1000));
}

/* A task's job (task.epoch set by the task host) checks that no other
 * process took the task over before a checkpoint becomes durable; a
 * takeover fails the run for good (TDM_ERR_STATE is not restarted):
 * nothing since the last durable checkpoint becomes visible.  Owner
 * files that cannot be read fail the run the same way. */
static bool still_owner(tdm__run *run)
{
    const tdm_job *job = run->job;
    char msg[600];
    if (job->changelog)
        return true; /* the changelog's own check (publish, below) */
    tdm_err err =
        tdm__task_owner_check(job->spec.checkpoint_dir, job->spec.task_id,
                              job->spec.task_epoch, msg, sizeof msg);
    if (err == TDM_OK)
        return true;
    tdm__rt_fail(run, TDM_ERR_STATE, "%s", msg);
    return false;
}

/* A task's job with checkpoint.store: changelog copies checkpoint @p id
 * into its partition of the changelog topic before it counts as
 * durable (task_changelog.c).  False when it did not get there: @p why
 * says why, or is empty when the task was taken over (the run failed
 * for good, as in still_owner). */
static bool published(tdm__run *run, uint64_t id, char *why, size_t n)
{
    tdm_job *job = run->job;
    char msg[520];
    why[0] = '\0';
    if (!job->changelog)
        return true;
    tdm_err err =
        tdm__tclog_publish(job->changelog, run->ck.st, job->spec.checkpoint_dir,
                           id, msg, sizeof msg);
    if (err == TDM_OK)
        return true;
    if (err == TDM_ERR_STATE)
        tdm__rt_fail(run, TDM_ERR_STATE, "%s", msg);
    else
        snprintf(why, n, "%s", msg);
    return false;
}

/* Writes the pending checkpoint (every part collected) and, once it is
 * durable, publishes it for the sinks' commits. */
static void complete(tdm__run *run)
{
    tdm__rt_ckpt *ck = &run->ck;
    uint64_t id = ck->pending;
    int n_parts = n_slots(run);
    ck_part *parts = tdm__calloc((size_t)n_parts + 1, sizeof *parts);
    uint8_t *meta = NULL;
    size_t meta_len = 0;
    int64_t align_us = 0;
    uint64_t bytes = 0;
    tdm_err err =
        parts ? shape_meta(run->job, &meta, &meta_len) : TDM_ERR_NOMEM;
    const char *why = NULL;
    char whybuf[600] = "";
    if (err == TDM_OK)
        err = take_parts(run, id, parts, n_parts, &align_us);
    if (err == TDM_OK)
        err = pre_commit_ended(run, id, parts, n_parts);
    if (err != TDM_OK)
        goto fail;
    if (!still_owner(run))
        goto fenced;
    err = write_parts(run, id, meta, meta_len, parts, n_parts, &bytes);
    if (err != TDM_OK) {
        why = tdm__ckpt_store_errmsg(ck->st);
        goto fail;
    }
    if (!published(run, id, whybuf, sizeof whybuf)) {
        why = whybuf[0] ? whybuf : NULL;
        if (!why)
            goto fenced;
        goto fail;
    }
    report_completed(run, id, bytes, align_us);
    /* Durable: the writers may make its transactions visible, once the
     * output a fresh start replaces is out of the way. */
    if (!tdm__rt_lineage_durable(run))
        goto done;
    atomic_store_explicit(&ck->committed, id, memory_order_release);
    commit_ended(run, id, false);
    goto done;
fail:
    if (!why) {
        snprintf(whybuf, sizeof whybuf, "%s", tdm_strerror(err));
        why = whybuf;
    }
done:
    /* Tolerated, or the run fails (restart.c). */
    tdm__rt_ckpt_outcome(run, id, why);
fenced:
    for (int i = 0; parts && i < n_parts; i++) {
        tdm__free(parts[i].blob);
        tdm__free(parts[i].sk[0]);
        tdm__free(parts[i].sk[1]);
    }
    tdm__free(parts);
    tdm__free(meta);
    ck->pending = 0;
    ck->next_ms = tdm__mono_ms() + ck->interval;
}

void tdm__rt_ckpt_step(tdm__run *run, bool at_end)
{
    tdm__rt_ckpt *ck = &run->ck;
    if (!ck->on || atomic_load(&run->abort))
        return;
    if (!ck->pending) {
        if (at_end)
            return;
        if (atomic_exchange(&run->rec->savepoint, 0))
            start(run, TDM__CKPT_SAVEPOINT);
        else if (tdm__mono_ms() >= ck->next_ms)
            start(run, TDM__CKPT_CHECKPOINT);
        else
            return;
    }
    pthread_mutex_lock(&run->mu);
    run->ck.wake = false;
    bool ready = all_acked(run);
    pthread_mutex_unlock(&run->mu);
    if (ready)
        complete(run);
}

void tdm__rt_ckpt_final(tdm__run *run)
{
    tdm__rt_ckpt *ck = &run->ck;
    if (!ck->on || atomic_load(&run->abort) || run->err != TDM_OK)
        return;
    /* A cancel with on_cancel: drain fired windows early: a final
     * checkpoint would commit those results and a resumed run could not
     * reproduce the uninterrupted output; they stay uncommitted (the
     * next run's recover removes them). */
    if (atomic_load(&run->rec->cancel) && !run->stop_on_cancel &&
        run->n_ops > 0) {
        tdm__job_log(run->job,
                     "checkpoint: cancelled with on_cancel: "
                     "drain; the drained results are not "
                     "committed (the next run resumes from "
                     "checkpoint %llu)",
                     (unsigned long long)atomic_load(&ck->committed));
        ck->abandon = true;
        return;
    }
    /* A checkpoint in flight completes first (every subtask ended). */
    if (ck->pending)
        tdm__rt_ckpt_step(run, true);
    if (run->err != TDM_OK)
        return; /* it failed, and failed the run (restart.c) */
    pthread_mutex_lock(&run->mu);
    bool all = true;
    for (int i = 0; i < n_slots(run); i++) {
        const tdm__rt_ck_slot *c = slot_at(run, i, NULL, 0);
        all = all && c && c->ended;
    }
    pthread_mutex_unlock(&run->mu);
    if (!all)
        return;
    start(run, atomic_exchange(&run->rec->savepoint, 0) ? TDM__CKPT_SAVEPOINT
                                                        : TDM__CKPT_CHECKPOINT);
    complete(run);
    uint64_t c = atomic_load(&ck->committed);
    if (c)
        commit_ended(run, c, true);
}

void tdm__rt_ckpt_close(tdm__run *run)
{
    tdm__rt_ckpt *ck = &run->ck;
    tdm__ckpt_reader_close(ck->rd);
    ck->rd = NULL;
    tdm__ckpt_store_close(ck->st);
    ck->st = NULL;
    for (int si = 0; ck->src_pos && si < run->n_srcs; si++)
        tdm__free(ck->src_pos[si]);
    for (size_t i = 0; ck->src_rd && i < (size_t)run->n_srcs * ck->old_P; i++)
        tdm__free(ck->src_rd[i]);
    tdm__free(ck->src_pos);
    tdm__free(ck->src_pos_len);
    tdm__free(ck->src_rd);
    tdm__free(ck->src_rd_len);
    ck->src_pos = NULL;
    ck->src_rd = NULL;
}
