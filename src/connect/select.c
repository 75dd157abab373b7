/* SPDX-License-Identifier: MIT */
/* select.c - a sink's `select` key: which columns its rows carry, in
 * which order and under which names (SQL's SELECT list of an INSERT INTO
 * sink SELECT ...).
 *
 * An item is "name" or "name AS alias" (AS in any case, blanks around
 * it).  A name is a column of the rows the sink writes - window results
 * and join pairs (tdm__out_row: their columns, then window_start,
 * window_end, window_time (window_end - 1, Flink's window_time), timing,
 * pane and update when the row has a window) or
 * pass-through records (tdm__row: the schema's fields, then ts when the
 * schema has no field of that name).  A column of the row wins over a
 * window member of the same name.  The job's validation (job_validate.c)
 * checks every name against every producer of the sink; a name a row
 * lacks anyway is written as null.
 *
 * Names are resolved to column indexes once per row layout, not per
 * row: a small cache keyed by the layout's column name pointers (the
 * planner's names, stable for a run), compared pointer by pointer, so a
 * row costs one compare per column.  A layout whose pointers change is
 * resolved again: slower, never wrong.  Not thread-safe: the sinks use
 * it under their own mutex.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "connect/connect.h"

/* Cached layouts per selection (more distinct producers resolve again). */
#define SEL_LAYOUTS 8

enum { LAYOUT_RESULT = 1, LAYOUT_RECORD };

/* One row layout and its resolution. */
typedef struct sel_layout {
    int kind;           /* LAYOUT_*, 0: free slot */
    int n;              /* columns */
    bool flag;          /* result: has_window */
    const char **names; /* the n column name pointers */
    int *map;           /* per item: column index or TDM__SEL_* */
} sel_layout;

struct tdm__sel {
    int n;
    char **name; /* the column each item reads */
    char **out;  /* the name it is written under */
    sel_layout lay[SEL_LAYOUTS];
    int next; /* the slot to fill next */
};

/* ---- Parsing ---- */

/* The next blank-separated token of @p p: start in *beg, length
 * returned (0 at the end). */
static size_t token(const char **p, const char **beg)
{
    const char *s = *p;
    while (isspace((unsigned char)*s))
        s++;
    *beg = s;
    while (*s && !isspace((unsigned char)*s))
        s++;
    *p = s;
    return (size_t)(s - *beg);
}

/* Splits item @p i of @p sel's text into its name and output name. */
static tdm_err parse_item(tdm__sel *sel, int i, const char *item, char *errbuf,
                          size_t errbuf_size)
{
    const char *p = item, *t[4];
    size_t l[4];
    int k = 0;
    while (k < 4 && (l[k] = token(&p, &t[k])) > 0)
        k++;
    if (k == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "select: an empty item (expected \"name\" or "
                         "\"name AS alias\")");
    if (k != 1 && !(k == 3 && l[1] == 2 && strncasecmp(t[1], "as", 2) == 0))
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "select: expected \"name\" or \"name AS alias\", "
                         "got \"%s\"",
                         item);
    sel->name[i] = tdm__strndup(t[0], l[0]);
    sel->out[i] = tdm__strndup(t[k - 1], l[k - 1]);
    if (!sel->name[i] || !sel->out[i])
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "select: out of memory");
    return TDM_OK;
}

/* No output name twice (a JSON object or CSV header could not tell
 * them apart). */
static tdm_err check_outputs(const tdm__sel *sel, const char *const *items,
                             char *errbuf, size_t errbuf_size)
{
    for (int i = 0; i < sel->n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(sel->out[i], sel->out[j]) == 0)
                return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                                 "select: output name \"%s\" is given twice "
                                 "(\"%s\" and \"%s\"); rename one with AS",
                                 sel->out[i], items[j], items[i]);
    return TDM_OK;
}

tdm_err tdm__sel_new(const char *const *items, int n, tdm__sel **out,
                     char *errbuf, size_t errbuf_size)
{
    *out = NULL;
    if (n <= 0)
        return TDM_OK; /* no selection: every column */
    tdm__sel *sel = tdm__calloc(1, sizeof *sel);
    if (!sel)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                         "select: out of memory");
    sel->n = n;
    sel->name = tdm__calloc((size_t)n, sizeof *sel->name);
    sel->out = tdm__calloc((size_t)n, sizeof *sel->out);
    tdm_err err = sel->name && sel->out
                      ? TDM_OK
                      : tdm__errf(errbuf, errbuf_size, TDM_ERR_NOMEM,
                                  "select: out of memory");
    for (int i = 0; err == TDM_OK && i < n; i++)
        err = parse_item(sel, i, items[i] ? items[i] : "", errbuf, errbuf_size);
    if (err == TDM_OK)
        err = check_outputs(sel, items, errbuf, errbuf_size);
    if (err != TDM_OK) {
        tdm__sel_free(sel);
        return err;
    }
    *out = sel;
    return TDM_OK;
}

