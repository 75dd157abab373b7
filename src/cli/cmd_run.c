/* SPDX-License-Identifier: MIT */
/* cmd_run.c - `tidemark run JOB.yaml`: loads and validates the job, runs
 * it with tdm_job_run, shows a live status line on a terminal, turns
 * SIGINT/SIGTERM into tdm_job_cancel (a clean stop: the maximum watermark
 * flushes every window, sinks close), and ends with a one-paragraph
 * summary on stderr.  stdout belongs to stdout sinks alone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* The job a signal handler cancels.  This is the one mutable global of
 * the program: a signal handler has no other way to find the job.  It is
 * set just before tdm_job_run and cleared right after. */
static tdm_job *volatile running_job;
static volatile sig_atomic_t stop_requested;

/* SIGINT/SIGTERM: ask the job to stop (async-signal-safe by contract).
 * SA_RESETHAND makes a second signal kill the process as usual. */
static void on_signal(int sig)
{
    static const char msg[] =
        "\ntidemark: stopping (windows flush, sinks close; signal again "
        "to kill)\n";
    tdm_job *job = running_job;
    (void)sig;
    stop_requested = 1;
    if (job != NULL) {
        tdm_job_cancel(job);
    }
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
        /* Nothing to do: stderr is gone. */
    }
}

/* SIGUSR1: ask the job for a savepoint (async-signal-safe by
 * contract; without checkpointing it does nothing). */
static void on_savepoint_signal(int sig)
{
    tdm_job *job = running_job;
    (void)sig;
    if (job != NULL) {
        tdm_job_savepoint(job);
    }
}

/* ---- Options only `run` has (--http*, --log-level) ---- */

/* The longest token tdm_http_start takes; a file holding more is
 * refused before the server starts. */
#define TOKEN_MAX 4096

typedef struct http_opts {
    const char *addr;              /* --http ADDR, or NULL */
    const char *token;             /* --http-token TOKEN, or NULL */
    const char *token_file;        /* --http-token-file PATH, or NULL */
    const char *token_from;        /* where the token came from, for messages */
    char token_buf[TOKEN_MAX + 2]; /* the token read from the file */
    int linger;                    /* --http-linger */
    int from_scratch;              /* --from-scratch: checkpoint.restore=none */
    const char *log_level;         /* --log-level LEVEL, or NULL (checked by the
                                      job key log.level it sets) */
} http_opts;

/* Reads the token of --http-token-file into h->token_buf: the file's
 * bytes without the line ends at its end (one written by echo ends with
 * one).  Returns TDM_EXIT_OK, or TDM_EXIT_USAGE after printing why. */
static int read_token_file(http_opts *h)
{
    FILE *f = fopen(h->token_file, "rb");
    size_t n;
    int e;
    if (f == NULL) {
        fprintf(stderr,
                "tidemark run: --http-token-file %s: cannot read "
                "it: %s\n",
                h->token_file, strerror(errno));
        return TDM_EXIT_USAGE;
    }
    n = fread(h->token_buf, 1, sizeof h->token_buf - 1, f);
    e = ferror(f) ? errno : 0;
    fclose(f);
    while (n > 0 &&
           (h->token_buf[n - 1] == '\n' || h->token_buf[n - 1] == '\r'))
        n--;
    h->token_buf[n] = '\0';
    if (e != 0 || n == 0 || n > TOKEN_MAX) {
        fprintf(stderr, "tidemark run: --http-token-file %s: %s%s\n",
                h->token_file,
                e != 0   ? "cannot read it: "
                : n == 0 ? "the file holds no token"
                         : "the token is longer than 4096 bytes",
                e != 0 ? strerror(e) : "");
        return TDM_EXIT_USAGE;
    }
    h->token = h->token_buf;
    return TDM_EXIT_OK;
}

/* Finds the bearer token of a server: --http-token, else the file of
 * --http-token-file, else the environment variable TIDEMARK_HTTP_TOKEN
 * (the first shows in `ps`; the other two do not).  A variable that is
 * set but empty is an error rather than no token: it is more likely a
 * mistake than a wish to serve without one.  Sets h->token (NULL: none)
 * and h->token_from; returns TDM_EXIT_OK or TDM_EXIT_USAGE. */
