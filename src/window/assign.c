/* SPDX-License-Identifier: MIT */
/* assign.c - window assigners: tumbling, sliding, cumulate, session and
 * global, in event or processing time (rulebook R1).
 *
 * Window starts are floored (offset + floor((ts - offset) / size) * size)
 * so that negative timestamps land in the right window; ends saturate at
 * TDM_TIME_MAX instead of wrapping as Java's longs do.
 */
#include "window/win.h"

/* Sliding windows per record are bounded as in Flink. */
#define MAX_WINDOWS_PER_RECORD 10000000

static tdm_err new_assigner(tdm__asg_kind kind, tdm_assigner **out)
{
    tdm_assigner *a = tdm__calloc(1, sizeof *a);
    if (!a)
        return TDM_ERR_NOMEM;
    a->kind = kind;
    *out = a;
    return TDM_OK;
}

/* Tumbling windows (R1.3).  Returns TDM_OK, TDM_ERR_INVAL
 * naming size_ms or offset_ms, TDM_ERR_NOMEM. */
tdm_err tdm_assigner_new_tumbling(tdm_time_ms size_ms, tdm_time_ms offset_ms,
                                  tdm_assigner **out, char *errbuf,
                                  size_t errbuf_size)
{
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (size_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "size_ms must be > 0 (got %lld)", (long long)size_ms);
    /* |offset| < size, written so that offset = INT64_MIN cannot
     * overflow. */
    if (offset_ms >= size_ms || offset_ms <= -size_ms)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "offset_ms must satisfy |offset_ms| < size_ms "
                         "(got offset_ms %lld, size_ms %lld)",
                         (long long)offset_ms, (long long)size_ms);
    tdm_err err = new_assigner(TDM__ASG_TUMBLING, out);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "out of memory creating a tumbling assigner");
    (*out)->size = size_ms;
    (*out)->offset = offset_ms;
    return TDM_OK;
}

/* The arguments of a sliding (@p unit "slide_ms") or cumulate (@p unit
 * "step_ms", @p cumulate true) assigner: positive, a cumulate size a
 * multiple of its step, the offset within the slide (sliding) or the
 * size (cumulate), at most MAX_WINDOWS_PER_RECORD windows a record.
 * TDM_OK or TDM_ERR_INVAL naming the argument. */
static tdm_err periodic_args(tdm_time_ms size_ms, tdm_time_ms unit_ms,
                             const char *unit, bool cumulate,
                             tdm_time_ms offset_ms, char *errbuf,
                             size_t errbuf_size)
{
    tdm_time_ms bound = cumulate ? size_ms : unit_ms;
    const char *bound_name = cumulate ? "size_ms" : unit;
    if (size_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "size_ms must be > 0 (got %lld)", (long long)size_ms);
    if (unit_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s must be > 0 (got %lld)", unit, (long long)unit_ms);
    if (cumulate && size_ms % unit_ms != 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "size_ms must be an integral multiple of %s (got "
                         "size_ms %lld, %s %lld)",
                         unit, (long long)size_ms, unit, (long long)unit_ms);
    if (offset_ms >= bound || offset_ms <= -bound)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "offset_ms must satisfy |offset_ms| < %s (got "
                         "offset_ms %lld, %s %lld)",
                         bound_name, (long long)offset_ms, bound_name,
                         (long long)bound);
    if (size_ms / unit_ms > MAX_WINDOWS_PER_RECORD)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "size_ms / %s must be <= %d (got size_ms %lld, %s "
                         "%lld)",
                         unit, MAX_WINDOWS_PER_RECORD, (long long)size_ms, unit,
                         (long long)unit_ms);
    return TDM_OK;
}

/* A sliding (@p kind TDM__ASG_SLIDING) or cumulate assigner, its
 * arguments checked. */
static tdm_err new_periodic(tdm__asg_kind kind, tdm_time_ms size_ms,
                            tdm_time_ms unit_ms, tdm_time_ms offset_ms,
                            tdm_assigner **out, char *errbuf,
                            size_t errbuf_size)
{
    bool cumulate = kind == TDM__ASG_CUMULATE;
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    tdm_err err =
        periodic_args(size_ms, unit_ms, cumulate ? "step_ms" : "slide_ms",
                      cumulate, offset_ms, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    err = new_assigner(kind, out);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "out of memory creating a %s assigner",
                         cumulate ? "cumulate" : "sliding");
    (*out)->size = size_ms;
    (*out)->slide = unit_ms;
    (*out)->offset = offset_ms;
    return TDM_OK;
}

/* Sliding windows (R1.4).  Returns TDM_OK, TDM_ERR_INVAL
 * naming size_ms, slide_ms or offset_ms, TDM_ERR_NOMEM. */
tdm_err tdm_assigner_new_sliding(tdm_time_ms size_ms, tdm_time_ms slide_ms,
                                 tdm_time_ms offset_ms, tdm_assigner **out,
                                 char *errbuf, size_t errbuf_size)
{
    return new_periodic(TDM__ASG_SLIDING, size_ms, slide_ms, offset_ms, out,
                        errbuf, errbuf_size);
}

/* Cumulate windows (R1.8, Flink's CUMULATE): in each max window
 * [S, S + size), S aligned as a tumbling start, the windows [S, S + k *
 * step) for k = 1 .. size / step.  Returns TDM_OK, TDM_ERR_INVAL naming
 * size_ms, step_ms or offset_ms, TDM_ERR_NOMEM. */
