/* SPDX-License-Identifier: MIT */
/* join.h - internal layout of the two-input join operator, shared by the
 * common plumbing in join.c (valves, combiner, watermark, public entry
 * points) and the two join kinds in join_interval.c and join_window.c.
 *
 * One struct serves both kinds; join.c owns the watermark path and calls
 * the kind's push, timer and teardown functions declared below.
 */
#ifndef TDM_JOIN_H
#define TDM_JOIN_H

#include "core.h"
#include "state/state.h"

typedef enum tdm__join_kind {
    TDM__JOIN_INTERVAL = 1,
    TDM__JOIN_WINDOW = 2
} tdm__join_kind;

/* The opaque pointer a side's valve emits through: which operator, which
 * side. */
typedef struct tdm__join_side {
    struct tdm_joinop *op;
    int side;
} tdm__join_side;

struct tdm_joinop {
    tdm__join_kind kind;
    tdm__sink sink;
    tdm_clock *clk; /* kept for the API's sake; joins use event time */
    int n_channels;
    tdm_valve *valve[2];     /* per side, over its channels */
    tdm__join_side vside[2]; /* opaque pointers of the two valves */
    tdm_combiner *comb;      /* the two valves' outputs -> operator wm */
    tdm_time_ms wm;          /* operator watermark, as timers see it */
    bool late_output;
    bool started; /* any input seen: settings are frozen */
    bool ended;
    bool ending; /* inside tdm_joinop_end */
    tdm__keys *keys;
    tdm__timers *timers;
    int64_t late_dropped;
    int64_t late_emitted;
    int64_t bad_records;
    int64_t buffered; /* stored record copies, both sides */
    tdm__msg msg;
    /* Observability probe (the runtime's late samples): called with
     * every record dropped as late, on the drop path only. */
    void (*drop_probe)(void *ud, int side, const tdm_record *rec);
    void *drop_ud;

    /* Interval join: normalised inclusive bounds and, per side, one slot
     * per key (namespace 0/0) holding that key's buckets sorted by ts. */
    tdm_time_ms lower, upper;
    tdm__kv *ibuf[2];

    /* Window join: the assigner and the live windows with their record
     * logs (join_window.c).  @c wins is no longer used (always NULL); it
     * stays only because src/runtime/task_op.c still reads it for the
     * state-bytes gauge until it calls tdm__joinop_state_bytes. */
    tdm_assigner *asg;
    struct tdm__wjoin *wj;
    tdm__kv *wins;
};

/* ---- Shared helpers (join.c) ---- */

/* Handles a late record of @p side: a LATE event when late output is on,
 * otherwise the drop counter grows.  Returns TDM_OK. */
tdm_err tdm__join_late(tdm_joinop *op, int side, const tdm_record *rec);

/* Emits one JOIN event for (@p l, @p r) with timestamp @p t; @p key /
 * @p key_len and the window (@p has_window, @p start, @p end) are set on
 * the event for callers that want them. */
void tdm__join_emit_pair(tdm_joinop *op, const tdm_record *l,
                         const tdm_record *r, tdm_time_ms t, const char *key,
                         size_t key_len, int has_window, tdm_time_ms start,
                         tdm_time_ms end);

/* ---- Interval join (join_interval.c) ---- */

/* Allocates the interval join's buffers.  Returns TDM_OK or NOMEM. */
tdm_err tdm__join_interval_init(tdm_joinop *op);
/* Processes a timestamped record of @p side (timestamp checked by the
 * caller): lateness, buffering, joining, cleanup timer.  Returns TDM_OK
 * or TDM_ERR_NOMEM (then nothing was emitted or kept). */
tdm_err tdm__join_interval_push(tdm_joinop *op, int side,
                                const tdm_record *rec);
/* A cleanup timer fired: drops the bucket it names. */
void tdm__join_interval_fire(tdm_joinop *op, const tdm__timer *t);
/* Frees every buffered record and the buffers (op may be half-built). */
void tdm__join_interval_free(tdm_joinop *op);

/* ---- Window join (join_window.c) ---- */

/* Checks the assigner (event-time tumbling or sliding) and allocates the
 * window store.  Returns TDM_OK, TDM_ERR_INVAL (message in errbuf), or
 * TDM_ERR_NOMEM. */
tdm_err tdm__join_window_init(tdm_joinop *op, char *errbuf, size_t errbuf_size);
/* Processes a timestamped record of @p side: assigns windows, buffers it
 * in every window that is not late, or handles it as late.  Returns
 * TDM_OK or TDM_ERR_NOMEM (then the record is in no window). */
tdm_err tdm__join_window_push(tdm_joinop *op, int side, const tdm_record *rec);
/* A window timer fired: emits the window's pairs and drops the window. */
void tdm__join_window_fire(tdm_joinop *op, const tdm__timer *t);
/* Bytes the window join's record logs and window set hold. */
size_t tdm__join_window_bytes(const tdm_joinop *op);
/* Frees every window and the store (op may be half-built). */
void tdm__join_window_free(tdm_joinop *op);

/* ---- State gauges (join.c), for the runtime's metrics ---- */

/* Keys with live state: the key table's count for the interval join; 0
 * for the window join, which does not index records by key until a
 * window fires. */
int64_t tdm__joinop_state_keys(const tdm_joinop *op);
/* Bytes held by the join's state: keys, timers and buffered records (for
 * the window join, its record log chunks). */
int64_t tdm__joinop_state_bytes(const tdm_joinop *op);

#endif /* TDM_JOIN_H */
