/* SPDX-License-Identifier: MIT */
/* cmd_diagnose.c - `tidemark diagnose URL`: asks a job served by
 * `tidemark run --http` what holds its windows back, and prints the
 * findings (or, with --window and --key, whether one window fired and
 * what it waits for) as readable text or raw JSON, through the commands'
 * HTTP client (cli_http.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "cli_http.h"

/* GETs @p path from @p u and parses the JSON answer (cli_http.h). */
static json_t *get_json(const tdm__cli_url *u, const char *path,
                        const char *token, int timeout_s, char **raw)
{
    tdm__cli_req q = {"GET", path, token, NULL, timeout_s};
    return tdm__cli_http_json(u, &q, raw);
}

/* ====================================================================== */
/* Times and durations on the command line                                 */
/* ====================================================================== */

/* Days from 1970-01-01 to year/month/day (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Parses epoch ms or ISO-8601 "YYYY-MM-DDTHH:MM[:SS[.fff]][Z|+HH:MM]"
 * (no zone: UTC).  Returns 0 or -1. */
static int parse_time(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, sec = 0, ms = 0, n = 0;
    char *e;
    if (strspn(s, "-0123456789") == strlen(s) && *s) {
        errno = 0;
        long long v = strtoll(s, &e, 10);
        if (errno != 0 || *e) {
            return -1;
        }
        *out = v;
        return 0;
    }
    if (sscanf(s, "%4d-%2d-%2d%*1[T ]%2d:%2d%n", &y, &mo, &d, &h, &mi, &n) !=
            5 ||
        n == 0) {
        return -1;
    }
    s += n;
    if (*s == ':') {
        if (s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9') {
            return -1;
        }
        sec = (s[1] - '0') * 10 + (s[2] - '0');
        s += 3;
        if (*s == '.') {
            int digits = 0;
            s++;
            while (*s >= '0' && *s <= '9') {
                if (digits < 3) {
                    ms = ms * 10 + (*s - '0');
                }
                digits++;
                s++;
            }
            if (digits == 0) {
                return -1;
            }
            for (; digits < 3; digits++) {
                ms *= 10;
            }
        }
    }
    int64_t off = 0;
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int oh, om;
        if (sscanf(s + 1, "%2d:%2d", &oh, &om) != 2 || strlen(s) != 6) {
            return -1;
        }
        off = (*s == '+' ? 1 : -1) * ((int64_t)oh * 60 + om) * 60000;
        s += 6;
    }
    if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        sec > 60) {
        return -1;
    }
    *out = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 +
           (int64_t)sec * 1000 + ms - off;
    return 0;
}

/* Parses a duration: "5m", "30s", "250ms", "1h30m", "2d", bare ms.
 * Returns 0 or -1 (also for 0 or overflow). */
static int parse_duration(const char *s, int64_t *out)
{
    int64_t total = 0;
    if (!*s) {
        return -1;
    }
    while (*s) {
        char *e;
        errno = 0;
        long long v = strtoll(s, &e, 10);
        if (e == s || errno != 0 || v < 0) {
            return -1;
        }
        int64_t unit;
        if (strncmp(e, "ms", 2) == 0) {
            unit = 1, e += 2;
        } else if (*e == 's') {
            unit = 1000, e++;
        } else if (*e == 'm') {
            unit = 60000, e++;
        } else if (*e == 'h') {
            unit = 3600000, e++;
        } else if (*e == 'd') {
            unit = 86400000, e++;
        } else if (*e == '\0') {
            unit = 1;
        } else {
            return -1;
        }
        if (v > (INT64_MAX - total) / unit) {
            return -1;
        }
        total += v * unit;
        s = e;
    }
    if (total <= 0) {
        return -1;
    }
    *out = total;
    return 0;
}

/* ====================================================================== */
/* Text output                                                             */
/* ====================================================================== */

/* Prints @p text wrapped at 78 columns: the first line after @p first,
 * the following ones indented by @p indent spaces. */
