/* SPDX-License-Identifier: MIT */
/* kafka_source.c - a source that reads Kafka topics as a member of a
 * consumer group: every subtask is one consumer, so several processes
 * with the same group share the partitions (docs/kafka.md).
 *
 * Assigned partitions get local indices 0, 1, ... that are never reused
 * (a partition lost or eagerly revoked and given back keeps its index
 * and position); each is a split of the subtask's reader.  Offsets are
 * committed only by commit(), from the snapshots mark() took (kafka.h),
 * or where reading started, with the operators' watermark as metadata
 * "tdm1 wm=<ms>"; a new owner resumes there and reads it back as the
 * partition's floor.  start: committed resumes from any commit, the
 * other starts only from a tidemark commit and apply to partitions the
 * group never committed.  With a repartition key the rows go through an
 * internal topic instead (kafka_shuffle.h) and the splits are its
 * partitions.
 *
 * Checkpoints (versions 3 and 4, conf->checkpointing): partitions are
 * not assigned by the group but statically, as Flink's KafkaSource
 * assigns splits itself: every partition of the listed topics (topics
 * sorted by name, partitions by number) gets a global index g, and
 * subtask g % count reads it, local indices in g order, so that the
 * reader's splits line up with a restored reader's.  The assignment
 * waits for the first poll (after restore): a partition the checkpoint
 * lists starts at its offset, the others as "start" says.  A snapshot
 * lists every partition of the subtask (topic, partition, the offset
 * after the last record returned, ended).  The group only receives
 * the positions of each durable checkpoint (metadata "tdm1 ckpt=<id>"),
 * for monitoring; no floor, claim, replay marking or fence applies.
 * Not with a repartition key (UNSUPPORTED).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connect/kafka.h"
#include "connect/kafka_shuffle.h"
#include "state/ckpt_codec.h"

/* How long rd_kafka_committed / offsets_for_times may take at assign. */
#define KS_QUERY_MS 5000
/* How long a close may take to leave the group. */
#define KS_CLOSE_MS 10000
/* The first consumer poll of a call waits this long for a message. */
#define KS_WAIT_MS 50
/* Claims and metadata-only periodic commits wait until the group has
 * been without rebalance callbacks this long (a mock rebalance round takes
 * session.timeout.ms - 1000, 3 s in the tests). */
#define KS_QUIET_MS 5000
/* Input rows buffered per poll on the repartition path. */
#define KS_SHUFFLE_BATCH 512
/* kpart.replay_end while the log end is not known yet. */
#define KS_REPLAY_PENDING INT64_MAX
/* Checkpointing: snapshots whose checkpoint is not durable yet. */
#define KS_CK_KEEP 4

/* One assigned partition (kept after revoke: indices are not reused). */
typedef struct kpart {
    char *topic;
    int32_t part;
    int local;
    char *name;           /* "topic[part]" */
    int64_t next;         /* offset after the last record read, -1 */
    int64_t base;         /* where reading started (nothing before it
                             is needed), -1 if unknown */
    int64_t committed;    /* last committed (by anyone), -1 */
    tdm_time_ms meta_wm;  /* metadata of our last commit: watermark */
    tdm_time_ms meta_top; /* and top (clean hand-over), or MIN */
    tdm_time_ms floor;    /* previous owner's watermark, or MIN */
    int64_t replay_end;   /* the previous owner may have read the
                             records below this offset (it crashed or
                             was revoked live), -1 none,
                             KS_REPLAY_PENDING until known */
    bool claim;           /* to be committed at assign (claim()) */
    bool live;            /* assigned now */
    bool limbo;           /* revoked (eager) or lost: kept, with its
                             index and position, in case the next
                             assignment gives it back */
    bool ended;           /* stop: end reached */
    bool paused;
    bool fin_pending;  /* finished flag not reported yet */
    bool fin_done;     /* finished was flagged (pending or sent) */
    bool repause;      /* paused before limbo: pause again */
    bool revoked_live; /* finished by a revoke or loss while the
                          job runs (connect.h, fenced) */
    bool handing;      /* in the hand-over commit being made */
    bool waiting;      /* paused until another subtask of this
                          process let it go (owner_take) */
    bool align_paused; /* what alignment asked (ks_pause) */
    bool taken_now;    /* assigned in this callback: owner_take */
    uint64_t fin_poll; /* poll in which it was dropped (owners) */
} kpart;

struct tdm__source {
    tdm__klog log;      /* first: the rd_kafka_t opaque */
    struct kpart *last; /* the partition find_live found last: messages
                           come in runs per partition */
    tdm__source_conf conf;
    tdm__source_conf pconf; /* for parsing: ingestion time when the
                               timestamp comes from the message */
    int index;
    tdm__dead_fn dead;
    void *dead_ud;
    rd_kafka_t *rk;
    kpart **parts; /* by local index */
    int n_parts, cap_parts;
    bool assigned_once;
    bool closing;              /* in close: revokes are the hand-over */
    bool hold_commits;         /* a rebalance is in progress: no periodic
                                  commits until its callback */
    bool claims_pending;       /* some kpart.claim not committed yet */
    bool claim_warned;         /* the last claim failed (logged once) */
    int64_t last_rebalance_ms; /* monotonic time of the last callback */
    bool coop_conf;            /* the configured assignor is cooperative */
    tdm_err cb_err;            /* NOMEM inside the rebalance callback */
    tdm__ksnaps snaps;
    int64_t *mark_next; /* scratch for mark(), cap_parts entries */
    bool have_commit;   /* last_proc/last_done are set */
    tdm_time_ms last_proc, last_done;
    tdm_time_ms last_top; /* the final commit's top (kafka.h), or MIN */
    /* Results a previous owner may have written (connect.h, replayed):
     * windows starting at or before replay_start, or whose end - 1 is at
     * or before replay_last. */
    tdm_time_ms replay_start, replay_last;
    bool replay_pending; /* some replay_end is KS_REPLAY_PENDING */
    int64_t replay_tried_ms;
    uint64_t poll_no; /* polls so far (owners_sync) */
    bool has_meta;    /* some conf.kafka_meta field is set */
    int *csv_cols;    /* CSV column -> schema index */
    int n_csv_cols;
    tdm__json_hint hint;
    /* "brokers.timeout" (kafka_guard.c) and poll_error's text. */
    tdm__kguard guard;
    char poll_err[640];
    bool tomb_logged; /* the first tombstone was logged */
    /* Repartition (kafka_shuffle.h): input rows go to the internal
     * topic; the splits are the internal topic's partitions. */
    tdm__kshuffle *sh;
    tdm__batch *inb;
    int64_t *in_off; /* the offset of each row of inb */
    int *key_idx;
    int n_key;
    bool input_end_sent;
    /* Positions of a restored checkpoint (ks_restore), looked up when a
     * partition is first assigned. */
    struct ks_pos *rpos;
    int n_rpos;
    /* Checkpointing (conf.checkpointing): the static assignment, made
     * by the first poll or snapshot (fixed_assign). */
    bool fixed;
    bool fixed_pending;
    struct ks_glob *glob; /* every partition of the topics, by global
                             index (restore checks the checkpoint's) */
    int n_glob;
    uint64_t ck_id; /* checkpoint of the next snapshot, 0: none
                       announced (the final snapshot) */
    /* Positions per snapshot until its checkpoint is durable (ring,
     * n_parts entries each; id 0 is the final snapshot). */
    struct {
        uint64_t id;
        int64_t *next;
        bool used;
    } ck[KS_CK_KEEP];
};

/* A partition of the listed topics and its global index (checkpoints:
 * the static assignment). */
typedef struct ks_glob {
    char *topic; /* owned */
    int32_t part;
} ks_glob;

/* Checkpoint section version of the static assignment: entries carry
 * the partition's global index. */
#define KS_SNAP_VERSION_FIXED 2

/* One checkpointed partition position. */
typedef struct ks_pos {
    char *topic;
    int32_t part;
    int64_t offset;
    bool ended;
} ks_pos;

/* ---- Partitions ---- */

/* The live partition (topic, part), NULL if none.  kparts live until
 * close, so the one-entry cache never dangles. */
static kpart *find_live(tdm__source *src, const char *topic, int32_t part)
{
    kpart *kp = src->last;
    if (kp && kp->live && kp->part == part && strcmp(kp->topic, topic) == 0)
        return kp;
    for (int i = src->n_parts - 1; i >= 0; i--) {
        kp = src->parts[i];
        if (kp->live && kp->part == part && strcmp(kp->topic, topic) == 0)
            return src->last = kp;
    }
    return NULL;
}

static kpart *find_limbo(tdm__source *src, const char *topic, int32_t part)
{
    for (int i = src->n_parts - 1; i >= 0; i--) {
        kpart *kp = src->parts[i];
        if (kp->limbo && kp->part == part && strcmp(kp->topic, topic) == 0)
            return kp;
    }
    return NULL;
}

/* Allocates the next local index for (topic, part).  NULL on OOM. */
static kpart *add_part(tdm__source *src, const char *topic, int32_t part)
{
    char name[512];
    kpart *kp;

    if (src->n_parts == src->cap_parts) {
        int cap = src->cap_parts ? 2 * src->cap_parts : 16;
        kpart **np = tdm__realloc(src->parts, (size_t)cap * sizeof *np);
        if (!np)
            return NULL;
        src->parts = np;
        int64_t *nx = tdm__realloc(src->mark_next, (size_t)cap * sizeof *nx);
        if (!nx)
            return NULL;
        src->mark_next = nx;
        src->cap_parts = cap;
    }
    kp = tdm__calloc(1, sizeof *kp);
    if (!kp)
        return NULL;
    snprintf(name, sizeof name, "%s[%d]", topic, (int)part);
    kp->topic = tdm__strndup(topic, strlen(topic));
    kp->name = tdm__strndup(name, strlen(name));
    if (!kp->topic || !kp->name) {
        tdm__free(kp->topic);
        tdm__free(kp->name);
        tdm__free(kp);
        return NULL;
    }
    kp->part = part;
    kp->local = src->n_parts;
    kp->next = -1;
    kp->base = -1;
    kp->committed = -1;
    kp->meta_wm = TDM_TIME_MIN;
    kp->meta_top = TDM_TIME_MIN;
    kp->replay_end = -1;
    kp->floor = TDM_TIME_MIN;
    kp->live = true;
    src->parts[src->n_parts++] = kp;
    return kp;
}

/* Stops or resumes fetching one partition. */
static void set_paused(tdm__source *src, kpart *kp, bool paused)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_resp_err_t e;

    if (!l)
        return;
    rd_kafka_topic_partition_list_add(l, kp->topic, kp->part);
    e = paused ? rd_kafka_pause_partitions(src->rk, l)
               : rd_kafka_resume_partitions(src->rk, l);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        kp->paused = paused;
    else
        tdm__kafka_logf(&src->log, "cannot %s %s: %s",
                        paused ? "pause" : "resume", kp->name,
                        rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(l);
}

/* ---- Commits ---- */

/* Commits the input positions of the repartition path: every row read
 * was produced to the internal topic, so once the producer is flushed the
 * positions are durable hand-offs.  @p handover: only the partitions
 * being handed over (kpart.handing), else every live one. */
