/* SPDX-License-Identifier: MIT */
/* cli.h - what the pieces of the `tidemark` command share: exit codes, the
 * loaded job with the file locations of every key it set (so that errors
 * found later, by validation or --set, still point at file:line:col), the
 * option parser common to `run` and `validate`, and the commands.
 *
 * The CLI is a client of the library like any other: it uses only
 * tidemark.h (plus libyaml for the job file).
 */
#ifndef TDM_CLI_H
#define TDM_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tidemark.h"

/* ---- Exit codes (documented in --help and docs/cli.md) ---- */

#define TDM_EXIT_OK 0       /* success */
#define TDM_EXIT_RUNTIME 1  /* runtime failure: I/O, out of memory */
#define TDM_EXIT_USAGE 2    /* bad command line */
#define TDM_EXIT_INVALID 3  /* invalid job file or --set value */
#define TDM_EXIT_CRITICAL 4 /* diagnose: a critical finding was reported */

/* ---- A loaded job ---- */

/* One key the job file (or --set) gave a value: where and what. */
typedef struct tdm__cli_entry {
    char *node;         /* node name, NULL for a job key */
    tdm_node_kind kind; /* node kind (unused for job keys) */
    char *key;          /* the table key, e.g. "window.size" */
    char *value;        /* the text handed to the library */
    int line, col;      /* 1-based position of the key; 0 for --set */
    int vline, vcol;    /* position of the value */
} tdm__cli_entry;

/* One node declared in the job file. */
typedef struct tdm__cli_decl {
    char *name;
    tdm_node_kind kind;
    int line, col; /* position of the node's name */
} tdm__cli_decl;

/* An error waiting to be printed: the loader prints its errors sorted by
 * position once the whole file is read. */
typedef struct tdm__cli_msg {
    int line, col; /* 0 for --set, -1 for the whole file */
    size_t seq;    /* order of discovery, for a stable sort */
    char *text;    /* the whole line without the newline */
} tdm__cli_msg;

/* The job, built from a YAML file, plus the locations of what it set. */
typedef struct tdm__cli_job {
    tdm_job *job;
    char *file; /* the job file's path as given, for messages */
    tdm__cli_entry *entries;
    size_t n_entries, cap_entries;
    tdm__cli_decl *decls;
    size_t n_decls, cap_decls;
    int errors;                /* errors found so far */
    int no_query;              /* SQL: the script has nothing to run */
    struct tdm__cli_msg *msgs; /* errors not printed yet */
    size_t n_msgs, cap_msgs;
} tdm__cli_job;

/* Loads the YAML job file @p path into a new job (*out, always set, even
 * on failure, so the caller can destroy it).  Every problem is printed on
 * @p err as "file:line:col: key.path: what was expected" and counted in
 * (*out)->errors.  Returns TDM_EXIT_OK, TDM_EXIT_INVALID (syntax or key
 * errors), or TDM_EXIT_RUNTIME (the file cannot be read, out of memory). */
int tdm__cli_job_load(const char *path, tdm__cli_job **out, FILE *err);

/* Applies one `--set key=value` override (@p arg is "key=value"): a job
 * key, or "sources|windows|joins|sinks.NODE.key".  Prints a message on
 * @p err and returns TDM_EXIT_USAGE (no '=') or TDM_EXIT_INVALID (unknown
 * node or key, bad value); TDM_EXIT_OK otherwise. */
int tdm__cli_job_override(tdm__cli_job *cj, const char *arg, FILE *err);

/* Runs tdm_job_validate and, on failure, prints its message with the file
 * location of the key it names (best effort).  Returns TDM_EXIT_OK or
 * TDM_EXIT_INVALID. */
int tdm__cli_job_validate(tdm__cli_job *cj, FILE *err);

/* Prints a message about job @p cj at the value of (@p node, @p key)
 * when the file set it ("file:line:col: "), else at the node's name, else
 * at the file. */
void tdm__cli_job_report(tdm__cli_job *cj, const char *node, const char *key,
                         const char *msg, FILE *err);

