#!/bin/sh
# SPDX-License-Identifier: MIT
# decimal.sh - exact decimal(p,s) fields, end to end (docs/job-format.md,
# "Schema types"; docs/sql.md, DECIMAL).  The prices of
# tests/cli/data/decimal.{jsonl,csv} are 0.1, 1657.8 and 0.3 for item a:
# summed as doubles in that order they print 1658.1999999999998, as
# decimal(10,2) they print 1658.20.  Expected rows derived by hand:
#   a  0.10 + 1657.80 + 0.30 = 1658.20; avg 552.7333 -> 552.73
#   b  -2.005 -> -2.01 (half away from zero), 7 -> 7.00, 12.345 -> 12.35:
#      sum 17.34, avg 5.78; 123456789.5 (9 integer digits, decimal(10,2)
#      has 8), "abc", true (JSON) and 1.5e2 (CSV: plain decimals only)
#      are bad records with file:line and the field
#   c  "-0.05" (a JSON string) and 99999999.99 (the largest decimal(10,2)); null skipped
# at parallelism 1, 2 and 4, as JSON and CSV sink output; then the same
# data through `tidemark sql` with DECIMAL(10, 2), a CAST to DECIMAL and
# INSERT type checks; then refusals: precision over 18 in a schema and in
# CREATE TABLE, and a bad decimal(p,s).
# Usage: decimal.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

for p in 1 2 4; do
    expect_exit "decimal -p $p" 0 "$TM" run tests/cli/jobs/decimal.yaml \
        -p "$p" -q --set sinks.json_results.path="$T/json.jsonl" \
        --set sinks.csv_results.path="$T/csv.csv" \
        --set sinks.bad.path="$T/bad.jsonl"
    same_multiset "decimal -p $p JSON results" \
        "$EXP/decimal.json.results.jsonl" "$T/json.jsonl"
    same_multiset "decimal -p $p CSV results" \
        "$EXP/decimal.csv.results.csv" "$T/csv.csv"
    check_dead "decimal -p $p dead letters" "$EXP/decimal.bad.tsv" \
        "$T/bad.jsonl"
done

# The same prices as doubles show the noise the decimal type removes (so
# the data does exercise it).
expect_exit "double prices" 0 "$TM" run tests/cli/jobs/decimal.yaml -q \
    --set sources.json_in.schema="item:string, price:double, ts:int64" \
    --set sinks.json_results.path="$T/dbl.jsonl" \
    --set sinks.csv_results.path="$T/dbl.csv" \
    --set sinks.bad.path="$T/dbl_bad.jsonl"
expect_in "double prices" "$T/dbl.jsonl" '"total":1658.1999999999998'

# SQL: SUM/MIN/MAX/AVG of a DECIMAL(10, 2) column, then a CAST.
expect_exit "sql decimal" 0 "$TM" sql -q tests/cli/sql/decimal.sql
cat >"$T/sql.want" <<'ROWS'
{"item":"a","total":1658.20,"lo":0.10,"hi":1657.80,"mean":552.73,"n":3}
{"item":"b","total":17.34,"lo":-2.01,"hi":12.35,"mean":5.78,"n":3}
{"item":"c","total":99999999.94,"lo":-0.05,"hi":99999999.99,"mean":49999999.97,"n":3}
{"item":"a","price":1657.80,"eur":1505.282}
{"item":"b","price":7.00,"eur":6.356}
{"item":"b","price":12.35,"eur":11.214}
{"item":"c","price":99999999.99,"eur":90799999.991}
ROWS
same_multiset "sql decimal" "$T/sql.want" "$T/out"

# INSERT: SUM's DECIMAL(18, 2) goes to a DECIMAL(12, 2) column; a scale
# that differs is refused with the column named.
ddl=$(sed -n '/^CREATE TABLE prices/,/^);/p' tests/cli/sql/decimal.sql)
cat >"$T/insert.sql" <<SQL
$ddl
CREATE TABLE totals (item STRING, total DECIMAL(12, 2))
  WITH ('connector' = 'print');
INSERT INTO totals SELECT item, SUM(price)
FROM TABLE(TUMBLE(TABLE prices, DESCRIPTOR(rt), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, item;
SQL
expect_exit "insert decimal" 0 "$TM" sql -q "$T/insert.sql"
expect_in "insert decimal" "$T/out" '"total":1658.20'
sed 's/DECIMAL(12, 2)/DECIMAL(12, 3)/' "$T/insert.sql" >"$T/insert3.sql"
expect_exit "insert decimal of another scale" 3 "$TM" sql -q "$T/insert3.sql"
expect_in "insert decimal of another scale" "$T/err" \
    "is decimal(18,2), the table's total is decimal(12,3); CAST it"

# Refusals: more than 18 digits, named by field or column and place.
expect_exit "schema decimal(19,2)" 3 "$TM" run tests/cli/jobs/decimal.yaml \
    -q --set sources.json_in.schema="item:string, price:decimal(19,2), ts:int64"
expect_in "schema decimal(19,2)" "$T/err" \
    "field 'price': decimal precision 19 is not supported (1 to 18"
expect_exit "schema decimal(4,5)" 3 "$TM" run tests/cli/jobs/decimal.yaml \
    -q --set sources.json_in.schema="item:string, price:decimal(4,5), ts:int64"
expect_in "schema decimal(4,5)" "$T/err" \
    "field 'price': decimal scale 5 is more than its precision 4"
sed 's/DECIMAL(10, 2)/DECIMAL(23, 3)/' tests/cli/sql/decimal.sql >"$T/wide.sql"
expect_exit "sql DECIMAL(23, 3)" 3 "$TM" sql -q "$T/wide.sql"
expect_in "sql DECIMAL(23, 3)" "$T/err" \
    "wide.sql:8:9: column price: DECIMAL(23, 3) has 23 digits; tidemark's DECIMAL holds at most 18"
echo "decimal: ok"
