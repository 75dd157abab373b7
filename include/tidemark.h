/* SPDX-License-Identifier: MIT */
/*
** tidemark.h - the one public interface of libtidemark.
**
** tidemark is an event-time stream processing engine whose semantics follow
** Apache Flink's: watermark generation and merging, windows, triggers,
** allowed lateness, late side outputs and joins.  This header is the whole
** API; nothing under src/ is meant for callers.
**
** ---- Conventions used in every comment below ----
**
** Time.  All times are int64 milliseconds (tdm_time_ms).  TDM_TIME_MIN means
** "no watermark yet" / "no timestamp"; TDM_TIME_MAX means "end of input".
** Arithmetic on times saturates at both ends (tdm_time_add, tdm_time_sub);
** nothing in the library overflows.
**
** Handles.  Every object is an opaque handle created by tdm_X_new...() and
** released by tdm_X_destroy().  Destroying NULL is a harmless no-op.
**
** Errors.  Functions that can fail return tdm_err: TDM_OK (0) or a negative
** TDM_ERR_* code from TDM_ERR_MAP.  tdm_strerror() gives the code's fixed
** message; a message with the detail (which parameter, which record) is on
** the handle (tdm_X_errmsg) or, for constructors that have no handle yet, in
** the caller's errbuf.  The library never calls exit() or abort().
**
** Ownership vocabulary.
**   "borrows"       the pointer must stay valid only for the call.
**   "keeps a reference until X"  the caller keeps the object alive until X.
**   "copies"        the library makes its own copy.
**   "takes ownership"  the library frees it, ALWAYS, even when the call
**                   fails.  The caller must not touch it afterwards.
** Returned const pointers are owned by the library and valid until the next
** call on the same handle unless stated otherwise.
**
** Threads.  A handle is used from one thread at a time.  Callbacks run on the
** thread that called into the library, inside that call.  Different handles
** may be used from different threads.
**
** Outputs.  Operators deliver everything they emit (watermarks, statuses,
** window results, late records, join pairs, alignment signals) through one
** callback, tdm_emit_cb, as a borrowed tdm_event read with accessors.
*/
#ifndef TIDEMARK_H
#define TIDEMARK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(TDM_BUILDING)
#define TDM_API __declspec(dllexport)
#elif defined(__GNUC__)
#define TDM_API __attribute__((visibility("default")))
#else
#define TDM_API
#endif

/* ====================================================================== */
/* Version                                                                 */
/* ====================================================================== */

#define TDM_VERSION "0.1.0"
#define TDM_VERSION_NUMBER 1000 /* major*1000000 + minor*1000 + patch */

/** @brief The library's version string, e.g. "0.1.0" (static storage). */
TDM_API const char *tdm_version(void);
/** @brief The library's TDM_VERSION_NUMBER, to check header and library
 *  agree. */
TDM_API int tdm_version_number(void);

/* ====================================================================== */
/* Errors                                                                  */
/* ====================================================================== */

/* The one table of error codes: name, value, fixed message.  It generates
** the tdm_err enum, tdm_err_name() and tdm_strerror(). */
#define TDM_ERR_MAP(X)                                                         \
    X(INVAL, -1, "invalid argument")                                           \
    X(NOMEM, -2, "out of memory")                                              \
    X(RANGE, -3, "value out of range")                                         \
    X(NO_TIMESTAMP, -4, "record has no timestamp")                             \
    X(STATE, -5, "operation not allowed in the current state")                 \
    X(UNSUPPORTED, -6, "not supported")                                        \
    X(CHANNEL, -7, "channel, side or split index out of range")                \
    X(PARSE, -8, "malformed input")                                            \
    X(IO, -9, "input/output error")                                            \
    X(CALLBACK, -10, "a user callback reported an error")

typedef enum tdm_err {
    TDM_OK = 0,
#define TDM__ERR_ENUM(name, val, msg) TDM_ERR_##name = (val),
    TDM_ERR_MAP(TDM__ERR_ENUM)
#undef TDM__ERR_ENUM
} tdm_err;

/** @brief The fixed message of an error code ("success" for TDM_OK,
 *  "unknown error" for a value not in TDM_ERR_MAP).  Static storage. */
TDM_API const char *tdm_strerror(int err);
/** @brief The symbolic name of an error code, e.g. "TDM_ERR_INVAL".
 *  Static storage; "TDM_ERR_UNKNOWN" for a value not in the table. */
TDM_API const char *tdm_err_name(int err);

/* ====================================================================== */
/* Time                                                                    */
/* ====================================================================== */

typedef int64_t tdm_time_ms;

#define TDM_TIME_MIN INT64_MIN /* no watermark yet; no timestamp */
#define TDM_TIME_MAX INT64_MAX /* end of input */

/** @brief a + b, saturated to [TDM_TIME_MIN, TDM_TIME_MAX]. */
TDM_API tdm_time_ms tdm_time_add(tdm_time_ms a, tdm_time_ms b);
/** @brief a - b, saturated to [TDM_TIME_MIN, TDM_TIME_MAX]. */
TDM_API tdm_time_ms tdm_time_sub(tdm_time_ms a, tdm_time_ms b);

/** Flag of tdm_time_format: always write ".mmm" (without it, only when
 *  the time is not a whole second). */
#define TDM_TIME_FORMAT_MILLIS 1u

/** @brief Writes @p ms as ISO-8601 UTC text ("2024-12-02T10:00:00Z",
 *  "2024-12-02T10:00:00.250Z") into @p buf, always terminated and cut to
 *  @p n bytes.  The one calendar formatter of the library, the server and
 *  the CLI.
 *  @param flags 0 or TDM_TIME_FORMAT_MILLIS.
 *  @returns 1 when calendar text was written; 0, writing nothing,
 *  for TDM_TIME_MIN, TDM_TIME_MAX, a year outside 0000..9999, or @p n of
 *  0: the caller names those ("no watermark yet", "end of input", ...). */
TDM_API int tdm_time_format(tdm_time_ms ms, unsigned flags, char *buf,
                            size_t n);

/* ---- Processing-time clocks ----
** Everything that depends on processing time (periodic watermark emission,
** idleness, processing-time windows and timers, alignment ticks) reads a
** tdm_clock.  Tests inject a manual clock and move it by hand; programs use
** the monotonic clock.  Operators only look at the clock when one of their
** functions is called (for example tdm_winop_advance): nothing runs on its
** own. */
typedef struct tdm_clock tdm_clock;

/** Reads the current processing time for a custom clock. */
typedef tdm_time_ms (*tdm_clock_fn)(void *opaque);

/** @brief Creates a clock that reads CLOCK_MONOTONIC in milliseconds.
 *  @param out  OUT: the new clock, destroy with tdm_clock_destroy().
 *  @returns TDM_OK, TDM_ERR_INVAL (out is NULL), TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_clock_new_monotonic(tdm_clock **out);
/** @brief Creates a manual clock that reads @p start until moved with
 *  tdm_clock_set().  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_clock_new_manual(tdm_time_ms start, tdm_clock **out);
/** @brief Creates a clock that calls @p fn (with @p opaque) to read the
 *  time.  The library keeps @p opaque until tdm_clock_destroy().
 *  @returns TDM_OK, TDM_ERR_INVAL (fn or out NULL), TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_clock_new_custom(tdm_clock_fn fn, void *opaque,
                                     tdm_clock **out);
/** @brief Moves a manual clock to @p now.
 *  @returns TDM_OK; TDM_ERR_STATE if the clock is not manual;
 *  TDM_ERR_RANGE if @p now is earlier than the current reading (processing
 *  time never goes backwards; the clock is unchanged). */
TDM_API tdm_err tdm_clock_set(tdm_clock *clk, tdm_time_ms now);
/** @brief The clock's current reading. */
TDM_API tdm_time_ms tdm_clock_now(const tdm_clock *clk);
/** @brief Destroys a clock.  Operators that keep a reference to it must be
 *  destroyed first. */
TDM_API void tdm_clock_destroy(tdm_clock *clk);

/* ====================================================================== */
/* Records                                                                 */
/* ====================================================================== */

/* A record is what flows through operators: a key (bytes), an event
** timestamp, a numeric value and an optional opaque payload.  The caller
** owns a tdm_record and refills it for each record it pushes, so pushing
** allocates nothing.  Operators that must retain a record (window contents,
** join buffers) copy what they need.
**
** The value is a double: sums and counts are exact up to 2^53. */
typedef struct tdm_record tdm_record;

/** @brief Creates an empty record (key "", timestamp TDM_TIME_MIN, value 0).
 *  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_record_new(tdm_record **out);
/** @brief Sets key, timestamp and value and clears the payload.
 *  Borrows @p key: it must stay valid until the record is set again or
 *  destroyed.  @p key may be NULL when @p key_len is 0. */
TDM_API void tdm_record_set(tdm_record *rec, const char *key, size_t key_len,
                            tdm_time_ms ts, double value);
/** @brief Sets the timestamp alone (TDM_TIME_MIN = no timestamp). */
TDM_API void tdm_record_set_ts(tdm_record *rec, tdm_time_ms ts);
/** @brief Sets an opaque payload; borrows it like the key.  Operators that
 *  retain records copy the payload bytes. */
TDM_API void tdm_record_set_payload(tdm_record *rec, const void *payload,
                                    size_t len);
/** @brief The record's key; *len (if not NULL) receives its length.
 *  Borrowed from the record. */
TDM_API const char *tdm_record_key(const tdm_record *rec, size_t *len);
/** @brief The record's event timestamp (TDM_TIME_MIN: none). */
TDM_API tdm_time_ms tdm_record_ts(const tdm_record *rec);
/** @brief The record's numeric value. */
TDM_API double tdm_record_value(const tdm_record *rec);
/** @brief The record's payload (NULL if none); *len gets its length. */
TDM_API const void *tdm_record_payload(const tdm_record *rec, size_t *len);
/** @brief Destroys a record created with tdm_record_new(). */
TDM_API void tdm_record_destroy(tdm_record *rec);

/* ====================================================================== */
/* Events: what operators emit                                             */
/* ====================================================================== */

typedef struct tdm_event tdm_event;

typedef enum tdm_event_type {
    TDM_EVENT_WATERMARK = 1,   /* tdm_event_time: the watermark */
    TDM_EVENT_STATUS,          /* tdm_event_is_idle: 1 idle, 0 active */
    TDM_EVENT_RESULT,          /* a window result (window operator, window
                                  join): key, window, time, value(s), pane */
    TDM_EVENT_LATE,            /* a record sent to the late side output:
                                  tdm_event_record(ev, 0); tdm_event_side */
    TDM_EVENT_JOIN,            /* a joined pair: tdm_event_record(ev, 0) is
                                  the left record, (ev, 1) the right one;
                                  tdm_event_time the pair's timestamp */
    TDM_EVENT_REPORTED,        /* alignment: the reader reports
                                  tdm_event_time to the coordinator */
    TDM_EVENT_READING_PAUSED,  /* alignment: the reader stops reading */
    TDM_EVENT_READING_RESUMED, /* alignment: the reader reads again */
    TDM_EVENT_SPLIT_PAUSED,    /* alignment: split tdm_event_index paused */
    TDM_EVENT_SPLIT_RESUMED,   /* alignment: split tdm_event_index resumed */
    TDM_EVENT_ANNOUNCE,        /* coordinator: max allowed watermark
                                  tdm_event_time sent to tdm_event_targets */
    TDM_EVENT_DATA_WATERMARK   /* a reader whose fallback watermark drives
                                  (tdm_wm_strategy_set_fallback): its data
                                  watermark rose to tdm_event_time, still
                                  below its output watermark */
} tdm_event_type;

/* Pane timing of a window result, as a downstream that takes updates or
** retractions needs it. */
typedef enum tdm_pane_timing {
    TDM_PANE_EARLY = 0,   /* fired before the watermark reached end - 1 */
    TDM_PANE_ON_TIME = 1, /* the first firing once the watermark reached
                             end - 1 */
    TDM_PANE_LATE = 2     /* any later firing (allowed lateness) */
} tdm_pane_timing;

/** Receives every event an operator emits.  @p ev is borrowed: valid only
 *  during the call.  The callback must not call back into the operator
 *  that emitted the event. */
typedef void (*tdm_emit_cb)(void *opaque, const tdm_event *ev);

/** @brief The event's type. */
TDM_API tdm_event_type tdm_event_get_type(const tdm_event *ev);
/** @brief The event's time: the watermark (WATERMARK), the result
 *  timestamp, i.e. window end - 1 or TDM_TIME_MAX for the global window
 *  (RESULT), the record timestamp (LATE), the pair timestamp max(l, r)
 *  (JOIN), the reported watermark (REPORTED) or the announced maximum
 *  (ANNOUNCE). */
TDM_API tdm_time_ms tdm_event_time(const tdm_event *ev);
/** @brief STATUS: 1 when the stream became idle, 0 when active again. */
TDM_API int tdm_event_is_idle(const tdm_event *ev);
/** @brief RESULT and JOIN: the key (borrowed from the event); *len gets its
 *  length. */
TDM_API const char *tdm_event_key(const tdm_event *ev, size_t *len);
/** @brief RESULT, and JOIN from a window join: the window [*start, *end).
 *  Returns 1 for a time window, 0 for the global window or an interval
 *  join pair (start and end are then not written). */
TDM_API int tdm_event_window(const tdm_event *ev, tdm_time_ms *start,
                             tdm_time_ms *end);
/** @brief RESULT: the aggregate value (count, sum, min, max, avg, or what a
 *  user function set). */
TDM_API double tdm_event_value(const tdm_event *ev);
/** @brief RESULT of a collect aggregate: the window's values, sorted
 *  ascending; *n gets their number.  Borrowed from the event. */
TDM_API const double *tdm_event_values(const tdm_event *ev, size_t *n);
/** @brief RESULT: bytes a user function produced (NULL if none). */
TDM_API const void *tdm_event_bytes(const tdm_event *ev, size_t *len);
/** @brief RESULT: pane timing (see tdm_pane_timing). */
TDM_API tdm_pane_timing tdm_event_pane_timing(const tdm_event *ev);
/** @brief RESULT: pane index, 0 for a window's first firing, counting every
 *  firing of the same window (and key) since its state was created. */
TDM_API int64_t tdm_event_pane_index(const tdm_event *ev);
/** @brief RESULT: 1 when this firing repeats the window after an earlier
 *  firing whose contents were kept (an update of an earlier result),
 *  0 otherwise. */
TDM_API int tdm_event_is_update(const tdm_event *ev);
/** @brief LATE: record 0; JOIN: record 0 (left) or 1 (right).  NULL for
 *  other events.  Borrowed from the event. */
TDM_API const tdm_record *tdm_event_record(const tdm_event *ev, int which);
/** @brief LATE from a join: 0 left, 1 right; -1 otherwise. */
TDM_API int tdm_event_side(const tdm_event *ev);
/** @brief SPLIT_PAUSED / SPLIT_RESUMED: the split index; -1 otherwise. */
TDM_API int tdm_event_index(const tdm_event *ev);
/** @brief ANNOUNCE: the subtasks the announcement goes to, ascending;
 *  *n gets their number.  Borrowed from the event. */
TDM_API const int *tdm_event_targets(const tdm_event *ev, size_t *n);

/* ====================================================================== */
/* Watermark strategies and generators                                     */
/* ====================================================================== */

/* A strategy describes how one stream partition (a channel, a split)
** turns record timestamps into watermarks.  It is a description only; a
** tdm_wmgen (one channel) or a tdm_reader (several splits) instantiates it.
**
**   bounded      watermark = max timestamp seen - bound - 1, initially
**                TDM_TIME_MIN; emitted periodically (default) or on event.
**   monotonous   bounded with bound 0.
**   punctuated   on a marker record (see tdm_wm_strategy_set_marker) the
**                watermark marker.ts - bound is emitted at once.
**   none         no watermarks (processing-time pipelines); only end of
**                input sends TDM_TIME_MAX.
**   custom       user callbacks (tdm_wm_strategy_new_custom).
**
** A watermark goes out only when it is higher than the last one sent; a
** channel that was idle announces ACTIVE just before its next advancing
** watermark.  Periodic emission happens when the clock reaches the next
** emission time, which is re-armed at "now + interval" after each emission
** (Flink's chain, not a fixed grid). */
typedef struct tdm_wm_strategy tdm_wm_strategy;

