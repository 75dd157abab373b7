#!/bin/sh
# dead_letters.sh - issue 18, defect 6 and defect 8's byte order mark
# and repeated JSON keys, through the CLI; the case is the third
# argument:
#  guard    records from the year 2100 among records near 1970 in a
#           JSON-lines file and a CSV file (jobs/guard_raw.yaml, the
#           guard dead-lettering): each dead letter names file:line and
#           carries the line exactly as read - odd spacing, a member the
#           schema ignores, CSV quotes - at parallelism 1, 2 and 4, and
#           from standard input (<stdin>:line).  Each window counts a's
#           two 1970 records.
#  bom      a JSON-lines file and a CSV file (its header) that start
#           with a UTF-8 byte order mark: no dead letter, a's two records
#           counted under "a" in both.
#  dup_keys members named twice (docs/job-format.md, "Repeated keys"):
#           the last value is kept on both parser paths, a repeat of an
#           ignored or nested member counts too, and the run summary
#           counts the four records; a line that repeats a key and is
#           not JSON is a dead letter and not counted (the guard keeps
#           the 2100 CSV record: only the JSON line is dead-lettered).
# Usage: dead_letters.sh TIDEMARK SOURCE_DIR CASE
. "$(dirname "$0")/lib.sh"
setup "$@"
CASE=${3:-}

OT='"timing":"on_time","pane":0,"update":false'
row() {
    printf '{"k":"%s","n":%s,"window_start":0,"window_end":10000,%s}\n' \
        "$1" "$2" "$OT"
}
row a 2 >"$T/a2"

# run WHAT [ARGS...]: jobs/guard_raw.yaml with outputs in $T.
run() {
    what=$1
    shift
    expect_exit "$what" 0 "$TM" run tests/cli/jobs/guard_raw.yaml -q \
        --set sinks.json_results.path="$T/json.jsonl" \
        --set sinks.csv_results.path="$T/csv.jsonl" \
        --set sinks.bad.path="$T/bad.jsonl" "$@"
}

case "$CASE" in
guard)
    J=tests/cli/data/guard_raw.jsonl
    C=tests/cli/data/guard_raw.csv
    {
        printf '%s:3\tahead of processing time\t%s\n' "$J" \
            '{\"ts\": 4102444800000,   \"k\":\"a\", \"extra\": [1, 2]}'
        printf '%s:5\tahead of processing time\t%s\n' "$J" \
            '{\"k\":\"b\",\"ts\":4102444800001}'
        printf '%s:3\tahead of processing time\t%s\n' "$C" \
            '\"a\",4102444800000'
    } >"$T/want.tsv"
    for p in 1 2 4; do
        run "guard -p $p" -p "$p"
        same_multiset "guard -p $p JSON results" "$T/a2" "$T/json.jsonl"
        same_multiset "guard -p $p CSV results" "$T/a2" "$T/csv.jsonl"
        check_dead "guard -p $p dead letters" "$T/want.tsv" "$T/bad.jsonl"
        expect_in "guard -p $p summary" "$T/err" \
            '0 bad records dead-lettered; 3 timestamp guard hits;'
    done
    # Standard input cannot be read again: the line must be kept as read.
    sed "s|^$J:|<stdin>:|" "$T/want.tsv" >"$T/want-stdin.tsv"
    run "guard from stdin" --set sources.json_in.path=- <"$J"
    same_multiset "guard from stdin, JSON results" "$T/a2" "$T/json.jsonl"
    check_dead "guard from stdin, dead letters" "$T/want-stdin.tsv" \
        "$T/bad.jsonl"
    ;;
bom)
    for p in 1 2; do
        run "bom -p $p" -p "$p" \
            --set sources.json_in.path=tests/cli/data/bom.jsonl \
            --set sources.csv_in.path=tests/cli/data/bom.csv
        same_multiset "bom -p $p dead letters" /dev/null "$T/bad.jsonl"
        same_multiset "bom -p $p JSON results" "$T/a2" "$T/json.jsonl"
        same_multiset "bom -p $p CSV results" "$T/a2" "$T/csv.jsonl"
        expect_in "bom -p $p summary" "$T/err" '0 bad records dead-lettered'
    done
    ;;
dup_keys)
    D=tests/cli/data/dup_keys.jsonl
    for k in b c d eA f; do
        row "$k" 1
    done >"$T/dup"
    printf '%s:6\tinvalid JSON\t%s\n' "$D" \
        '{\"k\":\"g\",\"ts\":7000,\"x\":1,\"x\":2' >"$T/want.tsv"
    for p in 1 2; do
        run "dup_keys -p $p" -p "$p" --set sources.json_in.path="$D" \
            --set timestamp_guard.dead_letter=false
        same_multiset "dup_keys -p $p results" "$T/dup" "$T/json.jsonl"
        check_dead "dup_keys -p $p dead letters" "$T/want.tsv" \
            "$T/bad.jsonl"
        expect_in "dup_keys -p $p summary" "$T/err" \
            'tidemark: 4 JSON records named a member twice; the last value was kept.'
    done
    ;;
*)
    fail "unknown case '$CASE' (guard, bom, dup_keys)"
    ;;
esac