static void wrap(FILE *f, const char *first, int indent, const char *text)
{
    int col = fprintf(f, "%s", first), fresh = 1;
    const char *p = text;
    while (*p == ' ') {
        p++;
    }
    while (*p) {
        size_t wl = strcspn(p, " ");
        if (!fresh && col + 1 + (int)wl > 78) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            fresh = 1;
        }
        if (!fresh) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, wl, f);
        col += (int)wl;
        fresh = 0;
        p += wl;
        while (*p == ' ') {
            p++;
        }
    }
    fputc('\n', f);
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* Prints a diagnosis object as numbered findings. */
static void print_diagnosis(const json_t *d)
{
    char t[64], lead[64];
    const json_t *findings = json_object_get(d, "findings");
    json_t *now = json_object_get(d, "now");
    printf("Diagnosis of job \"%s\"%s%s%s:\n\n", jstr(d, "job"),
           json_is_true(json_object_get(d, "running")) ? " (running)"
                                                       : " (not running)",
           json_is_integer(now) ? " at " : "",
           json_is_integer(now)
               ? tdm__cli_iso_time(json_integer_value(now), t, sizeof t)
               : "");
    size_t i;
    json_t *f;
    json_array_foreach(findings, i, f)
    {
        char sev[16];
        size_t k;
        const char *s = jstr(f, "severity");
        for (k = 0; s[k] && k + 1 < sizeof sev; k++) {
            sev[k] = (char)(s[k] >= 'a' && s[k] <= 'z' ? s[k] - 32 : s[k]);
        }
        sev[k] = '\0';
        snprintf(lead, sizeof lead, "%zu. [%s] ", i + 1, sev);
        wrap(stdout, lead, 4, jstr(f, "title"));
        printf("    (%s)\n", jstr(f, "code"));
        json_t *e;
        size_t j;
        json_array_foreach(json_object_get(f, "evidence"), j, e)
        {
            wrap(stdout, "    - ", 6,
                 json_string_value(e) ? json_string_value(e) : "");
        }
        if (*jstr(f, "fix")) {
            wrap(stdout, "    fix: ", 9, jstr(f, "fix"));
        }
        printf("\n");
    }
    if (json_array_size(findings) == 0) {
        printf("No findings.\n");
    }
}

/* Prints a window explanation. */
static void print_window(const json_t *w)
{
    char a[64], b[64];
    const json_t *fj = json_object_get(w, "fired");
    /* null: a blocked subtask, answered for by its published figures. */
    const char *state = json_is_null(fj)   ? "blocked (backpressure)"
                        : json_is_true(fj) ? "fired"
                                           : "not fired";
    printf("Window [%s, %s) of key \"%s\" at %s: %s\n",
           tdm__cli_iso_time(json_integer_value(json_object_get(w, "start")), a,
                             sizeof a),
           tdm__cli_iso_time(json_integer_value(json_object_get(w, "end")), b,
                             sizeof b),
           jstr(w, "key"), jstr(w, "vertex"), state);
    wrap(stdout, "  ", 2, jstr(w, "verdict"));
    if (json_is_string(json_object_get(w, "waiting_for"))) {
        wrap(stdout, "  waiting for: ", 4, jstr(w, "waiting_for"));
    }
    printf("  evidence:\n");
    size_t j;
    json_t *e;
    json_array_foreach(json_object_get(w, "evidence"), j, e)
    {
        wrap(stdout, "    - ", 6,
             json_string_value(e) ? json_string_value(e) : "");
    }
}

/* ====================================================================== */
/* The command                                                             */
/* ====================================================================== */

typedef struct dg_opts {
    const char *url, *job, *window, *key, *vertex, *token;
    int json, timeout_s, help;
} dg_opts;

