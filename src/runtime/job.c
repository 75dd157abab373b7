/* SPDX-License-Identifier: MIT */
/* job.c - a job as a definition: nodes and their configuration, user
 * filters and maps, row accessors, callbacks and the job's log.  It reads
 * and stores; it decides nothing about a run.  The validation of the whole
 * graph sits above it (job_validate.c), the public calls that touch the
 * record of its runs (new, destroy, counters, cancel) above both
 * (job_api.c, run_record.h), and execution in run.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connect/conn.h"
#include "core/decimal.h"
#include "runtime/expr.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "window/win.h"
#include "testhooks.h"

static const tdm__conf_val zero_val;

/* ---- Configuration storage ---- */

/* Fills vals[] with the parsed defaults of every row of @p scope. */
static tdm_err load_defaults(tdm__conf_val *vals, tdm__scope scope)
{
    int n;
    const tdm__conf_row *rows = tdm__conf_rows(&n);
    for (int i = 0; i < n; i++) {
        if (rows[i].scope != scope)
            continue;
        tdm_err err = tdm__conf_parse(i, rows[i].def, true, &vals[i], NULL, 0);
        if (err == TDM_ERR_NOMEM)
            return err;
        /* A default that does not parse (never in the shipped table)
         * leaves the value zeroed: "unset". */
    }
    return TDM_OK;
}

static void free_vals(tdm__conf_val *vals)
{
    if (!vals)
        return;
    int n;
    tdm__conf_rows(&n);
    for (int i = 0; i < n; i++)
        tdm__conf_val_free(&vals[i]);
    tdm__free(vals);
}

static tdm__conf_val *new_vals(tdm__scope scope)
{
    int n;
    tdm__conf_rows(&n);
    tdm__conf_val *vals = tdm__calloc((size_t)n, sizeof *vals);
    if (vals && load_defaults(vals, scope) != TDM_OK) {
        free_vals(vals);
        return NULL;
    }
    return vals;
}

/* Parses @p value for @p key of @p scope into vals[]. */
static tdm_err set_val(tdm__conf_val *vals, tdm__scope scope, const char *what,
                       const char *key, const char *value, char *errbuf,
                       size_t errbuf_size)
{
    if (!key || !*key)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "key must not be empty");
    int row = tdm__conf_find(scope, key);
    if (row < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: unknown %s key (see `tidemark config list`)", key,
                         what);
    if (!value)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: value must not be NULL", key);
    const tdm__conf_row *rows = tdm__conf_rows(NULL);
    if (rows[row].type == TDM__CT_PROPS && strcmp(rows[row].key, key) != 0)
        return tdm__conf_set_prop(row, key, value, &vals[row], errbuf,
                                  errbuf_size);
    return tdm__conf_parse(row, value, false, &vals[row], errbuf, errbuf_size);
}

static const tdm__conf_val *val_of(const tdm__conf_val *vals, tdm__scope scope,
                                   const char *key)
{
    int row = tdm__conf_find(scope, key);
    return row < 0 ? &zero_val : &vals[row];
}

/* A node key's parsed value (zeroed for an unknown key). */
const tdm__conf_val *tdm__node_val(const tdm_node *n, const char *key)
{
    return val_of(n->vals, n->scope, key);
}

int64_t tdm__node_int(const tdm_node *n, const char *key)
{
    return tdm__node_val(n, key)->i;
}

/* The text of a node key ("" when unset). */
const char *tdm__node_str(const tdm_node *n, const char *key)
{
    const char *s = tdm__node_val(n, key)->text;
    return s ? s : "";
}

/* A job key's parsed value (zeroed for an unknown key). */
const tdm__conf_val *tdm__job_val(const tdm_job *job, const char *key)
{
    return val_of(job->vals, TDM__SCOPE_JOB, key);
}

int64_t tdm__job_int(const tdm_job *job, const char *key)
{
    return tdm__job_val(job, key)->i;
}

/* The text of a job key ("" when unset). */
const char *tdm__job_str(const tdm_job *job, const char *key)
{
    const char *s = tdm__job_val(job, key)->text;
    return s ? s : "";
}

