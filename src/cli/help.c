/* SPDX-License-Identifier: MIT */
/* help.c - the help texts of the `tidemark` command: the overview
 * (`tidemark`, `tidemark --help`, `tidemark help`) and each command's own
 * text (`tidemark help CMD`, `tidemark CMD --help`).
 *
 * The overview's list of commands is printed from the command table
 * (commands.def: the synopsis and summary columns); everything else is
 * text kept here.  Invariant: this file knows the commands' names and
 * words only, never their functions, so the commands (cmd_*.c) can print
 * their help without calling up into main.c, which dispatches to them.
 * The tests/cli goldens hold every text byte for byte.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* ---- The overview ---- */

/* Before the list of commands. */
static const char overview_head[] =
    "usage: tidemark <command> [arguments]\n"
    "\n"
    "tidemark runs event-time stream processing jobs described in a YAML\n"
    "file, with Apache Flink's watermark, window, lateness and join\n"
    "semantics, in parallel on worker threads.\n"
    "\n"
    "Commands:\n";

/* After the list of commands: the help command, options, exit codes. */
static const char overview_tail[] =
    "  help [COMMAND]      help on a command (run, validate, config,\n"
    "                      diagnose, analyze)\n"
    "\n"
    "Options:\n"
    "  -h, --help          print this help\n"
    "  --version           print the version\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  runtime failure: an input or output file could not be read or\n"
    "     written, or memory ran out\n"
    "  2  usage error: a bad command line\n"
    "  3  invalid job: a YAML syntax error, an unknown key, a bad value or\n"
    "     an inconsistent graph; the message gives file:line:column\n"
    "\n"
    "Examples:\n"
    "  tidemark run examples/clicks10s.yaml\n"
    "  tidemark run examples/uv.yaml --parallelism 4\n"
    "  tidemark validate examples/orders_payments.yaml\n"
    "  tidemark config list --markdown\n"
    "\n"
    "The job format is described in docs/job-format.md, the commands in\n"
    "docs/cli.md.\n";

/* ---- Each command's text (the help column of commands.def) ---- */

static const char help_sql[] =
    "usage: tidemark sql [SCRIPT.sql] [-i INIT.sql] [--explain] [run's "
    "options]\n"
    "\n"
    "Runs a script of Flink SQL statements ended by ';' as one job:\n"
    "CREATE TABLE (with WATERMARK FOR and WITH options), SET, INSERT INTO\n"
    "and bare SELECT (rows printed as they fire), EXPLAIN, SHOW TABLES and\n"
    "DESCRIBE.  Queries may window with TUMBLE, HOP and SESSION (table\n"
    "functions or GROUP BY TUMBLE(...)) and CUMULATE (a table function).\n"
    "The script compiles into the job a YAML file would describe: EXPLAIN\n"
    "prints it.  SCRIPT.sql may be -\n"
    "(standard input).  Errors show the line, the column and a caret.\n"
    "\n"
    "Without SCRIPT.sql it is a shell: statements typed one by one (line\n"
    "editing and history), each query run as a job whose rows print as\n"
    "they fire until Ctrl-C; QUIT; leaves.\n"
    "\n"
    "Options:\n"
    "  -i, --init INIT.sql run this script of DDL and SET first\n"
    "  --explain           print every query's plan and job; run nothing\n"
    "  and every option of `tidemark run` (--set, -p, --quiet, --http, ...)\n"
    "\n"
    "Exit codes: as `tidemark run`; 3 for an invalid script.\n"
    "\n"
    "docs/sql.md describes the dialect, its functions and connectors.\n";

