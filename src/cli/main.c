/* SPDX-License-Identifier: MIT */
/* main.c - the `tidemark` command-line tool.  For now it prints its
 * version and usage; `tidemark run` arrives with the runtime.  Uses only
 * tidemark.h, like every client of the library.
 */
#include <stdio.h>
#include <string.h>

#include "tidemark.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tidemark [--version] [--help]\n"
               "\n"
               "tidemark is an event-time stream processing engine with\n"
               "Flink's watermark and window semantics.\n"
               "\n"
               "  --version   print the library version\n"
               "  --help      print this help\n"
               "\n"
               "Exit codes: 0 success, 2 usage error.\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("tidemark %s\n", tdm_version());
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
                      strcmp(argv[1], "help") == 0)) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
