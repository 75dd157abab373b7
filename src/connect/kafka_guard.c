/* SPDX-License-Identifier: MIT */
/* kafka_guard.c - the broker guard: how long a Kafka source or sink may
 * go without reaching any of its brokers before it gives up
 * ("brokers.timeout", docs/kafka.md "Operations guards").
 *
 * librdkafka never gives up on a broker: an unreachable address, a
 * failed SASL handshake or a cluster that went away are retried forever,
 * and a job reading or writing through such a client waits forever.  The
 * guard turns that into an error after a bounded time.
 *
 * Invariant: a guard is "down" from the moment its client was created
 * until it is known to have reached a broker (a message, a delivery, a
 * rebalance, or a metadata request answered), and again from the moment
 * librdkafka reports every broker down or an authentication failure
 * until the next such proof.  While down, tdm__kguard_check asks the
 * cluster for its metadata at most once a second (a short request on the
 * caller's thread: nothing flows then anyway) and, once the guard has
 * been down for the timeout with that request still failing, returns an
 * error naming the brokers and librdkafka's last complaint.  While up
 * the check and tdm__kguard_up cost one atomic load.
 *
 * Used by kafka_source.c (its consumer, checked in every poll) and
 * kafka_sink.c (its producer, checked at every write and while a flush
 * waits); the error callback of kafka_common.c feeds it.  The repartition
 * clients (kafka_shuffle.c) are not guarded: they reach the same brokers
 * as the source's consumer, which is.
 */
#include <stdio.h>
#include <string.h>

#include "connect/kafka.h"

/* Time a metadata probe may take, and the pause between probes. */
#define KG_PROBE_MS 500
#define KG_PROBE_EVERY_MS 1000

/* Starts a guard, down since now (see kafka.h). */
tdm_err tdm__kguard_init(tdm__kguard *g, int64_t timeout_ms,
                         const char *brokers)
{
    memset(g, 0, sizeof *g);
    if (pthread_mutex_init(&g->mu, NULL) != 0)
        return TDM_ERR_NOMEM;
    g->mu_ok = true;
    g->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
    snprintf(g->brokers, sizeof g->brokers, "%s",
             brokers && *brokers ? brokers : "(no brokers)");
    atomic_init(&g->down_since, tdm__mono_ms());
    atomic_init(&g->last_probe, INT64_MIN / 2);
    return TDM_OK;
}

/* Frees the guard's mutex (NULL-safe, idempotent). */
void tdm__kguard_destroy(tdm__kguard *g)
{
    if (!g || !g->mu_ok)
        return;
    pthread_mutex_destroy(&g->mu);
    g->mu_ok = false;
}

/* A broker answered (see kafka.h). */
void tdm__kguard_up(tdm__kguard *g)
{
    if (!g || atomic_load_explicit(&g->down_since, memory_order_relaxed) < 0)
        return;
    atomic_store(&g->down_since, -1);
    if (g->mu_ok) {
        pthread_mutex_lock(&g->mu);
        g->ever_up = true;
        g->auth_failed = false;
        pthread_mutex_unlock(&g->mu);
    }
}

/* librdkafka reported an error (see kafka.h). */
void tdm__kguard_error(tdm__kguard *g, rd_kafka_resp_err_t err, const char *why)
{
    bool down = err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
                err == RD_KAFKA_RESP_ERR__AUTHENTICATION;
    int64_t expect = -1;

    if (!g || !g->mu_ok)
        return;
    pthread_mutex_lock(&g->mu);
    snprintf(g->why, sizeof g->why, "%s", why ? why : rd_kafka_err2str(err));
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION)
        g->auth_failed = true;
    pthread_mutex_unlock(&g->mu);
    if (down)
        atomic_compare_exchange_strong(&g->down_since, &expect, tdm__mono_ms());
}

/* One metadata request: 1 when a broker answered. */
static int probe(rd_kafka_t *rk)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, NULL, &md, KG_PROBE_MS);

    if (md)
        rd_kafka_metadata_destroy(md);
    return e == RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* The guard's verdict (see kafka.h). */
tdm_err tdm__kguard_check(tdm__kguard *g, rd_kafka_t *rk, char *errbuf,
                          size_t errbuf_size)
{
    int64_t since = atomic_load_explicit(&g->down_since, memory_order_relaxed);
    int64_t now = tdm__mono_ms();
    char why[sizeof g->why];
    bool ever, auth;

    if (since < 0 || g->timeout_ms <= 0 || !rk || !g->mu_ok)
        return TDM_OK;
    if (now - atomic_load(&g->last_probe) < KG_PROBE_EVERY_MS)
        return TDM_OK;
    if (probe(rk)) {
        tdm__kguard_up(g);
        return TDM_OK;
    }
    now = tdm__mono_ms();
    atomic_store(&g->last_probe, now);
    since = atomic_load(&g->down_since);
    if (since < 0 || now - since < g->timeout_ms)
        return TDM_OK;
    pthread_mutex_lock(&g->mu);
    snprintf(why, sizeof why, "%s", g->why[0] ? g->why : "no answer");
    ever = g->ever_up;
    auth = g->auth_failed;
    pthread_mutex_unlock(&g->mu);
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                     "%s brokers %s for %lld ms (brokers.timeout): %s",
                     auth   ? "authentication failed with"
                     : ever ? "lost every one of its"
                            : "cannot reach any of its",
                     g->brokers, (long long)(now - since), why);
}
