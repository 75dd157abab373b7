/* SPDX-License-Identifier: MIT */
/* sql_plan.h - planning queries into job nodes (sql_plan.c, sql_expr.c). */
#ifndef TDM_SQL_PLAN_H
#define TDM_SQL_PLAN_H

#include "sql/sql_catalog.h"

/* What a relation is: the rows of a source, a window or a join node. */
enum { REL_SOURCE = 1, REL_WINDOW, REL_JOIN };

/* One column of a relation: its SQL name and the job column holding it. */
typedef struct pcol {
    char *qual;       /* the table's name or alias, or NULL */
    char *name;       /* SQL name */
    char *job;        /* the job column at the node's output */
    const char *type; /* "int64", "double", "string", "bool", "timestamp" */
    int rowtime;      /* 0: not a time column; else the column is the
                         row's timestamp + (rowtime - 1) ms (a window's
                         rows are stamped window_end - 1) */
    int *used;        /* a source column's flag: the query reads it (the
                         source's schema then has it); NULL otherwise */
    int computed;     /* a value the source computes (compute.*) */
} pcol;

/* A window table function over a source. */
typedef struct pwin {
    const char *type; /* "tumbling", "sliding", "cumulate", "session";
                         NULL: none */
    int64_t size, slide, step, gap, offset;
    const sql_node *at;
    const sql_node *partition; /* SESSION's PARTITION BY list */
} pwin;

/* A relation being planned. */
typedef struct rel {
    int kind;
    char node[64];    /* the job node that makes its rows */
    sql_table *table; /* REL_SOURCE */
    int origin;       /* the source node itself (not a projection) */
    struct rel *base; /* REL_SOURCE: the origin whose keys it adds to */
    int *used;        /* origin: which of the table's columns are read */
    pcol *cols;
    int n_cols;
    pwin win; /* REL_SOURCE under a window TVF */
    /* A source's own keys, written when the query is done. */
    char filter[4096];
    char computes[16][600]; /* "field\0expression" pairs as "f=e" */
    char extra_schema[1024];
    int n_computes;
    const sql_node *at;
} rel;

/* The planner of one script. */
typedef struct planner {
    sql_catalog *cat;
    tdm__cli_job *cj;
    FILE *err;
    int queries; /* queries planned so far */
    int oom;
    char msg[512]; /* the error */
    const sql_node *at;
    tdm__cli_job *late_job[8]; /* late output sinks: their job, table and */
    char late_table[8][128];   /* node (EXPLAIN plans into jobs of its own) */
    char late_node[8][64];
    int n_late;
    char explain[8192]; /* the plan's description, for EXPLAIN */
    size_t explain_len;
} planner;

#define MAX_RELS 16

/* The relations of the query being planned (freed when it is done). */
typedef struct qstate {
    rel *rels[MAX_RELS];
    int n_rels;
} qstate;

/* ---- Relations (sql_rel.c) ---- */

char *tdm__sql_sdup(planner *p, const char *s);
/* Appends a column to @p r; -1 when out of memory. */
int tdm__sql_add_col(planner *p, rel *r, const char *qual, const char *name,
                     const char *job, const char *type, int rowtime);
/* Gives the last column of @p r the source column flag of @p from. */
void tdm__sql_inherit(rel *r, const pcol *from);
/* A new relation of @p kind owned by @p q; NULL with p->msg or p->oom. */
rel *tdm__sql_new_rel(planner *p, qstate *q, int kind, const sql_node *at);
void tdm__sql_free_rel(rel *r);
/* A node name not used yet: @p base, else base_2, base_3, ... */
void tdm__sql_unique_name(planner *p, const char *base, char *out, size_t n);
/* Declares a node; -1 on failure (the job recorded why). */
int tdm__sql_declare(planner *p, tdm_node_kind kind, const char *name,
                     const sql_node *at);
/* Sets a key of a node; -1 when out of memory (a refused value is
 * recorded by the job and reported with its position). */
