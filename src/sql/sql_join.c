/* SPDX-License-Identifier: MIT */
/* sql_join.c - inner joins: a window join or an interval join node.
 *
 * The condition (ON, plus the WHERE of `FROM a, b WHERE ...`, the same
 * thing for an inner join) is cut at its top-level ANDs, and each part
 * is read as one of:
 *   - a.window_start = b.window_start, a.window_end = b.window_end: the
 *     two sides are windowed alike and the join is a window join (J1);
 *   - a.x = b.y over other columns: a key of the join;
 *   - a comparison or BETWEEN between the two sides' event-time columns,
 *     each plus or minus an INTERVAL: a bound of an interval join (J2).
 *     The engine bounds right.ts within [left.ts + lower, left.ts +
 *     upper]; a column relates to its row's timestamp by its rowtime
 *     offset (a window's rows are stamped window_end - 1, so its
 *     window_end is ts + 1), and every bound is rewritten to that form;
 *   - anything else: the join's `filter`, over its output columns
 *     (left.<field>, right.<field>).
 * A join with neither window bounds nor both time bounds is a regular
 * join, which keeps state forever and makes a changelog: refused until
 * changelog queries exist (J3), as is a join without an equality (J4).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sql/sql_plan.h"

typedef struct jplan {
    rel *l, *r, *out;
    int n_left; /* out's first n_left columns are the left's */
    char lkeys[1024], rkeys[1024];
    int n_keys;
    bool win_start, win_end;
    bool has_lower, has_upper;
    int64_t lower, upper;
    bool lower_inc, upper_inc;
    char filter[4096];
    int *rt; /* per output column: its rowtime on its side (J5) */
} jplan;

/* A column's rowtime on its side, before the join. */
static int side_rt(const jplan *j, const pcol *c)
{
    return j->rt[c - j->out->cols];
}

/* The output column of @p e (an ID) and its side: 0 left, 1 right, -1
 * not a column of the join. */
static int side_of(planner *p, const jplan *j, const sql_node *e,
                   const pcol **c)
{
    *c = NULL;
    if (e == NULL || e->kind != SQLK_ID) {
        return -1;
    }
    if ((*c = tdm__sql_resolve(p, j->out, e)) == NULL) {
        return -2;
    }
    return (int)(*c - j->out->cols) < j->n_left ? 0 : 1;
}

/* A time term: column +/- INTERVAL; its side, column and offset. */
static int time_term(planner *p, const jplan *j, const sql_node *e,
                     const pcol **c, int64_t *off)
{
    *off = 0;
    if (e != NULL && e->kind == SQLK_BINARY &&
        (strcmp(e->text, "+") == 0 || strcmp(e->text, "-") == 0) &&
        e->b != NULL && e->b->kind == SQLK_INTERVAL) {
        int64_t ms = tdm__sql_interval_ms(e->b->text, e->b->unit);
        if (ms < 0) {
            return -1;
        }
        *off = e->text[0] == '+' ? ms : -ms;
        e = e->a;
    }
    int side = side_of(p, j, e, c);
    if (side < 0 || !side_rt(j, *c)) {
        p->msg[0] = '\0';
        return -1;
    }
    *off += side_rt(j, *c) - 1;
    return side;
}

/* Records right.ts OP left.ts + d as a bound (the tighter one wins). */
static void add_bound(jplan *j, const char *op, int64_t d)
{
    bool inc = op[1] == '=' || op[0] == '=';
    if (op[0] == '>' || op[0] == '=') {
        if (!j->has_lower || d > j->lower || (d == j->lower && !inc)) {
            j->lower = d;
            j->lower_inc = inc;
        }
        j->has_lower = true;
    }
    if (op[0] == '<' || op[0] == '=') {
        if (!j->has_upper || d < j->upper || (d == j->upper && !inc)) {
            j->upper = d;
            j->upper_inc = inc;
        }
        j->has_upper = true;
    }
}

/* The mirror of a comparison (a < b is b > a). */
static const char *flip(const char *op)
{
    static const char *const pairs[][2] = {
        {"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}, {"=", "="}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (strcmp(op, pairs[i][0]) == 0) {
            return pairs[i][1];
        }
    }
    return NULL;
}

/* a OP b between the two sides' time columns: a bound (J2).  Returns 1
 * when it was one, 0 when it is not a time comparison. */