static int take_token(http_opts *h)
{
    const char *env = getenv("TIDEMARK_HTTP_TOKEN");
    if (h->token != NULL) {
        h->token_from = "--http-token";
        return TDM_EXIT_OK;
    }
    if (h->token_file != NULL) {
        h->token_from = "--http-token-file";
        return read_token_file(h);
    }
    if (env == NULL)
        return TDM_EXIT_OK;
    h->token_from = "TIDEMARK_HTTP_TOKEN";
    if (env[0] == '\0') {
        fprintf(stderr, "tidemark run: TIDEMARK_HTTP_TOKEN is set but "
                        "empty; unset it to serve without a token\n");
        return TDM_EXIT_USAGE;
    }
    h->token = env;
    return TDM_EXIT_OK;
}

/* Takes the options only `run` has out of argv ("--opt value" or
 * "--opt=value", read by tdm__cli_opt_value), compacting it in place for
 * the common parser, which knows nothing of them.  The values of --set
 * and --parallelism are passed over, so that "--set name=--http" stays
 * what it is.  Returns TDM_EXIT_OK, or TDM_EXIT_USAGE after printing the
 * problem. */
static int take_run_opts(int *argc, char **argv, http_opts *h)
{
    static const char *const valued[] = {"--http", "--http-token",
                                         "--log-level", "--http-token-file"};
    int o = 0;
    memset(h, 0, sizeof *h);
    for (int i = 0; i < *argc; i++) {
        const char *arg = argv[i], *v = NULL;
        int missing = 0, k;
        if (strcmp(arg, "--http-linger") == 0) {
            h->linger = 1;
            continue;
        }
        if (strcmp(arg, "--from-scratch") == 0) {
            h->from_scratch = 1;
            continue;
        }
        for (k = 0; k < 4; k++) {
            v = tdm__cli_opt_value(*argc, argv, &i, valued[k], &missing);
            if (v != NULL || missing)
                break;
        }
        if (missing) {
            fprintf(stderr,
                    "tidemark run: %s needs a value (see "
                    "`tidemark help run`)\n",
                    valued[k]);
            return TDM_EXIT_USAGE;
        }
        if (v == NULL) {
            argv[o++] = argv[i];
            if ((strcmp(arg, "--set") == 0 ||
                 strcmp(arg, "--parallelism") == 0 || strcmp(arg, "-p") == 0) &&
                i + 1 < *argc)
                argv[o++] = argv[++i];
            continue;
        }
        if (k == 0)
            h->addr = v;
        else if (k == 1)
            h->token = v;
        else if (k == 2)
            h->log_level = v;
        else
            h->token_file = v;
    }
    *argc = o;
    if (h->addr == NULL &&
        (h->token != NULL || h->token_file != NULL || h->linger)) {
        fprintf(stderr, "tidemark run: %s needs --http ADDR\n",
                h->token != NULL        ? "--http-token"
                : h->token_file != NULL ? "--http-token-file"
                                        : "--http-linger");
        return TDM_EXIT_USAGE;
    }
    if (h->token != NULL && h->token_file != NULL) {
        fprintf(stderr, "tidemark run: --http-token and --http-token-file "
                        "both give a token; give one\n");
        return TDM_EXIT_USAGE;
    }
    return h->addr != NULL ? take_token(h) : TDM_EXIT_OK;
}

/* The host of an --http address as a URL has it: "[::1]" for IPv6,
 * 127.0.0.1 for an empty host. */
static void url_host(const char *addr, char *buf, size_t n)
{
    const char *colon = addr[0] == '[' ? strchr(addr, ']') : NULL;
    size_t len;
    if (colon != NULL) {
        len = (size_t)(colon - addr) + 1;
    } else {
        colon = strrchr(addr, ':');
        len = colon != NULL ? (size_t)(colon - addr) : strlen(addr);
    }
    if (len == 0) {
        snprintf(buf, n, "127.0.0.1");
        return;
    }
    snprintf(buf, n, "%.*s", (int)len, addr);
}

/* True when @p host (as url_host gives it) is an IP address other
 * machines may reach: not loopback, or the wildcard 0.0.0.0 / [::].
 * "localhost" and what is not an address (refused later) are not. */
