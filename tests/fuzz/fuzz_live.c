/* SPDX-License-Identifier: MIT */
/* fuzz_live.c - libFuzzer target for the parser of a watched file of live
 * settings (config.watch; src/runtime/live.c, R-LV-6), which reads what a
 * configuration service wrote.
 *
 * The input (cut at its first NUL) is the file's text, checked against a
 * job with one bounded source "in" and tdm__live_file_check.  Invariants
 * (a violation is __builtin_trap()): the result is -1 or a count from 0
 * to 64; on -1 the reason starts with "line N: " where N is at least 1
 * and at most the text's line count; on success the count is at most
 * the number of lines; checking the same text again gives the same
 * result and reason.  tests/fuzz/replay.c runs tests/fuzz/corpus_live/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "runtime/live.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tdm_job *job_once(void)
{
    static tdm_job *job;
    if (job)
        return job;
    tdm_node *s = NULL, *o = NULL;
    CHECK(tdm_job_new(&job) == TDM_OK);
    CHECK(tdm_job_add_node(job, TDM_NODE_SOURCE, "in", &s, NULL, 0) == TDM_OK);
    CHECK(tdm_node_set(s, "type", "generator", NULL, 0) == TDM_OK);
    CHECK(tdm_node_set(s, "sink", "out", NULL, 0) == TDM_OK);
    CHECK(tdm_job_add_node(job, TDM_NODE_SINK, "out", &o, NULL, 0) == TDM_OK);
    return job;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    long lines = 1;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    char err[1024] = "", again[1024] = "";
    int n = tdm__live_file_check(job_once(), text, err, sizeof err);
    CHECK(n >= -1 && n <= 64);
    if (n < 0) {
        long at = 0;
        CHECK(sscanf(err, "line %ld: ", &at) == 1);
        CHECK(at >= 1 && at <= lines);
    } else {
        CHECK(n <= lines);
    }
    CHECK(tdm__live_file_check(job_once(), text, again, sizeof again) == n);
    CHECK(strcmp(err, again) == 0);
    free(text);
    return 0;
}
