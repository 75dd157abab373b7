/* SPDX-License-Identifier: MIT */
/* sql_catalog.c - CREATE TABLE and SET: the tables of a script, and the
 * job keys their WITH options and the SET keys stand for.
 *
 * A table is not a node yet: each query that reads it gets a source node
 * made from it, and each INSERT INTO it a sink node (sql_plan.c), whose
 * keys come from here.  Options keep Flink's names (the connectors
 * `filesystem`, `kafka`, `nexmark`, `datagen`, `print`, `blackhole`) and
 * map onto tidemark's keys through the table `options` below (rules
 * C1-C10); `tidemark.<key>` passes any tidemark key through unchanged.
 * docs/sql.md lists every option and what it maps to.
 *
 * Column types: BIGINT, INT, INTEGER, SMALLINT, TINYINT are int64;
 * DOUBLE, FLOAT, REAL are double; DECIMAL(p,s) and NUMERIC(p,s) are
 * decimal(p,s), p <= 18 (a scaled int64); STRING, VARCHAR(n), CHAR(n)
 * are string; BOOLEAN is bool; TIMESTAMP(3) and TIMESTAMP_LTZ(3) are
 * timestamp (epoch milliseconds).  The NEXMark generator's fields are
 * named in snake case (date_time); a table's camel-case column (dateTime,
 * as nexmark-flink's DDL has it) maps onto them.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sql/sql_catalog.h"

/* ---- Options ---- */

enum {
    OPT_TEXT,
    OPT_DURATION,
    OPT_STARTUP,
    OPT_BOUNDED,
    OPT_EMIT,
    OPT_GUARANTEE
};
enum { W_SOURCE = 1, W_SINK = 2 };

typedef struct optmap {
    const char *conn; /* connector, "*" for every one */
    int where;        /* W_SOURCE | W_SINK */
    const char *opt;  /* Flink's option ("x.*": a prefix) */
    const char *key;  /* tidemark's key ("kafka.*": the prefix it maps to) */
    int kind;
} optmap;

static const optmap options[] = {
    {"filesystem", W_SOURCE | W_SINK, "path", "path", OPT_TEXT},
    {"filesystem", W_SOURCE | W_SINK, "format", "format", OPT_TEXT},
    {"filesystem", W_SOURCE, "csv.field-delimiter", "csv.delimiter", OPT_TEXT},
    {"filesystem", W_SOURCE, "csv.header", "csv.header", OPT_TEXT},
    {"stdin", W_SOURCE, "format", "format", OPT_TEXT},
    {"stdin", W_SOURCE, "csv.field-delimiter", "csv.delimiter", OPT_TEXT},
    {"stdin", W_SOURCE, "csv.header", "csv.header", OPT_TEXT},
    {"filesystem", W_SOURCE, "json.timestamp-format.standard", "", OPT_TEXT},
    {"nexmark", W_SOURCE, "events.num", "generator.records", OPT_TEXT},
    {"nexmark", W_SOURCE, "first-event.rate", "generator.rate", OPT_TEXT},
    {"nexmark", W_SOURCE, "next-event.rate", "generator.rate", OPT_TEXT},
    {"nexmark", W_SOURCE, "kinds", "generator.nexmark.kinds", OPT_TEXT},
    {"nexmark", W_SOURCE, "partitions", "generator.partitions", OPT_TEXT},
    {"nexmark", W_SOURCE, "seed", "generator.seed", OPT_TEXT},
    {"nexmark", W_SOURCE, "out-of-order-group",
     "generator.nexmark.out_of_order_group", OPT_TEXT},
    {"nexmark", W_SOURCE, "flink-numbering",
     "generator.nexmark.flink_numbering", OPT_TEXT},
    {"datagen", W_SOURCE, "kind", "generator.kind", OPT_TEXT},
    {"datagen", W_SOURCE, "number-of-rows", "generator.records", OPT_TEXT},
    {"datagen", W_SOURCE, "rows-per-second", "generator.rate", OPT_TEXT},
    {"datagen", W_SOURCE, "keys", "generator.keys", OPT_TEXT},
    {"datagen", W_SOURCE, "skew", "generator.skew", OPT_TEXT},
    {"datagen", W_SOURCE, "partitions", "generator.partitions", OPT_TEXT},
    {"datagen", W_SOURCE, "seed", "generator.seed", OPT_TEXT},
    {"datagen", W_SOURCE, "max-delay", "generator.max_delay", OPT_DURATION},
    {"kafka", W_SOURCE, "topic", "topics", OPT_TEXT},
    {"kafka", W_SINK, "topic", "topic", OPT_TEXT},
    {"kafka", W_SOURCE, "topic-pattern", "topic_pattern", OPT_TEXT},
    {"kafka", W_SOURCE | W_SINK, "properties.bootstrap.servers", "brokers",
     OPT_TEXT},
    {"kafka", W_SOURCE, "properties.group.id", "group", OPT_TEXT},
    {"kafka", W_SOURCE | W_SINK, "properties.*", "kafka.*", OPT_TEXT},
    {"kafka", W_SOURCE | W_SINK, "format", "format", OPT_TEXT},
    {"kafka", W_SOURCE | W_SINK, "value.format", "format", OPT_TEXT},
    {"kafka", W_SOURCE, "scan.startup.mode", "start", OPT_STARTUP},
    {"kafka", W_SOURCE, "scan.startup.timestamp-millis", "start.timestamp",
     OPT_TEXT},
    {"kafka", W_SOURCE, "scan.bounded.mode", "stop", OPT_BOUNDED},
    {"kafka", W_SINK, "sink.delivery-guarantee", "delivery", OPT_GUARANTEE},
    {"*", W_SOURCE, "scan.watermark.idle-timeout", "watermark.idle_timeout",
     OPT_DURATION},
    {"*", W_SOURCE, "scan.watermark.alignment.group",
     "watermark.alignment.group", OPT_TEXT},
    {"*", W_SOURCE, "scan.watermark.alignment.max-drift",
     "watermark.alignment.max_drift", OPT_DURATION},
    {"*", W_SOURCE, "scan.watermark.alignment.update-interval",
     "watermark.alignment.update_interval", OPT_DURATION},
    {"*", W_SOURCE, "scan.watermark.emit.strategy", "watermark.emit", OPT_EMIT},
    {"*", W_SOURCE | W_SINK, "tidemark.*", "*", OPT_TEXT},
};

