/* SPDX-License-Identifier: MIT */
/* sql_group.c - GROUP BY over a window: a window node.
 *
 * The window comes from a window table function in FROM (TUMBLE, HOP,
 * SESSION: GROUP BY must then list window_start and window_end) or from
 * the older group window in GROUP BY itself (TUMBLE(ts, size) with
 * TUMBLE_START/TUMBLE_END in the SELECT list).  The other GROUP BY
 * columns (and SESSION's PARTITION BY) are the window's key_by; each
 * aggregate of the SELECT list is one of the window's aggregates, named
 * agg1, agg2, ... in the job and renamed by the sink's select.  An
 * aggregate over an expression (SUM(price * 2)) aggregates a field the
 * source computes.  Rules P9-P12; P10: GROUP BY without a window makes a
 * changelog and is refused until changelog queries exist.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sql/sql_plan.h"

/* What the aggregation is being built from. */
typedef struct agg_plan {
    rel *in;  /* the rows aggregated */
    pwin win; /* the window */
    const sql_node *key[16];
    const pcol *keycol[16];
    int n_keys;
    char aggs[2048]; /* "fn(field) as name, ..." */
    int n_aggs;
    bool has_start, has_end;
    const char *one_phase;  /* why the aggregates need one phase, or NULL */
    const sql_node *legacy; /* GROUP BY TUMBLE(ts, ...) and the like */
} agg_plan;

/* Whether @p e names the column called @p name in @p in. */
static bool names_col(planner *p, const rel *in, const sql_node *e,
                      const char *name)
{
    if (e == NULL || e->kind != SQLK_ID) {
        return false;
    }
    const pcol *c = tdm__sql_resolve(p, in, e);
    p->msg[0] = '\0';
    return c != NULL && strcmp(c->job, name) == 0;
}

/* A legacy group window: TUMBLE(ts, size), HOP(ts, slide, size),
 * SESSION(ts, gap) in GROUP BY (P9: over the event-time column). */
static int legacy_window(planner *p, agg_plan *a, const sql_node *g)
{
    const pcol *c;
    if (a->win.type != NULL) {
        return tdm__sql_fail(p, g, "one window per GROUP BY");
    }
    if (g->a == NULL || g->a->kind != SQLK_ID ||
        (c = tdm__sql_resolve(p, a->in, g->a)) == NULL || c->rowtime != 1) {
        return tdm__sql_fail(p, g,
                             "%s(time column, ...): the first argument "
                             "must be an event-time column (WATERMARK "
                             "FOR it in CREATE TABLE; a join's columns "
                             "and a window's window_end are not)",
                             g->text);
    }
    const sql_node *iv[8];
    int n = 0;
    for (const sql_node *x = g->a->next; x != NULL && n < 8; x = x->next) {
        iv[n++] = x;
    }
    a->legacy = g;
    if (strcmp(g->text, "CUMULATE") == 0) { /* P9: Flink has no such one */
        return tdm__sql_fail(p, g,
                             "CUMULATE is a window table function only: "
                             "FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), "
                             "step, size)) ... GROUP BY window_start, "
                             "window_end");
    }
    return tdm__sql_window_spec(p, g->text, iv, n, g, &a->win);
}

/* Reads the GROUP BY list (P10: a window is required; non-windowed GROUP
 * BY makes a changelog, which is not supported yet). */
