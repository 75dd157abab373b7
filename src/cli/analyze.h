/* SPDX-License-Identifier: MIT */
/* analyze.h - `tidemark analyze`: what its pieces share.  The scan
 * (analyze_scan.c) reads the input once, the way a `tidemark run` source
 * at parallelism 1 reads it, and measures out-of-orderness, gaps and
 * suspicious timestamps while keeping the first records as a sample; the
 * recommendations (analyze_reco.c) turn the measurements into settings;
 * the what-if (analyze_whatif.c) replays the sample through the engine
 * for each candidate setting; the report (analyze_report.c) and the plot
 * (analyze_svg.c) present the lot; the target (analyze_target.c) picks
 * the bound whose exact late count meets --target; the job
 * (analyze_job.c) fills the settings from a job file.  cmd_analyze.c
 * parses the command line.
 */
#ifndef TDM_ANALYZE_H
#define TDM_ANALYZE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tidemark.h"
#include "lag_hist.h"

/* tests/unit/test_analyze.c names the histograms as they were named while
 * the CLI borrowed the library's (core/hist.h). */
#define tdm__hist tdm__cli_hist
#define tdm__hist_init tdm__cli_hist_init
#define tdm__hist_fini tdm__cli_hist_fini
#define tdm__hist_quantile tdm__cli_hist_quantile

/* ---- Settings (the command line, checked) ---- */

enum { TDM__AN_TUMBLING = 0, TDM__AN_SLIDING, TDM__AN_SESSION };
/* --format (0: by the inputs' extension). */
enum { TDM__AN_FMT_JSON = 1, TDM__AN_FMT_CSV };

/* Partitions that get a lag histogram of their own (58 KB each); the
 * others keep counters and the maximum only. */
#define TDM__AN_PART_HISTS 256
/* Over-time slices: between TDM__AN_SLICES / 2 and TDM__AN_SLICES. */
#define TDM__AN_SLICES 40
/* The future-timestamp warning threshold: now + 1 h. */
#define TDM__AN_FUTURE_MS INT64_C(3600000)
/* The late fraction accepted when --target is not given (P99). */
#define TDM__AN_TARGET_DEFAULT 0.01
/* Hours of event time (UTC) with a lag histogram of their own (58 KB
 * each): a week; records of further hours are counted only. */
#define TDM__AN_HOURS 168
#define TDM__AN_HOUR_MS INT64_C(3600000)

typedef struct tdm__an_opts {
    const char **inputs; /* files, globs or "-" (stdin) */
    int n_inputs;
    const char *ts_field;        /* required */
    const char *partition_field; /* NULL: one partition per file */
    const char *arrival_field;   /* NULL: none */
    const char *key_fields;      /* "a,b" for the what-if key; NULL: one key */
    const char *schema;          /* NULL: ts timestamp, the rest sniffed */
    int unit;                    /* a tdm_ts_unit, TDM_TS_UNIT_* */
    int format;                  /* TDM__AN_FMT_*; 0: by extension */
    char csv_delimiter;
    bool csv_header;
    /* The window of the what-if. */
    int win_type; /* TDM__AN_* */
    tdm_time_ms win_size, win_slide, win_offset, win_gap;
    const char *window_text; /* as given, for the report */
    /* Candidate grids (NULL: derived from the distribution). */
    tdm_time_ms *bounds;
    int n_bounds;
    tdm_time_ms *lateness;
    int n_lateness;
    double target;     /* accepted late fraction, [0, 1) (--target) */
    int64_t sample;    /* records replayed; 0: no what-if */
    int batch_size;    /* the job's batch.size */
    tdm_time_ms guard; /* the job's timestamp_guard (0: off) */
    tdm_time_ms now;   /* "now" for the future check and guard */
    char **expect;     /* expected partition names */
    int n_expect;
    bool claim_monotonic;
    const char *dead_letter; /* NULL: bad lines on stderr only */
    FILE *log;               /* bad-line messages (stderr) */
    /* From --job (analyze_job.c); NULL / false without one. */
    const char *job_file;
    const char *job_source;      /* the source analyzed */
    const char *job_window;      /* the window reading it, NULL: none */
    const char *job_late_output; /* that window's late_output sink */
    bool job_has_bound;          /* the source's watermark is bounded */
    const char *job_strategy;    /* its watermark.strategy */
    tdm_time_ms job_bound;       /* its max_out_of_orderness */
    tdm_time_ms job_lateness;    /* the window's allowed_lateness */
    char **notes;                /* what the job set and what overrode it */
    int n_notes;
    struct tdm__cli_job *job; /* the loaded job (owns the strings above) */
    char *window_buf;         /* window_text built from the job */
} tdm__an_opts;