static int is_public(const char *host)
{
    unsigned char ip[16];
    char buf[80];
    size_t n = strlen(host);
    if (n > 2 && host[0] == '[' && n < sizeof buf) {
        static const unsigned char loop[16] = {[15] = 1};
        memcpy(buf, host + 1, n - 2);
        buf[n - 2] = '\0';
        return inet_pton(AF_INET6, buf, ip) == 1 && memcmp(ip, loop, 16) != 0;
    }
    return inet_pton(AF_INET, host, ip) == 1 && ip[0] != 127;
}

/* Warns, loudly, of a server that other machines can reach and that
 * answers anyone: the API shows the job's metrics and its recent late
 * records, rows of data included. */
static void warn_public(const char *addr)
{
    fprintf(stderr,
            "tidemark: WARNING: --http %s can be reached from other "
            "machines and no token is set:\n"
            "tidemark: WARNING: anyone who reaches it can read the job's "
            "metrics and recent late records.\n"
            "tidemark: WARNING: set a token (--http-token-file FILE or "
            "TIDEMARK_HTTP_TOKEN) or listen on 127.0.0.1.\n",
            addr);
}

static void handle_signals(int on);

/* SIGINT/SIGTERM while lingering: only ends the wait. */
static void on_linger_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* Waits for SIGINT or SIGTERM.  The server's threads were started with
 * both signals blocked, so they reach this thread, which sleeps in
 * sigsuspend with them unblocked (no check-then-sleep race). */
static void linger(void)
{
    struct sigaction sa;
    sigset_t block, old;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_linger_signal;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!stop_requested) {
        sigsuspend(&old);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    handle_signals(0);
}

/* Starts the server on @p h->addr before the job reads anything and
 * prints where it serves.  Its threads are created with SIGINT and
 * SIGTERM blocked, so that those signals go to the job's threads or to
 * this one.  Returns an exit code. */
static int start_http(tdm_job *job, tdm_taskhost *host, const http_opts *h,
                      const char *name, tdm_http **srv)
{
    char msg[512] = "", url[80];
    sigset_t block, old;
    tdm_err err;
    url_host(h->addr, url, sizeof url);
    if (h->token == NULL && is_public(url))
        warn_public(h->addr);
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    err = host != NULL
              ? tdm_http_start_tasks(host, job, h->addr, h->token, srv, msg,
                                     sizeof msg)
              : tdm_http_start(job, h->addr, h->token, srv, msg, sizeof msg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != TDM_OK) {
        /* A token the server refuses is named by where it came from. */
        fprintf(stderr, "tidemark run: %s: %s\n",
                strncmp(msg, "bearer token", 12) == 0 ? h->token_from
                                                      : "--http",
                msg[0] ? msg : tdm_strerror(err));
        return err == TDM_ERR_INVAL ? TDM_EXIT_USAGE : TDM_EXIT_RUNTIME;
    }
    fprintf(stderr, "tidemark: serving http://%s:%d/ (%s \"%s\")\n", url,
            tdm_http_port(*srv), host != NULL ? "the tasks of job" : "job",
            name);
    fflush(stderr);
    return TDM_EXIT_OK;
}

/* ---- The status line ---- */

/* State shared by the progress callback (main thread) and the log
 * callback (worker threads): both write to stderr, under @c mu. */
typedef struct status {
    pthread_mutex_t mu;
    int live;         /* status line enabled (terminal, no --quiet) */
    int shown;        /* a status line is on the screen now */
    const char *name; /* job name */
    int64_t last_in;  /* records in at the previous refresh */
    double last_t;    /* monotonic seconds at the previous refresh */
} status;

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Formats a span of milliseconds compactly: "850ms", "3.2s", "4m05s",
 * "2h07m", "3d04h". */
static const char *span(int64_t ms, char *buf, size_t n)
{
    int64_t s = ms / 1000;
    if (ms < 1000) {
        snprintf(buf, n, "%lldms", (long long)ms);
    } else if (ms < 60000) {
        snprintf(buf, n, "%.1fs", (double)ms / 1000.0);
    } else if (s < 3600) {
        snprintf(buf, n, "%lldm%02llds", (long long)(s / 60),
                 (long long)(s % 60));
    } else if (s < 86400) {
        snprintf(buf, n, "%lldh%02lldm", (long long)(s / 3600),
                 (long long)(s % 3600 / 60));
    } else {
        snprintf(buf, n, "%lldd%02lldh", (long long)(s / 86400),
                 (long long)(s % 86400 / 3600));
    }
    return buf;
}

