/* SPDX-License-Identifier: MIT */
/* sql_catalog.h - the tables a script declared, and the job keys their
 * connector options map to (sql_catalog.c); the planner (sql_plan.c)
 * turns queries over them into job nodes. */
#ifndef TDM_SQL_CATALOG_H
#define TDM_SQL_CATALOG_H

#include "sql/sql.h"

/* One column of a table. */
typedef struct sql_col {
    const char *name;     /* its SQL name */
    char *field;          /* the job's field name */
    const char *type;     /* the job schema type: "int64", "double", ... */
    const sql_node *expr; /* a computed column's expression, or NULL */
    const char *meta;     /* METADATA FROM key, or NULL */
    const sql_node *at;   /* where it was declared */
} sql_col;

/* One CREATE TABLE. */
typedef struct sql_table {
    const char *name;
    const sql_node *def; /* the statement (borrowed from the script) */
    sql_col *cols;
    int n_cols;
    int rowtime;      /* the WATERMARK FOR column, -1: none */
    int64_t wm_delay; /* its delay in ms */
    const char *connector;
    int uses;             /* queries that read it so far */
    const sql_node *pkey; /* PRIMARY KEY (...) NOT ENFORCED: its column
                             names (a list of SQLK_ID), or NULL */
} sql_table;

/* One SET. */
typedef struct sql_setting {
    const char *key, *value;
    const sql_node *at;
} sql_setting;

typedef struct sql_catalog {
    sql_table *tables;
    int n_tables;
    sql_setting *sets;
    int n_sets;
    char err[512]; /* the last error */
    const sql_node *err_at;
} sql_catalog;

/* Adds the table of a CREATE TABLE statement; -1 with cat->err set. */
int tdm__sql_catalog_add(sql_catalog *cat, const sql_node *create);
/* Records a SET; -1 with cat->err set (an unknown key). */
int tdm__sql_catalog_set(sql_catalog *cat, const sql_node *set);
/* The table named @p name (case-insensitive), or NULL. */
sql_table *tdm__sql_catalog_find(sql_catalog *cat, const char *name);
/* The column @p name of @p t (case-insensitive), -1 if none. */
int tdm__sql_table_col(const sql_table *t, const char *name);
/* The value of option @p key of @p t, or NULL. */
const char *tdm__sql_table_option(const sql_table *t, const char *key);
void tdm__sql_catalog_free(sql_catalog *cat);
/* The job type "decimal(p,s)" (static storage) for 1 <= p <= 18,
 * 0 <= s <= p; NULL otherwise. */
const char *tdm__sql_decimal_type(int p, int s);
/* The scale of job type @p type when it is a decimal, else -1. */
int tdm__sql_decimal_scale(const char *type);

/* A key/value pair the job gets, and where it came from. */
typedef struct sql_kv {
    char key[128];
    char value[2048];
    const sql_node *at;
} sql_kv;

/* The source keys of table @p t's connector and options (@p used: which
 * columns the query reads; the schema has those and the event time), or
 * its sink keys (@p used NULL), in order (type first).  Returns how many were
 * written to
 * @p out (at most @p cap), -1 with cat->err set for an option that does
 * not apply. */
int tdm__sql_connector_keys(sql_catalog *cat, const sql_table *t,
                            const int *used, sql_kv *out, int cap);
/* What a SET key applies to. */
enum { SET_JOB = 0, SET_SOURCE, SET_WINDOW };

/* The keys of the SETs so far that apply to @p scope (the job, every
 * source, every window), as tdm__sql_connector_keys; a key set twice is
 * given twice, the later last. */
int tdm__sql_setting_keys(sql_catalog *cat, int scope, sql_kv *out, int cap);

/* A Flink duration ("5 s", "1 min", "200ms", "10") as tidemark text
 * ("5000ms"); false when it is not one. */
bool tdm__sql_duration(const char *in, char *out, size_t n);

#endif
