/* SPDX-License-Identifier: MIT */
/* fuzz_sql.c - libFuzzer target for the SQL front end (src/sql): the
 * lexer, the lemon parser and the planner.
 *
 * The whole input (cut at its first NUL) is a script.  Invariants (a
 * violation is __builtin_trap()): tdm__sql_parse returns a statement
 * count, -1 or -2; on -1 the error's line and column lie inside the
 * text (the column may be one past a line's end) and its message is not
 * empty; every statement tree is freed without a leak (ASan).  Then the
 * whole loader runs the script with every query explained (planned into
 * a scratch job, nothing read or run): it returns 0, 1 or 3, and 3
 * exactly when it counted an error.  tests/fuzz/replay.c runs
 * tests/fuzz/corpus_sql/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "sql/sql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks an error position against the text. */
static void check_position(const char *text, size_t len, int line, int col)
{
    int lines = 1, longest = 0, cur = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n') {
            lines++;
            cur = 0;
        } else if (++cur > longest) {
            longest = cur;
        }
    }
    CHECK(line >= 1 && line <= lines);
    CHECK(col >= 1 && col <= longest + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    char *text = malloc(size + 1), msg[512] = "";
    tdm__sql_stmt *st = NULL;
    int n = 0, line = 0, col = 0;
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    size_t len = strlen(text);
    if (sink == NULL) {
        sink = fopen("/dev/null", "w");
    }
    int rc = tdm__sql_parse(text, len, &st, &n, msg, sizeof msg, &line, &col);
    CHECK(rc >= -2);
    if (rc == -1) {
        CHECK(msg[0] != '\0');
        check_position(text, len, line, col);
    }
    tdm__sql_stmts_free(st, n);
    tdm__cli_job *cj = NULL;
    bool runs = false;
    rc =
        tdm__sql_load_text("fuzz.sql", text, len, true, sink, &cj, &runs, sink);
    CHECK(rc == 0 || rc == 1 || rc == 3);
    CHECK(rc == 1 || (rc == 3) == (cj != NULL && cj->errors > 0));
    tdm__cli_job_free(cj);
    free(text);
    return 0;
}
