/* SPDX-License-Identifier: MIT */
/* server.h - internals of the embedded HTTP server (http.c: the
 * libmicrohttpd daemon; router.c: method + path -> route; rest.c and
 * prom.c: JSON and Prometheus renderings of tdm_metrics snapshots;
 * history.c: the sampler that keeps the last minutes of watermarks;
 * host.c and deadline.c: the Host check and the header deadline) and
 * of the diagnosis (view.c: the partition holding the watermark back,
 * over a sorted view of a snapshot declared in view.h; diagnose.c:
 * findings in plain words; explain.c: "why has this window not fired";
 * words.c: their words for times, durations and counts).
 * The server is a client of tidemark.h (plus core.h for allocation).
 * JSON is built with jansson.  Nothing here is public.
 */
#ifndef TDM_SERVER_H
#define TDM_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <sys/socket.h>

#include "tidemark.h"

/* ---- Routing (router.c) ---- */

typedef enum tdm__route_id {
    TDM__R_NOT_FOUND = 0,
    TDM__R_BAD_REQUEST,       /* malformed path or query */
    TDM__R_METHOD,            /* not GET/HEAD: 405 */
    TDM__R_PAGE,              /* GET / and /index.html */
    TDM__R_JOBS,              /* GET /jobs */
    TDM__R_JOB,               /* GET /jobs/:id */
    TDM__R_VERTEX_WATERMARKS, /* GET /jobs/:id/vertices/:vid/watermarks */
    TDM__R_JOB_METRICS,       /* GET /jobs/:id/metrics[?get=a,b] */
    TDM__R_PARTITIONS,        /* GET /jobs/:id/partitions */
    TDM__R_HISTORY,           /* GET /jobs/:id/history */
    TDM__R_LATE,              /* GET /jobs/:id/late */
    TDM__R_DIAGNOSIS,         /* GET /jobs/:id/diagnosis */
    TDM__R_WINDOW,     /* GET /jobs/:id/windows?vertex=&key=&start=&end= */
    TDM__R_PROMETHEUS, /* GET /metrics */
    TDM__R_TASKS,      /* GET /tasks */
    TDM__R_CONFIG      /* GET, PATCH /jobs/:id/config */
} tdm__route_id;

/* A parsed request target.  Strings point into the route's own buffer. */
typedef struct tdm__route {
    tdm__route_id id;
    char job[128];    /* :id, percent-decoded */
    char vertex[128]; /* :vid, percent-decoded */
    int patch;        /* the method was PATCH (TDM__R_CONFIG only) */
    int patchable;    /* the path takes PATCH too (405's Allow) */
} tdm__route;

/* Parses @p method and @p url (path without the query string, as
 * libmicrohttpd hands it) into *out.  Never fails: anything it does not
 * know is TDM__R_NOT_FOUND, TDM__R_BAD_REQUEST or TDM__R_METHOD.  Total
 * over arbitrary bytes (fuzzed by tests/fuzz/fuzz_router.c). */
void tdm__route_parse(const char *method, const char *url, tdm__route *out);

/* Looks parameter @p name up in @p query (the text after '?', without
 * it; may be NULL) and percent-decodes its value ('+' is a space) into
 * @p out (NUL-terminated, @p out_size bytes).  The first occurrence
 * wins.  Returns 1 when found, 0 when absent, -1 when that value is
 * malformed (a bad %-escape, a decoded NUL, longer than out_size - 1,
 * invalid UTF-8).
 * Total over arbitrary bytes (fuzzed with tdm__route_parse). */
int tdm__query_get(const char *query, const char *name, char *out,
                   size_t out_size);

/* ---- What is refused before routing (host.c, deadline.c) ---- */

/* Which Host headers a server answers (host.c has the table): built
 * from the bound address and http.allowed_hosts. */
typedef struct tdm__host_rule {
    int family;           /* AF_INET or AF_INET6: the bound address */
    unsigned char ip[16]; /* the bound address (4 bytes for IPv4) */
    int any_ip;           /* bound to 0.0.0.0 or ::: any IP literal */
    int localhost;        /* loopback or wildcard: "localhost" too */
    const char *allow;    /* http.allowed_hosts, borrowed; may be NULL */
} tdm__host_rule;

