/* SPDX-License-Identifier: MIT */
/* win.h - internals of windows: the layouts behind tdm_assigner,
 * tdm_trigger and tdm_aggregate, the window operator's state, and the
 * helpers the files of src/window/ share (assign.c, trigger.c, agg.c,
 * merge.c, winop.c, winop_slice.c; join_window.c uses the assigner
 * part).
 *
 * Built-in triggers and aggregates are dispatched with a switch on their
 * kind so that the per-record path makes no indirect calls; user-defined
 * ones go through their method tables.
 */
#ifndef TDM_WIN_H
#define TDM_WIN_H

#include "core.h"
#include "state/state.h"

/* ====================================================================== */
/* Assigners                                                               */
/* ====================================================================== */

typedef enum tdm__asg_kind {
    TDM__ASG_TUMBLING = 1,
    TDM__ASG_SLIDING = 2,
    TDM__ASG_SESSION = 3,
    TDM__ASG_GLOBAL = 4,
    TDM__ASG_CUMULATE = 5
} tdm__asg_kind;

struct tdm_assigner {
    tdm__asg_kind kind;
    bool proc_time;     /* windows from the operator's clock */
    tdm_time_ms size;   /* tumbling, sliding; cumulate: the max size */
    tdm_time_ms slide;  /* sliding; cumulate: the step */
    tdm_time_ms offset; /* tumbling, sliding, cumulate */
    tdm_time_ms gap;    /* session */
};

/* Walks the windows of one timestamp in Flink's order (sliding: latest
 * start first; cumulate: earliest end first).  Usage:
 *   tdm__assign_iter it;
 *   tdm__assign_begin(asg, ts, &it);
 *   while (tdm__assign_next(&it, &start, &end)) ...
 * Starts and ends are computed as ts - back and ts + (size - back), so a
 * window whose bounds lie beyond the time range saturates at
 * TDM_TIME_MIN / TDM_TIME_MAX without ever wrapping; the global window
 * is reported as [TDM_TIME_MIN, TDM_TIME_MAX). */
typedef struct tdm__assign_iter {
    const tdm_assigner *a;
    tdm_time_ms ts;
    tdm_time_ms back; /* ts - start of the next window, >= 0 */
    tdm_time_ms fwd;  /* cumulate: end - ts of the next window, > 0 */
    bool done;
} tdm__assign_iter;

/* Starts iterating the windows of timestamp @p ts (for processing-time
 * assigners the caller passes the processing time). */
/* (ts - offset) mod size, floored into [0, size), without overflow
 * (size > 0, |offset| < size): how far ts lies past the start of its
 * tumbling window, or of the latest sliding window (mod the slide).
 * The runtime's two-phase slices use it too. */
tdm_time_ms tdm__floor_mod(tdm_time_ms ts, tdm_time_ms offset,
                           tdm_time_ms size);
void tdm__assign_begin(const tdm_assigner *a, tdm_time_ms ts,
                       tdm__assign_iter *it);
/* Reports the next window; false when there is none left. */
bool tdm__assign_next(tdm__assign_iter *it, tdm_time_ms *start,
                      tdm_time_ms *end);
/* True for tumbling/sliding/session assigners in event time: windows can
 * be late and are cleaned up by event-time timers (Flink's
 * isEventTime()). */
static inline bool tdm__assigner_is_event_time(const tdm_assigner *a)
{
    return a->kind != TDM__ASG_GLOBAL && !a->proc_time;
}
/* True for session assigners (windows of a key merge). */
static inline bool tdm__assigner_is_merging(const tdm_assigner *a)
{
    return a->kind == TDM__ASG_SESSION;
}

/* ====================================================================== */
/* Triggers                                                                */
/* ====================================================================== */

typedef enum tdm__trg_kind {
    TDM__TRG_EVENT_TIME = 1,
    TDM__TRG_PROC_TIME = 2,
    TDM__TRG_COUNT = 3,
    TDM__TRG_CONTINUOUS = 4,
    TDM__TRG_PURGING = 5,
    TDM__TRG_NEVER = 6,
    TDM__TRG_CUSTOM = 7
} tdm__trg_kind;

