/* SPDX-License-Identifier: MIT */
/* ckpt_lineage.c - a fresh start and the output it replaces.
 *
 * A run with checkpoints either resumes from a checkpoint or starts
 * fresh (--from-scratch, checkpoint.restore: none, an empty checkpoint
 * folder).  The runs from one fresh start through every restore after it
 * form a lineage; its output replaces the output of the lineages before
 * it.  Committed output is never deleted (docs/checkpoints.md, "Fresh
 * starts"), and a fresh start is atomic:
 *
 *  L1  Until the fresh run's first checkpoint is durable, nothing of the
 *      old output changes (the sinks' recover on a fresh start removes
 *      only an in-progress part), so a fresh run killed before it leaves
 *      the old lineage's newest checkpoint able to resume, its pending
 *      parts in place.
 *  L2  Once that checkpoint is durable, and before any sink commits,
 *      every sink's supersede() moves the output of checkpoints below the
 *      lineage's first id out of the way (file sinks: into
 *      "base.replaced-<first>/").  A failure there fails the run, and no
 *      new output is visible beside the old.
 *  L3  Every checkpoint carries the lineage (blob "lineage": its first
 *      id and the newest checkpoint that was durable when it began), and
 *      every restore runs supersede() again before the sinks recover: a
 *      crash between L2's durable checkpoint and the end of the move is
 *      finished there (the move is idempotent).
 *      A fresh start finishes the move of the lineage it replaces first
 *      (that lineage's newest checkpoint may be durable with its move
 *      cut short), so that each "replaced" folder holds one whole
 *      lineage's output.
 *  L4  The lineage's ids start above every id the sinks' output names
 *      (top()), so a new part never takes an old part's name, even when
 *      the checkpoint folder was emptied by hand.
 *
 * The old lineage's pending parts of checkpoints up to the newest durable
 * one hold committed rows (a crash came between the checkpoint and the
 * rename): supersede() moves them aside under their visible names.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/ckpt.h"
#include "state/ckpt_codec.h"
#include "state/ckpt_store.h"

#define LINEAGE_BLOB "lineage"
#define LINEAGE_VERSION 1

/* Reads the lineage of checkpoint @p id (reader @p rd) into @p first
 * and @p committed (0, 0: taken before lineages). */
static tdm_err load(struct tdm__ckpt_reader *rd, uint64_t id, uint64_t *first,
                    uint64_t *committed, char *errbuf, size_t errbuf_size)
{
    void *p = NULL;
    size_t len = 0, off = 0;
    uint64_t ver = 0;
    const char *why = NULL;
    tdm__dec d;

    *first = *committed = 0;
    tdm_err err = tdm__ckpt_get(rd, LINEAGE_BLOB, &p, &len);
    if (err == TDM_ERR_STATE) /* no such blob */
        return TDM_OK;
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "checkpoint %llu: %s",
                         (unsigned long long)id, tdm__ckpt_reader_errmsg(rd));
    tdm__dec_init(&d, p, len);
    if (tdm__dec_uvar(&d, &ver) == TDM_OK && ver != LINEAGE_VERSION)
        (void)tdm__dec_fail(&d, "unknown version");
    (void)tdm__dec_uvar(&d, first);
    (void)tdm__dec_uvar(&d, committed);
    if (d.err == TDM_OK && *first > id)
        (void)tdm__dec_fail(&d, "first checkpoint after the checkpoint");
    tdm__free(p);
    if (tdm__dec_error(&d, &off, &why) == TDM_OK)
        return TDM_OK;
    *first = *committed = 0;
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                     "checkpoint %llu: blob %s: %s at offset %zu",
                     (unsigned long long)id, LINEAGE_BLOB, why, off);
}

tdm_err tdm__rt_lineage_begin(tdm__run *run, uint64_t newest, char *errbuf,
                              size_t errbuf_size)
{
    tdm__rt_ckpt *ck = &run->ck;
    struct tdm__ckpt_reader *rd = NULL;
    ck->line_first = 0; /* the first checkpoint started (L2) */
    ck->line_committed = newest;
    ck->line_done = false;
    ck->old_first = ck->old_committed = 0;
    if (newest == 0)
        return TDM_OK;
    tdm_err err = tdm__ckpt_reader_open(ck->st, newest, &rd);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "checkpoint.dir: %s",
                         tdm__ckpt_store_errmsg(ck->st));
    err = load(rd, newest, &ck->old_first, &ck->old_committed, errbuf,
               errbuf_size);
    tdm__ckpt_reader_close(rd);
    return err;
}

