/* SPDX-License-Identifier: MIT */
/* sql_grammar.y - the grammar of tidemark's SQL (a subset of Flink SQL),
 * for Debian's lemon (the LALR(1) generator SQLite's parser is made
 * with).  CMake runs `lemon` on it at build time; the generated
 * sql_grammar.c is never edited or kept in the repository.
 *
 * One statement is parsed at a time: the lexer (sql_lex.c) splits the
 * script at ';' and feeds each statement's tokens, then the end token.
 * Every rule builds sql_node trees (sql.h); a reduced statement lands in
 * pc->stmt.  Non-reserved words (KEY, TABLES, WATERMARK, ...) fall back
 * to identifiers, so they stay usable as column names.  Precedence, from
 * the loosest: OR, AND, NOT, comparisons with IS/BETWEEN/IN/LIKE, ||,
 * + -, * / %, unary minus - as in Flink (Calcite).  docs/sql.md has the
 * language.
 */

%name tdm__sqlp
%token_prefix TK_
%token_type { tdm__sql_tok }
%default_type { sql_node * }
%default_destructor { tdm__sql_free($$); }
%extra_argument { tdm__sql_pctx *pc }
%start_symbol input

%include {
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "sql/sql.h"
#include "sql/sql_grammar.h"
#include <stdio.h>

#define N(kind, tok) tdm__sql_node(pc, SQLK_##kind, &(tok), NULL, 0)
#define NT(kind, tok) tdm__sql_node(pc, SQLK_##kind, &(tok), (tok).p, (tok).n)
#define NS(kind, tok, s) tdm__sql_node(pc, SQLK_##kind, &(tok), (s), -1)

/* Fills the two children of a binary node (or frees them). */
static sql_node *bin(sql_node *op, sql_node *l, sql_node *r)
{
    if (op == NULL) {
        tdm__sql_free(l);
        tdm__sql_free(r);
        return NULL;
    }
    op->a = l;
    op->b = r;
    if (l != NULL) { /* Errors point at where the expression starts. */
        op->line = l->line;
        op->col = l->col;
    }
    return op;
}

/* "KEYWORD@line:col" of a refused clause's keyword. */
static char *tail_of(tdm__sql_pctx *pc, const tdm__sql_tok *k)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.*s@%d:%d", k->n > 16 ? 16 : k->n, k->p,
             k->line, k->col);
    char *s = strdup(buf);
    if (s == NULL) {
        pc->oom = 1;
    }
    return s;
}

/* Upper-cases a node's text (function and type names). */
static sql_node *upper(sql_node *n)
{
    for (char *p = n != NULL ? n->text : NULL; p != NULL && *p; p++) {
        if (*p >= 'a' && *p <= 'z') {
            *p = (char)(*p - 'a' + 'A');
        }
    }
    return n;
}
}

%syntax_error {
    /* What could come here: the terminals this state shifts (a guess
     * that leaves out those needing a reduction first, which is what a
     * reader wants to see: the next word, not a grammar). */
    char expected[256] = "";
    size_t used = 0;
    for (int i = 1; i < YYNTOKEN && used + 40 < sizeof expected; i++) {
        if (yyFallback[i] != 0 ||
            yy_find_shift_action((YYCODETYPE)i, yypParser->yytos->stateno) >=
                YY_ERROR_ACTION ||
            strstr(expected, tdm__sql_token_name(i)) != NULL) {
            continue;
        }
        used += (size_t)snprintf(expected + used, sizeof expected - used,
                                 "%s%s", used ? ", " : "",
                                 tdm__sql_token_name(i));
    }
    (void)yymajor;
    tdm__sql_syntax_error(pc, &TOKEN, expected[0] ? expected : NULL);
}
%stack_overflow {
    if (!pc->error) {
        pc->error = 1;
        pc->line = pc->last.line;
        pc->col = pc->last.col;
        snprintf(pc->msg, sizeof pc->msg, "nesting too deep here (at most "
                                          "about 200 open levels)");
    }
}
%stack_size 200