/* Width of the terminal on stderr (80 when unknown). */
static int term_cols(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) {
        return ws.ws_col;
    }
    return 80;
}

/* Formats a count compactly: exact below 10,000 ("9,876"), else with
 * three significant digits and k, M or G ("12.3k", "4.56M"). */
static const char *human(double v, char *buf, size_t n)
{
    static const char *const suffix[] = {"k", "M", "G", "T"};
    int i = -1;
    if (v < 10000) {
        return tdm__cli_thousands((int64_t)v, buf, n);
    }
    while (v >= 1000 && i < 3) {
        v /= 1000;
        i++;
    }
    snprintf(buf, n,
             v < 10    ? "%.2f%s"
             : v < 100 ? "%.1f%s"
                       : "%.0f%s",
             v, suffix[i]);
    return buf;
}

/* Progress callback: redraws the status line, in the longest of three
 * forms that fits the terminal (the last one cut if nothing fits).  The
 * watermark lag is only shown when the watermark looks like epoch
 * milliseconds (between 2000 and a day from now); otherwise event time
 * is something else and a lag would be noise. */
static void on_progress(void *ud, const tdm_job *job)
{
    status *st = ud;
    char line[3][512], in[32], out[32], rate[32], iso[40],
        ms[32] = "", lag[32] = "", ld[32], ls[32];
    int64_t n_in = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    tdm_time_ms w = tdm_job_stat(job, TDM_STAT_WATERMARK);
    int64_t now = wall_now_ms();
    double t = mono_now(), dt = t - st->last_t;
    double r = dt > 0 ? (double)(n_in - st->last_in) / dt : 0;
    int cols = term_cols(), pick = 2;

    st->last_in = n_in;
    st->last_t = t;
    human((double)n_in, in, sizeof in);
    human(r, rate, sizeof rate);
    human((double)tdm_job_stat(job, TDM_STAT_RECORDS_OUT), out, sizeof out);
    human((double)tdm_job_stat(job, TDM_STAT_LATE_DROPPED), ld, sizeof ld);
    human((double)tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT), ls, sizeof ls);
    tdm__cli_iso_time(w, iso, sizeof iso);
    if (w != TDM_TIME_MIN && w != TDM_TIME_MAX) {
        snprintf(ms, sizeof ms, " (%lld)", (long long)w);
        if (w >= INT64_C(946684800000) && w <= now + 86400000) {
            char sp[24];
            snprintf(lag, sizeof lag, " lag %s",
                     span(w < now ? now - w : 0, sp, sizeof sp));
        } else {
            /* Not epoch ms: the number alone says more than a date. */
            snprintf(iso, sizeof iso, "%lld", (long long)w);
            ms[0] = '\0';
        }
    }
    snprintf(line[0], sizeof line[0],
             "%s | in %s (%s/s) | out %s | late %s dropped, %s side | "
             "wm %s%s%s",
             st->name, in, rate, out, ld, ls, iso, ms, lag);
    snprintf(line[1], sizeof line[1],
             "%s | in %s (%s/s) | out %s | late %s/%s | wm %s%s", st->name, in,
             rate, out, ld, ls, iso, lag);
    snprintf(line[2], sizeof line[2], "in %s %s/s out %s late %s/%s wm %s%s",
             in, rate, out, ld, ls, iso, lag);
    for (int i = 2; i >= 0; i--) {
        if ((int)strlen(line[i]) < cols) {
            pick = i;
        }
    }
    if ((int)strlen(line[pick]) > cols - 1) {
        line[pick][cols - 1] = '\0';
    }
    pthread_mutex_lock(&st->mu);
    fprintf(stderr, "\r%s\033[K", line[pick]);
    fflush(stderr);
    st->shown = 1;
    pthread_mutex_unlock(&st->mu);
}

/* Log callback: one line from the runtime (worker threads).  Clears the
 * status line first so the two never mix; the next refresh redraws it. */
static void on_log(void *ud, const char *text)
{
    status *st = ud;
    pthread_mutex_lock(&st->mu);
    if (st->shown) {
        fputs("\r\033[K", stderr);
        st->shown = 0;
    }
    fprintf(stderr, "tidemark: %s\n", text);
    fflush(stderr);
    pthread_mutex_unlock(&st->mu);
}