static tdm_err commit_input(tdm__source *src, bool handover)
{
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_resp_err_t e;
    int n = 0;

    if (tdm__kshuffle_flush(src->sh, 10000) != TDM_OK) {
        tdm__kafka_logf(&src->log,
                        "repartition flush failed, input not "
                        "committed: %s",
                        tdm__kshuffle_errmsg(src->sh));
        return TDM_OK;
    }
    l = rd_kafka_topic_partition_list_new(src->n_parts ? src->n_parts : 1);
    if (!l)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        if (!kp->live || (handover && !kp->handing) || kp->next < 0 ||
            kp->next <= kp->committed)
            continue;
        rd_kafka_topic_partition_list_add(l, kp->topic, kp->part)->offset =
            kp->next;
        n++;
    }
    if (n > 0) {
        e = tdm__kafka_commit(src->rk, l);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            for (int i = 0; i < l->cnt; i++) {
                kpart *kp =
                    find_live(src, l->elems[i].topic, l->elems[i].partition);
                if (kp)
                    kp->committed = l->elems[i].offset;
            }
        } else {
            tdm__kafka_logf(&src->log, "commit failed: %s",
                            rd_kafka_err2str(e));
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    return TDM_OK;
}

/* Commits, for every live partition (or, with @p handover, those being
 * handed over in a revoke: kpart.handing, in one request), the offset of
 * the newest snapshot that (processed, done) allows, with metadata
 * "tdm1 wm=<done>" (and " top=<top>" when @p top is not TDM_TIME_MIN:
 * the final commit after every operator stopped, and the revokes of the
 * close after it); then drops the snapshots no partition needs.  A
 * commit that races a rebalance costs the member its whole assignment
 * (ILLEGAL_GENERATION, "lost"; measured on the mock cluster whenever a
 * commit falls into a rebalance), and rebalances move watermarks, so
 * periodic commits (@p handover false) refresh the metadata alone (same
 * offset) only while the group has been quiet for KS_QUIET_MS, and wait
 * for the next rebalance callback after a commit met
 * REBALANCE_IN_PROGRESS; the hand-over commit (revoke, close) and the
 * final commit always go.  A failed commit is logged and retried at the
 * next call (commits are idempotent); only a fatal client error is
 * TDM_ERR_IO. */
static tdm_err commit_parts(tdm__source *src, bool handover,
                            tdm_time_ms processed, tdm_time_ms done,
                            tdm_time_ms top)
{
    /* Metadata text per listed partition (borrowed by the list). */
    char(*meta)[TDM__KMETA_MAX];
    rd_kafka_topic_partition_list_t *l;
    uint64_t keep = UINT64_MAX;
    bool quiet = tdm__mono_ms() - src->last_rebalance_ms >= KS_QUIET_MS;
    rd_kafka_resp_err_t e;

    meta = tdm__malloc(((size_t)src->n_parts + 1) * sizeof *meta);
    l = rd_kafka_topic_partition_list_new(src->n_parts ? src->n_parts : 1);
    if (!l || !meta) {
        if (l)
            rd_kafka_topic_partition_list_destroy(l);
        tdm__free(meta);
        return TDM_ERR_NOMEM;
    }
    for (int i = 0; i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        tdm__kcommit_in in = {
            .p = kp->local,
            .base = kp->base,
            .committed = kp->committed,
            .meta_wm = kp->meta_wm,
            .floor = kp->floor,
            .top = top,
            .meta_top = kp->meta_top,
            .handover = handover || top != TDM_TIME_MIN,
            .quiet = quiet,
        };
        rd_kafka_topic_partition_t *el;
        tdm_time_ms wm;
        uint64_t seq;
        int64_t off;
        int due;

        if (!kp->live)
            continue;
        due = tdm__kcommit_choose(&src->snaps, &in, processed, done, &off, &wm,
                                  &seq);
        /* A partition without a usable snapshot (e.g. every record so
         * far came in one batch whose windows are open) still needs them
         * all. */
        if (seq < keep)
            keep = seq;
        if (!due || (handover && !kp->handing))
            continue;
        el = rd_kafka_topic_partition_list_add(l, kp->topic, kp->part);
        el->offset = off;
        /* Borrowed: detached again before the list is destroyed. */
        el->metadata = meta[l->cnt - 1];
        el->metadata_size =
            tdm__kafka_meta_format(wm, top, meta[l->cnt - 1], sizeof meta[0]);
    }
    if (l->cnt > 0) {
        e = tdm__kafka_commit(src->rk, l);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            for (int i = 0; i < l->cnt; i++) {
                kpart *kp =
                    find_live(src, l->elems[i].topic, l->elems[i].partition);
                if (kp) {
                    kp->committed = l->elems[i].offset;
                    tdm__kafka_meta_parse(l->elems[i].metadata,
                                          l->elems[i].metadata_size,
                                          &kp->meta_wm, &kp->meta_top);
                }
                if (kp && handover)
                    tdm__kafka_logf(&src->log,
                                    "hand-over commit of %s: "
                                    "offset %lld, %s",
                                    kp->name, (long long)kp->committed,
                                    (const char *)l->elems[i].metadata);
            }
        } else if (e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS) {
            src->hold_commits = true;
        } else {
            tdm__kafka_logf(&src->log, "commit failed: %s",
                            rd_kafka_err2str(e));
        }
    }
    for (int i = 0; i < l->cnt; i++) {
        l->elems[i].metadata = NULL;
        l->elems[i].metadata_size = 0;
    }
    rd_kafka_topic_partition_list_destroy(l);
    tdm__free(meta);
    if (!handover && keep != UINT64_MAX)
        tdm__ksnap_drop_before(&src->snaps, keep);
    if (rd_kafka_fatal_error(src->rk, NULL, 0) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return TDM_ERR_IO;
    return TDM_OK;
}

/* ---- Rebalances ---- */

/* Appends "name, " to a log line being built in (buf, n). */
static void list_name(char *buf, size_t n, const char *name)
{
    size_t len = strlen(buf);
    if (len + 1 < n)
        snprintf(buf + len, n - len, "%s%s", len ? " " : "", name);
}

/* The offset a logical start position (BEGINNING, END) stands for now,
 * from the partition's low or high watermark; -1 if the broker does not
 * answer.  Records produced meanwhile only make it lower than where the
 * fetch starts, so committing it is safe (at least once). */
static int64_t logical_offset(tdm__source *src, const kpart *kp,
                              int64_t logical)
{
    int64_t lo = -1, hi = -1;
    rd_kafka_resp_err_t e;

    if (logical != RD_KAFKA_OFFSET_BEGINNING && logical != RD_KAFKA_OFFSET_END)
        return -1;
    e = rd_kafka_query_watermark_offsets(src->rk, kp->topic, kp->part, &lo, &hi,
                                         KS_QUERY_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        tdm__kafka_logf(&src->log, "cannot read the offsets of %s: %s",
                        kp->name, rd_kafka_err2str(e));
        return -1;
    }
    return logical == RD_KAFKA_OFFSET_BEGINNING ? lo : hi;
}

/* "start: timestamp": the offsets of the first records at or after the
 * start timestamp for the partitions of @p l not @p resumed, written into
 * their offset (-1: none, start at the end). */
static void find_times(tdm__source *src, rd_kafka_topic_partition_list_t *l,
                       const uint8_t *resumed)
{
    rd_kafka_topic_partition_list_t *q =
        rd_kafka_topic_partition_list_new(l->cnt ? l->cnt : 1);
    rd_kafka_resp_err_t e;
    int k = 0;

    if (!q)
        return;
    for (int i = 0; i < l->cnt; i++)
        if (!resumed[i])
            rd_kafka_topic_partition_list_add(q, l->elems[i].topic,
                                              l->elems[i].partition)
                ->offset = src->conf.kafka_start_ts;
    e = q->cnt ? rd_kafka_offsets_for_times(src->rk, q, KS_QUERY_MS)
               : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        tdm__kafka_logf(&src->log,
                        "cannot look up offsets for the start "
                        "timestamp (%s): starting from the latest",
                        rd_kafka_err2str(e));
    /* q holds the partitions not resumed, in the order of l. */
    for (int i = 0; i < l->cnt; i++) {
        if (resumed[i])
            continue;
        l->elems[i].offset =
            e == RD_KAFKA_RESP_ERR_NO_ERROR && q->elems[k].err == 0
                ? q->elems[k].offset
                : -1;
        k++;
    }
    rd_kafka_topic_partition_list_destroy(q);
}

/* A partition resumed from a tidemark commit: which of the results this
 * member writes may repeat the previous owner's (connect.h, replayed).
 * A clean hand-over (metadata with top) wrote nothing for windows ending
 * after top + 1; otherwise (a crash, or a live revoke whose owner kept
 * firing) the previous owner read at most the records below the log end
 * at our assignment, and every result it wrote has a window holding one
 * of them, so windows starting at or before the largest timestamp read
 * below that offset are marked (replay_end).  The log end is asked for
 * by the next poll (resolve_replay), not inside the rebalance callback;
 * until then every record read counts.  A clean partition is claimed:
 * committed again without top, so that a crash of this member leaves it
 * unclean. */
static void resumed_from(tdm__source *src, kpart *kp, tdm_time_ms top)
{
    if (top != TDM_TIME_MIN) {
        if (top > kp->floor && top > src->replay_last)
            src->replay_last = top;
        kp->claim = true;
        return;
    }
    kp->replay_end = KS_REPLAY_PENDING;
    src->replay_pending = true;
}

/* Asks for the log end of the partitions resumed uncleanly (at most once
 * a second while the broker does not answer).  A later log end than the
 * assignment's only marks more. */
static void resolve_replay(tdm__source *src)
{
    int64_t now = tdm__mono_ms();
    if (now - src->replay_tried_ms < 1000)
        return;
    src->replay_tried_ms = now;
    src->replay_pending = false;
    for (int i = 0; i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        int64_t lo = -1, hi = -1;
        rd_kafka_resp_err_t e;
        if (kp->replay_end != KS_REPLAY_PENDING)
            continue;
        e = rd_kafka_query_watermark_offsets(src->rk, kp->topic, kp->part, &lo,
                                             &hi, 1000);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            src->replay_pending = true;
            continue;
        }
        kp->replay_end = hi;
        tdm__kafka_logf(&src->log,
                        "%s was not handed over cleanly: results "
                        "of windows holding records below offset %lld are "
                        "marked as updates (they may repeat the previous "
                        "owner's)",
                        kp->name, (long long)hi);
    }
}

/* Commits the partitions assigned with claim set at their start offset,
 * metadata "tdm1 wm=<floor>" (no top): from now on a crash of this
 * member leaves them unclean, and the next owner resumes here and marks
 * what it replays (also before this member's first periodic commit).
 * Called by ks_poll once the group has been quiet for KS_QUIET_MS; a
 * refused claim (REBALANCE_IN_PROGRESS holds commits until the next
 * callback) stays pending.  Until it succeeds a crash may repeat results
 * unmarked (docs/kafka.md; a failure is logged once). */