static int group_keys(planner *p, agg_plan *a, const sql_node *group)
{
    for (const sql_node *g = group; g != NULL; g = g->next) {
        if (g->kind == SQLK_CALL &&
            (strcmp(g->text, "TUMBLE") == 0 || strcmp(g->text, "HOP") == 0 ||
             strcmp(g->text, "SESSION") == 0 ||
             strcmp(g->text, "CUMULATE") == 0)) {
            if (legacy_window(p, a, g) != 0) {
                return -1;
            }
        } else if (names_col(p, a->in, g, "window_start")) {
            a->has_start = true;
        } else if (names_col(p, a->in, g, "window_end")) {
            a->has_end = true;
        } else if (names_col(p, a->in, g, "window_time")) {
            continue; /* window_end - 1: no group of its own */
        } else if (g->kind != SQLK_ID) {
            return tdm__sql_fail(p, g,
                                 "GROUP BY takes columns (and a "
                                 "window); compute this value in a "
                                 "subquery");
        } else if (a->n_keys >= 16) {
            return tdm__sql_fail(p, g, "at most 16 group columns");
        } else if ((a->keycol[a->n_keys] = tdm__sql_resolve(p, a->in, g)) ==
                   NULL) {
            return -1;
        } else {
            a->key[a->n_keys++] = g;
        }
    }
    if (a->win.type == NULL && a->in->win.type != NULL) {
        a->win = a->in->win;
        if (!a->has_start || !a->has_end) {
            return tdm__sql_fail(p, group,
                                 "GROUP BY over a window table "
                                 "function must list window_start "
                                 "and window_end");
        }
    }
    if (a->win.type == NULL) {
        return tdm__sql_fail(p, group,
                             "GROUP BY without a window makes a changelog "
                             "(updated results), which is not supported yet: "
                             "group over TUMBLE, HOP or SESSION");
    }
    return 0;
}

/* The tidemark aggregate of a SQL one (P11: COUNT(x) skipping nulls is
 * refused, COUNT(*) counts rows). */
static const char *agg_fn(planner *p, const sql_node *e)
{
    static const char *const map[][2] = {
        {"SUM", "sum"}, {"MIN", "min"},           {"MAX", "max"},
        {"AVG", "avg"}, {"FIRST_VALUE", "first"}, {"LAST_VALUE", "last"}};
    if (strcmp(e->text, "COUNT") == 0) {
        if (e->ival) {
            return "count_distinct";
        }
        if (e->a != NULL && e->a->kind != SQLK_STAR) {
            tdm__sql_fail(p, e,
                          "COUNT(x) (rows where x is not null) is not "
                          "supported yet: write COUNT(*), or filter the "
                          "nulls in WHERE and count rows");
            return NULL;
        }
        return "count";
    }
    if (e->ival) {
        tdm__sql_fail(p, e, "DISTINCT applies to COUNT only");
        return NULL;
    }
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strcmp(e->text, map[i][0]) == 0) {
            return map[i][1];
        }
    }
    return NULL;
}

/* The output type of an aggregate over a column of @p in_type: SUM and
 * AVG of a DECIMAL(p, s) are DECIMAL(18, s) (the job's rowagg.c). */
static const char *agg_type(const char *fn, const char *in_type)
{
    int scale = tdm__sql_decimal_scale(in_type);
    if (strcmp(fn, "count") == 0 || strcmp(fn, "count_distinct") == 0) {
        return "int64";
    }
    if (scale >= 0 && (strcmp(fn, "sum") == 0 || strcmp(fn, "avg") == 0)) {
        return tdm__sql_decimal_type(18, scale);
    }
    return strcmp(fn, "avg") == 0 ? "double" : in_type;
}

/* One aggregate item: appended to a->aggs, its column to @p out. */
static int agg_item(planner *p, agg_plan *a, rel *out, const sql_node *it,
                    int i)
{
    const sql_node *e = it->a;
    const char *fn = agg_fn(p, e), *type = "int64";
    char name[32], alias[64], field[64] = "";
    if (fn == NULL) {
        return -1;
    }
    if (e->a != NULL && e->a->kind != SQLK_STAR) {
        if (e->a->next != NULL) {
            return tdm__sql_fail(p, e, "%s takes one argument", e->text);
        }
        if (e->a->kind == SQLK_ID) {
            const pcol *c = tdm__sql_resolve(p, a->in, e->a);
            if (c == NULL) {
                return -1;
            }
            snprintf(field, sizeof field, "%s", c->job);
            type = c->type;
        } else if (tdm__sql_compute_field(p, a->in, e->a, field, sizeof field,
                                          &type)) {
            return -1;
        }
    }
    if (strcmp(fn, "count") != 0 &&
        !((strcmp(fn, "min") == 0 || strcmp(fn, "max") == 0) &&
          (strcmp(type, "int64") == 0 || strcmp(type, "timestamp") == 0))) {
        a->one_phase = "an aggregate that is not COUNT(*), or MIN or MAX "
                       "of an integer";
    }
    snprintf(name, sizeof name, "agg%d", ++a->n_aggs);
    size_t used = strlen(a->aggs);
    snprintf(a->aggs + used, sizeof a->aggs - used, "%s%s(%s) as %s",
             used ? ", " : "", fn, field, name);
    snprintf(alias, sizeof alias, "EXPR$%d", i);
    return tdm__sql_add_col(p, out, NULL, it->text ? it->text : alias, name,
                            agg_type(fn, type), 0);
}