/* ---- Before and after the run ---- */

/* The summary's first paragraph: counts in and out, late records, bad
 * records, guard hits, regressions, the final watermark. */
static void summary_counts(const tdm__cli_job *cj, const char *name,
                           double secs, const char *how)
{
    const tdm_job *job = cj->job;
    char in[32], out[32], rate[32], a[32], b[32], c[32], d[32], g[32], r[32],
        wm[40];
    int64_t n_in = tdm_job_stat(job, TDM_STAT_RECORDS_IN);
    int64_t el = tdm_job_stat(job, TDM_STAT_ELAPSED_MS);
    int64_t bad = tdm_job_stat(job, TDM_STAT_BAD_RECORDS);
    int64_t guard = tdm_job_stat(job, TDM_STAT_GUARD_HITS);
    int64_t regr = tdm_job_stat(job, TDM_STAT_WM_REGRESSIONS);
    const char *dl = tdm__cli_job_value(cj, NULL, "dead_letter");
    const char *bad_fate = dl != NULL && dl[0] != '\0'
                               ? "dead-lettered"
                               : "skipped (no dead_letter sink)";
    if (el > 0) {
        secs = (double)el / 1000.0;
    }
    tdm__cli_thousands(secs > 0 ? (int64_t)((double)n_in / secs) : n_in, rate,
                       sizeof rate);
    fprintf(stderr,
            "tidemark: job \"%s\" %s after %.3f s: %s records in, %s rows "
            "out (%s records/s); late records: %s dropped, %s to the late "
            "output, %s late refires; %s bad record%s %s; %s "
            "timestamp guard hit%s; %s watermark regression%s ignored; "
            "final watermark %s.\n",
            name, how, secs, tdm__cli_thousands(n_in, in, sizeof in),
            tdm__cli_thousands(tdm_job_stat(job, TDM_STAT_RECORDS_OUT), out,
                               sizeof out),
            rate,
            tdm__cli_thousands(tdm_job_stat(job, TDM_STAT_LATE_DROPPED), a,
                               sizeof a),
            tdm__cli_thousands(tdm_job_stat(job, TDM_STAT_LATE_SIDE_OUTPUT), b,
                               sizeof b),
            tdm__cli_thousands(tdm_job_stat(job, TDM_STAT_LATE_REFIRES), c,
                               sizeof c),
            tdm__cli_thousands(bad, d, sizeof d), bad == 1 ? "" : "s", bad_fate,
            tdm__cli_thousands(guard, g, sizeof g), guard == 1 ? "" : "s",
            tdm__cli_thousands(regr, r, sizeof r), regr == 1 ? "" : "s",
            tdm__cli_iso_time(tdm_job_stat(job, TDM_STAT_WATERMARK), wm,
                              sizeof wm));
}

/* Records dropped by filters, and JSON records that named a member
 * twice. */
static void summary_drops(const tdm__cli_job *cj)
{
    const tdm_job *job = cj->job;
    int64_t filtered = tdm_job_stat(job, TDM_STAT_FILTERED);
    if (filtered > 0) {
        /* A join's filter counts the pairs it drops there too. */
        bool join_filter = false;
        for (size_t i = 0; i < cj->n_entries; i++)
            if (cj->entries[i].node && cj->entries[i].kind == TDM_NODE_JOIN &&
                strcmp(cj->entries[i].key, "filter") == 0)
                join_filter = *cj->entries[i].value != 0;
        char nf[32];
        fprintf(stderr, "tidemark: %s record%s dropped by %s.\n",
                tdm__cli_thousands(filtered, nf, sizeof nf),
                filtered == 1 ? "" : "s",
                join_filter ? "source and join filters (a join's: pairs)"
                            : "source filters");
    }
    int64_t dup = tdm_job_stat(job, TDM_STAT_DUP_KEYS);
    if (dup > 0) {
        /* Not bad records: the rule is documented (docs/job-format.md,
         * "Repeated keys"), but the data may not mean what it says. */
        char nd[32];
        fprintf(stderr,
                "tidemark: %s JSON record%s named a member twice; the last "
                "value was kept.\n",
                tdm__cli_thousands(dup, nd, sizeof nd), dup == 1 ? "" : "s");
    }
    int64_t tomb = tdm_job_stat(job, TDM_STAT_TOMBSTONES);
    if (tomb > 0) {
        char nt[32];
        fprintf(stderr,
                "tidemark: %s Kafka tombstone%s (null values) skipped.\n",
                tdm__cli_thousands(tomb, nt, sizeof nt), tomb == 1 ? "" : "s");
    }
}

