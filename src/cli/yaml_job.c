/* SPDX-License-Identifier: MIT */
/* yaml_job.c - loads a YAML job file into a tdm_job.
 *
 * The file is a map: job keys at the top (nested maps flatten to dotted
 * keys), and the sections sources/windows/joins/sinks, each a map from
 * node name to that node's keys.  Every value ends up as text handed to
 * tdm_job_set/tdm_node_set, which own all value checking; this file knows
 * only the shape of the file and the key names (from tdm_conf_describe),
 * so it can say where each problem is: "job.yaml:12:5: windows.uv.window.
 * size: expected ...".  docs/job-format.md describes the format.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "cli.h"

/* Longest job file we read (a job file is a few kilobytes). */
#define MAX_JOB_FILE (16u << 20)
/* Stop after this many errors: the rest is usually noise. */
#define MAX_ERRORS 20

/* ---- The key table, from the library ---- */

/* Scopes of the table, in the order of tdm_node_kind (0: job). */
enum { SC_JOB = 0, SC_SOURCE, SC_WINDOW, SC_JOIN, SC_SINK, SC_COUNT };

static const char *const section_names[SC_COUNT] = {NULL, "sources", "windows",
                                                    "joins", "sinks"};
static const char *const scope_names[SC_COUNT] = {"job", "source", "window",
                                                  "join", "sink"};

