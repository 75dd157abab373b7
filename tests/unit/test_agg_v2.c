/* SPDX-License-Identifier: MIT */
/* test_agg_v2.c - version 2 of the user aggregate interface
 * (tdm_aggregate_methods, tidemark.h), through the public API only: what
 * add is told about a record (tdm_agg_ctx: the input, a partial, the
 * row), what the window operator does with an error of add, merge and
 * result, that version-1 aggregates work as before next to it, and which
 * method sets are refused.
 *
 * The aggregate under test sums record values (a double and a count per
 * window), remembers the last context it saw, and fails on request: a
 * record of value 13 makes add fail with TDM_ERR_NOMEM, 14 with
 * TDM_ERR_PARSE; the fail_* fields make merge and result fail.
 */
#include <stdbool.h>

#include "harness.h"

/* ---- The aggregate ---- */

typedef struct sum_acc {
    double sum;
    int64_t n;
} sum_acc;

typedef struct sum_ud {
    int adds, partials, merges, destroys;
    int last_input;
    int last_had_row;
    tdm_err fail_merge, fail_result;
} sum_ud;

static tdm_err s_add(void *ud, void *acc, const tdm_record *rec,
                     const tdm_agg_ctx *ctx)
{
    sum_ud *u = ud;
    sum_acc *a = acc;
    u->adds++;
    u->last_input = ctx->input;
    u->last_had_row = ctx->row != NULL;
    if (ctx->partial) {
        const sum_acc *p = ctx->partial;
        u->partials++;
        a->sum += p->sum;
        a->n += p->n;
        return TDM_OK;
    }
    double v = tdm_record_value(rec);
    if (v == 13)
        return TDM_ERR_NOMEM;
    if (v == 14)
        return TDM_ERR_PARSE;
    a->sum += v;
    a->n++;
    return TDM_OK;
}

static tdm_err s_merge(void *ud, void *into, void *from)
{
    sum_ud *u = ud;
    u->merges++;
    if (u->fail_merge != TDM_OK)
        return u->fail_merge;
    ((sum_acc *)into)->sum += ((sum_acc *)from)->sum;
    ((sum_acc *)into)->n += ((sum_acc *)from)->n;
    return TDM_OK;
}

static tdm_err s_result(void *ud, const void *acc, tdm_result_out *out)
{
    sum_ud *u = ud;
    if (u->fail_result != TDM_OK)
        return u->fail_result;
    tdm_result_set_value(out, ((const sum_acc *)acc)->sum);
    return TDM_OK;
}

static void s_destroy_acc(void *ud, void *acc)
{
    (void)acc;
    ((sum_ud *)ud)->destroys++;
}

static const tdm_aggregate_methods_v2 sum_v2 = {
    .version = 2,
    .acc_size = sizeof(sum_acc),
    .add = s_add,
    .merge = s_merge,
    .result = s_result,
    .destroy_acc = s_destroy_acc,
};

/* ---- Output and operator ---- */

typedef struct sink {
    double value[16];
    char key[16][8];
    int n;
} sink;

static void collect(void *opaque, const tdm_event *ev)
{
    sink *s = opaque;
    if (tdm_event_get_type(ev) != TDM_EVENT_RESULT || s->n >= 16)
        return;
    size_t len;
    const char *k = tdm_event_key(ev, &len);
    memset(s->key[s->n], 0, sizeof s->key[s->n]);
    memcpy(s->key[s->n], k, len < 7 ? len : 7);
    s->value[s->n++] = tdm_event_value(ev);
}

/* A window operator over @p agg: tumbling 10 ms windows, or sessions
 * with a 10 ms gap. */
static tdm_winop *mk(tdm_aggregate *agg, bool sessions, sink *s)
{
    tdm_assigner *asg;
    if (sessions)
        ASSERT_OK(tdm_assigner_new_session(10, &asg, NULL, 0));
    else
        ASSERT_OK(tdm_assigner_new_tumbling(10, 0, &asg, NULL, 0));
    tdm_winop *op;
    ASSERT_OK(tdm_winop_new(asg, NULL, agg, 1, NULL, collect, s, &op, NULL, 0));
    return op;
}