/* Checkpoints, restarts and the result latency. */
static void summary_progress(const tdm_job *job)
{
    int64_t n_ck = tdm_job_stat(job, TDM_STAT_CHECKPOINTS);
    int64_t n_ckf = tdm_job_stat(job, TDM_STAT_CHECKPOINTS_FAILED);
    if (n_ck == 0 && n_ckf > 0)
        fprintf(stderr, "tidemark: checkpoints: 0 completed, %lld failed.\n",
                (long long)n_ckf);
    else if (n_ck > 0) {
        char nb[32];
        fprintf(stderr,
                "tidemark: checkpoints: %lld completed, %lld failed; the "
                "last, %lld: %s bytes, %lld ms, alignment %lld ms.\n",
                (long long)n_ck, (long long)n_ckf,
                (long long)tdm_job_stat(job, TDM_STAT_CHECKPOINT_ID),
                tdm__cli_thousands(tdm_job_stat(job, TDM_STAT_CHECKPOINT_BYTES),
                                   nb, sizeof nb),
                (long long)tdm_job_stat(job, TDM_STAT_CHECKPOINT_MS),
                (long long)tdm_job_stat(job, TDM_STAT_CHECKPOINT_ALIGN_MS));
    }
    int64_t n_rs = tdm_job_stat(job, TDM_STAT_RESTARTS);
    if (n_rs > 0)
        fprintf(stderr,
                "tidemark: restarted %lld time%s (restart.strategy; "
                "the counts above are the last attempt's, but for "
                "checkpoints).\n",
                (long long)n_rs, n_rs == 1 ? "" : "s");
    int64_t n_lat = 0;
    int64_t p50 = tdm_job_result_latency(job, 0.50, &n_lat);
    if (p50 >= 0) {
        char nl[32];
        fprintf(stderr,
                "tidemark: result latency (watermark leaving its source "
                "to the row reaching the sink, %s on-time results): "
                "p50 %.3f ms, p99 %.3f ms, max %.3f ms.\n",
                tdm__cli_thousands(n_lat, nl, sizeof nl), (double)p50 / 1e3,
                (double)tdm_job_result_latency(job, 0.99, NULL) / 1e3,
                (double)tdm_job_result_latency(job, 1.0, NULL) / 1e3);
    }
}

/* Prints the closing paragraph; @p how is "finished", "stopped" (by a
 * signal) or "failed". */
static void summary(const tdm__cli_job *cj, const char *name, double secs,
                    const char *how)
{
    summary_counts(cj, name, secs, how);
    summary_drops(cj);
    summary_progress(cj->job);
}

/* Installs (or, with @p on == 0, restores) the stop handlers. */
static void handle_signals(int on)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    if (on) {
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND;
    } else {
        sa.sa_handler = SIG_DFL;
    }
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_flags = 0;
    sa.sa_handler = on ? on_savepoint_signal : SIG_DFL;
    sigaction(SIGUSR1, &sa, NULL);
}

/* What `run` adds to a loaded job: --log-level (the job key log.level,
 * set last) and --from-scratch; then validation.  Returns an exit code. */
static int finish_job(tdm__cli_job *cj, const http_opts *http,
                      const char *log_level)
{
    int rc = TDM_EXIT_OK;
    if (log_level != NULL) {
        char arg[128];
        snprintf(arg, sizeof arg, "log.level=%s", log_level);
        rc = tdm__cli_job_override(cj, arg, stderr);
    }
    if (rc == TDM_EXIT_OK && http->from_scratch) {
        char arg[] = "checkpoint.restore=none";
        rc = tdm__cli_job_override(cj, arg, stderr);
    }
    return rc == TDM_EXIT_OK ? tdm__cli_job_validate(cj, stderr) : rc;
}

/* Loads the job of `run` (see tdm__cli_job_prepare), then applies
 * --log-level (the job key log.level, set last) and --from-scratch and
 * validates it.  Returns an exit code; *cj is set (possibly NULL). */
