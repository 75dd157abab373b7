/* SPDX-License-Identifier: MIT */
/* row.c - schemas, typed rows and batches (see row.h).
 *
 * A batch allocates its rows, their values and a string arena once; adding
 * a row only zeroes its values, so the hot path allocates nothing until
 * the arena has to grow.  When it grows, every string value of the batch
 * is re-pointed into the new arena (offsets are taken before the old one
 * is freed, so no pointer into freed memory is ever used).
 */
#include <string.h>

#include "core/decimal.h"
#include "runtime/row.h"

/* ---- Schemas ---- */

static const struct {
    const char *name;
    tdm_type type;
} type_names[] = {
    {"int64", TDM_TYPE_INT64},         {"double", TDM_TYPE_DOUBLE},
    {"string", TDM_TYPE_STRING},       {"bool", TDM_TYPE_BOOL},
    {"timestamp", TDM_TYPE_TIMESTAMP},
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Trims blanks from both ends of [*p, *p + *len). */
static void trim(const char **p, size_t *len)
{
    while (*len > 0 && is_space(**p)) {
        (*p)++;
        (*len)--;
    }
    while (*len > 0 && is_space((*p)[*len - 1]))
        (*len)--;
}

/* A field name is a non-empty run of letters, digits, '_', '.' and '-'. */
static bool valid_name(const char *p, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/* Reads a number of up to two digits at t[*i], blanks around it. */
static int small_number(const char *t, size_t len, size_t *i)
{
    int v = -1;
    while (*i < len && is_space(t[*i]))
        (*i)++;
    for (int k = 0; k < 3 && *i < len && t[*i] >= '0' && t[*i] <= '9'; k++)
        v = (v < 0 ? 0 : v * 10) + (t[(*i)++] - '0');
    while (*i < len && is_space(t[*i]))
        (*i)++;
    return v;
}

/* Reads "decimal(p,s)", "decimal(p)" (s = 0) or "decimal" (10, 0, as
 * Flink's DECIMAL) into *out: a decimal is a scaled int64, so p is at
 * most 18 (core/decimal.c).  Leaves *out 0 when the text is another
 * word; TDM_ERR_INVAL naming the field for a bad p or s. */
static tdm_err parse_decimal(const char *t, size_t len, const char *name,
                             size_t name_len, tdm_type *out, char *errbuf,
                             size_t errbuf_size)
{
    size_t i = 7;
    int prec = 10, scale = 0;
    if (len > 7) {
        if (t[i++] != '(')
            return TDM_OK;
        prec = small_number(t, len, &i);
        if (i < len && t[i] == ',') {
            i++;
            scale = small_number(t, len, &i);
        }
        if (i + 1 != len || t[i] != ')' || prec < 0 || scale < 0)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "schema: field '%.*s': expected decimal(p,s) "
                             "with numbers p and s, got \"%.*s\"",
                             (int)name_len, name, (int)len, t);
    }
    if (prec < 1 || prec > TDM__DEC_MAX_PRECISION)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "schema: field '%.*s': decimal precision %d is "
                         "not supported (1 to %d: a decimal is a scaled "
                         "int64; use double for wider values)",
                         (int)name_len, name, prec, TDM__DEC_MAX_PRECISION);
    if (scale > prec)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "schema: field '%.*s': decimal scale %d is more "
                         "than its precision %d",
                         (int)name_len, name, scale, prec);
    *out = TDM_TYPE_DECIMAL_OF(prec, scale);
    return TDM_OK;
}

/* The end of the schema entry at @p p: its ',' outside parentheses (so
 * "decimal(10,2)" is one entry), or its terminating NUL. */
static const char *entry_end(const char *p)
{
    int depth = 0;
    for (; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth > 0)
            depth--;
        else if (*p == ',' && depth == 0)
            return p;
    }
    return p;
}

