/* SPDX-License-Identifier: MIT */
/* kafka_common.c - the pieces the Kafka source and sink share: building
 * a librdkafka configuration (defaults, brokers, then the user's
 * "kafka.*" properties), routing librdkafka's log lines to the job's log,
 * the commit metadata text, and the snapshot ring that decides which
 * offsets a source may commit (see kafka.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect/kafka.h"

/* ---- Configuration and logs ---- */

/* librdkafka's log callback (may run on its internal threads). */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf)
{
    const tdm__klog *lg = rd_kafka_opaque(rk);
    const char *what = level <= 3   ? "error"
                       : level <= 4 ? "warning"
                       : level <= 6 ? "info"
                                    : "debug";

    /* The kafka.* properties go to producers and consumers alike (the
     * repartition path has both): each one's complaint about the
     * other's properties is noise. */
    if (!strcmp(fac, "CONFWARN") && strstr(buf, "will be ignored by"))
        return;
    tdm__kafka_logf(lg, "librdkafka %s %s: %s", what, fac, buf);
}

/* librdkafka's error callback, installed when the opaque's tdm__klog
 * has a guard: the error is logged as librdkafka would and noted by the
 * guard. */
static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    const tdm__klog *lg = opaque;

    (void)rk;
    tdm__kafka_logf(lg, "librdkafka error: %s: %s",
                    rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
    tdm__kguard_error(lg->guard, (rd_kafka_resp_err_t)err, reason);
}

/* Writes a line to the log of @p lg (see kafka.h). */
void tdm__kafka_logf(const tdm__klog *lg, const char *fmt, ...)
{
    char text[1024], line[1200];
    va_list ap;

    if (!lg || !lg->fn)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "%s: %s", lg->prefix, text);
    lg->fn(lg->ud, line);
}

/* Sets one property; on failure writes "kafka.<key>: <reason>". */
static tdm_err set_prop(rd_kafka_conf_t *c, const char *key, const char *val,
                        char *errbuf, size_t errbuf_size)
{
    char why[256];

    if (rd_kafka_conf_set(c, key, val, why, sizeof why) != RD_KAFKA_CONF_OK)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL, "kafka.%s: %s",
                         key, why);
    return TDM_OK;
}

/* Builds a configuration (see kafka.h). */
tdm_err tdm__kafka_conf(const char *brokers, const char *const *props,
                        int n_props, const char *const *defaults, void *opaque,
                        rd_kafka_conf_t **out, char *errbuf, size_t errbuf_size)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    tdm_err err = TDM_OK;

    *out = NULL;
    if (!c)
        return TDM_ERR_NOMEM;
    for (int i = 0; defaults && defaults[i] && err == TDM_OK; i += 2)
        err = set_prop(c, defaults[i], defaults[i + 1], errbuf, errbuf_size);
    if (err == TDM_OK && brokers && brokers[0])
        err = set_prop(c, "bootstrap.servers", brokers, errbuf, errbuf_size);
    for (int i = 0; i < n_props && err == TDM_OK; i++)
        err = set_prop(c, props[2 * i], props[2 * i + 1], errbuf, errbuf_size);
    if (err != TDM_OK) {
        rd_kafka_conf_destroy(c);
        return err;
    }
    rd_kafka_conf_set_opaque(c, opaque);
    rd_kafka_conf_set_log_cb(c, log_cb);
    if (opaque && ((const tdm__klog *)opaque)->guard)
        rd_kafka_conf_set_error_cb(c, error_cb);
    *out = c;
    return TDM_OK;
}

/* ---- Checking the user's properties ---- */

/* The properties a user must not set, with the reason: the connector
 * sets them itself and its guarantees depend on their values.  "*":
 * sources and sinks, "C": sources (the consumer), "P": sinks. */
static const struct {
    const char *key;
    char who;
    const char *why;
} owned[] = {
    {"transactional.id", '*',
     "tidemark sets the transactional id itself when checkpoints are on "
     "(tidemark-<job>-<sink>-<writer>); another id would break its "
     "fencing and its commit marker"},
    {"group.id", 'C', "set it with the source's key group"},
    {"enable.auto.commit", 'C',
     "tidemark commits offsets itself, only after the results that "
     "depend on them are written"},
    {"auto.commit.enable", 'C',
     "tidemark commits offsets itself, only after the results that "
     "depend on them are written"},
    {"enable.auto.offset.store", 'C',
     "tidemark stores and commits offsets itself"},
    {"enable.partition.eof", 'C', "set by the source's key stop"},
    {"auto.offset.reset", 'C', "set by the source's key start"},
};