/* Fills *r for a server bound to @p ss (AF_INET or AF_INET6) that also
 * answers the comma-separated names of @p allow (borrowed for the rule's
 * life; NULL or "" for none, "*" for any name). */
void tdm__host_rule_init(tdm__host_rule *r, const struct sockaddr_storage *ss,
                         const char *allow);
/* 1 when a request whose Host header is @p host (NULL: none) is
 * answered, 0 when it gets 403.  Any port is accepted.  Total over
 * arbitrary bytes (fuzzed with tdm__route_parse). */
int tdm__host_allowed(const tdm__host_rule *r, const char *host);

/* The header deadline (deadline.c): a watcher thread that cuts the
 * connections whose request line and headers do not arrive within a
 * limit of their opening or of their previous reply. */
typedef struct tdm__deadline tdm__deadline;
typedef struct tdm__deadline_conn tdm__deadline_conn;

/* Creates the watch with a limit of @p limit_ms and starts its thread.
 * TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__deadline_new(int64_t limit_ms, tdm__deadline **out);
/* Stops the thread and frees the watch, closing what is still watched
 * (call it after the daemon stopped).  NULL is fine. */
void tdm__deadline_free(tdm__deadline *dl);
/* Watches the connection on socket @p fd (borrowed: the watch keeps a
 * dup of it) from now on.  NULL when that is not possible (no memory,
 * no descriptor): the connection is then shut down at once.
 * @thread any (libmicrohttpd's, when a connection opens). */
tdm__deadline_conn *tdm__deadline_open(tdm__deadline *dl, int fd);
/* The request of @p c arrived: no deadline until its reply ends.  NULL
 * is fine (as for the next two). */
void tdm__deadline_met(tdm__deadline *dl, tdm__deadline_conn *c);
/* The reply of @p c ended: the next request is due within the limit. */
void tdm__deadline_rearm(tdm__deadline *dl, tdm__deadline_conn *c);
/* The connection of @p c closed: stops watching it, closes the dup and
 * frees @p c. */
void tdm__deadline_close(tdm__deadline *dl, tdm__deadline_conn *c);

/* ---- History (history.c) ---- */

/* Ends a helper thread of the server (the history's sampler, the
 * deadline's watcher) that waits on @p cv under @p mu until *stop: sets
 * *stop under the lock, wakes the thread and joins @p th. */
void tdm__thread_stop(pthread_mutex_t *mu, pthread_cond_t *cv, int *stop,
                      pthread_t th);

/* Samples of every vertex's minimum output watermark and maximum lag,
 * one per second of processing time, for the last 10 minutes.  Filled by
 * the server's sampler thread; read under its lock. */
typedef struct tdm__history tdm__history;

/* Creates the history of @p job (borrowed until tdm__history_free): no
 * samples, no thread.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__history_new(tdm_job *job, tdm__history **out);
/* Starts the sampler thread: a snapshot every @p interval_ms of real
 * time (1000 in the server), the first one at once.  TDM_OK;
 * TDM_ERR_STATE when already started; TDM_ERR_NOMEM (no thread). */
tdm_err tdm__history_start(tdm__history *h, int64_t interval_ms);
/* Stops the sampler (promptly: it waits on a condition variable, not in
 * a sleep) and frees the history.  NULL is fine. */
void tdm__history_free(tdm__history *h);
/* Adds one sample taken from snapshot @p m at its processing time
 * (tdm_metrics_time): per vertex the minimum output watermark and the
 * maximum lag over its subtasks, and the culprit (tdm__find_culprit),
 * remembering since when it has been the same partition.  A snapshot
 * without values (the job has not run), or not later than the last
 * sample (a finished job's final one), adds nothing.  At most 600
 * samples are kept; the oldest goes first.  Called by the sampler;
 * tests call it directly.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__history_add(tdm__history *h, const tdm_metrics *m);
/* Number of samples kept now. */
size_t tdm__history_count(const tdm__history *h);
/* Since when partition (@p vertex, @p subtask, @p partition) has been
 * the culprit without interruption: 1 with *since set to the processing
 * time of the first sample of the current run of samples that named it,
 * when the latest sample named it; 0 otherwise (no sample yet, another
 * partition or none).  @p h may be NULL (returns 0). */
int tdm__history_culprit_since(const tdm__history *h, const char *vertex,
                               int subtask, int partition, tdm_time_ms *since);