/* Connectors: the node type each side becomes ("": not that side). */
static const struct {
    const char *name, *source_type, *sink_type;
} connectors[] = {
    {"filesystem", "file", "file"}, {"kafka", "kafka", "kafka"},
    {"nexmark", "generator", ""},   {"datagen", "generator", ""},
    {"print", "", "stdout"},        {"blackhole", "", "discard"},
    {"stdin", "stdin", ""},
};

/* A Flink duration as "<n>ms" (see sql_catalog.h). */
bool tdm__sql_duration(const char *in, char *out, size_t n)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"", 1},
                 {"ms", 1},
                 {"milli", 1},
                 {"millis", 1},
                 {"millisecond", 1},
                 {"milliseconds", 1},
                 {"s", 1000},
                 {"sec", 1000},
                 {"secs", 1000},
                 {"second", 1000},
                 {"seconds", 1000},
                 {"min", 60000},
                 {"mins", 60000},
                 {"minute", 60000},
                 {"minutes", 60000},
                 {"m", 60000},
                 {"h", 3600000},
                 {"hour", 3600000},
                 {"hours", 3600000},
                 {"d", 86400000},
                 {"day", 86400000},
                 {"days", 86400000}};
    char *end;
    long long v = strtoll(in, &end, 10);
    if (end == in || v < 0) {
        return false;
    }
    while (*end == ' ') {
        end++;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].unit) == 0) {
            snprintf(out, n, "%lldms", v * (long long)units[i].ms);
            return true;
        }
    }
    return false;
}

/* Converts an option's value by kind; false when it is not valid. */
static bool convert(int kind, const char *in, char *out, size_t n)
{
    static const char *const startup[][2] = {{"earliest-offset", "earliest"},
                                             {"latest-offset", "latest"},
                                             {"group-offsets", "committed"},
                                             {"timestamp", "timestamp"}};
    switch (kind) {
    case OPT_DURATION:
        return tdm__sql_duration(in, out, n);
    case OPT_STARTUP:
        for (size_t i = 0; i < 4; i++) {
            if (strcmp(in, startup[i][0]) == 0) {
                snprintf(out, n, "%s", startup[i][1]);
                return true;
            }
        }
        return false;
    case OPT_BOUNDED: /* C1: only the bound tidemark has. */
        snprintf(out, n, "%s", strcmp(in, "latest-offset") == 0 ? "end" : "");
        return out[0] != '\0' || strcmp(in, "unbounded") == 0;
    case OPT_EMIT:
        snprintf(out, n, "%s",
                 strcmp(in, "on-event") == 0      ? "on_event"
                 : strcmp(in, "on-periodic") == 0 ? "periodic"
                                                  : "");
        return out[0] != '\0';
    case OPT_GUARANTEE: /* C2: Flink's names; none asks for nothing. */
        snprintf(out, n, "%s",
                 strcmp(in, "exactly-once") == 0    ? "exactly_once"
                 : strcmp(in, "at-least-once") == 0 ? "at_least_once"
                 : strcmp(in, "none") == 0          ? "auto"
                                                    : "");
        return out[0] != '\0';
    default:
        snprintf(out, n, "%s", in);
        return true;
    }
}

/* The option row of @p opt for connector @p conn on side @p where. */
static const optmap *find_option(const char *conn, int where, const char *opt)
{
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        const optmap *m = &options[i];
        size_t ol = strlen(m->opt);
        bool prefix = ol > 2 && strcmp(m->opt + ol - 2, ".*") == 0;
        if ((strcmp(m->conn, "*") != 0 && strcmp(m->conn, conn) != 0) ||
            !(m->where & where)) {
            continue;
        }
        if (prefix ? strncmp(opt, m->opt, ol - 1) == 0 && opt[ol - 1] != '\0'
                   : strcmp(opt, m->opt) == 0) {
            return m;
        }
    }
    return NULL;
}

