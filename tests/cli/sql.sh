#!/bin/sh
# SPDX-License-Identifier: MIT
# sql.sh - `tidemark sql` end to end: the scripts of tests/cli/sql/ (run
# with `-i clicks_ddl.sql` unless they declare their own tables) print their
# rows on stdout, compared as multisets with the hand-derived files
# tests/cli/expected/sql_<case>.jsonl (each script's header comment
# says how they were derived).  Then errors: a syntax error, an unknown option,
# an unknown column and a refused construct each exit 3 with the line,
# column and a caret under the SQL text; EXPLAIN and --explain print the
# plan and the equivalent YAML job and run nothing; that YAML job, run
# with `tidemark run`, gives the same rows as the script.
# Usage: sql.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

S=tests/cli/sql

# init CASE: "-i clicks_ddl.sql" when the script reads the clicks
# (Flink's SQL client takes an init script the same way).
init() {
    grep -q "CREATE TABLE clicks\|CREATE TABLE orders" "$S/$1.sql" ||
        echo "-i $S/clicks_ddl.sql"
}

# Each case also runs as the YAML job its --explain prints (the job a
# YAML file would describe): the same rows.
for c in tumble hop session project join late_output lateness; do
    for p in 1 2; do
        "$TM" sql $(init $c) "$S/$c.sql" --quiet -p $p >"$T/$c.out" \
            2>"$T/$c.err" || fail "$c at parallelism $p: $(cat "$T/$c.err")"
        same_multiset "$c at parallelism $p" "$EXP/sql_$c.jsonl" "$T/$c.out"
    done
    "$TM" sql --explain $(init $c) "$S/$c.sql" >"$T/$c.explain" ||
        fail "$c --explain: $(cat "$T/$c.explain")"
    sed -n '/^== The job, as YAML ==$/,$p' "$T/$c.explain" | sed 1d >"$T/$c.yaml"
    "$TM" run "$T/$c.yaml" --quiet >"$T/$c.yout" 2>"$T/$c.yerr" ||
        fail "$c as YAML: $(cat "$T/$c.yerr")"
    same_multiset "$c as YAML" "$EXP/sql_$c.jsonl" "$T/$c.yout"
done
# examples/clicks10s.sql gives the rows of examples/clicks10s.yaml (less
# the pane fields, which a SQL query's rows do not select).
"$TM" sql examples/clicks10s.sql --quiet >"$T/c10.out" 2>"$T/c10.err" ||
    fail "examples/clicks10s.sql: $(cat "$T/c10.err")"
sed 's/,"timing".*/}/' "$EXP/clicks10s.results.jsonl" >"$T/c10.want"
same_multiset "examples/clicks10s.sql" "$T/c10.want" "$T/c10.out"

# EXPLAIN's word on local aggregation is the runtime's decision (its
# debug log), for a one-phase, a two-phase and a session window.
for c in tumble hop session; do
    "$TM" sql $(init $c) "$S/$c.sql" --log-level debug >/dev/null 2>"$T/$c.debug" ||
        fail "$c --log-level debug: $(tail -3 "$T/$c.debug")"
    phases=$(sed -n 's/.*local_aggregation window=q1 phases=\([12]\).*/\1/p' "$T/$c.debug")
    case "$phases" in
    1) grep -q "local aggregation: one phase" "$T/$c.explain" ;;
    2) grep -q "local aggregation: two phases" "$T/$c.explain" ;;
    *) false ;;
    esac || fail "$c: EXPLAIN's local aggregation differs from the runtime's ($phases phase(s))"
done

# --explain's plan says what each node does.
grep -q "^== Plan ==" "$T/tumble.explain" || fail "--explain printed no plan"
grep -q "window tumbling, keyed by page" "$T/tumble.explain" ||
    fail "the plan does not say the window is keyed by page"

# EXPLAIN inside a script prints and runs nothing else.
{ cat "$S/clicks_ddl.sql"; echo "EXPLAIN SELECT page FROM clicks;"; } >"$T/ex.sql"
"$TM" sql "$T/ex.sql" >"$T/ex.out" 2>&1 || fail "EXPLAIN: $(cat "$T/ex.out")"
grep -q "^  clicks: source clicks (filesystem)" "$T/ex.out" ||
    fail "EXPLAIN: no source in the plan: $(cat "$T/ex.out")"
if grep -q '"page"' "$T/ex.out"; then fail "EXPLAIN ran the query"; fi

