/* SPDX-License-Identifier: MIT */
/* sql_lex.c - cuts a SQL script into tokens and statements, and drives
 * the lemon parser over each statement.
 *
 * Tokens: names (letters, digits, '_' and '$', not starting with a
 * digit; a keyword when the word is one, in any case), names in
 * backquotes (`my col`, `` for a backquote inside; never keywords),
 * integers, numbers with '.' or an exponent, strings in single quotes
 * ('' for a quote inside), operators, and ';', which ends a statement.
 * Blanks, `-- comments` to the end of the line and C-style comments (slash-star
 * to star-slash) are skipped.  Every token carries its line and column
 * (1-based, columns counting bytes), so an error can show a caret under the
 * text.
 *
 * A statement is parsed when its ';' (or the end of the script) is
 * reached: its tokens go to the parser one by one, then the end token.
 * The first error stops the script (rules X1-X4 below).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sql/sql.h"
#include "sql/sql_grammar.h"

/* The lemon parser's entry points (sql_grammar.c). */
void *tdm__sqlpAlloc(void *(*malloc_fn)(size_t));
void tdm__sqlp(void *p, int major, tdm__sql_tok minor, tdm__sql_pctx *pc);
void tdm__sqlpFree(void *p, void (*free_fn)(void *));

/* Longest statement tree, in nodes: a script is a few pages. */
#define MAX_NODES 100000

/* ---- Keywords ---- */

typedef struct kw {
    const char *word;
    int code;
} kw;

static const kw keywords[] = {
    {"ALL", TK_ALL},
    {"AND", TK_AND},
    {"AS", TK_AS},
    {"BETWEEN", TK_BETWEEN},
    {"BY", TK_BY},
    {"CASE", TK_CASE},
    {"CAST", TK_CAST},
    {"CREATE", TK_CREATE},
    {"DESC", TK_DESC},
    {"DESCRIBE", TK_DESCRIBE},
    {"DESCRIPTOR", TK_DESCRIPTOR},
    {"DISTINCT", TK_DISTINCT},
    {"ELSE", TK_ELSE},
    {"END", TK_END},
    {"ENFORCED", TK_ENFORCED},
    {"ESCAPE", TK_ESCAPE},
    {"EXPLAIN", TK_EXPLAIN},
    {"EXTRACT", TK_EXTRACT},
    {"FALSE", TK_FALSE},
    {"FOR", TK_FOR},
    {"FROM", TK_FROM},
    {"GROUP", TK_GROUP},
    {"HAVING", TK_HAVING},
    {"LIMIT", TK_LIMIT},
    {"ORDER", TK_ORDER},
    {"IN", TK_IN},
    {"INNER", TK_INNER},
    {"INSERT", TK_INSERT},
    {"INTERVAL", TK_INTERVAL},
    {"INTO", TK_INTO},
    {"IS", TK_IS},
    {"JOIN", TK_JOIN},
    {"KEY", TK_KEY},
    {"LIKE", TK_LIKE},
    {"LOCAL", TK_LOCAL},
    {"METADATA", TK_METADATA},
    {"NOT", TK_NOT},
    {"NULL", TK_NULL},
    {"ON", TK_ON},
    {"OR", TK_OR},
    {"PARTITION", TK_PARTITION},
    {"PLAN", TK_PLAN},
    {"PRIMARY", TK_PRIMARY},
    {"SELECT", TK_SELECT},
    {"SET", TK_SET},
    {"SHOW", TK_SHOW},
    {"TABLE", TK_TABLE},
    {"TABLES", TK_TABLES},
    {"TEMPORARY", TK_TEMPORARY},
    {"THEN", TK_THEN},
    {"TIME", TK_TIME},
    {"TO", TK_TO},
    {"TRUE", TK_TRUE},
    {"VIEW", TK_VIEW},
    {"VIRTUAL", TK_VIRTUAL},
    {"WATERMARK", TK_WATERMARK},
    {"WHEN", TK_WHEN},
    {"WHERE", TK_WHERE},
    {"WITH", TK_WITH},
    {"ZONE", TK_ZONE},
};