static void claim(tdm__source *src)
{
    char(*meta)[TDM__KMETA_MAX];
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_resp_err_t e;

    meta = tdm__malloc(((size_t)src->n_parts + 1) * sizeof *meta);
    l = rd_kafka_topic_partition_list_new(src->n_parts ? src->n_parts : 1);
    if (!l || !meta) {
        src->cb_err = TDM_ERR_NOMEM;
        goto done;
    }
    for (int i = 0; i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        rd_kafka_topic_partition_t *el;
        if (!kp->claim || !kp->live)
            continue;
        if (kp->base < 0) {
            /* The start offset was never resolved (the broker did not
             * answer at assignment): nothing to claim at. */
            tdm__kafka_logf(&src->log,
                            "%s: start offset unknown, not "
                            "claimed; a crash before the first commit may "
                            "repeat results unmarked",
                            kp->name);
            kp->claim = false;
            continue;
        }
        if (kp->committed > kp->base) {
            /* A periodic commit (never clean) got there first. */
            kp->claim = false;
            continue;
        }
        el = rd_kafka_topic_partition_list_add(l, kp->topic, kp->part);
        el->offset = kp->base;
        el->metadata = meta[l->cnt - 1];
        el->metadata_size = tdm__kafka_meta_format(
            kp->floor, TDM_TIME_MIN, meta[l->cnt - 1], sizeof meta[0]);
    }
    if (l->cnt == 0)
        goto done;
    e = tdm__kafka_commit(src->rk, l);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS)
            src->hold_commits = true;
        if (!src->claim_warned)
            tdm__kafka_logf(&src->log,
                            "claiming the assigned partitions "
                            "failed (%s), retrying; meanwhile a crash may "
                            "repeat results unmarked",
                            rd_kafka_err2str(e));
        src->claim_warned = true;
        goto done;
    }
    src->claim_warned = false;
    for (int i = 0; i < l->cnt; i++) {
        kpart *kp = find_live(src, l->elems[i].topic, l->elems[i].partition);
        if (!kp)
            continue;
        kp->claim = false;
        kp->committed = l->elems[i].offset;
        kp->meta_wm = kp->floor;
        kp->meta_top = TDM_TIME_MIN;
    }
done:
    src->claims_pending = false;
    for (int i = 0; i < src->n_parts; i++)
        if (src->parts[i]->claim && src->parts[i]->live &&
            src->parts[i]->base >= 0)
            src->claims_pending = true;
    if (l) {
        for (int i = 0; i < l->cnt; i++) {
            l->elems[i].metadata = NULL;
            l->elems[i].metadata_size = 0;
        }
        rd_kafka_topic_partition_list_destroy(l);
    }
    tdm__free(meta);
}

/* ---- Partitions shared by the subtasks of this process ----
 *
 * Every subtask is its own group member, so a partition can move between
 * two subtasks of one process.  The table (tdm__conn_shared.p) says who
 * reads each partition: a subtask assigned a partition another one still
 * holds waits (paused) until that one let it go, and a subtask that finds
 * its live partition owned by another drops it - the group can assign a
 * partition to a second member before the first served its revoke
 * (measured on the mock at parallelism 2: both read it).  Letting go
 * happens one poll after the split finished, when the runtime has sent
 * its key fence, so the new reader's rows reach the windows after the
 * fence. */

typedef struct kowner {
    char *topic;
    int32_t part;
    int owner; /* subtask index reading it, -1 none */
    int prev;  /* subtask that must let go first, -1 none */
} kowner;

typedef struct kowners {
    kowner *e;
    int n, cap;
} kowners;

static void owners_free(void *p)
{
    kowners *t = p;
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        tdm__free(t->e[i].topic);
    tdm__free(t->e);
    tdm__free(t);
}

/* The entry of @p kp, added (owner -1) if new; NULL on OOM.  Lock held. */
static kowner *owner_entry(tdm__conn_shared *sh, const kpart *kp)
{
    kowners *t = sh->p;
    if (!t) {
        if (!(t = tdm__calloc(1, sizeof *t)))
            return NULL;
        sh->p = t;
        sh->free_p = owners_free;
    }
    for (int i = 0; i < t->n; i++)
        if (t->e[i].part == kp->part && strcmp(t->e[i].topic, kp->topic) == 0)
            return &t->e[i];
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        kowner *ne = tdm__realloc(t->e, (size_t)cap * sizeof *ne);
        if (!ne)
            return NULL;
        t->e = ne;
        t->cap = cap;
    }
    kowner *o = &t->e[t->n];
    if (!(o->topic = tdm__strndup(kp->topic, strlen(kp->topic))))
        return NULL;
    o->part = kp->part;
    o->owner = o->prev = -1;
    t->n++;
    return o;
}

/* @p kp was just assigned to this subtask: it becomes the owner; when
 * another subtask still holds it, kp waits (paused) until it let go. */
static void owner_take(tdm__source *src, kpart *kp)
{
    tdm__conn_shared *sh = src->conf.shared;
    int prev = -1;
    if (!sh)
        return;
    pthread_mutex_lock(&sh->mu);
    kowner *o = owner_entry(sh, kp);
    if (!o) {
        src->cb_err = TDM_ERR_NOMEM;
    } else {
        if (o->owner >= 0 && o->owner != src->index)
            o->prev = o->owner;
        else if (o->prev == src->index)
            o->prev = -1;
        o->owner = src->index;
        prev = o->prev;
        kp->waiting = prev >= 0;
    }
    pthread_mutex_unlock(&sh->mu);
    if (kp->waiting) {
        tdm__kafka_logf(&src->log,
                        "%s: waiting for subtask %d of this "
                        "process to let it go",
                        kp->name, prev);
        set_paused(src, kp, true);
    }
}

/* Once per poll: lets go of partitions this subtask finished in an
 * earlier poll, drops live ones another subtask now owns (as a revoke
 * while running: the split finishes and its keys are fenced), and
 * resumes waiting ones whose previous reader let go. */
static void owners_sync(tdm__source *src)
{
    tdm__conn_shared *sh = src->conf.shared;
    if (!sh || !sh->p)
        return;
    src->poll_no++;
    pthread_mutex_lock(&sh->mu);
    kowners *t = sh->p;
    for (int i = 0; i < t->n; i++) {
        kowner *o = &t->e[i];
        kpart *kp = NULL;
        for (int k = src->n_parts - 1; k >= 0 && !kp; k--)
            if (src->parts[k]->part == o->part &&
                strcmp(src->parts[k]->topic, o->topic) == 0 &&
                (src->parts[k]->live || src->parts[k]->fin_done))
                kp = src->parts[k];
        if (o->prev == src->index &&
            (!kp || (!kp->live && kp->fin_done && !kp->fin_pending &&
                     src->poll_no > kp->fin_poll)))
            o->prev = -1;
        if (kp && kp->live && o->owner >= 0 && o->owner != src->index) {
            tdm__kafka_logf(&src->log,
                            "%s is read by subtask %d of this "
                            "process now: dropped here",
                            kp->name, o->owner);
            set_paused(src, kp, true);
            kp->live = false;
            kp->fin_pending = kp->fin_done = kp->revoked_live = true;
            kp->fin_poll = src->poll_no;
            if (o->prev < 0)
                o->prev = src->index;
        }
        if (kp && kp->live && kp->waiting && o->prev < 0) {
            kp->waiting = false;
            set_paused(src, kp, kp->align_paused);
        }
    }
    pthread_mutex_unlock(&sh->mu);
}

/* At the end of input or close: this subtask polls no more, so nothing
 * of it is waited for, and it owns nothing. */
static void owners_leave(tdm__source *src)
{
    tdm__conn_shared *sh = src->conf.shared;
    if (!sh || !sh->p)
        return;
    pthread_mutex_lock(&sh->mu);
    kowners *t = sh->p;
    for (int i = 0; i < t->n; i++) {
        if (t->e[i].prev == src->index)
            t->e[i].prev = -1;
        if (t->e[i].owner == src->index)
            t->e[i].owner = -1;
    }
    pthread_mutex_unlock(&sh->mu);
}

/* Partitions assigned: local indices, start offsets and floors, then the
 * (incremental) assign. */
/* The restored position of (topic, part), NULL if none. */
static const ks_pos *restored_pos(const tdm__source *src, const char *topic,
                                  int32_t part)
{
    for (int i = 0; i < src->n_rpos; i++)
        if (src->rpos[i].part == part && strcmp(src->rpos[i].topic, topic) == 0)
            return &src->rpos[i];
    return NULL;
}