static void layout_clear(sel_layout *ly)
{
    tdm__free(ly->names);
    tdm__free(ly->map);
    memset(ly, 0, sizeof *ly);
}

void tdm__sel_free(tdm__sel *sel)
{
    if (!sel)
        return;
    for (int i = 0; i < sel->n; i++) {
        if (sel->name)
            tdm__free(sel->name[i]);
        if (sel->out)
            tdm__free(sel->out[i]);
    }
    for (int k = 0; k < SEL_LAYOUTS; k++)
        layout_clear(&sel->lay[k]);
    tdm__free(sel->name);
    tdm__free(sel->out);
    tdm__free(sel);
}

int tdm__sel_count(const tdm__sel *sel)
{
    return sel ? sel->n : 0;
}

const char *tdm__sel_name(const tdm__sel *sel, int i)
{
    return sel->name[i];
}

const char *tdm__sel_out(const tdm__sel *sel, int i)
{
    return sel->out[i];
}

/* ---- Resolution ---- */

/* The window and pane member named @p name, or TDM__SEL_NONE. */
static int window_member(const char *name)
{
    static const char *const members[] = {"window_start", "window_end",
                                          "window_time",  "timing",
                                          "pane",         "update"};
    static const int codes[] = {TDM__SEL_WIN_START, TDM__SEL_WIN_END,
                                TDM__SEL_WIN_TIME,  TDM__SEL_TIMING,
                                TDM__SEL_PANE,      TDM__SEL_UPDATE};
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
        if (strcmp(name, members[i]) == 0)
            return codes[i];
    return TDM__SEL_NONE;
}

/* The columns of one row, as the cache sees them. */
typedef struct row_view {
    int kind;               /* LAYOUT_* */
    int n;                  /* columns */
    bool flag;              /* result: has_window */
    const tdm__col *cols;   /* LAYOUT_RESULT */
    const tdm__field *flds; /* LAYOUT_RECORD: the schema's fields */
} row_view;

static const char *view_name(const row_view *v, int c)
{
    return v->kind == LAYOUT_RESULT ? v->cols[c].name : v->flds[c].name;
}

/* Where item @p name comes from in the row @p v. */
static int resolve(const char *name, const row_view *v)
{
    for (int c = 0; c < v->n; c++) {
        const char *cn = view_name(v, c);
        if (cn && strcmp(cn, name) == 0)
            return c;
    }
    if (v->kind == LAYOUT_RESULT)
        return v->flag ? window_member(name) : TDM__SEL_NONE;
    /* A record's ts is its own column when the schema has one. */
    return strcmp(name, "ts") == 0 ? TDM__SEL_TS : TDM__SEL_NONE;
}

/* Whether cached layout @p ly is the one of row @p v. */
static bool layout_is(const sel_layout *ly, const row_view *v)
{
    if (ly->kind != v->kind || ly->n != v->n || ly->flag != v->flag)
        return false;
    for (int c = 0; c < v->n; c++)
        if (ly->names[c] != view_name(v, c))
            return false;
    return true;
}

/* Fills the next slot with the layout of row @p v; NULL: NOMEM. */
static const int *layout_add(tdm__sel *sel, const row_view *v)
{
    sel_layout *ly = &sel->lay[sel->next];
    sel->next = (sel->next + 1) % SEL_LAYOUTS;
    layout_clear(ly);
    ly->names = tdm__malloc((size_t)(v->n > 0 ? v->n : 1) * sizeof *ly->names);
    ly->map = tdm__malloc((size_t)sel->n * sizeof *ly->map);
    if (!ly->names || !ly->map) {
        layout_clear(ly);
        return NULL;
    }
    for (int c = 0; c < v->n; c++)
        ly->names[c] = view_name(v, c);
    for (int i = 0; i < sel->n; i++)
        ly->map[i] = resolve(sel->name[i], v);
    ly->kind = v->kind;
    ly->n = v->n;
    ly->flag = v->flag;
    return ly->map;
}

/* The map of row @p v's layout, from the cache or resolved now. */
static const int *layout_map(tdm__sel *sel, const row_view *v)
{
    for (int k = 0; k < SEL_LAYOUTS; k++)
        if (layout_is(&sel->lay[k], v))
            return sel->lay[k].map;
    return layout_add(sel, v);
}

const int *tdm__sel_map_result(tdm__sel *sel, const tdm__out_row *row)
{
    row_view v = {.kind = LAYOUT_RESULT,
                  .n = row->n_cols,
                  .flag = row->has_window != 0,
                  .cols = row->cols};
    return layout_map(sel, &v);
}

const int *tdm__sel_map_record(tdm__sel *sel, const tdm__row *row)
{
    const tdm__schema *sc = row->schema;
    row_view v = {.kind = LAYOUT_RECORD,
                  .n = sc ? sc->n : 0,
                  .flds = sc ? sc->fields : NULL};
    return layout_map(sel, &v);
}
