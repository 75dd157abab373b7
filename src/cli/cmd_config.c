/* SPDX-License-Identifier: MIT */
/* cmd_config.c - `tidemark config list [--markdown] [SCOPE]`: prints the
 * library's table of job keys (tdm_conf_describe), as text for people or
 * as the Markdown reference that follows the marker line in
 * docs/job-format.md (tests/cli/job_format.sh checks the two agree); and
 * `tidemark config metrics [--markdown]`: the table of metrics
 * (TDM_METRIC_MAP), whose Markdown form is the reference part of
 * docs/metrics.md (tests/cli/metrics_doc.sh checks it).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

/* The scopes in the order the reference lists them, with the heading and
 * the sentence that introduce each. */
static const struct {
    const char *scope, *title, *intro;
} scopes[] = {
    {"job", "Job keys",
     "Top-level keys of the job file (a nested map such as "
     "`timestamp_guard: {dead_letter: true}` flattens to dotted keys)."},
    {"source", "Source keys",
     "Keys of a node under `sources:`: where records come from, how they "
     "are parsed, and how timestamps and watermarks arise."},
    {"window", "Window keys",
     "Keys of a node under `windows:`: a keyed window with its trigger, "
     "lateness, aggregates and outputs."},
    {"join", "Join keys",
     "Keys of a node under `joins:`: an interval or window join of two "
     "sources."},
    {"sink", "Sink keys",
     "Keys of a node under `sinks:`: where result rows, late records and "
     "dead letters are written."},
};
#define N_SCOPES (sizeof scopes / sizeof scopes[0])

/* Prints @p s with Markdown table cells in mind: '|' escaped, newlines
 * turned into spaces. */
static void md_cell(const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '|') {
            fputs("\\|", stdout);
        } else if (*s == '\n') {
            putchar(' ');
        } else {
            putchar(*s);
        }
    }
}

/* Prints the type column: "duration (ms)", "one of `a`, `b`", ... */
static void print_type(const char *type, const char *unit, const char *choices,
                       int md)
{
    char lower[32];
    size_t i;
    for (i = 0; type[i] != '\0' && i + 1 < sizeof lower; i++) {
        lower[i] =
            (char)(type[i] >= 'A' && type[i] <= 'Z' ? type[i] + 32 : type[i]);
    }
    lower[i] = '\0';
    if (choices != NULL && choices[0] != '\0') {
        fputs("one of ", stdout);
        for (const char *p = choices; *p != '\0';) {
            size_t n = strcspn(p, "|");
            printf("%s%.*s%s", md ? "`" : "", (int)n, p, md ? "`" : "");
            p += n;
            if (*p == '|') {
                fputs(", ", stdout);
                p++;
            }
        }
        return;
    }
    fputs(lower, stdout);
    if (unit != NULL && unit[0] != '\0') {
        printf(" (%s)", unit);
    }
}

/* Prints @p text wrapped at 76 columns, each line indented by 4. */
static void wrap(const char *text)
{
    const char *p = text;
    while (*p != '\0') {
        size_t n = strlen(p);
        if (n > 72) {
            n = 72;
            while (n > 0 && p[n] != ' ') {
                n--;
            }
            if (n == 0) {
                n = strcspn(p, " ");
            }
        }
        printf("    %.*s\n", (int)n, p);
        p += n;
        while (*p == ' ') {
            p++;
        }
    }
}

/* Prints the keys of one scope. */
static void list_scope(size_t s, int md)
{
    const char *scope, *key, *type, *def, *unit, *choices, *desc;
    if (md) {
        printf("## %s\n\n%s\n\n", scopes[s].title, scopes[s].intro);
        printf("| key | type | default | description |\n");
        printf("|---|---|---|---|\n");
    } else {
        printf("%s:\n", scopes[s].title);
    }
    for (int i = 0; tdm_conf_describe(i, &scope, &key, &type, &def, &unit,
                                      &choices, &desc);
         i++) {
        if (scope == NULL || strcasecmp(scope, scopes[s].scope) != 0) {
            continue;
        }
        if (md) {
            printf("| `%s` | ", key);
            print_type(type != NULL ? type : "", unit, choices, 1);
            if (def != NULL && def[0] != '\0') {
                printf(" | `%s` | ", def);
            } else {
                printf(" | (unset) | ");
            }
            md_cell(desc != NULL ? desc : "");
            printf(" |\n");
        } else {
            printf("  %s = %s  [", key,
                   def != NULL && def[0] != '\0' ? def : "(unset)");
            print_type(type != NULL ? type : "", unit, choices, 0);
            printf("]\n");
            wrap(desc != NULL ? desc : "");
        }
    }
}

/* ---- Metrics ---- */

/* The metric scopes in the order the reference lists them, with what
 * identifies a value of each (its labels). */
