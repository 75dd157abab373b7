/* SPDX-License-Identifier: MIT */
/* expr_lex.c - the bottom of the expression compiler: the tokenizer, the
 * parser's error reporting, its nesting bound and the "did you mean"
 * of unknown names.  The parsers above (expr_parse.c) pull
 * one token at a time with tdm__expr_next; there is no token array, and
 * p->pos stays just past p->cur so that tdm__expr_next_is_lp can look
 * one token ahead without reading it.
 *
 * Tokens: numbers (T_INT digits only, whose value and sign the parser
 * decides, so that -9223372036854775808 is INT64_MIN; T_NUM with a
 * fraction or an exponent), 'strings' and "quoted names" (a doubled
 * quote is one), bare words, and operators.  Only AND, OR, NOT, IS,
 * NULL, TRUE and FALSE are keywords here; every other keyword (CASE,
 * BETWEEN, FROM, units, type names...) is a bare word that the parser
 * recognises with tdm__expr_kw where a field cannot stand, so a field of
 * that name keeps working.
 *
 * Errors: the first one wins (tdm__expr_perr ignores later ones) and
 * names its 1-based column; a lexical error leaves T_END as the current
 * token, so every parser loop ends at it.  See expr_int.h for how the
 * files of the compiler fit together.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/expr_int.h"

/* Nesting (parentheses, NOT, unary minus, CASE, calls) the parser
 * follows. */
#define DEPTH_MAX 64

/* ---- Errors ---- */

/* Records the first error, prefixed with its 1-based column. */
void tdm__expr_perr(parser *p, size_t at, const char *fmt, ...)
{
    if (p->err != TDM_OK)
        return;
    p->err = TDM_ERR_INVAL;
    if (!p->errbuf || p->errn == 0)
        return;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->errbuf, p->errn, "column %zu: %s", at + 1, msg);
}

/* Records "out of memory" as the first error. */
void tdm__expr_nomem(parser *p)
{
    if (p->err == TDM_OK) {
        p->err = TDM_ERR_NOMEM;
        if (p->errbuf && p->errn)
            snprintf(p->errbuf, p->errn, "out of memory");
    }
}

/* "the end", or the token's text quoted (shortened when long). */
const char *tdm__expr_tok_desc(const parser *p, const tok *t, char *buf,
                               size_t n)
{
    if (t->kind == T_END)
        return "the end";
    int l = t->len > 24 ? 24 : (int)t->len;
    snprintf(buf, n, "\"%.*s%s\"", l, p->src + t->at, t->len > 24 ? "..." : "");
    return buf;
}

/* ---- Tokens ---- */

static bool ident_start(int c)
{
    return isalpha(c) || c == '_';
}

static bool ident_char(int c)
{
    return isalnum(c) || c == '_' || c == '.';
}

/* Whether s[0..len) is the upper-case word @p kw, ignoring case. */
bool tdm__expr_word_is(const char *s, size_t len, const char *kw)
{
    size_t kl = strlen(kw);
    if (len != kl)
        return false;
    for (size_t i = 0; i < kl; i++)
        if (toupper((unsigned char)s[i]) != kw[i])
            return false;
    return true;
}

/* The current token is the bare word @p w (a keyword of its context,
 * such as THEN, which is otherwise a field name). */
bool tdm__expr_kw(const parser *p, const char *w)
{
    return p->cur.kind == T_IDENT && !p->cur.quoted &&
           tdm__expr_word_is(p->src + p->cur.at, p->cur.len, w);
}

/* A lexical error at @p i: the token becomes T_END. */
static bool lex_fail(parser *p, size_t i)
{
    p->cur = (tok){T_END, i, 0, false};
    return false;
}

/* The end of the digits starting at @p j. */
static size_t skip_digits(const char *s, size_t j)
{
    while (isdigit((unsigned char)s[j]))
        j++;
    return j;
}

/* A number at @p i: digits, an optional fraction and exponent (T_NUM)
 * or digits only (T_INT); *j receives its end. */