static int time_bound(planner *p, jplan *j, const char *op, const sql_node *a,
                      const sql_node *b)
{
    const pcol *ca, *cb;
    int64_t oa, ob;
    int sa = time_term(p, j, a, &ca, &oa), sb = time_term(p, j, b, &cb, &ob);
    if (flip(op) == NULL || sa < 0 || sb < 0 || sa == sb) {
        return 0;
    }
    if (sa == 1) { /* right.ts + oa OP left.ts + ob */
        add_bound(j, op, ob - oa);
    } else { /* left.ts + oa OP right.ts + ob: right.ts FLIP left.ts + .. */
        add_bound(j, flip(op), oa - ob);
    }
    return 1;
}

/* Appends a key pair left = right. */
static int add_key(planner *p, jplan *j, const pcol *lc, const pcol *rc,
                   const sql_node *at)
{
    size_t ul = strlen(j->lkeys), ur = strlen(j->rkeys);
    const char *lj = lc->job + 5, *rj = rc->job + 6; /* drop left./right. */
    if (strncmp(lc->job, "left.", 5) != 0 || strncmp(rc->job, "right.", 6)) {
        return tdm__sql_fail(p, at, "join keys must be columns of the sides");
    }
    snprintf(j->lkeys + ul, sizeof j->lkeys - ul, "%s%s", ul ? ", " : "", lj);
    snprintf(j->rkeys + ur, sizeof j->rkeys - ur, "%s%s", ur ? ", " : "", rj);
    j->n_keys++;
    return 0;
}

/* An equality: a window bound pair, a key or a time bound.  Returns 1
 * when it was taken, 0 when it belongs to the filter, -1 on error. */
static int equality(planner *p, jplan *j, const sql_node *e)
{
    const pcol *a, *b;
    int sa = side_of(p, j, e->a, &a), sb = side_of(p, j, e->b, &b);
    if (sa == -2 || sb == -2) {
        return -1;
    }
    if (sa < 0 || sb < 0 || sa == sb) {
        return 0;
    }
    const char *ja = strchr(a->job, '.') ? strchr(a->job, '.') + 1 : a->job;
    const char *jb = strchr(b->job, '.') ? strchr(b->job, '.') + 1 : b->job;
    if (strcmp(ja, jb) == 0 && strcmp(ja, "window_start") == 0) {
        j->win_start = true; /* J1 */
        return 1;
    }
    if (strcmp(ja, jb) == 0 && strcmp(ja, "window_end") == 0) {
        j->win_end = true;
        return 1;
    }
    if (side_rt(j, a) && side_rt(j, b)) {
        return time_bound(p, j, "=", e->a, e->b);
    }
    return add_key(p, j, sa == 0 ? a : b, sa == 0 ? b : a, e) == 0 ? 1 : -1;
}

/* Appends a part of the condition to the filter. */
static int to_filter(planner *p, jplan *j, const sql_node *e)
{
    char text[2048];
    size_t used = strlen(j->filter);
    if (tdm__sql_expr_text(p, j->out, e, text, sizeof text) != 0) {
        return -1;
    }
    if (used + strlen(text) + 8 >= sizeof j->filter) {
        return tdm__sql_fail(p, e, "join condition too long");
    }
    snprintf(j->filter + used, sizeof j->filter - used, "%s%s",
             used ? " AND " : "", text);
    return 0;
}

/* One part of the condition. */
static int conjunct(planner *p, jplan *j, const sql_node *e)
{
    int rc = 0;
    if (e->kind == SQLK_BINARY && strcmp(e->text, "AND") == 0) {
        return conjunct(p, j, e->a) != 0 || conjunct(p, j, e->b) != 0 ? -1 : 0;
    }
    if (e->kind == SQLK_BINARY && strcmp(e->text, "=") == 0) {
        rc = equality(p, j, e);
    } else if (e->kind == SQLK_BINARY && flip(e->text) != NULL) {
        rc = time_bound(p, j, e->text, e->a, e->b);
    } else if (e->kind == SQLK_BETWEEN && !e->ival) {
        const pcol *c;
        int64_t off;
        if (time_term(p, j, e->a, &c, &off) >= 0 &&
            time_bound(p, j, ">=", e->a, e->b) &&
            time_bound(p, j, "<=", e->a, e->c)) {
            rc = 1;
        }
    }
    return rc < 0 ? -1 : rc == 1 ? 0 : to_filter(p, j, e);
}