static const struct {
    const char *scope, *title, *intro;
} mscopes[] = {
    {"JOB", "Job", "One value for the whole job. Labels: `job`."},
    {"VERTEX", "Subtask",
     "One value per subtask of a vertex (sources, windows, joins; sinks "
     "have `numRecordsIn` at subtask 0). Labels: `job`, `operator` (the "
     "node name), `subtask`."},
    {"INPUT", "Logical input",
     "One value per logical input of a window or join subtask: a join's "
     "left input is 1 and its right input 2, a window's inputs are its "
     "`from` list in order. Labels: `job`, `operator`, `subtask`, "
     "`input`."},
    {"CHANNEL", "Input channel",
     "One value per input channel of a window or join subtask: one "
     "channel per upstream source subtask. Labels: `job`, `operator`, "
     "`subtask`, `channel` (its index) and `from` (`source#subtask`)."},
    {"PARTITION", "Source partition",
     "One value per partition (split) a source subtask reads. Labels: "
     "`job`, `operator`, `subtask`, `partition` (its number within the "
     "source) and `partition_name` (a file path, the partition field's "
     "value, or the number)."},
};
#define N_MSCOPES (sizeof mscopes / sizeof mscopes[0])

/* Prints the table of metrics, grouped by scope: as text, or as the
 * Markdown reference of docs/metrics.md. */
static void list_metrics(int md)
{
    for (size_t s = 0; s < N_MSCOPES; s++) {
        if (md) {
            printf("%s## %s metrics (%s)\n\n%s\n\n", s ? "\n" : "",
                   mscopes[s].title, mscopes[s].scope, mscopes[s].intro);
            printf("| metric | Prometheus name | type | unit | "
                   "description |\n");
            printf("|---|---|---|---|---|\n");
        } else {
            printf("%s%s (%s):\n", s ? "\n" : "", mscopes[s].title,
                   mscopes[s].scope);
        }
        for (int id = 0; id < TDM_METRIC_COUNT_; id++) {
            const char *name = tdm_metric_name((tdm_metric)id);
            char prom[96], type[16];
            size_t i;
            if (strcmp(tdm_metric_scope((tdm_metric)id), mscopes[s].scope) !=
                0) {
                continue;
            }
            tdm_metric_prom_name((tdm_metric)id, prom, sizeof prom);
            const char *t = tdm_metric_type((tdm_metric)id);
            for (i = 0; t[i] != '\0' && i + 1 < sizeof type; i++) {
                type[i] = (char)(t[i] >= 'A' && t[i] <= 'Z' ? t[i] + 32 : t[i]);
            }
            type[i] = '\0';
            if (md) {
                printf("| `%s` | `%s` | %s | %s | ", name, prom, type,
                       tdm_metric_unit((tdm_metric)id));
                md_cell(tdm_metric_help((tdm_metric)id));
                printf(" |\n");
            } else {
                printf("  %s  [%s, %s]  %s\n", name, type,
                       tdm_metric_unit((tdm_metric)id), prom);
                wrap(tdm_metric_help((tdm_metric)id));
            }
        }
    }
}

/* Runs `tidemark config metrics [--markdown]`. */
static int cmd_metrics(int argc, char **argv)
{
    int md = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--markdown") == 0) {
            md = 1;
        } else if (strcmp(argv[i], "--help") == 0 ||
                   strcmp(argv[i], "-h") == 0) {
            return tdm__cli_help("config", stdout);
        } else {
            fprintf(stderr,
                    "tidemark config metrics: unexpected argument "
                    "\"%s\" (usage: tidemark config metrics "
                    "[--markdown])\n",
                    argv[i]);
            return TDM_EXIT_USAGE;
        }
    }
    list_metrics(md);
    return TDM_EXIT_OK;
}

/* Runs `tidemark config list` or `tidemark config metrics` (argv after
 * "config").  Returns TDM_EXIT_OK or TDM_EXIT_USAGE. */
int tdm__cli_cmd_config(int argc, char **argv)
{
    int md = 0;
    const char *only = NULL;
    if (argc >= 1 && strcmp(argv[0], "metrics") == 0) {
        return cmd_metrics(argc, argv);
    }
    if (argc < 1 || strcmp(argv[0], "list") != 0) {
        if (argc >= 1 &&
            (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
            return tdm__cli_help("config", stdout);
        }
        fprintf(stderr, "usage: tidemark config list [--markdown] "
                        "[SCOPE]\n       tidemark config metrics "
                        "[--markdown]\n");
        return TDM_EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--markdown") == 0) {
            md = 1;
        } else if (strcmp(argv[i], "--help") == 0 ||
                   strcmp(argv[i], "-h") == 0) {
            return tdm__cli_help("config", stdout);
        } else if (argv[i][0] != '-' && only == NULL) {
            only = argv[i];
        } else {
            fprintf(stderr,
                    "tidemark config list: unexpected argument "
                    "\"%s\" (usage: tidemark config list "
                    "[--markdown] [SCOPE])\n",
                    argv[i]);
            return TDM_EXIT_USAGE;
        }
    }
    int found = 0;
    for (size_t s = 0; s < N_SCOPES; s++) {
        if (only == NULL || strcmp(only, scopes[s].scope) == 0) {
            if (found) {
                putchar('\n');
            }
            list_scope(s, md);
            found = 1;
        }
    }
    if (!found) {
        fprintf(stderr,
                "tidemark config list: unknown scope \"%s\" "
                "(expected job, source, window, join or sink)\n",
                only);
        return TDM_EXIT_USAGE;
    }
    return TDM_EXIT_OK;
}