/* Punctuation and literal tokens, by code, for messages. */
static const kw names[] = {
    {"a name", TK_ID},       {"a name", TK_QUOTED},
    {"a string", TK_STRING}, {"an integer", TK_INTEGER},
    {"a number", TK_NUMBER}, {"'('", TK_LP},
    {"')'", TK_RP},          {"','", TK_COMMA},
    {"'.'", TK_DOT},         {"'='", TK_EQ},
    {"'<>'", TK_NE},         {"'<'", TK_LT},
    {"'<='", TK_LE},         {"'>'", TK_GT},
    {"'>='", TK_GE},         {"'||'", TK_CONCAT},
    {"'+'", TK_PLUS},        {"'-'", TK_MINUS},
    {"'*'", TK_STAR},        {"'/'", TK_SLASH},
    {"'%'", TK_REM},         {"'=>'", TK_ARROW},
};

/* The keyword code of @p p (@p n bytes), or TK_ID. */
static int keyword(const char *p, int n)
{
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
        if ((int)strlen(keywords[i].word) == n &&
            strncasecmp(keywords[i].word, p, (size_t)n) == 0) {
            return keywords[i].code;
        }
    }
    return TK_ID;
}

/* A token's name for messages (see sql.h). */
const char *tdm__sql_token_name(int code)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].code == code) {
            return names[i].word;
        }
    }
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
        if (keywords[i].code == code) {
            return keywords[i].word;
        }
    }
    return code == 0 ? "the end of the statement" : "a token";
}

/* ---- The scanner ---- */

typedef struct lexer {
    const char *s, *end;
    const char *p;
    int line, col;
    int err_line, err_col; /* where a lexical error began, when not at
                              the token */
    char msg[256];         /* a lexical error */
} lexer;

/* Moves one byte on, counting lines. */
static void step(lexer *L)
{
    if (*L->p == '\n') {
        L->line++;
        L->col = 1;
    } else {
        L->col++;
    }
    L->p++;
}

/* Skips blanks and comments; -1 on an unterminated comment. */
static int skip_blanks(lexer *L)
{
    for (;;) {
        if (L->p < L->end && isspace((unsigned char)*L->p)) {
            step(L);
        } else if (L->p + 1 < L->end && L->p[0] == '-' && L->p[1] == '-') {
            while (L->p < L->end && *L->p != '\n') {
                step(L);
            }
        } else if (L->p + 1 < L->end && L->p[0] == '/' && L->p[1] == '*') {
            L->err_line = L->line; /* An unclosed comment is shown here. */
            L->err_col = L->col;
            step(L);
            step(L);
            while (L->p + 1 < L->end && !(L->p[0] == '*' && L->p[1] == '/')) {
                step(L);
            }
            if (L->p + 1 >= L->end) {
                snprintf(L->msg, sizeof L->msg, "a comment is not closed");
                return -1;
            }
            step(L);
            step(L);
        } else {
            return 0;
        }
    }
}

/* Scans a quoted token (string or backquoted name) up to its closing
 * quote; a doubled quote stays inside.  -1 when not closed. */
static int scan_quoted(lexer *L, char q)
{
    step(L);
    while (L->p < L->end) {
        if (*L->p == q) {
            if (L->p + 1 < L->end && L->p[1] == q) {
                step(L);
                step(L);
                continue;
            }
            step(L);
            return 0;
        }
        step(L);
    }
    snprintf(L->msg, sizeof L->msg, "%s is not closed",
             q == '\'' ? "a string" : "a quoted name");
    return -1;
}

/* Scans a number: an integer, or a number with a fraction or exponent. */
static int scan_number(lexer *L)
{
    int code = TK_INTEGER;
    while (L->p < L->end && isdigit((unsigned char)*L->p)) {
        step(L);
    }
    if (L->p < L->end && *L->p == '.') {
        code = TK_NUMBER;
        step(L);
        while (L->p < L->end && isdigit((unsigned char)*L->p)) {
            step(L);
        }
    }
    if (L->p < L->end && (*L->p == 'e' || *L->p == 'E')) {
        const char *q = L->p + 1;
        if (q < L->end && (*q == '+' || *q == '-')) {
            q++;
        }
        if (q < L->end && isdigit((unsigned char)*q)) {
            code = TK_NUMBER;
            while (L->p < q) {
                step(L);
            }
            while (L->p < L->end && isdigit((unsigned char)*L->p)) {
                step(L);
            }
        }
    }
    return code;
}

