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
    "  help [COMMAND]      help on a command (run, validate, config)\n"
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
    "                    [--quiet]\n"
    "\n"
    "Runs the job to the end of its input.  Bounded input ends with the\n"
    "maximum watermark, which fires every remaining window; sinks flush\n"
    "and a one-paragraph summary goes to stderr (records in and out, late\n"
    "records dropped and sent to the late output, bad records, timestamp\n"
    "guard hits, time and rate).  SIGINT (Ctrl-C) or SIGTERM stops the job\n"
    "the same way; a second Ctrl-C kills it at once.\n"
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
    "\n"
    "Lists every key a job file may set, with its type, default, unit and\n"
    "meaning, from the one table in the library that also validates them.\n"
    "SCOPE limits the list to job, source, window, join or sink keys.\n"
    "--markdown prints the reference section of docs/job-format.md.\n"
    "\n"
    "Exit codes: 0 success, 2 usage error.\n"
    "\n"
    "Examples:\n"
    "  tidemark config list window\n"
    "  tidemark config list --markdown\n";

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
    } else {
        fprintf(stderr, "tidemark help: no help on \"%s\"; topics: run, "
                        "validate, config\n", topic);
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
    fprintf(stderr, "tidemark: unknown command \"%s\" (commands: run, "
                    "validate, config, help; see `tidemark --help`)\n", cmd);
    return TDM_EXIT_USAGE;
}