/* ---- What one pass over the input measured ---- */

/* One partition (a file, or a value of the partition field). */
typedef struct tdm__an_part {
    char *name;
    int64_t records;            /* parsed records, guarded ones included */
    int64_t guarded;            /* beyond now + guard: not in the lag */
    int64_t out_of_order;       /* lag > 0 */
    tdm_time_ms min_ts, max_ts; /* over records not guarded */
    int64_t max_lag;
    tdm__cli_hist *lag; /* NULL past TDM__AN_PART_HISTS partitions */
    /* Gaps: how long the partition said nothing (see analyze_scan.c). */
    bool has_prev;
    tdm_time_ms prev_mark; /* global max ts (or arrival) at its last
                              record */
    int64_t max_gap;
    tdm_time_ms gap_from, gap_to; /* where the largest gap lies */
    bool gap_at_end;              /* the largest gap runs to the end of input */
    /* Unit evidence from its first 100 timestamps (unit ms only). */
    int unit_n;
    int64_t unit_small, unit_big;
    tdm_time_ms unit_first;
    int64_t unit_suspects; /* records in another unit (analyze_scan.c) */
} tdm__an_part;

/* A slice of the input by record count. */
typedef struct tdm__an_slice {
    int64_t first; /* index of its first record (0-based) */
    int64_t records;
    tdm_time_ms max_ts; /* highest timestamp seen at its end */
    tdm__cli_hist lag;
    bool spike; /* set by the recommendations */
} tdm__an_slice;

/* Something a split does between two records of the sample. */
typedef struct tdm__an_split_ev {
    int64_t at; /* before sample record `at` (0-based) */
    uint32_t split;
    uint8_t kind; /* TDM__AN_EV_* */
} tdm__an_split_ev;

enum { TDM__AN_EV_FINISHED = 1, TDM__AN_EV_BATCH };

/* Magnitude classes of a timestamp in ms (analyze_unit.c). */
enum {
    TDM__AN_CLASS_NONE = 0, /* below 1e8: not an epoch time of this era */
    TDM__AN_CLASS_S,        /* [1e8, 1e11): epoch seconds read as ms */
    TDM__AN_CLASS_MS,       /* [1e11, 1e14): epoch milliseconds */
    TDM__AN_CLASS_US,       /* [1e14, 1e17): microseconds read as ms */
    TDM__AN_CLASS_NS        /* 1e17 and above: nanoseconds read as ms */
};

/* Flags of a sample record: caught by the timestamp guard; in another
 * unit than the input's (left out of the measurements and of the late
 * fraction the target counts). */
enum { TDM__AN_GUARDED = 1, TDM__AN_SUSPECT = 2 };

/* The first records, as the runtime would hand them to its reader and
 * its window: timestamp, partition, key and whether the timestamp guard
 * caught them, plus batch ends and finished partitions in order. */
typedef struct tdm__an_sample {
    int64_t n, cap;
    tdm_time_ms *ts;
    uint32_t *part;
    uint32_t *key;
    uint8_t *guarded; /* TDM__AN_GUARDED | TDM__AN_SUSPECT */
    tdm__an_split_ev *ev;
    int64_t n_ev, cap_ev;
    int initial_splits; /* splits the reader starts with (files) */
    /* Interned keys: bytes in one arena, open addressing on ids. */
    char *kbytes;
    size_t kused, kcap;
    size_t *koff; /* n_keys + 1 offsets */
    uint32_t n_keys, cap_keys;
    uint32_t *kslots;
    size_t n_kslots;
    bool complete; /* the sample holds the whole input */
} tdm__an_sample;

/* An hour of event time: the records whose timestamp lies in
 * [start, start + 1 h), UTC. */
typedef struct tdm__an_hour {
    tdm_time_ms start;
    tdm__cli_hist lag; /* their lag (the measure of s->lag) */
    /* Set by the recommendations (rule live_bound, analyze_reco.c and
     * analyze_target.c). */
    tdm_time_ms upper; /* the bound its lag histogram asks for */
    bool judged;       /* enough records to judge it */
    bool ruled;        /* judged, and of the measure the rule compares */
    bool checked;      /* the sample holds all of it: replayed */
    int64_t late;      /* ... its late records at the recommended bound */
    tdm_time_ms bound; /* the bound this hour needs for the target */
} tdm__an_hour;

