/* SPDX-License-Identifier: MIT */
/* kafka_changelog.h - one partition of a changelog topic, as a log a task
 * appends keyed records to and reads back (kafka_changelog.c says how;
 * runtime/task_changelog.c is its one user: a task's checkpoints kept in
 * a compacted topic instead of a shared folder, docs/scale-out.md). */
#ifndef TDM_KAFKA_CHANGELOG_H
#define TDM_KAFKA_CHANGELOG_H

#include <stddef.h>
#include <stdint.h>

#include "connect/connect.h"

typedef struct tdm__kclog tdm__kclog;

typedef struct tdm__kclog_conf {
    const char *brokers;
    const char *const *props; /* the user's librdkafka pairs (borrowed) */
    int n_props;
    const char *topic;
    int32_t partition;
    int timeout_ms; /* each read to the end, each flush; 0: 60 s */
    tdm__log_fn log;
    void *log_ud;
    /* Told how far each read got: the next offset and the end the read
     * runs to (any thread that reads; may be NULL). */
    void (*progress)(void *ud, int64_t offset, int64_t end);
    void *progress_ud;
} tdm__kclog_conf;

/* Called for each record read: @p val is NULL for a tombstone; the bytes
 * are borrowed for the call.  A non-zero return stops the read. */
typedef int tdm__kclog_fn(void *ud, int64_t offset, const void *key,
                          size_t klen, const void *val, size_t vlen);

/* Opens the partition: an idempotent producer and a reader with no group.
 * TDM_ERR_IO when the topic does not exist or has no such partition
 * (the message names the topic and says how to create it),
 * TDM_ERR_INVAL for a bad property, TDM_ERR_NOMEM. */
tdm_err tdm__kclog_open(const tdm__kclog_conf *c, tdm__kclog **out,
                        char *errbuf, size_t errbuf_size);

/* Reads from offset @p from (-1: the first offset kept) to the end the
 * partition had when the call began, calling @p fn for each record;
 * *next is then the offset after the last one read.  TDM_ERR_IO when a
 * fetch fails (an offset out of range included: records are never
 * skipped) or no record comes for the timeout. */
tdm_err tdm__kclog_read(tdm__kclog *l, int64_t from, tdm__kclog_fn *fn,
                        void *ud, int64_t *next, char *errbuf,
                        size_t errbuf_size);

/* Appends a record (@p val NULL: a tombstone, which compaction uses to
 * drop the key).  Returns at once; tdm__kclog_flush says whether it was
 * written.  TDM_ERR_IO when the producer refuses it. */
tdm_err tdm__kclog_put(tdm__kclog *l, const void *key, size_t klen,
                       const void *val, size_t vlen, char *errbuf,
                       size_t errbuf_size);

/* Waits until every record put so far is acknowledged by the brokers.
 * TDM_ERR_IO (the first failed delivery named, or a timeout) when any of
 * them since the last flush was not written. */
tdm_err tdm__kclog_flush(tdm__kclog *l, char *errbuf, size_t errbuf_size);

/* Records put and not yet delivered or failed. */
int tdm__kclog_pending(tdm__kclog *l);

/* Replaces the progress callback (tdm__kclog_conf's). */
void tdm__kclog_set_progress(tdm__kclog *l,
                             void (*fn)(void *ud, int64_t offset, int64_t end),
                             void *ud);

/* "topic[partition]", for messages (library-owned). */
const char *tdm__kclog_name(const tdm__kclog *l);

/* Frees @p l (records not flushed are waited for up to the timeout).
 * NULL is fine. */
void tdm__kclog_close(tdm__kclog *l);

#endif
