/* SPDX-License-Identifier: MIT */
/* task_changelog.h - a task's checkpoints kept in its partition of a
 * changelog topic (checkpoint.store: changelog; task_changelog.c says
 * how, docs/scale-out.md "The changelog store" what a user sees). */
#ifndef TDM_RUNTIME_TASK_CHANGELOG_H
#define TDM_RUNTIME_TASK_CHANGELOG_H

#include <stdint.h>

#include "connect/connect.h"
#include "state/ckpt_store.h"

typedef struct tdm__tclog tdm__tclog;

typedef struct tdm__tclog_conf {
    const char *brokers;
    const char *const *props; /* the sources' kafka.* pairs (borrowed) */
    int n_props;
    const char *topic; /* the changelog topic: partition n is task n's */
    int task;
    int timeout_ms; /* each read and flush; 0: 60 s */
    tdm__log_fn log;
    void *log_ud;
    /* Told how far a take's reads got (tdm__kclog_conf's; may be NULL). */
    void (*progress)(void *ud, int64_t offset, int64_t end);
    void *progress_ud;
} tdm__tclog_conf;

/* What a take found. */
typedef struct tdm__tclog_took {
    int64_t epoch;     /* the owner epoch taken */
    uint64_t restored; /* the checkpoint restored (0: none) */
    int64_t read;      /* records the take read */
    int64_t warm;      /* records a standby had read before it */
    char tag[48];      /* the owner tag in its keys, "<epoch>.<nonce>" */
} tdm__tclog_took;

/* A warm copy of one task's partition, kept by a process that does not
 * run the task (checkpoint.changelog.standby: all): it reads what the
 * partition gains, so that a take of the task reads only what came
 * after its last poll. */
typedef struct tdm__tclog_standby tdm__tclog_standby;

/* Takes task c->task for this process: reads the task's partition back
 * (from where standby @p sb got to, when given: it is consumed, even on
 * error), appends an owner record with the next owner epoch, and makes
 * the local checkpoint folder @p dir hold exactly the task's newest
 * checkpoint in the topic (written before the owner record), or no
 * checkpoint when the topic has none; *took says what it found.
 * TDM_ERR_STATE when another process took the task in the same instant
 * (the message names it), TDM_ERR_PARSE when the newest checkpoint is
 * incomplete in the topic, TDM_ERR_IO, TDM_ERR_NOMEM. */
tdm_err tdm__tclog_take(const tdm__tclog_conf *c, const char *dir,
                        tdm__tclog_standby *sb, tdm__tclog **out,
                        tdm__tclog_took *took, char *errbuf,
                        size_t errbuf_size);

/* Opens a standby of task c->task's partition (nothing read yet).
 * Errors as tdm__kclog_open's. */
tdm_err tdm__tclog_standby_open(const tdm__tclog_conf *c,
                                tdm__tclog_standby **out, char *errbuf,
                                size_t errbuf_size);
/* Reads what the partition gained since the last poll; *records says
 * how many records.  TDM_ERR_IO, TDM_ERR_NOMEM. */
tdm_err tdm__tclog_standby_poll(tdm__tclog_standby *sb, int64_t *records,
                                char *errbuf, size_t errbuf_size);
/* Frees @p sb.  NULL is fine. */
void tdm__tclog_standby_close(tdm__tclog_standby *sb);

/* Appends checkpoint @p id, complete in @p st (the folder @p dir), to the
 * topic and waits until the brokers have it; only then may its output be
 * committed.  TDM_ERR_STATE when a newer owner took the task before the
 * checkpoint reached the topic: the checkpoint is not the task's, and
 * nothing of it may be committed.  On any error the local copy of the
 * checkpoint is removed, so that no restart of this process resumes
 * from a checkpoint the topic does not hold. */
tdm_err tdm__tclog_publish(tdm__tclog *l, tdm__ckpt_store *st, const char *dir,
                           uint64_t id, char *errbuf, size_t errbuf_size);

/* Frees @p l.  NULL is fine. */
void tdm__tclog_close(tdm__tclog *l);

#endif