struct tdm_trigger {
    tdm__trg_kind kind;
    int64_t count;         /* COUNT */
    tdm_time_ms interval;  /* CONTINUOUS */
    tdm_trigger *inner;    /* PURGING */
    tdm_trigger_methods m; /* CUSTOM */
    void *ud;              /* CUSTOM */
};

/* Built-in trigger state (COUNT: the count; CONTINUOUS: the pending fire
 * time, valid when has is non-zero). */
typedef struct tdm__trg_state {
    int64_t v;
    int64_t has;
} tdm__trg_state;

/* ====================================================================== */
/* Aggregates                                                              */
/* ====================================================================== */

typedef enum tdm__agg_type {
    TDM__AGG_BUILTIN = 1,
    TDM__AGG_CUSTOM = 2,
    TDM__AGG_WINDOW_FN = 3
} tdm__agg_type;

struct tdm__enc;
struct tdm__dec;

/* Checkpoint codec of a custom accumulator (tdm__aggregate_set_codec). */
typedef tdm_err (*tdm__acc_save_fn)(void *ud, const void *acc,
                                    struct tdm__enc *e);
typedef tdm_err (*tdm__acc_load_fn)(void *ud, void *acc, struct tdm__dec *d);

struct tdm_aggregate {
    tdm__agg_type type;
    tdm_agg_kind kind;           /* BUILTIN */
    tdm_aggregate_methods m;     /* CUSTOM: version 1, or of version 2 what the
                                    two share (acc_size, create, destroy_acc,
                                    destroy; add, merge, result NULL) */
    tdm_aggregate_methods_v2 m2; /* CUSTOM, m.version 2 */
    tdm_window_fn fn;            /* WINDOW_FN */
    void (*fn_destroy)(void *ud);
    void *ud;
    tdm__acc_save_fn acc_save; /* CUSTOM: NULL = the bytes are the state */
    tdm__acc_load_fn acc_load;
};

/* Gives a custom aggregate a checkpoint codec for its accumulators, for
 * accumulators that hold pointers (the runtime's row aggregates: distinct
 * sets, strings).  @p save encodes one accumulator (contents created,
 * borrowed) into @p e; @p load decodes into zeroed acc_size bytes what
 * save wrote (the decoder covers exactly that), returns TDM_ERR_PARSE on
 * bad input (after tdm__dec_fail) and leaves @p acc so that destroy_acc
 * can release it even then.  Without a codec a custom aggregate's
 * accumulator bytes are copied as they are, which is refused at snapshot
 * time (TDM_ERR_UNSUPPORTED) when it has a destroy_acc (a sign that it
 * holds pointers).  Returns TDM_OK or TDM_ERR_INVAL (not custom). */
tdm_err tdm__aggregate_set_codec(tdm_aggregate *a, tdm__acc_save_fn save,
                                 tdm__acc_load_fn load);

struct tdm_result_out {
    double value;
    unsigned char *bytes; /* owned by the operator, reused */
    size_t len, cap;
    bool has_bytes;
    tdm_err err; /* NOMEM from tdm_result_set_bytes */
};

struct tdm_window_ctx {
    const char *key;
    size_t key_len;
    int has_window;
    tdm_time_ms start, end;
    const tdm_record *recs;
    size_t n;
};

/* ====================================================================== */
/* The window operator                                                     */
/* ====================================================================== */

/* Window slot flags. */
enum {
    TDM__W_CONTENTS = 1u << 0, /* window state is non-empty */
    TDM__W_ET_MAX = 1u << 1,   /* event timer at maxTimestamp registered */
    TDM__W_ET_CLEAN = 1u << 2, /* event timer at cleanup time registered */
    TDM__W_PT_MAX = 1u << 3,   /* proc timer at maxTimestamp registered */
    TDM__W_PT_CLEAN = 1u << 4, /* proc timer at cleanup time registered */
    TDM__W_ONTIME = 1u << 5,   /* the ON_TIME pane was emitted */
    TDM__W_UNPURGED = 1u << 6  /* an emitted firing was not purged */
};
#define TDM__W_TIMER_FLAGS                                                     \
    (TDM__W_ET_MAX | TDM__W_ET_CLEAN | TDM__W_PT_MAX | TDM__W_PT_CLEAN)