static int load_job(const tdm__cli_opts *opts, const http_opts *http,
                    const char *log_level, tdm__cli_job **cj)
{
    int rc = tdm__cli_job_prepare(opts, cj, stderr);
    if (rc == TDM_EXIT_OK && !(*cj)->no_query)
        rc = finish_job(*cj, http, log_level);
    if (rc == TDM_EXIT_INVALID && *cj != NULL)
        fprintf(stderr, "%s: invalid job (%d error%s), not run\n", opts->file,
                (*cj)->errors, (*cj)->errors == 1 ? "" : "s");
    return rc;
}

/* The server of a task host (run_tasks.c calls it once the host
 * exists, before it runs): --http serves the host's tasks. */
static int serve_tasks(void *ud, tdm_taskhost *host, tdm_job *def,
                       tdm_http **srv)
{
    const http_opts *http = ud;
    const char *name = tdm_job_get(def, "name");
    *srv = NULL;
    if (http->addr == NULL)
        return TDM_EXIT_OK;
    return start_http(def, host, http, name && name[0] ? name : "job", srv);
}

/* `run` of a job with scale_out: tasks (run_tasks.c).  Options that
 * serve one job do not apply: refused. */
static int run_as_tasks(const tdm__cli_opts *opts, const http_opts *http,
                        tdm__cli_job *cj, const char *log_level)
{
    if (http->linger || http->from_scratch) {
        fprintf(stderr,
                "tidemark run: %s does not apply to scale_out: tasks "
                "(%s; docs/scale-out.md)\n",
                http->linger ? "--http-linger" : "--from-scratch",
                http->linger ? "a task host serves its tasks while they run, "
                               "and they stop with it"
                             : "each task is a job of its own, restored "
                               "wherever the group moves it");
        return TDM_EXIT_USAGE;
    }
    return tdm__cli_run_tasks(opts, cj, log_level, serve_tasks, (void *)http);
}

/* Erases the status line, if one is shown. */
static void clear_status(status *st)
{
    pthread_mutex_lock(&st->mu);
    if (st->shown) {
        fputs("\r\033[K", stderr);
        st->shown = 0;
    }
    pthread_mutex_unlock(&st->mu);
}

/* The exit code of a run that returned @p err, its message printed. */
static int run_result(tdm__cli_job *cj, tdm_err err, const char *msg)
{
    switch (err) {
    case TDM_OK:
        return TDM_EXIT_OK;
    case TDM_ERR_INVAL:
        tdm__cli_job_report(cj, NULL, NULL, msg[0] ? msg : "invalid job",
                            stderr);
        return TDM_EXIT_INVALID;
    default:
        fprintf(stderr, "tidemark: %s\n", msg[0] ? msg : tdm_strerror(err));
        return TDM_EXIT_RUNTIME;
    }
}

/* Runs a loaded and validated job: the status line, the log, the
 * server, the signals, the summary and --http-linger.  *srv is the
 * server it started (the caller stops it).  Returns an exit code. */
static int run_loaded(tdm__cli_job *cj, const tdm__cli_opts *opts,
                      const http_opts *http, status *st, tdm_http **srv)
{
    char msg[1024] = "";
    const char *name;
    double t0;
    int rc;
    name = tdm__cli_job_value(cj, NULL, "name");
    st->name = name != NULL && name[0] != '\0' ? name : "job";
    st->live = !opts->quiet && isatty(STDERR_FILENO);
    st->last_t = mono_now();
    if (tdm_job_set_log(cj->job, on_log, st) != TDM_OK ||
        (st->live &&
         tdm_job_set_progress(cj->job, on_progress, st) != TDM_OK)) {
        fprintf(stderr, "tidemark: out of memory\n");
        rc = TDM_EXIT_RUNTIME;
        return rc;
    }
    if (http->addr != NULL &&
        (rc = start_http(cj->job, NULL, http, st->name, srv)) != TDM_EXIT_OK) {
        return rc;
    }
    t0 = mono_now();
    running_job = cj->job;
    handle_signals(1);
    tdm_err err = tdm_job_run(cj->job, msg, sizeof msg);
    handle_signals(0);
    running_job = NULL;

    clear_status(st);
    rc = run_result(cj, err, msg);
    if (err == TDM_OK || err == TDM_ERR_IO) {
        summary(cj, st->name, mono_now() - t0,
                err != TDM_OK    ? "failed"
                : stop_requested ? "stopped"
                                 : "finished");
    }
    if (*srv != NULL && http->linger && !stop_requested) {
        fprintf(stderr,
                "tidemark: job \"%s\" ended; still serving on port "
                "%d (Ctrl-C to quit)\n",
                st->name, tdm_http_port(*srv));
        fflush(stderr);
        linger();
    }
    return rc;
}

