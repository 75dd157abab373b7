/* SPDX-License-Identifier: MIT */
/* test_decimal.c - exact decimal(p,s) values (src/core/decimal.c) and
 * their aggregates (src/runtime/rowagg.c): text read digit by digit with
 * half-away-from-zero rounding beyond the scale, range and syntax
 * refusals, printing with exactly s digits, doubles through their
 * shortest text; a decimal sum that leaves int64 is null rather than
 * saturated, stays so through a merge, and an accumulator round-trips a
 * checkpoint.  Expected values are worked out by hand in the comments.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/decimal.h"
#include "harness.h"
#include "runtime/rt.h"
#include "state/ckpt_codec.h"
#include "window/win.h"

/* Reads @p txt as decimal(p, s); the error, the value in *v. */
static tdm_err rd(const char *txt, int p, int s, int64_t *v)
{
    *v = 12345; /* untouched on error */
    return tdm__dec_parse(txt, strlen(txt), p, s, v);
}

TDM_TEST(parse_exact_and_rounded)
{
    int64_t v;
    ASSERT_OK(rd("12.30", 10, 2, &v));
    ASSERT_EQ(v, 1230);
    ASSERT_OK(rd("12.3", 10, 2, &v));
    ASSERT_EQ(v, 1230);
    ASSERT_OK(rd("7", 10, 2, &v)); /* no fraction */
    ASSERT_EQ(v, 700);
    ASSERT_OK(rd("+7.", 10, 2, &v));
    ASSERT_EQ(v, 700);
    ASSERT_OK(rd(".5", 10, 2, &v));
    ASSERT_EQ(v, 50);
    ASSERT_OK(rd("-0.05", 10, 2, &v));
    ASSERT_EQ(v, -5);
    /* Beyond the scale: half away from zero on the first dropped digit. */
    ASSERT_OK(rd("1.005", 10, 2, &v));
    ASSERT_EQ(v, 101);
    ASSERT_OK(rd("1.00499999", 10, 2, &v));
    ASSERT_EQ(v, 100);
    ASSERT_OK(rd("-2.005", 10, 2, &v));
    ASSERT_EQ(v, -201);
    ASSERT_OK(rd("0.995", 10, 2, &v)); /* carries into the units */
    ASSERT_EQ(v, 100);
    ASSERT_OK(rd("0.000000000000000000000000001", 10, 2, &v));
    ASSERT_EQ(v, 0);
    ASSERT_OK(rd("0.1", 1, 1, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(rd("12", 2, 0, &v));
    ASSERT_EQ(v, 12);
}

TDM_TEST(parse_refuses_range_and_syntax)
{
    int64_t v;
    /* decimal(10,2): at most 8 integer digits. */
    ASSERT_OK(rd("99999999.99", 10, 2, &v));
    ASSERT_EQ(v, 9999999999);
    ASSERT_OK(rd("-99999999.99", 10, 2, &v));
    ASSERT_EQ(v, -9999999999);
    ASSERT_ERR(rd("100000000", 10, 2, &v), TDM_ERR_RANGE);
    ASSERT_ERR(rd("99999999.995", 10, 2, &v), TDM_ERR_RANGE); /* rounds up */
    ASSERT_ERR(rd("-123456789.5", 10, 2, &v), TDM_ERR_RANGE);
    ASSERT_OK(rd("999999999999999999", 18, 0, &v));
    ASSERT_EQ(v, 999999999999999999);
    ASSERT_ERR(rd("1000000000000000000", 18, 0, &v), TDM_ERR_RANGE);
    ASSERT_ERR(rd("99999999999999999999999", 18, 0, &v), TDM_ERR_RANGE);
    ASSERT_ERR(rd("1", 18, 18, &v), TDM_ERR_RANGE);
    const char *bad[] = {"",   "-",   "+",   ".",    "1e3", "1.2.3", " 1",
                         "1 ", "abc", "--1", "0x10", "1,5", "NaN"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ASSERT_ERR(rd(bad[k], 10, 2, &v), TDM_ERR_PARSE);
        ASSERT_EQ(v, 12345);
    }
}

static const char *fmt(int64_t v, int s)
{
    static char buf[32];
    size_t n = tdm__dec_format(buf, sizeof buf, v, s);
    ASSERT_EQ(n, strlen(buf));
    return buf;
}

TDM_TEST(format_prints_exactly_the_scale)
{
    ASSERT_STR_EQ(fmt(165820, 2), "1658.20");
    ASSERT_STR_EQ(fmt(-5, 2), "-0.05");
    ASSERT_STR_EQ(fmt(0, 2), "0.00");
    ASSERT_STR_EQ(fmt(7, 3), "0.007");
    ASSERT_STR_EQ(fmt(42, 0), "42");
    ASSERT_STR_EQ(fmt(0, 0), "0");
    ASSERT_STR_EQ(fmt(-42, 0), "-42");
    ASSERT_STR_EQ(fmt(INT64_MAX, 2), "92233720368547758.07");
    ASSERT_STR_EQ(fmt(INT64_MIN, 2), "-92233720368547758.08");
    ASSERT_STR_EQ(fmt(1, 18), "0.000000000000000001");
}

TDM_TEST(doubles_go_through_their_shortest_text)
{
    int64_t v;
    ASSERT_TRUE(tdm__dec_from_double(0.1, 10, 2, &v));
    ASSERT_EQ(v, 10);
    /* 2.675 is 2.67499999... in binary; its text rounds to 2.68. */
    ASSERT_TRUE(tdm__dec_from_double(2.675, 10, 2, &v));
    ASSERT_EQ(v, 268);
    ASSERT_TRUE(tdm__dec_from_double(-2.005, 10, 2, &v));
    ASSERT_EQ(v, -201);
    ASSERT_TRUE(tdm__dec_from_double(1e-7, 10, 2, &v)); /* exponent form */
    ASSERT_EQ(v, 0);
    ASSERT_TRUE(!tdm__dec_from_double(1e20, 18, 2, &v));
    ASSERT_TRUE(!tdm__dec_from_double(NAN, 18, 2, &v));
    ASSERT_TRUE(!tdm__dec_from_double(INFINITY, 18, 2, &v));
    ASSERT_TRUE(!tdm__dec_from_double(1e8, 10, 2, &v));
    ASSERT_DBL_EQ(tdm__dec_to_double(165820, 2), 1658.2);
    ASSERT_TRUE(tdm__dec_rescale(1234, 2, 1, 10, &v)); /* 12.34 -> 12.3 */
    ASSERT_EQ(v, 123);
    ASSERT_TRUE(tdm__dec_rescale(-1235, 2, 1, 10, &v)); /* -12.35 -> -12.4 */
    ASSERT_EQ(v, -124);
    ASSERT_TRUE(tdm__dec_rescale(7, 0, 2, 10, &v));
    ASSERT_EQ(v, 700);
    ASSERT_TRUE(!tdm__dec_rescale(INT64_MAX / 10, 0, 2, 18, &v));
}

/* ---- Aggregates ---- */

#define DEC TDM_TYPE_DECIMAL_OF(10, 2)
enum { A_SUM, A_AVG, A_MIN, A_MAX, A_LAST, N_AGG };
static const tdm__aggfn afns[N_AGG] = {TDM__FN_SUM, TDM__FN_AVG, TDM__FN_MIN,
                                       TDM__FN_MAX, TDM__FN_LAST};
static const tdm_type atypes[N_AGG] = {DEC, DEC, DEC, DEC, DEC};

typedef struct fixture {
    tdm__agg_spec specs[N_AGG];
    int idx[N_AGG];
    tdm__rowagg *ra;
    tdm_aggregate *agg;
} fixture;

static void fx_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    for (int k = 0; k < N_AGG; k++) {
        f->specs[k].fn = afns[k];
        f->idx[k] = 0; /* every aggregate reads field 0 */
    }
    int *idx = f->idx;
    ASSERT_OK(tdm__rowagg_new(f->specs, N_AGG, atypes, 1, &idx, &f->ra));
    ASSERT_OK(tdm__rowagg_aggregate(f->ra, &f->agg));
}

static void *new_acc(const fixture *f)
{
    void *acc = calloc(1, tdm__rowagg_acc_size(f->ra));
    ASSERT_TRUE(acc != NULL);
    return acc;
}

static void add(fixture *f, void *acc, int64_t scaled)
{
    tdm__val v = {.u.i = scaled};
    tdm__row row = {.ts = 0, .v = &v};
    ASSERT_OK(tdm__rowagg_add(f->ra, acc, 0, &row));
}

static void results(fixture *f, const void *acc, tdm__val *out)
{
    tdm_result_out r;
    memset(&r, 0, sizeof r);
    ASSERT_OK(f->agg->m2.result(f->agg->ud, acc, &r));
    tdm_type rt[N_AGG];
    for (int k = 0; k < N_AGG; k++)
        rt[k] = tdm__rowagg_type(afns[k], atypes[k]);
    ASSERT_TRUE(tdm__rowagg_unpack(r.bytes, r.len, N_AGG, rt, out));
    tdm__free(r.bytes);
}

/* Saves @p acc and loads it into a new accumulator. */
static void *round_trip(fixture *f, const void *acc)
{
    tdm__enc e;
    uint8_t *p = NULL;
    size_t len;
    tdm__enc_init(&e);
    ASSERT_OK(f->agg->acc_save(f->agg->ud, acc, &e));
    ASSERT_OK(tdm__enc_finish(&e, &p, &len));
    void *back = new_acc(f);
    tdm__dec d;
    tdm__dec_init(&d, p, len);
    ASSERT_OK(f->agg->acc_load(f->agg->ud, back, &d));
    ASSERT_OK(tdm__dec_done(&d));
    tdm__free(p);
    return back;
}

static void fx_free(fixture *f, void *a, void *b)
{
    f->agg->m.destroy_acc(f->agg->ud, a);
    f->agg->m.destroy_acc(f->agg->ud, b);
    free(a);
    free(b);
    tdm_aggregate_destroy(f->agg);
    tdm__rowagg_destroy(f->ra);
}

TDM_TEST(decimal_aggregates_are_exact_and_round_trip)
{
    fixture f;
    fx_init(&f);
    ASSERT_EQ(tdm__rowagg_type(TDM__FN_SUM, DEC), TDM_TYPE_DECIMAL_OF(18, 2));
    ASSERT_EQ(tdm__rowagg_type(TDM__FN_AVG, DEC), TDM_TYPE_DECIMAL_OF(18, 2));
    ASSERT_EQ(tdm__rowagg_type(TDM__FN_MAX, DEC), DEC);
    void *acc = new_acc(&f);
    add(&f, acc, 10);     /* 0.10 */
    add(&f, acc, 165780); /* 1657.80 */
    add(&f, acc, 30);     /* 0.30 */
    tdm__val v[N_AGG];
    results(&f, acc, v);
    ASSERT_EQ(v[A_SUM].u.i, 165820); /* 1658.20, not 1658.1999999999998 */
    ASSERT_EQ(v[A_AVG].u.i, 55273);  /* 552.7333 -> 552.73 */
    ASSERT_EQ(v[A_MIN].u.i, 10);
    ASSERT_EQ(v[A_MAX].u.i, 165780);
    ASSERT_EQ(v[A_LAST].u.i, 30);
    void *back = round_trip(&f, acc);
    tdm__val w[N_AGG];
    results(&f, back, w);
    for (int k = 0; k < N_AGG; k++) {
        ASSERT_EQ(w[k].null, 0);
        ASSERT_EQ(w[k].u.i, v[k].u.i);
    }
    /* avg of -0.01, -0.02: -0.015 rounds away from zero to -0.02. */
    void *neg = new_acc(&f);
    add(&f, neg, -1);
    add(&f, neg, -2);
    results(&f, neg, v);
    ASSERT_EQ(v[A_AVG].u.i, -2);
    f.agg->m.destroy_acc(f.agg->ud, neg);
    free(neg);
    fx_free(&f, acc, back);
}

TDM_TEST(decimal_sum_overflow_is_null_through_merge_and_checkpoint)
{
    fixture f;
    fx_init(&f);
    void *acc = new_acc(&f);
    add(&f, acc, INT64_MAX - 5);
    add(&f, acc, 10); /* beyond int64: the sum is lost for good */
    add(&f, acc, -10);
    tdm__val v[N_AGG];
    results(&f, acc, v);
    ASSERT_TRUE(v[A_SUM].null);
    ASSERT_TRUE(v[A_AVG].null);
    ASSERT_TRUE(!v[A_MAX].null);
    ASSERT_EQ(v[A_MAX].u.i, INT64_MAX - 5);
    void *back = round_trip(&f, acc);
    results(&f, back, v);
    ASSERT_TRUE(v[A_SUM].null);
    /* Merged into a healthy accumulator (session windows), still null. */
    void *other = new_acc(&f);
    add(&f, other, 100);
    ASSERT_OK(f.agg->m2.merge(f.agg->ud, other, back));
    results(&f, other, v);
    ASSERT_TRUE(v[A_SUM].null);
    ASSERT_TRUE(v[A_AVG].null);
    f.agg->m.destroy_acc(f.agg->ud, other);
    free(other);
    fx_free(&f, acc, back);
}