/* Contents of a window.  Built-in incremental aggregates keep two
 * doubles; collect a value array; window functions record copies. */
typedef union tdm__win_contents {
    struct {
        double a; /* sum, min or max */
        double n; /* count */
    } num;
    struct {
        double *v;
        size_t n, cap;
    } col;
    struct {
        tdm_record *r; /* key points at the interned bytes; payload owned */
        size_t n, cap;
    } recs;
} tdm__win_contents;

/* The value of one window in the operator's kv store.  The kv namespace
 * is the state window; [start, end) is the actual window (they differ
 * only after session merges).  A custom accumulator (op->acc_off) and the
 * trigger state (op->tstate_off) follow in the same slot. */
typedef struct tdm__win_slot {
    tdm_time_ms start, end;
    int64_t panes; /* firings emitted since the state was created */
    uint32_t flags;
    uint32_t key;
    tdm__win_contents c;
} tdm__win_slot;

struct tdm_trigger_ctx {
    tdm_winop *op;
    uint32_t key;
    tdm_time_ms start, end; /* the window at hand */
    tdm__win_slot *slot;    /* its state (NULL: none) */
    void *state;            /* trigger state (NULL if size 0) */
};

typedef enum tdm__domain { TDM__EVENT = 0, TDM__PROC = 1 } tdm__domain;

/* The window store (state/wstore.h) behind the lean path. */
typedef struct tdm__wstore tdm__wstore;

struct tdm_winop {
    tdm_assigner *asg;
    tdm_trigger *trg;
    tdm_aggregate *agg;
    tdm__sink sink;
    tdm_valve *valve;
    tdm_clock *clk;
    int n_channels;
    bool event_time; /* assigner in event time: lateness applies */
    bool merging;
    bool global;
    bool single; /* one window per record (tumbling, global) */
    bool late_output;
    bool started;
    bool ended;
    /* The lean path (winop.c): tumbling or sliding event-time windows,
     * the event-time trigger and a built-in incremental aggregate keep
     * their state in a window store instead of keys/wins/timers. */
    bool lean;
    bool lean_tumbling;
    tdm_agg_kind lean_kind;
    uint32_t lean_sid; /* tumbling: the last window interval used */
    /* The lean path's sliced mode (winop_slice.c): sliding counts
     * without allowed lateness keep one cell per (key, slice) and list
     * each window's keys; a window's count is the sum of its slices'
     * cells when it fires. */
    bool lean_sliced;
    tdm_time_ms slice_len; /* gcd(size, slide) */
    tdm_time_ms slice_off; /* the offset modulo slice_len */
    uint32_t slice_sid;    /* the slice a record went to last, or NONE */
    struct tdm__slice_walk *swalk;     /* window walks under way, innermost
                                        * first (the emit callback may call
                                        * back into the operator) */
    struct tdm__slice_cache *scache;   /* the windows of slice_sid */
    uint64_t slice_wgen;               /* window spans freed so far (the cache's
                                        * span ids stay valid while it is equal) */
    struct tdm__slice_frozen *sfrozen; /* due windows not walked yet whose
                                        * results were fixed early */
    uint32_t n_sfrozen, cap_sfrozen;
    /* The session mode (winop_session.c): event-time sessions with the
     * event-time trigger, a built-in aggregate and no allowed lateness
     * keep their sessions there; NULL otherwise. */
    struct tdm__sess *sess;
    tdm__wstore *ws;
    tdm_time_ms lateness;
    /* L3 (winop_lateness.c): windows whose maxTimestamp is <= this and
     * that the operator does not hold were closed under a lower lateness
     * before a live raise; TDM_TIME_MIN: none.  lat_restored: a restored
     * blob that holds key groups of this operator set the lateness (L6). */
    tdm_time_ms closed_max;
    bool lat_restored;
    tdm_time_ms wm;       /* current watermark */
    tdm_time_ms proctime; /* last clock reading */
    tdm__keys *keys;
    tdm__kv *wins;
    tdm__timers *timers[2];         /* by tdm__domain */
    size_t acc_off, acc_size;       /* custom accumulator in the slot */
    size_t tstate_off, tstate_size; /* trigger state in the slot */
    int64_t late_dropped, late_emitted, bad_records, fn_errors;
    /* The data watermark under wm (a source's fallback watermark lifts
     * wm above it; TDM_TIME_MAX: not tracked) and the late records it
     * would have kept on time (F5, time/reader.c). */
    tdm_time_ms data_wm;
    int64_t late_fallback;
    int64_t content_bytes; /* heap bytes held by window contents */
    tdm_err pending;       /* first error raised inside a callback */
    /* The aggregate context of the record being pushed: set by
     * tdm_winop_push_ctx for the length of its push, NULL otherwise (a
     * version-2 add then sees tdm__agg_no_ctx). */
    const tdm_agg_ctx *actx;
    tdm_result_out res;
    /* Scratch for firings (sorted collect values, records) and merges. */
    tdm__win_slot **mlist; /* a key's windows */
    void **mstates;        /* trigger states of merged windows */
    size_t mlist_cap;      /* capacity of both arrays */
    unsigned char *tsnap;  /* copy of the kept window's trigger state */
    tdm__msg msg;
    /* Observability probe (the runtime's late samples): called with
     * every record dropped as late, on the drop path only. */
    void (*drop_probe)(void *ud, const tdm_record *rec);
    void *drop_ud;
    /* Restore calls taken (winop_snap.c); non-zero: watermarks at or
     * below op->wm are ignored (several old subtasks' valves merged). */
    int restored;
};