typedef struct tdm__an_warning {
    char *kind; /* "unit", "future", "no_data", ... */
    char *message;
} tdm__an_warning;

typedef struct tdm__an_scan {
    int n_files;
    char **files;    /* the inputs after glob expansion */
    int64_t records; /* parsed records */
    int64_t bad;     /* dead-lettered lines */
    int64_t guarded;
    int64_t future; /* beyond now + 1 h */
    tdm_time_ms future_max;
    int64_t future_first; /* index of the first one */
    /* Timestamps whose magnitude says another unit (analyze_scan.c):
     * counted, located, left out of every measurement. */
    int64_t suspects;
    int64_t suspect_first;      /* index of the first one (0-based) */
    int suspect_part;           /* its partition */
    int64_t suspect_part_idx;   /* its index within the partition */
    tdm_time_ms suspect_value;  /* its timestamp as read (ms) */
    int suspect_class;          /* its magnitude class (analyze_scan.c) */
    char *suspect_where;        /* "file:line", or "record N of <stdin>" */
    char *suspect_raw;          /* its value as written */
    tdm_time_ms min_ts, max_ts; /* over records not guarded */
    tdm__cli_hist lag;          /* every record not guarded */
    bool has_arrival;
    tdm__cli_hist arrival; /* arrival - ts, clamped at 0 */
    int64_t arrival_negative;
    int64_t arrival_missing; /* records without a usable arrival time */
    tdm__cli_hist gaps;      /* one gap per record (see analyze_scan.c) */
    tdm__an_part *parts;
    int n_parts, cap_parts;
    bool by_field;
    tdm__an_slice slices[TDM__AN_SLICES];
    int n_slices;
    int64_t slice_len; /* records per slice */
    /* Per hour of event time, ascending (the first TDM__AN_HOURS hours
     * seen; the records of others are only counted in hours_untabled). */
    tdm__an_hour *hours;
    int n_hours;
    int64_t hours_untabled;
    tdm__an_sample sample;
    tdm__an_warning *warnings;
    int n_warnings, cap_warnings;
} tdm__an_scan;

/* ---- Recommendations ---- */

typedef struct tdm__an_reco {
    /* Bounded out-of-orderness for P99 and P99.9 completeness. */
    tdm_time_ms bound99, bound999;
    double behind99, behind999; /* fraction with lag > bound (bound) */
    /* Allowed lateness on top of bound99 covering P99.99 and the max. */
    tdm_time_ms late9999, late_max;
    double dropped9999, dropped_max; /* fraction with lag > B + L */
    /* Idle timeout. */
    bool idle_from_arrival; /* basis: arrival gaps, else event time */
    tdm_time_ms idle_timeout;
    int64_t gap_p999, gap_normal_max, gap_max;
    int64_t idle_late;    /* estimated late records (sample) */
    int64_t idle_checked; /* records the estimate looked at */
    int n_idle_parts;     /* partitions silent longer than it */
    /* Spikes over time. */
    int64_t slice_p99_median;
    int n_spikes;
    /* The recommendation (analyze_target.c): the smallest bound on the
     * ladder whose exact late fraction meets the target, the lateness
     * covering the tail on top of it, and the late output for the rest. */
    double target;
    bool checked;         /* the bound was found by replays */
    tdm_time_ms bound;    /* recommended max_out_of_orderness */
    int64_t late;         /* its late records (replay), or -1 */
    int64_t counted;      /* records the late fraction counts */
    tdm_time_ms below;    /* the next smaller ladder value (-1: none) */
    int64_t below_late;   /* its late records (replay) */
    int replays;          /* replays the search ran */
    tdm_time_ms lateness; /* recommended allowed_lateness */
    bool lateness_max;    /* it covers the max (else the P99.99) */
    /* Rule live_bound (analyze_reco.c): is a bound that changes with
     * the hour (`tidemark set` on a running job) worth it?  The bound
     * per hour is in s->hours. */
    bool hourly;       /* timestamps in 2 hours or more: the table */
    int hours_judged;  /* hours the rule compares (ruled) */
    bool by_replay;    /* ... by their replayed bounds (else histogram) */
    int calm, busy;    /* s->hours index of the smallest and largest
                          bound it compares (-1: none) */
    bool live_worth;   /* busy >= 2 x calm and >= calm + 1 s */
    int hour_replays;  /* the per-hour search's replays */
    bool hours_capped; /* it stopped before settling every hour */
} tdm__an_reco;

/* ---- What-if ---- */

