/* SPDX-License-Identifier: MIT */
/* sql_plan.c - queries into job nodes: the recursion of SELECT, FROM,
 * subqueries and joins, in one file because the grammar is recursive;
 * the parts it plans call downwards only (sql_plan.h draws the order).
 *
 * A query is planned bottom-up into relations (sql_plan.h): a table read
 * in FROM becomes a source node (sql_source.c); a window table function
 * (TUMBLE, HOP, SESSION; sql_window.c) marks the source's rows with a
 * window; GROUP BY over a window becomes a window node (sql_group.c); a
 * join of two planned sides a join node (sql_join.c); WHERE before the
 * window becomes the source's `filter`; computed values become
 * `compute.*` fields of the source; the SELECT list of the outermost
 * query becomes the sink's `select` (sql_sink.c), which names and orders
 * the output columns.  A subquery in FROM is a node another one reads
 * (docs/runtime.md, Chained operators).  Rules P1-P17 mark what is
 * refused and why; docs/sql.md lists what is supported.
 *
 * INSERT INTO t maps the SELECT list onto t's columns by position, as
 * Flink does; a bare SELECT prints its rows as they fire (a `stdout`
 * sink).  Every query of a script runs in the same job (as Flink's
 * STATEMENT SET would), each with its own sources.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sql/sql_plan.h"

static rel *plan_from(planner *p, qstate *q, const sql_node *f);
static rel *plan_select(planner *p, qstate *q, const sql_node *sel);

/* ---- FROM ---- */

/* Adds the window columns of a TVF: window_start, window_end and
 * window_time (window_end - 1 ms, as in Flink). */
static int window_cols(planner *p, rel *r, const char *qual)
{
    static const char *const names[] = {"window_start", "window_end",
                                        "window_time"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (tdm__sql_add_col(p, r, qual, names[i], names[i], "timestamp", 0) !=
            0) {
            return -1;
        }
    }
    return 0;
}

/* TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size)) and the like (P4: the
 * descriptor names the table's event-time column). */
static rel *tvf_rel(planner *p, qstate *q, const sql_node *f)
{
    const sql_node *args[8];
    int n = tdm__sql_tvf_args(p, f, args, 8);
    if (n < 0) {
        return NULL;
    }
    const sql_node *tab = n > 0 ? args[0] : NULL,
                   *desc = n > 1 ? args[1] : NULL;
    if (tab == NULL || tab->kind != SQLK_TVF_TABLE || desc == NULL ||
        desc->kind != SQLK_DESCRIPTOR) {
        tdm__sql_fail(p, f,
                      "%s(TABLE t, DESCRIPTOR(time column), ...) "
                      "expected",
                      f->text);
        return NULL;
    }
    sql_table *t = tdm__sql_catalog_find(p->cat, tab->text);
    if (t == NULL) {
        tdm__sql_fail(p, tab, "unknown table %s", tab->text);
        return NULL;
    }
    if (t->rowtime < 0) {
        tdm__sql_fail(p, desc,
                      "DESCRIPTOR(%s): table %s has no event time: declare "
                      "WATERMARK FOR %s AS ... in its CREATE TABLE",
                      desc->text, t->name, desc->text);
        return NULL;
    }
    if (strcasecmp(t->cols[t->rowtime].name, desc->text) != 0) {
        tdm__sql_fail(p, desc,
                      "DESCRIPTOR(%s) must name the table's event-time "
                      "column, %s (the one WATERMARK FOR names)",
                      desc->text, t->cols[t->rowtime].name);
        return NULL;
    }
    rel *r = tdm__sql_source_rel(p, q, t, f->alias, f);
    if (r == NULL ||
        tdm__sql_window_spec(p, f->text, args + 2, n - 2, f, &r->win) != 0 ||
        window_cols(p, r, f->alias != NULL ? f->alias : t->name) != 0) {
        return NULL;
    }
    r->win.partition = tab->a;
    if (r->win.partition != NULL && strcmp(f->text, "SESSION") != 0) {
        tdm__sql_fail(p, tab->a, "PARTITION BY belongs to SESSION windows");
        return NULL;
    }
    return r;
}