static void on_assign(tdm__source *src, rd_kafka_topic_partition_list_t *in,
                      bool coop)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_copy(in);
    rd_kafka_error_t *aerr = NULL;
    rd_kafka_resp_err_t e;
    char names[1024] = "";
    int start = src->conf.kafka_start;
    uint8_t *resumed;

    if (!l) {
        src->cb_err = TDM_ERR_NOMEM;
        return;
    }
    resumed = tdm__calloc((size_t)l->cnt + 1, 1);
    if (!resumed) {
        rd_kafka_topic_partition_list_destroy(l);
        src->cb_err = TDM_ERR_NOMEM;
        return;
    }
    /* Offsets committed by the group: "start: committed" resumes from
     * any; the other starts only from a tidemark member's (metadata
     * "tdm1 wm="), so that partitions moving between the members of a
     * running group, or a restarted job, continue where they were. */
    if (src->sh)
        tdm__kshuffle_input_assigned(src->sh, -1);
    if (l->cnt > 0 && src->closing) {
        /* Given while leaving (another member left at the same moment):
         * nothing is read any more, the assign only completes the
         * protocol, and a committed-offset query would wait out its
         * timeout. */
        e = RD_KAFKA_RESP_ERR__DESTROY;
        for (int i = 0; i < l->cnt; i++)
            l->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
    } else if (l->cnt > 0) {
        e = rd_kafka_committed(src->rk, l, KS_QUERY_MS);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
            tdm__kafka_logf(&src->log,
                            "cannot read committed offsets (%s):"
                            " using the start position",
                            rd_kafka_err2str(e));
        for (int i = 0; i < l->cnt; i++) {
            rd_kafka_topic_partition_t *el = &l->elems[i];
            tdm_time_ms wm;
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR && el->offset >= 0 &&
                (start == TDM__KSTART_COMMITTED ||
                 tdm__kafka_meta_parse(el->metadata, el->metadata_size, &wm,
                                       NULL)))
                resumed[i] = 1;
            else
                el->offset = RD_KAFKA_OFFSET_INVALID;
        }
    }
    if (start == TDM__KSTART_TIMESTAMP && !src->closing)
        find_times(src, l, resumed);
    for (int i = 0; i < l->cnt; i++) {
        rd_kafka_topic_partition_t *el = &l->elems[i];
        kpart *kp = find_live(src, el->topic, el->partition);

        if (!kp && (kp = find_limbo(src, el->topic, el->partition))) {
            /* Given back after an eager revoke or a loss: the same split,
             * resumed after the last record read (re-reading from the
             * commit would count records twice in open windows). */
            kp->limbo = false;
            kp->live = true;
            kp->revoked_live = false;
            kp->taken_now = true;
            /* librdkafka forgot the pause: applied again after assign. */
            kp->repause = kp->paused;
            kp->paused = false;
        }
        if (kp) {
            if (kp->next >= 0)
                el->offset = kp->next;
            list_name(names, sizeof names, kp->name);
            continue;
        }
        kp = add_part(src, el->topic, el->partition);
        if (!kp) {
            src->cb_err = TDM_ERR_NOMEM;
            break;
        }
        kp->taken_now = true;
        if (src->sh)
            tdm__kshuffle_input_assigned(src->sh, kp->local);
        const ks_pos *cp = restored_pos(src, el->topic, el->partition);
        if (cp) {
            /* A checkpoint's position comes first: exactly after the
             * last record whose effects the checkpoint holds. */
            el->offset = cp->offset;
            kp->next = cp->offset;
            kp->claim = true;
        } else if (resumed[i]) {
            tdm_time_ms top;
            kp->committed = kp->next = el->offset;
            if (tdm__kafka_meta_parse(el->metadata, el->metadata_size,
                                      &kp->floor, &top))
                resumed_from(src, kp, top);
            else
                kp->claim = true;
        } else if (start == TDM__KSTART_LATEST) {
            el->offset = RD_KAFKA_OFFSET_END;
        } else if (start == TDM__KSTART_TIMESTAMP && el->offset >= 0) {
            kp->next = el->offset;
        } else if (start == TDM__KSTART_TIMESTAMP) {
            /* No record at or after the timestamp: the end. */
            el->offset = RD_KAFKA_OFFSET_END;
        } else {
            el->offset = RD_KAFKA_OFFSET_BEGINNING;
        }
        if (!resumed[i] && !cp)
            kp->claim = true;
        if (kp->next < 0)
            kp->next = logical_offset(src, kp, el->offset);
        kp->base = kp->next;
        if (kp->floor != TDM_TIME_MIN)
            tdm__kafka_logf(&src->log,
                            "%s starts at the committed offset "
                            "%lld; records whose results were written "
                            "(horizon <= %lld) are skipped",
                            kp->name, (long long)kp->committed,
                            (long long)kp->floor);
        list_name(names, sizeof names, kp->name);
    }
    if (coop) {
        aerr = rd_kafka_incremental_assign(src->rk, l);
        if (aerr) {
            tdm__kafka_logf(&src->log, "assign failed: %s",
                            rd_kafka_error_string(aerr));
            rd_kafka_error_destroy(aerr);
        }
    } else {
        e = rd_kafka_assign(src->rk, l);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
            tdm__kafka_logf(&src->log, "assign failed: %s",
                            rd_kafka_err2str(e));
    }
    for (int i = 0; i < src->n_parts; i++)
        if (src->parts[i]->taken_now) {
            src->parts[i]->taken_now = false;
            owner_take(src, src->parts[i]);
        }
    /* Claimed by a later poll, once the group is quiet (ks_poll). */
    src->claims_pending = src->sh == NULL;
    /* Partitions in limbo that did not come back finish now. */
    for (int i = 0; i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        if (kp->repause) {
            kp->repause = false;
            set_paused(src, kp, true);
        }
        if (kp->limbo) {
            kp->limbo = false;
            kp->fin_pending = kp->fin_done = true;
            kp->revoked_live = true;
        }
    }
    src->assigned_once = true;
    tdm__kafka_logf(&src->log, "assigned %d partition(s): %s", l->cnt,
                    l->cnt ? names : "-");
    rd_kafka_topic_partition_list_destroy(l);
    tdm__free(resumed);
}

/* Partitions revoked (or lost): one hand-over commit of what the last
 * commit() allowed (not when lost), then they finish. */
static void on_revoke(tdm__source *src, rd_kafka_topic_partition_list_t *l,
                      bool coop, bool lost)
{
    char names[1024] = "";

    for (int i = 0; i < l->cnt; i++) {
        kpart *kp = find_live(src, l->elems[i].topic, l->elems[i].partition);
        if (kp)
            kp->handing = true;
    }
    if (!lost && src->sh)
        commit_input(src, true);
    else if (!lost && src->have_commit)
        commit_parts(src, true, src->last_proc, src->last_done, src->last_top);
    for (int i = 0; i < l->cnt; i++) {
        kpart *kp = find_live(src, l->elems[i].topic, l->elems[i].partition);
        if (!kp)
            continue;
        kp->handing = false;
        if (!lost && !src->sh && !src->closing && kp->next > kp->committed)
            tdm__kafka_logf(&src->log,
                            "%s revoked with records read past the "
                            "committed offset %lld (next %lld): its next "
                            "owner reads them again",
                            kp->name, (long long)kp->committed,
                            (long long)kp->next);
        kp->live = false;
        /* Eager: every revoke precedes a new assignment that usually
         * gives most partitions back; lost: the member rejoins.  An
         * ended partition (stop: end) finished already. */
        if (kp->fin_done)
            ;
        else if ((!coop || lost) && !src->closing)
            kp->limbo = true;
        else if (src->closing)
            kp->fin_pending = kp->fin_done = true;
        else
            kp->fin_pending = kp->fin_done = kp->revoked_live = true;
        list_name(names, sizeof names, kp->name);
    }
    if (coop) {
        rd_kafka_error_t *e = rd_kafka_incremental_unassign(src->rk, l);
        if (e) {
            tdm__kafka_logf(&src->log, "unassign failed: %s",
                            rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        }
    } else {
        rd_kafka_assign(src->rk, NULL);
    }
    tdm__kafka_logf(&src->log, "%s %d partition(s): %s",
                    lost ? "lost" : "revoked", l->cnt, l->cnt ? names : "-");
}

/* librdkafka's rebalance callback (runs inside consumer poll/close). */
static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    tdm__source *src = opaque;
    /* The configured assignor tells (tdm__kafka_conf_coop: not
     * rd_kafka_rebalance_protocol(), which can hang inside a close). */
    bool coop = src->coop_conf;

    src->hold_commits = false;
    src->last_rebalance_ms = tdm__mono_ms();
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS)
        on_assign(src, parts, coop);
    else
        on_revoke(src, parts, coop, rd_kafka_assignment_lost(rk) != 0);
}

/* ---- Records ---- */

/* Writes the location of a message, "topic[p]@offset". */
static void locate(const kpart *kp, int64_t offset, char *loc, size_t n)
{
    snprintf(loc, n, "%s@%lld", kp->name, (long long)offset);
}

/* Sends a dead letter located "topic[p]@offset". */
static void dead_letter(tdm__source *src, const kpart *kp, int64_t offset,
                        const char *reason, const char *raw, size_t len)
{
    char loc[600];

    if (!src->dead)
        return;
    locate(kp, offset, loc, sizeof loc);
    src->dead(src->dead_ud, loc, reason, raw, len);
}

/* Fills the "metadata.*" fields of @p row from message @p m of @p kp:
 * its time (null when it has none), partition, offset and topic.
 * TDM_OK or TDM_ERR_NOMEM. */
static tdm_err fill_metadata(tdm__source *src, const kpart *kp,
                             const rd_kafka_message_t *m, tdm__batch *b,
                             tdm__row *row)
{
    const int *f = src->conf.kafka_meta;
    if (f[TDM__KMETA_TIMESTAMP]) {
        rd_kafka_timestamp_type_t tt;
        int64_t ts = rd_kafka_message_timestamp(m, &tt);
        tdm__val *v = &row->v[f[TDM__KMETA_TIMESTAMP] - 1];
        v->null = tt == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ts < 0;
        v->u.i = v->null ? 0 : ts;
    }
    if (f[TDM__KMETA_PARTITION])
        row->v[f[TDM__KMETA_PARTITION] - 1] = (tdm__val){.u.i = kp->part};
    if (f[TDM__KMETA_OFFSET])
        row->v[f[TDM__KMETA_OFFSET] - 1] = (tdm__val){.u.i = m->offset};
    if (f[TDM__KMETA_TOPIC])
        return tdm__batch_set_string(b, row, f[TDM__KMETA_TOPIC] - 1, kp->topic,
                                     strlen(kp->topic));
    return TDM_OK;
}

/* Parses one message into a row of @p b.  Malformed ones become dead
 * letters.  TDM_OK or TDM_ERR_NOMEM. */
static tdm_err take_message(tdm__source *src, kpart *kp,
                            const rd_kafka_message_t *m, tdm__batch *b)
{
    const char *val = m->payload ? (const char *)m->payload : "";
    char reason[512];
    tdm__row *row;
    tdm_err err;

    if (src->conf.format == TDM__FMT_CSV)
        err = tdm__csv_parse_line(&src->pconf, src->csv_cols, src->n_csv_cols,
                                  val, m->len, b, reason, sizeof reason);
    else
        err = tdm__json_parse_line_hint(&src->pconf, &src->hint, val, m->len, b,
                                        reason, sizeof reason);
    if (err != TDM_OK) {
        if (err != TDM_ERR_RANGE)
            tdm__batch_drop_last(b);
        if (err != TDM_ERR_PARSE)
            return err;
        dead_letter(src, kp, m->offset, reason, val, m->len);
        return TDM_OK;
    }
    row = &b->rows[b->n - 1];
    row->partition = (uint32_t)kp->local;
    if (b == src->inb)
        src->in_off[b->n - 1] = m->offset; /* a task's row origin */
    if (src->conf.ts_from_message) {
        rd_kafka_timestamp_type_t tt;
        int64_t ts = rd_kafka_message_timestamp(m, &tt);
        if (tt == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ts < 0) {
            tdm__batch_drop_last(b);
            dead_letter(src, kp, m->offset, "message has no timestamp", val,
                        m->len);
            return TDM_OK;
        }
        row->ts = ts;
    }
    if (src->conf.key_field >= 0 && src->conf.key_field < src->conf.schema->n) {
        int k = src->conf.key_field;
        if (m->key) {
            err = tdm__batch_set_string(b, row, k, m->key, m->key_len);
            if (err != TDM_OK) {
                tdm__batch_drop_last(b);
                return err;
            }
        } else {
            row->v[k].null = 1;
        }
    }
    if (src->has_meta && fill_metadata(src, kp, m, b, row) != TDM_OK) {
        tdm__batch_drop_last(b);
        return TDM_ERR_NOMEM;
    }
    if (tdm__batch_wants(b, row)) {
        /* A row the timestamp guard may dead-letter after the poll,
         * when the message is gone (row.h, keep_after).  Without memory
         * it is not noted, and its dead letter shows the row. */
        char loc[600];
        locate(kp, m->offset, loc, sizeof loc);
        (void)tdm__batch_keep(b, loc, val, m->len);
    }
    return TDM_OK;
}

/* Tells the broker guard what message or event @p m says about the
 * brokers: a message or an end of partition came from one; an error
 * (all brokers down, authentication) is noted. */