/* Two-byte operators, then one-byte ones. */
static int scan_operator(lexer *L)
{
    static const kw two[] = {{"<>", TK_NE}, {"!=", TK_NE},     {"<=", TK_LE},
                             {">=", TK_GE}, {"||", TK_CONCAT}, {"=>", TK_ARROW},
                             {"==", TK_EQ}};
    static const char one[] = "(),.=<>+-*/%;";
    static const int one_code[] = {
        TK_LP,   TK_RP,    TK_COMMA, TK_DOT,   TK_EQ,  TK_LT,  TK_GT,
        TK_PLUS, TK_MINUS, TK_STAR,  TK_SLASH, TK_REM, TK_SEMI};
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
        if (L->p + 1 < L->end && L->p[0] == two[i].word[0] &&
            L->p[1] == two[i].word[1]) {
            step(L);
            step(L);
            return two[i].code;
        }
    }
    const char *c = strchr(one, *L->p);
    if (*L->p != '\0' && c != NULL) {
        step(L);
        return one_code[c - one];
    }
    return -1;
}

/* Scans the next token into *t; returns its code, 0 at the end, -1 on a
 * lexical error (L->msg, at t's position). */
static int next_token(lexer *L, tdm__sql_tok *t)
{
    int code;
    if (skip_blanks(L) != 0) {
        t->p = L->p;
        t->n = 0;
        t->line = L->err_line;
        t->col = L->err_col;
        return -1;
    }
    t->p = L->p;
    t->line = L->line;
    t->col = L->col;
    t->n = 0;
    if (L->p >= L->end) {
        return 0;
    }
    unsigned char c = (unsigned char)*L->p;
    if (isalpha(c) || c == '_' || c >= 0x80) {
        while (L->p < L->end &&
               (isalnum((unsigned char)*L->p) || *L->p == '_' || *L->p == '$' ||
                (unsigned char)*L->p >= 0x80)) {
            step(L);
        }
        code = keyword(t->p, (int)(L->p - t->p));
    } else if (isdigit(c) || (c == '.' && L->p + 1 < L->end &&
                              isdigit((unsigned char)L->p[1]))) {
        code = scan_number(L);
    } else if (c == '\'' || c == '`') {
        code = scan_quoted(L, (char)c) == 0
                   ? (c == '\'' ? TK_STRING : TK_QUOTED)
                   : -1;
    } else if (c == '"') {
        snprintf(L->msg, sizeof L->msg,
                 "double quotes are not SQL strings here: write 'text' for "
                 "a string or `name` for a name");
        code = -1;
    } else if ((code = scan_operator(L)) < 0) {
        snprintf(L->msg, sizeof L->msg, "unexpected character '%c'", c);
    }
    t->n = (int)(L->p - t->p);
    return code;
}

/* ---- Nodes ---- */

