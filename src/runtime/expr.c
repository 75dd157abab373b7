/* SPDX-License-Identifier: MIT */
/* expr.c - the expression language of a source's `filter` and
 * `compute.<field>` keys: compiling a text (tdm__expr_compile) and the
 * two keys built on it.  The work is done by the files below it, one
 * idea each (expr_int.h draws how they call each other): a lexer
 * (expr_lex.c), a recursive-descent parser that checks types and emits
 * a postfix program as it goes (expr_parse.c for the operators,
 * expr_parse.c for the predicates, CASE and function calls, expr_emit.c
 * for the program), the evaluator (expr_eval.c) and the function bodies
 * (expr_fn.c, expr_time.c).
 *
 * Precedence, lowest first: OR, AND, NOT, comparisons, IS [NOT] NULL,
 * [NOT] BETWEEN / IN / LIKE (not chained), + -, * / % ||, unary -,
 * operands (including CASE and function calls).  Nulls follow SQL; integer
 * arithmetic that would overflow or divide by zero gives null instead of
 * undefined behaviour; a double result that is not finite is null too.
 * Only CASE at the start of an operand is a reserved word beyond AND,
 * OR, NOT, IS, NULL, TRUE and FALSE: the other keywords are recognised
 * only where a field cannot stand (expr_parse.c).
 *
 * Nothing is allocated after compilation: the evaluator keeps its stack
 * on the C stack, sized by the compiler's bound, and strings that
 * functions build go to the caller's scratch (expr_eval.c).
 * docs/job-format.md ("Expressions") is the user's description.
 */
#include <stdio.h>
#include <string.h>

#include "core/decimal.h"
#include "runtime/expr.h"
#include "runtime/expr_int.h"
#include "runtime/rt.h"

/* ---- Compiling a text ---- */

/* Compiles @p text; see expr.h. */
tdm_err tdm__expr_compile(const char *text, const tdm__schema *schema,
                          tdm__expr **out, char *errbuf, size_t errbuf_size)
{
    static const tdm__schema empty;
    if (!out)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    *out = NULL;
    if (!text)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "the expression must not be NULL");
    parser p = {.src = text,
                .schema = schema ? schema : &empty,
                .errbuf = errbuf,
                .errn = errbuf_size};
    p.e = tdm__calloc(1, sizeof *p.e);
    if (!p.e)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
    tdm__expr_type ty = tdm__expr_parse(&p);
    if (p.err != TDM_OK)
        goto fail;
    p.e->type = ty;
    *out = p.e;
    return TDM_OK;

fail:
    tdm__expr_destroy(p.e);
    return p.err;
}

/* ---- A source's filter and computed fields ---- */

/* Compiles one key's expression, prefixing errors with the key. */
static tdm_err compile_key(const char *key, const char *text,
                           const tdm__schema *s, tdm__expr **out, char *errbuf,
                           size_t errbuf_size)
{
    char msg[400];
    msg[0] = 0;
    tdm_err err = tdm__expr_compile(text, s, out, msg, sizeof msg);
    if (err != TDM_OK)
        return tdm__errf(errbuf, errbuf_size, err, "%s: %s", key, msg);
    return TDM_OK;
}

/* One compute.<field>: the field must exist, be numeric, not carry the
 * event time or the partition, and fit the expression's type; see
 * expr.h. */
