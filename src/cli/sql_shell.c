/* SPDX-License-Identifier: MIT */
/* sql_shell.c - `tidemark sql` without a script: Flink's SQL client, in
 * a terminal.
 *
 * Lines are read with Debian's libedit (line editing, and the history of
 * earlier sessions in ~/.tidemark_history) when standard input is a
 * terminal, plainly otherwise (a pipe: the same session, no prompt).
 * Text gathers until a ';' outside strings, quoted names and comments
 * ends a statement (S1, found by the SQL lexer itself); each statement then
 * runs in the session (src/sql, tdm__sql_session_exec): DDL, SET, SHOW TABLES,
 * DESCRIBE and EXPLAIN at once, a query as a job of its own whose rows stream
 * to the terminal as its windows fire, until its input ends or Ctrl-C stops it
 * (S2).  An error is shown with a caret and the session goes on (S3).
 * QUIT; or EXIT; or the end of input leaves (S4).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <editline/readline.h>

#include "cli.h"
#include "sql/sql.h"

#define HISTORY_FILE ".tidemark_history"
#define HISTORY_MAX 1000

static const char shell_help[] =
    "Statements end with ';'.  CREATE TABLE ... WITH (...); SET 'key' = "
    "'value';\n"
    "SHOW TABLES; DESCRIBE t; EXPLAIN query; INSERT INTO t SELECT ...; "
    "SELECT ...;\n"
    "A query runs until its input ends or Ctrl-C stops it; its rows are "
    "printed\n"
    "as they fire.  QUIT; leaves.  docs/sql.md has the dialect.\n";

/* Whether @p s is only blanks and ';'. */
static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ';' && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' &&
            s[i] != '\r') {
            return false;
        }
    }
    return true;
}

/* The shell's own words: QUIT, EXIT, HELP (any case, then ';').
 * Returns 1 to leave, 2 when handled, 0 for SQL. */
static int own_word(const char *s, size_t n)
{
    char w[16];
    size_t k = 0;
    while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
        s++;
        n--;
    }
    while (k < n && k + 1 < sizeof w && s[k] != ';' && s[k] != ' ' &&
           s[k] != '\n') {
        w[k] = s[k];
        k++;
    }
    w[k] = '\0';
    if (!blank(s + k, n - k)) {
        return 0;
    }
    if (strcasecmp(w, "QUIT") == 0 || strcasecmp(w, "EXIT") == 0) {
        return 1;
    }
    if (strcasecmp(w, "HELP") == 0) {
        fputs(shell_help, stdout);
        return 2;
    }
    return 0;
}

/* The shell's state. */
typedef struct shell {
    tdm__sql_session *session;
    tdm__sql_run_fn *run;
    void *ud;
    bool tty;
    char *buf; /* text not run yet */
    size_t len, cap;
    int rc; /* the last failure */
    bool quit;
} shell;

/* Appends a line and its newline; -1 when out of memory. */
static int gather(shell *sh, const char *line)
{
    size_t n = strlen(line);
    if (sh->len + n + 2 > sh->cap) {
        size_t cap = (sh->len + n + 2) * 2;
        char *b = realloc(sh->buf, cap);
        if (b == NULL) {
            return -1;
        }
        sh->buf = b;
        sh->cap = cap;
    }
    memcpy(sh->buf + sh->len, line, n);
    sh->len += n;
    sh->buf[sh->len++] = '\n';
    sh->buf[sh->len] = '\0';
    return 0;
}

/* Runs one statement's text (S2, S3). */
static void run_text(shell *sh, char *text, size_t n)
{
    char keep = text[n];
    int word = own_word(text, n);
    if (word == 1) {
        sh->quit = true;
        return;
    }
    while (word == 0 && n > 0 &&
           (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r')) {
        text++; /* Positions count from the statement's first line. */
        n--;
    }
    if (word == 0 && !blank(text, n)) {
        text[n] = '\0';
        if (sh->tty) {
            add_history(text);
        }
        int rc = tdm__sql_session_exec(sh->session, "<stdin>", text, n, sh->run,
                                       sh->ud);
        sh->rc = rc != TDM_EXIT_OK ? rc : sh->rc;
        text[n] = keep;
        fflush(stdout);
    }
}

/* Runs every complete statement in the buffer and keeps the rest. */
static void drain(shell *sh)
{
    size_t end;
    while (!sh->quit && (end = tdm__sql_statement_end(sh->buf, sh->len)) > 0) {
        run_text(sh, sh->buf, end);
        memmove(sh->buf, sh->buf + end, sh->len - end + 1);
        sh->len -= end;
    }
}

/* Reads one line: with libedit on a terminal, plainly otherwise; NULL at
 * the end of input.  Free with free(). */
static char *read_line(shell *sh)
{
    if (sh->tty) {
        return readline(blank(sh->buf, sh->len) ? "tidemark> " : "       -> ");
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        return NULL;
    }
    if (n > 0 && line[n - 1] == '\n') {
        line[n - 1] = '\0';
    }
    return line;
}

/* The history file's path, or NULL without $HOME. */
static const char *history_path(char *buf, size_t n)
{
    const char *home = getenv("HOME");
    if (home == NULL || home[0] == '\0') {
        return NULL;
    }
    snprintf(buf, n, "%s/%s", home, HISTORY_FILE);
    return buf;
}

/* Runs the shell (see cli.h). */
int tdm__cli_sql_shell(const char *init, tdm__sql_run_fn *run, void *ud)
{
    shell sh = {.run = run, .ud = ud, .tty = isatty(STDIN_FILENO) != 0};
    char path[4096];
    const char *hist = sh.tty ? history_path(path, sizeof path) : NULL;
    if ((sh.session = tdm__sql_session_new(stdout, stderr)) == NULL ||
        gather(&sh, "") != 0) {
        fprintf(stderr, "tidemark: out of memory\n");
        tdm__sql_session_free(sh.session);
        return TDM_EXIT_RUNTIME;
    }
    sh.len = 0;
    sh.buf[0] = '\0';
    if (init != NULL) {
        size_t n = 0;
        char *text = tdm__cli_read_file(init, &n);
        if (text == NULL) {
            fprintf(stderr, "%s: cannot read the script\n", init);
            sh.rc = TDM_EXIT_RUNTIME;
        } else {
            sh.rc = tdm__sql_session_exec(sh.session, init, text, n, run, ud);
            free(text);
        }
    }
    if (sh.tty) {
        using_history();
        stifle_history(HISTORY_MAX);
        if (hist != NULL) {
            read_history(hist);
        }
        printf("tidemark sql: statements end with ';', HELP; for help, "
               "QUIT; to leave.\n");
    }
    char *line;
    while (!sh.quit && (line = read_line(&sh)) != NULL) {
        int bad = gather(&sh, line);
        free(line);
        if (bad != 0) {
            fprintf(stderr, "tidemark: out of memory\n");
            sh.rc = TDM_EXIT_RUNTIME;
            break;
        }
        drain(&sh);
    }
    if (!sh.quit && !blank(sh.buf, sh.len)) { /* S4: a last statement. */
        run_text(&sh, sh.buf, sh.len);
    }
    if (hist != NULL) {
        write_history(hist);
    }
    free(sh.buf);
    tdm__sql_session_free(sh.session);
    return sh.tty ? TDM_EXIT_OK : sh.rc;
}