/* Lists the options of @p conn on side @p where into @p buf. */
static void list_options(const char *conn, int where, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof options / sizeof options[0] && used < n;
         i++) {
        const optmap *m = &options[i];
        if ((strcmp(m->conn, "*") == 0 || strcmp(m->conn, conn) == 0) &&
            (m->where & where)) {
            used += (size_t)snprintf(buf + used, n - used, "%s'%s'",
                                     used ? ", " : "", m->opt);
        }
    }
}

/* The option of @p conn closest to @p opt (edit distance at most 2),
 * or NULL. */
static const char *closest_option(const char *conn, int where, const char *opt)
{
    const char *best = NULL;
    int best_d = 3;
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        const optmap *m = &options[i];
        if ((strcmp(m->conn, "*") != 0 && strcmp(m->conn, conn) != 0) ||
            !(m->where & where) || strchr(m->opt, '*') != NULL) {
            continue;
        }
        int d = tdm__cli_distance(opt, m->opt, 2);
        if (d < best_d) {
            best_d = d;
            best = m->opt;
        }
    }
    return best;
}

/* Sets cat's error at @p at. */
static int fail(sql_catalog *cat, const sql_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(sql_catalog *cat, const sql_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cat->err, sizeof cat->err, fmt, ap);
    va_end(ap);
    cat->err_at = at;
    return -1;
}

/* Appends one pair; false when full. */
static bool put(sql_kv *out, int cap, int *n, const char *key,
                const char *value, const sql_node *at)
{
    if (*n >= cap || strlen(value) >= sizeof out[*n].value ||
        strlen(key) >= sizeof out[*n].key) {
        return false; /* The caller refuses: never a truncated pair. */
    }
    snprintf(out[*n].key, sizeof out[*n].key, "%.*s",
             (int)sizeof out[*n].key - 1, key);
    snprintf(out[*n].value, sizeof out[*n].value, "%s", value);
    out[*n].at = at;
    (*n)++;
    return true;
}

/* The source type or sink type of a connector; NULL if unknown. */
static const char *node_type(const char *conn, bool sink)
{
    for (size_t i = 0; i < sizeof connectors / sizeof connectors[0]; i++) {
        if (strcmp(connectors[i].name, conn) == 0) {
            return sink ? connectors[i].sink_type : connectors[i].source_type;
        }
    }
    return NULL;
}

/* One WITH option as a pair (C3-C5); -1 with cat->err set. */
static int option_key(sql_catalog *cat, const sql_table *t, bool sink,
                      const sql_node *o, sql_kv *out, int cap, int *n)
{
    const char *opt = o->text, *val = o->a->text;
    char key[128], value[512], known[1024];
    if (strcmp(opt, "connector") == 0) {
        return 0;
    }
    const optmap *m = find_option(t->connector, sink ? W_SINK : W_SOURCE, opt);
    if (m == NULL) { /* C3: an option that does not apply is refused. */
        const char *near =
            closest_option(t->connector, sink ? W_SINK : W_SOURCE, opt);
        if (near != NULL) {
            return fail(cat, o,
                        "option '%s' does not apply to a %s %s table "
                        "(did you mean '%s'?)",
                        opt, t->connector, sink ? "sink" : "source", near);
        }
        list_options(t->connector, sink ? W_SINK : W_SOURCE, known,
                     sizeof known);
        return fail(cat, o,
                    "option '%s' does not apply to a %s %s table (its "
                    "options: %s)",
                    opt, t->connector, sink ? "sink" : "source", known);
    }
    if (!convert(m->kind, val, value, sizeof value)) { /* C4 */
        return fail(cat, o->a, "option '%s': \"%s\" is not a valid value%s",
                    opt, val,
                    m->kind == OPT_DURATION ? " (expected a duration like "
                                              "'5 s', '1 min' or '200ms')"
                                            : "");
    }
    if (m->key[0] == '\0' || value[0] == '\0') {
        return 0; /* Accepted, nothing to set (C2, the ISO timestamps). */
    }
    size_t kl = strlen(m->key);
    if (strcmp(m->key, "*") == 0) { /* C5: tidemark.<key> passes through. */
        snprintf(key, sizeof key, "%s", opt + strlen("tidemark."));
    } else if (kl > 2 && strcmp(m->key + kl - 2, ".*") == 0) {
        snprintf(key, sizeof key, "%.*s%s", (int)(kl - 1), m->key,
                 opt + strlen(m->opt) - 1);
    } else {
        snprintf(key, sizeof key, "%s", m->key);
    }
    return put(out, cap, n, key, value, o) ? 0
                                           : fail(cat, o, "too many options");
}