/* Summary of a list of delays (one per window). */
typedef struct tdm__an_dist {
    int64_t n;
    double mean;
    int64_t p50, p99, max;
} tdm__an_dist;

typedef struct tdm__an_cand {
    tdm_time_ms bound, lateness;
    int64_t records;        /* replayed */
    int64_t on_time;        /* in a window that had not fired */
    int64_t accepted_late;  /* late, accepted within allowed lateness:
                               its push fired a pane */
    int64_t late_output;    /* too late for every window */
    int64_t panes_on_time;  /* first results at the watermark */
    int64_t panes_late;     /* refired panes */
    int64_t panes_other;    /* early panes (none with the default trigger) */
    int64_t windows;        /* distinct window ranges that fired */
    int64_t windows_at_end; /* ... first at end of input */
    tdm__an_dist delay_ms;  /* event time from passed to first result */
    tdm__an_dist delay_records;
    int64_t peak_windows, peak_keys, peak_bytes;
    double rate;           /* records per second of event time */
    int64_t seed_estimate; /* rate x retention x bytes per entry */
    int64_t suspects;      /* records in another unit, replayed */
    int64_t suspects_late; /* ... not on time */
    unsigned role;         /* TDM__AN_ROLE_* */
    /* NULL, or s->n_hours counters the replay adds each late record
     * (not in another unit, not guarded) to, by the hour of its
     * timestamp. */
    int64_t *hour_late;
} tdm__an_cand;

/* Why a candidate is in the grid, besides the grid itself. */
enum { TDM__AN_ROLE_RECO = 1, TDM__AN_ROLE_JOB = 2 };

/* Records of candidate @p c not in their window's first result, the
 * records in another unit left out (the late count of the target). */
int64_t tdm__analyze_late(const tdm__an_cand *c);
/* ... and the records that count is out of. */
int64_t tdm__analyze_counted(const tdm__an_cand *c);

/* ---- Functions ---- */

/* Reads every input once (see analyze_scan.c).  Bad lines are reported
 * and counted, not errors.  Returns TDM_OK; TDM_ERR_IO (an input cannot
 * be opened or read, the dead-letter file cannot be written; message in
 * errbuf naming the path); TDM_ERR_INVAL (bad field names or schema);
 * TDM_ERR_NOMEM.  *s is set up even on failure (free it). */
tdm_err tdm__analyze_scan(const tdm__an_opts *o, tdm__an_scan *s, char *errbuf,
                          size_t errbuf_size);
/* The index in s->hours of the hour holding @p ts, -1 when none. */
int tdm__analyze_hour_index(const tdm__an_scan *s, tdm_time_ms ts);
/* Frees what a scan holds; a zeroed scan is fine. */
void tdm__analyze_scan_free(tdm__an_scan *s);
/* Adds a warning (both strings copied).  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__analyze_warn(tdm__an_scan *s, const char *kind, const char *fmt,
                          ...) __attribute__((format(printf, 3, 4)));

/* The magnitude class (TDM__AN_CLASS_*) of timestamp @p ts in ms. */
int tdm__analyze_unit_class(tdm_time_ms ts);
/* After the pass: finds where the first suspect (s->suspect_*) was
 * written (file:line) and adds the warning (see analyze_unit.c).
 * @p format is TDM__AN_FMT_*.  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__analyze_unit_report(const tdm__an_opts *o, tdm__an_scan *s,
                                 int format);

/* Derives the recommendations and flags spikes in s->slices. */
void tdm__analyze_recommend(const tdm__an_opts *o, tdm__an_scan *s,
                            tdm__an_reco *r);
/* Rounds @p v up to two significant digits (values up to 100 stay). */
int64_t tdm__analyze_nice_up(int64_t v);
/* The bound lag histogram @p h asks for at late fraction @p target: its
 * (1 - target) quantile rounded up (nice_up), an upper bound of what
 * replays would find; 0 when @p h is empty.  The recommendation without
 * a sample and the bound of each hour. */
tdm_time_ms tdm__analyze_bound_of(const tdm__cli_hist *h, double target);
/* The ladder value below @p v (0 .. 100 by one, then two significant
 * digits: 110, 120 ... 990, 1000, 1100 ...); -1 below 0. */
int64_t tdm__analyze_nice_down(int64_t v);