/* maxTimestamp of a window of this operator. */
static inline tdm_time_ms tdm__win_max_ts(const tdm_winop *op, tdm_time_ms end)
{
    return op->global ? TDM_TIME_MAX : end - 1;
}

/* Flink's cleanupTime: maxTimestamp + lateness for event-time assigners
 * (TDM_TIME_MAX when that overflows), maxTimestamp otherwise. */
static inline tdm_time_ms tdm__win_cleanup(const tdm_winop *op, tdm_time_ms end)
{
    tdm_time_ms m = tdm__win_max_ts(op, end);
    if (!op->event_time)
        return m;
    return tdm__time_add_sat(m, op->lateness);
}

/* The current time of a domain (watermark or processing time). */
static inline tdm_time_ms tdm__win_now(const tdm_winop *op, tdm__domain d)
{
    return d == TDM__EVENT ? op->wm : op->proctime;
}

static inline void *tdm__win_tstate(const tdm_winop *op, tdm__win_slot *s)
{
    return op->tstate_size ? (char *)s + op->tstate_off : NULL;
}

static inline void *tdm__win_acc(const tdm_winop *op, tdm__win_slot *s)
{
    return (char *)s + op->acc_off;
}

/* ---- Timers (winop.c) ---- */

/* Registers a timer of @p d at @p t for the ctx's window, keeping the
 * slot's timer flags in step and a key reference per timer.  Registering
 * an existing timer is a no-op.  Returns TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__win_timer_add(tdm_trigger_ctx *ctx, tdm__domain d, tdm_time_ms t);
/* Deletes that timer (no-op if absent). */
void tdm__win_timer_del(tdm_trigger_ctx *ctx, tdm__domain d, tdm_time_ms t);

/* ---- Triggers (trigger.c) ---- */

/* Bytes of per-window state the trigger needs. */
size_t tdm__trigger_state_size(const tdm_trigger *t);
/* True when the trigger supports merging windows. */
/* True when the trigger is (or wraps) a continuous event-time trigger. */
bool tdm__trigger_is_continuous(const tdm_trigger *t);
bool tdm__trigger_can_merge(const tdm_trigger *t);
/* The trigger's hooks.  Results are tdm_trigger_result values; a NOMEM
 * while registering timers is stored in ctx->op->pending. */
int tdm__trigger_on_element(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                            const tdm_record *rec);
int tdm__trigger_on_time(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                         tdm__domain d, tdm_time_ms time);
/* ctx: the merged window with the kept state; @p merged: the trigger
 * states of the other merged windows. */
void tdm__trigger_on_merge(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                           void *const *merged, size_t n);
/* @p merged_away: the window was merged into another (its built-in state
 * went with it, as in Flink), rather than cleaned up. */