static const char help_run[] =
    "usage: tidemark run JOB.yaml [--set KEY=VALUE ...] [--parallelism N]\n"
    "                    [--quiet] [--log-level info|debug]\n"
    "                    [--http ADDR [--http-token-file FILE]\n"
    "                     [--http-token TOKEN] [--http-linger]]\n"
    "                    [--from-scratch]\n"
    "\n"
    "Runs the job to the end of its input.  Bounded input ends with the\n"
    "maximum watermark, which fires every remaining window; sinks flush\n"
    "and a one-paragraph summary goes to stderr (records in and out, late\n"
    "records dropped and sent to the late output, bad records, timestamp\n"
    "guard hits, time and rate).  SIGINT (Ctrl-C) or SIGTERM stops the job\n"
    "the same way; a second Ctrl-C kills it at once.\n"
    "\n"
    "With checkpoint.dir set, the job takes a checkpoint every\n"
    "checkpoint.interval, file sinks write exactly-once parts, and a run\n"
    "resumes from the newest valid checkpoint (after a crash or kill -9,\n"
    "the output equals that of an uninterrupted run).  SIGUSR1 takes a\n"
    "savepoint (a checkpoint that retention keeps).\n"
    "\n"
    "On a terminal a status line on stderr shows records in and out, the\n"
    "input rate, the current watermark (ISO time and epoch ms), how far it\n"
    "lags behind the wall clock, and the late counts.\n"
    "\n"
    "Options:\n"
    "  --set KEY=VALUE     override a key of the job file; KEY is a job key\n"
    "                      (parallelism, timestamp_guard, ...) or\n"
    "                      SECTION.NODE.KEY, e.g.\n"
    "                      windows.uv.allowed_lateness=1m; repeatable\n"
    "  -p, --parallelism N  subtasks per operator (same as\n"
    "                      --set parallelism=N)\n"
    "  -q, --quiet         no status line\n"
    "  --log-level debug   log every watermark advance and window firing\n"
    "                      (key=value lines, easy to grep)\n"
    "  --http ADDR         serve the REST API, /metrics and the web page on\n"
    "                      ADDR (127.0.0.1:8081, [::1]:8081, :8081 =\n"
    "                      loopback, port 0 = any free port)\n"
    "  --http-token-file FILE  require \"Authorization: Bearer TOKEN\"\n"
    "                      with the TOKEN in FILE (the environment\n"
    "                      variable TIDEMARK_HTTP_TOKEN does the same)\n"
    "  --http-token TOKEN  the same with TOKEN given here, where `ps`\n"
    "                      shows it to every user of the machine\n"
    "  --http-linger       keep serving the final values after the job\n"
    "                      ends, until SIGINT/SIGTERM\n"
    "  --from-scratch      with checkpoint.dir set: do not resume from the\n"
    "                      newest checkpoint there; at the new run's first\n"
    "                      checkpoint file sinks move the old output into\n"
    "                      PATH.replaced-<id>/ (never deleted); same as\n"
    "                      --set checkpoint.restore=none\n"
    "  -h, --help          print this help\n"
    "\n"
    "A job with scale_out: tasks runs as a task host: it joins the job's\n"
    "consumer group and runs each task (partition number) the group gives\n"
    "it, restored from checkpoint.dir/task-<n> (docs/scale-out.md).\n"
    "\n"
    "Exit codes: 0 success (also after Ctrl-C), 1 runtime failure (I/O,\n"
    "memory), 2 usage error, 3 invalid job.\n"
    "\n"
    "Examples:\n"
    "  # 10 s click counts per page, results on stdout:\n"
    "  tidemark run examples/clicks10s.yaml\n"
    "\n"
    "  # 5-minute unique visitors per page on 4 subtasks per operator:\n"
    "  tidemark run examples/uv.yaml --parallelism 4\n"
    "\n"
    "  # See every window stall behind an idle partition:\n"
    "  tidemark run examples/idle.yaml \\\n"
    "      --set sources.clicks.watermark.idle_timeout=0\n"
    "\n"
    "  # Keep window state for 1 minute after the end, no status line:\n"
    "  tidemark run examples/uv.yaml --set windows.uv.allowed_lateness=1m -q\n";

static const char help_validate[] =
    "usage: tidemark validate JOB.yaml [--set KEY=VALUE ...]\n"
    "                         [--parallelism N]\n"
    "\n"
    "Loads the job file, applies the overrides and checks the whole job\n"
    "graph (every reference names a node, required keys are set, fields\n"
    "exist in the schemas, window and join parameters are valid) without\n"
    "reading any input.  Prints \"JOB.yaml: OK ...\" on success; every\n"
    "problem is printed as FILE:LINE:COLUMN: KEY.PATH: what was expected.\n"
    "\n"
    "Exit codes: 0 valid, 1 the file cannot be read, 2 usage error,\n"
    "3 invalid job.\n"
    "\n"
    "Examples:\n"
    "  tidemark validate examples/uv.yaml\n"
    "  tidemark validate examples/uv.yaml --set windows.uv.window.size=10m\n";