/* The C/P column of librdkafka's property table for @p key: 'C'
 * (consumer only), 'P' (producer only), '*' (both), or 0 when the table
 * cannot be read or does not list it. */
static char prop_scope(const char *key)
{
    char *text = NULL, scope = 0;
    size_t len = 0, kl = strlen(key);
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return 0;
    rd_kafka_conf_properties_show(f);
    fclose(f);
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n'), *bar = strchr(l, '|');
        if (!strncmp(l, key, kl) && (l[kl] == ' ' || l[kl] == '|')) {
            if (bar && (!nl || bar < nl) && bar[1] == ' ' && bar[2] == ' ')
                scope = bar[3];
            break;
        }
        l = nl ? nl + 1 : NULL;
    }
    free(text);
    return scope;
}

/* Checks one property @p key = @p val on the scratch configuration
 * @p c (see tdm__kafka_check_props). */
static tdm_err check_prop(rd_kafka_conf_t *c, const char *key, const char *val,
                          bool sink, bool producer_ok, char *errbuf,
                          size_t errbuf_size)
{
    tdm_err err = set_prop(c, key, val, errbuf, errbuf_size);
    char scope;

    if (err != TDM_OK)
        return err;
    for (size_t k = 0; k < sizeof owned / sizeof owned[0]; k++)
        if (!strcmp(owned[k].key, key) &&
            (owned[k].who == '*' || owned[k].who == (sink ? 'P' : 'C')))
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "kafka.%s: not allowed: %s", key, owned[k].why);
    scope = prop_scope(key);
    if (sink && scope == 'C')
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "kafka.%s: a consumer property; a kafka sink is a "
                         "producer",
                         key);
    if (!sink && !producer_ok && scope == 'P')
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "kafka.%s: a producer property; a kafka source "
                         "produces only with repartition",
                         key);
    return TDM_OK;
}

/* Checks the user's properties (see kafka.h). */
tdm_err tdm__kafka_check_props(const char *const *props, int n_props, bool sink,
                               bool producer_ok, char *errbuf,
                               size_t errbuf_size)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    tdm_err err = TDM_OK;

    if (!c)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < n_props && err == TDM_OK; i++)
        err = check_prop(c, props[2 * i], props[2 * i + 1], sink, producer_ok,
                         errbuf, errbuf_size);
    rd_kafka_conf_destroy(c);
    return err;
}

/* ---- Producing ---- */

/* After a QUEUE_FULL (see kafka.h). */
int tdm__kafka_wait_room(rd_kafka_t *rk, int64_t *since_ms, int64_t limit_ms)
{
    int64_t now = tdm__mono_ms();
    if (*since_ms < 0)
        *since_ms = now;
    if (now - *since_ms >= limit_ms)
        return 0;
    rd_kafka_poll(rk, 10); /* delivery reports make room */
    return 1;
}

/* ---- Commit metadata ---- */

/* Formats "tdm1 wm=<ms>" or "tdm1 wm=<ms> top=<ms>" (see kafka.h). */
size_t tdm__kafka_meta_format(tdm_time_ms wm, tdm_time_ms top, char *out,
                              size_t n)
{
    int len = top == TDM_TIME_MIN
                  ? snprintf(out, n, "tdm1 wm=%" PRId64, (int64_t)wm)
                  : snprintf(out, n, "tdm1 wm=%" PRId64 " top=%" PRId64,
                             (int64_t)wm, (int64_t)top);
    if (len < 0)
        return 0;
    return (size_t)len < n ? (size_t)len : (n > 0 ? n - 1 : 0);
}

/* Reads one decimal int64 from s[0, n): an optional minus sign and
 * digits that fit in 64 bits, nothing else (strtoll alone would accept
 * blanks and a plus sign).  1 with *v set, or 0. */
static int meta_int(const char *s, size_t n, tdm_time_ms *v)
{
    char digits[32];
    char *end;
    long long x;

    if (n == 0 || n >= sizeof digits)
        return 0;
    memcpy(digits, s, n);
    digits[n] = '\0';
    if (!(digits[0] == '-' || (digits[0] >= '0' && digits[0] <= '9')))
        return 0;
    if (digits[0] == '-' && !(digits[1] >= '0' && digits[1] <= '9'))
        return 0;
    errno = 0;
    x = strtoll(digits, &end, 10);
    if (errno != 0 || *end != '\0')
        return 0;
    *v = (tdm_time_ms)x;
    return 1;
}