/* Maps a scope name from tdm_conf_describe to SC_*, -1 if unknown. */
static int scope_index(const char *scope)
{
    for (int i = 0; i < SC_COUNT; i++) {
        if (scope != NULL && strcasecmp(scope, scope_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* Looks @p key up in scope @p sc; returns its type name ("DURATION", ...)
 * or NULL if the key is not in the table.  A key under a pass-through
 * prefix ("kafka.session.timeout.ms" for the row "kafka.*") is "PROPS"
 * unless a row has its exact name. */
static const char *key_type(int sc, const char *key)
{
    const char *scope, *k, *type, *props = NULL;
    for (int i = 0;
         tdm_conf_describe(i, &scope, &k, &type, NULL, NULL, NULL, NULL); i++) {
        if (scope_index(scope) != sc) {
            continue;
        }
        if (strcmp(k, key) == 0) {
            return type != NULL ? type : "";
        }
        size_t pl = strlen(k);
        if (type != NULL && strcasecmp(type, "PROPS") == 0 && pl >= 2 &&
            strcmp(k + pl - 2, ".*") == 0 && strncmp(k, key, pl - 1) == 0 &&
            key[pl - 1] != '\0') {
            props = type;
        }
    }
    return props;
}

/* Finds the known key of scope @p sc (plus the section names at the job
 * level) closest to @p key within edit distance 2; NULL if none. */
static const char *suggest(int sc, const char *key)
{
    const char *best = NULL, *scope, *k;
    int best_d = 3;
    for (int i = 0;
         tdm_conf_describe(i, &scope, &k, NULL, NULL, NULL, NULL, NULL); i++) {
        if (scope_index(scope) != sc) {
            continue;
        }
        int d = tdm__cli_distance(key, k, 2);
        if (d < best_d) {
            best_d = d;
            best = k;
        }
    }
    for (int s = SC_SOURCE; sc == SC_JOB && s < SC_COUNT; s++) {
        int d = tdm__cli_distance(key, section_names[s], 2);
        if (d < best_d) {
            best_d = d;
            best = section_names[s];
        }
    }
    return best;
}

/* ---- Helpers ---- */

/* A growable string; on allocation failure it sets oom and keeps going
 * with what it has, so callers check once at the end. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->oom) {
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL) {
        memcpy(p, s, n);
    }
    return p;
}

/* Computes the restricted Damerau-Levenshtein distance of two strings
 * (optimal string alignment), giving up with cap + 1 when the strings
 * differ in length by more than cap or are too long to matter. */
int tdm__cli_distance(const char *a, const char *b, int cap)
{
    size_t la = strlen(a), lb = strlen(b);
    enum { MAXL = 64 };
    int row[3][MAXL + 1];
    if (la > MAXL || lb > MAXL) {
        return cap + 1;
    }
    if ((la > lb ? la - lb : lb - la) > (size_t)cap) {
        return cap + 1;
    }
    /* Three rolling rows: i-2, i-1, i (indices mod 3). */
    for (size_t j = 0; j <= lb; j++) {
        row[0][j] = (int)j;
    }
    for (size_t i = 1; i <= la; i++) {
        int *cur = row[i % 3], *prev = row[(i - 1) % 3];
        int *prev2 = row[(i + 1) % 3];
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            int v = prev[j] + 1;
            if (cur[j - 1] + 1 < v) {
                v = cur[j - 1] + 1;
            }
            if (prev[j - 1] + cost < v) {
                v = prev[j - 1] + cost;
            }
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < v) {
                v = prev2[j - 2] + 1;
            }
            cur[j] = v;
        }
    }
    int d = row[la % 3][lb];
    return d > cap ? cap + 1 : d;
}

/* ---- Bookkeeping of the loaded job ---- */

/* Records that (@p node, @p key) was set to @p value at line:col (0:0 for
 * --set), the value at vline:vcol.  Returns 0, or -1 when out of memory. */
static int add_entry(tdm__cli_job *cj, const char *node, tdm_node_kind kind,
                     const char *key, const char *value, int line, int col,
                     int vline, int vcol)
{
    if (cj->n_entries == cj->cap_entries) {
        size_t cap = cj->cap_entries ? cj->cap_entries * 2 : 32;
        tdm__cli_entry *e = realloc(cj->entries, cap * sizeof *e);
        if (e == NULL) {
            return -1;
        }
        cj->entries = e;
        cj->cap_entries = cap;
    }
    tdm__cli_entry *e = &cj->entries[cj->n_entries];
    memset(e, 0, sizeof *e);
    e->node = node != NULL ? dup_str(node) : NULL;
    e->key = dup_str(key);
    e->value = dup_str(value);
    e->kind = kind;
    e->line = line;
    e->col = col;
    e->vline = vline;
    e->vcol = vcol;
    if ((node != NULL && e->node == NULL) || e->key == NULL ||
        e->value == NULL) {
        free(e->node);
        free(e->key);
        free(e->value);
        return -1;
    }
    cj->n_entries++;
    return 0;
}

/* Finds the last entry for (@p node, @p key); NULL if none. */
static const tdm__cli_entry *find_entry(const tdm__cli_job *cj,
                                        const char *node, const char *key)
{
    for (size_t i = cj->n_entries; i-- > 0;) {
        const tdm__cli_entry *e = &cj->entries[i];
        if (strcmp(e->key, key) == 0 &&
            ((node == NULL && e->node == NULL) ||
             (node != NULL && e->node != NULL && strcmp(node, e->node) == 0))) {
            return e;
        }
    }
    return NULL;
}

/* Finds the declaration of node @p name; NULL if none. */
static const tdm__cli_decl *find_decl(const tdm__cli_job *cj, const char *name)
{
    for (size_t i = 0; i < cj->n_decls; i++) {
        if (strcmp(cj->decls[i].name, name) == 0) {
            return &cj->decls[i];
        }
    }
    return NULL;
}

/* Returns the value last set for a key, or NULL (see cli.h). */
const char *tdm__cli_job_value(const tdm__cli_job *cj, const char *node,
                               const char *key)
{
    const tdm__cli_entry *e = find_entry(cj, node, key);
    return e != NULL ? e->value : NULL;
}

/* Frees a loaded job (see cli.h). */
void tdm__cli_job_free(tdm__cli_job *cj)
{
    if (cj == NULL) {
        return;
    }
    tdm_job_destroy(cj->job);
    for (size_t i = 0; i < cj->n_entries; i++) {
        free(cj->entries[i].node);
        free(cj->entries[i].key);
        free(cj->entries[i].value);
    }
    for (size_t i = 0; i < cj->n_decls; i++) {
        free(cj->decls[i].name);
    }
    for (size_t i = 0; i < cj->n_msgs; i++) {
        free(cj->msgs[i].text);
    }
    free(cj->msgs);
    free(cj->entries);
    free(cj->decls);
    free(cj->file);
    free(cj);
}

/* Writes "path" for a key: "windows.uv.window.size" or "parallelism". */
static void key_path(char *buf, size_t n, tdm_node_kind kind, const char *node,
                     const char *key)
{
    if (node != NULL) {
        snprintf(buf, n, "%s.%s.%s", section_names[kind], node, key);
    } else {
        snprintf(buf, n, "%s", key);
    }
}

/* Records one error "file:line:col: path: message" and counts it; it is
 * printed by flush_msgs, sorted by position.  Out of memory while
 * recording an error loses the message, not the count. */
static void report(tdm__cli_job *cj, FILE *err, int line, int col,
                   const char *path, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void report(tdm__cli_job *cj, FILE *err, int line, int col,
                   const char *path, const char *fmt, ...)
{
    char head[1024], body[1024];
    va_list ap;
    (void)err;
    cj->errors++;
    if (line > 0) {
        snprintf(head, sizeof head, "%s:%d:%d: ", cj->file, line, col);
    } else if (line == 0) {
        snprintf(head, sizeof head, "--set ");
    } else {
        snprintf(head, sizeof head, "%s: ", cj->file);
    }
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    if (cj->n_msgs == cj->cap_msgs) {
        size_t cap = cj->cap_msgs ? cj->cap_msgs * 2 : 8;
        tdm__cli_msg *m = realloc(cj->msgs, cap * sizeof *m);
        if (m == NULL) {
            return;
        }
        cj->msgs = m;
        cj->cap_msgs = cap;
    }
    size_t n = strlen(head) + (path ? strlen(path) + 2 : 0) + strlen(body);
    char *text = malloc(n + 1);
    if (text == NULL) {
        return;
    }
    snprintf(text, n + 1, "%s%s%s%s", head, path ? path : "", path ? ": " : "",
             body);
    tdm__cli_msg *m = &cj->msgs[cj->n_msgs];
    m->line = line > 0 ? line : INT32_MAX;
    m->col = col;
    m->seq = cj->n_msgs;
    m->text = text;
    cj->n_msgs++;
}

/* Orders messages by position; --set and file-level ones keep their
 * order after those with a position. */
static int msg_cmp(const void *a, const void *b)
{
    const tdm__cli_msg *x = a, *y = b;
    if (x->line != y->line) {
        return x->line < y->line ? -1 : 1;
    }
    if (x->line != INT32_MAX && x->col != y->col) {
        return x->col < y->col ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Prints the recorded messages sorted by position (at most MAX_ERRORS)
 * and forgets them. */
static void flush_msgs(tdm__cli_job *cj, FILE *err)
{
    if (cj->n_msgs > 1) {
        qsort(cj->msgs, cj->n_msgs, sizeof *cj->msgs, msg_cmp);
    }
    for (size_t i = 0; i < cj->n_msgs; i++) {
        if (i < MAX_ERRORS) {
            fprintf(err, "%s\n", cj->msgs[i].text);
        } else if (i == MAX_ERRORS) {
            fprintf(err, "%s: %zu more errors not shown\n", cj->file,
                    cj->n_msgs - MAX_ERRORS);
        }
        free(cj->msgs[i].text);
    }
    cj->n_msgs = 0;
}

/* The library's messages usually start with the key they are about
 * ("window.size: expected ..."); since we print the whole key path in
 * front, drop that repetition. */
static const char *strip_key(const char *msg, const char *key)
{
    size_t kl = strlen(key);
    const char *p = strstr(msg, key);
    if (p != NULL && p - msg < 40 && strncmp(p + kl, ": ", 2) == 0) {
        return p + kl + 2;
    }
    return msg;
}

/* Sets (@p node or the job) @p key = @p value through the library and
 * records it; reports a rejected value at line:col.  Returns 0, or -1
 * when out of memory. */
static int set_key(tdm__cli_job *cj, FILE *err, tdm_node_kind kind,
                   const char *node, const char *key, const char *value,
                   int line, int col, int vline, int vcol)
{
    char msg[512] = "", path[512];
    tdm_err rc;
    if (node != NULL) {
        tdm_node *n = tdm_job_node(cj->job, node);
        if (n == NULL) {
            return 0; /* Its declaration already failed and was reported. */
        }
        rc = tdm_node_set(n, key, value, msg, sizeof msg);
    } else {
        rc = tdm_job_set(cj->job, key, value, msg, sizeof msg);
    }
    if (rc == TDM_ERR_NOMEM) {
        return -1;
    }
    if (rc != TDM_OK) {
        key_path(path, sizeof path, kind, node, key);
        report(cj, err, vline, vcol, path, "%s",
               msg[0] != '\0' ? strip_key(msg, key) : tdm_strerror(rc));
    }
    return add_entry(cj, node, kind, key, value, line, col, vline, vcol);
}

/* ---- Flattening a node's YAML map into (key, value) pairs ---- */

/* One flattened key of a node (or of the job). */
typedef struct kv {
    char *key, *value;
    int line, col;   /* of the key */
    int vline, vcol; /* of the value */
} kv;

typedef struct loader {
    tdm__cli_job *cj;
    yaml_document_t *doc;
    FILE *err;
    int oom;
    kv *kvs; /* pairs of the node being loaded */
    size_t n, cap;
} loader;

static yaml_node_t *get(loader *L, int index)
{
    return yaml_document_get_node(L->doc, index);
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static int line_of(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}

static int col_of(const yaml_node_t *n)
{
    return (int)n->start_mark.column + 1;
}

static const char *node_kind_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE:
        return "a map";
    case YAML_SEQUENCE_NODE:
        return "a list";
    default:
        return "a value";
    }
}

/* The text of a scalar as handed to the library: YAML's null spellings
 * become "" (unset), and for BOOL keys YAML 1.1's yes/no/on/off become
 * true/false. */
static const char *scalar_text(const yaml_node_t *n, const char *type)
{
    const char *s = scalar(n);
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        return s;
    }
    if (strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
        strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0) {
        return "";
    }
    if (type != NULL && strcasecmp(type, "BOOL") == 0) {
        static const char *const yes[] = {"yes", "Yes",  "YES",  "on", "On",
                                          "ON",  "True", "TRUE", "y",  "Y"};
        static const char *const no[] = {"no",  "No",    "NO",    "off", "Off",
                                         "OFF", "False", "FALSE", "n",   "N"};
        for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
            if (strcmp(s, yes[i]) == 0) {
                return "true";
            }
            if (strcmp(s, no[i]) == 0) {
                return "false";
            }
        }
    }
    return s;
}

/* Adds a flattened pair; a key given twice (e.g. once dotted and once
 * nested) is an error at the second place. */
static void add_kv(loader *L, const char *path, const char *key,
                   const char *value, const yaml_node_t *kn,
                   const yaml_node_t *vn)
{
    for (size_t i = 0; i < L->n; i++) {
        if (strcmp(L->kvs[i].key, key) == 0) {
            report(L->cj, L->err, line_of(kn), col_of(kn), path,
                   "given twice (first at line %d, column %d)", L->kvs[i].line,
                   L->kvs[i].col);
            return;
        }
    }
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 16;
        kv *p = realloc(L->kvs, cap * sizeof *p);
        if (p == NULL) {
            L->oom = 1;
            return;
        }
        L->kvs = p;
        L->cap = cap;
    }
    kv *e = &L->kvs[L->n];
    e->key = dup_str(key);
    e->value = dup_str(value);
    e->line = line_of(kn);
    e->col = col_of(kn);
    e->vline = line_of(vn);
    e->vcol = col_of(vn);
    if (e->key == NULL || e->value == NULL) {
        free(e->key);
        free(e->value);
        L->oom = 1;
        return;
    }
    L->n++;
}

static void clear_kvs(loader *L)
{
    for (size_t i = 0; i < L->n; i++) {
        free(L->kvs[i].key);
        free(L->kvs[i].value);
    }
    L->n = 0;
}

/* Appends "name:type" for one schema entry; returns 0 or -1 (reported). */
static int schema_entry(loader *L, sbuf *b, const char *path,
                        const yaml_node_t *name, const yaml_node_t *type)
{
    if (name->type != YAML_SCALAR_NODE || type->type != YAML_SCALAR_NODE) {
        const yaml_node_t *bad = name->type != YAML_SCALAR_NODE ? name : type;
        report(L->cj, L->err, line_of(bad), col_of(bad), path,
               "expected a field name and a type like \"user: string\", "
               "got %s",
               node_kind_name(bad));
        return -1;
    }
    if (b->len > 0) {
        sb_str(b, ", ");
    }
    sb_str(b, scalar(name));
    sb_str(b, ":");
    sb_str(b, scalar(type));
    return 0;
}

/* Turns a schema given as a map {user: string, ts: timestamp} or as a
 * list [user:string, {ts: timestamp}] into the table's text form. */
static int schema_text(loader *L, const char *path, const yaml_node_t *v,
                       sbuf *b)
{
    int bad = 0;
    if (v->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
             p < v->data.mapping.pairs.top; p++) {
            bad |= schema_entry(L, b, path, get(L, p->key), get(L, p->value));
        }
        return bad;
    }
    for (yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top; it++) {
        yaml_node_t *item = get(L, *it);
        if (item->type == YAML_SCALAR_NODE) {
            if (b->len > 0) {
                sb_str(b, ", ");
            }
            sb_str(b, scalar(item));
        } else if (item->type == YAML_MAPPING_NODE &&
                   item->data.mapping.pairs.top -
                           item->data.mapping.pairs.start ==
                       1) {
            yaml_node_pair_t *p = item->data.mapping.pairs.start;
            bad |= schema_entry(L, b, path, get(L, p->key), get(L, p->value));
        } else {
            report(L->cj, L->err, line_of(item), col_of(item), path,
                   "expected a field like \"user: string\", got %s",
                   node_kind_name(item));
            bad = -1;
        }
    }
    return bad;
}