/* ---- Jobs ---- */

static void default_log(void *ud, const char *line)
{
    (void)ud;
    fprintf(stderr, "tidemark: %s\n", line);
}

/* See rt.h: an empty definition with every job key at its default
 * (tdm_job_new, job_api.c, adds the run record). */
tdm_err tdm__job_alloc(tdm_job **out)
{
    *out = NULL;
    tdm_job *job = tdm__calloc(1, sizeof *job);
    if (!job)
        return TDM_ERR_NOMEM;
    job->vals = new_vals(TDM__SCOPE_JOB);
    if (!job->vals) {
        tdm__free(job);
        return TDM_ERR_NOMEM;
    }
    if (pthread_mutex_init(&job->log_mu, NULL) != 0) {
        free_vals(job->vals);
        tdm__free(job);
        return TDM_ERR_NOMEM;
    }
    tdm__job_spec_fill(job);
    job->log = default_log;
    *out = job;
    return TDM_OK;
}

/* Sets a job-level key from text (copied, parsed and checked now). */
tdm_err tdm_job_set(tdm_job *job, const char *key, const char *value,
                    char *errbuf, size_t errbuf_size)
{
    if (!job)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "job must not be NULL");
    if (tdm__run_record_running(job->rec))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "%s: the job is running", key ? key : "");
    tdm_err err = set_val(job->vals, TDM__SCOPE_JOB, "job", key, value, errbuf,
                          errbuf_size);
    tdm__job_spec_fill(job); /* also on failure: a value may be freed */
    return err;
}

static void node_destroy(tdm_node *n)
{
    if (!n)
        return;
    free_vals(n->vals);
    tdm__schema_free(&n->gen_schema);
    tdm__schema_free(&n->out_schema);
    tdm__src_exprs_destroy(n->exprs);
    tdm__free(n->udfs);
    tdm__free(n->name);
    tdm__free(n);
}

static tdm__scope kind_scope(tdm_node_kind kind)
{
    switch (kind) {
    case TDM_NODE_SOURCE:
        return TDM__SCOPE_SOURCE;
    case TDM_NODE_WINDOW:
        return TDM__SCOPE_WINDOW;
    case TDM_NODE_JOIN:
        return TDM__SCOPE_JOIN;
    default:
        return TDM__SCOPE_SINK;
    }
}

const char *tdm__node_kind_name(tdm_node_kind kind)
{
    switch (kind) {
    case TDM_NODE_SOURCE:
        return "source";
    case TDM_NODE_WINDOW:
        return "window";
    case TDM_NODE_JOIN:
        return "join";
    case TDM_NODE_SINK:
        return "sink";
    }
    return "node";
}

/* Adds a node; names are unique across the job and contain no '.' (the
 * dotted key paths of job files would be ambiguous). */
tdm_err tdm_job_add_node(tdm_job *job, tdm_node_kind kind, const char *name,
                         tdm_node **out, char *errbuf, size_t errbuf_size)
{
    if (out)
        *out = NULL;
    if (!job)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "job must not be NULL");
    if (kind < TDM_NODE_SOURCE || kind > TDM_NODE_SINK)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "kind must be a tdm_node_kind (got %d)", (int)kind);
    if (!name || !*name)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s name must not be empty",
                         tdm__node_kind_name(kind));
    if (strchr(name, '.'))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s name \"%s\" must not contain '.'",
                         tdm__node_kind_name(kind), name);
    if (tdm__run_record_running(job->rec))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "cannot add \"%s\": the job is running", name);
    if (tdm_job_node(job, name))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "duplicate node name \"%s\"", name);
    if (job->n_nodes == job->cap_nodes) {
        int cap = job->cap_nodes ? job->cap_nodes * 2 : 8;
        tdm_node **nn = tdm__realloc(job->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            goto nomem;
        job->nodes = nn;
        job->cap_nodes = cap;
    }
    tdm_node *n = tdm__calloc(1, sizeof *n);
    if (!n)
        goto nomem;
    n->job = job;
    n->kind = kind;
    n->scope = kind_scope(kind);
    n->name = tdm__strndup(name, strlen(name));
    n->vals = new_vals(n->scope);
    if (!n->name || !n->vals) {
        node_destroy(n);
        goto nomem;
    }
    tdm__node_spec_fill(n);
    job->nodes[job->n_nodes++] = n;
    if (out)
        *out = n;
    return TDM_OK;

nomem:
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                     "out of memory adding \"%s\"", name);
}

