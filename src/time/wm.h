/* SPDX-License-Identifier: MIT */
/* wm.h - internals shared by the watermark path: wm_strategy.c (strategy
 * and per-partition generator core), wmgen.c (one channel), reader.c (a
 * source reader with several splits).  A generator core is Flink's
 * WatermarkGenerator wrapped in WatermarksWithIdleness: it turns records
 * and periodic calls into calls on a tdm_wm_output, whose owner decides
 * what they mean (de-duplicate and send, or record a split's partial).
 * Also the checkpoint functions of the watermark layer (generator,
 * reader, valve, combiner; layouts in docs/checkpoints.md).
 */
#ifndef TDM_TIME_WM_H
#define TDM_TIME_WM_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"

/* ---- Outputs ---- */

/* What a generator writes to.  The public tdm_wm_output_* functions call
 * these hooks; set_idle(ctx, true) marks idle, (ctx, false) active. */
struct tdm_wm_output {
    void (*emit)(void *ctx, tdm_time_ms wm);
    void (*set_idle)(void *ctx, bool idle);
    void *ctx;
};

/* ---- Pausable activity clocks ----
 * Idleness is measured on an "input activity clock" (Flink 2.x): a clock
 * that stands still while the input is paused by watermark alignment.
 * A pclock reads either a tdm_clock (parent NULL) or another pclock, minus
 * the time it spent paused; a child of a paused parent stands still too. */
typedef struct tdm__pclock {
    tdm_clock *base;                  /* read when parent is NULL */
    const struct tdm__pclock *parent; /* layered clock, or NULL */
    bool paused;
    tdm_time_ms paused_at; /* source reading when paused */
    tdm_time_ms offset;    /* total time spent paused */
} tdm__pclock;

/* Initialises a clock over @p base (when @p parent is NULL) or over
 * @p parent.  Never fails. */
void tdm__pclock_init(tdm__pclock *c, tdm_clock *base,
                      const tdm__pclock *parent);
/* The clock's reading: source time minus paused time. */
tdm_time_ms tdm__pclock_now(const tdm__pclock *c);
/* Stops the clock (no-op if already stopped). */
void tdm__pclock_pause(tdm__pclock *c);
/* Restarts the clock (no-op if running). */
void tdm__pclock_resume(tdm__pclock *c);

/* ---- Strategies ---- */

/* Generator kinds after normalisation: MONOTONOUS becomes BOUNDED with
 * bound 0. */
enum tdm__wm_gen_kind {
    TDM__GEN_NONE = 0,
    TDM__GEN_BOUNDED,
    TDM__GEN_PUNCTUATED,
    TDM__GEN_CUSTOM
};

/* A custom generator's methods and user data, shared by the strategy and
 * every generator made from it (reference counted, atomically, because
 * those handles may live on different threads). */
typedef struct tdm__wm_custom tdm__wm_custom;

/* The layout behind tdm_wm_strategy.  wmgen.c and reader.c read it; only
 * wm_strategy.c writes it. */
struct tdm_wm_strategy {
    enum tdm__wm_gen_kind kind;
    tdm_time_ms bound;        /* BOUNDED, PUNCTUATED */
    tdm_time_ms interval;     /* periodic emission, 0 = off */
    bool emit_on_event;       /* BOUNDED: emit after every record */
    tdm_time_ms idle_timeout; /* 0 = no idleness detection */
    tdm_time_ms fb_lag;       /* fallback watermark: now - fb_lag ... */
    tdm_time_ms fb_interval;  /* ... every fb_interval; 0 = no fallback */
    tdm_timestamp_fn ts_fn;   /* NULL = the record's own timestamp */
    void *ts_ud;
    tdm_marker_fn marker_fn; /* PUNCTUATED */
    void *marker_ud;
    tdm__wm_custom *custom; /* CUSTOM: one reference held */
};

/* Makes BOUNDED strategy @p s emit exactly max - @p delay_ms (>= 0):
 * bound delay - 1, also -1 for delay 0, which tdm_wm_strategy_new
 * refuses (watermark.delay, Flink SQL's WATERMARK ... AS ts - INTERVAL).
 * TDM_OK, or TDM_ERR_INVAL (another kind, a negative delay). */
