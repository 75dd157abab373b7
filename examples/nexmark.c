/* SPDX-License-Identifier: MIT */
/* nexmark.c - three NEXMark queries built with the C API alone (the C
 * counterparts of bench/nexmark/nexmark_w.yaml, q2.yaml and q7.yaml):
 *
 *   w    NEXMark-W: bids per auction in 10 s tumbling event-time windows,
 *        watermark max - 4 s, over the built-in NEXMark generator;
 *   q2   selection: the bids whose auction is a multiple of 123, kept by
 *        a C filter callback chained into the source subtasks and written
 *        by the source's own sink (a pass-through, no window);
 *   q7   highest bid: a global 10 s tumbling MAX(price) window chained
 *        into a window join of the bids with its rows on price = max
 *        (a window naming another operator as its input, here the join's
 *        right side).
 *
 * Rows go to stdout as JSON lines, at parallelism 2.
 *
 *   ./build/example_nexmark w|q2|q7 [EVENTS]  (default 1,000,000 events)
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tidemark.h"

/* q2's filter: auction % 123 == 0.  Runs on the source subtasks'
 * threads; it only reads its row and the immutable field index. */
static int every_123rd(void *ud, const tdm_row *row)
{
    const int *auction = ud;
    return tdm_row_int(row, *auction) % 123 == 0;
}

/* Sets keys on a node, stopping at the first that fails (with its
 * message in err). */
static tdm_err set_all(tdm_node *node, const char *const *kv, char *err,
                       size_t n)
{
    for (; kv[0]; kv += 2) {
        tdm_err e = tdm_node_set(node, kv[0], kv[1], err, n);
        if (e != TDM_OK)
            return e;
    }
    return TDM_OK;
}

int main(int argc, char **argv)
{
    const char *q = argc > 1 ? argv[1] : "w";
    const char *events = argc > 2 ? argv[2] : "1000000";
    bool w = strcmp(q, "w") == 0, q7 = strcmp(q, "q7") == 0;
    char err[256] = "";
    int rc = 1;
    int auction = -1;
    tdm_job *job = NULL;
    tdm_node *src, *win, *join, *out;

    if (!w && !q7 && strcmp(q, "q2") != 0) {
        fprintf(stderr, "usage: example_nexmark w|q2|q7 [EVENTS]\n");
        return 2;
    }
    const char *const source[] = {
        "type",
        "generator",
        "schema",
        w    ? "auction:int64, date_time:timestamp"
        : q7 ? "auction:int64, bidder:int64, price:int64, "
               "date_time:timestamp"
             : "auction:int64, price:int64, date_time:timestamp",
        "generator.kind",
        "nexmark",
        "generator.records",
        events,
        "generator.rate",
        "100000",
        "generator.partitions",
        "4",
        "generator.nexmark.kinds",
        "bid",
        "watermark.strategy",
        w || q7 ? "bounded" : "none",
        "watermark.max_out_of_orderness",
        w || q7 ? "4s" : "0",
        NULL};
    const char *const window[] = {
        "from",     "bids",        "key_by", "auction",    "window.type",
        "tumbling", "window.size", "10s",    "aggregates", "count() as n",
        "sink",     "console",     NULL};
    /* q7: no key_by, so one group per window; its rows (maxprice,
     * window_start, window_end, stamped window_end - 1) are the join's
     * right input and are written nowhere else. */
    const char *const maxprice[] = {
        "from",        "bids", "window.type", "tumbling",
        "window.size", "10s",  "aggregates",  "max(price) as maxprice",
        NULL};
    const char *const highest[] = {
        "type",        "window",   "left",        "bids",      "right",
        "maxprice",    "left_key", "price",       "right_key", "maxprice",
        "window.type", "tumbling", "window.size", "10s",       "sink",
        "console",     NULL};
    const char *const sink[] = {"type", "stdout", "format", "json", NULL};

    if (tdm_job_new(&job) != TDM_OK)
        goto fail;
    if (tdm_job_set(job, "name", q, err, sizeof err) ||
        tdm_job_set(job, "parallelism", "2", err, sizeof err) ||
        tdm_job_add_node(job, TDM_NODE_SOURCE, "bids", &src, err, sizeof err) ||
        set_all(src, source, err, sizeof err) ||
        tdm_job_add_node(job, TDM_NODE_SINK, "console", &out, err,
                         sizeof err) ||
        set_all(out, sink, err, sizeof err))
        goto fail;
    if (w) {
        if (tdm_job_add_node(job, TDM_NODE_WINDOW, "counts", &win, err,
                             sizeof err) ||
            set_all(win, window, err, sizeof err))
            goto fail;
    } else if (q7) {
        if (tdm_job_add_node(job, TDM_NODE_WINDOW, "maxprice", &win, err,
                             sizeof err) ||
            set_all(win, maxprice, err, sizeof err) ||
            tdm_job_add_node(job, TDM_NODE_JOIN, "highest", &join, err,
                             sizeof err) ||
            set_all(join, highest, err, sizeof err))
            goto fail;
    } else {
        if (tdm_node_set(src, "sink", "console", err, sizeof err))
            goto fail;
        /* The field index is known once the schema is set. */
        auction = tdm_node_field_index(src, "auction");
        if (tdm_node_add_filter(src, every_123rd, &auction) != TDM_OK) {
            snprintf(err, sizeof err, "out of memory");
            goto fail;
        }
    }
    if (tdm_job_run(job, err, sizeof err) != TDM_OK)
        goto fail;
    fprintf(stderr, "example_nexmark %s: %lld records in, %lld rows out\n", q,
            (long long)tdm_job_stat(job, TDM_STAT_RECORDS_IN),
            (long long)tdm_job_stat(job, TDM_STAT_RECORDS_OUT));
    rc = 0;
fail:
    if (rc)
        fprintf(stderr, "example_nexmark: %s\n", err[0] ? err : "failed");
    tdm_job_destroy(job);
    return rc;
}