/* Turns one aggregate given as a map {fn: sum, field: amount, as: total}
 * into "sum(amount) as total". */
static int aggregate_item(loader *L, const char *path, const yaml_node_t *item,
                          sbuf *b)
{
    const char *fn = NULL, *field = "", *as = NULL;
    for (yaml_node_pair_t *p = item->data.mapping.pairs.start;
         p < item->data.mapping.pairs.top; p++) {
        yaml_node_t *k = get(L, p->key), *v = get(L, p->value);
        if (k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE) {
            const yaml_node_t *bad = k->type != YAML_SCALAR_NODE ? k : v;
            report(L->cj, L->err, line_of(bad), col_of(bad), path,
                   "expected fn, field and as with single values, got %s",
                   node_kind_name(bad));
            return -1;
        }
        if (strcmp(scalar(k), "fn") == 0) {
            fn = scalar(v);
        } else if (strcmp(scalar(k), "field") == 0) {
            field = scalar(v);
        } else if (strcmp(scalar(k), "as") == 0) {
            as = scalar(v);
        } else {
            const char *near = NULL;
            static const char *const keys[] = {"fn", "field", "as"};
            for (int i = 0; i < 3; i++) {
                if (tdm__cli_distance(scalar(k), keys[i], 2) <= 2) {
                    near = keys[i];
                    break;
                }
            }
            if (near != NULL) {
                report(L->cj, L->err, line_of(k), col_of(k), path,
                       "unknown aggregate key \"%s\" (did you mean "
                       "\"%s\"?); expected fn, field, as",
                       scalar(k), near);
            } else {
                report(L->cj, L->err, line_of(k), col_of(k), path,
                       "unknown aggregate key \"%s\"; expected fn, field, "
                       "as",
                       scalar(k));
            }
            return -1;
        }
    }
    if (fn == NULL) {
        report(L->cj, L->err, line_of(item), col_of(item), path,
               "aggregate without fn: expected e.g. {fn: count_distinct, "
               "field: user, as: uv}");
        return -1;
    }
    if (b->len > 0) {
        sb_str(b, ", ");
    }
    sb_str(b, fn);
    sb_str(b, "(");
    sb_str(b, field);
    sb_str(b, ")");
    if (as != NULL) {
        sb_str(b, " as ");
        sb_str(b, as);
    }
    return 0;
}

