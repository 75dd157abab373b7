/* SPDX-License-Identifier: MIT */
/* kafka_members.h - a process's membership in the consumer group of a
 * job run as tasks (kafka_members.c says how). */
#ifndef TDM_KAFKA_MEMBERS_H
#define TDM_KAFKA_MEMBERS_H

#include <stdbool.h>

#include "connect/connect.h"

typedef struct tdm__kmembers tdm__kmembers;

/* What the group says of a task (tdm__kmembers_fn). */
typedef enum tdm__km_event {
    TDM__KM_ASSIGNED, /* start it after the poll returns */
    TDM__KM_LEAVING,  /* about to be revoked: begin stopping it, return at
                         once (every task of the revoke is told first) */
    TDM__KM_REVOKED   /* stop it before returning */
} tdm__km_event;

/* Told of every change of the tasks the group gives this process: @p ev
 * for task @p task, @p lost true when the group took it without asking
 * (this member was thought dead).  A revoke must stop the task before the
 * callback returns: the group hands the task to another process only
 * then.  A revoke of several tasks tells each TDM__KM_LEAVING first and
 * then each TDM__KM_REVOKED, so that their final checkpoints are written
 * side by side: one after the other, eight tasks on a loaded machine once
 * outlasted the group's rebalance timeout (the mock cluster's is the
 * session timeout) and the members took the tasks from each other in
 * turn, for ever. */
typedef void tdm__kmembers_fn(void *ud, int task, tdm__km_event ev, bool lost);

typedef struct tdm__kmembers_conf {
    const char *brokers;
    const char *group;
    const char *const *topics; /* the job's input topics, co-partitioned */
    int n_topics;
    const char *instance_id;  /* group.instance.id (static membership), or
                                 NULL */
    bool any_counts;          /* the topics need not be co-partitioned (*n_tasks
                                 is then the lead topic's count) */
    const char *const *props; /* the user's librdkafka pairs */
    int n_props;
    tdm__log_fn log;
    void *log_ud;
} tdm__kmembers_conf;

/* Joins the group of @p c->topics' lead topic (the first by name): reads
 * the topics' partition counts, which must all be equal (*n_tasks), and
 * subscribes.  TDM_OK, TDM_ERR_INVAL (topics not co-partitioned, a bad
 * property), TDM_ERR_IO (no metadata), TDM_ERR_NOMEM. */
tdm_err tdm__kmembers_open(const tdm__kmembers_conf *c, tdm__kmembers **out,
                           int *n_tasks, char *errbuf, size_t errbuf_size);

/* Serves the group for up to @p ms: heartbeats and rebalances, each
 * change reported to @p fn.  TDM_OK, or TDM_ERR_IO on a fatal consumer
 * error (named in @p errbuf). */
tdm_err tdm__kmembers_poll(tdm__kmembers *m, int ms, tdm__kmembers_fn *fn,
                           void *ud, char *errbuf, size_t errbuf_size);

/* Commits offset @p offset of (@p topic, @p part) with metadata @p meta
 * to the group, asynchronously (for lag tools: a failure is logged and
 * nothing depends on it).  Any thread; @p m must stay open until the
 * call returns. */
void tdm__kmembers_commit(tdm__kmembers *m, const char *topic, int32_t part,
                          int64_t offset, const char *meta);
/* Leaves the group (the revokes it brings go to @p fn) and frees @p m.
 * NULL-safe. */
void tdm__kmembers_close(tdm__kmembers *m, tdm__kmembers_fn *fn, void *ud);

/* ---- What a member owes the group (kafka_owed.c) ----
 * Per partition, the newest position asked to be committed and the
 * group's answer, so that refused last commits are asked again before
 * the member leaves.  Every call is thread-safe. */
typedef struct tdm__kowed tdm__kowed;

/* Called by tdm__kowed_refused for each refused position. */
typedef void tdm__kowed_fn(void *ud, const char *topic, int32_t part,
                           int64_t offset, const char *meta);

/* A new, empty table, or NULL (no memory). */
tdm__kowed *tdm__kowed_new(void);
/* Records that @p offset (with @p meta) of (@p topic, @p part) was asked
 * for; the newest ask replaces an older one.  false: no memory (the ask
 * is then not tracked). */
bool tdm__kowed_ask(tdm__kowed *o, const char *topic, int32_t part,
                    int64_t offset, const char *meta);
/* The group's answer to the ask of @p offset: taken (@p ok) or refused.
 * An answer for an older ask than the newest is ignored. */
void tdm__kowed_answer(tdm__kowed *o, const char *topic, int32_t part,
                       int64_t offset, bool ok);
/* The group holds @p committed for the partition: a refused position at
 * or below it is owed no more. */
void tdm__kowed_held(tdm__kowed *o, const char *topic, int32_t part,
                     int64_t committed);
/* How many positions are in flight (*asked) and refused (*refused). */
void tdm__kowed_count(tdm__kowed *o, int *asked, int *refused);
/* Calls @p fn (may be NULL) for each refused position, under the
 * table's lock (@p fn must not call back into @p o); returns how many. */
int tdm__kowed_refused(tdm__kowed *o, tdm__kowed_fn *fn, void *ud);
/* Frees @p o.  NULL-safe. */
void tdm__kowed_free(tdm__kowed *o);

#endif