/* The last value set for (@p node, @p key) (node NULL: a job key), or
 * NULL when neither the file nor --set gave one. */
const char *tdm__cli_job_value(const tdm__cli_job *cj, const char *node,
                               const char *key);

/* Building a job without a YAML file (the SQL loader, src/sql): an
 * empty job named after @p file (*out always set; TDM_EXIT_RUNTIME when
 * out of memory); nodes declared and keys set through the library with
 * the position that asked for them, problems recorded as the YAML loader
 * records them and printed, sorted, by tdm__cli_job_flush.  declare and
 * put return 0, or -1 when out of memory. */
int tdm__cli_job_new(const char *file, tdm__cli_job **out);
int tdm__cli_job_declare(tdm__cli_job *cj, FILE *err, tdm_node_kind kind,
                         const char *name, int line, int col);
int tdm__cli_job_put(tdm__cli_job *cj, FILE *err, tdm_node_kind kind,
                     const char *node, const char *key, const char *value,
                     int line, int col);
void tdm__cli_job_error(tdm__cli_job *cj, FILE *err, int line, int col,
                        const char *msg);
void tdm__cli_job_flush(tdm__cli_job *cj, FILE *err);

/* Reads a whole file ("-": standard input) of at most 16 MiB; returns
 * a NUL-terminated buffer (*len bytes before the NUL) or NULL with errno
 * set. */
char *tdm__cli_read_file(const char *path, size_t *len);

/* Destroys the job and its bookkeeping; NULL is fine. */
void tdm__cli_job_free(tdm__cli_job *cj);

/* ---- Options shared by `run` and `validate` ---- */

typedef struct tdm__cli_opts {
    const char *file;  /* the job file */
    const char **sets; /* --set arguments, in order */
    int n_sets;
    const char *parallelism; /* --parallelism N, or NULL */
    int quiet;               /* --quiet */
    int help;                /* --help */
    int sql;                 /* the file is a SQL script (`tidemark sql`) */
    int explain;             /* sql --explain: print the plans, run nothing */
    const char *sql_init;    /* sql -i FILE: a script run first, or NULL */
} tdm__cli_opts;

/* Starts the server of task host @p host (job definition @p def) into
 * *srv (NULL: none asked for); returns an exit code, the problem
 * printed. */
typedef int tdm__cli_serve_fn(void *ud, tdm_taskhost *host, tdm_job *def,
                              tdm_http **srv);

/* Runs job @p def (loaded and validated from @p opts, scale_out: tasks)
 * as a task host until a signal, the end of its tasks' input or a
 * failure (run_tasks.c), served by the server @p serve starts (may be
 * NULL).  Returns an exit code. */
int tdm__cli_run_tasks(const tdm__cli_opts *opts, tdm__cli_job *def,
                       const char *log_level, tdm__cli_serve_fn *serve,
                       void *serve_ud);

/* What `sql` adds to `run`'s options. */
typedef struct tdm__cli_sql_opts {
    int explain;      /* --explain: print every query's plan, run nothing */
    const char *init; /* -i FILE: a script of DDL run before the main one */
} tdm__cli_sql_opts;

/* `run` and `sql` (cmd_run.c): @p cmd names the command in messages;
 * @p sql (NULL for `run`) says the file is a SQL script and how to load
 * it. */
int tdm__cli_run_command(int argc, char **argv, const char *cmd,
                         const tdm__cli_sql_opts *sql);

/* `tidemark sql` without a script (sql_shell.c): runs @p init first
 * when not NULL, then statements from standard input, each query handed
 * to @p run (a tdm__sql_run_fn, sql.h: `int run(void *ud, tdm__cli_job
 * *cj)`).  Returns an exit code (on a terminal always TDM_EXIT_OK). */
int tdm__cli_sql_shell(const char *init, int (*run)(void *ud, tdm__cli_job *cj),
                       void *ud);

