/* SPDX-License-Identifier: MIT */
/* agg.c - window aggregates and window contents: the built-in incremental
 * aggregates (count, sum, min, max, avg), collect, user aggregates with
 * create/add/merge/result, and full-window functions that see every
 * record of the window at each firing.
 *
 * Contents live in the window slot (tdm__win_slot.c plus an inline
 * accumulator for user aggregates); only collect and window functions
 * allocate, and they account their heap bytes in op->content_bytes.
 *
 * User aggregates come in two versions of tdm_aggregate_methods (the
 * header documents both): version 1's add/merge/result cannot fail,
 * version 2's return an error and add is given a tdm_agg_ctx (the
 * record's input, partial, row: op->actx during tdm_winop_push_ctx).
 * This file is the only place that calls either set, so the rest of the
 * operator sees one aggregate that may fail.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "window/win.h"

/* ---- Construction ---- */

/* A built-in aggregate.  Returns TDM_OK, TDM_ERR_INVAL (unknown
 * kind or NULL out), TDM_ERR_NOMEM. */
tdm_err tdm_aggregate_new(tdm_agg_kind kind, tdm_aggregate **out)
{
    if (!out)
        return TDM_ERR_INVAL;
    *out = NULL;
    if ((int)kind < (int)TDM_AGG_COUNT || (int)kind > (int)TDM_AGG_COLLECT)
        return TDM_ERR_INVAL;
    tdm_aggregate *a = tdm__calloc(1, sizeof *a);
    if (!a)
        return TDM_ERR_NOMEM;
    a->type = TDM__AGG_BUILTIN;
    a->kind = kind;
    *out = a;
    return TDM_OK;
}

/* What the two custom constructors share: the checks, in the order
 * their messages name them, and the allocation.  @p given: methods was
 * not NULL (the other facts are read only then).  The aggregate, or NULL
 * with *err and the message set. */
static tdm_aggregate *custom_new(tdm_aggregate **out, bool given, int version,
                                 int want, bool add, bool result, char *errbuf,
                                 size_t errbuf_size, tdm_err *err)
{
    tdm_aggregate *a = NULL;
    if (!out)
        *err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "out must not be NULL");
    else if (!given)
        *err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "methods must not be NULL");
    else if (version != want)
        *err = tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "methods->version must be %d (got %d)", want, version);
    else if (!add || !result)
        *err =
            tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                      "methods->%s must not be NULL", !add ? "add" : "result");
    else if (!(a = tdm__calloc(1, sizeof *a)))
        *err = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "out of memory creating a custom aggregate");
    else
        a->type = TDM__AGG_CUSTOM;
    if (out)
        *out = NULL;
    return a;
}

/* A user aggregate; copies @p methods.  Returns TDM_OK,
 * TDM_ERR_INVAL naming the bad field, TDM_ERR_NOMEM. */
tdm_err tdm_aggregate_new_custom(const tdm_aggregate_methods *methods, void *ud,
                                 tdm_aggregate **out, char *errbuf,
                                 size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    tdm_aggregate *a =
        custom_new(out, methods != NULL, methods ? methods->version : 0, 1,
                   methods && methods->add, methods && methods->result, errbuf,
                   errbuf_size, &err);
    if (!a)
        return err;
    a->m = *methods;
    a->ud = ud;
    *out = a;
    return TDM_OK;
}

/* A version-2 user aggregate; copies @p methods, and what the versions
 * share into a->m too, so that only add, merge and result look at the
 * version.  Returns as tdm_aggregate_new_custom. */
tdm_err tdm_aggregate_new_custom_v2(const tdm_aggregate_methods_v2 *methods,
                                    void *ud, tdm_aggregate **out, char *errbuf,
                                    size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    tdm_aggregate *a =
        custom_new(out, methods != NULL, methods ? methods->version : 0, 2,
                   methods && methods->add, methods && methods->result, errbuf,
                   errbuf_size, &err);
    if (!a)
        return err;
    a->m2 = *methods;
    a->m.version = 2;
    a->m.acc_size = methods->acc_size;
    a->m.create = methods->create;
    a->m.destroy_acc = methods->destroy_acc;
    a->m.destroy = methods->destroy;
    a->ud = ud;
    *out = a;
    return TDM_OK;
}

/* A full-window function.  Returns TDM_OK, TDM_ERR_INVAL (NULL
 * fn or out), TDM_ERR_NOMEM. */
tdm_err tdm_aggregate_new_window_fn(tdm_window_fn fn, void *ud,
                                    void (*destroy)(void *ud),
                                    tdm_aggregate **out)
{
    if (!out || !fn) {
        if (out)
            *out = NULL;
        return TDM_ERR_INVAL;
    }
    tdm_aggregate *a = tdm__calloc(1, sizeof *a);
    *out = a;
    if (!a)
        return TDM_ERR_NOMEM;
    a->type = TDM__AGG_WINDOW_FN;
    a->fn = fn;
    a->fn_destroy = destroy;
    a->ud = ud;
    return TDM_OK;
}