%fallback ID KEY TABLES WATERMARK METADATA VIRTUAL ENFORCED DESCRIPTOR
    PARTITION EXTRACT ESCAPE TEMPORARY VIEW SHOW DESCRIBE DESC EXPLAIN PLAN
    TO LOCAL TIME ZONE LIMIT.

/* The end of a statement: the lexer splits at it, never feeds it. */
%token SEMI.

%left OR.
%left AND.
%right NOT.
%left IS BETWEEN IN LIKE EQ NE.
%right ESCAPE.
%left LT LE GT GE.
%left CONCAT.
%left PLUS MINUS.
%left STAR SLASH REM.
%right UMINUS.

input ::= stmt(S).               { pc->stmt = S; }
input ::= .

/* ---- Statements ---- */

stmt(A) ::= CREATE temp TABLE nm(N) LP coldefs(C) RP withopts(O).
    { A = NT(CREATE_TABLE, N); if (A) { A->a = C; A->b = O; } else { tdm__sql_free(C); tdm__sql_free(O); } }
stmt(A) ::= CREATE temp VIEW nm(N) AS query(Q).
    { A = NT(CREATE_VIEW, N); if (A) A->a = Q; else tdm__sql_free(Q); }
stmt(A) ::= SET STRING(K) EQ STRING(V).
    { A = NT(SET, K); if (A) { A->a = NT(STR, V); } }
stmt(A) ::= SET(S).               { A = N(SET, S); }
stmt(A) ::= INSERT INTO nm(N) query(Q).
    { A = NT(INSERT, N); if (A) A->a = Q; else tdm__sql_free(Q); }
stmt(A) ::= query(Q).             { A = Q; }
stmt(A) ::= EXPLAIN(E) explained(S).
    { A = N(EXPLAIN, E); if (A) A->a = S; else tdm__sql_free(S); }
stmt(A) ::= EXPLAIN(E) PLAN FOR explained(S).
    { A = N(EXPLAIN, E); if (A) A->a = S; else tdm__sql_free(S); }
stmt(A) ::= SHOW(S) TABLES.       { A = N(SHOW_TABLES, S); }
stmt(A) ::= DESCRIBE nm(N).       { A = NT(DESCRIBE, N); }
stmt(A) ::= DESC nm(N).           { A = NT(DESCRIBE, N); }

explained(A) ::= INSERT INTO nm(N) query(Q).
    { A = NT(INSERT, N); if (A) A->a = Q; else tdm__sql_free(Q); }
explained(A) ::= query(Q).        { A = Q; }

%type temp { int }
%destructor temp { (void)$$; }
temp(A) ::= .                     { A = 0; }
temp(A) ::= TEMPORARY.            { A = 1; }

%type nm { tdm__sql_tok }
%destructor nm { (void)$$; }
nm(A) ::= ID(X).                  { A = X; }
nm(A) ::= QUOTED(X).              { A = X; }

/* ---- CREATE TABLE ---- */

coldefs(A) ::= coldef(C).                       { A = C; }
coldefs(A) ::= coldefs(L) COMMA coldef(C).      { A = tdm__sql_append(L, C); }

coldef(A) ::= nm(N) typename(T).
    { A = NT(COLUMN, N); if (A) A->a = T; else tdm__sql_free(T); }
coldef(A) ::= nm(N) typename(T) METADATA.
    { A = NT(COLUMN, N); if (A) { A->a = T; A->b = NS(STR, N, ""); } else tdm__sql_free(T); }
coldef(A) ::= nm(N) typename(T) METADATA FROM STRING(K).
    { A = NT(COLUMN, N); if (A) { A->a = T; A->b = NT(STR, K); } else tdm__sql_free(T); }
coldef(A) ::= nm(N) typename(T) METADATA VIRTUAL.
    { A = NT(COLUMN, N); if (A) { A->a = T; A->b = NS(STR, N, ""); } else tdm__sql_free(T); }
coldef(A) ::= nm(N) typename(T) METADATA FROM STRING(K) VIRTUAL.
    { A = NT(COLUMN, N); if (A) { A->a = T; A->b = NT(STR, K); } else tdm__sql_free(T); }