/* Parses the arguments after the command name.  @p allow_quiet says
 * whether --quiet is accepted.  Prints the problem and returns
 * TDM_EXIT_USAGE on a bad command line; TDM_EXIT_OK otherwise.  The caller
 * frees opts->sets with free(). */
int tdm__cli_opts_parse(int argc, char **argv, const char *cmd, int allow_quiet,
                        tdm__cli_opts *opts);

/* Loads the job named by @p opts and applies --parallelism and every
 * --set in order.  Returns an exit code; *out is set (possibly NULL). */
int tdm__cli_job_prepare(const tdm__cli_opts *opts, tdm__cli_job **out,
                         FILE *err);

/* Applies --parallelism and every --set of @p opts to a loaded job (a
 * SQL shell's query job gets them too).  Returns an exit code. */
int tdm__cli_job_overrides(const tdm__cli_opts *opts, tdm__cli_job *cj,
                           FILE *err);

/* ---- Small helpers ---- */

/* Edit distance (insertions, deletions, substitutions, adjacent
 * transpositions) between @p a and @p b, capped at @p cap + 1. */
int tdm__cli_distance(const char *a, const char *b, int cap);

/* Formats @p v with thousands separators into @p buf. */
const char *tdm__cli_thousands(int64_t v, char *buf, size_t n);

/* Formats a watermark as ISO-8601 UTC with milliseconds ("none" for
 * TDM_TIME_MIN, "end" for TDM_TIME_MAX). */
const char *tdm__cli_iso_time(tdm_time_ms t, char *buf, size_t n);
/* ISO-8601 UTC text of @p t (tdm_time_format with @p flags), @p min and
 * @p max for the two sentinels, "<t>ms" beyond four-digit years. */
const char *tdm__cli_time(tdm_time_ms t, unsigned flags, const char *min,
                          const char *max, char *buf, size_t n);

/* ---- Memory, messages, hashing (cli_util.c) ---- */

/* A copy of the @p len bytes of @p s, terminated; NULL when out of
 * memory.  free() it. */
char *tdm__cli_strndup(const char *s, size_t len);
/* Formats a message into @p errbuf (when not NULL and not empty) and
 * returns @p err, for `return tdm__cli_errf(buf, n, ERR, "...")`. */
tdm_err tdm__cli_errf(char *errbuf, size_t errbuf_size, tdm_err err,
                      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A 64-bit hash of @p n bytes whose low bits serve as a table index. */
uint64_t tdm__cli_hash_bytes(const void *p, size_t n);

/* ---- Commands (argv starts after the command name) ---- */

/* The functions of the command table (commands.def); each returns an exit
 * code. */
int tdm__cli_cmd_run(int argc, char **argv);
int tdm__cli_cmd_validate(int argc, char **argv);
int tdm__cli_cmd_sql(int argc, char **argv);
int tdm__cli_cmd_config(int argc, char **argv);
/* `tidemark diagnose` (cmd_diagnose.c). */
int tdm__cli_cmd_diagnose(int argc, char **argv);
/* `tidemark set URL KEY=VALUE...` (cmd_set.c). */
int tdm__cli_cmd_set(int argc, char **argv);
/* `tidemark analyze` (cmd_analyze.c). */
int tdm__cli_cmd_analyze(int argc, char **argv);
/* Takes the value of an option given as "--opt value" or "--opt=value"
 * (common.c): the value, advancing *i past it, or NULL when argv[*i] is
 * not @p name; *missing is set when the value is absent. */
const char *tdm__cli_opt_value(int argc, char **argv, int *i, const char *name,
                               int *missing);

/* ---- Help (help.c) ---- */

/* Prints help on @p topic (NULL: the overview) on @p f; returns
 * TDM_EXIT_OK, or TDM_EXIT_USAGE for an unknown topic (message on
 * stderr). */
int tdm__cli_help(const char *topic, FILE *f);
/* Prints the command names of the table, comma-separated, on @p f. */
void tdm__cli_help_names(FILE *f);

#endif /* TDM_CLI_H */
