/* SPDX-License-Identifier: MIT */
/* sql_load.c - a SQL script as a job: runs the statements in order.
 *
 * CREATE TABLE and SET fill the catalog; INSERT INTO and bare SELECT are
 * planned into the job (sql_plan.c); EXPLAIN plans its statement into a
 * scratch job and prints it (the YAML job it is equivalent to, and what
 * each node does); SHOW TABLES and DESCRIBE print from the catalog.  The
 * first error stops the script, printed with its line, column and a
 * caret under the SQL text (rules L1-L4).  The job then validates and
 * runs exactly as a YAML job does (cmd_run.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql_plan.h"

/* A value as YAML: plain when it is simple, else double-quoted. */
static void yaml_value(FILE *out, const char *v)
{
    bool plain = v[0] != '\0';
    for (const char *s = v; *s; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || strchr("_./-", *s) != NULL)) {
            plain = false;
        }
    }
    if (plain) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (const char *s = v; *s; s++) {
        if (*s == '"' || *s == '\\') {
            fputc('\\', out);
        }
        fputc(*s, out);
    }
    fputc('"', out);
}

/* Prints a job as the YAML file it is equivalent to. */
static void print_yaml(FILE *out, const tdm__cli_job *cj)
{
    static const char *const sections[] = {NULL, "sources", "windows", "joins",
                                           "sinks"};
    for (size_t i = 0; i < cj->n_entries; i++) {
        if (cj->entries[i].node == NULL) {
            fprintf(out, "%s: ", cj->entries[i].key);
            yaml_value(out, cj->entries[i].value);
            fputc('\n', out);
        }
    }
    for (int kind = 1; kind <= 4; kind++) {
        bool head = false;
        for (size_t d = 0; d < cj->n_decls; d++) {
            if ((int)cj->decls[d].kind != kind) {
                continue;
            }
            if (!head) {
                fprintf(out, "%s:\n", sections[kind]);
                head = true;
            }
            fprintf(out, "  %s:\n", cj->decls[d].name);
            for (size_t i = 0; i < cj->n_entries; i++) {
                const tdm__cli_entry *e = &cj->entries[i];
                if (e->node != NULL &&
                    strcmp(e->node, cj->decls[d].name) == 0) {
                    fprintf(out, "    %s: ", e->key);
                    yaml_value(out, e->value);
                    fputc('\n', out);
                }
            }
        }
    }
}

/* The state of one script being loaded. */
typedef struct loader {
    const char *path;
    const char *text;
    size_t len;
    sql_catalog cat;
    planner pl;
    FILE *out, *err;
    bool explain; /* --explain: every query is explained */
    bool runs;
    tdm__sql_stmt **stmts; /* every script's trees: the catalog borrows */
    int *n_stmts;
    int n_scripts;
} loader;

/* Prints an error at a node with a caret (L1: the first error stops). */
static int error_at(loader *L, const sql_node *at, const char *msg)
{
    tdm__sql_caret(L->err, L->path, L->text, L->len, at ? at->line : 1,
                   at ? at->col : 1, msg);
    return -1;
}

/* Plans @p stmt into @p cj; -1 with the error printed. */
static int plan_into(loader *L, tdm__cli_job *cj, const sql_node *stmt)
{
    tdm__sql_plan_begin(&L->pl, cj);
    L->pl.explain_len = 0;
    L->pl.explain[0] = '\0';
    int errors = cj->errors;
    if (tdm__sql_plan(&L->pl, stmt) != 0) {
        return error_at(L, L->pl.at, L->pl.msg);
    }
    if (cj->errors > errors) { /* L2: a key the library refused. */
        tdm__cli_job_flush(cj, L->err);
        return -1;
    }
    return 0;
}

/* EXPLAIN: the plan of one statement, printed (L3: nothing runs). */
static int explain(loader *L, const sql_node *stmt)
{
    tdm__cli_job *cj = NULL;
    int rc = -1;
    if (tdm__cli_job_new(L->path, &cj) != TDM_EXIT_OK) {
        tdm__cli_job_free(cj);
        return error_at(L, stmt, "out of memory");
    }
    if (plan_into(L, cj, stmt) == 0) {
        fprintf(L->out, "== Plan ==\n%s\n== The job, as YAML ==\n",
                L->pl.explain);
        print_yaml(L->out, cj);
        rc = 0;
    }
    tdm__cli_job_free(cj);
    return rc;
}

/* DESCRIBE t. */
static int describe_table(loader *L, const sql_node *stmt)
{
    sql_table *t = tdm__sql_catalog_find(&L->cat, stmt->text);
    if (t == NULL) {
        return error_at(L, stmt, "unknown table");
    }
    for (int i = 0; i < t->n_cols; i++) {
        const sql_col *c = &t->cols[i];
        fprintf(L->out, "%-20s %-10s%s%s%s%s\n", c->name, c->type,
                i == t->rowtime ? " *ROWTIME*" : "",
                c->expr != NULL ? " (computed)" : "",
                c->meta != NULL ? " METADATA FROM " : "",
                c->meta != NULL ? c->meta : "");
    }
    if (t->rowtime >= 0) {
        fprintf(L->out, "watermark: %s - %lld ms\n", t->cols[t->rowtime].name,
                (long long)t->wm_delay);
    }
    return 0;
}

