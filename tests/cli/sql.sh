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
for c in tumble hop cumulate session project join late_output lateness; do
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
# An upsert table (PRIMARY KEY): the file holds each key's final row, at
# parallelism 1 and 2, and as the YAML job (output_mode: upsert).
for p in 1 2; do
    rm -f "$T/upsert.jsonl"*
    sed "s|'OUT'|'$T/upsert.jsonl'|" "$S/upsert.sql" >"$T/upsert.sql"
    "$TM" sql -q -p $p -i "$S/clicks_ddl.sql" "$T/upsert.sql" \
        2>"$T/upsert.err" || fail "upsert: $(cat "$T/upsert.err")"
    same_multiset "upsert at parallelism $p" "$EXP/sql_upsert.jsonl" \
        "$T/upsert.jsonl"
done
"$TM" sql --explain -i "$S/clicks_ddl.sql" "$T/upsert.sql" >"$T/upsert.explain"
grep -q "output_mode: upsert" "$T/upsert.explain" ||
    fail "upsert --explain: $(cat "$T/upsert.explain")"
# rows NAME SQL EXPECTED_LINES...: the query SQL over the clicks prints
# exactly these rows (each derived by hand from sql_clicks.jsonl).
rows() {
    name=$1
    printf '%s\n' "$2" >"$T/$name.sql"
    shift 2
    printf '%s\n' "$@" >"$T/$name.want"
    "$TM" sql -q -i "$S/clicks_ddl.sql" "$T/$name.sql" >"$T/$name.out" \
        2>"$T/$name.err" || fail "$name: $(cat "$T/$name.err")"
    same_multiset "$name" "$T/$name.want" "$T/$name.out"
}
# Computed strings and booleans are output columns (copied into the
# source's batch).
rows computed_text "SELECT UPPER(page) AS p, CONCAT(\`user\`, '@', page) AS up, page = '/x' AS isx, DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') AS t FROM clicks WHERE ts_ms < 4000;" \
    '{"p":"/X","up":"a@/x","isx":true,"t":"1970-01-01 00:00:01"}' \
    '{"p":"/X","up":"b@/x","isx":true,"t":"1970-01-01 00:00:02"}' \
    '{"p":"/Y","up":"a@/y","isx":false,"t":"1970-01-01 00:00:03"}'
# A WHERE over a subquery filters its source.
rows subquery_where "SELECT * FROM (SELECT \`user\`, ts_ms FROM clicks) WHERE ts_ms > 60000;" \
    '{"user":"e","ts_ms":64999}' '{"user":"c","ts_ms":61000}' \
    '{"user":"b","ts_ms":70000}' '{"user":"a","ts_ms":130000}'
# A computed value over a subquery is computed at its source.
rows subquery_compute "SELECT s.u, s.t + 1 AS t1 FROM (SELECT \`user\` AS u, ts_ms AS t FROM clicks WHERE page = '/y') s;" \
    '{"u":"a","t1":3001}' '{"u":"e","t1":65000}' '{"u":"b","t1":70001}' \
    '{"u":"a","t1":130001}'
# TUMBLE's offset: windows [-30000, 30000), [30000, 90000), ...; f@59999
# is on time for [30000, 90000).
rows tumble_offset "SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '30' SECOND)) GROUP BY window_start, window_end;" \
    '{"window_start":-30000,"n":3}' '{"window_start":30000,"n":5}' \
    '{"window_start":90000,"n":1}'
# HOP by name, in another order: the hop case's rows.
printf '%s\n' "SELECT window_start, window_end, COUNT(*) AS views FROM TABLE(HOP(DATA => TABLE clicks, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '1' MINUTE, SLIDE => INTERVAL '30' SECOND)) GROUP BY window_start, window_end;" >"$T/named.sql"
"$TM" sql -q -i "$S/clicks_ddl.sql" "$T/named.sql" >"$T/named.out" 2>"$T/named.err" ||
    fail "named: $(cat "$T/named.err")"