tdm_err tdm__rt_lineage_load(tdm__run *run, char *errbuf, size_t errbuf_size)
{
    tdm__rt_ckpt *ck = &run->ck;
    ck->line_done = true;
    ck->old_first = ck->old_committed = 0;
    return load(ck->rd, ck->from, &ck->line_first, &ck->line_committed, errbuf,
                errbuf_size);
}

void tdm__rt_lineage_started(tdm__run *run, uint64_t id)
{
    if (!run->ck.line_done && run->ck.line_first == 0)
        run->ck.line_first = id;
}

tdm_err tdm__rt_lineage_put(tdm__run *run)
{
    tdm__rt_ckpt *ck = &run->ck;
    tdm__enc e;
    uint8_t *p = NULL;
    size_t len = 0;

    tdm__enc_init(&e);
    tdm__enc_uvar(&e, LINEAGE_VERSION);
    tdm__enc_uvar(&e, ck->line_first);
    tdm__enc_uvar(&e, ck->line_committed);
    tdm_err err = tdm__enc_finish(&e, &p, &len);
    if (err == TDM_OK)
        err = tdm__ckpt_put(ck->st, LINEAGE_BLOB, p, len);
    tdm__free(p);
    return err;
}

/* supersede() of one sink for the lineage that began at @p first (L2,
 * L3); the message names the sink. */
static tdm_err supersede(tdm__run *run, const tdm__rt_sink *s, uint64_t first,
                         uint64_t committed, char *errbuf, size_t errbuf_size)
{
    size_t moved = 0;
    char msg[512] = "";

    if (s->vt->version < 4 || !s->vt->supersede || first == 0)
        return TDM_OK;
    tdm_err err =
        s->vt->supersede(&s->conf, first, committed, &moved, msg, sizeof msg);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "sink \"%s\": moving the output replaced by the "
                         "fresh start aside failed: %s",
                         s->node->name, msg[0] ? msg : tdm_strerror(err));
    if (moved > 0)
        tdm__job_log(run->job,
                     "sink \"%s\": a fresh start replaced the "
                     "output of checkpoints before %llu: %zu "
                     "parts moved aside (%s.replaced-%010llu)",
                     s->node->name, (unsigned long long)first, moved,
                     s->conf.path ? s->conf.path : "",
                     (unsigned long long)first);
    return TDM_OK;
}

tdm_err tdm__rt_lineage_sink_before(tdm__run *run, const tdm__rt_sink *s,
                                    char *errbuf, size_t errbuf_size)
{
    const tdm__rt_ckpt *ck = &run->ck;
    if (ck->restored)
        return supersede(run, s, ck->line_first, ck->line_committed, errbuf,
                         errbuf_size);
    return supersede(run, s, ck->old_first, ck->old_committed, errbuf,
                     errbuf_size);
}

tdm_err tdm__rt_lineage_sink_after(tdm__run *run, const tdm__rt_sink *s,
                                   char *errbuf, size_t errbuf_size)
{
    tdm__rt_ckpt *ck = &run->ck;
    uint64_t top = 0;
    char msg[512] = "";

    if (s->vt->version < 4 || !s->vt->top)
        return TDM_OK;
    tdm_err err = s->vt->top(&s->conf, &top, msg, sizeof msg);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "sink \"%s\": %s",
                         s->node->name, msg[0] ? msg : tdm_strerror(err));
    if (top > ck->last) /* L4 */
        ck->last = top;
    return TDM_OK;
}

bool tdm__rt_lineage_durable(tdm__run *run)
{
    tdm__rt_ckpt *ck = &run->ck;
    char msg[768] = "";

    if (ck->line_done)
        return true;
    for (int i = 0; i < run->n_sinks; i++) {
        const tdm__rt_sink *s = &run->sinks[i];
        if (s->used && supersede(run, s, ck->line_first, ck->line_committed,
                                 msg, sizeof msg) != TDM_OK) {
            tdm__rt_fail(run, TDM_ERR_IO,
                         "%s (checkpoint %llu is durable: the "
                         "next run finishes the move)",
                         msg, (unsigned long long)ck->line_first);
            return false;
        }
    }
    ck->line_done = true;
    return true;
}