/* Turns a list of aggregates (maps or "fn(field) as name" strings) into
 * the table's text form. */
static int aggregates_text(loader *L, const char *path, const yaml_node_t *v,
                           sbuf *b)
{
    int bad = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top; it++) {
        yaml_node_t *item = get(L, *it);
        if (item->type == YAML_MAPPING_NODE) {
            bad |= aggregate_item(L, path, item, b);
        } else if (item->type == YAML_SCALAR_NODE) {
            if (b->len > 0) {
                sb_str(b, ", ");
            }
            sb_str(b, scalar(item));
        } else {
            report(L->cj, L->err, line_of(item), col_of(item), path,
                   "expected an aggregate like {fn: count_distinct, "
                   "field: user, as: uv}, got a list");
            bad = -1;
        }
    }
    return bad;
}

/* Turns a list of field names into "a, b". */
static int fields_text(loader *L, const char *path, const yaml_node_t *v,
                       sbuf *b)
{
    for (yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top; it++) {
        yaml_node_t *item = get(L, *it);
        if (item->type != YAML_SCALAR_NODE) {
            report(L->cj, L->err, line_of(item), col_of(item), path,
                   "expected a name, got %s", node_kind_name(item));
            return -1;
        }
        if (b->len > 0) {
            sb_str(b, ", ");
        }
        sb_str(b, scalar(item));
    }
    return 0;
}

/* Reports an unknown key, with the closest known key when there is one
 * within edit distance 2. */
static void unknown_key(loader *L, int sc, const char *path, const char *key,
                        const yaml_node_t *kn)
{
    const char *near = suggest(sc, key);
    if (near != NULL) {
        report(L->cj, L->err, line_of(kn), col_of(kn), path,
               "unknown %s key (did you mean \"%s\"?)", scope_names[sc], near);
    } else {
        report(L->cj, L->err, line_of(kn), col_of(kn), path,
               "unknown %s key; `tidemark config list` shows the known "
               "keys",
               scope_names[sc]);
    }
}

/* Flattens the map @p map of scope @p sc into L->kvs.  @p prefix is the
 * dotted key so far ("" at the node's level); @p base the path of the
 * node for messages ("windows.uv." or ""). */