/* A subquery: its relation, its columns qualified by the alias. */
static rel *subquery_rel(planner *p, qstate *q, const sql_node *s)
{
    rel *r = plan_select(p, q, s->a);
    if (r == NULL) {
        return NULL;
    }
    for (int i = 0; i < r->n_cols && s->alias != NULL; i++) {
        free(r->cols[i].qual);
        if ((r->cols[i].qual = tdm__sql_sdup(p, s->alias)) == NULL) {
            return NULL;
        }
    }
    return r;
}

/* A join: its sides first (FROM items again: the recursion stays in
 * this file), then the join of them (sql_join.c). */
static rel *plan_join(planner *p, qstate *q, const sql_node *join,
                      const sql_node *where)
{
    rel *l = plan_from(p, q, join->a), *r;
    if (l == NULL || (r = plan_from(p, q, join->b)) == NULL) {
        return NULL;
    }
    return tdm__sql_join(p, q, join, l, r, where);
}

/* FROM: a table, a window TVF, a subquery or a join. */
static rel *plan_from(planner *p, qstate *q, const sql_node *f)
{
    sql_table *t;
    switch (f->kind) {
    case SQLK_TABLE:
        if ((t = tdm__sql_catalog_find(p->cat, f->text)) == NULL) {
            tdm__sql_fail(p, f, "unknown table %s", f->text);
            return NULL;
        }
        return tdm__sql_source_rel(p, q, t, f->alias, f);
    case SQLK_TVF:
        return tvf_rel(p, q, f);
    case SQLK_SUBQUERY:
        return subquery_rel(p, q, f);
    default:
        return plan_join(p, q, f, NULL);
    }
}

/* ---- WHERE and computed values at the source ---- */

/* ---- SELECT without GROUP BY: a projection ---- */

/* One item of a projection into @p out. */
static int project_item(planner *p, const rel *in, rel *out, rel *src,
                        const sql_node *it, int i)
{
    char name[64], field[32];
    const pcol *c;
    const char *type;
    if (it->a == NULL || it->a->kind == SQLK_STAR) { /* * and t.* */
        const char *qual = it->a != NULL ? it->a->qual : NULL;
        for (int k = 0; k < in->n_cols; k++) {
            const pcol *x = &in->cols[k];
            if (qual != NULL &&
                (x->qual == NULL || strcasecmp(x->qual, qual))) {
                continue;
            }
            if (tdm__sql_add_col(p, out, NULL, x->name, x->job, x->type,
                                 x->rowtime) != 0) {
                return -1;
            }
            tdm__sql_inherit(out, x);
            if (x->used != NULL) {
                *x->used = 1;
            }
        }
        return 0;
    }
    if (it->a->kind == SQLK_ID) {
        if ((c = tdm__sql_resolve(p, in, it->a)) == NULL) {
            return -1;
        }
        if (tdm__sql_add_col(p, out, NULL, it->text ? it->text : c->name,
                             c->job, c->type, c->rowtime) != 0) {
            return -1;
        }
        tdm__sql_inherit(out, c);
        return 0;
    }
    if (tdm__sql_compute_field(p, src, it->a, field, sizeof field, &type) !=
        0) {
        return -1;
    }
    snprintf(name, sizeof name, "EXPR$%d", i);
    if (tdm__sql_add_col(p, out, NULL, it->text ? it->text : name, field, type,
                         0) != 0) {
        return -1;
    }
    out->cols[out->n_cols - 1].computed = 1;
    return 0;
}

