/* SPDX-License-Identifier: MIT */
/* deadline.c - the header deadline: a client has http.header_timeout to
 * send a request's line and headers, counted from when its connection
 * opened or its previous reply ended; then the connection is cut.
 *
 * libmicrohttpd's own timeout is an idle timeout: a client that sends
 * one header line every 2 s is never idle, so 64 of them held every
 * connection of the server for as long as they liked.  A watcher thread
 * sleeps until the earliest deadline and shuts down (shutdown(2), both
 * ways) the sockets whose request has not arrived; the connection's
 * thread then reads end of file and closes it as usual.
 *
 *   connection opens ---- headers trickle in ---- due: cut
 *   connection opens -- headers in (met) -- reply -- rearmed -- ...
 *
 * The watcher shuts down a dup of the socket taken when the connection
 * opened and closed when it closes, so it can never hit a descriptor
 * number the process has since reused for something else.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "server/server.h"

/* One connection being watched; a node of the watcher's list. */
struct tdm__deadline_conn {
    tdm__deadline_conn *prev, *next;
    int fd;         /* a dup of the connection's socket */
    int64_t due_ms; /* monotonic ms; 0: its request has arrived */
};

struct tdm__deadline {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on the monotonic clock */
    pthread_t th;
    int has_cv;
    int started;
    int stop;
    int64_t limit_ms;
    tdm__deadline_conn *head;
};

/* Cuts every connection past its deadline and returns the earliest
 * deadline still ahead (INT64_MAX: none).  Called with the lock held. */
static int64_t cut_late(tdm__deadline *dl, int64_t now)
{
    int64_t next = INT64_MAX;
    for (tdm__deadline_conn *c = dl->head; c != NULL; c = c->next) {
        if (c->due_ms == 0)
            continue;
        if (c->due_ms <= now) {
            shutdown(c->fd, SHUT_RDWR);
            c->due_ms = 0;
        } else if (c->due_ms < next) {
            next = c->due_ms;
        }
    }
    return next;
}

/* The watcher: sleeps until the earliest deadline (or a change), cuts
 * the late, until told to stop. */
static void *watch_main(void *arg)
{
    tdm__deadline *dl = arg;
    pthread_mutex_lock(&dl->mu);
    while (!dl->stop) {
        int64_t next = cut_late(dl, tdm__mono_ms());
        if (next == INT64_MAX) {
            pthread_cond_wait(&dl->cv, &dl->mu);
        } else {
            struct timespec ts = {(time_t)(next / 1000),
                                  (long)(next % 1000) * 1000000L};
            pthread_cond_timedwait(&dl->cv, &dl->mu, &ts);
        }
    }
    pthread_mutex_unlock(&dl->mu);
    return NULL;
}

/* Creates the watch and starts its thread (see server.h). */
tdm_err tdm__deadline_new(int64_t limit_ms, tdm__deadline **out)
{
    tdm__deadline *dl = tdm__calloc(1, sizeof *dl);
    pthread_condattr_t ca;

    *out = NULL;
    if (dl == NULL)
        return TDM_ERR_NOMEM;
    dl->limit_ms = limit_ms > 0 ? limit_ms : 1;
    if (pthread_mutex_init(&dl->mu, NULL) != 0) {
        tdm__free(dl);
        return TDM_ERR_NOMEM;
    }
    /* The timed wait runs on the monotonic clock, as the deadlines do:
     * a change of the wall clock neither cuts early nor never. */
    if (pthread_condattr_init(&ca) != 0)
        goto fail;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    dl->has_cv = pthread_cond_init(&dl->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!dl->has_cv || pthread_create(&dl->th, NULL, watch_main, dl) != 0)
        goto fail;
    dl->started = 1;
    *out = dl;
    return TDM_OK;
fail:
    tdm__deadline_free(dl);
    return TDM_ERR_NOMEM;
}

/* Stops the watcher and frees the watch (see server.h). */
void tdm__deadline_free(tdm__deadline *dl)
{
    if (dl == NULL)
        return;
    if (dl->started)
        tdm__thread_stop(&dl->mu, &dl->cv, &dl->stop, dl->th);
    while (dl->head != NULL)
        tdm__deadline_close(dl, dl->head);
    if (dl->has_cv)
        pthread_cond_destroy(&dl->cv);
    pthread_mutex_destroy(&dl->mu);
    tdm__free(dl);
}

/* Starts watching socket @p fd (see server.h). */
tdm__deadline_conn *tdm__deadline_open(tdm__deadline *dl, int fd)
{
    tdm__deadline_conn *c = tdm__calloc(1, sizeof *c);
    int dup_fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;

    if (c == NULL || dup_fd < 0) {
        /* Unwatched, a slow client could hold it for good: refuse. */
        if (fd >= 0)
            shutdown(fd, SHUT_RDWR);
        if (dup_fd >= 0)
            close(dup_fd);
        tdm__free(c);
        return NULL;
    }
    c->fd = dup_fd;
    pthread_mutex_lock(&dl->mu);
    c->due_ms = tdm__mono_ms() + dl->limit_ms;
    c->next = dl->head;
    if (dl->head != NULL)
        dl->head->prev = c;
    dl->head = c;
    pthread_cond_signal(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
    return c;
}

/* Sets the deadline of @p c: @p due_ms, or 0 for none. */
static void set_due(tdm__deadline *dl, tdm__deadline_conn *c, int64_t due_ms)
{
    if (dl == NULL || c == NULL)
        return;
    pthread_mutex_lock(&dl->mu);
    c->due_ms = due_ms;
    if (due_ms != 0)
        pthread_cond_signal(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
}

/* The request of @p c has arrived (see server.h). */
void tdm__deadline_met(tdm__deadline *dl, tdm__deadline_conn *c)
{
    set_due(dl, c, 0);
}

/* The reply of @p c went out; the next request is due (see server.h). */
void tdm__deadline_rearm(tdm__deadline *dl, tdm__deadline_conn *c)
{
    if (dl != NULL)
        set_due(dl, c, tdm__mono_ms() + dl->limit_ms);
}

/* Stops watching @p c and frees it (see server.h). */
void tdm__deadline_close(tdm__deadline *dl, tdm__deadline_conn *c)
{
    if (dl == NULL || c == NULL)
        return;
    pthread_mutex_lock(&dl->mu);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        dl->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&dl->mu);
    close(c->fd);
    tdm__free(c);
}
