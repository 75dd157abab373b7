#!/bin/sh
# SPDX-License-Identifier: MIT
# join_running.sh - a member joins a running group (scale-out while the
# job runs) and the key fence keeps partial results out.
#
# Process a reads all four partitions alone: the first part of the data
# (event times before T0+25 s) writes every window ending by T0+20 s and
# leaves [20 s, 30 s) open, half filled.  Then b joins: the cooperative
# rebalance revokes two partitions from a while a holds their keys' open
# windows.  a must not write those windows (it has only part of their
# records: the key fence, docs/kafka.md), b re-reads the partitions from
# a's hand-over commit and writes them complete (marked as updates: a
# could have written some before its last commit).  After the rest of the
# data and a far-ahead record per partition: without the "update" member the
# union of a's and b's rows is exactly the same job over one file (no
# row missing, none partial), no (user, window) has two unmarked rows,
# and a's log says it fenced keys.
# Usage: join_running.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:4
half=$((T0 + 25000))
gen_clicks 0 120 10 >"$W/all.jsonl"
awk -v h="$half" -F'"ts":' '{ split($2, a, ","); if (a[1] + 0 < h) print }' \
    "$W/all.jsonl" >"$W/half1.jsonl"
awk -v h="$half" -F'"ts":' '{ split($2, a, ","); if (a[1] + 0 >= h) print }' \
    "$W/all.jsonl" >"$W/half2.jsonl"
far_records 4 $((T0 + 1000000)) >"$W/far.jsonl"

run_ref joinrun "$W/all.jsonl"
n_early=$(awk -v e=$((T0 + 20000)) -F'"window_end":' \
    '{ split($2, a, ","); if (a[1] + 0 <= e) n++ } END { print n + 0 }' \
    "$W/ref.jsonl")
[ "$n_early" -ge 10 ] && [ "$n_ref" -gt "$n_early" ] ||
    fail "reference too small ($n_early of $n_ref rows early)"

has_partitions() {
    grep -q 'assigned [1-9][0-9]* partition' "$1" 2>/dev/null
}
member_yaml joinrun gj a
member_yaml joinrun gj b
run_bg a "$W/a.yaml"
pid_a=$LAST_PID
wait_until 30 "a assigned" has_partitions "$W/a.log"
produce clicks --key-field user --ts-field ts "$W/half1.jsonl"
wait_lines "$n_early" 30 "$W/out-a.jsonl"

run_bg b "$W/b.yaml"
pid_b=$LAST_PID
fenced() {
    has_partitions "$W/b.log" &&
        grep -q 'was revoked with [1-9][0-9]* key(s) in open windows: fenced' \
            "$W/a.log" 2>/dev/null
}
# Cooperative rebalance: a revokes at about +3 s, b is assigned at +6 s.
wait_until 40 "b assigned partitions revoked from a, keys fenced" fenced

produce clicks --key-field user --ts-field ts "$W/half2.jsonl"
produce clicks --partition-field p --ts-field ts "$W/far.jsonl"
# Repeats (marked) may come on top: wait for every distinct row.
all_rows() {
    [ "$(cat "$W/out-a.jsonl" "$W/out-b.jsonl" 2>/dev/null |
         sed 's/,"update":\(true\|false\)}$/}/' | sort -u | wc -l)" \
        -ge "$n_ref" ]
}
wait_until 40 "every row of the reference" all_rows
stop_pid "$pid_a" TERM
[ "$WAIT_RC" -eq 0 ] || fail "process a exited with status $WAIT_RC"
# a's stale windows of the fenced keys fired and were not written.
grep -q "result(s) of fenced keys not written" "$W/a.log" ||
    fail "a wrote no line about suppressed results of fenced keys"
stop_pid "$pid_b" TERM
[ "$WAIT_RC" -eq 0 ] || fail "process b exited with status $WAIT_RC"
check_marked "$W/out-a.jsonl" "$W/out-b.jsonl"
echo "join_running.sh: a wrote $(count_lines "$W/out-a.jsonl"), b wrote" \
    "$(count_lines "$W/out-b.jsonl") rows; $n_rep repeated (marked);" \
    "$(grep -o '[0-9]* key(s) in open windows' "$W/a.log" | head -1)" >&2
echo "join_running.sh: ok"
