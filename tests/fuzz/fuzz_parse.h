/* SPDX-License-Identifier: MIT */
/* fuzz_parse.h - what the parser fuzz targets (fuzz_json.c, fuzz_csv.c)
 * share: the invariant check that traps, and the run of a whole input
 * through a temporary file and the line stream, where every non-blank line
 * must become a row (checked by the target's own check_row) or a dead
 * letter with a location and a reason.
 */
#ifndef TDM_FUZZ_PARSE_H
#define TDM_FUZZ_PARSE_H

#include <stdint.h>
#include <stdio.h>

#include "connect/conn.h"

#include "fuzz_check.h"

typedef void (*fuzz_check_row_fn)(const tdm__source_conf *conf,
                                  const tdm__batch *b, const tdm__row *r);

static void fuzz_on_dead(void *ud, const char *loc, const char *reason,
                         const char *raw, size_t len)
{
    int *dead = ud;
    CHECK(loc && reason && reason[0] && (raw || len == 0));
    (*dead)++;
}

/* Reads @p n bytes through a temporary file and a stream of @p conf;
 * every row goes to @p check_row.  Blank lines count in neither rows nor
 * dead letters; nothing else is lost, so rows + dead <= @p lines. */
static void fuzz_through_stream(const tdm__source_conf *conf, const uint8_t *p,
                                size_t n, int lines,
                                fuzz_check_row_fn check_row)
{
    FILE *f = tmpfile();
    tdm__stream st;
    tdm__batch *b;
    int dead = 0, rows = 0, state = TDM__STREAM_FULL;

    if (!f)
        return;
    if (n)
        CHECK(fwrite(p, 1, n, f) == n);
    fflush(f);
    rewind(f);
    b = tdm__batch_new(conf->schema, 16);
    CHECK(b != NULL);
    CHECK(tdm__stream_init(&st, conf, fileno(f), false, "fuzz") == TDM_OK);
    while (state != TDM__STREAM_END) {
        tdm__batch_clear(b);
        CHECK(tdm__stream_read(&st, conf, b, 16, 0, NULL, fuzz_on_dead, &dead,
                               0, &state) == TDM_OK);
        for (size_t i = 0; i < b->n; i++)
            check_row(conf, b, &b->rows[i]);
        rows += (int)b->n;
    }
    CHECK(rows + dead <= lines);
    tdm__stream_free(&st);
    tdm__batch_destroy(b);
    fclose(f);
}

#endif /* TDM_FUZZ_PARSE_H */