/* Whether the source must read column @p i of @p t: the query uses it,
 * it holds the event time, or a tidemark.* option names it (C7: the
 * schema has only those, as Flink pushes a projection into the
 * source). */
static bool needed(const sql_table *t, const int *used, int i)
{
    if (used[i] || i == t->rowtime) {
        return true;
    }
    for (const sql_node *o = t->def->b; o != NULL; o = o->next) {
        if (strncmp(o->text, "tidemark.", 9) == 0 && /* partition.field */
            strcasecmp(o->a->text, t->cols[i].name) == 0) {
            return true;
        }
    }
    for (int k = 0; k < t->n_cols; k++) {
        const sql_col *c = &t->cols[k];
        if (c->expr != NULL && (used[k] || k == t->rowtime) &&
            strcasecmp(c->expr->a->text, t->cols[i].name) == 0) {
            return true;
        }
    }
    return false;
}

/* The schema text of @p t: "f:type, ..." over the stored columns the
 * query needs. */
static bool schema_text(const sql_table *t, const int *used, char *buf,
                        size_t n)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->n_cols && u < n; i++) {
        const sql_col *c = &t->cols[i];
        if (c->expr != NULL || !needed(t, used, i)) {
            continue;
        }
        u += (size_t)snprintf(buf + u, n - u, "%s%s:%s", u ? ", " : "",
                              c->field, c->type);
    }
    return u < n;
}

/* C10: the METADATA columns the query reads, as the Kafka source's
 * "metadata.<field>" keys. */
static void metadata_keys(const sql_table *t, const int *used, sql_kv *out,
                          int cap, int *n)
{
    for (int i = 0; i < t->n_cols; i++) {
        const sql_col *c = &t->cols[i];
        char key[160];
        if (c->meta != NULL && needed(t, used, i)) {
            snprintf(key, sizeof key, "metadata.%s", c->field);
            put(out, cap, n, key, c->meta, c->at);
        }
    }
}

/* Event time of a file or Kafka source: its field and unit (C6); a
 * METADATA 'timestamp' column is the message time (C10). */
static void time_keys(const sql_table *t, sql_kv *out, int cap, int *n)
{
    const sql_col *rt = &t->cols[t->rowtime];
    if (rt->meta != NULL) {
        put(out, cap, n, "timestamp.source", "message", rt->at);
        return;
    }
    const char *unit = "iso8601";
    const char *field = rt->field;
    if (rt->expr != NULL) { /* TO_TIMESTAMP_LTZ(col, 3|0), checked at add. */
        const sql_node *arg = rt->expr->a;
        field = t->cols[tdm__sql_table_col(t, arg->text)].field;
        unit = arg->next->ival == 0 ? "s" : "ms";
    }
    put(out, cap, n, "timestamp.field", field, rt->at);
    put(out, cap, n, "timestamp.unit", unit, rt->at);
}

/* The keys of a table's node (see sql_catalog.h). */
int tdm__sql_connector_keys(sql_catalog *cat, const sql_table *t,
                            const int *used, sql_kv *out, int cap)
{
    bool sink = used == NULL;
    const char *type = node_type(t->connector, sink);
    char schema[4096], delay[32];
    int n = 0;
    if (type == NULL || type[0] == '\0') {
        return fail(cat, t->def, "a '%s' table cannot be %s", t->connector,
                    sink ? "written to (INSERT INTO)" : "read (FROM)");
    }
    put(out, cap, &n, "type", type, t->def);
    for (const sql_node *o = t->def->b; o != NULL; o = o->next) {
        if (strcmp(o->text, "format") == 0 && /* before the schema */
            option_key(cat, t, sink, o, out, cap, &n) != 0) {
            return -1;
        }
    }
    if (!sink) {
        if (!schema_text(t, used, schema, sizeof schema) ||
            !put(out, cap, &n, "schema", schema, t->def)) {
            return fail(cat, t->def,
                        "table %s has too many columns for "
                        "one source (its schema text is over "
                        "%zu bytes)",
                        t->name, sizeof out[0].value - 1);
        }
        if (strcmp(type, "generator") == 0) {
            put(out, cap, &n, "generator.kind",
                strcmp(t->connector, "nexmark") == 0 ? "nexmark" : "clicks",
                t->def);
        }
        if (t->rowtime < 0) { /* C8: no time attribute: processing time. */
            put(out, cap, &n, "time", "processing", t->def);
        } else {
            if (strcmp(type, "generator") != 0) {
                time_keys(t, out, cap, &n);
            }
            snprintf(delay, sizeof delay, "%lldms", (long long)t->wm_delay);
            put(out, cap, &n, "watermark.strategy", "bounded", t->def);
            put(out, cap, &n, "watermark.delay", delay, t->def);
        }
        metadata_keys(t, used, out, cap, &n);
    }
    for (const sql_node *o = t->def->b; o != NULL; o = o->next) {
        if (strcmp(o->text, "format") != 0 &&
            option_key(cat, t, sink, o, out, cap, &n) != 0) {
            return -1;
        }
    }
    return n;
}

