/* SPDX-License-Identifier: MIT */
/* cmd_validate.c - `tidemark validate JOB.yaml`: loads the job file,
 * applies --parallelism and --set, and checks the whole graph with
 * tdm_job_validate, without opening any input.  Problems are printed as
 * file:line:column messages by the loader.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Counts the nodes of @p kind the file declared. */
static int count_kind(const tdm__cli_job *cj, tdm_node_kind kind)
{
    int n = 0;
    for (size_t i = 0; i < cj->n_decls; i++) {
        n += cj->decls[i].kind == kind;
    }
    return n;
}

/* Runs `tidemark validate` (argv after the command name).  Returns
 * TDM_EXIT_OK when the job is valid, TDM_EXIT_INVALID when it is not,
 * TDM_EXIT_USAGE or TDM_EXIT_RUNTIME (file unreadable). */
int tdm__cli_cmd_validate(int argc, char **argv)
{
    tdm__cli_opts opts;
    tdm__cli_job *cj = NULL;
    int rc = tdm__cli_opts_parse(argc, argv, "validate", 0, &opts);
    if (rc != TDM_EXIT_OK || opts.help) {
        free(opts.sets);
        return rc != TDM_EXIT_OK ? rc : tdm__cli_help("validate", stdout);
    }
    rc = tdm__cli_job_prepare(&opts, &cj, stderr);
    if (rc == TDM_EXIT_OK) {
        rc = tdm__cli_job_validate(cj, stderr);
    }
    if (rc == TDM_EXIT_OK) {
        int ns = count_kind(cj, TDM_NODE_SOURCE);
        int nw = count_kind(cj, TDM_NODE_WINDOW);
        int nj = count_kind(cj, TDM_NODE_JOIN);
        int nk = count_kind(cj, TDM_NODE_SINK);
        printf("%s: OK (%d source%s, %d window%s, %d join%s, %d sink%s)\n",
               opts.file, ns, ns == 1 ? "" : "s", nw, nw == 1 ? "" : "s", nj,
               nj == 1 ? "" : "s", nk, nk == 1 ? "" : "s");
    } else if (rc == TDM_EXIT_INVALID && cj != NULL) {
        fprintf(stderr, "%s: invalid job (%d error%s)\n", opts.file, cj->errors,
                cj->errors == 1 ? "" : "s");
    }
    tdm__cli_job_free(cj);
    free(opts.sets);
    return rc;
}
