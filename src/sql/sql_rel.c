/* SPDX-License-Identifier: MIT */
/* sql_rel.c - the planner's small tools: relations and their columns,
 * node names, and the keys a plan writes into the job (through the CLI's
 * job bookkeeping, so that every key has the SQL position that asked for
 * it), plus the plan's description that EXPLAIN prints.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql_plan.h"

char *tdm__sql_sdup(planner *p, const char *s)
{
    char *d = s != NULL ? strdup(s) : NULL;
    if (s != NULL && d == NULL) {
        p->oom = 1;
    }
    return d;
}

/* Appends a column to @p r; -1 when out of memory. */
int tdm__sql_add_col(planner *p, rel *r, const char *qual, const char *name,
                     const char *job, const char *type, int rowtime)
{
    pcol *c = realloc(r->cols, (size_t)(r->n_cols + 1) * sizeof *c);
    if (c == NULL) {
        p->oom = 1;
        return -1;
    }
    r->cols = c;
    c = &c[r->n_cols];
    c->qual = tdm__sql_sdup(p, qual);
    c->name = tdm__sql_sdup(p, name);
    c->job = tdm__sql_sdup(p, job);
    c->type = type;
    c->rowtime = rowtime;
    c->used = NULL;
    c->computed = 0;
    if (p->oom) {
        return -1;
    }
    r->n_cols++;
    return 0;
}

/* Inherits a source column's flag (see sql_plan.h). */
void tdm__sql_inherit(rel *r, const pcol *from)
{
    if (r->n_cols > 0) {
        r->cols[r->n_cols - 1].used = from->used;
        r->cols[r->n_cols - 1].computed = from->computed;
    }
}

/* A new relation of @p kind owned by @p q. */
rel *tdm__sql_new_rel(planner *p, qstate *q, int kind, const sql_node *at)
{
    rel *r;
    if (q->n_rels >= MAX_RELS) {
        tdm__sql_fail(p, at, "query too complex (at most %d relations)",
                      MAX_RELS);
        return NULL;
    }
    if ((r = calloc(1, sizeof *r)) == NULL) {
        p->oom = 1;
        return NULL;
    }
    r->kind = kind;
    r->at = at;
    q->rels[q->n_rels++] = r;
    return r;
}

void tdm__sql_free_rel(rel *r)
{
    for (int i = 0; r != NULL && i < r->n_cols; i++) {
        free(r->cols[i].qual);
        free(r->cols[i].name);
        free(r->cols[i].job);
    }
    if (r != NULL) {
        free(r->cols);
        free(r->used);
    }
    free(r);
}

/* A node name not used yet: @p base, else base_2, base_3, ... */
void tdm__sql_unique_name(planner *p, const char *base, char *out, size_t n)
{
    snprintf(out, n, "%s", base);
    for (int k = 2; tdm_job_node(p->cj->job, out) != NULL; k++) {
        snprintf(out, n, "%s_%d", base, k);
    }
}

/* Declares a node; -1 on failure (the job recorded why). */
int tdm__sql_declare(planner *p, tdm_node_kind kind, const char *name,
                     const sql_node *at)
{
    int errors = p->cj->errors;
    if (tdm__cli_job_declare(p->cj, p->err, kind, name, at->line, at->col) !=
        0) {
        p->oom = 1;
        return -1;
    }
    return p->cj->errors > errors ? -1 : 0;
}

/* Sets a key of a node; -1 when out of memory (a bad value is recorded
 * by the job and reported with the other errors). */
int tdm__sql_put(planner *p, tdm_node_kind kind, const char *node,
                 const char *key, const char *value, const sql_node *at)
{
    if (tdm__cli_job_put(p->cj, p->err, kind, node, key, value,
                         at != NULL ? at->line : 1,
                         at != NULL ? at->col : 1) != 0) {
        p->oom = 1;
        return -1;
    }
    return 0;
}

/* Appends to the plan's description (EXPLAIN). */
void tdm__sql_describe(planner *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tdm__sql_describe(planner *p, const char *fmt, ...)
{
    va_list ap;
    size_t room = sizeof p->explain - p->explain_len;
    if (room <= 1) {
        return;
    }
    va_start(ap, fmt);
    int k = vsnprintf(p->explain + p->explain_len, room, fmt, ap);
    va_end(ap);
    p->explain_len += k < 0 ? 0 : (size_t)k < room ? (size_t)k : room - 1;
}