# The shell (`tidemark sql` without a script; here on a pipe, so without
# libedit's prompt): statements run one by one in one session, each
# query a job of its own whose rows print as they fire; an error is
# shown and the session goes on; the last statement needs no ';'; the
# exit code is the last failure's.
{
    cat "$S/clicks_ddl.sql"
    echo "SHOW TABLES;"
    cat "$S/tumble.sql"
    echo "SELEC 1;"
    echo "DESCRIBE clicks; HELP;"
    echo "SELECT \`user\` FROM clicks"
    echo "WHERE ts_ms > 100000"
} >"$T/shell.in"
set +e
"$TM" sql -q <"$T/shell.in" >"$T/shell.out" 2>"$T/shell.err"
rc=$?
set -e
[ $rc -eq 3 ] || fail "shell: exit $rc, expected 3 (the failed statement)"
grep -qx clicks "$T/shell.out" || fail "shell: SHOW TABLES printed no clicks"
grep '"window_start"' "$T/shell.out" >"$T/shell.rows" || true
same_multiset "shell: the tumble query" "$EXP/sql_tumble.jsonl" "$T/shell.rows"
grep -q '^ts  *timestamp  *\*ROWTIME\*' "$T/shell.out" ||
    fail "shell: DESCRIBE: $(cat "$T/shell.out")"
grep -q "QUIT; leaves" "$T/shell.out" || fail "shell: no HELP text"
grep -qx '{"user":"a"}' "$T/shell.out" || fail "shell: the last statement did not run"
grep -qF '<stdin>:1:1: unexpected "SELEC"' "$T/shell.err" ||
    fail "shell: the error: $(cat "$T/shell.err")"
printf 'SHOW TABLES;\nQUIT;\nSELECT 1;\n' | "$TM" sql >"$T/quit.out" 2>&1 ||
    fail "shell: QUIT: $(cat "$T/quit.out")"
[ ! -s "$T/quit.out" ] || fail "shell: something ran after QUIT: $(cat "$T/quit.out")"

# expect_error NAME TEXT LINE:COL PART: the script TEXT exits 3 with
# "FILE:LINE:COL: ...PART..." and a caret line.
expect_error() {
    printf '%s\n' "$2" >"$T/$1.sql"
    set +e
    "$TM" sql "$T/$1.sql" >"$T/$1.out" 2>"$T/$1.err"
    rc=$?
    set -e
    [ $rc -eq 3 ] || fail "$1: exit $rc, expected 3: $(cat "$T/$1.err")"
    grep -qF "$T/$1.sql:$3: " "$T/$1.err" ||
        fail "$1: no error at $3: $(cat "$T/$1.err")"
    grep -qF "$4" "$T/$1.err" || fail "$1: the message lacks \"$4\": $(cat "$T/$1.err")"
    grep -q '^ *\^$' "$T/$1.err" || fail "$1: no caret: $(cat "$T/$1.err")"
}
DDL="CREATE TABLE t (a BIGINT, bee STRING, ts_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ts_ms, 3), WATERMARK FOR ts AS ts)
WITH ('connector' = 'filesystem', 'path' = 'x.jsonl');"
expect_error syntax "SELEC a FROM t;" 1:1 'unexpected "SELEC": expected CREATE'
expect_error early "$DDL
SELECT a FROM t WHERE a > ;" 4:27 "the statement ends too early"
expect_error option "CREATE TABLE u (a BIGINT) WITH ('connector' = 'filesystem', 'formt' = 'json');
SELECT a FROM u;" 1:61 "(did you mean 'format'?)"
expect_error column "$DDL
SELECT a, be FROM t;" 4:11 "unknown column be (did you mean bee?)"
expect_error changelog "$DDL
SELECT bee, COUNT(*) FROM t GROUP BY bee;" 4:38 "GROUP BY without a window makes a changelog"
expect_error regular_join "$DDL
SELECT x.a FROM t x JOIN t y ON x.a = y.a;" 4:21 "a regular join makes a changelog"
expect_error watermark "CREATE TABLE u (a BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts + INTERVAL '1' SECOND) WITH ('connector' = 'filesystem');" 2:23 "the watermark must be ts or ts - INTERVAL"
expect_error string "SELECT 'open FROM t;" 1:8 "a string is not closed"
expect_error having "$DDL
SELECT bee, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY bee, window_start, window_end
HAVING COUNT(*) > 1;" 6:1 "HAVING is not supported yet"
expect_error cumulate "$DDL
SELECT COUNT(*) FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR))
GROUP BY window_start, window_end;" 4:28 "CUMULATE windows are not supported yet"
expect_error pkey "CREATE TABLE u (a BIGINT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'print');" 1:27 "PRIMARY KEY"
expect_error descriptor "$DDL
SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(a), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end;" 4:55 "DESCRIPTOR(a) must name the table's event-time column, ts"
echo "sql: ok"