static int parse_opts(int argc, char **argv, dg_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_s = 10;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], *v;
        int missing = 0;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            o->help = 1;
        } else if (strcmp(arg, "--json") == 0) {
            o->json = 1;
        } else if ((v = tdm__cli_opt_value(argc, argv, &i, "--job",
                                           &missing))) {
            o->job = v;
        } else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i,
                                                       "--window", &missing))) {
            o->window = v;
        } else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i, "--key",
                                                       &missing))) {
            o->key = v;
        } else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i,
                                                       "--vertex", &missing))) {
            o->vertex = v;
        } else if (!missing && (v = tdm__cli_opt_value(argc, argv, &i,
                                                       "--token", &missing))) {
            o->token = v;
        } else if (!missing && (v = tdm__cli_opt_value(
                                    argc, argv, &i, "--timeout", &missing))) {
            char *e;
            long t = strtol(v, &e, 10);
            if (*e || t < 1 || t > 3600) {
                fprintf(stderr,
                        "tidemark diagnose: --timeout: expected "
                        "seconds from 1 to 3600, got \"%s\"\n",
                        v);
                return TDM_EXIT_USAGE;
            }
            o->timeout_s = (int)t;
        } else if (missing) {
            fprintf(stderr,
                    "tidemark diagnose: %s needs a value (see "
                    "`tidemark help diagnose`)\n",
                    arg);
            return TDM_EXIT_USAGE;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            fprintf(stderr,
                    "tidemark diagnose: unknown option %s (see "
                    "`tidemark help diagnose`)\n",
                    arg);
            return TDM_EXIT_USAGE;
        } else if (o->url == NULL) {
            o->url = arg;
        } else {
            fprintf(stderr,
                    "tidemark diagnose: one URL expected, got "
                    "\"%s\" and \"%s\"\n",
                    o->url, arg);
            return TDM_EXIT_USAGE;
        }
    }
    if (o->help) {
        return TDM_EXIT_OK;
    }
    if (o->url == NULL) {
        fprintf(stderr, "tidemark diagnose: no URL given (usage: tidemark "
                        "diagnose http://127.0.0.1:8081; see `tidemark "
                        "help diagnose`)\n");
        return TDM_EXIT_USAGE;
    }
    if ((o->window == NULL) != (o->key == NULL)) {
        fprintf(stderr, "tidemark diagnose: --window and --key go "
                        "together\n");
        return TDM_EXIT_USAGE;
    }
    if (o->vertex != NULL && o->window == NULL) {
        fprintf(stderr, "tidemark diagnose: --vertex needs --window and "
                        "--key\n");
        return TDM_EXIT_USAGE;
    }
    return TDM_EXIT_OK;
}

/* 1 when the diagnosis @p j holds a critical finding. */
static int has_critical(json_t *j)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(j, "findings"), i, f)
    {
        if (strcmp(jstr(f, "severity"), "critical") == 0) {
            return 1;
        }
    }
    return 0;
}

/* Picks the window vertex: --vertex, or the job's only window. */
static int pick_vertex(const tdm__cli_url *u, const dg_opts *o,
                       const char *path, char *name, size_t n)
{
    if (o->vertex != NULL) {
        snprintf(name, n, "%s", o->vertex);
        return TDM_EXIT_OK;
    }
    json_t *job = get_json(u, path, o->token, o->timeout_s, NULL);
    if (job == NULL) {
        return TDM_EXIT_RUNTIME;
    }
    size_t i, count = 0;
    json_t *v;
    json_array_foreach(json_object_get(job, "vertices"), i, v)
    {
        if (strcmp(jstr(v, "kind"), "window") == 0 && count++ == 0) {
            snprintf(name, n, "%s", jstr(v, "id"));
        }
    }
    if (count != 1) {
        fprintf(stderr,
                "tidemark diagnose: the job has %zu windows; "
                "choose one with --vertex",
                count);
        json_array_foreach(json_object_get(job, "vertices"), i, v)
        {
            if (strcmp(jstr(v, "kind"), "window") == 0) {
                fprintf(stderr, " %s", jstr(v, "id"));
            }
        }
        fprintf(stderr, "\n");
        json_decref(job);
        return TDM_EXIT_RUNTIME;
    }
    json_decref(job);
    return TDM_EXIT_OK;
}

/* Runs `tidemark diagnose` (argv after the command name).  Returns
 * TDM_EXIT_OK when an answer was printed, TDM_EXIT_CRITICAL when that
 * diagnosis holds a critical finding, TDM_EXIT_RUNTIME when the server
 * could not be reached or refused, TDM_EXIT_USAGE on a bad command
 * line. */
