/* SPDX-License-Identifier: MIT */
/* src_parts.c - a source subtask's per-partition arrays and names: the
 * arrays (finished and reported flags, unit evidence, touched list,
 * replay floors, horizons, pauses, fence key sets, hot and published
 * partition metrics) grow together to cover every split the reader has;
 * new partitions get the names metrics label them with (a file source's
 * globbed files dealt round-robin, a field's value, a version-2
 * connector's own name).
 *
 * Invariant: t->part_cap >= t->n_parts, and every array has part_cap
 * entries.  Each component grows its own arrays (its *_grow hook, in
 * the on_grow list below); the published ones (t->met.parts) move only
 * under t->met.mx.
 * Used by task_source.c (the scan, the poll) and by tdm__rt_source_task_init.
 */
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/decimal.h"
#include "runtime/outbox.h"
#include "runtime/task_source.h"
#include "runtime/src_parts.h"
#include "runtime/src_v2.h"
#include "runtime/src_unit.h"
#include "runtime/src_metrics.h"
#include "runtime/src_fence.h"
#include "runtime/src_align.h"
#include "time/wm.h"

/* The loop's own per-split flags: finished, and told to the reader. */
static tdm_err flags_grow(tdm__rt_src_task *t, int old, int cap)
{
    uint8_t *f = tdm__realloc(t->finished, (size_t)cap);
    if (!f)
        return TDM_ERR_NOMEM;
    t->finished = f;
    uint8_t *r = tdm__realloc(t->reported, (size_t)cap);
    if (!r)
        return TDM_ERR_NOMEM;
    t->reported = r;
    memset(f + old, 0, (size_t)(cap - old));
    memset(r + old, 0, (size_t)(cap - old));
    return TDM_OK;
}

/* Every holder of per-split arrays, each growing its own (a component's
 * state is its own): the hook list of a reserve. */
static tdm_err (*const on_grow[])(tdm__rt_src_task *, int, int) = {
    flags_grow,       tdm__src_unit_grow,  tdm__src_metrics_grow,
    tdm__src_v2_grow, tdm__src_align_grow, tdm__src_fence_grow,
};

/* Makes the per-partition arrays hold at least @p need entries.  On a
 * failure part_cap stays: the arrays grown so far are only larger. */
tdm_err tdm__src_parts_reserve(tdm__rt_src_task *t, int need)
{
    if (need <= t->part_cap)
        return TDM_OK;
    int cap = t->part_cap ? t->part_cap : 16;
    while (cap < need)
        cap *= 2;
    for (size_t h = 0; h < sizeof on_grow / sizeof on_grow[0]; h++) {
        tdm_err err = on_grow[h](t, t->part_cap, cap);
        if (err != TDM_OK)
            return err;
    }
    t->part_cap = cap;
    return TDM_OK;
}

/* The sorted files a file source's glob names (as the connector sees
 * them: folders left out), for partition names; *n = 0 when none. */
static char **list_files(const char *pattern, size_t *n)
{
    glob_t g;
    char **list = NULL;
    *n = 0;
    memset(&g, 0, sizeof g);
    if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
        list = tdm__calloc(g.gl_pathc, sizeof *list);
        for (size_t i = 0; list && i < g.gl_pathc; i++) {
            struct stat st;
            if (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode))
                continue;
            list[*n] = tdm__strndup(g.gl_pathv[i], strlen(g.gl_pathv[i]));
            if (list[*n])
                (*n)++;
        }
    }
    globfree(&g);
    return list;
}

/* Names partitions [from, to) of the subtask as metrics label them, and
 * numbers them within the source: a file source's files are dealt
 * round-robin (local partition l of subtask i is file i + l * P of the
 * sorted glob), generator partitions likewise; partitions named by a
 * field take the field's value from @p row, the first row of the
 * partition (in order of appearance, read by subtask 0 only); stdin and
 * TCP have one partition.  A name that cannot be had is the number. */