/* Picks r->bound: the smallest ladder value whose exact late fraction
 * (replays of the sample with allowed lateness 0) is at most o->target,
 * and r->lateness on top of it (see analyze_target.c); then the same per
 * hour of event time for each hour the sample holds entirely (its
 * checked, late and bound, after tdm__analyze_recommend) and rule
 * live_bound again.  Without a sample the bounds come from the
 * histograms (r->checked false).  TDM_OK, TDM_ERR_NOMEM or a replay's
 * error (message in errbuf). */
tdm_err tdm__analyze_target(const tdm__an_opts *o, tdm__an_scan *s,
                            tdm__an_reco *r, char *errbuf, size_t errbuf_size);

/* Rule live_bound over the bounds in s->hours: r->calm, r->busy,
 * r->live_worth (analyze_reco.c; tdm__analyze_recommend runs it on the
 * histogram bounds, tdm__analyze_target again on the replayed ones). */
void tdm__analyze_live_rule(tdm__an_scan *s, tdm__an_reco *r);

/* Fills @p o from job file o->job_file (analyze_job.c): the source (the
 * input naming one of the job's sources, taken out of the inputs, or the
 * only one), its inputs, format, schema, fields and unit, the job's
 * batch size and guard, the window reading the source, and the current
 * bound and lateness, where the command line did not set them (the
 * command line wins; every override becomes a note).  @p given says what
 * the command line set.  Prints problems on @p err (file:line:col) and
 * returns an exit code. */
typedef struct tdm__an_given {
    bool unit, format, csv_delimiter, csv_header, window, batch_size, guard;
} tdm__an_given;
int tdm__analyze_job(tdm__an_opts *o, const tdm__an_given *given, FILE *err);
/* Frees what tdm__analyze_job allocated in @p o. */
void tdm__analyze_job_free(tdm__an_opts *o);

/* Replays the sample for c->bound and c->lateness and fills the rest of
 * *c.  TDM_OK, TDM_ERR_NOMEM, or an engine error (message in errbuf). */
tdm_err tdm__analyze_replay(const tdm__an_opts *o, const tdm__an_scan *s,
                            tdm__an_cand *c, char *errbuf, size_t errbuf_size);

/* The report as a table (text) or JSON.  @p cands may be NULL with
 * n_cands 0 (no what-if). */
void tdm__analyze_report_text(FILE *f, const tdm__an_opts *o,
                              const tdm__an_scan *s, const tdm__an_reco *r,
                              const tdm__an_cand *cands, int n_cands);
void tdm__analyze_report_json(FILE *f, const tdm__an_opts *o,
                              const tdm__an_scan *s, const tdm__an_reco *r,
                              const tdm__an_cand *cands, int n_cands);

/* The recommendation (analyze_advice.c): the bound, lateness and late
 * output with their measured effect, the job's current bound, the
 * snippet for the job file and the `tidemark set` line, then the bound
 * per hour and rule live_bound; in the text report, and as the
 * "recommended" (and "job") and "live" members of the JSON's
 * recommendations. */
void tdm__analyze_advice_text(FILE *f, const tdm__an_opts *o,
                              const tdm__an_scan *s, const tdm__an_reco *r,
                              const tdm__an_cand *cands, int n);
void tdm__analyze_advice_json(FILE *f, const tdm__an_opts *o,
                              const tdm__an_scan *s, const tdm__an_reco *r,
                              const tdm__an_cand *cands, int n);

/* The `tidemark set` command that applies bound @p bound_ms to the
 * analyzed source of a running job (the source of --job, else the
 * placeholder SOURCE), into @p buf; returns @p buf. */
const char *tdm__analyze_set_cmd(const tdm__an_opts *o, tdm_time_ms bound_ms,
                                 char *buf, size_t n);
/* Writes @p s as a JSON string (null for NULL). */
void tdm__analyze_json_str(FILE *f, const char *s);

/* Formats a duration for people: "0ms", "850ms", "1.2s", "2m30s",
 * "1h05m", "3d4h". */
const char *tdm__analyze_fmt_dur(int64_t ms, char *buf, size_t n);

/* Writes the SVG plot: completeness against result delay of the
 * candidates (log delay axis, the recommended one marked), and the lag
 * histogram on log-scaled buckets with the recommended bound, bound +
 * lateness and the maximum marked.  @p r may be NULL.  Returns 0, or -1
 * when writing failed. */
int tdm__analyze_svg(FILE *f, const tdm__an_scan *s, const tdm__an_reco *r,
                     const tdm__an_cand *cands, int n_cands);

/* The command (argv starts after "analyze"); returns an exit code. */
int tdm__cli_cmd_analyze(int argc, char **argv);

#endif /* TDM_ANALYZE_H */