static bool lex_number(parser *p, size_t i, tok *t, size_t *j)
{
    const char *s = p->src;
    bool dec = false;
    size_t e = skip_digits(s, i);
    if (s[e] == '.') {
        dec = true;
        e = skip_digits(s, e + 1);
    }
    if (s[e] == 'e' || s[e] == 'E') {
        size_t k = e + 1;
        if (s[k] == '+' || s[k] == '-')
            k++;
        if (isdigit((unsigned char)s[k])) {
            dec = true;
            e = skip_digits(s, k);
        }
    }
    if (ident_char((unsigned char)s[e])) {
        size_t k = e;
        while (ident_char((unsigned char)s[k]))
            k++;
        tdm__expr_perr(p, i, "malformed number \"%.*s\"", (int)(k - i), s + i);
        return lex_fail(p, i);
    }
    t->kind = dec ? T_NUM : T_INT;
    *j = e;
    return true;
}

/* A name or a keyword at @p i. */
static void lex_word(parser *p, size_t i, tok *t, size_t *j)
{
    static const struct {
        const char *w;
        tok_kind k;
    } kws[] = {{"AND", T_AND},    {"OR", T_OR},     {"NOT", T_NOT},
               {"IS", T_IS},      {"NULL", T_NULL}, {"TRUE", T_TRUE},
               {"FALSE", T_FALSE}};
    const char *s = p->src;
    size_t e = i + 1;
    while (ident_char((unsigned char)s[e]))
        e++;
    t->kind = T_IDENT;
    for (size_t k = 0; k < sizeof kws / sizeof kws[0]; k++)
        if (tdm__expr_word_is(s + i, e - i, kws[k].w))
            t->kind = kws[k].k;
    *j = e;
}

/* A string or a quoted field name at @p i (quote @p c); a doubled quote
 * is one. */
static bool lex_quoted(parser *p, size_t i, unsigned char c, tok *t, size_t *j)
{
    const char *s = p->src;
    size_t e = i + 1;
    for (;;) {
        if (s[e] == 0) {
            tdm__expr_perr(p, i, "unterminated %s (the closing %c is missing)",
                           c == '\'' ? "string" : "quoted field name", c);
            return lex_fail(p, i);
        }
        if ((unsigned char)s[e] == c) {
            if ((unsigned char)s[e + 1] != c)
                break;
            e++;
        }
        e++;
    }
    t->kind = c == '\'' ? T_STR : T_IDENT;
    t->quoted = c == '"';
    *j = e + 1;
    return true;
}

/* A comparison starting with '=', '!', '<' or '>' at @p i; *j is the
 * byte after its first character and moves past a second one. */
static bool lex_compare(parser *p, size_t i, unsigned char c, tok *t, size_t *j)
{
    char d = p->src[*j];
    switch (c) {
    case '=':
        t->kind = T_EQ;
        *j += d == '=';
        return true;
    case '!':
        if (d != '=') {
            tdm__expr_perr(p, i, "expected \"!=\", got \"!\"");
            return lex_fail(p, i);
        }
        t->kind = T_NE;
        *j += 1;
        return true;
    case '<':
        t->kind = d == '=' ? T_LE : d == '>' ? T_NE : T_LT;
        *j += d == '=' || d == '>';
        return true;
    default:
        t->kind = d == '=' ? T_GE : T_GT;
        *j += d == '=';
        return true;
    }
}

/* An operator or parenthesis at @p i. */
static bool lex_punct(parser *p, size_t i, unsigned char c, tok *t, size_t *j)
{
    switch (c) {
    case '(':
        t->kind = T_LP;
        return true;
    case ')':
        t->kind = T_RP;
        return true;
    case '+':
        t->kind = T_PLUS;
        return true;
    case '-':
        t->kind = T_MINUS;
        return true;
    case '*':
        t->kind = T_STAR;
        return true;
    case '/':
        t->kind = T_SLASH;
        return true;
    case '%':
        t->kind = T_PCT;
        return true;
    case ',':
        t->kind = T_COMMA;
        return true;
    case '|':
        if (p->src[*j] != '|') {
            tdm__expr_perr(p, i, "expected \"||\", got \"|\"");
            return lex_fail(p, i);
        }
        t->kind = T_CONCAT;
        *j += 1;
        return true;
    case '=':
    case '!':
    case '<':
    case '>':
        return lex_compare(p, i, c, t, j);
    }
    if (c >= 0x20 && c < 0x7f)
        tdm__expr_perr(p, i, "unexpected character '%c'", c);
    else
        tdm__expr_perr(p, i, "unexpected byte 0x%02x", c);
    return lex_fail(p, i);
}