/* The output columns: left.<job> and right.<job> (J6: never a windowed
 * subquery's window_time); a window TVF's own
 * window_start/window_end/window_time are the join row's (J1).  J5: a
 * pair is stamped with the later of its two times (a window join's with
 * its window_end - 1), so the sides' time columns are plain values after
 * the join: only a window join's own window_end and window_time stay
 * time columns. */
static int join_cols(planner *p, jplan *j, const sql_node *at)
{
    const rel *sides[2] = {j->l, j->r};
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < sides[s]->n_cols; i++) {
            const pcol *c = &sides[s]->cols[i];
            char job[200];
            if (sides[s]->kind == REL_WINDOW &&
                strcmp(c->job, "window_time") == 0) {
                /* J6: a window's output stream has no window_time (a
                 * sink's select member): its pairs stay as they were. */
                return tdm__sql_fail(p, at,
                                     "a join cannot read the window_time "
                                     "of a windowed subquery yet: select "
                                     "window_end there (window_time is "
                                     "window_end - 1 ms)");
            }
            bool own = sides[s]->kind == REL_SOURCE && sides[s]->win.type &&
                       (strcmp(c->job, "window_start") == 0 ||
                        strcmp(c->job, "window_end") == 0 ||
                        strcmp(c->job, "window_time") == 0);
            snprintf(job, sizeof job, "%s%s",
                     own ? ""
                     : s ? "right."
                         : "left.",
                     c->job);
            if (tdm__sql_add_col(p, j->out, c->qual, c->name, job, c->type,
                                 0) != 0) {
                return -1;
            }
            int *rt = realloc(j->rt, (size_t)j->out->n_cols * sizeof *rt);
            if (rt == NULL) {
                p->oom = 1;
                return -1;
            }
            j->rt = rt;
            rt[j->out->n_cols - 1] = c->rowtime;
            tdm__sql_inherit(j->out, c);
            if (own && strcmp(c->job, "window_end") == 0) {
                j->out->cols[j->out->n_cols - 1].rowtime = 2; /* J5 */
            } else if (own && strcmp(c->job, "window_time") == 0) {
                j->out->cols[j->out->n_cols - 1].rowtime = 1;
            }
        }
        if (s == 0) {
            j->n_left = j->out->n_cols;
        }
    }
    return 0;
}

/* Whether both sides are windowed alike, for a window join (J1). */
static int same_windows(planner *p, const jplan *j, const sql_node *at)
{
    const pwin *a = &j->l->win, *b = &j->r->win;
    if (a->type == NULL || b->type == NULL || strcmp(a->type, b->type) != 0 ||
        a->size != b->size || a->slide != b->slide || a->step != b->step) {
        return tdm__sql_fail(p, at,
                             "a window join needs both sides windowed "
                             "alike (the same TUMBLE or HOP)");
    }
    if (strcmp(a->type, "session") == 0 || strcmp(a->type, "cumulate") == 0 ||
        (strcmp(a->type, "sliding") == 0 &&
         (j->l->kind != REL_SOURCE || j->r->kind != REL_SOURCE))) {
        return tdm__sql_fail(p, at,
                             "a window join of %s windows is not "
                             "supported",
                             a->type);
    }
    return 0;
}