static void flatten(loader *L, int sc, const char *base, const char *prefix,
                    const yaml_node_t *map)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top && !L->oom; p++) {
        yaml_node_t *kn = get(L, p->key), *vn = get(L, p->value);
        char key[256], path[512];
        if (kn->type != YAML_SCALAR_NODE) {
            report(L->cj, L->err, line_of(kn), col_of(kn), NULL,
                   "expected a key name, got %s", node_kind_name(kn));
            continue;
        }
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "",
                 scalar(kn));
        snprintf(path, sizeof path, "%s%s", base, key);
        const char *type = key_type(sc, key);
        sbuf b = {0};
        if (vn->type == YAML_SCALAR_NODE) {
            if (type == NULL) {
                unknown_key(L, sc, path, key, kn);
                continue;
            }
            add_kv(L, path, key, scalar_text(vn, type), kn, vn);
            continue;
        }
        if (vn->type == YAML_MAPPING_NODE &&
            (type == NULL || strcasecmp(type, "SCHEMA") != 0)) {
            /* A nested map: its keys continue this key with a dot.  Is
             * any known key under this prefix?  If not, say so once.
             * Under a pass-through prefix every name is known. */
            const char *scope, *k;
            size_t kl = strlen(key);
            int any = type != NULL && strcasecmp(type, "PROPS") == 0;
            for (int i = 0;
                 tdm_conf_describe(i, &scope, &k, NULL, NULL, NULL, NULL, NULL);
                 i++) {
                if (scope_index(scope) == sc && strncmp(k, key, kl) == 0 &&
                    k[kl] == '.') {
                    any = 1;
                    break;
                }
            }
            if (!any) {
                if (type != NULL) {
                    report(L->cj, L->err, line_of(vn), col_of(vn), path,
                           "expected a single value, got a map");
                } else {
                    unknown_key(L, sc, path, key, kn);
                }
                continue;
            }
            flatten(L, sc, base, key, vn);
            continue;
        }
        if (type == NULL) {
            unknown_key(L, sc, path, key, kn);
            continue;
        }
        /* A list, or a map for a schema: the typed forms. */
        int rc;
        if (strcasecmp(type, "SCHEMA") == 0) {
            rc = schema_text(L, path, vn, &b);
        } else if (strcasecmp(type, "AGGREGATES") == 0 &&
                   vn->type == YAML_SEQUENCE_NODE) {
            rc = aggregates_text(L, path, vn, &b);
        } else if (strcasecmp(type, "FIELDS") == 0 &&
                   vn->type == YAML_SEQUENCE_NODE) {
            rc = fields_text(L, path, vn, &b);
        } else {
            report(L->cj, L->err, line_of(vn), col_of(vn), path,
                   "expected a single value, got %s", node_kind_name(vn));
            rc = -1;
        }
        if (b.oom) {
            L->oom = 1;
        } else if (rc == 0) {
            add_kv(L, path, key, b.p != NULL ? b.p : "", kn, vn);
        }
        free(b.p);
    }
}

/* Order in which a node's keys are handed to the library: the type first
 * (other keys may depend on it), then format and schema, then the rest in
 * file order. */
static int key_rank(const char *key)
{
    if (strcmp(key, "type") == 0) {
        return 0;
    }
    if (strcmp(key, "format") == 0) {
        return 1;
    }
    if (strcmp(key, "schema") == 0) {
        return 2;
    }
    return 3;
}

/* Hands the flattened pairs to the library, in key_rank order. */
static void apply_kvs(loader *L, tdm_node_kind kind, const char *node)
{
    for (int rank = 0; rank <= 3 && !L->oom; rank++) {
        for (size_t i = 0; i < L->n && !L->oom; i++) {
            kv *e = &L->kvs[i];
            if (key_rank(e->key) != rank) {
                continue;
            }
            if (set_key(L->cj, L->err, kind, node, e->key, e->value, e->line,
                        e->col, e->vline, e->vcol) != 0) {
                L->oom = 1;
            }
        }
    }
    clear_kvs(L);
}

/* Declares every node of one section (pass 1), so that references
 * between nodes never depend on the order of sections in the file. */
static void declare_section(loader *L, int sc, const yaml_node_t *kn,
                            const yaml_node_t *sec)
{
    tdm__cli_job *cj = L->cj;
    if (sec->type == YAML_SCALAR_NODE && scalar_text(sec, NULL)[0] == '\0') {
        return; /* "sinks:" with nothing under it. */
    }
    if (sec->type != YAML_MAPPING_NODE) {
        report(cj, L->err, line_of(sec), col_of(sec), section_names[sc],
               "expected a map from %s name to its keys, got %s",
               scope_names[sc], node_kind_name(sec));
        return;
    }
    for (yaml_node_pair_t *p = sec->data.mapping.pairs.start;
         p < sec->data.mapping.pairs.top && !L->oom; p++) {
        yaml_node_t *name = get(L, p->key), *body = get(L, p->value);
        char msg[512] = "", path[512];
        tdm_node *node;
        if (name->type != YAML_SCALAR_NODE) {
            report(cj, L->err, line_of(name), col_of(name), section_names[sc],
                   "expected a %s name, got %s", scope_names[sc],
                   node_kind_name(name));
            continue;
        }
        snprintf(path, sizeof path, "%s.%s", section_names[sc], scalar(name));
        const tdm__cli_decl *prev = find_decl(cj, scalar(name));
        if (prev != NULL) {
            report(cj, L->err, line_of(name), col_of(name), path,
                   "the name \"%s\" is already used by the %s at line %d; "
                   "node names must be unique across the job",
                   scalar(name), scope_names[prev->kind], prev->line);
            continue;
        }
        if (strchr(scalar(name), '.') != NULL) {
            report(cj, L->err, line_of(name), col_of(name), path,
                   "expected a name without '.', got \"%s\"", scalar(name));
            continue;
        }
        if (body->type != YAML_MAPPING_NODE &&
            !(body->type == YAML_SCALAR_NODE &&
              scalar_text(body, NULL)[0] == '\0')) {
            report(cj, L->err, line_of(body), col_of(body), path,
                   "expected a map of %s keys, got %s", scope_names[sc],
                   node_kind_name(body));
            continue;
        }
        tdm_err rc = tdm_job_add_node(cj->job, (tdm_node_kind)sc, scalar(name),
                                      &node, msg, sizeof msg);
        if (rc == TDM_ERR_NOMEM) {
            L->oom = 1;
            return;
        }
        if (rc != TDM_OK) {
            report(cj, L->err, line_of(name), col_of(name), path, "%s",
                   msg[0] ? msg : tdm_strerror(rc));
            continue;
        }
        if (cj->n_decls == cj->cap_decls) {
            size_t cap = cj->cap_decls ? cj->cap_decls * 2 : 8;
            tdm__cli_decl *d = realloc(cj->decls, cap * sizeof *d);
            if (d == NULL) {
                L->oom = 1;
                return;
            }
            cj->decls = d;
            cj->cap_decls = cap;
        }
        tdm__cli_decl *d = &cj->decls[cj->n_decls];
        d->name = dup_str(scalar(name));
        if (d->name == NULL) {
            L->oom = 1;
            return;
        }
        d->kind = (tdm_node_kind)sc;
        d->line = line_of(name);
        d->col = col_of(name);
        cj->n_decls++;
    }
}