int tdm__cli_cmd_diagnose(int argc, char **argv)
{
    dg_opts o;
    tdm__cli_url u;
    char id[256], path[2048], vertex[256];
    int64_t start = 0, len = 0;
    int rc = parse_opts(argc, argv, &o);
    if (rc != TDM_EXIT_OK || o.help) {
        return rc != TDM_EXIT_OK ? rc : tdm__cli_help("diagnose", stdout);
    }
    if (tdm__cli_url_parse("tidemark diagnose", o.url, &u) != 0) {
        return TDM_EXIT_USAGE;
    }
    if (o.window != NULL) {
        const char *slash = strrchr(o.window, '/');
        char st[128];
        if (slash == NULL || (size_t)(slash - o.window) >= sizeof st) {
            fprintf(stderr,
                    "tidemark diagnose: --window: expected "
                    "START/DURATION such as "
                    "2026-12-02T10:00:00Z/5m, got \"%s\"\n",
                    o.window);
            return TDM_EXIT_USAGE;
        }
        snprintf(st, sizeof st, "%.*s", (int)(slash - o.window), o.window);
        if (parse_time(st, &start) != 0) {
            fprintf(stderr,
                    "tidemark diagnose: --window: bad start \"%s\" "
                    "(ISO-8601 such as 2026-12-02T10:00:00Z, or "
                    "epoch ms)\n",
                    st);
            return TDM_EXIT_USAGE;
        }
        if (parse_duration(slash + 1, &len) != 0 || start > INT64_MAX - len) {
            fprintf(stderr,
                    "tidemark diagnose: --window: bad duration "
                    "\"%s\" (such as 5m, 30s, 1h, 250ms)\n",
                    slash + 1);
            return TDM_EXIT_USAGE;
        }
    }
    rc = tdm__cli_pick_job(&u, o.job, o.token, o.timeout_s, id, sizeof id);
    if (rc != TDM_EXIT_OK) {
        return rc;
    }
    strcpy(path, "/jobs/");
    if (tdm__cli_pct_append(path, sizeof path, id) != 0) {
        fprintf(stderr, "tidemark diagnose: job id too long\n");
        return TDM_EXIT_USAGE;
    }
    if (o.window != NULL) {
        char num[64];
        rc = pick_vertex(&u, &o, path, vertex, sizeof vertex);
        if (rc != TDM_EXIT_OK) {
            return rc;
        }
        snprintf(num, sizeof num, "&start=%lld&end=%lld", (long long)start,
                 (long long)(start + len));
        if (strlen(path) + 20 >= sizeof path) {
            return TDM_EXIT_USAGE;
        }
        strcat(path, "/windows?vertex=");
        if (tdm__cli_pct_append(path, sizeof path, vertex) != 0 ||
            strlen(path) + 6 >= sizeof path) {
            fprintf(stderr, "tidemark diagnose: arguments too long\n");
            return TDM_EXIT_USAGE;
        }
        strcat(path, "&key=");
        if (tdm__cli_pct_append(path, sizeof path, o.key) != 0 ||
            strlen(path) + strlen(num) >= sizeof path) {
            fprintf(stderr, "tidemark diagnose: arguments too long\n");
            return TDM_EXIT_USAGE;
        }
        strcat(path, num);
    } else {
        strcat(path, "/diagnosis");
    }
    char *raw = NULL;
    json_t *j = get_json(&u, path, o.token, o.timeout_s, &raw);
    if (j == NULL) {
        return TDM_EXIT_RUNTIME;
    }
    if (o.json) {
        size_t n = strlen(raw);
        fputs(raw, stdout);
        if (n == 0 || raw[n - 1] != '\n') {
            fputc('\n', stdout);
        }
    } else if (o.window != NULL) {
        print_window(j);
    } else {
        print_diagnosis(j);
    }
    /* R-CD-1: a critical finding fails a script or an alert's check. */
    int crit = o.window == NULL && has_critical(j);
    json_decref(j);
    free(raw);
    if (fflush(stdout) != 0)
        return TDM_EXIT_RUNTIME;
    return crit ? TDM_EXIT_CRITICAL : TDM_EXIT_OK;
}