void tdm__trigger_clear(const tdm_trigger *t, tdm_trigger_ctx *ctx,
                        bool merged_away);

/* ---- Aggregates and window contents (agg.c) ---- */

/* Bytes of per-window accumulator kept inline in the slot. */
size_t tdm__agg_acc_size(const tdm_aggregate *a);
bool tdm__agg_can_merge(const tdm_aggregate *a);
/* Adds a record to the slot's contents.  @p key/@p key_len are the
 * interned key bytes (stable while the slot lives).  Returns TDM_OK,
 * TDM_ERR_NOMEM (contents unchanged) or a version-2 add's error (then
 * the slot has no contents if it had none before). */
tdm_err tdm__agg_add_slow(tdm_winop *op, tdm__win_slot *s,
                          const tdm_record *rec, const char *key,
                          size_t key_len);
/* Folds the contents of @p from into @p into and leaves @p from empty.
 * Returns TDM_OK, TDM_ERR_NOMEM (then nothing moved) or a version-2
 * merge's error (then both keep their contents, what moved moved). */
tdm_err tdm__agg_merge(tdm_winop *op, tdm__win_slot *into, tdm__win_slot *from);
/* Empties the contents (purge or cleanup). */
void tdm__agg_clear(tdm_winop *op, tdm__win_slot *s);
/* Computes the result of non-empty contents into @p ev (value, values,
 * bytes).  Returns TDM_OK, or an error to skip this firing. */
tdm_err tdm__agg_result(tdm_winop *op, tdm__win_slot *s, tdm_event *ev,
                        const char *key, size_t key_len);
/* Frees the scratch buffers of op->res. */
void tdm__agg_free_result(tdm_result_out *r);
/* What a version-2 add sees of a record pushed without a context. */
extern const tdm_agg_ctx tdm__agg_no_ctx;

/* Adds a record's value with a built-in incremental aggregate: the fast
 * path of the operator (no calls, no allocation). */
static inline bool tdm__agg_add_fast(const tdm_aggregate *a, tdm__win_slot *s,
                                     double v)
{
    if (a->type != TDM__AGG_BUILTIN)
        return false;
    bool first = !(s->flags & TDM__W_CONTENTS);
    switch (a->kind) {
    case TDM_AGG_COUNT:
        s->c.num.n = first ? 1 : s->c.num.n + 1;
        break;
    case TDM_AGG_SUM:
    case TDM_AGG_AVG:
        s->c.num.a = first ? v : s->c.num.a + v;
        s->c.num.n = first ? 1 : s->c.num.n + 1;
        break;
    case TDM_AGG_MIN:
        s->c.num.a = (first || v < s->c.num.a) ? v : s->c.num.a;
        break;
    case TDM_AGG_MAX:
        s->c.num.a = (first || v > s->c.num.a) ? v : s->c.num.a;
        break;
    default:
        return false; /* collect */
    }
    s->flags |= TDM__W_CONTENTS;
    return true;
}

/* ---- Merging (merge.c) ---- */

/* Adds window [start, end) of key @p key to the key's session set, merging
 * it with the windows it overlaps or touches (rulebook R5).  On return
 * *slot is the state slot of the resulting window and *created says it is
 * new; *slot is NULL when the resulting window is late (nothing changed).
 * Returns TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__win_merge_add(tdm_winop *op, uint32_t key, tdm_time_ms start,
                           tdm_time_ms end, tdm__win_slot **slot);
/* Finds the state slot whose actual window is [start, end) (merging
 * assigners); NULL when none. */
tdm__win_slot *tdm__win_merge_find(tdm_winop *op, uint32_t key,
                                   tdm_time_ms start, tdm_time_ms end);

/* ---- Operator helpers (winop.c) ---- */

/* Creates the state slot for window [start, end) of @p key under
 * namespace @p ns (a key reference is taken).  NULL on OOM. */
tdm__win_slot *tdm__win_slot_new(tdm_winop *op, uint32_t key, tdm__ns ns,
                                 tdm_time_ms start, tdm_time_ms end);
