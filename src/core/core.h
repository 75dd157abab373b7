/* SPDX-License-Identifier: MIT */
/* core.h - internal definitions shared by every module: the layout of
 * records and events, allocation with fault injection, error messages into
 * caller buffers, and saturating time arithmetic.
 *
 * Nothing here is public; tidemark.h only sees opaque handles.  Modules
 * build events on the stack and hand them to tdm__emit().
 */
#ifndef TDM_CORE_H
#define TDM_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "tidemark.h"

/* ---- Records ---- */

/* The layout behind tdm_record.  Key and payload are borrowed pointers. */
struct tdm_record {
    const char *key;
    size_t key_len;
    tdm_time_ms ts;
    double value;
    const void *payload;
    size_t payload_len;
};

/* ---- Events ---- */

/* The layout behind tdm_event.  Producers zero it (TDM__EVENT_INIT), fill
 * the fields their event type uses and call tdm__emit(). */
struct tdm_event {
    tdm_event_type type;
    tdm_time_ms time;
    int idle;
    const char *key;
    size_t key_len;
    int has_window;
    tdm_time_ms win_start, win_end;
    double value;
    const double *values;
    size_t n_values;
    const void *bytes;
    size_t bytes_len;
    tdm_pane_timing pane_timing;
    int64_t pane_index;
    int is_update;
    const tdm_record *rec[2];
    int side;
    int index;
    const int *targets;
    size_t n_targets;
};

#define TDM__EVENT_INIT(t)                                                     \
    {                                                                          \
        .type = (t), .side = -1, .index = -1                                   \
    }

/* The emit callback and its opaque pointer, as every operator keeps them. */
typedef struct tdm__sink {
    tdm_emit_cb fn;
    void *opaque;
} tdm__sink;

static inline void tdm__emit(const tdm__sink *s, const tdm_event *ev)
{
    if (s->fn)
        s->fn(s->opaque, ev);
}

/* Emits a WATERMARK event. */
void tdm__emit_watermark(const tdm__sink *s, tdm_time_ms wm);
/* Emits a STATUS event (idle = 1 or 0). */
void tdm__emit_status(const tdm__sink *s, int idle);

/* ---- Allocation ----
 * All library memory goes through these, so tests can fail the N-th
 * allocation (tdm__alloc_fail_after, testhooks.h) and check
 * TDM_ERR_NOMEM paths.
 * tdm__free(NULL) is a no-op. */
void *tdm__malloc(size_t n);
void *tdm__calloc(size_t count, size_t size);
void *tdm__realloc(void *p, size_t n);
void tdm__free(void *p);
char *tdm__strndup(const char *s, size_t n);
void *tdm__memdup(const void *p, size_t n);

/* ---- Messages ---- */

/* Formats into a caller's (errbuf, size); errbuf may be NULL.  Returns
 * @p err so callers can write `return tdm__errf(buf, n, ERR, "...")`. */
tdm_err tdm__errf(char *errbuf, size_t errbuf_size, tdm_err err,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A fixed buffer for per-handle messages (tdm_X_errmsg). */
#define TDM__MSG_SIZE 256
typedef struct tdm__msg {
    char text[TDM__MSG_SIZE];
} tdm__msg;
tdm_err tdm__msgf(tdm__msg *m, tdm_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- Time ---- */

/* Milliseconds of CLOCK_MONOTONIC (src/time/clock.c): for timeouts and
 * intervals of the machinery, never for event time. */
int64_t tdm__mono_ms(void);
/* The same monotonic clock in microseconds (measurements only: result
 * latency; never event or processing time semantics). */
int64_t tdm__mono_us(void);

static inline tdm_time_ms tdm__time_add_sat(tdm_time_ms a, tdm_time_ms b)
{
    tdm_time_ms r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? TDM_TIME_MAX : TDM_TIME_MIN;
    return r;
}

static inline tdm_time_ms tdm__time_sub_sat(tdm_time_ms a, tdm_time_ms b)
{
    tdm_time_ms r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? TDM_TIME_MAX : TDM_TIME_MIN;
    return r;
}

/* The greatest common divisor of two positive durations: the slice
 * length of sliding windows, gcd(size, slide), which both the source's
 * local aggregation and the window's sliced mode cut time into. */
static inline tdm_time_ms tdm__time_gcd(tdm_time_ms a, tdm_time_ms b)
{
    while (b) {
        tdm_time_ms r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Floored window start: offset + floor((ts - offset) / size) * size,
 * computed without overflow for every ts (saturates at TDM_TIME_MIN). */
tdm_time_ms tdm__window_start(tdm_time_ms ts, tdm_time_ms offset,
                              tdm_time_ms size);

/* The clock layout is private to clock.c; readers use tdm_clock_now(). */

/* A table position of key bytes: core/hash.h's seeded byte hash with
 * seed TDM__HASH_TABLE (not the routing hash, whose bits the keys of one
 * subtask share). */
uint64_t tdm__hash_bytes(const void *p, size_t n);

#endif /* TDM_CORE_H */