/* ---- SET ---- */

typedef struct setmap {
    const char *key;
    int scope; /* SET_JOB, SET_SOURCE (every source gets it) or SET_WINDOW
                  (every window) */
    const char *to;
    int kind;
} setmap;

static const setmap settings[] = {
    {"parallelism.default", SET_JOB, "parallelism", OPT_TEXT},
    {"pipeline.name", SET_JOB, "name", OPT_TEXT},
    {"execution.checkpointing.interval", SET_JOB, "checkpoint.interval",
     OPT_DURATION},
    {"pipeline.auto-watermark-interval", SET_SOURCE, "watermark.interval",
     OPT_DURATION},
    {"table.exec.source.idle-timeout", SET_SOURCE, "watermark.idle_timeout",
     OPT_DURATION},
    {"table.exec.emit.allow-lateness", SET_WINDOW, "allowed_lateness",
     OPT_DURATION},
    {"tidemark.late-output", SET_WINDOW, "late_output", OPT_TEXT},
    {"tidemark.*", SET_JOB, "*", OPT_TEXT},
};

/* The row of SET key @p key, or NULL. */
static const setmap *find_setting(const char *key)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        if (strcmp(settings[i].key, key) == 0 ||
            (strcmp(settings[i].to, "*") == 0 &&
             strncmp(key, "tidemark.", 9) == 0 && key[9] != '\0')) {
            return &settings[i];
        }
    }
    return NULL;
}

/* Records a SET (see sql_catalog.h). */
int tdm__sql_catalog_set(sql_catalog *cat, const sql_node *set)
{
    char v[512];
    if (set->a == NULL) {
        return fail(cat, set,
                    "SET without a key lists nothing here: write "
                    "SET 'key' = 'value'");
    }
    const setmap *m = find_setting(set->text);
    if (m == NULL) { /* S1: an unknown key is refused. */
        return fail(cat, set,
                    "unknown SET key '%s' (known: 'parallelism.default', "
                    "'pipeline.name', 'execution.checkpointing.interval', "
                    "'pipeline.auto-watermark-interval', "
                    "'table.exec.source.idle-timeout', "
                    "'table.exec.emit.allow-lateness', "
                    "'tidemark.late-output', 'tidemark.<job key>')",
                    set->text);
    }
    if (!convert(m->kind, set->a->text, v, sizeof v)) {
        return fail(cat, set->a,
                    "SET '%s': \"%s\" is not a duration like "
                    "'5 s' or '200ms'",
                    set->text, set->a->text);
    }
    sql_setting *s = realloc(cat->sets, (size_t)(cat->n_sets + 1) * sizeof *s);
    if (s == NULL) {
        return fail(cat, set, "out of memory");
    }
    cat->sets = s;
    s[cat->n_sets].key = set->text;
    s[cat->n_sets].value = set->a->text;
    s[cat->n_sets].at = set;
    cat->n_sets++;
    return 0;
}

/* The keys of the SETs (see sql_catalog.h). */
int tdm__sql_setting_keys(sql_catalog *cat, int scope, sql_kv *out, int cap)
{
    int n = 0;
    for (int i = 0; i < cat->n_sets; i++) {
        const setmap *m = find_setting(cat->sets[i].key);
        char v[512];
        if (m == NULL || m->scope != scope ||
            !convert(m->kind, cat->sets[i].value, v, sizeof v)) {
            continue;
        }
        put(out, cap, &n,
            strcmp(m->to, "*") == 0 ? cat->sets[i].key + 9 : m->to, v,
            cat->sets[i].at);
    }
    return n;
}

/* ---- CREATE TABLE ---- */

/* ---- Decimal types ----
 * A DECIMAL(p, s) column is the job's decimal(p,s): a scaled int64, so p
 * is at most 18 (docs/design-notes.md).  The type strings live in one
 * table filled once, so columns and expressions can point to them. */

static char decimal_names[19][19][16];
static pthread_once_t decimal_once = PTHREAD_ONCE_INIT;

static void decimal_fill(void)
{
    for (int p = 1; p <= 18; p++) {
        for (int s = 0; s <= p; s++) {
            snprintf(decimal_names[p][s], sizeof decimal_names[p][s],
                     "decimal(%d,%d)", p, s);
        }
    }
}

const char *tdm__sql_decimal_type(int p, int s)
{
    if (p < 1 || p > 18 || s < 0 || s > p) {
        return NULL;
    }
    pthread_once(&decimal_once, decimal_fill);
    return decimal_names[p][s];
}

int tdm__sql_decimal_scale(const char *type)
{
    const char *comma;
    if (type == NULL || strncmp(type, "decimal(", 8) != 0 ||
        (comma = strchr(type, ',')) == NULL) {
        return -1;
    }
    return atoi(comma + 1);
}

/* DECIMAL(p, s) / NUMERIC(p, s) of type node @p t (DECIMAL is (10, 0)
 * and DECIMAL(p) is (p, 0), as in Flink); NULL with cat->err set when p
 * or s is out of range. */