/* Frees a slot's contents and removes it (drops its key reference). */
void tdm__win_slot_free(tdm_winop *op, tdm__win_slot *s);
/* True when window [., end) is late (event time, cleanup <= watermark). */
static inline bool tdm__win_is_late(const tdm_winop *op, tdm_time_ms end)
{
    return op->event_time && tdm__win_cleanup(op, end) <= op->wm;
}
/* L3: true when a window [., end) that the operator does not hold was
 * closed before a live raise of the lateness (a window it holds is not
 * closed: it was not cleaned up). */
static inline bool tdm__win_closed(const tdm_winop *op, tdm_time_ms end)
{
    return op->event_time && tdm__win_max_ts(op, end) <= op->closed_max;
}
/* Frees a window's state with its trigger's (Flink's clearAllState). */
void tdm__win_clear_all(tdm_winop *op, tdm__win_slot *s);
/* Registers the ctx window's cleanup timer (Flink's
 * registerCleanupTimer).  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__win_register_cleanup(tdm_trigger_ctx *ctx);
/* The lean path's watermark walk (fires and cleans up due windows). */
void tdm__win_lean_watermark(tdm_winop *op, tdm_time_ms wm);
/* L1: sets the lateness of a fresh (or restoring) operator. */
void tdm__winop_lateness_fresh(tdm_winop *op, tdm_time_ms lateness);
/* L6: every window gets its cleanup time at the current lateness (the
 * general path also cleans up those due); after a restore of blobs
 * written under different values.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__winop_lateness_resync(tdm_winop *op);
/* Test hook and restore: makes a fresh operator in the sliced mode
 * (winop_slice.c) keep per-window cells instead.  Returns TDM_OK (also
 * when it was not sliced), or TDM_ERR_STATE after the first input. */
tdm_err tdm__winop_disable_slicing(tdm_winop *op);
/* F5: the data watermark under the operator's input watermark (the
 * runtime's, when a source has a fallback watermark; see
 * runtime/op_fallback.h), and the late records it would have kept on
 * time: those the fallback made late. */
void tdm__winop_set_data_watermark(tdm_winop *op, tdm_time_ms wm);
int64_t tdm__winop_late_by_fallback(const tdm_winop *op);
/* Probe for observability (the runtime's window status): what the
 * operator holds for window [start, end) of key @p key (merging
 * assigners: the merged window with exactly these bounds).  *has_state
 * is 1 when the window holds contents now; *elements the records it
 * holds when the aggregate counts them (count, sum, avg, collect,
 * window functions), else -1.  Read-only; safe from the emit callback. */
void tdm__winop_probe(const tdm_winop *op, const char *key, size_t len,
                      tdm_time_ms start, tdm_time_ms end, int *has_state,
                      int64_t *elements);
/* Two-phase aggregation (the runtime's local phase): adds a partial
 * count part[0] of the operator's built-in count into every window of
 * rec->ts that is not late, as if the records it counts arrived now; a
 * window already past its maxTimestamp fires as for a record.  The
 * record's value and payload are not read (a late partial goes to the
 * late output with its payload).  @p hash is tdm__ws_hash of rec's key
 * bytes (tdm__key_fixed_ws_hash of a fixed-width key).  Borrows @p rec
 * and @p part.  Returns as tdm_winop_push, or TDM_ERR_STATE when the
 * operator is not on the lean path of a built-in count. */
tdm_err tdm__winop_push_partial(tdm_winop *op, int ch, const tdm_record *rec,
                                const double *part, uint64_t hash);
/* A hint before tdm__winop_push_partial of a later row with key @p key:
 * starts fetching the key's home slot in the lean path's key table (its
 * control bytes and entry), so that the push finds it in the cache.
 * Changes nothing; a no-op off the lean path.  Borrows @p key. */
void tdm__winop_prefetch_key(const tdm_winop *op, const char *key, size_t len);
/* tdm__winop_prefetch_key for the key whose tdm__ws_hash is @p hash. */
void tdm__winop_prefetch_hash(const tdm_winop *op, uint64_t hash);
/* Keys with live state (the runtime's stateKeys metric). */
int64_t tdm__winop_keys(const tdm_winop *op);
/* R2.1 (winop.c): a record no window accepted, and late itself, goes to
 * the late output or is counted.  Borrows @p rec and @p key. */