static void note_contact(tdm__source *src, const rd_kafka_message_t *m)
{
    if (!m->err || m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
        tdm__kguard_up(&src->guard);
    else
        tdm__kguard_error(&src->guard, m->err, rd_kafka_message_errstr(m));
}

/* A message with a null value (a tombstone: "delete this key" in a
 * compacted topic) is no record: it is counted in the batch (the
 * source's numTombstonesSkipped) and the first one is logged, instead
 * of a dead letter "empty line". */
static void skip_tombstone(tdm__source *src, const kpart *kp,
                           const rd_kafka_message_t *m, tdm__batch *b)
{
    b->n_tombstones++;
    if (src->tomb_logged)
        return;
    src->tomb_logged = true;
    tdm__kafka_logf(&src->log,
                    "%s@%lld: a tombstone (null value) skipped; further "
                    "ones are only counted (numTombstonesSkipped)",
                    kp->name, (long long)m->offset);
}

/* Handles one message or event from the consumer.  TDM_OK, TDM_ERR_IO
 * (fatal client error), TDM_ERR_NOMEM. */
static tdm_err handle(tdm__source *src, rd_kafka_message_t *m, tdm__batch *b)
{
    const char *topic = m->rkt ? rd_kafka_topic_name(m->rkt) : NULL;
    kpart *kp = topic ? find_live(src, topic, m->partition) : NULL;

    note_contact(src, m);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (!kp)
            return TDM_OK;
        if (kp->next < m->offset)
            kp->next = m->offset;
        if (src->conf.kafka_stop_at_end && !kp->ended) {
            kp->ended = true;
            kp->fin_pending = kp->fin_done = true;
            /* Records produced later are not read. */
            set_paused(src, kp, true);
        }
        return TDM_OK;
    }
    if (m->err) {
        tdm__kafka_logf(&src->log, "consume error%s%s: %s", kp ? " on " : "",
                        kp ? kp->name : "", rd_kafka_message_errstr(m));
        if (m->err == RD_KAFKA_RESP_ERR__FATAL)
            return TDM_ERR_IO;
        return TDM_OK;
    }
    /* Stale (revoked), ended, or already read (eager re-assignment). */
    if (!kp || kp->ended || (kp->next >= 0 && m->offset < kp->next))
        return TDM_OK;
    kp->next = m->offset + 1;
    if (!m->payload) {
        skip_tombstone(src, kp, m, b);
        return TDM_OK;
    }
    if (m->offset < kp->replay_end) {
        /* A record the previous owner may have read. */
        size_t n = b->n;
        tdm_err err = take_message(src, kp, m, b);
        if (b->n > n && b->rows[b->n - 1].ts > src->replay_start)
            src->replay_start = b->rows[b->n - 1].ts;
        return err;
    }
    return take_message(src, kp, m, b);
}

/* Reports pending finished flags of partitions counted before this poll
 * (@p n_before): into @p finished, or to the shuffle's writer. */
static void report_finished(tdm__source *src, int n_before, uint8_t *finished)
{
    for (int i = 0; i < n_before && i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        if (!kp->fin_pending)
            continue;
        kp->fin_pending = false;
        if (src->sh)
            tdm__kshuffle_input_finished(src->sh, kp->local);
        else if (finished)
            finished[i] = 1;
    }
}

/* 1 when stop: end and every assigned partition ended and reported. */
static bool input_done(const tdm__source *src)
{
    if (!src->conf.kafka_stop_at_end || !src->assigned_once)
        return false;
    for (int i = 0; i < src->n_parts; i++) {
        const kpart *kp = src->parts[i];
        if (kp->fin_pending || kp->limbo || (kp->live && !kp->ended))
            return false;
    }
    return true;
}

/* Reads from the consumer into @p b (up to @p limit rows in all),
 * waiting at most @p wait_ms for the first message. */
static tdm_err consume(tdm__source *src, tdm__batch *b, size_t limit,
                       int wait_ms)
{
    while (b->n < limit) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(src->rk, wait_ms);
        tdm_err err;

        wait_ms = 0;
        if (!m)
            break;
        err = handle(src, m, b);
        rd_kafka_message_destroy(m);
        if (err != TDM_OK)
            return err;
        if (src->cb_err != TDM_OK)
            return src->cb_err;
    }
    return src->cb_err;
}

/* ---- Static assignment (checkpointing) ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The partition ids of @p topic, sorted, into *ids (tdm__malloc'ed) and
 * *n.  TDM_OK, TDM_ERR_IO (no metadata, unknown topic: named), NOMEM. */
static tdm_err topic_partitions(tdm__source *src, const char *topic,
                                int32_t **ids, int *n, char *errbuf,
                                size_t errbuf_size)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(src->rk, topic, NULL);
    rd_kafka_resp_err_t e;
    tdm_err err = TDM_OK;

    *ids = NULL;
    *n = 0;
    if (!rkt)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO, "topic '%s': %s",
                         topic, rd_kafka_err2str(rd_kafka_last_error()));
    e = rd_kafka_metadata(src->rk, 0, rkt, &md, KS_QUERY_MS);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
        md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR)
        e = md->topics[0].err;
    else if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt != 1)
        e = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "cannot read the partitions of topic '%s': %s", topic,
                        rd_kafka_err2str(e));
        goto out;
    }
    *ids =
        tdm__malloc(((size_t)md->topics[0].partition_cnt + 1) * sizeof **ids);
    if (!*ids) {
        err = TDM_ERR_NOMEM;
        goto out;
    }
    for (int i = 0; i < md->topics[0].partition_cnt; i++)
        (*ids)[i] = md->topics[0].partitions[i].id;
    *n = md->topics[0].partition_cnt;
    qsort(*ids, (size_t)*n, sizeof **ids, cmp_i32);
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return err;
}

/* The next item of the comma-separated topic list at *pp (the whole rest
 * when @p whole: a pattern), blanks trimmed: *name and *len (0: an empty
 * item).  Advances *pp past the item and its comma.  False at the end.
 * Borrows the list. */
static bool next_topic(const char **pp, bool whole, const char **name,
                       size_t *len)
{
    const char *p = *pp;
    if (!p || !*p)
        return false;
    size_t n = whole ? strlen(p) : strcspn(p, ",");
    const char *q = p;
    size_t k = n;
    while (k > 0 && (*q == ' ' || *q == '\t'))
        q++, k--;
    while (k > 0 && (q[k - 1] == ' ' || q[k - 1] == '\t'))
        k--;
    *name = q;
    *len = k;
    p += n;
    if (*p == ',')
        p++;
    *pp = p;
    return true;
}

/* Whether partition @p part (global index @p g) is read by subtask
 * @p index of @p count: a task reads its partition number of every
 * topic; otherwise the global indexes are dealt round-robin. */
static bool mine(const tdm__source *src, int64_t g, int32_t part, int index,
                 int count)
{
    if (src->conf.kafka_tasked)
        return part == src->conf.kafka_task && index == 0;
    return g % count == index;
}

/* At open, with checkpointing: this subtask's partitions, dealt by
 * global index (topics by name, partitions by number) round-robin over
 * the @p count subtasks; each gets its local index now.  The consumer
 * neither subscribes nor joins the group. */
static tdm_err fixed_setup(tdm__source *src, int index, int count, char *errbuf,
                           size_t errbuf_size)
{
    const char *p = src->conf.kafka_topics;
    char **names = NULL;
    int n_names = 0, cap = 0;
    int64_t g = 0;
    tdm_err err = TDM_OK;

    if (src->conf.kafka_pattern)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "topic_pattern cannot be used with checkpoints "
                         "(list the topics)");
    const char *q;
    size_t k;
    while (next_topic(&p, false, &q, &k)) {
        if (k > 0) {
            if (n_names == cap) {
                cap = cap ? 2 * cap : 8;
                char **nn = tdm__realloc(names, (size_t)cap * sizeof *nn);
                if (!nn) {
                    err = TDM_ERR_NOMEM;
                    goto out;
                }
                names = nn;
            }
            names[n_names] = tdm__strndup(q, k);
            if (!names[n_names]) {
                err = TDM_ERR_NOMEM;
                goto out;
            }
            n_names++;
        }
    }
    if (n_names == 0) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                        "topics must name at least one topic");
        goto out;
    }
    qsort(names, (size_t)n_names, sizeof *names, cmp_str);
    for (int t = 0; t < n_names && err == TDM_OK; t++) {
        int32_t *ids = NULL;
        int n = 0;
        if (t > 0 && strcmp(names[t], names[t - 1]) == 0)
            continue;
        err = topic_partitions(src, names[t], &ids, &n, errbuf, errbuf_size);
        if (err == TDM_OK && n > 0) {
            ks_glob *ng =
                tdm__realloc(src->glob, (size_t)(src->n_glob + n) * sizeof *ng);
            if (!ng)
                err = TDM_ERR_NOMEM;
            else
                src->glob = ng;
        }
        for (int i = 0; i < n && err == TDM_OK; i++, g++) {
            src->glob[src->n_glob].topic =
                tdm__strndup(names[t], strlen(names[t]));
            src->glob[src->n_glob].part = ids[i];
            if (!src->glob[src->n_glob].topic) {
                err = TDM_ERR_NOMEM;
                break;
            }
            src->n_glob++;
            if (mine(src, g, ids[i], index, count) &&
                !add_part(src, names[t], ids[i]))
                err = TDM_ERR_NOMEM;
        }
        tdm__free(ids);
    }
    src->fixed = true;
    src->fixed_pending = true;
out:
    for (int i = 0; i < n_names; i++)
        tdm__free(names[i]);
    tdm__free(names);
    return err;
}

/* The static assignment, once the restore had its say: a partition the
 * checkpoint lists starts at its offset (ended there: not read, and
 * reported finished once, which a restored reader ignores); the others
 * start as "start" says, resolved to a concrete offset when the broker
 * answers (so that a snapshot before their first record holds it). */