same_multiset "HOP with named arguments" "$EXP/sql_hop.jsonl" "$T/named.out"
# CUMULATE by name, in another order: the cumulate case's rows.
printf '%s\n' "SELECT page, window_start, window_end, COUNT(*) AS views FROM TABLE(CUMULATE(SIZE => INTERVAL '1' MINUTE, DATA => TABLE clicks, STEP => INTERVAL '30' SECOND, TIMECOL => DESCRIPTOR(ts))) GROUP BY page, window_start, window_end;" >"$T/cnamed.sql"
"$TM" sql -q -i "$S/clicks_ddl.sql" "$T/cnamed.sql" >"$T/cnamed.out" 2>"$T/cnamed.err" ||
    fail "cumulate named: $(cat "$T/cnamed.err")"
same_multiset "CUMULATE with named arguments" "$EXP/sql_cumulate.jsonl" "$T/cnamed.out"
# CUMULATE's offset: max windows [-50000, 10000), [10000, 70000),
# [70000, 130000), [130000, 190000), 30 s steps: 1000-3000 end up in
# [-50000, 10000) only (its first window ends at -20000); f@59999 is on
# time for [10000, 70000) (watermark 59999 < 69999), as are a@59999,
# e@64999 and c@61000 ([10000, 40000) holds none); b@70000 in [70000,
# 100000) and [70000, 130000); a@130000 in [130000, 160000) and
# [130000, 190000).
rows cumulate_offset "SELECT window_start, window_end, COUNT(*) AS n FROM TABLE(CUMULATE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE, INTERVAL '10' SECOND)) GROUP BY window_start, window_end;" \
    '{"window_start":-50000,"window_end":10000,"n":3}' \
    '{"window_start":10000,"window_end":70000,"n":4}' \
    '{"window_start":70000,"window_end":100000,"n":1}' \
    '{"window_start":70000,"window_end":130000,"n":1}' \
    '{"window_start":130000,"window_end":160000,"n":1}' \
    '{"window_start":130000,"window_end":190000,"n":1}'
# SESSION with PARTITION BY, the page also in GROUP BY (Flink's example).
rows session_partition "SELECT page, window_start, window_end, COUNT(*) AS n FROM TABLE(SESSION(TABLE clicks PARTITION BY page, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY page, window_start, window_end;" \
    '{"page":"/x","window_start":1000,"window_end":12000,"n":2}' \
    '{"page":"/x","window_start":59999,"window_end":71000,"n":3}' \
    '{"page":"/y","window_start":3000,"window_end":13000,"n":1}' \
    '{"page":"/y","window_start":64999,"window_end":80000,"n":2}' \
    '{"page":"/y","window_start":130000,"window_end":140000,"n":1}'
# CURRENT_WATERMARK is the source's watermark before each row (on-event:
# max - 5 s of the rows before it; null before the first), and Flink's
# late filter drops f@59999 (the watermark is 59999 after e@64999).
rows current_watermark "SELECT \`user\`, ts_ms, CURRENT_WATERMARK(ts) AS wm FROM clicks WHERE CURRENT_WATERMARK(ts) IS NULL OR ts > CURRENT_WATERMARK(ts);" \
    '{"user":"a","ts_ms":1000,"wm":null}' '{"user":"b","ts_ms":2000,"wm":-4000}' \
    '{"user":"a","ts_ms":3000,"wm":-3000}' '{"user":"a","ts_ms":59999,"wm":-2000}' \
    '{"user":"e","ts_ms":64999,"wm":54999}' '{"user":"c","ts_ms":61000,"wm":59999}' \
    '{"user":"b","ts_ms":70000,"wm":59999}' '{"user":"a","ts_ms":130000,"wm":65000}'
# window_time is window_end - 1 ms, over a TVF and as TUMBLE_ROWTIME (the
# tumble case's windows: 4, 3 and 1 rows).
rows window_time "SELECT window_start, window_time, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;" \
    '{"window_start":0,"window_time":59999,"n":4}' \
    '{"window_start":60000,"window_time":119999,"n":3}' \
    '{"window_start":120000,"window_time":179999,"n":1}'
rows tumble_rowtime "SELECT TUMBLE_ROWTIME(ts, INTERVAL '1' MINUTE) AS wt, COUNT(*) AS n FROM clicks GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE);" \
    '{"wt":59999,"n":4}' '{"wt":119999,"n":3}' '{"wt":179999,"n":1}'