/* Parses one "name:type" entry into field @p f (name allocated). */
static tdm_err parse_entry(const char *p, size_t len, int index,
                           const tdm__schema *so_far, tdm__field *f,
                           char *errbuf, size_t errbuf_size)
{
    const char *colon, *name, *type;
    size_t name_len, type_len;

    trim(&p, &len);
    if (len == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "schema: entry %d is empty (expected "
                         "\"name:type\")",
                         index + 1);
    colon = memchr(p, ':', len);
    if (!colon)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "schema: entry %d \"%.*s\" has no type (expected "
                         "\"name:type\")",
                         index + 1, (int)len, p);
    name = p;
    name_len = (size_t)(colon - p);
    type = colon + 1;
    type_len = len - name_len - 1;
    trim(&name, &name_len);
    trim(&type, &type_len);
    if (!valid_name(name, name_len))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "schema: entry %d \"%.*s\": field name must be "
                         "letters, digits, '_', '.' or '-'",
                         index + 1, (int)len, p);
    for (int i = 0; i < so_far->n; i++)
        if (strlen(so_far->fields[i].name) == name_len &&
            memcmp(so_far->fields[i].name, name, name_len) == 0)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "schema: field '%.*s' is declared twice",
                             (int)name_len, name);
    f->type = 0;
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (strlen(type_names[i].name) == type_len &&
            memcmp(type_names[i].name, type, type_len) == 0)
            f->type = type_names[i].type;
    if (f->type == 0 && type_len >= 7 && memcmp(type, "decimal", 7) == 0) {
        tdm_err err = parse_decimal(type, type_len, name, name_len, &f->type,
                                    errbuf, errbuf_size);
        if (err != TDM_OK)
            return err;
    }
    if (f->type == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "schema: field '%.*s' has unknown type \"%.*s\" "
                         "(expected int64, double, string, bool, "
                         "timestamp or decimal(p,s))",
                         (int)name_len, name, (int)type_len, type);
    f->name = tdm__strndup(name, name_len);
    if (!f->name)
        return TDM_ERR_NOMEM;
    return TDM_OK;
}

/* Parses "name:type, ..." into *out; on failure *out is left empty.
 * Returns TDM_OK, TDM_ERR_INVAL (message names the entry), NOMEM. */
tdm_err tdm__schema_parse(const char *text, tdm__schema *out, char *errbuf,
                          size_t errbuf_size)
{
    tdm_err err = TDM_OK;
    const char *p = text ? text : "";
    size_t entries = 1;

    out->n = 0;
    out->fields = NULL;
    {
        const char *t = p;
        size_t tl = strlen(p);
        trim(&t, &tl);
        if (tl == 0)
            return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                             "schema: is empty (expected \"name:type, "
                             "...\")");
    }
    for (const char *c = p; *c; c++)
        entries += *c == ',';
    out->fields = tdm__calloc(entries, sizeof *out->fields);
    if (!out->fields)
        return TDM_ERR_NOMEM;
    for (int i = 0;; i++) {
        const char *end = entry_end(p);
        const char *comma = *end ? end : NULL;
        size_t len = (size_t)(end - p);
        err = parse_entry(p, len, i, out, &out->fields[out->n], errbuf,
                          errbuf_size);
        if (err != TDM_OK)
            goto fail;
        out->n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return TDM_OK;
fail:
    tdm__schema_free(out);
    return err;
}

/* Index of field @p name in @p s, or -1 (also for NULL arguments). */
int tdm__schema_find(const tdm__schema *s, const char *name)
{
    if (!s || !name)
        return -1;
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->fields[i].name, name) == 0)
            return i;
    return -1;
}

/* Frees the field array and names; the schema is left empty.  Accepts a
 * NULL or already freed schema. */
void tdm__schema_free(tdm__schema *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        tdm__free(s->fields[i].name);
    tdm__free(s->fields);
    s->fields = NULL;
    s->n = 0;
}

/* ---- Batches ---- */

/* 1 if @p p points into [base, base + used] (compared as integers: the
 * pointers may belong to different objects). */
static bool points_into(const char *p, const char *base, size_t used)
{
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)base;
    return p && base && a >= lo && a - lo <= used;
}

