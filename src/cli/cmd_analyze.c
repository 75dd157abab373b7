/* SPDX-License-Identifier: MIT */
/* cmd_analyze.c - `tidemark analyze INPUT... --ts-field F [options]` or
 * `tidemark analyze --job JOB.yaml [SOURCE] [INPUT...] [options]`: the
 * command line (and the job file through analyze_job.c), then scan ->
 * recommendations -> the target's bound (analyze_target.c) -> what-if
 * replays -> report and plot.  docs/analyze.md describes the command and
 * its JSON output.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze.h"
#include "cli.h"

/* ---- Parsing helpers ---- */

/* A duration as the job file writes it, any sign. */
static bool parse_duration(const char *text, tdm_time_ms *out)
{
    return tdm_duration_parse(text, out) == TDM_OK;
}

/* A duration >= 0 ("500ms", "2s", "1m30s", bare ms). */
static bool parse_dur(const char *text, tdm_time_ms *out)
{
    int64_t v;
    if (!parse_duration(text, &v) || v < 0)
        return false;
    *out = v;
    return true;
}

/* A comma-separated list of durations into a new array: any number of
 * them, any length of text (the list is never cut). */
static bool parse_dur_list(const char *text, tdm_time_ms **out, int *n)
{
    char *buf = tdm__cli_strndup(text, strlen(text));
    tdm_time_ms *v = malloc(sizeof *v * (strlen(text) / 2 + 2));
    int cnt = 0;
    bool ok = buf && v;
    char *save = NULL;
    for (char *t = ok ? strtok_r(buf, ",", &save) : NULL; t && ok;
         t = strtok_r(NULL, ",", &save))
        ok = parse_dur(t, &v[cnt++]);
    free(buf);
    if (!ok || cnt == 0) {
        free(v);
        return false;
    }
    free(*out);
    *out = v;
    *n = cnt;
    return true;
}

/* --target RATE: "0.1%" or a fraction like 0.001, in [0, 1). */
static bool parse_target(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno)
        return false;
    if (*end == '%') {
        v /= 100;
        end++;
    }
    if (*end || !(v >= 0 && v < 1))
        return false;
    *out = v;
    return true;
}

/* --window: tumbling:SIZE[:OFFSET], sliding:SIZE:SLIDE[:OFFSET],
 * session:GAP. */
static bool parse_window(const char *text, tdm__an_opts *o)
{
    char buf[256], *parts[5] = {0};
    int n = 0;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *p = buf, *q; n < 5; p = q + 1) {
        parts[n++] = p;
        q = strchr(p, ':');
        if (!q)
            break;
        *q = 0;
    }
    o->win_offset = 0;
    if (strcmp(parts[0], "tumbling") == 0 && (n == 2 || n == 3)) {
        o->win_type = TDM__AN_TUMBLING;
        return parse_duration(parts[1], &o->win_size) && o->win_size > 0 &&
               (n == 2 || parse_duration(parts[2], &o->win_offset));
    }
    if (strcmp(parts[0], "sliding") == 0 && (n == 3 || n == 4)) {
        o->win_type = TDM__AN_SLIDING;
        return parse_duration(parts[1], &o->win_size) &&
               parse_duration(parts[2], &o->win_slide) && o->win_size > 0 &&
               o->win_slide > 0 &&
               (n == 3 || parse_duration(parts[3], &o->win_offset));
    }
    if (strcmp(parts[0], "session") == 0 && n == 2) {
        o->win_type = TDM__AN_SESSION;
        return parse_duration(parts[1], &o->win_gap) && o->win_gap > 0;
    }
    return false;
}

static bool parse_unit(const char *u, int *out)
{
    static const struct {
        const char *name;
        int unit;
    } units[] = {{"ms", TDM_TS_UNIT_MS},
                 {"s", TDM_TS_UNIT_S},
                 {"us", TDM_TS_UNIT_US},
                 {"ns", TDM_TS_UNIT_NS},
                 {"iso8601", TDM_TS_UNIT_ISO8601}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i].name) == 0) {
            *out = units[i].unit;
            return true;
        }
    return false;
}

