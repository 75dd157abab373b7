/* SPDX-License-Identifier: MIT */
/* conf_kit.h - the two helpers the configuration suites (test_conf.c,
 * test_conf_kafka.c) build jobs with: add a node, set a key (a failure
 * names the key and the library's message). */
#ifndef TDM_TEST_CONF_KIT_H
#define TDM_TEST_CONF_KIT_H

#include "harness.h"
#include "tidemark.h"

static tdm_node *add(tdm_job *job, tdm_node_kind kind, const char *name)
{
    tdm_node *n = NULL;
    char msg[256];
    ASSERT_OK(tdm_job_add_node(job, kind, name, &n, msg, sizeof msg));
    return n;
}

static void set(tdm_node *n, const char *key, const char *value)
{
    char msg[256];
    tdm_err e = tdm_node_set(n, key, value, msg, sizeof msg);
    if (e != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "%s=%s: %s", key, value, msg);
}

#endif
