/* SPDX-License-Identifier: MIT */
/* main.c - the `tidemark` command: dispatch to run, validate, config and
 * help, the help texts, and the exit codes (0 ok, 1 runtime failure,
 * 2 usage error, 3 invalid job; docs/cli.md documents them too).  Uses
 * only tidemark.h, like every client of the library.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char overview[] =
    "usage: tidemark <command> [arguments]\n"
    "\n"
    "tidemark runs event-time stream processing jobs described in a YAML\n"
    "file, with Apache Flink's watermark, window, lateness and join\n"
    "semantics, in parallel on worker threads.\n"
    "\n"
    "Commands:\n"
    "  run JOB.yaml        run a job to the end of its input (Ctrl-C stops\n"
    "                      it cleanly: windows flush, sinks close)\n"
    "  validate JOB.yaml   check a job file without running it\n"
    "  config list         list every job key: type, default, meaning\n"
    "  diagnose URL        ask a job served by `run --http` why its windows\n"
    "                      have not fired: findings, evidence, fixes\n"
    "  analyze INPUT...    measure how out of order a stream is and\n"
    "                      recommend watermark settings, with what-if\n"
    "                      replays through the engine\n"
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
    "Exit codes: 0 an answer was printed, 1 the server could not be\n"
    "reached or refused the request, 2 usage error.\n"
    "\n"
    "Examples:\n"
    "  tidemark run examples/idle.yaml --http 127.0.0.1:8081 \\\n"
    "      --set sources.clicks.watermark.idle_timeout=0 &\n"
    "  tidemark diagnose http://127.0.0.1:8081\n"
    "  tidemark diagnose http://127.0.0.1:8081 \\\n"
    "      --window 2026-01-01T00:05:00Z/1m --key p7\n";

/* Prints help on a topic (see cli.h). */
int tdm__cli_help(const char *topic, FILE *f)
{
    if (topic == NULL) {
        fputs(overview, f);
    } else if (strcmp(topic, "run") == 0) {
        fputs(help_run, f);
    } else if (strcmp(topic, "validate") == 0) {
        fputs(help_validate, f);
    } else if (strcmp(topic, "config") == 0) {
        fputs(help_config, f);
    } else if (strcmp(topic, "diagnose") == 0) {
        fputs(help_diagnose, f);
    } else if (strcmp(topic, "analyze") == 0) {
        fputs(tdm__analyze_help, f);
    } else {
        fprintf(stderr, "tidemark help: no help on \"%s\"; topics: run, "
                        "validate, config, diagnose, analyze\n", topic);
        return TDM_EXIT_USAGE;
    }
    return TDM_EXIT_OK;
}

/* Dispatches on the first argument; returns the command's exit code (see
 * the overview text and docs/cli.md). */
int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (cmd == NULL) {
        fputs(overview, stderr);
        return TDM_EXIT_USAGE;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("tidemark %s\n", tdm_version());
        return TDM_EXIT_OK;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        return tdm__cli_help(NULL, stdout);
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc > 3) {
            fprintf(stderr, "usage: tidemark help [COMMAND]\n");
            return TDM_EXIT_USAGE;
        }
        return tdm__cli_help(argc > 2 ? argv[2] : NULL, stdout);
    }
    if (strcmp(cmd, "run") == 0) {
        return tdm__cli_cmd_run(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "validate") == 0) {
        return tdm__cli_cmd_validate(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "config") == 0) {
        return tdm__cli_cmd_config(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "diagnose") == 0) {
        return tdm__cli_cmd_diagnose(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "analyze") == 0) {
        return tdm__cli_cmd_analyze(argc - 2, argv + 2);
    }
    fprintf(stderr, "tidemark: unknown command \"%s\" (commands: run, "
                    "validate, config, diagnose, analyze, help; see "
                    "`tidemark --help`)\n", cmd);
    return TDM_EXIT_USAGE;
}