/* --partitions: N (the values 0 .. N-1) or a comma-separated list. */
static bool parse_expect(const char *text, tdm__an_opts *o)
{
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    bool numeric = *text && !*end && errno == 0;
    int cnt = 0;
    if (numeric && (n < 1 || n > 100000))
        return false;
    char **list = calloc(numeric ? (size_t)n : strlen(text) + 1, sizeof *list);
    if (!list)
        return false;
    if (numeric) {
        for (long k = 0; k < n; k++) {
            char b[24];
            snprintf(b, sizeof b, "%ld", k);
            list[cnt++] = tdm__cli_strndup(b, strlen(b));
        }
    } else {
        const char *p = text;
        while (*p) {
            size_t l = strcspn(p, ",");
            if (l > 0)
                list[cnt++] = tdm__cli_strndup(p, l);
            p += l;
            if (*p == ',')
                p++;
        }
    }
    o->expect = list;
    o->n_expect = cnt;
    for (int k = 0; k < cnt; k++)
        if (!list[k])
            return false;
    return cnt > 0;
}

/* The wall clock in epoch ms. */
static tdm_time_ms wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (tdm_time_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "tidemark analyze: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see `tidemark analyze --help`)\n");
    return TDM_EXIT_USAGE;
}

/* parse_args' answer for an argument a group does not know. */
#define NOT_MINE (-2)

/* The value of option @p name at argv[*i] (see tdm__cli_opt_value). */
#define OPT(name) tdm__cli_opt_value(argc, argv, i, name, missing)

/* Options of what is read: fields, unit, schema, format.  Returns
 * TDM_EXIT_OK, TDM_EXIT_USAGE (message printed) or NOT_MINE. */
static int opt_input(int argc, char **argv, int *i, tdm__an_opts *o,
                     tdm__an_given *given, int *missing)
{
    const char *v;
    if ((v = OPT("--ts-field"))) {
        o->ts_field = v;
    } else if ((v = OPT("--unit"))) {
        if (!parse_unit(v, &o->unit))
            return usage("--unit: expected ms, s, us, ns or iso8601, "
                         "got \"%s\"",
                         v);
        given->unit = true;
    } else if ((v = OPT("--partition-field"))) {
        o->partition_field = v;
    } else if ((v = OPT("--arrival-field"))) {
        o->arrival_field = v;
    } else if ((v = OPT("--key-field"))) {
        o->key_fields = v;
    } else if ((v = OPT("--schema"))) {
        o->schema = v;
    } else if ((v = OPT("--format"))) {
        if (strcmp(v, "json") == 0)
            o->format = TDM__AN_FMT_JSON;
        else if (strcmp(v, "csv") == 0)
            o->format = TDM__AN_FMT_CSV;
        else
            return usage("--format: expected json or csv, got \"%s\"", v);
        given->format = true;
    } else if ((v = OPT("--csv-delimiter"))) {
        if (strlen(v) != 1)
            return usage("--csv-delimiter: expected one character, "
                         "got \"%s\"",
                         v);
        o->csv_delimiter = v[0];
        given->csv_delimiter = true;
    } else if (strcmp(argv[*i], "--csv-no-header") == 0) {
        o->csv_header = false;
        given->csv_header = true;
    } else {
        return NOT_MINE;
    }
    return TDM_EXIT_OK;
}

/* --sample N: a record count >= 0. */
static int opt_sample(const char *v, tdm__an_opts *o)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < 0)
        return usage("--sample: expected a record count >= 0, got \"%s\"", v);
    o->sample = n;
    return TDM_EXIT_OK;
}

/* --batch-size N: 1 .. 65536. */
static int opt_batch_size(const char *v, tdm__an_opts *o)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > 65536)
        return usage("--batch-size: expected 1 .. 65536, got \"%s\"", v);
    o->batch_size = (int)n;
    return TDM_EXIT_OK;
}