typedef enum tdm_wm_kind {
    TDM_WM_NONE = 0,
    TDM_WM_BOUNDED = 1,
    TDM_WM_MONOTONOUS = 2,
    TDM_WM_PUNCTUATED = 3
} tdm_wm_kind;

#define TDM_WM_DEFAULT_INTERVAL_MS 200

/** @brief Creates a built-in strategy.
 *  @param kind  one of tdm_wm_kind.
 *  @param bound_ms  the out-of-orderness bound (BOUNDED, PUNCTUATED);
 *         ignored for the others.  Must be >= 0.
 *  @param out  OUT: the strategy, destroy with tdm_wm_strategy_destroy().
 *  @param errbuf  receives a message naming the bad parameter (may be
 *         NULL); @p errbuf_size its size.
 *  @returns TDM_OK, TDM_ERR_INVAL (unknown kind, negative bound, NULL out),
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_wm_strategy_new(tdm_wm_kind kind, tdm_time_ms bound_ms,
                                    tdm_wm_strategy **out, char *errbuf,
                                    size_t errbuf_size);

/* ---- User-defined generators ----
** A custom generator has per-channel state of state_size bytes (zeroed at
** creation) and two hooks, as Flink's WatermarkGenerator: on_event for
** every record, on_periodic_emit at every periodic emission.  Both write
** through the tdm_wm_output they are given: emit a watermark, mark the
** channel idle, or mark it active.  The output drops watermarks that do not
** advance, exactly as for built-in generators. */
typedef struct tdm_wm_output tdm_wm_output;

/** @brief Emits watermark @p wm (dropped unless higher than the last). */
TDM_API void tdm_wm_output_emit(tdm_wm_output *out, tdm_time_ms wm);
/** @brief Marks the channel idle (an IDLE status goes out once). */
TDM_API void tdm_wm_output_mark_idle(tdm_wm_output *out);
/** @brief Marks the channel active again (an ACTIVE status goes out if it
 *  was idle). */
TDM_API void tdm_wm_output_mark_active(tdm_wm_output *out);

typedef struct tdm_wm_generator_methods {
    int version;       /* 1 */
    size_t state_size; /* bytes of per-channel state, zeroed at creation */
    /* Called for every record after its timestamp is assigned.  May be
    ** NULL.  @p state is the channel's state, @p rec borrowed. */
    void (*on_event)(void *ud, void *state, const tdm_record *rec,
                     tdm_wm_output *out);
    /* Called at every periodic emission.  May be NULL. */
    void (*on_periodic_emit)(void *ud, void *state, tdm_wm_output *out);
    /* Called when the strategy is destroyed, to release @p ud.  May be
    ** NULL. */
    void (*destroy)(void *ud);
} tdm_wm_generator_methods;

/** @brief Creates a strategy whose generator is user code.
 *  Copies @p methods; keeps @p ud until the strategy and every generator
 *  made from it are destroyed (then methods->destroy(ud) runs once).
 *  @returns TDM_OK, TDM_ERR_INVAL (NULL methods/out, version != 1),
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_wm_strategy_new_custom(
    const tdm_wm_generator_methods *methods, void *ud, tdm_wm_strategy **out,
    char *errbuf, size_t errbuf_size);

/** @brief Sets the periodic emission interval (default 200 ms).  0 turns
 *  periodic emission off (and with it idleness detection).
 *  @returns TDM_OK, TDM_ERR_INVAL (negative). */
TDM_API tdm_err tdm_wm_strategy_set_interval(tdm_wm_strategy *s,
                                             tdm_time_ms interval_ms,
                                             char *errbuf, size_t errbuf_size);
/** @brief For BOUNDED and MONOTONOUS: when @p on_event is 1 the generator
 *  emits after every record instead of periodically (default 0). */
TDM_API tdm_err tdm_wm_strategy_set_emit_on_event(tdm_wm_strategy *s,
                                                  int on_event);
/** @brief Wraps the generator with idleness detection (Flink's
 *  withIdleness): judged only at periodic emissions; the countdown starts
 *  at the first emission that saw no record since the previous one; the
 *  channel is idle at the first emission where strictly more than
 *  @p timeout_ms passed since the countdown started.
 *  @returns TDM_OK, TDM_ERR_INVAL (timeout <= 0). */
TDM_API tdm_err tdm_wm_strategy_set_idle_timeout(tdm_wm_strategy *s,
                                                 tdm_time_ms timeout_ms,
                                                 char *errbuf,
                                                 size_t errbuf_size);

/** @brief A processing-time fallback watermark ("double insurance"): every
 *  @p interval_ms of the reader's clock, a reader's output watermark
 *  becomes max(its data watermark, now - @p lag_ms), never moving back,
 *  so that a source whose data stalls (a silent partition, a producer
 *  whose clock runs behind) still advances.  The data takes the
 *  watermark back once its own combined value reaches the output.  An
 *  idle output is left alone (idleness already stops holding others
 *  back).  Only a reader (tdm_reader_new) runs it; tdm_wmgen_new refuses
 *  a strategy that has one.  Results then depend on wall-clock time.
 *  See docs/live-settings.md, "The fallback watermark".
 *  @returns TDM_OK, TDM_ERR_INVAL (NULL, lag < 0, interval <= 0). */
TDM_API tdm_err tdm_wm_strategy_set_fallback(tdm_wm_strategy *s,
                                             tdm_time_ms lag_ms,
                                             tdm_time_ms interval_ms,
                                             char *errbuf, size_t errbuf_size);

/** Extracts a record's event timestamp.  Return TDM_TIME_MIN when the
 *  record has none. */
typedef tdm_time_ms (*tdm_timestamp_fn)(void *ud, const tdm_record *rec);
/** @brief Sets the timestamp assigner (default: the record's own
 *  timestamp).  Keeps a reference to @p ud until the strategy and every
 *  generator and reader made from it are destroyed. */
TDM_API tdm_err tdm_wm_strategy_set_timestamp_assigner(tdm_wm_strategy *s,
                                                       tdm_timestamp_fn fn,
                                                       void *ud);
/** Says whether a record is a punctuation marker: non-zero for yes. */
typedef int (*tdm_marker_fn)(void *ud, const tdm_record *rec);
/** @brief For PUNCTUATED: the predicate that recognises marker records.
 *  Keeps a reference to @p ud until the strategy and every generator and
 *  reader made from it are destroyed.  Without one, no record is a
 *  marker. */
TDM_API tdm_err tdm_wm_strategy_set_marker(tdm_wm_strategy *s, tdm_marker_fn fn,
                                           void *ud);
/** @brief Destroys a strategy.  Generators made from it stay valid. */
TDM_API void tdm_wm_strategy_destroy(tdm_wm_strategy *s);

/* ---- One channel's generator ----
** A tdm_wmgen is what Flink runs in a timestamps/watermarks operator for
** one upstream partition: timestamp assigner, generator, idleness wrapper
** and the de-duplicating emitter.  It emits WATERMARK and STATUS events.
**
** Per record, the caller does:
**   ts = tdm_wmgen_assign(gen, rec);   -- timestamp (also set on rec)
**   ...forward the record downstream...
**   tdm_wmgen_on_event(gen, rec);      -- may emit an on-event watermark
** so that an on-event watermark follows the record that caused it. */
typedef struct tdm_wmgen tdm_wmgen;

/** @brief Creates a generator from @p s (copies its settings; keeps the
 *  custom generator's ud alive).  Keeps a reference to @p clk until
 *  tdm_wmgen_destroy; the first periodic emission is due at
 *  now + interval.  Emits through @p emit with @p opaque.
 *  @returns TDM_OK, TDM_ERR_INVAL (NULL s, clk, emit or out; a strategy
 *  with a fallback watermark, which only a reader runs), TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_wmgen_new(const tdm_wm_strategy *s, tdm_clock *clk,
                              tdm_emit_cb emit, void *opaque, tdm_wmgen **out);
/** @brief Runs the timestamp assigner on @p rec, stores the result in the
 *  record and returns it (TDM_TIME_MIN: the record has no timestamp). */
TDM_API tdm_time_ms tdm_wmgen_assign(tdm_wmgen *gen, tdm_record *rec);
/** @brief Lets the generator see a record (after tdm_wmgen_assign and after
 *  the record was forwarded).  Borrows @p rec.
 *  @returns TDM_OK; TDM_ERR_NO_TIMESTAMP when the record's timestamp is
 *  TDM_TIME_MIN (the generator ignores it); TDM_ERR_STATE after end. */
TDM_API tdm_err tdm_wmgen_on_event(tdm_wmgen *gen, const tdm_record *rec);
/** @brief Reads the clock and, if the next periodic emission is due, runs
 *  it once (idleness check, then the generator's periodic hook) and
 *  re-arms at now + interval.  @returns TDM_OK, TDM_ERR_STATE after end. */
TDM_API tdm_err tdm_wmgen_advance(tdm_wmgen *gen);
/** @brief End of input: ACTIVE if the channel was idle, then the watermark
 *  TDM_TIME_MAX.  No pending periodic value is flushed first.  Further
 *  calls return TDM_ERR_STATE. */
TDM_API tdm_err tdm_wmgen_end(tdm_wmgen *gen);
/** @brief The last watermark this generator sent (TDM_TIME_MIN if none). */
TDM_API tdm_time_ms tdm_wmgen_watermark(const tdm_wmgen *gen);
/** @brief 1 if the channel is currently announced idle. */
TDM_API int tdm_wmgen_is_idle(const tdm_wmgen *gen);
/** @brief Destroys a generator. */
TDM_API void tdm_wmgen_destroy(tdm_wmgen *gen);

/* ====================================================================== */
/* Merging channels: the valve and the input combiner                      */
/* ====================================================================== */

/* A tdm_valve merges the channels of one logical input of a task (Flink's
** StatusWatermarkValve): its output watermark is the minimum over active,
** aligned channels and never moves backwards; an idle channel leaves the
** minimum; when the last active channel goes idle the maximum over all
** channels is flushed, then IDLE; a channel that comes back below the
** output is "unaligned" and stays out of the minimum until it catches up.
** It emits WATERMARK and STATUS events. */
typedef struct tdm_valve tdm_valve;

/** @brief Creates a valve over @p n_channels channels (>= 1), all active at
 *  TDM_TIME_MIN.  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_valve_new(int n_channels, tdm_emit_cb emit, void *opaque,
                              tdm_valve **out);
/** @brief A watermark arrives on channel @p ch.  Ignored (TDM_OK) when the
 *  channel or the valve is idle or the value does not advance the channel.
 *  @returns TDM_OK, TDM_ERR_CHANNEL. */
TDM_API tdm_err tdm_valve_watermark(tdm_valve *v, int ch, tdm_time_ms wm);
/** @brief Channel @p ch declares itself idle (@p idle = 1) or active
 *  (@p idle = 0); repeats are ignored.  @returns TDM_OK, TDM_ERR_CHANNEL. */
TDM_API tdm_err tdm_valve_status(tdm_valve *v, int ch, int idle);
/** @brief End of input on every channel at once: the output goes straight
 *  to TDM_TIME_MAX (ACTIVE first if the valve was idle). */
TDM_API tdm_err tdm_valve_end(tdm_valve *v);
/** @brief The valve's last output watermark. */
TDM_API tdm_time_ms tdm_valve_watermark_out(const tdm_valve *v);
/** @brief The last watermark seen on channel @p ch (TDM_TIME_MIN for a bad
 *  index). */
TDM_API tdm_time_ms tdm_valve_channel_watermark(const tdm_valve *v, int ch);
/** @brief 1 if channel @p ch is idle, 0 if active, -1 for a bad index. */
TDM_API int tdm_valve_channel_is_idle(const tdm_valve *v, int ch);
/** @brief 1 if the whole valve is idle. */
TDM_API int tdm_valve_is_idle(const tdm_valve *v);
/** @brief Destroys a valve. */
TDM_API void tdm_valve_destroy(tdm_valve *v);

/* A tdm_combiner merges the inputs of a multi-input operator (Flink's
** IndexedCombinedWatermarkStatus): the output is the minimum over non-idle
** inputs, emitted when it rises; there is no "aligned" notion, so an input
** that returns with a low watermark holds further progress (but never pulls
** the output back); a watermark on an input makes it active; when all
** inputs are idle the maximum over inputs is flushed, then IDLE. */
typedef struct tdm_combiner tdm_combiner;

/** @brief Creates a combiner over @p n_inputs inputs (>= 1).
 *  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_combiner_new(int n_inputs, tdm_emit_cb emit, void *opaque,
                                 tdm_combiner **out);
/** @brief Input @p in has watermark @p wm (already merged by its valve). */
TDM_API tdm_err tdm_combiner_watermark(tdm_combiner *c, int in, tdm_time_ms wm);
/** @brief Input @p in is idle (1) or active (0). */
TDM_API tdm_err tdm_combiner_status(tdm_combiner *c, int in, int idle);
/** @brief The combiner's last output watermark. */
TDM_API tdm_time_ms tdm_combiner_watermark_out(const tdm_combiner *c);
/** @brief Destroys a combiner. */
TDM_API void tdm_combiner_destroy(tdm_combiner *c);

/* ====================================================================== */
/* Source readers with several splits, and watermark alignment             */
/* ====================================================================== */

/* A tdm_reader is one source reader that reads several splits (for
** example Kafka partitions), each with its own generator made from one
** strategy.  Per Flink's WatermarkOutputMultiplexer:
**   - on-event watermarks and the reader's own tdm_reader_split_watermark /
**     _idle / _active calls are "immediate": they recombine at once (a
**     watermark only when it raises the split above the combined value);
**   - periodic emissions are "deferred": at a tick every split's generator
**     emits first, then the reader combines once;
**   - the output is the minimum over non-idle splits, emitted only when it
**     rises; when every split is idle the maximum over all splits is
**     flushed first, then IDLE;
**   - a finished split stops counting, without an immediate recombine.
** With alignment on (tdm_reader_set_alignment) the reader reports its last
** emitted watermark every update interval (REPORTED; TDM_TIME_MAX while
** idle), and pauses itself and any split whose watermark is strictly above
** the coordinator's announced maximum. */
typedef struct tdm_reader tdm_reader;

/** @brief Creates a reader with @p n_splits splits (>= 0; more can be added
 *  with tdm_reader_add_split), each with a generator made from @p s
 *  (copied).  Keeps a reference to @p clk until destroyed.
 *  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_reader_new(int n_splits, const tdm_wm_strategy *s,
                               tdm_clock *clk, tdm_emit_cb emit, void *opaque,
                               tdm_reader **out);
/** @brief Adds a split; *split_out receives its index.  A new split starts
 *  at TDM_TIME_MIN but cannot pull the output back.
 *  @returns TDM_OK, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_reader_add_split(tdm_reader *r, int *split_out);
/** @brief Live settings (docs/live-settings.md): gives every split's
 *  generator, and splits added later, a new out-of-orderness bound
 *  (>= 0; bounded and punctuated strategies).  The watermark never goes
 *  back: a split's watermark only rises, so a higher bound holds it until
 *  max - bound - 1 passes it; a lower one takes effect at the next
 *  emission (tdm_reader_advance) or, on-event, the next record.
 *  @returns TDM_OK, TDM_ERR_INVAL (NULL, negative). */
TDM_API tdm_err tdm_reader_set_bound(tdm_reader *r, tdm_time_ms bound_ms);
/** @brief Live settings: a new idle timeout for every split (0 turns
 *  idleness off; a silent split then holds the watermark again from the
 *  next emission).  A split's countdown starts at the next periodic check.
 *  @returns TDM_OK, TDM_ERR_INVAL (NULL, negative). */
TDM_API tdm_err tdm_reader_set_idle_timeout(tdm_reader *r,
                                            tdm_time_ms timeout_ms);
/** @brief Turns alignment on: the reader reports every @p update_interval_ms
 *  (> 0) and obeys announcements; @p max_drift_ms (>= 0) is informational
 *  here (the coordinator applies it).
 *  @returns TDM_OK, TDM_ERR_INVAL. */
TDM_API tdm_err tdm_reader_set_alignment(tdm_reader *r,
                                         tdm_time_ms max_drift_ms,
                                         tdm_time_ms update_interval_ms,
                                         char *errbuf, size_t errbuf_size);
/** @brief A record read from split @p split: assigns its timestamp (set on
 *  @p rec) and runs the split generator's on-event hook (immediate output).
 *  The caller forwards the record before this call.
 *  @returns TDM_OK, TDM_ERR_CHANNEL, TDM_ERR_NO_TIMESTAMP. */