static tdm_err fixed_assign(tdm__source *src)
{
    rd_kafka_topic_partition_list_t *l, *q = NULL;
    uint8_t *resumed = NULL;
    char names[1024] = "";
    int start = src->conf.kafka_start, n_restored = 0;
    rd_kafka_resp_err_t e;
    tdm_err err = TDM_OK;

    src->fixed_pending = false;
    src->assigned_once = true;
    l = rd_kafka_topic_partition_list_new(src->n_parts ? src->n_parts : 1);
    if (!l)
        return TDM_ERR_NOMEM;
    for (int i = 0; i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        const ks_pos *cp = restored_pos(src, kp->topic, kp->part);
        if (cp && cp->ended) {
            kp->next = kp->base = cp->offset;
            kp->ended = kp->fin_pending = kp->fin_done = true;
            n_restored++;
            list_name(names, sizeof names, kp->name);
            continue;
        }
        rd_kafka_topic_partition_list_add(l, kp->topic, kp->part)->offset =
            cp ? cp->offset : RD_KAFKA_OFFSET_INVALID;
        if (cp) {
            kp->next = cp->offset;
            n_restored++;
        }
    }
    resumed = tdm__calloc((size_t)l->cnt + 1, 1);
    q = rd_kafka_topic_partition_list_new(l->cnt ? l->cnt : 1);
    if (!resumed || !q) {
        err = TDM_ERR_NOMEM;
        goto out;
    }
    /* start: committed - the group's offset, where there is one. */
    for (int i = 0; i < l->cnt; i++) {
        resumed[i] = l->elems[i].offset >= 0;
        if (!resumed[i] && start == TDM__KSTART_COMMITTED)
            rd_kafka_topic_partition_list_add(q, l->elems[i].topic,
                                              l->elems[i].partition);
    }
    e = q->cnt ? rd_kafka_committed(src->rk, q, KS_QUERY_MS)
               : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        tdm__kafka_logf(&src->log,
                        "cannot read committed offsets (%s): "
                        "starting from the beginning",
                        rd_kafka_err2str(e));
    for (int i = 0, k = 0; i < l->cnt; i++) {
        rd_kafka_topic_partition_t *el = &l->elems[i];
        if (resumed[i] || start != TDM__KSTART_COMMITTED)
            continue;
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR && q->elems[k].err == 0 &&
            q->elems[k].offset >= 0) {
            el->offset = q->elems[k].offset;
            resumed[i] = 1;
        }
        k++;
    }
    if (start == TDM__KSTART_TIMESTAMP)
        find_times(src, l, resumed);
    for (int i = 0; i < l->cnt; i++) {
        rd_kafka_topic_partition_t *el = &l->elems[i];
        kpart *kp = find_live(src, el->topic, el->partition);
        if (!resumed[i]) {
            if (start == TDM__KSTART_LATEST ||
                (start == TDM__KSTART_TIMESTAMP && el->offset < 0))
                el->offset = RD_KAFKA_OFFSET_END;
            else if (start != TDM__KSTART_TIMESTAMP)
                el->offset = RD_KAFKA_OFFSET_BEGINNING;
            if (el->offset < 0) {
                int64_t off = logical_offset(src, kp, el->offset);
                if (off >= 0)
                    el->offset = off;
            }
        }
        kp->next = kp->base = el->offset >= 0 ? el->offset : -1;
        list_name(names, sizeof names, kp->name);
    }
    e = rd_kafka_assign(src->rk, l);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        tdm__kafka_logf(&src->log, "assign failed: %s", rd_kafka_err2str(e));
        err = TDM_ERR_IO;
        goto out;
    }
    /* Alignment may have asked for pauses before the assignment. */
    for (int i = 0; i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        if (kp->align_paused && !kp->ended)
            set_paused(src, kp, true);
    }
    tdm__kafka_logf(&src->log,
                    "assigned %d partition(s) by subtask "
                    "(checkpoints; %d from the checkpoint): %s",
                    src->n_parts, n_restored, names[0] ? names : "-");
out:
    if (q)
        rd_kafka_topic_partition_list_destroy(q);
    rd_kafka_topic_partition_list_destroy(l);
    tdm__free(resumed);
    return err;
}

/* A task's positions @p next (n_parts entries, -1: none) go to its
 * task host, which commits them as the group's member: at every durable
 * checkpoint, changed or not, since an asynchronous commit that met a
 * rebalance fails (a stale generation) without the task knowing, and
 * the next one then repairs it. */
static void task_commit(tdm__source *src, const int64_t *next, const char *meta)
{
    if (!src->conf.kafka_task_commit)
        return;
    for (int i = 0; i < src->n_parts; i++) {
        if (next[i] < 0)
            continue;
        src->conf.kafka_task_commit(src->conf.kafka_task_commit_ud,
                                    src->parts[i]->topic, src->parts[i]->part,
                                    next[i], meta);
    }
}

/* Commits the positions @p next (n_parts entries, -1: none) to the
 * group with metadata "tdm1 ckpt=<id>" ("final" for 0): for monitoring
 * only (lag tools), never read back by a checkpointed job. */
static void fixed_commit(tdm__source *src, uint64_t id, const int64_t *next)
{
    char meta[TDM__KMETA_MAX];
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new(src->n_parts ? src->n_parts : 1);
    rd_kafka_resp_err_t e;

    if (!l)
        return;
    if (id)
        snprintf(meta, sizeof meta, "tdm1 ckpt=%llu", (unsigned long long)id);
    else
        snprintf(meta, sizeof meta, "tdm1 ckpt=final");
    if (src->conf.kafka_tasked) {
        /* A task's job is no group member; its task host is. */
        rd_kafka_topic_partition_list_destroy(l);
        task_commit(src, next, meta);
        return;
    }
    for (int i = 0; i < src->n_parts; i++) {
        kpart *kp = src->parts[i];
        rd_kafka_topic_partition_t *el;
        if (next[i] < 0 || next[i] == kp->committed)
            continue;
        el = rd_kafka_topic_partition_list_add(l, kp->topic, kp->part);
        el->offset = next[i];
        el->metadata = meta; /* borrowed, detached below */
        el->metadata_size = strlen(meta);
    }
    e = l->cnt ? tdm__kafka_commit(src->rk, l) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        tdm__kafka_logf(&src->log,
                        "offset commit of checkpoint %s failed "
                        "(monitoring only): %s",
                        meta + 10, rd_kafka_err2str(e));
    for (int i = 0; i < l->cnt; i++) {
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            kpart *kp =
                find_live(src, l->elems[i].topic, l->elems[i].partition);
            if (kp)
                kp->committed = l->elems[i].offset;
        }
        l->elems[i].metadata = NULL;
        l->elems[i].metadata_size = 0;
    }
    rd_kafka_topic_partition_list_destroy(l);
}

/* Remembers the positions just snapshotted under src->ck_id (the
 * entry of the oldest checkpoint goes when all are taken). */
static void fixed_keep(tdm__source *src)
{
    int slot = -1;
    for (int i = 0; i < KS_CK_KEEP; i++)
        if (!src->ck[i].used) {
            slot = i;
            break;
        } else if (slot < 0 || src->ck[i].id < src->ck[slot].id) {
            slot = i;
        }
    if (!src->ck[slot].next) {
        src->ck[slot].next =
            tdm__malloc(((size_t)src->n_parts + 1) * sizeof(int64_t));
        if (!src->ck[slot].next)
            return; /* no monitoring commit for it */
    }
    for (int i = 0; i < src->n_parts; i++)
        src->ck[slot].next[i] = src->parts[i]->next;
    src->ck[slot].id = src->ck_id;
    src->ck[slot].used = true;
    src->ck_id = 0;
}

/* Commits the newest kept positions of a checkpoint <= @p id (id 0: the
 * final snapshot's) and forgets those of checkpoints <= id. */
static void fixed_done(tdm__source *src, uint64_t id)
{
    int best = -1;
    for (int i = 0; i < KS_CK_KEEP; i++) {
        if (!src->ck[i].used || src->ck[i].id > id ||
            (id == 0) != (src->ck[i].id == 0))
            continue;
        if (best < 0 || src->ck[i].id > src->ck[best].id)
            best = i;
    }
    if (best >= 0)
        fixed_commit(src, src->ck[best].id, src->ck[best].next);
    for (int i = 0; i < KS_CK_KEEP; i++)
        if (src->ck[i].used && src->ck[i].id <= id &&
            (id == 0) == (src->ck[i].id == 0))
            src->ck[i].used = false;
}

/* Reads up to @p max rows (see connect.h, version 2 contract). */
static tdm_err ks_poll(tdm__source *src, tdm__batch *b, size_t max,
                       uint8_t *finished, int *eof)
{
    size_t limit = b->n + max > b->cap ? b->cap : b->n + max;
    int n_before = src->n_parts;
    tdm_err err;

    *eof = 0;
    err = tdm__kguard_check(&src->guard, src->rk, src->poll_err,
                            sizeof src->poll_err);
    if (err != TDM_OK)
        return err;
    if (src->fixed_pending) {
        err = fixed_assign(src);
        if (err != TDM_OK)
            return err;
    }
    if (src->replay_pending)
        resolve_replay(src);
    owners_sync(src);
    /* Claims wait, like periodic commits, until the group has been quiet
     * for KS_QUIET_MS: a commit that meets a rebalance round can cost the
     * member its assignment without a callback (measured on the mock: a
     * claim made inside the assign callback left two subtasks reading
     * the same partitions). */
    if (src->claims_pending && !src->hold_commits &&
        tdm__mono_ms() - src->last_rebalance_ms >= KS_QUIET_MS)
        claim(src);
    if (!src->sh) {
        err = consume(src, b, limit, KS_WAIT_MS);
        if (err != TDM_OK)
            return err;
        report_finished(src, n_before, finished);
        if (input_done(src)) {
            *eof = 1;
            /* No more polls here: nobody may wait for this subtask. */
            owners_leave(src);
        }
        return TDM_OK;
    }
    /* Repartition: input rows go to the internal topic; the rows handed
     * to the runtime come from it. */
    tdm__batch_clear(src->inb);
    err = consume(src, src->inb, src->inb->cap, 0);
    b->n_tombstones += src->inb->n_tombstones;
    for (size_t i = 0; i < src->inb->n && err == TDM_OK; i++) {
        uint32_t in = src->inb->rows[i].partition;
        err = tdm__kshuffle_write(
            src->sh, (int)in, &src->inb->rows[i],
            in < (uint32_t)src->n_parts ? src->parts[in]->name : NULL,
            src->in_off[i]);
    }
    if (err != TDM_OK)
        return err;
    report_finished(src, n_before, NULL);
    if (!src->input_end_sent && input_done(src)) {
        src->input_end_sent = true;
        err = tdm__kshuffle_input_end(src->sh);
        if (err != TDM_OK)
            return err;
    }
    return tdm__kshuffle_poll(src->sh, b, max, finished, eof);
}

/* ---- The vtable ---- */

static void ks_close(tdm__source *src)
{
    if (!src)
        return;
    owners_leave(src);
    if (src->rk) {
        /* Leaves the group; the revoke callback makes a last hand-over
         * commit of what the last commit() allowed.  Bounded: a close
         * that meets a rebalance (another member leaving at the same
         * moment) must not hold the job's exit. */
        src->closing = true;
        if (!tdm__kafka_close_consumer(src->rk, rebalance_cb, src, KS_CLOSE_MS))
            tdm__kafka_logf(&src->log,
                            "warning: the consumer did not "
                            "leave its group within %d s",
                            KS_CLOSE_MS / 1000);
        src->rk = NULL;
    }
    tdm__kshuffle_close(src->sh);
    for (int i = 0; i < src->n_parts; i++) {
        tdm__free(src->parts[i]->topic);
        tdm__free(src->parts[i]->name);
        tdm__free(src->parts[i]);
    }
    tdm__free(src->parts);
    tdm__free(src->mark_next);
    tdm__ksnap_free(&src->snaps);
    tdm__free(src->csv_cols);
    tdm__free(src->key_idx);
    for (int i = 0; i < src->n_rpos; i++)
        tdm__free(src->rpos[i].topic);
    tdm__free(src->rpos);
    for (int i = 0; i < KS_CK_KEEP; i++)
        tdm__free(src->ck[i].next);
    for (int i = 0; i < src->n_glob; i++)
        tdm__free(src->glob[i].topic);
    tdm__free(src->glob);
    if (src->inb)
        tdm__batch_destroy(src->inb);
    tdm__free(src->in_off);
    tdm__kguard_destroy(&src->guard);
    tdm__free(src);
}

