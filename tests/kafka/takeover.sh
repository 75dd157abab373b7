#!/bin/sh
# SPDX-License-Identifier: MIT
# takeover.sh - one of two processes in a group stops half-way and the
# other takes its partitions over from the committed offsets.
#
# Data: the first half (event times before T0+30 s) and a marker record
# per partition at T0+31.001 s, which moves every partition's watermark
# to T0+30 s: all windows ending by then are written, the window
# [30 s, 40 s) stays open.  Then process b stops, a is assigned b's
# partitions, the second half and a far-ahead record per partition
# follow, and every remaining window of the data is written by a.
#
# Clean stop (default): b is stopped with SIGTERM (on_cancel: stop: no
# drain, final commit of what it wrote); the union of a's and b's results
# equals the same job over files exactly - b's open window is read again
# by a from b's committed offset, the records of b's written windows lie
# at or below the committed watermark and are skipped.
# MODE kill: b is killed (-9) after its periodic commit covered the first
# half.  a's watermark is at the first half's end already, so what it
# reads again of b's partitions is late and nothing repeats; without the
# "update" member the union's rows are exactly the reference's, and no
# (key, window) has two rows with "update":false.
# MODE crash: both members crash (kill -9) after writing the first half,
# before any periodic commit (commit.interval 1h): the group holds only
# the claims they committed at assignment ("tdm1 wm=<ms>", no top).  A
# new member c resumes every partition there, not cleanly, reads the
# first half again from watermark MIN and writes all its results again:
# each repeat must be marked as an update (docs/kafka.md, what a crash
# can duplicate).  Without the "update" member the union's rows are
# exactly the reference's, no (key, window) has two rows with
# "update":false, and every first-half row is there twice.
# Usage: takeover.sh TIDEMARK SOURCE_DIR MOCK TOOL [kill|crash]
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:4
half=$((T0 + 30000))
gen_clicks 0 120 10 >"$W/all.jsonl"
awk -v h="$half" -F'"ts":' '{ split($2, a, ","); if (a[1] + 0 < h) print }' \
    "$W/all.jsonl" >"$W/half1.jsonl"
awk -v h="$half" -F'"ts":' '{ split($2, a, ","); if (a[1] + 0 >= h) print }' \
    "$W/all.jsonl" >"$W/half2.jsonl"
# Marker users m0..m3, one per partition: each key still lives in one
# partition.
awk -v ts=$((half + 1001)) 'BEGIN {
    for (p = 0; p < 4; p++)
        printf "{\"user\":\"m%d\",\"ts\":%.0f,\"p\":%d}\n", p, ts, p;
}' >"$W/markers.jsonl"
far_records 4 $((T0 + 1000000)) >"$W/far.jsonl"

# The reference reads the data and the markers as two files (two
# partitions); the far records would only add windows never written.
mkdir "$W/in"
cp "$W/all.jsonl" "$W/markers.jsonl" "$W/in/"
run_ref takeover "$W/in/*.jsonl"
n_half=$(awk -v h="$half" -F'"window_end":' \
    '{ split($2, a, ","); if (a[1] + 0 <= h) n++ } END { print n + 0 }' \
    "$W/ref.jsonl")
[ "$n_half" -ge 20 ] && [ "$n_ref" -gt "$n_half" ] ||
    fail "reference too small ($n_half of $n_ref rows in the first half)"

[ "$MODE" = crash ] && COMMIT_INTERVAL=1h
start_two_members takeover gt

produce clicks --key-field user --ts-field ts "$W/half1.jsonl"
produce clicks --partition-field p --ts-field ts "$W/markers.jsonl"
wait_lines "$n_half" 30 "$W/out-a.jsonl" "$W/out-b.jsonl"

# Every partition's commit carries the watermark of the first half:
# "tdm1 wm=<T0+30 s or more>" on all four.
committed_half() {
    "$TOOL" committed "$BOOT" gt clicks >"$W/committed.txt" 2>/dev/null &&
        [ "$(awk -F'\t' -v h="$half" '$3 ~ /^tdm1 wm=/ {
                 split($3, a, "="); if (a[2] + 0 >= h - 1) n++
             } END { print n + 0 }' "$W/committed.txt")" -eq 4 ]
}
# Crash: every partition carries its owner's claim (no top: not clean).
claimed() {
    "$TOOL" committed "$BOOT" gt clicks >"$W/committed.txt" 2>/dev/null &&
        [ "$(grep -c '	tdm1 wm=-\?[0-9]*$' "$W/committed.txt")" -eq 4 ]
}

if [ "$MODE" = crash ]; then
    wait_until 20 "claims on every partition" claimed
    stop_pid "$pid_a" KILL
    stop_pid "$pid_b" KILL
    member_yaml takeover gt c
    run_bg c "$W/c.yaml"
    pid_c=$LAST_PID
    # The dead members leave after the session timeout (4 s), then the
    # mock's rebalance delay.
    wait_until 40 "c assigned the partitions" both_assigned "$W/c.log" \
        "$W/c.log"
    produce clicks --key-field user --ts-field ts "$W/half2.jsonl"
    produce clicks --partition-field p --ts-field ts "$W/far.jsonl"
    wait_lines $((n_ref + n_half)) 40 "$W/out-a.jsonl" "$W/out-b.jsonl" \
        "$W/out-c.jsonl"
    stop_pid "$pid_c" TERM
    [ "$WAIT_RC" -eq 0 ] || fail "process c exited with status $WAIT_RC"
    check_marked "$W/out-a.jsonl" "$W/out-b.jsonl" "$W/out-c.jsonl"
    [ "$n_rep" -eq "$n_half" ] ||
        fail "$n_rep rows repeated, expected the first half's $n_half"
    echo "takeover.sh (crash): $n_rep repeated rows, all marked" >&2
    echo "takeover.sh: ok"
    exit 0
fi

wait_until 20 "commits of the first half on every partition" committed_half
before=$(assigned_count "$W/a.log")
if [ "$MODE" = kill ]; then
    stop_pid "$pid_b" KILL
else
    stop_pid "$pid_b" TERM
    [ "$WAIT_RC" -eq 0 ] || fail "process b exited with status $WAIT_RC"
fi
# a is assigned b's partitions: 3 s after a clean leave, about 8 s after
# a kill (session timeout 4 s, then the rebalance).
a_took_over() {
    [ "$(assigned_count "$W/a.log")" -gt "$before" ]
}
wait_until 30 "a assigned b's partitions" a_took_over

produce clicks --key-field user --ts-field ts "$W/half2.jsonl"
produce clicks --partition-field p --ts-field ts "$W/far.jsonl"
wait_lines "$n_ref" 30 "$W/out-a.jsonl" "$W/out-b.jsonl"
stop_pid "$pid_a" TERM
[ "$WAIT_RC" -eq 0 ] || fail "process a exited with status $WAIT_RC"
if [ "$MODE" = kill ]; then
    check_marked "$W/out-a.jsonl" "$W/out-b.jsonl"
    echo "takeover.sh (kill): $n_rep repeated rows, all marked" >&2
else
    cat "$W/out-a.jsonl" "$W/out-b.jsonl" >"$W/union.jsonl"
    same_lines "$W/ref.jsonl" "$W/union.jsonl"
fi
echo "takeover.sh: ok"