void tdm__win_handle_late(tdm_winop *op, const tdm_record *rec, const char *key,
                          size_t key_len);

/* ---- The lean path's sliced mode (winop_slice.c) ---- */

/* True when an operator with this configuration takes the sliced mode:
 * the lean path (event-time trigger, built-in aggregate) of an
 * event-time sliding count without allowed lateness, whose windows are
 * at least two and at most 64 slices (slice: gcd(size, slide)).
 * Other cases - other aggregates (a sum of slices is not the sum of
 * the records in floating point; min/max and NaN), allowed lateness
 * (late firings per window), every other trigger or assigner - stay on
 * the lean path's per-window cells or on the general path. */
bool tdm__slice_applies(const tdm_winop *op);
/* Sets the sliced mode's fields of a lean operator for which
 * tdm__slice_applies holds. */
void tdm__slice_setup(tdm_winop *op);
/* Adds @p add (1 for a record, a partial count for
 * tdm__winop_push_partial) to the cell of the record's key and slice,
 * making it and listing the key in the windows it is new to; a record
 * whose windows are all late goes to tdm__win_handle_late.  @p h is
 * tdm__ws_hash of rec's key.  Borrows @p rec.  Returns TDM_OK or
 * TDM_ERR_NOMEM (nothing changed). */
tdm_err tdm__slice_push(tdm_winop *op, const tdm_record *rec, double add,
                        uint64_t h);
/* Fires and cleans up every window whose maxTimestamp is <= @p wm (the
 * watermark, already in op->wm), in time order and each window's keys
 * in the order they first came to it, as the lean path does; releases
 * the slices whose last window fired. */
void tdm__slice_watermark(tdm_winop *op, tdm_time_ms wm);
/* Frees what the sliced mode holds outside the window store. */
void tdm__slice_free(tdm_winop *op);
/* The count of key @p kid in window [start, end): the sum of its cells
 * in the window's slices.  False when it has none. */
bool tdm__slice_count(const tdm_winop *op, uint32_t kid, tdm_time_ms start,
                      tdm_time_ms end, double *count);

/* ---- The session mode (winop_session.c) ---- */

/* True when an operator with this configuration takes the session mode:
 * event-time session windows, the event-time trigger, no allowed
 * lateness (any aggregate).  Sessions with other triggers, allowed
 * lateness or processing time stay on the general path. */
bool tdm__sess_applies(const tdm_winop *op);
/* Gives the operator its session store (op->sess).  Returns TDM_OK or
 * TDM_ERR_NOMEM (op->sess stays NULL). */
tdm_err tdm__sess_setup(tdm_winop *op);
/* Frees the session store and gives back the keys' references; sets
 * op->sess to NULL.  No-op without one. */
void tdm__sess_free(tdm_winop *op);
/* Adds a record (with a timestamp) to its key's sessions, merging
 * the ones its window [ts, ts + gap) overlaps or touches; a record whose
 * merged window is late goes to tdm__win_handle_late.  Borrows @p rec.
 * Returns TDM_OK or TDM_ERR_NOMEM (as on the general path, sessions
 * merged before the failure stay merged). */
tdm_err tdm__sess_push(tdm_winop *op, const tdm_record *rec);
/* Fires and removes every session whose maxTimestamp is <=  wm (the
 * watermark, already in op->wm), in (end, creation) order.  An
 * allocation failure is left in op->pending; the sessions concerned
 * fire at a later watermark. */
void tdm__sess_watermark(tdm_winop *op, tdm_time_ms wm);
/* Sessions in state, and the bytes the store holds (keys not counted). */
size_t tdm__sess_count(const tdm_winop *op);
size_t tdm__sess_bytes(const tdm_winop *op);
/* The slot of key @p kid's session [start, end), or NULL.  Read-only. */
tdm__win_slot *tdm__sess_find(const tdm_winop *op, uint32_t kid,
                              tdm_time_ms start, tdm_time_ms end);
/* Calls @p fn with every session's slot (borrowed) and creation
 * sequence, in no particular order (snapshots). */
