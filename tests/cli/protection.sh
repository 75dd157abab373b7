#!/bin/sh
# protection.sh - the seeds' protections, through the CLI:
#
# Timestamp guard (tests/cli/jobs/guard.yaml; key k, tumbling 10 s
# windows, count, watermark = highest ts - 1 after every record, lateness
# 0, no late output).  Input: a@1000, a@4102444800000 (2100-01-01, more
# than the 1 h guard ahead of any plausible clock), a@2000, a@12000.
#  - guard on (default 1h): the 2100 record does not move the watermark
#    but is processed.  Watermarks 999, 999, 1999, 11999: [0,10000) fires
#    with a n 2 at 11999; at the end [10000,20000) a n 1 and the 2100
#    window [4102444800000,4102444810000) a n 1 fire.  1 guard hit, 0 late.
#  - guard on with timestamp_guard.dead_letter: the 2100 record goes to
#    the dead-letter sink (guard.jsonl:2, the line as read, ahead of
#    processing time)
#    instead; results are the first two rows; it is a guard hit, not a
#    bad record.
#  - guard off (timestamp_guard=0): the 2100 record lifts the watermark to
#    4102444799999, so [0,10000) fires with a n 1 right away, a@2000 and
#    a@12000 are too late (2 dropped), and the 2100 window fires at the
#    end: rows [0,10000) n 1 and [4102444800000,4102444810000) n 1.
#
# Timestamp unit check (jobs/seconds.yaml): epoch seconds in a field read
# as milliseconds are reported at start-up with the evidence (the first
# value, 1733133600).
# Usage: protection.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

OT='"timing":"on_time","pane":0,"update":false'
row() {
    printf '{"k":"a","n":%s,"window_start":%s,"window_end":%s,%s}\n' \
        "$1" "$2" "$3" "$OT"
}
{
    row 2 0 10000
    row 1 10000 20000
    row 1 4102444800000 4102444810000
} >"$T/guard_on"
{
    row 2 0 10000
    row 1 10000 20000
} >"$T/guard_dead"
{
    row 1 0 10000
    row 1 4102444800000 4102444810000
} >"$T/guard_off"

for p in 1 2 4; do
    expect_exit "guard -p $p" 0 "$TM" run tests/cli/jobs/guard.yaml -p "$p" \
        -q --set sinks.out.path="$T/out.jsonl"
    same_multiset "guard -p $p results" "$T/guard_on" "$T/out.jsonl"
    expect_in "guard -p $p summary" "$T/err" '4 records in, 3 rows out'
    expect_in "guard -p $p summary" "$T/err" \
        'late records: 0 dropped, 0 to the late output'
    expect_in "guard -p $p summary" "$T/err" '1 timestamp guard hit;'

    expect_exit "guard dead letter -p $p" 0 "$TM" run \
        tests/cli/jobs/guard.yaml -p "$p" -q --set dead_letter=bad \
        --set timestamp_guard.dead_letter=true \
        --set sinks.out.path="$T/out.jsonl" \
        --set sinks.bad.path="$T/bad.jsonl"
    same_multiset "guard dead letter -p $p results" "$T/guard_dead" \
        "$T/out.jsonl"
    if [ "$(wc -l <"$T/bad.jsonl")" != 1 ]; then
        fail "guard dead letter -p $p: expected one dead letter"
    fi
    expect_in "guard dead letter -p $p" "$T/bad.jsonl" \
        '"location":"tests/cli/data/guard.jsonl:2"'
    expect_in "guard dead letter -p $p" "$T/bad.jsonl" \
        '"raw":"{\"k\":\"a\",\"ts\":4102444800000}"'
    expect_in "guard dead letter -p $p" "$T/bad.jsonl" \
        'ahead of processing time'
    expect_in "guard dead letter -p $p summary" "$T/err" \
        '0 bad records dead-lettered; 1 timestamp guard hit;'

    expect_exit "guard off -p $p" 0 "$TM" run tests/cli/jobs/guard.yaml \
        -p "$p" -q --set timestamp_guard=0 \
        --set sinks.out.path="$T/out.jsonl"
    same_multiset "guard off -p $p results" "$T/guard_off" "$T/out.jsonl"
    expect_in "guard off -p $p summary" "$T/err" \
        'late records: 2 dropped, 0 to the late output'
    expect_in "guard off -p $p summary" "$T/err" '0 timestamp guard hits'
done

expect_exit "unit check" 0 "$TM" run tests/cli/jobs/seconds.yaml -q
expect_in "unit check" "$T/err" \
    'timestamp.unit is ms but values look like seconds'
expect_in "unit check" "$T/err" '1733133600'