/* Frees an aggregate and releases its user data; NULL is a
 * no-op. */
void tdm_aggregate_destroy(tdm_aggregate *agg)
{
    if (!agg)
        return;
    if (agg->type == TDM__AGG_CUSTOM && agg->m.destroy)
        agg->m.destroy(agg->ud);
    if (agg->type == TDM__AGG_WINDOW_FN && agg->fn_destroy)
        agg->fn_destroy(agg->ud);
    tdm__free(agg);
}

const tdm_agg_ctx tdm__agg_no_ctx = {.input = 0};

/* ---- Result output and window context (user code's view) ---- */

/* Sets the numeric result. */
void tdm_result_set_value(tdm_result_out *out, double value)
{
    out->value = value;
}

/* Copies the result bytes into the operator's reusable buffer.
 * Returns TDM_OK or TDM_ERR_NOMEM (the firing is then skipped). */
tdm_err tdm_result_set_bytes(tdm_result_out *out, const void *bytes, size_t len)
{
    if (len > out->cap) {
        unsigned char *nb = tdm__realloc(out->bytes, len);
        if (!nb) {
            out->err = TDM_ERR_NOMEM;
            return TDM_ERR_NOMEM;
        }
        out->bytes = nb;
        out->cap = len;
    }
    if (len)
        memcpy(out->bytes, bytes, len);
    out->len = len;
    out->has_bytes = true;
    return TDM_OK;
}

/* The key of the window being evaluated. */
const char *tdm_window_ctx_key(const tdm_window_ctx *ctx, size_t *len)
{
    if (len)
        *len = ctx->key_len;
    return ctx->key;
}

/* The window's bounds; 0 for the global window. */
int tdm_window_ctx_window(const tdm_window_ctx *ctx, tdm_time_ms *start,
                          tdm_time_ms *end)
{
    if (!ctx->has_window)
        return 0;
    if (start)
        *start = ctx->start;
    if (end)
        *end = ctx->end;
    return 1;
}

/* Number of records in the window. */
size_t tdm_window_ctx_count(const tdm_window_ctx *ctx)
{
    return ctx->n;
}

/* Record @p i in arrival order, NULL when out of range. */
const tdm_record *tdm_window_ctx_record(const tdm_window_ctx *ctx, size_t i)
{
    return i < ctx->n ? &ctx->recs[i] : NULL;
}

/* Frees the byte buffer of a result output. */
void tdm__agg_free_result(tdm_result_out *r)
{
    tdm__free(r->bytes);
    r->bytes = NULL;
    r->cap = r->len = 0;
}

/* ---- Properties ---- */

/* Inline accumulator bytes: a user aggregate's acc_size, else 0. */
size_t tdm__agg_acc_size(const tdm_aggregate *a)
{
    return a->type == TDM__AGG_CUSTOM ? a->m.acc_size : 0;
}

/* False only for user aggregates without merge. */
bool tdm__agg_can_merge(const tdm_aggregate *a)
{
    return a->type != TDM__AGG_CUSTOM ||
           (a->m.version == 1 ? a->m.merge != NULL : a->m2.merge != NULL);
}

/* ---- Contents ---- */

/* Makes room for @p extra more elements of @p elem bytes in the array
 * *p of capacity *cap holding n; accounts the growth. */
static bool reserve(tdm_winop *op, void **p, size_t *cap, size_t n,
                    size_t extra, size_t elem)
{
    if (n + extra <= *cap)
        return true;
    size_t ncap = *cap ? *cap : 4;
    while (ncap < n + extra)
        ncap *= 2;
    void *np = tdm__realloc(*p, ncap * elem);
    if (!np)
        return false;
    op->content_bytes += (int64_t)((ncap - *cap) * elem);
    *p = np;
    *cap = ncap;
    return true;
}

/* Adds a record to a user aggregate's accumulator, creating it first
 * when the window has no contents (Flink creates the accumulator on the
 * first add after creation or purge).  A version-2 add that fails on a
 * new accumulator releases it: the window stays empty. */