static const char *decimal_col(sql_catalog *cat, const sql_node *c,
                               const sql_node *t)
{
    int p = t->ival < 0 ? 10 : (int)t->ival, s = t->ival < 0 ? 0 : t->ival2;
    if (p > 18) {
        fail(cat, t,
             "column %s: %s(%d, %d) has %d digits; tidemark's DECIMAL "
             "holds at most 18 (a scaled int64): use DECIMAL(18, %d) or "
             "DOUBLE",
             c->text, t->text, p, s, p, s > 18 ? 18 : s);
        return NULL;
    }
    if (p < 1 || s < 0 || s > p) {
        fail(cat, t,
             "column %s: %s(%d, %d): expected 1 <= p <= 18 and "
             "0 <= s <= p",
             c->text, t->text, p, s);
        return NULL;
    }
    return tdm__sql_decimal_type(p, s);
}

/* The job type of a SQL type; NULL if unknown. */
static const char *job_type(const char *sql)
{
    static const char *const map[][2] = {
        {"BIGINT", "int64"},        {"INT", "int64"},
        {"INTEGER", "int64"},       {"SMALLINT", "int64"},
        {"TINYINT", "int64"},       {"DOUBLE", "double"},
        {"FLOAT", "double"},        {"REAL", "double"},
        {"STRING", "string"},       {"VARCHAR", "string"},
        {"CHAR", "string"},         {"BOOLEAN", "bool"},
        {"TIMESTAMP", "timestamp"}, {"TIMESTAMP_LTZ", "timestamp"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strcmp(map[i][0], sql) == 0) {
            return map[i][1];
        }
    }
    return NULL;
}

/* The job field name of column @p name: as is, or in snake case for the
 * NEXMark generator (dateTime -> date_time). */
static char *field_name(const char *name, bool snake)
{
    size_t n = strlen(name);
    char *f = malloc(2 * n + 1), *o = f;
    if (f == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (snake && isupper((unsigned char)name[i]) && i > 0) {
            *o++ = '_';
        }
        *o++ = snake ? (char)tolower((unsigned char)name[i]) : name[i];
    }
    *o = '\0';
    return f;
}

/* C10: a METADATA column (Flink's Kafka connector): its key, the column
 * name when FROM is left out, must be one the Kafka source fills, into a
 * column of the key's type; on another connector it is refused. */
static int check_metadata(sql_catalog *cat, const sql_table *t,
                          const sql_node *c, sql_col *col)
{
    static const char *const keys[][2] = {{"timestamp", "timestamp"},
                                          {"partition", "int64"},
                                          {"offset", "int64"},
                                          {"topic", "string"}};
    static const char *const sql[] = {"TIMESTAMP_LTZ(3)", "INT", "BIGINT",
                                      "STRING"};
    col->meta = c->b->text[0] != '\0' ? c->b->text : c->text;
    if (strcmp(t->connector, "kafka") != 0) {
        return fail(cat, c,
                    "column %s: METADATA columns are read from Kafka "
                    "messages; a '%s' table has none",
                    c->text, t->connector);
    }
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (strcmp(col->meta, keys[k][0]) != 0) {
            continue;
        }
        if (strcmp(col->type, keys[k][1]) != 0) {
            return fail(cat, c->a, "column %s: METADATA '%s' is %s, not %s",
                        c->text, col->meta, sql[k], c->a->text);
        }
        return 0;
    }
    return fail(cat, c->b->text[0] != '\0' ? c->b : c,
                "column %s: unknown Kafka metadata '%s' (known: "
                "'timestamp', 'partition', 'offset', 'topic')",
                c->text, col->meta);
}

/* Adds one column; -1 with cat->err set. */
static int add_column(sql_catalog *cat, sql_table *t, const sql_node *c)
{
    sql_col *col = &t->cols[t->n_cols];
    memset(col, 0, sizeof *col);
    col->name = c->text;
    col->at = c;
    if (tdm__sql_table_col(t, c->text) >= 0) {
        return fail(cat, c, "column %s is declared twice", c->text);
    }
    for (const char *p = c->text; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_') {
            return fail(cat, c,
                        "column name \"%s\": use letters, digits "
                        "and '_'",
                        c->text);
        }
    }
    if (c->kind == SQLK_COMPUTED) {
        col->expr = c->a;
        col->type = "timestamp";
    } else if (strcmp(c->a->text, "DECIMAL") == 0 ||
               strcmp(c->a->text, "NUMERIC") == 0) {
        col->type = decimal_col(cat, c, c->a);
        if (col->type == NULL) {
            return -1;
        }
        col->meta = c->b != NULL ? c->b->text : NULL;
    } else {
        col->type = job_type(c->a->text);
        if (col->type == NULL) {
            return fail(cat, c->a,
                        "unknown type %s (known: BIGINT, INT, DOUBLE, "
                        "DECIMAL, STRING, VARCHAR, BOOLEAN, TIMESTAMP(3), "
                        "TIMESTAMP_LTZ(3))",
                        c->a->text);
        }
        if (c->b != NULL && check_metadata(cat, t, c, col) != 0) {
            return -1;
        }
    }
    col->field = field_name(c->text, strcmp(t->connector, "nexmark") == 0);
    if (col->field == NULL) {
        return fail(cat, c, "out of memory");
    }
    t->n_cols++;
    return 0;
}

