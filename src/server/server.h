/* SPDX-License-Identifier: MIT */
/* server.h - internals of the embedded HTTP server (http.c: the
 * libmicrohttpd daemon; router.c: method + path -> route; rest.c and
 * prom.c: JSON and Prometheus renderings of tdm_metrics snapshots;
 * history.c: the sampler that keeps the last minutes of watermarks) and
 * of the diagnosis (diagnose.c: findings in plain words, the partition
 * holding the watermark back, "why has this window not fired").
 * JSON is built with jansson.  Nothing here is public.
 */
#ifndef TDM_SERVER_H
#define TDM_SERVER_H

#include <jansson.h>

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
    TDM__R_WINDOW,            /* GET /jobs/:id/windows?vertex=&key=&start=&end= */
    TDM__R_PROMETHEUS         /* GET /metrics */
} tdm__route_id;

/* A parsed request target.  Strings point into the route's own buffer. */
typedef struct tdm__route {
    tdm__route_id id;
    char job[128];     /* :id, percent-decoded */
    char vertex[128];  /* :vid, percent-decoded */
} tdm__route;

/* Parses @p method and @p url (path without the query string, as
 * libmicrohttpd hands it) into *out.  Never fails: anything it does not
 * know is TDM__R_NOT_FOUND, TDM__R_BAD_REQUEST or TDM__R_METHOD.  Total
 * over arbitrary bytes (fuzzed by tests/fuzz/fuzz_router.c). */
void tdm__route_parse(const char *method, const char *url, tdm__route *out);

/* ---- History (history.c) ---- */

/* Samples of every vertex's minimum output watermark and maximum lag,
 * one per second of processing time, for the last 10 minutes.  Filled by
 * the server's sampler thread; read under its lock. */
typedef struct tdm__history tdm__history;

/* ---- Diagnosis (diagnose.c) ---- */

/* The partition (or channel) holding the job's watermark back: the
 * active, unfinished source partition whose watermark is the lowest of
 * all and below the next lowest source partition.  found = 0 when no
 * partition stands out (all equal, all idle, nothing read yet). */
typedef struct tdm__culprit {
    int found;
    const char *vertex;      /* source vertex (points into the snapshot) */
    int subtask;
    int partition;
    const char *name;        /* partition name (into the snapshot) */
    tdm_time_ms watermark;   /* its watermark */
    tdm_time_ms next;        /* the next lowest partition's watermark */
    int64_t behind_ms;       /* next - watermark */
    int64_t last_record_age_ms; /* -1 unknown */
} tdm__culprit;

/* Finds the culprit in @p m (see tdm__culprit). */
void tdm__find_culprit(const tdm_metrics *m, tdm__culprit *out);

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
json_t *tdm__explain_window(tdm_job *job, const char *vertex,
                            const char *key, tdm_time_ms start,
                            tdm_time_ms end, int *http_status,
                            char *errbuf, size_t errbuf_size);

/* ---- The web page (generated from web/index.html at build time) ---- */
extern const unsigned char tdm__web_index[];
extern const size_t tdm__web_index_len;

#endif /* TDM_SERVER_H */