/* Loads every node's keys of one section (pass 2). */
static void load_section(loader *L, int sc, const yaml_node_t *sec)
{
    if (sec->type != YAML_MAPPING_NODE) {
        return;
    }
    for (yaml_node_pair_t *p = sec->data.mapping.pairs.start;
         p < sec->data.mapping.pairs.top && !L->oom; p++) {
        yaml_node_t *name = get(L, p->key), *body = get(L, p->value);
        char base[512];
        if (name->type != YAML_SCALAR_NODE || body->type != YAML_MAPPING_NODE) {
            continue;
        }
        const tdm__cli_decl *d = find_decl(L->cj, scalar(name));
        if (d == NULL || d->kind != (tdm_node_kind)sc ||
            d->line != line_of(name)) {
            continue; /* Declaration failed (reported). */
        }
        snprintf(base, sizeof base, "%s.%s.", section_names[sc], scalar(name));
        flatten(L, sc, base, "", body);
        apply_kvs(L, (tdm_node_kind)sc, scalar(name));
    }
}

/* Returns the section index of a top-level key, or -1 for a job key. */
static int section_of(const char *key)
{
    for (int s = SC_SOURCE; s < SC_COUNT; s++) {
        if (strcmp(key, section_names[s]) == 0) {
            return s;
        }
    }
    return -1;
}

/* Walks the document: pass 1 declares the nodes, pass 2 sets the job's
 * keys and every node's keys. */
static void load_document(loader *L, const yaml_node_t *root)
{
    tdm__cli_job *cj = L->cj;
    if (root == NULL) {
        report(cj, L->err, 1, 1, NULL,
               "the job file is empty: expected a map with sources, "
               "windows or joins, and sinks");
        return;
    }
    if (root->type != YAML_MAPPING_NODE) {
        report(cj, L->err, line_of(root), col_of(root), NULL,
               "expected a map of job keys and the sections sources, "
               "windows, joins and sinks, got %s",
               node_kind_name(root));
        return;
    }
    /* Pass 1: sections declare nodes; repeated sections are errors. */
    int seen[SC_COUNT] = {0};
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top && !L->oom; p++) {
        yaml_node_t *kn = get(L, p->key);
        int sc;
        if (kn->type != YAML_SCALAR_NODE || (sc = section_of(scalar(kn))) < 0) {
            continue;
        }
        if (seen[sc]) {
            report(cj, L->err, line_of(kn), col_of(kn), section_names[sc],
                   "section given twice (first at line %d)", seen[sc]);
            continue;
        }
        seen[sc] = line_of(kn);
        declare_section(L, sc, kn, get(L, p->value));
    }
    /* Pass 2a: job keys.  Section entries are skipped by building a map
     * view without them: flatten() sees only job keys. */
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top && !L->oom; p++) {
        yaml_node_t *kn = get(L, p->key);
        if (kn->type == YAML_SCALAR_NODE && section_of(scalar(kn)) >= 0) {
            continue;
        }
        yaml_node_t one = *root;
        one.data.mapping.pairs.start = p;
        one.data.mapping.pairs.top = p + 1;
        flatten(L, SC_JOB, "", "", &one);
    }
    apply_kvs(L, (tdm_node_kind)0, NULL);
    /* Pass 2b: node keys, section by section in file order. */
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top && !L->oom; p++) {
        yaml_node_t *kn = get(L, p->key);
        int sc;
        if (kn->type != YAML_SCALAR_NODE || (sc = section_of(scalar(kn))) < 0 ||
            seen[sc] != line_of(kn)) {
            continue;
        }
        load_section(L, sc, get(L, p->value));
    }
}

/* Reads the whole file; returns a NUL-terminated buffer or NULL with
 * errno set. */
char *tdm__cli_read_file(const char *path, size_t *len)
{
    bool in = strcmp(path, "-") == 0;
    FILE *f = in ? stdin : fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (f == NULL) {
        return NULL;
    }
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > MAX_JOB_FILE + 8192) {
                errno = EFBIG;
                goto fail;
            }
            char *p = realloc(buf, cap);
            if (p == NULL) {
                errno = ENOMEM;
                goto fail;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(f)) {
        errno = EIO;
        goto fail;
    }
    if (!in) {
        fclose(f);
    }
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    free(buf);
    if (!in) {
        fclose(f);
    }
    return NULL;
}

/* Prints libyaml's parse error at its position.  Reader errors (bad
 * encoding) carry a byte offset instead of a mark: the line and column
 * are counted from @p text. */
