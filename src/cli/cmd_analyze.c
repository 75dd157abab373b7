/* SPDX-License-Identifier: MIT */
/* cmd_analyze.c - `tidemark analyze INPUT... --ts-field F [options]`: the
 * command line, then scan -> recommendations -> what-if replays -> report
 * and plot.  docs/analyze.md describes the command and its JSON output.
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

/* A comma-separated list of durations into a new array. */
static bool parse_dur_list(const char *text, tdm_time_ms **out, int *n)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", text);
    int cnt = 0;
    tdm_time_ms *v = malloc(sizeof *v * (strlen(text) / 2 + 2));
    if (!v)
        return false;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        if (!parse_dur(t, &v[cnt])) {
            free(v);
            return false;
        }
        cnt++;
    }
    if (cnt == 0) {
        free(v);
        return false;
    }
    free(*out);
    *out = v;
    *n = cnt;
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
                     int *missing)
{
    const char *v;
    if ((v = OPT("--ts-field"))) {
        o->ts_field = v;
    } else if ((v = OPT("--unit"))) {
        if (!parse_unit(v, &o->unit))
            return usage("--unit: expected ms, s, us, ns or iso8601, "
                         "got \"%s\"",
                         v);
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
    } else if ((v = OPT("--csv-delimiter"))) {
        if (strlen(v) != 1)
            return usage("--csv-delimiter: expected one character, "
                         "got \"%s\"",
                         v);
        o->csv_delimiter = v[0];
    } else if (strcmp(argv[*i], "--csv-no-header") == 0) {
        o->csv_header = false;
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
static int opt_job(int argc, char **argv, int *i, tdm__an_opts *o, int *missing)
{
    const char *v;
    if ((v = OPT("--sample")))
        return opt_sample(v, o);
    if ((v = OPT("--batch-size")))
        return opt_batch_size(v, o);
    if ((v = OPT("--guard"))) {
        if (!parse_dur(v, &o->guard))
            return usage("--guard: expected a duration >= 0 like 1h, "
                         "got \"%s\"",
                         v);
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
                      bool *json, const char **plot, int *missing)
{
    const char *v;
    if ((v = OPT("--window"))) {
        if (!parse_window(v, o))
            return usage("--window: expected tumbling:SIZE[:OFFSET], "
                         "sliding:SIZE:SLIDE[:OFFSET] or session:GAP, "
                         "got \"%s\"",
                         v);
        o->window_text = v;
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

/* Parses the command line into @p o (inputs point into argv).  Returns
 * TDM_EXIT_OK, TDM_EXIT_USAGE (message printed) or -1 for --help. */
static int parse_args(int argc, char **argv, tdm__an_opts *o, bool *json,
                      const char **plot)
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
        rc = opt_input(argc, argv, &i, o, &missing);
        if (rc == NOT_MINE)
            rc = opt_job(argc, argv, &i, o, &missing);
        if (rc == NOT_MINE)
            rc = opt_whatif(argc, argv, &i, o, json, plot, &missing);
        if (rc == NOT_MINE)
            return missing ? usage("%s needs a value", a)
                           : usage("unknown option \"%s\"", a);
        if (rc != TDM_EXIT_OK)
            return rc;
    }
    if (o->n_inputs == 0)
        return usage("%s", "no INPUT given (a file, a glob or - for stdin)");
    if (!o->ts_field)
        return usage("%s", "--ts-field is required");
    return TDM_EXIT_OK;
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

/* The grid: --bounds x --lateness, or the bounds at P90, P99, P99.9 and
 * P99.99 (rounded up to two digits) x lateness 0 and the values covering
 * P99.99 and the max on top of the P99 bound.  *out is allocated. */
static int make_grid(const tdm__an_opts *o, const tdm__an_scan *s,
                     const tdm__an_reco *r, tdm__an_cand **out)
{
    tdm_time_ms b[8], l[8];
    int nb = 0, nl = 0;
    if (o->n_bounds) {
        for (int i = 0; i < o->n_bounds && nb < 8; i++)
            b[nb++] = o->bounds[i];
    } else if (s->lag.n > 0) {
        b[nb++] = tdm__analyze_nice_up(tdm__cli_hist_quantile(&s->lag, 0.9));
        b[nb++] = r->bound99;
        b[nb++] = r->bound999;
        b[nb++] = tdm__analyze_nice_up(tdm__cli_hist_quantile(&s->lag, 0.9999));
    } else {
        b[nb++] = 0;
    }
    if (o->n_lateness) {
        for (int i = 0; i < o->n_lateness && nl < 8; i++)
            l[nl++] = o->lateness[i];
    } else {
        l[nl++] = 0;
        l[nl++] = r->late9999;
        l[nl++] = r->late_max;
    }
    nb = uniq(b, nb);
    nl = uniq(l, nl);
    *out = calloc((size_t)(nb * nl), sizeof **out);
    if (!*out)
        return -1;
    int n = 0;
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < nl; j++) {
            (*out)[n].bound = b[i];
            (*out)[n].lateness = l[j];
            n++;
        }
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

/* `tidemark analyze` (see its help text in help.c and docs/analyze.md). */
int tdm__cli_cmd_analyze(int argc, char **argv)
{
    tdm__an_opts o;
    tdm__an_scan s;
    tdm__an_reco r;
    tdm__an_cand *cands = NULL;
    int n_cands = 0, rc = TDM_EXIT_OK;
    bool json = false;
    const char *plot = NULL;
    char msg[512] = "";

    memset(&o, 0, sizeof o);
    memset(&s, 0, sizeof s);
    o.unit = TDM_TS_UNIT_MS;
    o.csv_header = true;
    o.csv_delimiter = ',';
    o.win_type = TDM__AN_TUMBLING;
    o.win_size = 60000;
    o.window_text = "tumbling:1m";
    o.sample = 1000000;
    o.batch_size = 1024;
    o.guard = 3600000;
    o.now = wall_now();
    o.log = stderr;
    rc = parse_args(argc, argv, &o, &json, &plot);
    if (rc == -1) {
        rc = tdm__cli_help("analyze", stdout);
        goto out;
    }
    if (rc != TDM_EXIT_OK)
        goto out;

    tdm_err err = tdm__analyze_scan(&o, &s, msg, sizeof msg);
    if (err != TDM_OK) {
        fprintf(stderr, "tidemark analyze: %s\n",
                msg[0] ? msg : tdm_strerror(err));
        rc = err == TDM_ERR_INVAL ? TDM_EXIT_USAGE : TDM_EXIT_RUNTIME;
        goto out;
    }
    tdm__analyze_recommend(&o, &s, &r);
    if (o.sample > 0 && s.sample.n > 0) {
        n_cands = make_grid(&o, &s, &r, &cands);
        if (n_cands < 0) {
            fprintf(stderr, "tidemark analyze: out of memory\n");
            rc = TDM_EXIT_RUNTIME;
            n_cands = 0;
            goto out;
        }
        err = replay_all(&o, &s, cands, n_cands, msg, sizeof msg);
        if (err != TDM_OK) {
            fprintf(stderr, "tidemark analyze: %s\n",
                    msg[0] ? msg : tdm_strerror(err));
            rc = err == TDM_ERR_INVAL ? TDM_EXIT_USAGE : TDM_EXIT_RUNTIME;
            goto out;
        }
    }
    if (json)
        tdm__analyze_report_json(stdout, &o, &s, &r, cands, n_cands);
    else
        tdm__analyze_report_text(stdout, &o, &s, &r, cands, n_cands);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "tidemark analyze: writing the report failed: %s\n",
                strerror(errno));
        rc = TDM_EXIT_RUNTIME;
    }
    if (plot) {
        FILE *f = fopen(plot, "w");
        int bad = !f || tdm__analyze_svg(f, &s, cands, n_cands) != 0;
        if (f && fclose(f) != 0)
            bad = 1;
        if (bad) {
            fprintf(stderr,
                    "tidemark analyze: --plot: cannot write '%s': "
                    "%s\n",
                    plot, strerror(errno));
            rc = TDM_EXIT_RUNTIME;
        }
    }
out:
    tdm__analyze_scan_free(&s);
    free(cands);
    free(o.inputs);
    free(o.bounds);
    free(o.lateness);
    for (int k = 0; k < o.n_expect; k++)
        free(o.expect[k]);
    free(o.expect);
    return rc;
}