tdm_err tdm__wm_strategy_set_delay(struct tdm_wm_strategy *s,
                                   tdm_time_ms delay_ms, char *errbuf,
                                   size_t errbuf_size);

/* Copies @p src into @p dst, taking one more reference on a custom
 * generator.  Release with tdm__wm_strategy_release().  Never fails. */
void tdm__wm_strategy_copy(struct tdm_wm_strategy *dst,
                           const struct tdm_wm_strategy *src);
/* Drops what a copy holds (the custom reference).  Accepts a zeroed
 * struct. */
void tdm__wm_strategy_release(struct tdm_wm_strategy *s);

/* Runs the strategy's timestamp assigner (or reads the record's own
 * timestamp), stores the result in the record and returns it. */
static inline tdm_time_ms tdm__wm_assign(const struct tdm_wm_strategy *s,
                                         tdm_record *rec)
{
    if (s->ts_fn)
        rec->ts = s->ts_fn(s->ts_ud, rec);
    return rec->ts;
}

/* ---- Generator core ---- */

/* One partition's generator plus its idleness wrapper. */
typedef struct tdm__wm_core {
    enum tdm__wm_gen_kind kind;
    bool emit_on_event;
    tdm_time_ms bound;
    tdm_time_ms max_ts; /* BOUNDED: highest timestamp seen (see init) */
    tdm_marker_fn marker_fn;
    void *marker_ud;
    tdm__wm_custom *custom; /* one reference held */
    void *state;            /* custom per-partition state, or NULL */
    /* Idleness (WatermarksWithIdleness and its IdlenessTimer). */
    tdm_time_ms idle_timeout; /* 0: no wrapper */
    const tdm__pclock *clock; /* the activity clock */
    uint64_t activity;        /* records seen */
    uint64_t activity_seen;   /* value at the previous check */
    bool countdown;           /* a countdown is running */
    tdm_time_ms countdown_start;
    bool idle_now; /* the wrapper has marked idle */
} tdm__wm_core;

/* Instantiates the generator of @p s for one partition, reading idleness
 * time from @p clock (kept by reference).  Returns TDM_OK or
 * TDM_ERR_NOMEM (custom state); the core is then zeroed and safe to
 * finalise. */
tdm_err tdm__wm_core_init(tdm__wm_core *c, const struct tdm_wm_strategy *s,
                          const tdm__pclock *clock);
/* Releases the core's custom state and reference.  Idempotent. */
void tdm__wm_core_fini(tdm__wm_core *c);
/* The generator's on-event hook for kinds other than periodic BOUNDED. */
void tdm__wm_core_on_event_slow(tdm__wm_core *c, const tdm_record *rec,
                                tdm_wm_output *out);
/* One periodic emission: the idleness check, then (if not idle) the
 * generator's periodic hook, writing to @p out. */
void tdm__wm_core_periodic(tdm__wm_core *c, tdm_wm_output *out);

/* BOUNDED: the watermark for the current maximum, max - bound - 1,
 * saturating at TDM_TIME_MIN. */
static inline tdm_time_ms tdm__wm_core_bounded_value(const tdm__wm_core *c)
{
    return tdm__time_sub_sat(tdm__time_sub_sat(c->max_ts, c->bound), 1);
}

/* Lets the generator see a record whose timestamp (rec->ts, not
 * TDM_TIME_MIN) is assigned.  The periodic bounded case - the per-record
 * hot path - is three compares and at most three stores, with no call. */
static inline void tdm__wm_core_on_event(tdm__wm_core *c, const tdm_record *rec,
                                         tdm_wm_output *out)
{
    /* The idleness wrapper counts activity and clears its flag. */
    c->activity++;
    c->idle_now = false;
    if (c->kind == TDM__GEN_BOUNDED && !c->emit_on_event) {
        if (rec->ts > c->max_ts)
            c->max_ts = rec->ts;
        return;
    }
    tdm__wm_core_on_event_slow(c, rec, out);
}