static void syntax_error(const yaml_parser_t *parser, const char *path,
                         const char *text, size_t len, FILE *err)
{
    int line = (int)parser->problem_mark.line + 1;
    int col = (int)parser->problem_mark.column + 1;
    if (parser->error == YAML_READER_ERROR) {
        size_t off =
            parser->problem_offset < len ? parser->problem_offset : len;
        line = 1;
        col = 1;
        for (size_t i = 0; i < off; i++) {
            if (text[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
    }
    fprintf(err, "%s:%d:%d: YAML syntax error: %s", path, line, col,
            parser->problem != NULL ? parser->problem : "bad input");
    if (parser->error == YAML_READER_ERROR && parser->problem_value >= 0) {
        fprintf(err, " (byte 0x%02x)", (unsigned)parser->problem_value);
    }
    if (parser->context != NULL) {
        fprintf(err, " (%s at line %d)", parser->context,
                (int)parser->context_mark.line + 1);
    }
    fputc('\n', err);
}

/* Loads a job file (see cli.h). */
int tdm__cli_job_load(const char *path, tdm__cli_job **out, FILE *err)
{
    tdm__cli_job *cj = calloc(1, sizeof *cj);
    yaml_parser_t parser;
    yaml_document_t doc;
    loader L = {0};
    size_t len = 0;
    char *text = NULL;
    int rc = TDM_EXIT_OK, have_parser = 0, have_doc = 0;

    *out = cj;
    if (cj == NULL || (cj->file = dup_str(path)) == NULL ||
        tdm_job_new(&cj->job) != TDM_OK) {
        fprintf(err, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    text = tdm__cli_read_file(path, &len);
    if (text == NULL) {
        fprintf(err, "%s: cannot read the job file: %s\n", path,
                strerror(errno));
        return TDM_EXIT_RUNTIME;
    }
    if (!yaml_parser_initialize(&parser)) {
        fprintf(err, "tidemark: out of memory\n");
        rc = TDM_EXIT_RUNTIME;
        goto out;
    }
    have_parser = 1;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        syntax_error(&parser, path, text, len, err);
        cj->errors++;
        rc = parser.error == YAML_MEMORY_ERROR ? TDM_EXIT_RUNTIME
                                               : TDM_EXIT_INVALID;
        goto out;
    }
    have_doc = 1;
    L.cj = cj;
    L.doc = &doc;
    L.err = err;
    load_document(&L, yaml_document_get_root_node(&doc));
    if (!L.oom) {
        /* One document per file: a second one would be ignored silently
         * otherwise. */
        yaml_document_t next;
        if (!yaml_parser_load(&parser, &next)) {
            syntax_error(&parser, path, text, len, err);
            cj->errors++;
        } else {
            yaml_node_t *r = yaml_document_get_root_node(&next);
            if (r != NULL) {
                report(cj, err, line_of(r), col_of(r), NULL,
                       "a job file holds one YAML document, this is a "
                       "second one (remove the \"---\" above it)");
            }
            yaml_document_delete(&next);
        }
    }
    flush_msgs(cj, err);
    if (L.oom) {
        fprintf(err, "tidemark: out of memory\n");
        rc = TDM_EXIT_RUNTIME;
    } else if (cj->errors > 0) {
        rc = TDM_EXIT_INVALID;
    }
out:
    clear_kvs(&L);
    free(L.kvs);
    if (have_doc) {
        yaml_document_delete(&doc);
    }
    if (have_parser) {
        yaml_parser_delete(&parser);
    }
    free(text);
    return rc;
}

/* ---- --set overrides ---- */

/* Applies one --set; messages are recorded, not yet printed. */
static int override(tdm__cli_job *cj, const char *arg, FILE *err)
{
    const char *eq = strchr(arg, '=');
    char path[512];
    int sc = SC_JOB;
    const char *node = NULL, *key;
    char name[256];
    int before = cj->errors;

    if (eq == NULL || eq == arg || (size_t)(eq - arg) >= sizeof path) {
        fprintf(err,
                "tidemark: --set %s: expected key=value, e.g. --set "
                "windows.uv.allowed_lateness=1m\n",
                arg);
        return TDM_EXIT_USAGE;
    }
    memcpy(path, arg, (size_t)(eq - arg));
    path[eq - arg] = '\0';
    key = path;
    for (int s = SC_SOURCE; s < SC_COUNT; s++) {
        size_t sl = strlen(section_names[s]);
        if (strncmp(path, section_names[s], sl) == 0 && path[sl] == '.') {
            const char *n = path + sl + 1, *dot = strchr(n, '.');
            if (dot == NULL || dot == n || dot[1] == '\0' ||
                (size_t)(dot - n) >= sizeof name) {
                report(cj, err, 0, 0, path,
                       "expected %s.NAME.KEY, e.g. "
                       "windows.uv.allowed_lateness",
                       section_names[s]);
                return TDM_EXIT_INVALID;
            }
            memcpy(name, n, (size_t)(dot - n));
            name[dot - n] = '\0';
            node = name;
            key = dot + 1;
            sc = s;
            break;
        }
    }
    if (node != NULL) {
        const tdm__cli_decl *d = find_decl(cj, node);
        if (d == NULL || d->kind != (tdm_node_kind)sc) {
            report(cj, err, 0, 0, path, "%s has no %s named \"%s\"", cj->file,
                   scope_names[sc], node);
            return TDM_EXIT_INVALID;
        }
    }
    const char *type = key_type(sc, key);
    if (type == NULL) {
        const char *near = suggest(sc, key);
        if (near != NULL) {
            report(cj, err, 0, 0, path, "unknown %s key (did you mean \"%s\"?)",
                   scope_names[sc], near);
        } else {
            report(cj, err, 0, 0, path,
                   "unknown %s key; `tidemark config list` shows the "
                   "known keys",
                   scope_names[sc]);
        }
        return TDM_EXIT_INVALID;
    }
    if (set_key(cj, err, (tdm_node_kind)sc, node, key, eq + 1, 0, 0, 0, 0) !=
        0) {
        fprintf(err, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    return cj->errors > before ? TDM_EXIT_INVALID : TDM_EXIT_OK;
}

/* Applies one --set (see cli.h). */
int tdm__cli_job_override(tdm__cli_job *cj, const char *arg, FILE *err)
{
    int rc = override(cj, arg, err);
    flush_msgs(cj, err);
    return rc;
}

/* ---- Validation with locations ---- */

/* Prints a message at the location of (node, key) (see cli.h). */
void tdm__cli_job_report(tdm__cli_job *cj, const char *node, const char *key,
                         const char *msg, FILE *err)
{
    const tdm__cli_entry *e = key != NULL ? find_entry(cj, node, key) : NULL;
    const tdm__cli_decl *d = node != NULL ? find_decl(cj, node) : NULL;
    char path[512];
    if (e != NULL) {
        key_path(path, sizeof path, e->kind, node, key);
        report(cj, err, e->vline, e->vcol, path, "%s", msg);
    } else if (d != NULL) {
        if (key != NULL) {
            key_path(path, sizeof path, d->kind, node, key);
        } else {
            snprintf(path, sizeof path, "%s.%s", section_names[d->kind], node);
        }
        report(cj, err, d->line, d->col, path, "%s", msg);
    } else {
        report(cj, err, -1, -1, node == NULL ? key : NULL, "%s", msg);
    }
    flush_msgs(cj, err);
}

/* Splits a validation message of the library's form `window "uv":
 * key_by: field ...` or `job: dead_letter: ...` into the node name (into
 * @p name; "" for the job), the key (into @p key, "" when the message
 * names none; only keys of the table count) and the rest.  Returns the
 * rest, or NULL when the message has another form. */
static const char *split_message(const char *msg, char *name, size_t nn,
                                 char *key, size_t kn)
{
    const char *rest = NULL;
    int sc = -1;
    name[0] = key[0] = '\0';
    if (strncmp(msg, "job: ", 5) == 0) {
        sc = SC_JOB;
        rest = msg + 5;
    }
    for (int s = SC_SOURCE; s < SC_COUNT && rest == NULL; s++) {
        size_t sl = strlen(scope_names[s]);
        if (strncmp(msg, scope_names[s], sl) != 0 ||
            strncmp(msg + sl, " \"", 2) != 0) {
            continue;
        }
        const char *n = msg + sl + 2, *q = strstr(n, "\": ");
        if (q == NULL || (size_t)(q - n) >= nn) {
            return NULL;
        }
        memcpy(name, n, (size_t)(q - n));
        name[q - n] = '\0';
        sc = s;
        rest = q + 3;
    }
    if (rest == NULL) {
        return NULL;
    }
    size_t kl = strcspn(rest, ": ");
    if (kl > 0 && kl < kn && strncmp(rest + kl, ": ", 2) == 0) {
        memcpy(key, rest, kl);
        key[kl] = '\0';
        if (key_type(sc, key) != NULL) {
            return rest + kl + 2;
        }
        key[0] = '\0';
    }
    return rest;
}

/* Validates the job and places the library's message in the file (see
 * cli.h): at the key it names when the file set that key, else at the
 * node's name. */
int tdm__cli_job_validate(tdm__cli_job *cj, FILE *err)
{
    char msg[1024] = "", name[256], key[256];
    tdm_err rc = tdm_job_validate(cj->job, msg, sizeof msg);
    if (rc == TDM_OK) {
        return TDM_EXIT_OK;
    }
    if (rc == TDM_ERR_NOMEM) {
        fprintf(err, "tidemark: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    if (msg[0] == '\0') {
        snprintf(msg, sizeof msg, "%s", tdm_strerror(rc));
    }
    const char *rest = split_message(msg, name, sizeof name, key, sizeof key);
    if (rest == NULL) {
        tdm__cli_job_report(cj, NULL, NULL, msg, err);
    } else {
        tdm__cli_job_report(cj, name[0] ? name : NULL, key[0] ? key : NULL,
                            rest, err);
    }
    return TDM_EXIT_INVALID;
}

/* ---- Building a job from another front end (the SQL loader) ---- */

/* Makes an empty job for file @p file (see cli.h). */
int tdm__cli_job_new(const char *file, tdm__cli_job **out)
{
    tdm__cli_job *cj = calloc(1, sizeof *cj);
    *out = cj;
    if (cj == NULL || (cj->file = dup_str(file)) == NULL ||
        tdm_job_new(&cj->job) != TDM_OK) {
        return TDM_EXIT_RUNTIME;
    }
    return TDM_EXIT_OK;
}

/* Declares a node at line:col (see cli.h). */
int tdm__cli_job_declare(tdm__cli_job *cj, FILE *err, tdm_node_kind kind,
                         const char *name, int line, int col)
{
    char msg[512] = "", path[512];
    tdm_node *node;
    snprintf(path, sizeof path, "%s.%s", section_names[kind], name);
    tdm_err rc = tdm_job_add_node(cj->job, kind, name, &node, msg, sizeof msg);
    if (rc == TDM_ERR_NOMEM) {
        return -1;
    }
    if (rc != TDM_OK) {
        report(cj, err, line, col, path, "%s", msg[0] ? msg : tdm_strerror(rc));
        return 0;
    }
    if (cj->n_decls == cj->cap_decls) {
        size_t cap = cj->cap_decls ? cj->cap_decls * 2 : 8;
        tdm__cli_decl *d = realloc(cj->decls, cap * sizeof *d);
        if (d == NULL) {
            return -1;
        }
        cj->decls = d;
        cj->cap_decls = cap;
    }
    tdm__cli_decl *d = &cj->decls[cj->n_decls];
    if ((d->name = dup_str(name)) == NULL) {
        return -1;
    }
    d->kind = kind;
    d->line = line;
    d->col = col;
    cj->n_decls++;
    return 0;
}

/* Sets a key at line:col (see cli.h). */
int tdm__cli_job_put(tdm__cli_job *cj, FILE *err, tdm_node_kind kind,
                     const char *node, const char *key, const char *value,
                     int line, int col)
{
    return set_key(cj, err, kind, node, key, value, line, col, line, col);
}

/* Records an error at line:col (see cli.h). */
void tdm__cli_job_error(tdm__cli_job *cj, FILE *err, int line, int col,
                        const char *msg)
{
    report(cj, err, line, col, NULL, "%s", msg);
}

/* Prints the recorded errors (see cli.h). */
void tdm__cli_job_flush(tdm__cli_job *cj, FILE *err)
{
    flush_msgs(cj, err);
}