TDM_API tdm_err tdm_reader_record(tdm_reader *r, int split, tdm_record *rec);
/** @brief The reader emits watermark @p wm for split @p split itself
 *  (immediate).  @returns TDM_OK, TDM_ERR_CHANNEL. */
TDM_API tdm_err tdm_reader_split_watermark(tdm_reader *r, int split,
                                           tdm_time_ms wm);
/** @brief The reader marks split @p split idle (1) or active (0)
 *  (immediate).  @returns TDM_OK, TDM_ERR_CHANNEL. */
TDM_API tdm_err tdm_reader_split_status(tdm_reader *r, int split, int idle);
/** @brief Split @p split has finished and stops counting (no recombine
 *  until the next tick or immediate update).
 *  @returns TDM_OK, TDM_ERR_CHANNEL. */
TDM_API tdm_err tdm_reader_split_finished(tdm_reader *r, int split);
/** @brief Reads the clock; runs a periodic emission tick if due (every
 *  split's generator, then one combine) and an alignment report if due. */
TDM_API tdm_err tdm_reader_advance(tdm_reader *r);
/** @brief The coordinator announces the maximum allowed watermark.  The
 *  reader pauses (READING_PAUSED) when its last emitted watermark is
 *  strictly above it and resumes otherwise; likewise each split.
 *  @returns TDM_OK, TDM_ERR_STATE (alignment off). */
TDM_API tdm_err tdm_reader_announce(tdm_reader *r, tdm_time_ms max_wm);
/** @brief End of input: every split reaches TDM_TIME_MAX; the reader emits
 *  TDM_TIME_MAX once (ACTIVE first if it was idle). */
TDM_API tdm_err tdm_reader_end(tdm_reader *r);
/** @brief 1 if alignment paused the reader. */
TDM_API int tdm_reader_is_paused(const tdm_reader *r);
/** @brief 1 if alignment paused split @p split (0 otherwise, -1 bad index). */
TDM_API int tdm_reader_split_is_paused(const tdm_reader *r, int split);
/** @brief 1 if split @p split is idle now (left out of the minimum: its
 *  generator saw no data for the idle timeout, or tdm_reader_split_status
 *  said so); 0 otherwise, -1 bad index. */
TDM_API int tdm_reader_split_is_idle(const tdm_reader *r, int split);
/** @brief The reader's last emitted watermark. */
TDM_API tdm_time_ms tdm_reader_watermark(const tdm_reader *r);
/** @brief The reader's data watermark: what its splits' watermarks combine
 *  to, without the fallback (tdm_wm_strategy_set_fallback).  Equals
 *  tdm_reader_watermark() when no fallback drives the output. */
TDM_API tdm_time_ms tdm_reader_data_watermark(const tdm_reader *r);
/** @brief 1 when the fallback watermark drives the reader's output (it is
 *  above the data watermark), 0 when the data does, -1 for NULL. */
TDM_API int tdm_reader_fallback_driving(const tdm_reader *r);
/** @brief Milliseconds of the reader's clock during which the fallback
 *  drove the output: in total (@p total, may be NULL) and in the current
 *  stretch (the return value; 0 when the data drives). */
TDM_API tdm_time_ms tdm_reader_fallback_time(const tdm_reader *r,
                                             tdm_time_ms *total);
/** @brief Split @p split's current watermark (TDM_TIME_MIN if bad index). */
TDM_API tdm_time_ms tdm_reader_split_watermark_get(const tdm_reader *r,
                                                   int split);
/** @brief Destroys a reader. */
TDM_API void tdm_reader_destroy(tdm_reader *r);

/* The alignment coordinator (Flink's SourceCoordinator for one alignment
** group).  Each subtask's latest report replaces its previous one; every
** update interval it announces min(reports) + max_drift (saturated) to
** every subtask that has reported, as ANNOUNCE events.  Subtasks that never
** reported are neither in the minimum nor told; with no report at all,
** nothing is announced. */
typedef struct tdm_align_coord tdm_align_coord;

/** @brief Creates a coordinator for @p n_subtasks subtasks.  Keeps a
 *  reference to @p clk; the first announcement is due at
 *  now + update_interval.
 *  @returns TDM_OK, TDM_ERR_INVAL (n < 1, drift < 0, interval <= 0),
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_align_coord_new(int n_subtasks, tdm_time_ms max_drift_ms,
                                    tdm_time_ms update_interval_ms,
                                    tdm_clock *clk, tdm_emit_cb emit,
                                    void *opaque, tdm_align_coord **out,
                                    char *errbuf, size_t errbuf_size);
/** @brief Subtask @p subtask reports watermark @p wm.
 *  @returns TDM_OK, TDM_ERR_CHANNEL. */
TDM_API tdm_err tdm_align_coord_report(tdm_align_coord *c, int subtask,
                                       tdm_time_ms wm);
/** @brief Reads the clock and announces if an update is due. */
TDM_API tdm_err tdm_align_coord_advance(tdm_align_coord *c);
/** @brief Destroys a coordinator. */
TDM_API void tdm_align_coord_destroy(tdm_align_coord *c);

/* ====================================================================== */
/* Windows: assigners, triggers, aggregates                                */
/* ====================================================================== */

/* Windows are half-open [start, end); a window's maxTimestamp is end - 1
** and every firing decision and result timestamp uses it.  Window start for
** a timestamp is offset + floor((ts - offset) / size) * size, also for
** negative timestamps. */
typedef struct tdm_assigner tdm_assigner;

/** @brief Tumbling windows of @p size_ms (> 0) shifted by @p offset_ms
 *  (|offset| < size).  @returns TDM_OK, TDM_ERR_INVAL (message names the
 *  parameter), TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_assigner_new_tumbling(tdm_time_ms size_ms,
                                          tdm_time_ms offset_ms,
                                          tdm_assigner **out, char *errbuf,
                                          size_t errbuf_size);
/** @brief Sliding windows of @p size_ms every @p slide_ms, offset applied
 *  modulo the slide (size > 0, slide > 0, |offset| < slide,
 *  size / slide <= 10,000,000).  A record falls into every window
 *  [s, s + size) with s = its last start, minus k slides, while
 *  s > ts - size.  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_assigner_new_sliding(tdm_time_ms size_ms,
                                         tdm_time_ms slide_ms,
                                         tdm_time_ms offset_ms,
                                         tdm_assigner **out, char *errbuf,
                                         size_t errbuf_size);
/** @brief Cumulate windows (Flink's CUMULATE): max windows of @p size_ms
 *  shifted by @p offset_ms, aligned as tumbling windows, each reported
 *  as the windows [S, S + step), [S, S + 2 step), ... [S, S + size) of
 *  its start S (size > 0, step > 0, size an integral multiple of step,
 *  |offset| < size, size / step <= 10,000,000).  A record of time ts
 *  falls into every one of them that ends after ts, earliest end first;
 *  all share the start S.  EXPERIMENTAL.
 *  @returns TDM_OK, TDM_ERR_INVAL (message names the parameter),
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_assigner_new_cumulate(tdm_time_ms size_ms,
                                          tdm_time_ms step_ms,
                                          tdm_time_ms offset_ms,
                                          tdm_assigner **out, char *errbuf,
                                          size_t errbuf_size);
/** @brief Session windows with gap @p gap_ms (> 0): each record opens
 *  [ts, ts + gap); windows of a key that overlap or touch merge.
 *  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_assigner_new_session(tdm_time_ms gap_ms, tdm_assigner **out,
                                         char *errbuf, size_t errbuf_size);
/** @brief The global window: one window per key, maxTimestamp TDM_TIME_MAX,
 *  never late, never cleaned up.  Its default trigger never fires.
 *  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_assigner_new_global(tdm_assigner **out);
/** @brief Makes a tumbling, sliding, cumulate or session assigner use
 *  processing time (the operator's clock) instead of record timestamps.
 *  Processing-time windows are never late and are cleaned up at end - 1
 *  in processing time.
 *  @returns TDM_OK, TDM_ERR_INVAL (global assigner). */
TDM_API tdm_err tdm_assigner_set_processing_time(tdm_assigner *a);
/** @brief Destroys an assigner. */
TDM_API void tdm_assigner_destroy(tdm_assigner *a);

/* A trigger decides when a window fires.  Built-in triggers follow
** Flink's: event time (fires when the watermark reaches end - 1; a late
** record accepted within allowed lateness fires again at once), processing
** time, count (fires every N records, never on time), continuous event time
** (early firings on an epoch-aligned interval, then the final one),
** purging (wraps another trigger and purges after each firing), and never
** (the global window's default). */
typedef struct tdm_trigger tdm_trigger;

typedef enum tdm_trigger_result {
    TDM_TRIGGER_CONTINUE = 0,
    TDM_TRIGGER_FIRE = 1,
    TDM_TRIGGER_PURGE = 2,
    TDM_TRIGGER_FIRE_AND_PURGE = 3 /* FIRE | PURGE */
} tdm_trigger_result;

/** @brief Event-time trigger.  @returns TDM_OK, TDM_ERR_INVAL, NOMEM. */
TDM_API tdm_err tdm_trigger_new_event_time(tdm_trigger **out);
/** @brief Processing-time trigger. */
TDM_API tdm_err tdm_trigger_new_processing_time(tdm_trigger **out);
/** @brief Count trigger: fires (without purging) each time @p count (> 0)
 *  records have arrived since the last firing.  @returns TDM_OK,
 *  TDM_ERR_INVAL (message names "count"), TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_trigger_new_count(int64_t count, tdm_trigger **out,
                                      char *errbuf, size_t errbuf_size);
/** @brief Continuous event-time trigger with interval @p interval_ms (> 0).
 *  On a global window it fires at most once at end of input (Flink would
 *  loop until overflow there). */
TDM_API tdm_err tdm_trigger_new_continuous_event_time(tdm_time_ms interval_ms,
                                                      tdm_trigger **out,
                                                      char *errbuf,
                                                      size_t errbuf_size);
/** @brief Purging trigger around @p inner: every FIRE becomes
 *  FIRE_AND_PURGE.  Takes ownership of @p inner. */
TDM_API tdm_err tdm_trigger_new_purging(tdm_trigger *inner, tdm_trigger **out);
/** @brief A trigger that never fires (global windows' default). */
TDM_API tdm_err tdm_trigger_new_never(tdm_trigger **out);

/* ---- User-defined triggers ----
** The hooks get a tdm_trigger_ctx for the window at hand, valid only
** during the call.  Per-window trigger state is state_size bytes, zeroed
** when the window is created and freed when it is cleaned up. */
typedef struct tdm_trigger_ctx tdm_trigger_ctx;

typedef struct tdm_trigger_methods {
    int version;       /* 1 */
    size_t state_size; /* bytes of per-window trigger state */
    /* A record was added to the window.  Required. */
    tdm_trigger_result (*on_element)(void *ud, tdm_trigger_ctx *ctx,
                                     const tdm_record *rec);
    /* An event-time timer this trigger registered fired at @p t. */
    tdm_trigger_result (*on_event_time)(void *ud, tdm_trigger_ctx *ctx,
                                        tdm_time_ms t);
    /* A processing-time timer this trigger registered fired at @p t. */
    tdm_trigger_result (*on_processing_time)(void *ud, tdm_trigger_ctx *ctx,
                                             tdm_time_ms t);
    /* Windows merged (session windows): ctx is the merged window, whose
    ** state holds the state of the window kept as storage; @p merged[i]
    ** (n of them) are the states of the other merged windows.  NULL means
    ** the trigger cannot merge (then it must not be used with sessions). */
    void (*on_merge)(void *ud, tdm_trigger_ctx *ctx, const void *const *merged,
                     size_t n);
    /* The window is being purged from state: delete timers.  May be NULL. */
    void (*clear)(void *ud, tdm_trigger_ctx *ctx);
    /* Releases @p ud when the trigger is destroyed.  May be NULL. */
    void (*destroy)(void *ud);
} tdm_trigger_methods;

/** @brief Creates a trigger from user callbacks.  Copies @p methods; keeps
 *  @p ud until destroyed.  @returns TDM_OK, TDM_ERR_INVAL (NULL
 *  on_element, version != 1), TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_trigger_new_custom(const tdm_trigger_methods *methods,
                                       void *ud, tdm_trigger **out,
                                       char *errbuf, size_t errbuf_size);
/** @brief Destroys a trigger not handed to an operator. */
TDM_API void tdm_trigger_destroy(tdm_trigger *t);

/** @brief The window's start (TDM_TIME_MIN for the global window). */
TDM_API tdm_time_ms tdm_trigger_ctx_window_start(const tdm_trigger_ctx *ctx);
/** @brief The window's end (TDM_TIME_MAX for the global window). */
TDM_API tdm_time_ms tdm_trigger_ctx_window_end(const tdm_trigger_ctx *ctx);
/** @brief The window's maxTimestamp: end - 1, TDM_TIME_MAX for global. */
TDM_API tdm_time_ms tdm_trigger_ctx_max_timestamp(const tdm_trigger_ctx *ctx);
/** @brief The operator's current watermark. */
TDM_API tdm_time_ms tdm_trigger_ctx_watermark(const tdm_trigger_ctx *ctx);
/** @brief The operator's current processing time. */
TDM_API tdm_time_ms tdm_trigger_ctx_proctime(const tdm_trigger_ctx *ctx);
/** @brief The window's trigger state (state_size bytes; NULL if 0). */
TDM_API void *tdm_trigger_ctx_state(tdm_trigger_ctx *ctx);
/** @brief Registers an event-time timer at @p t for this key and window
 *  (idempotent).  @returns TDM_OK, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_trigger_ctx_register_event_timer(tdm_trigger_ctx *ctx,
                                                     tdm_time_ms t);
/** @brief Deletes the event-time timer at @p t (no-op if absent). */
TDM_API void tdm_trigger_ctx_delete_event_timer(tdm_trigger_ctx *ctx,
                                                tdm_time_ms t);
/** @brief Registers a processing-time timer at @p t (idempotent). */
TDM_API tdm_err tdm_trigger_ctx_register_proc_timer(tdm_trigger_ctx *ctx,
                                                    tdm_time_ms t);
/** @brief Deletes the processing-time timer at @p t (no-op if absent). */
TDM_API void tdm_trigger_ctx_delete_proc_timer(tdm_trigger_ctx *ctx,
                                               tdm_time_ms t);

/* An aggregate computes a window's result.  Built-ins are incremental
** (count, sum, min, max, avg: O(1) state per window) except collect, which
** keeps every value.  A user aggregate supplies create/add/merge/result;
** a full-window function sees every record of the window at each firing. */
typedef struct tdm_aggregate tdm_aggregate;

typedef enum tdm_agg_kind {
    TDM_AGG_COUNT = 0,
    TDM_AGG_SUM = 1,
    TDM_AGG_MIN = 2,
    TDM_AGG_MAX = 3,
    TDM_AGG_AVG = 4,    /* a double: sum / count */
    TDM_AGG_COLLECT = 5 /* all values, sorted: tdm_event_values */
} tdm_agg_kind;

/** @brief A built-in aggregate over record values.
 *  @returns TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_aggregate_new(tdm_agg_kind kind, tdm_aggregate **out);

/* Where a user aggregate or window function writes its result. */
typedef struct tdm_result_out tdm_result_out;
/** @brief Sets the result's numeric value. */
TDM_API void tdm_result_set_value(tdm_result_out *out, double value);
/** @brief Sets the result's bytes; copies them.
 *  @returns TDM_OK, TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_result_set_bytes(tdm_result_out *out, const void *bytes,
                                     size_t len);

/* What the window operator tells a version-2 aggregate about the record
** it adds (tdm_aggregate_methods_v2.add).  The operator fills it and lends
** it for the call; the aggregate only reads it.  Members may be added at
** the end in later versions (the operator always allocates it, so an
** aggregate built against this header keeps working).
**
**   input    which input of the operator the record came from: the
**            position of its stream in a job window's "from" list, or
**            the input given to tdm_winop_push_ctx; 0 for tdm_winop_push.
**   partial  NULL for a record.  Otherwise the record stands for a
**            partial accumulator (acc_size bytes in this aggregate's own
**            layout, e.g. a source's local pre-aggregate in two-phase
**            aggregation): add must fold it in as merge would, read
**            nothing else of the record but its key and timestamp, and
**            take nothing from it (it is borrowed for the call).
**   row      the record's typed row, borrowed for the call and read with
**            tdm_row_* (a job's windows always give one), or NULL when
**            the record was pushed without one; the record's payload is
**            then, as in version 1, whatever the embedder set. */
typedef struct tdm_agg_ctx {
    int input;
    const void *partial;
    const struct tdm_row *row; /* tdm_row */
} tdm_agg_ctx;

