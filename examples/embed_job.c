/* SPDX-License-Identifier: MIT */
/* embed_job.c - a whole tidemark job embedded in a C program, through the
 * public API alone (the C counterpart of a YAML job file).
 *
 * Reads the CSV files of examples/data/clicks10s/ (two partitions with
 * their own watermarks), keeps only clicks on pages other than "/cart"
 * (a filter callback chained into the source subtasks), counts clicks and
 * distinct users per page in 10 s tumbling event-time windows with 500 ms
 * out-of-orderness, and writes JSON lines to stdout, at parallelism 2.
 *
 *   ./build/example_embed_job [DATA_GLOB]
 */
#include <stdio.h>
#include <string.h>

#include "tidemark.h"

/* The filter: drop clicks on /cart.  Runs on the source subtasks'
 * threads, so it only reads its row and the immutable field index. */
static int not_cart(void *ud, const tdm_row *row)
{
    const int *page = ud;
    size_t len = 0;
    const char *p = tdm_row_string(row, *page, &len);
    return !(len == 5 && memcmp(p, "/cart", 5) == 0);
}

/* Sets one key and reports where it failed. */
static int set(tdm_node *node, const char *key, const char *value)
{
    char err[256];
    if (tdm_node_set(node, key, value, err, sizeof err) != TDM_OK) {
        fprintf(stderr, "embed_job: %s\n", err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *glob = argc > 1 ? argv[1] : "examples/data/clicks10s/*.csv";
    char err[256] = "";
    int rc = 1;
    int page = -1;
    tdm_job *job = NULL;
    tdm_node *src, *win, *out;

    if (tdm_job_new(&job) != TDM_OK)
        goto fail;
    if (tdm_job_set(job, "name", "embedded-clicks", err, sizeof err) ||
        tdm_job_set(job, "parallelism", "2", err, sizeof err) ||
        tdm_job_add_node(job, TDM_NODE_SOURCE, "clicks", &src, err,
                         sizeof err) ||
        tdm_job_add_node(job, TDM_NODE_WINDOW, "per_page", &win, err,
                         sizeof err) ||
        tdm_job_add_node(job, TDM_NODE_SINK, "console", &out, err,
                         sizeof err)) {
        fprintf(stderr, "embed_job: %s\n", err);
        goto fail;
    }
    if (set(src, "type", "file") || set(src, "path", glob) ||
        set(src, "format", "csv") ||
        set(src, "schema", "page:string, user:string, ts:int64") ||
        set(src, "timestamp.field", "ts") ||
        set(src, "watermark.strategy", "bounded") ||
        set(src, "watermark.max_out_of_orderness", "500ms") ||
        set(win, "from", "clicks") || set(win, "key_by", "page") ||
        set(win, "window.type", "tumbling") || set(win, "window.size", "10s") ||
        set(win, "aggregates",
            "count() as clicks, count_distinct(user) as users") ||
        set(win, "sink", "console") || set(out, "type", "stdout") ||
        set(out, "format", "json"))
        goto fail;
    /* The schema is known once set: look the field up for the filter. */
    page = tdm_node_field_index(src, "page");
    if (page < 0 || tdm_node_add_filter(src, not_cart, &page) != TDM_OK) {
        fprintf(stderr, "embed_job: cannot add the filter\n");
        goto fail;
    }
    if (tdm_job_run(job, err, sizeof err) != TDM_OK) {
        fprintf(stderr, "embed_job: %s\n", err);
        goto fail;
    }
    fprintf(stderr, "embed_job: %lld records in, %lld rows out\n",
            (long long)tdm_job_stat(job, TDM_STAT_RECORDS_IN),
            (long long)tdm_job_stat(job, TDM_STAT_RECORDS_OUT));
    rc = 0;
fail:
    tdm_job_destroy(job);
    return rc;
}