int tdm__sql_put(planner *p, tdm_node_kind kind, const char *node,
                 const char *key, const char *value, const sql_node *at);
/* Appends to the plan's description (EXPLAIN). */
void tdm__sql_describe(planner *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- Parts of a query ----
 *
 * They call downwards only: sql_plan.c (the recursion of SELECT, FROM
 * and subqueries) calls sql_group.c and sql_join.c, which call
 * sql_source.c, sql_window.c and sql_sink.c, which call sql_rel.c and
 * sql_expr.c. */

/* A source relation reading table @p t (sql_source.c). */
rel *tdm__sql_source_rel(planner *p, qstate *q, sql_table *t, const char *alias,
                         const sql_node *at);
/* WHERE over source relation @p r: ANDed into its base's filter. */
int tdm__sql_where(planner *p, rel *r, const sql_node *w);
/* Writes a source's keys once its query is planned. */
int tdm__sql_flush_source(planner *p, const rel *r);
/* A window TVF's arguments in their positions (sql_window.c): how many,
 * -1 with p->msg set. */
int tdm__sql_tvf_args(planner *p, const sql_node *f, const sql_node **out,
                      int cap);
/* The sink of an INSERT INTO @p table, or of a bare SELECT (NULL), and
 * the producer's `sink` key (sql_sink.c). */
int tdm__sql_plan_sink(planner *p, const rel *out, const char *table,
                       const sql_node *at);

/* Computes @p e into a new field of source @p r (its name in @p field,
 * its type in *type); -1 with p->msg set. */
int tdm__sql_compute_field(planner *p, rel *r, const sql_node *e, char *field,
                           size_t n, const char **type);
/* The window of TUMBLE/HOP/SESSION/CUMULATE @p fn with the @p n interval
 * arguments @p iv, in their positions; -1 with p->msg set. */
int tdm__sql_window_spec(planner *p, const char *fn, const sql_node *const *iv,
                         int n, const sql_node *at, pwin *w);
/* Starts planning into job @p cj (a new job or one planned before). */
void tdm__sql_plan_begin(planner *p, tdm__cli_job *cj);
/* Gives window or join @p node the SETs that apply to operators: its
 * allowed lateness (windows) and its late output (sql_plan.c). */
int tdm__sql_operator_keys(planner *p, tdm_node_kind kind, const char *node,
                           const sql_node *at);
/* GROUP BY over a window of @p in (sql_group.c). */
rel *tdm__sql_plan_group(planner *p, qstate *q, rel *in, const sql_node *sel);
/* FROM a JOIN b ON cond, or FROM a, b WHERE cond (@p where): the join
 * of the planned sides @p l and @p r (sql_join.c). */
rel *tdm__sql_join(planner *p, qstate *q, const sql_node *join, rel *l, rel *r,
                   const sql_node *where);
/* Plans INSERT INTO (@p stmt SQLK_INSERT) or a bare SELECT into nodes of
 * p->cj.  Returns 0, or -1 with p->msg and p->at set. */
int tdm__sql_plan(planner *p, const sql_node *stmt);

/* ---- Expressions (sql_expr.c) ---- */

/* Finds the column @p id (SQLK_ID) of @p r; NULL with p->msg set. */
const pcol *tdm__sql_resolve(planner *p, const rel *r, const sql_node *id);
/* Writes @p e as the job's expression text over @p r's job columns.
 * Returns 0, or -1 with p->msg and p->at set. */
int tdm__sql_expr_text(planner *p, const rel *r, const sql_node *e, char *buf,
                       size_t n);
/* The job type of @p e over @p r ("int64", "double", ...); NULL with
 * p->msg set when it cannot be told. */
const char *tdm__sql_expr_type(planner *p, const rel *r, const sql_node *e);
/* Whether @p e is a call of an aggregate function (COUNT, SUM, ...). */
bool tdm__sql_is_aggregate(const sql_node *e);
/* Sets p->msg and p->at; returns -1. */
int tdm__sql_fail(planner *p, const sql_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