/* A user aggregate: an accumulator of acc_size bytes per window, which
** the operator keeps inline in the window's state, zeroes and creates on
** the window's first record, folds records into with add, folds into
** another window's with merge (session windows), reads with result at
** each firing and releases with destroy_acc (purge, cleanup, merge,
** destroy).  Every member runs on the thread that calls the operator
** (push, watermark, end, advance, destroy), never two at a time for one
** operator; @p ud is the pointer given to the constructor.
**
** Version 1 (tdm_aggregate_methods, tdm_aggregate_new_custom): add, merge
** and result cannot fail, and add sees only the record.  Version 2
** (tdm_aggregate_methods_v2, tdm_aggregate_new_custom_v2): they return
** an error, and add is told the record's input, whether it is a partial,
** and its row (tdm_agg_ctx).  Both stay supported. */
typedef struct tdm_aggregate_methods {
    int version;     /* 1 */
    size_t acc_size; /* bytes of accumulator per window, zeroed before
                        create */
    /* Initialises an accumulator.  May be NULL (zeroed bytes suffice). */
    void (*create)(void *ud, void *acc);
    /* Adds a record.  Required. */
    void (*add)(void *ud, void *acc, const tdm_record *rec);
    /* Folds @p from into @p into (session merges).  NULL: the aggregate
    ** cannot be used with merging windows. */
    void (*merge)(void *ud, void *into, const void *from);
    /* Writes the result of @p acc.  Required. */
    void (*result)(void *ud, const void *acc, tdm_result_out *out);
    /* Releases what an accumulator holds (not the acc bytes themselves).
    ** May be NULL. */
    void (*destroy_acc)(void *ud, void *acc);
    /* Releases @p ud when the aggregate is destroyed.  May be NULL. */
    void (*destroy)(void *ud);
} tdm_aggregate_methods;

/* Version 2.  What the operator does with an error:
**   add       the push stops there and returns the error (message:
**             tdm_winop_errmsg, naming the key); windows the record was
**             added to before keep it, the others do not see it.  add must
**             leave @p acc releasable by destroy_acc; a window that had no
**             contents before is released (destroy_acc) and stays empty.
**             A job fails on TDM_ERR_NOMEM.
**   merge     the merge stops and the push returns the error; both
**             accumulators must stay releasable by destroy_acc (what was
**             moved stays moved), and both windows are kept.
**   result    the firing is skipped and counted as a window function's
**             error is; TDM_ERR_NOMEM (also from tdm_result_set_bytes)
**             fails the call that fired the window (push, watermark,
**             advance or end) with TDM_ERR_NOMEM as well. */
typedef struct tdm_aggregate_methods_v2 {
    int version;     /* 2 */
    size_t acc_size; /* bytes of accumulator per window, zeroed before
                        create */
    /* Initialises an accumulator.  May be NULL (zeroed bytes suffice). */
    void (*create)(void *ud, void *acc);
    /* Adds record @p rec (borrowed: key, timestamp, value, payload),
    ** described by @p ctx (borrowed, never NULL), to @p acc.  Required.
    ** Returns TDM_OK or an error. */
    tdm_err (*add)(void *ud, void *acc, const tdm_record *rec,
                   const tdm_agg_ctx *ctx);
    /* Folds @p from into @p into (session merges); the operator releases
    ** @p from afterwards, so what is taken from it may be detached.  NULL:
    ** the aggregate cannot be used with merging windows.  Returns TDM_OK
    ** or an error. */
    tdm_err (*merge)(void *ud, void *into, void *from);
    /* Writes the result of @p acc to @p out.  Required.  Returns TDM_OK
    ** or an error. */
    tdm_err (*result)(void *ud, const void *acc, tdm_result_out *out);
    /* Releases what an accumulator holds (not the acc bytes themselves).
    ** May be NULL. */
    void (*destroy_acc)(void *ud, void *acc);
    /* Releases @p ud when the aggregate is destroyed.  May be NULL. */
    void (*destroy)(void *ud);
} tdm_aggregate_methods_v2;

/** @brief A user-defined incremental aggregate (version 1).  Copies
 *  @p methods; keeps @p ud until destroyed.  @returns TDM_OK,
 *  TDM_ERR_INVAL, NOMEM. */
TDM_API tdm_err tdm_aggregate_new_custom(const tdm_aggregate_methods *methods,
                                         void *ud, tdm_aggregate **out,
                                         char *errbuf, size_t errbuf_size);
/** @brief A user-defined incremental aggregate (version 2).  Copies
 *  @p methods; keeps @p ud until destroyed.  @returns TDM_OK,
 *  TDM_ERR_INVAL (message names the member: version not 2, add or result
 *  missing), NOMEM. */
TDM_API tdm_err tdm_aggregate_new_custom_v2(
    const tdm_aggregate_methods_v2 *methods, void *ud, tdm_aggregate **out,
    char *errbuf, size_t errbuf_size);

/* A full-window function sees the window's records (in arrival order). */
typedef struct tdm_window_ctx tdm_window_ctx;
/** @brief The key of the window being evaluated (borrowed). */
TDM_API const char *tdm_window_ctx_key(const tdm_window_ctx *ctx, size_t *len);
/** @brief The window's bounds; returns 0 for the global window. */
TDM_API int tdm_window_ctx_window(const tdm_window_ctx *ctx, tdm_time_ms *start,
                                  tdm_time_ms *end);
/** @brief Number of records in the window. */
TDM_API size_t tdm_window_ctx_count(const tdm_window_ctx *ctx);
/** @brief Record @p i (0 <= i < count), borrowed for the call. */
TDM_API const tdm_record *tdm_window_ctx_record(const tdm_window_ctx *ctx,
                                                size_t i);

/** Computes a window's result from all its records.  Return TDM_OK, or an
 *  error to skip this firing (the operator counts it). */
typedef tdm_err (*tdm_window_fn)(void *ud, const tdm_window_ctx *ctx,
                                 tdm_result_out *out);
/** @brief A full-window function.  Keeps @p ud until destroyed; @p destroy
 *  (may be NULL) releases it then. */
TDM_API tdm_err tdm_aggregate_new_window_fn(tdm_window_fn fn, void *ud,
                                            void (*destroy)(void *ud),
                                            tdm_aggregate **out);
/** @brief Destroys an aggregate not handed to an operator. */
TDM_API void tdm_aggregate_destroy(tdm_aggregate *agg);

/* ====================================================================== */
/* The keyed window operator                                               */
/* ====================================================================== */

/* tdm_winop is Flink's WindowOperator behind its input valve.
**
**   records --> assign windows --> (merge sessions) --> late? --+--> add,
**                                                               |    trigger
**                                                               +--> late
*output
**   watermark (per channel) --> valve --> fire timers <= W --> forward W
**
** A window is late when its cleanup time, maxTimestamp + allowed lateness
** (saturating), is <= the watermark; a record is sent to the late output
** (or counted as dropped) only when every window it belongs to is late.
** Window state lives until cleanup, so records within allowed lateness
** refire their window with the accumulated contents.  Results carry
** timestamp end - 1.  Watermarks and statuses of the merged input are
** forwarded after the results they cause. */
typedef struct tdm_winop tdm_winop;

/** @brief Creates a window operator.
 *  @param asg  the assigner; takes ownership.
 *  @param trg  the trigger (NULL: the assigner's default: event time,
 *         processing time, or never for global); takes ownership.
 *  @param agg  the aggregate or window function; takes ownership.
 *  @param n_channels  input channels (>= 1), merged by a valve.
 *  @param clk  processing-time clock; keeps a reference until destroy.
 *  @param emit, opaque  output.
 *  @param out  OUT: the operator.
 *  @returns TDM_OK, TDM_ERR_INVAL (message names the parameter, e.g. a
 *  merging assigner with a trigger or aggregate that cannot merge),
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_winop_new(tdm_assigner *asg, tdm_trigger *trg,
                              tdm_aggregate *agg, int n_channels,
                              tdm_clock *clk, tdm_emit_cb emit, void *opaque,
                              tdm_winop **out, char *errbuf,
                              size_t errbuf_size);
/** @brief Sets allowed lateness (>= 0, default 0), before the first input
 *  or while the operator runs (never from inside its emit callback).
 *
 *  A change on a running operator moves the cleanup time of every live
 *  window to maxTimestamp + @p lateness_ms.  Lowered: the windows whose
 *  new cleanup time is <= the watermark are cleaned up at once (nothing
 *  is emitted).  Raised: the windows already cleaned up stay closed - a
 *  record for one of them is late (late output or counted), never a new
 *  window with a partial result.  Windows that have fired refire on late
 *  records until their new cleanup time.  Processing-time assigners
 *  ignore lateness (the value is kept).
 *
 *  @returns TDM_OK, TDM_ERR_INVAL (negative; message names
 *  "allowed_lateness_ms"), TDM_ERR_UNSUPPORTED (a running operator whose
 *  mode keeps no cleanup time per window: merging windows, and the
 *  sliced and session modes a sliding count or a session window without
 *  lateness runs in; the message names the mode), TDM_ERR_NOMEM (the
 *  windows keep their cleanup times when nothing moved yet). */
TDM_API tdm_err tdm_winop_set_allowed_lateness(tdm_winop *op,
                                               tdm_time_ms lateness_ms,
                                               char *errbuf,
                                               size_t errbuf_size);
/** @brief The operator's allowed lateness in ms (0 for NULL). */
TDM_API tdm_time_ms tdm_winop_allowed_lateness(const tdm_winop *op);
/** @brief 1: records too late for all their windows go out as LATE events;
 *  0 (default): they are dropped and counted.  Only before the first
 *  input.  @returns TDM_OK, TDM_ERR_STATE. */
TDM_API tdm_err tdm_winop_set_late_output(tdm_winop *op, int enabled);
/** @brief Pushes a record arriving on channel @p ch (borrows @p rec; copies
 *  what it keeps).  For event-time assigners the record's timestamp is
 *  used; processing-time assigners read the clock.
 *  @returns TDM_OK; TDM_ERR_NO_TIMESTAMP (event-time operator and the
 *  record's timestamp is TDM_TIME_MIN: the record is not processed, the
 *  bad-record counter grows, tdm_winop_errmsg says which key);
 *  TDM_ERR_CHANNEL; TDM_ERR_STATE after end; TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_winop_push(tdm_winop *op, int ch, const tdm_record *rec);
/** @brief tdm_winop_push with what the aggregate is told about the record
 *  (tdm_agg_ctx, borrowed for the call; NULL: as tdm_winop_push).  Only a
 *  version-2 aggregate sees @p ctx; a partial (ctx->partial) needs one
 *  (else TDM_ERR_INVAL).  A late record goes to the late output as with
 *  tdm_winop_push (the record, not the context).  @returns as
 *  tdm_winop_push, and a version-2 add or merge error as it was returned. */
TDM_API tdm_err tdm_winop_push_ctx(tdm_winop *op, int ch, const tdm_record *rec,
                                   const tdm_agg_ctx *ctx);
/** @brief A watermark on channel @p ch (goes through the valve). */
TDM_API tdm_err tdm_winop_watermark(tdm_winop *op, int ch, tdm_time_ms wm);
/** @brief Channel @p ch became idle (1) or active (0). */
TDM_API tdm_err tdm_winop_status(tdm_winop *op, int ch, int idle);
/** @brief Reads the clock and fires processing-time timers that are due,
 *  in timestamp order. */
TDM_API tdm_err tdm_winop_advance(tdm_winop *op);
/** @brief End of input on all channels: the watermark TDM_TIME_MAX fires
 *  every pending event-time timer, then is forwarded.  Pending
 *  processing-time timers do not fire (as in Flink's streaming mode). */
TDM_API tdm_err tdm_winop_end(tdm_winop *op);
/** @brief Records dropped as too late (no late output configured). */
TDM_API int64_t tdm_winop_late_dropped(const tdm_winop *op);
/** @brief Records sent to the late output. */
TDM_API int64_t tdm_winop_late_emitted(const tdm_winop *op);
/** @brief Records rejected for lacking a timestamp. */
TDM_API int64_t tdm_winop_bad_records(const tdm_winop *op);
/** @brief Windows currently in state. */
TDM_API int64_t tdm_winop_live_windows(const tdm_winop *op);
/** @brief Approximate bytes of window state (accumulators, contents,
 *  timers, keys). */
TDM_API int64_t tdm_winop_state_bytes(const tdm_winop *op);
/** @brief The operator's current (input) watermark. */
TDM_API tdm_time_ms tdm_winop_current_watermark(const tdm_winop *op);
/** @brief A message about the last error on this operator (never NULL). */
TDM_API const char *tdm_winop_errmsg(const tdm_winop *op);
/** @brief Destroys the operator and everything it owns. */
TDM_API void tdm_winop_destroy(tdm_winop *op);

/* ====================================================================== */
/* Joins                                                                   */
/* ====================================================================== */

/* Two-input keyed joins.  Each side has its own valve over its channels;
** the operator's watermark is the combiner (minimum over non-idle sides).
**
** Interval join: left l and right r with equal keys join when
**   l.ts + lower <= r.ts <= l.ts + upper
** (exclusive bounds shift by 1 ms), emitted as a JOIN event with timestamp
** max(l.ts, r.ts).  A record is late when ts < the operator watermark; late
** records join nothing and go to the late output (with their side) or are
** dropped and counted.  A left record is kept until the watermark reaches
** l.ts + upper (l.ts if upper <= 0), a right one until r.ts - lower (r.ts
** if lower >= 0).
**
** Window join: left and right records with equal keys in the same window
** are paired when the window fires (event time, at end - 1); every pair is
** a JOIN event with timestamp end - 1.  Records too late for all their
** windows are late as for the window operator (lateness 0). */
typedef struct tdm_joinop tdm_joinop;

#define TDM_SIDE_LEFT 0
#define TDM_SIDE_RIGHT 1

/** @brief Creates an interval join.
 *  @param lower_ms, upper_ms  bounds; after making exclusive bounds
 *         inclusive (lower + 1, upper - 1) lower must be <= upper.
 *  @param n_channels  channels per side (>= 1).
 *  @returns TDM_OK, TDM_ERR_INVAL (message names "lower_ms"/"upper_ms"),
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_joinop_new_interval(
    tdm_time_ms lower_ms, tdm_time_ms upper_ms, int lower_inclusive,
    int upper_inclusive, int n_channels, tdm_clock *clk, tdm_emit_cb emit,
    void *opaque, tdm_joinop **out, char *errbuf, size_t errbuf_size);
/** @brief Creates a window join over the windows of @p asg (event-time
 *  tumbling or sliding; takes ownership).
 *  @returns TDM_OK, TDM_ERR_INVAL (session, global or processing-time
 *  assigner), TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_joinop_new_window(tdm_assigner *asg, int n_channels,
                                      tdm_clock *clk, tdm_emit_cb emit,
                                      void *opaque, tdm_joinop **out,
                                      char *errbuf, size_t errbuf_size);
/** @brief 1: late records go out as LATE events; 0 (default): dropped and
 *  counted.  Only before the first input. */
TDM_API tdm_err tdm_joinop_set_late_output(tdm_joinop *op, int enabled);
/** @brief Pushes a record on side @p side (TDM_SIDE_LEFT/RIGHT), channel
 *  @p ch.  Borrows @p rec; copies what it keeps.
 *  @returns TDM_OK, TDM_ERR_NO_TIMESTAMP, TDM_ERR_CHANNEL, TDM_ERR_STATE,
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_joinop_push(tdm_joinop *op, int side, int ch,
                                const tdm_record *rec);
/** @brief A watermark on side @p side, channel @p ch. */
TDM_API tdm_err tdm_joinop_watermark(tdm_joinop *op, int side, int ch,
                                     tdm_time_ms wm);
/** @brief Side @p side, channel @p ch became idle (1) or active (0). */
TDM_API tdm_err tdm_joinop_status(tdm_joinop *op, int side, int ch, int idle);
/** @brief End of input on both sides. */
TDM_API tdm_err tdm_joinop_end(tdm_joinop *op);
/** @brief Late records dropped (no late output configured). */
TDM_API int64_t tdm_joinop_late_dropped(const tdm_joinop *op);
/** @brief Record copies currently buffered on both sides (a window join
 *  counts a record once per window that holds it). */