static tdm_aggregate *mk_agg(sum_ud *u)
{
    tdm_aggregate *agg;
    memset(u, 0, sizeof *u);
    ASSERT_OK(tdm_aggregate_new_custom_v2(&sum_v2, u, &agg, NULL, 0));
    return agg;
}

/* Pushes value @p v of key @p key at @p ts with context @p ctx. */
static tdm_err push(tdm_winop *op, const char *key, tdm_time_ms ts, double v,
                    const tdm_agg_ctx *ctx)
{
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    tdm_record_set(r, key, strlen(key), ts, v);
    tdm_err err = tdm_winop_push_ctx(op, 0, r, ctx);
    tdm_record_destroy(r);
    return err;
}

/* ---- Cases ---- */

/* add is told the input (0 without a context), that a record is not a
 * partial, and that it has no row when pushed without one. */
TDM_TEST(v2_context_input)
{
    sink s = {.n = 0};
    sum_ud u;
    tdm_winop *op = mk(mk_agg(&u), false, &s);
    tdm_agg_ctx c3 = {.input = 3};
    ASSERT_OK(push(op, "a", 1, 2, NULL));
    ASSERT_EQ(u.last_input, 0);
    ASSERT_EQ(u.last_had_row, 0);
    ASSERT_OK(push(op, "a", 2, 5, &c3));
    ASSERT_EQ(u.last_input, 3);
    ASSERT_EQ(u.partials, 0);
    /* tdm_winop_push gives the default context again. */
    tdm_record *r;
    ASSERT_OK(tdm_record_new(&r));
    tdm_record_set(r, "a", 1, 3, 1);
    ASSERT_OK(tdm_winop_push(op, 0, r));
    tdm_record_destroy(r);
    ASSERT_EQ(u.last_input, 0);
    ASSERT_OK(tdm_winop_watermark(op, 0, 100));
    ASSERT_EQ(s.n, 1);
    ASSERT_DBL_EQ(s.value[0], 8);
    ASSERT_EQ(u.adds, 3);
    tdm_winop_destroy(op);
    ASSERT_EQ(u.destroys, 1);
}

/* A partial is folded in by add as a whole accumulator: the window's sum
 * is the records' plus the partial's. */
TDM_TEST(v2_partial)
{
    sink s = {.n = 0};
    sum_ud u;
    tdm_winop *op = mk(mk_agg(&u), false, &s);
    sum_acc part = {.sum = 40, .n = 4};
    tdm_agg_ctx pc = {.input = 1, .partial = &part};
    ASSERT_OK(push(op, "k", 5, 1, NULL));
    ASSERT_OK(push(op, "k", 6, 0, &pc));
    ASSERT_EQ(u.partials, 1);
    ASSERT_EQ(u.last_input, 1);
    ASSERT_DBL_EQ(part.sum, 40); /* borrowed, unchanged */
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(s.n, 1);
    ASSERT_DBL_EQ(s.value[0], 41);
    tdm_winop_destroy(op);
}

/* add's error fails the push with that error; a window whose first
 * record failed is released and never fires, one with contents keeps
 * them. */
TDM_TEST(v2_add_error)
{
    sink s = {.n = 0};
    sum_ud u;
    tdm_winop *op = mk(mk_agg(&u), false, &s);
    ASSERT_ERR(push(op, "new", 1, 13, NULL), TDM_ERR_NOMEM);
    ASSERT_EQ(u.destroys, 1); /* the new window's accumulator */
    ASSERT_TRUE(strstr(tdm_winop_errmsg(op), "new") != NULL);
    ASSERT_OK(push(op, "old", 1, 2, NULL));
    ASSERT_ERR(push(op, "old", 2, 14, NULL), TDM_ERR_PARSE);
    ASSERT_TRUE(strstr(tdm_winop_errmsg(op), "old") != NULL);
    ASSERT_OK(push(op, "old", 3, 3, NULL));
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(s.n, 1);
    ASSERT_STR_EQ(s.key[0], "old");
    ASSERT_DBL_EQ(s.value[0], 5);
    tdm_winop_destroy(op);
    ASSERT_EQ(u.destroys, 2);
}

/* merge's error fails the push that merged sessions; both windows are
 * kept and released once. */