typedef void (*tdm__sess_each_fn)(void *ud, const tdm__win_slot *s,
                                  uint64_t seq);
void tdm__sess_each(const tdm_winop *op, tdm__sess_each_fn fn, void *ud);
/* Emits a window result from slot @p s as the general path does on a
 * firing (winop.c): pane timing and index, is_update; @p purge says the
 * contents are purged right after.  Updates the slot's panes and flags. */
void tdm__win_emit(tdm_winop *op, tdm__win_slot *s, bool purge);

/* Records the first error raised inside a callback chain. */
static inline void tdm__win_fail(tdm_winop *op, tdm_err e)
{
    if (e != TDM_OK && op->pending == TDM_OK)
        op->pending = e;
}

/* ---- Checkpoints (winop_snap.c; layout in docs/checkpoints.md,
 * "Operator state") ---- */

#define TDM__SNAP_TAG_WINOP UINT64_C(0x4f57)        /* "OW" */
#define TDM__SNAP_TAG_WINOP_GROUP UINT64_C(0x4f47)  /* "OG" */
#define TDM__SNAP_TAG_WINOP_CLOSED UINT64_C(0x4f43) /* "OC" */
#define TDM__SNAP_WINOP_VERSION 1

/* The key group of a key, as the runtime routes it (borrows @p key). */
typedef int (*tdm__key_group_fn)(void *ud, const char *key, size_t len);

/* Stable counting sort of @p n items by key group for snapshots
 * (grp[i] in [0, ng), or -1: left out): @p order gets item indexes,
 * @p first[g] the start of group g in it (first[ng] = the total).
 * Returns false on OOM. */
bool tdm__snap_by_group(const int *grp, size_t n, size_t ng, uint32_t *order,
                        size_t *first);

/* Writes one TDM__SNAP_TAG_WINOP section into @p e: the operator-wide
 * state (configuration fingerprint, watermark, processing time, counters,
 * end flag, the input valve), then one nested TDM__SNAP_TAG_WINOP_GROUP
 * section per key group in [group_lo, group_hi] that has state (windows,
 * contents, accumulators, trigger state, timers of its keys; on the lean
 * path its window-store cells).  Keys whose group is outside the range
 * are left out.  @p key_group may be NULL: every key is in group 0.
 * Called on the owning thread between inputs; allocates scratch arrays
 * proportional to the state (not per record), encodes straight from the
 * operator's tables.  Borrows everything.  Returns TDM_OK,
 * TDM_ERR_INVAL (NULL op/e, group_lo < 0 or > group_hi),
 * TDM_ERR_UNSUPPORTED (a custom aggregate with destroy_acc and no
 * codec), TDM_ERR_NOMEM (scratch or encoder). */
tdm_err tdm__winop_snapshot(const tdm_winop *op, struct tdm__enc *e,
                            tdm__key_group_fn key_group, void *ud, int group_lo,
                            int group_hi);
/* Reads one TDM__SNAP_TAG_WINOP section from @p d into @p op, a freshly
 * created operator with the same configuration (assigner, trigger,
 * aggregate, lateness, late output, lean or not), and takes the key-group
 * sections whose group is in [group_lo, group_hi] (others are skipped,
 * so the caller may hand over whole blobs).  Callable once per old
 * subtask's blob, before any input.  The first call takes the watermark,
 * processing time (the later of it and the clock), counters, end flag
 * and - when the channel counts match - the valve; each later call
 * lowers the watermark to the minimum (the safe merge: no window fires
 * early), adds the counters, and keeps "ended" only if every blob had
 * it; its valve is ignored.  Watermarks at or below the restored one are
 * then ignored, so the valve's restarted output cannot move time back.
 * Order is kept: timers of one time and windows of one interval fire in
 * the original order within one blob; state of later blobs goes after.
 * Returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_STATE (the operator has had
 * input), TDM_ERR_PARSE (bad blob or other configuration: the message,
 * tdm_winop_errmsg, names the offset), TDM_ERR_NOMEM.  After an error
 * the operator is unusable: destroy it. */
tdm_err tdm__winop_restore(tdm_winop *op, struct tdm__dec *d, int group_lo,
                           int group_hi);

#endif /* TDM_WIN_H */