/* Whether two argument lists name the same column and intervals. */
static bool same_args(const sql_node *x, const sql_node *y)
{
    for (; x != NULL && y != NULL; x = x->next, y = y->next) {
        if (x->kind != y->kind ||
            (x->kind == SQLK_ID && strcasecmp(x->text, y->text) != 0) ||
            (x->kind == SQLK_INTERVAL &&
             tdm__sql_interval_ms(x->text, x->unit) !=
                 tdm__sql_interval_ms(y->text, y->unit)) ||
            (x->kind != SQLK_ID && x->kind != SQLK_INTERVAL)) {
            return false;
        }
    }
    return x == NULL && y == NULL;
}

/* A group window's helper, TUMBLE_START(ts, size) and the like (P15: it
 * must repeat the GROUP BY window, as Flink requires). */
static int helper_bound(planner *p, const agg_plan *a, const sql_node *e,
                        const char *suffix, const char **bound)
{
    size_t n = strlen(e->text) - strlen(suffix);
    if (a->legacy == NULL) {
        return tdm__sql_fail(p, e,
                             "%s belongs with GROUP BY %.*s(...); "
                             "over a window table function select "
                             "window_start and window_end",
                             e->text, (int)n, e->text);
    }
    if (strlen(a->legacy->text) != n ||
        strncmp(a->legacy->text, e->text, n) != 0 ||
        !same_args(e->a, a->legacy->a)) {
        return tdm__sql_fail(p, e,
                             "%s must repeat the GROUP BY window "
                             "%s(...) with the same arguments",
                             e->text, a->legacy->text);
    }
    *bound = strcmp(suffix, "_START") == 0 ? "window_start"
             : strcmp(suffix, "_END") == 0 ? "window_end"
                                           : "window_time";
    return 0;
}

/* The window bound an item names: TUMBLE_START(...) and the like, or the
 * TVF's window_start / window_end; *bound NULL if none.  -1 on error. */
static int bound_of(planner *p, const agg_plan *a, const sql_node *e,
                    const char **bound)
{
    static const char *const suffixes[] = {"_START", "_END", "_ROWTIME"};
    *bound = NULL;
    if (e->kind == SQLK_CALL) {
        size_t n = strlen(e->text);
        for (size_t i = 0; i < 3; i++) {
            size_t k = strlen(suffixes[i]);
            if (n > k && strcmp(e->text + n - k, suffixes[i]) == 0) {
                return helper_bound(p, a, e, suffixes[i], bound);
            }
        }
        return 0;
    }
    if (names_col(p, a->in, e, "window_start")) {
        *bound = "window_start";
    } else if (names_col(p, a->in, e, "window_end")) {
        *bound = "window_end";
    } else if (names_col(p, a->in, e, "window_time")) {
        *bound = "window_time";
    }
    return 0;
}

/* One SELECT item of an aggregation (P12: an item is a group column, a
 * window bound or an aggregate). */