static const char help_config[] =
    "usage: tidemark config list [--markdown] [SCOPE]\n"
    "       tidemark config metrics [--markdown]\n"
    "\n"
    "Lists every key a job file may set, with its type, default, unit and\n"
    "meaning, from the one table in the library that also validates them.\n"
    "SCOPE limits the list to job, source, window, join or sink keys.\n"
    "--markdown prints the reference section of docs/job-format.md.\n"
    "`config metrics` lists every metric the runtime keeps (name, scope,\n"
    "counter or gauge, unit, meaning) from the one table that also drives\n"
    "the REST API and /metrics; --markdown prints docs/metrics.md's\n"
    "reference section.\n"
    "\n"
    "Exit codes: 0 success, 2 usage error.\n"
    "\n"
    "Examples:\n"
    "  tidemark config list window\n"
    "  tidemark config list --markdown\n"
    "  tidemark config metrics\n";

static const char help_diagnose[] =
    "usage: tidemark diagnose URL [--job ID] [--json] [--token T]\n"
    "                         [--window START/DURATION --key K\n"
    "                          [--vertex NAME]] [--timeout SECONDS]\n"
    "\n"
    "Asks a job served by `tidemark run JOB.yaml --http ADDR` why its\n"
    "windows have not fired, and prints the findings most important first:\n"
    "severity, what is wrong, the evidence, and a fix (a partition holding\n"
    "the watermark back, no idle timeout, every source idle, timestamps in\n"
    "the wrong unit or in the future, a high late rate, a trigger that\n"
    "ignores the watermark, backpressure, ...).  docs/diagnosis.md lists\n"
    "every finding.\n"
    "\n"
    "With --window and --key it answers for one window of one key: fired\n"
    "(at which watermark), or not fired and exactly what it waits for.\n"
    "\n"
    "Options:\n"
    "  --job ID            the job to ask about (default: the only one)\n"
    "  --window START/DURATION\n"
    "                      the window: START in ISO-8601 UTC (a zone such\n"
    "                      as +01:00 may follow) or epoch ms, DURATION such\n"
    "                      as 5m, 30s, 1h\n"
    "  --key K             the key: the key_by fields' values, joined by ','\n"
    "  --vertex NAME       the window node (default: the job's only one)\n"
    "  --json              print the server's JSON as it is\n"
    "  --token T           send \"Authorization: Bearer T\" (--http-token)\n"
    "  --timeout SECONDS   give up after this long (default 10)\n"
    "  -h, --help          print this help\n"
    "\n"
    "Exit codes: 0 an answer was printed, 4 it holds a critical finding\n"
    "(so a script or an alert check can act on it), 1 the server could\n"
    "not be reached or refused the request, 2 usage error.\n"
    "\n"
    "Examples:\n"
    "  tidemark run examples/idle.yaml --http 127.0.0.1:8081 \\\n"
    "      --set sources.clicks.watermark.idle_timeout=0 &\n"
    "  tidemark diagnose http://127.0.0.1:8081\n"
    "  tidemark diagnose http://127.0.0.1:8081 \\\n"
    "      --window 2026-01-01T00:05:00Z/1m --key p7\n";