/* Writes the join node's keys. */
static int join_node(planner *p, const jplan *j, const char *node,
                     const sql_node *at)
{
    char v[64];
    bool window = j->win_start && j->win_end;
    tdm__sql_put(p, TDM_NODE_JOIN, node, "type", window ? "window" : "interval",
                 at);
    tdm__sql_put(p, TDM_NODE_JOIN, node, "left", j->l->node, at);
    tdm__sql_put(p, TDM_NODE_JOIN, node, "right", j->r->node, at);
    tdm__sql_put(p, TDM_NODE_JOIN, node, "left_key", j->lkeys, at);
    tdm__sql_put(p, TDM_NODE_JOIN, node, "right_key", j->rkeys, at);
    if (window) {
        tdm__sql_put(p, TDM_NODE_JOIN, node, "window.type", j->l->win.type, at);
        snprintf(v, sizeof v, "%lldms", (long long)j->l->win.size);
        tdm__sql_put(p, TDM_NODE_JOIN, node, "window.size", v, at);
        if (j->l->win.slide > 0) {
            snprintf(v, sizeof v, "%lldms", (long long)j->l->win.slide);
            tdm__sql_put(p, TDM_NODE_JOIN, node, "window.slide", v, at);
        }
    } else {
        snprintf(v, sizeof v, "%lldms", (long long)j->lower);
        tdm__sql_put(p, TDM_NODE_JOIN, node, "lower", v, at);
        snprintf(v, sizeof v, "%lldms", (long long)j->upper);
        tdm__sql_put(p, TDM_NODE_JOIN, node, "upper", v, at);
        tdm__sql_put(p, TDM_NODE_JOIN, node, "lower_inclusive",
                     j->lower_inc ? "true" : "false", at);
        tdm__sql_put(p, TDM_NODE_JOIN, node, "upper_inclusive",
                     j->upper_inc ? "true" : "false", at);
    }
    if (j->filter[0] != '\0') {
        tdm__sql_put(p, TDM_NODE_JOIN, node, "filter", j->filter, at);
    }
    if (tdm__sql_operator_keys(p, TDM_NODE_JOIN, node, at) != 0) {
        return -1;
    }
    tdm__sql_describe(p, "  %s: %s join of %s and %s on %s = %s", node,
                      window ? "window" : "interval", j->l->node, j->r->node,
                      j->lkeys, j->rkeys);
    if (!window) {
        tdm__sql_describe(p, ", right.ts in %s%lld, %lld%s ms of left.ts",
                          j->lower_inc ? "[" : "(", (long long)j->lower,
                          (long long)j->upper, j->upper_inc ? "]" : ")");
    }
    tdm__sql_describe(p, "%s%s\n", j->filter[0] ? ", filter " : "", j->filter);
    return p->oom ? -1 : 0;
}

static rel *plan_join(planner *p, qstate *q, const sql_node *join,
                      const sql_node *where, jplan *jp);

/* Plans a join of planned sides (see sql_plan.h). */
rel *tdm__sql_join(planner *p, qstate *q, const sql_node *join, rel *l, rel *r,
                   const sql_node *where)
{
    jplan j;
    memset(&j, 0, sizeof j);
    j.l = l;
    j.r = r;
    rel *out = plan_join(p, q, join, where, &j);
    free(j.rt);
    return out;
}

/* The join of tdm__sql_join, its plan in @p jp. */
static rel *plan_join(planner *p, qstate *q, const sql_node *join,
                      const sql_node *where, jplan *jp)
{
    char base[32];
    if ((jp->out = tdm__sql_new_rel(p, q, REL_JOIN, join)) == NULL ||
        join_cols(p, jp, join) != 0 ||
        (join->c != NULL && conjunct(p, jp, join->c) != 0) ||
        (where != NULL && conjunct(p, jp, where) != 0)) {
        return NULL;
    }
    bool window = jp->win_start && jp->win_end;
    if (window && same_windows(p, jp, join) != 0) {
        return NULL;
    }
    if (!window && !(jp->has_lower && jp->has_upper)) { /* J3 */
        tdm__sql_fail(p, join,
                      "a join needs equal window_start and "
                      "window_end on both sides (a window join) or "
                      "a lower and an upper bound between their "
                      "event-time columns (an interval join, e.g. "
                      "a.ts BETWEEN b.ts - INTERVAL '15' MINUTE AND "
                      "b.ts); a regular join makes a changelog, "
                      "which is not supported yet");
        return NULL;
    }
    if (!window && ((jp->l->kind == REL_SOURCE && jp->l->win.type) ||
                    (jp->r->kind == REL_SOURCE && jp->r->win.type))) {
        tdm__sql_fail(p, join,
                      "a window table function's rows are joined "
                      "by a window join (equal window_start and "
                      "window_end) or aggregated; here they would "
                      "lose their windows");
        return NULL;
    }
    if (jp->n_keys == 0) { /* J4 */
        tdm__sql_fail(p, join,
                      "a join needs at least one equality between "
                      "columns of the two sides (its key)");
        return NULL;
    }
    snprintf(base, sizeof base, "q%d", p->queries);
    tdm__sql_unique_name(p, base, jp->out->node, sizeof jp->out->node);
    if (tdm__sql_declare(p, TDM_NODE_JOIN, jp->out->node, join) != 0 ||
        join_node(p, jp, jp->out->node, join) != 0) {
        return NULL;
    }
    return jp->out;
}