static int group_item(planner *p, agg_plan *a, rel *out, const sql_node *it,
                      int i)
{
    const sql_node *e = it->a;
    const char *bound;
    if (e == NULL || e->kind == SQLK_STAR) {
        return tdm__sql_fail(p, it,
                             "SELECT * does not apply to GROUP BY: "
                             "list the columns");
    }
    if (tdm__sql_is_aggregate(e)) {
        return agg_item(p, a, out, it, i);
    }
    if (bound_of(p, a, e, &bound) != 0) {
        return -1;
    }
    if (bound != NULL) { /* window_end = ts + 1, window_time = ts */
        return tdm__sql_add_col(p, out, NULL, it->text ? it->text : bound,
                                bound, "timestamp",
                                strcmp(bound, "window_end") == 0    ? 2
                                : strcmp(bound, "window_time") == 0 ? 1
                                                                    : 0);
    }
    for (int k = 0; k < a->n_keys && e->kind == SQLK_ID; k++) {
        const pcol *c = tdm__sql_resolve(p, a->in, e);
        if (c == a->keycol[k]) {
            return tdm__sql_add_col(p, out, NULL, it->text ? it->text : c->name,
                                    c->job, c->type, 0);
        }
    }
    return tdm__sql_fail(p, e,
                         "this item is neither in GROUP BY nor an "
                         "aggregate (COUNT, SUM, MIN, MAX, AVG, "
                         "FIRST_VALUE, LAST_VALUE)");
}

/* Why the window runs in one phase (docs/runtime.md, Two-phase
 * aggregation; the runtime's plan.c decides, by the same rules), or
 * NULL. */
static const char *one_phase_reason(planner *p, const agg_plan *a)
{
    sql_kv kv[16];
    if (strcmp(a->win.type, "session") == 0) {
        return "a session window";
    }
    if (strcmp(a->win.type, "cumulate") == 0) {
        return "a cumulate window";
    }
    if (a->in->kind != REL_SOURCE) {
        return "an input that is another operator's output";
    }
    if (strcmp(a->in->table->connector, "kafka") == 0) {
        return "a kafka source";
    }
    if (tdm__sql_table_option(a->in->table, "scan.watermark.idle-timeout")) {
        return "a source with an idle timeout";
    }
    int n = tdm__sql_setting_keys(p->cat, SET_SOURCE, kv, 16);
    for (int i = 0; i < n; i++) {
        if (strcmp(kv[i].key, "watermark.idle_timeout") == 0 &&
            strcmp(kv[i].value, "0ms") != 0) {
            return "a source with an idle timeout";
        }
    }
    return a->one_phase;
}

/* EXPLAIN: which of the window operator's optimisations apply. */
static void describe_optimisations(planner *p, const agg_plan *a)
{
    const char *why = one_phase_reason(p, a);
    if (why == NULL) {
        tdm__sql_describe(p, "    local aggregation: two phases (each source "
                             "subtask folds its records per key and slice)\n");
    } else {
        tdm__sql_describe(p, "    local aggregation: one phase (%s)\n", why);
    }
    if (strcmp(a->win.type, "sliding") == 0) {
        int64_t x = a->win.size, y = a->win.slide;
        while (y != 0) {
            int64_t t = x % y;
            x = y;
            y = t;
        }
        tdm__sql_describe(p,
                          "    slicing: each record is kept once, in a "
                          "slice of %lld ms, and each window merges "
                          "%lld slices\n",
                          (long long)x, (long long)(a->win.size / x));
    } else if (strcmp(a->win.type, "session") == 0) {
        tdm__sql_describe(p,
                          "    session mode: windows of a key merge when "
                          "they come within %lld ms\n",
                          (long long)a->win.gap);
    } else if (strcmp(a->win.type, "cumulate") == 0) {
        tdm__sql_describe(p,
                          "    cumulate: windows [start, start + k * %lld "
                          "ms) up to %lld ms, a record in each that ends "
                          "after it (no slicing: the window operator's "
                          "general path)\n",
                          (long long)a->win.step, (long long)a->win.size);
    }
}