coldef(A) ::= nm(N) AS expr(E).
    { A = NT(COMPUTED, N); if (A) A->a = E; else tdm__sql_free(E); }
coldef(A) ::= WATERMARK FOR nm(N) AS expr(E).
    { A = NT(WATERMARK, N); if (A) A->a = E; else tdm__sql_free(E); }
coldef(A) ::= PRIMARY(P) KEY LP idlist(L) RP NOT ENFORCED.
    { A = N(PKEY, P); if (A) A->a = L; else tdm__sql_free(L); }

idlist(A) ::= nm(N).                      { A = NT(ID, N); }
idlist(A) ::= idlist(L) COMMA nm(N).      { A = tdm__sql_append(L, NT(ID, N)); }

typename(A) ::= ID(T).
    { A = upper(NT(TYPE, T)); if (A) A->ival = -1; }
typename(A) ::= ID(T) LP INTEGER(P) RP.
    { A = upper(NT(TYPE, T)); if (A) { A->ival = strtoll(P.p, NULL, 10); } }
typename(A) ::= ID(T) LP INTEGER(P) COMMA INTEGER(S) RP.
    { A = upper(NT(TYPE, T)); if (A) { A->ival = strtoll(P.p, NULL, 10); A->ival2 = strtoll(S.p, NULL, 10); } }
typename(A) ::= ID(T) LP INTEGER(P) RP WITH LOCAL TIME ZONE.
    { A = NS(TYPE, T, "TIMESTAMP_LTZ"); if (A) { A->ival = strtoll(P.p, NULL, 10); } }
typename(A) ::= ID(T) WITH LOCAL TIME ZONE.
    { A = NS(TYPE, T, "TIMESTAMP_LTZ"); if (A) A->ival = -1; }

withopts(A) ::= .                         { A = NULL; }
withopts(A) ::= WITH LP options(O) RP.    { A = O; }
options(A) ::= option(O).                 { A = O; }
options(A) ::= options(L) COMMA option(O). { A = tdm__sql_append(L, O); }
option(A) ::= STRING(K) EQ STRING(V).
    { A = NT(OPTION, K); if (A) A->a = NT(STR, V); }

/* ---- Queries ---- */

query(A) ::= SELECT(S) distinct(D) items(I) FROM from(F) where(W) groupby(G)
             tail(T).
    { A = N(SELECT, S);
      if (A) { A->ival = D; A->a = I; A->b = F; A->c = W; A->d = G; A->unit = T; }
      else { tdm__sql_free(I); tdm__sql_free(F); tdm__sql_free(W); tdm__sql_free(G); free(T); } }

/* HAVING, ORDER BY and LIMIT are parsed so that the planner can refuse
 * them by name (they need changelog queries); the tail keeps the first
 * one's keyword and position as "KEYWORD@line:col". */
%type tail { char * }
%destructor tail { free($$); }
tail(A) ::= .                                  { A = NULL; }
tail(A) ::= tail(T) HAVING(K) expr(E).
    { A = T ? T : tail_of(pc, &K); tdm__sql_free(E); }
tail(A) ::= tail(T) ORDER(K) BY exprlist(L).
    { A = T ? T : tail_of(pc, &K); tdm__sql_free(L); }
tail(A) ::= tail(T) LIMIT(K) expr(E).
    { A = T ? T : tail_of(pc, &K); tdm__sql_free(E); }

%type distinct { int }
%destructor distinct { (void)$$; }
distinct(A) ::= .                 { A = 0; }
distinct(A) ::= DISTINCT.         { A = 1; }
distinct(A) ::= ALL.              { A = 0; }

items(A) ::= item(I).                    { A = I; }
items(A) ::= items(L) COMMA item(I).     { A = tdm__sql_append(L, I); }
item(A) ::= STAR(S).                     { A = N(ITEM, S); }
item(A) ::= nm(Q) DOT STAR.
    { A = N(ITEM, Q); if (A) { A->a = N(STAR, Q); if (A->a) A->a->qual = tdm__sql_tokdup(pc, &Q); } }
item(A) ::= expr(E).
    { A = E ? tdm__sql_node(pc, SQLK_ITEM, NULL, NULL, 0) : NULL;
      if (A) { A->line = E->line; A->col = E->col; A->a = E; } else tdm__sql_free(E); }