tdm_err tdm_assigner_new_cumulate(tdm_time_ms size_ms, tdm_time_ms step_ms,
                                  tdm_time_ms offset_ms, tdm_assigner **out,
                                  char *errbuf, size_t errbuf_size)
{
    return new_periodic(TDM__ASG_CUMULATE, size_ms, step_ms, offset_ms, out,
                        errbuf, errbuf_size);
}

/* Session windows (R1.5).  Returns TDM_OK, TDM_ERR_INVAL
 * naming gap_ms, TDM_ERR_NOMEM. */
tdm_err tdm_assigner_new_session(tdm_time_ms gap_ms, tdm_assigner **out,
                                 char *errbuf, size_t errbuf_size)
{
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (gap_ms <= 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "gap_ms must be > 0 (got %lld)", (long long)gap_ms);
    tdm_err err = new_assigner(TDM__ASG_SESSION, out);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err,
                         "out of memory creating a session assigner");
    (*out)->gap = gap_ms;
    return TDM_OK;
}

/* The global window (R1.6).  Returns TDM_OK, TDM_ERR_INVAL,
 * TDM_ERR_NOMEM. */
tdm_err tdm_assigner_new_global(tdm_assigner **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = NULL;
    return new_assigner(TDM__ASG_GLOBAL, out);
}

/* Switches a time-window assigner to processing time
 * (R1.7).  Returns TDM_ERR_INVAL for NULL or the global assigner. */
tdm_err tdm_assigner_set_processing_time(tdm_assigner *a)
{
    if (!a || a->kind == TDM__ASG_GLOBAL)
        return TDM_ERR_INVAL;
    a->proc_time = true;
    return TDM_OK;
}

/* Frees an assigner; NULL is a no-op. */
void tdm_assigner_destroy(tdm_assigner *a)
{
    tdm__free(a);
}

/* ---- Assignment ---- */

/* (ts - offset) mod size, floored, in [0, size), with one division and
 * no overflow even for sizes near TDM_TIME_MAX (precondition: size > 0,
 * |offset| < size).  a - offset lies in (-2 size, 2 size), which uint64
 * arithmetic holds exactly once shifted into [0, 2 size). */
tdm_time_ms tdm__floor_mod(tdm_time_ms ts, tdm_time_ms offset, tdm_time_ms size)
{
    tdm_time_ms a = ts % size;
    uint64_t d = (uint64_t)a - (uint64_t)offset;
    if (a < offset)
        d += 2 * (uint64_t)size;
    if (d >= (uint64_t)size)
        d -= (uint64_t)size;
    return (tdm_time_ms)d;
}

/* Rulebook R1.2-R1.6.  The latest start is ts - r with r the floored
 * (ts - offset) mod size (tumbling) or mod slide (sliding).  Sliding
 * (R1.4): the record belongs to every window [s, s + size) with s = that
 * start minus k slides while s > ts - size, i.e. while r + k * slide <
 * size.  Cumulate (R1.8): back is the tumbling remainder mod size, and
 * the first end the next step boundary after ts; the step grid holds
 * the max window's start because size is a multiple of the step, and
 * offset mod step aligns it (|offset % step| < step). */
void tdm__assign_begin(const tdm_assigner *a, tdm_time_ms ts,
                       tdm__assign_iter *it)
{
    it->a = a;
    it->ts = ts;
    it->back = 0;
    it->fwd = 0;
    it->done = false;
    switch (a->kind) {
    case TDM__ASG_TUMBLING:
        it->back = tdm__floor_mod(ts, a->offset, a->size);
        break;
    case TDM__ASG_SLIDING:
        it->back = tdm__floor_mod(ts, a->offset, a->slide);
        /* When slide > size the record may fall into the gap between
         * two windows and belong to none. */
        it->done = it->back >= a->size;
        break;
    case TDM__ASG_CUMULATE:
        it->back = tdm__floor_mod(ts, a->offset, a->size);
        it->fwd = a->slide - tdm__floor_mod(ts, a->offset % a->slide, a->slide);
        break;
    case TDM__ASG_SESSION:
    case TDM__ASG_GLOBAL:
        break;
    }
}

/* Reports the next window of the iteration (see win.h); false
 * when done. */
bool tdm__assign_next(tdm__assign_iter *it, tdm_time_ms *start,
                      tdm_time_ms *end)
{
    if (it->done)
        return false;
    const tdm_assigner *a = it->a;
    switch (a->kind) {
    case TDM__ASG_TUMBLING:
    case TDM__ASG_SLIDING:
        /* back < size, so size - back > 0 and neither side wraps. */
        *start = tdm__time_sub_sat(it->ts, it->back);
        *end = tdm__time_add_sat(it->ts, a->size - it->back);
        if (a->kind == TDM__ASG_TUMBLING || it->back >= a->size - a->slide)
            it->done = true;
        else
            it->back += a->slide;
        break;
    case TDM__ASG_CUMULATE:
        /* back + fwd is a multiple of the step, at most size: the ends
         * grow by a step up to the max window's. */
        *start = tdm__time_sub_sat(it->ts, it->back);
        *end = tdm__time_add_sat(it->ts, it->fwd);
        /* Past TDM_TIME_MAX the later windows would all saturate to
         * this one: it is reported once. */
        if (it->back + it->fwd >= a->size || *end == TDM_TIME_MAX)
            it->done = true;
        else
            it->fwd += a->slide;
        break;
    case TDM__ASG_SESSION:
        *start = it->ts;
        *end = tdm__time_add_sat(it->ts, a->gap);
        it->done = true;
        break;
    case TDM__ASG_GLOBAL:
        *start = TDM_TIME_MIN;
        *end = TDM_TIME_MAX;
        it->done = true;
        break;
    }
    return true;
}