/* Writes the window node's keys. */
static int window_node(planner *p, const agg_plan *a, const rel *out,
                       const sql_node *sel)
{
    char keys[1024] = "", v[64];
    const char *node = out->node;
    size_t used = 0;
    for (int k = 0; k < a->n_keys; k++) {
        used += (size_t)snprintf(keys + used, sizeof keys - used, "%s%s",
                                 k ? ", " : "", a->keycol[k]->job);
    }
    for (const sql_node *k = a->win.partition; k != NULL; k = k->next) {
        const pcol *c = tdm__sql_resolve(p, a->in, k);
        bool listed = false;
        if (c == NULL) {
            return -1;
        }
        for (int g = 0; g < a->n_keys; g++) {
            listed = listed || a->keycol[g] == c; /* GROUP BY has it too. */
        }
        if (!listed) {
            used += (size_t)snprintf(keys + used, sizeof keys - used, "%s%s",
                                     used ? ", " : "", c->job);
        }
    }
    tdm__sql_put(p, TDM_NODE_WINDOW, node, "from", a->in->node, sel);
    if (keys[0] != '\0') {
        tdm__sql_put(p, TDM_NODE_WINDOW, node, "key_by", keys, sel);
    }
    tdm__sql_put(p, TDM_NODE_WINDOW, node, "window.type", a->win.type,
                 a->win.at);
    if (a->win.size > 0) {
        snprintf(v, sizeof v, "%lldms", (long long)a->win.size);
        tdm__sql_put(p, TDM_NODE_WINDOW, node, "window.size", v, a->win.at);
    }
    if (a->win.slide > 0) {
        snprintf(v, sizeof v, "%lldms", (long long)a->win.slide);
        tdm__sql_put(p, TDM_NODE_WINDOW, node, "window.slide", v, a->win.at);
    }
    if (a->win.step > 0) {
        snprintf(v, sizeof v, "%lldms", (long long)a->win.step);
        tdm__sql_put(p, TDM_NODE_WINDOW, node, "window.step", v, a->win.at);
    }
    if (a->win.offset > 0) {
        snprintf(v, sizeof v, "%lldms", (long long)a->win.offset);
        tdm__sql_put(p, TDM_NODE_WINDOW, node, "window.offset", v, a->win.at);
    }
    if (a->win.gap > 0) {
        snprintf(v, sizeof v, "%lldms", (long long)a->win.gap);
        tdm__sql_put(p, TDM_NODE_WINDOW, node, "window.gap", v, a->win.at);
    }
    tdm__sql_put(p, TDM_NODE_WINDOW, node, "aggregates",
                 a->aggs[0] ? a->aggs : "count() as agg0", sel);
    if (tdm__sql_operator_keys(p, TDM_NODE_WINDOW, node, sel) != 0) {
        return -1;
    }
    tdm__sql_describe(p, "  %s: window %s, keyed by %s, aggregates %s\n", node,
                      a->win.type, keys[0] ? keys : "(nothing: one group)",
                      a->aggs[0] ? a->aggs : "(none)");
    describe_optimisations(p, a);
    return p->oom ? -1 : 0;
}

/* GROUP BY over a window: a window node reading @p in. */
rel *tdm__sql_plan_group(planner *p, qstate *q, rel *in, const sql_node *sel)
{
    agg_plan a;
    char base[32];
    int i = 0;
    memset(&a, 0, sizeof a);
    a.in = in;
    if (group_keys(p, &a, sel->d) != 0) {
        return NULL;
    }
    rel *out = tdm__sql_new_rel(p, q, REL_WINDOW, sel);
    if (out == NULL) {
        return NULL;
    }
    out->win = a.win; /* for a window join of two aggregations */
    for (const sql_node *it = sel->a; it != NULL; it = it->next, i++) {
        if (group_item(p, &a, out, it, i) != 0) {
            return NULL;
        }
    }
    snprintf(base, sizeof base, "q%d", p->queries);
    tdm__sql_unique_name(p, base, out->node, sizeof out->node);
    if (tdm__sql_declare(p, TDM_NODE_WINDOW, out->node, sel) != 0 ||
        window_node(p, &a, out, sel) != 0) {
        return NULL;
    }
    return out;
}