# A table without WATERMARK FOR is read in processing time.
rows no_watermark "CREATE TEMPORARY TABLE p (\`user\` STRING, page STRING, ts_ms BIGINT) WITH ('connector' = 'filesystem', 'path' = 'tests/cli/data/sql_clicks.jsonl', 'format' = 'json');
SELECT \`user\`, ts_ms FROM p WHERE page = '/y';" \
    '{"user":"a","ts_ms":3000}' '{"user":"e","ts_ms":64999}' \
    '{"user":"b","ts_ms":70000}' '{"user":"a","ts_ms":130000}'

# examples/clicks10s.sql gives the rows of examples/clicks10s.yaml (less
# the pane fields, which a SQL query's rows do not select).
"$TM" sql examples/clicks10s.sql --quiet >"$T/c10.out" 2>"$T/c10.err" ||
    fail "examples/clicks10s.sql: $(cat "$T/c10.err")"
sed 's/,"timing".*/}/' "$EXP/clicks10s.results.jsonl" >"$T/c10.want"
same_multiset "examples/clicks10s.sql" "$T/c10.want" "$T/c10.out"

# EXPLAIN's word on local aggregation is the runtime's decision (its
# debug log), for a one-phase, a two-phase and a session window.
for c in tumble hop cumulate session; do
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
grep -q "window cumulate, keyed by page" "$T/cumulate.explain" ||
    fail "the plan does not show the cumulate window"
grep -q "^ *window.step: 30000ms" "$T/cumulate.explain" ||
    fail "the cumulate job has no window.step: $(cat "$T/cumulate.explain")"

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
expect_error cumulate_multiple "$DDL
SELECT COUNT(*) FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '7' MINUTE, INTERVAL '1' HOUR))
GROUP BY window_start, window_end;" 4:83 "CUMULATE: the max window size (3600000 ms) must be an integral multiple of the step (420000 ms)"
expect_error cumulate_legacy "$DDL
SELECT COUNT(*) FROM t GROUP BY CUMULATE(ts, INTERVAL '1' MINUTE, INTERVAL '1' HOUR);" 4:33 "CUMULATE is a window table function only"
expect_error cumulate_named "$DDL
SELECT COUNT(*) FROM TABLE(CUMULATE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SLIDE => INTERVAL '1' MINUTE, SIZE => INTERVAL '1' HOUR)) GROUP BY window_start, window_end;" 4:28 "CUMULATE takes DATA, TIMECOL, STEP, SIZE, OFFSET"
expect_error window_time_join "$DDL
SELECT x.a FROM (SELECT a, window_time AS wt, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY a, window_start, window_end) x
JOIN t y ON x.a = y.a AND y.ts BETWEEN x.wt - INTERVAL '1' MINUTE AND x.wt;" 5:1 "a join cannot read the window_time of a windowed subquery yet"
PK="CREATE TABLE k (ws TIMESTAMP(3), b STRING, n BIGINT,
  PRIMARY KEY (ws) NOT ENFORCED)
WITH ('connector' = 'filesystem', 'path' = 'k.jsonl');"
expect_error pk_not_window "$DDL
CREATE TABLE u (a BIGINT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'filesystem', 'path' = 'u.jsonl');
INSERT INTO u SELECT a FROM t;" 5:13 "a PRIMARY KEY table (upsert) takes the rows of a windowed GROUP BY"
expect_error pk_unknown "$DDL
CREATE TABLE u (a BIGINT, PRIMARY KEY (z) NOT ENFORCED) WITH ('connector' = 'filesystem', 'path' = 'u.jsonl');
INSERT INTO u SELECT a FROM t;" 4:40 "PRIMARY KEY: z is not a column of u"
expect_error pk_missing_key "$DDL
$PK
INSERT INTO k SELECT window_start, bee, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY bee, window_start, window_end;" 7:13 "the PRIMARY KEY must be the query's GROUP BY columns"
expect_error pk_value "$DDL
CREATE TABLE k (ws TIMESTAMP(3), b STRING, n BIGINT,
  PRIMARY KEY (ws, n) NOT ENFORCED)
WITH ('connector' = 'filesystem', 'path' = 'k.jsonl');
INSERT INTO k SELECT window_start, bee, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY bee, window_start, window_end;" 7:13 "PRIMARY KEY column n receives c, which is neither a GROUP BY column nor the window"
expect_error cumulate_join "$DDL
SELECT x.a FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR)) x
JOIN TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR)) y
ON x.a = y.a AND x.window_start = y.window_start AND x.window_end = y.window_end;" 5:1 "a window join of cumulate windows is not supported"
expect_error pkey_twice "CREATE TABLE u (a BIGINT, PRIMARY KEY (a) NOT ENFORCED, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'print');" 1:57 "u has a PRIMARY KEY already"
expect_error descriptor "$DDL
SELECT COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(a), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end;" 4:55 "DESCRIPTOR(a) must name the table's event-time column, ts"
# What would give wrong rows is refused.
expect_error helper "$DDL
SELECT TUMBLE_START(ts, INTERVAL '1' HOUR) AS s, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE);" 4:8 "TUMBLE_START must repeat the GROUP BY window"
expect_error helper_tvf "$DDL
SELECT TUMBLE_END(ts, INTERVAL '1' MINUTE) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;" 4:8 "TUMBLE_END belongs with GROUP BY TUMBLE(...)"
expect_error window_end_time "$DDL
SELECT COUNT(*) FROM (SELECT window_end AS we, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end) GROUP BY TUMBLE(we, INTERVAL '1' MINUTE);" 4:171 "a window's window_end are not"
expect_error insert_types "$DDL
CREATE TABLE o (n BIGINT) WITH ('connector' = 'print');
INSERT INTO o SELECT bee FROM t;" 5:13 "the query's column 1 (bee) is string, the table's n is int64"
expect_error generator_column "CREATE TABLE b (auction BIGINT, pricee BIGINT) WITH ('connector' = 'nexmark');" 1:33 "the nexmark generator makes no such field"
expect_error format_blackhole "$DDL
CREATE TABLE o (n BIGINT) WITH ('connector' = 'blackhole', 'format' = 'csv');
INSERT INTO o SELECT a FROM t;" 4:60 "option 'format' does not apply to a blackhole sink table"
expect_error window_over_join "$DDL
SELECT COUNT(*) FROM t x JOIN t y ON x.a = y.a AND y.ts BETWEEN x.ts AND x.ts + INTERVAL '1' SECOND GROUP BY TUMBLE(x.ts, INTERVAL '1' MINUTE);" 4:110 "a join's columns and a window's window_end are not"
expect_error named_mixed "$DDL
SELECT COUNT(*) FROM TABLE(TUMBLE(DATA => TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;" 4:28 "give every argument by name or none"
expect_error metadata_filesystem "CREATE TABLE u (a BIGINT, o BIGINT METADATA FROM 'offset') WITH ('connector' = 'filesystem', 'path' = 'x');" \
    1:27 "column o: METADATA columns are read from Kafka messages; a 'filesystem' table has none"
expect_error metadata_key "CREATE TABLE u (\`timestamp\` TIMESTAMP_LTZ(3) METADATA VIRTUAL, h STRING METADATA FROM 'headers') WITH ('connector' = 'kafka', 'topic' = 'x');" \
    1:87 "unknown Kafka metadata 'headers' (known: 'timestamp', 'partition', 'offset', 'topic')"
expect_error metadata_type "CREATE TABLE u (p STRING METADATA FROM 'partition') WITH ('connector' = 'kafka', 'topic' = 'x');" \
    1:19 "column p: METADATA 'partition' is INT, not STRING"
expect_error metadata_insert "$DDL
CREATE TABLE k (a BIGINT, o BIGINT METADATA FROM 'offset') WITH ('connector' = 'kafka', 'topic' = 'x');
INSERT INTO k SELECT a, a FROM t;" 5:13 "column o is METADATA"
expect_error current_watermark_column "$DDL
SELECT a FROM t WHERE CURRENT_WATERMARK(a) IS NULL;" 4:41 "CURRENT_WATERMARK(a): a is not the event-time column of t (WATERMARK FOR ts)"
expect_error current_watermark_join "$DDL
SELECT x.a FROM t x JOIN t y ON x.a = y.a AND y.ts BETWEEN x.ts AND x.ts + INTERVAL '1' SECOND AND x.ts > CURRENT_WATERMARK(x.ts);" 4:107 "CURRENT_WATERMARK over the rows of a window or join is not supported yet"
expect_error comment "SHOW TABLES;
/* never closed" 2:1 "a comment is not closed"
echo "sql: ok"