static tdm_err custom_add(tdm_winop *op, tdm__win_slot *s,
                          const tdm_record *rec)
{
    const tdm_aggregate *a = op->agg;
    void *acc = tdm__win_acc(op, s);
    bool fresh = !(s->flags & TDM__W_CONTENTS);
    if (fresh) {
        memset(acc, 0, a->m.acc_size);
        if (a->m.create)
            a->m.create(a->ud, acc);
    }
    if (a->m.version == 1) {
        if (op->actx && op->actx->partial)
            return TDM_ERR_INVAL; /* refused by tdm_winop_push_ctx */
        a->m.add(a->ud, acc, rec);
        return TDM_OK;
    }
    tdm_err err =
        a->m2.add(a->ud, acc, rec, op->actx ? op->actx : &tdm__agg_no_ctx);
    if (err != TDM_OK && fresh && a->m.destroy_acc)
        a->m.destroy_acc(a->ud, acc);
    return err;
}

/* Adds a record when the inline fast path does not apply
 * (collect, user aggregates, window functions). */
tdm_err tdm__agg_add_slow(tdm_winop *op, tdm__win_slot *s,
                          const tdm_record *rec, const char *key,
                          size_t key_len)
{
    const tdm_aggregate *a = op->agg;
    switch (a->type) {
    case TDM__AGG_BUILTIN:
        if (tdm__agg_add_fast(a, s, rec->value))
            return TDM_OK;
        /* Collect: append the value. */
        if (!reserve(op, (void **)&s->c.col.v, &s->c.col.cap, s->c.col.n, 1,
                     sizeof(double)))
            return TDM_ERR_NOMEM;
        s->c.col.v[s->c.col.n++] = rec->value;
        break;
    case TDM__AGG_CUSTOM: {
        tdm_err err = custom_add(op, s, rec);
        if (err != TDM_OK)
            return err;
        break;
    }
    case TDM__AGG_WINDOW_FN: {
        if (!reserve(op, (void **)&s->c.recs.r, &s->c.recs.cap, s->c.recs.n, 1,
                     sizeof(tdm_record)))
            return TDM_ERR_NOMEM;
        tdm_record *r = &s->c.recs.r[s->c.recs.n];
        *r = *rec;
        r->key = key;
        r->key_len = key_len;
        if (rec->payload && rec->payload_len) {
            r->payload = tdm__memdup(rec->payload, rec->payload_len);
            if (!r->payload)
                return TDM_ERR_NOMEM;
            op->content_bytes += (int64_t)rec->payload_len;
        } else {
            r->payload = NULL;
            r->payload_len = 0;
        }
        s->c.recs.n++;
        break;
    }
    }
    s->flags |= TDM__W_CONTENTS;
    return TDM_OK;
}

/* Folds window @p from's contents into @p into (session merges). */
tdm_err tdm__agg_merge(tdm_winop *op, tdm__win_slot *into, tdm__win_slot *from)
{
    const tdm_aggregate *a = op->agg;
    if (!(from->flags & TDM__W_CONTENTS))
        return TDM_OK;
    if (!(into->flags & TDM__W_CONTENTS)) {
        /* The target is empty: the source's contents move over whole
         * (Flink keeps the source's accumulator as the merged one). */
        into->c = from->c;
        if (op->acc_size)
            memcpy(tdm__win_acc(op, into), tdm__win_acc(op, from),
                   op->acc_size);
        into->flags |= TDM__W_CONTENTS;
        memset(&from->c, 0, sizeof from->c);
        from->flags &= ~TDM__W_CONTENTS;
        return TDM_OK;
    }
    switch (a->type) {
    case TDM__AGG_BUILTIN:
        switch (a->kind) {
        case TDM_AGG_COUNT:
            into->c.num.n += from->c.num.n;
            break;
        case TDM_AGG_SUM:
        case TDM_AGG_AVG:
            into->c.num.a += from->c.num.a;
            into->c.num.n += from->c.num.n;
            break;
        case TDM_AGG_MIN:
            if (from->c.num.a < into->c.num.a)
                into->c.num.a = from->c.num.a;
            break;
        case TDM_AGG_MAX:
            if (from->c.num.a > into->c.num.a)
                into->c.num.a = from->c.num.a;
            break;
        case TDM_AGG_COLLECT:
            if (!reserve(op, (void **)&into->c.col.v, &into->c.col.cap,
                         into->c.col.n, from->c.col.n, sizeof(double)))
                return TDM_ERR_NOMEM;
            memcpy(into->c.col.v + into->c.col.n, from->c.col.v,
                   from->c.col.n * sizeof(double));
            into->c.col.n += from->c.col.n;
            break;
        }
        break;
    case TDM__AGG_CUSTOM:
        if (a->m.version == 1) {
            a->m.merge(a->ud, tdm__win_acc(op, into), tdm__win_acc(op, from));
        } else {
            tdm_err err = a->m2.merge(a->ud, tdm__win_acc(op, into),
                                      tdm__win_acc(op, from));
            if (err != TDM_OK)
                return err; /* both windows keep their contents */
        }
        break;
    case TDM__AGG_WINDOW_FN:
        if (!reserve(op, (void **)&into->c.recs.r, &into->c.recs.cap,
                     into->c.recs.n, from->c.recs.n, sizeof(tdm_record)))
            return TDM_ERR_NOMEM;
        /* Payload copies change owner; the source array is emptied so
         * that clearing it frees none of them. */
        memcpy(into->c.recs.r + into->c.recs.n, from->c.recs.r,
               from->c.recs.n * sizeof(tdm_record));
        into->c.recs.n += from->c.recs.n;
        from->c.recs.n = 0;
        break;
    }
    tdm__agg_clear(op, from);
    return TDM_OK;
}