/* ---- Checkpoints (docs/checkpoints.md, "Watermark layer") ----
 * Each object is one section with a version first.  Snapshots are taken
 * on the owning thread between batches; they allocate nothing but the
 * encoder's buffer.  Restore goes into a fresh object made with the same
 * strategy (and channel counts) and validates everything: bad input is
 * TDM_ERR_PARSE with the decoder's error (offset and reason, see
 * tdm__dec_error) and leaves the object unusable (destroy it).
 * Processing time does not repeat after a restart: periodic schedules
 * and idleness countdowns keep the time they had left / had run, counted
 * from the restore moment.  Custom generators have no way to save their
 * state: their snapshot is TDM_ERR_UNSUPPORTED. */

struct tdm__enc;
struct tdm__dec;

#define TDM__SNAP_TAG_WMGEN UINT64_C(0x5447)    /* "TG" */
#define TDM__SNAP_TAG_READER UINT64_C(0x5452)   /* "TR" */
#define TDM__SNAP_TAG_SPLIT UINT64_C(0x5453)    /* "TS" */
#define TDM__SNAP_TAG_VALVE UINT64_C(0x5456)    /* "TV" */
#define TDM__SNAP_TAG_COMBINER UINT64_C(0x5443) /* "TC" */
#define TDM__SNAP_WM_VERSION 1

/* Makes the first error of a section's @p body the error of its outer
 * decoder @p d (unless d has one), so callers read it from d. */
void tdm__wm_dec_adopt(struct tdm__dec *d, const struct tdm__dec *body);

/* Core fields, no section (wm_strategy.c).  UNSUPPORTED for CUSTOM. */
tdm_err tdm__wm_core_snapshot(const tdm__wm_core *c, struct tdm__enc *e);
tdm_err tdm__wm_core_restore(tdm__wm_core *c, struct tdm__dec *d);

/* One channel's generator alone, and one split of a reader alone
 * (tdm__wmgen_snapshot, tdm__reader_split_snapshot, ...): testhooks.h. */

/* A reader: its combined and emitted watermark, idle and alignment
 * state, schedules, and every split (one nested split section each).
 * Restore adds splits up to the checkpoint's count (splits added later,
 * Kafka); a reader with more splits than the checkpoint is refused. */
tdm_err tdm__reader_snapshot(const tdm_reader *r, struct tdm__enc *e);
tdm_err tdm__reader_restore(tdm_reader *r, struct tdm__dec *d);

/* Restore at another parallelism (docs/checkpoints.md): the splits of
 * several old readers dealt to new readers.  For each old reader's
 * section (as tdm__reader_snapshot wrote it) call
 * tdm__reader_restore_splits on a fresh reader of the same strategy
 * (and alignment settings): @p map(ud, i) gives the local split that
 * old split i becomes in this reader, or -1 when another reader takes
 * it; splits are added up to the highest index given.  Then call
 * tdm__reader_restore_finish once: it merges what the old readers had
 * as a whole (combined watermark, idleness, schedules, alignment) and
 * recomputes it from the splits; see reader.c.  Neither emits
 * anything: the caller announces tdm_reader_watermark() and
 * tdm__reader_output_idle() to consumers whose channel state started
 * afresh.  PARSE (bad input, also a split given twice), NOMEM, INVAL. */
tdm_err tdm__reader_restore_splits(tdm_reader *r, struct tdm__dec *d,
                                   int (*map)(void *ud, int split), void *ud);
tdm_err tdm__reader_restore_finish(tdm_reader *r);
/* The maximum drift of a coordinator from its next announcement on. */
void tdm__align_coord_set_drift(tdm_align_coord *c, tdm_time_ms drift);
/* Splits the reader has, finished ones included. */
int tdm__reader_split_count(const tdm_reader *r);
/* Whether the reader's output is idle (the last status it gave). */
bool tdm__reader_output_idle(const tdm_reader *r);

/* A valve / combiner: per channel (input) watermark and status, the last
 * output.  The channel count must match. */
tdm_err tdm__valve_snapshot(const tdm_valve *v, struct tdm__enc *e);
tdm_err tdm__valve_restore(tdm_valve *v, struct tdm__dec *d);
tdm_err tdm__combiner_snapshot(const tdm_combiner *c, struct tdm__enc *e);
tdm_err tdm__combiner_restore(tdm_combiner *c, struct tdm__dec *d);

#endif /* TDM_TIME_WM_H */