/* Reads the next token into p->cur; a lexical error sets p->err and
 * leaves T_END. */
void tdm__expr_next(parser *p)
{
    const char *s = p->src;
    size_t i = p->pos;
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    tok t = {T_END, i, 0, false};
    unsigned char c = (unsigned char)s[i];
    if (c == 0) {
        p->cur = t;
        p->pos = i;
        return;
    }
    size_t j = i + 1;
    bool ok;
    if (isdigit(c) || (c == '.' && isdigit((unsigned char)s[i + 1])))
        ok = lex_number(p, i, &t, &j);
    else if (ident_start(c))
        ok = (lex_word(p, i, &t, &j), true);
    else if (c == '\'' || c == '"')
        ok = lex_quoted(p, i, c, &t, &j);
    else
        ok = lex_punct(p, i, c, &t, &j);
    if (!ok)
        return;
    t.len = j - i;
    p->cur = t;
    p->pos = j;
}

/* ---- What the parsers ask of the tokens ---- */

/* The next token (not yet read) is "(": a name before it is a call. */
bool tdm__expr_next_is_lp(const parser *p)
{
    size_t i = p->pos;
    while (p->src[i] == ' ' || p->src[i] == '\t' || p->src[i] == '\n' ||
           p->src[i] == '\r')
        i++;
    return p->src[i] == '(';
}

/* Reads a token of kind @p k (described by @p what), or fails. */
bool tdm__expr_expect_tok(parser *p, tok_kind k, const char *what)
{
    char d[64];
    if (p->err != TDM_OK)
        return false;
    if (p->cur.kind != k) {
        tdm__expr_perr(p, p->cur.at, "expected %s, got %s", what,
                       tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
        return false;
    }
    tdm__expr_next(p);
    return p->err == TDM_OK;
}

/* Reads the bare word @p w, or fails. */
bool tdm__expr_expect_word(parser *p, const char *w)
{
    char d[64];
    if (p->err != TDM_OK)
        return false;
    if (!tdm__expr_kw(p, w)) {
        tdm__expr_perr(p, p->cur.at, "expected %s, got %s", w,
                       tdm__expr_tok_desc(p, &p->cur, d, sizeof d));
        return false;
    }
    tdm__expr_next(p);
    return p->err == TDM_OK;
}

/* ---- Nesting and names ---- */

/* Enters one level of nesting; false (and an error) past DEPTH_MAX. */
bool tdm__expr_enter(parser *p)
{
    if (++p->depth > DEPTH_MAX) {
        tdm__expr_perr(p, p->cur.at,
                       "the expression is nested too deeply (more "
                       "than %d levels)",
                       DEPTH_MAX);
        return false;
    }
    return true;
}

/* Edit distance of a and b (case-insensitive; an adjacent transposition
 * is one edit), capped at 9. */
int tdm__expr_distance(const char *a, size_t la, const char *b, size_t lb)
{
    int rows[3][64]; /* rows i - 2, i - 1, i, cycled */
    if (la >= 63 || lb >= 63)
        return 9;
    for (size_t j = 0; j <= lb; j++)
        rows[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int *cur = rows[i % 3], *prev = rows[(i - 1) % 3];
        int *prev2 = rows[(i + 1) % 3];
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]);
            int cb = tolower((unsigned char)b[j - 1]);
            int best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                cb == tolower((unsigned char)a[i - 2]) &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
    }
    int d = rows[la % 3][lb];
    return d > 9 ? 9 : d;
}

/* The schema field closest to name[0..len), or NULL when none is near
 * (at most 2 edits, or a third of the name's length). */
const char *tdm__expr_closest_field(const tdm__schema *s, const char *name,
                                    size_t len)
{
    const char *best = NULL;
    int best_d = len / 3 > 2 ? (int)(len / 3) + 1 : 3;
    for (int i = 0; i < s->n; i++) {
        int d = tdm__expr_distance(name, len, s->fields[i].name,
                                   strlen(s->fields[i].name));
        if (d < best_d) {
            best_d = d;
            best = s->fields[i].name;
        }
    }
    return best;
}

/* The field of @p s closest to @p name, or NULL (see expr.h). */
const char *tdm__expr_closest(const tdm__schema *s, const char *name)
{
    return tdm__expr_closest_field(s, name, strlen(name));
}
