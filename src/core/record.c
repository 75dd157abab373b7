/* SPDX-License-Identifier: MIT */
/* record.c - the caller-owned record handle and the accessors of emitted
 * events.  Both are thin views over structs defined in core.h, so pushing
 * a record or emitting an event allocates nothing.
 */
#include <string.h>

#include "core.h"

/* ---- Records ---- */

tdm_err tdm_record_new(tdm_record **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = tdm__calloc(1, sizeof **out);
    if (!*out)
        return TDM_ERR_NOMEM;
    (*out)->key = "";
    (*out)->ts = TDM_TIME_MIN;
    return TDM_OK;
}

void tdm_record_set(tdm_record *rec, const char *key, size_t key_len,
                    tdm_time_ms ts, double value)
{
    rec->key = key ? key : "";
    rec->key_len = key ? key_len : 0;
    rec->ts = ts;
    rec->value = value;
    rec->payload = NULL;
    rec->payload_len = 0;
}

void tdm_record_set_ts(tdm_record *rec, tdm_time_ms ts)
{
    rec->ts = ts;
}

void tdm_record_set_payload(tdm_record *rec, const void *payload, size_t len)
{
    rec->payload = payload;
    rec->payload_len = payload ? len : 0;
}

const char *tdm_record_key(const tdm_record *rec, size_t *len)
{
    if (len)
        *len = rec->key_len;
    return rec->key;
}

tdm_time_ms tdm_record_ts(const tdm_record *rec)
{
    return rec->ts;
}

double tdm_record_value(const tdm_record *rec)
{
    return rec->value;
}

const void *tdm_record_payload(const tdm_record *rec, size_t *len)
{
    if (len)
        *len = rec->payload_len;
    return rec->payload;
}

void tdm_record_destroy(tdm_record *rec)
{
    tdm__free(rec);
}

/* ---- Events ---- */

void tdm__emit_watermark(const tdm__sink *s, tdm_time_ms wm)
{
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_WATERMARK);
    ev.time = wm;
    tdm__emit(s, &ev);
}

void tdm__emit_status(const tdm__sink *s, int idle)
{
    tdm_event ev = TDM__EVENT_INIT(TDM_EVENT_STATUS);
    ev.idle = idle;
    tdm__emit(s, &ev);
}

tdm_event_type tdm_event_get_type(const tdm_event *ev)
{
    return ev->type;
}

tdm_time_ms tdm_event_time(const tdm_event *ev)
{
    return ev->time;
}

int tdm_event_is_idle(const tdm_event *ev)
{
    return ev->idle;
}

const char *tdm_event_key(const tdm_event *ev, size_t *len)
{
    if (len)
        *len = ev->key_len;
    return ev->key;
}

int tdm_event_window(const tdm_event *ev, tdm_time_ms *start, tdm_time_ms *end)
{
    if (!ev->has_window)
        return 0;
    if (start)
        *start = ev->win_start;
    if (end)
        *end = ev->win_end;
    return 1;
}

double tdm_event_value(const tdm_event *ev)
{
    return ev->value;
}

const double *tdm_event_values(const tdm_event *ev, size_t *n)
{
    if (n)
        *n = ev->n_values;
    return ev->values;
}

const void *tdm_event_bytes(const tdm_event *ev, size_t *len)
{
    if (len)
        *len = ev->bytes_len;
    return ev->bytes;
}

tdm_pane_timing tdm_event_pane_timing(const tdm_event *ev)
{
    return ev->pane_timing;
}

int64_t tdm_event_pane_index(const tdm_event *ev)
{
    return ev->pane_index;
}

int tdm_event_is_update(const tdm_event *ev)
{
    return ev->is_update;
}

const tdm_record *tdm_event_record(const tdm_event *ev, int which)
{
    if (which < 0 || which > 1)
        return NULL;
    return ev->rec[which];
}

int tdm_event_side(const tdm_event *ev)
{
    return ev->side;
}

int tdm_event_index(const tdm_event *ev)
{
    return ev->index;
}

const int *tdm_event_targets(const tdm_event *ev, size_t *n)
{
    if (n)
        *n = ev->n_targets;
    return ev->targets;
}

/* ---- Hashing ---- */

/* See core.h. */
uint64_t tdm__hash_bytes(const void *p, size_t n)
{
    return tdm__hash_bytes_seeded(p, n, TDM__HASH_TABLE);
}