/* Since when vertex @p vertex's minimum output watermark has been
 * @p wm without interruption: 1 with *since set to the processing time
 * of the oldest of the newest samples that all show it; 0 when the
 * newest sample does not (or there is none).  @p h may be NULL. */
int tdm__history_flat_since(const tdm__history *h, const char *vertex,
                            tdm_time_ms wm, tdm_time_ms *since);
/* The samples as JSON: [{"t": ms, "vertices": {"<name>": {"watermark":
 * ms | null | "end", "lag": ms | null}}}], oldest first.  New
 * reference; NULL on NOMEM. */
json_t *tdm__history_json(const tdm__history *h);

/* ---- Rendering (rest.c, prom.c) ---- */

/* What the server answers: a status, a static content type and a body
 * allocated with tdm__malloc (the caller frees it with tdm__free). */
typedef struct tdm__reply {
    int status;
    const char *type;
    const char *allow; /* a 405's Allow header (NULL: "GET, HEAD") */
    char *body;
    size_t len;
} tdm__reply;

/* What every route needs of one served job: the job, its name (the job
 * id) and the history (may be NULL); for a task's job (a server of a
 * task host), the task number (-1 otherwise), the owner epoch its host
 * took and when it started here (epoch ms). */
typedef struct tdm__rest_ctx {
    tdm_job *job;
    const char *name;
    tdm__history *hist;
    int task;
    int64_t epoch;
    int64_t since_ms;
} tdm__rest_ctx;

/* The jobs a server serves at the moment of a request: one for a job's
 * server, the running tasks' for a task host's (@p tasks set; /tasks
 * answers only then).  Borrowed for the request. */
typedef struct tdm__rest_set {
    const tdm__rest_ctx *jobs;
    size_t n;
    int tasks;
    const char *host; /* a task host's job name, for its messages */
    /* A task host's tasks being restored (no job yet), in task order. */
    const tdm_task_restore *restoring;
    size_t n_restoring;
} tdm__rest_set;

/* Answers route @p r (any id but TDM__R_PAGE) over the served jobs @p set
 * with query string @p query (may be NULL) into *out: JSON for every
 * route but TDM__R_PROMETHEUS, errors as {"error": "..."} with 400, 404,
 * 405, 500 or 503.  *out is always filled (body NULL only when even the
 * error could not be allocated: the caller then answers 500 without a
 * body). */
void tdm__rest_reply(const tdm__rest_set *set, const tdm__route *r,
                     const char *query, tdm__reply *out);
/* An error reply {"error": @p msg} with @p status. */
void tdm__rest_error(tdm__reply *out, int status, const char *msg);
/* A JSON reply of @p j (taken; NULL: 500 out of memory). */
void tdm__rest_reply_json(tdm__reply *out, int status, json_t *j);
/* The served job named @p id, or NULL with a 404 in *out. */
const tdm__rest_ctx *tdm__rest_find_job(const tdm__rest_set *set,
                                        const char *id, tdm__reply *out);

/* ---- Live settings (rest_config.c) ---- */

/* GET /jobs/:id/config: every live setting with its value in force,
 * origin, last change and whether it is applied, then the last changes
 * (docs/rest-api.md). */
void tdm__rest_config_get(const tdm__rest_ctx *ctx, tdm__reply *out);
/* PATCH /jobs/:id/config with the JSON object @p body (@p len bytes) of
 * dotted keys: every key checked first, then all applied with origin
 * @p origin (the X-Tidemark-Origin header; NULL: "rest"); 200 with the
 * GET answer, 400 for a bad body, key or value, 409 for a key that
 * cannot change while the job runs or a job not running. */
void tdm__rest_config_patch(const tdm__rest_ctx *ctx, const char *body,
                            size_t len, const char *origin, tdm__reply *out);
/* One job's snapshot for tdm__prom_render: its name (the job_name
 * label), its task number (a task label; -1: none) and how many
 * partitions per source subtask get partition series
 * (http.prometheus.max_partitions). */
typedef struct tdm__prom_job {
    const tdm_metrics *m;
    const char *name;
    int task;
    int64_t max_partitions;
} tdm__prom_job;