tdm_err tdm__expr_compile_compute(const tdm__schema *s, const char *field,
                                  const char *text, const char *ts_field,
                                  const char *partition_field,
                                  tdm__expr_compute *out, char *errbuf,
                                  size_t errbuf_size)
{
    char key[300];
    snprintf(key, sizeof key, "compute.%s", field);
    int idx = tdm__schema_find(s, field);
    if (idx < 0) {
        const char *near = tdm__expr_closest(s, field);
        if (near)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "%s: field \"%s\" is not in the schema (did "
                             "you mean \"%s\"?); compute assigns to a "
                             "field of the schema",
                             key, field, near);
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: field \"%s\" is not in the schema; compute "
                         "assigns to a field of the schema",
                         key, field);
    }
    tdm_type ft = s->fields[idx].type;
    if (ts_field && strcmp(ts_field, field) == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: \"%s\" is the timestamp field, whose time is "
                         "taken when the record is read; compute another "
                         "field",
                         key, field);
    if (partition_field && strcmp(partition_field, field) == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: \"%s\" is the partition field, which is read "
                         "before compute runs; compute another field",
                         key, field);
    tdm_err err = compile_key(key, text, s, &out->e, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    tdm__expr_type et = out->e->type;
    bool is_text = ft == TDM_TYPE_STRING, flag = ft == TDM_TYPE_BOOL;
    bool ok = et == TDM__EXPR_NULL ||
              (is_text ? et == TDM__EXPR_STRING
               : flag  ? et == TDM__EXPR_BOOL
                       : et == TDM__EXPR_INT ||
                            (et == TDM__EXPR_DOUBLE &&
                             (ft == TDM_TYPE_DOUBLE || tdm__is_decimal(ft))));
    if (!ok && (is_text || flag)) {
        tdm__expr_destroy(out->e);
        out->e = NULL;
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: the expression is %s, expected a %s for "
                         "field \"%s\"",
                         key, tdm__expr_type_name(et),
                         is_text ? "string" : "bool", field);
    }
    if (!ok) {
        tdm__expr_destroy(out->e);
        out->e = NULL;
        if (et == TDM__EXPR_DOUBLE)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "%s: the expression is double but field \"%s\" "
                             "is %s (use integer arithmetic, e.g. "
                             "\"price * 908 / 1000\")",
                             key, field,
                             ft == TDM_TYPE_INT64 ? "int64" : "timestamp");
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "%s: the expression is %s, expected a number for "
                         "field \"%s\"",
                         key, tdm__expr_type_name(et), field);
    }
    out->field = idx;
    out->type = ft;
    return TDM_OK;
}

/* A source's or join's filter: a condition; see expr.h. */
tdm_err tdm__expr_compile_filter(const char *text, const tdm__schema *s,
                                 tdm__expr **out, char *errbuf,
                                 size_t errbuf_size)
{
    tdm_err err = compile_key("filter", text, s, out, errbuf, errbuf_size);
    if (err != TDM_OK)
        return err;
    tdm__expr_type t = (*out)->type;
    if (t == TDM__EXPR_BOOL || t == TDM__EXPR_NULL)
        return TDM_OK;
    tdm__expr_destroy(*out);
    *out = NULL;
    return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                     "filter: the expression is %s, expected a condition "
                     "(true or false), e.g. \"auction %% 123 = 0\"",
                     tdm__expr_type_name(t));
}

/* Frees a set (NULL is fine); see rt.h. */
void tdm__src_exprs_destroy(tdm__src_exprs *x)
{
    if (!x)
        return;
    tdm__expr_destroy(x->filter);
    for (int i = 0; i < x->n_compute; i++)
        tdm__expr_destroy(x->compute[i].e);
    tdm__free(x->compute);
    tdm__free(x);
}

/* A compute's value @p v (not null) for its decimal field, rounded half
 * away from zero to the field's scale; false (null) out of range. */
static bool compute_decimal(const tdm__expr_compute *c, const tdm__expr_val *v,
                            int64_t *out)
{
    int p = TDM_DECIMAL_PRECISION(c->type), s = TDM_DECIMAL_SCALE(c->type);
    if (c->e->type == TDM__EXPR_DOUBLE)
        return tdm__dec_from_double(v->u.d, p, s, out);
    return tdm__dec_rescale(v->u.i, 0, s, p, out);
}

/* The filter, then each compute in key order; see expr.h. */
int tdm__src_exprs_apply(const tdm__src_exprs *x, tdm__row *row, tdm_time_ms wm,
                         tdm__batch *b)
{
    if (x->filter && !tdm__expr_true(x->filter, row, wm))
        return 0;
    tdm__expr_scratch sc;
    for (int i = 0; i < x->n_compute; i++) {
        const tdm__expr_compute *c = &x->compute[i];
        tdm__expr_val v;
        tdm__expr_eval(c->e, row, wm, &sc, &v);
        tdm__val *f = &row->v[c->field];
        f->null = v.null;
        if (v.null)
            continue;
        if (c->type == TDM_TYPE_STRING) {
            /* The text is the scratch's or a row's: copied into the
             * batch's arena, which keeps the row's other strings. */
            if (tdm__batch_set_string(b, row, c->field, v.u.s.p, v.u.s.len) !=
                TDM_OK)
                return -1;
        } else if (c->type == TDM_TYPE_DOUBLE)
            f->u.d = c->e->type == TDM__EXPR_DOUBLE ? v.u.d : (double)v.u.i;
        else if (__builtin_expect(!tdm__is_decimal(c->type), 1))
            f->u.i = v.u.i;
        else
            f->null = !compute_decimal(c, &v, &f->u.i);
    }
    return 1;
}