/* A computed column tidemark can read: TO_TIMESTAMP_LTZ(col, 3 or 0)
 * over a BIGINT column, as the event time (W2). */
static int check_computed(sql_catalog *cat, sql_table *t, const sql_col *c)
{
    const sql_node *e = c->expr, *a = e->a;
    int i;
    if (e->kind != SQLK_CALL || strcmp(e->text, "TO_TIMESTAMP_LTZ") != 0 ||
        a == NULL || a->kind != SQLK_ID || a->next == NULL ||
        a->next->kind != SQLK_INT || a->next->next != NULL ||
        (a->next->ival != 3 && a->next->ival != 0) ||
        (i = tdm__sql_table_col(t, a->text)) < 0 ||
        strcmp(t->cols[i].type, "int64") != 0) {
        return fail(cat, e,
                    "computed column %s: only TO_TIMESTAMP_LTZ(<BIGINT "
                    "column>, 3) or (..., 0) is supported in CREATE TABLE; "
                    "compute other values in the query",
                    c->name);
    }
    return 0;
}

/* W4: PRIMARY KEY (...) NOT ENFORCED, once, over columns of the table
 * (an upsert table: sql_sink.c checks it against the query). */
static int add_pkey(sql_catalog *cat, sql_table *t, const sql_node *c)
{
    if (t->pkey != NULL) {
        return fail(cat, c, "%s has a PRIMARY KEY already", t->name);
    }
    for (const sql_node *k = c->a; k != NULL; k = k->next) {
        if (tdm__sql_table_col(t, k->text) < 0) {
            return fail(cat, k, "PRIMARY KEY: %s is not a column of %s",
                        k->text, t->name);
        }
    }
    t->pkey = c->a;
    return 0;
}

/* The watermark: WATERMARK FOR c AS c [- INTERVAL ...] (W1, W3). */
static int add_watermark(sql_catalog *cat, sql_table *t, const sql_node *w)
{
    const sql_node *e = w->a;
    int i = tdm__sql_table_col(t, w->text);
    if (i < 0) {
        return fail(cat, w, "WATERMARK FOR %s: no such column", w->text);
    }
    if (strcmp(t->cols[i].type, "timestamp") != 0) {
        return fail(cat, w,
                    "WATERMARK FOR %s: the column must be "
                    "TIMESTAMP(3) or TIMESTAMP_LTZ(3)",
                    w->text);
    }
    if (t->rowtime >= 0) {
        return fail(cat, w, "a table has one WATERMARK");
    }
    t->rowtime = i;
    if (e->kind == SQLK_ID && strcasecmp(e->text, w->text) == 0) {
        t->wm_delay = 0;
        return 0;
    }
    if (e->kind == SQLK_BINARY && strcmp(e->text, "-") == 0 &&
        e->a->kind == SQLK_ID && strcasecmp(e->a->text, w->text) == 0 &&
        e->b->kind == SQLK_INTERVAL &&
        (t->wm_delay = tdm__sql_interval_ms(e->b->text, e->b->unit)) >= 0) {
        return 0;
    }
    return fail(cat, e,
                "the watermark must be %s or %s - INTERVAL '<n>' <unit> "
                "(a bounded delay)",
                w->text, w->text);
}

/* The connector option of a CREATE TABLE; -1 if missing or unknown. */
static int take_connector(sql_catalog *cat, sql_table *t, const sql_node *def)
{
    for (const sql_node *o = def->b; o != NULL; o = o->next) {
        if (strcmp(o->text, "connector") == 0) {
            t->connector = o->a->text;
        }
    }
    if (t->connector == NULL) {
        return fail(cat, def,
                    "table %s has no 'connector' option (one of "
                    "'filesystem', 'kafka', 'nexmark', 'datagen', "
                    "'print', 'blackhole', 'stdin')",
                    def->text);
    }
    if (node_type(t->connector, false) == NULL) {
        return fail(cat, def,
                    "unknown connector '%s' (known: 'filesystem', "
                    "'kafka', 'nexmark', 'datagen', 'print', "
                    "'blackhole', 'stdin')",
                    t->connector);
    }
    return 0;
}

/* C9: a generator makes a fixed set of fields; a column it does not
 * make would be null forever, so it is refused (NEXMark's `extra`, which
 * the benchmark's tables declare, is the one allowed: always null). */
