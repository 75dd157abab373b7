/* SPDX-License-Identifier: MIT */
/* kafka.h - what the Kafka source and sink share (kafka_common.c): the
 * librdkafka configuration from defaults and "kafka.*" properties, log
 * routing to the job's log, the commit metadata text "tdm1 wm=<ms>", and
 * the ring of source snapshots that decides which offsets may be
 * committed.  The snapshot logic is pure so it is tested without a
 * broker (tests/unit/test_kafka_snap.c).
 */
#ifndef TDM_KAFKA_H
#define TDM_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "connect/conn.h"

/* ---- Configuration and logs ---- */

/* Where librdkafka's log lines go.  The opaque of every rd_kafka_t the
 * connectors create starts with this struct (rd_kafka_opaque), so one log
 * callback serves the source and the sink. */
typedef struct tdm__klog {
    tdm__log_fn fn; /* NULL: lines are dropped */
    void *ud;
    char prefix[96]; /* "kafka source 'clicks'[0]" */
    /* When set (before tdm__kafka_conf), librdkafka's errors also go to
     * this guard (kafka_guard.c); NULL: they are only logged. */
    struct tdm__kguard *guard;
} tdm__klog;

/* Builds a librdkafka configuration: @p defaults (NULL-terminated key,
 * value pairs; may be NULL) first, then "bootstrap.servers" = @p brokers
 * (when not NULL), then the @p n_props user pairs in @p props (keys
 * without the "kafka." prefix), so the user has the last word.  Routes
 * logs to the tdm__klog at the start of @p opaque (stored as the
 * configuration's opaque).  Returns TDM_OK with *out set, TDM_ERR_INVAL
 * with a message naming the property ("kafka.foo: No such configuration
 * property"), or TDM_ERR_NOMEM. */
tdm_err tdm__kafka_conf(const char *brokers, const char *const *props,
                        int n_props, const char *const *defaults, void *opaque,
                        rd_kafka_conf_t **out, char *errbuf,
                        size_t errbuf_size);

/* Checks a node's "kafka.*" properties (@p n_props pairs in @p props,
 * keys without the prefix) before any connection: each is set on a
 * scratch configuration (an unknown name or a bad value fails with
 * librdkafka's own message), and refused when tidemark sets it itself
 * (transactional.id everywhere; on a source the offset-commit, group,
 * start and stop properties) or when it is for the other kind of
 * client: a consumer property on a sink (@p sink), a producer property
 * on a source unless @p producer_ok (the source re-partitions, so it
 * also produces).  TDM_OK, or TDM_ERR_INVAL with "kafka.<key>: <why>"
 * in errbuf, or TDM_ERR_NOMEM. */
tdm_err tdm__kafka_check_props(const char *const *props, int n_props, bool sink,
                               bool producer_ok, char *errbuf,
                               size_t errbuf_size);

/* The TDM__KMETA_* kind of metadata key @p name ("timestamp",
 * "partition", "offset", "topic"), -1 if unknown. */
int tdm__kafka_meta_kind(const char *name);

