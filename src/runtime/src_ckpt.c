/* SPDX-License-Identifier: MIT */
/* src_ckpt.c - a source subtask's part in checkpoints
 * (docs/checkpoints.md, "In the runtime"): between polls it commits what
 * the coordinator published and answers barriers (rows and partials
 * out, positions and reader snapshotted, its sinks pre-committed, the
 * barrier on every channel); at the end of input it hands over its final
 * state; restored at another parallelism it re-announces its watermark.
 *
 * State: t->ck (its sink objects and acknowledgements).
 * Hooks: between_polls (tdm__src_ckpt_poll), on_end (tdm__src_ckpt_end),
 * on_open (tdm__src_ckpt_announce_restored).
 */

#include "runtime/task_source.h"
#include "runtime/src_ckpt.h"
#include "runtime/ckpt.h"
#include "runtime/localagg.h"
#include "runtime/outbox.h"
#include "state/ckpt_codec.h"
#include "time/wm.h"

/* Encodes the connector's positions and the reader's state, which
 * describe the same rows: called between polls, after the last poll's
 * rows went to the reader and downstream.  *out NULL on failure (the
 * run failed). */
static bool src_snapshot(tdm__rt_src_task *t, uint8_t **out, size_t *len)
{
    const tdm__source_vtab *vt = t->src->vt;
    char msg[256] = "";
    tdm__enc e;
    tdm__enc_init(&e);
    *out = NULL;
    *len = 0;
    tdm_err err = vt->version >= 3 && vt->snapshot && t->conn
                      ? vt->snapshot(t->conn, &e, msg, sizeof msg)
                      : TDM_ERR_UNSUPPORTED;
    if (err == TDM_OK)
        err = tdm__reader_snapshot(t->reader, &e);
    if (err == TDM_OK)
        err = tdm__enc_finish(&e, out, len);
    else
        tdm__enc_free(&e);
    if (err != TDM_OK) {
        tdm__rt_fail(t->run, err,
                     "source \"%s\" subtask %d: checkpoint "
                     "snapshot failed: %s",
                     t->src->node->name, t->index,
                     msg[0] ? msg : tdm_strerror(err));
        return false;
    }
    return true;
}

/* Tells a version-4 connector about checkpoint @p id (connect.h,
 * checkpoint): its barrier arrived (@p complete 0) or it is durable. */
static void src_ckpt_notify(tdm__rt_src_task *t, uint64_t id, int complete)
{
    const tdm__source_vtab *vt = t->src->vt;
    if (vt->version >= 4 && vt->checkpoint && t->conn)
        vt->checkpoint(t->conn, id, complete);
}

/* Barrier @p id at this source subtask: everything before it leaves
 * (pending rows, two-phase partials of every open slice, so no partial
 * state stays in the source), the positions and the reader are
 * snapshotted, this subtask's sinks pre-commit, then BARRIER goes out
 * on every channel and the coordinator gets the acknowledgement. */
static void src_barrier(tdm__rt_src_task *t, uint64_t id)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    tdm__outbox_flush_rows(t);
    for (int e = 0; t->la.any && e < t->src->n_edges; e++)
        if (t->la.e[e])
            tdm__rt_lagg_flush(t, t->la.e[e], TDM_TIME_MAX);
    src_ckpt_notify(t, id, 0);
    if (!src_snapshot(t, &blob, &len))
        return;
    if (!tdm__rt_ckpt_pre_commit(t->run, &t->ck, id)) {
        tdm__free(blob);
        return;
    }
    /* A subtask that never reads sent its END before the threads
     * started (run.c): its channels have ended, which consumers count
     * as aligned.  A barrier after the END would block such a channel
     * again, and the consumer would take the checkpoint a second time
     * when its last channel ends (with everything written since in the
     * first epoch: output duplicated after a restore). */
    if (!t->empty)
        tdm__outbox_push_control(t, TDM__ITEM_BARRIER, (tdm_time_ms)id, 0, 0);
    tdm__rt_ckpt_ack(t->run, &t->ck, id, blob, len, false);
}

/* Between polls: a commit the coordinator published (every call on a
 * writer's object from its thread, the sink contract), a barrier it
 * requested. */
void tdm__src_ckpt_poll(tdm__rt_src_task *t)
{
    tdm__rt_ckpt *ck = &t->run->ck;
    uint64_t c = atomic_load_explicit(&ck->committed, memory_order_acquire);
    if (c > t->ck.committed) {
        tdm__rt_ckpt_commit(t->run, &t->ck, c);
        src_ckpt_notify(t, c, 1);
    }
    uint64_t req = atomic_load_explicit(&ck->req, memory_order_acquire);
    if (req > t->ck.acked)
        src_barrier(t, req);
}

/* At the end of the subtask's input (not after a failure): answers the
 * barriers still asked for, then hands the coordinator its final state;
 * from then on the coordinator pre-commits and commits this subtask's
 * sink objects itself (the final checkpoint). */
void tdm__src_ckpt_end(tdm__rt_src_task *t)
{
    tdm__run *run = t->run;
    uint8_t *fin = NULL;
    size_t len = 0;
    if (!run->ck.on || atomic_load(&run->abort))
        return;
    if (!src_snapshot(t, &fin, &len))
        return;
    for (;;) {
        tdm__src_ckpt_poll(t);
        if (atomic_load(&run->abort))
            break;
        /* Under the lock: the coordinator checks "acked or ended" under
         * it, so no request can fall between the check and the end. */
        pthread_mutex_lock(&run->mu);
        if (atomic_load_explicit(&run->ck.req, memory_order_acquire) >
            t->ck.acked) {
            pthread_mutex_unlock(&run->mu);
            continue;
        }
        tdm__free(t->ck.fin);
        t->ck.fin = fin;
        t->ck.fin_len = len;
        t->ck.ended = true;
        run->ck.wake = true;
        pthread_cond_broadcast(&run->cv);
        pthread_mutex_unlock(&run->mu);
        return;
    }
    tdm__free(fin);
}

/* Sends the watermark and idle status a reader restored at another
 * parallelism starts with (tdm__reader_restore_finish): the operator
 * subtasks' channel state was not restored, and without this a channel
 * would hold their minimum at "no watermark" until the reader's output
 * rises again.  A watermark at or below an operator's restored one is
 * ignored there, so nothing moves back. */
void tdm__src_ckpt_announce_restored(tdm__rt_src_task *t)
{
    if (t->fb)
        t->dt_out = tdm_reader_data_watermark(t->reader);
    if (t->wm_out != TDM_TIME_MIN)
        tdm__outbox_broadcast(t, TDM__ITEM_WATERMARK, t->wm_out, 0);
    if (t->idle)
        tdm__outbox_broadcast(t, TDM__ITEM_STATUS, 0, 1);
    t->sweep = true;
}

/* Hook between polls: the checkpoint coordinator's commits and barrier
 * requests (checkpoints on). */
void tdm__src_ckpt_between_polls(tdm__rt_src_task *t)
{
    if (t->run->ck.on)
        tdm__src_ckpt_poll(t);
}