/* Creates a batch for @p cap rows (at least 1); NULL on OOM. */
tdm__batch *tdm__batch_new(const tdm__schema *schema, size_t cap)
{
    tdm__batch *b = tdm__calloc(1, sizeof *b);
    size_t nf = schema ? (size_t)schema->n : 0;

    if (!b)
        return NULL;
    if (cap == 0)
        cap = 1;
    b->schema = schema;
    b->cap = cap;
    b->rows = tdm__calloc(cap, sizeof *b->rows);
    b->vals = tdm__calloc(cap * (nf ? nf : 1), sizeof *b->vals);
    /* About 32 bytes of text per row before the first growth. */
    b->arena_cap = cap * 32 < 4096 ? 4096 : cap * 32;
    b->arena = tdm__malloc(b->arena_cap);
    if (!b->rows || !b->vals || !b->arena)
        goto fail;
    b->keep_after = TDM_TIME_MAX;
    /* Every row gets values of its own, even without fields: a note
     * (tdm__batch_keep) finds its row by them. */
    for (size_t i = 0; i < cap; i++) {
        b->rows[i].v = b->vals + i * (nf ? nf : 1);
        b->rows[i].schema = schema;
    }
    return b;
fail:
    tdm__batch_destroy(b);
    return NULL;
}

/* Appends a row with every value null and zeroed, timestamp TDM_TIME_MIN,
 * partition 0, no flags; NULL when the batch is full. */
tdm__row *tdm__batch_add(tdm__batch *b)
{
    tdm__row *row;
    size_t nf = b->schema ? (size_t)b->schema->n : 0;

    if (b->n == b->cap)
        return NULL;
    row = &b->rows[b->n++];
    row->ts = TDM_TIME_MIN;
    row->partition = 0;
    row->flags = 0;
    memset(row->v, 0, nf * sizeof *row->v);
    for (size_t i = 0; i < nf; i++)
        row->v[i].null = 1;
    return row;
}

/* Removes the last row.  Its strings are the newest bytes of the arena
 * (only the last row adds strings after its tdm__batch_add), so the arena
 * is rolled back to the first of them. */
void tdm__batch_drop_last(tdm__batch *b)
{
    tdm__row *row;
    size_t nf = b->schema ? (size_t)b->schema->n : 0;
    size_t mark = b->arena_used;

    if (b->n == 0)
        return;
    row = &b->rows[--b->n];
    for (size_t i = 0; i < nf; i++) {
        const tdm__val *v = &row->v[i];
        if (!v->null && b->schema->fields[i].type == TDM_TYPE_STRING &&
            points_into(v->u.s.p, b->arena, b->arena_used)) {
            size_t off = (size_t)(v->u.s.p - b->arena);
            if (off < mark)
                mark = off;
        }
    }
    b->arena_used = mark;
    /* A row noted, then dropped: its note goes with it. */
    if (b->n_kept && b->kept[b->n_kept - 1].v == row->v)
        tdm__free(b->kept[--b->n_kept].location);
}

/* Moves the arena to a new block of at least @p need free bytes and
 * re-points every string of the batch. */
static tdm_err grow_arena(tdm__batch *b, size_t need)
{
    size_t nf = b->schema ? (size_t)b->schema->n : 0;
    size_t cap = b->arena_cap ? b->arena_cap : 4096;
    char *old = b->arena, *fresh;

    while (cap - b->arena_used < need) {
        if (cap > SIZE_MAX / 2)
            return TDM_ERR_NOMEM;
        cap *= 2;
    }
    fresh = tdm__malloc(cap);
    if (!fresh)
        return TDM_ERR_NOMEM;
    if (b->arena_used)
        memcpy(fresh, old, b->arena_used);
    for (size_t r = 0; r < b->n; r++) {
        for (size_t i = 0; i < nf; i++) {
            tdm__val *v = &b->rows[r].v[i];
            if (b->schema->fields[i].type != TDM_TYPE_STRING || v->null ||
                !v->u.s.p)
                continue;
            if (points_into(v->u.s.p, old, b->arena_used))
                v->u.s.p = fresh + (v->u.s.p - old);
        }
    }
    tdm__free(old);
    b->arena = fresh;
    b->arena_cap = cap;
    return TDM_OK;
}

