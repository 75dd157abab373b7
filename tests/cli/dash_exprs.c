/* SPDX-License-Identifier: MIT */
/* dash_exprs.c - reads a Grafana dashboard (monitoring/grafana-dashboard.json)
 * with jansson, as Grafana would have to, and prints the PromQL query of
 * every panel target, one per line, for tests/cli/monitoring.sh to check
 * with promtool:
 *   dash_exprs FILE
 * Exit status: 0; 1 when the file is not JSON (FILE:LINE:COLUMN: why), has
 * no panels, or a panel has no target or an empty query; 2 on bad usage. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

/* Prints the queries of panel @p p (number @p i); 0 or 1 (a problem). */
static int panel_exprs(const json_t *p, size_t i)
{
    const json_t *targets = json_object_get(p, "targets");
    const char *title = json_string_value(json_object_get(p, "title"));
    size_t k;
    json_t *t;
    if (json_array_size(targets) == 0) {
        fprintf(stderr, "panel %zu (%s): no targets\n", i, title ? title : "?");
        return 1;
    }
    json_array_foreach(targets, k, t)
    {
        const char *e = json_string_value(json_object_get(t, "expr"));
        if (e == NULL || *e == '\0' || strchr(e, '\n') != NULL) {
            fprintf(stderr, "panel %zu (%s), target %zu: no one-line expr\n", i,
                    title ? title : "?", k);
            return 1;
        }
        printf("%s\n", e);
    }
    return 0;
}

int main(int argc, char **argv)
{
    json_error_t err;
    json_t *d, *p;
    size_t i;
    int bad = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: dash_exprs FILE\n");
        return 2;
    }
    d = json_load_file(argv[1], 0, &err);
    if (d == NULL) {
        fprintf(stderr, "%s:%d:%d: %s\n", argv[1], err.line, err.column,
                err.text);
        return 1;
    }
    if (json_array_size(json_object_get(d, "panels")) == 0) {
        fprintf(stderr, "%s: no panels\n", argv[1]);
        bad = 1;
    }
    json_array_foreach(json_object_get(d, "panels"), i, p)
    {
        bad |= panel_exprs(p, i);
    }
    json_decref(d);
    return bad;
}
