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

    /* Interval join: normalised inclusive bounds and the buffers (time
     * slices per side, a key table over both; join_interval.c). */
    tdm_time_ms lower, upper;
    struct tdm__ijoin *ij;

    /* Window join: the assigner and the live windows with their record
     * logs (join_window.c). */
    tdm_assigner *asg;
    struct tdm__wjoin *wj;
    /* Restore calls taken (join.c); non-zero: combined watermarks at or
     * below op->wm are ignored. */
    int restored;
    struct tdm__wrs *wrs; /* join_window.c: records of a blob being
                           * restored */
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
 * caller): lateness, buffering (copies key, value and payload), joining.
 * Returns TDM_OK or TDM_ERR_NOMEM (then nothing was emitted or kept). */
tdm_err tdm__join_interval_push(tdm_joinop *op, int side,
                                const tdm_record *rec);
/* The operator watermark advanced to @p w (already in op->wm): cleans,
 * in bulk, every record whose cleanup time (rule J4) is at or below
 * @p w.  No timers: the interval join registers none. */
void tdm__join_interval_advance(tdm_joinop *op, tdm_time_ms w);
/* Keys with buffered records, and bytes of the buffers. */
int64_t tdm__join_interval_keys(const tdm_joinop *op);
size_t tdm__join_interval_bytes(const tdm_joinop *op);
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
/* How the window join stores a pushed record's payload, when not as a
 * copy of its payload_len bytes: @c size gives the bytes @c write then
 * writes at an address of the log (any alignment), both given the
 * record's payload pointer.  (The runtime packs its rows straight into
 * the log this way.)  Records in the log - in JOIN events and
 * checkpoints - hold what @c write wrote; LATE events and the drop probe
 * of a push get the pushed record as it is.  Restored records are
 * copied. */
typedef struct tdm__join_packer {
    size_t (*size)(const void *payload);
    void (*write)(const void *payload, void *dst);
} tdm__join_packer;
/* Sets (copies) the packer of a window join; NULL: copy payloads. */
void tdm__join_window_set_packer(tdm_joinop *op, const tdm__join_packer *pk);
/* Bytes the window join's record logs and window set hold. */
size_t tdm__join_window_bytes(const tdm_joinop *op);
/* Frees every window and the store (op may be half-built). */
void tdm__join_window_free(tdm_joinop *op);

/* ---- State gauges (join.c), for the runtime's metrics ---- */

/* Keys with live state: keys with buffered records for the interval
 * join; 0 for the window join, which does not index records by key until
 * a window fires. */
int64_t tdm__joinop_state_keys(const tdm_joinop *op);
/* Bytes held by the join's state: the interval join's slices, chunks and
 * key table; the window join's record log chunks; and the (for the
 * interval join empty) key table and timers every join has. */
int64_t tdm__joinop_state_bytes(const tdm_joinop *op);

/* ---- Checkpoints (layout in docs/checkpoints.md, "Operator state") ---- */

struct tdm__enc;
struct tdm__dec;

#define TDM__SNAP_TAG_JOINOP UINT64_C(0x4f4a)       /* "OJ" */
#define TDM__SNAP_TAG_JOINOP_GROUP UINT64_C(0x4f4b) /* "OK" */
#define TDM__SNAP_JOINOP_VERSION 1

/* Writes one TDM__SNAP_TAG_JOINOP section: the operator-wide state (kind
 * and bounds or assigner as a fingerprint, watermark, counters, end
 * flag, the valves and the combiner), then one nested
 * TDM__SNAP_TAG_JOINOP_GROUP section per key group in [group_lo,
 * group_hi] that has buffered records (interval join: per side and key
 * the buckets in time order; window join: per live window and side the
 * records of the group's keys with their arrival positions).  Cleanup is
 * not written: it follows from the records' times or the windows.
 * @p key_group as for tdm__winop_snapshot (NULL: all in group 0).
 * Returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
tdm_err tdm__joinop_snapshot(const tdm_joinop *op, struct tdm__enc *e,
                             int (*key_group)(void *ud, const char *key,
                                              size_t len),
                             void *ud, int group_lo, int group_hi);
/* Reads one TDM__SNAP_TAG_JOINOP section into a fresh join with the same
 * configuration, taking the key-group sections in [group_lo, group_hi]
 * (others skipped); callable once per old subtask's blob before any
 * input.  Operator-wide state merges as in tdm__winop_restore: the first
 * blob gives valves and combiner (when channel counts match), the
 * watermark is the minimum over blobs, counters add, "ended" only if
 * every blob had it.  Window join: a window's records of one blob keep
 * their arrival order (pairs per key come out as before); records of
 * later blobs go after.  Returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_STATE
 * (input seen), TDM_ERR_PARSE (message with the offset: bad blob or
 * another configuration), TDM_ERR_NOMEM; after an error destroy the
 * operator. */
tdm_err tdm__joinop_restore(tdm_joinop *op, struct tdm__dec *d, int group_lo,
                            int group_hi);

/* The kinds' parts (join_interval.c, join_window.c): the group sections
 * of keys whose group (relative to lo, -1 outside) @p kg computes, and
 * one group section's body after its group number. */
typedef int (*tdm__join_kg_fn)(void *ud, const char *key, size_t len);
tdm_err tdm__join_interval_snap(const tdm_joinop *op, struct tdm__enc *e,
                                tdm__join_kg_fn kg, void *ud, int lo,
                                size_t ng);
tdm_err tdm__join_interval_restore_group(tdm_joinop *op, struct tdm__dec *d);
tdm_err tdm__join_window_snap(const tdm_joinop *op, struct tdm__enc *e,
                              tdm__join_kg_fn kg, void *ud, int lo, size_t ng);
/* Window join: reads a group's records into a buffer of the blob... */
tdm_err tdm__join_window_restore_group(tdm_joinop *op, struct tdm__dec *d);
/* ... and adds them in arrival order once the blob's groups are read
 * (also frees the buffer on error: @p ok false). */
tdm_err tdm__join_window_restore_end(tdm_joinop *op, struct tdm__dec *d,
                                     bool ok);

#endif /* TDM_JOIN_H */