TDM_TEST(v2_merge_error)
{
    sink s = {.n = 0};
    sum_ud u;
    tdm_winop *op = mk(mk_agg(&u), true, &s);
    ASSERT_OK(push(op, "k", 0, 1, NULL));
    ASSERT_OK(push(op, "k", 20, 2, NULL));
    u.fail_merge = TDM_ERR_NOMEM;
    ASSERT_ERR(push(op, "k", 10, 4, NULL), TDM_ERR_NOMEM);
    ASSERT_EQ(u.merges, 1);
    tdm_winop_destroy(op);
    ASSERT_EQ(u.destroys, 2);
}

/* result's error skips the firing; TDM_ERR_NOMEM also fails the call
 * that fired it, other errors do not. */
TDM_TEST(v2_result_error)
{
    sink s = {.n = 0};
    sum_ud u;
    tdm_winop *op = mk(mk_agg(&u), false, &s);
    ASSERT_OK(push(op, "a", 1, 1, NULL));
    ASSERT_OK(push(op, "b", 11, 1, NULL));
    ASSERT_OK(push(op, "c", 21, 7, NULL));
    u.fail_result = TDM_ERR_PARSE;
    ASSERT_OK(tdm_winop_watermark(op, 0, 9));
    u.fail_result = TDM_ERR_NOMEM;
    ASSERT_ERR(tdm_winop_watermark(op, 0, 19), TDM_ERR_NOMEM);
    ASSERT_EQ(s.n, 0);
    u.fail_result = TDM_OK;
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(s.n, 1);
    ASSERT_STR_EQ(s.key[0], "c");
    ASSERT_DBL_EQ(s.value[0], 7);
    tdm_winop_destroy(op);
}

/* Version 1 next to version 2: its add takes records with or without a
 * context, never a partial. */
static void v1_add(void *ud, void *acc, const tdm_record *rec)
{
    (void)ud;
    *(double *)acc += tdm_record_value(rec);
}

static void v1_result(void *ud, const void *acc, tdm_result_out *out)
{
    (void)ud;
    tdm_result_set_value(out, *(const double *)acc);
}

TDM_TEST(v1_with_context)
{
    tdm_aggregate_methods m = {
        .version = 1,
        .acc_size = sizeof(double),
        .add = v1_add,
        .result = v1_result,
    };
    tdm_aggregate *agg;
    ASSERT_OK(tdm_aggregate_new_custom(&m, NULL, &agg, NULL, 0));
    sink s = {.n = 0};
    tdm_winop *op = mk(agg, false, &s);
    tdm_agg_ctx c = {.input = 2};
    double part = 5;
    tdm_agg_ctx pc = {.partial = &part};
    ASSERT_OK(push(op, "k", 1, 2, &c));
    ASSERT_ERR(push(op, "k", 2, 3, &pc), TDM_ERR_INVAL);
    ASSERT_OK(push(op, "k", 3, 4, NULL));
    ASSERT_OK(tdm_winop_end(op));
    ASSERT_EQ(s.n, 1);
    ASSERT_DBL_EQ(s.value[0], 6);
    tdm_winop_destroy(op);
}

/* Method sets of an unknown version or missing a member are refused,
 * naming it. */
TDM_TEST(v2_bad_methods)
{
    sum_ud u;
    tdm_aggregate *agg;
    char buf[128];
    tdm_aggregate_methods_v2 m = sum_v2;
    m.version = 3;
    ASSERT_ERR(tdm_aggregate_new_custom_v2(&m, &u, &agg, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "version") != NULL);
    m = sum_v2;
    m.add = NULL;
    ASSERT_ERR(tdm_aggregate_new_custom_v2(&m, &u, &agg, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "add") != NULL);
    m = sum_v2;
    m.result = NULL;
    ASSERT_ERR(tdm_aggregate_new_custom_v2(&m, &u, &agg, buf, sizeof buf),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(buf, "result") != NULL);
    /* Without merge it cannot serve sessions. */
    m = sum_v2;
    m.merge = NULL;
    ASSERT_OK(tdm_aggregate_new_custom_v2(&m, &u, &agg, NULL, 0));
    tdm_assigner *asg;
    ASSERT_OK(tdm_assigner_new_session(10, &asg, NULL, 0));
    tdm_winop *op;
    ASSERT_ERR(tdm_winop_new(asg, NULL, agg, 1, NULL, collect, NULL, &op, buf,
                             sizeof buf),
               TDM_ERR_INVAL);
}