/* Finds a node by name; NULL when absent. */
tdm_node *tdm_job_node(tdm_job *job, const char *name)
{
    if (!job || !name)
        return NULL;
    for (int i = 0; i < job->n_nodes; i++)
        if (strcmp(job->nodes[i]->name, name) == 0)
            return job->nodes[i];
    return NULL;
}

/* Sets a key of a node (its kind's scope of the table). */
tdm_err tdm_node_set(tdm_node *node, const char *key, const char *value,
                     char *errbuf, size_t errbuf_size)
{
    if (!node)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "node must not be NULL");
    if (tdm__run_record_running(node->job->rec))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_STATE,
                         "%s: the job is running", key ? key : "");
    tdm_err err =
        set_val(node->vals, node->scope, tdm__node_kind_name(node->kind), key,
                value, errbuf, errbuf_size);
    tdm__node_spec_fill(node); /* also on failure: a value may be freed */
    return err;
}

static tdm_err add_udf(tdm_node *n, const tdm__udf *u)
{
    if (!n || n->kind != TDM_NODE_SOURCE ||
        tdm__run_record_running(n->job->rec))
        return !n || n->kind != TDM_NODE_SOURCE ? TDM_ERR_INVAL : TDM_ERR_STATE;
    if (n->n_udfs == n->cap_udfs) {
        int cap = n->cap_udfs ? n->cap_udfs * 2 : 4;
        tdm__udf *nu = tdm__realloc(n->udfs, (size_t)cap * sizeof *nu);
        if (!nu)
            return TDM_ERR_NOMEM;
        n->udfs = nu;
        n->cap_udfs = cap;
    }
    n->udfs[n->n_udfs++] = *u;
    return TDM_OK;
}

/* Adds a filter to a source (TDM_ERR_INVAL: not a source or NULL fn). */
tdm_err tdm_node_add_filter(tdm_node *source, tdm_filter_fn fn, void *ud)
{
    if (!fn)
        return TDM_ERR_INVAL;
    tdm__udf u = {.is_map = false, .filter = fn, .ud = ud};
    return add_udf(source, &u);
}

/* Adds a map to a source (TDM_ERR_INVAL: not a source or NULL fn). */
tdm_err tdm_node_add_map(tdm_node *source, tdm_map_fn fn, void *ud)
{
    if (!fn)
        return TDM_ERR_INVAL;
    tdm__udf u = {.is_map = true, .map = fn, .ud = ud};
    return add_udf(source, &u);
}

/* ---- Schemas ---- */

static bool is_generator(const tdm_node *n)
{
    /* Schemas are asked for before validation too: the spec is kept in
     * step with the keys as they are set. */
    return n->kind == TDM_NODE_SOURCE && !n->src_vt &&
           n->spec.src.type == TDM__SOURCE_TYPE_GENERATOR;
}

/* A source's schema: its own or the generator's; a window's or join's
 * output stream (once validation computed it). */
const tdm__schema *tdm__node_schema(const tdm_node *n)
{
    if (n && (n->kind == TDM_NODE_WINDOW || n->kind == TDM_NODE_JOIN))
        return n->out_schema.n > 0 ? &n->out_schema : NULL;
    if (!n || n->kind != TDM_NODE_SOURCE)
        return NULL;
    const tdm__conf_val *v = n->spec.src.schema;
    if (v->schema.n > 0)
        return &v->schema;
    if (is_generator(n)) {
        /* A cache, parsed on first use and again only when
         * generator.kind changed (so pointers handed to a run stay
         * valid while it runs). */
        tdm_node *m = (tdm_node *)n;
        int kind = (int)n->spec.src.gen_kind;
        if (kind < 0 || kind > TDM__GENERATOR_KIND_NEXMARK)
            kind = TDM__GENERATOR_KIND_CLICKS;
        if (m->gen_schema.n > 0 && m->gen_kind == kind)
            return &m->gen_schema;
        tdm__schema_free(&m->gen_schema);
        const char *text = tdm__generator_schema(tdm__spec_conn(kind));
        if (tdm__schema_parse(text, &m->gen_schema, NULL, 0) != TDM_OK)
            return NULL;
        m->gen_kind = kind;
        return &m->gen_schema;
    }
    return NULL;
}

