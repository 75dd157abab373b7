/* SPDX-License-Identifier: MIT */
/* job_exprs.c - a source's `filter` and `compute.*` keys, compiled into
 * the expression set its node keeps for the run.
 *
 * expr.c compiles text against a schema and knows nothing of nodes; this
 * file reads the two keys of a source node and its schema and partition
 * field, and hands the texts to expr.c, so the definition (job.c) calls
 * the expression compiler and not the other way round.  The invariant:
 * a set is either NULL (neither key) or holds a program for every key,
 * in the order the compute.* properties were set.  Used by job.c's
 * validation and node destruction.
 */
#include "runtime/expr.h"
#include "runtime/rt.h"

/* Compiles the filter and compute.* keys of a source; see rt.h. */
tdm_err tdm__src_exprs_compile(const tdm_node *n, const char *ts_field,
                               tdm__src_exprs **out, char *errbuf,
                               size_t errbuf_size)
{
    *out = NULL;
    const char *filter = n->spec.src.filter;
    const tdm__conf_val *cv = n->spec.src.compute;
    int n_comp = cv->props ? cv->n_props : 0;
    if (!*filter && n_comp == 0)
        return TDM_OK;
    const tdm__schema *s = tdm__node_schema(n);
    if (!s)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "schema: required for filter and compute");
    tdm_err err = TDM_OK;
    tdm__src_exprs *x = tdm__calloc(1, sizeof *x);
    if (!x || (n_comp && !(x->compute = tdm__calloc((size_t)n_comp,
                                                    sizeof *x->compute)))) {
        err = tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (*filter)
        err = tdm__expr_compile_filter(filter, s, &x->filter, errbuf,
                                       errbuf_size);
    const char *pf = n->spec.src.partition_field;
    for (int i = 0; err == TDM_OK && i < n_comp; i++) {
        err = tdm__expr_compile_compute(s, cv->props[2 * i],
                                        cv->props[2 * i + 1], ts_field, pf,
                                        &x->compute[i], errbuf, errbuf_size);
        if (err == TDM_OK)
            x->n_compute++;
    }
    if (err != TDM_OK)
        goto fail;
    *out = x;
    return TDM_OK;

fail:
    tdm__src_exprs_destroy(x);
    return err;
}
