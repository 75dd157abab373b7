/* SPDX-License-Identifier: MIT */
/* schema_api.c - schemas for callers of the public API: checking schema
 * text (tdm_schema_check) and a source field's type
 * (tdm_node_field_type, beside tdm_node_field_index).
 *
 * Both read through the one schema parser (row.c), so a tool's verdict
 * on "ts:int64, k:string" is the job's.  Used by `tidemark analyze`,
 * which reports schema problems in terms of its own options.
 */
#include "runtime/rt.h"

/* Checks schema text (see tidemark.h). */
tdm_err tdm_schema_check(const char *text, char *errbuf, size_t errbuf_size)
{
    if (errbuf && errbuf_size)
        errbuf[0] = '\0';
    if (!text)
        return TDM_ERR_INVAL;
    tdm__schema schema;
    memset(&schema, 0, sizeof schema);
    tdm_err err = tdm__schema_parse(text, &schema, errbuf, errbuf_size);
    tdm__schema_free(&schema);
    return err;
}

/* The type of a source's field (see tidemark.h). */
tdm_type tdm_node_field_type(const tdm_node *source, int i)
{
    const tdm__schema *s = source ? tdm__node_schema(source) : NULL;
    if (!s || i < 0 || i >= s->n)
        return (tdm_type)0;
    return s->fields[i].type;
}