/* --now T: epoch ms, or ISO-8601 text. */
static int opt_now(const char *v, tdm__an_opts *o)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*v && !*end && errno == 0)
        o->now = n;
    else if (tdm_time_parse(v, strlen(v), TDM_TS_UNIT_ISO8601, &o->now) !=
             TDM_OK)
        return usage("--now: expected epoch ms or ISO-8601 like "
                     "2026-01-01T00:00:00Z, got \"%s\"",
                     v);
    return TDM_EXIT_OK;
}

/* Options of the job being modelled: batch size, guard, now, expected
 * partitions, the monotonicity claim, dead letters.  Returns as
 * opt_input. */
static int opt_job(int argc, char **argv, int *i, tdm__an_opts *o,
                   tdm__an_given *given, int *missing)
{
    const char *v;
    if ((v = OPT("--job"))) {
        o->job_file = v;
        return TDM_EXIT_OK;
    }
    if ((v = OPT("--sample")))
        return opt_sample(v, o);
    if ((v = OPT("--batch-size"))) {
        given->batch_size = true;
        return opt_batch_size(v, o);
    }
    if ((v = OPT("--guard"))) {
        if (!parse_dur(v, &o->guard))
            return usage("--guard: expected a duration >= 0 like 1h, "
                         "got \"%s\"",
                         v);
        given->guard = true;
        return TDM_EXIT_OK;
    }
    if ((v = OPT("--now")))
        return opt_now(v, o);
    if ((v = OPT("--partitions"))) {
        if (!parse_expect(v, o))
            return usage("--partitions: expected a count or a list of "
                         "names, got \"%s\"",
                         v);
        return TDM_EXIT_OK;
    }
    if (strcmp(argv[*i], "--claim-monotonic") == 0) {
        o->claim_monotonic = true;
        return TDM_EXIT_OK;
    }
    if ((v = OPT("--dead-letter"))) {
        o->dead_letter = v;
        return TDM_EXIT_OK;
    }
    return NOT_MINE;
}

/* Options of the what-if and the output: window, bounds, lateness,
 * --json, --plot.  Returns as opt_input. */
static int opt_whatif(int argc, char **argv, int *i, tdm__an_opts *o,
                      tdm__an_given *given, bool *json, const char **plot,
                      int *missing)
{
    const char *v;
    if ((v = OPT("--window"))) {
        if (!parse_window(v, o))
            return usage("--window: expected tumbling:SIZE[:OFFSET], "
                         "sliding:SIZE:SLIDE[:OFFSET] or session:GAP, "
                         "got \"%s\"",
                         v);
        o->window_text = v;
        given->window = true;
    } else if ((v = OPT("--target"))) {
        if (!parse_target(v, &o->target))
            return usage("--target: expected the accepted late fraction "
                         "like 0.1%% or 0.001 (0 <= RATE < 1), got \"%s\"",
                         v);
    } else if ((v = OPT("--bounds"))) {
        if (!parse_dur_list(v, &o->bounds, &o->n_bounds))
            return usage("--bounds: expected durations >= 0 like "
                         "0,500ms,2s, got \"%s\"",
                         v);
    } else if ((v = OPT("--lateness"))) {
        if (!parse_dur_list(v, &o->lateness, &o->n_lateness))
            return usage("--lateness: expected durations >= 0 like "
                         "0,1m, got \"%s\"",
                         v);
    } else if (strcmp(argv[*i], "--json") == 0) {
        *json = true;
    } else if ((v = OPT("--plot"))) {
        *plot = v;
    } else {
        return NOT_MINE;
    }
    return TDM_EXIT_OK;
}

#undef OPT

/* What must be there once the command line (and the job) are read. */
static int check_args(const tdm__an_opts *o)
{
    if (o->n_inputs == 0)
        return usage("%s", "no INPUT given (a file, a glob or - for stdin)");
    if (!o->ts_field)
        return usage("%s", "--ts-field is required");
    return TDM_EXIT_OK;
}

/* Parses the command line into @p o (inputs point into argv).  Returns
 * TDM_EXIT_OK, TDM_EXIT_USAGE (message printed) or -1 for --help. */