item(A) ::= expr(E) AS nm(N).
    { A = NT(ITEM, N); if (A) A->a = E; else tdm__sql_free(E); }
item(A) ::= expr(E) ID(N).
    { A = NT(ITEM, N); if (A) A->a = E; else tdm__sql_free(E); }

from(A) ::= tabref(T).                           { A = T; }
from(A) ::= from(L) COMMA tabref(R).
    { A = tdm__sql_node(pc, SQLK_JOIN, NULL, NULL, 0);
      if (A && L) { A->line = L->line; A->col = L->col; }
      if (A) { A->a = L; A->b = R; } else { tdm__sql_free(L); tdm__sql_free(R); } }
from(A) ::= from(L) join(J) tabref(R) ON expr(E).
    { A = N(JOIN, J);
      if (A) { A->a = L; A->b = R; A->c = E; } else { tdm__sql_free(L); tdm__sql_free(R); tdm__sql_free(E); } }

%type join { tdm__sql_tok }
%destructor join { (void)$$; }
join(A) ::= JOIN(J).              { A = J; }
join(A) ::= INNER(J) JOIN.        { A = J; }

tabref(A) ::= nm(N) alias(L).
    { A = NT(TABLE, N); if (A) A->alias = L; else free(L); }
tabref(A) ::= LP(P) query(Q) RP alias(L).
    { A = N(SUBQUERY, P); if (A) { A->a = Q; A->alias = L; } else { tdm__sql_free(Q); free(L); } }
tabref(A) ::= TABLE LP ID(F) LP tvfargs(G) RP RP alias(L).
    { A = upper(NT(TVF, F)); if (A) { A->a = G; A->alias = L; } else { tdm__sql_free(G); free(L); } }

%type alias { char * }
%destructor alias { free($$); }
alias(A) ::= .                    { A = NULL; }
alias(A) ::= nm(N).               { A = tdm__sql_tokdup(pc, &N); }
alias(A) ::= AS nm(N).            { A = tdm__sql_tokdup(pc, &N); }

tvfargs(A) ::= tvfarg(G).                        { A = G; }
tvfargs(A) ::= tvfargs(L) COMMA tvfarg(G).       { A = tdm__sql_append(L, G); }
tvfarg(A) ::= TABLE nm(N).                        { A = NT(TVF_TABLE, N); }
tvfarg(A) ::= TABLE nm(N) PARTITION BY nm(K).
    { A = NT(TVF_TABLE, N); if (A) A->a = NT(ID, K); }
tvfarg(A) ::= TABLE nm(N) PARTITION BY LP idlist(L) RP.
    { A = NT(TVF_TABLE, N); if (A) A->a = L; else tdm__sql_free(L); }
tvfarg(A) ::= DESCRIPTOR LP nm(N) RP.             { A = NT(DESCRIPTOR, N); }
tvfarg(A) ::= expr(E).                            { A = E; }
tvfarg(A) ::= ID(K) ARROW tvfarg(G).
    { A = G; if (A && !A->alias) A->alias = tdm__sql_tokdup(pc, &K); }

where(A) ::= .                    { A = NULL; }
where(A) ::= WHERE expr(E).       { A = E; }
groupby(A) ::= .                  { A = NULL; }
groupby(A) ::= GROUP BY exprlist(L). { A = L; }

exprlist(A) ::= expr(E).                      { A = E; }
exprlist(A) ::= exprlist(L) COMMA expr(E).    { A = tdm__sql_append(L, E); }

/* ---- Expressions ---- */

expr(A) ::= nm(N).                { A = NT(ID, N); }
expr(A) ::= nm(Q) DOT nm(N).
    { A = NT(ID, N); if (A) A->qual = tdm__sql_tokdup(pc, &Q); }