static int check_generated(sql_catalog *cat, const sql_table *t)
{
    static const char *const nexmark[] = {
        "event_type", "id",      "name",      "email_address", "credit_card",
        "city",       "state",   "item_name", "description",   "initial_bid",
        "reserve",    "expires", "seller",    "category",      "auction",
        "bidder",     "price",   "channel",   "url",           "date_time",
        "extra",      NULL};
    static const char *const clicks[] = {"user", "page", "ts", NULL};
    static const char *const sensors[] = {"sensor", "value", "ts", NULL};
    const char *kind = tdm__sql_table_option(t, "kind");
    const char *const *known = strcmp(t->connector, "nexmark") == 0 ? nexmark
                               : kind != NULL && strcmp(kind, "sensors") == 0
                                   ? sensors
                                   : clicks;
    if (strcmp(t->connector, "nexmark") != 0 &&
        strcmp(t->connector, "datagen") != 0) {
        return 0;
    }
    for (int i = 0; i < t->n_cols; i++) {
        bool ok = t->cols[i].expr != NULL;
        for (int k = 0; known[k] != NULL && !ok; k++) {
            ok = strcmp(known[k], t->cols[i].field) == 0;
        }
        if (!ok) {
            char list[400];
            size_t u = 0;
            for (int k = 0; known[k] != NULL && u < sizeof list; k++) {
                u += (size_t)snprintf(list + u, sizeof list - u, "%s%s",
                                      k ? ", " : "", known[k]);
            }
            return fail(cat, t->cols[i].at,
                        "column %s: the %s generator makes no such field "
                        "(it makes %s%s)",
                        t->cols[i].name, t->connector, list,
                        strcmp(t->connector, "nexmark") == 0
                            ? "; camel case works: dateTime is date_time"
                            : "");
        }
    }
    return 0;
}

/* Fills @p t from @p def; -1 with cat->err set. */
static int fill_table(sql_catalog *cat, sql_table *t, const sql_node *def)
{
    int n = 0;
    for (const sql_node *c = def->a; c != NULL; c = c->next) {
        n++;
    }
    t->name = def->text;
    t->def = def;
    t->rowtime = -1;
    if (take_connector(cat, t, def) != 0 ||
        (t->cols = calloc((size_t)n, sizeof *t->cols)) == NULL) {
        return t->connector == NULL ? -1 : fail(cat, def, "out of memory");
    }
    for (const sql_node *c = def->a; c != NULL; c = c->next) {
        if ((c->kind == SQLK_COLUMN || c->kind == SQLK_COMPUTED) &&
            add_column(cat, t, c) != 0) {
            return -1;
        }
    }
    for (int i = 0; i < t->n_cols; i++) {
        if (t->cols[i].expr != NULL && check_computed(cat, t, &t->cols[i])) {
            return -1;
        }
    }
    if (check_generated(cat, t) != 0) {
        return -1;
    }
    for (const sql_node *c = def->a; c != NULL; c = c->next) {
        if (c->kind == SQLK_WATERMARK && add_watermark(cat, t, c) != 0) {
            return -1;
        }
        if (c->kind == SQLK_PKEY && add_pkey(cat, t, c) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Frees one table's columns. */
static void table_free(sql_table *t)
{
    for (int i = 0; t->cols != NULL && i < t->n_cols; i++) {
        free(t->cols[i].field);
    }
    free(t->cols);
}

/* Adds a table (see sql_catalog.h). */
int tdm__sql_catalog_add(sql_catalog *cat, const sql_node *create)
{
    sql_table t = {0};
    if (tdm__sql_catalog_find(cat, create->text) != NULL) {
        return fail(cat, create, "table %s already exists", create->text);
    }
    if (fill_table(cat, &t, create) != 0) {
        table_free(&t);
        return -1;
    }
    sql_table *arr =
        realloc(cat->tables, (size_t)(cat->n_tables + 1) * sizeof *arr);
    if (arr == NULL) {
        table_free(&t);
        return fail(cat, create, "out of memory");
    }
    cat->tables = arr;
    arr[cat->n_tables++] = t;
    return 0;
}

/* Finds a table (see sql_catalog.h). */
sql_table *tdm__sql_catalog_find(sql_catalog *cat, const char *name)
{
    for (int i = 0; i < cat->n_tables; i++) {
        if (strcasecmp(cat->tables[i].name, name) == 0) {
            return &cat->tables[i];
        }
    }
    return NULL;
}

/* Finds a column (see sql_catalog.h). */
int tdm__sql_table_col(const sql_table *t, const char *name)
{
    for (int i = 0; i < t->n_cols; i++) {
        if (strcasecmp(t->cols[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

/* An option's value (see sql_catalog.h). */
const char *tdm__sql_table_option(const sql_table *t, const char *key)
{
    for (const sql_node *o = t->def->b; o != NULL; o = o->next) {
        if (strcmp(o->text, key) == 0) {
            return o->a->text;
        }
    }
    return NULL;
}

/* Frees the catalog's arrays (the trees belong to the script). */
void tdm__sql_catalog_free(sql_catalog *cat)
{
    for (int i = 0; cat != NULL && i < cat->n_tables; i++) {
        table_free(&cat->tables[i]);
    }
    if (cat != NULL) {
        free(cat->tables);
        free(cat->sets);
    }
}