/* Writes one line "<prefix>: <text>" to the log of @p lg (NULL-safe). */
void tdm__kafka_logf(const tdm__klog *lg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- The broker guard (kafka_guard.c, "brokers.timeout") ---- */

typedef struct tdm__kguard {
    int64_t timeout_ms;         /* 0: never gives up */
    char brokers[256];          /* for the message */
    _Atomic int64_t down_since; /* monotonic ms; -1: a broker answered */
    _Atomic int64_t last_probe; /* monotonic ms of the last probe */
    pthread_mutex_t mu;         /* the fields below */
    bool mu_ok;
    bool ever_up;     /* some broker answered once */
    bool auth_failed; /* the last error was an authentication failure */
    char why[256];    /* librdkafka's last error */
} tdm__kguard;

/* Starts @p g down since now, giving up after @p timeout_ms (<= 0:
 * never); @p brokers (may be NULL) is copied for the message.  TDM_OK or
 * TDM_ERR_NOMEM. */
tdm_err tdm__kguard_init(tdm__kguard *g, int64_t timeout_ms,
                         const char *brokers);

/* Frees @p g's resources (NULL-safe; a zeroed guard is fine). */
void tdm__kguard_destroy(tdm__kguard *g);

/* Notes that a broker answered (a message, a delivery, a rebalance).
 * One atomic load when already up; NULL-safe; any thread. */
void tdm__kguard_up(tdm__kguard *g);

/* Notes librdkafka's error @p err (@p why: its text, may be NULL):
 * every error's text is kept for the message; all brokers down and an
 * authentication failure make the guard down (if it was up).  NULL-safe;
 * any thread. */
void tdm__kguard_error(tdm__kguard *g, rd_kafka_resp_err_t err,
                       const char *why);

/* TDM_OK while the guard is up or has been down for less than its
 * timeout; while down, first asks the cluster for metadata through
 * @p rk (at most once a second, up to 0.5 s) and comes up if it answers.
 * After the timeout: TDM_ERR_IO with "cannot reach any of its brokers
 * <brokers> for <n> ms (brokers.timeout): <librdkafka's last error>"
 * (or "lost every one of its brokers", "authentication failed with
 * brokers") in errbuf. */
tdm_err tdm__kguard_check(tdm__kguard *g, rd_kafka_t *rk, char *errbuf,
                          size_t errbuf_size);

/* ---- Consumer groups ---- */

/* The signature of librdkafka's rebalance callback. */
typedef void tdm__krebalance_fn(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                rd_kafka_topic_partition_list_t *parts,
                                void *opaque);

/* 1 if @p kc (borrowed) names a cooperative partition.assignment.strategy.
 * librdkafka refuses to mix eager and cooperative assignors, so this is
 * the protocol of every rebalance of a consumer made from @p kc: the
 * rebalance callbacks use it instead of rd_kafka_rebalance_protocol(),
 * which can block forever in a callback served by a consumer close
 * (librdkafka issue #4041). */
int tdm__kafka_conf_coop(const rd_kafka_conf_t *kc);

/* Commits @p l (offsets and metadata; the list stays the caller's) to
 * the group of consumer @p rk and waits for the answer at most
 * TDM__KCOMMIT_WAIT_MS: a commit whose coordinator is gone (every broker
 * lost) would block rd_kafka_commit's synchronous form for good, with
 * the source's loop - and its broker guard - stuck behind it.  Returns
 * the group's answer, or RD_KAFKA_RESP_ERR__TIMED_OUT (the request may
 * still land later). */
#define TDM__KCOMMIT_WAIT_MS 10000
rd_kafka_resp_err_t tdm__kafka_commit(rd_kafka_t *rk,
                                      rd_kafka_topic_partition_list_t *l);

/* Leaves the consumer group of @p rk and destroys @p rk (takes
 * ownership), within about @p limit_ms: first it unsubscribes and polls
 * (dropping messages) until nothing is assigned, so that the revoke runs
 * in the configured rebalance callback of an ordinary poll; then the
 * close runs in librdkafka's background and any rebalance event it
 * still brings is served here by @p rebalance (called with @p opaque, as
 * the rebalance callback would be); a group that does not let go in time
 * is left without the LeaveGroup (the other members notice after
 * session.timeout.ms) rather than blocking the caller.  Returns 1 if the
 * consumer closed cleanly, 0 if it was given up. */
int tdm__kafka_close_consumer(rd_kafka_t *rk, tdm__krebalance_fn *rebalance,
                              void *opaque, int64_t limit_ms);

/* ---- Producing ---- */

/* Called when a produce call met QUEUE_FULL: serves  rk's delivery
 * reports for up to 10 ms and returns 1, or 0 once  limit_ms have
 * passed since the first call of this wait (*since_ms: -1 before it; set
 * here).  The caller retries the produce after 1 and gives up after 0. */
int tdm__kafka_wait_room(rd_kafka_t *rk, int64_t *since_ms, int64_t limit_ms);

/* ---- Commit metadata ---- */

/* Longest metadata text written, with its NUL. */
#define TDM__KMETA_MAX 64

/* Writes the commit metadata into (out, n); returns its length without
 * the NUL.  "tdm1 wm=<wm>" (wm in epoch ms, may be negative) is what a
 * running member commits: results of windows whose records lie at or
 * below wm were written, and the member may have written more before it
 * stopped (a crash leaves this form).  "tdm1 wm=<wm> top=<top>" (top not
 * TDM_TIME_MIN) is a clean hand-over, written after every operator
 * stopped: no result of a window with end - 1 > top was written. */
size_t tdm__kafka_meta_format(tdm_time_ms wm, tdm_time_ms top, char *out,
                              size_t n);

/* Reads commit metadata written by tdm__kafka_meta_format.  Returns 1
 * with *wm set and *top (may be NULL) set to the top, or TDM_TIME_MIN
 * for the first form; 0 (and both TDM_TIME_MIN) when @p p is NULL,
 * empty, or not exactly one of those forms (other writers' metadata is
 * ignored). */
int tdm__kafka_meta_parse(const void *p, size_t n, tdm_time_ms *wm,
                          tdm_time_ms *top);

/* ---- Source snapshots (design section 6, "Connector commit") ----
 * mark() stores, per watermark the subtask sent, every partition's next
 * offset and horizon; commit() picks per partition the newest snapshot
 * that is processed and whose horizon the operators passed.  At most
 * TDM__KSNAP_MAX are kept: when full the oldest goes, so commits lag but
 * never overshoot. */
#define TDM__KSNAP_MAX 256

typedef struct tdm__ksnap {
    uint64_t seq;    /* 1, 2, ... in mark order */
    tdm_time_ms wm;  /* the watermark the subtask sent */
    int n;           /* partitions covered: next[0..n), hz[0..n) */
    int64_t *next;   /* offset to resume from; < 0: unknown */
    tdm_time_ms *hz; /* horizon of the rows read so far */
} tdm__ksnap;

typedef struct tdm__ksnaps {
    tdm__ksnap ring[TDM__KSNAP_MAX];
    int head; /* index of the oldest */
    int count;
    uint64_t last_seq;
} tdm__ksnaps;

/* Stores a snapshot (copies @p next and @p hz, @p n entries each),
 * dropping the oldest when the ring is full.  TDM_OK or TDM_ERR_NOMEM
 * (the ring is unchanged). */
tdm_err tdm__ksnap_push(tdm__ksnaps *r, tdm_time_ms wm, const int64_t *next,
                        const tdm_time_ms *hz, int n);

/* The newest snapshot usable for partition @p p: its wm is below
 * @p processed (any wm when processed is TDM_TIME_MAX), it covers p with
 * a known offset, and hz[p] <= @p done.  NULL if none. */
const tdm__ksnap *tdm__ksnap_pick(const tdm__ksnaps *r, int p,
                                  tdm_time_ms processed, tdm_time_ms done);

/* Drops the snapshots older than sequence number @p seq. */
void tdm__ksnap_drop_before(tdm__ksnaps *r, uint64_t seq);

/* One partition's commit decision (kafka_source.c's commit): what the
 * partition knows besides the snapshots. */
typedef struct tdm__kcommit_in {
    int p;                /* local index */
    int64_t base;         /* where reading started, -1 unknown */
    int64_t committed;    /* last committed offset, -1 none */
    tdm_time_ms meta_wm;  /* watermark of the last commit's metadata */
    tdm_time_ms floor;    /* the previous owner's watermark, or MIN */
    tdm_time_ms top;      /* clean hand-over: the top to write, else MIN */
    tdm_time_ms meta_top; /* top of the last commit's metadata, or MIN */
    bool handover;        /* revoke or close: refresh the metadata */
    bool quiet;           /* no rebalance lately: periodic commits may
                             refresh the metadata alone */
} tdm__kcommit_in;

/* Decides a partition's commit for (processed, done): the offset of
 * tdm__ksnap_pick's snapshot, else @p in->base (reading started there:
 * nothing before it is needed); metadata watermark max(done, floor)
 * (records after the commit at or below the previous owner's floor had
 * their results written by it).  Returns 1 with *off and *wm set when a
 * commit is due: a known offset not behind the last commit, which moves
 * it, or changes the metadata (watermark or top) in a hand-over or a
 * quiet group.  *seq receives the picked snapshot's sequence number, 0
 * if none (older snapshots are then still needed), also when 0 is
 * returned. */
int tdm__kcommit_choose(const tdm__ksnaps *r, const tdm__kcommit_in *in,
                        tdm_time_ms processed, tdm_time_ms done, int64_t *off,
                        tdm_time_ms *wm, uint64_t *seq);

/* Frees every snapshot (the struct itself is the caller's). */
void tdm__ksnap_free(tdm__ksnaps *r);

#endif /* TDM_KAFKA_H */
