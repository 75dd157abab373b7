/* SPDX-License-Identifier: MIT */
/* sql_plan.c - queries into job nodes.
 *
 * A query is planned bottom-up into relations (sql_plan.h): a table read
 * in FROM becomes a source node; a window table function (TUMBLE, HOP,
 * SESSION) marks the source's rows with a window; GROUP BY over a window
 * becomes a window node keyed by the other group columns, its aggregates
 * the SELECT list's; WHERE before the window becomes the source's
 * `filter`; computed values become `compute.*` fields of the source; the
 * SELECT list of the outermost query becomes the sink's `select`, which
 * names and orders the output columns.  A subquery in FROM is a node
 * another one reads (docs/runtime.md, Chained operators).  Rules P1-P12
 * mark what is refused and why; docs/sql.md lists what is supported.
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

/* ---- FROM ---- */

/* A source relation reading table @p t (P1: a table is read by a source
 * node of its own in every query). */
static rel *source_rel(planner *p, qstate *q, sql_table *t, const char *alias,
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
        if (c->meta != NULL) { /* P2 */
            tdm__sql_fail(p, c->at, "METADATA columns are not supported yet");
            return NULL;
        }
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

/* The milliseconds of an INTERVAL argument; -1 with p->msg set. */
static int64_t interval_arg(planner *p, const sql_node *e, const char *what)
{
    int64_t ms;
    if (e == NULL || e->kind != SQLK_INTERVAL ||
        (ms = tdm__sql_interval_ms(e->text, e->unit)) <= 0) {
        tdm__sql_fail(p, e,
                      "expected the %s as a positive INTERVAL, e.g. "
                      "INTERVAL '10' SECOND",
                      what);
        return -1;
    }
    return ms;
}

/* The window of a TVF or of a legacy GROUP BY TUMBLE/HOP/SESSION(ts, ..)
 * from its interval arguments @p iv (P3: CUMULATE is not supported). */
int tdm__sql_window_spec(planner *p, const char *fn, const sql_node *const *iv,
                         int n, const sql_node *at, pwin *w)
{
    int rest; /* the offset's index */
    w->at = at;
    if (strcmp(fn, "TUMBLE") == 0) {
        w->type = "tumbling";
        if ((w->size = interval_arg(p, n > 0 ? iv[0] : at, "window size")) <
            0) {
            return -1;
        }
        rest = 1;
    } else if (strcmp(fn, "HOP") == 0) {
        w->type = "sliding";
        if ((w->slide = interval_arg(p, n > 0 ? iv[0] : at, "slide")) < 0 ||
            (w->size = interval_arg(p, n > 1 ? iv[1] : at, "window size")) <
                0) {
            return -1;
        }
        rest = 2;
    } else if (strcmp(fn, "SESSION") == 0) {
        w->type = "session";
        if ((w->gap = interval_arg(p, n > 0 ? iv[0] : at, "session gap")) < 0) {
            return -1;
        }
        return n <= 1 ? 0
                      : tdm__sql_fail(p, iv[1],
                                      "SESSION takes nothing after "
                                      "the gap");
    } else if (strcmp(fn, "CUMULATE") == 0) {
        return tdm__sql_fail(p, at, "CUMULATE windows are not supported yet");
    } else {
        return tdm__sql_fail(p, at,
                             "unknown window function %s (known: TUMBLE, "
                             "HOP, SESSION)",
                             fn);
    }
    /* P3: an optional offset, then nothing. */
    if (n > rest && (w->offset = interval_arg(p, iv[rest], "offset")) < 0) {
        return -1;
    }
    if (n > rest + 1) {
        return tdm__sql_fail(p, iv[rest + 1],
                             "%s takes nothing after the "
                             "offset",
                             fn);
    }
    return 0;
}

/* The arguments of window TVF @p f in their positions: by position, or
 * by name (DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => ...),
 * Flink's two forms (P16: mixing them, an unknown or a repeated name is
 * refused).  Returns how many, -1 with p->msg set. */
static int tvf_args(planner *p, const sql_node *f, const sql_node **out,
                    int cap)
{
    static const char *const order[][6] = {
        {"TUMBLE", "DATA", "TIMECOL", "SIZE", "OFFSET", NULL},
        {"HOP", "DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"},
        {"SESSION", "DATA", "TIMECOL", "GAP", NULL, NULL},
        {"CUMULATE", "DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"}};
    int n = 0, named = 0;
    for (const sql_node *a = f->a; a != NULL; a = a->next) {
        named += a->alias != NULL;
        if (n >= cap) {
            return tdm__sql_fail(p, a, "too many arguments");
        }
        out[n++] = a;
    }
    if (named == 0) {
        return n;
    }
    size_t k = 0;
    while (k < 4 && strcmp(order[k][0], f->text) != 0) {
        k++;
    }
    if (named != n || k == 4) {
        return tdm__sql_fail(p, f,
                             "%s: give every argument by name or "
                             "none",
                             f->text);
    }
    int m = 0;
    for (int slot = 1; slot < 6 && order[k][slot] != NULL; slot++) {
        for (const sql_node *a = f->a; a != NULL; a = a->next) {
            if (strcasecmp(a->alias, order[k][slot]) == 0) {
                out[m++] = a;
            }
        }
        if (m != slot && m < n) { /* A gap: a later one is given alone. */
            break;
        }
    }
    if (m != n) {
        return tdm__sql_fail(
            p, f,
            "%s: unknown, missing or repeated "
            "argument names (%s takes %s, %s, %s%s%s%s%s)",
            f->text, f->text, order[k][1], order[k][2], order[k][3],
            order[k][4] ? ", " : "", order[k][4] ? order[k][4] : "",
            order[k][5] ? ", " : "", order[k][5] ? order[k][5] : "");
    }
    return n;
}

/* Adds the window columns of a TVF. */
static int window_cols(planner *p, rel *r, const char *qual)
{
    return tdm__sql_add_col(p, r, qual, "window_start", "window_start",
                            "timestamp", 0) != 0 ||
                   tdm__sql_add_col(p, r, qual, "window_end", "window_end",
                                    "timestamp", 0) != 0
               ? -1
               : 0;
}

/* TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size)) and the like (P4: the
 * descriptor names the table's event-time column). */
static rel *tvf_rel(planner *p, qstate *q, const sql_node *f)
{
    const sql_node *args[8];
    int n = tvf_args(p, f, args, 8);
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
    rel *r = source_rel(p, q, t, f->alias, f);
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
    rel *r = tdm__sql_plan_select(p, q, s->a);
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

/* FROM: a table, a window TVF, a subquery or a join. */
rel *tdm__sql_plan_from(planner *p, qstate *q, const sql_node *f)
{
    sql_table *t;
    switch (f->kind) {
    case SQLK_TABLE:
        if ((t = tdm__sql_catalog_find(p->cat, f->text)) == NULL) {
            tdm__sql_fail(p, f, "unknown table %s", f->text);
            return NULL;
        }
        return source_rel(p, q, t, f->alias, f);
    case SQLK_TVF:
        return tvf_rel(p, q, f);
    case SQLK_SUBQUERY:
        return subquery_rel(p, q, f);
    default:
        return tdm__sql_plan_join(p, q, f, NULL);
    }
}

/* ---- WHERE and computed values at the source ---- */

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
static int plan_where(planner *p, rel *r, const sql_node *w)
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
 * @p field.  P8: only numbers and timestamps can be computed. */
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
    if (strcmp(*type, "int64") != 0 && strcmp(*type, "double") != 0 &&
        strcmp(*type, "timestamp") != 0) {
        return tdm__sql_fail(p, e,
                             "a computed %s value cannot be an output "
                             "column yet (numbers and timestamps can); "
                             "use it in WHERE",
                             *type);
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
rel *tdm__sql_plan_select(planner *p, qstate *q, const sql_node *sel)
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
    rel *in = sel->b->kind == SQLK_JOIN
                  ? tdm__sql_plan_join(p, q, sel->b, sel->c)
                  : tdm__sql_plan_from(p, q, sel->b);
    if (in == NULL ||
        (sel->b->kind != SQLK_JOIN && plan_where(p, in, sel->c) != 0)) {
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

/* Writes a source's keys: the table's, the SETs', the filter and the
 * computed fields. */
static int flush_source(planner *p, const rel *r)
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

/* The sink node of late output table @p name, declared once per job
 * (L1: its rows are the late records' fields and "ts", so it gets no
 * select). */
static const char *late_sink(planner *p, const char *name, const sql_node *at)
{
    sql_kv kv[32];
    for (int i = 0; i < p->n_late; i++) {
        if (p->late_job[i] == p->cj &&
            strcasecmp(p->late_table[i], name) == 0) {
            return p->late_node[i];
        }
    }
    sql_table *t = tdm__sql_catalog_find(p->cat, name);
    int n;
    if (t == NULL) {
        tdm__sql_fail(p, at,
                      "SET 'tidemark.late-output' names table %s, "
                      "which does not exist (CREATE TABLE it first)",
                      name);
        return NULL;
    }
    if (p->n_late >= 8 ||
        (n = tdm__sql_connector_keys(p->cat, t, NULL, kv, 32)) < 0) {
        tdm__sql_fail(p, at, "%s",
                      p->n_late >= 8 ? "at most 8 late output "
                                       "tables"
                                     : p->cat->err);
        return NULL;
    }
    char *node = p->late_node[p->n_late];
    tdm__sql_unique_name(p, t->name, node, sizeof p->late_node[0]);
    if (tdm__sql_declare(p, TDM_NODE_SINK, node, at) != 0) {
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        tdm__sql_put(p, TDM_NODE_SINK, node, kv[i].key, kv[i].value, kv[i].at);
    }
    p->late_job[p->n_late] = p->cj;
    snprintf(p->late_table[p->n_late++], sizeof p->late_table[0], "%s",
             t->name);
    tdm__sql_describe(p, "  %s: sink %s of late records\n", node, t->connector);
    return node;
}

/* Starts planning into @p cj (see sql_plan.h): late sinks remembered
 * for a job at the same address belong to a job that is gone. */
void tdm__sql_plan_begin(planner *p, tdm__cli_job *cj)
{
    int k = 0;
    p->cj = cj;
    for (int i = 0; i < p->n_late; i++) {
        if (p->late_job[i] != cj || cj->n_decls > 0) {
            p->late_job[k] = p->late_job[i];
            memmove(p->late_table[k], p->late_table[i],
                    sizeof p->late_table[0]);
            memmove(p->late_node[k++], p->late_node[i], sizeof p->late_node[0]);
        }
    }
    p->n_late = k;
}

/* The operator SETs (see sql_plan.h).  L2: allowed lateness applies to
 * windows (a join has none: its late records are dropped or go to the
 * late output); a window that refires writes its results as a changelog
 * (output_mode retract, set by plan_sink). */
int tdm__sql_operator_keys(planner *p, tdm_node_kind kind, const char *node,
                           const sql_node *at)
{
    sql_kv kv[16];
    int n = tdm__sql_setting_keys(p->cat, SET_WINDOW, kv, 16);
    for (int i = 0; i < n; i++) {
        const char *value = kv[i].value;
        if (strcmp(kv[i].key, "late_output") == 0) {
            if (value[0] != '\0' &&
                (value = late_sink(p, value, kv[i].at)) == NULL) {
                return -1;
            }
        } else if (kind != TDM_NODE_WINDOW) {
            continue;
        }
        if (value[0] != '\0' &&
            tdm__sql_put(p, kind, node, kv[i].key, value, kv[i].at) != 0) {
            return -1;
        }
    }
    return p->oom ? -1 : 0;
}

/* The sink's `select`: each output column under its name. */
static void select_text(const rel *out, char **names, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < out->n_cols && used < n; i++) {
        const char *name = names != NULL ? names[i] : out->cols[i].name;
        if (strcmp(name, out->cols[i].job) == 0) {
            used += (size_t)snprintf(buf + used, n - used, "%s%s",
                                     i ? ", " : "", name);
        } else {
            used += (size_t)snprintf(buf + used, n - used, "%s%s AS %s",
                                     i ? ", " : "", out->cols[i].job, name);
        }
    }
}

/* Whether a value of job type @p from may be written to a column of
 * type @p to (P17: as Flink, an integer widens to a double; nothing else
 * converts by itself). */
static bool assignable(const char *from, const char *to)
{
    return strcmp(from, to) == 0 ||
           (strcmp(from, "int64") == 0 && strcmp(to, "double") == 0);
}

/* The sink of an INSERT INTO @p table, or of a bare SELECT (NULL: a
 * stdout sink).  The producer's rows go to it, named by position. */
static int plan_sink(planner *p, const rel *out, const char *table,
                     const sql_node *at)
{
    char node[64], sel[4096];
    sql_kv kv[32];
    char *names[256];
    int n = 1;
    sql_table *t = NULL;
    if (table != NULL) {
        if ((t = tdm__sql_catalog_find(p->cat, table)) == NULL) {
            return tdm__sql_fail(p, at, "unknown table %s", table);
        }
        if (t->n_cols != out->n_cols) {
            return tdm__sql_fail(p, at,
                                 "INSERT INTO %s: the query has %d "
                                 "column(s), the table %d",
                                 t->name, out->n_cols, t->n_cols);
        }
        for (int i = 0; i < t->n_cols && i < 256; i++) {
            names[i] = (char *)t->cols[i].name;
            if (!assignable(out->cols[i].type, t->cols[i].type)) {
                return tdm__sql_fail(p, at,
                                     "INSERT INTO %s: the query's column %d "
                                     "(%s) is %s, the table's %s is %s; CAST "
                                     "it",
                                     t->name, i + 1, out->cols[i].name,
                                     out->cols[i].type, t->cols[i].name,
                                     t->cols[i].type);
            }
        }
        if ((n = tdm__sql_connector_keys(p->cat, t, NULL, kv, 32)) < 0) {
            return tdm__sql_fail(p, p->cat->err_at, "%s", p->cat->err);
        }
        tdm__sql_unique_name(p, t->name, node, sizeof node);
    } else {
        snprintf(kv[0].key, sizeof kv[0].key, "type");
        snprintf(kv[0].value, sizeof kv[0].value, "stdout");
        kv[0].at = at;
        tdm__sql_unique_name(p, "print", node, sizeof node);
    }
    if (tdm__sql_declare(p, TDM_NODE_SINK, node, at) != 0) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        tdm__sql_put(p, TDM_NODE_SINK, node, kv[i].key, kv[i].value, kv[i].at);
    }
    const char *late = tdm__cli_job_value(p->cj, out->node, "allowed_lateness");
    if (out->kind == REL_WINDOW && late != NULL && strcmp(late, "0ms") != 0) {
        tdm__sql_put(p, TDM_NODE_WINDOW, out->node, "output_mode", "retract",
                     at); /* L2: refired results are updates. */
    }
    select_text(out, t != NULL ? names : NULL, sel, sizeof sel);
    tdm__sql_put(p, TDM_NODE_SINK, node, "select", sel, at);
    tdm__sql_put(p,
                 out->kind == REL_SOURCE   ? TDM_NODE_SOURCE
                 : out->kind == REL_WINDOW ? TDM_NODE_WINDOW
                                           : TDM_NODE_JOIN,
                 out->node, "sink", node, at);
    tdm__sql_describe(p, "  %s: sink %s, columns %s\n", node,
                      t != NULL ? t->connector : "print", sel);
    return p->oom ? -1 : 0;
}

/* Plans a statement (see sql_plan.h). */
int tdm__sql_plan(planner *p, const sql_node *stmt)
{
    qstate q = {0};
    int rc = -1;
    const sql_node *sel = stmt->kind == SQLK_INSERT ? stmt->a : stmt;
    p->queries++;
    tdm__sql_describe(p, "query %d (line %d):\n", p->queries, stmt->line);
    rel *out = tdm__sql_plan_select(p, &q, sel);
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
                rc = flush_source(p, q.rels[i]);
            }
        }
        if (rc == 0) {
            rc = plan_sink(p, out,
                           stmt->kind == SQLK_INSERT ? stmt->text : NULL, stmt);
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