/* The projection of @p in by the SELECT list. */
static rel *project(planner *p, qstate *q, rel *in, const sql_node *sel)
{
    rel *out = tdm__sql_new_rel(p, q, in->kind, sel);
    int i = 0;
    if (out == NULL) {
        return NULL;
    }
    snprintf(out->node, sizeof out->node, "%s", in->node);
    for (const sql_node *it = sel->a; it != NULL; it = it->next, i++) {
        if (project_item(p, in, out, in, it, i) != 0) {
            return NULL;
        }
    }
    out->table = in->table;
    out->win = in->win;
    out->base = in->base;
    return out;
}

/* ---- SELECT ---- */

/* Refuses the first of HAVING, ORDER BY and LIMIT, at its keyword. */
static void refuse_tail(planner *p, const sql_node *sel)
{
    sql_node at = *sel;
    char word[20] = "";
    if (sscanf(sel->unit, "%19[^@]@%d:%d", word, &at.line, &at.col) != 3) {
        at = *sel;
    }
    tdm__sql_fail(p, &at, "%s is not supported yet (%s)", word,
                  strcasecmp(word, "HAVING") == 0
                      ? "filter the rows of an aggregation in the query "
                        "that reads it"
                      : "a streaming query's rows come as windows fire; "
                        "Top-N queries come with changelog queries");
}

/* Plans one SELECT into a relation. */
static rel *plan_select(planner *p, qstate *q, const sql_node *sel)
{
    bool agg = false;
    if (sel->kind != SQLK_SELECT) {
        tdm__sql_fail(p, sel, "a query is expected here");
        return NULL;
    }
    if (sel->ival) {
        tdm__sql_fail(p, sel,
                      "SELECT DISTINCT makes a changelog, which is "
                      "not supported yet");
        return NULL;
    }
    if (sel->unit != NULL) { /* P13: HAVING, ORDER BY, LIMIT. */
        refuse_tail(p, sel);
        return NULL;
    }
    /* P6: the WHERE of a join is part of its condition (inner joins). */
    rel *in = sel->b->kind == SQLK_JOIN ? plan_join(p, q, sel->b, sel->c)
                                        : plan_from(p, q, sel->b);
    if (in == NULL ||
        (sel->b->kind != SQLK_JOIN && tdm__sql_where(p, in, sel->c) != 0)) {
        return NULL;
    }
    for (const sql_node *it = sel->a; it != NULL; it = it->next) {
        agg = agg || tdm__sql_is_aggregate(it->a);
    }
    if (sel->d != NULL || agg) {
        return tdm__sql_plan_group(p, q, in, sel);
    }
    return project(p, q, in, sel);
}

/* ---- Writing the sources and the sink ---- */

/* Plans a statement (see sql_plan.h). */
int tdm__sql_plan(planner *p, const sql_node *stmt)
{
    qstate q = {0};
    int rc = -1;
    const sql_node *sel = stmt->kind == SQLK_INSERT ? stmt->a : stmt;
    p->queries++;
    tdm__sql_describe(p, "query %d (line %d):\n", p->queries, stmt->line);
    rel *out = plan_select(p, &q, sel);
    if (out != NULL && out->kind == REL_SOURCE && out->win.type != NULL) {
        tdm__sql_fail(p, out->win.at,
                      "the rows of a window table function "
                      "are aggregated (GROUP BY window_start, "
                      "window_end) or joined (a window join); "
                      "alone they are not supported yet");
        out = NULL;
    }
    if (out != NULL) {
        rc = 0;
        for (int i = 0; i < q.n_rels && rc == 0; i++) {
            if (q.rels[i]->origin) {
                rc = tdm__sql_flush_source(p, q.rels[i]);
            }
        }
        if (rc == 0) {
            rc = tdm__sql_plan_sink(
                p, out, stmt->kind == SQLK_INSERT ? stmt->text : NULL, stmt);
        }
    }
    for (int i = 0; i < q.n_rels; i++) {
        tdm__sql_free_rel(q.rels[i]);
    }
    if (p->oom) {
        return tdm__sql_fail(p, stmt, "out of memory");
    }
    return rc;
}