/* Parses what tdm__kafka_meta_format writes (see kafka.h). */
int tdm__kafka_meta_parse(const void *p, size_t n, tdm_time_ms *wm,
                          tdm_time_ms *top)
{
    static const char tag[] = "tdm1 wm=", tag_top[] = " top=";
    const size_t tag_len = sizeof tag - 1, top_len = sizeof tag_top - 1;
    const char *s = p, *sp;
    tdm_time_ms w, t = TDM_TIME_MIN;
    size_t wn;

    *wm = TDM_TIME_MIN;
    if (top)
        *top = TDM_TIME_MIN;
    if (!p || n <= tag_len || memcmp(s, tag, tag_len) != 0)
        return 0;
    s += tag_len;
    n -= tag_len;
    sp = memchr(s, ' ', n);
    wn = sp ? (size_t)(sp - s) : n;
    if (!meta_int(s, wn, &w))
        return 0;
    if (sp) {
        size_t rest = n - wn;
        if (rest <= top_len || memcmp(sp, tag_top, top_len) != 0 ||
            !meta_int(sp + top_len, rest - top_len, &t) || t == TDM_TIME_MIN)
            return 0;
    }
    *wm = w;
    if (top)
        *top = t;
    return 1;
}

/* ---- Snapshots ---- */

static void snap_clear(tdm__ksnap *s)
{
    tdm__free(s->next);
    tdm__free(s->hz);
    memset(s, 0, sizeof *s);
}

/* Stores a snapshot (see kafka.h). */
tdm_err tdm__ksnap_push(tdm__ksnaps *r, tdm_time_ms wm, const int64_t *next,
                        const tdm_time_ms *hz, int n)
{
    int64_t *nx = NULL;
    tdm_time_ms *h = NULL;
    tdm__ksnap *s;

    if (n < 0)
        n = 0;
    if (n > 0) {
        nx = tdm__malloc((size_t)n * sizeof *nx);
        h = tdm__malloc((size_t)n * sizeof *h);
        if (!nx || !h) {
            tdm__free(nx);
            tdm__free(h);
            return TDM_ERR_NOMEM;
        }
        memcpy(nx, next, (size_t)n * sizeof *nx);
        memcpy(h, hz, (size_t)n * sizeof *h);
    }
    if (r->count == TDM__KSNAP_MAX) {
        /* Full: the oldest goes; commits lag, they never overshoot. */
        snap_clear(&r->ring[r->head]);
        r->head = (r->head + 1) % TDM__KSNAP_MAX;
        r->count--;
    }
    s = &r->ring[(r->head + r->count) % TDM__KSNAP_MAX];
    s->seq = ++r->last_seq;
    s->wm = wm;
    s->n = n;
    s->next = nx;
    s->hz = h;
    r->count++;
    return TDM_OK;
}

/* Picks the newest usable snapshot for @p p (see kafka.h).  Snapshots are
 * scanned from the newest: the horizon of a partition only grows with
 * the rows read, so the first usable one found is the best, but the scan
 * does not rely on it. */
const tdm__ksnap *tdm__ksnap_pick(const tdm__ksnaps *r, int p,
                                  tdm_time_ms processed, tdm_time_ms done)
{
    for (int k = r->count - 1; k >= 0; k--) {
        const tdm__ksnap *s = &r->ring[(r->head + k) % TDM__KSNAP_MAX];
        if (processed != TDM_TIME_MAX && s->wm >= processed)
            continue;
        if (p < 0 || p >= s->n || s->next[p] < 0)
            continue;
        if (s->hz[p] <= done)
            return s;
    }
    return NULL;
}

/* Drops snapshots older than @p seq (see kafka.h). */
void tdm__ksnap_drop_before(tdm__ksnaps *r, uint64_t seq)
{
    while (r->count > 0 && r->ring[r->head].seq < seq) {
        snap_clear(&r->ring[r->head]);
        r->head = (r->head + 1) % TDM__KSNAP_MAX;
        r->count--;
    }
}

/* Decides one partition's commit (see kafka.h). */
int tdm__kcommit_choose(const tdm__ksnaps *r, const tdm__kcommit_in *in,
                        tdm_time_ms processed, tdm_time_ms done, int64_t *off,
                        tdm_time_ms *wm, uint64_t *seq)
{
    const tdm__ksnap *s = tdm__ksnap_pick(r, in->p, processed, done);

    *seq = s ? s->seq : 0;
    *off = s ? s->next[in->p] : in->base;
    *wm = done > in->floor ? done : in->floor;
    if (*off < 0 || *off < in->committed)
        return 0;
    if (*off > in->committed)
        return 1;
    /* Same offset: only a metadata change, and only when it is safe. */
    return (*wm != in->meta_wm || in->top != in->meta_top) &&
           (in->handover || in->quiet);
}