/* Subscribes to the comma-separated topic list or the pattern. */
static tdm_err subscribe(tdm__source *src, char *errbuf, size_t errbuf_size)
{
    const char *spec = src->conf.kafka_pattern ? src->conf.kafka_pattern
                                               : src->conf.kafka_topics;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
    rd_kafka_resp_err_t e;
    const char *p = spec;
    char name[512];

    if (!l)
        return TDM_ERR_NOMEM;
    const char *q;
    size_t k;
    while (next_topic(&p, src->conf.kafka_pattern != NULL, &q, &k)) {
        if (k > 0 && k < sizeof name) {
            memcpy(name, q, k);
            name[k] = '\0';
            rd_kafka_topic_partition_list_add(l, name, RD_KAFKA_PARTITION_UA);
        }
    }
    if (l->cnt == 0) {
        rd_kafka_topic_partition_list_destroy(l);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "topics must name at least one topic");
    }
    e = rd_kafka_subscribe(src->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot subscribe to '%s': %s", spec,
                         rd_kafka_err2str(e));
    return TDM_OK;
}

/* A task job's task count: the partitions of its first topic (tasks
 * need co-partitioned topics, docs/scale-out.md). */
static int task_count(const tdm__source *src)
{
    int n = 0;
    for (int i = 0; i < src->n_glob; i++)
        n += strcmp(src->glob[i].topic, src->glob[0].topic) == 0;
    return n;
}

/* Opens the repartition path: the job key's field names (comma-separated
 * repartition_key) to schema indices, then the shuffle. */
static tdm_err open_shuffle(tdm__source *src, int index, int count,
                            char *errbuf, size_t errbuf_size)
{
    const tdm__source_conf *c = &src->conf;
    const char *p = c->repartition_key;
    tdm__kshuffle_conf sc;
    char name[256];
    tdm_err err;

    src->key_idx = tdm__calloc((size_t)c->schema->n + 1, sizeof(int));
    if (!src->key_idx)
        return TDM_ERR_NOMEM;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *q = p;
        size_t k = n;
        int f;
        while (k > 0 && *q == ' ')
            q++, k--;
        while (k > 0 && q[k - 1] == ' ')
            k--;
        if (k >= sizeof name)
            k = sizeof name - 1;
        memcpy(name, q, k);
        name[k] = '\0';
        f = tdm__schema_find(c->schema, name);
        if (f < 0 || src->n_key >= c->schema->n)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "repartition key '%s' is not a field of the "
                             "schema",
                             name);
        src->key_idx[src->n_key++] = f;
        p += n;
        if (*p == ',')
            p++;
    }
    if (src->n_key == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "repartition key must name a field");
    memset(&sc, 0, sizeof sc);
    sc.brokers = c->kafka_brokers;
    sc.group = c->kafka_group;
    sc.props = c->kafka_props;
    sc.n_props = c->kafka_n_props;
    sc.schema = c->schema;
    sc.key_idx = src->key_idx;
    sc.n_key = src->n_key;
    sc.log = c->log;
    sc.log_ud = c->log_ud;
    sc.strategy = c->repartition_strategy;
    sc.writers_expected = c->repartition_writers;
    sc.writer_timeout = c->repartition_writer_timeout;
    sc.tasked = c->kafka_tasked;
    sc.task = c->kafka_task;
    sc.tasks = c->kafka_tasked ? task_count(src) : 0;
    sc.start_file = c->repartition_start_file;
    sc.start_changelog = c->repartition_start_changelog;
    err = tdm__kshuffle_open(&sc, index, count, &src->sh, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    /* A task's inputs are its from the start (static assignment). */
    for (int i = 0; i < src->n_parts && src->fixed && err == TDM_OK; i++)
        err = tdm__kshuffle_input_assigned(src->sh, src->parts[i]->local);
    src->inb = tdm__batch_new(c->schema, KS_SHUFFLE_BATCH);
    src->in_off = tdm__malloc(KS_SHUFFLE_BATCH * sizeof *src->in_off);
    return err != TDM_OK             ? err
           : src->inb && src->in_off ? TDM_OK
                                     : TDM_ERR_NOMEM;
}

/* Starts the broker guard (kafka_guard.c) of "brokers.timeout" and
 * lets librdkafka's errors reach it. */
static tdm_err start_guard(tdm__source *src, const tdm__source_conf *conf)
{
    const char *brokers = conf->kafka_brokers;

    for (int i = 0; !brokers && i < conf->kafka_n_props; i++)
        if (!strcmp(conf->kafka_props[2 * i], "bootstrap.servers"))
            brokers = conf->kafka_props[2 * i + 1];
    src->log.guard = &src->guard;
    return tdm__kguard_init(&src->guard, conf->kafka_brokers_timeout, brokers);
}

/* Why the last poll failed (connect.h, version 5). */
static const char *ks_poll_error(tdm__source *src)
{
    return src->poll_err;
}

/* Opens subtask @p index's consumer (see connect.h).  TDM_OK,
 * TDM_ERR_INVAL (bad configuration or kafka.* property, named),
 * TDM_ERR_IO (the client cannot be created or subscribe), NOMEM. */
static tdm_err ks_open(const tdm__source_conf *conf, int index, int count,
                       tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                       int *n_partitions, char *errbuf, size_t errbuf_size)
{
    const char *defaults[16];
    char group[300], why[512];
    rd_kafka_conf_t *kc = NULL;
    tdm__source *src;
    tdm_err err;
    int nd = 0;

    *out = NULL;
    *n_partitions = 0;
    if (!conf || !conf->schema)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "kafka source needs a schema");
    if (!conf->kafka_topics == !conf->kafka_pattern)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "set exactly one of topics and topic_pattern");
    src = tdm__calloc(1, sizeof *src);
    if (!src)
        return TDM_ERR_NOMEM;
    src->conf = *conf;
    src->pconf = *conf;
    if (conf->ts_from_message)
        src->pconf.time_mode = TDM__TIME_INGESTION;
    src->index = index;
    src->dead = dead;
    src->dead_ud = dead_ud;
    src->last_top = TDM_TIME_MIN;
    src->replay_start = src->replay_last = TDM_TIME_MIN;
    src->log.fn = conf->log;
    src->log.ud = conf->log_ud;
    snprintf(src->log.prefix, sizeof src->log.prefix, "kafka source '%s'[%d]",
             conf->name ? conf->name : "?", index);

    /* CSV columns: schema order without the key field (the key comes
     * from the message key) and the metadata fields. */
    src->csv_cols = tdm__malloc(((size_t)conf->schema->n + 1) * sizeof(int));
    if (!src->csv_cols) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    for (int f = 0; f < conf->schema->n; f++) {
        bool meta = false;
        for (int k = 0; k < TDM__KMETA_N; k++)
            meta = meta || conf->kafka_meta[k] == f + 1;
        src->has_meta = src->has_meta || meta;
        if (f != conf->key_field && !meta)
            src->csv_cols[src->n_csv_cols++] = f;
    }

    if (conf->kafka_group && conf->kafka_group[0])
        snprintf(group, sizeof group, "%s", conf->kafka_group);
    else
        snprintf(group, sizeof group, "tidemark-%s",
                 conf->name ? conf->name : "source");
    defaults[nd++] = "group.id";
    defaults[nd++] = group;
    defaults[nd++] = "enable.auto.commit";
    defaults[nd++] = "false";
    defaults[nd++] = "enable.auto.offset.store";
    defaults[nd++] = "false";
    defaults[nd++] = "partition.assignment.strategy";
    defaults[nd++] = "cooperative-sticky";
    defaults[nd++] = "enable.partition.eof";
    defaults[nd++] = conf->kafka_stop_at_end ? "true" : "false";
    defaults[nd++] = "auto.offset.reset";
    defaults[nd++] =
        conf->kafka_start == TDM__KSTART_LATEST ? "latest" : "earliest";
    defaults[nd++] = NULL;
    err = start_guard(src, conf);
    if (err != TDM_OK)
        goto fail;
    err = tdm__kafka_conf(conf->kafka_brokers, conf->kafka_props,
                          conf->kafka_n_props, defaults, src, &kc, errbuf,
                          errbuf_size);
    if (err != TDM_OK)
        goto fail;
    rd_kafka_conf_set_rebalance_cb(kc, rebalance_cb);
    src->coop_conf = tdm__kafka_conf_coop(kc);
    src->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, why, sizeof why);
    if (!src->rk) {
        rd_kafka_conf_destroy(kc);
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                        "cannot create the kafka consumer: %s", why);
        goto fail;
    }
    rd_kafka_poll_set_consumer(src->rk);
    bool repart = conf->repartition_key && conf->repartition_key[0];
    if (repart && conf->checkpointing && !conf->kafka_tasked) {
        /* R-KSRC-1: a checkpointed repartition runs as tasks only. */
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                        "repartition (key '%s') with checkpoints needs "
                        "scale_out: tasks (docs/scale-out.md)",
                        conf->repartition_key);
        goto fail;
    }
    if (conf->checkpointing)
        err = fixed_setup(src, index, count, errbuf, errbuf_size);
    else
        err = subscribe(src, errbuf, errbuf_size);
    if (err == TDM_OK && repart)
        err = open_shuffle(src, index, count, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto fail;
    *n_partitions = src->sh               ? tdm__kshuffle_n_partitions(src->sh)
                    : conf->checkpointing ? src->n_parts
                                          : 0;
    *out = src;
    return TDM_OK;
fail:
    ks_close(src);
    return err;
}

static int ks_n_partitions(tdm__source *src)
{
    if (src->sh)
        return tdm__kshuffle_n_partitions(src->sh);
    return src->n_parts;
}

static const char *ks_partition_name(tdm__source *src, int p)
{
    if (src->sh)
        return tdm__kshuffle_partition_name(src->sh, p);
    return p >= 0 && p < src->n_parts ? src->parts[p]->name : "?";
}

static tdm_time_ms ks_partition_floor(tdm__source *src, int p)
{
    if (src->sh)
        return tdm__kshuffle_partition_floor(src->sh, p);
    return p >= 0 && p < src->n_parts ? src->parts[p]->floor : TDM_TIME_MIN;
}

/* Alignment: pauses or resumes one partition (exact in librdkafka: no
 * prefetched record of a paused partition is delivered).  Partitions of
 * the repartition topic are not paused. */
static void ks_pause(tdm__source *src, int p, int paused)
{
    kpart *kp;

    if (src->sh || p < 0 || p >= src->n_parts)
        return;
    kp = src->parts[p];
    kp->align_paused = paused != 0;
    if (!kp->live || kp->ended || kp->waiting || kp->paused == (paused != 0))
        return;
    set_paused(src, kp, paused != 0);
}