/* Copies @p len bytes into the arena as string field @p i of @p row (not
 * NUL-terminated).  @p s may point into this batch's own arena.
 * Returns TDM_OK, TDM_ERR_RANGE (longer than 4 GiB) or TDM_ERR_NOMEM (the
 * row is unchanged then). */
tdm_err tdm__batch_set_string(tdm__batch *b, tdm__row *row, int i,
                              const char *s, size_t len)
{
    char *dst;

    if (len > UINT32_MAX)
        return TDM_ERR_RANGE;
    if (b->arena_cap - b->arena_used < len) {
        bool inside = points_into(s, b->arena, b->arena_used);
        size_t off = inside ? (size_t)(s - b->arena) : 0;
        tdm_err err = grow_arena(b, len);
        if (err != TDM_OK)
            return err;
        if (inside)
            s = b->arena + off;
    }
    dst = b->arena + b->arena_used;
    if (len)
        memcpy(dst, s, len);
    b->arena_used += len;
    row->v[i].u.s.p = dst;
    row->v[i].u.s.len = (uint32_t)len;
    row->v[i].null = 0;
    return TDM_OK;
}

/* ---- Notes for dead letters ---- */

/* Notes the last row's location and raw bytes (see row.h).  One
 * allocation holds both; only rows above keep_after get here.  A row is
 * noted once at most, so the array of notes, made at the first, has a
 * place for every row and never grows. */
tdm_err tdm__batch_keep(tdm__batch *b, const char *location, const char *raw,
                        size_t raw_len)
{
    if (b->n == 0 ||
        (b->n_kept && b->kept[b->n_kept - 1].v == b->rows[b->n - 1].v))
        return TDM_ERR_INVAL;
    if (!b->kept) {
        b->kept = tdm__calloc(b->cap, sizeof *b->kept);
        if (!b->kept)
            return TDM_ERR_NOMEM;
    }
    size_t loc_len = strlen(location);
    char *p = tdm__malloc(loc_len + 1 + raw_len + 1);
    if (!p)
        return TDM_ERR_NOMEM;
    memcpy(p, location, loc_len + 1);
    if (raw_len)
        memcpy(p + loc_len + 1, raw, raw_len);
    p[loc_len + 1 + raw_len] = '\0';
    b->kept[b->n_kept++] = (tdm__kept){.v = b->rows[b->n - 1].v,
                                       .location = p,
                                       .raw = p + loc_len + 1,
                                       .raw_len = raw_len};
    return TDM_OK;
}

/* The note of @p row.  Notes are in the order rows were added, so their
 * values' addresses ascend (row i's are vals + i * fields): a binary
 * search finds the row wherever the batch moved it since. */
const tdm__kept *tdm__batch_kept(const tdm__batch *b, const tdm__row *row)
{
    size_t lo = 0, hi = b->n_kept;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const tdm__val *v = b->kept[mid].v;
        if (v == row->v)
            return &b->kept[mid];
        if (v < row->v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Frees the notes (keeps their array). */
static void drop_notes(tdm__batch *b)
{
    for (size_t i = 0; i < b->n_kept; i++)
        tdm__free(b->kept[i].location);
    b->n_kept = 0;
}

/* Empties the batch, keeping its memory. */
void tdm__batch_clear(tdm__batch *b)
{
    b->n = 0;
    b->arena_used = 0;
    drop_notes(b);
    b->keep_after = TDM_TIME_MAX;
    b->n_dup_keys = 0;
    b->n_tombstones = 0;
}

/* Frees a batch; accepts NULL and half-built batches. */
void tdm__batch_destroy(tdm__batch *b)
{
    if (!b)
        return;
    drop_notes(b);
    tdm__free(b->kept);
    tdm__free(b->rows);
    tdm__free(b->vals);
    tdm__free(b->arena);
    tdm__free(b);
}
