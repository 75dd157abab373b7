/* SPDX-License-Identifier: MIT */
/* cmd_sql.c - `tidemark sql FILE.sql`: a Flink SQL script run as a job.
 *
 * The script is loaded into a job by the SQL front end (src/sql, sql.h)
 * and then validated and run by `run`'s own code, so every option of
 * `run` (--http, --set, --quiet, ...) works the same.  --explain prints
 * the plan of every query instead of running it.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Runs `tidemark sql` (argv after the command name). */
int tdm__cli_cmd_sql(int argc, char **argv)
{
    tdm__cli_sql_opts sql = {0};
    int n = 0, missing = 0;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (rest == NULL) {
        fprintf(stderr, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--explain") == 0) {
            sql.explain = 1;
        } else if ((v = tdm__cli_opt_value(argc, argv, &i, "--init",
                                           &missing)) != NULL ||
                   (!missing && (v = tdm__cli_opt_value(argc, argv, &i, "-i",
                                                        &missing)) != NULL)) {
            sql.init = v;
        } else if (missing) {
            fprintf(stderr,
                    "tidemark sql: %s needs a file (see `tidemark "
                    "help sql`)\n",
                    argv[i]);
            free(rest);
            return TDM_EXIT_USAGE;
        } else {
            rest[n++] = argv[i];
        }
    }
    int rc = tdm__cli_run_command(n, rest, "sql", &sql);
    free(rest);
    return rc;
}