TDM_API int64_t tdm_joinop_buffered(const tdm_joinop *op);
/** @brief A message about the last error on this operator. */
TDM_API const char *tdm_joinop_errmsg(const tdm_joinop *op);
/** @brief Destroys a join operator. */
TDM_API void tdm_joinop_destroy(tdm_joinop *op);

/* ====================================================================== */
/* Jobs: the parallel dataflow runtime                                     */
/* ====================================================================== */

/* A job is a dataflow graph of named nodes - sources, windows, joins and
** sinks - configured with string keys from one table (src/runtime/
** conf_table.def; `tidemark config list` prints it, docs/job-format.md is
** generated from it).  tdm_job_run() executes it: every operator runs as
** `parallelism` subtasks on worker threads, connected by bounded queues
** that carry batches of records and, in order with them, watermarks,
** idle/active statuses and end of input; records are partitioned by key
** hash over `key_groups` key groups; every subtask merges its input
** channels with a tdm_valve.  Bounded input ends with the maximum
** watermark, which fires every window; tdm_job_cancel() stops the same way.
**
**   source --(map/filter, chained)--> key_by exchange --> window --> sink
**                                                 `--> late output sink
**   source L, source R --> key_by exchange --> join --> sink
**
** A job is built and run from one thread; tdm_job_cancel() may be called
** from any thread or a signal handler. */
typedef struct tdm_job tdm_job;
typedef struct tdm_node tdm_node;

typedef enum tdm_node_kind {
    TDM_NODE_SOURCE = 1,
    TDM_NODE_WINDOW = 2,
    TDM_NODE_JOIN = 3,
    TDM_NODE_SINK = 4
} tdm_node_kind;

/* Field types of a schema. */
typedef enum tdm_type {
    TDM_TYPE_INT64 = 1,
    TDM_TYPE_DOUBLE = 2,
    TDM_TYPE_STRING = 3,
    TDM_TYPE_BOOL = 4,
    TDM_TYPE_TIMESTAMP = 5, /* int64 epoch milliseconds */
    TDM_TYPE_DECIMAL = 6    /* int64 value * 10^scale; see below */
} tdm_type;
/* A decimal field's type carries its precision p (1..18) and scale s
 * (0..p) above the low byte: TDM_TYPE_DECIMAL_OF(10, 2) is decimal(10,2),
 * stored as the int64 value * 100 (1658.20 is 165820).  TDM_TYPE_BASE
 * gives the plain kind (TDM_TYPE_DECIMAL) of any type. */
#define TDM_TYPE_DECIMAL_OF(p, s)                                              \
    ((tdm_type)(TDM_TYPE_DECIMAL | ((p) << 8) | ((s) << 16)))
#define TDM_TYPE_BASE(t) ((tdm_type)((unsigned)(t)&0xffu))
#define TDM_DECIMAL_PRECISION(t) ((int)(((unsigned)(t) >> 8) & 0xffu))
#define TDM_DECIMAL_SCALE(t) ((int)(((unsigned)(t) >> 16) & 0xffu))

/** @brief Creates an empty job.  @returns TDM_OK, TDM_ERR_INVAL,
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_job_new(tdm_job **out);
/** @brief Sets a job-level key (scope JOB of the table) from text.
 *  Copies @p value.  @returns TDM_OK; TDM_ERR_INVAL with a message in
 *  errbuf naming the key and what was expected (unknown key, bad number,
 *  out of range, not one of the choices). */
TDM_API tdm_err tdm_job_set(tdm_job *job, const char *key, const char *value,
                            char *errbuf, size_t errbuf_size);
/** @brief Adds a node of @p kind named @p name (unique across the job).
 *  *out is borrowed from the job (valid until tdm_job_destroy).
 *  @returns TDM_OK, TDM_ERR_INVAL (duplicate or empty name), NOMEM. */
TDM_API tdm_err tdm_job_add_node(tdm_job *job, tdm_node_kind kind,
                                 const char *name, tdm_node **out, char *errbuf,
                                 size_t errbuf_size);
/** @brief Finds a node by name; NULL if none. */
TDM_API tdm_node *tdm_job_node(tdm_job *job, const char *name);
/** @brief Sets a key of a node (the table's scope for the node's kind)
 *  from text; the value is parsed and checked now.  Copies @p value.
 *  @returns TDM_OK; TDM_ERR_INVAL with a message naming the key. */
TDM_API tdm_err tdm_node_set(tdm_node *node, const char *key, const char *value,
                             char *errbuf, size_t errbuf_size);

/* Per-record user functions on a source's records, chained into the
** source subtask (no queue).  A tdm_row is borrowed for the call. */
typedef struct tdm_row tdm_row;
/** Returns non-zero to keep the row. */
typedef int (*tdm_filter_fn)(void *ud, const tdm_row *row);
/** May change field values in place with tdm_row_set_*. */
typedef void (*tdm_map_fn)(void *ud, tdm_row *row);
/** @brief Adds a filter after a source's parsing; filters and maps run in
 *  the order added, after the source's `filter` and `compute.*` keys (a
 *  row a filter drops counts in TDM_STAT_FILTERED).  Keeps a reference
 *  to @p ud until tdm_job_destroy.
 *  Called from worker threads, concurrently for different subtasks. */
TDM_API tdm_err tdm_node_add_filter(tdm_node *source, tdm_filter_fn fn,
                                    void *ud);
/** @brief Adds a map after a source's parsing (see tdm_node_add_filter). */
TDM_API tdm_err tdm_node_add_map(tdm_node *source, tdm_map_fn fn, void *ud);

/** @brief Index of field @p name in a source's schema, -1 if absent. */
TDM_API int tdm_node_field_index(const tdm_node *source, const char *name);
/** @brief The row's event timestamp. */
TDM_API tdm_time_ms tdm_row_ts(const tdm_row *row);
/** @brief 1 if field @p i is null (absent from the input). */
TDM_API int tdm_row_is_null(const tdm_row *row, int i);
/** @brief Field @p i as int64 (INT64, TIMESTAMP, BOOL; a DECIMAL's
 *  scaled value, 1658.20 of decimal(10,2) as 165820; 0 otherwise). */
TDM_API int64_t tdm_row_int(const tdm_row *row, int i);
/** @brief Field @p i as double (DOUBLE, or INT64 or DECIMAL converted). */
TDM_API double tdm_row_double(const tdm_row *row, int i);
/** @brief Field @p i as text (STRING), borrowed; *len gets its length. */
TDM_API const char *tdm_row_string(const tdm_row *row, int i, size_t *len);
/** @brief Sets an INT64/TIMESTAMP/BOOL field. */
TDM_API void tdm_row_set_int(tdm_row *row, int i, int64_t v);
/** @brief Sets a DOUBLE field. */
TDM_API void tdm_row_set_double(tdm_row *row, int i, double v);

/** @brief Checks the whole graph: every reference names an existing node,
 *  required keys are set, fields exist in schemas, window and join
 *  parameters are valid, a source's filter and compute.* expressions
 *  compile (and are kept for the next run).  @returns TDM_OK or TDM_ERR_INVAL
 * with a message naming the node and key. */
TDM_API tdm_err tdm_job_validate(tdm_job *job, char *errbuf,
                                 size_t errbuf_size);

/* Counters of a running or finished job, read with tdm_job_stat(). */
typedef enum tdm_stat {
    TDM_STAT_RECORDS_IN = 0,   /* records read and parsed by sources */
    TDM_STAT_RECORDS_OUT,      /* rows written to result sinks */
    TDM_STAT_LATE_DROPPED,     /* too late, no late output */
    TDM_STAT_LATE_SIDE_OUTPUT, /* too late, sent to the late output */
    TDM_STAT_LATE_REFIRES,     /* late panes (refired windows) */
    TDM_STAT_BAD_RECORDS,      /* malformed, dead-lettered */
    TDM_STAT_GUARD_HITS,       /* caught by the timestamp guard */
    TDM_STAT_WM_REGRESSIONS,   /* backwards watermarks ignored */
    TDM_STAT_WATERMARK,        /* lowest operator watermark now */
    TDM_STAT_ELAPSED_MS,       /* wall time since the run started */
    TDM_STAT_FILTERED,         /* dropped by a source's filter (the job
                                  file's filter key or a tdm_filter_fn),
                                  and join pairs a join's filter key
                                  dropped */
    /* Checkpoints (checkpoint.dir set; docs/checkpoints.md "In the
     * runtime"): */
    TDM_STAT_CHECKPOINTS,         /* checkpoints and savepoints completed */
    TDM_STAT_CHECKPOINTS_FAILED,  /* failed (I/O error, disk full): logged;
                                    beyond checkpoint.tolerable_failed in
                                    a row the job fails */
    TDM_STAT_CHECKPOINT_ID,       /* id of the last completed one (-1: none) */
    TDM_STAT_CHECKPOINT_MS,       /* its duration: first barrier to durable
                                     (ms) */
    TDM_STAT_CHECKPOINT_BYTES,    /* its size: the blobs' bytes */
    TDM_STAT_CHECKPOINT_ALIGN_MS, /* its alignment time: the longest any
                                   operator subtask held input back, from
                                   the first barrier it received to the
                                   last (ms) */
    TDM_STAT_DUP_KEYS,            /* JSON records naming a member twice
                                     in one object (the last value kept) */
    TDM_STAT_CHECKPOINTS_FAILED_IN_ROW, /* failed since the last completed
                                   one (checkpoint.tolerable_failed) */
    TDM_STAT_CHECKPOINT_FAILED_ID,      /* id of the last failed one (-1:
                                        none) */
    TDM_STAT_CHECKPOINT_FAILED_AT,      /* when it failed (epoch ms; 0: none) */
    TDM_STAT_RESTARTS,                  /* restarts by restart.strategy in this
                                           tdm_job_run (the checkpoint counters
                                           above also span its restarts; the
                                           others count the current attempt) */
    TDM_STAT_TOMBSTONES,                /* Kafka messages with a null value
                                           (tombstones), skipped */
    TDM_STAT_RESTORED_ID,               /* the checkpoint or savepoint this
                                           run resumed from (-1: none) */
    TDM_STAT_COUNT_
} tdm_stat;

/** @brief A counter of @p job (safe from any thread while it runs). */
TDM_API int64_t tdm_job_stat(const tdm_job *job, tdm_stat which);
/** Progress callback: called about every status.interval from the thread
 *  running tdm_job_run, with the job to read counters from. */
typedef void (*tdm_progress_cb)(void *ud, const tdm_job *job);
/** @brief Result latency of the last run, in microseconds: the @p q
 *  quantile (0 <= q <= 1; 0.5 the median, 0.99 the 99th percentile) over
 *  every on-time result of the job's event-time windows of the
 *  processing time from the watermark that fired the window leaving its
 *  source subtask to the row being handed to its sink (queue transit and
 *  firing included; sink I/O after the hand-over not).  Quantiles are
 *  within 1/128 above the true value.  *count (may be NULL) gets how many
 *  results were measured.  Complete once tdm_job_run returned (while it
 *  runs: the subtasks finished so far; the per-subtask figures are the
 *  metrics resultLatencyP50/P99).  @returns the quantile, or -1 when no
 *  result was measured or @p q is out of range. */
TDM_API int64_t tdm_job_result_latency(const tdm_job *job, double q,
                                       int64_t *count);
/** @brief Sets the progress callback (keeps a reference to @p ud). */
TDM_API tdm_err tdm_job_set_progress(tdm_job *job, tdm_progress_cb cb,
                                     void *ud);
/** Log callback: warnings and notes the runtime reports while running
 *  (timestamp unit suspicions, regressions, bad records), one line each,
 *  from any worker thread (serialised by the runtime). */
typedef void (*tdm_log_cb)(void *ud, const char *line);
/** @brief Sets the log callback (default: stderr). */
TDM_API tdm_err tdm_job_set_log(tdm_job *job, tdm_log_cb cb, void *ud);

/** @brief Validates, then runs the job to the end of its input (or until
 *  cancelled) on worker threads; returns when every sink is flushed.
 *  With checkpoint.dir, a checkpoint failing more than
 *  checkpoint.tolerable_failed times in a row (default 0), or the final
 *  one failing, fails the run (TDM_ERR_IO); with restart.strategy set, a
 *  run failing on I/O or memory is run again within this call from the
 *  newest checkpoint, after a back-off (a cancel ends the wait and the
 *  call returns the failure).  docs/checkpoints.md, "Failures".
 *  @returns TDM_OK; TDM_ERR_INVAL (validation, message in errbuf);
 *  TDM_ERR_IO (a file could not be opened or written; message names the
 *  path); TDM_ERR_NOMEM.  Malformed records are not errors: they are
 *  dead-lettered and counted. */
TDM_API tdm_err tdm_job_run(tdm_job *job, char *errbuf, size_t errbuf_size);
/** @brief Asks a running job to stop: sources stop reading, the maximum
 *  watermark flushes every window, sinks flush, and tdm_job_run returns
 *  TDM_OK.  Async-signal-safe; harmless when not running. */
TDM_API void tdm_job_cancel(tdm_job *job);
/** @brief Asks a running job with checkpointing (job key checkpoint.dir)
 *  for a savepoint: a checkpoint of kind savepoint, taken as soon as no
 *  other checkpoint is in progress, that retention never removes.  A run
 *  restores from the newest valid checkpoint or savepoint in the
 *  directory (job key checkpoint.restore: latest, the default; none
 *  starts from scratch).  Async-signal-safe (one atomic store);
 *  harmless when not running or without checkpointing. */
TDM_API void tdm_job_savepoint(tdm_job *job);
/** @brief Destroys a job (not while it runs). */
TDM_API void tdm_job_destroy(tdm_job *job);

/* ---- Live settings (docs/live-settings.md) ---- */

/* One live setting of a job as it stands. */
typedef struct tdm_live_setting {
    char key[192];    /* "sources.clicks.watermark.max_out_of_orderness" */
    char value[32];   /* in force, as a duration ("8s") */
    int64_t value_ms; /* the same in ms */
    char origin[16];  /* who set it last: "job" (the definition,
                         never changed), "rest", "cli", "file",
                         "api" (or what the caller named) */
    tdm_time_ms changed_at; /* processing time of the last change
                               (TDM_TIME_MIN: never) */
    int64_t changes;        /* changes since the run started */
    int applied;            /* 1 once every subtask of the source runs
                               with it (0 for a moment after a change) */
} tdm_live_setting;

/* One change, as remembered (the last 64 of a run, oldest first). */
typedef struct tdm_live_change {
    tdm_time_ms at; /* processing time */
    char key[192];
    char from[32]; /* the value before, as a duration */
    char to[32];
    char origin[16];
} tdm_live_change;

/** @brief Changes a live setting of a running job: @p key is
 *  sources.NAME.watermark.max_out_of_orderness, .watermark.idle_timeout
 *  or .watermark.alignment.max_drift, @p value a duration ("8s").
 *  Every door (REST PATCH /jobs/:id/config, `tidemark set`, the
 *  config.watch file) comes here.  Safe from any thread.  The sources
 *  apply it between polls, to every partition; the watermark never goes
 *  back (a higher bound holds it until the data passes it).  Logged and
 *  counted (numConfigChanges).  @p origin names the door ("api" when
 *  NULL).  @returns TDM_OK; TDM_ERR_INVAL (unknown key, bad value:
 *  the reason in errbuf); TDM_ERR_UNSUPPORTED (a key that cannot change
 *  while the job runs, or does not apply to that source: the reason and
 *  what would); TDM_ERR_STATE (not running). */
TDM_API tdm_err tdm_job_config_set(tdm_job *job, const char *key,
                                   const char *value, const char *origin,
                                   char *errbuf, size_t errbuf_size);
/** @brief Checks what tdm_job_config_set would: the key, the value and
 *  whether the setting applies, but not whether the job runs; changes
 *  nothing (a caller applying several settings checks them all first).
 *  @returns as tdm_job_config_set, never TDM_ERR_STATE. */
TDM_API tdm_err tdm_job_config_check(tdm_job *job, const char *key,
                                     const char *value, char *errbuf,
                                     size_t errbuf_size);
/** @brief The number of live settings @p job has (those that apply to
 *  its sources), and the @p i-th of them (TDM_ERR_RANGE past the end). */
TDM_API size_t tdm_job_config_count(tdm_job *job);
TDM_API tdm_err tdm_job_config_get(tdm_job *job, size_t i,
                                   tdm_live_setting *out);
/** @brief The changes of the current (or last) run, the last 64, oldest
 *  first (TDM_ERR_RANGE past the end). */