/* Frees every snapshot (see kafka.h). */
void tdm__ksnap_free(tdm__ksnaps *r)
{
    if (!r)
        return;
    while (r->count > 0) {
        snap_clear(&r->ring[r->head]);
        r->head = (r->head + 1) % TDM__KSNAP_MAX;
        r->count--;
    }
}

/* ---- Consumer groups ---- */

/* 1 if the conf's partition.assignment.strategy is cooperative (see
 * kafka.h). */
int tdm__kafka_conf_coop(const rd_kafka_conf_t *kc)
{
    char strat[256];
    size_t n = sizeof strat;

    return rd_kafka_conf_get(kc, "partition.assignment.strategy", strat, &n) ==
               RD_KAFKA_CONF_OK &&
           strstr(strat, "cooperative") != NULL;
}

/* 1 when rk has no partition assigned (or the assignment cannot be
 * read). */
static int assignment_empty(rd_kafka_t *rk)
{
    rd_kafka_topic_partition_list_t *a = NULL;
    int empty = 1;

    if (rd_kafka_assignment(rk, &a) == RD_KAFKA_RESP_ERR_NO_ERROR && a)
        empty = a->cnt == 0;
    if (a)
        rd_kafka_topic_partition_list_destroy(a);
    return empty;
}

/* Leaves the group within limit_ms and destroys rk (see kafka.h). */
int tdm__kafka_close_consumer(rd_kafka_t *rk, tdm__krebalance_fn *rebalance,
                              void *opaque, int64_t limit_ms)
{
    int64_t end = tdm__mono_ms() + limit_ms;
    int closed = 0;

    /* Unsubscribe first and let the revoke run through the rebalance
     * callback of an ordinary poll (messages still fetched are dropped:
     * nothing after the last commit was processed), for at most half the
     * time: the close then finds nothing assigned.  A rebalance served
     * inside the close can hang librdkafka 2.0 for good - an assignment
     * that arrives while closing (librdkafka issue #4527, fixed in 2.4),
     * an unassign called from the close's rebalance event (#4884); CI saw
     * kafka.files hang in rd_kafka_incremental_unassign there. */
    if (rd_kafka_unsubscribe(rk) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        int64_t half = tdm__mono_ms() + limit_ms / 2;
        while (!assignment_empty(rk) && tdm__mono_ms() < half) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
            if (m)
                rd_kafka_message_destroy(m);
        }
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_error_t *e = q ? rd_kafka_consumer_close_queue(rk, q) : NULL;

    if (q && !e) {
        while (!(closed = rd_kafka_consumer_closed(rk)) &&
               tdm__mono_ms() < end) {
            /* Events, not callbacks: the close queue may carry
             * operations no callback serves. */
            rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 100);
            if (ev && rd_kafka_event_type(ev) == RD_KAFKA_EVENT_REBALANCE)
                rebalance(rk, rd_kafka_event_error(ev),
                          rd_kafka_event_topic_partition_list(ev), opaque);
            if (ev)
                rd_kafka_event_destroy(ev);
        }
    }
    if (e)
        rd_kafka_error_destroy(e);
    if (q)
        rd_kafka_queue_destroy(q);
    if (closed)
        rd_kafka_destroy(rk);
    else
        rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    return closed;
}

/* A commit with a bounded wait (see kafka.h): the answer comes as an
 * event on a queue of its own, polled for at most TDM__KCOMMIT_WAIT_MS;
 * librdkafka keeps the queue alive for a late answer after we let go. */
rd_kafka_resp_err_t tdm__kafka_commit(rd_kafka_t *rk,
                                      rd_kafka_topic_partition_list_t *l)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_resp_err_t e;
    if (!q)
        return RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE;
    e = rd_kafka_commit_queue(rk, l, q, NULL, NULL);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TDM__KCOMMIT_WAIT_MS);
        e = ev ? rd_kafka_event_error(ev) : RD_KAFKA_RESP_ERR__TIMED_OUT;
        if (ev)
            rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    return e;
}

int tdm__kafka_meta_kind(const char *name)
{
    static const char *const names[TDM__KMETA_N] = {
        [TDM__KMETA_TIMESTAMP] = "timestamp",
        [TDM__KMETA_PARTITION] = "partition",
        [TDM__KMETA_OFFSET] = "offset",
        [TDM__KMETA_TOPIC] = "topic"};
    for (int k = 0; k < TDM__KMETA_N; k++)
        if (strcmp(name, names[k]) == 0)
            return k;
    return -1;
}