expr(A) ::= INTEGER(X).           { A = NT(INT, X); }
expr(A) ::= NUMBER(X).            { A = NT(NUM, X); }
expr(A) ::= STRING(X).            { A = NT(STR, X); }
expr(A) ::= TRUE(X).              { A = N(BOOL, X); if (A) A->ival = 1; }
expr(A) ::= FALSE(X).             { A = N(BOOL, X); }
expr(A) ::= NULL(X).              { A = N(NULL, X); }
expr(A) ::= INTERVAL(I) STRING(S) ID(U).
    { A = NT(INTERVAL, S); if (A) { A->line = I.line; A->col = I.col; A->unit = tdm__sql_tokdup(pc, &U); } }
expr(A) ::= LP expr(E) RP.        { A = E; }
expr(A) ::= expr(L) OR(O) expr(R).        { A = bin(NS(BINARY, O, "OR"), L, R); }
expr(A) ::= expr(L) AND(O) expr(R).       { A = bin(NS(BINARY, O, "AND"), L, R); }
expr(A) ::= NOT(O) expr(E).
    { A = NS(UNARY, O, "NOT"); if (A) A->a = E; else tdm__sql_free(E); }
expr(A) ::= expr(L) EQ(O) expr(R).        { A = bin(NS(BINARY, O, "="), L, R); }
expr(A) ::= expr(L) NE(O) expr(R).        { A = bin(NS(BINARY, O, "<>"), L, R); }
expr(A) ::= expr(L) LT(O) expr(R).        { A = bin(NS(BINARY, O, "<"), L, R); }
expr(A) ::= expr(L) LE(O) expr(R).        { A = bin(NS(BINARY, O, "<="), L, R); }
expr(A) ::= expr(L) GT(O) expr(R).        { A = bin(NS(BINARY, O, ">"), L, R); }
expr(A) ::= expr(L) GE(O) expr(R).        { A = bin(NS(BINARY, O, ">="), L, R); }
expr(A) ::= expr(L) CONCAT(O) expr(R).    { A = bin(NS(BINARY, O, "||"), L, R); }
expr(A) ::= expr(L) PLUS(O) expr(R).      { A = bin(NS(BINARY, O, "+"), L, R); }
expr(A) ::= expr(L) MINUS(O) expr(R).     { A = bin(NS(BINARY, O, "-"), L, R); }
expr(A) ::= expr(L) STAR(O) expr(R).      { A = bin(NS(BINARY, O, "*"), L, R); }
expr(A) ::= expr(L) SLASH(O) expr(R).     { A = bin(NS(BINARY, O, "/"), L, R); }
expr(A) ::= expr(L) REM(O) expr(R).       { A = bin(NS(BINARY, O, "%"), L, R); }
expr(A) ::= MINUS(O) expr(E). [UMINUS]
    { A = NS(UNARY, O, "-"); if (A) A->a = E; else tdm__sql_free(E); }
expr(A) ::= PLUS expr(E). [UMINUS]        { A = E; }
expr(A) ::= expr(E) IS(O) NULL.
    { A = N(ISNULL, O); if (A) A->a = E; else tdm__sql_free(E); }
expr(A) ::= expr(E) IS(O) NOT NULL.
    { A = N(ISNULL, O); if (A) { A->a = E; A->ival = 1; } else tdm__sql_free(E); }

/* BETWEEN, IN and LIKE with and without NOT, spelled out: an optional
 * NOT before them would be a conflict with NOT's own precedence. */
expr(A) ::= expr(E) BETWEEN(O) expr(L) AND expr(H). [BETWEEN]
    { A = N(BETWEEN, O);
      if (A) { A->a = E; A->b = L; A->c = H; }
      else { tdm__sql_free(E); tdm__sql_free(L); tdm__sql_free(H); } }
expr(A) ::= expr(E) NOT BETWEEN(O) expr(L) AND expr(H). [BETWEEN]
    { A = N(BETWEEN, O);
      if (A) { A->a = E; A->b = L; A->c = H; A->ival = 1; }
      else { tdm__sql_free(E); tdm__sql_free(L); tdm__sql_free(H); } }
expr(A) ::= expr(E) IN(O) LP exprlist(L) RP. [IN]
    { A = N(IN, O); if (A) { A->a = E; A->b = L; } else { tdm__sql_free(E); tdm__sql_free(L); } }
