/* SPDX-License-Identifier: MIT */
/* sql_window.c - the windows of SQL: a window table function's arguments
 * (by position or by name, Flink's two forms) and the window they, or a
 * group window in GROUP BY, describe: tumbling (size, offset), sliding
 * (slide, size, offset), cumulate (step, size, offset; P3: the size an
 * integral multiple of the step) or session (gap).  Rules P3 and P16.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sql/sql_plan.h"

/* The milliseconds of an INTERVAL argument; -1 with p->msg set. */
static int64_t interval_arg(planner *p, const sql_node *e, const char *what)
{
    int64_t ms;
    if (e == NULL || e->kind != SQLK_INTERVAL ||
        (ms = tdm__sql_interval_ms(e->text, e->unit)) <= 0) {
        tdm__sql_fail(p, e,
                      "expected the %s as a positive INTERVAL, e.g. "
                      "INTERVAL '10' SECOND",
                      what);
        return -1;
    }
    return ms;
}

/* CUMULATE's step and size (P3: the size a multiple of the step, as
 * Flink requires); 0, or -1 with p->msg set. */
static int cumulate_spec(planner *p, const sql_node *const *iv, int n,
                         const sql_node *at, pwin *w)
{
    w->type = "cumulate";
    if ((w->step = interval_arg(p, n > 0 ? iv[0] : at, "step")) < 0 ||
        (w->size = interval_arg(p, n > 1 ? iv[1] : at, "max window size")) <
            0) {
        return -1;
    }
    if (w->size % w->step != 0) {
        return tdm__sql_fail(p, iv[1],
                             "CUMULATE: the max window size (%lld ms) "
                             "must be an integral multiple of the step "
                             "(%lld ms)",
                             (long long)w->size, (long long)w->step);
    }
    return 0;
}

/* The window of a TVF or of a legacy GROUP BY TUMBLE/HOP/SESSION(ts, ..)
 * from its interval arguments @p iv. */
int tdm__sql_window_spec(planner *p, const char *fn, const sql_node *const *iv,
                         int n, const sql_node *at, pwin *w)
{
    int rest; /* the offset's index */
    w->at = at;
    if (strcmp(fn, "TUMBLE") == 0) {
        w->type = "tumbling";
        if ((w->size = interval_arg(p, n > 0 ? iv[0] : at, "window size")) <
            0) {
            return -1;
        }
        rest = 1;
    } else if (strcmp(fn, "HOP") == 0) {
        w->type = "sliding";
        if ((w->slide = interval_arg(p, n > 0 ? iv[0] : at, "slide")) < 0 ||
            (w->size = interval_arg(p, n > 1 ? iv[1] : at, "window size")) <
                0) {
            return -1;
        }
        rest = 2;
    } else if (strcmp(fn, "SESSION") == 0) {
        w->type = "session";
        if ((w->gap = interval_arg(p, n > 0 ? iv[0] : at, "session gap")) < 0) {
            return -1;
        }
        return n <= 1 ? 0
                      : tdm__sql_fail(p, iv[1],
                                      "SESSION takes nothing after "
                                      "the gap");
    } else if (strcmp(fn, "CUMULATE") == 0) {
        if (cumulate_spec(p, iv, n, at, w) != 0) {
            return -1;
        }
        rest = 2;
    } else {
        return tdm__sql_fail(p, at,
                             "unknown window function %s (known: TUMBLE, "
                             "HOP, CUMULATE, SESSION)",
                             fn);
    }
    /* P3: an optional offset, then nothing. */
    if (n > rest && (w->offset = interval_arg(p, iv[rest], "offset")) < 0) {
        return -1;
    }
    if (n > rest + 1) {
        return tdm__sql_fail(p, iv[rest + 1],
                             "%s takes nothing after the "
                             "offset",
                             fn);
    }
    return 0;
}

/* The arguments of window TVF @p f in their positions: by position, or
 * by name (DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => ...),
 * Flink's two forms (P16: mixing them, an unknown or a repeated name is
 * refused).  Returns how many, -1 with p->msg set. */
int tdm__sql_tvf_args(planner *p, const sql_node *f, const sql_node **out,
                      int cap)
{
    static const char *const order[][6] = {
        {"TUMBLE", "DATA", "TIMECOL", "SIZE", "OFFSET", NULL},
        {"HOP", "DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"},
        {"SESSION", "DATA", "TIMECOL", "GAP", NULL, NULL},
        {"CUMULATE", "DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"}};
    int n = 0, named = 0;
    for (const sql_node *a = f->a; a != NULL; a = a->next) {
        named += a->alias != NULL;
        if (n >= cap) {
            return tdm__sql_fail(p, a, "too many arguments");
        }
        out[n++] = a;
    }
    if (named == 0) {
        return n;
    }
    size_t k = 0;
    while (k < 4 && strcmp(order[k][0], f->text) != 0) {
        k++;
    }
    if (named != n || k == 4) {
        return tdm__sql_fail(p, f,
                             "%s: give every argument by name or "
                             "none",
                             f->text);
    }
    int m = 0;
    for (int slot = 1; slot < 6 && order[k][slot] != NULL; slot++) {
        for (const sql_node *a = f->a; a != NULL; a = a->next) {
            if (strcasecmp(a->alias, order[k][slot]) == 0) {
                out[m++] = a;
            }
        }
        if (m != slot && m < n) { /* A gap: a later one is given alone. */
            break;
        }
    }
    if (m != n) {
        return tdm__sql_fail(
            p, f,
            "%s: unknown, missing or repeated "
            "argument names (%s takes %s, %s, %s%s%s%s%s)",
            f->text, f->text, order[k][1], order[k][2], order[k][3],
            order[k][4] ? ", " : "", order[k][4] ? order[k][4] : "",
            order[k][5] ? ", " : "", order[k][5] ? order[k][5] : "");
    }
    return n;
}