TDM_API size_t tdm_job_config_change_count(tdm_job *job);
TDM_API tdm_err tdm_job_config_change(tdm_job *job, size_t i,
                                      tdm_live_change *out);

/* ====================================================================== */
/* Tasks: one job across several processes (scale_out: tasks)             */
/* ====================================================================== */

/* A job with the key scale_out set to tasks runs as tasks (Kafka
** Streams' unit of work; docs/scale-out.md): task n reads partition n of
** every input topic and owns the state of the keys those partitions
** carry, checkpointed under checkpoint.dir/task-<n>, which every process
** must reach.  Each process runs a task host: a member of the job's
** consumer group that runs, as a job of its own, every task the group
** assigns to it, restores a task from its newest checkpoint before it
** reads a record, and stops a revoked task with a final checkpoint
** before the group hands it on.  A task taken over by another process
** (this one was paused past the session timeout) stops without writing
** (TDM_ERR_STATE).  The host needs a fresh copy of the job for every
** task it starts, so it asks for one: */

typedef struct tdm_taskhost tdm_taskhost;

/** @brief Builds a new, unvalidated copy of the job for task @p task
 *  (the host then sets checkpoint.dir, task.id and task.epoch on it,
 *  validates and runs it, and destroys it when the task stops).  Called
 *  on the thread of tdm_taskhost_run.  @returns TDM_OK with *out set, or
 *  an error with a message in @p errbuf. */
typedef tdm_err (*tdm_task_build_cb)(void *ud, int task, tdm_job **out,
                                     char *errbuf, size_t errbuf_size);

/** @brief Makes a task host for job @p def (validated, scale_out: tasks;
 *  borrowed until tdm_taskhost_destroy), which reads its Kafka sources'
 *  brokers, topics, group and kafka.* properties and its checkpoint.dir.
 *  @returns TDM_OK; TDM_ERR_INVAL (not a tasks job, message in errbuf);
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_taskhost_new(tdm_job *def, tdm_task_build_cb build,
                                 void *ud, tdm_taskhost **out, char *errbuf,
                                 size_t errbuf_size);
/** @brief Joins the group and runs the tasks it assigns until
 *  tdm_taskhost_cancel (every task stops with a final checkpoint, then
 *  the host leaves the group), or, with sources that stop at the end of
 *  their input, until every task it holds has finished.  A task that
 *  fails stops the host (the other tasks stop as on cancel).
 *  @returns TDM_OK; TDM_ERR_STATE (a task was taken over by another
 *  process); TDM_ERR_IO (no broker, a task's I/O failed: message names
 *  the task); TDM_ERR_INVAL (topics not co-partitioned); TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_taskhost_run(tdm_taskhost *host, char *errbuf,
                                 size_t errbuf_size);
/** @brief Asks a running host to stop.  Async-signal-safe. */
TDM_API void tdm_taskhost_cancel(tdm_taskhost *host);
/** @brief Tasks the host runs now (a snapshot): writes up to @p n task
 *  numbers into @p tasks and returns how many it runs. */
TDM_API int tdm_taskhost_tasks(tdm_taskhost *host, int *tasks, int n);
/** @brief A task the host is taking over: with checkpoint.store:
 *  changelog, its changelog partition is read back before its job is
 *  built; @p offset is how far the read got and @p end the partition's
 *  end when the read began (both 0 until the read starts). */
typedef struct tdm_task_restore {
    int task;
    int64_t offset;
    int64_t end;
} tdm_task_restore;
/** @brief Tasks the host is restoring now (a snapshot): writes up to
 *  @p n into @p out and returns how many there are.  Any thread; with
 *  the folder store a restore is part of the task's job, and this is
 *  always 0. */
TDM_API int tdm_taskhost_restoring(tdm_taskhost *host, tdm_task_restore *out,
                                   int n);
/** @brief Told of each task's job, on the host's thread: with @p job set
 *  (and @p epoch, the owner epoch the host took) once the job is built
 *  and validated, before it runs; with @p job NULL once the task stopped,
 *  before its job is destroyed (the callback may keep no reference past
 *  its return then).  tdm_http_start_tasks uses it. */
typedef void (*tdm_task_watch_cb)(void *ud, int task, tdm_job *job,
                                  int64_t epoch);
/** @brief Sets the host's watcher (one; NULL removes it).  Not while the
 *  host runs. */
TDM_API void tdm_taskhost_watch(tdm_taskhost *host, tdm_task_watch_cb cb,
                                void *ud);
/** @brief Destroys a host (not while it runs; NULL is fine). */
TDM_API void tdm_taskhost_destroy(tdm_taskhost *host);

/* ====================================================================== */
/* Metrics of a running job                                                */
/* ====================================================================== */

/* Every metric the runtime keeps, in one table: the identifier, its name
** (Flink's where Flink has one), the scope it is kept at, counter or
** gauge, the unit, what kind of quantity the value is, how the values of
** a vertex's subtasks combine into one, and a one-line description.  The
** Prometheus exposition, the REST API and docs/metrics.md are all
** generated from this table.
**
** Kinds (tdm_metric_kind: a unit alone cannot tell "ms" the point in
** time from "ms" the duration):
**   EVENT_TIME  a point in event time, epoch ms (watermarks, timestamps):
**               TDM_TIME_MIN is "none yet", TDM_TIME_MAX "end of input"
**   CLOCK_TIME  a point in processing time, epoch ms
**   DURATION    a span of time (in the unit's ms or us)
**   COUNT       a count or an amount (records, bytes, keys, items)
**   FLAG        0 or 1
**   CODE        an id or an enumerated code
**
** Combining (tdm_metric_agg) is how the REST API folds the values of a
** vertex's subtasks into the vertex's one value: MIN (watermarks, "all
** idle"), MAX (ages, lags, latencies, the highest timestamp) or SUM
** (counters, state, queues; and every metric the server never folds).
**
** Scopes (what a tdm_metric_value's fields mean for it):
**   JOB        the whole job                 vertex NULL, subtask -1
**   VERTEX     one subtask of a vertex       vertex, subtask
**   INPUT      one logical input of a subtask (1-based: a join's left
**              is 1, right 2; a window's `from` list in order)  + index
**   CHANNEL    one input channel of an operator subtask (one per upstream
**              source subtask; label "source#subtask")          + index
**   PARTITION  one partition (split) of a source subtask (label: the
**              partition's name: a file path or the partition field's
**              value)                                           + index
**
** Watermark values are epoch ms; TDM_TIME_MIN means "no watermark yet",
** TDM_TIME_MAX "end of input".  A row whose value does not exist (the lag
** of a vertex with no watermark, the drift of a source without
** alignment) is left out of the snapshot, not reported as 0. */
#define TDM_METRIC_MAP(X)                                                      \
    X(UPTIME, "uptimeMs", JOB, GAUGE, "ms", DURATION, SUM,                     \
      "Processing time since the run started")                                 \
    X(CKPT_COMPLETED, "numberOfCompletedCheckpoints", JOB, COUNTER,            \
      "checkpoints", COUNT, SUM,                                               \
      "Checkpoints and savepoints completed (only with "                       \
      "checkpoint.dir set)")                                                   \
    X(CKPT_FAILED, "numberOfFailedCheckpoints", JOB, COUNTER, "checkpoints",   \
      COUNT, SUM,                                                              \
      "Checkpoints that failed (I/O error, disk full); "                       \
      "beyond checkpoint.tolerable_failed in a row the job fails")             \
    X(CKPT_FAILED_IN_ROW, "consecutiveFailedCheckpoints", JOB, GAUGE,          \
      "checkpoints", COUNT, SUM,                                               \
      "Checkpoints failed since the last completed one "                       \
      "(compare with checkpoint.tolerable_failed)")                            \
    X(CKPT_FAILED_ID, "lastFailedCheckpointId", JOB, GAUGE, "id", CODE, SUM,   \
      "Id of the last failed checkpoint (left out: none failed)")              \
    X(CKPT_FAILED_AT, "lastCheckpointFailureTimestamp", JOB, GAUGE, "ms",      \
      CLOCK_TIME, SUM,                                                         \
      "When the last failed checkpoint failed, epoch ms (left out: none "      \
      "failed; its cause is in GET /jobs/:id, \"checkpoints\")")               \
    X(RESTARTS, "numRestarts", JOB, COUNTER, "restarts", COUNT, SUM,           \
      "Restarts by restart.strategy since the run started (the "               \
      "checkpoint counters span them, the others restart at 0)")               \
    X(CONFIG_CHANGES, "numConfigChanges", JOB, COUNTER, "changes", COUNT, SUM, \
      "Live setting changes since the run started (PATCH "                     \
      "/jobs/:id/config, tidemark set, config.watch; docs/live-settings.md)")  \
    X(CKPT_LAST_ID, "lastCheckpointId", JOB, GAUGE, "id", CODE, SUM,           \
      "Id of the last completed checkpoint (-1: none yet)")                    \
    X(CKPT_DURATION, "lastCheckpointDuration", JOB, GAUGE, "ms", DURATION,     \
      SUM,                                                                     \
      "The last completed checkpoint's duration: from its barriers' "          \
      "request to the checkpoint being durable")                               \
    X(CKPT_SIZE, "lastCheckpointSize", JOB, GAUGE, "bytes", COUNT, SUM,        \
      "The last completed checkpoint's size (its blobs)")                      \
    X(CKPT_ALIGN, "lastCheckpointAlignmentTime", JOB, GAUGE, "ms", DURATION,   \
      SUM,                                                                     \
      "The last completed checkpoint's alignment time: the longest any "       \
      "operator subtask held input back, from the first barrier it "           \
      "received to the last (Flink's alignment duration)")                     \
    X(WM_INPUT, "currentInputWatermark", VERTEX, GAUGE, "ms", EVENT_TIME, MIN, \
      "Watermark the subtask has received: the minimum over its active "       \
      "channels (sources: over their active partitions)")                      \
    X(WM_OUTPUT, "currentOutputWatermark", VERTEX, GAUGE, "ms", EVENT_TIME,    \
      MIN, "Watermark the subtask has emitted downstream")                     \
    X(WM_LAG, "watermarkLag", VERTEX, GAUGE, "ms", DURATION, MAX,              \
      "Processing time minus the output watermark")                            \
    X(IDLE, "idle", VERTEX, GAUGE, "bool", FLAG, MIN,                          \
      "1 when every input of the subtask is idle")                             \
    X(RECORDS_IN, "numRecordsIn", VERTEX, COUNTER, "records", COUNT, SUM,      \
      "Records received (sources: read and parsed)")                           \
    X(RECORDS_OUT, "numRecordsOut", VERTEX, COUNTER, "records", COUNT, SUM,    \
      "Records emitted (sources: routed on; operators: result rows)")          \
    X(LATE_DROPPED, "numLateRecordsDropped", VERTEX, COUNTER, "records",       \
      COUNT, SUM,                                                              \
      "Records behind the watermark plus allowed lateness, dropped "           \
      "(no late output configured)")                                           \
    X(LATE_SIDE, "numLateRecordsSideOutput", VERTEX, COUNTER, "records",       \
      COUNT, SUM,                                                              \
      "Records too late for their window, sent to the late output")            \
    X(LATE_FALLBACK, "numLateRecordsByFallback", VERTEX, COUNTER, "records",   \
      COUNT, SUM,                                                              \
      "Windows reading a source with watermark.fallback: of the late "         \
      "records (dropped or sent to the late output), those the data "          \
      "watermark alone would have kept on time: made late by the fallback")    \
    X(LATE_PANES, "numLatePanes", VERTEX, COUNTER, "panes", COUNT, SUM,        \
      "Late firings: windows refired within allowed lateness")                 \
    X(PANES, "numPanesFired", VERTEX, COUNTER, "panes", COUNT, SUM,            \
      "Window results emitted (every firing, on time or late)")                \
    X(BAD_RECORDS, "numBadRecords", VERTEX, COUNTER, "records", COUNT, SUM,    \
      "Malformed records sent to the dead-letter output")                      \
    X(GUARD_HITS, "numTimestampGuardHits", VERTEX, COUNTER, "records", COUNT,  \
      SUM,                                                                     \
      "Records whose timestamp was further in the future than "                \
      "timestamp_guard")                                                       \
    X(DUP_KEYS, "numDuplicateKeyRecords", VERTEX, COUNTER, "records", COUNT,   \
      SUM,                                                                     \
      "JSON records naming a member twice in one object; the last value "      \
      "was kept")                                                              \
    X(TOMBSTONES, "numTombstonesSkipped", VERTEX, COUNTER, "records", COUNT,   \
      SUM,                                                                     \
      "Kafka sources: messages with a null value (tombstones), skipped "       \
      "and not dead-lettered")                                                 \
    X(WM_REGRESSIONS, "numWatermarkRegressions", VERTEX, COUNTER,              \
      "watermarks", COUNT, SUM,                                                \
      "Watermarks that would have moved backwards, ignored")                   \
    X(STATE_KEYS, "stateKeys", VERTEX, GAUGE, "keys", COUNT, SUM,              \
      "Keys with live state")                                                  \
    X(STATE_WINDOWS, "stateWindows", VERTEX, GAUGE, "windows", COUNT, SUM,     \
      "Live (key, window) pairs; joins: buffered records")                     \
    X(STATE_BYTES, "stateBytes", VERTEX, GAUGE, "bytes", COUNT, SUM,           \
      "Bytes held by keyed state")                                             \
    X(QUEUE_LEN, "inputQueueLength", VERTEX, GAUGE, "items", COUNT, SUM,       \
      "Items waiting in the subtask's input queue")                            \
    X(QUEUE_CAP, "inputQueueCapacity", VERTEX, GAUGE, "items", COUNT, SUM,     \
      "Capacity of the subtask's input queue")                                 \
    X(BACKPRESSURE, "numBackpressureWaits", VERTEX, COUNTER, "waits", COUNT,   \
      SUM, "Times a source subtask waited for a full downstream queue")        \
    X(BUSY_RATE, "busyTimeMsPerSecond", VERTEX, GAUGE, "ms/s", COUNT, MAX,     \
      "Milliseconds per second the subtask was working: neither waiting "      \
      "for input nor backpressured (over the last one to two seconds; "        \
      "time blocked in a sink counts here)")                                   \
    X(BP_RATE, "backPressuredTimeMsPerSecond", VERTEX, GAUGE, "ms/s", COUNT,   \
      MAX,                                                                     \
      "Milliseconds per second the subtask waited for room downstream: a "     \
      "full queue of the next operator, or (sources) every batch in use")      \
    X(IDLE_RATE, "idleTimeMsPerSecond", VERTEX, GAUGE, "ms/s", COUNT, MAX,     \
      "Milliseconds per second the subtask waited for input (sources: "        \
      "polls that brought nothing)")                                           \
    X(SINK_RATE, "sinkTimeMsPerSecond", VERTEX, GAUGE, "ms/s", COUNT, MAX,     \
      "Milliseconds per second of busy time the subtask spent blocked in "     \
      "its sink's output calls (file, stdout and Kafka sinks)")                \
    X(BUSY_TIME, "busyTime", VERTEX, COUNTER, "ms", DURATION, SUM,             \
      "Time the subtask was working since it started (busyTimeMsPerSecond "    \
      "as a counter, for rate())")                                             \
    X(BP_TIME, "backPressuredTime", VERTEX, COUNTER, "ms", DURATION, SUM,      \
      "Time the subtask waited for room downstream since it started")          \
    X(IDLE_TIME, "idleTime", VERTEX, COUNTER, "ms", DURATION, SUM,             \
      "Time the subtask waited for input since it started")                    \
    X(LAST_RECORD_AGE, "lastRecordAgeMs", VERTEX, GAUGE, "ms", DURATION, MAX,  \
      "Processing time since the subtask last received a record")              \
    X(MAX_TS, "maxTimestamp", VERTEX, GAUGE, "ms", EVENT_TIME, MAX,            \
      "Highest event timestamp seen (sources)")                                \
    X(TS_UNIT, "timestampUnitSuspect", VERTEX, GAUGE, "enum", CODE, MAX,       \
      "0 timestamps look like the configured unit; 1 like seconds, "           \
      "2 microseconds, 3 nanoseconds read as milliseconds")                    \
    X(ALIGN_DRIFT, "alignmentDriftMs", VERTEX, GAUGE, "ms", DURATION, MAX,     \
      "How far the source's watermark is ahead of the slowest source "         \
      "in its alignment group")                                                \
    X(WM_SOURCE, "watermarkSource", VERTEX, GAUGE, "enum", CODE, MAX,          \
      "Sources with watermark.fallback: 0 the data drives the output "         \
      "watermark, 1 the processing-time fallback does")                        \
    X(WM_DATA, "dataWatermark", VERTEX, GAUGE, "ms", EVENT_TIME, MIN,          \
      "Sources with watermark.fallback: the watermark the data alone makes "   \
      "(what the output would be without the fallback)")                       \
    X(FB_STRETCH, "fallbackDrivingMs", VERTEX, GAUGE, "ms", DURATION, MAX,     \
      "Sources with watermark.fallback: how long the fallback has driven "     \
      "the output watermark without a break (0: the data drives)")             \
    X(FB_TIME, "fallbackDrivenTime", VERTEX, COUNTER, "ms", DURATION, SUM,     \
      "Sources with watermark.fallback: processing time during which the "     \
      "fallback drove the output watermark, in total")                         \
    X(RESULT_LAT_P50, "resultLatencyP50", VERTEX, GAUGE, "us", DURATION, MAX,  \
      "Windows: median time from the watermark that fired an on-time "         \
      "result leaving its source subtask to the row reaching the sink")        \
    X(RESULT_LAT_P99, "resultLatencyP99", VERTEX, GAUGE, "us", DURATION, MAX,  \
      "Windows: 99th percentile of the same result latency")                   \
    X(LAG_P50, "eventLagP50", VERTEX, GAUGE, "ms", DURATION, MAX,              \
      "Sources: median of how far records arrive behind the highest "          \
      "timestamp already seen in their partition (records of the first "       \
      "16 batches of a subtask, then of one batch in 8)")                      \
    X(LAG_P99, "eventLagP99", VERTEX, GAUGE, "ms", DURATION, MAX,              \
      "Sources: 99th percentile of the same out-of-orderness")                 \
    X(LAG_P999, "eventLagP999", VERTEX, GAUGE, "ms", DURATION, MAX,            \
      "Sources: 99.9th percentile of the same out-of-orderness")               \
    X(LAG_MAX, "eventLagMax", VERTEX, GAUGE, "ms", DURATION, MAX,              \
      "Sources: largest out-of-orderness of those sampled records")            \
    X(INPUT_WM, "currentInputNWatermark", INPUT, GAUGE, "ms", EVENT_TIME, MIN, \
      "Watermark of logical input N (Flink: currentInput1Watermark ...)")      \
    X(CH_WM, "channelWatermark", CHANNEL, GAUGE, "ms", EVENT_TIME, SUM,        \
      "Last watermark received on the channel")                                \
    X(CH_IDLE, "channelIdle", CHANNEL, GAUGE, "bool", FLAG, SUM,               \
      "1 when the channel is idle (left out of the minimum)")                  \
    X(CH_ENDED, "channelEnded", CHANNEL, GAUGE, "bool", FLAG, SUM,             \
      "1 when the channel has ended")                                          \
    X(P_WM, "partitionWatermark", PARTITION, GAUGE, "ms", EVENT_TIME, SUM,     \
      "The partition's own watermark")                                         \
    X(P_IDLE, "partitionIdle", PARTITION, GAUGE, "bool", FLAG, SUM,            \
      "1 when the partition is idle (no data for idle_timeout)")               \
    X(P_MAX_TS, "partitionMaxTimestamp", PARTITION, GAUGE, "ms", EVENT_TIME,   \
      SUM, "Highest timestamp seen in the partition")                          \
    X(P_RECORDS, "partitionRecords", PARTITION, COUNTER, "records", COUNT,     \
      SUM, "Records read from the partition")                                  \
    X(P_LAST_AGE, "partitionLastRecordAgeMs", PARTITION, GAUGE, "ms",          \
      DURATION, SUM, "Processing time since the partition's last record")      \
    X(P_PAUSED, "partitionPaused", PARTITION, GAUGE, "bool", FLAG, SUM,        \
      "1 when watermark alignment pauses the partition")                       \
    X(P_FINISHED, "partitionFinished", PARTITION, GAUGE, "bool", FLAG, SUM,    \
      "1 when the partition has ended")