/* Runs one statement. */
static int statement(loader *L, tdm__cli_job *cj, const sql_node *s)
{
    switch (s->kind) {
    case SQLK_CREATE_TABLE:
        return tdm__sql_catalog_add(&L->cat, s) == 0
                   ? 0
                   : error_at(L, L->cat.err_at, L->cat.err);
    case SQLK_SET:
        return tdm__sql_catalog_set(&L->cat, s) == 0
                   ? 0
                   : error_at(L, L->cat.err_at, L->cat.err);
    case SQLK_EXPLAIN:
        return explain(L, s->a);
    case SQLK_SHOW_TABLES:
        for (int i = 0; i < L->cat.n_tables; i++) {
            fprintf(L->out, "%s\n", L->cat.tables[i].name);
        }
        return 0;
    case SQLK_DESCRIBE:
        return describe_table(L, s);
    case SQLK_INSERT:
    case SQLK_SELECT:
        if (L->explain) {
            return explain(L, s);
        }
        L->runs = true;
        return plan_into(L, cj, s);
    default: /* L4 */
        return error_at(L, s, "CREATE VIEW is not supported yet");
    }
}

/* The job keys of the SETs, and the job's name (the script's base name
 * unless 'pipeline.name' is set). */
static int job_keys(loader *L, tdm__cli_job *cj)
{
    sql_kv kv[32];
    char name[128];
    const char *base = strrchr(L->path, '/');
    base = base != NULL ? base + 1 : L->path;
    snprintf(name, sizeof name, "%s", base);
    char *dot = strrchr(name, '.');
    if (dot != NULL && dot != name) {
        *dot = '\0';
    }
    if (tdm__cli_job_put(cj, L->err, 0, NULL, "name", name, 1, 1) != 0) {
        return -1;
    }
    int n = tdm__sql_setting_keys(&L->cat, SET_JOB, kv, 32);
    for (int i = 0; i < n; i++) {
        if (tdm__cli_job_put(cj, L->err, 0, NULL, kv[i].key, kv[i].value,
                             kv[i].at->line, kv[i].at->col) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Keeps a script's trees until the loader is done; -1 when out of
 * memory. */
static int keep(loader *L, tdm__sql_stmt *st, int n)
{
    tdm__sql_stmt **a =
        realloc(L->stmts, (size_t)(L->n_scripts + 1) * sizeof *a);
    if (a == NULL) {
        return -1;
    }
    L->stmts = a;
    int *c = realloc(L->n_stmts, (size_t)(L->n_scripts + 1) * sizeof *c);
    if (c == NULL) {
        return -1;
    }
    L->n_stmts = c;
    a[L->n_scripts] = st;
    c[L->n_scripts++] = n;
    return 0;
}

/* Frees what a loader kept: the catalog and the trees. */
static void loader_done(loader *L)
{
    tdm__sql_catalog_free(&L->cat);
    for (int i = 0; i < L->n_scripts; i++) {
        tdm__sql_stmts_free(L->stmts[i], L->n_stmts[i]);
    }
    free(L->stmts);
    free(L->n_stmts);
}

/* Parses @p text (@p name in messages) into *st, *n: TDM_EXIT_OK, or
 * the exit code of an error, printed (the statements before it are
 * kept). */
static int parse_text(loader *L, const char *name, const char *text, size_t len,
                      tdm__sql_stmt **st, int *n)
{
    int line = 0, col = 0;
    char msg[512];
    L->path = name;
    L->text = text;
    L->len = len;
    int k = tdm__sql_parse(text, len, st, n, msg, sizeof msg, &line, &col);
    if (k == -2) {
        fprintf(L->err, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    if (k == -1) {
        tdm__sql_caret(L->err, name, text, len, line, col, msg);
        return TDM_EXIT_INVALID;
    }
    return TDM_EXIT_OK;
}

/* Runs the statements of one script's text (@p name in messages): 0,
 * or an exit code. */
static int run_script(loader *L, tdm__cli_job *cj, const char *name,
                      const char *text, size_t len)
{
    tdm__sql_stmt *st = NULL;
    int n = 0;
    int rc = parse_text(L, name, text, len, &st, &n);
    for (int i = 0; i < n && rc == TDM_EXIT_OK; i++) {
        if (statement(L, cj, st[i].tree) != 0) {
            rc = L->pl.oom ? TDM_EXIT_RUNTIME : TDM_EXIT_INVALID;
        }
    }
    if (keep(L, st, n) != 0) { /* Freed at the end: the catalog borrows. */
        tdm__sql_stmts_free(st, n);
        return TDM_EXIT_RUNTIME;
    }
    return rc;
}

/* Loads scripts' texts as a job (see sql.h). */
int tdm__sql_load_texts(const tdm__sql_text *texts, int n_texts,
                        bool explain_only, FILE *out, tdm__cli_job **cj_out,
                        bool *runs, FILE *err)
{
    loader L = {.out = out, .err = err, .explain = explain_only};
    int rc = TDM_EXIT_OK;
    *runs = false;
    if (tdm__cli_job_new(texts[n_texts - 1].name, cj_out) != TDM_EXIT_OK) {
        fprintf(err, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    L.pl.cat = &L.cat;
    L.pl.err = err;
    for (int i = 0; i < n_texts && rc == TDM_EXIT_OK; i++) {
        rc =
            run_script(&L, *cj_out, texts[i].name, texts[i].text, texts[i].len);
    }
    if (rc == TDM_EXIT_OK && job_keys(&L, *cj_out) != 0) {
        rc = TDM_EXIT_RUNTIME;
    }
    tdm__cli_job_flush(*cj_out, err);
    if (rc == TDM_EXIT_OK && (*cj_out)->errors > 0) {
        rc = TDM_EXIT_INVALID;
    }
    if (rc == TDM_EXIT_INVALID && (*cj_out)->errors == 0) {
        (*cj_out)->errors = 1;
    }
    *runs = L.runs;
    loader_done(&L);
    return rc;
}

/* Loads a script's text as a job (see sql.h). */
int tdm__sql_load_text(const char *name, const char *text, size_t len,
                       bool explain_only, FILE *out, tdm__cli_job **cj_out,
                       bool *runs, FILE *err)
{
    tdm__sql_text t = {.name = name, .text = text, .len = len};
    return tdm__sql_load_texts(&t, 1, explain_only, out, cj_out, runs, err);
}

/* Loads script files as a job (see sql.h). */
int tdm__sql_load(const char *init, const char *path, bool explain_only,
                  FILE *out, tdm__cli_job **cj_out, bool *runs, FILE *err)
{
    tdm__sql_text t[2] = {{0}};
    int n = 0, rc = TDM_EXIT_OK;
    const char *files[2] = {init, path};
    *runs = false;
    for (int i = 0; i < 2; i++) {
        if (files[i] == NULL) {
            continue;
        }
        t[n].name = files[i];
        if ((t[n].text = tdm__cli_read_file(files[i], &t[n].len)) == NULL) {
            int e = errno;
            if (*cj_out == NULL && tdm__cli_job_new(path, cj_out) != 0) {
                e = ENOMEM;
            }
            fprintf(err, "%s: cannot read the script: %s\n", files[i],
                    strerror(e));
            rc = TDM_EXIT_RUNTIME;
            break;
        }
        n++;
    }
    if (rc == TDM_EXIT_OK) {
        rc = tdm__sql_load_texts(t, n, explain_only, out, cj_out, runs, err);
    }
    for (int i = 0; i < n; i++) {
        free((char *)t[i].text);
    }
    return rc;
}

/* ---- A session: statements one at a time (the shell) ---- */

struct tdm__sql_session {
    loader L;
};

/* Makes a session (see sql.h). */
tdm__sql_session *tdm__sql_session_new(FILE *out, FILE *err)
{
    tdm__sql_session *s = calloc(1, sizeof *s);
    if (s != NULL) {
        s->L.out = out;
        s->L.err = err;
        s->L.pl.cat = &s->L.cat;
        s->L.pl.err = err;
    }
    return s;
}

/* One query of a session as a job of its own, handed to @p run. */
static int session_query(loader *L, const char *name, const sql_node *stmt,
                         tdm__sql_run_fn *run, void *ud)
{
    tdm__cli_job *cj = NULL;
    int rc = TDM_EXIT_INVALID;
    if (tdm__cli_job_new(name, &cj) != TDM_EXIT_OK) {
        tdm__cli_job_free(cj);
        fprintf(L->err, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    L->pl.queries = 0; /* Node names start again: q1, ... */
    if (plan_into(L, cj, stmt) == 0 && job_keys(L, cj) == 0) {
        tdm__cli_job_flush(cj, L->err);
        rc = cj->errors > 0 ? TDM_EXIT_INVALID : run(ud, cj);
    }
    tdm__cli_job_free(cj);
    return rc;
}

/* Runs statements (see sql.h). */
int tdm__sql_session_exec(tdm__sql_session *s, const char *name,
                          const char *text, size_t len, tdm__sql_run_fn *run,
                          void *ud)
{
    loader *L = &s->L;
    tdm__sql_stmt *st = NULL;
    int n = 0;
    int rc = parse_text(L, name, text, len, &st, &n);
    for (int i = 0; i < n && rc != TDM_EXIT_RUNTIME; i++) {
        const sql_node *t = st[i].tree;
        int r = t->kind == SQLK_INSERT || t->kind == SQLK_SELECT
                    ? session_query(L, name, t, run, ud)
                : statement(L, NULL, t) != 0 ? TDM_EXIT_INVALID
                                             : TDM_EXIT_OK;
        rc = r != TDM_EXIT_OK ? r : rc;
    }
    if (keep(L, st, n) != 0) {
        tdm__sql_stmts_free(st, n);
        fprintf(L->err, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    return rc;
}

/* Frees a session (NULL is fine). */
void tdm__sql_session_free(tdm__sql_session *s)
{
    if (s != NULL) {
        loader_done(&s->L);
        free(s);
    }
}