static const char help_set[] =
    "usage: tidemark set URL KEY=VALUE... [--job ID] [--json] [--token T]\n"
    "                    [--timeout SECONDS]\n"
    "\n"
    "Changes live settings of a job served by `tidemark run JOB.yaml --http\n"
    "ADDR`, with no restart (PATCH /jobs/:id/config).  Live keys, per\n"
    "source:\n"
    "  sources.NAME.watermark.max_out_of_orderness   (bounded, punctuated)\n"
    "  sources.NAME.watermark.idle_timeout           (0 turns idleness off)\n"
    "  sources.NAME.watermark.alignment.max_drift    (in an alignment group)\n"
    "Values are durations (8s, 500ms, 2m).  The server checks every setting\n"
    "before it applies any: one refused changes nothing, and the reason is\n"
    "printed (400: unknown key or bad value; 409: a key that cannot change\n"
    "while the job runs).  The sources apply a change between polls, on\n"
    "every partition; the watermark never goes back (a higher bound holds\n"
    "it until the data passes it).  Each change is logged, counted\n"
    "(numConfigChanges) and listed by GET /jobs/:id/config.  The same\n"
    "keys can be pushed through a file: job key config.watch.\n"
    "docs/live-settings.md has the rules and a worked example.\n"
    "\n"
    "Options:\n"
    "  --job ID            the job (default: the server's only one)\n"
    "  --json              print the server's JSON answer as it is\n"
    "  --token T           send \"Authorization: Bearer T\" (--http-token)\n"
    "  --timeout SECONDS   give up after this long (default 10)\n"
    "  -h, --help          print this help\n"
    "\n"
    "Exit codes: 0 applied, 1 the server could not be reached or refused\n"
    "the change (the reason is printed), 2 usage error.\n"
    "\n"
    "Example:\n"
    "  tidemark set http://127.0.0.1:8081 \\\n"
    "      sources.clicks.watermark.max_out_of_orderness=8s\n";

static const char help_analyze[] =
    "usage: tidemark analyze INPUT... --ts-field FIELD [options]\n"
    "       tidemark analyze --job JOB.yaml [SOURCE] [INPUT...] [options]\n"
    "\n"
    "Reads a sample of a stream (JSON lines or CSV files, globs, - for\n"
    "stdin) the way `tidemark run` reads it, and reports how out of order\n"
    "it is: for each record, how far its timestamp is behind the highest\n"
    "timestamp already seen in its partition (P50 ... P99.99, max; overall,\n"
    "per partition and over time), the event-to-arrival delay with an\n"
    "arrival field, and warnings first (timestamps in another unit anywhere\n"
    "in the input - counted, located at file:line and left out - future\n"
    "timestamps, partitions without data).  Then the recommendation: the\n"
    "smallest watermark.max_out_of_orderness whose exact late fraction\n"
    "(replayed through the engine) meets --target, allowed_lateness\n"
    "covering the tail and a late_output for the rest, with the lines to\n"
    "paste into the job file; watermark.idle_timeout from the gaps.  The\n"
    "first --sample records are replayed for a grid of (bound, lateness)\n"
    "candidates, exactly as a job with parallelism 1 and watermark.emit\n"
    "on_event would run: records on time, refired, sent to the late\n"
    "output; refired panes; result delay; peak state.  With the lines to\n"
    "paste comes the `tidemark set` command that applies the bound to a\n"
    "running job; when the input spans hours, the bound each UTC hour\n"
    "needs, and whether a live bound that follows them is worth it.\n"
    "\n"
    "Options:\n"
    "  --job FILE          take the source's path, format, schema, timestamp\n"
    "                      field and unit, partition field, the job's batch\n"
    "                      size and guard, and the window reading the source\n"
    "                      (window, key_by, allowed_lateness, late_output)\n"
    "                      from a job file; SOURCE names the source when the\n"
    "                      job has several.  The recommendation is compared\n"
    "                      with the job's current bound.  An option given on\n"
    "                      the command line wins (INPUT replaces path); the\n"
    "                      report lists each value it replaced\n"
    "  --ts-field F        the event timestamp field (required without --job)\n"
    "  --unit U            ms (default), s, us, ns or iso8601\n"
    "  --partition-field F partitions are the values of F (default: one\n"
    "                      partition per input file, as the file source)\n"
    "  --arrival-field F   arrival time of each record (same unit): delay\n"
    "                      statistics, and gaps measured in arrival time\n"
    "  --key-field F[,F]   key of the what-if windows (default: one key)\n"
    "  --window SPEC       what-if window: tumbling:SIZE[:OFFSET],\n"
    "                      sliding:SIZE:SLIDE[:OFFSET] or session:GAP\n"
    "                      (default tumbling:1m)\n"
    "  --target RATE       the late fraction you accept, like 0.1% or 0.001\n"
    "                      (default 1%): records not in their window's first\n"
    "                      result, counted exactly by replays\n"
    "  --bounds LIST       what-if out-of-orderness bounds, any number, e.g.\n"
    "                      0,500ms,2s (default: the P90 ... P99.99 of the lag\n"
    "                      and the recommended bound)\n"
    "  --lateness LIST     what-if allowed lateness values, any number\n"
    "                      (default: 0 and the ones covering P99.99 and the\n"
    "                      max; plus the recommended combination)\n"
    "  --sample N          records replayed (default 1000000; 0: none)\n"
    "  --schema TEXT       field types as in the job (\"k:string, ts:int64\")\n"
    "  --format json|csv   default: csv for *.csv inputs, else json\n"
    "  --csv-delimiter C   CSV field delimiter (default ,)\n"
    "  --csv-no-header     CSV files have no header line (the columns are\n"
    "                      the --schema fields in order)\n"
    "  --batch-size N      the job's batch.size (default 1024): how files\n"
    "                      interleave\n"
    "  --guard D           the job's timestamp_guard (default 1h; 0: off)\n"
    "  --now T             \"now\" (epoch ms or ISO-8601) for the future and\n"
    "                      guard checks (default: the wall clock)\n"
    "  --partitions N|LIST expected partitions (N: values 0..N-1); warns\n"
    "                      about those without data\n"
    "  --claim-monotonic   warn about partitions that are not in order\n"
    "  --dead-letter FILE  write bad lines there as JSON lines\n"
    "  --json              JSON on stdout instead of the tables\n"
    "  --plot FILE.svg     write the trade-off chart (log delay axis, the\n"
    "                      recommendation marked) and the lag histogram\n"
    "  -h, --help          print this help\n"
    "\n"
    "Bad lines are reported on stderr (the first 10) with file:line and\n"
    "the field, counted, and the analysis goes on.\n"
    "\n"
    "Exit codes: 0 success, 1 an input or output could not be read or\n"
    "written, 2 usage error, 3 invalid job file.\n"
    "\n"
    "Examples:\n"
    "  tidemark analyze clicks.jsonl --ts-field ts --window tumbling:5m\n"
    "  tidemark analyze 'logs/*.jsonl' --ts-field ts --partition-field p \\\n"
    "      --arrival-field received --plot lag.svg\n"
    "  tidemark analyze data.csv --ts-field time --unit s --json\n"
    "  tidemark analyze --job examples/uv.yaml --target 0.1%\n";