static int parse_args(int argc, char **argv, tdm__an_opts *o,
                      tdm__an_given *given, bool *json, const char **plot)
{
    o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
    if (!o->inputs)
        return usage("%s", "out of memory");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int missing = 0, rc;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return -1;
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            o->inputs[o->n_inputs++] = a;
            continue;
        }
        rc = opt_input(argc, argv, &i, o, given, &missing);
        if (rc == NOT_MINE)
            rc = opt_job(argc, argv, &i, o, given, &missing);
        if (rc == NOT_MINE)
            rc = opt_whatif(argc, argv, &i, o, given, json, plot, &missing);
        if (rc == NOT_MINE)
            return missing ? usage("%s needs a value", a)
                           : usage("unknown option \"%s\"", a);
        if (rc != TDM_EXIT_OK)
            return rc;
    }
    if (o->job_file)
        return TDM_EXIT_OK; /* checked once the job filled the rest */
    return check_args(o);
}

/* ---- Candidates ---- */

static int cmp_time(const void *a, const void *b)
{
    tdm_time_ms x = *(const tdm_time_ms *)a, y = *(const tdm_time_ms *)b;
    return x < y ? -1 : x > y;
}

/* Sorts @p v and drops repeats; returns the new count. */
static int uniq(tdm_time_ms *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_time);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

/* A list of durations that grows as needed. */
typedef struct dlist {
    tdm_time_ms *v;
    int n, cap;
} dlist;

static bool dl_add(dlist *d, tdm_time_ms v)
{
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 16;
        tdm_time_ms *nv = realloc(d->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return false;
        d->v = nv;
        d->cap = cap;
    }
    d->v[d->n++] = v;
    return true;
}

/* The bounds of the grid: every --bounds value, or the P90, P99, P99.9
 * and P99.99 (rounded up to two digits) and the recommended bound. */
static bool grid_bounds(const tdm__an_opts *o, const tdm__an_scan *s,
                        const tdm__an_reco *r, dlist *b)
{
    bool ok = true;
    if (o->n_bounds) {
        for (int i = 0; i < o->n_bounds && ok; i++)
            ok = dl_add(b, o->bounds[i]);
    } else if (s->lag.n > 0) {
        ok = dl_add(b, tdm__analyze_nice_up(
                           tdm__cli_hist_quantile(&s->lag, 0.9))) &&
             dl_add(b, r->bound99) && dl_add(b, r->bound999) &&
             dl_add(b, tdm__analyze_nice_up(
                           tdm__cli_hist_quantile(&s->lag, 0.9999))) &&
             dl_add(b, r->bound);
    } else {
        ok = dl_add(b, 0);
    }
    return ok;
}

/* The lateness values: every --lateness value, or 0 and the values
 * covering P99.99 and the max on top of the P99 bound. */
static bool grid_lateness(const tdm__an_opts *o, const tdm__an_reco *r,
                          dlist *l)
{
    bool ok = true;
    if (o->n_lateness) {
        for (int i = 0; i < o->n_lateness && ok; i++)
            ok = dl_add(l, o->lateness[i]);
    } else {
        ok = dl_add(l, 0) && dl_add(l, r->late9999) && dl_add(l, r->late_max);
    }
    return ok;
}

static int cmp_cand(const void *a, const void *b)
{
    const tdm__an_cand *x = a, *y = b;
    if (x->bound != y->bound)
        return x->bound < y->bound ? -1 : 1;
    return x->lateness < y->lateness ? -1 : x->lateness > y->lateness;
}

/* Gives (@p b, @p l) @p role, adding it to the candidates when it is
 * not there and @p add says so. */
static void grid_pair(tdm__an_cand *c, int *n, tdm_time_ms b, tdm_time_ms l,
                      unsigned role, bool add)
{
    for (int i = 0; i < *n; i++)
        if (c[i].bound == b && c[i].lateness == l) {
            c[i].role |= role;
            return;
        }
    if (!add)
        return;
    c[*n].bound = b;
    c[*n].lateness = l;
    c[*n].role = role;
    (*n)++;
}

/* The grid: bounds x lateness (any number of each), and in the default
 * grid also the recommendation (bound, lateness) and, with --job, the
 * job's own settings as rows of their own.  *out is allocated; returns
 * the count or -1 (out of memory). */