static void name_partitions(tdm__rt_src_task *t, int from, int to,
                            const tdm__row *row)
{
    const tdm__source_conf *c = &t->src->conf;
    int P = t->run->P;
    char **files = NULL;
    size_t n_files = 0;
    bool by_field = c->partition_field >= 0;
    if (!by_field && !t->src->node->src_vt && c->type == TDM__SRC_FILE &&
        c->path && *c->path)
        files = list_files(c->path, &n_files);
    for (int l = from; l < to; l++) {
        tdm__rt_part *pp = &t->met.parts[l];
        char buf[256];
        /* A version-2 connector names its partitions ("clicks[3]"). */
        const char *name = t->src->v2 && t->src->vt->partition_name
                               ? t->src->vt->partition_name(t->conn, l)
                               : NULL;
        int global =
            by_field || c->type == TDM__SRC_STDIN || c->type == TDM__SRC_TCP
                ? l
                : t->index + l * P;
        if (name) {
            /* as named */
        } else if (by_field && row && l == to - 1) {
            const tdm__val *v = &row->v[c->partition_field];
            tdm_type ty = c->schema->fields[c->partition_field].type;
            if (v->null)
                snprintf(buf, sizeof buf, "null");
            else if (ty == TDM_TYPE_STRING)
                snprintf(buf, sizeof buf, "%.*s", (int)v->u.s.len, v->u.s.p);
            else if (ty == TDM_TYPE_DOUBLE)
                snprintf(buf, sizeof buf, "%.17g", v->u.d);
            else if (ty == TDM_TYPE_BOOL)
                snprintf(buf, sizeof buf, "%s", v->u.i ? "true" : "false");
            else if (tdm__is_decimal(ty))
                tdm__dec_format(buf, sizeof buf, v->u.i, TDM_DECIMAL_SCALE(ty));
            else
                snprintf(buf, sizeof buf, "%lld", (long long)v->u.i);
            name = buf;
        } else if (c->type == TDM__SRC_STDIN && !t->src->node->src_vt) {
            name = "stdin";
        } else if (c->type == TDM__SRC_TCP && !t->src->node->src_vt) {
            name = c->tcp_address;
        } else if (files && (size_t)global < n_files) {
            name = files[global];
        }
        if (!name) {
            snprintf(buf, sizeof buf, "%d", global);
            name = buf;
        }
        char *copy = tdm__strndup(name, strlen(name));
        pthread_mutex_lock(&t->met.mx);
        tdm__free(pp->name);
        pp->name = copy;
        pp->global = global;
        pthread_mutex_unlock(&t->met.mx);
    }
    for (size_t i = 0; i < n_files; i++)
        tdm__free(files[i]);
    tdm__free(files);
    pthread_mutex_lock(&t->met.mx);
    if (to > t->met.n_pub)
        t->met.n_pub = to;
    pthread_mutex_unlock(&t->met.mx);
}

/* Makes the arrays and the reader cover partition @p p (partitions
 * named by a field appear as rows arrive; @p row is the first row of
 * @p p then, NULL at setup).  Splits a restored reader already has
 * (partitions named by a field that the checkpoint knew) are not
 * added again. */
tdm_err tdm__src_parts_ensure(tdm__rt_src_task *t, int p, const tdm__row *row)
{
    if (tdm__src_parts_reserve(t, 2 * (p + 1) + 16) != TDM_OK)
        return TDM_ERR_NOMEM;
    int from = t->n_parts;
    while (t->n_parts <= p) {
        int idx;
        if (tdm__reader_split_count(t->reader) <= t->n_parts &&
            tdm_reader_add_split(t->reader, &idx) != TDM_OK)
            return TDM_ERR_NOMEM;
        t->n_parts++;
    }
    if (t->n_parts > from) {
        name_partitions(t, from, t->n_parts, row);
        if (t->src->v2)
            tdm__src_v2_splits_added(t, from);
    }
    return TDM_OK;
}
