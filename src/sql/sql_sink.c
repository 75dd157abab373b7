/* SPDX-License-Identifier: MIT */
/* sql_sink.c - where a query's rows go: the table of an INSERT INTO
 * (its columns by position, types checked: P17), a bare SELECT's
 * `stdout` sink, the sink's `select` naming the output columns, and the
 * SETs for operators: allowed lateness and the late output table, whose
 * sink is declared once per job (L1, L2).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sql/sql_plan.h"

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
 * type @p to (P17: as Flink, an integer widens to a double or a
 * DECIMAL(p, 0), printed alike; a decimal
 * goes to a decimal column of the same scale, whatever its precision -
 * SUM's DECIMAL(18, s) to a DECIMAL(10, s) column - since the sink
 * prints the value as it comes; nothing else converts by itself: CAST
 * to the column's DECIMAL(p, s)). */
static bool assignable(const char *from, const char *to)
{
    int fs = tdm__sql_decimal_scale(from);
    return strcmp(from, to) == 0 ||
           (strcmp(from, "int64") == 0 && strcmp(to, "double") == 0) ||
           (fs >= 0 && fs == tdm__sql_decimal_scale(to)) ||
           (strcmp(from, "int64") == 0 && tdm__sql_decimal_scale(to) == 0);
}

/* Whether job column @p job is one of the comma-separated @p list
 * (NULL: @p job NULL counts its names). */
static int listed(const char *list, const char *job)
{
    int count = 0;
    for (const char *s = list; s != NULL && *s != '\0';) {
        while (*s == ' ' || *s == ',') {
            s++;
        }
        size_t len = strcspn(s, ", ");
        if (len > 0 && job == NULL) {
            count++;
        } else if (len > 0 && len == strlen(job) && strncmp(s, job, len) == 0) {
            return 1;
        }
        s += len;
    }
    return count;
}

/* P19: a table with a PRIMARY KEY is an upsert table: it takes a
 * windowed aggregation's rows (output_mode upsert, set by the caller),
 * and its key must be the rows' upsert key, the GROUP BY columns and
 * the window (window_start or window_end, or both), the columns of the
 * INSERT matched by position.  Other queries' changelogs (non-windowed
 * GROUP BY) are not supported yet. */
static int primary_key(planner *p, const sql_table *t, const rel *out,
                       const sql_node *at)
{
    if (out->kind != REL_WINDOW) {
        return tdm__sql_fail(p, at,
                             "INSERT INTO %s: a PRIMARY KEY table (upsert) "
                             "takes the rows of a windowed GROUP BY; "
                             "other queries write no changelog yet (drop "
                             "the PRIMARY KEY to append)",
                             t->name);
    }
    const char *keys = tdm__cli_job_value(p->cj, out->node, "key_by");
    int n_keys = 0, n_bounds = 0, n_listed = 0;
    for (int i = 0; i < out->n_cols; i++) {
        bool key = listed(keys, out->cols[i].job) > 0;
        n_keys += key;
        bool in_pk = false;
        for (const sql_node *k = t->pkey; k != NULL && !in_pk; k = k->next) {
            in_pk = strcmp(k->text, t->cols[i].name) == 0;
        }
        bool bound = strcmp(out->cols[i].job, "window_start") == 0 ||
                     strcmp(out->cols[i].job, "window_end") == 0;
        if (in_pk && !key && !bound) {
            return tdm__sql_fail(p, at,
                                 "INSERT INTO %s: PRIMARY KEY column %s "
                                 "receives %s, which is neither a GROUP BY "
                                 "column nor the window: the key of a "
                                 "window's rows is its GROUP BY columns "
                                 "and its window",
                                 t->name, t->cols[i].name, out->cols[i].name);
        }
        n_listed += in_pk && key;
        n_bounds += in_pk && bound;
    }
    if (n_keys < listed(keys, NULL) || n_listed < n_keys || n_bounds == 0) {
        return tdm__sql_fail(p, at,
                             "INSERT INTO %s: the PRIMARY KEY must be the "
                             "query's GROUP BY columns (each written to "
                             "the table) and window_start or window_end: "
                             "the key of a window's rows",
                             t->name);
    }
    return 0;
}

/* The sink of an INSERT INTO @p table, or of a bare SELECT (NULL: a
 * stdout sink).  The producer's rows go to it, named by position. */
int tdm__sql_plan_sink(planner *p, const rel *out, const char *table,
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
            if (t->cols[i].meta != NULL) { /* P18 */
                return tdm__sql_fail(p, at,
                                     "INSERT INTO %s: column %s is METADATA "
                                     "(it is read from Kafka messages; "
                                     "writing message metadata is not "
                                     "supported yet)",
                                     t->name, t->cols[i].name);
            }
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
    if (t != NULL && t->pkey != NULL) {
        if (primary_key(p, t, out, at) != 0) {
            return -1;
        }
        tdm__sql_put(p, TDM_NODE_WINDOW, out->node, "output_mode", "upsert",
                     at); /* P19: refired results replace their row. */
    } else if (out->kind == REL_WINDOW && late != NULL &&
               strcmp(late, "0ms") != 0) {
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