/* Releases and zeroes a window's contents (purge, cleanup). */
void tdm__agg_clear(tdm_winop *op, tdm__win_slot *s)
{
    const tdm_aggregate *a = op->agg;
    switch (a->type) {
    case TDM__AGG_BUILTIN:
        if (a->kind == TDM_AGG_COLLECT) {
            op->content_bytes -= (int64_t)(s->c.col.cap * sizeof(double));
            tdm__free(s->c.col.v);
        }
        break;
    case TDM__AGG_CUSTOM:
        if ((s->flags & TDM__W_CONTENTS) && a->m.destroy_acc)
            a->m.destroy_acc(a->ud, tdm__win_acc(op, s));
        break;
    case TDM__AGG_WINDOW_FN:
        for (size_t i = 0; i < s->c.recs.n; i++) {
            op->content_bytes -= (int64_t)s->c.recs.r[i].payload_len;
            tdm__free((void *)s->c.recs.r[i].payload);
        }
        op->content_bytes -= (int64_t)(s->c.recs.cap * sizeof(tdm_record));
        tdm__free(s->c.recs.r);
        break;
    }
    memset(&s->c, 0, sizeof s->c);
    s->flags &= ~TDM__W_CONTENTS;
}

/* Ascending order; NaNs sort last so that the order is total. */
static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    if (isnan(a) || isnan(b))
        return isnan(a) - isnan(b);
    return (a > b) - (a < b);
}

/* Computes the result of a non-empty window into @p ev. */
tdm_err tdm__agg_result(tdm_winop *op, tdm__win_slot *s, tdm_event *ev,
                        const char *key, size_t key_len)
{
    const tdm_aggregate *a = op->agg;
    tdm_result_out *res = &op->res;
    switch (a->type) {
    case TDM__AGG_BUILTIN:
        switch (a->kind) {
        case TDM_AGG_COUNT:
            ev->value = s->c.num.n;
            break;
        case TDM_AGG_SUM:
        case TDM_AGG_MIN:
        case TDM_AGG_MAX:
            ev->value = s->c.num.a;
            break;
        case TDM_AGG_AVG:
            ev->value = s->c.num.a / s->c.num.n;
            break;
        case TDM_AGG_COLLECT:
            /* Sorted in place: the order of collected values is not
             * observable otherwise. */
            qsort(s->c.col.v, s->c.col.n, sizeof(double), cmp_double);
            ev->values = s->c.col.v;
            ev->n_values = s->c.col.n;
            ev->value = (double)s->c.col.n;
            break;
        }
        return TDM_OK;
    case TDM__AGG_CUSTOM:
        res->value = 0;
        res->has_bytes = false;
        res->len = 0;
        res->err = TDM_OK;
        if (a->m.version == 1) {
            a->m.result(a->ud, tdm__win_acc(op, s), res);
        } else {
            tdm_err err = a->m2.result(a->ud, tdm__win_acc(op, s), res);
            if (err != TDM_OK)
                return err;
        }
        break;
    case TDM__AGG_WINDOW_FN: {
        tdm_window_ctx wc = {
            .key = key,
            .key_len = key_len,
            .has_window = !op->global,
            .start = s->start,
            .end = s->end,
            .recs = s->c.recs.r,
            .n = s->c.recs.n,
        };
        res->value = 0;
        res->has_bytes = false;
        res->len = 0;
        res->err = TDM_OK;
        tdm_err err = a->fn(a->ud, &wc, res);
        if (err != TDM_OK)
            return err;
        break;
    }
    }
    if (res->err != TDM_OK)
        return res->err;
    ev->value = res->value;
    if (res->has_bytes) {
        ev->bytes = res->bytes;
        ev->bytes_len = res->len;
    }
    return TDM_OK;
}

/* Sets the checkpoint codec of a custom aggregate (win.h). */
tdm_err tdm__aggregate_set_codec(tdm_aggregate *a, tdm__acc_save_fn save,
                                 tdm__acc_load_fn load)
{
    if (!a || a->type != TDM__AGG_CUSTOM || !save != !load)
        return TDM_ERR_INVAL;
    a->acc_save = save;
    a->acc_load = load;
    return TDM_OK;
}
