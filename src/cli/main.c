/* SPDX-License-Identifier: MIT */
/* main.c - the `tidemark` command: --version, help, and dispatch through
 * the command table (commands.def) to run, validate, config, diagnose and
 * analyze, with the exit codes (0 ok, 1 runtime failure, 2 usage error,
 * 3 invalid job; docs/cli.md documents them too).  The help texts are in
 * help.c.  Uses only tidemark.h, like every client of the library.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* One command: its name and function (commands.def). */
typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
} command;

#define TDM__CLI_COMMAND(name, synopsis, summary, fn, help) {#name, fn},
static const command commands[] = {
#include "commands.def"
};
#undef TDM__CLI_COMMAND

/* `tidemark help [COMMAND]`: argv starts after "help". */
static int cmd_help(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "usage: tidemark help [COMMAND]\n");
        return TDM_EXIT_USAGE;
    }
    return tdm__cli_help(argc > 0 ? argv[0] : NULL, stdout);
}

/* Dispatches on the first argument; returns the command's exit code (see
 * the overview text and docs/cli.md). */
int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL;
    if (cmd == NULL) {
        tdm__cli_help(NULL, stderr);
        return TDM_EXIT_USAGE;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("tidemark %s\n", tdm_version());
        return TDM_EXIT_OK;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return tdm__cli_help(NULL, stdout);
    if (strcmp(cmd, "help") == 0)
        return cmd_help(argc - 2, argv + 2);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 2, argv + 2);
    }
    fprintf(stderr, "tidemark: unknown command \"%s\" (commands: ", cmd);
    tdm__cli_help_names(stderr);
    fprintf(stderr, ", help; see `tidemark --help`)\n");
    return TDM_EXIT_USAGE;
}