/* Index of a field in a source's schema, -1 when absent. */
int tdm_node_field_index(const tdm_node *source, const char *name)
{
    const tdm__schema *s = tdm__node_schema(source);
    return s && name ? tdm__schema_find(s, name) : -1;
}

/* ---- Rows ---- */

/* Row accessors: out-of-range indexes and null values read as 0/NULL,
 * writes of the wrong type are ignored. */
tdm_time_ms tdm_row_ts(const tdm_row *row)
{
    return row->ts;
}

static bool row_ok(const tdm_row *row, int i)
{
    return row && i >= 0 && i < row->schema->n;
}

/* Null or out of range: 1. */
int tdm_row_is_null(const tdm_row *row, int i)
{
    return row_ok(row, i) ? row->v[i].null != 0 : 1;
}

int64_t tdm_row_int(const tdm_row *row, int i)
{
    if (!row_ok(row, i) || row->v[i].null)
        return 0;
    switch (row->schema->fields[i].type) {
    case TDM_TYPE_INT64:
    case TDM_TYPE_TIMESTAMP:
    case TDM_TYPE_BOOL:
        return row->v[i].u.i;
    default: /* a decimal: its scaled value (TDM_TYPE_DECIMAL_OF) */
        return tdm__is_decimal(row->schema->fields[i].type) ? row->v[i].u.i : 0;
    }
}

/* DOUBLE, or INT64/TIMESTAMP converted. */
double tdm_row_double(const tdm_row *row, int i)
{
    if (!row_ok(row, i) || row->v[i].null)
        return 0;
    switch (row->schema->fields[i].type) {
    case TDM_TYPE_DOUBLE:
        return row->v[i].u.d;
    case TDM_TYPE_INT64:
    case TDM_TYPE_TIMESTAMP:
        return (double)row->v[i].u.i;
    default: {
        tdm_type t = row->schema->fields[i].type;
        return tdm__is_decimal(t)
                   ? tdm__dec_to_double(row->v[i].u.i, TDM_DECIMAL_SCALE(t))
                   : 0;
    }
    }
}

/* STRING bytes (not NUL-terminated); NULL otherwise. */
const char *tdm_row_string(const tdm_row *row, int i, size_t *len)
{
    if (!row_ok(row, i) || row->v[i].null ||
        row->schema->fields[i].type != TDM_TYPE_STRING) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = row->v[i].u.s.len;
    return row->v[i].u.s.p;
}

/* Sets an INT64/TIMESTAMP/BOOL field (BOOL stores 0/1). */
void tdm_row_set_int(tdm_row *row, int i, int64_t v)
{
    if (!row_ok(row, i))
        return;
    tdm_type t = row->schema->fields[i].type;
    if (t != TDM_TYPE_INT64 && t != TDM_TYPE_TIMESTAMP && t != TDM_TYPE_BOOL)
        return;
    row->v[i].u.i = t == TDM_TYPE_BOOL ? (v != 0) : v;
    row->v[i].null = 0;
}

/* Sets a DOUBLE field. */
void tdm_row_set_double(tdm_row *row, int i, double v)
{
    if (!row_ok(row, i) || row->schema->fields[i].type != TDM_TYPE_DOUBLE)
        return;
    row->v[i].u.d = v;
    row->v[i].null = 0;
}

/* ---- Callbacks, logging ---- */

