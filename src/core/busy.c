/* SPDX-License-Identifier: MIT */
/* busy.c - a subtask thread's time account (busy.h): waits marked on a
 * thread-local account, totals that include the wait in progress, and
 * milliseconds per second over a window of at least a second.
 *
 * The window: readings of the totals kept every half second or more
 * (four at most); a rate is taken against the newest reading at least a
 * second old (R-BUSY-2), so it covers one to two seconds when something
 * reads every second (the history sampler does, while a server runs).
 */
#include "core/busy.h"

#include <time.h>

#include "core.h"

static _Thread_local tdm__busy *self;

/* R-BUSY-4: the coarse monotonic clock (a few ms of resolution, read
 * without a system call and cheaper than the precise one): waits are
 * marked under queue locks, and a share of time per second needs no
 * finer grain - a tick falls inside a wait as often as the wait is long,
 * so short waits are counted right on average. */
int64_t tdm__busy_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void tdm__busy_attach(tdm__busy *b)
{
    self = b;
    if (b && atomic_load_explicit(&b->start_us, memory_order_relaxed) == 0)
        atomic_store_explicit(&b->start_us, tdm__busy_now(),
                              memory_order_relaxed);
}

int64_t tdm__busy_begin(tdm__busy_kind k)
{
    if (!self ||
        atomic_load_explicit(&self->since_us[k], memory_order_relaxed) != 0)
        return 0; /* R-BUSY-1: no account, or a wait already open */
    int64_t now = tdm__busy_now();
    if (now == 0)
        now = 1;
    atomic_store_explicit(&self->since_us[k], now, memory_order_relaxed);
    return now;
}

void tdm__busy_end(tdm__busy_kind k, int64_t token)
{
    if (!self || token == 0)
        return;
    int64_t d = tdm__busy_now() - token;
    atomic_fetch_add_explicit(&self->spent_us[k], d > 0 ? d : 0,
                              memory_order_relaxed);
    atomic_store_explicit(&self->since_us[k], 0, memory_order_relaxed);
}

void tdm__busy_cancel(tdm__busy_kind k, int64_t token)
{
    if (self && token != 0)
        atomic_store_explicit(&self->since_us[k], 0, memory_order_relaxed);
}

void tdm__busy_on_wait(void)
{
    if (self && self->on_wait)
        self->on_wait(self->on_wait_ud);
}

int64_t tdm__busy_waiting(const tdm__busy *b, tdm__busy_kind k, int64_t now_us)
{
    if (!b)
        return 0;
    int64_t s = atomic_load_explicit(&b->since_us[k], memory_order_relaxed);
    return s != 0 && now_us > s ? now_us - s : 0;
}

/* Totals at @p now_us in microseconds: out[k] for each kind, waits in
 * progress included, and out[TDM__BUSY_N_] the time since attach. */
static void totals(const tdm__busy *b, int64_t now_us,
                   int64_t out[TDM__BUSY_N_ + 1])
{
    /* The wait in progress is read before the ended ones: an end between
     * the two reads then counts at most once (R-BUSY-3). */
    for (int k = 0; k < TDM__BUSY_N_; k++) {
        int64_t open = tdm__busy_waiting(b, k, now_us);
        out[k] =
            open + atomic_load_explicit(&b->spent_us[k], memory_order_relaxed);
    }
    int64_t st = atomic_load_explicit(&b->start_us, memory_order_relaxed);
    out[TDM__BUSY_N_] = st != 0 && now_us > st ? now_us - st : 0;
}

/* Per mille of @p span spent in @p d, within [0, 1000]. */
static int64_t per_s(int64_t d, int64_t span)
{
    if (d <= 0 || span <= 0)
        return 0;
    return d >= span ? 1000 : d * 1000 / span;
}

/* The reading rates are taken against (R-BUSY-2): the newest one at
 * least a second old, else the oldest, else none (-1: since attach). */
static int base_reading(const tdm__busy *b, int64_t now_us)
{
    for (int i = b->w_n - 1; i >= 0; i--)
        if (now_us - b->w_at[i] >= 1000000)
            return i;
    return b->w_n > 0 ? 0 : -1;
}

/* Keeps the reading @p cur at @p now_us once the newest kept one is
 * half a second old, dropping the oldest of TDM__BUSY_READINGS. */
static void keep_reading(tdm__busy *b, int64_t now_us, const int64_t *cur)
{
    if (b->w_n > 0 && now_us - b->w_at[b->w_n - 1] < 500000)
        return;
    if (b->w_n == TDM__BUSY_READINGS) {
        for (int i = 1; i < b->w_n; i++) {
            b->w_at[i - 1] = b->w_at[i];
            for (int k = 0; k < TDM__BUSY_N_; k++)
                b->w_spent[i - 1][k] = b->w_spent[i][k];
        }
        b->w_n--;
    }
    b->w_at[b->w_n] = now_us;
    for (int k = 0; k < TDM__BUSY_N_; k++)
        b->w_spent[b->w_n][k] = cur[k];
    b->w_n++;
}

bool tdm__busy_rates(tdm__busy *b, int64_t now_us, int64_t ms[TDM__BUSY_N_ + 1],
                     int64_t cur[TDM__BUSY_N_ + 1])
{
    int64_t st = atomic_load_explicit(&b->start_us, memory_order_relaxed);
    if (st == 0)
        return false;
    totals(b, now_us, cur);
    int base = base_reading(b, now_us);
    int64_t span = now_us - (base >= 0 ? b->w_at[base] : st);
    for (int k = 0; k < TDM__BUSY_N_; k++)
        ms[k] = per_s(cur[k] - (base >= 0 ? b->w_spent[base][k] : 0), span);
    int64_t rest = 1000 - ms[TDM__BUSY_IDLE] - ms[TDM__BUSY_BP];
    ms[TDM__BUSY_N_] = rest > 0 ? rest : 0;
    keep_reading(b, now_us, cur);
    return true;
}
