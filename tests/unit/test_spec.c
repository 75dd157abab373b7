/* SPDX-License-Identifier: MIT */
/* test_spec.c - the typed specs (spec.h) cover conf_table.def: spec.c's
 * field list holds one field per table row, in the table's order, with
 * the row's scope, key and type and a size that fits the type, so a key
 * added to the table without its spec field fails here.  Setting a key
 * through the public API shows at once in the spec (job.c refills it),
 * which is what lets the runtime read the spec instead of the key. */
#include <string.h>

#include "harness.h"
#include "runtime/rt.h"

/* The size a field of row type @p t must have. */
static size_t size_of_type(tdm__ctype t)
{
    switch (t) {
    case TDM__CT_STRING:
        return sizeof(const char *);
    case TDM__CT_INT:
    case TDM__CT_DURATION:
        return sizeof(int64_t);
    case TDM__CT_DOUBLE:
        return sizeof(double);
    case TDM__CT_BOOL:
        return sizeof(bool);
    case TDM__CT_ENUM:
        return sizeof(int);
    default:
        return sizeof(const tdm__conf_val *);
    }
}

/* Every row of the table has its field, and every field its row. */
TDM_TEST(every_row_has_its_field)
{
    int n_rows, n_fields;
    const tdm__conf_row *rows = tdm__conf_rows(&n_rows);
    const tdm__spec_field *f = tdm__spec_fields(&n_fields);
    ASSERT_EQ(n_fields, n_rows);
    ASSERT_TRUE(n_rows >= 120);
    for (int i = 0; i < n_rows; i++) {
        ASSERT_EQ(f[i].scope, (int)rows[i].scope);
        ASSERT_STR_EQ(f[i].key, rows[i].key);
        ASSERT_EQ(f[i].type, (int)rows[i].type);
        ASSERT_EQ(f[i].size, size_of_type(rows[i].type));
        size_t room = rows[i].scope == TDM__SCOPE_JOB ? sizeof(tdm__job_spec)
                                                      : sizeof(tdm__node_spec);
        ASSERT_TRUE(f[i].off + f[i].size <= room);
    }
}

/* No two fields of one scope overlap. */
TDM_TEST(fields_do_not_overlap)
{
    int n;
    const tdm__spec_field *f = tdm__spec_fields(&n);
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++) {
            if (f[i].scope != f[k].scope)
                continue;
            bool apart = f[i].off + f[i].size <= f[k].off ||
                         f[k].off + f[k].size <= f[i].off;
            ASSERT_TRUE(apart);
        }
}

/* A key set through the API is in the spec at once, typed. */
TDM_TEST(set_keys_show_in_the_spec)
{
    tdm_job *job;
    tdm_node *src, *win;
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_EQ(job->spec.parallelism, 1);
    ASSERT_STR_EQ(job->spec.name, "job");
    ASSERT_STR_EQ(job->spec.checkpoint_dir, "");
    ASSERT_OK(tdm_job_set(job, "parallelism", "4", NULL, 0));
    ASSERT_OK(tdm_job_set(job, "restart.multiplier", "1.5", NULL, 0));
    ASSERT_OK(tdm_job_set(job, "restart.strategy", "fixed-delay", NULL, 0));
    ASSERT_EQ(job->spec.parallelism, 4);
    ASSERT_TRUE(job->spec.restart_multiplier == 1.5);
    ASSERT_EQ(job->spec.restart_strategy, TDM__RESTART_STRATEGY_FIXED_DELAY);
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_SOURCE, "s", &src, NULL, 0));
    ASSERT_EQ(src->spec.src.csv_header, true);
    ASSERT_OK(tdm_node_set(src, "type", "generator", NULL, 0));
    ASSERT_OK(tdm_node_set(src, "generator.skew", "0.25", NULL, 0));
    ASSERT_OK(tdm_node_set(src, "kafka.client.id", "x", NULL, 0));
    ASSERT_EQ(src->spec.src.type, TDM__SOURCE_TYPE_GENERATOR);
    ASSERT_TRUE(src->spec.src.gen_skew == 0.25);
    ASSERT_EQ(src->spec.src.kafka->n_props, 1);
    ASSERT_TRUE(tdm_node_set(src, "generator.skew", "many", NULL, 0) != TDM_OK);
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_WINDOW, "w", &win, NULL, 0));
    ASSERT_OK(tdm_node_set(win, "window.size", "5s", NULL, 0));
    ASSERT_OK(tdm_node_set(win, "key_by", "a, b", NULL, 0));
    ASSERT_EQ(win->spec.win.size_ms, 5000);
    ASSERT_EQ(win->spec.win.key_by->n_fields, 2);
    ASSERT_STR_EQ(win->spec.win.sink, "");
    tdm_job_destroy(job);
}
