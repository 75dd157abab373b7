/* SPDX-License-Identifier: MIT */
/* common.c - what `run` and `validate` share: their option parser, the
 * load-then-override sequence (job file, --parallelism, --set in order),
 * and small formatting helpers for the status line and the summary.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "sql/sql.h"

/* Takes the value of an option given as "--opt value" or "--opt=value".
 * Returns the value (advancing *i past it) or NULL when @p arg is not
 * @p name; *missing is set when the value is absent. */
const char *tdm__cli_opt_value(int argc, char **argv, int *i, const char *name,
                               int *missing)
{
    const char *arg = argv[*i];
    size_t nl = strlen(name);
    if (strncmp(arg, name, nl) != 0) {
        return NULL;
    }
    if (arg[nl] == '=') {
        return arg + nl + 1;
    }
    if (arg[nl] != '\0') {
        return NULL;
    }
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    (*i)++;
    return argv[*i];
}

/* Parses `run`/`validate` arguments (see cli.h). */
int tdm__cli_opts_parse(int argc, char **argv, const char *cmd, int allow_quiet,
                        tdm__cli_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->sets = calloc((size_t)argc + 1, sizeof *opts->sets);
    if (opts->sets == NULL) {
        fprintf(stderr, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], *v;
        int missing = 0;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            opts->help = 1;
        } else if (allow_quiet &&
                   (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0)) {
            opts->quiet = 1;
        } else if ((v = tdm__cli_opt_value(argc, argv, &i, "--set",
                                           &missing)) != NULL) {
            opts->sets[opts->n_sets++] = v;
        } else if ((v = tdm__cli_opt_value(argc, argv, &i, "--parallelism",
                                           &missing)) != NULL ||
                   (!missing && (v = tdm__cli_opt_value(argc, argv, &i, "-p",
                                                        &missing)) != NULL)) {
            opts->parallelism = v;
        } else if (missing) {
            fprintf(stderr,
                    "tidemark %s: %s needs a value (see `tidemark "
                    "help %s`)\n",
                    cmd, arg, cmd);
            return TDM_EXIT_USAGE;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            fprintf(stderr,
                    "tidemark %s: unknown option %s (see "
                    "`tidemark help %s`)\n",
                    cmd, arg, cmd);
            return TDM_EXIT_USAGE;
        } else if (opts->file == NULL) {
            opts->file = arg;
        } else {
            fprintf(stderr,
                    "tidemark %s: one job file expected, got \"%s\" "
                    "and \"%s\"\n",
                    cmd, opts->file, arg);
            return TDM_EXIT_USAGE;
        }
    }
    if (opts->file == NULL && !opts->help && strcmp(cmd, "sql") != 0) {
        fprintf(stderr,
                "tidemark %s: no job file given (usage: tidemark "
                "%s JOB.yaml; see `tidemark help %s`)\n",
                cmd, cmd, cmd);
        return TDM_EXIT_USAGE;
    }
    return TDM_EXIT_OK;
}

/* Loads the job and applies the command-line overrides (see cli.h).  Every
 * --set is tried even after one fails, so all problems show at once. */
int tdm__cli_job_prepare(const tdm__cli_opts *opts, tdm__cli_job **out,
                         FILE *err)
{
    tdm__cli_job *cj = NULL;
    bool runs = true;
    int rc = opts->sql
                 ? tdm__sql_load(opts->sql_init, opts->file, opts->explain != 0,
                                 stdout, &cj, &runs, err)
                 : tdm__cli_job_load(opts->file, &cj, err);
    *out = cj;
    if (cj != NULL && !runs) {
        cj->no_query = 1;
    }
    return rc != TDM_EXIT_OK ? rc : tdm__cli_job_overrides(opts, cj, err);
}

/* Applies --parallelism and every --set in order (see cli.h).  Every
 * --set is tried even after one fails, so all problems show at once. */
int tdm__cli_job_overrides(const tdm__cli_opts *opts, tdm__cli_job *cj,
                           FILE *err)
{
    int rc = TDM_EXIT_OK;
    if (opts->parallelism != NULL) {
        char arg[256];
        snprintf(arg, sizeof arg, "parallelism=%s", opts->parallelism);
        rc = tdm__cli_job_override(cj, arg, err);
    }
    for (int i = 0; i < opts->n_sets; i++) {
        int r = tdm__cli_job_override(cj, opts->sets[i], err);
        if (r == TDM_EXIT_RUNTIME || (r != TDM_EXIT_OK && rc == 0)) {
            rc = r;
        }
    }
    return rc;
}

/* Formats @p v as "1,234,567" (see cli.h). */
const char *tdm__cli_thousands(int64_t v, char *buf, size_t n)
{
    char digits[32];
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)u);
    size_t o = 0;
    if (n == 0) {
        return buf;
    }
    if (v < 0 && o + 1 < n) {
        buf[o++] = '-';
    }
    for (int i = 0; i < nd && o + 1 < n; i++) {
        if (i > 0 && (nd - i) % 3 == 0 && o + 2 < n) {
            buf[o++] = ',';
        }
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}
