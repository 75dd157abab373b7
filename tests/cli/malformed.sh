#!/bin/sh
# malformed.sh - malformed input of every kind (bad JSON, missing field,
# wrong type, huge numbers, empty lines, binary garbage, truncated last
# line; the same for CSV plus bad quoting and missing columns) through the
# CLI at parallelism 1, 2 and 4: every broken line reaches the dead-letter
# sink with file:line, a reason and the raw text, the rest is processed,
# and the exit code is 0.  Expected files: tests/cli/expected/malformed.*
# (derived in malformed.md).
# Usage: malformed.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

for p in 1 2 4; do
    expect_exit "malformed -p $p" 0 "$TM" run tests/cli/jobs/malformed.yaml \
        -p "$p" -q --set sinks.json_results.path="$T/json.jsonl" \
        --set sinks.csv_results.path="$T/csv.jsonl" \
        --set sinks.bad.path="$T/bad.jsonl"
    same_multiset "malformed -p $p JSON results" \
        "$EXP/malformed.json.results.jsonl" "$T/json.jsonl"
    same_multiset "malformed -p $p CSV results" \
        "$EXP/malformed.csv.results.jsonl" "$T/csv.jsonl"
    check_dead "malformed -p $p dead letters" "$EXP/malformed.bad.tsv" \
        "$T/bad.jsonl"
    expect_in "malformed -p $p summary" "$T/err" '6 records in, 5 rows out'
    expect_in "malformed -p $p summary" "$T/err" \
        '15 bad records dead-lettered'
done

# Without a dead-letter sink the bad records are counted and reported on
# stderr (the first ten), and the results are the same.
expect_exit "malformed without dead_letter" 0 "$TM" run \
    tests/cli/jobs/malformed.yaml -q --set dead_letter= \
    --set sinks.json_results.path="$T/json.jsonl" \
    --set sinks.csv_results.path="$T/csv.jsonl" \
    --set sinks.bad.path="$T/bad2.jsonl"
same_multiset "malformed without dead_letter, JSON results" \
    "$EXP/malformed.json.results.jsonl" "$T/json.jsonl"
same_multiset "malformed without dead_letter, dead-letter file" /dev/null \
    "$T/bad2.jsonl"
expect_in "malformed without dead_letter" "$T/err" \
    'bad record at tests/cli/data/malformed.'
expect_in "malformed without dead_letter" "$T/err" \
    '15 bad records skipped (no dead_letter sink)'