typedef enum tdm_metric {
#define TDM__METRIC_ENUM(id, name, scope, type, unit, kind, agg, help)         \
    TDM_METRIC_##id,
    TDM_METRIC_MAP(TDM__METRIC_ENUM)
#undef TDM__METRIC_ENUM
        TDM_METRIC_COUNT_
} tdm_metric;

/** @brief The table's fields of metric @p id: name ("numRecordsIn"),
 *  scope ("VERTEX"), type ("COUNTER" or "GAUGE"), unit and help.  Static
 *  strings; NULL for an id outside the table. */
TDM_API const char *tdm_metric_name(tdm_metric id);
TDM_API const char *tdm_metric_scope(tdm_metric id);
TDM_API const char *tdm_metric_type(tdm_metric id);
TDM_API const char *tdm_metric_unit(tdm_metric id);
TDM_API const char *tdm_metric_help(tdm_metric id);
/** @brief Metric @p id's name in the Prometheus exposition (GET
 *  /metrics) into @p buf (@p n bytes, 96 are enough), following
 *  Prometheus' conventions: "tidemark_" and the name in snake case, an
 *  "Ms" in it cut, then "_timestamp_seconds" for a point in time,
 *  "_seconds" for a duration, "_ratio" for milliseconds per second (a
 *  share of time, 0 to 1: "backPressuredTimeMsPerSecond" ->
 *  "tidemark_back_pressured_time_ratio"), "_bytes" for a size, and
 *  "_total" for a counter ("numRecordsIn" ->
 *  "tidemark_num_records_in_total", "currentOutputWatermark" ->
 *  "tidemark_current_output_watermark_timestamp_seconds").  @returns how
 *  many decimal places the value moves there: 3 for milliseconds and
 *  milliseconds per second, 6 for microseconds, 0 for values written as
 *  they are. */
TDM_API int tdm_metric_prom_name(tdm_metric id, char *buf, size_t n);

/* What kind of quantity a metric's value is (the table's kind column). */
typedef enum tdm_metric_kind {
    TDM_METRIC_KIND_EVENT_TIME = 0,
    TDM_METRIC_KIND_CLOCK_TIME,
    TDM_METRIC_KIND_DURATION,
    TDM_METRIC_KIND_COUNT,
    TDM_METRIC_KIND_FLAG,
    TDM_METRIC_KIND_CODE
} tdm_metric_kind;

/* How the values of a vertex's subtasks combine (the table's combining
 * column). */
typedef enum tdm_metric_agg {
    TDM_METRIC_AGG_SUM = 0,
    TDM_METRIC_AGG_MIN,
    TDM_METRIC_AGG_MAX
} tdm_metric_agg;

/** @brief The kind of metric @p id (see the table's comment);
 *  TDM_METRIC_KIND_COUNT for an id outside the table. */
TDM_API tdm_metric_kind tdm_metric_kind_of(tdm_metric id);
/** @brief 1 when the value of metric @p id is a point in event time
 *  (kind TDM_METRIC_KIND_EVENT_TIME), so that TDM_TIME_MIN means "none
 *  yet" and TDM_TIME_MAX "end of input"; 0 otherwise, and for an id
 *  outside the table. */
TDM_API int tdm_metric_is_event_time(tdm_metric id);
/** @brief How the values of a vertex's subtasks combine into one for
 *  metric @p id: minimum, maximum or (saturating) sum;
 *  TDM_METRIC_AGG_SUM for an id outside the table. */
TDM_API tdm_metric_agg tdm_metric_combine(tdm_metric id);

/* One value of a snapshot.  Strings are owned by the snapshot. */
typedef struct tdm_metric_value {
    tdm_metric id;
    const char *vertex; /* node name; NULL at JOB scope */
    int subtask;        /* 0-based; -1 at JOB scope */
    int index;          /* INPUT (1-based), CHANNEL, PARTITION; else -1 */
    const char *label;  /* CHANNEL: "source#subtask"; PARTITION: its
                           name; else NULL */
    int64_t value;
} tdm_metric_value;

/* A vertex (node) of the running job, as the snapshot saw it. */
typedef struct tdm_vertex_info {
    const char *name;
    tdm_node_kind kind;
    const char *type; /* "file", "generator", "tumbling",
                         "interval", "stdout", ... */
    int parallelism;  /* subtasks (sinks: 1) */
    int n_inputs;
    const char *const *inputs; /* upstream vertex names, in input order */
} tdm_vertex_info;

/* A recent record that arrived too late for its window. */
typedef struct tdm_late_sample {
    const char *vertex; /* the window or join that refused it */
    int subtask;
    tdm_time_ms ts;        /* its timestamp */
    tdm_time_ms watermark; /* the subtask's watermark when it came */
    tdm_time_ms at;        /* processing time it came */
    int dropped;           /* 1 dropped, 0 sent to the late output */
    const char *row;       /* the record rendered as JSON */
} tdm_late_sample;

typedef struct tdm_metrics tdm_metrics;

/** @brief Takes a snapshot of every metric of @p job, its vertices and
 *  its recent late records (at most 32 per subtask).  Safe from any
 *  thread while the job runs (the hot path keeps relaxed atomics; the
 *  snapshot reads them without stopping the pipeline, so values of
 *  different subtasks may be a few batches apart); after a run it shows
 *  the final values; before any run, the vertices and no values.  The
 *  caller owns *out (tdm_metrics_free).  @returns TDM_OK, TDM_ERR_INVAL,
 *  TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_job_metrics(tdm_job *job, tdm_metrics **out);
/** @brief The job's processing time when the snapshot was taken. */
TDM_API tdm_time_ms tdm_metrics_time(const tdm_metrics *m);
/** @brief 1 while the job was running at the snapshot, else 0. */
TDM_API int tdm_metrics_running(const tdm_metrics *m);
/** @brief Number of values; tdm_metrics_at(m, i) for i below it returns
 *  one (owned by the snapshot), NULL past the end. */
TDM_API size_t tdm_metrics_count(const tdm_metrics *m);
TDM_API const tdm_metric_value *tdm_metrics_at(const tdm_metrics *m, size_t i);
/** @brief Looks a value up: @p vertex NULL for JOB scope, @p subtask and
 *  @p index -1 where the scope has none.  Returns 1 and sets *value when
 *  found, 0 when absent. */
TDM_API int tdm_metrics_find(const tdm_metrics *m, tdm_metric id,
                             const char *vertex, int subtask, int index,
                             int64_t *value);
/** @brief Vertices in the job's order (sources, operators, sinks);
 *  owned by the snapshot, NULL past the end. */
TDM_API size_t tdm_metrics_vertex_count(const tdm_metrics *m);
TDM_API const tdm_vertex_info *tdm_metrics_vertex(const tdm_metrics *m,
                                                  size_t i);
/** @brief Recent late records, oldest first; owned by the snapshot. */
TDM_API size_t tdm_metrics_late_count(const tdm_metrics *m);
TDM_API const tdm_late_sample *tdm_metrics_late_at(const tdm_metrics *m,
                                                   size_t i);
/* A record a source subtask let into the watermark more than a minute
 * ahead of processing time: the record behind a watermark ahead of the
 * clocks (a producer's clock running fast, a timestamp in the wrong
 * unit that slipped under timestamp_guard).  A later record replaces it
 * only when it runs at least twice as far ahead, so that a partition
 * whose every record runs ahead does not copy each one: it is the first
 * record that ran that far ahead. */
typedef struct tdm_ahead_record {
    const char *vertex; /* the source */
    int subtask;
    int partition;        /* its partition, source-wide */
    tdm_time_ms ts;       /* its timestamp */
    tdm_time_ms at;       /* processing time it was read */
    const char *location; /* "file.jsonl:17", "topic[3]@42"; NULL when
                             its source does not say (a generator) */
    const char *raw;      /* the record as read (its first 255 bytes), or
                             rendered as JSON when its source keeps no
                             bytes */
} tdm_ahead_record;

/** @brief The records that ran ahead of processing time, at most one
 *  per source subtask (tdm_ahead_record), in vertex and subtask order;
 *  owned by the snapshot. */
TDM_API size_t tdm_metrics_ahead_count(const tdm_metrics *m);
TDM_API const tdm_ahead_record *tdm_metrics_ahead_at(const tdm_metrics *m,
                                                     size_t i);
/** @brief Frees a snapshot (NULL is fine). */
TDM_API void tdm_metrics_free(tdm_metrics *m);

/* ---- Why has a window not fired? ---- */

/* What a window subtask knows about one (key, window). */
typedef struct tdm_window_status {
    int subtask;            /* the subtask owning the key */
    tdm_time_ms watermark;  /* that subtask's current watermark */
    tdm_time_ms max_ts;     /* the window's last timestamp (end - 1) */
    tdm_time_ms cleanup;    /* max_ts + allowed lateness */
    int has_state;          /* 1 if the window holds records now */
    int64_t elements;       /* records the window holds (if known; -1) */
    int fired;              /* 1 a result for it was emitted; 0 not (or
                               longer ago than the subtask remembers:
                               the last 8,192 firings) */
    tdm_time_ms fired_wm;   /* watermark at its first firing (fired) */
    int holding_channel;    /* the channel with the lowest watermark
                               among active ones (-1 none) */
    tdm_time_ms holding_wm; /* its watermark */
    int idle_channels;      /* channels idle now */
    int running;            /* 0 when the job has finished: the answer
                               then comes from the final snapshot */
    int64_t blocked_ms;     /* > 0: the subtask could not answer, blocked
                               that long (in its sink, or waiting for room
                               downstream past the 2 s wait); the answer
                               then comes from its published figures
                               (watermark, channels), has_state and
                               fired are -1 (unknown), elements -1 */
} tdm_window_status;

/** @brief Asks window vertex @p vertex about key @p key (the key fields'
 *  values as text, joined by ',' for several fields) and the window
 *  [start, end).  The owning subtask answers between two batches, so a
 *  running pipeline is not stopped; the call waits at most 2 s for it.
 *  A subtask blocked in its sink (for 200 ms or more), or silent for the
 *  2 s, is answered for from its published figures (blocked_ms > 0).
 *  Borrows every argument; fills *out.  @returns TDM_OK;
 *  TDM_ERR_INVAL (no such window vertex, key not parsable by the key
 *  fields' types, start >= end) with a message in errbuf;
 *  TDM_ERR_STATE (the job has not run). */
TDM_API tdm_err tdm_job_window_status(tdm_job *job, const char *vertex,
                                      const char *key, tdm_time_ms start,
                                      tdm_time_ms end, tdm_window_status *out,
                                      char *errbuf, size_t errbuf_size);

/* ====================================================================== */
/* Reading a job back                                                      */
/* ====================================================================== */

/* What a job's configuration and its run say, for tools that watch a job
** (the embedded server and its diagnosis are one): the keys read back,
** typed where a key is a choice, and the run's state.  Choices come back
** as enums, never as ordinals of the configuration table, so that a
** reordered table cannot change a reader's answer. */

/* The window assigner of a window or window-join node. */
typedef enum tdm_window_kind {
    TDM_WINDOW_KIND_NONE = 0, /* not a window: a source, a sink, an
                                 interval join */
    TDM_WINDOW_KIND_TUMBLING,
    TDM_WINDOW_KIND_SLIDING,
    TDM_WINDOW_KIND_SESSION,
    TDM_WINDOW_KIND_GLOBAL,
    TDM_WINDOW_KIND_CUMULATE
} tdm_window_kind;

/* The trigger of a window node (job key "trigger"). */
typedef enum tdm_trigger_kind {
    TDM_TRIGGER_KIND_DEFAULT = 0, /* the assigner's own */
    TDM_TRIGGER_KIND_EVENT_TIME,
    TDM_TRIGGER_KIND_PROCESSING_TIME,
    TDM_TRIGGER_KIND_COUNT,
    TDM_TRIGGER_KIND_CONTINUOUS_EVENT_TIME,
    TDM_TRIGGER_KIND_NEVER
} tdm_trigger_kind;

/** @brief The text of job key @p key: as set, or the table's default
 *  ("" for an unknown key).  Library-owned; valid until the key is set
 *  again or the job is destroyed. */
TDM_API const char *tdm_job_get(const tdm_job *job, const char *key);
/** @brief The value of job key @p key when it is a number: an INT as is,
 *  a BOOL as 0 or 1, a DURATION in ms.  0 for an unknown key and for
 *  keys that are not numbers (strings; choices have typed readers). */
