/* SPDX-License-Identifier: MIT */
/* combiner.c - the watermark of a multi-input operator (joins), Flink's
 * IndexedCombinedWatermarkStatus, newest form (rule O2); each input is
 * already merged by its own valve.  Output = minimum over non-idle inputs,
 * sent only when it rises.  No "aligned" notion: an input that returns
 * with a low watermark holds further progress.  All inputs idle: the
 * maximum over all inputs is flushed, then IDLE.
 */
#include "wm.h"
#include "state/ckpt_codec.h"

typedef struct comb_input {
    tdm_time_ms wm; /* only rises */
    bool idle;
} comb_input;

struct tdm_combiner {
    int n;
    comb_input *in;
    tdm_time_ms out; /* last output watermark */
    bool out_idle;   /* operator-level idle flag */
    tdm__sink sink;
};

/* Creates a combiner over @p n_inputs (>= 1) inputs, all active at MIN;
 * @p emit may be NULL.  INVAL, NOMEM. */
tdm_err tdm_combiner_new(int n_inputs, tdm_emit_cb emit, void *opaque,
                         tdm_combiner **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = NULL;
    if (n_inputs < 1)
        return TDM_ERR_INVAL;
    tdm_combiner *c = tdm__calloc(1, sizeof *c);
    if (!c)
        return TDM_ERR_NOMEM;
    c->in = tdm__calloc((size_t)n_inputs, sizeof *c->in);
    if (!c->in)
        goto fail;
    c->n = n_inputs;
    for (int i = 0; i < n_inputs; i++)
        c->in[i].wm = TDM_TIME_MIN;
    c->out = TDM_TIME_MIN;
    c->sink.fn = emit;
    c->sink.opaque = opaque;
    *out = c;
    return TDM_OK;

fail:
    tdm_combiner_destroy(c);
    return TDM_ERR_NOMEM;
}

/* Releases the combiner; NULL and half-built ones are fine. */
void tdm_combiner_destroy(tdm_combiner *c)
{
    if (!c)
        return;
    tdm__free(c->in);
    tdm__free(c);
}

/* Recomputes the combined value and the idle flag; returns true when the
 * combined watermark rose (it is then in c->out). */
static bool update_combined(tdm_combiner *c)
{
    tdm_time_ms min = TDM_TIME_MAX, max = TDM_TIME_MIN;
    bool all_idle = true;
    for (int i = 0; i < c->n; i++) {
        if (c->in[i].wm > max)
            max = c->in[i].wm;
        if (!c->in[i].idle) {
            all_idle = false;
            if (c->in[i].wm < min)
                min = c->in[i].wm;
        }
    }
    c->out_idle = all_idle;
    tdm_time_ms cand = all_idle ? max : min;
    if (cand > c->out) {
        c->out = cand;
        return true;
    }
    return false;
}

/* Emits the outcome of an update.  Flink sends the watermark, then the
 * status when the operator-level flag flipped; becoming active, ACTIVE
 * goes first so that no watermark is sent while announced idle (V7). */
static void publish(tdm_combiner *c, bool was_idle, bool rose)
{
    if (was_idle && !c->out_idle)
        tdm__emit_status(&c->sink, 0);
    if (rose)
        tdm__emit_watermark(&c->sink, c->out);
    if (!was_idle && c->out_idle)
        tdm__emit_status(&c->sink, 1);
}

/* A watermark makes its input active and raises it if higher. */
tdm_err tdm_combiner_watermark(tdm_combiner *c, int in, tdm_time_ms wm)
{
    if (!c)
        return TDM_ERR_INVAL;
    if (in < 0 || in >= c->n)
        return TDM_ERR_CHANNEL;
    bool was_idle = c->out_idle;
    c->in[in].idle = false;
    if (wm > c->in[in].wm)
        c->in[in].wm = wm;
    bool rose = update_combined(c);
    publish(c, was_idle, rose);
    return TDM_OK;
}