/* ---- The table ---- */

/* One topic: a command's words (commands.def), without its function. */
typedef struct topic {
    const char *name;
    const char *synopsis;
    const char *summary;
    const char *text;
} topic;

#define TDM__CLI_COMMAND(name, synopsis, summary, fn, help)                    \
    {#name, synopsis, summary, help},
static const topic topics[] = {
#include "commands.def"
};
#undef TDM__CLI_COMMAND

#define N_TOPICS (sizeof topics / sizeof topics[0])

/* The column where the summaries start ("  " + synopsis, padded). */
#define SUMMARY_COL 22

/* Prints one row of the overview's list: the synopsis, then the summary
 * with every continuation line indented to the summary column. */
static void print_row(const topic *t, FILE *f)
{
    fprintf(f, "  %-*s", SUMMARY_COL - 2, t->synopsis);
    for (const char *s = t->summary; *s; s++) {
        fputc(*s, f);
        if (*s == '\n')
            fprintf(f, "%*s", SUMMARY_COL, "");
    }
    fputc('\n', f);
}

/* Prints the names of every command, comma-separated (see cli.h). */
void tdm__cli_help_names(FILE *f)
{
    for (size_t i = 0; i < N_TOPICS; i++)
        fprintf(f, "%s%s", i ? ", " : "", topics[i].name);
}

/* Prints help on a topic (see cli.h). */
int tdm__cli_help(const char *topic_name, FILE *f)
{
    if (topic_name == NULL) {
        fputs(overview_head, f);
        for (size_t i = 0; i < N_TOPICS; i++)
            print_row(&topics[i], f);
        fputs(overview_tail, f);
        return TDM_EXIT_OK;
    }
    for (size_t i = 0; i < N_TOPICS; i++) {
        if (strcmp(topic_name, topics[i].name) == 0) {
            fputs(topics[i].text, f);
            return TDM_EXIT_OK;
        }
    }
    fprintf(stderr, "tidemark help: no help on \"%s\"; topics: ", topic_name);
    tdm__cli_help_names(stderr);
    fputs("\n", stderr);
    return TDM_EXIT_USAGE;
}