TDM_API int64_t tdm_job_get_int(const tdm_job *job, const char *key);
/** @brief The same for the keys of node @p node (its kind's keys). */
TDM_API const char *tdm_node_get(const tdm_node *node, const char *key);
TDM_API int64_t tdm_node_get_int(const tdm_node *node, const char *key);
/** @brief The kind of node @p node. */
TDM_API tdm_node_kind tdm_node_kind_of(const tdm_node *node);
/** @brief "source", "window", "join" or "sink" ("node" outside the
 *  enum).  A static string. */
TDM_API const char *tdm_node_kind_name(tdm_node_kind kind);
/** @brief The window assigner of a window node, or of a window join;
 *  TDM_WINDOW_KIND_NONE for every other node (interval joins too). */
TDM_API tdm_window_kind tdm_node_window_kind(const tdm_node *node);
/** @brief 1 when window node @p node assigns windows by processing time
 *  (window.time processing), else 0. */
TDM_API int tdm_node_processing_time(const tdm_node *node);
/** @brief The trigger of window node @p node; TDM_TRIGGER_KIND_DEFAULT
 *  for every other node. */
TDM_API tdm_trigger_kind tdm_node_trigger(const tdm_node *node);
/** @brief The trigger's name in a job file ("processing_time"); a
 *  static string, "" outside the enum. */
TDM_API const char *tdm_trigger_name(tdm_trigger_kind kind);

/** @brief 1 while @p job runs (between the start and the end of
 *  tdm_job_run), else 0.  Safe from any thread (one atomic load). */
TDM_API int tdm_job_is_running(const tdm_job *job);
/** @brief 1 while @p job waits out restart.strategy's back-off before
 *  a restart, else 0.  Safe from any thread. */
TDM_API int tdm_job_is_restarting(const tdm_job *job);
/** @brief The processing time the job's last run started; 0 before the
 *  first run.  Safe from any thread. */
TDM_API tdm_time_ms tdm_job_start_time(const tdm_job *job);
/** @brief Copies the message of the last failed checkpoint (its cause:
 *  the I/O error and path; "" when none failed) into @p buf (@p n bytes,
 *  truncated, NUL-terminated).  Safe from any thread while the job
 *  runs.  Returns the message's full length. */
TDM_API size_t tdm_job_checkpoint_failure(tdm_job *job, char *buf, size_t n);

/* ====================================================================== */
/* The embedded HTTP server                                                */
/* ====================================================================== */

/* A read-only HTTP server (libmicrohttpd, on threads of its own) that
** serves one job's metrics: the REST API (docs/rest-api.md), Prometheus
** text at /metrics, the live web page at /, and the diagnosis.  It only
** takes snapshots (tdm_job_metrics), so it never blocks the pipeline. */
typedef struct tdm_http tdm_http;

/** @brief Starts serving @p job on @p address ("127.0.0.1:8081",
 *  "[::1]:8081", ":8081" means loopback; port 0 picks a free port, see
 *  tdm_http_port).  @p token, if not NULL, is copied and then required as
 *  "Authorization: Bearer TOKEN" (scheme in any case) on every request
 *  but the page; it must be 1-4096 bytes of printable ASCII without
 *  spaces.  The job keys http.header_timeout and http.allowed_hosts are
 *  read now: requests whose Host header names another host get 403
 *  (docs/rest-api.md, "The Host check").  Keeps a reference to @p job
 *  until tdm_http_stop.  @returns TDM_OK; TDM_ERR_INVAL (bad address or
 *  token, message in errbuf); TDM_ERR_IO (cannot bind, message names the
 *  address); TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_http_start(tdm_job *job, const char *address,
                               const char *token, tdm_http **out, char *errbuf,
                               size_t errbuf_size);
/** @brief Starts serving the tasks of @p host (not yet running; borrowed
 *  until tdm_http_stop, which must come after tdm_taskhost_run returned)
 *  on @p address with @p token, as tdm_http_start does for one job: each
 *  task's job is served while the host runs it, under the id
 *  "<name>.task-<n>" (GET /jobs lists them, every /jobs/:id route
 *  answers for each); GET /tasks lists the tasks with their owner epoch,
 *  checkpoints and state size; /metrics holds every task's series with a
 *  task label.  The keys http.* are read from the host's job definition.
 *  Sets the host's watcher (tdm_taskhost_watch).  @returns as
 *  tdm_http_start. */
TDM_API tdm_err tdm_http_start_tasks(tdm_taskhost *host, tdm_job *def,
                                     const char *address, const char *token,
                                     tdm_http **out, char *errbuf,
                                     size_t errbuf_size);
/** @brief The port the server listens on. */
TDM_API int tdm_http_port(const tdm_http *srv);
/** @brief Stops the server and frees it (NULL is fine). */
TDM_API void tdm_http_stop(tdm_http *srv);

/* The configuration table, for tools and documentation. */
/** @brief Describes row @p i of the configuration table (0-based); returns
 *  0 past the end.  Every out pointer may be NULL; strings are static. */
TDM_API int tdm_conf_describe(int i, const char **scope, const char **key,
                              const char **type, const char **def,
                              const char **unit, const char **choices,
                              const char **description);

/* ====================================================================== */
/* Tools: reading a source's input without running the job                */
/* ====================================================================== */

/* What tools such as `tidemark analyze` need to read and measure a job's
** input the way the job would read it, without a run: durations and
** timestamp text as the job file writes them, a schema check, a source
** scan, and the run's dead-letter file.  EXPERIMENTAL (since 0.1.0):
** these may still change. */

/** @brief Parses a duration as the job file writes one ("250ms", "5s",
 *  "1m30s", "-2h", bare digits for ms) into *out (OUT).  Borrows
 *  @p text.  @returns TDM_OK; TDM_ERR_INVAL (@p text or @p out NULL);
 *  TDM_ERR_PARSE (malformed, or beyond the int64 range).
 *  @thread any. */
TDM_API tdm_err tdm_duration_parse(const char *text, tdm_time_ms *out);
/** @brief Writes @p ms with the largest unit that divides it ("90s",
 *  "2h", "1d", "250ms", "0ms"; "forever" and "-forever" for TDM_TIME_MAX
 *  and TDM_TIME_MIN) into @p buf, always terminated and cut to @p n
 *  bytes (nothing written when @p n is 0).  tdm_duration_parse reads
 *  every finite result back.  @thread any. */
TDM_API void tdm_duration_format(tdm_time_ms ms, char *buf, size_t n);

/** @brief The start of the window of size @p size_ms, aligned to
 *  @p offset_ms, that holds @p ts: offset + floor((ts - offset) / size) *
 *  size, as the tumbling and sliding assigners compute it (for sliding
 *  windows pass the slide: the latest window holding @p ts).  Never
 *  overflows; saturates at TDM_TIME_MIN.  Returns @p ts when @p size_ms
 *  is not positive.  @thread any. */
TDM_API tdm_time_ms tdm_window_start(tdm_time_ms ts, tdm_time_ms offset_ms,
                                     tdm_time_ms size_ms);

/* The units of timestamp values, as the source key timestamp.unit names
** them ("ms", "s", "us", "ns", "iso8601"). */
typedef enum tdm_ts_unit {
    TDM_TS_UNIT_MS = 1,
    TDM_TS_UNIT_S = 2,
    TDM_TS_UNIT_US = 3,
    TDM_TS_UNIT_NS = 4,
    TDM_TS_UNIT_ISO8601 = 5 /* ISO-8601 text */
} tdm_ts_unit;

/** @brief The name timestamp.unit gives @p unit ("ms", ..., "iso8601");
 *  "?" for a value not in tdm_ts_unit.  Static storage. */
TDM_API const char *tdm_ts_unit_name(tdm_ts_unit unit);
/** @brief Converts timestamp text to epoch ms the way a source reads its
 *  timestamp field: ISO-8601 for TDM_TS_UNIT_ISO8601 (a zone such as
 *  "+01:00" may follow; an integer is epoch ms), else a decimal number of
 *  the unit ("1733133600", "1733133600.25"), exact or rounded down.
 *  Blanks around it are ignored.  Borrows @p text (@p len bytes, no
 *  terminator needed).
 *  @returns TDM_OK with *out (OUT) set; TDM_ERR_INVAL (NULL pointer, or
 *  @p unit not in tdm_ts_unit); TDM_ERR_PARSE (not a timestamp);
 *  TDM_ERR_RANGE (beyond the int64 range of epoch ms).  @thread any. */
TDM_API tdm_err tdm_time_parse(const char *text, size_t len, tdm_ts_unit unit,
                               tdm_time_ms *out);

/** @brief Checks schema text as the source key `schema` reads it
 *  ("name:type, ..." with types int64, double, string, bool, timestamp),
 *  so that a tool can report it in its own words.  Borrows @p text.
 *  @returns TDM_OK; TDM_ERR_INVAL with the reason in errbuf, without the
 *  key's name (it may be left empty); TDM_ERR_NOMEM.  @thread any. */
TDM_API tdm_err tdm_schema_check(const char *text, char *errbuf,
                                 size_t errbuf_size);
/** @brief The type of field @p i of a source's schema, or 0 when the
 *  source has no field @p i (see tdm_node_field_index). */
TDM_API tdm_type tdm_node_field_type(const tdm_node *source, int i);

/* ---- Source scans ----
** A scan reads the input of one file source of a job exactly as a run
** at parallelism 1 reads it: the same line reader and JSON/CSV parsers,
** one partition per file (or per value of partition.field, numbered in
** the order they first appear), files interleaved one batch.size batch
** at a time, bad lines handed to a callback with their location.  It
** runs nothing else: no watermarks, no guard, no operators.
**
**   tdm_source_scan_new(job, "clicks", paths, n, on_bad, ud, &sc, ...)
**   while (tdm_source_scan_next(sc, &item, &row, &p) == TDM_OK &&
**          item != TDM_SCAN_END)
**       ... a record of partition p, or partition p ended ...
**   tdm_source_scan_destroy(sc)
*/
typedef struct tdm_source_scan tdm_source_scan;

/* What tdm_source_scan_next delivered. */
typedef enum tdm_scan_item {
    TDM_SCAN_RECORD = 1,    /* a record with its event time */
    TDM_SCAN_PARTITION_END, /* a file partition's input ended (after the
                               records of the batch it ended in) */
    TDM_SCAN_END            /* every input ended; so does every later
                               call */
} tdm_scan_item;

/** Called for every line that is not a record: @p location is
 *  "file:line", @p reason says what is wrong (a field missing, not of
 *  its type, no event time, ...), @p raw the line as read (@p raw_len
 *  bytes).  All three are borrowed for the call. */
typedef void (*tdm_bad_record_fn)(void *opaque, const char *location,
                                  const char *reason, const char *raw,
                                  size_t raw_len);

/** @brief Opens a scan of source node @p source of @p job over the files
 *  @p paths[0 .. n_paths) in place of its `path` ("-" is standard input,
 *  named "<stdin>"; globs are not expanded).  The node's format, csv.*,
 *  schema, partition.field, timestamp.field and timestamp.unit apply, and
 *  the job's batch.size.  The source must be of type file or stdin with
 *  time: event.
 *  Keeps a reference to @p job until tdm_source_scan_destroy (its
 *  settings must not change meanwhile); borrows @p paths (copied);
 *  keeps @p on_bad (may be NULL: bad lines are only skipped) and
 *  @p opaque until tdm_source_scan_destroy.  *out (OUT) is set on success.
 *  @returns TDM_OK; TDM_ERR_INVAL (no such source, no schema, no
 *  timestamp.field in it, a partition.field not in it, n_paths < 1;
 *  message in errbuf); TDM_ERR_UNSUPPORTED (not a file or stdin source,
 *  or not event time); TDM_ERR_IO ("cannot open 'PATH': reason");
 *  TDM_ERR_NOMEM.  @thread one thread per scan. */
TDM_API tdm_err tdm_source_scan_new(tdm_job *job, const char *source,
                                    const char *const *paths, int n_paths,
                                    tdm_bad_record_fn on_bad, void *opaque,
                                    tdm_source_scan **out, char *errbuf,
                                    size_t errbuf_size);
/** @brief Delivers the next item in *item (OUT).  For TDM_SCAN_RECORD,
 *  *row (OUT) is the record, borrowed until the next call (its event time
 *  is tdm_row_ts; fields through tdm_row_*), and *partition (OUT) its
 *  partition; for TDM_SCAN_PARTITION_END *row is NULL and *partition the
 *  partition that ended; for TDM_SCAN_END *row is NULL and *partition -1.
 *  Calls on_bad, on this thread and inside this call, for bad lines read
 *  on the way.  Standard input may block until a line or its end arrives.
 *  @returns TDM_OK; TDM_ERR_IO (a read failed: tdm_source_scan_errmsg
 *  says "reading 'NAME' failed: reason"); TDM_ERR_NOMEM.  After an error
 *  the scan can only be destroyed. */
TDM_API tdm_err tdm_source_scan_next(tdm_source_scan *sc, tdm_scan_item *item,
                                     const tdm_row **row, int *partition);
/** @brief The message of the scan's last error ("" if none). */
TDM_API const char *tdm_source_scan_errmsg(const tdm_source_scan *sc);
/** @brief The name of partition @p partition: the file's path as given
 *  ("<stdin>" for "-"), or with partition.field that field's value as
 *  text ("null" when absent).  *name (OUT, @p len bytes, not terminated)
 *  is valid until tdm_source_scan_destroy.  @returns TDM_OK;
 *  TDM_ERR_RANGE (no such partition yet). */
TDM_API tdm_err tdm_source_scan_partition_name(const tdm_source_scan *sc,
                                               int partition, const char **name,
                                               size_t *len);
/** @brief Field @p field of @p row (a record of this scan) as a time,
 *  read as the source reads its timestamp field: a timestamp field as
 *  it is, an int64, double or string field in the source's
 *  timestamp.unit.  @returns TDM_OK with *out (OUT) set;
 *  TDM_ERR_NO_TIMESTAMP (the field is null); TDM_ERR_PARSE or
 *  TDM_ERR_RANGE (not a time in that unit); TDM_ERR_INVAL (no such field,
 *  or a bool field). */
TDM_API tdm_err tdm_source_scan_field_time(const tdm_source_scan *sc,
                                           const tdm_row *row, int field,
                                           tdm_time_ms *out);
/** @brief The key of @p row over fields @p fields[0 .. n_fields) (schema
 *  indices, borrowed), encoded as the job's key_by encodes it: equal
 *  field values give equal bytes, different ones different bytes.
 *  *key (OUT, *len bytes) is valid until the next call on @p sc.
 *  @returns TDM_OK; TDM_ERR_INVAL (n_fields < 1 or a field out of
 *  range); TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_source_scan_key(tdm_source_scan *sc, const tdm_row *row,
                                    const int *fields, int n_fields,
                                    const char **key, size_t *len);
/** @brief Closes the inputs and frees the scan (NULL is fine). */
TDM_API void tdm_source_scan_destroy(tdm_source_scan *sc);

/* ---- Dead-letter files ----
** The JSON-lines file a run writes bad records to (job key dead_letter),
** for tools that find bad records themselves. */
typedef struct tdm_dead_letters tdm_dead_letters;

/** @brief Creates (or truncates) the dead-letter file @p path, and its
 *  missing parent folders, as a run does.  Copies @p path.  *out (OUT)
 *  is set on success.  @returns TDM_OK; TDM_ERR_IO (cannot create it:
 *  "cannot create 'PATH': reason" in errbuf); TDM_ERR_INVAL (NULL
 *  @p path or @p out); TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_dead_letters_open(const char *path, tdm_dead_letters **out,
                                      char *errbuf, size_t errbuf_size);
/** @brief Appends one bad record: where it was read, why it is bad and
 *  its bytes (@p raw_len of @p raw), all borrowed; the same line a run
 *  writes.  @returns TDM_OK, TDM_ERR_IO (the write failed), TDM_ERR_NOMEM. */
TDM_API tdm_err tdm_dead_letters_write(tdm_dead_letters *dl,
                                       const char *location, const char *reason,
                                       const char *raw, size_t raw_len);
/** @brief Flushes and closes the file and frees @p dl (NULL is fine:
 *  TDM_OK).  @returns TDM_OK or TDM_ERR_IO (flushing or closing failed:
 *  the reason in errbuf); @p dl is freed either way. */
TDM_API tdm_err tdm_dead_letters_close(tdm_dead_letters *dl, char *errbuf,
                                       size_t errbuf_size);

#ifdef __cplusplus
}
#endif

#endif /* TIDEMARK_H */