/* Every status call recombines (an input going idle may release the
 * minimum; all idle flushes the maximum). */
tdm_err tdm_combiner_status(tdm_combiner *c, int in, int idle)
{
    if (!c)
        return TDM_ERR_INVAL;
    if (in < 0 || in >= c->n)
        return TDM_ERR_CHANNEL;
    bool was_idle = c->out_idle;
    c->in[in].idle = idle != 0;
    bool rose = update_combined(c);
    publish(c, was_idle, rose);
    return TDM_OK;
}

/* The last output watermark (TDM_TIME_MIN before any). */
tdm_time_ms tdm_combiner_watermark_out(const tdm_combiner *c)
{
    return c ? c->out : TDM_TIME_MIN;
}

/* ---- Checkpoints ---- */

/* Section COMBINER: version, count (uvar), per input wm (svar) and flags
 * (u8: 1 idle), then the output (svar) and its idle flag (u8). */
tdm_err tdm__combiner_snapshot(const tdm_combiner *v, struct tdm__enc *e)
{
    if (!v || !e)
        return TDM_ERR_INVAL;
    tdm__enc_begin(e, TDM__SNAP_TAG_COMBINER);
    tdm__enc_uvar(e, TDM__SNAP_WM_VERSION);
    tdm__enc_uvar(e, (uint64_t)v->n);
    for (int i = 0; i < v->n; i++) {
        tdm__enc_svar(e, v->in[i].wm);
        tdm__enc_u8(e, (uint8_t)((v->in[i].idle ? 1 : 0) | 0));
    }
    tdm__enc_svar(e, v->out);
    tdm__enc_u8(e, v->out_idle ? 1 : 0);
    tdm__enc_end(e);
    return e->oom ? TDM_ERR_NOMEM : TDM_OK;
}

/* Restores into a fresh object with the same input count; nothing is
 * emitted (downstream restores its own state). */
tdm_err tdm__combiner_restore(tdm_combiner *v, struct tdm__dec *d)
{
    uint64_t version, n; /* version: the second pass skips it */
    tdm__dec body;

    if (!v || !d)
        return TDM_ERR_INVAL;
    if (tdm__dec_expect(d, TDM__SNAP_TAG_COMBINER, TDM__SNAP_WM_VERSION,
                        "not a combiner section", "unknown combiner version",
                        &body) != TDM_OK)
        return TDM_ERR_PARSE;
    tdm__dec_uvar(&body, &n);
    if (!body.err && n != (uint64_t)v->n)
        tdm__dec_fail(&body, "input count differs");
    /* Validate everything first: a bad blob leaves v as it was. */
    for (int i = 0; !body.err && i < v->n; i++) {
        int64_t wm;
        uint8_t flags;
        tdm__dec_svar(&body, &wm);
        if (tdm__dec_u8(&body, &flags) != TDM_OK)
            break;
        if (flags & ~1) {
            tdm__dec_fail(&body, "unknown input flags");
            break;
        }
    }
    int64_t out;
    uint8_t out_idle;
    tdm__dec_svar(&body, &out);
    tdm__dec_u8(&body, &out_idle);
    if (!body.err && out_idle > 1)
        tdm__dec_fail(&body, "bad idle flag");
    if (body.err) {
        tdm__wm_dec_adopt(d, &body);
        return TDM_ERR_PARSE;
    }
    /* Second pass over the now validated bytes. */
    tdm__dec again;
    tdm__dec_init(&again, body.p, body.len);
    tdm__dec_uvar(&again, &version);
    tdm__dec_uvar(&again, &n);
    for (int i = 0; i < v->n; i++) {
        int64_t wm;
        uint8_t flags;
        tdm__dec_svar(&again, &wm);
        tdm__dec_u8(&again, &flags);
        v->in[i].wm = wm;
        v->in[i].idle = (flags & 1) != 0;
    }
    v->out = out;
    v->out_idle = out_idle != 0;
    return TDM_OK;
}