/* Renders the snapshots of @p n jobs as Prometheus text format 0.0.4
 * into *out and *len (tdm__malloc'd): each family's HELP and TYPE once,
 * then its samples job by job.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__prom_render(const tdm__prom_job *jobs, size_t n, char **out,
                         size_t *len);
/* Parses a time for the windows route: ISO-8601 UTC
 * ("2026-12-02T10:00:00Z"; fraction of 1-9 digits and "Z" optional)
 * or epoch ms (an optionally negative integer).  Returns 1 and sets
 * *out, or 0. */
int tdm__rest_parse_time(const char *text, tdm_time_ms *out);

/* ---- The culprit (view.c) ---- */

/* The partition (or channel) holding the job's watermark back: the
 * active, unfinished source partition whose watermark is the lowest of
 * all and below the next lowest source partition.  found = 0 when no
 * partition stands out (all equal, all idle, nothing read yet). */
typedef struct tdm__culprit {
    int found;
    const char *vertex; /* source vertex (points into the snapshot) */
    int subtask;
    int partition;
    const char *name;           /* partition name (into the snapshot) */
    tdm_time_ms watermark;      /* its watermark */
    tdm_time_ms next;           /* the next lowest partition's watermark */
    int64_t behind_ms;          /* next - watermark */
    int64_t last_record_age_ms; /* -1 unknown */
} tdm__culprit;

/* Finds the culprit in @p m (see tdm__culprit). */
void tdm__find_culprit(const tdm_metrics *m, tdm__culprit *out);

/* ---- Words for people (words.c) ---- */

/* Each formatter writes into @p buf (@p n bytes, truncated, always
 * NUL-terminated) and returns it. */

/* ISO-8601 UTC with milliseconds; "no watermark yet" for TDM_TIME_MIN
 * and "end of input" for TDM_TIME_MAX. */
const char *tdm__fmt_time(tdm_time_ms t, char *buf, size_t n);
/* A duration: "250ms", "2.5s", "42s", "4m12s", "1h5m", "3d4h". */
const char *tdm__fmt_dur(int64_t ms, char *buf, size_t n);
/* A count with thousands separators ("1,234,567"). */
const char *tdm__fmt_count(int64_t v, char *buf, size_t n);
/* A watermark as REST JSON: integer ms, null (none yet), "end".  New
 * reference; NULL on NOMEM. */
json_t *tdm__json_wm(tdm_time_ms t);
/* Appends a printf-formatted string (at most 1023 bytes) to @p arr;
 * sets *oom on a failed allocation (best effort: callers check *oom
 * once at the end). */
void tdm__json_add_str(json_t *arr, int *oom, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets @p key of @p obj to @p v (taken, may be NULL: the allocation
 * that failed), setting *oom on failure. */
void tdm__json_set(json_t *obj, const char *key, json_t *v, int *oom);

/* ---- Diagnosis (diagnose.c) and one window (explain.c) ---- */

/* The findings for @p job given snapshot @p m (and @p hist, may be NULL,
 * to say since when): a JSON object {"findings":[...]} with each finding
 * {"severity":"critical"|"warning"|"info", "code":"HELD_BACK_PARTITION",
 * "title": one sentence, "evidence":[strings], "fix": one or two
 * sentences, "vertex", "subtask", "partition" (when they apply)}, most
 * important first.  New reference owned by the caller; NULL on NOMEM. */
json_t *tdm__diagnose(tdm_job *job, const tdm_metrics *m,
                      const tdm__history *hist);

/* "Why has this window not fired?": asks tdm_job_window_status and
 * explains the answer: {"vertex","key","start","end","fired":bool,
 * "verdict": one sentence, "waiting_for": what must happen (null when
 * fired), "evidence":[strings], "status":{the tdm_window_status fields}}.
 * On a bad request (unknown vertex, bad key), NULL with a message in
 * errbuf; *http_status receives 400 or 404 (or 503 no answer in time). */
json_t *tdm__explain_window(tdm_job *job, const char *vertex, const char *key,
                            tdm_time_ms start, tdm_time_ms end,
                            int *http_status, char *errbuf, size_t errbuf_size);

/* ---- The web page (generated from web/index.html at build time) ---- */
extern const unsigned char tdm__web_index[];
extern const size_t tdm__web_index_len;

#endif /* TDM_SERVER_H */