expr(A) ::= expr(E) NOT IN(O) LP exprlist(L) RP. [IN]
    { A = N(IN, O); if (A) { A->a = E; A->b = L; A->ival = 1; } else { tdm__sql_free(E); tdm__sql_free(L); } }
expr(A) ::= expr(E) LIKE(O) expr(P). [LIKE]
    { A = N(LIKE, O); if (A) { A->a = E; A->b = P; } else { tdm__sql_free(E); tdm__sql_free(P); } }
expr(A) ::= expr(E) NOT LIKE(O) expr(P). [LIKE]
    { A = N(LIKE, O); if (A) { A->a = E; A->b = P; A->ival = 1; } else { tdm__sql_free(E); tdm__sql_free(P); } }
expr(A) ::= expr(E) LIKE(O) expr(P) ESCAPE STRING(C). [LIKE]
    { A = N(LIKE, O); if (A) { A->a = E; A->b = P; A->c = NT(STR, C); } else { tdm__sql_free(E); tdm__sql_free(P); } }
expr(A) ::= expr(E) NOT LIKE(O) expr(P) ESCAPE STRING(C). [LIKE]
    { A = N(LIKE, O); if (A) { A->a = E; A->b = P; A->c = NT(STR, C); A->ival = 1; } else { tdm__sql_free(E); tdm__sql_free(P); } }

expr(A) ::= CASE(C) caseop(O) whens(W) caseelse(E) END.
    { A = N(CASE, C); if (A) { A->a = O; A->b = W; A->c = E; }
      else { tdm__sql_free(O); tdm__sql_free(W); tdm__sql_free(E); } }
caseop(A) ::= .                   { A = NULL; }
caseop(A) ::= expr(E).            { A = E; }
whens(A) ::= when(W).             { A = W; }
whens(A) ::= whens(L) when(W).    { A = tdm__sql_append(L, W); }
when(A) ::= WHEN(W) expr(C) THEN expr(R).
    { A = N(WHEN, W); if (A) { A->a = C; A->b = R; } else { tdm__sql_free(C); tdm__sql_free(R); } }
caseelse(A) ::= .                 { A = NULL; }
caseelse(A) ::= ELSE expr(E).     { A = E; }

expr(A) ::= ID(F) LP RP.          { A = upper(NT(CALL, F)); }
expr(A) ::= ID(F) LP STAR RP.
    { A = upper(NT(CALL, F)); if (A) A->a = N(STAR, F); }
expr(A) ::= ID(F) LP exprlist(L) RP.
    { A = upper(NT(CALL, F)); if (A) A->a = L; else tdm__sql_free(L); }
expr(A) ::= ID(F) LP DISTINCT exprlist(L) RP.
    { A = upper(NT(CALL, F)); if (A) { A->a = L; A->ival = 1; } else tdm__sql_free(L); }
expr(A) ::= ID(F) LP expr(E) TO ID(U) RP.
    { A = upper(NT(CALL, F)); if (A) { A->a = E; A->unit = tdm__sql_tokdup(pc, &U); } else tdm__sql_free(E); }
expr(A) ::= EXTRACT(F) LP ID(U) FROM expr(E) RP.
    { A = upper(NT(CALL, F)); if (A) { A->a = E; A->unit = tdm__sql_tokdup(pc, &U); } else tdm__sql_free(E); }
expr(A) ::= ID(F) LP expr(E) FROM expr(S) RP.
    { A = upper(NT(CALL, F)); if (A) { A->a = tdm__sql_append(E, S); } else { tdm__sql_free(E); tdm__sql_free(S); } }
expr(A) ::= ID(F) LP expr(E) FROM expr(S) FOR expr(L) RP.
    { A = upper(NT(CALL, F)); if (A) { A->a = tdm__sql_append(tdm__sql_append(E, S), L); } else { tdm__sql_free(E); tdm__sql_free(S); tdm__sql_free(L); } }
expr(A) ::= CAST(C) LP expr(E) AS typename(T) RP.
    { A = N(CAST, C); if (A) { A->a = E; A->b = T; } else { tdm__sql_free(E); tdm__sql_free(T); } }
