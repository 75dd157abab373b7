/* SPDX-License-Identifier: MIT */
/* sql_source.c - a table read by a query, as a source node: its columns
 * (rule P1; a METADATA column is a field the Kafka source fills from the
 * message, sql_catalog.c), the WHERE that becomes its `filter` (P7, P14), the
 * values it computes into fields of its own (`compute.*`, P8), and the
 * keys it gets once the query is planned: the table's connector and
 * options, the SETs for sources, the filter and the computed fields.
 * A subquery's projection of a table adds to the same source (its base).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sql/sql_plan.h"

/* A source relation reading table @p t (P1: a table is read by a source
 * node of its own in every query). */
rel *tdm__sql_source_rel(planner *p, qstate *q, sql_table *t, const char *alias,
                         const sql_node *at)
{
    rel *r = tdm__sql_new_rel(p, q, REL_SOURCE, at);
    if (r == NULL) {
        return NULL;
    }
    r->table = t;
    r->origin = 1;
    r->base = r;
    if ((r->used = calloc((size_t)t->n_cols + 1, sizeof *r->used)) == NULL) {
        p->oom = 1;
        return NULL;
    }
    tdm__sql_unique_name(p, t->name, r->node, sizeof r->node);
    if (tdm__sql_declare(p, TDM_NODE_SOURCE, r->node, at) != 0) {
        return NULL;
    }
    for (int i = 0; i < t->n_cols; i++) {
        const sql_col *c = &t->cols[i];
        const char *job = c->field;
        if (c->expr != NULL) { /* TO_TIMESTAMP_LTZ(col, 3): col's field. */
            job = t->cols[tdm__sql_table_col(t, c->expr->a->text)].field;
        }
        if (tdm__sql_add_col(p, r, alias != NULL ? alias : t->name, c->name,
                             job, c->type, i == t->rowtime) != 0) {
            return NULL;
        }
        r->cols[r->n_cols - 1].used = &r->used[i];
    }
    t->uses++;
    return r;
}

/* P14: a source filters before it computes, so a WHERE over a value a
 * subquery computed is refused (it would see the value unset). */
static int refs_computed(planner *p, const rel *r, const sql_node *e)
{
    for (; e != NULL; e = e->next) {
        const pcol *c;
        if (e->kind == SQLK_ID && (c = tdm__sql_resolve(p, r, e)) != NULL &&
            c->computed) {
            return tdm__sql_fail(p, e,
                                 "a WHERE over %s, a value the subquery "
                                 "computes, is not supported yet: filter "
                                 "on the columns it is computed from",
                                 e->text);
        }
        if (refs_computed(p, r, e->a) || refs_computed(p, r, e->b) ||
            refs_computed(p, r, e->c) || refs_computed(p, r, e->d)) {
            return -1;
        }
    }
    return 0;
}

/* WHERE over a source: ANDed into its filter (P7: a WHERE after an
 * aggregation is refused). */
int tdm__sql_where(planner *p, rel *r, const sql_node *w)
{
    char text[4096];
    if (w == NULL) {
        return 0;
    }
    if (r->kind != REL_SOURCE) {
        return tdm__sql_fail(p, w,
                             "WHERE over the rows of a window or join "
                             "is not supported yet; filter its inputs");
    }
    if (refs_computed(p, r, w) ||
        tdm__sql_expr_text(p, r, w, text, sizeof text) != 0) {
        return -1;
    }
    rel *dst = r->base; /* A subquery's projection filters its source. */
    size_t have = strlen(dst->filter), add = strlen(text);
    if (have + add + 8 >= sizeof dst->filter) {
        return tdm__sql_fail(p, w, "WHERE too long");
    }
    if (have > 0) {
        memmove(dst->filter + 1, dst->filter, have);
        dst->filter[0] = '(';
        memcpy(dst->filter + have + 1, ") AND ", 6);
        have += 7;
    }
    memcpy(dst->filter + have, text, add + 1);
    return 0;
}

/* Computes @p e into a new field of source @p r; its job name in
 * @p field (P8: a value of any type: a string is copied into the
 * batch). */
int tdm__sql_compute_field(planner *p, rel *r, const sql_node *e, char *field,
                           size_t n, const char **type)
{
    char text[560];
    if (r->kind != REL_SOURCE) {
        return tdm__sql_fail(p, e,
                             "computed values over the rows of a window "
                             "or join are not supported yet");
    }
    if ((*type = tdm__sql_expr_type(p, r, e)) == NULL ||
        tdm__sql_expr_text(p, r, e, text, sizeof text) != 0) {
        return -1;
    }
    rel *dst = r->base; /* A subquery's projection computes at its source. */
    size_t used = strlen(dst->extra_schema);
    if (dst->n_computes >= 16 || strlen(text) + 48 >= sizeof dst->computes[0] ||
        used + 40 >= sizeof dst->extra_schema) {
        return tdm__sql_fail(p, e,
                             "at most 16 computed values of at most "
                             "500 bytes per source");
    }
    snprintf(field, n, "_c%d", dst->n_computes + 1);
    snprintf(dst->computes[dst->n_computes++], sizeof dst->computes[0], "%s=%s",
             field, text);
    snprintf(dst->extra_schema + used, sizeof dst->extra_schema - used,
             ", %s:%s", field, *type);
    return 0;
}

/* Writes a source's keys: the table's, the SETs', the filter and the
 * computed fields. */
int tdm__sql_flush_source(planner *p, const rel *r)
{
    sql_kv kv[32];
    int n = tdm__sql_connector_keys(p->cat, r->table, r->used, kv, 32);
    if (n < 0) {
        return tdm__sql_fail(p, p->cat->err_at, "%s", p->cat->err);
    }
    for (int i = 0; i < n; i++) {
        size_t used = strlen(kv[i].value), add = strlen(r->extra_schema);
        if (strcmp(kv[i].key, "schema") == 0 && add > 0) {
            if (used + add >= sizeof kv[i].value) {
                return tdm__sql_fail(p, r->at, "schema too long");
            }
            memcpy(kv[i].value + used, r->extra_schema, add + 1);
        }
        tdm__sql_put(p, TDM_NODE_SOURCE, r->node, kv[i].key, kv[i].value,
                     kv[i].at);
    }
    n = tdm__sql_setting_keys(p->cat, SET_SOURCE, kv, 32);
    for (int i = 0; i < n; i++) {
        tdm__sql_put(p, TDM_NODE_SOURCE, r->node, kv[i].key, kv[i].value,
                     kv[i].at);
    }
    if (r->filter[0] != '\0') {
        tdm__sql_put(p, TDM_NODE_SOURCE, r->node, "filter", r->filter, r->at);
    }
    for (int i = 0; i < r->n_computes; i++) {
        char key[64], *eq = strchr(r->computes[i], '=');
        snprintf(key, sizeof key, "compute.%.*s", (int)(eq - r->computes[i]),
                 r->computes[i]);
        tdm__sql_put(p, TDM_NODE_SOURCE, r->node, key, eq + 1, r->at);
    }
    tdm__sql_describe(p, "  %s: source %s (%s)%s%s\n", r->node, r->table->name,
                      r->table->connector, r->filter[0] ? ", filter " : "",
                      r->filter);
    return p->oom ? -1 : 0;
}
