/* SPDX-License-Identifier: MIT */
/* op_fallback.c - a window subtask's data watermark (op_fallback.h). */
#include "runtime/op_fallback.h"
#include "runtime/task_op.h"
#include "runtime/task_source.h"
#include "window/win.h"

/* The valve's events are read through tdm_valve_watermark_out. */
static void ignore_event(void *opaque, const tdm_event *ev)
{
    (void)opaque;
    (void)ev;
}

/* Whether node @p n's watermark has a fallback under it: a source with
 * one, or a window reading such a node (its subtasks forward the data
 * watermark).  A join forwards none.  @p depth bounds the walk. */
static bool under_fallback(const tdm_node *n, int depth)
{
    if (n->kind == TDM_NODE_SOURCE)
        return n->spec.src.wm_fallback_interval_ms > 0;
    if (n->kind != TDM_NODE_WINDOW || depth > 64)
        return false;
    const tdm__conf_val *from = n->spec.win.from;
    for (int i = 0; i < from->n_fields; i++) {
        const tdm_node *in = tdm_job_node(n->job, from->fields[i]);
        if (in && under_fallback(in, depth + 1))
            return true;
    }
    return false;
}

tdm_err tdm__op_fb_open(tdm__rt_op_task *t)
{
    if (!t->win || !under_fallback(t->op->node, 0))
        return TDM_OK;
    tdm__winop_set_data_watermark(t->win, t->win->wm);
    return tdm_valve_new(t->op->n_channels, ignore_event, NULL, &t->fb.dv);
}

/* F5: the operator keeps the valve's output once it has one; until
 * then it keeps what tdm__op_fb_open set (a fresh operator: MIN, so a
 * fallback that lifts the watermark before any data counts; a restored
 * one: its restored watermark).  A rise below the subtask's output
 * watermark goes downstream at once with that watermark (a window
 * reading this one counts with it); a rise to or above it goes with the
 * output watermark that follows. */
static void data_publish(tdm__rt_op_task *t)
{
    tdm_time_ms dw = tdm_valve_watermark_out(t->fb.dv);
    if (dw == TDM_TIME_MIN || dw <= t->win->data_wm)
        return;
    tdm__winop_set_data_watermark(t->win, dw);
    if (t->emit && !t->failed && t->wm_out != TDM_TIME_MIN && dw < t->wm_out) {
        t->emit->fb = true;
        t->emit->dt_out = dw;
        tdm__rt_emit_control(t->emit, TDM__ITEM_WATERMARK, t->wm_out, 0,
                             t->met.wm_at_us);
    }
}

void tdm__op_fb_watermark_slow(tdm__rt_op_task *t, int ch, tdm_time_ms dt)
{
    (void)tdm_valve_watermark(t->fb.dv, ch, dt);
    data_publish(t);
}

void tdm__op_fb_status_slow(tdm__rt_op_task *t, int ch, int idle)
{
    (void)tdm_valve_status(t->fb.dv, ch, idle);
    data_publish(t);
}

void tdm__op_fb_output_slow(tdm__rt_op_task *t)
{
    t->emit->fb = true;
    t->emit->dt_out = t->win->data_wm;
}

void tdm__op_fb_close(tdm__op_fb_state *f)
{
    tdm_valve_destroy(f->dv);
    f->dv = NULL;
}