/* Remembers every partition's position under watermark @p wm. */
static void ks_mark(tdm__source *src, tdm_time_ms wm,
                    const tdm_time_ms *horizon, int n)
{
    if (src->fixed)
        return; /* positions come from checkpoints */
    if (src->sh) {
        tdm__kshuffle_mark(src->sh, wm, horizon, n);
        return;
    }
    if (n > src->n_parts)
        n = src->n_parts;
    for (int p = 0; p < n; p++)
        src->mark_next[p] = src->parts[p]->live || src->parts[p]->limbo
                                ? src->parts[p]->next
                                : -1;
    /* Out of memory: no snapshot, commits lag. */
    (void)tdm__ksnap_push(&src->snaps, wm, src->mark_next, horizon, n);
}

/* Commits what (processed, done) allows (see connect.h). */
static tdm_err ks_commit(tdm__source *src, tdm_time_ms processed,
                         tdm_time_ms done, tdm_time_ms top)
{
    if (src->sh && !src->fixed) {
        tdm_err err = tdm__kshuffle_commit(src->sh, processed, done);
        tdm_err ierr = commit_input(src, false);
        return err != TDM_OK ? err : ierr;
    }
    if (src->fixed) {
        /* Offsets are committed when a checkpoint is durable
         * (ks_checkpoint); the final commit after the final checkpoint
         * commits the final snapshot's. */
        if (processed == TDM_TIME_MAX)
            fixed_done(src, 0);
        return TDM_OK;
    }
    src->have_commit = true;
    src->last_proc = processed;
    src->last_done = done;
    if (top != TDM_TIME_MIN)
        src->last_top = top;
    if (src->hold_commits)
        return TDM_OK;
    return commit_parts(src, false, processed, done, top);
}

/* What this member may repeat (see connect.h).  Not on the repartition
 * path (docs/kafka.md). */
static void ks_replayed(tdm__source *src, tdm_time_ms *start_le,
                        tdm_time_ms *last_le)
{
    *start_le = src->sh ? TDM_TIME_MIN : src->replay_start;
    *last_le = src->sh ? TDM_TIME_MIN : src->replay_last;
}

/* See connect.h.  Not on the repartition path. */
static int ks_fenced(tdm__source *src, int p)
{
    return !src->sh && p >= 0 && p < src->n_parts &&
           src->parts[p]->revoked_live && !src->parts[p]->ended;
}

static int ks_partition_watermark(tdm__source *src, int p, tdm_time_ms *wm,
                                  int *idle)
{
    if (!src->sh)
        return 0;
    return tdm__kshuffle_partition_watermark(src->sh, p, wm, idle);
}

/* ---- Checkpoints ---- */

/* The global index of (topic, part) under the static assignment, -1
 * if the topics have no such partition now. */
static int64_t glob_index(const tdm__source *src, const char *topic,
                          int32_t part)
{
    for (int i = 0; i < src->n_glob; i++)
        if (src->glob[i].part == part && strcmp(src->glob[i].topic, topic) == 0)
            return i;
    return -1;
}

/* Encodes every assigned partition's position (docs/checkpoints.md,
 * "Kafka source"). */
static tdm_err ks_snapshot(tdm__source *src, struct tdm__enc *e, char *errbuf,
                           size_t errbuf_size)
{
    uint64_t n = 0;

    if (src->sh && !src->fixed)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "source '%s': a repartitioned Kafka source has no "
                         "checkpoint position outside scale_out: tasks",
                         src->conf.name ? src->conf.name : "?");
    if (src->fixed_pending) {
        /* A barrier before the first poll: the start offsets first. */
        tdm_err err = fixed_assign(src);
        if (err != TDM_OK)
            return tdm__errf(errbuf, errbuf_size, err,
                             "source '%s': the "
                             "partitions could not be assigned",
                             src->conf.name ? src->conf.name : "?");
    }
    for (int i = 0; i < src->n_parts; i++)
        if (src->parts[i]->live && src->parts[i]->next >= 0)
            n++;
    tdm__enc_begin(e, TDM__SNAP_TAG_KAFKA);
    tdm__enc_uvar(e, src->fixed ? KS_SNAP_VERSION_FIXED
                                : TDM__SNAP_SOURCE_VERSION);
    tdm__enc_uvar(e, n);
    for (int i = 0; i < src->n_parts; i++) {
        const kpart *kp = src->parts[i];
        if (!kp->live || kp->next < 0)
            continue;
        tdm__enc_str(e, kp->topic);
        tdm__enc_svar(e, kp->part);
        tdm__enc_uvar(e, (uint64_t)kp->next);
        tdm__enc_u8(e, kp->ended ? 1 : 0);
        if (src->fixed)
            tdm__enc_uvar(e, (uint64_t)glob_index(src, kp->topic, kp->part));
    }
    if (src->sh) {
        /* A task's reader, after its writer's rows are durable: a
         * section inside this one (the runtime keeps one section per
         * connector). */
        tdm_err err = tdm__kshuffle_snapshot(src->sh, e, errbuf, errbuf_size);
        if (err != TDM_OK)
            return err;
    }
    tdm__enc_end(e);
    if (src->fixed && !e->oom)
        fixed_keep(src);
    return e->oom ? TDM_ERR_NOMEM : TDM_OK;
}

/* Checkpoint @p id's barrier (the next snapshot is its) or durability
 * (its positions go to the group, for monitoring). */
static void ks_checkpoint(tdm__source *src, uint64_t id, int complete)
{
    if (!src->fixed || id == 0)
        return;
    if (complete)
        fixed_done(src, id);
    else
        src->ck_id = id;
}

/* A task's repartition reader: the section nested in the Kafka one
 * (ks_snapshot).  TDM_OK, or an error named in errbuf. */
static tdm_err restore_shuffle(tdm__source *src, tdm__dec *body, char *errbuf,
                               size_t errbuf_size)
{
    uint64_t tag;
    tdm__dec sub;
    memset(&sub, 0, sizeof sub);
    if (tdm__dec_section(body, &tag, &sub) != TDM_OK)
        return tdm__conn_snap_error(&src->conf, body, errbuf, errbuf_size);
    if (tag != TDM__SNAP_TAG_KSHUFFLE) {
        tdm__dec_fail(body, "not a repartition reader section");
        return tdm__conn_snap_error(&src->conf, body, errbuf, errbuf_size);
    }
    tdm_err err = tdm__kshuffle_restore(src->sh, &sub, errbuf, errbuf_size);
    if (err == TDM_ERR_PARSE)
        err = tdm__conn_snap_error(&src->conf, &sub, errbuf, errbuf_size);
    return err;
}

/* Keeps the merged positions of the old subtasks for later assignments
 * (called before the first poll; a partition may appear once). */
static tdm_err ks_restore(tdm__source *src, struct tdm__dec *d, char *errbuf,
                          size_t errbuf_size)
{
    tdm__dec body;
    char *topic = NULL;
    tdm_err err = TDM_OK;

    memset(&body, 0, sizeof body);
    if (src->sh && !src->fixed)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_UNSUPPORTED,
                         "source '%s': a repartitioned Kafka source cannot "
                         "be restored from a checkpoint outside scale_out: "
                         "tasks",
                         src->conf.name ? src->conf.name : "?");
    while (tdm__dec_left(d) > 0) {
        uint64_t tag, version, n;
        if (tdm__dec_section(d, &tag, &body) != TDM_OK) {
            err = tdm__conn_snap_error(&src->conf, d, errbuf, errbuf_size);
            goto out;
        }
        if (tag != TDM__SNAP_TAG_KAFKA)
            tdm__dec_fail(&body, "not a Kafka source section");
        tdm__dec_uvar(&body, &version);
        if (!body.err && version != TDM__SNAP_SOURCE_VERSION &&
            version != KS_SNAP_VERSION_FIXED)
            tdm__dec_fail(&body, "unknown Kafka source version");
        tdm__dec_uvar(&body, &n);
        if (!body.err && n > tdm__dec_left(&body))
            tdm__dec_fail(&body, "too many partitions");
        for (uint64_t k = 0; !body.err && k < n; k++) {
            int64_t part;
            uint64_t off;
            uint8_t ended;
            uint64_t g = 0;
            tdm__dec_str(&body, &topic);
            tdm__dec_svar(&body, &part);
            tdm__dec_uvar(&body, &off);
            tdm__dec_u8(&body, &ended);
            if (version == KS_SNAP_VERSION_FIXED)
                tdm__dec_uvar(&body, &g);
            if (body.err)
                break;
            if (part < 0 || part > INT32_MAX || off > INT64_MAX || ended > 1 ||
                !topic[0]) {
                tdm__dec_fail(&body, "bad partition entry");
                break;
            }
            /* The static assignment deals partitions (and the readers'
             * splits) by global index: the checkpoint's must be today's,
             * or a split's watermark state would land on another
             * partition. */
            if (src->fixed && version == KS_SNAP_VERSION_FIXED &&
                glob_index(src, topic, (int32_t)part) != (int64_t)g) {
                err =
                    tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                              "source '%s': checkpoint: %s[%lld] was "
                              "partition %llu of the topics, now %lld: "
                              "their partitions changed; restore refused "
                              "(run with --from-scratch)",
                              src->conf.name ? src->conf.name : "?", topic,
                              (long long)part, (unsigned long long)g,
                              (long long)glob_index(src, topic, (int32_t)part));
                goto out;
            }
            if (src->fixed && version != KS_SNAP_VERSION_FIXED) {
                err = tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                                "source '%s': checkpoint: the positions "
                                "were not taken with checkpoints on",
                                src->conf.name ? src->conf.name : "?");
                goto out;
            }
            if (restored_pos(src, topic, (int32_t)part)) {
                tdm__dec_fail(&body, "partition listed twice");
                break;
            }
            ks_pos *a =
                tdm__realloc(src->rpos, (size_t)(src->n_rpos + 1) * sizeof *a);
            if (!a) {
                err = TDM_ERR_NOMEM;
                goto out;
            }
            src->rpos = a;
            a[src->n_rpos].topic = topic;
            a[src->n_rpos].part = (int32_t)part;
            a[src->n_rpos].offset = (int64_t)off;
            a[src->n_rpos].ended = ended != 0;
            src->n_rpos++;
            topic = NULL;
        }
        if (!body.err && src->sh && tdm__dec_left(&body) > 0 &&
            (err = restore_shuffle(src, &body, errbuf, errbuf_size)) != TDM_OK)
            goto out;
        if (body.err) {
            err = tdm__conn_snap_error(&src->conf, &body, errbuf, errbuf_size);
            goto out;
        }
    }
    if (d->err)
        err = tdm__conn_snap_error(&src->conf, d, errbuf, errbuf_size);
out:
    tdm__free(topic);
    return err;
}

const tdm__source_vtab tdm__kafka_source = {
    .version = 5,
    .open = ks_open,
    .poll = ks_poll,
    .close = ks_close,
    .n_partitions = ks_n_partitions,
    .partition_name = ks_partition_name,
    .partition_floor = ks_partition_floor,
    .pause = ks_pause,
    .mark = ks_mark,
    .commit = ks_commit,
    .partition_watermark = ks_partition_watermark,
    .replayed = ks_replayed,
    .fenced = ks_fenced,
    .snapshot = ks_snapshot,
    .restore = ks_restore,
    .checkpoint = ks_checkpoint,
    .poll_error = ks_poll_error,
};