static int make_grid(const tdm__an_opts *o, const tdm__an_scan *s,
                     const tdm__an_reco *r, tdm__an_cand **out)
{
    dlist b = {0}, l = {0};
    int n = -1;
    bool dflt = !o->n_bounds && !o->n_lateness;
    if (!grid_bounds(o, s, r, &b) || !grid_lateness(o, r, &l))
        goto out;
    b.n = uniq(b.v, b.n);
    l.n = uniq(l.v, l.n);
    *out = calloc((size_t)b.n * (size_t)l.n + 2, sizeof **out);
    if (!*out)
        goto out;
    n = 0;
    for (int i = 0; i < b.n; i++)
        for (int j = 0; j < l.n; j++)
            grid_pair(*out, &n, b.v[i], l.v[j], 0, true);
    if (s->lag.n > 0)
        grid_pair(*out, &n, r->bound, r->lateness, TDM__AN_ROLE_RECO, dflt);
    if (o->job_has_bound)
        grid_pair(*out, &n, o->job_bound, o->job_lateness, TDM__AN_ROLE_JOB,
                  dflt);
    qsort(*out, (size_t)n, sizeof **out, cmp_cand);
out:
    free(b.v);
    free(l.v);
    return n;
}

/* ---- Replays on worker threads ---- */

/* The candidates are independent replays of the same (read-only) scan:
 * workers take the next one until none is left. */
typedef struct pool {
    const tdm__an_opts *o;
    const tdm__an_scan *s;
    tdm__an_cand *cands;
    int n;
    atomic_int next;
    tdm_err *errs;     /* per candidate */
    char (*msgs)[512]; /* per candidate */
} pool;

static void *replay_worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        int i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        p->errs[i] = tdm__analyze_replay(p->o, p->s, &p->cands[i], p->msgs[i],
                                         sizeof p->msgs[i]);
    }
    return NULL;
}

/* Runs every replay on up to as many threads as there are processors
 * (at most 4).  Returns the first candidate's error, message in
 * @p errbuf. */
static tdm_err replay_all(const tdm__an_opts *o, const tdm__an_scan *s,
                          tdm__an_cand *cands, int n, char *errbuf,
                          size_t errbuf_size)
{
    pool p = {.o = o, .s = s, .cands = cands, .n = n};
    pthread_t th[4];
    int started = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int want = cpus < 1 ? 1 : cpus > 4 ? 4 : (int)cpus;
    tdm_err err = TDM_OK;
    atomic_init(&p.next, 0);
    p.errs = calloc((size_t)n, sizeof *p.errs);
    p.msgs = calloc((size_t)n, sizeof *p.msgs);
    if (!p.errs || !p.msgs) {
        err = TDM_ERR_NOMEM;
        goto out;
    }
    if (want > n)
        want = n;
    /* The calling thread is one of the workers. */
    for (int t = 1; t < want; t++)
        if (pthread_create(&th[started], NULL, replay_worker, &p) == 0)
            started++;
    replay_worker(&p);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < n && err == TDM_OK; i++)
        if (p.errs[i] != TDM_OK) {
            err = p.errs[i];
            snprintf(errbuf, errbuf_size, "%s", p.msgs[i]);
        }
out:
    free(p.errs);
    free(p.msgs);
    return err;
}

/* ---- The command ---- */

/* The defaults of every option. */
static void defaults(tdm__an_opts *o)
{
    memset(o, 0, sizeof *o);
    o->unit = TDM_TS_UNIT_MS;
    o->csv_header = true;
    o->csv_delimiter = ',';
    o->win_type = TDM__AN_TUMBLING;
    o->win_size = 60000;
    o->window_text = "tumbling:1m";
    o->sample = 1000000;
    o->batch_size = 1024;
    o->guard = 3600000;
    o->now = wall_now();
    o->log = stderr;
    o->target = TDM__AN_TARGET_DEFAULT;
}