/* Copies quoted text without its quotes, undoubling inner ones. */
static char *unquote(const char *p, int n)
{
    char q = p[0], *out = malloc((size_t)n + 1);
    int o = 0;
    if (out == NULL) {
        return NULL;
    }
    for (int i = 1; i < n - 1; i++) {
        out[o++] = p[i];
        if (p[i] == q && i + 1 < n - 1 && p[i + 1] == q) {
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

/* Copies @p n bytes of @p p (n < 0: up to its NUL), unquoting quoted
 * tokens. */
static char *copy_text(const char *p, int n)
{
    if (n < 0) {
        n = (int)strlen(p);
    }
    if (n >= 2 && (p[0] == '\'' || p[0] == '`') && p[n - 1] == p[0]) {
        return unquote(p, n);
    }
    char *s = malloc((size_t)n + 1);
    if (s != NULL) {
        memcpy(s, p, (size_t)n);
        s[n] = '\0';
    }
    return s;
}

/* Makes a node (see sql.h). */
sql_node *tdm__sql_node(tdm__sql_pctx *pc, tdm__sqlk kind,
                        const tdm__sql_tok *at, const char *text, int n)
{
    sql_node *node;
    if (pc->nodes >= MAX_NODES || (node = calloc(1, sizeof *node)) == NULL) {
        pc->oom = 1;
        return NULL;
    }
    pc->nodes++;
    node->kind = kind;
    if (at != NULL) {
        node->line = at->line;
        node->col = at->col;
    }
    if (text != NULL && (node->text = copy_text(text, n)) == NULL) {
        free(node);
        pc->oom = 1;
        return NULL;
    }
    if (kind == SQLK_INT && node->text != NULL) {
        node->ival = strtoll(node->text, NULL, 10);
    }
    return node;
}

/* A token's text, unquoted (see sql.h). */
char *tdm__sql_tokdup(tdm__sql_pctx *pc, const tdm__sql_tok *t)
{
    char *s = copy_text(t->p, t->n);
    if (s == NULL) {
        pc->oom = 1;
    }
    return s;
}

/* Appends to a list (see sql.h). */
sql_node *tdm__sql_append(sql_node *list, sql_node *item)
{
    if (list == NULL) {
        return item;
    }
    sql_node *n = list;
    while (n->next != NULL) {
        n = n->next;
    }
    n->next = item;
    return list;
}

/* Frees a tree (see sql.h).  Lists are walked, not recursed along. */
void tdm__sql_free(sql_node *n)
{
    while (n != NULL) {
        sql_node *next = n->next;
        tdm__sql_free(n->a);
        tdm__sql_free(n->b);
        tdm__sql_free(n->c);
        tdm__sql_free(n->d);
        free(n->text);
        free(n->qual);
        free(n->alias);
        free(n->unit);
        free(n);
        n = next;
    }
}

/* Records the first syntax error (see sql.h). */
void tdm__sql_syntax_error(tdm__sql_pctx *pc, const tdm__sql_tok *t,
                           const char *expected)
{
    if (pc->error) {
        return;
    }
    pc->error = 1;
    if (t == NULL) {
        snprintf(pc->msg, sizeof pc->msg, "%s", expected);
        return;
    }
    pc->line = t->line;
    pc->col = t->col;
    if (t->n == 0) {
        snprintf(pc->msg, sizeof pc->msg, "the statement ends too early%s%s",
                 expected ? ": expected " : "", expected ? expected : "");
    } else {
        snprintf(pc->msg, sizeof pc->msg, "unexpected \"%.*s\"%s%s",
                 t->n > 40 ? 40 : t->n, t->p, expected ? ": expected " : "",
                 expected ? expected : "");
    }
}

/* ---- Statements ---- */

/* Grows the statement array by one; NULL when out of memory. */
static tdm__sql_stmt *push_stmt(tdm__sql_stmt **arr, int *n)
{
    tdm__sql_stmt *a = realloc(*arr, (size_t)(*n + 1) * sizeof *a);
    if (a == NULL) {
        return NULL;
    }
    *arr = a;
    memset(&a[*n], 0, sizeof a[*n]);
    return &a[(*n)++];
}

/* Parses one statement: tokens from @p L up to ';' or the end.  Returns
 * 1 with *st filled, 0 at the end of the script, -1 on an error (msg),
 * -2 when out of memory. */
static int parse_one(lexer *L, void *parser, tdm__sql_stmt *st, char *msg,
                     size_t msg_size, int *line, int *col)
{
    tdm__sql_pctx pc = {0};
    tdm__sql_tok t, first = {0};
    int code, any = 0;
    while ((code = next_token(L, &t)) > 0 && code != TK_SEMI) {
        if (!any) {
            first = t;
            any = 1;
        }
        pc.last = t;
        tdm__sqlp(parser, code, t, &pc);
        if (pc.error || pc.oom) {
            break;
        }
    }
    if (code < 0) { /* X1: a lexical error stops the script. */
        snprintf(msg, msg_size, "%s", L->msg);
        *line = t.line;
        *col = t.col;
        tdm__sql_free(pc.stmt);
        return -1;
    }
    if (!any && code == 0) {
        return 0;
    }
    if (!pc.error && !pc.oom) {
        tdm__sql_tok end = t;
        end.n = 0;
        tdm__sqlp(parser, 0, end, &pc);
    }
    if (pc.oom) { /* X2 */
        tdm__sql_free(pc.stmt);
        return -2;
    }
    if (pc.error) { /* X3: the first syntax error stops the script. */
        snprintf(msg, msg_size, "%s", pc.msg);
        *line = pc.line;
        *col = pc.col;
        tdm__sql_free(pc.stmt);
        return -1;
    }
    st->tree = pc.stmt; /* X4: an empty statement (";;") has no tree. */
    st->line = first.line;
    st->col = first.col;
    st->text = first.p;
    st->len = any ? (size_t)(t.p - first.p) : 0;
    return 1;
}

/* Parses a script (see sql.h). */
int tdm__sql_parse(const char *text, size_t len, tdm__sql_stmt **out,
                   int *n_out, char *msg, size_t msg_size, int *line, int *col)
{
    lexer L = {.s = text, .end = text + len, .p = text, .line = 1, .col = 1};
    *out = NULL;
    *n_out = 0;
    for (;;) {
        tdm__sql_stmt one;
        void *parser = tdm__sqlpAlloc(malloc);
        if (parser == NULL) {
            return -2;
        }
        memset(&one, 0, sizeof one);
        int rc = parse_one(&L, parser, &one, msg, msg_size, line, col);
        tdm__sqlpFree(parser, free);
        if (rc <= 0) {
            return rc == 0 ? *n_out : rc;
        }
        if (one.tree == NULL) {
            continue;
        }
        tdm__sql_stmt *st = push_stmt(out, n_out);
        if (st == NULL) {
            tdm__sql_free(one.tree);
            return -2;
        }
        *st = one;
    }
}

/* Where the first statement of a text ends (see sql.h): the lexer's own
 * strings, quoted names and comments, so a ';' inside them never ends
 * one.  Something not closed yet waits for more text; another lexical
 * error is stepped over here and reported when the statement is parsed. */
size_t tdm__sql_statement_end(const char *text, size_t len)
{
    lexer L = {.s = text, .end = text + len, .p = text, .line = 1, .col = 1};
    tdm__sql_tok t;
    for (;;) {
        int code = next_token(&L, &t);
        if (code == TK_SEMI) {
            return (size_t)(L.p - text);
        }
        if (code == 0 || (code < 0 && strstr(L.msg, "not closed") != NULL)) {
            return 0;
        }
        if (code < 0 && L.p == t.p) {
            step(&L);
        }
    }
}

/* Frees parsed statements (see sql.h). */
void tdm__sql_stmts_free(tdm__sql_stmt *s, int n)
{
    for (int i = 0; s != NULL && i < n; i++) {
        tdm__sql_free(s[i].tree);
    }
    free(s);
}

/* Prints an error with the script's line and a caret (see sql.h). */
void tdm__sql_caret(FILE *err, const char *file, const char *text, size_t len,
                    int line, int col, const char *msg)
{
    const char *p = text, *end = text + len;
    fprintf(err, "%s:%d:%d: %s\n", file, line, col, msg);
    for (int l = 1; l < line && p < end; p++) {
        if (*p == '\n') {
            l++;
        }
    }
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    int n = (int)((eol != NULL ? eol : end) - p);
    if (p >= end && line > 1) {
        return;
    }
    fprintf(err, "  %.*s\n  ", n, p);
    for (int i = 1; i < col && i <= n; i++) {
        fputc(p[i - 1] == '\t' ? '\t' : ' ', err);
    }
    fputs("^\n", err);
}

/* ---- Intervals ---- */

/* Milliseconds in one @p unit (SECOND, MINUTES, ...); 0 if unknown. */
static int64_t unit_ms(const char *unit)
{
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {{"MILLISECOND", 1},
                 {"SECOND", 1000},
                 {"MINUTE", 60000},
                 {"HOUR", 3600000},
                 {"DAY", 86400000}};
    size_t n = strlen(unit);
    if (n > 1 && (unit[n - 1] == 's' || unit[n - 1] == 'S')) {
        n--; /* Flink accepts SECONDS, MINUTES, ... */
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].name) == n &&
            strncasecmp(units[i].name, unit, n) == 0) {
            return units[i].ms;
        }
    }
    return 0;
}

/* INTERVAL 'amount' unit in milliseconds (see sql.h): the amount is a
 * decimal number ("10", "0.5"); -1 when it or the unit is not one. */
int64_t tdm__sql_interval_ms(const char *amount, const char *unit)
{
    int64_t per = unit_ms(unit);
    char *end;
    double v = strtod(amount, &end);
    while (*end == ' ') {
        end++;
    }
    if (per == 0 || end == amount || *end != '\0' || v < 0 ||
        v * (double)per > 9.0e15) {
        return -1;
    }
    double ms = v * (double)per;
    if (ms != (double)(int64_t)ms) {
        return -1; /* Finer than a millisecond. */
    }
    return (int64_t)ms;
}
