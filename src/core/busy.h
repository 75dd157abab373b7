/* SPDX-License-Identifier: MIT */
/* busy.h - where a subtask thread's time goes, as Flink measures it:
 * waiting for input (idle), waiting for room downstream (backpressured),
 * blocked in a sink's output call (sink), and the rest (busy, which
 * includes the sink time: the thread is held by its own output).
 *
 * Counting waits says little: a source blocked for 20 s behind a slow
 * sink waits once.  Time says it all: that source is backpressured 1000
 * ms of every second.  So every place a subtask thread can block marks
 * the wait's start and end on the thread's account (a thread-local
 * pointer set when the thread starts), and a wait still in progress
 * counts up to the moment a snapshot reads it.  A wait costs two reads
 * of the coarse monotonic clock; the hot path, which does not wait,
 * costs nothing.
 *
 * Snapshots turn the totals into milliseconds per second over a window
 * of at least one second (tdm__busy_rates), Flink's busyTimeMsPerSecond,
 * backPressuredTimeMsPerSecond and idleTimeMsPerSecond.
 *
 * Invariant: spent[] and since[] have one writer, the account's thread;
 * the rate window is moved only by tdm__busy_rates, under its caller's
 * lock (the run record's metrics lock).
 */
#ifndef TDM_BUSY_H
#define TDM_BUSY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum tdm__busy_kind {
    TDM__BUSY_IDLE = 0, /* waiting for input */
    TDM__BUSY_BP,       /* waiting for a downstream queue or batch */
    TDM__BUSY_SINK,     /* inside a sink's blocking output call */
    TDM__BUSY_N_
} tdm__busy_kind;

#define TDM__BUSY_READINGS 4

typedef struct tdm__busy {
    _Atomic int64_t spent_us[TDM__BUSY_N_]; /* ended waits */
    _Atomic int64_t since_us[TDM__BUSY_N_]; /* the wait in progress, 0 */
    _Atomic int64_t start_us;               /* attached at; 0: not yet */
    /* The rate window (tdm__busy_rates): readings of the totals, oldest
     * first. */
    int64_t w_at[TDM__BUSY_READINGS];
    int64_t w_spent[TDM__BUSY_READINGS][TDM__BUSY_N_];
    int w_n;
    /* Called (at most every 100 ms) while the thread waits for room
     * downstream, so that it still answers questions; NULL: none. */
    void (*on_wait)(void *ud);
    void *on_wait_ud;
} tdm__busy;

/* The clock of the accounts, in microseconds (monotonic, coarse). */
int64_t tdm__busy_now(void);

/* Makes @p b the calling thread's account from now (NULL: none). */
void tdm__busy_attach(tdm__busy *b);

/* Marks the start of a wait of kind @p k on the calling thread's
 * account; returns a token for tdm__busy_end (0: no account, and
 * tdm__busy_end then does nothing).  Waits do not nest: a second begin
 * of the same kind before its end is ignored (token 0). */
int64_t tdm__busy_begin(tdm__busy_kind k);
void tdm__busy_end(tdm__busy_kind k, int64_t token);
/* Ends the wait without counting it (it turned out to be work). */
void tdm__busy_cancel(tdm__busy_kind k, int64_t token);

/* The calling thread's on_wait hook, if any (see above). */
void tdm__busy_on_wait(void);

/* How long the wait of kind @p k in progress on @p b has lasted at
 * @p now_us (tdm__busy_now), 0 when none. */
int64_t tdm__busy_waiting(const tdm__busy *b, tdm__busy_kind k, int64_t now_us);

/* Milliseconds per second over the last window of at least one second
 * (or since attach, when younger): ms[TDM__BUSY_IDLE], ms[TDM__BUSY_BP],
 * ms[TDM__BUSY_SINK], and ms[TDM__BUSY_N_] busy (1000 minus idle and
 * backpressured); and the totals at @p now_us in microseconds, tot[k]
 * for each kind (waits in progress included) and tot[TDM__BUSY_N_] the
 * time since attach.  Moves the window; call under the readers' lock.
 * Returns false (nothing set) for an account never attached. */
bool tdm__busy_rates(tdm__busy *b, int64_t now_us, int64_t ms[TDM__BUSY_N_ + 1],
                     int64_t tot[TDM__BUSY_N_ + 1]);

#endif /* TDM_BUSY_H */