/* An error of the pass or the replays, with its exit code. */
static int failed(tdm_err err, const char *msg)
{
    fprintf(stderr, "tidemark analyze: %s\n", msg[0] ? msg : tdm_strerror(err));
    return err == TDM_ERR_INVAL ? TDM_EXIT_USAGE : TDM_EXIT_RUNTIME;
}

/* The recommendation's bound and each hour's (replays), the grid and
 * its replays. */
static int analyze(const tdm__an_opts *o, tdm__an_scan *s, tdm__an_reco *r,
                   tdm__an_cand **cands, int *n_cands)
{
    char msg[512] = "";
    tdm__analyze_recommend(o, s, r);
    tdm_err err = tdm__analyze_target(o, s, r, msg, sizeof msg);
    if (err != TDM_OK)
        return failed(err, msg);
    if (o->sample == 0 || s->sample.n == 0)
        return TDM_EXIT_OK;
    *n_cands = make_grid(o, s, r, cands);
    if (*n_cands < 0) {
        *n_cands = 0;
        return failed(TDM_ERR_NOMEM, "");
    }
    err = replay_all(o, s, *cands, *n_cands, msg, sizeof msg);
    return err == TDM_OK ? TDM_EXIT_OK : failed(err, msg);
}

/* The report on stdout and the plot. */
static int output(const tdm__an_opts *o, const tdm__an_scan *s,
                  const tdm__an_reco *r, const tdm__an_cand *cands, int n_cands,
                  bool json, const char *plot)
{
    int rc = TDM_EXIT_OK;
    if (json)
        tdm__analyze_report_json(stdout, o, s, r, cands, n_cands);
    else
        tdm__analyze_report_text(stdout, o, s, r, cands, n_cands);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "tidemark analyze: writing the report failed: %s\n",
                strerror(errno));
        rc = TDM_EXIT_RUNTIME;
    }
    if (!plot)
        return rc;
    FILE *f = fopen(plot, "w");
    int bad = !f || tdm__analyze_svg(f, s, r, cands, n_cands) != 0;
    if (f && fclose(f) != 0)
        bad = 1;
    if (bad) {
        fprintf(stderr, "tidemark analyze: --plot: cannot write '%s': %s\n",
                plot, strerror(errno));
        rc = TDM_EXIT_RUNTIME;
    }
    return rc;
}

/* With --job: the first argument naming a source of the job is the
 * source (taken out of the inputs), the settings come from the file. */
static int with_job(tdm__an_opts *o, const tdm__an_given *given)
{
    int rc = tdm__analyze_job(o, given, stderr);
    return rc == TDM_EXIT_OK ? check_args(o) : rc;
}

/* `tidemark analyze` (see its help text in help.c and docs/analyze.md). */
int tdm__cli_cmd_analyze(int argc, char **argv)
{
    tdm__an_opts o;
    tdm__an_given given = {0};
    tdm__an_scan s;
    tdm__an_reco r;
    tdm__an_cand *cands = NULL;
    int n_cands = 0;
    bool json = false;
    const char *plot = NULL;
    char msg[512] = "";

    defaults(&o);
    memset(&s, 0, sizeof s);
    int rc = parse_args(argc, argv, &o, &given, &json, &plot);
    if (rc == -1) {
        rc = tdm__cli_help("analyze", stdout);
        goto out;
    }
    if (rc == TDM_EXIT_OK && o.job_file)
        rc = with_job(&o, &given);
    if (rc != TDM_EXIT_OK)
        goto out;
    tdm_err err = tdm__analyze_scan(&o, &s, msg, sizeof msg);
    if (err != TDM_OK) {
        rc = failed(err, msg);
        goto out;
    }
    rc = analyze(&o, &s, &r, &cands, &n_cands);
    if (rc == TDM_EXIT_OK)
        rc = output(&o, &s, &r, cands, n_cands, json, plot);
out:
    tdm__analyze_scan_free(&s);
    free(cands);
    free(o.inputs);
    free(o.bounds);
    free(o.lateness);
    for (int k = 0; k < o.n_expect; k++)
        free(o.expect[k]);
    free(o.expect);
    tdm__analyze_job_free(&o);
    return rc;
}