/* Sets (or clears, with NULL) the progress callback. */
tdm_err tdm_job_set_progress(tdm_job *job, tdm_progress_cb cb, void *ud)
{
    if (!job)
        return TDM_ERR_INVAL;
    job->progress = cb;
    job->progress_ud = ud;
    return TDM_OK;
}

/* Sets the log callback; NULL restores stderr. */
tdm_err tdm_job_set_log(tdm_job *job, tdm_log_cb cb, void *ud)
{
    if (!job)
        return TDM_ERR_INVAL;
    job->log = cb ? cb : default_log;
    job->log_ud = cb ? ud : NULL;
    return TDM_OK;
}

/* Formats one line and hands it to the log callback under a lock. */
void tdm__job_log(tdm_job *job, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&job->log_mu);
    job->log(job->log_ud, line);
    pthread_mutex_unlock(&job->log_mu);
}

static int64_t read_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#ifdef TDM_TEST_HOOKS
/* TDM_TEST_CLOCK_FILE=PATH (testhooks.h): the processing time of every
 * job is the number of milliseconds written in PATH, read at every
 * reading.  A file being rewritten (empty, cut) keeps the last value,
 * and time never goes back.  The environment is looked at once (by the
 * first reader, whichever thread it is). */
static pthread_once_t test_clock_once = PTHREAD_ONCE_INIT;
static const char *test_clock_path;

static void test_clock_look(void)
{
    const char *p = getenv("TDM_TEST_CLOCK_FILE");
    test_clock_path = p && *p ? p : NULL;
}

/* Returns 0 when the switch is not set, else 1 with the time in *out. */
static int test_clock(tdm_time_ms *out)
{
    static _Atomic int64_t last = INT64_MIN;
    pthread_once(&test_clock_once, test_clock_look);
    if (!test_clock_path)
        return 0;
    char buf[32] = "";
    FILE *f = fopen(test_clock_path, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    char *end;
    long long v = strtoll(buf, &end, 10);
    int64_t prev = atomic_load(&last);
    while (end != buf && v > prev &&
           !atomic_compare_exchange_weak(&last, &prev, (int64_t)v))
        ;
    prev = atomic_load(&last);
    *out = prev == INT64_MIN ? 0 : prev;
    return 1;
}
#endif

/* Wall-clock time at the start of the run plus monotonic time since:
 * epoch-like values (so ingestion timestamps and processing-time windows
 * line up with dates) that never go backwards. */
tdm_time_ms tdm__job_now(tdm_job *job)
{
    if (job->clock_fn)
        return job->clock_fn(job->clock_ud);
#ifdef TDM_TEST_HOOKS
    tdm_time_ms t;
    if (test_clock(&t))
        return t;
#endif
    if (job->clock_base_real == 0) {
        job->clock_base_real = read_ms(CLOCK_REALTIME);
        job->clock_base_mono = read_ms(CLOCK_MONOTONIC);
    }
    return job->clock_base_real +
           (read_ms(CLOCK_MONOTONIC) - job->clock_base_mono);
}

/* Test hook: a custom source connector. */
void tdm__node_set_source_vtab(tdm_node *n, const tdm__source_vtab *vt)
{
    if (n && n->kind == TDM_NODE_SOURCE)
        n->src_vt = vt;
}

/* Test hook: a custom sink connector. */
void tdm__node_set_sink_vtab(tdm_node *n, const tdm__sink_vtab *vt)
{
    if (n && n->kind == TDM_NODE_SINK)
        n->sink_vt = vt;
}

/* Test hook: the processing-time clock. */
void tdm__job_set_clock(tdm_job *job, tdm_clock_fn fn, void *ud)
{
    job->clock_fn = fn;
    job->clock_ud = ud;
}

/* See rt.h: the definition's half of tdm_job_destroy (job_api.c). */
void tdm__job_free(tdm_job *job)
{
    for (int i = 0; i < job->n_nodes; i++)
        node_destroy(job->nodes[i]);
    tdm__free(job->nodes);
    free_vals(job->vals);
    pthread_mutex_destroy(&job->log_mu);
    tdm__free(job);
}