/* What the shell's queries run with: the command line of `sql`. */
typedef struct shell_run {
    const tdm__cli_opts *opts;
    const http_opts *http;
} shell_run;

/* The shell's query runner (tdm__cli_sql_shell): the command line's
 * overrides, validation, then the run, which Ctrl-C stops (back to the
 * prompt). */
static int run_shell_query(void *ud, tdm__cli_job *cj)
{
    const shell_run *sr = ud;
    const tdm__cli_opts *opts = sr->opts;
    http_opts http = *sr->http;
    status st;
    tdm_http *srv = NULL;
    int rc = tdm__cli_job_overrides(opts, cj, stderr);
    if (rc == TDM_EXIT_OK) {
        rc = finish_job(cj, &http, http.log_level);
    }
    if (rc != TDM_EXIT_OK) {
        return rc;
    }
    http.linger = 0;
    stop_requested = 0;
    memset(&st, 0, sizeof st);
    pthread_mutex_init(&st.mu, NULL);
    rc = run_loaded(cj, opts, &http, &st, &srv);
    tdm_http_stop(srv);
    pthread_mutex_destroy(&st.mu);
    return rc;
}

/* Runs `tidemark run` (argv after the command name).  Returns
 * TDM_EXIT_OK (also after a clean stop by signal), TDM_EXIT_RUNTIME (I/O
 * or memory), TDM_EXIT_USAGE or TDM_EXIT_INVALID. */
int tdm__cli_cmd_run(int argc, char **argv)
{
    return tdm__cli_run_command(argc, argv, "run", NULL);
}

/* `run` and `sql` (see cli.h). */
int tdm__cli_run_command(int argc, char **argv, const char *cmd,
                         const tdm__cli_sql_opts *sql)
{
    tdm__cli_opts opts;
    tdm__cli_job *cj = NULL;
    status st;
    http_opts http;
    tdm_http *srv = NULL;
    int rc = take_run_opts(&argc, argv, &http);
    const char *log_level;

    log_level = http.log_level;

    if (rc == TDM_EXIT_OK)
        rc = tdm__cli_opts_parse(argc, argv, cmd, 1, &opts);
    else
        memset(&opts, 0, sizeof opts);
    opts.sql = sql != NULL;
    opts.explain = sql != NULL && sql->explain;
    opts.sql_init = sql != NULL ? sql->init : NULL;

    memset(&st, 0, sizeof st);
    pthread_mutex_init(&st.mu, NULL);
    if (rc != TDM_EXIT_OK || opts.help) {
        if (rc == TDM_EXIT_OK) {
            rc = tdm__cli_help(cmd, stdout);
        }
        goto out;
    }
    if (opts.sql && opts.file == NULL) { /* `tidemark sql`: the shell. */
        shell_run sr = {.opts = &opts, .http = &http};
        if (http.linger || http.from_scratch || opts.explain) {
            fprintf(stderr, "tidemark sql: %s needs a script\n",
                    http.linger         ? "--http-linger"
                    : http.from_scratch ? "--from-scratch"
                                        : "--explain");
            rc = TDM_EXIT_USAGE;
        } else {
            rc = tdm__cli_sql_shell(opts.sql_init, run_shell_query, &sr);
        }
        goto out;
    }
    rc = load_job(&opts, &http, log_level, &cj);
    if (rc != TDM_EXIT_OK || cj->no_query)
        goto out; /* A script of DDL and EXPLAIN has nothing to run. */
    if (strcmp(tdm_job_get(cj->job, "scale_out"), "tasks") == 0) {
        rc = run_as_tasks(&opts, &http, cj, log_level);
        goto out;
    }
    rc = run_loaded(cj, &opts, &http, &st, &srv);
out:
    tdm_http_stop(srv);
    tdm__cli_job_free(cj);
    free(opts.sets);
    pthread_mutex_destroy(&st.mu);
    return rc;
}
